//! `blkcg-sim tune`: answers to "what should I write?" for a simulated machine, by the
//! procedures the kernel and resctl-demo use on real ones.
//!
//! Design
//! ------
//! Each tuner runs ordinary scenarios through the same `prepare()`/`simulate()` as
//! `run`, in parallel and in a fixed order ([`crate::sweep::pool::ordered`]), and reads
//! their results from what `run` reports — fio's JSON for the kernel's script, the
//! summary rows and per-job timelines for resctl-bench's figures, the controllers'
//! rows (`timeline.csv`, `throttle.csv`) for what was in force — so every number a
//! tuner prints can be reproduced by `blkcg-sim run` of the scenario it ran.
//!
//! - `model.rs` — `tune model`: `tools/cgroup/iocost_coef_gen.py`'s six fio jobs and
//!   arithmetic (io.cost.model), and with `--qos` resctl-demo rd-agent's QoS heuristic;
//! - `qos.rs`   — `tune qos`: resctl-bench `iocost-qos`/`iocost-tune` over a scenario's
//!   own workloads (vrate axis, the vrate in force, isolation, Pareto front, named
//!   solutions, hwdb lines);
//! - `iomax.rs` — `tune iomax`: the least restrictive io.max limit on another cgroup
//!   that keeps the protected one isolated, whether it bound, and its cost;
//! - `protect.rs` — what protecting a cgroup means (its figures, isolation against its
//!   run alone), shared by the tuners that protect one, with what they share besides:
//!   the controllers' rows each run keeps (what was in force: blk-iocost's vrate,
//!   blk-throttle's queues), the refusal of a `[[schedule]]` entry rewriting what they
//!   tune, and the runnable `blkcg-sim sweep FILE --set ...` they print;
//! - `goal.rs`  — `tune SCENARIO --goal ... --over ...`: a grid (then refined) over
//!   sweep keys and seeds, the best setting meeting the goals, its margin, how the
//!   goals fail just outside it, the lines to write and the front picture;
//! - `fit.rs`   — resctl-bench's piecewise-linear fits and the searches on them;
//! - here       — the machine a tuner measures: a device, with the kernel and host
//!   costs of a scenario when one is given.

pub mod fit;
pub mod goal;
pub mod iomax;
pub mod model;
pub mod protect;
pub mod qos;

use toml::{Table, Value};

use crate::scenario::Scenario;
use crate::scenario::source::{Place, Places};
use crate::scenario::spec::parse_device_spec;

/// The machine a tuner measures: a `[device]` table and, from a scenario, its
/// `[kernel]` and `[host]` tables (the interface lines and workloads are not the
/// machine's: the kernel's script measures a disk with no controller configured).
#[derive(Debug, Clone)]
pub struct Machine {
    /// Where the machine came from, for messages.
    pub source: String,
    device: Table,
    kernel: Option<Value>,
    host: Option<Value>,
    /// Where its keys were written: `--device SPEC`, or the lines of the scenario they
    /// come from (a tuner's scenario names them, not the lines it writes).
    places: Places,
}

impl Machine {
    /// From `--device SPEC` (`cloud:preset=azure-p20`).
    pub fn from_spec(spec: &str) -> Result<Machine, String> {
        Ok(Machine::from_device(
            &format!("--device `{spec}`"),
            parse_device_spec(spec)?,
        ))
    }

    /// From a `[device]` table (`device fit`'s fitted one).
    pub fn from_device(source: &str, device: Table) -> Machine {
        let mut places = Places::default();
        places.set(&["device"], Place::argument(source));
        Machine {
            source: source.to_string(),
            device,
            kernel: None,
            host: None,
            places,
        }
    }

    /// From a scenario's `[device]`, `[kernel]` and `[host]` (its variants are not
    /// looked at).
    pub fn from_scenario(sc: &Scenario) -> Result<Machine, String> {
        let device = sc
            .table
            .get("device")
            .and_then(Value::as_table)
            .cloned()
            .ok_or_else(|| format!("{}: no [device] table to measure", sc.file))?;
        let places = sc.places_of(&["device", "kernel", "host"]);
        Ok(Machine {
            source: sc.file.clone(),
            device,
            kernel: sc.table.get("kernel").cloned(),
            host: sc.table.get("host").cloned(),
            places,
        })
    }

    /// A scenario on this machine running `cgroups` (each a name and its table), with
    /// the root's lines `root` and seed `seed`.
    pub fn scenario(
        &self,
        name: &str,
        seed: u64,
        root: Option<Table>,
        cgroups: Vec<(String, Table)>,
    ) -> Result<Scenario, String> {
        let mut t = Table::new();
        t.insert("name".into(), Value::String(name.into()));
        t.insert("seed".into(), Value::Integer(seed as i64));
        t.insert("device".into(), Value::Table(self.device.clone()));
        if let Some(k) = &self.kernel {
            t.insert("kernel".into(), k.clone());
        }
        if let Some(h) = &self.host {
            t.insert("host".into(), h.clone());
        }
        if let Some(r) = root {
            t.insert("root".into(), Value::Table(r));
        }
        t.insert(
            "cgroup".into(),
            Value::Table(
                cgroups
                    .into_iter()
                    .map(|(n, t)| (n, Value::Table(t)))
                    .collect(),
            ),
        );
        Scenario::generated(&t, &format!("{} ({name})", self.source), &self.places)
    }
}

/// Python's `round()` of a float to an integer: halves to even, as the kernel's and
/// rd-agent's scripts round.
pub fn py_round(x: f64) -> i64 {
    x.round_ties_even() as i64
}
