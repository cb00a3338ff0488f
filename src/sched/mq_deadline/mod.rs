//! mq-deadline (`block/mq-deadline.c`, 6.12) as a self-contained scheduler: requests
//! go in with [`MqDeadline::insert_request`], come out in the kernel's order with
//! [`MqDeadline::dispatch_request`], and are accounted done with
//! [`MqDeadline::finish_request`]. It knows nothing of the engine: time is the caller's
//! jiffies (`kernel.hz`, counted as blk-throttle counts them), a request is a token
//! plus what mq-deadline reads of it (direction, start sector, I/O priority).
//!
//! Moving parts, each where the kernel has it:
//! - three `PerPrio` levels (RT, BE, IDLE; class NONE is BE — `ioprio_class_to_prio[]`;
//!   one level before 5.14), each with, per direction, a sector-sorted tree (a
//!   `BTreeSet` of (sector, arrival), so equal sectors keep arrival order as
//!   `elv_rb_add()` does) and a FIFO in arrival order whose entries carry their
//!   `fifo_time` = insertion jiffies + `fifo_expire[dir]`;
//! - the at-head `dispatch` list, served first and LIFO (`list_add()` at its head);
//! - global batch state (`last_dir`, `batching`, `starved`) shared by all levels, as in
//!   `struct deadline_data`;
//! - per-level counters `inserted`, `merged`, `dispatched`, `completed` (debugfs
//!   `*_stats`); `queued` = inserted − completed counts requests **in flight** too,
//!   which is what makes a higher level block a lower one (5.16+) and what decides
//!   whether aging runs;
//! - the tunables ([`tunables`], sysfs `iosched/`) and the version switches
//!   ([`behaviour`]).
//!
//! `dd_dispatch_request()` order: the at-head list; then, while ≥ 2 levels have
//! requests queued or in flight, BE then IDLE requests inserted more than
//! `prio_aging_expire` ago (`dd_dispatch_prio_aged_requests()`); then RT, BE, IDLE in
//! turn, stopping at the first level that dispatched or still has requests queued or
//! in flight. Within a level `__dd_dispatch_request()` continues a batch in sector
//! order up to `fifo_batch`, else picks reads unless writes have been passed over
//! `writes_starved` times, and starts from the FIFO head when it has expired or the
//! sorted order has run out. Where "in sector order" goes on is `deadline.sweep`: the
//! first request at or after the last one dispatched (6.5+), or the request that
//! followed it when it was dispatched (`next_rq[]`, before 6.5).
//!
//! Merges are the block core's (`crate::sim::merge`); mq-deadline finds the request a
//! bio front-merges into in its sort tree (`dd_request_merge()`, only with
//! `front_merges`), gives a request's neighbours in sector order, moves a request that
//! grew at the front (`dd_request_merged()`), and forgets one merged into another,
//! whose earlier FIFO time and place the survivor takes (`dd_merged_requests()`,
//! counted in `merged`). Not modelled: the request's level within a class (mq-deadline
//! ignores it).

pub mod behaviour;
pub mod elevator;
pub mod timeline;
pub mod tunables;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::blkcg::ioprio::{Ioprio, IoprioClass};
use crate::sim::Dir;
use crate::sim::jiffies::time_after;
use crate::sim::sbitmap::Shallow;
use behaviour::{AsyncDepth, DeadlineBehaviour, PrioMode, ShallowDepth, Sweep};
use tunables::Tunables;

/// `enum dd_prio`: the scheduler's priority levels, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DdPrio {
    Rt = 0,
    Be = 1,
    Idle = 2,
}

impl DdPrio {
    pub const ALL: [DdPrio; 3] = [DdPrio::Rt, DdPrio::Be, DdPrio::Idle];

    pub fn name(self) -> &'static str {
        match self {
            DdPrio::Rt => "rt",
            DdPrio::Be => "be",
            DdPrio::Idle => "idle",
        }
    }
}

/// What mq-deadline reads of a request, and the caller's token for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DdRequest {
    pub token: u64,
    pub dir: Dir,
    /// `blk_rq_pos()`, in 512-byte sectors.
    pub sector: u64,
    /// `req_get_ioprio()`.
    pub ioprio: Ioprio,
}

/// `struct io_stats_per_prio` (u32 counters that may wrap, as the kernel's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    pub inserted: u32,
    pub merged: u32,
    pub dispatched: u32,
    pub completed: u32,
}

