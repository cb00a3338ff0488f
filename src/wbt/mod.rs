//! wbt, writeback throttling (`block/blk-wbt.c`, 6.12; facts:
//! `shared/spec/controllers-next.md` §1.5): an rq-qos entry every blk-mq disk gets
//! with its queue, which keeps buffered writeback from filling the device's queue
//! while someone reads.
//!
//! Idea (as in the kernel's header comment, "loosely based on CoDel"): wbt counts the
//! buffered writes in flight and lets a writeback bio on only while that count is
//! below a limit; the submitter (a flusher, or an `fsync()`) sleeps otherwise. The
//! limit has three levels from one depth, `max_depth`: the whole of it for writeback
//! someone waits for (`REQ_SYNC`, or a writer paused in `balance_dirty_pages()` in the
//! last second), a quarter for background writeback or while reads came and went in
//! the last 100 ms, half otherwise (`get_limit()`, `calc_wb_limits()`). `max_depth`
//! itself moves in steps (`struct rq_depth`): a window of 100 ms watches the completion
//! latency of every request (`blk_stat`); a window whose fastest read took longer than
//! the target (`wbt_lat_usec`, 2 ms non-rotational, 75 ms rotational) halves it and
//! shortens the next window to `100 ms / sqrt(step + 1)`; a good window doubles it
//! back, and with writes alone the step may go negative, up to 3/4 of the queue. A
//! window with too few samples keeps the state, and after five such windows drifts
//! back to step 0.
//!
//! Only writes that are not O_DIRECT are tracked (`REQ_SYNC | REQ_IDLE` is an O_DIRECT
//! write): in the simulator, the page cache's writeback bios
//! (`crate::sim::writeback`). A read is only timestamped (`last_issue`, `last_comp`).
//!
//! Moving parts and where they live:
//! - this file — [`RqWb`] (`struct rq_wb`): the depth steps (`rq_depth_*()` of
//!   `block/blk-rq-qos.c`), the limits, the wait queue with `rq_qos_wait()`'s
//!   hand-over, the window (`wb_timer_fn()`, `latency_exceeded()`), the enable state
//!   and `queue/wbt_lat_usec` ([`store_lat_usec`]); [`WbtBehaviour`], the switches;
//! - `rqos.rs` — its place in the stack: the registry entry (made with the queue,
//!   `wbt_enable_default()`), the hooks and the window's timer event;
//! - `timeline.rs` — `wbt.csv`, one line per window, and its picture.
//!
//! Left out: the swap and discard wait queues (no bio is either here); requeues
//! (nothing requeues); a `wbt_lat_usec` write while the run goes (it is set once, as
//! `[device] wbt_lat_usec`); 6.1's wake-up of every sleeper when wbt is disabled with
//! writes in flight (only a write of `wbt_lat_usec` disables it there, and that happens
//! before the run).

pub mod rqos;
pub mod timeline;

use std::collections::VecDeque;

use crate::blkcg::kstrto::kstrtos64;
use crate::blkcg::{Errno, KernelError};
use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
use crate::sim::bio::req;
use crate::sim::{Bio, BioId, Dir, NSEC_PER_SEC, Ns, jiffies};
pub use timeline::{WbtRow, WindowStatus};

/// `RWB_DEF_DEPTH`: the depth at step 0 (at most the queue's).
pub const RWB_DEF_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`: the window at step 0 and below.
pub const RWB_WINDOW_NSEC: u64 = 100_000_000;
/// `RWB_MIN_WRITE_SAMPLES`: writes a window needs to judge the reads.
const RWB_MIN_WRITE_SAMPLES: u64 = 3;
/// `RWB_UNKNOWN_BUMP`: windows without enough samples before drifting to step 0.
const RWB_UNKNOWN_BUMP: u32 = 5;

/// `wbt_flags`, per request.
const WBT_TRACKED: u8 = 1;
const WBT_READ: u8 = 2;

/// `wbt_default_latency_nsec()`: 2 ms non-rotational, 75 ms rotational.
pub fn default_latency_nsec(rotational: bool) -> u64 {
    if rotational { 75_000_000 } else { 2_000_000 }
}

/// Whose dirty-throttling pauses tell wbt that a writer waits (`wb_recent_wait()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecentWait {
    /// Before 6.8: `wb->dirty_sleep` of the disk's root wb, so a writer paused in a
    /// non-root cgroup (its own wb) is not seen (6.1.192 reads it so).
    RootWb,
    /// 6.8 on (Jan Kara, "blk-wbt: Fix detection of dirty-throttled tasks"):
    /// `bdi->last_bdp_sleep`, any writer of the disk.
    Bdi,
}

impl Named for RecentWait {
    const NAMES: &'static [(&'static str, Self)] = &[("root-wb", Self::RootWb), ("bdi", Self::Bdi)];
}

