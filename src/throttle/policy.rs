//! blk-throttle's place in the stack: a bio-level policy (`blk_throtl_bio()` in
//! `submit_bio_noacct()`), its `io.max` file, its rows (`super::timeline`) and trace,
//! its registry entry.
//!
//! A bio over its group's limit is held in the group's queue; the pending timer hands
//! it back and the dispatch worker (kthrotld) pushes it on below blk-throttle, so the
//! wait lands in clat. The rows of every sample tick are kept here until the pipeline
//! drains them to the recorder.

use super::{Throttle, ThrottleBehaviour, ThrottleConfig, behaviour_for};
use crate::blkcg::{CgroupTree, DeviceTable, KernelError};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::scenario::resolve::Resolved;
use crate::sim::{Bio, BioId, BioSlab, EventQueue, Ns};
use crate::stack::registry::{
    ActsOn, CgroupFile, Creation, HookKind, Kconfig, Place, PolicyDef, PolicySetup,
};
use crate::stack::{BioPolicy, BlkcgPolicy, Hooks, PolicyId, Recorder};

/// blk-throttle's id: the second bio-level policy in `submit_bio()`.
pub const ID: PolicyId = PolicyId(1);

/// blk-throttle's registration (`blkcg_policy_throtl`, `throtl_files`).
pub const POLICY: PolicyDef = PolicyDef {
    name: "blk-throttle",
    hooks: HookKind::Bio,
    id: ID,
    files: &[CgroupFile {
        name: "io.max",
        place: Place::NotOnRoot,
        tokens: &["rbps", "wbps", "riops", "wiops"],
        example: "MAJ:MIN riops=1000 wbps=10485760",
    }],
    switches: Some("throttle."),
    kconfig: &[
        Kconfig::needed("BLK_DEV_THROTTLING"),
        // the .low limit: 4.10 (9e234eeafbe1) until its removal in 6.9 (bf20ab538c81)
        Kconfig {
            name: "BLK_DEV_THROTTLING_LOW",
            from: (4, 10),
            until: Some((6, 9)),
            required: false,
        },
    ],
    streams: &[&super::timeline::STREAM],
    reports: &[],
    refuses: |_| None,
    configure,
    created: Creation::AtFirstWrite,
    acts_on: ActsOn::AnyIo,
};

/// Its behaviours for the variant's kernel version and `throttle.*` switches.
struct Setup {
    hz: u32,
    behaviour: ThrottleBehaviour,
}

fn configure(r: &Resolved) -> Result<Box<dyn PolicySetup>, KeyError> {
    let ov = r.kernel.switches("throttle.");
    let behaviour = behaviour_for(&r.kernel.version, r.kernel.throttling_low, &ov)?;
    Ok(Box::new(Setup {
        hz: r.kernel.hz,
        behaviour,
    }))
}

impl PolicySetup for Setup {
    fn label(&self) -> &'static str {
        "throttle"
    }
    fn describe(&self) -> String {
        self.behaviour.to_string()
    }
    fn build(&self, tree: &CgroupTree, limits: &QueueLimits, trace: bool) -> Hooks {
        let mut t = Throttle::new(ThrottleConfig::new(self.hz, self.behaviour), tree, limits);
        t.set_trace(trace);
        Hooks::Bio(Box::new(t))
    }
}

impl BlkcgPolicy for Throttle {
    fn id(&self) -> PolicyId {
        ID
    }
    fn write(
        &mut self,
        now: Ns,
        _file: &str,
        cg: u32,
        line: &str,
        devs: &DeviceTable,
        q: &mut EventQueue,
    ) -> Result<(), KernelError> {
        self.write_io_max(now, cg, line, devs, q)
    }
    fn on_timer(
        &mut self,
        now: Ns,
        token: u64,
        q: &mut EventQueue,
        bios: &mut BioSlab,
        out: &mut Vec<BioId>,
    ) {
        self.on_event(now, token, q, bios, out);
    }
    fn sample(&mut self, now: Ns) {
        let rows = self.rows(now);
        self.sampled.extend(rows);
    }
    fn drain(&mut self, rec: &mut dyn Recorder) {
        for row in self.sampled.drain(..) {
            rec.row(&row);
        }
        for line in self.take_trace() {
            rec.trace(line);
        }
    }
    fn exit(&mut self, now: Ns, q: &mut EventQueue) {
        self.cancel(now, q);
    }
}

impl BioPolicy for Throttle {
    fn submit(&mut self, now: Ns, id: BioId, bio: &mut Bio, q: &mut EventQueue) -> bool {
        Throttle::submit(self, now, id, bio, q)
    }
}
