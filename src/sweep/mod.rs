//! `blkcg-sim sweep`: one scenario over the cartesian product of values for any of its
//! keys, each point on every core, results streamed as JSON lines and CSV.
//!
//! Design
//! ------
//! A sweep is a list of axes (`--set KEY=V1,V2,...`, grammar in [`keys`]) and a number
//! of seeds. Point `p` takes one value per axis — the first axis varies slowest, as
//! nested loops written in the order given — and run `r` is point `r / seeds` with
//! seed `scenario seed + r % seeds`. A point's scenario is the base scenario's table
//! with the point's variant merged in (a scenario with `[[variant]]`s sweeps them as an
//! implicit first axis `variant`, as `run` runs them all) and each axis's value written
//! in, then built by the very `prepare()` and `simulate()` of `run`: a point is
//! byte-identical to the scenario run alone with those values set by hand.
//!
//! Before anything runs, every key is parsed and every value is prepared once on its
//! own (in each variant swept), so a bad key or value stops the sweep naming it. Runs
//! go to [`pool::ordered`]: `--jobs` workers, results in run order whatever the number
//! of workers, streamed as they complete. `--shard I/N` keeps the I-th of N contiguous
//! slices of the runs (sizes differ by at most one), so the shards' outputs, in shard
//! order, concatenate to exactly the unsharded output (only shard 1 writes the CSV
//! header; records carry the global point index). Nothing in an output depends on
//! wall time or on the machine.
//!
//! A `[[schedule]]` entry writing a swept interface line (or its token) replaces the
//! point's value from its `at` on, so the record would name a value not in force for
//! the whole run: [`schedule_rewrite`] finds such an entry, `sweep` warns of it, and the
//! tuners (`tune --goal`, `tune qos`, `tune iomax`) refuse it.
//!
//! - `keys.rs`   — the KEY grammar and how a value is written into a scenario table;
//! - `record.rs` — one run as a JSON line and CSV rows;
//! - `pool.rs`   — ordered parallel runs (also under `tune`);
//! - here        — the plan (a point computed from its index, never all held) and the
//!   pictures (per-axis sums as runs finish); the command is `crate::cli::sweep`.

pub mod keys;
pub mod pool;
pub mod record;

use keys::{Axis, Target};
use record::{Record, Values};

use crate::notify::Notify;
use crate::progress::{Cancel, Reporter};
use crate::report::charts::Exhibits;
use crate::report::outdir::OutDir;
use crate::report::plot::{Panel, Picture, Series, plot_picture};
use crate::report::record::RecordOptions;
use crate::run::{VariantRun, prepare, simulate};
use crate::scenario::Scenario;

/// The most runs one sweep may plan (a typo in a value list, not a real plan).
const MAX_RUNS: usize = 100_000_000;

/// `--shard I/N`: the I-th (from 1) of N contiguous slices of the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "--shard `{s}`: expected I/N with 1 <= I <= N (e.g. 3/8; from a 0-based array index: $((INDEX+1))/N)"
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The runs of this shard among `runs`.
    pub fn range(self, runs: usize) -> std::ops::Range<usize> {
        let at = |k: usize| (k as u128 * runs as u128 / self.count as u128) as usize;
        at(self.index - 1)..at(self.index)
    }
}

/// A planned sweep: the scenario, its axes and seeds.
pub struct Sweep {
    sc: Scenario,
    /// The axes, in the order given (with `variant` first when implicit).
    pub axes: Vec<Axis>,
    seeds: u32,
}

impl Sweep {
    /// Plan the sweep of `sc` over `sets` (each `KEY=V1,V2,...`) and `seeds` seeds;
    /// every key and value is checked (see the module's design).
    pub fn new(sc: &Scenario, sets: &[String], seeds: u32) -> Result<Sweep, String> {
        let sweep = Sweep::unchecked(sc, sets, seeds)?;
        sweep.check_each_value()?;
        Ok(sweep)
    }

