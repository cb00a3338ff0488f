//! The request pipeline (docs/design.md §2): fio jobs → bio-level policies → split →
//! the rq-qos chain → tag allocation → elevator → device → completion → fio reaps.
//!
//! Design
//! ------
//! The pipeline owns every layer and routes events between them. It knows the stack's
//! interfaces (`crate::stack`: [`BioPolicy`](crate::stack::BioPolicy),
//! [`RqQos`](crate::stack::RqQos), [`Elevator`](crate::stack::Elevator)), never a
//! policy: each hook is called at the point where the kernel calls it, and a policy's
//! timer event (`Event::Policy(id, token)`) goes back to the policy with that id.
//!
//! *Submission contexts.* Bios are pushed through the stack by a context: a fio job
//! (inside `io_submit()`/`pread()`) or the policies' dispatch worker (a kernel work
//! item, kthrotld). A context holds the bios it still has to push (the kernel's
//! `current->bio_list`) and can sleep — in an rq-qos entry (`rq_qos_throttle()`) or
//! waiting for a tag (`blk_mq_get_tag()`). While a fio job's context sleeps the job
//! cannot submit anything else, and the time lands in fio's slat. A bio-level policy
//! never sleeps the submitter: it holds the bio and the dispatch worker pushes it on
//! from the next stage later, so that wait lands in clat. Each bio records the
//! `Stage` it waits at; a woken bio goes on from the stage after it.
//!
//! *Issue time and split.* Past the bio-level policies a bio is counted for io.stat
//! (`blk_cgroup_bio_start()`) and stamped (`blkcg_bio_issue_init()`). A bio larger
//! than `max_sectors_kb` is then cut: the front piece goes on, the remainder is
//! processed next in the same context from the top of the stack, so the bio-level
//! policies see it again (`__bio_split_to_limits()` + `submit_bio_noacct()`).
//!
//! *Tags and the elevator.* `nr_requests` tags, of which the elevator's
//! `limit_depth` may allow a request fewer; a request records `alloc_time` (before
//! waiting for a tag) and `start_time` (tag obtained), which the rq-qos `done` hooks
//! use. Who gets a freed tag is sbitmap's rule (`crate::sim::sbitmap`): a submitter
//! that asks takes any free tag, sleepers or not; a free wakes sleepers in batches,
//! and a woken sleeper asks again `[host] tag_wakeup_ns` later (the interrupt's end
//! and the switch to it) and may sleep again. With `[host] cpus = 1` (the qemu guest's
//! one vCPU) a woken sleeper runs only once the fio jobs that completions woke to reap
//! have gone back to waiting (`run_tag_sleepers()`): on one CPU the woken tasks run
//! one after another, and the reaper, woken first by `bio_endio()`, resubmits first.
//! (Timers expiring a few µs apart complete in one `hrtimer_interrupt()`; requests one
//! queue run dispatches reach the device here at one instant and complete together.)
//! A request goes to the elevator and the queue is run (`blk_mq_run_hw_queue()`):
//! whatever it dispatches goes to the device.
//!
//! *fio.* Each job is a state machine mirroring fio's `do_io()` loop: rate check
//! (`rate_ddir()`, with inline-mode quiesce), submit (slat), reap only when the queue
//! is full (`wait_for_completions()`), thinktime after `thinktime_blocks` completions
//! (`handle_thinktime()`), and at the end wait for everything in flight. A completion
//! is reaped — and its clat ends — when the job next waits for completions, as in fio.
//!
//! *Host costs* ([`HostCosts`], a scenario's `[host]` table, `crate::scenario::host`):
//! CPU time the real stack spends around each I/O — on submission (slat; a 4 KiB cost
//! plus one per further page pinned), on completion (clat; likewise), and in fio's own
//! loop between reaping and the next I/O (in neither). They are what a QD1 job's IOPS
//! come down to on a fast device.
//!
//! *Faults.* A request the device fails, and every piece of a split bio, ends its fio
//! I/O with the first error (`bio_chain()`); fio's handling of a failed I/O (logged,
//! counted under `continue_on_error`, or stopping the job, which then waits for what
//! is in flight) is `JobRt::io_error()`. Removing the disk (`remove_disk()`, mirroring
//! `del_gendisk()`) marks it dead: bios fail at `bio_queue_enter()`, and a new
//! `io_submit()` sees a disk of size 0 (a read returns 0 bytes, a write ENOSPC);
//! what already entered the queue drains (requests at the driver, rq-qos and tag
//! waiters: `q_usage` counts them), then every policy exits: a bio-level one lets
//! its held bios go, to fail, the rq-qos chain stops.
//!
//! Where things live: contexts and the stack walk in `run_ctx()` (the rq-qos walk in
//! `rq_qos_throttle()`, policy timers in `on_policy_timer()`); the device side in
//! `start_request()` / `run_hw_queue()` / `on_device_done()`; fio jobs in
//! `job_step()`; sampling in `on_sample()`.

use crate::blkcg::ioprio::{Ioprio, IoprioClass, task_ioprio};
use crate::device::fault::BadblocksWrite;
use crate::device::{BlockDevice, DevRq, QueueLimits};
use crate::report::fio::JobStats;
use crate::report::fio::stats::ErrorStats;
use crate::report::fio::stats::LatHist;
use crate::scenario::host::HostCosts;
use crate::sim::inline_deque::InlineDeque;
use crate::sim::iostat::DevAcct;
use crate::sim::prefetch::{prefetch, prefetch_span};
use crate::sim::sbitmap::TagSet;
use crate::sim::timebins::TimeBins;
use crate::sim::{
    Bio, BioId, BioSlab, Dir, Event, EventQueue, IoErr, NSEC_PER_MSEC, NSEC_PER_SEC, Ns, SimRng,
};
use crate::stack::{PolicyId, Recorder, Request, Stack};
pub use crate::workload::job::JobParams;
use crate::workload::job::{BsGen, OffsetGen, RateDecision, RateState, RwMix};

/// How an I/O ended, as the completion event (aio `res`) tells fio.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum IoRes {
    /// Every byte transferred.
    #[default]
    Full,
    /// `res = 0`: a read at or past the end of the disk (a removed disk has size 0).
    Eof,
    Err(IoErr),
}

/// One fio I/O unit in flight.
#[derive(Debug, Clone, Default)]
struct IoU {
    job: u32,
    /// The job's cgroup (what the hints of its next I/O need, without its params).
    cgroup: u32,
    dir_write: bool,
    bytes: u64,
    /// Byte offset in the file (fio's error lines name it).
    offset: u64,
    res: IoRes,
    /// fio's io_u start_time.
    start: Ns,
    /// End of submission (slat end / clat start).
    issued: Ns,
    /// Pieces (bios) not yet completed.
    pieces: u32,
    /// io.stat has counted this I/O's bytes (split remainders count ios only).
    bytes_counted: bool,
}

/// Where a bio is on its way down; declared in pipeline order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    /// At the k-th bio-level policy (`submit_bio()`).
    Bio(u8),
    /// Past them: issue time, `bio_queue_enter()`, split. (The default: what an
    /// empty slot of a context's inline queue holds.)
    #[default]
    Split,
    /// At the k-th entry of the rq-qos chain (`rq_qos_throttle()`).
    RqQos(u8),
    /// Sleeping for a tag, or woken and about to ask again.
    Alloc,
}

/// A tag in use: its bio, when its submitter asked for it and when it got it.
#[derive(Debug, Clone, Copy)]
struct RqSlot {
    bio: BioId,
    alloc: Ns,
    start: Ns,
}

/// A submission context. With thousands of jobs each I/O finds its context cold, so
/// everything the stack walk reads, the first bios still to push included, shares
/// one cache line (`align(64)`).
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct Ctx {
    blocked: bool,
    wake_scheduled: bool,
    /// The fio job this context belongs to (None: the policies' dispatch worker).
    job: Option<u32>,
    /// When the bio at the front started to wait for a tag (its `alloc_time`).
    tag_wait_since: Ns,
    /// The bios still to push (`current->bio_list`): one, or two after a split.
    pending: InlineDeque<(BioId, Stage), 2>,
}

// the context's flags and its inline bios share the first cache line
const _: () = assert!(std::mem::size_of::<Ctx>() == 64);

