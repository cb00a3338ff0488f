//! The arithmetic of dirty throttling, function by function as `mm/page-writeback.c`
//! (6.12) writes it: the domain's thresholds, the position ratio, the bandwidth and
//! rate-limit estimators and the pause bounds. Pure functions over pages, jiffies and
//! pages per second, in the kernel's integer arithmetic (`RATELIMIT_CALC_SHIFT` fixed
//! point, `ilog2`, the truncating divisions), so that a writer's pause lands on the
//! jiffy the kernel's does. The state they read and write is `super::Writeback`'s.

/// `PAGE_SIZE`, bytes.
pub const PAGE_SIZE: u64 = 4096;
/// `RATELIMIT_CALC_SHIFT`: the fixed point of `pos_ratio`.
pub const RATELIMIT_CALC_SHIFT: u32 = 10;
/// `INIT_BW`: a new wb's write bandwidth and rate limits, 100 MB/s in pages.
pub const INIT_BW: u64 = 100 << (20 - 12);
/// `DIRTY_POLL_THRESH`: 128 KiB in pages.
pub const DIRTY_POLL_THRESH: u64 = 128 >> 2;
/// `BDI_RATIO_SCALE`: a bdi's min/max ratios are in 1/10000ths of a percent.
const BDI_RATIO_SCALE: u64 = 10_000;

/// `MAX_PAUSE` and `BANDWIDTH_INTERVAL`: `max(HZ / 5, 1)` jiffies.
pub fn max_pause(hz: u64) -> u64 {
    (hz / 5).max(1)
}

fn ilog2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        63 - u64::from(x.leading_zeros())
    }
}

fn roundup_pow_of_two(x: u64) -> u64 {
    x.max(1).next_power_of_two()
}

/// The `vm.dirty_*` sysctls that decide the limits (`vm_dirty_ratio`, ...): a byte
/// value, when set, wins over its ratio, as the handlers leave only one of the two
/// non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirtySysctls {
    pub dirty_ratio: u64,
    pub dirty_bytes: u64,
    pub dirty_background_ratio: u64,
    pub dirty_background_bytes: u64,
}

/// `domain_dirty_limits()`: `(thresh, bg_thresh)` in pages for a domain with
/// `avail` dirtyable pages. `global_avail` is `Some` for a memcg domain, whose byte
/// settings are turned into ratios of the global domain's memory.
pub fn domain_dirty_limits(vm: &DirtySysctls, avail: u64, global_avail: Option<u64>) -> (u64, u64) {
    // ratios per PAGE_SIZE, for precision
    let mut ratio = vm.dirty_ratio * PAGE_SIZE / 100;
    let mut bg_ratio = vm.dirty_background_ratio * PAGE_SIZE / 100;
    let (mut bytes, mut bg_bytes) = (vm.dirty_bytes, vm.dirty_background_bytes);
    if let Some(g) = global_avail {
        let g = g.max(1);
        if bytes > 0 {
            ratio = bytes.div_ceil(g).min(PAGE_SIZE);
        }
        if bg_bytes > 0 {
            bg_ratio = bg_bytes.div_ceil(g).min(PAGE_SIZE);
        }
        bytes = 0;
        bg_bytes = 0;
    }
    let thresh = if bytes > 0 {
        bytes.div_ceil(PAGE_SIZE)
    } else {
        ratio * avail / PAGE_SIZE
    };
    let mut bg_thresh = if bg_bytes > 0 {
        bg_bytes.div_ceil(PAGE_SIZE)
    } else {
        bg_ratio * avail / PAGE_SIZE
    };
    let thresh = thresh.min(u64::from(u32::MAX));
    if bg_thresh >= thresh {
        bg_thresh = thresh / 2;
    }
    (thresh, bg_thresh)
}

/// `dirty_freerun_ceiling()`: below it a writer is never paused.
pub fn freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// `pos_ratio_polynom()`: `1 + ((setpoint − dirty) / (limit − setpoint))³`, clamped to
/// [0, 2], in `RATELIMIT_CALC_SHIFT` fixed point.
pub fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> i64 {
    let x = ((setpoint as i64 - dirty as i64) << RATELIMIT_CALC_SHIFT)
        / ((limit.saturating_sub(setpoint)) | 1) as i64;
    let mut pos = x;
    pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
    pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
    pos += 1 << RATELIMIT_CALC_SHIFT;
    pos.clamp(0, 2 << RATELIMIT_CALC_SHIFT)
}

