//! The running blk-iolatency of one device: [`BlkIolatency`] (`struct blk_iolatency`
//! plus one `iolatency_grp` and blkg delay per cgroup).
//!
//! It knows nothing of the engine: the caller hands it bios at the rq-qos hooks and
//! gets back what the kernel would do.
//! - [`BlkIolatency::throttle`] (`blkcg_iolatency_throttle()`): walks the bio's
//!   cgroup and every ancestor below the root; at each, `check_scale_change()`, then
//!   an inflight slot — at once for issue-as-root bios, else `rq_qos_wait()` behind
//!   any earlier sleeper. A bio that must sleep is parked on that group's FIFO with an
//!   opaque `token` and the walk stops there; it resumes when a completion
//!   (`wake_up()`: the first sleeper, if a slot is free) or a depth increase
//!   (`wake_up_all()`) hands it the slot, after the waking call is done (the woken task
//!   runs later). Finished walks are collected for [`BlkIolatency::take_released`].
//! - [`BlkIolatency::done_bio`] (`blkcg_iolatency_done_bio()`): per level, drop the
//!   slot, record the latency from the post-throttle issue stamp, end the window when
//!   it is old enough (`iolatency_check_latencies()`, one [`WindowRow`]), wake a sleeper.
//! - the 1 s timer (`blkiolatency_timer_fn()`), armed by a throttle when not pending,
//!   on the jiffies timer wheel: [`BlkIolatency::timer_at`] / [`BlkIolatency::timer_fn`].
//! - [`BlkIolatency::maybe_throttle_current`]: the sleep on return to user space of a
//!   task whose bio was marked (`blkcg_schedule_throttle()`).
//! - [`BlkIolatency::set_limit`] (`iolatency_set_limit()` after
//!   `crate::blkcg::iolatency` parsed the line) and `io.stat`'s keys.

use std::collections::VecDeque;

use super::delay::{BlkgDelay, ReturnToUser};
use super::grp::{self, DEFAULT_SCALE_COOKIE, IolatGrp, LatencyStat, Reaction, Verdict};
use super::{EnableSwitch, IolatencyBehaviour, StsAgain};
use crate::blkcg::CgroupTree;
use crate::sim::{NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC, Ns};

/// `blk_time_get_ns()` at simulated time 0: the machine has been up a while, so the
/// zero-initialised `last_scale_event` and `delay_start` lie long enough in the past
/// (any uptime of 1 s or more gives the same results; the kernel's is never less).
pub const UPTIME_AT_START: Ns = 60 * NSEC_PER_SEC;

/// The kernel's clock for simulated time `now`.
fn ktime(now: Ns) -> Ns {
    now + UPTIME_AT_START
}

/// Device and kernel facts the controller needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IolatencyConfig {
    pub behaviour: IolatencyBehaviour,
    /// CONFIG_HZ, for the timer.
    pub hz: u32,
    /// jiffies at t = 0 (`INITIAL_JIFFIES`), so the timer wheel's rounding is aligned
    /// as on a machine.
    pub start_jiffies: u64,
    /// `q->nr_requests`: the scale steps' `qd`.
    pub nr_requests: u32,
    /// `!blk_queue_nonrot()`: the mean test instead of the p90 test.
    pub rotational: bool,
    /// `blkcg_debug_stats`: io.stat shows the keys only with it.
    pub debug_stats: bool,
}

/// What a bio passing [`BlkIolatency::throttle`] must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bypass {
    /// Nothing configured on the device (`!blkiolat->enabled`): the bio goes on and
    /// is not counted.
    NotEnabled,
    /// Slots taken at every level; `notify_resume` = a group on the path has
    /// `use_delay`, so the task sleeps on return to user space.
    Go { notify_resume: bool },
    /// Parked: it comes back from [`BlkIolatency::take_released`] with its token.
    Wait,
}

/// A parked bio whose walk finished: the caller continues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    pub token: u64,
    pub notify_resume: bool,
}

/// A completing bio, as `blkcg_iolatency_done_bio()` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoneBio {
    pub cgroup: u32,
    /// The issue stamp (`bio->bi_issue`, set after blk-throttle).
    pub issued: Ns,
    pub issue_as_root: bool,
    /// What [`BlkIolatency::throttle`] said: `false` for [`Bypass::NotEnabled`].
    pub counted: bool,
    /// Completed with `BLK_STS_AGAIN`.
    pub again: bool,
}

