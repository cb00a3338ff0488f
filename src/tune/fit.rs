//! Piecewise-linear fits of a figure against vrate, and the searches on them that
//! resctl-bench's `iocost-tune` solves its QoS solutions with.
//!
//! Design
//! ------
//! Our own code for resctl-demo's `resctl-bench/src/bench/iocost_tune.rs` (`DataLines`,
//! `DataSeries::fit_lines()`, `QoSTarget::find_*`): a figure measured at several vrates
//! (every seed a point) is fitted with the best of a mean flat line, a linear regression
//! (more than 3 points), a flat line joined to a slope on either side, and two flat lines
//! joined by a slope — the flat parts at the mean of their points, the slope by least
//! squares about its hinge. A fit whose lines are not monotone the way the figure must
//! be (`Shape`), or reach 0 or below, is not taken; the error is √Σ(residual²) / n,
//! times 1.025 per segment so fewer segments win ties; hinges lie midway between data
//! points, at least 0.25 apart and 10 vrate points from either end and from each other
//! (`MIN_DIV_DIST`, `MIN_SEG_DIST`). Flat parts have exactly equal ends, so "the
//! largest vrate with the minimum value" is the right end of a flat floor, as resctl
//! finds inflection points. resctl's single-peak shape (for aMOF) and Chauvenet outlier
//! filtering are not reproduced: our points are exact for their seed.

/// One measurement: vrate (%) and the figure.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
}

/// Which way a figure must go as vrate rises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Any,
    /// Never falling (throughput, latency).
    Inc,
    /// Never rising (isolation).
    Dec,
}

/// Connected line segments through `points` (strictly increasing x) over `range`.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    pub points: Vec<Pt>,
    pub range: (f64, f64),
}

/// Prefer fewer segments: the error grows this much per segment.
const ERROR_MULTIPLIER: f64 = 1.025;
/// Hinges closer than this (vrate %) are not both tried.
const MIN_DIV_DIST: f64 = 0.25;
/// Every segment spans at least this much vrate (%).
const MIN_SEG_DIST: f64 = 10.0;

impl Lines {
    /// Lines through `pts`; None unless x strictly increases.
    fn new(pts: Vec<Pt>) -> Option<Lines> {
        if pts.windows(2).any(|w| w[0].x >= w[1].x) {
            return None;
        }
        let range = (pts.first()?.x, pts.last()?.x);
        Some(Lines { points: pts, range })
    }

    /// y at `x`; outside the range the nearest segment goes on.
    fn eval_extrapolate(&self, x: f64) -> f64 {
        let mut seg = None;
        for w in self.points.windows(2) {
            seg = Some((w[0], w[1]));
            if x <= w[1].x {
                break;
            }
        }
        match seg {
            // equal ends stay exactly equal: flat lines are found by equality
            Some((a, b)) if x == a.x || a.y == b.y => a.y,
            Some((_, b)) if x == b.x => b.y,
            Some((a, b)) => a.y + (x - a.x) * (b.y - a.y) / (b.x - a.x),
            None => self.points.first().map_or(0.0, |p| p.y),
        }
    }

    /// y at `x`, `x` clamped to the range.
    pub fn eval(&self, x: f64) -> f64 {
        self.eval_extrapolate(x.clamp(self.range.0, self.range.1))
    }

    /// The same lines over `range` (which may reach past the data).
    pub fn with_range(&self, range: (f64, f64)) -> Lines {
        if self.points.len() < 2 || range.0 >= range.1 {
            let y = self.eval(range.0);
            let mut pts = vec![Pt { x: range.0, y }];
            if range.1 > range.0 {
                pts.push(Pt { x: range.1, y });
            }
            return Lines { points: pts, range };
        }
        let (y0, y1) = (
            self.eval_extrapolate(range.0),
            self.eval_extrapolate(range.1),
        );
        let mut pts = vec![Pt { x: range.0, y: y0 }];
        pts.extend(
            self.points[1..self.points.len() - 1]
                .iter()
                .filter(|p| p.x > range.0 && p.x < range.1),
        );
        pts.push(Pt { x: range.1, y: y1 });
        Lines { points: pts, range }
    }

    /// The lines within `range` (only ever narrower), None if they miss it.
    pub fn clamped(&self, range: (f64, f64)) -> Option<Lines> {
        let r = (range.0.max(self.range.0), range.1.min(self.range.1));
        (r.0 <= r.1).then(|| self.with_range(r))
    }