/// What a job does next; mirrors the positions in fio's do_io() loop.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    NotStarted,
    /// Top of the loop: check the end, pick direction, rate.
    Loop,
    /// Issue in this direction now (after a rate sleep).
    Issue(Dir),
    /// io_submit() entered; the bio enters the block layer when the event fires.
    SubmitEnter(u32),
    /// Inside the block layer (context may be sleeping).
    InSubmit(u32),
    /// Waiting to reap at least one completion (queue full).
    Reap,
    /// io_u_quiesce(): wait for every in-flight I/O, then go on.
    Quiesce(AfterQuiesce),
    /// Sleeping (rate/thinktime); the job event resumes at `Loop`/`Issue`.
    Sleeping(Resume),
    /// Runtime over: waiting for everything in flight.
    Drain,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum AfterQuiesce {
    RateSleep(Ns, Dir),
    Think,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Resume {
    Loop,
    Issue(Dir),
}

/// One fio job's state. Laid out by hand, what every I/O touches first: with
/// thousands of jobs each I/O finds its job's lines cold, so the counters and the
/// phase the loop checks per I/O share the first cache line (`align(64)` starts
/// every job on one), the top of fio's loop the second; the generators and the
/// parameters fio's loop reads follow without a gap (the parameters last, their
/// per-I/O part first: `JobParams`), then fio's statistics, from a line boundary on
/// (which the records before them end on: no padding), then the rest.
#[repr(C, align(64))]
struct JobRt {
    // --- per I/O: the first line
    phase: Phase,
    /// Submitted and not yet reaped (fio's cur_depth).
    inflight: u32,
    wake_scheduled: bool,
    /// A fatal error stopped the job: it only waits for what is in flight.
    stopped: bool,
    /// Woken by a completion to reap and not yet waiting again (`[host] cpus = 1`).
    on_cpu: bool,
    blocks_counter: u64,
    last_think_blocks: u64,
    /// Completed at the device, not yet reaped (what a completion adds to).
    completed: InlineDeque<u32, 2>,
    // --- per I/O, the second line: the top of fio's loop
    end: Option<Ns>,
    issued_bytes: u64,
    /// Statistics start (after ramp_time).
    stats_start: Ns,
    next_sample: Ns,
    /// fio's epoch: when the job started (after startdelay).
    epoch: Ns,
    rng: SimRng,
    // --- per I/O, from the third line: the generators, the rate engine's and the
    // timeline's heads, the parameters' per-I/O part
    mix: RwMix,
    /// Completions over time (IOPS and mean latency pictures).
    timeline: TimeBins,
    rate: RateState,
    offsets: OffsetGen,
    p: JobParams,
    // --- fio's statistics, on a line boundary (each latency statistic a line)
    stats: JobStats,
    // --- the rest
    /// Host noise (sleep overshoot), a stream of its own so it never shifts offsets.
    host_rng: SimRng,
    /// fio's `prio_state`: the cmdprio draws (a stream of its own, drawn only with
    /// `cmdprio_percentage`).
    prio_rng: SimRng,
    finished_at: Ns,
}

// what a completion touches stays in the first cache line, the loop's in the second
const _: () = assert!(
    std::mem::offset_of!(JobRt, completed) + std::mem::size_of::<InlineDeque<u32, 2>>() <= 64
);
const _: () = assert!(std::mem::offset_of!(JobRt, stats_start) + 8 <= 128);
const _: () = assert!(std::mem::offset_of!(JobRt, mix) == 128);
// each latency statistic a cache line of its own (`LatStat`, `DdirStats`)
const _: () = assert!(std::mem::offset_of!(JobRt, stats).is_multiple_of(64));

/// Where fio meets a failed I/O, which decides its message and `td->verror`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrSite {
    /// Reaped from an async engine (`io_completed()`).
    Reap,
    /// Returned by a sync engine's read/write (`fio_io_end()`, then
    /// `break_on_this_error()`).
    Sync,
    /// A sync engine's read of 0 bytes (`io_queue_event()`: "full resid").
    FullResid,
}

impl ErrSite {
    fn of(sync_engine: bool) -> ErrSite {
        if sync_engine {
            ErrSite::Sync
        } else {
            ErrSite::Reap
        }
    }
}

impl JobRt {
    /// Hints the lines of this job that reaping a completion of direction `dir` and
    /// setting up the next I/O will read: the statistics (and the timeline, when kept)
    /// the reap updates, the loop's line, the generators and the parameters fio's loop
    /// reads.
    #[inline]
    fn prefetch_reap_and_loop(&self, dir: Dir, timeline: bool) {
        self.stats.prefetch_reap(dir);
        if timeline {
            prefetch(&self.timeline);
        }
        // the loop's line, the generators and the parameters' per-I/O part: one run of
        // lines
        prefetch_span(&self.end, &self.p.lat_percentiles);
    }

    /// Hints the job's first two lines: what its context reads of it when a bio of
    /// its goes on (the phase, the loop's line with `stats_start`).
    #[inline]
    fn prefetch_head(&self) {
        prefetch_span(&self.phase, &self.stats_start);
    }

    /// fio's handling of one failed I/O (`__io_u_log_error()`, `td_verror()`,
    /// `td_non_fatal_error()`, `break_on_this_error()`, `update_error_count()`):
    /// true when it stops the job. `continue_on_error` lets EIO pass (fio's default
    /// `ignore_error` list, EIO and EILSEQ), counting it; other errors stop the job.
    #[cold]
    fn io_error(
        &mut self,
        now: Ns,
        dir: Dir,
        err: IoErr,
        offset: u64,
        buflen: u64,
        site: ErrSite,
    ) -> bool {
        let bit = match dir {
            Dir::Read => 1,
            Dir::Write => 2,
        };
        let coe = self.p.continue_on_error & bit != 0;
        let non_fatal = coe && err == IoErr::Eio;
        let e = &mut self.stats.err;
        // __td_verror(): the first error sticks, its text only while none was counted
        let td_verror = |e: &mut ErrorStats, at: &str, func: &str| {
            if e.error == 0 {
                e.error = err.errno();
                if e.first_error == 0 {
                    e.verror = format!("file:{at}, func={func}, error={}", err.strerror());
                }
            }
        };
        if site != ErrSite::FullResid && !non_fatal {
            e.log.push((
                now,
                format!(
                    "fio: io_u error on file {}: {}: {} offset={offset}, buflen={buflen}",
                    self.p.filename,
                    err.strerror(),
                    dir.name()
                ),
            ));
            td_verror(e, "io_u.c:1876", "io_u error");
        }
        let count = |e: &mut ErrorStats| {
            e.total_err += 1;
            if e.total_err == 1 {
                e.first_error = err.errno();
            }
        };
        match site {
            ErrSite::Reap if non_fatal => {
                count(e);
                e.error = 0;
                false
            }
            ErrSite::Reap => true,
            ErrSite::Sync | ErrSite::FullResid => {
                if site == ErrSite::Sync {
                    td_verror(e, "engines/sync.c:126", "xfer");
                } else {
                    td_verror(e, "backend.c:471", "full resid");
                }
                if coe {
                    count(e);
                }
                if non_fatal {
                    e.error = 0;
                }
                !non_fatal
            }
        }
    }
}

/// Per-cgroup `io.stat` counters kept by blk-cgroup (`blk_cgroup_bio_start()`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgIoStat {
    pub rbytes: u64,
    pub wbytes: u64,
    pub rios: u64,
    pub wios: u64,
}

/// The finished run: per-job stats and the controllers' final state (the timelines
/// went to the [`Recorder`]).
pub struct RunOutput {
    pub jobs: Vec<(JobParams, JobStats, JobTimes)>,
    /// With [`Pipeline::record_job_timelines`]: each job's completions over time, in
    /// the order of `jobs` (else empty ones).
    pub job_timelines: Vec<TimeBins>,
    pub cg_stat: Vec<CgIoStat>,
    pub end: Ns,
    /// The policies as the run left them (io.stat keys, monitor views).
    pub stack: Stack,
    /// With [`Pipeline::record_device_latency`]: every request's time on the device
    /// (issue to the driver → completion), reads and writes.
    pub device_lat: Option<Box<[LatHist; 2]>>,
    /// The device model's counters of the whole run (`BlockDevice::run_counters`).
    pub device_counters: Vec<(&'static str, u64)>,
}

/// When a job ran, in simulated ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobTimes {
    pub epoch: Ns,
    pub stats_start: Ns,
    pub finished: Ns,
}

pub struct Pipeline {
    q: EventQueue,
    bios: BioSlab,
    ios: Vec<IoU>,
    free_ios: Vec<u32>,
    dev: Box<dyn BlockDevice>,
    limits: QueueLimits,
    max_bio_bytes: u64,
    stack: Stack,
    host: HostCosts,
    /// The tags (the scheduler's, with an elevator) and their sleepers: contexts.
    tags: TagSet<u32>,
    rqs: Vec<Option<RqSlot>>,
    /// Requests at the driver: at most `hw_queue_depth` (`blk_mq_get_driver_tag()`).
    dispatched: u32,
    ctxs: Vec<Ctx>,
    bio_ctx: Vec<u32>,
    jobs: Vec<JobRt>,
    dev_acct: DevAcct,
    cg_stat: Vec<CgIoStat>,
    scratch_done: Vec<u32>,
    scratch_ctxs: Vec<u32>,
    /// `[host] cpus = 1`: jobs woken by a completion that have not gone back to
    /// waiting (`JobRt::on_cpu`), and the tag sleepers woken meanwhile, in wake order,
    /// that run once there are none.
    reapers_on_cpu: u32,
    tag_sleepers_runnable: Vec<u32>,
    /// Jobs that have ended (the run stops when all have).
    jobs_done: usize,
    /// Jobs not started yet (waiting for their `after` jobs).
    nr_not_started: usize,
    scratch_bios: Vec<BioId>,
    duration: Option<Ns>,
    /// The disk is gone (`GD_DEAD`): bios fail at `bio_queue_enter()`.
    dead: bool,
    /// del_gendisk() is waiting for the queue to drain (`blk_mq_freeze_queue_wait()`).
    draining: bool,
    /// Bios past `bio_queue_enter()` and not yet completed (`q_usage_counter`).
    q_usage: u64,
    /// The device can fail requests: ask it how each one ended.
    dev_may_fail: bool,
    device_lat: Option<Box<[LatHist; 2]>>,
    /// [`Pipeline::record_job_timelines`]: each job's completions go into its
    /// `JobRt::timeline`.
    job_timelines: bool,
    /// Hint each next event's first lines ([`Pipeline::prefetch_next`]): set as the
    /// run starts, with a number of jobs in [`LOOKAHEAD_JOBS`] and a policy or elevator.
    lookahead: bool,
    /// Each cgroup's first job's context (0: none), the one a wake-up in that cgroup
    /// most likely resumes: for hints only, so made only when `lookahead` is set.
    cg_ctx: Vec<u32>,
}

const WORKER: u32 = 0;
/// With how many jobs each event hints the next event's first lines (when a policy or
/// elevator is on the path): from where the jobs' records outgrow the second-level
/// cache up to where they are far past the last level, beyond which every line comes
/// from memory and the hints' traffic costs more than the waits they hide. Measured here (simultaneous
/// pairs, blk-iocost, one cgroup per job), hinting on every run: one job 1.17× the CPU
/// time, 1,000 jobs 1.12×, 3,000 1.09×, 5,000 1.00×, 10,000 0.89×, 30,000 0.93×,
/// 60,000 0.96× (setup included), 100,000 1.04×.
const LOOKAHEAD_JOBS: std::ops::RangeInclusive<usize> = 8192..=65536;
const SAMPLE_TICK: Ns = 100 * NSEC_PER_MSEC;
const FIO_SAMPLE: Ns = 500 * NSEC_PER_MSEC;

