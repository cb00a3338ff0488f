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
//!   bitmap, so memory stays O(1); a time_based job's next pass is a new permutation,
//!   a `loops` pass the same one: [`RandomMap`]), `norandommap` uniform, and the
//!   zipf/pareto/normal distributions;
//! - [`JobPrio`]          — the job's I/O priorities: `ioprio_set()` from `prio` /
//!   `prioclass` (backend.c) and `fio_cmdprio_set_ioprio()` (engines/cmdprio.c) for
//!   `cmdprio_percentage` / `cmdprio_class` / `cmdprio`;
//! - [`JobParams::from_spec`] — a parsed fio job ([`JobSpec`]) resolved against the
//!   device (size and offset percentages, `io_size`, `loops`) into what the runtime
//!   needs;
//! - [`unmodelled`]       — what a job asks for that the runtime does not do (buffered
//!   I/O first), for the run's warnings.

use crate::blkcg::ioprio::{Ioprio, IoprioClass};
use crate::sim::fio::FIO_SAMPLE;
use crate::sim::{Dir, Ns, SimRng};
use crate::workload::fio::{
    DDIR_READ, DDIR_WRITE, IoEngine, JobSpec, RandomDist, RateProcess, RwSuffix, SizeOrPct,
    SubmitMode, ThinkBlocksType,
};
use crate::workload::iolog::IoLog;

/// Everything the runtime needs to know about one fio job. Laid out by hand
/// (`repr(C)`): what fio's loop reads on every I/O comes first, in two cache lines
/// when the job's state places it on a line boundary (`JobRt` in sim/engine.rs);
/// what only setup and the report read follows.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct JobParams {
    // --- read per I/O
    pub bs: [BsGen; 2],
    /// Bytes to issue before the job ends (when not time based).
    pub io_limit: u64,
    pub thinktime: Ns,
    /// I/O priorities of the job's thread and commands.
    pub prio: JobPrio,
    /// Cgroup index the job runs in.
    pub cgroup: u32,
    pub iodepth: u32,
    pub thinktime_blocks: u32,
    /// At most this many completions are reaped when the queue is full
    /// (`iodepth_batch_complete_max`, which fio lifts to the min, 1, when unset).
    pub reap_batch_max: u32,
    pub rwmix_read: u32,
    /// `continue_on_error` as fio's `error_type` bits (read 1, write 2).
    pub continue_on_error: u32,
    pub kind: RwKind,
    /// psync/sync/pvsync: depth 1, the whole call is clat, no slat.
    pub sync_engine: bool,
    pub time_based: bool,
    /// thinktime_blocks_type=issue (count issued, not completed).
    pub thinktime_count_issue: bool,
    /// blkcg-sim extension: the job's bios are REQ_META.
    pub meta: bool,
    /// `slat_percentiles` and `lat_percentiles`: whether the job keeps those
    /// histograms.
    pub slat_percentiles: bool,
    /// The last field of the per-I/O part: the pipeline hints the lines up to here.
    pub lat_percentiles: bool,
    // --- setup and the report (these two fill the per-I/O part's last line)
    pub rate_poisson: bool,
    pub randommap: RandomMap,
    pub name: Box<str>,
    /// Offsets are aligned to this (fio's blockalign, default min bs).
    pub align: u64,
    /// File region: [offset, offset + size).
    pub offset: u64,
    pub size: u64,
    pub runtime: Option<Ns>,
    pub ramp: Ns,
    pub startdelay: Ns,
    /// `thinktime_spin`: the part of each think time fio busy-waits (capped at
    /// `thinktime`), before it sleeps the rest.
    pub thinktime_spin: Ns,
    /// fio's `ns_granularity` (in µs, despite its name): the longest of the ten 1 µs
    /// sleeps its process timed at start-up (`fio_time_init()`), which every sleep of
    /// the process asks the kernel for less and busy-waits when shorter
    /// (`usec_sleep()`). Set per fio process by `crate::run::prepare`; 0 sleeps as asked.
    pub ns_granularity_us: u64,
    pub rate_bps: [u64; 2],
    pub rate_iops: [u64; 2],
    pub distribution: Distribution,
    /// The file fio names in its error lines (`filename`, else the device node).
    pub filename: Box<str>,
    /// Jobs (indices into the job list) that must end before this one starts
    /// (fio's `stonewall`: every earlier job of the same job file).
    pub after: Box<[u32]>,
    /// Seed stream name (fio seeds each job from its name and number).
    pub seed_name: Box<str>,
    /// With `direct=0` (fio's default) the job's writes go through the page cache:
    /// copied, dirty, written back later (`crate::writeback`); its reads stay direct.
    pub buffered: Option<Box<BufferedWrites>>,
    /// The I/O logs the job reads or writes, if any.
    pub iolog: Option<Box<JobIologs>>,
}

