//! The registry is the one list: every controller it has — each blk-cgroup policy,
//! rq-qos entry and elevator — is reachable, with all its cgroup files, their tokens,
//! its `[kernel]` switches, its `iosched` files and its timeline tables, through
//! `check`, `sweep --set`, the library's `run` and `SweepPlan` (and, in
//! `python/tests/test_registry.py`, Python), without any of them listing controllers.

mod common;

use blkcg_sim::api::{self, Controller, RunRequest, Source};

/// The disk the scenarios write to.
const DEV: &str = "252:0";

/// A two-cgroup null_blk scenario under `c`: each of its files written with its example
/// line (a child's file in cgroup `a`, a root-only one in `[root]`), its elevator as
/// the scheduler; for a controller that acts on buffered writes (wbt), `b` writes
/// through the page cache of a small host, so its writeback starts at once.
fn scenario_of(c: &Controller) -> String {
    let line = |example: &str| example.replace("MAJ:MIN", DEV);
    let mut root = String::new();
    let mut a = String::new();
    for f in &c.files {
        let text = format!("\"{}\" = \"{}\"\n", f.name, line(f.example));
        if f.on_children {
            a.push_str(&text);
        } else {
            root.push_str(&text);
        }
    }
    let scheduler = if c.kind == "elevator" { c.name } else { "none" };
    let fio = |name: &str| {
        format!(
            "fio = \"fio --name={name} --rw=randrw --bs=4k --ioengine=libaio --direct=1 \
             --iodepth=8 --runtime=2 --time_based\"\n"
        )
    };
    let (host, b) = if c.acts_on == "buffered-writes" {
        (
            "[host]\nmemory = \"256M\"\n\n",
            "fio = \"fio --name=b --rw=write --bs=1M --ioengine=psync --size=64M \
             --runtime=2 --time_based\"\n"
                .to_string(),
        )
    } else {
        ("", fio("b"))
    };
    format!(
        "name = \"registry-{name}\"\nseed = 1\n\n[device]\nmodel = \"nullb\"\ndev = \"{DEV}\"\n\
         irqmode = 2\ncompletion_nsec = 200000\nscheduler = \"{scheduler}\"\n\n\
         [kernel]\nhz = 250\n\n{host}[root]\n{root}\n[cgroup.a]\n{a}{}\n[cgroup.b]\n{b}",
        fio("a"),
        name = c.name.replace(['-', ' '], "_"),
    )
}

/// The sweep key of file `f` of cgroup `a` (or the root's).
fn key_of(f: &api::ControllerFile) -> String {
    if f.on_children {
        format!("cgroup.a.{}", f.name)
    } else {
        format!("root.{}", f.name)
    }
}

/// `key=value` tokens of an example line.
fn tokens(example: &str) -> Vec<(&str, &str)> {
    example
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect()
}

