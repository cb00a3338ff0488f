//! io.pressure over time: `pressure.csv` — a line per cgroup per averaging period
//! (2 s + 1 jiffy) from its first stall on, its `some` and `full` averages and totals
//! as the file would read then — and its picture `pressure.png`, as a
//! [`TimelineRow`] of the stack's streams.

use std::any::Any;
use std::path::Path;

use super::{FSHIFT, load_text};
use crate::blkcg::CgroupTree;
use crate::report::csv_field;
use crate::report::decimate::Lines;
use crate::report::plot::Panel;
use crate::report::timeline::{cg_name, cgroup_lines, first_lines, job_panels, plot_run};
use crate::sim::Ns;
use crate::stack::stream::{ChartDef, PictureDef, PlotCtx, RowCtx, Series, StreamDef, TimelineRow};

/// The pressure stream.
pub static STREAM: StreamDef = StreamDef {
    name: "pressure",
    title: "io.pressure",
    csv: "pressure.csv",
    header: PRESSURE_CSV_HEADER,
    picture: Some(PictureDef {
        stem: "pressure",
        png: "pressure.png",
        svg: "pressure.svg",
        title: "io.pressure",
        about: "io.pressure of every cgroup: the share of time some (or all) of its \
                tasks were stalled on I/O, as avg10",
        series: || Box::<PressureSeries>::default(),
    }),
    charts: &PRESSURE_CHARTS,
};

/// io.pressure's charts: per cgroup.
const PRESSURE_CHARTS: [ChartDef; 2] = [
    ChartDef::new("some avg10", "%", &["some_avg10"], &["cgroup"]),
    ChartDef::new("full avg10", "%", &["full_avg10"], &["cgroup"]),
];

/// `pressure.csv`'s header (averages in percent, totals in µs, as the file).
const PRESSURE_CSV_HEADER: &str = "t_s,cgroup,some_avg10,some_avg60,some_avg300,some_total_us,full_avg10,full_avg60,full_avg300,full_total_us\n";

/// One cgroup's io.pressure after an averaging period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PressureRow {
    pub at: Ns,
    pub cgroup: u32,
    /// `some`, `full`: avg10, avg60, avg300 in fixed point (`FIXED_1` = 100%/100).
    pub avg: [[u64; 3]; 2],
    pub total_us: [u64; 2],
}

impl TimelineRow for PressureRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, tree: &CgroupTree) {
        let [some, full] = self.avg;
        out.push_str(&format!(
            "{:.3},{},{},{},{},{},{},{},{},{}\n",
            self.at as f64 / 1e9,
            csv_field(&cg_name(tree, self.cgroup)),
            load_text(some[0]),
            load_text(some[1]),
            load_text(some[2]),
            self.total_us[0],
            load_text(full[0]),
            load_text(full[1]),
            load_text(full[2]),
            self.total_us[1]
        ));
    }
}

/// The picture's series: each cgroup's avg10 of `some` and of `full`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PressureSeries {
    some: Lines<u32>,
    full: Lines<u32>,
}

impl Series for PressureSeries {
    fn add(&mut self, row: &dyn Any, _ctx: &RowCtx) {
        let Some(r) = row.downcast_ref::<PressureRow>() else {
            return;
        };
        let pct = |x: u64| x as f64 / f64::from(1u32 << FSHIFT);
        self.some.add(r.cgroup, r.at, pct(r.avg[0][0]));
        self.full.add(r.cgroup, r.at, pct(r.avg[1][0]));
    }

    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String> {
        let lines = |m: &Lines<u32>| cgroup_lines(ctx.tree, m, "");
        let mut panels = vec![
            Panel {
                y_label: first_lines("some avg10 (% of time a task stalled on I/O)", &self.some),
                series: lines(&self.some),
                log_y: false,
            },
            Panel {
                y_label: first_lines("full avg10 (% of time all stalled)", &self.full),
                series: lines(&self.full),
                log_y: false,
            },
        ];
        panels.extend(job_panels(ctx.jobs));
        plot_run(base, title, &panels, ctx)
    }
}
