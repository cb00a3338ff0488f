//! Issue 32, items 5, 6, 8 and 9: numbers no model can follow are refused before any
//! simulation, as one line naming the key or option and what is accepted; inputs that
//! used to spin, hang or take cubic time finish. The hostile inputs live under
//! `tests/data/hostile/`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;
use common::{bin, one_line_error};

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-h32n-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `blkcg-sim ARGS`, killed after `secs` (a hang fails the test, never the suite);
/// its output goes through files, so a large report never blocks it on a full pipe.
fn finishes_within(args: &[&str], secs: u64) -> (bool, String, String) {
    let dir = tmp_dir(&format!("out-{secs}-{}", args.len()));
    let (o, e) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = bin()
        .args(args)
        .stdout(Stdio::from(std::fs::File::create(&o).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&e).unwrap()))
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{:?} still running after {secs} s", &args[..3]);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (status.success(), read(&o), read(&e))
}

#[test]
fn item5_a_cloud_bucket_too_slow_for_one_request_is_refused() {
    let fio = |dev: &str, bs: &str| {
        one_line_error(&[
            "fio",
            "--device",
            dev,
            "--name=x",
            "--rw=randread",
            &format!("--bs={bs}"),
            "--direct=1",
            "--iodepth=32",
            "--runtime=20",
            "--time_based",
        ])
    };
    let e = fio("cloud:bps=1", "4k");
    assert!(
        e.contains("device.bps") && e.contains("accepted: bps >= 4096"),
        "{e}"
    );
    // a 1 MiB request is 4 IOPS units: at 1 unit/s it takes 4 s
    let e = fio("cloud:iops=1", "1m");
    assert!(
        e.contains("device.iops") && e.contains("accepted: iops >= 4"),
        "{e}"
    );
}

#[test]
fn item6_four_thousand_same_named_jobs_fit_at_once() {
    // what fio writes for numjobs=N: every job the same `jobname`; 500 copies of each
    // of the fit's eight jobs, each 1 ms long so the verification runs are short
    let mut jobs = Vec::new();
    for f in common::fit_files() {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let mut job = doc["jobs"][0].clone();
        job["jobname"] = "t".into();
        job["job_runtime"] = 1.into();
        jobs.extend(std::iter::repeat_n(job, 500));
    }
    let dir = tmp_dir("numjobs");
    let p = dir.join("numjobs.json");
    std::fs::write(&p, serde_json::json!({ "jobs": jobs }).to_string()).unwrap();
    let (ok, text, err) = finishes_within(
        &["device", "fit", "--model", "ssd", p.to_str().unwrap()],
        30,
    );
    assert!(ok, "{err}");
    assert!(
        text.contains("Measurements (4000 jobs)"),
        "{}",
        &text[..200]
    );
    assert!(text.contains(&format!("t@{}#4000", p.display())));
}

#[test]
fn item8_measurements_that_cannot_be_fitted_are_refused_naming_the_field() {
    let cases = [
        ("fio2-no-clat-ns", "no `read.clat_ns.mean` (fio 2.x"),
        ("job-error-5", "fio reports `error` = 5"),
        ("iops-string", "`read.iops` = \"fast\" cannot be fitted"),
        ("iops-1e308", "`read.iops` = 1e+308 cannot be fitted"),
        ("iops-zero", "`read.iops` = 0 cannot be fitted"),
        ("bw-negative", "`read.bw_bytes` = -4096 cannot be fitted"),
        ("clat-zero", "`read.clat_ns.mean` = 0 cannot be fitted"),
        ("runtime-zero", "`job_runtime` = 0 cannot be fitted"),
        (
            "percentile-string",
            "`read.clat_ns.percentile.99.000000` = \"slow\"",
        ),
    ];
    let real = common::fit_files();
    for (name, want) in cases {
        let f = data(&format!("tests/data/hostile/fit/{name}.json"));
        let mut args = vec!["device", "fit", "--model", "ssd", &f];
        args.extend(real.iter().map(String::as_str));
        let e = one_line_error(&args);
        assert!(e.contains(want), "{name}: {e}");
        assert!(
            e.contains(&format!("{name}.json: job `randread-4k-qd1`")),
            "{e}"
        );
        assert!(e.contains("accepted"), "{name}: {e}");
    }
}

