//! The `[host]` table of a scenario: the CPU time the real stack spends around each
//! I/O, and the host's scheduling noise.
//!
//! Design
//! ------
//! The idea: on a fast device what a QD1 job's IOPS come down to is not the device but
//! the CPU time around each I/O — on submission (slat: a 4 KiB cost plus one per
//! further page pinned), on completion (clat: likewise), in fio's own loop between
//! reaping and the next I/O (in neither), in the policies' dispatch work item
//! (kthrotld), and in how late a sleeping task wakes (timer slack, jitter, slips). A
//! scenario states them as plain numbers ([`HostCosts`], ns and ppm), so the
//! simulator's host can be the qemu guest `validate` measures or any other.
//!
//! Moving parts: [`HostCosts`] with its defaults, its `Display` in scenario syntax
//! (the line `check` prints) and its [`HostCosts::summary`] in words (a run's
//! `assumed:` block); `resolve.rs` reads the `[host]` keys into it; the
//! pipeline (`crate::sim::engine`) charges them where the kernel and fio spend them.

use crate::sim::{NSEC_PER_MSEC, Ns, time_text};

/// Host CPU costs that real fio and the kernel add around each I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCosts {
    /// io_submit()/pread() entry to the bio entering the block layer, for a 4 KiB I/O
    /// (lands in slat).
    pub submit_ns: Ns,
    /// Added to `submit_ns` for each further 4 KiB page of the I/O (pinning the user
    /// pages and adding them to the bio): what makes a 1 MiB O_DIRECT submission slow.
    pub submit_page_ns: Ns,
    /// Completion IRQ to fio having reaped the event, for a 4 KiB I/O (lands in clat).
    pub complete_ns: Ns,
    /// Added to `complete_ns` for each further 4 KiB page (unpinning, dirtying).
    pub complete_page_ns: Ns,
    /// With `cpus = 1`: the part of the completion path run in the driver's interrupt
    /// (`blk_mq_end_request()` to `aio_complete()`), at most the whole: it takes the
    /// CPU from whatever runs, for every I/O, whether or not its job waits for it; the
    /// rest is the woken job's, until its `io_getevents()` returns.
    pub complete_irq_ns: Ns,
    /// With `cpus = 1`: the scheduler tick's interrupt (`tick_sched_timer()`), every
    /// jiffy while a task runs or I/O is in flight: it takes the CPU like a
    /// completion's, and completions due meanwhile end together after it.
    pub tick_irq_ns: Ns,
    /// `submit_ns` for fio's synchronous engines (psync, sync, pvsync): pread()/
    /// pwrite() entry to the bio, with no aio control block to set up (the whole call
    /// is a sync engine's clat). Further pages cost `submit_page_ns`.
    pub sync_submit_ns: Ns,
    /// The completion path when the driver ends a request inside `->queue_rq()`
    /// (null_blk's irqmode 0 and 1 on the submitting CPU: `blk_mq_complete_request()`
    /// completes locally, no interrupt, no wake-up), for a 4 KiB request: paid by the
    /// context that dispatched it, so a fio job's own request lands in its slat
    /// (libaio) or its call (psync). Flat: on the guests a 64 KiB request's costs no
    /// more than a 4 KiB one's (docs/validation.md §21).
    pub inline_complete_ns: Ns,
    /// A buffered `write()`'s copy of one 4 KiB page into the page cache
    /// (`generic_perform_write()`: the folio lookup, the copy, marking it dirty),
    /// paid by the writer in its call (`crate::sim::writeback`). 1 µs by default:
    /// 1 MiB `write()`s of a GiB into an ext4 file's page cache on this project's
    /// machines take 0.9–1.2 µs a page (`dd bs=1M`, 3.5 GB/s).
    pub page_copy_ns: Ns,
    /// A buffered `read()` call itself, paid by the reader: its entry and return, the
    /// page cache's lookups and `file_accessed()` (`crate::sim::readahead`). 650 ns by
    /// default: 4 KiB reads of a cached file on this project's machines take 0.89 µs a
    /// call with the copy.
    pub read_call_ns: Ns,
    /// A buffered `read()`'s copy of one cached 4 KiB page to the user
    /// (`filemap_read()` → `copy_folio_to_iter()`), paid by the reader in its call.
    /// 250 ns by default: 1 MiB reads of a cached file on this project's machines run
    /// at 16.5 GB/s.
    pub page_read_ns: Ns,
    /// A page a buffered read's readahead brings in: its allocation, its insertion
    /// into the page cache and the read's end of it (`page_cache_ra_unbounded()`,
    /// `mpage_readahead()`, `folio_end_read()`), paid by the reader with the bio's
    /// submission. 1.6 µs by default: a cold 1 GiB read (`dd bs=1M` after
    /// `POSIX_FADV_DONTNEED`) on this project's machines takes 0.48 s of system time,
    /// 1.83 µs a page with the copy.
    pub readahead_page_ns: Ns,
    /// The memory the page cache may fill with dirty pages, bytes: free and file
    /// pages, `global_dirtyable_memory()` (about `MemAvailable` in /proc/meminfo).
    /// The dirty thresholds are `vm.dirty_*` of it. 16 GiB by default.
    pub memory: u64,
    /// An async engine's reap of completions that were ready when the job came to
    /// wait (`io_getevents()` returning at once): lands in clat. A job woken by a
    /// completion pays `complete_ns` instead.
    pub reap_ns: Ns,
    /// A request's way through an elevator (insert, then dispatch: mq-deadline's
    /// `dd_insert_requests()` and `dd_dispatch_request()`), in the CPU time of the
    /// context that runs the queue (`crate::sim::plug`). The qemu guests: 1.9 µs on
    /// 6.1, 0.45 µs on 6.12 (docs/validation.md §23).
    pub elevator_ns: Ns,
    /// BFQ's own work per request beyond `elevator_ns` (`bfq_insert_requests()` and
    /// the queue's activation, `bfq_dispatch_request()`, the completion's
    /// `bfq_finish_requeue_request()`), paid by the fio job in the call that submits
    /// it, before the request reaches BFQ: what a reader's cycle costs more under BFQ
    /// than under mq-deadline. The qemu guests: 3.0 µs on 6.12, 2.8 µs on 6.1 (one
    /// reader at depth 1; 2.0–2.1 µs at depth 8, where its queue stays busy:
    /// docs/validation.md §44).
    pub bfq_ns: Ns,
    /// fio's own work per I/O between reaping and setting up the next one (its
    /// do_io() loop): in neither slat nor clat, but it paces a job at low depth.
    pub fio_loop_ns: Ns,
    /// Delay before a kernel work item runs: the policies' dispatch work (kthrotld),
    /// for bios a bio-level policy held, and kblockd's queue run for a request its
    /// submitter left to it (`crate::sim::plug`: an elevator, or a plugged psync write
    /// before 6.5), which that submitter's call waits for. The qemu guests: 6.2 µs on
    /// 6.1, 1.4 µs on 6.12 (docs/validation.md §23).
    pub workqueue_ns: Ns,
    /// `workqueue_ns` for a caller that goes to sleep with its request in its plug (a
    /// psync write before 6.5): the scheduler flushes the plug to kblockd
    /// (`sched_submit_work()`), whose queue run starts this long after. The qemu
    /// guest: 10.1 µs on 6.1 (docs/validation.md §23).
    pub sleep_flush_ns: Ns,
    /// Every sleep of a fio job (thinktime, rate pacing) ends this much late: the
    /// task's timer slack (Linux default 50 µs for normal tasks).
    pub timer_slack_ns: Ns,
    /// How late a fio sleep ends, as a measured distribution by sleep length
    /// ([`WakeupLateness`]: the timer slack and the scheduling noise together, as
    /// `blkcg-sim host probe` measures them). When set it replaces `timer_slack_ns`
    /// for fio's sleeps; `wakeup_jitter_ns` and the slips still add on top when set.
    pub wakeup_lateness: Option<WakeupLateness>,
    /// Mean of an exponentially distributed extra wake-up delay on fio's thinktime and
    /// rate sleeps (scheduling noise of a busy or virtualised host), drawn from the
    /// seeded PRNG. 0 = none.
    pub wakeup_jitter_ns: Ns,
    /// Occasional slips on top (a vCPU shared by the woken task, the other fio, kblockd
    /// and the completion interrupts): in parts per million of the sleeps, one ends
    /// late by a delay drawn uniformly in (0, `wakeup_slip_ns`]. Measured on a qemu
    /// guest's fio rate pacing (docs/validation.md §8: ~2.6% of the sleeps, up to
    /// 165 µs). 0 = none.
    pub wakeup_slip_ppm: u32,
    /// The largest such slip.
    pub wakeup_slip_ns: Ns,
    /// A submitter sleeping for a tag (`blk_mq_get_tag()`), woken by the completion
    /// that freed one (`sbitmap_queue_clear()`), asks again this much later: the
    /// completion interrupt's end and the switch to the woken task. Measured on the
    /// qemu guests (docs/validation.md §15: 6.4 µs on 6.1, 5.4 µs on 6.12).
    pub tag_wakeup_ns: Ns,
    /// Like `wakeup_slip_ppm` / `wakeup_slip_ns`, for those wake-ups: in parts per
    /// million of them, one runs late by up to `tag_wakeup_slip_ns` (another task had
    /// the guest's vCPU). 0 = none.
    pub tag_wakeup_slip_ppm: u32,
    pub tag_wakeup_slip_ns: Ns,
    /// The CPUs the fio jobs' host work shares: 0 = as many as they need (every cost
    /// is a delay of its own), 1 = one, as the qemu guest's vCPU: the jobs' costs
    /// (and the completions' interrupts, `complete_irq_ns`) are CPU time the kernel's
    /// fair class hands out (`sched.fair`: CFS or EEVDF; `crate::sim::cpu`), so a
    /// woken reaper or tag sleeper may wait for another job's work, up to a scheduler
    /// tick (docs/validation.md §38). kblockd's kworker is one of the tasks.
    pub cpus: u32,
    /// Successive fio runs (`fio = [...]`): from the last job of run k-1 ending to the
    /// jobs of run k starting, as a script sees it: fio's exit, the script's own work
    /// and the next fio's start-up (fio 3.33 takes ~0.3 s from exec to its first I/O).
    /// Long enough that a weight-based policy deactivates every idle cgroup in between.
    pub fio_restart_ns: Ns,
    /// fio's own sleep compensation (docs/validation.md §26, §28): each fio process
    /// times ten 1 µs sleeps at start-up (`fio_time_init()`) and asks the kernel for that
    /// much less on every sleep, spinning the rest (`usec_sleep()`), so a sleep ends late
    /// only by a wake-up's excess over that. Off (the default until the validated
    /// scenarios it moves are re-examined, §28): every sleep ends late by the whole
    /// lateness.
    pub fio_sleep_compensation: bool,
    /// Each fio process starts at a phase of the kernel's tick drawn from the seed,
    /// as a real fio does (its start-up takes milliseconds, none of them tick-aligned).
    /// Without it every fio starts on a whole millisecond, and a rate-paced job's I/Os
    /// fall on the jiffy boundaries the kernel's timers (blk-iocost's period,
    /// blk-throttle's slices) run at, or a fixed distance from them. Where a result
    /// hangs on that phase the seeds then span the real kernel's boot-to-boot spread
    /// (`validate-iocost-saturated`: docs/validation.md §8, session 29). Off by default
    /// and in the qemu guests' profiles until the validated scenarios it moves are
    /// re-examined (§8, §28).
    pub fio_start_phase: bool,
    /// How fio waits for a replayed log's next entry (`iolog_delay()`): off, fio 3.33's
    /// way (Debian 12's, the qemu guests'), `usec_sleep()`s that reap nothing, so what
    /// completes meanwhile waits; on, fio 3.36's and later (b85c01f7), a busy poll that
    /// reaps each completion as it comes and ends the wait on time.
    pub fio_replay_poll: bool,
}

