//! Tag allocation as the kernel's `sbitmap_queue` (`lib/sbitmap.c`) and
//! `blk_mq_get_tag()` (`block/blk-mq-tag.c`) hand it out: who gets a freed tag.
//!
//! Design
//! ------
//! *Idea.* A freed tag is not handed to a waiter. `sbitmap_queue_clear()` clears the
//! bit — from then on any submitter that asks takes it (`__blk_mq_get_tag()`),
//! sleepers or not — and only then wakes sleepers, in batches: a sleeper that wakes
//! retries like any submitter and, if the bits are gone again, sleeps again. So a
//! submitter that is running when a tag frees can take it before the sleeper the free
//! woke, and the sleeper's wake-up takes time (the engine retries it `[host]
//! tag_wakeup_ns` later; on one CPU after the tasks the completion woke first).
//!
//! *Moving parts.* [`TagSet`] holds the free bits (which bit a submitter gets does not
//! matter to the simulation, so a stack), `SBQ_WAIT_QUEUES` = 8 wait queues of
//! sleepers, and the wake-up state of 6.12's `sbitmap_queue_wake_up()`:
//! - `wake_batch` (`sbq_calc_wake_batch()`): `clamp(min(depth, min_shallow_depth) / 8,
//!   1, SBQ_WAKE_BATCH = 8)`. mq-deadline sets `min_shallow_depth` to 1 since the
//!   tag-reservation fix (6.11, 6.1.103), so under it the batch is 1; under `none`
//!   (no shallow user) a queue of 64 tags wakes 8 sleepers every 8 frees.
//! - `completion_cnt` / `wakeup_cnt`: frees are counted only while someone sleeps
//!   (`ws_active`, which counts a sleeper from `sbitmap_prepare_to_wait()` until its
//!   `sbitmap_finish_wait()`, i.e. until a woken sleeper retries); each time the count
//!   is a batch ahead of the wake-ups, one batch is woken.
//! - `__sbitmap_queue_wake_up()`: from `wake_index`, queue by queue (the index moves
//!   on before a queue is looked at), up to a batch of sleepers in FIFO order of each
//!   queue (`wake_up_nr()` of exclusive waiters).
//! - A sleeper goes on the queue `bt_wait_ptr()` gives: the hardware context's
//!   `wait_index`, which moves on with every sleeper (one hardware context here).
//!
//! Where things live: the engine (`crate::sim::engine`) makes the set `nr_requests`
//! deep (`crate::sched::nr_requests`; a resize is `sbitmap_queue_resize()`, which
//! recomputes `wake_batch` from the new depth — here a new set before the run), asks
//! [`TagSet::get`] at request allocation; a submitter that gets none sleeps
//! ([`TagSet::prepare_to_wait`]), [`TagSet::put`] at completion returns the sleepers to
//! wake, and a woken one calls [`TagSet::finish_wait`] when it runs, then asks again.
//!
//! *Versions.* Before 6.2 ("sbitmap: Use single per-bitmap counting to wake up queued
//! tags") each wait queue counted its own `wait_cnt` and a batch woke one queue only.
//! With a batch of 1 — mq-deadline on every kernel with the tag-reservation fix — both
//! wake the same sleeper; they differ only for batches above 1 (`none` with 16 tags or
//! more, mq-deadline before the fix). Only the 6.2+ form is modelled.

use std::collections::VecDeque;

/// `SBQ_WAIT_QUEUES`.
const SBQ_WAIT_QUEUES: usize = 8;
/// `SBQ_WAKE_BATCH`.
const SBQ_WAKE_BATCH: u32 = 8;

/// A queue's tags and their sleepers (`struct sbitmap_queue`), sleepers named by `W`.
#[derive(Debug)]
pub struct TagSet<W> {
    depth: u32,
    free: Vec<u32>,
    ws: [VecDeque<W>; SBQ_WAIT_QUEUES],
    /// Sleepers and woken sleepers that have not retried yet.
    ws_active: u32,
    wake_index: usize,
    /// `hctx->wait_index`.
    wait_index: usize,
    wake_batch: u32,
    completion_cnt: u32,
    wakeup_cnt: u32,
}

