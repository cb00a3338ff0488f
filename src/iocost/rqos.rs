//! blk-iocost's place in the stack: the rq-qos entry `RQ_QOS_COST` (`blk_iocost_init()`
//! → `rq_qos_add()`), its interface files, io.stat keys, rows and trace, and its
//! registry entry.
//!
//! Hooks, as `ioc_rqos_ops` has them: `throttle` (`ioc_rqos_throttle()`: over budget
//! the submitter sleeps on the iocg's wait queue — slat; REQ_META is issued as debt),
//! `done` (`ioc_rqos_done()`: met/missed against the QoS latency, tag wait),
//! `done_bio` (`ioc_rqos_done_bio()`: `done_vtime`), and the issuer delay on return to
//! user space (`blkcg_maybe_throttle_current()` with the delay `iocg_kick_delay()` set).

use super::{Iocost, IocostConfig, TimerMode, behaviour_for};
use crate::blkcg::{CgroupTree, DeviceTable, KernelError};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::kernel_version::KernelVersion;
use crate::scenario::resolve::Resolved;
use crate::sim::{BioId, BioSlab, EventQueue, Ns};
use crate::stack::registry::{
    ActsOn, CgroupFile, Creation, HookKind, Kconfig, Place, PolicyDef, PolicySetup,
};
use crate::stack::{BlkcgPolicy, Hooks, PolicyId, Recorder, Request, RqQos, RqQosEntry, RqQosOps};

/// blk-iocost's id: 16 + `RQ_QOS_COST`.
pub const ID: PolicyId = PolicyId(18);

/// blk-iocost's registration (`blkcg_policy_iocost`, `ioc_files`, `ioc_rqos_ops`).
pub const POLICY: PolicyDef = PolicyDef {
    name: "blk-iocost",
    hooks: HookKind::RqQos,
    id: ID,
    files: &[
        CgroupFile {
            name: "io.weight",
            place: Place::NotOnRoot,
            tokens: &[],
            example: "default 200",
        },
        CgroupFile {
            name: "io.cost.qos",
            place: Place::OnlyOnRoot,
            tokens: &[
                "enable", "ctrl", "rpct", "rlat", "wpct", "wlat", "min", "max",
            ],
            example: "MAJ:MIN enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=150",
        },
        CgroupFile {
            name: "io.cost.model",
            place: Place::OnlyOnRoot,
            tokens: &[
                "ctrl",
                "model",
                "rbps",
                "rseqiops",
                "rrandiops",
                "wbps",
                "wseqiops",
                "wrandiops",
            ],
            example: "MAJ:MIN ctrl=user model=linear rbps=200000000 rseqiops=2000 rrandiops=2000 wbps=200000000 wseqiops=2000 wrandiops=2000",
        },
    ],
    switches: Some("iocost."),
    kconfig: &[Kconfig::needed("BLK_CGROUP_IOCOST")],
    streams: &[&super::timeline::STREAM],
    reports: &["iocost_monitor.txt", "iocost_monitor.json"],
    refuses,
    configure,
    created: Creation::AtFirstWrite,
    acts_on: ActsOn::AnyIo,
};

/// Figures of the whole run, counted from its periods as they are drained.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunFigures {
    /// Periods where no I/O completed and lagging I/O reset a positive busy_level to
    /// 0 (the bug of the iocost no-completion seed).
    no_completion_resets: u64,
    /// The periods, and the sum of their base vrates (%), for the mean.
    periods: u64,
    vrate_pct_sum: f64,
}

/// blk-iocost's files appear with it, in 5.4 (7caa47151ab2).
fn refuses(v: &KernelVersion) -> Option<&'static str> {
    v.before(5, 4).then_some("blk-iocost arrived in Linux 5.4")
}

/// Its configuration plus the base vrate `[state]` says earlier runs left.
struct Setup {
    cfg: IocostConfig,
    vrate_pct: Option<f64>,
}

/// The period timer (`iocost.timer`), the behaviours for the variant's kernel version
/// and `iocost.*` switches, and the debug stats option.
fn configure(r: &Resolved) -> Result<Box<dyn PolicySetup>, KeyError> {
    let jiffies = TimerMode::Jiffies {
        hz: r.kernel.hz,
        one_cpu: r.host.cpus == 1,
    };
    let mut timer = jiffies;
    let mut ov = Vec::new();
    for (k, v) in r.kernel.switches("iocost.") {
        if k == "iocost.timer" {
            timer = match v.as_str() {
                "jiffies" => jiffies,
                "exact" => TimerMode::Exact,
                _ => {
                    return Err(KeyError::new(
                        k.clone(),
                        format!("`kernel.{k}`: `{v}` is not accepted; accepted: jiffies, exact"),
                    ));
                }
            };
        } else {
            ov.push((k, v));
        }
    }
    let behaviour = behaviour_for(&r.kernel.version, &ov)?;
    Ok(Box::new(Setup {
        cfg: IocostConfig {
            timer,
            behaviour,
            debug_stats: r.kernel.debug_stats,
        },
        vrate_pct: r.state.iocost_vrate_pct,
    }))
}

