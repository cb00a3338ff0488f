//! The block stack as the kernel's chain of hooks: the interfaces a policy implements
//! to sit where Linux calls it, and the [`Stack`] that holds the policies of one run.
//!
//! Design
//! ------
//! The pipeline (`crate::sim::engine`) knows these interfaces, never a policy. A bio
//! goes down the stack in the order of Linux 6.12 (`block/blk-core.c` `submit_bio()`,
//! `block/blk-mq.c` `blk_mq_submit_bio()`):
//!
//! 1. **bio-level policies** ([`BioPolicy`]), in `submit_bio()` order: priority
//!    assignment (`bio_set_ioprio()` + `blkcg_set_ioprio()`: `crate::ioprio`, first by
//!    its [`PolicyId`]), then blk-throttle
//!    (`blk_throtl_bio()`). A bio-level policy may *hold* a bio; it hands it back later
//!    from its timer ([`BlkcgPolicy::on_timer`]) and a kernel worker pushes it on from
//!    the next stage — that wait lands in clat.
//! 2. `blk_cgroup_bio_start()` (io.stat counting) and `blkcg_bio_issue_init()`: the
//!    bio's [`Bio::issue_time`] is stamped here, *after* the bio-level policies.
//! 3. split to `max_sectors_kb`; the remainder re-enters at step 1. A bio that can
//!    join a request waiting in the elevator does so here (`crate::sim::merge`) and
//!    goes no further; the chain hears of it ([`RqQos::merge`], `rq_qos_merge()`).
//! 4. **the rq-qos chain** ([`RqQos`]): `rq_qos_throttle()` walks it from the head;
//!    an entry may put the submitter to sleep (that wait lands in slat) and wakes it
//!    later by naming the bio in `woken`; the walk then goes on with the next entry.
//!    [`Stack::rq_qos_add`] pushes at the head, as `rq_qos_add()` does
//!    (`block/blk-rq-qos.c`), so the walk order is the reverse of creation order.
//! 5. tag allocation (`blk_mq_get_new_requests()`), limited by the elevator's
//!    [`Elevator::limit_depth`]; a submitter with no tag sleeps (slat); then
//!    [`RqQos::track`] (`rq_qos_track()`).
//! 6. **the elevator** ([`Elevator`]): `insert_requests`, then `dispatch_request` while
//!    `has_work`; with `none` (no elevator) a request goes to the driver at once;
//!    [`RqQos::issue`] as a request goes to the driver (`blk_mq_start_request()` →
//!    `rq_qos_issue()`).
//! 7. the device; on completion [`RqQos::done_bio`] (`bio_endio()` →
//!    `rq_qos_done_bio()`), [`RqQos::done`] (`__blk_mq_end_request()` →
//!    `rq_qos_done()`), [`Elevator::completed_request`]; on return to user space the
//!    submitter sleeps [`RqQos::user_delay`] (`blkcg_maybe_throttle_current()`), in slat.
//!
//! Every policy is also a [`BlkcgPolicy`] (the kernel's `struct blkcg_policy`): its
//! interface files, its `io.stat` keys, its timer, its rows for the timelines and its
//! trace lines, what it does when the disk goes away, and its figures and reports at
//! the end of a run. Its timer events are [`crate::sim::Event::Policy`]`(its id,
//! token)`; the stack routes them back by id, to a policy or the elevator.
//!
//! Adding a policy or elevator is its own folder plus one line in the registry
//! ([`registry`]): a [`registry::PolicyDef`] (or [`registry::ElevatorDef`]) that
//! carries its files, switches, kernel config options and timeline streams, whose
//! `configure` reads the scenario's `[kernel]` switches and whose setup builds it as
//! [`Hooks::Bio`] or [`Hooks::RqQos`] (or a `Box<dyn Elevator>`). Its rows are its
//! own [`TimelineRow`] type ([`stream`]); its timers are `Event::Policy(its id,
//! token)`. Nothing in this module names a policy.
//!
//! Where things live: the traits and [`Stack`] here; the elevator interface in
//! [`elevator`]; timeline rows in [`stream`]; the list of policies and elevators, and
//! the [`RqQosEntry`] enum the chain holds, in [`registry`]; each policy's side of the
//! traits in its own folder (`src/throttle/policy.rs`, `src/iocost/rqos.rs`, ...).

