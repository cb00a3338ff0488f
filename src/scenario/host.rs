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
    /// An async engine's reap of completions that were ready when the job came to
    /// wait (`io_getevents()` returning at once): lands in clat. A job woken by a
    /// completion pays `complete_ns` instead.
    pub reap_ns: Ns,
    /// A request's way through an elevator (insert, then dispatch: mq-deadline's
    /// `dd_insert_requests()` and `dd_dispatch_request()`), in the CPU time of the
    /// context that runs the queue (`crate::sim::plug`). The qemu guests: 1.9 µs on
    /// 6.1, 0.45 µs on 6.12 (docs/validation.md §23).
    pub elevator_ns: Ns,
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
    /// Mean of an exponentially distributed extra wake-up delay (scheduling noise of
    /// a busy or virtualised host), drawn from the seeded PRNG. 0 = none.
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
    /// The CPUs the tasks woken by completions share: 0 = as many as they need (each
    /// woken task runs at once), 1 = one, as the qemu guest's vCPU. With one, a tag
    /// sleeper woken by a completion waits until every fio job that completions woke to
    /// reap has gone back to waiting (the woken tasks run one after another, the
    /// reaper first: docs/validation.md §13), or until the reapers have held the CPU
    /// `tag_sleeper_preempt_ns` since it began to wait. Nothing else is serialised.
    pub cpus: u32,
    /// With `cpus = 1`: once the reapers have held the CPU this long (their CPU time,
    /// not the wall time) since a tag sleeper began to wait, it no longer yields to
    /// them: it runs as soon as it is woken, or at the next completion if it was woken
    /// before. The scheduler's bound (CFS, `check_preempt_wakeup()`): virtual time
    /// advances only while a task runs, so the sleeper falls behind by the reapers'
    /// CPU time and preempts once that is more than the wakeup granularity (1 ms on
    /// one CPU). A reaper that never leaves the CPU holds a woken task off about that
    /// long; on a mostly idle CPU the reaper-first order stands (docs/validation.md
    /// §19).
    pub tag_sleeper_preempt_ns: Ns,
    /// Successive fio runs (`fio = [...]`): from the last job of run k-1 ending to the
    /// jobs of run k starting, as a script sees it: fio's exit, the script's own work
    /// and the next fio's start-up (fio 3.33 takes ~0.3 s from exec to its first I/O).
    /// Long enough that a weight-based policy deactivates every idle cgroup in between.
    pub fio_restart_ns: Ns,
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
        if self.tag_sleeper_preempt_ns != d.tag_sleeper_preempt_ns {
            write!(f, " tag_sleeper_preempt_ns={}", self.tag_sleeper_preempt_ns)?;
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
        if (self.elevator_ns, self.sleep_flush_ns) != (d.elevator_ns, d.sleep_flush_ns) {
            write!(
                f,
                " elevator_ns={} sleep_flush_ns={}",
                self.elevator_ns, self.sleep_flush_ns
            )?;
        }
        Ok(())
    }
}

impl HostCosts {
    /// What a run's `assumed:` block says of the host: the costs around each I/O and
    /// the noise on its sleeps, in words (`submit 2 µs + 75 ns/page, ...`).
    pub fn summary(&self) -> String {
        let mut s = format!(
            "submit {} + {}/page, sync submit {}, complete {} + {}/page, inline completion {}, \
             reap {}, elevator {}, kernel work item {} ({} from a sleeping plug), timer slack {}",
            time_text(self.submit_ns),
            time_text(self.submit_page_ns),
            time_text(self.sync_submit_ns),
            time_text(self.complete_ns),
            time_text(self.complete_page_ns),
            time_text(self.inline_complete_ns),
            time_text(self.reap_ns),
            time_text(self.elevator_ns),
            time_text(self.workqueue_ns),
            time_text(self.sleep_flush_ns),
            time_text(self.timer_slack_ns)
        );
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
            s += ", no wake-up noise";
        } else {
            s += &format!(", {}", noise.join(", "));
        }
        if self.cpus > 0 {
            s += &format!(", {} CPU(s) for the woken tasks", self.cpus);
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
            // the qemu guests' ratios to submit_ns / complete_ns (validate's profiles)
            sync_submit_ns: 1_400,
            inline_complete_ns: 400,
            reap_ns: 400,
            elevator_ns: 650,
            fio_loop_ns: 0,
            workqueue_ns: 2_000,
            sleep_flush_ns: 3_000,
            timer_slack_ns: 50_000,
            wakeup_jitter_ns: 0,
            wakeup_slip_ppm: 0,
            wakeup_slip_ns: 0,
            tag_wakeup_ns: 1_500,
            tag_wakeup_slip_ppm: 0,
            tag_wakeup_slip_ns: 0,
            cpus: 0,
            tag_sleeper_preempt_ns: NSEC_PER_MSEC,
            fio_restart_ns: 300 * NSEC_PER_MSEC,
        }
    }
}
