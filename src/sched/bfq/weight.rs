//! `io.bfq.weight` (non-root cgroups, `CFTYPE_NOT_ON_ROOT`): written as
//! `bfq_io_set_weight()` parses it, shown as `bfq_io_show_weight()` prints it, and the
//! weight it leaves in force on each device; plus systemd's `IOWeight=` mapping onto it.
//!
//! The idea: the kernel keeps one default per cgroup (`bfq_group_data.weight`) and,
//! per device using BFQ, a group whose `entity.dev_weight` is the per-device setting
//! (0 = none) and whose `entity.new_weight` is the weight the scheduler picks up at
//! the group's next activation or requeue. [`BfqWeight`] keeps the default, the
//! non-zero `dev_weight`s (what is shown) and the `new_weight`s that differ from the
//! default (what is in force: [`BfqWeight::effective`]).
//!
//! Moving parts of a write (after `strim()`):
//! - a plain number — `simple_strtoull(buf, &endp, 0)` reaching the end: decimal, `0x`
//!   hex, leading-`0` octal, no sign, wrapping past `u64` — or `default N`
//!   (`sscanf("default %llu")`, anything after `N` ignored) sets the default
//!   (`bfq_io_set_weight_legacy()`): ERANGE outside 1..1000 (`""` is 0), and every
//!   group of the cgroup takes it, **dropping all per-device weights**;
//! - anything else is `MAJ:MIN BODY` (`bfq_io_set_device_weight()`): the device as
//!   `blkg_conf_open_bdev()` takes it (EINVAL, ENODEV), EOPNOTSUPP on a device not
//!   using BFQ, then `%llu` (1..1000, else ERANGE; `0` is ERANGE too) or the word
//!   `default` (else EINVAL);
//! - the quirk: `MAJ:MIN default` hands `bfq_group_set_weight()` the group's current
//!   `entity.weight`, so it only clears `dev_weight` (the line disappears from the
//!   file) while the group **keeps the device weight** until the next default write.
//!   We take `entity.weight` to have caught up with `new_weight` by then (the group had
//!   I/O since the device write); a group idle since would keep its older weight.

use std::collections::BTreeMap;

use crate::blkcg::iocost_qos::open_bdev;
use crate::blkcg::ioweight::{CGROUP_WEIGHT_DFL, CGROUP_WEIGHT_MAX, CGROUP_WEIGHT_MIN};
use crate::blkcg::{DeviceTable, Errno, KernelError};

pub const BFQ_MIN_WEIGHT: u16 = 1;
pub const BFQ_MAX_WEIGHT: u16 = 1000;
/// A new cgroup's default (`bfq_cpd_alloc()`: `CGROUP_WEIGHT_DFL`).
pub const BFQ_WEIGHT_DFL: u16 = 100;

/// One cgroup's `io.bfq.weight` state, over the devices using BFQ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfqWeight {
    /// `bfq_group_data.weight`.
    pub default: u16,
    /// `entity.dev_weight` of the cgroup's groups where it is not 0, by device.
    pub per_dev: BTreeMap<(u32, u32), u16>,
    /// `entity.new_weight` of the groups a device write set since the last default
    /// write (a superset of `per_dev`: the quirk's leftovers too).
    new_weight: BTreeMap<(u32, u32), u16>,
}

impl Default for BfqWeight {
    fn default() -> Self {
        BfqWeight {
            default: BFQ_WEIGHT_DFL,
            per_dev: BTreeMap::new(),
            new_weight: BTreeMap::new(),
        }
    }
}

impl BfqWeight {
    /// The weight of the cgroup's group on `dev` (`bfqg->entity.new_weight`; a group
    /// created later starts from the default, `bfq_pd_init()`).
    pub fn effective(&self, dev: (u32, u32)) -> u16 {
        self.new_weight.get(&dev).copied().unwrap_or(self.default)
    }

    /// `echo LINE > io.bfq.weight`: mirrors `bfq_io_set_weight()`. `uses_bfq(dev)` says
    /// whether BFQ is the device's scheduler (EOPNOTSUPP otherwise, from
    /// `blkg_conf_prep()`). A refused write changes nothing.
    pub fn write(
        &mut self,
        line: &str,
        devs: &DeviceTable,
        uses_bfq: impl Fn((u32, u32)) -> bool,
    ) -> Result<(), KernelError> {
        let buf = strim(line);
        let (v, endp) = simple_strtoull(buf, 0);
        if endp.is_empty() {
            return self.set_weight_legacy(v);
        }
        if let Some(v) = buf.strip_prefix("default").and_then(sscanf_llu) {
            return self.set_weight_legacy(v);
        }
        self.set_device_weight(buf, devs, uses_bfq)
    }

    /// `bfq_io_set_weight_legacy()`: the default, applied to every group of the cgroup
    /// through `bfq_group_set_weight(bfqg, val, 0)`.
    fn set_weight_legacy(&mut self, v: u64) -> Result<(), KernelError> {
        let w = in_range(v)?;
        self.default = w;
        self.per_dev.clear();
        self.new_weight.clear();
        Ok(())
    }

