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
//! `limit_depth` may allow a request fewer — decided once, when the bio first asks,
//! and kept through every sleep for a tag (`data->shallow_depth`, set in
//! `__blk_mq_alloc_requests()` before `blk_mq_get_tag()`); a request records
//! `alloc_time` (before waiting for a tag) and `start_time` (tag obtained), which the
//! rq-qos `done` hooks use. Who gets a freed tag is sbitmap's rule (`crate::sim::sbitmap`): a submitter
//! that asks takes any free tag, sleepers or not; a free wakes sleepers in batches,
//! and a woken sleeper asks again `[host] tag_wakeup_ns` later (the interrupt's end
//! and the switch to it) and may sleep again. With `[host] cpus = 1` (the qemu guest's
//! one vCPU) that retry, like every host cost of a job, is CPU time the guest's fair
//! scheduler hands out (`crate::sim::cpu`): the reaper, woken first by `bio_endio()`,
//! usually resubmits first, unless the scheduler prefers the sleeper.
//! (Timers expiring a few µs apart complete in one `hrtimer_interrupt()`; requests one
//! queue run dispatches reach the device here at one instant and complete together.)
//! A request goes to the elevator and the queue is run (`blk_mq_run_hw_queue()`):
//! whatever it dispatches goes to the device. Who runs it is `crate::sim::plug`'s
//! answer: the submitting context, or kblockd (`Event::QueueRun`, `[host]
//! workqueue_ns` later: `kblockd_run_queue()`; on one CPU when the CPU picks its
//! kworker, `kworker_wake()`), for which the submitter's call waits;
//! with `none` such a request waits in `sw_queue` until then. kblockd's run is one
//! work item (`run_work`): a request left to it brings a pending delayed run forward.
//! A request the elevator gave without a driver tag waits on `hctx_dispatch`, served
//! first by the next run; a completion runs the queue again (by kblockd) only when a
//! run found no driver tag (`sched_restart`, `blk_mq_sched_restart()`); a run the
//! elevator gave nothing although it holds requests arms a delayed run 3 ms on
//! (`delay_run_hw_queue()`, `BLK_MQ_BUDGET_DELAY`) — unless the run dispatched a
//! request the driver ended inside `->queue_rq()`: the elevator is asked again once
//! that completion is done (`rerun_hw_queue()`, `blk_mq_do_dispatch_sched()`'s next
//! round); a submitter out of tags runs the
//! queue itself before it sleeps and when woken (`blk_mq_get_tag()`) — so a request
//! mq-deadline holds back behind a higher priority waits for the next of those runs. A
//! driver that stops its queue (`Completion::Requeued`: null_blk over its `mbps`
//! grant) gets the refused request back on `hctx_dispatch` and no run dispatches
//! (`hw_stopped`) until its restart's kblockd run (`BlockDevice::restarted`).
//!
//! *Merges.* A bio that can join a request waiting in the elevator does so past the
//! split, before the rq-qos chain, and takes no tag; a new request may join one
//! before it is inserted (`crate::sim::merge`). A request's bios are a chain
//! (`Bio::next`); its completion ends each of them, first to last.
//!
//! *fio.* The jobs are `crate::sim::fio`'s state machines (fio's `do_io()` loop, its
//! I/O units and statistics): a job's I/O enters here as a bio pushed by the job's
//! context, and leaves by `piece_done()` when its last piece completes.
//!
//! *Host costs* ([`HostCosts`], a scenario's `[host]` table, `crate::scenario::host`):
//! CPU time the real stack spends around each I/O — on submission (slat; a 4 KiB cost
//! plus one per further page pinned), on completion (clat; likewise), and in fio's own
//! loop between reaping and the next I/O (in neither). They are what a QD1 job's IOPS
//! come down to on a fast device. A request the driver ends inside `->queue_rq()`
//! ([`Completion::Inline`], null_blk's softirq mode) has its completion path paid by
//! the context that dispatched it (`inline_complete_ns`, `run_ctx()`): a job's own
//! request is done when its call returns, and fio reaps it for `reap_ns`
//! (`crate::sim::fio`). Each cost is a delay of its own (`run_for()`,
//! `ctx_run_for()`), unless `[host] cpus = 1`: then it is a burst on the one CPU the
//! contexts share, run when the kernel's fair class picks its context
//! (`crate::sim::cpu`: `Event::CpuBurst` ends a burst, `Event::CpuTick` is the
//! scheduler tick), and every wake-up of a context (a timer, a tag, an rq-qos entry,
//! kblockd's run) waits to be picked too.
//!
//! *Faults.* A request the device fails, and every piece of a split bio, ends its fio
//! I/O with the first error (`bio_chain()`); fio's handling of a failed I/O (logged,
//! counted under `continue_on_error`, or stopping the job, which then waits for what
//! is in flight) is `crate::sim::fio`'s. Removing the disk (`remove_disk()`, mirroring
//! `del_gendisk()`) marks it dead: bios fail at `bio_queue_enter()`, and a new
//! `io_submit()` sees a disk of size 0 (a read returns 0 bytes, a write ENOSPC);
//! what already entered the queue drains (requests at the driver, rq-qos and tag
//! waiters: `q_usage` counts them), then every policy exits: a bio-level one lets
//! its held bios go, to fail, the rq-qos chain stops.
//!
//! Where things live: contexts and the stack walk in `run_ctx()` (the rq-qos walk in
//! `rq_qos_throttle()`, policy timers in `on_policy_timer()`); the device side in
//! `start_request()` / `run_hw_queue()` / `on_device_done()`; sampling in
//! `on_sample()`. Elsewhere: the fio jobs (`job_step()`, `piece_done()`,
//! `submit_returned()`) in `crate::sim::fio`, the device's per-second accounting in
//! `crate::sim::iostat`, the host's costs in `crate::scenario::host`, the page cache's
//! side in `crate::sim::writeback`. Every place that changes a context's state
//! (its job's phase, a sleep, pending CPU work) marks it, and the event loop ends each
//! event with the PSI flush of the marked contexts (`crate::sim::pressure`).

use std::ops::ControlFlow;

use crate::device::fault::BadblocksWrite;
use crate::device::{BlockDevice, Completion, DevRq, QueueLimits};
use crate::psi::{Psi, TaskState};
use crate::scenario::host::HostCosts;
use crate::sim::cpu::{FairSched, GuestCpu};
use crate::sim::fio::stats::{JobStats, LatHist};
use crate::sim::fio::{FIO_SAMPLE, IoKind, IoU, JobRt, JobTimes, Phase};
use crate::sim::inline_deque::InlineDeque;
use crate::sim::iostat::DevAcct;
use crate::sim::jiffies;
use crate::sim::merge::{NoMerges, RqHash, nr_segs};
use crate::sim::plug::{self, BlkMqBehaviour, QueueRun};
use crate::sim::prefetch::prefetch;
use crate::sim::rng::SimRng;
use crate::sim::sbitmap::{Sbitmap, Shallow, TagSet};
use crate::sim::timebins::TimeBins;
use crate::sim::writeback::PageCache;
use crate::sim::{
    Bio, BioId, BioSlab, Dir, Event, EventQueue, IoErr, NO_BIO, NSEC_PER_MSEC, NSEC_PER_SEC, Ns,
};
use crate::stack::{FLUSHER, PolicyId, Recorder, Request, Stack, TagAlloc};
use crate::workload::job::JobParams;

/// Where a bio is on its way down; declared in pipeline order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Stage {
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

