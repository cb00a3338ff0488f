//! `blkcg-sim tune SCENARIO --goal ... --maximize ... --over ...`: from a goal to a
//! setting — "what keeps `web`'s p99 read latency under 5 ms while `batch` writes as
//! fast as it can?" as one command.
//!
//! Design
//! ------
//! A goal is a figure of a run, a comparison and a bound (`web.read.clat_p99 <= 5ms`);
//! the objective is one more figure to maximise or minimise (`batch.write.bw`). A
//! figure is `WHO.DIR.STAT` ([`Figure`]): WHO a cgroup (all its jobs and fio runs
//! together) or a job as the summary names it (`cgroup/job`), DIR `read`, `write`,
//! `trim` or `total`, STAT `iops`, `bw` (MiB/s), `clat_mean`, `clat_max`, `lat_mean`,
//! `slat_mean` (ms) or `clat_pN` (ms; from the jobs' clat histograms merged, fio's
//! buckets and `percentiles()`, any N). A latency of a direction where nothing
//! completed is infinite: a starved cgroup fails a latency goal, it does not meet it.
//!
//! The space is `--over KEY=RANGE` axes in `sweep`'s KEY grammar (`crate::sweep::keys`:
//! `io.cost.qos` fields, `io.weight`, `io.max` tokens, `io.latency`, elevator
//! tunables, switches), each a list `V1,V2,...` or a numeric range `LO..HI:STEP` /
//! `LO..HI/N`. The search is a grid, then `--refine` rounds: each numeric axis gets
//! the midpoints between the best point's value and its tried neighbours, the other
//! axes stay at the best value, and only points not yet run are run. Why a refined
//! grid and no optimiser library: the figures are noisy (seeds) and often step-shaped
//! (a weight ratio, a token bucket binding or not), the keys are integers, there are
//! constraints, and every point must stay reproducible as one `sweep --set` command;
//! derivative-free optimisers (argmin's Nelder-Mead or particle swarm) handle none of
//! that, and a Bayesian optimiser would pull in a linear-algebra stack for a handful
//! of dimensions. A grid is also what the front picture and the "just outside" lines
//! need: the neighbours are points already run.
//!
//! Every point runs with `--seeds` seeds through [`Sweep::run`] (the same `prepare()`
//! and `simulate()` as `run`, a point byte-identical to the scenario with its values
//! written in by hand), on [`pool::ordered`], so the answer does not depend on the
//! number of workers. A point meets the goals when every seed meets every goal (the
//! worst seed is the one judged, and the margin is the worst seed's); the objective is
//! the mean over seeds. The best point is the met one with the largest margin (the
//! smallest relative margin over the goals) among those whose objective is within 1% of
//! the best objective: a setting on the edge of the goal is not worth 0.1% more
//! throughput. Ties go to the point run first.
//!
//! What it prints: what the runs assumed (`crate::report::assumed`, with the
//! distributions' presets where a default no distribution ships was used), every point
//! (or the best ones of a large grid), the best setting with its margin, each axis's
//! neighbours of the best point and how the goal fails there, and the setting as lines
//! to write: cgroupfs `echo`s, a systemd slice drop-in where systemd has the setting,
//! an udev hwdb entry for blk-iocost's root lines, the elevator's sysfs file, and the
//! `blkcg-sim sweep FILE --set ...` run of it. `--output DIR` adds `tune-goal.txt`,
//! `tune-goal.csv` (every run), `tune-goal.png/svg` (every point: the objective
//! against the first goal's figure, met or not, the front of the trade-off, the bound,
//! the best point) and `best.toml` (the scenario
//! with the setting written in, for `run` and `validate`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use toml::Value;

use crate::notify::Notify;
use crate::progress::{Cancel, Horizon, Reporter};
use crate::report::charts::Exhibits;
use crate::report::csv_field;
use crate::report::fio::JobReport;
use crate::report::html::write_command_page;
use crate::report::outdir::OutDir;
use crate::report::plot::{Marks, plot_marks};
use crate::report::summary::{fmt_figure, job_label};
use crate::run::VariantRun;
use crate::scenario::Scenario;
use crate::sim::fio::stats::{LatStat, percentiles};
use crate::sweep::keys::{Axis, Target};
use crate::sweep::{Sweep, pool};
use crate::tune::protect::{ScenarioFile, echo_line, mean_sd};

/// The most points one round may run (a typo in a range, not a plan).
const MAX_POINTS: usize = 10_000;
/// The most values one `--over` range may expand to.
const MAX_RANGE_VALUES: usize = 1000;
/// Objectives within this fraction of the best are taken as equal, and the larger
/// margin chosen among them: 0.1% more throughput is not worth a thinner margin.
const OBJECTIVE_TIE: f64 = 0.01;
/// The most points the printed table shows; `tune-goal.csv` has them all.
const MAX_SHOWN: usize = 40;

/// Which direction's I/O a figure counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    Trim,
    /// Every direction (fio's `mixed` figures).
    Total,
}

impl Dir {
    /// The indices of `JobStats::dd` it counts.
    fn ddirs(self) -> &'static [usize] {
        match self {
            Dir::Read => &[0],
            Dir::Write => &[1],
            Dir::Trim => &[2],
            Dir::Total => &[0, 1, 2],
        }
    }
}

/// What a figure measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    Iops,
    /// MiB/s.
    Bw,
    ClatMean,
    ClatMax,
    /// A clat percentile.
    ClatPct(f64),
    LatMean,
    SlatMean,
}

impl Stat {
    fn is_latency(self) -> bool {
        !matches!(self, Stat::Iops | Stat::Bw)
    }

    fn unit(self) -> &'static str {
        match self {
            Stat::Iops => "IOPS",
            Stat::Bw => "MiB/s",
            _ => "ms",
        }
    }
}

/// The STATs a figure may name, for messages.
const STATS: &str = "iops, bw (MiB/s), clat_mean, clat_max, clat_pN (e.g. clat_p99, clat_p99.9), \
lat_mean, slat_mean (ms)";

/// `WHO.DIR.STAT`: one figure of a run (see the module's design).
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// As written.
    pub text: String,
    who: String,
    dir: Dir,
    stat: Stat,
}