/// A job's I/O logs (`crate::workload::iolog`) and stat logs.
#[derive(Debug, Clone, Default)]
pub struct JobIologs {
    /// The log the job replays (`read_iolog`), read before the run (`crate::run`):
    /// its entries replace the generators.
    pub replay: Option<std::sync::Arc<IoLog>>,
    /// `write_iolog`: the file name, in the run's folder, of the job's I/O log.
    pub write: Option<Box<str>>,
    /// `write_bw_log`, `write_lat_log`, `write_iops_log`: the files, in the run's
    /// folder (`crate::run` names them as fio does).
    pub stat: Option<crate::sim::fio::statlog::StatLogSpec>,
}

/// The I/O priorities a job gives its bios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobPrio {
    /// What fio's `ioprio_set(IOPRIO_WHO_PROCESS, 0, ..)` set for the job's thread
    /// (backend.c, when `prio` or `prioclass` is given): `ioprio_value()`, class 0
    /// read as BE. `None`: the thread keeps the nice-derived default.
    pub task: Option<Ioprio>,
    /// Per direction: the percentage (1..=100) of commands that carry their own
    /// priority (`IOCB_FLAG_IOPRIO` / `sqe->ioprio`), and that priority.
    pub cmdprio: [Option<(u32, Ioprio)>; 2],
}

impl JobPrio {
    /// From fio's options; `None` if the job sets none.
    fn from_spec(spec: &JobSpec) -> Result<JobPrio, String> {
        // os-linux.h ioprio_value(): no class is BE
        let value = |class: u32, level: u32| {
            let class = IoprioClass::from_u32(class)
                .filter(|&c| c != IoprioClass::None)
                .unwrap_or(IoprioClass::Be);
            Ioprio::new(class, level as u16)
        };
        let task = (spec.prio.is_some() || spec.prioclass.is_some())
            .then(|| value(spec.prioclass.unwrap_or(0), spec.prio.unwrap_or(0)));
        let any_cmdprio = [&spec.cmdprio_percentage, &spec.cmdprio_class, &spec.cmdprio]
            .iter()
            .any(|a| a.iter().any(Option::is_some));
        if any_cmdprio && !matches!(spec.ioengine, IoEngine::Libaio | IoEngine::IoUring) {
            return Err(format!(
                "job `{}`: cmdprio_percentage, cmdprio_class and cmdprio are options of the \
                 libaio and io_uring engines (fio refuses them as a bad option with \
                 other engines); use prio/prioclass for the whole job",
                spec.name
            ));
        }
        let mut cmdprio = [None; 2];
        for (d, slot) in cmdprio.iter_mut().enumerate() {
            // fio_cmdprio_parse_and_gen(): a percentage without a class means RT
            *slot = spec.cmdprio_percentage[d].filter(|&p| p > 0).map(|p| {
                (
                    p,
                    value(
                        spec.cmdprio_class[d].unwrap_or(1),
                        spec.cmdprio[d].unwrap_or(0),
                    ),
                )
            });
        }
        Ok(JobPrio { task, cmdprio })
    }

    /// The priority a bio of direction `dir` carries when fio submits it — before
    /// the kernel's `bio_set_ioprio()` gives a class-NONE bio the thread's priority:
    /// `fio_cmdprio_set_ioprio()` draws `rand_between(0, 99)` from the job's own
    /// priority stream and takes the cmdprio value when it is below the percentage.
    /// Draws nothing for a direction without cmdprio.
    pub fn bio_ioprio(&self, dir: Dir, rng: &mut SimRng) -> Ioprio {
        match self.cmdprio[dir.idx()] {
            Some((pct, prio)) if (rng.below(100) as u32) < pct => prio,
            _ => Ioprio::DEFAULT,
        }
    }
}