/// What `wb_position_ratio()` reads of one domain (a `dirty_throttle_control`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dtc {
    pub avail: u64,
    /// Dirty and under writeback, pages (the domain's).
    pub dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    /// This wb's dirty and under writeback, and its share of `thresh`.
    pub wb_dirty: u64,
    pub wb_thresh: u64,
    pub wb_bg_thresh: u64,
    /// The domain's `dirty_limit` (`hard_dirty_limit()` takes the larger).
    pub dom_dirty_limit: u64,
    pub pos_ratio: u64,
    pub freerun: bool,
    pub dirty_exceeded: bool,
}

/// `__wb_calc_thresh()` with a bdi's default ratios (min 0, max 100%): the wb's share
/// of `thresh` by its fraction of the domain's recent writeout completions.
pub fn wb_calc_thresh(thresh: u64, numerator: u64, denominator: u64) -> u64 {
    let wb_thresh = thresh * (100 * BDI_RATIO_SCALE) / (100 * BDI_RATIO_SCALE);
    let wb_thresh =
        (u128::from(wb_thresh) * u128::from(numerator) / u128::from(denominator.max(1))) as u64;
    wb_thresh.min(thresh)
}

/// `wb_position_ratio()` without `BDI_CAP_STRICTLIMIT` (no block device sets it):
/// the global control line scaled by the wb's own, for a wb writing at `write_bw`.
pub fn wb_position_ratio(d: &Dtc, write_bw: u64) -> u64 {
    let freerun = freerun_ceiling(d.thresh, d.bg_thresh);
    let limit = d.thresh.max(d.dom_dirty_limit);
    if d.dirty >= limit {
        return 0;
    }
    let setpoint = (freerun + limit) / 2;
    let mut pos_ratio = pos_ratio_polynom(setpoint, d.dirty, limit) as u64;
    let mut wb_thresh = d.wb_thresh.min(d.thresh);
    // an idle wb's share is near 0: give it enough that occasional writes pass
    wb_thresh = wb_thresh.max((limit - d.dirty) / 8);
    let x = (wb_thresh << 16) / (d.thresh | 1);
    let wb_setpoint = ((u128::from(setpoint) * u128::from(x)) >> 16) as u64;
    let span = ((u128::from(d.thresh - wb_thresh + 8 * write_bw) * u128::from(x)) >> 16) as u64;
    let x_intercept = wb_setpoint + span;
    if d.wb_dirty < x_intercept - span / 4 {
        pos_ratio = (u128::from(pos_ratio) * u128::from(x_intercept - d.wb_dirty)
            / u128::from((x_intercept - wb_setpoint) | 1)) as u64;
    } else {
        pos_ratio /= 4;
    }
    // the wb's reserve area: against an underrun of its dirty pool
    let x_intercept = wb_thresh / 2;
    if d.wb_dirty < x_intercept {
        if d.wb_dirty > x_intercept / 8 {
            pos_ratio = pos_ratio * x_intercept / d.wb_dirty;
        } else {
            pos_ratio *= 8;
        }
    }
    pos_ratio
}

/// A wb's bandwidth estimators (`bdi_writeback`'s fields), pages per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WbBandwidth {
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    /// jiffies of the last update, and the counters then.
    pub bw_time_stamp: u64,
    pub dirtied_stamp: u64,
    pub written_stamp: u64,
}

impl WbBandwidth {
    pub fn new(now: u64) -> Self {
        WbBandwidth {
            write_bandwidth: INIT_BW,
            avg_write_bandwidth: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_dirty_ratelimit: INIT_BW,
            bw_time_stamp: now,
            dirtied_stamp: 0,
            written_stamp: 0,
        }
    }

