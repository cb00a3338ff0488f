//! What protecting a cgroup means, shared by `tune qos` and `tune iomax`: a run's
//! figures for the protected cgroup, its isolation against its run alone, the checks
//! of `--protect`, and running a tuner's scenarios.
//!
//! Design
//! ------
//! A tuner runs kinds of scenarios (the protected cgroup alone, a reference, then each
//! setting tried) with every seed: run `r` is kind `r / seeds` with seed
//! `scenario seed + r % seeds`, all on [`pool::ordered`]. Each run becomes a
//! [`Sample`]: every job's I/O over the run ([`Totals`], resctl's MOF-like "work"), the
//! protected cgroup's clat p99/p99.9 over all its IOs, its jobs' completions per ≥ 1 s
//! window (whole bins of the run's job timelines, aligned to simulated time), and each
//! request's time on the device (read, write p99). A [`Row`] resolves a sample against
//! the same seed's alone run — isolation, resctl-bench's `MemHog::calc_isol()`: per
//! window the completions / (alone IOPS × window), capped at 1, then a percentile
//! (nearest rank) and the mean — and against the reference (work lost). A protected
//! "cgroup" is its whole subtree; its alone run keeps the subtree's fio and empties
//! every other cgroup's.
//!
//! What was in force: each run keeps its timelines' rows (`RecordOptions::keep`), and
//! the tuner's own `measure` reads the controller's (blk-iocost's vrate per period,
//! blk-throttle's queues per sample) beside the [`Sample`]. A tuner writes one
//! interface line for every run; a `[[schedule]]` entry of the scenario writing the
//! same line (for a token: a line with that token, as `tg_set_limit()` and
//! `ioc_qos_write()` change only the tokens written) would replace the value tried
//! from its `at` on — for the whole run at 0 s — so the rows would name a value that
//! was not in force: [`Protection::refuse_rewrites`] refuses it before anything runs,
//! naming the entry's line and the part of the run the value would have held.
//!
//! What a tuner prints to write is runnable: `echo "LINE" > /sys/fs/cgroup/PATH/FILE`
//! for a machine, and [`ScenarioFile::sweep_command`] for the simulator — `blkcg-sim
//! sweep FILE --set KEY=VALUE ...`, one point, the scenario with those values written
//! in, with the tuner's seeds. It names a file: a built-in scenario is named
//! `NAME.toml`, after the `blkcg-sim scenarios NAME > NAME.toml` that writes it.

use std::path::PathBuf;

use toml::{Table, Value};

use crate::progress::{Cancel, Horizon, Reporter};
use crate::report::record::RecordOptions;
use crate::report::summary::fmt_figure;
use crate::run::{VariantRun, prepare, simulate};
use crate::scenario::Scenario;
use crate::sim::fio::stats::{LatHist, percentiles};
use crate::sweep::record::Totals;
use crate::sweep::{LineTarget, pool, schedule_rewrite};
use crate::workload::cmdline::shell_quote;

/// What every protecting tuner is asked: the scenario's file, `--variant`,
/// `--protect`, how isolation is judged (`--isol-pct`, `--isol-thr`), `--seeds`,
/// `--jobs`, `--output`.
pub struct ProtectOptions {
    /// How the printed commands name the scenario.
    pub file: ScenarioFile,
    pub variant: Option<String>,
    /// The cgroup to protect (its path).
    pub protect: String,
    /// Isolation percentile (resctl's `isol-pct`, "05") and threshold (`isol-thr`).
    pub isol_pct: f64,
    pub isol_thr: f64,
    pub seeds: u32,
    pub jobs: usize,
    pub output: Option<PathBuf>,
    pub progress: Reporter,
}

/// How a tuner's printed commands name its scenario (see the module's design).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScenarioFile {
    /// A file, by the path the user gave.
    Path(String),
    /// A built-in scenario, by its name.
    BuiltIn(String),
}

impl ScenarioFile {
    /// What names the scenario on a tuner's own command line: the path or the name.
    pub fn given(&self) -> &str {
        match self {
            ScenarioFile::Path(p) | ScenarioFile::BuiltIn(p) => p,
        }
    }

    /// The file the printed commands name: the path, or `NAME.toml` for a built-in.
    pub fn path(&self) -> String {
        match self {
            ScenarioFile::Path(p) => p.clone(),
            ScenarioFile::BuiltIn(n) => format!("{n}.toml"),
        }
    }

    /// For a built-in scenario, how to get the file the commands name.
    pub fn copy_note(&self) -> Option<String> {
        match self {
            ScenarioFile::Path(_) => None,
            ScenarioFile::BuiltIn(n) => Some(format!(
                "`{n}` is built in; to edit it and run the commands below: blkcg-sim scenarios {n} > {}",
                shell_quote(&self.path())
            )),
        }
    }

