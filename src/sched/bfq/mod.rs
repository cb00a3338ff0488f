//! BFQ, the Budget Fair Queueing I/O scheduler, with its cgroup side
//! (`block/bfq-iosched.c`, `bfq-wf2q.c`, `bfq-cgroup.c`; 6.12 as the base, 6.1's
//! differences as switches).
//!
//! The idea
//! --------
//! BFQ gives the device to one queue at a time, for a *budget* of sectors: a queue
//! per process for its synchronous I/O (reads, O_DIRECT and fsync writes), one per
//! (group, class, level) for asynchronous writeback. Queues and the groups of the
//! cgroup tree are entities of a hierarchy scheduled by B-WF2Q+ (`wf2q`): each
//! scheduler serves, among its eligible children, the one with the smallest virtual
//! finish time, and a child's virtual time advances by the service it got over its
//! weight, so over time each gets a share of the sectors proportional to its weight —
//! a queue's from its task's I/O priority (`(8 - level) · 10`), a group's from its
//! cgroup's `io.bfq.weight` (`weight`). Classes are strict: RT before BE before IDLE,
//! but a group is always BE in its parent.
//!
//! The moving parts
//! ----------------
//! - [`Bfq::insert`] (`bfq_insert_request()`): the request's queue, created on first
//!   use (`bfq_init_bfqq()`), samples its think time, seekiness and I/O-boundness;
//!   a queue that was idle becomes busy (`bfq_bfqq_handle_idle_busy_switch()`): its
//!   budget, weight raising, its activation in the hierarchy, and perhaps the
//!   preemption of the queue in service.
//! - [`Bfq::dispatch`] (`__bfq_dispatch_request()` → `bfq_select_queue()`): the queue
//!   in service keeps the device while it has requests that fit its budget; it is
//!   *expired* on budget exhaustion, budget timeout (`timeout_sync`), or when empty —
//!   unless BFQ *idles* for it: the device is left without work for up to
//!   `slice_idle`, waiting for the queue's next request, when idling boosts
//!   throughput (a sequential sync queue on a rotational disk) or is needed for its
//!   service guarantees (different weights or classes busy, several groups with
//!   pending requests: `bfq_better_to_idle()`). Each dispatch charges its sectors
//!   (async ones three times, when nothing is asymmetric) up the hierarchy.
//! - [`Bfq::completed`] (`bfq_completed_request()`): hardware-queueing detection, the
//!   peak rate that sizes the budgets (`bfq_update_peak_rate()`,
//!   `bfq_calc_max_budget()`), and the in-service queue's idling or expiration.
//! - Expiration (`bfq_bfqq_expire()`): budget feedback (`__bfq_bfqq_recalc_budget()`),
//!   time charged instead of sectors to a slow queue (`bfq_bfqq_charge_time()`), the
//!   queue requeued or deactivated.
//! - Injection (`bfq_choose_bfqq_for_injection()`): while the in-service queue is
//!   idled for, another queue's request may fill the device up to an inject limit
//!   that adapts to the in-service queue's measured service times
//!   (`bfq_update_inject_limit()`, sampled from `bfq_add_request()`).
//! - Wakers (`bfq_check_waker()`): a queue whose task, with nothing else allocated,
//!   reads within 4 ms of another queue's completion three times in a row is *woken*
//!   by it (the other held what it waited for: a tag, a sync); while it is idled for,
//!   its waker's requests go to the device at once, and so do those of the newest
//!   queue it wakes (`bfq_select_queue()`), before any injection.
//! - Tag depth (`bfq_limit_depth()`, [`Bfq::limit_depth`]): each queue and group may
//!   hold its weight's share of the scheduler tags; past it a submitter gets one only
//!   from a sliver of the map, so a heavy group cannot take every tag while a lighter
//!   one is in service and idled for.
//! - Weight raising (`low_latency`, on by default): a sync queue that starts after a
//!   long idle gets its weight ×30 for a time set by the peak rate, soft real-time
//!   queues ×3000 for 300 ms.
//!
//! Where each lives: the hierarchy in `wf2q`, the tunables in `tunables`, the cgroup
//! file in `weight`, the version switches in `behaviour`, the stack's side in
//! `elevator`, the timelines in `timeline`; the scheduler itself here.
//!
//! Left out, and why
//! -----------------
//! - *Queue merging* (stable and close cooperators): processes doing interleaved
//!   I/O share one queue; fio's jobs each have their own.
//! - *Burst detection* (`bfq_handle_burst()`): eight queues created within 180 ms are
//!   not weight-raised; every job here starts as its own process, so a run with more
//!   than eight jobs in a cgroup starting at once raises them all (the kernel would
//!   not).
//! - In `bfq_select_queue()`'s first choice while idling, the in-service process's own
//!   async requests: buffered writes reach BFQ from the flusher here, never from the
//!   reader's process. Several actuators.
//! - *Where BFQ's CPU goes*: its own work per request (`[host] bfq_ns`, on top of the
//!   `elevator_ns` every elevator costs) is one figure paid by the fio job in its
//!   submitting call, before the request reaches BFQ; the kernel spends it in the
//!   insert, the dispatch and the completion's `bfq_finish_requeue_request()`, and
//!   0.9 µs less where a queue stays busy. The figure is the guests' at depth 1,
//!   where it decides the capped disk's split (docs/validation.md §44, session 41); a
//!   flusher's or a readahead's requests are not charged it.

pub mod behaviour;
pub mod elevator;
pub mod timeline;
pub mod tunables;
pub mod weight;
mod wf2q;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::blkcg::ioprio::{Ioprio, IoprioClass};
use crate::sched::mq_deadline::tunables::{jiffies_to_msecs, msecs_to_jiffies};
use crate::sim::Ns;
use crate::sim::jiffies::{time_after, time_after_eq};
use crate::sim::sbitmap::{Shallow, calculate_shift};
use behaviour::{BfqBehaviour, Inject, PendingGroups, ShallowDepth};
use tunables::Tunables;
use wf2q::{CLASS_BE, CLASS_IDLE, CLASSES, Eid, Entity, Wf2q};

/// `NSEC_PER_MSEC`.
const MS: Ns = 1_000_000;
/// `bfq_default_max_budget`, sectors.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// `bfq_stats_min_budgets`.
const STATS_MIN_BUDGETS: u32 = 194;
/// `bfq_async_charge_factor`.
const ASYNC_CHARGE_FACTOR: u64 = 3;
/// `BFQ_MIN_TT`.
const MIN_TT: Ns = 2 * MS;
/// `BFQQ_SEEK_THR`, `BFQQ_SECT_THR_NONROT` (sectors).
const SEEK_THR: u64 = 8 * 100;
const SECT_THR_NONROT: u64 = 2 * 32;
/// `BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`.
const HW_QUEUE_THRESHOLD: u32 = 3;
const HW_QUEUE_SAMPLES: u32 = 32;
/// Peak-rate estimation (`BFQ_RATE_*`): rates are sectors/µs << 16.
const RATE_MIN_SAMPLES: u32 = 32;
const RATE_MIN_INTERVAL: Ns = 300 * MS;
const RATE_REF_INTERVAL: Ns = 1_000 * MS;
const RATE_SHIFT: u32 = 16;
/// `ref_rate[]` (rotational, non-rotational).
const REF_RATE: [u64; 2] = [14_000, 33_000];
/// `ref_wr_duration[]` in ms.
const REF_WR_DURATION_MS: [u32; 2] = [7_000, 2_500];
/// `bfq_wr_coeff`, `BFQ_SOFTRT_WEIGHT_FACTOR`, `max_service_from_wr` (sectors),
/// `bfq_wr_max_softrt_rate` (sectors/s).
const WR_COEFF: u64 = 30;
const SOFTRT_WEIGHT_FACTOR: u64 = 100;
const MAX_SERVICE_FROM_WR: u64 = 120_000;
const WR_MAX_SOFTRT_RATE: u64 = 7_000;
/// `IOPRIO_NR_LEVELS`, `IOPRIO_BE_NORM`, `BFQ_WEIGHT_CONVERSION_COEFF`.
const IOPRIO_NR_LEVELS: u64 = 8;
const IOPRIO_BE_NORM: u16 = 4;
const WEIGHT_CONVERSION_COEFF: u64 = 10;

/// `bfq_update_depths()`: of `depth` tags (a word's bits, or `nr_requests`), those
/// async I/O (`sync` 0) or sync writes (1) may hold, while a queue is weight-raised
/// (`raised` 1) or not: ½ and ¾, or about 18% and 37%.
fn async_depth(depth: u32, raised: usize, sync: usize) -> u32 {
    let share = [[(1, 1), (3, 2)], [(3, 4), (6, 4)]][raised][sync];
    ((depth * share.0) >> share.1).max(1)
}

/// `bfq_ioprio_to_weight()`.
pub fn ioprio_to_weight(level: u16) -> u64 {
    (IOPRIO_NR_LEVELS - u64::from(level.min(7))) * WEIGHT_CONVERSION_COEFF
}

/// The class index and level `bfq_set_next_ioprio_data()` takes from an io context's
/// priority: CLASS_NONE is the task's nice (0 here: level 4, BE); IDLE is level 7.
fn class_level(p: Ioprio) -> (usize, u16) {
    match p.class() {
        IoprioClass::Rt => (0, p.level().min(7)),
        IoprioClass::Be => (CLASS_BE, p.level().min(7)),
        IoprioClass::Idle => (CLASS_IDLE, 7),
        IoprioClass::None => (CLASS_BE, IOPRIO_BE_NORM),
    }
}

/// A group's state as its timeline row shows it ([`Bfq::group_state`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupState {
    pub budget: u64,
    pub lead: i64,
    pub tags: u32,
    pub raised: u32,
}

/// A request as BFQ is given it.
#[derive(Debug, Clone, Copy)]
pub struct BfqRequest {
    /// What the caller knows it by (the tag).
    pub token: u32,
    /// The submitting task (its io context): a sync request's queue is its own.
    pub task: u32,
    /// The task's I/O priority (`ioc->ioprio`, set by `ioprio_set()`); never the
    /// bio's: BFQ does not read `io.prio.class`.
    pub task_ioprio: Ioprio,
    /// `op_is_sync()`: a read, or a write with `REQ_SYNC`.
    pub sync: bool,
    pub cgroup: u32,
    pub sector: u64,
    pub sectors: u64,
}

/// Why a queue's turn ended (`enum bfqq_expiration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiration {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

/// `struct bfq_ttime`.
#[derive(Debug, Clone, Copy, Default)]
struct TTime {
    last_end_request: Ns,
    samples: u64,
    total: u64,
    mean: u64,
}

