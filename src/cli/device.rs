//! `blkcg-sim device ...`: commands about the device models, as a clap subcommand
//! group ([`DeviceCmd`]); `fit` fits a model to a user's fio measurements
//! (`crate::device::fit`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::device::fit::{self, Model, jobs::Target};
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

/// Run a `device` subcommand.
pub fn device_command(cmd: DeviceCmd) -> Result<u8, String> {
    match cmd {
        DeviceCmd::Fit(a) => fit_command(a),
    }
}

fn fit_command(a: FitArgs) -> Result<u8, String> {
    if a.print_jobs {
        print!(
            "{}",
            fit::jobs::print_jobs(&Target {
                filename: a.filename,
                size: a.size,
                runtime_s: a.runtime.max(1),
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
        std::fs::write(p, &out.toml).map_err(|e| format!("{}: cannot write: {e}", p.display()))?;
    }
    print!("{}", out.report);
    Ok(0)
}
