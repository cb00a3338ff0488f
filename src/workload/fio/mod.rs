//! fio job files and command lines → resolved, typed job specs.
//!
//! The idea: read the text the way fio does (init.c `parse_jobs_ini()` for job files,
//! `parse_cmd_line()` for `--opt=value` arguments), then apply each option to a typed
//! [`JobSpec`] with fio's own value rules (parse.c) and defaults (options.c), so the job
//! runtime never sees a string.
//!
//! Moving parts:
//! - `syntax.rs`: lines → sections (`[global]`, `[job]`), comments, `include`, `${VAR}`
//!   and reserved `$pagesize`/`$mb_memory`/`$ncpus` expansion (job files only, as in
//!   fio; `${VAR}` is refused where the [`Reader`] turns the environment off, as
//!   scenarios do), bare booleans, the command line as fio's `getopt_long_only()`
//!   reads it ([`getopt_words`]); `numjobs` cloning and group id assignment (init.c
//!   `add_job()`). Errors name the file and line ([`Origin`] maps fio text inside a
//!   scenario to the scenario's lines) and never quote a line of an included file,
//!   which need not be a job file.
//! - `apply.rs`: one `key=value` onto a [`JobSpec`] (the option table), the fix-ups
//!   fio does after parsing (init.c `fixup_options()`), and the warning for options
//!   fio knows but we do not model.
//! - `units.rs`: sizes (`kb_base` and the IEC "opposite units" quirk), times,
//!   ranges, per-direction `read,write,trim` lists, arithmetic `( ... )`.
//! - `known.rs`: every option name fio knows (options.c + engines), to tell "known but
//!   unmodelled" (warning) from fio's "Bad option" (error).
//!
//! Order matters as in fio: a `[global]` section is applied to a global spec when it
//! is read, and each job starts from a copy of the global spec as it stands then.
//! Within one section, options are applied in fio's priority order (parse.c
//! `sort_options()`: `kb_base`/`unit_base` first, `filename`/`lockfile` last), so
//! `kb_base=1000` written after `bs=1m` still changes it; on the command line fio
//! applies options one at a time in order and so do we.

mod apply;
mod known;
mod syntax;
pub mod units;

pub use syntax::{
    Env, HONOURED_PROGRAM_OPTIONS, Origin, PROGRAM_OPTIONS, Reader, getopt_words, include_path,
    parse_cmdline, parse_cmdline_with, parse_jobfile, program_option,
};
pub use units::SizeOrPct;

/// The name fio's options.c gives option `key` (an alias folded, e.g. `blocksize` →
/// `bs`), or None when neither fio nor blkcg-sim knows it: what `sweep` rewrites a job's
/// option by, whichever spelling the job uses.
pub fn option_name(key: &str) -> Option<&str> {
    let name = apply::canonical(key);
    apply::is_known(name).then_some(name)
}

use crate::sim::Ns;
use crate::workload::iolog::{MergeOpts, ReplayOpts};

/// Simulated `$ncpus` (fixed so runs are reproducible on any host).
pub const SIM_NCPUS: u64 = 2;
/// Simulated `$pagesize`.
pub const SIM_PAGESIZE: u64 = 4096;
/// Simulated `$mb_memory` (total memory in MiB).
pub const SIM_MB_MEMORY: u64 = 8192;

/// A job file / command line error: `file:line: msg`. `line` is 1-based; for
/// command-line arguments `file` is `<cmdline>` and `line` is the argument index
/// (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {msg}")]
pub struct FioError {
    pub file: String,
    pub line: usize,
    /// What is wrong and what is accepted.
    pub msg: String,
}

/// Everything a job file (or command line) defines.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FioJobs {
    /// Options from `[global]` sections (and command-line options before the first
    /// `--name`), as written, in order.
    pub global_options: Vec<(String, String)>,
    /// Jobs in fio's order, `numjobs` clones expanded right after their parent.
    pub jobs: Vec<JobSpec>,
    /// Non-fatal notes: options fio knows that we do not model, fio quirks hit.
    /// Each is `file:line: text`.
    pub warnings: Vec<String>,
}