    /// `wb_update_write_bandwidth()`: `written` pages in all, `elapsed` jiffies since
    /// the last update; a 3-second (rounded up to a power of two) moving average.
    pub fn update_write_bandwidth(&mut self, hz: u64, elapsed: u64, written: u64) {
        let period = roundup_pow_of_two(3 * hz);
        let mut avg = self.avg_write_bandwidth;
        let old = self.write_bandwidth;
        let mut bw = (written - written.min(self.written_stamp)) * hz;
        if elapsed > period {
            bw /= elapsed;
            avg = bw;
        } else {
            bw += old * (period - elapsed);
            bw >>= ilog2(period);
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            }
            if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
        }
        self.write_bandwidth = bw;
        self.avg_write_bandwidth = avg.max(1);
    }

    /// `wb_update_dirty_ratelimit()`: move `dirty_ratelimit` toward the rate that
    /// balances the writers' dirtying with the wb's writeout, in steps that shrink
    /// near it.
    pub fn update_dirty_ratelimit(&mut self, hz: u64, d: &Dtc, dirtied: u64, elapsed: u64) {
        let freerun = freerun_ceiling(d.thresh, d.bg_thresh);
        let limit = d.thresh.max(d.dom_dirty_limit);
        let setpoint = (freerun + limit) / 2;
        let write_bw = self.avg_write_bandwidth;
        let mut dirty_ratelimit = self.dirty_ratelimit;
        let dirty_rate = (dirtied - self.dirtied_stamp) * hz / elapsed.max(1);
        let task_ratelimit = ((u128::from(dirty_ratelimit) * u128::from(d.pos_ratio))
            >> RATELIMIT_CALC_SHIFT) as u64
            + 1;
        let balanced = ((u128::from(task_ratelimit) * u128::from(write_bw))
            / u128::from(dirty_rate | 1)) as u64;
        let balanced = balanced.min(write_bw);
        let mut step = 0;
        if d.dirty < setpoint {
            let x = self
                .balanced_dirty_ratelimit
                .min(balanced)
                .min(task_ratelimit);
            if dirty_ratelimit < x {
                step = x - dirty_ratelimit;
            }
        } else {
            let x = self
                .balanced_dirty_ratelimit
                .max(balanced)
                .max(task_ratelimit);
            if dirty_ratelimit > x {
                step = dirty_ratelimit - x;
            }
        }
        let shift = dirty_ratelimit / (2 * step + 1);
        step = if shift < 64 {
            (step >> shift).div_ceil(8)
        } else {
            0
        };
        if dirty_ratelimit < balanced {
            dirty_ratelimit += step;
        } else {
            dirty_ratelimit -= step;
        }
        self.dirty_ratelimit = dirty_ratelimit.max(1);
        self.balanced_dirty_ratelimit = balanced;
    }
}

/// `dirty_poll_interval()`: how many pages a free-running writer dirties before it
/// looks again — about the square root of its distance to `thresh`.
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << (ilog2(thresh - dirty) >> 1)
    } else {
        1
    }
}

/// `wb_max_pause()`: at most the time the wb takes to write its dirty pages out at
/// 1/8 of a second's bandwidth, and never more than `MAX_PAUSE`.
pub fn wb_max_pause(hz: u64, avg_write_bw: u64, wb_dirty: u64) -> u64 {
    let t = wb_dirty / (1 + avg_write_bw / roundup_pow_of_two(1 + hz / 8)) + 1;
    t.min(max_pause(hz))
}