impl Figure {
    /// Parse `WHO.DIR.STAT` (WHO may hold dots: DIR and STAT are the last two parts;
    /// `clat_p99.9`'s own dot is part of STAT).
    pub fn parse(s: &str) -> Result<Figure, String> {
        let s = s.trim();
        let bad = |why: &str| {
            format!(
                "`{s}`: {why}; a figure is WHO.DIR.STAT: WHO a cgroup or cgroup/job, DIR \
                 read, write, trim or total, STAT one of {STATS} (e.g. web.read.clat_p99)"
            )
        };
        // STAT is after the last `.` that is followed by a letter (`clat_p99.9`)
        let cut = |t: &str| {
            t.char_indices()
                .rev()
                .find(|&(i, c)| {
                    c == '.' && t[i + 1..].starts_with(|x: char| x.is_ascii_alphabetic())
                })
                .map(|(i, _)| i)
        };
        let i = cut(s).ok_or_else(|| bad("no DIR and STAT"))?;
        let (rest, stat) = (&s[..i], &s[i + 1..]);
        let j = rest.rfind('.').ok_or_else(|| bad("no DIR"))?;
        let (who, dir) = (&rest[..j], &rest[j + 1..]);
        if who.is_empty() {
            return Err(bad("no WHO"));
        }
        let dir = match dir {
            "read" => Dir::Read,
            "write" => Dir::Write,
            "trim" => Dir::Trim,
            "total" => Dir::Total,
            d => return Err(bad(&format!("DIR `{d}` is not read, write, trim or total"))),
        };
        let stat = match stat {
            "iops" => Stat::Iops,
            "bw" => Stat::Bw,
            "clat_mean" => Stat::ClatMean,
            "clat_max" => Stat::ClatMax,
            "lat_mean" => Stat::LatMean,
            "slat_mean" => Stat::SlatMean,
            p => match p.strip_prefix("clat_p").map(str::parse::<f64>) {
                Some(Ok(q)) if q > 0.0 && q < 100.0 => Stat::ClatPct(q),
                _ => return Err(bad(&format!("STAT `{p}` is not one of {STATS}"))),
            },
        };
        Ok(Figure {
            text: s.to_string(),
            who: who.trim_matches('/').to_string(),
            dir,
            stat,
        })
    }

    /// The figure's unit, for headers and messages.
    pub fn unit(&self) -> &'static str {
        self.stat.unit()
    }

    fn matches(&self, j: &JobReport) -> bool {
        let cg = j.cgroup.trim_matches('/');
        cg == self.who
            || job_label(cg, &j.name, j.round) == self.who
            || (cg.is_empty() && j.name == self.who)
    }

    /// Its value in `run` (see the module's design); an error names the jobs there are
    /// when WHO is none of them.
    pub fn of(&self, run: &VariantRun) -> Result<f64, String> {
        let jobs: Vec<&JobReport> = run.fio.jobs.iter().filter(|j| self.matches(j)).collect();
        if jobs.is_empty() {
            let mut names: Vec<String> = Vec::new();
            for j in &run.fio.jobs {
                for n in [
                    j.cgroup.trim_matches('/').to_string(),
                    job_label(j.cgroup.trim_matches('/'), &j.name, j.round),
                ] {
                    if !n.is_empty() && !names.contains(&n) {
                        names.push(n);
                    }
                }
            }
            return Err(format!(
                "{}: no cgroup or job `{}` runs fio; there are: {}",
                self.text,
                self.who,
                names.join(", ")
            ));
        }
        let dirs = self.dir.ddirs();
        let per_job = |rate: &dyn Fn(&JobReport, usize) -> f64| -> f64 {
            jobs.iter()
                .flat_map(|j| dirs.iter().map(move |&d| (j, d)))
                .map(|(j, d)| rate(j, d))
                .sum()
        };
        Ok(match self.stat {
            // as fio's per-direction `iops` and `bw_bytes`, summed over the jobs
            Stat::Iops => per_job(&|j, d| match j.ddir_runtime(d) {
                0 => 0.0,
                t => j.stats.dd[d].total_ios as f64 * 1000.0 / t as f64,
            }),
            Stat::Bw => per_job(&|j, d| {
                (j.stats.dd[d].io_bytes * 1000)
                    .checked_div(j.ddir_runtime(d))
                    .unwrap_or(0) as f64
                    / 1048576.0
            }),
            stat => {
                let mut m = LatStat::default();
                for j in &jobs {
                    for &d in dirs {
                        let dd = &j.stats.dd[d];
                        m.merge(match stat {
                            Stat::LatMean => &dd.lat,
                            Stat::SlatMean => &dd.slat,
                            _ => &dd.clat,
                        });
                    }
                }
                if m.n == 0 {
                    return Ok(f64::INFINITY);
                }
                let ns = match stat {
                    Stat::ClatMax => m.max as f64,
                    Stat::ClatPct(p) => percentiles(&m.hist, &[p])[0] as f64,
                    _ => m.mean,
                };
                ns / 1e6
            }
        })
    }

    /// `v` as text with its unit; an infinite latency is "nothing completed".
    fn show(&self, v: f64) -> String {
        if v.is_infinite() {
            "nothing completed".into()
        } else {
            format!("{} {}", fmt_figure(v), self.unit())
        }
    }

    /// A bound for this figure: a number in its unit, or with a unit of its kind
    /// (`5ms`, `500us`, `0.2s`; `40MiB/s`, `10MB/s`, `2048KiB/s`; `3k` IOPS).
    fn bound(&self, s: &str) -> Result<f64, String> {
        let s = s.trim();
        let at = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-' || c == '+'))
            .unwrap_or(s.len());
        // `e` of a unit is not an exponent: numbers are written plainly here
        let (num, unit) = s.split_at(at);
        let x: f64 = num
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("`{s}`: not a number of {} at least 0", self.unit()))?;
        let unit = unit.trim();
        let scale = match (self.stat, unit) {
            (_, "") => 1.0,
            (st, u) if st.is_latency() => match u {
                "ns" => 1e-6,
                "us" | "µs" => 1e-3,
                "ms" => 1.0,
                "s" => 1e3,
                _ => return Err(format!("`{s}`: a latency's unit is ns, us, ms or s")),
            },
            (Stat::Bw, u) => match u {
                "B/s" => 1.0 / 1048576.0,
                "KiB/s" => 1.0 / 1024.0,
                "MiB/s" => 1.0,
                "GiB/s" => 1024.0,
                "KB/s" | "kB/s" => 1e3 / 1048576.0,
                "MB/s" => 1e6 / 1048576.0,
                "GB/s" => 1e9 / 1048576.0,
                _ => {
                    return Err(format!(
                        "`{s}`: a bandwidth's unit is B/s, KiB/s, MiB/s, GiB/s, KB/s, MB/s or GB/s"
                    ));
                }
            },
            (_, u) => match u {
                "k" | "K" => 1e3,
                "M" => 1e6,
                _ => return Err(format!("`{s}`: IOPS are a number, or with k or M")),
            },
        };
        Ok(x * scale)
    }
}

/// How a goal compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Le,
    Lt,
    Ge,
    Gt,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }

    /// An upper bound (the worst value is the highest).
    fn is_upper(self) -> bool {
        matches!(self, Op::Le | Op::Lt)
    }
}

/// `FIGURE OP VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    pub figure: Figure,
    op: Op,
    /// In the figure's unit.
    bound: f64,
}

impl Goal {
    /// Parse `web.read.clat_p99 <= 5ms` (spaces optional).
    pub fn parse(s: &str) -> Result<Goal, String> {
        let at = s.find(['<', '>']).ok_or_else(|| {
            format!("--goal `{s}`: expected FIGURE OP VALUE with OP one of <=, <, >=, > (e.g. 'web.read.clat_p99 <= 5ms')")
        })?;
        let (fig, rest) = s.split_at(at);
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else {
            (Op::Gt, &rest[1..])
        };
        let figure = Figure::parse(fig).map_err(|e| format!("--goal {e}"))?;
        let bound = figure
            .bound(value)
            .map_err(|e| format!("--goal `{}`: {e}", s.trim()))?;
        Ok(Goal { figure, op, bound })
    }

