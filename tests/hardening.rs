//! Hostile and mistaken input as users write it: `check` refuses exactly what `run`
//! refuses, with one line naming the file, line and what is accepted; nothing from a
//! scenario writes outside `--output`; a re-used output folder never mixes runs.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::bin;

/// A fresh folder of this test's own.
fn tmp(tag: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-hard-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scenario of one nullb device and job `a`, plus `extra` text.
fn scenario(extra: &str) -> String {
    format!(
        "name = \"t\"\n[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = \"fio --name=a --rw=randread --runtime=1 --time_based\"\n{extra}"
    )
}

#[test]
fn check_refuses_exactly_what_run_refuses() {
    let dir = tmp("check-run");
    // (case, extra scenario text after line 5, what the error must name)
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "misspelt-switch",
            "[kernel]\n\"throttle.iops_wiat\" = \"slice-end\"\n",
            &[":7:", "throttle.iops_wait"],
        ),
        (
            "ancient-version",
            "[kernel]\nversion = \"2.6\"\n",
            &[":7:", "4.18"],
        ),
        ("typo-version", "[kernel]\nversion = \"61.2\"\n", &[":7:"]),
        (
            "float-version",
            "[kernel]\nversion = 6.10\n",
            &[":7:", "string", "\"6.10\""],
        ),
        (
            "late-write-refused",
            "[[schedule]]\nat = \"1s\"\ncgroup = \"a\"\n\"io.max\" = \"252:0 riops=0\"\n",
            &[":9:", "ERANGE"],
        ),
        (
            "schedule-unknown-cgroup",
            "[[schedule]]\nat = \"1s\"\ncgroup = \"nope\"\n\"io.max\" = \"252:0 riops=5\"\n",
            &[":8:", "ENOENT", "nope"],
        ),
        (
            "dotdot-cgroup",
            "[cgroup.\"a/../b\"]\nfio = \"fio --name=b\"\n",
            &[":6:", "`..`"],
        ),
        (
            "interface-file-cgroup",
            "[cgroup.\"cgroup.procs\"]\nfio = \"fio --name=b\"\n",
            &[":6:", "EEXIST"],
        ),
        (
            "fio-cgroup-option",
            "[cgroup.b]\nfio = \"fio --name=b --cgroup=x//y\"\n",
            &[":7", "empty component"],
        ),
        (
            "iocost-before-5.4",
            "[kernel]\nversion = \"4.19\"\n[root]\n\"io.cost.qos\" = \"252:0 enable=1\"\n",
            &[":9:", "ENOENT", "5.4"],
        ),
        (
            "host-unbounded",
            "[host]\nsubmit_ns = 9223372036854775807\n",
            &[":7:", "submit_ns"],
        ),
        (
            "host-cpus-beyond-one",
            "[host]\ncpus = 2\n",
            &[":7:", "host.cpus", "0 (every woken task runs at once) or 1"],
        ),
        (
            "host-start-phase-not-a-switch",
            "[host]\nfio_start_phase = 2\n",
            &[
                ":7:",
                "host.fio_start_phase",
                "0 (every fio starts on a whole millisecond) or 1",
            ],
        ),
        (
            "host-memory-not-a-size",
            "[host]\nmemory = \"lots\"\n",
            &[":7:", "host.memory", "1 MiB to 1 PiB", "\"16G\""],
        ),
        (
            "memory-max-too-small",
            "[cgroup.b]\n\"memory.max\" = \"4k\"\n",
            &[":7:", "memory.max", "\"max\" or a size of at least 1 MiB"],
        ),
        (
            "sysctl-out-of-range",
            "[sysctl]\nvm.dirty_background_ratio = 150\n",
            &[":7:", "vm.dirty_background_ratio", "EINVAL", "0 to 100"],
        ),
        (
            "sysctl-ratio-and-bytes",
            "[sysctl]\nvm.dirty_ratio = 10\nvm.dirty_bytes = 1048576\n",
            &[":8:", "one setting"],
        ),
        (
            "sysctl-unknown",
            "[sysctl]\nvm.drop_caches = 3\n",
            &[":7:", "vm.drop_caches", "accepted: vm.dirty_ratio"],
        ),
        (
            "host-tag-wakeup-not-a-time",
            "[host]\ntag_wakeup_ns = \"soon\"\n",
            &[":7:", "host.tag_wakeup_ns"],
        ),
        (
            "host-tag-wakeup-slip-share",
            "[host]\ntag_wakeup_slip_ppm = 1000001\n",
            &[":7:", "host.tag_wakeup_slip_ppm", "0 to 1000000"],
        ),
        (
            "variant-error-points-at-the-variant",
            "[[variant]]\nname = \"v\"\n[variant.kernel]\n\"iocost.no_completion\" = \"bogus\"\n",
            &[":9:", "variant `v`", "keep-if-lagging"],
        ),
        (
            "unsafe-variant-name",
            "[[variant]]\nname = \"../../escape\"\n",
            &[":7:", "letters, digits"],
        ),
    ];
    for (case, extra, needles) in cases {
        let f = write(&dir, &format!("{case}.toml"), &scenario(extra));
        for cmd in ["check", "run"] {
            let o = bin().args([cmd, &f]).output().unwrap();
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd} {case}: {e}");
            assert!(!e.contains("panicked"), "{e}");
            let line = e
                .lines()
                .find(|l| l.starts_with("blkcg-sim:"))
                .unwrap_or_else(|| panic!("{cmd} {case}: {e}"));
            assert!(
                needles.iter().all(|n| line.contains(n)),
                "{cmd} {case}: {line}"
            );
            assert!(line.contains(&f), "{cmd} {case}: {line}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn durations_without_a_unit_are_seconds_and_late_schedules_are_reported() {
    let dir = tmp("durations");
    // a bare number is seconds, as fio reads runtime=: the run ends at 0.5 s
    let f = write(
        &dir,
        "d.toml",
        &format!(
            "duration = 0.5\n{}[[schedule]]\nat = 30\ncgroup = \"a\"\n\"io.max\" = \"252:0 riops=5\"\n",
            scenario("")
        ),
    );
    let o = bin()
        .args(["run", &f, "--output-format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["elapsed"].as_u64(), Some(1), "{v}");
    assert_eq!(v["jobs"][0]["job_runtime"].as_u64(), Some(500));
    let e = stderr(&o);
    assert!(
        e.contains("d.toml:10: [[schedule]] at 30.000 s never happened"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_scenario_with_variants_says_it_runs_only_them() {
    let o = bin()
        .args([
            "run",
            "throttle-iops-tail-latency",
            "--output-format",
            "summary",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("runs only its variants"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn names_cannot_leave_the_output_folder() {
    let dir = tmp("escape");
    let out = dir.join("out");
    for kernel in ["../../x", "/abs", "6.12/../../x"] {
        let o = bin()
            .args(["run", "throttle-wbps-wiops", "--kernel", kernel, "--output"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{kernel}: {}", stderr(&o));
    }
    // nothing was written anywhere: not even the output folder itself
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_reused_output_folder_holds_only_this_runs_files() {
    let dir = tmp("reuse");
    let out = dir.join("out");
    let v = out.join("after");
    std::fs::create_dir_all(&v).unwrap();
    // a stale output of ours, a file of the user's, and a symlink planted where we write
    std::fs::write(v.join("timeline.csv"), "stale").unwrap();
    std::fs::write(v.join("notes.md"), "mine").unwrap();
    let precious = write(&dir, "precious.txt", "precious");
    std::os::unix::fs::symlink(&precious, v.join("fio.json")).unwrap();
    let o = bin()
        .args([
            "run",
            "throttle-iops-tail-latency",
            "--variant",
            "after",
            "--trace",
            "--output",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // a throttle-only run writes no timeline.csv: the stale one is gone
    assert!(!v.join("timeline.csv").exists());
    assert_eq!(std::fs::read_to_string(v.join("notes.md")).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
    assert!(!v.join("fio.json").is_symlink());
    assert!(
        std::fs::read_to_string(v.join("fio.json"))
            .unwrap()
            .contains("\"jobs\"")
    );
    // --trace with --output: blk-throttle's lines land in trace.txt
    let trace = std::fs::read_to_string(v.join("trace.txt")).unwrap();
    assert!(trace.contains("throtl"), "{trace}");
    std::fs::remove_dir_all(&dir).unwrap();
}
