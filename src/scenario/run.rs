//! From a resolved scenario to a finished run and its outputs; the commands of the CLI.
//!
//! `run_variant()` is the one place where every layer is built: the device model from
//! `[device]`, the fio jobs from each cgroup's `fio`, blk-throttle and blk-iocost from
//! `[kernel]`; then the scenario's interface writes are applied in order (root files
//! first, parents before children) exactly as `echo LINE > FILE` would, and a refused
//! write is reported with the scenario line and the kernel's errno; device actions
//! (`[[schedule]] device = "remove"`, null_blk's `device.power`/`device.badblocks`)
//! are applied the same way, at their time. A cgroup's `fio`
//! array is successive runs, as a script's loop with a `wait`: every job of run k waits
//! (its `after` list) for every job of run k-1, then `[host] fio_restart_ns` more. The
//! commands (`run`, `fio`, `check`, `repro`) only choose variants and print; `run` with
//! several variants or kernels ends with the A/B table (`summary::ab_table`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use rayon::prelude::*;

use super::repro::{self, ReproSpec, VariantMetrics};
use super::resolve::{DeviceAction, DeviceWrite, FioSource, IfaceWrite, Resolved};
use super::{Scenario, ScenarioError, embedded};
use crate::blkcg::{CgroupTree, DeviceTable};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::iocost::Iocost;
use crate::kernel_version::KernelVersion;
use crate::progress::{Horizon, Reporter};
use crate::report::fio::stats::percentiles;
use crate::report::fio::{self as fioreport, FioMessage, JobReport, RunReport};
use crate::report::outdir::{OutDir, check_label};
use crate::report::plot::{Panel, Series, plot_panels};
use crate::report::record::{RecordOptions, Recorded, RunRecorder};
use crate::report::summary::{self, JobSummary};
use crate::report::timeline::{self, JobLine};
use crate::sim::engine::{JobParams, Pipeline, RunOutput};
use crate::sim::queue::EventQueue;
use crate::sim::{NSEC_PER_SEC, Ns};
use crate::stack::Stack;
use crate::stack::registry::{POLICIES, PolicySetup};
use crate::workload::fio as fiojob;
use crate::workload::job::start_dependencies;

/// How `run` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Normal,
    Json,
    JsonPlus,
    Summary,
}

/// Options of the `run` command.
pub struct RunOptions {
    pub variants: Vec<String>,
    pub kernels: Vec<String>,
    pub format: OutputFormat,
    pub output: Option<PathBuf>,
    pub seed: Option<u64>,
    pub timeline: bool,
    pub progress: Reporter,
    /// Collect the controllers' event logs (trace.txt with --output, else stderr).
    pub trace: bool,
}

/// Everything one variant's run produced.
pub struct VariantRun {
    pub label: String,
    pub resolved: Resolved,
    pub limits: QueueLimits,
    pub out: RunOutput,
    pub specs: Vec<fiojob::JobSpec>,
    pub global_options: Vec<(String, String)>,
    pub summaries: Vec<JobSummary>,
    /// What fio would print for this variant.
    pub fio: RunReport,
    pub warnings: Vec<String>,
    pub io_stat: String,
    pub extra: BTreeMap<String, f64>,
    /// The timelines kept of the run (all rows where the caller asked to keep them;
    /// always the pictures' decimated series) and the folder they streamed to.
    pub record: Recorded,
    /// blk-iocost as `iocost_monitor.py` shows it at the end of the run, as text and
    /// as its `--json` lines.
    pub monitor: String,
    pub monitor_json: String,
}

/// Read one fio run (command line or job-file text) of a scenario as fio would, with
/// errors at the scenario's lines, except that a scenario reads no environment
/// (`${VAR}` is an error) and quotes no file it names; `blkcg-sim fio`
/// ([`Scenario::acting_as_fio`]) does both as fio does. An `include` is read relative
/// to the scenario file, a job file named on a command line from the working folder,
/// as a shell would.
pub fn parse_fio(sc: &Scenario, f: &FioSource) -> Result<fiojob::FioJobs, String> {
    let rd = if sc.acting_as_fio {
        fiojob::Reader::fio()
    } else {
        fiojob::Reader::scenario()
    };
    let text = f.text.as_str();
    if !is_cmdline(text) {
        let at = fiojob::Origin {
            file: &sc.file,
            lines: &f.lines,
        };
        return fiojob::parse_jobfile(text, &at, &rd).map_err(|e| e.to_string());
    }
    let t = text.trim_start();
    let args_at = text.len() - t.len() + if t.starts_with("fio") { 3 } else { 0 };
    let (offsets, args): (Vec<usize>, Vec<String>) =
        shell_words_at(&text[args_at..])?.into_iter().unzip();
    // the scenario's line of each argument; acting as fio, arguments are numbered
    let lines: Vec<usize> = if sc.acting_as_fio {
        Vec::new()
    } else {
        offsets
            .iter()
            .map(|i| {
                let l = text[..args_at + i].matches('\n').count();
                f.lines
                    .get(l)
                    .or(f.lines.last())
                    .copied()
                    .unwrap_or_default()
            })
            .collect()
    };
    let at = fiojob::Origin {
        file: if sc.acting_as_fio {
            "<cmdline>"
        } else {
            &sc.file
        },
        lines: &lines,
    };
    fiojob::parse_cmdline_with(&args, &at, &rd).map_err(|e| e.to_string())
}

/// Whether a scenario's `fio` text is a command line (else a job file).
pub fn is_cmdline(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("--")
        || t.strip_prefix("fio")
            .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace))
}

/// Split a command line as a POSIX shell would for plain words and quotes.
pub fn split_shell_words(s: &str) -> Result<Vec<String>, String> {
    Ok(shell_words_at(s)?.into_iter().map(|(_, w)| w).collect())
}

