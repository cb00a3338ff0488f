//! BFQ's timeline: `bfq.csv`, one line per group per sample tick — its weight in
//! force, the sectors dispatched from its queues in the tick and its share of the
//! device's, whether one of its queues was in service at the tick, its budget, its
//! lead on the virtual time (sectors at its weight: ahead waits, behind is served),
//! the scheduler tags its queues hold and how many of them are weight-raised — with
//! the device's estimated peak rate, the max budget and the time spent idling in the
//! tick; and its picture `bfq.png` (each group's share, sectors per second, lead and
//! tags over time, the time idling per second), as a [`TimelineRow`] of the stack's
//! streams.

use std::any::Any;
use std::collections::BTreeMap;
use std::path::Path;

use crate::blkcg::CgroupTree;
use crate::report::decimate::Decimated;
use crate::report::plot::{Event, Panel, Picture, Series as Line, plot_picture};
use crate::report::timeline::{JobLine, job_panels};
use crate::sim::Ns;
use crate::stack::stream::{ChartDef, PictureDef, PlotCtx, RowCtx, Series, StreamDef, TimelineRow};

/// One group of BFQ at a sample tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BfqRow {
    pub at: Ns,
    pub cgroup: u32,
    /// Its entity's weight (0: the root group, which has none).
    pub weight: u64,
    /// Sectors dispatched from its queues in the tick, and from every group's.
    pub sectors: u64,
    pub all_sectors: u64,
    pub in_service: bool,
    /// Its entity at the tick ([`super::GroupState`]).
    pub state: super::GroupState,
    /// The device's: peak rate (sectors/s), max budget (sectors), ns idled in the tick.
    pub peak_rate: u64,
    pub max_budget: u64,
    pub idled: Ns,
}

/// BFQ's stream.
pub static STREAM: StreamDef = StreamDef {
    name: "bfq",
    title: "BFQ",
    csv: "bfq.csv",
    header: "t_s,cgroup,weight,sectors,share,in_service,budget_sectors,vtime_lead_sectors,tags,raised_queues,peak_rate_sectors_s,max_budget_sectors,idled_ms\n",
    picture: Some(PictureDef {
        stem: "bfq",
        png: "bfq.png",
        svg: "bfq.svg",
        title: "BFQ",
        about: "BFQ: each group's share of the sectors, its lead on the virtual time and the tags it holds, and the device's idling",
        series: || Box::<BfqSeries>::default(),
    }),
    charts: &BFQ_CHARTS,
};

/// BFQ's charts: per group, and the device's idling.
const BFQ_CHARTS: [ChartDef; 4] = [
    ChartDef::new("share of the sectors", "", &["share"], &["cgroup"]),
    ChartDef::new("budget", "sectors", &["budget_sectors"], &["cgroup"]),
    ChartDef::new(
        "lead on the virtual time",
        "sectors",
        &["vtime_lead_sectors"],
        &["cgroup"],
    ),
    ChartDef::new("idled", "ms", &["idled_ms"], &["cgroup"]),
];

impl TimelineRow for BfqRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, tree: &CgroupTree) {
        let name = tree.nodes.get(self.cgroup as usize).map_or("?", |n| {
            if n.path.is_empty() {
                "root"
            } else {
                n.path.as_str()
            }
        });
        out.push_str(&format!(
            "{:.3},{},{},{},{:.4},{},{},{},{},{},{},{},{:.3}\n",
            self.at as f64 / 1e9,
            name,
            self.weight,
            self.sectors,
            share(self),
            u8::from(self.in_service),
            self.state.budget,
            self.state.lead,
            self.state.tags,
            self.state.raised,
            self.peak_rate,
            self.max_budget,
            self.idled as f64 / 1e6
        ));
    }
}

fn share(r: &BfqRow) -> f64 {
    if r.all_sectors == 0 {
        0.0
    } else {
        r.sectors as f64 / r.all_sectors as f64
    }
}

/// BFQ's series for its picture, per cgroup.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BfqSeries {
    share: BTreeMap<String, Decimated>,
    rate: BTreeMap<String, Decimated>,
    lead: BTreeMap<String, Decimated>,
    tags: BTreeMap<String, Decimated>,
    idled: Decimated,
    last_at: BTreeMap<String, Ns>,
    idled_at: Ns,
}

impl Series for BfqSeries {
    fn add(&mut self, row: &dyn Any, ctx: &RowCtx) {
        let Some(r) = row.downcast_ref::<BfqRow>() else {
            return;
        };
        let name = ctx
            .tree
            .nodes
            .get(r.cgroup as usize)
            .map_or("?".to_string(), |n| {
                if n.path.is_empty() {
                    "root".to_string()
                } else {
                    n.path.clone()
                }
            });
        self.lead
            .entry(name.clone())
            .or_default()
            .add(r.at, r.state.lead as f64);
        self.tags
            .entry(name.clone())
            .or_default()
            .add(r.at, f64::from(r.state.tags));
        let since = self.last_at.insert(name.clone(), r.at).unwrap_or(0);
        if r.at > since {
            let secs = (r.at - since) as f64 / 1e9;
            self.rate
                .entry(name.clone())
                .or_default()
                .add(r.at, r.sectors as f64 * 512.0 / 1_048_576.0 / secs);
            if r.all_sectors > 0 {
                self.share
                    .entry(name)
                    .or_default()
                    .add(r.at, share(r) * 100.0);
            }
        }
        if r.at > self.idled_at {
            let secs = (r.at - self.idled_at) as f64 / 1e9;
            self.idled.add(r.at, r.idled as f64 / 1e6 / secs);
            self.idled_at = r.at;
        }
    }
    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String> {
        plot_bfq(base, title, self, ctx.jobs, ctx.events)
    }
}

fn plot_bfq(
    base: &Path,
    title: &str,
    s: &BfqSeries,
    jobs: &[JobLine],
    events: &[Event],
) -> Result<(), String> {
    let lines = |m: &BTreeMap<String, Decimated>| -> Vec<Line> {
        m.iter()
            .map(|(name, d)| Line {
                name: name.clone(),
                points: d.points(),
            })
            .collect()
    };
    let mut panels = vec![
        Panel {
            y_label: "share of sectors (%)".into(),
            series: lines(&s.share),
            log_y: false,
        },
        Panel {
            y_label: "MiB/s dispatched".into(),
            series: lines(&s.rate),
            log_y: false,
        },
        Panel {
            y_label: "lead on vtime (sectors)".into(),
            series: lines(&s.lead),
            log_y: false,
        },
        Panel {
            y_label: "scheduler tags held".into(),
            series: lines(&s.tags),
            log_y: false,
        },
        Panel {
            y_label: "ms idled per s".into(),
            series: vec![Line {
                name: "device".into(),
                points: s.idled.points(),
            }],
            log_y: false,
        },
    ];
    panels.extend(job_panels(jobs));
    let pic = Picture {
        events,
        ..Picture::new(title, "time (s)", &panels)
    };
    plot_picture(base, &pic)
}
