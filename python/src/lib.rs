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
//! ([`Python::detach`]), so Python threads run simulations on every core. A run or a
//! sweep's slice simulates on a thread of its own while the calling thread checks for
//! signals every [`SIGNAL_POLL`] ([`interruptible`]): Ctrl-C's `KeyboardInterrupt`
//! (any exception a signal handler raises) cancels the work ([`api::Cancel`]), which
//! stops within milliseconds, and is raised. Every other error is the library's typed
//! [`api::Error`], raised as `ScenarioError` (a `ValueError`) with its message, the
//! command line's. A sweep's plan is checked once per process and kept for its slices
//! ([`plan`]). A run's result ([`RunOutput`]) stays in the process that ran it, its
//! tables in the library's spools: Python reads a table's text whole or a range of
//! bytes at a time, when it asks for it.

use blkcg_sim::api::{self, Cancel, RunRequest, Source, SweepPlan};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

create_exception!(
    blkcg_sim._native,
    ScenarioError,
    PyValueError,
    "A scenario, key or value blkcg-sim refuses; the message is the command line's, \
     with `file:line` where the problem is written."
);

/// Every library error is raised as `ScenarioError` with its message.
fn err(e: api::Error) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// How often a long call checks for signals (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// `work(cancel)` without the GIL, on a thread of its own, while this thread checks
/// for signals every [`SIGNAL_POLL`]: a signal handler's exception (Ctrl-C's
/// `KeyboardInterrupt`) sets `cancel`, the work stops at its next check, and the
/// exception is raised. Python runs signal handlers on its main thread only: a call
/// made on another Python thread runs to its end, as a blocking call of Python's own.
fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&Cancel) -> Result<T, api::Error> + Send,
) -> PyResult<T> {
    let cancel = &Cancel::default();
    py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let worker = s.spawn(move || {
                let _ = tx.send(work(cancel));
            });
            let mut raised = None;
            loop {
                match rx.recv_timeout(SIGNAL_POLL) {
                    Ok(done) => return raised.map_or_else(|| done.map_err(err), Err),
                    Err(RecvTimeoutError::Timeout) if raised.is_none() => {
                        if let Err(e) = Python::attach(|py| py.check_signals()) {
                            cancel.cancel();
                            raised = Some(e);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    // the work panicked (it sends its result before it ends): its panic
                    // goes on here, and PyO3 raises it
                    Err(RecvTimeoutError::Disconnected) => {
                        let panic = worker.join().err();
                        std::panic::resume_unwind(
                            panic.unwrap_or_else(|| Box::new("the simulation gave no result")),
                        );
                    }
                }
            }
        })
    })
}

fn parse(text: &str, file: &str) -> PyResult<blkcg_sim::scenario::Scenario> {
    api::load(Source::Text { text, file }).map_err(err)
}

/// Plans already checked in this process, newest last: a sweep's slices reuse their
/// plan instead of planning and checking it again (see [`plan`]).
type PlanKey = (String, String, Vec<(String, Vec<String>)>, u32);
static PLANS: Mutex<Vec<(PlanKey, Arc<SweepPlan>)>> = Mutex::new(Vec::new());
/// Plans kept: a few sweeps under way at once in one process.
const PLANS_KEPT: usize = 8;

/// The sweep plan of `(text, file, grid, seeds)`, checked once per process: the
/// driver's `sweep_plan` checks it (every key, every value prepared) and keeps it, so
/// its in-process slices reuse it; a Ray or Dask worker process checks it at its
/// first slice and reuses it for the next ones. A plan is only ever used checked.
fn plan(
    text: &str,
    file: &str,
    grid: Vec<(String, Vec<String>)>,
    seeds: u32,
) -> Result<Arc<SweepPlan>, api::Error> {
    let key: PlanKey = (text.to_string(), file.to_string(), grid, seeds);
    let plans = || PLANS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = plans().iter().find(|(k, _)| *k == key) {
        return Ok(p.clone());
    }
    let sc = api::load(Source::Text { text, file })?;
    let p = Arc::new(SweepPlan::new(&sc, &key.2, seeds)?);
    let mut kept = plans();
    if kept.len() == PLANS_KEPT {
        kept.remove(0);
    }
    kept.push((key, p.clone()));
    Ok(p)
}