/// [`split_shell_words`], each word with the byte offset where it starts. A variable
/// a shell would expand (`$VAR`, `${VAR}`, outside single quotes) is refused: a
/// scenario reads no environment. Nothing else of the shell is: `$(...)` stays text.
fn shell_words_at(s: &str) -> Result<Vec<(usize, String)>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    // where the word being read starts, if one is
    let mut start: Option<usize> = None;
    let mut quote: Option<char> = None;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '$'
            && quote != Some('\'')
            && chars
                .peek()
                .is_some_and(|&(_, n)| n == '{' || n == '_' || n.is_ascii_alphabetic())
        {
            let var = s[i + 1..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || "{}_".contains(c)))
                .next()
                .unwrap_or_default();
            return Err(format!(
                "`${var}` in the fio command line: a shell would expand it, but a scenario \
                 reads no environment (the same scenario gives the same output on any \
                 machine); write the value"
            ));
        }
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some((_, n)) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                start.get_or_insert(i);
            }
            (None, '\\') => {
                if let Some((_, n)) = chars.next()
                    && n != '\n'
                {
                    cur.push(n);
                    start.get_or_insert(i);
                }
            }
            (None, c) if c.is_whitespace() => {
                if let Some(at) = start.take() {
                    out.push((at, std::mem::take(&mut cur)));
                }
            }
            (None, c) => {
                cur.push(c);
                start.get_or_insert(i);
            }
        }
    }
    if quote.is_some() {
        return Err("unterminated quote in the fio command line".into());
    }
    if let Some(at) = start {
        out.push((at, cur));
    }
    Ok(out)
}

/// `file:line` of a scenario line, or the file alone.
fn location(sc: &Scenario, line: Option<usize>) -> String {
    format!(
        "{}{}",
        sc.file,
        line.map(|l| format!(":{l}")).unwrap_or_default()
    )
}

/// The error for a refused interface write, naming the scenario line (and the variant
/// being run, if any).
fn write_error(
    sc: &Scenario,
    variant: Option<&str>,
    w: &IfaceWrite,
    tree: &CgroupTree,
    e: impl std::fmt::Display,
) -> String {
    let cg = &tree.nodes[w.cgroup as usize].path;
    let path = if cg.is_empty() {
        w.file.name().to_string()
    } else {
        format!("{cg}/{}", w.file.name())
    };
    format!(
        "{}: {}echo \"{}\" > {path}: {e}",
        location(sc, w.src_line),
        variant
            .map(|v| format!("variant `{v}`: "))
            .unwrap_or_default(),
        w.line
    )
}

/// A behaviour or device key's error, pointed at the key's line.
fn key_err(
    sc: &Scenario,
    variant: Option<&str>,
    table: &[&str],
    e: &crate::error::KeyError,
) -> ScenarioError {
    // `kernel.version`, or a switch named with dots (`throttle.slice`)
    let prefix = format!("{}.", table.join("."));
    let key = e.key.strip_prefix(&prefix).unwrap_or(&e.key);
    let mut path = table.to_vec();
    path.push(key);
    let key = if sc.exact_line_in(variant, &path).is_some() {
        key
    } else {
        e.key.rsplit('.').next().unwrap_or(&e.key)
    };
    sc.in_variant(variant, sc.err_at(table, key, e.to_string()))
}

/// A variant built and checked, ready to simulate: every layer constructed, every job
/// parsed, every interface write of the run (at t = 0 and scheduled) accepted by the
/// kernel's rules. `check` stops here; `run` goes on to [`simulate`]. So both refuse
/// exactly the same scenarios.
pub struct Prepared {
    label: String,
    resolved: Resolved,
    limits: QueueLimits,
    devs: DeviceTable,
    pipe: Pipeline,
    specs: Vec<fiojob::JobSpec>,
    /// Which `fio` entry (index into `resolved.fio`) each job came from.
    sources: Vec<usize>,
    global_options: Vec<(String, String)>,
    /// Interface writes after t = 0, in the order the pipeline's events name them.
    later: Vec<Later>,
    /// What progress is measured against: the cap, or the longest job's planned
    /// time, or with no job bounded by time the bytes the jobs plan to move.
    horizon: Horizon,
    pub warnings: Vec<String>,
    /// Every policy of the registry, configured for the variant (used or not).
    pub setups: Vec<Box<dyn PolicySetup>>,
}

/// The policies the variant's interface lines set up, each where the kernel creates
/// it: at the first write (in time order) to one of its files. An rq-qos policy made
/// later goes to the head of the chain (`rq_qos_add()`).
fn build_stack(
    r: &Resolved,
    setups: &[Box<dyn PolicySetup>],
    tree: &CgroupTree,
    limits: &QueueLimits,
    trace: bool,
) -> Stack {
    let mut in_time_order: Vec<&IfaceWrite> = r.writes.iter().collect();
    in_time_order.sort_by_key(|w| w.at);
    let mut made = vec![false; POLICIES.len()];
    let mut stack = Stack::default();
    for w in in_time_order {
        if let Some(i) = policy_of(w)
            && !std::mem::replace(&mut made[i], true)
        {
            stack.add(setups[i].build(tree, limits, trace));
        }
    }
    stack
}

/// The registry index of the policy that owns the file `w` writes.
fn policy_of(w: &IfaceWrite) -> Option<usize> {
    POLICIES
        .iter()
        .position(|d| d.files.contains(&w.file.name()))
}

impl Prepared {
    /// Also record each request's time on the device (`RunOutput::device_lat`).
    pub fn record_device_latency(&mut self) {
        self.pipe.record_device_latency();
    }
}

