//! The library's facade: what the Python package (`python/`) and any other embedder
//! call — load a scenario, run it with overrides and get every output in memory,
//! check it, plan a sweep and run any slice of its points — without a terminal or an
//! output folder.
//!
//! Design
//! ------
//! Nothing here simulates or formats on its own: every call goes through the same
//! functions as the command line, so a result is byte-identical to what the CLI
//! prints or writes for the same scenario, seed and values.
//!
//! - [`load`]: a scenario from a [`Source`] — a path, a built-in name, TOML text or
//!   an already built table — the one loader: the command line reads its SCENARIO
//!   argument through it ([`Source::Name`]), and so does Python.
//! - [`run`]: one variant with overrides. The overrides are `sweep --set` keys with
//!   one value each (`crate::sweep::keys`), so the run is the one-point sweep of
//!   those values; that point is prepared once and simulated by `run`'s
//!   `prepare()` / `simulate()`. Its tables are not kept as rows: the recorder
//!   streams each CSV file's text (`iostat.csv` and every policy's and elevator's,
//!   made by the very code that writes a run's folder) into a spool as the rows come
//!   (`RecordOptions::spool_tables`: memory up to 1 MiB, then an unlinked temporary
//!   file), the trace likewise only when asked for, and `jobs.csv` is written with
//!   `run`'s own function. A [`RunResult`] holds those spools ([`Spooled`]) and a
//!   table's text is read back only when the caller reads it ([`Table::csv`], or a
//!   range of bytes at a time), so a result costs about the same memory for an hour
//!   or a day of simulated time.
//! - **Cancelling**: [`RunRequest::cancel`] and [`SweepPlan::rows`]'s `cancel` are a
//!   [`Cancel`] the caller may set from another thread (the Python binding does on
//!   Ctrl-C): a run ends at its next progress check (a few milliseconds), a sweep
//!   starts no new run, and the call returns [`Error::Cancelled`]. A run never
//!   cancelled is byte-identical to one without the flag.
//! - [`check`]: every variant (or one) prepared as `check` prepares it.
//! - [`SweepPlan`]: `sweep`'s plan (`crate::sweep::Sweep`): the runs are enumerated here, in one
//!   order, and any contiguous slice of them is run with [`SweepPlan::rows`] into
//!   the CSV rows `sweep --format csv` prints — the unit a distributed engine (Ray,
//!   Dask, a Slurm array) hands to a worker; slices concatenated in order are the
//!   whole sweep, whatever ran them.
//! - [`scenarios`]: the built-in scenarios; [`controllers`]: the controllers, as the
//!   registry describes them (their files, switches, tables).
//!
//! What reaches the caller
//! ------------------------
//! - **Errors** are typed: [`Error`] says which kind of refusal it is (a scenario
//!   that does not load, with its file, line and key; a file not read; a name that
//!   is no scenario; a run, check or sweep refused; a request the facade cannot
//!   serve; a run or sweep cancelled), and its `Display` is the command line's
//!   message, `file:line` included where the scenario writes the culprit
//!   (`blkcg-sim: ` then this text is what the command line prints).
//! - **Warnings** come back as values: [`RunResult::warnings`], [`check`]'s lists.
//! - **Nothing is printed**: no call here writes to stdout or stderr, and none shows
//!   progress (the runs are simulated with `Reporter::Quiet`). The commands built on
//!   the library (`crate::cli`) hand their warnings and status lines to a
//!   [`crate::notify::Notify`] sink, which the command line renders on stderr.
//! - **Errors of a sweep** are checked up front by [`SweepPlan::new`] (every key,
//!   every value prepared alone); a run's own failure is its error in run order.

use std::ops::Range;
use std::path::Path;

/// A caller's request to stop a run or a sweep (see the module's design).
pub use crate::progress::Cancel;
use crate::progress::Reporter;
use crate::report::fio::json::to_json;
use crate::report::outputs::{job_lines, summary_text};
/// A text a run made as it went, read back when asked (see the module's design).
pub use crate::report::record::Spooled;
use crate::report::record::{RecordOptions, Spool};
use crate::report::summary::IOSTAT_CSV_HEADER;
use crate::report::timeline::jobs_csv;
use crate::run::{Prepared, prepare, simulate};
use crate::scenario::embedded;
/// A loaded scenario ([`load`] gives one) and what refuses to load.
pub use crate::scenario::{Scenario, ScenarioError};
use crate::stack::registry;
use crate::stack::stream::StreamDef;
use crate::sweep::Sweep;
use crate::sweep::pool;
use crate::sweep::record::csv_header;