/// `struct bfq_queue`.
#[derive(Debug, Clone)]
struct Queue {
    entity: Eid,
    group: u32,
    sync: bool,
    /// Its requests by sector (then arrival), and in arrival order with their FIFO
    /// deadlines; a dispatched one leaves the FIFO lazily.
    sort: BTreeMap<(u64, u64), u32>,
    fifo: VecDeque<(Ns, u32)>,
    queued: [u32; 2],
    next_rq: Option<u32>,
    dispatched: u32,
    max_budget: u64,
    /// jiffies; also when it went idle with nothing in flight.
    budget_timeout: u64,
    busy: bool,
    wait_request: bool,
    non_blocking_wait_rq: bool,
    fifo_expire: bool,
    has_short_ttime: bool,
    io_bound: bool,
    just_created: bool,
    softrt_update: bool,
    ttime: TTime,
    seek_history: u32,
    last_request_pos: u64,
    io_start_time: Ns,
    tot_idle_time: Ns,
    wr_cur_max_time: u64,
    last_wr_start_finish: u64,
    soft_rt_next_start: u64,
    last_idle_bklogged: u64,
    service_from_backlogged: u64,
    service_from_wr: u64,
    wr_start_at_switch_to_srt: u64,
    /// Injection while it is served and idled for: its limit of requests in the
    /// driver, the service time of a request of its alone (its baseline), when the
    /// limit last went down (jiffies).
    inject_limit: u32,
    last_serv_time_ns: Ns,
    decrease_time_jif: u64,
    /// Its requests queued or in flight (`bic->requests`).
    requests: u32,
    /// Waker detection (`bfq_check_waker()`): the queue whose completion came just
    /// before this one's task, with nothing else allocated, went on — how many times
    /// in a row, since when; seen three times, that queue is its `waker`, and this
    /// one is in the waker's `woken` (`woken_list`, the newest last here, first there).
    tentative_waker: Option<u32>,
    num_waker_detections: u32,
    waker_detection_started: Ns,
    waker: Option<u32>,
    woken: Vec<u32>,
    /// Counted in the weights tree (`weight_counter`): its weight then.
    weight_counter: Option<u64>,
    /// Counted among its group's queues with pending requests (6.12).
    in_pending: bool,
}

impl Queue {
    /// `BFQQ_SEEKY()`.
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }

    fn empty(&self) -> bool {
        self.sort.is_empty()
    }
}

/// A request waiting in BFQ.
#[derive(Debug, Clone, Copy)]
struct Rq {
    queue: u32,
    sync: bool,
    sector: u64,
    sectors: u64,
    seq: u64,
}

/// `struct bfq_group`: a cgroup's scheduler on this device.
#[derive(Debug, Clone)]
pub struct Group {
    pub cgroup: u32,
    /// `async_bfqq[RT, BE][level]`, `async_idle_bfqq`.
    async_q: [[Option<u32>; 8]; 2],
    async_idle: Option<u32>,
    /// Its queues that are busy or have requests in flight (6.12).
    num_queues_with_pending_reqs: u32,
    /// 6.1: its entity counted in `num_groups_with_pending_reqs`.
    in_pending: bool,
    /// Sectors dispatched from its queues (their charge aside), for the timelines.
    pub served: u64,
    pub dispatched: u64,
}

/// The peak-rate estimator's state (`struct bfq_data`'s).
#[derive(Debug, Clone, Copy, Default)]
struct PeakRate {
    peak_rate: u64,
    samples: u32,
    sequential_samples: u32,
    tot_sectors_dispatched: u64,
    last_rq_max_size: u64,
    first_dispatch: Ns,
    last_dispatch: Ns,
    delta_from_first: Ns,
}

/// BFQ on one device (`struct bfq_data`).
#[derive(Debug, Clone)]
pub struct Bfq {
    pub t: Tunables,
    pub b: BfqBehaviour,
    hz: u64,
    start_jiffies: u64,
    nonrot: bool,
    w: Wf2q,
    queues: Vec<Queue>,
    pub groups: Vec<Group>,
    /// cgroup → its group; a task's sync queue.
    group_of: HashMap<u32, u32>,
    sync_q: HashMap<u32, u32>,
    /// The cgroup tree's parents (index: cgroup), the cgroups' weights on this device.
    parents: Vec<Option<u32>>,
    cgroup_weight: Vec<u64>,
    rqs: Vec<Option<Rq>>,
    rq_seq: u64,
    in_service: Option<u32>,
    busy_queues: [u32; CLASSES],
    wr_busy_queues: u32,
    queued: u32,
    tot_rq_in_driver: u32,
    max_rq_in_driver: u32,
    /// `hw_tag`: -1 unknown, 0 no, 1 yes.
    hw_tag: i8,
    hw_tag_samples: u32,
    budgets_assigned: u32,
    bfq_max_budget: u64,
    rate_dur_prod: u64,
    pr: PeakRate,
    last_completion: Ns,
    /// The queue of the last completed request (`last_completed_rq_bfqq`).
    last_completed_rq_bfqq: Option<u32>,
    last_position: u64,
    last_budget_start: Ns,
    last_idling_start: Ns,
    /// The weights of the busy (or in-flight), non-raised queues: weight → how many.
    weights: BTreeMap<u64, u32>,
    num_groups_with_pending_reqs: u32,
    /// Injection's sampling (`rqs_injected`, `wait_dispatch`, `waited_rq` by its tag,
    /// `last_empty_occupied_ns`) and when idling last began.
    rqs_injected: bool,
    wait_dispatch: bool,
    waited_rq: Option<u32>,
    last_empty_occupied_ns: Ns,
    last_idling_start_jiffies: u64,
    /// The idle slice timer: when it fires and its generation (a cancel bumps it).
    pub idle_timer: Option<Ns>,
    pub timer_gen: u64,
    /// Time spent idling, for the timelines.
    pub idle_ns: Ns,
}

impl Bfq {
    /// `bfq_init_queue()` for a device (`nonrot`: `queue/rotational` 0), with the
    /// cgroup tree's parents.
    pub fn new(t: Tunables, b: BfqBehaviour, nonrot: bool) -> Self {
        let hz = u64::from(t.hz);
        let ref_dur = u64::from(msecs_to_jiffies(
            REF_WR_DURATION_MS[usize::from(nonrot)],
            t.hz,
        ));
        let start_jiffies = crate::sim::jiffies::initial_jiffies(t.hz);
        let mut w = Wf2q::new(hz / 5);
        // the root group: no entity of its own; its idle-class clock starts now
        w.sd.push(wf2q::SchedData {
            class_idle_last_service: start_jiffies,
            ..Default::default()
        });
        Bfq {
            t,
            b,
            hz,
            start_jiffies,
            nonrot,
            w,
            queues: Vec::new(),
            groups: vec![Group::new(0)],
            group_of: HashMap::from([(0, 0)]),
            sync_q: HashMap::new(),
            parents: Vec::new(),
            cgroup_weight: Vec::new(),
            rqs: Vec::new(),
            rq_seq: 0,
            in_service: None,
            busy_queues: [0; CLASSES],
            wr_busy_queues: 0,
            queued: 0,
            tot_rq_in_driver: 0,
            max_rq_in_driver: 0,
            hw_tag: -1,
            hw_tag_samples: 0,
            budgets_assigned: 0,
            bfq_max_budget: DEFAULT_MAX_BUDGET,
            rate_dur_prod: REF_RATE[usize::from(nonrot)] * ref_dur,
            pr: PeakRate {
                peak_rate: REF_RATE[usize::from(nonrot)] * 2 / 3,
                ..PeakRate::default()
            },
            last_completion: 0,
            last_completed_rq_bfqq: None,
            last_position: 0,
            last_budget_start: 0,
            last_idling_start: 0,
            weights: BTreeMap::new(),
            num_groups_with_pending_reqs: 0,
            rqs_injected: false,
            wait_dispatch: false,
            waited_rq: None,
            last_empty_occupied_ns: 0,
            last_idling_start_jiffies: 0,
            idle_timer: None,
            timer_gen: 0,
            idle_ns: 0,
        }
    }

    fn jiffies(&self, now: Ns) -> u64 {
        crate::sim::jiffies::at(now, self.start_jiffies, self.hz)
    }

    fn msecs_to_jiffies(&self, ms: u32) -> u64 {
        u64::from(msecs_to_jiffies(ms, self.t.hz))
    }

    pub fn has_work(&self) -> bool {
        self.queued > 0
    }

    fn tot_busy(&self) -> u32 {
        self.busy_queues.iter().sum()
    }

    /// The run's cgroup tree, by each cgroup's parent; every cgroup at the default
    /// weight until a write.
    pub fn set_parents(&mut self, parents: Vec<Option<u32>>) {
        self.cgroup_weight = vec![u64::from(weight::BFQ_WEIGHT_DFL); parents.len()];
        self.parents = parents;
    }

    /// Cgroup `cgroup`'s weight in force on this device (its `io.bfq.weight`).
    pub fn set_cgroup_weight(&mut self, cgroup: u32, weight: u64) {
        if let Some(w) = self.cgroup_weight.get_mut(cgroup as usize) {
            *w = weight;
        }
        // bfq_group_set_weight(): new_weight and prio_changed, applied at the group
        // entity's next (re)queueing
        if let Some(&g) = self.group_of.get(&cgroup)
            && let Some(e) = self.w.sd[g as usize].my_entity
        {
            let en = &mut self.w.e[e as usize];
            if en.new_weight != weight {
                en.new_weight = weight;
                en.prio_changed = true;
            }
        }
    }

    /// `bfq_find_set_group()`: the group of `cgroup`, created with its ancestors
    /// (`bfq_pd_init()`: the cgroup's weight).
    fn group(&mut self, cgroup: u32) -> u32 {
        if let Some(&g) = self.group_of.get(&cgroup) {
            return g;
        }
        let parent = self
            .parents
            .get(cgroup as usize)
            .copied()
            .flatten()
            .unwrap_or(0);
        let pg = self.group(parent);
        let g = self.groups.len() as u32;
        let weight = self
            .cgroup_weight
            .get(cgroup as usize)
            .copied()
            .unwrap_or(u64::from(weight::BFQ_WEIGHT_DFL));
        let e = self.w.e.len() as Eid;
        self.w.e.push(Entity::new(pg, Some(g), weight, CLASS_BE));
        self.w.sd.push(wf2q::SchedData {
            my_entity: Some(e),
            ..Default::default()
        });
        self.groups.push(Group::new(cgroup));
        self.group_of.insert(cgroup, g);
        g
    }

