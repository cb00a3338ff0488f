//! One `iolatency_grp` and its parent-side `child_latency_info`, with the kernel's
//! integer arithmetic (`block/blk-iolatency.c`, `block/blk-stat.c`,
//! `include/linux/sched/loadavg.h`). No time source, no queues: [`super::ctl`] calls
//! these where the kernel does.
//!
//! The kernel keeps one `latency_stat` per CPU and sums them at the end of a window;
//! we keep a single one (as if every completion ran on one CPU). That matters only for
//! the rotational mean's integer rounding: `blk_rq_stat_sum()` divides once per CPU.
//! We also keep `blk_rq_stat_sum()`'s quirk: it sums the source's `batch`, which a
//! summed stat no longer has, so `cur_stat`'s mean stays 0 on rotational disks and only
//! the last window's mean decides there.

use crate::sim::{NSEC_PER_MSEC, NSEC_PER_SEC, Ns};

/// `DEFAULT_SCALE_COOKIE`.
pub const DEFAULT_SCALE_COOKIE: u32 = 1_000_000;
/// `BLKIOLATENCY_MIN_WIN_SIZE`, `BLKIOLATENCY_MAX_WIN_SIZE`.
pub const MIN_WIN_SIZE: Ns = 100 * NSEC_PER_MSEC;
pub const MAX_WIN_SIZE: Ns = NSEC_PER_SEC;
/// `BLKIOLATENCY_MIN_ADJUST_TIME`, `BLKIOLATENCY_MIN_GOOD_SAMPLES`.
pub const MIN_ADJUST_TIME: Ns = 500 * NSEC_PER_MSEC;
pub const MIN_GOOD_SAMPLES: u64 = 5;
/// `iolatency_exp_factors[]`: `calc_load()` factors (FIXED_1 = 2048) by window bucket
/// (`BLKIOLATENCY_EXP_BUCKET_SIZE` = 1 s / 4).
pub const EXP_FACTORS: [u64; 5] = [2045, 2039, 2031, 2023, 2014];
const EXP_BUCKET_SIZE: Ns = MAX_WIN_SIZE / (EXP_FACTORS.len() as u64 - 1);
/// `FIXED_1` of `loadavg.h`.
const FIXED_1: u64 = 1 << 11;

/// `latency_stat`: the percentile counters (non-rotational) or a `blk_rq_stat`
/// (rotational); only the half for the disk's kind is used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencyStat {
    pub total: u64,
    pub missed: u64,
    pub mean: u64,
    pub batch: u64,
    pub nr_samples: u64,
}

impl LatencyStat {
    /// `latency_stat_record_time()`.
    pub fn record(&mut self, ssd: bool, req_time: u64, min_lat_nsec: u64) {
        if ssd {
            if req_time >= min_lat_nsec {
                self.missed += 1;
            }
            self.total += 1;
        } else {
            // blk_rq_stat_add()
            self.batch = self.batch.wrapping_add(req_time);
            self.nr_samples += 1;
        }
    }

    /// `latency_stat_sum()` into `self` (`blk_rq_stat_sum()` on rotational disks).
    pub fn sum(&mut self, ssd: bool, src: &LatencyStat) {
        if ssd {
            self.total += src.total;
            self.missed += src.missed;
        } else {
            let n = self.nr_samples + src.nr_samples;
            if n <= self.nr_samples {
                return;
            }
            self.mean = src
                .batch
                .wrapping_add(self.mean.wrapping_mul(self.nr_samples))
                / n;
            self.nr_samples = n;
        }
    }

    /// `latency_stat_samples()`.
    pub fn samples(&self, ssd: bool) -> u64 {
        if ssd { self.total } else { self.nr_samples }
    }

    /// `latency_sum_ok()`: fewer than max(total/10, 1) missed (a p90 test), or the mean
    /// at most the target.
    pub fn ok(&self, ssd: bool, min_lat_nsec: u64) -> bool {
        if ssd {
            self.missed < (self.total / 10).max(1)
        } else {
            self.mean <= min_lat_nsec
        }
    }
}

