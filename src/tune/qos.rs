//! `tune qos`: resctl-bench's `iocost-qos` + `iocost-tune` over a scenario's own
//! workloads — which vrate protects one cgroup, and what it costs the rest.
//!
//! Design
//! ------
//! resctl-bench (facebookexperimental/resctl-demo, `resctl-bench/src/bench/
//! iocost_qos.rs`, `iocost_tune.rs`, `protection/mem_hog_tune.rs`; docs
//! `resctl-bench/doc/iocost-{qos,tune}.md`) runs its rd-hashd workload beside a memory
//! hog at fixed vrates and solves for QoS settings. Here the protected workload is the
//! `--protect` cgroup's fio jobs and the antagonists are the scenario's other cgroups.
//!
//! The axis is `iocost-qos`'s: `vrate-min=0` means the first point is one click
//! (`click = vrate-max / vrate-intvs`), else `click = (max - min) / (intvs - 1)`; points
//! from `vrate-max` down by one click to `vrate-min` (at least 1%), each written as
//! `min=max=v` (two decimals) over the base QoS; `iocost-tune` asks for `vrate-max=125,
//! vrate-intvs=25` (125, 120, ..., 5). Each point runs with every seed, beside two
//! references per seed: iocost off (`enable=0`: resctl's run `[00]`) and the protected
//! cgroup alone with iocost off (its target: resctl's `base_rps`). The base
//! `io.cost.model` and QoS latencies are the scenario's root lines, else `tune model
//! --qos` measures them.
//!
//! Figures per run (resctl's names in brackets):
//! - work: MiB/s of every job together over the run's simulated time (the sweep's
//!   `total`) [MOF: how much the device does];
//!   loss = 1 - work / work with iocost off [work-csv];
//! - the protected cgroup's clat p99 / p99.9 over all its IOs [lat-imp's latency];
//! - isolation [isol-05]: per 1 s window (bins of the run's job timelines) the
//!   protected jobs' completions / (their alone IOPS × window), capped at 1
//!   (`MemHog::calc_isol()`), then the 5th percentile, nearest rank (resctl's
//!   `DFL_ISOL_PCT = "05"`, `DFL_ISOL_THR = 0.9`; its doc's "1st percentile" is the old
//!   default);
//! - device read / write latency p99 over all requests, µs: each request's time on the
//!   device, from issue to the driver to completion (resctl's `rlat-99` / `wlat-99`,
//!   from `biolatpcts.py`'s default `on-device`; resctl averages per-second p99s, ours
//!   is the run's);
//! - aMOF: work at the vrates where isolation holds (resctl's `filter_by_isol`: points
//!   past where the fitted isolation line crosses the threshold are dropped and the
//!   lines end there); aMOF-delta: the protected p99 (resctl: MOF − aMOF, the
//!   footprint lost to protection; with one fixed workload the protected latency is
//!   what interference takes).
//!
//! Every figure is fitted against vrate over all seeds' points ([`super::fit`]) and the
//! solutions are resctl's `QoSTarget::solve()` on those fits, within `scale-min=1%`,
//! `scale-max=100%`, moved off a slope's tip by resctl's `infl_offset` (from the work
//! fit): `naive` = `vrate=75-100, rpct=99, wpct=99` (rlat/wlat the read/write p99 at
//! 100%); `bandwidth` = `aMOF=max-vrate` (the right end of the aMOF lines: the highest
//! vrate keeping isolation); `isolation` = `aMOF-delta=min` (the highest vrate at the
//! lowest protected p99); `isolated-bandwidth` = the highest vrate at the aMOF maximum,
//! clamped between isolation and bandwidth. Fixed-vrate solutions get `rpct=wpct=0`
//! and rlat/wlat = the fitted device p99 at that vrate ("iocost uses those values to
//! determine the period"); every solution's model is scaled by vrate/100 (rounded) and
//! min/max divided by it, so that QoS max ends up 100 ("iocost-tune always scales the
//! model parameters so that the QoS max always ends up 100%"). hwdb lines follow
//! `format_hwdb()`: `IOCOST_SOLUTIONS=` in the order isolation, isolated-bandwidth,
//! bandwidth, naive, then `IOCOST_MODEL_<SOL>=` and `IOCOST_QOS_<SOL>=` per solution.
//! The Pareto front is the vrates no other vrate beats on both isolation and work
//! (means over seeds): protection as resctl measures it, which sees the protected
//! cgroup starved or stalled where its clat percentiles only count what completed.
//! resctl's dithering and merging of noisy hours-long runs become seeds: each (vrate,
//! seed) run is exact, and the seeds' spread is shown as ± one standard deviation.
//!
//! What was in force: `min=max=v` does not set vrate. blk-iocost's `ioc_timer_fn()`
//! ends each period in `ioc_adjust_base_vrate()`, which returns early, vrate
//! (`vtime_base_rate`) as it was, while busy_level is 0 (the targets met, nobody
//! throttled with capacity to spare) or negative with IOs lagging; otherwise a vrate
//! outside [min, max] moves toward it by `VRATE_CLAMP_ADJ_PCT` (4%) a period
//! (`ioc_refresh_vrate()` then adds loss compensation, which the base leaves out). So
//! each run keeps blk-iocost's period rows (`timeline.csv`'s `vrate_base_pct` and
//! busy_level), and each row shows vrate over the run's periods, mean (min-max) — as
//! resctl-bench's iocost-qos studies each run's vrate — and AT%, the share of periods
//! at the vrate tried (equal to two decimals, as the QoS line and the row write it). A
//! vrate is in force when every seed's run spent a period at it; one that is not
//! (`never`, or `K/N seeds`) would name a row measured at other vrates, so it is left
//! out of the fits, the isolated range, the front and the solutions (the table, the CSV
//! and the pictures still show it, apart). There are no solutions when fewer than two
//! vrates were in force (nothing to fit); the report then says why, plainly: most often
//! no period of any vrate run missed the QoS targets (busy_level never above 0:
//! `ioc_timer_fn()` raises it only when rq_wait_pct or a direction's missed_ppm is past
//! its threshold), so the targets never asked iocost to move vrate off its start. Two
//! vrates or more in force are fitted and solved even if no target was missed: a
//! busy_level below 0 (targets met, cgroups short of budget) moves vrate toward min/max
//! too (`ioc_adjust_base_vrate()`). Each
//! solution is printed as the lines to write on a machine (`echo "..." >
//! /sys/fs/cgroup/io.cost.model`, `.../io.cost.qos`) and as the `blkcg-sim sweep` of the
//! scenario's file with those lines ([`super::protect`]); a `[[schedule]]` entry
//! writing the root's io.cost.model or io.cost.qos, which every run writes, is refused.

