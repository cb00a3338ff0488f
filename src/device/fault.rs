//! Injected faults: null_blk's `badblocks` list (configfs), shared by the device and
//! the scenario parser that checks the lines a scenario writes, and the kernel's fault
//! attributes (`timeout_inject/`).
//!
//! Design
//! ------
//! The configfs attribute takes one line per write, `+START-END` to mark sectors bad
//! and `-START-END` to clear them (512-byte sectors, END included; numbers as
//! `kstrtoull(.., 0)` reads them: decimal, `0x` hex, leading-`0` octal), as
//! `nullb_device_badblocks_store()` parses it. [`Badblocks`] keeps the bad sectors as
//! disjoint ranges; a request fails with EIO when it touches any of them
//! (`badblocks_check()` in `null_handle_badblocks()`). Not modelled: the kernel
//! table's limit of 512 entries of at most 512 sectors each (a longer list would be
//! refused there).
//!
//! [`FaultAttr`] is `struct fault_attr` as its configfs group shows it (`probability`,
//! `interval`, `times`, `space`), deciding with `should_fail()`'s arithmetic and the
//! seeded PRNG for the percentage; the task filter and stack-trace filters are not
//! modelled.

use std::collections::BTreeMap;

use crate::blkcg::{Errno, KernelError};
use crate::error::KeyError;
use crate::sim::SimRng;

/// One `echo LINE > badblocks`: mark (`+`) or clear (`-`) sectors `start..=end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadblocksWrite {
    pub set: bool,
    pub start: u64,
    pub end: u64,
}

/// `kstrtoull(s, 0, ..)`: decimal, `0x` hex or leading-`0` octal.
fn kstrtoull(s: &str) -> Option<u64> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None if s.len() > 1 && s.starts_with('0') => (&s[1..], 8),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

impl BadblocksWrite {
    /// mirrors nullb_device_badblocks_store()'s parsing: EINVAL for anything else.
    pub fn parse(line: &str) -> Result<BadblocksWrite, KernelError> {
        let bad = |why: &str| {
            KernelError::new(
                Errno::EINVAL,
                format!(
                    "`{line}`: {why}; accepted: +START-END (mark bad) or -START-END (clear), in 512-byte sectors, END included"
                ),
            )
        };
        let buf = line.trim();
        let set = match buf.chars().next() {
            Some('+') => true,
            Some('-') => false,
            _ => return Err(bad("the line must start with + or -")),
        };
        let (a, b) = buf[1..]
            .split_once('-')
            .ok_or_else(|| bad("no `-` between START and END"))?;
        let start = kstrtoull(a).ok_or_else(|| bad("START is not a number"))?;
        let end = kstrtoull(b).ok_or_else(|| bad("END is not a number"))?;
        if start > end {
            return Err(bad("START is after END"));
        }
        Ok(BadblocksWrite { set, start, end })
    }
}

/// The bad sectors of a device: disjoint ranges `start -> end` (end excluded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Badblocks {
    ranges: BTreeMap<u64, u64>,
}

impl Badblocks {
    /// Apply one configfs write (badblocks_set() / badblocks_clear()).
    pub fn write(&mut self, w: BadblocksWrite) {
        let (mut lo, mut hi) = (w.start, w.end.saturating_add(1));
        // take out every range touching [lo, hi); a set merges them, a clear keeps
        // what lies outside
        let touching: Vec<(u64, u64)> = self
            .ranges
            .range(..=hi)
            .filter(|&(_, &e)| e >= lo)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.ranges.remove(&s);
            if w.set {
                lo = lo.min(s);
                hi = hi.max(e);
            } else {
                if s < lo {
                    self.ranges.insert(s, lo);
                }
                if e > hi {
                    self.ranges.insert(hi, e);
                }
            }
        }
        if w.set {
            self.ranges.insert(lo, hi);
        }
    }

    /// badblocks_check(): whether `sectors` sectors from `sector` touch a bad one.
    pub fn check(&self, sector: u64, sectors: u64) -> bool {
        let end = sector.saturating_add(sectors);
        self.ranges
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > sector)
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// A fault attribute (`struct fault_attr`, lib/fault-inject.c).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultAttr {
    /// Percent of eligible calls that fail (0 = never).
    pub probability: u64,
    /// Only every `interval`-th eligible call may fail.
    pub interval: u64,
    /// Failures left; -1 = no limit.
    pub times: i64,
    /// Size to let through before any failure.
    pub space: i64,
    count: u64,
}

impl Default for FaultAttr {
    /// FAULT_ATTR_INITIALIZER: interval 1, times 1, nothing fails.
    fn default() -> Self {
        FaultAttr {
            probability: 0,
            interval: 1,
            times: 1,
            space: 0,
            count: 0,
        }
    }
}

