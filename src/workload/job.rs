//! The job runtime's pure parts: what the next I/O of a fio job is (direction, size,
//! offset) and when fio lets it go (rate engine, thinktime). The pipeline
//! (`sim/engine.rs`) owns the job's state machine and calls these.
//!
//! Each piece mirrors a fio function so the two can be read side by side:
//! - [`RwMix::next_dir`]   — `get_rw_ddir()` / `set_rwmix_bytes()` (io_u.c): a new random
//!   direction is drawn only after `rwmix_issues` I/Os in the current one;
//! - [`RateState`]         — `usec_for_io()` (backend.c) and `rate_ddir()` (io_u.c):
//!   the cumulative schedule `issued_bytes / rate_bps` from the job's start, poisson
//!   increments, and the direction switch when one direction is behind;
//! - [`BsGen`]             — `get_next_buflen()`: fixed, `bsrange` (multiples of the
//!   minimum) or `bssplit` percentages;
//! - [`OffsetGen`]         — sequential wrap-around, or random with fio's random map
//!   (every block once per pass; we walk a full-period LCG permutation instead of a
//!   bitmap, so memory stays O(1)), `norandommap` uniform, and the zipf/pareto/normal
//!   distributions.

use crate::sim::{Dir, Ns, SimRng};

/// Direction mix of a job (`rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RwKind {
    pub read: bool,
    pub write: bool,
    pub random: bool,
}

/// How block sizes are chosen for one direction.
#[derive(Debug, Clone, PartialEq)]
pub enum BsGen {
    Fixed(u64),
    /// `bsrange=min-max`: a random multiple of `min` in [min, max].
    Range {
        min: u64,
        max: u64,
    },
    /// `bssplit`: (size, percent) pairs summing to 100.
    Split(Vec<(u64, u32)>),
}

impl BsGen {
    /// Smallest size this generator yields (fio's `min_bs`, used by `rate_iops`).
    pub fn min(&self) -> u64 {
        match self {
            BsGen::Fixed(b) => *b,
            BsGen::Range { min, .. } => *min,
            BsGen::Split(v) => v.iter().map(|(b, _)| *b).min().unwrap_or(4096),
        }
    }

    pub fn max(&self) -> u64 {
        match self {
            BsGen::Fixed(b) => *b,
            BsGen::Range { max, .. } => *max,
            BsGen::Split(v) => v.iter().map(|(b, _)| *b).max().unwrap_or(4096),
        }
    }

    // mirrors get_next_buflen()
    pub fn next(&self, rng: &mut SimRng) -> u64 {
        match self {
            BsGen::Fixed(b) => *b,
            BsGen::Range { min, max } => {
                let steps = (max - min) / min;
                min + rng.below(steps + 1) * min
            }
            BsGen::Split(v) => {
                let r = rng.below(100) as u32 + 1;
                let mut acc = 0;
                for &(b, p) in v {
                    acc += p;
                    if r <= acc {
                        return b;
                    }
                }
                v.last().map(|x| x.0).unwrap_or(4096)
            }
        }
    }
}

/// `random_distribution=`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    Random,
    Zipf(f64),
    Pareto(f64),
    Normal(f64),
}

/// Offsets within the job's file region, in units of `align` bytes.
#[derive(Debug, Clone)]
pub struct OffsetGen {
    start: u64,
    blocks: u64,
    align: u64,
    random: bool,
    randommap: bool,
    dist: Distribution,
    /// Sequential cursor or permutation position.
    pos: u64,
    /// LCG permutation state for the random map.
    lcg_mul: u64,
    lcg_add: u64,
    lcg_mod: u64,
    zipf: Option<ZipfSampler>,
}

impl OffsetGen {
    pub fn new(
        start: u64,
        len: u64,
        align: u64,
        random: bool,
        randommap: bool,
        dist: Distribution,
        rng: &mut SimRng,
    ) -> Self {
        let align = align.max(512);
        let blocks = (len / align).max(1);
        // Full-period LCG over [0, 2^k) with 2^k >= blocks (Hull–Dobell: add odd,
        // mul ≡ 1 mod 4); values >= blocks are skipped.
        let lcg_mod = blocks.next_power_of_two().max(4);
        let lcg_mul = (rng.below(lcg_mod / 4) * 4 + 1) % lcg_mod;
        let lcg_add = (rng.below(lcg_mod / 2) * 2 + 1) % lcg_mod;
        let zipf = match dist {
            Distribution::Zipf(theta) => Some(ZipfSampler::new(blocks, theta)),
            _ => None,
        };
        OffsetGen {
            start,
            blocks,
            align,
            random,
            randommap,
            dist,
            pos: rng.below(lcg_mod),
            lcg_mul,
            lcg_add,
            lcg_mod,
            zipf,
        }
    }