/// wbt's behaviours that differ between kernel versions (`wbt.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WbtBehaviour {
    pub recent_wait: RecentWait,
}

impl std::fmt::Display for WbtBehaviour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "wbt.recent_wait={}", self.recent_wait.name())
    }
}

/// The behaviour of kernel `version`, then `overrides` (`wbt.*`) applied in order.
pub fn behaviour_for(
    version: &KernelVersion,
    overrides: &[(String, String)],
) -> Result<WbtBehaviour, KeyError> {
    let mut b = WbtBehaviour {
        recent_wait: if version.before(6, 8) {
            RecentWait::RootWb
        } else {
            RecentWait::Bdi
        },
    };
    for (key, val) in overrides {
        match key.as_str() {
            "wbt.recent_wait" => b.recent_wait = Named::parse(key, val)?,
            k if k.starts_with("wbt.") => {
                return Err(KeyError::new(
                    key.as_str(),
                    "unknown wbt behaviour (accepted: wbt.recent_wait)",
                ));
            }
            _ => {}
        }
    }
    Ok(b)
}

/// `echo LINE > queue/wbt_lat_usec` (`queue_wb_lat_store()`): the value as written,
/// `-1` for "the default target", `0` for off, else microseconds.
pub fn store_lat_usec(line: &str) -> Result<i64, KernelError> {
    let v = kstrtos64(line).map_err(|e| {
        KernelError::new(
            e,
            format!(
                "`{}`: a decimal number of microseconds (0 = off, -1 = the default)",
                line.trim_end()
            ),
        )
    })?;
    if v < -1 {
        return Err(KernelError::new(
            Errno::EINVAL,
            format!("{v}: at least -1 (the default target)"),
        ));
    }
    Ok(v)
}

/// `WBT_STATE_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnableState {
    OnDefault = 1,
    OnManual = 2,
    OffDefault = 3,
    OffManual = 4,
}

/// `struct rq_depth` and `rq_depth_calc_max_depth()` / `_scale_up()` / `_scale_down()`
/// (`block/blk-rq-qos.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RqDepth {
    pub max_depth: u32,
    pub scale_step: i32,
    scaled_max: bool,
    queue_depth: u32,
    default_depth: u32,
}

impl RqDepth {
    /// `rq_depth_calc_max_depth()`: true when the depth cannot grow further.
    fn calc_max_depth(&mut self) -> bool {
        if self.queue_depth == 1 {
            // a QD1 device keeps one request ready: 2, or 1 once scaled down
            if self.scale_step > 0 {
                self.max_depth = 1;
                return false;
            }
            self.max_depth = 2;
            return true;
        }
        let mut depth = self.default_depth.min(self.queue_depth);
        let mut ret = false;
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            depth = 1
                + ((depth - 1)
                    .checked_shl(self.scale_step.unsigned_abs())
                    .unwrap_or(0));
            if depth > maxd {
                depth = maxd;
                ret = true;
            }
        }
        self.max_depth = depth;
        ret
    }

    /// `rq_depth_scale_up()`: false when it could not.
    fn scale_up(&mut self) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        true
    }

    /// `rq_depth_scale_down()`: false when at depth 1 already.
    fn scale_down(&mut self, hard_throttle: bool) -> bool {
        if self.max_depth == 1 {
            return false;
        }
        if self.scale_step < 0 && hard_throttle {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        true
    }
}

/// `struct blk_rq_stat` of one direction in a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RqStat {
    pub min: u64,
    pub max: u64,
    pub batch: u64,
    pub nr_samples: u64,
}

impl Default for RqStat {
    /// `blk_rq_stat_init()`.
    fn default() -> Self {
        RqStat {
            min: u64::MAX,
            max: 0,
            batch: 0,
            nr_samples: 0,
        }
    }
}

impl RqStat {
    /// `blk_rq_stat_add()`.
    fn add(&mut self, v: u64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.batch += v;
        self.nr_samples += 1;
    }

    /// The mean, as `blk_rq_stat_sum()` leaves it.
    pub fn mean(&self) -> u64 {
        self.batch.checked_div(self.nr_samples).unwrap_or(0)
    }
}

/// What wbt is set up with.
#[derive(Debug, Clone)]
pub struct WbtConfig {
    pub behaviour: WbtBehaviour,
    pub hz: u32,
    /// jiffies at t = 0.
    pub start_jiffies: u64,
    /// `blk_queue_depth()` when wbt was made.
    pub queue_depth: u32,
    pub rotational: bool,
    /// `blk_queue_write_cache()`.
    pub write_cache: bool,
    /// `queue/wbt_lat_usec` as the scenario wrote it ([`store_lat_usec`]), if it did.
    pub lat_usec: Option<i64>,
    /// The disk's `MAJ:MIN`, as the tracepoints name it.
    pub name: String,
}

