//! `blkcg-sim host probe`: measures the machine it runs on as a `[host]` profile.
//!
//! Design
//! ------
//! The idea: what a `[host]` profile (`crate::scenario::host_profile`) holds that is
//! not the block layer's own work can be measured from user space with nothing but a
//! clock — how late a sleeping task wakes — and the submission cost can be read off
//! fio's slat. The probe does both and prints a `[host]` table ready to paste into a
//! scenario, with what each number is and how it was measured.
//!
//! Moving parts:
//! - [`probe_sleeps`]: at each asked sleep length, `std::thread::sleep` (nanosleep(2)
//!   on CLOCK_MONOTONIC, the call fio's `usec_sleep()` makes for `thinktime` and rate
//!   pacing) timed by the monotonic clock; lateness = elapsed − asked. The process
//!   keeps the timer slack it inherited (50 µs for a normal task, as fio has), so the
//!   lateness is the slack and the scheduling noise together, which is what a fio
//!   sleep sees. Each length's lateness is a table at [`PERCENTILES`], together a
//!   [`WakeupLateness`] by sleep length ([`by_sleep`]): a CPU idle longer wakes later,
//!   and fio calibrates with 1 µs sleeps (`fio_time_init()`), so the lengths matter.
//! - [`probe_slat`]: with a directory and fio on PATH, QD1 O_DIRECT libaio random
//!   reads of 4 KiB and then 64 KiB on a scratch file fio lays out in that directory
//!   (the probe removes that one file, and nothing else): the slat means give
//!   `submit_ns` and `submit_page_ns`. Through a filesystem they include its direct-
//!   I/O path. The completion path is not measured: on a real disk it cannot be told
//!   from the device's own time (on null_blk it can; the qemu profiles' completion
//!   costs come from there, docs/validation.md §5).
//! - [`ProbeReport`]'s `Display`: a table per sleep length, then the `[host]` block
//!   (its `[host.wakeup_lateness]` sub-table last).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::progress::{Horizon, Reporter};
use crate::scenario::host::{LatenessTable, WakeupLateness, sleep_key};
use crate::sim::{Ns, time_text};

/// The percentiles of the measured table (each a point of its inverse CDF).
pub const PERCENTILES: [f64; 12] = [
    0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 100.0,
];

/// One sleep length's measured lateness, sorted.
pub struct SleepSample {
    pub asked: Duration,
    pub late_ns: Vec<Ns>,
}

/// What the probe measured.
pub struct ProbeReport {
    /// `uname -r`, the CPUs and the process's timer slack, as read.
    pub machine: String,
    pub sleeps: Vec<SleepSample>,
    /// The distribution by sleep length.
    pub lateness: WakeupLateness,
    /// `(submit_ns, submit_page_ns, where)` from fio's slat, when measured.
    pub slat: Option<(Ns, Ns, String)>,
}

