//! blk-ioprio (`block/blk-ioprio.c`): `io.prio.class` as the stack's first bio-level
//! policy, where 6.12 calls `blkcg_set_ioprio()` from `bio_set_ioprio()` in
//! `submit_bio()` — before blk-throttle.
//!
//! The per-cgroup policy (no device key, no hierarchy: a bio's own cgroup decides) is
//! parsed, shown and applied by `crate::blkcg::ioprio::PrioPolicy`; this file keeps one
//! per cgroup and is its registry entry. The task's part of `bio_set_ioprio()` (a
//! class-NONE bio takes the submitter's priority) is done where the engine makes the
//! bio, since only the submitter knows its task. The priority only matters to a
//! scheduler that reads it (mq-deadline): under `none` it changes nothing.
//!
//! The policy arrived in 5.14 (556910e39249, an rq-qos policy then; a direct call
//! from `submit_bio()` in 6.12 — the same place on the bio's path). Debian's stock
//! kernels are built without CONFIG_BLK_CGROUP_IOPRIO; on those, drive the classes
//! through fio's `prioclass`/`cmdprio_*` instead.

use crate::blkcg::ioprio::{Ioprio, PrioPolicy, bio_set_ioprio, task_ioprio};
use crate::blkcg::{CgroupTree, DeviceTable, KernelError};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::kernel_version::KernelVersion;
use crate::scenario::resolve::Resolved;
use crate::sim::{Bio, BioId, BioSlab, EventQueue, Ns};
use crate::stack::registry::{
    ActsOn, CgroupFile, Creation, HookKind, Kconfig, Place, PolicyDef, PolicySetup,
};
use crate::stack::{BioPolicy, BlkcgPolicy, Hooks, PolicyId, Recorder};
use crate::workload::job::JobPrio;

/// blk-ioprio's id: the first bio-level policy in `submit_bio()`.
pub const ID: PolicyId = PolicyId(0);

/// blk-ioprio's registration (`ioprio_policy`, `ioprio_files`).
pub const POLICY: PolicyDef = PolicyDef {
    name: "blk-ioprio",
    hooks: HookKind::Bio,
    id: ID,
    files: &[CgroupFile {
        name: "io.prio.class",
        place: Place::Anywhere,
        tokens: &[],
        example: "restrict-to-be",
    }],
    switches: None,
    kconfig: &[Kconfig {
        name: "BLK_CGROUP_IOPRIO",
        from: (5, 14),
        until: None,
        required: true,
    }],
    streams: &[],
    reports: &[],
    refuses,
    configure,
    created: Creation::AtFirstWrite,
    acts_on: ActsOn::AnyIo,
};

fn refuses(v: &KernelVersion) -> Option<&'static str> {
    ((v.major, v.minor) < (5, 14)).then_some("blk-ioprio (io.prio.class) arrived in 5.14")
}

fn configure(_: &Resolved) -> Result<Box<dyn PolicySetup>, KeyError> {
    Ok(Box::new(Setup))
}

/// No switches: `none-to-rt` became an alias of `promote-to-rt` (6.5) without
/// changing what either does to a bio.
struct Setup;

impl PolicySetup for Setup {
    fn label(&self) -> &'static str {
        "ioprio"
    }
    fn describe(&self) -> String {
        "io.prio.class: no-change, promote-to-rt, restrict-to-be, idle, none-to-rt".into()
    }
    fn build(&self, tree: &CgroupTree, _: &QueueLimits, _: bool) -> Hooks {
        Hooks::Bio(Box::new(BlkIoprio {
            policy: vec![PrioPolicy::default(); tree.len().max(1)],
        }))
    }
}

/// `io.prio.class` of every cgroup (`struct ioprio_blkcg`).
pub struct BlkIoprio {
    policy: Vec<PrioPolicy>,
}

impl BlkIoprio {
    /// Cgroup `cg`'s `io.prio.class` now.
    pub fn policy(&self, cg: u32) -> PrioPolicy {
        self.policy.get(cg as usize).copied().unwrap_or_default()
    }
}