#[derive(Debug, Clone, Copy)]
struct Queued {
    rq: DdRequest,
    /// jiffies at which the request expires.
    fifo_time: u64,
}

/// `struct dd_per_prio`.
#[derive(Debug, Default)]
struct PerPrio {
    /// `sort_list[dir]`: (sector, arrival number).
    sort: [BTreeSet<(u64, u64)>; 2],
    /// `fifo_list[dir]`: arrival number → request, in arrival order.
    fifo: [BTreeMap<u64, Queued>; 2],
    /// `latest_pos[dir]`: where the last request dispatched started (6.5+).
    latest_pos: [u64; 2],
    /// `next_rq[dir]`: the request after the last one dispatched, as it was then
    /// (before 6.5): moved on only when it leaves the sort tree.
    next_rq: [Option<u64>; 2],
    stats: IoStats,
}

impl PerPrio {
    /// `deadline_from_pos()`: the first request at or after `pos` in sector order.
    fn first_at_or_after(&self, dir: Dir, pos: u64) -> Option<(u64, u64)> {
        self.sort[dir.idx()].range((pos, 0)..).next().copied()
    }

    /// `deadline_next_request()`: where a batch in `dir` goes on, by `sweep`.
    fn next_request(&self, dir: Dir, sweep: Sweep) -> Option<u64> {
        match sweep {
            Sweep::Position => self
                .first_at_or_after(dir, self.latest_pos[dir.idx()])
                .map(|(_, seq)| seq),
            Sweep::NextRq => self.next_rq[dir.idx()],
        }
    }

    /// `deadline_latter_request()`: the request after (sector, seq) in sector order.
    fn latter(&self, dir: Dir, sector: u64, seq: u64) -> Option<u64> {
        self.sort[dir.idx()]
            .range((sector, seq)..)
            .nth(1)
            .map(|&(_, s)| s)
    }

    /// `deadline_del_rq_rb()`: (sector, seq) leaves the sort tree; `next_rq` moves on
    /// past it.
    fn del_rb(&mut self, dir: Dir, sector: u64, seq: u64) {
        if self.next_rq[dir.idx()] == Some(seq) {
            self.next_rq[dir.idx()] = self.latter(dir, sector, seq);
        }
        self.sort[dir.idx()].remove(&(sector, seq));
    }

    /// The FIFO head of `dir`: (arrival, its entry).
    fn fifo_head(&self, dir: Dir) -> Option<(u64, Queued)> {
        self.fifo[dir.idx()]
            .first_key_value()
            .map(|(&s, &q)| (s, q))
    }

    /// `deadline_remove_request()`.
    fn remove(&mut self, dir: Dir, seq: u64) -> Queued {
        let q = self.fifo[dir.idx()]
            .remove(&seq)
            .expect("a request on the sort tree is on the FIFO");
        self.del_rb(dir, q.rq.sector, seq);
        q
    }

    fn has_work(&self) -> bool {
        self.fifo.iter().any(|f| !f.is_empty())
    }
}

/// Where a queued request is: its level, direction and arrival number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DdLoc {
    pub prio: DdPrio,
    pub dir: Dir,
    pub seq: u64,
}

/// One queue's mq-deadline instance (`struct deadline_data`).
#[derive(Debug)]
pub struct MqDeadline {
    behaviour: DeadlineBehaviour,
    tun: Tunables,
    /// `dd->dispatch`: at-head inserts, front first.
    dispatch: VecDeque<DdRequest>,
    per_prio: [PerPrio; 3],
    last_dir: Dir,
    batching: u32,
    starved: u32,
    /// Arrival numbers: the FIFO and sort-tree tie order.
    next_seq: u64,
}

impl MqDeadline {
    /// `dd_init_sched()` with the tunables as configured.
    pub fn new(tun: Tunables, behaviour: DeadlineBehaviour) -> Self {
        MqDeadline {
            behaviour,
            tun,
            dispatch: VecDeque::new(),
            per_prio: Default::default(),
            last_dir: Dir::Write,
            batching: 0,
            starved: 0,
            next_seq: 0,
        }
    }

    pub fn tunables(&self) -> &Tunables {
        &self.tun
    }

    /// For writes to `queue/iosched/*` while running.
    pub fn tunables_mut(&mut self) -> &mut Tunables {
        &mut self.tun
    }