/// Build and check variant `variant` (None: the scenario without variants), with
/// `kernel_version` (`run --kernel`) and `seed` overriding the scenario's.
pub fn prepare(
    sc: &Scenario,
    variant: Option<&str>,
    kernel_version: Option<&str>,
    seed: Option<u64>,
    trace_on: bool,
) -> Result<Prepared, String> {
    let mut r = sc.resolve(variant).map_err(|e| e.to_string())?;
    let mut warnings = std::mem::take(&mut r.warnings);
    if let Some(v) = kernel_version {
        let (_, too_new) = KernelVersion::checked(v).map_err(|m| format!("--kernel {v}: {m}"))?;
        warnings.extend(too_new);
        r.kernel.version = v.to_string();
    }
    if let Some(s) = seed {
        r.seed = s;
    }
    let located =
        |table: &[&str], e: &crate::error::KeyError| key_err(sc, variant, table, e).to_string();
    let (dev, _, dev_warnings) =
        crate::device::config::resolve(&r.device, r.seed).map_err(|e| located(&["device"], &e))?;
    warnings.extend(dev_warnings.iter().map(|w| located(&["device"], w)));
    let limits = dev.limits().clone();
    let devs = DeviceTable {
        disks: vec![(limits.major, limits.minor)],
    };
    // a policy's files appear with it: an older kernel has none of them
    let version =
        KernelVersion::parse(&r.kernel.version).map_err(|m| format!("{}: {m}", sc.file))?;
    for w in &r.writes {
        if let Some(why) = policy_of(w).and_then(|i| (POLICIES[i].refuses)(&version)) {
            return Err(write_error(
                sc,
                variant,
                w,
                &r.tree,
                format!(
                    "No such file or directory (ENOENT): {why}; kernel {version} has no {}",
                    w.file.name()
                ),
            ));
        }
    }
    // every behaviour switch is checked, whether or not a policy is used
    let setups = POLICIES
        .iter()
        .map(|d| (d.configure)(&r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| located(&["kernel"], &e))?;
    // fio jobs, in the order the scenario lists cgroups, refused as soon as they
    // could not fit in 90% of the memory available
    let memory_limit = available_memory().map_or(u64::MAX, |a| a / 10 * 9);
    let mut needed = r.tree.len() as u64 * Pipeline::CGROUP_MEMORY;
    let mut params: Vec<JobParams> = Vec::new();
    let mut specs: Vec<fiojob::JobSpec> = Vec::new();
    let mut sources: Vec<usize> = Vec::new();
    let mut global_options = Vec::new();
    let mut tree = r.tree.clone();
    // job indices of the round before, and of this one: a round starts when the one
    // before has ended (`r.fio` is ordered by round)
    let (mut prev_round, mut this_round): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut round = 0;
    for (src_idx, src) in r.fio.iter().enumerate() {
        if src.round != round {
            round = src.round;
            if !this_round.is_empty() {
                prev_round = std::mem::take(&mut this_round);
            }
        }
        if src.text.trim().is_empty() {
            continue;
        }
        let cg_path = tree.nodes[src.cgroup as usize].path.clone();
        let where_ = format!(
            "{}{} (fio of cgroup {cg_path})",
            sc.file,
            src.src_line.map(|l| format!(":{l}")).unwrap_or_default()
        );
        // parse errors and warnings name their own lines
        let jobs = parse_fio(sc, src)?;
        warnings.extend(jobs.warnings.iter().cloned());
        global_options.extend(jobs.global_options.iter().cloned());
        let base = params.len() as u32;
        let deps = start_dependencies(&jobs.jobs, base);
        let cmdline = is_cmdline(&src.text);
        for (mut spec, mut after) in jobs.jobs.into_iter().zip(deps) {
            after.extend(&prev_round);
            this_round.push(params.len() as u32);
            // on fio's command line `--name` is an option like any other and fio lists
            // it in "job options"; in a job file it is the section header
            if cmdline && !spec.options.iter().any(|(k, _)| k == "name") {
                spec.options
                    .insert(0, ("name".to_string(), spec.name.clone()));
            }
            let cg = match &spec.cgroup {
                // fio's `cgroup=` makes the cgroup (mkdir) where it does not exist
                Some(p) => {
                    crate::blkcg::tree::check_path(p)
                        .map_err(|m| format!("{where_}: fio job `{}`: cgroup={m}", spec.name))?;
                    tree.ensure(p)
                }
                None => src.cgroup,
            };
            let seed_name = format!("{}#{}#{}", spec.name, params.len(), spec.clone_index);
            let (mut p, w) = JobParams::from_spec(&spec, cg, limits.capacity, after, seed_name)
                .map_err(|e| format!("{where_}: {e}"))?;
            if src.round > 0 {
                // the script between two fio runs (`[host] fio_restart_ns`)
                p.startdelay += r.host.fio_restart_ns;
            }
            if p.filename.is_empty() {
                p.filename = format!("/dev/{}", limits.name);
            }
            warnings.extend(w.into_iter().map(|w| format!("{where_}: {w}")));
            needed += Pipeline::job_memory(&p);
            if needed > memory_limit {
                return Err(format!(
                    "{where_}: this scenario needs more than {:.1} GiB by fio job {} \
                     ({} cgroups), over 90% of the {:.1} GiB this machine has \
                     available: run fewer jobs (numjobs, cgroups) or split it",
                    needed as f64 / (1u64 << 30) as f64,
                    params.len() + 1,
                    tree.len() - 1,
                    memory_limit as f64 / 0.9 / (1u64 << 30) as f64
                ));
            }
            params.push(p);
            specs.push(spec);
            sources.push(src_idx);
        }
    }
    check_request_sizes(sc, variant, dev.as_ref(), &params, &tree)?;
    if params.is_empty() {
        return Err(format!(
            "{}: no fio job to run{}; give a cgroup a `fio = \"fio --name=...\"`",
            sc.file,
            variant
                .map(|v| format!(" in variant `{v}`"))
                .unwrap_or_default()
        ));
    }
    // the longest job of each round, round after round
    let mut round_ends: Vec<Ns> = Vec::new();
    for (p, &src) in params.iter().zip(&sources) {
        let k = r.fio[src].round as usize;
        if round_ends.len() <= k {
            round_ends.resize(k + 1, 0);
        }
        round_ends[k] = round_ends[k].max(p.startdelay + p.ramp + p.runtime.unwrap_or(0));
    }
    let horizon = match r.duration.unwrap_or_else(|| round_ends.iter().sum()) {
        0 => Horizon::Bytes(params.iter().map(|p| p.io_limit).sum()),
        ns => Horizon::Time(ns),
    };
    // every write of the run, in time order, on policies of its own: a write the
    // kernel refuses is an error now, not a surprise at its time
    let mut scratch_stack = build_stack(&r, &setups, &tree, &limits, false);
    let mut scratch = EventQueue::new();
    let mut in_time_order: Vec<&IfaceWrite> = r.writes.iter().collect();
    in_time_order.sort_by_key(|w| w.at);
    for w in in_time_order {
        let now = scratch.now();
        scratch_stack
            .write(now, w.file.name(), w.cgroup, &w.line, &devs, &mut scratch)
            .map_err(|e| write_error(sc, variant, w, &tree, e))?;
    }
    let mut pipe = Pipeline::new(dev, params, tree.len(), r.host, r.seed);
    pipe.set_duration(r.duration);
    pipe.set_stack(build_stack(&r, &setups, &tree, &limits, trace_on));
    // interface writes and device actions at t = 0 now, later ones from the event loop
    let mut later = Vec::new();
    for w in &r.writes {
        if w.at == 0 {
            pipe.write_iface(w.file.name(), w.cgroup, &w.line, &devs)
                .map_err(|e| write_error(sc, variant, w, &tree, e))?;
        } else {
            pipe.schedule_config(w.at, later.len() as u32);
            later.push(Later::Iface(w.clone()));
        }
    }
    for w in &r.device_writes {
        if w.at == 0 {
            apply_device(&mut pipe, w).map_err(|e| device_error(sc, w, &limits.name, e))?;
        } else {
            pipe.schedule_config(w.at, later.len() as u32);
            later.push(Later::Device(w.clone()));
        }
    }
    Ok(Prepared {
        label: variant.unwrap_or("default").to_string(),
        resolved: Resolved { tree, ..r },
        limits,
        devs,
        pipe,
        specs,
        sources,
        global_options,
        later,
        horizon,
        warnings,
        setups,
    })
}

/// Build and run one variant (None: the scenario without variants), with progress
/// on stderr if `progress`.
pub fn run_variant(
    sc: &Scenario,
    variant: Option<&str>,
    kernel_version: Option<&str>,
    seed: Option<u64>,
    progress: bool,
) -> Result<VariantRun, String> {
    let reporter = Reporter::for_stderr(!progress);
    let keep = RecordOptions {
        keep: true,
        ..RecordOptions::default()
    };
    run_variant_traced(sc, variant, kernel_version, seed, &reporter, false, keep)
}

/// `run_variant`, optionally with the controllers' event logs (blk-throttle's
/// blktrace-style `throtl` lines), its timelines recorded as `record` says.
pub fn run_variant_traced(
    sc: &Scenario,
    variant: Option<&str>,
    kernel_version: Option<&str>,
    seed: Option<u64>,
    progress: &Reporter,
    trace_on: bool,
    record: RecordOptions,
) -> Result<VariantRun, String> {
    let prepared = prepare(sc, variant, kernel_version, seed, trace_on)?;
    simulate(sc, prepared, progress, record)
}

/// Run a prepared variant to its end and gather its outputs; its timelines go where
/// `record` says.
pub fn simulate(
    sc: &Scenario,
    p: Prepared,
    progress: &Reporter,
    record: RecordOptions,
) -> Result<VariantRun, String> {
    let Prepared {
        label,
        resolved: r,
        limits,
        devs,
        pipe,
        specs,
        sources,
        global_options,
        later,
        horizon,
        mut warnings,
        ..
    } = p;
    let tree = &r.tree;
    let mut recorder = RunRecorder::new(tree, record);
    recorder.set_nr_requests(limits.nr_requests);
    let mut shown = progress.start(&label, horizon);
    let mut late_errors = Vec::new();
    let dev_name = &limits.name;
    let out = pipe.run(
        |p, i| match &later[i as usize] {
            Later::Iface(w) => {
                if let Err(e) = p.write_iface(w.file.name(), w.cgroup, &w.line, &devs) {
                    late_errors.push(write_error(sc, r.variant.as_deref(), w, tree, e));
                }
            }
            Later::Device(w) => {
                if let Err(e) = apply_device(p, w) {
                    late_errors.push(device_error(sc, w, dev_name, e));
                }
            }
        },
        |now, done_bytes| shown.update(now, done_bytes),
        &mut recorder,
    );
    shown.finish();
    // every write was accepted before the run on the same controllers in the same
    // order; one refused now is a simulator bug, not a scenario error
    if let Some(e) = late_errors.into_iter().next() {
        return Err(format!(
            "internal error: a write accepted before the run was refused during it: {e}"
        ));
    }
    let end = out.end;
    for (at, src_line) in later.iter().map(Later::when).filter(|(at, _)| *at > end) {
        warnings.push(format!(
            "{}: [[schedule]] at {:.3} s never happened: the run ended at {:.3} s",
            location(sc, src_line),
            at as f64 / 1e9,
            end as f64 / 1e9
        ));
    }
    let rounds: Vec<u32> = sources.iter().map(|&s| r.fio[s].round).collect();
    let fio = fio_report(&out, &specs, &sources, &rounds, tree, &global_options);
    let summaries = fio.jobs.iter().map(job_summary).collect();
    let mut out = out;
    let record = recorder.finish()?;
    let mut extra = BTreeMap::new();
    if out.stack.policy::<Iocost>().is_some() {
        // the bug of the no-completion seed: a period with no completion and lagging
        // IO that drops a positive busy_level to 0
        extra.insert(
            "iocost.no_completion_resets".to_string(),
            record.no_completion_resets as f64,
        );
    }
    let io_stat = io_stat_text(&mut out, tree, &limits);
    // iocost_monitor.py's view of the device at the end of the run
    let (monitor, monitor_json) = out
        .stack
        .policy_mut::<Iocost>()
        .map(|ioc| (ioc.monitor_text(end), ioc.monitor_json(end)))
        .unwrap_or_default();
    Ok(VariantRun {
        label,
        resolved: r,
        limits,
        out,
        specs,
        global_options,
        summaries,
        fio,
        warnings,
        io_stat,
        extra,
        record,
        monitor,
        monitor_json,
    })
}

/// Refuse a device that could never complete the largest request of some job: the
/// job's largest `bs` in the directions it does I/O in, cut to `max_sectors_kb`.
fn check_request_sizes(
    sc: &Scenario,
    variant: Option<&str>,
    dev: &dyn crate::device::BlockDevice,
    jobs: &[JobParams],
    tree: &CgroupTree,
) -> Result<(), String> {
    let max_rq = u64::from(dev.limits().max_sectors_kb) * 1024;
    for p in jobs {
        let dirs = [p.kind.read, p.kind.write];
        let Some(largest) = (0..2)
            .filter(|&d| dirs[d])
            .map(|d| p.bs[d].max().div_ceil(512) * 512)
            .max()
        else {
            continue;
        };
        if let Err(e) = dev.check_request(largest.min(max_rq)) {
            let msg = format!(
                "{}; that request is fio job `{}` (cgroup `{}`) with bs={largest}, cut at \
                 max_sectors_kb={}",
                e.msg,
                p.name,
                tree.nodes[p.cgroup as usize].path,
                max_rq / 1024
            );
            return Err(key_err(sc, variant, &["device"], &KeyError::new(e.key, msg)).to_string());
        }
    }
    Ok(())
}

/// The memory this machine has available (`MemAvailable` in /proc/meminfo), if known.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib << 10)
}

