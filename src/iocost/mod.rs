//! blk-iocost for one device: the cost model, the weight hierarchy, the interface files
//! and the period-timer decisions, mirroring `block/blk-iocost.c` (spec: iocost.md).
//!
//! Idea (as in the kernel's header comment): every bio gets an absolute cost from a
//! linear device model; the device has a virtual clock advancing at `vrate`; each active
//! cgroup pays `cost / hweight_inuse` of its own vtime and may issue while its vtime is
//! behind the device's. A period timer watches completion latencies and tag waits and
//! moves `busy_level`, which steers `vrate`.
//!
//! Moving parts and where they live:
//! - `model.rs`  — presets, `calc_lcoefs()`, `calc_vtime_cost_builtin()`, linear-max;
//! - `period.rs` — period length, margins, vrate bounds, lat stats, the busy_level
//!   state machine (three named variants), `ioc_adjust_base_vrate()`, the vrate_adj
//!   trace line;
//! - `hweight.rs`— `propagate_weights()` sums, `current_hweight()`,
//!   `current_hweight_max()` and `transfer_surpluses()`'s donation arithmetic
//!   (WEIGHT_ONE fixed point) over the cgroup tree. Hweights are cached per node and
//!   recomputed lazily, only after a propagation changed a weight (`hweight_gen`), and
//!   inner-node walks cover the ancestors of the leaves concerned
//!   (`iocg_build_inner_walk()`), never the whole tree;
//! - `debt.rs`   — debt/issuer-delay/forgiveness arithmetic (`iocg_kick_delay()`,
//!   `ioc_forgive_debts()`);
//! - `ctl.rs`    — the running controller: vtime, issue path, waiters, debt, the
//!   period timer, stats flush, trace lines and the monitor views. It keeps the active
//!   iocgs in a list (`ioc->active_iocgs`), so every walk of the period timer is
//!   O(active) with small constants, whatever the number of cgroups;
//! - this file  — [`IocostConfig`], [`behaviour_for`] (the named behaviours by kernel
//!   version: [`NoCompletion`], [`TraceVrate`]), and [`Iocost`], which owns the
//!   device's interface state (`io.cost.qos`, `io.cost.model`, `io.weight`) parsed by
//!   `crate::blkcg::{iocost_qos, iocost_model, ioweight}` and derives the parameters
//!   (`ioc_refresh_params()`): coefficients, period, margins, vrate bounds. The base
//!   vrate starts at 100% (`blk_iocost_init()`) or where a scenario's `[state]` says
//!   earlier runs left it ([`Iocost::set_base_vrate_pct`]).

pub mod ctl;
pub mod debt;
pub mod hweight;
pub mod model;
pub mod period;
pub mod rqos;
pub mod timeline;

use crate::blkcg::iocost_model::ModelParams;
use crate::blkcg::iocost_qos::{QosParams, open_bdev};
use crate::blkcg::ioweight::Weights;
use crate::blkcg::{CgroupTree, DeviceTable, Errno, KernelError};
use crate::device::QueueLimits;
use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
use crate::sim::Ns;
use model::{AUTOP, Autop, CostModel, VTIME_PER_USEC};
use period::{Margins, period_us, vrate_bound};

/// What a tick with no completions does to busy_level (the 2026 seed fix and its drafts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCompletion {
    /// Before the fix: treated like a tick where every IO met its target.
    Reset,
    /// The seed's v2: clamp to ±4 if lagging, else min(busy, 0) with shortages, else 0.
    Clamp4,
    /// The applied v3: keep busy_level unchanged when IO is lagging.
    KeepIfLagging,
}

/// Which rates the `iocost_ioc_vrate_adj` tracepoint prints (`vrate=OLD->NEW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceVrate {
    /// Before 6.2: OLD is `vtime_rate`, the rate in force during the period (loss
    /// compensation included), and so is NEW when the base is left alone. Seen on 6.1.192.
    InForce,
    /// 6.2 on: OLD is `vtime_base_rate`, NEW the new base rate. Seen on 6.12.117 and in
    /// the iocost seed's bpftrace (`vrate=124.97%->124.97% busy=0`).
    Base,
}

impl Named for NoCompletion {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("reset", Self::Reset),
        ("clamp-4", Self::Clamp4),
        ("keep-if-lagging", Self::KeepIfLagging),
    ];
}

