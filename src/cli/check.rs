//! `blkcg-sim check`: build every variant as `run` would — so it refuses exactly what
//! `run` refuses — and print what it resolves to.

use crate::cli::run::plan;
use crate::report::summary::{self};
use crate::run::{device_echo, key_err, prepare};
use crate::scenario::Scenario;

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
        row("keys", &keys.join(" "));
        row(
            "device",
            &format!(
                "{} {}:{} ({}) rotational={} hw_queue_depth={} nr_requests={} max_sectors_kb={} capacity={}",
                dev.model(),
                l.major,
                l.minor,
                l.name,
                u8::from(l.rotational),
                l.hw_queue_depth,
                l.nr_requests,
                l.max_sectors_kb,
                l.capacity
            ),
        );
        row(
            "kernel",
            &format!(
                "version={} hz={} throttling_low={}",
                r.kernel.version, r.kernel.hz, r.kernel.throttling_low
            ),
        );
        for s in &p.setups {
            row(s.label(), &s.describe());
        }
        row("sched", &p.scheduler);
        row("host", &r.host.to_string());
        if let Some(pct) = r.state.iocost_vrate_pct {
            row(
                "state",
                &format!("iocost base vrate {pct:.2}% (left by earlier runs)"),
            );
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

/// One line of a variant's listing: its label in one column wide enough for every
/// policy's (`iolatency`), then the text.
fn row(label: &str, text: &str) {
    println!("  {label:<9} {text}");
}
