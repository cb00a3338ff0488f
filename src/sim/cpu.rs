//! The guest's one CPU and its fair scheduler: whose host work runs when, with
//! `[host] cpus = 1` (the qemu guest's one vCPU).
//!
//! Design
//! ------
//! The idea: the host costs of a submission context — a fio job (submission, the
//! completion path, fio's loop, a woken tag sleeper's retry) or the policies' dispatch
//! worker — are bursts of CPU time. Without this model each is a delay of its own, as
//! if every task had a CPU; here one CPU serves them, one task at a time, in the order
//! the kernel's fair class would. A task asks for a burst with [`GuestCpu::request`];
//! the CPU fires the burst's continuation (the context's next step) once the task has
//! run that long, and the pipeline then calls [`GuestCpu::settle`]: a task that asked
//! for no further burst has gone to sleep (for a completion, a tag, an rq-qos entry or
//! a timer) and the CPU picks the next. Every task is on one runqueue (the guest
//! enables no cpu controller, and its fio processes share one autogroup); the fio jobs
//! and the flushers are nice 0, kblockd's kworker nice −20 (`WQ_HIGHPRI`), so its
//! virtual time runs 86.7 times slower than its CPU time (`calc_delta_fair()`), and
//! the weights enter the average, eligibility, placement, slices and CFS's wakeup
//! granularity as in `kernel/sched/fair.c`.
//!
//! Two pickers, by kernel version (`sched.fair`, [`FairSched`]):
//! - CFS (≤ 6.5): the task with the least vruntime runs (`pick_next_entity()`). A woken
//!   task is placed no further back than `min_vruntime` less half the 6 ms latency
//!   (`place_entity()`, GENTLE_FAIR_SLEEPERS) and preempts the running one only when
//!   more than the 1 ms wakeup granularity behind it (`wakeup_preempt_entity()`);
//!   otherwise it waits until the running task sleeps or the scheduler tick finds it
//!   has run its slice — 6 ms over the tasks running, at least 0.75 ms
//!   (`check_preempt_tick()`). So on a busy CPU a woken reaper can wait a whole tick.
//! - EEVDF (6.6+): each task has a 0.75 ms slice and a virtual deadline one slice past
//!   its vruntime; the eligible task (vruntime at or below the queue's average) with
//!   the earliest deadline runs (`pick_eevdf()`), and a picked task keeps the CPU until
//!   its slice is used (RUN_TO_PARITY) — seen only when its time is updated: at a
//!   wake-up or a tick (`update_curr()`, `update_deadline()`), not where this model
//!   cuts its work into bursts. A sleeper keeps its lag (`place_entity()`, PLACE_LAG);
//!   one that sleeps while not eligible stays queued until it is (DELAY_DEQUEUE, its lag
//!   then cleared: DELAY_ZERO).
//!
//! kblockd's kworker is a task too (the last): a queue run left to kblockd happens
//! when the CPU picks it, and runs asked for meanwhile are that one run — so the
//! completions of one interrupt are answered by one run, whose requests reach the
//! device together and complete together again.
//!
//! A completion's interrupt (`[host] complete_irq_ns`, [`GuestCpu::irq`]) takes the CPU
//! from whatever runs, which is charged for it (the guests' kernels have no
//! `CONFIG_IRQ_TIME_ACCOUNTING`); so does the scheduler tick's (`[host] tick_irq_ns`),
//! every jiffy while a task runs or I/O is in flight. The tick is the noise that
//! merges completions: those due during it are answered together once it is over, and stay
//! together (docs/validation.md §38). On an idle CPU the pick waits for the interrupt
//! work to end (the idle loop's `schedule_idle()` after the interrupt returns): a task
//! picked while it runs has not started (`starts_at`), and each task woken meanwhile —
//! the other completions of a batch, kblockd's kworker — joins the pick, which the
//! fair class makes among all of them (docs/validation.md §46).
//!
//! kblockd's kworker is a kernel thread, and the guests' kernels preempt voluntarily
//! (`PREEMPT_DYNAMIC`, voluntary by default): a wake-up or a tick that asks for the CPU
//! while the kworker runs its burst takes it at the burst's end, where the kernel's
//! worker reaches `cond_resched()` between work items — a queue run's list is walked
//! to its end first (docs/validation.md §44, session 41).
//!
//! Simplified, and why: a reschedule takes effect at once in a fio job's syscall,
//! where the guests' voluntary preemption would wait for its next preemption point
//! (modelled as "at the end of the syscall", it agreed less with the real kernels:
//! docs/validation.md §38); no other kernel thread runs (ksoftirqd, RCU); no buddies
//! (NEXT_BUDDY is off, LAST_BUDDY needs 8 running tasks); a switch costs nothing of
//! its own (the profiles' costs hold it). The runqueue is a short list scanned per
//! decision: the guests run a handful of tasks.
//!
//! Moving parts: [`GuestCpu`] (the runqueue, the current task and its burst, the tick);
//! the pipeline (`crate::sim::engine`) routes the contexts' costs here and dispatches
//! the continuations (`Event::CpuBurst`, `Event::CpuTick`).