impl FaultAttr {
    /// The attributes of configfs group `group` from a scenario table
    /// (`[device.timeout_inject]`), as `echo N > .../timeout_inject/ATTR` sets them.
    /// Returns the attribute and its resolved `group.attr=value` pairs.
    pub fn from_table(
        group: &str,
        t: &toml::Table,
    ) -> Result<(FaultAttr, Vec<(String, String)>), KeyError> {
        let key = format!("device.{group}");
        let mut a = FaultAttr::default();
        for (k, v) in t {
            let bad = |range: &str| {
                KeyError::new(
                    format!("{key}.{k}"),
                    format!("`{v}` is not accepted: expected an integer {range}"),
                )
            };
            let Some(i) = v.as_integer() else {
                return Err(bad("(probability 0-100, interval, times, space)"));
            };
            match k.as_str() {
                "probability" if (0..=100).contains(&i) => a.probability = i as u64,
                "probability" => return Err(bad("in [0, 100] (percent)")),
                "interval" if i >= 0 => a.interval = i as u64,
                "interval" => return Err(bad(">= 0")),
                "times" if i >= -1 && i <= i64::from(i32::MAX) => a.times = i,
                "times" => return Err(bad("in [-1, 2147483647] (-1: no limit)")),
                "space" if (0..=i64::from(i32::MAX)).contains(&i) => a.space = i,
                "space" => return Err(bad("in [0, 2147483647]")),
                _ => {
                    return Err(KeyError::new(
                        format!("{key}.{k}"),
                        "unknown fault attribute; accepted: probability, interval, times, space",
                    ));
                }
            }
        }
        let resolved = [
            ("probability", a.probability as i64),
            ("interval", a.interval as i64),
            ("times", a.times),
            ("space", a.space),
        ]
        .iter()
        .map(|(n, v)| (format!("{group}.{n}"), v.to_string()))
        .collect();
        Ok((a, resolved))
    }

    /// mirrors should_fail(attr, size): whether this call fails.
    pub fn should_fail(&mut self, size: i64, rng: &mut SimRng) -> bool {
        if self.probability == 0 || self.times == 0 {
            return false;
        }
        if self.space > size {
            self.space -= size;
            return false;
        }
        if self.interval > 1 {
            self.count += 1;
            if !self.count.is_multiple_of(self.interval) {
                return false;
            }
        }
        if self.probability <= rng.below(100) {
            return false;
        }
        if self.times > 0 {
            self.times -= 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_attr_interval_times_space() {
        let t: toml::Table = "probability = 100\ninterval = 3\ntimes = 2\nspace = 2"
            .parse()
            .unwrap();
        let (mut a, resolved) = FaultAttr::from_table("timeout_inject", &t).unwrap();
        assert_eq!(resolved[2], ("timeout_inject.times".into(), "2".into()));
        let mut rng = SimRng::new(1, "t");
        let fails: Vec<bool> = (0..12).map(|_| a.should_fail(1, &mut rng)).collect();
        // the first call is let through on `space`, then every third fails, twice
        let at: Vec<usize> = (0..12).filter(|&i| fails[i]).collect();
        assert_eq!(at, [3, 6]);
        // the defaults inject nothing; a bad value names the attribute
        assert!(!FaultAttr::default().should_fail(1, &mut rng));
        let t: toml::Table = "probability = 101".parse().unwrap();
        let e = FaultAttr::from_table("timeout_inject", &t).unwrap_err();
        assert_eq!(e.key, "device.timeout_inject.probability");
    }

    fn w(line: &str) -> BadblocksWrite {
        BadblocksWrite::parse(line).unwrap()
    }

    #[test]
    fn configfs_syntax() {
        assert_eq!(
            w("+2048-4095\n"),
            BadblocksWrite {
                set: true,
                start: 2048,
                end: 4095
            }
        );
        assert_eq!(w("-0x10-0x1f").start, 16);
        assert_eq!(w("+010-010").end, 8);
        for bad in ["2048-4095", "+2048", "+a-b", "+10-5", "", "+-5"] {
            let e = BadblocksWrite::parse(bad).unwrap_err();
            assert_eq!(e.errno, Errno::EINVAL, "{bad}");
        }
    }

    #[test]
    fn set_merge_clear_and_check() {
        let mut b = Badblocks::default();
        b.write(w("+100-199"));
        b.write(w("+200-299")); // adjacent: merged
        assert!(b.check(299, 1) && b.check(50, 51) && !b.check(50, 50));
        assert!(!b.check(300, 8));
        b.write(w("-150-249"));
        assert!(b.check(149, 1) && !b.check(150, 100) && b.check(250, 1));
        b.write(w("-0-1000"));
        assert!(b.is_empty());
    }
}
