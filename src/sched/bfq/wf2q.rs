//! B-WF2Q+ over BFQ's hierarchy of entities (`block/bfq-wf2q.c`).
//!
//! Every queue and every group below the root is an [`Entity`], scheduled in the
//! [`SchedData`] of the group above it (the root group's is the top scheduler). A
//! scheduler has one [`ServiceTree`] per class (RT, BE, IDLE); a tree holds its
//! backlogged entities ordered by virtual finish time (ties: earlier insertion first,
//! as the rb-tree puts an equal key to the right), the idle ones whose finish is still
//! ahead of the tree's virtual time, its `vtime` and `wsum` (the weights of every
//! entity on it, in service or idle included). The kernel's `min_start` augmentation
//! is a second ordered set by start time here: the same minimum, found the same way
//! in `O(log n)`.
//!
//! The functions mirror the kernel's one for one and keep their names: activation
//! and requeueing (`__bfq_activate_entity`, `__bfq_requeue_entity`,
//! `bfq_update_fin_time_enqueue`), deactivation into the idle tree or out of the
//! scheduler (`bfq_deactivate_entity`), the lookup (`bfq_lookup_next_entity`, with the
//! vtime jump and the IDLE class's `BFQ_CL_IDLE_TIMEOUT`), the cached
//! `next_in_service` and its fast path (`bfq_update_next_in_service`), setting a queue
//! in service from the root down (`bfq_get_next_queue`) and charging service up the
//! hierarchy (`bfq_bfqq_served`). A weight or class change waits in `new_weight` /
//! `new_class` until the entity's next (re)queueing applies it
//! (`__bfq_entity_update_weight_prio`); a queue's weight change is handed back to the
//! scheduler ([`Wf2q::weight_changes`]) for its weights tree.

use std::collections::BTreeSet;

use crate::sim::jiffies::time_after;

/// `WFQ_SERVICE_SHIFT`: virtual times are service << 22 / weight.
const WFQ_SERVICE_SHIFT: u32 = 22;
/// `BFQ_MIN_WEIGHT`, `BFQ_MAX_WEIGHT`.
const BFQ_MIN_WEIGHT: u64 = 1;
const BFQ_MAX_WEIGHT: u64 = 1000;
/// The classes' trees: RT, BE, IDLE (`bfq_class_idx()`).
pub const CLASSES: usize = 3;
pub const CLASS_BE: usize = 1;
pub const CLASS_IDLE: usize = 2;

pub type Eid = u32;

/// `bfq_gt()`: a > b, wrap-safe.
pub fn bfq_gt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// `bfq_delta()`: the virtual time `service` sectors take at `weight`.
pub fn bfq_delta(service: u64, weight: u64) -> u64 {
    (service << WFQ_SERVICE_SHIFT) / weight.max(1)
}

/// Which tree of its class an entity is on (`entity->tree`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    None,
    Active,
    Idle,
}

/// `struct bfq_entity`.
#[derive(Debug, Clone)]
pub struct Entity {
    pub start: u64,
    pub finish: u64,
    /// Sectors received in the current slot.
    pub service: u64,
    pub budget: u64,
    /// `weight` (= `orig_weight · wr_coeff` for a queue), `orig_weight`, `new_weight`.
    pub weight: u64,
    pub orig_weight: u64,
    pub new_weight: u64,
    pub prio_changed: bool,
    /// Class index (0 RT, 1 BE, 2 IDLE) and the one it changes to; a group's is BE.
    pub class: usize,
    pub new_class: usize,
    /// A queue's weight-raising coefficient (1: not raised); 1 for a group.
    pub wr_coeff: u64,
    /// On a tree or in service (`on_st_or_in_serv`).
    pub on_st: bool,
    pub tree: On,
    /// Its position among equal keys: the order it was inserted in.
    seq: u64,
    /// The finish and start it was put on its tree with: its node there (the kernel
    /// takes a node out by itself, whatever its timestamps became since).
    node: (u64, u64),
    /// The group whose scheduler it is in (`entity->sched_data`).
    pub sd: u32,
    /// The group it is (`my_sched_data`), or None for a queue.
    pub group: Option<u32>,
    /// The queue it is (`bfq_entity_to_bfqq()`), set by the scheduler that made it.
    pub queue: Option<u32>,
    /// Requests allocated to it or below it and not yet freed (`allocated`).
    pub allocated: u32,
}