    /// The queue of request `rq` (`bfq_get_bfqq_handle_split()` → `bfq_get_queue()`),
    /// created at its first request (`bfq_init_bfqq()`).
    fn queue_of(&mut self, rq: &BfqRequest, now: Ns) -> u32 {
        let g = self.group(rq.cgroup);
        if let Some(q) = self.existing_queue(g, rq) {
            return q;
        }
        let (class, level) = class_level(rq.task_ioprio);
        let q = self.queues.len() as u32;
        let e = self.w.e.len() as Eid;
        let mut en = Entity::new(g, None, ioprio_to_weight(level), class);
        en.queue = Some(q);
        self.w.e.push(en);
        let j = self.jiffies(now);
        let max_budget = 2 * self.max_budget() / 3;
        self.queues.push(Queue {
            entity: e,
            group: g,
            sync: rq.sync,
            sort: BTreeMap::new(),
            fifo: VecDeque::new(),
            queued: [0; 2],
            next_rq: None,
            dispatched: 0,
            max_budget,
            // bfq_smallest_from_now(): infinitely old
            budget_timeout: j.wrapping_sub(u64::MAX / 2),
            busy: false,
            wait_request: false,
            non_blocking_wait_rq: false,
            fifo_expire: false,
            // bfq_init_bfqq() skips the idle class by bfq_class_idle(), which reads
            // the class in force — none yet on a zeroed queue (its new class applies
            // at its first activation): an idle-class queue starts short too, and
            // keeps it (bfq_update_has_short_ttime() skips the idle class)
            has_short_ttime: rq.sync,
            io_bound: true,
            just_created: true,
            softrt_update: false,
            ttime: TTime {
                last_end_request: now + 1,
                ..TTime::default()
            },
            seek_history: 1,
            last_request_pos: 0,
            io_start_time: now,
            tot_idle_time: 0,
            wr_cur_max_time: 0,
            last_wr_start_finish: j.wrapping_sub(u64::MAX / 2),
            soft_rt_next_start: j,
            last_idle_bklogged: 0,
            service_from_backlogged: 0,
            service_from_wr: 0,
            wr_start_at_switch_to_srt: j.wrapping_sub(u64::MAX / 2),
            inject_limit: 0,
            last_serv_time_ns: 0,
            decrease_time_jif: match self.b.inject {
                Inject::Total => j,
                // 6.1's bfq_init_bfqq() leaves it 0
                Inject::PerCandidate => 0,
            },
            requests: 0,
            tentative_waker: None,
            num_waker_detections: 0,
            waker_detection_started: 0,
            waker: None,
            woken: Vec::new(),
            weight_counter: None,
            in_pending: false,
        });
        if rq.sync {
            self.sync_q.insert(rq.task, q);
        } else if class == CLASS_IDLE {
            self.groups[g as usize].async_idle = Some(q);
        } else {
            self.groups[g as usize].async_q[class][usize::from(level)] = Some(q);
        }
        q
    }

