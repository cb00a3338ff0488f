//! Every job file in fio's own `examples/` directory must parse with no error (only
//! warnings). They are read from Debian's `fio-examples` package
//! (`/usr/share/doc/fio/examples`, fio 3.33's; `.ci/run` installs it), or a folder
//! `$BLKCG_SIM_FIO_EXAMPLES` names; missing, the test is skipped with a note on stderr,
//! and fails under `BLKCG_SIM_REQUIRE_TOOLS=1` (CI). Where a git clone of fio's source is
//! at hand (`$BLKCG_SIM_FIO_SRC`, else the fio mirror), its `examples/` and `t/jobs/` at
//! HEAD are parsed too. Our own job files under `tests/jobs/` are always parsed.

mod common;

use blkcg_sim::workload::fio::{Env, FioJobs, Origin, Reader, SizeOrPct, parse_jobfile};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's `fio-examples` puts fio's example job files.
const DEBIAN_EXAMPLES: &str = "/usr/share/doc/fio/examples";

/// Where fio's source is when `BLKCG_SIM_FIO_SRC` does not say.
const FIO_MIRROR: &str = "/work/.mirror/axboe+fio/repo";

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

/// Parse job files `(name, text)`, includes read through `read`; the failures.
fn parse_all(
    files: impl Iterator<Item = (String, String)>,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut n = 0;
    for (f, text) in files {
        n += 1;
        let rd = Reader {
            env: Env::Vars(&example_env),
            read_file: read,
            quote_job_files: true,
            honours_program_options: true,
        };
        match parse_jobfile(
            &text,
            &Origin {
                file: &f,
                lines: &[],
            },
            &rd,
        ) {
            Ok(j) => assert!(!j.jobs.is_empty(), "{f}: no jobs"),
            Err(e) => failures.push(e.to_string()),
        }
    }
    (n, failures)
}

/// Every `.fio` file of folder `dir`, by name.
fn folder_files(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.to_string_lossy().into_owned(), text)
        })
        .collect();
    v.sort();
    v
}

/// `git -C repo ARGS`, if it succeeds.
fn git(repo: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every `.fio` file under `dir` of a git repository of fio at HEAD.
fn repo_files(repo: &str, dir: &str) -> Vec<(String, String)> {
    let list = git(repo, &["ls-tree", "--name-only", "HEAD", dir]).unwrap_or_default();
    list.lines()
        .filter(|f| f.ends_with(".fio"))
        .filter_map(|f| Some((f.to_string(), git(repo, &["show", &format!("HEAD:{f}")])?)))
        .collect()
}

fn assert_parsed(what: &str, (n, failures): (usize, Vec<String>), at_least: usize) {
    assert!(n >= at_least, "{what}: only {n} job files found");
    assert!(
        failures.is_empty(),
        "{what}: {} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn fio_examples_parse_without_error() {
    let dir = std::env::var("BLKCG_SIM_FIO_EXAMPLES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(DEBIAN_EXAMPLES));
    if !dir.is_dir() {
        common::missing_tool(
            &format!("fio's example job files ({})", dir.display()),
            "apt-get install fio-examples",
            "to parse fio's own job files",
        );
        return;
    }
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(|e| e.to_string());
    assert_parsed(
        "fio-examples",
        parse_all(folder_files(&dir).into_iter(), &read),
        50,
    );
}

/// fio's HEAD, where a clone is at hand: an extra on a developer's machine (CI has
/// Debian's examples above, and no clone).
#[test]
fn fio_source_job_files_parse_without_error_where_a_clone_is_at_hand() {
    let repo = std::env::var("BLKCG_SIM_FIO_SRC").unwrap_or_else(|_| FIO_MIRROR.to_string());
    if git(&repo, &["rev-parse", "HEAD"]).is_none() {
        eprintln!(
            "note: no git clone of fio at {repo} (BLKCG_SIM_FIO_SRC): its HEAD's job files not parsed"
        );
        return;
    }
    let read =
        |p: &str| git(&repo, &["show", &format!("HEAD:{p}")]).ok_or_else(|| "missing".into());
    assert_parsed(
        "examples/",
        parse_all(repo_files(&repo, "examples/").into_iter(), &read),
        50,
    );
    assert_parsed(
        "t/jobs/",
        parse_all(repo_files(&repo, "t/jobs/").into_iter(), &read),
        20,
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
        honours_program_options: true,
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
