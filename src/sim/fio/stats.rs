//! fio's statistics, collected as fio collects them (stat.c, stat.h, io_u.c).
//!
//! Design
//! ------
//! The idea: what fio reports is made per I/O, so it is recorded where the I/O is
//! reaped: the job machine (`crate::sim::fio`) updates these in O(1) per I/O, in the
//! cache lines its job record (`JobRt`) lays out for them; the report side
//! (`crate::report::fio`: text and JSON, group_reporting; the summary; `tune
//! protect`) only reads and formats them.
//!
//! Moving parts:
//! - [`LatHist`]: the 1,856-bucket latency histogram (`FIO_IO_U_PLAT_BITS = 6`):
//!   values below 128 ns are exact, above that each power of two is cut into 64
//!   buckets, so the relative error is below 1/128 (`plat_val_to_idx()`,
//!   `plat_idx_to_val()`); its groups of 64 buckets are allocated on first use,
//!   packed in one slice that a presence mask beside it indexes, and a run of samples
//!   in one bucket is counted beside the mask before it reaches the bucket.
//! - [`percentiles`]: `calc_clat_percentiles()`, including the x86 `long double`
//!   threshold `(long double)p / 100.0 * N`, emulated exactly with integer arithmetic
//!   (64-bit mantissa, round-half-even) so percentiles are byte-identical to x86 fio.
//! - [`LatStat`]: min/max/mean/stddev by Welford's running sums (`add_stat_sample()`,
//!   `calc_lat()`), plus the histogram: 64 bytes, one cache line where [`DdirStats`]
//!   and the job machine's record place it (with thousands of jobs, what a sample
//!   costs is the lines it touches).
//! - [`SampleStat`]: the bw/iops log statistics (`__add_samples()`), one sample per
//!   `bwavgtime`/`iopsavgtime` window.
//! - [`JobStats`]: a job's per-direction counters, the I/O depth maps
//!   (`io_u_mark_depth/submit/complete()`) and the latency distribution buckets
//!   (`io_u_mark_lat_nsec/usec/msec()`), fed by the job machine in O(1) per I/O.

use crate::sim::Dir;
use crate::sim::prefetch::prefetch;

