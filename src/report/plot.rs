//! Pictures, for when a person would rather look than read: stacked time-series panels
//! sharing one x axis (vrate and busy_level over time; per-cgroup IOPS and latency; the
//! device's per-second throughput) and latency CDFs. Each figure is written as PNG and
//! SVG with plotters; their text is drawn in one built-in face (`glyphs.rs`), so every
//! machine draws them alike. A picture that cannot be written (a full disk) is an error
//! message, never a failed run.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::glyphs::{self, CrispText};

/// One named line.
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
    /// points at or below 0 are left out.
    pub log_y: bool,
}

/// The lines' colours by default: series `k` of a panel gets `COLORS[k % 10]`.
pub const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Write `base.png` and `base.svg`: `panels` stacked vertically over a shared x axis.
pub fn plot_panels(
    base: &Path,
    title: &str,
    x_label: &str,
    panels: &[Panel],
) -> Result<(), String> {
    let palettes = vec![&COLORS[..]; panels.len()];
    plot_panels_in(base, title, x_label, panels, &palettes)
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
    if panels.is_empty() {
        return Ok(());
    }
    let uncoloured = |(p, c): (&Panel, &&[RGBColor])| c.is_empty() && !p.series.is_empty();
    if palettes.len() != panels.len() || panels.iter().zip(palettes).any(uncoloured) {
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
            title,
            x_label,
            panels,
            palettes,
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
    title: &'a str,
    x_label: &'a str,
    panels: &'a [Panel],
    palettes: &'a [&'a [RGBColor]],
}

impl Figure for Panels<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        draw(root, self.title, self.x_label, self.panels, self.palettes)
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
            self.fill(&mut chart, lo)
        } else {
            let xpad = (x1 - x0) * 0.05;
            let mut chart = builder
                .build_cartesian_2d((x0 - xpad)..(x1 + xpad), (y0 - ypad)..(y1 + ypad))
                .map_err(|e| e.to_string())?;
            self.fill(&mut chart, x0 - xpad)
        }
    }
}

impl MarkChart<'_> {
    /// Mesh, marks, error bars and legend, whatever the x axis (`x_floor`: its left end).
    fn fill<'a, DB, X>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
        x_floor: f64,
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
            let size = m.size;
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&(x, y, _, _)| Circle::new((x, y), size, color.filled())),
                )
                .map_err(|e| e.to_string())?
                .label(m.name.as_str())
                .legend(move |(x, y)| Circle::new((x + 9, y), size.min(6), color.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())
    }
}

fn bounds(panels: &[Panel]) -> (f64, f64) {
    let xs = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if lo.is_finite() && hi > lo {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    panels: &[Panel],
    palettes: &[&[RGBColor]],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, (glyphs::FAMILY, 22))
        .map_err(|e| e.to_string())?;
    let areas = root.split_evenly((panels.len(), 1));
    let (x0, x1) = bounds(panels);
    for (i, ((area, panel), palette)) in areas.iter().zip(panels).zip(palettes).enumerate() {
        let last = i + 1 == panels.len();
        let ys = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|&y| !panel.log_y || y > 0.0);
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
        if panel.log_y {
            if y1 <= y0 {
                // one value: a decade either side, the line across the middle
                (y0, y1) = (y0 / 10.0, y1 * 10.0);
            }
            let range = (y0 / 1.2..y1 * 1.2).log_scale();
            let mut chart = builder
                .build_cartesian_2d(x0..x1, range)
                .map_err(|e| e.to_string())?;
            fill(&mut chart, panel, palette, last.then_some(x_label))?;
        } else {
            let mut chart = builder
                .build_cartesian_2d(x0..x1, linear_span(y0, y1))
                .map_err(|e| e.to_string())?;
            fill(&mut chart, panel, palette, last.then_some(x_label))?;
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

/// Mesh, lines and legend of one panel, whatever its y axis.
fn fill<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    panel: &Panel,
    palette: &[RGBColor],
    x_label: Option<&str>,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(panel.y_label.as_str());
    mesh.x_label_formatter(&tick).y_label_formatter(&tick);
    if let Some(x) = x_label {
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
        let points = s
            .points
            .iter()
            .copied()
            .filter(|p| !panel.log_y || p.1 > 0.0);
        let drawn = chart
            .draw_series(LineSeries::new(points, &color))
            .map_err(|e| e.to_string())?;
        if k < named {
            drawn
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
    }
    if panel.series.len() > named {
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(|e| e.to_string())?
            .label(format!("… and {} more", panel.series.len() - named))
            .legend(|(x, y)| EmptyElement::at((x, y)));
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