/// A tag in use: the request — its bios (a chain from `bio` to `biotail`, through
/// `Bio::next`), where it starts and how large it is, when its submitter asked for
/// the tag and when it got it (`crate::sim::merge` grows it).
#[derive(Debug, Clone, Copy)]
pub(super) struct RqSlot {
    pub(super) bio: BioId,
    pub(super) biotail: BioId,
    pub(super) sector: u64,
    pub(super) bytes: u64,
    /// `nr_phys_segments`.
    pub(super) nr_segs: u32,
    /// `REQ_NOMERGE`: too large to merge into again.
    pub(super) nomerge: bool,
    /// The driver ended it inside `->queue_rq()`: no interrupt completes it.
    inline: bool,
    alloc: Ns,
    pub(super) start: Ns,
}

/// A submission context. With thousands of jobs each I/O finds its context cold, so
/// everything the stack walk reads, the first bios still to push included, shares
/// one cache line (`align(64)`).
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub(super) struct Ctx {
    pub(super) blocked: bool,
    pub(super) wake_scheduled: bool,
    /// The call inserted a request for kblockd and returns once kblockd has run the
    /// queue (`crate::sim::plug`).
    awaits_queue_run: bool,
    /// Sleeping off blk-cgroup's delay on return to user space
    /// (`blkcg_maybe_throttle_current()`: `io_schedule_timeout()`, iowait for PSI).
    pub(super) iowait_sleep: bool,
    /// Whose context this is.
    pub(super) owner: Owner,
    /// Its task's PSI state as last told to `crate::psi` (`crate::sim::pressure`).
    pub(super) psi_state: TaskState,
    /// Its job's engine is synchronous: a wait for its I/O is iowait.
    pub(super) psi_sync: bool,
    /// Marked for the PSI flush after the event (`Pipeline::psi_mark`).
    pub(super) psi_marked: bool,
    /// When the bio at the front started to wait for a tag (its `alloc_time`).
    tag_wait_since: Ns,
    /// The depth limit its elevator set when that bio first asked
    /// (`data->shallow_depth`): `blk_mq_get_tag()` keeps it through every sleep.
    alloc_shallow: Option<Shallow>,
    /// The bios still to push (`current->bio_list`): one, or two after a split.
    pub(super) pending: InlineDeque<(BioId, Stage), 2>,
}

// the context's flags and its inline bios share the first cache line
const _: () = assert!(std::mem::size_of::<Ctx>() == 64);

/// Who pushes a context's bios.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Owner {
    /// The policies' dispatch worker (kthrotld and the like).
    #[default]
    Worker,
    /// A fio job, inside its `io_submit()`/`pread()` or `fsync()`.
    Job(u32),
    /// The flusher of a cgroup's wb (`crate::sim::writeback`).
    Flusher(u32),
}

