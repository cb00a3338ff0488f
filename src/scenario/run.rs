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
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use super::repro::{self, ReproSpec, VariantMetrics};
use super::resolve::{DeviceAction, DeviceWrite, IfaceFile, IfaceWrite, Resolved};
use super::{Scenario, embedded};
use crate::blkcg::{CgroupTree, DeviceTable};
use crate::device::QueueLimits;
use crate::iocost::ctl::PeriodRow;
use crate::iocost::{self, Iocost, IocostConfig, TimerMode};
use crate::report::fio::stats::percentiles;
use crate::report::fio::{self as fioreport, FioMessage, JobReport, RunReport};
use crate::report::plot::{Panel, Series, plot_panels};
use crate::report::summary::{self, JobSummary};
use crate::report::timeline::{self, JobLine};
use crate::sim::NSEC_PER_SEC;
use crate::sim::engine::{JobParams, Pipeline, RunOutput};
use crate::throttle::{self, Throttle, ThrottleConfig};
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
    pub progress: bool,
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
    /// blk-iocost: one row per period, and the trace lines.
    pub iocost_rows: Vec<PeriodRow>,
    pub trace: Vec<String>,
    /// blk-iocost as `iocost_monitor.py` shows it at the end of the run, as text and
    /// as its `--json` lines.
    pub monitor: String,
    pub monitor_json: String,
}

/// Read a fio source (command line or job-file text) of one cgroup.
pub fn parse_fio(text: &str, src: &str) -> Result<fiojob::FioJobs, String> {
    let t = text.trim();
    let no_env = |_: &str| None;
    let no_include = |f: &str| -> Result<String, String> {
        std::fs::read_to_string(f).map_err(|e| format!("cannot read include `{f}`: {e}"))
    };
    if is_cmdline(t) {
        let args: Vec<String> = split_shell_words(t.strip_prefix("fio").unwrap_or(t))?;
        fiojob::parse_cmdline_with(&args, &no_env, &no_include).map_err(|e| format!("{src}: {e}"))
    } else {
        fiojob::parse_jobfile(t, src, &no_env, &no_include).map_err(|e| e.to_string())
    }
}

/// Whether a scenario's `fio` text is a command line (else a job file).
pub fn is_cmdline(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("fio ") || t.starts_with("--") || t == "fio"
}

/// Split a command line as a POSIX shell would for plain words and quotes.
pub fn split_shell_words(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next()
                    && n != '\n'
                {
                    cur.push(n);
                    in_word = true;
                }
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("unterminated quote in the fio command line".into());
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

fn progress_bar(enabled: bool, len_ns: u64, label: &str) -> Option<ProgressBar> {
    if !enabled || len_ns == 0 {
        return None;
    }
    let pb = ProgressBar::new(len_ns / 1_000_000);
    pb.set_style(
        ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos}/{len} ms simulated")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(label.to_string());
    Some(pb)
}

/// The error for a refused interface write, naming the scenario line.
fn write_error(
    sc_file: &str,
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
        "{sc_file}{}: echo \"{}\" > {path}: {e}",
        w.src_line.map(|l| format!(":{l}")).unwrap_or_default(),
        w.line
    )
}

fn key_err(sc: &Scenario, table: &[&str], e: &crate::error::KeyError) -> String {
    let key = e.key.rsplit('.').next().unwrap_or(&e.key);
    sc.err_at(table, key, e.to_string()).to_string()
}

/// blk-throttle's behaviours for the variant's kernel version and `throttle.*` switches.
fn throttle_behaviour(sc: &Scenario, r: &Resolved) -> Result<throttle::ThrottleBehaviour, String> {
    let ov: Vec<(String, String)> = r
        .kernel
        .overrides
        .iter()
        .filter(|(k, _)| k.starts_with("throttle."))
        .cloned()
        .collect();
    throttle::behaviour_for(&r.kernel.version, r.kernel.throttling_low, &ov)
        .map_err(|e| key_err(sc, &["kernel"], &e))
}

