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
//! job's, against the scenario as written; then the `blkcg-sim sweep` of the
//! scenario's file with that value ([`super::protect`]).
//!
//! What was in force: each value is the limited cgroup's io.max for the whole run. A
//! `[[schedule]]` entry that would rewrite the key (for a token, a line with that
//! token, as `tg_set_limit()` keeps the others; for the whole line, any line) is
//! refused before anything runs, naming its line and the part of the run the value
//! would have held. Whether the limit bound: blk-throttle queues a bio in the group
//! when `tg_may_dispatch()` gives it a wait (or bios wait ahead of it), and each run's
//! `throttle.csv` rows (every 100 ms sample, per limited group and direction) say how
//! many are queued. BOUND% is the share of samples at which the limited cgroup's bios
//! waited in a direction the key limits (`r*` tokens: reads; `w*`: writes; the whole
//! line: either), mean over seeds; `-` where the group had no limit (`max`). A sample
//! is a moment: a limit that holds bios only between samples shows 0. A value that
//! never bound changed nothing, which the answer says when it picks one; when no value
//! meets the goal, the advice follows the column: if none bound, they were too loose
//! (or limit a direction the cgroup does not use); if the most restrictive bound and
//! still failed, more restrictive ones are next.

use std::fmt::Write as _;

use super::protect::{ProtectOptions, Protection, Row, echo_line, mean_sd, mean_sd_text};
use crate::notify::Notify;
use crate::report::charts::Exhibits;
use crate::report::html::write_command_page;
use crate::report::outdir::OutDir;
use crate::report::plot::{Panel, Series, plot_panels};
use crate::report::summary::fmt_figure;
use crate::run::prepare;
use crate::scenario::Scenario;
use crate::sim::Dir;
use crate::sweep::keys::{Axis, Target};
use crate::throttle::ThrotlRow;

/// Options of `tune iomax`.
pub struct IomaxOptions {
    pub common: ProtectOptions,
    /// `KEY=V1,V2,...` on another cgroup's io.max.
    pub limit: String,
    /// Also keep the protected cgroup's clat p99 at most this (ms).
    pub p99_ms: Option<f64>,
}

/// Whether the limit bound over one run: blk-throttle's samples of the limited
/// cgroup's group (`throttle.csv`, every 100 ms while it has a limit), and those at
/// which bios waited in it in a direction the key limits (see the module's design).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bound {
    samples: u64,
    waiting: u64,
}

impl Bound {
    /// Over a run's rows, for cgroup `cg` in directions `dirs`.
    fn of(rows: &[ThrotlRow], cg: Option<u32>, dirs: &[Dir]) -> Bound {
        let mut b = Bound::default();
        // a sample's rows (one per direction) are together, at one time
        let mut at = None;
        let mut counted = false;
        for r in rows
            .iter()
            .filter(|r| Some(r.cg) == cg && dirs.contains(&r.dir))
        {
            if at != Some(r.t) {
                (at, counted) = (Some(r.t), false);
                b.samples += 1;
            }
            if r.queued > 0 && !counted {
                b.waiting += 1;
                counted = true;
            }
        }
        b
    }

    /// The share of samples with bios waiting, % (None: no sample, no limit).
    fn pct(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.waiting as f64 * 100.0 / self.samples as f64)
    }
}

/// The directions an io.max token limits (a whole line: both).
fn dirs_of(token: Option<&str>) -> &'static [Dir] {
    match token {
        Some("rbps" | "riops") => &[Dir::Read],
        Some("wbps" | "wiops") => &[Dir::Write],
        _ => &Dir::BOTH,
    }
}

