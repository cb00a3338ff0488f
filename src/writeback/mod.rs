//! Buffered writes: the page cache's dirty pages, dirty throttling and cgroup
//! writeback (`mm/page-writeback.c`, `fs/fs-writeback.c`, 6.12).
//!
//! Design
//! ------
//! The idea: a buffered `write()` only copies into the page cache; the device sees
//! the data later, when a flusher writes it back. Two feedback loops decide how fast
//! a writer may go. *Dirty throttling* (`balance_dirty_pages()`) pauses the writer in
//! its `write()` once the dirty pages (with those under writeback) pass the freerun
//! ceiling — halfway between the background and the hard threshold — so that they
//! settle around a setpoint, at the rate the writer's wb writes out. *Writeback*
//! (`wb_workfn()`) writes the pages out: in the background once the dirty pages pass
//! `dirty_background_*`, periodically (`dirty_writeback_centisecs`) those older than
//! `dirty_expire_centisecs`, and from the caller on `fsync()`. With cgroup writeback
//! each memory cgroup has its own `bdi_writeback` (wb) per device, so the flusher
//! writes a cgroup's pages *as that cgroup*: io.max, io.cost and io.latency act on
//! them there, not on the writer — which is why `io.max` "does not limit my writes"
//! until the dirty pages reach the setpoint.
//!
//! Moving parts and where they live:
//! - [`limits`]: the kernel's arithmetic, function by function (thresholds, the
//!   position ratio, the bandwidth and rate-limit estimators, the pause bounds);
//! - [`pagecache`]: one file's dirty pages as page ranges;
//! - [`timeline`]: `writeback.csv` and its picture, from the pipeline's samples;
//! - [`Writeback`] (here): the state those functions read — the global and per-memcg
//!   domains (`wb_domain`: the fraction of recent writeout each wb did, the smoothed
//!   `dirty_limit`), each wb's counters and estimators, each file (its dirty pages,
//!   its wb, when it was first dirtied) and each writer task (`nr_dirtied`,
//!   `nr_dirtied_pause`, `dirty_paused_when`); [`Writeback::balance_dirty_pages`] is
//!   the writer's side, [`Writeback::next_chunk`] / [`Writeback::fsync`] /
//!   [`Writeback::end_writeback`] the flusher's;
//! - the flusher as a submission context, the writer's pause and the fsync wait:
//!   `crate::sim::writeback` (the pipeline's side); fio's buffered job:
//!   `crate::sim::fio`.
//!
//! Versions: 6.1's `domain_dirty_limits()`, `wb_position_ratio()`,
//! `wb_update_dirty_ratelimit()` and `wb_min_pause()` compute the same as 6.12's (its
//! `__wb_calc_thresh()` counts a bdi's ratios in percent where 6.12 counts 1/10000ths:
//! the same with the defaults), so there is no behaviour switch here yet; both are
//! checked on real kernels (docs/validation.md §40).
//!
//! Left out, and why:
//! - each fio job's file is an inode of its own, dirtied by one cgroup, so no inode is
//!   shared between wbs and the kernel's switching of an inode to its majority
//!   dirtier (`inode_switch_wbs()`) never arises; on a raw block device written by
//!   several cgroups the kernel would charge the one bdev inode to one wb;
//! - a page dirtied again while under writeback is written again at once (the kernel
//!   waits for the first write only in `WB_SYNC_ALL`);
//! - the flusher's bios are runs of contiguous pages, at most a bio's 256 pages and
//!   the queue's `max_sectors_kb`: what the plug the flusher holds (`wb_writeback()`'s
//!   `blk_start_plug()`) makes of a block device's one-buffer bios, and what a
//!   filesystem's `iomap`/`mpage` writeback builds; blk-throttle's iops limits and
//!   blk-iocost's per-bio cost therefore see one bio per run;
//! - clean pages are only counted, per memory cgroup, and reclaimed (without cost)
//!   when a `memory.max` would be passed; `memory.high`, anonymous memory, the
//!   metadata and journal writes of a filesystem, laptop mode and the strict limit of
//!   FUSE-like devices are not modelled;
//! - the counters are exact where the kernel's are per-CPU approximations.

pub mod limits;
pub mod pagecache;
pub mod timeline;

use limits::{DirtySysctls, Dtc, PAGE_SIZE, WbBandwidth};
use pagecache::DirtyPages;

/// `VM_COMPLETIONS_PERIOD_LEN`: the writeout fractions halve every 3 s.
fn completions_period(hz: u64) -> u64 {
    3 * hz
}
/// `MIN_WRITEBACK_PAGES`: 4 MiB.
const MIN_WRITEBACK_PAGES: u64 = 4096 >> 2;
/// `DIRTY_SCOPE`.
const DIRTY_SCOPE: u64 = 8;
/// `wb_stat_error()` on the guests' one CPU: `WB_STAT_BATCH`.
const WB_STAT_ERROR: u64 = 8;

/// The `vm.*` sysctls of writeback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmWriteback {
    pub dirty: DirtySysctls,
    /// `vm.dirty_expire_centisecs` (3000): a page this old is written by the
    /// periodic writeback.
    pub dirty_expire_centisecs: u64,
    /// `vm.dirty_writeback_centisecs` (500): how often the periodic writeback looks;
    /// 0 turns it off.
    pub dirty_writeback_centisecs: u64,
}

