//! Pressure stall information for I/O: `io.pressure` of every cgroup and the root
//! (`/proc/pressure/io`), as `kernel/sched/psi.c` (6.12) computes it from the tasks
//! stalled on I/O.
//!
//! Idea: a task is *in iowait* while it sleeps in `io_schedule()` — waiting for its
//! own read or write (`blk_io_schedule()` in a psync call), for a tag
//! (`blk_mq_get_tag()`), in an rq-qos entry (`rq_qos_wait()`: wbt, blk-iolatency;
//! blk-iocost's wait), paused in `balance_dirty_pages()` (`io_schedule_timeout()`),
//! waiting for writeback in `fsync()` (`folio_wait_writeback()`) or in the device's
//! last `close()` (`sync_blockdev()`, the closer's cgroup's stall), or sleeping off
//! blk-cgroup's delay on return to user space (`blkcg_maybe_throttle_current()`). A
//! libaio job waiting in `io_getevents()` is *not* (it sleeps in a plain `schedule()`);
//! nor is fio's thinktime. Per CPU, a group is in `some` while one of its tasks there
//! is in iowait, in `full` while one is and none of its tasks there runs, non-idle
//! while any of its tasks there is in iowait or runs (`test_states()`). A task counts
//! for its cgroup and every ancestor; the root is the system.
//!
//! Moving parts:
//! - [`Psi::set`]: a task's state changed (`psi_task_change()`); the pipeline calls it
//!   for every context whose state may have changed once an event is handled
//!   (`crate::sim::engine`), so it is told of every change at the instant it happens;
//! - CPUs: with `[host] cpus = 1` every task shares the one CPU, and a group's states
//!   are integrated from its counts of tasks in iowait and running, walking the
//!   ancestors at each change (`psi_group_change()`); otherwise every task has a CPU
//!   of its own (the default host), so on its CPU `some` and `full` are both "this
//!   task is in iowait", and each task integrates its own times;
//! - `Psi::collect` is `collect_percpu_times()`: the stall time of each CPU since the
//!   last collection, weighted by that CPU's non-idle time in whole jiffies
//!   (`nsecs_to_jiffies()`: a CPU non-idle less than a jiffy weighs nothing), divided
//!   by the total, added to `total`;
//! - `Psi::update_averages` is `update_averages()` + `calc_avgs()`: every
//!   `PSI_FREQ` (2 s + 1 jiffy) the share of the period stalled decays into avg10,
//!   avg60 and avg300 (fixed point, `calc_load()`); periods missed while idle decay
//!   with zero samples. The simulator runs it at the first sample tick (100 ms) at or
//!   after each period's end, every period, idle or not (the kernel's work stops while
//!   a group is idle and catches up with `calc_load_n()`: the same decay);
//! - [`Psi::show`] is `psi_show()`: collect, the averages if due, and the two lines of
//!   the file; the timeline (`timeline.rs`) is one line per group per period.
//!
//! Left out: memory and CPU pressure (`memory.pressure`, `cpu.pressure`); triggers
//! (`poll()` on the file); a task's migration between CPUs (each keeps its own, or
//! all share one).

pub mod timeline;

use crate::sim::{NSEC_PER_SEC, Ns};
pub use timeline::PressureRow;

/// `FIXED_1` of the load-average fixed point (`FSHIFT` = 11).
const FSHIFT: u32 = 11;
const FIXED_1: u64 = 1 << FSHIFT;
/// `EXP_10s`, `EXP_60s`, `EXP_300s`: `1/exp(2s/Ns)` in fixed point.
const EXP: [u64; 3] = [1677, 1981, 2034];

/// What a task is doing, as PSI tells it apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum TaskState {
    /// Asleep other than in `io_schedule()`, or not a task yet (or any more).
    #[default]
    Idle,
    /// On a CPU or waiting for one (`TSK_RUNNING`).
    Running,
    /// Asleep in `io_schedule()` (`TSK_IOWAIT`).
    IoWait,
}