pub mod elevator;
pub mod registry;
pub mod stream;

use std::any::Any;

use crate::blkcg::{DeviceTable, KernelError};
use crate::sim::iostat::IostatRow;
use crate::sim::{Bio, BioId, BioSlab, EventQueue, Ns};
pub use elevator::{Elevator, FLUSHER, Request, TagAlloc};
pub use registry::RqQosEntry;
use registry::on_rq_qos_entry;
pub use stream::{AnyRow, TimelineRow};

/// Which policy or elevator an event, a hook or an interface file belongs to: each
/// declares its own in its folder, and the registry checks that no two share one.
/// Bio-level policies sort by it in `submit_bio()` order (blk-ioprio 0, blk-throttle
/// 1), which is the order [`Stack`] keeps them in; rq-qos entries take 16 + the
/// kernel's `enum rq_qos_id` (`RQ_QOS_WBT, RQ_QOS_LATENCY, RQ_QOS_COST`), elevators
/// 32 and up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyId(pub u8);

/// Where a run's timelines go as they are made: the pipeline and its policies hand
/// over every row and trace line once per sample tick (100 ms of simulated time) and
/// at the end, keeping none themselves, so memory is flat in simulated time. A
/// policy's rows are a [`TimelineRow`] of its own (see [`stream`]): nothing here
/// names one.
pub trait Recorder {
    /// One second of the device (`iostat -x 1`).
    fn iostat(&mut self, row: &IostatRow);
    /// One row of a policy's or elevator's timeline.
    fn row(&mut self, row: &dyn AnyRow);
    /// One policy trace line.
    fn trace(&mut self, line: String);
    /// Lines of a job's log (`write_iolog`, fio's bw / lat / iops logs), for the run
    /// folder's file `name`.
    fn job_log(&mut self, name: &str, lines: &str);
}

/// The cgroup side of a policy (`struct blkcg_policy`): what every policy has, wherever
/// it sits on the bio's path.
pub trait BlkcgPolicy: Any + Send {
    /// Its id: the events it pushes are `Event::Policy(id, token)`.
    fn id(&self) -> PolicyId;
    /// `echo line > file` in cgroup `cg` (0 = root) at `now`; the kernel's errno if it
    /// refuses. `file` is one of its registry entry's files.
    fn write(
        &mut self,
        now: Ns,
        file: &str,
        cg: u32,
        line: &str,
        devs: &DeviceTable,
        q: &mut EventQueue,
    ) -> Result<(), KernelError>;
    /// Its keys of cgroup `cg`'s `io.stat` line (`pd_stat_fn`), space-separated,
    /// without a leading space; empty for none.
    fn pd_stat(&self, _cg: u32) -> String {
        String::new()
    }
    /// Its timer fired with `token` (an event it pushed). Bios it hands back (a bio-level
    /// policy releasing held bios, an rq-qos entry waking sleepers) go into `out`.
    fn on_timer(
        &mut self,
        now: Ns,
        token: u64,
        q: &mut EventQueue,
        bios: &mut BioSlab,
        out: &mut Vec<BioId>,
    );
    /// Every sample tick (100 ms): take the rows it keeps per tick.
    fn sample(&mut self, _now: Ns) {}
    /// Whether its trace lines go anywhere; when not, it need not format them.
    fn set_tracing(&mut self, _on: bool) {}
    /// Hand every row and trace line made since the last call to `rec`.
    fn drain(&mut self, rec: &mut dyn Recorder);
    /// The disk is gone and its queue drained (`del_gendisk()`): release what it still
    /// holds (through its timer) and stop.
    fn exit(&mut self, now: Ns, q: &mut EventQueue);
    /// Figures of the whole run, by name (`iocost.no_completion_resets`): what a
    /// seed's bands and `sweep`'s records read. Called once the run has ended.
    fn figures(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// Its views of the run's end at `now` as files of a run's folder (blk-iocost's
    /// `iocost_monitor.txt`), each one of its registry entry's `reports`; `json` asks
    /// for the JSON ones too. Called once the run has ended, by callers that show them.
    fn reports(&mut self, _now: Ns, _json: bool) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Its line of the run's summary (what it did over the run), if it has one.
    /// Called once the run has ended.
    fn summary_line(&self) -> Option<String> {
        None
    }
    /// Whether, in its present state, it holds writeback throttling off
    /// (`wbt_disable_default()`: blk-iocost while enabled, from 6.2).
    fn disables_wbt(&self) -> bool {
        false
    }
}

/// A bio-level policy, called from `submit_bio()` before the split (blk-throttle).
pub trait BioPolicy: BlkcgPolicy {
    /// The bio `id` enters the policy at `now`: true if it passes on at once; false if
    /// the policy holds it (it hands it back later from [`BlkcgPolicy::on_timer`]).
    fn submit(&mut self, now: Ns, id: BioId, bio: &mut Bio, q: &mut EventQueue) -> bool;
}

/// Which optional hooks an rq-qos entry has. The kernel calls only the ops an entry
/// sets (`if (rqos->ops->track)` in `__rq_qos_track()`), and so does the pipeline:
/// a hook no entry has costs nothing per I/O.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RqQosOps {
    pub merge: bool,
    pub track: bool,
    pub issue: bool,
    pub done_bio: bool,
    pub done: bool,
    pub user_delay: bool,
}