use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
use crate::sim::{Event, EventQueue, NSEC_PER_MSEC, NSEC_PER_SEC, Ns};
use std::collections::VecDeque;

/// The `[kernel]` switch prefix of the CPU scheduler.
pub const SWITCH_PREFIX: &str = "sched.";

/// Which fair-class picker the kernel has (`sched.fair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairSched {
    /// The Completely Fair Scheduler (≤ 6.5).
    Cfs,
    /// Earliest Eligible Virtual Deadline First (6.6+, 147f3efaa241 "sched/fair:
    /// Implement an EEVDF-like scheduling policy"), as of 6.12 (with its
    /// DELAY_DEQUEUE).
    Eevdf,
}

impl Named for FairSched {
    const NAMES: &'static [(&'static str, Self)] = &[("cfs", Self::Cfs), ("eevdf", Self::Eevdf)];
}

/// In scenario syntax: `sched.fair=eevdf`.
impl std::fmt::Display for FairSched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sched.fair={}", self.name())
    }
}

/// The fair class of kernel `version`, then `overrides` (`("sched.fair", "cfs")`).
pub fn fair_for(version: &str, overrides: &[(String, String)]) -> Result<FairSched, KeyError> {
    let kv = KernelVersion::parse(version).map_err(|m| KeyError::new("kernel.version", m))?;
    let mut fair = if (kv.major, kv.minor) >= (6, 6) {
        FairSched::Eevdf
    } else {
        FairSched::Cfs
    };
    for (key, val) in overrides {
        match key.as_str() {
            "sched.fair" => fair = Named::parse(key, val)?,
            _ => {
                return Err(KeyError::new(
                    key.as_str(),
                    "unknown key; accepted: sched.fair",
                ));
            }
        }
    }
    Ok(fair)
}

/// `sysctl_sched_latency` on one CPU (CFS).
const SCHED_LATENCY: i64 = 6 * NSEC_PER_MSEC as i64;
/// `sysctl_sched_min_granularity` (CFS), and `sysctl_sched_base_slice` (EEVDF).
const MIN_GRANULARITY: i64 = 750_000;
/// `sysctl_sched_wakeup_granularity` (CFS).
const WAKEUP_GRANULARITY: i64 = NSEC_PER_MSEC as i64;
/// `sched_nr_latency`: past this many running tasks the period grows (CFS).
const NR_LATENCY: i64 = 8;

/// `NICE_0_LOAD` (as `scale_load_down()` gives it): a nice-0 task's weight.
const NICE_0_LOAD: i64 = 1024;
/// `sched_prio_to_weight[0]` and `sched_prio_to_wmult[0]`: nice −20, a `WQ_HIGHPRI`
/// worker's.
const NICE_M20: (i64, u64) = (88761, 48388);

/// One task (a fio job, a flusher, kblockd's kworker) as the scheduler sees it.
#[derive(Debug)]
struct Task {
    /// `se->load.weight` (`sched_prio_to_weight[]`).
    weight: i64,
    /// Its inverse, 2³² / weight (`sched_prio_to_wmult[]`).
    wmult: u64,
    /// A kernel thread under voluntary preemption: a wake-up or the tick that asks
    /// for the CPU takes it only at the end of the running burst.
    nopreempt: bool,
    vruntime: i64,
    /// EEVDF's virtual deadline.
    deadline: i64,
    /// EEVDF's lag kept over a sleep (`se->vlag`).
    vlag: i64,
    /// What it still has to run: each burst's length and what fires after it.
    bursts: VecDeque<(Ns, Event)>,
    /// Waiting on the runqueue (not the current task).
    queued: bool,
    /// Asleep but still queued (EEVDF's DELAY_DEQUEUE): counts in the average, never
    /// runs; picking it finishes its dequeue.
    delayed: bool,
    /// Enqueue order, which breaks ties (the rb-tree puts an equal key to the right).
    seq: u64,
}

impl Default for Task {
    fn default() -> Self {
        Task {
            weight: NICE_0_LOAD,
            wmult: 1 << 22,
            nopreempt: false,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            bursts: VecDeque::new(),
            queued: false,
            delayed: false,
            seq: 0,
        }
    }
}

impl Task {
    /// `calc_delta_fair()`: `delta` of CPU time in this task's virtual time (nice 0:
    /// itself; else `__calc_delta()`'s `delta · NICE_0_LOAD · wmult >> 32`).
    fn calc_delta_fair(&self, delta: i64) -> i64 {
        if self.weight == NICE_0_LOAD {
            return delta;
        }
        let v = (delta.unsigned_abs() as u128 * NICE_0_LOAD as u128 * u128::from(self.wmult)) >> 32;
        (v as i64) * delta.signum()
    }
}