/// A scheduled write, applied from the event loop.
enum Later {
    Iface(IfaceWrite),
    Device(DeviceWrite),
}

impl Later {
    /// When, and the scenario line that asked for it.
    fn when(&self) -> (Ns, Option<usize>) {
        match self {
            Later::Iface(w) => (w.at, w.src_line),
            Later::Device(w) => (w.at, w.src_line),
        }
    }
}

/// A device action on the running pipeline.
fn apply_device(p: &mut Pipeline, w: &DeviceWrite) -> Result<(), String> {
    match w.action {
        DeviceAction::Remove => p.remove_disk(),
        DeviceAction::Badblocks(b) => return p.write_badblocks(b),
    }
    Ok(())
}

/// A device action as the shell command a user would type for it on disk `dev`.
fn device_echo(w: &DeviceWrite, dev: &str) -> String {
    let (line, file) = match w.action {
        // SCSI's sysfs delete: the generic way to pull a disk
        DeviceAction::Remove if w.line == "remove" => {
            ("1", format!("/sys/block/{dev}/device/delete"))
        }
        DeviceAction::Remove => ("0", format!("/sys/kernel/config/nullb/{dev}/power")),
        DeviceAction::Badblocks(_) => (
            w.line.as_str(),
            format!("/sys/kernel/config/nullb/{dev}/badblocks"),
        ),
    };
    format!("echo \"{line}\" > {file}")
}

