//! Timeline streams: the rows a policy or elevator makes as a run goes, in one shape
//! the recorder, the output folder, report.html and the library API handle without
//! knowing whose rows they are.
//!
//! Design
//! ------
//! A stream is described once, by its owner, as a [`StreamDef`]: the CSV file its rows
//! stream to, the header, optionally a picture ([`PictureDef`]) drawn from a
//! bounded [`Series`] of them, and the interactive charts report.html draws from the
//! CSV's columns ([`ChartDef`]: which columns, split into lines by which keys). A row type implements [`TimelineRow`] (its stream and
//! how it writes its CSV lines); the owner hands rows to the
//! [`Recorder`](super::Recorder) through [`Recorder::row`](super::Recorder::row) as
//! `&dyn` [`AnyRow`], which every `TimelineRow` is. The recorder then, per stream:
//! writes the CSV lines (creating the file at its first row), feeds the picture's
//! series (only where pictures are drawn), spools the CSV lines for the library API
//! (`RecordOptions::spool_tables`), and keeps the rows whole in a [`KeptRows`] (a `Vec`
//! of the row type) for callers that asked: those read them back typed with
//! `Recorded::rows::<T>()`.
//!
//! This is the exporter pattern (one implementation per format behind one trait): a
//! new policy's rows need their own type, a `StreamDef` in its folder and a line in
//! its registry entry's `streams`; nothing here or in the recorder changes.

use std::any::Any;
use std::fmt::Debug;
use std::path::Path;

use crate::blkcg::CgroupTree;
use crate::report::timeline::JobLine;

/// One timeline a policy or elevator makes.
#[derive(Debug)]
pub struct StreamDef {
    /// Its name in the library API's tables (`throttle`).
    pub name: &'static str,
    /// Whose it is, as report.html heads its charts (`blk-iocost`).
    pub title: &'static str,
    /// Its CSV file in a run's folder (`throttle.csv`).
    pub csv: &'static str,
    /// The CSV header, with its newline.
    pub header: &'static str,
    /// Its picture, if it has one.
    pub picture: Option<PictureDef>,
    /// Its interactive charts in report.html, read back from the CSV.
    pub charts: &'static [ChartDef],
}

/// One interactive chart of report.html drawn from a CSV stream's columns: a line per
/// value column and key (cgroup, direction, class), over the stream's `t_s`.
#[derive(Debug)]
pub struct ChartDef {
    /// Its title (`hweight_inuse`); the page heads it with the stream's too.
    pub title: &'static str,
    /// The unit of its y axis (`%`, `ms`); empty for a count.
    pub unit: &'static str,
    /// The columns drawn, a line each (named after the column when more than one).
    pub values: &'static [&'static str],
    /// The columns naming a line (`cgroup`, `dir`); none for a device-wide figure.
    pub keys: &'static [&'static str],
    /// Only the rows whose column holds this value (`kind` = `window`).
    pub only: Option<(&'static str, &'static str)>,
    /// A logarithmic y axis (latencies that differ by orders of magnitude).
    pub log: bool,
    /// What each value is multiplied by to be in `unit` (hweights: WEIGHT_ONE to %).
    pub scale: f64,
}

impl ChartDef {
    /// A chart of `values` per `keys`, linear, of every row.
    pub const fn new(
        title: &'static str,
        unit: &'static str,
        values: &'static [&'static str],
        keys: &'static [&'static str],
    ) -> ChartDef {
        ChartDef {
            title,
            unit,
            values,
            keys,
            only: None,
            log: false,
            scale: 1.0,
        }
    }

    /// The same chart of only the rows where `column` holds `value`.
    pub const fn only(self, column: &'static str, value: &'static str) -> ChartDef {
        ChartDef {
            only: Some((column, value)),
            ..self
        }
    }

    /// The same chart on a logarithmic y axis.
    pub const fn log(self) -> ChartDef {
        ChartDef { log: true, ..self }
    }

    /// The same chart with each value multiplied by `scale` into `unit`.
    pub const fn scaled(self, scale: f64, unit: &'static str) -> ChartDef {
        ChartDef {
            scale,
            unit,
            ..self
        }
    }
}

