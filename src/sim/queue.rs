//! The event queue: a binary heap keyed by (time, sequence number).
//!
//! Ties at the same nanosecond fire in push order, so the simulation is deterministic.
//! Payloads are small `Copy` values; a layer's token is opaque to the queue.

use super::Ns;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Who an event is for. Each layer interprets its own token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A fio job wakes up (rate/thinktime sleep over, submit overhead elapsed, ...).
    Job(u32),
    /// The device model's own timer (completion, token-bucket refill, ...).
    Device(u64),
    /// blk-throttle's pending timer / dispatch work.
    Throttle(u64),
    /// blk-iocost's period timer or a cgroup's wait-queue timer.
    Iocost(u64),
    /// A submission context (job or kernel worker) resumes after a sleep.
    Ctx(u32),
    /// Periodic sampling: fio bw/iops logs and the per-second timeline.
    Sample,
    /// A scheduled interface-file write (e.g. an `io.max` change at t).
    Config(u32),
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Ns, u64, Event)>>,
    seq: u64,
    now: Ns,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Current simulated time (the time of the event being handled).
    #[inline]
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedule `ev` at absolute time `at` (never earlier than now).
    #[inline]
    pub fn push(&mut self, at: Ns, ev: Event) {
        let at = at.max(self.now);
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// Schedule `ev` after `delay` from now.
    #[inline]
    pub fn after(&mut self, delay: Ns, ev: Event) {
        self.push(self.now.saturating_add(delay), ev);
    }

    /// Pop the next event and advance the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ns, Event)> {
        let Reverse((t, _, ev)) = self.heap.pop()?;
        self.now = t;
        Some((t, ev))
    }

    /// Time of the next event without removing it.
    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_fire_in_push_order_and_clock_advances() {
        let mut q = EventQueue::new();
        q.push(10, Event::Job(1));
        q.push(5, Event::Job(2));
        q.push(10, Event::Job(3));
        assert_eq!(q.pop(), Some((5, Event::Job(2))));
        assert_eq!(q.now(), 5);
        assert_eq!(q.pop(), Some((10, Event::Job(1))));
        assert_eq!(q.pop(), Some((10, Event::Job(3))));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn push_in_the_past_is_clamped_to_now() {
        let mut q = EventQueue::new();
        q.push(100, Event::Sample);
        q.pop();
        q.push(3, Event::Job(0));
        assert_eq!(q.pop(), Some((100, Event::Job(0))));
    }
}