pub const PLAT_BITS: u32 = 6;
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
pub const PLAT_GROUP_NR: usize = 29;
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// mirrors plat_val_to_idx()
pub fn val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits as usize + 1) << PLAT_BITS;
    let offset = ((val >> error_bits) & (PLAT_VAL - 1)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// mirrors plat_idx_to_val(): the bucket's representative value (its middle).
pub fn idx_to_val(idx: usize) -> u64 {
    if idx < (PLAT_VAL << 1) as usize {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx % PLAT_VAL as usize) as f64;
    (base as f64 + (k + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// fio's latency histogram, kept sparse: only the groups of 64 buckets (one power of
/// two above 128 ns each) that a sample fell in are allocated, side by side in one
/// slice in ascending order, and a bit mask held in the statistic itself says which
/// they are (a group's place is the number of present groups below it). An unused
/// histogram costs 24 bytes instead of 14.8 KB; adding a sample reads the mask next to
/// the statistic's min/max and touches only its bucket's cache line, with no table in
/// between; the counts — hence every percentile — are fio's.
///
/// Successive samples in the same bucket (a job whose clat is the device's fixed
/// latency puts every sample in one) are counted in the statistic's own line first
/// (`run_idx`, `run_n`, in what was padding) and reach their bucket when a sample
/// falls elsewhere: with thousands of jobs the bucket's line is cold, the run's is not.
/// Every reader sees the run added to its bucket.
///
/// fio fills the slat and lat histograms only for `slat_percentiles` and
/// `lat_percentiles` (`add_slat_sample()`, `add_lat_sample()`); a histogram made with
/// [`LatHist::not_kept`] likewise takes no samples, and a sample costs no line of it.
#[derive(Clone, Default)]
pub struct LatHist {
    /// Bit `g` set: group `g` (buckets `g * 64 ..`) is in `groups`; [`NOT_KEPT`]: no
    /// sample is added.
    present: u32,
    /// The bucket of the latest samples, and how many of them are not yet in it
    /// (its group is present whenever `run_n > 0`).
    run_idx: u16,
    run_n: u16,
    /// The present groups' buckets, lowest group first.
    groups: Box<[u64]>,
}

impl PartialEq for LatHist {
    fn eq(&self, o: &LatHist) -> bool {
        self.counts().eq(o.counts())
    }
}

impl Eq for LatHist {}

impl std::fmt::Debug for LatHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatHist(n={})", self.total())
    }
}

/// The presence mask's bit of a histogram that takes no samples (above the groups').
const NOT_KEPT: u32 = 1 << 31;
const _: () = assert!(PLAT_GROUP_NR < 31);

impl LatHist {
    /// A histogram that takes no samples: fio's slat or lat histogram without its
    /// `*_percentiles` option.
    pub fn not_kept() -> LatHist {
        LatHist {
            present: NOT_KEPT,
            ..LatHist::default()
        }
    }
    #[inline]
    pub fn add(&mut self, ns: u64) {
        if self.present & NOT_KEPT != 0 {
            return;
        }
        // val_to_idx() < PLAT_NR (1,856) fits in u16
        let idx = val_to_idx(ns) as u16;
        if idx == self.run_idx && self.run_n > 0 && self.run_n < u16::MAX {
            self.run_n += 1;
            return;
        }
        self.settle();
        let bit = 1u32 << (idx >> PLAT_BITS);
        if self.present & bit == 0 {
            self.insert_group(bit);
        }
        self.run_idx = idx;
        self.run_n = 1;
    }
    /// The run's samples into their bucket.
    #[inline]
    fn settle(&mut self) {
        let n = std::mem::take(&mut self.run_n);
        self.add_count(self.run_idx as usize, u64::from(n));
    }
    #[inline]
    pub fn add_count(&mut self, idx: usize, n: u64) {
        if n == 0 {
            return;
        }
        let idx = idx.min(PLAT_NR - 1);
        let bit = 1u32 << (idx >> PLAT_BITS);
        if self.present & bit == 0 {
            self.insert_group(bit);
        }
        let slot = (self.present & (bit - 1)).count_ones() as usize;
        self.groups[(slot << PLAT_BITS) | (idx & (PLAT_VAL as usize - 1))] += n;
    }
    /// Makes room for the group of mask bit `bit` (zeroed) at its place in order.
    #[cold]
    fn insert_group(&mut self, bit: u32) {
        let at = ((self.present & (bit - 1)).count_ones() as usize) << PLAT_BITS;
        let mut groups = Vec::with_capacity(self.groups.len() + PLAT_VAL as usize);
        groups.extend_from_slice(&self.groups[..at]);
        groups.resize(at + PLAT_VAL as usize, 0);
        groups.extend_from_slice(&self.groups[at..]);
        self.groups = groups.into_boxed_slice();
        self.present |= bit;
    }
    pub fn merge(&mut self, o: &LatHist) {
        for (i, c) in o.counts() {
            self.add_count(i, c);
        }
    }
    pub fn total(&self) -> u64 {
        self.counts().map(|(_, c)| c).sum()
    }
    /// Non-empty buckets as (index, count), ascending.
    pub fn counts(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (run_idx, run_n) = (self.run_idx as usize, u64::from(self.run_n));
        (0..PLAT_GROUP_NR)
            .filter(|g| self.present >> g & 1 == 1)
            .zip(self.groups.chunks_exact(PLAT_VAL as usize))
            .flat_map(move |(g, group)| {
                group.iter().enumerate().filter_map(move |(k, c)| {
                    let idx = (g << PLAT_BITS) + k;
                    let c = *c + if idx == run_idx { run_n } else { 0 };
                    (c > 0).then_some((idx, c))
                })
            })
    }
    /// Non-empty buckets as (representative ns, count), ascending (json+ "bins").
    pub fn bins(&self) -> Vec<(u64, u64)> {
        self.counts().map(|(i, c)| (idx_to_val(i), c)).collect()
    }
}

/// The smallest integer count `c` with `c >= (long double)p / 100.0 * n`, as x86's
/// 80-bit long double (64-bit mantissa, round to nearest even) computes it.
pub fn x87_threshold(p: f64, n: u64) -> u64 {
    if p <= 0.0 || n == 0 {
        return 0;
    }
    // p = m * 2^e exactly
    let bits = p.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    // q = RN64(m * 2^e / 100): scale so the quotient has 64 significant bits, the
    // smallest s with (m << s) / 100 >= 2^63, i.e. m << s >= 100 * 2^63 (a 70-bit
    // number): one or two steps from 69 - bits(m)
    let mut s = (69 - (64 - m.leading_zeros()) as i32).max(0);
    while ((m as u128) << s) < (100u128 << 63) {
        s += 1;
    }
    let num = (m as u128) << s;
    let (mut q, r) = (num / 100, num % 100);
    if 2 * r > 100 || (2 * r == 100 && q & 1 == 1) {
        q += 1;
    }
    let mut qe = e - s;
    if q == 1u128 << 64 {
        q >>= 1;
        qe += 1;
    }
    // x = RN64(q * n)
    let prod = q * n as u128;
    let len = 128 - prod.leading_zeros() as i32;
    let (mut k, mut ke) = (prod, qe);
    if len > 64 {
        let sh = (len - 64) as u32;
        let kept = prod >> sh;
        let rem = prod & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        k = kept + u128::from(rem > half || (rem == half && kept & 1 == 1));
        ke += sh as i32;
    }
    // ceil(k * 2^ke)
    if ke >= 0 {
        (k << ke as u32).min(u64::MAX as u128) as u64
    } else {
        let sh = (-ke) as u32;
        if sh >= 128 {
            return 1;
        }
        let whole = k >> sh;
        let frac = k & ((1u128 << sh) - 1);
        (whole + u128::from(frac != 0)) as u64
    }
}

/// mirrors calc_clat_percentiles(): `plist` sorted ascending; one value per entry.
pub fn percentiles(hist: &LatHist, plist: &[f64]) -> Vec<u64> {
    let n = hist.total();
    let mut out = vec![0u64; plist.len()];
    if n == 0 || plist.is_empty() {
        return out;
    }
    let thresholds: Vec<u64> = plist.iter().map(|&p| x87_threshold(p, n)).collect();
    // a threshold of 0 is met by the first bucket, empty or not
    let mut j = thresholds.iter().take_while(|&&t| t == 0).count();
    let mut sum = 0u64;
    for (i, c) in hist.counts() {
        sum += c;
        while j < plist.len() && sum >= thresholds[j] {
            out[j] = idx_to_val(i);
            j += 1;
        }
        if j == plist.len() {
            break;
        }
    }
    out
}

/// One step of Welford's running mean and sum of squared deviations (add_stat_sample()).
#[inline]
fn welford_add(n: &mut u64, mean: &mut f64, s: &mut f64, x: f64) {
    let delta = x - *mean;
    *n += 1;
    // A sample equal to the mean adds +0.0 to both sums, which leaves them bit for bit
    // as they are (neither is ever -0.0: they start at +0.0 and the samples are >= 0),
    // so the division can be skipped; this is common (slat is constant when
    // submission never waits).
    if delta == 0.0 {
        return;
    }
    *mean += delta / *n as f64;
    *s += delta * (x - *mean);
}

/// Sample standard deviation from Welford's sums; 0 for n <= 1 (calc_lat()).
fn sample_stddev(n: u64, s: f64) -> f64 {
    if n <= 1 {
        0.0
    } else {
        (s / (n - 1) as f64).sqrt()
    }
}

/// A latency statistic: min, max, Welford mean/variance and the histogram. 64 bytes
/// exactly, so that one placed on a cache line boundary (as [`DdirStats`] places
/// them) is one line: a sample reads and writes this line and its bucket's. (Not
/// `align(64)`: vectors of reports holding it would then grow by copying.)
#[derive(Debug, Clone, Default, PartialEq)]
#[repr(C)]
pub struct LatStat {
    pub min: u64,
    pub max: u64,
    pub n: u64,
    pub mean: f64,
    /// Σ (x - mean)^2 (fio's `S`).
    pub s: f64,
    pub hist: LatHist,
}

const _: () = assert!(std::mem::size_of::<LatStat>() == 64);

impl LatStat {
    /// mirrors add_stat_sample()
    #[inline]
    pub fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
        welford_add(&mut self.n, &mut self.mean, &mut self.s, v as f64);
        self.hist.add(v);
    }

    /// Sample standard deviation, 0 for n <= 1 (calc_lat()).
    pub fn stddev(&self) -> f64 {
        sample_stddev(self.n, self.s)
    }

    /// mirrors sum_stat(): the parallel mean/variance merge.
    pub fn merge(&mut self, o: &LatStat) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = o.clone();
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        let n1 = self.n as f64;
        let n2 = o.n as f64;
        let delta = o.mean - self.mean;
        let mean = self.mean + delta * n2 / (n1 + n2);
        self.s += o.s + delta * delta * n1 * n2 / (n1 + n2);
        self.mean = mean;
        self.n += o.n;
        self.hist.merge(&o.hist);
    }
}

