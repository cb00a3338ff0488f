//! From a resolved scenario to a finished run: prepare → simulate.
//!
//! [`prepare`] is the one place where every layer is built: the device model from
//! `[device]`, the fio jobs from each cgroup's `fio`, and the policies of the stack
//! from the registry (`crate::stack::registry`: each configured from `[kernel]`, built
//! where the variant writes one of its files). Then the scenario's interface writes
//! are applied in order (root files first, parents before children) exactly as `echo
//! LINE > FILE` would, first on scratch policies in time order, so that a write the
//! kernel refuses is reported before the run with the scenario line and the kernel's
//! errno (a policy the variant's kernel lacks — too old, or a distribution's config
//! without it — is ENOENT at the first write to its files); device actions
//! (`[[schedule]] device = "remove"`, null_blk's `device.power`/`device.badblocks`)
//! are applied the same way, at their time. A
//! cgroup's `fio` array is successive runs, as a script's loop with a `wait`: every job
//! of run k waits (its `after` list) for every job of run k-1, then `[host]
//! fio_restart_ns` more; with `[host] fio_start_phase` every fio process starts at a
//! phase of the tick, and with `[host] fio_sleep_compensation` it times its sleep
//! granularity as fio does at start-up (`FioProcess`). [`simulate`] puts the pipeline
//! together from those layers (so `check`, which stops after `prepare`, allocates none
//! of a run's state), runs it and gathers fio's report, summaries, io.stat (`crate::report::io_stat`) and the
//! policies' views.
//! What the variant assumes (kernel, host, device latency model) is said once, here,
//! by `crate::report::assumed` for `check` and the run's summary; so is what it was
//! given but does not model (mmap first: `crate::workload::job::unmodelled`,
//! once per fio job), a warning `run` prints on stderr and in the summary.
//! [`reproduce`] runs a built-in seed's variants and evaluates its bands.
//!
//! It lives apart from `crate::scenario` (the scenario file: parse, resolve, variants)
//! and from `crate::cli` (the commands, which only choose runs and print), because
//! the library's users — `sweep`, `tune`, `validate`, the tests, the benches — all
//! start runs here.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rayon::prelude::*;

use crate::blkcg::{CgroupTree, DeviceTable};
use crate::device::{BlockDevice, QueueLimits};
use crate::error::KeyError;
use crate::ioprio::{BlkIoprio, prio_label};
use crate::kernel_version::{Distro, KernelVersion, named};
use crate::progress::{Cancel, Horizon, Reporter};
use crate::report::assumed::Assumed;
use crate::report::fio::{self as fioreport, FioMessage, JobReport, RunReport};
use crate::report::io_stat::{io_pressure_text, io_stat_text};
use crate::report::record::{RecordOptions, Recorded, RunRecorder};
use crate::report::summary::JobSummary;
use crate::scenario::repro::{self, ReproSpec, VariantMetrics};
use crate::scenario::resolve::{DeviceAction, DeviceWrite, Given, IfaceWrite, Resolved};
use crate::scenario::{Scenario, ScenarioError, embedded};
use crate::sim::cpu::{self, FairSched};
use crate::sim::engine::{Pipeline, RunOutput};
use crate::sim::fio::stats::percentiles;
use crate::sim::merge::NoMerges;
use crate::sim::plug::{self, BlkMqBehaviour};
use crate::sim::queue::EventQueue;
use crate::sim::{NSEC_PER_SEC, Ns, SimRng};
use crate::stack::registry::{Creation, POLICIES, PolicyDef, PolicySetup};
use crate::stack::{Elevator, Stack};
use crate::workload::cmdline::{is_cmdline, parse_fio};
use crate::workload::fio as fiojob;
use crate::workload::iolog::{self, IoLog, ReplayOpts};
use crate::workload::job::JobParams;
use crate::workload::job::start_dependencies;
use crate::writeback::readahead::{self, MmBehaviour};

/// Everything one variant's run produced.
pub struct VariantRun {
    pub label: String,
    pub resolved: Resolved,
    pub limits: QueueLimits,
    pub out: RunOutput,
    pub summaries: Vec<JobSummary>,
    /// What fio would print for this variant.
    pub fio: RunReport,
    pub warnings: Vec<String>,
    pub io_stat: String,
    /// `io.pressure` of every cgroup at the end (`crate::report::io_stat`).
    pub io_pressure: String,
    pub extra: BTreeMap<String, f64>,
    /// The timelines kept of the run (all rows where the caller asked to keep them;
    /// always the pictures' decimated series) and the folder they streamed to.
    pub record: Recorded,
    /// The policies' views of the run's end, as the files of a run's folder they are
    /// written to (`BlkcgPolicy::reports`: blk-iocost's `iocost_monitor.txt`, as
    /// `iocost_monitor.py` shows it): made when the run kept its rows or wrote an
    /// output folder (`RecordOptions`), the JSON ones only with an output folder.
    pub reports: Vec<(&'static str, String)>,
    /// What the run assumed (kernel, host, device latency model): the top of its
    /// summary.
    pub assumed: Assumed,
}

/// The error for a refused interface write, naming the scenario line (and the variant
/// being run, if any).
pub(crate) fn write_error(
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
        sc.place(w.src_line),
        variant
            .map(|v| format!("variant `{v}`: "))
            .unwrap_or_default(),
        w.line
    )
}

