//! `io.weight` (non-root cgroups): parsing and printing as `ioc_weight_write()` and
//! `ioc_weight_show()` do.
//!
//! A write without `:` sets the cgroup default (`N` or `default N`); `MAJ:MIN N` sets a
//! per-device override and `MAJ:MIN default` removes it. Weights are 1..10000
//! (`CGROUP_WEIGHT_MIN/MAX`). [`Weights`] keeps the default and the overrides in a
//! BTreeMap so the show output is in device order.

use std::collections::BTreeMap;

use super::iocost_qos::open_bdev;
use super::{DeviceTable, Errno, KernelError};

pub const CGROUP_WEIGHT_MIN: u32 = 1;
pub const CGROUP_WEIGHT_DFL: u32 = 100;
pub const CGROUP_WEIGHT_MAX: u32 = 10_000;

/// One cgroup's `io.weight` state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weights {
    pub default: u32,
    pub per_dev: BTreeMap<(u32, u32), u32>,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            default: CGROUP_WEIGHT_DFL,
            per_dev: BTreeMap::new(),
        }
    }
}

/// Kernel `sscanf("%u")`: optional leading whitespace, then digits; the rest is ignored.
fn scan_u32(s: &str) -> Option<u32> {
    let t = s.trim_start();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    t[..end].parse().ok()
}

fn check_range(v: u32) -> Result<u32, KernelError> {
    if (CGROUP_WEIGHT_MIN..=CGROUP_WEIGHT_MAX).contains(&v) {
        Ok(v)
    } else {
        Err(KernelError::new(
            Errno::EINVAL,
            format!("weight {v} is outside 1..10000"),
        ))
    }
}

impl Weights {
    /// Effective weight on a device: the override if set, else the default.
    pub fn effective(&self, dev: (u32, u32)) -> u32 {
        self.per_dev.get(&dev).copied().unwrap_or(self.default)
    }

    /// Mirrors `ioc_weight_write()`. `has_ioc(dev)` says whether iocost is active on the
    /// device (EOPNOTSUPP otherwise, from `blkg_conf_prep()`).
    pub fn write(
        &mut self,
        input: &str,
        devs: &DeviceTable,
        has_ioc: impl Fn((u32, u32)) -> bool,
    ) -> Result<(), KernelError> {
        let bad = || {
            KernelError::new(
                Errno::EINVAL,
                format!(
                    "`{}`: expected `N`, `default N`, `MAJ:MIN N` or `MAJ:MIN default`",
                    input.trim_end()
                ),
            )
        };
        if !input.contains(':') {
            let v = match input.trim_start().strip_prefix("default") {
                Some(rest) => scan_u32(rest),
                None => scan_u32(input),
            }
            .ok_or_else(bad)?;
            self.default = check_range(v)?;
            return Ok(());
        }
        let (dev, body) = open_bdev(input, devs)?;
        if !has_ioc(dev) {
            return Err(KernelError::new(
                Errno::EOPNOTSUPP,
                format!(
                    "iocost is not enabled on {}:{} (write io.cost.qos first)",
                    dev.0, dev.1
                ),
            ));
        }
        if body.starts_with("default") {
            self.per_dev.remove(&dev);
        } else {
            let v = check_range(scan_u32(body).ok_or_else(bad)?)?;
            self.per_dev.insert(dev, v);
        }
        Ok(())
    }

    /// Mirrors `ioc_weight_show()`.
    pub fn show(&self) -> String {
        let mut s = format!("default {}\n", self.default);
        for ((maj, min), w) in &self.per_dev {
            s.push_str(&format!("{maj}:{min} {w}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devs() -> DeviceTable {
        DeviceTable {
            disks: vec![(8, 0), (8, 16)],
        }
    }

    fn w(input: &str, w: &mut Weights) -> Result<(), KernelError> {
        w.write(input, &devs(), |d| d == (8, 0))
    }

    #[test]
    fn forms_and_show() {
        let mut x = Weights::default();
        w("300", &mut x).unwrap();
        assert_eq!(x.default, 300);
        w("default 50\n", &mut x).unwrap();
        w("8:0 1000", &mut x).unwrap();
        assert_eq!(x.show(), "default 50\n8:0 1000\n");
        assert_eq!((x.effective((8, 0)), x.effective((8, 16))), (1000, 50));
        w("8:0 default", &mut x).unwrap();
        assert_eq!(x.show(), "default 50\n");
    }

    #[test]
    fn every_error() {
        let cases: &[(&str, Errno)] = &[
            ("0", Errno::EINVAL),
            ("10001", Errno::EINVAL),
            ("abc", Errno::EINVAL),
            ("default", Errno::EINVAL),
            ("8:0 0", Errno::EINVAL),
            ("8:0 x", Errno::EINVAL),
            ("8:0", Errno::EINVAL),
            ("8:1 100", Errno::ENODEV),
            ("8:16 100", Errno::EOPNOTSUPP),
        ];
        for (input, errno) in cases {
            let mut x = Weights::default();
            assert_eq!(w(input, &mut x).unwrap_err().errno, *errno, "{input}");
            assert_eq!(x, Weights::default(), "{input} changed state");
        }
    }
}