/// What the controller reports for the timeline: a window, or a group every sample tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IolatRow {
    Window(WindowRow),
    Tick(TickRow),
}

/// One ended window of one group (`iolatency_check_latencies()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowRow {
    pub cgroup: u32,
    /// The completion that ended it.
    pub at: Ns,
    /// Samples in the window.
    pub total: u64,
    /// Non-rotational disk: the p90 test (`missed` counts); else the mean test.
    pub ssd: bool,
    /// Non-rotational: samples at or above the target.
    pub missed: u64,
    /// The window's mean latency, ns (the kernel computes it on rotational disks only;
    /// on others it is shown, not used).
    pub mean: u64,
    /// Rotational: the running `lat_avg`, ns.
    pub lat_avg: u64,
    pub target: u64,
    /// `latency_sum_ok()` for the window.
    pub ok: bool,
    pub verdict: Verdict,
    /// The parent's cookie after the decision.
    pub cookie: u32,
    pub max_depth: u32,
    pub use_delay: i32,
}

/// A group at a sample tick: every group with a target and every sibling of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickRow {
    pub cgroup: u32,
    pub at: Ns,
    pub target: u64,
    pub max_depth: u32,
    pub inflight: i32,
    pub sleepers: u32,
    /// The parent's cookie as this group last saw it.
    pub cookie: u32,
    pub use_delay: i32,
    pub delay_nsec: u64,
    /// The controller's `enabled`: without it `max_depth` is not enforced.
    pub enabled: bool,
}

/// A bio's walk up the tree, parked at `at` or resuming there.
#[derive(Debug, Clone, Copy)]
struct Walk {
    token: u64,
    at: u32,
    issue_as_root: bool,
    notify_resume: bool,
}

/// Per-cgroup state: the policy data, its `rq_wait` sleepers, the blkg delay.
#[derive(Debug, Clone)]
struct Node {
    parent: Option<u32>,
    grp: IolatGrp,
    sleepers: VecDeque<Walk>,
    delay: BlkgDelay,
    /// Sum of the window's samples, for [`WindowRow::mean`].
    win_sum: u64,
    /// A child of this group had a target once: its children are in the tick rows.
    watched: bool,
}

/// blk-iolatency on one device; `None` of it exists before the first `io.latency`
/// write (lazy since 6.4; earlier kernels created it with the disk, with the same
/// effect while no target is set).
#[derive(Debug, Clone)]
pub struct BlkIolatency {
    cfg: IolatencyConfig,
    nodes: Vec<Node>,
    /// The first write happened (lazy init, 6.4+).
    created: bool,
    enable_cnt: u32,
    enabled: bool,
    timer: Option<Ns>,
    resume: VecDeque<Walk>,
    released: Vec<Released>,
    rows: Vec<IolatRow>,
}

impl BlkIolatency {
    /// The controller for cgroups `tree`, to be created by the first
    /// [`BlkIolatency::set_limit`] (`blk_iolatency_init()` + `blkcg_activate_policy()`:
    /// then every cgroup gets its group, `iolatency_pd_init()`).
    pub fn new(cfg: IolatencyConfig, tree: &CgroupTree) -> BlkIolatency {
        let nodes = (0..tree.len() as u32)
            .map(|cg| Node {
                parent: tree.parent(cg),
                grp: IolatGrp::new(!cfg.rotational, 0, DEFAULT_SCALE_COOKIE),
                sleepers: VecDeque::new(),
                delay: BlkgDelay::default(),
                win_sum: 0,
                watched: false,
            })
            .collect();
        BlkIolatency {
            cfg,
            nodes,
            created: false,
            enable_cnt: 0,
            enabled: false,
            timer: None,
            resume: VecDeque::new(),
            released: Vec::new(),
            rows: Vec::new(),
        }
    }

    pub fn config(&self) -> &IolatencyConfig {
        &self.cfg
    }

    fn qd(&self) -> u64 {
        u64::from(self.cfg.nr_requests)
    }

