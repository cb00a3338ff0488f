//! `blkcg-sim tune`: the kernel's iocost_coef_gen.py procedure finds a simulated
//! device's analytic capacity, and `tune qos` gives resctl-bench's solutions.

mod common;
use common::{bin, stdout_of};

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
        line("qos:", "[naive]"),
        "qos: 8:0 enable=1 ctrl=user rpct=99.00 rlat=7963 wpct=99.00 wlat=7963 min=75.00 max=100.00"
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
    let model = line("model:", "[isolation]");
    assert_eq!(
        coef(&model, "rbps"),
        (173471131.0 * scale / 100.0).round(),
        "{model}"
    );
    assert!(
        line("qos:", "[isolation]")
            .ends_with("rpct=0.00 rlat=7963 wpct=0.00 wlat=7963 min=100.00 max=100.00")
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
    let out = run(&["--seeds", "2"]);
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
    // a latency goal on top asks for more
    let strict = run(&["--seeds", "1", "--p99-ms", "5"]);
    assert!(
        strict.contains("answer: cgroup.batch.io.max:wiops=250:"),
        "{strict}"
    );
}