/// Whether enabling blk-iocost turns writeback throttling off (`iocost.wbt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WbtWhileEnabled {
    /// Before 6.2: wbt stays as it was (6.1.192's `ioc_qos_write()` never calls it).
    LeftOn,
    /// 6.2 on ("blk-iocost: disable writeback throttling"): `ioc_qos_write()` ends in
    /// `wbt_disable_default()` when it enables the controller and
    /// `wbt_enable_default()` when it disables it; a `wbt_lat_usec` the user wrote is
    /// kept either way.
    Off,
}

impl Named for WbtWhileEnabled {
    const NAMES: &'static [(&'static str, Self)] = &[("left-on", Self::LeftOn), ("off", Self::Off)];
}

impl Named for TraceVrate {
    const NAMES: &'static [(&'static str, Self)] =
        &[("in-force", Self::InForce), ("base", Self::Base)];
}

/// Named behaviours of the controller that differ between kernel versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IocostBehaviour {
    pub no_completion: NoCompletion,
    pub trace_vrate: TraceVrate,
    pub wbt: WbtWhileEnabled,
}

/// How the period timer is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerMode {
    /// Re-armed at `jiffies + usecs_to_jiffies(period)` with the given HZ; the wait
    /// timers are hrtimers with a range. With `one_cpu` (`[host] cpus = 1`, a qemu
    /// guest) they share the CPU's hrtimer queue, the busy CPU's tick runs the due ones
    /// and each hard expiry every other due one; otherwise each is alone on an idle
    /// CPU and runs at its hard expiry.
    Jiffies { hz: u32, one_cpu: bool },
    /// Exactly `period_us` after the handler.
    Exact,
}

/// In scenario syntax: `iocost.timer=jiffies iocost.no_completion=... debug_stats=0`.
impl std::fmt::Display for IocostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let timer = match self.timer {
            TimerMode::Jiffies { .. } => "jiffies",
            TimerMode::Exact => "exact",
        };
        write!(
            f,
            "iocost.timer={timer} iocost.no_completion={} iocost.trace_vrate={} iocost.wbt={} \
             debug_stats={}",
            self.behaviour.no_completion.name(),
            self.behaviour.trace_vrate.name(),
            self.behaviour.wbt.name(),
            u8::from(self.debug_stats)
        )
    }
}

/// Controller configuration from the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IocostConfig {
    pub timer: TimerMode,
    pub behaviour: IocostBehaviour,
    /// `blkcg_debug_stats`: adds `cost.wait/indebt/indelay` to io.stat.
    pub debug_stats: bool,
}

/// Kernel version → behaviour, then `iocost.*` overrides. Versions before the 2026 fix
/// (anything below 7.0, and 7.0-rc*) reset; 7.0 and later, or `newest`, keep if lagging.
/// The vrate tracepoint prints the rate in force before 6.2 and the base rate from 6.2.
pub fn behaviour_for(
    version: &str,
    overrides: &[(String, String)],
) -> Result<IocostBehaviour, KeyError> {
    let v = KernelVersion::parse(version).map_err(|m| KeyError::new("kernel.version", m))?;
    let no_completion = if v.before(7, 0) {
        NoCompletion::Reset
    } else {
        NoCompletion::KeepIfLagging
    };
    let trace_vrate = if v.before(6, 2) {
        TraceVrate::InForce
    } else {
        TraceVrate::Base
    };
    let wbt = if v.before(6, 2) {
        WbtWhileEnabled::LeftOn
    } else {
        WbtWhileEnabled::Off
    };
    let mut b = IocostBehaviour {
        no_completion,
        trace_vrate,
        wbt,
    };
    for (key, val) in overrides {
        match key.as_str() {
            "iocost.no_completion" => b.no_completion = Named::parse(key, val)?,
            "iocost.trace_vrate" => b.trace_vrate = Named::parse(key, val)?,
            "iocost.wbt" => b.wbt = Named::parse(key, val)?,
            k if k.starts_with("iocost.") => {
                return Err(KeyError::new(
                    key.clone(),
                    "unknown iocost behaviour (accepted: iocost.no_completion, \
                     iocost.trace_vrate, iocost.wbt)",
                ));
            }
            _ => {}
        }
    }
    Ok(b)
}

/// Parameters derived from qos + model (`ioc_refresh_params()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Derived {
    pub cost: CostModel,
    pub period_us: u64,
    pub margins: Margins,
    pub vrate_min: u64,
    pub vrate_max: u64,
    /// `10^6 − pct` per direction: missed_ppm above this is busy.
    pub thr_ppm: [u32; 2],
}

