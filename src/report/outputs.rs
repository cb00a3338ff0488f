//! Every output file of one run under `--output DIR/<label>/` besides the timelines
//! (which stream there during the run): fio's reports, the summary (what the run
//! assumed and its warnings at its top), io.stat, the jobs'
//! timeline and the pictures (the device's, the jobs', and each policy's and elevator's
//! from its stream's series), the policies' reports (blk-iocost's monitor views). All
//! writes go through `crate::report::outdir::OutDir`.

use std::collections::HashMap;
use std::path::Path;

use crate::notify::Notify;
use crate::report::charts::{self, ClatLine};
use crate::report::fio::{self as fioreport};
use crate::report::outdir::OutDir;
use crate::report::plot::{Panel, Picture, Series, XScale, plot_picture};
use crate::report::summary::{self};
use crate::report::timeline::{self, JobLine};
use crate::run::VariantRun;
use crate::stack::stream::PlotCtx;

/// The run's jobs as `jobs.csv` and the jobs picture show them: one line per
/// cgroup/job across successive fio runs (they never overlap), a job's later runs
/// right after its first.
pub fn job_lines(run: &VariantRun) -> Vec<JobLine<'_>> {
    let tree = &run.resolved.tree;
    let mut jobs: Vec<JobLine> = run
        .out
        .jobs
        .iter()
        .zip(&run.out.job_timelines)
        .map(|((p, _, times), bins)| {
            let label = summary::job_label(&tree.nodes[p.cgroup as usize].path, &p.name, 0);
            let until = p.runtime.map(|r| times.stats_start + r);
            JobLine { label, bins, until }
        })
        .collect();
    // each label's first place (one lookup per job: 100,000 jobs sort in
    // milliseconds); a stable sort keeps time order
    let mut first_seen: HashMap<String, usize> = HashMap::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        first_seen.entry(j.label.clone()).or_insert(i);
    }
    jobs.sort_by_key(|j| first_seen[&j.label]);
    jobs
}

/// A run's summary as `summary.txt` holds it, `run` prints it and report.html shows
/// it: what the run assumed (`crate::report::assumed`), every warning of the run (what
/// it was given but does not model, as `run` prints them on stderr), the table, the
/// jobs' cgroups' io.pressure totals, then the device's whole-run figures (an FTL's
/// write amplification) if it has any, the page cache's and the policies' lines.
pub fn summary_text(run: &VariantRun) -> String {
    let warnings: String = run
        .warnings
        .iter()
        .map(|w| format!("warning: {w}\n"))
        .collect();
    run.assumed.to_string()
        + &warnings
        + &summary::summary_table(&run.summaries)
        + &pressure_summary(run)
        + &summary::device_summary(&run.limits.name, &run.fio.device)
        + &page_cache_summary(run)
        + &policy_summary(run)
}

/// How many cgroups the summary's io.pressure line names (the most stalled first).
const PRESSURE_LINE_CGROUPS: usize = 8;