    fn met(&self, v: f64) -> bool {
        match self.op {
            Op::Le => v <= self.bound,
            Op::Lt => v < self.bound,
            Op::Ge => v >= self.bound,
            Op::Gt => v > self.bound,
        }
    }

    /// How far `v` is inside the bound (below 0: outside), in the figure's unit.
    fn margin(&self, v: f64) -> f64 {
        if self.op.is_upper() {
            self.bound - v
        } else {
            v - self.bound
        }
    }

    /// [`Goal::margin`] relative to the bound (to compare goals of different units).
    fn relative_margin(&self, v: f64) -> f64 {
        let m = self.margin(v);
        if self.bound > 0.0 { m / self.bound } else { m }
    }

    /// The worst of the seeds' values.
    fn worst(&self, vs: &[f64]) -> f64 {
        let fold = if self.op.is_upper() {
            f64::max
        } else {
            f64::min
        };
        vs.iter().copied().reduce(fold).unwrap_or(f64::NAN)
    }

    fn text(&self) -> String {
        format!(
            "{} {} {}",
            self.figure.text,
            self.op.text(),
            self.figure.show(self.bound)
        )
    }
}

/// `--maximize` or `--minimize` a figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    pub figure: Figure,
    pub maximize: bool,
}

impl Objective {
    /// Whether mean `a` is better than mean `b`.
    fn better(&self, a: f64, b: f64) -> bool {
        if self.maximize { a > b } else { a < b }
    }
}

/// Expand `--over KEY=RANGE` into `sweep`'s `KEY=V1,V2,...` (see the module's design).
pub fn expand_over(spec: &str) -> Result<String, String> {
    let Some((key, range)) = spec.split_once('=') else {
        return Err(format!(
            "--over `{spec}`: expected KEY=V1,V2,... or KEY=LO..HI:STEP or KEY=LO..HI/N (e.g. cgroup.web.io.weight=100..1000:100)"
        ));
    };
    let Some((lo, rest)) = range.split_once("..") else {
        return Ok(spec.to_string());
    };
    let bad = |why: &str| {
        format!(
            "--over {key}={range}: {why}; a range is LO..HI:STEP (every STEP from LO to HI) or LO..HI/N (N values evenly spaced, LO and HI included)"
        )
    };
    let (hi, step, count) = if let Some((h, s)) = rest.split_once(':') {
        (h, Some(s), None)
    } else if let Some((h, n)) = rest.split_once('/') {
        (h, None, Some(n))
    } else {
        return Err(bad("no :STEP or /N"));
    };
    let num = |t: &str| t.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    let (Some(lo_v), Some(hi_v)) = (num(lo), num(hi)) else {
        return Err(bad("LO and HI must be numbers"));
    };
    if hi_v < lo_v {
        return Err(bad("HI is below LO"));
    }
    let integral = |t: &str| t.trim().parse::<i64>().is_ok();
    let mut values: Vec<f64> = Vec::new();
    match (step, count) {
        (Some(s), _) => {
            let st = num(s)
                .filter(|x| *x > 0.0)
                .ok_or_else(|| bad("STEP must be a number above 0"))?;
            let n = ((hi_v - lo_v) / st + 1e-9).floor() as usize + 1;
            if n > MAX_RANGE_VALUES {
                return Err(bad(&format!("more than {MAX_RANGE_VALUES} values")));
            }
            values.extend((0..n).map(|k| lo_v + k as f64 * st));
        }
        (None, Some(n)) => {
            let n: usize = n
                .trim()
                .parse()
                .ok()
                .filter(|n| (2..=MAX_RANGE_VALUES).contains(n))
                .ok_or_else(|| bad(&format!("N must be 2..={MAX_RANGE_VALUES}")))?;
            values.extend((0..n).map(|k| lo_v + (hi_v - lo_v) * k as f64 / (n - 1) as f64));
        }
        (None, None) => unreachable!("one of :STEP and /N was found"),
    }
    let ints = integral(lo) && integral(hi) && step.is_none_or(integral);
    let mut texts: Vec<String> = Vec::new();
    for v in values {
        let t = number_text(v, ints);
        if !texts.contains(&t) {
            texts.push(t);
        }
    }
    Ok(format!("{key}={}", texts.join(",")))
}

/// `v` as a value: rounded to an integer when the axis is one, else its shortest form
/// to 6 significant digits.
fn number_text(v: f64, integer: bool) -> String {
    if integer {
        format!("{}", v.round() as i64)
    } else {
        let r: f64 = format!("{v:.6e}").parse().unwrap_or(v);
        format!("{r}")
    }
}

/// What `tune SCENARIO --goal ...` is asked.
pub struct GoalOptions {
    pub file: ScenarioFile,
    pub variant: Option<String>,
    pub goals: Vec<Goal>,
    pub objective: Option<Objective>,
    /// `--over`, as given.
    pub over: Vec<String>,
    pub seeds: u32,
    pub refine: u32,
    pub jobs: usize,
    pub output: Option<PathBuf>,
    pub progress: Reporter,
}

/// One point run: its values (axis by axis), the round it was run in, and per seed
/// the figures (the goals', then the objective's).
struct Point {
    values: Vec<String>,
    round: u32,
    seeds: Vec<(u64, Vec<f64>)>,
    /// What the point's first seed assumed, its warnings, and the device's name.
    assumed: String,
    defaults: Vec<String>,
    warnings: Vec<String>,
    device: String,
}

/// A point judged.
struct Judged {
    /// Per goal, the worst seed's value.
    worst: Vec<f64>,
    met: bool,
    /// The objective's mean and sd over seeds.
    objective: Option<(f64, f64)>,
    /// The smallest relative margin over the goals (worst seeds).
    slack: f64,
}

/// The search (see the module's design).
struct Search<'a> {
    sc: &'a Scenario,
    o: &'a GoalOptions,
    /// The axes' keys and, per axis, every value tried (numeric axes sorted).
    keys: Vec<String>,
    tried: Vec<Vec<String>>,
    numeric: Vec<bool>,
    points: Vec<Point>,
    index: BTreeMap<Vec<String>, usize>,
}

impl GoalOptions {
    /// The figures each run is measured by: the goals', then the objective's.
    fn figures(&self) -> Vec<&Figure> {
        let mut f: Vec<&Figure> = self.goals.iter().map(|g| &g.figure).collect();
        f.extend(self.objective.as_ref().map(|o| &o.figure));
        f
    }
}

