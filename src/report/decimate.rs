//! A time series kept for a picture in bounded memory, whatever the run's length.
//!
//! Design
//! ------
//! A picture is a few hundred pixels wide, so a day of 16 ms iocost periods (5.4 M
//! values) cannot all be drawn, nor should they be kept. [`Decimated`] keeps at most
//! [`COLUMNS`] columns of equal width in time; each column remembers the minimum and
//! the maximum of the values that fell in it, so a spike one period long still shows
//! as a full-height line. The column width starts at the first value's resolution
//! and doubles — merging neighbours in place, min with min and max with max — whenever
//! a value lands past the last column, the way `sim::timebins` keeps job timelines.
//! The columns are allocated once, at the first value, to their cap, so a series never
//! reallocates. The points drawn are each column's minimum and maximum at its start
//! time, so a flat series draws as a line and a noisy one as a band.
//!
//! A panel draws one line per cgroup, and a legend of thousands of lines shows
//! nothing: [`Lines`] keeps the series of at most [`MAX_LINES`] keys, the lowest ones
//! (the legend's order), so the series of 100,000 cgroups cost what 32 do. A key past
//! the cap is refused, or evicts the highest kept one if it is lower; either way
//! [`Lines::dropped`] tells the picture to say that it shows only the first ones.

use std::collections::BTreeMap;

use crate::sim::Ns;

/// Columns kept per series: enough for a picture 1,000 pixels wide at two points each.
pub const COLUMNS: usize = 1024;

/// Series kept per panel (one per cgroup): more lines than this are a blur of ten
/// colours under a legend taller than the panel.
pub const MAX_LINES: usize = 32;

/// One column's extremes; an empty column has a NaN `min` (values are never NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Column {
    min: f64,
    max: f64,
}

impl Column {
    const EMPTY: Column = Column {
        min: f64::NAN,
        max: f64::NAN,
    };

    fn is_empty(&self) -> bool {
        self.min.is_nan()
    }

    /// Widen to take in `o` (empty columns take nothing in).
    fn merge(&mut self, o: Column) {
        if self.is_empty() {
            *self = o;
        } else if !o.is_empty() {
            self.min = self.min.min(o.min);
            self.max = self.max.max(o.max);
        }
    }
}

/// One series, decimated to min/max per column.
#[derive(Debug, Clone)]
pub struct Decimated {
    /// Column width in ns (a power of two times the first width).
    width: Ns,
    cols: Vec<Column>,
}

impl PartialEq for Decimated {
    /// The same points (empty columns compare equal, whatever NaN does).
    fn eq(&self, o: &Self) -> bool {
        self.width == o.width && self.points() == o.points()
    }
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
            if self.cols.capacity() == 0 {
                self.cols.reserve_exact(COLUMNS);
            }
            self.cols.resize(i + 1, Column::EMPTY);
        }
        self.cols[i].merge(Column { min: v, max: v });
    }

    /// Double the column width, merging neighbours in place.
    fn halve(&mut self) {
        let n = self.cols.len().div_ceil(2);
        for k in 0..n {
            let mut c = self.cols[2 * k];
            if let Some(&o) = self.cols.get(2 * k + 1) {
                c.merge(o);
            }
            self.cols[k] = c;
        }
        self.cols.truncate(n);
        self.width *= 2;
    }

    /// Points to draw, `(seconds, value)`: each column's min and max at its start.
    pub fn points(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::with_capacity(self.cols.len() * 2);
        for (i, c) in self.cols.iter().enumerate() {
            if c.is_empty() {
                continue;
            }
            let t = (i as u64 * self.width) as f64 / 1e9;
            out.push((t, c.min));
            if c.max != c.min {
                out.push((t, c.max));
            }
        }
        out
    }
}

/// One panel's series by key (cgroup), at most [`MAX_LINES`] of them: the lowest keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines<K> {
    series: BTreeMap<K, Decimated>,
    dropped: bool,
}

impl<K> Default for Lines<K> {
    fn default() -> Self {
        Lines {
            series: BTreeMap::new(),
            dropped: false,
        }
    }
}

impl<K: Ord + Copy> Lines<K> {
    /// Add `v` at `t` to `key`'s series, if `key` is among the lowest [`MAX_LINES`]
    /// seen so far (a series evicted or refused never returns: [`MAX_LINES`] lower
    /// keys stay).
    pub fn add(&mut self, key: K, t: Ns, v: f64) {
        if !self.series.contains_key(&key) && self.series.len() == MAX_LINES {
            self.dropped = true;
            match self.series.last_key_value() {
                Some((&last, _)) if key < last => {
                    self.series.pop_last();
                }
                _ => return,
            }
        }
        self.series.entry(key).or_default().add(t, v);
    }

    /// The kept series in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &Decimated)> {
        self.series.iter()
    }

    /// Whether no series was kept.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Whether some key's series was not kept.
    pub fn dropped(&self) -> bool {
        self.dropped
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

    #[test]
    fn halving_keeps_every_extreme() {
        // more columns than the cap: halves once, pairs merge min with min, max with max
        let mut d = Decimated::new(10);
        for k in 0..(COLUMNS as u64 + 1) {
            d.add(k * 10, if k % 2 == 0 { k as f64 } else { -(k as f64) });
        }
        let p = d.points();
        assert_eq!(p[0], (0.0, -1.0));
        assert_eq!(p[1], (0.0, 0.0));
        assert_eq!(
            p.last(),
            Some(&((COLUMNS as u64 * 10) as f64 / 1e9, COLUMNS as f64))
        );
        assert!(d.cols.capacity() <= COLUMNS, "allocated once, to the cap");
    }

    #[test]
    fn lines_keep_the_lowest_keys() {
        let mut l = Lines::default();
        // keys arrive from the highest down: each new one evicts the highest kept
        for k in (0..2 * MAX_LINES as u32).rev() {
            l.add(k, 0, f64::from(k));
        }
        l.add(1000, 0, 1.0);
        let keys: Vec<u32> = l.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, (0..MAX_LINES as u32).collect::<Vec<_>>());
        assert!(l.dropped());
        let mut few = Lines::default();
        few.add(3u32, 0, 1.0);
        few.add(3, 1_000_000, 2.0);
        assert!(!few.dropped());
        assert_eq!(few.iter().next().unwrap().1.points().len(), 2);
    }
}