/// bw/iops log samples: min/max/mean/stddev over the windows (pure sums on merge).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleStat {
    pub min: u64,
    pub max: u64,
    pub n: u64,
    pub mean: f64,
    pub s: f64,
}

impl SampleStat {
    pub fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        welford_add(&mut self.n, &mut self.mean, &mut self.s, v as f64);
    }
    pub fn stddev(&self) -> f64 {
        sample_stddev(self.n, self.s)
    }
    /// group_reporting adds the sample statistics of the jobs (sum_stat with
    /// first = false for the bw/iops logs is a plain sum in fio).
    pub fn merge_sum(&mut self, o: &SampleStat) {
        self.min += o.min;
        self.max += o.max;
        self.mean += o.mean;
        self.s += o.s;
        self.n = self.n.max(o.n);
    }
}

/// One direction's counters: the three latency statistics a line each, then the
/// counters each completion adds to, on one more line; five lines in all, so that in
/// a [`JobStats`] that starts on a line every direction's statistics do too.
#[derive(Debug, Clone, Default, PartialEq)]
#[repr(C)]
pub struct DdirStats {
    pub slat: LatStat,
    pub clat: LatStat,
    pub lat: LatStat,
    pub io_bytes: u64,
    /// I/Os that completed without error (fio's `io_blocks`).
    pub total_ios: u64,
    /// I/Os that ended in an error: fio counts them as issued (`total_io_u`) but
    /// records no bytes and no latency for them.
    pub errors: u64,
    pub bw: SampleStat,
    pub iops: SampleStat,
    /// Bytes/ios at the last sample, for the window rate.
    last_bytes: u64,
    last_ios: u64,
    /// To five cache lines.
    _pad: u64,
}