/// Direction mix of a job (`rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RwKind {
    pub read: bool,
    pub write: bool,
    pub random: bool,
}

/// A buffered job's page-cache options: its syncs, its `fadvise()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferedWrites {
    /// `end_fsync`: the job syncs its file once its writes are done, inside its
    /// runtime.
    pub end_fsync: bool,
    /// `fsync=N`, `fdatasync=N`: a sync after every N writes issued (0: none). On a
    /// block device both are `blkdev_fsync()`.
    pub sync_blocks: [u32; 2],
    /// `sync_file_range=flags:N`.
    pub sync_file_range: Option<crate::workload::fio::SyncFileRange>,
    /// What fio's `fadvise_hint` tells the kernel of the file at its open.
    pub fadvise: crate::writeback::readahead::Fadvise,
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

/// fio's random map, and the order of a pass over the region once the last one has
/// issued every block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomMap {
    /// `norandommap`: uniform offsets, a block may come twice in a pass.
    Off,
    /// Each pass in the same order: a new loop (`loops`, `io_size` past `size`) with
    /// `randrepeat` (the default) re-seeds the offset generator (`clear_io_state()` →
    /// `td_fill_rand_seeds()`).
    SameOrder,
    /// Each pass in a new order: a time_based job whose map is full clears it and
    /// draws on (`get_next_rand_block()` → `fio_file_reset()` resets the axmap, not
    /// `td->offset_state`); likewise a new loop with `randrepeat=0`.
    NewOrder,
}

