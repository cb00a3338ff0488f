//! Device models: what sits below the block layer's tag pool.
//!
//! Design
//! ------
//! A device receives requests that already hold a tag (the pipeline enforces
//! `nr_requests`/`hw_queue_depth`) and reports each one complete later, through its
//! own events on the shared [`EventQueue`]. It never sees cgroups: the controllers
//! live above it. Every model is a small state machine in its own file:
//!
//! - `nullb.rs` — null_blk: `irqmode` 0/1 (complete at once) or 2 (timer,
//!   `completion_nsec`), and the configfs `mbps` cap enforced in 20 ms ticks (a request
//!   larger than one tick's grant would never complete: refused before the run);
//! - `ssd.rs`   — `ssd` in its default `mode = "simple"`: parallel channels, base
//!   latency + size/bandwidth per direction, optional seeded jitter;
//! - `flash.rs` + `ftl.rs` — `ssd` with `mode = "ftl"` (or a `preset`): NAND dies and
//!   channels in time (FEMU's reservation model) over a page-mapped FTL with
//!   over-provisioning, a write buffer, greedy GC and preconditioning;
//! - `hdd.rs`   — one head: seek by distance, rotational latency, transfer rate;
//! - `cloud.rs` — a cloud volume: a backend FIFO released by an IOPS bucket (256 KiB
//!   units) and a bandwidth bucket refilled in chunks, then a base latency; credit
//!   bursting; presets (`azure-p20`, ...).
//!
//! Any model may sit behind `dispatch.rs` (`dispatch_ns`): the driver's fixed cost
//! between a completion and the next dispatch on the hardware queue.
//!
//! `blkcg-sim device fit`, which fits `ssd`, `hdd` or `cloud` keys to a user's fio
//! measurements of a real disk, is not a model and lives outside this layer
//! (`crate::device_fit`: it runs fio jobs through `tune` and prints `validate`'s table).
//!
//! Device keys in a scenario use the real thing's names (null_blk configfs names,
//! block-queue sysfs names), so a scenario maps one-to-one onto a real setup.
//!
//! Extra `iostat.csv` columns: a model names them once (`stat_columns()`, e.g. the
//! SSD's NAND MiB/s, write amplification and free blocks; the cloud volume's throttled
//! IOs) and fills their values when each second closes (`stat_row()`), so the recorder
//! streams the header first and every row after.
//!
//! What a run assumed of the device: each model describes its own latency model in one
//! phrase, with the `[device]` keys that decide it (`latency_model()`), for the run's
//! `assumed:` block (`crate::report::assumed`) — so a cloud volume's flat latency
//! (tails are opt-in) is said, not left to be guessed.
//!
//! Faults: a model may fail a request (`status()`, the request's `blk_status_t` as
//! an errno); null_blk does for its configfs `badblocks` and `timeout_inject/`
//! (`fault.rs`). Removing the
//! disk is the block layer's business (`del_gendisk()`, in the pipeline), not the
//! model's.

use crate::error::KeyError;
use crate::sim::{Dir, EventQueue, IoErr, Ns};
use fault::Badblocks;

/// A request handed to the driver: `tag` identifies it in the completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevRq {
    pub tag: u32,
    pub dir: Dir,
    /// Start, in 512-byte sectors.
    pub sector: u64,
    pub bytes: u64,
}

/// What the block layer reads from the device's queue (sysfs `queue/` + `dev`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueLimits {
    /// `MAJ:MIN` of the whole disk.
    pub major: u32,
    pub minor: u32,
    /// Name as it would appear under /sys/block (e.g. `nullb0`, `sda`).
    pub name: String,
    /// queue/rotational
    pub rotational: bool,
    /// Hardware queue depth (tags).
    pub hw_queue_depth: u32,
    /// queue/nr_requests with scheduler `none`: the hardware depth as the model sets
    /// it up; `[device] nr_requests` may lower it (`crate::sched::nr_requests`).
    pub nr_requests: u32,
    /// queue/max_sectors_kb: larger bios are split.
    pub max_sectors_kb: u32,
    /// queue/logical_block_size in bytes.
    pub logical_block_size: u32,
    /// Capacity in bytes (fio's default file size when `size` is not given).
    pub capacity: u64,
    /// queue/write_cache is "write back" (`blk_queue_write_cache()`): the device has a
    /// volatile cache. wbt lets a wb's writes drain before waking writers then.
    pub write_cache: bool,
    /// `q->queue_depth`, which only SCSI sets (`blk_set_queue_depth()`: the device's
    /// queue depth); None elsewhere.
    pub queue_depth: Option<u32>,
}

impl QueueLimits {
    /// `blk_queue_depth()`: `q->queue_depth` where set, else `q->nr_requests`.
    pub fn blk_queue_depth(&self) -> u32 {
        self.queue_depth.unwrap_or(self.nr_requests)
    }