/// The one CPU: the current task, the runqueue, the pending burst and tick.
#[derive(Debug)]
pub struct GuestCpu {
    fair: FairSched,
    tick_ns: Ns,
    tasks: Vec<Task>,
    curr: Option<u32>,
    /// The current task's burst is running (its `Event::CpuBurst(gen)` pending).
    running: bool,
    /// When the current task's time was last accounted (`exec_start`).
    exec_start: Ns,
    /// When the running burst ends.
    burst_end: Ns,
    /// The current task's CPU time since it was picked (CFS's slice check).
    slice_exec: i64,
    /// EEVDF: the current task keeps the CPU until its slice is used (`protect_slice()`).
    protect: bool,
    /// The pending burst event's generation (a preempted burst's event is stale).
    generation: u32,
    /// Tasks waiting for the CPU (and EEVDF's delayed sleepers).
    rq: Vec<u32>,
    min_vruntime: i64,
    seq: u64,
    tick_at: Option<Ns>,
    /// Interrupt work runs until then; a burst picked meanwhile starts after it.
    irq_until: Ns,
    /// When the current task's burst starts (or started): a task picked during
    /// interrupt work starts at its end, and until then a wake-up picks again — the
    /// kernel picks once, at the interrupt's end, among every task woken in it.
    starts_at: Ns,
    /// A continuation is being dispatched: wake-ups wait for `settle()`.
    dispatching: bool,
    woke_in_dispatch: bool,
    /// The tick asked a kernel thread to reschedule (`resched_curr()`): it yields at
    /// its burst's end if another task is then to run.
    tick_resched: bool,
    /// The tick's own interrupt (`[host] tick_irq_ns`; 0: the tick costs nothing and
    /// runs only while tasks contend).
    tick_irq: Ns,
}

impl GuestCpu {
    pub fn new(fair: FairSched, hz: u32, nr_tasks: usize, tick_irq: Ns) -> Self {
        GuestCpu {
            fair,
            tick_ns: NSEC_PER_SEC / u64::from(hz.max(1)),
            tick_irq,
            tasks: (0..nr_tasks).map(|_| Task::default()).collect(),
            curr: None,
            running: false,
            exec_start: 0,
            burst_end: 0,
            slice_exec: 0,
            protect: false,
            generation: 0,
            rq: Vec::new(),
            min_vruntime: 0,
            seq: 0,
            tick_at: None,
            irq_until: 0,
            starts_at: 0,
            dispatching: false,
            woke_in_dispatch: false,
            tick_resched: false,
        }
    }

    /// Task `t` is kblockd's kworker: a `WQ_HIGHPRI` worker (nice −20), a kernel
    /// thread that yields only where it checks (`cond_resched()` between work items).
    pub fn set_kblockd(&mut self, t: u32) {
        let task = &mut self.tasks[t as usize];
        (task.weight, task.wmult) = NICE_M20;
        task.nopreempt = true;
    }

    /// Task `t` asks for `ns` of CPU, after which `then` fires. A task that was asleep
    /// wakes (`try_to_wake_up()` → `enqueue_entity()` → `wakeup_preempt()`).
    pub fn request(&mut self, now: Ns, t: u32, ns: Ns, then: Event, q: &mut EventQueue) {
        let task = &mut self.tasks[t as usize];
        task.bursts.push_back((ns, then));
        if self.curr == Some(t) {
            if !self.running && !self.dispatching {
                self.start_burst(now, q);
            }
            return;
        }
        if task.queued && !task.delayed {
            return;
        }
        let resched = self.update_curr(now);
        self.enqueue_woken(t);
        if self.dispatching {
            self.woke_in_dispatch = true;
            return;
        }
        if self.curr.is_none() {
            self.schedule(now, q);
        } else if now < self.starts_at {
            // picked during interrupt work that is not over: the idle loop picks at
            // its end (`schedule_idle()`), with this task on the runqueue too
            self.unpick();
            self.schedule(now, q);
        } else if self.running && self.curr.is_some_and(|c| self.tasks[c as usize].nopreempt) {
            // a kernel thread runs on: the wake-up's need_resched is seen at its
            // burst's end (settle())
            self.woke_in_dispatch = true;
            self.arm_tick(now, q);
        } else if resched || self.wakeup_preempts(t) {
            self.preempt(now, q);
        } else {
            self.arm_tick(now, q);
        }
    }

    /// The burst event `generation` fired: the current task's continuation, if the
    /// event is not stale. The caller dispatches it, then calls [`GuestCpu::settle`].
    pub fn burst_done(&mut self, now: Ns, generation: u32) -> Option<Event> {
        if !self.running || generation != self.generation {
            return None;
        }
        self.account(now);
        self.running = false;
        self.dispatching = true;
        let c = self.curr?;
        self.tasks[c as usize].bursts.pop_front().map(|b| b.1)
    }

    /// After a continuation: the current task runs its next burst, or has gone to
    /// sleep and the CPU picks the next task; a task woken meanwhile may preempt it.
    pub fn settle(&mut self, now: Ns, q: &mut EventQueue) {
        self.dispatching = false;
        let woke = std::mem::take(&mut self.woke_in_dispatch);
        let tick_resched = std::mem::take(&mut self.tick_resched);
        let Some(c) = self.curr else {
            self.schedule(now, q);
            return;
        };
        if self.tasks[c as usize].bursts.is_empty() {
            self.sleep_curr(c);
            self.schedule(now, q);
        } else if (woke && self.woken_preempt(c)) || (tick_resched && self.rq_wants_cpu(c)) {
            self.preempt(now, q);
        } else {
            self.start_burst(now, q);
            self.arm_tick(now, q);
        }
    }

