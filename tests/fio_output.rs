//! Our fio output against real fio 3.33 (golden files made with Debian's fio 3.33 on
//! this project's machines; regenerate with the commands in each test's comment).

mod common;

use blkcg_sim::cli::run::RunOptions;
use blkcg_sim::run::run_variant;
use blkcg_sim::scenario::Scenario;
use blkcg_sim::sim::fio::stats::{LatHist, percentiles, val_to_idx};

/// (indent, key) of every `"key" :` line, in document order.
fn key_paths(json: &str) -> Vec<(usize, String)> {
    json.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let indent = l.len() - t.len();
            let rest = t.strip_prefix('"')?;
            let end = rest.find("\" : ")?;
            Some((indent, rest[..end].to_string()))
        })
        .collect()
}

fn sim_json(fio_cmd: &str, plus: bool) -> String {
    let text = format!("[device]\nmodel = \"nullb\"\n[cgroup.c]\nfio = \"{fio_cmd}\"\n");
    let sc = Scenario::parse(&text, "t.toml").unwrap();
    let run = run_variant(&sc, None, None, None, false).unwrap();
    blkcg_sim::report::fio::json::to_json(&run.fio, plus)
}

/// Golden: `fio --name=keys --ioengine=null --size=32m --rw=randrw --bs=4k
/// --output-format=json > tests/data/fio/null-randrw.json`
#[test]
fn json_keys_and_order_match_fio_3_33() {
    let real = std::fs::read_to_string("tests/data/fio/null-randrw.json").unwrap();
    let ours = sim_json(
        "fio --name=keys --ioengine=null --size=32m --rw=randrw --bs=4k",
        false,
    );
    let (r, o) = (key_paths(&real), key_paths(&ours));
    for (i, (a, b)) in r.iter().zip(o.iter()).enumerate() {
        assert_eq!(a, b, "key #{i} differs: fio {a:?}, ours {b:?}");
    }
    assert_eq!(
        r.len(),
        o.len(),
        "fio has {} keys, we have {}",
        r.len(),
        o.len()
    );
    // both parse as JSON
    serde_json::from_str::<serde_json::Value>(&ours).unwrap();
}

/// Golden: `fio --name=bins --filename=/tmp/f --size=16m --rw=randread --bs=4k
/// --ioengine=libaio --iodepth=4 --runtime=2 --time_based --output-format=json+`,
/// saved as tests/data/fio/libaio-jsonplus.json. Rebuilding the histogram from fio's
/// own bins must give fio's 17 percentiles exactly (x86 long-double thresholds).
#[test]
fn percentiles_match_fio_for_the_same_latencies() {
    let real: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/data/fio/libaio-jsonplus.json").unwrap(),
    )
    .unwrap();
    let clat = &real["jobs"][0]["read"]["clat_ns"];
    let mut h = LatHist::default();
    for (v, c) in clat["bins"].as_object().unwrap() {
        let v: u64 = v.parse().unwrap();
        h.add_count(val_to_idx(v), c.as_u64().unwrap());
    }
    assert_eq!(h.total(), clat["N"].as_u64().unwrap());
    let pct = clat["percentile"].as_object().unwrap();
    let plist: Vec<f64> = pct.keys().map(|k| k.parse().unwrap()).collect();
    let mut sorted = plist.clone();
    sorted.sort_by(f64::total_cmp);
    let ours = percentiles(&h, &sorted);
    for (p, v) in sorted.iter().zip(ours) {
        let want = pct[&format!("{p:.6}")].as_u64().unwrap();
        assert_eq!(v, want, "p{p}");
    }
}

