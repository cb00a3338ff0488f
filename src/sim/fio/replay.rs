//! A job that replays an I/O log (`read_iolog`), and a job that writes one
//! (`write_iolog`), as fio 3.33 does both.
//!
//! Design
//! ------
//! Replaying, the job's loop takes its next I/O from the log instead of its
//! generators (`read_iolog_get()`), once it has a free slot — so at most `iodepth`
//! are in flight and a late completion holds the log back. Each entry's delay is
//! waited from the job's last issue (`td->last_issue`), less the lateness fio carries
//! (`td->time_offset`), in `usec_sleep()`s of at most 500 ms (`iolog_delay()`); fio
//! 3.33 reaps nothing while it sleeps. fio 3.36 and later poll instead (b85c01f7:
//! `[host] fio_replay_poll`), reaping each completion as it comes and ending the wait
//! on time; the poll's CPU time is not charged (the job is taken to spin on a CPU of
//! its own). Reads and writes become
//! the job's I/Os; file lines and trims only pace (and set the last issue); `sync` /
//! `datasync` are the job's sync call — through the page cache for a buffered job,
//! else only the system call (a device without a volatile cache needs no flush); a v2
//! `wait` sleeps until its time after fio started its jobs. The log's end ends the job.
//!
//! The figure fio does not give and a replay under a controller is about: each I/O's
//! lateness, its issue against its time in the log (the replay's start plus every
//! delay before it; a v2 `wait` moves it to the wait's time), kept in the job's
//! statistics ([`JobStats::lateness`]) — for a log with times (v3, blktrace) played
//! by them (not with `replay_no_stall`). fio's pacing is relative — each delay counts
//! from the previous issue — so a replay that falls behind stays behind: lateness
//! only grows while a controller holds the job back.
//!
//! Writing, each I/O is logged when its submission starts (`log_io_u()` from
//! `td_io_queue()`), as a v3 line, µs since the job started; the lines of each sample
//! tick go to the run's recorder, which streams them into the file.
//!
//! [`JobStats::lateness`]: crate::sim::fio::stats::JobStats::lateness

use std::fmt::Write as _;
use std::sync::Arc;

use super::{FioSleep, Phase, Resume, SyncCall};
use crate::sim::engine::Pipeline;
use crate::sim::{Dir, Ns};
use crate::workload::iolog::{IoLog, LogEntry, LogOp};

/// fio 3.33's `iolog_delay()` sleeps at most this long per `usec_sleep()` (µs).
const DELAY_CHUNK_US: u64 = 500_000;
/// At most this many of them modelled one by one (an hour).
const MAX_DELAY_CHUNKS: u32 = 7200;

/// A replaying job's place in its log.
#[derive(Debug)]
pub(in crate::sim) struct ReplayRt {
    log: Arc<IoLog>,
    /// The next entry.
    pos: usize,
    /// fio's `td->last_issue`.
    pub(super) last_issue: Ns,
    /// fio's `td->time_offset` (µs): lateness carried to the next delay.
    time_offset_us: u64,
    /// The entry at `pos` has had its delay counted (and slept, if it had to).
    due: bool,
    /// When its sleep began, if it slept (fio's `ts` in `iolog_delay()`).
    slept_from: Option<Ns>,
    /// The log's own time of the entry at `pos`.
    trace_time: Ns,
}

impl ReplayRt {
    pub(super) fn new(log: Arc<IoLog>) -> ReplayRt {
        ReplayRt {
            log,
            pos: 0,
            last_issue: 0,
            time_offset_us: 0,
            due: false,
            slept_from: None,
            trace_time: 0,
        }
    }

    /// The job starts at `epoch`: its log's time starts there.
    pub(super) fn start(&mut self, epoch: Ns) {
        self.trace_time = epoch;
        self.last_issue = epoch;
    }

    fn entry(&self) -> Option<LogEntry> {
        self.log.entries.get(self.pos).copied()
    }

    /// The entry at `pos` is done with: on to the next.
    fn advance(&mut self) {
        self.pos += 1;
        self.due = false;
        self.slept_from = None;
    }

    /// The read or write at `pos` is issued at `now`: its (bytes, offset), and its
    /// lateness when the log has times.
    pub(super) fn take_io(&mut self, now: Ns) -> (u64, u64, Option<Ns>) {
        let e = self.log.entries[self.pos];
        self.advance();
        let late = self.log.timed.then(|| now.saturating_sub(self.trace_time));
        (u64::from(e.len), e.offset, late)
    }

    /// `iolog_delay()` for an entry of `delay` µs at `now`: how long to sleep (µs),
    /// 0 when it is due already. The carried lateness absorbs a delay shorter than it
    /// (and is then dropped); time since the last issue counts toward the delay.
    fn delay_due(&mut self, delay: u64, now: Ns) -> u64 {
        let since_last = now.saturating_sub(self.last_issue) / 1000;
        if delay < self.time_offset_us {
            self.time_offset_us = 0;
            return 0;
        }
        let left = delay - self.time_offset_us;
        if left < since_last {
            return 0;
        }
        if left == since_last {
            // no sleep: what it "slept" (nothing) is within the delay
            self.time_offset_us = 0;
        }
        left - since_last
    }
}

/// What the replay asks of the job's loop next.
pub(super) enum ReplayNext {
    /// Issue the entry at the head as an I/O of this direction.
    Io(Dir),
    /// The job sleeps or syncs; its loop resumes later.
    Paused,
    /// The log is done.
    End,
}

