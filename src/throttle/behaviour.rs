//! Kernel versions of blk-throttle as named behaviour switches.
//!
//! | key | values | meaning |
//! |---|---|---|
//! | `throttle.iops_wait` | `v4.18`, `slice-end`, `slice-end+1`, `min-one-io` | iops wait formula: ideal (n+1)/iops + 1 jiffy (≤4.18); next slice boundary (4.19, 991f61fe7e1d); boundary of roundup(elapsed+1) (5.3, 3a10f999ffd4); that but ≥ HZ/iops+1 (6.11, 1beabab88ece) |
//! | `throttle.slice` | `hz/10`, `ssd-hz/50`, `<n>ms` | slice length: 100 ms; 20 ms on non-rotational disks; explicit |
//! | `throttle.trim` | `v4.x`, `keep-one-slice` | trim all finished slices (≤6.14) or keep one (6.15, 29cb95593430) |
//! | `throttle.carryover` | `none`, `carryover`, `direct` | io.max write while queued: forget waited budget (≤6.0), carryover fields (6.1–6.14), signed disp counters (6.15+) |
//! | `throttle.queue` | `fifo`, `split-bps-iops` | one FIFO per direction (≤6.15) or the 6.16 two-stage queue |
//! | `throttle.reentry` | `skip`, `iops-only` | re-entering (split) bios: never looked at again (≤5.17) or iops-only (5.18+) |
//! | `throttle.meta_bypass` | `true`, `false` | REQ_META/REQ_SWAP pass and are charged as debt (6.12+) |
//! | `throttle.min_limit` | `1`, `2` | smallest `io.max` value `tg_set_limit()` takes: 1, or 2 in 5.10–6.12 (Baolin Wang, "Fix IO hang for a corner case", 5b7048b89745: 1 cannot be scaled up by io.low's `throtl_adjusted_limit()`, so it is EINVAL; Xiuhong Wang's revert, 6.13, takes 1 again now that io.low is gone) |

use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IopsWait {
    V418,
    SliceEnd,
    SliceEndPlus1,
    MinOneIo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceLen {
    /// `HZ/10` for every disk.
    Hz10,
    /// `HZ/50` on non-rotational disks, `HZ/10` on rotational ones.
    SsdHz50,
    /// Explicit milliseconds (`throttle_sample_time`).
    Ms(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    V4,
    KeepOneSlice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carryover {
    None,
    Carryover,
    Direct,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMode {
    Fifo,
    SplitBpsIops,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reentry {
    Skip,
    IopsOnly,
}

/// The smallest limit an `io.max` key takes (`max` aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinLimit {
    One,
    Two,
}

impl MinLimit {
    pub fn value(self) -> u64 {
        match self {
            MinLimit::One => 1,
            MinLimit::Two => 2,
        }
    }
}

impl Named for IopsWait {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("v4.18", Self::V418),
        ("slice-end", Self::SliceEnd),
        ("slice-end+1", Self::SliceEndPlus1),
        ("min-one-io", Self::MinOneIo),
    ];
}

impl Named for Trim {
    const NAMES: &'static [(&'static str, Self)] =
        &[("v4.x", Self::V4), ("keep-one-slice", Self::KeepOneSlice)];
}

impl Named for Carryover {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("none", Self::None),
        ("carryover", Self::Carryover),
        ("direct", Self::Direct),
    ];
}

impl Named for QueueMode {
    const NAMES: &'static [(&'static str, Self)] =
        &[("fifo", Self::Fifo), ("split-bps-iops", Self::SplitBpsIops)];
}

impl Named for Reentry {
    const NAMES: &'static [(&'static str, Self)] =
        &[("skip", Self::Skip), ("iops-only", Self::IopsOnly)];
}

impl Named for MinLimit {
    const NAMES: &'static [(&'static str, Self)] = &[("1", Self::One), ("2", Self::Two)];
}

impl Named for bool {
    const NAMES: &'static [(&'static str, Self)] = &[("true", true), ("false", false)];
}

impl fmt::Display for SliceLen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SliceLen::Hz10 => f.write_str("hz/10"),
            SliceLen::SsdHz50 => f.write_str("ssd-hz/50"),
            SliceLen::Ms(ms) => write!(f, "{ms}ms"),
        }
    }
}

/// The switches that differ between kernel versions (table in the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleBehaviour {
    pub iops_wait: IopsWait,
    pub slice: SliceLen,
    pub trim: Trim,
    pub carryover: Carryover,
    pub queue: QueueMode,
    pub reentry: Reentry,
    pub meta_bypass: bool,
    pub min_limit: MinLimit,
}

