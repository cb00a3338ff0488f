//! The data of report.html's interactive charts: a run's CSV timelines read back,
//! bounded, as compact columnar JSON for the page's charting library.
//!
//! Design
//! ------
//! Every timeline a run writes is already a CSV file in its folder (`jobs.csv`,
//! `iostat.csv`, each policy's and elevator's stream); what to draw from each is
//! declared beside it, as [`ChartDef`]s (the run's own here in [`RUN_CHARTS`], each
//! stream's in its owner's folder), so nothing here knows a policy. [`run_charts`]
//! reads each CSV the run wrote, twice, streaming (a run's CSVs can be far larger than
//! the page should be):
//! - the first pass finds each chart's lines (one per value column and key: a cgroup,
//!   a direction, a class; at most [`MAX_LINES`], the first ones met — the page says
//!   how many it left out, the CSV has them all), its time span and whether its
//!   distinct sample times fit the chart's budget;
//! - the second fills the chart's columns. A chart's budget is [`CELLS`] numbers
//!   (times × lines): within it every sample is kept as written (zooming in shows
//!   the full resolution); past it the span is cut into equal columns, each keeping
//!   every line's minimum and maximum (two points, at the column's start and middle),
//!   so a spike one sample long still shows, and the columns stay many more than a
//!   screen's pixels, so zooming still uncovers detail.
//!
//! All lines of a chart share its time points (the columnar layout the library draws
//! from: `[times, line 1, line 2, …]`, `null` where a line has no sample), and values
//! are written with six significant digits at most. Each run's charts are one JSON
//! document ([`run_charts`]), embedded in the page; the clat percentiles (per job,
//! from the run's summary) and the scheduled events come in with it.
//!
//! The commands that draw pictures over values instead of time (`sweep`, `tune`)
//! hand each picture's panels or marked points to an [`Exhibits`] as they draw it;
//! its document has the same shape, each chart with an `x` axis of its own (and, for
//! a bound or a chosen value drawn across a picture, a vertical line).
//! `assets/report/report.js` draws both kinds with uPlot (`assets/uplot/`).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use crate::report::plot::{Event, Marks, Panel};
use crate::stack::registry;
use crate::stack::stream::ChartDef;

/// Lines kept per chart: a legend of more shows nothing a person can read.
pub const MAX_LINES: usize = 100;

/// Numbers kept per chart (sample times × lines), which bounds the page's size.
pub const CELLS: usize = 400_000;

/// Sample times a chart keeps at most, however few its lines.
const MAX_TIMES: usize = 4_096;

/// Sample times a chart keeps at least, however many its lines.
const MIN_TIMES: usize = 1_024;

/// The charts of the run's own CSVs: each job's IOPS and latency, the device's iostat.
pub const RUN_CHARTS: &[(&str, &str, &[ChartDef])] = &[
    (
        "jobs",
        "jobs.csv",
        &[
            ChartDef::new("IOPS", "IOPS", &["iops"], &["job"]),
            ChartDef::new("mean latency", "ms", &["lat_mean_ms"], &["job"]).log(),
        ],
    ),
    (
        "device (iostat)",
        "iostat.csv",
        &[
            ChartDef::new("throughput", "MiB/s", &["r_mib_s", "w_mib_s"], &[]),
            ChartDef::new("IOPS", "IOPS", &["r_per_s", "w_per_s"], &[]),
            ChartDef::new("queue size", "", &["aqu_sz"], &[]),
            ChartDef::new("utilisation", "%", &["util_pct"], &[]),
        ],
    ),
];

/// Every CSV the page may chart, as (heading, file, charts): the run's own, then each
/// registered stream's.
pub fn sources() -> impl Iterator<Item = (&'static str, &'static str, &'static [ChartDef])> {
    let streams = registry::streams()
        .filter(|s| !s.charts.is_empty())
        .map(|s| (s.title, s.csv, s.charts));
    RUN_CHARTS.iter().copied().chain(streams)
}