#[test]
fn the_registry_lists_every_controller_the_tool_has() {
    let names: Vec<&str> = api::controllers().iter().map(|c| c.name).collect();
    for n in [
        "blk-throttle",
        "blk-iocost",
        "blk-ioprio",
        "blk-iolatency",
        "wbt",
        "mq-deadline",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

#[test]
fn every_controller_runs_and_fills_its_tables_through_the_library() {
    for c in api::controllers() {
        let text = scenario_of(&c);
        let sc = api::load(Source::Text {
            text: &text,
            file: "registry.toml",
        })
        .unwrap_or_else(|e| panic!("{}: {e}\n{text}", c.name));
        let checked = api::check(&sc, None, &[]).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(checked.len(), 1);
        let r = api::run(&sc, &RunRequest::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        // every stream of the registry is a table, with rows for this controller's
        for t in &r.tables {
            assert!(t.csv().unwrap().ends_with('\n'), "{}: {}", c.name, t.name);
        }
        for name in &c.tables {
            let csv = r
                .table(name)
                .unwrap_or_else(|| panic!("{}: no table {name}", c.name))
                .csv()
                .unwrap();
            assert!(
                csv.lines().count() > 1,
                "{}: table {name} has no row",
                c.name
            );
        }
    }
}

#[test]
fn every_file_token_switch_and_iosched_file_is_a_sweep_key() {
    for c in api::controllers() {
        let text = scenario_of(&c);
        let sc = api::load(Source::Text {
            text: &text,
            file: "registry.toml",
        })
        .unwrap();
        // whole lines (and iosched files) in one plan, tokens in another: a sweep
        // refuses two axes that write the same line
        let mut whole: Vec<(String, Vec<String>)> = Vec::new();
        let mut by_token: Vec<(String, Vec<String>)> = Vec::new();
        for f in &c.files {
            // the whole line, and each of its tokens with the example's value
            let line = f.example.replace("MAJ:MIN", DEV);
            whole.push((key_of(f), vec![line]));
            for (tok, val) in tokens(f.example) {
                assert!(f.tokens.contains(&tok), "{}: example token {tok}", f.name);
                by_token.push((format!("{}:{tok}", key_of(f)), vec![val.to_string()]));
            }
        }
        for a in c.attributes {
            whole.push((format!("device.iosched.{a}"), vec!["1".to_string()]));
        }
        // every key planned, every value prepared as check prepares it, and the run made
        for grid in [&whole, &by_token] {
            let plan = api::SweepPlan::new(&sc, grid, 1)
                .unwrap_or_else(|e| panic!("{}: {e}\n{grid:?}", c.name));
            assert_eq!(plan.runs(), 1);
            let rows = plan.rows(0..1, 1, &Default::default()).unwrap();
            assert_eq!(rows.lines().count(), 2, "{}: a row per job", c.name);
        }
        // a switch under its prefix reaches the controller, which refuses one it lacks
        if let Some(p) = c.switches {
            let key = format!("kernel.{p}no_such_switch");
            let grid = vec![(key.clone(), vec!["x".to_string()])];
            let e = api::SweepPlan::new(&sc, &grid, 1)
                .err()
                .unwrap_or_else(|| panic!("{key} accepted"))
                .to_string();
            assert!(e.contains(&format!("{p}no_such_switch")), "{key}: {e}");
            let req = RunRequest {
                overrides: vec![(key.clone(), "x".into())],
                ..RunRequest::default()
            };
            let e = api::run(&sc, &req).unwrap_err().to_string();
            assert!(e.contains(&format!("{p}no_such_switch")), "{key}: {e}");
        }
    }
}

#[test]
fn check_and_sweep_on_the_command_line_take_every_file() {
    let dir = std::env::temp_dir().join(format!("blkcg-sim-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for c in api::controllers() {
        let path = dir.join(format!("{}.toml", c.name));
        std::fs::write(&path, scenario_of(&c)).unwrap();
        let p = path.to_str().unwrap();
        let shown = common::stdout_of(&["check", p]);
        assert!(!shown.is_empty(), "{}", c.name);
        for f in &c.files {
            let set = format!("{}={}", key_of(f), f.example.replace("MAJ:MIN", DEV));
            let csv = common::stdout_of(&["sweep", p, "--set", &set, "--format", "csv", "--quiet"]);
            assert_eq!(
                csv.lines().count(),
                3,
                "{set}: header and a row per job\n{csv}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 31: every file `run --output` writes for any controller — its tables, reports
/// and pictures (PNG and SVG, named by their stem), the trace, report.html — is named
/// in `run --help`.
#[test]
fn run_help_names_every_output_file_of_every_controller() {
    let help = common::stdout_of(&["run", "--help"]);
    let dir = std::env::temp_dir().join(format!("blkcg-sim-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for c in api::controllers() {
        let path = dir.join(format!("{}.toml", c.name));
        std::fs::write(&path, scenario_of(&c)).unwrap();
        let out = dir.join(format!("{}-out", c.name));
        let (p, o) = (path.to_str().unwrap(), out.to_str().unwrap());
        common::stdout_of(&["run", p, "--output", o, "--trace", "--quiet"]);
        let mut files = Vec::new();
        let mut todo = vec![out.clone()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    files.push(p.file_name().unwrap().to_string_lossy().into_owned());
                }
            }
        }
        for t in &c.tables {
            assert!(files.contains(&format!("{t}.csv")), "{}: {files:?}", c.name);
        }
        for f in files {
            let named = match f.rsplit_once('.') {
                Some((stem, "png" | "svg")) => stem.to_string(),
                _ => f.clone(),
            };
            assert!(
                help.contains(&named),
                "{}: `run --output` wrote {f}, which `run --help` does not name",
                c.name
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