use std::fmt::Write as _;

use toml::{Table, Value};

use super::fit::{self, End, Fit, Pt, Shape};
use super::model::{CoefGen, ModelParams, measure};
use super::protect::{ProtectOptions, Protection, Row, echo_line, mean_sd, mean_sd_text};
use super::{Machine, py_round};
use crate::iocost::ctl::PeriodRow;
use crate::iocost::period::VRATE_CLAMP_ADJ_PCT;
use crate::notify::Notify;
use crate::report::charts::Exhibits;
use crate::report::html::write_command_page;
use crate::report::outdir::OutDir;
use crate::report::plot::{Marks, Panel, Series, plot_marks, plot_panels};
use crate::report::summary::fmt_figure;
use crate::scenario::Scenario;
use crate::sweep::keys::set_token;
use crate::workload::cmdline::shell_quote;

/// Options of `tune qos`.
pub struct QosOptions {
    pub common: ProtectOptions,
    pub vrate_min: f64,
    pub vrate_max: f64,
    pub vrate_intvs: u32,
    /// For a scenario without io.cost lines: how `tune model` measures them.
    pub coef: CoefGen,
}

/// resctl-bench's `scale-min` and `scale-max` (`iocost-tune`, in vrate %).
const SCALE_RANGE: (f64, f64) = (1.0, 100.0);
/// `iocost-qos`'s floor under `vrate-intvs` points (`VRATE_INTVS_MIN`).
const VRATE_INTVS_MIN: f64 = 1.0;

/// The vrates `iocost-qos` probes for `vrate-min`, `vrate-max`, `vrate-intvs`, highest
/// first, two decimals.
pub fn vrate_axis(min: f64, max: f64, intvs: u32) -> Result<Vec<f64>, String> {
    if !(min >= 0.0 && max > min && intvs > 0) || (min > 0.0 && intvs < 2) {
        return Err(format!(
            "vrate axis min={min} max={max} intvs={intvs}: need 0 <= min < max and intvs >= 1 (>= 2 when min > 0)"
        ));
    }
    let (click, min) = if min == 0.0 {
        (max / intvs as f64, max / intvs as f64)
    } else {
        ((max - min) / (intvs - 1) as f64, min)
    };
    let min = min.max(VRATE_INTVS_MIN);
    let mut out = Vec::new();
    let mut v = max;
    while v > min - 0.001 {
        out.push((v * 100.0).round() / 100.0);
        v -= click;
    }
    Ok(out)
}

/// What a run is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// The protected cgroup alone, iocost off.
    Alone,
    /// Everything, iocost off.
    Off,
    /// Everything, vrate fixed at this %.
    Vrate(f64),
}

/// `base` with root lines `model` and `qos`.
fn with_iocost(base: &Table, model: &str, qos: &str) -> Table {
    let mut t = base.clone();
    let root = t
        .entry("root")
        .or_insert_with(|| Value::Table(Table::new()));
    if let Some(r) = root.as_table_mut() {
        r.insert("io.cost.model".into(), Value::String(model.into()));
        r.insert("io.cost.qos".into(), Value::String(qos.into()));
    }
    t
}

/// A fixed-vrate or ranged QoS, before scaling (resctl `IoCostQoSParams`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Qos {
    rpct: f64,
    rlat: u64,
    wpct: f64,
    wlat: u64,
    min: f64,
    max: f64,
}

/// A named solution, scaled so that max = 100.
struct Solution {
    name: &'static str,
    target: &'static str,
    vrate: f64,
    model: ModelParams,
    qos: Qos,
}

/// What blk-iocost did with vrate over one run (see the module's design).
#[derive(Debug, Clone, Copy, Default)]
struct VrateSeen {
    /// `ioc_timer_fn()` periods: `timeline.csv`'s rows, one per period.
    periods: u64,
    /// vrate (`vtime_base_rate`, %) over them: mean, min, max (0 without periods).
    mean: f64,
    min: f64,
    max: f64,
    /// Periods at the vrate tried.
    at: u64,
    /// Periods that missed the QoS targets: busy_level raised above 0.
    missed: u64,
}

impl VrateSeen {
    /// Over a run's period rows, against the vrate tried (None: iocost off).
    fn of(rows: &[PeriodRow], tried: Option<f64>) -> VrateSeen {
        let mut s = VrateSeen {
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            ..VrateSeen::default()
        };
        for r in rows {
            let v = r.vrate_base_pct;
            s.periods += 1;
            s.mean += v;
            s.min = s.min.min(v);
            s.max = s.max.max(v);
            // both are two decimals: the QoS line's min=max and timeline.csv's
            s.at += u64::from(tried.is_some_and(|t| (v - t).abs() < 0.005));
            s.missed += u64::from(r.busy_after > 0);
        }
        if s.periods > 0 {
            s.mean /= s.periods as f64;
        } else {
            (s.min, s.max) = (0.0, 0.0);
        }
        s
    }
}

/// The mean over seeds of `get` at each vrate of `used` (ascending).
fn vrate_means(used: &[(f64, Vec<Row>)], get: impl Fn(&Row) -> f64) -> Vec<(f64, f64)> {
    used.iter()
        .map(|(v, rs)| (*v, mean_sd(&rs.iter().map(&get).collect::<Vec<_>>()).0))
        .collect()
}

/// `tune qos`'s analysis of all runs.
struct Analysis {
    vrates: Vec<f64>,
    /// Per run kind (alone, off, then each vrate), per seed.
    rows: Vec<(Kind, Vec<Row>)>,
    /// What vrate did, as `rows`.
    seen: Vec<Vec<VrateSeen>>,
    /// The vrates tried that were in force in every seed's run, ascending, with their
    /// rows: all that is fitted, on the front or solved.
    used: Vec<(f64, Vec<Row>)>,
    /// The fits and solutions, or why there are none, said plainly.
    solved: Result<Solved, String>,
}

/// The fits of the vrates in force, the front and the solutions.
struct Solved {
    work: Fit,
    /// Fitted on the falling side of isolation (from its peak up).
    isol: Fit,
    /// The lowest vrate where isolation holds (None: it never does).
    floor: Option<f64>,
    p99: Fit,
    amof: Option<Fit>,
    rlat: Option<Fit>,
    wlat: Option<Fit>,
    front: Vec<f64>,
    solutions: Vec<Solution>,
}

impl Analysis {
    /// The solutions (none when nothing was solved).
    fn solutions(&self) -> &[Solution] {
        self.solved.as_ref().map_or(&[], |s| &s.solutions)
    }
}

