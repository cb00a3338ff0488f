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

/// Hints the CPU to bring every cache line `r` spans into cache (a record read all
/// over, such as fio's offset generator and rate state).
#[inline(always)]
pub fn prefetch_all<T>(r: &T) {
    let first = (r as *const T).cast::<u8>();
    let size = std::mem::size_of::<T>();
    for at in (0..size).step_by(64) {
        prefetch_line(first.wrapping_add(at));
    }
    // the line of its last byte, when the record starts inside a line
    if size > 0 {
        prefetch_line(first.wrapping_add(size - 1));
    }
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
