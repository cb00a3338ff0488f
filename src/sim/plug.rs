//! Where a submitter's request is dispatched from: inside its own call, or by kblockd.
//!
//! Design
//! ------
//! The idea: `blk_mq_submit_bio()` either issues a request in the submitter's context
//! or inserts it and leaves the queue run to kblockd (`blk_mq_run_hw_queue(hctx,
//! true)` → `blk_mq_delay_run_hw_queue(hctx, 0)`). Which one depends on the
//! submitter's plug (`current->plug`) and the elevator:
//! - no plug, an elevator: inserted, the queue run goes to kblockd (≤ 6.9; from 6.10
//!   `__submit_bio()` plugs every bio itself, 060406c61c7c, so a submitter always
//!   holds a plug: `blk.submit_plug`);
//! - no plug, `none`: issued directly (`blk_mq_try_issue_directly()`);
//! - plugged and flushed by the caller (`blk_finish_plug()`, `from_schedule` false):
//!   dispatched in the caller (the elevator's queue run is synchronous);
//! - plugged and flushed because the caller went to sleep (`sched_submit_work()` →
//!   `blk_flush_plug(plug, true)`): the queue run goes to kblockd, with `none` too
//!   (`blk_mq_dispatch_plug_list(plug, true)`).
//!
//! Who plugs (block/fops.c, fs/aio.c): a direct I/O of more than `BIO_MAX_VECS` pages
//! (`__blkdev_direct_IO()`, several bios; it finishes the plug before it waits);
//! `blkdev_write_iter()` around every write until 6.5 (712c7364655f "block: don't plug
//! in blkdev_write_iter"): a psync write sleeps inside that plug, an aio write returns
//! through `blk_finish_plug()`; and `io_submit()` of more than `AIO_PLUG_THRESHOLD` (2)
//! iocbs, which fio's default `iodepth_batch_submit` of 1 never does.
//!
//! The kworker is woken with the submitter still in its call; on the guests it runs at
//! the call's next preemption point (`io_submit()`'s return to user space, or
//! `pread()`'s wait) — an aio request the driver ends inline is done before
//! `io_submit()` returns, with its slat 8.2 µs longer than with `none` on 6.1 and
//! 1.9 µs on 6.12 (docs/validation.md §23). So the call waits for the queue run:
//! `[host] workqueue_ns` after the insert (`sleep_flush_ns` when the plug of a caller
//! gone to sleep was flushed), then the run's own CPU (`elevator_ns` per request,
//! the inline completions).
//!
//! Moving parts: [`BlkMqBehaviour`] (the `blk.*` switch by kernel version) and
//! [`queue_run`] (which of the two a request gets) here; the pipeline
//! (`crate::sim::engine`) holds the inserted requests and runs the queue on
//! `Event::QueueRun`.

use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;
use crate::sim::Dir;
use crate::sim::merge::MergeCgroup;
use std::fmt;

/// The `[kernel]` switch prefix of the block layer's core.
pub const SWITCH_PREFIX: &str = "blk.";

/// `BIO_MAX_VECS` pages: a larger direct I/O takes several bios, under a plug.
const BIO_MAX_BYTES: u64 = 256 * 4096;

/// Whether `blkdev_write_iter()` plugs (`blk.write_plug`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePlug {
    /// `blk_start_plug()` around every write (≤ 6.4).
    Plug,
    /// None (6.5+, 712c7364655f).
    None,
}

impl Named for WritePlug {
    const NAMES: &'static [(&'static str, Self)] = &[("plug", Self::Plug), ("none", Self::None)];
}

/// Whether `__submit_bio()` plugs every bio it submits (`blk.submit_plug`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitPlug {
    /// No plug of its own (≤ 6.9): a bio submitted without one is inserted and, with
    /// an elevator, its queue run left to kblockd.
    None,
    /// `blk_start_plug()` around `blk_mq_submit_bio()` (6.10+, 060406c61c7c "block: add
    /// plug while submitting IO"): the caller's `blk_finish_plug()` runs the queue.
    EveryBio,
}

