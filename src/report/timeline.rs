//! Each job's IOPS and latency per time bin (`jobs.csv`, the job panels every picture
//! draws under its own), and what the policies' pictures share: cgroup names, the
//! label of a panel that draws only its first cgroups, the run's scheduled events and
//! its jobs' colours (`plot_run`: a job has one colour in every picture of its run).
//!
//! Each policy's and elevator's own timeline (its CSV, its series and picture) lives
//! in its folder as a `crate::stack::stream::TimelineRow` (`src/throttle/timeline.rs`,
//! `src/iocost/timeline.rs`, `src/iolatency/timeline.rs`,
//! `src/sched/mq_deadline/timeline.rs`).
//!
//! Long format (one line per cgroup per tick) keeps the columns fixed whatever the
//! number of cgroups, so the files load directly into pandas, R or a spreadsheet.

use std::collections::HashMap;

use std::collections::BTreeMap;
use std::path::Path;

use crate::blkcg::CgroupTree;
use crate::report::csv_field;
use crate::report::decimate::Lines;
use crate::report::plot::{Event, Panel, Picture, Series, plot_picture};
use crate::scenario::resolve::{DeviceAction, DeviceWrite, IfaceWrite};
use crate::sim::Ns;
use crate::sim::timebins::TimeBins;
use crate::stack::stream::PlotCtx;

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

/// A panel's lines from per-cgroup series, each named by its cgroup's path and
/// `suffix` (so that a cgroup has one colour in every panel).
pub fn cgroup_lines(tree: &CgroupTree, m: &Lines<u32>, suffix: &str) -> Vec<Series> {
    m.iter()
        .map(|(cg, d)| Series {
            name: format!("{}{suffix}", cg_name(tree, *cg)),
            points: d.points(),
        })
        .collect()
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

/// `jobs.csv`'s header.
pub const JOBS_CSV_HEADER: &str = "t_s,job,ios,iops,lat_mean_ms\n";

/// Each job's IOPS and mean latency (fio's `lat`: submission to reap) per time bin.
pub fn jobs_csv(jobs: &[JobLine]) -> String {
    let mut s = String::from(JOBS_CSV_HEADER);
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

/// How far apart (a ratio) the jobs' mean IOPS must be for the IOPS panel to be drawn
/// on a log axis: two orders of magnitude (on a linear one, a 300-IOPS job beside a
/// 30,000-IOPS one is a line along the bottom).
pub const LOG_IOPS_SPREAD: f64 = 100.0;

/// Two panels: IOPS, and mean latency on a log axis (cgroups differ by orders of
/// magnitude), one line per job, a point per whole time bin within its runtime (drawn
/// at its middle). A bin where a job completed nothing has IOPS 0 and no latency: its
/// latency line breaks there (a gap, `plot::Series`), as both lines do between a job's
/// successive fio runs. The IOPS axis is logarithmic when the jobs' mean IOPS differ
/// by [`LOG_IOPS_SPREAD`] or more (a bin with no I/O is then a gap too).
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
        let means = bins().map(|(t, b)| match b.ios {
            0 => (mid(t), f64::NAN),
            n => (mid(t), b.lat_sum_ns as f64 / n as f64 / 1e6),
        });
        let i = *place.entry(j.label.as_str()).or_insert_with(|| {
            for panel in [&mut iops, &mut lat] {
                panel.push(Series {
                    name: j.label.clone(),
                    points: Vec::new(),
                });
            }
            iops.len() - 1
        });
        // a later run: a gap between the last run's end and this one's start
        if let (Some(last), Some((t, _))) = (iops[i].points.last(), bins().next()) {
            let gap = ((last.0 + mid(t)) / 2.0, f64::NAN);
            iops[i].points.push(gap);
            lat[i].points.push(gap);
        }
        iops[i].points.extend(rates);
        lat[i].points.extend(means);
    }
    let log_iops = spread(&iops) >= LOG_IOPS_SPREAD;
    vec![
        Panel {
            y_label: if log_iops { "IOPS (log)" } else { "IOPS" }.into(),
            series: iops,
            log_y: log_iops,
        },
        Panel {
            y_label: "mean latency (ms)".into(),
            series: lat,
            log_y: true,
        },
    ]
}

/// The ratio of the highest line's mean value to the lowest's, among lines with a
/// value above 0 (1 when there are fewer than two).
fn spread(lines: &[Series]) -> f64 {
    let means = lines.iter().filter_map(|s| {
        let ys = s.points.iter().map(|p| p.1).filter(|y| y.is_finite());
        let (sum, n) = ys.fold((0.0, 0u64), |(a, n), y| (a + y, n + 1));
        (sum > 0.0).then(|| sum / n as f64)
    });
    let (lo, hi) = means.fold((f64::INFINITY, 0.0f64), |(lo, hi), m| {
        (lo.min(m), hi.max(m))
    });
    if lo.is_finite() { hi / lo } else { 1.0 }
}

/// The most characters of an event's label (a long `io.cost.model` line would run
/// across the picture).
const EVENT_LABEL_MAX: usize = 40;