/// Counts of the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WbtFigures {
    /// Writeback bios whose submitter slept for a slot.
    pub sleeps: u64,
    pub windows: u64,
    pub exceeded: u64,
    pub scale_downs: u64,
    pub scale_ups: u64,
    /// The highest step reached (the smallest depth).
    pub max_step: i32,
}

/// wbt on one disk (`struct rq_wb`).
#[derive(Debug)]
pub struct RqWb {
    cfg: WbtConfig,
    pub wb_background: u32,
    pub wb_normal: u32,
    pub enable_state: EnableState,
    unknown_cnt: u32,
    win_nsec: u64,
    pub cur_win_nsec: u64,
    /// The window's samples, by direction (`cb->cpu_stat`).
    stat: [RqStat; 2],
    /// When the window ends (`blk_stat_is_active()` while set).
    timer: Option<Ns>,
    /// A read in flight that started the sync-issue watch (`sync_issue`,
    /// `sync_cookie`: its tag).
    sync_issue: Option<(Ns, u32)>,
    last_issue: u64,
    last_comp: u64,
    pub min_lat_nsec: u64,
    /// `rq_wait[WBT_RWQ_BG]`: tracked writes in flight, and the submitters asleep
    /// for a slot (bio, its flags) in the order they came.
    pub inflight: u32,
    sleepers: VecDeque<(BioId, u8)>,
    pub rq_depth: RqDepth,
    /// `bdi->last_bdp_sleep` (6.8+) or the root wb's `dirty_sleep`.
    last_bdp_sleep: u64,
    /// Per tag: `rq->wbt_flags`, and `io_start_time_ns` while it is on the device.
    rq_flags: Vec<u8>,
    rq_start: Vec<Option<Ns>>,
    woken: Vec<BioId>,
    rows: Vec<WbtRow>,
    trace: Option<Vec<String>>,
    pub figures: WbtFigures,
}

impl RqWb {
    /// `wbt_init()`, then the scenario's `wbt_lat_usec` written
    /// (`queue_wb_lat_store()`).
    pub fn new(cfg: WbtConfig) -> RqWb {
        let j0 = cfg.start_jiffies;
        let mut w = RqWb {
            wb_background: 0,
            wb_normal: 0,
            enable_state: EnableState::OnDefault,
            unknown_cnt: 0,
            win_nsec: RWB_WINDOW_NSEC,
            cur_win_nsec: RWB_WINDOW_NSEC,
            stat: [RqStat::default(); 2],
            timer: None,
            sync_issue: None,
            last_issue: j0,
            last_comp: j0,
            min_lat_nsec: default_latency_nsec(cfg.rotational),
            inflight: 0,
            sleepers: VecDeque::new(),
            rq_depth: RqDepth {
                max_depth: 0,
                scale_step: 0,
                scaled_max: false,
                queue_depth: cfg.queue_depth,
                default_depth: RWB_DEF_DEPTH,
            },
            // bdi_init() stamps it when the disk is made, which is more than a second
            // before a run starts
            last_bdp_sleep: j0.saturating_sub(u64::from(cfg.hz)),
            rq_flags: Vec::new(),
            rq_start: Vec::new(),
            woken: Vec::new(),
            rows: Vec::new(),
            trace: None,
            figures: WbtFigures::default(),
            cfg,
        };
        w.update_limits();
        if let Some(v) = w.cfg.lat_usec {
            let val = match v {
                -1 => default_latency_nsec(w.cfg.rotational),
                v => (v as u64).wrapping_mul(1000),
            };
            // writing the value in force changes nothing, not even the state
            if val != w.min_lat_nsec {
                w.set_min_lat(val);
            }
        }
        w
    }

    pub fn config(&self) -> &WbtConfig {
        &self.cfg
    }

    fn jiffies(&self, now: Ns) -> u64 {
        jiffies::at(now, self.cfg.start_jiffies, u64::from(self.cfg.hz))
    }

    /// `rwb_enabled()`.
    pub fn enabled(&self) -> bool {
        !matches!(
            self.enable_state,
            EnableState::OffDefault | EnableState::OffManual
        )
    }

    /// `wbt_set_min_lat()`.
    fn set_min_lat(&mut self, val: u64) {
        self.min_lat_nsec = val;
        self.enable_state = if val != 0 {
            EnableState::OnManual
        } else {
            EnableState::OffManual
        };
        self.update_limits();
    }

    /// `wbt_update_limits()`.
    fn update_limits(&mut self) {
        self.rq_depth.scale_step = 0;
        self.rq_depth.scaled_max = false;
        self.rq_depth.calc_max_depth();
        self.calc_wb_limits();
        self.wake_all(0);
    }

    /// `calc_wb_limits()`.
    fn calc_wb_limits(&mut self) {
        let d = self.rq_depth.max_depth;
        (self.wb_normal, self.wb_background) = if self.min_lat_nsec == 0 {
            (0, 0)
        } else if d <= 2 {
            (d, 1)
        } else {
            // (max_depth + 1) / 2, (max_depth + 3) / 4
            (d.div_ceil(2), d.div_ceil(4))
        };
    }