/// A value as the page's JSON holds it: at most four significant digits (the
/// read-outs show three), no exponent
/// for everyday magnitudes, `null` for what is not a finite number.
fn num(out: &mut String, v: f64) {
    if !v.is_finite() {
        out.push_str("null");
    } else if v == v.trunc() && v.abs() < 1e15 {
        let _ = write!(out, "{v:.0}");
    } else {
        let rounded: f64 = format!("{v:.3e}").parse().unwrap_or(v);
        let _ = write!(out, "{rounded}");
    }
}

/// A place on an x axis (seconds, a percentile): to the microsecond, or the
/// millionth, as the CSVs write times.
fn place(out: &mut String, x: f64) {
    if x.is_finite() {
        let _ = write!(out, "{}", (x * 1e6).round() / 1e6);
    } else {
        out.push_str("null");
    }
}

/// Numbers as a JSON array, each written by `write` ([`num`], [`place`]).
fn array(out: &mut String, vs: &mut dyn Iterator<Item = f64>, write: fn(&mut String, f64)) {
    out.push('[');
    for (i, v) in vs.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(out, v);
    }
    out.push(']');
}

/// A text as a JSON string.
fn json_str(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::from(s).to_string());
}

/// One chart being read: its columns in the CSV, its lines, and what pass one found.
struct Chart<'a> {
    def: &'a ChartDef,
    values: Vec<usize>,
    /// Its key columns' place in the file's [`KeySets`].
    key_set: usize,
    only: Option<(usize, &'a str)>,
    /// Each kept key, in the order met, and its place.
    key_order: Vec<String>,
    key_place: HashMap<String, usize>,
    /// Keys met past [`MAX_LINES`].
    dropped: BTreeSet<String>,
    /// The distinct sample times, while they fit the budget (as `f64` bits: times are
    /// never negative, so the bits order as the numbers do).
    times: Option<BTreeSet<u64>>,
    t_min: f64,
    t_max: f64,
}

impl<'a> Chart<'a> {
    fn new(
        def: &'a ChartDef,
        header: &csv::StringRecord,
        key_sets: &mut KeySets,
    ) -> Option<Chart<'a>> {
        let col = |name: &str| header.iter().position(|h| h == name);
        let values = def.values.iter().map(|v| col(v)).collect::<Option<_>>()?;
        let keys: Vec<usize> = def.keys.iter().map(|k| col(k)).collect::<Option<_>>()?;
        let only = match def.only {
            Some((c, v)) => Some((col(c)?, v)),
            None => None,
        };
        Some(Chart {
            def,
            values,
            key_set: key_sets.index(keys),
            only,
            key_order: Vec::new(),
            key_place: HashMap::new(),
            dropped: BTreeSet::new(),
            times: Some(BTreeSet::new()),
            t_min: f64::INFINITY,
            t_max: f64::NEG_INFINITY,
        })
    }

    fn lines_per_key(&self) -> usize {
        self.values.len()
    }

    /// The most sample times the chart keeps for its number of lines.
    fn time_budget(&self) -> usize {
        let lines = self.key_order.len().max(1) * self.lines_per_key();
        (CELLS / (lines + 1)).clamp(MIN_TIMES, MAX_TIMES)
    }

    fn takes(&self, row: &csv::StringRecord) -> bool {
        self.only.is_none_or(|(c, v)| row.get(c) == Some(v))
    }

    /// Pass one: note the row's key and time.
    fn survey(&mut self, t: f64, key: &str) {
        if !self.key_place.contains_key(key) {
            if self.key_order.len() < MAX_LINES {
                self.key_place.insert(key.to_string(), self.key_order.len());
                self.key_order.push(key.to_string());
            } else {
                // bounded: only how many were left out matters past the cap
                if self.dropped.len() <= MAX_LINES {
                    self.dropped.insert(key.to_string());
                }
                return;
            }
        }
        self.t_min = self.t_min.min(t);
        self.t_max = self.t_max.max(t);
        let budget = self.time_budget();
        if let Some(times) = &mut self.times {
            times.insert(t.to_bits());
            if times.len() > budget {
                self.times = None;
            }
        }
    }

    /// The lines' names: the key, the column, or both.
    fn line_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for key in &self.key_order {
            for v in self.def.values {
                names.push(match (key.is_empty(), self.def.values.len()) {
                    (true, 1) => self.def.title.to_string(),
                    (true, _) => v.to_string(),
                    (false, 1) => key.clone(),
                    (false, _) => format!("{key} {v}"),
                });
            }
        }
        names
    }
}

