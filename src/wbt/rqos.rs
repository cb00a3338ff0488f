//! wbt's place in the stack: the rq-qos entry `RQ_QOS_WBT`, made with the queue
//! (`blk_register_queue()` → `wbt_enable_default()` → `wbt_init()`), its hooks as
//! `wbt_rqos_ops` has them (`throttle`, `track`, `issue`, `done`), its window timer,
//! and its registry entry.
//!
//! Every blk-mq disk has it (Debian builds `CONFIG_BLK_WBT_MQ=y`), but it only ever acts
//! on buffered writeback: a run where no job writes through the page cache meets it
//! only in reads' timestamps, never in a decision, so the run makes it only when a job
//! writes buffered or the scenario sets `[device] wbt_lat_usec` — which keeps its hooks
//! off the hot path of the direct-I/O runs. `check` shows its setting either way.

use super::{EnableState, RqWb, WbtConfig, behaviour_for, store_lat_usec};
use crate::blkcg::{CgroupTree, DeviceTable, Errno, KernelError};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::kernel_version::KernelVersion;
use crate::scenario::resolve::Resolved;
use crate::sim::jiffies;
use crate::sim::{BioId, BioSlab, EventQueue, Ns};
use crate::stack::registry::{ActsOn, Creation, HookKind, Kconfig, PolicyDef, PolicySetup};
use crate::stack::{
    BlkcgPolicy, Hooks, PolicyId, PolicyTimer, Recorder, Request, RqQos, RqQosEntry, RqQosOps,
};

/// wbt's id: 16 + `RQ_QOS_WBT`.
pub const ID: PolicyId = PolicyId(16);

/// wbt's registration (`wbt_rqos_ops`; no cgroup file: `queue/wbt_lat_usec` is the
/// disk's, `[device] wbt_lat_usec`).
pub const POLICY: PolicyDef = PolicyDef {
    name: "wbt",
    hooks: HookKind::RqQos,
    id: ID,
    files: &[],
    switches: Some("wbt."),
    kconfig: &[Kconfig::needed("BLK_WBT"), Kconfig::needed("BLK_WBT_MQ")],
    streams: &[&super::timeline::STREAM],
    reports: &[],
    refuses: |_: &KernelVersion| None,
    configure,
    created: Creation::WithQueue(made_with_queue),
    acts_on: ActsOn::BufferedWrites,
};

/// Whether the run makes wbt (see the module header).
fn made_with_queue(r: &Resolved, _limits: &QueueLimits, buffered_writes: bool) -> bool {
    buffered_writes || r.device.contains_key("wbt_lat_usec")
}

/// `[device] wbt_lat_usec` as written, if it is: checked by the device's keys
/// (`crate::device::config`), so an error here cannot happen in a run.
fn written_lat(r: &Resolved) -> Result<Option<i64>, KeyError> {
    let Some(v) = r.device.get("wbt_lat_usec") else {
        return Ok(None);
    };
    let line = crate::sched::echo_line("wbt_lat_usec", v)?;
    store_lat_usec(&line)
        .map(Some)
        .map_err(|e| KeyError::new("device.wbt_lat_usec", e.to_string()))
}

struct Setup {
    behaviour: super::WbtBehaviour,
    hz: u32,
    lat_usec: Option<i64>,
}

fn configure(r: &Resolved) -> Result<Box<dyn PolicySetup>, KeyError> {
    let v =
        KernelVersion::parse(&r.kernel.version).map_err(|m| KeyError::new("kernel.version", m))?;
    Ok(Box::new(Setup {
        behaviour: behaviour_for(&v, &r.kernel.switches("wbt."))?,
        hz: r.kernel.hz,
        lat_usec: written_lat(r)?,
    }))
}

impl PolicySetup for Setup {
    fn label(&self) -> &'static str {
        "wbt"
    }
    fn describe(&self) -> String {
        let lat = match self.lat_usec {
            None => "default (2000 non-rotational, 75000 rotational)".to_string(),
            Some(-1) => "-1 (the default)".to_string(),
            Some(0) => "0 (off)".to_string(),
            Some(v) => v.to_string(),
        };
        format!("wbt_lat_usec={lat} {}", self.behaviour)
    }
    fn build(&self, _tree: &CgroupTree, limits: &QueueLimits, trace: bool) -> Hooks {
        let mut wb = RqWb::new(WbtConfig {
            behaviour: self.behaviour,
            hz: self.hz,
            start_jiffies: jiffies::initial_jiffies(self.hz),
            // blk_queue_depth(): the SCSI disk's depth, else q->nr_requests (the
            // scheduler's with an elevator)
            queue_depth: limits.blk_queue_depth(),
            rotational: limits.rotational,
            write_cache: limits.write_cache,
            lat_usec: self.lat_usec,
            name: format!("{}:{}", limits.major, limits.minor),
        });
        wb.set_tracing(trace);
        Hooks::RqQos(RqQosEntry::Wbt(Box::new(WbtEntry {
            wb,
            timer: PolicyTimer::default(),
        })))
    }
}