impl Search<'_> {
    /// Run `sets` (a sweep's axes, one value each at least) for the points not run yet.
    fn round(&mut self, sets: &[String], round: u32) -> Result<(), String> {
        let sweep = Sweep::new(self.sc, sets, self.o.seeds)?;
        // a value the schedule replaces mid-run is not the value the answer would name
        if let Some((key, r)) = sweep.rewritten_by_schedule()?.into_iter().next() {
            return Err(format!(
                "--over {key}: {r}, so each value tried would be in force {}; tune a copy of the scenario without that entry",
                r.held()
            ));
        }
        if sweep.points() > MAX_POINTS {
            return Err(format!(
                "the grid has {} points, more than {MAX_POINTS}: use fewer values, then --refine",
                sweep.points()
            ));
        }
        let new: Vec<usize> = (0..sweep.points())
            .filter(|&p| !self.index.contains_key(&values_of(&sweep, p)))
            .collect();
        let seeds = self.o.seeds as usize;
        let runs = new.len() * seeds;
        let label = if round == 0 {
            "tune: grid".to_string()
        } else {
            format!("tune: refine {round}")
        };
        let mut shown = self.o.progress.start(&label, Horizon::Count(runs as u64));
        let o: &GoalOptions = self.o;
        let figures = o.figures();
        let never = Cancel::default();
        let mut done = 0;
        pool::ordered(
            runs,
            self.o.jobs,
            |i| {
                let r = new[i / seeds] * seeds + i % seeds;
                let (rec, run) = sweep.run(r, &never)?;
                let vals = figures
                    .iter()
                    .map(|f| f.of(&run))
                    .collect::<Result<Vec<f64>, String>>()?;
                let first = (i % seeds == 0).then(|| {
                    (
                        run.assumed.to_string(),
                        run.assumed.upstream_defaults().to_vec(),
                        run.warnings.clone(),
                        run.limits.name.clone(),
                    )
                });
                Ok::<_, String>((rec.seed, vals, first))
            },
            |i, got| {
                let (seed, vals, first) = got?;
                let p = new[i / seeds];
                if let Some((assumed, defaults, warnings, device)) = first {
                    let values = values_of(&sweep, p);
                    self.index.insert(values.clone(), self.points.len());
                    self.points.push(Point {
                        values,
                        round,
                        seeds: Vec::new(),
                        assumed,
                        defaults,
                        warnings,
                        device,
                    });
                }
                if let Some(last) = self.points.last_mut() {
                    last.seeds.push((seed, vals));
                }
                done += 1;
                shown.update(0, done);
                Ok(())
            },
        )?;
        shown.finish();
        for (ai, a) in sweep.axes.iter().enumerate() {
            for v in &a.values {
                if !self.tried[ai].contains(v) {
                    self.tried[ai].push(v.clone());
                }
            }
            if self.numeric[ai] {
                self.tried[ai].sort_by(|x, y| num(x).total_cmp(&num(y)));
            }
        }
        Ok(())
    }

    fn judge(&self, p: &Point) -> Judged {
        let goals = &self.o.goals;
        let worst: Vec<f64> = goals
            .iter()
            .enumerate()
            .map(|(g, goal)| goal.worst(&p.seeds.iter().map(|(_, v)| v[g]).collect::<Vec<_>>()))
            .collect();
        let met = goals
            .iter()
            .enumerate()
            .all(|(g, goal)| p.seeds.iter().all(|(_, v)| goal.met(v[g])));
        let slack = goals
            .iter()
            .zip(&worst)
            .map(|(g, &w)| g.relative_margin(w))
            .fold(f64::INFINITY, f64::min);
        let objective = self.o.objective.as_ref().map(|_| {
            let vs: Vec<f64> = p.seeds.iter().map(|(_, v)| v[goals.len()]).collect();
            mean_sd(&vs)
        });
        Judged {
            worst,
            met,
            objective,
            slack,
        }
    }

    /// Point `i`'s setting: `KEY=VALUE` per axis, as `sweep`'s `--set` takes them
    /// (`escaped`: a comma inside a value as `\,`) or as the answer prints them.
    fn setting(&self, i: usize, escaped: bool) -> Vec<String> {
        self.keys
            .iter()
            .zip(&self.points[i].values)
            .map(|(k, v)| {
                if escaped {
                    format!("{k}={}", escape(v))
                } else {
                    format!("{k}={v}")
                }
            })
            .collect()
    }

    /// Point `i`'s scenario: the scenario with its setting written in.
    fn scenario_of(&self, i: usize) -> Result<Scenario, String> {
        Sweep::new(self.sc, &self.setting(i, true), 1).and_then(|sw| sw.scenario(0))
    }

    /// The best point: among the met ones, the largest margin of those within
    /// [`OBJECTIVE_TIE`] of the best objective (without an objective: the largest
    /// margin); the first run of equals; None when none is met.
    fn best(&self, judged: &[Judged]) -> Option<usize> {
        let met = || (0..judged.len()).filter(|&i| judged[i].met);
        let near = match &self.o.objective {
            Some(o) => {
                let means = || met().filter_map(|i| judged[i].objective.map(|(m, _)| m));
                let top = means().reduce(|a, b| if o.better(b, a) { b } else { a })?;
                let tol = OBJECTIVE_TIE * top.abs();
                Box::new(move |i: usize| {
                    judged[i]
                        .objective
                        .is_some_and(|(m, _)| !o.better(top, m) || (top - m).abs() <= tol)
                }) as Box<dyn Fn(usize) -> bool>
            }
            None => Box::new(|_| true),
        };
        met().filter(|&i| near(i)).reduce(|b, i| {
            if judged[i].slack > judged[b].slack {
                i
            } else {
                b
            }
        })
    }

    /// The next round's axes around point `b`: midpoints on numeric axes, the best
    /// value elsewhere; None when nothing new would be tried.
    fn refined(&self, b: usize) -> Option<Vec<String>> {
        let best = &self.points[b].values;
        let mut any = false;
        let sets = self
            .keys
            .iter()
            .enumerate()
            .map(|(ai, key)| {
                let v = &best[ai];
                let mut vals = vec![v.clone()];
                if self.numeric[ai] {
                    let t = &self.tried[ai];
                    let k = t.iter().position(|x| x == v).unwrap_or(0);
                    let ints = t.iter().all(|x| x.parse::<i64>().is_ok());
                    let mid = |a: &str| number_text((num(a) + num(v)) / 2.0, ints);
                    let mut around = Vec::new();
                    if k > 0 {
                        around.push(mid(&t[k - 1]));
                    }
                    around.push(v.clone());
                    if k + 1 < t.len() {
                        around.push(mid(&t[k + 1]));
                    }
                    around.dedup();
                    if around.iter().any(|x| !t.contains(x)) {
                        any = true;
                    }
                    vals = around;
                }
                let vals: Vec<String> = vals.iter().map(|x| escape(x)).collect();
                format!("{key}={}", vals.join(","))
            })
            .collect();
        any.then_some(sets)
    }
}

/// Point `p`'s values in `sweep`.
fn values_of(sweep: &Sweep, p: usize) -> Vec<String> {
    sweep.values(p).0.into_iter().map(|(_, v)| v).collect()
}

fn num(s: &str) -> f64 {
    s.parse().unwrap_or(f64::NAN)
}

/// A value in `sweep`'s list grammar (`\,` a comma inside a value).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace(',', "\\,")
}

