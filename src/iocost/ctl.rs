//! The running controller: per-iocg vtime, the issue path, wait queues and the period
//! timer, mirroring `ioc_rqos_throttle()`, `iocg_kick_waitq()`, `ioc_rqos_done()` and
//! `ioc_timer_fn()`.
//!
//! - [`Iocg`]: one cgroup's state (vtime, done_vtime, cursor, FIFO waiters, usage).
//! - [`Runtime`]: the device clock (`period_at`, `period_at_vtime`, effective rate,
//!   `vtime_err`), busy_level, completion counters, the active list, the hierarchy
//!   cache and the observability buffers (rows, trace). Trace lines are formatted
//!   only while [`Iocost::set_tracing`] says something reads them.
//! - The period timer walks only the active list (`ioc->active_iocgs`: an activation
//!   appends, `ioc_check_iocgs()` removes the idle), in cgroup order; stat flushing
//!   and donation visit the ancestors of active leaves only, so a period costs
//!   O(active × depth) however many cgroups exist.
//! - Events: the period timer uses token `PERIOD_BIT | seq`; an iocg's wait-queue timer
//!   uses `(cg << 32) | seq`; the tick `TICK_BIT`. Stale tokens (older seq) are ignored.
//! - Wait-queue timers are hrtimers with a range (`hrtimer_start_range_ns()`, slack 1%
//!   of the period). In `iocost.timer = "jiffies"` mode (the default) each is queued at
//!   its hard expiry: alone on an idle CPU of its own, that is when it runs. With one
//!   CPU (`[host] cpus = 1`, a qemu guest) the timers share its hrtimer queue: each is
//!   also listed in `Runtime::armed` by its soft expiry, and whichever interrupt
//!   comes first after a soft expiry runs it — another wait timer's hard expiry or the
//!   busy CPU's tick at a jiffy boundary — with every other one whose soft expiry has
//!   passed (`__hrtimer_run_queues()`): late and in batches, as traced on a real
//!   kernel (docs/validation.md §17). `"exact"`: each at its soft expiry.
//!
//! Donation: the period timer classifies donors against `current_hweight_max()` and
//! hands them to `Hier::transfer_surpluses` (general hierarchical form); an in-period
//! `adjust_inuse_and_calc_cost()` raises a low donor's inuse once its margin has fallen
//! below the `saved_margin` of its last saving propagation (`propagate_saving`);
//! a reactivated iocg starts from the inuse it went idle with (`last_inuse`, kept by
//! `Hier::propagate`). Budget a donor or an idle iocg throws away is `vtime_err`, paid
//! back by running the device clock faster next period (`ioc_refresh_vrate()`).
//!
//! Debt: a REQ_META bio over budget is issued at once and charged as `abs_vdebt`
//! (`iocg_incur_debt()`); kicks pay it from the budget first (`iocg_pay_debt()`) and
//! refresh the issuer delay (`iocg_kick_delay()`), which [`Iocost::user_delay`] hands
//! to the submitter on its return to user space; the period timer forgives debt on an
//! idle device (`ioc_forgive_debts()`, arithmetic in `debt.rs`).
//!
//! Disk removal: [`Iocost::exit`] stops the period timer once the queue has drained
//! (no waiter is left by then: waiting bios hold the queue and drain first).
//!
//! Not modelled: autop switching. `blkcg_scale_delay()` needs nothing: blk-iocost sets
//! its delay through `blkcg_set_delay()`, whose negative `use_delay` exempts the blkg
//! from that decay and from the 250 ms clamp.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::debt::{Forgiveness, MIN_DELAY, decayed_delay, delay_for_overage, halve};
use super::hweight::{Donor, Hier, WEIGHT_ONE};
use super::period::{
    LatStats, adjust_base_vrate, keeps_base_vrate, next_busy_level, vrate_adj_line,
};
use super::{Iocost, TimerMode, TraceVrate};
use crate::sim::Ns;
use crate::sim::bio::{Bio, BioId, BioSlab, Dir};
use crate::sim::inline_deque::InlineDeque;
use crate::sim::prefetch::{prefetch, prefetch_span};
use crate::sim::queue::{Event, EventQueue};

const PERIOD_BIT: u64 = 1 << 63;
const TICK_BIT: u64 = 1 << 62;
const MAX_LAGGING_PERIODS: i64 = 10;

/// Queues iocg `cg`'s wait timer for soft expiry `at` (`hrtimer_start_range_ns()` in
/// `iocg_kick_waitq()`, re-queueing it if it was queued): in `"jiffies"` mode at its hard
/// expiry `at + slack`, listed by its soft one for the interrupts before that, with the
/// tick running while any is queued; in `"exact"` mode at `at`.
fn arm_wait_timer(
    rt: &mut Runtime,
    timer: TimerMode,
    cg: u32,
    at: Ns,
    slack: Ns,
    q: &mut EventQueue,
) {
    let g = &mut rt.iocgs[cg as usize];
    g.timer_seq += 1;
    let ev = Event::Policy(
        super::rqos::ID,
        (u64::from(cg) << 32) | (g.timer_seq & 0xffff_ffff),
    );
    g.timer_at = Some(at);
    let TimerMode::Jiffies { hz, one_cpu } = timer else {
        q.push_timer(at, ev);
        return;
    };
    // on an idle CPU of its own: the clock event is programmed for the hard expiry
    q.push_timer(at + slack, ev);
    if !one_cpu {
        return;
    }
    rt.arm_seq += 1;
    g.timer_armed_seq = rt.arm_seq;
    rt.armed.push(Reverse((at, rt.arm_seq, cg)));
    if rt.tick_at.is_none() {
        arm_tick(rt, hz, q);
    }
}

/// When jiffy `j` begins at `hz` (the first nanosecond not before `j / hz` s).
fn jiffy_start(j: u64, hz: u64) -> Ns {
    (j * 1_000_000_000).div_ceil(hz)
}

/// The next tick (`tick_sched_timer`, an hrtimer at every jiffy boundary).
fn arm_tick(rt: &mut Runtime, hz: u32, q: &mut EventQueue) {
    let hz = u64::from(hz.max(1));
    let at = jiffy_start(q.now() * hz / 1_000_000_000 + 1, hz);
    rt.tick_at = Some(at);
    q.push_timer(at, Event::Policy(super::rqos::ID, TICK_BIT));
}

/// One cgroup on the device (`struct ioc_gq`). Laid out by hand: with thousands of
/// cgroups each I/O finds its iocg cold, so what the issue and completion paths read
/// per I/O fills its first cache line (`align(64)` starts every iocg on one), the wait
/// queue's header and timer the second, and what the rest of `iocg_kick_waitq()` reads
/// (the delay, the wait's start and the counters it adds to) the third; the period
/// timer's fields follow.
#[derive(Debug, Clone, Default)]
#[repr(C, align(64))]
pub struct Iocg {
    // --- per I/O: the first line
    pub active: bool,
    /// `blkcg_schedule_throttle()` called: the next issuer returning to user space
    /// sleeps for the blkg delay.
    throttle_pending: bool,
    pub vtime: i64,
    pub done_vtime: i64,
    cursor: u64,
    active_period: u64,
    abs_vusage: u64,
    /// `abs_vdebt`: absolute cost issued on credit (REQ_META bios over budget).
    pub abs_vdebt: u64,
    /// `saved_margin`: vnow - vtime at the last propagation that saved it; the
    /// in-period inuse bump waits until the margin has deteriorated below it.
    saved_margin: i64,
    // --- per I/O, the second line
    /// The waiting bios and their absolute cost; nearly always one at most, held in
    /// the iocg's own line.
    waiters: InlineDeque<(BioId, u64), 1>,
    activated_at_us: i64,
    timer_seq: u64,
    /// The wait timer's soft expiry while it is queued (`hrtimer_get_softexpires()`).
    timer_at: Option<Ns>,
    // --- each wait: the third line
    /// Its place among equal soft expiries in [`Runtime::armed`] (FIFO, as the
    /// kernel's timerqueue keeps equal keys).
    timer_armed_seq: u64,
    /// `delay` (us): the issuer delay.
    pub delay: u64,
    /// `wait_since` (us).
    wait_since: Option<i64>,
    /// Cumulative counters (what io.stat shows at the last flush is `last_stat`).
    stat: IocgStat,
    // --- the rest
    last_abs_vusage: u64,
    usage_delta_us: u64,
    /// `delay_at` (us): when the delay was set.
    delay_at: i64,
    /// The blkg's `delay_nsec` while `use_delay` is set (`blkcg_set_delay()`), else 0.
    blkg_delay_ns: u64,
    /// `indebt_since`, `indelay_since` (us).
    indebt_since: Option<i64>,
    indelay_since: Option<i64>,
    last_stat: IocgStat,
}