/// blk-iocost on one device. The ioc instance exists from the first write to
/// `io.cost.qos` or `io.cost.model`; it throttles only while `enable=1`.
#[derive(Debug, Clone)]
pub struct Iocost {
    pub cfg: IocostConfig,
    dev: (u32, u32),
    mq: bool,
    autop: usize,
    /// None until the first qos/model write creates the ioc.
    qos: Option<QosParams>,
    model: ModelParams,
    weights: Vec<Weights>,
    derived: Derived,
    /// `vtime_base_rate`.
    pub vrate: u64,
    rt: ctl::Runtime,
    /// Cgroup paths, for the monitor view.
    paths: Vec<String>,
    /// Disk name (`ioc_name()`), for trace lines.
    name: String,
    /// The whole run's figures, counted as its periods are drained (`rqos.rs`).
    pub(crate) run: rqos::RunFigures,
}

impl Iocost {
    /// `blk_iocost_init()` deferred: preset from the queue, weights for every cgroup.
    pub fn new(cfg: IocostConfig, tree: &CgroupTree, limits: &QueueLimits) -> Iocost {
        // ioc_autop_idx() asks blk_queue_depth(): q->queue_depth, which only SCSI sets
        // (the HDD model), else q->nr_requests, the scheduler's depth under an elevator
        let autop = Autop::select(limits.rotational, limits.blk_queue_depth());
        let model = ModelParams::auto(&AUTOP[autop].inputs);
        let qos = QosParams::auto(AUTOP[autop].lat_us);
        let mut ioc = Iocost {
            cfg,
            dev: (limits.major, limits.minor),
            mq: true,
            autop,
            qos: None,
            model,
            weights: vec![Weights::default(); tree.len()],
            derived: Self::derive(&qos, &model, VTIME_PER_USEC),
            vrate: VTIME_PER_USEC,
            rt: ctl::Runtime::new(
                tree.len(),
                hweight::Hier::new(tree, |_| ioweight_default()),
                VTIME_PER_USEC,
            ),
            paths: tree.nodes.iter().map(|n| n.path.clone()).collect(),
            name: limits.name.clone(),
            run: rqos::RunFigures::default(),
        };
        ioc.refresh();
        ioc
    }

    /// `[devname:cgroup]`, the head of the kernel's per-iocg trace lines
    /// (`TRACE_IOCG_PATH`, cgroup path from the root).
    fn tp_head(&self, cg: u32) -> String {
        let path = self.paths.get(cg as usize).map_or("", String::as_str);
        format!("[{}:/{}]", self.name, path)
    }

    fn derive(q: &QosParams, m: &ModelParams, vrate: u64) -> Derived {
        let p = period_us(q.rpct, q.rlat, q.wpct, q.wlat);
        Derived {
            cost: CostModel::new(m.kind, &m.inputs),
            period_us: p,
            margins: Margins::new(p, vrate),
            vrate_min: vrate_bound(q.min),
            vrate_max: vrate_bound(q.max),
            thr_ppm: [1_000_000 - q.rpct, 1_000_000 - q.wpct],
        }
    }

    fn refresh(&mut self) {
        let q = self
            .qos
            .unwrap_or(QosParams::auto(AUTOP[self.autop].lat_us));
        self.derived = Self::derive(&q, &self.model, self.vrate);
    }

    /// Start from a base vrate other than boot's 100% (`[state] "iocost.vrate"`): the
    /// `vtime_base_rate` an earlier run left, to the kernel's resolution (1/100 %).
    pub fn set_base_vrate_pct(&mut self, pct: f64) {
        let p10k = (pct * 100.0).round() as u64;
        self.vrate = (p10k * VTIME_PER_USEC).div_ceil(10_000);
        self.rt.vtime_rate = self.vrate as i64;
        self.refresh();
    }

    /// The derived parameters currently in force.
    pub fn params(&self) -> &Derived {
        &self.derived
    }

    /// (rlat, wlat) in us.
    fn qos_lat(&self) -> (u32, u32) {
        let q = self
            .qos
            .unwrap_or(QosParams::auto(AUTOP[self.autop].lat_us));
        (q.rlat, q.wlat)
    }

    /// `params=` of iocost_monitor: preset name plus `(C)`/`(Q)`/`(CQ)` for user model/qos.
    pub fn params_name(&self) -> String {
        let c = if self.model.user { "C" } else { "" };
        let qf = if self.qos.is_some_and(|q| q.user) {
            "Q"
        } else {
            ""
        };
        let flags = format!("{c}{qf}");
        let name = AUTOP[self.autop].name;
        if flags.is_empty() {
            name.to_string()
        } else {
            format!("{name}({flags})")
        }
    }

    /// True once `enable=1` has been written.
    pub fn enabled(&self) -> bool {
        self.qos.is_some_and(|q| q.enable)
    }

