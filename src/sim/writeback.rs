//! The pipeline's side of buffered writes (`crate::writeback` holds the kernel's
//! state and arithmetic): a buffered job's `write()` copying into the page cache and
//! pausing in `balance_dirty_pages()`, its `fsync()`, and each cgroup's flusher.
//!
//! Design
//! ------
//! The idea: the page cache decides *when* the device sees a buffered write and *who*
//! submits it; the stack below is the same as for direct I/O. So a buffered write
//! never becomes a bio in the writer's call: the job's `write()` copies its pages a
//! chunk at a time (`[host] page_copy_ns` a page: `generic_perform_write()`), marks
//! them dirty, and after each chunk asks `balance_dirty_pages_ratelimited()`, which
//! may pause the writer for whole jiffies (`io_schedule_timeout()`, a timer-wheel
//! timer); the call ends when the last page is copied. The device sees the pages when
//! the wb's flusher, or the writer's own `fsync()`, puts them under writeback.
//!
//! Moving parts:
//! - [`PageCache`]: the [`Writeback`] model, and one `Flusher` per cgroup with a
//!   buffered writer — a submission context of its own (`Owner::Flusher`) that
//!   pushes the wb's writeback bios, charged to that cgroup, down the stack like a
//!   job's, sleeping where a job would (an rq-qos entry, a tag) and never held by a
//!   bio-level policy (blk-throttle queues the bio and the flusher goes on);
//! - the flusher's work (`wb_workfn()` → `wb_do_writeback()`): the periodic writeback
//!   of expired files when `dirty_writeback_centisecs` has passed since the last
//!   (`wb_check_old_data_flush()`), then background writeback while over the
//!   background thresholds (`wb_check_background_flush()`), a chunk at a time
//!   (`next_chunk()`), then it re-arms its delayed work while the wb has dirty pages
//!   (`wb_wakeup_delayed()`). Woken meanwhile (`wb_wakeup()`: a writer over the
//!   background threshold) it runs again once done. Its timers are delayed work on
//!   the timer wheel (`Event::WbWork`, `Event::WbBandwidth`);
//! - a writeback bio is an I/O unit of kind `IoKind::Writeback`: its completion
//!   ends the writeback of its pages (`end_writeback()`), which is what the
//!   bandwidth estimate counts and what a waiting `fsync()` waits for;
//! - fio's side (`crate::sim::fio`): the job phases `Buffered`, `Copying`,
//!   `DirtyPause`, `Fsync` and `FsyncWait` route here.
//!
//! CPU: a flusher bio costs `[host] submit_ns` and `submit_page_ns` (the pages' walk
//! and the bio's set-up); with `[host] cpus = 1` the flusher is a task of the one CPU
//! like a job.

use std::collections::VecDeque;

use crate::blkcg::ioprio::task_ioprio;
use crate::sim::bio::req;
use crate::sim::engine::{Owner, Pipeline, Stage};
use crate::sim::fio::{IoKind, IoRes, IoU, Phase, SyncCall, SyncStage};
use crate::sim::{Bio, Dir, Event, IoErr, Ns, jiffies};
use crate::stack::Recorder;
use crate::writeback::limits::{PAGE_SIZE, max_pause};
use crate::writeback::readahead::{Bdi, Fadvise, MmBehaviour};
use crate::writeback::timeline::WbRow;
use crate::writeback::{VmWriteback, WorkKind, Writeback, WritebackConfig};

/// The most pages one writeback or readahead bio holds: `BIO_MAX_VECS`.
pub(super) const MAX_RUN_PAGES: u64 = 256;

/// One cgroup's flusher: its context and its work's state.
#[derive(Debug)]
struct Flusher {
    ctx: u32,
    /// The work running, and which part of it.
    running: Option<WorkKind>,
    /// Woken while running: run again once done.
    rerun: bool,
    /// The device's last close asked for every dirty page (`WorkKind::Sync`).
    sync_pending: bool,
    /// When the delayed work (`wb->dwork`) runs, if pending.
    dwork: Option<Ns>,
    /// When the bandwidth update (`wb->bw_dwork`) runs, if pending.
    bw_work: Option<Ns>,
    /// The chunk's runs still to submit: (file, first page, pages).
    runs: VecDeque<(u32, u64, u64)>,
}

