//! BFQ's `queue/iosched/` files (the same ten in 6.1 and 6.12), stored in the kernel's
//! units and written and shown as `bfq_attrs[]`'s store and show functions do.
//!
//! The idea: [`Tunables`] is the settings part of `struct bfq_data`, field for field
//! and unit for unit (ns for the FIFO expiry and `slice_idle`, jiffies for
//! `bfq_timeout`, KiB for `bfq_back_max`, sectors for the user's max budget), so the
//! scheduler reads them as the kernel does and a write rounds where the kernel rounds.
//!
//! Moving parts:
//! - the parse is `bfq_var_store()`: `kstrtoul(page, 10)` — decimal only, an optional
//!   `+`, one trailing newline; anything else is EINVAL, past `u64` ERANGE, and is the
//!   key's error;
//! - a parsed number is never refused: each `STORE_FUNCTION` **clamps** it to the
//!   file's range, then converts ms to ns (`(u64)v * NSEC_PER_MSEC`, into the u32
//!   `bfq_slice_idle`, which wraps above 4294 ms) or to jiffies (`msecs_to_jiffies()`);
//! - side effects that need scheduler state come back as [`Stored`] for the caller to
//!   apply (a new `bfq_max_budget`, `bfq_end_wr()`); the one that does not —
//!   `strict_guarantees` raising `slice_idle` to 8 ms — is applied here;
//! - reading is the `SHOW_FUNCTION`s: ns as whole ms (or µs), jiffies through
//!   `jiffies_to_msecs()`, so the default `timeout_sync` of `HZ/8` jiffies reads 124 on
//!   HZ=250.
//!
//! The jiffies conversions are mq-deadline's: ceilings, exact for every HZ the
//! simulator allows (100, 250, 300, 1000) over the whole clamp range.

use crate::blkcg::{Errno, KernelError};
use crate::error::KeyError;
use crate::sched::mq_deadline::tunables::{jiffies_to_msecs, msecs_to_jiffies};
use crate::sim::{NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC};

/// The files, by their sysfs names (`bfq_attrs[]` order). There is no
/// `timeout_async`: `timeout_sync` is the budget timeout of every queue.
pub const NAMES: &[&str] = &[
    "fifo_expire_sync",
    "fifo_expire_async",
    "back_seek_max",
    "back_seek_penalty",
    "slice_idle",
    "slice_idle_us",
    "max_budget",
    "timeout_sync",
    "strict_guarantees",
    "low_latency",
];

const INT_MAX: u64 = i32::MAX as u64;
const UINT_MAX: u64 = u32::MAX as u64;

/// `struct bfq_data`'s settings, in the kernel's units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunables {
    /// CONFIG_HZ `bfq_timeout` is counted in.
    pub hz: u32,
    /// `bfq_fifo_expire[]`, ns: `[0]` async, `[1]` sync.
    pub bfq_fifo_expire: [u64; 2],
    /// KiB a backward seek may reach and still be taken.
    pub bfq_back_max: u32,
    /// A backward seek's distance counts this many times.
    pub bfq_back_penalty: u32,
    /// ns (a u32 in the kernel too: 4.29 s at most).
    pub bfq_slice_idle: u32,
    /// sectors; 0 = `bfq_max_budget` auto-tuned from the peak rate.
    pub bfq_user_max_budget: u32,
    /// The budget timeout, jiffies (`timeout_sync`).
    pub bfq_timeout: u32,
    pub strict_guarantees: bool,
    pub low_latency: bool,
}

/// What else a write changes, for the caller holding the scheduler's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Nothing beyond the file's value.
    Plain,
    /// `bfqd->bfq_max_budget` is set again: to `bfq_user_max_budget` when that is
    /// non-zero, else to `bfq_calc_max_budget()` of the current peak rate and
    /// `bfq_timeout` (every `max_budget` write; `timeout_sync` in auto mode).
    RecalcMaxBudget,
    /// `low_latency` went from 1 to 0: `bfq_end_wr()` ends every queue's weight raising.
    EndWeightRaising,
}

impl Tunables {
    /// `bfq_init_queue()`'s settings (and the statics it copies).
    pub fn new(hz: u32) -> Self {
        Tunables {
            hz,
            bfq_fifo_expire: [NSEC_PER_SEC / 4, NSEC_PER_SEC / 8],
            bfq_back_max: 16 * 1024,
            bfq_back_penalty: 2,
            bfq_slice_idle: (NSEC_PER_SEC / 125) as u32,
            bfq_user_max_budget: 0,
            bfq_timeout: hz / 8,
            strict_guarantees: false,
            low_latency: true,
        }
    }