/// fio's stat logs of a job (`crate::sim::fio::statlog`): each asked-for log's prefix
/// (`Some("")`: the job's name), `log_avg_msec`, `log_max_value`, `per_job_logs`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatLogOpts {
    pub bw: Option<String>,
    pub lat: Option<String>,
    pub iops: Option<String>,
    pub avg_ms: u64,
    pub max_value: bool,
    /// `per_job_logs` (default 1): the job's number in each file name.
    pub per_job: bool,
}

/// Data direction index for the `[read, write, trim]` per-direction arrays.
pub const DDIR_READ: usize = 0;
/// See [`DDIR_READ`].
pub const DDIR_WRITE: usize = 1;
/// See [`DDIR_READ`].
pub const DDIR_TRIM: usize = 2;

/// `rw=` pattern (options.c `rw` posvals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential mixed reads and writes.
    ReadWrite,
    /// `randrw`: random mixed reads and writes.
    RandRw,
    /// `trimwrite`: trim a block then write it, sequentially.
    TrimWrite,
    /// `randtrimwrite`: like trimwrite at random offsets.
    RandTrimWrite,
}

impl RwMode {
    /// Random offsets (vs sequential).
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Self::RandRead | Self::RandWrite | Self::RandTrim | Self::RandRw | Self::RandTrimWrite
        )
    }
    /// Issues reads.
    pub fn reads(self) -> bool {
        matches!(
            self,
            Self::Read | Self::RandRead | Self::ReadWrite | Self::RandRw
        )
    }
    /// Issues writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Self::Write
                | Self::RandWrite
                | Self::ReadWrite
                | Self::RandRw
                | Self::TrimWrite
                | Self::RandTrimWrite
        )
    }
    /// Issues trims.
    pub fn trims(self) -> bool {
        matches!(
            self,
            Self::Trim | Self::RandTrim | Self::TrimWrite | Self::RandTrimWrite
        )
    }
}

/// `rw=...:N` suffix (fio `ddir_seq_nr` / `ddir_seq_add`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwSuffix {
    /// Random patterns: take a new random offset every N I/Os (`rw=randread:8`),
    /// `rw_sequencer=sequential` turns it into N sequential I/Os per random offset;
    /// `identical` repeats the same offset N times. Default 1.
    Every(u64),
    /// Sequential patterns: skip this many bytes after each I/O (`rw=write:4k`);
    /// negative seeks backwards (`rw=read:-8k`).
    Hole(i64),
}

/// `ioengine=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoEngine {
    Libaio,
    IoUring,
    Psync,
    Sync,
    Pvsync,
    Pvsync2,
    Null,
    Posixaio,
    Mmap,
    /// Any other engine name, stored as written (modelled as async).
    Other(String),
}

impl IoEngine {
    /// Synchronous engines (fio `FIO_SYNCIO`): one I/O at a time, depth forced to 1,
    /// submission latency not reported.
    pub fn is_sync(&self) -> bool {
        matches!(
            self,
            Self::Psync | Self::Sync | Self::Pvsync | Self::Pvsync2 | Self::Mmap
        )
    }

    /// Whether a job at `iodepth` runs synchronously: the sync engines, and the null
    /// engine at depth 1, which sets `FIO_SYNCIO` then (engines/null.c).
    pub fn is_sync_at(&self, iodepth: u32) -> bool {
        self.is_sync() || (*self == Self::Null && iodepth <= 1)
    }
}

/// One bssplit entry: `size` bytes chosen `pct` percent of the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsSplit {
    pub size: u64,
    pub pct: u32,
}