impl Default for VmWriteback {
    fn default() -> Self {
        VmWriteback {
            dirty: DirtySysctls {
                dirty_ratio: 20,
                dirty_bytes: 0,
                dirty_background_ratio: 10,
                dirty_background_bytes: 0,
            },
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
        }
    }
}

/// What the writeback model starts from.
#[derive(Debug, Clone)]
pub struct WritebackConfig {
    pub hz: u32,
    pub vm: VmWriteback,
    /// `global_dirtyable_memory()`: free and file pages, bytes.
    pub dirtyable_bytes: u64,
    /// Each cgroup's parent (None for the root, index 0) and `memory.max` in bytes.
    pub cgroups: Vec<(Option<u32>, Option<u64>)>,
    /// Each writer's cgroup (one file and one task per fio job).
    pub writers: Vec<u32>,
    /// The writers share one CPU (its `bdp_ratelimits` counter), else one each.
    pub one_cpu: bool,
    /// jiffies at t = 0.
    pub jiffies0: u64,
}

/// A `wb_domain`: the writeout completions each wb did recently (flexible
/// proportions, halved every period) and the smoothed `dirty_limit`.
#[derive(Debug, Clone, Default)]
struct Domain {
    events: u64,
    period: u64,
    /// When the next period starts (jiffies; 0: aging stopped, nothing to age).
    period_time: u64,
    dirty_limit: u64,
    dirty_limit_tstamp: u64,
}

/// A wb's share of a domain's completions (`fprop_local_percpu`).
#[derive(Debug, Clone, Copy, Default)]
struct Local {
    events: u64,
    period: u64,
}

impl Domain {
    /// `writeout_period()`, for every period due by `now` (a deferrable timer).
    fn age(&mut self, now: u64, len: u64) {
        while self.period_time != 0 && now >= self.period_time {
            let miss = (now - self.period_time) / len;
            // fprop_new_period(): nothing left to age stops the timer
            if self.events <= 1 {
                self.period_time = 0;
                break;
            }
            let periods = miss + 1;
            self.events = if periods < 64 {
                self.events >> periods
            } else {
                0
            };
            self.period += periods;
            self.period_time += (miss + 1) * len;
        }
    }

    /// `fprop_reflect_period_percpu()`: age a wb's events to the domain's period.
    fn reflect(&self, l: &mut Local) {
        if l.period < self.period {
            let d = self.period - l.period;
            l.events = if d < 64 { l.events >> d } else { 0 };
            l.period = self.period;
        }
    }

    /// `fprop_fraction_percpu()`.
    fn fraction(&self, l: &mut Local) -> (u64, u64) {
        self.reflect(l);
        let (num, den) = (l.events, self.events);
        let den = if den <= num { num.max(1) } else { den };
        (num, den)
    }
}

/// One cgroup's `bdi_writeback` on the device.
#[derive(Debug, Clone)]
pub struct Wb {
    /// `WB_RECLAIMABLE` (dirty) and `WB_WRITEBACK` pages.
    pub reclaimable: u64,
    pub writeback: u64,
    /// `WB_DIRTIED` and `WB_WRITTEN`: pages ever dirtied and written.
    pub dirtied: u64,
    pub written: u64,
    completions: Local,
    pub bw: WbBandwidth,
    pub dirty_exceeded: bool,
    /// Files with pages under writeback (`wb->writeback_inodes`).
    writeback_inodes: u32,
    /// `wb->last_old_flush`: the last periodic writeback.
    pub last_old_flush: u64,
    /// The most pages it had dirty and under writeback at once.
    pub peak: u64,
    /// The files of this wb with dirty pages, and where the flusher goes on.
    files: Vec<u32>,
    cursor: usize,
}

/// One memory cgroup's page cache counters (its subtree's, as `memcg_page_state()`
/// reads them) and its domain.
#[derive(Debug, Clone, Default)]
struct Memcg {
    parent: Option<u32>,
    max_pages: Option<u64>,
    dirty: u64,
    writeback: u64,
    /// Every file page charged: dirty, under writeback and clean.
    file: u64,
    /// Clean pages charged to this cgroup itself: what its reclaim can drop.
    own_clean: u64,
    domain: Domain,
}

/// One fio job's file.
#[derive(Debug, Clone, Default)]
pub struct File {
    pub cgroup: u32,
    pub dirty: DirtyPages,
    /// Pages under writeback.
    pub writeback: u64,
    /// `inode->dirtied_when`: when it went from clean to dirty (jiffies).
    dirtied_when: Option<u64>,
    /// `mapping->writeback_index`: where the range-cyclic walk goes on.
    writeback_index: u64,
}

/// A writer task's throttling state (`task_struct`'s).
#[derive(Debug, Clone, Copy)]
struct Task {
    nr_dirtied: u64,
    nr_dirtied_pause: u64,
    /// jiffies; 0 = never paused.
    dirty_paused_when: u64,
    cpu: usize,
}

