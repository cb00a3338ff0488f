//! `blkcg-sim tune`: the kernel's iocost_coef_gen.py procedure finds a simulated
//! device's analytic capacity, `tune qos` gives resctl-bench's solutions and `tune
//! iomax` the loosest io.max; each says what was in force, and what it prints to run
//! runs.

mod common;
use common::{bin, one_line_error, shell, stdout_of};

use std::path::{Path, PathBuf};

/// A fresh folder for test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-tune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The table row of `label` (`  40.00`, `as written`) in a tuner's report.
fn row<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(&format!("{label} ")))
        .unwrap_or_else(|| panic!("no row {label} in\n{out}"))
}

/// `name`'s column of each line of a CSV text, by its header.
fn csv_column<'a>(csv: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = csv.lines();
    let k = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {csv}"));
    lines.map(|l| l.split(',').nth(k).unwrap()).collect()
}

/// The coefficients of a `MAJ:MIN k=v ...` line.
fn coef(line: &str, k: &str) -> f64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {k} in {line}"))
        .parse()
        .unwrap()
}

fn within_1pct(line: &str, k: &str, want: f64) {
    let got = coef(line, k);
    assert!(
        (got / want - 1.0).abs() < 0.01,
        "{k}: {got} vs analytic {want} in {line}"
    );
}

#[test]
fn model_of_a_timer_mode_null_blk_is_its_analytic_capacity() {
    // 64 tags, each IO held 1 ms: 64000 IOPS at QD64; bandwidth capped at 400 MiB/s
    let out = stdout_of(&[
        "tune",
        "model",
        "--device",
        "nullb:irqmode=2,completion_nsec=1000000,mbps=400",
        "--duration",
        "10",
        "--quiet",
    ]);
    let line = out.lines().next().unwrap();
    assert!(line.starts_with("252:0 rbps="), "{line}");
    for k in ["rbps", "wbps"] {
        within_1pct(line, k, 400.0 * 1048576.0);
    }
    for k in ["rseqiops", "rrandiops", "wseqiops", "wrandiops"] {
        within_1pct(line, k, 64000.0);
    }
}

