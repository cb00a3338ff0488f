//! One run of a sweep as data: a JSON line and CSV rows.
//!
//! Design
//! ------
//! A record is a point's values, its seed and what the run's summary table shows for
//! each job (the same [`JobSummary`] rows `run` prints: fio's IOPS and bandwidth,
//! slat and clat means, clat percentiles as fio buckets them, clat max), the total of
//! every job's I/O over the run's simulated time, and with blk-iocost the mean base vrate over its periods (what the root's
//! `io.stat` shows as `cost.vrate`). Fields are in a fixed order and floats are
//! printed in Rust's shortest round-trip form, so a record's text depends only on the
//! run. The CSV is long: one row per job, the point's values and totals repeated on
//! each, ready for a data frame.

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::report::csv_field;
use crate::report::summary::{JobSummary, job_label};
use crate::run::VariantRun;

/// The figures of one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobFigures {
    /// `cgroup/job` (or `job` when named after its cgroup), ` #N` for later fio runs.
    pub job: String,
    pub iops: f64,
    pub mib_s: f64,
    pub slat_mean_ms: f64,
    pub clat_mean_ms: f64,
    /// clat percentiles as fio reports them; null when the job's `percentile_list`
    /// leaves one out.
    pub clat_p50_ms: Option<f64>,
    pub clat_p90_ms: Option<f64>,
    pub clat_p99_ms: Option<f64>,
    #[serde(rename = "clat_p99.9_ms")]
    pub clat_p99_9_ms: Option<f64>,
    pub clat_max_ms: f64,
}

impl JobFigures {
    fn of(s: &JobSummary) -> JobFigures {
        JobFigures {
            job: job_label(&s.cgroup, &s.job, s.round),
            iops: s.iops,
            mib_s: s.mib_s,
            slat_mean_ms: s.slat_mean_ms,
            clat_mean_ms: s.clat_mean_ms,
            clat_p50_ms: s.pct(50.0),
            clat_p90_ms: s.pct(90.0),
            clat_p99_ms: s.pct(99.0),
            clat_p99_9_ms: s.pct(99.9),
            clat_max_ms: s.clat_max_ms,
        }
    }
}

/// Every job's I/O together over the run's simulated time: what the device did on
/// average (successive fio runs of a cgroup count once, not as a sum of their rates).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    pub iops: f64,
    pub mib_s: f64,
}

impl Totals {
    /// The totals of `run`.
    pub fn of(run: &VariantRun) -> Totals {
        let secs = run.out.end as f64 / 1e9;
        let dirs = run.out.jobs.iter().flat_map(|(_, st, _)| st.dd.iter());
        let (ios, bytes) = dirs.fold((0u64, 0u64), |(i, b), d| (i + d.total_ios, b + d.io_bytes));
        if secs > 0.0 {
            Totals {
                iops: ios as f64 / secs,
                mib_s: bytes as f64 / secs / 1048576.0,
            }
        } else {
            Totals {
                iops: 0.0,
                mib_s: 0.0,
            }
        }
    }
}

/// blk-iocost's figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IocostFigures {
    /// Mean of the base vrate (`cost.vrate`) over the periods, in percent.
    pub vrate_mean_pct: f64,
}

/// A point's values, in the order of the axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Values(pub Vec<(String, String)>);

impl Serialize for Values {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// The point's index in the whole sweep (shards keep it).
    pub point: usize,
    pub seed: u64,
    pub values: Values,
    pub total: Totals,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iocost: Option<IocostFigures>,
    pub jobs: Vec<JobFigures>,
}

/// The CSV columns after the point's values.
const JOB_COLUMNS: &str = "job,iops,mib_s,slat_mean_ms,clat_mean_ms,clat_p50_ms,clat_p90_ms,\
clat_p99_ms,clat_p99.9_ms,clat_max_ms,total_iops,total_mib_s,vrate_mean_pct";