/// In scenario syntax (`[host]` keys, ns): `submit_ns=2000 submit_page_ns=75 ...`.
impl std::fmt::Display for HostCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "submit_ns={} submit_page_ns={} complete_ns={} complete_page_ns={} fio_loop_ns={} \
             workqueue_ns={} timer_slack_ns={} wakeup_jitter_ns={} fio_restart_ns={}",
            self.submit_ns,
            self.submit_page_ns,
            self.complete_ns,
            self.complete_page_ns,
            self.fio_loop_ns,
            self.workqueue_ns,
            self.timer_slack_ns,
            self.wakeup_jitter_ns,
            self.fio_restart_ns
        )?;
        // only when set, so that the line of a host without them reads as before
        if self.wakeup_slip_ppm > 0 {
            write!(
                f,
                " wakeup_slip_ppm={} wakeup_slip_ns={}",
                self.wakeup_slip_ppm, self.wakeup_slip_ns
            )?;
        }
        let d = HostCosts::default();
        if (self.tag_wakeup_ns, self.cpus) != (d.tag_wakeup_ns, d.cpus) {
            write!(
                f,
                " tag_wakeup_ns={} cpus={}",
                self.tag_wakeup_ns, self.cpus
            )?;
        }
        if self.complete_irq_ns != d.complete_irq_ns {
            write!(f, " complete_irq_ns={}", self.complete_irq_ns)?;
        }
        if self.tick_irq_ns != d.tick_irq_ns {
            write!(f, " tick_irq_ns={}", self.tick_irq_ns)?;
        }
        if self.fio_sleep_compensation {
            write!(f, " fio_sleep_compensation=1")?;
        }
        if self.fio_start_phase {
            write!(f, " fio_start_phase=1")?;
        }
        if self.fio_replay_poll {
            write!(f, " fio_replay_poll=1")?;
        }
        if self.tag_wakeup_slip_ppm > 0 {
            write!(
                f,
                " tag_wakeup_slip_ppm={} tag_wakeup_slip_ns={}",
                self.tag_wakeup_slip_ppm, self.tag_wakeup_slip_ns
            )?;
        }
        if (self.sync_submit_ns, self.inline_complete_ns, self.reap_ns)
            != (d.sync_submit_ns, d.inline_complete_ns, d.reap_ns)
        {
            write!(
                f,
                " sync_submit_ns={} inline_complete_ns={} reap_ns={}",
                self.sync_submit_ns, self.inline_complete_ns, self.reap_ns
            )?;
        }
        let queue = (self.elevator_ns, self.bfq_ns, self.sleep_flush_ns);
        if queue != (d.elevator_ns, d.bfq_ns, d.sleep_flush_ns) {
            write!(
                f,
                " elevator_ns={} bfq_ns={} sleep_flush_ns={}",
                queue.0, queue.1, queue.2
            )?;
        }
        if (self.page_copy_ns, self.memory) != (d.page_copy_ns, d.memory) {
            write!(
                f,
                " page_copy_ns={} memory={}",
                self.page_copy_ns, self.memory
            )?;
        }
        let read = (self.read_call_ns, self.page_read_ns, self.readahead_page_ns);
        if read != (d.read_call_ns, d.page_read_ns, d.readahead_page_ns) {
            write!(
                f,
                " read_call_ns={} page_read_ns={} readahead_page_ns={}",
                read.0, read.1, read.2
            )?;
        }
        if let Some(w) = &self.wakeup_lateness {
            write!(f, " wakeup_lateness={w}")?;
        }
        Ok(())
    }
}