/// The error for a refused device action, naming the scenario line.
fn device_error(sc: &Scenario, w: &DeviceWrite, dev: &str, e: String) -> String {
    format!("{}: {}: {e}", location(sc, w.src_line), device_echo(w, dev))
}

/// The fio report of a run: one entry per job, or per group with group_reporting.
fn fio_report(
    out: &RunOutput,
    specs: &[fiojob::JobSpec],
    sources: &[usize],
    rounds: &[u32],
    tree: &CgroupTree,
    global: &[(String, String)],
) -> RunReport {
    let mut reports = Vec::new();
    let mut messages = Vec::new();
    for (i, ((p, st, t), spec)) in out.jobs.iter().zip(specs).enumerate() {
        let runtime_ms = t.finished.saturating_sub(t.stats_start).div_ceil(1_000_000);
        let engine = spec
            .options
            .iter()
            .chain(global)
            .find(|(k, _)| k == "ioengine")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "psync".into());
        let bs = |d: usize| format!("{}B-{}B", spec.bs_min[d], spec.bs_max[d]);
        let header = format!(
            "rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={engine}, iodepth={}",
            rw_name(spec.rw),
            bs(0),
            bs(1),
            bs(2),
            spec.iodepth
        );
        let report = JobReport {
            name: spec.name.clone(),
            cgroup: tree.nodes[p.cgroup as usize].path.clone(),
            round: rounds[i],
            groupid: spec.groupid,
            jobs: 1,
            options: spec.options.clone(),
            elapsed_s: t.finished.div_ceil(NSEC_PER_SEC),
            runtime_ms,
            dirs: [spec.rw.reads(), spec.rw.writes(), spec.rw.trims()],
            stats: st.clone(),
            unified: spec.unified_rw_reporting,
            percentile_list: spec.percentile_list.clone(),
            clat_percentiles: spec.clat_percentiles,
            lat_percentiles: spec.lat_percentiles,
            slat_percentiles: spec.slat_percentiles,
            iodepth: spec.iodepth,
            kb_base: spec.kb_base,
            sig_figs: spec.significant_figures,
            header,
            pid: 1000 + i as u32,
            time: fioreport::ctime(fioreport::SIM_EPOCH + t.finished / NSEC_PER_SEC),
        };
        // what fio printed for this job while it ran: its I/O error lines, and the
        // `fio: pid=` line of a job an error stopped (thread_main()'s exit)
        messages.extend(st.err.log.iter().map(|(at, text)| FioMessage {
            at: *at,
            text: text.clone(),
        }));
        if st.err.error != 0 {
            messages.push(FioMessage {
                at: t.finished,
                text: format!(
                    "fio: pid={}, err={}/{}",
                    report.pid, st.err.error, st.err.verror
                ),
            });
        }
        reports.push((report, spec.group_reporting, sources[i]));
    }
    messages.sort_by_key(|m| m.at);
    let end = out.end;
    RunReport {
        version: "fio-3.33".into(),
        timestamp: fioreport::SIM_EPOCH + end / NSEC_PER_SEC,
        timestamp_ms: fioreport::SIM_EPOCH * 1000 + end / 1_000_000,
        time: fioreport::ctime(fioreport::SIM_EPOCH + end / NSEC_PER_SEC),
        global_options: global.to_vec(),
        jobs: fioreport::group(reports),
        messages,
    }
}

fn rw_name(rw: fiojob::RwMode) -> &'static str {
    use fiojob::RwMode::*;
    match rw {
        Read => "read",
        Write => "write",
        Trim => "trim",
        RandRead => "randread",
        RandWrite => "randwrite",
        RandTrim => "randtrim",
        ReadWrite => "rw",
        RandRw => "randrw",
        TrimWrite => "trimwrite",
        RandTrimWrite => "randtrimwrite",
    }
}

/// The summary row of one report entry, as the seeds' `get_result` reads fio's JSON
/// (`mixed`, or read and write together).
fn job_summary(r: &JobReport) -> JobSummary {
    let m = r.stats.mixed();
    let runtime = (0..3).map(|d| r.ddir_runtime(d)).max().unwrap_or(0).max(1);
    let mut plist = r.percentile_list.clone();
    plist.sort_by(f64::total_cmp);
    let vals = percentiles(&m.clat.hist, &plist);
    JobSummary {
        cgroup: r.cgroup.clone(),
        job: r.name.clone(),
        round: r.round,
        iops: m.total_ios as f64 * 1000.0 / runtime as f64,
        mib_s: (m.io_bytes * 1000 / runtime) as f64 / 1048576.0,
        slat_mean_ms: m.slat.mean / 1e6,
        clat_mean_ms: m.clat.mean / 1e6,
        clat_max_ms: m.clat.max as f64 / 1e6,
        clat_pct_ms: plist
            .iter()
            .zip(vals)
            .map(|(p, v)| (*p, v as f64 / 1e6))
            .collect(),
    }
}