/// What the library refuses, with the command line's message as its `Display`
/// (`blkcg-sim: ` and this message is what the command line prints).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A scenario that does not load: its file, the line and key where known.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A scenario file that cannot be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A name that is neither a file nor a built-in scenario.
    #[error(
        "{name}: no such file, and no built-in scenario of that name; built in: {}",
        builtin.join(", ")
    )]
    NoSuchScenario {
        name: String,
        /// The built-in scenarios' names.
        builtin: Vec<&'static str>,
    },
    /// A run, check or sweep the simulator refuses: a key, value or write it does
    /// not accept, or a run that fails. The message begins with `file:line:` where
    /// the scenario writes the value (after `--set KEY=VALUE: ` or `point N (...): `
    /// when a sweep's value or run is at fault), as the command line prints it.
    #[error("{0}")]
    Refused(String),
    /// A request the facade cannot serve as asked (a variant not named where the
    /// scenario has several, runs outside the sweep).
    #[error("{0}")]
    Invalid(String),
    /// The caller's [`Cancel`] was set: the run or sweep stopped early, with no result.
    #[error("{}", crate::progress::CANCELLED)]
    Cancelled,
}

impl Error {
    /// The scenario file and line the error points at, where it keeps them apart
    /// ([`Error::Scenario`]); the other kinds carry them in their message.
    pub fn location(&self) -> Option<(&str, Option<usize>)> {
        match self {
            Error::Scenario(e) => Some((e.file.as_str(), e.line)),
            _ => None,
        }
    }
}

impl From<String> for Error {
    /// The library's internal errors are the command line's messages.
    fn from(msg: String) -> Self {
        Error::Refused(msg)
    }
}