impl Entity {
    pub fn new(sd: u32, group: Option<u32>, weight: u64, class: usize) -> Self {
        Entity {
            start: 0,
            finish: 0,
            service: 0,
            budget: 0,
            weight,
            orig_weight: weight,
            new_weight: weight,
            prio_changed: false,
            class,
            new_class: class,
            wr_coeff: 1,
            on_st: false,
            tree: On::None,
            seq: 0,
            node: (0, 0),
            sd,
            group,
            queue: None,
            allocated: 0,
        }
    }
}

/// `struct bfq_service_tree`.
#[derive(Debug, Clone, Default)]
pub struct ServiceTree {
    active: BTreeSet<(u64, u64, Eid)>,
    /// The active entities by start: `min_start` is its first.
    starts: BTreeSet<(u64, u64, Eid)>,
    idle: BTreeSet<(u64, u64, Eid)>,
    pub vtime: u64,
    pub wsum: u64,
}

/// `struct bfq_sched_data`: a group's own scheduler.
#[derive(Debug, Clone, Default)]
pub struct SchedData {
    pub in_service: Option<Eid>,
    pub next_in_service: Option<Eid>,
    pub st: [ServiceTree; CLASSES],
    /// jiffies (`bfq_class_idle_last_service`).
    pub class_idle_last_service: u64,
    /// Its children on an active tree (`bfqg->active_entities`; not kept for the root).
    pub active_entities: u32,
    /// The group's own entity (`bfqg->my_entity`); None for the root group.
    pub my_entity: Option<Eid>,
}

/// The hierarchy's entities and schedulers.
#[derive(Debug, Clone, Default)]
pub struct Wf2q {
    pub e: Vec<Entity>,
    /// Per group (0: the root group).
    pub sd: Vec<SchedData>,
    seq: u64,
    /// `BFQ_CL_IDLE_TIMEOUT` in jiffies (HZ / 5).
    pub idle_timeout: u64,
    /// Queues whose weight changed, with the weight before: the caller keeps its
    /// weights tree from them (`bfq_weights_tree_remove()` / `_add()`).
    pub weight_changes: Vec<(Eid, u64)>,
}

impl Wf2q {
    /// An empty hierarchy whose IDLE class waits at most `idle_timeout` jiffies.
    pub fn new(idle_timeout: u64) -> Self {
        Wf2q {
            idle_timeout,
            ..Wf2q::default()
        }
    }

    /// The entity above `e`: the group entity of the scheduler it is in.
    pub fn parent(&self, e: Eid) -> Option<Eid> {
        self.sd[self.e[e as usize].sd as usize].my_entity
    }

