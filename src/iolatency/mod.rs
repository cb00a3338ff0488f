//! blk-iolatency (`io.latency`) for one device, mirroring `block/blk-iolatency.c` (6.12;
//! facts: `shared/spec/controllers-next.md` §1.1).
//!
//! Idea (as in the kernel's header comment): a cgroup with a latency target protects
//! itself against its *siblings*. Every configured group measures the latency of the
//! bios below it, from the issue stamp taken after blk-throttle
//! (`blkcg_bio_issue_init()`) to bio completion, in windows of
//! `clamp(target << 4, 100 ms, 1 s)` that end only when a completion arrives after the
//! window's length. A window that misses the target (non-rotational: 10% or more of
//! the bios at or above it, a p90 test; rotational: the window's mean above it) moves
//! its parent's *scale cookie* down; siblings notice the new cookie at their next
//! submission and halve their inflight limit `max_depth`, or grow it back by 1/16 of
//! `nr_requests` when the cookie rises; at the default cookie they are unlimited again.
//! A group already at depth 1 that is asked to go lower gets `use_delay`: its
//! REQ_META/REQ_SWAP bios (issued as root, never waiting) add `target − latency` to
//! `delay_nsec`, which its tasks sleep off on return to user space (≤ 250 ms per
//! syscall, decaying each second). A 1 s timer steps parents back up when the group
//! that scaled them down (`scale_grp`) went quiet.
//!
//! Moving parts and where they live:
//! - `grp.rs`   — the per-group arithmetic with the kernel's integer types:
//!   `latency_stat` (percentile or `blk_rq_stat`), `latency_sum_ok()`, `calc_load()`'s
//!   `lat_avg`, `scale_cookie_change()`, `scale_change()`, and the decisions of
//!   `check_scale_change()` and `iolatency_check_latencies()`;
//! - `delay.rs` — blk-cgroup's per-blkg delay (`blkcg_use_delay()`, `blkcg_add_delay()`,
//!   `blkcg_scale_delay()`, `blkcg_maybe_throttle_blkg()`);
//! - `ctl.rs`   — [`BlkIolatency`], the running controller: lazy creation on the first
//!   `io.latency` write, the `enabled` switch, the rq-qos hooks (`throttle` walking every
//!   ancestor with its `rq_wait` queue, `done_bio`), the 1 s timer on the jiffies timer
//!   wheel, io.stat text, and the per-window rows for the timeline;
//! - `rqos.rs`  — its place in the stack (`crate::stack`): the rq-qos entry
//!   `RQ_QOS_LATENCY`, its interface file, io.stat keys, rows, timer event, and its
//!   line in the policy registry;
//! - this file  — [`IolatencyBehaviour`]: what changed between kernel versions, as named
//!   switches grouped by version ([`behaviour_for`], [`behaviour_table`]).
//!
//! The interface file is parsed and printed by `crate::blkcg::iolatency`.

pub mod ctl;
pub mod delay;
pub mod grp;
pub mod rqos;
pub mod timeline;

pub use ctl::{
    BlkIolatency, Bypass, DoneBio, IolatRow, IolatencyConfig, Released, TickRow, WindowRow,
};

use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
use std::fmt;

/// The first version with blk-iolatency (d70675121546, Josef Bacik, v4.19).
pub const FIRST: (u32, u32) = (4, 19);

/// Whether a bio that completed with `BLK_STS_AGAIN` (a REQ_NOWAIT bio that found no
/// request) is counted in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StsAgain {
    /// ≤ 5.2: recorded like any completion.
    Count,
    /// 5.3+: "blk-iolatency: fix STS_AGAIN handling" (Dennis Zhou, b21bcb790370) —
    /// the bio was never submitted, so its latency is not recorded.
    Skip,
}

/// How the `enabled` switch follows the number of groups with a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnableSwitch {
    /// ≤ 5.18: throttle and done_bio each test the live count, so a bio that passed
    /// throttle while enabled and completes after the last target is removed is never
    /// decremented (and the reverse underflows `inflight`: an IO hang).
    Live,
    /// 5.19+: "blk-iolatency: Fix inflight count imbalances and IO hangs on offline"
    /// (Tejun Heo, 8a177a36da6c) flips `enabled` with the queue frozen, so every bio
    /// is decremented exactly when it was counted. We keep that balance per bio; the
    /// freeze's own stall is not modelled.
    Frozen,
}

impl Named for StsAgain {
    const NAMES: &'static [(&'static str, Self)] = &[("count", Self::Count), ("skip", Self::Skip)];
}

impl Named for EnableSwitch {
    const NAMES: &'static [(&'static str, Self)] =
        &[("live", Self::Live), ("frozen", Self::Frozen)];
}

/// The switches that differ between kernel versions.
///
/// | key | values | meaning |
/// |---|---|---|
/// | `iolatency.sts_again` | `count`, `skip` | BLK_STS_AGAIN bios recorded (≤5.2) or not (5.3, b21bcb790370) |
/// | `iolatency.off_clears_delay` | `true`, `false` | `target=max` clears `use_delay` (5.3, 5de0073fcd50; stable 4.19.61, 5.1.20, 5.2.3) |
/// | `iolatency.enable` | `live`, `frozen` | the enable switch unsynchronised (≤5.18) or flipped with the queue frozen (5.19, 8a177a36da6c) |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IolatencyBehaviour {
    pub sts_again: StsAgain,
    pub off_clears_delay: bool,
    pub enable: EnableSwitch,
}

