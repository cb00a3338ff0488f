//! `blkcg-sim device fit`: a device model fitted to a user's own fio measurements.
//!
//! Not part of the device-model layer (`crate::device`), which it only configures: a
//! fit reads fio's JSON (`crate::workload::fio`), runs jobs on the fitted device
//! (`crate::tune`) and prints `validate`'s table, so it sits above them all, beside
//! the other commands' work. (`crate::tune::fit` is another thing: the
//! piecewise-linear fits against vrate of `tune qos`.)
//!
//! Design
//! ------
//! The idea: the user runs a fixed set of fio jobs on their disk (QD1 and QD32 4 KiB
//! random reads and writes, QD1 128 KiB and QD32 1 MiB sequential reads and writes;
//! `--print-jobs` prints the commands), hands us fio's JSON, and gets a `[device]`
//! table whose every key says which measurement set it; then the same jobs run on
//! the fitted device and both sides are printed together, so the user sees where the
//! model follows their disk and where it cannot.
//!
//! Moving parts:
//! - `jobs.rs`: the fit's jobs ([`jobs::JOBS`]), their fio commands, and recognising
//!   a job of any fio JSON as one of them from its options (fio's `global options`
//!   and `job options`, parsed by our fio parser, so aliases and units count as fio
//!   counts them) — never from its name;
//! - `models.rs`: one closed-form or least-squares fit per model (`ssd` simple, `hdd`,
//!   `cloud`), each naming the keys it sets, the measurement behind each, the keys it
//!   leaves at defaults, and the figures it aimed at;
//! - here: reading the files ([`read`]), the required-measurement check with the
//!   commands that produce what is missing, the TOML, and the verification: every
//!   job that parses runs alone on the fitted device (`tune::Machine`, as `tune
//!   model` runs its jobs), for its measured runtime up to [`SIM_RUNTIME_CAP_MS`];
//!   the side-by-side is `validate`'s table ([`compare::table`]); the residuals are
//!   (sim − real) / real of the figures the fit aimed at, and their RMS.
//!
//! fio's figures are read from the JSON as `validate` reads them
//! ([`compare::job_figures`]); the fit's own inputs (IOPS, bytes/s, clat mean and
//! percentiles) straight from the job's direction. Deterministic: the files in the
//! order given, one seed for every simulated job.

pub mod jobs;
pub mod models;

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::sweep::pool;
use crate::tune::Machine;
use crate::tune::model::run_fio;
use crate::validate::compare::{self, FIGURES, Figures};
use crate::workload::cmdline::shell_quote;
use crate::workload::fio::SizeOrPct;
use jobs::{JOBS, Target};

/// A simulated job runs for its measured runtime, at most this long (steady-state
/// figures; a long real run would only cost time here).
pub const SIM_RUNTIME_CAP_MS: u64 = 20_000;

/// The models a fit can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    Ssd,
    Hdd,
    Cloud,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::Ssd => "ssd",
            Model::Hdd => "hdd",
            Model::Cloud => "cloud",
        }
    }

    /// The jobs of [`JOBS`] this model's fit needs.
    pub fn required(self) -> &'static [usize] {
        use jobs::*;
        match self {
            Model::Ssd => &[
                RANDREAD_QD1,
                RANDREAD_QD32,
                RANDWRITE_QD1,
                RANDWRITE_QD32,
                READ_1M_QD32,
                WRITE_1M_QD32,
            ],
            Model::Hdd => &[RANDREAD_QD1, RANDWRITE_QD1, READ_1M_QD32, WRITE_1M_QD32],
            // all of them
            Model::Cloud => &[
                RANDREAD_QD1,
                RANDREAD_QD32,
                RANDWRITE_QD1,
                RANDWRITE_QD32,
                READ_128K_QD1,
                WRITE_128K_QD1,
                READ_1M_QD32,
                WRITE_1M_QD32,
            ],
        }
    }

    fn fit(self, set: &Set) -> Result<Fitted, String> {
        match self {
            Model::Ssd => models::ssd(set),
            Model::Hdd => models::hdd(set),
            Model::Cloud => models::cloud(set),
        }
    }
}