/// Where a scenario comes from.
pub enum Source<'a> {
    /// TOML text if it holds a line break or an `=` (named `<text>` in errors), else
    /// as [`Source::Name`].
    Auto(&'a str),
    /// What the command line reads as its SCENARIO argument: a path if it exists,
    /// else a built-in scenario's name (`.toml` may end it).
    Name(&'a str),
    /// A file, named by its path in errors.
    Path(&'a str),
    /// TOML text; `file` names it in errors and is where `include`s are read from.
    Text { text: &'a str, file: &'a str },
    /// A scenario already as a table (a Python dict); written out as TOML first, so
    /// errors give lines of that text, named `file`.
    Table { table: toml::Table, file: &'a str },
}

/// Whether `name` is a scenario the command line would read: an existing path or a
/// built-in scenario's name.
pub fn is_scenario_name(name: &str) -> bool {
    Path::new(name).exists() || embedded::get(name.trim_end_matches(".toml")).is_some()
}

/// The largest scenario file read, as for fio job files: a bigger one (or a device
/// such as `/dev/zero`) is refused after reading this much, never read whole.
pub const MAX_SCENARIO_FILE: u64 = 16 << 20;

/// The text of scenario file `path`, at most [`MAX_SCENARIO_FILE`] bytes.
fn read_capped(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_SCENARIO_FILE + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCENARIO_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} MiB: not a scenario file",
                MAX_SCENARIO_FILE >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// Load a scenario (see [`Source`]).
pub fn load(src: Source) -> Result<Scenario, Error> {
    let parse = |text: &str, file: &str| Ok(Scenario::parse(text, file)?);
    let read = |path: &str| {
        read_capped(path).map_err(|source| Error::Io {
            path: path.to_string(),
            source,
        })
    };
    match src {
        Source::Text { text, file } => parse(text, file),
        Source::Table { table, file } => {
            let text =
                toml::to_string(&table).map_err(|e| Error::Invalid(format!("{file}: {e}")))?;
            parse(&text, file)
        }
        Source::Auto(s) if s.contains(['\n', '=']) => parse(s, "<text>"),
        Source::Path(s) => parse(&read(s)?, s),
        Source::Auto(s) | Source::Name(s) => {
            if Path::new(s).exists() {
                return parse(&read(s)?, s);
            }
            match embedded::get(s.trim_end_matches(".toml")) {
                Some(text) => parse(text, &format!("{s} (built in)")),
                None => Err(Error::NoSuchScenario {
                    name: s.to_string(),
                    builtin: embedded::names(),
                }),
            }
        }
    }
}

/// The built-in scenarios: (name, the first line of its `description`), as
/// `blkcg-sim scenarios` lists them.
pub fn scenarios() -> Vec<(&'static str, String)> {
    embedded::SCENARIOS
        .iter()
        .map(|(name, text)| {
            let about = Scenario::parse(text, name)
                .ok()
                .and_then(|sc| {
                    let d = sc.table.get("description")?.as_str()?;
                    Some(d.lines().next().unwrap_or_default().to_string())
                })
                .unwrap_or_default();
            (*name, about)
        })
        .collect()
}

/// One cgroup file of a controller.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ControllerFile {
    /// As cgroupfs names it (`io.max`).
    pub name: &'static str,
    /// Whether the root cgroup has it, and whether its children do.
    pub on_root: bool,
    pub on_children: bool,
    /// The `key=value` tokens its line takes (`sweep`'s `FILE:TOKEN`).
    pub tokens: &'static [&'static str],
    /// A line the kernel accepts, `MAJ:MIN` standing for the disk's numbers.
    pub example: &'static str,
}

/// One controller the simulator has: a blk-cgroup policy, an rq-qos entry or an
/// elevator, as the registry (`crate::stack::registry`) describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Controller {
    /// As the kernel calls it (`blk-iocost`, `mq-deadline`).
    pub name: &'static str,
    /// `bio` (in `submit_bio()`), `rq-qos` (on the rq-qos chain) or `elevator`.
    pub kind: &'static str,
    /// Its cgroup files (none for an elevator without a cgroup side).
    pub files: Vec<ControllerFile>,
    /// The prefix of its `[kernel]` behaviour switches (`iocost.`), if any.
    pub switches: Option<&'static str>,
    /// An elevator's `queue/iosched/` files (`[device.iosched]` keys).
    pub attributes: &'static [&'static str],
    /// Its timelines: the names of its tables in [`RunResult::tables`].
    pub tables: Vec<&'static str>,
    /// The kernel config options a real kernel needs for it.
    pub kconfig: Vec<&'static str>,
    /// What I/O it acts on: `any`, or `buffered-writes` (wbt: only the page cache's
    /// writeback; a scenario shows it with a buffered writer).
    pub acts_on: &'static str,
}

/// Every controller the simulator has, policies first, in registry order.
pub fn controllers() -> Vec<Controller> {
    let tables = |streams: &[&StreamDef]| streams.iter().map(|s| s.name).collect();
    let kconfig = |opts: &[registry::Kconfig]| opts.iter().map(|o| o.name).collect();
    let files = |files: &'static [registry::CgroupFile]| -> Vec<ControllerFile> {
        files
            .iter()
            .map(|f| ControllerFile {
                name: f.name,
                on_root: f.on_root(),
                on_children: f.on_children(),
                tokens: f.tokens,
                example: f.example,
            })
            .collect()
    };
    let policies = registry::POLICIES.iter().map(|d| Controller {
        name: d.name,
        kind: match d.hooks {
            registry::HookKind::Bio => "bio",
            registry::HookKind::RqQos => "rq-qos",
        },
        files: files(d.files),
        switches: d.switches,
        attributes: &[],
        tables: tables(d.streams),
        kconfig: kconfig(d.kconfig),
        acts_on: d.acts_on.name(),
    });
    let elevators = registry::ELEVATORS.iter().map(|e| Controller {
        name: e.name,
        kind: "elevator",
        files: files(e.files),
        switches: e.switches,
        attributes: e.attributes,
        tables: tables(e.streams),
        kconfig: kconfig(e.kconfig),
        acts_on: registry::ActsOn::AnyIo.name(),
    });
    policies.chain(elevators).collect()
}

