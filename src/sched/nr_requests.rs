//! `queue/nr_requests`: how many requests a queue may hold, as `[device] nr_requests`.
//!
//! *Idea.* A queue's requests are its tags. Without an elevator they are the driver's
//! tags (`hw_queue_depth`); setting up a scheduler gives it tags of its own,
//! `2 · min(hw_queue_depth, BLKDEV_DEFAULT_RQ)` of them ([`default_nr_requests`],
//! `blk_mq_init_sched()`); a write to `queue/nr_requests` resizes whichever set is in
//! use ([`store`], `queue_requests_store()` + `blk_mq_update_nr_requests()` +
//! `blk_mq_tag_update_depth()`). Switching the scheduler resets the value, so it is
//! written after `scheduler` (the validate guest does too).
//!
//! *Moving parts.* The rules of the write live here; the device keys read it
//! (`crate::device::config::resolve`), [`crate::sched::build`] gives the elevator its
//! depth (mq-deadline's `dd_depth_updated()` recomputes `async_depth` from it), and
//! without an elevator the engine shrinks the driver's tags
//! (`crate::sim::engine::Pipeline::resize_driver_tags`); the sbitmap's wake-up batch
//! follows the depth either way (`crate::sim::sbitmap`).

use crate::blkcg::{Errno, KernelError};

/// `BLKDEV_MIN_RQ`.
const BLKDEV_MIN_RQ: u32 = 4;
/// `BLKDEV_DEFAULT_RQ`.
const BLKDEV_DEFAULT_RQ: u32 = 128;
/// `MAX_SCHED_RQ`: how far the scheduler's tags may grow.
const MAX_SCHED_RQ: u32 = 16 * BLKDEV_DEFAULT_RQ;

/// `q->nr_requests` on a queue of `hw_queue_depth` driver tags, with an elevator
/// (`blk_mq_init_sched()`) or without (`elevator_disable()`: the driver's depth).
pub fn default_nr_requests(elevator: bool, hw_queue_depth: u32) -> u32 {
    if elevator {
        2 * hw_queue_depth.min(BLKDEV_DEFAULT_RQ)
    } else {
        hw_queue_depth
    }
}

/// `echo value > queue/nr_requests` on a queue of `hw_queue_depth` driver tags, with
/// or without an elevator: the new `q->nr_requests`, or the kernel's error.
///
/// `queue_var_store()` reads a decimal `unsigned long` up to `UINT_MAX` (a `+` sign
/// and one trailing newline allowed); below `BLKDEV_MIN_RQ` it becomes 4
/// (`queue_requests_store()`). `blk_mq_tag_update_depth()` shrinks any tag set in
/// place, grows the scheduler's up to `MAX_SCHED_RQ`, and never grows the driver's.
pub fn store(value: &str, elevator: bool, hw_queue_depth: u32) -> Result<u32, KernelError> {
    let digits = value.strip_suffix('\n').unwrap_or(value);
    let digits = digits.strip_prefix('+').unwrap_or(digits);
    let nr = Some(digits)
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u32>().ok())
        .ok_or_else(|| {
            KernelError::new(
                Errno::EINVAL,
                format!("`{}`: a decimal number of requests", value.trim_end()),
            )
        })?
        .max(BLKDEV_MIN_RQ);
    let (max, what) = if elevator {
        (MAX_SCHED_RQ, "the scheduler's tags grow up to MAX_SCHED_RQ")
    } else {
        (
            hw_queue_depth,
            "without a scheduler the driver's tags (hw_queue_depth) cannot grow",
        )
    };
    if nr > max {
        return Err(KernelError::new(
            Errno::EINVAL,
            format!("{nr}: at most {max} ({what})"),
        ));
    }
    Ok(nr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(r: Result<u32, KernelError>) -> Errno {
        r.unwrap_err().errno
    }

    #[test]
    fn defaults_as_blk_mq_init_sched() {
        assert_eq!(default_nr_requests(true, 4), 8);
        assert_eq!(default_nr_requests(true, 1023), 256);
        assert_eq!(default_nr_requests(false, 1023), 1023);
    }

    #[test]
    fn below_blkdev_min_rq_becomes_four() {
        assert_eq!(store("0", true, 64).unwrap(), 4);
        assert_eq!(store("1\n", false, 64).unwrap(), 4);
        assert_eq!(store("+7", true, 64).unwrap(), 7);
    }

    #[test]
    fn the_scheduler_grows_up_to_max_sched_rq() {
        assert_eq!(store("2048", true, 4).unwrap(), 2048);
        let e = store("2049", true, 4).unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL);
        assert!(e.why.contains("at most 2048"), "{}", e.why);
    }

    #[test]
    fn without_a_scheduler_the_driver_tags_only_shrink() {
        assert_eq!(store("16", false, 64).unwrap(), 16);
        assert_eq!(store("64", false, 64).unwrap(), 64);
        let e = store("65", false, 64).unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL);
        assert!(e.why.contains("hw_queue_depth"), "{}", e.why);
    }

    #[test]
    fn not_a_number_is_einval() {
        for v in ["", "-1", "0x10", "12k", "4294967296", " 8", "8\n\n"] {
            assert_eq!(errno(store(v, true, 64)), Errno::EINVAL, "{v:?}");
        }
    }
}