/// One job of a user's fio JSON.
#[derive(Debug, Clone)]
pub struct Measured {
    /// `FILE: job `NAME``, for messages.
    pub origin: String,
    /// Unique among the jobs read: the job's name (`@FILE#K` added when taken).
    pub label: String,
    /// fio options re-running it (global, `--name=LABEL`, its own).
    pub args: Vec<String>,
    pub runtime_ms: u64,
    /// Which of [`JOBS`] it is, or why it is none.
    pub std: Result<usize, String>,
    /// In the direction the job measures (reads for a reading job).
    pub iops: f64,
    /// Bytes per second.
    pub bw: f64,
    pub clat_us: f64,
    /// fio's clat percentiles: (percent, µs).
    pub pcts: Vec<(f64, f64)>,
    pub bs: u64,
    /// The job's `size` in bytes, when given as bytes.
    pub span: Option<u64>,
    pub filename: Option<String>,
    /// All directions' figures, for the side-by-side.
    pub figures: Figures,
}

/// The measurement of each of [`JOBS`], when given.
pub type Set = [Option<Measured>; JOBS.len()];

/// What a fit sets.
#[derive(Debug, Clone)]
pub struct Fitted {
    pub model: &'static str,
    /// (key, value, the measurement it comes from).
    pub keys: Vec<(&'static str, toml::Value, String)>,
    /// Keys left at the model's defaults, and why.
    pub defaults: Vec<&'static str>,
    /// The figures the fit aimed at: (job of [`JOBS`], index into `FIGURES`).
    pub targets: Vec<(usize, usize)>,
}

impl Fitted {
    fn new(model: &'static str) -> Self {
        Fitted {
            model,
            keys: Vec::new(),
            defaults: Vec::new(),
            targets: Vec::new(),
        }
    }

    fn put(&mut self, key: &'static str, v: toml::Value, why: String) {
        self.keys.push((key, v, why));
    }

    fn default(&mut self, why: &'static str) {
        self.defaults.push(why);
    }