/// What one `balance_dirty_pages()` round asks of its caller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bdp {
    /// Sleep this many jiffies (`io_schedule_timeout()`).
    pub pause: u64,
    /// Wake the wb's flusher for background writeback.
    pub start_background: bool,
    /// After the pause, go round again (the rate limit was 0: over the hard limit).
    pub again: bool,
}

/// How the flusher is writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    /// Until the dirty pages are under the background thresholds.
    Background,
    /// The pages of files dirtied more than `dirty_expire_centisecs` ago.
    Kupdate,
    /// Every dirty page (`WB_SYNC_ALL`): the block device's last close
    /// (`blkdev_put_whole()` → `blkdev_flush_mapping()` → `sync_blockdev()`).
    Sync,
}

/// The global view at one instant, for timelines and the summary (pages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GlobalState {
    pub dirty: u64,
    pub writeback: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    pub dirty_limit: u64,
}

/// The page cache, its dirty pages and the writeback state of a run.
#[derive(Debug, Clone)]
pub struct Writeback {
    hz: u64,
    vm: VmWriteback,
    dirtyable: u64,
    global: Domain,
    /// Per cgroup (index = cgroup).
    pub wbs: Vec<Wb>,
    memcgs: Vec<Memcg>,
    /// Per writer job.
    pub files: Vec<File>,
    tasks: Vec<Task>,
    /// `bdp_ratelimits`, per CPU.
    bdp_ratelimits: Vec<u64>,
    /// `ratelimit_pages` (`writeback_set_ratelimit()`).
    ratelimit_pages: u64,
    /// `NR_FILE_DIRTY`, `NR_WRITEBACK`.
    pub nr_dirty: u64,
    pub nr_writeback: u64,
}

impl Writeback {
    pub fn new(cfg: &WritebackConfig) -> Self {
        let hz = u64::from(cfg.hz.max(1));
        let dirtyable = cfg.dirtyable_bytes / PAGE_SIZE;
        let (thresh, _) = limits::domain_dirty_limits(&cfg.vm.dirty, dirtyable, None);
        let now = cfg.jiffies0;
        let nr_cpus = if cfg.one_cpu {
            1
        } else {
            cfg.writers.len().max(1)
        };
        let wb = Wb {
            reclaimable: 0,
            writeback: 0,
            dirtied: 0,
            written: 0,
            completions: Local::default(),
            bw: WbBandwidth::new(now),
            dirty_exceeded: false,
            writeback_inodes: 0,
            last_old_flush: now,
            peak: 0,
            files: Vec::new(),
            cursor: 0,
        };
        let mut wbs = vec![wb; cfg.cgroups.len().max(1)];
        for (j, &cg) in cfg.writers.iter().enumerate() {
            wbs[cg as usize].files.push(j as u32);
        }
        Writeback {
            hz,
            vm: cfg.vm,
            dirtyable,
            global: Domain {
                // writeback_set_ratelimit() at boot
                dirty_limit: thresh,
                dirty_limit_tstamp: now,
                ..Domain::default()
            },
            wbs,
            memcgs: cfg
                .cgroups
                .iter()
                .map(|&(parent, max)| Memcg {
                    parent,
                    max_pages: max.map(|b| b / PAGE_SIZE),
                    domain: Domain {
                        dirty_limit_tstamp: now,
                        ..Domain::default()
                    },
                    ..Memcg::default()
                })
                .collect(),
            files: cfg
                .writers
                .iter()
                .map(|&cgroup| File {
                    cgroup,
                    ..File::default()
                })
                .collect(),
            tasks: (0..cfg.writers.len())
                .map(|j| Task {
                    // copy_process(): 128 KiB
                    nr_dirtied: 0,
                    nr_dirtied_pause: 128 >> 2,
                    dirty_paused_when: 0,
                    cpu: if cfg.one_cpu { 0 } else { j },
                })
                .collect(),
            bdp_ratelimits: vec![0; nr_cpus],
            // writeback_set_ratelimit(): dirty_thresh / (num_online_cpus() * 32)
            ratelimit_pages: (thresh / (nr_cpus as u64 * 32)).max(16),
            nr_dirty: 0,
            nr_writeback: 0,
        }
    }

    pub fn hz(&self) -> u64 {
        self.hz
    }

    pub fn vm(&self) -> &VmWriteback {
        &self.vm
    }

    /// The global domain now: dirty and writeback pages, the thresholds.
    pub fn global_state(&self) -> GlobalState {
        let (thresh, bg_thresh) = limits::domain_dirty_limits(&self.vm.dirty, self.dirtyable, None);
        GlobalState {
            dirty: self.nr_dirty,
            writeback: self.nr_writeback,
            thresh,
            bg_thresh,
            dirty_limit: self.global.dirty_limit,
        }
    }

    /// A memcg's `(thresh, bg_thresh)` now (its domain's), for the summary.
    pub fn memcg_limits(&self, cg: u32) -> Option<(u64, u64)> {
        (cg != 0).then(|| {
            let g = self.global_dtc(true);
            let m = self.memcg_dtc(cg, &g, true);
            (m.thresh, m.bg_thresh)
        })
    }