/// The distinct key column lists of a file's charts (blk-iocost's: none, and the
/// cgroup), and each one's key in the row being read: made once per row, not once per
/// chart (a day of 1,000 cgroups is 10⁸ rows).
#[derive(Default)]
struct KeySets {
    cols: Vec<Vec<usize>>,
    keys: Vec<String>,
}

impl KeySets {
    /// The place of the key made of `cols`, added if new.
    fn index(&mut self, cols: Vec<usize>) -> usize {
        match self.cols.iter().position(|c| *c == cols) {
            Some(i) => i,
            None => {
                self.cols.push(cols);
                self.keys.push(String::new());
                self.cols.len() - 1
            }
        }
    }

    /// Each key of `row`: its key columns' fields joined by a space.
    fn read(&mut self, row: &csv::StringRecord) {
        for (cols, key) in self.cols.iter().zip(&mut self.keys) {
            key.clear();
            for (i, &c) in cols.iter().enumerate() {
                if i > 0 {
                    key.push(' ');
                }
                key.push_str(row.get(c).unwrap_or(""));
            }
        }
    }
}

/// Where pass two puts a chart's samples.
enum Fill {
    /// Every sample time, and each line's value there.
    Exact {
        times: Vec<f64>,
        lines: Vec<Vec<f64>>,
    },
    /// `columns` equal columns from `t0`, each line's minimum and maximum in each.
    Columns {
        t0: f64,
        width: f64,
        lo: Vec<Vec<f64>>,
        hi: Vec<Vec<f64>>,
    },
}

impl Fill {
    fn new(c: &Chart) -> Fill {
        let n = c.key_order.len() * c.lines_per_key();
        match &c.times {
            Some(times) => Fill::Exact {
                times: times.iter().map(|&b| f64::from_bits(b)).collect(),
                lines: vec![vec![f64::NAN; times.len()]; n],
            },
            None => {
                let columns = c.time_budget() / 2;
                let span = (c.t_max - c.t_min).max(1e-9);
                Fill::Columns {
                    t0: c.t_min,
                    width: span / columns as f64,
                    lo: vec![vec![f64::NAN; columns]; n],
                    hi: vec![vec![f64::NAN; columns]; n],
                }
            }
        }
    }

    fn add(&mut self, line: usize, t: f64, v: f64) {
        match self {
            Fill::Exact { times, lines } => {
                if let Ok(i) = times.binary_search_by(|x| x.total_cmp(&t)) {
                    lines[line][i] = v;
                }
            }
            Fill::Columns { t0, width, lo, hi } => {
                let n = lo[line].len();
                let i = (((t - *t0) / *width) as usize).min(n - 1);
                let (l, h) = (&mut lo[line][i], &mut hi[line][i]);
                if l.is_nan() || v < *l {
                    *l = v;
                }
                if h.is_nan() || v > *h {
                    *h = v;
                }
            }
        }
    }

    /// Whether every value is 0 (or missing).
    fn all_zero(&self) -> bool {
        let zero = |l: &Vec<f64>| l.iter().all(|v| *v == 0.0 || v.is_nan());
        match self {
            Fill::Exact { lines, .. } => lines.iter().all(zero),
            Fill::Columns { lo, hi, .. } => lo.iter().chain(hi).all(zero),
        }
    }

    /// `[times, line…]` as JSON arrays.
    fn write(&self, out: &mut String) {
        out.push('[');
        match self {
            Fill::Exact { times, lines } => {
                array(out, &mut times.iter().copied(), place);
                for l in lines {
                    out.push(',');
                    array(out, &mut l.iter().copied(), num);
                }
            }
            Fill::Columns { t0, width, lo, hi } => {
                let columns = lo.first().map_or(0, Vec::len);
                array(
                    out,
                    &mut (0..columns).flat_map(|i| {
                        let start = t0 + i as f64 * width;
                        [start, start + width / 2.0]
                    }),
                    place,
                );
                for (l, h) in lo.iter().zip(hi) {
                    out.push(',');
                    let mut both = l.iter().zip(h).flat_map(|(&a, &b)| [a, b]);
                    array(out, &mut both, num);
                }
            }
        }
        out.push(']');
    }
}