/// A behaviour or device key's error, pointed at the key's line.
pub(crate) fn key_err(
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
/// kernel's rules on scratch policies. `check` stops here; `run` goes on to
/// [`simulate`], which puts the pipeline together. So both refuse exactly the same
/// scenarios.
pub struct Prepared {
    label: String,
    pub(crate) resolved: Resolved,
    pub(crate) limits: QueueLimits,
    /// The queue's `q->nr_requests` (the scheduler's tags with one, else `limits`').
    queue_nr_requests: u32,
    devs: DeviceTable,
    /// What `simulate` builds the pipeline from.
    parts: PipelineParts,
    pub(crate) specs: Vec<fiojob::JobSpec>,
    /// Which `fio` entry (index into `resolved.fio`) each job came from.
    pub(crate) sources: Vec<usize>,
    global_options: Vec<(String, String)>,
    /// What progress is measured against: the cap, or the longest job's planned
    /// time, or with no job bounded by time the bytes the jobs plan to move.
    horizon: Horizon,
    pub warnings: Vec<String>,
    /// Every policy of the registry, configured for the variant (used or not).
    pub setups: Vec<Box<dyn PolicySetup>>,
    /// The elevator as `check` prints it (`crate::sched::build`).
    pub scheduler: String,
    /// What the variant assumes (kernel, host, device latency model).
    pub assumed: Assumed,
}

impl Prepared {
    /// The log job `i` (in [`Prepared::specs`]' order) replays, if it replays one, and
    /// its iodepth (a blktrace's probed depth when the job sets none).
    pub(crate) fn replay_of(&self, i: usize) -> Option<(&IoLog, u32)> {
        let p = self.parts.params.get(i)?;
        Some((p.iolog.as_ref()?.replay.as_deref()?, p.iodepth))
    }

    /// Some job reads or writes through the page cache (`crate::sim::writeback`,
    /// `crate::sim::readahead`).
    pub fn uses_page_cache(&self) -> bool {
        self.parts.params.iter().any(|p| p.buffered.is_some())
    }
}

/// Some of the jobs `params` writes through the page cache.
fn writes_buffered(params: &[JobParams]) -> bool {
    params.iter().any(|p| p.buffered.is_some() && p.kind.write)
}

/// The policies of the variant, each where the kernel creates it (its registry
/// entry's `created`): those made with the queue first, then the others at the first
/// write (in time order) to one of their files. An rq-qos policy made later goes to the
/// head of the chain (`rq_qos_add()`).
/// `defs` are the registry's policies and `setups` their configurations, in its order.
/// `buffered_writes`: some job writes through the page cache.
fn build_stack(
    defs: &[PolicyDef],
    r: &Resolved,
    setups: &[Box<dyn PolicySetup>],
    tree: &CgroupTree,
    limits: &QueueLimits,
    buffered_writes: bool,
    trace: bool,
) -> Stack {
    let mut made = vec![false; defs.len()];
    let mut stack = Stack::default();
    for (i, d) in defs.iter().enumerate() {
        if let Creation::WithQueue(on) = d.created
            && on(r, limits, buffered_writes)
        {
            made[i] = true;
            stack.add(setups[i].build(tree, limits, trace));
        }
    }
    for w in in_time_order(r) {
        if let Some(i) = policy_of(defs, w)
            && !std::mem::replace(&mut made[i], true)
        {
            stack.add(setups[i].build(tree, limits, trace));
        }
    }
    stack
}

/// The variant's interface writes in time order (a stable sort: scenario order at
/// one time).
fn in_time_order(r: &Resolved) -> Vec<&IfaceWrite> {
    let mut v: Vec<&IfaceWrite> = r.writes.iter().collect();
    v.sort_by_key(|w| w.at);
    v
}

/// The index in `defs` of the policy that owns the file `w` writes.
fn policy_of(defs: &[PolicyDef], w: &IfaceWrite) -> Option<usize> {
    defs.iter()
        .position(|d| d.files.iter().any(|f| f.name == w.file.name()))
}

/// Why distribution `d`'s kernel (of `version`) has none of `def`'s files: an option
/// the policy needs that its config leaves out.
fn not_built(d: &Distro, def: &PolicyDef, version: &KernelVersion) -> Option<String> {
    let o = def.kconfig.iter().find(|o| {
        o.required && o.in_version((version.major, version.minor)) && d.not_built.contains(&o.name)
    })?;
    let series = format!("{}.{}", version.major, version.minor);
    Some(format!(
        "{}'s kernel is built without CONFIG_{}, so it has no {} files; kernel.version = \
         \"{series}\" simulates upstream {series} with it (or build one: `blkcg-sim kernel \
         build`)",
        d.name, o.name, def.name
    ))
}

impl Prepared {
    /// Also record each request's time on the device (`RunOutput::device_lat`).
    pub fn record_device_latency(&mut self) {
        self.parts.device_latency = true;
    }

    /// The block core's switches in force (`blk.*`).
    pub fn blk_mq(&self) -> BlkMqBehaviour {
        self.parts.blk
    }

    /// The CPU scheduler's switch in force (`sched.fair`).
    pub fn fair(&self) -> FairSched {
        self.parts.fair
    }

    /// The page cache's switches in force (`mm.*`).
    pub fn mm(&self) -> MmBehaviour {
        self.parts.mm
    }
}

/// The layers a prepared variant's pipeline is made of. Only `simulate` puts them
/// together ([`build_pipeline`]), so `check` allocates none of a run's state (for
/// 100,000 jobs, hundreds of MB).
struct PipelineParts {
    dev: Box<dyn BlockDevice>,
    params: Vec<JobParams>,
    elevator: Option<Box<dyn Elevator>>,
    /// The block core's switches (`crate::sim::plug`).
    blk: BlkMqBehaviour,
    /// The CPU scheduler's fair class (`crate::sim::cpu`).
    fair: FairSched,
    /// `queue/nomerges`.
    nomerges: NoMerges,
    /// The page cache's switches (`crate::writeback::readahead`) and
    /// `queue/read_ahead_kb`.
    mm: MmBehaviour,
    read_ahead_kb: u64,
    trace_on: bool,
    device_latency: bool,
}

/// The run's pipeline: the jobs on the device under the policies the variant's
/// writes set up, its writes at t = 0 applied and the later ones scheduled (returned
/// in the order the pipeline's `Event::Config` numbers them). `prepare` has applied
/// every write on scratch policies in the same order, so none is refused here.
fn build_pipeline(
    sc: &Scenario,
    r: &Resolved,
    setups: &[Box<dyn PolicySetup>],
    limits: &QueueLimits,
    queue_nr_requests: u32,
    devs: &DeviceTable,
    parts: PipelineParts,
) -> Result<(Pipeline, Vec<Later>), String> {
    // the policies see the queue's q->nr_requests, the driver its tags
    let q_limits = QueueLimits {
        nr_requests: queue_nr_requests,
        ..limits.clone()
    };
    let buffered = writes_buffered(&parts.params);
    let task_ioprios: Vec<_> = parts.params.iter().map(|p| p.prio.task).collect();
    let mut pipe = Pipeline::new(parts.dev, parts.params, r.tree.len(), r.host, r.seed);
    pipe.set_duration(r.duration);
    pipe.set_blk_mq(parts.blk, r.kernel.hz);
    pipe.set_fair(parts.fair);
    pipe.set_nomerges(parts.nomerges);
    let cgroups = (0..r.tree.len() as u32)
        .map(|cg| {
            let max = r.memory_max.iter().find(|m| m.0 == cg).map(|m| m.1);
            (r.tree.parent(cg), max)
        })
        .collect();
    pipe.set_writeback(r.vm, cgroups, parts.mm, parts.read_ahead_kb);
    // io.pressure of every cgroup; its tasks are the contexts, the flushers' too
    let parents: Vec<Option<u32>> = (0..r.tree.len() as u32)
        .map(|cg| r.tree.parent(cg))
        .collect();
    pipe.set_pressure(&parents);
    let mut stack = build_stack(
        POLICIES,
        r,
        setups,
        &r.tree,
        &q_limits,
        buffered,
        parts.trace_on,
    );
    set_elevator(&mut stack, parts.elevator, &r.tree, &task_ioprios);
    pipe.set_stack(stack);
    if pipe.limits().nr_requests != limits.nr_requests {
        pipe.resize_driver_tags(limits.nr_requests);
    }
    if parts.device_latency {
        pipe.record_device_latency();
    }
    // interface writes and device actions at t = 0 now, later ones from the event loop
    let variant = r.variant.as_deref();
    let mut later = Vec::new();
    for w in &r.writes {
        if w.at == 0 {
            pipe.write_iface(w.file.name(), w.cgroup, &w.line, devs)
                .map_err(|e| write_error(sc, variant, w, &r.tree, e))?;
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
    Ok((pipe, later))
}

/// What one fio process (one cgroup's `fio`, one run of it) brings to its jobs from
/// its start: where in the kernel's tick it starts, and the sleep granularity it timed.
struct FioProcess {
    /// A real fio's first I/O comes at any phase of the tick (its start-up takes
    /// milliseconds, none of them tick-aligned); drawn uniformly over one jiffy, so that
    /// a rate-paced job's due times do not fall exactly on the jiffy boundaries every
    /// kernel timer runs at (docs/validation.md §28).
    start_phase: Ns,
    /// `fio_time_init()`'s `ns_granularity` (µs): [`crate::sim::fio::fio_time_init`].
    ns_granularity_us: u64,
}

impl FioProcess {
    /// Process `src_idx` of the run (an index into `r.fio`), from a stream of its own
    /// under the run's seed: the phase with `[host] fio_start_phase` (without it every
    /// fio starts on a whole millisecond), the granularity with `[host]
    /// fio_sleep_compensation` (without it every sleep is asked as is, and ends late by
    /// the whole lateness). The phase is drawn first either way, so that each key's
    /// draw is the same with or without the other.
    fn draw(r: &Resolved, src_idx: usize) -> FioProcess {
        let h = &r.host;
        if !h.fio_start_phase && !h.fio_sleep_compensation {
            return FioProcess {
                start_phase: 0,
                ns_granularity_us: 0,
            };
        }
        let mut rng = SimRng::new(r.seed, &format!("fio-process#{src_idx}"));
        let jiffy = NSEC_PER_SEC / u64::from(r.kernel.hz.max(1));
        let phase = rng.below(jiffy);
        FioProcess {
            start_phase: if h.fio_start_phase { phase } else { 0 },
            ns_granularity_us: if h.fio_sleep_compensation {
                crate::sim::fio::fio_time_init(h, &mut rng)
            } else {
                0
            },
        }
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
        let (n, too_new) = named(v).map_err(|m| format!("--kernel {v}: {m}"))?;
        warnings.extend(too_new);
        // a distribution named here decides HZ and its options over the scenario's
        r.kernel.set_kernel(n, Given::CommandLine, false, false);
    }
    if let Some(s) = seed {
        r.seed = s;
    }
    let located =
        |table: &[&str], e: &crate::error::KeyError| key_err(sc, variant, table, e).to_string();
    let (dev, dev_keys, dev_warnings) =
        crate::device::config::resolve(&r.device, r.seed).map_err(|e| located(&["device"], &e))?;
    let mut assumed = Assumed::of(&r, dev.as_ref());
    warnings.extend(dev_warnings.iter().map(|w| located(&["device"], w)));
    let mut limits = dev.limits().clone();
    let key = |name: &str| dev_keys.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let scheduler = key("scheduler").map_or("none", |v| v.as_str());
    // resolved by the device keys (crate::sched::nr_requests)
    let nr_requests = key("nr_requests")
        .and_then(|v| v.parse().ok())
        .unwrap_or(limits.nr_requests);
    let nomerges = NoMerges::of(key("nomerges").and_then(|v| v.parse().ok()).unwrap_or(0));
    let read_ahead_kb = key("read_ahead_kb")
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    if scheduler == "none" {
        // without an elevator q->nr_requests is the driver tags' depth
        limits.nr_requests = nr_requests;
    }
    let iosched = r.device.get("iosched").and_then(toml::Value::as_table);
    // the queue's nr_requests before `[device] nr_requests` was written: the default
    // blk_mq_init_sched() gave the scheduler
    let nr_before = crate::sched::nr_requests::default_nr_requests(true, limits.hw_queue_depth);
    let scheduler_name = scheduler;
    let build_elevator = || {
        crate::sched::build(
            scheduler_name,
            iosched,
            &r.kernel,
            limits.rotational,
            nr_requests,
            nr_before,
        )
        .map_err(|e| {
            let table = if e.key.starts_with("device.") {
                "device"
            } else {
                "kernel"
            };
            located(&[table], &e)
        })
    };
    let (elevator, scheduler) = build_elevator()?;
    // the elevator's cgroup writes are checked on one of its own, as the policies'
    let scratch_elevator = build_elevator()?.0;
    if let Some(c) = crate::stack::registry::ELEVATORS
        .iter()
        .find(|e| e.name == scheduler_name)
        .and_then(|e| e.caveat)
    {
        warnings.push(c.to_string());
    }
    let devs = DeviceTable {
        disks: vec![(limits.major, limits.minor)],
    };
    // a policy's files appear with it: an older kernel has none of them
    let version =
        KernelVersion::parse(&r.kernel.version).map_err(|m| format!("{}: {m}", sc.file))?;
    for w in &r.writes {
        let Some(def) = policy_of(POLICIES, w).map(|i| &POLICIES[i]) else {
            continue;
        };
        // too old for the policy, or a distribution's config without it
        let missing = (def.refuses)(&version)
            .map(|why| format!("{why}; kernel {version} has no {}", w.file.name()))
            .or_else(|| {
                let d = r.kernel.origin.distro?;
                not_built(d, def, &version)
            });
        if let Some(why) = missing {
            return Err(write_error(
                sc,
                variant,
                w,
                &r.tree,
                format!("No such file or directory (ENOENT): {why}"),
            ));
        }
    }
    // every behaviour switch is checked, whether or not a policy is used
    let setups = POLICIES
        .iter()
        .map(|d| (d.configure)(&r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| located(&["kernel"], &e))?;
    let blk = plug::behaviour_for(&r.kernel.version, &r.kernel.switches(plug::SWITCH_PREFIX))
        .map_err(|e| located(&["kernel"], &e))?;
    let fair = cpu::fair_for(&r.kernel.version, &r.kernel.switches(cpu::SWITCH_PREFIX))
        .map_err(|e| located(&["kernel"], &e))?;
    let mm = readahead::behaviour_for(
        &r.kernel.version,
        &r.kernel.switches(readahead::SWITCH_PREFIX),
    )
    .map_err(|e| located(&["kernel"], &e))?;
    // fio jobs, in the order the scenario lists cgroups, refused as soon as they
    // could not fit in 90% of the memory available
    let memory_limit = available_memory().map_or(u64::MAX, |a| a / 10 * 9);
    let mut needed = r.tree.len() as u64 * Pipeline::CGROUP_MEMORY;
    let mut params: Vec<JobParams> = Vec::new();
    let mut specs: Vec<fiojob::JobSpec> = Vec::new();
    let mut sources: Vec<usize> = Vec::new();
    let mut global_options = Vec::new();
    let mut iologs = JobLogs {
        capacity: limits.capacity,
        ..JobLogs::default()
    };
    let mut tree = r.tree.clone();
    // job indices of the round before, and of this one: a round starts when the one
    // before has ended (`r.fio` is ordered by round)
    let (mut prev_round, mut this_round): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut round = 0;
    // the cgroups' fio texts parsed on every core, FIO_PARSE_BATCH at a time (what is
    // parsed but not yet turned into jobs stays small), used (an error raised) in order
    let mut parsed: Vec<Option<Result<fiojob::FioJobs, String>>> = Vec::new();
    for (src_idx, src) in r.fio.iter().enumerate() {
        if src_idx % FIO_PARSE_BATCH == 0 {
            let batch = &r.fio[src_idx..r.fio.len().min(src_idx + FIO_PARSE_BATCH)];
            parsed = batch
                .par_iter()
                .map(|src| (!src.text.trim().is_empty()).then(|| parse_fio(sc, src)))
                .collect();
        }
        if src.round != round {
            round = src.round;
            if !this_round.is_empty() {
                prev_round = std::mem::take(&mut this_round);
            }
        }
        let Some(jobs) = parsed[src_idx % FIO_PARSE_BATCH].take() else {
            continue;
        };
        let cg_path = tree.nodes[src.cgroup as usize].path.clone();
        let where_ = format!("{} (fio of cgroup {cg_path})", sc.place(src.src_line));
        // parse errors and warnings name their own lines
        let jobs = jobs?;
        warnings.extend(jobs.warnings.iter().cloned());
        global_options.extend(jobs.global_options.iter().cloned());
        let base = params.len() as u32;
        let deps = start_dependencies(&jobs.jobs, base);
        let cmdline = is_cmdline(&src.text);
        let process = FioProcess::draw(&r, src_idx);
        for (thread, (mut spec, mut after)) in (1..).zip(jobs.jobs.into_iter().zip(deps)) {
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
            p.startdelay += process.start_phase;
            iologs
                .attach(sc, &spec, &mut p, thread, &mut needed, &mut warnings)
                .map_err(|e| format!("{where_}: fio job `{}`: {e}", spec.name))?;
            p.ns_granularity_us = process.ns_granularity_us;
            if p.filename.is_empty() {
                p.filename = format!("/dev/{}", limits.name).into();
            }
            // once per job: its numjobs clones would only say it again
            if spec.clone_index == 0 {
                let unmodelled = crate::workload::job::unmodelled(&spec)
                    .into_iter()
                    .map(|u| format!("job `{}`: {u}", spec.name));
                warnings.extend(unmodelled.chain(w).map(|w| format!("{where_}: {w}")));
            }
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
    if params.iter().any(|p| p.buffered.is_some()) {
        assumed.set_page_cache(&r, read_ahead_kb);
    }
    // they live for the whole run: no room left over from their growth
    params.shrink_to_fit();
    specs.shrink_to_fit();
    sources.shrink_to_fit();
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
    // the policies see the queue's q->nr_requests (blk-iolatency's scale steps): the
    // scheduler's tags with an elevator (blk_mq_init_sched()), else the driver's
    let q_limits = QueueLimits {
        nr_requests: elevator
            .as_ref()
            .and_then(|e| e.nr_requests())
            .unwrap_or(limits.nr_requests),
        ..limits.clone()
    };
    // every write of the run, in time order, on policies of its own: a write the
    // kernel refuses is an error now, not a surprise at its time
    let buffered = writes_buffered(&params);
    let mut scratch_stack = build_stack(POLICIES, &r, &setups, &tree, &q_limits, buffered, false);
    let task_ioprios: Vec<_> = params.iter().map(|p| p.prio.task).collect();
    set_elevator(&mut scratch_stack, scratch_elevator, &tree, &task_ioprios);
    let mut scratch = EventQueue::new();
    for w in in_time_order(&r) {
        let now = scratch.now();
        scratch_stack
            .write(now, w.file.name(), w.cgroup, &w.line, &devs, &mut scratch)
            .map_err(|e| write_error(sc, variant, w, &tree, e))?;
    }
    Ok(Prepared {
        label: variant.unwrap_or("default").to_string(),
        resolved: Resolved { tree, ..r },
        queue_nr_requests: q_limits.nr_requests,
        limits,
        devs,
        parts: PipelineParts {
            dev,
            params,
            elevator,
            blk,
            fair,
            nomerges,
            mm,
            read_ahead_kb,
            trace_on,
            device_latency: false,
        },
        specs,
        sources,
        global_options,
        horizon,
        warnings,
        setups,
        scheduler,
        assumed,
    })
}

/// The run's elevator into `stack`, told the cgroup tree and the tasks' I/O
/// priorities before any request (`Elevator::attach`).
fn set_elevator(
    stack: &mut crate::stack::Stack,
    elevator: Option<Box<dyn Elevator>>,
    tree: &crate::blkcg::CgroupTree,
    task_ioprios: &[Option<crate::blkcg::ioprio::Ioprio>],
) {
    stack.elevator = elevator;
    if let Some(e) = stack.elevator.as_mut() {
        let parents: Vec<Option<u32>> = (0..tree.len() as u32).map(|cg| tree.parent(cg)).collect();
        e.attach(&parents, task_ioprios);
    }
}

/// Build and run one variant (None: the scenario without variants), with progress
/// on stderr if `progress`, keeping everything it records in memory (rows, trace,
/// each job's timeline).
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
        keep_trace: true,
        keep_job_timelines: true,
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
    simulate(sc, prepared, progress, record, &Cancel::default())
}

/// Run a prepared variant to its end and gather its outputs; its timelines go where
/// `record` says. A run `cancel` stops ends early with `progress::CANCELLED`.
pub fn simulate(
    sc: &Scenario,
    p: Prepared,
    progress: &Reporter,
    record: RecordOptions,
    cancel: &Cancel,
) -> Result<VariantRun, String> {
    let (r, devs, mut warnings) = (p.resolved, p.devs, p.warnings);
    let (mut pipe, later) = build_pipeline(
        sc,
        &r,
        &p.setups,
        &p.limits,
        p.queue_nr_requests,
        &devs,
        p.parts,
    )?;
    for p in pipe.stack_mut().policies_mut() {
        p.set_tracing(record.takes_trace());
    }
    if record.takes_job_timelines() {
        pipe.record_job_timelines();
    }
    // the policies' reports are printed with the kept rows (`run --timeline`) and
    // written into the output folder (text and JSON); a line per cgroup, so not made
    // for nothing
    let wants_reports = record.keep || record.timeline_text || record.out.is_some();
    let wants_json = record.out.is_some();
    let tree = &r.tree;
    let mut recorder = RunRecorder::new(tree, record);
    recorder.set_nr_requests(p.queue_nr_requests);
    recorder.set_device_name(&p.limits.name);
    let mut shown = progress.start(&p.label, p.horizon);
    let mut late_errors = Vec::new();
    let dev_name = &p.limits.name;
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
        |now, done_bytes| {
            shown.update(now, done_bytes);
            if cancel.is_cancelled() {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        },
        &mut recorder,
    );
    shown.finish();
    cancel.check()?;
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
            sc.place(src_line),
            at as f64 / 1e9,
            end as f64 / 1e9
        ));
    }
    let rounds: Vec<u32> = p.sources.iter().map(|&s| r.fio[s].round).collect();
    let fio = fio_report(&out, p.specs, &p.sources, &rounds, tree, p.global_options);
    let mut summaries: Vec<JobSummary> = fio.jobs.iter().map(job_summary).collect();
    // the priority each job's bios carry, with its cgroup's io.prio.class at the end
    let ioprio = out.stack.policy::<BlkIoprio>();
    // the first job of each (name, cgroup), found in O(1) per summary
    let mut first_job = HashMap::with_capacity(out.jobs.len());
    for (i, (p, ..)) in out.jobs.iter().enumerate() {
        let cgroup = tree.nodes[p.cgroup as usize].path.as_str();
        first_job.entry((&*p.name, cgroup)).or_insert(i);
    }
    for s in &mut summaries {
        s.prio = first_job
            .get(&(s.job.as_str(), s.cgroup.as_str()))
            .map(|&i| &out.jobs[i])
            .and_then(|(p, ..)| {
                let policy = ioprio.map(|i| i.policy(p.cgroup)).unwrap_or_default();
                prio_label(&p.prio, policy)
            });
    }
    let mut out = out;
    let record = recorder.finish()?;
    // each policy's figures of the whole run (a seed's bands, sweep's records)
    let extra: BTreeMap<String, f64> = out
        .stack
        .policies()
        .flat_map(|p| p.figures())
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let io_stat = io_stat_text(&mut out, tree, &p.limits);
    let io_pressure = io_pressure_text(&out, tree);
    let reports = if wants_reports {
        out.stack
            .policies_mut()
            .flat_map(|p| p.reports(end, wants_json))
            .collect()
    } else {
        Vec::new()
    };
    Ok(VariantRun {
        label: p.label,
        resolved: r,
        limits: p.limits,
        out,
        summaries,
        fio,
        warnings,
        io_stat,
        io_pressure,
        extra,
        record,
        reports,
        assumed: p.assumed,
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

/// How many cgroups' fio texts `prepare` parses at once (in parallel) before turning
/// them into jobs: enough to keep every core busy, few enough that the parsed texts
/// waiting their turn stay a few MB at 100,000 cgroups.
const FIO_PARSE_BATCH: usize = 1024;

/// The I/O logs of a run's jobs: each log read once (a `numjobs` clone, or another job
/// replaying the same file with the same options, shares it), and the files written,
/// each by one job.
#[derive(Default)]
struct JobLogs {
    /// The device's bytes, which a replayed log must fit.
    capacity: u64,
    read: HashMap<(String, ReplayOpts), Arc<IoLog>>,
    written: HashMap<String, String>,
}

impl JobLogs {
    /// Job `p`'s logs from its `spec`: the one it replays (`read_iolog`, a relative
    /// name read beside the scenario file, as a job file's `include`), checked against
    /// the device, its warnings said once; the name it writes (`write_iolog`), one
    /// plain file name in the run's folder, not one of the run's own files.
    fn attach(
        &mut self,
        sc: &Scenario,
        spec: &fiojob::JobSpec,
        p: &mut JobParams,
        thread: u32,
        needed: &mut u64,
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
        let capacity = self.capacity;
        if let Some(w) = p.iolog.as_ref().and_then(|l| l.write.clone()) {
            self.claim("write_iolog", &w, &spec.name, false)?;
        }
        self.stat_logs(spec, p, thread, warnings)?;
        let Some(list) = &spec.read_iolog else {
            return Ok(());
        };
        // merged: every trace of the list into one; else the clone's own log
        let paths: Vec<String> = match &spec.merge_blktrace {
            Some(_) => iolog::split_names(list),
            None => vec![iolog::pick_name(list, spec.clone_index)],
        }
        .iter()
        .map(|n| fiojob::include_path(&sc.file, n))
        .collect();
        let path = paths.join(":");
        let key = (
            format!("{path} {:?}", spec.merge_blktrace),
            spec.replay.clone(),
        );
        let log = match self.read.get(&key) {
            Some(log) => log.clone(),
            None => {
                let log = Arc::new(match &spec.merge_blktrace {
                    Some(m) => {
                        warnings.push(format!(
                            "fio job `{}`: merge_blktrace_file: the traces are merged as \
                             fio documents it and replayed; fio itself (3.33, and through \
                             3.42) writes the merged file and then refuses the job (its \
                             init.c reads merge_blktrace_iologs()'s 0 as a failure), so on \
                             a real machine merge first (`fio --merge-blktrace-only`) and \
                             replay the merged file; blkcg-sim writes no merged file",
                            spec.name
                        ));
                        iolog::read_merged(&paths, m, &spec.replay)?
                    }
                    None => iolog::read_file(&path, &spec.replay)?,
                });
                *needed += (log.entries.len() * std::mem::size_of::<iolog::LogEntry>()) as u64;
                warnings.extend(log.warnings.iter().cloned());
                self.read.insert(key, log.clone());
                log
            }
        };
        let (end, at) = log.max_end;
        if end > capacity {
            let scale = end.div_ceil(capacity);
            return Err(format!(
                "{path}:{at}: the log's I/O there ends at byte {end}, past the device's \
                 {capacity}: replay it on a larger device, or with replay_scale={scale} \
                 (offsets divided by {scale})"
            ));
        }
        if let Some(at) = log.unaligned.filter(|_| spec.direct) {
            return Err(format!(
                "{path}:{at}: an I/O not on a 512-byte boundary, which direct=1 refuses \
                 (EINVAL); replay it with replay_align=4096, or buffered (direct=0)"
            ));
        }
        if !spec.iodepth_set && !p.sync_engine {
            // blktrace.c: the probed depth when the job sets none
            if let Some(d) = log.depth {
                p.iodepth = d;
            }
        }
        p.iolog.get_or_insert_default().replay = Some(log);
        Ok(())
    }

    /// File `name` of the run's folder for `job`'s log `what`: one plain file name, not
    /// one of the run's own, and no other job's (unless `shared`: fio's
    /// `per_job_logs=0` appends every job's rows to one file).
    fn claim(&mut self, what: &str, name: &str, job: &str, shared: bool) -> Result<(), String> {
        crate::report::outdir::check_label(name)
            .and_then(|()| {
                if crate::report::outdir::owned().contains(&name) {
                    Err(format!("`{name}` is one of the run's own files"))
                } else {
                    Ok(())
                }
            })
            .map_err(|e| {
                format!(
                    "{what}={name}: the log is written into the run's folder \
                     (--output DIR/<variant>/), as one plain file name: {e}"
                )
            })?;
        match self.written.insert(name.to_string(), job.to_string()) {
            Some(other) if !shared => Err(format!(
                "{what}={name}: job `{other}` writes that log too; give each job its own \
                 file"
            )),
            _ => Ok(()),
        }
    }

    /// fio's bw / lat / iops logs of job `p` (`spec`), the `thread`-th job of its fio
    /// (fio's `td->thread_number`, from 1): `PREFIX_TYPE.N.log` (`gen_log_name()`), the
    /// prefix the option's value or else the job's name; `write_lat_log` makes lat,
    /// slat and clat. With `per_job_logs=0` no number, and jobs of one prefix share a
    /// file (fio appends each job's rows at its end; here the rows come as they are
    /// made).
    fn stat_logs(
        &mut self,
        spec: &fiojob::JobSpec,
        p: &mut JobParams,
        thread: u32,
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
        use crate::sim::fio::statlog::{STAT_LOG_TYPES, StatLogSpec};
        let o = &spec.stat_logs;
        let option = [&o.bw, &o.iops, &o.lat, &o.lat, &o.lat];
        if option.iter().all(|x| x.is_none()) {
            return Ok(());
        }
        let mut files: [Option<Box<str>>; 5] = Default::default();
        for (k, ty) in STAT_LOG_TYPES.iter().enumerate() {
            let Some(prefix) = option[k] else {
                continue;
            };
            let prefix = if prefix.is_empty() {
                &spec.name
            } else {
                prefix
            };
            let name = match o.per_job {
                true => format!("{prefix}_{ty}.{thread}.log"),
                false => format!("{prefix}_{ty}.log"),
            };
            let what = ["write_bw_log", "write_iops_log", "write_lat_log"][k.min(2)];
            let shared = !o.per_job && self.written.contains_key(&name);
            self.claim(what, &name, &spec.name, !o.per_job)?;
            if shared && spec.clone_index == 0 {
                warnings.push(format!(
                    "fio job `{}`: per_job_logs=0: {name} holds several jobs' rows, in the \
                     order they were made (fio appends each job's at its end)",
                    spec.name
                ));
            }
            files[k] = Some(name.into());
        }
        let rt = p
            .prio
            .task
            .is_some_and(|t| t.class() == crate::blkcg::ioprio::IoprioClass::Rt);
        p.iolog.get_or_insert_default().stat = Some(StatLogSpec {
            files,
            avg_ms: o.avg_ms,
            max_value: o.max_value,
            rt,
        });
        Ok(())
    }
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
pub(crate) fn device_echo(w: &DeviceWrite, dev: &str) -> String {
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
    format!("{}: {}: {e}", sc.place(w.src_line), device_echo(w, dev))
}

/// The fio report of a run: one entry per job, or per group with group_reporting. The
/// jobs' options and names move into it (nothing reads the specs after the run).
fn fio_report(
    out: &RunOutput,
    specs: Vec<fiojob::JobSpec>,
    sources: &[usize],
    rounds: &[u32],
    tree: &CgroupTree,
    global: Vec<(String, String)>,
) -> RunReport {
    let mut reports = Vec::with_capacity(out.jobs.len());
    let mut keys = Vec::with_capacity(out.jobs.len());
    let mut messages = Vec::new();
    for (i, ((p, st, t), mut spec)) in out.jobs.iter().zip(specs).enumerate() {
        // fio's update_runtime(): whole µs since the start (utime_since_now()), then
        // rounded up to ms
        let runtime_ms = (t.finished.saturating_sub(t.stats_start) / 1_000).div_ceil(1_000);
        let engine = spec
            .options
            .iter()
            .chain(&global)
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
            name: std::mem::take(&mut spec.name),
            cgroup: tree.nodes[p.cgroup as usize].path.clone(),
            round: rounds[i],
            groupid: spec.groupid,
            jobs: 1,
            options: std::mem::take(&mut spec.options),
            elapsed_s: t.finished.div_ceil(NSEC_PER_SEC),
            runtime_ms,
            // a replay's are what its log holds (fio sets `td_ddir` from the log)
            dirs: match p.iolog.as_ref().and_then(|l| l.replay.as_ref()) {
                Some(log) => log.dirs(),
                None => [spec.rw.reads(), spec.rw.writes(), spec.rw.trims()],
            },
            stats: st.clone(),
            unified: spec.unified_rw_reporting,
            percentile_list: std::mem::take(&mut spec.percentile_list),
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
        reports.push(report);
        keys.push((spec.group_reporting, sources[i]));
    }
    fioreport::group(&mut reports, &keys);
    messages.sort_by_key(|m| m.at);
    let end = out.end;
    RunReport {
        version: "fio-3.33".into(),
        timestamp: fioreport::SIM_EPOCH + end / NSEC_PER_SEC,
        timestamp_ms: fioreport::SIM_EPOCH * 1000 + end / 1_000_000,
        time: fioreport::ctime(fioreport::SIM_EPOCH + end / NSEC_PER_SEC),
        global_options: global,
        jobs: reports,
        messages,
        device: out.device_counters.clone(),
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
        prio: None,
        lateness_ms: (r.stats.lateness.n > 0).then(|| {
            let l = &r.stats.lateness;
            // a bucket's value may pass the exact max: not in our own figure
            let p99 = percentiles(&l.hist, &[99.0])[0].min(l.max);
            [l.mean / 1e6, p99 as f64 / 1e6, l.max as f64 / 1e6]
        }),
    }
}

/// `f` over `items` on every core (rayon), results in the order of `items`; the first
/// failure in that order is the one reported, so errors are as deterministic as output.
pub(crate) fn in_parallel<I: Sync, T: Send>(
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

/// The figures bands look at, from one run.
fn metrics_of(run: &VariantRun) -> VariantMetrics {
    VariantMetrics {
        jobs: run.summaries.clone(),
        iostat: run.record.iostat.clone(),
        extra: run.extra.clone(),
    }
}

/// Run every variant of built-in seed `name` and evaluate its bands.
/// One seed's reproduction: its spec, every band's result, and the runs.
pub type Reproduction = (ReproSpec, Vec<repro::BandResult>, Vec<VariantRun>);

/// Reproduce seed `name`, with progress on stderr if `progress`.
pub fn reproduce(name: &str, progress: bool) -> Result<Reproduction, String> {
    reproduce_with(name, &Reporter::for_stderr(!progress))
}

pub(crate) fn reproduce_with(name: &str, progress: &Reporter) -> Result<Reproduction, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A distribution leaves out only options a policy needs: each is some policy's
    /// required `kconfig`, so none is named and then never checked.
    #[test]
    fn a_distributions_missing_options_are_policies_options() {
        for d in crate::kernel_version::DISTROS {
            for name in d.not_built {
                assert!(
                    POLICIES
                        .iter()
                        .flat_map(|p| p.kconfig)
                        .any(|o| o.required && o.name == *name),
                    "{}: {name}",
                    d.name
                );
            }
        }
    }

    /// A policy made with the queue exists without any write to its files, and one
    /// made later at its first write goes ahead of it on the rq-qos chain.
    #[test]
    fn a_policy_made_with_the_queue_needs_no_write() {
        let with_queue = PolicyDef {
            created: Creation::WithQueue(|_, limits, _| !limits.rotational),
            ..crate::iolatency::rqos::POLICY
        };
        let defs = [crate::iocost::rqos::POLICY, with_queue];
        let text = "[device]\nmodel = \"nullb\"\n[root]\n\"io.cost.qos\" = \"252:0 enable=1\"\n";
        let sc = Scenario::parse(text, "t.toml").unwrap();
        let r = sc.resolve(None).unwrap();
        let limits = crate::device::config::resolve(&r.device, 1)
            .unwrap()
            .0
            .limits()
            .clone();
        let setups: Vec<_> = defs.iter().map(|d| (d.configure)(&r).unwrap()).collect();
        let ids = |s: &Stack| -> Vec<_> { s.rq_qos.iter().map(|e| e.get_ref().id()).collect() };
        let stack = build_stack(&defs, &r, &setups, &r.tree, &limits, false, false);
        let (cost, latency) = (crate::iocost::rqos::ID, crate::iolatency::rqos::ID);
        assert_eq!(
            ids(&stack),
            [cost, latency],
            "made with the queue: at the tail"
        );
        // without a write, only the one made with the queue
        let bare = Scenario::parse("[device]\nmodel = \"nullb\"\n", "t.toml").unwrap();
        let r = bare.resolve(None).unwrap();
        let stack = build_stack(&defs, &r, &setups, &r.tree, &limits, false, false);
        assert_eq!(ids(&stack), [latency]);
    }

    /// blk-iocost formats its trace lines only for a recorder that takes them, and
    /// whether it does changes nothing else of the run.
    #[test]
    fn untaken_trace_lines_are_not_made_and_change_nothing() {
        let text = embedded::get("example-iocost-debt").unwrap();
        let sc = Scenario::parse(text, "example-iocost-debt.toml").unwrap();
        let go = |keep_trace| {
            let record = RecordOptions {
                keep: true,
                keep_trace,
                ..RecordOptions::default()
            };
            run_variant_traced(&sc, None, None, None, &Reporter::Quiet, false, record).unwrap()
        };
        let (traced, quiet) = (go(true), go(false));
        assert!(!traced.record.trace.is_empty());
        assert!(quiet.record.trace.is_empty());
        assert_eq!(traced.io_stat, quiet.io_stat);
        assert_eq!(traced.reports, quiet.reports);
        let periods = |r: &VariantRun| r.record.rows::<crate::iocost::ctl::PeriodRow>().len();
        assert_eq!(periods(&traced), periods(&quiet));
    }
}
