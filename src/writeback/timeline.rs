//! The page cache's timeline: `writeback.csv` — every sample tick, a `global` line
//! (the dirty and under-writeback pages against the thresholds) and a `wb` line per
//! cgroup with buffered writers (its pages, what it has written, its bandwidth
//! estimate and the rate its writers are let dirty at) — and its picture
//! `writeback.png`, as a [`TimelineRow`] of the stack's streams.

use std::any::Any;
use std::path::Path;

use super::limits::{PAGE_SIZE, freerun_ceiling};
use crate::blkcg::CgroupTree;
use crate::report::csv_field;
use crate::report::decimate::Lines;
use crate::report::plot::{Panel, Series as Line};
use crate::report::timeline::{cg_name, cgroup_lines, first_lines, job_panels, plot_run};
use crate::sim::Ns;
use crate::stack::stream::{ChartDef, PictureDef, PlotCtx, RowCtx, Series, StreamDef, TimelineRow};

/// The page cache's stream.
pub static STREAM: StreamDef = StreamDef {
    name: "writeback",
    title: "writeback",
    csv: "writeback.csv",
    header: WRITEBACK_CSV_HEADER,
    picture: Some(PictureDef {
        stem: "writeback",
        png: "writeback.png",
        svg: "writeback.svg",
        title: "page cache",
        about: "buffered writes: dirty and under-writeback pages against the thresholds, \
                each cgroup's writeback and the rate its writers are let dirty at",
        series: || Box::<WritebackSeries>::default(),
    }),
    charts: &WRITEBACK_CHARTS,
};

/// The page cache's charts: per scope (`global`, a cgroup's wb domain) and cgroup.
const WRITEBACK_CHARTS: [ChartDef; 3] = [
    ChartDef::new(
        "dirty and its thresholds",
        "KiB",
        &["dirty_kib", "thresh_kib", "bg_thresh_kib"],
        &["scope", "cgroup"],
    ),
    ChartDef::new(
        "under writeback",
        "KiB",
        &["writeback_kib"],
        &["scope", "cgroup"],
    ),
    ChartDef::new(
        "write bandwidth and dirty ratelimit",
        "KiB/s",
        &["write_bw_kib_s", "dirty_ratelimit_kib_s"],
        &["scope", "cgroup"],
    ),
];

/// `writeback.csv`'s header (sizes in KiB, rates in KiB/s).
const WRITEBACK_CSV_HEADER: &str = "t_s,scope,cgroup,dirty_kib,writeback_kib,thresh_kib,bg_thresh_kib,written_kib,write_bw_kib_s,dirty_ratelimit_kib_s\n";

/// One line of the page cache's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WbRow {
    /// The whole page cache (`NR_FILE_DIRTY`, `NR_WRITEBACK`, the global thresholds).
    Global {
        at: Ns,
        dirty: u64,
        writeback: u64,
        thresh: u64,
        bg_thresh: u64,
    },
    /// One cgroup's wb (pages; rates in pages/s).
    Wb {
        at: Ns,
        cgroup: u32,
        dirty: u64,
        writeback: u64,
        written: u64,
        write_bw: u64,
        dirty_ratelimit: u64,
    },
}

impl TimelineRow for WbRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, tree: &CgroupTree) {
        let kib = |pages: u64| pages * (PAGE_SIZE / 1024);
        match *self {
            WbRow::Global {
                at,
                dirty,
                writeback,
                thresh,
                bg_thresh,
            } => out.push_str(&format!(
                "{:.3},global,,{},{},{},{},,,\n",
                at as f64 / 1e9,
                kib(dirty),
                kib(writeback),
                kib(thresh),
                kib(bg_thresh)
            )),
            WbRow::Wb {
                at,
                cgroup,
                dirty,
                writeback,
                written,
                write_bw,
                dirty_ratelimit,
            } => out.push_str(&format!(
                "{:.3},wb,{},{},{},,,{},{},{}\n",
                at as f64 / 1e9,
                csv_field(&cg_name(tree, cgroup)),
                kib(dirty),
                kib(writeback),
                kib(written),
                kib(write_bw),
                kib(dirty_ratelimit)
            )),
        }
    }
}

/// The picture's series, decimated as rows arrive (MiB, MiB/s).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WritebackSeries {
    /// Global: dirty, writeback, dirty + writeback, the limit, freerun, background.
    global: Lines<u8>,
    /// Each wb's dirty and under-writeback pages together.
    wb_pages: Lines<u32>,
    /// Each wb's written rate over the last tick, and its rate limit.
    wb_written: Lines<u32>,
    wb_ratelimit: Lines<u32>,
    last_written: Vec<(u32, Ns, u64)>,
}

const GLOBAL_NAMES: [&str; 5] = [
    "dirty",
    "under writeback",
    "limit (vm.dirty_*)",
    "freerun ceiling",
    "background threshold",
];

impl Series for WritebackSeries {
    fn add(&mut self, row: &dyn Any, _ctx: &RowCtx) {
        let Some(r) = row.downcast_ref::<WbRow>() else {
            return;
        };
        let mib = |pages: u64| pages as f64 * PAGE_SIZE as f64 / f64::from(1 << 20);
        match *r {
            WbRow::Global {
                at,
                dirty,
                writeback,
                thresh,
                bg_thresh,
            } => {
                let values = [
                    dirty,
                    writeback,
                    thresh,
                    freerun_ceiling(thresh, bg_thresh),
                    bg_thresh,
                ];
                for (k, v) in values.into_iter().enumerate() {
                    self.global.add(k as u8, at, mib(v));
                }
            }
            WbRow::Wb {
                at,
                cgroup,
                dirty,
                writeback,
                written,
                dirty_ratelimit,
                ..
            } => {
                self.wb_pages.add(cgroup, at, mib(dirty + writeback));
                self.wb_ratelimit.add(cgroup, at, mib(dirty_ratelimit));
                match self.last_written.iter_mut().find(|l| l.0 == cgroup) {
                    Some(last) => {
                        let dt = at.saturating_sub(last.1).max(1) as f64 / 1e9;
                        self.wb_written
                            .add(cgroup, at, mib(written.saturating_sub(last.2)) / dt);
                        *last = (cgroup, at, written);
                    }
                    None => self.last_written.push((cgroup, at, written)),
                }
            }
        }
    }

    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String> {
        let lines = |m: &Lines<u32>, suffix: &str| cgroup_lines(ctx.tree, m, suffix);
        let global = self
            .global
            .iter()
            .map(|(k, d)| Line {
                name: GLOBAL_NAMES[*k as usize].to_string(),
                points: d.points(),
            })
            .collect();
        let mut rates = lines(&self.wb_written, " written back");
        rates.extend(lines(&self.wb_ratelimit, " dirty rate limit"));
        let mut panels = vec![
            Panel {
                y_label: "page cache (MiB)".into(),
                series: global,
                log_y: false,
            },
            Panel {
                y_label: first_lines("dirty + writeback per cgroup (MiB)", &self.wb_pages),
                series: lines(&self.wb_pages, ""),
                log_y: false,
            },
            Panel {
                y_label: first_lines("MiB/s", &self.wb_written),
                series: rates,
                log_y: false,
            },
        ];
        panels.extend(job_panels(ctx.jobs));
        plot_run(base, title, &panels, ctx)
    }
}
