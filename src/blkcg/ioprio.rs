//! I/O priorities: the `ioprio` value a bio carries, how `submit_bio()` fills it in,
//! and `io.prio.class` (blk-ioprio), parsed and applied as the kernel does.
//!
//! - [`Ioprio`] is the 16-bit value of `include/uapi/linux/ioprio.h`: class in bits
//!   13..15, hint in bits 3..12, level in bits 0..2 ([`Ioprio::new`] =
//!   `IOPRIO_PRIO_VALUE`). Only the class matters to mq-deadline; the level is kept so
//!   that `blkcg_set_ioprio()`'s numeric `max` compares what the kernel compares.
//! - [`task_ioprio`] is `__get_task_ioprio()` for a task of nice 0 that may have called
//!   `ioprio_set()` (fio's `prio`/`prioclass`), [`bio_set_ioprio`] is `bio_set_ioprio()`
//!   (a class-NONE bio gets the task's priority, then the cgroup's policy applies).
//! - [`PrioPolicy`] is the per-cgroup `io.prio.class` file (cpd data: no device key):
//!   written through `sysfs_match_string()` ([`PrioPolicy::write`], EINVAL for any
//!   other word), shown by its name, applied by [`PrioPolicy::apply`] =
//!   `blkcg_set_ioprio()`.

use super::{Errno, KernelError};

/// `IOPRIO_CLASS_*` (include/uapi/linux/ioprio.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoprioClass {
    None = 0,
    Rt = 1,
    Be = 2,
    Idle = 3,
}

impl IoprioClass {
    /// The class numbered `n` (`prioclass=N`), if it is one of the four.
    pub fn from_u32(n: u32) -> Option<Self> {
        [Self::None, Self::Rt, Self::Be, Self::Idle]
            .get(n as usize)
            .copied()
    }

    /// The name `ionice` and fio's output use (`none`, `rt`, `be`, `idle`).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Rt => "rt",
            Self::Be => "be",
            Self::Idle => "idle",
        }
    }
}

/// `IOPRIO_CLASS_SHIFT`.
const CLASS_SHIFT: u16 = 13;
/// `IOPRIO_LEVEL_MASK`.
const LEVEL_MASK: u16 = 7;
/// `IOPRIO_NORM`: the level of a task that never called `ioprio_set()` (nice 0).
pub const IOPRIO_NORM: u16 = 4;

/// A bio's or task's I/O priority, as the kernel stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ioprio(pub u16);

impl Ioprio {
    /// `IOPRIO_DEFAULT`: class NONE, level 0.
    pub const DEFAULT: Ioprio = Ioprio(0);

    /// `IOPRIO_PRIO_VALUE(class, level)`; `level` is masked to 0..=7.
    pub fn new(class: IoprioClass, level: u16) -> Self {
        Ioprio(((class as u16) << CLASS_SHIFT) | (level & LEVEL_MASK))
    }

    /// `IOPRIO_PRIO_CLASS()`. Values 4..7 are not a class a bio can carry (the kernel's
    /// `ioprio_check_cap()` refuses them); they read as NONE.
    pub fn class(self) -> IoprioClass {
        IoprioClass::from_u32(u32::from(self.0 >> CLASS_SHIFT)).unwrap_or(IoprioClass::None)
    }

    /// `IOPRIO_PRIO_LEVEL()`.
    pub fn level(self) -> u16 {
        self.0 & LEVEL_MASK
    }
}

/// `__get_task_ioprio()` for a task of nice 0 under SCHED_OTHER: the priority it set
/// with `ioprio_set()` (`set` = `Some`), or — class NONE or never set — `(BE, 4)`
/// (`task_nice_ioclass()`, `task_nice_ioprio()`).
pub fn task_ioprio(set: Option<Ioprio>) -> Ioprio {
    match set {
        Some(p) if p.class() != IoprioClass::None => p,
        _ => Ioprio::new(IoprioClass::Be, IOPRIO_NORM),
    }
}

/// `bio_set_ioprio()` (block/blk-core.c): a bio nobody gave a class takes the
/// submitting task's priority, then the cgroup's `io.prio.class` applies.
pub fn bio_set_ioprio(bio: Ioprio, task: Ioprio, policy: PrioPolicy) -> Ioprio {
    let bio = if bio.class() == IoprioClass::None {
        task
    } else {
        bio
    };
    policy.apply(bio)
}

/// `enum prio_policy` (block/blk-ioprio.c): the value of `io.prio.class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrioPolicy {
    #[default]
    NoChange = 0,
    PromoteToRt = 1,
    RestrictToBe = 2,
    AllToIdle = 3,
    NoneToRt = 4,
}

/// `policy_name[]`, indexed by the policy's number.
const POLICY_NAME: [(&str, PrioPolicy); 5] = [
    ("no-change", PrioPolicy::NoChange),
    ("promote-to-rt", PrioPolicy::PromoteToRt),
    ("restrict-to-be", PrioPolicy::RestrictToBe),
    ("idle", PrioPolicy::AllToIdle),
    ("none-to-rt", PrioPolicy::NoneToRt),
];

impl PrioPolicy {
    /// `ioprio_set_prio_policy()`: `sysfs_match_string(policy_name, buf)`, which
    /// compares as `sysfs_streq()` — equal, or equal but for one trailing newline on
    /// either side. Anything else is EINVAL.
    pub fn write(input: &str) -> Result<PrioPolicy, KernelError> {
        let word = input.strip_suffix('\n').unwrap_or(input);
        POLICY_NAME
            .iter()
            .find(|(name, _)| *name == word)
            .map(|&(_, p)| p)
            .ok_or_else(|| {
                let names: Vec<&str> = POLICY_NAME.iter().map(|(n, _)| *n).collect();
                KernelError::new(
                    Errno::EINVAL,
                    format!(
                        "`{}`: io.prio.class takes one of {}",
                        input.trim_end(),
                        names.join(", ")
                    ),
                )
            })
    }

