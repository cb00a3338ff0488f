//! The event queue, ordered by (time, sequence number).
//!
//! Ties at the same nanosecond fire in push order, so the simulation is deterministic.
//! Payloads are small `Copy` values; a layer's token is opaque to the queue.
//!
//! Design
//! ------
//! Every event gets a key `time << 64 | seq` (`seq` counts pushes), and the queue pops
//! the smallest key: exactly the order a single priority queue would give. Most events
//! are pushed a fixed delay after `now` (a device's constant service time, fio's
//! submit and reap overheads), so each stream of them arrives already sorted. The
//! queue exploits that with a few FIFO *lanes*: a push goes to the lane whose last key
//! is the largest one not above the new key (so every lane stays sorted), and only an
//! event that fits no lane goes to the binary heap. A pop takes the smallest of the
//! lane fronts and the heap's top, so a push or pop costs a handful of comparisons
//! instead of O(log n) sifting. With four lanes nothing reaches the heap in runs
//! without blk-iocost (the null_blk benchmarks, the blk-throttle seeds); blk-iocost's
//! per-cgroup timers send a tenth to almost half of the events there (six lanes took
//! them all in our runs, at the price of longer scans for every event), and with
//! thousands of waiting cgroups most of them: a wait timer that takes a lane holds it
//! past the fixed-delay events that would have followed (routing rules that keep long
//! delays out of lanes helped 10,000 cgroups by up to 13% and cost 100 cgroups 4%).

use super::Ns;
use crate::stack::PolicyId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Who an event is for. Each layer interprets its own token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A fio job wakes up (rate/thinktime sleep over, submit overhead elapsed, ...).
    Job(u32),
    /// The device model's own timer (completion, token-bucket refill, ...).
    Device(u64),
    /// A policy's timer (blk-throttle's pending timer, blk-iocost's period and
    /// wait-queue timers, ...): the stack hands the token back to that policy.
    Policy(PolicyId, u64),
    /// A submission context (job or kernel worker) resumes after a sleep.
    Ctx(u32),
    /// Periodic sampling: fio bw/iops logs and the per-second timeline.
    Sample,
    /// A scheduled interface-file write (e.g. an `io.max` change at t).
    Config(u32),
}

/// Number of sorted FIFO lanes in front of the heap.
const LANES: usize = 4;

/// `time << 64 | seq`: the order events fire in.
type Key = u128;

#[inline]
fn key_time(k: Key) -> Ns {
    (k >> 64) as Ns
}

/// One lane: a ring buffer whose capacity is a power of two (indices are masked, not
/// wrapped by comparison), grown by doubling.
#[derive(Debug, Default)]
struct Lane {
    buf: Vec<(Key, Event)>,
    head: usize,
    len: usize,
}

impl Lane {
    #[inline]
    fn push_back(&mut self, item: (Key, Event)) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        self.buf[(self.head + self.len) & mask] = item;
        self.len += 1;
    }

    /// The front item and the key of the one after it (`Key::MAX` if none). The lane
    /// must not be empty.
    #[inline]
    fn pop_front(&mut self) -> ((Key, Event), Key) {
        let mask = self.buf.len() - 1;
        let item = self.buf[self.head];
        self.head = (self.head + 1) & mask;
        self.len -= 1;
        // read the slot even when the lane is now empty (a stale key), then select:
        // no branch on whether the lane emptied
        let after = self.buf[self.head].0;
        (item, if self.len > 0 { after } else { Key::MAX })
    }

    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(64);
        let mut buf = Vec::with_capacity(cap);
        let mask = self.buf.len().wrapping_sub(1);
        buf.extend((0..self.len).map(|i| self.buf[(self.head + i) & mask]));
        buf.resize(cap, (0, Event::Sample));
        self.buf = buf;
        self.head = 0;
    }
}