/// A row's BOUND%: the mean share over its seeds' runs with samples, "-" without.
fn bound_text(bs: &[Bound]) -> String {
    let pcts: Vec<f64> = bs.iter().filter_map(Bound::pct).collect();
    if pcts.is_empty() {
        "-".into()
    } else {
        fmt_figure(mean_sd(&pcts).0)
    }
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
    let (limited, token) = match &axis.target {
        Target::Line {
            cgroup: Some(c),
            file: "io.max",
            token,
        } if !super::protect::in_subtree(c, &pr.protect) => (c.clone(), token.clone()),
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
    pr.refuse_rewrites(
        sc,
        &format!("--limit {}", axis.key),
        Some(&limited),
        "io.max",
        token.as_deref(),
    )?;
    let dirs = dirs_of(token.as_deref());
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
    let (samples, bound) = pr.run(
        sc,
        &o.common,
        2 + values,
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
        |_, run| {
            let cg = run.resolved.tree.find(&limited);
            Bound::of(run.record.rows::<ThrotlRow>(), cg, dirs)
        },
    )?;
    let rows = pr.rows(&samples, 1);
    let bound: Vec<&[Bound]> = bound.chunks(pr.seeds).collect();
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
        "{:>12} {:>14} {:>14} {:>11} {:>14} {:>14} {:>11} {:>7} {:>5}",
        "LIMIT",
        "WORK MiB/s",
        "OTHERS MiB/s",
        "LOSS%",
        "PROT p99 ms",
        "PROT p99.9 ms",
        format!("ISOL-{:02}%", o.common.isol_pct),
        "BOUND%",
        "GOAL"
    );
    let col =
        |rows: &[Row], f: fn(&Row) -> f64| mean_sd_text(&rows.iter().map(f).collect::<Vec<_>>());
    // run kind `k` (alone, as written, then each value) under `label`
    let mut line = |label: &str, k: usize, goal: &str| {
        let rows = &rows[k];
        let row = format!(
            "{label:>12} {:>14} {:>14} {:>11} {:>14} {:>14} {:>11} {:>7} {goal:>5}",
            col(rows, |r| r.work),
            col(rows, |r| r.others_work),
            if k < 2 {
                "-".into()
            } else {
                col(rows, |r| r.loss * 100.0)
            },
            col(rows, |r| r.p99),
            col(rows, |r| r.p999),
            if k == 0 {
                "-".into()
            } else {
                col(rows, |r| r.isol * 100.0)
            },
            if k == 0 {
                "-".into()
            } else {
                bound_text(bound[k])
            },
        );
        s.push_str(row.trim_end());
        s.push('\n');
    };
    line("alone", 0, "");
    line("as written", 1, if meets(&rows[1]) { "ok" } else { "" });
    for (&i, &good) in order.iter().zip(&ok) {
        line(&axis.values[i], 2 + i, if good { "ok" } else { "" });
    }
    let _ = writeln!(
        s,
        "(mean ±sd over seeds; alone: `{}` by itself; as written: the scenario unchanged; LOSS: work lost against it;",
        pr.protect
    );
    let _ = writeln!(
        s,
        " BOUND: blk-throttle's 100 ms samples of `{limited}` at which its {} bios waited on its limits; -: no limit)\n",
        match dirs {
            [Dir::Read] => "read",
            [Dir::Write] => "write",
            _ => "read or write",
        }
    );
    let held = |k: usize| bound[k].iter().any(|b| b.waiting > 0);
    match best {
        None => {
            let why = if !(2..2 + values).any(held) {
                format!(
                    "none of them held a bio of `{limited}` back (BOUND%), so none limited it: it does less than they allow in that direction; try lower values, or another token"
                )
            } else if keys.is_some() && held(2 + order[0]) {
                format!(
                    "the most restrictive, {}, held `{limited}`'s bios back and still did not meet it: try more restrictive ones",
                    axis.values[order[0]]
                )
            } else {
                "try more restrictive ones".to_string()
            };
            let _ = writeln!(s, "answer: none of these values meets the goal; {why}");
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
                let _ = writeln!(
                    s,
                    "  {}",
                    echo_line(&l, &format!("/sys/fs/cgroup/{limited}/io.max"))
                );
            }
            if let Some(note) = o.common.file.copy_note() {
                let _ = writeln!(s, "  ({note})");
            }
            let _ = writeln!(
                s,
                "  {}",
                o.common.file.sweep_command(
                    o.common.variant.as_deref(),
                    &[(&axis.key, v)],
                    o.common.seeds as usize
                )
            );
            if bound[2 + i].iter().any(|b| b.samples > 0) && !held(2 + i) {
                let _ = writeln!(
                    s,
                    "  (no bio of `{limited}` waited on it at any sample: it did not bind; a looser limit, or none, would do the same)"
                );
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
                "report.html",
            ],
        )?;
        out.write("tune-iomax.txt", &s)?;
        let mut csv = String::from(
            "limit,seed,work_mib_s,others_mib_s,loss_pct,prot_p99_ms,prot_p99.9_ms,isol_pct,isol_mean_pct,throttle_samples,samples_waiting\n",
        );
        for (k, rs) in rows.iter().enumerate() {
            let label = match k {
                0 => "alone",
                1 => "as written",
                k => &axis.values[k - 2],
            };
            for (r, b) in rs.iter().zip(bound[k]) {
                let _ = writeln!(
                    csv,
                    "{},{},{},{},{},{},{},{},{},{},{}",
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
                    r.isol_mean * 100.0,
                    b.samples,
                    b.waiting
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
        let title = format!("tune iomax: {} (protect {})", sc.name(), pr.protect);
        let x_label = format!("{} ({})", axis.key, names.join(", "));
        let panels = [
            panel("work MiB/s", |r| r.work, false),
            panel("others MiB/s", |r| r.others_work, false),
            panel(&format!("{} clat p99 ms", pr.protect), |r| r.p99, true),
            panel(
                &format!("isol-{:02} %", o.common.isol_pct),
                |r| r.isol * 100.0,
                false,
            ),
        ];
        let base = out.path().join("tune-iomax");
        if let Err(e) = plot_panels(&base, &title, &x_label, &panels) {
            notify.warning(&format!("plot not drawn: {e}"));
        }
        let mut exhibits = Exhibits::default();
        exhibits.panels(&title, &x_label, &panels, true);
        write_command_page(
            &out,
            &format!("tune iomax: {}", sc.name()),
            &s,
            &exhibits,
            &[(
                "tune-iomax",
                "each figure against the limits, most restrictive first",
            )],
            &["tune-iomax.txt", "tune-iomax.csv"],
        )?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_bound_at_the_samples_where_its_bios_waited() {
        let row = |t: u64, cg: u32, dir: Dir, queued: usize| ThrotlRow {
            t,
            cg,
            dir,
            queued,
            bytes_disp: 0,
            io_disp: 0,
            slice_start: 0,
            slice_end: 0,
            disptime: None,
        };
        let rows = [
            row(100, 1, Dir::Read, 0),
            row(100, 1, Dir::Write, 3),
            row(100, 2, Dir::Write, 5),
            row(200, 1, Dir::Read, 2),
            row(200, 1, Dir::Write, 1),
            row(300, 1, Dir::Read, 0),
            row(300, 1, Dir::Write, 0),
        ];
        let of = |token| Bound::of(&rows, Some(1), dirs_of(token));
        assert_eq!(
            of(Some("wiops")),
            Bound {
                samples: 3,
                waiting: 2
            }
        );
        assert_eq!(
            of(Some("rbps")),
            Bound {
                samples: 3,
                waiting: 1
            }
        );
        // the whole line: a sample counts once, whichever direction waited
        assert_eq!(
            of(None),
            Bound {
                samples: 3,
                waiting: 2
            }
        );
        assert_eq!(Bound::of(&rows, None, &Dir::BOTH), Bound::default());
        assert_eq!(bound_text(&[of(None), of(Some("rbps"))]), "50.0");
        assert_eq!(bound_text(&[Bound::default()]), "-");
    }

    #[test]
    fn values_order_by_how_much_they_let_through() {
        assert_eq!(looseness("max"), Some(f64::INFINITY));
        assert_eq!(looseness("1048576"), Some(1048576.0));
        assert_eq!(looseness("8:0 wbps=1"), None);
        assert!(looseness("10") < looseness("max"));
    }
}