// what every I/O touches stays in the first cache line, a wait's in the next two
const _: () = assert!(std::mem::offset_of!(Iocg, waiters) <= 64);
const _: () = assert!(std::mem::offset_of!(Iocg, timer_armed_seq) == 128);
const _: () = assert!(std::mem::offset_of!(Iocg, last_abs_vusage) == 192);

/// `struct iocg_stat`: cumulative `cost.usage`, `cost.wait`, `cost.indebt`,
/// `cost.indelay`, all in us.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IocgStat {
    pub usage_us: u64,
    pub wait_us: u64,
    pub indebt_us: u64,
    pub indelay_us: u64,
}

/// Per-cgroup columns of a [`PeriodRow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgRow {
    pub cg: u32,
    pub active: u64,
    pub inuse: u64,
    pub hwa: u64,
    pub hwi: u64,
    pub budget_us: i64,
    pub inflight_pct: u64,
    pub usage_pct: u64,
    pub waiters: usize,
    pub debt: u64,
    pub delay: u64,
}

/// One period tick (spec §8).
#[derive(Debug, Clone, PartialEq)]
pub struct PeriodRow {
    pub t: Ns,
    pub period_us: i64,
    pub vrate_base_pct: f64,
    pub vrate_eff_pct: f64,
    pub busy_before: i32,
    pub busy_after: i32,
    pub nr_done: u64,
    pub missed_ppm: [u32; 2],
    pub rq_wait_pct: u32,
    pub nr_lagging: u32,
    pub nr_shortages: u32,
    pub nr_donors: u32,
    pub cgroups: Vec<CgRow>,
}

/// The device-wide runtime state.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub iocgs: Vec<Iocg>,
    /// `ioc->active_iocgs`: the active iocgs, which the period timer walks instead of
    /// every cgroup. Walked in cgroup order (the kernel's list is newest first: the
    /// same set; cgroup order keeps trace lines and same-instant wake-ups as they
    /// were); an activation appends, and `active_sorted` says whether it still ascends.
    active_iocgs: Vec<u32>,
    active_sorted: bool,
    pub(super) hier: Hier,
    running: bool,
    period_seq: u64,
    period_at_us: i64,
    period_at_vtime: i64,
    pub(super) vtime_rate: i64,
    vtime_err: i64,
    pub busy_level: i32,
    cur_period: u64,
    met: [u64; 2],
    missed: [u64; 2],
    rq_wait_ns: u64,
    last: ([u64; 2], [u64; 2], u64),
    /// iocgs whose `throttle_pending` is set.
    nr_throttle_pending: u32,
    /// Earlier waiters committed by a kick on the submit path, with their cost; handed
    /// out (and their cost stored) at the next `on_event`.
    pending_woken: Vec<(BioId, u64)>,
    /// Queued wait timers by soft expiry, then arming order (`"jiffies"` timer mode):
    /// what an hrtimer interrupt runs (`__hrtimer_run_queues()`). A re-armed timer's
    /// old entry stays until it comes up, then is skipped (its iocg's `timer_at` and
    /// `timer_armed_seq` no longer match it).
    armed: BinaryHeap<Reverse<(Ns, u64, u32)>>,
    arm_seq: u64,
    /// The next tick, while a wait timer is queued.
    tick_at: Option<Ns>,
    dfgv: Forgiveness,
    rows: Vec<PeriodRow>,
    trace: Vec<String>,
    /// Whether anything reads the trace lines (`Iocost::set_tracing`): when not, they
    /// are not formatted at all.
    tracing: bool,
}

impl Runtime {
    pub fn new(nr_cgroups: usize, hier: Hier, vrate: u64) -> Self {
        Runtime {
            iocgs: vec![Iocg::default(); nr_cgroups],
            active_iocgs: Vec::new(),
            active_sorted: true,
            hier,
            running: false,
            period_seq: 0,
            period_at_us: 0,
            period_at_vtime: 0,
            vtime_rate: vrate as i64,
            vtime_err: 0,
            busy_level: 0,
            cur_period: 0,
            met: [0; 2],
            missed: [0; 2],
            rq_wait_ns: 0,
            last: ([0; 2], [0; 2], 0),
            nr_throttle_pending: 0,
            pending_woken: Vec::new(),
            armed: BinaryHeap::new(),
            arm_seq: 0,
            tick_at: None,
            dfgv: Forgiveness::default(),
            rows: Vec::new(),
            trace: Vec::new(),
            tracing: true,
        }
    }
}

/// What `ioc_check_iocgs()` made of one active iocg.
enum Checked {
    Active,
    /// Still active, with debt or an issuer delay after its kick.
    Debtor,
    /// Deactivated: off the active list.
    Idle,
}

fn us(now: Ns) -> i64 {
    (now / 1000) as i64
}

/// iocost_monitor's `debt_ms`: abs_vdebt in ms of device time at 100%.
fn debt_ms(abs_vdebt: u64) -> f64 {
    abs_vdebt as f64 / super::model::VTIME_PER_USEC as f64 / 1000.0
}

/// `abs_cost_to_cost()`.
fn scale_up(abs: u64, hw: u64) -> i64 {
    (abs * WEIGHT_ONE).div_ceil(hw) as i64
}

/// `cost_to_abs_cost()`.
fn scale_down(cost: u64, hw: u64) -> u64 {
    cost * hw / WEIGHT_ONE
}

impl Iocost {
    /// `propagate_weights(iocg, active, inuse, save=true)`: also records the margin
    /// (`saved_margin`) that later in-period inuse adjustments compare against.
    pub(super) fn propagate_saving(&mut self, cg: u32, active: u64, inuse: u64, vnow: i64) {
        self.rt.hier.propagate(cg, active, inuse);
        let g = &mut self.rt.iocgs[cg as usize];
        g.saved_margin = vnow - g.vtime;
    }

    pub(super) fn vnow(&self, now: Ns) -> i64 {
        let rt = &self.rt;
        rt.period_at_vtime + (us(now) - rt.period_at_us) * rt.vtime_rate
    }

