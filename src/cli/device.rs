//! `blkcg-sim device ...`: commands about the device models, as a clap subcommand
//! group ([`DeviceCmd`]): `fit` fits a model to a user's fio measurements
//! (`crate::device_fit`); `plot` draws a model alone (the work is
//! `crate::report::device_plot`'s; here the devices are picked from the command line).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::load;
use crate::device_fit::{self as fit, Model, jobs::Target};
use crate::report::device_plot::{DeviceUnderTest, builtin_devices, plot_device};
use crate::report::outdir::{OutDir, write_named_file};
use crate::sweep::pool;

/// `blkcg-sim device`.
#[derive(Subcommand)]
pub enum DeviceCmd {
    /// Fit a device model to fio measurements of your own disk.
    ///
    /// First print the fio commands to run on the disk (each writes one JSON file):
    ///   blkcg-sim device fit --print-jobs --filename /mnt/disk/fit.testfile --size 16G
    /// (the write jobs overwrite --filename: on a raw device, /dev/..., its data is lost).
    /// Then fit a model to their output:
    ///   blkcg-sim device fit *.json --model ssd --output mydisk.toml
    ///
    /// Jobs are recognised by their options (rw, bs, iodepth, numjobs, direct), not by
    /// their name; several jobs may be in one file or in many. Prints which measurement
    /// set each key (also as comments in the TOML), the `[device]` table, then every job
    /// run alone on the fitted device beside your measurements (IOPS, MiB/s, slat and
    /// clat mean and percentiles, ratio sim/real), and the fit's residuals. Models: ssd
    /// (mode = "simple": latency per IO from QD1, channels from QD32, bandwidth from
    /// 1 MiB sequential), hdd (transfer rate, rotation, seek), cloud (IOPS and MB/s
    /// caps, base latency and its tail as latency_pcts).
    #[command(verbatim_doc_comment)]
    Fit(FitArgs),
    /// Pictures of a device model alone, through the whole pipeline, as fio sees it.
    ///
    /// Name one device: a SCENARIO (a .toml file or built-in name: its `[device]`
    /// table), --preset NAME (an FTL ssd's femu-bb, consumer-tlc, dc-nvme; a cloud
    /// volume's azure-p20, azure-p30, aws-gp3, aws-gp2-100g, gcp-pd-ssd), --model SPEC
    /// (as `blkcg-sim fio --device`: nullb:irqmode=2,completion_nsec=100000,
    /// ssd:preset=dc-nvme,precondition=random, hdd, cloud:iops=500) or --all (every
    /// model and preset, the pictures of docs/devices.md). No controller, no other
    /// load: one generated fio job per run. Same device, same pictures, byte for byte.
    ///
    /// Each device gets, in --output DIR (PNG and SVG):
    ///
    ///   NAME-latency      any model: 4 KiB randread and randwrite at QD 1, 2, 4 ... 256,
    ///                     one run of --runtime seconds each; IOPS on x, clat p50 and
    ///                     p99 on a log y (also NAME-latency.csv, and on stdout). Where
    ///                     the curve turns upright the device is saturated: more depth
    ///                     only adds queueing.
    ///   NAME-write-cliff  an FTL ssd: 4 KiB random writes at QD32 from t=0 for
    ///                     --cliff-runtime seconds, full (precondition = "sequential")
    ///                     and fresh ("none"): write IOPS, write amplification and free
    ///                     blocks over time. Line speed while the buffer and the spare
    ///                     blocks last, then garbage collection sets the pace.
    ///   NAME-bucket       a cloud volume: 4 KiB random reads at QD32 for T seconds,
    ///                     idle T, again T (T = 1.5 x credit_secs with bursting, else
    ///                     10): completions, `throttled` (IOs that found a bucket empty)
    ///                     and `backlog` per second as the buckets drain and refill.
    ///
    /// An FTL ssd's writes in NAME-latency start from its configured preconditioning
    /// (default: full), so the deep-queue write points already meet garbage collection.
    ///
    /// Examples:
    ///   blkcg-sim device plot --all --output docs/devices/
    ///   blkcg-sim device plot --preset dc-nvme --output out/
    ///   blkcg-sim device plot --model 'ssd:preset=consumer-tlc,op_pct=20' --output out/
    ///   blkcg-sim device plot my.toml --output out/
    #[command(verbatim_doc_comment)]
    #[command(verbatim_doc_comment)]
    Plot(PlotArgs),
}