impl Named for SubmitPlug {
    const NAMES: &'static [(&'static str, Self)] =
        &[("none", Self::None), ("every-bio", Self::EveryBio)];
}

/// The block core's switches that differ between kernel versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlkMqBehaviour {
    pub write_plug: WritePlug,
    pub submit_plug: SubmitPlug,
    /// Whether requests merge across cgroups (`crate::sim::merge`).
    pub merge_cgroup: MergeCgroup,
}

impl Default for BlkMqBehaviour {
    /// The newest kernel's.
    fn default() -> Self {
        BlkMqBehaviour {
            write_plug: WritePlug::None,
            submit_plug: SubmitPlug::EveryBio,
            merge_cgroup: MergeCgroup::Same,
        }
    }
}

/// In scenario syntax: `blk.write_plug=none blk.submit_plug=every-bio
/// blk.merge_cgroup=same`.
impl fmt::Display for BlkMqBehaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blk.write_plug={} blk.submit_plug={} blk.merge_cgroup={}",
            self.write_plug.name(),
            self.submit_plug.name(),
            self.merge_cgroup.name()
        )
    }
}

/// The behaviour of kernel `version`, then `overrides` (`("blk.write_plug", "plug")`)
/// applied in order.
pub fn behaviour_for(
    version: &str,
    overrides: &[(String, String)],
) -> Result<BlkMqBehaviour, KeyError> {
    let kv = KernelVersion::parse(version).map_err(|m| KeyError::new("kernel.version", m))?;
    let at_least = |major: u32, minor: u32| (kv.major, kv.minor) >= (major, minor);
    let mut b = BlkMqBehaviour {
        write_plug: if at_least(6, 5) {
            WritePlug::None
        } else {
            WritePlug::Plug
        },
        submit_plug: if at_least(6, 10) {
            SubmitPlug::EveryBio
        } else {
            SubmitPlug::None
        },
        merge_cgroup: if at_least(5, 18) {
            MergeCgroup::Same
        } else {
            MergeCgroup::Any
        },
    };
    for (key, val) in overrides {
        match key.as_str() {
            "blk.write_plug" => b.write_plug = Named::parse(key, val)?,
            "blk.submit_plug" => b.submit_plug = Named::parse(key, val)?,
            "blk.merge_cgroup" => b.merge_cgroup = Named::parse(key, val)?,
            _ => {
                return Err(KeyError::new(
                    key.as_str(),
                    "unknown key; accepted: blk.write_plug, blk.submit_plug, blk.merge_cgroup",
                ));
            }
        }
    }
    Ok(b)
}

/// Who runs the queue for a request a fio job submits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueRun {
    /// The submitter, inside its call.
    Caller,
    /// kblockd, `[host] workqueue_ns` later, while the submitter waits in its call.
    Kblockd,
    /// kblockd, from the plug of a submitter gone to sleep for its I/O (a psync
    /// write before 6.5), `[host] sleep_flush_ns` later.
    SleepFlush,
}

