//! Kernel versions of mq-deadline as named behaviour switches.
//!
//! | key | values | meaning |
//! |---|---|---|
//! | `deadline.prio` | `none`, `queued`, `in-flight+aging` | I/O priority levels: none, every class is one queue (≤5.13); three levels, a lower one served whenever the higher ones have nothing *queued in the scheduler* (5.14–5.15: c807ab520fc3, after 7b05bf771084 reverted fb926032b320 "Prioritize high-priority requests"); three levels, a lower one waits while a higher one has requests queued *or in flight*, aged requests (`prio_aging_expire`) served first while ≥ 2 levels are busy (5.16+, 322cff70d46c) |
//! | `deadline.async_depth` | `none`, `3/4`, `nr_requests` | tags writes may hold (`dd_limit_depth()`): no limit and no `async_depth` file (≤5.13); `max(1, 3·nr_requests/4)` (5.14, 07757588e507); `nr_requests`, scaled to bits of each sbitmap word (`dd_to_word_depth()`; 6.11 and 6.1.103+, 39823b47bbd4 "Fix the tag reservation code") |
//! | `deadline.shallow_depth` | `per-word`, `whole-map` | what the limit counts: bits of each word of the scheduler tags' sbitmap (before 6.17), or bits of the whole map, spread over its words (6.17 and 6.12.43+, 42e6c6ce03fd "lib/sbitmap: convert shallow_depth from one word to the whole sbitmap", which also dropped `dd_to_word_depth()`) |
//! | `deadline.sweep` | `next-rq`, `position` | where a batch goes on in sector order: the request that followed the last one dispatched when it was dispatched (`next_rq[]`, moved on only when that request leaves the sort tree: a request queued since, between the two, waits for the next sweep), or the first request at or after the last one's start (`latest_pos[]`, `deadline_from_pos()`: 6.5+, 83c46ed67557 "block: mq-deadline: Track the dispatch position") |
//! | `deadline.depth_updated` | `old-nr`, `new-nr` | which `nr_requests` a write of `queue/nr_requests` leaves `async_depth` computed from: the one before the write, since `blk_mq_update_nr_requests()` calls `dd_depth_updated()` before it stores the new one (before 6.18), or the new one (6.18, 7d337eef4aff "blk-mq: fix elevator depth_updated method") |
//!
//! `fifo_time` of at-head inserts (725f22a1477c, 5.18) is not a switch: mq-deadline
//! reads it only when two requests merge, and an at-head request (a requeue) is on no
//! list a merge searches.

use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
pub use crate::sim::sbitmap::ShallowDepth;
use std::fmt;

/// How the three priority levels share the device (table in the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrioMode {
    None,
    Queued,
    InFlightAging,
}

/// The default `async_depth` (`dd_depth_updated()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncDepth {
    None,
    ThreeQuarters,
    NrRequests,
}

impl Named for PrioMode {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("none", Self::None),
        ("queued", Self::Queued),
        ("in-flight+aging", Self::InFlightAging),
    ];
}

impl Named for AsyncDepth {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("none", Self::None),
        ("3/4", Self::ThreeQuarters),
        ("nr_requests", Self::NrRequests),
    ];
}

/// Which `nr_requests` a write of it leaves `async_depth` computed from
/// (`deadline.depth_updated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthUpdated {
    OldNr,
    NewNr,
}

impl Named for DepthUpdated {
    const NAMES: &'static [(&'static str, Self)] =
        &[("old-nr", Self::OldNr), ("new-nr", Self::NewNr)];
}

/// Where a batch goes on in sector order (`deadline.sweep`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    NextRq,
    Position,
}

impl Named for Sweep {
    const NAMES: &'static [(&'static str, Self)] =
        &[("next-rq", Self::NextRq), ("position", Self::Position)];
}

/// The switches that differ between kernel versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineBehaviour {
    pub prio: PrioMode,
    pub async_depth: AsyncDepth,
    pub shallow_depth: ShallowDepth,
    pub depth_updated: DepthUpdated,
    pub sweep: Sweep,
}

/// In scenario syntax: `deadline.prio=in-flight+aging deadline.async_depth=nr_requests
/// deadline.shallow_depth=whole-map deadline.depth_updated=new-nr deadline.sweep=position`.
impl fmt::Display for DeadlineBehaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "deadline.prio={} deadline.async_depth={} deadline.shallow_depth={} \
             deadline.depth_updated={} deadline.sweep={}",
            self.prio.name(),
            self.async_depth.name(),
            self.shallow_depth.name(),
            self.depth_updated.name(),
            self.sweep.name()
        )
    }
}

impl Default for DeadlineBehaviour {
    fn default() -> Self {
        DeadlineBehaviour {
            prio: PrioMode::InFlightAging,
            async_depth: AsyncDepth::NrRequests,
            shallow_depth: ShallowDepth::WholeMap,
            depth_updated: DepthUpdated::NewNr,
            sweep: Sweep::Position,
        }
    }
}

