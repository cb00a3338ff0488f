//! The commands of the `blkcg-sim` binary, one thin module each: they choose runs,
//! call the library and print. `src/main.rs` holds only the clap definitions and the
//! dispatch to these (as hyperfine keeps its `cli` apart from `benchmark/` and
//! `export/`); the work lives in `crate::run` (prepare → simulate), `crate::report`
//! (outputs), `crate::sweep`, `crate::tune` and `crate::validate`.
//!
//! - `run.rs`       — `run` (variants × kernels in parallel, fio formats, A/B table);
//! - `fio.rs`       — `fio` (fio's arguments against a simulated device);
//! - `check.rs`     — `check` (build every variant, print what it resolves to);
//! - `device.rs`    — `device`: `fit` (a model fitted to the user's fio
//!   measurements), `plot` (pictures of a device model alone);
//! - `host.rs`      — `host`: `list` (the host profiles), `probe` (this machine
//!   measured as one);
//! - `tune.rs`      — `tune`: `model`, `qos`, `iomax` (what to write in io.cost.* and
//!   io.max);
//! - `kernel.rs`    — `kernel`: `build`, `list`, `clean` (guest kernels from source);
//! - `repro.rs`     — `repro` (the built-in seeds and their bands);
//! - `scenarios.rs` — `scenarios` (list or print the built-in scenarios);
//! - `sweep.rs`     — `sweep` (a plan of `crate::sweep` on every core, streamed);
//! - this file      — reading a scenario named on the command line.

pub mod check;
pub mod device;
pub mod fio;
pub mod host;
pub mod kernel;
pub mod repro;
pub mod run;
pub mod scenarios;
pub mod sweep;
pub mod trace;
pub mod tune;

use crate::api::{self, Source};
use crate::notify::{Notice, Notify};
use crate::scenario::Scenario;

/// The scenario `name` names: a file, or else a built-in scenario (`.toml` optional),
/// read by the library's one loader ([`api::load`]), its error as the command prints it.
pub fn load(name: &str) -> Result<Scenario, String> {
    api::load(Source::Name(name)).map_err(|e| e.to_string())
}

/// The command line's [`Notify`] sink: each notice on stderr, as the commands have
/// always printed them.
pub struct Stderr;

impl Notify for Stderr {
    fn notice(&self, n: Notice<'_>) {
        match n {
            Notice::Warning(m) => eprintln!("warning: {m}"),
            Notice::Status(line) => eprintln!("{line}"),
        }
    }
}

/// A scenario (a file or a built-in name) when `name` is one, else None.
pub fn scenario_named(name: &str) -> Option<Result<Scenario, String>> {
    api::is_scenario_name(name).then(|| load(name))
}
