//! `blkcg-sim check`: build every variant as `run` would — so it refuses exactly what
//! `run` refuses — and print what it resolves to: first what the variant assumes
//! (`crate::report::assumed`, as its run's summary will say), with a warning where it
//! relies on a default no distribution ships (no `[kernel]` version, no `hz`).

use std::io::{BufWriter, Write};

use crate::cli::run::plan;
use crate::report::summary::{self};
use crate::run::{Prepared, device_echo, key_err, prepare};
use crate::scenario::Scenario;

/// `blkcg-sim check`: build every variant as `run` would — so it refuses exactly what
/// `run` refuses — and print what it resolves to.
pub fn check_command(sc: &Scenario, variants: &[String]) -> Result<u8, String> {
    let plan = plan(sc, variants, &[])?;
    // one buffered writer: a listing of 100,000 jobs is as many lines, not syscalls
    let mut out = BufWriter::new(std::io::stdout().lock());
    let stdout_err = |e: std::io::Error| format!("writing the listing to stdout: {e}");
    for (v, _) in plan {
        let p = prepare(sc, v.as_deref(), None, None, false)?;
        let r = &p.resolved;
        let (dev, keys, _) = crate::device::config::resolve(&r.device, r.seed)
            .map_err(|e| key_err(sc, v.as_deref(), &["device"], &e).to_string())?;
        listing(&mut out, v.as_deref(), &p, dev.model(), &keys).map_err(stdout_err)?;
    }
    writeln!(out, "ok").map_err(stdout_err)?;
    out.flush().map_err(stdout_err)?;
    Ok(0)
}

/// What variant `v` resolves to: its device, kernel, policies, writes and jobs.
fn listing(
    out: &mut impl Write,
    v: Option<&str>,
    p: &Prepared,
    model: &str,
    keys: &[(String, String)],
) -> std::io::Result<()> {
    let r = &p.resolved;
    let l = &p.limits;
    writeln!(out, "variant {}:", v.unwrap_or("(base)"))?;
    for line in p.assumed.to_string().lines() {
        writeln!(out, "  {line}")?;
    }
    let keys: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
    row(out, "keys", &keys.join(" "))?;
    row(
        out,
        "device",
        &format!(
            "{model} {}:{} ({}) rotational={} hw_queue_depth={} nr_requests={} max_sectors_kb={} capacity={}",
            l.major,
            l.minor,
            l.name,
            u8::from(l.rotational),
            l.hw_queue_depth,
            l.nr_requests,
            l.max_sectors_kb,
            l.capacity
        ),
    )?;
    row(
        out,
        "kernel",
        &format!(
            "version={} hz={} throttling_low={} {} {} {}",
            r.kernel.version,
            r.kernel.hz,
            r.kernel.throttling_low,
            p.blk_mq(),
            p.fair(),
            p.mm()
        ),
    )?;
    for s in &p.setups {
        row(out, s.label(), &s.describe())?;
    }
    row(out, "sched", &p.scheduler)?;
    row(out, "host", &r.host.to_string())?;
    if let Some(pct) = r.state.iocost_vrate_pct {
        row(
            out,
            "state",
            &format!("iocost base vrate {pct:.2}% (left by earlier runs)"),
        )?;
    }
    for w in &r.writes {
        let cg = &r.tree.nodes[w.cgroup as usize].path;
        writeln!(
            out,
            "  at {:>12} ns  echo \"{}\" > {}{}",
            w.at,
            w.line,
            if cg.is_empty() {
                String::new()
            } else {
                format!("{cg}/")
            },
            w.file.name()
        )?;
        if let Some(n) = systemd_io_weight(w.file.name(), &w.line) {
            writeln!(
                out,
                "  {:>15}  (systemd's IOWeight={n} writes io.bfq.weight \"{}\" and io.weight \"default {n}\")",
                "",
                crate::sched::bfq::weight::systemd_bfq_weight(n)
            )?;
        }
    }
    for w in &r.device_writes {
        writeln!(out, "  at {:>12} ns  {}", w.at, device_echo(w, &l.name))?;
    }
    for (i, (spec, &src)) in p.specs.iter().zip(&p.sources).enumerate() {
        let f = &r.fio[src];
        let cgroup = spec
            .cgroup
            .as_deref()
            .unwrap_or(&r.tree.nodes[f.cgroup as usize].path);
        let label = summary::job_label("", &spec.name, f.round);
        match p.replay_of(i) {
            Some((log, iodepth)) => writeln!(
                out,
                "  job {label:<12} cgroup={cgroup} read_iolog={} ({} reads and writes, {} \
                 bytes, {}) iodepth={iodepth} engine={:?} runtime={}ns",
                spec.read_iolog.as_deref().unwrap_or_default(),
                log.ios(),
                log.bytes(),
                if log.timed {
                    "paced by its times"
                } else {
                    "untimed"
                },
                spec.ioengine,
                spec.runtime
            )?,
            None => writeln!(
                out,
                "  job {label:<12} cgroup={cgroup} rw={:?} bs={:?} iodepth={} engine={:?} \
                 runtime={}ns",
                spec.rw, spec.bs_min, spec.iodepth, spec.ioengine, spec.runtime
            )?,
        }
    }
    for w in p.assumed.upstream_defaults().iter().chain(&p.warnings) {
        writeln!(out, "  warning: {w}")?;
    }
    Ok(())
}

/// The `IOWeight=` a default-weight write of `io.weight` is (`N`, `default N`).
fn systemd_io_weight(file: &str, line: &str) -> Option<u64> {
    if file != "io.weight" || line.contains(':') {
        return None;
    }
    let t = line.trim();
    t.strip_prefix("default").unwrap_or(t).trim().parse().ok()
}

/// One line of a variant's listing: its label in one column wide enough for every
/// policy's (`iolatency`), then the text.
fn row(out: &mut impl Write, label: &str, text: &str) -> std::io::Result<()> {
    writeln!(out, "  {label:<9} {text}")
}