/// `tune qos`: plan, run and report (see the module's design).
/// The report goes to `print` (the command line's stdout), a picture not drawn is a
/// warning to `notify`.
pub fn qos_command(
    sc: &Scenario,
    o: &QosOptions,
    print: &mut dyn FnMut(&str),
    notify: &dyn Notify,
) -> Result<u8, String> {
    let pr = Protection::new(sc, &o.common)?;
    let vrates = vrate_axis(o.vrate_min, o.vrate_max, o.vrate_intvs)
        .map_err(|m| format!("--vrate-min/--vrate-max/--vrate-intvs: {m}"))?;
    // every run writes both root lines
    for file in ROOT_LINES {
        pr.refuse_rewrites(sc, &format!("root.{file}"), None, file, None)?;
    }
    let base = &pr.base;
    // the machine, its MAJ:MIN and the base model / QoS lines
    let machine = Machine::from_scenario(&Scenario {
        table: pr.base.clone(),
        ..sc.clone()
    })?;
    let root = base.get("root").and_then(Value::as_table);
    let line = |k: &str| {
        root.and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (model_line, qos_line, measured) = match (line("io.cost.model"), line("io.cost.qos")) {
        (Some(m), Some(q)) => (m, q, None),
        (m, q) => {
            let me = measure(&machine, &o.coef, true, o.common.jobs, &o.common.progress)?;
            let m = m.unwrap_or_else(|| {
                format!("{} ctrl=user model=linear {}", me.devno, me.model.params())
            });
            let q = q.unwrap_or_else(|| me.qos_line().unwrap_or_default());
            (m, q, Some(me))
        }
    };
    let model = ModelParams::from_line(&model_line)
        .map_err(|e| format!("{}: root io.cost.model: {e}", sc.file))?;
    let qos_with = |enable: &str, v: Option<f64>| {
        let mut q = set_token(&qos_line, "enable", enable);
        if let Some(v) = v {
            q = set_token(&set_token(&q, "ctrl", "user"), "min", &format!("{v:.2}"));
            q = set_token(&q, "max", &format!("{v:.2}"));
        }
        q
    };
    let kinds: Vec<Kind> = [Kind::Alone, Kind::Off]
        .into_iter()
        .chain(vrates.iter().rev().map(|&v| Kind::Vrate(v)))
        .collect();
    let (samples, seen) = pr.run(
        sc,
        &o.common,
        kinds.len(),
        "tune qos",
        |k, _| {
            Ok(match kinds[k] {
                Kind::Alone => {
                    let mut t = with_iocost(base, &model_line, &qos_with("0", None));
                    pr.alone(&mut t);
                    t
                }
                Kind::Off => with_iocost(base, &model_line, &qos_with("0", None)),
                Kind::Vrate(v) => with_iocost(base, &model_line, &qos_with("1", Some(v))),
            })
        },
        |k, run| {
            let tried = match kinds[k] {
                Kind::Vrate(v) => Some(v),
                _ => None,
            };
            VrateSeen::of(run.record.rows::<PeriodRow>(), tried)
        },
    )?;
    let rows: Vec<(Kind, Vec<Row>)> = kinds.into_iter().zip(pr.rows(&samples, 1)).collect();
    let seen: Vec<Vec<VrateSeen>> = seen.chunks(pr.seeds).map(<[_]>::to_vec).collect();
    let a = analyse(rows, seen, &vrates, model, o)?;
    let dev = model_line
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    let ctx = Context {
        scenario: sc.name(),
        protect: &pr.protect,
        others: &pr.others,
        model_line: &model_line,
        qos_line: &qos_line,
        measured: measured.is_some(),
        dev: &dev,
        o,
    };
    let report = report_text(&a, &ctx);
    print(&report);
    if let Some(dir) = &o.common.output {
        write_outputs(dir, &a, &ctx, &report, notify)?;
    }
    Ok(0)
}

/// The root lines `tune qos` writes for every run.
const ROOT_LINES: [&str; 2] = ["io.cost.model", "io.cost.qos"];

/// Everything the report names.
struct Context<'a> {
    scenario: String,
    protect: &'a str,
    others: &'a [String],
    model_line: &'a str,
    qos_line: &'a str,
    measured: bool,
    dev: &'a str,
    o: &'a QosOptions,
}

/// Which vrates were in force, and whether anything is solved (see the module's
/// design).
fn analyse(
    rows: Vec<(Kind, Vec<Row>)>,
    seen: Vec<Vec<VrateSeen>>,
    vrates: &[f64],
    model: ModelParams,
    o: &QosOptions,
) -> Result<Analysis, String> {
    let tried: Vec<(f64, &Vec<Row>, &Vec<VrateSeen>)> = rows
        .iter()
        .zip(&seen)
        .filter_map(|((k, rs), s)| match k {
            Kind::Vrate(v) => Some((*v, rs, s)),
            _ => None,
        })
        .collect();
    let mut used: Vec<(f64, Vec<Row>)> = tried
        .iter()
        .filter(|(_, _, s)| s.iter().all(|x| x.at > 0))
        .map(|(v, rs, _)| (*v, rs.to_vec()))
        .collect();
    used.sort_by(|a, b| a.0.total_cmp(&b.0));
    // solved when two vrates or more were in force; when fewer were, say why: most
    // often the targets were never missed, so vrate never left its start
    let targets_always_met = tried
        .iter()
        .all(|(_, _, s)| s.iter().all(|x| x.missed == 0));
    let why_not = if used.len() >= 2 {
        None
    } else if targets_always_met {
        Some(
            "the QoS targets were met in every period of every run (blk-iocost's busy_level never rose above 0: ioc_timer_fn() raises it only when a latency target or rq_wait is missed), so the targets never asked iocost to slow anything down and there is nothing to solve; to tune, tighten the base rlat/wlat, or raise --vrate-max or the others' load until they are missed".to_string(),
        )
    } else {
        Some(format!(
            "only {} of the {} vrates tried were in force in every seed's run: too few to fit; longer runs give vrate the time to reach them",
            used.len(),
            tried.len()
        ))
    };
    let solved = match why_not {
        Some(w) => Err(w),
        None => Ok(fit_and_solve(&used, model, o)?),
    };
    Ok(Analysis {
        vrates: vrates.to_vec(),
        rows,
        seen,
        used,
        solved,
    })
}