/// blk-iocost's configuration: the period timer (`iocost.timer`), the behaviours for the
/// variant's kernel version and `iocost.*` switches, and the debug stats option.
fn iocost_config(sc: &Scenario, r: &Resolved) -> Result<IocostConfig, String> {
    let mut timer = TimerMode::Jiffies { hz: r.kernel.hz };
    let mut ov = Vec::new();
    for (k, v) in r
        .kernel
        .overrides
        .iter()
        .filter(|(k, _)| k.starts_with("iocost."))
    {
        if k == "iocost.timer" {
            timer = match v.as_str() {
                "jiffies" => TimerMode::Jiffies { hz: r.kernel.hz },
                "exact" => TimerMode::Exact,
                _ => {
                    return Err(sc
                        .err_at(
                            &["kernel"],
                            k,
                            format!(
                                "`kernel.{k}`: `{v}` is not accepted; accepted: jiffies, exact"
                            ),
                        )
                        .to_string());
                }
            };
        } else {
            ov.push((k.clone(), v.clone()));
        }
    }
    let behaviour =
        iocost::behaviour_for(&r.kernel.version, &ov).map_err(|e| key_err(sc, &["kernel"], &e))?;
    Ok(IocostConfig {
        timer,
        behaviour,
        debug_stats: r.kernel.debug_stats,
    })
}

/// Build and run one variant (None: the scenario without variants).
pub fn run_variant(
    sc: &Scenario,
    variant: Option<&str>,
    kernel_version: Option<&str>,
    seed: Option<u64>,
    progress: bool,
) -> Result<VariantRun, String> {
    run_variant_traced(sc, variant, kernel_version, seed, progress, false)
}

