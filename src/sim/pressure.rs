//! The pipeline's side of io.pressure (`crate::psi` holds the kernel's accounting):
//! which PSI state each submission context's task is in, told to [`Psi`] the instant
//! it changes.
//!
//! Design
//! ------
//! A task's state follows from what the pipeline already keeps — the job's fio phase,
//! whether its context sleeps (`Ctx::blocked`: a tag or an rq-qos entry), whether it
//! sleeps off a delay in `io_schedule_timeout()` (`Ctx::iowait_sleep`), whether it has
//! CPU work scheduled (`task_state`) — so nothing records a state of its own. Every
//! place that changes one of those marks the context (`psi_mark`); once an
//! event is handled the loop recomputes the marked contexts' states
//! (`psi_flush`), and [`Psi::set`] ignores a state that did not change.
//! Contexts are the tasks: each job's, and each flusher's kworker, which lives in the
//! root cgroup (its waits in wbt or for a tag are the system's, not the cgroup's it
//! writes back for); the policies' dispatch worker is not accounted.

use super::engine::{Owner, Pipeline};
use super::fio::Phase;
use crate::psi::{Psi, TaskState};

impl Pipeline {
    /// io.pressure for cgroups `parents` (the root first), its tasks the contexts made
    /// so far; `[host] cpus = 1` puts them on one CPU.
    pub fn set_pressure(&mut self, parents: &[Option<u32>]) {
        let tasks: Vec<Option<u32>> = self
            .ctxs
            .iter()
            .map(|c| match c.owner {
                Owner::Job(j) => Some(self.jobs[j as usize].p.cgroup),
                Owner::Flusher(_) => Some(0),
                Owner::Worker => None,
            })
            .collect();
        let jobs = &self.jobs;
        for c in &mut self.ctxs {
            c.psi_sync = c
                .owner
                .job()
                .is_some_and(|j| jobs[j as usize].p.sync_engine);
        }
        self.psi = Some(Box::new(Psi::new(
            self.hz,
            self.host.cpus == 1,
            parents,
            &tasks,
        )));
    }

    /// Context `c`'s task may have changed state: recompute it once the event is done.
    #[inline]
    pub(super) fn psi_mark(&mut self, c: u32) {
        if self.psi.is_some() {
            let ctx = &mut self.ctxs[c as usize];
            if !std::mem::replace(&mut ctx.psi_marked, true) {
                self.psi_dirty.push(c);
            }
        }
    }

    /// Tell [`Psi`] the state of every context marked since the last call.
    pub(super) fn psi_flush(&mut self) {
        if self.psi_dirty.is_empty() {
            return;
        }
        let now = self.q.now();
        let mut dirty = std::mem::take(&mut self.psi_dirty);
        for &c in &dirty {
            self.ctxs[c as usize].psi_marked = false;
            let state = self.task_state(c);
            // the context's line is hot: only a change reaches the accounting
            let ctx = &mut self.ctxs[c as usize];
            if ctx.psi_state == state {
                continue;
            }
            ctx.psi_state = state;
            if let Some(p) = self.psi.as_deref_mut() {
                p.set(now, c, state);
            }
        }
        dirty.clear();
        self.psi_dirty = dirty;
    }

    /// The PSI state of context `c`'s task now.
    fn task_state(&self, c: u32) -> TaskState {
        let ctx = &self.ctxs[c as usize];
        if ctx.blocked || ctx.iowait_sleep {
            // blk_mq_get_tag(), rq_qos_wait(), blkcg_maybe_throttle_current(): io_schedule()
            return TaskState::IoWait;
        }
        let j = match ctx.owner {
            Owner::Job(j) => j,
            Owner::Flusher(_) if ctx.wake_scheduled || !ctx.pending.is_empty() => {
                return TaskState::Running;
            }
            _ => return TaskState::Idle,
        };
        let job = &self.jobs[j as usize];
        let phase = job.phase;
        // the common cases first, each a compare: a branch on the phase's whole
        // discriminant (a jump table) cost the event loop a mispredicted jump per event
        if job.wake_scheduled {
            // CPU work or a timer sleep: thinktime is idle, a dirty-throttle pause is not
            return match phase {
                Phase::Sleeping(_) => TaskState::Idle,
                // io_schedule_timeout() in balance_dirty_pages()
                Phase::DirtyPause(..) => TaskState::IoWait,
                _ => TaskState::Running,
            };
        }
        if matches!(phase, Phase::Reap | Phase::Quiesce(_) | Phase::Drain) {
            // a psync call waits for its I/O in blk_io_schedule(); libaio's
            // io_getevents() sleeps in a plain schedule()
            return if ctx.psi_sync {
                TaskState::IoWait
            } else {
                TaskState::Idle
            };
        }
        match phase {
            // folio_wait_writeback() in fsync(); the device's last close waits in
            // sync_blockdev() for every page
            // and a buffered read on a page being read (folio_lock())
            Phase::FsyncWait(_) | Phase::DirtyPause(..) | Phase::ReadWait(_) => TaskState::IoWait,
            Phase::Done
                if self
                    .wb
                    .as_deref()
                    .is_some_and(|pc| pc.closer == Some(j) && !pc.clean()) =>
            {
                TaskState::IoWait
            }
            Phase::NotStarted | Phase::Done | Phase::Sleeping(_) => TaskState::Idle,
            _ => TaskState::Running,
        }
    }

    /// The averaging work of every group whose period has ended (a sample tick).
    pub(super) fn psi_tick(&mut self) {
        let now = self.q.now();
        if let Some(p) = self.psi.as_deref_mut() {
            p.tick(now);
        }
    }

    /// `cat io.pressure` of every cgroup at the end of the run (the root's is
    /// `/proc/pressure/io`).
    pub(super) fn psi_show_all(&mut self, end: crate::sim::Ns) -> Vec<String> {
        let now = end;
        let n = self.cg_stat.len() as u32;
        match self.psi.as_deref_mut() {
            Some(p) => (0..n).map(|g| p.show(now, g)).collect(),
            None => Vec::new(),
        }
    }
}
