//! blk-iocost's timeline: `timeline.csv`, one line per period per active cgroup (the
//! device's fields repeated on each), and its picture `iocost.png` — vrate,
//! busy_level and each cgroup's hweight_inuse over the jobs' IOPS and latency — as a
//! [`TimelineRow`] of the stack's streams.

use std::any::Any;
use std::path::Path;

use super::ctl::PeriodRow;
use crate::blkcg::CgroupTree;
use crate::report::csv_field;
use crate::report::decimate::{Decimated, Lines};
use crate::report::plot::{Panel, Series as Line};
use crate::report::timeline::{cg_name, first_lines, job_panels, plot_run};
use crate::stack::stream::{ChartDef, PictureDef, PlotCtx, RowCtx, Series, StreamDef, TimelineRow};

/// blk-iocost's stream.
pub static STREAM: StreamDef = StreamDef {
    name: "timeline",
    title: "blk-iocost",
    csv: "timeline.csv",
    header: IOCOST_CSV_HEADER,
    picture: Some(PictureDef {
        stem: "iocost",
        png: "iocost.png",
        svg: "iocost.svg",
        title: "blk-iocost",
        about: "blk-iocost: vrate, busy_level and hweights",
        series: || Box::<IocostSeries>::default(),
    }),
    charts: &IOCOST_CHARTS,
};

/// blk-iocost's charts: the device's vrate and busy_level, then per cgroup.
const IOCOST_CHARTS: [ChartDef; 8] = [
    ChartDef::new("vrate", "%", &["vrate_base_pct", "vrate_eff_pct"], &[]),
    ChartDef::new("busy_level", "", &["busy_after"], &[]),
    ChartDef::new("missed ppm", "ppm", &["missed_ppm_r", "missed_ppm_w"], &[]),
    ChartDef::new("hweight_inuse", "", &["hweight_inuse"], &["cgroup"])
        .scaled(100.0 / 65536.0, "%"),
    ChartDef::new("usage", "%", &["usage_pct"], &["cgroup"]),
    ChartDef::new("waiters", "", &["waiters"], &["cgroup"]),
    ChartDef::new("abs_vdebt", "vtime", &["abs_vdebt"], &["cgroup"]),
    ChartDef::new("delay", "µs", &["delay_us"], &["cgroup"]),
];

impl TimelineRow for PeriodRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, tree: &CgroupTree) {
        iocost_csv_rows(out, self, tree);
    }
}

/// `timeline.csv`'s header: blk-iocost, one line per period per active cgroup.
const IOCOST_CSV_HEADER: &str = "t_s,period_us,vrate_base_pct,vrate_eff_pct,busy_before,busy_after,nr_done,missed_ppm_r,missed_ppm_w,rq_wait_pct,nr_lagging,nr_shortages,nr_donors,cgroup,active,inuse,hweight_active,hweight_inuse,budget_us,inflight_pct,usage_pct,waiters,abs_vdebt,delay_us\n";

/// One period's lines of `timeline.csv` (the device fields repeated per cgroup).
fn iocost_csv_rows(out: &mut String, r: &PeriodRow, tree: &CgroupTree) {
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

/// vrate and busy_level over time, each cgroup's hweight_inuse, and each job's IOPS
/// and latency under it; the controller's series come decimated (`record.rs`). A
/// cgroup's line has the colour of the job named like it (`timeline::plot_run`).
fn plot_iocost(
    base: &Path,
    title: &str,
    series: &IocostSeries,
    ctx: &PlotCtx,
) -> Result<(), String> {
    let tree = ctx.tree;
    let mut panels = vec![
        Panel {
            y_label: "vrate %".into(),
            series: vec![Line {
                name: "vrate (base)".into(),
                points: series.vrate.points(),
            }],
            log_y: false,
        },
        Panel {
            y_label: "busy_level".into(),
            series: vec![Line {
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
                .map(|(cg, d)| Line {
                    name: cg_name(tree, *cg),
                    points: d.points(),
                })
                .collect(),
            log_y: false,
        },
    ];
    panels.extend(job_panels(ctx.jobs));
    plot_run(base, title, &panels, ctx)
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

impl Series for IocostSeries {
    fn add(&mut self, row: &dyn Any, _: &RowCtx) {
        if let Some(r) = row.downcast_ref::<PeriodRow>() {
            IocostSeries::add(self, r);
        }
    }
    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String> {
        plot_iocost(base, title, self, ctx)
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
}