    /// `bfq_io_set_device_weight()`, the group's side in `bfq_group_set_weight()`.
    fn set_device_weight(
        &mut self,
        buf: &str,
        devs: &DeviceTable,
        uses_bfq: impl Fn((u32, u32)) -> bool,
    ) -> Result<(), KernelError> {
        let (dev, body) = open_bdev(buf, devs)?;
        if !uses_bfq(dev) {
            return Err(KernelError::new(
                Errno::EOPNOTSUPP,
                format!("{}:{} does not use the bfq scheduler", dev.0, dev.1),
            ));
        }
        if let Some(v) = sscanf_llu(body) {
            if v == 0 {
                return Err(KernelError::new(
                    Errno::ERANGE,
                    "a device weight of 0 is refused; `MAJ:MIN default` removes one",
                ));
            }
            let w = in_range(v)?;
            self.per_dev.insert(dev, w);
            self.new_weight.insert(dev, w);
        } else if strim(body) == "default" {
            // new_weight := entity.weight, i.e. unchanged (see the module comment)
            self.per_dev.remove(&dev);
        } else {
            return Err(KernelError::new(
                Errno::EINVAL,
                format!("`{body}`: expected a weight 1..1000 or `default` after MAJ:MIN"),
            ));
        }
        Ok(())
    }

    /// `cat io.bfq.weight`: mirrors `bfq_io_show_weight()`. The kernel lists the
    /// devices most recently configured first (its blkg list order); we list them in
    /// device order.
    pub fn show(&self) -> String {
        let mut s = format!("default {}\n", self.default);
        for ((maj, min), w) in &self.per_dev {
            s.push_str(&format!("{maj}:{min} {w}\n"));
        }
        s
    }
}

/// systemd's `BFQ_WEIGHT()`: what `IOWeight=W` (1..10000, default 100) writes to
/// `io.bfq.weight` on cgroup v2 — `"BFQ_WEIGHT(W)\n"`, a plain number, so BFQ takes it
/// as the default and drops the cgroup's per-device weights — just before it writes
/// `io.weight` = `"default W\n"` unscaled (`IODeviceWeight=` writes `"MAJ:MIN …"` to
/// both the same way). Linear on each side of the defaults: 1..100 maps to itself,
/// 100..10000 onto 100..1000, rounded down.
pub fn systemd_bfq_weight(io_weight: u64) -> u16 {
    debug_assert!(
        io_weight <= u64::from(CGROUP_WEIGHT_MAX),
        "IOWeight= is 1..10000"
    );
    let (min, dfl, max) = (
        u64::from(CGROUP_WEIGHT_MIN),
        u64::from(CGROUP_WEIGHT_DFL),
        u64::from(CGROUP_WEIGHT_MAX),
    );
    let (bmin, bdfl, bmax) = (
        u64::from(BFQ_MIN_WEIGHT),
        u64::from(BFQ_WEIGHT_DFL),
        u64::from(BFQ_MAX_WEIGHT),
    );
    let w = if io_weight <= dfl {
        bdfl - (dfl - io_weight) * (bdfl - bmin) / (dfl - min)
    } else {
        bdfl + (io_weight - dfl) * (bmax - bdfl) / (max - dfl)
    };
    w as u16
}

/// BFQ_MIN_WEIGHT..=BFQ_MAX_WEIGHT, else ERANGE.
fn in_range(v: u64) -> Result<u16, KernelError> {
    match u16::try_from(v) {
        Ok(w) if (BFQ_MIN_WEIGHT..=BFQ_MAX_WEIGHT).contains(&w) => Ok(w),
        _ => Err(KernelError::new(
            Errno::ERANGE,
            format!("weight {v} is outside 1..1000"),
        )),
    }
}

/// The kernel's `isspace()` on ASCII (`\v` included, unlike `char::is_ascii_whitespace`).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t'..='\r')
}