impl RqQosOps {
    /// The hooks either has.
    fn union(self, o: RqQosOps) -> RqQosOps {
        RqQosOps {
            merge: self.merge || o.merge,
            track: self.track || o.track,
            issue: self.issue || o.issue,
            done_bio: self.done_bio || o.done_bio,
            done: self.done || o.done,
            user_delay: self.user_delay || o.user_delay,
        }
    }
}

/// An entry of the rq-qos chain (`struct rq_qos_ops`); the hooks are called in the
/// chain's walk order, head first. `throttle` every entry has; the others are called
/// where [`RqQos::ops`] says the entry has them.
pub trait RqQos: BlkcgPolicy {
    /// Which of the optional hooks below it has.
    fn ops(&self) -> RqQosOps;
    /// `rq_qos_throttle()`: true if bio `id` goes on now; false if its submitter sleeps
    /// until the entry names `id` in `woken` (from here or from its timer). Sleepers
    /// this call wakes go into `woken` (they go on before this submitter).
    fn throttle(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &mut BioSlab,
        q: &mut EventQueue,
        woken: &mut Vec<BioId>,
    ) -> bool;
    /// `rq_qos_merge()`: bio `id` is about to join request `rq` (as it is before the
    /// bio), instead of taking a request of its own (`crate::sim::merge`).
    fn merge(
        &mut self,
        _now: Ns,
        _rq: &Request,
        _id: BioId,
        _bios: &mut BioSlab,
        _q: &mut EventQueue,
    ) {
    }
    /// `rq_qos_track()`: the bio got request `rq` (a tag).
    fn track(&mut self, _now: Ns, _rq: &Request, _bio: &Bio) {}
    /// `rq_qos_issue()`: `rq` goes to the driver.
    fn issue(&mut self, _now: Ns, _rq: &Request) {}
    /// `rq_qos_done_bio()`: bio `id` completed. Sleepers this wakes (blk-iolatency's
    /// `wake_up()` of a freed slot) go into `woken`; they go on once the completion is
    /// done.
    fn done_bio(
        &mut self,
        _now: Ns,
        _id: BioId,
        _bios: &BioSlab,
        _q: &mut EventQueue,
        _woken: &mut Vec<BioId>,
    ) {
    }
    /// `rq_qos_done()`: the request completed, or was freed unstarted (merged into
    /// another). Sleepers this wakes (wbt's `wake_up_all()` of a freed slot) go into
    /// `woken`; they go on once the completion is done.
    fn done(&mut self, _now: Ns, _rq: &Request, _q: &mut EventQueue, _woken: &mut Vec<BioId>) {}
    /// `balance_dirty_pages()` put a writer of cgroup `cg` to sleep on this disk
    /// (`bdi->last_bdp_sleep = jiffies`): wbt reads it as "someone waits for
    /// writeback". Rare (once per pause), so every entry hears it.
    fn bdp_sleep(&mut self, _now: Ns, _cg: u32) {}
    /// `wbt_enable_default()` (`enable`) / `wbt_disable_default()`: what the rest of
    /// the queue asks of writeback throttling once a policy's state changed (blk-iocost
    /// turns it off while enabled, [`BlkcgPolicy::disables_wbt`]). Only wbt listens.
    fn wbt_default(&mut self, _enable: bool) {}
    /// `blkcg_maybe_throttle_current()`: how long a submitter of cgroup `cg` sleeps on
    /// its return to user space (in slat). The stack sleeps the largest any entry asks.
    fn user_delay(&mut self, _now: Ns, _cg: u32) -> Ns {
        0
    }
    /// A bio of cgroup `cg` will come to `throttle` soon: hint the cache lines it will
    /// read for that cgroup (`sim::prefetch`). A hint only, never a change of state.
    fn prefetch(&self, _cg: u32) {}
    /// A request of cgroup `cg` went to the driver: hint the cache lines `done_bio`
    /// and `done` will read for it when it completes. A hint only.
    fn prefetch_done(&self, _cg: u32) {}
    /// Its timer event with `token` is the next to fire: hint the cache lines that
    /// event will read first, and say which cgroup's sleepers it may wake (for the
    /// pipeline to hint theirs). A hint only.
    fn prefetch_timer(&self, _token: u64) -> Option<u32> {
        None
    }
}