/// `run_variant`, optionally with the controllers' event logs (blk-throttle's
/// blktrace-style `throtl` lines) collected into `VariantRun::trace`.
pub fn run_variant_traced(
    sc: &Scenario,
    variant: Option<&str>,
    kernel_version: Option<&str>,
    seed: Option<u64>,
    progress: bool,
    trace_on: bool,
) -> Result<VariantRun, String> {
    let mut r = sc.resolve(variant).map_err(|e| e.to_string())?;
    if let Some(v) = kernel_version {
        r.kernel.version = v.to_string();
    }
    if let Some(s) = seed {
        r.seed = s;
    }
    let dev = crate::device::config::build(&r.device, r.seed)
        .map_err(|e| key_err(sc, &["device"], &e))?;
    let limits = dev.limits().clone();
    let devs = DeviceTable {
        disks: vec![(limits.major, limits.minor)],
    };
    let mut warnings = Vec::new();
    // fio jobs, in the order the scenario lists cgroups
    let mut params: Vec<JobParams> = Vec::new();
    let mut specs: Vec<fiojob::JobSpec> = Vec::new();
    // which fio process (scenario `fio` entry) each job belongs to
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
        let jobs = parse_fio(&src.text, &where_)?;
        warnings.extend(jobs.warnings.iter().map(|w| format!("{where_}: {w}")));
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
                Some(p) => tree.ensure(p),
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
            params.push(p);
            specs.push(spec);
            sources.push(src_idx);
        }
    }
    if params.is_empty() {
        return Err(format!(
            "{}: no fio job to run{}; give a cgroup a `fio = \"fio --name=...\"`",
            sc.file,
            variant
                .map(|v| format!(" in variant `{v}`"))
                .unwrap_or_default()
        ));
    }
    // the progress bar's horizon: the longest job of each round, round after round
    let mut round_ends: Vec<crate::sim::Ns> = Vec::new();
    for (p, &src) in params.iter().zip(&sources) {
        let k = r.fio[src].round as usize;
        if round_ends.len() <= k {
            round_ends.resize(k + 1, 0);
        }
        round_ends[k] = round_ends[k].max(p.startdelay + p.ramp + p.runtime.unwrap_or(0));
    }
    let mut pipe = Pipeline::new(dev, params, tree.len(), r.host, r.seed);
    pipe.set_duration(r.duration);
    // blk-throttle exists once a cgroup has an io.max line
    if r.writes.iter().any(|w| w.file == IfaceFile::IoMax) {
        let b = throttle_behaviour(sc, &r)?;
        pipe.throttle = Some(Throttle::new(
            ThrottleConfig::new(r.kernel.hz, b),
            &tree,
            &limits,
        ));
        if let Some(t) = pipe.throttle.as_mut() {
            t.set_trace(trace_on);
        }
    }
    // blk-iocost exists once the root has io.cost.* or a cgroup has io.weight
    if r.writes.iter().any(|w| w.file != IfaceFile::IoMax) {
        let cfg = iocost_config(sc, &r)?;
        let mut ioc = Iocost::new(cfg, &tree, &limits);
        if let Some(pct) = r.state.iocost_vrate_pct {
            ioc.set_base_vrate_pct(pct);
        }
        pipe.iocost = Some(ioc);
    }
    // interface writes and device actions at t = 0 now, later ones from the event loop
    let mut later = Vec::new();
    for w in &r.writes {
        if w.at == 0 {
            apply_write(&mut pipe, w, &devs).map_err(|e| write_error(&sc.file, w, &tree, e))?;
        } else {
            pipe.schedule_config(w.at, later.len() as u32);
            later.push(Later::Iface(w.clone()));
        }
    }
    let dev_name = limits.name.clone();
    for w in &r.device_writes {
        if w.at == 0 {
            apply_device(&mut pipe, w).map_err(|e| device_error(&sc.file, w, &dev_name, e))?;
        } else {
            pipe.schedule_config(w.at, later.len() as u32);
            later.push(Later::Device(w.clone()));
        }
    }
    let label = variant.unwrap_or("default").to_string();
    // the progress bar's length: the cap, or the longest job's planned time
    let horizon = r.duration.unwrap_or_else(|| round_ends.iter().sum());
    let pb = progress_bar(progress, horizon, &label);
    let mut late_errors = Vec::new();
    let out = pipe.run(
        |p, i| match &later[i as usize] {
            Later::Iface(w) => {
                if let Err(e) = apply_write(p, w, &devs) {
                    late_errors.push(write_error(&sc.file, w, &tree, e));
                }
            }
            Later::Device(w) => {
                if let Err(e) = apply_device(p, w) {
                    late_errors.push(device_error(&sc.file, w, &dev_name, e));
                }
            }
        },
        |now| {
            if let Some(pb) = &pb {
                pb.set_position(now / 1_000_000);
            }
        },
    );
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    warnings.extend(late_errors);
    let rounds: Vec<u32> = sources.iter().map(|&s| r.fio[s].round).collect();
    let fio = fio_report(&out, &specs, &sources, &rounds, &tree, &global_options);
    let summaries = fio.jobs.iter().map(job_summary).collect();
    let mut out = out;
    let mut extra = BTreeMap::new();
    let mut iocost_rows = Vec::new();
    let mut trace = match out.throttle.as_mut() {
        Some(t) => t.take_trace(),
        None => Vec::new(),
    };
    if let Some(ioc) = out.iocost.as_mut() {
        iocost_rows = ioc.take_rows();
        trace.extend(ioc.take_trace());
        // the bug of the no-completion seed: a period with no completion and lagging
        // IO that drops a positive busy_level to 0
        let resets = iocost_rows
            .iter()
            .filter(|r| {
                r.nr_done == 0 && r.nr_lagging > 0 && r.busy_before > 0 && r.busy_after == 0
            })
            .count();
        extra.insert("iocost.no_completion_resets".to_string(), resets as f64);
    }
    let io_stat = io_stat_text(&mut out, &tree, &limits);
    // iocost_monitor.py's view of the device at the end of the run
    let end = out.end;
    let (monitor, monitor_json) = out
        .iocost
        .as_mut()
        .map(|ioc| (ioc.monitor_text(end), ioc.monitor_json(end)))
        .unwrap_or_default();
    Ok(VariantRun {
        label,
        resolved: Resolved { tree, ..r },
        limits,
        out,
        specs,
        global_options,
        summaries,
        fio,
        warnings,
        io_stat,
        extra,
        iocost_rows,
        trace,
        monitor,
        monitor_json,
    })
}