    /// The plan of [`Sweep::new`] with its keys parsed but no value prepared: for a
    /// caller that prepares its one point itself and checks the values only when that
    /// point is refused ([`Sweep::check_each_value`] then names the culprit), as
    /// `api::run` with overrides does.
    pub(crate) fn unchecked(sc: &Scenario, sets: &[String], seeds: u32) -> Result<Sweep, String> {
        if seeds == 0 {
            return Err("--seeds 0: at least one seed (the scenario's) is run".into());
        }
        let mut axes = Vec::new();
        for s in sets {
            let a = Axis::parse(s)?;
            if axes.iter().any(|b: &Axis| b.key == a.key) {
                return Err(format!(
                    "--set {}: the key is set twice; give all its values in one --set",
                    a.key
                ));
            }
            if let Some(e) = axes.iter().find_map(|b| keys::conflict(b, &a)) {
                return Err(e);
            }
            axes.push(a);
        }
        let variants = sc.variants();
        match axes.iter().find(|a| a.target == Target::Variant) {
            Some(a) => {
                for v in &a.values {
                    if !variants.contains(v) {
                        return Err(format!(
                            "--set variant={v}: {} has no variant `{v}`; it has: {}",
                            sc.file,
                            if variants.is_empty() {
                                "none".to_string()
                            } else {
                                variants.join(", ")
                            }
                        ));
                    }
                }
            }
            None if !variants.is_empty() => axes.insert(
                0,
                Axis {
                    key: "variant".into(),
                    target: Target::Variant,
                    values: variants,
                },
            ),
            None => {}
        }
        let sweep = Sweep {
            sc: sc.clone(),
            axes,
            seeds,
        };
        let runs = sweep
            .axes
            .iter()
            .try_fold(seeds as usize, |n, a| n.checked_mul(a.values.len()))
            .filter(|&n| n <= MAX_RUNS);
        if runs.is_none() {
            return Err(format!(
                "the sweep plans more than {MAX_RUNS} runs (the product of the value counts times --seeds)"
            ));
        }
        Ok(sweep)
    }

    /// How many points (value combinations).
    pub fn points(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// How many runs (points × seeds).
    pub fn runs(&self) -> usize {
        self.points() * self.seeds as usize
    }

    /// The value index on each axis of point `p`.
    pub fn indices(&self, p: usize) -> Vec<usize> {
        let mut idx = vec![0; self.axes.len()];
        let mut rest = p;
        for (i, a) in self.axes.iter().enumerate().rev() {
            idx[i] = rest % a.values.len();
            rest /= a.values.len();
        }
        idx
    }

    /// Point `p`'s values, axis by axis.
    pub fn values(&self, p: usize) -> Values {
        Values(
            self.axes
                .iter()
                .zip(self.indices(p))
                .map(|(a, i)| (a.key.clone(), a.values[i].clone()))
                .collect(),
        )
    }

    /// The scenario with, on each axis, the value of index `idx[axis]` written in, or
    /// where that is None the scenario's own (see the design).
    fn scenario_with(&self, idx: &[Option<usize>]) -> Result<Scenario, String> {
        let variant = self
            .axes
            .iter()
            .zip(idx)
            .find_map(|(a, i)| match (&a.target, i) {
                (Target::Variant, Some(i)) => Some(a.values[*i].as_str()),
                _ => None,
            });
        let mut table = self.sc.merged(variant).map_err(|e| e.to_string())?;
        for (a, i) in self.axes.iter().zip(idx) {
            if let Some(i) = i {
                a.apply(&mut table, &a.values[*i])?;
            }
        }
        Ok(Scenario {
            table,
            ..self.sc.clone()
        })
    }

    /// Point `p`'s scenario: what a person would write by hand for it.
    pub fn scenario(&self, p: usize) -> Result<Scenario, String> {
        let idx: Vec<Option<usize>> = self.indices(p).into_iter().map(Some).collect();
        self.scenario_with(&idx)
    }

    /// Prepare every value of every axis alone (in each variant swept), so a bad one
    /// stops the sweep before anything runs, naming its key.
    pub(crate) fn check_each_value(&self) -> Result<(), String> {
        let variant_axis = self.axes.iter().position(|a| a.target == Target::Variant);
        let variants = variant_axis.map_or(1, |i| self.axes[i].values.len());
        for vi in 0..variants {
            let mut idx = vec![None; self.axes.len()];
            if let Some(i) = variant_axis {
                idx[i] = Some(vi);
            }
            let name = variant_axis.map(|i| self.axes[i].values[vi].as_str());
            let in_variant = name.map(|v| format!(" (variant {v})")).unwrap_or_default();
            let check = |idx: &[Option<usize>], what: &str| -> Result<(), String> {
                let sc = self.scenario_with(idx)?;
                prepare(&sc, None, None, None, false)
                    .map(drop)
                    .map_err(|e| format!("{what}{in_variant}: {e}"))
            };
            check(&idx, "the scenario")?;
            for (ai, a) in self.axes.iter().enumerate() {
                if a.target == Target::Variant {
                    continue;
                }
                for k in 0..a.values.len() {
                    let mut one = idx.clone();
                    one[ai] = Some(k);
                    check(&one, &format!("--set {}={}", a.key, a.values[k]))?;
                }
            }
        }
        Ok(())
    }

    /// Run `r`: point `r / seeds` with seed `scenario seed + r % seeds`; once `cancel`
    /// is set, it does not start, or ends early, with `progress::CANCELLED`.
    pub fn run(&self, r: usize, cancel: &Cancel) -> Result<(Record, VariantRun), String> {
        cancel.check()?;
        let p = r / self.seeds as usize;
        let values = self.values(p);
        let at = |e: String| {
            let vals: Vec<String> = values.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("point {p} ({}): {e}", vals.join(" "))
        };
        let sc = self.scenario(p).map_err(at)?;
        let base = sc
            .table
            .get("seed")
            .and_then(toml::Value::as_integer)
            .unwrap_or(1) as u64;
        let seed = base + (r % self.seeds as usize) as u64;
        let prepared = prepare(&sc, None, None, Some(seed), false).map_err(at)?;
        let record = RecordOptions::default();
        let run = simulate(&sc, prepared, &Reporter::Quiet, record, cancel).map_err(at)?;
        Ok((Record::of(p, seed, values.clone(), &run), run))
    }
}

/// An interface line a sweep or a tuner writes for every run: `file` of `cgroup`
/// (None: the root), or only its `token`.
pub struct LineTarget<'a> {
    pub cgroup: Option<&'a str>,
    pub file: &'a str,
    pub token: Option<&'a str>,
}

