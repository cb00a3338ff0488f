//! The pipeline's side of buffered reads (`crate::writeback` holds the page cache,
//! `crate::writeback::readahead` the kernel's readahead rules): a buffered job's
//! `read()` as `filemap_read()` runs it.
//!
//! Design
//! ------
//! The idea: a buffered read copies from the page cache; the device sees only what
//! was missing, in the windows readahead chose, read by the reader's own call. So a
//! buffered read never becomes one bio of its own size: `read()` takes the pages a
//! batch at a time (`filemap_get_pages()`), each batch what is cached in a row from
//! the read's position — at most `PAGEVEC_SIZE` (31) pages, ending at the first page
//! still being read or marked `PG_readahead`:
//! - nothing cached at the position (`Phase::ReadBatch` finds an empty batch): the
//!   synchronous readahead (`page_cache_sync_ra()`) adds the window's missing pages,
//!   locked, and the call submits their bios (`Phase::ReadSubmit`, under the plug of
//!   `read_pages()`; a bio's set-up and `[host] readahead_page_ns` a page); if that
//!   left the page missing, the page alone
//!   (`filemap_create_folio()`);
//! - the batch's last page marked: the next window goes out now
//!   (`page_cache_async_ra()`), the call submitting it before it goes on;
//! - the batch's last page still being read: the call sleeps on its lock
//!   (`filemap_update_page()` → `folio_lock()`, an I/O wait: `Phase::ReadWait`);
//! - then the batch is copied (`[host] page_read_ns` a page, `Phase::ReadCopy`; the
//!   call itself costs `read_call_ns`) and
//!   the next batch starts where it ended. The call returns after its last page, and
//!   `ra->prev_pos` is where it ended.
//!
//! A readahead bio is an I/O unit of kind `IoKind::Readahead` charged to the reader's
//! cgroup; its completion makes its pages uptodate (`crate::writeback::Writeback::
//! read_done`) and wakes the reader if it sleeps on one of them. libaio does the same
//! inside `io_submit()` (a buffered read is not asynchronous there), so the copy and
//! the waits land in slat, as fio reports them.

use crate::blkcg::ioprio::task_ioprio;
use crate::sim::IoErr;
use crate::sim::engine::Stage;
use crate::sim::fio::{IoKind, IoRes, Phase};
use crate::writeback::limits::PAGE_SIZE;

use super::writeback::MAX_RUN_PAGES;