/// `calc_load()`: `load` decayed by `exp` toward `active`.
fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut newload = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        newload += FIXED_1 - 1;
    }
    newload / FIXED_1
}

/// `calc_load_n()`: `n` periods of decay toward `active` (`fixed_power_int()`).
fn calc_load_n(load: u64, exp: u64, active: u64, n: u64) -> u64 {
    calc_load(load, fixed_power_int(exp, FSHIFT, n), active)
}

/// `fixed_power_int()`: `x^n` in fixed point of `frac_bits`, rounding each product.
fn fixed_power_int(mut x: u64, frac_bits: u32, mut n: u64) -> u64 {
    let mut result = 1u64 << frac_bits;
    if n > 0 {
        loop {
            if n & 1 != 0 {
                result *= x;
                result += 1 << (frac_bits - 1);
                result >>= frac_bits;
            }
            n >>= 1;
            if n == 0 {
                break;
            }
            x *= x;
            x += 1 << (frac_bits - 1);
            x >>= frac_bits;
        }
    }
    result
}

/// `LOAD_INT(x).LOAD_FRAC(x)`, as the file prints an average.
fn load_text(x: u64) -> String {
    let int = x >> FSHIFT;
    let frac = ((x & (FIXED_1 - 1)) * 100) >> FSHIFT;
    format!("{int}.{frac:02}")
}

/// One task: its cgroup, its state since when, and (each on a CPU of its own) its
/// times so far.
#[derive(Debug, Clone)]
struct Task {
    cgroup: u32,
    state: TaskState,
    since: Ns,
    iowait: u64,
    nonidle: u64,
}

/// A task as one group sees it on the task's CPU: its times at that group's last
/// collection (`groupc->times_prev`).
#[derive(Debug, Clone, Copy)]
struct Member {
    task: u32,
    seen: (u64, u64),
}

/// One cgroup's `psi_group` (io only).
#[derive(Debug, Clone)]
struct Group {
    parent: Option<u32>,
    /// One CPU: its tasks (itself and below) in iowait and running, the state times
    /// integrated so far (`some`, `full`, non-idle) and at the last collection.
    nr_iowait: u32,
    nr_running: u32,
    state_since: Ns,
    times: [u64; 3],
    seen: [u64; 3],
    /// `total[PSI_AVGS]` of `some` and `full` (ns).
    total: [u64; 2],
    /// `avg[some/full][10 s, 60 s, 300 s]`, fixed point.
    avg: [[u64; 3]; 2],
    /// `avg_total`: what the averages have taken of `total`.
    avg_total: [u64; 2],
    avg_last_update: Ns,
    avg_next_update: Ns,
}

/// The io pressure of every cgroup of a run.
#[derive(Debug)]
pub struct Psi {
    hz: u64,
    one_cpu: bool,
    /// `psi_period`: `jiffies_to_nsecs(2 * HZ + 1)`.
    period: Ns,
    tasks: Vec<Task>,
    groups: Vec<Group>,
    /// Each group's tasks, itself and below (CPUs of their own: what a collection sums).
    members: Vec<Vec<Member>>,
    rows: Vec<PressureRow>,
}

impl Psi {
    /// The groups of a run (`parents[cg]`, the root first) made at t = 0, with
    /// `task_cgroups[t]` the cgroup of each task (None: not accounted, a kernel worker
    /// nothing waits in); `one_cpu`: every task on one CPU.
    pub fn new(
        hz: u32,
        one_cpu: bool,
        parents: &[Option<u32>],
        task_cgroups: &[Option<u32>],
    ) -> Psi {
        let hz = u64::from(hz.max(1));
        let period = (2 * hz + 1) * (NSEC_PER_SEC / hz);
        let groups = parents
            .iter()
            .map(|&parent| Group {
                parent,
                nr_iowait: 0,
                nr_running: 0,
                state_since: 0,
                times: [0; 3],
                seen: [0; 3],
                total: [0; 2],
                avg: [[0; 3]; 2],
                avg_total: [0; 2],
                avg_last_update: 0,
                avg_next_update: period,
            })
            .collect();
        let mut members = vec![Vec::new(); parents.len()];
        let mut tasks = Vec::with_capacity(task_cgroups.len());
        for (t, cg) in task_cgroups.iter().enumerate() {
            // a worker is a task nothing accounts: cgroup u32::MAX stands for none
            let cgroup = cg.unwrap_or(u32::MAX);
            let mut at = cg.map(|c| c as usize);
            while let Some(g) = at {
                members[g].push(Member {
                    task: t as u32,
                    seen: (0, 0),
                });
                at = parents[g].map(|p| p as usize);
            }
            tasks.push(Task {
                cgroup,
                state: TaskState::Idle,
                since: 0,
                iowait: 0,
                nonidle: 0,
            });
        }
        Psi {
            hz,
            one_cpu,
            period,
            tasks,
            groups,
            members,
            rows: Vec::new(),
        }
    }

