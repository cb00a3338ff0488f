//! The page cache: buffered writes' dirty pages, dirty throttling and cgroup
//! writeback (`mm/page-writeback.c`, `fs/fs-writeback.c`, 6.12), and what buffered
//! reads find cached (`mm/filemap.c`, `mm/readahead.c`).
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
//! until the dirty pages reach the setpoint. A buffered read finds pages cached — its
//! own earlier reads, readahead's, the pages its job wrote — and what it misses
//! readahead reads in, windows ahead of it ([`readahead`]); read-in pages are clean
//! pages charged to the reader's memory cgroup.
//!
//! Moving parts and where they live:
//! - [`limits`]: the kernel's arithmetic, function by function (thresholds, the
//!   position ratio, the bandwidth and rate-limit estimators, the pause bounds);
//! - [`pagecache`]: one file's dirty pages, and what a read finds of it, as page
//!   ranges;
//! - [`readahead`]: the readahead window and the kernel's rules for it;
//! - [`timeline`]: `writeback.csv` and its picture, from the pipeline's samples;
//! - [`Writeback`] (here): the state those functions read — the global and per-memcg
//!   domains (`wb_domain`: the fraction of recent writeout each wb did, the smoothed
//!   `dirty_limit`), each wb's counters and estimators, each file (its dirty pages,
//!   its wb, when it was first dirtied) and each writer task (`nr_dirtied`,
//!   `nr_dirtied_pause`, `dirty_paused_when`); [`Writeback::balance_dirty_pages`] is
//!   the writer's side, [`Writeback::next_chunk`] / [`Writeback::fsync`] /
//!   [`Writeback::end_writeback`] the flusher's, [`Writeback::read_batch`] /
//!   [`Writeback::read_miss`] / [`Writeback::read_marked`] / [`Writeback::read_done`]
//!   a reader's;
//! - the flusher as a submission context, the writer's pause and the fsync wait:
//!   `crate::sim::writeback` (the pipeline's side); a reader's call:
//!   `crate::sim::readahead`; fio's buffered job: `crate::sim::fio`.
//!
//! Versions: 6.1's `domain_dirty_limits()`, `wb_position_ratio()`,
//! `wb_update_dirty_ratelimit()` and `wb_min_pause()` compute the same as 6.12's (its
//! `__wb_calc_thresh()` counts a bdi's ratios in percent where 6.12 counts 1/10000ths:
//! the same with the defaults), so dirty throttling has no behaviour switch; both are
//! checked on real kernels (docs/validation.md §40). Readahead's rules changed in 6.11
//! (`mm.readahead`, [`readahead`]).
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
//! - clean pages are counted per memory cgroup and reclaimed (without cost) when a
//!   `memory.max`, or the dirtyable memory, would be passed: the pages the cgroup's
//!   reads brought in are dropped from the cache oldest first (no active list, no
//!   refaults); pages its jobs wrote stay cached for their reads once clean, only
//!   their count drops; `memory.high`, anonymous memory, the
//!   metadata and journal writes of a filesystem, laptop mode and the strict limit of
//!   FUSE-like devices are not modelled;
//! - the counters are exact where the kernel's are per-CPU approximations.

pub mod limits;
pub mod pagecache;
pub mod readahead;
pub mod timeline;

use std::collections::VecDeque;

use limits::{DirtySysctls, Dtc, PAGE_SIZE, WbBandwidth};
use pagecache::{CachedPages, DirtyPages, PageRanges};
use readahead::{Bdi, Fadvise, MmBehaviour, RaRead, RaState};

/// `VM_COMPLETIONS_PERIOD_LEN`: the writeout fractions halve every 3 s.
fn completions_period(hz: u64) -> u64 {
    3 * hz
}
/// `MIN_WRITEBACK_PAGES`: 4 MiB.
const MIN_WRITEBACK_PAGES: u64 = 4096 >> 2;
/// `DIRTY_SCOPE`.
const DIRTY_SCOPE: u64 = 8;
/// `PAGEVEC_SIZE`: a read's batch of folios (`filemap_get_read_batch()`).
const READ_BATCH: u64 = 31;
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
    /// Readahead: the kernel's rules and the device's limits.
    pub mm: MmBehaviour,
    pub bdi: Bdi,
    /// The device's size in pages: every job's file is the device (`i_size`).
    pub isize_pages: u64,
    /// Each job's `posix_fadvise()` of its file.
    pub advice: Vec<Fadvise>,
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
    /// The ranges its reads brought in, oldest first (file, first page, pages): what
    /// its reclaim drops from the cache.
    reads: VecDeque<(u32, u64, u64)>,
    domain: Domain,
}