/// In scenario syntax: `iolatency.sts_again=skip iolatency.off_clears_delay=true ...`.
impl fmt::Display for IolatencyBehaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "iolatency.sts_again={} iolatency.off_clears_delay={} iolatency.enable={}",
            self.sts_again.name(),
            self.off_clears_delay.name(),
            self.enable.name()
        )
    }
}

const PRESETS: &[&str] = &["4.19", "5.3", "5.19", "newest"];

/// Stable series that carry 5de0073fcd50 (clear use_delay on `target=max`): (series,
/// first patch level), from the stable review mails of 2019-07-24.
const STABLE_CLEAR_DELAY: &[((u32, u32), u32)] = &[((4, 19), 61), ((5, 1), 20), ((5, 2), 3)];

/// The preset versions, oldest first.
pub fn presets() -> &'static [&'static str] {
    PRESETS
}

/// Whether kernel `version` has blk-iolatency at all (`io.latency` exists from 4.19).
pub fn available(version: &KernelVersion) -> bool {
    !version.before(FIRST.0, FIRST.1)
}

/// The behaviour of kernel `version`, then `overrides` (`("iolatency.enable", "live")`,
/// ...; keys of other controllers are left alone) applied in order.
pub fn behaviour_for(
    version: &str,
    overrides: &[(String, String)],
) -> Result<IolatencyBehaviour, KeyError> {
    let v = KernelVersion::parse(version).map_err(|m| KeyError::new("kernel.version", m))?;
    let series = (v.major, v.minor);
    let mut b = IolatencyBehaviour {
        sts_again: if v.before(5, 3) {
            StsAgain::Count
        } else {
            StsAgain::Skip
        },
        off_clears_delay: !v.before(5, 3)
            || STABLE_CLEAR_DELAY
                .iter()
                .any(|&(s, first)| s == series && v.patch >= first),
        enable: if v.before(5, 19) {
            EnableSwitch::Live
        } else {
            EnableSwitch::Frozen
        },
    };
    for (key, val) in overrides {
        match key.as_str() {
            "iolatency.sts_again" => b.sts_again = Named::parse(key, val)?,
            "iolatency.off_clears_delay" => b.off_clears_delay = Named::parse(key, val)?,
            "iolatency.enable" => b.enable = Named::parse(key, val)?,
            k if k.starts_with("iolatency.") => {
                return Err(KeyError::new(
                    key.clone(),
                    "unknown iolatency behaviour (accepted: iolatency.sts_again, \
                     iolatency.off_clears_delay, iolatency.enable)",
                ));
            }
            _ => {}
        }
    }
    Ok(b)
}

/// Markdown table of the presets (versions × behaviours) for the README and `check`.
pub fn behaviour_table() -> String {
    let mut s =
        String::from("| version | sts_again | off_clears_delay | enable |\n|---|---|---|---|\n");
    for v in PRESETS {
        if let Ok(b) = behaviour_for(v, &[]) {
            s += &format!(
                "| {v} | `{}` | {} | `{}` |\n",
                b.sts_again.name(),
                b.off_clears_delay,
                b.enable.name()
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_follow_the_history() {
        let b = |v: &str| behaviour_for(v, &[]).unwrap();
        assert_eq!(b("4.19").sts_again, StsAgain::Count);
        assert_eq!(b("5.3").sts_again, StsAgain::Skip);
        assert!(!b("4.19").off_clears_delay);
        assert!(b("4.19.61").off_clears_delay, "stable backport");
        assert!(!b("5.2.2").off_clears_delay);
        assert!(b("5.2.3").off_clears_delay);
        assert!(b("5.3").off_clears_delay);
        assert_eq!(b("5.18").enable, EnableSwitch::Live);
        assert_eq!(b("5.19").enable, EnableSwitch::Frozen);
        assert_eq!(b("newest").enable, EnableSwitch::Frozen);
        assert!(!available(&KernelVersion::parse("4.18").unwrap()));
        assert!(available(&KernelVersion::parse("4.19").unwrap()));
    }

    #[test]
    fn overrides_and_errors() {
        let o = vec![("iolatency.enable".to_string(), "live".to_string())];
        assert_eq!(
            behaviour_for("6.12", &o).unwrap().enable,
            EnableSwitch::Live
        );
        let bad = vec![("iolatency.enable".to_string(), "x".to_string())];
        assert!(
            behaviour_for("6.12", &bad)
                .unwrap_err()
                .msg
                .contains("frozen")
        );
        let unknown = vec![("iolatency.nope".to_string(), "x".to_string())];
        assert_eq!(
            behaviour_for("6.12", &unknown).unwrap_err().key,
            "iolatency.nope"
        );
        // other controllers' keys pass through
        let other = vec![("throttle.trim".to_string(), "v4.x".to_string())];
        assert!(behaviour_for("6.12", &other).is_ok());
        assert!(behaviour_table().contains("| 5.19 | `skip` | true | `frozen` |"));
        assert_eq!(
            behaviour_for("4.19", &[]).unwrap().to_string(),
            "iolatency.sts_again=count iolatency.off_clears_delay=false iolatency.enable=live"
        );
    }
}
