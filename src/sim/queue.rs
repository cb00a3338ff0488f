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
//! event that fits no lane goes to the heap. A pop takes the smallest of the
//! lane fronts and the heap's top, so a push or pop costs a handful of comparisons
//! instead of O(log n) sifting; the heap is a radix heap (a monotone priority
//! queue: pushes append to one of 129 buckets by the highest bit in which the key
//! differs from the last one taken out), cheaper than a binary heap's sifting when
//! thousands of timers wait in it. With four lanes nothing reaches the heap in runs
//! without blk-iocost (the null_blk benchmarks, the blk-throttle seeds); blk-iocost's
//! per-cgroup wait timers are a tenth to almost half of the events, and with
//! thousands of waiting cgroups most of them. Those timers therefore go straight to
//! the heap ([`EventQueue::push_timer`]): one taking a lane would hold it past the
//! fixed-delay events that would have followed and send those to the heap instead
//! (routing by delay helped 10,000 cgroups by up to 13% and cost 100 cgroups 4%;
//! routing by caller helps both, 0.86× and 0.79× CPU time). [`EventQueue::peek_event`]
//! shows the next event without taking it: at scale the pipeline hints the records that
//! event will read while the current one runs.

use super::Ns;
use crate::stack::PolicyId;

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
    /// kblockd runs the hardware queue (`blk_mq_run_work_fn()`): requests inserted
    /// for it go to the driver (`crate::sim::plug`).
    QueueRun,
    /// The guest CPU's running burst ends (its generation; `crate::sim::cpu`).
    CpuBurst(u32),
    /// The guest CPU's scheduler tick.
    CpuTick,
    /// A cgroup's writeback work item runs (`wb_workfn()`; `crate::sim::writeback`).
    WbWork(u32),
    /// A cgroup's delayed write-bandwidth update (`wb->bw_dwork`).
    WbBandwidth(u32),
}

/// Number of sorted FIFO lanes in front of the heap.
const LANES: usize = 4;

/// `time << 64 | seq`: the order events fire in.
type Key = u128;

#[inline]
fn key_time(k: Key) -> Ns {
    (k >> 64) as Ns
}

/// The events that fit no lane: a radix heap, a priority queue for keys that never go
/// below the last one taken out (our clock never runs back). Bucket `b ≥ 1` holds the
/// keys above `last` whose highest bit that differs from it is bit `b - 1`; bucket 0
/// holds the keys not above `last`, largest first. A push appends to its bucket; when
/// bucket 0 runs dry, the lowest non-empty bucket's smallest key becomes `last` and that
/// bucket's keys move down into lower buckets (each key only ever moves down, at most
/// 128 times, in practice a few), so a push is O(1) and a pop O(1) amortized plus a
/// scan of one bucket: sequential appends instead of a binary heap's sifting through
/// cache lines all over it.
#[derive(Debug)]
struct RadixHeap {
    buckets: [Vec<(Key, Event)>; 129],
    /// Bit `b` set: bucket `b` (≥ 1) is not empty.
    nonempty: [u64; 3],
    last: Key,
    len: usize,
}

impl Default for RadixHeap {
    fn default() -> Self {
        RadixHeap {
            buckets: std::array::from_fn(|_| Vec::new()),
            nonempty: [0; 3],
            last: 0,
            len: 0,
        }
    }
}

impl RadixHeap {
    /// The bucket of a key above `last`.
    #[inline]
    fn bucket(last: Key, key: Key) -> usize {
        128 - (key ^ last).leading_zeros() as usize
    }

    #[inline]
    fn push(&mut self, item: (Key, Event)) {
        self.len += 1;
        if item.0 <= self.last {
            // only while bucket 0 holds a key not yet taken out; keep it sorted
            let b0 = &mut self.buckets[0];
            let at = b0.partition_point(|x| x.0 > item.0);
            b0.insert(at, item);
            return;
        }
        let b = Self::bucket(self.last, item.0);
        self.buckets[b].push(item);
        self.nonempty[b >> 6] |= 1 << (b & 63);
    }

    /// The smallest key, bringing it to bucket 0 first if need be.
    #[inline]
    fn peek(&mut self) -> Option<Key> {
        if self.buckets[0].is_empty() {
            if self.len == 0 {
                return None;
            }
            self.refill();
        }
        self.buckets[0].last().map(|x| x.0)
    }

    /// Bucket 0 is empty and the heap is not: the lowest non-empty bucket's smallest
    /// key becomes `last` and the bucket's keys move down (after most pops: bucket 0
    /// rarely holds more than the one key it was refilled with).
    fn refill(&mut self) {
        let w = self.nonempty.iter().position(|&m| m != 0).unwrap_or(0);
        let b = (w << 6) + self.nonempty[w].trailing_zeros() as usize;
        self.nonempty[w] &= !(1 << (b & 63));
        let mut from = std::mem::take(&mut self.buckets[b]);
        let min = from.iter().map(|x| x.0).min().unwrap_or(self.last);
        self.last = min;
        for item in from.drain(..) {
            let nb = if item.0 == min {
                0
            } else {
                Self::bucket(min, item.0)
            };
            self.buckets[nb].push(item);
            self.nonempty[nb >> 6] |= u64::from(nb > 0) << (nb & 63);
        }
        // keep the emptied bucket's capacity for its next keys
        self.buckets[b] = from;
    }