    /// `wbt_enable_default()` (`enable`) / `wbt_disable_default()`: only a state the
    /// user did not set changes.
    pub fn set_default(&mut self, enable: bool) {
        match (enable, self.enable_state) {
            (true, EnableState::OffDefault) => self.enable_state = EnableState::OnDefault,
            (false, EnableState::OnDefault) => {
                self.timer = None; // blk_stat_deactivate()
                self.enable_state = EnableState::OffDefault;
            }
            _ => {}
        }
    }

    /// `balance_dirty_pages()` paused a writer of cgroup `cg` (its wb is the root's
    /// when `cg` is 0).
    pub fn bdp_sleep(&mut self, now: Ns, cg: u32) {
        if self.cfg.behaviour.recent_wait == RecentWait::Bdi || cg == 0 {
            self.last_bdp_sleep = self.jiffies(now);
        }
    }

    /// `wb_recent_wait()`: a writer paused in the last second.
    fn recent_wait(&self, now: Ns) -> bool {
        self.jiffies(now) < self.last_bdp_sleep + u64::from(self.cfg.hz)
    }

    /// `close_io()`: a read issued or completed in the last 100 ms.
    fn close_io(&self, now: Ns) -> bool {
        let (j, tenth) = (self.jiffies(now), u64::from(self.cfg.hz / 10));
        j < self.last_issue + tenth || j < self.last_comp + tenth
    }

    /// `wb_timestamp()`.
    fn timestamp(&self, now: Ns) -> Option<u64> {
        self.enabled().then(|| self.jiffies(now))
    }

    /// `bio_to_wbt_flags()`.
    pub fn bio_flags(&self, bio: &Bio) -> u8 {
        if !self.enabled() {
            return 0;
        }
        match bio.dir {
            Dir::Read => WBT_READ,
            // wbt_should_throttle(): not an O_DIRECT write
            Dir::Write if bio.opf & req::DIRECT == req::DIRECT => 0,
            Dir::Write => WBT_TRACKED,
        }
    }

    /// `get_limit()` for a write with flags `opf`.
    fn get_limit(&self, now: Ns, opf: u8) -> u32 {
        if opf & req::SYNC != 0 || self.recent_wait(now) {
            self.rq_depth.max_depth
        } else if opf & req::BACKGROUND != 0 || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    /// `rq_wait_inc_below()`.
    fn inc_below(&mut self, limit: u32) -> bool {
        if self.inflight >= limit {
            return false;
        }
        self.inflight += 1;
        true
    }

    /// `wbt_wait()` for bio `id`: true if it goes on; false if its submitter sleeps
    /// until [`RqWb::take_woken`] names it.
    pub fn throttle(&mut self, now: Ns, id: BioId, bio: &Bio) -> bool {
        let flags = self.bio_flags(bio);
        if flags & WBT_TRACKED == 0 {
            if flags & WBT_READ != 0
                && let Some(j) = self.timestamp(now)
            {
                self.last_issue = j;
            }
            return true;
        }
        // rq_qos_wait(): behind anyone already asleep
        if !(self.sleepers.is_empty() && self.inc_below(self.get_limit(now, bio.opf))) {
            self.sleepers.push_back((id, bio.opf));
            self.figures.sleeps += 1;
            return false;
        }
        self.arm_if_idle(now);
        true
    }

    /// `wake_up_all()` through `rq_qos_wake_function()`: sleepers in order take a slot
    /// under their own limit until one cannot; each woken one arms the window if it
    /// is not running (the rest of `wbt_wait()`).
    fn wake_all(&mut self, now: Ns) {
        while let Some(&(id, opf)) = self.sleepers.front() {
            if !self.inc_below(self.get_limit(now, opf)) {
                break;
            }
            self.sleepers.pop_front();
            self.woken.push(id);
            self.arm_if_idle(now);
        }
    }

    /// Sleepers woken since the last call, in the order they were.
    pub fn take_woken(&mut self) -> impl Iterator<Item = BioId> + '_ {
        self.woken.drain(..)
    }

    fn arm_if_idle(&mut self, now: Ns) {
        if self.timer.is_none() && self.enabled() {
            self.arm_timer(now);
        }
    }

    /// The per-tag records reach tag index `i` (tags are known as they come).
    fn grow_to(&mut self, i: usize) {
        if self.rq_flags.len() <= i {
            self.rq_flags.resize(i + 1, 0);
            self.rq_start.resize(i + 1, None);
        }
    }

    /// `wbt_track()`: request `tag` got the bio.
    pub fn track(&mut self, tag: u32, bio: &Bio) {
        let flags = self.bio_flags(bio);
        let i = tag as usize;
        self.grow_to(i);
        self.rq_flags[i] |= flags;
    }