    /// Mark pages `[first, first + n)` of writer `t`'s file dirty
    /// (`generic_perform_write()` → `filemap_dirty_folio()` → `folio_account_dirtied()`
    /// and `__mark_inode_dirty()`). Returns the pages newly dirtied and whether the
    /// wb had no dirty file before (`wb_wakeup_delayed()`: arm the periodic writeback).
    pub fn dirty_pages(&mut self, now: u64, t: u32, first: u64, n: u64) -> (u64, bool) {
        let file = &mut self.files[t as usize];
        let new = file.dirty.mark(first, n);
        if new == 0 {
            return (0, false);
        }
        let cg = file.cgroup;
        let mut first_dirty = false;
        if file.dirtied_when.is_none() {
            file.dirtied_when = Some(now);
            let wb = &self.wbs[cg as usize];
            first_dirty = wb
                .files
                .iter()
                .all(|&f| f == t || self.files[f as usize].dirtied_when.is_none());
        }
        let wb = &mut self.wbs[cg as usize];
        wb.reclaimable += new;
        wb.dirtied += new;
        wb.peak = wb.peak.max(wb.reclaimable + wb.writeback);
        self.nr_dirty += new;
        self.memcg_walk(cg, |m| {
            m.dirty += new;
            m.file += new;
        });
        self.charge_reclaim(cg);
        let task = &mut self.tasks[t as usize];
        task.nr_dirtied += new;
        self.bdp_ratelimits[task.cpu] += new;
        (new, first_dirty)
    }

    /// How many more pages writer `t` may dirty before `balance_dirty_pages_ratelimited()`
    /// calls `balance_dirty_pages()` (at least 1).
    pub fn pages_to_check(&self, t: u32) -> u64 {
        let task = &self.tasks[t as usize];
        let ratelimit = self.ratelimit(t);
        let own = ratelimit.saturating_sub(task.nr_dirtied);
        let cpu = self
            .ratelimit_pages
            .saturating_sub(self.bdp_ratelimits[task.cpu]);
        own.min(cpu).max(1)
    }

    fn ratelimit(&self, t: u32) -> u64 {
        let task = &self.tasks[t as usize];
        let cg = self.files[t as usize].cgroup;
        let mut ratelimit = task.nr_dirtied_pause;
        if self.wbs[cg as usize].dirty_exceeded {
            ratelimit = ratelimit.min(32 >> 2);
        }
        ratelimit
    }

    /// `balance_dirty_pages_ratelimited()` after a page of writer `t`: whether it calls
    /// `balance_dirty_pages()` now.
    pub fn ratelimited(&mut self, t: u32) -> bool {
        let mut ratelimit = self.ratelimit(t);
        let task = &self.tasks[t as usize];
        let p = &mut self.bdp_ratelimits[task.cpu];
        if task.nr_dirtied >= ratelimit {
            *p = 0;
        } else if *p >= self.ratelimit_pages {
            *p = 0;
            ratelimit = 0;
        }
        task.nr_dirtied >= ratelimit
    }

    fn memcg_walk(&mut self, cg: u32, mut f: impl FnMut(&mut Memcg)) {
        let mut c = Some(cg);
        while let Some(i) = c {
            let m = &mut self.memcgs[i as usize];
            f(m);
            c = m.parent;
        }
    }

    /// Charging new pages to `cg` past a `memory.max` on its way up reclaims its
    /// clean pages (free of cost here).
    fn charge_reclaim(&mut self, cg: u32) {
        let mut excess = 0;
        let mut c = Some(cg);
        while let Some(i) = c {
            let m = &self.memcgs[i as usize];
            if let Some(max) = m.max_pages {
                excess = excess.max(m.file.saturating_sub(max));
            }
            c = m.parent;
        }
        let r = excess.min(self.memcgs[cg as usize].own_clean);
        if r > 0 {
            self.memcgs[cg as usize].own_clean -= r;
            self.memcg_walk(cg, |m| m.file -= r);
        }
    }

    /// The global `dirty_throttle_control`'s domain part (`domain_dirty_avail()`,
    /// `domain_dirty_limits()`, the freerun test).
    fn global_dtc(&self, include_writeback: bool) -> Dtc {
        let dirty = self.nr_dirty
            + if include_writeback {
                self.nr_writeback
            } else {
                0
            };
        let (thresh, bg_thresh) = limits::domain_dirty_limits(&self.vm.dirty, self.dirtyable, None);
        Dtc {
            avail: self.dirtyable,
            dirty,
            thresh,
            bg_thresh,
            dom_dirty_limit: self.global.dirty_limit,
            freerun: dirty <= limits::freerun_ceiling(thresh, bg_thresh),
            ..Dtc::default()
        }
    }