    fn arm_period(&mut self, now: Ns, q: &mut EventQueue) {
        let p = self.derived.period_us;
        let at = match self.cfg.timer {
            TimerMode::Exact => now + p * 1000,
            // ioc_start_period(): mod_timer(jiffies + usecs_to_jiffies(period_us)); the
            // timer wheel then fires one jiffy after that (calc_index() rounds the
            // expiry up so that no timer fires early) — validated on 6.1 at HZ=250:
            // a 10 ms period runs every 16 ms
            TimerMode::Jiffies { hz, .. } => {
                let hz = u64::from(hz.max(1));
                let j = now * hz / 1_000_000_000 + (p * hz).div_ceil(1_000_000) + 1;
                jiffy_start(j, hz)
            }
        };
        self.rt.period_seq += 1;
        q.push(
            at,
            Event::Policy(super::rqos::ID, PERIOD_BIT | self.rt.period_seq),
        );
    }

    /// Mirrors `iocg_activate()`.
    fn activate(&mut self, now: Ns, cg: u32, q: &mut EventQueue) {
        let cur = self.rt.cur_period;
        if self.rt.iocgs[cg as usize].active {
            self.rt.iocgs[cg as usize].active_period = cur;
            return;
        }
        if !self.rt.running {
            let vnow = self.vnow(now);
            self.rt.running = true;
            self.rt.dfgv.reset(us(now));
            self.rt.period_at_us = us(now);
            self.rt.period_at_vtime = vnow;
            self.arm_period(now, q);
        }
        let vnow = self.vnow(now);
        let target = self.derived.margins.target as i64;
        let g = &mut self.rt.iocgs[cg as usize];
        let delta = vnow - target - g.vtime;
        g.vtime += delta;
        g.done_vtime += delta;
        g.active = true;
        // list_add(&iocg->active_list, &ioc->active_iocgs)
        if self.rt.active_iocgs.last().is_some_and(|&last| last > cg) {
            self.rt.active_sorted = false;
        }
        self.rt.active_iocgs.push(cg);
        let last_period = std::mem::replace(&mut g.active_period, cur);
        // back at the inuse it had when it went idle (`last_inuse ?: weight`)
        let w = u64::from(self.weight(cg)) * WEIGHT_ONE;
        self.rt.hier.set_weight(cg, self.weight(cg));
        let last = self.rt.hier.last_inuse(cg);
        self.propagate_saving(cg, w, if last > 0 { last } else { w }, vnow);
        let g = &mut self.rt.iocgs[cg as usize];
        g.activated_at_us = us(now);
        let vtime = g.vtime;
        self.trace_state("iocost_iocg_activate", cg, now, vnow, last_period, vtime);
    }

    /// The `iocost_iocg_state` tracepoints (activate, idle), as their TP_printk.
    fn trace_state(&mut self, ev: &str, cg: u32, now: Ns, vnow: i64, last: u64, vtime: i64) {
        if !self.rt.tracing {
            return;
        }
        let (hwa, hwi) = self.rt.hier.hweight(cg);
        let line = format!(
            "{ev}: {} now={}:{vnow} vrate={} period={last}->{} vtime={vtime} weight={}/{} hweight={hwi}/{hwa}",
            self.tp_head(cg),
            us(now),
            self.vrate,
            self.rt.cur_period,
            self.rt.hier.inuse(cg),
            u64::from(self.weight(cg)) * WEIGHT_ONE,
        );
        self.rt.trace.push(line);
    }

    /// The `iocg_inuse_update` tracepoints (shortage, transfer, adjust).
    fn trace_inuse(&mut self, ev: &str, cg: u32, now: Ns, inuse: (u64, u64), hwi: (u64, u64)) {
        if !self.rt.tracing {
            return;
        }
        let line = format!(
            "{ev}: {} now={} inuse={}->{} hw_inuse={}->{}",
            self.tp_head(cg),
            us(now),
            inuse.0,
            inuse.1,
            hwi.0,
            hwi.1
        );
        self.rt.trace.push(line);
    }

    /// Hints the lines `throttle()` reads for a bio of `cg`: its iocg's first line and
    /// its node of the weight tree.
    #[inline]
    pub fn prefetch(&self, cg: u32) {
        self.prefetch_done(cg);
        self.rt.hier.prefetch(cg);
    }

    /// Hints the line a completion of `cg` updates: its iocg's first (`done_vtime`).
    #[inline]
    pub fn prefetch_done(&self, cg: u32) {
        if let Some(g) = self.rt.iocgs.get(cg as usize) {
            prefetch(g);
        }
    }

    /// Hints the lines a wait timer with `token` reads as it fires (`iocg_kick_waitq()`):
    /// its iocg's first three lines and its node of the weight tree; its cgroup, whose
    /// waiters it may wake.
    #[inline]
    pub fn prefetch_timer(&self, token: u64) -> Option<u32> {
        if token & (PERIOD_BIT | TICK_BIT) != 0 {
            return None;
        }
        let cg = (token >> 32) as u32;
        let g = self.rt.iocgs.get(cg as usize)?;
        prefetch_span(&g.active, &g.stat);
        self.rt.hier.prefetch(cg);
        Some(cg)
    }

    /// `ioc_rqos_throttle()`: true = issue now.
    pub fn throttle(&mut self, now: Ns, id: BioId, bio: &mut Bio, q: &mut EventQueue) -> bool {
        bio.iocost_cost = 0;
        if !self.enabled() || bio.cgroup == 0 || bio.cgroup as usize >= self.rt.iocgs.len() {
            return true;
        }
        let cg = bio.cgroup;
        let cursor = self.rt.iocgs[cg as usize].cursor;
        let abs = self
            .derived
            .cost
            .abs_cost(bio.dir, bio.sector, bio.bytes, cursor);
        if abs == 0 {
            return true;
        }
        self.activate(now, cg, q);
        self.rt.iocgs[cg as usize].cursor = bio.sector + (bio.bytes >> 9);
        let vnow = self.vnow(now);
        let cost = self.adjust_inuse_and_calc_cost(now, cg, abs, vnow);
        let g = &mut self.rt.iocgs[cg as usize];
        if g.waiters.is_empty() && g.abs_vdebt == 0 && g.vtime + cost <= vnow {
            g.vtime += cost;
            g.abs_vusage += abs;
            bio.iocost_cost = cost as u64;
            return true;
        }
        // REQ_META (bio_issue_as_root_blkg()): issue now, on credit
        if bio.meta {
            self.incur_debt_and_delay(now, cg, abs);
            return true;
        }
        self.rt.iocgs[cg as usize].waiters.push_back((id, abs));
        // a waiting cgroup never donates: inuse back to active (debt owns a debtor's)
        let active = self.rt.hier.active(cg);
        if self.rt.iocgs[cg as usize].abs_vdebt == 0 && self.rt.hier.inuse(cg) != active {
            self.propagate_saving(cg, active, active, vnow);
        }
        let mut woken = Vec::new();
        let mut committed = Vec::new();
        let mut record = |bid: BioId, c: u64| committed.push((bid, c));
        self.kick(now, cg, q, &mut record, &mut woken);
        let mut issued = false;
        for (bid, c) in committed {
            if bid == id {
                bio.iocost_cost = c;
                issued = true;
            } else {
                self.rt.pending_woken.push((bid, c));
            }
        }
        issued
    }

    /// `iocg_incur_debt()`, then `iocg_kick_delay()`: the submitter sleeps on its
    /// return to user space (`blkcg_schedule_throttle()`) if a delay is in force.
    fn incur_debt_and_delay(&mut self, now: Ns, cg: u32, abs: u64) {
        self.incur_debt(now, cg, abs);
        if self.kick_delay(now, cg) {
            let g = &mut self.rt.iocgs[cg as usize];
            if !std::mem::replace(&mut g.throttle_pending, true) {
                self.rt.nr_throttle_pending += 1;
            }
        }
    }