    /// The `[device]` table as TOML, each key under a comment saying where it comes from.
    pub fn toml(&self, sources: &[String]) -> String {
        let mut s = format!(
            "# blkcg-sim device fit --model {}: fitted to the fio JSON of\n",
            self.model
        );
        for f in sources {
            let _ = writeln!(s, "#   {}", comment(f));
        }
        let _ = writeln!(s, "[device]\nmodel = \"{}\"", self.model);
        for (k, v, why) in &self.keys {
            let _ = writeln!(s, "# {}\n{k} = {v}", comment(why));
        }
        for d in &self.defaults {
            let _ = writeln!(s, "# at the model's defaults: {}", comment(d));
        }
        s
    }
}

/// A figure the fit reads: a JSON number in `(0, max]` (or `[0, max]` with
/// `zero`), else an error naming the job, the field and what is accepted. Zero,
/// negative, non-numeric and absurd figures measure nothing a model can follow (and
/// a bucket fitted to them would never pass a request).
fn figure(origin: &str, v: &Value, path: &[&str], max: f64, zero: bool) -> Result<f64, String> {
    let field = path.join(".");
    let got = path.iter().try_fold(v, |v, k| v.get(k));
    let accepted = format!(
        "accepted: a number in {}0, {max:e}] as fio 3.x writes it",
        if zero { "[" } else { "(" }
    );
    match got.map(|x| (x, x.as_f64())) {
        None => Err(format!(
            "{origin}: no `{field}`{}; {accepted}",
            if field.contains("clat_ns") {
                " (fio 2.x's JSON has `clat` in µs, not `clat_ns`: rerun with fio >= 3.0)"
            } else {
                ""
            }
        )),
        Some((_, Some(x))) if x.is_finite() && x <= max && (x > 0.0 || (zero && x == 0.0)) => Ok(x),
        Some((x, _)) => Err(format!(
            "{origin}: `{field}` = {x} cannot be fitted; {accepted}"
        )),
    }
}

/// Labels already given to jobs, and the next `#K` to try for each name in each
/// file: a map, so N same-named jobs (fio's `numjobs=N`) take O(N), not O(N^3).
#[derive(Debug, Default)]
pub struct Labels {
    taken: std::collections::HashSet<String>,
    next: std::collections::HashMap<(String, String), u64>,
}

impl Labels {
    /// `name`, or `name@path#K` with the least K >= 2 not yet taken.
    fn take(&mut self, name: &str, path: &str) -> String {
        let mut label = name.to_string();
        if self.taken.contains(&label) {
            // every K tried before for this name and file is taken for good
            let k = self
                .next
                .entry((name.to_string(), path.to_string()))
                .or_insert(2);
            loop {
                label = format!("{name}@{path}#{k}");
                *k += 1;
                if !self.taken.contains(&label) {
                    break;
                }
            }
        }
        self.taken.insert(label.clone());
        label
    }
}

/// Text that goes into a TOML comment: control characters (a newline in a file
/// name would end the comment and inject TOML) written as escapes.
fn comment(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Every job of one fio JSON file; `taken` holds the labels already used.
pub fn read(path: &str, text: &str, taken: &mut Labels) -> Result<Vec<Measured>, String> {
    let not_fio = |why: String| {
        format!(
            "{path}: not fio's JSON output ({why}); accepted: what `fio --output-format=json` (or json+) writes, e.g. from `blkcg-sim device fit --print-jobs`"
        )
    };
    // fio may print notes before the document when writing to stdout
    let start = text
        .find('{')
        .ok_or_else(|| not_fio("no JSON object".into()))?;
    let doc: Value = serde_json::from_str(&text[start..]).map_err(|e| not_fio(format!("{e}")))?;
    let list = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| not_fio("no `jobs` array".into()))?;
    let global = doc.get("global options").and_then(Value::as_object);
    let empty = Map::new();
    let mut out = Vec::new();
    for job in list {
        let name = job.get("jobname").and_then(Value::as_str).unwrap_or("?");
        let origin = format!("{path}: job `{name}`");
        let opts = job
            .get("job options")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        if let Some(e) = job.get("error").filter(|e| e.as_i64() != Some(0)) {
            return Err(format!(
                "{origin}: fio reports `error` = {e}: the job failed and its figures measure \
                 nothing; accepted: jobs that ended with `error` = 0 (rerun the failed one)"
            ));
        }
        let label = taken.take(name, path);
        let mut named = opts.clone();
        named.insert("name".into(), Value::String(label.clone()));
        let args = jobs::job_args(global, &named);
        let (spec, clones) = match jobs::job_spec(&args) {
            Ok(x) => x,
            Err(e) => {
                return Err(format!("{origin}: its options do not parse as fio's: {e}"));
            }
        };
        let std = jobs::recognise(&spec, clones);
        let dir = if spec.rw.reads() { "read" } else { "write" };
        let d = job.get(dir).cloned().unwrap_or(Value::Null);
        // the figures the fit and the comparison read, each a sane number
        let runtime_ms = figure(&origin, job, &["job_runtime"], 1e12, false)?;
        let iops = figure(&origin, job, &[dir, "iops"], 1e9, false)?;
        let bw = figure(&origin, job, &[dir, "bw_bytes"], 1e13, false)?;
        let clat_ns = figure(&origin, job, &[dir, "clat_ns", "mean"], 1e13, false)?;
        if let Some(p) = d.get("clat_ns").and_then(|c| c.get("percentile")) {
            let Some(p) = p.as_object() else {
                return Err(format!(
                    "{origin}: `{dir}.clat_ns.percentile` = {p} cannot be fitted; accepted: \
                     an object of percentiles as fio 3.x writes it"
                ));
            };
            for k in p.keys() {
                figure(&origin, job, &[dir, "clat_ns", "percentile", k], 1e13, true)?;
            }
        }
        let pcts = d
            .get("clat_ns")
            .and_then(|c| c.get("percentile"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(p, v)| Some((p.parse().ok()?, v.as_f64()? / 1000.0)))
            .collect();
        let single = serde_json::json!({ "jobs": [job] });
        let figures = compare::job_figures(&single, |_| 0)
            .into_iter()
            .map(|((_, dir), v)| ((label.clone(), dir), v))
            .collect();
        out.push(Measured {
            origin,
            label,
            args,
            runtime_ms: runtime_ms as u64,
            std,
            iops,
            bw,
            clat_us: clat_ns / 1000.0,
            pcts,
            bs: spec.bs_min[if dir == "read" { 0 } else { 1 }],
            span: match spec.size {
                Some(SizeOrPct::Bytes(b)) if b > 0 => Some(b),
                _ => None,
            },
            filename: spec.filename.clone(),
            figures,
        });
    }
    Ok(out)
}

/// The fit's result: the TOML of the `[device]` table and the report to print.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub toml: String,
    pub report: String,
}

/// Fit `model` to the fio JSON files `paths`, run their jobs on the fitted device
/// with `jobs` threads, and report.
pub fn fit(paths: &[PathBuf], model: Model, threads: usize) -> Result<Outcome, String> {
    if paths.is_empty() {
        return Err(
            "device fit: give fio JSON files (FIO.json...); `blkcg-sim device fit --print-jobs` prints the fio commands that make them".into(),
        );
    }
    let mut taken = Labels::default();
    let mut all = Vec::new();
    for p in paths {
        let name = p.display().to_string();
        let text = std::fs::read_to_string(p).map_err(|e| format!("{name}: cannot read: {e}"))?;
        all.extend(read(&name, &text, &mut taken)?);
    }
    let mut report = String::new();
    let _ = writeln!(report, "Measurements ({} jobs):", all.len());
    let mut set: Set = Default::default();
    for m in &all {
        match &m.std {
            Ok(i) if set[*i].is_none() => {
                let _ = writeln!(report, "  {:<18} {}", JOBS[*i].name(), m.origin);
                set[*i] = Some(m.clone());
            }
            Ok(i) => {
                let _ = writeln!(
                    report,
                    "  {:<18} {}: a second {}: only compared",
                    "-",
                    m.origin,
                    JOBS[*i].name()
                );
            }
            Err(why) => {
                let _ = writeln!(report, "  {:<18} {}: only compared: {why}", "-", m.origin);
            }
        }
    }
    let missing: Vec<usize> = model
        .required()
        .iter()
        .copied()
        .filter(|&i| set[i].is_none())
        .collect();
    if !missing.is_empty() {
        let target = Target {
            filename: all
                .iter()
                .find_map(|m| m.filename.clone())
                .unwrap_or_else(|| "PATH".into()),
            size: "1G".into(),
            runtime_s: 30,
        };
        let names: Vec<String> = missing.iter().map(|&i| JOBS[i].name()).collect();
        let cmds: Vec<String> = missing.iter().map(|&i| JOBS[i].command(&target)).collect();
        return Err(format!(
            "device fit --model {}: {} lack{} {} (needed: {}); each comes from: {}",
            model.name(),
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if paths.len() == 1 { "s" } else { "" },
            names.join(", "),
            model
                .required()
                .iter()
                .map(|&i| JOBS[i].name())
                .collect::<Vec<_>>()
                .join(", "),
            cmds.join(" ; ")
        ));
    }
    let fitted = model.fit(&set)?;
    if let Some(m) = &set[jobs::RANDREAD_QD1] {
        let host = crate::scenario::host_profile::default_profile().costs();
        let real = m.figures.values().next().and_then(|v| v[2]).unwrap_or(0.0);
        let _ = writeln!(
            report,
            "Host: randread-4k-qd1's slat mean is {real:.1} µs here, {:.1} µs in the simulation (`[host] submit_ns`, not a device key; QD1 IOPS follow slat + clat)",
            host.submit_ns as f64 / 1000.0
        );
    }
    let sources: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let toml_text = fitted.toml(&sources);
    let table: toml::Table = toml_text
        .parse()
        .map_err(|e| format!("internal error: the fitted table does not parse: {e}"))?;
    let device = table
        .get("device")
        .and_then(toml::Value::as_table)
        .cloned()
        .ok_or("internal error: no [device] in the fitted table")?;
    let machine = Machine::from_device("the fitted device", device);
    let cap = |m: &Measured| m.runtime_ms.clamp(1, SIM_RUNTIME_CAP_MS);
    let mut sim = Figures::new();
    pool::ordered(
        all.len(),
        threads,
        |i| {
            let m = &all[i];
            let mut words = vec!["fio".to_string()];
            words.extend(m.args.iter().map(|a| shell_quote(a)));
            words.push("--time_based".into());
            words.push(format!("--runtime={}ms", cap(m)));
            run_fio(&machine, &words.join(" ")).map_err(|e| format!("{}: {e}", m.origin))
        },
        |_, r| {
            sim.extend(compare::job_figures(&r?.0, |_| 0));
            Ok(())
        },
    )?;
    let real: Figures = all.iter().flat_map(|m| m.figures.clone()).collect();
    let _ = writeln!(report, "\nFitted device:\n{toml_text}");
    let _ = writeln!(
        report,
        "Real (fio JSON) vs simulated (each job alone on the fitted device, for its runtime up to {} s):",
        SIM_RUNTIME_CAP_MS / 1000
    );
    report.push_str(&compare::table(
        std::slice::from_ref(&real),
        std::slice::from_ref(&sim),
    ));
    report.push_str(&residuals(&fitted, &set, &real, &sim));
    Ok(Outcome {
        toml: toml_text,
        report,
    })
}

/// The figures the fit aimed at, real and simulated, (sim − real) / real, and the RMS.
fn residuals(f: &Fitted, set: &Set, real: &Figures, sim: &Figures) -> String {
    let mut s = format!(
        "\nFit residuals, (sim − real) / real of the figures the fit used:\n  {:<18} {:<14} {:>10} {:>10} {:>9}\n",
        "JOB", "FIGURE", "real", "sim", "residual"
    );
    let mut sq = Vec::new();
    for &(j, fig) in &f.targets {
        let Some(m) = &set[j] else { continue };
        let key = (m.label.clone(), JOBS[j].dir().to_string());
        let get = |x: &Figures| x.get(&key).and_then(|v| v[fig]);
        let (Some(r), Some(x)) = (get(real), get(sim)) else {
            continue;
        };
        let res = if r != 0.0 { (x - r) / r } else { 0.0 };
        sq.push(res * res);
        let _ = writeln!(
            s,
            "  {:<18} {:<14} {:>10} {:>10} {:>8.1}%",
            JOBS[j].name(),
            FIGURES[fig].0,
            crate::report::summary::fmt_figure(r),
            crate::report::summary::fmt_figure(x),
            res * 100.0
        );
    }
    let rms = (sq.iter().sum::<f64>() / sq.len().max(1) as f64).sqrt();
    let _ = writeln!(s, "  RMS {:.1}%", rms * 100.0);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_jobs_in_one_file_get_unique_labels_and_are_told_by_options() {
        let job = |rw: &str, qd: u32| {
            format!(
                r#"{{"jobname": "t", "job_runtime": 5000, "job options": {{"name": "t", "rw": "{rw}", "iodepth": "{qd}"}},
                   "read": {{"total_ios": 10, "iops": 100.0, "bw_bytes": 409600, "clat_ns": {{"mean": 80000.0, "percentile": {{"50.000000": 70000}}}}}},
                   "write": {{"total_ios": 10, "iops": 50.0, "bw_bytes": 204800, "clat_ns": {{"mean": 20000.0}}}}}}"#
            )
        };
        // fio prints notes before its JSON when writing to stdout
        let text = format!(
            "note: a line of fio's\n{{\"global options\": {{\"direct\": \"1\", \"bs\": \"4k\", \"ioengine\": \"libaio\"}}, \"jobs\": [{}, {}, {}]}}",
            job("randread", 32),
            job("randwrite", 1),
            job("randread", 32)
        );
        let mut taken = Labels::default();
        let m = read("f.json", &text, &mut taken).unwrap();
        let labels: Vec<&str> = m.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(labels, ["t", "t@f.json#2", "t@f.json#3"]);
        assert_eq!(m[0].std, Ok(jobs::RANDREAD_QD32));
        assert_eq!(m[1].std, Ok(jobs::RANDWRITE_QD1));
        // each measured in its own direction
        assert_eq!((m[0].iops, m[0].clat_us, m[0].bs), (100.0, 80.0, 4096));
        assert_eq!((m[1].iops, m[1].bw), (50.0, 204800.0));
        assert_eq!(m[0].pcts, vec![(50.0, 70.0)]);
        assert_eq!(m[0].runtime_ms, 5000);
        assert!(m[0].args.contains(&"--name=t".to_string()));
        assert!(m[2].args.contains(&"--name=t@f.json#3".to_string()));
    }
}
