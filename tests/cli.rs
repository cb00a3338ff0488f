//! The command line as a user runs it: good runs, and one-line errors (file:line, what
//! is wrong, what is accepted) for bad input, never a panic.

use std::process::Command;

mod common;
use common::{bin, one_line_error, run};

fn scenario_file(name: &str, text: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// Runs the command, which must succeed.
fn ok(mut cmd: Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn fio_drop_in_prints_fio_json() {
    let mut cmd = bin();
    cmd.args([
        "fio",
        "--device",
        "nullb:irqmode=2,completion_nsec=100000",
        "--output-format",
        "json",
        "--name=a",
        "--rw=randread",
        "--bs=4k",
        "--runtime=1",
        "--time_based",
        "--ioengine=libaio",
    ]);
    let out = ok(cmd);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let iops = v["jobs"][0]["read"]["iops"].as_f64().unwrap();
    assert!((9000.0..10000.0).contains(&iops), "{iops}");
}

/// Issue 32 item 15: fio honours `--output-format` anywhere on its command line, the
/// last one winning; so does `blkcg-sim fio`, without calling it ignored.
#[test]
fn fio_output_format_among_the_fio_arguments_is_honoured() {
    let job = ["--name=a", "--rw=randread", "--size=1m"];
    let out = ok({
        let mut cmd = bin();
        cmd.args(["fio", "--device", "nullb"])
            .args(job)
            .args(["--output-format", "json"]);
        cmd
    });
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["jobname"], "a");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!e.contains("output-format"), "{e}");
    // the last one given wins, whichever side of the fio arguments it is on
    let out = ok({
        let mut cmd = bin();
        cmd.args(["fio", "--device", "nullb", "--output-format=json"])
            .args(job)
            .arg("-output-format=normal");
        cmd
    });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("a: (g=0): rw=randread"), "{text}");
}

#[test]
fn same_seed_byte_identical_output() {
    let a = bin()
        .args([
            "run",
            "iocost-linear-max",
            "--variant",
            "mix-linear",
            "--output-format",
            "json+",
        ])
        .output()
        .unwrap();
    let b = bin()
        .args([
            "run",
            "iocost-linear-max",
            "--variant",
            "mix-linear",
            "--output-format",
            "json+",
        ])
        .output()
        .unwrap();
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
}

/// `--trace` to stderr with several variants: each variant's trace whole, in plan
/// order, and the same bytes every time (made at once, their lines would interleave
/// differently from run to run).
#[test]
fn traces_of_several_variants_come_whole_and_in_order() {
    let args = [
        "-q",
        "run",
        "iocost-no-completion",
        "--trace",
        "--output-format",
        "summary",
    ];
    let (a, b) = (run(&args), run(&args));
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let stderr = String::from_utf8(a.stderr).unwrap();
    // (not assert_eq!: a failure would print 18,000 lines twice)
    assert!(
        stderr.as_bytes() == b.stderr,
        "the trace differs between two runs"
    );
    let labels: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix('[')?.split_once(']').map(|(v, _)| v))
        .collect();
    assert!(labels.len() > 100, "{stderr}");
    let mut blocks = labels.clone();
    blocks.dedup();
    assert_eq!(
        blocks,
        ["before", "after"],
        "one block per variant, in order"
    );
}