/// In scenario syntax: `throttle.iops_wait=min-one-io throttle.slice=hz/10 ...`.
impl fmt::Display for ThrottleBehaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "throttle.iops_wait={} throttle.slice={} throttle.trim={} throttle.carryover={} \
             throttle.queue={} throttle.reentry={} throttle.meta_bypass={} throttle.min_limit={}",
            self.iops_wait.name(),
            self.slice,
            self.trim.name(),
            self.carryover.name(),
            self.queue.name(),
            self.reentry.name(),
            self.meta_bypass.name(),
            self.min_limit.name()
        )
    }
}

impl Default for ThrottleBehaviour {
    fn default() -> Self {
        behaviour_for("newest", false, &[]).unwrap_or(ThrottleBehaviour {
            iops_wait: IopsWait::MinOneIo,
            slice: SliceLen::Hz10,
            trim: Trim::KeepOneSlice,
            carryover: Carryover::Direct,
            queue: QueueMode::SplitBpsIops,
            reentry: Reentry::IopsOnly,
            meta_bypass: true,
            min_limit: MinLimit::One,
        })
    }
}

const PRESETS: &[&str] = &[
    "4.18", "4.19", "5.3", "5.10", "5.18", "6.1", "6.9", "6.10", "6.11", "6.12", "6.13", "6.15",
    "6.16", "6.19", "newest",
];

/// The preset versions, oldest first (the README's table has one row per change).
pub fn presets() -> &'static [&'static str] {
    PRESETS
}

/// Stable series that carry the 6.19 slice fix (f76581f9f1d2, "Fix throttle slice
/// time for SSDs"): (series, first patch level known to have it). Debian's 6.12.95
/// was measured with the 100 ms slice (spec), and `validate` on 6.12.117 agrees; the
/// exact first 6.12.y with the backport is not known here.
const STABLE_SLICE_FIX: &[((u32, u32), u32)] = &[((6, 12), 95)];

/// The behaviour of kernel `version` (`"4.18"`, `"6.10"`, ..., `"newest"`), with
/// `throttling_low` = `CONFIG_BLK_DEV_THROTTLING_LOW` (decides the SSD slice in 4.12–6.8),
/// then `overrides` (`("throttle.trim", "v4.x")`, ...) applied in order.
pub fn behaviour_for(
    version: &str,
    throttling_low: bool,
    overrides: &[(String, String)],
) -> Result<ThrottleBehaviour, KeyError> {
    let kv = KernelVersion::parse(version).map_err(|m| {
        KeyError::new(
            "kernel.version",
            format!("{m}; presets: {}", PRESETS.join(", ")),
        )
    })?;
    // a release candidate behaves as its series here: no throttle change is known to
    // have landed late in an rc
    let (v, patch) = ((kv.major, kv.minor), kv.patch);
    let slice_fixed = (6, 19) <= v
        || STABLE_SLICE_FIX
            .iter()
            .any(|&(series, first)| series == v && patch >= first);
    let mut b = ThrottleBehaviour {
        iops_wait: if v < (4, 19) {
            IopsWait::V418
        } else if v < (5, 3) {
            IopsWait::SliceEnd
        } else if v < (6, 11) {
            IopsWait::SliceEndPlus1
        } else {
            IopsWait::MinOneIo
        },
        slice: if v < (4, 12) || slice_fixed || (v < (6, 9) && !throttling_low) {
            SliceLen::Hz10
        } else {
            SliceLen::SsdHz50
        },
        trim: if v < (6, 15) {
            Trim::V4
        } else {
            Trim::KeepOneSlice
        },
        carryover: if v < (6, 1) {
            Carryover::None
        } else if v < (6, 15) {
            Carryover::Carryover
        } else {
            Carryover::Direct
        },
        queue: if v < (6, 16) {
            QueueMode::Fifo
        } else {
            QueueMode::SplitBpsIops
        },
        reentry: if v < (5, 18) {
            Reentry::Skip
        } else {
            Reentry::IopsOnly
        },
        meta_bypass: v >= (6, 12),
        min_limit: if ((5, 10)..(6, 13)).contains(&v) {
            MinLimit::Two
        } else {
            MinLimit::One
        },
    };
    for (key, val) in overrides {
        let val = val.as_str();
        match key.as_str() {
            "throttle.iops_wait" => b.iops_wait = Named::parse(key, val)?,
            "throttle.slice" => {
                b.slice = match val {
                    "hz/10" => SliceLen::Hz10,
                    "ssd-hz/50" => SliceLen::SsdHz50,
                    _ => match val.strip_suffix("ms").and_then(|n| n.parse::<u32>().ok()) {
                        Some(ms @ 1..=1000) => SliceLen::Ms(ms),
                        _ => {
                            return Err(KeyError::new(
                                key.as_str(),
                                format!("`{val}`: accepted: hz/10, ssd-hz/50, <1..1000>ms"),
                            ));
                        }
                    },
                }
            }
            "throttle.trim" => b.trim = Named::parse(key, val)?,
            "throttle.carryover" => b.carryover = Named::parse(key, val)?,
            "throttle.queue" => b.queue = Named::parse(key, val)?,
            "throttle.reentry" => b.reentry = Named::parse(key, val)?,
            "throttle.meta_bypass" => b.meta_bypass = Named::parse(key, val)?,
            "throttle.min_limit" => b.min_limit = Named::parse(key, val)?,
            _ => {
                return Err(KeyError::new(
                    key.as_str(),
                    "unknown key; accepted: throttle.iops_wait, throttle.slice, throttle.trim, \
                     throttle.carryover, throttle.queue, throttle.reentry, throttle.meta_bypass, \
                     throttle.min_limit",
                ));
            }
        }
    }
    Ok(b)
}