impl PolicySetup for Setup {
    fn label(&self) -> &'static str {
        "iocost"
    }
    fn describe(&self) -> String {
        self.cfg.to_string()
    }
    fn build(&self, tree: &CgroupTree, limits: &QueueLimits, _trace: bool) -> Hooks {
        let mut ioc = Iocost::new(self.cfg, tree, limits);
        if let Some(pct) = self.vrate_pct {
            ioc.set_base_vrate_pct(pct);
        }
        Hooks::RqQos(RqQosEntry::Cost(Box::new(ioc)))
    }
}

impl BlkcgPolicy for Iocost {
    fn id(&self) -> PolicyId {
        ID
    }
    fn write(
        &mut self,
        now: Ns,
        file: &str,
        cg: u32,
        line: &str,
        devs: &DeviceTable,
        _q: &mut EventQueue,
    ) -> Result<(), KernelError> {
        match file {
            "io.cost.qos" => self.write_qos(now, line, devs),
            "io.cost.model" => self.write_model(now, line, devs),
            _ => self.write_weight(now, cg, line, devs),
        }
    }
    fn pd_stat(&self, cg: u32) -> String {
        self.io_stat(cg)
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
    fn drain(&mut self, rec: &mut dyn Recorder) {
        for row in self.take_rows() {
            let f = &mut self.run;
            if row.nr_done == 0 && row.nr_lagging > 0 && row.busy_before > 0 && row.busy_after == 0
            {
                f.no_completion_resets += 1;
            }
            f.periods += 1;
            f.vrate_pct_sum += row.vrate_base_pct;
            rec.row(&row);
        }
        for line in self.take_trace() {
            rec.trace(line);
        }
    }
    fn exit(&mut self, _now: Ns, _q: &mut EventQueue) {
        Iocost::exit(self);
    }
    fn set_tracing(&mut self, on: bool) {
        Iocost::set_tracing(self, on);
    }
    fn disables_wbt(&self) -> bool {
        self.enabled() && self.cfg.behaviour.wbt == super::WbtWhileEnabled::Off
    }
    fn figures(&self) -> Vec<(&'static str, f64)> {
        let f = &self.run;
        let mut v = vec![("iocost.no_completion_resets", f.no_completion_resets as f64)];
        if f.periods > 0 {
            v.push(("iocost.vrate_mean_pct", f.vrate_pct_sum / f.periods as f64));
        }
        v
    }
    fn reports(&mut self, now: Ns, json: bool) -> Vec<(&'static str, String)> {
        // iocost_monitor.py's view of the device at the end of the run
        let mut v = vec![("iocost_monitor.txt", self.monitor_text(now))];
        if json {
            v.push(("iocost_monitor.json", self.monitor_json(now)));
        }
        v
    }
}

impl RqQos for Iocost {
    fn ops(&self) -> RqQosOps {
        RqQosOps {
            merge: true,
            done_bio: true,
            done: true,
            user_delay: true,
            ..RqQosOps::default()
        }
    }
    #[inline]
    fn merge(&mut self, now: Ns, rq: &Request, id: BioId, bios: &mut BioSlab, _q: &mut EventQueue) {
        let charged = bios.get(rq.bio).iocost_cost != 0;
        Iocost::merge(
            self,
            now,
            rq.sector,
            rq.bytes >> 9,
            charged,
            bios.get_mut(id),
        );
    }
    #[inline]
    fn throttle(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &mut BioSlab,
        q: &mut EventQueue,
        woken: &mut Vec<BioId>,
    ) -> bool {
        let go = Iocost::throttle(self, now, id, bios.get_mut(id), q);
        self.drain_woken(bios, woken);
        go
    }
    #[inline]
    fn done_bio(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &BioSlab,
        _q: &mut EventQueue,
        _woken: &mut Vec<BioId>,
    ) {
        self.on_bio_done(now, bios.get(id));
    }
    #[inline]
    fn done(&mut self, now: Ns, rq: &Request, _q: &mut EventQueue, _woken: &mut Vec<BioId>) {
        self.on_rq_done(now, rq.dir, rq.bytes, rq.alloc_time, rq.start_time);
    }
    #[inline]
    fn user_delay(&mut self, now: Ns, cg: u32) -> Ns {
        Iocost::user_delay(self, now, cg)
    }
    #[inline]
    fn prefetch(&self, cg: u32) {
        Iocost::prefetch(self, cg)
    }
    fn prefetch_done(&self, cg: u32) {
        Iocost::prefetch_done(self, cg)
    }
    #[inline]
    fn prefetch_timer(&self, token: u64) -> Option<u32> {
        Iocost::prefetch_timer(self, token)
    }
}
