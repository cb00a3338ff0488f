//! Workloads: fio job files and command lines (`fio/`), the I/O logs a job replays
//! or writes (`iolog/`), and the job runtime that turns a parsed job into I/O
//! submissions on simulated time (`job.rs`).

pub mod cmdline;
pub mod fio;
pub mod iolog;
pub mod job;