    fn open<'a>(&self, input: &'a str, devs: &DeviceTable) -> Result<&'a str, KernelError> {
        let (dev, body) = open_bdev(input, devs)?;
        if dev != self.dev {
            return Err(KernelError::new(
                Errno::ENODEV,
                format!(
                    "{}:{} is not the device this controller runs on",
                    dev.0, dev.1
                ),
            ));
        }
        if !self.mq {
            return Err(KernelError::new(
                Errno::EOPNOTSUPP,
                "iocost needs a blk-mq queue",
            ));
        }
        Ok(body)
    }

    /// `ioc_qos_write()`.
    pub fn write_qos(
        &mut self,
        _now: Ns,
        input: &str,
        devs: &DeviceTable,
    ) -> Result<(), KernelError> {
        let body = self.open(input, devs)?;
        let lat = AUTOP[self.autop].lat_us;
        let cur = self.qos.unwrap_or(QosParams::auto(lat));
        self.qos = Some(cur.apply_write(body, lat)?);
        self.refresh();
        Ok(())
    }

    /// `ioc_cost_model_write()`.
    pub fn write_model(
        &mut self,
        _now: Ns,
        input: &str,
        devs: &DeviceTable,
    ) -> Result<(), KernelError> {
        let body = self.open(input, devs)?;
        self.model = self.model.apply_write(body, &AUTOP[self.autop].inputs)?;
        self.qos
            .get_or_insert(QosParams::auto(AUTOP[self.autop].lat_us));
        self.refresh();
        Ok(())
    }

    /// `ioc_weight_write()` for cgroup `cg` (the root has no `io.weight`).
    pub fn write_weight(
        &mut self,
        now: Ns,
        cg: u32,
        input: &str,
        devs: &DeviceTable,
    ) -> Result<(), KernelError> {
        let has_ioc = self.qos.is_some();
        let dev = self.dev;
        self.weights_mut(cg)?
            .write(input, devs, |d| d == dev && has_ioc)?;
        // weight_updated(): an active iocg gets the new weight at once, its inuse kept
        // (clamped to the new weight)
        let w = self.weight(cg);
        self.rt.hier.set_weight(cg, w);
        if self.rt.iocgs[cg as usize].active {
            let a = u64::from(w) * hweight::WEIGHT_ONE;
            let inuse = self.rt.hier.inuse(cg);
            let vnow = self.vnow(now);
            self.propagate_saving(cg, a, inuse, vnow);
        }
        Ok(())
    }

    fn weights_mut(&mut self, cg: u32) -> Result<&mut Weights, KernelError> {
        let no_file =
            || KernelError::new(Errno::EINVAL, format!("cgroup {cg} has no io.weight file"));
        if cg == CgroupTree::ROOT {
            return Err(no_file());
        }
        self.weights.get_mut(cg as usize).ok_or_else(no_file)
    }

    /// `io.cost.qos` contents (empty before the ioc exists).
    pub fn show_qos(&self) -> String {
        self.qos.map(|q| q.show(self.dev)).unwrap_or_default()
    }

    /// `io.cost.model` contents (empty before the ioc exists).
    pub fn show_model(&self) -> String {
        if self.qos.is_some() {
            self.model.show(self.dev)
        } else {
            String::new()
        }
    }

    /// `io.weight` contents of cgroup `cg`.
    pub fn show_weight(&self, cg: u32) -> String {
        self.weights
            .get(cg as usize)
            .map(Weights::show)
            .unwrap_or_default()
    }

    /// Effective weight of `cg` on this device, ×1 (not ×WEIGHT_ONE).
    pub fn weight(&self, cg: u32) -> u32 {
        self.weights
            .get(cg as usize)
            .map(|w| w.effective(self.dev))
            .unwrap_or(ioweight_default())
    }
}

