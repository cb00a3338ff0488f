//! blk-iolatency's place in the stack: the rq-qos entry `RQ_QOS_LATENCY`
//! (`blk_iolatency_init()` → `rq_qos_add()` at the first `io.latency` write), its
//! interface file, io.stat keys, rows, timer, and its registry entry.
//!
//! Hooks, as `blkcg_iolatency_ops` has them: `throttle` (a submitter over a group's
//! `max_depth` sleeps on that group's `rq_wait` — slat), `done_bio` (latency, windows,
//! wake-ups), and the sleep on return to user space of a task whose bio was marked
//! (`blkcg_schedule_throttle()`). The kernel keeps that mark per task; here it is per
//! cgroup, taken by the next submitter of the cgroup that returns to user space.
//! Which bios were counted at throttle (`enabled` then) is kept per bio id, so
//! `done_bio` can balance them as 5.19+ does (see [`super::EnableSwitch`]).

use super::{BlkIolatency, Bypass, DoneBio, IolatencyConfig, behaviour_for};
use crate::blkcg::iolatency as iface;
use crate::blkcg::{CgroupTree, DeviceTable, Errno, KernelError};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::kernel_version::KernelVersion;
use crate::scenario::resolve::Resolved;
use crate::sim::jiffies;
use crate::sim::{BioId, BioSlab, EventQueue, Ns};
use crate::stack::registry::{
    ActsOn, CgroupFile, Creation, HookKind, Kconfig, Place, PolicyDef, PolicySetup,
};
use crate::stack::{
    BlkcgPolicy, Hooks, PolicyId, PolicyTimer, Recorder, RqQos, RqQosEntry, RqQosOps,
};

/// blk-iolatency's id: 16 + `RQ_QOS_LATENCY`.
pub const ID: PolicyId = PolicyId(17);

/// blk-iolatency's registration (`blkcg_policy_iolatency`, `iolatency_files`,
/// `blkcg_iolatency_ops`).
pub const POLICY: PolicyDef = PolicyDef {
    name: "blk-iolatency",
    hooks: HookKind::RqQos,
    id: ID,
    files: &[CgroupFile {
        name: "io.latency",
        place: Place::NotOnRoot,
        tokens: &["target"],
        example: "MAJ:MIN target=2000",
    }],
    switches: Some("iolatency."),
    kconfig: &[Kconfig::needed("BLK_CGROUP_IOLATENCY")],
    streams: &[&super::timeline::STREAM],
    reports: &[],
    refuses,
    configure,
    created: Creation::AtFirstWrite,
    acts_on: ActsOn::AnyIo,
};

/// `io.latency` appears with blk-iolatency, in 4.19.
fn refuses(v: &KernelVersion) -> Option<&'static str> {
    (!super::available(v)).then_some("blk-iolatency arrived in Linux 4.19")
}

struct Setup {
    behaviour: super::IolatencyBehaviour,
    hz: u32,
    debug_stats: bool,
}

/// The behaviours for the variant's kernel version and `iolatency.*` switches.
fn configure(r: &Resolved) -> Result<Box<dyn PolicySetup>, KeyError> {
    Ok(Box::new(Setup {
        behaviour: behaviour_for(&r.kernel.version, &r.kernel.overrides)?,
        hz: r.kernel.hz,
        debug_stats: r.kernel.debug_stats,
    }))
}

impl PolicySetup for Setup {
    fn label(&self) -> &'static str {
        "iolatency"
    }
    fn describe(&self) -> String {
        self.behaviour.to_string()
    }
    fn build(&self, tree: &CgroupTree, limits: &QueueLimits, _trace: bool) -> Hooks {
        let cfg = IolatencyConfig {
            behaviour: self.behaviour,
            hz: self.hz,
            start_jiffies: jiffies::initial_jiffies(self.hz),
            // q->nr_requests: the scheduler's tags with an elevator (src/run)
            nr_requests: limits.nr_requests,
            rotational: limits.rotational,
            debug_stats: self.debug_stats,
        };
        Hooks::RqQos(RqQosEntry::Latency(Box::new(LatencyEntry {
            lat: BlkIolatency::new(cfg, tree),
            counted: Vec::new(),
            notify: vec![false; tree.len()],
            timer: PolicyTimer::default(),
        })))
    }
}

/// What [`Entry`] remembers of a bio between throttle and done_bio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Not through this entry's throttle (or done).
    No,
    /// Through it while not enabled.
    Uncounted,
    Counted,
}

/// The rq-qos entry: the controller plus the engine-facing bookkeeping.
pub struct LatencyEntry {
    lat: BlkIolatency,
    /// Per bio id (ids are reused, so this stays as long as the most bios in flight).
    counted: Vec<Seen>,
    /// Per cgroup: a task was marked for the return-to-user sleep.
    notify: Vec<bool>,
    /// The 1 s timer's event.
    timer: PolicyTimer,
}

impl LatencyEntry {
    fn push_timer(&mut self, now: Ns, q: &mut EventQueue) {
        self.timer.arm(ID, self.lat.timer_at(), now, q);
    }