    /// `ioc_rqos_merge()`: `bio` joins a request at `rq_sector` of `rq_sectors` whose
    /// first bio was charged (`rq_charged`) or not. It costs its size only
    /// (`calc_vtime_cost(.., is_merge)`: no seek part); a back merge into the request
    /// at the cursor moves the cursor. Charged now if the budget has room and the
    /// request was charged; else, while the cgroup is active, as debt (which may delay
    /// the submitter).
    pub fn merge(
        &mut self,
        now: Ns,
        rq_sector: u64,
        rq_sectors: u64,
        rq_charged: bool,
        bio: &mut Bio,
    ) {
        bio.iocost_cost = 0;
        if !self.enabled() || bio.cgroup == 0 || bio.cgroup as usize >= self.rt.iocgs.len() {
            return;
        }
        let cg = bio.cgroup;
        let abs = self.derived.cost.merge_cost(bio.dir, bio.bytes);
        if abs == 0 {
            return;
        }
        let vnow = self.vnow(now);
        let cost = self.adjust_inuse_and_calc_cost(now, cg, abs, vnow);
        let bio_end = bio.sector + (bio.bytes >> 9);
        let g = &mut self.rt.iocgs[cg as usize];
        if rq_sector < bio_end && rq_sector + rq_sectors == g.cursor {
            g.cursor = bio_end;
        }
        if (rq_charged && g.vtime + cost <= vnow) || !g.active {
            // iocg_commit_bio()
            g.vtime += cost;
            g.abs_vusage += abs;
            bio.iocost_cost = cost as u64;
            return;
        }
        self.incur_debt_and_delay(now, cg, abs);
    }

    /// Mirrors `adjust_inuse_and_calc_cost()`: a donating cgroup whose budget runs low
    /// takes its weight back in steps of 25% of `active` until the IO fits.
    fn adjust_inuse_and_calc_cost(&mut self, now: Ns, cg: u32, abs: u64, vnow: i64) -> i64 {
        let (_, hwi) = self.rt.hier.hweight(cg);
        let mut cost = scale_up(abs, hwi);
        let low = self.derived.margins.low as i64;
        let vtime = self.rt.iocgs[cg as usize].vtime;
        let active = self.rt.hier.active(cg);
        let g = &self.rt.iocgs[cg as usize];
        let margin = vnow - vtime - cost;
        if g.abs_vdebt > 0
            || margin >= g.saved_margin
            || margin >= low
            || self.rt.hier.inuse(cg) == active
        {
            return cost;
        }
        let step = (active * 25).div_ceil(100);
        let (old_inuse, old_hwi) = (self.rt.hier.inuse(cg), hwi);
        loop {
            let inuse = (self.rt.hier.inuse(cg) + step).min(active);
            self.propagate_saving(cg, active, inuse, vnow);
            let (_, hwi) = self.rt.hier.hweight(cg);
            cost = scale_up(abs, hwi);
            if vtime + cost <= vnow || inuse == active {
                let io = (old_inuse, inuse);
                self.trace_inuse("iocost_inuse_adjust", cg, now, io, (old_hwi, hwi));
                return cost;
            }
        }
    }

    /// Mirrors `iocg_incur_debt()`: the first debt takes inuse to the minimum.
    fn incur_debt(&mut self, now: Ns, cg: u32, abs: u64) {
        let active = self.rt.hier.active(cg);
        let g = &mut self.rt.iocgs[cg as usize];
        if g.abs_vdebt == 0 && abs > 0 {
            g.indebt_since = Some(us(now));
            self.rt.hier.propagate(cg, active, 0);
        }
        let g = &mut self.rt.iocgs[cg as usize];
        g.abs_vdebt += abs;
        g.abs_vusage += abs;
    }

    /// Mirrors `iocg_pay_debt()`: paid in full restores the pre-debt inuse.
    fn pay_debt(&mut self, now: Ns, cg: u32, abs_vpay: u64) {
        let g = &mut self.rt.iocgs[cg as usize];
        g.abs_vdebt -= abs_vpay.min(g.abs_vdebt);
        if g.abs_vdebt == 0 {
            g.stat.indebt_us += g.indebt_since.take().map_or(0, |t| (us(now) - t) as u64);
            let last = self.rt.hier.last_inuse(cg);
            let active = self.rt.hier.active(cg);
            self.rt.hier.propagate(cg, active, last);
        }
    }

    /// Mirrors `iocg_kick_delay()`: true when an issuer delay (≥ MIN_DELAY) is in force.
    fn kick_delay(&mut self, now: Ns, cg: u32) -> bool {
        let now_us = us(now);
        let vnow = self.vnow(now);
        let (hwa, _) = self.rt.hier.hweight(cg);
        let per = self.derived.period_us as i64 * self.vrate.max(1) as i64;
        let g = &mut self.rt.iocgs[cg as usize];
        if now_us < g.delay_at {
            return false;
        }
        let mut delay = decayed_delay(g.delay, (now_us - g.delay_at) as u64);
        let vover = g.vtime + scale_up(g.abs_vdebt, hwa) - vnow;
        let new_delay = delay_for_overage(vover.saturating_mul(100) / per);
        if new_delay > delay {
            g.delay = new_delay;
            g.delay_at = now_us;
            delay = new_delay;
        }
        if delay >= MIN_DELAY {
            g.indelay_since.get_or_insert(now_us);
            g.blkg_delay_ns = delay * 1000;
            true
        } else {
            g.stat.indelay_us += g.indelay_since.take().map_or(0, |t| (now_us - t) as u64);
            g.delay = 0;
            g.blkg_delay_ns = 0;
            false
        }
    }

    /// Mirrors `iocg_kick_waitq()`: pays debt from the budget, refreshes the delay,
    /// commits affordable waiters in FIFO order, costed now, and arms the wait timer
    /// for the first one left.
    fn kick(
        &mut self,
        now: Ns,
        cg: u32,
        q: &mut EventQueue,
        set_cost: &mut dyn FnMut(BioId, u64),
        woken: &mut Vec<BioId>,
    ) {
        let vnow = self.vnow(now);
        let (hwa, _) = self.rt.hier.hweight(cg);
        let g = &mut self.rt.iocgs[cg as usize];
        let mut vbudget = vnow - g.vtime;
        if g.abs_vdebt > 0 && vbudget > 0 {
            let abs_vpay = scale_down(vbudget as u64, hwa).min(g.abs_vdebt);
            let vpay = scale_up(abs_vpay, hwa);
            g.vtime += vpay;
            g.done_vtime += vpay;
            vbudget -= vpay;
            self.pay_debt(now, cg, abs_vpay);
        }
        let g = &self.rt.iocgs[cg as usize];
        if g.abs_vdebt > 0 || g.delay > 0 {
            self.kick_delay(now, cg);
        }
        let debt = self.rt.iocgs[cg as usize].abs_vdebt;
        if debt > 0 {
            vbudget = (vbudget - scale_up(debt, hwa)).min(0);
        }
        let (_, hwi) = self.rt.hier.hweight(cg);
        let slack = self.derived.period_us * 1000 / 100;
        let base = self.vrate.max(1) as i64;
        let g = &mut self.rt.iocgs[cg as usize];
        let now_us = us(now);
        if g.waiters.is_empty() {
            g.stat.wait_us += g.wait_since.take().map_or(0, |t| (now_us - t) as u64);
            return;
        }
        g.wait_since.get_or_insert(now_us);
        while let Some(&(bid, abs)) = g.waiters.front() {
            let cost = scale_up(abs, hwi);
            if vbudget - cost < 0 {
                let wait_us = (cost - vbudget + base - 1) / base;
                let at = now + wait_us as u64 * 1000 + slack;
                if g.timer_at.is_some_and(|t| t.abs_diff(at) <= slack) {
                    return;
                }
                arm_wait_timer(&mut self.rt, self.cfg.timer, cg, at, slack, q);
                return;
            }
            vbudget -= cost;
            g.vtime += cost;
            g.abs_vusage += abs;
            g.waiters.pop_front();
            set_cost(bid, cost as u64);
            woken.push(bid);
        }
        g.stat.wait_us += g.wait_since.take().map_or(0, |t| (now_us - t) as u64);
    }