    /// `echo VALUE > queue/iosched/NAME`, as the key `iosched.NAME`: an unknown file
    /// is named with the files BFQ has; a value `kstrtoul()` refuses is the kernel's
    /// write error (EINVAL, ERANGE). Otherwise the value is clamped and stored.
    pub fn store(&mut self, name: &str, value: &str) -> Result<Stored, KeyError> {
        let key = format!("iosched.{name}");
        if !NAMES.contains(&name) {
            return Err(KeyError::new(
                key,
                format!("BFQ has no such file; it has: {}", NAMES.join(", ")),
            ));
        }
        // bfq_var_store()
        let v = kstrtoul(value).map_err(|errno| {
            let why = format!("`{}`: an unsigned decimal integer", value.trim_end());
            KeyError::new(key.as_str(), KernelError::new(errno, why).to_string())
        })?;
        // STORE_FUNCTION(…, 1, INT_MAX, 2): ms → ns
        let ms_to_ns = |v: u64| v.clamp(1, INT_MAX) * NSEC_PER_MSEC;
        match name {
            "fifo_expire_sync" => self.bfq_fifo_expire[1] = ms_to_ns(v),
            "fifo_expire_async" => self.bfq_fifo_expire[0] = ms_to_ns(v),
            // STORE_FUNCTION(…, 0, INT_MAX, 0)
            "back_seek_max" => self.bfq_back_max = v.min(INT_MAX) as u32,
            // STORE_FUNCTION(…, 1, INT_MAX, 0)
            "back_seek_penalty" => self.bfq_back_penalty = v.clamp(1, INT_MAX) as u32,
            // STORE_FUNCTION(…, 0, INT_MAX, 2): the u64 product truncated into a u32
            "slice_idle" => self.bfq_slice_idle = (v.min(INT_MAX) * NSEC_PER_MSEC) as u32,
            // USEC_STORE_FUNCTION(…, 0, UINT_MAX)
            "slice_idle_us" => self.bfq_slice_idle = (v.min(UINT_MAX) * NSEC_PER_USEC) as u32,
            // bfq_max_budget_store()
            "max_budget" => {
                self.bfq_user_max_budget = v.min(INT_MAX) as u32;
                return Ok(Stored::RecalcMaxBudget);
            }
            // bfq_timeout_sync_store()
            "timeout_sync" => {
                self.bfq_timeout = msecs_to_jiffies(v.clamp(1, INT_MAX) as u32, self.hz);
                if self.bfq_user_max_budget == 0 {
                    return Ok(Stored::RecalcMaxBudget);
                }
            }
            // bfq_strict_guarantees_store()
            "strict_guarantees" => {
                let on = v >= 1;
                if on && !self.strict_guarantees {
                    let eight_ms = (8 * NSEC_PER_MSEC) as u32;
                    self.bfq_slice_idle = self.bfq_slice_idle.max(eight_ms);
                }
                self.strict_guarantees = on;
            }
            // bfq_low_latency_store()
            _ => {
                let was = std::mem::replace(&mut self.low_latency, v >= 1);
                if was && !self.low_latency {
                    return Ok(Stored::EndWeightRaising);
                }
            }
        }
        Ok(Stored::Plain)
    }

    /// `cat queue/iosched/NAME` (the `SHOW_FUNCTION`s), without the newline; `None` for
    /// a file BFQ does not have.
    pub fn show(&self, name: &str) -> Option<String> {
        // bfq_var_show() prints "%u": the value cut to 32 bits
        let ms = |ns: u64| ((ns / NSEC_PER_MSEC) as u32).to_string();
        Some(match name {
            "fifo_expire_sync" => ms(self.bfq_fifo_expire[1]),
            "fifo_expire_async" => ms(self.bfq_fifo_expire[0]),
            "back_seek_max" => self.bfq_back_max.to_string(),
            "back_seek_penalty" => self.bfq_back_penalty.to_string(),
            "slice_idle" => ms(self.bfq_slice_idle.into()),
            "slice_idle_us" => (u64::from(self.bfq_slice_idle) / NSEC_PER_USEC).to_string(),
            "max_budget" => self.bfq_user_max_budget.to_string(),
            "timeout_sync" => jiffies_to_msecs(self.bfq_timeout, self.hz).to_string(),
            "strict_guarantees" => u8::from(self.strict_guarantees).to_string(),
            "low_latency" => u8::from(self.low_latency).to_string(),
            _ => return None,
        })
    }
}