/// `strim()`: whitespace off both ends.
fn strim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `simple_strtoull(s, &endp, base)` for base 0 (`0x` and a hex digit is hex, else a
/// leading 0 is octal, else decimal) or 10: the digits there are, wrapping past `u64`
/// (its overflow flag is dropped), and the rest from the first one that is not.
fn simple_strtoull(s: &str, base: u32) -> (u64, &str) {
    let b = s.as_bytes();
    let (radix, digits) = match base {
        0 if b.first() == Some(&b'0') => {
            let hex = matches!(b.get(1), Some(b'x' | b'X'))
                && b.get(2).is_some_and(u8::is_ascii_hexdigit);
            if hex { (16, &s[2..]) } else { (8, s) }
        }
        0 => (10, s),
        _ => (base, s),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let v = digits[..end].chars().fold(0u64, |v, c| {
        v.wrapping_mul(u64::from(radix))
            .wrapping_add(u64::from(c.to_digit(radix).unwrap_or(0)))
    });
    (v, &digits[end..])
}

/// `sscanf(s, "%llu", &v) == 1`: leading whitespace, then at least one decimal digit
/// (no sign); the rest is ignored.
fn sscanf_llu(s: &str) -> Option<u64> {
    let t = s.trim_start_matches(is_space);
    t.starts_with(|c: char| c.is_ascii_digit())
        .then(|| simple_strtoull(t, 10).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devs() -> DeviceTable {
        DeviceTable {
            disks: vec![(8, 0), (8, 16), (8, 32)],
        }
    }

    /// 8:0 and 8:16 use BFQ, 8:32 does not.
    fn w(x: &mut BfqWeight, line: &str) -> Result<(), KernelError> {
        x.write(line, &devs(), |d| d != (8, 32))
    }

    #[test]
    fn default_forms_clear_device_weights() {
        for (line, want) in [
            ("250", 250),
            ("default 250", 250),
            ("0xfa", 250),
            ("0XFA\n", 250),
            ("010", 8),
            ("  300 \n", 300),
            ("default250", 250),
            ("default \t 250 junk", 250),
            ("1", 1),
            ("1000", 1000),
            // simple_strtoull() wraps: 2^64 + 100
            ("18446744073709551716", 100),
        ] {
            let mut x = BfqWeight::default();
            w(&mut x, "8:0 500").unwrap();
            w(&mut x, line).unwrap();
            assert_eq!(x.default, want, "{line:?}");
            assert_eq!(x.show(), format!("default {want}\n"), "{line:?}");
            assert_eq!(x.effective((8, 0)), want, "{line:?}");
        }
    }

    #[test]
    fn device_weights_and_show() {
        let mut x = BfqWeight::default();
        assert_eq!(x.show(), "default 100\n");
        w(&mut x, "8:16 300junk\n").unwrap();
        w(&mut x, "8:0\t1000").unwrap();
        w(&mut x, "8:0 010").unwrap();
        assert_eq!(x.show(), "default 100\n8:0 10\n8:16 300\n");
        assert_eq!(
            (
                x.effective((8, 0)),
                x.effective((8, 16)),
                x.effective((8, 32))
            ),
            (10, 300, 100)
        );
        w(&mut x, "default 50").unwrap();
        assert_eq!(x.show(), "default 50\n");
        assert_eq!((x.effective((8, 0)), x.effective((8, 16))), (50, 50));
    }

    #[test]
    fn device_default_keeps_the_weight_until_a_default_write() {
        let mut x = BfqWeight::default();
        w(&mut x, "8:0 300").unwrap();
        w(&mut x, "8:0 default").unwrap();
        assert_eq!(x.show(), "default 100\n", "the line is gone");
        assert_eq!(x.effective((8, 0)), 300, "but the group keeps 300");
        w(&mut x, "8:16 default").unwrap();
        assert_eq!(x.effective((8, 16)), 100, "nothing to keep");
        w(&mut x, "100").unwrap();
        assert_eq!(x.effective((8, 0)), 100, "a default write resets it");
    }

    #[test]
    fn every_error() {
        let cases: &[(&str, Errno)] = &[
            ("", Errno::ERANGE),
            ("\n", Errno::ERANGE),
            ("0", Errno::ERANGE),
            ("default 0", Errno::ERANGE),
            ("default 0x10", Errno::ERANGE),
            ("1001", Errno::ERANGE),
            ("65636", Errno::ERANGE),
            ("default", Errno::EINVAL),
            ("-5", Errno::EINVAL),
            ("default -5", Errno::EINVAL),
            ("+5", Errno::EINVAL),
            ("abc", Errno::EINVAL),
            ("0x", Errno::EINVAL),
            ("08", Errno::EINVAL),
            ("8:0", Errno::EINVAL),
            ("8:0 \n", Errno::EINVAL),
            ("8:0 abc", Errno::EINVAL),
            ("8:0 +5", Errno::EINVAL),
            ("8:0 defaults", Errno::EINVAL),
            ("8:0 0", Errno::ERANGE),
            ("8:0 0x10", Errno::ERANGE),
            ("8:0 1001", Errno::ERANGE),
            ("8:1 100", Errno::ENODEV),
            ("9:0 100", Errno::ENODEV),
            ("8:32 300", Errno::EOPNOTSUPP),
            ("8:32 abc", Errno::EOPNOTSUPP),
        ];
        for (line, errno) in cases {
            let mut x = BfqWeight::default();
            w(&mut x, "8:0 500").unwrap();
            let before = x.clone();
            assert_eq!(w(&mut x, line).unwrap_err().errno, *errno, "{line:?}");
            assert_eq!(x, before, "{line:?} changed state");
        }
    }

    #[test]
    fn systemd_io_weight_to_bfq() {
        for (io, bfq) in [
            (1, 1),
            (50, 50),
            (100, 100),
            (500, 136),
            (5000, 545),
            (10000, 1000),
        ] {
            assert_eq!(systemd_bfq_weight(io), bfq, "IOWeight={io}");
        }
    }
}
