//! Pictures, for when a person would rather look than read: stacked time-series panels
//! sharing one x axis (vrate and busy_level over time; per-cgroup IOPS and latency; the
//! device's per-second throughput) and latency CDFs on a log-percentile axis. Each
//! figure is written as PNG and SVG with plotters; their text is drawn in one built-in
//! face (`glyphs.rs`), so every machine draws them alike. A picture that cannot be
//! written (a full disk) is an error message, never a failed run.
//!
//! What a picture shows is the data, nothing drawn in between: a line breaks where a
//! series has no value (a gap, never a straight line across an empty period; a lone
//! value between gaps is a dot), a line keeps one colour in every panel of its
//! figure (by its name, unless the caller gives palettes), no colour is the grid's grey,
//! y axes (and a marked x axis) are padded so no line lies on an axis, log axes are
//! ticked at every decade, a sweep's values can be marked, and scheduled events (an
//! interface write, the disk removed) are thin labelled vertical lines across every
//! panel.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::glyphs::{self, CrispText};

/// One named line. A point whose y is not finite (`f64::NAN`), or on a log axis is at
/// or below 0, is a gap: the line stops before it and starts again after it (a job
/// that completed nothing in a window has no latency there, and draws none).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One panel: a y axis and its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub y_label: String,
    pub series: Vec<Series>,
    /// Logarithmic y axis (latencies of cgroups that differ by orders of magnitude);
    /// points at or below 0 are gaps.
    pub log_y: bool,
}

/// The lines' colours: by default the `k`-th distinct series name of a figure gets
/// `COLORS[k % 10]`. Tableau's ten, its grey (the grid's colour: a line in it reads as
/// a grid line) replaced by a dark teal.
pub const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(0, 98, 90),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A moment marked on a time axis: a thin vertical line across every panel, `label`
/// written beside it at the top (a `[[schedule]]` entry's interface write, the disk's
/// removal).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Where on the x axis (seconds on a time axis).
    pub at: f64,
    pub label: String,
}

/// How a figure's shared x axis reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum XScale {
    /// Linear, ticks where plotters puts them.
    #[default]
    Linear,
    /// Percentiles, each placed at [`percentile_x`] so 90, 99, 99.9 and 99.99 lie
    /// evenly apart (a tail's p99..p99.99 as wide as p0..p90), ticks labelled with the
    /// percentile.
    Percentile,
}

/// Where percentile `p` (0 to 100, below 100) lies on an [`XScale::Percentile`] axis:
/// −log10(1 − p/100), so 90 is at 1, 99 at 2, 99.99 at 4.
pub fn percentile_x(p: f64) -> f64 {
    -(1.0 - p / 100.0).log10()
}

/// The percentile at `x` on an [`XScale::Percentile`] axis (inverse of [`percentile_x`]).
fn x_percentile(x: f64) -> f64 {
    100.0 * (1.0 - 10f64.powf(-x))
}

/// A figure of panels stacked over a shared x axis, and what it marks on it.
#[derive(Debug, Clone, Copy)]
pub struct Picture<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub x_scale: XScale,
    pub panels: &'a [Panel],
    /// Each panel's colours (series `k` of panel `i` gets `palettes[i][k % len]`); `None`:
    /// by name, so a job or cgroup has one colour in every panel it is drawn in.
    pub palettes: Option<&'a [&'a [RGBColor]]>,
    /// The names that come first in colour (a run's jobs, in order): the `k`-th gets
    /// `COLORS[k % 10]` in every picture that lists them, other names the colours after
    /// them by first appearance. Only when colouring by name.
    pub classes: &'a [&'a str],
    /// Scheduled events, marked where they fall within the x axis.
    pub events: &'a [Event],
    /// A marker on every value, not only lines (a sweep's measured points).
    pub markers: bool,
}

impl<'a> Picture<'a> {
    /// `panels` titled `title` over a linear x axis, coloured by name, nothing marked.
    pub fn new(title: &'a str, x_label: &'a str, panels: &'a [Panel]) -> Self {
        Picture {
            title,
            x_label,
            x_scale: XScale::Linear,
            panels,
            palettes: None,
            classes: &[],
            events: &[],
            markers: false,
        }
    }
}

/// Write `base.png` and `base.svg`: `panels` stacked vertically over a shared x axis,
/// a series keeping one colour (by its name) across them.
pub fn plot_panels(
    base: &Path,
    title: &str,
    x_label: &str,
    panels: &[Panel],
) -> Result<(), String> {
    plot_picture(base, &Picture::new(title, x_label, panels))
}

