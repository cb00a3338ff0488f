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
//!   distributions;
//! - [`JobParams::from_spec`] — a parsed fio job ([`JobSpec`]) resolved against the
//!   device (size and offset percentages, `io_size`, `loops`) into what the runtime
//!   needs.

use crate::sim::{Dir, Ns, SimRng};
use crate::workload::fio::{
    DDIR_READ, DDIR_WRITE, IoEngine, JobSpec, RandomDist, RateProcess, SizeOrPct, ThinkBlocksType,
};

/// Everything the runtime needs to know about one fio job.
#[derive(Debug, Clone)]
pub struct JobParams {
    pub name: String,
    /// Cgroup index the job runs in.
    pub cgroup: u32,
    pub kind: RwKind,
    pub rwmix_read: u32,
    pub bs: [BsGen; 2],
    /// Offsets are aligned to this (fio's blockalign, default min bs).
    pub align: u64,
    pub iodepth: u32,
    /// psync/sync/pvsync: depth 1, the whole call is clat, no slat.
    pub sync_engine: bool,
    /// File region: [offset, offset + size).
    pub offset: u64,
    pub size: u64,
    /// Bytes to issue before the job ends (when not time based).
    pub io_limit: u64,
    pub time_based: bool,
    pub runtime: Option<Ns>,
    pub ramp: Ns,
    pub startdelay: Ns,
    pub rate_bps: [u64; 2],
    pub rate_iops: [u64; 2],
    pub rate_poisson: bool,
    pub thinktime: Ns,
    pub thinktime_blocks: u32,
    /// thinktime_blocks_type=issue (count issued, not completed).
    pub thinktime_count_issue: bool,
    pub randommap: bool,
    pub distribution: Distribution,
    /// blkcg-sim extension: the job's bios are REQ_META.
    pub meta: bool,
    /// `continue_on_error` as fio's `error_type` bits (read 1, write 2).
    pub continue_on_error: u32,
    /// The file fio names in its error lines (`filename`, else the device node).
    pub filename: String,
    /// Jobs (indices into the job list) that must end before this one starts
    /// (fio's `stonewall`: every earlier job of the same job file).
    pub after: Vec<u32>,
    /// Seed stream name (fio seeds each job from its name and number).
    pub seed_name: String,
    /// At most this many completions are reaped when the queue is full
    /// (`iodepth_batch_complete_max`, which fio lifts to the min, 1, when unset).
    pub reap_batch_max: u32,
}

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
        // one block per I/O is the common case: skip the division
        let span = if len == self.align {
            1
        } else {
            (len / self.align).max(1)
        };
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

