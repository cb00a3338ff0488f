//! `blkcg-sim tune ...`: "what should I write?": `tune SCENARIO --goal ... --over ...`
//! ([`GoalArgs`], from a goal to a setting), or a clap subcommand ([`TuneCmd`]):
//! `model` (the kernel's iocost_coef_gen.py), `qos` (resctl-bench's iocost-qos /
//! iocost-tune), `iomax` (the loosest io.max keeping a cgroup isolated). The work is
//! `crate::tune`'s; here the options become its option structs.

// The doc comments below are the commands' --help text, verbatim (`[device]`,
// `IOCOST_MODEL_<SOL>` are meant for a terminal, not links or HTML).
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::{Stderr, load, scenario_named};
use crate::progress::Reporter;
use crate::scenario::Scenario;
use crate::sweep;
use crate::tune;

/// `blkcg-sim tune`: a goal's search, or one of the subcommands.
#[derive(Args)]
pub struct TuneArgs {
    #[command(subcommand)]
    what: Option<TuneCmd>,
    #[command(flatten)]
    goal: GoalArgs,
}

/// `tune --help`'s text on the goal search, after the options.
pub const GOAL_HELP: &str = "\
From a goal to a setting:
  blkcg-sim tune SCENARIO --goal 'FIGURE OP VALUE' [--goal ...] [--maximize FIGURE | --minimize FIGURE]
                 --over KEY=RANGE [--over ...] [--seeds N] [--refine N] [--output DIR]