impl Owner {
    /// The fio job, if a job's.
    #[inline]
    pub(super) fn job(self) -> Option<u32> {
        match self {
            Owner::Job(j) => Some(j),
            _ => None,
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
    /// The page cache as the run left it, with buffered writers.
    pub page_cache: Option<Box<PageCache>>,
    /// Each cgroup's `io.pressure` at the end, as the file reads (the root's first).
    pub pressure: Vec<String>,
}

/// kblockd's kworker on the one CPU (`[host] cpus = 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KworkerState {
    /// Asleep: no run pending, or its delay not yet over.
    Idle,
    /// Woken for a run, waiting for the CPU.
    Queued,
    /// Spending its run's CPU time.
    Running,
}

pub struct Pipeline {
    pub(super) q: EventQueue,
    pub(super) bios: BioSlab,
    pub(super) ios: Vec<IoU>,
    pub(super) free_ios: Vec<u32>,
    dev: Box<dyn BlockDevice>,
    limits: QueueLimits,
    pub(super) max_bio_bytes: u64,
    pub(super) stack: Stack,
    pub(super) host: HostCosts,
    /// The tags (the scheduler's, with an elevator) and their sleepers: contexts.
    tags: TagSet<u32>,
    pub(super) rqs: Vec<Option<RqSlot>>,
    /// The elevator's requests by end sector and `q->last_merge` (`crate::sim::merge`).
    pub(super) rq_hash: RqHash,
    /// `queue/nomerges`: which merges are tried.
    pub(super) nomerges: NoMerges,
    /// Requests at the driver: at most `hw_queue_depth` (`blk_mq_get_driver_tag()`).
    dispatched: u32,
    /// CPU time the context being run has spent running the queue: each request's way
    /// through the elevator (`[host] elevator_ns`) and the completions of requests the
    /// driver ended inside `->queue_rq()` ([`Completion::Inline`]); `run_ctx()` charges
    /// it to the call, `kblockd_run_queue()` to the calls waiting for it.
    queue_run_cpu: Ns,
    /// The block core's version switches (`blk.*`).
    pub(super) blk: BlkMqBehaviour,
    /// When kblockd runs the queue next (`hctx->run_work` pending, `Event::QueueRun`):
    /// an async run (`mod_delayed_work_on(.., 0)`) brings a later one forward, a
    /// delayed one (`blk_mq_delay_run_hw_queues()`) is armed only when none is
    /// pending. An event at another time is stale.
    run_work: Option<Ns>,
    /// On one CPU, kblockd's kworker (the CPU's last task).
    kblockd: KworkerState,
    /// `BLK_MQ_S_SCHED_RESTART`: a queue run found no driver tag for the elevator's
    /// next request, so the next request to complete runs the queue again
    /// (`blk_mq_sched_restart()`).
    sched_restart: bool,
    /// A request this queue run dispatched was ended by the driver inside
    /// `->queue_rq()` ([`Completion::Inline`]): the elevator is asked again after it
    /// (`rerun_hw_queue()`).
    inline_in_run: bool,
    /// `hctx->dispatch`: requests the elevator gave that found no driver tag, served
    /// first by the next queue run.
    hctx_dispatch: std::collections::VecDeque<Request>,
    /// The kernel's `HZ`: kblockd's delayed queue runs are timer-wheel timers.
    pub(super) hz: u32,
    /// The driver stopped the hardware queue (`blk_mq_stop_hw_queues()`, null_blk over
    /// its `mbps` grant): no queue run dispatches until it restarts it.
    hw_stopped: bool,
    /// The run's seed: the scheduler tags' first allocation hint is drawn from it.
    seed: u64,
    /// Requests inserted for kblockd with `none` (the software queues,
    /// `blk_mq_insert_requests()`): their tags, in insertion order.
    sw_queue: Vec<u32>,
    /// Contexts whose call returns once kblockd has run the queue.
    queue_run_waiters: Vec<u32>,
    pub(super) ctxs: Vec<Ctx>,
    bio_ctx: Vec<u32>,
    pub(super) jobs: Vec<JobRt>,
    pub(super) dev_acct: DevAcct,
    pub(super) cg_stat: Vec<CgIoStat>,
    scratch_done: Vec<u32>,
    scratch_ctxs: Vec<u32>,
    /// The kernel's fair class (`sched.fair`), for `[host] cpus = 1`.
    fair: FairSched,
    /// `[host] cpus = 1`: the one CPU every job's host work runs on (`crate::sim::cpu`).
    pub(super) cpu: Option<GuestCpu>,
    /// Tag sleepers woken on one CPU, to ask for it after the reapers.
    tag_woken: Vec<u32>,
    /// Jobs that have ended (the run stops when all have).
    pub(super) jobs_done: usize,
    /// Jobs not started yet (waiting for their `after` jobs).
    pub(super) nr_not_started: usize,
    scratch_bios: Vec<BioId>,
    /// The fio I/Os of a completed request's merged bios.
    scratch_ios: Vec<u32>,
    duration: Option<Ns>,
    /// The disk is gone (`GD_DEAD`): bios fail at `bio_queue_enter()`.
    pub(super) dead: bool,
    /// del_gendisk() is waiting for the queue to drain (`blk_mq_freeze_queue_wait()`).
    draining: bool,
    /// Bios past `bio_queue_enter()` and not yet completed (`q_usage_counter`).
    q_usage: u64,
    /// The device can fail requests: ask it how each one ended.
    dev_may_fail: bool,
    device_lat: Option<Box<[LatHist; 2]>>,
    /// [`Pipeline::record_job_timelines`]: each job's completions go into its
    /// `JobRt::timeline`.
    pub(super) job_timelines: bool,
    /// Hint each next event's first lines ([`Pipeline::prefetch_next`]): set as the
    /// run starts, with a number of jobs in [`LOOKAHEAD_JOBS`] and a policy or elevator.
    lookahead: bool,
    /// Some job writes its I/O log (`write_iolog`) or fio's stat logs: the drain hands
    /// their lines on.
    log_writers: bool,
    /// Each cgroup's first job's context (0: none), the one a wake-up in that cgroup
    /// most likely resumes: for hints only, so made only when `lookahead` is set.
    cg_ctx: Vec<u32>,
    /// The page cache of a run with buffered writers (`crate::sim::writeback`).
    pub(super) wb: Option<Box<PageCache>>,
    /// io.pressure (`crate::sim::pressure`), once set up.
    pub(super) psi: Option<Box<Psi>>,
    /// Contexts whose PSI state may have changed in the event being handled.
    pub(super) psi_dirty: Vec<u32>,
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
/// Events between two calls of `run`'s `progress` within a simulated second: a few
/// milliseconds of wall time, so a caller's cancel is seen soon even where a simulated
/// second takes long to simulate (thousands of busy jobs).
pub const PROGRESS_EVENTS: u32 = 1 << 16;

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
                    owner: Owner::Job(i as u32),
                    ..Ctx::default()
                });
                JobRt::new(p, seed)
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
            rq_hash: RqHash::default(),
            nomerges: NoMerges::All,
            dispatched: 0,
            queue_run_cpu: 0,
            blk: BlkMqBehaviour::default(),
            run_work: None,
            kblockd: KworkerState::Idle,
            sched_restart: false,
            inline_in_run: false,
            hctx_dispatch: std::collections::VecDeque::new(),
            hz: 1000,
            hw_stopped: false,
            seed,
            sw_queue: Vec::new(),
            queue_run_waiters: Vec::new(),
            ctxs,
            bio_ctx: Vec::new(),
            jobs,
            dev_acct: DevAcct::default(),
            cg_stat: vec![CgIoStat::default(); nr_cgroups.max(1)],
            scratch_done: Vec::new(),
            scratch_ctxs: Vec::new(),
            fair: FairSched::Eevdf,
            cpu: None,
            tag_woken: Vec::new(),
            jobs_done: 0,
            nr_not_started: nr_jobs,
            scratch_bios: Vec::new(),
            scratch_ios: Vec::new(),
            duration: None,
            dead: false,
            draining: false,
            q_usage: 0,
            dev_may_fail,
            device_lat: None,
            job_timelines: false,
            lookahead: false,
            log_writers: false,
            cg_ctx: Vec::new(),
            wb: None,
            psi: None,
            psi_dirty: Vec::new(),
            limits,
        }
    }

    /// `queue/nomerges` as the scenario writes it (`[device] nomerges`).
    pub fn set_nomerges(&mut self, n: NoMerges) {
        self.nomerges = n;
    }

    /// The block core's behaviour of the run's kernel (the newest's unless set) and
    /// its `HZ` (1000 unless set).
    pub fn set_blk_mq(&mut self, b: BlkMqBehaviour, hz: u32) {
        self.blk = b;
        self.hz = hz.max(1);
    }

    /// The kernel's fair class, which runs the jobs' host work with `[host] cpus = 1`
    /// (EEVDF unless set).
    pub fn set_fair(&mut self, f: FairSched) {
        self.fair = f;
    }

    /// A submission context for `owner`, before the run starts; its index.
    pub(super) fn add_ctx(&mut self, owner: Owner) -> u32 {
        self.ctxs.push(Ctx {
            owner,
            ..Ctx::default()
        });
        (self.ctxs.len() - 1) as u32
    }

    /// Every job has ended and the page cache, if any, is clean: the run is over (a
    /// buffered writer's pages are followed to the device, as a `sync` after fio
    /// would wait for them).
    fn run_over(&self) -> bool {
        self.jobs_done == self.jobs.len() && self.wb.as_deref().is_none_or(PageCache::clean)
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
        // Its map has the words of the depth it was first allocated with (the
        // default, or a larger nr_requests, which allocates anew; a smaller one
        // resizes it) and a random first hint (init_alloc_hint()).
        if let Some(e) = self.stack.elevator.as_ref() {
            let n = e.nr_requests().unwrap_or(self.tags.depth()).max(1);
            let first =
                crate::sched::nr_requests::default_nr_requests(true, self.limits.hw_queue_depth);
            let hint = SimRng::new(self.seed, "sbitmap/alloc_hint").below(u64::from(n)) as u32;
            let map = Sbitmap::new(n, first.max(n), hint);
            self.tags = TagSet::with_map(map, e.min_shallow_depth());
            self.rqs = vec![None; n as usize];
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
    /// scheduled interface write; `progress` is called once per simulated second, and
    /// every [`PROGRESS_EVENTS`] events, with the simulated time and the bytes completed
    /// so far; when it breaks, the run ends there (the caller cancelled it: what it
    /// returns then is not a run's output to report).
    pub fn run(
        mut self,
        mut on_config: impl FnMut(&mut Pipeline, u32),
        mut progress: impl FnMut(Ns, u64) -> ControlFlow<()>,
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
        if self.host.cpus == 1 {
            // every context is a task (the dispatch worker, then each job at `j + 1`),
            // and kblockd's kworker the last
            let kworker = self.ctxs.len() as u32;
            let mut cpu = GuestCpu::new(
                self.fair,
                self.hz,
                self.ctxs.len() + 1,
                self.host.tick_irq_ns,
            );
            cpu.set_kblockd(kworker);
            self.cpu = Some(cpu);
        }
        self.log_writers = self
            .jobs
            .iter()
            .any(|j| j.iolog_out.is_some() || j.stat_logs.is_some());
        self.start_ready();
        self.q.push(SAMPLE_TICK, Event::Sample);
        let mut last_progress = 0;
        let mut events: u32 = 0;
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
                    self.psi_mark(j + 1);
                    if let Some(cpu) = &mut self.cpu {
                        // a timer woke the job: it runs once the CPU picks it
                        cpu.request(now, j + 1, 0, Event::Job(j), &mut self.q);
                    } else {
                        self.jobs[j as usize].wake_scheduled = false;
                        self.job_step(j);
                    }
                }
                Event::Ctx(c) => {
                    self.ctxs[c as usize].iowait_sleep = false;
                    self.psi_mark(c);
                    match &mut self.cpu {
                        // a timer or a kernel wake-up: the context runs once picked
                        Some(cpu) => cpu.request(now, c, 0, Event::Ctx(c), &mut self.q),
                        None => {
                            self.ctxs[c as usize].wake_scheduled = false;
                            self.run_ctx(c);
                        }
                    }
                }
                Event::CpuBurst(generation) => {
                    let then = self
                        .cpu
                        .as_mut()
                        .and_then(|c| c.burst_done(now, generation));
                    if let Some(then) = then {
                        match then {
                            Event::Job(j) => {
                                self.psi_mark(j + 1);
                                self.jobs[j as usize].wake_scheduled = false;
                                self.job_step(j);
                            }
                            Event::Ctx(c) => {
                                self.psi_mark(c);
                                self.ctxs[c as usize].wake_scheduled = false;
                                self.run_ctx(c);
                            }
                            Event::QueueRun => self.kworker_step(),
                            _ => {}
                        }
                        if let Some(cpu) = &mut self.cpu {
                            cpu.settle(now, &mut self.q);
                        }
                    }
                }
                Event::CpuTick => {
                    if let Some(cpu) = &mut self.cpu {
                        cpu.tick(now, self.dispatched > 0, &mut self.q);
                    }
                }
                Event::Device(token) => {
                    let mut done = std::mem::take(&mut self.scratch_done);
                    self.dev.on_event(now, token, &mut self.q, &mut done);
                    for &tag in &done {
                        self.on_device_done(tag);
                    }
                    done.clear();
                    self.dev.requeued(&mut done);
                    for &tag in done.iter().rev() {
                        self.requeue(tag);
                    }
                    done.clear();
                    self.scratch_done = done;
                    if self.dev.dispatched_inline() {
                        self.rerun_hw_queue();
                    }
                    if self.dev.restarted() {
                        // blk_mq_start_stopped_hw_queues(q, true)
                        self.hw_stopped = false;
                        self.kick_kblockd(QueueRun::Kblockd);
                    }
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
                Event::WbWork(cg) => self.on_wb_work(cg),
                Event::WbBandwidth(cg) => self.on_wb_bandwidth(cg),
                Event::QueueRun => {
                    if self.cpu.is_some() {
                        self.kworker_wake();
                    } else {
                        let _ = self.kblockd_run_queue();
                    }
                }
            }
            self.psi_flush();
            events += 1;
            if now >= last_progress + NSEC_PER_SEC || events == PROGRESS_EVENTS {
                last_progress = now;
                events = 0;
                if progress(now, self.dev_acct.done_bytes).is_break() {
                    break;
                }
            }
            if self.run_over() {
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
        self.psi_flush();
        let pressure = self.psi_show_all(end);
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
                    dirty_paused: j.buf.paused,
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
            page_cache: self.wb,
            pressure,
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
        if let Some(pc) = self.wb.as_deref_mut() {
            pc.drain(rec);
        }
        if let Some(p) = self.psi.as_deref_mut() {
            for row in p.take_rows() {
                rec.row(&row);
            }
        }
        if self.log_writers {
            for job in &mut self.jobs {
                if let Some(out) = job.iolog_out.as_deref_mut()
                    && !out.lines.is_empty()
                {
                    rec.job_log(&out.name, &out.lines);
                    out.lines.clear();
                }
                let stat = job.stat_logs.iter_mut().flat_map(|l| l.logs.iter_mut());
                for l in stat.flatten().filter(|l| !l.made || !l.lines.is_empty()) {
                    rec.job_log(&l.name, &l.lines);
                    l.lines.clear();
                    l.made = true;
                }
            }
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

    /// A policy's or the elevator's timer fired: bios a bio-level policy releases go
    /// on from the stage after it in the dispatch worker (kthrotld: `[host]
    /// workqueue_ns` later, so the wait is in clat); sleepers an rq-qos entry wakes go
    /// on in their own contexts; the elevator may ask kblockd to run the queue.
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
        } else if let Some(e) = self.stack.elevator.as_mut().filter(|e| e.id() == id) {
            // an elevator's timer may ask kblockd to run the queue (mq-deadline has
            // none; BFQ's idle-slice timer does: bfq_schedule_dispatch())
            if e.on_timer(now, token, &mut self.q) {
                self.kick_kblockd(QueueRun::Kblockd);
            }
        }
        out.clear();
        self.scratch_bios = out;
    }

    // ----------------------------------------------------------------- contexts

    /// Context `c` runs `ns` of its job's CPU time, then goes on: on the guest CPU
    /// when it is modelled, else after `ns`.
    pub(super) fn ctx_run_for(&mut self, c: u32, ns: Ns) {
        self.psi_mark(c);
        let Some(cpu) = &mut self.cpu else {
            self.kick_ctx(c, ns);
            return;
        };
        let ctx = &mut self.ctxs[c as usize];
        if !ctx.wake_scheduled && !ctx.blocked {
            ctx.wake_scheduled = true;
            cpu.request(self.q.now(), c, ns, Event::Ctx(c), &mut self.q);
        }
    }

    fn kick_ctx(&mut self, c: u32, delay: Ns) {
        self.psi_mark(c);
        let ctx = &mut self.ctxs[c as usize];
        if !ctx.wake_scheduled && !ctx.blocked {
            ctx.wake_scheduled = true;
            self.q.after(delay, Event::Ctx(c));
        }
    }

    /// Push the context's bios down the stack until it sleeps or has nothing left.
    /// A bio goes from the stage it is at straight through the later ones; only a bio
    /// that has to wait records the stage it waits at.
    pub(super) fn run_ctx(&mut self, c: u32) {
        let now = self.q.now();
        self.queue_run_cpu = 0;
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
                // blkcg_bio_issue_init(), bio_queue_enter(), then the split; then
                // blk_mq_attempt_bio_merge(): a bio that joins a waiting request is done
                // here, without a tag (crate::sim::merge)
                self.bios.get_mut(b).issue_time = now;
                self.q_usage += 1;
                self.split(c, b);
                if self.bio_merge(b) {
                    self.ctxs[c as usize].pending.pop_front();
                    continue;
                }
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
                self.psi_mark(c);
                return;
            }
            // blk_mq_get_new_requests() → blk_mq_get_tag(): a tag within the
            // elevator's depth limit. Out of tags, the submitter runs the queue itself
            // ("kick any pending IO submits before going to sleep") and asks again
            // before it sleeps; a woken sleeper (sbitmap_finish_wait()) runs it again
            // before it asks. That run is what dispatches a lower priority's requests
            // the moment a higher one runs dry (docs/validation.md §31).
            // The depth limit is the elevator's word when the bio first asks
            // (`__blk_mq_alloc_requests()` → `limit_depth`), kept through the sleeps.
            let woken = stage == Stage::Alloc;
            let (since, shallow) = if woken {
                self.tags.finish_wait();
                let ctx = &self.ctxs[c as usize];
                (ctx.tag_wait_since, ctx.alloc_shallow)
            } else {
                (now, self.limit_depth(b))
            };
            let first = if woken { None } else { self.tags.get(shallow) };
            let tag = first.or_else(|| {
                self.run_hw_queue();
                self.tags.get(shallow)
            });
            if let Some(tag) = tag {
                self.ctxs[c as usize].pending.pop_front();
                let run = self.queue_run_of(c, b);
                if run != QueueRun::Caller {
                    self.ctxs[c as usize].awaits_queue_run = true;
                }
                self.start_request(b, tag, since, now, run);
            } else {
                self.tags.prepare_to_wait(c);
                let ctx = &mut self.ctxs[c as usize];
                if let Some(front) = ctx.pending.front_mut() {
                    front.1 = Stage::Alloc;
                }
                ctx.tag_wait_since = since;
                ctx.alloc_shallow = shallow;
                ctx.blocked = true;
                self.psi_mark(c);
                return;
            }
        }
        let awaits_queue_run = std::mem::take(&mut self.ctxs[c as usize].awaits_queue_run);
        let (j, io) = match self.ctxs[c as usize].owner {
            Owner::Job(j) => match self.jobs[j as usize].phase {
                Phase::InSubmit(io) => (j, io),
                Phase::Fsync(_) => return self.fsync_step(j),
                Phase::ReadSubmit(..) => return self.buffered_read_step(j),
                _ => return,
            },
            Owner::Flusher(cg) => return self.flusher_step(cg),
            Owner::Worker => return,
        };
        if awaits_queue_run {
            // the call goes on once kblockd has run the queue (kblockd_run_queue())
            self.queue_run_waiters.push(c);
            return;
        }
        // the completions the driver ran inside this call, then
        // blkcg_maybe_throttle_current(): the delay on return to user space; both
        // are part of the syscall, so they land in this I/O's slat
        // the I/O's own copy: the job's parameters are a cold line by now
        let cg = self.ios[io as usize].cgroup;
        let mut user_delay = 0;
        if self.stack.rq_qos_ops.user_delay {
            for p in &mut self.stack.rq_qos {
                user_delay = user_delay.max(p.user_delay(now, cg));
            }
        }
        let queue_run = std::mem::take(&mut self.queue_run_cpu);
        let delay = queue_run + user_delay;
        if self.cpu.is_some() && user_delay == 0 && queue_run > 0 {
            self.ctx_run_for(c, queue_run);
        } else if delay > 0 {
            self.ctxs[c as usize].iowait_sleep = user_delay > 0;
            self.kick_ctx(c, delay);
        } else {
            self.submit_returned(j, io);
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
        self.psi_mark(c);
        if self.cpu.is_some() {
            self.ctx_run_for(c, 0);
        } else {
            self.run_ctx(c);
        }
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

    /// Who runs the queue for the request of bio `b` that context `c` submits: the
    /// dispatch worker plugs and flushes in its own context
    /// (`blk_throtl_dispatch_work_fn()`), a job as `crate::sim::plug` says.
    fn queue_run_of(&self, c: u32, b: BioId) -> QueueRun {
        let Some(j) = self.ctxs[c as usize].owner.job() else {
            return QueueRun::Caller;
        };
        let bio = self.bios.get(b);
        let iou = &self.ios[bio.io as usize];
        if iou.kind != IoKind::Fio {
            // an fsync's pages, a read's readahead: the caller's plug ends with its
            // last bio
            return QueueRun::Caller;
        }
        plug::queue_run(
            &self.blk,
            self.jobs[j as usize].p.sync_engine,
            bio.dir,
            iou.bytes,
            self.stack.elevator.is_some(),
        )
    }

    /// Queue kblockd's run of the hardware queue (`blk_mq_run_hw_queue(hctx, true)` →
    /// `blk_mq_delay_run_hw_queue(hctx, 0)`, a `mod_delayed_work_on()`) for a request
    /// `run` leaves to it: `[host] workqueue_ns` from now, or `sleep_flush_ns` from a
    /// sleeping caller's plug; a run pending sooner stays, a later one (a delayed run)
    /// is brought forward.
    fn kick_kblockd(&mut self, run: QueueRun) {
        let delay = if run == QueueRun::SleepFlush {
            self.host.sleep_flush_ns
        } else {
            self.host.workqueue_ns
        };
        let at = self.q.now() + delay;
        if self.run_work.is_none_or(|t| t > at) {
            self.run_work = Some(at);
            self.q.push(at, Event::QueueRun);
        }
    }

    /// `blk_mq_do_dispatch_sched()`'s next round: a run that dispatched requests asks
    /// the elevator again once they are on the driver — and those the driver ended
    /// inside `->queue_rq()` are complete by then, so what mq-deadline held back behind
    /// them (a lower priority behind a higher one's request in flight) goes now. Their
    /// completions are events at this instant; the round is a run queued behind them.
    fn rerun_hw_queue(&mut self) {
        let at = self.q.now();
        if self.run_work.is_none_or(|t| t > at) {
            self.run_work = Some(at);
            self.q.push(at, Event::QueueRun);
        }
    }

    /// `blk_mq_delay_run_hw_queues(q, BLK_MQ_BUDGET_DELAY)`: the elevator holds work
    /// it would not give now (`__blk_mq_do_dispatch_sched()`), so kblockd looks again
    /// in 3 ms — `msecs_to_jiffies(3)` on the timer wheel, which fires a level-0 timer
    /// one jiffy after its expiry (`calc_index()`), then the work item's start — unless
    /// a run is pending already, which keeps its time.
    fn delay_run_hw_queue(&mut self) {
        if self.run_work.is_some() {
            return;
        }
        let hz = u64::from(self.hz);
        let start = jiffies::initial_jiffies(self.hz);
        let delay = (3 * hz).div_ceil(1000);
        let fire = jiffies::at(self.q.now(), start, hz) + delay + 1;
        let at = jiffies::ns_of(fire, start, hz) + self.host.workqueue_ns;
        self.run_work = Some(at);
        self.q.push(at, Event::QueueRun);
    }

    /// On one CPU, `hctx->run_work` is due: kblockd's kworker wakes
    /// (`kblockd_mod_delayed_work_on()`) and runs once the CPU picks it; runs asked
    /// for meanwhile are that one run (the work item is pending once).
    fn kworker_wake(&mut self) {
        if self.run_work == Some(self.q.now()) && self.kblockd == KworkerState::Idle {
            self.kworker_burst(KworkerState::Queued, 0);
        }
    }

    /// kblockd's kworker was picked (it runs the queue, then spends the run's CPU
    /// time: the elevator's work, the completions the driver ended inline), or has
    /// spent it (it sleeps, or runs again for a run asked for meanwhile).
    fn kworker_step(&mut self) {
        let now = self.q.now();
        match self.kblockd {
            KworkerState::Queued => {
                self.run_work = self.run_work.map(|_| now);
                let cost = self.kblockd_run_queue();
                self.kworker_burst(KworkerState::Running, cost);
            }
            KworkerState::Running if self.run_work.is_some_and(|t| t <= now) => {
                self.kworker_burst(KworkerState::Queued, 0);
            }
            KworkerState::Running => self.kblockd = KworkerState::Idle,
            KworkerState::Idle => {}
        }
    }

    /// The kworker (the CPU's last task) goes to `state` and asks for a burst of `ns`.
    fn kworker_burst(&mut self, state: KworkerState, ns: Ns) {
        self.kblockd = state;
        let kworker = self.ctxs.len() as u32;
        if let Some(cpu) = self.cpu.as_mut() {
            cpu.request(self.q.now(), kworker, ns, Event::QueueRun, &mut self.q);
        }
    }

    /// kblockd runs the queue (`blk_mq_run_work_fn()`): what was inserted for it goes
    /// to the driver, then the callers waiting for it return, after the completions
    /// the driver ran inline in this run. A stale event (the run was brought forward)
    /// does nothing. Returns the run's CPU time.
    fn kblockd_run_queue(&mut self) -> Ns {
        if self.run_work != Some(self.q.now()) {
            return 0;
        }
        self.run_work = None;
        self.queue_run_cpu = 0;
        self.run_hw_queue();
        let cpu = std::mem::take(&mut self.queue_run_cpu);
        let mut waiters = std::mem::take(&mut self.queue_run_waiters);
        for &c in &waiters {
            self.kick_ctx(c, cpu);
        }
        waiters.clear();
        self.queue_run_waiters = waiters;
        cpu
    }

    /// What was inserted for kblockd under `none` (the software queues,
    /// `blk_mq_flush_busy_ctxs()`) goes to the driver, in order, until the queue stops.
    #[cold]
    fn run_sw_queue(&mut self) {
        let mut sw = std::mem::take(&mut self.sw_queue);
        let mut sent = 0;
        while sent < sw.len() && !self.hw_stopped {
            if let Some(slot) = self.rqs[sw[sent] as usize] {
                let rq = self.request(sw[sent], slot);
                self.dispatch(&rq);
            }
            sent += 1;
        }
        sw.drain(..sent);
        self.sw_queue = sw;
    }

    /// `__blk_mq_sched_dispatch_requests()`'s first step: what an earlier run could not
    /// dispatch (`hctx->dispatch`) goes first, and marks the queue for a restart
    /// (`blk_mq_sched_mark_restart_hctx()`). Whether the run goes on: the list emptied
    /// and the queue not stopped.
    fn run_hctx_dispatch(&mut self) -> bool {
        if self.hw_stopped {
            return false;
        }
        if self.hctx_dispatch.is_empty() {
            return true;
        }
        self.sched_restart = true;
        let depth = self.limits.hw_queue_depth.max(1);
        while self.dispatched < depth
            && !self.hw_stopped
            && let Some(rq) = self.hctx_dispatch.pop_front()
        {
            self.dispatch(&rq);
        }
        self.hctx_dispatch.is_empty() && !self.hw_stopped
    }

    /// The driver refused request `tag` (`BLK_STS_DEV_RESOURCE`): back at the head of
    /// `hctx->dispatch`, its driver tag free (`__blk_mq_requeue_request()`), the queue
    /// stopped until the driver restarts it.
    fn requeue(&mut self, tag: u32) {
        if self.stack.elevator.is_none() {
            self.dev_acct.advance(self.q.now());
            self.dev_acct.inflight -= 1;
        }
        self.dispatched -= 1;
        if let Some(slot) = self.rqs[tag as usize] {
            let rq = self.request(tag, slot);
            self.hctx_dispatch.push_front(rq);
        }
        self.hw_stopped = true;
    }

    /// How the elevator limits the tag allocation of bio `b`'s request
    /// (`elevator_mq_ops.limit_depth`), `None` for the full depth.
    fn limit_depth(&self, b: BioId) -> Option<Shallow> {
        self.stack.elevator.as_ref().and_then(|e| {
            let bio = self.bios.get(b);
            let (task, sync) = self.task_of(bio);
            e.limit_depth(&TagAlloc {
                dir: bio.dir,
                sync,
                task,
                cgroup: bio.cgroup,
            })
        })
    }

    /// Bio `b` got `tag` (its submitter asked at `alloc`, got it at `start`): the
    /// request is tracked and handed to the elevator, and the queue is run by `run`;
    /// with `none` (no elevator) it goes to the driver at once
    /// (`blk_mq_try_issue_directly()`), or to the software queue for kblockd.
    fn start_request(&mut self, b: BioId, tag: u32, alloc: Ns, start: Ns, run: QueueRun) {
        let now = self.q.now();
        let bio = self.bios.get(b);
        let slot = RqSlot {
            bio: b,
            biotail: b,
            sector: bio.sector,
            bytes: bio.bytes,
            nr_segs: nr_segs(bio.bytes),
            nomerge: false,
            inline: false,
            alloc,
            start,
        };
        self.rqs[tag as usize] = Some(slot);
        let ops = self.stack.rq_qos_ops;
        if !ops.track
            && !ops.issue
            && self.stack.elevator.is_none()
            && run == QueueRun::Caller
            && !self.hw_stopped
        {
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
            if run != QueueRun::Caller {
                // blk_mq_dispatch_plug_list(plug, true) → blk_mq_insert_requests()
                self.sw_queue.push(tag);
                self.kick_kblockd(run);
            } else {
                self.dispatch(&rq);
            }
            return;
        };
        // blk_account_io_start() at request allocation: iostat's in-flight (aqu-sz,
        // %util) counts requests waiting in the elevator too
        self.dev_acct.advance(now);
        self.dev_acct.inflight += 1;
        // dd_insert_request(): the request joins a waiting one if it can
        // (blk_mq_sched_try_insert_merge()), else waits itself
        if !e.merges() {
            e.insert_requests(&rq, now);
        } else if !self.insert_merge(tag) {
            let e = self.stack.elevator.as_mut().expect("checked above");
            e.insert_requests(&rq, now);
            self.merge_inserted(tag);
        }
        match run {
            QueueRun::Caller => self.run_hw_queue(),
            // blk_mq_run_hw_queue(hctx, true)
            QueueRun::Kblockd | QueueRun::SleepFlush => self.kick_kblockd(run),
        }
    }

    /// `blk_mq_run_hw_queue()` in the running context (`__blk_mq_sched_dispatch_requests()`),
    /// nothing while the queue is stopped: first what an earlier run could not give a
    /// driver tag (`hctx->dispatch`, which marks the queue for a restart again), then
    /// what was inserted for kblockd (under `none`), then every request the elevator
    /// gives, to the driver while it has a tag (`hw_queue_depth`,
    /// `blk_mq_get_driver_tag()`).
    /// A request the elevator gave without a driver tag goes to `hctx->dispatch` and
    /// the queue is marked for a restart at the next completion
    /// (`blk_mq_mark_tag_wait()`); an elevator that holds work but gives nothing
    /// (mq-deadline behind a higher priority's requests) is asked again by a delayed
    /// run (`delay_run_hw_queue()`), never by the restart.
    #[inline(always)]
    fn run_hw_queue(&mut self) {
        self.inline_in_run = false;
        if !self.run_hctx_dispatch() {
            return;
        }
        if !self.sw_queue.is_empty() {
            self.run_sw_queue();
        }
        let depth = self.limits.hw_queue_depth.max(1);
        let now = self.q.now();
        while !self.hw_stopped {
            let Some(e) = self.stack.elevator.as_mut() else {
                return;
            };
            if !e.has_work() {
                return;
            }
            let Some(tag) = e.dispatch_request(now) else {
                if std::mem::take(&mut self.inline_in_run) {
                    self.rerun_hw_queue();
                } else {
                    self.delay_run_hw_queue();
                }
                return;
            };
            // deadline_remove_request() → elv_rqhash_del()
            self.rq_hash.del(tag);
            let Some(slot) = self.rqs[tag as usize] else {
                continue;
            };
            let rq = self.request(tag, slot);
            self.queue_run_cpu += self.host.elevator_ns;
            if self.dispatched >= depth {
                self.hctx_dispatch.push_back(rq);
                self.sched_restart = true;
                return;
            }
            self.dispatch(&rq);
        }
    }

    /// Who submits `bio` ([`Request::task`]), and whether it is sync (`op_is_sync()`:
    /// a read, or a write with `REQ_SYNC`).
    fn task_of(&self, bio: &Bio) -> (u32, bool) {
        let sync = bio.dir == Dir::Read || bio.opf & crate::sim::bio::req::SYNC != 0;
        // a flusher's writeback is its kworker's; an fsync's, a readahead's and a
        // fio I/O's their job's
        let task = match self.ios.get(bio.io as usize) {
            Some(iou) if iou.kind != IoKind::Writeback || sync => iou.job,
            _ => FLUSHER,
        };
        (task, sync)
    }

    /// The request of tag `tag` in use by `slot`, as the stack's hooks see it.
    #[inline(always)]
    pub(super) fn request(&self, tag: u32, slot: RqSlot) -> Request {
        let bio = self.bios.get(slot.bio);
        let (task, sync) = self.task_of(bio);
        Request {
            tag,
            bio: slot.bio,
            cgroup: bio.cgroup,
            dir: bio.dir,
            sector: slot.sector,
            bytes: slot.bytes,
            alloc_time: slot.alloc,
            start_time: slot.start,
            ioprio: bio.ioprio,
            task,
            sync,
        }
    }

    /// `blk_mq_start_request()` (`rq_qos_issue()`), then the driver; on a stopped queue
    /// the request waits on `hctx->dispatch` instead (`__blk_mq_try_issue_directly()`
    /// inserts it for the restart's run).
    fn dispatch(&mut self, rq: &Request) {
        if self.hw_stopped {
            self.hctx_dispatch.push_back(*rq);
            return;
        }
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
        let (sector, bytes) =
            self.rqs[tag as usize].map_or((bio.sector, bio.bytes), |r| (r.sector, r.bytes));
        let d = DevRq {
            tag,
            dir: bio.dir,
            sector,
            bytes,
        };
        // what the completion reads, a device service time from now: the I/O's record
        // and the rq-qos entries' per-cgroup ones (a request that waited for a tag
        // finds them cold: thousands of other I/Os ran since its submitter touched them)
        prefetch(&self.ios[bio.io as usize]);
        for p in &self.stack.rq_qos {
            p.prefetch_done(bio.cgroup);
        }
        match self.dev.submit(now, d, &mut self.q) {
            // the driver ended it in this call: whoever dispatched runs its completion
            Completion::Inline => {
                self.queue_run_cpu += self.host.inline_complete_ns;
                self.inline_in_run = true;
                if let Some(r) = self.rqs[tag as usize].as_mut() {
                    r.inline = true;
                }
            }
            Completion::Requeued => self.requeue(tag),
            Completion::Later => {}
        }
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
        let (dir, bytes, io) = (bio.dir, slot.bytes, bio.io);
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
        // on one CPU, the completion's interrupt takes it from whoever runs
        if let Some(cpu) = self.cpu.as_mut()
            && !slot.inline
        {
            cpu.irq(now, self.host.complete_irq_cost(bytes), &mut self.q);
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
                // blk_update_request(): bio_endio() of each bio, first to last
                let mut b = slot.bio;
                while b != NO_BIO {
                    p.done_bio(now, b, &self.bios, &mut self.q, &mut woken);
                    b = self.bios.get(b).next;
                }
                p.done(now, &rq, &mut self.q, &mut woken);
                if !woken.is_empty() {
                    // rare (an entry's waiters); an empty drain and extend cost ~90
                    // instructions per I/O
                    woken_at.extend(woken.drain(..).map(|b| (b, k)));
                }
            }
            self.scratch_bios = woken;
            if let Some(e) = self.stack.elevator.as_mut()
                && e.completed_request(&rq, now, &mut self.q)
            {
                self.kick_kblockd(QueueRun::Kblockd);
            }
        }
        // the bios merged behind the first: their fio I/Os end after its
        let mut merged = std::mem::take(&mut self.scratch_ios);
        let mut b = self.bios.get(slot.bio).next;
        while b != NO_BIO {
            let bio = *self.bios.get(b);
            merged.push(bio.io);
            self.bios.release(b);
            b = bio.next;
        }
        self.bios.release(slot.bio);
        self.put_tag(tag);
        self.piece_done(io, err);
        for &io in &merged {
            self.piece_done(io, err);
        }
        self.wake_tag_sleepers();
        self.q_usage -= 1 + merged.len() as u64;
        merged.clear();
        self.scratch_ios = merged;
        if !woken_at.is_empty() {
            for (b, k) in woken_at {
                self.rq_qos_woken(b, k);
            }
        }
        self.check_drained();
    }

    /// `__blk_mq_free_request()`: tag `tag` is free. `blk_mq_sched_restart()` runs the
    /// queue again (by kblockd) if a queue run found no driver tag; then
    /// `sbitmap_queue_clear()`: the tag is free to whoever asks first, and the sleepers
    /// it wakes ask again once they run. On one CPU they wake after the reaper a
    /// completion wakes (`bio_endio()` woke it first, in `__blk_mq_end_request()`):
    /// `wake_tag_sleepers()`, once the caller has woken its reapers.
    fn put_tag(&mut self, tag: u32) {
        if self.sched_restart {
            self.sched_restart = false;
            self.kick_kblockd(QueueRun::Kblockd);
        }
        let one_cpu = self.cpu.is_some();
        let mut woken = std::mem::take(&mut self.scratch_ctxs);
        self.tags.put(tag, &mut woken);
        for &c in &woken {
            self.ctxs[c as usize].blocked = false;
            self.psi_mark(c);
            self.prefetch_tag_retry(c);
            if one_cpu {
                self.tag_woken.push(c);
            } else {
                let delay = self.tag_wakeup(c);
                self.kick_ctx(c, delay);
            }
        }
        woken.clear();
        self.scratch_ctxs = woken;
    }

    /// The tag sleepers `put_tag()` woke on one CPU ask for it, after the reapers.
    fn wake_tag_sleepers(&mut self) {
        let woken = std::mem::take(&mut self.tag_woken);
        for &c in &woken {
            let delay = self.tag_wakeup(c);
            self.ctx_run_for(c, delay);
        }
        self.tag_woken = woken;
        self.tag_woken.clear();
    }

    /// `blk_mq_free_request()` of request `tag`, merged away (`gone` as it was) before
    /// it reached the driver: the elevator's `finish_request`, `rq_qos_done()`, then
    /// its tag.
    pub(super) fn free_request(&mut self, tag: u32, gone: &Request) {
        let now = self.q.now();
        self.rqs[tag as usize] = None;
        if let Some(e) = self.stack.elevator.as_mut() {
            e.completed_request(gone, now, &mut self.q);
        }
        let mut woken_at: Vec<(BioId, usize)> = Vec::new();
        if self.stack.rq_qos_ops.done {
            let mut woken = std::mem::take(&mut self.scratch_bios);
            for (k, p) in self.stack.rq_qos.iter_mut().enumerate() {
                p.done(now, gone, &mut self.q, &mut woken);
                woken_at.extend(woken.drain(..).map(|b| (b, k)));
            }
            self.scratch_bios = woken;
        }
        self.put_tag(tag);
        self.wake_tag_sleepers();
        for (b, k) in woken_at {
            self.rq_qos_woken(b, k);
        }
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
        if let Some(j) = ctx.owner.job() {
            let job = &self.jobs[j as usize];
            prefetch(job);
            job.stats.prefetch_submit();
        }
    }

    /// When woken tag sleeper `c` asks again: `tag_wakeup_ns`, and now and then a
    /// slip (`tag_wakeup_slip_*`) drawn from its job's host stream.
    fn tag_wakeup(&mut self, c: u32) -> Ns {
        let mut delay = self.host.tag_wakeup_ns;
        if let Some(j) = self.ctxs[c as usize].owner.job() {
            let h = &self.host;
            let rng = &mut self.jobs[j as usize].host_rng;
            if h.tag_wakeup_slip_ppm > 0 && rng.below(1_000_000) < u64::from(h.tag_wakeup_slip_ppm)
            {
                delay += (rng.unit_open0() * h.tag_wakeup_slip_ns as f64) as Ns;
            }
        }
        delay
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
        self.psi_tick();
        if let Some(pc) = self.wb.as_deref_mut() {
            pc.sample(now);
        }
        !self.run_over()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blkcg::CgroupTree;
    use crate::device::{BlockDevice, DevRq, QueueLimits};
    use crate::report::record::{Recorded, RunRecorder};
    use crate::workload::job::{BsGen, Distribution, RandomMap, RwKind};
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A device that completes every request `lat` after it arrives.
    struct FixedLat {
        limits: QueueLimits,
        lat: Ns,
        /// Complete inside `submit()` (null_blk's irqmode 0/1) when `lat` is 0.
        inline: bool,
    }

    impl BlockDevice for FixedLat {
        fn limits(&self) -> &QueueLimits {
            &self.limits
        }
        fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Completion {
            q.push(now + self.lat, Event::Device(rq.tag as u64));
            if self.inline && self.lat == 0 {
                Completion::Inline
            } else {
                Completion::Later
            }
        }
        fn on_event(&mut self, _now: Ns, token: u64, _q: &mut EventQueue, done: &mut Vec<u32>) {
            done.push(token as u32);
        }
        fn model(&self) -> &'static str {
            "fixed"
        }
        fn latency_model(&self) -> crate::device::LatencyModel {
            crate::device::LatencyModel {
                text: format!("{} ns, flat", self.lat),
                keys: Vec::new(),
            }
        }
    }

    fn dev(lat: Ns, depth: u32) -> Box<dyn BlockDevice> {
        dev_of(lat, depth, false)
    }

    fn dev_of(lat: Ns, depth: u32, inline: bool) -> Box<dyn BlockDevice> {
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
                write_cache: false,
                queue_depth: None,
            },
            lat,
            inline,
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
            thinktime_spin: 0,
            ns_granularity_us: 0,
            rate_bps: [0, 0],
            rate_iops: [0, 0],
            rate_poisson: false,
            thinktime: 0,
            thinktime_blocks: 1,
            thinktime_count_issue: false,
            randommap: RandomMap::NewOrder,
            distribution: Distribution::Random,
            meta: false,
            buffered: None,
            iolog: None,
            prio: Default::default(),
            continue_on_error: 0,
            slat_percentiles: false,
            lat_percentiles: false,
            filename: "/dev/test".into(),
            after: Box::default(),
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
        let out = p.run(|_, _| {}, |_, _| ControlFlow::Continue(()), &mut rec);
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

    /// A QD1 job on a driver that completes inside `->queue_rq()`: libaio's slat holds
    /// the completion path and its clat only the reap; psync's call holds both, with
    /// its cheaper submission.
    #[test]
    fn a_completion_inside_the_submit_call_lands_in_slat() {
        let host = HostCosts {
            fio_loop_ns: 1_000,
            ..HostCosts::default()
        };
        let run_inline = |j: JobParams| {
            let p = Pipeline::new(dev_of(0, 8, true), vec![j], 1, host, 1);
            let mut rec = RunRecorder::keep_all(&CgroupTree::default());
            let out = p.run(|_, _| {}, |_, _| ControlFlow::Continue(()), &mut rec);
            out.jobs[0].1.dd[0].clone()
        };
        let aio = run_inline(job("aio"));
        assert_eq!(
            aio.slat.mean as u64,
            host.submit_ns + host.inline_complete_ns
        );
        assert_eq!(aio.clat.mean as u64, host.reap_ns);
        let per_io = host.submit_ns + host.inline_complete_ns + host.reap_ns + 1_000;
        assert!(
            aio.total_ios.abs_diff(NSEC_PER_SEC / per_io) <= 2,
            "{}",
            aio.total_ios
        );
        let mut j = job("sync");
        j.sync_engine = true;
        let sync = run_inline(j);
        assert_eq!(sync.slat.n, 0);
        assert_eq!(
            sync.clat.mean as u64,
            host.sync_submit_ns + host.inline_complete_ns
        );
        // a later completion wakes the waiting job: complete_ns, whatever the engine
        let mut j = job("sync");
        j.sync_engine = true;
        let timer = run_on(vec![j], 50_000, 8, host);
        let d = &timer.jobs[0].1.dd[0];
        assert_eq!(
            d.clat.mean as u64,
            host.sync_submit_ns + 50_000 + host.complete_ns
        );
    }

    /// Completions that were ready when a deep job's queue filled cost it the reap
    /// (`io_getevents()` returning at once), not the wake-up.
    #[test]
    fn ready_completions_cost_the_reap() {
        let mut j = job("deep");
        j.iodepth = 4;
        let h = HostCosts::default();
        let out = run_on(vec![j], 0, 8, h);
        let d = &out.jobs[0].1.dd[0];
        // every completion is ready by the time the queue is full again: each I/O
        // costs its submission and one reap
        let expect = NSEC_PER_SEC / (h.submit_ns + h.reap_ns);
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

    /// An elevator that lets one request hold a tag at a time (`limit_depth` 1), FIFO;
    /// it counts how often it is asked for the limit.
    #[derive(Default)]
    struct OneAtATime(VecDeque<u32>, Arc<AtomicU64>);

    impl crate::stack::Elevator for OneAtATime {
        fn name(&self) -> &'static str {
            "one-at-a-time"
        }
        fn id(&self) -> crate::stack::PolicyId {
            crate::stack::PolicyId(63)
        }
        fn limit_depth(
            &self,
            _alloc: &crate::stack::TagAlloc,
        ) -> Option<crate::sim::sbitmap::Shallow> {
            self.1.fetch_add(1, Ordering::Relaxed);
            Some(crate::sim::sbitmap::Shallow::Map(1))
        }
        fn min_shallow_depth(&self) -> Option<u32> {
            Some(1)
        }
        fn insert_requests(&mut self, rq: &Request, _now: Ns) {
            self.0.push_back(rq.tag);
        }
        fn has_work(&self) -> bool {
            !self.0.is_empty()
        }
        fn dispatch_request(&mut self, _now: Ns) -> Option<u32> {
            self.0.pop_front()
        }
    }

    #[test]
    fn an_elevator_depth_limit_makes_submitters_wait_for_a_tag() {
        let mut j = job("e");
        j.iodepth = 8;
        let mut p = Pipeline::new(dev(100_000, 64), vec![j], 1, HostCosts::default(), 1);
        let asked = Arc::new(AtomicU64::new(0));
        p.set_stack(Stack {
            elevator: Some(Box::new(OneAtATime(VecDeque::new(), asked.clone()))),
            ..Stack::default()
        });
        let mut rec = RunRecorder::keep_all(&CgroupTree::default());
        let out = p.run(|_, _| {}, |_, _| ControlFlow::Continue(()), &mut rec);
        let d = &out.jobs[0].1.dd[0];
        // one request on the device at a time, 100 µs each: 10,000 IOPS, not QD8's
        // 80,000; the submitter sleeps for the tag, in slat
        assert!((9_500..=10_100).contains(&d.total_ios), "{}", d.total_ios);
        assert!(d.slat.mean > 50_000.0, "slat {}", d.slat.mean);
        // the limit is asked once per request, not again after the queue run or a
        // sleep (`data->shallow_depth` is set before `blk_mq_get_tag()`'s loop): at
        // most the requests that completed plus the one holding the tag and the one
        // asking for it
        let asked = asked.load(Ordering::Relaxed);
        assert!(
            (d.total_ios..=d.total_ios + 2).contains(&asked),
            "asked {asked} times for {} requests",
            d.total_ios
        );
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
        b.after = Box::new([0]);
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