fn csv_reader(path: &Path) -> Result<csv::Reader<std::fs::File>, String> {
    csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The charts of one CSV file that have a line, as JSON objects pushed to `out`.
fn csv_charts(
    path: &Path,
    group: &str,
    defs: &[ChartDef],
    charts_out: &mut Vec<String>,
) -> Result<(), String> {
    let err = |e: csv::Error| format!("{}: {e}", path.display());
    let mut rd = csv_reader(path)?;
    let header = rd.headers().map_err(err)?.clone();
    let Some(t_col) = header.iter().position(|h| h == "t_s") else {
        return Err(format!("{}: no t_s column", path.display()));
    };
    let mut key_sets = KeySets::default();
    let mut charts: Vec<Chart> = defs
        .iter()
        .filter_map(|d| Chart::new(d, &header, &mut key_sets))
        .collect();
    let mut row = csv::StringRecord::new();
    let time = |row: &csv::StringRecord| row.get(t_col).and_then(|t| t.parse::<f64>().ok());
    while rd.read_record(&mut row).map_err(err)? {
        let Some(t) = time(&row) else { continue };
        key_sets.read(&row);
        for c in charts.iter_mut().filter(|c| c.takes(&row)) {
            c.survey(t, &key_sets.keys[c.key_set]);
        }
    }
    charts.retain(|c| !c.key_order.is_empty());
    // the budget shrinks as lines are met: times kept under an earlier, larger one
    // become columns if the chart's lines no longer afford them
    for c in &mut charts {
        if c.times.as_ref().is_some_and(|t| t.len() > c.time_budget()) {
            c.times = None;
        }
    }
    let mut fills: Vec<Fill> = charts.iter().map(Fill::new).collect();
    let mut rd = csv_reader(path)?;
    rd.headers().map_err(err)?;
    while rd.read_record(&mut row).map_err(err)? {
        let Some(t) = time(&row) else { continue };
        key_sets.read(&row);
        for (c, f) in charts.iter().zip(&mut fills) {
            if !c.takes(&row) {
                continue;
            }
            let Some(&k) = c.key_place.get(key_sets.keys[c.key_set].as_str()) else {
                continue;
            };
            for (j, &col) in c.values.iter().enumerate() {
                if let Some(v) = row.get(col).and_then(|v| v.parse::<f64>().ok()) {
                    f.add(k * c.lines_per_key() + j, t, v * c.def.scale);
                }
            }
        }
    }
    for (c, f) in charts.iter().zip(&fills) {
        let mut o = String::from("{\"group\":");
        let out = &mut o;
        json_str(out, group);
        out.push_str(",\"title\":");
        json_str(out, c.def.title);
        out.push_str(",\"unit\":");
        json_str(out, c.def.unit);
        let _ = write!(
            out,
            ",\"log\":{},\"columns\":{},\"dropped\":{},\"names\":[",
            c.def.log,
            matches!(f, Fill::Columns { .. }),
            c.dropped.len()
        );
        for (i, n) in c.line_names().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(out, n);
        }
        // a chart at 0 throughout is said, not drawn (a run without debt has 1,000
        // cgroups' worth of zeros in abs_vdebt)
        if f.all_zero() {
            out.push_str("],\"zero\":true}");
        } else {
            out.push_str("],\"data\":");
            f.write(out);
            out.push('}');
        }
        charts_out.push(o);
    }
    Ok(())
}

/// A job's completion-latency percentiles, as the clat chart takes them.
pub struct ClatLine {
    pub name: String,
    /// (percentile, ms), as fio reports them.
    pub points: Vec<(f64, f64)>,
}