/// What to run of a scenario.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Which `[[variant]]`; required when the scenario has variants.
    pub variant: Option<String>,
    /// A kernel version preset, as `run --kernel`.
    pub kernel: Option<String>,
    /// The seed, instead of the scenario's.
    pub seed: Option<u64>,
    /// `sweep --set` keys with one value each, written into the scenario in order.
    pub overrides: Vec<(String, String)>,
    /// Keep the controllers' event log (`trace.txt`).
    pub trace: bool,
    /// Stop the run early once set (from another thread): [`Error::Cancelled`].
    pub cancel: Cancel,
}

/// One CSV table of a run, as its file holds it.
#[derive(Debug)]
pub struct Table {
    /// Its name (`jobs`, `iostat`, then each stream's of the registry: `throttle`,
    /// `timeline` (blk-iocost), `iolatency`, `deadline`, ...).
    pub name: &'static str,
    /// Its file in a run's folder (`jobs.csv`).
    pub file: &'static str,
    /// The CSV text, with its header even when it has no row, spooled: read it whole
    /// with [`Table::csv`], or a range at a time with [`Spooled::read_at`].
    pub text: Spooled,
}

impl Table {
    /// The CSV text, read back whole.
    pub fn csv(&self) -> Result<String, Error> {
        read_back(self.file, &self.text)
    }
}

/// The text of `file` as spooled.
fn read_back(file: &str, text: &Spooled) -> Result<String, Error> {
    text.text().map_err(|source| Error::Io {
        path: format!("{file} (spooled)"),
        source,
    })
}

/// Everything one run produced, as the files of `run --output` hold it.
#[derive(Debug)]
pub struct RunResult {
    /// fio's JSON document (`fio.json`).
    pub fio_json: String,
    /// The summary (`summary.txt`): the table, then the device line of an FTL drive.
    pub summary: String,
    /// Every CSV table: `jobs`, `iostat`, then every policy's and elevator's stream
    /// in registry order, whether or not the run has that policy.
    pub tables: Vec<Table>,
    /// `io.stat` of every cgroup that did I/O.
    pub io_stat: String,
    /// Every cgroup's `io.pressure` at the end, as `run --output` writes it.
    pub io_pressure: String,
    /// The controllers' event log as `trace.txt` holds it, one line each, spooled
    /// (empty unless asked for).
    pub trace: Spooled,
    /// What `run` prints as warnings.
    pub warnings: Vec<String>,
}

impl RunResult {
    /// Table `name` (`jobs`, `iostat`, `throttle`, ...).
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The event log's lines, read back.
    pub fn trace_lines(&self) -> Result<Vec<String>, Error> {
        let text = read_back("trace.txt", &self.trace)?;
        Ok(text.lines().map(String::from).collect())
    }
}

/// A run's error `e`: [`Error::Cancelled`] once `cancel` is set (whatever the run
/// stopped with), else the refusal.
fn run_error(cancel: &Cancel, e: String) -> Error {
    if cancel.is_cancelled() {
        return Error::Cancelled;
    }
    Error::Refused(e)
}

/// `--set KEY=V1,V2,...` with the values' commas and backslashes escaped.
fn set_spec(key: &str, values: &[String]) -> String {
    let vals: Vec<String> = values
        .iter()
        .map(|v| v.replace('\\', "\\\\").replace(',', "\\,"))
        .collect();
    format!("{key}={}", vals.join(","))
}

/// `variant` of `sc` with `overrides` written in — the only point of the sweep of
/// those values — prepared once (with `kernel`, `seed` and `trace` as `prepare`
/// takes them), and that point's scenario (None without overrides: `sc` itself).
/// Only when the point is refused is each value prepared alone, as a sweep checks
/// them, so the error names the value at fault as `sweep --set` does.
fn prepare_point(
    sc: &Scenario,
    variant: Option<&str>,
    overrides: &[(String, String)],
    kernel: Option<&str>,
    seed: Option<u64>,
    trace: bool,
) -> Result<(Option<Scenario>, Prepared), Error> {
    let variants = sc.variants();
    if variant.is_none() && !variants.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: the scenario has variants ({}); name the one to run",
            sc.file,
            variants.join(", ")
        )));
    }
    if overrides.is_empty() {
        return Ok((None, prepare(sc, variant, kernel, seed, trace)?));
    }
    let mut sets: Vec<String> = variant
        .map(|v| set_spec("variant", &[v.to_string()]))
        .into_iter()
        .collect();
    sets.extend(
        overrides
            .iter()
            .map(|(k, v)| set_spec(k, std::slice::from_ref(v))),
    );
    let sweep = Sweep::unchecked(sc, &sets, 1)?;
    let point = sweep.scenario(0).and_then(|point| {
        let p = prepare(&point, None, kernel, seed, trace)?;
        Ok((Some(point), p))
    });
    point.or_else(|e| {
        sweep.check_each_value()?;
        Err(e.into())
    })
}

