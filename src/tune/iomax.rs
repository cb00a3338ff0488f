//! `tune iomax`: the least restrictive `io.max` limit on another cgroup that keeps the
//! protected one isolated, and what it costs the others.
//!
//! Design
//! ------
//! The same shape as `tune qos` ([`super::protect`]), with blk-throttle's knob instead
//! of vrate: `--limit KEY=V1,V2,...` is one `sweep` axis ([`crate::sweep::keys`]) on a
//! cgroup outside the protected one — its whole `io.max` line or a token of it
//! (`cgroup.batch.io.max:wbps=...`). Per seed it runs the protected cgroup alone (its
//! target), the scenario as written (the reference), then each value. A value meets the
//! goal when, as means over seeds, the protected cgroup's isolation (resctl-bench's
//! `isol-05 >= 90%`, as `tune qos` measures it) holds and, with `--p99-ms X`, its clat
//! p99 is at most X. Values are ordered from the most to the least restrictive: by
//! number when each is a number or `max` (the kernel's "no limit"), else as given. The
//! answer is the least restrictive value that meets the goal, with the `io.max` line to
//! write, whether every more restrictive value meets it too (a goal met only here and
//! there deserves a closer look), and the cost: the other cgroups' MiB/s and every
//! job's, against the scenario as written.

use std::fmt::Write as _;

use super::protect::{ProtectOptions, Protection, Row, mean_sd, mean_sd_text};
use crate::notify::Notify;
use crate::report::outdir::OutDir;
use crate::report::plot::{Panel, Series, plot_panels};
use crate::report::summary::fmt_figure;
use crate::run::prepare;
use crate::scenario::Scenario;
use crate::sweep::keys::{Axis, Target};

/// Options of `tune iomax`.
pub struct IomaxOptions {
    pub common: ProtectOptions,
    /// `KEY=V1,V2,...` on another cgroup's io.max.
    pub limit: String,
    /// Also keep the protected cgroup's clat p99 at most this (ms).
    pub p99_ms: Option<f64>,
}

/// How restrictive value `v` is (higher: less): a number, `max` above every number.
fn looseness(v: &str) -> Option<f64> {
    if v == "max" {
        Some(f64::INFINITY)
    } else {
        v.parse::<u64>().ok().map(|n| n as f64)
    }
}