    /// Byte offset of the next I/O of `len` bytes.
    pub fn next(&mut self, len: u64, rng: &mut SimRng) -> u64 {
        let span = (len / self.align).max(1);
        let usable = self.blocks.saturating_sub(span - 1).max(1);
        let block = if !self.random {
            if self.pos >= usable {
                self.pos = 0;
            }
            let b = self.pos;
            self.pos += span;
            b
        } else {
            match self.dist {
                Distribution::Random if self.randommap => loop {
                    self.pos = (self
                        .pos
                        .wrapping_mul(self.lcg_mul)
                        .wrapping_add(self.lcg_add))
                        & (self.lcg_mod - 1);
                    if self.pos < usable {
                        break self.pos;
                    }
                },
                Distribution::Random => rng.below(usable),
                Distribution::Zipf(_) => {
                    let k = self.zipf.as_ref().map(|z| z.sample(rng)).unwrap_or(0);
                    scramble(k, usable)
                }
                Distribution::Pareto(h) => {
                    // fio's pareto: n = (N-1) * u^(h), then scrambled.
                    let u = rng.unit();
                    let k = ((usable - 1) as f64 * u.powf(h)) as u64;
                    scramble(k, usable)
                }
                Distribution::Normal(sigma_pct) => {
                    // Box–Muller around the middle, sigma as % of the range.
                    let (u1, u2) = (rng.unit_open0(), rng.unit());
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    let mid = usable as f64 / 2.0;
                    let v = mid + z * sigma_pct / 100.0 * usable as f64;
                    v.clamp(0.0, (usable - 1) as f64) as u64
                }
            }
        };
        self.start + block * self.align
    }
}

/// Spread a popularity rank over the range so hot blocks are not adjacent (fio hashes
/// zipf/pareto outputs the same way, with a different hash).
fn scramble(k: u64, n: u64) -> u64 {
    let mut x = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) % n
}

/// Zipf(θ) over ranks 0..n by rejection-inversion (Hörmann & Derflinger), O(1) per draw.
#[derive(Debug, Clone)]
struct ZipfSampler {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    c: f64,
}

impl ZipfSampler {
    fn new(n: u64, theta: f64) -> Self {
        let s = theta.max(1e-6);
        let mut z = ZipfSampler {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            c: 0.0,
        };
        z.h_x1 = z.h(1.5) - 1.0;
        z.h_n = z.h(z.n + 0.5);
        z.c = 2.0 - z.h_inv(z.h(2.5) - 2f64.powf(-s));
        z
    }
    fn h(&self, x: f64) -> f64 {
        if (self.s - 1.0).abs() < 1e-9 {
            x.ln()
        } else {
            (x.powf(1.0 - self.s) - 1.0) / (1.0 - self.s)
        }
    }
    fn h_inv(&self, x: f64) -> f64 {
        if (self.s - 1.0).abs() < 1e-9 {
            x.exp()
        } else {
            (1.0 + x * (1.0 - self.s)).powf(1.0 / (1.0 - self.s))
        }
    }
    fn sample(&self, rng: &mut SimRng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.c || u >= self.h(k + 0.5) - k.powf(-self.s) {
                return k as u64 - 1;
            }
        }
    }
}

/// fio's read/write mix state (`get_rw_ddir()`).
#[derive(Debug, Clone)]
pub struct RwMix {
    kind: RwKind,
    rwmix_read: u32,
    cur: Dir,
    rwmix_issues: u64,
    issues: [u64; 2],
}

impl RwMix {
    pub fn new(kind: RwKind, rwmix_read: u32) -> Self {
        RwMix {
            kind,
            rwmix_read,
            cur: if kind.read { Dir::Read } else { Dir::Write },
            rwmix_issues: 0,
            issues: [0; 2],
        }
    }

