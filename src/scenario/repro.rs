//! Seed reproductions: the `[repro]` table of an embedded scenario states the published
//! numbers and the tolerance band each must fall in; `evaluate` checks them against a
//! run of every variant.
//!
//! A band names a `metric` of a `job` in a `variant` (or the ratio of one metric between
//! two variants, `ratio_of = ["before", "after"]`), the `published` value it stands
//! next to, and `min`/`max` bounds. Metrics:
//! - per job: `iops`, `mib_s`, `slat_mean_ms`, `clat_mean_ms`, `clat_max_ms`,
//!   `clat_pNN_ms` (any reported percentile, e.g. `clat_p99.9_ms`), and
//!   `littles_law_depth` (IOPS × mean latency: the mean depth by Little's law);
//! - per variant, summed over its jobs: `total.iops`, `total.mib_s`;
//! - per variant, from the device timeline: `iostat.w_mib_s.max`,
//!   `iostat.w_mib_s.full_min`, `iostat.w_mib_s.full_max` (over full seconds: the first
//!   and last second of I/O are left out), `iostat.w_seconds_between:LO:HI` (count of
//!   seconds whose write rate is in [LO, HI] MiB/s), and the same for `r_`;
//! - per variant, from the controller: any name the run reports in `extra`
//!   (e.g. `iocost.no_completion_resets`).

use std::collections::BTreeMap;

use serde::Serialize;
use toml::Value;

use crate::report::summary::JobSummary;
use crate::sim::iostat::IostatRow;

/// What one variant's run produced, as far as bands are concerned.
#[derive(Debug, Clone, Default)]
pub struct VariantMetrics {
    pub jobs: Vec<JobSummary>,
    pub iostat: Vec<IostatRow>,
    /// Controller-level figures (`iocost.*`, `throttle.*`).
    pub extra: BTreeMap<String, f64>,
}

/// The keys of `[repro]` (`Scenario::parse` refuses others).
pub const REPRO_KEYS: &[&str] = &["title", "source", "published", "band"];

/// The keys of a `[[repro.band]]` (`Scenario::parse` refuses others).
pub const BAND_KEYS: &[&str] = &[
    "variant",
    "ratio_of",
    "job",
    "metric",
    "published",
    "min",
    "max",
    "note",
];

/// One band of a `[repro]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    pub variant: Option<String>,
    pub ratio_of: Option<(String, String)>,
    pub job: Option<String>,
    pub metric: String,
    pub published: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub note: String,
}

/// A band with the simulated value and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandResult {
    pub band: Band,
    pub value: Option<f64>,
    pub pass: bool,
}

/// The `[repro]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReproSpec {
    pub title: String,
    /// File in shared/seeds the numbers come from.
    pub source: String,
    /// The published table, verbatim.
    pub published: String,
    pub bands: Vec<Band>,
}

impl ReproSpec {
    /// Read `[repro]` from a scenario table; `Ok(None)` if the scenario has none.
    pub fn from_table(t: &toml::Table) -> Result<Option<ReproSpec>, String> {
        let Some(r) = t.get("repro") else {
            return Ok(None);
        };
        let r = r.as_table().ok_or("`repro` must be a table")?;
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let mut spec = ReproSpec {
            title: s("title"),
            source: s("source"),
            published: s("published"),
            bands: Vec::new(),
        };
        for b in r
            .get("band")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let bt = b.as_table().ok_or("each [[repro.band]] must be a table")?;
            let num = |k: &str| -> Result<Option<f64>, String> {
                match bt.get(k) {
                    None => Ok(None),
                    Some(Value::Integer(i)) => Ok(Some(*i as f64)),
                    Some(Value::Float(f)) => Ok(Some(*f)),
                    Some(_) => Err(format!("repro.band.{k} must be a number")),
                }
            };
            let st = |k: &str| bt.get(k).and_then(Value::as_str).map(str::to_string);
            let ratio_of = match bt.get("ratio_of").and_then(Value::as_array) {
                Some(a) if a.len() == 2 => Some((
                    a[0].as_str().unwrap_or_default().to_string(),
                    a[1].as_str().unwrap_or_default().to_string(),
                )),
                Some(_) => return Err("repro.band.ratio_of must name two variants".into()),
                None => None,
            };
            let metric = st("metric").ok_or("every [[repro.band]] needs `metric`")?;
            spec.bands.push(Band {
                variant: st("variant"),
                ratio_of,
                job: st("job"),
                metric,
                published: num("published")?,
                min: num("min")?,
                max: num("max")?,
                note: st("note").unwrap_or_default(),
            });
        }
        Ok(Some(spec))
    }
}