/// The fits over the vrates in force (`used`), the front and the solutions.
fn fit_and_solve(
    used: &[(f64, Vec<Row>)],
    model: ModelParams,
    o: &QosOptions,
) -> Result<Solved, String> {
    let series = |get: &dyn Fn(&Row) -> Option<f64>| -> Vec<Pt> {
        used.iter()
            .flat_map(|(v, rs)| {
                rs.iter()
                    .filter_map(move |r| get(r).map(|y| Pt { x: *v, y }))
            })
            .collect()
    };
    let need =
        |f: Option<Fit>, what: &str| f.ok_or_else(|| format!("internal error: no {what} points"));
    let work = need(fit::fit(&series(&|r| Some(r.work)), Shape::Inc), "work")?;
    let p99 = need(fit::fit(&series(&|r| Some(r.p99)), Shape::Inc), "p99")?;
    let rlat = fit::fit(&series(&|r| r.rlat), Shape::Inc);
    let wlat = fit::fit(&series(&|r| r.wlat), Shape::Inc);
    // Isolation rises from the low vrates that starve the protected cgroup itself (a
    // fixed vrate is every cgroup's budget) to a peak, then falls as the others' IO
    // reaches the device ahead of it; resctl's isolation only falls (its workload is
    // sized to what each vrate supports), so its fit and threshold crossing are taken
    // on the falling side, and the rising side gives the floor of the isolated range.
    let isol_means = vrate_means(used, |r| r.isol);
    let best = isol_means.iter().map(|m| m.1).fold(f64::MIN, f64::max);
    let peak_at = isol_means.iter().rposition(|m| m.1 == best).unwrap_or(0);
    let peak = isol_means.get(peak_at).map_or(0.0, |m| m.0);
    let floor = (best >= o.common.isol_thr).then(|| {
        let mut j = peak_at;
        while j > 0 && isol_means[j - 1].1 >= o.common.isol_thr {
            j -= 1;
        }
        if j == 0 {
            isol_means[0].0
        } else {
            let (a, b) = (isol_means[j - 1], isol_means[j]);
            a.0 + (b.0 - a.0) * (o.common.isol_thr - a.1) / (b.1 - a.1)
        }
    });
    let falling: Vec<Pt> = series(&|r| Some(r.isol))
        .into_iter()
        .filter(|p| p.x >= peak)
        .collect();
    let isol = need(fit::fit(&falling, Shape::Dec), "isolation")?;
    // resctl's filter_by_isol: aMOF only where isolation holds, its lines ending where
    // the isolation fit crosses the threshold
    let mut upto = None;
    if floor.is_some() {
        let range = isol.lines.range;
        let left = fit::find_vrate(&isol.lines, range, End::Max, End::Max, 0.0, None);
        let right = fit::find_vrate(&isol.lines, range, End::Min, End::Min, 0.0, None);
        if let (Some(lx), Some(rx)) = (left, right) {
            let (ly, ry) = (isol.lines.eval(lx), isol.lines.eval(rx));
            let slope = if lx < rx { (ry - ly) / (rx - lx) } else { 0.0 };
            if slope != 0.0 && ry < o.common.isol_thr {
                upto = Some((rx - (ry - o.common.isol_thr) / slope).clamp(range.0, range.1));
            }
        }
    }
    let amof = floor.and_then(|lo| {
        let pts: Vec<Pt> = series(&|r| Some(r.work))
            .into_iter()
            .filter(|p| p.x >= lo && upto.is_none_or(|u| p.x <= u))
            .collect();
        fit::fit(&pts, Shape::Any).map(|mut f| {
            if let Some(u) = upto {
                f.lines = f.lines.with_range((f.lines.range.0, u));
            }
            f
        })
    });
    // Pareto front over the vrates' means: more isolation, more work
    let work_means = vrate_means(used, |r| r.work);
    let front: Vec<f64> = isol_means
        .iter()
        .zip(&work_means)
        .filter(|((_, i), (_, w))| {
            !isol_means
                .iter()
                .zip(&work_means)
                .any(|((_, i2), (_, w2))| i2 >= i && w2 >= w && (i2 > i || w2 > w))
        })
        .map(|((v, _), _)| *v)
        .collect();
    // solutions within resctl's scale range, above the floor where there is one
    let range = floor.map_or(SCALE_RANGE, |f| (f.max(SCALE_RANGE.0), SCALE_RANGE.1));
    let solutions = solve(
        &work,
        &p99,
        amof.as_ref(),
        rlat.as_ref(),
        wlat.as_ref(),
        model,
        range,
    );
    Ok(Solved {
        work,
        isol,
        floor,
        p99,
        amof,
        rlat,
        wlat,
        front,
        solutions,
    })
}

/// resctl-bench `QoSTarget::solve()` for the four named solutions (module's design).
fn solve(
    work: &Fit,
    p99: &Fit,
    amof: Option<&Fit>,
    rlat: Option<&Fit>,
    wlat: Option<&Fit>,
    model: ModelParams,
    range: (f64, f64),
) -> Vec<Solution> {
    // infl_offset: slope × relative error of the work fit, at most 10%
    let r = work.lines.range;
    let infl = match (
        fit::find_vrate(&work.lines, r, End::Max, End::Min, 0.0, None),
        fit::find_vrate(&work.lines, r, End::Min, End::Max, 0.0, Some(r.0)),
    ) {
        (Some(lo), Some(hi)) if lo != hi => {
            let (ly, hy) = (work.lines.eval(lo), work.lines.eval(hi));
            ((hy - ly) / (hi - lo) * (work.error / hy) * 800.0).min(0.1)
        }
        _ => 0.0,
    };
    let lat = |f: Option<&Fit>, v: f64| f.map_or(0, |f| py_round(f.lines.eval(v)).max(0) as u64);
    let at = |v: f64| Qos {
        rpct: 0.0,
        rlat: lat(rlat, v),
        wpct: 0.0,
        wlat: lat(wlat, v),
        min: v,
        max: v,
    };
    let mut out = Vec::new();
    let mut add = |name, target, sol: Option<(Qos, f64)>| {
        if let Some((mut qos, vrate)) = sol {
            let scale = vrate / 100.0;
            qos.min = ((qos.min / scale) * 100.0).round() / 100.0;
            qos.max = ((qos.max / scale) * 100.0).round() / 100.0;
            out.push(Solution {
                name,
                target,
                vrate,
                model: model.scaled(scale),
                qos,
            });
        }
    };
    add(
        "naive",
        "vrate=75-100, rpct=99, wpct=99",
        Some((
            Qos {
                rpct: 99.0,
                rlat: lat(rlat, 100.0),
                wpct: 99.0,
                wlat: lat(wlat, 100.0),
                min: 75.0,
                max: 100.0,
            },
            100.0,
        )),
    );
    let bandwidth = amof.and_then(|a| a.lines.clamped(range)).map(|l| l.range.1);
    let isolation = fit::find_vrate(&p99.lines, range, End::Max, End::Min, infl, None);
    add("bandwidth", "aMOF=max-vrate", bandwidth.map(|v| (at(v), v)));
    let ib = match (isolation, bandwidth, amof) {
        (Some(lo), Some(hi), Some(a)) => {
            fit::find_vrate(&a.lines, range, End::Max, End::Max, infl, None)
                .map(|v| v.max(lo).min(hi))
        }
        _ => None,
    };
    add(
        "isolated-bandwidth",
        "(aMOF=right-max).clamp(isolation, bandwidth)",
        ib.map(|v| (at(v), v)),
    );
    add("isolation", "aMOF-delta=min", isolation.map(|v| (at(v), v)));
    out
}