/// Each panel's colours when they go by name: the `k`-th distinct name of `classes`,
/// then of the figure in panel then series order, gets `COLORS[k % 10]`, in whichever
/// panels it appears.
fn colours_by_name<'a>(panels: &'a [Panel], classes: &[&'a str]) -> Vec<Vec<RGBColor>> {
    let mut place: std::collections::HashMap<&str, usize> = Default::default();
    for c in classes {
        let n = place.len();
        place.entry(c).or_insert(n);
    }
    panels
        .iter()
        .map(|p| {
            p.series
                .iter()
                .map(|s| {
                    let n = place.len();
                    COLORS[*place.entry(s.name.as_str()).or_insert(n) % COLORS.len()]
                })
                .collect()
        })
        .collect()
}

/// [`plot_panels`] with each panel's own colours: series `k` of panel `i` gets
/// `palettes[i][k % len]` (a picture that gives a thing a fixed colour, such as
/// mq-deadline's priority classes, passes one colour per series in their order).
pub fn plot_panels_in(
    base: &Path,
    title: &str,
    x_label: &str,
    panels: &[Panel],
    palettes: &[&[RGBColor]],
) -> Result<(), String> {
    let pic = Picture {
        palettes: Some(palettes),
        ..Picture::new(title, x_label, panels)
    };
    plot_picture(base, &pic)
}

/// Write `base.png` and `base.svg`: the figure `pic`.
pub fn plot_picture(base: &Path, pic: &Picture) -> Result<(), String> {
    let panels = pic.panels;
    if panels.is_empty() {
        return Ok(());
    }
    let by_name;
    let palettes: Vec<&[RGBColor]> = match pic.palettes {
        Some(p) => p.to_vec(),
        None => {
            by_name = colours_by_name(panels, pic.classes);
            by_name.iter().map(|c| &c[..]).collect()
        }
    };
    let uncoloured = |(p, c): (&Panel, &&[RGBColor])| c.is_empty() && !p.series.is_empty();
    if palettes.len() != panels.len() || panels.iter().zip(&palettes).any(uncoloured) {
        return Err(format!(
            "{}: {} panels but {} palettes (a panel with lines needs a colour)",
            base.display(),
            panels.len(),
            palettes.len()
        ));
    }
    let h = 260 * panels.len() as u32 + 60;
    render(
        base,
        (1100, h),
        &Panels {
            pic,
            palettes: &palettes,
        },
    )
}

/// A picture that can be drawn on any backend.
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static;
}

/// Draw `fig` into `base.png` and `base.svg`.
fn render(base: &Path, size: (u32, u32), fig: &impl Figure) -> Result<(), String> {
    glyphs::register()?;
    let png = base.with_extension("png");
    let svg = base.with_extension("svg");
    {
        let root = CrispText(BitMapBackend::new(&png, size)).into_drawing_area();
        fig.draw(&root)
            .map_err(|e| format!("{}: {e}", png.display()))?;
        root.present()
            .map_err(|e| format!("{}: {e}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        fig.draw(&root)
            .map_err(|e| format!("{}: {e}", svg.display()))?;
        root.present()
            .map_err(|e| format!("{}: {e}", svg.display()))?;
    }
    Ok(())
}

struct Panels<'a> {
    pic: &'a Picture<'a>,
    palettes: &'a [&'a [RGBColor]],
}

impl Figure for Panels<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        draw(root, self.pic, self.palettes)
    }
}

/// A set of marked points on an x-y chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Marks {
    pub name: String,
    /// (x, y, x error, y error); an error above 0 is drawn as a bar of ± that much.
    pub points: Vec<(f64, f64, f64, f64)>,
    /// Joined by a line, in the order given.
    pub joined: bool,
    /// Marker radius in pixels.
    pub size: u32,
}

/// Write `base.png` and `base.svg`: one x-y chart of marked points (a trade-off, the
/// points of a sweep with their error bars, chosen points marked), x on a log axis if
/// `log_x` (points at or below 0 are then left out).
pub fn plot_marks(
    base: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    marks: &[Marks],
) -> Result<(), String> {
    render(
        base,
        (1100, 760),
        &MarkChart {
            title,
            x_label,
            y_label,
            log_x,
            marks,
        },
    )
}

struct MarkChart<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    log_x: bool,
    marks: &'a [Marks],
}

