//! The controllers' timelines as CSV (one row per iocost period, one row per throttle
//! group and direction every 100 ms, blk-iolatency's windows and ticks, mq-deadline's
//! levels every 100 ms), each job's IOPS and latency per time bin
//! (`jobs.csv`), and the pictures drawn from them.
//!
//! Long format (one line per cgroup per tick) keeps the columns fixed whatever the
//! number of cgroups, so the files load directly into pandas, R or a spreadsheet.

use std::collections::HashMap;
use std::path::Path;

use crate::blkcg::CgroupTree;
use crate::iocost::ctl::PeriodRow;
use crate::iolatency::IolatRow;
use crate::iolatency::grp::DEFAULT_SCALE_COOKIE;
use crate::report::csv_field;
use crate::report::decimate::{Decimated, Lines};
use crate::report::plot::{COLORS, Panel, Series, plot_panels, plot_panels_in};
use crate::sched::mq_deadline::DdPrio;
use crate::sched::mq_deadline::elevator::DeadlineRow;
use crate::sim::Ns;
use crate::sim::timebins::TimeBins;
use crate::throttle::ThrotlRow;
use plotters::style::RGBColor;

fn cg_name(tree: &CgroupTree, cg: u32) -> String {
    let p = &tree.nodes[cg as usize].path;
    if p.is_empty() { "/".into() } else { p.clone() }
}

/// `timeline.csv`'s header: blk-iocost, one line per period per active cgroup.
pub const IOCOST_CSV_HEADER: &str = "t_s,period_us,vrate_base_pct,vrate_eff_pct,busy_before,busy_after,nr_done,missed_ppm_r,missed_ppm_w,rq_wait_pct,nr_lagging,nr_shortages,nr_donors,cgroup,active,inuse,hweight_active,hweight_inuse,budget_us,inflight_pct,usage_pct,waiters,abs_vdebt,delay_us\n";

/// One period's lines of `timeline.csv` (the device fields repeated per cgroup).
pub fn iocost_csv_rows(out: &mut String, r: &PeriodRow, tree: &CgroupTree) {
    let dev = format!(
        "{:.6},{},{:.2},{:.2},{},{},{},{},{},{},{},{},{}",
        r.t as f64 / 1e9,
        r.period_us,
        r.vrate_base_pct,
        r.vrate_eff_pct,
        r.busy_before,
        r.busy_after,
        r.nr_done,
        r.missed_ppm[0],
        r.missed_ppm[1],
        r.rq_wait_pct,
        r.nr_lagging,
        r.nr_shortages,
        r.nr_donors
    );
    if r.cgroups.is_empty() {
        out.push_str(&format!("{dev},,,,,,,,,,,\n"));
    }
    for c in &r.cgroups {
        out.push_str(&format!(
            "{dev},{},{},{},{},{},{},{},{},{},{},{}\n",
            csv_field(&cg_name(tree, c.cg)),
            c.active,
            c.inuse,
            c.hwa,
            c.hwi,
            c.budget_us,
            c.inflight_pct,
            c.usage_pct,
            c.waiters,
            c.debt,
            c.delay
        ));
    }
}

/// `throttle.csv`'s header: blk-throttle, one line per limited group and direction
/// every sample tick.
pub const THROTTLE_CSV_HEADER: &str = "t_s,cgroup,dir,queued,bytes_disp,ios_disp,slice_start_jiffies,slice_end_jiffies,disptime_jiffies\n";

/// One line of `throttle.csv`.
pub fn throttle_csv_row(out: &mut String, t: Ns, r: &ThrotlRow, tree: &CgroupTree) {
    out.push_str(&format!(
        "{:.3},{},{},{},{},{},{},{},{}\n",
        t as f64 / 1e9,
        csv_field(&cg_name(tree, r.cg)),
        r.dir.name(),
        r.queued,
        r.bytes_disp,
        r.io_disp,
        r.slice_start,
        r.slice_end,
        r.disptime.map(|d| d.to_string()).unwrap_or_default()
    ));
}

/// `iolatency.csv`'s header: blk-iolatency, a `window` line per ended window of a group
/// with a target and a `tick` line per sample tick per such group and its siblings.
pub const IOLATENCY_CSV_HEADER: &str = "t_s,kind,cgroup,target_us,total,missed,mean_us,lat_avg_us,ok,verdict,cookie,max_depth,inflight,sleepers,use_delay,delay_us,enabled\n";

fn depth_text(d: u32) -> String {
    if d == u32::MAX {
        "max".into()
    } else {
        d.to_string()
    }
}