/// `blkcg-sim tune SCENARIO --goal ...`: prints the answer with `out`; exit code 0
/// when a setting meets the goals, 1 when none tried does.
pub fn goal_command(
    sc: &Scenario,
    o: &GoalOptions,
    out: &mut dyn FnMut(&str),
    notify: &dyn Notify,
) -> Result<u8, String> {
    if o.goals.is_empty() {
        return Err(
            "tune: give at least one --goal (e.g. --goal 'web.read.clat_p99 <= 5ms')".into(),
        );
    }
    if o.over.is_empty() {
        return Err("tune: give at least one --over KEY=RANGE to search (e.g. --over cgroup.web.io.weight=100..1000:100)".into());
    }
    let mut sets: Vec<String> = Vec::new();
    if let Some(v) = &o.variant {
        sets.push(format!("variant={}", escape(v)));
    }
    for s in &o.over {
        sets.push(expand_over(s)?);
    }
    let variants = sc.variants();
    if o.variant.is_none()
        && !variants.is_empty()
        && !sets.iter().any(|s| s.starts_with("variant="))
    {
        return Err(format!(
            "tune: {} has variants ({}); pick one with --variant, or search them with --over variant=...",
            sc.file,
            variants.join(", ")
        ));
    }
    let axes: Vec<Axis> = sets
        .iter()
        .map(|s| Axis::parse(s))
        .collect::<Result<_, _>>()?;
    let numeric: Vec<bool> = axes
        .iter()
        .map(|a| a.target != Target::Variant && a.values.iter().all(|v| v.parse::<f64>().is_ok()))
        .collect();
    let mut s = Search {
        sc,
        o,
        keys: axes.iter().map(|a| a.key.clone()).collect(),
        tried: vec![Vec::new(); axes.len()],
        numeric,
        points: Vec::new(),
        index: BTreeMap::new(),
    };
    s.round(&sets, 0)?;
    for r in 1..=o.refine {
        let judged: Vec<Judged> = s.points.iter().map(|p| s.judge(p)).collect();
        let Some(b) = s.best(&judged) else { break };
        let Some(next) = s.refined(b) else { break };
        s.round(&next, r)?;
    }
    let judged: Vec<Judged> = s.points.iter().map(|p| s.judge(p)).collect();
    let best = s.best(&judged);
    let text = report(&s, &judged, best);
    out(&text);
    if let Some(dir) = &o.output {
        write_outputs(dir, &s, &judged, best, &text, notify)?;
    }
    Ok(if best.is_some() { 0 } else { 1 })
}

/// The printed answer.
fn report(s: &Search, judged: &[Judged], best: Option<usize>) -> String {
    let o = s.o;
    let mut t = String::new();
    let runs: usize = s.points.iter().map(|p| p.seeds.len()).sum();
    let rounds = s.points.iter().map(|p| p.round).max().unwrap_or(0);
    let _ = writeln!(
        t,
        "tune {}: {} point(s) x {} seed(s) = {runs} runs ({}{})",
        o.file.given(),
        s.points.len(),
        o.seeds,
        if rounds > 0 {
            "a grid, then "
        } else {
            "a grid"
        },
        if rounds > 0 {
            format!("{rounds} refining round(s)")
        } else {
            String::new()
        }
    );
    let goals: Vec<String> = o.goals.iter().map(Goal::text).collect();
    let _ = writeln!(t, "goal: {} (every seed)", goals.join(" and "));
    if let Some(obj) = &o.objective {
        let _ = writeln!(
            t,
            "objective: {} {} (mean over seeds)",
            if obj.maximize { "maximize" } else { "minimize" },
            obj.figure.text
        );
    }
    // what the runs assumed: the best point's (or the first's)
    let shown = &s.points[best.unwrap_or(0)];
    t.push_str(&shown.assumed);
    for d in &shown.defaults {
        let _ = writeln!(t, "note: {d}");
    }
    if !shown.defaults.is_empty() && !s.keys.iter().any(|k| k == "kernel.version") {
        let _ = writeln!(
            t,
            "note: to answer for a distribution's kernel, add --over kernel.version=debian-12,debian-13,ubuntu-24.04 (or set kernel.version in the scenario)"
        );
    }
    for w in &shown.warnings {
        let _ = writeln!(t, "warning: {w}");
    }
    t.push('\n');
    table(&mut t, s, judged, best);
    t.push('\n');
    let Some(b) = best else {
        no_answer(&mut t, s, judged);
        return t;
    };
    let p = &s.points[b];
    let j = &judged[b];
    let _ = writeln!(t, "best: {}", s.setting(b, false).join(" "));
    for (g, goal) in o.goals.iter().enumerate() {
        let vs: Vec<f64> = p.seeds.iter().map(|(_, v)| v[g]).collect();
        let (mean, _) = mean_sd(&vs);
        let m = goal.margin(j.worst[g]);
        let _ = writeln!(
            t,
            "  {} = {} (worst of {} seeds; mean {}): margin {} ({:.0}% of the bound) to {}",
            goal.figure.text,
            goal.figure.show(j.worst[g]),
            vs.len(),
            goal.figure.show(mean),
            goal.figure.show(m),
            100.0 * goal.relative_margin(j.worst[g]),
            goal.text()
        );
    }
    if let (Some(obj), Some((mean, sd))) = (&o.objective, j.objective) {
        let vs: Vec<f64> = p.seeds.iter().map(|(_, v)| v[o.goals.len()]).collect();
        let lo = vs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let _ = writeln!(
            t,
            "  {} = {} ±{} (mean ±sd of {} seeds; {}..{})",
            obj.figure.text,
            obj.figure.show(mean),
            fmt_figure(sd),
            vs.len(),
            fmt_figure(lo),
            fmt_figure(hi)
        );
    }
    t.push('\n');
    neighbours(&mut t, s, judged, b);
    t.push('\n');
    lines_to_write(&mut t, s, b);
    t
}

/// Every point (or the best [`MAX_SHOWN`] of a large grid): its values, each goal's
/// worst value and whether it is met, the objective.
fn table(t: &mut String, s: &Search, judged: &[Judged], best: Option<usize>) {
    let o = s.o;
    let mut order: Vec<usize> = (0..s.points.len()).collect();
    if order.len() > MAX_SHOWN {
        // met first, by objective (or slack), then the rest by slack
        let key = |i: &usize| -> (bool, f64) {
            let j = &judged[*i];
            let score = match (&o.objective, j.objective) {
                (Some(ob), Some((m, _))) if ob.maximize => -m,
                (Some(_), Some((m, _))) => m,
                _ => -j.slack,
            };
            (!j.met, score)
        };
        order.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(a.cmp(b))
        });
        order.truncate(MAX_SHOWN);
        order.sort();
    }
    // a variant given with --variant is one value: the header says it, not a column
    let shown_axes: Vec<usize> = (0..s.keys.len())
        .filter(|&a| !(o.variant.is_some() && s.keys[a] == "variant"))
        .collect();
    if let Some(v) = &o.variant {
        let _ = writeln!(t, "variant {v}:");
    }
    let mut head: Vec<String> = shown_axes.iter().map(|&a| s.keys[a].clone()).collect();
    for g in &o.goals {
        head.push(format!("{} ({}, worst)", g.figure.text, g.figure.unit()));
    }
    if let Some(ob) = &o.objective {
        head.push(format!("{} ({}, mean)", ob.figure.text, ob.figure.unit()));
    }
    head.push("GOAL".into());
    let mut rows: Vec<Vec<String>> = vec![head];
    for &i in &order {
        let (p, j) = (&s.points[i], &judged[i]);
        let mut row: Vec<String> = shown_axes.iter().map(|&a| p.values[a].clone()).collect();
        row.extend(j.worst.iter().map(|&w| {
            if w.is_infinite() {
                "-".into()
            } else {
                fmt_figure(w)
            }
        }));
        if let Some((m, sd)) = j.objective {
            row.push(format!("{} ±{}", fmt_figure(m), fmt_figure(sd)));
        }
        row.push(
            match (j.met, Some(i) == best) {
                (true, true) => "met *",
                (true, false) => "met",
                _ => "missed",
            }
            .into(),
        );
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(t, "{}", cells.join("  ").trim_end());
    }
    if order.len() < s.points.len() {
        let _ = writeln!(
            t,
            "({} more points in tune-goal.csv with --output; shown: the best {MAX_SHOWN})",
            s.points.len() - order.len()
        );
    }
    let _ = writeln!(
        t,
        "(*: the best; worst: the worst seed's value; -: nothing completed)"
    );
}

