//! Every figure of fio's normal text is fio's formatting of a figure of its JSON: the
//! rule is stated once here ([`expected_lines`], fio 3.33's stat.c
//! `show_ddir_status()`, `display_lat()` and `show_group_stats()`, every number through
//! our `num2str()`), proven on real fio's own output for a corpus of jobs (fio is in
//! CI), then held against ours for a corpus of simulated jobs whose figures span
//! bytes to GiB, nanoseconds to seconds. So our text cannot round a figure of our JSON
//! differently from fio (it printed `9.00MiB/s` where fio prints `10.00MiB/s`).

mod common;

use std::process::Command;

use blkcg_sim::report::fio::text::num2str;
use serde_json::Value;

/// `display_lat()`: nanoseconds shown in msec or usec once they are large enough (the
/// `nsec_to_msec()`/`nsec_to_usec()` thresholds), min and max in at most 6 digits.
fn lat_line(name: &str, s: &Value) -> Vec<String> {
    let (mut min, mut max) = (u(&s["min"]), u(&s["max"]));
    let (mut mean, mut dev) = (f(&s["mean"]), f(&s["stddev"]));
    let mut base = "(nsec)";
    for (div, unit, lo, hi) in [
        (1_000_000, "(msec)", 2_000_000, 99_999_999),
        (1000, "(usec)", 2000, 99_999),
    ] {
        if min > lo && max > hi && dev > div as f64 {
            base = unit;
            min /= div;
            max /= div;
            mean /= div as f64;
            dev /= div as f64;
            break;
        }
    }
    let head = format!(
        "    {name} {base}: min={}, max={}, avg=",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    );
    each(vec![
        one(head),
        two_decimals(mean),
        one(", stdev="),
        two_decimals(dev),
    ])
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A part of a line that is what it is.
fn one(s: impl Into<String>) -> Vec<String> {
    vec![s.into()]
}

/// `%5.02f` of a figure the JSON holds to 6 decimals: the value fio printed may have
/// been anywhere within half a millionth of it, so a JSON value on a tie (`…875000`)
/// may have been printed either way; every rendering it may have had.
fn two_decimals(v: f64) -> Vec<String> {
    let mut out: Vec<String> = [v - 5e-7, v, v + 5e-7]
        .iter()
        .map(|x| format!("{x:5.02}"))
        .collect();
    out.dedup();
    out
}

/// Every line the parts make, each part one of its alternatives.
fn each(parts: Vec<Vec<String>>) -> Vec<String> {
    parts.into_iter().fold(vec![String::new()], |lines, part| {
        lines
            .iter()
            .flat_map(|l| part.iter().map(move |p| format!("{l}{p}")))
            .collect()
    })
}

/// A group's figures in one direction: io bytes, min and max bw, min and max run.
type Group = (u64, u64, u64, u64, u64);

/// The lines fio prints for the figures of JSON document `doc` (4 significant figures,
/// binary units: fio's defaults), each as the renderings it may have had: per job and
/// direction the `IOPS=, BW=` line, the slat/clat/lat lines and the bw and iops sample
/// lines; per group the run status line.
fn expected_lines(doc: &Value) -> Vec<Vec<String>> {
    let mut lines = Vec::new();
    let mut groups: std::collections::BTreeMap<(u64, usize), Group> = Default::default();
    for job in doc["jobs"].as_array().expect("jobs") {
        for (i, ddir) in ["read", "write", "trim"].into_iter().enumerate() {
            let d = &job[ddir];
            let runt = u(&d["runtime"]);
            if runt == 0 {
                continue;
            }
            let io = u(&d["io_bytes"]);
            let bw = 1000 * io / runt;
            assert_eq!(bw, u(&d["bw_bytes"]), "bw_bytes is io_bytes*1000/runtime");
            let iops = 1000 * u(&d["total_ios"]) / runt;
            // zbd_write_status(): a write line counts zone resets (none here)
            let post = if ddir == "write" {
                "; 0 zone resets"
            } else {
                ""
            };
            lines.push(one(format!(
                "  {ddir}: IOPS={}, BW={} ({})({}/{runt}msec){post}",
                num2str(iops, 4, false, ""),
                num2str(bw, 4, true, "B/s"),
                num2str(bw, 4, false, "B/s"),
                num2str(io, 4, true, "B"),
            )));
            for (name, key) in [("slat", "slat_ns"), ("clat", "clat_ns"), (" lat", "lat_ns")] {
                if u(&d[key]["N"]) > 0 {
                    lines.push(lat_line(name, &d[key]));
                }
            }
            if u(&d["bw_samples"]) > 0 {
                // KiB/s, or MiB/s (integer division of min and max) past 1024 * 1024
                let (mut min, mut max) = (u(&d["bw_min"]), u(&d["bw_max"]));
                let (mut mean, mut dev) = (f(&d["bw_mean"]), f(&d["bw_dev"]));
                let mut unit = "KiB";
                if mean > 1024.0 * 1024.0 {
                    (min, max, mean, dev) = (min / 1024, max / 1024, mean / 1024.0, dev / 1024.0);
                    unit = "MiB";
                }
                let per = two_decimals(f(&d["bw_agg"]))
                    .iter()
                    .map(|p| p.trim_start().to_string())
                    .collect();
                lines.push(each(vec![
                    one(format!(
                        "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per="
                    )),
                    per,
                    one("%, avg="),
                    two_decimals(mean),
                    one(", stdev="),
                    two_decimals(dev),
                    one(format!(", samples={}", u(&d["bw_samples"]))),
                ]));
            }
            if u(&d["iops_samples"]) > 0 {
                lines.push(each(vec![
                    one(format!(
                        "   iops        : min={:5}, max={:5}, avg=",
                        u(&d["iops_min"]),
                        u(&d["iops_max"])
                    )),
                    two_decimals(f(&d["iops_mean"])),
                    one(", stdev="),
                    two_decimals(f(&d["iops_stddev"])),
                    one(format!(", samples={}", u(&d["iops_samples"]))),
                ]));
            }
            let g = groups
                .entry((u(&job["groupid"]), i))
                .or_insert((0, u64::MAX, 0, u64::MAX, 0));
            *g = (
                g.0 + io,
                g.1.min(bw),
                g.2.max(bw),
                g.3.min(runt),
                g.4.max(runt),
            );
        }
    }
    // show_group_stats(): the aggregate is the group's bytes over its longest run
    for ((_, i), (io, min_bw, max_bw, min_run, max_run)) in groups {
        let agg = io * 1000 / max_run;
        let p2 = |v| num2str(v, 4, true, "B/s");
        let si = |v| num2str(v, 4, false, "B/s");
        lines.push(one(format!(
            "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={min_run}-{max_run}msec",
            ["   READ", "  WRITE", "   TRIM"][i],
            p2(agg),
            si(agg),
            p2(min_bw),
            p2(max_bw),
            si(min_bw),
            si(max_bw),
            num2str(io, 4, true, "B"),
            num2str(io, 4, false, "B"),
        )));
    }
    lines
}

/// The expected lines missing from `text`, with the job they belong to.
fn missing(json: &str, text: &str) -> Vec<String> {
    let doc: Value = serde_json::from_str(json).expect("fio JSON");
    let have: std::collections::HashSet<&str> = text.lines().collect();
    expected_lines(&doc)
        .into_iter()
        .filter(|alts| !alts.iter().any(|l| have.contains(l.as_str())))
        .map(|alts| alts.join("` or `"))
        .collect()
}

/// Real fio: one command per job shape, `--output-format=json,normal` (the JSON
/// document first, then the text).
#[test]
fn the_rule_is_fios_own() {
    if !common::require_tool(
        "fio",
        "fio",
        "the formatting rule is checked on real fio's output",
    ) {
        return;
    }
    let dir = common::scratch("fio-text");
    let jobs: &[&[&str]] = &[
        &["--rw=randread", "--bs=4k", "--size=64m"],
        &["--rw=randrw", "--bs=512", "--size=8m", "--rate_iops=3000"],
        &["--rw=write", "--bs=1m", "--size=2g"],
        &["--rw=read", "--bs=64k", "--size=16m", "--rate=3m"],
        &["--rw=randwrite", "--bs=16k", "--size=4m", "--rate_iops=777"],
        &["--rw=readwrite", "--bs=128k", "--size=1g"],
        &["--rw=randread", "--bs=4k", "--size=1m", "--rate_iops=9"],
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for (n, job) in jobs.iter().enumerate() {
        // two jobs, each its own group, so both a job's and a group's lines are checked
        let out = Command::new("fio")
            .args(["--name=a", "--ioengine=null", "--runtime=1", "--time_based"])
            .args(*job)
            .args(["--name=b", "--new_group", "--ioengine=null", "--runtime=1"])
            .args(*job)
            .arg(format!("--directory={}", dir.display()))
            .arg("--output-format=json,normal")
            .output()
            .expect("run fio");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // the text's header lines, the JSON document, then the rest of the text
        let all = String::from_utf8(out.stdout).unwrap();
        let start = all.find("\n{\n").expect("the JSON document") + 1;
        let end = start + all[start..].find("\n}\n").expect("its end") + 3;
        let (json, text) = (
            &all[start..end],
            format!("{}{}", &all[..start], &all[end..]),
        );
        let doc: Value = serde_json::from_str(json).unwrap();
        checked += expected_lines(&doc).len();
        for m in missing(json, &text) {
            failures.push(format!(
                "job {n} {job:?}: fio printed no line `{m}`\n{text}"
            ));
        }
    }
    assert!(checked >= 7 * 2 * 4, "only {checked} lines checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Ours: the same rule over simulated jobs (`blkcg-sim fio`, run twice: the JSON and
/// the text of one deterministic run).
#[test]
fn our_text_is_fios_formatting_of_our_json() {
    let jobs: &[(&str, &str)] = &[
        (
            "nullb",
            "--rw=randread --bs=4k --iodepth=8 --ioengine=libaio --runtime=2",
        ),
        (
            "nullb:irqmode=2,completion_nsec=3000000",
            "--rw=randwrite --bs=512 --runtime=3",
        ),
        (
            "cloud:preset=azure-p20",
            "--rw=write --bs=1m --iodepth=32 --ioengine=libaio --runtime=3",
        ),
        ("cloud:bps=10484974", "--rw=read --bs=1m --runtime=4"),
        (
            "hdd",
            "--rw=randrw --bs=16k --iodepth=4 --ioengine=libaio --runtime=2",
        ),
        (
            "ssd",
            "--rw=readwrite --bs=128k --iodepth=16 --ioengine=libaio --runtime=2",
        ),
        ("nullb", "--rw=randread --bs=4k --rate_iops=9 --runtime=3"),
        (
            "nullb:irqmode=2,completion_nsec=250000000",
            "--rw=read --bs=2m --runtime=3",
        ),
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for (device, args) in jobs {
        let run = |format: &str| {
            let mut c = common::bin();
            c.args([
                "fio",
                "--quiet",
                "--device",
                device,
                "--output-format",
                format,
            ]);
            c.args(["--name=a", "--time_based"]);
            c.args(args.split_whitespace());
            c.args(["--name=b", "--new_group", "--time_based"]);
            c.args(args.split_whitespace());
            let out = c.output().unwrap();
            assert!(
                out.status.success(),
                "{device} {args}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let (json, text) = (run("json"), run("normal"));
        checked += expected_lines(&serde_json::from_str(&json).unwrap()).len();
        for m in missing(&json, &text) {
            failures.push(format!("{device} {args}: we printed no line `{m}`\n{text}"));
        }
    }
    assert!(checked >= 8 * 2 * 4, "only {checked} lines checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