    /// `blk_mq_start_request()` (`io_start_time_ns`) and `wbt_issue()`.
    pub fn issue(&mut self, now: Ns, tag: u32) {
        let i = tag as usize;
        self.grow_to(i);
        self.rq_start[i] = Some(now);
        if self.enabled() && self.rq_flags[i] & WBT_READ != 0 && self.sync_issue.is_none() {
            self.sync_issue = Some((now, tag));
        }
    }

    /// The request on `tag` (direction `dir`) ended: `blk_stat_add()` while a window
    /// runs, then `wbt_done()`.
    pub fn done(&mut self, now: Ns, tag: u32, dir: Dir) {
        let i = tag as usize;
        if i >= self.rq_flags.len() {
            return;
        }
        if let Some(start) = self.rq_start[i].take()
            && self.timer.is_some()
        {
            self.stat[dir.idx()].add(now.saturating_sub(start));
        }
        let flags = std::mem::take(&mut self.rq_flags[i]);
        if flags & WBT_TRACKED == 0 {
            if self.sync_issue.is_some_and(|(_, t)| t == tag) {
                self.sync_issue = None;
            }
            if flags & WBT_READ != 0
                && let Some(j) = self.timestamp(now)
            {
                self.last_comp = j;
            }
        } else {
            self.rqw_done(now);
        }
    }

    /// `wbt_rqw_done()`: a tracked write left; wake sleepers when enough room opened.
    fn rqw_done(&mut self, now: Ns) {
        self.inflight = self.inflight.saturating_sub(1);
        // with a volatile cache, let the writes drain unless a writer waits
        let limit = if self.cfg.write_cache && !self.recent_wait(now) {
            0
        } else {
            self.wb_normal
        };
        if self.inflight > 0 && self.inflight >= limit {
            return;
        }
        if !self.sleepers.is_empty() {
            let diff = i64::from(limit) - i64::from(self.inflight);
            if self.inflight == 0 || diff >= i64::from(self.wb_background / 2) {
                self.wake_all(now);
            }
        }
    }

    /// `rwb_arm_timer()`: the next window, `100 ms / sqrt(step + 1)` above step 0,
    /// on the timer wheel (`mod_timer(jiffies + nsecs_to_jiffies(win))`).
    fn arm_timer(&mut self, now: Ns) {
        let step = self.rq_depth.scale_step;
        self.cur_win_nsec = if step > 0 {
            (self.win_nsec << 4) / ((step as u64 + 1) << 8).isqrt()
        } else {
            self.win_nsec
        };
        let hz = u64::from(self.cfg.hz);
        let clk = self.jiffies(now);
        let expires = clk + self.cur_win_nsec / (NSEC_PER_SEC / hz);
        let bucket = jiffies::wheel_bucket(expires, clk);
        self.timer = Some(jiffies::ns_of(bucket, self.cfg.start_jiffies, hz));
    }

    /// When the window ends, if one runs.
    pub fn timer_at(&self) -> Option<Ns> {
        self.timer
    }