    /// Interrupt work of `ns` (a completion's path, `blk_mq_end_request()` from the
    /// driver's interrupt): it takes the CPU from whatever runs, whose burst ends that
    /// much later — and is charged that time, as the guests' kernels do without
    /// `CONFIG_IRQ_TIME_ACCOUNTING`; a burst picked meanwhile starts after it.
    pub fn irq(&mut self, now: Ns, ns: Ns, q: &mut EventQueue) {
        self.irq_until = self.irq_until.max(now) + ns;
        if self.running {
            if self.starts_at > now {
                // picked during the interrupt work this one follows: it starts later
                self.starts_at = self.irq_until;
            }
            self.burst_end += ns;
            self.generation = self.generation.wrapping_add(1);
            q.push(self.burst_end, Event::CpuBurst(self.generation));
        }
    }

    /// The scheduler tick (`tick_sched_timer()` → `scheduler_tick()` →
    /// `task_tick_fair()`). Its interrupt takes the CPU like a completion's; it keeps
    /// ticking while a task runs or `io_pending` (a timer due within the jiffy keeps
    /// the idle CPU's tick: `tick_nohz_next_event()`).
    pub fn tick(&mut self, now: Ns, io_pending: bool, q: &mut EventQueue) {
        if self.tick_at != Some(now) {
            return;
        }
        self.tick_at = None;
        if self.tick_irq > 0 {
            self.irq(now, self.tick_irq, q);
            if self.curr.is_some() || io_pending {
                self.arm_tick(now, q);
            }
        }
        let Some(c) = self.curr else { return };
        if self.dispatching || !self.running {
            return;
        }
        let resched = match self.fair {
            FairSched::Cfs => {
                self.update_curr(now);
                self.cfs_tick_resched(c)
            }
            FairSched::Eevdf => self.update_curr(now),
        };
        if resched && self.rq_wants_cpu(c) && !self.tasks[c as usize].nopreempt {
            self.preempt(now, q);
        } else {
            // a kernel thread's need_resched is seen at its burst's end (settle())
            self.tick_resched |= resched;
            self.arm_tick(now, q);
        }
    }

    // ------------------------------------------------------------- internals

    /// Account the current task's time (`update_curr()`); true when EEVDF renewed its
    /// deadline with others waiting (`update_deadline()`: a reschedule).
    fn update_curr(&mut self, now: Ns) -> bool {
        let Some(c) = self.curr else { return false };
        self.account(now);
        let task = &mut self.tasks[c as usize];
        let mut resched = false;
        if self.fair == FairSched::Eevdf && task.vruntime >= task.deadline {
            task.deadline = task.vruntime + task.calc_delta_fair(MIN_GRANULARITY);
            self.protect = false;
            resched = true;
        }
        resched && self.nr_running() > 1
    }

    /// The current task's time since it was last accounted, without the kernel's
    /// checks: a burst's end is no scheduler event, only where this model cuts its
    /// work.
    fn account(&mut self, now: Ns) {
        let Some(c) = self.curr else { return };
        let delta = now.saturating_sub(self.exec_start) as i64;
        self.exec_start = self.exec_start.max(now);
        if delta <= 0 {
            return;
        }
        self.slice_exec += delta;
        let task = &mut self.tasks[c as usize];
        task.vruntime += task.calc_delta_fair(delta);
        self.update_min_vruntime();
    }

    /// Tasks that can run: the current one and the queued, not delayed.
    fn nr_running(&self) -> i64 {
        let queued = self
            .rq
            .iter()
            .filter(|&&t| !self.tasks[t as usize].delayed)
            .count();
        queued as i64 + i64::from(self.curr.is_some())
    }

    /// CFS's `update_min_vruntime()`: never backwards.
    fn update_min_vruntime(&mut self) {
        let mut v = self.curr.map(|c| self.tasks[c as usize].vruntime);
        if let Some(l) = self.leftmost() {
            let lv = self.tasks[l as usize].vruntime;
            v = Some(v.map_or(lv, |c| c.min(lv)));
        }
        if let Some(v) = v {
            self.min_vruntime = self.min_vruntime.max(v);
        }
    }

    /// The queued task with the least vruntime (ties: the earlier queued).
    fn leftmost(&self) -> Option<u32> {
        self.rq
            .iter()
            .copied()
            .filter(|&t| !self.tasks[t as usize].delayed)
            .min_by_key(|&t| (self.tasks[t as usize].vruntime, self.tasks[t as usize].seq))
    }