/// One run's charts as a JSON document: `{"events":[…],"clat":{…},"charts":[…]}`,
/// each chart `{group,title,unit,log,columns,dropped,names,data}` with `data` as
/// `[times, line…]`, or `zero: true` instead of `data` for a chart at 0 throughout. Reads the CSVs of [`sources`] that are in `dir`.
pub fn run_charts(dir: &Path, events: &[Event], clat: &[ClatLine]) -> Result<String, String> {
    let mut out = String::from("{\"events\":[");
    for (i, e) in events.iter().enumerate() {
        out.push_str(if i > 0 { ",{\"t\":" } else { "{\"t\":" });
        place(&mut out, e.at);
        out.push_str(",\"label\":");
        json_str(&mut out, &e.label);
        out.push('}');
    }
    out.push_str("],\n\"clat\":");
    clat_json(&mut out, clat);
    let mut charts = Vec::new();
    for (group, file, defs) in sources() {
        let path = dir.join(file);
        if path.is_file() {
            csv_charts(&path, group, defs, &mut charts)?;
        }
    }
    out.push_str(",\n\"charts\":[");
    out.push_str(&charts.join(",\n"));
    out.push_str("]}");
    Ok(out)
}

/// The clat percentiles as one chart: `{"dropped":N,"names":[…],"data":[percentiles,
/// job…]}` (the first [`MAX_LINES`] jobs, below 100), each job's value `null` at a
/// percentile it does not report.
fn clat_json(out: &mut String, clat: &[ClatLine]) {
    let dropped = clat.len().saturating_sub(MAX_LINES);
    let clat = &clat[..clat.len() - dropped];
    let ps: BTreeSet<u64> = clat
        .iter()
        .flat_map(|l| {
            l.points
                .iter()
                .filter(|p| p.0 < 100.0)
                .map(|p| p.0.to_bits())
        })
        .collect();
    let ps: Vec<f64> = ps.into_iter().map(f64::from_bits).collect();
    let _ = write!(out, "{{\"dropped\":{dropped},\"names\":[");
    for (i, l) in clat.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_str(out, &l.name);
    }
    out.push_str("],\"data\":[");
    array(out, &mut ps.iter().copied(), place);
    for l in clat {
        out.push(',');
        let at = |p: f64| l.points.iter().find(|q| q.0 == p).map_or(f64::NAN, |q| q.1);
        array(out, &mut ps.iter().map(|&p| at(p)), num);
    }
    out.push_str("]}");
}

/// The interactive twins of a command's pictures (`sweep`, `tune`): each panel of a
/// picture, or its chart of marked points, as a chart of the page's document, gathered
/// as the command draws them; [`Exhibits::json`] is the document.
#[derive(Default)]
pub struct Exhibits {
    charts: Vec<String>,
}

/// One chart on an x axis of values (not time): `x` the union of the lines' values,
/// each line `null` where it has none; `lines[k]`: line `k` joins its points.
struct ValueChart<'a> {
    group: &'a str,
    title: &'a str,
    x_label: &'a str,
    log: bool,
    log_x: bool,
    markers: bool,
    names: Vec<&'a str>,
    lines: Vec<bool>,
    points: Vec<Vec<(f64, f64)>>,
    /// Sets of points all at one x (a bound), drawn as a marked vertical line.
    vlines: Vec<(f64, &'a str)>,
}