impl HostCosts {
    /// Every `[host]` key, as the errors list them: `profile` (a named set of the
    /// others, `crate::scenario::host_profile`), the costs and delays (ns), the
    /// counts (`cpus`, the `_ppm` shares) and the `wakeup_lateness` table.
    pub const KEYS: [&'static str; 33] = [
        "profile",
        "submit_ns",
        "submit_page_ns",
        "complete_ns",
        "complete_page_ns",
        "complete_irq_ns",
        "tick_irq_ns",
        "sync_submit_ns",
        "inline_complete_ns",
        "reap_ns",
        "page_copy_ns",
        "read_call_ns",
        "page_read_ns",
        "readahead_page_ns",
        "memory",
        "elevator_ns",
        "bfq_ns",
        "fio_loop_ns",
        "workqueue_ns",
        "sleep_flush_ns",
        "timer_slack_ns",
        "wakeup_lateness",
        "wakeup_jitter_ns",
        "wakeup_slip_ppm",
        "wakeup_slip_ns",
        "tag_wakeup_ns",
        "tag_wakeup_slip_ppm",
        "tag_wakeup_slip_ns",
        "cpus",
        "fio_restart_ns",
        "fio_sleep_compensation",
        "fio_start_phase",
        "fio_replay_poll",
    ];