/// The rq-qos entry: [`RqWb`] and its timer event.
pub struct WbtEntry {
    pub wb: RqWb,
    /// The window's timer (`cb->timer`).
    timer: PolicyTimer,
}

impl WbtEntry {
    /// `mod_timer()`: push the window's end if it moved.
    fn push_timer(&mut self, now: Ns, q: &mut EventQueue) {
        self.timer.arm(ID, self.wb.timer_at(), now, q);
    }
}

impl BlkcgPolicy for WbtEntry {
    fn id(&self) -> PolicyId {
        ID
    }
    fn write(
        &mut self,
        _now: Ns,
        file: &str,
        _cg: u32,
        _line: &str,
        _devs: &DeviceTable,
        _q: &mut EventQueue,
    ) -> Result<(), KernelError> {
        // the registry routes no file here: wbt has none
        Err(KernelError::new(
            Errno::ENOENT,
            format!("wbt has no cgroup file {file}"),
        ))
    }
    fn on_timer(
        &mut self,
        now: Ns,
        token: u64,
        q: &mut EventQueue,
        _bios: &mut BioSlab,
        out: &mut Vec<BioId>,
    ) {
        if !self.timer.fires(token) {
            return;
        }
        self.wb.timer_fn(now);
        out.extend(self.wb.take_woken());
        self.push_timer(now, q);
    }
    fn set_tracing(&mut self, on: bool) {
        self.wb.set_tracing(on);
    }
    fn drain(&mut self, rec: &mut dyn Recorder) {
        for row in self.wb.take_rows() {
            rec.row(&row);
        }
        for line in self.wb.take_trace() {
            rec.trace(line);
        }
    }
    fn exit(&mut self, _now: Ns, _q: &mut EventQueue) {
        // rq_qos_exit() → wbt_exit(): the stat callback goes
        self.timer.shutdown();
        self.wb.exit();
    }
    fn summary_line(&self) -> Option<String> {
        let w = &self.wb;
        let f = &w.figures;
        let state = match w.enable_state {
            EnableState::OnDefault => format!("on, target {} µs", w.min_lat_nsec / 1000),
            EnableState::OnManual => format!(
                "on, target {} µs ([device] wbt_lat_usec)",
                w.min_lat_nsec / 1000
            ),
            EnableState::OffDefault => "off while blk-iocost is enabled (iocost.wbt=off)".into(),
            EnableState::OffManual => "off ([device] wbt_lat_usec = 0)".into(),
        };
        if f.windows == 0 && f.sleeps == 0 {
            return Some(format!("wbt (writeback throttling): {state}"));
        }
        Some(format!(
            "wbt (writeback throttling): {state}; {} windows, {} over the target; a writeback \
             bio's submitter waited for a slot {} times; the deepest step was {} (see wbt.csv)",
            f.windows, f.exceeded, f.sleeps, f.max_step
        ))
    }
    fn figures(&self) -> Vec<(&'static str, f64)> {
        let f = &self.wb.figures;
        vec![
            ("wbt.sleeps", f.sleeps as f64),
            ("wbt.windows", f.windows as f64),
            ("wbt.windows_exceeded", f.exceeded as f64),
            ("wbt.scale_downs", f.scale_downs as f64),
            ("wbt.max_step", f64::from(f.max_step)),
            ("wbt.lat_usec", self.wb.lat_usec_shown() as f64),
        ]
    }
}

impl RqQos for WbtEntry {
    fn ops(&self) -> RqQosOps {
        RqQosOps {
            track: true,
            issue: true,
            done: true,
            ..RqQosOps::default()
        }
    }
    fn throttle(
        &mut self,
        now: Ns,
        id: BioId,
        bios: &mut BioSlab,
        q: &mut EventQueue,
        _woken: &mut Vec<BioId>,
    ) -> bool {
        let go = self.wb.throttle(now, id, bios.get(id));
        self.push_timer(now, q);
        go
    }
    fn track(&mut self, _now: Ns, rq: &Request, bio: &crate::sim::Bio) {
        self.wb.track(rq.tag, bio);
    }
    fn issue(&mut self, now: Ns, rq: &Request) {
        self.wb.issue(now, rq.tag);
    }
    fn done(&mut self, now: Ns, rq: &Request, q: &mut EventQueue, woken: &mut Vec<BioId>) {
        self.wb.done(now, rq.tag, rq.dir);
        woken.extend(self.wb.take_woken());
        self.push_timer(now, q);
    }
    fn bdp_sleep(&mut self, now: Ns, cg: u32) {
        self.wb.bdp_sleep(now, cg);
    }
    fn wbt_default(&mut self, enable: bool) {
        self.wb.set_default(enable);
        if self.wb.timer_at().is_none() {
            self.timer.cancel();
        }
    }
}
