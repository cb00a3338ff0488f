//! A time series kept for a picture in bounded memory, whatever the run's length.
//!
//! Design
//! ------
//! A picture is a few hundred pixels wide, so a day of 16 ms iocost periods (5.4 M
//! values) cannot all be drawn, nor should they be kept. [`Decimated`] keeps at most
//! [`COLUMNS`] columns of equal width in time; each column remembers the minimum and
//! the maximum of the values that fell in it, so a spike one period long still shows
//! as a full-height line. The column width starts at the first value's resolution
//! and doubles — merging neighbours, min with min and max with max — whenever a value
//! lands past the last column, the way `sim::timebins` keeps job timelines. The
//! points drawn are each column's minimum and maximum at its start time, so a flat
//! series draws as a line and a noisy one as a band.

use crate::sim::Ns;

/// Columns kept per series: enough for a picture 1,000 pixels wide at two points each.
pub const COLUMNS: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Column {
    min: f64,
    max: f64,
}

/// One series, decimated to min/max per column.
#[derive(Debug, Clone, PartialEq)]
pub struct Decimated {
    /// Column width in ns (a power of two times the first width).
    width: Ns,
    cols: Vec<Option<Column>>,
}

impl Default for Decimated {
    /// Values at most a millisecond apart to start with.
    fn default() -> Self {
        Self::new(crate::sim::NSEC_PER_MSEC)
    }
}

impl Decimated {
    /// A series whose values arrive at least `resolution` ns apart (its first width).
    pub fn new(resolution: Ns) -> Self {
        Decimated {
            width: resolution.max(1),
            cols: Vec::new(),
        }
    }

    /// The value `v` at time `t` (times need not be distinct, values need not be
    /// finite: NaN is skipped).
    pub fn add(&mut self, t: Ns, v: f64) {
        if v.is_nan() {
            return;
        }
        let mut i = (t / self.width) as usize;
        while i >= COLUMNS {
            self.halve();
            i = (t / self.width) as usize;
        }
        if self.cols.len() <= i {
            self.cols.resize(i + 1, None);
        }
        let c = self.cols[i].get_or_insert(Column { min: v, max: v });
        c.min = c.min.min(v);
        c.max = c.max.max(v);
    }

    /// Double the column width, merging neighbours.
    fn halve(&mut self) {
        let merged = self
            .cols
            .chunks(2)
            .map(|pair| {
                pair.iter().flatten().fold(None, |acc: Option<Column>, c| {
                    Some(match acc {
                        None => *c,
                        Some(a) => Column {
                            min: a.min.min(c.min),
                            max: a.max.max(c.max),
                        },
                    })
                })
            })
            .collect();
        self.cols = merged;
        self.width *= 2;
    }

    /// Points to draw, `(seconds, value)`: each column's min and max at its start.
    pub fn points(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::with_capacity(self.cols.len() * 2);
        for (i, c) in self.cols.iter().enumerate() {
            let Some(c) = c else { continue };
            let t = (i as u64 * self.width) as f64 / 1e9;
            out.push((t, c.min));
            if c.max != c.min {
                out.push((t, c.max));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_kept_whole() {
        let mut d = Decimated::new(1_000_000_000);
        for s in 0..10 {
            d.add(s * 1_000_000_000, s as f64);
        }
        let p = d.points();
        assert_eq!(p.len(), 10);
        assert_eq!(p[3], (3.0, 3.0));
    }

    #[test]
    fn a_day_of_periods_stays_small_and_keeps_its_spike() {
        let period = 16_000_000;
        let mut d = Decimated::new(period);
        let n = 86_400_000_000_000 / period;
        for k in 0..n {
            // flat at 100, one period-long spike to 500 at noon
            let v = if k == n / 2 { 500.0 } else { 100.0 };
            d.add(k * period, v);
        }
        let p = d.points();
        assert!(p.len() <= 2 * COLUMNS, "{}", p.len());
        assert!(p.iter().any(|&(_, v)| v == 500.0), "the spike is kept");
        assert!(p.iter().all(|&(t, _)| (0.0..=86_400.0).contains(&t)));
    }
}