/// The seed's `get_result` jq program runs unchanged on our JSON.
#[test]
fn seed_jq_summary_reads_our_json() {
    let json = sim_json(
        "fio --name=cgB --direct=1 --rw=randrw --rwmixread=50 --ioengine=libaio --bs=4k --iodepth=1 --size=4G --runtime=2 --time_based --group_reporting --unified_rw_reporting=mixed --rate_iops=100",
        false,
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let m = &v["jobs"][0]["mixed"];
    for k in ["iops", "bw_bytes"] {
        assert!(m[k].is_number(), "{k}");
    }
    for k in ["mean", "max"] {
        assert!(m["clat_ns"][k].is_number(), "clat_ns.{k}");
    }
    for p in ["90.000000", "99.000000", "99.900000", "99.990000"] {
        assert!(m["clat_ns"]["percentile"][p].is_number(), "{p}");
    }
    assert!(m["slat_ns"]["mean"].is_number());
    let iops = m["iops"].as_f64().unwrap();
    assert!((198.0..=202.0).contains(&iops), "iops={iops}");
    // and with real jq, as the README's example pipes it
    if common::require_tool("jq", "jq", "to read our JSON as the README's example does") {
        let mut child = std::process::Command::new("jq")
            .args(["-r", ".jobs[0].mixed | ( .iops | tonumber | round ) as $iops | ( .clat_ns.percentile[\"99.000000\"] / 1000000 ) as $p99 | \"\\($iops)|\\($p99)\""])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("jq starts");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(json.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(
            s.starts_with("200|") || s.starts_with("199|") || s.starts_with("201|"),
            "{s}"
        );
    }
}

#[test]
fn run_options_struct_is_public() {
    // the CLI's options are constructible from the library (used by embedders)
    let _ = RunOptions {
        variants: vec![],
        kernels: vec![],
        format: blkcg_sim::cli::run::OutputFormat::Json,
        output: None,
        seed: None,
        timeline: false,
        progress: blkcg_sim::progress::Reporter::Quiet,
        trace: false,
    };
}

/// The shape of fio's normal text output: each line's label (the text before its first
/// `=` or `:`), with numbers and magnitude-dependent units (nsec/usec/msec, KiB/MiB)
/// blanked, and repeats of one label (percentile rows, `lat (usec)` rows, whose count
/// depends on the values) folded into one.
fn text_shape(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let head = line.split(['=', ':']).next().unwrap_or("");
        let mut label: String = head
            .chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect();
        for unit in ["nsec", "usec", "msec", "KiB/s", "MiB/s", "GiB/s"] {
            label = label.replace(unit, "UNIT");
        }
        let label = label.split_whitespace().collect::<Vec<_>>().join(" ");
        if out.last() != Some(&label) {
            out.push(label);
        }
    }
    out
}

/// Golden: `fio --name=keys --ioengine=null --size=32m --rw=randrw --bs=4k
/// --output-format=normal > tests/data/fio/null-randrw.txt`: our normal output has the
/// same lines in the same order (values and units aside).
#[test]
fn normal_text_lines_match_fio_3_33() {
    let real = std::fs::read_to_string("tests/data/fio/null-randrw.txt").unwrap();
    let text = "[device]\nmodel = \"nullb\"\n[cgroup.c]\nfio = \"fio --name=keys --ioengine=null --size=32m --rw=randrw --bs=4k\"\n";
    let sc = Scenario::parse(text, "t.toml").unwrap();
    let run = run_variant(&sc, None, None, None, false).unwrap();
    let ours = blkcg_sim::report::fio::text::to_normal(&run.fio);
    let (r, o) = (text_shape(&real), text_shape(&ours));
    assert_eq!(r, o, "fio's lines (left) and ours (right) differ\n{ours}");
    // and the header names the engine and depth as fio does
    assert!(ours.starts_with(
        "keys: (g=0): rw=randrw, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=null, iodepth=1\n"
    ));
}

/// fio keeps the slat and lat histograms only for `slat_percentiles` and
/// `lat_percentiles`: with them each prints percentiles over every sample (json+ bins
/// adding up to N), and lat ≥ clat at every percentile since lat = slat + clat per I/O;
/// without them only clat has percentiles.
#[test]
fn slat_and_lat_percentiles_only_when_asked_for() {
    let cmd = "fio --name=p --ioengine=libaio --iodepth=4 --rw=randread --bs=4k --size=64m \
               --runtime=1 --time_based";
    let with: serde_json::Value = serde_json::from_str(&sim_json(
        &format!("{cmd} --slat_percentiles=1 --lat_percentiles=1"),
        true,
    ))
    .unwrap();
    let r = &with["jobs"][0]["read"];
    for k in ["slat_ns", "clat_ns", "lat_ns"] {
        let n = r[k]["N"].as_u64().unwrap();
        assert!(n > 1000, "{k}: N = {n}");
        let binned: u64 = r[k]["bins"]
            .as_object()
            .unwrap_or_else(|| panic!("{k} has no bins"))
            .values()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(binned, n, "{k}");
    }
    for (p, clat) in r["clat_ns"]["percentile"].as_object().unwrap() {
        let lat = r["lat_ns"]["percentile"][p].as_u64().unwrap();
        assert!(
            lat >= clat.as_u64().unwrap(),
            "p{p}: lat {lat} < clat {clat}"
        );
    }
    let without: serde_json::Value = serde_json::from_str(&sim_json(cmd, true)).unwrap();
    let r = &without["jobs"][0]["read"];
    assert!(r["clat_ns"]["percentile"].is_object());
    for k in ["slat_ns", "lat_ns"] {
        assert!(r[k]["N"].as_u64().unwrap() > 1000, "{k}");
        assert!(
            r[k].get("percentile").is_none() && r[k].get("bins").is_none(),
            "{k}"
        );
    }
}

/// Jobs of several cgroups' fio processes share group ids (each process numbers its
/// own stonewall stages from 0): the normal output prints each "Run status group" once,
/// in id order, with the group's bandwidth over every cgroup's jobs in it; and
/// group_reporting folds jobs only within their own process.
#[test]
fn run_status_groups_once_each_across_cgroups() {
    let job = |n: &str| {
        format!(
            "fio --name={n}1 --rw=read --bs=64k --rate=10m --runtime=200ms --time_based \
             --name={n}2 --stonewall --rw=read --bs=64k --rate=20m --runtime=200ms --time_based"
        )
    };
    let text = format!(
        "[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = \"{}\"\n[cgroup.b]\nfio = \"{}\"\n\
         [cgroup.c]\nfio = \"fio --group_reporting --name=g --numjobs=3 --rw=read --bs=64k \
         --rate=1m --runtime=200ms --time_based\"\n",
        job("a"),
        job("b")
    );
    let sc = Scenario::parse(&text, "t.toml").unwrap();
    let run = run_variant(&sc, None, None, None, false).unwrap();
    let ours = blkcg_sim::report::fio::text::to_normal(&run.fio);
    let groups: Vec<&str> = ours
        .lines()
        .filter(|l| l.starts_with("Run status group"))
        .collect();
    assert_eq!(
        groups,
        [
            "Run status group 0 (all jobs):",
            "Run status group 1 (all jobs):"
        ],
        "{ours}"
    );
    // c's three jobs fold into one report of 3 jobs; a's and b's stay apart
    let names: Vec<(&str, u32)> = run
        .fio
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.jobs))
        .collect();
    assert_eq!(
        names,
        [("a1", 1), ("a2", 1), ("b1", 1), ("b2", 1), ("g", 3)]
    );
    // group 0 = a1 + b1 + c's 3 x 1 MiB/s = 23 MiB/s; group 1 = a2 + b2 = 40 MiB/s
    // (a little over: rate-limited jobs start with a burst, and these run 200 ms)
    let bw = |g: &str| -> f64 {
        let line = ours
            .lines()
            .skip_while(|l| !l.starts_with(g))
            .nth(1)
            .unwrap();
        let mib = line
            .split("bw=")
            .nth(1)
            .unwrap()
            .split("MiB/s")
            .next()
            .unwrap();
        mib.parse().unwrap()
    };
    let (g0, g1) = (bw("Run status group 0"), bw("Run status group 1"));
    assert!((23.0..26.0).contains(&g0), "group 0 at {g0} MiB/s\n{ours}");
    assert!((40.0..43.0).contains(&g1), "group 1 at {g1} MiB/s\n{ours}");
}