    /// `psi_task_change()`: task `t` is in `state` from `now`.
    pub fn set(&mut self, now: Ns, t: u32, state: TaskState) {
        let task = &mut self.tasks[t as usize];
        if task.state == state || task.cgroup == u32::MAX {
            return;
        }
        let (old, cg) = (task.state, task.cgroup);
        let dt = now.saturating_sub(task.since);
        match old {
            TaskState::IoWait => {
                task.iowait += dt;
                task.nonidle += dt;
            }
            TaskState::Running => task.nonidle += dt,
            TaskState::Idle => {}
        }
        task.state = state;
        task.since = now;
        if !self.one_cpu {
            return;
        }
        // psi_group_change() on the one CPU, for the group and each ancestor
        let mut at = Some(cg);
        while let Some(g) = at {
            let grp = &mut self.groups[g as usize];
            integrate(grp, now);
            match old {
                TaskState::IoWait => grp.nr_iowait -= 1,
                TaskState::Running => grp.nr_running -= 1,
                TaskState::Idle => {}
            }
            match state {
                TaskState::IoWait => grp.nr_iowait += 1,
                TaskState::Running => grp.nr_running += 1,
                TaskState::Idle => {}
            }
            at = grp.parent;
        }
    }

    /// `collect_percpu_times()` for group `g` at `now`: each CPU's stall since the last
    /// collection, weighted by its non-idle jiffies, into `total`.
    fn collect(&mut self, now: Ns, g: usize) {
        let jiffy = NSEC_PER_SEC / self.hz;
        let mut deltas = [0u128; 2];
        let mut nonidle_total = 0u64;
        if self.one_cpu {
            let grp = &mut self.groups[g];
            integrate(grp, now);
            let times: [u64; 3] = std::array::from_fn(|s| grp.times[s] - grp.seen[s]);
            grp.seen = grp.times;
            let nonidle = times[2] / jiffy;
            nonidle_total = nonidle;
            for (d, &t) in deltas.iter_mut().zip(&times) {
                *d = u128::from(t) * u128::from(nonidle);
            }
        } else {
            for m in &mut self.members[g] {
                let task = &self.tasks[m.task as usize];
                let dt = now.saturating_sub(task.since);
                let (iowait, nonidle) = match task.state {
                    TaskState::IoWait => (task.iowait + dt, task.nonidle + dt),
                    TaskState::Running => (task.iowait, task.nonidle + dt),
                    TaskState::Idle => (task.iowait, task.nonidle),
                };
                let stall = iowait - m.seen.0;
                let busy = (nonidle - m.seen.1) / jiffy;
                m.seen = (iowait, nonidle);
                nonidle_total += busy;
                // on its own CPU, `full` is `some`: none of the group's tasks runs there
                for d in &mut deltas {
                    *d += u128::from(stall) * u128::from(busy);
                }
            }
        }
        let grp = &mut self.groups[g];
        for (total, d) in grp.total.iter_mut().zip(deltas) {
            *total += (d / u128::from(nonidle_total.max(1))) as u64;
        }
    }

