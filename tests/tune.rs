//! `blkcg-sim tune`: the kernel's iocost_coef_gen.py procedure finds a simulated
//! device's analytic capacity, and `tune qos` gives resctl-bench's solutions.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
}

fn stdout_of(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
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