/// `io.stat` of every cgroup whose subtree did I/O: cgroup v2 counts are hierarchical
/// (a cgroup's line includes its descendants', `blkcg_rstat_flush()`), as are the
/// iocost keys; the root's are the whole disk's (`blkcg_fill_root_iostats()`).
fn io_stat_text(out: &mut RunOutput, tree: &CgroupTree, limits: &QueueLimits) -> String {
    let mut sums = out.cg_stat.clone();
    // a parent's index is below its children's: descending order is bottom-up
    for i in (1..sums.len().min(tree.nodes.len())).rev() {
        if let Some(p) = tree.nodes[i].parent {
            let c = sums[i];
            let ps = &mut sums[p as usize];
            ps.rbytes += c.rbytes;
            ps.wbytes += c.wbytes;
            ps.rios += c.rios;
            ps.wios += c.wios;
        }
    }
    let mut s = String::new();
    for (i, st) in sums.iter().enumerate() {
        if st.rios + st.wios == 0 {
            continue;
        }
        let path = &tree.nodes[i].path;
        s.push_str(&format!(
            "{}: {}:{} rbytes={} wbytes={} rios={} wios={} dbytes=0 dios=0{}\n",
            if path.is_empty() { "/" } else { path },
            limits.major,
            limits.minor,
            st.rbytes,
            st.wbytes,
            st.rios,
            st.wios,
            out.stack.pd_stat(i as u32)
        ));
    }
    s
}

/// One run of a `run` command: (variant, kernel version override).
type RunPlan = Vec<(Option<String>, Option<String>)>;

/// Which (variant, kernel) pairs a `run` covers.
fn plan(sc: &Scenario, variants: &[String], kernels: &[String]) -> Result<RunPlan, String> {
    let all = sc.variants();
    let chosen: Vec<Option<String>> = if !variants.is_empty() {
        for v in variants {
            if !all.contains(v) {
                return Err(format!(
                    "{}: no variant `{v}`; this scenario has: {}",
                    sc.file,
                    if all.is_empty() {
                        "none".to_string()
                    } else {
                        all.join(", ")
                    }
                ));
            }
        }
        variants.iter().cloned().map(Some).collect()
    } else if all.is_empty() {
        vec![None]
    } else {
        all.into_iter().map(Some).collect()
    };
    let mut out = Vec::new();
    for v in chosen {
        if kernels.is_empty() {
            out.push((v, None));
        } else {
            for k in kernels {
                out.push((v.clone(), Some(k.clone())));
            }
        }
    }
    Ok(out)
}

fn run_label(v: &Option<String>, k: &Option<String>) -> String {
    match (v, k) {
        (Some(v), Some(k)) => format!("{v}@{k}"),
        (Some(v), None) => v.clone(),
        (None, Some(k)) => format!("kernel-{k}"),
        (None, None) => "default".into(),
    }
}

/// `f` over `items` on every core (rayon), results in the order of `items`; the first
/// failure in that order is the one reported, so errors are as deterministic as output.
fn in_parallel<I: Sync, T: Send>(
    items: &[I],
    f: impl Fn(&I) -> Result<T, String> + Sync + Send,
) -> Result<Vec<T>, String> {
    items
        .par_iter()
        .map(f)
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}

/// `blkcg-sim run`.
pub fn run_command(sc: &Scenario, o: &RunOptions) -> Result<u8, String> {
    let plan = plan(sc, &o.variants, &o.kernels)?;
    for (v, k) in &plan {
        if let Some(k) = k {
            KernelVersion::checked(k).map_err(|m| format!("--kernel {k}: {m}"))?;
        }
        check_label(&run_label(v, k))?;
    }
    let all = sc.variants();
    if o.variants.is_empty() && !all.is_empty() {
        eprintln!(
            "{}: running its {} variant(s): {} (a scenario with [[variant]]s runs only its \
             variants, each the base scenario with the variant's keys replaced)",
            sc.file,
            all.len(),
            all.join(", ")
        );
    }
    // every run on its own core; output in plan order, byte-identical to a serial run
    let runs = in_parallel(&plan, |(v, k)| {
        let label = run_label(v, k);
        // the timelines stream to their files; in memory only what is printed
        let record = RecordOptions {
            out: o
                .output
                .as_ref()
                .map(|dir| OutDir::open(dir, &label))
                .transpose()?,
            keep: o.timeline,
            trace_stderr: (o.trace && o.output.is_none()).then(|| match plan.len() {
                1 => String::new(),
                _ => format!("[{label}] "),
            }),
        };
        let mut run = run_variant_traced(
            sc,
            v.as_deref(),
            k.as_deref(),
            o.seed,
            &o.progress,
            o.trace,
            record,
        )?;
        run.label = label;
        Ok(run)
    })?;
    for w in runs.iter().flat_map(|r| &r.warnings) {
        eprintln!("warning: {w}");
    }
    let mut stdout = String::new();
    let single = runs.len() == 1;
    for run in &runs {
        // JSON: a stream of documents, one per variant (jq reads them in turn)
        if !single && o.format == OutputFormat::Normal {
            stdout.push_str(&format!("=== variant {} ===\n", run.label));
        }
        match o.format {
            OutputFormat::Summary => {}
            OutputFormat::Normal => stdout.push_str(&fioreport::text::to_normal(&run.fio)),
            OutputFormat::Json | OutputFormat::JsonPlus => {
                for m in &run.fio.messages {
                    eprintln!("{}", m.text);
                }
                stdout.push_str(&fioreport::json::to_json(
                    &run.fio,
                    o.format == OutputFormat::JsonPlus,
                ))
            }
        }
        if o.timeline {
            stdout.push_str(&summary::iostat_text(&run.limits.name, &run.record.iostat));
            stdout.push_str(&run.io_stat);
            stdout.push_str(&run.monitor);
        }
        if let Some(out) = &run.record.out {
            write_outputs(out, run)?;
        }
    }
    let ab = (!single).then(|| {
        let rows: Vec<(&str, &[JobSummary])> = runs
            .iter()
            .map(|r| (r.label.as_str(), r.summaries.as_slice()))
            .collect();
        summary::ab_table(&rows)
    });
    if let (Some(dir), Some(ab)) = (&o.output, &ab) {
        OutDir::top(dir)?.write("ab.txt", ab)?;
    }
    if o.format == OutputFormat::Summary || (!single && o.format == OutputFormat::Normal) {
        for run in &runs {
            stdout.push_str(&format!("--- {} ---\n", run.label));
            stdout.push_str(&summary::summary_table(&run.summaries));
        }
        if let Some(ab) = &ab {
            stdout.push('\n');
            stdout.push_str(ab);
        }
    }
    print!("{stdout}");
    Ok(0)
}

