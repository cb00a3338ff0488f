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
//! - `tune.rs`      — `tune`: `model`, `qos`, `iomax` (what to write in io.cost.* and
//!   io.max);
//! - `kernel.rs`    — `kernel`: `build`, `list`, `clean` (guest kernels from source);
//! - `repro.rs`     — `repro` (the built-in seeds and their bands);
//! - `scenarios.rs` — `scenarios` (list or print the built-in scenarios);
//! - this file      — reading a scenario named on the command line.

pub mod check;
pub mod device;
pub mod fio;
pub mod kernel;
pub mod repro;
pub mod run;
pub mod scenarios;
pub mod tune;

use std::path::Path;

use crate::scenario::{Scenario, embedded};

/// The scenario `name` names: a file, or else a built-in scenario (`.toml` optional).
pub fn load(name: &str) -> Result<Scenario, String> {
    let p = Path::new(name);
    if p.exists() {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{name}: cannot read: {e}"))?;
        return Scenario::parse(&text, name).map_err(|e| e.to_string());
    }
    if let Some(text) = embedded::get(name.trim_end_matches(".toml")) {
        return Scenario::parse(text, &format!("{name} (built in)")).map_err(|e| e.to_string());
    }
    Err(format!(
        "{name}: no such file, and no built-in scenario of that name; built in: {}",
        embedded::names().join(", ")
    ))
}

/// A scenario (a file or a built-in name) when `name` is one, else None.
pub fn scenario_named(name: &str) -> Option<Result<Scenario, String>> {
    (Path::new(name).exists() || embedded::get(name.trim_end_matches(".toml")).is_some())
        .then(|| load(name))
}