/// The text `tune qos` prints (and writes to DIR/tune-qos.txt).
fn report_text(a: &Analysis, c: &Context) -> String {
    let o = c.o;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tune qos: {}{}: protecting `{}` from {}",
        c.scenario,
        o.common
            .variant
            .as_deref()
            .map(|v| format!(" (variant {v})"))
            .unwrap_or_default(),
        c.protect,
        c.others.join(", ")
    );
    let from = if c.measured {
        "measured by tune model where the scenario has no line"
    } else {
        "the scenario's"
    };
    let _ = writeln!(s, "base io.cost.model: {} ({from})", c.model_line);
    let _ = writeln!(s, "base io.cost.qos:   {} ({from})", c.qos_line);
    let _ = writeln!(
        s,
        "vrate min=max: {} (resctl-bench iocost-qos vrate-min={} vrate-max={} vrate-intvs={}); {} seed(s)",
        if a.vrates.len() > 4 {
            format!(
                "{}, {}, ..., {}",
                a.vrates[0],
                a.vrates[1],
                a.vrates[a.vrates.len() - 1]
            )
        } else {
            a.vrates
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        },
        o.vrate_min,
        o.vrate_max,
        o.vrate_intvs,
        o.common.seeds
    );
    let _ = writeln!(
        s,
        "isolation: isol-{:02} >= {}% of `{}` alone with iocost off (per-second completions / its alone IOPS)\n",
        o.common.isol_pct,
        o.common.isol_thr * 100.0,
        c.protect
    );
    let _ = writeln!(
        s,
        "{:>7} {:>14} {:>11} {:>14} {:>14} {:>11} {:>15} {:>15} {:>20} {:>9} {:>5}",
        "VRATE",
        "WORK MiB/s",
        "LOSS%",
        "PROT p99 ms",
        "PROT p99.9 ms",
        format!("ISOL-{:02}%", o.common.isol_pct),
        "RLAT p99 us",
        "WLAT p99 us",
        "VRATE IN FORCE %",
        "AT%",
        "FRONT"
    );
    let front: &[f64] = a.solved.as_ref().map_or(&[], |x| &x.front);
    for ((kind, rows), seen) in a.rows.iter().zip(&a.seen) {
        let col = |f: &dyn Fn(&Row) -> Option<f64>| {
            mean_sd_text(&rows.iter().filter_map(f).collect::<Vec<_>>())
        };
        let (label, front) = match kind {
            Kind::Alone => ("alone".to_string(), ""),
            Kind::Off => ("off".to_string(), ""),
            Kind::Vrate(v) => (format!("{v:.2}"), if front.contains(v) { "*" } else { "" }),
        };
        let alone = *kind == Kind::Alone;
        let (in_force, at) = match kind {
            Kind::Vrate(_) => vrate_text(seen),
            _ => ("-".into(), "-".into()),
        };
        let row = format!(
            "{label:>7} {:>14} {:>11} {:>14} {:>14} {:>11} {:>15} {:>15} {in_force:>20} {at:>9} {front:>5}",
            col(&|r| Some(r.work)),
            if alone || *kind == Kind::Off {
                "-".into()
            } else {
                col(&|r| Some(r.loss * 100.0))
            },
            col(&|r| Some(r.p99)),
            col(&|r| Some(r.p999)),
            if alone {
                "-".into()
            } else {
                col(&|r| Some(r.isol * 100.0))
            },
            col(&|r| r.rlat),
            col(&|r| r.wlat),
        );
        s.push_str(row.trim_end());
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "(mean ±sd over seeds; alone: `{}` by itself, iocost off; off: everything, iocost off; LOSS: work lost against off; FRONT: not beaten on both ISOL and WORK;",
        c.protect
    );
    let _ = writeln!(
        s,
        " VRATE IN FORCE: blk-iocost's vrate over the run's periods, mean (min-max); AT%: the periods at the vrate tried; never, K/N seeds: not in force in every seed's run)\n"
    );
    let never = a.vrates.len() - a.used.len();
    if never > 0 {
        let _ = writeln!(
            s,
            "{never} of the {} vrates tried were not in force in every seed's run: left out of the fits, the front and the solutions (ioc_adjust_base_vrate() moves vrate toward min/max by {VRATE_CLAMP_ADJ_PCT}% a period, and only while busy_level is not 0)\n",
            a.vrates.len()
        );
    }
    let solved = match &a.solved {
        Ok(x) => x,
        Err(why) => {
            let _ = writeln!(s, "no solutions: {why}");
            return s;
        }
    };
    match solved.floor {
        Some(lo) => {
            let hi = solved
                .solutions
                .iter()
                .find(|x| x.name == "bandwidth")
                .map_or("-".to_string(), |b| format!("{:.2}", b.vrate));
            let _ = writeln!(
                s,
                "isolated range: vrate {lo:.2} to {hi} (below, the fixed vrate starves `{}` itself; above, the others' IO gets to the device ahead of it)\n",
                c.protect
            );
        }
        None => {
            let _ = writeln!(
                s,
                "isolated range: none: isol-{:02} stays below {}% at every vrate; bandwidth and isolated-bandwidth have no solution\n",
                o.common.isol_pct,
                o.common.isol_thr * 100.0
            );
        }
    }
    let _ = writeln!(
        s,
        "Solutions (resctl-bench iocost-tune; the model scaled so that min = max = 100), each as written on a machine and as a run of the scenario:"
    );
    if let Some(note) = o.common.file.copy_note() {
        let _ = writeln!(s, "({note})");
    }
    for sol in &solved.solutions {
        let at =
            |get: fn(&Row) -> f64| fmt_figure(interpolate(&vrate_means(&a.used, get), sol.vrate));
        let _ = writeln!(s, "[{}] {}", sol.name, sol.target);
        let _ = writeln!(
            s,
            "  info: scale={:.2}% work={} MiB/s prot-p99={} ms isol-{:02}={}% (measured, between the nearest vrates)",
            sol.vrate,
            at(|r| r.work),
            at(|r| r.p99),
            o.common.isol_pct,
            at(|r| r.isol * 100.0)
        );
        let model = scaled_model_line(c.model_line, &sol.model);
        let qos = format!("{} enable=1 ctrl=user {}", c.dev, qos_params(&sol.qos));
        let _ = writeln!(s, "  {}", echo_line(&model, "/sys/fs/cgroup/io.cost.model"));
        let _ = writeln!(s, "  {}", echo_line(&qos, "/sys/fs/cgroup/io.cost.qos"));
        let _ = writeln!(
            s,
            "  {}",
            o.common.file.sweep_command(
                o.common.variant.as_deref(),
                &[("root.io.cost.model", &model), ("root.io.cost.qos", &qos)],
                o.common.seeds as usize
            )
        );
    }
    s.push('\n');
    s.push_str(&hwdb(&solved.solutions, c));
    s
}