impl RandomMap {
    /// The map of a job: `norandommap`, else how its passes follow each other.
    pub fn of(spec: &JobSpec) -> Self {
        if spec.norandommap {
            RandomMap::Off
        } else if spec.time_based || !spec.randrepeat {
            RandomMap::NewOrder
        } else {
            RandomMap::SameOrder
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
    randommap: RandomMap,
    dist: Distribution,
    /// Sequential cursor or permutation position.
    pos: u64,
    /// LCG permutation state for the random map.
    lcg_mul: u64,
    lcg_add: u64,
    lcg_mod: u64,
    /// Steps of the permutation left in this pass (a pass is `lcg_mod` steps).
    left: u64,
    zipf: Option<ZipfSampler>,
}

impl OffsetGen {
    pub fn new(
        start: u64,
        len: u64,
        align: u64,
        random: bool,
        randommap: RandomMap,
        dist: Distribution,
        rng: &mut SimRng,
    ) -> Self {
        let align = align.max(512);
        let blocks = (len / align).max(1);
        let zipf = match dist {
            Distribution::Zipf(theta) => Some(ZipfSampler::new(blocks, theta)),
            _ => None,
        };
        let mut g = OffsetGen {
            start,
            blocks,
            align,
            random,
            randommap,
            dist,
            pos: 0,
            lcg_mul: 1,
            lcg_add: 1,
            // a power of two >= blocks
            lcg_mod: blocks.next_power_of_two().max(4),
            left: 0,
            zipf,
        };
        g.draw_permutation(rng);
        if !random {
            // fio's sequential I/O starts at the job's offset (`f->last_pos`); the
            // permutation's draws are made all the same, so that a job's other
            // streams do not depend on its pattern
            g.pos = 0;
        }
        g
    }

    /// A new permutation of the pass: a full-period LCG over [0, 2^k) with
    /// 2^k >= blocks (Hull–Dobell: add odd, mul ≡ 1 mod 4) and a random start; values
    /// >= blocks are skipped.
    fn draw_permutation(&mut self, rng: &mut SimRng) {
        let m = self.lcg_mod;
        self.lcg_mul = (rng.below(m / 4) * 4 + 1) % m;
        self.lcg_add = (rng.below(m / 2) * 2 + 1) % m;
        self.pos = rng.below(m);
        self.left = m;
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
                Distribution::Random if self.randommap != RandomMap::Off => loop {
                    if self.left == 0 {
                        // every block of the region was issued once: a new pass
                        if self.randommap == RandomMap::NewOrder {
                            self.draw_permutation(rng);
                        } else {
                            self.left = self.lcg_mod;
                        }
                    }
                    self.left -= 1;
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
            // a replay ends with its log: fio turns the byte count off
            _ if spec.read_iolog.is_some() => u64::MAX,
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
        if spec.read_iolog.is_some() {
            if spec.rate.iter().chain(&spec.rate_iops).any(|&r| r > 0) {
                warnings.push(format!(
                    "job `{}`: rate and rate_iops do not pace a replay (fio takes each \
                     I/O from the log, never through its rate check); the log's times do",
                    spec.name
                ));
            }
            if spec.write_iolog.is_some() {
                warnings.push(format!(
                    "job `{}`: read iolog overrides write_iolog (as fio says): no log is written",
                    spec.name
                ));
            }
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
                name: spec.name.as_str().into(),
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
                thinktime_spin: spec.thinktime_spin,
                ns_granularity_us: 0,
                rate_bps: [spec.rate[DDIR_READ], spec.rate[DDIR_WRITE]],
                rate_iops: [spec.rate_iops[DDIR_READ], spec.rate_iops[DDIR_WRITE]],
                rate_poisson: spec.rate_process == RateProcess::Poisson,
                thinktime: spec.thinktime,
                thinktime_blocks: spec.thinktime_blocks,
                thinktime_count_issue: spec.thinktime_blocks_type == ThinkBlocksType::Issue,
                randommap: RandomMap::of(spec),
                distribution,
                meta: spec.blkcg_meta,
                buffered: (!spec.direct
                    && !matches!(spec.ioengine, IoEngine::Null | IoEngine::Mmap))
                .then(|| {
                    Box::new(BufferedWrites {
                        end_fsync: spec.end_fsync,
                        sync_blocks: [spec.fsync, spec.fdatasync],
                        sync_file_range: spec.sync_file_range,
                        fadvise: spec.fadvise(),
                    })
                }),
                prio: JobPrio::from_spec(spec)?,
                continue_on_error: spec.continue_on_error,
                slat_percentiles: spec.slat_percentiles,
                lat_percentiles: spec.lat_percentiles,
                // the first of fio's `:`-separated files; run::prepare fills in the device
                filename: spec
                    .filename
                    .as_deref()
                    .unwrap_or_default()
                    .split(':')
                    .next()
                    .unwrap_or_default()
                    .into(),
                after: after.into(),
                seed_name: seed_name.into(),
                reap_batch_max: spec.iodepth_batch_complete_max.max(1),
                iolog: spec
                    .write_iolog
                    .as_deref()
                    .filter(|_| spec.read_iolog.is_none())
                    .map(|w| {
                        Box::new(JobIologs {
                            write: Some(w.into()),
                            ..JobIologs::default()
                        })
                    }),
            },
            warnings,
        ))
    }
}

/// What a job asks for that blkcg-sim accepts but does not model, one sentence each,
/// mmap first: the run says so (`crate::run::prepare`, once per job, on stderr
/// and in the summary), so that a figure the simulator cannot give is never printed
/// silently as if it could. Options fio knows that the option table ignores warn where
/// they are parsed (`crate::workload::fio`); these are the ones it stores and nothing
/// reads, a non-default value each. The null engine touches no page cache: no
/// buffered-I/O warning for it (it has its own in [`JobParams::from_spec`]).
pub fn unmodelled(spec: &JobSpec) -> Vec<String> {
    let mut out = Vec::new();
    if spec.ioengine == IoEngine::Mmap {
        out.push(
            "ioengine=mmap is not modelled: the job runs as direct I/O, every I/O going to \
             the device as with direct=1 (no page faults, no page cache)"
                .into(),
        );
    }
    if !spec.direct && spec.rw.reads() && spec.loops > 1 && spec.invalidate {
        out.push(format!(
            "loops={} with buffered reads: fio drops the file's page cache each time it \
             opens it (invalidate=1), which is not modelled: a later loop's reads may find \
             pages the one before left cached",
            spec.loops
        ));
    }
    let mut option = |set: bool, what: String, instead: &str| {
        if set {
            out.push(format!("{what} is not modelled; {instead}"));
        }
    };
    if let IoEngine::Other(e) = &spec.ioengine {
        option(
            true,
            format!("ioengine={e}"),
            "run as an asynchronous engine (as libaio)",
        );
    }
    let suffix = match spec.rw_suffix {
        RwSuffix::Every(n) => (n != 1).then(|| format!("a new offset every {n} I/Os")),
        RwSuffix::Hole(b) => (b != 0).then(|| format!("a {b}-byte skip after each I/O")),
    };
    if let Some(s) = suffix {
        option(
            true,
            format!("rw=...:N ({s})"),
            "every I/O takes the next offset",
        );
    }
    option(
        spec.bs_unaligned,
        "bs_unaligned".into(),
        "sizes of a bsrange stay multiples of its minimum",
    );
    option(
        spec.iodepth_batch_submit > 1,
        format!("iodepth_batch_submit={}", spec.iodepth_batch_submit),
        "I/Os are submitted one at a time",
    );
    option(
        spec.iodepth_batch_complete_min > 1,
        format!(
            "iodepth_batch_complete_min={}",
            spec.iodepth_batch_complete_min
        ),
        "completions are reaped as they come",
    );
    option(
        spec.iodepth_low < spec.iodepth,
        format!("iodepth_low={}", spec.iodepth_low),
        "the queue is refilled at every completion",
    );
    option(
        spec.number_ios > 0,
        format!("number_ios={}", spec.number_ios),
        "the job ends by size or runtime",
    );
    option(
        spec.rate_min
            .iter()
            .chain(&spec.rate_iops_min)
            .any(|&r| r > 0),
        "rate_min / rate_iops_min".into(),
        "a job below its minimum rate is not stopped",
    );
    option(
        spec.rate_ignore_thinktime,
        "rate_ignore_thinktime".into(),
        "the rate schedule includes thinktime",
    );
    option(
        spec.thinktime_iotime > 0,
        "thinktime_iotime".into(),
        "thinktime follows thinktime_blocks alone",
    );
    option(
        spec.startdelay.hi > spec.startdelay.lo,
        "a startdelay range".into(),
        "the job starts at its lower bound",
    );
    option(
        spec.filesize.is_some(),
        "filesize".into(),
        "the job's region is size (or the device)",
    );
    option(
        spec.io_submit_mode == SubmitMode::Offload,
        "io_submit_mode=offload".into(),
        "I/Os are submitted inline",
    );
    option(
        spec.randseed_set,
        format!("randseed={}", spec.randseed),
        "random offsets come from the scenario's seed (`seed`, `--seed`)",
    );
    option(
        spec.bwavgtime != FIO_SAMPLE || spec.iopsavgtime != FIO_SAMPLE,
        "bwavgtime / iopsavgtime".into(),
        "bandwidth and IOPS samples are 500 ms apart",
    );
    option(
        spec.unit_base == 8,
        "unit_base=8".into(),
        "bandwidth is printed in bytes",
    );
    out
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
    /// Ahead of schedule: (inline mode) quiesce, then sleep this many µs — reckoned
    /// now, before the quiesce, as `rate_ddir()` does — and issue in this direction.
    Sleep(u64, Dir),
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
                return RateDecision::Sleep(self.next_io_us[d] - now_us, dir);
            }
            return RateDecision::Sleep(self.next_io_us[o] - now_us, other);
        }
        RateDecision::Sleep(self.next_io_us[d] - now_us, dir)
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
        // next slot 10 ms after the epoch: 7 ms to sleep at 3 ms
        assert_eq!(
            r.decide(Dir::Read, 0, 3_000),
            RateDecision::Sleep(7_000, Dir::Read)
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

    /// The blocks of `passes` passes over 1000 blocks, pass by pass.
    fn passes(map: RandomMap, passes: usize) -> Vec<Vec<u64>> {
        let mut rng = SimRng::new(9, "off");
        let mut g = OffsetGen::new(
            0,
            1000 * 4096,
            4096,
            true,
            map,
            Distribution::Random,
            &mut rng,
        );
        (0..passes)
            .map(|_| (0..1000).map(|_| g.next(4096, &mut rng) / 4096).collect())
            .collect()
    }

    #[test]
    fn random_map_hits_every_block_once_per_pass() {
        for map in [RandomMap::SameOrder, RandomMap::NewOrder] {
            for pass in passes(map, 3) {
                let mut seen = vec![false; 1000];
                for o in pass {
                    assert!(!seen[o as usize], "{map:?}: block {o} twice in a pass");
                    seen[o as usize] = true;
                }
            }
        }
    }

    #[test]
    fn a_time_based_pass_is_a_new_order_a_loop_the_same() {
        // fio, time_based: the full map is cleared (fio_file_reset()) and the offset
        // generator draws on, so the next pass is in another order; a new loop with
        // randrepeat re-seeds it (td_fill_rand_seeds()): the same order again
        let p = passes(RandomMap::NewOrder, 3);
        assert_ne!(p[0], p[1]);
        assert_ne!(p[1], p[2]);
        let p = passes(RandomMap::SameOrder, 3);
        assert_eq!(p[0], p[1]);
        assert_eq!(p[1], p[2]);
        let spec = |time_based, randrepeat, norandommap| {
            RandomMap::of(&JobSpec {
                time_based,
                randrepeat,
                norandommap,
                ..JobSpec::default()
            })
        };
        assert_eq!(spec(true, true, false), RandomMap::NewOrder);
        assert_eq!(spec(false, false, false), RandomMap::NewOrder);
        assert_eq!(spec(false, true, false), RandomMap::SameOrder);
        assert_eq!(spec(true, true, true), RandomMap::Off);
    }

    #[test]
    fn sequential_wraps_and_bsrange_is_aligned() {
        let mut rng = SimRng::new(9, "off");
        let mut g = OffsetGen::new(
            8192,
            3 * 4096,
            4096,
            false,
            RandomMap::SameOrder,
            Distribution::Random,
            &mut rng,
        );
        let v: Vec<u64> = (0..4).map(|_| g.next(4096, &mut rng)).collect();
        assert_eq!(v, vec![8192, 12288, 16384, 8192]);
        // a sequential job starts at its offset, whatever the seed
        for seed in 0..16 {
            let mut rng = SimRng::new(seed, "off");
            let mut g = OffsetGen::new(
                1 << 20,
                1 << 30,
                4096,
                false,
                RandomMap::SameOrder,
                Distribution::Random,
                &mut rng,
            );
            assert_eq!(g.next(4096, &mut rng), 1 << 20, "seed {seed}");
        }
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
    fn priorities_as_fio_sets_them() {
        let prio = |args: &str| {
            let s = parse(args);
            JobParams::from_spec(&s[0], 0, 1 << 30, vec![], "p".into()).map(|(p, _)| p.prio)
        };
        // prio alone: class 0 is BE (ioprio_value()); prioclass alone: level 0
        let p = prio("--name=p --prio=3").unwrap();
        assert_eq!(p.task, Some(Ioprio::new(IoprioClass::Be, 3)));
        let p = prio("--name=p --prioclass=3").unwrap();
        assert_eq!(p.task, Some(Ioprio::new(IoprioClass::Idle, 0)));
        assert_eq!(prio("--name=p").unwrap(), JobPrio::default());
        // cmdprio: a percentage without a class is RT; `a,b` is read,write
        let p = prio("--name=p --ioengine=libaio --cmdprio_percentage=30,0 --cmdprio=2").unwrap();
        assert_eq!(p.cmdprio[0], Some((30, Ioprio::new(IoprioClass::Rt, 2))));
        assert_eq!(p.cmdprio[1], None);
        let p = prio("--name=p --ioengine=io_uring --cmdprio_percentage=100 --cmdprio_class=3")
            .unwrap();
        let mut rng = SimRng::new(1, "prio");
        assert_eq!(
            p.bio_ioprio(Dir::Write, &mut rng).class(),
            IoprioClass::Idle
        );
        // without cmdprio the bio carries NONE (the kernel gives it the task's)
        assert_eq!(
            JobPrio::default().bio_ioprio(Dir::Read, &mut rng),
            Ioprio::DEFAULT
        );
        // 30 %: about 300 of 1000 commands
        let p = prio("--name=p --ioengine=libaio --cmdprio_percentage=30").unwrap();
        let rt = (0..1000)
            .filter(|_| p.bio_ioprio(Dir::Read, &mut rng).class() == IoprioClass::Rt)
            .count();
        assert!((250..350).contains(&rt), "{rt}");
        // engine options of libaio/io_uring only
        let e = prio("--name=p --ioengine=psync --cmdprio_class=2").unwrap_err();
        assert!(e.contains("libaio and io_uring"), "{e}");
        assert!(parse_err("--name=p --cmdprio_class=0").contains("cmdprio_class"));
    }

    fn parse_err(args: &str) -> String {
        let a: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        crate::workload::fio::parse_cmdline(&a)
            .unwrap_err()
            .to_string()
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