    /// The queue's and the current task's vruntimes summed by weight, and their
    /// weights (`cfs_rq->avg_vruntime`, `avg_load`; delayed sleepers count).
    fn weighted_sum(&self) -> (i128, i128) {
        let (mut sum, mut load) = (0i128, 0i128);
        for &t in self.rq.iter().chain(self.curr.iter()) {
            let task = &self.tasks[t as usize];
            sum += i128::from(task.vruntime) * i128::from(task.weight);
            load += i128::from(task.weight);
        }
        (sum, load)
    }

    /// EEVDF's `avg_vruntime()`: the weighted mean vruntime of the queue and the
    /// current task, rounded toward the smallest as the kernel's division of a
    /// negative sum is.
    fn avg_vruntime(&self) -> i64 {
        match self.weighted_sum() {
            (_, 0) => self.min_vruntime,
            (sum, load) => sum.div_euclid(load) as i64,
        }
    }

    /// `entity_eligible()`: no more service than its share.
    fn eligible(&self, t: u32) -> bool {
        let (sum, load) = self.weighted_sum();
        sum >= i128::from(self.tasks[t as usize].vruntime) * load
    }

    /// A woken task joins the runqueue (`place_entity()`; a delayed sleeper is simply
    /// runnable again, `requeue_delayed_entity()`).
    fn enqueue_woken(&mut self, t: u32) {
        self.seq += 1;
        let seq = self.seq;
        if self.tasks[t as usize].delayed {
            let lag = self.avg_vruntime() - self.tasks[t as usize].vruntime;
            let task = &mut self.tasks[t as usize];
            task.delayed = false;
            task.seq = seq;
            if lag > 0 {
                // DELAY_ZERO: eligible again by now, placed with no lag
                task.vlag = 0;
                self.rq.retain(|&u| u != t);
                self.place_eevdf(t);
                self.rq.push(t);
            }
            return;
        }
        match self.fair {
            FairSched::Cfs => {
                let floor = self.min_vruntime - SCHED_LATENCY / 2;
                let task = &mut self.tasks[t as usize];
                task.vruntime = task.vruntime.max(floor);
            }
            FairSched::Eevdf => self.place_eevdf(t),
        }
        let task = &mut self.tasks[t as usize];
        task.queued = true;
        task.seq = seq;
        self.rq.push(t);
    }

    /// EEVDF's `place_entity()` of a waking task: at the average less its lag,
    /// inflated for the weight it adds (PLACE_LAG), one slice to its deadline.
    fn place_eevdf(&mut self, t: u32) {
        let v = self.avg_vruntime();
        let load = self.weighted_sum().1 as i64;
        let task = &mut self.tasks[t as usize];
        let lag = if load > 0 {
            task.vlag * (load + task.weight) / load
        } else {
            0
        };
        task.vruntime = v - lag;
        task.deadline = task.vruntime + task.calc_delta_fair(MIN_GRANULARITY);
    }

    /// The current task goes to sleep (`dequeue_entity(DEQUEUE_SLEEP)`).
    fn sleep_curr(&mut self, c: u32) {
        if self.fair == FairSched::Eevdf {
            let limit = self.tasks[c as usize]
                .calc_delta_fair((2 * MIN_GRANULARITY).max(self.tick_ns as i64));
            let lag = (self.avg_vruntime() - self.tasks[c as usize].vruntime).clamp(-limit, limit);
            let eligible = self.eligible(c);
            let task = &mut self.tasks[c as usize];
            task.vlag = lag;
            if !eligible {
                // DELAY_DEQUEUE: it stays queued until it is picked
                task.delayed = true;
                task.queued = true;
                self.seq += 1;
                task.seq = self.seq;
                self.rq.push(c);
            }
        }
        self.curr = None;
        self.running = false;
    }

    /// Whether waking task `t` preempts the current one (`check_preempt_wakeup()`).
    fn wakeup_preempts(&self, t: u32) -> bool {
        let Some(c) = self.curr else { return true };
        match self.fair {
            FairSched::Cfs => self.cfs_wakeup_preempts(c, t),
            FairSched::Eevdf => self.pick_eevdf() == Some(t),
        }
    }

    /// Whether a task woken while `c` ran preempts it (the check made at the wake-up,
    /// acted on once `c`'s step is through).
    fn woken_preempt(&self, c: u32) -> bool {
        match self.fair {
            FairSched::Cfs => self
                .leftmost()
                .is_some_and(|l| self.cfs_wakeup_preempts(c, l)),
            FairSched::Eevdf => self.pick_eevdf().is_some_and(|p| p != c),
        }
    }

    /// CFS's `wakeup_preempt_entity()`: the current `c` is more than the woken `t`'s
    /// wakeup granularity (`wakeup_gran()`: in `t`'s virtual time) ahead of it.
    fn cfs_wakeup_preempts(&self, c: u32, t: u32) -> bool {
        let woken = &self.tasks[t as usize];
        self.tasks[c as usize].vruntime - woken.vruntime > woken.calc_delta_fair(WAKEUP_GRANULARITY)
    }