/// A vrate row's VRATE IN FORCE and AT% over its seeds' runs (see the report's
/// footnote); "-" in force without iocost periods.
fn vrate_text(seen: &[VrateSeen]) -> (String, String) {
    let with: Vec<&VrateSeen> = seen.iter().filter(|x| x.periods > 0).collect();
    let in_force = if with.is_empty() {
        "-".into()
    } else {
        let mean = with.iter().map(|x| x.mean).sum::<f64>() / with.len() as f64;
        let min = with.iter().map(|x| x.min).fold(f64::INFINITY, f64::min);
        let max = with.iter().map(|x| x.max).fold(f64::NEG_INFINITY, f64::max);
        format!(
            "{} ({}-{})",
            fmt_figure(mean),
            fmt_figure(min),
            fmt_figure(max)
        )
    };
    let reached = seen.iter().filter(|x| x.at > 0).count();
    let at = if reached == seen.len() {
        let pct: Vec<f64> = seen
            .iter()
            .map(|x| x.at as f64 * 100.0 / x.periods as f64)
            .collect();
        fmt_figure(mean_sd(&pct).0)
    } else if reached == 0 {
        "never".into()
    } else {
        format!("{reached}/{} seeds", seen.len())
    };
    (in_force, at)
}

/// `points` (ascending x) at `x`, linearly between neighbours, the ends beyond them.
fn interpolate(points: &[(f64, f64)], x: f64) -> f64 {
    match points.iter().position(|p| p.0 >= x) {
        None => points.last().map_or(0.0, |p| p.1),
        Some(0) => points[0].1,
        Some(i) => {
            let (a, b) = (points[i - 1], points[i]);
            a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
        }
    }
}

/// `rpct=… rlat=… wpct=… wlat=… min=… max=…` as resctl prints them.
fn qos_params(q: &Qos) -> String {
    format!(
        "rpct={:.2} rlat={} wpct={:.2} wlat={} min={:.2} max={:.2}",
        q.rpct, q.rlat, q.wpct, q.wlat, q.min, q.max
    )
}

/// The base model line with its six coefficients replaced by `m` (other tokens, such
/// as `model=linear-max`, kept).
fn scaled_model_line(base: &str, m: &ModelParams) -> String {
    let mut l = base.to_string();
    for (k, v) in [
        ("rbps", m.rbps),
        ("rseqiops", m.rseqiops),
        ("rrandiops", m.rrandiops),
        ("wbps", m.wbps),
        ("wseqiops", m.wseqiops),
        ("wrandiops", m.wrandiops),
    ] {
        l = set_token(&l, k, &v.to_string());
    }
    l
}

/// systemd hwdb lines (resctl-bench `format_hwdb()`).
fn hwdb(sols: &[Solution], c: &Context) -> String {
    let order = ["isolation", "isolated-bandwidth", "bandwidth", "naive"];
    let chosen: Vec<&Solution> = order
        .iter()
        .filter_map(|n| sols.iter().find(|s| s.name == *n))
        .collect();
    let mut s = format!(
        "# systemd hwdb (/etc/udev/hwdb.d/*.hwdb), from blkcg-sim tune qos {}{} --protect {}: put the disk's model (ID_MODEL) for NAME\nblock:*:name:NAME:fwrev:*:\n  IOCOST_SOLUTIONS={}\n",
        shell_quote(c.o.common.file.given()),
        c.o.common
            .variant
            .as_deref()
            .map(|v| format!(" --variant {v}"))
            .unwrap_or_default(),
        c.protect,
        chosen.iter().map(|s| s.name).collect::<Vec<_>>().join(" ")
    );
    for sol in chosen {
        let n = sol.name.to_uppercase().replace('-', "_");
        let _ = writeln!(s, "  IOCOST_MODEL_{n}={}", sol.model.params());
        let _ = writeln!(s, "  IOCOST_QOS_{n}={}", qos_params(&sol.qos));
    }
    s
}

/// `f` named `name`, if there is one: a fitted line on a picture.
fn named<'a>(name: &'a str, f: Option<&'a Fit>) -> Vec<(&'a str, &'a Fit)> {
    f.map(|f| (name, f)).into_iter().collect()
}

