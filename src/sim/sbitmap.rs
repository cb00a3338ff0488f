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
//! *Which bit.* Which bit a submitter gets matters once an allocation is limited to a
//! shallow depth (mq-deadline's writes, `dd_limit_depth()`; BFQ's async I/O and a queue
//! past its share, `bfq_limit_depth()`): the limit applies per word
//! of the map, so a write may find no bit it is allowed while most of the queue's
//! tags are free. [`Sbitmap`] is the map bit for bit: `1 << shift` bits per word
//! (`sbitmap_calculate_shift()` of the depth the map was allocated with), a freed bit
//! set in the word's `cleared` mask and moved back only when a search finds the word
//! full (`sbitmap_deferred_clear()`), and the allocation hint (`alloc_hint`, one: the
//! simulator's submitters share one CPU's hint): a plain get searches the hinted word
//! from its first bit, a shallow one from the hinted bit, then the next words
//! (`sbitmap_find_bit()`); the hint moves on only when the hinted bit was taken, goes to
//! 0 when nothing was found, and to a bit as it is freed (`sbitmap_update_cpu_hint()`);
//! it starts at a random bit (`init_alloc_hint()`). The shallow limit is per word
//! before 42e6c6ce03fd ("lib/sbitmap: convert shallow_depth from one word to the whole
//! sbitmap": 6.17, 6.12.43) and spread over the words since ([`Shallow`]).
//!
//! *Moving parts.* [`TagSet`] holds the [`Sbitmap`], `SBQ_WAIT_QUEUES` = 8 wait queues
//! of sleepers, and the wake-up state of 6.12's `sbitmap_queue_wake_up()`:
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

use crate::error::Named;
use crate::kernel_version::KernelVersion;

/// `SBQ_WAIT_QUEUES`.
const SBQ_WAIT_QUEUES: usize = 8;
/// `SBQ_WAKE_BATCH`.
const SBQ_WAKE_BATCH: u32 = 8;

/// `ilog2(BITS_PER_LONG)`.
const MAX_SHIFT: u32 = 6;

/// How an allocation is limited (`data->shallow_depth` and the sbitmap that reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shallow {
    /// At most this many bits of each word (`sbitmap_get_shallow()` before 42e6c6ce03fd).
    PerWord(u32),
    /// This many of the queue's requests, as bits of each word
    /// (`dd_to_word_depth()`: `((n << shift) + nr_requests - 1) / nr_requests`), then
    /// per word as [`Shallow::PerWord`].
    PerWordOfQueue(u32),
    /// This many bits over the whole map, spread over the words in proportion, the
    /// remainder to the first ones (`__map_depth_with_shallow()`, 42e6c6ce03fd).
    Map(u32),
}

/// What a shallow depth counts, a version switch of the elevators that limit depths
/// (`deadline.shallow_depth`, `bfq.shallow_depth`): bits of each word of the scheduler
/// tags' map (before 6.17), or bits of the whole map, spread over its words
/// (42e6c6ce03fd "lib/sbitmap: convert shallow_depth from one word to the whole
/// sbitmap": 6.17, 6.12.43), which changed how mq-deadline and BFQ compute theirs too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShallowDepth {
    PerWord,
    WholeMap,
}

impl Named for ShallowDepth {
    const NAMES: &'static [(&'static str, Self)] =
        &[("per-word", Self::PerWord), ("whole-map", Self::WholeMap)];
}

/// Stable series that carry 42e6c6ce03fd: (series, first patch; from the 6.12.43
/// review's shortlog).
const STABLE_WHOLE_MAP: &[((u32, u32), u32)] = &[((6, 12), 43)];

impl ShallowDepth {
    /// Kernel `v`'s.
    pub fn of(v: &KernelVersion) -> Self {
        if v.carries((6, 17), STABLE_WHOLE_MAP) {
            Self::WholeMap
        } else {
            Self::PerWord
        }
    }
}

/// `sbitmap_calculate_shift()`: bits per word as a power of two, fewer for a small map
/// so that it spreads over at least 4 words.
pub fn calculate_shift(depth: u32) -> u32 {
    let mut shift = MAX_SHIFT;
    if depth >= 4 {
        while (4u32 << shift) > depth {
            shift -= 1;
        }
    }
    shift
}

