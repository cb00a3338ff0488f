//! `blkcg-sim host ...`: the host profiles, as a clap subcommand group ([`HostCmd`]):
//! `list` prints the built-in ones (`crate::scenario::host_profile`), `probe`
//! measures the machine it runs on (`crate::host_probe`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::host_probe::{self, ProbeReport};
use crate::progress::Reporter;
use crate::scenario::host::WakeupLateness;
use crate::scenario::host_profile::{DEFAULT_PROFILE, PROFILES};
use crate::scenario::{BareNumber, parse_duration};

/// `blkcg-sim host`.
#[derive(Subcommand)]
pub enum HostCmd {
    /// The built-in host profiles: what machine each is, how it was measured, and
    /// its `[host]` keys (a scenario names one with `[host] profile = "NAME"`; any
    /// `[host]` key it sets itself overrides the profile's).
    List,
    /// Measure this machine as a `[host]` table to paste into a scenario.
    ///
    /// How late a sleeping task wakes: SAMPLES nanosleeps of each --sleep length
    /// (fio's thinktime and rate pacing sleep so; fio calibrates with 1 µs sleeps),
    /// timed by the monotonic clock; the lateness holds the timer slack and the
    /// scheduling noise together. Printed per length, then as `[host.wakeup_lateness]`,
    /// a table (percentile, ns) per length: a CPU idle longer wakes later.
    /// With --fio-dir DIR (and fio on PATH): the submission cost, from fio's slat of
    /// QD1 O_DIRECT libaio random reads of 4 KiB and 64 KiB on a 64 MiB scratch file
    /// fio lays out in DIR (removed after; nothing else there is touched), as
    /// `submit_ns` and `submit_page_ns`. The completion path is not measured: on a
    /// real disk it cannot be told from the device's own time.
    ///
    /// The figures are this machine's now: a busy machine wakes later (run it with
    /// your usual load to see the noise your workload lives with).
    ///
    /// Examples:
    ///   blkcg-sim host probe
    ///   blkcg-sim host probe --samples 5000 --sleep 1ms --fio-dir /mnt/scratch
    #[command(verbatim_doc_comment)]
    Probe(ProbeArgs),
}

/// The arguments of `host probe`.
#[derive(Args)]
pub struct ProbeArgs {
    /// Sleeps of each length.
    #[arg(long, default_value_t = 1000)]
    samples: u32,
    /// The sleep lengths, comma-separated (a bare number is µs), at most 4.
    #[arg(long, default_value = "1us,100us,1ms,4ms", value_delimiter = ',')]
    sleep: Vec<String>,
    /// Also measure the submission cost with fio on a scratch file in this directory.
    #[arg(long)]
    fio_dir: Option<PathBuf>,
}

/// `blkcg-sim host ...`.
pub fn host_command(cmd: HostCmd, quiet: bool) -> Result<u8, String> {
    match cmd {
        HostCmd::List => {
            print!("{}", list());
            Ok(0)
        }
        HostCmd::Probe(a) => probe(&a, quiet),
    }
}

/// Every built-in profile, the default marked.
fn list() -> String {
    let mut s = String::new();
    for p in &PROFILES {
        let default = if p.name == DEFAULT_PROFILE {
            " (default)"
        } else {
            ""
        };
        s += &format!("{}{default}: {}\n", p.name, p.about);
        s += &format!("  measured: {}\n", p.measured);
        s += &format!("  [host] {}\n", p.costs());
        s += &format!("  assumed: {}\n", p.costs().summary());
    }
    s
}

fn probe(a: &ProbeArgs, quiet: bool) -> Result<u8, String> {
    if a.samples == 0 || a.samples > 1_000_000 {
        return Err(format!(
            "host probe: --samples {}: 1 to 1000000 accepted",
            a.samples
        ));
    }
    let mut asked = Vec::new();
    for s in &a.sleep {
        // a bare number is µs here, as fio's thinktime
        let v = match s.trim().parse::<u64>() {
            Ok(us) => toml::Value::String(format!("{us}us")),
            Err(_) => toml::Value::String(s.clone()),
        };
        let ns = parse_duration(&v, BareNumber::Nanoseconds)
            .map_err(|m| format!("host probe: --sleep {s}: {m}"))?;
        if !(1_000..=1_000_000_000).contains(&ns) {
            return Err(format!("host probe: --sleep {s}: 1 µs to 1 s accepted"));
        }
        asked.push(Duration::from_nanos(ns));
    }
    asked.sort_unstable();
    asked.dedup();
    if asked.len() > WakeupLateness::MAX_LENGTHS {
        return Err(format!(
            "host probe: --sleep: {} lengths, at most {} accepted",
            asked.len(),
            WakeupLateness::MAX_LENGTHS
        ));
    }
    let sleeps = host_probe::probe_sleeps(&asked, a.samples, &Reporter::for_stderr(quiet));
    let slat = match &a.fio_dir {
        Some(d) => Some(host_probe::probe_slat(d).map_err(|e| format!("host probe: {e}"))?),
        None => None,
    };
    let report = ProbeReport {
        machine: host_probe::machine(),
        lateness: host_probe::by_sleep(&sleeps).map_err(|e| format!("host probe: {e}"))?,
        sleeps,
        slat,
    };
    print!("{report}");
    Ok(0)
}