    /// Period timer and wait-queue timers.
    pub fn on_event(
        &mut self,
        now: Ns,
        token: u64,
        q: &mut EventQueue,
        bios: &mut BioSlab,
        woken: &mut Vec<BioId>,
    ) {
        for (bid, c) in self.rt.pending_woken.drain(..) {
            bios.get_mut(bid).iocost_cost = c;
            woken.push(bid);
        }
        let mut set = |bid: BioId, c: u64| bios.get_mut(bid).iocost_cost = c;
        if token & PERIOD_BIT != 0 {
            if token == PERIOD_BIT | self.rt.period_seq && self.rt.running {
                // the tick's hard interrupt runs the expired hrtimers before the timer
                // wheel's softirq runs ioc_timer_fn()
                self.run_expired_wait_timers(now, q, &mut set, woken);
                self.timer_fn(now, q, &mut set, woken);
            }
            return;
        }
        if token & TICK_BIT != 0 {
            if self.rt.tick_at == Some(now) {
                self.rt.tick_at = None;
                self.run_expired_wait_timers(now, q, &mut set, woken);
                if let TimerMode::Jiffies { hz, .. } = self.cfg.timer
                    && !self.rt.armed.is_empty()
                {
                    arm_tick(&mut self.rt, hz, q);
                }
            }
            return;
        }
        let cg = (token >> 32) as usize;
        let Some(g) = self.rt.iocgs.get_mut(cg) else {
            return;
        };
        if token & 0xffff_ffff != g.timer_seq & 0xffff_ffff || g.timer_at.is_none() {
            return;
        }
        if let TimerMode::Jiffies { one_cpu: true, .. } = self.cfg.timer {
            // its hard expiry: an hrtimer interrupt, for it and every other timer due
            self.run_expired_wait_timers(now, q, &mut set, woken);
        } else {
            g.timer_at = None;
            self.kick(now, cg as u32, q, &mut set, woken);
        }
    }

    /// `__hrtimer_run_queues()` at an hrtimer interrupt at `now`: every wait timer whose
    /// soft expiry has passed runs (`iocg_waitq_timer_fn()`), in expiry order.
    fn run_expired_wait_timers(
        &mut self,
        now: Ns,
        q: &mut EventQueue,
        set_cost: &mut dyn FnMut(BioId, u64),
        woken: &mut Vec<BioId>,
    ) {
        while let Some(&Reverse((soft, seq, cg))) = self.rt.armed.peek() {
            if soft > now {
                break;
            }
            self.rt.armed.pop();
            let g = &mut self.rt.iocgs[cg as usize];
            if g.timer_at != Some(soft) || g.timer_armed_seq != seq {
                continue;
            }
            g.timer_at = None;
            self.kick(now, cg, q, set_cost, woken);
        }
    }

    /// `ioc_rqos_exit()` (rq_qos_exit() in del_gendisk(), the queue drained): the
    /// period timer is deleted and nothing runs any more; the counters stay as the
    /// last period flushed them.
    pub fn exit(&mut self) {
        self.rt.running = false;
        self.rt.period_seq += 1;
        self.rt.armed.clear();
        self.rt.tick_at = None;
    }

    /// Hand out earlier waiters that a kick on the submit path committed (their
    /// submitters go on now); the pipeline calls this right after `throttle()`.
    #[inline]
    pub fn drain_woken(&mut self, bios: &mut BioSlab, woken: &mut Vec<BioId>) {
        // nearly always empty: skip building a drain per submitted bio
        if self.rt.pending_woken.is_empty() {
            return;
        }
        for (bid, c) in self.rt.pending_woken.drain(..) {
            bios.get_mut(bid).iocost_cost = c;
            woken.push(bid);
        }
    }

    /// `ioc_rqos_done()`: met/missed with the size-cost discount, and tag wait.
    #[inline]
    pub fn on_rq_done(&mut self, now: Ns, dir: Dir, bytes: u64, alloc_ns: Ns, start_ns: Ns) {
        if !self.enabled() || alloc_ns == 0 || start_ns == 0 {
            return;
        }
        let on_q = now.saturating_sub(alloc_ns);
        let size_ns = self.derived.cost.size_cost_ns(dir, bytes);
        let lat_ns = u64::from(if dir == Dir::Read {
            self.qos_lat().0
        } else {
            self.qos_lat().1
        }) * 1000;
        if on_q <= size_ns || on_q - size_ns <= lat_ns {
            self.rt.met[dir.idx()] += 1;
        } else {
            self.rt.missed[dir.idx()] += 1;
        }
        self.rt.rq_wait_ns += start_ns.saturating_sub(alloc_ns);
    }

    /// Bio completion: `done_vtime += cost`.
    #[inline]
    pub fn on_bio_done(&mut self, _now: Ns, bio: &Bio) {
        if let Some(g) = self.rt.iocgs.get_mut(bio.cgroup as usize) {
            g.done_vtime += bio.iocost_cost as i64;
        }
    }

    /// Mirrors `blkcg_maybe_throttle_current()` for an issuer of cgroup `cg` returning
    /// to user space: if `blkcg_schedule_throttle()` was called for it, it sleeps for
    /// the largest blkg delay on the way to the root (iocost's `use_delay` is negative,
    /// so no 250 ms clamp; `blkcg_scale_delay()`'s own decay is not modelled).
    #[inline]
    pub fn user_delay(&mut self, _now: Ns, cg: u32) -> Ns {
        // nearly always none anywhere: no need to read the issuer's iocg
        if self.rt.nr_throttle_pending == 0 {
            return 0;
        }
        let Some(g) = self.rt.iocgs.get_mut(cg as usize) else {
            return 0;
        };
        if !std::mem::take(&mut g.throttle_pending) {
            return 0;
        }
        self.rt.nr_throttle_pending -= 1;
        let mut delay = 0;
        let mut c = Some(cg);
        while let Some(x) = c.filter(|&x| x != 0) {
            delay = delay.max(self.rt.iocgs[x as usize].blkg_delay_ns);
            c = self.rt.hier.parent(x);
        }
        delay
    }