/// The run's scheduled events as its time-axis pictures mark them: each interface
/// write after the start (`cgroup/file line`; the writes at 0 set the run up) and each
/// device action (`disk removed`, `badblocks +2048-4095`), the ones at one time in one
/// label.
pub fn schedule_events(
    writes: &[IfaceWrite],
    device: &[DeviceWrite],
    tree: &CgroupTree,
) -> Vec<Event> {
    let mut at: BTreeMap<Ns, Vec<String>> = BTreeMap::new();
    for w in writes.iter().filter(|w| w.at > 0) {
        let file = match tree.nodes[w.cgroup as usize].path.as_str() {
            "" => w.file.name().to_string(),
            cg => format!("{cg}/{}", w.file.name()),
        };
        at.entry(w.at)
            .or_default()
            .push(format!("{file} {}", w.line));
    }
    for d in device {
        let what = match d.action {
            DeviceAction::Remove => "disk removed".to_string(),
            DeviceAction::Badblocks(_) => format!("badblocks {}", d.line),
        };
        at.entry(d.at).or_default().push(what);
    }
    at.into_iter()
        .map(|(t, labels)| {
            let label = labels.join("; ");
            let label = match label.char_indices().nth(EVENT_LABEL_MAX) {
                Some((cut, _)) => format!("{}…", &label[..cut]),
                None => label,
            };
            Event {
                at: t as f64 / 1e9,
                label,
            }
        })
        .collect()
}

/// Draw a run's time-axis picture `panels` to `base.png` and `base.svg`: its jobs
/// keep the colours of their order among the run's jobs (so a job, and a cgroup line
/// named like it, has one colour in every picture of the run), its scheduled events
/// marked.
pub fn plot_run(base: &Path, title: &str, panels: &[Panel], ctx: &PlotCtx) -> Result<(), String> {
    let classes = job_classes(ctx.jobs);
    plot_picture(
        base,
        &Picture {
            classes: &classes,
            events: ctx.events,
            ..Picture::new(title, "time (s)", panels)
        },
    )
}

/// The run's distinct job labels, in order.
pub fn job_classes<'a>(jobs: &'a [JobLine]) -> Vec<&'a str> {
    let mut seen = std::collections::HashSet::with_capacity(jobs.len());
    jobs.iter()
        .map(|j| j.label.as_str())
        .filter(|l| seen.insert(*l))
        .collect()
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
        assert_eq!(a.len(), 2 * panels[0].series[1].points.len() + 1);
        assert!(a.windows(2).all(|w| w[0].0 < w[1].0), "{a:?}");
        // the time between the runs is a gap in both panels, not a line across it
        for p in &panels {
            let a = &p.series[0].points;
            let between: Vec<_> = a.iter().filter(|p| p.0 > 2.5 && p.0 < 9.5).collect();
            assert!(between.len() == 1 && between[0].1.is_nan(), "{a:?}");
        }
    }

    /// A job's bins: `ios[k]` completions of 1 ms in the `k`-th 100 ms bin.
    fn bins(ios: &[u64]) -> TimeBins {
        let mut b = TimeBins::default();
        for (s, &n) in ios.iter().enumerate() {
            for k in 0..n {
                b.add(s as u64 * crate::sim::timebins::START_WIDTH + k, 1_000_000);
            }
        }
        b
    }

    /// A window where a job completed nothing: IOPS 0, and its latency a gap.
    #[test]
    fn an_empty_window_is_a_latency_gap() {
        let b = bins(&[5, 5, 0, 5]);
        let jobs = [JobLine {
            label: "a".into(),
            bins: &b,
            until: None,
        }];
        let panels = job_panels(&jobs);
        let iops: Vec<f64> = panels[0].series[0].points.iter().map(|p| p.1).collect();
        assert_eq!(iops, [50.0, 50.0, 0.0, 50.0]);
        let lat = &panels[1].series[0].points;
        assert_eq!(lat.len(), 4);
        assert!(lat[2].1.is_nan() && lat[3].1 == 1.0, "{lat:?}");
    }

    /// Jobs 1000× apart share a log IOPS axis; jobs 2× apart a linear one.
    #[test]
    fn iops_on_a_log_axis_when_jobs_differ_by_orders_of_magnitude() {
        let (fast, slow, half) = (bins(&[2000, 2000]), bins(&[2, 2]), bins(&[1000, 1000]));
        let line = |label: &str, bins| JobLine {
            label: label.into(),
            bins,
            until: None,
        };
        let far = job_panels(&[line("fast", &fast), line("slow", &slow)]);
        assert!(far[0].log_y, "{}", far[0].y_label);
        let near = job_panels(&[line("fast", &fast), line("half", &half)]);
        assert!(!near[0].log_y);
        // a job that completed nothing does not make the axis log
        let idle = bins(&[0, 0]);
        let none = job_panels(&[line("fast", &fast), line("idle", &idle)]);
        assert!(!none[0].log_y);
    }

    /// The schedule's writes after the start and its device actions are events, the
    /// ones at one time in one label; the setup's writes at 0 are not.
    #[test]
    fn scheduled_writes_and_device_actions_are_events() {
        use crate::scenario::resolve::IfaceFile;
        let mut tree = CgroupTree::default();
        let a = tree.ensure("a");
        let file = IfaceFile::from_key("io.max").unwrap();
        let write = |at: Ns, line: &str| IfaceWrite {
            at,
            cgroup: a,
            file,
            line: line.into(),
            src_line: None,
        };
        let writes = [
            write(0, "8:0 rbps=1"),
            write(2_000_000_000, "8:0 riops=100"),
        ];
        let device = [DeviceWrite {
            at: 2_000_000_000,
            action: DeviceAction::Remove,
            line: "remove".into(),
            src_line: None,
        }];
        let events = schedule_events(&writes, &device, &tree);
        assert_eq!(
            events,
            [Event {
                at: 2.0,
                label: "a/io.max 8:0 riops=100; disk removed".into(),
            }]
        );
    }
}