    /// Sets the integer key `key` (a time in ns, or a count) to `v`; false when `key`
    /// is not one (`profile`, `wakeup_lateness`, or unknown). The caller checks the
    /// range.
    pub fn set_integer(&mut self, key: &str, v: u64) -> bool {
        let count = u32::try_from(v).unwrap_or(u32::MAX);
        match key {
            "submit_ns" => self.submit_ns = v,
            "submit_page_ns" => self.submit_page_ns = v,
            "complete_ns" => self.complete_ns = v,
            "complete_page_ns" => self.complete_page_ns = v,
            "complete_irq_ns" => self.complete_irq_ns = v,
            "tick_irq_ns" => self.tick_irq_ns = v,
            "sync_submit_ns" => self.sync_submit_ns = v,
            "inline_complete_ns" => self.inline_complete_ns = v,
            "reap_ns" => self.reap_ns = v,
            "page_copy_ns" => self.page_copy_ns = v,
            "read_call_ns" => self.read_call_ns = v,
            "page_read_ns" => self.page_read_ns = v,
            "readahead_page_ns" => self.readahead_page_ns = v,
            "memory" => self.memory = v,
            "fio_loop_ns" => self.fio_loop_ns = v,
            "workqueue_ns" => self.workqueue_ns = v,
            "sleep_flush_ns" => self.sleep_flush_ns = v,
            "elevator_ns" => self.elevator_ns = v,
            "bfq_ns" => self.bfq_ns = v,
            "timer_slack_ns" => self.timer_slack_ns = v,
            "wakeup_jitter_ns" => self.wakeup_jitter_ns = v,
            "wakeup_slip_ns" => self.wakeup_slip_ns = v,
            "tag_wakeup_ns" => self.tag_wakeup_ns = v,
            "tag_wakeup_slip_ns" => self.tag_wakeup_slip_ns = v,
            "fio_restart_ns" => self.fio_restart_ns = v,
            "cpus" => self.cpus = count,
            "wakeup_slip_ppm" => self.wakeup_slip_ppm = count,
            "tag_wakeup_slip_ppm" => self.tag_wakeup_slip_ppm = count,
            "fio_sleep_compensation" => self.fio_sleep_compensation = v > 0,
            "fio_start_phase" => self.fio_start_phase = v > 0,
            "fio_replay_poll" => self.fio_replay_poll = v > 0,
            _ => return false,
        }
        true
    }