/// DIR/tune-qos.{txt,csv,hwdb} and the pictures.
fn write_outputs(
    dir: &std::path::Path,
    a: &Analysis,
    c: &Context,
    report: &str,
    notify: &dyn Notify,
) -> Result<(), String> {
    const NAMES: [&str; 8] = [
        "report.html",
        "tune-qos.txt",
        "tune-qos.csv",
        "tune-qos.hwdb",
        "tune-qos.png",
        "tune-qos.svg",
        "tune-qos-pareto.png",
        "tune-qos-pareto.svg",
    ];
    let out = OutDir::top_owning(dir, &NAMES)?;
    out.write("tune-qos.txt", report)?;
    let solved = a.solved.as_ref().ok();
    if let Some(x) = solved {
        out.write("tune-qos.hwdb", &hwdb(&x.solutions, c))?;
    }
    let mut csv = String::from(
        "kind,vrate,seed,work_mib_s,loss_pct,prot_p99_ms,prot_p99.9_ms,isol_pct,isol_mean_pct,rlat_p99_us,wlat_p99_us,periods,vrate_mean_pct,vrate_min_pct,vrate_max_pct,periods_at_vrate,periods_missed,fitted\n",
    );
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for ((kind, rows), seen) in a.rows.iter().zip(&a.seen) {
        let (k, v, fitted) = match kind {
            Kind::Alone => ("alone", String::new(), ""),
            Kind::Off => ("off", String::new(), ""),
            Kind::Vrate(v) => (
                "vrate",
                v.to_string(),
                if a.used.iter().any(|u| u.0 == *v) {
                    "yes"
                } else {
                    "no"
                },
            ),
        };
        for (r, x) in rows.iter().zip(seen) {
            let vrate = |f: f64| {
                if x.periods > 0 {
                    f.to_string()
                } else {
                    String::new()
                }
            };
            let _ = writeln!(
                csv,
                "{k},{v},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{fitted}",
                r.seed,
                r.work,
                r.loss * 100.0,
                r.p99,
                r.p999,
                r.isol * 100.0,
                r.isol_mean * 100.0,
                opt(r.rlat),
                opt(r.wlat),
                x.periods,
                vrate(x.mean),
                vrate(x.min),
                vrate(x.max),
                x.at,
                x.missed
            );
        }
    }
    out.write("tune-qos.csv", &csv)?;
    let solutions = a.solutions();
    let left_out: Vec<(f64, Vec<Row>)> = a
        .rows
        .iter()
        .filter_map(|(k, r)| match k {
            Kind::Vrate(v) if !a.used.iter().any(|u| u.0 == *v) => Some((*v, r.clone())),
            _ => None,
        })
        .collect();
    // each figure against vrate: mean, ±sd, the fit, the solutions as verticals, and
    // the means of the vrates not in force apart
    let panel = |label: &str,
                 get: &dyn Fn(&Row) -> Option<f64>,
                 fits: Vec<(&str, &Fit)>,
                 scale: f64,
                 log_y: bool| {
        let stat = |rows: &[(f64, Vec<Row>)]| -> Vec<(f64, f64, f64)> {
            let mut v: Vec<(f64, f64, f64)> = rows
                .iter()
                .filter_map(|(v, rows)| {
                    let ys: Vec<f64> = rows.iter().filter_map(get).map(|y| y * scale).collect();
                    (!ys.is_empty()).then(|| {
                        let (m, sd) = mean_sd(&ys);
                        (*v, m, sd)
                    })
                })
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        };
        let (stat, apart) = (stat(&a.used), stat(&left_out));
        let mut series = vec![Series {
            name: "mean".into(),
            points: stat.iter().map(|&(v, m, _)| (v, m)).collect(),
        }];
        if stat.iter().any(|s| s.2 > 0.0) {
            series.push(Series {
                name: "mean - sd".into(),
                points: stat.iter().map(|&(v, m, sd)| (v, m - sd)).collect(),
            });
            series.push(Series {
                name: "mean + sd".into(),
                points: stat.iter().map(|&(v, m, sd)| (v, m + sd)).collect(),
            });
        }
        if !apart.is_empty() {
            series.push(Series {
                name: "mean, vrate not in force (left out)".into(),
                points: apart.iter().map(|&(v, m, _)| (v, m)).collect(),
            });
        }
        for (name, f) in fits {
            series.push(Series {
                name: name.into(),
                points: f.lines.points.iter().map(|p| (p.x, p.y * scale)).collect(),
            });
        }
        let (lo, hi) = stat.iter().fold((f64::MAX, f64::MIN), |(lo, hi), s| {
            (lo.min(s.1 - s.2), hi.max(s.1 + s.2))
        });
        for sol in solutions {
            series.push(Series {
                name: format!("{} {:.1}%", sol.name, sol.vrate),
                points: vec![(sol.vrate, lo), (sol.vrate, hi)],
            });
        }
        Panel {
            y_label: label.into(),
            series,
            log_y,
        }
    };
    let fit = |f: fn(&Solved) -> Option<&Fit>| named("fit", solved.and_then(f));
    let mut work_fits = fit(|x| Some(&x.work));
    work_fits.extend(named(
        "aMOF fit (where isolated)",
        solved.and_then(|x| x.amof.as_ref()),
    ));
    let panels = vec![
        panel("work MiB/s", &|r| Some(r.work), work_fits, 1.0, false),
        panel(
            &format!("{} clat p99 ms", c.protect),
            &|r| Some(r.p99),
            fit(|x| Some(&x.p99)),
            1.0,
            true,
        ),
        panel(
            &format!("isol-{:02} %", c.o.common.isol_pct),
            &|r| Some(r.isol),
            fit(|x| Some(&x.isol)),
            100.0,
            false,
        ),
        panel(
            "device read p99 us",
            &|r| r.rlat,
            fit(|x| x.rlat.as_ref()),
            1.0,
            false,
        ),
        panel(
            "device write p99 us",
            &|r| r.wlat,
            fit(|x| x.wlat.as_ref()),
            1.0,
            false,
        ),
    ];
    let panels: Vec<Panel> = panels
        .into_iter()
        .filter(|p| p.series.iter().any(|s| !s.points.is_empty()))
        .collect();
    let mut exhibits = Exhibits::default();
    let title = format!(
        "tune qos: {} (protect {}) against vrate min=max",
        c.scenario, c.protect
    );
    if let Err(e) = plot_panels(&out.path().join("tune-qos"), &title, "vrate %", &panels) {
        notify.warning(&format!("plot not drawn: {e}"));
    }
    exhibits.panels(&title, "vrate %", &panels, true);
    // the trade-off: isolation against work, each vrate, the front, the solutions
    let point = |rows: &[Row]| {
        let (i, isd) = mean_sd(&rows.iter().map(|r| r.isol * 100.0).collect::<Vec<_>>());
        let (w, wsd) = mean_sd(&rows.iter().map(|r| r.work).collect::<Vec<_>>());
        (i, w, isd, wsd)
    };
    let mut marks = vec![Marks {
        name: "each vrate in force, joined in vrate order".into(),
        points: a.used.iter().map(|(_, r)| point(r)).collect(),
        joined: true,
        size: 3,
    }];
    let on_front: &[f64] = solved.map_or(&[], |x| &x.front);
    let mut front: Vec<(f64, f64, f64, f64)> = a
        .used
        .iter()
        .filter(|(v, _)| on_front.contains(v))
        .map(|(_, r)| point(r))
        .collect();
    front.sort_by(|x, y| x.0.total_cmp(&y.0));
    marks.push(Marks {
        name: "Pareto front".into(),
        points: front,
        joined: true,
        size: 5,
    });
    if let Some((_, off)) = a.rows.iter().find(|(k, _)| *k == Kind::Off) {
        marks.push(Marks {
            name: "iocost off".into(),
            points: vec![point(off)],
            joined: false,
            size: 7,
        });
    }
    let (isol, work) = (
        vrate_means(&a.used, |r| r.isol * 100.0),
        vrate_means(&a.used, |r| r.work),
    );
    // largest first, so solutions at one vrate show as rings
    for (k, sol) in solutions.iter().enumerate() {
        marks.push(Marks {
            name: format!("{} ({:.1}%)", sol.name, sol.vrate),
            points: vec![(
                interpolate(&isol, sol.vrate),
                interpolate(&work, sol.vrate),
                0.0,
                0.0,
            )],
            joined: false,
            size: 14 - 3 * k as u32,
        });
    }
    let title = format!(
        "tune qos: {}: protection of {} against throughput",
        c.scenario, c.protect
    );
    let x_label = format!("{} isol-{:02} (%)", c.protect, c.o.common.isol_pct);
    let y_label = "work (MiB/s, all jobs)";
    let base = out.path().join("tune-qos-pareto");
    if let Err(e) = plot_marks(&base, &title, &x_label, y_label, false, &marks) {
        notify.warning(&format!("plot not drawn: {e}"));
    }
    exhibits.marks(&title, &x_label, y_label, false, &marks);
    write_command_page(
        &out,
        &format!("tune qos: {}", c.scenario),
        report,
        &exhibits,
        &[
            (
                "tune-qos",
                "each figure against vrate, with the fits and the solutions",
            ),
            (
                "tune-qos-pareto",
                "protection against throughput: the front and the solutions",
            ),
        ],
        &["tune-qos.txt", "tune-qos.csv", "tune-qos.hwdb"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vrate_axis_is_iocost_qos() {
        // iocost-tune's: vrate-max=125, vrate-intvs=25 from 0: 125, 120, ..., 5
        let v = vrate_axis(0.0, 125.0, 25).unwrap();
        assert_eq!(v.len(), 25);
        assert_eq!((v[0], v[1], v[24]), (125.0, 120.0, 5.0));
        // iocost-qos's default: min 20, max 100, 5 intervals inclusive... of 5 points
        assert_eq!(
            vrate_axis(20.0, 100.0, 5).unwrap(),
            [100.0, 80.0, 60.0, 40.0, 20.0]
        );
        assert_eq!(vrate_axis(0.0, 10.0, 4).unwrap(), [10.0, 7.5, 5.0, 2.5]);
        assert!(vrate_axis(50.0, 40.0, 5).is_err());
    }

    #[test]
    fn vrate_seen_counts_the_periods_at_the_vrate_tried_and_those_missing_targets() {
        let period = |vrate: f64, busy_after: i32| PeriodRow {
            t: 0,
            period_us: 10_000,
            vrate_base_pct: vrate,
            vrate_eff_pct: vrate,
            busy_before: 0,
            busy_after,
            nr_done: 1,
            missed_ppm: [0, 0],
            rq_wait_pct: 0,
            nr_lagging: 0,
            nr_shortages: 0,
            nr_donors: 0,
            cgroups: Vec::new(),
        };
        // pulled from 100 toward 90 by 4% a period while the targets are missed
        let rows = [
            period(96.0, 1),
            period(92.16, 2),
            period(90.0, 0),
            period(90.0, -1),
        ];
        let s = VrateSeen::of(&rows, Some(90.0));
        assert_eq!((s.periods, s.at, s.missed), (4, 2, 2));
        assert_eq!((s.min, s.max), (90.0, 96.0));
        assert!((s.mean - 92.04).abs() < 1e-9);
        // iocost off: no periods, nothing tried
        let off = VrateSeen::of(&[], None);
        assert_eq!((off.periods, off.at, off.min, off.max), (0, 0, 0.0, 0.0));
        assert_eq!(
            vrate_text(&[s, s]),
            ("92.0 (90.0-96.0)".into(), "50.0".into())
        );
        let unreached = VrateSeen::of(&rows, Some(50.0));
        assert_eq!(vrate_text(&[unreached]).1, "never");
        assert_eq!(vrate_text(&[s, unreached]).1, "1/2 seeds");
    }

    #[test]
    fn solutions_scale_the_model_so_max_is_100() {
        let m = ModelParams::from_line(
            "8:0 rbps=1000 rseqiops=100 rrandiops=100 wbps=1000 wseqiops=100 wrandiops=100",
        )
        .unwrap();
        // work grows to 60% then flat; p99 flat to 40% then rises; isolation holds
        // up to 50%
        let pts = |f: &dyn Fn(f64) -> f64| -> Vec<Pt> {
            (1..=25)
                .map(|i| Pt {
                    x: i as f64 * 5.0,
                    y: f(i as f64 * 5.0),
                })
                .collect()
        };
        let work = fit::fit(&pts(&|x| x.min(60.0)), Shape::Inc).unwrap();
        let p99 = fit::fit(
            &pts(&|x| if x <= 40.0 { 2.0 } else { 2.0 + (x - 40.0) }),
            Shape::Inc,
        )
        .unwrap();
        let mut amof = fit::fit(
            &pts(&|x| x.min(60.0))
                .into_iter()
                .filter(|p| p.x <= 50.0)
                .collect::<Vec<_>>(),
            Shape::Any,
        )
        .unwrap();
        amof.lines = amof.lines.with_range((5.0, 50.0));
        let lat = fit::fit(&pts(&|x| 1000.0 + x), Shape::Inc).unwrap();
        let sols = solve(
            &work,
            &p99,
            Some(&amof),
            Some(&lat),
            Some(&lat),
            m,
            SCALE_RANGE,
        );
        let names: Vec<&str> = sols.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["naive", "bandwidth", "isolated-bandwidth", "isolation"]
        );
        let get = |n: &str| sols.iter().find(|s| s.name == n).unwrap();
        assert_eq!(get("naive").qos.min, 75.0);
        assert_eq!(get("naive").model, m);
        assert_eq!(get("naive").qos.rlat, 1100);
        let bw = get("bandwidth");
        assert_eq!(bw.vrate, 50.0);
        assert_eq!((bw.qos.min, bw.qos.max, bw.qos.rpct), (100.0, 100.0, 0.0));
        assert_eq!(bw.model.rbps, 500);
        assert_eq!(bw.qos.rlat, 1050);
        // the knee (40-45) moved off the slope's tip by resctl's infl offset (<= 10%)
        let iso = get("isolation").vrate;
        assert!((36.0..=45.0).contains(&iso), "{iso}");
        let ib = get("isolated-bandwidth").vrate;
        assert!(ib >= iso && ib <= 50.0, "{ib}");
    }
}
