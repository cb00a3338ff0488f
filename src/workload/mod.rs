//! Workloads: fio job files and command lines (`fio/`) and the job runtime that turns
//! a parsed job into I/O submissions on simulated time (`job.rs`).

pub mod cmdline;
pub mod fio;
pub mod job;
