//! Merging: a bio joins a request already waiting in the elevator, instead of taking a
//! tag and a request of its own, and a new request joins one waiting there.
//!
//! Design
//! ------
//! The idea: contiguous I/O that reaches the queue while the requests before it still
//! wait in the elevator leaves as fewer, larger requests. Before a bio takes a tag
//! (`blk_mq_submit_bio()` → `blk_mq_attempt_bio_merge()`, ahead of `rq_qos_throttle()`),
//! the block core asks an elevator that merges (`ops.bio_merge`, `dd_bio_merge()` →
//! `blk_mq_sched_try_merge()`) for a request that ends where the bio starts (a back
//! merge) or starts where it ends (a front merge), and appends or prepends the bio: it
//! then completes with that request. A request that grew may now touch its neighbour in
//! the elevator's sort order, and the two become one (`attempt_back_merge()`,
//! `attempt_front_merge()`). A new request is also tried against the requests waiting
//! before it is inserted (`blk_mq_sched_try_insert_merge()`). A request merged away is
//! freed (`blk_mq_free_request()`): the elevator's `finish_request`, `rq_qos_done()`,
//! its tag back to the sleepers.
//!
//! Where to look (`elv_merge()`, `block/elevator.c`): the one-hit cache
//! (`q->last_merge`, the request last merged into or the first inserted), which may give
//! a back or a front merge; the back-merge hash (requests by end sector, newest first,
//! `elv_rqhash_find()`); then the elevator's own front-merge lookup (`request_merge`:
//! mq-deadline's sort tree, with `front_merges`).
//!
//! When (`blk_rq_merge_ok()`, `ll_back_merge_fn()`, `ll_merge_requests_fn()`,
//! `block/blk-merge.c`): same direction and I/O priority, same cgroup (from 5.18,
//! `blk.merge_cgroup`), a request not marked `REQ_NOMERGE`, and the result within
//! `max_sectors_kb` and `BLK_MAX_SEGMENTS` segments (one per page of a bio: fio's
//! buffers are page-aligned and the pages physically apart). A bio that would make a
//! request too large marks it `REQ_NOMERGE` (`req_set_nomerge()`): nothing merges into
//! it again.
//!
//! Every merged bio is counted in iostat's `rrqm/s` / `wrqm/s`, as is every request
//! merged away, which also leaves the disk's in-flight count
//! (`blk_account_io_merge_bio()`, `blk_account_io_merge_request()`); the rq-qos chain
//! hears of a merged bio (`rq_qos_merge()`: blk-iocost charges its size).
//!
//! `[device] nomerges` is `queue/nomerges` ([`NoMerges`]): 2 tries no merge at all, 1
//! (any value but 0 and 2) only the one-hit cache.
//!
//! Not modelled: merges in a plug (`blk_attempt_plug_merge()`: fio submits one I/O per
//! call, so a plug holds one request), in the software queues under `none`
//! (`blk_bio_list_merge()`: a request waits there only while kblockd's run is pending)
//! and discard merges.
//!
//! Moving parts: `RqHash` (the hash and the one-hit cache, `struct elevator_queue`'s
//! merge half) here, held by the pipeline; the pipeline's merge steps in the `impl`
//! below; the elevator's side through [`crate::stack::Elevator`]; a request's bios as a
//! chain through `Bio::next`, walked when the request completes
//! (`crate::sim::engine`).

use rustc_hash::FxHashMap;

use super::engine::{Pipeline, RqSlot};
use super::{Bio, BioId};

/// `BLK_MAX_SEGMENTS`: the segments a request may have (`queue_max_segments()`); every
/// device model keeps the block layer's default.
const BLK_MAX_SEGMENTS: u32 = 128;

/// The segments of a bio of `bytes`: one per page.
pub(super) fn nr_segs(bytes: u64) -> u32 {
    bytes.div_ceil(4096).max(1) as u32
}

/// Whether merges may cross cgroups (`blk.merge_cgroup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeCgroup {
    /// Any two requests merge, whichever cgroups issued them (≤ 5.17).
    Any,
    /// Only within a cgroup (`blk_cgroup_mergeable()`, 5.18+: 6b2b04590b51 "block:
    /// don't merge across cgroup boundaries if blkcg is enabled").
    Same,
}