/// One word of the map (`struct sbitmap_word`): bits in use, and bits freed but not yet
/// moved back (`cleared`).
#[derive(Debug, Clone, Copy, Default)]
struct Word {
    word: u64,
    cleared: u64,
}

/// The bits of a tag set (`struct sbitmap`), with its one allocation hint.
#[derive(Debug)]
pub struct Sbitmap {
    depth: u32,
    shift: u32,
    words: Vec<Word>,
    hint: u32,
}

impl Sbitmap {
    /// `depth` bits in words of the shift a map of `alloc_depth` has (a queue whose
    /// `nr_requests` was lowered keeps the words of its first allocation:
    /// `sbitmap_resize()`), the hint at bit `hint`.
    pub fn new(depth: u32, alloc_depth: u32, hint: u32) -> Self {
        let depth = depth.max(1);
        let shift = calculate_shift(alloc_depth.max(depth));
        Sbitmap {
            depth,
            shift,
            words: vec![Word::default(); depth.div_ceil(1 << shift) as usize],
            hint: hint % depth,
        }
    }

    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// `__map_depth()`.
    fn map_depth(&self, index: usize) -> u32 {
        if index + 1 == self.words.len() {
            self.depth - ((index as u32) << self.shift)
        } else {
            1 << self.shift
        }
    }

    /// The bits of word `index` an allocation limited by `shallow` may take.
    fn word_depth(&self, index: usize, shallow: Option<Shallow>) -> u32 {
        let wd = self.map_depth(index);
        let per_word = |n: u64| wd.min(n.min(u64::from(u32::MAX)) as u32);
        match shallow {
            None => wd,
            Some(Shallow::PerWord(n)) => per_word(u64::from(n)),
            // dd_to_word_depth()
            Some(Shallow::PerWordOfQueue(n)) => {
                let nr = u64::from(self.depth);
                per_word((u64::from(n) << self.shift).div_ceil(nr))
            }
            // __map_depth_with_shallow()
            Some(Shallow::Map(n)) => {
                if n >= self.depth {
                    return wd;
                }
                let x = u64::from(wd) * u64::from(n);
                let (q, rem) = (x / u64::from(self.depth), x % u64::from(self.depth));
                q as u32 + u32::from(rem >= (index as u64 + 1) * u64::from(wd))
            }
        }
    }

    /// `sbitmap_find_bit_in_word()`: the first clear bit below `depth` from `hint` on
    /// (`__sbitmap_get_word()`, from bit 0 again if `wrap`), taken; a full word first
    /// gets its freed bits back (`sbitmap_deferred_clear()`).
    fn find_bit_in_word(&mut self, index: usize, depth: u32, hint: u32, wrap: bool) -> Option<u32> {
        let mask = if depth >= 64 {
            u64::MAX
        } else {
            (1u64 << depth) - 1
        };
        loop {
            let w = &mut self.words[index];
            let free = !w.word & mask;
            let from = if hint < 64 {
                free & (u64::MAX << hint)
            } else {
                0
            };
            let pick = if from != 0 {
                Some(from)
            } else if wrap && hint > 0 && free != 0 {
                Some(free)
            } else {
                None
            };
            if let Some(bits) = pick {
                let nr = bits.trailing_zeros();
                w.word |= 1 << nr;
                return Some(nr);
            }
            if w.cleared == 0 {
                return None;
            }
            w.word &= !w.cleared;
            w.cleared = 0;
        }
    }

    /// `sbitmap_get()` / `sbitmap_get_shallow()`: a free bit, searched from the hinted
    /// word (a plain get from the word's first bit, a shallow one from the hinted bit),
    /// then word by word; the hint then as `update_alloc_hint_after_get()`.
    pub fn get(&mut self, shallow: Option<Shallow>) -> Option<u32> {
        let hint = self.hint;
        let mut index = (hint >> self.shift) as usize;
        let mut bit = if shallow.is_some() {
            hint & ((1 << self.shift) - 1)
        } else {
            0
        };
        let mut nr = None;
        for _ in 0..self.words.len() {
            let depth = self.word_depth(index, shallow);
            if depth > 0
                && let Some(b) = self.find_bit_in_word(index, depth, bit, true)
            {
                nr = Some(b + ((index as u32) << self.shift));
                break;
            }
            bit = 0;
            index = (index + 1) % self.words.len();
        }
        match nr {
            None => self.hint = 0,
            Some(n) if n == hint => self.hint = if n + 1 >= self.depth - 1 { 0 } else { n + 1 },
            Some(_) => {}
        }
        nr
    }