    fn released(&mut self, bios: &BioSlab, woken: &mut Vec<BioId>) {
        for r in self.lat.take_released() {
            let id = r.token as BioId;
            if r.notify_resume {
                self.notify[bios.get(id).cgroup as usize] = true;
            }
            woken.push(id);
        }
    }
}

impl BlkcgPolicy for LatencyEntry {
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
        _q: &mut EventQueue,
    ) -> Result<(), KernelError> {
        if cg == CgroupTree::ROOT {
            return Err(KernelError::new(
                Errno::ENOENT,
                "the root cgroup has no io.latency (CFTYPE_NOT_ON_ROOT)",
            ));
        }
        let w = iface::parse(line, devs)?;
        self.lat.set_limit(cg, w.target_ns, now);
        Ok(())
    }
    fn pd_stat(&self, cg: u32) -> String {
        self.lat.stat(cg)
    }
    fn on_timer(
        &mut self,
        now: Ns,
        token: u64,
        q: &mut EventQueue,
        _bios: &mut BioSlab,
        _out: &mut Vec<BioId>,
    ) {
        if !self.timer.fires(token) {
            return;
        }
        self.lat.timer_fn(now);
        self.push_timer(now, q);
    }
    fn sample(&mut self, now: Ns) {
        self.lat.sample(now);
    }
    fn drain(&mut self, rec: &mut dyn Recorder) {
        for row in self.lat.take_rows() {
            rec.row(&row);
        }
    }
    fn exit(&mut self, _now: Ns, _q: &mut EventQueue) {
        // blkcg_iolatency_exit(): timer_shutdown_sync()
        self.timer.shutdown();
    }
}

impl RqQos for LatencyEntry {
    fn ops(&self) -> RqQosOps {
        RqQosOps {
            done_bio: true,
            user_delay: true,
            ..RqQosOps::default()
        }
    }
    fn throttle(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &mut BioSlab,
        q: &mut EventQueue,
        woken: &mut Vec<BioId>,
    ) -> bool {
        let bio = bios.get(id);
        let i = id as usize;
        if self.counted.len() <= i {
            self.counted.resize(i + 1, Seen::No);
        }
        let out = self.lat.throttle(u64::from(id), bio.cgroup, bio.meta, now);
        self.counted[i] = match out {
            Bypass::NotEnabled => Seen::Uncounted,
            _ => Seen::Counted,
        };
        if let Bypass::Go {
            notify_resume: true,
        } = out
        {
            self.notify[bio.cgroup as usize] = true;
        }
        self.released(bios, woken);
        self.push_timer(now, q);
        out != Bypass::Wait
    }
    fn done_bio(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &BioSlab,
        q: &mut EventQueue,
        woken: &mut Vec<BioId>,
    ) {
        let bio = bios.get(id);
        let seen = self
            .counted
            .get_mut(id as usize)
            .map_or(Seen::No, |s| std::mem::replace(s, Seen::No));
        if seen == Seen::No {
            return;
        }
        let done = DoneBio {
            cgroup: bio.cgroup,
            issued: bio.issue_time,
            issue_as_root: bio.meta,
            counted: seen == Seen::Counted,
            again: false,
        };
        self.lat.done_bio(done, now);
        self.released(bios, woken);
        self.push_timer(now, q);
    }
    fn user_delay(&mut self, now: Ns, cg: u32) -> Ns {
        if std::mem::take(&mut self.notify[cg as usize]) {
            self.lat.maybe_throttle_current(cg, now)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::run_variant;
    use crate::scenario::Scenario;

    /// blk-iolatency's `qd` on a 32-tag null_blk with `[device]` lines `extra`.
    fn qd(extra: &str) -> u32 {
        let text = format!(
            "[device]\nmodel = \"nullb\"\nhw_queue_depth = 32\n{extra}\n\
             [cgroup.a]\n\"io.latency\" = \"252:0 target=1000\"\n\
             fio = \"fio --name=a --rw=randread --runtime=50ms --time_based\"\n"
        );
        let sc = Scenario::parse(&text, "qd.toml").unwrap();
        let run = run_variant(&sc, None, None, None, false).unwrap();
        run.out
            .stack
            .policy::<LatencyEntry>()
            .expect("blk-iolatency is on")
            .lat
            .config()
            .nr_requests
    }

    #[test]
    fn qd_is_the_queues_nr_requests_as_scale_change_reads_it() {
        // scale_change() / scale_cookie_change() read q->nr_requests: the driver's
        // tags without a scheduler (blk_mq_init_allocated_queue()), and a scheduler's
        // 2 * min(depth, BLKDEV_DEFAULT_RQ) once one is attached (blk_mq_init_sched())
        assert_eq!(qd(""), 32);
        assert_eq!(qd("scheduler = \"mq-deadline\""), 64);
        // echo N > queue/nr_requests after the scheduler: whichever set is in use
        assert_eq!(qd("nr_requests = 16"), 16);
        assert_eq!(qd("scheduler = \"mq-deadline\"\nnr_requests = 100"), 100);
    }
}