    #[inline]
    fn pop(&mut self) -> Option<(Key, Event)> {
        self.peek()?;
        self.len -= 1;
        self.buckets[0].pop()
    }
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
    heap: RadixHeap,
    seq: u64,
    now: Ns,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            lanes: Default::default(),
            fronts: [Key::MAX; LANES],
            back_times: [0; LANES],
            heap: RadixHeap::default(),
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
            self.heap.push((key, ev));
            return;
        }
        let lane = &mut self.lanes[best];
        if lane.len == 0 {
            self.fronts[best] = key;
        }
        lane.push_back((key, ev));
        self.back_times[best] = at;
    }

    /// Schedule a timer `ev` at `at` straight into the heap, past the lanes: for
    /// timers whose times follow no fixed delay (blk-iocost's per-cgroup wait timers,
    /// one per waiting iocg as the kernel's `iocg->waitq_timer`), which in a lane
    /// would hold it past the fixed-delay events that then miss it. Same order as
    /// [`EventQueue::push`].
    #[inline]
    pub fn push_timer(&mut self, at: Ns, ev: Event) {
        let at = at.max(self.now);
        self.seq += 1;
        self.heap.push(((at as Key) << 64 | self.seq as Key, ev));
    }

    /// Schedule `ev` after `delay` from now.
    #[inline]
    pub fn after(&mut self, delay: Ns, ev: Event) {
        self.push(self.now.saturating_add(delay), ev);
    }

    /// The lane holding the smallest front key (`LANES` for the heap), and that key.
    #[inline]
    fn first(&mut self) -> Option<(usize, Key)> {
        let mut best = LANES;
        let mut best_key = self.heap.peek().unwrap_or(Key::MAX);
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
            self.heap.pop()?
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

    /// The next event, without removing it.
    #[inline]
    pub fn peek_event(&mut self) -> Option<Event> {
        let (i, _) = self.first()?;
        if i == LANES {
            self.heap.buckets[0].last().map(|x| x.1)
        } else {
            let lane = &self.lanes[i];
            Some(lane.buf[lane.head].1)
        }
    }

    /// Time of the next event without removing it.
    pub fn peek_time(&mut self) -> Option<Ns> {
        self.first().map(|(_, k)| key_time(k))
    }

    pub fn len(&self) -> usize {
        self.heap.len + self.lanes.iter().map(|l| l.len).sum::<usize>()
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
        /// The radix heap alone, under the queue's rule (no key below the last one
        /// taken out): pops come out as a sorted reference's, ties in time by sequence.
        #[test]
        fn radix_heap_pops_in_key_order(
            ops in proptest::collection::vec((0u8..4, 0u64..3_000_000), 1..600)
        ) {
            let mut h = RadixHeap::default();
            let mut reference: Vec<Key> = Vec::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (op, x) in ops {
                if op == 0 {
                    reference.sort_unstable_by(|a, b| b.cmp(a));
                    let want = reference.pop();
                    let got = h.pop().map(|(k, _)| k);
                    proptest::prop_assert_eq!(got, want);
                    if let Some(k) = got {
                        now = key_time(k);
                    }
                } else {
                    seq += 1;
                    // a third at `now` itself, the rest spread up to 3 ms ahead
                    let at = now + if op == 1 { 0 } else { x };
                    let key = (at as Key) << 64 | seq as Key;
                    h.push((key, Event::Job(seq as u32)));
                    reference.push(key);
                }
                proptest::prop_assert_eq!(h.len, reference.len());
            }
        }

        /// Any mix of pushes (delays drawn from a few fixed values, as the pipeline
        /// uses, and arbitrary ones, some as timers straight to the heap) and pops
        /// comes out in (time, push order), and `peek_event` always shows the next.
        #[test]
        fn pops_in_time_then_push_order(
            ops in proptest::collection::vec((0u8..9, 0u64..50_000), 1..400)
        ) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(Ns, u64, u32)> = Vec::new();
            let mut n = 0u64;
            for (op, x) in ops {
                if op < 2 {
                    let peeked = q.peek_event();
                    let got = q.pop();
                    // a look at the next event sees the one the pop takes
                    proptest::prop_assert_eq!(peeked, got.map(|(_, ev)| ev));
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
                    if op == 8 {
                        // a timer past the lanes, as blk-iocost's wait timers
                        q.push_timer(q.now() + delay, Event::Job(n as u32));
                    } else {
                        q.after(delay, Event::Job(n as u32));
                    }
                    reference.push((q.now() + delay, n, n as u32));
                }
                proptest::prop_assert_eq!(q.len(), reference.len());
            }
        }
    }
}