    /// Whether the pick after a reschedule is another task than the running `c`
    /// (`pick_next_entity()` with `c` put back: behind any task of equal vruntime).
    fn rq_wants_cpu(&self, c: u32) -> bool {
        match self.fair {
            FairSched::Cfs => self.leftmost().is_some_and(|l| {
                self.tasks[l as usize].vruntime <= self.tasks[c as usize].vruntime
            }),
            FairSched::Eevdf => self.pick_eevdf().is_some_and(|p| p != c),
        }
    }

    /// CFS's `check_preempt_tick()`: the current task has run its slice, or is more
    /// than a slice ahead of the leftmost after the minimum granularity.
    fn cfs_tick_resched(&self, c: u32) -> bool {
        let n = self.nr_running();
        if n <= 1 {
            return false;
        }
        let period = if n > NR_LATENCY {
            n * MIN_GRANULARITY
        } else {
            SCHED_LATENCY
        };
        // sched_slice(): the period by the task's weight in the queue's, at least
        // the minimum granularity (BASE_SLICE)
        let (_, load) = self.weighted_sum();
        let weight = i128::from(self.tasks[c as usize].weight);
        let ideal = ((i128::from(period) * weight / load.max(1)) as i64).max(MIN_GRANULARITY);
        if self.slice_exec > ideal {
            return true;
        }
        if self.slice_exec < MIN_GRANULARITY {
            return false;
        }
        self.leftmost().is_some_and(|l| {
            self.tasks[c as usize].vruntime - self.tasks[l as usize].vruntime > ideal
        })
    }

    /// EEVDF's `pick_eevdf()`: the current task while its slice is protected, else the
    /// eligible task with the earliest deadline (the current one included).
    fn pick_eevdf(&self) -> Option<u32> {
        let curr = self
            .curr
            .filter(|&c| !self.tasks[c as usize].bursts.is_empty() && self.eligible(c));
        if let Some(c) = curr
            && self.protect
            && self.nr_running() > 1
        {
            return Some(c);
        }
        let best = self
            .rq
            .iter()
            .copied()
            .filter(|&t| self.eligible(t))
            .min_by_key(|&t| (self.tasks[t as usize].deadline, self.tasks[t as usize].seq));
        match (best, curr) {
            (Some(b), Some(c))
                if self.tasks[c as usize].deadline < self.tasks[b as usize].deadline =>
            {
                Some(c)
            }
            (None, Some(c)) => Some(c),
            (b, _) => b.or_else(|| self.rq.first().copied()),
        }
    }

    /// The current task, picked during interrupt work that is not over, has not run:
    /// it goes back to the runqueue as it was, for the pick at the interrupt's end.
    fn unpick(&mut self) {
        let Some(c) = self.curr.take() else { return };
        self.running = false;
        self.generation = self.generation.wrapping_add(1);
        self.tasks[c as usize].queued = true;
        self.rq.push(c);
    }

    /// The current task is preempted: its running burst's rest goes back to the head of
    /// its bursts, it waits on the runqueue, and the pick runs.
    fn preempt(&mut self, now: Ns, q: &mut EventQueue) {
        if let Some(c) = self.curr.take() {
            self.update_curr(now);
            let task = &mut self.tasks[c as usize];
            if self.running
                && let Some(front) = task.bursts.front_mut()
            {
                front.0 = self.burst_end.saturating_sub(now);
            }
            self.running = false;
            self.generation = self.generation.wrapping_add(1);
            self.seq += 1;
            task.queued = true;
            task.seq = self.seq;
            self.rq.push(c);
        }
        self.schedule(now, q);
    }

    /// Pick the next task (`pick_next_task_fair()`) and run its first burst. A delayed
    /// sleeper picked finishes its dequeue, and the pick goes on.
    fn schedule(&mut self, now: Ns, q: &mut EventQueue) {
        debug_assert!(self.curr.is_none());
        loop {
            let next = match self.fair {
                FairSched::Cfs => self.leftmost(),
                FairSched::Eevdf => self.pick_eevdf(),
            };
            let Some(t) = next else { return };
            self.rq.retain(|&u| u != t);
            let task = &mut self.tasks[t as usize];
            task.queued = false;
            if task.delayed {
                task.delayed = false;
                task.vlag = 0;
                continue;
            }
            self.curr = Some(t);
            self.exec_start = now;
            self.slice_exec = 0;
            self.protect = true;
            self.start_burst(now, q);
            self.arm_tick(now, q);
            return;
        }
    }

    /// The current task's first burst starts running.
    fn start_burst(&mut self, now: Ns, q: &mut EventQueue) {
        let Some(c) = self.curr else { return };
        let Some(&(ns, _)) = self.tasks[c as usize].bursts.front() else {
            return;
        };
        self.running = true;
        let start = now.max(self.irq_until);
        self.exec_start = start;
        self.starts_at = start;
        self.burst_end = start + ns;
        self.generation = self.generation.wrapping_add(1);
        q.push(self.burst_end, Event::CpuBurst(self.generation));
    }