/// Every output file of one run in its folder `out` (see `report::outdir`) besides
/// the timelines, which streamed there during the run.
fn write_outputs(out: &OutDir, run: &VariantRun) -> Result<(), String> {
    let dir = out.path();
    let write = |name: &str, text: &str| out.write(name, text);
    let tree = &run.resolved.tree;
    write("summary.txt", &summary::summary_table(&run.summaries))?;
    write("fio.json", &fioreport::json::to_json(&run.fio, false))?;
    write("fio.txt", &fioreport::text::to_normal(&run.fio))?;
    write("io.stat", &run.io_stat)?;
    let mut jobs: Vec<JobLine> = run
        .out
        .jobs
        .iter()
        .zip(&run.out.job_timelines)
        .map(|((p, _, times), bins)| {
            // one line per cgroup/job across successive fio runs (they never overlap)
            let label = summary::job_label(&tree.nodes[p.cgroup as usize].path, &p.name, 0);
            let until = p.runtime.map(|r| times.stats_start + r);
            JobLine { label, bins, until }
        })
        .collect();
    // a job's later runs right after its first (a stable sort keeps time order)
    let first_seen: Vec<String> = jobs.iter().map(|j| j.label.clone()).collect();
    jobs.sort_by_key(|j| first_seen.iter().position(|l| *l == j.label));
    write("jobs.csv", &timeline::jobs_csv(&jobs))?;
    if let Err(e) = plot_panels(
        &dir.join("jobs"),
        &format!("jobs: {}", run.label),
        "time (s)",
        &timeline::job_panels(&jobs),
    ) {
        eprintln!("warning: plot not drawn: {e}");
    }
    if let Err(e) = plot_panels(
        &dir.join("clat"),
        &format!("clat percentiles: {}", run.label),
        "percentile",
        &[summary::clat_percentile_panel(&run.summaries)],
    ) {
        eprintln!("warning: plot not drawn: {e}");
    }
    if !run.monitor.is_empty() {
        write("iocost_monitor.txt", &run.monitor)?;
        write("iocost_monitor.json", &run.monitor_json)?;
    }
    if let Some(series) = &run.record.iocost
        && let Err(e) = timeline::plot_iocost(
            &dir.join("iocost"),
            &format!("blk-iocost: {}", run.label),
            series,
            tree,
            &jobs,
        )
    {
        eprintln!("warning: plot not drawn: {e}");
    }
    if let Some(series) = &run.record.iolatency
        && let Err(e) = timeline::plot_iolatency(
            &dir.join("iolatency"),
            &format!("blk-iolatency: {}", run.label),
            series,
            tree,
            &jobs,
        )
    {
        eprintln!("warning: plot not drawn: {e}");
    }
    let iostat_panels = vec![Panel {
        y_label: "MiB/s".into(),
        series: vec![
            Series {
                name: "read".into(),
                points: run.record.read_mib.points(),
            },
            Series {
                name: "write".into(),
                points: run.record.write_mib.points(),
            },
        ],
        log_y: false,
    }];
    if let Err(e) = plot_panels(
        &dir.join("iostat"),
        &format!("device throughput: {}", run.label),
        "time (s)",
        &iostat_panels,
    ) {
        eprintln!("warning: plot not drawn: {e}");
    }
    Ok(())
}

/// `blkcg-sim fio`: fio's own arguments against a simulated device.
pub fn fio_command(
    device: &str,
    io_max: Option<&str>,
    kernel: Option<&str>,
    args: &[String],
    format: OutputFormat,
    progress: Reporter,
) -> Result<u8, String> {
    let dev = parse_device_spec(device)?;
    let mut t = toml::Table::new();
    t.insert("device".into(), toml::Value::Table(dev));
    let mut cg = toml::Table::new();
    let mut words = vec!["fio".to_string()];
    words.extend(args.iter().map(|a| shell_quote(a)));
    cg.insert("fio".into(), toml::Value::String(words.join(" ")));
    if let Some(m) = io_max {
        cg.insert("io.max".into(), toml::Value::String(m.to_string()));
    }
    let mut cgs = toml::Table::new();
    cgs.insert("fio".into(), toml::Value::Table(cg));
    t.insert("cgroup".into(), toml::Value::Table(cgs));
    if let Some(k) = kernel {
        let mut kt = toml::Table::new();
        kt.insert("version".into(), toml::Value::String(k.to_string()));
        t.insert("kernel".into(), toml::Value::Table(kt));
    }
    let text = toml::to_string(&t).map_err(|e| e.to_string())?;
    let mut sc = Scenario::parse(&text, "<command line>").map_err(|e| e.to_string())?;
    sc.acting_as_fio = true;
    let opts = RunOptions {
        variants: vec![],
        kernels: vec![],
        format,
        output: None,
        seed: None,
        timeline: false,
        progress,
        trace: false,
    };
    run_command(&sc, &opts)
}

/// `s` as one shell word: as is when plain, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,:/+%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `blkcg-sim check`: build every variant as `run` would — so it refuses exactly what
/// `run` refuses — and print what it resolves to.
pub fn check_command(sc: &Scenario, variants: &[String]) -> Result<u8, String> {
    let plan = plan(sc, variants, &[])?;
    for (v, _) in plan {
        let p = prepare(sc, v.as_deref(), None, None, false)?;
        let r = &p.resolved;
        let (dev, keys, _) = crate::device::config::resolve(&r.device, r.seed)
            .map_err(|e| key_err(sc, v.as_deref(), &["device"], &e).to_string())?;
        let l = &p.limits;
        println!("variant {}:", v.as_deref().unwrap_or("(base)"));
        let keys: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("  keys     {}", keys.join(" "));
        println!(
            "  device   {} {}:{} ({}) rotational={} hw_queue_depth={} nr_requests={} max_sectors_kb={} capacity={}",
            dev.model(),
            l.major,
            l.minor,
            l.name,
            u8::from(l.rotational),
            l.hw_queue_depth,
            l.nr_requests,
            l.max_sectors_kb,
            l.capacity
        );
        println!(
            "  kernel   version={} hz={} throttling_low={}",
            r.kernel.version, r.kernel.hz, r.kernel.throttling_low
        );
        for s in &p.setups {
            println!("  {:<8} {}", s.label(), s.describe());
        }
        println!("  host     {}", r.host);
        if let Some(pct) = r.state.iocost_vrate_pct {
            println!("  state    iocost base vrate {pct:.2}% (left by earlier runs)");
        }
        for w in &r.writes {
            let cg = &r.tree.nodes[w.cgroup as usize].path;
            println!(
                "  at {:>12} ns  echo \"{}\" > {}{}",
                w.at,
                w.line,
                if cg.is_empty() {
                    String::new()
                } else {
                    format!("{cg}/")
                },
                w.file.name()
            );
        }
        for w in &r.device_writes {
            println!("  at {:>12} ns  {}", w.at, device_echo(w, &l.name));
        }
        for (spec, &src) in p.specs.iter().zip(&p.sources) {
            let f = &r.fio[src];
            println!(
                "  job {:<12} cgroup={} rw={:?} bs={:?} iodepth={} engine={:?} runtime={}ns",
                summary::job_label("", &spec.name, f.round),
                spec.cgroup
                    .as_deref()
                    .unwrap_or(&r.tree.nodes[f.cgroup as usize].path),
                spec.rw,
                spec.bs_min,
                spec.iodepth,
                spec.ioengine,
                spec.runtime
            );
        }
        for w in &p.warnings {
            println!("  warning: {w}");
        }
    }
    println!("ok");
    Ok(0)
}

