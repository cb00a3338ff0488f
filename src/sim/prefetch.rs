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
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 never faults and has no effect the program can observe (the
    // address is a live reference's anyway); SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