impl Pipeline {
    /// About how many bytes a running pipeline takes for job `p`: its state, its I/O
    /// units, and its latency histograms as they fill (a few groups of 64 buckets per
    /// statistic). With [`Pipeline::CGROUP_MEMORY`] per cgroup, what a scenario is
    /// checked against before anything is allocated for it.
    pub fn job_memory(p: &JobParams) -> u64 {
        const HISTOGRAMS_AS_THEY_FILL: u64 = 16 << 10;
        std::mem::size_of::<JobRt>() as u64
            + HISTOGRAMS_AS_THEY_FILL
            + u64::from(p.iodepth) * std::mem::size_of::<IoU>() as u64
    }

    /// About how many bytes each cgroup takes (counters, controller state).
    pub const CGROUP_MEMORY: u64 = 1 << 10;

    pub fn new(
        dev: Box<dyn BlockDevice>,
        jobs: Vec<JobParams>,
        nr_cgroups: usize,
        host: HostCosts,
        seed: u64,
    ) -> Self {
        let limits = dev.limits().clone();
        let dev_may_fail = dev.may_fail();
        let tags = limits.nr_requests.max(1);
        let max_bio_bytes = (limits.max_sectors_kb.max(1) as u64) * 1024;
        let mut ctxs = vec![Ctx::default()];
        let jobs: Vec<JobRt> = jobs
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                ctxs.push(Ctx {
                    job: Some(i as u32),
                    ..Ctx::default()
                });
                let mut rng = SimRng::new(seed, &p.seed_name);
                let offsets = OffsetGen::new(
                    p.offset,
                    p.size,
                    p.align,
                    p.kind.random,
                    p.randommap,
                    p.distribution,
                    &mut rng,
                );
                let min_bs = [p.bs[0].min(), p.bs[1].min()];
                let mut rate = RateState::new(p.rate_bps, p.rate_iops, min_bs, p.rate_poisson);
                rate.bssplit = [
                    matches!(p.bs[0], BsGen::Split(_)),
                    matches!(p.bs[1], BsGen::Split(_)),
                ];
                let mut stats = JobStats::new(p.slat_percentiles, p.lat_percentiles);
                stats.err.coe = p.continue_on_error != 0;
                JobRt {
                    host_rng: SimRng::new(seed, &format!("{}/host", p.seed_name)),
                    prio_rng: SimRng::new(seed, &format!("{}/prio", p.seed_name)),
                    mix: RwMix::new(p.kind, p.rwmix_read),
                    stats,
                    timeline: TimeBins::default(),
                    rng,
                    offsets,
                    rate,
                    phase: Phase::NotStarted,
                    epoch: 0,
                    stats_start: 0,
                    end: None,
                    issued_bytes: 0,
                    inflight: 0,
                    completed: InlineDeque::default(),
                    blocks_counter: 0,
                    last_think_blocks: 0,
                    wake_scheduled: false,
                    next_sample: 0,
                    finished_at: 0,
                    stopped: false,
                    on_cpu: false,
                    p,
                }
            })
            .collect();
        let nr_jobs = jobs.len();
        Pipeline {
            q: EventQueue::new(),
            bios: BioSlab::default(),
            ios: Vec::new(),
            free_ios: Vec::new(),
            dev,
            max_bio_bytes,
            stack: Stack::default(),
            host,
            tags: TagSet::new(tags, None),
            rqs: vec![None; tags as usize],
            dispatched: 0,
            ctxs,
            bio_ctx: Vec::new(),
            jobs,
            dev_acct: DevAcct::default(),
            cg_stat: vec![CgIoStat::default(); nr_cgroups.max(1)],
            scratch_done: Vec::new(),
            scratch_ctxs: Vec::new(),
            reapers_on_cpu: 0,
            tag_sleepers_runnable: Vec::new(),
            jobs_done: 0,
            nr_not_started: nr_jobs,
            scratch_bios: Vec::new(),
            duration: None,
            dead: false,
            draining: false,
            q_usage: 0,
            dev_may_fail,
            device_lat: None,
            job_timelines: false,
            lookahead: false,
            cg_ctx: Vec::new(),
            limits,
        }
    }

    /// Stop the run at this time even if jobs are still running.
    pub fn set_duration(&mut self, d: Option<Ns>) {
        self.duration = d;
    }

    /// Keep each job's completions over time (`RunOutput::job_timelines`), for the
    /// pictures and `jobs.csv` of an output folder or a reader such as `tune protect`;
    /// a run that draws nothing of them does not pay a line per completion.
    pub fn record_job_timelines(&mut self) {
        self.job_timelines = true;
    }

    /// Record every request's time on the device, per direction, as resctl-demo's
    /// `biolatpcts.py` measures it by default (`on-device`: from `io_start_time_ns` to
    /// completion): `RunOutput::device_lat`.
    pub fn record_device_latency(&mut self) {
        self.device_lat = Some(Box::default());
    }

    /// The device's queue limits (for interface-file writes and reports).
    pub fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    /// A run-time `badblocks` write (configfs); Err if the model has no such list.
    pub fn write_badblocks(&mut self, w: BadblocksWrite) -> Result<(), String> {
        let list = self
            .dev
            .badblocks_mut()
            .ok_or("this device model has no badblocks attribute")?;
        list.write(w);
        self.dev_may_fail = true;
        Ok(())
    }

    /// The disk goes away (`del_gendisk()`): new bios fail at once; bios already in
    /// the queue (requests at the driver, rq-qos and tag waiters) drain as usual; then
    /// every policy exits: bio-level ones let their held bios go, to fail
    /// (`blk_throtl_cancel_bios()`), the rq-qos chain stops (`rq_qos_exit()`).
    pub fn remove_disk(&mut self) {
        if !self.dead {
            self.dead = true;
            self.draining = true;
            self.check_drained();
        }
    }

    /// The rest of del_gendisk() once `blk_mq_freeze_queue_wait()` returns.
    fn check_drained(&mut self) {
        if !self.draining || self.q_usage > 0 {
            return;
        }
        self.draining = false;
        let now = self.q.now();
        for p in self.stack.policies_mut() {
            p.exit(now, &mut self.q);
        }
    }

    /// The policies of the run, to adjust before it starts.
    pub fn stack_mut(&mut self) -> &mut Stack {
        &mut self.stack
    }

    /// The policies of the run (the pipeline starts with none and `none`).
    pub fn set_stack(&mut self, stack: Stack) {
        self.stack = stack;
        // blk_mq_init_sched(): the elevator's own tags
        // (and its sbitmap_queue_min_shallow_depth(): a wake-up batch larger than
        // the shallow depth would leave sleepers unwoken)
        if let Some(e) = self.stack.elevator.as_ref() {
            let n = e.nr_requests().unwrap_or(self.tags.depth());
            self.tags = TagSet::new(n, e.min_shallow_depth());
            self.rqs = vec![None; n.max(1) as usize];
        }
    }

    /// `queue/nr_requests` without an elevator, before the run starts
    /// (`blk_mq_update_nr_requests()` → `sbitmap_queue_resize()` of the driver's tags,
    /// which sizes the wake-up batch afresh): at most `nr` requests, all at the driver.
    pub fn resize_driver_tags(&mut self, nr: u32) {
        debug_assert!(self.stack.elevator.is_none() && self.q_usage == 0);
        self.tags = TagSet::new(nr, None);
        self.rqs = vec![None; nr.max(1) as usize];
        self.limits.nr_requests = nr;
    }

    /// `echo line > file` in cgroup `cg` now, to the policy that owns `file`.
    pub fn write_iface(
        &mut self,
        file: &str,
        cg: u32,
        line: &str,
        devs: &crate::blkcg::DeviceTable,
    ) -> Result<(), String> {
        let now = self.q.now();
        self.stack.write(now, file, cg, line, devs, &mut self.q)
    }

    /// Schedule a configuration event (`Event::Config(i)`); `run` hands it back to
    /// `on_config` at that time.
    pub fn schedule_config(&mut self, at: Ns, i: u32) {
        self.q.push(at, Event::Config(i));
    }

    /// Run until every job has ended (or the duration cap). `on_config` applies a
    /// scheduled interface write; `progress` is called once per simulated second with
    /// the simulated time and the bytes completed so far.
    pub fn run(
        mut self,
        mut on_config: impl FnMut(&mut Pipeline, u32),
        mut progress: impl FnMut(Ns, u64),
        rec: &mut dyn Recorder,
    ) -> RunOutput {
        // the hints pay where the records no longer fit in cache and something on the
        // path reorders the jobs: without one the tag queue serves them round robin, in
        // the order their records lie in memory, and the hardware prefetcher streams
        // them (10,000 jobs: 1.04× the CPU time with hints, against 0.89× under
        // blk-iocost)
        self.lookahead = LOOKAHEAD_JOBS.contains(&self.jobs.len()) && !self.stack.is_bare();
        if self.lookahead {
            self.cg_ctx = vec![0; self.cg_stat.len()];
            for (j, job) in self.jobs.iter().enumerate().rev() {
                if let Some(c) = self.cg_ctx.get_mut(job.p.cgroup as usize) {
                    *c = j as u32 + 1;
                }
            }
        }
        self.start_ready();
        self.q.push(SAMPLE_TICK, Event::Sample);
        let mut last_progress = 0;
        let mut capped_at = None;
        while let Some((now, ev)) = self.q.pop() {
            if let Some(d) = self.duration.filter(|&d| now > d) {
                capped_at = Some(d);
                break;
            }
            if self.lookahead {
                self.prefetch_next();
            }
            match ev {
                Event::Job(j) => {
                    self.jobs[j as usize].wake_scheduled = false;
                    self.job_step(j);
                }
                Event::Ctx(c) => {
                    self.ctxs[c as usize].wake_scheduled = false;
                    self.run_ctx(c);
                }
                Event::Device(token) => {
                    let mut done = std::mem::take(&mut self.scratch_done);
                    self.dev.on_event(now, token, &mut self.q, &mut done);
                    for &tag in &done {
                        self.on_device_done(tag);
                    }
                    done.clear();
                    self.scratch_done = done;
                }
                Event::Policy(id, token) => self.on_policy_timer(id, token),
                Event::Sample => {
                    let more = self.on_sample();
                    self.drain(rec);
                    if more {
                        self.q.push(now + SAMPLE_TICK, Event::Sample);
                    }
                }
                Event::Config(i) => on_config(&mut self, i),
            }
            if now >= last_progress + NSEC_PER_SEC {
                last_progress = now;
                progress(now, self.dev_acct.done_bytes);
            }
            if self.jobs_done == self.jobs.len() {
                break;
            }
        }
        let end = capped_at.unwrap_or_else(|| self.q.now());
        if let Some(cap) = capped_at {
            // the cap stops every fio still running, as a signal would: each reports
            // its I/O up to the cap
            for job in self.jobs.iter_mut().filter(|j| j.phase != Phase::Done) {
                if job.phase != Phase::NotStarted {
                    job.finished_at = cap;
                }
            }
        }
        self.dev_acct.advance(end);
        // a final partial second is reported only if it saw any completion
        let mut tail = std::mem::take(&mut self.dev_acct.cur);
        if tail.r_ios + tail.w_ios > 0 {
            tail.dev_cols = self.dev.stat_columns();
            self.dev.stat_row(&mut tail.dev_vals);
            self.dev_acct.rows.push(tail);
        }
        self.drain(rec);
        let job_timelines = self
            .jobs
            .iter_mut()
            .map(|j| std::mem::take(&mut j.timeline))
            .collect();
        let jobs = self
            .jobs
            .into_iter()
            .map(|j| {
                let times = JobTimes {
                    epoch: j.epoch,
                    stats_start: j.stats_start,
                    finished: j.finished_at,
                };
                (j.p, j.stats, times)
            })
            .collect();
        RunOutput {
            jobs,
            job_timelines,
            cg_stat: self.cg_stat,
            end,
            stack: self.stack,
            device_lat: self.device_lat,
            device_counters: self.dev.run_counters(),
        }
    }

    /// Hand every row and trace line made since the last call to `rec`.
    fn drain(&mut self, rec: &mut dyn Recorder) {
        for row in self.dev_acct.rows.drain(..) {
            rec.iostat(&row);
        }
        for p in self.stack.policies_mut() {
            p.drain(rec);
        }
        if let Some(e) = self.stack.elevator.as_mut() {
            e.drain(rec);
        }
    }

    /// Hint the first lines the next event reads, so that they load while this one
    /// runs: with thousands of cgroups each event starts with a miss on its job, its
    /// context or (a blk-iocost wait timer) its iocg, then on the job it resumes, and
    /// most events do not depend on the one before. Only with a number of jobs in
    /// [`LOOKAHEAD_JOBS`] (below it the second look at the queue costs more than the
    /// misses it hides, above it the hints' traffic does) and something on the path that
    /// reorders the jobs (`Pipeline::run`). Out of line: inlined, it cost every run's
    /// loop instructions (plain 10,000 jobs, callgrind: +1.0% against +0.3%) for a call
    /// only large runs make.
    #[inline(never)]
    fn prefetch_next(&mut self) {
        match self.q.peek_event() {
            Some(Event::Policy(id, token)) => {
                for p in self.stack.rq_qos.iter().filter(|p| p.get_ref().id() == id) {
                    // the sleeper it may wake: its cgroup's (first) job's
                    let woken = p.prefetch_timer(token);
                    if let Some(&c) = woken.and_then(|cg| self.cg_ctx.get(cg as usize)) {
                        self.prefetch_ctx(c);
                    }
                }
            }
            Some(Event::Ctx(c)) => self.prefetch_ctx(c),
            Some(Event::Job(j)) => prefetch(&self.jobs[j as usize]),
            _ => {}
        }
    }

    /// Hints context `c` and its job (context `j + 1` is job `j`'s).
    #[inline]
    fn prefetch_ctx(&self, c: u32) {
        if let Some(ctx) = self.ctxs.get(c as usize) {
            prefetch(ctx);
        }
        if let Some(job) = self.jobs.get((c as usize).wrapping_sub(1)) {
            job.prefetch_head();
        }
    }

    /// A policy's timer fired: bios a bio-level policy releases go on from the stage
    /// after it in the dispatch worker (kthrotld: `[host] workqueue_ns` later, so the
    /// wait is in clat); sleepers an rq-qos entry wakes go on in their own contexts.
    fn on_policy_timer(&mut self, id: PolicyId, token: u64) {
        let now = self.q.now();
        let mut out = std::mem::take(&mut self.scratch_bios);
        if let Some(i) = self.stack.bio.iter().position(|p| p.id() == id) {
            let p = &mut self.stack.bio[i];
            p.on_timer(now, token, &mut self.q, &mut self.bios, &mut out);
            if !out.is_empty() {
                let next = i + 1;
                for &b in &out {
                    let stage = if next < self.stack.bio.len() {
                        Stage::Bio(next as u8)
                    } else {
                        self.account_cg(b);
                        Stage::Split
                    };
                    self.ctxs[WORKER as usize].pending.push_back((b, stage));
                }
                self.kick_ctx(WORKER, self.host.workqueue_ns);
            }
        } else if let Some(k) = self
            .stack
            .rq_qos
            .iter()
            .position(|p| p.get_ref().id() == id)
        {
            let p = self.stack.rq_qos[k].get();
            p.on_timer(now, token, &mut self.q, &mut self.bios, &mut out);
            for &b in &out {
                self.rq_qos_woken(b, k);
            }
        }
        out.clear();
        self.scratch_bios = out;
    }

    // ----------------------------------------------------------------- contexts

    fn kick_ctx(&mut self, c: u32, delay: Ns) {
        let ctx = &mut self.ctxs[c as usize];
        if !ctx.wake_scheduled && !ctx.blocked {
            ctx.wake_scheduled = true;
            self.q.after(delay, Event::Ctx(c));
        }
    }

    /// Push the context's bios down the stack until it sleeps or has nothing left.
    /// A bio goes from the stage it is at straight through the later ones; only a bio
    /// that has to wait records the stage it waits at.
    fn run_ctx(&mut self, c: u32) {
        let now = self.q.now();
        loop {
            let ctx = &self.ctxs[c as usize];
            if ctx.blocked {
                return;
            }
            let Some(&(b, stage)) = ctx.pending.front() else {
                break;
            };
            if stage <= Stage::Split && self.dead {
                // bio_queue_enter() on a dead disk: bio_io_error(). (The kernel asks
                // the bio-level policies first; a bio one held fails when released.)
                self.ctxs[c as usize].pending.pop_front();
                if stage < Stage::Split {
                    self.account_cg(b);
                }
                let io = self.bios.get(b).io;
                self.bios.release(b);
                self.piece_done(io, Some(IoErr::Eio));
                continue;
            }
            if let Stage::Bio(first) = stage {
                // submit_bio(): the bio-level policies in order; one may hold the bio
                let held = self.stack.bio[first as usize..]
                    .iter_mut()
                    .any(|p| !p.submit(now, b, self.bios.get_mut(b), &mut self.q));
                if held {
                    self.ctxs[c as usize].pending.pop_front();
                    continue;
                }
                // blk_cgroup_bio_start()
                self.account_cg(b);
            }
            if stage <= Stage::Split {
                // blkcg_bio_issue_init(), bio_queue_enter(), then the split
                self.bios.get_mut(b).issue_time = now;
                self.q_usage += 1;
                self.split(c, b);
            }
            let from = match stage {
                Stage::RqQos(k) => k as usize,
                Stage::Alloc => self.stack.rq_qos.len(),
                _ => 0,
            };
            if let Some(k) = self.rq_qos_throttle(b, from, now) {
                self.set_bio_ctx(b, c);
                let ctx = &mut self.ctxs[c as usize];
                if let Some(front) = ctx.pending.front_mut() {
                    front.1 = Stage::RqQos(k as u8);
                }
                ctx.blocked = true;
                return;
            }
            // blk_mq_get_new_requests() → blk_mq_get_tag(): a tag within the
            // elevator's depth limit. A woken sleeper asks again (sbitmap_finish_wait()
            // then __blk_mq_get_tag()); the queue was run when its last request went
            // in or out, so blk_mq_run_hw_queue() before sleeping finds nothing to do.
            let since = if stage == Stage::Alloc {
                self.tags.finish_wait();
                self.ctxs[c as usize].tag_wait_since
            } else {
                now
            };
            if let Some(tag) = self.get_tag(b) {
                self.ctxs[c as usize].pending.pop_front();
                self.start_request(b, tag, since, now);
            } else {
                self.tags.prepare_to_wait(c);
                let ctx = &mut self.ctxs[c as usize];
                if let Some(front) = ctx.pending.front_mut() {
                    front.1 = Stage::Alloc;
                }
                ctx.tag_wait_since = since;
                ctx.blocked = true;
                return;
            }
        }
        if let Some(j) = self.ctxs[c as usize].job
            && let Phase::InSubmit(io) = self.jobs[j as usize].phase
        {
            // blkcg_maybe_throttle_current(): the delay on return to user space is
            // part of the syscall, so it lands in this I/O's slat
            // the I/O's own copy: the job's parameters are a cold line by now
            let cg = self.ios[io as usize].cgroup;
            let mut delay = 0;
            if self.stack.rq_qos_ops.user_delay {
                for p in &mut self.stack.rq_qos {
                    delay = delay.max(p.user_delay(now, cg));
                }
            }
            if delay > 0 {
                self.kick_ctx(c, delay);
            } else {
                self.submit_returned(j, io);
            }
        }
    }

    /// `rq_qos_throttle()` for `b` from chain entry `from` on: the entry its submitter
    /// must sleep at, if any. Other submitters whose waits an entry ended go on first.
    fn rq_qos_throttle(&mut self, b: BioId, from: usize, now: Ns) -> Option<usize> {
        for k in from..self.stack.rq_qos.len() {
            let mut woken = std::mem::take(&mut self.scratch_bios);
            let p = &mut self.stack.rq_qos[k];
            let go = p.throttle(now, b, &mut self.bios, &mut self.q, &mut woken);
            for &w in &woken {
                self.rq_qos_woken(w, k);
            }
            woken.clear();
            self.scratch_bios = woken;
            if !go {
                return Some(k);
            }
        }
        None
    }

    fn set_bio_ctx(&mut self, b: BioId, c: u32) {
        let i = b as usize;
        if self.bio_ctx.len() <= i {
            self.bio_ctx.resize(i + 1, 0);
        }
        self.bio_ctx[i] = c;
    }

    /// A sleeper of rq-qos entry `k` was woken: its context goes on with the next entry.
    fn rq_qos_woken(&mut self, b: BioId, k: usize) {
        let c = self.bio_ctx[b as usize];
        let ctx = &mut self.ctxs[c as usize];
        debug_assert_eq!(ctx.pending.front().map(|x| x.0), Some(b));
        if let Some(front) = ctx.pending.front_mut() {
            front.1 = Stage::RqQos(k as u8 + 1);
        }
        ctx.blocked = false;
        self.run_ctx(c);
    }

    /// Cut `b` to max_sectors_kb; the remainder is processed next, from the top.
    fn split(&mut self, c: u32, b: BioId) {
        let max = self.max_bio_bytes;
        if self.bios.get(b).bytes <= max {
            return;
        }
        let rest = self.bios.get_mut(b).split_off(max);
        self.ios[rest.io as usize].pieces += 1;
        let r = self.bios.alloc(rest);
        self.ctxs[c as usize].pending.insert(1, (r, Stage::Bio(0)));
    }

    fn account_cg(&mut self, b: BioId) {
        let bio = self.bios.get(b);
        let st = &mut self.cg_stat[bio.cgroup as usize];
        // bytes once per original bio, ios once per pass (remainders carry
        // bps_throttled and are not byte-counted again).
        let iou = &mut self.ios[bio.io as usize];
        let count_bytes = !iou.bytes_counted;
        iou.bytes_counted = true;
        let io_bytes = iou.bytes;
        match bio.dir {
            Dir::Read => {
                st.rios += 1;
                if count_bytes {
                    st.rbytes += io_bytes;
                }
            }
            Dir::Write => {
                st.wios += 1;
                if count_bytes {
                    st.wbytes += io_bytes;
                }
            }
        }
    }

    // ------------------------------------------------------------------ device

    /// A free tag for bio `b`, if one is left and the elevator's `limit_depth` lets
    /// its request have one more than are in use.
    fn get_tag(&mut self, b: BioId) -> Option<u32> {
        let dir = self.bios.get(b).dir;
        let shallow = self
            .stack
            .elevator
            .as_ref()
            .and_then(|e| e.limit_depth(dir));
        self.tags.get(shallow)
    }

    /// Bio `b` got `tag` (its submitter asked at `alloc`, got it at `start`): the
    /// request is tracked and handed to the elevator, and the queue is run; with
    /// `none` (no elevator) it goes to the driver at once
    /// (`blk_mq_try_issue_directly()`).
    fn start_request(&mut self, b: BioId, tag: u32, alloc: Ns, start: Ns) {
        let now = self.q.now();
        let slot = RqSlot {
            bio: b,
            alloc,
            start,
        };
        self.rqs[tag as usize] = Some(slot);
        let ops = self.stack.rq_qos_ops;
        if !ops.track && !ops.issue && self.stack.elevator.is_none() {
            // nothing hears of the request before the driver
            self.queue_rq(tag, b);
            return;
        }
        let rq = self.request(tag, slot);
        if ops.track {
            let bio = self.bios.get(b);
            for p in &mut self.stack.rq_qos {
                p.track(now, &rq, bio);
            }
        }
        let Some(e) = self.stack.elevator.as_mut() else {
            self.dispatch(&rq);
            return;
        };
        e.insert_requests(rq, now);
        // blk_account_io_start() at request allocation: iostat's in-flight (aqu-sz,
        // %util) counts requests waiting in the elevator too
        self.dev_acct.advance(now);
        self.dev_acct.inflight += 1;
        self.run_hw_queue();
    }

    /// `blk_mq_run_hw_queue()` with an elevator: every request it gives goes to the
    /// driver, while the driver has a tag for it (`hw_queue_depth`,
    /// `blk_mq_get_driver_tag()`); the rest wait in the elevator.
    #[inline(always)]
    fn run_hw_queue(&mut self) {
        if self.stack.elevator.is_none() {
            return;
        }
        let now = self.q.now();
        while self.dispatched < self.limits.hw_queue_depth.max(1)
            && let Some(e) = self.stack.elevator.as_mut()
            && e.has_work()
            && let Some(rq) = e.dispatch_request(now)
        {
            self.dispatch(&rq);
        }
    }

    /// The request of tag `tag` in use by `slot`, as the stack's hooks see it.
    #[inline(always)]
    fn request(&self, tag: u32, slot: RqSlot) -> Request {
        let bio = self.bios.get(slot.bio);
        Request {
            tag,
            bio: slot.bio,
            cgroup: bio.cgroup,
            dir: bio.dir,
            sector: bio.sector,
            bytes: bio.bytes,
            alloc_time: slot.alloc,
            start_time: slot.start,
            ioprio: bio.ioprio,
        }
    }

    /// `blk_mq_start_request()` (`rq_qos_issue()`), then the driver.
    fn dispatch(&mut self, rq: &Request) {
        let now = self.q.now();
        if self.stack.rq_qos_ops.issue {
            for p in &mut self.stack.rq_qos {
                p.issue(now, rq);
            }
        }
        self.queue_rq(rq.tag, rq.bio);
    }

    /// The driver's `queue_rq()`: request `tag` carrying bio `b` goes to the device.
    #[inline(always)]
    fn queue_rq(&mut self, tag: u32, b: BioId) {
        let now = self.q.now();
        // with an elevator the request was counted in flight when it got its tag
        if self.stack.elevator.is_none() {
            self.dev_acct.advance(now);
            self.dev_acct.inflight += 1;
        }
        self.dispatched += 1;
        let bio = self.bios.get(b);
        let d = DevRq {
            tag,
            dir: bio.dir,
            sector: bio.sector,
            bytes: bio.bytes,
        };
        // what the completion reads, a device service time from now: the I/O's record
        // and the rq-qos entries' per-cgroup ones (a request that waited for a tag
        // finds them cold: thousands of other I/Os ran since its submitter touched them)
        prefetch(&self.ios[bio.io as usize]);
        for p in &self.stack.rq_qos {
            p.prefetch_done(bio.cgroup);
        }
        self.dev.submit(now, d, &mut self.q);
    }

    fn on_device_done(&mut self, tag: u32) {
        let now = self.q.now();
        let Some(slot) = self.rqs[tag as usize].take() else {
            return;
        };
        let err = if self.dev_may_fail {
            self.dev.status(tag)
        } else {
            None
        };
        self.dev_acct.advance(now);
        self.dev_acct.inflight -= 1;
        self.dispatched -= 1;
        let bio = self.bios.get(slot.bio);
        let (dir, bytes, io) = (bio.dir, bio.bytes, bio.io);
        match dir {
            Dir::Read => {
                self.dev_acct.cur.r_ios += 1;
                self.dev_acct.cur.r_bytes += bytes;
                self.dev_acct.done_bytes += bytes;
            }
            Dir::Write => {
                self.dev_acct.cur.w_ios += 1;
                self.dev_acct.cur.w_bytes += bytes;
                self.dev_acct.done_bytes += bytes;
            }
        }
        if let Some(h) = self.device_lat.as_mut() {
            h[dir.idx()].add(now.saturating_sub(slot.start));
        }
        // blk_mq_end_request(): bio_endio() → rq_qos_done_bio(), then
        // __blk_mq_end_request() → rq_qos_done(), and the elevator hears of it. Each
        // entry hears both in one walk: entries share no state, so this is the
        // kernel's order as any entry sees it. Sleepers an entry wakes go on once this
        // completion is done.
        let ops = self.stack.rq_qos_ops;
        let mut woken_at: Vec<(BioId, usize)> = Vec::new();
        if ops.done_bio || ops.done || self.stack.elevator.is_some() {
            let rq = self.request(tag, slot);
            let mut woken = std::mem::take(&mut self.scratch_bios);
            for (k, p) in self.stack.rq_qos.iter_mut().enumerate() {
                p.done_bio(now, slot.bio, &self.bios, &mut self.q, &mut woken);
                if !woken.is_empty() {
                    // rare (an entry's waiters); an empty drain and extend cost ~90
                    // instructions per I/O
                    woken_at.extend(woken.drain(..).map(|b| (b, k)));
                }
                p.done(now, &rq);
            }
            self.scratch_bios = woken;
            if let Some(e) = self.stack.elevator.as_mut() {
                e.completed_request(&rq, now);
            }
        }
        self.bios.release(slot.bio);
        // the driver tag is free: blk_mq_sched_restart() runs the queue again
        self.run_hw_queue();
        // sbitmap_queue_clear(): the tag is free to whoever asks first; the sleepers
        // it wakes ask again once they run. On one CPU they run after the reaper this
        // completion wakes (bio_endio() woke it first, in __blk_mq_end_request())
        let one_cpu = self.host.cpus == 1;
        let mut woken = std::mem::take(&mut self.scratch_ctxs);
        self.tags.put(tag, &mut woken);
        for &c in &woken {
            self.ctxs[c as usize].blocked = false;
            self.prefetch_tag_retry(c);
            if one_cpu {
                self.tag_sleepers_runnable.push(c);
            } else {
                let delay = self.tag_wakeup(c);
                self.kick_ctx(c, delay);
            }
        }
        woken.clear();
        self.scratch_ctxs = woken;
        self.piece_done(io, err);
        if one_cpu {
            self.run_tag_sleepers();
        }
        self.q_usage -= 1;
        if !woken_at.is_empty() {
            for (b, k) in woken_at {
                self.rq_qos_woken(b, k);
            }
        }
        self.check_drained();
    }

    /// Hints what context `c`, woken for a tag, reads when it runs a little later and
    /// gets one: the bio it retries with, its job's first line and the job's submit
    /// counters.
    #[inline]
    fn prefetch_tag_retry(&self, c: u32) {
        let ctx = &self.ctxs[c as usize];
        if let Some(&(b, _)) = ctx.pending.front() {
            prefetch(self.bios.get(b));
        }
        if let Some(j) = ctx.job {
            let job = &self.jobs[j as usize];
            prefetch(job);
            job.stats.prefetch_submit();
        }
    }

    /// bio_endio() of one piece of fio I/O `io`: the I/O completes with its last
    /// piece, failed if any piece failed (`bio_chain()` keeps the first error).
    #[inline(always)]
    fn piece_done(&mut self, io: u32, err: Option<IoErr>) {
        let iou = &mut self.ios[io as usize];
        if let (Some(e), IoRes::Full) = (err, iou.res) {
            iou.res = IoRes::Err(e);
        }
        iou.pieces -= 1;
        if iou.pieces == 0 {
            let j = iou.job;
            let job = &mut self.jobs[j as usize];
            job.completed.push_back(io);
            if !job.p.thinktime_count_issue {
                job.blocks_counter += 1;
            }
            if matches!(job.phase, Phase::Reap | Phase::Quiesce(_) | Phase::Drain) {
                if self.host.cpus == 1 && !job.on_cpu {
                    job.on_cpu = true;
                    self.reapers_on_cpu += 1;
                }
                let dir = if iou.dir_write { Dir::Write } else { Dir::Read };
                job.prefetch_reap_and_loop(dir, self.job_timelines);
                // and what its next I/O's submission reads: the context, the cgroup's
                // io.stat counters and the rq-qos entries' per-cgroup records
                prefetch(&self.ctxs[(j + 1) as usize]);
                prefetch(&self.cg_stat[iou.cgroup as usize]);
                for p in &self.stack.rq_qos {
                    p.prefetch(iou.cgroup);
                }
                let cost = self.host.complete_cost(iou.bytes);
                self.wake_job(j, cost);
            }
        }
    }

    // -------------------------------------------------------------------- jobs

    fn wake_job(&mut self, j: u32, delay: Ns) {
        let job = &mut self.jobs[j as usize];
        if !job.wake_scheduled {
            job.wake_scheduled = true;
            self.q.after(delay, Event::Job(j));
        }
    }

    /// Start every job whose `after` jobs have all ended, in job order. Once every job
    /// has started this returns at once, so the end of each of N jobs costs O(1), not
    /// a walk over all N.
    fn start_ready(&mut self) {
        if self.nr_not_started == 0 {
            return;
        }
        let now = self.q.now();
        for j in 0..self.jobs.len() {
            if self.jobs[j].phase != Phase::NotStarted {
                continue;
            }
            let ready = self.jobs[j].p.after.iter().all(|&a| {
                self.jobs
                    .get(a as usize)
                    .is_none_or(|x| x.phase == Phase::Done)
            });
            if !ready {
                continue;
            }
            self.nr_not_started -= 1;
            let job = &mut self.jobs[j];
            let at = now + job.p.startdelay;
            job.epoch = at;
            job.stats_start = at + job.p.ramp;
            job.next_sample = job.stats_start + FIO_SAMPLE;
            job.end = job.p.runtime.map(|r| at + job.p.ramp + r);
            job.phase = Phase::Loop;
            job.wake_scheduled = true;
            self.q.push(at, Event::Job(j as u32));
        }
    }

    /// The tag sleepers woken while reapers ran ask again once none runs
    /// (`[host] cpus = 1`): the woken tasks run one after another.
    fn run_tag_sleepers(&mut self) {
        if self.reapers_on_cpu > 0 {
            return;
        }
        let mut woken = std::mem::take(&mut self.tag_sleepers_runnable);
        for &c in &woken {
            let delay = self.tag_wakeup(c);
            self.kick_ctx(c, delay);
        }
        woken.clear();
        self.tag_sleepers_runnable = woken;
    }

    /// Job `j`, woken by a completion, waits again (`[host] cpus = 1`).
    fn off_cpu(&mut self, j: u32) {
        let job = &mut self.jobs[j as usize];
        if job.on_cpu {
            job.on_cpu = false;
            self.reapers_on_cpu -= 1;
            self.run_tag_sleepers();
        }
    }

    /// The fio do_io() loop for job `j`, run until it has to wait or to spend time.
    fn job_step(&mut self, j: u32) {
        self.job_loop(j);
        let job = &self.jobs[j as usize];
        if !job.on_cpu {
            return;
        }
        // waiting again: for completions, a tag or an rq-qos entry; or over (a rate or
        // think sleep says so itself); still running while it spends host time
        let waits = match job.phase {
            Phase::Reap | Phase::Quiesce(_) | Phase::Drain => !job.wake_scheduled,
            Phase::InSubmit(_) => self.ctxs[(j + 1) as usize].blocked,
            Phase::NotStarted | Phase::Done => true,
            Phase::Loop | Phase::Issue(_) | Phase::SubmitEnter(_) | Phase::Sleeping(_) => false,
        };
        if waits {
            self.off_cpu(j);
        }
    }

    fn job_loop(&mut self, j: u32) {
        let now = self.q.now();
        loop {
            let job = &mut self.jobs[j as usize];
            // a fatal error: do_io() breaks out of its loop, cleanup_pending_aio()
            if job.stopped
                && matches!(
                    job.phase,
                    Phase::Loop
                        | Phase::Issue(_)
                        | Phase::Reap
                        | Phase::Quiesce(_)
                        | Phase::Sleeping(_)
                )
            {
                job.phase = Phase::Drain;
            }
            match job.phase {
                Phase::NotStarted | Phase::Done | Phase::InSubmit(_) => return,
                Phase::Sleeping(resume) => {
                    job.phase = match resume {
                        Resume::Loop => Phase::Loop,
                        Resume::Issue(d) => Phase::Issue(d),
                    };
                }
                Phase::Loop => {
                    let over_time = job.end.is_some_and(|e| now >= e);
                    let over_bytes = !job.p.time_based && job.issued_bytes >= job.p.io_limit;
                    if over_time || over_bytes {
                        job.phase = Phase::Drain;
                        continue;
                    }
                    let dir = job.mix.next_dir(&mut job.rng);
                    let go = if job.rate.active() {
                        let now_us = (now - job.epoch) / 1000;
                        let other_pct = if job.mix.is_mixed() {
                            match dir {
                                Dir::Read => 100 - job.p.rwmix_read,
                                Dir::Write => job.p.rwmix_read,
                            }
                        } else {
                            0
                        };
                        match job.rate.decide(dir, other_pct, now_us) {
                            RateDecision::Go(d) => {
                                job.mix.set_current(d);
                                d
                            }
                            RateDecision::SleepUntil(t, d) => {
                                job.mix.set_current(d);
                                let at = job.epoch + t;
                                job.phase = Phase::Quiesce(AfterQuiesce::RateSleep(at, d));
                                continue;
                            }
                        }
                    } else {
                        dir
                    };
                    // fio's own per-I/O work before the next I/O is set up
                    if self.host.fio_loop_ns > 0 {
                        job.phase = Phase::Sleeping(Resume::Issue(go));
                        self.wake_job(j, self.host.fio_loop_ns);
                        return;
                    }
                    job.phase = Phase::Issue(go);
                }
                Phase::Issue(dir) => {
                    let p = &job.p;
                    let bytes = p.bs[dir.idx()].next(&mut job.rng);
                    let offset = job.offsets.next(bytes, &mut job.rng);
                    let cgroup = p.cgroup;
                    let io = self.alloc_io(IoU {
                        job: j,
                        cgroup,
                        dir_write: dir == Dir::Write,
                        bytes,
                        offset,
                        res: IoRes::Full,
                        start: now,
                        issued: 0,
                        pieces: 1,
                        bytes_counted: false,
                    });
                    let job = &mut self.jobs[j as usize];
                    job.issued_bytes += bytes;
                    job.mix.issued(dir);
                    job.rate.issued(dir, bytes, &mut job.rng);
                    if job.p.thinktime_count_issue {
                        job.blocks_counter += 1;
                    }
                    job.phase = Phase::SubmitEnter(io);
                    let ioprio = job.p.prio.bio_ioprio(dir, &mut job.prio_rng);
                    let b = self.bios.alloc(bio_for(
                        &self.ios[io as usize],
                        io,
                        &job.p,
                        offset,
                        ioprio,
                    ));
                    self.ctxs[(j + 1) as usize]
                        .pending
                        .push_back((b, Stage::Bio(0)));
                    self.wake_job(j, self.host.submit_cost(bytes));
                    return;
                }
                Phase::SubmitEnter(io) if self.dead => {
                    job.phase = Phase::InSubmit(io);
                    self.submit_to_dead_disk(j, io);
                    return;
                }
                Phase::SubmitEnter(io) => {
                    job.phase = Phase::InSubmit(io);
                    // run_ctx calls submit_returned() when the context is through
                    self.run_ctx(j + 1);
                    return;
                }
                Phase::Reap => {
                    if job.completed.is_empty() {
                        return;
                    }
                    let max = job.p.reap_batch_max.max(1) as usize;
                    self.reap(j, max);
                    self.after_reap(j);
                }
                Phase::Quiesce(then) => {
                    if job.completed.len() as u32 != job.inflight {
                        return;
                    }
                    if job.inflight > 0 {
                        self.reap(j, usize::MAX);
                    }
                    let job = &mut self.jobs[j as usize];
                    if job.stopped {
                        continue;
                    }
                    match then {
                        AfterQuiesce::Think => {
                            job.last_think_blocks = job.blocks_counter;
                            let mut left = job.p.thinktime;
                            if let Some(e) = job.end {
                                left = left.min(e.saturating_sub(now));
                            }
                            job.phase = Phase::Sleeping(Resume::Loop);
                            if left > 0 {
                                let late = self.sleep_overshoot(j);
                                self.wake_job(j, left + late);
                                self.off_cpu(j);
                                return;
                            }
                        }
                        AfterQuiesce::RateSleep(at, d) => {
                            // rate_ddir(): a sleep past the end of the run ends the job
                            if job.end.is_some_and(|e| at > e) {
                                let e = job.end.unwrap_or(at);
                                job.phase = Phase::Sleeping(Resume::Loop);
                                let delay = e.saturating_sub(now);
                                self.wake_job(j, delay);
                                self.off_cpu(j);
                                return;
                            }
                            job.phase = Phase::Sleeping(Resume::Issue(d));
                            if at > now {
                                let late = self.sleep_overshoot(j);
                                self.wake_job(j, at - now + late);
                                self.off_cpu(j);
                                return;
                            }
                        }
                    }
                }
                Phase::Drain => {
                    if job.completed.len() as u32 != job.inflight {
                        return;
                    }
                    if job.inflight > 0 {
                        self.reap(j, usize::MAX);
                    }
                    self.finish_job(j);
                    return;
                }
            }
        }
    }

    /// How late a sleep of job `j` ends: timer slack plus scheduling noise (an
    /// exponential delay, then a rare slip), each drawn only when configured so that a
    /// host without it draws nothing.
    /// When woken tag sleeper `c` asks again: `tag_wakeup_ns`, and now and then a
    /// slip (`tag_wakeup_slip_*`) drawn from its job's host stream.
    fn tag_wakeup(&mut self, c: u32) -> Ns {
        let h = self.host;
        let mut delay = h.tag_wakeup_ns;
        if h.tag_wakeup_slip_ppm > 0
            && let Some(j) = self.ctxs[c as usize].job
        {
            let rng = &mut self.jobs[j as usize].host_rng;
            if rng.below(1_000_000) < u64::from(h.tag_wakeup_slip_ppm) {
                delay += (rng.unit_open0() * h.tag_wakeup_slip_ns as f64) as Ns;
            }
        }
        delay
    }

    fn sleep_overshoot(&mut self, j: u32) -> Ns {
        let h = self.host;
        let rng = &mut self.jobs[j as usize].host_rng;
        let mut late = h.timer_slack_ns;
        if h.wakeup_jitter_ns > 0 {
            let u = rng.unit_open0();
            late += (-(u.ln()) * h.wakeup_jitter_ns as f64) as Ns;
        }
        if h.wakeup_slip_ppm > 0 && rng.below(1_000_000) < u64::from(h.wakeup_slip_ppm) {
            late += (rng.unit_open0() * h.wakeup_slip_ns as f64) as Ns;
        }
        late
    }

    fn alloc_io(&mut self, io: IoU) -> u32 {
        if let Some(i) = self.free_ios.pop() {
            self.ios[i as usize] = io;
            i
        } else {
            self.ios.push(io);
            (self.ios.len() - 1) as u32
        }
    }

    /// io_submit() of job `j`'s I/O `io` on a removed disk: blkdev_read_iter() /
    /// blkdev_write_iter() see a disk of size 0 (del_gendisk() set it): a read
    /// returns 0 bytes, a write ENOSPC, completed inside io_submit() without a bio.
    #[cold]
    fn submit_to_dead_disk(&mut self, j: u32, io: u32) {
        if let Some((b, _)) = self.ctxs[(j + 1) as usize].pending.pop_front() {
            self.bios.release(b);
        }
        let iou = &mut self.ios[io as usize];
        iou.res = if iou.dir_write {
            IoRes::Err(IoErr::Enospc)
        } else {
            IoRes::Eof
        };
        self.piece_done(io, None);
        self.submit_returned(j, io);
    }

    /// io_submit() returned: slat ends, the I/O is in flight.
    #[inline(always)]
    fn submit_returned(&mut self, j: u32, io: u32) {
        let now = self.q.now();
        let iou = &mut self.ios[io as usize];
        iou.issued = now;
        let dir = if iou.dir_write { Dir::Write } else { Dir::Read };
        let slat = now - iou.start;
        let job = &mut self.jobs[j as usize];
        let logging = now >= job.stats_start;
        if job.p.sync_engine {
            // sync engines: the whole call is clat; no slat is recorded
            iou.issued = iou.start;
        } else if logging {
            job.stats.add_slat(dir, slat);
        }
        job.inflight += 1;
        job.stats.mark_submit(1);
        job.stats.mark_depth(job.inflight);
        let full = job.inflight >= job.p.iodepth.max(1);
        job.phase = if full { Phase::Reap } else { Phase::Loop };
        if !full {
            self.after_reap(j);
        }
        self.job_step(j);
    }

    /// After a submit or reap: fio's handle_thinktime() decision.
    fn after_reap(&mut self, j: u32) {
        let job = &mut self.jobs[j as usize];
        if job.phase == Phase::Reap {
            job.phase = Phase::Loop;
        }
        if job.p.thinktime > 0
            && job.blocks_counter >= job.last_think_blocks + job.p.thinktime_blocks.max(1) as u64
        {
            job.phase = Phase::Quiesce(AfterQuiesce::Think);
        }
    }

    /// Reap up to `max` completed I/Os, oldest first (io_u_queued_complete()). A full
    /// queue reaps at most `iodepth_batch_complete_max` — 1 by default, since fio lifts
    /// the unset max to the min — so a deep queue stays full, one reap per submit.
    /// A failed I/O that stops the job is followed by reaping what else has completed
    /// (`cleanup_pending_aio()`); the job then waits for the rest (`Phase::Drain`).
    fn reap(&mut self, j: u32, max: usize) {
        let now = self.q.now();
        let job = &mut self.jobs[j as usize];
        let n = job.completed.len().min(max);
        let logging = now >= job.stats_start;
        let was_stopped = job.stopped;
        for _ in 0..n {
            let Some(io) = job.completed.pop_front() else {
                break;
            };
            let iou = &self.ios[io as usize];
            let dir = if iou.dir_write { Dir::Write } else { Dir::Read };
            let res = iou.res;
            // a sync engine's read of 0 bytes is fio's "full resid" error
            let failed = match res {
                IoRes::Full => None,
                IoRes::Err(e) => Some((e, ErrSite::of(job.p.sync_engine))),
                IoRes::Eof if job.p.sync_engine => Some((IoErr::Eio, ErrSite::FullResid)),
                IoRes::Eof => None,
            };
            if let Some((e, site)) = failed {
                if logging {
                    job.stats.add_error(dir);
                }
                job.stopped |= job.io_error(now, dir, e, iou.offset, iou.bytes, site);
            } else if logging {
                let bytes = if res == IoRes::Full { iou.bytes } else { 0 };
                job.stats.add_clat(dir, now - iou.issued);
                job.stats.add_lat(dir, now - iou.start);
                job.stats.add_io(dir, bytes);
                if self.job_timelines {
                    job.timeline.add(now, now - iou.start);
                }
            }
            self.free_ios.push(io);
        }
        job.inflight -= n as u32;
        job.stats.mark_complete(n as u32);
        if job.stopped && !was_stopped && !job.completed.is_empty() {
            self.reap(j, usize::MAX);
        }
    }

    fn finish_job(&mut self, j: u32) {
        let now = self.q.now();
        let job = &mut self.jobs[j as usize];
        job.phase = Phase::Done;
        self.jobs_done += 1;
        job.finished_at = now;
        self.start_ready();
    }

    /// Periodic sampling; returns false once nothing is left to sample.
    fn on_sample(&mut self) -> bool {
        let now = self.q.now();
        for job in &mut self.jobs {
            if job.phase == Phase::NotStarted || job.phase == Phase::Done {
                continue;
            }
            // fio's log helper takes no sample at (or after) the end of the runtime:
            // a 2 s job has 3 bw samples, a 3 s job 5
            while job.next_sample <= now && job.end.is_none_or(|e| job.next_sample < e) {
                job.stats.sample(FIO_SAMPLE / NSEC_PER_MSEC);
                job.next_sample += FIO_SAMPLE;
            }
        }
        if now.is_multiple_of(NSEC_PER_SEC) {
            self.dev_acct.close_second(now);
            // the device model's own iostat columns for that second
            if let Some(row) = self.dev_acct.rows.last_mut() {
                row.dev_cols = self.dev.stat_columns();
                self.dev.stat_row(&mut row.dev_vals);
            }
        }
        for p in self.stack.policies_mut() {
            p.sample(now);
        }
        if let Some(e) = self.stack.elevator.as_mut() {
            e.sample(now);
        }
        self.jobs_done < self.jobs.len()
    }
}