/// When no point meets the goals: the closest, and what to try.
fn no_answer(t: &mut String, s: &Search, judged: &[Judged]) {
    let _ = writeln!(t, "no setting tried meets the goal in every seed.");
    let closest = (0..judged.len())
        .max_by(|&a, &b| judged[a].slack.total_cmp(&judged[b].slack).then(b.cmp(&a)));
    if let Some(c) = closest {
        let setting = s.setting(c, false);
        let _ = writeln!(t, "closest: {}", setting.join(" "));
        for (g, goal) in s.o.goals.iter().enumerate() {
            let w = judged[c].worst[g];
            let _ = writeln!(
                t,
                "  {} = {} (worst seed): {}",
                goal.figure.text,
                goal.figure.show(w),
                if goal.met(w) {
                    "met".to_string()
                } else {
                    format!(
                        "misses {} by {}",
                        goal.text(),
                        goal.figure.show(-goal.margin(w))
                    )
                }
            );
        }
    }
    let _ = writeln!(
        t,
        "widen the ranges (--over), add a key that acts on the goal's cgroup, or relax the goal"
    );
}

/// How the goals fare one step either side of the best point on each axis.
fn neighbours(t: &mut String, s: &Search, judged: &[Judged], b: usize) {
    let _ = writeln!(
        t,
        "just outside (each axis one step either side, the others at the best):"
    );
    let best = &s.points[b].values;
    let (mut any, mut missed) = (false, false);
    for (ai, key) in s.keys.iter().enumerate() {
        let tried = &s.tried[ai];
        let k = tried.iter().position(|v| *v == best[ai]).unwrap_or(0);
        for (side, at) in [("lower", k.checked_sub(1)), ("higher", Some(k + 1))] {
            let Some(v) = at.and_then(|i| tried.get(i)) else {
                continue;
            };
            let side = if s.numeric[ai] {
                side
            } else if side == "lower" {
                "before"
            } else {
                "after"
            };
            let mut vals = best.clone();
            vals[ai] = v.clone();
            let Some(&i) = s.index.get(&vals) else {
                continue;
            };
            any = true;
            let j = &judged[i];
            missed |= !j.met;
            let mut what: Vec<String> = Vec::new();
            for (g, goal) in s.o.goals.iter().enumerate() {
                let w = j.worst[g];
                what.push(if goal.met(w) {
                    format!("{} {} (met)", goal.figure.text, goal.figure.show(w))
                } else {
                    format!(
                        "{} {}: misses by {}",
                        goal.figure.text,
                        goal.figure.show(w),
                        goal.figure.show(-goal.margin(w))
                    )
                });
            }
            if let (Some(ob), Some((m, _))) = (&s.o.objective, j.objective) {
                what.push(format!("{} {}", ob.figure.text, ob.figure.show(m)));
            }
            let _ = writeln!(t, "  {key}={v} ({side}): {}", what.join("; "));
        }
    }
    if !any {
        let _ = writeln!(t, "  (no neighbour was run: every axis has one value)");
    } else if missed {
        let _ = writeln!(
            t,
            "  the best is at an edge of what meets the goal: a small change misses it; more --seeds, \
             a finer range or --refine show how wide the met region is"
        );
    }
}

/// The setting as what to write: cgroupfs, systemd, hwdb, sysfs, and the sweep run.
fn lines_to_write(t: &mut String, s: &Search, b: usize) {
    let o = s.o;
    let p = &s.points[b];
    // the best point's scenario: each line as the scenario would hold it
    let table = s.scenario_of(b).map(|sc| sc.table).ok();
    let dev = &p.device;
    let mut echo: Vec<String> = Vec::new();
    let mut systemd: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut hwdb: Vec<String> = Vec::new();
    let mut other: Vec<String> = Vec::new();
    let mut seen: Vec<(Option<String>, &str)> = Vec::new();
    for (ai, key) in s.keys.iter().enumerate() {
        let Ok(axis) = Axis::parse(&format!("{key}={}", escape(&p.values[ai]))) else {
            continue;
        };
        match &axis.target {
            Target::Line { cgroup, file, .. } => {
                if seen.contains(&(cgroup.clone(), *file)) {
                    continue;
                }
                seen.push((cgroup.clone(), *file));
                let lines = table
                    .as_ref()
                    .map(|t| line_of(t, cgroup.as_deref(), file))
                    .unwrap_or_default();
                let path = match cgroup {
                    Some(c) => format!("/sys/fs/cgroup/{}/{file}", c.trim_matches('/')),
                    None => format!("/sys/fs/cgroup/{file}"),
                };
                for l in &lines {
                    echo.push(echo_line(l, &path));
                    match cgroup {
                        Some(c) => {
                            if let Some(d) = systemd_directives(file, l, dev) {
                                systemd.entry(c.clone()).or_default().extend(d);
                            }
                        }
                        None if file.starts_with("io.cost.") => hwdb.push(format!(
                            "IOCOST_{}_BLKCG_SIM={}",
                            if *file == "io.cost.model" { "MODEL" } else { "QOS" },
                            l.split_whitespace()
                                .filter(|w| w.contains('=') && !w.starts_with("enable=") && !w.starts_with("ctrl="))
                                .collect::<Vec<_>>()
                                .join(" ")
                        )),
                        None => {}
                    }
                }
            }
            Target::Key(path) if path.len() == 3 && path[0] == "device" && path[1] == "iosched" => {
                echo.push(echo_line(
                    &p.values[ai],
                    &format!("/sys/block/{dev}/queue/iosched/{}", path[2]),
                ));
            }
            Target::Variant => {}
            Target::Key(path) if path.first().is_some_and(|k| k == "kernel") => other.push(format!(
                "{key}={}: the kernel's, not a file to write (boot that kernel, or build it with `blkcg-sim kernel build`)",
                p.values[ai]
            )),
            _ => other.push(format!(
                "{key}={}: the scenario's machine or workload, not a setting to write",
                p.values[ai]
            )),
        }
    }
    if !echo.is_empty() {
        let _ = writeln!(
            t,
            "to write it (cgroup v2 at /sys/fs/cgroup, the scenario's cgroup paths):"
        );
        for e in &echo {
            let _ = writeln!(t, "  {e}");
        }
    }
    for (cg, directives) in &systemd {
        let unit = format!("{}.slice", cg.trim_matches('/').replace('/', "-"));
        let _ = writeln!(
            t,
            "or with systemd, the cgroup as the slice {unit} (/etc/systemd/system/{unit}.d/50-io.conf; then systemctl daemon-reload):"
        );
        let _ = writeln!(t, "  [Slice]");
        for d in directives {
            let _ = writeln!(t, "  {d}");
        }
    }
    if !hwdb.is_empty() {
        let _ = writeln!(
            t,
            "or for every boot, systemd's udev hwdb (/etc/udev/hwdb.d/60-iocost.hwdb; put the disk's model for NAME; systemd-hwdb update):"
        );
        let _ = writeln!(t, "  block:*:name:NAME:fwrev:*:");
        let _ = writeln!(t, "    IOCOST_SOLUTIONS=blkcg_sim");
        for h in &hwdb {
            let _ = writeln!(t, "    {h}");
        }
    }
    for x in &other {
        let _ = writeln!(t, "note: {x}");
    }
    let _ = writeln!(t, "to run it here:");
    if let Some(n) = o.file.copy_note() {
        let _ = writeln!(t, "  # {n}");
    }
    let sets: Vec<(&str, &str)> = s
        .keys
        .iter()
        .zip(&p.values)
        .filter(|(k, _)| *k != "variant" || o.variant.is_none())
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let _ = writeln!(
        t,
        "  {}",
        o.file
            .sweep_command(o.variant.as_deref(), &sets, o.seeds as usize)
    );
    if o.output.is_some() {
        let _ = writeln!(
            t,
            "  (and best.toml in the output folder: blkcg-sim run best.toml, or blkcg-sim validate best.toml on a null_blk device)"
        );
    }
}