#[test]
fn model_of_a_cloud_preset_is_its_provisioned_capacity_with_rd_agents_qos() {
    // azure-p20: 3566 IOPS and 173471131 B/s buckets (the iocost seed's measured disk)
    let out = stdout_of(&[
        "tune",
        "model",
        "--device",
        "cloud:preset=azure-p20",
        "--qos",
        "--quiet",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for k in ["rbps", "wbps"] {
        within_1pct(lines[0], k, 173471131.0);
    }
    for k in ["rseqiops", "rrandiops", "wseqiops", "wrandiops"] {
        within_1pct(lines[0], k, 3566.0);
    }
    // rd-agent: an SSD gets the 95th percentile, min 60, max 100; the latency target is
    // 1.5 x a clat percentile, which is at least the disk's 1.95 ms base latency
    let q = lines[1];
    assert!(
        q.starts_with("8:16 enable=1 ctrl=user rpct=95 rlat="),
        "{q}"
    );
    assert!(q.ends_with(" min=60 max=100"), "{q}");
    for k in ["rlat", "wlat"] {
        assert!(coef(q, k) >= 1.5 * 1950.0, "{q}");
    }
}

#[test]
fn model_takes_a_scenarios_device() {
    let out = stdout_of(&[
        "tune",
        "model",
        "--device",
        "iocost-linear-max",
        "--duration",
        "20",
        "--quiet",
    ]);
    assert!(out.starts_with("8:0 rbps="), "{out}");
    within_1pct(&out, "rrandiops", 3566.0);
}

#[test]
fn qos_on_the_iocost_seed_finds_resctls_solutions_the_same_whatever_the_workers() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-tune-qos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |jobs: &str, out: bool| {
        let mut args = vec![
            "tune",
            "qos",
            "iocost-no-completion",
            "--variant",
            "after",
            "--protect",
            "cgB",
            "--seeds",
            "2",
            "--jobs",
            jobs,
            "--quiet",
        ];
        if out {
            args.extend(["--output", dir.to_str().unwrap()]);
        }
        stdout_of(&args)
    };
    let out = run("2", true);
    assert_eq!(out, run("1", false), "--jobs 1 and 2 print the same");
    let line = |prefix: &str, after: &str| {
        let mut lines = out.lines().skip_while(|l| !l.starts_with(after));
        lines
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` after `{after}` in\n{out}"))
            .trim()
            .to_string()
    };
    // 25 vrates (125 .. 5) plus alone and off
    assert!(out.contains("\n 125.00 ") && out.contains("\n   5.00 ") && out.contains("\n  alone "));
    // the seed's disk is modelled at its exact capacity: isolation holds up to 100%
    // and the fixed vrate starves cgB (200 IOPS) below ~64%
    let range = line("isolated range", "isolated range");
    let floor: f64 = range["isolated range: vrate ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((60.0..70.0).contains(&floor), "{range}");
    assert_eq!(
        line("echo \"8:0 enable", "[naive]"),
        "echo \"8:0 enable=1 ctrl=user rpct=99.00 rlat=7963 wpct=99.00 wlat=7963 min=75.00 max=100.00\" > /sys/fs/cgroup/io.cost.qos"
    );
    assert!(line("info:", "[bandwidth]").starts_with("info: scale=100.00%"));
    // the isolation solution's model is the base scaled by its vrate, min = max = 100
    let info = line("info:", "[isolation]");
    let scale: f64 = info["info: scale=".len()..]
        .split('%')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(scale < 100.0 && scale >= floor, "{info}");
    let model = line("echo \"8:0 ctrl=user", "[isolation]");
    assert_eq!(
        coef(&model, "rbps"),
        (173471131.0 * scale / 100.0).round(),
        "{model}"
    );
    assert!(
        line("echo \"8:0 enable", "[isolation]").ends_with(
            "rpct=0.00 rlat=7963 wpct=0.00 wlat=7963 min=100.00 max=100.00\" > /sys/fs/cgroup/io.cost.qos"
        )
    );
    // every vrate was reached in both seeds' runs: all fitted
    assert!(
        !out.contains(" never\n")
            && !out.contains(" seeds\n")
            && !out.contains("not in force in every seed's run:"),
        "{out}"
    );
    assert_eq!(
        line("IOCOST_SOLUTIONS", "block:"),
        "IOCOST_SOLUTIONS=isolation isolated-bandwidth bandwidth naive"
    );
    assert!(line("IOCOST_QOS_NAIVE", "block:").ends_with("min=75.00 max=100.00"));
    // the files and pictures
    assert_eq!(
        std::fs::read_to_string(dir.join("tune-qos.txt")).unwrap(),
        out
    );
    let csv = std::fs::read_to_string(dir.join("tune-qos.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 27 * 2,
        "alone, off, 25 vrates, 2 seeds"
    );
    for f in ["tune-qos.hwdb", "tune-qos.svg", "tune-qos-pareto.svg"] {
        assert!(dir.join(f).exists(), "{f}");
    }
}

#[test]
fn qos_refuses_what_it_cannot_tune_on_one_line() {
    for (args, says) in [
        (
            vec!["iocost-no-completion", "--protect", "cgB"],
            "--variant",
        ),
        (
            vec![
                "iocost-no-completion",
                "--variant",
                "after",
                "--protect",
                "cgC",
            ],
            "no cgroup `cgC`",
        ),
        (
            vec![
                "iocost-linear-max",
                "--variant",
                "linear",
                "--protect",
                "single",
            ],
            "nothing to protect it from",
        ),
        (
            vec![
                "iocost-no-completion",
                "--variant",
                "after",
                "--protect",
                "cgB",
                "--vrate-max",
                "0",
            ],
            "--vrate-max",
        ),
    ] {
        let mut a = vec!["tune", "qos"];
        a.extend(args);
        let out = bin().args(&a).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(e.contains(says), "{a:?}: {e}");
    }
}

/// A rate-limited reader beside a batch writer that fills an aws-gp3 volume.
const WEB_AND_BATCH: &str = r#"
name = "web-beside-batch"
seed = 1
[device]
model = "cloud"
preset = "aws-gp3"
dev = "8:16"
[cgroup.web]
fio = "fio --name=web --rw=randread --bs=4k --iodepth=1 --rate_iops=200 --ioengine=libaio --direct=1 --runtime=10 --time_based"
[cgroup.batch]
"io.max" = "8:16 wiops=max"
fio = "fio --name=batch --rw=randwrite --bs=64k --iodepth=32 --ioengine=libaio --direct=1 --runtime=10 --time_based"
"#;

#[test]
fn iomax_finds_the_loosest_limit_that_keeps_the_reader_isolated() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-tune-iomax-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sc = dir.join("web.toml");
    std::fs::write(&sc, WEB_AND_BATCH).unwrap();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "tune",
            "iomax",
            sc.to_str().unwrap(),
            "--protect",
            "web",
            // out of order on purpose: the tuner orders them
            "--limit",
            "cgroup.batch.io.max:wiops=max,500,2000,250,1000,1500",
            "--quiet",
        ];
        a.extend(extra);
        stdout_of(&a)
    };
    let o = dir.join("out");
    let out = run(&["--seeds", "2", "--output", o.to_str().unwrap()]);
    common::check_page(&o.join("report.html"), "report-tune-iomax", 4, &[]);
    assert_eq!(out, run(&["--seeds", "2", "--jobs", "1"]), "--jobs 1 and 2");
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("LIMIT"))
        .skip(3)
        .take(6)
        .collect();
    let limits: Vec<&str> = rows
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        limits,
        ["250", "500", "1000", "1500", "2000", "max"],
        "{out}"
    );
    // unlimited, the batch writer queues ahead of the reader in the volume: not isolated
    assert!(!rows[5].ends_with("ok"), "{out}");
    assert!(
        out.contains("answer: cgroup.batch.io.max:wiops=1500: the least restrictive value meeting the goal; every more restrictive one meets it too"),
        "{out}"
    );
    assert!(out.contains("  echo \"8:16 wiops=1500\" > /sys/fs/cgroup/batch/io.max\n"));
    // BOUND%: the limits that isolate hold batch's writes back at every sample, 2000
    // at some, max is none
    for r in &rows[..4] {
        assert!(r.ends_with(" 100.0    ok"), "{out}");
    }
    assert!(
        !rows[4].ends_with(" 0.00") && rows[5].ends_with(" -"),
        "{out}"
    );
    let csv = std::fs::read_to_string(o.join("tune-iomax.csv")).unwrap();
    let waiting = csv_column(&csv, "samples_waiting");
    let samples = csv_column(&csv, "throttle_samples");
    let limit = csv_column(&csv, "limit");
    let at = |v: &str| limit.iter().position(|l| *l == v).unwrap();
    assert_eq!(samples[at("max")], "0", "no limit, no samples");
    assert_eq!(samples[at("250")], waiting[at("250")]);
    assert!(samples[at("250")].parse::<u32>().unwrap() >= 100, "{csv}");
    // the answer runs as printed: the scenario's file with the value
    let sweep = out
        .lines()
        .find(|l| l.trim_start().starts_with("blkcg-sim sweep "))
        .unwrap()
        .trim();
    assert_eq!(
        sweep,
        format!(
            "blkcg-sim sweep {} --set cgroup.batch.io.max:wiops=1500 --seeds 2",
            sc.display()
        )
    );
    let json = shell(&dir, sweep);
    assert_eq!(json.lines().count(), 2, "{json}");
    assert!(
        json.contains("\"values\":{\"cgroup.batch.io.max:wiops\":\"1500\"}"),
        "{json}"
    );
    // a latency goal on top asks for more
    let strict = run(&["--seeds", "1", "--p99-ms", "5"]);
    assert!(
        strict.contains("answer: cgroup.batch.io.max:wiops=250:"),
        "{strict}"
    );
}

/// The reader beside the batch writer with blk-iocost on, the model at the volume's
/// capacity: the model's budget throttles `batch` and vrate follows the bounds tried.
const WEB_AND_BATCH_IOCOST: &str = r#"
name = "web-beside-batch-iocost"
seed = 1
[device]
model = "cloud"
preset = "aws-gp3"
dev = "8:16"
[root]
"io.cost.model" = "8:16 ctrl=user model=linear rbps=131072000 rseqiops=3000 rrandiops=3000 wbps=131072000 wseqiops=3000 wrandiops=3000"
"io.cost.qos" = "8:16 enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=150"
[cgroup.web]
fio = "fio --name=web --rw=randread --bs=4k --iodepth=1 --rate_iops=200 --ioengine=libaio --direct=1 --runtime=10 --time_based"
[cgroup.batch]
fio = "fio --name=batch --rw=randwrite --bs=64k --iodepth=4 --rate_iops=300 --ioengine=libaio --direct=1 --runtime=10 --time_based"
"#;

#[test]
fn qos_rows_carry_the_vrate_in_force_as_the_timeline_shows_it() {
    let dir = scratch("qos-vrate");
    let text = WEB_AND_BATCH_IOCOST.replace("iodepth=4 --rate_iops=300", "iodepth=32");
    std::fs::write(dir.join("busy.toml"), &text).unwrap();
    let out = stdout_of(&[
        "tune",
        "qos",
        dir.join("busy.toml").to_str().unwrap(),
        "--protect",
        "web",
        "--vrate-min",
        "20",
        "--vrate-max",
        "100",
        "--vrate-intvs",
        "5",
        "--seeds",
        "1",
        "--output",
        dir.join("tune").to_str().unwrap(),
        "--quiet",
    ]);
    let csv = std::fs::read_to_string(dir.join("tune/tune-qos.csv")).unwrap();
    // report.html: each figure against vrate, and the trade-off with its front
    if let Some(view) = common::check_page(&dir.join("tune/report.html"), "report-tune-qos", 6, &[])
    {
        let series = &view.body["series"];
        assert!(
            series.lines().any(|l| l
                .contains("protection of web against throughput: work (MiB/s, all jobs)")
                && l.contains("Pareto front")),
            "{series}"
        );
    }
    let at40 = csv_column(&csv, "vrate")
        .iter()
        .position(|v| *v == "40")
        .unwrap();
    let field = |name: &str| -> f64 { csv_column(&csv, name)[at40].parse().unwrap() };
    // the point by hand: the scenario with min = max = 40, run with its timeline
    std::fs::write(
        dir.join("point.toml"),
        text.replace("min=50 max=150", "min=40.00 max=40.00"),
    )
    .unwrap();
    stdout_of(&[
        "run",
        dir.join("point.toml").to_str().unwrap(),
        "--output",
        dir.join("run").to_str().unwrap(),
        "--quiet",
    ]);
    let timeline = std::fs::read_to_string(dir.join("run/default/timeline.csv")).unwrap();
    // one line per period per active cgroup, the period's fields repeated
    let mut periods: Vec<(&str, f64)> = csv_column(&timeline, "t_s")
        .into_iter()
        .zip(csv_column(&timeline, "vrate_base_pct"))
        .map(|(t, v)| (t, v.parse().unwrap()))
        .collect();
    periods.dedup_by_key(|p| p.0);
    let v: Vec<f64> = periods.iter().map(|p| p.1).collect();
    assert!(v.len() > 100, "{timeline}");
    assert_eq!(field("periods"), v.len() as f64);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!((field("vrate_mean_pct") - mean).abs() < 1e-9, "{mean}");
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!((field("vrate_min_pct"), field("vrate_max_pct")), (min, max));
    assert_eq!(
        (min, max),
        (40.0, 100.0),
        "vrate starts at 100 and is pulled to 40"
    );
    let at = v.iter().filter(|&&x| x == 40.0).count();
    assert_eq!(field("periods_at_vrate"), at as f64);
    assert_eq!(csv_column(&csv, "fitted")[at40], "yes");
    // the table shows the same, and the share of periods at 40
    let r = row(&out, "40.00");
    assert!(
        r.contains(&format!(" {mean:.1} (40.0-100.0) ")),
        "{r}\n{mean}"
    );
    assert!(
        r.ends_with(&format!(" {:.1}", at as f64 * 100.0 / v.len() as f64)),
        "{r}"
    );
}

#[test]
fn qos_says_so_when_the_targets_are_always_met_instead_of_giving_solutions() {
    let dir = scratch("qos-met");
    let sc = dir.join("light.toml");
    std::fs::write(&sc, WEB_AND_BATCH_IOCOST.replace("rlat=5000", "rlat=50000")).unwrap();
    let run = |jobs: &str, output: bool| {
        let mut a = vec![
            "tune",
            "qos",
            sc.to_str().unwrap(),
            "--protect",
            "web",
            "--vrate-min",
            "50",
            "--vrate-max",
            "150",
            "--vrate-intvs",
            "3",
            "--seeds",
            "2",
            "--jobs",
            jobs,
            "--quiet",
        ];
        let o = dir.join("tune");
        if output {
            a.extend(["--output", o.to_str().unwrap()]);
        }
        stdout_of(&a)
    };
    let out = run("2", true);
    assert_eq!(out, run("1", false), "--jobs 1 and 2 print the same");
    // nobody is throttled and the targets are met: vrate never leaves 100%
    for v in ["50.00", "150.00"] {
        let r = row(&out, v);
        assert!(
            r.contains(" 100.0 (100.0-100.0) ") && r.ends_with(" never"),
            "{r}"
        );
    }
    assert!(row(&out, "100.00").ends_with(" 100.0"), "{out}");
    assert!(out.contains("\n2 of the 3 vrates tried were not in force in every seed's run"));
    assert!(
        out.contains("\nno solutions: the QoS targets were met in every period of every run"),
        "{out}"
    );
    for never in ["Solutions", "[naive]", "echo", "IOCOST_", " *\n"] {
        assert!(!out.contains(never), "{never} in\n{out}");
    }
    assert!(!dir.join("tune/tune-qos.hwdb").exists());
    let csv = std::fs::read_to_string(dir.join("tune/tune-qos.csv")).unwrap();
    let fitted: Vec<&str> = csv_column(&csv, "fitted");
    assert_eq!(
        fitted,
        ["", "", "", "", "no", "no", "yes", "yes", "no", "no"]
    );
    assert!(csv_column(&csv, "periods_missed").iter().all(|m| *m == "0"));
}

#[test]
fn qos_solutions_run_as_printed_from_a_built_in_scenarios_file() {
    let dir = scratch("qos-run");
    let out = stdout_of(&[
        "tune",
        "qos",
        "iocost-no-completion",
        "--variant",
        "after",
        "--protect",
        "cgB",
        "--vrate-intvs",
        "5",
        "--seeds",
        "1",
        "--quiet",
    ]);
    // the built-in scenario's file, as the report says to get it
    let copy = out
        .lines()
        .find_map(|l| l.split_once("is built in; to edit it and run the commands below: "))
        .unwrap_or_else(|| panic!("no copy line in\n{out}"))
        .1
        .trim_end_matches(')');
    assert_eq!(
        copy,
        "blkcg-sim scenarios iocost-no-completion > iocost-no-completion.toml"
    );
    shell(&dir, copy);
    let sweep = out
        .lines()
        .skip_while(|l| !l.starts_with("[isolation]"))
        .find(|l| l.trim_start().starts_with("blkcg-sim sweep "))
        .unwrap_or_else(|| panic!("no sweep line in\n{out}"))
        .trim();
    assert!(
        sweep.starts_with("blkcg-sim sweep iocost-no-completion.toml --set variant=after --set 'root.io.cost.model=8:0 ctrl=user model=linear rbps="),
        "{sweep}"
    );
    let qos = out
        .lines()
        .skip_while(|l| !l.starts_with("[isolation]"))
        .find_map(|l| l.trim().strip_prefix("echo \""))
        .and_then(|l| l.split_once("\" > /sys/fs/cgroup/io.cost."))
        .unwrap_or_else(|| panic!("no echo line in\n{out}"));
    assert_eq!(qos.1, "model", "the model first");
    let json = shell(&dir, sweep);
    assert!(json.starts_with(
        "{\"point\":0,\"seed\":1,\"values\":{\"variant\":\"after\",\"root.io.cost.model\":\""
    ));
    assert!(
        json.contains(&format!("\"root.io.cost.model\":\"{}\"", qos.0)),
        "{json}"
    );
}

#[test]
fn a_schedule_that_rewrites_what_a_tuner_writes_is_refused_naming_its_line() {
    let dir = scratch("schedule");
    let sc = dir.join("sched.toml");
    let text = format!(
        "{WEB_AND_BATCH}\n[[schedule]]\nat = \"5s\"\ncgroup = \"batch\"\n\"io.max\" = \"8:16 wbps=max\"\n"
    );
    std::fs::write(&sc, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("\"io.max\" = \"8:16 wbps"))
        .unwrap()
        + 1;
    let path = sc.to_str().unwrap();
    let iomax = |limit: &'static str| {
        vec![
            "tune",
            "iomax",
            path,
            "--protect",
            "web",
            "--limit",
            limit,
            "--seeds",
            "1",
            "--quiet",
        ]
    };
    // its token, or the whole line: the value would hold for the first 5 s only
    for limit in [
        "cgroup.batch.io.max:wbps=10485760,max",
        "cgroup.batch.io.max=8:16 wiops=1000",
    ] {
        let e = one_line_error(&iomax(limit));
        assert!(
            e.contains(&format!(
                "--limit {}: the [[schedule]] entry at 5.000 s ({path}:{line}) writes `8:16 wbps=max` to `batch`'s io.max",
                limit.split('=').next().unwrap()
            )) && e.contains("only for the first 5.000 s of each run"),
            "{e}"
        );
    }
    // another token of the line: what the entry writes leaves it alone
    let out = stdout_of(&iomax("cgroup.batch.io.max:wiops=1000,max"));
    assert!(
        out.contains("answer: cgroup.batch.io.max:wiops=1000:"),
        "{out}"
    );
    // tune qos writes the root's io.cost.qos for every run
    let sc = dir.join("qos.toml");
    std::fs::write(
        &sc,
        format!(
            "{WEB_AND_BATCH_IOCOST}\n[[schedule]]\nat = 0\n\"io.cost.qos\" = \"8:16 min=10\"\n"
        ),
    )
    .unwrap();
    let e = one_line_error(&["tune", "qos", sc.to_str().unwrap(), "--protect", "web"]);
    assert!(
        e.contains("root.io.cost.qos: the [[schedule]] entry at 0.000 s")
            && e.contains("writes `8:16 min=10` to the root's io.cost.qos, so each value tried would be in force at no time of the run"),
        "{e}"
    );
}

#[test]
fn iomax_says_when_no_value_bound() {
    let dir = scratch("iomax-unbound");
    let sc = dir.join("web.toml");
    std::fs::write(&sc, WEB_AND_BATCH).unwrap();
    // batch only writes: a read limit never holds a bio of it
    let out = stdout_of(&[
        "tune",
        "iomax",
        sc.to_str().unwrap(),
        "--protect",
        "web",
        "--limit",
        "cgroup.batch.io.max:riops=100,200",
        "--seeds",
        "1",
        "--quiet",
    ]);
    for v in ["100", "200"] {
        assert!(row(&out, v).ends_with(" 0.00"), "{out}");
    }
    assert!(
        out.contains(
            "answer: none of these values meets the goal; none of them held a bio of `batch` back"
        ),
        "{out}"
    );
}