impl JobParams {
    /// Resolve a parsed fio job for a device of `capacity` bytes, running in cgroup
    /// `cgroup`. Returns the parameters and any warnings (things fio would do that we
    /// approximate).
    pub fn from_spec(
        spec: &JobSpec,
        cgroup: u32,
        capacity: u64,
        after: Vec<u32>,
        seed_name: String,
    ) -> Result<(JobParams, Vec<String>), String> {
        let mut warnings = Vec::new();
        let rw = spec.rw;
        if rw.trims() && !rw.writes() {
            return Err(format!(
                "job `{}`: rw={:?} issues trims (discards), which blkcg-sim does not model yet",
                spec.name, rw
            ));
        }
        if rw.trims() {
            warnings.push(format!(
                "job `{}`: the trim half of rw={:?} is not modelled; only its writes are issued",
                spec.name, rw
            ));
        }
        let kind = RwKind {
            read: rw.reads(),
            write: rw.writes(),
            random: rw.is_random(),
        };
        let bs_of = |d: usize| -> BsGen {
            if !spec.bssplit[d].is_empty() {
                BsGen::Split(spec.bssplit[d].iter().map(|b| (b.size, b.pct)).collect())
            } else if spec.bs_min[d] == spec.bs_max[d] {
                BsGen::Fixed(spec.bs_min[d])
            } else {
                BsGen::Range {
                    min: spec.bs_min[d],
                    max: spec.bs_max[d],
                }
            }
        };
        let bs = [bs_of(DDIR_READ), bs_of(DDIR_WRITE)];
        let used: Vec<usize> = [(kind.read, DDIR_READ), (kind.write, DDIR_WRITE)]
            .iter()
            .filter(|x| x.0)
            .map(|x| x.1)
            .collect();
        let min_bs = used.iter().map(|&d| bs[d].min()).min().unwrap_or(4096);
        let max_bs = used.iter().map(|&d| bs[d].max()).max().unwrap_or(4096);
        let align = used
            .iter()
            .map(|&d| spec.blockalign[d])
            .find(|&a| a > 0)
            .unwrap_or(min_bs)
            .max(1);
        let pct = |p: u64, of: u64| (of as u128 * p as u128 / 100) as u64;
        let offset = match spec.offset {
            SizeOrPct::Bytes(b) => b,
            SizeOrPct::Percent(p) => pct(p, capacity),
            SizeOrPct::Zones(_) => {
                return Err(format!(
                    "job `{}`: zone offsets need zonemode=zbd, which is not modelled",
                    spec.name
                ));
            }
        };
        if offset >= capacity {
            return Err(format!(
                "job `{}`: offset {offset} is beyond the device ({capacity} bytes)",
                spec.name
            ));
        }
        let mut size = match spec.size {
            None => capacity - offset,
            Some(SizeOrPct::Bytes(b)) => b,
            Some(SizeOrPct::Percent(p)) => pct(p, capacity),
            Some(SizeOrPct::Zones(_)) => {
                return Err(format!(
                    "job `{}`: zone sizes need zonemode=zbd, which is not modelled",
                    spec.name
                ));
            }
        };
        if offset + size > capacity {
            warnings.push(format!(
                "job `{}`: size {size} from offset {offset} runs past the device ({capacity} bytes); clamped",
                spec.name
            ));
            size = capacity - offset;
        }
        if size < max_bs {
            return Err(format!(
                "job `{}`: the file region ({size} bytes) is smaller than one I/O ({max_bs} bytes)",
                spec.name
            ));
        }
        let io_limit = match spec.io_size {
            Some(SizeOrPct::Bytes(b)) => b,
            Some(SizeOrPct::Percent(p)) => pct(p, size),
            _ => size.saturating_mul(spec.loops.max(1) as u64),
        };
        let distribution = match &spec.random_distribution {
            RandomDist::Random => Distribution::Random,
            RandomDist::Zipf { theta, .. } => Distribution::Zipf(*theta),
            RandomDist::Pareto { h, .. } => Distribution::Pareto(*h),
            RandomDist::Normal { sigma, .. } => Distribution::Normal(*sigma),
            RandomDist::Zoned { .. } => {
                warnings.push(format!(
                    "job `{}`: zoned random_distribution is not modelled; using uniform offsets",
                    spec.name
                ));
                Distribution::Random
            }
        };
        if spec.ioengine == IoEngine::Null {
            warnings.push(format!(
                "job `{}`: ioengine=null never reaches a block device; simulated as libaio",
                spec.name
            ));
        }
        let runtime = (spec.runtime > 0).then_some(spec.runtime);
        if spec.time_based && runtime.is_none() {
            return Err(format!(
                "job `{}`: time_based needs a runtime (fio would run forever)",
                spec.name
            ));
        }
        Ok((
            JobParams {
                name: spec.name.clone(),
                cgroup,
                kind,
                rwmix_read: spec.rwmixread,
                bs,
                align,
                iodepth: spec.iodepth.max(1),
                sync_engine: spec.ioengine.is_sync_at(spec.iodepth),
                offset,
                size,
                io_limit,
                time_based: spec.time_based,
                runtime,
                ramp: spec.ramp_time,
                startdelay: spec.startdelay.lo,
                rate_bps: [spec.rate[DDIR_READ], spec.rate[DDIR_WRITE]],
                rate_iops: [spec.rate_iops[DDIR_READ], spec.rate_iops[DDIR_WRITE]],
                rate_poisson: spec.rate_process == RateProcess::Poisson,
                thinktime: spec.thinktime,
                thinktime_blocks: spec.thinktime_blocks,
                thinktime_count_issue: spec.thinktime_blocks_type == ThinkBlocksType::Issue,
                randommap: !spec.norandommap,
                distribution,
                meta: spec.blkcg_meta,
                continue_on_error: spec.continue_on_error,
                // the first of fio's `:`-separated files; run::prepare fills in the device
                filename: spec
                    .filename
                    .as_deref()
                    .unwrap_or_default()
                    .split(':')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                after,
                seed_name,
                reap_batch_max: spec.iodepth_batch_complete_max.max(1),
            },
            warnings,
        ))
    }
}