/// One line of `iolatency.csv` (`cookie` is the parent's, relative to the default).
pub fn iolatency_csv_row(out: &mut String, r: &IolatRow, tree: &CgroupTree) {
    let rel = |c: u32| i64::from(c) - i64::from(DEFAULT_SCALE_COOKIE);
    match r {
        IolatRow::Window(w) => out.push_str(&format!(
            "{:.6},window,{},{},{},{},{:.1},{:.1},{},{},{},{},,,{},,\n",
            w.at as f64 / 1e9,
            csv_field(&cg_name(tree, w.cgroup)),
            w.target / 1000,
            w.total,
            w.missed,
            w.mean as f64 / 1e3,
            w.lat_avg as f64 / 1e3,
            u8::from(w.ok),
            w.verdict.name(),
            rel(w.cookie),
            depth_text(w.max_depth),
            w.use_delay
        )),
        IolatRow::Tick(t) => out.push_str(&format!(
            "{:.3},tick,{},{},,,,,,,{},{},{},{},{},{},{}\n",
            t.at as f64 / 1e9,
            csv_field(&cg_name(tree, t.cgroup)),
            t.target / 1000,
            rel(t.cookie),
            depth_text(t.max_depth),
            t.inflight,
            t.sleepers,
            t.use_delay,
            t.delay_nsec / 1000,
            u8::from(t.enabled)
        )),
    }
}

/// `deadline.csv`'s header: mq-deadline, one line per priority level per sample tick —
/// waiting in the scheduler, held by the driver, dispatched and completed in the tick,
/// then the debugfs `*_stats` totals.
pub const DEADLINE_CSV_HEADER: &str = "t_s,class,queued,in_flight,dispatched,completed,inserted_total,merged_total,dispatched_total,completed_total\n";

/// One line of `deadline.csv`.
pub fn deadline_csv_row(out: &mut String, r: &DeadlineRow) {
    out.push_str(&format!(
        "{:.3},{},{},{},{},{},{},{},{},{}\n",
        r.at as f64 / 1e9,
        r.prio.name(),
        r.queued,
        r.in_flight,
        r.dispatched,
        r.completed,
        r.totals.inserted,
        r.totals.merged,
        r.totals.dispatched,
        r.totals.completed
    ));
}

/// mq-deadline's series for its picture, per level (by [`DdPrio`] order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeadlineSeries {
    /// Requests waiting in the scheduler at each tick.
    pub queued: std::collections::BTreeMap<DdPrio, Decimated>,
    /// Dispatches per second over each tick.
    pub dispatch_rate: std::collections::BTreeMap<DdPrio, Decimated>,
    /// The previous tick, for the rate.
    last_at: std::collections::BTreeMap<DdPrio, Ns>,
}

impl DeadlineSeries {
    pub fn add(&mut self, r: &DeadlineRow) {
        self.queued
            .entry(r.prio)
            .or_default()
            .add(r.at, f64::from(r.queued));
        // a level's first row may cover more than one tick: its rate is over the
        // time since the run began
        let since = self.last_at.insert(r.prio, r.at).unwrap_or(0);
        if r.at > since {
            let rate = f64::from(r.dispatched) * 1e9 / (r.at - since) as f64;
            self.dispatch_rate
                .entry(r.prio)
                .or_default()
                .add(r.at, rate);
        }
    }
}

/// A priority level's colour in every deadline picture, whichever levels a run has:
/// `rt` red, `be` blue, `idle` grey.
fn class_colour(p: DdPrio) -> RGBColor {
    match p {
        DdPrio::Rt => COLORS[3],
        DdPrio::Be => COLORS[0],
        DdPrio::Idle => COLORS[7],
    }
}

/// Per level: requests waiting in mq-deadline, and its dispatch rate, each level in its
/// own colour (`class_colour`); then each job's IOPS and latency under them, the jobs
/// in the other colours, so a job never reads as a level (a job `rt` is not the level
/// `rt`: its bios' class is the summary's `PRIO`).
pub fn plot_deadline(
    base: &Path,
    title: &str,
    series: &DeadlineSeries,
    jobs: &[JobLine],
) -> Result<(), String> {
    let lines = |m: &std::collections::BTreeMap<DdPrio, Decimated>| -> (Vec<Series>, Vec<_>) {
        m.iter()
            .map(|(p, d)| {
                let s = Series {
                    name: p.name().to_string(),
                    points: d.points(),
                };
                (s, class_colour(*p))
            })
            .unzip()
    };
    let (queued, queued_colours) = lines(&series.queued);
    let (rate, rate_colours) = lines(&series.dispatch_rate);
    let mut panels = vec![
        Panel {
            y_label: "queued in mq-deadline".into(),
            series: queued,
            log_y: false,
        },
        Panel {
            y_label: "dispatched per second".into(),
            series: rate,
            log_y: false,
        },
    ];
    let job_colours: Vec<RGBColor> = COLORS
        .into_iter()
        .filter(|c| DdPrio::ALL.iter().all(|&p| class_colour(p) != *c))
        .collect();
    panels.extend(job_panels(jobs));
    let mut palettes = vec![&queued_colours[..], &rate_colours[..]];
    palettes.resize(panels.len(), &job_colours[..]);
    plot_panels_in(base, title, "time (s)", &panels, &palettes)
}