/// `calc_load()` of `loadavg.h` on unsigned long.
pub fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut newload = load
        .wrapping_mul(exp)
        .wrapping_add(active.wrapping_mul(FIXED_1 - exp));
    if active >= load {
        newload = newload.wrapping_add(FIXED_1 - 1);
    }
    newload / FIXED_1
}

/// `iolat_update_total_lat_avg()`'s factor for a window of `cur_win_nsec`.
pub fn exp_factor(cur_win_nsec: u64) -> u64 {
    let idx = (cur_win_nsec / EXP_BUCKET_SIZE).min(EXP_FACTORS.len() as u64 - 1);
    EXP_FACTORS[idx as usize]
}

/// The window of a target (`iolatency_set_min_lat_nsec()`): `clamp(target << 4, 100 ms,
/// 1 s)`, with the kernel's wrapping shift.
pub fn window_of(min_lat_nsec: u64) -> u64 {
    (min_lat_nsec << 4).clamp(MIN_WIN_SIZE, MAX_WIN_SIZE)
}

/// `scale_amount()`: a step of `max(qd >> 4, 1)` up or `max(qd >> 2, 1)` down.
pub fn scale_amount(qd: u64, up: bool) -> u64 {
    (if up { qd >> 4 } else { qd >> 2 }).max(1)
}

/// `child_latency_info`: what a parent knows of its children's scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildLatencyInfo {
    pub last_scale_event: u64,
    pub scale_lat: u64,
    pub nr_samples: u64,
    /// Cgroup index of the group that scaled the others down.
    pub scale_grp: Option<u32>,
    pub scale_cookie: u32,
}

impl Default for ChildLatencyInfo {
    fn default() -> Self {
        ChildLatencyInfo {
            last_scale_event: 0,
            scale_lat: 0,
            nr_samples: 0,
            scale_grp: None,
            scale_cookie: DEFAULT_SCALE_COOKIE,
        }
    }
}

impl ChildLatencyInfo {
    /// `scale_cookie_change()` with `qd` = `nr_requests`.
    pub fn scale_cookie_change(&mut self, qd: u64, up: bool) {
        let scale = scale_amount(qd, up);
        let old = u64::from(self.scale_cookie);
        let max_scale = qd << 1;
        let diff = u64::from(DEFAULT_SCALE_COOKIE).saturating_sub(old);
        if up {
            if scale + old > u64::from(DEFAULT_SCALE_COOKIE) {
                self.scale_cookie = DEFAULT_SCALE_COOKIE;
            } else if diff > qd {
                self.scale_cookie += 1;
            } else {
                self.scale_cookie += scale as u32;
            }
        } else if diff > qd {
            if diff < max_scale {
                self.scale_cookie -= 1;
            }
        } else {
            self.scale_cookie = self.scale_cookie.wrapping_sub(scale as u32);
        }
    }

    /// `iolatency_clear_scaling()`: a sibling's target changed.
    pub fn clear_scaling(&mut self) {
        self.scale_cookie = DEFAULT_SCALE_COOKIE;
        self.last_scale_event = 0;
        self.scale_grp = None;
        self.scale_lat = 0;
    }
}

/// What a group does when it sees its parent's cookie move (`check_scale_change()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// Nothing changed, or this group is spared.
    None,
    /// Already at depth 1 and asked to go lower: `blkcg_use_delay()`.
    UseDelay,
    /// Back at the default cookie: unlimited, delay cleared, waiters woken.
    Unthrottle,
    /// `scale_change()` up or down.
    Scale { up: bool },
}

/// `struct iolatency_grp` without its wait queue and blkg delay (in [`super::ctl`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IolatGrp {
    /// The current window's samples (the kernel's per-CPU stats).
    pub stat: LatencyStat,
    /// Samples carried over windows that did not scale.
    pub cur_stat: LatencyStat,
    pub max_depth: u32,
    /// `rq_wait.inflight` (an `atomic_t`: may go negative under `iolatency.enable=live`).
    pub inflight: i32,
    pub window_start: Ns,
    pub scale_cookie: u32,
    pub min_lat_nsec: u64,
    pub cur_win_nsec: u64,
    pub lat_avg: u64,
    pub nr_samples: u64,
    pub ssd: bool,
    pub child_lat: ChildLatencyInfo,
}

