//! null_blk (drivers/block/null_blk/main.c): a device that does no I/O.
//!
//! Design
//! ------
//! - `irqmode` 0 (none) / 1 (softirq) complete a request at once, inside
//!   `null_queue_rq()` (`end_cmd()`; `blk_mq_complete_request()` completes on the
//!   submitting CPU when its hardware context serves only that CPU, as on the guest's
//!   one vCPU): `submit()` says so ([`Completion::Inline`]), so that the dispatching
//!   context pays the completion path (`[host] inline_complete_ns`), and the
//!   `Event::Device(tag)` is at `now`. `irqmode` 2 (timer) completes it
//!   `completion_nsec` later (`null_cmd_end_timer()`), from an interrupt.
//! - `mbps` (configfs bandwidth cap): a byte grant reset every 20 ms tick to
//!   `mb_per_tick(mbps)` (`nullb_bwtimer_fn()`); each dispatched request subtracts its
//!   bytes; the request that drives the grant below zero is refused
//!   ([`Completion::Requeued`]: the block layer puts it back on `hctx->dispatch`) and
//!   the queue stopped until the next tick restarts it (`null_handle_throttled()`,
//!   `blk_mq_start_stopped_hw_queues()` in `nullb_bwtimer_fn()`:
//!   [`BlockDevice::restarted`]), whose queue run serves the refused requests first and
//!   only then asks the elevator. The tick
//!   is an hrtimer started when the device is set up (time 0 here) and kept on that
//!   20 ms grid (`hrtimer_forward_now()`); it stops after a tick that found the grant
//!   untouched, and a request arriving then restarts it at its old, past expiry, so it
//!   fires at once: the first request after an idle spell refills the grant at once, and
//!   the next tick comes at the next point of the grid, not 20 ms later.
//! - A request larger than one tick's grant never completes: the tick *sets* the grant,
//!   so the requeued request overdraws it again at every tick (the real device hangs the
//!   same way). [`BlockDevice::check_request`] refuses such a set-up with the `mbps`
//!   that would do, before the run.
//! - `completion_nsec` only matters with `irqmode=2`; set with another mode it is a
//!   warning (null_blk takes it and ignores it).
//! - `badblocks` (configfs, `fault.rs`): a request touching a bad sector is processed
//!   as usual (it takes its bandwidth, completes at its time) and ends in EIO
//!   (`null_handle_badblocks()` in `null_process_cmd()`, checked once the request
//!   has passed the bandwidth cap).
//! - `timeout_inject/` (configfs fault attribute, CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION):
//!   a request it picks (`should_timeout_request()`, drawn at each dispatch, before the
//!   bandwidth cap) is started but never completed by the driver; the block layer
//!   times it out after null_blk's 5 s (`set->timeout = 5 * HZ`) and
//!   `null_timeout_rq()` ends it with BLK_STS_TIMEOUT (ETIMEDOUT). Simplified: it
//!   ends exactly 5 s after it started (the queue's timeout timer, rounded up to a
//!   whole second by `blk_add_timer()` and later by the timer wheel, is not modelled).
//!   `requeue_inject` is refused: a requeued request is dispatched again when blk-mq's
//!   restart machinery says (SCHED_RESTART, the 3 ms resource delay, the requeue
//!   work), which the pipeline does not model.
//! - Events: token = tag for completions, `TIMEOUT | tag` for an injected timeout,
//!   `TICK` for the bandwidth timer.

use super::config::Keys;
use super::fault::{Badblocks, BadblocksWrite, FaultAttr};
use super::{BlockDevice, Completion, DevRq, LatencyModel, QueueLimits};
use crate::error::KeyError;
use crate::sim::{Event, EventQueue, IoErr, NSEC_PER_SEC, Ns, SimRng, time_text};

/// Token of the bandwidth timer event.
const TICK: u64 = u64::MAX;
/// Token bit of an injected timeout's expiry (the tag below it).
const TIMEOUT: u64 = 1 << 62;
/// What `null_queue_rq()` did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dispatched {
    /// Completed within the call (irqmode 0/1).
    Completed,
    /// Started: its completion comes later (the timer of irqmode 2, or the block
    /// layer's timeout of a request `timeout_inject` picked).
    Started,
    /// Over the `mbps` grant: requeued, the queue stopped until the next tick.
    Requeued,
}

/// null_blk's tag-set timeout (`set->timeout = 5 * HZ`).
const RQ_TIMEOUT: Ns = 5 * NSEC_PER_SEC;
/// null_blk's TICKS_PER_SEC.
const TICKS_PER_SEC: u64 = 50;
const TIMER_INTERVAL: Ns = NSEC_PER_SEC / TICKS_PER_SEC;

