//! mq-deadline as the stack's [`Elevator`]: the engine's requests become
//! [`DdRequest`]s (token = tag) and nanoseconds become jiffies.
//!
//! jiffies are counted as blk-throttle counts them (`crate::sim::jiffies`):
//! `INITIAL_JIFFIES` of a 64-bit kernel at t = 0, plus `floor(now · HZ / 1e9)`. The scheduler owns `nr_requests`
//! tags (`blk_mq_init_sched()`: `2 · min(hw_queue_depth, BLKDEV_DEFAULT_RQ)`, or
//! `[device] nr_requests`: `crate::sched::nr_requests`); the
//! engine keeps the driver at `hw_queue_depth`, so the rest wait here, in mq-deadline's
//! order.
//!
//! Every sample tick (100 ms) it makes one [`DeadlineRow`] per level that has seen a
//! request: what waits in the scheduler, what the driver holds, what moved in the
//! tick, and the debugfs `*_stats` totals; the recorder takes them at the next drain
//! (`deadline.csv` and its picture: `super::timeline`). [`ELEVATOR`] is its registry
//! entry.

use super::behaviour::{AsyncDepth, DeadlineBehaviour, DepthUpdated, behaviour_for};
use super::tunables::{Tunables, default_async_depth};
use super::{DdLoc, DdPrio, DdRequest, IoStats, MqDeadline};
use crate::blkcg::ioprio::Ioprio;
use crate::error::KeyError;
use crate::scenario::resolve::KernelSettings;
use crate::sim::jiffies;
use crate::sim::sbitmap::Shallow;
use crate::sim::{Dir, Ns};
use crate::stack::registry::{ElevatorDef, ElevatorSetup, Kconfig};
use crate::stack::{Elevator, PolicyId, Recorder, Request, TagAlloc};

/// mq-deadline's id among the stack's policies and elevators.
pub const ID: PolicyId = PolicyId(32);

/// mq-deadline's registration (`mq_deadline`, `elv_register()`).
pub const ELEVATOR: ElevatorDef = ElevatorDef {
    name: "mq-deadline",
    id: ID,
    attributes: super::tunables::NAMES,
    switches: Some("deadline."),
    kconfig: &[Kconfig::needed("MQ_IOSCHED_DEADLINE")],
    streams: &[&super::timeline::STREAM],
    files: &[],
    write_elsewhere: |_, _, _| Ok(()),
    caveat: None,
    configure,
};

/// Its behaviours for the variant's kernel version and `deadline.*` switches.
struct Setup {
    hz: u32,
    behaviour: DeadlineBehaviour,
}

fn configure(k: &KernelSettings) -> Result<Box<dyn ElevatorSetup>, KeyError> {
    let ov = k.switches("deadline.");
    Ok(Box::new(Setup {
        hz: k.hz,
        behaviour: behaviour_for(&k.version, &ov)?,
    }))
}

impl ElevatorSetup for Setup {
    fn describe(&self) -> String {
        self.behaviour.to_string()
    }
    fn build(
        &self,
        _rotational: bool,
        nr_requests: u32,
        nr_requests_before: u32,
        iosched: &[(String, String)],
    ) -> Result<Box<dyn Elevator>, KeyError> {
        // blk_mq_update_nr_requests() → dd_depth_updated(): async_depth follows the
        // write, or (before 7d337eef4aff) the nr_requests the queue had before it
        let b = self.behaviour;
        let depth_updated = match b.depth_updated {
            DepthUpdated::OldNr => nr_requests_before,
            DepthUpdated::NewNr => nr_requests,
        };
        let mut t = Tunables::new(self.hz, depth_updated, b);
        for (name, val) in iosched {
            t.store(name, val, b)
                .map_err(|e| KeyError::new(format!("device.{}", e.key), e.msg))?;
        }
        Ok(Box::new(MqDeadlineSched::new(
            MqDeadline::new(t, b),
            nr_requests,
            depth_updated,
        )))
    }
}

/// One level of mq-deadline at a sample tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineRow {
    /// The tick.
    pub at: Ns,
    pub prio: DdPrio,
    /// Waiting in the scheduler: inserted, not dispatched.
    pub queued: u32,
    /// `dd_owned_by_driver()`: dispatched, not completed.
    pub in_flight: u32,
    /// Dispatched and completed since the previous tick.
    pub dispatched: u32,
    pub completed: u32,
    /// The debugfs `*_stats` totals at the tick.
    pub totals: IoStats,
}

/// mq-deadline on one queue.
#[derive(Debug)]
pub struct MqDeadlineSched {
    dd: MqDeadline,
    nr_requests: u32,
    /// The `nr_requests` `dd_depth_updated()` last read.
    depth_updated: u32,
    start_jiffies: u64,
    /// Where each tag's request waits, while it does.
    loc: Vec<Option<DdLoc>>,
    /// Each level's totals at the previous tick.
    last: [IoStats; 3],
    /// Rows made since the last drain (at most one per level).
    rows: Vec<DeadlineRow>,
}