/// Markdown table of the presets (versions × behaviours) for the README.
pub fn behaviour_table() -> String {
    let mut s = String::from(
        "| version | iops_wait | slice (THROTTLING_LOW=n / y) | trim | carryover | queue | reentry | meta_bypass | min_limit |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for v in PRESETS {
        let (Ok(n), Ok(y)) = (behaviour_for(v, false, &[]), behaviour_for(v, true, &[])) else {
            continue;
        };
        s += &format!(
            "| {v} | `{}` | `{}` / `{}` | `{}` | `{}` | `{}` | `{}` | {} | `{}` |\n",
            n.iops_wait.name(),
            n.slice,
            y.slice,
            n.trim.name(),
            n.carryover.name(),
            n.queue.name(),
            n.reentry.name(),
            n.meta_bypass,
            n.min_limit.name()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_follow_the_version_map() {
        let b = |v: &str, low: bool| behaviour_for(v, low, &[]).unwrap();
        assert_eq!(b("4.18", true).iops_wait, IopsWait::V418);
        assert_eq!(b("4.19", true).iops_wait, IopsWait::SliceEnd);
        assert_eq!(b("4.19", true).slice, SliceLen::SsdHz50);
        assert_eq!(b("4.19", false).slice, SliceLen::Hz10);
        assert_eq!(b("6.10", false).slice, SliceLen::SsdHz50);
        assert_eq!(b("6.10", false).queue, QueueMode::Fifo);
        assert_eq!(b("6.16", false).queue, QueueMode::SplitBpsIops);
        assert_eq!(b("6.19", true).slice, SliceLen::Hz10);
        // stable releases: 6.12.0 has the 20 ms SSD slice, Debian's 6.12.117 the fix
        assert_eq!(b("6.12", false).slice, SliceLen::SsdHz50);
        assert_eq!(b("6.12.117", false).slice, SliceLen::Hz10);
        assert_eq!(b("6.1.192", false).slice, SliceLen::Hz10);
        assert_eq!(b("5.17", false).reentry, Reentry::Skip);
        assert_eq!(b("6.11", false).iops_wait, IopsWait::MinOneIo);
        assert!(b("6.12", false).meta_bypass && !b("6.11", false).meta_bypass);
        assert_eq!(b("6.15", false).carryover, Carryover::Direct);
        assert_eq!(b("6.1", false).carryover, Carryover::Carryover);
        // 5b7048b89745 (5.10) refused `=1`, its revert (6.13) takes it again
        assert_eq!(b("5.9", false).min_limit, MinLimit::One);
        assert_eq!(b("5.10", false).min_limit, MinLimit::Two);
        assert_eq!(b("6.12.117", false).min_limit, MinLimit::Two);
        assert_eq!(b("6.13", false).min_limit, MinLimit::One);
    }

    #[test]
    fn overrides_and_errors() {
        let o = vec![("throttle.slice".to_string(), "50ms".to_string())];
        assert_eq!(
            behaviour_for("6.1", false, &o).unwrap().slice,
            SliceLen::Ms(50)
        );
        let e = behaviour_for("6.1", false, &[("throttle.trim".into(), "x".into())]);
        assert!(e.unwrap_err().msg.contains("keep-one-slice"));
        assert_eq!(
            behaviour_for("6.1", false, &[("throttle.nope".into(), "x".into())])
                .unwrap_err()
                .key,
            "throttle.nope"
        );
        assert!(behaviour_for("six", false, &[]).is_err());
        assert!(behaviour_table().contains("| 4.19 | `slice-end` |"));
    }
}
