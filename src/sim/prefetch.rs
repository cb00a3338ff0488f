//! [`prefetch`]: start loading a record's cache line that the pipeline will read soon.
//!
//! Design
//! ------
//! With thousands of cgroups each I/O finds its job's, cgroup's and statistics'
//! records cold, and reads them one miss after another. Where the pipeline schedules
//! the next step of an I/O a little later (a completion's reap `complete_ns` on), it
//! already knows which lines that step will touch: it asks for them then
//! (`PREFETCHT0`), and the step finds them in cache. A hint only: it never changes
//! what the program computes, and on other targets it does nothing.

/// Hints the CPU to bring the cache line holding `r` (its first byte) into cache.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    prefetch_line((r as *const T).cast());
}

/// Hints the CPU to bring every cache line from `first`'s to `last`'s into cache: a run
/// of fields of one record laid out next to each other (`last` after `first`).
#[inline(always)]
pub fn prefetch_span<A, B>(first: &A, last: &B) {
    let from = (first as *const A).cast::<u8>();
    let to = (last as *const B)
        .cast::<u8>()
        .wrapping_add(std::mem::size_of::<B>());
    let mut at = from;
    while at < to {
        prefetch_line(at);
        at = at.wrapping_add(64);
    }
    // the line of the last byte, when the run does not start on a line
    prefetch_line(to.wrapping_sub(1));
}

/// `PREFETCHT0` of the line holding `p` (an address inside a live record).
#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 never faults and has no effect the program can observe (the
    // address is inside a live record anyway); SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
