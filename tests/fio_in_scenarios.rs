//! fio text inside scenario files, as users write it: errors and warnings at the
//! scenario's own lines, no environment read (and `blkcg-sim fio` reading it as fio
//! does), files it names never quoted, fio's getopt and `size=0`.

use std::path::Path;
use std::process::Command;

mod common;
use common::{bin, one_line_error};

/// A fresh folder for one test, removed when it ends.
fn dir(test: &str) -> common::Scratch {
    common::scratch(&format!("fio-{test}"))
}

fn write(d: &Path, name: &str, text: &str) -> String {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// The one-line error of a command that must fail with status 2.
fn fails(args: &[&str]) -> String {
    let e = one_line_error(args);
    e.trim_end().trim_start_matches("blkcg-sim: ").to_string()
}

/// The standard output of a command that must succeed.
fn succeeds(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{e}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const DEVICE: &str = "[device]\nmodel = \"nullb\"\n";

#[test]
fn fio_errors_and_warnings_name_the_scenario_line() {
    let d = dir("lines");
    // a multi-line job file: the error is at the scenario's line of `bs=4q`
    let sc = write(
        &d,
        "job.toml",
        &format!(
            "{DEVICE}\n[cgroup.a]\nfio = \"\"\"\n[global]\nioengine=libaio\n\n[a]\nbs=4q\n\"\"\"\n"
        ),
    );
    let e = fails(&["check", &sc]);
    assert!(e.starts_with(&format!("{sc}:10: bs: `4q`")), "{e}");
    // an array of command lines: the element's line
    let sc = write(
        &d,
        "array.toml",
        &format!(
            "{DEVICE}[cgroup.a]\nfio = [\n  \"fio --name=a --runtime=1\",\n  \"fio --name=b --bogus=1\",\n]\n"
        ),
    );
    let e = fails(&["check", &sc]);
    assert!(
        e.starts_with(&format!("{sc}:6: Bad option <bogus=1>")),
        "{e}"
    );
    // a command line over several lines (a literal string keeps the shell's `\`)
    let sc = write(
        &d,
        "cmdline.toml",
        &format!("{DEVICE}[cgroup.a]\nfio = '''fio --name=a \\\n  --runtime=1 \\\n  --bs=4q'''\n"),
    );
    let e = fails(&["check", &sc]);
    assert!(e.starts_with(&format!("{sc}:6: bs: `4q`")), "{e}");
    // a variant's own fio text: the variant's lines; warnings too
    let sc = write(
        &d,
        "variant.toml",
        &format!(
            "{DEVICE}[cgroup.a]\nfio = \"fio --name=a --runtime=1\"\n\n[[variant]]\nname = \"v\"\n\
             [variant.cgroup.a]\nfio = \"\"\"\n[a]\nruntime=1\nexitall\n\"\"\"\n"
        ),
    );
    let out = succeeds(bin().args(["check", &sc]));
    assert!(
        out.contains(&format!(
            "warning: {sc}:12: option `exitall` is an fio option"
        )),
        "{out}"
    );
}

#[test]
fn scenarios_read_no_environment() {
    let d = dir("env");
    let sc = write(
        &d,
        "env.toml",
        &format!("{DEVICE}[cgroup.a]\nfio = \"\"\"\n[a]\nruntime=1\nfilename=${{HOME}}\n\"\"\"\n"),
    );
    let e = fails(&["check", &sc]);
    assert!(
        e.starts_with(&format!(
            "{sc}:7: `${{HOME}}`: environment variables are not expanded in scenarios"
        )),
        "{e}"
    );
    let sc = write(
        &d,
        "shell.toml",
        &format!("{DEVICE}[cgroup.a]\nfio = \"fio --name=a --size=$SIZE --runtime=1\"\n"),
    );
    let e = fails(&["check", &sc]);
    assert!(
        e.contains("`$SIZE`") && e.contains("reads no environment"),
        "{e}"
    );
}

#[test]
fn fio_command_reads_the_environment_and_getopt_words() {
    let d = dir("fiocmd");
    let job = write(&d, "j.fio", "[a]\nbs=${BLKCG_SIM_TEST_BS}\nsize=0\n");
    let out = succeeds(
        bin()
            .env("BLKCG_SIM_TEST_BS", "8k")
            .args(["fio", "--device", "nullb", "--output-format", "json"])
            .args(["--runtime", "1", "--time_based", "--ioengine", "libaio"])
            .args(["-iodepth", "4", &job]),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["job options"]["bs"], "8k");
    assert_eq!(v["global options"]["iodepth"], "4");
    assert!(j["read"]["io_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        j["read"]["io_bytes"].as_u64().unwrap() % 8192,
        0,
        "8 KiB reads: {j}"
    );
}

#[test]
fn files_a_scenario_names_are_never_quoted() {
    let d = dir("include");
    write(&d, "common.inc", "; shared options\niodepth=4\nruntime=1\n");
    write(&d, "secret", "root:$y$j9T$SECRETHASH:19000:0:99999:7:::\n");
    // relative to the scenario file, wherever it is run from
    let sc = write(
        &d,
        "inc.toml",
        &format!(
            "{DEVICE}[cgroup.\"web/a\"]\nfio = \"\"\"\n[a]\nioengine=libaio\ninclude common.inc\n\"\"\"\n"
        ),
    );
    let out = succeeds(bin().current_dir("/").args(["check", &sc]));
    assert!(out.contains("iodepth=4"), "{out}");
    let sc = write(
        &d,
        "leak.toml",
        &format!("{DEVICE}[cgroup.a]\nfio = \"\"\"\n[a]\ninclude secret\n\"\"\"\n"),
    );
    let e = fails(&["check", &sc]);
    assert!(e.contains("/secret:1: not an fio option"), "{e}");
    assert!(!e.contains("SECRET") && !e.contains("root"), "{e}");
    let secret = d.join("secret");
    let sc = write(
        &d,
        "arg.toml",
        &format!("{DEVICE}[cgroup.a]\nfio = \"fio {}\"\n", secret.display()),
    );
    let e = fails(&["check", &sc]);
    assert!(!e.contains("SECRET") && !e.contains("root"), "{e}");
}