/// Run one variant of `sc` (see the module's design).
pub fn run(sc: &Scenario, req: &RunRequest) -> Result<RunResult, Error> {
    let (point, prepared) = prepare_point(
        sc,
        req.variant.as_deref(),
        &req.overrides,
        req.kernel.as_deref(),
        req.seed,
        req.trace,
    )?;
    let sc = point.as_ref().unwrap_or(sc);
    // every file's text spooled as it comes (the trace only when asked for), and each
    // job's timeline (bounded) for jobs.csv
    let record = RecordOptions {
        spool_tables: true,
        spool_trace: req.trace,
        keep_job_timelines: true,
        ..RecordOptions::default()
    };
    let cancel = &req.cancel;
    let mut run = simulate(sc, prepared, &Reporter::Quiet, record, cancel)
        .map_err(|e| run_error(cancel, e))?;
    let mut spooled = std::mem::take(&mut run.record.spooled);
    // a file the run never made is its header alone
    let mut text = |file: &str, header: &str| match spooled.iter().position(|(f, _)| *f == file) {
        Some(i) => spooled.swap_remove(i).1,
        None => Spooled::from(header.to_string()),
    };
    let mut jobs = Spool::default();
    jobs.push(&jobs_csv(&job_lines(&run)));
    let mut tables = vec![
        Table {
            name: "jobs",
            file: "jobs.csv",
            text: jobs.finish()?,
        },
        Table {
            name: "iostat",
            file: "iostat.csv",
            text: text("iostat.csv", IOSTAT_CSV_HEADER),
        },
    ];
    tables.extend(registry::streams().map(|def| Table {
        name: def.name,
        file: def.csv,
        text: text(def.csv, def.header),
    }));
    Ok(RunResult {
        fio_json: to_json(&run.fio, false),
        summary: summary_text(&run),
        tables,
        io_stat: run.io_stat.clone(),
        io_pressure: run.io_pressure.clone(),
        trace: text("trace.txt", ""),
        warnings: run.warnings.clone(),
    })
}

/// Prepare `variant` (None: every variant, or the scenario without variants) with
/// `overrides` as `check` does, refusing what `run` refuses; the warnings of each as
/// `blkcg-sim check` lists them (the defaults no distribution ships, then the run's),
/// by variant name (`(base)` without variants).
pub fn check(
    sc: &Scenario,
    variant: Option<&str>,
    overrides: &[(String, String)],
) -> Result<Vec<(String, Vec<String>)>, Error> {
    let names: Vec<Option<String>> = match variant {
        Some(v) => vec![Some(v.to_string())],
        None if sc.variants().is_empty() => vec![None],
        None => sc.variants().into_iter().map(Some).collect(),
    };
    let mut out = Vec::new();
    for v in names {
        let (_, p) = prepare_point(sc, v.as_deref(), overrides, None, None, false)?;
        // as `blkcg-sim check` lists them: the defaults no distribution ships first
        let warnings = p
            .assumed
            .upstream_defaults()
            .iter()
            .chain(&p.warnings)
            .cloned()
            .collect();
        out.push((v.unwrap_or_else(|| "(base)".into()), warnings));
    }
    Ok(out)
}

/// A planned sweep (see the module's design).
pub struct SweepPlan {
    sweep: Sweep,
}

impl SweepPlan {
    /// Plan the sweep of `sc` over `grid` — each key with its values, the first key
    /// varying slowest — and `seeds` seeds, as `sweep --set KEY=V1,V2 ... --seeds N`;
    /// every key and value is checked first.
    pub fn new(sc: &Scenario, grid: &[(String, Vec<String>)], seeds: u32) -> Result<Self, Error> {
        let sets: Vec<String> = grid.iter().map(|(k, vs)| set_spec(k, vs)).collect();
        Ok(SweepPlan {
            sweep: Sweep::new(sc, &sets, seeds)?,
        })
    }

