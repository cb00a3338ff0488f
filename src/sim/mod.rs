//! The simulation core: simulated time, the event queue, the seeded PRNG and the
//! request types every layer shares.
//!
//! Design
//! ------
//! Time is an integer count of nanoseconds (`Ns`) since the start of the run; nothing
//! here ever reads the wall clock, so a scenario and a seed fully determine a run.
//!
//! Every layer of the block stack (fio jobs, the policies of `crate::stack`, the tag
//! pool, the device model) is owned by the pipeline in [`engine`]. A layer that needs
//! to act later pushes an [`Event`] carrying its own opaque token onto the shared
//! [`EventQueue`] (a policy: `Event::Policy(its id, token)`); when that event fires
//! the pipeline hands the token back to the layer. Events at the same instant fire in the order they were pushed (a sequence
//! number breaks ties), which keeps runs byte-identical. A layer that wants to cancel a
//! pending event simply ignores it when it fires (each layer keeps a generation count
//! or compares the token with the deadline it still wants).
//!
//! Where things live:
//! - `queue.rs`  — the event queue: sorted FIFO lanes in front of a binary heap (most
//!   events are a fixed delay after now, so they arrive in order and skip the heap);
//! - `rng.rs`    — the seeded PRNG (PCG) and the per-component seed derivation;
//! - `bio.rs`    — `Bio` (what the controllers see), `Dir`, and `IoErr` (how an I/O failed);
//! - `timebins.rs` — each job's completions per time bin, in bounded memory (pictures);
//! - `inline_deque.rs` — small FIFOs held inline in their owner's record (per-I/O queues);
//! - `prefetch.rs` — a cache hint for records the next step of an I/O reads;
//! - `cpu.rs` — the guest's one CPU and its fair scheduler (`[host] cpus = 1`);
//! - `jiffies.rs` — the kernel's jiffies (`INITIAL_JIFFIES`, ns ↔ jiffies) for the
//!   policies and the scheduler that count in them;
//! - `plug.rs` — who runs the queue for a job's request: its own call or kblockd
//!   (the submitter's plug; the `blk.*` switches);
//! - `sbitmap.rs` — the tags and who gets a freed one (`sbitmap_queue`);
//! - `iostat.rs` — the device's per-second accounting (`IostatRow`, as `iostat -x 1`);
//! - `engine.rs` — the request pipeline of docs/design.md §2 wiring all layers together;
//! - `fio/`      — the fio job machine: fio's `do_io()` loop per job, as part of the pipeline;
//! - `writeback.rs` — buffered writes, `fsync` and each cgroup's flusher (`crate::writeback`
//!   is the page cache's state and arithmetic);
//! - `pressure.rs` — each context's PSI state, handed to `crate::psi` once an event is done.

pub mod bio;
pub mod cpu;
pub mod engine;
pub mod fio;
pub mod inline_deque;
pub mod iostat;
pub mod jiffies;
pub mod merge;
pub mod plug;
pub mod prefetch;
pub mod pressure;
pub mod queue;
pub mod readahead;
pub mod rng;
pub mod sbitmap;
pub mod timebins;
pub mod writeback;

pub use bio::{Bio, BioId, BioSlab, Dir, IoErr, NO_BIO};
pub use queue::{Event, EventQueue};
pub use rng::SimRng;

/// Simulated time and durations, in nanoseconds.
pub type Ns = u64;

pub const NSEC_PER_USEC: Ns = 1_000;
pub const NSEC_PER_MSEC: Ns = 1_000_000;
pub const NSEC_PER_SEC: Ns = 1_000_000_000;

/// A duration as a person reads it, to three significant figures at most: `750 ns`,
/// `80 µs`, `1.95 ms`, `2 s`.
pub fn time_text(ns: Ns) -> String {
    let (v, unit) = match ns {
        n if n < NSEC_PER_USEC => return format!("{n} ns"),
        n if n < NSEC_PER_MSEC => (n as f64 / NSEC_PER_USEC as f64, "µs"),
        n if n < NSEC_PER_SEC => (n as f64 / NSEC_PER_MSEC as f64, "ms"),
        n => (n as f64 / NSEC_PER_SEC as f64, "s"),
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.digits$}");
    // `1.50` → `1.5`, `2.00` → `2`
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_a_person_writes_them() {
        let t = |ns| time_text(ns);
        assert_eq!(t(750), "750 ns");
        assert_eq!(t(80_000), "80 µs");
        assert_eq!(t(1_500), "1.5 µs");
        assert_eq!(t(1_950_000), "1.95 ms");
        assert_eq!(t(123_456_789), "123 ms");
        assert_eq!(t(2 * NSEC_PER_SEC), "2 s");
    }
}