/// A policy's one timer (`struct timer_list`) as events `Event::Policy(id, expiry)`:
/// the expiry pushed is the event's token, so a timer re-armed to the same expiry is
/// pushed once, and an event for an expiry since moved or cancelled is ignored.
#[derive(Debug, Default)]
pub struct PolicyTimer {
    pushed: Option<Ns>,
    /// Shut down with its queue (`timer_shutdown_sync()`): it never fires again.
    stopped: bool,
}

impl PolicyTimer {
    /// `mod_timer()`: push the event for `at` (the policy's pending expiry) unless it
    /// is pushed already.
    pub fn arm(&mut self, id: PolicyId, at: Option<Ns>, now: Ns, q: &mut EventQueue) {
        if let Some(at) = at
            && self.pushed != Some(at)
        {
            self.pushed = Some(at);
            q.push(at.max(now), crate::sim::Event::Policy(id, at));
        }
    }

    /// The event with `token` fired: whether it is the timer's (then it is no longer
    /// pending), not a stale one nor one of a timer shut down.
    pub fn fires(&mut self, token: u64) -> bool {
        if self.stopped || self.pushed != Some(token) {
            return false;
        }
        self.pushed = None;
        true
    }

    /// `timer_shutdown_sync()`: the queue is going away; nothing it pushed fires.
    pub fn shutdown(&mut self) {
        self.stopped = true;
    }

    /// `del_timer()`: the pushed event, if any, is stale from now on.
    pub fn cancel(&mut self) {
        self.pushed = None;
    }
}

/// A built policy, by where it sits.
pub enum Hooks {
    Bio(Box<dyn BioPolicy>),
    RqQos(RqQosEntry),
}

/// The per-I/O hooks of [`RqQos`], called on the entry's concrete type (see
/// [`RqQosEntry`]); the pipeline's `rq_qos_*()` walks call these.
impl RqQosEntry {
    /// [`RqQos::throttle`].
    #[inline(always)]
    pub fn throttle(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &mut BioSlab,
        q: &mut EventQueue,
        woken: &mut Vec<BioId>,
    ) -> bool {
        on_rq_qos_entry!(self, p => RqQos::throttle(&mut **p, now, id, bios, q, woken))
    }