/// blk-iolatency's series for its picture, per cgroup, decimated as rows arrive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IolatencySeries {
    /// The `max_depth` in force at each tick (unlimited, or not enforced, drawn as the
    /// device's `nr_requests`).
    pub depth: Lines<u32>,
    /// Each window's mean latency (ms) and the target (ms).
    pub window_ms: Lines<u32>,
    pub target_ms: Lines<u32>,
    /// Missed share of each window (%), non-rotational disks.
    pub missed_pct: Lines<u32>,
    /// The parent's cookie as each group saw it, relative to the default.
    pub cookie: Lines<u32>,
}

impl IolatencySeries {
    /// Add a row; `unlimited` is the depth drawn for `max` (the device's `nr_requests`).
    pub fn add(&mut self, r: &IolatRow, unlimited: u32) {
        match r {
            IolatRow::Window(w) => {
                let ms = |ns: u64| ns as f64 / 1e6;
                self.window_ms.add(w.cgroup, w.at, ms(w.mean));
                self.target_ms.add(w.cgroup, w.at, ms(w.target));
                if w.ssd && w.total > 0 {
                    let pct = w.missed as f64 * 100.0 / w.total as f64;
                    self.missed_pct.add(w.cgroup, w.at, pct);
                }
            }
            IolatRow::Tick(t) => {
                // without a target on the device the limit is not enforced
                let d = if t.enabled {
                    t.max_depth.min(unlimited)
                } else {
                    unlimited
                };
                self.depth.add(t.cgroup, t.at, f64::from(d));
                let rel = i64::from(t.cookie) - i64::from(DEFAULT_SCALE_COOKIE);
                self.cookie.add(t.cgroup, t.at, rel as f64);
            }
        }
    }
}

/// Each group's `max_depth` over time, its windows' mean latency against its target,
/// the missed share of its windows (non-rotational), the cookie each group saw, and
/// each job's IOPS and latency under them.
pub fn plot_iolatency(
    base: &Path,
    title: &str,
    series: &IolatencySeries,
    tree: &CgroupTree,
    jobs: &[JobLine],
) -> Result<(), String> {
    let lines = |m: &Lines<u32>, suffix: &str| -> Vec<Series> {
        m.iter()
            .map(|(cg, d)| Series {
                name: format!("{}{suffix}", cg_name(tree, *cg)),
                points: d.points(),
            })
            .collect()
    };
    let mut latency = lines(&series.window_ms, " window mean");
    latency.extend(lines(&series.target_ms, " target"));
    let mut panels = vec![
        Panel {
            y_label: first_lines("max_depth in force (max = nr_requests)", &series.depth),
            series: lines(&series.depth, ""),
            log_y: false,
        },
        Panel {
            y_label: first_lines("window latency (ms)", &series.window_ms),
            series: latency,
            log_y: true,
        },
    ];
    if !series.missed_pct.is_empty() {
        panels.push(Panel {
            y_label: first_lines("missed % (ok below 10)", &series.missed_pct),
            series: lines(&series.missed_pct, ""),
            log_y: false,
        });
    }
    panels.push(Panel {
        y_label: first_lines("cookie seen − default", &series.cookie),
        series: lines(&series.cookie, ""),
        log_y: false,
    });
    panels.extend(job_panels(jobs));
    plot_panels(base, title, "time (s)", &panels)
}

