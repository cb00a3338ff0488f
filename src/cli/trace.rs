//! `blkcg-sim trace ...`: a user's block traces, as a clap subcommand group
//! ([`TraceCmd`]): `split` turns a machine's trace into one fio iolog per cgroup and a
//! scenario replaying them (the work is `crate::workload::iolog::split`'s; here the
//! files are read and written).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::report::outdir::OutDir;
use crate::workload::iolog::split::{self, GroupBy};

/// `blkcg-sim trace`.
#[derive(Subcommand)]
pub enum TraceCmd {
    /// Split a machine's block trace into one fio iolog per cgroup, and a scenario that
    /// replays each in its cgroup.
    ///
    /// TRACE is blkparse's text or a blktrace binary. Record and print it on the
    /// machine (cgroup ids need the tracer's blk_cgroup option, and blkparse's %g):
    ///   echo 1 > /sys/kernel/tracing/options/blk_cgroup      (kernel 4.14+)
    ///   blktrace -d /dev/sdb -w 60 -o sdb
    ///   blkparse -i sdb -f "%D %2c %8s %5T.%9t %5p %g %2a %3d %S + %n [%C]\n" > sdb.txt
    /// (or blkparse's default output, or `blkparse -i sdb -d sdb.bin` for the binary).
    /// Only queue events (Q) count: each is a bio as its task issued it, before the
    /// scheduler and the device. Events are grouped by cgroup when the trace has them
    /// (blkparse prints a cgroup as `ino,gen` in hex; `ino` is the cgroup folder's
    /// inode, `stat -c %i /sys/fs/cgroup/PATH`), else by process name (--by comm) or
    /// pid (--by pid). --map names each group's cgroup in the scenario (by `ino,gen`,
    /// by the inode in decimal or 0x-hex, by comm or pid); unnamed groups get `t-KEY`.
    ///
    /// Writes into --output DIR one v3 iolog per group (`PATH.log`, a `/` as `-`),
    /// all on the trace's one clock, and `scenario.toml`: the --device, and each
    /// cgroup replaying its log with fio's read_iolog at --iodepth. Then:
    ///   blkcg-sim run DIR/scenario.toml
    /// and add variants (io.max, io.cost.*, io.weight) to see each cgroup's lateness.
    ///
    /// A trace taken under io.max has blk-throttle's delays in its times (the bio is
    /// held before its Q event): capture with the limits you study off.
    ///
    /// Example:
    ///   blkcg-sim trace split sdb.txt --map 1a2b,0=web --map 4242=batch --output split/
    #[command(verbatim_doc_comment)]
    Split(SplitArgs),
}

/// The arguments of `trace split`.
#[derive(Args)]
pub struct SplitArgs {
    /// The trace: blkparse text, or a blktrace binary.
    trace: PathBuf,
    /// ID=CGROUP: the cgroup (a path, e.g. web/frontend) that group ID replays in.
    #[arg(long, value_name = "ID=CGROUP")]
    map: Vec<String>,
    /// What makes a group.
    #[arg(long, value_enum, default_value = "auto")]
    by: GroupBy,
    /// The scenario's device, as `blkcg-sim fio --device` takes it (MODEL:k=v,...).
    #[arg(long, default_value = "nullb")]
    device: String,
    /// Each replay's iodepth (fio's iodepth: at most this many in flight).
    #[arg(long, default_value_t = 32)]
    iodepth: u32,
    /// The folder to write the logs and scenario.toml into.
    #[arg(long)]
    output: PathBuf,
}

pub fn trace_command(cmd: TraceCmd) -> Result<u8, String> {
    match cmd {
        TraceCmd::Split(a) => split_command(&a),
    }
}

fn split_command(a: &SplitArgs) -> Result<u8, String> {
    if !(1..=65535).contains(&a.iodepth) {
        return Err(format!(
            "trace split: --iodepth {} is not accepted: 1..=65535, as fio's iodepth",
            a.iodepth
        ));
    }
    let map = a
        .map
        .iter()
        .map(|m| {
            m.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| {
                    format!("trace split: --map `{m}`: expected ID=CGROUP, e.g. 1a2b,0=web")
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let device = crate::scenario::spec::parse_device_spec(&a.device)
        .map_err(|e| format!("trace split: --device: {e}"))?;
    let name = a.trace.display().to_string();
    let f = std::fs::File::open(&a.trace).map_err(|e| format!("{name}: {e}"))?;
    let events = split::read_events(&name, std::io::BufReader::new(f))?;
    let s = split::split(&name, &events, a.by, &map, device, a.iodepth)?;
    let names: Vec<&str> = s.files.iter().map(|(n, _)| n.as_str()).collect();
    let out = OutDir::top_owning(&a.output, &names)?;
    for (n, text) in &s.files {
        out.write(n, text)?;
    }
    print!("{}", s.report);
    println!(
        "wrote {} logs and scenario.toml to {}; replay them with:\n  blkcg-sim run {}",
        s.files.len() - 1,
        a.output.display(),
        a.output.join("scenario.toml").display()
    );
    Ok(0)
}