/// A scheduled write, applied from the event loop.
enum Later {
    Iface(IfaceWrite),
    Device(DeviceWrite),
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
fn device_error(sc_file: &str, w: &DeviceWrite, dev: &str, e: String) -> String {
    format!(
        "{sc_file}{}: {}: {e}",
        w.src_line.map(|l| format!(":{l}")).unwrap_or_default(),
        device_echo(w, dev)
    )
}

/// `echo LINE > FILE` on the running pipeline.
fn apply_write(p: &mut Pipeline, w: &IfaceWrite, devs: &DeviceTable) -> Result<(), String> {
    let now = p.queue_mut().now();
    match w.file {
        IfaceFile::IoMax => {
            let (t, q) = p.throttle_and_queue();
            match t {
                Some(t) => t
                    .write_io_max(now, w.cgroup, &w.line, devs, q)
                    .map_err(|e| e.to_string()),
                None => Err("blk-throttle is not set up".into()),
            }
        }
        f => {
            let Some(ioc) = p.iocost.as_mut() else {
                return Err("blk-iocost is not set up".into());
            };
            let r = match f {
                IfaceFile::IoCostQos => ioc.write_qos(now, &w.line, devs),
                IfaceFile::IoCostModel => ioc.write_model(now, &w.line, devs),
                _ => ioc.write_weight(now, w.cgroup, &w.line, devs),
            };
            r.map_err(|e| e.to_string())
        }
    }
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
            match out.iocost.as_ref() {
                Some(ioc) => {
                    let k = ioc.io_stat(i as u32);
                    if k.is_empty() {
                        k
                    } else {
                        format!(" {}", k.trim())
                    }
                }
                None => String::new(),
            }
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

/// `blkcg-sim run`.
pub fn run_command(sc: &Scenario, o: &RunOptions) -> Result<u8, String> {
    let plan = plan(sc, &o.variants, &o.kernels)?;
    let mut runs = Vec::new();
    for (v, k) in &plan {
        let mut run =
            run_variant_traced(sc, v.as_deref(), k.as_deref(), o.seed, o.progress, o.trace)?;
        run.label = run_label(v, k);
        for w in &run.warnings {
            eprintln!("warning: {w}");
        }
        runs.push(run);
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
            stdout.push_str(&summary::iostat_text(&run.limits.name, &run.out.iostat));
            stdout.push_str(&run.io_stat);
            stdout.push_str(&run.monitor);
        }
        if let Some(dir) = &o.output {
            write_outputs(&dir.join(&run.label), run)?;
        } else if o.trace {
            for l in &run.trace {
                eprintln!("{l}");
            }
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
        let path = dir.join("ab.txt");
        std::fs::write(&path, ab).map_err(|e| format!("{}: {e}", path.display()))?;
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

/// Every output file of one run under `dir`.
fn write_outputs(dir: &Path, run: &VariantRun) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let tree = &run.resolved.tree;
    write("summary.txt", &summary::summary_table(&run.summaries))?;
    write("fio.json", &fioreport::json::to_json(&run.fio, false))?;
    write("fio.txt", &fioreport::text::to_normal(&run.fio))?;
    write("iostat.csv", &summary::iostat_csv(&run.out.iostat))?;
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
    if !run.iocost_rows.is_empty() {
        write(
            "timeline.csv",
            &timeline::iocost_csv(&run.iocost_rows, tree),
        )?;
        write("trace.txt", &(run.trace.join("\n") + "\n"))?;
        if let Err(e) = timeline::plot_iocost(
            &dir.join("iocost"),
            &format!("blk-iocost: {}", run.label),
            &run.iocost_rows,
            tree,
            &jobs,
        ) {
            eprintln!("warning: plot not drawn: {e}");
        }
    }
    if !run.out.throttle_rows.is_empty() {
        write(
            "throttle.csv",
            &timeline::throttle_csv(&run.out.throttle_rows, tree),
        )?;
    }
    let iostat_panels = vec![Panel {
        y_label: "MiB/s".into(),
        series: vec![
            Series {
                name: "read".into(),
                points: run
                    .out
                    .iostat
                    .iter()
                    .map(|r| (r.t as f64, r.r_bytes as f64 / 1048576.0))
                    .collect(),
            },
            Series {
                name: "write".into(),
                points: run
                    .out
                    .iostat
                    .iter()
                    .map(|r| (r.t as f64, r.w_bytes as f64 / 1048576.0))
                    .collect(),
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
    let sc = Scenario::parse(&text, "<command line>").map_err(|e| e.to_string())?;
    let opts = RunOptions {
        variants: vec![],
        kernels: vec![],
        format,
        output: None,
        seed: None,
        timeline: false,
        progress: false,
        trace: false,
    };
    run_command(&sc, &opts)
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,:/+%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `blkcg-sim check`: validate every variant and print what it resolves to.
pub fn check_command(sc: &Scenario, variants: &[String]) -> Result<u8, String> {
    let plan = plan(sc, variants, &[])?;
    for (v, _) in plan {
        let r = sc.resolve(v.as_deref()).map_err(|e| e.to_string())?;
        let (dev, keys) = crate::device::config::resolve(&r.device, r.seed)
            .map_err(|e| key_err(sc, &["device"], &e))?;
        let l = dev.limits();
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
        let b = throttle_behaviour(sc, &r)?;
        println!("  throttle {b}");
        println!("  iocost   {}", iocost_config(sc, &r)?);
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
        for f in &r.fio {
            if f.text.trim().is_empty() {
                continue;
            }
            let jobs = parse_fio(&f.text, &sc.file)?;
            for j in &jobs.jobs {
                println!(
                    "  job {:<12} cgroup={} rw={:?} bs={:?} iodepth={} engine={:?} runtime={}ns",
                    summary::job_label("", &j.name, f.round),
                    j.cgroup
                        .as_deref()
                        .unwrap_or(&r.tree.nodes[f.cgroup as usize].path),
                    j.rw,
                    j.bs_min,
                    j.iodepth,
                    j.ioengine,
                    j.runtime
                );
            }
            for w in jobs.warnings {
                println!("  warning: {w}");
            }
        }
    }
    println!("ok");
    Ok(0)
}

/// The figures bands look at, from one run.
fn metrics_of(run: &VariantRun) -> VariantMetrics {
    VariantMetrics {
        jobs: run.summaries.clone(),
        iostat: run.out.iostat.clone(),
        extra: run.extra.clone(),
    }
}

/// `blkcg-sim repro`: run the built-in seeds and check every band.
pub fn repro_command(names: &[String], json: bool, progress: bool) -> Result<u8, String> {
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
    for name in chosen {
        let (spec, results, runs) = reproduce(name, progress)?;
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
pub fn reproduce(
    name: &str,
    progress: bool,
) -> Result<(ReproSpec, Vec<repro::BandResult>, Vec<VariantRun>), String> {
    let text = embedded::get(name).ok_or_else(|| format!("no built-in scenario `{name}`"))?;
    let sc = Scenario::parse(text, &format!("{name}.toml")).map_err(|e| e.to_string())?;
    let spec =
        ReproSpec::from_table(&sc.table)?.ok_or_else(|| format!("{name} has no [repro] table"))?;
    let mut runs = Vec::new();
    let mut metrics = BTreeMap::new();
    for v in sc.variants() {
        let run = run_variant(&sc, Some(&v), None, None, progress)?;
        metrics.insert(v.clone(), metrics_of(&run));
        runs.push(run);
    }
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
        let val = if let Ok(i) = v.parse::<i64>() {
            toml::Value::Integer(i)
        } else if let Ok(f) = v.parse::<f64>() {
            toml::Value::Float(f)
        } else if let Ok(b) = v.parse::<bool>() {
            toml::Value::Boolean(b)
        } else {
            toml::Value::String(v.to_string())
        };
        t.insert(k.to_string(), val);
    }
    Ok(t)
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
