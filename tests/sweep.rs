//! `blkcg-sim sweep` as a user runs it: a point is the scenario run alone with its
//! values set by hand, output is the same whatever --jobs, and shards concatenate to
//! the unsharded output.

use blkcg_sim::report::fio::json::to_json;
use blkcg_sim::scenario::Scenario;
use blkcg_sim::sweep::Sweep;

mod common;
use common::{bin, stdout_of};

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// An SSD with seeded jitter (so seeds differ), blk-iocost, two cgroups, a variant.
const BASE: &str = r#"
name = "sweep-test"
seed = 3
[device]
model = "ssd"
channels = 4
read_lat_us = 80
write_lat_us = 30
jitter_pct = 20
dev = "259:0"
[root]
"io.cost.model" = "259:0 ctrl=user model=linear rbps=400000000 rseqiops=40000 rrandiops=40000 wbps=300000000 wseqiops=30000 wrandiops=30000"
"io.cost.qos" = "259:0 enable=1 ctrl=user rpct=95 rlat=2000 wpct=95 wlat=2000 min=50 max=150"
[cgroup.web]
"io.weight" = "default 300"
fio = "fio --name=web --rw=randread --bs=4k --iodepth=4 --ioengine=libaio --runtime=1 --time_based"
[cgroup.batch]
fio = """
[global]
ioengine=libaio
runtime=1
time_based
[batch]
rw=randwrite
blocksize=64k
iodepth=16
"""
[[variant]]
name = "heavy"
cgroup.batch = { "io.weight" = "default 50" }
[[variant]]
name = "light"
"#;

/// `BASE`'s variant `heavy` with root.io.cost.qos:max=80, cgroup.web.fio:iodepth=8 and
/// cgroup.batch.fio:bs=128k written by hand.
const BY_HAND: &str = r#"
name = "sweep-test"
seed = 3
[device]
model = "ssd"
channels = 4
read_lat_us = 80
write_lat_us = 30
jitter_pct = 20
dev = "259:0"
[root]
"io.cost.model" = "259:0 ctrl=user model=linear rbps=400000000 rseqiops=40000 rrandiops=40000 wbps=300000000 wseqiops=30000 wrandiops=30000"
"io.cost.qos" = "259:0 enable=1 ctrl=user rpct=95 rlat=2000 wpct=95 wlat=2000 min=50 max=80"
[cgroup.web]
"io.weight" = "default 300"
fio = "fio --name=web --rw=randread --bs=4k --iodepth=8 --ioengine=libaio --runtime=1 --time_based"
[cgroup.batch]
"io.weight" = "default 50"
fio = """
[global]
ioengine=libaio
runtime=1
time_based
[batch]
rw=randwrite
blocksize=128k
iodepth=16
"""
"#;

const SETS: [&str; 3] = [
    "--set=root.io.cost.qos:max=80,120",
    "--set=cgroup.web.fio:iodepth=8,1",
    "--set=cgroup.batch.fio:bs=128k,16k",
];

#[test]
fn a_point_is_the_scenario_run_alone_with_its_values_set_by_hand() {
    let sc = Scenario::parse(BASE, "base.toml").unwrap();
    let sets: Vec<String> = SETS
        .iter()
        .map(|s| s.trim_start_matches("--set=").to_string())
        .collect();
    let sweep = Sweep::new(&sc, &sets, 2).unwrap();
    // axes: variant (implicit), max, iodepth, bs; point 0 = heavy, 80, 8, 128k
    assert_eq!(sweep.points(), 16);
    let (rec, run) = sweep.run(0, &Default::default()).unwrap();
    assert_eq!(rec.seed, 3);
    let hand = tmp("by-hand.toml");
    std::fs::write(&hand, BY_HAND).unwrap();
    let alone = stdout_of(&["run", hand.to_str().unwrap(), "--output-format", "json"]);
    assert_eq!(to_json(&run.fio, false), alone, "fio JSON of the point");
    // and the sweep's own line for it equals a sweep of the hand-written file
    let base = tmp("base.toml");
    std::fs::write(&base, BASE).unwrap();
    let mut args = vec!["sweep", base.to_str().unwrap(), "--quiet"];
    args.extend(SETS);
    let first = stdout_of(&args).lines().next().unwrap().to_string();
    let hand_line = stdout_of(&["sweep", hand.to_str().unwrap(), "--quiet"]);
    let figures = |l: &str| l[l.find("\"total\"").unwrap()..].to_string();
    assert_eq!(figures(&first), figures(hand_line.trim_end()));
    assert!(first.starts_with(
        r#"{"point":0,"seed":3,"values":{"variant":"heavy","root.io.cost.qos:max":"80","cgroup.web.fio:iodepth":"8","cgroup.batch.fio:bs":"128k"}"#
    ), "{first}");
}