    /// A memcg domain's (`mem_cgroup_wb_stats()`, `mdtc_calc_avail()`).
    fn memcg_dtc(&self, cg: u32, g: &Dtc, include_writeback: bool) -> Dtc {
        let m = &self.memcgs[cg as usize];
        let dirty = m.dirty + if include_writeback { m.writeback } else { 0 };
        let mut headroom = u64::MAX;
        let mut c = Some(cg);
        while let Some(i) = c {
            let x = &self.memcgs[i as usize];
            if x.parent.is_none() {
                break;
            }
            let ceiling = x.max_pages.unwrap_or(u64::MAX);
            headroom = headroom.min(ceiling - ceiling.min(x.file));
            c = x.parent;
        }
        let filepages = m.file;
        let clean = filepages - filepages.min(dirty);
        let global_clean = g.avail - g.avail.min(g.dirty);
        let other_clean = global_clean - global_clean.min(clean);
        let avail = filepages + headroom.min(other_clean);
        let (thresh, bg_thresh) = limits::domain_dirty_limits(&self.vm.dirty, avail, Some(g.avail));
        Dtc {
            avail,
            dirty,
            thresh,
            bg_thresh,
            dom_dirty_limit: m.domain.dirty_limit,
            freerun: dirty <= limits::freerun_ceiling(thresh, bg_thresh),
            ..Dtc::default()
        }
    }

    /// `wb_dirty_limits()` then `wb_dirty_exceeded()` and `wb_position_ratio()`
    /// (`balance_wb_limits()`) for wb `cg` in a domain; `global` picks the domain
    /// whose completions give the wb's share (a memcg domain has this one wb on the
    /// device: its share is all).
    fn balance_wb_limits(&mut self, now: u64, cg: u32, d: &mut Dtc, global: bool) {
        let (num, den) = if global {
            self.global.age(now, completions_period(self.hz));
            let wb = &mut self.wbs[cg as usize];
            self.global.fraction(&mut wb.completions)
        } else {
            (1, 1)
        };
        let wb = &self.wbs[cg as usize];
        d.wb_thresh = limits::wb_calc_thresh(d.thresh, num, den);
        d.wb_bg_thresh = (d.wb_thresh * d.bg_thresh)
            .checked_div(d.thresh)
            .unwrap_or(0);
        d.wb_dirty = wb.reclaimable + wb.writeback;
        d.dirty_exceeded = d.wb_dirty > d.wb_thresh && d.dirty > d.thresh;
        d.pos_ratio = limits::wb_position_ratio(d, wb.bw.avg_write_bandwidth);
    }

    /// `writeback_in_progress()` is the pipeline's to tell (its flusher runs);
    /// `balance_dirty_pages()` for writer `t`, one round. `flushing`: the wb's flusher
    /// is running.
    pub fn balance_dirty_pages(&mut self, now: u64, t: u32, flushing: bool) -> Bdp {
        let hz = self.hz;
        let cg = self.files[t as usize].cgroup;
        let pages_dirtied = self.tasks[t as usize].nr_dirtied;
        let mut out = Bdp::default();
        let mut g = self.global_dtc(true);
        let mut m = (cg != 0).then(|| self.memcg_dtc(cg, &g, true));
        if self.nr_dirty > g.bg_thresh && !flushing {
            out.start_background = true;
        }
        let free_running = |w: &Writeback, g: &Dtc, m: &Option<Dtc>| {
            let _ = w;
            let intv = limits::dirty_poll_interval(g.dirty, g.thresh);
            let m_intv = m
                .as_ref()
                .map_or(u64::MAX, |m| limits::dirty_poll_interval(m.dirty, m.thresh));
            intv.min(m_intv)
        };
        if g.freerun && m.as_ref().is_none_or(|m| m.freerun) {
            let pause = free_running(self, &g, &m);
            let task = &mut self.tasks[t as usize];
            task.dirty_paused_when = now;
            task.nr_dirtied = 0;
            task.nr_dirtied_pause = pause;
            return out;
        }
        if !flushing {
            out.start_background = true;
        }
        self.balance_wb_limits(now, cg, &mut g, true);
        let mut use_memcg = false;
        if let Some(md) = m.as_mut() {
            self.balance_wb_limits(now, cg, md, false);
            use_memcg = md.pos_ratio < g.pos_ratio;
        }
        let wb = &mut self.wbs[cg as usize];
        wb.dirty_exceeded = g.dirty_exceeded || m.as_ref().is_some_and(|m| m.dirty_exceeded);
        if wb.bw.bw_time_stamp + limits::max_pause(hz) < now {
            self.update_bandwidth(now, cg, Some((&g, m.as_ref())));
        }
        let s = if use_memcg {
            m.as_ref().unwrap_or(&g)
        } else {
            &g
        };
        let wb = &self.wbs[cg as usize];
        let dirty_ratelimit = wb.bw.dirty_ratelimit;
        let task_ratelimit = ((u128::from(dirty_ratelimit) * u128::from(s.pos_ratio))
            >> limits::RATELIMIT_CALC_SHIFT) as u64;
        let max_pause = limits::wb_max_pause(hz, wb.bw.avg_write_bandwidth, s.wb_dirty);
        let (min_pause, nr_dirtied_pause) = limits::wb_min_pause(
            hz,
            wb.bw.avg_write_bandwidth,
            max_pause,
            task_ratelimit,
            dirty_ratelimit,
        );
        let s_wb_dirty = s.wb_dirty;
        let task = &mut self.tasks[t as usize];
        let mut now_l = now;
        // the rate limit is 0 over the hard limit: the longest pause, then again
        let pause = match (hz * pages_dirtied).checked_div(task_ratelimit) {
            None => max_pause,
            Some(period) => {
                let mut p = period as i64;
                if task.dirty_paused_when != 0 {
                    p -= now as i64 - task.dirty_paused_when as i64;
                }
                if p < min_pause as i64 {
                    if p < -(hz as i64) {
                        task.dirty_paused_when = now;
                        task.nr_dirtied = 0;
                    } else if period > 0 {
                        task.dirty_paused_when += period;
                        task.nr_dirtied = 0;
                    } else if task.nr_dirtied_pause <= pages_dirtied {
                        task.nr_dirtied_pause += pages_dirtied;
                    }
                    return out;
                }
                let p = p as u64;
                if p > max_pause {
                    now_l += (p - max_pause).min(max_pause);
                }
                p.min(max_pause)
            }
        };
        task.dirty_paused_when = now_l + pause;
        task.nr_dirtied = 0;
        task.nr_dirtied_pause = nr_dirtied_pause;
        out.pause = pause;
        out.again = task_ratelimit == 0 && s_wb_dirty > WB_STAT_ERROR;
        out
    }