A FIGURE is WHO.DIR.STAT: WHO a cgroup (all its jobs) or cgroup/job; DIR read, write,
trim or total; STAT iops, bw (MiB/s), clat_mean, clat_max, lat_mean, slat_mean or
clat_pN (ms; clat_p99, clat_p99.9, from the jobs' clat histograms merged). A latency
where nothing completed is infinite (a starved cgroup misses a latency goal). OP is <=,
<, >= or >; VALUE in the figure's unit, or with one: 5ms, 500us; 40MiB/s, 10MB/s; 3k.

KEY is any key of `blkcg-sim sweep --set` (io.cost.qos fields, io.weight, io.max and
io.latency tokens, elevator tunables, switches, kernel.version); RANGE a list V1,V2,...
or LO..HI:STEP or LO..HI/N (N values evenly spaced). Every point of the grid runs with
--seeds seeds; a point meets the goals when every seed does (the worst seed is judged);
the objective is the mean over seeds; the best point is the met one with the largest
margin among those within 1% of the best objective (without one: the largest margin).
--refine N rounds then try the midpoints around the best point on each numeric axis.

Prints what the runs assumed (kernel version and HZ, host, the device's latency model,
and the distributions' presets when a default no distribution ships was used), every
point, the best setting with its margin to each goal, how the goals fare one step either
side of it on each axis, and the setting as lines to write: cgroupfs echos, a systemd
slice drop-in (IOWeight=, IO*Max=, IODeviceLatencyTargetSec=), an udev hwdb entry for
the root's io.cost lines, the elevator's sysfs file, and the `blkcg-sim sweep` run of it.
Exit status 1 when no point meets the goals. --output DIR writes tune-goal.txt,
tune-goal.csv (every run), tune-goal.png/svg (the front: the objective against the first
goal's figure), best.toml (the scenario with the setting, for run and validate) and
report.html (all of it on one page, the front as an interactive chart).

Example (docs/examples/p20.toml: two tenants on an Azure P20-like disk's null_blk stand-in):
  blkcg-sim tune p20.toml --variant nullb --goal 'web.read.clat_p99 <= 5ms' \\
      --maximize batch.write.bw --over cgroup.web.io.weight=100..1000:300 \\
      --over root.io.cost.qos:rlat=1000..9000:2000 --output out/";

/// The goal search's options: `tune SCENARIO --goal ... --over ...`.
#[derive(Args)]
pub struct GoalArgs {
    /// The scenario to tune (a file or a built-in name), with --goal and --over.
    scenario: Option<String>,
    /// FIGURE OP VALUE, e.g. 'web.read.clat_p99 <= 5ms' (repeatable: all must hold).
    #[arg(long, value_name = "GOAL")]
    goal: Vec<String>,
    /// The figure to make as large as the goals allow, e.g. batch.write.bw.
    #[arg(long, value_name = "FIGURE", conflicts_with = "minimize")]
    maximize: Option<String>,
    /// The figure to make as small as the goals allow.
    #[arg(long, value_name = "FIGURE")]
    minimize: Option<String>,
    /// KEY=V1,V2,... | KEY=LO..HI:STEP | KEY=LO..HI/N: an axis of the search (repeatable).
    #[arg(long, value_name = "KEY=RANGE")]
    over: Vec<String>,
    /// The variant to tune (needed when the scenario has variants).
    #[arg(long)]
    variant: Option<String>,
    /// Seeds per point (device jitter, random offsets); the worst is judged.
    #[arg(long, default_value_t = 3)]
    seeds: u32,
    /// Rounds of midpoints around the best point on the numeric axes.
    #[arg(long, default_value_t = 1)]
    refine: u32,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write tune-goal.txt, tune-goal.csv, the front picture and best.toml here.
    #[arg(long)]
    output: Option<PathBuf>,
}

/// `blkcg-sim tune ...`: a subcommand, or the goal search.
pub fn tune_args_command(t: TuneArgs, progress: Reporter) -> Result<u8, String> {
    if let Some(what) = t.what {
        return tune_command(what, progress);
    }
    let g = t.goal;
    let Some(scenario) = g.scenario else {
        return Err(
            "tune: give a scenario with --goal and --over, or a subcommand: model, qos, iomax (blkcg-sim tune --help)"
                .into(),
        );
    };
    check_jobs("", g.jobs)?;
    bound("", "seeds", g.seeds, 1, 1000, "seeds")?;
    bound("", "refine", g.refine, 0, 10, "rounds")?;
    let goals = g
        .goal
        .iter()
        .map(|s| tune::goal::Goal::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let objective = match (g.maximize, g.minimize) {
        (Some(f), _) => Some((f, true)),
        (None, Some(f)) => Some((f, false)),
        _ => None,
    }
    .map(|(f, maximize)| {
        tune::goal::Figure::parse(&f)
            .map(|figure| tune::goal::Objective { figure, maximize })
            .map_err(|e| format!("--{} {e}", if maximize { "maximize" } else { "minimize" }))
    })
    .transpose()?;
    let sc = load(&scenario)?;
    let o = tune::goal::GoalOptions {
        file: scenario_file(scenario),
        variant: g.variant,
        goals,
        objective,
        over: g.over,
        seeds: g.seeds,
        refine: g.refine,
        jobs: g.jobs.unwrap_or_else(sweep::pool::cores),
        output: g.output,
        progress,
    };
    tune::goal::goal_command(&sc, &o, &mut |s| print!("{s}"), &Stderr)
}

/// How the printed commands name `given`: as `load` reads it, a path that exists,
/// else a built-in scenario's name.
fn scenario_file(given: String) -> tune::protect::ScenarioFile {
    if std::path::Path::new(&given).exists() {
        tune::protect::ScenarioFile::Path(given)
    } else {
        tune::protect::ScenarioFile::BuiltIn(given.trim_end_matches(".toml").into())
    }
}

/// `blkcg-sim tune`'s subcommands.
#[derive(Subcommand)]
pub enum TuneCmd {
    /// io.cost.model for a device, as the kernel's tools/cgroup/iocost_coef_gen.py finds it.
    ///
    /// Runs the script's six fio jobs against the simulated device (each
    /// `fio --direct=1 --ioengine=libaio --name=coef --readwrite=RW --iodepth=QD
    /// --blocksize=BS --time_based --runtime=DURATION --numjobs=N` on a 16 GiB test file):
    /// rbps = read QD1 in 128 MiB blocks, rseqiops = read QD64 4 KiB, rrandiops = randread
    /// QD64 4 KiB, and the same three writing; each figure is the sum of fio's
    /// read.bw_bytes + write.bw_bytes over the jobs (IOPS: / 4096, rounded as Python
    /// does). Prints the script's line, ready for /sys/fs/cgroup/io.cost.model:
    ///   MAJ:MIN rbps=... rseqiops=... rrandiops=... wbps=... wseqiops=... wrandiops=...
    ///
    /// --qos adds resctl-demo rd-agent's QoS heuristic as a second line (an io.cost.qos
    /// line enabling blk-iocost): rpct = wpct = 95 on a non-rotational device, else 50;
    /// rlat / wlat = 1.5 x the clat percentile nearest pct of a random 4 KiB job at 90%
    /// of the measured random IOPS; min=60 max=100.
    ///
    /// The six jobs run in parallel. The script's default of 120 s per job is kept: a
    /// very fast device model (millions of IOPS) takes a while to simulate for that long,
    /// so try --duration 10 first.
    ///
    /// Examples:
    ///   blkcg-sim tune model --device cloud:preset=azure-p20 --qos
    ///   blkcg-sim tune model --device nullb:irqmode=2,completion_nsec=100000 --duration 10
    ///   blkcg-sim tune model --device my.toml     (its [device], [kernel] and [host])
    #[command(verbatim_doc_comment)]
    Model {
        /// A device SPEC (MODEL[:key=value,...] with MODEL nullb, ssd, hdd or cloud, as
        /// `blkcg-sim fio --device`) or a scenario (file or built-in name) whose [device],
        /// [kernel] and [host] to use.
        #[arg(long, value_name = "SPEC|SCENARIO")]
        device: String,
        /// Also print rd-agent's QoS heuristic as an io.cost.qos line.
        #[arg(long)]
        qos: bool,
        /// Seconds per fio job (the script's --duration).
        #[arg(long, default_value_t = 120)]
        duration: u64,
        /// Block size of the rbps/wbps jobs in MiB (the script's --seqio-block-mb).
        #[arg(long, default_value_t = 128)]
        seqio_block_mb: u64,
        /// Queue depth of the sequential 4 KiB jobs (--seq-depth).
        #[arg(long, default_value_t = 64)]
        seq_depth: u32,
        /// Queue depth of the random 4 KiB jobs (--rand-depth).
        #[arg(long, default_value_t = 64)]
        rand_depth: u32,
        /// fio jobs per run (--numjobs).
        #[arg(long, default_value_t = 1)]
        numjobs: u32,
        /// Size of the test file in GiB (--testfile-size-gb).
        #[arg(long, default_value_t = 16.0)]
        testfile_size_gb: f64,
        /// Worker threads (default: the machine's cores).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// io.cost.qos (and a scaled io.cost.model) protecting one cgroup, as resctl-bench's
    /// iocost-qos and iocost-tune find them, with a picture of the trade-off.
    ///
    /// The --protect cgroup's fio jobs are the workload to protect (a latency-sensitive
    /// service: give it a rate, e.g. rate_iops, or think time); the scenario's other cgroups
    /// are the antagonists. vrate is fixed (min = max) at each point of resctl-bench's axis
    /// (iocost-tune's iocost-qos run: vrate-max=125, vrate-intvs=25: 125, 120, ..., 5), each
    /// with --seeds seeds, beside two references per seed: iocost off, and the protected
    /// cgroup alone (iocost off) as its target. The base io.cost.model and QoS latencies
    /// are the scenario's root lines (else `tune model --qos` measures them).
    ///
    /// Per vrate (mean ±sd over seeds): the work done (MiB/s of all jobs) and its loss
    /// against iocost off, the protected cgroup's clat p99 and p99.9, isolation (resctl's
    /// isol-05: the 5th percentile over 1 s windows of the protected jobs' completions /
    /// their alone IOPS, capped at 1; >= 90% is isolated), device read/write p99 (each
    /// request's time on the device); the vrates on the Pareto front of isolation against
    /// work are starred. Isolation holds over a range: below it the fixed vrate starves
    /// the protected cgroup itself, above it the others' IO gets to the device first.
    ///
    /// min = max does not set vrate: as in the kernel (ioc_timer_fn() ->
    /// ioc_adjust_base_vrate()), vrate moves toward [min, max] only while busy_level is
    /// not 0 -- the QoS targets missed, or cgroups throttled with the device to spare --
    /// by 4% a period. So each row also shows the vrate in force over the run's periods,
    /// mean (min-max), and AT%: the periods at the vrate tried. A vrate not reached in
    /// every seed's run is marked (never, K/N seeds) and left out of the fits, the front
    /// and the solutions. When no period of any run missed the targets, the report says
    /// so instead of giving solutions.
    ///
    /// Then resctl-bench's named solutions, solved on piecewise-linear fits of those
    /// figures: naive (vrate 75-100 on p99 read/write latency), bandwidth (the highest
    /// vrate keeping isolation), isolated-bandwidth (the most isolated work, between
    /// isolation and bandwidth), isolation (the highest vrate at the protected cgroup's
    /// lowest p99) -- each as io.cost.model and io.cost.qos lines scaled so that
    /// min = max = 100: the `echo "..." > /sys/fs/cgroup/io.cost.qos` lines to write, the
    /// `blkcg-sim sweep FILE --set root.io.cost.qos=...` run of the scenario's file with
    /// them (a built-in scenario: its file from `blkcg-sim scenarios NAME > NAME.toml`),
    /// and systemd hwdb lines (IOCOST_SOLUTIONS=..., IOCOST_MODEL_<SOL>=...,
    /// IOCOST_QOS_<SOL>=...). A [[schedule]] entry writing the root's io.cost.model or
    /// io.cost.qos, which every run writes, is refused.
    ///
    /// --output DIR writes tune-qos.txt (what is printed), tune-qos.csv (every run, with
    /// its iocost periods and vrate mean/min/max, the periods at the vrate tried and
    /// those missing the targets, and whether it was fitted), tune-qos.hwdb (when there
    /// are solutions), tune-qos.png/svg (each figure against vrate with the fits and the
    /// solutions), tune-qos-pareto.png/svg (protection against throughput) and
    /// report.html (all of it on one page, each picture as an interactive chart).
    ///
    /// Example (the iocost seed's cloud disk and workloads):
    ///   blkcg-sim tune qos iocost-no-completion --variant after --protect cgB --output out/
    #[command(verbatim_doc_comment)]
    Qos {
        #[command(flatten)]
        target: ProtectTarget,
        /// Lowest vrate (%); 0: one click above 0, as resctl-bench's iocost-qos.
        #[arg(long, default_value_t = 0.0)]
        vrate_min: f64,
        /// Highest vrate (%).
        #[arg(long, default_value_t = 125.0)]
        vrate_max: f64,
        /// Points on the vrate axis.
        #[arg(long, default_value_t = 25)]
        vrate_intvs: u32,
        /// Seconds per fio job when the model must be measured (tune model --duration).
        #[arg(long, default_value_t = 120)]
        model_duration: u64,
        #[command(flatten)]
        run: ProtectRun,
        /// Write the report, every run's figures, hwdb lines and pictures here.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// The least restrictive io.max limit on another cgroup that keeps one cgroup protected.
    ///
    /// --limit is one sweep axis (see `blkcg-sim sweep --help`) on the io.max line of a
    /// cgroup other than --protect, or a token of it, e.g.
    /// --limit cgroup.batch.io.max:wbps=10485760,20971520,41943040,max. Per seed it runs
    /// the protected cgroup alone (its target), the scenario as written, and each value.
    /// A value meets the goal when the protected cgroup stays isolated (resctl-bench's
    /// isol-05 >= 90%: the 5th percentile over 1 s windows of its completions / its
    /// alone IOPS) and, with --p99-ms X, its clat p99 is at most X ms (means over seeds).
    /// Values are ordered from the most to the least restrictive (by number, `max` last,
    /// when all are numbers or max; else as given).
    ///
    /// A [[schedule]] entry that rewrites the key (for a token, a line with that token;
    /// for the whole line, any) is refused: the value tried would be in force for part
    /// of the run only, or none of it.
    ///
    /// Prints each value's work (all jobs, and the others alone), loss against the
    /// scenario as written, the protected p99/p99.9 and isolation, and BOUND%: the share
    /// of blk-throttle's 100 ms samples (throttle.csv) at which the limited cgroup's bios
    /// waited on its limits in the key's direction (tg_may_dispatch() said wait; -: no
    /// limit). Then the answer: the least restrictive value meeting the goal, the io.max
    /// line to write, the `blkcg-sim sweep FILE --set KEY=VALUE` run of the scenario's
    /// file with it, whether every more restrictive value meets it too, and what it
    /// costs the others; with no value meeting the goal, whether they bound at all.
    /// --output DIR writes tune-iomax.txt, tune-iomax.csv (every run, with its
    /// throttle samples and those with bios waiting), tune-iomax.png/svg and report.html
    /// (all of it on one page, the picture as interactive charts).
    ///
    /// Example:
    ///   blkcg-sim tune iomax my.toml --protect web --limit cgroup.batch.io.max:wiops=250,500,1000,2000,max
    #[command(verbatim_doc_comment)]
    Iomax {
        #[command(flatten)]
        target: ProtectTarget,
        /// KEY=V1,V2,...: another cgroup's io.max line or token and the values to try.
        #[arg(long, value_name = "KEY=V1,V2,...")]
        limit: String,
        /// Also keep the protected cgroup's clat p99 at most this many ms.
        #[arg(long)]
        p99_ms: Option<f64>,
        #[command(flatten)]
        run: ProtectRun,
        /// Write the report, every run's figures and a picture here.
        #[arg(long)]
        output: Option<PathBuf>,
    },
}

/// What a protecting tuner (`tune qos`, `tune iomax`) protects, and in which scenario.
#[derive(Args)]
pub struct ProtectTarget {
    /// The scenario: a file or a built-in name.
    scenario: String,
    /// The cgroup to protect (its path, as in [cgroup."PATH"]).
    #[arg(long)]
    protect: String,
    /// The variant to tune (needed when the scenario has variants).
    #[arg(long)]
    variant: Option<String>,
}

/// How a protecting tuner judges isolation, and how much it runs.
#[derive(Args)]
pub struct ProtectRun {
    /// Isolation percentile over 1 s windows (resctl-bench isol-pct).
    #[arg(long, default_value_t = 5.0)]
    isol_pct: f64,
    /// Isolation threshold, a fraction (resctl-bench isol-thr).
    #[arg(long, default_value_t = 0.9)]
    isol_thr: f64,
    /// Seeds per setting tried (device jitter, random offsets): error bars.
    #[arg(long, default_value_t = 3)]
    seeds: u32,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
}

impl ProtectTarget {
    /// The scenario, and the options `crate::tune::protect` takes.
    fn options(
        self,
        run: ProtectRun,
        output: Option<PathBuf>,
        progress: Reporter,
    ) -> Result<(Scenario, tune::protect::ProtectOptions), String> {
        let sc = load(&self.scenario)?;
        let file = scenario_file(self.scenario);
        let o = tune::protect::ProtectOptions {
            file,
            variant: self.variant,
            protect: self.protect,
            isol_pct: run.isol_pct,
            isol_thr: run.isol_thr,
            seeds: run.seeds,
            jobs: run.jobs.unwrap_or_else(sweep::pool::cores),
            output,
            progress,
        };
        Ok((sc, o))
    }
}

/// `blkcg-sim tune`: run the chosen procedure.
/// `v` of option `--opt` of `tune CMD` within `lo..=hi` (a float: finite), else a
/// one-line error naming the option and the accepted range.
fn bound<T: PartialOrd + std::fmt::Display>(
    cmd: &str,
    opt: &str,
    v: T,
    lo: T,
    hi: T,
    what: &str,
) -> Result<T, String> {
    // written so that NaN fails too
    if v >= lo && v <= hi {
        return Ok(v);
    }
    // "" is the goal search, `tune SCENARIO ...`
    let sub = if cmd.is_empty() {
        String::new()
    } else {
        format!(" {cmd}")
    };
    Err(format!(
        "tune{sub}: --{opt} {v} is not accepted: expected {what} in {lo}..={hi}"
    ))
}

/// The longest simulated run of one job or point, s: a day.
pub const MAX_DURATION_S: u64 = 86_400;
/// The most threads `--jobs` may ask for.
pub const MAX_THREADS: usize = 1024;
/// blk-iocost clamps vrate at VRATE_MAX_PPM, 10000%: an axis past it would measure
/// the same point again under another name.
pub const MAX_VRATE_PCT: f64 = 10_000.0;

fn check_jobs(cmd: &str, jobs: Option<usize>) -> Result<(), String> {
    if let Some(j) = jobs {
        bound(cmd, "jobs", j, 1, MAX_THREADS, "threads")?;
    }
    Ok(())
}

fn check_run(cmd: &str, run: &ProtectRun) -> Result<(), String> {
    check_jobs(cmd, run.jobs)?;
    bound(cmd, "seeds", run.seeds, 1, 1000, "seeds")?;
    bound(cmd, "isol-pct", run.isol_pct, 0.001, 100.0, "a percentile")?;
    bound(cmd, "isol-thr", run.isol_thr, 0.001, 1.0, "a fraction")?;
    Ok(())
}

pub fn tune_command(what: TuneCmd, progress: Reporter) -> Result<u8, String> {
    match what {
        TuneCmd::Model {
            device,
            qos,
            duration,
            seqio_block_mb,
            seq_depth,
            rand_depth,
            numjobs,
            testfile_size_gb,
            jobs,
        } => {
            let m = "model";
            bound(
                m,
                "duration",
                duration,
                1,
                MAX_DURATION_S,
                "seconds per job",
            )?;
            bound(m, "seqio-block-mb", seqio_block_mb, 1, 4096, "MiB")?;
            bound(m, "seq-depth", seq_depth, 1, 65_536, "an iodepth")?;
            bound(m, "rand-depth", rand_depth, 1, 65_536, "an iodepth")?;
            bound(m, "numjobs", numjobs, 1, 4096, "fio jobs")?;
            bound(
                m,
                "testfile-size-gb",
                testfile_size_gb,
                0.001,
                1_048_576.0,
                "GiB",
            )?;
            check_jobs(m, jobs)?;
            let machine = match scenario_named(&device) {
                Some(sc) => tune::Machine::from_scenario(&sc?)?,
                None => tune::Machine::from_spec(&device)?,
            };
            let coef = tune::model::CoefGen {
                duration_s: duration,
                seqio_block_mb,
                seq_depth,
                rand_depth,
                numjobs,
                testfile_size_gb,
            };
            let opts = tune::model::ModelOptions {
                coef,
                qos,
                jobs: jobs.unwrap_or_else(sweep::pool::cores),
                progress,
            };
            tune::model::model_command(&machine, &opts, &mut |s| print!("{s}"))
        }
        TuneCmd::Qos {
            target,
            vrate_min,
            vrate_max,
            vrate_intvs,
            model_duration,
            run,
            output,
        } => {
            let q = "qos";
            bound(
                q,
                "vrate-min",
                vrate_min,
                0.0,
                MAX_VRATE_PCT,
                "a vrate in %",
            )?;
            bound(
                q,
                "vrate-max",
                vrate_max,
                0.01,
                MAX_VRATE_PCT,
                "a vrate in %",
            )?;
            bound(q, "vrate-intvs", vrate_intvs, 1, 1000, "intervals")?;
            bound(
                q,
                "model-duration",
                model_duration,
                1,
                MAX_DURATION_S,
                "seconds per job",
            )?;
            check_run(q, &run)?;
            let (sc, common) = target.options(run, output, progress)?;
            let opts = tune::qos::QosOptions {
                common,
                vrate_min,
                vrate_max,
                vrate_intvs,
                coef: tune::model::CoefGen {
                    duration_s: model_duration,
                    ..Default::default()
                },
            };
            tune::qos::qos_command(&sc, &opts, &mut |s| print!("{s}"), &Stderr)
        }
        TuneCmd::Iomax {
            target,
            limit,
            p99_ms,
            run,
            output,
        } => {
            if let Some(p) = p99_ms {
                bound("iomax", "p99-ms", p, 0.001, 3_600_000.0, "milliseconds")?;
            }
            check_run("iomax", &run)?;
            let (sc, common) = target.options(run, output, progress)?;
            let opts = tune::iomax::IomaxOptions {
                common,
                limit,
                p99_ms,
            };
            tune::iomax::iomax_command(&sc, &opts, &mut |s| print!("{s}"), &Stderr)
        }
    }
}