    /// `update_averages()` of group `g` at `now` (due: `now >= avg_next_update`).
    fn update_averages(&mut self, now: Ns, g: usize) {
        let period_len = self.period;
        let grp = &mut self.groups[g];
        let expires = grp.avg_next_update;
        let missed = if now - expires >= period_len {
            (now - expires) / period_len
        } else {
            0
        };
        grp.avg_next_update = expires + (1 + missed) * period_len;
        let period = now - (grp.avg_last_update + missed * period_len);
        grp.avg_last_update = now;
        for s in 0..2 {
            // what slipped past a period's length waits for the next one
            let sample = (grp.total[s] - grp.avg_total[s]).min(period);
            grp.avg_total[s] += sample;
            let avg = &mut grp.avg[s];
            if missed > 0 {
                for (a, &e) in avg.iter_mut().zip(&EXP) {
                    *a = calc_load_n(*a, e, 0, missed);
                }
            }
            // calc_avgs(): the share of the period stalled, in percent, fixed point
            let pct = (u128::from(sample) * 100 / u128::from(period.max(1))) as u64 * FIXED_1;
            for (a, &e) in avg.iter_mut().zip(&EXP) {
                *a = calc_load(*a, e, pct);
            }
        }
    }

    /// The averaging work of every group whose period has ended by `now` (a sample
    /// tick), with a timeline row each once the group has stalled at all.
    pub fn tick(&mut self, now: Ns) {
        for g in 0..self.groups.len() {
            if now < self.groups[g].avg_next_update {
                continue;
            }
            self.collect(now, g);
            self.update_averages(now, g);
            let grp = &self.groups[g];
            // a group's lines start at its first stall: a run without pressure has none
            if grp.total == [0, 0] {
                continue;
            }
            self.rows.push(PressureRow {
                at: now,
                cgroup: g as u32,
                avg: grp.avg,
                total_us: [grp.total[0] / 1000, grp.total[1] / 1000],
            });
        }
    }

    /// `psi_show()` of group `g` at `now`: its `io.pressure` as the file reads.
    pub fn show(&mut self, now: Ns, g: u32) -> String {
        let g = g as usize;
        self.collect(now, g);
        if now >= self.groups[g].avg_next_update {
            self.update_averages(now, g);
        }
        let grp = &self.groups[g];
        ["some", "full"]
            .iter()
            .enumerate()
            .map(|(s, name)| {
                let a = grp.avg[s];
                format!(
                    "{name} avg10={} avg60={} avg300={} total={}\n",
                    load_text(a[0]),
                    load_text(a[1]),
                    load_text(a[2]),
                    grp.total[s] / 1000
                )
            })
            .collect()
    }

    /// `total` of group `g` (`some`, `full`), µs, as of the last collection.
    pub fn total_us(&self, g: u32) -> [u64; 2] {
        let t = self.groups[g as usize].total;
        [t[0] / 1000, t[1] / 1000]
    }

    /// Rows made since the last call.
    pub fn take_rows(&mut self) -> Vec<PressureRow> {
        std::mem::take(&mut self.rows)
    }
}

