//! Pictures, for when a person would rather look than read: stacked time-series panels
//! sharing one x axis (vrate and busy_level over time; per-cgroup IOPS and latency; the
//! device's per-second throughput) and latency CDFs. Each figure is written as PNG and
//! SVG with plotters. Plotting is best effort: a machine without fonts gets an error
//! message, never a failed run.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

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

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Write `base.png` and `base.svg`: `panels` stacked vertically over a shared x axis.
pub fn plot_panels(
    base: &Path,
    title: &str,
    x_label: &str,
    panels: &[Panel],
) -> Result<(), String> {
    if panels.is_empty() {
        return Ok(());
    }
    let h = 260 * panels.len() as u32 + 60;
    let png = base.with_extension("png");
    let svg = base.with_extension("svg");
    {
        let root = BitMapBackend::new(&png, (1100, h)).into_drawing_area();
        draw(&root, title, x_label, panels).map_err(|e| format!("{}: {e}", png.display()))?;
        root.present()
            .map_err(|e| format!("{}: {e}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, (1100, h)).into_drawing_area();
        draw(&root, title, x_label, panels).map_err(|e| format!("{}: {e}", svg.display()))?;
        root.present()
            .map_err(|e| format!("{}: {e}", svg.display()))?;
    }
    Ok(())
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
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| e.to_string())?;
    let areas = root.split_evenly((panels.len(), 1));
    let (x0, x1) = bounds(panels);
    for (i, (area, panel)) in areas.iter().zip(panels).enumerate() {
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
                y1 = y0 * 10.0;
            }
            let range = (y0 / 1.2..y1 * 1.2).log_scale();
            let mut chart = builder
                .build_cartesian_2d(x0..x1, range)
                .map_err(|e| e.to_string())?;
            fill(&mut chart, panel, last.then_some(x_label))?;
        } else {
            if y1 <= y0 {
                y1 = y0 + 1.0;
            }
            let pad = (y1 - y0) * 0.05;
            let mut chart = builder
                .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
                .map_err(|e| e.to_string())?;
            fill(&mut chart, panel, last.then_some(x_label))?;
        }
    }
    Ok(())
}

/// Mesh, lines and legend of one panel, whatever its y axis.
fn fill<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    panel: &Panel,
    x_label: Option<&str>,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(panel.y_label.as_str());
    if let Some(x) = x_label {
        mesh.x_desc(x);
    }
    mesh.draw().map_err(|e| e.to_string())?;
    for (k, s) in panel.series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let points = s
            .points
            .iter()
            .copied()
            .filter(|p| !panel.log_y || p.1 > 0.0);
        chart
            .draw_series(LineSeries::new(points, &color))
            .map_err(|e| e.to_string())?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
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
        match plot_panels(&base, "iocost", "time (s)", &panels) {
            Ok(()) => {
                let svg = std::fs::read_to_string(base.with_extension("svg")).unwrap();
                assert!(svg.contains("<svg") && svg.contains("polyline"));
                assert!(std::fs::metadata(base.with_extension("png")).unwrap().len() > 1000);
            }
            // a machine without fonts: the error must say so, not panic
            Err(e) => assert!(!e.is_empty()),
        }
        if std::env::var_os("BLKCG_SIM_KEEP_PLOT").is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