    /// A tick is pending while another task waits for the CPU.
    fn arm_tick(&mut self, now: Ns, q: &mut EventQueue) {
        if self.tick_at.is_some()
            || (self.tick_irq == 0 && (self.curr.is_none() || self.nr_running() < 2))
        {
            return;
        }
        let at = (now / self.tick_ns + 1) * self.tick_ns;
        self.tick_at = Some(at);
        q.push_timer(at, Event::CpuTick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::NSEC_PER_USEC;

    const US: Ns = NSEC_PER_USEC;

    /// Runs the CPU at HZ=250 until `end`, logging each task's continuation `(when,
    /// task)`; `next(task)` is what the task asks for after it (None: it sleeps). An
    /// `Event::Job(t)` pushed by the test wakes `t` for a burst of nothing.
    fn run(
        cpu: &mut GuestCpu,
        q: &mut EventQueue,
        end: Ns,
        mut next: impl FnMut(u32) -> Option<Ns>,
    ) -> Vec<(Ns, u32)> {
        let mut log = Vec::new();
        while q.peek_time().is_some_and(|t| t <= end) {
            let Some((now, ev)) = q.pop() else { break };
            match ev {
                Event::CpuBurst(g) => {
                    if let Some(Event::Job(t)) = cpu.burst_done(now, g) {
                        log.push((now, t));
                        if let Some(b) = next(t) {
                            cpu.request(now, t, b, Event::Job(t), q);
                        }
                        cpu.settle(now, q);
                    }
                }
                Event::CpuTick => cpu.tick(now, false, q),
                Event::Job(t) => cpu.request(now, t, 0, Event::Job(t), q),
                _ => {}
            }
        }
        log
    }

    /// When task 1 first runs, woken at `wake` beside task 0, which never sleeps and
    /// asks for `hog` bursts in turn.
    fn first_run_of_woken(fair: FairSched, wake: Ns, hog: &[Ns]) -> Ns {
        let mut cpu = GuestCpu::new(fair, 250, 2, 0);
        let mut q = EventQueue::new();
        cpu.request(0, 0, hog[0], Event::Job(0), &mut q);
        q.push(wake, Event::Job(1));
        let mut i = 0;
        let log = run(&mut cpu, &mut q, 20 * NSEC_PER_MSEC, |t| {
            (t == 0).then(|| {
                i += 1;
                hog[i % hog.len()]
            })
        });
        log.iter().find(|e| e.1 == 1).map_or(Ns::MAX, |e| e.0)
    }

    #[test]
    fn cfs_lets_a_sleeper_preempt_a_task_in_user_space_at_once() {
        // placed at min_vruntime − 3 ms, 3 ms behind the hog: past the 1 ms granularity
        let at = first_run_of_woken(FairSched::Cfs, 5 * NSEC_PER_MSEC, &[100 * US]);
        assert_eq!(at, 5 * NSEC_PER_MSEC);
    }

    #[test]
    fn kblockds_kworker_runs_its_burst_to_the_end_and_its_time_counts_86_times_less() {
        // the kworker (task 0) runs bursts of 2 ms; its virtual time grows 86.7 times
        // slower than its CPU time, so only after ~87 ms is a sleeper placed at
        // min_vruntime − 3 ms (0 here) more than CFS's 1 ms granularity behind it.
        // Woken at 89 ms, the sleeper would take the CPU at once from a fio job
        // (above); from the kernel thread it takes it at the burst's end, 90 ms
        let mut cpu = GuestCpu::new(FairSched::Cfs, 250, 2, 0);
        cpu.set_kblockd(0);
        let mut q = EventQueue::new();
        cpu.request(0, 0, 2 * NSEC_PER_MSEC, Event::Job(0), &mut q);
        q.push(89 * NSEC_PER_MSEC, Event::Job(1));
        let log = run(&mut cpu, &mut q, 95 * NSEC_PER_MSEC, |t| {
            (t == 0).then_some(2 * NSEC_PER_MSEC)
        });
        let woken = log.iter().find(|e| e.1 == 1).map(|e| e.0);
        assert_eq!(woken, Some(90 * NSEC_PER_MSEC));
        // by 95 ms, 94 ms of CPU at nice −20: 1.084 ms of virtual time (94 ms · 1024 /
        // 88761)
        let v = cpu.tasks[0].vruntime;
        assert!((1_084_300..=1_084_500).contains(&v), "{v}");
    }

    #[test]
    fn eevdf_keeps_the_cpu_for_the_running_slice_until_the_tick_sees_it_used() {
        // woken with no lag 0.1 ms in: the hog's slice is protected, and nothing
        // updates its time before the 4 ms tick renews its deadline
        let at = first_run_of_woken(FairSched::Eevdf, 100 * US, &[100 * US]);
        assert_eq!(at, 4 * NSEC_PER_MSEC);
        // CFS: the sleeper is not 1 ms behind yet (0.1 ms run), so it too waits for
        // the tick, which finds the hog past its 3 ms slice (6 ms over two tasks)
        let at = first_run_of_woken(FairSched::Cfs, 100 * US, &[100 * US]);
        assert_eq!(at, 4 * NSEC_PER_MSEC);
    }

    #[test]
    fn an_interrupt_delays_the_running_burst_by_its_length() {
        let mut cpu = GuestCpu::new(FairSched::Eevdf, 250, 1, 0);
        let mut q = EventQueue::new();
        cpu.request(0, 0, 100 * US, Event::Job(0), &mut q);
        let Some((at, _)) = q.pop() else { panic!() };
        assert_eq!(at, 100 * US);
        cpu.irq(50 * US, 7 * US, &mut q);
        let log = run(&mut cpu, &mut q, NSEC_PER_MSEC, |_| None);
        assert_eq!(log, [(107 * US, 0)]);
        // an interrupt on an idle CPU holds off the next burst
        cpu.irq(200 * US, 5 * US, &mut q);
        cpu.request(200 * US, 0, 10 * US, Event::Job(0), &mut q);
        let log = run(&mut cpu, &mut q, NSEC_PER_MSEC, |_| None);
        assert_eq!(log, [(215 * US, 0)]);
    }

    #[test]
    fn an_idle_cpu_picks_at_the_interrupts_end_among_every_task_woken_in_it() {
        // task 0 runs 0.5 ms and sleeps: half a wakeup granularity ahead of task 1
        let mut cpu = GuestCpu::new(FairSched::Cfs, 250, 2, 0);
        let mut q = EventQueue::new();
        cpu.request(0, 0, 500 * US, Event::Job(0), &mut q);
        run(&mut cpu, &mut q, NSEC_PER_MSEC, |_| None);
        // an interrupt of 5 µs wakes task 0, then task 1 within it: the pick at its
        // end takes the leftmost, task 1 (picked at once, task 0 would keep the CPU)
        let t = 10 * NSEC_PER_MSEC;
        cpu.irq(t, 5 * US, &mut q);
        cpu.request(t, 0, 10 * US, Event::Job(0), &mut q);
        cpu.request(t + US, 1, 10 * US, Event::Job(1), &mut q);
        let log = run(&mut cpu, &mut q, t + NSEC_PER_MSEC, |_| None);
        assert_eq!(log, [(t + 15 * US, 1), (t + 25 * US, 0)]);
        // woken after the interrupt's end, task 1 waits: task 0 has started, and is
        // not a granularity ahead
        let t = 20 * NSEC_PER_MSEC;
        cpu.irq(t, 5 * US, &mut q);
        cpu.request(t, 0, 10 * US, Event::Job(0), &mut q);
        cpu.request(t + 6 * US, 1, 10 * US, Event::Job(1), &mut q);
        let log = run(&mut cpu, &mut q, t + NSEC_PER_MSEC, |_| None);
        assert_eq!(log, [(t + 15 * US, 0), (t + 25 * US, 1)]);
    }

    #[test]
    fn the_tick_interrupt_takes_the_cpu_every_jiffy_while_a_task_runs() {
        // a 10 ms burst from 0 at HZ=250 sees the ticks at 4 and 8 ms, 3 µs each
        let mut cpu = GuestCpu::new(FairSched::Eevdf, 250, 1, 3 * US);
        let mut q = EventQueue::new();
        cpu.request(0, 0, 10 * NSEC_PER_MSEC, Event::Job(0), &mut q);
        let log = run(&mut cpu, &mut q, 20 * NSEC_PER_MSEC, |_| None);
        assert_eq!(log, [(10 * NSEC_PER_MSEC + 6 * US, 0)]);
        // idle with nothing in flight, the tick stops: a burst at 30 ms runs whole
        // until the next tick (32 ms)
        q.push(30 * NSEC_PER_MSEC, Event::Job(0));
        let log = run(&mut cpu, &mut q, 40 * NSEC_PER_MSEC, |_| None);
        assert_eq!(log, [(30 * NSEC_PER_MSEC, 0)]);
        assert!(q.peek_time().is_none(), "the tick went on while idle");
        // without the key the tick costs nothing
        let mut cpu = GuestCpu::new(FairSched::Eevdf, 250, 1, 0);
        let mut q = EventQueue::new();
        cpu.request(0, 0, 10 * NSEC_PER_MSEC, Event::Job(0), &mut q);
        let log = run(&mut cpu, &mut q, 60 * NSEC_PER_MSEC, |_| None);
        assert_eq!(log, [(10 * NSEC_PER_MSEC, 0)]);
    }

    #[test]
    fn the_fair_class_follows_the_version_and_the_switch() {
        assert_eq!(fair_for("6.1", &[]).unwrap(), FairSched::Cfs);
        assert_eq!(fair_for("6.5.13", &[]).unwrap(), FairSched::Cfs);
        assert_eq!(fair_for("6.6", &[]).unwrap(), FairSched::Eevdf);
        let o = [("sched.fair".to_string(), "cfs".to_string())];
        assert_eq!(fair_for("6.12", &o).unwrap(), FairSched::Cfs);
        let bad = [("sched.fair".to_string(), "bfs".to_string())];
        assert_eq!(fair_for("6.12", &bad).unwrap_err().key, "sched.fair");
        assert_eq!(FairSched::Eevdf.to_string(), "sched.fair=eevdf");
    }
}