impl crate::error::Named for MergeCgroup {
    const NAMES: &'static [(&'static str, Self)] = &[("any", Self::Any), ("same", Self::Same)];
}

/// `queue/nomerges` (`queue_nomerges_store()`): which merges are tried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NoMerges {
    /// 0: all of them.
    #[default]
    All,
    /// Any other value but 2 (`QUEUE_FLAG_NOXMERGES`): only `q->last_merge`.
    OneHit,
    /// 2 (`QUEUE_FLAG_NOMERGES`): none.
    None,
}

impl NoMerges {
    /// The flag a write of `v` to `queue/nomerges` sets.
    pub fn of(v: u64) -> Self {
        match v {
            0 => NoMerges::All,
            2 => NoMerges::None,
            _ => NoMerges::OneHit,
        }
    }
}

/// The elevator queue's merge state (`elevator.c`): requests waiting in the elevator
/// by end sector, and `q->last_merge`.
#[derive(Debug, Default)]
pub(super) struct RqHash {
    /// End sector → the newest request ending there: `elv_rqhash_find()` returns the
    /// newest of equal keys (`hash_add()` puts it at the bucket's head). Only looked
    /// up, never walked, so its order does not matter; sectors are hashed by
    /// `rustc-hash` (a multiply), not SipHash, which cost a tenth of a merging run.
    newest: FxHashMap<u64, u32>,
    /// (end sector, tag) of requests a newer one with the same end hides, oldest first
    /// (rare: two streams ending at one sector).
    hidden: Vec<(u64, u32)>,
    /// Each tag's end sector while it is in the hash.
    key: Vec<Option<u64>>,
    /// `q->last_merge`: the one-hit cache.
    pub(super) last_merge: Option<u32>,
}

impl RqHash {
    /// `elv_rqhash_add()`: request `tag` ends at sector `end`.
    pub(super) fn add(&mut self, tag: u32, end: u64) {
        if let Some(older) = self.newest.insert(end, tag) {
            self.hidden.push((end, older));
        }
        let t = tag as usize;
        if self.key.len() <= t {
            self.key.resize(t + 1, None);
        }
        self.key[t] = Some(end);
    }

    /// Request `tag` leaves the hash; the newest it hid takes its place.
    fn remove(&mut self, tag: u32) {
        let Some(end) = self.key.get_mut(tag as usize).and_then(Option::take) else {
            return;
        };
        if self.newest.get(&end) == Some(&tag) {
            match self.hidden.iter().rposition(|&(e, _)| e == end) {
                Some(i) => {
                    let (_, older) = self.hidden.remove(i);
                    self.newest.insert(end, older);
                }
                None => {
                    self.newest.remove(&end);
                }
            }
        } else if let Some(i) = self.hidden.iter().position(|&h| h == (end, tag)) {
            self.hidden.remove(i);
        }
    }

    /// `elv_rqhash_del()`, and `q->last_merge` forgets it (`deadline_remove_request()`,
    /// `req_set_nomerge()`).
    pub(super) fn del(&mut self, tag: u32) {
        self.remove(tag);
        if self.last_merge == Some(tag) {
            self.last_merge = None;
        }
    }

    /// `elv_rqhash_reposition()`: request `tag` now ends at `end`.
    fn reposition(&mut self, tag: u32, end: u64) {
        self.remove(tag);
        self.add(tag, end);
    }

    /// `elv_rqhash_find()`: the newest request ending at sector `end`.
    fn find(&self, end: u64) -> Option<u32> {
        self.newest.get(&end).copied()
    }
}

/// Which end of a request a bio joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merge {
    Back,
    Front,
}

impl RqSlot {
    /// `blk_rq_pos() + blk_rq_sectors()`.
    pub(super) fn end(&self) -> u64 {
        self.sector + (self.bytes >> 9)
    }
}