    pub fn is_mixed(&self) -> bool {
        self.kind.read && self.kind.write
    }

    fn pct(&self, d: Dir) -> u32 {
        match d {
            Dir::Read => self.rwmix_read,
            Dir::Write => 100 - self.rwmix_read,
        }
    }

    /// Direction fio would pick before the rate check (mirrors get_rw_ddir()).
    pub fn next_dir(&mut self, rng: &mut SimRng) -> Dir {
        if !self.is_mixed() {
            return self.cur;
        }
        if self.issues[self.cur.idx()] >= self.rwmix_issues {
            // get_rand_ddir(): v in [1,100], read if v <= rwmix[READ]
            let v = rng.below(100) as u32 + 1;
            let d = if v <= self.rwmix_read {
                Dir::Read
            } else {
                Dir::Write
            };
            if d != self.cur {
                // set_rwmix_bytes(): computed with the direction being left
                let diff = self.pct(flip(self.cur)) as u64;
                self.rwmix_issues = self.issues[self.cur.idx()] * diff / 100;
            }
            self.cur = d;
        }
        self.cur
    }

    /// The rate engine may switch direction; fio stores it as the new current one.
    pub fn set_current(&mut self, d: Dir) {
        self.cur = d;
    }

    pub fn issued(&mut self, d: Dir) {
        self.issues[d.idx()] += 1;
    }
}

fn flip(d: Dir) -> Dir {
    match d {
        Dir::Read => Dir::Write,
        Dir::Write => Dir::Read,
    }
}

/// What the rate engine says about the next I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    /// Issue now, in this direction.
    Go(Dir),
    /// Ahead of schedule: (inline mode) quiesce, then sleep until `until` (ns since
    /// the job's epoch) and issue in this direction.
    SleepUntil(Ns, Dir),
}

/// fio's rate engine for one job (both directions).
#[derive(Debug, Clone)]
pub struct RateState {
    /// Bytes per second per direction (0 = unlimited). `rate_iops` is turned into
    /// bytes with the direction's minimum block size, as `__setup_rate()` does.
    pub rate_bps: [u64; 2],
    /// `rate_iops` as given (for the bssplit special case).
    pub rate_iops: [u64; 2],
    pub poisson: bool,
    pub bssplit: [bool; 2],
    pub min_bs: [u64; 2],
    issue_bytes: [u64; 2],
    next_io_us: [u64; 2],
    last_usec: [u64; 2],
}

impl RateState {
    pub fn new(rate_bps: [u64; 2], rate_iops: [u64; 2], min_bs: [u64; 2], poisson: bool) -> Self {
        let mut bps = rate_bps;
        for d in 0..2 {
            if bps[d] == 0 && rate_iops[d] > 0 {
                bps[d] = rate_iops[d] * min_bs[d];
            }
        }
        RateState {
            rate_bps: bps,
            rate_iops,
            poisson,
            bssplit: [false; 2],
            min_bs,
            issue_bytes: [0; 2],
            next_io_us: [0; 2],
            last_usec: [0; 2],
        }
    }

    pub fn active(&self) -> bool {
        self.rate_bps[0] > 0 || self.rate_bps[1] > 0
    }

    /// mirrors rate_ddir(): `now_us` is time since the job's epoch in µs.
    pub fn decide(&self, dir: Dir, mixed_other_pct: u32, now_us: u64) -> RateDecision {
        let d = dir.idx();
        if self.rate_bps[d] == 0 || self.next_io_us[d] <= now_us {
            return RateDecision::Go(dir);
        }
        let o = 1 - d;
        let other = flip(dir);
        if mixed_other_pct > 0 {
            if self.next_io_us[o] <= now_us {
                return RateDecision::Go(other);
            }
            if self.next_io_us[d] <= self.next_io_us[o] {
                return RateDecision::SleepUntil(self.next_io_us[d] * 1000, dir);
            }
            return RateDecision::SleepUntil(self.next_io_us[o] * 1000, other);
        }
        RateDecision::SleepUntil(self.next_io_us[d] * 1000, dir)
    }