/// `kstrtoul(s, 10, &v)` as `bfq_var_store()` calls it: an optional `+`, decimal
/// digits (a leading 0 is still decimal, no `0x`, no `-`), one trailing newline.
/// Overflow is found on the digits before any trailing junk is looked at
/// (`_kstrtoull()`), so `99999999999999999999x` is ERANGE, not EINVAL.
fn kstrtoul(s: &str) -> Result<u64, Errno> {
    let s = s.strip_prefix('+').unwrap_or(s);
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return Err(Errno::EINVAL);
    }
    // all digits: only overflow can fail
    let v = s[..end].parse::<u64>().map_err(|_| Errno::ERANGE)?;
    match &s[end..] {
        "" | "\n" => Ok(v),
        _ => Err(Errno::EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(t: &Tunables) -> Vec<String> {
        NAMES.iter().map(|n| t.show(n).unwrap()).collect()
    }

    #[test]
    fn defaults_read_back() {
        let t = Tunables::new(250);
        assert_eq!(
            shown(&t),
            [
                "125", "250", "16384", "2", "8", "8000", "0", "124", "0", "1"
            ]
        );
        assert_eq!(t.bfq_fifo_expire, [250_000_000, 125_000_000]);
        assert_eq!((t.bfq_slice_idle, t.bfq_timeout), (8_000_000, 31));
        // HZ/8 jiffies: 125 jiffies of 1 ms, 12 of 10 ms, 37 of 3.33 ms (rounded up)
        for (hz, ms) in [(1000, "125"), (100, "120"), (300, "124")] {
            assert_eq!(
                Tunables::new(hz).show("timeout_sync").unwrap(),
                ms,
                "HZ={hz}"
            );
        }
    }

    #[test]
    fn clamps_and_units() {
        let mut t = Tunables::new(250);
        let plain = Ok(Stored::Plain);
        assert_eq!(t.store("fifo_expire_sync", "0\n"), plain);
        assert_eq!(t.bfq_fifo_expire[1], NSEC_PER_MSEC, "at least 1 ms");
        assert_eq!(t.store("fifo_expire_async", "99999999999"), plain);
        assert_eq!(t.bfq_fifo_expire[0], INT_MAX * NSEC_PER_MSEC);
        assert_eq!(t.show("fifo_expire_async").unwrap(), "2147483647");
        t.store("back_seek_max", "0").unwrap();
        assert_eq!(t.bfq_back_max, 0);
        t.store("back_seek_max", "4294967296").unwrap();
        assert_eq!(t.bfq_back_max, i32::MAX as u32);
        t.store("back_seek_penalty", "0").unwrap();
        assert_eq!(t.bfq_back_penalty, 1);
        t.store("slice_idle", "0").unwrap();
        assert_eq!(t.bfq_slice_idle, 0);
        t.store("slice_idle", "+3").unwrap();
        assert_eq!(t.bfq_slice_idle, 3_000_000);
        assert_eq!(t.show("slice_idle_us").unwrap(), "3000");
        t.store("slice_idle_us", "2500").unwrap();
        assert_eq!(t.bfq_slice_idle, 2_500_000);
        assert_eq!(t.show("slice_idle").unwrap(), "2", "whole ms, rounded down");
        t.store("strict_guarantees", "7").unwrap();
        assert!(t.strict_guarantees);
        t.store("low_latency", "007").unwrap();
        assert!(t.low_latency, "leading zeros are decimal");
        // 1 ms is one 4 ms jiffy on HZ=250
        t.store("timeout_sync", "0").unwrap();
        assert_eq!(
            (t.bfq_timeout, t.show("timeout_sync").unwrap().as_str()),
            (1, "4")
        );
    }

    #[test]
    fn slice_idle_wraps_in_u32_ns() {
        let mut t = Tunables::new(250);
        t.store("slice_idle", "4294").unwrap();
        assert_eq!(t.bfq_slice_idle, 4_294_000_000);
        // 4 295 000 000 ns mod 2^32 = 32 704 ns
        t.store("slice_idle", "4295").unwrap();
        assert_eq!(t.bfq_slice_idle, 32_704);
        assert_eq!(
            (
                t.show("slice_idle").unwrap(),
                t.show("slice_idle_us").unwrap()
            ),
            ("0".into(), "32".into())
        );
        // µs: UINT_MAX µs is 4 294 967 295 000 ns, mod 2^32
        t.store("slice_idle_us", "99999999999").unwrap();
        assert_eq!(t.bfq_slice_idle, ((UINT_MAX * 1000) % (1 << 32)) as u32);
    }

    #[test]
    fn strict_guarantees_raises_slice_idle() {
        let mut t = Tunables::new(250);
        t.store("slice_idle", "2").unwrap();
        assert_eq!(t.store("strict_guarantees", "1"), Ok(Stored::Plain));
        assert_eq!(t.bfq_slice_idle, 8_000_000);
        // already on: a smaller slice_idle then stays; turning off does not restore
        t.store("slice_idle_us", "100").unwrap();
        t.store("strict_guarantees", "1").unwrap();
        assert_eq!(t.bfq_slice_idle, 100_000);
        t.store("strict_guarantees", "0").unwrap();
        assert_eq!(t.bfq_slice_idle, 100_000);
        // never lowered
        t.store("slice_idle", "20").unwrap();
        t.store("strict_guarantees", "1").unwrap();
        assert_eq!(t.bfq_slice_idle, 20_000_000);
    }

    #[test]
    fn max_budget_and_timeout_side_effects() {
        let mut t = Tunables::new(1000);
        let recalc = Ok(Stored::RecalcMaxBudget);
        assert_eq!(t.store("timeout_sync", "200"), recalc, "auto mode");
        assert_eq!(t.bfq_timeout, 200);
        assert_eq!(t.store("max_budget", "8192"), recalc);
        assert_eq!(t.bfq_user_max_budget, 8192);
        assert_eq!(
            t.store("timeout_sync", "100"),
            Ok(Stored::Plain),
            "user budget"
        );
        assert_eq!(t.store("max_budget", "99999999999"), recalc);
        assert_eq!(t.show("max_budget").unwrap(), "2147483647");
        assert_eq!(t.store("max_budget", "0"), recalc, "back to auto");
        assert_eq!(t.bfq_user_max_budget, 0);
        assert_eq!(t.store("timeout_sync", "100"), recalc);
    }

    #[test]
    fn low_latency_off_ends_weight_raising() {
        let mut t = Tunables::new(250);
        assert_eq!(t.store("low_latency", "1"), Ok(Stored::Plain));
        assert_eq!(t.store("low_latency", "0"), Ok(Stored::EndWeightRaising));
        assert_eq!(
            t.store("low_latency", "0"),
            Ok(Stored::Plain),
            "already off"
        );
        assert_eq!(t.store("low_latency", "2"), Ok(Stored::Plain));
        assert!(t.low_latency);
    }

    #[test]
    fn refusals_are_the_kernels() {
        let mut t = Tunables::new(250);
        let before = t.clone();
        let msg = |t: &mut Tunables, n: &str, v: &str| t.store(n, v).unwrap_err().msg;
        for v in ["-1", "0x10", "abc", "", "\n", "5 ", "5\n\n", "++5", "1.5"] {
            assert!(msg(&mut t, "slice_idle", v).contains("(EINVAL)"), "{v:?}");
        }
        assert!(msg(&mut t, "max_budget", "18446744073709551616").contains("(ERANGE)"));
        assert!(msg(&mut t, "max_budget", "99999999999999999999x").contains("(ERANGE)"));
        assert_eq!(t, before, "refused writes change nothing");
        assert_eq!(
            t.store("max_budget", "18446744073709551615\n"),
            Ok(Stored::RecalcMaxBudget)
        );
        assert_eq!(
            t.bfq_user_max_budget,
            i32::MAX as u32,
            "u64::MAX is accepted, clamped"
        );
        let e = t.store("timeout_async", "125").unwrap_err();
        assert_eq!(e.key, "iosched.timeout_async");
        assert!(e.msg.contains("it has: fifo_expire_sync,"), "{e}");
        assert_eq!(t.show("timeout_async"), None);
    }
}