impl Figure for MarkChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let root = root
            .titled(self.title, (glyphs::FAMILY, 22))
            .map_err(|e| e.to_string())?;
        let shown = |x: f64| !self.log_x || x > 0.0;
        let pts = || {
            self.marks
                .iter()
                .flat_map(|m| m.points.iter())
                .filter(|p| shown(p.0))
        };
        let span = |lo: f64, hi: f64| {
            if lo.is_finite() && hi > lo {
                (lo, hi)
            } else if lo.is_finite() {
                (lo - lo.abs() * 0.5 - 0.5, hi + hi.abs() * 0.5 + 0.5)
            } else {
                (0.1, 1.0)
            }
        };
        let (x0, x1) = span(
            pts()
                .map(|p| p.0 - p.2)
                .filter(|x| shown(*x))
                .fold(f64::INFINITY, f64::min),
            pts().map(|p| p.0 + p.2).fold(f64::NEG_INFINITY, f64::max),
        );
        let (y0, y1) = span(
            pts().map(|p| p.1 - p.3).fold(f64::INFINITY, f64::min),
            pts().map(|p| p.1 + p.3).fold(f64::NEG_INFINITY, f64::max),
        );
        let ypad = (y1 - y0) * 0.05;
        let mut builder = ChartBuilder::on(&root);
        builder
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70);
        if self.log_x {
            let (lo, hi) = (x0 / 1.2, x1 * 1.2);
            let mut chart = builder
                .build_cartesian_2d((lo..hi).log_scale(), (y0 - ypad)..(y1 + ypad))
                .map_err(|e| e.to_string())?;
            let fx = |x: f64| (x.ln() - lo.ln()) / (hi.ln() - lo.ln());
            let fy = |y: f64| (y - y0 + ypad) / (y1 - y0 + 2.0 * ypad);
            let corner = emptiest_corner(pts().map(|p| (fx(p.0), fy(p.1))));
            self.fill(&mut chart, lo, corner)
        } else {
            let xpad = (x1 - x0) * 0.05;
            let mut chart = builder
                .build_cartesian_2d((x0 - xpad)..(x1 + xpad), (y0 - ypad)..(y1 + ypad))
                .map_err(|e| e.to_string())?;
            let fx = |x: f64| (x - x0 + xpad) / (x1 - x0 + 2.0 * xpad);
            let fy = |y: f64| (y - y0 + ypad) / (y1 - y0 + 2.0 * ypad);
            let corner = emptiest_corner(pts().map(|p| (fx(p.0), fy(p.1))));
            self.fill(&mut chart, x0 - xpad, corner)
        }
    }
}

impl MarkChart<'_> {
    /// Mesh, marks, error bars and legend (in `corner`), whatever the x axis
    /// (`x_floor`: its left end).
    fn fill<'a, DB, X>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
        x_floor: f64,
        corner: SeriesLabelPosition,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        DB::ErrorType: 'static,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(self.x_label).y_desc(self.y_label);
        mesh.x_label_formatter(&tick).y_label_formatter(&tick);
        mesh.draw().map_err(|e| e.to_string())?;
        for (k, m) in self.marks.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            let points: Vec<(f64, f64, f64, f64)> = m
                .points
                .iter()
                .copied()
                .filter(|p| !self.log_x || p.0 > 0.0)
                .collect();
            if m.joined {
                chart
                    .draw_series(LineSeries::new(points.iter().map(|p| (p.0, p.1)), &color))
                    .map_err(|e| e.to_string())?;
            }
            let bars = points.iter().flat_map(|&(x, y, ex, ey)| {
                let mut v = Vec::new();
                if ex > 0.0 {
                    v.push(PathElement::new(
                        vec![((x - ex).max(x_floor), y), (x + ex, y)],
                        color,
                    ));
                }
                if ey > 0.0 {
                    v.push(PathElement::new(vec![(x, y - ey), (x, y + ey)], color));
                }
                v
            });
            chart.draw_series(bars).map_err(|e| e.to_string())?;
            let (size, joined) = (m.size, m.joined);
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&(x, y, _, _)| Circle::new((x, y), size, color.filled())),
                )
                .map_err(|e| e.to_string())?
                .label(m.name.as_str())
                .legend(move |(x, y)| -> DynElement<'static, _, _> {
                    // a line for a line, a dot for dots
                    if joined && size < 3 {
                        PathElement::new(vec![(x, y), (x + 18, y)], color).into_dyn()
                    } else {
                        Circle::new((x + 9, y), size.min(6), color.filled()).into_dyn()
                    }
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(corner)
            .draw()
            .map_err(|e| e.to_string())
    }
}

/// The corner of a chart its legend hides the fewest points in, from the points'
/// places as fractions of the plotting area (0,0 lower left): a legend box covers
/// about 45% of the width and 30% of the height; ties go to upper left, upper right,
/// lower right, lower left, in that order.
fn emptiest_corner(points: impl Iterator<Item = (f64, f64)>) -> SeriesLabelPosition {
    let corners = [
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::LowerLeft, false, false),
    ];
    let mut hidden = [0usize; 4];
    for (x, y) in points {
        for (k, &(_, right, upper)) in corners.iter().enumerate() {
            let in_x = if right { x >= 0.55 } else { x <= 0.45 };
            let in_y = if upper { y >= 0.7 } else { y <= 0.3 };
            if in_x && in_y {
                hidden[k] += 1;
            }
        }
    }
    let k = (0..4).min_by_key(|&k| (hidden[k], k)).unwrap_or(0);
    corners[k].0.clone()
}