    /// `e` and every entity above it, up to (not including) the root group.
    pub fn path(&self, e: Eid) -> impl Iterator<Item = Eid> + '_ {
        std::iter::successors(Some(e), |&x| self.parent(x))
    }

    fn st_of(&mut self, e: Eid) -> &mut ServiceTree {
        let en = &self.e[e as usize];
        let (sd, class) = (en.sd as usize, en.class);
        &mut self.sd[sd].st[class]
    }

    /// Its key on the tree it is on (by the finish it went on with).
    fn key(&self, e: Eid) -> (u64, u64, Eid) {
        let en = &self.e[e as usize];
        (en.node.0, en.seq, e)
    }

    /// `bfq_calc_finish()`.
    fn calc_finish(&mut self, e: Eid, service: u64) {
        let en = &mut self.e[e as usize];
        en.finish = en.start.wrapping_add(bfq_delta(service, en.weight));
    }

    /// `bfq_active_insert()` (`bfq_inc_active_entities()`).
    fn active_insert(&mut self, e: Eid) {
        self.seq += 1;
        let seq = self.seq;
        let en = &mut self.e[e as usize];
        en.seq = seq;
        en.tree = On::Active;
        en.node = (en.finish, en.start);
        let (start, sd) = (en.start, en.sd as usize);
        let key = self.key(e);
        let st = self.st_of(e);
        st.active.insert(key);
        st.starts.insert((start, seq, e));
        if self.sd[sd].my_entity.is_some() {
            self.sd[sd].active_entities += 1;
        }
    }

    /// `bfq_active_extract()`.
    fn active_extract(&mut self, e: Eid) {
        let key = self.key(e);
        let en = &mut self.e[e as usize];
        en.tree = On::None;
        let (start, seq, sd) = (en.node.1, en.seq, en.sd as usize);
        let st = self.st_of(e);
        st.active.remove(&key);
        st.starts.remove(&(start, seq, e));
        if self.sd[sd].my_entity.is_some() {
            self.sd[sd].active_entities -= 1;
        }
    }

    /// `bfq_idle_insert()`.
    fn idle_insert(&mut self, e: Eid) {
        self.seq += 1;
        let en = &mut self.e[e as usize];
        en.seq = self.seq;
        en.tree = On::Idle;
        en.node = (en.finish, en.start);
        let key = self.key(e);
        self.st_of(e).idle.insert(key);
    }

    /// `bfq_idle_extract()`.
    fn idle_extract(&mut self, e: Eid) {
        let key = self.key(e);
        self.e[e as usize].tree = On::None;
        self.st_of(e).idle.remove(&key);
    }

    /// `bfq_forget_entity()`: off the scheduler, its weight out of the tree's sum.
    fn forget_entity(&mut self, e: Eid) {
        let w = self.e[e as usize].weight;
        self.e[e as usize].on_st = false;
        self.st_of(e).wsum -= w;
    }

    /// `bfq_put_idle_entity()`.
    fn put_idle_entity(&mut self, e: Eid) {
        self.idle_extract(e);
        self.forget_entity(e);
    }

    /// `bfq_forget_idle()` on tree `class` of group `g`'s scheduler.
    fn forget_idle(&mut self, g: usize, class: usize) {
        let st = &mut self.sd[g].st[class];
        if st.active.is_empty()
            && let Some(&(finish, _, _)) = st.idle.last()
            && !bfq_gt(finish, st.vtime)
        {
            st.vtime = finish;
        }
        if let Some(&(finish, _, first)) = st.idle.first()
            && !bfq_gt(finish, st.vtime)
        {
            self.put_idle_entity(first);
        }
    }

    /// `bfq_update_vtime()`.
    fn update_vtime(&mut self, g: usize, class: usize, v: u64) {
        if v > self.sd[g].st[class].vtime {
            self.sd[g].st[class].vtime = v;
            self.forget_idle(g, class);
        }
    }

    /// `bfq_calc_vtime_jump()`.
    fn calc_vtime_jump(&self, st: &ServiceTree) -> u64 {
        match st.starts.first() {
            Some(&(min_start, _, _)) if bfq_gt(min_start, st.vtime) => min_start,
            _ => st.vtime,
        }
    }

    /// `bfq_first_active_entity()`: the eligible entity (start ≤ vtime) of smallest
    /// finish.
    fn first_active_entity(&self, st: &ServiceTree, vtime: u64) -> Option<Eid> {
        st.active
            .iter()
            .map(|&(_, _, e)| e)
            .find(|&e| !bfq_gt(self.e[e as usize].start, vtime))
    }

    /// `__bfq_lookup_next_entity()`.
    fn lookup_in_tree(&mut self, g: usize, class: usize, in_service: bool) -> Option<Eid> {
        if self.sd[g].st[class].active.is_empty() {
            return None;
        }
        let new_vtime = self.calc_vtime_jump(&self.sd[g].st[class]);
        if !in_service {
            self.update_vtime(g, class, new_vtime);
        }
        self.first_active_entity(&self.sd[g].st[class], new_vtime)
    }

    /// `bfq_lookup_next_entity()`: classes in order, RT first, except that a lookup
    /// more than `BFQ_CL_IDLE_TIMEOUT` after the last such one serves IDLE first.
    fn lookup_next_entity(&mut self, g: usize, expiration: bool, jiffies: u64) -> Option<Eid> {
        let mut class = 0;
        if time_after(
            jiffies,
            self.sd[g]
                .class_idle_last_service
                .wrapping_add(self.idle_timeout),
        ) {
            if !self.sd[g].st[CLASS_IDLE].active.is_empty() {
                class = CLASS_IDLE;
            }
            self.sd[g].class_idle_last_service = jiffies;
        }
        let in_service = self.sd[g].in_service.is_some() && !expiration;
        (class..CLASSES).find_map(|c| self.lookup_in_tree(g, c, in_service))
    }

    /// `bfq_update_parent_budget()`: the group's budget is its next child's.
    fn update_parent_budget(&mut self, next: Eid) -> bool {
        let g = self.e[next as usize].sd as usize;
        let Some(ge) = self.sd[g].my_entity else {
            return false;
        };
        let b = self.e[next as usize].budget;
        let decreased = self.e[ge as usize].budget > b;
        self.e[ge as usize].budget = b;
        decreased
    }

    /// `bfq_update_next_in_service()`: whether the parent's choice may change.
    pub fn update_next_in_service(
        &mut self,
        g: usize,
        new: Option<Eid>,
        expiration: bool,
        jiffies: u64,
    ) -> bool {
        let old = self.sd[g].next_in_service;
        let mut next = old;
        let mut without_lookup = false;
        if let Some(n) = new
            && Some(n) != old
        {
            without_lookup = true;
            if let Some(o) = old {
                let class = self.e[n as usize].class;
                let vtime = self.sd[g].st[class].vtime;
                without_lookup = class == self.e[o as usize].class
                    && !bfq_gt(self.e[n as usize].start, vtime)
                    && bfq_gt(self.e[o as usize].finish, self.e[n as usize].finish);
            }
            if without_lookup {
                next = Some(n);
            }
        }
        if !without_lookup {
            next = self.lookup_next_entity(g, expiration, jiffies);
        }
        let mut may_change = false;
        if let Some(n) = next {
            let decreased = self.update_parent_budget(n);
            may_change = old.is_none() || decreased;
        }
        self.sd[g].next_in_service = next;
        may_change
    }

    /// `__bfq_entity_update_weight_prio()`: apply a pending weight or class change.
    fn update_weight_prio(&mut self, e: Eid, update_class_too: bool) {
        if !self.e[e as usize].prio_changed {
            return;
        }
        let w = self.e[e as usize].weight;
        self.st_of(e).wsum -= w;
        let old_class = self.e[e as usize].class;
        let is_queue = self.e[e as usize].group.is_none();
        let en = &mut self.e[e as usize];
        if en.new_weight != en.orig_weight {
            en.new_weight = en.new_weight.clamp(BFQ_MIN_WEIGHT, BFQ_MAX_WEIGHT);
            en.orig_weight = en.new_weight;
        }
        if is_queue && update_class_too {
            en.class = en.new_class;
        }
        if !is_queue || en.class == en.new_class {
            en.prio_changed = false;
        }
        let prev = en.weight;
        en.weight = en.orig_weight * en.wr_coeff;
        if prev != en.weight && is_queue {
            self.weight_changes.push((e, prev));
        }
        let w = self.e[e as usize].weight;
        self.st_of(e).wsum += w;
        let class = self.e[e as usize].class;
        if class != old_class {
            let g = self.e[e as usize].sd as usize;
            self.e[e as usize].start = self.sd[g].st[class].vtime;
        }
    }

    /// `__bfq_entity_update_weight_prio(.., false)` on an entity where it is: a queue
    /// whose raising began or ended takes its weight now (`bfq_update_wr_data()`).
    pub fn prio_apply(&mut self, e: Eid) {
        self.update_weight_prio(e, false);
    }

    /// `bfq_update_fin_time_enqueue()`.
    fn update_fin_time_enqueue(&mut self, e: Eid, backshifted: bool) {
        self.update_weight_prio(e, true);
        let budget = self.e[e as usize].budget;
        self.calc_finish(e, budget);
        let vtime = self.st_of(e).vtime;
        let en = &mut self.e[e as usize];
        if backshifted && bfq_gt(vtime, en.finish) {
            let delta = (vtime - en.finish) / en.wr_coeff.max(1);
            en.start = en.start.wrapping_add(delta);
            en.finish = en.finish.wrapping_add(delta);
        }
        self.active_insert(e);
    }

    /// `__bfq_activate_entity()`: a true activation.
    fn activate(&mut self, e: Eid, non_blocking_wait_rq: bool) {
        let vtime = self.st_of(e).vtime;
        let finish = self.e[e as usize].finish;
        let backshifted = non_blocking_wait_rq && bfq_gt(vtime, finish);
        let min_vstart = if backshifted { finish } else { vtime };
        if self.e[e as usize].tree == On::Idle {
            self.idle_extract(e);
            self.e[e as usize].start = if bfq_gt(min_vstart, finish) {
                min_vstart
            } else {
                finish
            };
        } else {
            self.e[e as usize].start = min_vstart;
            let w = self.e[e as usize].weight;
            self.st_of(e).wsum += w;
            self.e[e as usize].on_st = true;
        }
        self.update_fin_time_enqueue(e, backshifted);
    }

    /// `__bfq_requeue_entity()`.
    fn requeue(&mut self, e: Eid) {
        let g = self.e[e as usize].sd as usize;
        if self.sd[g].in_service == Some(e) {
            let service = self.e[e as usize].service;
            self.calc_finish(e, service);
            self.e[e as usize].start = self.e[e as usize].finish;
            if self.e[e as usize].tree != On::None {
                self.active_extract(e);
            }
        } else {
            self.active_extract(e);
        }
        self.update_fin_time_enqueue(e, false);
    }

    /// `bfq_activate_requeue_entity()` from `e` up.
    pub fn activate_requeue(
        &mut self,
        e: Eid,
        non_blocking_wait_rq: bool,
        requeue: bool,
        expiration: bool,
        jiffies: u64,
    ) {
        let mut cur = Some(e);
        while let Some(x) = cur {
            let g = self.e[x as usize].sd as usize;
            if self.sd[g].in_service == Some(x) || self.e[x as usize].tree == On::Active {
                self.requeue(x);
            } else {
                self.activate(x, non_blocking_wait_rq);
            }
            if !self.update_next_in_service(g, Some(x), expiration, jiffies) && !requeue {
                break;
            }
            cur = self.parent(x);
        }
    }

    /// `__bfq_deactivate_entity()`.
    fn deactivate_one(&mut self, e: Eid, ins_into_idle_tree: bool) -> bool {
        if !self.e[e as usize].on_st {
            return false;
        }
        let g = self.e[e as usize].sd as usize;
        let in_service = self.sd[g].in_service == Some(e);
        let service = self.e[e as usize].service;
        self.calc_finish(e, service);
        if in_service {
            self.sd[g].in_service = None;
        } else {
            self.e[e as usize].service = 0;
        }
        match self.e[e as usize].tree {
            On::Active => self.active_extract(e),
            On::Idle if !in_service => self.idle_extract(e),
            _ => {}
        }
        let vtime = self.st_of(e).vtime;
        if !ins_into_idle_tree || !bfq_gt(self.e[e as usize].finish, vtime) {
            self.forget_entity(e);
        } else {
            self.idle_insert(e);
        }
        true
    }

    /// `bfq_deactivate_entity()` from `e` up: each level deactivated while its
    /// scheduler is left with nothing, the rest requeued.
    pub fn deactivate(&mut self, e: Eid, ins_into_idle_tree: bool, expiration: bool, jiffies: u64) {
        let mut ins = ins_into_idle_tree;
        let mut cur = Some(e);
        while let Some(x) = cur {
            let parent = self.parent(x);
            let g = self.e[x as usize].sd as usize;
            if !self.deactivate_one(x, ins) {
                return;
            }
            if self.sd[g].next_in_service == Some(x) {
                self.update_next_in_service(g, None, expiration, jiffies);
            }
            if self.sd[g].next_in_service.is_some() || self.sd[g].in_service.is_some() {
                cur = parent;
                break;
            }
            ins = true;
            cur = parent;
        }
        while let Some(x) = cur {
            self.requeue(x);
            let g = self.e[x as usize].sd as usize;
            if !self.update_next_in_service(g, Some(x), expiration, jiffies) && !expiration {
                break;
            }
            cur = self.parent(x);
        }
    }

    /// `bfq_bfqq_served()`'s walk: `served` sectors charged to `e` and every entity
    /// above it, each tree's vtime advancing by them over its weight sum.
    pub fn served(&mut self, e: Eid, served: u64) {
        let mut cur = Some(e);
        while let Some(x) = cur {
            let (g, class) = (self.e[x as usize].sd as usize, self.e[x as usize].class);
            self.e[x as usize].service += served;
            let st = &mut self.sd[g].st[class];
            st.vtime = st.vtime.wrapping_add(bfq_delta(served, st.wsum));
            self.forget_idle(g, class);
            cur = self.parent(x);
        }
    }

    /// `bfq_get_next_queue()`: from the root down, each level's next entity set in
    /// service; the queue's entity, or None when nothing is active.
    pub fn get_next_queue(&mut self, jiffies: u64) -> Option<Eid> {
        let mut g = 0usize;
        let leaf = loop {
            let e = self.sd[g].next_in_service?;
            self.sd[g].in_service = Some(e);
            let no_longer_next = match self.e[e as usize].group {
                None => true,
                Some(child) => self.sd[child as usize].active_entities == 1,
            };
            if no_longer_next {
                self.active_extract(e);
            }
            match self.e[e as usize].group {
                Some(child) => g = child as usize,
                None => break e,
            }
        };
        let path: Vec<Eid> = self.path(leaf).collect();
        for x in path {
            let g = self.e[x as usize].sd as usize;
            if !self.update_next_in_service(g, None, false, jiffies) {
                break;
            }
        }
        Some(leaf)
    }

    /// `__bfq_bfqd_reset_in_service()`'s walk: nothing in service from `e` up.
    pub fn reset_in_service(&mut self, e: Eid) {
        let path: Vec<Eid> = self.path(e).collect();
        for x in path {
            let g = self.e[x as usize].sd as usize;
            self.sd[g].in_service = None;
        }
    }

    /// Whether `e` is on an active tree (a queue there is on `active_list`).
    pub fn on_active_tree(&self, e: Eid) -> bool {
        self.e[e as usize].tree == On::Active
    }

    /// When `e` went on its tree, as an order (later is larger): `active_list`'s
    /// order, most recently activated first.
    pub fn insert_order(&self, e: Eid) -> u64 {
        self.e[e as usize].seq
    }

    /// `next_queue_may_preempt()`.
    /// How far entity `e` is ahead of its service tree's virtual time: its virtual
    /// finish less the tree's vtime, as sectors at its weight (negative: behind; 0
    /// off every tree). Entities ahead wait for the ones behind.
    pub fn lead_sectors(&self, e: Eid) -> i64 {
        let en = &self.e[e as usize];
        if !en.on_st {
            return 0;
        }
        let vtime = self.sd[en.sd as usize].st[en.class].vtime;
        let lead = en.finish.wrapping_sub(vtime) as i64;
        ((i128::from(lead) * i128::from(en.weight)) >> WFQ_SERVICE_SHIFT) as i64
    }

    pub fn next_queue_may_preempt(&self) -> bool {
        self.sd[0].next_in_service != self.sd[0].in_service
    }
}