/// `random_distribution=`.
#[derive(Debug, Clone, PartialEq)]
pub enum RandomDist {
    /// Uniform (default).
    Random,
    /// `zipf[:θ[:center]]`, θ default 1.1, must not be 1.
    Zipf { theta: f64, center: Option<f64> },
    /// `pareto[:h[:center]]`, 0 < h < 1, default 0.2.
    Pareto { h: f64, center: Option<f64> },
    /// `normal[:σ[:center]]` (alias `gauss`), 0 <= σ < 100, default 0.
    Normal { sigma: f64, center: Option<f64> },
    /// `zoned:`/`zoned_abs:` per-direction lists of (access %, range %) or
    /// (access %, range bytes), stored as written per direction.
    Zoned { absolute: bool, spec: String },
}

/// `rate_process=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

/// `thinktime_blocks_type=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkBlocksType {
    /// Think after `thinktime_blocks` I/Os *completed* (default).
    Complete,
    /// Think after `thinktime_blocks` I/Os *issued*.
    Issue,
}

/// `unified_rw_reporting=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnifiedRw {
    /// `none`/`0`: per direction (default).
    None,
    /// `mixed`/`1`: one merged "mixed" direction.
    Mixed,
    /// `both`/`2`: per direction plus mixed.
    Both,
}

/// `fadvise_hint=`: what fio tells the kernel of a file when it opens it
/// (`td_io_open_file()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FadviseHint {
    /// `0`: nothing.
    None,
    /// `1` (default): `POSIX_FADV_RANDOM` for a random job, else
    /// `POSIX_FADV_SEQUENTIAL`.
    Pattern,
    Random,
    Sequential,
    /// `POSIX_FADV_NOREUSE`: no effect on readahead.
    Noreuse,
}

/// `sync_file_range=wait_before,write,wait_after:N`: the `SYNC_FILE_RANGE_*` flags
/// (`include/uapi/linux/fs.h`) and fio's `sync_file_range_nr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncFileRange {
    /// The bits of [`SyncFileRange::WAIT_BEFORE`], [`SyncFileRange::WRITE`],
    /// [`SyncFileRange::WAIT_AFTER`].
    pub flags: u8,
    /// After every this many writes issued (at least 1).
    pub every: u32,
}

impl SyncFileRange {
    pub const WAIT_BEFORE: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const WAIT_AFTER: u8 = 4;
    /// `SYNC_FILE_RANGE_WRITE_AND_WAIT`: the three together write as `WB_SYNC_ALL`.
    pub const WRITE_AND_WAIT: u8 = 7;
}

/// `io_submit_mode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitMode {
    Inline,
    Offload,
}

/// `startdelay=`: a value or a `lo-hi` range (fio draws uniformly per job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NsRange {
    pub lo: Ns,
    pub hi: Ns,
}