/// The finite x values' span, (0, 1) when there are none.
fn bounds(panels: &[Panel]) -> (f64, f64) {
    let xs = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite());
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if lo.is_finite() && hi > lo {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

/// An axis: plotters' (linear, or log), its ticks where plotters puts them or at the
/// given values only (a percentile axis, a log axis: no light grid lines between them).
#[derive(Clone)]
struct Axis<R> {
    coord: R,
    ticks: Option<Vec<f64>>,
}

/// The shared x axis.
type XAxis = Axis<RangedCoordf64>;

impl<R: Ranged<ValueType = f64>> Ranged for Axis<R> {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.coord.map(v, limit)
    }
    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match &self.ticks {
            None => self.coord.key_points(hint),
            Some(_) if hint.weight().allow_light_points() => Vec::new(),
            Some(t) => t.clone(),
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.coord.range()
    }
}

impl<R: Ranged<ValueType = f64>> ValueFormatter<f64> for Axis<R> {
    fn format(v: &f64) -> String {
        tick(v)
    }
}

/// A log axis from `lo` to `hi` (both above 0), ticked at each power of ten (every
/// other past eight decades, so labels never crowd), and at 2 and 5 times them when
/// it spans at most two or that leaves fewer than three ticks, at each digit when
/// that still does.
/// plotters' own ticks label only the top decade of a wide span (a clat axis from
/// 0.05 to 1000 ms had labels from 100 up).
fn log_axis(lo: f64, hi: f64) -> Axis<LogCoord<f64>> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let decades = b - a;
    let at = |mults: &[f64], step: usize| -> Vec<f64> {
        (a..=b)
            .step_by(step)
            .flat_map(|e| mults.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    let mut ticks = match decades {
        ..=2 => at(&[1.0, 2.0, 5.0], 1),
        _ => at(&[1.0], (decades as usize).div_ceil(8)),
    };
    if ticks.len() < 3 {
        ticks = at(&[1.0, 2.0, 5.0], 1);
    }
    if ticks.len() < 3 {
        ticks = at(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1);
    }
    Axis {
        coord: (lo..hi).log_scale().into(),
        ticks: (ticks.len() >= 2).then_some(ticks),
    }
}

/// The x axis of a figure whose values span `x0..x1` (padded 3% each side when its
/// values are marked, so no marker is cut in half by the axis).
fn x_axis(scale: XScale, (x0, x1): (f64, f64), markers: bool) -> XAxis {
    let pad = if markers { 0.03 * (x1 - x0) } else { 0.0 };
    match scale {
        XScale::Linear => XAxis {
            coord: (x0 - pad..x1 + pad).into(),
            ticks: None,
        },
        XScale::Percentile => {
            // from p0, a little past the last percentile so its point is off the edge
            let hi = x1.max(1.0) + 0.15;
            let ticks = [0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999]
                .map(percentile_x)
                .into_iter()
                .filter(|&x| x <= hi)
                .collect();
            XAxis {
                coord: (0.0..hi).into(),
                ticks: Some(ticks),
            }
        }
    }
}

/// A percentile as a tick label: 50, 99.9, 99.99 (at most six decimals, no trailing
/// zeros).
fn percentile_tick(x: &f64) -> String {
    let s = format!("{:.6}", x_percentile(*x));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    pic: &Picture,
    palettes: &[&[RGBColor]],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(pic.title, (glyphs::FAMILY, 22))
        .map_err(|e| e.to_string())?;
    let panels = pic.panels;
    let areas = root.split_evenly((panels.len(), 1));
    let x = x_axis(pic.x_scale, bounds(panels), pic.markers);
    for (i, ((area, panel), palette)) in areas.iter().zip(panels).zip(palettes).enumerate() {
        let last = i + 1 == panels.len();
        let ys = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|&y| y.is_finite() && (!panel.log_y || y > 0.0));
        let (mut y0, mut y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(y), b.max(y))
        });
        if !y0.is_finite() {
            (y0, y1) = (if panel.log_y { 0.1 } else { 0.0 }, 1.0);
        }
        let mut builder = ChartBuilder::on(area);
        builder
            .margin(8)
            .x_label_area_size(if last { 36 } else { 20 })
            .y_label_area_size(70);
        let place = Place {
            pic,
            x_label: last.then_some(pic.x_label),
            labels: i == 0,
        };
        if panel.log_y {
            if y1 <= y0 {
                // one value: a decade either side, the line across the middle
                (y0, y1) = (y0 / 10.0, y1 * 10.0);
            }
            let mut chart = builder
                .build_cartesian_2d(x.clone(), log_axis(y0 / 1.2, y1 * 1.2))
                .map_err(|e| e.to_string())?;
            fill(&mut chart, panel, palette, &place)?;
        } else {
            let mut chart = builder
                .build_cartesian_2d(x.clone(), linear_span(y0, y1))
                .map_err(|e| e.to_string())?;
            fill(&mut chart, panel, palette, &place)?;
        }
    }
    Ok(())
}

