//! blk-iolatency's timeline: `iolatency.csv` — a `window` line per ended window of a
//! group with a target, a `tick` line per sample tick per such group and its siblings —
//! and its picture `iolatency.png` (each group's depth, window latency against its
//! target, missed share and cookie over the jobs' IOPS and latency), as a
//! [`TimelineRow`] of the stack's streams.

use std::any::Any;
use std::path::Path;

use super::IolatRow;
use super::grp::DEFAULT_SCALE_COOKIE;
use crate::blkcg::CgroupTree;
use crate::report::csv_field;
use crate::report::decimate::Lines;
use crate::report::plot::Panel;
use crate::report::timeline::{cg_name, cgroup_lines, first_lines, job_panels, plot_run};
use crate::stack::stream::{ChartDef, PictureDef, PlotCtx, RowCtx, Series, StreamDef, TimelineRow};

/// blk-iolatency's stream.
pub static STREAM: StreamDef = StreamDef {
    name: "iolatency",
    title: "blk-iolatency",
    csv: "iolatency.csv",
    header: IOLATENCY_CSV_HEADER,
    picture: Some(PictureDef {
        stem: "iolatency",
        png: "iolatency.png",
        svg: "iolatency.svg",
        title: "blk-iolatency",
        about: "blk-iolatency: each group's window latency and queue depth",
        series: || Box::<IolatencySeries>::default(),
    }),
    charts: &IOLATENCY_CHARTS,
};

/// blk-iolatency's charts: each window's mean against its target, and each tick's
/// queue depth and in-flight I/O, per cgroup.
const IOLATENCY_CHARTS: [ChartDef; 3] = [
    ChartDef::new(
        "window mean and target",
        "µs",
        &["mean_us", "target_us"],
        &["cgroup"],
    )
    .only("kind", "window")
    .log(),
    ChartDef::new("max_depth", "", &["max_depth"], &["cgroup"]).only("kind", "tick"),
    ChartDef::new("in flight", "", &["inflight"], &["cgroup"]).only("kind", "tick"),
];

impl TimelineRow for IolatRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, tree: &CgroupTree) {
        iolatency_csv_row(out, self, tree);
    }
}

/// `iolatency.csv`'s header: blk-iolatency, a `window` line per ended window of a group
/// with a target and a `tick` line per sample tick per such group and its siblings.
const IOLATENCY_CSV_HEADER: &str = "t_s,kind,cgroup,target_us,total,missed,mean_us,lat_avg_us,ok,verdict,cookie,max_depth,inflight,sleepers,use_delay,delay_us,enabled\n";

fn depth_text(d: u32) -> String {
    if d == u32::MAX {
        "max".into()
    } else {
        d.to_string()
    }
}

/// One line of `iolatency.csv` (`cookie` is the parent's, relative to the default).
fn iolatency_csv_row(out: &mut String, r: &IolatRow, tree: &CgroupTree) {
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
/// each job's IOPS and latency under them. A group's lines are named by its path
/// alone (its target `PATH target`), so they have one colour in every panel, the
/// colour of the job named like it (`timeline::plot_run`).
fn plot_iolatency(
    base: &Path,
    title: &str,
    series: &IolatencySeries,
    ctx: &PlotCtx,
) -> Result<(), String> {
    let lines = |m: &Lines<u32>, suffix: &str| cgroup_lines(ctx.tree, m, suffix);
    let mut latency = lines(&series.window_ms, "");
    latency.extend(lines(&series.target_ms, " target"));
    let mut panels = vec![
        Panel {
            y_label: first_lines("max_depth in force (max = nr_requests)", &series.depth),
            series: lines(&series.depth, ""),
            log_y: false,
        },
        Panel {
            y_label: first_lines("window mean latency (ms)", &series.window_ms),
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
    panels.extend(job_panels(ctx.jobs));
    plot_run(base, title, &panels, ctx)
}

impl Series for IolatencySeries {
    fn add(&mut self, row: &dyn Any, ctx: &RowCtx) {
        if let Some(r) = row.downcast_ref::<IolatRow>() {
            IolatencySeries::add(self, r, ctx.nr_requests);
        }
    }
    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String> {
        plot_iolatency(base, title, self, ctx)
    }
}