impl super::engine::Pipeline {
    /// A buffered read of job `j` (phases `ReadBatch`, `ReadSubmit`, `ReadWait`,
    /// `ReadCopy`), from where it is to its next sleep, CPU work or its end.
    pub(super) fn buffered_read_step(&mut self, j: u32) {
        let c = j + 1;
        loop {
            let Some(pc) = self.wb.as_deref_mut() else {
                return;
            };
            let job = &mut self.jobs[j as usize];
            let (next, end) = (job.buf.next, job.buf.end);
            match job.phase {
                Phase::ReadBatch(io) => {
                    if next >= end {
                        // filemap_read() returns: ra->prev_pos is where it ended
                        let iou = &self.ios[io as usize];
                        let pos = iou.offset + iou.bytes;
                        let asked = iou.bytes.div_ceil(PAGE_SIZE);
                        let hits = std::mem::take(&mut job.buf.read_hits);
                        pc.model.read_ended(j, pos, asked, hits);
                        self.piece_done(io, None);
                        self.submit_returned(j, io);
                        return;
                    }
                    let n = pc.model.read_batch(j, next, end - next);
                    pc.scratch_runs.clear();
                    if n == 0 {
                        // page_cache_sync_ra(), then filemap_create_folio() if the
                        // window left the page out; after a failed read, the page
                        // alone (filemap_read_folio()); past the device's end, the end
                        let tried = job.buf.read_missed;
                        if tried >= 2 {
                            match job.buf.read_err.take() {
                                // the page's own read failed: the call fails
                                Some(e) => {
                                    job.buf.read_missed = 0;
                                    let iou = &self.ios[io as usize];
                                    let asked = iou.bytes.div_ceil(PAGE_SIZE);
                                    let hits = std::mem::take(&mut job.buf.read_hits);
                                    pc.model.read_ended(j, next * PAGE_SIZE, asked, hits);
                                    self.piece_done(io, Some(e));
                                    self.submit_returned(j, io);
                                    return;
                                }
                                None => {
                                    job.buf.read_missed = 0;
                                    job.buf.next = end;
                                    continue;
                                }
                            }
                        }
                        let create = tried == 1 || job.buf.read_err.is_some();
                        job.buf.read_missed = if create { 2 } else { 1 };
                        pc.model.read_miss(
                            j,
                            next,
                            end - next,
                            create,
                            MAX_RUN_PAGES,
                            &mut pc.scratch_runs,
                        );
                        pc.submit_runs[j as usize].extend(pc.scratch_runs.drain(..));
                        job.phase = Phase::ReadSubmit(io, true);
                        continue;
                    }
                    if job.buf.read_missed == 0 {
                        job.buf.read_hits += n;
                    }
                    job.buf.chunk = n;
                    // filemap_readahead() on the batch's marked last page
                    let last = next + n - 1;
                    pc.model
                        .read_marked(j, last, end - last, MAX_RUN_PAGES, &mut pc.scratch_runs);
                    pc.submit_runs[j as usize].extend(pc.scratch_runs.drain(..));
                    job.phase = Phase::ReadSubmit(io, false);
                }
                Phase::ReadSubmit(io, then_batch) => {
                    if !self.ctxs[c as usize].pending.is_empty() {
                        // the bio's set-up is paid: push it
                        self.run_ctx(c);
                        return;
                    }
                    match pc.submit_runs[j as usize].pop_front() {
                        Some((page, n)) => {
                            let ioprio = task_ioprio(self.jobs[j as usize].p.prio.task);
                            let b = self.page_bio(j, (page, n), IoKind::Readahead, ioprio, 0);
                            self.ctxs[c as usize].pending.push_back((b, Stage::Bio(0)));
                            let cost = self.host.sync_submit_cost(n * PAGE_SIZE)
                                + n * self.host.readahead_page_ns;
                            self.run_for(j, cost);
                            return;
                        }
                        None => {
                            job.phase = if then_batch {
                                Phase::ReadBatch(io)
                            } else {
                                Phase::ReadWait(io)
                            };
                        }
                    }
                }
                Phase::ReadWait(io) => {
                    let last = next + job.buf.chunk - 1;
                    if pc.model.read_pending(j, last) {
                        // folio_lock(): woken by the read's completion
                        job.buf.read_wait_from = self.q.now();
                        return;
                    }
                    if !pc.model.read_cached(j, last) {
                        // its read failed: copy what came, then read the page again
                        job.phase = Phase::ReadBatch(io);
                        continue;
                    }
                    job.phase = Phase::ReadCopy(io);
                    let copy = job.buf.chunk * self.host.page_read_ns;
                    self.run_for(j, copy);
                    return;
                }
                Phase::ReadCopy(io) => {
                    // the batch came: a miss or failure before it is behind
                    job.buf.next += job.buf.chunk;
                    if job.buf.chunk > 0 {
                        job.buf.read_missed = 0;
                        job.buf.read_err = None;
                    }
                    job.phase = Phase::ReadBatch(io);
                }
                _ => return,
            }
        }
    }

    /// A piece of a readahead bio ended: with its last, its pages are uptodate
    /// (`mpage_read_end_io()` → `folio_end_read()`), or, if a piece failed, not: they
    /// leave the cache, and a read that needs one reads it again alone and fails with
    /// the error if that fails too (`filemap_update_page()` → `filemap_read_folio()`).
    /// A reader sleeping on the last page of its batch wakes.
    pub(super) fn readahead_piece_done(&mut self, io: u32, err: Option<IoErr>) {
        let iou = &mut self.ios[io as usize];
        if let (Some(e), IoRes::Full) = (err, iou.res) {
            iou.res = IoRes::Err(e);
        }
        iou.pieces -= 1;
        if iou.pieces > 0 {
            return;
        }
        let (f, first, n) = (iou.job, iou.offset / PAGE_SIZE, iou.bytes / PAGE_SIZE);
        let failed = match iou.res {
            IoRes::Err(e) => Some(e),
            _ => None,
        };
        self.free_ios.push(io);
        let Some(pc) = self.wb.as_deref_mut() else {
            return;
        };
        match failed {
            None => pc.model.read_done(f, first, n),
            Some(e) => {
                pc.model.read_failed(f, first, n);
                let job = &mut self.jobs[f as usize];
                let reading = matches!(
                    job.phase,
                    Phase::ReadBatch(_) | Phase::ReadSubmit(..) | Phase::ReadWait(_)
                );
                if reading && first < job.buf.end && first + n > job.buf.next {
                    job.buf.read_err = Some(e);
                }
            }
        }
        let job = &self.jobs[f as usize];
        if matches!(job.phase, Phase::ReadWait(_))
            && !job.wake_scheduled
            && !pc.model.read_pending(f, job.buf.next + job.buf.chunk - 1)
        {
            // a request the driver ended in the reader's own call (null_blk's inline
            // completion) never let it sleep: its dispatcher paid the completion
            let now = self.q.now();
            let wake = if now > job.buf.read_wait_from {
                self.host.complete_ns
            } else {
                0
            };
            self.run_for(f, wake);
        }
    }
}