    /// What a run's `assumed:` block says of the host: the costs around each I/O and
    /// the noise on its sleeps, in words (`submit 2 µs + 75 ns/page, ...`).
    pub fn summary(&self) -> String {
        let mut s = format!(
            "submit {} + {}/page, sync submit {}, complete {} + {}/page, inline completion {}, \
             reap {}, elevator {} (BFQ {} more), kernel work item {} ({} from a sleeping plug)",
            time_text(self.submit_ns),
            time_text(self.submit_page_ns),
            time_text(self.sync_submit_ns),
            time_text(self.complete_ns),
            time_text(self.complete_page_ns),
            time_text(self.inline_complete_ns),
            time_text(self.reap_ns),
            time_text(self.elevator_ns),
            time_text(self.bfq_ns),
            time_text(self.workqueue_ns),
            time_text(self.sleep_flush_ns),
        );
        s += &match &self.wakeup_lateness {
            Some(w) if matches!(w.tables(), [(0, _)]) => format!(
                ", sleeps end late by {} (timer slack included)",
                w.summary()
            ),
            Some(w) => format!(", sleeps end late (timer slack included) {}", w.summary()),
            None => format!(", timer slack {}", time_text(self.timer_slack_ns)),
        };
        let mut noise = Vec::new();
        if self.wakeup_jitter_ns > 0 {
            noise.push(format!(
                "wake-up jitter {} mean",
                time_text(self.wakeup_jitter_ns)
            ));
        }
        if self.wakeup_slip_ppm > 0 {
            noise.push(format!(
                "{} ppm of sleeps slip up to {}",
                self.wakeup_slip_ppm,
                time_text(self.wakeup_slip_ns)
            ));
        }
        if self.tag_wakeup_slip_ppm > 0 {
            noise.push(format!(
                "{} ppm of tag wake-ups slip up to {}",
                self.tag_wakeup_slip_ppm,
                time_text(self.tag_wakeup_slip_ns)
            ));
        }
        if noise.is_empty() {
            if self.wakeup_lateness.is_none() {
                s += ", no wake-up noise";
            }
        } else {
            s += &format!(", {}", noise.join(", "));
        }
        if self.cpus > 0 {
            s += &format!(
                ", {} CPU(s) for the jobs' host work and kblockd ({} of each completion \
                 in its interrupt, {} per tick)",
                self.cpus,
                time_text(self.complete_irq_ns.min(self.complete_ns)),
                time_text(self.tick_irq_ns)
            );
        }
        if self.fio_sleep_compensation {
            s += ", fio's sleep compensation";
        }
        if self.fio_start_phase {
            s += ", each fio starting at a drawn phase of the tick";
        }
        if self.fio_replay_poll {
            s += ", fio polling while a replay waits (fio 3.36+)";
        }
        s
    }

