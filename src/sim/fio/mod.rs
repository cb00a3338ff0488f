//! The fio job machine: each job of a run as fio runs it, from `do_io()`'s loop to the
//! statistics its report is made of.
//!
//! Design
//! ------
//! The idea: a job is a state machine (`Phase`) mirroring the positions in fio's
//! `do_io()` loop: rate check (`rate_ddir()`, with inline-mode quiesce), submit
//! (slat), reap only when the queue is full (`wait_for_completions()`), thinktime
//! after `thinktime_blocks` completions (`handle_thinktime()`), and at the end wait for
//! everything in flight. A completion is reaped — and its clat ends — when the job
//! next waits for completions, as in fio: after the wake-up (`[host] complete_ns`) when
//! it woke the waiting job, after `io_getevents()` returning at once (`reap_ns`,
//! `getevents_call()`) when it was ready as the job came to wait. A sync engine
//! submits for `sync_submit_ns` and has no reap. An I/O of more than one bio (over
//! 1 MiB: `BIO_MAX_VECS` pages) enters the block layer once its first bio's pages are
//! pinned, and the call pins the rest while the stack works on it (`Phase::Pinning`),
//! as `__blkdev_direct_IO()` submits bio by bio. fio's handling of a failed I/O (logged,
//! counted under `continue_on_error`, or stopping the job, which then waits for what
//! is in flight) is `JobRt::io_error()`; a removed disk is one of size 0 to
//! `io_submit()` (a read returns 0 bytes, a write ENOSPC).
//!
//! The jobs are part of the pipeline (`crate::sim::engine`, which owns them, their
//! contexts and the event queue), so the machine is written as methods of
//! [`Pipeline`] in this module: a job's I/O unit (`IoU`, fio's `io_u`) becomes a bio
//! pushed down the stack by the job's context (`Pipeline::run_ctx`), and comes back
//! through `piece_done()` (`bio_endio()` of its last piece) and `reap()`.
//!
//! Moving parts and where they live:
//! - `JobRt`: one job's state, laid out by hand for the per-I/O path
//!   (docs/design.md §8: the first cache line what a completion touches, the second
//!   the top of fio's loop, then the generators and the parameters, then the
//!   statistics on a line boundary; checked at compile time), with its PRNG streams
//!   (offsets and sizes; host noise; cmdprio);
//! - `job_step()` the `do_io()` loop, `submit_returned()` where slat ends,
//!   `piece_done()` / `reap()` / `after_reap()` completions, their reaping and the
//!   thinktime decision, `start_ready()` / `finish_job()` the jobs' order (`stonewall`,
//!   `startdelay`), `usec_sleep()` fio's sleep with its compensation (the process's
//!   `ns_granularity` from [`fio_time_init`]) and `sleep_overshoot()` how late one
//!   `nanosleep()` ends (`[host]` noise);
//! - what fio's parameters mean and the generators (sizes, offsets, rwmix, rate) are
//!   `crate::workload::job`; a job's completions over time `crate::sim::timebins`;
//! - [`stats`]: fio's statistics the machine records per I/O (latency statistics and
//!   histograms, percentiles, depth maps, errors), which `crate::report::fio` formats.
//! - `replay.rs`: a job that replays an I/O log (`read_iolog`: its next I/O from the
//!   log, paced as fio's `iolog_delay()`, its lateness) or writes one (`write_iolog`);
//!   [`statlog`]: fio's bw / lat / iops logs (`write_*_log`, `log_avg_msec`).

mod replay;
pub mod statlog;
pub mod stats;

/// The most a bio holds: `BIO_MAX_VECS` (256) pages of 4 KiB.
const BIO_MAX_BYTES: u64 = 256 * 4096;

use crate::blkcg::ioprio::{Ioprio, IoprioClass, task_ioprio};
use crate::scenario::host::HostCosts;
use crate::sim::bio::req;
use crate::sim::engine::{Pipeline, Stage};
use crate::sim::fio::replay::{IologOut, ReplayNext, ReplayRt};
use crate::sim::fio::statlog::StatLogs;
use crate::sim::fio::stats::{ErrorStats, JobStats};
use crate::sim::inline_deque::InlineDeque;
use crate::sim::prefetch::{prefetch, prefetch_span};
use crate::sim::timebins::TimeBins;
use crate::sim::{Bio, Dir, Event, IoErr, NSEC_PER_MSEC, Ns, SimRng};
use crate::workload::fio::SyncFileRange;
use crate::workload::job::{BsGen, JobParams, OffsetGen, RateDecision, RateState, RwMix};
use crate::writeback::limits::PAGE_SIZE;

/// How often fio's bw/iops logs take a sample (`bwavgtime`, `iopsavgtime`: 500 ms).
pub(crate) const FIO_SAMPLE: Ns = 500 * NSEC_PER_MSEC;