    /// `bfq_max_budget()`.
    fn max_budget(&self) -> u64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS {
            DEFAULT_MAX_BUDGET
        } else {
            self.bfq_max_budget
        }
    }

    /// `bfq_min_budget()`.
    fn min_budget(&self) -> u64 {
        self.max_budget() / 32
    }

    fn budget_left(&self, q: u32) -> u64 {
        let e = &self.w.e[self.queues[q as usize].entity as usize];
        e.budget.saturating_sub(e.service)
    }

    fn class_of(&self, q: u32) -> usize {
        self.w.e[self.queues[q as usize].entity as usize].class
    }

    fn wr_coeff(&self, q: u32) -> u64 {
        self.w.e[self.queues[q as usize].entity as usize].wr_coeff
    }

    /// `bfq_asymmetric_scenario()`.
    fn asymmetric(&self, q: Option<u32>) -> bool {
        let smallest_weight = q
            .and_then(|q| self.queues[q as usize].weight_counter)
            .is_some_and(|w| self.weights.keys().next() == Some(&w));
        let varied_queue_weights = !smallest_weight && self.weights.len() > 1;
        let multiple_classes_busy = self.busy_queues.iter().filter(|&&n| n > 0).count() > 1;
        let groups = match self.b.pending_groups {
            PendingGroups::AnyChild => self.num_groups_with_pending_reqs > 0,
            PendingGroups::AtLeastTwo => self.num_groups_with_pending_reqs > 1,
        };
        varied_queue_weights || multiple_classes_busy || groups
    }

    /// `bfq_serv_to_charge()`.
    fn serv_to_charge(&self, sectors: u64, q: u32) -> u64 {
        let qq = &self.queues[q as usize];
        if qq.sync || self.wr_coeff(q) > 1 || self.asymmetric(Some(q)) {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }

    fn next_rq_sectors(&self, q: u32) -> Option<u64> {
        let t = self.queues[q as usize].next_rq?;
        self.rqs[t as usize].map(|r| r.sectors)
    }

    /// The sectors of queue `q`'s next request when its charge fits what is left of
    /// its budget (`bfq_serv_to_charge(next_rq) <= bfq_bfqq_budget_left()`): what a
    /// queue other than the one in service must meet to be dispatched from.
    fn next_rq_within_budget(&self, q: u32) -> Option<u64> {
        self.next_rq_sectors(q)
            .filter(|&s| self.serv_to_charge(s, q) <= self.budget_left(q))
    }

    /// `idling_boosts_thr_without_issues()`.
    fn idling_boosts_thr_without_issues(&self, q: u32) -> bool {
        let qq = &self.queues[q as usize];
        // C's `!bfqd->hw_tag`: a known 0 only (unknown is -1)
        let rot_without_queueing = !self.nonrot && self.hw_tag == 0;
        let seq_and_io_bound = !qq.seeky() && qq.io_bound && qq.has_short_ttime;
        let boosts =
            rot_without_queueing || ((!self.nonrot || self.hw_tag == 0) && seq_and_io_bound);
        boosts && self.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees()`.
    fn idling_needed_for_service_guarantees(&self, q: u32) -> bool {
        let tot_busy = self.tot_busy();
        let qq = &self.queues[q as usize];
        (self.wr_coeff(q) > 1
            && (self.wr_busy_queues < tot_busy || self.tot_rq_in_driver >= qq.dispatched + 4))
            || self.asymmetric(Some(q))
            || tot_busy == 1
    }

    /// `bfq_better_to_idle()`.
    fn better_to_idle(&self, q: u32) -> bool {
        if self.t.strict_guarantees {
            return true;
        }
        if self.t.bfq_slice_idle == 0
            || !self.queues[q as usize].sync
            || self.class_of(q) == CLASS_IDLE
        {
            return false;
        }
        self.idling_boosts_thr_without_issues(q) || self.idling_needed_for_service_guarantees(q)
    }

    /// `bfq_bfqq_must_idle()`.
    fn must_idle(&self, q: u32) -> bool {
        self.queues[q as usize].empty() && self.better_to_idle(q)
    }

    /// `bfq_bfqq_budget_timeout()`.
    fn budget_timed_out(&self, q: u32, now: Ns) -> bool {
        time_after_eq(self.jiffies(now), self.queues[q as usize].budget_timeout)
    }

    /// `bfq_may_expire_for_budg_timeout()`.
    fn may_expire_for_budg_timeout(&self, q: u32, now: Ns) -> bool {
        let qq = &self.queues[q as usize];
        let budget = self.w.e[qq.entity as usize].budget;
        (!qq.wait_request || self.budget_left(q) >= budget / 3) && self.budget_timed_out(q, now)
    }

    // --- the weights tree and the groups with pending requests

    /// `bfq_weights_tree_add()`.
    fn weights_tree_add(&mut self, q: u32) {
        if self.queues[q as usize].weight_counter.is_some() {
            return;
        }
        let w = self.w.e[self.queues[q as usize].entity as usize].weight;
        *self.weights.entry(w).or_default() += 1;
        self.queues[q as usize].weight_counter = Some(w);
    }

    /// `bfq_weights_tree_remove()` (6.1: also the groups with pending requests).
    fn weights_tree_remove(&mut self, q: u32) {
        if self.b.pending_groups == PendingGroups::AnyChild {
            self.groups_pending_remove_61(q);
        }
        self.weights_tree_remove_counter_only(q);
    }

    /// 6.1's `bfq_weights_tree_remove()` walk: the queue's inactive ancestors leave
    /// the groups with pending requests.
    fn groups_pending_remove_61(&mut self, q: u32) {
        let mut g = self.queues[q as usize].group;
        while g != 0 {
            let sd = &self.w.sd[g as usize];
            if sd.next_in_service.is_some() || sd.in_service.is_some() {
                break;
            }
            if std::mem::take(&mut self.groups[g as usize].in_pending) {
                self.num_groups_with_pending_reqs -= 1;
            }
            let e = self.w.sd[g as usize]
                .my_entity
                .expect("a child group has an entity");
            g = self.w.e[e as usize].sd;
        }
    }

    /// 6.1's `__bfq_activate_entity()` count: each group entity on the path that was
    /// not yet counted.
    fn groups_pending_add_61(&mut self, q: u32) {
        let mut g = self.queues[q as usize].group;
        while g != 0 {
            if !std::mem::replace(&mut self.groups[g as usize].in_pending, true) {
                self.num_groups_with_pending_reqs += 1;
            }
            let e = self.w.sd[g as usize]
                .my_entity
                .expect("a child group has an entity");
            g = self.w.e[e as usize].sd;
        }
    }

    /// `bfq_add_bfqq_in_groups_with_pending_reqs()` (6.12).
    fn groups_pending_add(&mut self, q: u32) {
        if self.b.pending_groups != PendingGroups::AtLeastTwo
            || std::mem::replace(&mut self.queues[q as usize].in_pending, true)
        {
            return;
        }
        let g = self.queues[q as usize].group as usize;
        self.groups[g].num_queues_with_pending_reqs += 1;
        if self.groups[g].num_queues_with_pending_reqs == 1 {
            self.num_groups_with_pending_reqs += 1;
        }
    }

    /// `bfq_del_bfqq_in_groups_with_pending_reqs()` (6.12).
    fn groups_pending_del(&mut self, q: u32) {
        if !std::mem::take(&mut self.queues[q as usize].in_pending) {
            return;
        }
        let g = self.queues[q as usize].group as usize;
        self.groups[g].num_queues_with_pending_reqs -= 1;
        if self.groups[g].num_queues_with_pending_reqs == 0 {
            self.num_groups_with_pending_reqs -= 1;
        }
    }

    /// Apply the weight changes the hierarchy made: a queue whose weight changed
    /// leaves the weights tree, and comes back if it is not raised.
    fn sync_weight_changes(&mut self) {
        for (e, _prev) in std::mem::take(&mut self.w.weight_changes) {
            let Some(q) = self.w.e[e as usize].queue else {
                continue;
            };
            self.weights_tree_remove_counter_only(q);
            if self.wr_coeff(q) == 1 {
                self.weights_tree_add(q);
            }
        }
    }

    fn weights_tree_remove_counter_only(&mut self, q: u32) {
        if let Some(w) = self.queues[q as usize].weight_counter.take()
            && let Some(n) = self.weights.get_mut(&w)
        {
            *n -= 1;
            if *n == 0 {
                self.weights.remove(&w);
            }
        }
    }

    // --- activation

    /// `bfq_activate_bfqq()`.
    fn activate_bfqq(&mut self, q: u32, now: Ns) {
        let e = self.queues[q as usize].entity;
        let nbwr = self.queues[q as usize].non_blocking_wait_rq;
        let j = self.jiffies(now);
        self.w.activate_requeue(e, nbwr, false, false, j);
        self.queues[q as usize].non_blocking_wait_rq = false;
        if self.b.pending_groups == PendingGroups::AnyChild {
            self.groups_pending_add_61(q);
        }
        self.sync_weight_changes();
    }

    /// `bfq_requeue_bfqq()`.
    fn requeue_bfqq(&mut self, q: u32, expiration: bool, now: Ns) {
        let e = self.queues[q as usize].entity;
        let j = self.jiffies(now);
        let requeue = self.in_service == Some(q);
        self.w.activate_requeue(e, false, requeue, expiration, j);
        self.sync_weight_changes();
    }

    /// `bfq_add_bfqq_busy()`.
    fn add_bfqq_busy(&mut self, q: u32, now: Ns) {
        self.activate_bfqq(q, now);
        let class = self.class_of(q);
        let qq = &mut self.queues[q as usize];
        qq.busy = true;
        self.busy_queues[class] += 1;
        if qq.dispatched == 0 {
            self.groups_pending_add(q);
            if self.wr_coeff(q) == 1 {
                self.weights_tree_add(q);
            }
        }
        if self.wr_coeff(q) > 1 {
            self.wr_busy_queues += 1;
        }
    }

    /// `bfq_del_bfqq_busy()`.
    fn del_bfqq_busy(&mut self, q: u32, expiration: bool, now: Ns) {
        let class = self.class_of(q);
        self.queues[q as usize].busy = false;
        self.busy_queues[class] -= 1;
        if self.wr_coeff(q) > 1 {
            self.wr_busy_queues -= 1;
        }
        let e = self.queues[q as usize].entity;
        let j = self.jiffies(now);
        self.w.deactivate(e, true, expiration, j);
        if self.queues[q as usize].dispatched == 0 {
            self.groups_pending_del(q);
            self.weights_tree_remove(q);
        }
    }

    // --- insertion

    /// `bfq_insert_request()`.
    pub fn insert(&mut self, rq: BfqRequest, now: Ns) {
        let q = self.queue_of(&rq, now);
        self.request_allocated(q, true);
        self.update_io_thinktime(q, now);
        self.update_has_short_ttime(q, now);
        self.update_io_seektime(q, &rq);
        let tag = rq.token as usize;
        if self.rqs.len() <= tag {
            self.rqs.resize(tag + 1, None);
        }
        self.rq_seq += 1;
        self.rqs[tag] = Some(Rq {
            queue: q,
            sync: rq.sync,
            sector: rq.sector,
            sectors: rq.sectors,
            seq: self.rq_seq,
        });
        self.queues[q as usize].requests += 1;
        self.add_request(q, rq.token, now);
        let expire = self.t.bfq_fifo_expire[usize::from(rq.sync)];
        self.queues[q as usize]
            .fifo
            .push_back((now + expire, rq.token));
        self.rq_enqueued(q, &rq, now);
    }

    /// `bfq_check_waker()`: sync queue `q` got a request with nothing else of its
    /// task's allocated, within 4 ms of another queue's completion — that queue may be
    /// what its task waited for (a tag it held, a sync it needed). Three times in a
    /// row within 128 idle slices, it becomes `q`'s waker: while `q` is idled for, the
    /// waker's requests are dispatched at once (`bfq_select_queue()`).
    fn check_waker(&mut self, q: u32, now: Ns) {
        let Some(last) = self.last_completed_rq_bfqq else {
            return;
        };
        let slice_idle = u64::from(self.t.bfq_slice_idle);
        let qq = &mut self.queues[q as usize];
        if last == q || qq.has_short_ttime || now.saturating_sub(self.last_completion) >= 4 * MS {
            return;
        }
        if qq.tentative_waker != Some(last) || now > qq.waker_detection_started + 128 * slice_idle {
            qq.tentative_waker = Some(last);
            qq.num_waker_detections = 1;
            qq.waker_detection_started = now;
        } else {
            qq.num_waker_detections += 1;
        }
        if qq.num_waker_detections == 3 {
            qq.tentative_waker = None;
            if let Some(old) = qq.waker.replace(last) {
                self.queues[old as usize].woken.retain(|&x| x != q);
            }
            self.queues[last as usize].woken.push(q);
        }
    }

    /// `bfq_update_io_thinktime()`.
    fn update_io_thinktime(&mut self, q: u32, now: Ns) {
        let slice_idle = u64::from(self.t.bfq_slice_idle);
        let qq = &mut self.queues[q as usize];
        if qq.dispatched > 0 || qq.busy {
            return;
        }
        let elapsed = now
            .saturating_sub(qq.ttime.last_end_request)
            .min(2 * slice_idle);
        let t = &mut qq.ttime;
        t.samples = (7 * t.samples + 256) / 8;
        t.total = (7 * t.total + 256 * elapsed) / 8;
        t.mean = (t.total + 128) / t.samples;
    }

    /// `bfq_update_has_short_ttime()` (the inject limit aside).
    fn update_has_short_ttime(&mut self, q: u32, now: Ns) {
        let slice_idle = u64::from(self.t.bfq_slice_idle);
        if !self.queues[q as usize].sync || self.class_of(q) == CLASS_IDLE || slice_idle == 0 {
            return;
        }
        let j = self.jiffies(now);
        let hundred_ms = self.msecs_to_jiffies(100);
        let qq = &mut self.queues[q as usize];
        // bfq_sample_valid(): more than 80 (three samples)
        let long = qq.ttime.samples > 80 && qq.ttime.mean > slice_idle >> 1;
        let changed = qq.has_short_ttime == long;
        qq.has_short_ttime = !long;
        if changed
            && qq.last_serv_time_ns == 0
            && (time_after_eq(j, qq.decrease_time_jif.wrapping_add(hundred_ms)) || long)
        {
            self.reset_inject_limit(q, now);
        }
    }

    /// `bfq_update_io_seektime()`.
    fn update_io_seektime(&mut self, q: u32, rq: &BfqRequest) {
        let last = self.queues[q as usize].last_request_pos;
        let seeky = self.rq_seeky(last, rq.sector, rq.sectors);
        let qq = &mut self.queues[q as usize];
        qq.seek_history = (qq.seek_history << 1) | u32::from(seeky);
    }

    /// `BFQ_RQ_SEEKY()`.
    fn rq_seeky(&self, last: u64, sector: u64, sectors: u64) -> bool {
        let sdist = if last > 0 { sector.abs_diff(last) } else { 0 };
        sdist > SEEK_THR && (!self.nonrot || sectors < SECT_THR_NONROT)
    }

    /// `bfq_update_io_intensity()`.
    fn update_io_intensity(&mut self, q: u32, now: Ns) {
        let qq = &mut self.queues[q as usize];
        let tot_io_time = now.saturating_sub(qq.io_start_time);
        if qq.empty() && qq.dispatched == 0 {
            qq.tot_idle_time += now.saturating_sub(qq.ttime.last_end_request);
        }
        if qq.just_created {
            return;
        }
        qq.io_bound = qq.tot_idle_time * 5 <= tot_io_time;
        if tot_io_time > 200 * MS {
            qq.io_start_time = now - tot_io_time / 2;
            qq.tot_idle_time >>= 1;
        }
    }

    /// `bfq_add_request()`.
    fn add_request(&mut self, q: u32, tag: u32, now: Ns) {
        let old_wr_coeff = self.wr_coeff(q);
        let r = self.rqs[tag as usize].expect("inserted above");
        let qq = &mut self.queues[q as usize];
        qq.queued[usize::from(r.sync)] += 1;
        let (sync, requests) = (qq.sync, qq.requests);
        self.queued += 1;
        if sync && requests <= 1 {
            self.check_waker(q, now);
            let j = self.jiffies(now);
            let qq = &self.queues[q as usize];
            // the inject limit is reset now and then, and a request of the queue in
            // service that finds the driver empty (or only injected requests in it)
            // is sampled for its service time
            let second = self.msecs_to_jiffies(1_000);
            if time_after_eq(j, qq.decrease_time_jif.wrapping_add(second)) {
                self.reset_inject_limit(q, now);
            }
            let ten_ms = self.msecs_to_jiffies(10);
            let qq = &self.queues[q as usize];
            if self.in_service == Some(q)
                && (self.tot_rq_in_driver == 0
                    || (qq.last_serv_time_ns > 0 && self.rqs_injected && self.tot_rq_in_driver > 0))
                && time_after_eq(j, qq.decrease_time_jif.wrapping_add(ten_ms))
            {
                self.last_empty_occupied_ns = now;
                self.wait_dispatch = true;
                if self.tot_rq_in_driver == 0 {
                    self.rqs_injected = false;
                }
            }
        }
        if sync {
            self.update_io_intensity(q, now);
        }
        let qq = &mut self.queues[q as usize];
        qq.sort.insert((r.sector, r.seq), tag);
        let prev = qq.next_rq;
        let next = self.choose_req(prev, Some(tag), self.last_position);
        self.queues[q as usize].next_rq = next;
        let mut interactive = false;
        if !self.queues[q as usize].busy {
            interactive = self.handle_idle_busy_switch(q, old_wr_coeff, now);
        } else {
            let j = self.jiffies(now);
            let qq = &self.queues[q as usize];
            if self.t.low_latency
                && old_wr_coeff == 1
                && !r.sync
                && time_after(
                    j,
                    qq.last_wr_start_finish
                        .wrapping_add(self.msecs_to_jiffies(500)),
                )
            {
                // an async queue receiving after 500 ms without arrivals is raised
                let dur = self.wr_duration();
                let e = qq.entity as usize;
                self.w.e[e].wr_coeff = WR_COEFF;
                self.w.e[e].prio_changed = true;
                self.queues[q as usize].wr_cur_max_time = dur;
                self.wr_busy_queues += 1;
            }
            if prev != self.queues[q as usize].next_rq {
                self.updated_next_req(q, now);
            }
        }
        let wr = self.wr_coeff(q);
        if self.t.low_latency && (old_wr_coeff == 1 || wr == 1 || interactive) {
            self.queues[q as usize].last_wr_start_finish = self.jiffies(now);
        }
    }

    /// `bfq_updated_next_req()`.
    fn updated_next_req(&mut self, q: u32, now: Ns) {
        if self.in_service == Some(q) {
            return;
        }
        let Some(sectors) = self.next_rq_sectors(q) else {
            return;
        };
        let e = self.queues[q as usize].entity as usize;
        let new = self.queues[q as usize]
            .max_budget
            .max(self.serv_to_charge(sectors, q))
            .max(self.w.e[e].service);
        if self.w.e[e].budget != new {
            self.w.e[e].budget = new;
            self.requeue_bfqq(q, false, now);
        }
    }

    /// `bfq_bfqq_handle_idle_busy_switch()`: returns `interactive`.
    fn handle_idle_busy_switch(&mut self, q: u32, old_wr_coeff: u64, now: Ns) -> bool {
        let j = self.jiffies(now);
        let wr_min_idle = self.msecs_to_jiffies(2_000);
        let qq = &self.queues[q as usize];
        let e = qq.entity as usize;
        let idle_for_long_time =
            qq.dispatched == 0 && time_after(j, qq.budget_timeout.wrapping_add(wr_min_idle));
        let default_weight = self.w.e[e].new_weight == ioprio_to_weight(IOPRIO_BE_NORM);
        let soft_rt = qq.seek_history != u32::MAX
            && time_after(j, qq.soft_rt_next_start)
            && qq.dispatched == 0
            && default_weight;
        let interactive = idle_for_long_time && default_weight;
        let wr_or_deserves_wr = self.t.low_latency
            && (self.w.e[e].wr_coeff > 1 || (qq.sync && (interactive || soft_rt)));
        let arrived_in_time =
            now <= qq.ttime.last_end_request + 3 * u64::from(self.t.bfq_slice_idle);
        let wants_to_preempt = self.update_budg_for_activation(q, arrived_in_time);
        self.queues[q as usize].just_created = false;
        if self.t.low_latency {
            self.update_wr_on_rq_arrival(
                q,
                old_wr_coeff,
                wr_or_deserves_wr,
                interactive,
                soft_rt,
                now,
            );
            if old_wr_coeff != self.w.e[e].wr_coeff {
                self.w.e[e].prio_changed = true;
            }
        }
        let qq = &mut self.queues[q as usize];
        qq.last_idle_bklogged = j;
        qq.service_from_backlogged = 0;
        qq.softrt_update = false;
        self.add_bfqq_busy(q, now);
        if let Some(s) = self.in_service
            && s != q
            && ((wants_to_preempt && self.wr_coeff(q) >= self.wr_coeff(s))
                || self.higher_class_or_weight(q, s)
                || !self.better_to_idle(s))
            && self.w.next_queue_may_preempt()
        {
            self.expire(s, false, Expiration::Preempted, now);
        }
        interactive
    }

    /// `bfq_bfqq_update_budg_for_activation()`.
    fn update_budg_for_activation(&mut self, q: u32, arrived_in_time: bool) -> bool {
        let e = self.queues[q as usize].entity as usize;
        let left = self.budget_left(q);
        if self.queues[q as usize].non_blocking_wait_rq && arrived_in_time && left > 0 {
            self.w.e[e].budget = left.min(self.queues[q as usize].max_budget);
            self.w.e[e].service = 0;
            return true;
        }
        self.w.e[e].service = 0;
        let charge = self
            .next_rq_sectors(q)
            .map_or(0, |s| self.serv_to_charge(s, q));
        self.w.e[e].budget = self.queues[q as usize].max_budget.max(charge);
        self.queues[q as usize].non_blocking_wait_rq = false;
        false
    }

    /// `bfq_bfqq_higher_class_or_weight()`.
    fn higher_class_or_weight(&self, q: u32, s: u32) -> bool {
        let (cq, cs) = (self.class_of(q), self.class_of(s));
        if cq != cs {
            return cq < cs;
        }
        let weight_of = |x: u32| {
            let e = self.queues[x as usize].entity;
            match self.w.parent(e) {
                Some(p) => self.w.e[p as usize].weight,
                None => self.w.e[e as usize].weight,
            }
        };
        let (gq, gs) = (self.queues[q as usize].group, self.queues[s as usize].group);
        if gq == gs {
            let wq = self.w.e[self.queues[q as usize].entity as usize].weight;
            let ws = self.w.e[self.queues[s as usize].entity as usize].weight;
            return wq > ws;
        }
        weight_of(q) > weight_of(s)
    }

    /// `bfq_rq_enqueued()`.
    fn rq_enqueued(&mut self, q: u32, rq: &BfqRequest, now: Ns) {
        self.queues[q as usize].last_request_pos = rq.sector + rq.sectors;
        if self.in_service != Some(q) || !self.queues[q as usize].wait_request {
            return;
        }
        let small_req =
            self.queues[q as usize].queued[usize::from(rq.sync)] == 1 && rq.sectors < 32;
        let budget_timeout = self.budget_timed_out(q, now);
        if small_req && self.idling_boosts_thr_without_issues(q) && !budget_timeout {
            return;
        }
        self.stop_idling(q, now);
        if budget_timeout {
            self.expire(q, false, Expiration::BudgetTimeout, now);
        }
    }

    /// Clear `wait_request` and cancel the idle slice timer.
    fn stop_idling(&mut self, q: u32, now: Ns) {
        if std::mem::take(&mut self.queues[q as usize].wait_request) {
            self.idle_ns += now.saturating_sub(self.last_idling_start);
        }
        if self.idle_timer.take().is_some() {
            self.timer_gen += 1;
        }
    }

    /// `bfq_choose_req()`: of two requests, the one to serve next from `last`.
    fn choose_req(&self, a: Option<u32>, b: Option<u32>, last: u64) -> Option<u32> {
        let (Some(a), Some(b)) = (a, b) else {
            return a.or(b);
        };
        if a == b {
            return Some(a);
        }
        let (ra, rb) = (self.rqs[a as usize]?, self.rqs[b as usize]?);
        if ra.sync != rb.sync {
            return Some(if ra.sync { a } else { b });
        }
        let back_max = u64::from(self.t.bfq_back_max) * 2;
        let penalty = u64::from(self.t.bfq_back_penalty);
        let dist = |s: u64| {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * penalty)
            } else {
                None
            }
        };
        let (s1, s2) = (ra.sector, rb.sector);
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) if d1 < d2 => a,
            (Some(d1), Some(d2)) if d2 < d1 => b,
            (Some(_), Some(_)) => {
                if s1 >= s2 {
                    a
                } else {
                    b
                }
            }
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if s1 <= s2 {
                    a
                } else {
                    b
                }
            }
        })
    }

    /// `bfq_find_next_rq()` after request `last` of queue `q` left it.
    fn find_next_rq(&mut self, q: u32, last: Rq, last_tag: u32, now: Ns) -> Option<u32> {
        // bfq_check_fifo(): once per service slot
        let qq = &mut self.queues[q as usize];
        if !qq.fifo_expire {
            qq.fifo_expire = true;
            while let Some(&(_, t)) = qq.fifo.front() {
                if self
                    .rqs
                    .get(t as usize)
                    .copied()
                    .flatten()
                    .is_some_and(|r| r.queue == q)
                    && t != last_tag
                {
                    break;
                }
                qq.fifo.pop_front();
            }
            if let Some(&(due, t)) = qq.fifo.front()
                && now >= due
            {
                return Some(t);
            }
        }
        let qq = &self.queues[q as usize];
        let key = (last.sector, last.seq);
        let next = qq
            .sort
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
            .next()
            .or_else(|| qq.sort.iter().next())
            .map(|(_, &t)| t)
            .filter(|&t| t != last_tag);
        let prev = qq.sort.range(..key).next_back().map(|(_, &t)| t);
        self.choose_req(next, prev, last.sector)
    }

    // --- dispatch

    /// `__bfq_dispatch_request()`: the tag of the next request for the driver.
    pub fn dispatch(&mut self, now: Ns) -> Option<u32> {
        if self.tot_busy() == 0 {
            return None;
        }
        if self.t.strict_guarantees && self.tot_rq_in_driver > 0 {
            return None;
        }
        let q = self.select_queue(now)?;
        let tag = self.dispatch_rq_from_bfqq(q, now);
        self.tot_rq_in_driver += 1;
        Some(tag)
    }

    /// `bfq_select_queue()`.
    fn select_queue(&mut self, now: Ns) -> Option<u32> {
        let mut reason = Expiration::BudgetTimeout;
        let mut cur = self.in_service;
        if let Some(q) = cur
            && self.may_expire_for_budg_timeout(q, now)
            && !self.must_idle(q)
        {
            self.expire(q, false, reason, now);
            cur = self.set_in_service_queue(now);
        } else if cur.is_none() {
            cur = self.set_in_service_queue(now);
        }
        loop {
            let q = cur?;
            if let Some(sectors) = self.next_rq_sectors(q) {
                if self.serv_to_charge(sectors, q) > self.budget_left(q) {
                    reason = Expiration::BudgetExhausted;
                } else {
                    if self.queues[q as usize].wait_request {
                        self.stop_idling(q, now);
                    }
                    return Some(q);
                }
            } else if self.queues[q as usize].wait_request
                || (self.queues[q as usize].dispatched != 0 && self.better_to_idle(q))
            {
                // plugging: the device waits for q, but another queue's request
                // may fill the hole: q's waker's, unconditionally, or the newest
                // queue q wakes (nothing to steal: it has I/O only while q is served),
                // else one chosen for injection within q's inject limit. (The first
                // choice, q's process's own async writes, is left out: writes come
                // from the flusher here.)
                let qq = &self.queues[q as usize];
                let may_dispatch = |x: u32| {
                    self.queues[x as usize].busy && self.next_rq_within_budget(x).is_some()
                };
                if let Some(w) = qq.waker.filter(|&w| may_dispatch(w)) {
                    return Some(w);
                }
                if let Some(&b) = qq.woken.last().filter(|&&b| may_dispatch(b)) {
                    return Some(b);
                }
                let may_inject = !self.idling_boosts_thr_without_issues(q)
                    && (self.wr_coeff(q) == 1 || self.wr_busy_queues > 1 || !qq.has_short_ttime);
                return if may_inject {
                    self.choose_bfqq_for_injection(q, now)
                } else {
                    None
                };
            } else {
                reason = Expiration::NoMoreRequests;
            }
            self.expire(q, false, reason, now);
            cur = self.set_in_service_queue(now);
        }
    }

    /// `bfq_choose_bfqq_for_injection()`: a queue on an active tree, most recently
    /// activated first, whose next request fits its budget, while fewer requests than
    /// the in-service queue's inject limit are in the driver.
    fn choose_bfqq_for_injection(&mut self, s: u32, now: Ns) -> Option<u32> {
        let ss = &self.queues[s as usize];
        let always_inject = self.wr_coeff(s) == 1 || !ss.has_short_ttime;
        let mut limit = ss.inject_limit;
        // the ns of slice_idle added to jiffies, as the kernel does
        let j = self.jiffies(now);
        if limit == 0
            && ss.last_serv_time_ns == 0
            && ss.wait_request
            && time_after_eq(
                j,
                self.last_idling_start_jiffies
                    .wrapping_add(u64::from(self.t.bfq_slice_idle)),
            )
        {
            limit = 1;
        }
        if self.tot_rq_in_driver >= limit && self.b.inject == Inject::Total {
            return None;
        }
        let mut active: Vec<(u64, u32)> = (0..self.queues.len() as u32)
            .filter(|&q| q != s && self.w.on_active_tree(self.queues[q as usize].entity))
            .map(|q| (self.w.insert_order(self.queues[q as usize].entity), q))
            .collect();
        active.sort_unstable_by(|a, b| b.cmp(a));
        for (_, q) in active {
            if !(always_inject || self.wr_coeff(q) > 1) {
                continue;
            }
            let Some(sectors) = self.next_rq_within_budget(q) else {
                continue;
            };
            let large = self.nonrot && sectors >= SECT_THR_NONROT;
            match self.b.inject {
                Inject::Total => {
                    if large && self.tot_rq_in_driver >= 1 {
                        continue;
                    }
                }
                Inject::PerCandidate => {
                    // 6.1: a large request on a non-rotational disk goes alone
                    limit = if large {
                        limit.min(1)
                    } else {
                        self.queues[s as usize].inject_limit
                    };
                    if self.tot_rq_in_driver >= limit {
                        continue;
                    }
                }
            }
            self.rqs_injected = true;
            return Some(q);
        }
        None
    }

    /// `bfq_reset_inject_limit()`.
    fn reset_inject_limit(&mut self, q: u32, now: Ns) {
        let j = self.jiffies(now);
        let qq = &mut self.queues[q as usize];
        qq.last_serv_time_ns = 0;
        qq.inject_limit = u32::from(!qq.has_short_ttime);
        qq.decrease_time_jif = j;
        self.waited_rq = None;
    }

    /// `bfq_update_inject_limit()`: the sampled request of queue `q` completed.
    fn update_inject_limit(&mut self, q: u32, now: Ns) {
        let tot = now.saturating_sub(self.last_empty_occupied_ns);
        let j = self.jiffies(now);
        let max_rq_in_driver = self.max_rq_in_driver;
        let (injected, in_driver) = (self.rqs_injected, self.tot_rq_in_driver);
        let qq = &mut self.queues[q as usize];
        let old_limit = qq.inject_limit;
        if qq.last_serv_time_ns > 0 && injected {
            let threshold = (qq.last_serv_time_ns * 3) >> 1;
            if tot >= threshold && old_limit > 0 {
                qq.inject_limit -= 1;
                qq.decrease_time_jif = j;
            } else if tot < threshold && old_limit <= max_rq_in_driver {
                qq.inject_limit += 1;
            }
        }
        if (qq.last_serv_time_ns == 0 && in_driver == 1) || tot < qq.last_serv_time_ns {
            if qq.last_serv_time_ns == 0 {
                qq.inject_limit = old_limit.max(1);
            }
            qq.last_serv_time_ns = tot;
        } else if !injected && in_driver == 1 {
            qq.last_serv_time_ns = tot;
        }
        self.waited_rq = None;
        self.rqs_injected = false;
    }

    /// `bfq_set_in_service_queue()` → `__bfq_set_in_service_queue()`.
    fn set_in_service_queue(&mut self, now: Ns) -> Option<u32> {
        if self.tot_busy() == 0 {
            return None;
        }
        let j = self.jiffies(now);
        let e = self.w.get_next_queue(j)?;
        let q = self.w.e[e as usize].queue?;
        self.queues[q as usize].fifo_expire = false;
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        let rt_max = self.msecs_to_jiffies(300);
        let raised = self.w.e[e as usize].wr_coeff > 1;
        let qq = &mut self.queues[q as usize];
        if raised
            && qq.wr_cur_max_time == rt_max
            && time_after(j, qq.budget_timeout)
            && time_after(j, qq.last_wr_start_finish)
        {
            // a soft real-time queue's raising is shifted by the time it waited
            if time_after(qq.budget_timeout, qq.last_wr_start_finish) {
                qq.last_wr_start_finish += j - qq.budget_timeout;
            } else {
                qq.last_wr_start_finish = j;
            }
        }
        self.set_budget_timeout(q, now);
        self.in_service = Some(q);
        Some(q)
    }

    /// `bfq_set_budget_timeout()`.
    fn set_budget_timeout(&mut self, q: u32, now: Ns) {
        let e = &self.w.e[self.queues[q as usize].entity as usize];
        let coeff = if self.queues[q as usize].wr_cur_max_time == self.msecs_to_jiffies(300) {
            1
        } else {
            e.weight / e.orig_weight.max(1)
        };
        self.last_budget_start = now;
        let j = self.jiffies(now);
        self.queues[q as usize].budget_timeout = j + u64::from(self.t.bfq_timeout) * coeff;
    }

    /// `bfq_dispatch_rq_from_bfqq()`.
    fn dispatch_rq_from_bfqq(&mut self, q: u32, now: Ns) -> u32 {
        let tag = self.queues[q as usize]
            .next_rq
            .expect("select_queue checked it");
        let r = self.rqs[tag as usize].expect("a queued request");
        let charge = self.serv_to_charge(r.sectors, q);
        self.bfqq_served(q, charge);
        if self.in_service == Some(q) && self.wait_dispatch {
            self.wait_dispatch = false;
            self.waited_rq = Some(tag);
        }
        self.queues[q as usize].dispatched += 1;
        self.update_peak_rate(r, now);
        self.remove_request(q, tag, now);
        let g = self.queues[q as usize].group as usize;
        self.groups[g].served += r.sectors;
        self.groups[g].dispatched += 1;
        if self.in_service != Some(q) {
            // injected
            return tag;
        }
        self.update_wr_data(q, now);
        if self.tot_busy() > 1 && self.class_of(q) == CLASS_IDLE {
            self.expire(q, false, Expiration::BudgetExhausted, now);
        }
        tag
    }

    /// `bfq_bfqq_served()`.
    fn bfqq_served(&mut self, q: u32, served: u64) {
        let wr = self.wr_coeff(q) > 1;
        let qq = &mut self.queues[q as usize];
        if wr {
            qq.service_from_wr += served;
        }
        qq.service_from_backlogged += served;
        let e = qq.entity;
        self.w.served(e, served);
    }

    /// `bfq_remove_request()`: request `tag` leaves queue `q` (dispatched).
    fn remove_request(&mut self, q: u32, tag: u32, now: Ns) {
        let r = self.rqs[tag as usize].take().expect("a queued request");
        let qq = &mut self.queues[q as usize];
        qq.sort.remove(&(r.sector, r.seq));
        qq.queued[usize::from(r.sync)] -= 1;
        self.queued -= 1;
        if qq.next_rq == Some(tag) {
            // the removed request is still known by its value
            self.rqs[tag as usize] = Some(r);
            let next = self.find_next_rq(q, r, tag, now);
            self.rqs[tag as usize] = None;
            self.queues[q as usize].next_rq = next;
            if self.queues[q as usize].next_rq.is_some() {
                self.updated_next_req(q, now);
            }
        }
        let qq = &mut self.queues[q as usize];
        if qq.empty() {
            qq.next_rq = None;
            if self.in_service != Some(q) && qq.busy {
                self.del_bfqq_busy(q, false, now);
                let e = self.queues[q as usize].entity as usize;
                self.w.e[e].budget = 0;
                self.w.e[e].service = 0;
            }
        }
    }

    // --- expiration

    /// `bfq_bfqq_expire()`.
    fn expire(&mut self, q: u32, compensate: bool, reason: Expiration, now: Ns) {
        let (slow, delta_ms) = self.bfqq_is_slow(q, compensate, now);
        let e = self.queues[q as usize].entity as usize;
        let budget = self.w.e[e].budget;
        if self.wr_coeff(q) == 1
            && (slow || (reason == Expiration::BudgetTimeout && self.budget_left(q) >= budget / 3))
        {
            self.charge_time(q, delta_ms);
        }
        let j = self.jiffies(now);
        if self.t.low_latency && self.wr_coeff(q) == 1 {
            self.queues[q as usize].last_wr_start_finish = j;
        }
        if self.t.low_latency && self.queues[q as usize].empty() {
            if self.queues[q as usize].dispatched == 0 {
                self.queues[q as usize].soft_rt_next_start = self.softrt_next_start(q, now);
            } else {
                self.queues[q as usize].softrt_update = true;
            }
        }
        self.rqs_injected = false;
        self.wait_dispatch = false;
        self.waited_rq = None;
        self.recalc_budget(q, reason);
        // __bfq_bfqq_expire()
        let empty = self.queues[q as usize].empty();
        if empty
            && !(reason == Expiration::Preempted && self.idling_needed_for_service_guarantees(q))
        {
            if self.queues[q as usize].dispatched == 0 {
                self.queues[q as usize].budget_timeout = j;
            }
            self.del_bfqq_busy(q, true, now);
        } else {
            self.requeue_bfqq(q, true, now);
        }
        // __bfq_bfqd_reset_in_service()
        self.stop_idling(q, now);
        self.in_service = None;
        self.w.reset_in_service(self.queues[q as usize].entity);
        let busy = self.queues[q as usize].busy;
        if !busy && reason != Expiration::BudgetTimeout && reason != Expiration::BudgetExhausted {
            self.queues[q as usize].non_blocking_wait_rq = true;
        } else {
            self.w.e[e].service = 0;
        }
        let path: Vec<Eid> = self.w.path(e as Eid).skip(1).collect();
        for p in path {
            self.w.e[p as usize].service = 0;
        }
    }

    /// `bfq_bfqq_is_slow()`: (slow, the slot's duration in ms).
    fn bfqq_is_slow(&self, q: u32, compensate: bool, now: Ns) -> (bool, u64) {
        let qq = &self.queues[q as usize];
        let mut slow = qq.seeky();
        if !qq.sync {
            return (false, 0);
        }
        let end = if compensate {
            self.last_idling_start
        } else {
            now
        };
        let delta_us = end.saturating_sub(self.last_budget_start) / 1_000;
        if delta_us < 1_000 {
            let ms = if self.nonrot { MIN_TT / MS } else { 8 };
            return (slow, ms);
        }
        if delta_us > 20_000 {
            slow = self.w.e[qq.entity as usize].service < self.bfq_max_budget / 2;
        }
        (slow, delta_us / 1_000)
    }

    /// `bfq_bfqq_charge_time()`: the sectors the slot's time is worth at the peak
    /// budget, charged (`bfq_timeout`, the built-in HZ/8, not `timeout_sync`).
    fn charge_time(&mut self, q: u32, time_ms: u64) {
        let timeout_ms = u64::from(jiffies_to_msecs(self.t.hz / 8, self.t.hz)).max(1);
        let bounded = time_ms.min(timeout_ms);
        let serv_for_time = self.bfq_max_budget * bounded / timeout_ms;
        let e = self.queues[q as usize].entity as usize;
        let service = self.w.e[e].service;
        let tot = serv_for_time.max(service);
        if tot > self.w.e[e].budget {
            self.w.e[e].budget = tot;
        }
        let extra = tot - service;
        let entity = self.queues[q as usize].entity;
        self.w.served(entity, extra);
    }

    /// `__bfq_bfqq_recalc_budget()`.
    fn recalc_budget(&mut self, q: u32, reason: Expiration) {
        let min_budget = self.min_budget();
        let raised = self.wr_coeff(q) > 1;
        let qq = &self.queues[q as usize];
        let e = qq.entity as usize;
        let mut budget = if raised {
            2 * min_budget
        } else {
            qq.max_budget
        };
        let max = self.bfq_max_budget;
        if qq.sync && !raised {
            budget = match reason {
                Expiration::TooIdle => {
                    if qq.dispatched > 0 {
                        (budget * 2).min(max)
                    } else if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Expiration::BudgetTimeout => (budget * 2).min(max),
                Expiration::BudgetExhausted => (budget * 4).min(max),
                Expiration::NoMoreRequests => self.w.e[e].service.max(min_budget),
                Expiration::Preempted => return,
            };
        } else if !qq.sync {
            budget = max;
        }
        let mut mb = budget;
        if self.budgets_assigned >= STATS_MIN_BUDGETS && u64::from(self.t.bfq_user_max_budget) == 0
        {
            mb = mb.min(max);
        }
        self.queues[q as usize].max_budget = mb;
        if let Some(sectors) = self.next_rq_sectors(q) {
            let charge = self.serv_to_charge(sectors, q);
            self.w.e[e].budget = mb.max(charge);
        }
    }

    // --- completion

    /// `bfq_completed_request()` of request `tag`'s `sectors` from `sector`,
    /// dispatched from the queue of `(task, sync, cgroup)`; true when it asks for a
    /// queue run (`bfq_schedule_dispatch()`: the driver is empty and BFQ does not idle).
    pub fn completed(&mut self, rq: &BfqRequest, now: Ns) -> bool {
        let Some(q) = self.queue_of_done(rq) else {
            return false;
        };
        // bfq_finish_requeue_request()
        self.request_allocated(q, false);
        if self.waited_rq == Some(rq.token) {
            self.update_inject_limit(q, now);
        }
        self.queues[q as usize].requests = self.queues[q as usize].requests.saturating_sub(1);
        self.update_hw_tag();
        self.tot_rq_in_driver = self.tot_rq_in_driver.saturating_sub(1);
        let j = self.jiffies(now);
        let qq = &mut self.queues[q as usize];
        qq.dispatched = qq.dispatched.saturating_sub(1);
        if qq.dispatched == 0 && !qq.busy {
            qq.budget_timeout = j;
            self.groups_pending_del(q);
            self.weights_tree_remove(q);
        }
        self.queues[q as usize].ttime.last_end_request = now;
        let delta_us = now.saturating_sub(self.last_completion) / 1_000;
        if delta_us > MIN_TT / 1_000
            && (self.pr.last_rq_max_size << RATE_SHIFT) / delta_us < 1 << (RATE_SHIFT - 10)
        {
            self.update_rate_reset(None, now);
        }
        self.last_completion = now;
        // no shared (merged) queues here to leave out
        self.last_completed_rq_bfqq = Some(q);
        let qq = &self.queues[q as usize];
        if qq.softrt_update && qq.dispatched == 0 && qq.empty() && self.wr_coeff(q) != WR_COEFF {
            self.queues[q as usize].soft_rt_next_start = self.softrt_next_start(q, now);
        }
        if self.in_service == Some(q) {
            if self.must_idle(q) {
                // idling: no expiration, even on budget timeout, and no queue run
                if self.queues[q as usize].dispatched == 0 {
                    self.arm_slice_timer(q, now);
                }
                return false;
            } else if self.may_expire_for_budg_timeout(q, now) {
                self.expire(q, false, Expiration::BudgetTimeout, now);
            } else if self.queues[q as usize].empty()
                && (self.queues[q as usize].dispatched == 0 || !self.better_to_idle(q))
            {
                self.expire(q, false, Expiration::NoMoreRequests, now);
            }
        }
        self.tot_rq_in_driver == 0
    }

    /// The queue a completed request was dispatched from.
    fn queue_of_done(&self, rq: &BfqRequest) -> Option<u32> {
        self.existing_queue(*self.group_of.get(&rq.cgroup)?, rq)
    }

    /// `bfqq_request_allocated()` (`up`) / `bfqq_request_freed()`: queue `q` and the
    /// groups above it hold one request more or less.
    fn request_allocated(&mut self, q: u32, up: bool) {
        // per request: walk up by parent rather than collect the path
        let mut at = Some(self.queues[q as usize].entity);
        while let Some(e) = at {
            let a = &mut self.w.e[e as usize].allocated;
            *a = if up { *a + 1 } else { a.saturating_sub(1) };
            at = self.w.parent(e);
        }
    }

    /// `bfq_limit_depth()`: how a tag allocation of `rq`'s task for its cgroup is
    /// limited (a `write`, or a read) on `nr_requests` scheduler tags. Sync reads may
    /// have every tag, async I/O and sync writes a fraction (half and three quarters,
    /// less while a queue is weight-raised); a task whose queue, or a group above it,
    /// holds its weight's share of the tags already or more
    /// (`bfqq_request_over_limit()`) is held to one — per word of the map, or of the
    /// whole map (`bfq.shallow_depth`).
    pub fn limit_depth(&self, rq: &BfqRequest, write: bool, nr_requests: u32) -> Option<Shallow> {
        let raised = usize::from(self.wr_busy_queues > 0);
        let sync = usize::from(rq.sync);
        let sync_read = rq.sync && !write;
        let over = |limit: u32| {
            self.group_of
                .get(&rq.cgroup)
                .and_then(|&g| self.existing_queue(g, rq))
                .is_some_and(|q| self.request_over_limit(q, limit))
        };
        match self.b.shallow_depth {
            ShallowDepth::PerWord => {
                // bfq_update_depths(): fractions of a word of the map
                let shift = calculate_shift(nr_requests);
                let (limit, depth) = if sync_read {
                    (nr_requests, 0)
                } else {
                    let d = async_depth(1 << shift, raised, sync);
                    ((nr_requests * d) >> shift, d)
                };
                let depth = if over(limit) { 1 } else { depth };
                (depth > 0).then_some(Shallow::PerWord(depth))
            }
            ShallowDepth::WholeMap => {
                let limit = if sync_read {
                    nr_requests
                } else {
                    async_depth(nr_requests, raised, sync)
                };
                let limit = if over(limit) { 1 } else { limit };
                (limit < nr_requests).then_some(Shallow::Map(limit))
            }
        }
    }

    /// `bfqq_request_over_limit()`: from the top group down to queue `q`, each level
    /// gets its weight's share of what the level above got (of `limit` at the top);
    /// over when an entity holds its share or more. A level not on its tree sets no
    /// limit (BFQ must hear of the work to activate it); a queue's share is among the
    /// queues of its class and the classes above, those weighing 8× per class.
    fn request_over_limit(&self, q: u32, mut limit: u32) -> bool {
        let path: Vec<Eid> = self.w.path(self.queues[q as usize].entity).collect();
        if path.iter().any(|&e| !self.w.e[e as usize].on_st) {
            return false;
        }
        for (level, &e) in path.iter().enumerate().rev() {
            let en = &self.w.e[e as usize];
            let st = &self.w.sd[en.sd as usize].st;
            let wsum = if level > 0 {
                st[en.class].wsum
            } else {
                (0..=en.class).fold(0, |w, i| w * IOPRIO_NR_LEVELS + st[i].wsum)
            };
            if wsum == 0 {
                continue;
            }
            // DIV_ROUND_CLOSEST()
            limit = ((u64::from(limit) * en.weight + wsum / 2) / wsum) as u32;
            if en.allocated >= limit {
                return true;
            }
        }
        false
    }

    /// Request `rq`'s queue in group `g`, if it has one: its task's sync queue, or
    /// the group's async slot for the task's class and level (`bfq_async_queue_prio()`;
    /// the flusher's: BE, level 4).
    fn existing_queue(&self, g: u32, rq: &BfqRequest) -> Option<u32> {
        if rq.sync {
            return self
                .sync_q
                .get(&rq.task)
                .copied()
                .filter(|&q| self.queues[q as usize].group == g);
        }
        match class_level(rq.task_ioprio) {
            (CLASS_IDLE, _) => self.groups[g as usize].async_idle,
            (c, level) => self.groups[g as usize].async_q[c][usize::from(level)],
        }
    }

    /// `bfq_update_hw_tag()`.
    fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.tot_rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.tot_rq_in_driver + self.queued <= HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(s) = self.in_service {
            let qq = &self.queues[s as usize];
            if qq.has_short_ttime
                && qq.dispatched + qq.queued[0] + qq.queued[1] < HW_QUEUE_THRESHOLD
                && self.tot_rq_in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = i8::from(self.max_rq_in_driver > HW_QUEUE_THRESHOLD);
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
    }

    /// `bfq_arm_slice_timer()`: the device idles for `q`.
    fn arm_slice_timer(&mut self, q: u32, now: Ns) {
        self.queues[q as usize].wait_request = true;
        let mut sl = u64::from(self.t.bfq_slice_idle);
        if self.queues[q as usize].seeky() && self.wr_coeff(q) == 1 && !self.asymmetric(Some(q)) {
            sl = sl.min(MIN_TT);
        } else if self.wr_coeff(q) > 1 {
            sl = sl.max(20 * MS);
        }
        self.last_idling_start = now;
        self.last_idling_start_jiffies = self.jiffies(now);
        self.timer_gen += 1;
        self.idle_timer = Some(now + sl);
    }

    /// `bfq_idle_slice_timer_body()`: the slice ended without a request; true when it
    /// asks for a queue run (`bfq_schedule_dispatch()`: a queue is in service).
    pub fn idle_slice_timer(&mut self, now: Ns) -> bool {
        self.idle_timer = None;
        let Some(q) = self.in_service else {
            return false;
        };
        if std::mem::take(&mut self.queues[q as usize].wait_request) {
            self.idle_ns += now.saturating_sub(self.last_idling_start);
        }
        let reason = if self.budget_timed_out(q, now) {
            Expiration::BudgetTimeout
        } else if self.queues[q as usize].queued == [0, 0] {
            Expiration::TooIdle
        } else {
            return true;
        };
        self.expire(q, true, reason, now);
        true
    }

    // --- peak rate

    /// `bfq_update_peak_rate()` at a dispatch.
    fn update_peak_rate(&mut self, r: Rq, now: Ns) {
        if self.pr.samples == 0 {
            self.reset_rate_computation(Some(r), now);
        } else if now.saturating_sub(self.pr.last_dispatch) > 100 * MS && self.tot_rq_in_driver == 0
        {
            self.update_rate_reset(Some(r), now);
        } else {
            self.pr.samples += 1;
            if (self.tot_rq_in_driver > 0 || now.saturating_sub(self.last_completion) < MIN_TT)
                && !self.rq_seeky(self.last_position, r.sector, r.sectors)
            {
                self.pr.sequential_samples += 1;
            }
            self.pr.tot_sectors_dispatched += r.sectors;
            self.pr.last_rq_max_size = if !self.pr.samples.is_multiple_of(RATE_MIN_SAMPLES) {
                self.pr.last_rq_max_size.max(r.sectors)
            } else {
                r.sectors
            };
            self.pr.delta_from_first = now - self.pr.first_dispatch;
            if self.pr.delta_from_first >= RATE_REF_INTERVAL {
                self.update_rate_reset(Some(r), now);
            }
        }
        self.last_position = r.sector + r.sectors;
        self.pr.last_dispatch = now;
    }

    /// `bfq_reset_rate_computation()`.
    fn reset_rate_computation(&mut self, r: Option<Rq>, now: Ns) {
        match r {
            Some(r) => {
                self.pr.last_dispatch = now;
                self.pr.first_dispatch = now;
                self.pr.samples = 1;
                self.pr.sequential_samples = 0;
                self.pr.tot_sectors_dispatched = r.sectors;
                self.pr.last_rq_max_size = r.sectors;
            }
            None => self.pr.samples = 0,
        }
    }

    /// `bfq_update_rate_reset()`.
    fn update_rate_reset(&mut self, r: Option<Rq>, now: Ns) {
        let pr = self.pr;
        if pr.samples >= RATE_MIN_SAMPLES && pr.delta_from_first >= RATE_MIN_INTERVAL {
            let delta = pr
                .delta_from_first
                .max(self.last_completion.saturating_sub(pr.first_dispatch));
            let mut rate = (pr.tot_sectors_dispatched << RATE_SHIFT) / (delta / 1_000).max(1);
            let skip = (pr.sequential_samples < (3 * pr.samples) >> 2 && rate <= pr.peak_rate)
                || rate > 20 << RATE_SHIFT;
            if !skip {
                let weight = u64::from((9 * pr.sequential_samples) / pr.samples);
                let weight = (weight * delta / RATE_REF_INTERVAL).min(8);
                let divisor = 10 - weight;
                // u32 arithmetic in the kernel, in this order
                let mut peak = (pr.peak_rate * (divisor - 1)) & 0xffff_ffff;
                peak /= divisor;
                rate /= divisor;
                peak = (peak + rate) & 0xffff_ffff;
                self.pr.peak_rate = peak.max(1);
                // update_thr_responsiveness_params()
                if u64::from(self.t.bfq_user_max_budget) == 0 {
                    self.bfq_max_budget = self.calc_max_budget();
                }
            }
        }
        self.reset_rate_computation(r, now);
    }

    /// `bfq_calc_max_budget()`: the sectors `timeout_sync` takes at the peak rate.
    pub fn calc_max_budget(&self) -> u64 {
        let timeout_ms = u64::from(jiffies_to_msecs(self.t.bfq_timeout, self.t.hz));
        (self.pr.peak_rate * 1_000 * timeout_ms) >> RATE_SHIFT
    }

    /// `bfq_max_budget` after the `iosched/` writes: a user's `max_budget` is in
    /// force (`bfq_max_budget_store()`); 0 leaves it auto-tuned.
    pub fn recalc_max_budget_if_user(&mut self) {
        if self.t.bfq_user_max_budget > 0 {
            self.bfq_max_budget = u64::from(self.t.bfq_user_max_budget);
        }
    }

    // --- weight raising

    /// `bfq_wr_duration()` in jiffies.
    fn wr_duration(&self) -> u64 {
        let dur = self.rate_dur_prod / self.pr.peak_rate.max(1);
        dur.clamp(self.msecs_to_jiffies(3_000), self.msecs_to_jiffies(25_000))
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival()` (no bursts).
    fn update_wr_on_rq_arrival(
        &mut self,
        q: u32,
        old_wr_coeff: u64,
        wr_or_deserves_wr: bool,
        interactive: bool,
        soft_rt: bool,
        now: Ns,
    ) {
        let j = self.jiffies(now);
        let e = self.queues[q as usize].entity as usize;
        let rt_max = self.msecs_to_jiffies(300);
        let dur = self.wr_duration();
        let min_budget = self.min_budget();
        let qq = &mut self.queues[q as usize];
        if old_wr_coeff == 1 && wr_or_deserves_wr {
            if interactive {
                qq.service_from_wr = 0;
                self.w.e[e].wr_coeff = WR_COEFF;
                qq.wr_cur_max_time = dur;
            } else {
                qq.wr_start_at_switch_to_srt = j.wrapping_sub(u64::MAX / 2);
                self.w.e[e].wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                qq.wr_cur_max_time = rt_max;
            }
            self.w.e[e].budget = self.w.e[e].budget.min(2 * min_budget);
        } else if old_wr_coeff > 1 {
            if interactive {
                self.w.e[e].wr_coeff = WR_COEFF;
                qq.wr_cur_max_time = dur;
            } else if soft_rt {
                if qq.wr_cur_max_time != rt_max {
                    qq.wr_start_at_switch_to_srt = qq.last_wr_start_finish;
                    qq.wr_cur_max_time = rt_max;
                    self.w.e[e].wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                }
                qq.last_wr_start_finish = j;
            }
        }
    }

    /// `bfq_update_wr_data()`: the in-service queue's raising may end.
    fn update_wr_data(&mut self, q: u32, now: Ns) {
        let j = self.jiffies(now);
        let e = self.queues[q as usize].entity as usize;
        let rt_max = self.msecs_to_jiffies(300);
        let dur = self.wr_duration();
        if self.w.e[e].wr_coeff > 1 {
            let qq = &self.queues[q as usize];
            if time_after(j, qq.last_wr_start_finish.wrapping_add(qq.wr_cur_max_time)) {
                if qq.wr_cur_max_time != rt_max
                    || time_after(j, qq.wr_start_at_switch_to_srt.wrapping_add(dur))
                {
                    self.end_wr(q, now);
                } else {
                    // switch_back_to_interactive_wr()
                    let qq = &mut self.queues[q as usize];
                    self.w.e[e].wr_coeff = WR_COEFF;
                    qq.wr_cur_max_time = dur;
                    qq.last_wr_start_finish = qq.wr_start_at_switch_to_srt;
                    self.w.e[e].prio_changed = true;
                }
            }
            let qq = &self.queues[q as usize];
            if self.w.e[e].wr_coeff > 1
                && qq.wr_cur_max_time != rt_max
                && qq.service_from_wr > MAX_SERVICE_FROM_WR
            {
                self.end_wr(q, now);
            }
        }
        let en = &self.w.e[e];
        if (en.weight > en.orig_weight) != (en.wr_coeff > 1) {
            self.w.prio_apply(e as Eid);
            self.sync_weight_changes();
        }
    }

    /// `bfq_bfqq_end_wr()`.
    fn end_wr(&mut self, q: u32, now: Ns) {
        let j = self.jiffies(now);
        let rt_max = self.msecs_to_jiffies(300);
        let e = self.queues[q as usize].entity as usize;
        let qq = &mut self.queues[q as usize];
        if qq.wr_cur_max_time != rt_max {
            qq.soft_rt_next_start = j;
        }
        if qq.busy {
            self.wr_busy_queues -= 1;
        }
        self.w.e[e].wr_coeff = 1;
        qq.wr_cur_max_time = 0;
        qq.last_wr_start_finish = j;
        self.w.e[e].prio_changed = true;
    }

    /// `bfq_bfqq_softrt_next_start()`.
    fn softrt_next_start(&self, q: u32, now: Ns) -> u64 {
        let j = self.jiffies(now);
        let qq = &self.queues[q as usize];
        let by_rate =
            qq.last_idle_bklogged + self.hz * qq.service_from_backlogged / WR_MAX_SOFTRT_RATE;
        let slice = u64::from(self.t.bfq_slice_idle) * self.hz / 1_000_000_000;
        qq.soft_rt_next_start.max(by_rate).max(j + slice + 4)
    }

    // --- what the timelines read

    /// Each group's entity weight in force (0 for the root group).
    pub fn group_weight(&self, g: usize) -> u64 {
        self.w.sd[g]
            .my_entity
            .map_or(0, |e| self.w.e[e as usize].weight)
    }

    /// Group `g`'s entity now: its budget (sectors), its lead on its tree's virtual
    /// time (sectors, [`Wf2q::lead_sectors`]), the scheduler tags its queues hold
    /// (`allocated`), and how many of its queues are weight-raised (0s for the root
    /// group, which has no entity; raised queues counted there too).
    pub fn group_state(&self, g: usize) -> GroupState {
        let raised = self
            .queues
            .iter()
            .filter(|q| q.group == g as u32 && self.w.e[q.entity as usize].wr_coeff > 1)
            .count() as u32;
        let Some(e) = self.w.sd[g].my_entity else {
            return GroupState {
                raised,
                ..GroupState::default()
            };
        };
        let en = &self.w.e[e as usize];
        GroupState {
            budget: en.budget,
            lead: self.w.lead_sectors(e),
            tags: en.allocated,
            raised,
        }
    }

    /// Whether group `g` has a queue in service right now.
    pub fn in_service_group(&self) -> Option<u32> {
        self.in_service.map(|q| self.queues[q as usize].group)
    }

    /// The device's estimated peak rate in sectors/s, and the max budget in force.
    pub fn peak_rate_and_budget(&self) -> (u64, u64) {
        (
            (self.pr.peak_rate * 1_000_000) >> RATE_SHIFT,
            self.max_budget(),
        )
    }

    /// Busy queues (all classes) and those weight-raised.
    pub fn busy(&self) -> (u32, u32) {
        (self.tot_busy(), self.wr_busy_queues)
    }
}

impl Group {
    fn new(cgroup: u32) -> Self {
        Group {
            cgroup,
            async_q: [[None; 8]; 2],
            async_idle: None,
            num_queues_with_pending_reqs: 0,
            in_pending: false,
            served: 0,
            dispatched: 0,
        }
    }
}
