//! Pure pieces of blk-iocost's debt handling (spec §6.9): bios that must not be
//! throttled (REQ_META/REQ_SWAP) are issued at once and their cost is remembered as
//! debt (`abs_vdebt`); while in debt the cgroup's issuers are delayed on return to user
//! space, and an idle device forgives debt.
//!
//! - [`delay_for_overage`]: `iocg_kick_delay()`'s mapping of the debt overage (% of a
//!   period) to an issuer delay between `MIN_DELAY` and `MAX_DELAY`;
//! - [`decayed_delay`]: the delay in effect, halved every second since it was set;
//! - [`Forgiveness`]: `ioc_forgive_debts()`'s usage window, returning how many halvings
//!   to apply; [`halve`] applies them as the kernel does (never down to 0).
//!
//! The stateful parts (incurring, paying, kicking the delay) live in `ctl.rs`.

pub const MIN_DELAY_THR_PCT: i64 = 500;
pub const MAX_DELAY_THR_PCT: i64 = 25_000;
/// Issuer delay range, us.
pub const MIN_DELAY: u64 = 250;
pub const MAX_DELAY: u64 = 250_000;
/// Debt forgiveness: device usage threshold and window, us.
pub const DFGV_USAGE_PCT: u64 = 50;
pub const DFGV_PERIOD: u64 = 100_000;

/// Mirrors the middle of `iocg_kick_delay()`: debt overage in % of a period → delay us.
pub fn delay_for_overage(vover_pct: i64) -> u64 {
    if vover_pct <= MIN_DELAY_THR_PCT {
        0
    } else if vover_pct >= MAX_DELAY_THR_PCT {
        MAX_DELAY
    } else {
        MIN_DELAY
            + (MAX_DELAY - MIN_DELAY) * (vover_pct - MIN_DELAY_THR_PCT) as u64
                / (MAX_DELAY_THR_PCT - MIN_DELAY_THR_PCT) as u64
    }
}

/// Mirrors the start of `iocg_kick_delay()`: `delay` set `tdelta_us` ago, halved per
/// whole second.
pub fn decayed_delay(delay: u64, tdelta_us: u64) -> u64 {
    let shift = tdelta_us / 1_000_000;
    if delay > 0 && shift < 64 {
        delay >> shift
    } else {
        0
    }
}

/// `v >> n ?: 1` for a non-zero `v` (n capped at 63), as `ioc_forgive_debts()` does.
pub fn halve(v: u64, n: u64) -> u64 {
    if v == 0 { 0 } else { (v >> n.min(63)).max(1) }
}

/// `ioc->dfgv_*`: the debt-forgiveness window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forgiveness {
    period_at: i64,
    rem: u64,
    usage_us_sum: u64,
}

impl Forgiveness {
    /// Window restart (no debtors, or the ioc starts running).
    pub fn reset(&mut self, now_us: i64) {
        *self = Forgiveness {
            period_at: now_us,
            ..Forgiveness::default()
        };
    }

    /// Mirrors the window arithmetic of `ioc_forgive_debts()`: `Some((usage_pct,
    /// nr_cycles))` when debts are to be halved `nr_cycles` times.
    pub fn tick(
        &mut self,
        now_us: i64,
        usage_us_sum: u64,
        nr_debtors: u32,
        busy: bool,
        period_us: u64,
    ) -> Option<(u64, u64)> {
        if nr_debtors == 0 {
            self.reset(now_us);
            return None;
        }
        // missing latency targets: count the device as fully used
        let usage = if busy {
            usage_us_sum.max(period_us)
        } else {
            usage_us_sum
        };
        self.usage_us_sum += usage;
        if now_us < self.period_at + DFGV_PERIOD as i64 {
            return None;
        }
        let dur = (now_us - self.period_at) as u64;
        let usage_pct = 100 * self.usage_us_sum / dur.max(1);
        self.period_at = now_us;
        self.usage_us_sum = 0;
        if usage_pct > DFGV_USAGE_PCT {
            self.rem = 0;
            return None;
        }
        let total = dur + self.rem;
        self.rem = total % DFGV_PERIOD;
        Some((usage_pct, total / DFGV_PERIOD))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overage_to_delay() {
        assert_eq!(delay_for_overage(500), 0);
        assert_eq!(delay_for_overage(501), 250 + 249_750 / 24_500);
        assert_eq!(delay_for_overage(12_750), 250 + 249_750 * 12_250 / 24_500);
        assert_eq!(delay_for_overage(25_000), MAX_DELAY);
        assert_eq!(delay_for_overage(-3), 0);
        assert_eq!(decayed_delay(1000, 999_999), 1000);
        assert_eq!(decayed_delay(1000, 2_500_000), 250);
        assert_eq!(decayed_delay(1000, 64_000_000), 0);
        assert_eq!((halve(5, 3), halve(0, 3), halve(16, 2)), (1, 0, 4));
    }

    #[test]
    fn forgiveness_window() {
        let mut f = Forgiveness::default();
        f.reset(0);
        // 75 ms of 10 ms periods at 40% usage: nothing yet
        for t in 1..=7 {
            assert_eq!(f.tick(t * 10_000, 4_000, 1, false, 10_000), None);
        }
        // 150 ms: 40% ≤ 50% → one halving, 50 ms carried over
        assert_eq!(f.tick(150_000, 32_000, 1, false, 10_000), Some((40, 1)));
        // next 150 ms: 50 ms + 150 ms carried → two halvings
        assert_eq!(f.tick(300_000, 0, 1, false, 10_000), Some((0, 2)));
        // busy: usage raised to the period → 100 ms at 100% → reset, nothing
        for t in 31..40 {
            assert_eq!(f.tick(t * 10_000, 0, 1, true, 10_000), None);
        }
        assert_eq!(f.tick(400_000, 0, 1, true, 10_000), None);
        // no debtors: window restarts
        assert_eq!(f.tick(410_000, 0, 0, false, 10_000), None);
        assert_eq!(f.tick(450_000, 0, 1, false, 10_000), None);
        assert_eq!(f.tick(510_000, 0, 1, false, 10_000), Some((0, 1)));
    }
}