/// A group on the one CPU: its state times integrated up to `now` (`psi_group_change()`
/// → `record_times()`).
fn integrate(grp: &mut Group, now: Ns) {
    let dt = now.saturating_sub(grp.state_since);
    grp.state_since = now;
    if grp.nr_iowait > 0 {
        grp.times[0] += dt;
        if grp.nr_running == 0 {
            grp.times[1] += dt;
        }
    }
    if grp.nr_iowait > 0 || grp.nr_running > 0 {
        grp.times[2] += dt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = 1_000_000;

    #[test]
    fn calc_load_and_the_file_format_are_the_kernels() {
        // a full period stalled from zero: avg10 = 100% · (1 − 1677/2048) = 18.1%
        let a = calc_load(0, EXP[0], 100 * FIXED_1);
        assert_eq!(load_text(a), "18.11");
        // n periods of zero decay as exp^n
        assert_eq!(fixed_power_int(EXP[0], FSHIFT, 0), FIXED_1);
        assert_eq!(fixed_power_int(EXP[0], FSHIFT, 1), EXP[0]);
        // (1677² + 1024) >> 11
        assert_eq!(fixed_power_int(EXP[0], FSHIFT, 2), 1373);
        assert_eq!(calc_load_n(a, EXP[0], 0, 2), calc_load(a, 1373, 0));
    }

    #[test]
    fn one_cpu_some_is_any_task_stalled_and_full_none_running() {
        // root ← a; tasks 0 and 1 in a, task 2 a worker nothing accounts
        let mut p = Psi::new(250, true, &[None, Some(0)], &[Some(1), Some(1), None]);
        p.set(0, 0, TaskState::IoWait);
        p.set(0, 1, TaskState::Running);
        p.set(100 * MS, 1, TaskState::Idle);
        p.set(300 * MS, 0, TaskState::Running);
        p.set(400 * MS, 0, TaskState::Idle);
        p.set(400 * MS, 2, TaskState::IoWait);
        let s = p.show(1000 * MS, 1);
        // some: 0–300 ms; full: 100–300 ms (task 1 ran until 100)
        assert!(
            s.starts_with("some avg10=0.00 avg60=0.00 avg300=0.00 total=300000\n"),
            "{s}"
        );
        assert!(
            s.ends_with("full avg10=0.00 avg60=0.00 avg300=0.00 total=200000\n"),
            "{s}"
        );
        // the root sees the same tasks
        assert_eq!(
            p.show(1000 * MS, 0).lines().next().unwrap(),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=300000"
        );
    }

    #[test]
    fn cpus_of_their_own_weigh_each_by_its_non_idle_time() {
        // two tasks in a, each on its own CPU: one stalled all along, one running
        let mut p = Psi::new(250, false, &[None, Some(0)], &[Some(1), Some(1)]);
        p.set(0, 0, TaskState::IoWait);
        p.set(0, 1, TaskState::Running);
        p.set(1000 * MS, 0, TaskState::Idle);
        p.set(1000 * MS, 1, TaskState::Idle);
        // (1 s · 250 + 0 · 250) / 500 jiffies: half a second of `some`, and of `full`
        assert_eq!(p.total_us(1), [0, 0], "not collected yet");
        let s = p.show(1000 * MS, 1);
        assert!(
            s.contains("some avg10=0.00 avg60=0.00 avg300=0.00 total=500000"),
            "{s}"
        );
        assert!(
            s.contains("full avg10=0.00 avg60=0.00 avg300=0.00 total=500000"),
            "{s}"
        );
        // a CPU non-idle for less than a jiffy weighs nothing: its stall is lost
        let mut p = Psi::new(250, false, &[None], &[Some(0)]);
        p.set(0, 0, TaskState::IoWait);
        p.set(3 * MS, 0, TaskState::Idle);
        assert_eq!(
            p.show(10 * MS, 0).lines().next().unwrap(),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=0"
        );
    }

    #[test]
    fn averages_follow_update_averages_every_period() {
        // one task stalled without end: every 2.004 s period is 100%
        let mut p = Psi::new(250, false, &[None], &[Some(0)]);
        p.set(0, 0, TaskState::IoWait);
        let period = p.period;
        assert_eq!(period, 2_004_000_000);
        let mut now = 0;
        for _ in 0..5 {
            now += period;
            p.tick(now);
        }
        let rows = p.take_rows();
        assert_eq!(rows.len(), 5);
        // avg10 after n full periods: 100 · (1 − (1677/2048)^n), kernel-rounded
        let mut want = 0;
        for _ in 0..5 {
            want = calc_load(want, EXP[0], 100 * FIXED_1);
        }
        assert_eq!(rows[4].avg[0][0], want);
        // 100 · (1 − 0.8188^5) = 63.2, less what each step's integer division drops
        assert_eq!(load_text(want), "63.18");
        assert_eq!(rows[4].total_us[0], 5 * period / 1000);
        // a tick before the period's end does nothing
        p.tick(now + period - 1);
        assert!(p.take_rows().is_empty());
    }
}