impl ValueChart<'_> {
    /// The chart's rows: each distinct x once, each line's value there (its last);
    /// with `scatter`, each point a row of its own (sets of points may hold several
    /// at one x, a tune's runs that met a bound by the same figure).
    fn rows(&self, scatter: bool) -> (Vec<f64>, Vec<Vec<f64>>) {
        let mut points: Vec<(f64, usize, f64)> = self
            .points
            .iter()
            .enumerate()
            .flat_map(|(k, l)| l.iter().map(move |&(x, y)| (x, k, y)))
            .filter(|p| p.0.is_finite() && (!self.log_x || p.0 > 0.0))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
        if !scatter {
            xs.dedup();
        }
        let mut lines = vec![vec![f64::NAN; xs.len()]; self.points.len()];
        for (i, &(x, k, y)) in points.iter().enumerate() {
            let at = if scatter {
                i
            } else {
                xs.partition_point(|v| v.total_cmp(&x).is_lt())
            };
            lines[k][at] = y;
        }
        (xs, lines)
    }

    fn json(&self) -> String {
        let (xs, lines) = self.rows(self.lines.iter().any(|j| !j));
        let mut out = String::from("{\"group\":");
        json_str(&mut out, self.group);
        out.push_str(",\"title\":");
        json_str(&mut out, self.title);
        let _ = write!(
            out,
            ",\"unit\":\"\",\"log\":{},\"columns\":false,\"dropped\":0,\"x\":{{\"label\":",
            self.log
        );
        json_str(&mut out, self.x_label);
        let _ = write!(
            out,
            ",\"log\":{},\"points\":{},\"lines\":{:?}}},\"vlines\":[",
            self.log_x, self.markers, self.lines
        );
        for (i, (x, label)) in self.vlines.iter().enumerate() {
            out.push_str(if i > 0 { ",{\"t\":" } else { "{\"t\":" });
            place(&mut out, *x);
            out.push_str(",\"label\":");
            json_str(&mut out, label);
            out.push('}');
        }
        out.push_str("],\"names\":[");
        for (i, n) in self.names.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(&mut out, n);
        }
        out.push_str("],\"data\":[");
        array(&mut out, &mut xs.iter().copied(), place);
        for ys in &lines {
            out.push(',');
            array(&mut out, &mut ys.iter().copied(), num);
        }
        out.push_str("]}");
        out
    }
}

/// One set of a value chart's points: its name, its points, whether they are joined.
type PointSet<'a> = (&'a str, Vec<(f64, f64)>, bool);

impl<'a> ValueChart<'a> {
    /// A chart of `sets`; a joined set of two points at one x (a bound, a chosen value
    /// drawn across the panel) becomes a marked vertical line.
    fn new(group: &'a str, title: &'a str, x_label: &'a str, sets: Vec<PointSet<'a>>) -> Self {
        let vertical =
            |s: &PointSet| s.2 && s.1.len() == 2 && s.1[0].0 == s.1[1].0 && s.1[0].0.is_finite();
        let (vlines, sets): (Vec<PointSet>, Vec<PointSet>) = sets.into_iter().partition(vertical);
        ValueChart {
            group,
            title,
            x_label,
            log: false,
            log_x: false,
            markers: true,
            names: sets.iter().map(|s| s.0).collect(),
            lines: sets.iter().map(|s| s.2).collect(),
            points: sets.into_iter().map(|s| s.1).collect(),
            vlines: vlines.iter().map(|s| (s.1[0].0, s.0)).collect(),
        }
    }
}

impl Exhibits {
    /// Each of `panels` (a picture titled `title` over `x_label`) as a chart; `markers`:
    /// its values are measured points, each shown.
    pub fn panels(&mut self, title: &str, x_label: &str, panels: &[Panel], markers: bool) {
        for p in panels {
            let sets = p
                .series
                .iter()
                .map(|s| (s.name.as_str(), s.points.clone(), true))
                .collect();
            let chart = ValueChart {
                log: p.log_y,
                markers,
                ..ValueChart::new(title, &p.y_label, x_label, sets)
            };
            self.charts.push(chart.json());
        }
    }

    /// A chart of marked points (`plot::plot_marks`'s): each set a line or points
    /// alone.
    pub fn marks(
        &mut self,
        title: &str,
        x_label: &str,
        y_label: &str,
        log_x: bool,
        marks: &[Marks],
    ) {
        let sets = marks
            .iter()
            .map(|m| {
                let points = m.points.iter().map(|p| (p.0, p.1)).collect();
                (m.name.as_str(), points, m.joined)
            })
            .collect();
        let chart = ValueChart {
            log_x,
            ..ValueChart::new(title, y_label, x_label, sets)
        };
        self.charts.push(chart.json());
    }

    /// Whether none was gathered.
    pub fn is_empty(&self) -> bool {
        self.charts.is_empty()
    }

