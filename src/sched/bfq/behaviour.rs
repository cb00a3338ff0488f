//! BFQ's behaviours that differ between kernel versions, as `bfq.*` switches.
//!
//! - `bfq.pending_groups`: what makes a scenario *asymmetric* through its groups
//!   (`bfq_asymmetric_scenario()`). Until 6.2 any non-root group with pending
//!   requests did (`any-child`: `num_groups_with_pending_reqs > 0`, counted per
//!   group entity, of any level); Yu Kuai's "block, bfq: do not idle if only one
//!   group is activated" (6.2) made two groups needed, the root group included
//!   (`at-least-two`: counted per queue's own group). With one busy cgroup 6.1 idles
//!   on every empty sync queue and charges async writes 1×; 6.12 does not.
//! - `bfq.inject`: how `bfq_choose_bfqq_for_injection()` holds the in-service
//!   queue's inject limit. 6.1 checks it per candidate, a large request on a
//!   non-rotational disk limited to one in the driver (`per-candidate`); the
//!   multi-actuator rework ("block, bfq: inject I/O to underutilized actuators",
//!   6.3) checks the total first and passes over large requests while one is in the
//!   driver (`total`). 6.1's new queues also start with their limit's last decrease
//!   at jiffy 0, 6.3's at their creation.
//! - `bfq.shallow_depth`: what `bfq_limit_depth()`'s limits count, as the scheduler
//!   tags' sbitmap reads them ([`ShallowDepth`]). `per-word`: bits of each word, the
//!   async limits `word_depths[][]` fractions of a word and a queue or group over its
//!   share (`bfqq_request_over_limit()`) held to 1 bit per word; `whole-map` (6.17,
//!   6.12.43+: 42e6c6ce03fd): fractions of `nr_requests` (`async_depths[][]`), over
//!   its share 1 request of the whole map.

use std::fmt;

use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
pub use crate::sim::sbitmap::ShallowDepth;

/// The `[kernel]` prefix of BFQ's switches.
pub const SWITCH_PREFIX: &str = "bfq.";

/// `bfq.pending_groups`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingGroups {
    /// 6.1: `> 0`, group entities of any level.
    AnyChild,
    /// 6.2+: `> 1`, each queue's own group, the root's counted.
    AtLeastTwo,
}

impl Named for PendingGroups {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("any-child", Self::AnyChild),
        ("at-least-two", Self::AtLeastTwo),
    ];
}

/// `bfq.inject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inject {
    /// 6.1.
    PerCandidate,
    /// 6.3+.
    Total,
}

impl Named for Inject {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("per-candidate", Self::PerCandidate),
        ("total", Self::Total),
    ];
}

/// The behaviours of one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BfqBehaviour {
    pub pending_groups: PendingGroups,
    pub inject: Inject,
    pub shallow_depth: ShallowDepth,
}

impl Default for BfqBehaviour {
    /// The newest kernel's.
    fn default() -> Self {
        BfqBehaviour {
            pending_groups: PendingGroups::AtLeastTwo,
            inject: Inject::Total,
            shallow_depth: ShallowDepth::WholeMap,
        }
    }
}

impl fmt::Display for BfqBehaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bfq.pending_groups=\"{}\" bfq.inject=\"{}\" bfq.shallow_depth=\"{}\"",
            self.pending_groups.name(),
            self.inject.name(),
            self.shallow_depth.name()
        )
    }
}

/// The behaviours of kernel `version`, then the scenario's `bfq.*` switches
/// (`overrides`: key without the prefix, value).
pub fn behaviour_for(
    version: &str,
    overrides: &[(String, String)],
) -> Result<BfqBehaviour, KeyError> {
    let v = KernelVersion::parse(version).map_err(|m| KeyError::new("kernel.version", m))?;
    let mut b = BfqBehaviour {
        pending_groups: if v.before(6, 2) {
            PendingGroups::AnyChild
        } else {
            PendingGroups::AtLeastTwo
        },
        inject: if v.before(6, 3) {
            Inject::PerCandidate
        } else {
            Inject::Total
        },
        shallow_depth: ShallowDepth::of(&v),
    };
    for (key, val) in overrides {
        let k = key.strip_prefix(SWITCH_PREFIX).unwrap_or(key);
        let full = format!("kernel.{SWITCH_PREFIX}{k}");
        match k {
            "pending_groups" => b.pending_groups = Named::parse(&full, val)?,
            "inject" => b.inject = Named::parse(&full, val)?,
            "shallow_depth" => b.shallow_depth = Named::parse(&full, val)?,
            _ => {
                return Err(KeyError::new(
                    full,
                    "no such BFQ switch; accepted: pending_groups, inject, shallow_depth",
                ));
            }
        }
    }
    Ok(b)
}
