//! Every job file in fio's own `examples/` directory must parse with no error (only
//! warnings). Reads them from the fio mirror when it exists; skipped otherwise.
//! Our own job files under `tests/jobs/` are always parsed.

use blkcg_sim::workload::fio::{FioJobs, parse_jobfile};
use std::path::Path;
use std::process::Command;

const FIO_REPO: &str = "/work/.mirror/axboe+fio/repo";

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(FIO_REPO)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn env(_: &str) -> Option<String> {
    None
}

/// The xnvme examples expect these from the environment (fio itself refuses
/// `rw=` when `${FIO_RW}` is unset); give them what their comments suggest.
fn example_env(var: &str) -> Option<String> {
    match var {
        "FIO_RW" => Some("randread".into()),
        "FIO_BS" => Some("4k".into()),
        "FIO_IODEPTH" => Some("1".into()),
        _ => None,
    }
}

#[test]
fn fio_examples_parse_without_error() {
    if !Path::new(FIO_REPO).exists() {
        eprintln!("skipped: fio mirror {FIO_REPO} not present");
        return;
    }
    let Some(list) = git(&["ls-tree", "--name-only", "HEAD", "examples/"]) else {
        eprintln!("skipped: cannot list examples/ in {FIO_REPO}");
        return;
    };
    let mut failures = Vec::new();
    let mut n = 0;
    for f in list.lines().filter(|f| f.ends_with(".fio")) {
        let text = git(&["show", &format!("HEAD:{f}")]).expect("git show");
        let read = |p: &str| git(&["show", &format!("HEAD:{p}")]).ok_or_else(|| "missing".into());
        n += 1;
        match parse_jobfile(&text, f, &example_env, &read) {
            Ok(j) => assert!(!j.jobs.is_empty(), "{f}: no jobs"),
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(n > 50, "only {n} example files found");
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn own_job_files_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jobs");
    let mut n = 0;
    for ent in std::fs::read_dir(&dir).expect("tests/jobs") {
        let p = ent.expect("entry").path();
        if p.extension().is_none_or(|e| e != "fio") {
            continue;
        }
        n += 1;
        let text = std::fs::read_to_string(&p).expect("read");
        let read = |inc: &str| std::fs::read_to_string(inc).map_err(|e| e.to_string());
        let jobs: FioJobs = parse_jobfile(&text, &p.to_string_lossy(), &env, &read)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!jobs.jobs.is_empty(), "{}: no jobs", p.display());
    }
    assert!(n >= 10, "expected at least 10 job files, found {n}");
}
