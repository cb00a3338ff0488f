//! The kernel's jiffies, as the policies and the scheduler that count in them see them.
//!
//! Design
//! ------
//! The idea: blk-throttle's slices, blk-iolatency's timer and mq-deadline's expiry are
//! counted in jiffies (`CONFIG_HZ` ticks), and where the kernel rounds to a whole
//! jiffy the simulator must round at the same instants. Simulated time is in ns from
//! t = 0, so a clock is two numbers: its reading at t = 0 and its `HZ`; a reading is
//! `start + floor(now·HZ/1e9)`, exact in 128-bit arithmetic. The default reading at
//! t = 0 is the kernel's `INITIAL_JIFFIES` on 64-bit, `2^32 − 300·HZ`, so a roundup on
//! absolute jiffies (blk-throttle's `slice_end`, the timer wheel's buckets) is not
//! aligned to t = 0, as on a freshly booted machine.
//!
//! Moving parts: [`initial_jiffies`] (the reading at t = 0), [`at`] (ns → jiffies),
//! [`time_after`] / [`time_after_eq`] (comparisons across the wrap),
//! [`ns_of`] (the first instant a reading is reached) and [`wheel_bucket`] (when the
//! timer wheel fires a timer). Each user keeps its own `start`
//! and `HZ` (`ThrottleConfig`, mq-deadline's tunables, blk-iolatency's config); the
//! `msecs_to_jiffies()` of mq-deadline's tunables stays with them.

use crate::sim::{NSEC_PER_SEC, Ns};

/// `time_after(a, b)`: `(long)(b − a) < 0`, right across the counter's wrap (a time
/// "infinitely" in the past, `jiffies − MAX_JIFFY_OFFSET`, is before any reading).
pub fn time_after(a: u64, b: u64) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// `time_after_eq(a, b)`: `(long)(a − b) >= 0`.
pub fn time_after_eq(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) >= 0
}

/// `INITIAL_JIFFIES` of a 64-bit kernel: `(u64)(u32)(-300·HZ)`.
pub fn initial_jiffies(hz: u32) -> u64 {
    (1u64 << 32) - 300 * u64::from(hz)
}

/// jiffies at time `now` on a clock that read `start` at t = 0 and ticks `hz` times a
/// second.
#[inline]
pub fn at(now: Ns, start: u64, hz: u64) -> u64 {
    start + (u128::from(now) * u128::from(hz) / u128::from(NSEC_PER_SEC)) as u64
}

/// The first instant at which that clock reaches `j` (t = 0 for a reading at or before
/// `start`).
#[inline]
pub fn ns_of(j: u64, start: u64, hz: u64) -> Ns {
    let d = u128::from(j.saturating_sub(start)) * u128::from(NSEC_PER_SEC);
    d.div_ceil(u128::from(hz)) as Ns
}

/// The jiffy at which the timer wheel fires a timer armed at `clk` to expire at
/// `expires` (`calc_wheel_index()` → `calc_index()`): the expiry rounded up past its
/// level's granularity (`8^lvl` jiffies, level `lvl` from `LVL_START(n) = 63 << 3(n−1)`),
/// so never early and, at level 0, one jiffy late.
pub fn wheel_bucket(expires: u64, clk: u64) -> u64 {
    let delta = expires.saturating_sub(clk);
    let mut lvl = 0;
    while lvl < 8 && delta >= 63u64 << (3 * lvl) {
        lvl += 1;
    }
    let shift = 3 * lvl;
    ((expires >> shift) + 1) << shift
}