impl Record {
    /// The record of `run`, point `point` with `values`, seed `seed`.
    pub fn of(point: usize, seed: u64, values: Values, run: &VariantRun) -> Record {
        let jobs: Vec<JobFigures> = run.summaries.iter().map(JobFigures::of).collect();
        let total = Totals::of(run);
        let iocost = run
            .extra
            .get("iocost.vrate_mean_pct")
            .map(|&vrate_mean_pct| IocostFigures { vrate_mean_pct });
        Record {
            point,
            seed,
            values,
            total,
            iocost,
            jobs,
        }
    }

    /// The JSON line (with its newline).
    pub fn json_line(&self) -> String {
        let mut s =
            serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
        s.push('\n');
        s
    }

    /// The CSV rows, one per job (with their newlines).
    pub fn csv_rows(&self) -> String {
        let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        let mut s = String::new();
        for j in &self.jobs {
            let mut row = vec![self.point.to_string(), self.seed.to_string()];
            row.extend(self.values.0.iter().map(|(_, v)| csv_field(v).into_owned()));
            row.extend([
                csv_field(&j.job).into_owned(),
                j.iops.to_string(),
                j.mib_s.to_string(),
                j.slat_mean_ms.to_string(),
                j.clat_mean_ms.to_string(),
                num(j.clat_p50_ms),
                num(j.clat_p90_ms),
                num(j.clat_p99_ms),
                num(j.clat_p99_9_ms),
                j.clat_max_ms.to_string(),
                self.total.iops.to_string(),
                self.total.mib_s.to_string(),
                num(self.iocost.as_ref().map(|i| i.vrate_mean_pct)),
            ]);
            s.push_str(&row.join(","));
            s.push('\n');
        }
        s
    }
}

/// The CSV header for a sweep over `keys`.
pub fn csv_header(keys: &[String]) -> String {
    let mut cols = vec!["point".to_string(), "seed".to_string()];
    cols.extend(keys.iter().map(|k| csv_field(k).into_owned()));
    format!("{},{JOB_COLUMNS}\n", cols.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            point: 3,
            seed: 2,
            values: Values(vec![
                ("device.iops".into(), "3000".into()),
                ("cgroup.a.fio:bs".into(), "4k,64k".into()),
            ]),
            total: Totals {
                iops: 10.0,
                mib_s: 0.5,
            },
            iocost: None,
            jobs: vec![JobFigures {
                job: "a".into(),
                iops: 10.0,
                mib_s: 0.5,
                slat_mean_ms: 0.002,
                clat_mean_ms: 1.25,
                clat_p50_ms: Some(1.0),
                clat_p90_ms: Some(2.0),
                clat_p99_ms: None,
                clat_p99_9_ms: Some(3.0),
                clat_max_ms: 4.0,
            }],
        }
    }

    #[test]
    fn json_keeps_the_axes_order_and_fixed_fields() {
        let j = record().json_line();
        assert!(
            j.starts_with(r#"{"point":3,"seed":2,"values":{"device.iops":"3000","cgroup.a.fio:bs":"4k,64k"},"total":"#),
            "{j}"
        );
        assert!(
            j.contains(r#""clat_p99_ms":null,"clat_p99.9_ms":3.0"#),
            "{j}"
        );
        assert!(j.ends_with("}\n") && !j.contains("iocost"));
    }

    #[test]
    fn csv_quotes_values_with_commas() {
        let r = record();
        let h = csv_header(
            &r.values
                .0
                .iter()
                .map(|(k, _)| k.clone())
                .collect::<Vec<_>>(),
        );
        assert!(h.starts_with("point,seed,device.iops,cgroup.a.fio:bs,job,iops"));
        let row = r.csv_rows();
        assert_eq!(
            row,
            "3,2,3000,\"4k,64k\",a,10,0.5,0.002,1.25,1,2,,3,4,10,0.5,\n"
        );
        assert_eq!(
            h.trim_end().split(',').count(),
            row.trim_end().split(',').count() - 1,
            "one quoted comma"
        );
    }
}