/// The figures bands look at, from one run.
fn metrics_of(run: &VariantRun) -> VariantMetrics {
    VariantMetrics {
        jobs: run.summaries.clone(),
        iostat: run.record.iostat.clone(),
        extra: run.extra.clone(),
    }
}

/// `blkcg-sim repro`: run the built-in seeds and check every band.
pub fn repro_command(names: &[String], json: bool, progress: &Reporter) -> Result<u8, String> {
    let all = embedded::seeds();
    let chosen: Vec<&str> = if names.is_empty() {
        all.clone()
    } else {
        let mut v = Vec::new();
        for n in names {
            let Some(x) = all.iter().find(|s| **s == n.as_str()) else {
                return Err(format!(
                    "no seed reproduction `{n}`; available: {}",
                    all.join(", ")
                ));
            };
            v.push(*x);
        }
        v
    };
    let mut failed = 0;
    let mut json_out = Vec::new();
    let reproductions = in_parallel(&chosen, |name| reproduce_with(name, progress))?;
    for (name, (spec, results, runs)) in chosen.into_iter().zip(reproductions) {
        failed += results.iter().filter(|r| !r.pass).count();
        if json {
            json_out.push(serde_json::json!({
                "name": name,
                "title": spec.title,
                "source": spec.source,
                "bands": results,
                "pass": results.iter().all(|r| r.pass),
            }));
        } else {
            println!("==== {name}: {}", spec.title);
            println!("source: shared/seeds/{}\n", spec.source);
            println!("published:\n{}", spec.published.trim_end());
            println!("\nsimulated:");
            for run in &runs {
                println!("--- {} ---", run.label);
                print!("{}", summary::summary_table(&run.summaries));
            }
            println!();
            print!("{}", repro::bands_table(&results));
            println!();
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json_out).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "{}",
            if failed == 0 {
                "all bands pass".to_string()
            } else {
                format!("{failed} band(s) FAIL")
            }
        );
    }
    Ok(u8::from(failed > 0))
}

/// Run every variant of built-in seed `name` and evaluate its bands.
/// One seed's reproduction: its spec, every band's result, and the runs.
pub type Reproduction = (ReproSpec, Vec<repro::BandResult>, Vec<VariantRun>);

/// Reproduce seed `name`, with progress on stderr if `progress`.
pub fn reproduce(name: &str, progress: bool) -> Result<Reproduction, String> {
    reproduce_with(name, &Reporter::for_stderr(!progress))
}

fn reproduce_with(name: &str, progress: &Reporter) -> Result<Reproduction, String> {
    let text = embedded::get(name).ok_or_else(|| format!("no built-in scenario `{name}`"))?;
    let sc = Scenario::parse(text, &format!("{name}.toml")).map_err(|e| e.to_string())?;
    let spec =
        ReproSpec::from_table(&sc.table)?.ok_or_else(|| format!("{name} has no [repro] table"))?;
    let runs = in_parallel(&sc.variants(), |v| {
        let keep = RecordOptions {
            keep: true,
            ..RecordOptions::default()
        };
        run_variant_traced(&sc, Some(v), None, None, progress, false, keep)
    })?;
    let metrics = runs
        .iter()
        .map(|run| (run.label.clone(), metrics_of(run)))
        .collect();
    let results = repro::evaluate(&spec, &metrics);
    Ok((spec, results, runs))
}

/// `--device SPEC` of `blkcg-sim fio`: `MODEL[:key=value,key=value...]` as a `[device]`
/// table. Values that read as integers, floats or booleans become those.
pub fn parse_device_spec(spec: &str) -> Result<toml::Table, String> {
    let (model, rest) = match spec.split_once(':') {
        Some((m, r)) => (m, r),
        None => (spec, ""),
    };
    if model.is_empty() {
        return Err(format!(
            "--device `{spec}`: give a model (nullb, ssd, hdd, cloud), e.g. nullb:irqmode=2,completion_nsec=100000"
        ));
    }
    let mut t = toml::Table::new();
    t.insert("model".into(), toml::Value::String(model.to_string()));
    for kv in rest.split(',').filter(|s| !s.trim().is_empty()) {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("--device `{spec}`: `{kv}` is not key=value"));
        };
        let (k, v) = (k.trim(), v.trim());
        t.insert(k.to_string(), typed_value(v));
    }
    Ok(t)
}

/// A value given on the command line as a scenario would write it: an integer, a
/// float or a boolean when it reads as one, else a string.
pub fn typed_value(v: &str) -> toml::Value {
    if let Ok(i) = v.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = v.parse::<f64>() {
        toml::Value::Float(f)
    } else if let Ok(b) = v.parse::<bool>() {
        toml::Value::Boolean(b)
    } else {
        toml::Value::String(v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_specs() {
        let t = parse_device_spec("nullb:irqmode=2,completion_nsec=100000,preset=x").unwrap();
        assert_eq!(t["model"].as_str(), Some("nullb"));
        assert_eq!(t["irqmode"].as_integer(), Some(2));
        assert_eq!(t["preset"].as_str(), Some("x"));
        assert_eq!(parse_device_spec("ssd").unwrap().len(), 1);
        assert!(parse_device_spec("nullb:irqmode").is_err());
        assert!(parse_device_spec(":x=1").is_err());
    }
}