/// Where the request of a job's I/O of `io_bytes` in direction `dir` is dispatched
/// from: `sync_engine` (psync: the call waits for the I/O), `elevator` (the queue has
/// one). Mirrors `blk_mq_submit_bio()`'s choice under the plug the caller holds.
pub fn queue_run(
    b: &BlkMqBehaviour,
    sync_engine: bool,
    dir: Dir,
    io_bytes: u64,
    elevator: bool,
) -> QueueRun {
    // __blkdev_direct_IO(): plugged, and flushed before the call waits
    if io_bytes > BIO_MAX_BYTES {
        return QueueRun::Caller;
    }
    let write_plugged = dir == Dir::Write && b.write_plug == WritePlug::Plug;
    match (write_plugged, sync_engine) {
        // a psync write sleeps in submit_bio_wait() inside blkdev_write_iter()'s plug
        (true, true) => QueueRun::SleepFlush,
        // an aio write's plug is flushed by blk_finish_plug() as the call returns
        (true, false) => QueueRun::Caller,
        // __submit_bio()'s own plug, finished before the call goes on
        (false, _) if b.submit_plug == SubmitPlug::EveryBio => QueueRun::Caller,
        (false, _) if elevator => QueueRun::Kblockd,
        (false, _) => QueueRun::Caller,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_plug_goes_with_6_5() {
        let at = |v: &str| behaviour_for(v, &[]).unwrap().write_plug;
        assert_eq!(at("6.1"), WritePlug::Plug);
        assert_eq!(at("6.4.16"), WritePlug::Plug);
        assert_eq!(at("6.5"), WritePlug::None);
        assert_eq!(at("6.12"), WritePlug::None);
        assert_eq!(at("newest"), BlkMqBehaviour::default().write_plug);
        let o = [("blk.write_plug".to_string(), "none".to_string())];
        assert_eq!(
            behaviour_for("6.1", &o).unwrap().write_plug,
            WritePlug::None
        );
        let bad = [("blk.write_plug".to_string(), "yes".to_string())];
        assert!(behaviour_for("6.1", &bad).is_err());
        let unknown = [("blk.nope".to_string(), "x".to_string())];
        assert_eq!(behaviour_for("6.1", &unknown).unwrap_err().key, "blk.nope");
    }

    #[test]
    fn merges_stay_within_a_cgroup_from_5_18() {
        let at = |v: &str| behaviour_for(v, &[]).unwrap().merge_cgroup;
        assert_eq!(at("5.15"), MergeCgroup::Any);
        assert_eq!(at("5.18"), MergeCgroup::Same);
        assert_eq!(at("6.1"), MergeCgroup::Same);
        let o = [("blk.merge_cgroup".to_string(), "any".to_string())];
        assert_eq!(
            behaviour_for("6.12", &o).unwrap().merge_cgroup,
            MergeCgroup::Any
        );
    }

    #[test]
    fn who_runs_the_queue() {
        use QueueRun::*;
        let old = behaviour_for("6.1", &[]).unwrap();
        let new = behaviour_for("6.12", &[]).unwrap();
        let k = 4096;
        for b in [&old, &new] {
            assert_eq!(queue_run(b, true, Dir::Read, k, false), Caller);
            // more than BIO_MAX_VECS pages: plugged and flushed before waiting
            assert_eq!(queue_run(b, true, Dir::Read, 2 << 20, true), Caller);
        }
        // reads with an elevator: kblockd on 6.1; 6.12's __submit_bio() plugs, so the
        // caller's blk_finish_plug() runs the queue
        assert_eq!(queue_run(&old, false, Dir::Read, k, true), Kblockd);
        assert_eq!(queue_run(&old, true, Dir::Read, k, true), Kblockd);
        assert_eq!(queue_run(&new, false, Dir::Read, k, true), Caller);
        assert_eq!(queue_run(&new, true, Dir::Read, k, true), Caller);
        // writes under blkdev_write_iter()'s plug: psync's sleep flushes it to
        // kblockd, with none too; aio's blk_finish_plug() runs it in the caller
        assert_eq!(queue_run(&old, true, Dir::Write, k, false), SleepFlush);
        assert_eq!(queue_run(&old, false, Dir::Write, k, true), Caller);
        assert_eq!(queue_run(&new, true, Dir::Write, k, false), Caller);
        assert_eq!(queue_run(&new, false, Dir::Write, k, true), Caller);
        // 6.5–6.9: no plug at all, kblockd with an elevator
        let mid = behaviour_for("6.9", &[]).unwrap();
        assert_eq!(mid.submit_plug, SubmitPlug::None);
        assert_eq!(queue_run(&mid, false, Dir::Write, k, true), Kblockd);
        assert_eq!(
            behaviour_for("6.10", &[]).unwrap().submit_plug,
            SubmitPlug::EveryBio
        );
    }
}