/// The lines `file` of `cgroup` (None: the root) holds in a scenario's table.
fn line_of(t: &toml::Table, cgroup: Option<&str>, file: &str) -> Vec<String> {
    let holder = match cgroup {
        Some(c) => t
            .get("cgroup")
            .and_then(Value::as_table)
            .and_then(|cs| cs.get(c))
            .and_then(Value::as_table),
        None => t.get("root").and_then(Value::as_table),
    };
    match holder.and_then(|h| h.get(file)) {
        Some(Value::String(l)) => vec![l.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(v) => vec![v.to_string()],
        None => Vec::new(),
    }
}

/// systemd's directives for an interface line of a cgroup, where systemd has one
/// (systemd.resource-control(5)): io.weight → IOWeight= / IODeviceWeight=, io.max →
/// IO{Read,Write}{Bandwidth,IOPS}Max=, io.latency → IODeviceLatencyTargetSec=.
fn systemd_directives(file: &str, line: &str, dev: &str) -> Option<Vec<String>> {
    let node = format!("/dev/{dev}");
    let words: Vec<&str> = line.split_whitespace().collect();
    match file {
        "io.weight" => match words.as_slice() {
            ["default", w] | [w] if w.parse::<u32>().is_ok() => Some(vec![format!("IOWeight={w}")]),
            [d, w] if d.contains(':') => Some(vec![format!("IODeviceWeight={node} {w}")]),
            _ => None,
        },
        "io.max" => Some(
            words
                .iter()
                .filter_map(|w| w.split_once('='))
                .filter_map(|(k, v)| {
                    let name = match k {
                        "rbps" => "IOReadBandwidthMax",
                        "wbps" => "IOWriteBandwidthMax",
                        "riops" => "IOReadIOPSMax",
                        "wiops" => "IOWriteIOPSMax",
                        _ => return None,
                    };
                    let v = if v == "max" { "infinity" } else { v };
                    Some(format!("{name}={node} {v}"))
                })
                .collect(),
        ),
        "io.latency" => words
            .iter()
            .find_map(|w| w.strip_prefix("target="))
            .map(|us| vec![format!("IODeviceLatencyTargetSec={node} {us}us")]),
        _ => None,
    }
}

/// DIR/tune-goal.{txt,csv,png,svg} and best.toml.
fn write_outputs(
    dir: &std::path::Path,
    s: &Search,
    judged: &[Judged],
    best: Option<usize>,
    text: &str,
    notify: &dyn Notify,
) -> Result<(), String> {
    let out = OutDir::top_owning(
        dir,
        &[
            "tune-goal.txt",
            "tune-goal.csv",
            "tune-goal.png",
            "tune-goal.svg",
            "best.toml",
            "report.html",
        ],
    )?;
    out.write("tune-goal.txt", text)?;
    let mut csv = String::from("round,point,seed");
    for k in &s.keys {
        csv.push(',');
        csv.push_str(&csv_field(k));
    }
    for f in s.o.figures() {
        let _ = write!(csv, ",{}", csv_field(&format!("{} ({})", f.text, f.unit())));
    }
    csv.push_str(",met\n");
    for (i, p) in s.points.iter().enumerate() {
        for (seed, vals) in &p.seeds {
            let _ = write!(csv, "{},{i},{seed}", p.round);
            for v in &p.values {
                let _ = write!(csv, ",{}", csv_field(v));
            }
            for v in vals {
                if v.is_finite() {
                    let _ = write!(csv, ",{v}");
                } else {
                    csv.push(',');
                }
            }
            let met =
                s.o.goals
                    .iter()
                    .enumerate()
                    .all(|(g, goal)| goal.met(vals[g]));
            let _ = writeln!(csv, ",{met}");
        }
    }
    out.write("tune-goal.csv", &csv)?;
    if let Some(b) = best {
        let mut table = s.scenario_of(b)?.table;
        let setting = s.setting(b, false);
        let head = format!(
            "# The best setting found by blkcg-sim tune {}: {}\n",
            s.o.file.given(),
            setting.join(" ")
        );
        table.remove("variant");
        let body = toml::to_string(&table).map_err(|e| format!("best.toml: {e}"))?;
        out.write("best.toml", &format!("{head}{body}"))?;
    }
    let mut exhibits = Exhibits::default();
    front(&out, s, judged, best, &mut exhibits, notify);
    write_command_page(
        &out,
        &format!("tune {}", s.o.file.given()),
        text,
        &exhibits,
        &[(
            "tune-goal",
            "every point tried: the goal's figure against the objective",
        )],
        &["tune-goal.txt", "tune-goal.csv", "best.toml"],
    )
}

/// The front picture: the objective (or the second goal's figure) against the first
/// goal's figure, met and missed points, the bound and the best point.
fn front(
    out: &OutDir,
    s: &Search,
    judged: &[Judged],
    best: Option<usize>,
    exhibits: &mut Exhibits,
    notify: &dyn Notify,
) {
    let g0 = &s.o.goals[0];
    let (y_label, y_of): (String, Box<dyn Fn(usize) -> Option<f64>>) = match &s.o.objective {
        Some(ob) => (
            format!("{} ({}, mean over seeds)", ob.figure.text, ob.figure.unit()),
            Box::new(|i| judged[i].objective.map(|(m, _)| m)),
        ),
        None => (
            "relative margin to the goals (worst seed)".into(),
            Box::new(|i| Some(judged[i].slack)),
        ),
    };
    let point = |i: usize| -> Option<(f64, f64, f64, f64)> {
        let x = judged[i].worst[0];
        let sd = judged[i].objective.map_or(0.0, |(_, sd)| sd);
        (x.is_finite())
            .then_some(())
            .and(y_of(i))
            .map(|y| (x, y, 0.0, sd))
    };
    let of = |met: bool| -> Vec<(f64, f64, f64, f64)> {
        (0..judged.len())
            .filter(|&i| judged[i].met == met)
            .filter_map(point)
            .collect()
    };
    let (met, missed) = (of(true), of(false));
    // the trade-off's front: every point no other beats on both axes (the goal's figure
    // toward its bound's good side, the objective toward its sense)
    let x_low_good = g0.op.is_upper();
    let y_high_good = s.o.objective.as_ref().is_none_or(|o| o.maximize);
    let mut all: Vec<(f64, f64, f64, f64)> = met.iter().chain(&missed).copied().collect();
    all.sort_by(|a, b| {
        let (ax, bx) = if x_low_good { (a.0, b.0) } else { (-a.0, -b.0) };
        let (ay, by) = if y_high_good {
            (-a.1, -b.1)
        } else {
            (a.1, b.1)
        };
        ax.total_cmp(&bx).then(ay.total_cmp(&by))
    });
    let mut pareto: Vec<(f64, f64, f64, f64)> = Vec::new();
    for p in all {
        let better = |y: f64, than: f64| if y_high_good { y > than } else { y < than };
        if pareto.last().is_none_or(|q| better(p.1, q.1)) {
            pareto.push((p.0, p.1, 0.0, 0.0));
        }
    }
    let ys: Vec<f64> = met.iter().chain(&missed).map(|p| p.1).collect();
    let (lo, hi) = (
        ys.iter().copied().fold(f64::INFINITY, f64::min),
        ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let mut marks = vec![
        Marks {
            name: "meets the goal".into(),
            points: met,
            joined: false,
            size: 4,
        },
        Marks {
            name: "misses it".into(),
            points: missed,
            joined: false,
            size: 4,
        },
    ];
    if pareto.len() > 1 {
        marks.push(Marks {
            name: "the front (no point beats these on both)".into(),
            points: pareto,
            joined: true,
            size: 0,
        });
    }
    if lo.is_finite() {
        marks.push(Marks {
            name: format!("the bound: {}", g0.text()),
            points: vec![(g0.bound, lo, 0.0, 0.0), (g0.bound, hi, 0.0, 0.0)],
            joined: true,
            size: 1,
        });
    }
    if let Some(p) = best.and_then(point) {
        marks.push(Marks {
            name: "best".into(),
            points: vec![p],
            joined: false,
            size: 9,
        });
    }
    let xs: Vec<f64> = judged
        .iter()
        .map(|j| j.worst[0])
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let spread =
        xs.iter().copied().fold(0.0, f64::max) / xs.iter().copied().fold(f64::INFINITY, f64::min);
    let log_x = g0.figure.stat.is_latency() && spread > 20.0;
    let title = format!("tune {}: every point tried", s.o.file.given());
    let x_label = format!("{} ({}, worst seed)", g0.figure.text, g0.figure.unit());
    if let Err(e) = plot_marks(
        &out.path().join("tune-goal"),
        &title,
        &x_label,
        &y_label,
        log_x,
        &marks,
    ) {
        notify.warning(&format!("plot not drawn: {e}"));
    }
    exhibits.marks(&title, &x_label, &y_label, log_x, &marks);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_parse_with_dotted_cgroups_and_percentiles() {
        let f = Figure::parse("web.read.clat_p99").unwrap();
        assert_eq!(
            (f.who.as_str(), f.dir, f.stat),
            ("web", Dir::Read, Stat::ClatPct(99.0))
        );
        let f = Figure::parse("a.b/c.write.clat_p99.9").unwrap();
        assert_eq!(
            (f.who.as_str(), f.dir, f.stat),
            ("a.b/c", Dir::Write, Stat::ClatPct(99.9))
        );
        let f = Figure::parse("batch.total.bw").unwrap();
        assert_eq!((f.dir, f.stat), (Dir::Total, Stat::Bw));
        for bad in [
            "web",
            "web.read",
            ".read.bw",
            "web.up.bw",
            "web.read.clat_p100",
            "web.read.speed",
        ] {
            let e = Figure::parse(bad).unwrap_err();
            assert!(e.contains("WHO.DIR.STAT"), "{bad}: {e}");
        }
    }

    #[test]
    fn goals_take_units_of_their_figure() {
        let g = Goal::parse("web.read.clat_p99 <= 5ms").unwrap();
        assert_eq!((g.op, g.bound), (Op::Le, 5.0));
        assert_eq!(Goal::parse("web.read.clat_p99<500us").unwrap().bound, 0.5);
        assert_eq!(
            Goal::parse("b.write.bw >= 10MB/s").unwrap().bound,
            1e7 / 1048576.0
        );
        assert_eq!(Goal::parse("b.write.iops > 3k").unwrap().bound, 3000.0);
        assert!(Goal::parse("web.read.clat_p99 <= 5MiB/s").is_err());
        assert!(
            Goal::parse("web.read.clat_p99 = 5")
                .unwrap_err()
                .contains("OP")
        );
        // a starved cgroup misses a latency goal
        assert!(!g.met(f64::INFINITY));
        assert_eq!(g.worst(&[3.0, 6.0, 4.0]), 6.0);
        assert_eq!(
            Goal::parse("b.write.bw >= 1").unwrap().worst(&[3.0, 6.0]),
            3.0
        );
        assert_eq!(g.margin(4.0), 1.0);
    }

    #[test]
    fn ranges_expand_as_written() {
        assert_eq!(
            expand_over("cgroup.w.io.weight=100..500:100").unwrap(),
            "cgroup.w.io.weight=100,200,300,400,500"
        );
        assert_eq!(expand_over("k=1..2/3").unwrap(), "k=1,2");
        assert_eq!(expand_over("k=1.0..2.0/3").unwrap(), "k=1,1.5,2");
        assert_eq!(expand_over("k=0..10/3").unwrap(), "k=0,5,10");
        assert_eq!(expand_over("k=a,b").unwrap(), "k=a,b");
        for bad in [
            "k",
            "k=5..1:1",
            "k=1..5",
            "k=1..5:0",
            "k=1..x:1",
            "k=1..5/1",
            "k=0..1e9:1",
        ] {
            assert!(expand_over(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn systemd_has_the_cgroup_lines_it_can_write() {
        assert_eq!(
            systemd_directives("io.weight", "default 300", "sdb"),
            Some(vec!["IOWeight=300".into()])
        );
        assert_eq!(
            systemd_directives("io.max", "8:16 wiops=500 rbps=max", "sdb"),
            Some(vec![
                "IOWriteIOPSMax=/dev/sdb 500".into(),
                "IOReadBandwidthMax=/dev/sdb infinity".into()
            ])
        );
        assert_eq!(
            systemd_directives("io.latency", "8:16 target=5000", "sdb"),
            Some(vec!["IODeviceLatencyTargetSec=/dev/sdb 5000us".into()])
        );
        assert_eq!(systemd_directives("io.prio.class", "rt", "sdb"), None);
    }
}