/// Load a scenario from a path, a built-in name or TOML text: `(text, file)`.
#[pyfunction]
fn load(py: Python<'_>, spec: &str) -> PyResult<(String, String)> {
    py.detach(|| api::load(Source::Auto(spec)))
        .map(|sc| (sc.text, sc.file))
        .map_err(err)
}

/// Load the scenario file at `path`: `(text, file)`.
#[pyfunction]
fn load_path(py: Python<'_>, path: &str) -> PyResult<(String, String)> {
    py.detach(|| api::load(Source::Path(path)))
        .map(|sc| (sc.text, sc.file))
        .map_err(err)
}

/// Load a scenario given as JSON text (a dict's `json.dumps`), named `file` in
/// errors: `(text, file)`, the text being its TOML.
#[pyfunction]
fn load_json(json: &str, file: &str) -> PyResult<(String, String)> {
    let table: toml::Table = serde_json::from_str(json)
        .map_err(|e| ScenarioError::new_err(format!("{file}: not a scenario: {e}")))?;
    api::load(Source::Table { table, file })
        .map(|sc| (sc.text, sc.file))
        .map_err(err)
}

/// One run's outputs, as `blkcg_sim.Result` reads them: the library's own
/// [`api::RunResult`], read through getters; its tables and trace stay spooled
/// until read.
#[pyclass(frozen, module = "blkcg_sim._native")]
struct RunOutput(api::RunResult);

impl RunOutput {
    fn table(&self, name: &str) -> PyResult<&api::Table> {
        self.0.table(name).ok_or_else(|| {
            let names: Vec<&str> = self.0.tables.iter().map(|t| t.name).collect();
            PyValueError::new_err(format!(
                "{name}: no such table; one of {}",
                names.join(", ")
            ))
        })
    }
}

#[pymethods]
impl RunOutput {
    #[getter]
    fn fio_json(&self) -> &str {
        &self.0.fio_json
    }
    #[getter]
    fn summary(&self) -> &str {
        &self.0.summary
    }
    /// The CSV tables' names: `jobs`, `iostat`, then every controller's stream in the
    /// registry's order (`throttle`, `timeline`, `iolatency`, ...).
    #[getter]
    fn tables(&self) -> Vec<&'static str> {
        self.0.tables.iter().map(|t| t.name).collect()
    }
    /// Table `name`'s CSV text, whole.
    fn csv(&self, name: &str) -> PyResult<String> {
        self.table(name)?.csv().map_err(err)
    }
    /// Up to `size` bytes of table `name`'s CSV text from byte `pos` (none at its end).
    fn read<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        pos: u64,
        size: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let text = &self.table(name)?.text;
        let mut buf = vec![0; size.min(text.len().saturating_sub(pos) as usize)];
        let n = text.read_at(pos, &mut buf)?;
        Ok(PyBytes::new(py, &buf[..n]))
    }
    #[getter]
    fn io_stat(&self) -> &str {
        &self.0.io_stat
    }
    #[getter]
    fn io_pressure(&self) -> &str {
        &self.0.io_pressure
    }
    #[getter]
    fn trace(&self) -> PyResult<Vec<String>> {
        self.0.trace_lines().map_err(err)
    }
    #[getter]
    fn warnings(&self) -> Vec<&str> {
        self.0.warnings.iter().map(String::as_str).collect()
    }
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
    interruptible(py, |cancel| {
        let req = RunRequest {
            variant,
            kernel,
            seed,
            overrides,
            trace,
            cancel: cancel.clone(),
        };
        api::run(&sc, &req)
    })
    .map(RunOutput)
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

/// Plan a sweep: `(runs, csv_header, warnings)`; every key and value is checked.
#[pyfunction]
fn sweep_plan(
    py: Python<'_>,
    text: &str,
    file: &str,
    grid: Vec<(String, Vec<String>)>,
    seeds: u32,
) -> PyResult<(usize, String, Vec<String>)> {
    let plan = py.detach(|| plan(text, file, grid, seeds)).map_err(err)?;
    Ok((plan.runs(), plan.header(), plan.warnings().map_err(err)?))
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
    interruptible(py, |cancel| {
        plan(text, file, grid, seeds)?.rows(start..end, workers, cancel)
    })
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
    m.add_function(wrap_pyfunction!(load_path, m)?)?;
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
