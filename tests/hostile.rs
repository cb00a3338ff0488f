//! The hostile corpus (`tests/data/hostile/`): every bad input a hardening fix
//! refuses, run through the binary. Each case must end with exit status 2, exactly one
//! line on stderr, no panic, and the line must name what `cases.toml` says it does.

mod common;

use std::path::Path;

use common::{one_line_error, run};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hostile");

#[test]
fn every_hostile_case_is_refused_in_one_line() {
    let text = std::fs::read_to_string(Path::new(DIR).join("cases.toml")).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    let cases = doc["case"].as_array().unwrap();
    assert!(cases.len() >= 10);
    let mut failed = Vec::new();
    for c in cases {
        let args: Vec<String> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().replace("{dir}", DIR))
            .collect();
        let want = c["error"].as_str().unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        let e = String::from_utf8_lossy(&out.stderr).into_owned();
        let ok = out.status.code() == Some(2)
            && !e.contains("panicked")
            && e.trim_end().lines().count() == 1
            && e.contains(want);
        if !ok {
            failed.push(format!(
                "{args:?}: status {:?}, expected `{want}` in one line, got: {e}",
                out.status.code()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Every file of the corpus is used by some case (or by a test below); a subfolder is
/// another command's corpus, with a test file of its own (`fit/`:
/// `tests/hardening_numeric.rs`).
#[test]
fn every_corpus_file_has_a_case() {
    let text = std::fs::read_to_string(Path::new(DIR).join("cases.toml")).unwrap();
    let here = include_str!("hostile.rs");
    for f in std::fs::read_dir(DIR).unwrap() {
        let f = f.unwrap();
        let name = f.file_name().into_string().unwrap();
        if name != "cases.toml" && !f.path().is_dir() {
            assert!(
                text.contains(&format!("{{dir}}/{name}")) || here.contains(&name),
                "{name} has no case"
            );
        }
    }
}

/// Issue 32 item 13: a variant may add a cgroup, but one a letter or two away from a
/// declared cgroup is most likely a misspelling: accepted, with a warning naming it.
#[test]
fn a_variants_misspelt_cgroup_is_named_in_a_warning() {
    let f = format!("{DIR}/variant-misspelt-cgroup.toml");
    let out = run(&["check", &f]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("variant `v` adds cgroup `tenat`") && text.contains("did you mean `tenant`?"),
        "{text}"
    );
    assert!(text.contains("variant-misspelt-cgroup.toml:14:"), "{text}");
}

/// Issue 32 item 16: `run --output DIR` checks every run's folder before writing any.
#[test]
fn run_output_checks_every_folder_before_writing() {
    let dir = std::env::temp_dir().join(format!("blkcg-sim-hostile-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("nullb-rate"), "a file, not a folder").unwrap();
    let e = one_line_error(&["run", "sanity-nullb-ssd", "--output", dir.to_str().unwrap()]);
    assert!(e.contains("nullb-rate: exists and is not a folder"), "{e}");
    assert!(
        !dir.join("nullb-qd1").exists(),
        "a folder was written before the refusal"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 32 item 14: a job file's unset `${VAR}` is the error, named, before any
/// option's complaint about the empty value it leaves.
#[test]
fn an_unset_variable_in_a_job_file_is_named_first() {
    let f = format!("{DIR}/unset-var.fio");
    let out = common::bin()
        .args(["fio", "--device", "nullb", &f])
        .env_remove("BLKCG_SIM_HOSTILE_UNSET")
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    let first = e.lines().next().unwrap_or_default();
    assert!(first.contains("BLKCG_SIM_HOSTILE_UNSET"), "{e}");
}