#[test]
fn bad_scenarios_get_one_line_errors_with_file_and_line() {
    // (file, scenario text, what the one-line error must name)
    let cases: [(&str, &str, &[&str]); 11] = [
        (
            "unknown-key.toml",
            "[device]\nmodel = \"nullb\"\nirqmod = 2\n[cgroup.a]\nfio = \"fio --name=a\"\n",
            &["unknown-key.toml:3:", "irqmode"],
        ),
        (
            "bad-model.toml",
            "[device]\nmodel = \"floppy\"\n[cgroup.a]\nfio = \"fio --name=a\"\n",
            &["bad-model.toml:2:", "nullb"],
        ),
        (
            "bad-unit.toml",
            "duration = \"3 fortnights\"\n[device]\nmodel = \"nullb\"\n",
            &["bad-unit.toml:1:"],
        ),
        (
            "bad-fio.toml",
            "[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = \"fio --name=a --bs=4q\"\n",
            &["bad-fio.toml:4", "bs"],
        ),
        (
            "bad-iomax.toml",
            "[device]\nmodel = \"nullb\"\n[cgroup.a]\n\"io.max\" = \"252:0 riops=0\"\nfio = \"fio --name=a\"\n",
            &["bad-iomax.toml:4:", "ERANGE"],
        ),
        (
            "iomax-one.toml",
            "[device]\nmodel = \"nullb\"\n[kernel]\nversion = \"6.12\"\n[cgroup.a]\n\"io.max\" = \"252:0 riops=1\"\nfio = \"fio --name=a\"\n",
            &["iomax-one.toml:6:", "EINVAL", "riops=1", "5b7048b89745"],
        ),
        (
            "nullb-mbps-hang.toml",
            "[device]\nmodel = \"nullb\"\nmbps = 1\n[cgroup.a]\nfio = \"fio --name=a --rw=write --bs=1m --size=1m\"\n",
            &[
                "nullb-mbps-hang.toml:3:",
                "device.mbps",
                "130048",
                "mbps >= 7",
                "job `a`",
            ],
        ),
        (
            "bad-fio-array.toml",
            "[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = [\"fio --name=a\", 3]\n",
            &["bad-fio-array.toml:4:", "array"],
        ),
        (
            "bad-state.toml",
            "[device]\nmodel = \"nullb\"\n[state]\n\"iocost.vrate\" = \"fast\"\n",
            &["bad-state.toml:4:", "cost.vrate", "percent"],
        ),
        (
            "unknown-state.toml",
            "[device]\nmodel = \"nullb\"\n[state]\nbusy_level = 3\n",
            &["unknown-state.toml:4:", "iocost.vrate"],
        ),
        (
            "bad-dev.toml",
            "[device]\nmodel = \"nullb\"\n[cgroup.a]\n\"io.max\" = \"8:0 riops=10\"\nfio = \"fio --name=a\"\n",
            &["ENODEV"],
        ),
    ];
    for (file, text, needles) in cases {
        let e = one_line_error(&["run", &scenario_file(file, text)]);
        assert!(needles.iter().all(|n| e.contains(n)), "{file}: {e}");
    }

    let e = one_line_error(&["run", "no-such-scenario"]);
    assert!(e.contains("built in:"), "{e}");
}