/// `tune iomax`: plan, run and report (see the module's design).
/// The report goes to `print` (the command line's stdout), a picture not drawn is a
/// warning to `notify`.
pub fn iomax_command(
    sc: &Scenario,
    o: &IomaxOptions,
    print: &mut dyn FnMut(&str),
    notify: &dyn Notify,
) -> Result<u8, String> {
    let pr = Protection::new(sc, &o.common)?;
    let axis = Axis::parse(&o.limit).map_err(|e| e.replacen("--set", "--limit", 1))?;
    let limited = match &axis.target {
        Target::Line {
            cgroup: Some(c),
            file: "io.max",
            ..
        } if !super::protect::in_subtree(c, &pr.protect) => c.clone(),
        _ => {
            return Err(format!(
                "--limit {}: takes the io.max line (or a token of it) of a cgroup other than `{}`: cgroup.NAME.io.max[:TOKEN]=V1,V2,... (NAME one of {})",
                axis.key,
                pr.protect,
                pr.others.join(", ")
            ));
        }
    };
    if let Some(x) = o.p99_ms
        && (x.is_nan() || x <= 0.0)
    {
        return Err(format!("--p99-ms {x}: a latency above 0 ms"));
    }
    // every value is refused now if the kernel would refuse it, naming it
    for v in &axis.values {
        let mut t = pr.base.clone();
        axis.apply(&mut t, v)?;
        let sc = Scenario {
            table: t,
            ..sc.clone()
        };
        prepare(&sc, None, None, None, false)
            .map_err(|e| format!("--limit {}={v}: {e}", axis.key))?;
    }
    // alone, as written, then each value
    let values = axis.values.len();
    let samples = pr.run(
        sc,
        2 + values,
        o.common.jobs,
        &o.common.progress,
        "tune iomax",
        |k, _| {
            let mut t = pr.base.clone();
            match k {
                0 => pr.alone(&mut t),
                1 => {}
                k => axis.apply(&mut t, &axis.values[k - 2])?,
            }
            Ok(t)
        },
    )?;
    let rows = pr.rows(&samples, 1);
    let mean =
        |rows: &[Row], get: fn(&Row) -> f64| mean_sd(&rows.iter().map(get).collect::<Vec<_>>()).0;
    let meets = |rows: &[Row]| {
        mean(rows, |r| r.isol) >= o.common.isol_thr
            && o.p99_ms.is_none_or(|x| mean(rows, |r| r.p99) <= x)
    };
    // most restrictive first
    let mut order: Vec<usize> = (0..values).collect();
    let keys: Option<Vec<f64>> = axis.values.iter().map(|v| looseness(v)).collect();
    if let Some(keys) = &keys {
        order.sort_by(|a, b| keys[*a].total_cmp(&keys[*b]));
    }
    let ok: Vec<bool> = order.iter().map(|&i| meets(&rows[2 + i])).collect();
    let best = ok.iter().rposition(|&b| b);
    // the report
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tune iomax: {}{}: protecting `{}` from {} with {}",
        sc.name(),
        o.common
            .variant
            .as_deref()
            .map(|v| format!(" (variant {v})"))
            .unwrap_or_default(),
        pr.protect,
        pr.others.join(", "),
        axis.key
    );
    let _ = writeln!(
        s,
        "goal: isol-{:02} >= {}% of `{}` alone (per-second completions / its alone IOPS){}; {} seed(s); values {}\n",
        o.common.isol_pct,
        o.common.isol_thr * 100.0,
        pr.protect,
        o.p99_ms
            .map(|x| format!(" and its clat p99 <= {x} ms"))
            .unwrap_or_default(),
        o.common.seeds,
        if keys.is_some() {
            "from the most to the least restrictive"
        } else {
            "in the order given (not all numbers)"
        }
    );
    let _ = writeln!(
        s,
        "{:>12} {:>14} {:>14} {:>11} {:>14} {:>14} {:>11} {:>5}",
        "LIMIT",
        "WORK MiB/s",
        "OTHERS MiB/s",
        "LOSS%",
        "PROT p99 ms",
        "PROT p99.9 ms",
        format!("ISOL-{:02}%", o.common.isol_pct),
        "GOAL"
    );
    let col =
        |rows: &[Row], f: fn(&Row) -> f64| mean_sd_text(&rows.iter().map(f).collect::<Vec<_>>());
    let mut line = |label: &str, rows: &[Row], reference: bool, goal: &str| {
        let row = format!(
            "{label:>12} {:>14} {:>14} {:>11} {:>14} {:>14} {:>11} {goal:>5}",
            col(rows, |r| r.work),
            col(rows, |r| r.others_work),
            if reference {
                "-".into()
            } else {
                col(rows, |r| r.loss * 100.0)
            },
            col(rows, |r| r.p99),
            col(rows, |r| r.p999),
            if label == "alone" {
                "-".into()
            } else {
                col(rows, |r| r.isol * 100.0)
            },
        );
        s.push_str(row.trim_end());
        s.push('\n');
    };
    line("alone", &rows[0], true, "");
    line(
        "as written",
        &rows[1],
        true,
        if meets(&rows[1]) { "ok" } else { "" },
    );
    for (&i, &good) in order.iter().zip(&ok) {
        line(
            &axis.values[i],
            &rows[2 + i],
            false,
            if good { "ok" } else { "" },
        );
    }
    let _ = writeln!(
        s,
        "(mean ±sd over seeds; alone: `{}` by itself; as written: the scenario unchanged; LOSS: work lost against it)\n",
        pr.protect
    );
    match best {
        None => {
            let _ = writeln!(
                s,
                "answer: none of these values meets the goal; try more restrictive ones"
            );
        }
        Some(b) => {
            let i = order[b];
            let v = &axis.values[i];
            let mut t = pr.base.clone();
            axis.apply(&mut t, v)?;
            let written = t
                .get("cgroup")
                .and_then(|c| c.get(&limited))
                .and_then(|c| c.get("io.max"));
            let lines: Vec<String> = match written {
                Some(toml::Value::Array(a)) => a
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect(),
                Some(x) => x.as_str().map(str::to_string).into_iter().collect(),
                None => Vec::new(),
            };
            let _ = writeln!(
                s,
                "answer: {}={v}: the least restrictive value meeting the goal{}",
                axis.key,
                if ok[..b].iter().all(|&x| x) {
                    "; every more restrictive one meets it too"
                } else {
                    "; NOT every more restrictive one does: look at the table"
                }
            );
            for l in lines {
                let _ = writeln!(s, "  echo \"{l}\" > /sys/fs/cgroup/{limited}/io.max");
            }
            let (w, ow) = (
                mean(&rows[2 + i], |r| r.work),
                mean(&rows[2 + i], |r| r.others_work),
            );
            let (w0, ow0) = (
                mean(&rows[1], |r| r.work),
                mean(&rows[1], |r| r.others_work),
            );
            let pct = |a: f64, b: f64| {
                if b > 0.0 {
                    format!(" ({:+.1}%)", (a / b - 1.0) * 100.0)
                } else {
                    String::new()
                }
            };
            let _ = writeln!(
                s,
                "  costs: the others {} MiB/s against {} as written{}; every job {} MiB/s against {}{}",
                fmt_figure(ow),
                fmt_figure(ow0),
                pct(ow, ow0),
                fmt_figure(w),
                fmt_figure(w0),
                pct(w, w0)
            );
        }
    }
    print(&s);
    if let Some(dir) = &o.common.output {
        let out = OutDir::top_owning(
            dir,
            &[
                "tune-iomax.txt",
                "tune-iomax.csv",
                "tune-iomax.png",
                "tune-iomax.svg",
            ],
        )?;
        out.write("tune-iomax.txt", &s)?;
        let mut csv = String::from(
            "limit,seed,work_mib_s,others_mib_s,loss_pct,prot_p99_ms,prot_p99.9_ms,isol_pct,isol_mean_pct\n",
        );
        for (k, rs) in rows.iter().enumerate() {
            let label = match k {
                0 => "alone",
                1 => "as written",
                k => &axis.values[k - 2],
            };
            for r in rs {
                let _ = writeln!(
                    csv,
                    "{},{},{},{},{},{},{},{},{}",
                    if label.contains(',') {
                        format!("\"{label}\"")
                    } else {
                        label.to_string()
                    },
                    r.seed,
                    r.work,
                    r.others_work,
                    r.loss * 100.0,
                    r.p99,
                    r.p999,
                    r.isol * 100.0,
                    r.isol_mean * 100.0
                );
            }
        }
        out.write("tune-iomax.csv", &csv)?;
        // each figure against the values' rank (most restrictive first)
        let panel = |label: &str, get: fn(&Row) -> f64, log_y: bool| Panel {
            y_label: label.into(),
            log_y,
            series: vec![Series {
                name: "mean over seeds".into(),
                points: order
                    .iter()
                    .enumerate()
                    .map(|(x, &i)| (x as f64, mean(&rows[2 + i], get)))
                    .collect(),
            }],
        };
        let names: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(x, &i)| format!("{x}={}", axis.values[i]))
            .collect();
        if let Err(e) = plot_panels(
            &out.path().join("tune-iomax"),
            &format!("tune iomax: {} (protect {})", sc.name(), pr.protect),
            &format!("{} ({})", axis.key, names.join(", ")),
            &[
                panel("work MiB/s", |r| r.work, false),
                panel("others MiB/s", |r| r.others_work, false),
                panel(&format!("{} clat p99 ms", pr.protect), |r| r.p99, true),
                panel(
                    &format!("isol-{:02} %", o.common.isol_pct),
                    |r| r.isol * 100.0,
                    false,
                ),
            ],
        ) {
            notify.warning(&format!("plot not drawn: {e}"));
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_order_by_how_much_they_let_through() {
        assert_eq!(looseness("max"), Some(f64::INFINITY));
        assert_eq!(looseness("1048576"), Some(1048576.0));
        assert_eq!(looseness("8:0 wbps=1"), None);
        assert!(looseness("10") < looseness("max"));
    }
}