/// The bio of fio I/O `io`, with the priority its command carries (`ioprio`: NONE
/// unless cmdprio chose one); `bio_set_ioprio()` then gives a class-NONE bio the job
/// thread's priority, and the bio-level policies (`io.prio.class`) may change it.
fn bio_for(iou: &IoU, io: u32, p: &JobParams, offset: u64, ioprio: Ioprio) -> Bio {
    let dir = if iou.dir_write { Dir::Write } else { Dir::Read };
    // a bio is whole 512-byte sectors (fio rejects unaligned O_DIRECT sizes; an odd
    // `bs` such as the linear-max RFC's 48607 is rounded up)
    let bytes = iou.bytes.div_ceil(512) * 512;
    let ioprio = if ioprio.class() == IoprioClass::None {
        task_ioprio(p.prio.task)
    } else {
        ioprio
    };
    Bio {
        meta: p.meta,
        io,
        ioprio,
        ..Bio::new(p.cgroup, dir, offset / 512, bytes, iou.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blkcg::CgroupTree;
    use crate::device::{BlockDevice, DevRq, QueueLimits};
    use crate::report::record::{Recorded, RunRecorder};
    use crate::workload::job::{Distribution, RandomMap, RwKind};
    use std::collections::VecDeque;

    /// A device that completes every request `lat` after it arrives.
    struct FixedLat {
        limits: QueueLimits,
        lat: Ns,
    }

    impl BlockDevice for FixedLat {
        fn limits(&self) -> &QueueLimits {
            &self.limits
        }
        fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) {
            q.push(now + self.lat, Event::Device(rq.tag as u64));
        }
        fn on_event(&mut self, _now: Ns, token: u64, _q: &mut EventQueue, done: &mut Vec<u32>) {
            done.push(token as u32);
        }
        fn model(&self) -> &'static str {
            "fixed"
        }
    }

    fn dev(lat: Ns, depth: u32) -> Box<dyn BlockDevice> {
        Box::new(FixedLat {
            limits: QueueLimits {
                major: 252,
                minor: 0,
                name: "test".into(),
                rotational: false,
                hw_queue_depth: depth,
                nr_requests: depth,
                max_sectors_kb: 128,
                logical_block_size: 512,
                capacity: 1 << 30,
            },
            lat,
        })
    }

    pub(crate) fn job(name: &str) -> JobParams {
        JobParams {
            name: name.into(),
            cgroup: 0,
            kind: RwKind {
                read: true,
                write: false,
                random: true,
            },
            rwmix_read: 100,
            bs: [BsGen::Fixed(4096), BsGen::Fixed(4096)],
            align: 4096,
            iodepth: 1,
            sync_engine: false,
            offset: 0,
            size: 1 << 30,
            io_limit: 1 << 30,
            time_based: true,
            runtime: Some(NSEC_PER_SEC),
            ramp: 0,
            startdelay: 0,
            rate_bps: [0, 0],
            rate_iops: [0, 0],
            rate_poisson: false,
            thinktime: 0,
            thinktime_blocks: 1,
            thinktime_count_issue: false,
            randommap: RandomMap::NewOrder,
            distribution: Distribution::Random,
            meta: false,
            prio: Default::default(),
            continue_on_error: 0,
            slat_percentiles: false,
            lat_percentiles: false,
            filename: "/dev/test".into(),
            after: Vec::new(),
            seed_name: name.into(),
            reap_batch_max: 1,
        }
    }

    fn run(jobs: Vec<JobParams>, lat: Ns, depth: u32) -> RunOutput {
        run_on(jobs, lat, depth, HostCosts::default())
    }

    fn run_on(jobs: Vec<JobParams>, lat: Ns, depth: u32, host: HostCosts) -> RunOutput {
        run_recorded(jobs, lat, depth, host).0
    }

    fn run_recorded(
        jobs: Vec<JobParams>,
        lat: Ns,
        depth: u32,
        host: HostCosts,
    ) -> (RunOutput, Recorded) {
        let p = Pipeline::new(dev(lat, depth), jobs, 1, host, 1);
        let mut rec = RunRecorder::keep_all(&CgroupTree::default());
        let out = p.run(|_, _| {}, |_, _| {}, &mut rec);
        (out, rec.finish().expect("nothing to write"))
    }

    #[test]
    fn big_ios_cost_per_page_and_fio_loop_paces_qd1() {
        let host = HostCosts {
            submit_page_ns: 400,
            complete_page_ns: 50,
            fio_loop_ns: 3_000,
            ..HostCosts::default()
        };
        let mut j = job("p");
        j.bs = [BsGen::Fixed(64 << 10), BsGen::Fixed(64 << 10)];
        let out = run_on(vec![j], 100_000, 64, host);
        let d = &out.jobs[0].1.dd[0];
        // 64 KiB: 15 pages beyond the first
        assert_eq!(d.slat.mean as u64, host.submit_ns + 15 * 400);
        assert_eq!(d.clat.mean as u64, 100_000 + host.complete_ns + 15 * 50);
        // the loop is in neither, but in every I/O's cycle
        let per_io = host.submit_cost(64 << 10) + 100_000 + host.complete_cost(64 << 10) + 3_000;
        let expect = NSEC_PER_SEC / per_io;
        assert!(
            d.total_ios.abs_diff(expect) <= expect / 100,
            "{}",
            d.total_ios
        );
    }

    #[test]
    fn qd1_iops_is_one_over_service_plus_host_costs() {
        let out = run(vec![job("a")], 100_000, 64);
        let st = &out.jobs[0].1;
        let per_io = 100_000 + HostCosts::default().submit_ns + HostCosts::default().complete_ns;
        let expect = NSEC_PER_SEC / per_io;
        let got = st.dd[0].total_ios;
        assert!(
            got.abs_diff(expect) <= expect / 100,
            "got {got}, expect {expect}"
        );
    }

    #[test]
    fn rate_iops_paces_a_deep_queue_at_depth_one() {
        let mut j = job("r");
        j.iodepth = 16;
        j.rate_iops = [100, 0];
        j.runtime = Some(10 * NSEC_PER_SEC);
        let out = run(vec![j], 50_000, 64);
        let ios = out.jobs[0].1.dd[0].total_ios;
        assert!((990..=1010).contains(&ios), "ios={ios}");
    }

    #[test]
    fn littles_law_holds_at_qd32() {
        let mut j = job("q");
        j.iodepth = 32;
        let out = run(vec![j], 200_000, 64);
        let st = &out.jobs[0].1;
        let iops = st.dd[0].total_ios as f64;
        let mean_lat = (st.dd[0].clat.mean + st.dd[0].slat.mean) / 1e9;
        let l = iops * mean_lat;
        assert!((l - 32.0).abs() < 0.5, "L={l}");
    }

    #[test]
    fn tag_exhaustion_lands_in_slat() {
        let mut j = job("t");
        j.iodepth = 8;
        let out = run(vec![j], 100_000, 2);
        let st = &out.jobs[0].1;
        let slat = st.dd[0].slat.mean as u64;
        // 2 tags, 100 µs service: a completion every 50 µs; the submitter sleeps in
        // blk_mq_get_tag() for the next one, so each submit waits ~50 µs (the job cannot
        // queue more while it sleeps).
        assert!((40_000..60_000).contains(&slat), "slat={slat}");
    }

    /// An elevator that lets one request hold a tag at a time (`limit_depth` 1), FIFO.
    #[derive(Default)]
    struct OneAtATime(VecDeque<Request>);

    impl crate::stack::Elevator for OneAtATime {
        fn name(&self) -> &'static str {
            "one-at-a-time"
        }
        fn limit_depth(&self, _dir: Dir) -> Option<u32> {
            Some(1)
        }
        fn min_shallow_depth(&self) -> Option<u32> {
            Some(1)
        }
        fn insert_requests(&mut self, rq: Request, _now: Ns) {
            self.0.push_back(rq);
        }
        fn has_work(&self) -> bool {
            !self.0.is_empty()
        }
        fn dispatch_request(&mut self, _now: Ns) -> Option<Request> {
            self.0.pop_front()
        }
    }

    #[test]
    fn an_elevator_depth_limit_makes_submitters_wait_for_a_tag() {
        let mut j = job("e");
        j.iodepth = 8;
        let mut p = Pipeline::new(dev(100_000, 64), vec![j], 1, HostCosts::default(), 1);
        p.set_stack(Stack {
            elevator: Some(Box::new(OneAtATime::default())),
            ..Stack::default()
        });
        let mut rec = RunRecorder::keep_all(&CgroupTree::default());
        let out = p.run(|_, _| {}, |_, _| {}, &mut rec);
        let d = &out.jobs[0].1.dd[0];
        // one request on the device at a time, 100 µs each: 10,000 IOPS, not QD8's
        // 80,000; the submitter sleeps for the tag, in slat
        assert!((9_500..=10_100).contains(&d.total_ios), "{}", d.total_ios);
        assert!(d.slat.mean > 50_000.0, "slat {}", d.slat.mean);
    }

    #[test]
    fn large_bios_split_and_complete_once() {
        let mut j = job("s");
        j.bs = [BsGen::Fixed(1 << 20), BsGen::Fixed(1 << 20)];
        j.align = 1 << 20;
        j.time_based = false;
        j.runtime = None;
        j.io_limit = 16 << 20;
        let (out, rec) = run_recorded(vec![j], 10_000, 64, HostCosts::default());
        assert_eq!(out.jobs[0].1.dd[0].total_ios, 16);
        let dev_ios: u64 = rec.iostat.iter().map(|r| r.r_ios).sum();
        assert_eq!(dev_ios, 16 * 8, "1 MiB bios split at 128 KiB");
        assert_eq!(out.cg_stat[0].rbytes, 16 << 20);
    }

    #[test]
    fn stonewalled_job_starts_when_its_predecessor_ends() {
        let mut a = job("a");
        a.runtime = Some(NSEC_PER_SEC / 2);
        let mut b = job("b");
        b.after = vec![0];
        let out = run(vec![a, b], 10_000, 8);
        let (ta, tb) = (out.jobs[0].2, out.jobs[1].2);
        assert_eq!(tb.epoch, ta.finished);
        assert!(ta.finished >= NSEC_PER_SEC / 2);
    }

    #[test]
    fn a_full_queue_reaps_one_completion_at_a_time() {
        // fio's default iodepth_batch_complete_max (lifted to the min, 1): the job
        // stays at full depth, one reap per submit
        let mut j = job("f");
        j.iodepth = 8;
        let out = run(vec![j], 100_000, 64);
        let st = &out.jobs[0].1;
        let reaps: u64 = st.io_u_complete.iter().sum();
        // every reap but the final drain took 1..4 events
        assert!(reaps - st.io_u_complete[1] <= 1, "{:?}", st.io_u_complete);
        let at_depth_8: u64 = st.io_u_map[3];
        let submits: u64 = st.io_u_map.iter().sum();
        assert!(at_depth_8 * 100 >= submits * 99, "{:?}", st.io_u_map);
    }

    #[test]
    fn bw_samples_every_500ms_but_not_at_the_end() {
        let mut j = job("s");
        j.runtime = Some(2 * NSEC_PER_SEC);
        let out = run(vec![j], 100_000, 8);
        // real fio 3.33: a 2 s job logs 3 bw/iops samples, a 3 s job 5
        assert_eq!(out.jobs[0].1.dd[0].bw.n, 3);
        assert_eq!(out.jobs[0].1.dd[0].iops.n, 3);
    }

    #[test]
    fn same_seed_same_result() {
        let a = run(vec![job("d")], 30_000, 4);
        let b = run(vec![job("d")], 30_000, 4);
        assert_eq!(a.jobs[0].1, b.jobs[0].1);
        assert_eq!(a.end, b.end);
    }
}