/// fio's start order within one job file: a `stonewall` job waits for every job
/// before it, and so does every job after it; `wait_for=NAME` waits for that job.
/// Returns, per job, the indices (offset by `base`) it must wait for.
pub fn start_dependencies(jobs: &[JobSpec], base: u32) -> Vec<Vec<u32>> {
    let mut barrier = 0usize;
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            if j.stonewall && i > 0 {
                barrier = i;
            }
            let mut after: Vec<u32> = (0..barrier).map(|k| base + k as u32).collect();
            if let Some(w) = &j.wait_for
                && let Some(k) = jobs.iter().position(|x| &x.name == w)
                && k != i
                && !after.contains(&(base + k as u32))
            {
                after.push(base + k as u32);
            }
            after
        })
        .collect()
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

    fn parse(args: &str) -> Vec<JobSpec> {
        let a: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        crate::workload::fio::parse_cmdline(&a).unwrap().jobs
    }

    #[test]
    fn spec_resolves_against_the_device() {
        let s = parse(
            "--name=a --rw=randrw --rwmixread=70 --bs=4k,64k --size=50% --offset=10% --iodepth=8 --rate_iops=100 --runtime=3 --time_based --blkcg_meta=1",
        );
        let (p, w) = JobParams::from_spec(&s[0], 2, 1 << 30, vec![], "a".into()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((p.offset, p.size), ((1u64 << 30) / 10, (1u64 << 30) / 2));
        assert_eq!(p.bs, [BsGen::Fixed(4096), BsGen::Fixed(65536)]);
        assert_eq!(p.align, 4096);
        assert_eq!(p.rate_iops, [100, 100]);
        assert_eq!(p.runtime, Some(3_000_000_000));
        assert!(p.kind.read && p.kind.write && p.kind.random && p.meta);
        assert_eq!(p.rwmix_read, 70);
        // psync forces depth 1 and is a sync engine
        let s = parse("--name=b --ioengine=psync --iodepth=32 --size=1m");
        let (p, _) = JobParams::from_spec(&s[0], 0, 1 << 30, vec![], "b".into()).unwrap();
        assert!(p.sync_engine && p.iodepth == 1 && p.io_limit == 1 << 20);
    }

    #[test]
    fn spec_errors_name_the_job() {
        let s = parse("--name=t --rw=randtrim");
        assert!(
            JobParams::from_spec(&s[0], 0, 1 << 30, vec![], "t".into())
                .unwrap_err()
                .contains("job `t`")
        );
        let s = parse("--name=o --offset=2g");
        assert!(JobParams::from_spec(&s[0], 0, 1 << 30, vec![], "o".into()).is_err());
    }

    #[test]
    fn stonewall_orders_start() {
        let s = parse("--name=a --name=b --name=c --stonewall --name=d --name=e --wait_for=a");
        let deps = start_dependencies(&s, 10);
        assert_eq!(deps[0], Vec::<u32>::new());
        assert_eq!(deps[1], Vec::<u32>::new());
        assert_eq!(deps[2], vec![10, 11]);
        assert_eq!(deps[3], vec![10, 11]);
        assert_eq!(deps[4], vec![10, 11]);
    }

    #[test]
    fn zipf_prefers_low_ranks() {
        let z = ZipfSampler::new(1000, 1.2);
        let mut rng = SimRng::new(1, "z");
        let low = (0..10_000).filter(|_| z.sample(&mut rng) < 10).count();
        assert!(low > 5_000, "low={low}");
    }
}