    /// Mirrors `ioc_timer_fn()` in the kernel's order (without donation transfer/debt).
    fn timer_fn(
        &mut self,
        now: Ns,
        q: &mut EventQueue,
        set: &mut dyn FnMut(BioId, u64),
        woken: &mut Vec<BioId>,
    ) {
        let p = self.derived.period_us;
        let (lm, lmi, lrq) = self.rt.last;
        let lat = LatStats::new(
            [self.rt.met[0] - lm[0], self.rt.met[1] - lm[1]],
            [self.rt.missed[0] - lmi[0], self.rt.missed[1] - lmi[1]],
            self.rt.rq_wait_ns - lrq,
            p,
        );
        self.rt.last = (self.rt.met, self.rt.missed, self.rt.rq_wait_ns);
        let vnow = self.vnow(now);
        let period_vtime = vnow - self.rt.period_at_vtime;
        if period_vtime <= 0 {
            return;
        }
        let target = self.derived.margins.target as i64;
        let base = self.vrate.max(1);
        // ioc_check_iocgs(): flush wait/debt/delay stats, kick waiters and debtors,
        // deactivate idle iocgs (off the active list)
        let mut nr_debtors = 0u32;
        let mut active = self.take_active();
        active.retain(|&cg| match self.check_iocg(now, cg, vnow, q, set, woken) {
            Checked::Idle => false,
            Checked::Debtor => {
                nr_debtors += 1;
                true
            }
            Checked::Active => true,
        });
        self.flush_stat(base, &active);
        let pct_on = self.derived.thr_ppm != [1_000_000; 2];
        let (mut nr_lagging, mut nr_shortages, mut nr_donors) = (0u32, 0u32, 0u32);
        let mut usage_us_sum = 0u64;
        let mut donors: Vec<Donor> = Vec::new();
        let low = self.derived.margins.low as i64;
        let min_m = self.derived.margins.min as i64;
        for &cg in &active {
            let (hwa, hwi) = self.rt.hier.hweight(cg);
            let g = &mut self.rt.iocgs[cg as usize];
            usage_us_sum += g.usage_delta_us;
            let in_debt = g.abs_vdebt > 0;
            if pct_on
                && g.blkg_delay_ns == 0
                && g.vtime > g.done_vtime
                && g.vtime > vnow - MAX_LAGGING_PERIODS * period_vtime
                && g.done_vtime < vnow - period_vtime
            {
                nr_lagging += 1;
            }
            // donation classification (hweight_after_donation(), bounded by hwm)
            if hwi < hwa || (g.waiters.is_empty() && g.vtime < vnow - low) {
                let inflight = (g.vtime - g.done_vtime).max(0) as u64;
                let infl_us = scale_down(inflight, hwi).div_ceil(base);
                let usage_us = g.usage_delta_us.max(infl_us);
                let dur = (us(now) - g.activated_at_us.max(self.rt.period_at_us)).max(1) as u64;
                let usage = (usage_us * WEIGHT_ONE).div_ceil(dur).clamp(1, WEIGHT_ONE);
                let hwm = self.rt.hier.hweight_max(cg);
                let g = &mut self.rt.iocgs[cg as usize];
                let new_hwi = if in_debt {
                    1 // debt handling owns a debtor's inuse
                } else if !g.waiters.is_empty() || g.vtime > vnow - min_m {
                    hwm
                } else {
                    let excess = vnow - g.vtime - target;
                    if excess > 0 {
                        g.vtime += excess;
                        g.done_vtime += excess;
                        self.rt.vtime_err -= excess * hwi as i64 / WEIGHT_ONE as i64;
                    }
                    let delta = (WEIGHT_ONE as i64 * (vnow - g.vtime) / period_vtime).max(0) as u64;
                    (WEIGHT_ONE * usage / (WEIGHT_ONE - WEIGHT_ONE / 2 + delta)).clamp(1, hwm)
                };
                if new_hwi < hwm && hwa >= 2 {
                    nr_donors += 1;
                    donors.push(Donor {
                        cg,
                        hwa,
                        after: new_hwi,
                    });
                } else if !in_debt {
                    // not enough to donate: take the whole weight back
                    let active = self.rt.hier.active(cg);
                    let inuse = self.rt.hier.inuse(cg);
                    let io = (inuse, active);
                    self.trace_inuse("iocost_inuse_shortage", cg, now, io, (hwi, new_hwi));
                    self.propagate_saving(cg, active, active, vnow);
                    nr_shortages += 1;
                }
            } else {
                nr_shortages += 1;
            }
        }
        if !donors.is_empty() && nr_shortages > 0 {
            self.transfer_surpluses(now, vnow, &donors);
        }
        let prev = self.rt.busy_level;
        self.rt.busy_level = next_busy_level(
            prev,
            &lat,
            self.derived.thr_ppm,
            nr_lagging,
            nr_shortages,
            self.cfg.behaviour.no_completion,
        );
        let bounds = (self.derived.vrate_min, self.derived.vrate_max);
        let (nv, emit) =
            adjust_base_vrate(self.vrate, self.rt.busy_level, prev, nr_lagging, bounds);
        if emit && self.rt.tracing {
            // before 6.2 the tracepoint's OLD is atomic64_read(&ioc->vtime_rate), the rate
            // in force (loss compensation included), and so is NEW on the early return
            let in_force = self.rt.vtime_rate.max(0) as u64;
            let (old, new) = match self.cfg.behaviour.trace_vrate {
                TraceVrate::Base => (self.vrate, nv),
                TraceVrate::InForce if keeps_base_vrate(self.rt.busy_level, nr_lagging) => {
                    (in_force, in_force)
                }
                TraceVrate::InForce => (in_force, nv),
            };
            let body = vrate_adj_line(old, new, self.rt.busy_level, &lat, nr_lagging, nr_shortages);
            let line = format!("iocost_ioc_vrate_adj: [{}] {body}", self.name);
            self.rt.trace.push(line);
        }
        self.vrate = nv;
        self.refresh();
        self.put_active(active);
        self.forgive_debts(now, usage_us_sum, nr_debtors, q, set, woken);
        self.rt.cur_period += 1;
        let row_cgs = self.cg_rows(now, vnow);
        if !self.rt.active_iocgs.is_empty() {
            self.rt.period_at_us = us(now);
            self.rt.period_at_vtime = vnow;
            self.arm_period(now, q);
            // ioc_refresh_vrate(): loss compensation over the next period
            let pleft = p as i64;
            let b = self.vrate as i64;
            let vcomp = (-self.rt.vtime_err / pleft).clamp(-b / 2, b);
            self.rt.vtime_err += vcomp * pleft;
            self.rt.vtime_rate = b + vcomp;
        } else {
            self.rt.busy_level = 0;
            self.rt.vtime_err = 0;
            self.rt.running = false;
            self.rt.vtime_rate = self.vrate as i64;
        }
        let lim = p as i64 * self.vrate as i64;
        self.rt.vtime_err = self.rt.vtime_err.clamp(-lim, lim);
        let pct = |v: u64| (v * 10_000 / super::model::VTIME_PER_USEC) as f64 / 100.0;
        self.rt.rows.push(PeriodRow {
            t: now,
            period_us: p as i64,
            vrate_base_pct: pct(self.vrate),
            vrate_eff_pct: pct(self.rt.vtime_rate.max(0) as u64),
            busy_before: prev,
            busy_after: self.rt.busy_level,
            nr_done: lat.nr_done,
            missed_ppm: lat.missed_ppm,
            rq_wait_pct: lat.rq_wait_pct,
            nr_lagging,
            nr_shortages,
            nr_donors,
            cgroups: row_cgs,
        });
    }

    /// Mirrors the end of `transfer_surpluses()`: each donor gets the inuse computed by
    /// [`Hier::transfer_surpluses`], propagated with `save`.
    /// Mirrors `iocg_flush_stat()`: active leaves turn their usage into us at the base
    /// rate, then every counter's delta since the last flush goes up to the parent,
    /// deepest inner nodes first (`iocg_flush_stat_upward()`), root included.
    fn flush_stat(&mut self, base: u64, active: &[u32]) {
        for &cg in active {
            let g = &mut self.rt.iocgs[cg as usize];
            g.usage_delta_us = (g.abs_vusage - g.last_abs_vusage) / base;
            g.last_abs_vusage = g.abs_vusage;
            g.stat.usage_us += g.usage_delta_us;
            self.flush_stat_upward(cg as usize);
        }
        // descending pre-order is bottom-up
        for &cg in self.rt.hier.inner_walk(active.iter().copied()).iter().rev() {
            self.flush_stat_upward(cg as usize);
        }
    }