/// How the summary names the priority a job's bios carry (`bio_set_ioprio()` of the
/// job's thread priority, then `policy`), as `ionice` does: `rt/4`; with fio's
/// `cmdprio_*`, the share of commands that carry their own, e.g. `be/4
/// cmdprio=30%:idle/7` (`r…`/`w…` when the directions differ). None when the job sets
/// no priority and its cgroup no `io.prio.class`: the default (`be/4`).
pub fn prio_label(prio: &JobPrio, policy: PrioPolicy) -> Option<String> {
    if prio.task.is_none() && prio.cmdprio == [None; 2] && policy == PrioPolicy::NoChange {
        return None;
    }
    let name = |p: Ioprio| format!("{}/{}", p.class().name(), p.level());
    let bio = bio_set_ioprio(Ioprio::DEFAULT, task_ioprio(prio.task), policy);
    let cmd =
        |c: Option<(u32, Ioprio)>| c.map(|(pct, p)| format!("{pct}%:{}", name(policy.apply(p))));
    let mut s = name(bio);
    match prio.cmdprio {
        [None, None] => {}
        [r, w] if r == w => s += &format!(" cmdprio={}", cmd(r).unwrap_or_default()),
        [r, w] => {
            for (d, c) in [("r", r), ("w", w)] {
                if let Some(c) = cmd(c) {
                    s += &format!(" cmdprio={d}{c}");
                }
            }
        }
    }
    Some(s)
}

impl BlkcgPolicy for BlkIoprio {
    fn id(&self) -> PolicyId {
        ID
    }
    fn write(
        &mut self,
        _now: Ns,
        _file: &str,
        cg: u32,
        line: &str,
        _devs: &DeviceTable,
        _q: &mut EventQueue,
    ) -> Result<(), KernelError> {
        let p = PrioPolicy::write(line)?;
        if let Some(slot) = self.policy.get_mut(cg as usize) {
            *slot = p;
        }
        Ok(())
    }
    fn on_timer(&mut self, _: Ns, _: u64, _: &mut EventQueue, _: &mut BioSlab, _: &mut Vec<BioId>) {
    }
    fn drain(&mut self, _: &mut dyn Recorder) {}
    fn exit(&mut self, _: Ns, _: &mut EventQueue) {}
}

impl BioPolicy for BlkIoprio {
    /// `blkcg_set_ioprio()`: never holds a bio.
    fn submit(&mut self, _now: Ns, _id: BioId, bio: &mut Bio, _q: &mut EventQueue) -> bool {
        let p = self
            .policy
            .get(bio.cgroup as usize)
            .copied()
            .unwrap_or_default();
        bio.ioprio = p.apply(bio.ioprio);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blkcg::ioprio::IoprioClass;

    #[test]
    fn prio_label_names_what_the_bios_carry() {
        let rt0 = Ioprio::new(IoprioClass::Rt, 0);
        let idle7 = Ioprio::new(IoprioClass::Idle, 7);
        let none = JobPrio::default();
        assert_eq!(prio_label(&none, PrioPolicy::NoChange), None);
        let rt = JobPrio {
            task: Some(rt0),
            ..none
        };
        assert_eq!(prio_label(&rt, PrioPolicy::NoChange).unwrap(), "rt/0");
        // io.prio.class alone: a default task's bios are promoted, or made idle
        assert_eq!(prio_label(&none, PrioPolicy::PromoteToRt).unwrap(), "rt/4");
        assert_eq!(prio_label(&none, PrioPolicy::AllToIdle).unwrap(), "idle/0");
        let cmd = JobPrio {
            cmdprio: [Some((30, idle7)), Some((30, idle7))],
            ..none
        };
        assert_eq!(
            prio_label(&cmd, PrioPolicy::NoChange).unwrap(),
            "be/4 cmdprio=30%:idle/7"
        );
        let cmd = JobPrio {
            cmdprio: [Some((30, idle7)), None],
            ..none
        };
        assert_eq!(
            prio_label(&cmd, PrioPolicy::RestrictToBe).unwrap(),
            "be/4 cmdprio=r30%:idle/7"
        );
    }
}