    /// The cgroup and its ancestors below the root (`while (blkg && blkg->parent)`).
    fn path(&self, cg: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(cg), |&c| self.nodes[c as usize].parent)
            .take_while(|&c| self.nodes[c as usize].parent.is_some())
    }

    /// `iolatency_set_limit()` once the line parsed: `target_ns` 0 = off. Mirrors
    /// `iolatency_set_min_lat_nsec()` and, when the value changed,
    /// `iolatency_clear_scaling()`.
    pub fn set_limit(&mut self, cg: u32, target_ns: u64, now: Ns) {
        if !std::mem::replace(&mut self.created, true) {
            for n in &mut self.nodes {
                n.grp.window_start = now;
            }
        }
        let b = self.cfg.behaviour;
        let node = &mut self.nodes[cg as usize];
        let oldval = node.grp.min_lat_nsec;
        node.grp.min_lat_nsec = target_ns;
        node.grp.cur_win_nsec = grp::window_of(target_ns);
        if oldval == 0 && target_ns != 0 {
            self.enable_cnt += 1;
        }
        if target_ns != 0
            && let Some(p) = node.parent
        {
            self.nodes[p as usize].watched = true;
        }
        let node = &mut self.nodes[cg as usize];
        if oldval != 0 && target_ns == 0 {
            if b.off_clears_delay {
                node.delay.clear_delay();
            }
            self.enable_cnt -= 1;
        }
        // blkiolatency_enable_work_fn(): the flip itself (see EnableSwitch for what
        // each version does with bios in flight)
        self.enabled = self.enable_cnt > 0;
        if oldval != target_ns
            && let Some(p) = self.nodes[cg as usize].parent
        {
            self.nodes[p as usize].grp.child_lat.clear_scaling();
        }
    }

    /// The target of `cg` in ns (0 = none).
    pub fn target(&self, cg: u32) -> u64 {
        self.nodes[cg as usize].grp.min_lat_nsec
    }

    /// io.stat's keys for `cg` (`iolatency_pd_stat()` and blk-cgroup's delay keys),
    /// each with its leading space; empty without `blkcg_debug_stats`.
    pub fn stat(&self, cg: u32) -> String {
        if !self.cfg.debug_stats {
            return String::new();
        }
        let n = &self.nodes[cg as usize];
        let g = &n.grp;
        let depth = if g.max_depth == u32::MAX {
            "max".to_string()
        } else {
            g.max_depth.to_string()
        };
        let mut s = if g.ssd {
            format!(
                " missed={} total={} depth={depth}",
                g.stat.missed, g.stat.total
            )
        } else {
            format!(
                " depth={depth} avg_lat={} win={}",
                g.lat_avg / NSEC_PER_USEC,
                g.cur_win_nsec / NSEC_PER_MSEC
            )
        };
        if n.delay.use_delay != 0 {
            s += &format!(
                " use_delay={} delay_nsec={}",
                n.delay.use_delay, n.delay.delay_nsec
            );
        }
        s
    }

    /// `max_depth` of `cg` (`u32::MAX` = unlimited).
    pub fn max_depth(&self, cg: u32) -> u32 {
        self.nodes[cg as usize].grp.max_depth
    }

    /// Inflight slots `cg` holds.
    pub fn inflight(&self, cg: u32) -> i32 {
        self.nodes[cg as usize].grp.inflight
    }

    /// Bios parked on `cg`'s wait queue.
    pub fn sleepers(&self, cg: u32) -> usize {
        self.nodes[cg as usize].sleepers.len()
    }

    /// The parent-side cookie of `cg`'s children.
    pub fn child_cookie(&self, cg: u32) -> u32 {
        self.nodes[cg as usize].grp.child_lat.scale_cookie
    }

    /// `use_delay` of `cg`'s blkg.
    pub fn use_delay(&self, cg: u32) -> i32 {
        self.nodes[cg as usize].delay.use_delay
    }

    /// `blkcg_iolatency_throttle()` for a bio of `cg`; `token` names it if it parks.
    pub fn throttle(&mut self, token: u64, cg: u32, issue_as_root: bool, now: Ns) -> Bypass {
        if !self.enabled {
            return Bypass::NotEnabled;
        }
        let walk = Walk {
            token,
            at: cg,
            issue_as_root,
            notify_resume: false,
        };
        let out = match self.walk(walk, now) {
            Some(w) => Bypass::Go {
                notify_resume: w.notify_resume,
            },
            None => Bypass::Wait,
        };
        self.run_resumes(now);
        out
    }

    /// The walk from `w.at` up; `Some` when it took every slot, `None` when parked.
    fn walk(&mut self, mut w: Walk, now: Ns) -> Option<Walk> {
        while self.nodes[w.at as usize].parent.is_some() {
            let at = w.at;
            self.check_scale_change(at);
            let node = &mut self.nodes[at as usize];
            // __blkcg_iolatency_throttle()
            if node.delay.use_delay != 0 {
                w.notify_resume = true; // blkcg_schedule_throttle()
            }
            if w.issue_as_root {
                node.grp.inflight += 1;
            } else if !(node.sleepers.is_empty() && node.grp.inc_below()) {
                node.sleepers.push_back(w);
                return None;
            }
            w.at = node.parent.unwrap_or(0);
        }
        self.arm_timer(now);
        Some(w)
    }

    /// `if (!timer_pending()) mod_timer(&timer, jiffies + HZ)`: the wheel rounds the
    /// expiry up to its level's granularity (`calc_index()`), so it never fires early.
    fn arm_timer(&mut self, now: Ns) {
        if self.timer.is_some() {
            return;
        }
        let hz = u64::from(self.cfg.hz.max(1));
        let clk = self.cfg.start_jiffies
            + (u128::from(now) * u128::from(hz) / u128::from(NSEC_PER_SEC)) as u64;
        let bucket = crate::sim::jiffies::wheel_bucket(clk + hz, clk);
        let d = u128::from(bucket - self.cfg.start_jiffies) * u128::from(NSEC_PER_SEC);
        self.timer = Some(d.div_ceil(u128::from(hz)) as Ns);
    }

    /// When the pending timer fires, if armed.
    pub fn timer_at(&self) -> Option<Ns> {
        self.timer
    }

    /// `blkiolatency_timer_fn()`: every parent scaled down with no `scale_grp` steps its
    /// cookie up; a `scale_grp` 5 s after the last scale event is forgotten.
    pub fn timer_fn(&mut self, now: Ns) {
        self.timer = None;
        let qd = self.qd();
        for n in &mut self.nodes {
            let li = &mut n.grp.child_lat;
            let now = ktime(now);
            if li.scale_cookie >= DEFAULT_SCALE_COOKIE || li.last_scale_event >= now {
                continue;
            }
            if li.scale_grp.is_none() {
                li.scale_cookie_change(qd, true);
            } else if now - li.last_scale_event >= 5 * NSEC_PER_SEC {
                li.scale_grp = None;
            }
        }
    }

    /// `check_scale_change()` of `cg` against its parent's cookie.
    fn check_scale_change(&mut self, cg: u32) {
        let Some(p) = self.nodes[cg as usize].parent else {
            return;
        };
        let lat_info = self.nodes[p as usize].grp.child_lat;
        let qd = self.qd();
        let node = &mut self.nodes[cg as usize];
        match node.grp.check_scale_change(&lat_info) {
            Reaction::None => {}
            Reaction::UseDelay => node.delay.use_delay(),
            Reaction::Unthrottle => {
                node.delay.clear_delay();
                self.wake(cg, true);
            }
            Reaction::Scale { up } => {
                let delay = &mut node.delay;
                if node.grp.scale_change(qd, up, || delay.unuse_delay()) {
                    self.wake(cg, true);
                }
            }
        }
    }

    /// `wake_up()` (`all` = false) / `wake_up_all()` through `rq_qos_wake_function()`:
    /// sleepers in order take a slot for themselves until one cannot; the woken walks
    /// continue after the current call.
    fn wake(&mut self, cg: u32, all: bool) {
        let node = &mut self.nodes[cg as usize];
        while let Some(&w) = node.sleepers.front() {
            if !node.grp.inc_below() {
                break;
            }
            node.sleepers.pop_front();
            self.resume.push_back(Walk {
                at: node.parent.unwrap_or(0),
                ..w
            });
            if !all {
                break;
            }
        }
    }

    fn run_resumes(&mut self, now: Ns) {
        while let Some(w) = self.resume.pop_front() {
            if let Some(w) = self.walk(w, now) {
                self.released.push(Released {
                    token: w.token,
                    notify_resume: w.notify_resume,
                });
            }
        }
    }

    /// Parked bios whose walk finished since the last call, in the order they did.
    pub fn take_released(&mut self) -> Vec<Released> {
        std::mem::take(&mut self.released)
    }

    /// Rows made since the last call: windows as they ended, then ticks.
    pub fn take_rows(&mut self) -> Vec<IolatRow> {
        std::mem::take(&mut self.rows)
    }

    /// A sample tick: one [`TickRow`] per group that has or had a target and per
    /// sibling of one.
    pub fn sample(&mut self, now: Ns) {
        for (cg, n) in self.nodes.iter().enumerate() {
            if !n.parent.is_some_and(|p| self.nodes[p as usize].watched) {
                continue;
            }
            self.rows.push(IolatRow::Tick(TickRow {
                cgroup: cg as u32,
                at: now,
                target: n.grp.min_lat_nsec,
                max_depth: n.grp.max_depth,
                inflight: n.grp.inflight,
                sleepers: n.sleepers.len() as u32,
                cookie: n.grp.scale_cookie,
                use_delay: n.delay.use_delay,
                delay_nsec: n.delay.delay_nsec,
                enabled: self.enabled,
            }));
        }
    }

    /// `blkcg_iolatency_done_bio()`.
    pub fn done_bio(&mut self, bio: DoneBio, now: Ns) {
        let accounted = match self.cfg.behaviour.enable {
            EnableSwitch::Frozen => bio.counted,
            // the live switch: whatever it says now, counted or not
            EnableSwitch::Live => self.enabled,
        };
        if !accounted {
            return;
        }
        let skip_again = bio.again && self.cfg.behaviour.sts_again == StsAgain::Skip;
        let path: Vec<u32> = self.path(bio.cgroup).collect();
        for cg in path {
            let node = &mut self.nodes[cg as usize];
            node.grp.inflight -= 1;
            if node.grp.min_lat_nsec != 0 && !skip_again {
                self.record_time(cg, bio.issued, now, bio.issue_as_root);
                let g = &mut self.nodes[cg as usize].grp;
                if now > g.window_start && now - g.window_start >= g.cur_win_nsec {
                    g.window_start = now;
                    self.check_latencies(cg, now);
                }
            }
            self.wake(cg, false);
        }
        self.run_resumes(now);
    }

    /// `iolatency_record_time()`.
    fn record_time(&mut self, cg: u32, start: Ns, now: Ns, issue_as_root: bool) {
        if now <= start {
            return;
        }
        let req_time = now - start;
        let node = &mut self.nodes[cg as usize];
        let g = &mut node.grp;
        // issue-as-root bios of a throttled group are not samples: they add delay
        if issue_as_root && g.max_depth != u32::MAX {
            if req_time < g.min_lat_nsec {
                node.delay.add_delay(ktime(now), g.min_lat_nsec - req_time);
            }
            return;
        }
        g.stat.record(g.ssd, req_time, g.min_lat_nsec);
        node.win_sum = node.win_sum.wrapping_add(req_time);
    }

    /// `iolatency_check_latencies()`: sum the window, decide with the parent's info.
    fn check_latencies(&mut self, cg: u32, now: Ns) {
        let Some(p) = self.nodes[cg as usize].parent else {
            return;
        };
        let qd = self.qd();
        let g = &mut self.nodes[cg as usize].grp;
        let mut stat = LatencyStat::default();
        stat.sum(g.ssd, &g.stat);
        g.stat = LatencyStat::default();
        let mut lat_info = self.nodes[p as usize].grp.child_lat;
        let node = &mut self.nodes[cg as usize];
        let win_sum = std::mem::take(&mut node.win_sum);
        let g = &mut node.grp;
        let verdict = grp::check_latencies(g, cg, &stat, &mut lat_info, qd, ktime(now));
        let total = stat.samples(g.ssd);
        self.rows.push(IolatRow::Window(WindowRow {
            cgroup: cg,
            at: now,
            total,
            ssd: g.ssd,
            missed: stat.missed,
            mean: win_sum / total.max(1),
            lat_avg: g.lat_avg,
            target: g.min_lat_nsec,
            ok: stat.ok(g.ssd, g.min_lat_nsec),
            verdict,
            cookie: lat_info.scale_cookie,
            max_depth: g.max_depth,
            use_delay: node.delay.use_delay,
        }));
        self.nodes[p as usize].grp.child_lat = lat_info;
    }

    /// `blkcg_maybe_throttle_current()` for a task of `cg` whose bio was marked: the
    /// sleep on return to user space.
    pub fn maybe_throttle_current(&mut self, cg: u32, now: Ns) -> Ns {
        let mut r = ReturnToUser::default();
        let mut at = Some(cg);
        while let Some(c) = at {
            let node = &mut self.nodes[c as usize];
            if node.parent.is_none() {
                break;
            }
            r.visit(&mut node.delay, ktime(now));
            at = node.parent;
        }
        r.sleep()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iolatency::behaviour_for;

    const MS: Ns = NSEC_PER_MSEC;

    /// root ─ p ─ {a, b}; `p/a` protected.
    fn setup(version: &str, rotational: bool) -> (BlkIolatency, u32, u32, u32) {
        let mut t = CgroupTree::default();
        let a = t.ensure("p/a");
        let b = t.ensure("p/b");
        let p = t.find("p").unwrap();
        let cfg = IolatencyConfig {
            behaviour: behaviour_for(version, &[]).unwrap(),
            hz: 250,
            start_jiffies: 0,
            nr_requests: 32,
            rotational,
            debug_stats: true,
        };
        (BlkIolatency::new(cfg, &t), p, a, b)
    }

    fn done(l: &mut BlkIolatency, cg: u32, issued: Ns, now: Ns) {
        let bio = DoneBio {
            cgroup: cg,
            issued,
            issue_as_root: false,
            counted: true,
            again: false,
        };
        l.done_bio(bio, now);
    }

    #[test]
    fn nothing_happens_without_a_target() {
        let (mut l, _, a, _) = setup("newest", false);
        assert_eq!(l.throttle(1, a, false, 0), Bypass::NotEnabled);
        assert_eq!(l.timer_at(), None);
        assert_eq!(l.stat(a), " missed=0 total=0 depth=max");
    }

    #[test]
    fn slots_at_every_level_and_fifo_wakeups() {
        let (mut l, p, a, b) = setup("newest", false);
        l.set_limit(a, 2 * MS, 0);
        l.nodes[b as usize].grp.max_depth = 2;
        for tok in 0..2 {
            assert_eq!(
                l.throttle(tok, b, false, 0),
                Bypass::Go {
                    notify_resume: false
                }
            );
        }
        assert_eq!((l.inflight(b), l.inflight(p)), (2, 2));
        assert_eq!(l.throttle(2, b, false, 0), Bypass::Wait);
        assert_eq!(l.throttle(3, b, false, 0), Bypass::Wait);
        // issue-as-root takes a slot beyond max_depth without waiting
        assert_eq!(
            l.throttle(9, b, true, 0),
            Bypass::Go {
                notify_resume: false
            }
        );
        assert_eq!(l.inflight(b), 3);
        // two completions: 3 → 2 is still not below 2, so nobody wakes; then 2 → 1: bio 2
        done(&mut l, b, 0, MS);
        assert!(l.take_released().is_empty());
        done(&mut l, b, 0, MS);
        let r = l.take_released();
        assert_eq!(r.iter().map(|r| r.token).collect::<Vec<_>>(), vec![2]);
        assert_eq!((l.inflight(b), l.inflight(p), l.sleepers(b)), (2, 2, 1));
        // the timer was armed by the first throttle: jiffies 0 + 250 at HZ=250 is on
        // wheel level 1 (8-jiffy buckets): fires at jiffy 256 = 1.024 s
        assert_eq!(l.timer_at(), Some(1_024 * MS));
    }

    #[test]
    fn windows_end_only_on_completions_and_scale_the_sibling() {
        let (mut l, p, a, b) = setup("newest", false);
        l.set_limit(a, 2 * MS, 0); // window 100 ms
        // 20 completions of `a` at 3 ms inside the first window: no row yet
        for i in 0..20 {
            assert!(matches!(l.throttle(i, a, false, 0), Bypass::Go { .. }));
            done(&mut l, a, i * MS, i * MS + 3 * MS);
        }
        assert!(l.take_rows().is_empty());
        assert_eq!(l.stat(a), " missed=20 total=20 depth=max");
        // the first completion 100 ms after the window start ends it
        assert!(matches!(l.throttle(50, a, false, 0), Bypass::Go { .. }));
        done(&mut l, a, 597 * MS, 600 * MS);
        let rows = l.take_rows();
        assert_eq!(rows.len(), 1);
        let IolatRow::Window(r) = rows[0] else {
            panic!("a window row")
        };
        assert_eq!(
            (r.total, r.missed, r.ok, r.verdict),
            (21, 21, false, Verdict::Down)
        );
        assert_eq!(r.cookie, DEFAULT_SCALE_COOKIE - 8);
        assert_eq!(l.child_cookie(p), DEFAULT_SCALE_COOKIE - 8);
        // b learns of it at its next submission: unlimited clamped to 32, halved
        assert_eq!(l.max_depth(b), u32::MAX);
        l.throttle(100, b, false, 600 * MS);
        assert_eq!(l.max_depth(b), 16);
        // a, the group with the lowest target, is spared
        l.throttle(101, a, false, 600 * MS);
        assert_eq!(l.max_depth(a), u32::MAX);
    }

    #[test]
    fn lifting_the_target_unthrottles_at_the_next_submission() {
        let (mut l, p, a, b) = setup("newest", false);
        l.set_limit(a, 2 * MS, 0);
        l.set_limit(b, 10_000 * MS, 0); // keeps the controller enabled
        // a scaled its siblings down; b, with a higher target and enough samples, is
        // not spared
        l.nodes[b as usize].grp.nr_samples = 100;
        let li = &mut l.nodes[p as usize].grp.child_lat;
        li.scale_lat = 2 * MS;
        li.scale_grp = Some(a);
        li.scale_cookie_change(32, false);
        l.throttle(1, b, false, 0);
        assert_eq!(l.max_depth(b), 16);
        l.set_limit(a, 0, 0);
        assert_eq!(l.child_cookie(p), DEFAULT_SCALE_COOKIE);
        l.throttle(2, b, false, MS);
        assert_eq!(l.max_depth(b), u32::MAX);
    }

    #[test]
    fn use_delay_and_the_meta_delay() {
        let (mut l, p, a, b) = setup("newest", false);
        l.set_limit(a, 2 * MS, 0);
        l.nodes[b as usize].grp.max_depth = 1;
        l.nodes[p as usize]
            .grp
            .child_lat
            .scale_cookie_change(32, false);
        // b at depth 1 asked to go lower: use_delay, and its task is marked
        assert_eq!(
            l.throttle(1, b, false, 0),
            Bypass::Go {
                notify_resume: true
            }
        );
        assert_eq!(l.use_delay(b), 1);
        // a meta bio of b completing in 0.5 ms charges 2 − 0.5 ms... only with a target
        // on b; b has none, so a's own meta bio shows it once a is throttled too
        l.nodes[a as usize].grp.max_depth = 4;
        l.throttle(2, a, true, 0);
        let meta = DoneBio {
            cgroup: a,
            issued: 10 * MS,
            issue_as_root: true,
            counted: true,
            again: false,
        };
        l.done_bio(meta, 10 * MS + MS / 2);
        assert_eq!(l.nodes[a as usize].delay.delay_nsec, 3 * MS / 2);
        assert_eq!(l.stat(a), " missed=0 total=0 depth=4");
        // b's task sleeps nothing: b has use_delay but no debt
        assert_eq!(l.maybe_throttle_current(b, 20 * MS), 0);
        l.nodes[b as usize]
            .delay
            .add_delay(2 * NSEC_PER_SEC, 400 * MS);
        assert_eq!(
            l.maybe_throttle_current(b, 2 * NSEC_PER_SEC),
            crate::iolatency::delay::MAX_SLEEP_NS
        );
        assert_eq!(
            l.stat(b),
            format!(
                " missed=0 total=0 depth=1 use_delay=1 delay_nsec={}",
                400 * MS
            )
        );
    }

    #[test]
    fn target_max_clears_use_delay_from_5_3() {
        for (v, cleared) in [("4.19", false), ("5.3", true)] {
            let (mut l, _, a, _) = setup(v, false);
            l.set_limit(a, 2 * MS, 0);
            l.nodes[a as usize].delay.use_delay();
            l.set_limit(a, 0, 0);
            assert_eq!(l.use_delay(a) == 0, cleared, "{v}");
        }
    }

    #[test]
    fn live_enable_switch_leaks_inflight() {
        for (v, left) in [("5.18", 1), ("5.19", 0)] {
            let (mut l, _, a, b) = setup(v, false);
            l.set_limit(a, 2 * MS, 0);
            assert!(matches!(l.throttle(1, b, false, 0), Bypass::Go { .. }));
            l.set_limit(a, 0, 0); // the last target goes while the bio is in flight
            done(&mut l, b, 0, MS);
            assert_eq!(l.inflight(b), left, "{v}");
        }
        // and the reverse underflows on 5.18: a bio that passed uncounted completes
        // after a target appeared; -1 compares as UINT_MAX, nothing gets a slot again
        let (mut l, _, a, b) = setup("5.18", false);
        assert_eq!(l.throttle(1, b, false, 0), Bypass::NotEnabled);
        l.set_limit(a, 2 * MS, 0);
        let bio = DoneBio {
            cgroup: b,
            issued: 0,
            issue_as_root: false,
            counted: false,
            again: false,
        };
        l.done_bio(bio, MS);
        assert_eq!(l.inflight(b), -1);
        assert_eq!(l.throttle(2, b, false, MS), Bypass::Wait);
    }

    #[test]
    fn sts_again_is_recorded_before_5_3() {
        for (v, total) in [("4.19", 1), ("5.3", 0)] {
            let (mut l, _, a, _) = setup(v, false);
            l.set_limit(a, 2 * MS, 0);
            l.throttle(1, a, false, 0);
            let bio = DoneBio {
                cgroup: a,
                issued: 0,
                issue_as_root: false,
                counted: true,
                again: true,
            };
            l.done_bio(bio, MS);
            assert_eq!(l.nodes[a as usize].grp.stat.total, total, "{v}");
            assert_eq!(l.inflight(a), 0, "{v}: the slot is returned either way");
        }
    }

    #[test]
    fn rotational_windows_use_the_mean() {
        let (mut l, _, a, _) = setup("newest", true);
        l.set_limit(a, 10 * MS, 0); // window 160 ms, factor 2045
        assert_eq!(l.stat(a), " depth=max avg_lat=0 win=160");
        for (i, lat) in [4, 5, 9].into_iter().enumerate() {
            l.throttle(i as u64, a, false, 0);
            done(&mut l, a, 0, lat * MS);
        }
        l.throttle(3, a, false, 0);
        done(&mut l, a, 154 * MS, 160 * MS);
        let IolatRow::Window(r) = l.take_rows()[0] else {
            panic!("a window row")
        };
        // mean (4 + 5 + 9 + 6) / 4 = 6 ms ≤ 10 ms; lat_avg = calc_load(0, 2045, 6 ms)
        assert_eq!((r.total, r.mean, r.ok), (4, 6 * MS, true));
        assert_eq!(r.lat_avg, 8790);
        assert_eq!(r.verdict, Verdict::Fine);
    }

    #[test]
    fn timer_steps_up_an_orphaned_cookie_and_forgets_scale_grp() {
        let (mut l, p, a, _) = setup("newest", false);
        l.set_limit(a, 2 * MS, 0);
        let li = &mut l.nodes[p as usize].grp.child_lat;
        li.scale_cookie_change(32, false);
        li.scale_cookie_change(32, false);
        l.timer_fn(NSEC_PER_SEC);
        assert_eq!(l.child_cookie(p), DEFAULT_SCALE_COOKIE - 14);
        let li = &mut l.nodes[p as usize].grp.child_lat;
        li.scale_grp = Some(a);
        li.last_scale_event = ktime(NSEC_PER_SEC);
        l.timer_fn(5 * NSEC_PER_SEC);
        assert_eq!(l.nodes[p as usize].grp.child_lat.scale_grp, Some(a));
        l.timer_fn(6 * NSEC_PER_SEC);
        assert_eq!(l.nodes[p as usize].grp.child_lat.scale_grp, None);
        assert_eq!(
            l.child_cookie(p),
            DEFAULT_SCALE_COOKIE - 14,
            "no step that tick"
        );
    }
}