#[test]
fn item8_a_file_name_cannot_inject_toml_into_the_fitted_table() {
    let dir = tmp_dir("inject");
    let mut files = Vec::new();
    for f in common::fit_files() {
        let name = Path::new(&f).file_name().unwrap().to_str().unwrap();
        let to = if name.starts_with("randread-4k-qd1") {
            dir.join("x\n[cgroup.injected]\nweight = 1\n#.json")
        } else {
            dir.join(name)
        };
        std::fs::copy(&f, &to).unwrap();
        files.push(to.to_string_lossy().into_owned());
    }
    let out = dir.join("fitted.toml");
    let mut args = vec!["device", "fit", "--model", "ssd", "--output"];
    args.push(out.to_str().unwrap());
    args.extend(files.iter().map(String::as_str));
    let (ok, _, err) = finishes_within(&args, 120);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let table: toml::Table = text.parse().unwrap();
    assert_eq!(table.keys().collect::<Vec<_>>(), ["device"], "{text}");
    assert!(
        text.contains("x\\n[cgroup.injected]\\nweight = 1\\n#.json"),
        "{text}"
    );
}

#[test]
fn item9_numeric_options_of_tune_and_device_fit_are_bounded() {
    let cases: [(&[&str], &str); 12] = [
        (
            &["tune", "qos", "x", "--protect", "a", "--vrate-max", "inf"],
            "--vrate-max inf is not accepted: expected a vrate in % in 0.01..=10000",
        ),
        (
            &[
                "tune",
                "qos",
                "x",
                "--protect",
                "a",
                "--vrate-max",
                "100000",
            ],
            "--vrate-max 100000 is not accepted",
        ),
        (
            &["tune", "qos", "x", "--protect", "a", "--vrate-min", "NaN"],
            "--vrate-min NaN is not accepted",
        ),
        (
            &[
                "tune",
                "qos",
                "x",
                "--protect",
                "a",
                "--model-duration",
                "0",
            ],
            "--model-duration 0 is not accepted: expected seconds per job in 1..=86400",
        ),
        (
            &["tune", "qos", "x", "--protect", "a", "--jobs", "0"],
            "--jobs 0 is not accepted",
        ),
        (
            &[
                "tune",
                "model",
                "--device",
                "ssd",
                "--duration",
                "4294967296",
            ],
            "tune model: --duration 4294967296 is not accepted: expected seconds per job in 1..=86400",
        ),
        (
            &[
                "tune",
                "model",
                "--device",
                "ssd",
                "--testfile-size-gb",
                "0",
            ],
            "--testfile-size-gb 0 is not accepted",
        ),
        (
            &[
                "tune",
                "model",
                "--device",
                "ssd",
                "--seqio-block-mb",
                "17592186044416",
            ],
            "--seqio-block-mb 17592186044416 is not accepted",
        ),
        (
            &["tune", "model", "--device", "ssd", "--rand-depth", "0"],
            "--rand-depth 0 is not accepted",
        ),
        (
            &[
                "tune",
                "iomax",
                "x",
                "--protect",
                "a",
                "--limit",
                "riops=1",
                "--p99-ms=-1",
            ],
            "tune iomax: --p99-ms -1 is not accepted",
        ),
        (
            &["device", "fit", "--print-jobs", "--runtime", "0"],
            "device fit: --runtime 0 is not accepted: expected seconds per job in 1..=86400",
        ),
        (
            &["device", "fit", "--model", "ssd", "--jobs", "0", "x.json"],
            "device fit: --jobs 0 is not accepted",
        ),
    ];
    for (args, want) in cases {
        let e = one_line_error(args);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}
