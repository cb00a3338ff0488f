//! fio-compatible output, laid out as fio 3.33 prints them.
//!
//! The statistics are what the fio job machine records per I/O
//! (`crate::sim::fio::stats`: histograms, percentiles, x86 long-double exact, Welford
//! stats, depth maps and latency buckets); here they are only formatted:
//! - `json.rs`   — `--output-format=json|json+` (stat.c `show_thread_status_json()`,
//!   json.c printing: 2-space indent, `"key" : value`, `%f` floats);
//! - `text.rs`   — the normal output (`show_thread_status_normal()`,
//!   `show_run_stats()`), with fio's `num2str()` unit rules.
//!
//! A [`RunReport`] holds one fio process's worth of jobs; timestamps come from the
//! simulation (a fixed epoch plus simulated time), never the wall clock. Failed I/Os
//! show as fio shows them: `err=`/`"error"`, issued but without bytes or latency,
//! `total_err`/`first_error` under `continue_on_error`, and the lines fio prints as
//! they happen (`fio: io_u error on file ...`) in [`RunReport::messages`].

pub mod json;
pub mod text;

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::convert::Infallible;

use crate::sim::fio::stats::JobStats;
use crate::workload::fio::UnifiedRw;

/// A report that a writer (`text::write_normal`, `json::write_json`) hands out piece
/// by piece, gathered into one string.
fn gathered(
    write: impl FnOnce(&mut dyn FnMut(&str) -> Result<(), Infallible>) -> Result<(), Infallible>,
) -> String {
    let mut out = String::new();
    let Ok(()) = write(&mut |piece| {
        out.push_str(piece);
        Ok(())
    });
    out
}

/// One job (or one reporting group, with group_reporting) as fio reports it.
#[derive(Debug, Clone)]
pub struct JobReport {
    pub name: String,
    /// The cgroup the job ran in (not printed by fio; used by our summary).
    pub cgroup: String,
    /// Which of its cgroup's successive fio runs it belongs to (from 0; not printed by
    /// fio; used by our summary).
    pub round: u32,
    pub groupid: u32,
    /// Number of jobs folded into this report (group_reporting).
    pub jobs: u32,
    /// The job's options exactly as written (fio's "job options").
    pub options: Vec<(String, String)>,
    /// Seconds since the run started when the job ended.
    pub elapsed_s: u64,
    /// Job runtime in ms (after ramp_time).
    pub runtime_ms: u64,
    /// Directions the job does (read, write, trim).
    pub dirs: [bool; 3],
    pub stats: JobStats,
    pub unified: UnifiedRw,
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    pub iodepth: u32,
    pub kb_base: u64,
    pub sig_figs: u32,
    /// The header description: `rw=randread, bs=(R) 4096B-4096B, ..., ioengine=libaio, iodepth=1`.
    pub header: String,
    /// A stand-in process id (deterministic).
    pub pid: u32,
    /// The job's end time, as ctime text.
    pub time: String,
}

impl JobReport {
    /// Runtime of direction `d` in ms: the job's runtime if it moved bytes that way
    /// (fio's update_runtime() only counts directions with I/O).
    pub fn ddir_runtime(&self, d: usize) -> u64 {
        if self.stats.dd[d].io_bytes > 0 {
            self.runtime_ms
        } else {
            0
        }
    }
}

/// Each reporting group's aggregate bandwidth per direction, as show_run_stats()
/// sums it (`rs->agg[ddir]`): the group's bytes over its longest runtime, in bytes
/// per second. Built once per report, so printing N jobs stays linear in N.
pub struct GroupBw(BTreeMap<u32, [(u64, u64); 3]>);

impl GroupBw {
    pub fn of(jobs: &[JobReport]) -> Self {
        let mut groups: BTreeMap<u32, [(u64, u64); 3]> = BTreeMap::new();
        for j in jobs {
            let g = groups.entry(j.groupid).or_default();
            for (d, (bytes, max_run)) in g.iter_mut().enumerate() {
                *bytes += j.stats.dd[d].io_bytes;
                *max_run = (*max_run).max(j.ddir_runtime(d));
            }
        }
        GroupBw(groups)
    }

    /// Group `groupid`'s bandwidth in direction `d` (0 for a group with no runtime).
    pub fn get(&self, groupid: u32, d: usize) -> u64 {
        self.0
            .get(&groupid)
            .and_then(|g| (g[d].0 * 1000).checked_div(g[d].1))
            .unwrap_or(0)
    }

    /// The group ids in the order fio prints their "Run status group" blocks.
    pub fn groupids(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.keys().copied()
    }
}

/// A line fio prints while its jobs run: an I/O error (fio writes it to stderr) or
/// a job that stopped on one (`fio: pid=..., err=...`, stdout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioMessage {
    /// Simulated time it is printed at (the messages are in time order).
    pub at: u64,
    pub text: String,
}

/// One fio run: every job of every cgroup of a variant.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub version: String,
    pub timestamp: u64,
    pub timestamp_ms: u64,
    /// ctime string without the newline.
    pub time: String,
    pub global_options: Vec<(String, String)>,
    pub jobs: Vec<JobReport>,
    /// What fio printed while the jobs ran; the normal output shows it before the
    /// job blocks, as a terminal does. (fio 3.33 also puts the `fio: pid=` lines on
    /// stdout ahead of its JSON document; we print them to stderr then, so the
    /// document parses.)
    pub messages: Vec<FioMessage>,
    /// The device model's counters of the run (`BlockDevice::run_counters`); json+
    /// adds them as `"device"` after the jobs (blkcg-sim's own key, not fio's).
    pub device: Vec<(&'static str, u64)>,
}

/// The fixed epoch simulated runs start at: 2026-01-01 00:00:00 UTC.
pub const SIM_EPOCH: u64 = 1_767_225_600;

/// `ctime()`-style text in UTC: `Thu Jan  1 00:00:00 2026`.
pub fn ctime(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // civil_from_days (Howard Hinnant)
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

/// group_reporting: fold jobs of the same group of the same fio process that ask for
/// it into the group's first report, in place (no second copy of every report).
/// `keys[i]` is report i's `(group_reporting, source)`, its fio process.
pub fn group(reports: &mut Vec<JobReport>, keys: &[(bool, usize)]) {
    // (source, groupid) -> the report its group_reporting jobs fold into
    let mut folds: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    let mut kept = vec![true; reports.len()];
    for (i, &(grouped, src)) in keys.iter().enumerate() {
        if !grouped {
            continue;
        }
        match folds.entry((src, reports[i].groupid)) {
            Entry::Occupied(at) => {
                // the group's first report lies before this one
                let (before, rest) = reports.split_at_mut(i);
                let (first, j) = (&mut before[*at.get()], &rest[0]);
                first.stats.merge(&j.stats);
                first.jobs += 1;
                first.runtime_ms = first.runtime_ms.max(j.runtime_ms);
                first.elapsed_s = first.elapsed_s.max(j.elapsed_s);
                for d in 0..3 {
                    first.dirs[d] |= j.dirs[d];
                }
                kept[i] = false;
            }
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
    }
    let mut kept = kept.into_iter();
    reports.retain(|_| kept.next().unwrap_or(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_utc() {
        assert_eq!(ctime(SIM_EPOCH), "Thu Jan  1 00:00:00 2026");
        assert_eq!(
            ctime(SIM_EPOCH + 86_400 * 31 + 3_661),
            "Sun Feb  1 01:01:01 2026"
        );
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
    }
}