#[test]
fn check_prints_the_resolved_configuration() {
    let out = bin()
        .args(["check", "throttle-iops-tail-latency"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("variant before:")
            && s.contains("throttle.iops_wait=v4.18")
            && s.contains("riops=100"),
        "{s}"
    );
}

#[test]
fn device_keys_without_effect_are_warnings_with_file_and_line() {
    let f = scenario_file(
        "nullb-no-timer.toml",
        "[device]\nmodel = \"nullb\"\ncompletion_nsec = 50000\n[cgroup.a]\nfio = \"fio --name=a --size=1m\"\n",
    );
    let needle = "nullb-no-timer.toml:3: `device.completion_nsec`: has no effect with irqmode=1";
    let run = bin()
        .args(["run", &f, "--output-format", "summary"])
        .output()
        .unwrap();
    assert!(run.status.success());
    let e = String::from_utf8_lossy(&run.stderr);
    assert!(e.starts_with("warning: ") && e.contains(needle), "{e}");
    let check = bin().args(["check", &f]).output().unwrap();
    assert!(check.status.success());
    let s = String::from_utf8_lossy(&check.stdout);
    assert!(s.contains(needle), "{s}");
    // check refuses what run refuses: a request that could never pass the mbps cap
    let f = scenario_file(
        "nullb-mbps-check.toml",
        "[device]\nmodel = \"nullb\"\nmbps = 1\n[cgroup.a]\nfio = \"fio --name=a --bs=64k --size=1m\"\n",
    );
    let e = one_line_error(&["check", &f]);
    assert!(
        e.contains("nullb-mbps-check.toml:3:") && e.contains("mbps >= 4"),
        "{e}"
    );
}

#[test]
fn output_dir_holds_timelines_and_pictures() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = bin();
    cmd.args([
        "run",
        "iocost-no-completion",
        "--variant",
        "after",
        "--output",
    ])
    .arg(&dir);
    ok(cmd);
    let v = dir.join("after");
    for f in [
        "fio.json",
        "timeline.csv",
        "trace.txt",
        "iostat.csv",
        "jobs.csv",
    ] {
        assert!(v.join(f).is_file(), "{f} missing");
    }
    // jobs.csv: 100 ms bins for both cgroups; cgB gets its 200 IOPS in a middle bin
    let jobs = std::fs::read_to_string(v.join("jobs.csv")).unwrap();
    assert!(jobs.starts_with("t_s,job,ios,iops,lat_mean_ms\n"), "{jobs}");
    let cgb_5s: Vec<&str> = jobs
        .lines()
        .filter(|l| l.starts_with("5.000,cgB,"))
        .collect();
    assert_eq!(cgb_5s.len(), 1, "{jobs}");
    let iops: f64 = cgb_5s[0].split(',').nth(3).unwrap().parse().unwrap();
    assert!((180.0..=220.0).contains(&iops), "{}", cgb_5s[0]);
    assert!(jobs.lines().any(|l| l.contains(",cgA,")));
    // pictures (the font is built in, so every machine draws them): the iocost one
    // carries the jobs' panels too
    let svg = std::fs::read_to_string(v.join("iocost.svg")).unwrap();
    for label in ["busy_level", "IOPS", "mean latency (ms)"] {
        assert!(svg.contains(label), "{label} not in iocost.svg");
    }
    for picture in ["iocost.png", "jobs.svg", "jobs.png", "clat.svg", "clat.png"] {
        assert!(v.join(picture).is_file(), "{picture}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Job and cgroup names come from users: every CSV quotes them as RFC 4180 says.
#[test]
fn csv_outputs_quote_the_names_users_choose() {
    let sc = scenario_file(
        "csv.toml",
        "[device]\nmodel = \"nullb\"\n\
         [root]\n\"io.cost.qos\" = \"252:0 enable=1 ctrl=user rpct=90 rlat=3500 wpct=90 wlat=3500 min=80 max=10000\"\n\
         \"io.cost.model\" = \"252:0 ctrl=user model=linear rbps=200000000 rseqiops=20000 rrandiops=20000 wbps=200000000 wseqiops=20000 wrandiops=20000\"\n\
         [cgroup.\"x,y\"]\n\"io.max\" = \"252:0 riops=100\"\n\
         fio = \"\"\"\n[a,\"b\"]\nrw=randread\nioengine=libaio\nruntime=1\n\"\"\"\n",
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-csv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = bin();
    cmd.args(["run", &sc, "--output-format", "summary", "--output"])
        .arg(&dir);
    ok(cmd);
    let v = dir.join("default");
    let read = |f: &str| std::fs::read_to_string(v.join(f)).unwrap();
    let (jobs, throttle, timeline) = (read("jobs.csv"), read("throttle.csv"), read("timeline.csv"));
    assert!(
        jobs.lines()
            .nth(1)
            .unwrap()
            .starts_with(r#"0.000,"x,y/a,""b""","#),
        "{jobs}"
    );
    assert!(
        throttle.lines().nth(1).unwrap().contains(r#","x,y",read,"#),
        "{throttle}"
    );
    assert!(
        timeline.lines().any(|l| l.contains(r#","x,y","#)),
        "{timeline}"
    );
    // every row has as many fields as its header, read as RFC 4180 says
    for text in [&jobs, &throttle, &timeline] {
        let width = csv_fields(text.lines().next().unwrap());
        assert!(text.lines().all(|l| csv_fields(l) == width), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The number of fields in one RFC 4180 line.
fn csv_fields(line: &str) -> usize {
    let mut quoted = false;
    1 + line
        .chars()
        .filter(|&c| {
            quoted ^= c == '"';
            c == ',' && !quoted
        })
        .count()
}

#[test]
fn successive_fio_runs_start_when_every_run_before_has_ended() {
    // a's second run waits for b's longer first run, as a script's `wait` does
    let f = scenario_file(
        "rounds.toml",
        "[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = [\"fio --name=a --rw=randread --runtime=300ms --time_based\", \"fio --name=a --rw=randread --bs=8k --runtime=300ms --time_based\"]\n[cgroup.b]\nfio = \"fio --name=b --rw=randread --runtime=600ms --time_based\"\n",
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-rounds-{}", std::process::id()));
    let mut cmd = bin();
    cmd.args(["run", &f, "--output-format", "summary", "--output"])
        .arg(&dir);
    let out = ok(cmd);
    let table = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("a ")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(rows[1].starts_with("a #2 "), "{table}");
    // a's IO over time: the first run's 300 ms, nothing while b runs on nor during the
    // 300 ms between runs (`[host] fio_restart_ns`), then the second
    let csv = std::fs::read_to_string(dir.join("default/jobs.csv")).unwrap();
    let busy = |t: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("{t},a,")))
            .and_then(|l| l.split(',').nth(2))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
            > 1000
    };
    assert!(busy("0.000") && busy("0.200"), "{csv}");
    assert!(!busy("0.400") && !busy("0.500") && !busy("0.700"), "{csv}");
    assert!(busy("0.900") && busy("1.100"), "{csv}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    // 64 jobs print ~75 KB, more than a pipe holds
    let mut child = bin()
        .args([
            "fio",
            "--device",
            "nullb",
            "--name=a",
            "--rw=randread",
            "--numjobs=64",
            "--runtime=10ms",
            "--time_based",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // read one byte, then close the pipe as `| head -c1` does
    let mut one = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut one).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn two_kernels_end_with_an_ab_table() {
    let mut cmd = bin();
    cmd.args([
        "run",
        "throttle-iops-tail-latency",
        "--variant",
        "before",
        "--kernel",
        "4.18",
        "--kernel",
        "4.19",
        "--output-format",
        "summary",
    ]);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-ab-{}", std::process::id()));
    cmd.arg("--output").arg(&dir);
    let out = String::from_utf8(ok(cmd).stdout).unwrap();
    let ab = out.split("A/B: ").nth(1).expect("an A/B table");
    let file = std::fs::read_to_string(dir.join("ab.txt")).unwrap();
    assert_eq!(file.split("A/B: ").nth(1), Some(ab));
    std::fs::remove_dir_all(&dir).ok();
    // 4.19's slice-end wait halves the tail the 4.18 formula gives
    let p99 = ab.lines().find(|l| l.contains("clat P99 ms")).unwrap();
    let ratio: f64 = p99
        .rsplit_once('(')
        .and_then(|(_, r)| r.trim_end_matches(')').parse().ok())
        .unwrap();
    assert!((0.4..0.7).contains(&ratio), "{p99}");
}

/// Every controller, the elevator and every device model the tool has, named in the
/// top-level help (the Python package's docstring lists the same:
/// python/tests/test_run.py).
/// The device models `--help` names (the controllers come from the registry).
const EVERY_DEVICE: [&str; 6] = [
    "nullb",
    "null_blk",
    "ssd",
    "translation layer",
    "hdd",
    "cloud",
];

#[test]
fn help_names_every_controller_and_device_model() {
    let out = ok({
        let mut c = bin();
        c.arg("--help");
        c
    });
    let help = String::from_utf8_lossy(&out.stdout);
    // every controller of the registry, with each of its cgroup files
    for c in blkcg_sim::api::controllers() {
        assert!(
            help.contains(c.name),
            "--help does not name {}:\n{help}",
            c.name
        );
        for f in &c.files {
            assert!(
                help.contains(f.name),
                "--help does not name {}:\n{help}",
                f.name
            );
        }
    }
    for w in EVERY_DEVICE
        .iter()
        .chain(&blkcg_sim::device::config::MODELS)
    {
        assert!(help.contains(w), "--help does not name {w}:\n{help}");
    }
    // the one-line summary (`-h`) names every interface file's controller too
    let short = String::from_utf8_lossy(
        &ok({
            let mut c = bin();
            c.arg("-h");
            c
        })
        .stdout,
    )
    .into_owned();
    for w in [
        "io.max",
        "io.cost",
        "io.weight",
        "io.latency",
        "io.prio.class",
        "mq-deadline",
    ] {
        assert!(short.contains(w), "-h does not name {w}:\n{short}");
    }
}

/// Issue 31, since issue 34: `ioengine=mmap` runs as direct I/O, and `loops` on a
/// buffered reader does not drop the cache between loops as fio's `invalidate=1`
/// does; the run says so once per job, on stderr and in its summary (`summary.txt`,
/// the printed summary, report.html). Buffered reads and writes go through the page
/// cache and say nothing; neither do `direct=1` and the null engine. An option
/// accepted but not modelled says so too.
#[test]
fn what_is_accepted_but_not_modelled_is_said() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-said-{}", std::process::id()));
    let run = |n: usize, extra: &str| {
        let sc = scenario_file(
            &format!("said-{n}.toml"),
            &format!(
                "name = \"said\"\n[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = \"fio \
                 --name=a --rw=randrw --bs=4k --runtime=1 --time_based --numjobs=2 {extra}\"\n"
            ),
        );
        let out_dir = dir.join(n.to_string());
        let out = ok({
            let mut c = bin();
            c.args([
                "run",
                "--quiet",
                &sc,
                "--output-format",
                "summary",
                "--output",
            ]);
            c.arg(&out_dir);
            c
        });
        let read = |f: &str| std::fs::read_to_string(out_dir.join(f)).unwrap();
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            read("default/summary.txt"),
            read("report.html"),
        )
    };
    let mmap = "ioengine=mmap is not modelled";
    let loops = "loops=2 with buffered reads";
    let cases = [
        ("", None),
        ("--buffered=1", None),
        ("--direct=1 --ioengine=mmap", Some(mmap)),
        ("--loops=2", Some(loops)),
        ("--loops=2 --invalidate=0", None),
        ("--direct=1", None),
        ("--ioengine=null", None),
    ];
    for (n, (extra, what)) in cases.into_iter().enumerate() {
        let (stderr, printed, summary, html) = run(n, extra);
        let said = |text: &str| text.matches(mmap).count() + text.matches(loops).count();
        match what {
            Some(what) => {
                let line = format!("job `a`: {what}");
                // once per job, not once per numjobs clone
                assert_eq!(said(&stderr), 1, "{extra}: {stderr}");
                assert!(stderr.contains(&line), "{extra}: {stderr}");
                for text in [&printed, &summary, &html] {
                    assert!(text.contains("warning: "), "{extra}: {text}");
                    assert_eq!(said(text), 1, "{extra}: {text}");
                }
                assert!(summary.contains(&line), "{extra}: {summary}");
            }
            None => {
                for text in [&stderr, &printed, &summary] {
                    assert_eq!(said(text), 0, "{extra}: {text}");
                }
            }
        }
    }
    // options fio knows that are stored but not modelled: stderr and the summary
    let (stderr, _, summary, _) = run(
        9,
        "--direct=1 --ioengine=libaio --iodepth=8 --iodepth_low=2 --randseed=7 \
         --thinktime=1ms --thinktime_spin=100",
    );
    for w in [
        "job `a`: iodepth_low=2 is not modelled",
        "job `a`: randseed=7 is not modelled",
    ] {
        assert!(stderr.contains(w), "{w}: {stderr}");
        assert!(summary.contains(w), "{w}: {summary}");
    }
    // thinktime_spin is modelled (fio's usec_spin() before the sleep): no warning
    assert!(!stderr.contains("thinktime_spin"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `blkcg-sim [COMMAND...] --help` of the tool and of every command it lists, as
/// (command, help), commands found by reading each help's `Commands:` section.
fn every_help() -> Vec<(String, String)> {
    let help_of = |words: &[String]| {
        let out = ok({
            let mut c = bin();
            c.args(words).arg("--help");
            c
        });
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    let mut out = Vec::new();
    while let Some(words) = todo.pop() {
        let help = help_of(&words);
        let commands = help
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            // a description's second line is indented further
            .filter(|l| !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|&c| c != "help")
            .map(str::to_string);
        for c in commands {
            let mut w = words.clone();
            w.push(c);
            todo.push(w);
        }
        out.push((words.join(" "), help));
    }
    out
}

/// Issue 31: every environment variable the tool reads (`env::var("NAME")` or
/// `env::var_os("NAME")` in src/, outside test modules) is named in some `--help`.
#[test]
fn every_environment_variable_the_tool_reads_is_named_in_a_help() {
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    sources(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut read = std::collections::BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // what a file's test module reads is the tests', not the tool's
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for call in ["env::var(\"", "env::var_os(\""] {
            for (at, _) in code.match_indices(call) {
                let name = &code[at + call.len()..];
                read.insert(name[..name.find('"').unwrap()].to_string());
            }
        }
    }
    assert!(read.contains("BLKCG_SIM_CACHE"), "{read:?}");
    let helps = every_help();
    assert!(helps.len() > 10, "{:?}", helps.iter().map(|h| &h.0));
    for v in &read {
        assert!(
            helps
                .iter()
                .any(|(_, h)| h.contains(&format!("${v}")) || h.contains(&format!("{v} "))),
            "no --help names ${v}, which the tool reads"
        );
    }
}

/// Issue 31: the help of every command that takes a device names every device model
/// (`blkcg-sim fio --device`, `device plot --model`, `tune model --device`, and the
/// top-level help).
#[test]
fn every_device_model_is_named_where_a_device_is_taken() {
    let helps = every_help();
    for cmd in ["", "fio", "device plot", "tune model"] {
        let (_, help) = helps
            .iter()
            .find(|(c, _)| c == cmd)
            .unwrap_or_else(|| panic!("no `{cmd} --help`"));
        for m in blkcg_sim::device::config::MODELS {
            assert!(
                help.contains(m),
                "`blkcg-sim {cmd} --help` does not name the device model {m}:\n{help}"
            );
        }
    }
}