impl IolatGrp {
    /// `iolatency_pd_init()`; `parent_cookie` is the parent's `child_lat.scale_cookie`.
    pub fn new(ssd: bool, now: Ns, parent_cookie: u32) -> IolatGrp {
        IolatGrp {
            stat: LatencyStat::default(),
            cur_stat: LatencyStat::default(),
            max_depth: u32::MAX,
            inflight: 0,
            window_start: now,
            scale_cookie: parent_cookie,
            min_lat_nsec: 0,
            cur_win_nsec: MIN_WIN_SIZE,
            lat_avg: 0,
            nr_samples: 0,
            ssd,
            child_lat: ChildLatencyInfo::default(),
        }
    }

    /// `rq_wait_inc_below(rqw, max_depth)`: the counter compared as unsigned.
    pub fn inc_below(&mut self) -> bool {
        if self.inflight as u32 >= self.max_depth {
            return false;
        }
        self.inflight += 1;
        true
    }

    /// `check_scale_change()`'s decision against the parent's info (the group's own
    /// cookie is updated; `lat_info` is read only).
    pub fn check_scale_change(&mut self, lat_info: &ChildLatencyInfo) -> Reaction {
        let cur_cookie = lat_info.scale_cookie;
        let our_cookie = self.scale_cookie;
        if cur_cookie == our_cookie {
            return Reaction::None;
        }
        let down = cur_cookie < our_cookie;
        self.scale_cookie = cur_cookie;
        if down && self.min_lat_nsec != 0 {
            let scale_lat = lat_info.scale_lat;
            if scale_lat == 0 || self.min_lat_nsec <= scale_lat {
                return Reaction::None;
            }
            // a group that did ≤ 5% of the samples is not punished for the others
            let samples_thresh = (lat_info.nr_samples.wrapping_mul(5) / 100).max(1);
            if self.nr_samples <= samples_thresh {
                return Reaction::None;
            }
        }
        if self.max_depth == 1 && down {
            return Reaction::UseDelay;
        }
        if cur_cookie == DEFAULT_SCALE_COOKIE {
            self.max_depth = u32::MAX;
            return Reaction::Unthrottle;
        }
        Reaction::Scale { up: !down }
    }

    /// `scale_change()` on `max_depth`; `unuse_delay` is `blkcg_unuse_delay()` on the
    /// group's blkg, asked only at depth 1 going up. True when the depth grew (the
    /// kernel then wakes every waiter).
    pub fn scale_change(&mut self, qd: u64, up: bool, unuse_delay: impl FnOnce() -> bool) -> bool {
        let scale = scale_amount(qd, up);
        let old = u64::from(self.max_depth).min(qd);
        if up {
            if old == 1 && unuse_delay() {
                return false;
            }
            if old < qd {
                self.max_depth = (old + scale).min(qd) as u32;
                return true;
            }
            false
        } else {
            self.max_depth = (old >> 1).max(1) as u32;
            false
        }
    }

    /// `iolat_update_total_lat_avg()` (rotational only) with the window's stat.
    pub fn update_total_lat_avg(&mut self, stat: &LatencyStat) {
        if !self.ssd {
            self.lat_avg = calc_load(self.lat_avg, exp_factor(self.cur_win_nsec), stat.mean);
        }
    }
}

/// What `iolatency_check_latencies()` decided about the parent's cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The window was fine and the parent at the default cookie: nothing to do.
    Fine,
    /// Samples carried over: too soon after the last scale event, or too few.
    Carried,
    /// The window was fine but this group is not `scale_grp`.
    NotMine,
    /// Cookie up (this group is `scale_grp` and has ≥ 5 good samples).
    Up,
    /// Cookie down (the window missed).
    Down,
    /// Missed, but a sibling with a lower target already owns the scaling.
    Outranked,
}

