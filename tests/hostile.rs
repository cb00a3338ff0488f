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

/// A valid null_blk scenario that every mutant of
/// [`the_dry_run_refuses_what_run_refuses`] breaks in one place.
const BASE: &str = r#"name = "mutant"
duration = 2
[kernel]
version = "6.12"
[device]
model = "nullb"
irqmode = 2
completion_nsec = 100000
scheduler = "mq-deadline"
[root]
"io.cost.qos" = "252:0 enable=1 ctrl=user rpct=90 rlat=5000 wpct=90 wlat=5000 min=50 max=150"
[cgroup.a]
"io.max" = "252:0 riops=500"
"io.weight" = "default 100"
"io.latency" = "252:0 target=10000"
fio = "fio --name=a --rw=randread --bs=4k --ioengine=libaio --iodepth=4 --runtime=2 --time_based"
[[schedule]]
at = "1s"
cgroup = "a"
"io.max" = "252:0 riops=1000"
"#;

/// Issue 32 item 7: `validate --dry-run` makes every check `run` makes, so a mutant
/// `run` refuses is refused by the dry run with the same line (before this, 64 of 72
/// such mutants passed the dry run). Each mutant replaces one line of [`BASE`].
#[test]
fn the_dry_run_refuses_what_run_refuses() {
    let mutants: &[(&str, &str)] = &[
        ("version = \"6.12\"", "version = \"2.4\""),
        ("version = \"6.12\"", "hz = 999"),
        ("version = \"6.12\"", "\"iocost.no_completion\" = \"maybe\""),
        ("irqmode = 2", "irqmode = 7"),
        ("irqmode = 2", "hw_queue_depth = 0"),
        ("completion_nsec = 100000", "completion_nsec = -1"),
        ("scheduler = \"mq-deadline\"", "scheduler = \"cfq\""),
        ("scheduler = \"mq-deadline\"", "nr_requests = \"many\""),
        ("ctrl=user rpct=90", "ctrl=user rpct=190"),
        ("min=50 max=150", "min=150 max=50"),
        (
            "\"io.max\" = \"252:0 riops=500\"",
            "\"io.max\" = \"252:0 riops=-5\"",
        ),
        (
            "\"io.max\" = \"252:0 riops=500\"",
            "\"io.max\" = \"252:1 riops=5\"",
        ),
        (
            "\"io.weight\" = \"default 100\"",
            "\"io.weight\" = \"default 0\"",
        ),
        (
            "\"io.weight\" = \"default 100\"",
            "\"io.weight\" = \"default 10001\"",
        ),
        (
            "\"io.latency\" = \"252:0 target=10000\"",
            "\"io.latency\" = \"252:0 target=x\"",
        ),
        (
            "\"io.latency\" = \"252:0 target=10000\"",
            "\"io.cost.qos\" = \"252:0 enable=1\"",
        ),
        ("--bs=4k", "--bs=0"),
        ("--rw=randread", "--rw=sideways"),
        ("--iodepth=4", "--iodepth=-4"),
        ("--ioengine=libaio", "--ioengine=libaio --rwmixread=101"),
        ("at = \"1s\"", "at = \"-1s\""),
        ("at = \"1s\"", "at = \"1 fortnight\""),
        ("cgroup = \"a\"", "cgroup = \"b\""),
        (
            "\"io.max\" = \"252:0 riops=1000\"",
            "\"io.max\" = \"252:0 wiops=abc\"",
        ),
    ];
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-dry-mutants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("base.toml");
    std::fs::write(&base, BASE).unwrap();
    let base_run = run(&["check", base.to_str().unwrap()]);
    assert!(base_run.status.success(), "{base_run:?}");
    let mut differ = Vec::new();
    for (i, (from, to)) in mutants.iter().enumerate() {
        assert!(BASE.contains(from), "{from}");
        let f = dir.join(format!("mutant-{i}.toml"));
        std::fs::write(&f, BASE.replacen(from, to, 1)).unwrap();
        let f = f.to_str().unwrap();
        let by_run = one_line_error(&["run", "--quiet", f]);
        let by_dry_run = one_line_error(&["validate", f, "--dry-run"]);
        if by_run != by_dry_run {
            differ.push(format!(
                "{to}:\n  run:       {by_run}\n  --dry-run: {by_dry_run}"
            ));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