/// The arguments of `device fit`.
#[derive(Args)]
pub struct FitArgs {
    /// fio JSON outputs (`fio --output-format=json`), one or more jobs each.
    files: Vec<PathBuf>,
    /// The model to fit: ssd, hdd or cloud.
    #[arg(long)]
    model: Option<String>,
    /// Also write the fitted `[device]` table here.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Print the fio commands that measure a disk for the fit, and fit nothing.
    #[arg(long)]
    print_jobs: bool,
    /// With --print-jobs: the file or device to measure.
    #[arg(long, default_value = "blkcg-sim-fit.testfile")]
    filename: String,
    /// With --print-jobs: fio's size, the span the jobs use.
    #[arg(long, default_value = "16G")]
    size: String,
    /// With --print-jobs: seconds per job.
    #[arg(long, default_value_t = 30)]
    runtime: u64,
    /// Worker threads for the simulated jobs (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
}

/// The arguments of `device plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// A scenario whose [device] to draw (a .toml file or a built-in name).
    scenario: Option<String>,
    /// A preset of the FTL ssd or of the cloud model.
    #[arg(long)]
    preset: Option<String>,
    /// A device spec, MODEL[:KEY=VALUE,...], as `blkcg-sim fio --device` takes it.
    #[arg(long)]
    model: Option<String>,
    /// Every built-in model and preset.
    #[arg(long)]
    all: bool,
    /// Where the pictures go (created if missing).
    #[arg(long)]
    output: PathBuf,
    /// Seconds of each latency-vs-load run.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=600))]
    runtime: u64,
    /// Seconds of the write-cliff runs.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=3600))]
    cliff_runtime: u64,
}

/// Run a `device` subcommand.
pub fn device_command(cmd: DeviceCmd) -> Result<u8, String> {
    match cmd {
        DeviceCmd::Fit(a) => fit_command(a),
        DeviceCmd::Plot(a) => plot_command(&a),
    }
}

fn fit_command(a: FitArgs) -> Result<u8, String> {
    if !(1..=86_400).contains(&a.runtime) {
        return Err(format!(
            "device fit: --runtime {} is not accepted: expected seconds per job in 1..=86400",
            a.runtime
        ));
    }
    if let Some(j) = a.jobs.filter(|j| !(1..=1024).contains(j)) {
        return Err(format!(
            "device fit: --jobs {j} is not accepted: expected threads in 1..=1024"
        ));
    }
    if a.print_jobs {
        print!(
            "{}",
            fit::jobs::print_jobs(&Target {
                filename: a.filename,
                size: a.size,
                runtime_s: a.runtime,
            })
        );
        return Ok(0);
    }
    let model = match a.model.as_deref() {
        Some("ssd") => Model::Ssd,
        Some("hdd") => Model::Hdd,
        Some("cloud") => Model::Cloud,
        Some(m) => {
            return Err(format!(
                "device fit: --model `{m}` is not accepted: expected ssd, hdd or cloud"
            ));
        }
        None => {
            return Err(
                "device fit: give --model ssd, hdd or cloud (or --print-jobs for the fio commands to run first)".into(),
            );
        }
    };
    let out = fit::fit(&a.files, model, a.jobs.unwrap_or_else(pool::cores))?;
    if let Some(p) = &a.output {
        write_named_file(p, &out.toml)?;
    }
    print!("{}", out.report);
    Ok(0)
}

/// `blkcg-sim device plot`: every picture that applies to each chosen device, in
/// `output`; the latency-vs-load table of each on stdout.
fn plot_command(a: &PlotArgs) -> Result<u8, String> {
    let (output, runtime_s, cliff_s) = (a.output.as_path(), a.runtime, a.cliff_runtime);
    let given = [
        a.scenario.is_some(),
        a.preset.is_some(),
        a.model.is_some(),
        a.all,
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(
            "device plot: name one device: a SCENARIO (its [device]), --preset NAME, --model SPEC, or --all"
                .into(),
        );
    }
    let devices = if let Some(s) = &a.scenario {
        vec![DeviceUnderTest::from_scenario(&load(s)?)?]
    } else if let Some(p) = &a.preset {
        vec![DeviceUnderTest::from_preset(p)?]
    } else if let Some(m) = &a.model {
        vec![DeviceUnderTest::from_spec(m)?]
    } else {
        builtin_devices()
    };
    // our own file names only, never through a symlink (report::outdir)
    let names: Vec<String> = devices.iter().flat_map(|d| d.file_names()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let out = OutDir::top_owning(output, &names)?;
    for d in &devices {
        let (table, files) = plot_device(d, &out, runtime_s, cliff_s)?;
        println!("== {}", d.name);
        print!("{table}");
        for f in files {
            println!("wrote {f}");
        }
    }
    Ok(0)
}