#[derive(Debug)]
pub struct EventQueue {
    /// Each lane's keys ascend from front to back.
    lanes: [Lane; LANES],
    /// Each lane's front key (`Key::MAX` when empty), for a pop to scan.
    fronts: [Key; LANES],
    /// The time of each lane's last event (0 when empty), for a push to scan: the new
    /// key is larger than every key pushed before, so it fits behind a lane's last
    /// key exactly when its time is not earlier.
    back_times: [Ns; LANES],
    /// Events that fit no lane.
    heap: BinaryHeap<Reverse<(Key, Event)>>,
    seq: u64,
    now: Ns,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            lanes: Default::default(),
            fronts: [Key::MAX; LANES],
            back_times: [0; LANES],
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
        }
    }
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
        let key = (at as Key) << 64 | self.seq as Key;
        // best fit: the lane whose last event is the latest not after `at`; an empty
        // lane (0) fits anything but is taken only if no busy lane does
        let mut best = LANES;
        let mut best_back = 0;
        for (i, &back) in self.back_times.iter().enumerate() {
            // branch-free: which lane fits varies from push to push
            let fit = (back <= at) & (back >= best_back);
            best = if fit { i } else { best };
            best_back = if fit { back } else { best_back };
        }
        if best == LANES {
            self.heap.push(Reverse((key, ev)));
            return;
        }
        let lane = &mut self.lanes[best];
        if lane.len == 0 {
            self.fronts[best] = key;
        }
        lane.push_back((key, ev));
        self.back_times[best] = at;
    }

    /// Schedule `ev` after `delay` from now.
    #[inline]
    pub fn after(&mut self, delay: Ns, ev: Event) {
        self.push(self.now.saturating_add(delay), ev);
    }

    /// The lane holding the smallest front key (`LANES` for the heap), and that key.
    #[inline]
    fn first(&self) -> Option<(usize, Key)> {
        let mut best = LANES;
        let mut best_key = match self.heap.peek() {
            Some(Reverse((k, _))) => *k,
            None => Key::MAX,
        };
        for (i, &k) in self.fronts.iter().enumerate() {
            let less = k < best_key;
            best = if less { i } else { best };
            best_key = if less { k } else { best_key };
        }
        // no key is Key::MAX: seq never reaches u64::MAX
        (best_key != Key::MAX).then_some((best, best_key))
    }

    /// Pop the next event and advance the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ns, Event)> {
        let (i, _) = self.first()?;
        let (k, ev) = if i == LANES {
            self.heap.pop()?.0
        } else {
            let (item, next) = self.lanes[i].pop_front();
            // branch-free: whether the lane empties varies from pop to pop
            let emptied = next == Key::MAX;
            self.fronts[i] = next;
            self.back_times[i] = if emptied { 0 } else { self.back_times[i] };
            item
        };
        self.now = key_time(k);
        Some((self.now, ev))
    }

    /// Time of the next event without removing it.
    pub fn peek_time(&self) -> Option<Ns> {
        self.first().map(|(_, k)| key_time(k))
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(|l| l.len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    proptest::proptest! {
        /// Any mix of pushes (delays drawn from a few fixed values, as the pipeline
        /// uses, and arbitrary ones) and pops comes out in (time, push order).
        #[test]
        fn pops_in_time_then_push_order(
            ops in proptest::collection::vec((0u8..8, 0u64..50_000), 1..400)
        ) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(Ns, u64, u32)> = Vec::new();
            let mut n = 0u64;
            for (op, x) in ops {
                if op < 2 {
                    let got = q.pop();
                    reference.sort();
                    let want = if reference.is_empty() {
                        None
                    } else {
                        let (t, _, j) = reference.remove(0);
                        Some((t, Event::Job(j)))
                    };
                    proptest::prop_assert_eq!(got, want);
                } else {
                    let delay = match op {
                        2 => 1_500,
                        3 => 2_000,
                        4 => 20_000,
                        5 => 0,
                        _ => x,
                    };
                    n += 1;
                    q.after(delay, Event::Job(n as u32));
                    reference.push((q.now() + delay, n, n as u32));
                }
                proptest::prop_assert_eq!(q.len(), reference.len());
            }
        }
    }
}