impl Pipeline {
    /// `blk_mq_sched_bio_merge()` → `blk_mq_sched_try_merge()`: bio `b` joins a request
    /// waiting in the elevator, if one takes it. True if it did: it then completes with
    /// that request.
    pub(super) fn bio_merge(&mut self, b: BioId) -> bool {
        let Some(e) = self.stack.elevator.as_ref() else {
            return false;
        };
        // blk_mq_attempt_bio_merge(): !blk_queue_nomerges(q)
        if !e.merges() || self.nomerges == NoMerges::None {
            return false;
        }
        let one_hit = self.nomerges == NoMerges::OneHit;
        let bio = *self.bios.get(b);
        let sectors = bio.bytes >> 9;
        // elv_merge(): the one-hit cache, the back-merge hash, the elevator's lookup
        let mut hit = None;
        if let Some(lm) = self.rq_hash.last_merge
            && self.bio_merge_ok(lm, &bio)
        {
            let r = self.slot(lm);
            if r.end() == bio.sector {
                hit = Some((lm, Merge::Back));
            } else if r.sector.wrapping_sub(sectors) == bio.sector {
                hit = Some((lm, Merge::Front));
            }
        }
        // blk_queue_noxmerges(): the one-hit cache only
        if hit.is_none()
            && !one_hit
            && let Some(t) = self.rq_hash.find(bio.sector)
            && self.bio_merge_ok(t, &bio)
        {
            hit = Some((t, Merge::Back));
        }
        if hit.is_none()
            && !one_hit
            && let Some(t) = e.request_merge(bio.dir, bio.ioprio, bio.sector + sectors)
            && self.bio_merge_ok(t, &bio)
        {
            hit = Some((t, Merge::Front));
        }
        let Some((t, how)) = hit else {
            return false;
        };
        // ll_back_merge_fn() / ll_front_merge_fn()
        let r = self.slot(t);
        let segs = nr_segs(bio.bytes);
        if (r.bytes + bio.bytes) >> 9 > self.max_sectors() || r.nr_segs + segs > BLK_MAX_SEGMENTS {
            self.set_nomerge(t);
            return false;
        }
        self.rq_qos_merge(t, b);
        let r = self.slot_mut(t);
        r.nr_segs += segs;
        r.bytes += bio.bytes;
        match how {
            Merge::Back => {
                let tail = std::mem::replace(&mut r.biotail, b);
                self.bios.get_mut(tail).next = b;
            }
            Merge::Front => {
                let head = std::mem::replace(&mut r.bio, b);
                r.sector = bio.sector;
                self.bios.get_mut(b).next = head;
            }
        }
        self.dev_acct.count_merge(bio.dir);
        // attempt_back_merge() / attempt_front_merge(), else elv_merged_request()
        let e = self
            .stack
            .elevator
            .as_ref()
            .expect("merges need an elevator");
        let merged = match how {
            Merge::Back => e.next_request(t).is_some_and(|n| self.attempt_merge(t, n)),
            Merge::Front => e
                .former_request(t)
                .is_some_and(|p| self.attempt_merge(p, t)),
        };
        if !merged {
            match how {
                Merge::Back => {
                    let end = self.slot(t).end();
                    self.rq_hash.reposition(t, end);
                }
                Merge::Front => {
                    let e = self
                        .stack
                        .elevator
                        .as_mut()
                        .expect("merges need an elevator");
                    e.request_merged(t, bio.sector);
                }
            }
            self.rq_hash.last_merge = Some(t);
        }
        true
    }

    /// `elv_attempt_insert_merge()`: new request `tag`, not yet inserted, joins the end
    /// of a waiting one — the one-hit cache, else the hash, again with the grown request
    /// while one ends where it starts. True if it did (it is freed).
    pub(super) fn insert_merge(&mut self, tag: u32) -> bool {
        if self.nomerges == NoMerges::None {
            return false;
        }
        if let Some(lm) = self.rq_hash.last_merge
            && self.attempt_merge(lm, tag)
        {
            return true;
        }
        if self.nomerges == NoMerges::OneHit {
            return false;
        }
        let mut rq = tag;
        let mut merged = false;
        while let Some(t) = self.rq_hash.find(self.slot(rq).sector)
            && self.attempt_merge(t, rq)
        {
            merged = true;
            rq = t;
        }
        merged
    }

    /// `dd_insert_request()`'s part for merges: request `tag`, inserted, can be found.
    pub(super) fn merge_inserted(&mut self, tag: u32) {
        let end = self.slot(tag).end();
        self.rq_hash.add(tag, end);
        self.rq_hash.last_merge.get_or_insert(tag);
    }

