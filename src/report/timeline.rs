//! Each job's IOPS and latency per time bin (`jobs.csv`, the job panels every picture
//! draws under its own), and what the policies' pictures share: cgroup names and
//! the label of a panel that draws only its first cgroups.
//!
//! Each policy's and elevator's own timeline (its CSV, its series and picture) lives
//! in its folder as a `crate::stack::stream::TimelineRow` (`src/throttle/timeline.rs`,
//! `src/iocost/timeline.rs`, `src/iolatency/timeline.rs`,
//! `src/sched/mq_deadline/timeline.rs`).
//!
//! Long format (one line per cgroup per tick) keeps the columns fixed whatever the
//! number of cgroups, so the files load directly into pandas, R or a spreadsheet.

use std::collections::HashMap;

use crate::blkcg::CgroupTree;
use crate::report::csv_field;
use crate::report::decimate::Lines;
use crate::report::plot::{Panel, Series};
use crate::sim::Ns;
use crate::sim::timebins::TimeBins;

/// Cgroup `cg`'s path, `/` for the root.
pub fn cg_name(tree: &CgroupTree, cg: u32) -> String {
    let p = &tree.nodes[cg as usize].path;
    if p.is_empty() { "/".into() } else { p.clone() }
}

/// A panel's y label, saying when it draws only the first cgroups' lines.
pub fn first_lines(label: &str, lines: &Lines<u32>) -> String {
    match lines.dropped() {
        true => format!(
            "{label}, first {} cgroups",
            crate::report::decimate::MAX_LINES
        ),
        false => label.to_string(),
    }
}

/// One job's completions over time, labelled for pictures and `jobs.csv`.
pub struct JobLine<'a> {
    pub label: String,
    pub bins: &'a TimeBins,
    /// End of the job's runtime, if it has one: the pictures leave out the bins from
    /// there on, where fio reaps its last queue at once (a 128-deep queue drained in
    /// one bin would read as a burst of IOPS).
    pub until: Option<Ns>,
}

/// Each job's IOPS and mean latency (fio's `lat`: submission to reap) per time bin.
pub fn jobs_csv(jobs: &[JobLine]) -> String {
    let mut s = String::from("t_s,job,ios,iops,lat_mean_ms\n");
    for j in jobs {
        let secs = j.bins.width() as f64 / 1e9;
        for (t, b) in j.bins.iter() {
            let lat = if b.ios > 0 {
                format!("{:.3}", b.lat_sum_ns as f64 / b.ios as f64 / 1e6)
            } else {
                String::new()
            };
            s.push_str(&format!(
                "{:.3},{},{},{:.1},{lat}\n",
                t as f64 / 1e9,
                csv_field(&j.label),
                b.ios,
                b.ios as f64 / secs
            ));
        }
    }
    s
}

/// Two panels: IOPS, and mean latency on a log axis (cgroups differ by orders of
/// magnitude), one line per job, a point per whole time bin within its runtime (drawn
/// at its middle).
pub fn job_panels(jobs: &[JobLine]) -> Vec<Panel> {
    let mut iops: Vec<Series> = Vec::new();
    let mut lat: Vec<Series> = Vec::new();
    // a job's successive fio runs share one line: its place in both panels, by label
    // (a lookup per job, not a scan of the lines so far: 100,000 jobs draw in seconds)
    let mut place: HashMap<&str, usize> = HashMap::with_capacity(jobs.len());
    for j in jobs {
        let w = j.bins.width();
        let mid = |t: Ns| (t + w / 2) as f64 / 1e9;
        let bins = || {
            j.bins
                .iter()
                .take_while(|(t, _)| j.until.is_none_or(|u| t + w <= u))
        };
        let rates = bins().map(|(t, b)| (mid(t), b.ios as f64 * 1e9 / w as f64));
        let means = bins()
            .filter(|(_, b)| b.ios > 0)
            .map(|(t, b)| (mid(t), b.lat_sum_ns as f64 / b.ios as f64 / 1e6));
        let i = *place.entry(j.label.as_str()).or_insert_with(|| {
            for panel in [&mut iops, &mut lat] {
                panel.push(Series {
                    name: j.label.clone(),
                    points: Vec::new(),
                });
            }
            iops.len() - 1
        });
        iops[i].points.extend(rates);
        lat[i].points.extend(means);
    }
    vec![
        Panel {
            y_label: "IOPS".into(),
            series: iops,
            log_y: false,
        },
        Panel {
            y_label: "mean latency (ms)".into(),
            series: lat,
            log_y: true,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's successive fio runs are one line in both panels, in the order labels
    /// first appear, however far apart its runs are.
    #[test]
    fn a_jobs_runs_share_one_series() {
        let bins_at = |from_s: u64| {
            let mut b = TimeBins::default();
            for t in 0..3u64 {
                b.add((from_s + t) * crate::sim::NSEC_PER_SEC, 1_000_000);
            }
            b
        };
        let (first, other, later) = (bins_at(0), bins_at(0), bins_at(10));
        let line = |label: &str, bins| JobLine {
            label: label.into(),
            bins,
            until: None,
        };
        let jobs = [line("a", &first), line("b", &other), line("a", &later)];
        let panels = job_panels(&jobs);
        for p in &panels {
            let names: Vec<&str> = p.series.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["a", "b"], "{}", p.y_label);
        }
        let a = &panels[0].series[0].points;
        assert_eq!(a.len(), 2 * panels[0].series[1].points.len());
        assert!(a.windows(2).all(|w| w[0].0 < w[1].0), "{a:?}");
    }
}