    /// `ioprio_show_prio_policy()`: the policy's name (an alias shows as written).
    pub fn show(self) -> &'static str {
        POLICY_NAME[self as usize].0
    }

    /// `blkcg_set_ioprio()`: promote-to-rt (and its alias) makes any non-RT bio
    /// `(RT, 4)`; the other policies only ever make a bio's priority worse — the
    /// numerically larger of the bio's value and `IOPRIO_PRIO_VALUE(policy, 0)` —
    /// which also gives a class-NONE bio the policy's class.
    pub fn apply(self, bio: Ioprio) -> Ioprio {
        match self {
            PrioPolicy::NoChange => bio,
            PrioPolicy::PromoteToRt | PrioPolicy::NoneToRt => {
                if bio.class() == IoprioClass::Rt {
                    bio
                } else {
                    Ioprio::new(IoprioClass::Rt, IOPRIO_NORM)
                }
            }
            PrioPolicy::RestrictToBe | PrioPolicy::AllToIdle => {
                // the policy's number is the class it caps at (RESTRICT_TO_BE = BE,
                // ALL_TO_IDLE = IDLE)
                bio.max(Ioprio((self as u16) << CLASS_SHIFT))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IoprioClass::*;

    #[test]
    fn value_layout_matches_uapi() {
        // IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 4) = (1 << 13) | 4
        assert_eq!(Ioprio::new(Rt, 4).0, 0x2004);
        assert_eq!(Ioprio::new(Idle, 7).class(), Idle);
        assert_eq!(Ioprio::new(Be, 9).level(), 1, "level is masked to 3 bits");
        assert_eq!(Ioprio(7 << 13).class(), None, "IOPRIO_CLASS_INVALID");
    }

    #[test]
    fn write_is_sysfs_match_string() {
        assert_eq!(PrioPolicy::write("idle\n"), Ok(PrioPolicy::AllToIdle));
        assert_eq!(PrioPolicy::write("none-to-rt"), Ok(PrioPolicy::NoneToRt));
        assert_eq!(PrioPolicy::NoneToRt.show(), "none-to-rt");
        for bad in ["IDLE", "idle\n\n", " idle", "rt", "", "1"] {
            let e = PrioPolicy::write(bad).unwrap_err();
            assert_eq!(e.errno, Errno::EINVAL, "{bad:?}");
        }
        assert!(
            PrioPolicy::write("be")
                .unwrap_err()
                .why
                .contains("restrict-to-be")
        );
    }

    #[test]
    fn blkcg_set_ioprio_rules() {
        let rt0 = Ioprio::new(Rt, 0);
        let be4 = Ioprio::new(Be, 4);
        let idle0 = Ioprio::new(Idle, 0);
        // promote: any non-RT becomes (RT, 4); an RT bio keeps its level
        assert_eq!(PrioPolicy::PromoteToRt.apply(idle0), Ioprio::new(Rt, 4));
        assert_eq!(PrioPolicy::NoneToRt.apply(be4), Ioprio::new(Rt, 4));
        assert_eq!(PrioPolicy::PromoteToRt.apply(rt0), rt0);
        // restrict-to-be: RT → (BE, 0), BE and IDLE unchanged, NONE → (BE, 0)
        assert_eq!(PrioPolicy::RestrictToBe.apply(rt0), Ioprio::new(Be, 0));
        assert_eq!(PrioPolicy::RestrictToBe.apply(be4), be4);
        assert_eq!(PrioPolicy::RestrictToBe.apply(idle0), idle0);
        assert_eq!(
            PrioPolicy::RestrictToBe.apply(Ioprio::DEFAULT),
            Ioprio::new(Be, 0)
        );
        // idle: everything becomes IDLE (levels of an IDLE bio kept)
        assert_eq!(PrioPolicy::AllToIdle.apply(rt0), idle0);
        assert_eq!(PrioPolicy::AllToIdle.apply(Ioprio::new(Idle, 5)).level(), 5);
        assert_eq!(PrioPolicy::NoChange.apply(rt0), rt0);
    }

    #[test]
    fn submit_path_gives_task_priority_first() {
        // a plain task: (BE, 4); restrict-to-be leaves it; promote makes it (RT, 4)
        let task = task_ioprio(Option::None);
        assert_eq!(task, Ioprio::new(Be, 4));
        assert_eq!(
            bio_set_ioprio(Ioprio::DEFAULT, task, PrioPolicy::RestrictToBe),
            task
        );
        // ioprio_set(RT, 2) then io.prio.class=idle: idle wins (only ever worse)
        let rt_task = task_ioprio(Some(Ioprio::new(Rt, 2)));
        assert_eq!(
            bio_set_ioprio(Ioprio::DEFAULT, rt_task, PrioPolicy::AllToIdle).class(),
            Idle
        );
        // a bio with its own class (fio cmdprio) ignores the task's
        let own = Ioprio::new(Idle, 0);
        assert_eq!(bio_set_ioprio(own, rt_task, PrioPolicy::NoChange), own);
        // ioprio_set(NONE, x) is the nice-derived (BE, 4)
        assert_eq!(task_ioprio(Some(Ioprio::new(None, 3))), task);
    }
}