#[test]
fn output_is_the_same_whatever_the_workers_and_shards_concatenate_to_it() {
    let base = tmp("base-shards.toml");
    std::fs::write(&base, BASE).unwrap();
    for format in ["jsonl", "csv"] {
        let run = |extra: &[&str]| {
            let mut args = vec![
                "sweep",
                base.to_str().unwrap(),
                "--quiet",
                "--seeds",
                "2",
                "--format",
                format,
            ];
            args.extend(SETS);
            args.extend(extra);
            stdout_of(&args)
        };
        let one = run(&["--jobs", "1"]);
        let two = run(&["--jobs", "2"]);
        assert_eq!(one, two, "{format}: --jobs 1 vs 2");
        // the jitter makes seeds differ, so the runs are 32 distinct ones
        let lines: Vec<&str> = one.lines().collect();
        assert_eq!(lines.len(), if format == "csv" { 1 + 32 * 2 } else { 32 });
        let mut cat = String::new();
        for i in 1..=3 {
            cat += &run(&["--jobs", "2", "--shard", &format!("{i}/3")]);
        }
        assert_eq!(cat, one, "{format}: shards 1..3 of 3 concatenated");
    }
}

#[test]
fn seeds_give_distinct_runs_on_a_jittery_device() {
    let base = tmp("base-seeds.toml");
    std::fs::write(&base, BASE).unwrap();
    let out = stdout_of(&[
        "sweep",
        base.to_str().unwrap(),
        "--quiet",
        "--seeds",
        "2",
        "--set",
        "variant=light",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains(r#""seed":3"#) && lines[1].contains(r#""seed":4"#));
    let figures = |l: &str| l[l.find("\"total\"").unwrap()..].to_string();
    assert_ne!(figures(lines[0]), figures(lines[1]));
}

#[test]
fn output_folder_gets_the_files_a_picture_per_axis_and_a_page_of_charts() {
    let base = tmp("base-out.toml");
    std::fs::write(&base, BASE).unwrap();
    let dir = tmp("out");
    let _ = std::fs::remove_dir_all(&dir);
    let mut args = vec![
        "sweep",
        base.to_str().unwrap(),
        "--quiet",
        "--output",
        dir.to_str().unwrap(),
    ];
    args.extend(SETS);
    let out = stdout_of(&args);
    assert_eq!(
        std::fs::read_to_string(dir.join("sweep.jsonl")).unwrap(),
        out
    );
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert!(csv.starts_with("point,seed,variant,root.io.cost.qos:max,"));
    for k in 1..=4 {
        assert!(dir.join(format!("sweep-axis-{k}.svg")).exists(), "axis {k}");
    }
    // report.html: each axis's three figures as charts, the four pictures
    let view = common::check_page(&dir.join("report.html"), "report-sweep", 12, &[]);
    if let Some(view) = view {
        assert_eq!(view.body["pictures-loaded"], "4");
        let series = &view.body["series"];
        assert!(series.starts_with("sweep over variant"), "{series}");
        assert_eq!(series.lines().filter(|l| l.contains(": IOPS: ")).count(), 4);
    }
    // a shard writes its own files, no header unless it is the first
    let mut args = vec![
        "sweep",
        base.to_str().unwrap(),
        "--quiet",
        "--output",
        dir.to_str().unwrap(),
        "--shard",
        "2/2",
    ];
    args.extend(SETS);
    stdout_of(&args);
    let csv2 = std::fs::read_to_string(dir.join("sweep-2-of-2.csv")).unwrap();
    assert!(csv2.starts_with("8,3,light,"), "{csv2}");
}

#[test]
fn bad_keys_fail_before_anything_runs_on_one_line() {
    for (set, says) in [
        (
            "cgroup.web.fio:iodepth=8,zero",
            "--set cgroup.web.fio:iodepth=zero",
        ),
        ("root.io.cost.qos:maxx=1", "accepted: enable, ctrl"),
        ("cgroup.nope.io.max=259:0 riops=1", "no cgroup `nope`"),
    ] {
        let base = tmp("base-bad.toml");
        std::fs::write(&base, BASE).unwrap();
        let out = bin()
            .args(["sweep", base.to_str().unwrap(), "--set", set])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{set}");
        assert!(out.stdout.is_empty(), "{set}: nothing ran");
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(e.contains(says), "{set}: {e}");
    }
}