    /// `submit_ns` and `submit_page_ns` for an I/O of `bytes`.
    pub fn submit_cost(&self, bytes: u64) -> Ns {
        self.submit_ns + extra_pages(bytes) * self.submit_page_ns
    }

    /// `sync_submit_ns` and `submit_page_ns` for an I/O of `bytes`.
    pub fn sync_submit_cost(&self, bytes: u64) -> Ns {
        self.sync_submit_ns + extra_pages(bytes) * self.submit_page_ns
    }

    /// `complete_ns` and `complete_page_ns` for an I/O of `bytes`.
    pub fn complete_cost(&self, bytes: u64) -> Ns {
        self.complete_ns + extra_pages(bytes) * self.complete_page_ns
    }

    /// The part of [`HostCosts::complete_cost`] run in the completion's interrupt.
    pub fn complete_irq_cost(&self, bytes: u64) -> Ns {
        self.complete_irq_ns.min(self.complete_cost(bytes))
    }
}

/// The 4 KiB pages of an I/O beyond its first.
fn extra_pages(bytes: u64) -> u64 {
    bytes.div_ceil(4096).saturating_sub(1)
}

impl Default for HostCosts {
    fn default() -> Self {
        HostCosts {
            submit_ns: 2_000,
            submit_page_ns: 75,
            complete_ns: 1_500,
            complete_page_ns: 20,
            complete_irq_ns: 0,
            tick_irq_ns: 0,
            // the qemu guests' ratios to submit_ns / complete_ns (validate's profiles)
            sync_submit_ns: 1_400,
            inline_complete_ns: 400,
            reap_ns: 400,
            page_copy_ns: 1_000,
            read_call_ns: 650,
            page_read_ns: 250,
            readahead_page_ns: 1_600,
            memory: 16 << 30,
            elevator_ns: 650,
            bfq_ns: 1_100,
            fio_loop_ns: 0,
            workqueue_ns: 2_000,
            sleep_flush_ns: 3_000,
            timer_slack_ns: 50_000,
            wakeup_lateness: None,
            wakeup_jitter_ns: 0,
            wakeup_slip_ppm: 0,
            wakeup_slip_ns: 0,
            tag_wakeup_ns: 1_500,
            tag_wakeup_slip_ppm: 0,
            tag_wakeup_slip_ns: 0,
            cpus: 0,
            fio_restart_ns: 300 * NSEC_PER_MSEC,
            fio_sleep_compensation: false,
            fio_start_phase: false,
            fio_replay_poll: false,
        }
    }
}

/// One measured distribution of how late a sleep ends: points of its inverse CDF,
/// (percentile in parts per million, lateness), from the 0th to the 100th, linear
/// between them. Fixed capacity, so that [`HostCosts`] stays `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatenessTable {
    points: [(u32, Ns); LatenessTable::MAX_POINTS],
    len: usize,
}

impl LatenessTable {
    /// The most points a table holds.
    pub const MAX_POINTS: usize = 16;

    /// The table of `(percentile in ppm, lateness)` points, or why it is not one:
    /// 2 to [`Self::MAX_POINTS`] points, from 0 to 1,000,000 ppm, percentiles rising,
    /// lateness never falling.
    pub fn new(points: &[(u32, Ns)]) -> Result<Self, String> {
        if !(2..=Self::MAX_POINTS).contains(&points.len()) {
            return Err(format!(
                "{} point(s), where a table has 2 to {}",
                points.len(),
                Self::MAX_POINTS
            ));
        }
        if points[0].0 != 0 || points[points.len() - 1].0 != 1_000_000 {
            return Err("the first point must be the 0th percentile and the last the 100th".into());
        }
        for w in points.windows(2) {
            if w[1].0 <= w[0].0 {
                return Err("the percentiles must rise from point to point".into());
            }
            if w[1].1 < w[0].1 {
                return Err(format!(
                    "the lateness falls from {} to {} ns: a higher percentile cannot be less late",
                    w[0].1, w[1].1
                ));
            }
        }
        let mut t = LatenessTable {
            points: [(0, 0); Self::MAX_POINTS],
            len: points.len(),
        };
        t.points[..points.len()].copy_from_slice(points);
        Ok(t)
    }