    /// `blkcg-sim sweep FILE [--set variant=V] --set KEY=VALUE ... --seeds N`: the
    /// scenario with these values written in, run as the tuner ran it.
    pub fn sweep_command(
        &self,
        variant: Option<&str>,
        sets: &[(&str, &str)],
        seeds: usize,
    ) -> String {
        // sweep's value grammar: `\,` is a comma inside a value
        let set = |k: &str, v: &str| {
            let v = v.replace('\\', "\\\\").replace(',', "\\,");
            format!(" --set {}", shell_quote(&format!("{k}={v}")))
        };
        let mut s = format!("blkcg-sim sweep {}", shell_quote(&self.path()));
        if let Some(v) = variant {
            s.push_str(&set("variant", v));
        }
        for (k, v) in sets {
            s.push_str(&set(k, v));
        }
        s.push_str(&format!(" --seeds {seeds}"));
        s
    }
}

/// `echo "LINE" > PATH`: writing an interface line on a machine, as a tuner prints
/// it (the line in double quotes, as the kernel's documentation writes them; single
/// quotes where the shell would expand something inside double ones).
pub fn echo_line(line: &str, path: &str) -> String {
    let quoted = if line.contains(['"', '$', '`', '\\', '!']) {
        shell_quote(line)
    } else {
        format!("\"{line}\"")
    };
    format!("echo {quoted} > {}", shell_quote(path))
}

/// A tuner's protected cgroup, the others, and how it judges isolation.
pub struct Protection {
    /// The scenario's table with the chosen variant merged in.
    pub base: Table,
    /// The chosen variant.
    pub variant: Option<String>,
    /// The protected cgroup's path.
    pub protect: String,
    /// The cgroups that run fio outside it.
    pub others: Vec<String>,
    pub seeds: usize,
    /// Isolation percentile (resctl's `isol-pct`, "05"); the threshold is the
    /// options' (`ProtectOptions::isol_thr`).
    pub isol_pct: f64,
}

/// Whether a cgroup's table runs fio.
fn runs_fio(c: &Value) -> bool {
    match c.get("fio") {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(a)) => a
            .iter()
            .any(|s| s.as_str().is_some_and(|s| !s.trim().is_empty())),
        _ => false,
    }
}