impl<W> TagSet<W> {
    /// `depth` tags (at least 1); `min_shallow_depth` as `sbitmap_queue_min_shallow_depth()`
    /// set it, None if nothing allocates with a shallow depth (`UINT_MAX`).
    pub fn new(depth: u32, min_shallow_depth: Option<u32>) -> Self {
        let depth = depth.max(1);
        TagSet {
            depth,
            free: (0..depth).rev().collect(),
            ws: Default::default(),
            ws_active: 0,
            wake_index: 0,
            wait_index: 0,
            wake_batch: wake_batch(depth, min_shallow_depth),
            completion_cnt: 0,
            wakeup_cnt: 0,
        }
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    pub fn wake_batch(&self) -> u32 {
        self.wake_batch
    }

    /// `__blk_mq_get_tag()`: a free tag, if any is left and fewer than `shallow` are in
    /// use (`sbitmap_queue_get_shallow()`; modelled as a cap on all tags in use, where
    /// sbitmap applies it per word).
    pub fn get(&mut self, shallow: Option<u32>) -> Option<u32> {
        if shallow.is_some_and(|s| self.depth - self.free.len() as u32 >= s) {
            return None;
        }
        self.free.pop()
    }

    /// `sbitmap_prepare_to_wait()` on `bt_wait_ptr()`'s queue: `w` sleeps.
    pub fn prepare_to_wait(&mut self, w: W) {
        self.ws[self.wait_index].push_back(w);
        self.wait_index = (self.wait_index + 1) % SBQ_WAIT_QUEUES;
        self.ws_active += 1;
    }

    /// `sbitmap_finish_wait()`: a woken sleeper runs again.
    pub fn finish_wait(&mut self) {
        self.ws_active -= 1;
    }

    /// `sbitmap_queue_clear()`: `tag` is free; the sleepers it wakes go to `woken`, in
    /// the order they wake.
    pub fn put(&mut self, tag: u32, woken: &mut Vec<W>) {
        debug_assert!(!self.free.contains(&tag));
        self.free.push(tag);
        // sbitmap_queue_wake_up(sbq, 1)
        if self.ws_active == 0 {
            return;
        }
        self.completion_cnt = self.completion_cnt.wrapping_add(1);
        if self.completion_cnt.wrapping_sub(self.wakeup_cnt) < self.wake_batch {
            return;
        }
        self.wakeup_cnt = self.wakeup_cnt.wrapping_add(self.wake_batch);
        // __sbitmap_queue_wake_up()
        let mut nr = self.wake_batch;
        for _ in 0..SBQ_WAIT_QUEUES {
            let ws = &mut self.ws[self.wake_index];
            self.wake_index = (self.wake_index + 1) % SBQ_WAIT_QUEUES;
            let n = ws.len().min(nr as usize);
            woken.extend(ws.drain(..n));
            nr -= n as u32;
            if nr == 0 {
                break;
            }
        }
    }
}

/// `sbq_calc_wake_batch()`.
fn wake_batch(depth: u32, min_shallow_depth: Option<u32>) -> u32 {
    (depth.min(min_shallow_depth.unwrap_or(u32::MAX)) / SBQ_WAIT_QUEUES as u32)
        .clamp(1, SBQ_WAKE_BATCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_batch_as_sbq_calc_wake_batch() {
        assert_eq!(TagSet::<u32>::new(4, Some(1)).wake_batch(), 1);
        assert_eq!(TagSet::<u32>::new(64, None).wake_batch(), 8);
        assert_eq!(TagSet::<u32>::new(256, None).wake_batch(), 8);
        assert_eq!(TagSet::<u32>::new(32, None).wake_batch(), 4);
        assert_eq!(TagSet::<u32>::new(128, Some(48)).wake_batch(), 6);
        assert_eq!(TagSet::<u32>::new(2, None).wake_batch(), 1);
    }

    #[test]
    fn a_free_bit_goes_to_whoever_asks_first() {
        let mut t = TagSet::new(1, Some(1));
        let a = t.get(None).unwrap();
        assert_eq!(t.get(None), None);
        t.prepare_to_wait('s');
        let mut woken = Vec::new();
        t.put(a, &mut woken);
        assert_eq!(woken, ['s']);
        // a running submitter takes the bit before the woken sleeper retries
        assert_eq!(t.get(None), Some(a));
        t.finish_wait();
        assert_eq!(t.get(None), None);
        t.prepare_to_wait('s');
        t.put(a, &mut woken);
        assert_eq!(woken, ['s', 's']);
    }

    #[test]
    fn sleepers_wake_in_batches_round_robin_over_the_queues() {
        // 64 tags, no shallow user: a batch of 8
        let mut t = TagSet::new(64, None);
        let tags: Vec<u32> = (0..64).map(|_| t.get(None).unwrap()).collect();
        for w in 0..20u32 {
            t.prepare_to_wait(w);
        }
        let mut woken = Vec::new();
        for &tag in &tags[..7] {
            t.put(tag, &mut woken);
        }
        assert!(woken.is_empty(), "7 frees are less than a batch");
        t.put(tags[7], &mut woken);
        // sleepers 0..20 sit on queues w % 8; from queue 0 on, up to 8 in all: the
        // first queue's sleepers first (FIFO), then on to the next queue
        assert_eq!(woken, [0, 8, 16, 1, 9, 17, 2, 10]);
        woken.clear();
        for &tag in &tags[8..16] {
            t.put(tag, &mut woken);
        }
        assert_eq!(woken, [3, 11, 19, 4, 12, 5, 13, 6]);
    }

    #[test]
    fn frees_while_nobody_sleeps_do_not_count() {
        let mut t = TagSet::new(16, None);
        assert_eq!(t.wake_batch(), 2);
        let a = t.get(None).unwrap();
        let b = t.get(None).unwrap();
        let mut woken = Vec::new();
        t.put(a, &mut woken);
        t.prepare_to_wait(1);
        t.put(b, &mut woken);
        assert!(
            woken.is_empty(),
            "the free before anyone slept is not counted"
        );
        let c = t.get(None).unwrap();
        t.put(c, &mut woken);
        assert_eq!(woken, [1]);
    }

    #[test]
    fn shallow_depth_caps_tags_in_use() {
        let mut t = TagSet::<u32>::new(4, Some(1));
        assert!(t.get(Some(2)).is_some());
        assert!(t.get(Some(2)).is_some());
        assert_eq!(t.get(Some(2)), None);
        assert!(t.get(None).is_some());
    }
}