/// The summary's io.pressure line: the cgroups with jobs, the most stalled first (at
/// most [`PRESSURE_LINE_CGROUPS`]), their `some` and `full` totals at the end (the
/// `io.pressure` file has every cgroup, with the averages).
fn pressure_summary(run: &VariantRun) -> String {
    let tree = &run.resolved.tree;
    let total = |line: Option<&str>| {
        line.and_then(|l| l.rsplit_once("total="))
            .and_then(|(_, t)| t.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut with_jobs = vec![false; run.out.pressure.len()];
    for (p, _, _) in &run.out.jobs {
        if let Some(w) = with_jobs.get_mut(p.cgroup as usize) {
            *w = true;
        }
    }
    let mut psi: Vec<(usize, u64, u64)> = run
        .out
        .pressure
        .iter()
        .enumerate()
        .filter(|&(cg, _)| with_jobs[cg])
        .map(|(cg, text)| {
            let mut lines = text.lines();
            (cg, total(lines.next()), total(lines.next()))
        })
        .collect();
    if psi.is_empty() {
        return String::new();
    }
    // the most stalled first; a stable sort keeps tree order among equals
    psi.sort_by_key(|&(_, some, _)| std::cmp::Reverse(some));
    let more = psi.len().saturating_sub(PRESSURE_LINE_CGROUPS);
    let parts: Vec<String> = psi
        .iter()
        .take(PRESSURE_LINE_CGROUPS)
        .map(|&(cg, some, full)| {
            format!(
                "{} {} / {}",
                timeline::cg_name(tree, cg as u32),
                crate::sim::time_text(some * 1000),
                crate::sim::time_text(full * 1000)
            )
        })
        .collect();
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "io.pressure, time stalled on I/O (some / full): {}{more} (io.pressure has every \
         cgroup, with the averages)\n",
        parts.join(", ")
    )
}

/// The policies' lines of the summary ([`crate::stack::BlkcgPolicy::summary_line`]).
fn policy_summary(run: &VariantRun) -> String {
    run.out
        .stack
        .policies()
        .filter_map(|p| p.summary_line())
        .map(|l| l + "\n")
        .collect()
}

/// The page cache's lines of the summary, for a run with buffered writers.
fn page_cache_summary(run: &VariantRun) -> String {
    let Some(pc) = run.out.page_cache.as_deref() else {
        return String::new();
    };
    let tree = &run.resolved.tree;
    let jobs = &run.out.jobs;
    let paused = |cg: u32| {
        jobs.iter()
            .filter(|(p, _, _)| p.cgroup == cg)
            .map(|(_, _, t)| t.dirty_paused)
            .sum()
    };
    let writers_done = jobs.iter().map(|(_, _, t)| t.finished).max().unwrap_or(0);
    crate::writeback::summary(
        &pc.model,
        |cg| timeline::cg_name(tree, cg),
        paused,
        pc.last_written,
        writers_done,
    )
}

/// The data of the run's interactive charts in report.html, read from the CSVs in its
/// folder `dir` (`report::charts`), with its scheduled events and clat percentiles.
pub fn chart_data(run: &VariantRun, dir: &Path) -> Result<String, String> {
    let tree = &run.resolved.tree;
    let events = timeline::schedule_events(&run.resolved.writes, &run.resolved.device_writes, tree);
    let clat: Vec<ClatLine> = run
        .summaries
        .iter()
        .map(|r| ClatLine {
            name: summary::job_label(&r.cgroup, &r.job, r.round),
            points: r.clat_pct_ms.clone(),
        })
        .collect();
    charts::run_charts(dir, &events, &clat)
}

/// Every output file of one run in its folder `out` (see `report::outdir`) besides
/// the timelines, which streamed there during the run; a picture not drawn is a
/// warning to `notify`.
pub fn write_outputs(out: &OutDir, run: &VariantRun, notify: &dyn Notify) -> Result<(), String> {
    let dir = out.path();
    let write = |name: &str, text: &str| out.write(name, text);
    let tree = &run.resolved.tree;
    write("summary.txt", &summary_text(run))?;
    out.write_with("fio.json", |w| {
        fioreport::json::write_json(&run.fio, false, &mut |p| w.write_all(p.as_bytes()))
    })?;
    out.write_with("fio.txt", |w| {
        fioreport::text::write_normal(&run.fio, &mut |p| w.write_all(p.as_bytes()))
    })?;
    write("io.stat", &run.io_stat)?;
    write("io.pressure", &run.io_pressure)?;
    let jobs = job_lines(run);
    write("jobs.csv", &timeline::jobs_csv(&jobs))?;
    let events = timeline::schedule_events(&run.resolved.writes, &run.resolved.device_writes, tree);
    let ctx = PlotCtx {
        tree,
        jobs: &jobs,
        events: &events,
    };
    let plot = |stem: &str, drawn: Result<(), String>| {
        if let Err(e) = drawn {
            notify.warning(&format!("plot not drawn ({stem}): {e}"));
        }
    };
    plot(
        "jobs",
        timeline::plot_run(
            &dir.join("jobs"),
            &format!("jobs: {}", run.label),
            &timeline::job_panels(&jobs),
            &ctx,
        ),
    );
    let classes = timeline::job_classes(&jobs);
    let clat = [summary::clat_percentile_panel(&run.summaries)];
    let title = format!("clat percentiles: {}", run.label);
    let pic = Picture {
        x_scale: XScale::Percentile,
        classes: &classes,
        ..Picture::new(&title, "percentile (log scale of 1 − p)", &clat)
    };
    plot("clat", plot_picture(&dir.join("clat"), &pic));
    for (name, text) in &run.reports {
        write(name, text)?;
    }
    // each policy's and elevator's picture, from its stream's series
    for s in &run.record.streams {
        let (Some(series), Some(pic)) = (&s.series, &s.def.picture) else {
            continue;
        };
        let title = format!("{}: {}", pic.title, run.label);
        plot(pic.stem, series.plot(&dir.join(pic.stem), &title, &ctx));
    }
    let iostat_panels = vec![Panel {
        y_label: "MiB/s".into(),
        series: vec![
            Series {
                name: "read".into(),
                points: run.record.read_mib.points(),
            },
            Series {
                name: "write".into(),
                points: run.record.write_mib.points(),
            },
        ],
        log_y: false,
    }];
    plot(
        "iostat",
        timeline::plot_run(
            &dir.join("iostat"),
            &format!("device throughput: {}", run.label),
            &iostat_panels,
            &ctx,
        ),
    );
    Ok(())
}
