//! blkcg-sim: a deterministic discrete-event simulator of Linux's cgroup v2 block I/O
//! control (blk-throttle `io.max`, blk-iocost `io.cost.*`/`io.weight`, blk-iolatency
//! `io.latency`, blk-ioprio `io.prio.class` with mq-deadline), driven by fio jobs
//! against device models, reporting what fio would report plus the controllers'
//! internals. The living design is docs/design.md; the user's guide is README.md.

pub mod api;
pub mod blkcg;
pub mod cli;
pub mod device;
pub mod error;
pub mod iocost;
pub mod iolatency;
pub mod ioprio;
pub mod kernel_version;
pub mod notify;
pub mod progress;
pub mod report;
pub mod run;
pub mod scenario;
pub mod sched;
pub mod sim;
pub mod stack;
pub mod sweep;
pub mod throttle;
pub mod tune;
pub mod validate;
pub mod workload;
