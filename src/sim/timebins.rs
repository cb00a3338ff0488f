//! A job's completions over time, in bounded memory: what the per-cgroup IOPS and
//! latency pictures and `jobs.csv` are drawn from.
//!
//! Completions fall into fixed-width time bins (count and summed latency). The width
//! starts at [`START_WIDTH`]; once [`MAX_BINS`] bins are in use, neighbours merge pairwise
//! and the width doubles, so a run of any length keeps at most `MAX_BINS` bins per job
//! and a 10 s run keeps 100 ms resolution. Bins are aligned to absolute simulated time,
//! so jobs of one run line up.

use crate::sim::{NSEC_PER_MSEC, Ns};

/// Initial bin width.
pub const START_WIDTH: Ns = 100 * NSEC_PER_MSEC;
/// Bins kept per job before merging.
pub const MAX_BINS: usize = 2048;

/// One time bin: completions and the sum of their latencies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bin {
    pub ios: u64,
    pub lat_sum_ns: u64,
}

/// Completions per time bin, from the first bin that saw one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeBins {
    /// The width is `START_WIDTH << shift`: a bin index is `t / START_WIDTH >> shift`,
    /// a division by a constant (a multiply) instead of by a variable.
    shift: u32,
    /// Index (time / width) of `bins[0]`.
    first: u64,
    bins: Vec<Bin>,
}

impl TimeBins {
    /// One completion at `t` whose latency was `lat`.
    pub fn add(&mut self, t: Ns, lat: Ns) {
        let at = t / START_WIDTH;
        if self.bins.is_empty() {
            self.first = at >> self.shift;
        }
        let mut idx = ((at >> self.shift) - self.first) as usize;
        while idx >= MAX_BINS {
            self.coarsen();
            idx = ((at >> self.shift) - self.first) as usize;
        }
        if idx >= self.bins.len() {
            self.bins.resize(idx + 1, Bin::default());
        }
        let b = &mut self.bins[idx];
        b.ios += 1;
        b.lat_sum_ns = b.lat_sum_ns.saturating_add(lat);
    }

    /// Merge neighbours: twice the width, half the bins.
    fn coarsen(&mut self) {
        let shift = (self.first % 2) as usize;
        let mut merged = vec![Bin::default(); (self.bins.len() + shift).div_ceil(2)];
        for (i, b) in self.bins.iter().enumerate() {
            let m = &mut merged[(i + shift) / 2];
            m.ios += b.ios;
            m.lat_sum_ns = m.lat_sum_ns.saturating_add(b.lat_sum_ns);
        }
        self.bins = merged;
        self.first /= 2;
        self.shift += 1;
    }

    pub fn width(&self) -> Ns {
        START_WIDTH << self.shift
    }

    /// (bin start, bin) for every bin from the first completion to the last.
    pub fn iter(&self) -> impl Iterator<Item = (Ns, Bin)> + '_ {
        self.bins
            .iter()
            .enumerate()
            .map(|(i, b)| ((self.first + i as u64) * self.width(), *b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_count_and_sum_latency() {
        let mut tb = TimeBins::default();
        tb.add(150 * NSEC_PER_MSEC, 2_000_000);
        tb.add(199 * NSEC_PER_MSEC, 4_000_000);
        tb.add(420 * NSEC_PER_MSEC, 1_000_000);
        let v: Vec<_> = tb.iter().collect();
        assert_eq!(v.len(), 4, "bins 100..500 ms");
        assert_eq!(v[0].0, 100 * NSEC_PER_MSEC);
        assert_eq!(
            v[0].1,
            Bin {
                ios: 2,
                lat_sum_ns: 6_000_000
            }
        );
        assert_eq!(v[1].1.ios, 0);
        assert_eq!(
            v[3].1,
            Bin {
                ios: 1,
                lat_sum_ns: 1_000_000
            }
        );
    }

    #[test]
    fn long_runs_stay_bounded_and_keep_every_io() {
        let mut tb = TimeBins::default();
        // one IO every 10 ms for 10 hours, starting at an odd bin
        let n = 3_600_000u64;
        for i in 0..n {
            tb.add(130 * NSEC_PER_MSEC + i * 10 * NSEC_PER_MSEC, 1000);
        }
        let bins: Vec<_> = tb.iter().collect();
        assert!(bins.len() <= MAX_BINS, "{} bins", bins.len());
        assert!(tb.width() > START_WIDTH);
        assert_eq!(bins.iter().map(|b| b.1.ios).sum::<u64>(), n);
        assert_eq!(bins.iter().map(|b| b.1.lat_sum_ns).sum::<u64>(), n * 1000);
        // each bin starts where the last ended
        for w in bins.windows(2) {
            assert_eq!(w[1].0 - w[0].0, tb.width());
        }
    }
}