/// One fio job's file.
#[derive(Debug, Clone, Default)]
pub struct File {
    pub cgroup: u32,
    pub dirty: DirtyPages,
    /// Pages under writeback: how many, and which (a page written twice at once
    /// counts twice, and leaves the set at its first end).
    pub writeback: u64,
    under_writeback: PageRanges,
    /// `inode->dirtied_when`: when it went from clean to dirty (jiffies).
    dirtied_when: Option<u64>,
    /// `mapping->writeback_index`: where the range-cyclic walk goes on.
    writeback_index: u64,
    /// What a read finds cached, and the file's readahead window.
    pub cache: CachedPages,
    pub ra: RaState,
    /// The file's `ra->ra_pages` and `FMODE_RANDOM`, after its job's `fadvise()`.
    ra_pages: u64,
    random: bool,
    /// Pages its reads asked for, how many of them were cached already, and the
    /// pages its reads brought in (readahead included).
    pub read_asked: u64,
    pub read_hits: u64,
    pub read_in: u64,
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
    mm: MmBehaviour,
    bdi: Bdi,
    isize_pages: u64,
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
                .enumerate()
                .map(|(j, &cgroup)| {
                    let advice = cfg.advice.get(j).copied().unwrap_or_default();
                    File {
                        cgroup,
                        // file_ra_state_init(), then generic_fadvise()
                        ra_pages: match advice {
                            Fadvise::Sequential => cfg.bdi.ra_pages * 2,
                            _ => cfg.bdi.ra_pages,
                        },
                        random: advice == Fadvise::Random,
                        ..File::default()
                    }
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
            mm: cfg.mm,
            bdi: cfg.bdi,
            isize_pages: cfg.isize_pages,
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
        // pages new to the cache are charged; cached clean ones turn dirty
        let new_present = file.cache.present.mark(first, n);
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
            m.file += new_present;
        });
        let own = &mut self.memcgs[cg as usize].own_clean;
        *own = own.saturating_sub(new - new_present);
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
        // the whole cache past the memory it may fill: the same, globally
        let global = self.memcgs[0].file.saturating_sub(self.dirtyable);
        let r = excess.max(global).min(self.memcgs[cg as usize].own_clean);
        if r > 0 {
            self.memcgs[cg as usize].own_clean -= r;
            self.memcg_walk(cg, |m| m.file -= r);
            self.evict_reads(cg, r);
        }
    }

    /// Drop up to `n` pages that `cg`'s reads brought in, oldest first, from the
    /// cache (pages dirtied since stay).
    fn evict_reads(&mut self, cg: u32, mut n: u64) {
        while n > 0 {
            let Some((f, first, k)) = self.memcgs[cg as usize].reads.pop_front() else {
                return;
            };
            let take = k.min(n);
            if take < k {
                self.memcgs[cg as usize]
                    .reads
                    .push_front((f, first + take, k - take));
            }
            let file = &mut self.files[f as usize];
            let dirty: Vec<(u64, u64)> = file.dirty.pages().within(first, take).collect();
            file.cache.present.remove(first, take);
            for (s, e) in dirty {
                file.cache.present.mark(s, e - s);
            }
            file.cache.marks.retain(|&m| m < first || m >= first + take);
            n -= take;
        }
    }

    /// A buffered read of job `t` at page `index`, `req` pages to its end: the batch it
    /// finds cached (`filemap_get_read_batch()`, at most `PAGEVEC_SIZE` pages, ending
    /// at the first page still being read or marked `PG_readahead`); 0 when `index` is
    /// not cached.
    pub fn read_batch(&self, t: u32, index: u64, req: u64) -> u64 {
        self.files[t as usize]
            .cache
            .read_batch(index, index + req, READ_BATCH)
    }

    /// Whether page `p` of job `t`'s file is still being read.
    pub fn read_pending(&self, t: u32, p: u64) -> bool {
        self.files[t as usize].cache.locked.contains(p)
    }

    /// A read of job `t` found page `index` missing (`page_cache_sync_ra()`), or
    /// (`create`) readahead left it missing (`filemap_create_folio()`: that page
    /// alone): the pages to read go to `out` as runs of at most `max_run`.
    pub fn read_miss(
        &mut self,
        t: u32,
        index: u64,
        req: u64,
        create: bool,
        max_run: u64,
        out: &mut Vec<(u64, u64)>,
    ) {
        let mut reads = Vec::new();
        let file = &mut self.files[t as usize];
        if create {
            reads.push(RaRead {
                index,
                nr: 1,
                lookahead: 0,
            });
        } else {
            let bdi = Bdi {
                ra_pages: file.ra_pages,
                ..self.bdi
            };
            readahead::sync_ra(
                self.mm.readahead,
                &mut file.ra,
                &file.cache.present,
                bdi,
                file.random,
                index,
                req,
                &mut reads,
            );
        }
        self.read_in(t, &reads, max_run, out);
    }

    /// The last page of a read's batch, `p`, carried `PG_readahead`: clear it and
    /// start the next window (`filemap_readahead()` → `page_cache_async_ra()`); the
    /// pages to read go to `out`.
    pub fn read_marked(
        &mut self,
        t: u32,
        p: u64,
        req: u64,
        max_run: u64,
        out: &mut Vec<(u64, u64)>,
    ) {
        let file = &mut self.files[t as usize];
        if !file.cache.take_mark(p) {
            return;
        }
        let bdi = Bdi {
            ra_pages: file.ra_pages,
            ..self.bdi
        };
        let r = readahead::async_ra(
            self.mm.readahead,
            &mut file.ra,
            &file.cache.present,
            bdi,
            p,
            req,
        );
        self.read_in(t, r.as_slice(), max_run, out);
    }

    /// The pages of `reads` not cached yet join job `t`'s file, locked, charged to its
    /// cgroup (`filemap_add_folio()`), as runs into `out`.
    fn read_in(&mut self, t: u32, reads: &[RaRead], max_run: u64, out: &mut Vec<(u64, u64)>) {
        let isize = self.isize_pages;
        let file = &mut self.files[t as usize];
        let cg = file.cgroup;
        let added: u64 = reads
            .iter()
            .map(|&r| file.cache.alloc_for_read(r, isize, max_run, out))
            .sum();
        file.read_in += added;
        if added > 0 {
            self.memcg_walk(cg, |m| m.file += added);
            self.charge_reclaim(cg);
        }
    }

    /// A read of `n` pages from `first` of job `f`'s file completed: they are uptodate,
    /// clean, and the oldest its cgroup's reclaim would drop next.
    pub fn read_done(&mut self, f: u32, first: u64, n: u64) {
        let file = &mut self.files[f as usize];
        file.cache.locked.remove(first, n);
        let m = &mut self.memcgs[file.cgroup as usize];
        m.own_clean += n;
        m.reads.push_back((f, first, n));
    }

    /// Whether page `p` of job `t`'s file is in the cache.
    pub fn read_cached(&self, t: u32, p: u64) -> bool {
        self.files[t as usize].cache.present.contains(p)
    }

    /// A read of `n` pages from `first` of job `f`'s file failed: they are not uptodate;
    /// they leave the cache (uncharged) and a later read reads them again.
    pub fn read_failed(&mut self, f: u32, first: u64, n: u64) {
        let file = &mut self.files[f as usize];
        file.cache.locked.remove(first, n);
        let dropped = file.cache.present.remove(first, n);
        file.cache.marks.retain(|&m| m < first || m >= first + n);
        let cg = file.cgroup;
        self.memcg_walk(cg, |m| m.file -= dropped);
    }

    /// Job `t`'s read ended at byte `pos` (`ra->prev_pos`), having asked for `asked`
    /// pages of which `hits` were cached when it came to them.
    pub fn read_ended(&mut self, t: u32, pos: u64, asked: u64, hits: u64) {
        let file = &mut self.files[t as usize];
        file.ra.prev_pos = pos;
        file.read_asked += asked;
        file.read_hits += hits;
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

    /// `fsync()` of writer `t`'s file (`file_write_and_wait_range()`), or a
    /// `sync_file_range()` of its pages `(first, n)` (`__filemap_fdatawrite_range()`):
    /// every dirty page in the range goes under writeback, as runs of at most `max_run`
    /// pages into `out`; the caller then waits for the range's writeback to end
    /// ([`Writeback::writeback_in`]).
    pub fn fsync(
        &mut self,
        now: u64,
        t: u32,
        (first, n): (u64, u64),
        max_run: u64,
        out: &mut Vec<(u32, u64, u64)>,
    ) {
        let mut runs = Vec::new();
        self.files[t as usize]
            .dirty
            .take_in(first, n, max_run, &mut runs);
        self.start_writeback(now, t, &runs, out);
    }

    /// Whether any of file `f`'s pages `(first, n)` is under writeback
    /// (`__filemap_fdatawait_range()` would sleep).
    /// `None`: the whole file.
    pub fn writeback_in(&self, f: u32, pages: Option<(u64, u64)>) -> bool {
        let file = &self.files[f as usize];
        match pages {
            None => file.writeback > 0,
            Some((first, n)) => file.under_writeback.within(first, n).next().is_some(),
        }
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
        for &(p, k) in runs {
            self.files[f as usize].under_writeback.mark(p, k);
        }
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
    pub fn end_writeback(&mut self, now: u64, f: u32, (first, n): (u64, u64)) -> bool {
        let hz = self.hz;
        let file = &mut self.files[f as usize];
        let cg = file.cgroup;
        file.writeback -= n;
        file.under_writeback.remove(first, n);
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
    // the readers, per cgroup: what they asked, found and read in
    let mut reads: Vec<(u32, u64, u64, u64)> = Vec::new();
    for f in w.files.iter().filter(|f| f.read_asked > 0) {
        match reads.iter_mut().find(|r| r.0 == f.cgroup) {
            Some(r) => {
                r.1 += f.read_asked;
                r.2 += f.read_hits;
                r.3 += f.read_in;
            }
            None => reads.push((f.cgroup, f.read_asked, f.read_hits, f.read_in)),
        }
    }
    for (cg, asked, hits, read_in) in reads {
        s += &format!(
            "  {}: read {:.1} MiB, {:.1}% of it found in the page cache (read ahead, or left \
             by earlier I/O); {:.1} MiB read in from the device\n",
            cgroup_name(cg),
            mib(asked),
            hits as f64 * 100.0 / asked as f64,
            mib(read_in),
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
            mm: readahead::behaviour_for("6.12", &[]).unwrap(),
            bdi: Bdi {
                ra_pages: readahead::VM_READAHEAD_PAGES,
                io_pages: 256,
            },
            isize_pages: 1 << 20,
            advice: vec![Fadvise::Sequential],
        })
    }

    #[test]
    fn a_read_charges_its_cgroup_and_reclaim_drops_the_oldest_reads() {
        // 1 MiB of memory.max: 256 pages
        let mut w = one_writer(1 << 30, Some(1 << 20));
        let mut runs = Vec::new();
        // a miss at the file's start: the initial window, 4 pages for a 1-page read
        w.read_miss(0, 0, 1, false, 256, &mut runs);
        assert_eq!(runs, vec![(0, 4)]);
        assert_eq!(w.read_batch(0, 0, 1), 1, "present, still being read");
        assert!(w.read_pending(0, 0));
        w.read_done(0, 0, 4);
        assert!(!w.read_pending(0, 0));
        // then 300 pages more: past memory.max, the first read goes first
        runs.clear();
        w.read_in(
            0,
            &[RaRead {
                index: 100,
                nr: 300,
                lookahead: 0,
            }],
            256,
            &mut runs,
        );
        w.read_done(0, 100, 300);
        assert_eq!(runs, vec![(100, 256), (356, 44)]);
        runs.clear();
        w.read_in(
            0,
            &[RaRead {
                index: 1000,
                nr: 1,
                lookahead: 0,
            }],
            256,
            &mut runs,
        );
        assert_eq!(w.read_batch(0, 0, 1), 0, "the oldest pages were dropped");
        assert!(
            w.memcgs[1].file <= 256,
            "{} pages charged",
            w.memcgs[1].file
        );
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
            for &(f, p, n) in &out {
                w.end_writeback(now + 10, f, (p, n));
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