    /// The points, (percentile in ppm, lateness).
    pub fn points(&self) -> &[(u32, Ns)] {
        &self.points[..self.len]
    }

    /// The lateness at the quantile `u` in [0, 1): the inverse CDF, linear between
    /// the points (inverse transform sampling when `u` is uniform).
    pub fn at(&self, u: f64) -> Ns {
        let x = u.clamp(0.0, 1.0) * 1e6;
        let p = self.points();
        let i = p
            .partition_point(|&(q, _)| f64::from(q) <= x)
            .clamp(1, p.len() - 1);
        let ((q0, l0), (q1, l1)) = (p[i - 1], p[i]);
        let f = ((x - f64::from(q0)) / f64::from(q1 - q0)).clamp(0.0, 1.0);
        l0 + ((l1 - l0) as f64 * f) as Ns
    }

    /// `p50 61 µs, p99 1.1 ms, max 4 ms`: the median, the 99th percentile and the
    /// largest, in words.
    pub fn summary(&self) -> String {
        let max = self.points()[self.len - 1].1;
        format!(
            "p50 {}, p99 {}, max {}",
            time_text(self.at(0.5)),
            time_text(self.at(0.99)),
            time_text(max)
        )
    }
}

/// In scenario syntax, percentiles and ns: `[[0,52000],[50,61000],...,[100,4000000]]`.
impl std::fmt::Display for LatenessTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pts: Vec<String> = self
            .points()
            .iter()
            .map(|&(q, l)| format!("[{},{l}]", f64::from(q) / 10_000.0))
            .collect();
        write!(f, "[{}]", pts.join(","))
    }
}

/// How late a sleep ends, by how long it was: one [`LatenessTable`] for every sleep,
/// or up to [`Self::MAX_LENGTHS`] measured at given sleep lengths. A virtual CPU
/// idle for longer wakes later (the host deschedules it once halt-polling gives up):
/// on this project's VM a 100 µs sleep is late by 76 µs at p99, a 4 ms one by 925 µs
/// (docs/validation.md §24), so the lengths matter. Between two measured lengths the
/// lateness at a percentile is interpolated in the logarithm of the length; below the
/// shortest and above the longest, that table holds. `[host] wakeup_lateness = [[0, "52us"], ..., [100, "4ms"]]` (every
/// sleep) or `[host.wakeup_lateness]` with one such table per length (`"100us" =
/// [...]`, `"4ms" = [...]`); `blkcg-sim host probe` prints the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeupLateness {
    /// (sleep length, its table), lengths rising; one entry of length 0 when the
    /// table is every sleep's.
    by_sleep: [(Ns, LatenessTable); WakeupLateness::MAX_LENGTHS],
    len: usize,
}

impl WakeupLateness {
    /// The most sleep lengths one host measures.
    pub const MAX_LENGTHS: usize = 4;

    /// One table for every sleep.
    pub fn every_sleep(t: LatenessTable) -> Self {
        WakeupLateness {
            by_sleep: [(0, t); Self::MAX_LENGTHS],
            len: 1,
        }
    }

    /// A table per sleep length, or why not: 1 to [`Self::MAX_LENGTHS`] lengths,
    /// rising, none 0.
    pub fn by_sleep(tables: &[(Ns, LatenessTable)]) -> Result<Self, String> {
        if !(1..=Self::MAX_LENGTHS).contains(&tables.len()) {
            return Err(format!(
                "{} sleep length(s), where 1 to {} are accepted",
                tables.len(),
                Self::MAX_LENGTHS
            ));
        }
        if tables[0].0 == 0 || tables.windows(2).any(|w| w[1].0 <= w[0].0) {
            return Err("the sleep lengths must be above 0 and rise from table to table".into());
        }
        let mut w = Self::every_sleep(tables[0].1);
        w.by_sleep[..tables.len()].copy_from_slice(tables);
        w.len = tables.len();
        Ok(w)
    }

    /// The (sleep length, table) pairs; one of length 0 for every sleep.
    pub fn tables(&self) -> &[(Ns, LatenessTable)] {
        &self.by_sleep[..self.len]
    }

