//! mq-deadline's timeline: `deadline.csv`, one line per priority level per sample tick
//! (waiting in the scheduler, held by the driver, dispatched and completed in the
//! tick, then the debugfs `*_stats` totals), and its picture `deadline.png` (per level,
//! in a colour of its own), as a [`TimelineRow`] of the stack's streams.

use std::any::Any;
use std::collections::BTreeMap;
use std::path::Path;

use super::DdPrio;
use super::elevator::DeadlineRow;
use crate::blkcg::CgroupTree;
use crate::report::decimate::Decimated;
use crate::report::plot::{COLORS, Event, Panel, Picture, Series as Line, plot_picture};
use crate::report::timeline::{JobLine, job_panels};
use crate::sim::Ns;
use crate::stack::stream::{ChartDef, PictureDef, PlotCtx, RowCtx, Series, StreamDef, TimelineRow};
use plotters::style::RGBColor;

/// mq-deadline's stream.
pub static STREAM: StreamDef = StreamDef {
    name: "deadline",
    title: "mq-deadline",
    csv: "deadline.csv",
    header: DEADLINE_CSV_HEADER,
    picture: Some(PictureDef {
        stem: "deadline",
        png: "deadline.png",
        svg: "deadline.svg",
        title: "mq-deadline",
        about: "mq-deadline: requests per priority class",
        series: || Box::<DeadlineSeries>::default(),
    }),
    charts: &DEADLINE_CHARTS,
};

/// mq-deadline's charts: per priority class.
const DEADLINE_CHARTS: [ChartDef; 3] = [
    ChartDef::new("queued in the scheduler", "", &["queued"], &["class"]),
    ChartDef::new("held by the driver", "", &["in_flight"], &["class"]),
    ChartDef::new("dispatched per tick", "", &["dispatched"], &["class"]),
];

impl TimelineRow for DeadlineRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, _: &CgroupTree) {
        deadline_csv_row(out, self);
    }
}

/// `deadline.csv`'s header: mq-deadline, one line per priority level per sample tick —
/// waiting in the scheduler, held by the driver, dispatched and completed in the tick,
/// then the debugfs `*_stats` totals.
const DEADLINE_CSV_HEADER: &str = "t_s,class,queued,in_flight,dispatched,completed,inserted_total,merged_total,dispatched_total,completed_total\n";

/// One line of `deadline.csv`.
fn deadline_csv_row(out: &mut String, r: &DeadlineRow) {
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
    pub queued: BTreeMap<DdPrio, Decimated>,
    /// Dispatches per second over each tick.
    pub dispatch_rate: BTreeMap<DdPrio, Decimated>,
    /// The previous tick, for the rate.
    last_at: BTreeMap<DdPrio, Ns>,
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
/// `rt` red, `be` blue, `idle` dark teal.
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
/// `rt`: its bios' class is the summary's `PRIO`); the run's scheduled `events` marked.
fn plot_deadline(
    base: &Path,
    title: &str,
    series: &DeadlineSeries,
    jobs: &[JobLine],
    events: &[Event],
) -> Result<(), String> {
    let lines = |m: &BTreeMap<DdPrio, Decimated>| -> (Vec<Line>, Vec<_>) {
        m.iter()
            .map(|(p, d)| {
                let s = Line {
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
    let pic = Picture {
        palettes: Some(&palettes),
        events,
        ..Picture::new(title, "time (s)", &panels)
    };
    plot_picture(base, &pic)
}

impl Series for DeadlineSeries {
    fn add(&mut self, row: &dyn Any, _: &RowCtx) {
        if let Some(r) = row.downcast_ref::<DeadlineRow>() {
            DeadlineSeries::add(self, r);
        }
    }
    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String> {
        plot_deadline(base, title, self, ctx.jobs, ctx.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::timebins::TimeBins;

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
        let drawn = plot_deadline(&base, "t", &series, &jobs, &[]);
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