/// `wb_min_pause()`: `(min_pause, nr_dirtied_pause)` — the shortest pause worth
/// sleeping for, and the pages to dirty before the next look.
pub fn wb_min_pause(
    hz: u64,
    avg_write_bw: u64,
    max_pause: u64,
    task_ratelimit: u64,
    dirty_ratelimit: u64,
) -> (u64, u64) {
    let hi = ilog2(avg_write_bw) as i64;
    let lo = ilog2(dirty_ratelimit) as i64;
    let max_pause = max_pause as i64;
    let mut t = (hz as i64 / 100).max(1);
    if hi > lo {
        t += (hi - lo) * (10 * hz as i64) / 1024;
    }
    t = t.min(1 + max_pause / 2);
    let hz_pow = roundup_pow_of_two(hz) as i64;
    let dirty_ratelimit = dirty_ratelimit as i64;
    let mut pages = dirty_ratelimit * t / hz_pow;
    let thresh = DIRTY_POLL_THRESH as i64;
    if pages < thresh {
        t = max_pause;
        pages = dirty_ratelimit * t / hz_pow;
        if pages > thresh {
            pages = thresh;
            t = hz as i64 * thresh / dirty_ratelimit.max(1);
        }
    }
    let task_ratelimit = task_ratelimit as i64;
    let pause = hz as i64 * pages / (task_ratelimit + 1);
    if pause > max_pause {
        t = max_pause;
        pages = task_ratelimit * t / hz_pow;
    }
    let min_pause = if pages >= thresh { 1 + t / 2 } else { t };
    (min_pause.max(0) as u64, pages.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VM: DirtySysctls = DirtySysctls {
        dirty_ratio: 20,
        dirty_bytes: 0,
        dirty_background_ratio: 10,
        dirty_background_bytes: 0,
    };

    #[test]
    fn the_default_ratios_give_a_fifth_and_a_tenth_of_dirtyable_memory() {
        // 16 GiB dirtyable: 4,194,304 pages; the ratios per PAGE_SIZE are 819 and 409
        // of 4096, so a hair under a fifth and a tenth
        let (t, bg) = domain_dirty_limits(&VM, 4_194_304, None);
        assert_eq!((t, bg), (838_656, 418_816));
        assert_eq!(freerun_ceiling(t, bg), 628_736);
    }

    #[test]
    fn bytes_win_and_a_background_at_or_above_the_limit_is_halved() {
        let vm = DirtySysctls {
            dirty_bytes: 64 << 20,
            dirty_background_bytes: 128 << 20,
            ..VM
        };
        assert_eq!(domain_dirty_limits(&vm, 4_194_304, None), (16_384, 8_192));
        // a memcg domain turns bytes into a ratio of the global memory
        let (t, _) = domain_dirty_limits(&vm, 262_144, Some(4_194_304));
        // ratio = ceil(64 MiB / 4,194,304) = 16 per PAGE_SIZE: 262,144 * 16 / 4096
        assert_eq!(t, 1_024);
    }

    #[test]
    fn the_control_line_is_two_at_freerun_one_at_the_setpoint_zero_at_the_limit() {
        let (freerun, limit) = (1000u64, 2000u64);
        let setpoint = (freerun + limit) / 2;
        assert_eq!(pos_ratio_polynom(setpoint, setpoint, limit), 1024);
        // the truncating division leaves 8/1024 at the limit (wb_position_ratio()
        // stops there before it asks)
        assert_eq!(pos_ratio_polynom(setpoint, limit, limit), 8);
        assert!(pos_ratio_polynom(setpoint, freerun, limit) > 1800);
        assert_eq!(pos_ratio_polynom(setpoint, 0, limit), 2048);
    }

    #[test]
    fn a_lone_wb_at_the_setpoint_runs_at_its_rate_limit() {
        let d = Dtc {
            thresh: 2000,
            bg_thresh: 1000,
            dirty: 1750,
            wb_dirty: 1750,
            wb_thresh: 2000,
            dom_dirty_limit: 2000,
            ..Dtc::default()
        };
        // setpoint (1500 + 2000) / 2 = 1750; the wb's line is 1 there too
        let r = wb_position_ratio(&d, 100);
        assert!((1000..=1030).contains(&r), "{r}");
        // over the limit: stop
        assert_eq!(wb_position_ratio(&Dtc { dirty: 2000, ..d }, 100), 0);
    }

    #[test]
    fn the_bandwidth_estimate_follows_what_was_written() {
        let mut bw = WbBandwidth::new(0);
        // 250 Hz; 2,560 pages (10 MiB) written each 50 jiffies (200 ms): 12,800 pages/s
        let mut written = 0;
        for _ in 0..100 {
            written += 2_560;
            bw.update_write_bandwidth(250, 50, written);
            bw.written_stamp = written;
        }
        assert!(
            bw.write_bandwidth.abs_diff(12_800) < 200,
            "{}",
            bw.write_bandwidth
        );
        assert!(
            bw.avg_write_bandwidth.abs_diff(12_800) < 1_500,
            "{}",
            bw.avg_write_bandwidth
        );
    }

    #[test]
    fn pauses_are_bounded_by_max_pause() {
        assert_eq!(max_pause(250), 50);
        assert_eq!(wb_max_pause(250, 2_560, 1 << 20), 50);
        assert_eq!(wb_max_pause(250, 2_560, 0), 1);
        let (min_pause, pages) = wb_min_pause(250, 2_560, 50, 2_560, 2_560);
        assert!((1..=26).contains(&min_pause), "{min_pause}");
        assert!(pages >= DIRTY_POLL_THRESH, "{pages}");
    }
}