    /// How late a sleep of `sleep` ns ends at the quantile `u` in [0, 1).
    pub fn at(&self, sleep: Ns, u: f64) -> Ns {
        let t = self.tables();
        let i = t.partition_point(|&(len, _)| len <= sleep);
        if i == 0 || i == t.len() {
            return t[i.saturating_sub(1)].1.at(u);
        }
        let ((l0, a), (l1, b)) = (t[i - 1], t[i]);
        let f = ((sleep as f64).ln() - (l0 as f64).ln()) / ((l1 as f64).ln() - (l0 as f64).ln());
        let (a, b) = (a.at(u) as f64, b.at(u) as f64);
        (a + (b - a) * f.clamp(0.0, 1.0)).round() as Ns
    }

    /// In words: `p50 61 µs, p99 1.1 ms, max 4 ms`, per sleep length when measured
    /// by length (`after 100 µs: ...; after 4 ms: ...`).
    pub fn summary(&self) -> String {
        match self.tables() {
            [(0, t)] => t.summary(),
            ts => ts
                .iter()
                .map(|(len, t)| format!("after {}: {}", time_text(*len), t.summary()))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

/// A sleep length as a scenario key: `100us`, `4ms`, `1500ns`.
pub fn sleep_key(ns: Ns) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// In scenario syntax: the table, or an inline table of them by sleep length
/// (`{"100us"=[[0,52000],...],"4ms"=[...]}`).
impl std::fmt::Display for WakeupLateness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.tables() {
            [(0, t)] => write!(f, "{t}"),
            ts => {
                let parts: Vec<String> = ts
                    .iter()
                    .map(|(len, t)| format!("\"{}\"={t}", sleep_key(*len)))
                    .collect();
                write!(f, "{{{}}}", parts.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inverse_cdf_is_linear_between_the_points() {
        let w =
            LatenessTable::new(&[(0, 50_000), (500_000, 60_000), (1_000_000, 1_060_000)]).unwrap();
        assert_eq!(w.at(0.0), 50_000);
        assert_eq!(w.at(0.25), 55_000);
        assert_eq!(w.at(0.5), 60_000);
        assert_eq!(w.at(0.75), 560_000);
        assert_eq!(w.at(0.999_999_999), 1_059_999);
        assert_eq!(w.at(1.0), 1_060_000);
        assert_eq!(w.to_string(), "[[0,50000],[50,60000],[100,1060000]]");
        assert_eq!(w.summary(), "p50 60 µs, p99 1.04 ms, max 1.06 ms");
    }

    #[test]
    fn lateness_by_sleep_length_interpolates_in_the_log_of_the_length() {
        let flat = |ns| LatenessTable::new(&[(0, ns), (1_000_000, ns)]).unwrap();
        let w = WakeupLateness::by_sleep(&[(100_000, flat(50_000)), (10_000_000, flat(250_000))])
            .unwrap();
        // below the shortest and above the longest, that table
        assert_eq!(w.at(1_000, 0.5), 50_000);
        assert_eq!(w.at(100_000, 0.5), 50_000);
        assert_eq!(w.at(20_000_000, 0.5), 250_000);
        // 1 ms is half way from 100 µs to 10 ms in the log
        assert_eq!(w.at(1_000_000, 0.5), 150_000);
        assert_eq!(
            w.to_string(),
            "{\"100us\"=[[0,50000],[100,50000]],\"10ms\"=[[0,250000],[100,250000]]}"
        );
        assert_eq!(
            w.summary(),
            "after 100 µs: p50 50 µs, p99 50 µs, max 50 µs; \
             after 10 ms: p50 250 µs, p99 250 µs, max 250 µs"
        );
        let e = WakeupLateness::by_sleep(&[(4_000_000, flat(1)), (1_000_000, flat(1))]);
        assert!(e.unwrap_err().contains("rise"));
        assert_eq!(WakeupLateness::every_sleep(flat(7)).at(123_456, 0.3), 7);
    }

    #[test]
    fn a_table_that_is_not_a_distribution_is_refused() {
        for (pts, why) in [
            (&[(0, 1)][..], "2 to 16"),
            (&[(1, 1), (1_000_000, 2)][..], "0th percentile"),
            (
                &[(0, 1), (500_000, 3), (500_000, 4), (1_000_000, 5)][..],
                "rise",
            ),
            (&[(0, 5), (1_000_000, 4)][..], "falls from 5 to 4"),
        ] {
            let e = LatenessTable::new(pts).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }
}