impl Protection {
    /// Check `--variant`, `--protect`, `--seeds`, `--isol-pct`/`--isol-thr` against `sc`.
    pub fn new(sc: &Scenario, o: &ProtectOptions) -> Result<Protection, String> {
        let (variant, seeds, isol_pct, isol_thr) =
            (o.variant.as_deref(), o.seeds, o.isol_pct, o.isol_thr);
        if variant.is_none() && !sc.variants().is_empty() {
            return Err(format!(
                "{}: the scenario has variants ({}); pick the one to tune with --variant",
                sc.file,
                sc.variants().join(", ")
            ));
        }
        let base = sc.merged(variant).map_err(|e| e.to_string())?;
        if seeds == 0 {
            return Err("--seeds 0: at least one seed is run".into());
        }
        if !(isol_pct > 0.0 && isol_pct <= 100.0 && isol_thr > 0.0 && isol_thr <= 1.0) {
            return Err(format!(
                "--isol-pct {isol_pct} --isol-thr {isol_thr}: a percentile in (0, 100] and a fraction in (0, 1]"
            ));
        }
        let protect = o.protect.trim_matches('/').to_string();
        let cgs = base.get("cgroup").and_then(Value::as_table);
        let list = |keep: &dyn Fn(&str) -> bool| -> Vec<String> {
            cgs.map(|c| {
                c.iter()
                    .filter(|(n, v)| keep(n) && runs_fio(v))
                    .map(|(n, _)| n.clone())
                    .collect()
            })
            .unwrap_or_default()
        };
        if list(&|n| in_subtree(n, &protect)).is_empty() {
            return Err(format!(
                "--protect {protect}: {} has no cgroup `{protect}` running fio (itself or below it); its cgroups: {}",
                sc.file,
                cgs.map(|c| c.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ));
        }
        let others = list(&|n| !in_subtree(n, &protect));
        if others.is_empty() {
            return Err(format!(
                "--protect {protect}: no other cgroup runs fio, so there is nothing to protect it from"
            ));
        }
        Ok(Protection {
            base,
            variant: variant.map(str::to_string),
            protect,
            others,
            seeds: seeds as usize,
            isol_pct,
        })
    }

    /// `t` with every cgroup outside the protected one running no fio.
    pub fn alone(&self, t: &mut Table) {
        if let Some(cgs) = t.get_mut("cgroup").and_then(Value::as_table_mut) {
            for (name, cg) in cgs.iter_mut() {
                if !in_subtree(name, &self.protect)
                    && let Some(c) = cg.as_table_mut()
                    && c.contains_key("fio")
                {
                    c.insert("fio".into(), Value::String(String::new()));
                }
            }
        }
    }

    /// Refuse a `[[schedule]]` entry that writes `file` of `cgroup` (None: the root) —
    /// with `token`, only one whose line has it — since the tuner writes that line for
    /// every run (see the module's design); `key` names what the tuner sweeps.
    pub fn refuse_rewrites(
        &self,
        sc: &Scenario,
        key: &str,
        cgroup: Option<&str>,
        file: &str,
        token: Option<&str>,
    ) -> Result<(), String> {
        let target = LineTarget {
            cgroup,
            file,
            token,
        };
        match schedule_rewrite(sc, &self.base, self.variant.as_deref(), &target) {
            Some(r) => Err(format!(
                "{key}: {r}, so each value tried would be in force {}; tune a copy of the scenario without that entry",
                r.held()
            )),
            None => Ok(()),
        }
    }

    /// Run `kinds` kinds of scenario with every seed (see the module's design):
    /// `table_of(kind, seed)` is the scenario's table, and `measure(kind, run)` what
    /// the tuner reads of each run besides its [`Sample`]; `o` gives the workers and
    /// the progress shown under `label`. The first and the last kind are prepared
    /// before anything runs, so what the kernel refuses stops the tuner early.
    pub fn run<M: Send>(
        &self,
        sc: &Scenario,
        o: &ProtectOptions,
        kinds: usize,
        label: &str,
        table_of: impl Fn(usize, u64) -> Result<Table, String> + Sync,
        measure: impl Fn(usize, &VariantRun) -> M + Sync,
    ) -> Result<(Vec<Sample>, Vec<M>), String> {
        let base_seed = self
            .base
            .get("seed")
            .and_then(Value::as_integer)
            .unwrap_or(1) as u64;
        let scenario_of = |r: usize| -> Result<(u64, Scenario), String> {
            let seed = base_seed + (r % self.seeds) as u64;
            let mut table = table_of(r / self.seeds, seed)?;
            table.insert("seed".into(), Value::Integer(seed as i64));
            Ok((
                seed,
                Scenario {
                    table,
                    ..sc.clone()
                },
            ))
        };
        for r in [0, (kinds - 1) * self.seeds] {
            let (_, s) = scenario_of(r)?;
            prepare(&s, None, None, None, false)?;
        }
        let total = kinds * self.seeds;
        let mut shown = o.progress.start(label, Horizon::Count(total as u64));
        let mut samples = Vec::with_capacity(total);
        let mut measured = Vec::with_capacity(total);
        pool::ordered(
            total,
            o.jobs,
            |r| {
                let (seed, s) = scenario_of(r)?;
                let mut p = prepare(&s, None, None, None, false)?;
                p.record_device_latency();
                // the protected jobs' completions over time (their IOPS by window),
                // and the controllers' rows for `measure`
                let record = RecordOptions {
                    keep: true,
                    keep_job_timelines: true,
                    ..RecordOptions::default()
                };
                let run = simulate(&s, p, &Reporter::Quiet, record, &Cancel::default())?;
                Ok::<_, String>((
                    Sample::of(seed, &run, &self.protect),
                    measure(r / self.seeds, &run),
                ))
            },
            |_, s| {
                let (s, m) = s?;
                samples.push(s);
                measured.push(m);
                shown.update(0, samples.len() as u64);
                Ok(())
            },
        )?;
        shown.finish();
        Ok((samples, measured))
    }

    /// Each kind's rows, seed by seed: isolation against kind 0 (the protected cgroup
    /// alone) and work lost against kind `reference`, of the same seed.
    pub fn rows(&self, samples: &[Sample], reference: usize) -> Vec<Vec<Row>> {
        let alone = &samples[..self.seeds];
        let refs = &samples[reference * self.seeds..(reference + 1) * self.seeds];
        samples
            .chunks(self.seeds)
            .map(|chunk| {
                chunk
                    .iter()
                    .enumerate()
                    .map(|(k, s)| {
                        let (isol, isol_mean) = s.isolation(&alone[k], self.isol_pct);
                        Row {
                            seed: s.seed,
                            work: s.work,
                            others_work: s.work - s.prot_work,
                            loss: if refs[k].work > 0.0 {
                                1.0 - s.work / refs[k].work
                            } else {
                                0.0
                            },
                            p99: s.p99_ms,
                            p999: s.p999_ms,
                            isol,
                            isol_mean,
                            rlat: s.rlat_us,
                            wlat: s.wlat_us,
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

/// What one run measured of the protected cgroup (see the module's design).
#[derive(Debug, Clone)]
pub struct Sample {
    pub seed: u64,
    pub work: f64,
    /// The protected cgroup's own MiB/s over the run.
    pub prot_work: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    /// Each protected job's mean IOPS over its run.
    pub job_iops: Vec<f64>,
    /// Per window, each protected job's completions (None: not running all window).
    pub windows: Vec<Vec<Option<u64>>>,
    pub window_s: f64,
    pub rlat_us: Option<f64>,
    pub wlat_us: Option<f64>,
}

/// `hist`'s percentiles `p` in ms (None without IOs).
fn pct_ms(hist: &LatHist, p: &[f64]) -> Option<Vec<f64>> {
    (hist.total() > 0).then(|| {
        percentiles(hist, p)
            .into_iter()
            .map(|ns| ns as f64 / 1e6)
            .collect()
    })
}

impl Sample {
    /// What `run` (seed `seed`) shows of the protected cgroup `protect`.
    pub fn of(seed: u64, run: &VariantRun, protect: &str) -> Sample {
        let tree = &run.resolved.tree;
        let prot: Vec<usize> = run
            .out
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, (p, _, _))| in_subtree(&tree.nodes[p.cgroup as usize].path, protect))
            .map(|(i, _)| i)
            .collect();
        let mut hist = LatHist::default();
        for &i in &prot {
            hist.merge(&run.out.jobs[i].1.mixed().clat.hist);
        }
        let p = pct_ms(&hist, &[99.0, 99.9]).unwrap_or_else(|| vec![0.0, 0.0]);
        let prot_bytes: u64 = prot
            .iter()
            .flat_map(|&i| run.out.jobs[i].1.dd.iter())
            .map(|d| d.io_bytes)
            .sum();
        let secs = run.out.end as f64 / 1e9;
        let job_iops = prot
            .iter()
            .map(|&i| {
                let (_, st, t) = &run.out.jobs[i];
                let ios: u64 = st.dd.iter().map(|d| d.total_ios).sum();
                let secs = t.finished.saturating_sub(t.stats_start) as f64 / 1e9;
                if secs > 0.0 { ios as f64 / secs } else { 0.0 }
            })
            .collect();
        // windows of a whole number of bins, at least 1 s, aligned to simulated time
        let width = prot
            .iter()
            .map(|&i| run.out.job_timelines[i].width())
            .max()
            .unwrap_or(1_000_000_000);
        let w = width * 1_000_000_000u64.div_ceil(width);
        let spans: Vec<(u64, u64)> = prot
            .iter()
            .map(|&i| {
                let t = &run.out.jobs[i].2;
                (t.stats_start.div_ceil(w), t.finished / w)
            })
            .collect();
        let first = spans.iter().map(|s| s.0).min().unwrap_or(0);
        let last = spans.iter().map(|s| s.1).max().unwrap_or(0);
        let mut windows = vec![vec![None; prot.len()]; last.saturating_sub(first) as usize];
        for (j, &(a, b)) in spans.iter().enumerate() {
            for k in a..b {
                windows[(k - first) as usize][j] = Some(0);
            }
            for (t, bin) in run.out.job_timelines[prot[j]].iter() {
                let k = t / w;
                if (a..b).contains(&k)
                    && let Some(c) = windows[(k - first) as usize][j].as_mut()
                {
                    *c += bin.ios;
                }
            }
        }
        let us = |d: usize| {
            let h = run.out.device_lat.as_ref().map(|h| &h[d])?;
            pct_ms(h, &[99.0]).map(|v| v[0] * 1000.0)
        };
        Sample {
            seed,
            work: Totals::of(run).mib_s,
            prot_work: if secs > 0.0 {
                prot_bytes as f64 / secs / 1048576.0
            } else {
                0.0
            },
            p99_ms: p[0],
            p999_ms: p[1],
            job_iops,
            windows,
            window_s: w as f64 / 1e9,
            rlat_us: us(0),
            wlat_us: us(1),
        }
    }

    /// Per-window isolation against `alone`'s IOPS: its `pct` percentile (nearest rank)
    /// and mean, as fractions.
    pub fn isolation(&self, alone: &Sample, pct: f64) -> (f64, f64) {
        let mut r: Vec<f64> = self
            .windows
            .iter()
            .filter_map(|w| {
                let (mut done, mut target) = (0.0, 0.0);
                for (j, c) in w.iter().enumerate() {
                    if let (Some(c), Some(a)) = (c, alone.job_iops.get(j)) {
                        done += *c as f64;
                        target += a * self.window_s;
                    }
                }
                (target > 0.0).then(|| (done / target).min(1.0))
            })
            .collect();
        if r.is_empty() {
            return (0.0, 0.0);
        }
        r.sort_by(f64::total_cmp);
        let rank = ((pct / 100.0 * r.len() as f64).ceil() as usize).clamp(1, r.len());
        (r[rank - 1], r.iter().sum::<f64>() / r.len() as f64)
    }
}

/// Whether cgroup `name` is `top` or below it.
pub fn in_subtree(name: &str, top: &str) -> bool {
    let name = name.trim_matches('/');
    name == top || name.strip_prefix(top).is_some_and(|r| r.starts_with('/'))
}

/// Mean and sample standard deviation.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = if v.len() > 1 {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

/// A mean ±sd as a table shows it: the spread to the mean's precision, left out when it
/// rounds to nothing; "-" without values.
pub fn mean_sd_text(v: &[f64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let (m, sd) = mean_sd(v);
    let shown = fmt_figure(m);
    let decimals = shown.split_once('.').map_or(0, |(_, d)| d.len());
    let sd = format!("{sd:.decimals$}");
    if sd.bytes().all(|b| b == b'0' || b == b'.') {
        shown
    } else {
        format!("{shown} ±{sd}")
    }
}

/// One run's figures, isolation resolved.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub seed: u64,
    pub work: f64,
    /// Work of the cgroups outside the protected one.
    pub others_work: f64,
    pub loss: f64,
    pub p99: f64,
    pub p999: f64,
    pub isol: f64,
    pub isol_mean: f64,
    pub rlat: Option<f64>,
    pub wlat: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_cgroup_holds_its_subtree() {
        assert!(in_subtree("web", "web") && in_subtree("web/a", "web"));
        assert!(!in_subtree("webby", "web") && !in_subtree("batch", "web"));
    }

    #[test]
    fn isolation_is_a_capped_percentile_of_windows() {
        let s = |windows: Vec<Vec<Option<u64>>>, iops: f64| Sample {
            seed: 1,
            work: 0.0,
            prot_work: 0.0,
            p99_ms: 0.0,
            p999_ms: 0.0,
            job_iops: vec![iops],
            windows,
            window_s: 1.0,
            rlat_us: None,
            wlat_us: None,
        };
        let alone = s(vec![], 100.0);
        // 20 windows: one at 50%, one idle (job not running), the rest above target
        let mut w: Vec<Vec<Option<u64>>> = (0..20).map(|_| vec![Some(120)]).collect();
        w[3] = vec![Some(50)];
        w[7] = vec![None];
        let (p05, mean) = s(w, 0.0).isolation(&alone, 5.0);
        assert_eq!(p05, 0.5, "the 1st of 19 (rank ceil(0.95))");
        assert!((mean - (18.0 + 0.5) / 19.0).abs() < 1e-12);
    }

    #[test]
    fn a_sweep_command_names_a_file_with_each_value_quoted_for_the_shell() {
        let built_in = ScenarioFile::BuiltIn("iocost-linear-max".into());
        assert_eq!(
            built_in.sweep_command(Some("linear"), &[("root.io.cost.qos", "8:0 min=50.00")], 3),
            "blkcg-sim sweep iocost-linear-max.toml --set variant=linear --set 'root.io.cost.qos=8:0 min=50.00' --seeds 3"
        );
        assert!(
            built_in
                .copy_note()
                .unwrap()
                .ends_with("blkcg-sim scenarios iocost-linear-max > iocost-linear-max.toml")
        );
        // sweep's grammar escapes a comma in a value, the shell a quote in a path
        let file = ScenarioFile::Path("it's here.toml".into());
        assert_eq!(
            file.sweep_command(None, &[("cgroup.a.fio:bs", "4k,64k")], 1),
            r"blkcg-sim sweep 'it'\''s here.toml' --set 'cgroup.a.fio:bs=4k\,64k' --seeds 1"
        );
        assert_eq!((file.copy_note(), file.given()), (None, "it's here.toml"));
    }

    #[test]
    fn spreads_show_to_the_means_precision() {
        assert_eq!(mean_sd_text(&[1.0, 1.0]), "1.00");
        assert_eq!(mean_sd_text(&[100.0, 110.0]), "105.0 ±7.1");
        assert_eq!(mean_sd_text(&[]), "-");
    }
}