    /// [`RqQos::merge`].
    #[inline(always)]
    pub fn merge(
        &mut self,
        now: Ns,
        rq: &Request,
        id: BioId,
        bios: &mut BioSlab,
        q: &mut EventQueue,
    ) {
        on_rq_qos_entry!(self, p => RqQos::merge(&mut **p, now, rq, id, bios, q))
    }

    /// [`RqQos::track`].
    #[inline(always)]
    pub fn track(&mut self, now: Ns, rq: &Request, bio: &Bio) {
        on_rq_qos_entry!(self, p => RqQos::track(&mut **p, now, rq, bio))
    }

    /// [`RqQos::issue`].
    #[inline(always)]
    pub fn issue(&mut self, now: Ns, rq: &Request) {
        on_rq_qos_entry!(self, p => RqQos::issue(&mut **p, now, rq))
    }

    /// [`RqQos::done_bio`].
    #[inline(always)]
    pub fn done_bio(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &BioSlab,
        q: &mut EventQueue,
        woken: &mut Vec<BioId>,
    ) {
        on_rq_qos_entry!(self, p => RqQos::done_bio(&mut **p, now, id, bios, q, woken))
    }

    /// [`RqQos::done`].
    #[inline(always)]
    pub fn done(&mut self, now: Ns, rq: &Request, q: &mut EventQueue, woken: &mut Vec<BioId>) {
        on_rq_qos_entry!(self, p => RqQos::done(&mut **p, now, rq, q, woken))
    }

    /// [`RqQos::user_delay`].
    #[inline(always)]
    pub fn user_delay(&mut self, now: Ns, cg: u32) -> Ns {
        on_rq_qos_entry!(self, p => RqQos::user_delay(&mut **p, now, cg))
    }

    /// [`RqQos::prefetch`].
    #[inline(always)]
    pub fn prefetch(&self, cg: u32) {
        on_rq_qos_entry!(self, p => RqQos::prefetch(&**p, cg))
    }

    /// [`RqQos::prefetch_done`].
    #[inline(always)]
    pub fn prefetch_done(&self, cg: u32) {
        on_rq_qos_entry!(self, p => RqQos::prefetch_done(&**p, cg))
    }

    /// [`RqQos::prefetch_timer`].
    #[inline(always)]
    pub fn prefetch_timer(&self, token: u64) -> Option<u32> {
        on_rq_qos_entry!(self, p => RqQos::prefetch_timer(&**p, token))
    }
}

/// The policies of one run and its elevator.
pub struct Stack {
    /// Bio-level policies in `submit_bio()` order.
    pub(crate) bio: Vec<Box<dyn BioPolicy>>,
    /// The rq-qos chain, head first.
    pub(crate) rq_qos: Vec<RqQosEntry>,
    /// The optional hooks any entry of the chain has.
    pub(crate) rq_qos_ops: RqQosOps,
    /// The I/O scheduler; None is `none` (no elevator: requests go to the driver as
    /// soon as they have a tag).
    pub(crate) elevator: Option<Box<dyn Elevator>>,
}

impl Default for Stack {
    /// No policy; the elevator `none`.
    fn default() -> Self {
        Stack {
            bio: Vec::new(),
            rq_qos: Vec::new(),
            rq_qos_ops: RqQosOps::default(),
            elevator: None,
        }
    }
}

impl Stack {
    /// No policy and no elevator: bios go from the submitter to the tags untouched.
    pub fn is_bare(&self) -> bool {
        self.bio.is_empty() && self.rq_qos.is_empty() && self.elevator.is_none()
    }