    /// The smallest and largest y of the points.
    pub fn min_max(&self) -> (f64, f64) {
        self.points
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), p| {
                (lo.min(p.y), hi.max(p.y))
            })
    }

    fn shaped(&self, shape: Shape) -> bool {
        self.points.windows(2).all(|w| match shape {
            Shape::Any => true,
            Shape::Inc => w[1].y >= w[0].y,
            Shape::Dec => w[1].y <= w[0].y,
        })
    }

    /// The x of point `idx`, moved by `margin` (a fraction) towards the flat side when
    /// one side of it is flat and the other a slope: not right at the tip of a slope.
    fn x_with_margin(&self, idx: usize, margin: f64) -> f64 {
        let p = &self.points;
        let (x, y) = (p[idx].x, p[idx].y);
        if margin != 0.0 && idx > 0 && idx + 1 < p.len() {
            if p[idx - 1].y != y && p[idx + 1].y == y {
                return (x * (1.0 + margin)).min(self.range.1);
            }
            if p[idx - 1].y == y && p[idx + 1].y != y {
                return (x * (1.0 - margin)).max(self.range.0);
            }
        }
        x
    }
}

/// Which end of a flat value a search wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Min,
    Max,
}

/// The smallest (`End::Min`) or largest vrate within `range` where the fitted lines are
/// at their minimum (`at == End::Min`) or maximum, moved by `margin` off a slope's tip
/// (resctl's `find_{min,max}_vrate_at_{min,max}_val`). Flat lines answer `flat`, or
/// the range's right end. None when the lines miss the range.
pub fn find_vrate(
    lines: &Lines,
    range: (f64, f64),
    vrate: End,
    at: End,
    margin: f64,
    flat: Option<f64>,
) -> Option<f64> {
    let dl = lines.clamped(range)?;
    let (lo, hi) = dl.min_max();
    if lo == hi {
        return Some(flat.unwrap_or(dl.range.1).clamp(dl.range.0, dl.range.1));
    }
    let y = if at == End::Min { lo } else { hi };
    let idx = match vrate {
        End::Min => dl.points.iter().position(|p| p.y == y)?,
        End::Max => dl.points.iter().rposition(|p| p.y == y)?,
    };
    Some(dl.x_with_margin(idx, margin))
}

/// A fitted figure: its points (sorted by vrate), lines and error.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub data: Vec<Pt>,
    pub lines: Lines,
    pub error: f64,
}

/// √Σ(residual²) / n.
fn error_of(data: &[Pt], lines: &Lines) -> f64 {
    if data.is_empty() {
        return 0.0;
    }
    data.iter()
        .map(|p| (p.y - lines.eval(p.x)).powi(2))
        .sum::<f64>()
        .sqrt()
        / data.len() as f64
}

