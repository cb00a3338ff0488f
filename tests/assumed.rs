//! Every run says what it assumed — the kernel version and HZ, the host's costs, the
//! device's latency model, and who set each — in summary.txt, report.html, on `run`'s
//! stderr (never in fio's stdout) and in `check`, which also warns where a scenario
//! leans on a default no distribution ships; `[kernel] version = "debian-12"` and `run
//! --kernel ubuntu-24.04` name a distribution's kernel, HZ and config included.

mod common;

use std::path::{Path, PathBuf};

use common::{bin, one_line_error, stdout_of};

/// A cloud volume, one reader, and `kernel` as the scenario's `[kernel]` table body
/// (none: no table).
fn scenario(name: &str, kernel: Option<&str>) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-assumed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}.toml"));
    let kernel = kernel
        .map(|k| format!("[kernel]\n{k}\n"))
        .unwrap_or_default();
    std::fs::write(
        &p,
        format!(
            "[device]\nmodel = \"cloud\"\npreset = \"aws-gp3\"\n{kernel}[cgroup.web]\n\
             fio = \"fio --name=web --rw=randread --direct=1 --runtime=300ms --time_based\"\n"
        ),
    )
    .unwrap();
    p
}

/// `run SCENARIO ARGS --output DIR`: (stdout, stderr, summary.txt, report.html).
fn run_into(sc: &Path, args: &[&str]) -> (String, String, String, String) {
    let dir = sc.with_extension("out");
    let _ = std::fs::remove_dir_all(&dir);
    let out = bin()
        .arg("run")
        .arg(sc)
        .args(args)
        .arg("--output")
        .arg(&dir)
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let stderr = text(out.stderr);
    assert!(out.status.success(), "{stderr}");
    let label = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    let summary = std::fs::read_to_string(label.join("summary.txt")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    (text(out.stdout), stderr, summary, html)
}

/// The lines of `text` that start with `assumed: `.
fn assumed(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("assumed: "))
        .collect()
}

#[test]
fn a_scenario_without_kernel_says_it_runs_the_newest_upstream_at_hz_1000() {
    let sc = scenario("no-kernel", None);
    let (stdout, stderr, summary, html) = run_into(&sc, &[]);
    let lines = assumed(&summary);
    assert_eq!(lines.len(), 3, "{summary}");
    assert_eq!(
        lines[0],
        "kernel 7.0, the newest upstream modelled (default), HZ=1000 (default)"
    );
    assert!(
        lines[1].starts_with("host profile minimal (default): submit 2 µs + 75 ns/page,"),
        "{summary}"
    );
    // the cloud volume's flat latency is said, and that tails are opt-in
    assert!(
        lines[2].starts_with("device cloud sdb, [preset] from the scenario: preset aws-gp3: 1 ms")
            && lines[2].contains("flat: latency_dist = \"fixed\" (tails are opt-in"),
        "{summary}"
    );
    // the block heads the summary; the table follows
    assert!(summary.starts_with("assumed: kernel 7.0"), "{summary}");
    assert!(summary.contains("CGROUP "), "{summary}");
    // fio's text on stdout stays fio's: the block goes to stderr
    assert!(!stdout.contains("assumed"), "{stdout}");
    assert_eq!(assumed(&stderr), lines, "{stderr}");
    // report.html shows it with the summary
    assert!(
        html.contains("assumed: kernel 7.0, the newest upstream modelled (default)"),
        "{html}"
    );
    assert!(html.contains("tails are opt-in"), "{html}");

    // check says the same, and warns of both defaults with the presets that replace them
    let check = stdout_of(&["check", sc.to_str().unwrap()]);
    assert_eq!(assumed(&check), lines, "{check}");
    assert!(
        check.contains(
            "warning: no [kernel] version: this runs the newest upstream modelled (7.0), \
             which no distribution ships"
        ) && check.contains(
            "debian-12 (6.1.192, HZ=250), debian-13 (6.12.117, HZ=250), ubuntu-24.04 (6.8, HZ=1000)"
        ),
        "{check}"
    );
    assert!(
        check.contains("warning: no [kernel] hz: HZ=1000, the simulator's default"),
        "{check}"
    );
}