/// The run's page cache and its flushers.
#[derive(Debug)]
pub struct PageCache {
    pub model: Writeback,
    jiffies0: u64,
    /// Per cgroup: its flusher, if it has buffered writers.
    flushers: Vec<Option<Flusher>>,
    scratch: Vec<(u32, u64, u64)>,
    pub(super) scratch_runs: Vec<(u64, u64)>,
    /// Each job's own bios still to submit, as runs of its file: its `fsync()`'s or
    /// its read's readahead.
    pub(super) submit_runs: Vec<VecDeque<(u64, u64)>>,
    /// When the last writeback bio completed.
    pub last_written: Option<Ns>,
    /// The job whose `close()` was the device's last: it waits in `sync_blockdev()`
    /// until every page is written (iowait for io.pressure, `crate::sim::pressure`).
    pub closer: Option<u32>,
    /// Timeline rows not yet handed to the recorder.
    rows: Vec<WbRow>,
}

impl PageCache {
    fn jiffies(&self, now: Ns) -> u64 {
        jiffies::at(now, self.jiffies0, self.model.hz())
    }

    fn ns_of(&self, j: u64) -> Ns {
        jiffies::ns_of(j, self.jiffies0, self.model.hz())
    }

    /// Nothing dirty, nothing under writeback.
    pub fn clean(&self) -> bool {
        self.model.nr_dirty == 0 && self.model.nr_writeback == 0
    }

    /// The timeline's rows at a sample tick: the global line, then each flusher's wb.
    pub(super) fn sample(&mut self, now: Ns) {
        let g = self.model.global_state();
        self.rows.push(WbRow::Global {
            at: now,
            dirty: g.dirty,
            writeback: g.writeback,
            thresh: g.thresh,
            bg_thresh: g.bg_thresh,
        });
        for (cg, fl) in self.flushers.iter().enumerate() {
            if fl.is_none() {
                continue;
            }
            let wb = &self.model.wbs[cg];
            self.rows.push(WbRow::Wb {
                at: now,
                cgroup: cg as u32,
                dirty: wb.reclaimable,
                writeback: wb.writeback,
                written: wb.written,
                write_bw: wb.bw.avg_write_bandwidth,
                dirty_ratelimit: wb.bw.dirty_ratelimit,
            });
        }
    }

    /// Hand the rows made since the last call to `rec`.
    pub(super) fn drain(&mut self, rec: &mut dyn Recorder) {
        for r in self.rows.drain(..) {
            rec.row(&r);
        }
    }
}