    /// `attempt_merge()`: request `next` joins the end of request `tag` if it starts
    /// where `tag` ends and may; `next` is then freed.
    fn attempt_merge(&mut self, tag: u32, next: u32) -> bool {
        let (r, n) = (self.slot(tag), self.slot(next));
        let (rb, nb) = (self.bios.get(r.bio), self.bios.get(n.bio));
        if r.nomerge
            || n.nomerge
            || rb.dir != nb.dir
            || rb.ioprio != nb.ioprio
            || r.end() != n.sector
            // ll_merge_requests_fn()
            || (r.bytes + n.bytes) >> 9 > self.max_sectors()
            || r.nr_segs + n.nr_segs > BLK_MAX_SEGMENTS
            || !self.cgroup_mergeable(rb, nb)
        {
            return false;
        }
        let dir = rb.dir;
        let gone = self.request(next, n);
        let r = self.slot_mut(tag);
        r.start = r.start.min(n.start);
        let tail = std::mem::replace(&mut r.biotail, n.biotail);
        r.bytes += n.bytes;
        r.nr_segs += n.nr_segs;
        let end = r.end();
        self.bios.get_mut(tail).next = n.bio;
        // elv_merge_requests(): the elevator forgets next (dd_merged_requests() →
        // deadline_remove_request() → elv_rqhash_del())
        self.rq_hash.del(next);
        if let Some(e) = self.stack.elevator.as_mut() {
            e.requests_merged(tag, &gone);
        }
        self.rq_hash.reposition(tag, end);
        self.rq_hash.last_merge = Some(tag);
        // blk_account_io_merge_request()
        self.dev_acct.count_merge(dir);
        self.dev_acct.advance(self.q.now());
        self.dev_acct.inflight -= 1;
        self.free_request(next, &gone);
        true
    }

    /// `blk_rq_merge_ok()` (and `elv_bio_merge_ok()`: mq-deadline has no `allow_merge`).
    fn bio_merge_ok(&self, tag: u32, bio: &Bio) -> bool {
        let r = self.slot(tag);
        let head = self.bios.get(r.bio);
        !r.nomerge
            && head.dir == bio.dir
            && head.ioprio == bio.ioprio
            && self.cgroup_mergeable(head, bio)
    }

    /// `blk_cgroup_mergeable()` (5.18+), or always.
    fn cgroup_mergeable(&self, a: &Bio, b: &Bio) -> bool {
        self.blk.merge_cgroup == MergeCgroup::Any || (a.cgroup == b.cgroup && a.meta == b.meta)
    }

    /// `req_set_nomerge()`: nothing merges into request `tag` again.
    fn set_nomerge(&mut self, tag: u32) {
        self.slot_mut(tag).nomerge = true;
        self.rq_hash.del(tag);
    }

    /// `queue_max_sectors()`.
    fn max_sectors(&self) -> u64 {
        self.max_bio_bytes >> 9
    }

    /// `rq_qos_merge()`: bio `b` is about to join request `tag`.
    fn rq_qos_merge(&mut self, tag: u32, b: BioId) {
        if !self.stack.rq_qos_ops.merge {
            return;
        }
        let now = self.q.now();
        let rq = self.request(tag, self.slot(tag));
        for p in &mut self.stack.rq_qos {
            p.merge(now, &rq, b, &mut self.bios, &mut self.q);
        }
    }

    fn slot(&self, tag: u32) -> RqSlot {
        self.rqs[tag as usize].expect("a request in the elevator holds its tag")
    }

    fn slot_mut(&mut self, tag: u32) -> &mut RqSlot {
        self.rqs[tag as usize]
            .as_mut()
            .expect("a request in the elevator holds its tag")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_finds_the_newest_request_ending_at_a_sector() {
        let mut h = RqHash::default();
        h.add(1, 100);
        h.add(2, 100);
        h.add(3, 100);
        h.add(4, 200);
        assert_eq!(h.find(100), Some(3));
        h.del(3);
        assert_eq!(h.find(100), Some(2));
        h.del(1);
        assert_eq!(h.find(100), Some(2));
        h.reposition(2, 300);
        assert_eq!((h.find(100), h.find(300)), (None, Some(2)));
        h.last_merge = Some(4);
        h.del(4);
        assert_eq!((h.find(200), h.last_merge), (None, None));
        assert!(h.hidden.is_empty());
    }
}