const _: () = assert!(std::mem::size_of::<DdirStats>() == 5 * 64);

impl DdirStats {
    /// fio's `total_io_u`: every I/O issued, failed ones included (IOPS, `total_ios`,
    /// `issued rwts`, the latency distribution's denominator).
    pub fn issued(&self) -> u64 {
        self.total_ios + self.errors
    }
}

/// fio's error accounting of one job (`td->error`, `td->verror`, `total_err_count`,
/// `first_error`) and the error lines it logged, with the time they were printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorStats {
    /// `td->error`: the errno that stopped the job (0: none).
    pub error: i32,
    /// `td->verror`: `file:io_u.c:1876, func=io_u error, error=Input/output error`.
    pub verror: String,
    /// `total_err_count` and `first_error`: errors `continue_on_error` let pass.
    pub total_err: u64,
    pub first_error: i32,
    /// The job set `continue_on_error` (fio then prints `total_err`/`first_error`).
    pub coe: bool,
    /// `fio: io_u error on file ...` lines (fio writes them to stderr as they happen).
    pub log: Vec<(u64, String)>,
}

impl ErrorStats {
    /// The error fio reports for the job (`__show_run_stats()`): the one that stopped
    /// it, else with `continue_on_error` the first one let pass; and `verror`.
    pub fn shown(&self) -> (i32, &str) {
        if self.error != 0 || (self.coe && self.first_error != 0) {
            let e = if self.error != 0 {
                self.error
            } else {
                self.first_error
            };
            (e, &self.verror)
        } else {
            (0, "")
        }
    }
}