/// A panel's y label, saying when it draws only the first cgroups' lines.
fn first_lines(label: &str, lines: &Lines<u32>) -> String {
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

/// vrate and busy_level over time, each cgroup's hweight_inuse, and each job's IOPS
/// and latency under it; the controller's series come decimated (`record.rs`).
pub fn plot_iocost(
    base: &Path,
    title: &str,
    series: &IocostSeries,
    tree: &CgroupTree,
    jobs: &[JobLine],
) -> Result<(), String> {
    let mut panels = vec![
        Panel {
            y_label: "vrate %".into(),
            series: vec![Series {
                name: "vrate (base)".into(),
                points: series.vrate.points(),
            }],
            log_y: false,
        },
        Panel {
            y_label: "busy_level".into(),
            series: vec![Series {
                name: "busy_level".into(),
                points: series.busy_level.points(),
            }],
            log_y: false,
        },
        Panel {
            y_label: first_lines("hweight_inuse %", &series.hweight_inuse),
            series: series
                .hweight_inuse
                .iter()
                .map(|(cg, d)| Series {
                    name: cg_name(tree, *cg),
                    points: d.points(),
                })
                .collect(),
            log_y: false,
        },
    ];
    panels.extend(job_panels(jobs));
    plot_panels(base, title, "time (s)", &panels)
}

/// blk-iocost's series for its picture, decimated as the periods arrive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IocostSeries {
    pub vrate: Decimated,
    pub busy_level: Decimated,
    /// Per cgroup, in cgroup order (the first [`crate::report::decimate::MAX_LINES`]).
    pub hweight_inuse: Lines<u32>,
}

impl IocostSeries {
    pub fn add(&mut self, r: &PeriodRow) {
        self.vrate.add(r.t, r.vrate_base_pct);
        self.busy_level.add(r.t, r.busy_after as f64);
        for c in &r.cgroups {
            self.hweight_inuse
                .add(c.cg, r.t, c.hwi as f64 * 100.0 / 65536.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iocost::ctl::CgRow;

    #[test]
    fn iocost_rows_flatten_per_cgroup() {
        let mut tree = CgroupTree::default();
        let a = tree.ensure("a");
        let row = PeriodRow {
            t: 7_000_000,
            period_us: 7000,
            vrate_base_pct: 125.0,
            vrate_eff_pct: 125.5,
            busy_before: 3,
            busy_after: 0,
            nr_done: 0,
            missed_ppm: [0, 0],
            rq_wait_pct: 0,
            nr_lagging: 1,
            nr_shortages: 1,
            nr_donors: 0,
            cgroups: vec![CgRow {
                cg: a,
                active: 100,
                inuse: 100,
                hwa: 65536,
                hwi: 65536,
                budget_us: 3500,
                inflight_pct: 10,
                usage_pct: 50,
                waiters: 2,
                debt: 0,
                delay: 0,
            }],
        };
        let mut csv = String::from(IOCOST_CSV_HEADER);
        iocost_csv_rows(&mut csv, &row, &tree);
        let line = csv.lines().nth(1).unwrap();
        assert!(
            line.starts_with(
                "0.007000,7000,125.00,125.50,3,0,0,0,0,0,1,1,0,a,100,100,65536,65536,3500"
            ),
            "{line}"
        );
    }

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

    /// A level has its colour whichever levels a run has (`idle` alone is grey, not
    /// the first series' blue), and a job named like a level is not drawn in its colour.
    #[test]
    fn deadline_levels_keep_their_colours() {
        let mut series = DeadlineSeries::default();
        for at in 1..20u64 {
            series.add(&DeadlineRow {
                at: at * 100_000_000,
                prio: DdPrio::Idle,
                queued: 2,
                in_flight: 1,
                dispatched: 3,
                completed: 3,
                totals: Default::default(),
            });
        }
        let mut bins = TimeBins::default();
        for t in 0..2000u64 {
            bins.add(t * 1_000_000, 1_000_000);
        }
        let jobs = [JobLine {
            label: "rt".into(),
            bins: &bins,
            until: None,
        }];
        let dir = std::env::temp_dir().join(format!("blkcg-sim-dd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("deadline");
        let drawn = plot_deadline(&base, "t", &series, &jobs);
        let svg = std::fs::read_to_string(base.with_extension("svg"));
        std::fs::remove_dir_all(&dir).unwrap();
        drawn.unwrap();
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        let stroked = |c: RGBColor| format!("stroke=\"{}\"", hex(c));
        let svg = svg.unwrap();
        assert!(
            svg.contains(&stroked(class_colour(DdPrio::Idle))),
            "idle not grey"
        );
        assert!(!svg.contains(&stroked(COLORS[0])), "a series by index");
        assert!(
            !svg.contains(&stroked(class_colour(DdPrio::Rt))),
            "job rt as level rt"
        );
        assert!(svg.contains(&stroked(COLORS[1])), "the jobs' first colour");
    }
}