/// A `[[schedule]]` entry that writes a line a sweep or tuner sets for every run.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// When, in seconds.
    pub at_s: f64,
    /// The entry's place (file:line) and the line it writes.
    pub place: String,
    pub line: String,
    what: String,
}

impl Rewrite {
    /// How long the value set for the run holds: `only for the first 5.000 s of each
    /// run`, `at no time of the run`.
    pub fn held(&self) -> String {
        if self.at_s > 0.0 {
            format!("only for the first {:.3} s of each run", self.at_s)
        } else {
            "at no time of the run".to_string()
        }
    }
}

impl std::fmt::Display for Rewrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the [[schedule]] entry at {:.3} s ({}) writes `{}` to {}",
            self.at_s, self.place, self.line, self.what
        )
    }
}

/// The first `[[schedule]]` entry of `table` (the scenario's table with `variant`
/// merged in) that writes `target` — for a token, a line with that token, as
/// `tg_set_limit()` and `ioc_qos_write()` change only the tokens written — from its
/// `at` on replacing the value a sweep or tuner set for the whole run.
pub fn schedule_rewrite(
    sc: &Scenario,
    table: &toml::Table,
    variant: Option<&str>,
    target: &LineTarget,
) -> Option<Rewrite> {
    use crate::scenario::{BareNumber, parse_duration};
    use toml::Value;
    let entries = table.get("schedule").and_then(Value::as_array)?;
    let owner = target.cgroup.unwrap_or("").trim_matches('/');
    let file = target.file;
    entries.iter().enumerate().find_map(|(i, e)| {
        let of = e.get("cgroup").and_then(Value::as_str).unwrap_or("");
        if of.trim_matches('/') != owner {
            return None;
        }
        let lines: Vec<&str> = match e.get(file) {
            Some(Value::String(l)) => vec![l.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => return None,
        };
        let line = lines.into_iter().find(|l| {
            target.token.is_none_or(|t| {
                l.split_whitespace()
                    .any(|w| w.split_once('=').is_some_and(|(k, _)| k == t))
            })
        })?;
        // an `at` the scenario refuses is refused with the scenario's own message
        let at = e
            .get("at")
            .and_then(|v| parse_duration(v, BareNumber::Seconds).ok())?;
        let i = i.to_string();
        Some(Rewrite {
            at_s: at as f64 / 1e9,
            place: sc
                .place(sc.line_in(variant, &["schedule", &i, file]))
                .to_string(),
            line: line.to_string(),
            what: format!(
                "{}'s {file}{}",
                target
                    .cgroup
                    .map_or("the root".to_string(), |c| format!("`{c}`")),
                target
                    .token
                    .map(|t| format!(" (its {t})"))
                    .unwrap_or_default()
            ),
        })
    })
}

impl Sweep {
    /// Each axis's value that a `[[schedule]]` entry rewrites during a run (in each
    /// variant swept): `(key, what the entry does)`, for `sweep` to warn of and a
    /// tuner to refuse — the records would name a value that was not in force.
    pub fn rewritten_by_schedule(&self) -> Result<Vec<(String, Rewrite)>, String> {
        let variant_axis = self.axes.iter().position(|a| a.target == Target::Variant);
        let variants: Vec<Option<&str>> = match variant_axis {
            Some(i) => self.axes[i]
                .values
                .iter()
                .map(|v| Some(v.as_str()))
                .collect(),
            None => vec![None],
        };
        let mut found = Vec::new();
        for v in variants {
            let table = self.sc.merged(v).map_err(|e| e.to_string())?;
            for a in &self.axes {
                let Target::Line {
                    cgroup,
                    file,
                    token,
                } = &a.target
                else {
                    continue;
                };
                let target = LineTarget {
                    cgroup: cgroup.as_deref(),
                    file,
                    token: token.as_deref(),
                };
                if let Some(r) = schedule_rewrite(&self.sc, &table, v, &target)
                    && !found.iter().any(|(k, _): &(String, Rewrite)| *k == a.key)
                {
                    found.push((a.key.clone(), r));
                }
            }
        }
        Ok(found)
    }

    /// What `sweep` (and the library's sweep) warns of: each
    /// [`Sweep::rewritten_by_schedule`] as one line.
    pub fn schedule_warnings(&self) -> Result<Vec<String>, String> {
        Ok(self
            .rewritten_by_schedule()?
            .into_iter()
            .map(|(key, r)| {
                format!(
                    "--set {key}: {r}, so each value swept is in force {}: the records name the value set at 0 s",
                    r.held()
                )
            })
            .collect())
    }
}

/// Pictures' files: one per axis, `sweep-axis-N.{png,svg}`, for the first this many.
pub const MAX_PICTURES: usize = 16;

/// What the pictures need of the runs, gathered as they finish: for each pictured
/// axis, each job (in the order of its first run on the axis's line) and each of the
/// axis's values, the sum and count of each figure over the runs on the line (every
/// other axis at its first value). Its size is the axes' values times the jobs, never
/// the number of runs.
pub struct Pictures {
    axes: Vec<AxisSums>,
}

/// One axis's sums: jobs, then per job and value the three figures' (sum, count).
#[derive(Default)]
struct AxisSums {
    jobs: Vec<String>,
    sums: Vec<Vec<[(f64, usize); 3]>>,
}

type Get = fn(&record::JobFigures) -> Option<f64>;
/// The pictures' figures: label, getter, log scale.
const FIGURES: [(&str, Get, bool); 3] = [
    ("IOPS", |j| Some(j.iops), false),
    ("MiB/s", |j| Some(j.mib_s), false),
    ("clat p99 (ms)", |j| j.clat_p99_ms, true),
];

impl Pictures {
    /// Nothing gathered yet, for `sweep`'s pictured axes.
    pub fn new(sweep: &Sweep) -> Self {
        let n = sweep.axes.len().min(MAX_PICTURES);
        Pictures {
            axes: (0..n).map(|_| AxisSums::default()).collect(),
        }
    }

    /// One finished run, handed in run order.
    pub fn add(&mut self, sweep: &Sweep, r: &Record) {
        let idx = sweep.indices(r.point);
        // the sum as `Iterator::sum` starts it, so a mean is what summing the kept
        // figures in run order gave
        let zero: f64 = std::iter::empty::<f64>().sum();
        for (ai, sums) in self.axes.iter_mut().enumerate() {
            if !idx.iter().enumerate().all(|(j, &i)| j == ai || i == 0) {
                continue;
            }
            let k = idx[ai];
            for j in &r.jobs {
                let at = match sums.jobs.iter().position(|n| *n == j.job) {
                    Some(at) => at,
                    None => {
                        sums.jobs.push(j.job.clone());
                        let values = sweep.axes[ai].values.len();
                        sums.sums.push(vec![[(zero, 0); 3]; values]);
                        sums.jobs.len() - 1
                    }
                };
                for (f, (_, get, _)) in FIGURES.iter().enumerate() {
                    if let Some(y) = get(j) {
                        let s = &mut sums.sums[at][k][f];
                        s.0 += y;
                        s.1 += 1;
                    }
                }
            }
        }
    }
}

/// One picture per axis (the first [`MAX_PICTURES`]): each job's IOPS, MiB/s and clat
/// p99 against the axis's values, the other axes at their first value, mean over
/// seeds, each swept value marked. Values that are not all numbers are placed at
/// their index.
/// Each picture's panels also go to `exhibits`, for report.html.
pub fn draw(
    sweep: &Sweep,
    pictures: &Pictures,
    out: &OutDir,
    exhibits: &mut Exhibits,
    notify: &dyn Notify,
) {
    for ((ai, axis), sums) in sweep.axes.iter().enumerate().zip(&pictures.axes) {
        let numeric: Option<Vec<f64>> = axis.values.iter().map(|v| v.parse().ok()).collect();
        let x_of = |k: usize| numeric.as_ref().map_or(k as f64, |xs| xs[k]);
        let panels: Vec<Panel> = FIGURES
            .iter()
            .enumerate()
            .map(|(f, (label, _, log_y))| Panel {
                y_label: label.to_string(),
                log_y: *log_y,
                series: sums
                    .jobs
                    .iter()
                    .zip(&sums.sums)
                    .map(|(job, by_value)| Series {
                        name: job.clone(),
                        points: by_value
                            .iter()
                            .enumerate()
                            .filter(|(_, s)| s[f].1 > 0)
                            .map(|(k, s)| (x_of(k), s[f].0 / s[f].1 as f64))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        let others: Vec<String> = sweep
            .axes
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != ai)
            .map(|(_, a)| format!("{}={}", a.key, a.values[0]))
            .collect();
        let title = if others.is_empty() {
            format!("sweep over {}", axis.key)
        } else {
            format!("sweep over {} ({})", axis.key, others.join(" "))
        };
        let x_label = match &numeric {
            Some(_) => axis.key.clone(),
            None => {
                let names: Vec<String> = axis
                    .values
                    .iter()
                    .enumerate()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                format!("{} ({})", axis.key, names.join(", "))
            }
        };
        let base = out.path().join(format!("sweep-axis-{}", ai + 1));
        // a marker on each swept value: the lines between them are not measured
        let pic = Picture {
            markers: true,
            ..Picture::new(&title, &x_label, &panels)
        };
        if let Err(e) = plot_picture(&base, &pic) {
            notify.warning(&format!("plot not drawn: {e}"));
        }
        exhibits.panels(&title, &x_label, &panels, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SC: &str = r#"
name = "t"
seed = 5
[device]
model = "nullb"
irqmode = 2
completion_nsec = 50000
[cgroup.a]
"io.max" = "252:0 riops=100"
fio = "fio --name=a --rw=randread --bs=4k --iodepth=4 --ioengine=libaio --runtime=1 --time_based"
"#;

    fn sweep(sets: &[&str], seeds: u32) -> Result<Sweep, String> {
        let sc = Scenario::parse(SC, "t.toml").unwrap();
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Sweep::new(&sc, &sets, seeds)
    }

    #[test]
    fn shards_cover_the_runs_once_in_order() {
        for runs in [0, 1, 7, 100] {
            for count in 1..=9 {
                let mut next = 0;
                for index in 1..=count {
                    let r = Shard { index, count }.range(runs);
                    assert_eq!(r.start, next);
                    assert!(r.len() <= runs / count + 1);
                    next = r.end;
                }
                assert_eq!(next, runs);
            }
        }
        assert!("0/4".parse::<Shard>().is_err());
        assert!("5/4".parse::<Shard>().is_err());
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
    }

    #[test]
    fn points_vary_the_last_axis_fastest() {
        let s = sweep(
            &["cgroup.a.io.max:riops=10,20,30", "cgroup.a.fio:iodepth=1,2"],
            2,
        )
        .unwrap();
        assert_eq!((s.points(), s.runs()), (6, 12));
        assert_eq!(s.indices(0), [0, 0]);
        assert_eq!(s.indices(1), [0, 1]);
        assert_eq!(s.indices(5), [2, 1]);
        let sc = s.scenario(3).unwrap();
        assert_eq!(
            sc.table["cgroup"]["a"]["io.max"].as_str(),
            Some("252:0 riops=20")
        );
        assert!(
            sc.table["cgroup"]["a"]["fio"]
                .as_str()
                .unwrap()
                .contains("--iodepth=2")
        );
        // seeds from the scenario's
        let (rec, _) = s.run(3, &Cancel::default()).unwrap();
        assert_eq!((rec.point, rec.seed), (1, 6));
    }

    #[test]
    fn bad_values_are_refused_before_anything_runs_naming_the_key() {
        for (set, says) in [
            ("cgroup.a.io.max:riops=-3", "--set cgroup.a.io.max:riops=-3"),
            ("device.irqmode=7", "--set device.irqmode=7"),
            ("cgroup.a.fio:bs=huge", "--set cgroup.a.fio:bs=huge"),
            ("kernel.version=2.6", "--set kernel.version=2.6"),
            ("variant=x", "no variant `x`"),
            ("cgroup.b.io.max=252:0 riops=1", "no cgroup `b`"),
        ] {
            let e = sweep(&[set], 1)
                .err()
                .unwrap_or_else(|| panic!("{set} accepted"));
            assert!(e.contains(says), "{set}: {e}");
        }
        // two axes writing the same line, fio text, option or table: one would undo
        // the other, and a record would name a value that was not in force
        for (sets, names) in [
            (
                &[
                    "cgroup.a.fio:iodepth=1,16",
                    "cgroup.a.fio=fio --name=a --rw=randread --iodepth=2 --runtime=1 --time_based",
                ][..],
                ["--set cgroup.a.fio and", "--set cgroup.a.fio:iodepth"],
            ),
            (
                &[
                    "cgroup.a.io.max:riops=5,50",
                    "cgroup.a.io.max=252:0 riops=7",
                ][..],
                ["--set cgroup.a.io.max and", "--set cgroup.a.io.max:riops"],
            ),
            (
                &["cgroup.a.fio:bs=4k", "cgroup.a.fio:blocksize=8k"][..],
                ["--set cgroup.a.fio:blocksize", "--set cgroup.a.fio:bs"],
            ),
            (
                &["device.irqmode=1,2", "device.model=nullb"][..],
                ["--set device.model", "--set device.irqmode"],
            ),
        ] {
            let e = sweep(sets, 1)
                .err()
                .unwrap_or_else(|| panic!("{sets:?} accepted"));
            assert!(!e.contains('\n'), "{sets:?}: not one line: {e}");
            for n in names {
                assert!(e.contains(n), "{sets:?}: {e}");
            }
        }
        // tokens of one line, options of one fio text, and a new model before its
        // device's keys compose: each is in force
        sweep(
            &[
                "cgroup.a.io.max:riops=5,50",
                "cgroup.a.io.max:wiops=7",
                "cgroup.a.fio:iodepth=1,2",
                "cgroup.a.fio:bs=8k",
            ],
            1,
        )
        .unwrap();
        assert!(
            sweep(&["device.irqmode=1,2", "device.irqmode=0"], 1)
                .err()
                .unwrap()
                .contains("twice")
        );
    }
}