impl Verdict {
    /// Its name in the timeline.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Fine => "fine",
            Verdict::Carried => "carried",
            Verdict::NotMine => "not-mine",
            Verdict::Up => "up",
            Verdict::Down => "down",
            Verdict::Outranked => "outranked",
        }
    }
}

/// `iolatency_check_latencies()` after the per-CPU stats were summed into `stat`: the
/// group's `cur_stat`/`nr_samples` and the parent's `lat_info` move as the kernel's;
/// returns what happened to the cookie. `me` is the group's cgroup index.
pub fn check_latencies(
    iolat: &mut IolatGrp,
    me: u32,
    stat: &LatencyStat,
    lat_info: &mut ChildLatencyInfo,
    qd: u64,
    now: Ns,
) -> Verdict {
    let ssd = iolat.ssd;
    iolat.update_total_lat_avg(stat);
    if stat.ok(ssd, iolat.min_lat_nsec) && lat_info.scale_cookie == DEFAULT_SCALE_COOKIE {
        return Verdict::Fine;
    }
    iolat.cur_stat.sum(ssd, stat);
    lat_info.nr_samples = lat_info.nr_samples.wrapping_sub(iolat.nr_samples);
    lat_info.nr_samples = lat_info
        .nr_samples
        .wrapping_add(iolat.cur_stat.samples(ssd));
    iolat.nr_samples = iolat.cur_stat.samples(ssd);
    if lat_info.last_scale_event >= now || now - lat_info.last_scale_event < MIN_ADJUST_TIME {
        return Verdict::Carried;
    }
    let verdict = if iolat.cur_stat.ok(ssd, iolat.min_lat_nsec) && stat.ok(ssd, iolat.min_lat_nsec)
    {
        if iolat.cur_stat.samples(ssd) < MIN_GOOD_SAMPLES {
            return Verdict::Carried;
        }
        if lat_info.scale_grp == Some(me) {
            lat_info.last_scale_event = now;
            lat_info.scale_cookie_change(qd, true);
            Verdict::Up
        } else {
            Verdict::NotMine
        }
    } else if lat_info.scale_lat == 0 || lat_info.scale_lat >= iolat.min_lat_nsec {
        lat_info.last_scale_event = now;
        if lat_info.scale_grp.is_none() || lat_info.scale_lat > iolat.min_lat_nsec {
            lat_info.scale_lat = iolat.min_lat_nsec;
            lat_info.scale_grp = Some(me);
        }
        lat_info.scale_cookie_change(qd, false);
        Verdict::Down
    } else {
        Verdict::Outranked
    };
    iolat.cur_stat = LatencyStat::default();
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = NSEC_PER_MSEC;

    #[test]
    fn window_length() {
        // 2 ms target: 32 ms → the 100 ms floor; 10 ms: 160 ms; 100 ms: 1.6 s → 1 s
        assert_eq!(window_of(2 * MS), 100 * MS);
        assert_eq!(window_of(10 * MS), 160 * MS);
        assert_eq!(window_of(62_500_000), NSEC_PER_SEC);
        assert_eq!(window_of(100 * MS), NSEC_PER_SEC);
        // buckets of 250 ms pick the factor
        assert_eq!(exp_factor(100 * MS), 2045);
        assert_eq!(exp_factor(250 * MS), 2039);
        assert_eq!(exp_factor(NSEC_PER_SEC), 2014);
    }

    #[test]
    fn p90_missed_test() {
        let s = |total, missed| LatencyStat {
            total,
            missed,
            ..Default::default()
        };
        // 100 IOs: threshold 10, so 9 misses pass and 10 fail
        assert!(s(100, 9).ok(true, 0));
        assert!(!s(100, 10).ok(true, 0));
        // 5 IOs: threshold max(0, 1) = 1: no miss allowed
        assert!(s(5, 0).ok(true, 0));
        assert!(!s(5, 1).ok(true, 0));
        // a sample at exactly the target counts as missed
        let mut r = LatencyStat::default();
        r.record(true, 2 * MS, 2 * MS);
        r.record(true, 2 * MS - 1, 2 * MS);
        assert_eq!((r.total, r.missed), (2, 1));
    }

    #[test]
    fn hdd_mean_and_calc_load() {
        // three samples 4, 5, 9 ms: mean 6 ms
        let mut pc = LatencyStat::default();
        for v in [4 * MS, 5 * MS, 9 * MS] {
            pc.record(false, v, 0);
        }
        let mut stat = LatencyStat::default();
        stat.sum(false, &pc);
        assert_eq!((stat.mean, stat.nr_samples), (6 * MS, 3));
        assert!(stat.ok(false, 6 * MS) && !stat.ok(false, 6 * MS - 1));
        // cur_stat summed from a summed stat keeps mean 0 (blk_rq_stat_sum() reads batch)
        let mut cur = LatencyStat::default();
        cur.sum(false, &stat);
        assert_eq!((cur.mean, cur.nr_samples), (0, 3));
        // calc_load from 0 towards 6 ms with factor 2045 (100 ms window):
        // (0·2045 + 6e6·3 + 2047) / 2048 = 18002047 / 2048 = 8790 (integer division)
        assert_eq!(calc_load(0, 2045, 6 * MS), 8790);
        // and down from 6 ms towards 0: 6e6·2045/2048 = 5991210 (no round-up)
        assert_eq!(calc_load(6 * MS, 2045, 0), 5_991_210);
    }

    #[test]
    fn cookie_steps_by_nr_requests() {
        // qd = 64: down by 16, up by 4; once more than 64 below, by 1; floor at 128 below
        let mut li = ChildLatencyInfo::default();
        let d = DEFAULT_SCALE_COOKIE;
        li.scale_cookie_change(64, false);
        assert_eq!(li.scale_cookie, d - 16);
        for _ in 0..3 {
            li.scale_cookie_change(64, false);
        }
        assert_eq!(li.scale_cookie, d - 64);
        li.scale_cookie_change(64, false); // diff 64, not > 64: still by 16
        assert_eq!(li.scale_cookie, d - 80);
        li.scale_cookie_change(64, false); // diff 80 > 64: by 1
        assert_eq!(li.scale_cookie, d - 81);
        li.scale_cookie = d - 127;
        li.scale_cookie_change(64, false);
        assert_eq!(li.scale_cookie, d - 128);
        li.scale_cookie_change(64, false); // diff 128 is not < 128: stays
        assert_eq!(li.scale_cookie, d - 128);
        // up: by 1 while more than 64 below, then by 4, then straight to default
        li.scale_cookie_change(64, true);
        assert_eq!(li.scale_cookie, d - 127);
        li.scale_cookie = d - 64;
        li.scale_cookie_change(64, true);
        assert_eq!(li.scale_cookie, d - 60);
        li.scale_cookie = d - 3;
        li.scale_cookie_change(64, true);
        assert_eq!(li.scale_cookie, d);
        // qd = 2: steps of max(0, 1) = 1 both ways
        let mut small = ChildLatencyInfo::default();
        small.scale_cookie_change(2, false);
        assert_eq!(small.scale_cookie, d - 1);
    }

    #[test]
    fn lazy_sibling_reaction() {
        let qd = 32;
        let mut parent = ChildLatencyInfo::default();
        let mut noisy = IolatGrp::new(true, 0, DEFAULT_SCALE_COOKIE);
        // the cookie moved down: unlimited (clamped to qd = 32) halves to 16, then 8
        parent.scale_cookie_change(qd, false);
        assert_eq!(
            noisy.check_scale_change(&parent),
            Reaction::Scale { up: false }
        );
        noisy.scale_change(qd, false, || false);
        assert_eq!(noisy.max_depth, 16);
        assert_eq!(
            noisy.check_scale_change(&parent),
            Reaction::None,
            "seen once"
        );
        parent.scale_cookie_change(qd, false);
        noisy.check_scale_change(&parent);
        noisy.scale_change(qd, false, || false);
        assert_eq!(noisy.max_depth, 8);
        // up: + max(32 >> 4, 1) = 2
        parent.scale_cookie_change(qd, true);
        assert_eq!(
            noisy.check_scale_change(&parent),
            Reaction::Scale { up: true }
        );
        assert!(noisy.scale_change(qd, true, || false));
        assert_eq!(noisy.max_depth, 10);
        // at depth 1 going lower: use_delay
        noisy.max_depth = 1;
        parent.scale_cookie_change(qd, false);
        assert_eq!(noisy.check_scale_change(&parent), Reaction::UseDelay);
        // at depth 1 going up with a delay in use: the delay goes first
        parent.scale_cookie_change(qd, true);
        noisy.check_scale_change(&parent);
        assert!(!noisy.scale_change(qd, true, || true));
        assert_eq!(noisy.max_depth, 1);
        // back at the default cookie: unlimited
        parent.clear_scaling();
        assert_eq!(noisy.check_scale_change(&parent), Reaction::Unthrottle);
        assert_eq!(noisy.max_depth, u32::MAX);
    }

    #[test]
    fn siblings_with_a_lower_target_or_few_samples_are_spared() {
        let mut parent = ChildLatencyInfo {
            scale_lat: 5 * MS,
            nr_samples: 1000,
            ..Default::default()
        };
        parent.scale_cookie_change(32, false);
        // target 2 ms ≤ scale_lat: spared
        let mut low = IolatGrp::new(true, 0, DEFAULT_SCALE_COOKIE);
        low.min_lat_nsec = 2 * MS;
        low.nr_samples = 900;
        assert_eq!(low.check_scale_change(&parent), Reaction::None);
        // target 10 ms with 50 of 1000 samples (≤ 5%): spared; 51: scaled
        let mut few = IolatGrp::new(true, 0, DEFAULT_SCALE_COOKIE);
        few.min_lat_nsec = 10 * MS;
        few.nr_samples = 50;
        assert_eq!(few.check_scale_change(&parent), Reaction::None);
        let mut more = IolatGrp::new(true, 0, DEFAULT_SCALE_COOKIE);
        more.min_lat_nsec = 10 * MS;
        more.nr_samples = 51;
        assert_eq!(
            more.check_scale_change(&parent),
            Reaction::Scale { up: false }
        );
        // no target, no samples: never spared
        let mut none = IolatGrp::new(true, 0, DEFAULT_SCALE_COOKIE);
        assert_eq!(
            none.check_scale_change(&parent),
            Reaction::Scale { up: false }
        );
    }

    #[test]
    fn check_latencies_scales_down_then_up() {
        let qd = 32;
        let mut g = IolatGrp::new(true, 0, DEFAULT_SCALE_COOKIE);
        g.min_lat_nsec = MS;
        let mut li = ChildLatencyInfo::default();
        let bad = LatencyStat {
            total: 20,
            missed: 2,
            ..Default::default()
        };
        let good = LatencyStat {
            total: 20,
            missed: 1,
            ..Default::default()
        };
        let t = 1000 * MS;
        assert_eq!(
            check_latencies(&mut g, 3, &bad, &mut li, qd, t),
            Verdict::Down
        );
        assert_eq!(li.scale_cookie, DEFAULT_SCALE_COOKIE - 8);
        assert_eq!(
            (li.scale_grp, li.scale_lat, li.nr_samples),
            (Some(3), MS, 20)
        );
        // 100 ms later: too soon, carried
        assert_eq!(
            check_latencies(&mut g, 3, &good, &mut li, qd, t + 100 * MS),
            Verdict::Carried
        );
        assert_eq!(g.cur_stat.total, 20);
        // 500 ms after the event: cur_stat 40/2 and the window 20/1 both pass: up by 2
        assert_eq!(
            check_latencies(&mut g, 3, &good, &mut li, qd, t + 500 * MS),
            Verdict::Up
        );
        assert_eq!(li.scale_cookie, DEFAULT_SCALE_COOKIE - 6);
        assert_eq!(g.cur_stat, LatencyStat::default());
    }
}