    /// `__wb_update_bandwidth()`: with `ratelimit` (from `balance_dirty_pages()`, the
    /// domains it computed) the domains' `dirty_limit` and the wb's rate limit too;
    /// else (`wb_update_bandwidth()`) the write bandwidth alone.
    pub fn update_bandwidth(&mut self, now: u64, cg: u32, ratelimit: Option<(&Dtc, Option<&Dtc>)>) {
        let hz = self.hz;
        let interval = limits::max_pause(hz);
        let wb = &self.wbs[cg as usize];
        let elapsed = now.saturating_sub(wb.bw.bw_time_stamp).max(1);
        let (dirtied, written) = (wb.dirtied, wb.written);
        if let Some((g, m)) = ratelimit {
            update_dirty_limit(&mut self.global, g, now, interval);
            self.wbs[cg as usize]
                .bw
                .update_dirty_ratelimit(hz, g, dirtied, elapsed);
            if let Some(m) = m {
                update_dirty_limit(&mut self.memcgs[cg as usize].domain, m, now, interval);
                self.wbs[cg as usize]
                    .bw
                    .update_dirty_ratelimit(hz, m, dirtied, elapsed);
            }
        }
        let bw = &mut self.wbs[cg as usize].bw;
        bw.update_write_bandwidth(hz, elapsed, written);
        bw.dirtied_stamp = dirtied;
        bw.written_stamp = written;
        bw.bw_time_stamp = now;
    }

    /// `wb_over_bg_thresh()`: the dirty pages (not those under writeback) are over
    /// the background threshold, globally or the wb's share of it, in either domain.
    pub fn over_bg_thresh(&mut self, now: u64, cg: u32) -> bool {
        let g = self.global_dtc(false);
        if g.dirty > g.bg_thresh {
            return true;
        }
        self.global.age(now, completions_period(self.hz));
        let wb = &mut self.wbs[cg as usize];
        let (num, den) = self.global.fraction(&mut wb.completions);
        let wb_dirty = wb.reclaimable;
        if wb_dirty > limits::wb_calc_thresh(g.bg_thresh, num, den) {
            return true;
        }
        if cg == 0 {
            return false;
        }
        let m = self.memcg_dtc(cg, &g, false);
        m.dirty > m.bg_thresh || wb_dirty > m.bg_thresh
    }

    /// Whether wb `cg` has dirty files (`wb_has_dirty_io()`).
    pub fn has_dirty(&self, cg: u32) -> bool {
        self.wbs[cg as usize].reclaimable > 0
    }