    /// Add a policy: a bio-level one at its place in `submit_bio()` order, an rq-qos
    /// entry at the head of the chain.
    pub fn add(&mut self, h: Hooks) {
        match h {
            Hooks::Bio(p) => {
                let at = self.bio.partition_point(|x| x.id() < p.id());
                self.bio.insert(at, p);
            }
            Hooks::RqQos(p) => self.rq_qos_add(p),
        }
    }

    /// `rq_qos_add()`: the new entry becomes the head of the chain.
    pub fn rq_qos_add(&mut self, p: RqQosEntry) {
        self.rq_qos_ops = self.rq_qos_ops.union(p.get_ref().ops());
        self.rq_qos.insert(0, p);
    }

    /// Every policy, bio-level ones first, then the chain from its head.
    pub fn policies(&self) -> impl Iterator<Item = &dyn BlkcgPolicy> {
        let bio = self.bio.iter().map(|p| &**p as &dyn BlkcgPolicy);
        bio.chain(self.rq_qos.iter().map(|p| p.get_ref() as &dyn BlkcgPolicy))
    }

    /// [`Stack::policies`], mutable.
    pub fn policies_mut(&mut self) -> impl Iterator<Item = &mut dyn BlkcgPolicy> {
        let bio = self
            .bio
            .iter_mut()
            .map(|p| &mut **p as &mut dyn BlkcgPolicy);
        bio.chain(
            self.rq_qos
                .iter_mut()
                .map(|p| p.get() as &mut dyn BlkcgPolicy),
        )
    }

    /// The policy of concrete type `T`, if the run has it (a report that shows one
    /// policy's internals, such as blk-iocost's monitor).
    pub fn policy<T: BlkcgPolicy>(&self) -> Option<&T> {
        self.policies()
            .find_map(|p| (p as &dyn Any).downcast_ref::<T>())
    }

    /// [`Stack::policy`], mutable.
    pub fn policy_mut<T: BlkcgPolicy>(&mut self) -> Option<&mut T> {
        self.policies_mut()
            .find_map(|p| (p as &mut dyn Any).downcast_mut::<T>())
    }

    /// `echo line > file` in cgroup `cg`, to the policy that owns `file`; an error if
    /// no policy of the run owns it.
    pub fn write(
        &mut self,
        now: Ns,
        file: &str,
        cg: u32,
        line: &str,
        devs: &DeviceTable,
        q: &mut EventQueue,
    ) -> Result<(), String> {
        let owner = registry::cgroup_file(file).map(|(o, _)| o);
        if let Some(def) = owner.and_then(|o| o.elevator) {
            // an elevator's cgroup side: to the run's elevator if it is this one
            return match self.elevator.as_mut().filter(|e| e.id() == def.id) {
                Some(e) => e.write(now, file, cg, line, devs, q),
                None => (def.write_elsewhere)(file, line, devs),
            }
            .map_err(|e| e.to_string());
        }
        let id = owner.map(|o| o.id);
        let p = self
            .policies_mut()
            .find(|p| Some(p.id()) == id)
            .ok_or_else(|| format!("no policy of this run owns {file}"))?;
        p.write(now, file, cg, line, devs, q)
            .map_err(|e| e.to_string())?;
        // blk-iocost's ioc_qos_write() ends in wbt_disable_default() or
        // wbt_enable_default()
        let off = self.policies().any(|p| p.disables_wbt());
        for p in &mut self.rq_qos {
            p.get().wbt_default(!off);
        }
        Ok(())
    }

    /// `balance_dirty_pages()` put a writer of cgroup `cg` to sleep ([`RqQos::bdp_sleep`]).
    pub fn bdp_sleep(&mut self, now: Ns, cg: u32) {
        for p in &mut self.rq_qos {
            p.get().bdp_sleep(now, cg);
        }
    }

    /// Every policy's keys of cgroup `cg`'s `io.stat` line, each with a leading space.
    pub fn pd_stat(&self, cg: u32) -> String {
        let mut s = String::new();
        for p in self.policies() {
            let k = p.pd_stat(cg);
            if !k.trim().is_empty() {
                s.push(' ');
                s.push_str(k.trim());
            }
        }
        s
    }
}
