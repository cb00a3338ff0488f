//! I/O schedulers (elevators) between tag allocation and the driver.
//!
//! - `mq_deadline/` — mq-deadline with its three priority levels, batching, expiry,
//!   `writes_starved`, `async_depth` (`block/mq-deadline.c`), self-contained: the
//!   engine hands it requests and jiffies and asks for the next one.
//!
//! `none` (a FIFO) needs no state of its own and lives in the engine.

pub mod mq_deadline;