    /// `sbitmap_deferred_clear_bit()` and `sbitmap_update_cpu_hint()`: `nr` is free to
    /// the next search that finds its word full, and the hint points at it.
    pub fn put(&mut self, nr: u32) {
        let w = &mut self.words[(nr >> self.shift) as usize];
        debug_assert!(w.word & (1 << (nr & ((1 << self.shift) - 1))) != 0);
        w.cleared |= 1 << (nr & ((1 << self.shift) - 1));
        if nr < self.depth {
            self.hint = nr;
        }
    }
}

/// A queue's tags and their sleepers (`struct sbitmap_queue`), sleepers named by `W`.
#[derive(Debug)]
pub struct TagSet<W> {
    depth: u32,
    map: Sbitmap,
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
        Self::with_map(Sbitmap::new(depth, depth, 0), min_shallow_depth)
    }

    /// The tags of `map`.
    pub fn with_map(map: Sbitmap, min_shallow_depth: Option<u32>) -> Self {
        let depth = map.depth;
        TagSet {
            depth,
            map,
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

    /// `__blk_mq_get_tag()`: a free tag within the `shallow` limit, if there is one
    /// (`sbitmap_queue_get()`, `sbitmap_queue_get_shallow()`).
    pub fn get(&mut self, shallow: Option<Shallow>) -> Option<u32> {
        self.map.get(shallow)
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
        self.map.put(tag);
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
    fn bits_come_from_the_hinted_word_and_freed_ones_back_when_it_is_full() {
        // 32 bits: 4 words of 8; the hint in word 2
        let mut m = Sbitmap::new(32, 32, 17);
        assert_eq!(m.shift(), 3);
        // a plain get searches the hinted word from its first bit; the hint moves on
        // only when the hinted bit itself was taken
        assert_eq!(m.get(None), Some(16));
        assert_eq!(m.get(None), Some(17));
        assert_eq!(m.get(None), Some(18));
        // a freed bit waits in `cleared` until the word is full, and takes the hint
        m.put(16);
        let rest: Vec<u32> = (0..5).map(|_| m.get(None).unwrap()).collect();
        assert_eq!(rest, [19, 20, 21, 22, 23]);
        assert_eq!(m.get(None), Some(16));
        // word 2 full: on to word 3
        assert_eq!(m.get(None), Some(24));
    }

    #[test]
    fn a_shallow_limit_is_per_word_before_42e6c6ce03fd_and_over_the_map_since() {
        // mq-deadline's async_depth 2 on 32 scheduler tags (4 words of 8)
        let per_word = |s: Shallow| {
            let m = Sbitmap::new(32, 32, 0);
            (0..4).map(|i| m.word_depth(i, Some(s))).collect::<Vec<_>>()
        };
        // dd_to_word_depth(2) = ceil(2 * 8 / 32) = 1 bit of each word: 4 tags
        assert_eq!(per_word(Shallow::PerWordOfQueue(2)), [1, 1, 1, 1]);
        // the whole map's 2 bits: one in each of the first two words
        assert_eq!(per_word(Shallow::Map(2)), [1, 1, 0, 0]);
        assert_eq!(per_word(Shallow::Map(32)), [8, 8, 8, 8]);
        assert_eq!(per_word(Shallow::PerWord(24)), [8, 8, 8, 8]);
        // writes limited to bit 0 of each word: a read holding bit 0 of a word shuts
        // the writes out of that word, however many of its bits are free
        let mut m = Sbitmap::new(32, 32, 0);
        let w = Some(Shallow::PerWordOfQueue(2));
        assert_eq!(m.get(None), Some(0));
        let writes: Vec<Option<u32>> = (0..4).map(|_| m.get(w)).collect();
        assert_eq!(writes, [Some(8), Some(16), Some(24), None]);
        assert!(m.get(None).is_some());
    }

    #[test]
    fn shift_spreads_a_small_map_over_four_words() {
        assert_eq!(calculate_shift(2), 6);
        assert_eq!(calculate_shift(4), 0);
        assert_eq!(calculate_shift(32), 3);
        assert_eq!(calculate_shift(256), 6);
        assert_eq!(calculate_shift(1000), 6);
        // a lowered nr_requests keeps the first allocation's words
        assert_eq!(Sbitmap::new(8, 64, 0).shift(), 4);
    }
}