/// mirrors mb_per_tick(): bytes granted per 20 ms tick.
pub fn mb_per_tick(mbps: u64) -> i64 {
    ((1u64 << 20) / TICKS_PER_SEC * mbps) as i64
}

/// Resolved null_blk configuration (configfs + queue sysfs names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub irqmode: u64,
    pub completion_nsec: u64,
    pub hw_queue_depth: u32,
    pub submit_queues: u64,
    pub blocksize: u32,
    /// MB (MiB, as null_blk's `size`).
    pub size: u64,
    pub memory_backed: u64,
    pub mbps: u64,
    pub max_sectors: u64,
    pub rotational: bool,
    pub max_sectors_kb: u32,
    pub dev: (u32, u32),
    pub name: String,
    /// configfs `badblocks` lines written before the device is powered on.
    pub badblocks: Vec<BadblocksWrite>,
    /// configfs `timeout_inject/` (probability 0: none).
    pub timeout_inject: FaultAttr,
}

impl Config {
    pub fn from_keys(k: &mut Keys) -> Result<Self, KeyError> {
        let irqmode = k.u64("irqmode", 1, 0, 2)?;
        let completion_nsec = k.u64("completion_nsec", 10_000, 0, u32::MAX as u64 * 1000)?;
        if irqmode != 2 {
            // only null_cmd_end_timer() (NULL_IRQ_TIMER) reads it
            k.warn(
                "completion_nsec",
                format!(
                    "has no effect with irqmode={irqmode}: only the timer mode (irqmode=2) \
                     completes a request completion_nsec after it is queued; irqmode 0 and \
                     1 complete it at once"
                ),
            );
        }
        let hw_queue_depth = k.u64("hw_queue_depth", 64, 1, 4096)? as u32;
        let submit_queues = k.u64("submit_queues", 1, 1, 1024)?;
        let blocksize = k.u64("blocksize", 512, 512, 4096)? as u32;
        if !blocksize.is_power_of_two() {
            return Err(KeyError::new(
                "device.blocksize",
                format!("`{blocksize}` is not accepted: expected a power of two in [512, 4096]"),
            ));
        }
        // null_alloc_dev(): dev->size = g_gb * 1024 with the module default gb=250 (MB)
        let size = k.u64("size", 250 * 1024, 1, 1 << 30)?;
        let memory_backed = k.u64("memory_backed", 0, 0, 1)?;
        let mbps = k.u64("mbps", 0, 0, 1 << 20)?;
        // null_config_discard/null_add_dev: max_sectors 0 → BLK_DEF_MAX_SECTORS-ish 255,
        // rounded down to the block size.
        let bs_sectors = (blocksize / 512) as u64;
        let ms = k.u64("max_sectors", 0, 0, 1 << 22)?;
        let ms = if ms == 0 { 255 } else { ms };
        let max_sectors = (ms / bs_sectors * bs_sectors).max(bs_sectors);
        let rotational = k.u64("rotational", 0, 0, 1)? == 1;
        let max_kb_default = (max_sectors / 2).max(1);
        let max_sectors_kb = k.u64(
            "max_sectors_kb",
            max_kb_default,
            (blocksize as u64 / 1024).max(1),
            max_kb_default,
        )? as u32;
        let dev = k.dev((252, 0))?;
        let name = k.name("nullb0")?;
        let badblocks = k
            .lines("badblocks")?
            .iter()
            .map(|l| BadblocksWrite::parse(l))
            .collect::<Result<_, _>>()
            .map_err(|e| KeyError::new("device.badblocks", e.to_string()))?;
        let timeout_inject = match k.table("timeout_inject")? {
            Some(t) => {
                let (a, resolved) = FaultAttr::from_table("timeout_inject", t)?;
                k.resolved.extend(resolved);
                a
            }
            None => FaultAttr::default(),
        };
        if k.has("requeue_inject") {
            return Err(KeyError::new(
                "device.requeue_inject",
                "not modelled: a requeued request is dispatched again when blk-mq's restart \
                 machinery says (SCHED_RESTART, the 3 ms resource delay, the requeue work), \
                 which the pipeline does not model; timeout_inject and badblocks are",
            ));
        }
        Ok(Config {
            irqmode,
            completion_nsec,
            hw_queue_depth,
            submit_queues,
            blocksize,
            size,
            memory_backed,
            mbps,
            max_sectors,
            rotational,
            max_sectors_kb,
            dev,
            name,
            badblocks,
            timeout_inject,
        })
    }
}