fn ioweight_default() -> u32 {
    crate::blkcg::ioweight::CGROUP_WEIGHT_DFL
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(rot: bool, qd: u32) -> QueueLimits {
        QueueLimits {
            major: 8,
            minor: 0,
            name: "sda".into(),
            rotational: rot,
            hw_queue_depth: qd,
            nr_requests: qd,
            max_sectors_kb: 1280,
            logical_block_size: 512,
            capacity: 1 << 40,
            write_cache: false,
            queue_depth: None,
        }
    }

    fn cfg() -> IocostConfig {
        IocostConfig {
            timer: TimerMode::Jiffies {
                hz: 1000,
                one_cpu: false,
            },
            behaviour: behaviour_for("newest", &[]).unwrap(),
            debug_stats: false,
        }
    }

    fn tree() -> CgroupTree {
        let mut t = CgroupTree::default();
        t.ensure("a");
        t
    }

    #[test]
    fn behaviours_by_version() {
        let nc = |v: &str| behaviour_for(v, &[]).unwrap().no_completion;
        assert_eq!(nc("6.12"), NoCompletion::Reset);
        assert_eq!(nc("7.0-rc3"), NoCompletion::Reset);
        assert_eq!(nc("7.0"), NoCompletion::KeepIfLagging);
        assert_eq!(nc("newest"), NoCompletion::KeepIfLagging);
        let o = [("iocost.no_completion".to_string(), "clamp-4".to_string())];
        assert_eq!(
            behaviour_for("6.1", &o).unwrap().no_completion,
            NoCompletion::Clamp4
        );
        assert!(behaviour_for("six", &[]).is_err());
        assert!(behaviour_for("7.0-foo", &[]).is_err());
        let bad = [("iocost.no_completion".to_string(), "maybe".to_string())];
        assert_eq!(
            behaviour_for("7.0", &bad).unwrap_err().key,
            "iocost.no_completion"
        );
        let tv = |v: &str| behaviour_for(v, &[]).unwrap().trace_vrate;
        assert_eq!(tv("6.1.192"), TraceVrate::InForce);
        assert_eq!(tv("6.2"), TraceVrate::Base);
        assert_eq!(tv("newest"), TraceVrate::Base);
        let o = [("iocost.trace_vrate".to_string(), "in-force".to_string())];
        assert_eq!(
            behaviour_for("6.12", &o).unwrap().trace_vrate,
            TraceVrate::InForce
        );
    }

    #[test]
    fn seed_setup_through_the_files() {
        let devs = DeviceTable {
            disks: vec![(8, 0)],
        };
        let mut ioc = Iocost::new(cfg(), &tree(), &limits(false, 64));
        assert_eq!(ioc.show_qos(), "");
        assert_eq!(
            ioc.write_weight(0, 1, "8:0 200", &devs).unwrap_err().errno,
            Errno::EOPNOTSUPP
        );
        ioc.write_model(0, "8:0 ctrl=user model=linear rbps=173471131 rseqiops=3566 rrandiops=3566 wbps=173333269 wseqiops=3566 wrandiops=3566", &devs).unwrap();
        assert!(!ioc.enabled());
        ioc.write_qos(
            0,
            "8:0 enable=1 ctrl=user rpct=90 rlat=3500 wpct=90 wlat=3500 min=80 max=10000",
            &devs,
        )
        .unwrap();
        assert!(ioc.enabled());
        let p = ioc.params();
        assert_eq!(p.period_us, 7000);
        assert_eq!(p.margins.target, 481_033_000);
        assert_eq!((p.vrate_min, p.thr_ppm), (109_951, [100_000, 100_000]));
        assert_eq!(p.cost.coefs[0].page, 3_245_159);
        ioc.write_weight(0, 1, "8:0 200", &devs).unwrap();
        assert_eq!(ioc.weight(1), 200);
        assert_eq!(ioc.show_weight(1), "default 100\n8:0 200\n");
        assert_eq!(
            ioc.write_weight(0, 0, "50", &devs).unwrap_err().errno,
            Errno::EINVAL
        );
        assert_eq!(
            ioc.write_qos(0, "8:16 enable=1", &devs).unwrap_err().errno,
            Errno::ENODEV
        );
    }

    #[test]
    fn qd1_preset_follows_nr_requests_not_the_driver_tags() {
        // one driver tag: SSD_QD1 under `none`, but mq-deadline makes nr_requests
        // 2·min(1, 128) = 2 and blk_queue_depth() reads that
        let at = |nr_requests| {
            let l = QueueLimits {
                nr_requests,
                ..limits(false, 1)
            };
            Iocost::new(cfg(), &tree(), &l).autop
        };
        assert_eq!(at(1), model::AUTOP_SSD_QD1);
        assert_eq!(at(2), model::AUTOP_SSD_DFL);
    }

    #[test]
    fn auto_presets_from_queue() {
        let devs = DeviceTable {
            disks: vec![(8, 0)],
        };
        for (rot, qd, lat, period) in [
            (true, 32, 250_000, 500_000),
            (false, 1, 25_000, 50_000),
            (false, 64, 25_000, 50_000),
        ] {
            let mut ioc = Iocost::new(cfg(), &tree(), &limits(rot, qd));
            ioc.write_qos(0, "8:0 enable=1", &devs).unwrap();
            assert!(ioc.show_qos().contains(&format!("rlat={lat} ")));
            assert_eq!(ioc.params().period_us, period);
        }
    }
}