    /// One chunk of the flusher's writeback of wb `cg` (`wb_writeback()` →
    /// `writeback_sb_inodes()` → `write_cache_pages()`): the next file with pages to
    /// write, up to `writeback_chunk_size()` of them from its `writeback_index`, as
    /// runs of at most `max_run` pages into `out` (file, first page, pages). False when
    /// the work is done: under the background thresholds, or (periodic) no file
    /// dirtied long enough ago.
    pub fn next_chunk(
        &mut self,
        now: u64,
        cg: u32,
        kind: WorkKind,
        max_run: u64,
        out: &mut Vec<(u32, u64, u64)>,
    ) -> bool {
        if kind == WorkKind::Background && !self.over_bg_thresh(now, cg) {
            return false;
        }
        let expire = self.vm.dirty_expire_centisecs * self.hz / 100;
        let dirtied_before = match kind {
            WorkKind::Kupdate => now.saturating_sub(expire),
            WorkKind::Background => now,
            WorkKind::Sync => u64::MAX,
        };
        let wb = &self.wbs[cg as usize];
        let n = wb.files.len();
        let pick = (0..n)
            .map(|k| wb.files[(wb.cursor + k) % n.max(1)])
            .find(|&f| {
                self.files[f as usize]
                    .dirtied_when
                    .is_some_and(|w| w <= dirtied_before)
            });
        let Some(f) = pick else {
            return false;
        };
        let pos = wb.files.iter().position(|&x| x == f).unwrap_or(0);
        // writeback_chunk_size(): all of it for WB_SYNC_ALL
        let pages = (wb.bw.avg_write_bandwidth / 2).min(self.global.dirty_limit / DIRTY_SCOPE);
        self.wbs[cg as usize].cursor = pos + 1;
        let pages = match kind {
            WorkKind::Sync => u64::MAX,
            _ => (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES,
        };
        let mut runs = Vec::new();
        let file = &mut self.files[f as usize];
        file.writeback_index = file
            .dirty
            .take(file.writeback_index, pages, max_run, &mut runs);
        self.start_writeback(now, f, &runs, out);
        true
    }

    /// `fsync()` of writer `t`'s file (`file_write_and_wait_range()`, `WB_SYNC_ALL`):
    /// every dirty page goes under writeback, as runs of at most `max_run` pages into
    /// `out`; the caller then waits for the file's writeback to end.
    pub fn fsync(&mut self, now: u64, t: u32, max_run: u64, out: &mut Vec<(u32, u64, u64)>) {
        let mut runs = Vec::new();
        self.files[t as usize].dirty.take_all(max_run, &mut runs);
        self.start_writeback(now, t, &runs, out);
    }

    fn start_writeback(
        &mut self,
        now: u64,
        f: u32,
        runs: &[(u64, u64)],
        out: &mut Vec<(u32, u64, u64)>,
    ) {
        let n: u64 = runs.iter().map(|r| r.1).sum();
        if n == 0 {
            return;
        }
        let hz = self.hz;
        let file = &mut self.files[f as usize];
        let cg = file.cgroup;
        let first_writeback = file.writeback == 0;
        file.writeback += n;
        if file.dirty.count() == 0 {
            file.dirtied_when = None;
        }
        let wb = &mut self.wbs[cg as usize];
        if first_writeback {
            // wb_inode_writeback_start() → wb_bandwidth_estimate_start(): after an
            // idle second the estimate restarts from now
            if wb.writeback_inodes == 0 && now.saturating_sub(wb.bw.bw_time_stamp) > hz {
                wb.bw.dirtied_stamp = wb.dirtied;
                wb.bw.written_stamp = wb.written;
                wb.bw.bw_time_stamp = now;
            }
            wb.writeback_inodes += 1;
        }
        wb.reclaimable -= n;
        wb.writeback += n;
        self.nr_dirty -= n;
        self.nr_writeback += n;
        self.memcg_walk(cg, |m| {
            m.dirty -= n;
            m.writeback += n;
        });
        out.extend(runs.iter().map(|&(p, k)| (f, p, k)));
        // do_writepages(): a bandwidth update now and then under constant writeback
        if self.wbs[cg as usize].bw.bw_time_stamp + limits::max_pause(hz) < now {
            self.update_bandwidth(now, cg, None);
        }
    }

    /// `__folio_end_writeback()` of `n` pages of file `f`: written, clean, counted
    /// in the wb's share of the domain's completions (`__wb_writeout_add()`). True when
    /// the file has no more pages under writeback (`wb_inode_writeback_end()`: the
    /// pipeline then updates the bandwidth `BANDWIDTH_INTERVAL` later).
    pub fn end_writeback(&mut self, now: u64, f: u32, n: u64) -> bool {
        let hz = self.hz;
        let file = &mut self.files[f as usize];
        let cg = file.cgroup;
        file.writeback -= n;
        let file_done = file.writeback == 0;
        let wb = &mut self.wbs[cg as usize];
        wb.writeback -= n;
        wb.written += n;
        if file_done {
            wb.writeback_inodes -= 1;
        }
        self.nr_writeback -= n;
        self.memcg_walk(cg, |m| m.writeback -= n);
        self.memcgs[cg as usize].own_clean += n;
        // wb_domain_writeout_add(): the first event after the aging stopped starts it
        let len = completions_period(hz);
        self.global.age(now, len);
        let wb = &mut self.wbs[cg as usize];
        self.global.reflect(&mut wb.completions);
        wb.completions.events += n;
        self.global.events += n;
        if self.global.period_time == 0 {
            self.global.period_time = (now + len).max(1);
        }
        file_done
    }

    /// The wb's periodic-writeback interval in jiffies (0: off).
    pub fn writeback_interval(&self) -> u64 {
        self.vm.dirty_writeback_centisecs * self.hz / 100
    }
}

/// The page-cache lines of a run's summary: the thresholds the run had, then one line
/// per cgroup that wrote buffered (`paused`: its writers' time in
/// `balance_dirty_pages()`), and when the last page reached the device.
pub fn summary(
    w: &Writeback,
    cgroup_name: impl Fn(u32) -> String,
    paused: impl Fn(u32) -> u64,
    clean_at: Option<u64>,
    writers_done: u64,
) -> String {
    let mib = |pages: u64| pages as f64 * PAGE_SIZE as f64 / f64::from(1 << 20);
    let g = w.global_state();
    let mut s = format!(
        "page cache: dirty limit {:.0} MiB, background {:.0} MiB, freerun {:.0} MiB \
         (of {:.0} MiB dirtyable)\n",
        mib(g.thresh),
        mib(g.bg_thresh),
        mib(limits::freerun_ceiling(g.thresh, g.bg_thresh)),
        mib(w.dirtyable)
    );
    for (cg, wb) in w.wbs.iter().enumerate() {
        if wb.dirtied == 0 {
            continue;
        }
        let cg = cg as u32;
        let own = w
            .memcg_limits(cg)
            .filter(|_| w.memcgs[cg as usize].max_pages.is_some())
            .map(|(t, bg)| {
                format!(
                    " (memory.max: its own limit {:.0} MiB, background {:.0} MiB)",
                    mib(t),
                    mib(bg)
                )
            })
            .unwrap_or_default();
        s += &format!(
            "  {}: dirtied {:.1} MiB, written back {:.1} MiB, at most {:.1} MiB dirty or \
             under writeback at once{own}; its writers paused {} in balance_dirty_pages()\n",
            cgroup_name(cg),
            mib(wb.dirtied),
            mib(wb.written),
            mib(wb.peak),
            crate::sim::time_text(paused(cg)),
        );
    }
    if let Some(t) = clean_at {
        s += &format!(
            "  the last page reached the device at {:.3} s, {:.3} s after the writers ended \
             (the device's last close writes back what is dirty, sync_blockdev(); the run \
             follows the writeback to its end)\n",
            t as f64 / 1e9,
            t.saturating_sub(writers_done) as f64 / 1e9
        );
    }
    s
}

/// `domain_update_dirty_limit()` → `update_dirty_limit()`: follow a rising `thresh` at
/// once, a falling one by 1/32 of the gap each `BANDWIDTH_INTERVAL`.
fn update_dirty_limit(dom: &mut Domain, d: &Dtc, now: u64, interval: u64) {
    if now < dom.dirty_limit_tstamp + interval {
        return;
    }
    let limit = dom.dirty_limit;
    if limit < d.thresh {
        dom.dirty_limit = d.thresh;
    } else {
        let thresh = d.thresh.max(d.dirty);
        if limit > thresh {
            dom.dirty_limit = limit - ((limit - thresh) >> 5);
        }
    }
    dom.dirty_limit_tstamp = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_writer(memory: u64, max: Option<u64>) -> Writeback {
        Writeback::new(&WritebackConfig {
            hz: 250,
            vm: VmWriteback::default(),
            dirtyable_bytes: memory,
            cgroups: vec![(None, None), (Some(0), max)],
            writers: vec![1],
            one_cpu: true,
            jiffies0: 1000,
        })
    }

    #[test]
    fn a_writer_runs_free_until_the_freerun_ceiling() {
        // 1 GiB dirtyable: thresh 52,416, bg 26,176, freerun 39,296 pages
        let mut w = one_writer(1 << 30, None);
        let g = w.global_state();
        assert_eq!((g.thresh, g.bg_thresh), (52_416, 26_176));
        let (new, first) = w.dirty_pages(1000, 0, 0, 30_000);
        assert_eq!((new, first), (30_000, true));
        let b = w.balance_dirty_pages(1000, 0, false);
        assert_eq!(b.pause, 0);
        assert!(b.start_background);
        w.dirty_pages(1001, 0, 30_000, 15_000);
        let b = w.balance_dirty_pages(1001, 0, true);
        assert!(b.pause > 0, "{b:?}");
    }

    #[test]
    fn a_memory_max_gives_the_cgroup_its_own_lower_limits() {
        let mut w = one_writer(16 << 30, Some(256 << 20));
        let (t, bg) = w.memcg_limits(1).unwrap();
        // a fifth and a tenth of the 65,536 pages it may use
        assert_eq!((t, bg), (13_104, 6_544));
        w.dirty_pages(1000, 0, 0, 12_000);
        let b = w.balance_dirty_pages(1000, 0, true);
        assert!(b.pause > 0, "{b:?}");
    }

    #[test]
    fn the_flusher_writes_chunks_until_under_the_background_threshold() {
        let mut w = one_writer(1 << 30, None);
        let mut out = Vec::new();
        let mut flush = |w: &mut Writeback, now| {
            let mut chunks = 0;
            out.clear();
            while w.next_chunk(now, 1, WorkKind::Background, 256, &mut out) {
                chunks += 1;
            }
            for &(f, _, n) in &out {
                w.end_writeback(now + 10, f, n);
            }
            chunks
        };
        // a wb that has written nothing yet has no share of the background threshold:
        // it writes everything, in chunks of round_down(52,416 / 8 + 1,024, 1,024)
        w.dirty_pages(1000, 0, 0, 30_000);
        assert_eq!(flush(&mut w, 1000), 5);
        assert_eq!(
            (w.nr_dirty, w.nr_writeback, w.wbs[1].written),
            (0, 0, 30_000)
        );
        // with all the domain's completions its share is the whole threshold
        w.dirty_pages(2000, 0, 30_000, 30_000);
        assert_eq!(flush(&mut w, 2000), 1);
        assert_eq!(w.nr_dirty, 30_000 - 7_168);
    }

    #[test]
    fn periodic_writeback_takes_only_expired_files() {
        let mut w = one_writer(1 << 30, None);
        w.dirty_pages(1000, 0, 0, 100);
        let mut out = Vec::new();
        assert!(!w.next_chunk(1000 + 7499, 1, WorkKind::Kupdate, 256, &mut out));
        assert!(w.next_chunk(1000 + 7500, 1, WorkKind::Kupdate, 256, &mut out));
        assert_eq!(out, vec![(0, 0, 100)]);
        assert!(!w.has_dirty(1));
    }
}