/// One job, fully resolved: every fio option we model, with fio's defaults
/// (options.c `.def`) for anything not given. Times are [`Ns`]; sizes bytes;
/// per-direction arrays are `[read, write, trim]`.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Job name (`[name]` / `--name=`); clones share it.
    pub name: String,
    /// Reporting group id as fio assigns it (init.c `add_job()`): starts at 0,
    /// incremented at a job with `stonewall` or `new_group` when the current group
    /// already has jobs.
    pub groupid: u32,
    /// 0 for the job itself, 1.. for `numjobs` clones (fio `subjob_number`).
    pub clone_index: u32,
    /// The job section's own options, exactly as written (fio JSON "job options").
    pub options: Vec<(String, String)>,
    /// `numjobs` as written (default 1; capped at 65536 here, fio has no cap);
    /// [`FioJobs::jobs`] already holds the clones, each with `numjobs = 1`.
    pub numjobs: u32,
    /// `rw`/`readwrite`, default `read`.
    pub rw: RwMode,
    /// `rw=mode:N` suffix, default `Every(1)`.
    pub rw_suffix: RwSuffix,
    /// `rwmixread` (0..=100), default 50; `rwmixwrite=x` sets `100-x`; later wins.
    pub rwmixread: u32,
    /// Min block size per direction (`bs`, `bsrange`, bssplit min), default 4096.
    pub bs_min: [u64; 3],
    /// Max block size per direction, default 4096.
    pub bs_max: [u64; 3],
    /// `bssplit` per direction in fio's order (options.c `bssplit_ddir()`: by the
    /// percentage written, ascending), each entry with its share of the I/Os as io_u.c
    /// `get_next_buflen()` draws them (the shares add to 100); empty = not used.
    pub bssplit: [Vec<BsSplit>; 3],
    /// `bs_unaligned`: sizes in a bsrange need not be multiples of the min.
    pub bs_unaligned: bool,
    /// `blockalign` per direction; 0 = default (align to min bs).
    pub blockalign: [u64; 3],
    /// `iodepth`, default 1 (1..=65535 here; fio has no upper bound, the cap keeps
    /// memory bounded); forced to 1 for sync engines (after fix-up).
    pub iodepth: u32,
    /// `iodepth_batch_submit` (alias `iodepth_batch`); default 1, 0 or > iodepth →
    /// iodepth (init.c `fixup_options()`).
    pub iodepth_batch_submit: u32,
    /// `iodepth_batch_complete_min` (alias `iodepth_batch_complete`), default 1.
    pub iodepth_batch_complete_min: u32,
    /// `iodepth_batch_complete_max`; raised to the min if below it.
    pub iodepth_batch_complete_max: u32,
    /// `iodepth_low`; 0 or > iodepth → iodepth.
    pub iodepth_low: u32,
    /// `ioengine`, default `psync`.
    pub ioengine: IoEngine,
    /// `direct` (O_DIRECT), default false; `buffered=0` sets it.
    pub direct: bool,
    /// `fsync=N` / `fdatasync=N`: a sync after every N writes issued (0: none).
    pub fsync: u32,
    pub fdatasync: u32,
    /// `end_fsync`: sync the file when the job's writes are done.
    pub end_fsync: bool,
    /// `sync_file_range=flags:N`: a `sync_file_range()` of the range written since
    /// the last sync, after every N writes issued.
    pub sync_file_range: Option<SyncFileRange>,
    /// `fadvise_hint`, default `1` (by the I/O pattern).
    pub fadvise_hint: FadviseHint,
    /// `invalidate`, default 1: drop the file's page cache when fio opens it (a block
    /// device: `BLKFLSBUF`).
    pub invalidate: bool,
    /// `size`: total bytes (or % of device) this job does per loop; `None` = whole
    /// file/device (`size=0` too, as in fio).
    pub size: Option<SizeOrPct>,
    /// `filesize` range (lo, hi); `None` = from `size`.
    pub filesize: Option<(u64, u64)>,
    /// `offset` start, default 0.
    pub offset: SizeOrPct,
    /// `io_size`/`io_limit`: total bytes to transfer; `None` (or 0) = `size`.
    pub io_size: Option<SizeOrPct>,
    /// `number_ios`: stop after this many I/Os; 0 = no limit.
    pub number_ios: u64,
    /// `loops`, default 1.
    pub loops: u32,
    /// `runtime` (default unit s); 0 = unlimited.
    pub runtime: Ns,
    /// `time_based`.
    pub time_based: bool,
    /// `ramp_time` (s): excluded from stats.
    pub ramp_time: Ns,
    /// `startdelay` (s), value or range.
    pub startdelay: NsRange,
    /// `rate` bytes/s per direction; 0 = none.
    pub rate: [u64; 3],
    /// `rate_min` bytes/s per direction.
    pub rate_min: [u64; 3],
    /// `rate_iops` per direction.
    pub rate_iops: [u64; 3],
    /// `rate_iops_min` per direction.
    pub rate_iops_min: [u64; 3],
    /// `rate_process`, default linear.
    pub rate_process: RateProcess,
    /// `rate_ignore_thinktime`.
    pub rate_ignore_thinktime: bool,
    /// `rate_cycle` (ms default unit in fio; stored as Ns), default 1000 ms.
    pub rate_cycle: Ns,
    /// `thinktime` (µs default unit).
    pub thinktime: Ns,
    /// `thinktime_spin` (µs); capped at thinktime.
    pub thinktime_spin: Ns,
    /// `thinktime_blocks`, default 1.
    pub thinktime_blocks: u32,
    /// `thinktime_blocks_type`, default complete.
    pub thinktime_blocks_type: ThinkBlocksType,
    /// `thinktime_iotime` (s default unit): think every this much I/O time; 0 = off.
    pub thinktime_iotime: Ns,
    /// `norandommap`.
    pub norandommap: bool,
    /// `randrepeat`, default true.
    pub randrepeat: bool,
    /// `randseed`, default 0x89 (options.c). fio derives per-job seeds from it
    /// and the job number (init.c `setup_random_seeds()`).
    pub randseed: u64,
    /// Whether `randseed` was given. With `randrepeat=0` and no `randseed`, fio
    /// seeds from the system RNG (a different run each time); a deterministic
    /// simulator should then derive a seed from the scenario seed instead.
    pub randseed_set: bool,
    /// `random_distribution`, default uniform.
    pub random_distribution: RandomDist,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `unified_rw_reporting`, default none.
    pub unified_rw_reporting: UnifiedRw,
    /// `percentile_list` (at most 20 entries), default fio's 17.
    pub percentile_list: Vec<f64>,
    /// `clat_percentiles`, default true.
    pub clat_percentiles: bool,
    /// `lat_percentiles`, default false.
    pub lat_percentiles: bool,
    /// `slat_percentiles`, default false.
    pub slat_percentiles: bool,
    /// `bwavgtime` (ms unit), default 500 ms.
    pub bwavgtime: Ns,
    /// `iopsavgtime` (ms unit), default 500 ms.
    pub iopsavgtime: Ns,
    /// `kb_base` (1024 or 1000), default 1024.
    pub kb_base: u64,
    /// `unit_base`: 0 auto, 8 bits, 1 bytes. Default 0.
    pub unit_base: u32,
    /// `significant_figures` (1..=10), default 4.
    pub significant_figures: u32,
    /// `stonewall`/`wait_for_previous`: wait for earlier jobs to finish; starts a
    /// new group.
    pub stonewall: bool,
    /// `new_group`.
    pub new_group: bool,
    /// `wait_for=<job name>`.
    pub wait_for: Option<String>,
    /// `cgroup=<name>`: the cgroup path (relative to the root) the job runs in.
    pub cgroup: Option<String>,
    /// `cgroup_nodelete`.
    pub cgroup_nodelete: bool,
    /// `filename` as written (`:`-separated list in fio).
    pub filename: Option<String>,
    /// `continue_on_error`: which errors the job counts and goes on after, as fio's
    /// `error_type` bits (read 1, write 2, verify 4; `all` sets every bit), default none.
    pub continue_on_error: u32,
    /// `description`.
    pub description: Option<String>,
    /// `io_submit_mode`, default inline.
    pub io_submit_mode: SubmitMode,
    /// `prio` (0..=7), stored.
    pub prio: Option<u32>,
    /// `prioclass` (0..=3), stored.
    pub prioclass: Option<u32>,
    /// `cmdprio_percentage` per direction (0..=100; libaio and io_uring only).
    pub cmdprio_percentage: [Option<u32>; 3],
    /// `cmdprio_class` per direction (1..=3; RT when a percentage is set without it).
    pub cmdprio_class: [Option<u32>; 3],
    /// `cmdprio` (the level, 0..=7) per direction.
    pub cmdprio: [Option<u32>; 3],
    /// `read_iolog`: the log(s) the job replays instead of generating I/O
    /// (`:`-separated, one per `numjobs` clone: `crate::workload::iolog`).
    pub read_iolog: Option<String>,
    /// The `replay_*` options and `read_iolog_chunked`.
    pub replay: ReplayOpts,
    /// `merge_blktrace_file`: the `read_iolog` traces are merged into one by time
    /// (`merge_blktrace_scalars`, `merge_blktrace_iters`: per trace, as written).
    pub merge_blktrace: Option<MergeOpts>,
    /// `write_iolog`: the file (in the run's output folder) the job's I/O log is
    /// written to.
    pub write_iolog: Option<String>,
    /// `write_bw_log`, `write_lat_log`, `write_iops_log` and their options.
    pub stat_logs: StatLogOpts,
    /// Whether `iodepth` was given: a blktrace's probed depth applies only when not.
    pub iodepth_set: bool,
    /// blkcg-sim extension, not an fio option: `blkcg_meta=bool` marks the job's
    /// bios REQ_META (filesystem metadata), which controllers must not block
    /// (blk-iocost/blk-throttle let such bios through, charging debt instead).
    pub blkcg_meta: bool,
}