    /// Mirrors `iocg_flush_stat_upward()`.
    fn flush_stat_upward(&mut self, cg: usize) {
        let g = &self.rt.iocgs[cg];
        let (st, last) = (g.stat, g.last_stat);
        if let Some(p) = self.rt.hier.parent(cg as u32) {
            let ps = &mut self.rt.iocgs[p as usize].stat;
            ps.usage_us += st.usage_us - last.usage_us;
            ps.wait_us += st.wait_us - last.wait_us;
            ps.indebt_us += st.indebt_us - last.indebt_us;
            ps.indelay_us += st.indelay_us - last.indelay_us;
        }
        self.rt.iocgs[cg].last_stat = st;
    }

    /// Mirrors `ioc_forgive_debts()`: on a mostly idle device, halve every active
    /// iocg's debt and delay once per `DFGV_PERIOD` elapsed, then kick it.
    fn forgive_debts(
        &mut self,
        now: Ns,
        usage_us_sum: u64,
        nr_debtors: u32,
        q: &mut EventQueue,
        set: &mut dyn FnMut(BioId, u64),
        woken: &mut Vec<BioId>,
    ) {
        let busy = self.rt.busy_level > 0;
        let Some((usage_pct, n)) = self.rt.dfgv.tick(
            us(now),
            usage_us_sum,
            nr_debtors,
            busy,
            self.derived.period_us,
        ) else {
            return;
        };
        let active = self.take_active();
        for &cg in &active {
            let g = &mut self.rt.iocgs[cg as usize];
            if g.abs_vdebt == 0 && g.delay == 0 {
                continue;
            }
            let (old_debt, old_delay) = (g.abs_vdebt, g.delay);
            g.abs_vdebt = halve(g.abs_vdebt, n);
            g.delay = halve(g.delay, n);
            self.kick(now, cg, q, set, woken);
            if !self.rt.tracing {
                continue;
            }
            let g = &self.rt.iocgs[cg as usize];
            let line = format!(
                "iocost_iocg_forgive_debt: {} now={}:{} usage={usage_pct} debt={old_debt}->{} delay={old_delay}->{}",
                self.tp_head(cg),
                us(now),
                self.vnow(now),
                g.abs_vdebt,
                g.delay
            );
            self.rt.trace.push(line);
        }
        self.put_active(active);
    }

    /// Debtors take part in the calculation but keep their minimum inuse.
    fn transfer_surpluses(&mut self, now: Ns, vnow: i64, donors: &[Donor]) {
        for (d, (cg, inuse)) in donors.iter().zip(self.rt.hier.transfer_surpluses(donors)) {
            if self.rt.iocgs[cg as usize].abs_vdebt > 0 {
                continue;
            }
            let (_, hwi) = self.rt.hier.hweight(cg);
            let old = self.rt.hier.inuse(cg);
            self.trace_inuse(
                "iocost_inuse_transfer",
                cg,
                now,
                (old, inuse),
                (hwi, d.after),
            );
            let act = self.rt.hier.active(cg);
            self.propagate_saving(cg, act, inuse, vnow);
        }
    }

    fn cg_rows(&mut self, _now: Ns, vnow: i64) -> Vec<CgRow> {
        let base = self.vrate.max(1);
        let p = self.derived.period_us;
        let active = self.take_active();
        let mut out = Vec::with_capacity(active.len());
        for &cg in &active {
            let (hwa, hwi) = self.rt.hier.hweight(cg);
            let g = &self.rt.iocgs[cg as usize];
            out.push(CgRow {
                cg,
                active: self.rt.hier.active(cg),
                inuse: self.rt.hier.inuse(cg),
                hwa,
                hwi,
                budget_us: (vnow - g.vtime) / base as i64,
                inflight_pct: (g.vtime - g.done_vtime).max(0) as u64 * 100
                    / (p * self.rt.vtime_rate.max(1) as u64),
                usage_pct: g.usage_delta_us * 100 / p,
                waiters: g.waiters.len(),
                debt: g.abs_vdebt,
                delay: g.delay,
            });
        }
        self.put_active(active);
        out
    }

    /// The active list in cgroup order, taken out for a walk that may change other
    /// state (nothing activates during one); [`Self::put_active`] puts it back.
    fn take_active(&mut self) -> Vec<u32> {
        let mut active = std::mem::take(&mut self.rt.active_iocgs);
        if !self.rt.active_sorted {
            active.sort_unstable();
            self.rt.active_sorted = true;
        }
        active
    }

    fn put_active(&mut self, active: Vec<u32>) {
        // anything activated meanwhile (nothing does) would follow, still unsorted
        let meanwhile = std::mem::replace(&mut self.rt.active_iocgs, active);
        if !meanwhile.is_empty() {
            self.rt.active_iocgs.extend(meanwhile);
            self.rt.active_sorted = false;
        }
    }

    /// One iocg of `ioc_check_iocgs()`: flushes its wait/debt/delay stats; kicks a
    /// waiter or debtor; deactivates it if it did nothing this period and has nothing
    /// in flight (the caller takes it off the active list).
    fn check_iocg(
        &mut self,
        now: Ns,
        cg: u32,
        vnow: i64,
        q: &mut EventQueue,
        set: &mut dyn FnMut(BioId, u64),
        woken: &mut Vec<BioId>,
    ) -> Checked {
        let now_us = us(now);
        let cur = self.rt.cur_period;
        let g = &mut self.rt.iocgs[cg as usize];
        let idle = g.active_period != cur && g.done_vtime == g.vtime;
        let owes = g.abs_vdebt > 0 || g.delay > 0;
        if g.waiters.is_empty() && !owes && !idle {
            return Checked::Active;
        }
        for (since, total) in [
            (&mut g.wait_since, &mut g.stat.wait_us),
            (&mut g.indebt_since, &mut g.stat.indebt_us),
            (&mut g.indelay_since, &mut g.stat.indelay_us),
        ] {
            if let Some(t) = since.replace(now_us) {
                *total += (now_us - t) as u64;
            } else {
                *since = None;
            }
        }
        if !g.waiters.is_empty() || owes {
            self.kick(now, cg, q, set, woken);
            let g = &self.rt.iocgs[cg as usize];
            return if g.abs_vdebt > 0 || g.delay > 0 {
                Checked::Debtor
            } else {
                Checked::Active
            };
        }
        let (vtime, last) = (g.vtime, g.active_period);
        let (_, hwi) = self.rt.hier.hweight(cg);
        let excess = vnow - vtime - self.derived.margins.target as i64;
        if excess > 0 {
            self.rt.vtime_err -= excess * hwi as i64 / WEIGHT_ONE as i64;
        }
        self.trace_state("iocost_iocg_idle", cg, now, vnow, last, vtime);
        self.rt.hier.propagate(cg, 0, 0);
        self.rt.iocgs[cg as usize].active = false;
        Checked::Idle
    }

    /// Drains the per-period rows.
    pub fn take_rows(&mut self) -> Vec<PeriodRow> {
        std::mem::take(&mut self.rt.rows)
    }

    /// Whether to format the trace lines: off when nothing will read them (no output
    /// folder, nothing kept, no `--trace`), which changes nothing else.
    pub fn set_tracing(&mut self, on: bool) {
        self.rt.tracing = on;
    }

    /// Drains the trace lines (activate / idle / vrate_adj).
    pub fn take_trace(&mut self) -> Vec<String> {
        std::mem::take(&mut self.rt.trace)
    }