/// A linear y axis for values from `y0` to `y1`, padded 5% each side. Values whose
/// spread is under 5% of their size (a job held at 500,000 IOPS that rose from
/// 499,960; vrate flat at 100%) are drawn from zero: zoomed in, the axis would turn
/// a rounding-sized wobble into a climb across the whole panel.
fn linear_span(y0: f64, y1: f64) -> std::ops::Range<f64> {
    let size = y0.abs().max(y1.abs());
    let (y0, y1) = if y1 - y0 < 0.05 * size {
        (y0.min(0.0), y1.max(0.0))
    } else {
        (y0, y1)
    };
    let pad = if y1 > y0 { (y1 - y0) * 0.05 } else { 0.5 };
    (y0 - pad)..(y1 + pad)
}

/// A tick label: plotters places its ticks at values such as 0.30000000000000004 and
/// prints whole numbers as "500000.0", so print at most four significant digits, no
/// trailing zeros.
fn tick(v: &f64) -> String {
    if *v == 0.0 || !v.is_finite() {
        return format!("{}", v.abs());
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.digits$}");
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    }
}

/// The most entries a panel's legend lists: as many as its 260 pixels hold (a picture
/// of 10,000 cgroups' lines would otherwise stack 10,000 names down the page).
const LEGEND_MAX: usize = 13;

/// Where a panel is in its figure.
struct Place<'a> {
    pic: &'a Picture<'a>,
    /// The x axis's name, under the last panel.
    x_label: Option<&'a str>,
    /// The events' labels, in the first panel.
    labels: bool,
}

/// The runs of a series' points that are drawn as one line each: split at its gaps
/// (a y not finite, or at or below 0 on a log axis).
fn runs(points: &[(f64, f64)], log_y: bool) -> impl Iterator<Item = &[(f64, f64)]> {
    let gap = move |p: &(f64, f64)| !(p.0.is_finite() && p.1.is_finite() && (!log_y || p.1 > 0.0));
    points.split(gap).filter(|r| !r.is_empty())
}

