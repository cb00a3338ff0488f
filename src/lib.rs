//! blkcg-sim: a deterministic discrete-event simulator of Linux's cgroup v2 block I/O
//! control (blk-throttle `io.max`, blk-iocost `io.cost.*`/`io.weight`, blk-iolatency
//! `io.latency`, blk-ioprio `io.prio.class` with mq-deadline), driven by fio jobs
//! against device models, reporting what fio would report plus the controllers'
//! internals. The living design is docs/design.md; the user's guide is README.md.

// The library's surface: `api` (load, run, check, sweep, the registry's controllers)
// and `notify` (where warnings and status lines go).
pub mod api;
pub mod notify;

// Internal: public only for the binary (src/main.rs), the integration tests (tests/)
// and the benches (benches/), which reach into them; not a stable surface, and
// hidden from the documentation.
#[doc(hidden)]
pub mod blkcg;
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod device;
#[doc(hidden)]
pub mod host_probe;
#[doc(hidden)]
pub mod iocost;
#[doc(hidden)]
pub mod iolatency;
#[doc(hidden)]
pub mod progress;
#[doc(hidden)]
pub mod psi;
#[doc(hidden)]
pub mod report;
#[doc(hidden)]
pub mod run;
#[doc(hidden)]
pub mod scenario;
#[doc(hidden)]
pub mod sched;
#[doc(hidden)]
pub mod sim;
#[doc(hidden)]
pub mod stack;
#[doc(hidden)]
pub mod sweep;
#[doc(hidden)]
pub mod throttle;
#[doc(hidden)]
pub mod validate;
#[doc(hidden)]
pub mod wbt;
#[doc(hidden)]
pub mod workload;
#[doc(hidden)]
pub mod writeback;

// Internal, used by nothing outside the crate.
pub(crate) mod device_fit;
pub(crate) mod error;
pub(crate) mod ioprio;
pub(crate) mod kernel_version;
pub(crate) mod tune;