impl Pipeline {
    /// Give the run a page cache if a job reads or writes buffered (else nothing
    /// changes): the `vm.*` sysctls, each cgroup's parent and `memory.max`, the page
    /// cache's behaviours (`mm.*`) and the device's `read_ahead_kb`. Each cgroup with a
    /// buffered writer gets a flusher context. Call before the run starts, after
    /// [`Pipeline::set_blk_mq`] (its `HZ`).
    pub fn set_writeback(
        &mut self,
        vm: VmWriteback,
        cgroups: Vec<(Option<u32>, Option<u64>)>,
        mm: MmBehaviour,
        read_ahead_kb: u64,
    ) {
        let writes_buffered =
            |p: &crate::workload::job::JobParams| p.buffered.is_some() && p.kind.write;
        if !self.jobs.iter().any(|j| j.p.buffered.is_some()) {
            return;
        }
        let cfg = WritebackConfig {
            hz: self.hz,
            vm,
            dirtyable_bytes: self.host.memory,
            cgroups,
            writers: self.jobs.iter().map(|j| j.p.cgroup).collect(),
            one_cpu: self.host.cpus == 1,
            jiffies0: jiffies::initial_jiffies(self.hz),
            mm,
            bdi: Bdi {
                ra_pages: read_ahead_kb * 1024 / PAGE_SIZE,
                // blk_apply_bdi_limits(): max_sectors >> PAGE_SECTORS_SHIFT
                io_pages: u64::from(self.limits().max_sectors_kb) * 1024 / PAGE_SIZE,
            },
            isize_pages: self.limits().capacity / PAGE_SIZE,
            advice: self
                .jobs
                .iter()
                .map(|j| j.p.buffered.as_ref().map_or(Fadvise::Normal, |b| b.fadvise))
                .collect(),
        };
        let jiffies0 = cfg.jiffies0;
        let mut flushers: Vec<Option<Flusher>> =
            (0..cfg.cgroups.len().max(1)).map(|_| None).collect();
        let buffered: Vec<u32> = self
            .jobs
            .iter()
            .filter(|j| writes_buffered(&j.p))
            .map(|j| j.p.cgroup)
            .collect();
        for cg in buffered {
            if flushers[cg as usize].is_none() {
                let ctx = self.add_ctx(Owner::Flusher(cg));
                flushers[cg as usize] = Some(Flusher {
                    ctx,
                    running: None,
                    rerun: false,
                    sync_pending: false,
                    dwork: None,
                    bw_work: None,
                    runs: VecDeque::new(),
                });
            }
        }
        self.wb = Some(Box::new(PageCache {
            model: Writeback::new(&cfg),
            jiffies0,
            flushers,
            scratch: Vec::new(),
            scratch_runs: Vec::new(),
            submit_runs: vec![VecDeque::new(); cfg.writers.len()],
            last_written: None,
            closer: None,
            rows: Vec::new(),
        }));
    }

    /// The run's page cache, if it has one.
    pub fn page_cache(&self) -> Option<&PageCache> {
        self.wb.as_deref()
    }