#[test]
fn a_distribution_names_its_kernel_and_hz() {
    let sc = scenario("debian-12", Some("version = \"debian-12\""));
    let (_, _, summary, html) = run_into(&sc, &["--output-format", "summary"]);
    let first = "kernel 6.1.192 = debian-12 (scenario), HZ=250 (debian-12's CONFIG_HZ)";
    assert_eq!(assumed(&summary)[0], first, "{summary}");
    // (escaped, as every text on the page)
    assert!(html.contains(&first.replace('\'', "&#39;")), "{html}");
    // nothing left to a default: check warns of none
    let check = stdout_of(&["check", sc.to_str().unwrap()]);
    assert!(
        check.contains("kernel    version=6.1.192 hz=250"),
        "{check}"
    );
    assert!(!check.contains("warning: no [kernel]"), "{check}");

    // the scenario's own hz wins over its distribution's, and says so
    let sc = scenario("debian-12-hz", Some("version = \"debian-12\"\nhz = 1000"));
    let check = stdout_of(&["check", sc.to_str().unwrap()]);
    assert_eq!(
        assumed(&check)[0],
        "kernel 6.1.192 = debian-12 (scenario), HZ=1000 (scenario)",
        "{check}"
    );

    // on the command line a distribution decides HZ too; a plain version keeps the HZ
    // the scenario's distribution gave
    let sc = scenario("hz-250", Some("version = \"debian-13\""));
    let out = stdout_of(&[
        "run",
        sc.to_str().unwrap(),
        "--kernel",
        "ubuntu-24.04",
        "--kernel",
        "6.1",
        "--output-format",
        "summary",
    ]);
    let kernels: Vec<&str> = assumed(&out)
        .into_iter()
        .filter(|l| l.starts_with("kernel "))
        .collect();
    assert_eq!(
        kernels,
        [
            "kernel 6.8 = ubuntu-24.04 (--kernel), HZ=1000 (ubuntu-24.04's CONFIG_HZ)",
            "kernel 6.1 (--kernel), HZ=250 (the scenario's debian-13: its CONFIG_HZ)",
        ],
        "{out}"
    );
    assert!(out.contains("--- kernel-ubuntu-24.04 ---"), "{out}");
}

#[test]
fn a_distribution_has_no_files_of_a_policy_its_config_leaves_out() {
    // Debian builds neither blk-iolatency nor blk-ioprio: the write is ENOENT, as on
    // the machine, and the error says how to simulate upstream with it
    let sc = scenario(
        "debian-iolatency",
        Some("version = \"debian-13\"\n[cgroup.lat]\n\"io.latency\" = \"8:16 target=100\""),
    );
    let e = one_line_error(&["check", sc.to_str().unwrap()]);
    assert!(
        e.contains("debian-iolatency.toml:")
            && e.contains(
                "No such file or directory (ENOENT): debian-13's kernel is built \
                           without CONFIG_BLK_CGROUP_IOLATENCY"
            )
            && e.contains("kernel.version = \"6.12\""),
        "{e}"
    );
    // upstream 6.12 has it
    let out = stdout_of(&[
        "run",
        sc.to_str().unwrap(),
        "--kernel",
        "6.12",
        "--output-format",
        "summary",
    ]);
    assert_eq!(
        assumed(&out)[0],
        "kernel 6.12 (--kernel), HZ=250 (the scenario's debian-13: its CONFIG_HZ)",
        "{out}"
    );
    // a name that is neither a version nor a distribution lists both
    let e = one_line_error(&["run", sc.to_str().unwrap(), "--kernel", "debian-11"]);
    assert!(
        e.contains("--kernel debian-11:") && e.contains("debian-12 (6.1.192, HZ=250)"),
        "{e}"
    );
}

/// `run --help`, `check --help` and the README name every distribution the table has
/// (read from the error that lists them, which is made from the table).
#[test]
fn the_help_and_the_readme_list_every_distribution() {
    let e = one_line_error(&["run", "sanity-nullb-ssd", "--kernel", "no-such-kernel"]);
    let list = e
        .split("a distribution's kernel: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{e}"));
    // `debian-12 (6.1.192, HZ=250), debian-13 (...), ...`
    let names: Vec<&str> = list
        .split("), ")
        .map(|d| d.split(" (").next().unwrap().trim())
        .collect();
    assert!(names.contains(&"debian-12"), "{e}");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for args in [["run", "--help"], ["check", "--help"]] {
        let help = stdout_of(&args);
        for n in &names {
            assert!(help.contains(n), "{args:?} does not name {n}");
        }
    }
    for n in &names {
        assert!(
            readme.contains(&format!("| `{n}` |")),
            "README's table lacks {n}"
        );
    }
}