    /// iocost keys of `io.stat` for `cg` (empty while disabled).
    pub fn io_stat(&self, cg: u32) -> String {
        if !self.enabled() {
            return String::new();
        }
        // ioc_pd_stat(): the values as of the last flush
        let mut s = String::new();
        if cg == 0 {
            let per_usec = super::model::VTIME_PER_USEC;
            let h = (self.vrate * 10_000 + per_usec / 2) / per_usec;
            s.push_str(&format!("cost.vrate={}.{:02} ", h / 100, h % 100));
        }
        let st = self
            .rt
            .iocgs
            .get(cg as usize)
            .map_or(IocgStat::default(), |g| g.last_stat);
        s.push_str(&format!("cost.usage={}", st.usage_us));
        if self.cfg.debug_stats {
            s.push_str(&format!(
                " cost.wait={} cost.indebt={} cost.indelay={}",
                st.wait_us, st.indebt_us, st.indelay_us
            ));
        }
        s
    }
}

impl Iocost {
    fn monitor_rows(&mut self, now: Ns) -> (i64, Vec<CgRow>) {
        let vnow = self.vnow(now);
        (vnow, self.cg_rows(now, vnow))
    }

    /// An `iocost_monitor.py`-style snapshot (device line, then one line per active cgroup).
    pub fn monitor_text(&mut self, now: Ns) -> String {
        let (_, rows) = self.monitor_rows(now);
        let state = if !self.enabled() {
            "OFF"
        } else if self.rt.running {
            "RUN"
        } else {
            "IDLE"
        };
        let w1 = WEIGHT_ONE as f64;
        let mut s = format!(
            "{}:{} {state} per={}ms cur_per={:.3}:v{:.3} busy={:+3} vrate={:6.2}% params={}\n",
            self.dev.0,
            self.dev.1,
            self.derived.period_us / 1000,
            self.rt.period_at_us as f64 / 1e6,
            self.rt.period_at_vtime as f64 / super::model::VTIME_PER_SEC as f64,
            self.rt.busy_level,
            self.vrate as f64 * 100.0 / super::model::VTIME_PER_USEC as f64,
            self.params_name()
        );
        for r in rows {
            s.push_str(&format!(
                "{:<16} * {:6.2}/{:6.2} {:6.2}/{:6.2} {:6} {:7.2}ms {:7.2}ms {:3}%\n",
                self.paths[r.cg as usize],
                r.inuse as f64 / w1,
                r.active as f64 / w1,
                r.hwi as f64 * 100.0 / w1,
                r.hwa as f64 * 100.0 / w1,
                r.inflight_pct,
                debt_ms(r.debt),
                self.rt.iocgs[r.cg as usize].blkg_delay_ns as f64 / 1e6,
                r.usage_pct
            ));
        }
        s
    }

    /// `iocost_monitor.py --json` at `now`: one JSON object per line, the device first,
    /// then each active cgroup, with the script's keys (`address`, a kernel pointer
    /// there, is 0 here; `timestamp` is simulated seconds).
    pub fn monitor_json(&mut self, now: Ns) -> String {
        let (_, rows) = self.monitor_rows(now);
        let w1 = WEIGHT_ONE as f64;
        let ts = now as f64 / 1e9;
        let per_us = self.derived.period_us as f64;
        let mut out = vec![serde_json::json!({
            "device": self.name,
            "timestamp": ts,
            "enabled": self.enabled(),
            "running": self.rt.running,
            "period_ms": self.derived.period_us / 1000,
            "period_at": self.rt.period_at_us as f64 / 1e6,
            "period_vtime_at": self.rt.period_at_vtime as f64 / super::model::VTIME_PER_SEC as f64,
            "busy_level": self.rt.busy_level,
            "vrate_pct": self.vrate as f64 * 100.0 / super::model::VTIME_PER_USEC as f64,
        })];
        for r in &rows {
            let g = &self.rt.iocgs[r.cg as usize];
            out.push(serde_json::json!({
                "cgroup": format!("/{}", self.paths[r.cg as usize]),
                "timestamp": ts,
                "is_active": true,
                "weight": self.weight(r.cg),
                "weight_active": r.active as f64 / w1,
                "weight_inuse": r.inuse as f64 / w1,
                "hweight_active_pct": r.hwa as f64 * 100.0 / w1,
                "hweight_inuse_pct": r.hwi as f64 * 100.0 / w1,
                "inflight_pct": r.inflight_pct,
                "debt_ms": debt_ms(r.debt),
                "delay_ms": g.blkg_delay_ns as f64 / 1e6,
                "usage_pct": 100.0 * g.usage_delta_us as f64 / per_us,
                "address": 0,
            }));
        }
        out.iter().map(|v| v.to_string() + "\n").collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blkcg::CgroupTree;
    use crate::device::QueueLimits;
    use crate::iocost::{IocostConfig, behaviour_for};

    /// When three wait timers run (time, cgroup), armed at t = 0 with soft expiries
    /// 2.0, 2.6 and 3.2 ms and 1 ms of slack, and nothing else in the queue.
    fn fired(timer: TimerMode) -> Vec<(Ns, u32)> {
        let mut tree = CgroupTree::default();
        for name in ["a", "b", "c"] {
            tree.ensure(name);
        }
        let limits = QueueLimits {
            major: 252,
            minor: 0,
            name: "nullb0".into(),
            rotational: false,
            hw_queue_depth: 4,
            nr_requests: 4,
            max_sectors_kb: 128,
            logical_block_size: 512,
            capacity: 1 << 30,
            write_cache: false,
            queue_depth: None,
        };
        let cfg = IocostConfig {
            timer,
            behaviour: behaviour_for("newest", &[]).unwrap(),
            debug_stats: false,
        };
        let mut ioc = Iocost::new(cfg, &tree, &limits);
        let mut q = EventQueue::new();
        for (cg, soft) in [(1, 2_000_000), (2, 2_600_000), (3, 3_200_000)] {
            arm_wait_timer(&mut ioc.rt, timer, cg, soft, 1_000_000, &mut q);
        }
        let (mut bios, mut woken, mut out) = (BioSlab::default(), Vec::new(), Vec::new());
        while let Some((now, ev)) = q.pop() {
            let Event::Policy(crate::iocost::rqos::ID, token) = ev else {
                panic!("{ev:?}");
            };
            let armed: Vec<bool> = (1..4).map(|c| ioc.rt.iocgs[c].timer_at.is_some()).collect();
            ioc.on_event(now, token, &mut q, &mut bios, &mut woken);
            for c in 1..4 {
                if armed[c - 1] && ioc.rt.iocgs[c].timer_at.is_none() {
                    out.push((now, c as u32));
                }
            }
        }
        out
    }

    #[test]
    fn wait_timers_run_at_the_first_interrupt_after_their_soft_expiry() {
        let jiffies = |hz, one_cpu| TimerMode::Jiffies { hz, one_cpu };
        for (timer, expected) in [
            // `exact`: each alone at its soft expiry
            (
                TimerMode::Exact,
                [(2_000_000, 1), (2_600_000, 2), (3_200_000, 3)],
            ),
            // each on an idle CPU of its own: at its hard expiry, 1 ms after the soft one
            (
                jiffies(1000, false),
                [(3_000_000, 1), (3_600_000, 2), (4_200_000, 3)],
            ),
            // one CPU, HZ=100 (no tick before 10 ms): the first timer's hard expiry
            // (3.0 ms) runs it and the second, whose soft expiry has passed; the third
            // waits for its own hard expiry
            (
                jiffies(100, true),
                [(3_000_000, 1), (3_000_000, 2), (4_200_000, 3)],
            ),
            // one CPU, HZ=1000: the busy CPU's tick at each millisecond runs what is due
            (
                jiffies(1000, true),
                [(2_000_000, 1), (3_000_000, 2), (4_000_000, 3)],
            ),
        ] {
            assert_eq!(fired(timer), expected, "{timer:?}");
        }
    }
}