    /// The page's document: these charts, no events, no clat.
    pub fn json(&self) -> String {
        format!(
            "{{\"events\":[],\"clat\":null,\"charts\":[{}]}}",
            self.charts.join(",\n")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::IOSTAT_CSV_HEADER;
    use crate::report::timeline::JOBS_CSV_HEADER;

    /// The header of each CSV a chart may read.
    fn header_of(file: &str) -> &'static str {
        match file {
            "jobs.csv" => JOBS_CSV_HEADER,
            "iostat.csv" => IOSTAT_CSV_HEADER,
            _ => registry::streams().find(|s| s.csv == file).unwrap().header,
        }
    }

    #[test]
    fn every_chart_names_columns_its_csv_has() {
        for (_, file, defs) in sources() {
            let cols: Vec<&str> = header_of(file).trim_end().split(',').collect();
            assert!(cols.contains(&"t_s"), "{file}");
            for d in defs {
                let only = d.only.map(|(c, _)| c);
                for c in d.values.iter().chain(d.keys).chain(only.as_ref()) {
                    assert!(cols.contains(c), "{file}: chart `{}` reads `{c}`", d.title);
                }
            }
        }
    }

    fn chart_of(csv: &str, def: &ChartDef) -> serde_json::Value {
        let dir = std::env::temp_dir().join(format!("blkcg-sim-charts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.csv", def.title));
        std::fs::write(&path, csv).unwrap();
        let mut out = Vec::new();
        csv_charts(&path, "g", std::slice::from_ref(def), &mut out).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(out.len(), 1);
        serde_json::from_str(&out[0]).unwrap()
    }

    #[test]
    fn few_samples_are_kept_as_written_with_gaps_where_a_line_has_none() {
        let csv = "t_s,cgroup,v,kind\n0.5,a,1,x\n0.5,\"b,c\",2.25,x\n1.0,a,3,x\n1.5,a,9,y\n";
        let def = ChartDef::new("v", "", &["v"], &["cgroup"]).only("kind", "x");
        let c = chart_of(csv, &def);
        assert_eq!(c["columns"], false);
        assert_eq!(c["names"], serde_json::json!(["a", "b,c"]));
        assert_eq!(
            c["data"],
            serde_json::json!([[0.5, 1], [1, 3], [2.25, null]])
        );
        // scaled into its unit; with no key, of two rows at one time the last
        let def = ChartDef::new("w", "", &["v"], &[]).scaled(0.5, "%");
        assert_eq!(
            chart_of(csv, &def)["data"][1],
            serde_json::json!([1.125, 1.5, 4.5])
        );
    }

    #[test]
    fn many_samples_become_columns_that_keep_every_spike_and_the_lines_are_capped() {
        let mut csv = String::from("t_s,cgroup,v\n");
        let n = 200_000;
        for i in 0..n {
            let t = i as f64 * 0.001;
            let v = if i == 123_457 { 1e6 } else { (i % 7) as f64 };
            csv.push_str(&format!("{t:.3},a,{v}\n"));
        }
        for k in 0..MAX_LINES + 5 {
            csv.push_str(&format!("200.000,k{k},1\n"));
        }
        let c = chart_of(&csv, &ChartDef::new("v", "", &["v"], &["cgroup"]));
        assert_eq!(c["columns"], true);
        assert_eq!(c["dropped"], 6, "a and the first 99 k lines kept");
        let data = c["data"].as_array().unwrap();
        assert_eq!(data.len(), MAX_LINES + 1);
        let times = data[0].as_array().unwrap().len();
        assert!(times * (MAX_LINES + 1) <= CELLS.max(MIN_TIMES * (MAX_LINES + 1)));
        let a: Vec<f64> = data[1]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_f64())
            .collect();
        assert_eq!(
            a.iter().cloned().fold(0.0, f64::max),
            1e6,
            "the one spike is there"
        );
        assert_eq!(a.iter().cloned().fold(9.0, f64::min), 0.0);
    }

    #[test]
    fn numbers_are_short_and_never_nan() {
        let mut s = String::new();
        for v in [1.0, 0.1 + 0.2, 12345678.9, f64::NAN, 1e-7, -2.5] {
            num(&mut s, v);
            s.push(' ');
        }
        assert_eq!(s, "1 0.3 12350000 null 0.0000001 -2.5 ");
        let mut s = String::new();
        for t in [3599.9512345, 99.995, 0.1 + 0.2] {
            place(&mut s, t);
            s.push(' ');
        }
        assert_eq!(s, "3599.951235 99.995 0.3 ");
    }
}
