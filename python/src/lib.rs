//! `blkcg_sim._native`: the Python binding of blkcg-sim's library facade
//! ([`blkcg_sim::api`]); the pure-Python package `blkcg_sim` (`python/blkcg_sim/`)
//! wraps it into the user's API (DataFrames, backends, docstrings).
//!
//! Design
//! ------
//! A thin layer, one function per facade call, all in plain Python values (str,
//! int, lists, tuples) so that what crosses the boundary is picklable and a Ray or
//! Dask worker can be handed it. A scenario crosses as `(text, file)`: the driver
//! loads it once ([`load`], [`load_json`]) and every call parses that text again, so
//! a worker needs neither the file nor the driver's working folder (an `include`
//! still reads relative to `file`). Each call releases the GIL while it simulates
//! ([`Python::detach`]), so Python threads run simulations on every core. Every
//! error is the command line's message, raised as `ScenarioError` (a `ValueError`).

use blkcg_sim::api::{self, RunRequest, Source, SweepPlan};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    blkcg_sim._native,
    ScenarioError,
    PyValueError,
    "A scenario, key or value blkcg-sim refuses; the message is the command line's, \
     with `file:line` where the problem is written."
);

fn err(msg: String) -> PyErr {
    ScenarioError::new_err(msg)
}

fn parse(text: &str, file: &str) -> PyResult<blkcg_sim::scenario::Scenario> {
    api::load(Source::Text { text, file }).map_err(err)
}

/// Load a scenario from a path, a built-in name or TOML text: `(text, file)`.
#[pyfunction]
fn load(py: Python<'_>, spec: &str) -> PyResult<(String, String)> {
    py.detach(|| api::load(Source::Auto(spec)))
        .map(|sc| (sc.text, sc.file))
        .map_err(err)
}

/// Load a scenario given as JSON text (a dict's `json.dumps`), named `file` in
/// errors: `(text, file)`, the text being its TOML.
#[pyfunction]
fn load_json(json: &str, file: &str) -> PyResult<(String, String)> {
    let table: toml::Table =
        serde_json::from_str(json).map_err(|e| err(format!("{file}: not a scenario: {e}")))?;
    api::load(Source::Table { table, file })
        .map(|sc| (sc.text, sc.file))
        .map_err(err)
}

/// One run's outputs, as `blkcg_sim.Result` reads them.
#[pyclass(frozen, get_all, module = "blkcg_sim._native")]
struct RunOutput {
    fio_json: String,
    summary: String,
    /// Every CSV table as `(name, text)`: `jobs`, `iostat`, then every controller's
    /// stream in the registry's order (`throttle`, `timeline`, `iolatency`, ...).
    tables: Vec<(String, String)>,
    io_stat: String,
    trace: Vec<String>,
    warnings: Vec<String>,
}

/// Run one variant of the scenario `(text, file)` with overrides.
#[pyfunction]
#[pyo3(signature = (text, file, variant, kernel, seed, overrides, trace))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    text: &str,
    file: &str,
    variant: Option<String>,
    kernel: Option<String>,
    seed: Option<u64>,
    overrides: Vec<(String, String)>,
    trace: bool,
) -> PyResult<RunOutput> {
    let sc = parse(text, file)?;
    let req = RunRequest {
        variant,
        kernel,
        seed,
        overrides,
        trace,
    };
    let r = py.detach(|| api::run(&sc, &req)).map_err(err)?;
    Ok(RunOutput {
        fio_json: r.fio_json,
        summary: r.summary,
        tables: r
            .tables
            .into_iter()
            .map(|t| (t.name.to_string(), t.csv))
            .collect(),
        io_stat: r.io_stat,
        trace: r.trace,
        warnings: r.warnings,
    })
}

/// Check the scenario `(text, file)` as `blkcg-sim check` does: per variant, its
/// warnings.
#[pyfunction]
fn check(
    py: Python<'_>,
    text: &str,
    file: &str,
    variant: Option<String>,
    overrides: Vec<(String, String)>,
) -> PyResult<Vec<(String, Vec<String>)>> {
    let sc = parse(text, file)?;
    py.detach(|| api::check(&sc, variant.as_deref(), &overrides))
        .map_err(err)
}

/// Plan a sweep: `(runs, csv_header)`; every key and value is checked.
#[pyfunction]
fn sweep_plan(
    py: Python<'_>,
    text: &str,
    file: &str,
    grid: Vec<(String, Vec<String>)>,
    seeds: u32,
) -> PyResult<(usize, String)> {
    let sc = parse(text, file)?;
    let plan = py
        .detach(|| SweepPlan::new(&sc, &grid, seeds))
        .map_err(err)?;
    Ok((plan.runs(), plan.header()))
}

/// The CSV rows of runs `start..end` of a sweep, run on `workers` threads.
#[pyfunction]
#[pyo3(signature = (text, file, grid, seeds, start, end, workers))]
#[allow(clippy::too_many_arguments)]
fn sweep_rows(
    py: Python<'_>,
    text: &str,
    file: &str,
    grid: Vec<(String, Vec<String>)>,
    seeds: u32,
    start: usize,
    end: usize,
    workers: usize,
) -> PyResult<String> {
    let sc = parse(text, file)?;
    py.detach(|| SweepPlan::new(&sc, &grid, seeds)?.rows(start..end, workers))
        .map_err(err)
}

/// The built-in scenarios: `(name, description)`.
#[pyfunction]
fn scenarios() -> Vec<(&'static str, String)> {
    api::scenarios()
}

/// The controllers the simulator has, as JSON (`api::controllers`).
#[pyfunction]
fn controllers_json() -> String {
    serde_json::to_string(&api::controllers()).unwrap_or_default()
}

/// The cores of this machine (the default number of sweep workers).
#[pyfunction]
fn cores() -> usize {
    blkcg_sim::sweep::pool::cores()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_class::<RunOutput>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(load_json, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_plan, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_rows, m)?)?;
    m.add_function(wrap_pyfunction!(scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(controllers_json, m)?)?;
    m.add_function(wrap_pyfunction!(cores, m)?)?;
    Ok(())
}