/// The value at percentile `pct` of the sorted `v` (nearest rank).
fn percentile(v: &[Ns], pct: f64) -> Ns {
    let i = ((pct / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[i.min(v.len() - 1)]
}

/// `samples` sleeps of each length in `asked`, with a progress line or bar.
pub fn probe_sleeps(asked: &[Duration], samples: u32, progress: &Reporter) -> Vec<SleepSample> {
    let mut p = progress.start(
        "host probe: sleeps",
        Horizon::Count(asked.len() as u64 * u64::from(samples)),
    );
    let mut done = 0;
    asked
        .iter()
        .map(|&d| {
            let mut late_ns: Vec<Ns> = (0..samples)
                .map(|_| {
                    let t = Instant::now();
                    std::thread::sleep(d);
                    let late = t.elapsed().saturating_sub(d).as_nanos() as Ns;
                    done += 1;
                    if done % 64 == 0 {
                        p.update(0, done);
                    }
                    late
                })
                .collect();
            late_ns.sort_unstable();
            SleepSample { asked: d, late_ns }
        })
        .collect()
}

/// The lateness of `sleeps` as a [`WakeupLateness`]: each length's table at
/// [`PERCENTILES`]. `sleeps` is what [`probe_sleeps`] measured at 1 to
/// [`WakeupLateness::MAX_LENGTHS`] distinct lengths, shortest first.
pub fn by_sleep(sleeps: &[SleepSample]) -> Result<WakeupLateness, String> {
    let tables: Vec<(Ns, LatenessTable)> = sleeps
        .iter()
        .map(|s| {
            let v = if s.late_ns.is_empty() {
                &[0][..]
            } else {
                &s.late_ns
            };
            let points: Vec<(u32, Ns)> = PERCENTILES
                .iter()
                .map(|&p| ((p * 10_000.0).round() as u32, percentile(v, p)))
                .collect();
            // sorted samples give rising percentiles and never-falling values
            let t = LatenessTable::new(&points).unwrap_or_else(|_| unreachable!("a sorted sample"));
            (s.asked.as_nanos() as Ns, t)
        })
        .collect();
    WakeupLateness::by_sleep(&tables)
}

/// fio's slat mean (ns) of QD1 O_DIRECT libaio random reads of `bs` on `file`.
fn fio_slat_mean(file: &Path, bs: &str) -> Result<f64, String> {
    let out = Command::new("fio")
        .args([
            "--name=probe",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=1",
            "--rw=randread",
            "--size=64m",
            "--runtime=3",
            "--time_based",
            "--output-format=json",
        ])
        .arg(format!("--bs={bs}"))
        .arg(format!("--filename={}", file.display()))
        .output()
        .map_err(|e| format!("cannot run fio: {e} (is it installed and on PATH?)"))?;
    if !out.status.success() {
        return Err(format!(
            "fio failed on {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("fio printed no JSON document ({e})"))?;
    doc["jobs"][0]["read"]["slat_ns"]["mean"]
        .as_f64()
        .ok_or_else(|| "fio's JSON has no read slat".to_string())
}

/// `submit_ns` and `submit_page_ns` from fio's slat on a scratch file in `dir`.
pub fn probe_slat(dir: &Path) -> Result<(Ns, Ns, String), String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let file: PathBuf = dir.join(format!("blkcg-sim-probe.{}", std::process::id()));
    if file.exists() {
        return Err(format!(
            "{} exists; the probe uses a file of its own and removes only that",
            file.display()
        ));
    }
    let small = fio_slat_mean(&file, "4k");
    let large = small.as_ref().ok().map(|_| fio_slat_mean(&file, "64k"));
    // fio laid the file out: ours to remove, whatever happened
    if file.exists() {
        std::fs::remove_file(&file)
            .map_err(|e| format!("cannot remove the probe's {}: {e}", file.display()))?;
    }
    let small = small?;
    let large = large.unwrap_or_else(|| Err("not run".into()))?;
    let per_page = ((large - small) / 15.0).max(0.0);
    Ok((
        small.round() as Ns,
        per_page.round() as Ns,
        format!(
            "fio libaio QD1 O_DIRECT randread slat, 4 KiB and 64 KiB, on {}",
            dir.display()
        ),
    ))
}

/// The kernel release, the CPUs and this process's timer slack, as read here.
pub fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string());
    let release = read("/proc/sys/kernel/osrelease").unwrap_or_else(|_| "unknown".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let slack = read("/proc/self/timerslack_ns")
        .ok()
        .and_then(|s| s.parse::<Ns>().ok())
        .map_or("unknown".into(), time_text);
    format!("kernel {release}, {cpus} CPU(s), timer slack {slack}")
}

impl std::fmt::Display for ProbeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "host probe: {}", self.machine)?;
        writeln!(
            f,
            "how late a sleep ends (nanosleep, as fio's thinktime and rate pacing), µs:"
        )?;
        write!(f, "{:>10} {:>7}", "SLEEP", "N")?;
        for p in PERCENTILES {
            write!(f, " {:>8}", format!("p{p}"))?;
        }
        writeln!(f)?;
        let row = |f: &mut std::fmt::Formatter<'_>, name: String, v: &[Ns]| {
            write!(f, "{name:>10} {:>7}", v.len())?;
            for p in PERCENTILES {
                write!(f, " {:>8.1}", percentile(v, p) as f64 / 1000.0)?;
            }
            writeln!(f)
        };
        for s in &self.sleeps {
            row(f, time_text(s.asked.as_nanos() as Ns), &s.late_ns)?;
        }
        writeln!(f)?;
        writeln!(f, "[host]")?;
        writeln!(f, "# measured by `blkcg-sim host probe`: {}", self.machine)?;
        match &self.slat {
            Some((submit, per_page, how)) => {
                writeln!(f, "# {how}")?;
                writeln!(f, "submit_ns = {submit}")?;
                writeln!(f, "submit_page_ns = {per_page}")?;
            }
            None => writeln!(
                f,
                "# submission cost not measured (--fio-dir DIR measures it with fio)"
            )?,
        }
        writeln!(f)?;
        writeln!(
            f,
            "# how late a sleep ends by its length (percentile, ns): {}",
            self.lateness.summary()
        )?;
        writeln!(f, "[host.wakeup_lateness]")?;
        for (len, t) in self.lateness.tables() {
            writeln!(f, "\"{}\" = {t}", sleep_key(*len))?;
        }
        Ok(())
    }
}