    /// A buffered write of job `j` (phases `Buffered`, `Copying`, `DirtyPause`):
    /// copy the next chunk, dirty it, ask `balance_dirty_pages()`; the call ends with
    /// its last page.
    pub(super) fn buffered_write_step(&mut self, j: u32) {
        let now = self.q.now();
        loop {
            let Some(pc) = self.wb.as_deref_mut() else {
                return;
            };
            let nowj = pc.jiffies(now);
            let job = &mut self.jobs[j as usize];
            match job.phase {
                Phase::Buffered(io) => {
                    if job.buf.next >= job.buf.end {
                        // the call returns: the I/O is complete (libaio: ready to reap)
                        self.piece_done(io, None);
                        self.submit_returned(j, io);
                        return;
                    }
                    let k = (job.buf.end - job.buf.next).min(pc.model.pages_to_check(j));
                    job.buf.chunk = k;
                    job.phase = Phase::Copying(io);
                    self.run_for(j, k * self.host.page_copy_ns);
                    return;
                }
                Phase::Copying(io) => {
                    let (first, n) = (job.buf.next, job.buf.chunk);
                    job.buf.next += n;
                    job.phase = Phase::Buffered(io);
                    let (_, first_dirty) = pc.model.dirty_pages(nowj, j, first, n);
                    let cg = pc.model.files[j as usize].cgroup;
                    if first_dirty {
                        self.wb_wakeup_delayed(cg);
                    }
                    let pc = self.wb.as_deref_mut().expect("set above");
                    if pc.model.ratelimited(j) && self.balance_dirty_pages(j, io) {
                        return;
                    }
                }
                Phase::DirtyPause(io, again) => {
                    job.phase = Phase::Buffered(io);
                    if again && self.balance_dirty_pages(j, io) {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    /// One round of `balance_dirty_pages()` for job `j` in its write `io`: true when
    /// the job now sleeps (`Phase::DirtyPause`).
    fn balance_dirty_pages(&mut self, j: u32, io: u32) -> bool {
        let now = self.q.now();
        let Some(pc) = self.wb.as_deref_mut() else {
            return false;
        };
        let nowj = pc.jiffies(now);
        let cg = pc.model.files[j as usize].cgroup;
        let flushing = pc.flushers[cg as usize]
            .as_ref()
            .is_some_and(|f| f.running.is_some());
        let b = pc.model.balance_dirty_pages(nowj, j, flushing);
        let wake = (b.pause > 0).then(|| pc.ns_of(jiffies::wheel_bucket(nowj + b.pause, nowj)));
        if b.start_background {
            self.wb_wakeup(cg);
        }
        let Some(at) = wake else {
            return false;
        };
        // bdi->last_bdp_sleep = jiffies, before io_schedule_timeout()
        self.stack.bdp_sleep(now, cg);
        let job = &mut self.jobs[j as usize];
        job.phase = Phase::DirtyPause(io, b.again);
        job.buf.paused += at - now;
        self.wake_job(j, at - now);
        true
    }

    /// What job `j` syncs now, as fio 3.33's `get_rw_ddir()` decides: after every
    /// `fsync=N` (or `fdatasync=N`, then `sync_file_range=…:N`) writes issued, unless
    /// the last I/O to complete was a sync (`should_fsync()`: `last_was_sync`).
    /// Asked on every I/O: a run without a page cache answers from the pipeline's own
    /// line, never touching the job's cold ones.
    pub(super) fn sync_due(&self, j: u32) -> Option<SyncCall> {
        self.wb.as_ref()?;
        let job = &self.jobs[j as usize];
        let n = job.buf.write_issues;
        let b = job.p.buffered.as_ref()?;
        if n == 0 || job.buf.last_was_sync {
            return None;
        }
        let every = |k: u32| k > 0 && n.is_multiple_of(u64::from(k));
        if b.sync_blocks.iter().any(|&k| every(k)) {
            return Some(SyncCall::Fsync);
        }
        let r = b.sync_file_range.filter(|r| every(r.every))?;
        // do_sync_file_range(): first_write .. last_write, in pages as
        // ksys_sync_file_range() reckons them (nothing written: no range)
        let pages = job.buf.written.map_or((0, 0), |(lo, hi)| {
            let first = lo / PAGE_SIZE;
            (first, (hi - 1) / PAGE_SIZE + 1 - first)
        });
        Some(SyncCall::FileRange {
            pages,
            flags: r.flags,
        })
    }

    /// A sync of job `j`'s file (phases `Fsync`, `FsyncWait`), from the job's own
    /// context. `fsync()`: its dirty pages go under writeback, their bios pushed one
    /// by one (`file_write_and_wait_range()`), then the job waits for every page of
    /// the file under writeback, the flusher's too (`blkdev_fsync()`; a device
    /// without a volatile cache needs no flush). `sync_file_range()` does the same
    /// over its range, each step only if its flag asks: wait for the range's
    /// writeback, write its dirty pages (`WB_SYNC_NONE` unless all three flags are
    /// set), wait again (`sync_file_range()` in `fs/sync.c`).
    pub(super) fn fsync_step(&mut self, j: u32) {
        let now = self.q.now();
        let c = j + 1;
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        let job = &mut self.jobs[j as usize];
        let call = job.buf.sync;
        match job.phase {
            Phase::Fsync(end) => {
                if !self.ctxs[c as usize].pending.is_empty() {
                    // the bio's set-up is paid: push it
                    self.run_ctx(c);
                    return;
                }
                match job.buf.sync_stage {
                    SyncStage::Begun if call.waits_before() => {
                        job.buf.sync_stage = SyncStage::WaitingBefore;
                        job.phase = Phase::FsyncWait(end);
                        return self.fsync_step(j);
                    }
                    SyncStage::Begun | SyncStage::WaitingBefore => {
                        job.buf.sync_stage = SyncStage::Writing;
                        if call.writes() {
                            let nowj = pc.jiffies(now);
                            let pages = call.pages().unwrap_or((0, u64::MAX));
                            pc.scratch.clear();
                            pc.model
                                .fsync(nowj, j, pages, MAX_RUN_PAGES, &mut pc.scratch);
                            let runs = pc.scratch.iter().map(|&(_, p, n)| (p, n));
                            pc.submit_runs[j as usize].extend(runs);
                        }
                    }
                    SyncStage::Writing => {}
                }
                match pc.submit_runs[j as usize].pop_front() {
                    Some((page, n)) => {
                        let ioprio = task_ioprio(job.p.prio.task);
                        let b = self.page_bio(j, (page, n), IoKind::Writeback, ioprio, call.opf());
                        self.ctxs[c as usize].pending.push_back((b, Stage::Bio(0)));
                        self.run_for(j, self.host.sync_submit_cost(n * PAGE_SIZE));
                    }
                    None if call.waits_after() => {
                        self.jobs[j as usize].phase = Phase::FsyncWait(end);
                        self.fsync_step(j);
                    }
                    None => self.sync_done(j, end),
                }
            }
            Phase::FsyncWait(end) => {
                if pc.model.writeback_in(j, call.pages()) {
                    return;
                }
                if job.buf.sync_stage == SyncStage::WaitingBefore {
                    job.phase = Phase::Fsync(end);
                    return self.fsync_step(j);
                }
                self.sync_done(j, end);
            }
            _ => {}
        }
    }

    /// Job `j`'s sync returns: fio counts its latency (not `end_fsync`'s) and goes on.
    fn sync_done(&mut self, j: u32, end: bool) {
        let now = self.q.now();
        let job = &mut self.jobs[j as usize];
        job.buf.sync_stage = SyncStage::Begun;
        if end {
            self.finish_job(j);
            return;
        }
        let lat = now - job.buf.sync_start;
        if now >= job.stats_start {
            job.stats.add_sync(lat);
        }
        // io_completed(): a sync ends the range the next one covers
        job.buf.last_was_sync = true;
        job.buf.written = None;
        job.phase = Phase::Loop;
        self.job_step(j);
    }

    /// A bio of `n` pages from `page` of job `f`'s file, charged to its cgroup: a
    /// writeback bio (the file's wb's, `wbc_init_bio()`) or a read's readahead, with
    /// flags `opf` ([`req`]).
    pub(super) fn page_bio(
        &mut self,
        f: u32,
        (page, n): (u64, u64),
        kind: IoKind,
        ioprio: crate::blkcg::ioprio::Ioprio,
        opf: u8,
    ) -> u32 {
        let now = self.q.now();
        let cgroup = self.jobs[f as usize].p.cgroup;
        let bytes = n * PAGE_SIZE;
        let dir = if kind == IoKind::Readahead {
            Dir::Read
        } else {
            Dir::Write
        };
        let io = self.alloc_io(IoU {
            job: f,
            cgroup,
            dir_write: dir == Dir::Write,
            bytes,
            offset: page * PAGE_SIZE,
            res: IoRes::Full,
            start: now,
            issued: now,
            pieces: 1,
            bytes_counted: false,
            kind,
        });
        self.bios.alloc(Bio {
            io,
            ioprio,
            opf,
            ..Bio::new(cgroup, dir, page * PAGE_SIZE / 512, bytes, now)
        })
    }

    /// A piece of a writeback bio ended: with its last, its pages' writeback ends
    /// (`__folio_end_writeback()`); a file with no more pages under writeback
    /// schedules the wb's bandwidth update (`wb_inode_writeback_end()`) and lets a
    /// waiting `fsync()` return.
    pub(super) fn writeback_piece_done(&mut self, io: u32, _err: Option<IoErr>) {
        let now = self.q.now();
        let iou = &mut self.ios[io as usize];
        iou.pieces -= 1;
        if iou.pieces > 0 {
            return;
        }
        let (f, first, n) = (iou.job, iou.offset / PAGE_SIZE, iou.bytes / PAGE_SIZE);
        self.free_ios.push(io);
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        let nowj = pc.jiffies(now);
        pc.last_written = Some(now);
        let ended = pc.model.end_writeback(nowj, f, (first, n));
        // the last close's sync_blockdev() returns once every page is written
        if let Some(c) = pc.closer.filter(|_| pc.clean()) {
            self.psi_mark(c + 1);
        }
        // a sync waiting on these pages (folio_wait_writeback()) wakes once its range
        // is clear
        let job = &self.jobs[f as usize];
        let pc = self.wb.as_deref().expect("set above");
        if matches!(job.phase, Phase::FsyncWait(_))
            && !pc.model.writeback_in(f, job.buf.sync.pages())
        {
            self.run_for(f, self.host.complete_ns);
        }
        if !ended {
            return;
        }
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        let cg = pc.model.files[f as usize].cgroup;
        let at = pc.ns_of(jiffies::wheel_bucket(nowj + max_pause(pc.model.hz()), nowj));
        if let Some(fl) = pc.flushers[cg as usize].as_mut()
            && fl.bw_work.is_none()
        {
            fl.bw_work = Some(at);
            self.q.push(at, Event::WbBandwidth(cg));
        }
    }

    /// `wb_wakeup()` (`wb_start_background_writeback()`): the flusher runs now, as a
    /// work item; if it is running it runs again once done.
    fn wb_wakeup(&mut self, cg: u32) {
        let now = self.q.now();
        let delay = self.host.workqueue_ns;
        let Some(fl) = self
            .wb
            .as_deref_mut()
            .and_then(|p| p.flushers[cg as usize].as_mut())
        else {
            return;
        };
        if fl.running.is_some() {
            fl.rerun = true;
            return;
        }
        if fl.dwork.is_some_and(|t| t <= now + delay) {
            return;
        }
        fl.dwork = Some(now + delay);
        self.q.push(now + delay, Event::WbWork(cg));
    }

    /// `wb_wakeup_delayed()`: the flusher's periodic run, `dirty_writeback_centisecs`
    /// from now on the timer wheel, unless one is pending.
    fn wb_wakeup_delayed(&mut self, cg: u32) {
        let now = self.q.now();
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        let interval = pc.model.writeback_interval();
        let nowj = pc.jiffies(now);
        let at = pc.ns_of(jiffies::wheel_bucket(nowj + interval, nowj));
        let Some(fl) = pc.flushers[cg as usize].as_mut() else {
            return;
        };
        if interval == 0 || fl.dwork.is_some() {
            return;
        }
        fl.dwork = Some(at);
        self.q.push(at, Event::WbWork(cg));
    }

    /// `Event::WbWork`: the wb's work item runs (`wb_workfn()`).
    pub(super) fn on_wb_work(&mut self, cg: u32) {
        let now = self.q.now();
        let Some(fl) = self
            .wb
            .as_deref_mut()
            .and_then(|p| p.flushers[cg as usize].as_mut())
        else {
            return;
        };
        if fl.dwork != Some(now) {
            return;
        }
        fl.dwork = None;
        if fl.running.is_some() {
            fl.rerun = true;
            return;
        }
        self.start_wb_work(cg);
    }

    /// `wb_do_writeback()`: the periodic writeback first if it is due, then the
    /// background check.
    fn start_wb_work(&mut self, cg: u32) {
        let now = self.q.now();
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        let nowj = pc.jiffies(now);
        let interval = pc.model.writeback_interval();
        let wb = &mut pc.model.wbs[cg as usize];
        let sync = pc.flushers[cg as usize]
            .as_mut()
            .is_some_and(|f| std::mem::take(&mut f.sync_pending));
        let kind = if sync {
            WorkKind::Sync
        } else if interval > 0 && nowj >= wb.last_old_flush + interval {
            wb.last_old_flush = nowj;
            WorkKind::Kupdate
        } else {
            WorkKind::Background
        };
        if let Some(fl) = pc.flushers[cg as usize].as_mut() {
            fl.running = Some(kind);
        }
        self.flusher_step(cg);
    }

    /// The flusher of `cg` goes on: the next bio of its chunk, the next chunk, the
    /// next part of its work, or the end of it.
    pub(super) fn flusher_step(&mut self, cg: u32) {
        let now = self.q.now();
        loop {
            let Some(pc) = self.wb.as_deref_mut() else {
                return;
            };
            let nowj = pc.jiffies(now);
            let Some(fl) = pc.flushers[cg as usize].as_mut() else {
                return;
            };
            let c = fl.ctx;
            let ctx = &self.ctxs[c as usize];
            if ctx.blocked || !ctx.pending.is_empty() {
                return;
            }
            if let Some((f, page, n)) = fl.runs.pop_front() {
                // wbc_to_write_flags(): WB_SYNC_ALL is REQ_SYNC, background and
                // periodic writeback REQ_BACKGROUND
                let opf = match fl.running {
                    Some(WorkKind::Sync) => req::SYNC,
                    _ => req::BACKGROUND,
                };
                let b = self.page_bio(f, (page, n), IoKind::Writeback, task_ioprio(None), opf);
                self.ctxs[c as usize].pending.push_back((b, Stage::Bio(0)));
                self.ctx_run_for(c, self.host.submit_cost(n * PAGE_SIZE));
                return;
            }
            let Some(kind) = fl.running else {
                return;
            };
            pc.scratch.clear();
            if pc
                .model
                .next_chunk(nowj, cg, kind, MAX_RUN_PAGES, &mut pc.scratch)
            {
                let fl = pc.flushers[cg as usize].as_mut().expect("checked above");
                fl.runs.extend(pc.scratch.iter().copied());
                continue;
            }
            let fl = pc.flushers[cg as usize].as_mut().expect("checked above");
            match kind {
                // the sync or wb_check_old_data_flush() done: wb_check_background_flush()
                WorkKind::Sync | WorkKind::Kupdate => fl.running = Some(WorkKind::Background),
                WorkKind::Background => {
                    fl.running = None;
                    if std::mem::take(&mut fl.rerun) {
                        self.start_wb_work(cg);
                    } else if pc.model.has_dirty(cg) {
                        self.wb_wakeup_delayed(cg);
                    }
                    return;
                }
            }
        }
    }

    /// The block device's last opener closed it (every fio job that ran has ended):
    /// `blkdev_put_whole()` → `blkdev_flush_mapping()` → `sync_blockdev()` writes every
    /// dirty page of the device's page cache, `WB_SYNC_ALL`, each wb's as its cgroup's
    /// (here by its flusher, at once; in the kernel by the closing task, whose
    /// `close()` waits for it after fio has reported).
    pub(super) fn last_close(&mut self, closer: u32) {
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        pc.closer = Some(closer);
        self.psi_mark(closer + 1);
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        let mut start = Vec::new();
        for (cg, fl) in pc.flushers.iter_mut().enumerate() {
            let Some(fl) = fl.as_mut() else { continue };
            if !pc.model.has_dirty(cg as u32) {
                continue;
            }
            fl.sync_pending = true;
            if fl.running.is_some() {
                fl.rerun = true;
            } else {
                start.push(cg as u32);
            }
        }
        for cg in start {
            self.start_wb_work(cg);
        }
    }

    /// `Event::WbBandwidth`: the wb's delayed bandwidth update (`wb_update_bandwidth()`).
    pub(super) fn on_wb_bandwidth(&mut self, cg: u32) {
        let now = self.q.now();
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        let nowj = pc.jiffies(now);
        let Some(fl) = pc.flushers[cg as usize].as_mut() else {
            return;
        };
        if fl.bw_work != Some(now) {
            return;
        }
        fl.bw_work = None;
        pc.model.update_bandwidth(nowj, cg, None);
    }
}