    /// An NVMe SSD's queue (both `ssd` modes): `depth` tags, scheduler `none`, 512 B
    /// logical blocks.
    pub fn nvme(
        dev: (u32, u32),
        name: &str,
        depth: u32,
        max_sectors_kb: u32,
        capacity: u64,
    ) -> Self {
        QueueLimits {
            major: dev.0,
            minor: dev.1,
            name: name.to_string(),
            rotational: false,
            hw_queue_depth: depth,
            nr_requests: depth,
            max_sectors_kb,
            logical_block_size: 512,
            capacity,
            // NVMe's VWC bit, set on client drives
            write_cache: true,
            queue_depth: None,
        }
    }
}

/// What a model's latency comes from, as a run's `assumed:` block says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyModel {
    /// One phrase: the service time and whether it varies from I/O to I/O.
    pub text: String,
    /// The `[device]` keys that decide it (those the scenario set are named so).
    pub keys: Vec<&'static str>,
}

/// Where a request the driver received completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Later: an interrupt (or a timer) ends it, and wakes whoever waits for it.
    Later,
    /// Inside `->queue_rq()`: the driver completed it at once on the submitting CPU
    /// (null_blk irqmode 0/1: `end_cmd()`, or `blk_mq_complete_request()` completing
    /// locally), so the dispatching context runs its completion path.
    Inline,
    /// Refused for now (`BLK_STS_DEV_RESOURCE` after `blk_mq_stop_hw_queues()`: null_blk
    /// over its `mbps` grant): the block layer puts it back on `hctx->dispatch`, and the
    /// hardware queue stays stopped until the driver restarts it
    /// ([`BlockDevice::restarted`]).
    Requeued,
}

/// A device model. See the module comment.
pub trait BlockDevice {
    fn limits(&self) -> &QueueLimits;
    /// The driver receives `rq` at `now` (its tag is held until completion). Its
    /// completion is an `Event::Device` this pushes now or later; `Inline` says the
    /// driver ended it within this call (the event is at `now`).
    fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Completion;
    /// One of this device's `Event::Device(token)` events fired at `now`; push the
    /// tags of requests that complete now onto `done`.
    fn on_event(&mut self, now: Ns, token: u64, q: &mut EventQueue, done: &mut Vec<u32>);
    /// Asked after `on_event`: the tags of requests the driver refused outside a
    /// `submit()` call (a deferred dispatch met a stopped queue), in order; the block
    /// layer puts them back on `hctx->dispatch` as it does a [`Completion::Requeued`].
    fn requeued(&mut self, _out: &mut Vec<u32>) {}
    /// Asked after `on_event`: the driver restarted its stopped hardware queue in that
    /// event (`blk_mq_start_stopped_hw_queues(q, true)`: a queue run by kblockd).
    fn restarted(&mut self) -> bool {
        false
    }
    /// Asked after `on_event`: a deferred dispatch in that event handed requests to
    /// the driver that ended them inside `->queue_rq()` ([`Completion::Inline`]), so
    /// the queue run that dispatched them asks the elevator again after them.
    fn dispatched_inline(&mut self) -> bool {
        false
    }
    /// The model's name (`nullb`, `ssd`, `hdd`, `cloud`).
    fn model(&self) -> &'static str;
    /// Its latency model as configured.
    fn latency_model(&self) -> LatencyModel;
    /// Whether a request of `bytes` can ever complete; an error names the device key
    /// that prevents it and what would do. Checked before a run for the largest
    /// request each fio job can issue.
    fn check_request(&self, _bytes: u64) -> Result<(), KeyError> {
        Ok(())
    }
    /// Whether the model as configured can fail a request (else `status()` is not
    /// asked; a `badblocks` write makes it ask from then on).
    fn may_fail(&self) -> bool {
        false
    }
    /// How request `tag`, just reported done by `on_event`, ended: None = success.
    fn status(&mut self, _tag: u32) -> Option<IoErr> {
        None
    }
    /// The model's bad-sector list, if it has one (null_blk's configfs `badblocks`).
    fn badblocks_mut(&mut self) -> Option<&mut Badblocks> {
        None
    }
    /// Extra `iostat.csv` columns this model reports, fixed for the run (the recorder
    /// writes the header before the first row).
    fn stat_columns(&self) -> &'static [&'static str] {
        &[]
    }
    /// The values of [`Self::stat_columns`] for the second that just ended, in order;
    /// per-second counters restart.
    fn stat_row(&mut self, _out: &mut Vec<f64>) {}
    /// Counters of the whole run so far, as (name, count) in a fixed order: what the
    /// summary and json+ show of the device (the FTL's pages written by the host and
    /// to the NAND, from which the report derives the write amplification, and its GC
    /// counts). None for models without such counters, whose outputs then stay as
    /// they were.
    fn run_counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

pub mod cloud;
pub mod config;
pub mod dispatch;
pub mod fault;
pub mod flash;
pub mod ftl;
pub mod hdd;
pub mod nullb;
pub mod ssd;