    /// How many runs (points × seeds).
    pub fn runs(&self) -> usize {
        self.sweep.runs()
    }

    /// What `sweep` warns of before it runs: a `[[schedule]]` entry rewriting a swept
    /// line mid-run, so that the rows would name a value not in force all along.
    pub fn warnings(&self) -> Result<Vec<String>, Error> {
        Ok(self.sweep.schedule_warnings()?)
    }

    /// The CSV header `sweep --format csv` prints.
    pub fn header(&self) -> String {
        let keys: Vec<String> = self.sweep.axes.iter().map(|a| a.key.clone()).collect();
        csv_header(&keys)
    }

    /// The CSV rows of runs `range` (one per job of each run), in run order, run on
    /// `workers` threads; the first failing run's error, in run order, or
    /// [`Error::Cancelled`] once `cancel` is set (no new run starts, those under way
    /// stop).
    pub fn rows(
        &self,
        range: Range<usize>,
        workers: usize,
        cancel: &Cancel,
    ) -> Result<String, Error> {
        if range.end > self.runs() || range.start > range.end {
            return Err(Error::Invalid(format!(
                "runs {}..{}: the sweep has runs 0..{}",
                range.start,
                range.end,
                self.runs()
            )));
        }
        let mut out = String::new();
        pool::ordered(
            range.len(),
            workers,
            |i| self.sweep.run(range.start + i, cancel).map(|(rec, _)| rec),
            |_, rec| {
                out.push_str(&rec?.csv_rows());
                Ok(())
            },
        )
        .map_err(|e| run_error(cancel, e))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::outdir::OutDir;
    use crate::run::run_variant_traced;

    const SC: &str = r#"
name = "api"
seed = 3
[device]
model = "nullb"
irqmode = 2
completion_nsec = 50000
[root]
"io.cost.qos" = "252:0 enable=1 ctrl=user rpct=90 rlat=5000 wpct=90 wlat=5000 min=50 max=150"
"io.cost.model" = "252:0 ctrl=user model=linear rbps=500000000 rseqiops=20000 rrandiops=20000 wbps=500000000 wseqiops=20000 wrandiops=20000"
[cgroup.a]
"io.max" = "252:0 riops=200"
fio = "fio --name=a --rw=randread --bs=4k --iodepth=4 --ioengine=libaio --runtime=2 --time_based"
[cgroup.b]
"io.weight" = "default 200"
fio = "fio --name=b --rw=randread --bs=4k --iodepth=2 --ioengine=libaio --runtime=2 --time_based"
[[variant]]
name = "one"
[[variant]]
name = "two"
seed = 9
"#;

    fn sc() -> Scenario {
        load(Source::Text {
            text: SC,
            file: "api.toml",
        })
        .unwrap()
    }

    #[test]
    fn the_tables_in_memory_are_the_files_run_writes() {
        let sc = sc();
        let req = RunRequest {
            variant: Some("two".into()),
            trace: true,
            ..RunRequest::default()
        };
        let mem = run(&sc, &req).unwrap();
        let dir = std::env::temp_dir().join(format!("blkcg-sim-api-{}", std::process::id()));
        let record = RecordOptions {
            out: Some(OutDir::open(&dir, "two").unwrap()),
            ..RecordOptions::default()
        };
        let q = Reporter::Quiet;
        let filed = run_variant_traced(&sc, Some("two"), None, None, &q, true, record).unwrap();
        let read = |name: &str| std::fs::read_to_string(dir.join("two").join(name)).unwrap();
        let (iostat, timeline, throttle, trace) = (
            read("iostat.csv"),
            read("timeline.csv"),
            read("throttle.csv"),
            read("trace.txt"),
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(throttle.lines().count() > 1 && timeline.lines().count() > 1);
        let csv = |name: &str| mem.table(name).unwrap().csv().unwrap();
        assert_eq!(csv("iostat"), iostat);
        assert_eq!(csv("timeline"), timeline);
        assert_eq!(csv("throttle"), throttle);
        assert!(!mem.trace.is_empty());
        assert_eq!(mem.trace.text().unwrap(), trace);
        assert_eq!(mem.trace_lines().unwrap().join("\n") + "\n", trace);
        assert_eq!(mem.fio_json, to_json(&filed.fio, false));
        // no trace unless asked for
        let untraced = RunRequest {
            trace: false,
            ..req.clone()
        };
        assert!(run(&sc, &untraced).unwrap().trace.is_empty());
        let jobs = csv("jobs");
        assert!(jobs.starts_with("t_s,job,ios,iops,lat_mean_ms\n"));
        assert!(jobs.contains(",a,") && jobs.contains(",b,"));
    }

    #[test]
    fn the_summary_ends_with_the_device_line_as_summary_txt_does() {
        // an FTL drive: run's summary (and summary.txt) has its write amplification
        let sc = load(Source::Auto("example-ssd-write-cliff")).unwrap();
        let req = RunRequest {
            variant: Some("unbounded".into()),
            ..RunRequest::default()
        };
        let mem = run(&sc, &req).unwrap();
        let last = mem.summary.lines().last().unwrap();
        assert!(
            last.starts_with("device nvme0n1: write amplification "),
            "{}",
            mem.summary
        );
        assert!(last.contains(" gc_erases="), "{last}");
        // iostat.csv with the FTL's own columns, as the folder's file has them
        let iostat = mem.table("iostat").unwrap().csv().unwrap();
        let header = iostat.lines().next().unwrap();
        assert!(header.ends_with(",nand_w_mib_s,wa,free_blocks"), "{header}");
    }

    #[test]
    fn overrides_are_the_one_point_sweep() {
        let sc = sc();
        let base = RunRequest {
            variant: Some("one".into()),
            ..RunRequest::default()
        };
        let plain = run(&sc, &base).unwrap();
        let set = |k: &str, v: &str| RunRequest {
            overrides: vec![(k.into(), v.into())],
            ..base.clone()
        };
        let limited = run(&sc, &set("cgroup.a.io.max:riops", "50")).unwrap();
        assert_ne!(plain.fio_json, limited.fio_json);
        let plan = SweepPlan::new(
            &sc,
            &[
                ("variant".into(), vec!["one".into()]),
                ("cgroup.a.io.max:riops".into(), vec!["50".into()]),
            ],
            1,
        )
        .unwrap();
        let point = Sweep::new(
            &sc,
            &["variant=one".into(), "cgroup.a.io.max:riops=50".into()],
            1,
        )
        .unwrap()
        .run(0, &Cancel::default())
        .unwrap()
        .1;
        assert_eq!(limited.fio_json, to_json(&point.fio, false));
        assert_eq!(plan.runs(), 1);
        // a value with a comma reaches the scenario whole
        let bs = run(&sc, &set("cgroup.a.fio:bs", "4k,64k")).unwrap();
        assert!(bs.fio_json.contains("\"bs\" : \"4k,64k\""));
        // variants must be named; a bad value is refused naming its key
        let e = run(&sc, &RunRequest::default()).err().unwrap();
        assert!(matches!(e, Error::Invalid(_)), "{e:?}");
        assert!(e.to_string().contains("one, two"), "{e}");
        let e = run(&sc, &set("cgroup.a.io.max:riops", "-1")).err().unwrap();
        assert!(matches!(e, Error::Refused(_)), "{e:?}");
        let e = e.to_string();
        assert!(
            e.starts_with("--set cgroup.a.io.max:riops=-1 (variant one): api.toml:"),
            "{e}"
        );
        // two values each fine alone, refused together: the point's own error
        let both = RunRequest {
            overrides: vec![
                ("cgroup.a.io.max:riops".into(), "50".into()),
                ("kernel.version".into(), "6.10".into()),
            ],
            kernel: Some("not-a-version".into()),
            ..base.clone()
        };
        let e = run(&sc, &both).err().unwrap().to_string();
        assert!(e.starts_with("--kernel not-a-version: "), "{e}");
    }

    #[test]
    fn slices_of_a_sweep_concatenate_to_the_whole() {
        let sc = sc();
        let grid = [(
            "cgroup.a.io.max:riops".to_string(),
            vec!["100".into(), "300".into()],
        )];
        let plan = SweepPlan::new(&sc, &grid, 2).unwrap();
        assert_eq!(plan.runs(), 8); // variants one, two × 2 values × 2 seeds
        assert!(
            plan.header()
                .starts_with("point,seed,variant,cgroup.a.io.max:riops,job,")
        );
        let go = Cancel::default();
        let whole = plan.rows(0..8, 3, &go).unwrap();
        let parts = plan.rows(0..3, 1, &go).unwrap() + &plan.rows(3..8, 2, &go).unwrap();
        assert_eq!(whole, parts);
        assert_eq!(whole.lines().count(), 16);
        assert!(plan.rows(7..9, 1, &go).is_err());
    }

    /// Two cgroups at 20 IOPS each under blk-iocost for `secs` simulated seconds
    /// (`tests/data/long-iocost.toml.in`): a day takes a couple of seconds to simulate.
    fn long(secs: u64) -> Scenario {
        let text =
            include_str!("../tests/data/long-iocost.toml.in").replace("SECS", &secs.to_string());
        load(Source::Text {
            text: &text,
            file: "long.toml",
        })
        .unwrap()
    }

    #[test]
    fn a_cancelled_run_or_sweep_stops_with_cancelled() {
        use std::time::{Duration, Instant};
        // thirty simulated days (a minute or more to simulate), cancelled after 0.3 s
        let sc = long(30 * 86_400);
        let plan = SweepPlan::new(&sc, &[], 2).unwrap();
        let stopped = |call: &dyn Fn(&Cancel) -> Result<(), Error>| {
            let cancel = Cancel::default();
            let started = Instant::now();
            let e = std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(300));
                    cancel.cancel();
                });
                call(&cancel).unwrap_err()
            });
            let took = started.elapsed();
            assert!(matches!(e, Error::Cancelled), "{e:?}");
            assert_eq!(e.to_string(), "cancelled by the caller");
            assert!(took < Duration::from_secs(20), "stopped after {took:?}");
        };
        stopped(&|cancel| {
            let req = RunRequest {
                cancel: cancel.clone(),
                ..RunRequest::default()
            };
            run(&sc, &req).map(drop)
        });
        stopped(&|cancel| plan.rows(0..2, 2, cancel).map(drop));
        // cancelled before it starts: nothing runs
        let cancel = Cancel::default();
        cancel.cancel();
        let e = plan.rows(0..2, 1, &cancel).unwrap_err();
        assert!(matches!(e, Error::Cancelled), "{e:?}");
    }

    #[test]
    fn sources_and_errors_carry_file_and_line() {
        let e = load(Source::Auto("name = \"x\"\n[device]\nmodel = \"floppy\"\n"))
            .and_then(|sc| run(&sc, &RunRequest::default()).map(drop))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("<text>:3:"), "{e}");
        let e = load(Source::Auto("no-such-scenario")).unwrap_err();
        assert!(matches!(e, Error::NoSuchScenario { .. }), "{e:?}");
        assert!(e.to_string().contains("built in:"));
        let e = load(Source::Text {
            text: "name = \"x\"\nbogus = 1\n",
            file: "f.toml",
        })
        .unwrap_err();
        assert_eq!(e.location(), Some(("f.toml", Some(2))));
        assert!(
            e.to_string().starts_with("f.toml:2: unknown key `bogus`"),
            "{e}"
        );
        let path = "/nonexistent/blkcg-sim/x.toml";
        let e = load(Source::Path(path)).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with(&format!("{path}: cannot read: ")),
            "{e}"
        );
        let sc = load(Source::Auto("iocost-linear-max")).unwrap();
        assert_eq!(sc.file, "iocost-linear-max (built in)");
        let table: toml::Table = SC.parse().unwrap();
        let t = load(Source::Table {
            table,
            file: "<dict>",
        })
        .unwrap();
        assert_eq!(t.variants(), ["one", "two"]);
        let checked = check(&t, None, &[]).unwrap();
        assert_eq!(checked.len(), 2);
        // as `blkcg-sim check` warns: a variant without [kernel] relies on upstream's
        // newest at the simulator's HZ, which no distribution ships
        for (_, w) in &checked {
            assert!(
                w.iter().any(|l| l.starts_with("no [kernel] version")),
                "{w:?}"
            );
        }
        assert!(scenarios().iter().any(|(n, _)| *n == "iocost-linear-max"));
    }
}
