//! The per-request driver cost between one completion and the next dispatch on the same
//! hardware queue (`[device] dispatch_ns`, any model; 0 = none, the default).
//!
//! Design
//! ------
//! In the kernel a completion runs the driver's completion path (`blk_mq_end_request()`,
//! freeing the tag) and only then does the hardware queue dispatch what waits
//! (`blk_mq_run_hw_queue()` → `blk_mq_dispatch_rq_list()` → `->queue_rq()`), so on a
//! one-tag device the next request reaches the device some microseconds after the
//! previous one completed, and the device falls short of its nominal rate.
//! [`Dispatch`] wraps any model: a request submitted before `dispatch_ns` has passed
//! since the last completion waits in a FIFO; one `Event::Device(WAKE)` at that time
//! hands every waiting request to the model at once (one queue run dispatches the whole
//! list). A request the model completes inside `submit()` ([`Completion::Inline`]:
//! null_blk's softirq mode) sets no such gap: its completion path ran in the context
//! that dispatched it, which pays it (`[host] inline_complete_ns`), and that context
//! dispatches next. A request the model refuses at the wake-up ([`Completion::Requeued`])
//! goes back to the block layer with those behind it ([`BlockDevice::requeued`]); one
//! it completes inside `submit()` then has the block layer ask the elevator again
//! ([`BlockDevice::dispatched_inline`]).
//! Everything else is forwarded. O(1) per request; the FIFO holds at most the queue's
//! tags.

use super::fault::Badblocks;
use super::{BlockDevice, Completion, DevRq, LatencyModel, QueueLimits};
use crate::error::KeyError;
use crate::sim::{Event, EventQueue, IoErr, Ns, time_text};
use std::collections::VecDeque;

/// Token of the wake-up event (the cloud model's refill timer is `u64::MAX`).
const WAKE: u64 = u64::MAX - 1;

/// A model behind a hardware queue with a fixed completion-to-dispatch cost.
pub struct Dispatch {
    inner: Box<dyn BlockDevice>,
    dispatch_ns: Ns,
    /// No dispatch before this (last completion + dispatch_ns).
    next_ok: Ns,
    waiting: VecDeque<DevRq>,
    wake_pending: bool,
    /// Per tag (grown as needed): its request completed inside `submit()`.
    inline: Vec<bool>,
    /// Tags the model refused at the wake-up's dispatch, with those behind them.
    requeued: Vec<u32>,
    /// The wake-up's dispatch had the model end a request inside `submit()`.
    woke_inline: bool,
}

impl Dispatch {
    pub fn new(inner: Box<dyn BlockDevice>, dispatch_ns: Ns) -> Self {
        let depth = inner.limits().hw_queue_depth as usize;
        Dispatch {
            inner,
            dispatch_ns,
            next_ok: 0,
            waiting: VecDeque::with_capacity(depth),
            wake_pending: false,
            inline: Vec::new(),
            requeued: Vec::new(),
            woke_inline: false,
        }
    }

    /// Hands `rq` to the model, noting whether it completed inside the call.
    fn pass(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Completion {
        let c = self.inner.submit(now, rq, q);
        let t = rq.tag as usize;
        if self.inline.len() <= t {
            self.inline.resize(t + 1, false);
        }
        self.inline[t] = c == Completion::Inline;
        c
    }

    fn arm(&mut self, q: &mut EventQueue) {
        if !self.waiting.is_empty() && !self.wake_pending {
            self.wake_pending = true;
            q.push(self.next_ok, Event::Device(WAKE));
        }
    }
}

impl BlockDevice for Dispatch {
    fn limits(&self) -> &QueueLimits {
        self.inner.limits()
    }

    fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Completion {
        if now >= self.next_ok && self.waiting.is_empty() {
            self.pass(now, rq, q)
        } else {
            self.waiting.push_back(rq);
            self.arm(q);
            Completion::Later
        }
    }

    fn requeued(&mut self, out: &mut Vec<u32>) {
        out.append(&mut self.requeued);
        self.inner.requeued(out);
    }

    fn restarted(&mut self) -> bool {
        self.inner.restarted()
    }

    fn dispatched_inline(&mut self) -> bool {
        std::mem::take(&mut self.woke_inline)
    }

    fn on_event(&mut self, now: Ns, token: u64, q: &mut EventQueue, done: &mut Vec<u32>) {
        if token == WAKE {
            self.wake_pending = false;
            if now < self.next_ok {
                // a completion since the wake-up was armed moved the next dispatch on
                self.arm(q);
                return;
            }
            while let Some(rq) = self.waiting.pop_front() {
                let c = self.pass(now, rq, q);
                self.woke_inline |= c == Completion::Inline;
                if c == Completion::Requeued {
                    // the rest of the queue run's list goes back with it
                    self.requeued.push(rq.tag);
                    self.requeued.extend(self.waiting.drain(..).map(|r| r.tag));
                }
            }
            return;
        }
        let before = done.len();
        self.inner.on_event(now, token, q, done);
        let gap = done[before..]
            .iter()
            .any(|&t| !self.inline.get(t as usize).copied().unwrap_or(false));
        if gap {
            self.next_ok = now + self.dispatch_ns;
            self.arm(q);
        }
    }

    fn model(&self) -> &'static str {
        self.inner.model()
    }

    fn latency_model(&self) -> LatencyModel {
        let mut m = self.inner.latency_model();
        m.text += &format!(
            "; the next dispatch {} after a completion (dispatch_ns)",
            time_text(self.dispatch_ns)
        );
        m.keys.push("dispatch_ns");
        m
    }

    fn check_request(&self, bytes: u64) -> Result<(), KeyError> {
        self.inner.check_request(bytes)
    }

    fn may_fail(&self) -> bool {
        self.inner.may_fail()
    }

    fn status(&mut self, tag: u32) -> Option<IoErr> {
        self.inner.status(tag)
    }

    fn badblocks_mut(&mut self) -> Option<&mut Badblocks> {
        self.inner.badblocks_mut()
    }

    fn stat_columns(&self) -> &'static [&'static str] {
        self.inner.stat_columns()
    }

    fn stat_row(&mut self, out: &mut Vec<f64>) {
        self.inner.stat_row(out)
    }

    fn run_counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.run_counters()
    }
}