/// How an I/O ended, as the completion event (aio `res`) tells fio.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum IoRes {
    /// Every byte transferred.
    #[default]
    Full,
    /// `res = 0`: a read at or past the end of the disk (a removed disk has size 0).
    Eof,
    Err(IoErr),
}

/// Whose an I/O unit is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum IoKind {
    /// A fio job's I/O.
    #[default]
    Fio,
    /// Pages of a job's file under writeback (`crate::sim::writeback`), from its
    /// wb's flusher or its own `fsync()`: `job` is the file's job.
    Writeback,
    /// Pages of a job's file its buffered read reads in (`crate::sim::readahead`).
    Readahead,
}

/// One fio I/O unit in flight.
#[derive(Debug, Clone, Default)]
pub(super) struct IoU {
    pub(super) job: u32,
    /// The job's cgroup (what the hints of its next I/O need, without its params).
    pub(super) cgroup: u32,
    pub(super) dir_write: bool,
    pub(super) bytes: u64,
    /// Byte offset in the file (fio's error lines name it).
    pub(super) offset: u64,
    pub(super) res: IoRes,
    /// fio's io_u start_time.
    pub(super) start: Ns,
    /// End of submission (slat end / clat start).
    pub(super) issued: Ns,
    /// Pieces (bios) not yet completed.
    pub(super) pieces: u32,
    /// io.stat has counted this I/O's bytes (split remainders count ios only).
    pub(super) bytes_counted: bool,
    pub(super) kind: IoKind,
}

/// What a job does next; mirrors the positions in fio's do_io() loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Phase {
    NotStarted,
    /// Top of the loop: check the end, pick direction, rate.
    Loop,
    /// Issue in this direction now (after a rate sleep).
    Issue(Dir),
    /// io_submit() entered; the bio enters the block layer when the event fires.
    SubmitEnter(u32),
    /// Inside the block layer (context may be sleeping).
    InSubmit(u32),
    /// io_submit() pins the pages of an I/O past its first bio, the block layer
    /// already working on the I/O (`__blkdev_direct_IO()` submits bio by bio).
    Pinning(u32),
    /// Waiting to reap at least one completion (queue full).
    Reap,
    /// io_u_quiesce(): wait for every in-flight I/O, then go on.
    Quiesce(AfterQuiesce),
    /// Sleeping (rate/thinktime); the job event resumes at `Loop`/`Issue`.
    Sleeping(Resume),
    /// Runtime over: waiting for everything in flight.
    Drain,
    Done,
    /// A buffered write (`write()` without O_DIRECT) copying its pages into the page
    /// cache a chunk at a time (`crate::sim::writeback`).
    Buffered(u32),
    /// The chunk's copy is being paid for; its pages turn dirty when it ends.
    Copying(u32),
    /// Paused in `balance_dirty_pages()`; true: another round after the pause.
    DirtyPause(u32, bool),
    /// `fsync()`: the file's dirty pages go out from the job's context, a bio at a
    /// time; true: the job's `end_fsync`.
    Fsync(bool),
    /// `fsync()`: waiting for the file's writeback to end.
    FsyncWait(bool),
    /// A buffered read (`read()` without O_DIRECT): the next batch of cached pages
    /// (`crate::sim::readahead`).
    ReadBatch(u32),
    /// Its call submits the readahead bios it started; true: then looks again, false:
    /// then waits for the batch.
    ReadSubmit(u32, bool),
    /// Sleeping on the lock of the batch's last page, still being read.
    ReadWait(u32),
    /// The batch's copy to the user is being paid for.
    ReadCopy(u32),
}

/// A buffered writer's state: where its write is, its sync rule's counters, how long
/// it was paused.
#[derive(Debug, Clone, Default)]
pub(super) struct BufState {
    /// The pages of the write in progress still to copy: `[next, end)`.
    pub(super) next: u64,
    pub(super) end: u64,
    /// Pages of the chunk being copied.
    pub(super) chunk: u64,
    /// Writes issued (fio's `io_issues[DDIR_WRITE]`).
    pub(super) write_issues: u64,
    /// The last I/O to complete was a sync (fio's `last_was_sync`).
    pub(super) last_was_sync: bool,
    /// The sync in progress: what it writes and waits for, when it began, how far
    /// it got.
    pub(super) sync: SyncCall,
    pub(super) sync_start: Ns,
    pub(super) sync_stage: SyncStage,
    /// The bytes its writes covered since its last sync (fio's `first_write`,
    /// `last_write`, set in `io_completed()`): a `sync_file_range()`'s range.
    pub(super) written: Option<(u64, u64)>,
    /// Time paused in `balance_dirty_pages()`.
    pub(super) paused: Ns,
    /// A buffered read (`crate::sim::readahead`): misses tried at its position (a
    /// readahead, then the page alone), and pages it found cached.
    pub(super) read_missed: u8,
    pub(super) read_hits: u64,
    /// When it began to sleep on a page being read.
    pub(super) read_wait_from: Ns,
    /// A read of a page it needs failed: the next miss reads that page alone.
    pub(super) read_err: Option<IoErr>,
}