/// A stream's picture.
#[derive(Debug)]
pub struct PictureDef {
    /// The file names (`iocost.png`, `iocost.svg`) and their stem in report.html.
    pub stem: &'static str,
    pub png: &'static str,
    pub svg: &'static str,
    /// The title's prefix (`blk-iocost`): the picture is titled "PREFIX: LABEL".
    pub title: &'static str,
    /// What it shows, for report.html's caption.
    pub about: &'static str,
    /// An empty series for it.
    pub series: fn() -> Box<dyn Series>,
}

/// What a picture's series needs of the run as rows come.
pub struct RowCtx<'a> {
    /// The run's cgroups.
    pub tree: &'a CgroupTree,
    /// `q->nr_requests` (blk-iolatency draws an unlimited depth as it).
    pub nr_requests: u32,
}

/// A row of a timeline stream.
pub trait TimelineRow: Any + Clone + Debug + Send {
    /// The stream it belongs to.
    fn stream() -> &'static StreamDef;
    /// Append its CSV line(s), each ending in a newline, to `out`; `tree` names the
    /// cgroups.
    fn csv(&self, out: &mut String, tree: &CgroupTree);
}

/// A row of any stream, as the recorder takes it.
pub trait AnyRow {
    /// Its stream.
    fn stream(&self) -> &'static StreamDef;
    /// [`TimelineRow::csv`].
    fn write_csv(&self, out: &mut String, tree: &CgroupTree);
    /// The row, to be downcast to its type.
    fn as_any(&self) -> &dyn Any;
    /// An empty store of rows of its type.
    fn new_store(&self) -> Box<dyn KeptRows>;
}

impl<T: TimelineRow> AnyRow for T {
    fn stream(&self) -> &'static StreamDef {
        T::stream()
    }
    fn write_csv(&self, out: &mut String, tree: &CgroupTree) {
        self.csv(out, tree)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn new_store(&self) -> Box<dyn KeptRows> {
        Box::new(Vec::<T>::new())
    }
}

/// Rows of one stream kept whole: a `Vec` of the row type.
pub trait KeptRows: Any + Debug + Send {
    /// Keep `row` (of this store's type).
    fn push(&mut self, row: &dyn Any);
    /// How many rows it holds.
    fn len(&self) -> usize;
    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The store, to be downcast to `Vec<T>`.
    fn as_any(&self) -> &dyn Any;
    /// A copy.
    fn clone_box(&self) -> Box<dyn KeptRows>;
}

impl<T: TimelineRow> KeptRows for Vec<T> {
    fn push(&mut self, row: &dyn Any) {
        if let Some(r) = row.downcast_ref::<T>() {
            Vec::push(self, r.clone());
        }
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn clone_box(&self) -> Box<dyn KeptRows> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn KeptRows> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// What a picture is drawn with besides its series.
pub struct PlotCtx<'a> {
    /// The run's cgroups (line names).
    pub tree: &'a CgroupTree,
    /// Each job's IOPS and latency over time, drawn under the policy's panels.
    pub jobs: &'a [JobLine<'a>],
    /// The run's scheduled events, marked on the pictures' time axis.
    pub events: &'a [crate::report::plot::Event],
}

/// A picture's data, bounded whatever the run's length (`crate::report::decimate`).
pub trait Series: Send {
    /// Take one row of the stream (rows of other types are ignored).
    fn add(&mut self, row: &dyn Any, ctx: &RowCtx);
    /// Draw it to `base.png` and `base.svg`, titled `title`.
    fn plot(&self, base: &Path, title: &str, ctx: &PlotCtx) -> Result<(), String>;
}