/// Fit `data` (any order) with the best lines of `shape` (see the module's design).
/// None without data.
pub fn fit(data: &[Pt], shape: Shape) -> Option<Fit> {
    let mut data = data.to_vec();
    data.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = data.len();
    let (start, end) = (data.first()?.x, data.last()?.x);
    let mean = |d: &[Pt]| d.iter().map(|p| p.y).sum::<f64>() / d.len() as f64;
    let m = mean(&data);
    if n == 1 || start == end {
        let lines = Lines {
            points: vec![Pt { x: start, y: m }],
            range: (start, end),
        };
        return Some(Fit {
            error: error_of(&data, &lines),
            data,
            lines,
        });
    }
    let mut best = Lines::new(vec![Pt { x: start, y: m }, Pt { x: end, y: m }])?;
    let mut best_err = error_of(&data, &best);
    let mut consider = |l: Option<Lines>| {
        let Some(l) = l else { return };
        if l.min_max().0 <= 0.0 || !l.shaped(shape) {
            return;
        }
        let err = error_of(&data, &l) * ERROR_MULTIPLIER.powi(l.points.len() as i32 - 1);
        if err < best_err {
            best = l;
            best_err = err;
        }
    };
    // the x between data[i-1] and data[i] (a data point's own x at the ends)
    let div = |i: usize| {
        if i > 0 && i < n {
            (data[i - 1].x + data[i].x) / 2.0
        } else {
            data[i.min(n - 1)].x
        }
    };
    // least-squares slope through `hinge`
    let slope = |d: &[Pt], h: Pt| {
        let top: f64 = d.iter().map(|p| (p.x - h.x) * (p.y - h.y)).sum();
        let bot: f64 = d.iter().map(|p| (p.x - h.x).powi(2)).sum();
        top / bot
    };
    if n > 3 {
        let (mx, my) = (data.iter().map(|p| p.x).sum::<f64>() / n as f64, m);
        let sxy: f64 = data.iter().map(|p| (p.x - mx) * (p.y - my)).sum();
        let sxx: f64 = data.iter().map(|p| (p.x - mx).powi(2)).sum();
        let b = sxy / sxx;
        let at = |x: f64| my + b * (x - mx);
        consider(Lines::new(vec![
            Pt {
                x: start,
                y: at(start),
            },
            Pt { x: end, y: at(end) },
        ]));
    }
    // one flat line and one slope
    let mut last = f64::MIN;
    for i in 0..n {
        let d = div(i);
        if d < last + MIN_DIV_DIST || d < start + MIN_SEG_DIST || d > end - MIN_SEG_DIST {
            continue;
        }
        last = d;
        let (l, r) = data.split_at(i);
        let left = Pt { x: d, y: mean(l) };
        let s = slope(r, left);
        if s != 0.0 {
            consider(Lines::new(vec![
                Pt {
                    x: start,
                    y: left.y,
                },
                left,
                Pt {
                    x: end,
                    y: left.y + s * (end - d),
                },
            ]));
        }
        let right = Pt { x: d, y: mean(r) };
        let s = slope(l, right);
        if s != 0.0 {
            consider(Lines::new(vec![
                Pt {
                    x: start,
                    y: right.y - s * (d - start),
                },
                right,
                Pt { x: end, y: right.y },
            ]));
        }
    }
    // two flat lines joined by a slope
    let mut last_l = f64::MIN;
    for li in 0..n {
        let dl = div(li);
        if dl < last_l + MIN_DIV_DIST || dl < start + MIN_SEG_DIST {
            continue;
        }
        last_l = dl;
        let mut last_r = f64::MIN;
        for ri in li..n {
            let dr = div(ri);
            if dr < last_r + MIN_DIV_DIST || dr - dl < MIN_SEG_DIST || dr > end - MIN_SEG_DIST {
                continue;
            }
            last_r = dr;
            let (ly, ry) = (mean(&data[..li]), mean(&data[ri..]));
            consider(Lines::new(vec![
                Pt { x: start, y: ly },
                Pt { x: dl, y: ly },
                Pt { x: dr, y: ry },
                Pt { x: end, y: ry },
            ]));
        }
    }
    let error = error_of(&data, &best);
    Some(Fit {
        data,
        lines: best,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(f: impl Fn(f64) -> f64) -> Vec<Pt> {
        (1..=25)
            .map(|i| {
                let x = i as f64 * 5.0;
                Pt { x, y: f(x) }
            })
            .collect()
    }

    #[test]
    fn a_floor_then_a_slope_is_found_with_its_knee() {
        // flat at 2 up to 60, then rising: the knee is between 60 and 65
        let f = fit(
            &pts(|x| {
                if x <= 60.0 {
                    2.0
                } else {
                    2.0 + (x - 60.0) * 0.1
                }
            }),
            Shape::Inc,
        )
        .unwrap();
        assert_eq!(f.lines.points.len(), 3, "{:?}", f.lines);
        let knee = find_vrate(&f.lines, (1.0, 100.0), End::Max, End::Min, 0.0, None).unwrap();
        assert!((60.0..=65.0).contains(&knee), "{knee}");
        assert_eq!(f.lines.eval(30.0), 2.0);
        assert!(f.error < 0.05, "{}", f.error);
    }

    #[test]
    fn a_plateau_is_flat_and_shapes_are_kept() {
        // rising then flat: the smallest vrate at the maximum is the plateau's start
        let f = fit(&pts(|x| x.min(70.0)), Shape::Inc).unwrap();
        let at = find_vrate(&f.lines, (1.0, 125.0), End::Min, End::Max, 0.0, None).unwrap();
        assert!((65.0..=75.0).contains(&at), "{at} {:?}", f.lines);
        // a falling figure fitted as never rising
        let f = fit(&pts(|x| 1.0 - x / 200.0), Shape::Dec).unwrap();
        assert!(f.lines.shaped(Shape::Dec));
        assert!((f.lines.eval(100.0) - 0.5).abs() < 1e-9);
        // flat data: the range's right end, or what the caller asks for
        let f = fit(&pts(|_| 1.0), Shape::Dec).unwrap();
        assert_eq!(
            find_vrate(&f.lines, (1.0, 100.0), End::Max, End::Min, 0.0, None),
            Some(100.0)
        );
        assert_eq!(
            find_vrate(&f.lines, (1.0, 100.0), End::Min, End::Max, 0.0, Some(40.0)),
            Some(40.0)
        );
    }

    #[test]
    fn ranges_narrow_and_stretch() {
        let l = Lines::new(vec![Pt { x: 0.0, y: 0.0 }, Pt { x: 10.0, y: 10.0 }]).unwrap();
        let c = l.clamped((2.0, 50.0)).unwrap();
        assert_eq!(c.range, (2.0, 10.0));
        assert_eq!(c.points[0].y, 2.0);
        assert!(l.clamped((20.0, 30.0)).is_none());
        let w = l.with_range((0.0, 20.0));
        assert_eq!(w.eval(20.0), 20.0);
        // a margin moves off the slope's tip towards the flat side
        let k = Lines::new(vec![
            Pt { x: 10.0, y: 1.0 },
            Pt { x: 50.0, y: 1.0 },
            Pt { x: 100.0, y: 3.0 },
        ])
        .unwrap();
        assert_eq!(k.x_with_margin(1, 0.1), 45.0);
    }
}
