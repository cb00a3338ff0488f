//! Every job file in fio's own `examples/` directory must parse with no error (only
//! warnings), and so must its `t/jobs/`. Reads them from a git clone of fio
//! (`$BLKCG_SIM_FIO_SRC`, else the fio mirror) when there is one; skipped (with a note on
//! stderr) otherwise, a failure under `BLKCG_SIM_REQUIRE_TOOLS=1` (CI clones fio).
//! Our own job files under `tests/jobs/` are always parsed.

mod common;

use blkcg_sim::workload::fio::{Env, FioJobs, Origin, Reader, SizeOrPct, parse_jobfile};
use std::path::Path;
use std::process::Command;

/// Where fio's source is when `BLKCG_SIM_FIO_SRC` does not say.
const FIO_MIRROR: &str = "/work/.mirror/axboe+fio/repo";

/// A git repository of fio's source (a clone or a bare mirror): `$BLKCG_SIM_FIO_SRC`,
/// else [`FIO_MIRROR`].
fn fio_repo() -> String {
    std::env::var("BLKCG_SIM_FIO_SRC").unwrap_or_else(|_| FIO_MIRROR.to_string())
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(fio_repo())
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
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

/// Parse every `.fio` file under `dir` of the fio mirror; returns (count, failures),
/// or None when the mirror is absent.
fn parse_mirror_dir(dir: &str) -> Option<(usize, Vec<String>)> {
    let repo = fio_repo();
    let install = "git clone https://github.com/axboe/fio, then BLKCG_SIM_FIO_SRC=that folder";
    if !common::require_tool("git", "git", "to read fio's job files") {
        return None;
    }
    if !Path::new(&repo).exists() {
        common::missing_tool(
            &format!("fio's source ({repo})"),
            install,
            "to parse fio's own job files",
        );
        return None;
    }
    let Some(list) = git(&["ls-tree", "--name-only", "HEAD", dir]) else {
        common::missing_tool(
            &format!("{dir} in a git repository at {repo}"),
            install,
            "to parse fio's own job files",
        );
        return None;
    };
    let mut failures = Vec::new();
    let mut n = 0;
    for f in list.lines().filter(|f| f.ends_with(".fio")) {
        let text = git(&["show", &format!("HEAD:{f}")]).expect("git show");
        let read = |p: &str| git(&["show", &format!("HEAD:{p}")]).ok_or_else(|| "missing".into());
        n += 1;
        let rd = Reader {
            env: Env::Vars(&example_env),
            read_file: &read,
            quote_job_files: true,
        };
        match parse_jobfile(
            &text,
            &Origin {
                file: f,
                lines: &[],
            },
            &rd,
        ) {
            Ok(j) => assert!(!j.jobs.is_empty(), "{f}: no jobs"),
            Err(e) => failures.push(e.to_string()),
        }
    }
    Some((n, failures))
}

#[test]
fn fio_examples_parse_without_error() {
    let Some((n, failures)) = parse_mirror_dir("examples/") else {
        return;
    };
    assert!(n > 50, "only {n} example files found");
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn fio_test_jobs_parse_without_error() {
    let Some((n, failures)) = parse_mirror_dir("t/jobs/") else {
        return;
    };
    assert!(n > 20, "only {n} t/jobs files found");
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn own_env(var: &str) -> Option<String> {
    (var == "BLKCG_SIM_DEV").then(|| "/dev/sim0".to_string())
}

fn own(name: &str) -> FioJobs {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/jobs")
        .join(name);
    let text = std::fs::read_to_string(&p).expect("read job file");
    let read = |inc: &str| std::fs::read_to_string(inc).map_err(|e| e.to_string());
    let rd = Reader {
        env: Env::Vars(&own_env),
        read_file: &read,
        quote_job_files: true,
    };
    let file = p.to_string_lossy();
    parse_jobfile(
        &text,
        &Origin {
            file: &file,
            lines: &[],
        },
        &rd,
    )
    .unwrap_or_else(|e| panic!("{e}"))
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
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        let jobs = own(&name);
        assert!(!jobs.jobs.is_empty(), "{name}: no jobs");
        // our files use only modelled options
        assert!(jobs.warnings.is_empty(), "{name}: {:?}", jobs.warnings);
    }
    assert!(n >= 10, "expected at least 10 job files, found {n}");
}

#[test]
fn own_job_files_resolve() {
    let f = own("stonewalled-phases.fio");
    let g: Vec<u32> = f.jobs.iter().map(|j| j.groupid).collect();
    assert_eq!(g, [0, 1, 2, 3]);
    let f = own("randrw-mix.fio");
    assert_eq!(f.jobs.len(), 4);
    assert!(f.jobs.iter().all(|j| j.rwmixread == 70 && j.groupid == 0));
    let f = own("units-expressions.fio");
    let j = &f.jobs[0];
    assert_eq!(j.size, Some(SizeOrPct::Bytes(4 * 8192 * 1_000_000)));
    assert_eq!(j.runtime, 1_000_000_000);
    assert_eq!(j.filesize, Some((1 << 30, 2 << 30)));
    assert_eq!(f.jobs.len(), 2);
    let f = own("include-env.fio");
    assert_eq!(f.jobs[0].iodepth, 16);
    assert_eq!(f.jobs[0].filename.as_deref(), Some("/dev/sim0"));
    let f = own("per-direction-bs-rate.fio");
    let j = &f.jobs[0];
    assert_eq!(j.bs_min, [8192, 65536, 4096]);
    assert_eq!(j.rate, [50 << 20, 20 << 20, 20 << 20]);
    assert_eq!(j.rate_min, [1 << 20, 0, 0]);
    assert_eq!(j.rwmixread, 75);
    let f = own("depth-batching.fio");
    assert_eq!(f.jobs[1].iodepth, 1);
    assert_eq!(f.jobs[0].iodepth_low, 16);
}
