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

use crate::blkcg::ioprio::PrioPolicy;
use crate::blkcg::{CgroupTree, DeviceTable, KernelError};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::kernel_version::KernelVersion;
use crate::scenario::resolve::Resolved;
use crate::sim::{Bio, BioId, BioSlab, EventQueue, Ns};
use crate::stack::registry::{PolicyDef, PolicySetup};
use crate::stack::{BioPolicy, BlkcgPolicy, Hooks, PolicyId, Recorder};

const FILES: &[&str] = &["io.prio.class"];

/// blk-ioprio's line in the registry.
pub const POLICY: PolicyDef = PolicyDef {
    files: FILES,
    refuses,
    configure,
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

impl BlkcgPolicy for BlkIoprio {
    fn id(&self) -> PolicyId {
        PolicyId::Ioprio
    }
    fn files(&self) -> &'static [&'static str] {
        FILES
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
