//! `blkcg-sim device fit`: fitting this VM's real fio measurements (tests/data/fit),
//! recovering known device tables from our own fio JSON, and one-line errors.

use std::path::{Path, PathBuf};

use blkcg_sim::workload::cmdline::split_shell_words;

mod common;
use common::{one_line_error, stdout_of};

fn tmp_dir(name: &str) -> PathBuf {
    // under cargo's scratch folder for tests, never left in /tmp
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-fit-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// (real, sim, sim/real) of `figure` in the side-by-side block of `job`.
fn side_by_side(report: &str, job: &str, figure: &str) -> (f64, f64, f64) {
    let block = report
        .split("fio job `")
        .find(|b| b.starts_with(&format!("{job}`")))
        .unwrap_or_else(|| panic!("no block for {job}: {report}"));
    let line = block
        .lines()
        .find(|l| l.trim_start().starts_with(figure))
        .unwrap_or_else(|| panic!("no {figure} for {job}: {block}"));
    let v: Vec<f64> = line[figure.len() + 2..]
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

/// A fitted table's integer key.
fn key(table: &toml::Table, k: &str) -> f64 {
    table["device"][k]
        .as_integer()
        .unwrap_or_else(|| panic!("no {k}: {table}")) as f64
}

fn fit(files: &[String], model: &str, out: &Path) -> (String, toml::Table) {
    let mut args: Vec<&str> = vec!["device", "fit", "--model", model, "--output"];
    args.push(out.to_str().unwrap());
    args.extend(files.iter().map(String::as_str));
    let report = stdout_of(&args);
    let table: toml::Table = std::fs::read_to_string(out).unwrap().parse().unwrap();
    // what was written builds a device as it stands
    let dev = table["device"].as_table().unwrap();
    blkcg_sim::device::config::resolve(dev, 1).unwrap();
    (report, table)
}

#[test]
fn this_vms_disk_fitted_as_an_ssd_follows_its_random_iops() {
    let files = common::fit_files();
    assert_eq!(files.len(), 8);
    let dir = tmp_dir("real");
    let (report, table) = fit(&files, "ssd", &dir.join("ssd.toml"));
    assert_eq!(table["device"]["model"].as_str(), Some("ssd"));
    for job in [
        "randread-4k-qd1",
        "randread-4k-qd32",
        "randwrite-4k-qd1",
        "randwrite-4k-qd32",
    ] {
        let (real, sim, ratio) = side_by_side(&report, job, "IOPS");
        // the real side is the measurement itself
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                files
                    .iter()
                    .find(|f| f.ends_with(&format!("/{job}.json")))
                    .unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        let dir_name = if job.contains("read") {
            "read"
        } else {
            "write"
        };
        let measured = doc["jobs"][0][dir_name]["iops"].as_f64().unwrap();
        assert!(
            (real - measured).abs() <= measured * 0.001 + 0.5,
            "{job}: {real} vs {measured}"
        );
        assert!(
            (0.67..=1.5).contains(&ratio),
            "{job}: sim {sim} real {real}\n{report}"
        );
    }
    // the fit's own targets: the QD1 clat means and 1 MiB bandwidths within 5%
    for (job, fig) in [
        ("randread-4k-qd1", "clat mean µs"),
        ("randwrite-4k-qd1", "clat mean µs"),
        ("read-1m-qd32", "MiB/s"),
        ("write-1m-qd32", "MiB/s"),
    ] {
        let (_, _, ratio) = side_by_side(&report, job, fig);
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{job} {fig}: {ratio}\n{report}"
        );
    }
    assert!(report.contains("Fit residuals"), "{report}");
    assert!(report.contains("RMS "), "{report}");
}

#[test]
fn this_vms_disk_fitted_as_a_cloud_volume_keeps_its_tail() {
    let (report, table) = fit(
        &common::fit_files(),
        "cloud",
        &tmp_dir("cloud").join("c.toml"),
    );
    assert_eq!(table["device"]["latency_dist"].as_str(), Some("pcts"));
    for fig in ["clat p50 µs", "clat p99 µs"] {
        let (_, _, ratio) = side_by_side(&report, "randread-4k-qd1", fig);
        assert!((0.95..=1.05).contains(&ratio), "{fig}: {ratio}\n{report}");
    }
    // its QD32 random reads were held back: the cap reproduces them
    let (_, _, ratio) = side_by_side(&report, "randread-4k-qd32", "IOPS");
    assert!((0.95..=1.05).contains(&ratio), "{ratio}\n{report}");
}

/// The fit's jobs, as `--print-jobs` prints them, run with `blkcg-sim fio` on `device`,
/// their JSON in `dir`.
fn measure_simulated(device: &str, dir: &Path, size: &str) -> Vec<String> {
    let jobs = stdout_of(&[
        "device",
        "fit",
        "--print-jobs",
        "--filename",
        "/dev/sim",
        "--size",
        size,
        "--runtime",
        "2",
    ]);
    let mut files = Vec::new();
    for line in jobs.lines().filter(|l| l.starts_with("fio ")) {
        let words = split_shell_words(line).unwrap();
        let name = words
            .iter()
            .find_map(|w| w.strip_prefix("--output="))
            .unwrap()
            .to_string();
        let mut args = vec![
            "--quiet",
            "fio",
            "--device",
            device,
            "--output-format",
            "json",
        ];
        args.extend(words[1..].iter().map(String::as_str));
        let p = dir.join(name);
        std::fs::write(&p, stdout_of(&args)).unwrap();
        files.push(p.to_string_lossy().into_owned());
    }
    assert_eq!(files.len(), 8);
    files
}

fn near(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= want * tol,
        "{what}: fitted {got}, true {want} (tolerance {}%)",
        tol * 100.0
    );
}