/// fio's default `randseed` (options.c `.def = "0x89"`).
pub const FIO_DEFAULT_RANDSEED: u64 = 0x89;

/// fio's default `percentile_list` (options.c).
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

impl JobSpec {
    /// What the kernel makes of the job's `fadvise_hint` (`generic_fadvise()`).
    pub fn fadvise(&self) -> crate::writeback::readahead::Fadvise {
        use crate::writeback::readahead::Fadvise;
        match self.fadvise_hint {
            FadviseHint::None | FadviseHint::Noreuse => Fadvise::Normal,
            FadviseHint::Random => Fadvise::Random,
            FadviseHint::Sequential => Fadvise::Sequential,
            FadviseHint::Pattern if self.rw.is_random() => Fadvise::Random,
            FadviseHint::Pattern => Fadvise::Sequential,
        }
    }
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            groupid: 0,
            clone_index: 0,
            options: Vec::new(),
            numjobs: 1,
            rw: RwMode::Read,
            rw_suffix: RwSuffix::Every(1),
            rwmixread: 50,
            bs_min: [4096; 3],
            bs_max: [4096; 3],
            bssplit: [Vec::new(), Vec::new(), Vec::new()],
            bs_unaligned: false,
            blockalign: [0; 3],
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 0,
            iodepth_low: 0,
            ioengine: IoEngine::Psync,
            direct: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            sync_file_range: None,
            fadvise_hint: FadviseHint::Pattern,
            invalidate: true,
            size: None,
            filesize: None,
            offset: SizeOrPct::Bytes(0),
            io_size: None,
            number_ios: 0,
            loops: 1,
            runtime: 0,
            time_based: false,
            ramp_time: 0,
            startdelay: NsRange { lo: 0, hi: 0 },
            rate: [0; 3],
            rate_min: [0; 3],
            rate_iops: [0; 3],
            rate_iops_min: [0; 3],
            rate_process: RateProcess::Linear,
            rate_ignore_thinktime: false,
            rate_cycle: 1_000_000_000,
            thinktime: 0,
            thinktime_spin: 0,
            thinktime_blocks: 1,
            thinktime_blocks_type: ThinkBlocksType::Complete,
            thinktime_iotime: 0,
            norandommap: false,
            randrepeat: true,
            randseed: FIO_DEFAULT_RANDSEED,
            randseed_set: false,
            random_distribution: RandomDist::Random,
            group_reporting: false,
            unified_rw_reporting: UnifiedRw::None,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            bwavgtime: 500_000_000,
            iopsavgtime: 500_000_000,
            kb_base: 1024,
            unit_base: 0,
            significant_figures: 4,
            stonewall: false,
            new_group: false,
            wait_for: None,
            cgroup: None,
            cgroup_nodelete: false,
            filename: None,
            continue_on_error: 0,
            description: None,
            io_submit_mode: SubmitMode::Inline,
            prio: None,
            prioclass: None,
            cmdprio_percentage: [None; 3],
            cmdprio_class: [None; 3],
            cmdprio: [None; 3],
            read_iolog: None,
            replay: ReplayOpts::default(),
            merge_blktrace: None,
            write_iolog: None,
            stat_logs: StatLogOpts {
                per_job: true,
                ..StatLogOpts::default()
            },
            iodepth_set: false,
            blkcg_meta: false,
        }
    }
}