/// Mesh, lines, events and legend of one panel, whatever its y axis.
fn fill<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<XAxis, Y>>,
    panel: &Panel,
    palette: &[RGBColor],
    place: &Place,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let pic = place.pic;
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(panel.y_label.as_str());
    match pic.x_scale {
        XScale::Linear => mesh.x_label_formatter(&tick),
        XScale::Percentile => mesh.x_label_formatter(&percentile_tick),
    };
    mesh.y_label_formatter(&tick);
    if let Some(x) = place.x_label {
        mesh.x_desc(x);
    }
    mesh.draw().map_err(|e| e.to_string())?;
    // a legend past a screenful names no one: the first lines, then how many more
    let named = if panel.series.len() > LEGEND_MAX {
        LEGEND_MAX - 1
    } else {
        LEGEND_MAX
    };
    for (k, s) in panel.series.iter().enumerate() {
        let color = palette[k % palette.len()];
        let lines = runs(&s.points, panel.log_y)
            .filter(|r| r.len() > 1)
            .map(|r| PathElement::new(r, color));
        let drawn = chart.draw_series(lines).map_err(|e| e.to_string())?;
        if k < named {
            drawn
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        // a value between two gaps is a dot; with markers, every value is
        let (dotted, r) = if pic.markers { (usize::MAX, 3) } else { (1, 2) };
        let dots = runs(&s.points, panel.log_y)
            .filter(|run| run.len() <= dotted)
            .flatten()
            .map(|&p| Circle::new(p, r, color.filled()));
        chart.draw_series(dots).map_err(|e| e.to_string())?;
    }
    if panel.series.len() > named {
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(|e| e.to_string())?
            .label(format!("… and {} more", panel.series.len() - named))
            .legend(|(x, y)| EmptyElement::at((x, y)));
    }
    // the figure's events within the x axis: a thin line across the panel, and in
    // the first panel its label at the top, beside the line (to its left in the
    // axis's last quarter), successive labels a line lower so neighbours stay apart
    let (xr, yr) = (chart.x_range(), chart.y_range());
    let shown: Vec<&Event> = place
        .pic
        .events
        .iter()
        .filter(|e| xr.contains(&e.at))
        .collect();
    let ink = BLACK.mix(0.55);
    let lines = shown
        .iter()
        .map(|e| PathElement::new(vec![(e.at, yr.start), (e.at, yr.end)], ink.stroke_width(1)));
    chart.draw_series(lines).map_err(|e| e.to_string())?;
    if place.labels {
        let late = xr.start + 0.75 * (xr.end - xr.start);
        let labels = shown.iter().enumerate().map(|(j, e)| {
            let dy = 3 + 14 * (j % 4) as i32;
            let (dx, h) = if e.at > late {
                (-4, HPos::Right)
            } else {
                (4, HPos::Left)
            };
            let font = (glyphs::FAMILY, 12)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(h, VPos::Top));
            EmptyElement::at((e.at, yr.end)) + Text::new(e.label.clone(), (dx, dy), font)
        });
        chart.draw_series(labels).map_err(|e| e.to_string())?;
    }
    if panel.series.len() > 1 || panel.series.iter().any(|s| !s.name.is_empty()) {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legend_goes_where_it_hides_the_fewest_points() {
        let pos = |pts: &[(f64, f64)]| format!("{:?}", emptiest_corner(pts.iter().copied()));
        // empty: upper left
        assert_eq!(pos(&[]), format!("{:?}", SeriesLabelPosition::UpperLeft));
        // points up left: upper right
        assert_eq!(
            pos(&[(0.1, 0.9), (0.2, 0.8)]),
            format!("{:?}", SeriesLabelPosition::UpperRight)
        );
        // both upper corners taken: lower right
        assert_eq!(
            pos(&[(0.1, 0.9), (0.9, 0.9), (0.5, 0.5)]),
            format!("{:?}", SeriesLabelPosition::LowerRight)
        );
    }

    #[test]
    fn ticks_print_short() {
        let cases = [
            (0.30000000000000004, "0.3"),
            (0.1, "0.1"),
            (0.0001234567, "0.0001235"),
            (800.0000000000001, "800"),
            (5.0, "5"),
            (123456.0, "123456"),
            (500000.0, "500000"),
            (0.0, "0"),
            (-0.0, "0"),
            (-2.5, "-2.5"),
        ];
        for (v, want) in cases {
            assert_eq!(tick(&v), want, "{v}");
        }
    }

    /// A linear axis zooms in on a real spread, and shows a flat line (or one whose
    /// spread is rounding-sized) from zero, never as a climb across the panel.
    #[test]
    fn linear_axes_zoom_only_on_a_real_spread() {
        let span = |y0: f64, y1: f64| {
            let r = linear_span(y0, y1);
            (r.start, r.end)
        };
        // vrate from 100% down to 60%: zoomed, 5% padding
        assert_eq!(span(60.0, 100.0), (58.0, 102.0));
        // 499,960 to 500,000 IOPS: from zero
        let (lo, hi) = span(499_960.0, 500_000.0);
        assert!(lo < 0.0 && lo > -30_000.0 && hi > 500_000.0, "{lo}..{hi}");
        // flat at 100: from zero, the line inside the panel
        let (lo, hi) = span(100.0, 100.0);
        assert!(lo < 0.0 && hi > 100.0, "{lo}..{hi}");
        // busy_level from -3 to 2, and all zeros
        assert_eq!(span(-3.0, 2.0), (-3.25, 2.25));
        assert_eq!(span(0.0, 0.0), (-0.5, 0.5));
    }

    /// A panel of many lines draws them all but names only the first in its legend,
    /// then how many more there are.
    #[test]
    fn a_long_legend_names_the_first_lines_and_counts_the_rest() {
        let dir = std::env::temp_dir().join(format!("blkcg-sim-legend-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("jobs");
        let series = (0..40)
            .map(|k| Series {
                name: format!("job{k:02}x"),
                points: vec![(0.0, k as f64), (1.0, k as f64 + 1.0)],
            })
            .collect();
        let panel = Panel {
            y_label: "IOPS".into(),
            series,
            log_y: false,
        };
        let drawn = plot_panels(&base, "jobs", "time (s)", &[panel]);
        let svg = std::fs::read_to_string(base.with_extension("svg")).unwrap_or_default();
        std::fs::remove_dir_all(&dir).ok();
        drawn.unwrap();
        assert!(svg.matches("<polyline").count() >= 40, "every line drawn");
        let named = LEGEND_MAX - 1;
        assert!(svg.contains(&format!("job{:02}x", named - 1)));
        assert!(
            !svg.contains(&format!("job{named:02}x")),
            "legend past its limit"
        );
        assert!(svg.contains(&format!("and {} more", 40 - named)));
    }

    /// Draw `pic` to a scratch folder, returning its SVG.
    fn svg_of(name: &str, pic: &Picture) -> String {
        let dir = std::env::temp_dir().join(format!("blkcg-sim-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join(name);
        let drawn = plot_picture(&base, pic);
        let svg = std::fs::read_to_string(base.with_extension("svg"));
        std::fs::remove_dir_all(&dir).ok();
        drawn.unwrap();
        svg.unwrap()
    }

    fn stroked(c: RGBColor) -> String {
        format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2)
    }

    /// A series with an empty window breaks there: two lines, not one straight across
    /// it; a value alone between gaps is a dot; a 0 on a log axis is a gap too.
    #[test]
    fn a_gap_breaks_the_line() {
        let line = |points: Vec<(f64, f64)>, log_y| Panel {
            y_label: "ms".into(),
            series: vec![Series {
                name: String::new(),
                points,
            }],
            log_y,
        };
        let lines = |svg: &str| {
            svg.lines()
                .filter(|l| l.contains("<polyline") && l.contains(&stroked(COLORS[0])))
                .count()
        };
        let gap = vec![
            (0.0, 1.0),
            (1.0, 2.0),
            (2.0, f64::NAN),
            (3.0, 2.0),
            (4.0, 1.0),
        ];
        let panels = [line(gap, false)];
        assert_eq!(lines(&svg_of("gap", &Picture::new("t", "s", &panels))), 2);
        let whole = vec![(0.0, 1.0), (1.0, 2.0), (3.0, 2.0), (4.0, 1.0)];
        let panels = [line(whole, false)];
        assert_eq!(lines(&svg_of("nogap", &Picture::new("t", "s", &panels))), 1);
        // log axis: the 0 is a gap, the lone 5 between gaps a dot
        let lone = vec![(0.0, 1.0), (1.0, 2.0), (2.0, 0.0), (3.0, 5.0), (4.0, 0.0)];
        let panels = [line(lone, true)];
        let svg = svg_of("lone", &Picture::new("t", "s", &panels));
        assert_eq!(lines(&svg), 1);
        assert_eq!(svg.matches("<circle").count(), 1, "the lone value");
    }

    /// No line is drawn in the grid's grey: every colour has a hue, and none is a
    /// colour the mesh is drawn in.
    #[test]
    fn no_line_in_the_grids_colour() {
        for c in COLORS {
            let (hi, lo) = (c.0.max(c.1).max(c.2), c.0.min(c.1).min(c.2));
            assert!(hi - lo >= 60, "{c:?} reads as grey");
        }
        let empty = [Panel {
            y_label: "y".into(),
            series: Vec::new(),
            log_y: false,
        }];
        let svg = svg_of("mesh", &Picture::new("t", "s", &empty));
        for c in COLORS {
            assert!(!svg.contains(&stroked(c)), "the mesh in {c:?}");
        }
    }

    /// A job keeps its colour in every panel, even where another is missing, and the
    /// run's classes come first in colour.
    #[test]
    fn one_colour_per_name_across_panels() {
        let s = |name: &str| Series {
            name: name.into(),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
        };
        let panel = |series| Panel {
            y_label: "y".into(),
            series,
            log_y: false,
        };
        let panels = [panel(vec![s("a"), s("b")]), panel(vec![s("b")])];
        let c = colours_by_name(&panels, &[]);
        assert_eq!(c[0], [COLORS[0], COLORS[1]]);
        assert_eq!(c[1], [COLORS[1]], "b in a's colour where a is missing");
        let c = colours_by_name(&panels, &["b", "x"]);
        assert_eq!(c[0], [COLORS[2], COLORS[0]]);
        assert_eq!(c[1], [COLORS[0]]);
        // and so drawn: a's line and legend once, b's in both panels in b's colour
        let svg = svg_of("names", &Picture::new("t", "s", &panels));
        let count = |c| svg.matches(&stroked(c)).count();
        assert_eq!((count(COLORS[0]), count(COLORS[1])), (2, 4));
    }

    /// The clat picture's x axis is percentile on a log scale of 1 − p: p99.99 has its
    /// tick, as far from p99.9 as p90 from p99.
    #[test]
    fn clat_percentiles_on_a_log_percentile_axis() {
        use crate::report::summary::{JobSummary, clat_percentile_panel};
        let row = JobSummary {
            cgroup: "a".into(),
            job: "a".into(),
            round: 0,
            iops: 1.0,
            mib_s: 1.0,
            slat_mean_ms: 0.0,
            clat_mean_ms: 1.0,
            clat_max_ms: 9.0,
            clat_pct_ms: [1.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0]
                .iter()
                .map(|&p| (p, 1.0 + p / 10.0))
                .collect(),
            prio: None,
            lateness_ms: None,
        };
        let panel = clat_percentile_panel(&[row]);
        let xs: Vec<f64> = panel.series[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs.len(), 6, "p100 is at infinity: left out");
        for (x, want) in xs[2..].iter().zip([1.0, 2.0, 3.0, 4.0]) {
            assert!((x - want).abs() < 1e-9, "{xs:?}");
        }
        let panels = [panel];
        let pic = Picture {
            x_scale: XScale::Percentile,
            ..Picture::new("clat", "percentile", &panels)
        };
        let svg = svg_of("clat", &pic);
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        for label in ["50", "90", "99", "99.9", "99.99"] {
            assert!(texts.contains(&label), "no tick {label}");
        }
        assert!(!texts.contains(&"99.999"), "a tick past the data");
    }

    /// A log axis labels every decade of a wide span (plotters' own labelled only the
    /// top one), and a narrow one at more than one value.
    #[test]
    fn log_axes_label_every_decade() {
        let ticks = log_axis(0.04, 1200.0).ticks.unwrap();
        for d in [0.1, 1.0, 10.0, 100.0, 1000.0] {
            assert!(
                ticks.iter().any(|t| (t / d - 1.0).abs() < 1e-9),
                "{d}: {ticks:?}"
            );
        }
        let ticks = log_axis(0.3, 0.8).ticks.unwrap();
        assert!(ticks.len() >= 3, "{ticks:?}");
        let wide = log_axis(1e-3, 1e9).ticks.unwrap();
        assert!(wide.len() <= 9, "{wide:?}");
    }

    /// A scheduled event is a labelled line across the panels; one past the axis is
    /// not drawn. With markers, every value is a dot.
    #[test]
    fn events_and_markers_are_drawn() {
        let panels: Vec<Panel> = (0..2)
            .map(|_| Panel {
                y_label: "IOPS".into(),
                series: vec![Series {
                    name: "a".into(),
                    points: (0..5).map(|i| (i as f64, 1.0 + i as f64)).collect(),
                }],
                log_y: false,
            })
            .collect();
        let events = [
            Event {
                at: 2.0,
                label: "a/io.max 8:0 riops=100".into(),
            },
            Event {
                at: 9.0,
                label: "disk removed".into(),
            },
        ];
        let pic = Picture {
            events: &events,
            markers: true,
            ..Picture::new("t", "time (s)", &panels)
        };
        let svg = svg_of("events", &pic);
        assert_eq!(
            svg.matches("a/io.max 8:0 riops=100").count(),
            1,
            "labelled once"
        );
        assert!(!svg.contains("disk removed"), "past the axis");
        assert_eq!(svg.matches("<circle").count(), 10, "a marker per value");
        let plain = svg_of("plain", &Picture::new("t", "time (s)", &panels));
        assert!(!plain.contains("<circle"));
        // the event's line in both panels: one more polyline each than without it
        let count = |s: &str| s.matches("<polyline").count();
        assert_eq!(count(&svg), count(&plain) + 2);
    }

    #[test]
    fn writes_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("blkcg-sim-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("vrate");
        let panels = vec![
            Panel {
                y_label: "vrate %".into(),
                series: vec![Series {
                    name: "vrate".into(),
                    points: (0..100)
                        .map(|i| (i as f64 * 0.007, 100.0 - i as f64 * 0.2))
                        .collect(),
                }],
                log_y: false,
            },
            Panel {
                y_label: "busy_level".into(),
                series: vec![Series {
                    name: "busy".into(),
                    points: (0..100)
                        .map(|i| (i as f64 * 0.007, (i % 7) as f64))
                        .collect(),
                }],
                log_y: false,
            },
            Panel {
                y_label: "latency (ms)".into(),
                series: vec![Series {
                    name: "lat".into(),
                    points: (0..100)
                        .map(|i| (i as f64 * 0.007, 0.5 * 1.1f64.powi(i)))
                        .collect(),
                }],
                log_y: true,
            },
        ];
        plot_panels(&base, "iocost", "time (s)", &panels).unwrap();
        let svg = std::fs::read_to_string(base.with_extension("svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("polyline"));
        assert!(std::fs::metadata(base.with_extension("png")).unwrap().len() > 1000);
        let marks = [
            Marks {
                name: "sweep".into(),
                points: (1..20)
                    .map(|i| (i as f64 * 0.5, 100.0 - 1.0 / i as f64, 0.1, 2.0))
                    .collect(),
                joined: true,
                size: 3,
            },
            Marks {
                name: "chosen".into(),
                points: vec![(2.0, 99.5, 0.0, 0.0)],
                joined: false,
                size: 8,
            },
        ];
        plot_marks(
            &dir.join("tradeoff"),
            "trade-off",
            "p99 (ms)",
            "MiB/s",
            true,
            &marks,
        )
        .unwrap();
        let svg = std::fs::read_to_string(dir.join("tradeoff.svg")).unwrap();
        assert!(svg.contains("<circle"), "markers drawn");
        if std::env::var_os("BLKCG_SIM_KEEP_PLOT").is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
