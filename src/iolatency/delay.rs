//! blk-cgroup's per-blkg delay as blk-iolatency drives it (`block/blk-cgroup.[ch]`,
//! 6.12): `use_delay` counts how often a group at depth 1 was asked to go lower,
//! `delay_nsec` accumulates the debt of its issue-as-root bios, and a task of the group
//! sleeps on return to user space for the largest debt on its path, at most 250 ms
//! per syscall. The debt decays lazily, once per second, when it is next looked at.
//!
//! Only the positive (`blkcg_use_delay()`) side is modelled: blk-iocost's
//! `blkcg_set_delay()` (negative `use_delay`) has its own model in `crate::iocost::debt`.

use crate::sim::{NSEC_PER_MSEC, NSEC_PER_SEC, Ns};

/// The delay fields of one blkg (`blkcg_gq`: `use_delay`, `delay_nsec`, `delay_start`,
/// `last_delay`, `last_use`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlkgDelay {
    pub use_delay: i32,
    pub delay_nsec: u64,
    delay_start: u64,
    last_delay: u64,
    last_use: i32,
}

/// The most a task sleeps per syscall (`blkcg_maybe_throttle_blkg()`'s clamp).
pub const MAX_SLEEP_NS: Ns = 250 * NSEC_PER_MSEC;

impl BlkgDelay {
    /// `blkcg_use_delay()`.
    pub fn use_delay(&mut self) {
        self.use_delay += 1;
    }

    /// `blkcg_unuse_delay()`: true when there was a use to drop.
    pub fn unuse_delay(&mut self) -> bool {
        if self.use_delay <= 0 {
            return false;
        }
        self.use_delay -= 1;
        true
    }

    /// `blkcg_clear_delay()`: `use_delay` back to 0; the accumulated `delay_nsec` stays.
    pub fn clear_delay(&mut self) {
        self.use_delay = 0;
    }

    /// `blkcg_scale_delay()`: at most once a second, forget what was charged in the
    /// last second (and half the rest when the group was unthrottled meanwhile).
    pub fn scale_delay(&mut self, now: Ns) {
        let old = self.delay_start;
        // time_before64(old + NSEC_PER_SEC, now)
        if (old.wrapping_add(NSEC_PER_SEC) as i64).wrapping_sub(now as i64) >= 0 {
            return;
        }
        self.delay_start = now;
        let cur = self.delay_nsec;
        let mut sub = self.last_delay.min(now - old);
        if self.use_delay < self.last_use {
            sub = sub.max(self.last_delay >> 1);
        }
        if cur < sub {
            self.delay_nsec = 0;
            self.last_delay = 0;
        } else {
            self.delay_nsec -= sub;
            self.last_delay = cur - sub;
        }
        self.last_use = self.use_delay;
    }

    /// `blkcg_add_delay()`.
    pub fn add_delay(&mut self, now: Ns, delta: u64) {
        self.scale_delay(now);
        self.delay_nsec = self.delay_nsec.wrapping_add(delta);
    }
}

/// `blkcg_maybe_throttle_blkg()`: visit the task's group, then its ancestors (the root
/// excluded); the task sleeps for the largest debt seen, at most 250 ms when it came
/// from `blkcg_use_delay()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReturnToUser {
    delay_nsec: u64,
    clamp: bool,
}

impl ReturnToUser {
    pub fn visit(&mut self, d: &mut BlkgDelay, now: Ns) {
        if d.use_delay != 0 {
            d.scale_delay(now);
            if d.delay_nsec > self.delay_nsec {
                self.delay_nsec = d.delay_nsec;
                self.clamp = d.use_delay > 0;
            }
        }
    }

    /// How long the task sleeps.
    pub fn sleep(&self) -> Ns {
        if self.clamp {
            self.delay_nsec.min(MAX_SLEEP_NS)
        } else {
            self.delay_nsec
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_decays_per_second_and_clamps() {
        let mut d = BlkgDelay::default();
        d.use_delay();
        // t = 2 s: the first scale_delay only starts the window (last_delay was 0)
        d.add_delay(2 * NSEC_PER_SEC, 600 * NSEC_PER_MSEC);
        assert_eq!(d.delay_nsec, 600 * NSEC_PER_MSEC);
        let mut r = ReturnToUser::default();
        r.visit(&mut d, 2 * NSEC_PER_SEC);
        assert_eq!(r.sleep(), MAX_SLEEP_NS);
        // 1.5 s later: last_delay (0 when the window started) is subtracted: nothing
        let t = 3 * NSEC_PER_SEC + 500 * NSEC_PER_MSEC;
        d.scale_delay(t);
        assert_eq!(d.delay_nsec, 600 * NSEC_PER_MSEC);
        // another 1.5 s: min(last_delay = 600 ms, 1.5 s) goes
        d.scale_delay(t + 1_500 * NSEC_PER_MSEC);
        assert_eq!(d.delay_nsec, 0);
        // no use_delay: no sleep whatever the debt
        let mut e = BlkgDelay {
            delay_nsec: 5,
            ..Default::default()
        };
        let mut r = ReturnToUser::default();
        r.visit(&mut e, 0);
        assert_eq!(r.sleep(), 0);
    }

    #[test]
    fn unthrottled_groups_drop_half_at_once() {
        let mut d = BlkgDelay::default();
        d.use_delay();
        d.use_delay();
        d.add_delay(2 * NSEC_PER_SEC, 800 * NSEC_PER_MSEC);
        d.scale_delay(4 * NSEC_PER_SEC); // last_delay = 800 ms, last_use = 2
        assert!(d.unuse_delay());
        // 1.2 s later: sub = min(800 ms, 1.2 s) = 800 ms, max'd with 400 ms
        d.add_delay(5_200 * NSEC_PER_MSEC, 100);
        assert_eq!(d.delay_nsec, 100);
        d.clear_delay();
        assert!(!d.unuse_delay());
    }
}