/// A job writing its I/O log: the lines since the recorder last took them.
#[derive(Debug)]
pub(in crate::sim) struct IologOut {
    /// The file, in the run's folder.
    pub(in crate::sim) name: Box<str>,
    /// The file the log names (the job's device node).
    file: Box<str>,
    /// When the log was opened (µs 0).
    start: Ns,
    pub(in crate::sim) lines: String,
}

impl IologOut {
    pub(super) fn new(name: Box<str>, file: Box<str>) -> IologOut {
        IologOut {
            name,
            file,
            start: 0,
            lines: String::new(),
        }
    }

    /// The job starts at `now`: the header, its file added and opened.
    pub(super) fn open(&mut self, now: Ns) {
        self.start = now;
        self.lines.push_str(crate::workload::iolog::v3_header());
        self.file_line(now, "add");
        self.file_line(now, "open");
    }

    pub(super) fn file_line(&mut self, now: Ns, action: &str) {
        let us = (now - self.start) / 1000;
        let _ = writeln!(self.lines, "{us} {} {action}", self.file);
    }

    pub(super) fn io_line(&mut self, now: Ns, action: &str, offset: u64, len: u64) {
        let us = (now - self.start) / 1000;
        let _ = writeln!(self.lines, "{us} {} {action} {offset} {len}", self.file);
    }
}

impl Pipeline {
    /// The top of replaying job `j`'s loop at `now` (`read_iolog_get()`): the next
    /// entry's delay, then the entry, until one is an I/O to issue or the job has to
    /// wait.
    pub(super) fn replay_next(&mut self, j: u32, now: Ns) -> ReplayNext {
        loop {
            let job = &mut self.jobs[j as usize];
            let Some(r) = job.replay.as_deref_mut() else {
                return ReplayNext::End;
            };
            let Some(e) = r.entry() else {
                return ReplayNext::End;
            };
            if !r.due {
                r.due = true;
                if e.op == LogOp::Wait {
                    // a v2 wait: until its ms after fio started its jobs
                    // (`mtime_since_genesis()`, whole ms)
                    let genesis = job.epoch - job.p.startdelay;
                    let until = genesis.saturating_add(e.offset.saturating_mul(1_000_000));
                    r.trace_time = r.trace_time.max(until);
                    let elapsed_ms = (now - genesis) / 1_000_000;
                    if e.offset > elapsed_ms {
                        r.advance();
                        job.phase = Phase::Sleeping(Resume::Loop);
                        let ms = e.offset - elapsed_ms;
                        let pause = self.sleep(j, ms.saturating_mul(1_000_000));
                        self.pause_job(j, pause);
                        return ReplayNext::Paused;
                    }
                    r.advance();
                    continue;
                }
                r.trace_time = r.trace_time.saturating_add(e.delay_us.saturating_mul(1000));
                if e.delay_us > 0 {
                    let mut left = r.delay_due(e.delay_us, now);
                    if left > 0 && self.host.fio_replay_poll {
                        // fio 3.36+: a busy poll, reaping as completions come, ending
                        // on time
                        r.slept_from = Some(now);
                        job.phase = Phase::Sleeping(Resume::Poll);
                        if !job.completed.is_empty() {
                            self.reap(j, usize::MAX);
                        }
                        self.wake_job(j, left.saturating_mul(1000));
                        return ReplayNext::Paused;
                    }
                    if left > 0 {
                        r.slept_from = Some(now);
                        job.phase = Phase::Sleeping(Resume::Loop);
                        let mut pause = FioSleep::default();
                        for _ in 0..MAX_DELAY_CHUNKS {
                            let chunk = left.min(DELAY_CHUNK_US);
                            pause.then(self.sleep(j, chunk * 1000));
                            left -= chunk;
                            if left == 0 {
                                break;
                            }
                        }
                        // a gap of more than an hour (a trace's clock jumping): the
                        // rest in one sleep, not one per half second
                        if left > 0 {
                            pause.then(self.sleep(j, left.saturating_mul(1000)));
                        }
                        self.pause_job(j, pause);
                        return ReplayNext::Paused;
                    }
                }
            } else if let Some(from) = r.slept_from.take() {
                // back from the sleep: lateness past the whole delay is carried
                let slept = (now - from) / 1000;
                r.time_offset_us = slept.saturating_sub(e.delay_us);
            }
            match e.op {
                LogOp::Read => return ReplayNext::Io(Dir::Read),
                LogOp::Write => return ReplayNext::Io(Dir::Write),
                LogOp::File | LogOp::Trim | LogOp::Wait => {
                    // `ipo_special()` (and a trim we do not issue): paced, no I/O
                    r.last_issue = now;
                    r.advance();
                }
                LogOp::Sync | LogOp::Datasync => {
                    r.last_issue = now;
                    r.advance();
                    self.replay_sync(j, now);
                    return ReplayNext::Paused;
                }
            }
        }
    }

    /// A replayed `sync` / `datasync` of job `j`: a buffered job's goes through the
    /// page cache (`crate::sim::writeback`); a direct job's is its system call alone.
    fn replay_sync(&mut self, j: u32, now: Ns) {
        let job = &mut self.jobs[j as usize];
        if self.wb.is_some() && job.p.buffered.is_some() {
            job.buf.sync = SyncCall::Fsync;
            job.buf.sync_start = now;
            job.phase = Phase::Fsync(false);
        } else {
            if now >= job.stats_start {
                job.stats.add_sync(self.host.sync_submit_ns);
            }
            job.phase = Phase::Sleeping(Resume::Loop);
        }
        self.run_for(j, self.host.sync_submit_ns);
    }
}