    /// `blk_stat_timer_fn()` → `wb_timer_fn()`: judge the window, step, and start the
    /// next one while the step is off 0 or writes are in flight.
    pub fn timer_fn(&mut self, now: Ns) {
        self.timer = None;
        let stat = std::mem::take(&mut self.stat);
        let inflight = self.inflight;
        let (status, lat, traces_stat) = self.latency_exceeded(now, &stat);
        self.figures.windows += 1;
        if let Some(t) = self.trace.as_mut() {
            let name = &self.cfg.name;
            if let Some(lat) = lat {
                t.push(format!("{now} wbt_lat: {name}: latency {}us", lat / 1000));
            }
            if traces_stat {
                t.push(format!("{now} wbt_stat: {name}: {}", stat_text(&stat)));
            }
            t.push(format!(
                "{now} wbt_timer: {name}: status={}, step={}, inflight={inflight}",
                status as u8, self.rq_depth.scale_step
            ));
        }
        match status {
            WindowStatus::Exceeded => {
                self.figures.exceeded += 1;
                self.scale_down(now, true);
            }
            WindowStatus::Ok | WindowStatus::UnknownWrites => self.scale_up(now),
            WindowStatus::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= RWB_UNKNOWN_BUMP {
                    // back towards step 0
                    if self.rq_depth.scale_step > 0 {
                        self.scale_up(now);
                    } else if self.rq_depth.scale_step < 0 {
                        self.scale_down(now, false);
                    }
                }
            }
        }
        self.figures.max_step = self.figures.max_step.max(self.rq_depth.scale_step);
        self.rows.push(WbtRow {
            at: now,
            status,
            step: self.rq_depth.scale_step,
            max_depth: self.rq_depth.max_depth,
            wb_normal: self.wb_normal,
            wb_background: self.wb_background,
            inflight,
            window_ns: self.cur_win_nsec,
            read: stat[0],
            write: stat[1],
            min_lat_ns: self.min_lat_nsec,
        });
        if self.rq_depth.scale_step != 0 || inflight > 0 {
            self.arm_timer(now);
        }
    }

    /// `latency_exceeded()`, with the latency it traces (`wbt_lat`) if it does and
    /// whether it traces the window's stats (`wbt_stat`).
    fn latency_exceeded(&self, now: Ns, stat: &[RqStat; 2]) -> (WindowStatus, Option<u64>, bool) {
        let [read, write] = stat;
        // a read issued long ago and not back yet counts as a violation
        let thislat = self.sync_issue.map_or(0, |(t, _)| now.saturating_sub(t));
        if thislat > self.cur_win_nsec || thislat > self.min_lat_nsec && read.nr_samples == 0 {
            return (WindowStatus::Exceeded, Some(thislat), false);
        }
        // stat_sample_valid(): a read and a few writes
        if read.nr_samples < 1 || write.nr_samples < RWB_MIN_WRITE_SAMPLES {
            let writes = write.nr_samples > 0 || self.recent_wait(now) || self.inflight > 0;
            let s = if writes {
                WindowStatus::UnknownWrites
            } else {
                WindowStatus::Unknown
            };
            return (s, None, false);
        }
        if read.min > self.min_lat_nsec {
            return (WindowStatus::Exceeded, Some(read.min), true);
        }
        (WindowStatus::Ok, None, self.rq_depth.scale_step != 0)
    }

    /// `scale_up()`.
    fn scale_up(&mut self, now: Ns) {
        if !self.rq_depth.scale_up() {
            return;
        }
        self.figures.scale_ups += 1;
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        self.wake_all(now);
        self.trace_step(now, "scale up");
    }

    /// `scale_down()`.
    fn scale_down(&mut self, now: Ns, hard_throttle: bool) {
        if !self.rq_depth.scale_down(hard_throttle) {
            return;
        }
        self.figures.scale_downs += 1;
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        self.trace_step(now, "scale down");
    }

    /// The `wbt_step` tracepoint.
    fn trace_step(&mut self, now: Ns, msg: &str) {
        if let Some(t) = self.trace.as_mut() {
            t.push(format!(
                "{now} wbt_step: {}: {msg}: step={}, window={}us, background={}, normal={}, max={}",
                self.cfg.name,
                self.rq_depth.scale_step,
                self.cur_win_nsec / 1000,
                self.wb_background,
                self.wb_normal,
                self.rq_depth.max_depth
            ));
        }
    }

    /// Whether trace lines are kept.
    pub fn set_tracing(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    /// Trace lines made since the last call.
    pub fn take_trace(&mut self) -> Vec<String> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Window rows made since the last call.
    pub fn take_rows(&mut self) -> Vec<WbtRow> {
        std::mem::take(&mut self.rows)
    }

    /// `queue/wbt_lat_usec` as it reads (`queue_wb_lat_show()`): 0 while disabled.
    pub fn lat_usec_shown(&self) -> u64 {
        if self.enabled() {
            self.min_lat_nsec / 1000
        } else {
            0
        }
    }

    /// The disk went away (`rq_qos_exit()`): no more windows.
    pub fn exit(&mut self) {
        self.timer = None;
    }
}

