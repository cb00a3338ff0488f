//! fio's JSON output (`--output-format=json` and `json+`), key for key in fio 3.33's
//! order (stat.c `show_thread_status_json()`, `add_ddir_status_json()`), printed as
//! fio's json.c prints: two-space indentation, `"key" : value`, integers `%lld`,
//! floats `%f`.

use std::fmt::Write as _;

use super::{GroupBw, JobReport, RunReport, gathered};
use crate::sim::fio::stats::{DdirStats, LAT_M_KEYS, LAT_N_KEYS, LatStat, percentiles};
use crate::workload::fio::UnifiedRw;

/// A JSON value in fio's printing style (order-preserving objects).
enum J {
    Int(i128),
    Float(f64),
    Str(String),
    Obj(Vec<(String, J)>),
}

/// `s` as a JSON string's contents, appended to `out` (json.c's escaping).
fn push_esc(out: &mut String, s: &str) {
    // most keys and values need nothing escaped
    if !s
        .chars()
        .any(|c| c == '"' || c == '\\' || (c as u32) < 0x20)
    {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// Two spaces per level, as json.c indents.
fn push_pad(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write(j: &J, level: usize, out: &mut String) {
    match j {
        J::Int(i) => {
            let _ = write!(out, "{i}");
        }
        J::Float(f) => {
            let _ = write!(out, "{f:.6}");
        }
        J::Str(s) => {
            out.push('"');
            push_esc(out, s);
            out.push('"');
        }
        J::Obj(kv) => {
            out.push_str("{\n");
            for (i, (k, v)) in kv.iter().enumerate() {
                push_member(out, level, k, v, i + 1 == kv.len());
            }
            push_pad(out, level);
            out.push('}');
        }
    }
}

/// One `"key" : value` line of an object at `level`, its comma unless it is the last.
fn push_member(out: &mut String, level: usize, k: &str, v: &J, last: bool) {
    push_pad(out, level + 1);
    out.push('"');
    push_esc(out, k);
    out.push_str("\" : ");
    write(v, level + 1, out);
    out.push_str(if last { "\n" } else { ",\n" });
}

fn obj(kv: Vec<(&str, J)>) -> J {
    J::Obj(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn lat_obj(s: &LatStat, pct: Option<&[f64]>, plus: bool) -> J {
    let mut kv = vec![
        ("min", J::Int(s.min.into())),
        ("max", J::Int(s.max.into())),
        ("mean", J::Float(if s.n > 0 { s.mean } else { 0.0 })),
        ("stddev", J::Float(s.stddev())),
        ("N", J::Int(s.n.into())),
    ];
    if let Some(plist) = pct
        && s.n > 0
    {
        let mut sorted = plist.to_vec();
        sorted.sort_by(f64::total_cmp);
        let vals = percentiles(&s.hist, &sorted);
        kv.push((
            "percentile",
            J::Obj(
                sorted
                    .iter()
                    .zip(vals)
                    .map(|(p, v)| (format!("{p:.6}"), J::Int(v.into())))
                    .collect(),
            ),
        ));
        if plus {
            kv.push((
                "bins",
                J::Obj(
                    s.hist
                        .bins()
                        .into_iter()
                        .map(|(v, c)| (v.to_string(), J::Int(c.into())))
                        .collect(),
                ),
            ));
        }
    }
    obj(kv)
}

fn ddir_obj(r: &JobReport, s: &DdirStats, runtime: u64, group_bw: u64, plus: bool) -> J {
    let bw_bytes = (s.io_bytes * 1000).checked_div(runtime).unwrap_or(0);
    let iops = if runtime > 0 {
        s.issued() as f64 * 1000.0 / runtime as f64
    } else {
        0.0
    };
    let pl = |on: bool| on.then_some(r.percentile_list.as_slice());
    // convert_agg_kbytes_percent()
    let mut agg = if group_bw > 1024 {
        s.bw.mean * 100.0 / (group_bw as f64 / 1024.0)
    } else {
        100.0
    };
    if agg > 100.0 {
        agg = 100.0;
    }
    if s.bw.n == 0 {
        agg = 0.0;
    }
    obj(vec![
        ("io_bytes", J::Int(s.io_bytes.into())),
        ("io_kbytes", J::Int((s.io_bytes >> 10).into())),
        ("bw_bytes", J::Int(bw_bytes.into())),
        ("bw", J::Int((bw_bytes / 1024).into())),
        ("iops", J::Float(iops)),
        ("runtime", J::Int(runtime.into())),
        ("total_ios", J::Int(s.issued().into())),
        ("short_ios", J::Int(0)),
        ("drop_ios", J::Int(0)),
        ("slat_ns", lat_obj(&s.slat, pl(r.slat_percentiles), plus)),
        ("clat_ns", lat_obj(&s.clat, pl(r.clat_percentiles), plus)),
        ("lat_ns", lat_obj(&s.lat, pl(r.lat_percentiles), plus)),
        ("bw_min", J::Int(s.bw.min.into())),
        ("bw_max", J::Int(s.bw.max.into())),
        ("bw_agg", J::Float(agg)),
        ("bw_mean", J::Float(s.bw.mean)),
        ("bw_dev", J::Float(s.bw.stddev())),
        ("bw_samples", J::Int(s.bw.n.into())),
        ("iops_min", J::Int(s.iops.min.into())),
        ("iops_max", J::Int(s.iops.max.into())),
        ("iops_mean", J::Float(s.iops.mean)),
        ("iops_stddev", J::Float(s.iops.stddev())),
        ("iops_samples", J::Int(s.iops.n.into())),
    ])
}

/// Percentages of `total` per bucket (`stat_calc_dist()` / `stat_calc_lat()`); the
/// depth maps pass their own sum as `total`.
fn dist(counts: &[u64], keys: &[&str], total: u64) -> J {
    J::Obj(
        keys.iter()
            .zip(counts)
            .map(|(k, c)| {
                let v = if total > 0 {
                    *c as f64 * 100.0 / total as f64
                } else {
                    0.0
                };
                (k.to_string(), J::Float(v))
            })
            .collect(),
    )
}

/// The group's aggregate bandwidth per direction in bytes/s (run-status group `agg`).
fn job_obj(r: &JobReport, group_bw: &GroupBw, plus: bool) -> J {
    let st = &r.stats;
    let mut kv: Vec<(&str, J)> = vec![
        ("jobname", J::Str(r.name.clone())),
        ("groupid", J::Int(r.groupid.into())),
        ("error", J::Int(st.err.shown().0.into())),
        ("eta", J::Int(2_147_483_647)),
        ("elapsed", J::Int(r.elapsed_s.into())),
        (
            "job options",
            J::Obj(
                r.options
                    .iter()
                    .map(|(k, v)| (k.clone(), J::Str(v.clone())))
                    .collect(),
            ),
        ),
    ];
    let names = ["read", "write", "trim"];
    if r.unified != UnifiedRw::Mixed {
        for (d, name) in names.iter().enumerate() {
            kv.push((
                name,
                ddir_obj(
                    r,
                    &st.dd[d],
                    r.ddir_runtime(d),
                    group_bw.get(r.groupid, d),
                    plus,
                ),
            ));
        }
    }
    if r.unified != UnifiedRw::None {
        let m = st.mixed();
        let runtime = (0..3).map(|d| r.ddir_runtime(d)).max().unwrap_or(0);
        let gbw = group_bw.get(r.groupid, 0) + group_bw.get(r.groupid, 1);
        kv.push(("mixed", ddir_obj(r, &m, runtime, gbw, plus)));
    }
    kv.push((
        "sync",
        obj(vec![
            ("total_ios", J::Int(st.sync.n.into())),
            (
                "lat_ns",
                lat_obj(
                    &st.sync,
                    (r.lat_percentiles || r.clat_percentiles)
                        .then_some(r.percentile_list.as_slice()),
                    plus,
                ),
            ),
        ]),
    ));
    let total_ios: u64 = st.dd.iter().map(|d| d.issued()).sum();
    kv.extend([
        ("job_runtime", J::Int(r.runtime_ms.into())),
        ("usr_cpu", J::Float(0.0)),
        ("sys_cpu", J::Float(0.0)),
        ("ctx", J::Int(st.ctx.into())),
        ("majf", J::Int(0)),
        ("minf", J::Int(st.minf.into())),
        (
            "iodepth_level",
            dist(
                &st.io_u_map,
                &["1", "2", "4", "8", "16", "32", ">=64"],
                st.io_u_map.iter().sum(),
            ),
        ),
        (
            "iodepth_submit",
            dist(
                &st.io_u_submit,
                &["0", "4", "8", "16", "32", "64", ">=64"],
                st.io_u_submit.iter().sum(),
            ),
        ),
        (
            "iodepth_complete",
            dist(
                &st.io_u_complete,
                &["0", "4", "8", "16", "32", "64", ">=64"],
                st.io_u_complete.iter().sum(),
            ),
        ),
        ("latency_ns", dist(&st.lat_n, &LAT_N_KEYS, total_ios)),
        ("latency_us", dist(&st.lat_u, &LAT_N_KEYS, total_ios)),
        ("latency_ms", dist(&st.lat_m, &LAT_M_KEYS, total_ios)),
    ]);
    if st.err.coe {
        kv.extend([
            ("total_err", J::Int(st.err.total_err.into())),
            ("first_error", J::Int(st.err.first_error.into())),
        ]);
    }
    kv.extend([
        ("latency_depth", J::Int(r.iodepth.into())),
        ("latency_target", J::Int(0)),
        ("latency_percentile", J::Float(100.0)),
        ("latency_window", J::Int(0)),
    ]);
    obj(kv)
}

/// The whole JSON document, as `fio --output-format=json[+]` prints it.
pub fn to_json(run: &RunReport, plus: bool) -> String {
    gathered(|mut emit| write_json(run, plus, &mut emit))
}

/// [`to_json`], piece by piece to `emit` (a job's object at a time): a run of many
/// jobs prints its document without holding it, or a tree of it, whole. The top-level
/// object is written member by member as [`write`] writes an object.
pub fn write_json<E>(
    run: &RunReport,
    plus: bool,
    emit: &mut impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let mut head: Vec<(&str, J)> = vec![
        ("fio version", J::Str(run.version.clone())),
        ("timestamp", J::Int(run.timestamp.into())),
        ("timestamp_ms", J::Int(run.timestamp_ms.into())),
        ("time", J::Str(run.time.clone())),
    ];
    if !run.global_options.is_empty() {
        head.push((
            "global options",
            J::Obj(
                run.global_options
                    .iter()
                    .map(|(k, v)| (k.clone(), J::Str(v.clone())))
                    .collect(),
            ),
        ));
    }
    let mut tail: Vec<(&str, J)> = Vec::new();
    if plus && !run.device.is_empty() {
        let mut dev: Vec<(String, J)> = run
            .device
            .iter()
            .map(|(k, v)| (k.to_string(), J::Int((*v).into())))
            .collect();
        if let Some(wa) = crate::report::summary::write_amplification(&run.device) {
            dev.push(("write_amplification".into(), J::Float(wa)));
        }
        tail.push(("device", J::Obj(dev)));
    }
    let member = |k: &str, v: &J, last: bool| {
        let mut s = String::new();
        push_member(&mut s, 0, k, v, last);
        s
    };
    emit("{\n")?;
    for (k, v) in &head {
        emit(&member(k, v, false))?;
    }
    // "jobs" : [ ... ], one element at a time
    emit("  \"jobs\" : [\n")?;
    let group_bw = GroupBw::of(&run.jobs);
    for (i, j) in run.jobs.iter().enumerate() {
        let mut s = "    ".to_string();
        write(&job_obj(j, &group_bw, plus), 2, &mut s);
        s.push_str(if i + 1 < run.jobs.len() { ",\n" } else { "\n" });
        emit(&s)?;
    }
    emit(if tail.is_empty() { "  ]\n" } else { "  ],\n" })?;
    for (i, (k, v)) in tail.iter().enumerate() {
        emit(&member(k, v, i + 1 == tail.len()))?;
    }
    emit("}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_as_json_c_does() {
        let mut out = String::new();
        push_esc(&mut out, "plain/name-1");
        assert_eq!(out, "plain/name-1");
        out.clear();
        push_esc(&mut out, "a\"b\\c\nd\te\u{1}f");
        assert_eq!(out, "a\\\"b\\\\c\\nd\\te\\u0001f");
    }

    #[test]
    fn nested_objects_indent_two_spaces_a_level() {
        let j = J::Obj(vec![
            ("k".into(), J::Int(-3)),
            ("o".into(), J::Obj(vec![("f".into(), J::Float(0.5))])),
            ("s".into(), J::Str("x".into())),
        ]);
        let mut out = String::new();
        write(&j, 0, &mut out);
        assert_eq!(
            out,
            "{\n  \"k\" : -3,\n  \"o\" : {\n    \"f\" : 0.500000\n  },\n  \"s\" : \"x\"\n}"
        );
    }
}