/// Value of `metric` for `job` (or the whole variant) in `m`.
pub fn metric(m: &VariantMetrics, job: Option<&str>, metric: &str) -> Option<f64> {
    if let Some(rest) = metric.strip_prefix("iostat.") {
        return iostat_metric(&m.iostat, rest);
    }
    if let Some(v) = m.extra.get(metric) {
        return Some(*v);
    }
    if let Some(rest) = metric.strip_prefix("total.") {
        let sum = |f: fn(&JobSummary) -> f64| m.jobs.iter().map(f).sum::<f64>();
        return match rest {
            "iops" => Some(sum(|j| j.iops)),
            "mib_s" => Some(sum(|j| j.mib_s)),
            _ => None,
        };
    }
    let j = match job {
        // by job or cgroup name (the first run), or as the summary labels it ("cgB #2")
        Some(name) => m.jobs.iter().find(|x| {
            x.job == name
                || x.cgroup == name
                || crate::report::summary::job_label(&x.cgroup, &x.job, x.round) == name
        })?,
        None => m.jobs.first()?,
    };
    match metric {
        "iops" => Some(j.iops),
        "mib_s" => Some(j.mib_s),
        "slat_mean_ms" => Some(j.slat_mean_ms),
        "clat_mean_ms" => Some(j.clat_mean_ms),
        "clat_max_ms" => Some(j.clat_max_ms),
        // Little's law: mean I/Os in flight = IOPS × mean latency (slat + clat)
        "littles_law_depth" => Some(j.iops * (j.slat_mean_ms + j.clat_mean_ms) / 1000.0),
        _ => {
            let p: f64 = metric
                .strip_prefix("clat_p")?
                .strip_suffix("_ms")?
                .parse()
                .ok()?;
            j.pct(p)
        }
    }
}

fn iostat_metric(rows: &[IostatRow], m: &str) -> Option<f64> {
    let (dir_write, rest) = if let Some(r) = m.strip_prefix("w_") {
        (true, r)
    } else {
        (false, m.strip_prefix("r_")?)
    };
    let rate = |r: &IostatRow| (if dir_write { r.w_bytes } else { r.r_bytes }) as f64 / 1048576.0;
    // seconds with I/O of this direction
    let first = rows.iter().position(|r| rate(r) > 0.0)?;
    let last = rows.iter().rposition(|r| rate(r) > 0.0)?;
    let full: Vec<f64> = if last > first + 1 {
        rows[first + 1..last].iter().map(rate).collect()
    } else {
        Vec::new()
    };
    match rest {
        "mib_s.max" => rows.iter().map(rate).reduce(f64::max),
        "mib_s.full_min" => full.iter().copied().reduce(f64::min),
        "mib_s.full_max" => full.iter().copied().reduce(f64::max),
        _ => {
            let spec = rest.strip_prefix("seconds_between:")?;
            let (lo, hi) = spec.split_once(':')?;
            let (lo, hi): (f64, f64) = (lo.parse().ok()?, hi.parse().ok()?);
            Some(rows.iter().filter(|r| (lo..=hi).contains(&rate(r))).count() as f64)
        }
    }
}

/// Check every band against the runs (`variant name → metrics`).
pub fn evaluate(spec: &ReproSpec, runs: &BTreeMap<String, VariantMetrics>) -> Vec<BandResult> {
    spec.bands
        .iter()
        .map(|b| {
            let value = if let Some((a, c)) = &b.ratio_of {
                let va = runs
                    .get(a)
                    .and_then(|m| metric(m, b.job.as_deref(), &b.metric));
                let vc = runs
                    .get(c)
                    .and_then(|m| metric(m, b.job.as_deref(), &b.metric));
                match (va, vc) {
                    (Some(x), Some(y)) if y != 0.0 => Some(x / y),
                    _ => None,
                }
            } else {
                let v = b.variant.as_deref().unwrap_or("");
                runs.get(v)
                    .and_then(|m| metric(m, b.job.as_deref(), &b.metric))
            };
            let pass = value
                .is_some_and(|v| b.min.is_none_or(|lo| v >= lo) && b.max.is_none_or(|hi| v <= hi));
            BandResult {
                band: b.clone(),
                value,
                pass,
            }
        })
        .collect()
}