/// The null_blk device state.
pub struct NullBlk {
    cfg: Config,
    limits: QueueLimits,
    /// Bytes left in this tick (`nullb->cur_bytes`).
    cur_bytes: i64,
    /// `hrtimer_active(&nullb->bw_timer)`.
    timer_active: bool,
    /// The timer's expiry (next, or last if stopped), on the grid set up at time 0.
    timer_expires: Ns,
    /// A `TICK` event is in the queue.
    tick_pending: bool,
    /// The hardware queue is stopped (`blk_mq_stop_hw_queues()`) until the next tick.
    stopped: bool,
    /// The last tick restarted the stopped queue.
    restarted: bool,
    badblocks: Badblocks,
    /// By tag: how the request ended (`cmd->error`), None = OK.
    status: Vec<Option<IoErr>>,
    /// Entries of `status` set: completions need not look while there are none.
    failing: u32,
    timeout_inject: FaultAttr,
    /// The fault attributes' percentage draws.
    rng: SimRng,
}

impl NullBlk {
    pub fn new(cfg: Config, seed: u64) -> Self {
        let limits = QueueLimits {
            major: cfg.dev.0,
            minor: cfg.dev.1,
            name: cfg.name.clone(),
            rotational: cfg.rotational,
            hw_queue_depth: cfg.hw_queue_depth,
            nr_requests: cfg.hw_queue_depth,
            max_sectors_kb: cfg.max_sectors_kb,
            logical_block_size: cfg.blocksize,
            capacity: cfg.size << 20,
            // null_blk has a cache only with `cache_size` (not modelled; 0 by default)
            write_cache: false,
            queue_depth: None,
        };
        let throttled = cfg.mbps > 0;
        let mut badblocks = Badblocks::default();
        for &w in &cfg.badblocks {
            badblocks.write(w);
        }
        let status = vec![None; cfg.hw_queue_depth as usize];
        let timeout_inject = cfg.timeout_inject.clone();
        NullBlk {
            cur_bytes: mb_per_tick(cfg.mbps),
            cfg,
            limits,
            // nullb_setup_bwtimer(): started with the device, first expiry 20 ms on
            timer_active: throttled,
            timer_expires: TIMER_INTERVAL,
            tick_pending: false,
            stopped: false,
            restarted: false,
            badblocks,
            status,
            failing: 0,
            timeout_inject,
            rng: SimRng::new(seed, "nullb/fault"),
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Bytes left in the current tick's grant.
    pub fn grant(&self) -> i64 {
        self.cur_bytes
    }

    /// mirrors nullb_complete_cmd(): how request `rq`, past the bandwidth cap, ends.
    fn complete(
        &mut self,
        now: Ns,
        rq: DevRq,
        fake_timeout: bool,
        q: &mut EventQueue,
    ) -> Dispatched {
        if fake_timeout {
            // started, never completed: null_timeout_rq() ends it
            self.fail(rq.tag, IoErr::Etimedout);
            q.push(now + RQ_TIMEOUT, Event::Device(TIMEOUT | u64::from(rq.tag)));
            return Dispatched::Started;
        }
        // null_handle_cmd() -> null_process_cmd() -> null_handle_badblocks()
        if !self.badblocks.is_empty() && self.badblocks.check(rq.sector, rq.bytes.div_ceil(512)) {
            self.fail(rq.tag, IoErr::Eio);
        }
        if self.cfg.irqmode == 2 {
            // null_cmd_end_timer()
            q.push(now + self.cfg.completion_nsec, Event::Device(rq.tag as u64));
            Dispatched::Started
        } else {
            // end_cmd() (irqmode 0), or blk_mq_complete_request() completing on the
            // submitting CPU (irqmode 1: one hardware context per CPU, or one CPU)
            q.push(now, Event::Device(rq.tag as u64));
            Dispatched::Completed
        }
    }

    /// Request `tag` ends in `err` (`cmd->error`).
    fn fail(&mut self, tag: u32, err: IoErr) {
        if let Some(st) = self.status.get_mut(tag as usize) {
            self.failing += u32::from(st.is_none());
            *st = Some(err);
        }
    }

    /// `if (!hrtimer_active()) hrtimer_restart()` at the top of null_handle_throttled().
    /// The timer runs without events while nothing is dispatched: its first expiry is
    /// only queued once there is traffic, and one that passed untouched stopped it.
    fn arm_timer(&mut self, now: Ns, q: &mut EventQueue) {
        if self.tick_pending {
            return;
        }
        if self.timer_active && self.timer_expires <= now {
            // it fired with the grant untouched: HRTIMER_NORESTART
            self.timer_active = false;
        }
        // a restart keeps the old expiry; a past one fires at once
        let at = if self.timer_active {
            self.timer_expires
        } else {
            now
        };
        self.timer_active = true;
        self.tick_pending = true;
        q.push(at, Event::Device(TICK));
    }

    /// mirrors null_queue_rq() → null_handle_throttled() → null_handle_cmd().
    fn dispatch(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Dispatched {
        // null_queue_rq(): the timeout draw comes first, at every dispatch
        let fake_timeout = self.timeout_inject.probability > 0
            && self.timeout_inject.should_fail(1, &mut self.rng);
        if self.cfg.mbps > 0 {
            self.arm_timer(now, q);
            self.cur_bytes -= rq.bytes as i64;
            if self.cur_bytes < 0 {
                self.stopped = true;
                return Dispatched::Requeued;
            }
        }
        self.complete(now, rq, fake_timeout, q)
    }
}

impl BlockDevice for NullBlk {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Completion {
        if self.stopped {
            // BLK_STS_DEV_RESOURCE without a draw: only a deferred dispatch (a
            // `dispatch_ns` gap) reaches a stopped queue
            return Completion::Requeued;
        }
        match self.dispatch(now, rq, q) {
            Dispatched::Completed => Completion::Inline,
            Dispatched::Started => Completion::Later,
            Dispatched::Requeued => Completion::Requeued,
        }
    }

    fn on_event(&mut self, now: Ns, token: u64, q: &mut EventQueue, done: &mut Vec<u32>) {
        if token != TICK {
            done.push((token & !TIMEOUT) as u32);
            return;
        }
        // mirrors nullb_bwtimer_fn()
        self.tick_pending = false;
        let full = mb_per_tick(self.cfg.mbps);
        if self.cur_bytes == full {
            self.timer_active = false;
            return;
        }
        self.cur_bytes = full;
        self.restarted = std::mem::take(&mut self.stopped);
        // hrtimer_forward_now(): the next point of the grid after now
        if self.timer_expires <= now {
            self.timer_expires +=
                (now - self.timer_expires) / TIMER_INTERVAL * TIMER_INTERVAL + TIMER_INTERVAL;
        }
        self.tick_pending = true;
        q.push(self.timer_expires, Event::Device(TICK));
    }

    fn restarted(&mut self) -> bool {
        std::mem::take(&mut self.restarted)
    }

    fn model(&self) -> &'static str {
        "nullb"
    }

    fn latency_model(&self) -> LatencyModel {
        let c = &self.cfg;
        let mut text = match c.irqmode {
            2 => format!(
                "timer (irqmode=2): every request completes completion_nsec = {} after \
                 dispatch, flat",
                time_text(c.completion_nsec)
            ),
            m => format!("irqmode={m}: every request completes at once, no device time"),
        };
        if c.mbps > 0 {
            text += &format!(", capped at {} MiB/s in 20 ms grants", c.mbps);
        }
        LatencyModel {
            text,
            keys: vec!["irqmode", "completion_nsec", "mbps"],
        }
    }

    /// With `mbps`, a request larger than one tick's grant never completes:
    /// null_handle_throttled() takes its bytes off the grant and requeues it when the
    /// grant goes below zero, and nullb_bwtimer_fn() *sets* the grant at the next tick,
    /// so the request overdraws it again, tick after tick (the kernel hangs the same way:
    /// it does not let the request through after a tick).
    fn check_request(&self, bytes: u64) -> Result<(), KeyError> {
        let grant = mb_per_tick(self.cfg.mbps);
        if self.cfg.mbps == 0 || bytes <= grant as u64 {
            return Ok(());
        }
        let per_mbps = mb_per_tick(1) as u64;
        Err(KeyError::new(
            "device.mbps",
            format!(
                "`{}` grants {grant} bytes per 20 ms tick, less than one {bytes}-byte request: \
                 null_handle_throttled() requeues a request that overdraws the grant and each \
                 tick resets the grant, so that request never completes (a real null_blk hangs \
                 on it too); accepted: mbps >= {} (or 0, no cap), or requests of at most \
                 {grant} bytes",
                self.cfg.mbps,
                bytes.div_ceil(per_mbps)
            ),
        ))
    }

    fn may_fail(&self) -> bool {
        !self.badblocks.is_empty() || self.timeout_inject.probability > 0
    }

    fn status(&mut self, tag: u32) -> Option<IoErr> {
        if self.failing == 0 {
            return None;
        }
        let err = self.status.get_mut(tag as usize)?.take();
        self.failing -= u32::from(err.is_some());
        err
    }

    fn badblocks_mut(&mut self) -> Option<&mut Badblocks> {
        Some(&mut self.badblocks)
    }
}