/// The `wbt_stat` tracepoint's body.
fn stat_text(stat: &[RqStat; 2]) -> String {
    let min = |s: &RqStat| if s.nr_samples == 0 { 0 } else { s.min };
    format!(
        "rmean={}, rmin={}, rmax={}, rsamples={}, wmean={}, wmin={}, wmax={}, wsamples={}",
        stat[0].mean(),
        min(&stat[0]),
        stat[0].max,
        stat[0].nr_samples,
        stat[1].mean(),
        min(&stat[1]),
        stat[1].max,
        stat[1].nr_samples
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(qd: u32, rotational: bool, write_cache: bool, lat: Option<i64>) -> WbtConfig {
        WbtConfig {
            behaviour: behaviour_for(&KernelVersion::parse("6.12").unwrap(), &[]).unwrap(),
            hz: 250,
            start_jiffies: jiffies::initial_jiffies(250),
            queue_depth: qd,
            rotational,
            write_cache,
            lat_usec: lat,
            name: "252:0".into(),
        }
    }

    fn write(opf: u8) -> Bio {
        Bio {
            opf,
            ..Bio::new(1, Dir::Write, 0, 4096, 0)
        }
    }

    #[test]
    fn depth_and_limits_follow_rq_depth_and_calc_wb_limits() {
        let mut w = RqWb::new(cfg(64, false, false, None));
        assert_eq!(
            (w.rq_depth.max_depth, w.wb_normal, w.wb_background),
            (16, 8, 4)
        );
        assert_eq!(w.min_lat_nsec, 2_000_000);
        // step 1: 1 + 15 >> 1 = 8; step 2: 4; step 3: 2; step 4: 1, then no further
        let want = [(8, 4, 2), (4, 2, 1), (2, 2, 1), (1, 1, 1)];
        for (i, &(d, n, b)) in want.iter().enumerate() {
            w.scale_down(0, true);
            assert_eq!(w.rq_depth.scale_step, i as i32 + 1);
            assert_eq!(
                (w.rq_depth.max_depth, w.wb_normal, w.wb_background),
                (d, n, b)
            );
        }
        assert!(!w.rq_depth.scale_down(true), "no step below depth 1");
        // the window shrinks to 100 ms / sqrt(step + 1): (1e8 << 4) / int_sqrt(5 << 8)
        w.arm_timer(0);
        assert_eq!(w.cur_win_nsec, (100_000_000u64 << 4) / 35);
        // writes alone: negative steps double the depth, capped at 3/4 of the queue
        let mut w = RqWb::new(cfg(64, false, false, None));
        assert!(w.rq_depth.scale_up());
        assert_eq!(w.rq_depth.max_depth, 31);
        assert!(w.rq_depth.scale_up());
        assert_eq!(w.rq_depth.max_depth, 48, "1 + 15 << 2 = 61, capped at 48");
        assert!(!w.rq_depth.scale_up(), "scaled_max: no further");
        // a hard throttle from a negative step goes straight to step 0
        assert!(w.rq_depth.scale_down(true));
        assert_eq!((w.rq_depth.scale_step, w.rq_depth.max_depth), (0, 16));
        // QD1: 2 at step 0, 1 scaled down
        let mut w = RqWb::new(cfg(1, true, false, None));
        assert_eq!(w.rq_depth.max_depth, 2);
        assert_eq!(w.min_lat_nsec, 75_000_000);
        w.scale_down(0, true);
        assert_eq!(
            (w.rq_depth.max_depth, w.wb_normal, w.wb_background),
            (1, 1, 1)
        );
    }

    #[test]
    fn wbt_lat_usec_as_queue_wb_lat_store_takes_it() {
        assert_eq!(store_lat_usec("-1\n").unwrap(), -1);
        assert_eq!(store_lat_usec("-2").unwrap_err().errno, Errno::EINVAL);
        assert_eq!(store_lat_usec("abc").unwrap_err().errno, Errno::EINVAL);
        assert_eq!(
            store_lat_usec("99999999999999999999").unwrap_err().errno,
            Errno::ERANGE
        );
        // 0 turns it off by hand: nothing is tracked, limits are 0
        let w = RqWb::new(cfg(64, false, false, Some(0)));
        assert_eq!(w.enable_state, EnableState::OffManual);
        assert_eq!((w.wb_normal, w.wb_background), (0, 0));
        assert_eq!(w.bio_flags(&write(req::BACKGROUND)), 0);
        assert_eq!(w.lat_usec_shown(), 0);
        // the value in force leaves the state as it was: blk-iocost may still turn it off
        let mut w = RqWb::new(cfg(64, false, false, Some(2000)));
        assert_eq!(w.enable_state, EnableState::OnDefault);
        w.set_default(false);
        assert_eq!(w.enable_state, EnableState::OffDefault);
        w.set_default(true);
        assert_eq!(w.enable_state, EnableState::OnDefault);
        // another value is the user's: it stays on whatever blk-iocost asks
        let mut w = RqWb::new(cfg(64, false, false, Some(5000)));
        assert_eq!(
            (w.enable_state, w.lat_usec_shown()),
            (EnableState::OnManual, 5000)
        );
        w.set_default(false);
        assert!(w.enabled());
    }

    #[test]
    fn only_buffered_writes_are_tracked_and_limits_follow_get_limit() {
        let mut w = RqWb::new(cfg(64, false, false, None));
        assert_eq!(
            w.bio_flags(&write(req::DIRECT)),
            0,
            "O_DIRECT is never throttled"
        );
        assert_eq!(w.bio_flags(&write(req::SYNC)), WBT_TRACKED);
        let read = Bio::new(1, Dir::Read, 0, 4096, 0);
        assert_eq!(w.bio_flags(&read), WBT_READ);
        // background writeback: wb_background (4) in flight, the fifth sleeps
        for id in 0..4 {
            assert!(w.throttle(0, id, &write(req::BACKGROUND)));
        }
        assert!(!w.throttle(0, 4, &write(req::BACKGROUND)));
        // a sync write queues behind the sleeper, whatever its own limit
        assert!(!w.throttle(0, 5, &write(req::SYNC)));
        assert_eq!(w.figures.sleeps, 2);
        // one done: 3 in flight, limit wb_normal (no cache) = 8, diff 5 >= 4 / 2: wake
        for t in 0..4 {
            w.track(t, &write(req::BACKGROUND));
        }
        w.done(1_000, 0, Dir::Write);
        let woken: Vec<_> = w.take_woken().collect();
        assert_eq!(
            woken,
            vec![4, 5],
            "the background one takes slot 4, the sync one 5"
        );
        assert_eq!(w.inflight, 5);
        // a read in the last 100 ms holds even normal writeback to wb_background
        let mut w = RqWb::new(cfg(64, false, false, None));
        assert!(w.throttle(0, 9, &read));
        for id in 0..4 {
            assert!(w.throttle(1, id, &write(0)));
        }
        assert!(!w.throttle(1, 4, &write(0)));
        // ... and a paused dirtier lets even background writeback use max_depth
        let mut w = RqWb::new(cfg(64, false, false, None));
        w.bdp_sleep(0, 3);
        for id in 0..16 {
            assert!(w.throttle(0, id, &write(req::BACKGROUND)), "{id}");
        }
        assert!(!w.throttle(0, 16, &write(req::BACKGROUND)));
    }

    #[test]
    fn a_cgroup_writers_pause_is_seen_from_6_8() {
        let mut c = cfg(64, false, false, None);
        c.behaviour = behaviour_for(&KernelVersion::parse("6.1").unwrap(), &[]).unwrap();
        assert_eq!(c.behaviour.recent_wait, RecentWait::RootWb);
        let mut w = RqWb::new(c);
        w.bdp_sleep(0, 3);
        assert!(!w.recent_wait(0), "6.1 reads the root wb's dirty_sleep");
        w.bdp_sleep(0, 0);
        assert!(w.recent_wait(0));
        assert!(
            !w.recent_wait(1_000_000_000),
            "a second later it is not recent"
        );
    }

    #[test]
    fn a_volatile_cache_drains_before_writers_wake() {
        let mut w = RqWb::new(cfg(64, false, true, None));
        for id in 0..4 {
            assert!(w.throttle(0, id, &write(req::BACKGROUND)));
            w.track(id, &write(req::BACKGROUND));
        }
        assert!(!w.throttle(0, 4, &write(req::BACKGROUND)));
        for t in 0..3 {
            w.done(1, t, Dir::Write);
            assert_eq!(w.take_woken().count(), 0, "limit 0: wait for the last");
        }
        w.done(1, 3, Dir::Write);
        assert_eq!(w.take_woken().collect::<Vec<_>>(), vec![4]);
    }

    #[test]
    fn windows_judge_the_fastest_read_against_the_target() {
        let mut w = RqWb::new(cfg(64, false, false, None));
        let wr = write(req::BACKGROUND);
        let rd = Bio::new(1, Dir::Read, 0, 4096, 0);
        assert!(w.throttle(0, 0, &wr));
        let end = w.timer_at().expect("a tracked write starts the window");
        // HZ=250: 25 jiffies, and the wheel fires one jiffy late
        assert_eq!(end, 104_000_000);
        // three writes and a read of 3 ms: exceeded, step 1
        for t in 0..3 {
            w.track(t, &wr);
            w.issue(10, t);
            w.done(20, t, Dir::Write);
        }
        w.track(5, &rd);
        w.issue(1_000, 5);
        w.done(3_001_000, 5, Dir::Read);
        w.timer_fn(end);
        let row = &w.take_rows()[0];
        assert_eq!(row.status, WindowStatus::Exceeded);
        assert_eq!((row.step, row.max_depth), (1, 8));
        assert!(w.timer_at().is_some(), "step off 0: the next window runs");
        // a window with writes but no read: unknown-writes, step back up (to 0)
        w.track(0, &wr);
        w.issue(200_000_000, 0);
        w.done(200_000_001, 0, Dir::Write);
        w.timer_fn(w.timer_at().unwrap());
        let row = &w.take_rows()[0];
        assert_eq!((row.status, row.step), (WindowStatus::UnknownWrites, 0));
        // a read issued and still out after the window: exceeded on its own
        let mut w = RqWb::new(cfg(64, false, false, None));
        assert!(w.throttle(0, 0, &wr));
        w.track(7, &rd);
        w.issue(0, 7);
        let end = w.timer_at().unwrap();
        w.timer_fn(end);
        assert_eq!(w.take_rows()[0].status, WindowStatus::Exceeded);
    }

    #[test]
    fn switches_by_version_and_override() {
        let v = |s: &str| KernelVersion::parse(s).unwrap();
        assert_eq!(
            behaviour_for(&v("6.7"), &[]).unwrap().recent_wait,
            RecentWait::RootWb
        );
        assert_eq!(
            behaviour_for(&v("6.8"), &[]).unwrap().recent_wait,
            RecentWait::Bdi
        );
        let o = [("wbt.recent_wait".to_string(), "root-wb".to_string())];
        assert_eq!(
            behaviour_for(&v("6.12"), &o).unwrap().recent_wait,
            RecentWait::RootWb
        );
        let bad = [("wbt.nope".to_string(), "x".to_string())];
        assert!(behaviour_for(&v("6.12"), &bad).is_err());
    }
}