/// A sync a buffered job makes between its writes (`crate::sim::writeback`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum SyncCall {
    /// `fsync()` / `fdatasync()` (one call on a block device: `blkdev_fsync()`).
    #[default]
    Fsync,
    /// `sync_file_range()` of pages `(first, n)`, with its `SYNC_FILE_RANGE_*` flags.
    FileRange { pages: (u64, u64), flags: u8 },
}

impl SyncCall {
    /// The pages it writes and waits for; `None`: the whole file.
    pub(super) fn pages(self) -> Option<(u64, u64)> {
        match self {
            SyncCall::Fsync => None,
            SyncCall::FileRange { pages, .. } => Some(pages),
        }
    }

    fn has(self, flag: u8) -> bool {
        match self {
            SyncCall::Fsync => flag & (SyncFileRange::WRITE | SyncFileRange::WAIT_AFTER) != 0,
            SyncCall::FileRange { flags, .. } => flags & flag != 0,
        }
    }

    pub(super) fn waits_before(self) -> bool {
        self.has(SyncFileRange::WAIT_BEFORE)
    }

    pub(super) fn writes(self) -> bool {
        self.has(SyncFileRange::WRITE)
    }

    pub(super) fn waits_after(self) -> bool {
        self.has(SyncFileRange::WAIT_AFTER)
    }

    /// Its bios' flags: `REQ_SYNC` for `WB_SYNC_ALL` (`wbc_to_write_flags()`), which
    /// `sync_file_range()` asks for only with all three flags.
    pub(super) fn opf(self) -> u8 {
        match self {
            SyncCall::FileRange { flags, .. } if flags != SyncFileRange::WRITE_AND_WAIT => 0,
            _ => req::SYNC,
        }
    }
}