impl MqDeadlineSched {
    pub fn new(dd: MqDeadline, nr_requests: u32, depth_updated: u32) -> Self {
        MqDeadlineSched {
            start_jiffies: jiffies::initial_jiffies(dd.tunables().hz),
            dd,
            nr_requests,
            depth_updated,
            loc: Vec::new(),
            last: Default::default(),
            rows: Vec::new(),
        }
    }

    /// Where request `tag` waits here, if it does.
    fn at(&self, tag: u32) -> Option<DdLoc> {
        self.loc.get(tag as usize).copied().flatten()
    }

    fn jiffies(&self, now: Ns) -> u64 {
        jiffies::at(now, self.start_jiffies, u64::from(self.dd.tunables().hz))
    }
}

impl Elevator for MqDeadlineSched {
    fn name(&self) -> &'static str {
        ELEVATOR.name
    }
    fn id(&self) -> PolicyId {
        ID
    }
    fn nr_requests(&self) -> Option<u32> {
        Some(self.nr_requests)
    }
    fn limit_depth(&self, alloc: &TagAlloc) -> Option<Shallow> {
        self.dd.limit_depth(alloc.dir)
    }
    /// `dd_depth_updated()`: since the tag-reservation fix 1 (`async_depth` can be set
    /// that low later); before it the default `async_depth` it set; none before 5.14.
    fn min_shallow_depth(&self) -> Option<u32> {
        match self.dd.behaviour().async_depth {
            AsyncDepth::NrRequests => Some(1),
            a => default_async_depth(a, self.depth_updated),
        }
    }
    fn insert_requests(&mut self, rq: &Request, now: Ns) {
        let tag = rq.tag as usize;
        if self.loc.len() <= tag {
            self.loc.resize(tag + 1, None);
        }
        let d = DdRequest {
            token: u64::from(rq.tag),
            dir: rq.dir,
            sector: rq.sector,
            ioprio: rq.ioprio,
        };
        let j = self.jiffies(now);
        self.loc[tag] = self.dd.insert_request(d, false, j);
    }
    fn has_work(&self) -> bool {
        self.dd.has_work()
    }
    fn dispatch_request(&mut self, now: Ns) -> Option<u32> {
        let j = self.jiffies(now);
        let d = self.dd.dispatch_request(j)?;
        if let Some(l) = self.loc.get_mut(d.token as usize) {
            *l = None;
        }
        Some(d.token as u32)
    }
    fn merges(&self) -> bool {
        true
    }
    fn request_merge(&self, dir: Dir, ioprio: Ioprio, end: u64) -> Option<u32> {
        self.dd.request_merge(dir, ioprio, end).map(|t| t as u32)
    }
    fn request_merged(&mut self, tag: u32, sector: u64) {
        if let Some(at) = self.at(tag) {
            self.dd.request_merged(at, sector);
        }
    }
    fn requests_merged(&mut self, tag: u32, next: &Request) {
        let next_at = self.loc.get_mut(next.tag as usize).and_then(Option::take);
        let Some(at) = self.at(tag) else {
            return;
        };
        self.loc[tag as usize] = Some(self.dd.merged_requests(at, next_at, next.ioprio));
    }
    fn next_request(&self, tag: u32) -> Option<u32> {
        self.dd.neighbour(self.at(tag)?, true).map(|t| t as u32)
    }
    fn former_request(&self, tag: u32) -> Option<u32> {
        self.dd.neighbour(self.at(tag)?, false).map(|t| t as u32)
    }
    fn completed_request(
        &mut self,
        rq: &Request,
        _now: Ns,
        _q: &mut crate::sim::EventQueue,
    ) -> bool {
        // dd_finish_request()
        self.dd.finish_request(rq.ioprio);
        false
    }
    fn sample(&mut self, now: Ns) {
        for prio in DdPrio::ALL {
            let totals = self.dd.stats(prio);
            if totals.inserted == 0 {
                continue;
            }
            let last = std::mem::replace(&mut self.last[prio as usize], totals);
            self.rows.push(DeadlineRow {
                at: now,
                prio,
                queued: self.dd.waiting_in(prio) as u32,
                in_flight: self.dd.owned_by_driver(prio),
                dispatched: totals.dispatched.wrapping_sub(last.dispatched),
                completed: totals.completed.wrapping_sub(last.completed),
                totals,
            });
        }
    }
    fn drain(&mut self, rec: &mut dyn Recorder) {
        for row in self.rows.drain(..) {
            rec.row(&row);
        }
    }
}