#[test]
fn round_trip_recovers_an_ssd() {
    let dir = tmp_dir("rt-ssd");
    let files = measure_simulated(
        "ssd:channels=4,read_lat_us=50,write_lat_us=20,read_mbps=500,write_mbps=300",
        &dir,
        "1G",
    );
    let (_, t) = fit(&files, "ssd", &dir.join("fit.toml"));
    for (k, want) in [
        ("channels", 4.0),
        ("read_lat_us", 50.0),
        ("write_lat_us", 20.0),
        ("read_mbps", 500.0),
        ("write_mbps", 300.0),
        ("jitter_pct", 0.0),
    ] {
        near(key(&t, k), want, 0.02, k);
    }
}

#[test]
fn round_trip_recovers_a_cloud_volume() {
    let dir = tmp_dir("rt-cloud");
    // a byte cap high enough that the QD1 128 KiB jobs show the per-byte transfer
    let files = measure_simulated(
        "cloud:iops=3000,bps=400000000,latency_us=500,xfer_bps=400000000",
        &dir,
        "1G",
    );
    let (_, t) = fit(&files, "cloud", &dir.join("fit.toml"));
    near(key(&t, "iops"), 3000.0, 0.02, "iops");
    near(key(&t, "bps"), 400e6, 0.05, "bps");
    near(key(&t, "xfer_bps"), 400e6, 0.05, "xfer_bps");
    near(key(&t, "latency_us"), 500.0, 0.02, "latency_us");
    // a fixed latency: every percentile is it
    let p = t["device"]["latency_pcts"].as_table().unwrap();
    near(p["p50"].as_integer().unwrap() as f64, 500.0, 0.02, "p50");
    near(
        p["p9999"].as_integer().unwrap() as f64,
        500.0,
        0.02,
        "p9999",
    );
}

#[test]
fn round_trip_recovers_a_hard_disk() {
    let dir = tmp_dir("rt-hdd");
    // a tenth of the disk: seeks long enough to tell the stroke
    let files = measure_simulated("hdd:rpm=7200,full_stroke_us=16000,mbps=180", &dir, "100G");
    let (_, t) = fit(&files, "hdd", &dir.join("fit.toml"));
    near(key(&t, "mbps"), 180.0, 0.01, "mbps");
    // the seeks' own spread widens p90 − p10: rpm comes out low (6829 here)
    near(key(&t, "rpm"), 7200.0, 0.08, "rpm");
    near(key(&t, "full_stroke_us"), 16000.0, 0.15, "full_stroke_us");
}

#[test]
fn the_same_files_fit_the_same_whatever_the_threads() {
    let files = common::fit_files();
    let mut a: Vec<&str> = vec!["device", "fit", "--model", "ssd", "--jobs", "1"];
    a.extend(files.iter().map(String::as_str));
    let one = stdout_of(&a);
    a[5] = "2";
    assert_eq!(one, stdout_of(&a));
}

#[test]
fn bad_input_is_one_line_naming_the_file_and_what_is_accepted() {
    let dir = tmp_dir("errors");
    let files = common::fit_files();
    // not JSON, JSON but not fio's
    for (name, text) in [("notes.json", "hello"), ("other.json", "{\"a\": 1}")] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let e = one_line_error(&["device", "fit", "--model", "ssd", p.to_str().unwrap()]);
        assert!(
            e.contains(name) && e.contains("not fio's JSON output"),
            "{e}"
        );
        assert!(e.contains("--output-format=json"), "{e}");
    }
    // the reads only: the writes are missing, with the fio commands that make them
    let reads: Vec<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|f| f.contains("/randread"))
        .collect();
    let mut args = vec!["device", "fit", "--model", "ssd"];
    args.extend(&reads);
    let e = one_line_error(&args);
    assert!(
        e.contains("lack randwrite-4k-qd1, randwrite-4k-qd32, read-1m-qd32, write-1m-qd32"),
        "{e}"
    );
    assert!(
        e.contains("fio --name=randwrite-4k-qd1 --filename=/tmp/fitdisk"),
        "{e}"
    );
    // models
    let mut args = vec!["device", "fit", "--model", "nvme"];
    args.extend(files.iter().map(String::as_str));
    let e = one_line_error(&args);
    assert!(
        e.contains("`nvme` is not accepted: expected ssd, hdd or cloud"),
        "{e}"
    );
    // an SSD's measurements are no hard disk's
    args[3] = "hdd";
    let e = one_line_error(&args);
    assert!(e.contains("not a hard disk's measurements"), "{e}");
    // options fio's JSON names that do not parse
    let p = dir.join("bad-options.json");
    std::fs::write(
        &p,
        r#"{"jobs": [{"jobname": "x", "job options": {"name": "x", "rw": "sideways"}}]}"#,
    )
    .unwrap();
    let e = one_line_error(&["device", "fit", "--model", "ssd", p.to_str().unwrap()]);
    assert!(e.contains("job `x`") && e.contains("sideways"), "{e}");
}