/// How far the sync in progress got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum SyncStage {
    #[default]
    Begun,
    /// Waiting for the range's writeback before writing (`SYNC_FILE_RANGE_WAIT_BEFORE`).
    WaitingBefore,
    /// Its dirty pages are out, their bios being submitted.
    Writing,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum AfterQuiesce {
    /// Sleep this many µs (reckoned before the quiesce, as `rate_ddir()` does: with
    /// `[host] fio_sleep_compensation`), then issue in this direction.
    RateSleepFor(u64, Dir),
    /// Sleep until this time (the I/O's due time), then issue in this direction.
    RateSleepUntil(Ns, Dir),
    /// Think, then count the next `thinktime_blocks` from this many blocks: the
    /// counter as `handle_thinktime()` read it before `io_u_quiesce()` reaped the rest.
    Think(u64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Resume {
    Loop,
    Issue(Dir),
    /// A replay's wait polled as fio 3.36+ polls it (`[host] fio_replay_poll`): each
    /// completion is reaped as it comes; back to the loop at the wake.
    Poll,
}

/// One fio job's state. Laid out by hand, what every I/O touches first: with
/// thousands of jobs each I/O finds its job's lines cold, so the counters and the
/// phase the loop checks per I/O share the first cache line (`align(64)` starts
/// every job on one), the top of fio's loop the second; the generators and the
/// parameters fio's loop reads follow without a gap (the parameters last, their
/// per-I/O part first: `JobParams`), then fio's statistics, from a line boundary on
/// (which the records before them end on: no padding), then the rest.
#[repr(C, align(64))]
pub(super) struct JobRt {
    // --- per I/O: the first line
    pub(super) phase: Phase,
    /// Submitted and not yet reaped (fio's cur_depth).
    pub(super) inflight: u32,
    pub(super) wake_scheduled: bool,
    /// A fatal error stopped the job: it only waits for what is in flight.
    pub(super) stopped: bool,
    /// Its io_getevents() is returning with completions: paid by the completion that
    /// woke it (`[host] complete_ns`) or, when they were ready as it came to wait, by
    /// `[host] reap_ns`. The next reap takes them at once.
    pub(super) getevents_paid: bool,
    pub(super) blocks_counter: u64,
    pub(super) last_think_blocks: u64,
    /// Completed at the device, not yet reaped (what a completion adds to).
    pub(super) completed: InlineDeque<u32, 2>,
    // --- per I/O, the second line: the top of fio's loop
    pub(super) end: Option<Ns>,
    pub(super) issued_bytes: u64,
    /// Statistics start (after ramp_time).
    pub(super) stats_start: Ns,
    pub(super) next_sample: Ns,
    /// fio's epoch: when the job started (after startdelay).
    pub(super) epoch: Ns,
    pub(super) rng: SimRng,
    // --- per I/O, from the third line: the generators, the rate engine's and the
    // timeline's heads, the parameters' per-I/O part
    pub(super) mix: RwMix,
    /// Completions over time (IOPS and mean latency pictures).
    pub(super) timeline: TimeBins,
    pub(super) rate: RateState,
    pub(super) offsets: OffsetGen,
    pub(super) p: JobParams,
    // --- fio's statistics, on a line boundary (each latency statistic a line)
    pub(super) stats: JobStats,
    // --- the rest
    /// Host noise (sleep overshoot), a stream of its own so it never shifts offsets.
    pub(super) host_rng: SimRng,
    /// fio's `prio_state`: the cmdprio draws (a stream of its own, drawn only with
    /// `cmdprio_percentage`).
    pub(super) prio_rng: SimRng,
    pub(super) finished_at: Ns,
    pub(super) buf: BufState,
    /// A replaying job's place in its log (`read_iolog`).
    pub(super) replay: Option<Box<ReplayRt>>,
    /// A job writing its I/O log (`write_iolog`): the lines not yet recorded.
    pub(super) iolog_out: Option<Box<IologOut>>,
    /// A job writing fio's bw / lat / iops logs: their lines not yet recorded.
    pub(super) stat_logs: Option<Box<StatLogs>>,
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
    /// Job `p` before it starts: its generators and its PRNG streams (seeded from
    /// `seed` and the job's `seed_name`), its statistics empty.
    pub(super) fn new(p: JobParams, seed: u64) -> JobRt {
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
            getevents_paid: false,
            buf: BufState::default(),
            replay: p
                .iolog
                .as_ref()
                .and_then(|l| l.replay.clone())
                .map(|log| Box::new(ReplayRt::new(log))),
            iolog_out: p
                .iolog
                .as_ref()
                .and_then(|l| l.write.clone())
                .map(|name| Box::new(IologOut::new(name, p.filename.clone()))),
            stat_logs: p
                .iolog
                .as_ref()
                .and_then(|l| l.stat.as_ref())
                .map(|spec| Box::new(StatLogs::new(spec))),
            p,
        }
    }

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
    pub(super) fn prefetch_head(&self) {
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

/// When a job ran, in simulated ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobTimes {
    pub epoch: Ns,
    pub stats_start: Ns,
    pub finished: Ns,
    /// Time a buffered writer spent paused in `balance_dirty_pages()`.
    pub dirty_paused: Ns,
}

/// What one of fio's pauses (a think time, a rate sleep) took: in all, and the part
/// busy-waited on the CPU; whether it slept at all (a pause shorter than the
/// granularity is spun whole and keeps the CPU).
#[derive(Debug, Clone, Copy, Default)]
struct FioSleep {
    took: Ns,
    spun: Ns,
    slept: bool,
}

impl FioSleep {
    /// A busy-wait of `ns` on the CPU (`usec_spin()`, `thinktime_spin`).
    fn spin(ns: Ns) -> FioSleep {
        FioSleep {
            took: ns,
            spun: ns,
            slept: false,
        }
    }

    /// This pause, then `next`.
    fn then(&mut self, next: FioSleep) {
        self.took += next.took;
        self.spun += next.spun;
        self.slept |= next.slept;
    }
}

/// fio's `fio_time_init()` (time.c) in one fio process: ten `nanosleep(1 µs)` calls,
/// each timed in whole µs, the longest kept as `ns_granularity` (µs), which every
/// sleep of the process then asks the kernel for less (`Pipeline::usec_sleep()`). Each
/// call lasts its µs and the host's lateness after a 1 µs sleep (its
/// `wakeup_lateness`, else the timer slack), drawn from `rng`; the scheduling noise
/// (`wakeup_jitter_ns`, the slips) is left out: docs/validation.md §8 fitted it to the
/// sleeps' ends as fio's compensation leaves them.
pub fn fio_time_init(host: &HostCosts, rng: &mut SimRng) -> u64 {
    (0..10)
        .map(|_| {
            let late = match &host.wakeup_lateness {
                Some(w) => w.at(1000, rng.unit()),
                None => host.timer_slack_ns,
            };
            (1000 + late) / 1000
        })
        .max()
        .unwrap_or(1)
}

impl Pipeline {
    /// bio_endio() of one piece of fio I/O `io`: the I/O completes with its last
    /// piece, failed if any piece failed (`bio_chain()` keeps the first error).
    #[inline(always)]
    pub(super) fn piece_done(&mut self, io: u32, err: Option<IoErr>) {
        let iou = &mut self.ios[io as usize];
        match iou.kind {
            IoKind::Fio => {}
            IoKind::Writeback => return self.writeback_piece_done(io, err),
            IoKind::Readahead => return self.readahead_piece_done(io, err),
        }
        if let (Some(e), IoRes::Full) = (err, iou.res) {
            iou.res = IoRes::Err(e);
        }
        iou.pieces -= 1;
        if iou.pieces == 0 {
            let j = iou.job;
            // psi_mark(), on the fields: `iou` is still borrowed
            if self.psi.is_some()
                && !std::mem::replace(&mut self.ctxs[(j + 1) as usize].psi_marked, true)
            {
                self.psi_dirty.push(j + 1);
            }
            let job = &mut self.jobs[j as usize];
            job.completed.push_back(io);
            if job.phase == Phase::Sleeping(Resume::Poll) {
                // fio 3.36+'s replay wait: its poll reaps the completion at once
                self.reap(j, usize::MAX);
                return;
            }
            if matches!(job.phase, Phase::Reap | Phase::Quiesce(_) | Phase::Drain) {
                let dir = if iou.dir_write { Dir::Write } else { Dir::Read };
                job.prefetch_reap_and_loop(dir, self.job_timelines);
                // and what its next I/O's submission reads: the context, the cgroup's
                // io.stat counters and the rq-qos entries' per-cgroup records
                prefetch(&self.ctxs[(j + 1) as usize]);
                prefetch(&self.cg_stat[iou.cgroup as usize]);
                for p in &self.stack.rq_qos {
                    p.prefetch(iou.cgroup);
                }
                // on one CPU the interrupt's part was paid by the interrupt (or, for a
                // request the driver ended in `->queue_rq()`, by its dispatcher): the
                // rest, to the job's io_getevents() returning
                let mut cost = self.host.complete_cost(iou.bytes);
                if self.cpu.is_some() {
                    cost -= self.host.complete_irq_cost(iou.bytes);
                }
                self.jobs[j as usize].getevents_paid = true;
                self.run_for(j, cost);
            }
        }
    }

    /// Job `j` runs `ns` of host CPU, then goes on: on the guest CPU when it is
    /// modelled (`crate::sim::cpu`), else after `ns`.
    pub(super) fn run_for(&mut self, j: u32, ns: Ns) {
        self.psi_mark(j + 1);
        let job = &mut self.jobs[j as usize];
        if job.wake_scheduled {
            return;
        }
        job.wake_scheduled = true;
        match &mut self.cpu {
            Some(cpu) => cpu.request(self.q.now(), j + 1, ns, Event::Job(j), &mut self.q),
            None => self.q.after(ns, Event::Job(j)),
        }
    }

    pub(super) fn wake_job(&mut self, j: u32, delay: Ns) {
        self.psi_mark(j + 1);
        let job = &mut self.jobs[j as usize];
        if !job.wake_scheduled {
            job.wake_scheduled = true;
            self.q.after(delay, Event::Job(j));
        }
    }

    /// Start every job whose `after` jobs have all ended, in job order. Once every job
    /// has started this returns at once, so the end of each of N jobs costs O(1), not
    /// a walk over all N.
    pub(super) fn start_ready(&mut self) {
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
            if let Some(r) = job.replay.as_deref_mut() {
                r.start(at);
            }
            if let Some(out) = job.iolog_out.as_deref_mut() {
                out.open(at);
            }
            job.phase = Phase::Loop;
            job.wake_scheduled = true;
            self.q.push(at, Event::Job(j as u32));
            self.psi_mark(j as u32 + 1);
        }
    }

    /// The fio do_io() loop for job `j`, run until it has to wait or to spend time.
    pub(super) fn job_step(&mut self, j: u32) {
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
                Phase::Buffered(_) | Phase::Copying(_) | Phase::DirtyPause(..) => {
                    self.buffered_write_step(j);
                    return;
                }
                Phase::Fsync(_) | Phase::FsyncWait(_) => {
                    self.fsync_step(j);
                    return;
                }
                Phase::ReadBatch(_)
                | Phase::ReadSubmit(..)
                | Phase::ReadWait(_)
                | Phase::ReadCopy(_) => {
                    self.buffered_read_step(j);
                    return;
                }
                Phase::Sleeping(resume) => {
                    job.phase = match resume {
                        Resume::Loop | Resume::Poll => Phase::Loop,
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
                    let go = if job.replay.is_some() {
                        match self.replay_next(j, now) {
                            ReplayNext::Io(d) => d,
                            ReplayNext::Paused => return,
                            ReplayNext::End => {
                                self.jobs[j as usize].phase = Phase::Drain;
                                continue;
                            }
                        }
                    } else {
                        if let Some(call) = self.sync_due(j) {
                            // get_rw_ddir(): DDIR_SYNC (or _DATASYNC, _SYNC_FILE_RANGE), run
                            // inline (fio 3.33's psync and libaio alike)
                            let job = &mut self.jobs[j as usize];
                            job.buf.sync = call;
                            job.buf.sync_start = now;
                            job.phase = Phase::Fsync(false);
                            self.run_for(j, self.host.sync_submit_ns);
                            return;
                        }
                        let job = &mut self.jobs[j as usize];
                        let dir = job.mix.next_dir(&mut job.rng);
                        if job.rate.active() {
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
                                RateDecision::Sleep(usec, d) => {
                                    job.mix.set_current(d);
                                    let then = if self.host.fio_sleep_compensation {
                                        AfterQuiesce::RateSleepFor(usec, d)
                                    } else {
                                        AfterQuiesce::RateSleepUntil(
                                            job.epoch + (now_us + usec) * 1000,
                                            d,
                                        )
                                    };
                                    job.phase = Phase::Quiesce(then);
                                    continue;
                                }
                            }
                        } else {
                            dir
                        }
                    };
                    let job = &mut self.jobs[j as usize];
                    // fio's own per-I/O work before the next I/O is set up
                    if self.host.fio_loop_ns > 0 {
                        job.phase = Phase::Sleeping(Resume::Issue(go));
                        self.run_for(j, self.host.fio_loop_ns);
                        return;
                    }
                    job.phase = Phase::Issue(go);
                }
                Phase::Issue(dir) => {
                    let (bytes, offset) = match job.replay.as_deref_mut() {
                        Some(r) => {
                            let (bytes, offset, late) = r.take_io(now);
                            if let Some(late) = late.filter(|_| now >= job.stats_start) {
                                job.stats.lateness.add(late);
                            }
                            (bytes, offset)
                        }
                        None => {
                            let bytes = job.p.bs[dir.idx()].next(&mut job.rng);
                            (bytes, job.offsets.next(bytes, &mut job.rng))
                        }
                    };
                    if let Some(out) = job.iolog_out.as_deref_mut() {
                        out.io_line(now, dir.name(), offset, bytes);
                    }
                    let p = &job.p;
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
                        kind: IoKind::Fio,
                    });
                    let job = &mut self.jobs[j as usize];
                    job.issued_bytes += bytes;
                    job.mix.issued(dir);
                    job.rate.issued(dir, bytes, &mut job.rng);
                    if job.p.thinktime_count_issue {
                        job.blocks_counter += 1;
                    }
                    // the pipeline's own line first: a run without a page cache
                    // never reads the job's cold `buffered`
                    if self.wb.is_some()
                        && dir == Dir::Read
                        && job.p.buffered.is_some()
                        && !self.dead
                    {
                        // a buffered read: from the page cache (crate::sim::readahead);
                        // the call itself first
                        job.buf.next = offset / PAGE_SIZE;
                        job.buf.end = (offset + bytes).div_ceil(PAGE_SIZE);
                        job.buf.chunk = 0;
                        job.phase = Phase::ReadCopy(io);
                        self.run_for(j, self.host.read_call_ns);
                        return;
                    }
                    if self.wb.is_some()
                        && dir == Dir::Write
                        && job.p.buffered.is_some()
                        && !self.dead
                    {
                        // a buffered write: into the page cache, no bio
                        // (crate::sim::writeback); the syscall's entry first
                        job.buf.write_issues += 1;
                        job.buf.next = offset / PAGE_SIZE;
                        job.buf.end = (offset + bytes).div_ceil(PAGE_SIZE);
                        job.phase = Phase::Buffered(io);
                        let entry = if job.p.sync_engine {
                            self.host.sync_submit_ns
                        } else {
                            self.host.submit_ns
                        };
                        self.run_for(j, entry);
                        return;
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
                    // the pages of the first bio; the rest after it went in
                    let first = bytes.min(BIO_MAX_BYTES);
                    let submit = if job.p.sync_engine {
                        self.host.sync_submit_cost(first)
                    } else {
                        self.host.submit_cost(first)
                    };
                    let elevator = self.stack.elevator.as_ref();
                    let cost = submit + elevator.map_or(0, |e| e.submit_ns(&self.host));
                    self.run_for(j, cost);
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
                Phase::Pinning(io) => {
                    self.submit_returned(j, io);
                    return;
                }
                Phase::Reap => {
                    let max = job.p.reap_batch_max.max(1) as usize;
                    if job.completed.is_empty() || self.getevents_call(j) {
                        return;
                    }
                    self.reap(j, max);
                    self.after_reap(j);
                }
                Phase::Quiesce(then) => {
                    if job.completed.len() as u32 != job.inflight {
                        return;
                    }
                    if job.inflight > 0 {
                        if self.getevents_call(j) {
                            return;
                        }
                        self.reap(j, usize::MAX);
                    }
                    let job = &mut self.jobs[j as usize];
                    if job.stopped {
                        continue;
                    }
                    match then {
                        AfterQuiesce::Think(b) => {
                            job.last_think_blocks = b;
                            job.phase = Phase::Sleeping(Resume::Loop);
                            let pause = self.think_pause(j, now);
                            if pause.took > 0 {
                                self.pause_job(j, pause);
                                return;
                            }
                        }
                        AfterQuiesce::RateSleepFor(usec, d) => {
                            if self.rate_sleep(j, now, now + usec * 1000, d) {
                                return;
                            }
                        }
                        AfterQuiesce::RateSleepUntil(at, d) => {
                            if self.rate_sleep(j, now, at, d) {
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
                        if self.getevents_call(j) {
                            return;
                        }
                        self.reap(j, usize::MAX);
                    }
                    let job = &mut self.jobs[j as usize];
                    let end_fsync = job.p.buffered.as_ref().is_some_and(|b| b.end_fsync);
                    if end_fsync && job.buf.write_issues > 0 && !job.stopped && self.wb.is_some() {
                        // do_io()'s end: fio_io_sync(), inside the runtime, in no
                        // statistic
                        job.buf.sync = SyncCall::Fsync;
                        job.phase = Phase::Fsync(true);
                        self.run_for(j, self.host.sync_submit_ns);
                        return;
                    }
                    self.finish_job(j);
                    return;
                }
            }
        }
    }

    /// Job `j` is about to reap completions that are ready: an async engine's
    /// io_getevents() call not yet paid for costs `[host] reap_ns` first (true: the
    /// job resumes then). A sync engine's call returned with its result.
    fn getevents_call(&mut self, j: u32) -> bool {
        let job = &mut self.jobs[j as usize];
        if job.getevents_paid || job.p.sync_engine || self.host.reap_ns == 0 {
            return false;
        }
        job.getevents_paid = true;
        self.run_for(j, self.host.reap_ns);
        true
    }

    /// `handle_thinktime()`'s pause for job `j` at `now`: `thinktime_spin` spun, then
    /// the rest of `thinktime` slept, each cut to the runtime left.
    fn think_pause(&mut self, j: u32, now: Ns) -> FioSleep {
        let job = &self.jobs[j as usize];
        let runtime_left = |at: Ns| job.end.map_or(Ns::MAX, |e| e.saturating_sub(at));
        let spin = job.p.thinktime_spin.min(runtime_left(now));
        let rest = (job.p.thinktime - spin).min(runtime_left(now + spin));
        let mut pause = FioSleep::spin(spin);
        if rest > 0 {
            pause.then(self.sleep(j, rest));
        }
        pause
    }

    /// `rate_ddir()`'s sleep of job `j` after its quiesce, at `now`, to wake at `at`,
    /// then to issue in direction `d`; one past the end of the run ends the job there.
    /// False when `at` has come: the loop goes on at once.
    fn rate_sleep(&mut self, j: u32, now: Ns, at: Ns, d: Dir) -> bool {
        let job = &mut self.jobs[j as usize];
        if let Some(e) = job.end.filter(|&e| at > e) {
            job.phase = Phase::Sleeping(Resume::Loop);
            self.wake_job(j, e.saturating_sub(now));
            return true;
        }
        job.phase = Phase::Sleeping(Resume::Issue(d));
        if at <= now {
            return false;
        }
        let pause = self.sleep(j, at - now);
        self.pause_job(j, pause);
        true
    }

    /// One of fio's sleeps of `ns`: with `[host] fio_sleep_compensation` fio's own
    /// ([`Pipeline::usec_sleep`]), else `ns` and the whole lateness of one wake-up.
    fn sleep(&mut self, j: u32, ns: Ns) -> FioSleep {
        if self.host.fio_sleep_compensation {
            return self.usec_sleep(j, ns / 1000);
        }
        FioSleep {
            took: ns + self.sleep_overshoot(j, ns),
            spun: 0,
            slept: true,
        }
    }

    /// fio's `usec_sleep()` (time.c) for job `j`, asked for `usec` µs: each round asks
    /// the kernel for the process's `ns_granularity` less than what is left (at most a
    /// second and the rest's sub-second part), measures what the sleep took in whole µs
    /// and goes round again for what is still left; a rest shorter than the granularity
    /// is busy-waited (`usec_spin()`). So a sleep ends on time (to the µs) unless a
    /// wake-up is later than the lateness the process timed at start-up
    /// ([`fio_time_init`]); only that excess shows.
    fn usec_sleep(&mut self, j: u32, mut usec: u64) -> FioSleep {
        let granularity = self.jobs[j as usize].p.ns_granularity_us;
        let mut sleep = FioSleep::default();
        loop {
            if usec < granularity {
                sleep.then(FioSleep::spin(usec * 1000));
                break;
            }
            let ts = usec - granularity;
            let req = (ts / 1_000_000).min(1) * 1_000_000 + ts % 1_000_000;
            let took = req * 1000 + self.sleep_overshoot(j, req * 1000);
            sleep.took += took;
            sleep.slept = true;
            let took_us = took / 1000;
            if took_us >= usec {
                break;
            }
            if took_us == 0 {
                // fio would sleep 0 µs again until its clock moves; a host without any
                // lateness never moves it: the rest is spun
                sleep.then(FioSleep::spin(usec * 1000));
                break;
            }
            usec -= took_us;
        }
        sleep
    }

    /// Job `j` pauses (`Phase::Sleeping`): a spin is CPU time, a sleep a timer
    /// (whose wake-up then waits for the CPU like any other).
    fn pause_job(&mut self, j: u32, pause: FioSleep) {
        if pause.slept {
            self.wake_job(j, pause.took);
        } else {
            self.run_for(j, pause.spun);
        }
    }

    /// How late one `nanosleep()` of `sleep` ns of job `j` ends: the host's measured
    /// lateness distribution for that length when it has one, else the timer slack;
    /// then scheduling noise (an exponential delay, then a rare slip). Each drawn only
    /// when configured, so that a host without it draws nothing.
    fn sleep_overshoot(&mut self, j: u32, sleep: Ns) -> Ns {
        let h = &self.host;
        let rng = &mut self.jobs[j as usize].host_rng;
        let mut late = match &h.wakeup_lateness {
            Some(w) => w.at(sleep, rng.unit()),
            None => h.timer_slack_ns,
        };
        if h.wakeup_jitter_ns > 0 {
            let u = rng.unit_open0();
            late += (-(u.ln()) * h.wakeup_jitter_ns as f64) as Ns;
        }
        if h.wakeup_slip_ppm > 0 && rng.below(1_000_000) < u64::from(h.wakeup_slip_ppm) {
            late += (rng.unit_open0() * h.wakeup_slip_ns as f64) as Ns;
        }
        late
    }

    pub(super) fn alloc_io(&mut self, io: IoU) -> u32 {
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
    pub(super) fn submit_to_dead_disk(&mut self, j: u32, io: u32) {
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
    pub(super) fn submit_returned(&mut self, j: u32, io: u32) {
        // an I/O of more than one bio: its first went in with its pages pinned; the
        // call pins the rest now, while the block layer works on the first
        // (`__blkdev_direct_IO()`: bio_iov_iter_get_pages() then submit_bio(), per bio)
        let bytes = self.ios[io as usize].bytes;
        if bytes > BIO_MAX_BYTES && matches!(self.jobs[j as usize].phase, Phase::InSubmit(_)) {
            // the per-page part of the submission cost, past the first bio's pages
            let rest = self.host.submit_cost(bytes) - self.host.submit_cost(BIO_MAX_BYTES);
            self.jobs[j as usize].phase = Phase::Pinning(io);
            self.run_for(j, rest);
            return;
        }
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
            if let Some(l) = job.stat_logs.as_deref_mut() {
                l.submitted(
                    (now - job.stats_start) / NSEC_PER_MSEC,
                    dir,
                    iou.bytes,
                    slat,
                );
            }
        }
        if let Some(r) = job.replay.as_deref_mut() {
            // `td->last_issue`: before a sync engine's call, after an async one's
            r.last_issue = iou.issued;
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
            job.phase = Phase::Quiesce(AfterQuiesce::Think(job.blocks_counter));
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
            // io_completed(): a reaped I/O without error counts in io_blocks, which
            // thinktime_blocks_type=complete counts (not the device's completion: fio
            // sees an I/O done when it reaps it)
            if failed.is_none() && !job.p.thinktime_count_issue {
                job.blocks_counter += 1;
            }
            job.buf.last_was_sync = false;
            if failed.is_none() && dir == Dir::Write && self.wb.is_some() {
                let (lo, hi) = (iou.offset, iou.offset + iou.bytes);
                job.buf.written = Some(
                    job.buf
                        .written
                        .map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))),
                );
            }
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
                if let Some(l) = job.stat_logs.as_deref_mut() {
                    let ms = (now - job.stats_start) / NSEC_PER_MSEC;
                    l.completed(ms, dir, bytes, now - iou.start, now - iou.issued);
                }
                if self.job_timelines {
                    job.timeline.add(now, now - iou.start);
                }
            }
            self.free_ios.push(io);
        }
        job.inflight -= n as u32;
        job.getevents_paid = false;
        job.stats.mark_complete(n as u32);
        if job.stopped && !was_stopped && !job.completed.is_empty() {
            self.reap(j, usize::MAX);
        }
    }

    pub(super) fn finish_job(&mut self, j: u32) {
        let now = self.q.now();
        let job = &mut self.jobs[j as usize];
        job.phase = Phase::Done;
        if let Some(out) = job.iolog_out.as_deref_mut() {
            out.file_line(now, "close");
        }
        if let Some(l) = job.stat_logs.as_deref_mut() {
            l.finish(now.saturating_sub(job.stats_start) / NSEC_PER_MSEC);
        }
        self.jobs_done += 1;
        job.finished_at = now;
        self.psi_mark(j + 1);
        // every job that started has ended: the device's last opener closes it
        if self.wb.is_some() && self.jobs_done + self.nr_not_started == self.jobs.len() {
            self.last_close(j);
        }
        self.start_ready();
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
