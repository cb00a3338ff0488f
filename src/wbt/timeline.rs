//! wbt's timeline: `wbt.csv` — a line per ended window (its verdict, the step and
//! limits it left, its read and write samples) — and its picture `wbt.png` (the limits
//! and the writes in flight, the fastest read of each window against the target, the
//! step), as a [`TimelineRow`] of the stack's streams.

use std::any::Any;
use std::path::Path;

use super::RqStat;
use crate::blkcg::CgroupTree;
use crate::report::decimate::Lines;
use crate::report::plot::{Panel, Series as Line};
use crate::report::timeline::{job_panels, plot_run};
use crate::sim::Ns;
use crate::stack::stream::{ChartDef, PictureDef, PlotCtx, RowCtx, Series, StreamDef, TimelineRow};

/// wbt's stream.
pub static STREAM: StreamDef = StreamDef {
    name: "wbt",
    title: "wbt",
    csv: "wbt.csv",
    header: WBT_CSV_HEADER,
    picture: Some(PictureDef {
        stem: "wbt",
        png: "wbt.png",
        svg: "wbt.svg",
        title: "wbt",
        about: "writeback throttling: the limits on buffered writes in flight, each \
                window's fastest read against the target, and the scale step",
        series: || Box::<WbtSeries>::default(),
    }),
    charts: &WBT_CHARTS,
};

/// wbt's charts: per window.
const WBT_CHARTS: [ChartDef; 2] = [
    ChartDef::new(
        "depth",
        "",
        &["max_depth", "wb_normal", "wb_background", "inflight"],
        &[],
    ),
    ChartDef::new(
        "read latency against target",
        "µs",
        &["read_min_us", "read_mean_us", "target_us"],
        &[],
    )
    .log(),
];

/// `wbt.csv`'s header: one line per window, as `wb_timer_fn()` ended it.
const WBT_CSV_HEADER: &str = "t_s,status,step,max_depth,wb_normal,wb_background,inflight,next_window_ms,read_samples,read_min_us,read_mean_us,write_samples,write_mean_us,target_us\n";

/// A window's verdict (`latency_exceeded()`'s `LAT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowStatus {
    Ok = 1,
    Unknown = 2,
    UnknownWrites = 3,
    Exceeded = 4,
}

impl WindowStatus {
    pub fn name(self) -> &'static str {
        match self {
            WindowStatus::Ok => "ok",
            WindowStatus::Unknown => "unknown",
            WindowStatus::UnknownWrites => "unknown-writes",
            WindowStatus::Exceeded => "exceeded",
        }
    }
}

/// One ended window: its verdict and samples, and the state it left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WbtRow {
    pub at: Ns,
    pub status: WindowStatus,
    pub step: i32,
    pub max_depth: u32,
    pub wb_normal: u32,
    pub wb_background: u32,
    /// Tracked writes in flight as the window ended.
    pub inflight: u32,
    /// The next window's length.
    pub window_ns: u64,
    pub read: RqStat,
    pub write: RqStat,
    /// The target (`min_lat_nsec`).
    pub min_lat_ns: u64,
}

impl TimelineRow for WbtRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, _tree: &CgroupTree) {
        let us = |ns: u64| ns as f64 / 1e3;
        let read_min = if self.read.nr_samples > 0 {
            format!("{:.1}", us(self.read.min))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{:.3},{},{},{},{},{},{},{:.3},{},{},{:.1},{},{:.1},{}\n",
            self.at as f64 / 1e9,
            self.status.name(),
            self.step,
            self.max_depth,
            self.wb_normal,
            self.wb_background,
            self.inflight,
            self.window_ns as f64 / 1e6,
            self.read.nr_samples,
            read_min,
            us(self.read.mean()),
            self.write.nr_samples,
            us(self.write.mean()),
            self.min_lat_ns / 1000
        ));
    }
}

/// The picture's series, decimated as rows arrive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WbtSeries {
    /// max_depth, wb_normal, wb_background, in flight.
    depth: Lines<u8>,
    /// The fastest read of each window and the target (ms).
    latency: Lines<u8>,
    step: Lines<u8>,
}

const DEPTH_NAMES: [&str; 4] = [
    "max_depth (sync writeback)",
    "wb_normal",
    "wb_background",
    "writes in flight",
];
const LATENCY_NAMES: [&str; 2] = ["fastest read of the window", "target (wbt_lat_usec)"];

impl Series for WbtSeries {
    fn add(&mut self, row: &dyn Any, _ctx: &RowCtx) {
        let Some(r) = row.downcast_ref::<WbtRow>() else {
            return;
        };
        let depths = [r.max_depth, r.wb_normal, r.wb_background, r.inflight];
        for (k, d) in depths.into_iter().enumerate() {
            self.depth.add(k as u8, r.at, f64::from(d));
        }
        if r.read.nr_samples > 0 {
            self.latency.add(0, r.at, r.read.min as f64 / 1e6);
        }
        self.latency.add(1, r.at, r.min_lat_ns as f64 / 1e6);
        self.step.add(0, r.at, f64::from(r.step));
    }

    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String> {
        let named = |m: &Lines<u8>, names: &[&str]| {
            m.iter()
                .map(|(k, d)| Line {
                    name: names[*k as usize].to_string(),
                    points: d.points(),
                })
                .collect::<Vec<_>>()
        };
        let mut panels = vec![
            Panel {
                y_label: "buffered writes in flight (limits)".into(),
                series: named(&self.depth, &DEPTH_NAMES),
                log_y: false,
            },
            Panel {
                y_label: "read latency (ms)".into(),
                series: named(&self.latency, &LATENCY_NAMES),
                log_y: true,
            },
            Panel {
                y_label: "scale step (+ = throttled)".into(),
                series: named(&self.step, &["step"]),
                log_y: false,
            },
        ];
        panels.extend(job_panels(ctx.jobs));
        plot_run(base, title, &panels, ctx)
    }
}