    pub fn behaviour(&self) -> DeadlineBehaviour {
        self.behaviour
    }

    /// `ioprio_class_to_prio[]`; everything is one level before 5.14.
    pub fn prio_of(&self, ioprio: Ioprio) -> DdPrio {
        match (self.behaviour.prio, ioprio.class()) {
            (PrioMode::None, _) => DdPrio::Be,
            (_, IoprioClass::Rt) => DdPrio::Rt,
            (_, IoprioClass::Idle) => DdPrio::Idle,
            (_, IoprioClass::None | IoprioClass::Be) => DdPrio::Be,
        }
    }

    /// `dd_insert_request()` at jiffies `now`; `at_head` = `BLK_MQ_INSERT_AT_HEAD`.
    /// Where it was queued (None: on the at-head list, where no merge finds it).
    pub fn insert_request(&mut self, rq: DdRequest, at_head: bool, now: u64) -> Option<DdLoc> {
        let prio = self.prio_of(rq.ioprio);
        self.count_inserted(prio);
        if at_head {
            self.dispatch.push_front(rq);
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let pp = &mut self.per_prio[prio as usize];
        pp.sort[rq.dir.idx()].insert((rq.sector, seq));
        let fifo_time = now.wrapping_add(u64::from(self.tun.fifo_expire[rq.dir.idx()]));
        pp.fifo[rq.dir.idx()].insert(seq, Queued { rq, fifo_time });
        Some(DdLoc {
            prio,
            dir: rq.dir,
            seq,
        })
    }

    fn count_inserted(&mut self, prio: DdPrio) {
        let s = &mut self.per_prio[prio as usize].stats;
        s.inserted = s.inserted.wrapping_add(1);
    }

    /// `dd_request_merge()`: the token of the request of the level of `ioprio` in
    /// `dir` that starts at sector `end` (a bio ending there front-merges into it), if
    /// `front_merges` is on.
    pub fn request_merge(&self, dir: Dir, ioprio: Ioprio, end: u64) -> Option<u64> {
        if self.tun.front_merges == 0 {
            return None;
        }
        let pp = &self.per_prio[self.prio_of(ioprio) as usize];
        let &(_, seq) = pp.sort[dir.idx()]
            .range((end, 0)..=(end, u64::MAX))
            .next()?;
        Some(pp.fifo[dir.idx()][&seq].rq.token)
    }

    /// `dd_request_merged()` after a front merge: the request at `at` now starts at
    /// `sector`, and moves in the sort tree.
    pub fn request_merged(&mut self, at: DdLoc, sector: u64) {
        let pp = &mut self.per_prio[at.prio as usize];
        let Some(old) = pp.fifo[at.dir.idx()].get(&at.seq).map(|q| q.rq.sector) else {
            return;
        };
        pp.del_rb(at.dir, old, at.seq);
        if let Some(q) = pp.fifo[at.dir.idx()].get_mut(&at.seq) {
            q.rq.sector = sector;
        }
        pp.sort[at.dir.idx()].insert((sector, at.seq));
    }

    /// `elv_rb_latter_request()` / `elv_rb_former_request()`: the token of the
    /// request after (`latter`) or before the one at `at` in its sort tree.
    pub fn neighbour(&self, at: DdLoc, latter: bool) -> Option<u64> {
        let pp = &self.per_prio[at.prio as usize];
        let sector = pp.fifo[at.dir.idx()].get(&at.seq)?.rq.sector;
        let sort = &pp.sort[at.dir.idx()];
        let &(_, seq) = if latter {
            sort.range((sector, at.seq)..).nth(1)?
        } else {
            sort.range(..(sector, at.seq)).next_back()?
        };
        Some(pp.fifo[at.dir.idx()][&seq].rq.token)
    }

    /// `dd_merged_requests()`: the request `next` (queued at `next_at`, or never
    /// inserted: an insert merge, which `dd_insert_request()` counted as inserted
    /// before it tried) was merged into the one at `at`, which takes `next`'s FIFO
    /// place and time if `next` expires first; `next` is forgotten. Where the request
    /// at `at` is now.
    pub fn merged_requests(
        &mut self,
        at: DdLoc,
        next_at: Option<DdLoc>,
        next_ioprio: Ioprio,
    ) -> DdLoc {
        let prio = self.prio_of(next_ioprio);
        if next_at.is_none() {
            self.count_inserted(prio);
        }
        let s = &mut self.per_prio[prio as usize].stats;
        s.merged = s.merged.wrapping_add(1);
        let Some(n) = next_at else {
            return at;
        };
        let gone = self.per_prio[n.prio as usize].remove(n.dir, n.seq);
        let pp = &mut self.per_prio[at.prio as usize];
        let q = pp.fifo[at.dir.idx()][&at.seq];
        if n.prio != at.prio || n.dir != at.dir || !time_after(q.fifo_time, gone.fifo_time) {
            return at;
        }
        // list_move() into next's place, with next's fifo_time (the same request:
        // its place in the sort tree, and next_rq if it is that, stay)
        let d = at.dir.idx();
        pp.fifo[d].remove(&at.seq);
        pp.sort[d].remove(&(q.rq.sector, at.seq));
        pp.sort[d].insert((q.rq.sector, n.seq));
        if pp.next_rq[d] == Some(at.seq) {
            pp.next_rq[d] = Some(n.seq);
        }
        let moved = Queued {
            fifo_time: gone.fifo_time,
            ..q
        };
        pp.fifo[at.dir.idx()].insert(n.seq, moved);
        DdLoc { seq: n.seq, ..at }
    }

    /// `dd_has_work()`.
    pub fn has_work(&self) -> bool {
        !self.dispatch.is_empty() || self.per_prio.iter().any(PerPrio::has_work)
    }

    /// `dd_finish_request()`: a request this scheduler inserted has completed.
    pub fn finish_request(&mut self, ioprio: Ioprio) {
        let s = &mut self.per_prio[self.prio_of(ioprio) as usize].stats;
        s.completed = s.completed.wrapping_add(1);
    }

    /// `dd_limit_depth()`: how the tag allocation of a request is limited
    /// (`data->shallow_depth`), or `None` for the full depth. Synchronous reads — every
    /// read the simulator issues — are never limited; writes get `async_depth`: as
    /// bits of each word of the scheduler tags' sbitmap (3/4 of `nr_requests`, taken as
    /// a word's bits: the limit 39823b47bbd4 fixed), scaled to a word's share
    /// (`dd_to_word_depth()`), or over the whole map (42e6c6ce03fd).
    pub fn limit_depth(&self, dir: Dir) -> Option<Shallow> {
        let n = match dir {
            Dir::Read => return None,
            Dir::Write => self.tun.async_depth?,
        };
        Some(
            match (self.behaviour.shallow_depth, self.behaviour.async_depth) {
                (ShallowDepth::WholeMap, _) => Shallow::Map(n),
                (ShallowDepth::PerWord, AsyncDepth::NrRequests) => Shallow::PerWordOfQueue(n),
                (ShallowDepth::PerWord, _) => Shallow::PerWord(n),
            },
        )
    }

    /// The debugfs `*_stats` counters of a level.
    pub fn stats(&self, prio: DdPrio) -> IoStats {
        self.per_prio[prio as usize].stats
    }

    /// `dd_queued()`: inserted and not yet completed (queued here or in flight).
    pub fn queued(&self, prio: DdPrio) -> u32 {
        let s = self.per_prio[prio as usize].stats;
        s.inserted.wrapping_sub(s.completed)
    }

    /// `dd_owned_by_driver()`: dispatched (or merged) and not completed.
    pub fn owned_by_driver(&self, prio: DdPrio) -> u32 {
        let s = self.per_prio[prio as usize].stats;
        s.dispatched
            .wrapping_add(s.merged)
            .wrapping_sub(s.completed)
    }

    /// Requests of level `prio` waiting in the scheduler (its FIFOs and its share of
    /// the at-head list): inserted, not yet dispatched.
    pub fn waiting_in(&self, prio: DdPrio) -> usize {
        let head = self
            .dispatch
            .iter()
            .filter(|rq| self.prio_of(rq.ioprio) == prio)
            .count();
        head + self.per_prio[prio as usize]
            .fifo
            .iter()
            .map(BTreeMap::len)
            .sum::<usize>()
    }

    /// Requests waiting in the scheduler (at-head list and every FIFO): `iostat`'s
    /// share of `aqu-sz` that the driver has not seen yet.
    pub fn waiting(&self) -> usize {
        self.dispatch.len()
            + self
                .per_prio
                .iter()
                .flat_map(|p| p.fifo.iter())
                .map(BTreeMap::len)
                .sum::<usize>()
    }

    /// `dd_start_request()`.
    fn start(&mut self, rq: DdRequest) -> DdRequest {
        let pp = &mut self.per_prio[self.prio_of(rq.ioprio) as usize];
        pp.latest_pos[rq.dir.idx()] = rq.sector;
        pp.stats.dispatched = pp.stats.dispatched.wrapping_add(1);
        rq
    }

    /// `started_after()`: whether `q` was inserted after jiffies `latest_start`
    /// (insertion = `fifo_time − fifo_expire[dir]`, with today's `fifo_expire`).
    fn started_after(&self, q: &Queued, latest_start: u64) -> bool {
        let start = q
            .fifo_time
            .wrapping_sub(u64::from(self.tun.fifo_expire[q.rq.dir.idx()]));
        time_after(start, latest_start)
    }

    /// `__dd_dispatch_request()` on level `prio` at jiffies `now`; only requests
    /// inserted at or before `latest_start` qualify (5.16+; `None` before: no check).
    fn dispatch_from(
        &mut self,
        prio: usize,
        now: u64,
        latest_start: Option<u64>,
    ) -> Option<DdRequest> {
        let pp = &self.per_prio[prio];
        let sweep = self.behaviour.sweep;
        // batches are reads XOR writes: continue in sector order
        let next = pp.next_request(self.last_dir, sweep);
        let (dir, seq) = match next {
            Some(seq) if self.batching < self.tun.fifo_batch as u32 => (self.last_dir, seq),
            _ => {
                let has = |d: Dir| !pp.fifo[d.idx()].is_empty();
                let dir = if has(Dir::Read) {
                    // `dd->starved++ >= dd->writes_starved`, compared as unsigned
                    let starve_writes = has(Dir::Write) && {
                        let s = self.starved;
                        self.starved = s.wrapping_add(1);
                        s >= self.tun.writes_starved as u32
                    };
                    if starve_writes { Dir::Write } else { Dir::Read }
                } else if has(Dir::Write) {
                    Dir::Write
                } else {
                    return None;
                };
                if dir == Dir::Write {
                    self.starved = 0;
                }
                let pp = &self.per_prio[prio];
                let (head_seq, head) = pp.fifo_head(dir)?;
                // deadline_check_fifo(): time_is_before_eq_jiffies(fifo_time)
                let expired = !time_after(head.fifo_time, now);
                let seq = match pp.next_request(dir, sweep) {
                    Some(s) if !expired => s,
                    _ => head_seq,
                };
                self.last_dir = dir;
                self.batching = 0;
                (dir, seq)
            }
        };
        let q = self.per_prio[prio].fifo[dir.idx()][&seq];
        if latest_start.is_some_and(|ls| self.started_after(&q, ls)) {
            return None;
        }
        self.batching += 1;
        // deadline_move_request(): next_rq is the request after this one
        let pp = &mut self.per_prio[prio];
        let latter = match sweep {
            Sweep::NextRq => pp.latter(dir, q.rq.sector, seq),
            Sweep::Position => None,
        };
        let q = pp.remove(dir, seq);
        pp.next_rq[dir.idx()] = latter;
        Some(self.start(q.rq))
    }

    /// `dd_dispatch_request()` at jiffies `now`: the next request for the driver.
    pub fn dispatch_request(&mut self, now: u64) -> Option<DdRequest> {
        if let Some(rq) = self.dispatch.pop_front() {
            return Some(self.start(rq));
        }
        let aging = self.behaviour.prio == PrioMode::InFlightAging;
        // dd_dispatch_prio_aged_requests()
        let busy = DdPrio::ALL.iter().filter(|&&p| self.queued(p) > 0).count();
        if aging && busy >= 2 {
            let latest = now.wrapping_sub(u64::from(self.tun.prio_aging_expire));
            for prio in [DdPrio::Be, DdPrio::Idle] {
                if let Some(rq) = self.dispatch_from(prio as usize, now, Some(latest)) {
                    return Some(rq);
                }
            }
        }
        // strict priority order; 5.16+ also stops at a level with requests in flight
        for prio in DdPrio::ALL {
            let rq = self.dispatch_from(prio as usize, now, aging.then_some(now));
            if rq.is_some() || (aging && self.queued(prio) > 0) {
                return rq;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