/// Latency distribution buckets (io_u_mark_lat_*): ns, µs and ms tables.
pub const LAT_N_KEYS: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];
pub const LAT_M_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

fn lat_bucket(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        750..=999 => 9,
        1000..=1999 => 10,
        _ => 11,
    }
}

/// mirrors the io_u_map/io_u_submit/io_u_complete bucket choice
fn depth_idx(d: u32) -> usize {
    match d {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

fn batch_idx(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// Everything fio reports about one job. Laid out for the pipeline, which updates
/// some of it on every I/O (`repr(C)`): each direction's statistics (a line per
/// latency statistic, one for the counters), then the submit/complete totals next to
/// the depth maps, then the latency distribution.
#[derive(Debug, Clone, Default, PartialEq)]
#[repr(C)]
pub struct JobStats {
    /// read, write, trim
    pub dd: [DdirStats; 3],
    pub total_submit: u64,
    pub total_complete: u64,
    pub io_u_map: [u64; 7],
    pub io_u_submit: [u64; 7],
    pub io_u_complete: [u64; 7],
    pub lat_n: [u64; 10],
    pub lat_u: [u64; 10],
    pub lat_m: [u64; 12],
    pub ctx: u64,
    pub minf: u64,
    pub err: ErrorStats,
    /// fio's `sync_stat`: each `fsync=`/`fdatasync=` sync's latency (not `end_fsync`'s).
    pub sync: LatStat,
    /// blkcg-sim's own, not fio's: a replaying job's lateness, each I/O's issue
    /// against its time in the log (`crate::sim::fio::replay`).
    pub lateness: LatStat,
}

impl JobStats {
    /// A job's statistics before its first I/O: the slat and lat histograms are kept
    /// only when the job prints their percentiles, as fio keeps them (the clat one
    /// always: the summary's percentiles are read from it).
    pub fn new(slat_percentiles: bool, lat_percentiles: bool) -> JobStats {
        let mut s = JobStats::default();
        for d in &mut s.dd {
            if !slat_percentiles {
                d.slat.hist = LatHist::not_kept();
            }
            if !lat_percentiles {
                d.lat.hist = LatHist::not_kept();
            }
        }
        s
    }

    #[inline]
    pub fn add_slat(&mut self, d: Dir, ns: u64) {
        self.dd[d.idx()].slat.add(ns);
    }

    /// clat also feeds the latency distribution (io_u_mark_latency()).
    #[inline]
    pub fn add_clat(&mut self, d: Dir, ns: u64) {
        self.dd[d.idx()].clat.add(ns);
        if ns < 1000 {
            self.lat_n[lat_bucket(ns)] += 1;
        } else if ns < 1_000_000 {
            self.lat_u[lat_bucket(ns / 1000)] += 1;
        } else {
            self.lat_m[lat_bucket(ns / 1_000_000)] += 1;
        }
    }

    #[inline]
    pub fn add_lat(&mut self, d: Dir, ns: u64) {
        self.dd[d.idx()].lat.add(ns);
    }

    /// One completed I/O of `bytes`.
    #[inline]
    pub fn add_io(&mut self, d: Dir, bytes: u64) {
        let s = &mut self.dd[d.idx()];
        s.io_bytes += bytes;
        s.total_ios += 1;
    }

    /// One sync's latency (`add_sync_clat_sample()`).
    pub fn add_sync(&mut self, ns: u64) {
        self.sync.add(ns);
    }

    /// One I/O that ended in an error (issued, but no bytes or latency recorded).
    pub fn add_error(&mut self, d: Dir) {
        self.dd[d.idx()].errors += 1;
    }

    /// io_u_mark_depth(): the queue depth right after a submit.
    #[inline]
    pub fn mark_depth(&mut self, depth: u32) {
        self.io_u_map[depth_idx(depth)] += 1;
    }

    /// Hints the lines a submission's counters update (`mark_submit`, `mark_depth`).
    #[inline]
    pub fn prefetch_submit(&self) {
        prefetch(&self.total_submit);
        prefetch(&self.io_u_submit);
    }

    /// io_u_mark_submit(): one submit call of `n` I/Os.
    #[inline]
    pub fn mark_submit(&mut self, n: u32) {
        self.io_u_submit[batch_idx(n)] += 1;
        self.total_submit += 1;
    }

    /// io_u_mark_complete(): one reap of `n` I/Os.
    #[inline]
    pub fn mark_complete(&mut self, n: u32) {
        self.io_u_complete[batch_idx(n)] += 1;
        self.total_complete += 1;
    }

    /// Hints the cache lines that reaping one I/O of direction `d` updates (clat,
    /// lat, the counters, the completion map, the latency distribution) and the next
    /// submission's slat, for a reap that is about to come.
    #[inline]
    pub fn prefetch_reap(&self, d: Dir) {
        let s = &self.dd[d.idx()];
        prefetch(&s.slat);
        prefetch(&s.clat);
        prefetch(&s.lat);
        prefetch(&s.io_bytes);
        prefetch(&self.io_u_complete);
        prefetch(&self.lat_u);
    }

    /// A bw/iops log window ended after `window_ms` ms (__add_samples()).
    pub fn sample(&mut self, window_ms: u64) {
        let w = window_ms.max(1);
        for s in self.dd.iter_mut().take(2) {
            let db = s.io_bytes - s.last_bytes;
            let di = s.total_ios - s.last_ios;
            s.last_bytes = s.io_bytes;
            s.last_ios = s.total_ios;
            s.bw.add(db * 1000 / w / 1024);
            s.iops.add(di * 1000 / w);
        }
    }

    /// group_reporting: fold another job in (sum_thread_stats()).
    pub fn merge(&mut self, o: &JobStats) {
        for (a, b) in self.dd.iter_mut().zip(o.dd.iter()) {
            a.io_bytes += b.io_bytes;
            a.total_ios += b.total_ios;
            a.errors += b.errors;
            a.slat.merge(&b.slat);
            a.clat.merge(&b.clat);
            a.lat.merge(&b.lat);
            a.bw.merge_sum(&b.bw);
            a.iops.merge_sum(&b.iops);
        }
        let add = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        add(&mut self.io_u_map, &o.io_u_map);
        add(&mut self.io_u_submit, &o.io_u_submit);
        add(&mut self.io_u_complete, &o.io_u_complete);
        add(&mut self.lat_n, &o.lat_n);
        add(&mut self.lat_u, &o.lat_u);
        add(&mut self.lat_m, &o.lat_m);
        self.total_submit += o.total_submit;
        self.total_complete += o.total_complete;
        self.ctx += o.ctx;
        self.minf += o.minf;
        self.lateness.merge(&o.lateness);
        // __show_run_stats(): error counts add up, the first error is the last
        // member's, the job error the first member's that has one
        // (the error shown is fixed here: it outlives the first_error overwrite)
        let (e, v) = match self.err.shown() {
            (0, _) => o.err.shown(),
            shown => shown,
        };
        (self.err.error, self.err.verror) = (e, v.to_string());
        self.err.total_err += o.err.total_err;
        self.err.first_error = o.err.first_error;
        self.err.coe |= o.err.coe;
        self.err.log.extend(o.err.log.iter().cloned());
    }

    /// The read and write directions folded into one (unified_rw_reporting=mixed).
    pub fn mixed(&self) -> DdirStats {
        let mut m = self.dd[0].clone();
        let w = &self.dd[1];
        m.io_bytes += w.io_bytes;
        m.total_ios += w.total_ios;
        m.errors += w.errors;
        m.slat.merge(&w.slat);
        m.clat.merge(&w.clat);
        m.lat.merge(&w.lat);
        m.bw.merge_sum(&w.bw);
        m.iops.merge_sum(&w.iops);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_edges() {
        assert_eq!(val_to_idx(0), 0);
        assert_eq!(val_to_idx(127), 127);
        assert_eq!(val_to_idx(128), 128);
        // fio's midpoint: bucket 128 holds 128..129 and reports 129
        assert_eq!(idx_to_val(128), 129);
        assert_eq!(val_to_idx(1 << 40), PLAT_NR - 1);
        assert_eq!(idx_to_val(PLAT_NR - 1), 17_112_760_320);
        // relative error below 1/128 and the value maps back to its own bucket
        for v in [200u64, 4_000, 11_994_000, 23_725_000, 1_000_000_000] {
            let r = idx_to_val(val_to_idx(v));
            assert!(
                (r as f64 - v as f64).abs() / (v as f64) < 1.0 / 64.0,
                "{v} -> {r}"
            );
            assert_eq!(val_to_idx(r), val_to_idx(v));
        }
    }

    /// A histogram fio does not keep takes no sample (and allocates nothing), while
    /// its statistic's min/max/mean still do; a job keeps clat's always.
    #[test]
    fn histograms_not_kept_take_no_samples() {
        let mut s = JobStats::new(false, true);
        for ns in [50, 5_000, 70_000] {
            s.add_slat(Dir::Read, ns);
            s.add_clat(Dir::Read, ns);
            s.add_lat(Dir::Read, ns);
        }
        let d = &s.dd[Dir::Read.idx()];
        assert_eq!((d.slat.n, d.slat.min, d.slat.max), (3, 50, 70_000));
        assert_eq!(d.slat.hist.total(), 0);
        assert!(d.slat.hist.groups.is_empty());
        assert_eq!((d.clat.hist.total(), d.lat.hist.total()), (3, 3));
        let s = JobStats::new(true, false);
        assert!(s.dd.iter().all(|d| d.slat.hist.present == 0));
        assert!(s.dd.iter().all(|d| d.lat.hist.present == NOT_KEPT));
    }

    #[test]
    fn long_double_threshold_differs_from_f64_where_fio_does() {
        // spec §1.6: N=25, p=60 needs cumulative >= 16 with long double (15 with f64)
        assert_eq!(x87_threshold(60.0, 25), 16);
        assert_eq!(((60.0f64 / 100.0) * 25.0).ceil() as u64, 15);
        assert_eq!(x87_threshold(50.0, 10), 5);
        assert_eq!(x87_threshold(99.99, 1_000_000), 999_900);
        assert_eq!(x87_threshold(100.0, 7), 7);
    }

    proptest::proptest! {
        /// The packed groups count exactly what a dense 1,856-bucket array counts,
        /// whatever order the groups are first touched in, and merge adds them up.
        #[test]
        fn sparse_counts_match_a_dense_array(
            vals in proptest::collection::vec((0u32..40, 0u64..1 << 40), 0..300)
        ) {
            let mut dense = vec![0u64; PLAT_NR];
            let (mut h, mut odd) = (LatHist::default(), LatHist::default());
            for (i, &(sh, v)) in vals.iter().enumerate() {
                let ns = v >> sh;
                dense[val_to_idx(ns)] += 1;
                if i % 2 == 0 { h.add(ns) } else { odd.add(ns) }
            }
            h.merge(&odd);
            let want: Vec<(usize, u64)> =
                dense.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (i, *c)).collect();
            proptest::prop_assert_eq!(h.counts().collect::<Vec<_>>(), want);
            proptest::prop_assert_eq!(h.total(), vals.len() as u64);
        }
    }

    proptest::proptest! {
        /// Runs of samples in one bucket (kept in the statistic's line until a sample
        /// falls elsewhere) count as a dense array does, read at any point.
        #[test]
        fn runs_of_one_bucket_count_exactly(
            runs in proptest::collection::vec((0u64..4, 1usize..200), 0..40)
        ) {
            let mut dense = vec![0u64; PLAT_NR];
            let mut h = LatHist::default();
            for &(v, n) in &runs {
                let ns = 20_000 + v * 5_000;
                for _ in 0..n {
                    h.add(ns);
                    dense[val_to_idx(ns)] += 1;
                }
                let want: Vec<(usize, u64)> =
                    dense.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (i, *c)).collect();
                proptest::prop_assert_eq!(h.counts().collect::<Vec<_>>(), want);
            }
        }
    }

    /// A run longer than its counter holds spills into the bucket; equality is by
    /// counts, however they are held.
    #[test]
    fn a_long_run_and_equality_by_counts() {
        let (mut a, mut b) = (LatHist::default(), LatHist::default());
        for _ in 0..70_000 {
            a.add(21_000);
        }
        a.add(5);
        a.add(21_000);
        b.add_count(val_to_idx(21_000), 70_001);
        b.add_count(5, 1);
        assert_eq!(a.total(), 70_002);
        assert_eq!(a, b);
        b.add(5);
        assert_ne!(a, b);
    }

    #[test]
    fn percentiles_walk_the_buckets() {
        let mut h = LatHist::default();
        for v in 1..=100u64 {
            h.add(v);
        }
        assert_eq!(
            percentiles(&h, &[1.0, 50.0, 99.0, 100.0]),
            vec![1, 50, 99, 100]
        );
    }

    #[test]
    fn welford_skip_of_a_sample_at_the_mean_is_exact() {
        // fio's add_stat_sample() without the shortcut, bit for bit
        let (mut n, mut mean, mut m2) = (0u64, 0.0f64, 0.0f64);
        let mut st = LatStat::default();
        for v in [0u64, 0, 2000, 2000, 2000, 7, 1000, 1000, 1000, 1003, 0] {
            let x = v as f64;
            let delta = x - mean;
            n += 1;
            mean += delta / n as f64;
            m2 += delta * (x - mean);
            st.add(v);
            assert_eq!(
                (st.n, st.mean.to_bits(), st.s.to_bits()),
                (n, mean.to_bits(), m2.to_bits())
            );
        }
    }

    #[test]
    fn welford_and_merge() {
        let mut a = LatStat::default();
        let mut b = LatStat::default();
        let mut all = LatStat::default();
        for v in [10u64, 20, 30] {
            a.add(v);
            all.add(v);
        }
        for v in [40u64, 1000] {
            b.add(v);
            all.add(v);
        }
        assert!(
            (all.stddev() - 436.176569751).abs() < 1e-6,
            "{}",
            all.stddev()
        );
        a.merge(&b);
        assert_eq!((a.min, a.max, a.n), (10, 1000, 5));
        assert!((a.mean - all.mean).abs() < 1e-9);
        assert!((a.stddev() - all.stddev()).abs() < 1e-9);
    }

    #[test]
    fn latency_buckets_and_depths() {
        let mut s = JobStats::default();
        s.add_clat(Dir::Read, 5); // ns "10"
        s.add_clat(Dir::Read, 4_500); // us "10"
        s.add_clat(Dir::Read, 4_500_000); // ms "10"
        s.add_clat(Dir::Read, 3_000_000_000); // ms ">=2000"
        assert_eq!(s.lat_n[2], 1);
        assert_eq!(s.lat_u[2], 1);
        assert_eq!(s.lat_m[2], 1);
        assert_eq!(s.lat_m[11], 1);
        s.mark_depth(1);
        s.mark_depth(16);
        s.mark_depth(128);
        assert_eq!(s.io_u_map, [1, 0, 0, 0, 1, 0, 1]);
        s.mark_submit(1);
        assert_eq!(s.io_u_submit[1], 1);
        // 50 I/Os of 4 KiB in a 500 ms window: 400 KiB/s, 100 IOPS
        for _ in 0..50 {
            s.add_io(Dir::Read, 4096);
        }
        s.sample(500);
        assert_eq!((s.dd[0].bw.max, s.dd[0].iops.max), (400, 100));
    }
}