/// The bands as a table: what, published, band, simulated, PASS/FAIL.
pub fn bands_table(results: &[BandResult]) -> String {
    let mut s = format!(
        "{:<26} {:<10} {:<22} {:>10} {:>17} {:>10}  {}\n",
        "variant", "job", "metric", "published", "band", "simulated", "verdict"
    );
    for r in results {
        let b = &r.band;
        let variant = match &b.ratio_of {
            Some((a, c)) => format!("{a} / {c}"),
            None => b.variant.clone().unwrap_or_default(),
        };
        let band = format!(
            "[{}, {}]",
            b.min.map(fmt_num).unwrap_or_else(|| "-inf".into()),
            b.max.map(fmt_num).unwrap_or_else(|| "inf".into())
        );
        s.push_str(&format!(
            "{:<26} {:<10} {:<22} {:>10} {:>17} {:>10}  {}{}\n",
            variant,
            b.job.clone().unwrap_or_default(),
            b.metric,
            b.published.map(fmt_num).unwrap_or_else(|| "-".into()),
            band,
            r.value.map(fmt_num).unwrap_or_else(|| "n/a".into()),
            match (r.pass, b.min.is_none() && b.max.is_none()) {
                (true, true) => "info",
                (true, false) => "PASS",
                (false, _) => "FAIL",
            },
            if b.note.is_empty() {
                String::new()
            } else {
                format!("  ({})", b.note)
            }
        ));
    }
    s
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(iops: f64, p99: f64) -> JobSummary {
        JobSummary {
            cgroup: "cg".into(),
            job: "j".into(),
            round: 0,
            iops,
            mib_s: 0.0,
            slat_mean_ms: 0.0,
            clat_mean_ms: 0.0,
            clat_max_ms: 0.0,
            clat_pct_ms: vec![(99.0, p99)],
            prio: None,
            lateness_ms: None,
        }
    }

    #[test]
    fn bands_and_ratios_pass_and_fail() {
        let t: toml::Table = r#"
[repro]
title = "x"
[[repro.band]]
variant = "a"
job = "j"
metric = "iops"
published = 100
min = 98
max = 102
[[repro.band]]
ratio_of = ["a", "b"]
metric = "clat_p99_ms"
min = 1.7
max = 2.3
"#
        .parse()
        .unwrap();
        let spec = ReproSpec::from_table(&t).unwrap().unwrap();
        let mut runs = BTreeMap::new();
        runs.insert(
            "a".to_string(),
            VariantMetrics {
                jobs: vec![summary(99.0, 23.7)],
                ..Default::default()
            },
        );
        runs.insert(
            "b".to_string(),
            VariantMetrics {
                jobs: vec![summary(100.0, 12.0)],
                ..Default::default()
            },
        );
        let r = evaluate(&spec, &runs);
        assert!(r[0].pass);
        assert!(r[1].pass, "{:?}", r[1]);
        runs.get_mut("a").unwrap().jobs[0].iops = 90.0;
        assert!(!evaluate(&spec, &runs)[0].pass);
        assert!(bands_table(&r).contains("PASS"));
    }

    #[test]
    fn iostat_full_seconds_leave_out_the_edges() {
        let rows: Vec<IostatRow> = [1u64, 10, 10, 11, 3]
            .iter()
            .enumerate()
            .map(|(t, &m)| IostatRow {
                t: t as u64,
                w_bytes: m << 20,
                ..Default::default()
            })
            .collect();
        let m = VariantMetrics {
            iostat: rows,
            ..Default::default()
        };
        assert_eq!(metric(&m, None, "iostat.w_mib_s.full_min"), Some(10.0));
        assert_eq!(metric(&m, None, "iostat.w_mib_s.full_max"), Some(11.0));
        assert_eq!(metric(&m, None, "iostat.w_mib_s.max"), Some(11.0));
        assert_eq!(
            metric(&m, None, "iostat.w_seconds_between:9.5:10.5"),
            Some(2.0)
        );
    }
}