    /// After a submit: mirrors usec_for_io().
    pub fn issued(&mut self, dir: Dir, bytes: u64, rng: &mut SimRng) {
        let d = dir.idx();
        self.issue_bytes[d] += bytes;
        let bps = self.rate_bps[d];
        if bps == 0 {
            return;
        }
        let iops_base = if self.rate_iops[d] > 0 {
            self.rate_iops[d]
        } else {
            bps / self.min_bs[d].max(1)
        };
        if self.poisson {
            if iops_base == 0 {
                return;
            }
            let val = (1_000_000.0 / iops_base as f64) * -(rng.unit_open0().ln());
            self.last_usec[d] += val as u64;
            self.next_io_us[d] = self.last_usec[d];
        } else if self.bssplit[d] && self.rate_iops[d] > 0 {
            self.last_usec[d] += 1_000_000 / (bps / self.min_bs[d]).max(1);
            self.next_io_us[d] = self.last_usec[d];
        } else {
            let b = self.issue_bytes[d];
            self.next_io_us[d] = (b % bps) * 1_000_000 / bps + (b / bps) * 1_000_000;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_schedule_is_cumulative() {
        let mut r = RateState::new([0, 0], [100, 0], [4096, 4096], false);
        let mut rng = SimRng::new(1, "t");
        assert_eq!(r.decide(Dir::Read, 0, 0), RateDecision::Go(Dir::Read));
        r.issued(Dir::Read, 4096, &mut rng);
        // next slot 10 ms after the epoch
        assert_eq!(
            r.decide(Dir::Read, 0, 3_000),
            RateDecision::SleepUntil(10_000_000, Dir::Read)
        );
        // late: catch up immediately
        assert_eq!(r.decide(Dir::Read, 0, 50_000), RateDecision::Go(Dir::Read));
    }

    #[test]
    fn mixed_switches_to_the_direction_that_is_behind() {
        let mut r = RateState::new([0, 0], [100, 100], [4096, 4096], false);
        let mut rng = SimRng::new(1, "t");
        r.issued(Dir::Read, 4096, &mut rng);
        assert_eq!(r.decide(Dir::Read, 50, 1_000), RateDecision::Go(Dir::Write));
    }

    #[test]
    fn rwmix_converges_to_the_requested_share() {
        let mut m = RwMix::new(
            RwKind {
                read: true,
                write: true,
                random: true,
            },
            70,
        );
        let mut rng = SimRng::new(3, "mix");
        let mut reads = 0;
        for _ in 0..100_000 {
            let d = m.next_dir(&mut rng);
            m.issued(d);
            if d == Dir::Read {
                reads += 1;
            }
        }
        assert!((69_000..71_000).contains(&reads), "reads={reads}");
    }

    #[test]
    fn random_map_hits_every_block_once_per_pass() {
        let mut rng = SimRng::new(9, "off");
        let mut g = OffsetGen::new(
            0,
            1000 * 4096,
            4096,
            true,
            true,
            Distribution::Random,
            &mut rng,
        );
        let mut seen = vec![false; 1000];
        for _ in 0..1000 {
            let o = g.next(4096, &mut rng) / 4096;
            assert!(!seen[o as usize], "block {o} twice");
            seen[o as usize] = true;
        }
    }

    #[test]
    fn sequential_wraps_and_bsrange_is_aligned() {
        let mut rng = SimRng::new(9, "off");
        let mut g = OffsetGen::new(
            8192,
            3 * 4096,
            4096,
            false,
            true,
            Distribution::Random,
            &mut rng,
        );
        let v: Vec<u64> = (0..4).map(|_| g.next(4096, &mut rng)).collect();
        assert_eq!(v, vec![8192, 12288, 16384, 8192]);
        let b = BsGen::Range {
            min: 4096,
            max: 16384,
        };
        for _ in 0..100 {
            let x = b.next(&mut rng);
            assert!(x.is_multiple_of(4096) && (4096..=16384).contains(&x));
        }
    }

    #[test]
    fn zipf_prefers_low_ranks() {
        let z = ZipfSampler::new(1000, 1.2);
        let mut rng = SimRng::new(1, "z");
        let low = (0..10_000).filter(|_| z.sample(&mut rng) < 10).count();
        assert!(low > 5_000, "low={low}");
    }
}