const PRESETS: &[&str] = &[
    "5.13", "5.14", "5.16", "6.1", "6.1.103", "6.5", "6.11", "6.12.43", "6.17", "6.18", "newest",
];

/// The preset versions, oldest first (one per change, and the stable backport).
pub fn presets() -> &'static [&'static str] {
    PRESETS
}

/// Stable series that carry 39823b47bbd4 (tag reservation fix): (series, first patch).
const STABLE_TAG_FIX: &[((u32, u32), u32)] = &[((6, 1), 103)];

/// The behaviour of kernel `version`, then `overrides` (`("deadline.prio", "queued")`)
/// applied in order.
pub fn behaviour_for(
    version: &str,
    overrides: &[(String, String)],
) -> Result<DeadlineBehaviour, KeyError> {
    let kv = KernelVersion::parse(version).map_err(|m| KeyError::new("kernel.version", m))?;
    let v = (kv.major, kv.minor);
    let tag_fix = kv.carries((6, 11), STABLE_TAG_FIX);
    let mut b = DeadlineBehaviour {
        prio: if v < (5, 14) {
            PrioMode::None
        } else if v < (5, 16) {
            PrioMode::Queued
        } else {
            PrioMode::InFlightAging
        },
        async_depth: if v < (5, 14) {
            AsyncDepth::None
        } else if tag_fix {
            AsyncDepth::NrRequests
        } else {
            AsyncDepth::ThreeQuarters
        },
        shallow_depth: ShallowDepth::of(&kv),
        depth_updated: if v >= (6, 18) {
            DepthUpdated::NewNr
        } else {
            DepthUpdated::OldNr
        },
        sweep: if v >= (6, 5) {
            Sweep::Position
        } else {
            Sweep::NextRq
        },
    };
    for (key, val) in overrides {
        match key.as_str() {
            "deadline.prio" => b.prio = Named::parse(key, val)?,
            "deadline.async_depth" => b.async_depth = Named::parse(key, val)?,
            "deadline.shallow_depth" => b.shallow_depth = Named::parse(key, val)?,
            "deadline.depth_updated" => b.depth_updated = Named::parse(key, val)?,
            "deadline.sweep" => b.sweep = Named::parse(key, val)?,
            _ => {
                return Err(KeyError::new(
                    key.as_str(),
                    "unknown key; accepted: deadline.prio, deadline.async_depth, \
                     deadline.shallow_depth, deadline.depth_updated, deadline.sweep",
                ));
            }
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(v: &str) -> DeadlineBehaviour {
        behaviour_for(v, &[]).unwrap()
    }

    #[test]
    fn presets_follow_the_commits() {
        assert_eq!(at("5.13").prio, PrioMode::None);
        assert_eq!(at("5.13").async_depth, AsyncDepth::None);
        assert_eq!(at("5.14").prio, PrioMode::Queued);
        assert_eq!(at("5.15").prio, PrioMode::Queued);
        assert_eq!(at("5.16").prio, PrioMode::InFlightAging);
        assert_eq!(at("6.1").async_depth, AsyncDepth::ThreeQuarters);
        assert_eq!(at("6.1.103").async_depth, AsyncDepth::NrRequests);
        assert_eq!(at("6.6").async_depth, AsyncDepth::ThreeQuarters);
        assert_eq!(at("6.11").async_depth, AsyncDepth::NrRequests);
        assert_eq!(at("6.12.42").shallow_depth, ShallowDepth::PerWord);
        assert_eq!(at("6.12.43").shallow_depth, ShallowDepth::WholeMap);
        assert_eq!(at("6.16").shallow_depth, ShallowDepth::PerWord);
        assert_eq!(at("6.17").shallow_depth, ShallowDepth::WholeMap);
        assert_eq!(at("6.1.192").shallow_depth, ShallowDepth::PerWord);
        assert_eq!(at("6.17").depth_updated, DepthUpdated::OldNr);
        assert_eq!(at("6.18").depth_updated, DepthUpdated::NewNr);
        assert_eq!(at("6.4.16").sweep, Sweep::NextRq);
        assert_eq!(at("6.1.192").sweep, Sweep::NextRq);
        assert_eq!(at("6.5").sweep, Sweep::Position);
        assert_eq!(at("newest"), DeadlineBehaviour::default());
        // every preset parses and prints its switches
        for p in presets() {
            assert!(at(p).to_string().starts_with("deadline.prio="), "{p}");
        }
    }

    #[test]
    fn overrides_by_name() {
        let o = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let b = behaviour_for("6.12", &o("deadline.prio", "queued")).unwrap();
        assert_eq!(b.prio, PrioMode::Queued);
        let e = behaviour_for("6.12", &o("deadline.async_depth", "half")).unwrap_err();
        assert!(e.msg.contains("3/4, nr_requests"), "{e}");
        let e = behaviour_for("6.12", &o("deadline.batch", "1")).unwrap_err();
        assert!(e.msg.contains("deadline.prio"), "{e}");
    }
}
