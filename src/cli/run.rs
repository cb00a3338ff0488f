//! `blkcg-sim run`: every chosen variant and kernel on its own core, printed in plan
//! order (fio's formats, the summary, the A/B table), files under `--output`. What
//! each run assumed (`crate::report::assumed`) heads its summary; where no summary is
//! printed it goes to stderr, so stdout stays what fio would print.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::Stderr;
use crate::kernel_version::named;
use crate::notify::TraceSink;
use crate::progress::Reporter;
use crate::report::fio::{self as fioreport};
use crate::report::html::{RunPage, write_report};
use crate::report::outdir::{OutDir, check_label};
use crate::report::outputs::{chart_data, summary_text, write_outputs};
use crate::report::record::RecordOptions;
use crate::report::summary::{self, JobSummary};
use crate::run::{VariantRun, in_parallel, run_variant_traced};
use crate::scenario::Scenario;

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
    pub progress: Reporter,
    /// Collect the controllers' event logs (trace.txt with --output, else stderr).
    pub trace: bool,
}

/// One run of a `run` command: (variant, kernel version override).
type RunPlan = Vec<(Option<String>, Option<String>)>;

/// Which (variant, kernel) pairs a `run` covers.
pub(crate) fn plan(
    sc: &Scenario,
    variants: &[String],
    kernels: &[String],
) -> Result<RunPlan, String> {
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

pub(crate) fn run_label(v: &Option<String>, k: &Option<String>) -> String {
    match (v, k) {
        (Some(v), Some(k)) => format!("{v}@{k}"),
        (Some(v), None) => v.clone(),
        (None, Some(k)) => format!("kernel-{k}"),
        (None, None) => "default".into(),
    }
}

/// `blkcg-sim run`: everything printed and written, then the runs handed back (exit
/// status 0) for the caller to free — or, as the binary does, to leave to the
/// process's exit (see `main.rs`).
pub fn run_command(sc: &Scenario, o: &RunOptions) -> Result<Vec<VariantRun>, String> {
    let plan = plan(sc, &o.variants, &o.kernels)?;
    for (v, k) in &plan {
        if let Some(k) = k {
            named(k).map_err(|m| format!("--kernel {k}: {m}"))?;
        }
        check_label(&run_label(v, k))?;
    }
    // every folder checked before any is written: none half-written when one cannot be
    if let Some(dir) = &o.output {
        for (v, k) in &plan {
            OutDir::check(dir, &run_label(v, k))?;
        }
    }
    let all = sc.variants();
    if o.variants.is_empty() && !all.is_empty() {
        eprintln!(
            "{}: running its {} variant(s): {} (a scenario with [[variant]]s runs only its \
             variants, each the base scenario with the variant's keys replaced)",
            sc.file,
            all.len(),
            all.join(", ")
        );
    }
    let trace_to_stderr = o.trace && o.output.is_none();
    // every run on its own core; output in plan order, byte-identical to a serial run
    let run_one = |(v, k): &(Option<String>, Option<String>)| {
        let label = run_label(v, k);
        // the timelines stream to their files; in memory only what is printed
        let record = RecordOptions {
            out: o
                .output
                .as_ref()
                .map(|dir| OutDir::open(dir, &label))
                .transpose()?,
            keep: false,
            keep_trace: false,
            spool_tables: false,
            spool_trace: false,
            keep_job_timelines: false,
            timeline_text: o.timeline,
            trace_live: trace_to_stderr.then(|| {
                let prefix = match plan.len() {
                    1 => String::new(),
                    _ => format!("[{label}] "),
                };
                Box::new(move |line: &str| eprintln!("{prefix}{line}")) as TraceSink
            }),
        };
        let mut run = run_variant_traced(
            sc,
            v.as_deref(),
            k.as_deref(),
            o.seed,
            &o.progress,
            o.trace,
            record,
        )?;
        run.label = label;
        Ok(run)
    };
    // trace lines printed to stderr as they come would interleave across runs made at
    // once, differently each time: then the runs go one after another, in plan order,
    // each one's trace live and whole
    let mut runs = if trace_to_stderr && plan.len() > 1 {
        plan.iter().map(run_one).collect::<Result<Vec<_>, _>>()?
    } else {
        in_parallel(&plan, run_one)?
    };
    for w in runs.iter().flat_map(|r| &r.warnings) {
        eprintln!("warning: {w}");
    }
    let single = runs.len() == 1;
    let summaries_printed =
        o.format == OutputFormat::Summary || (!single && o.format == OutputFormat::Normal);
    // what each run assumed, where stdout does not show it in the summaries: on
    // stderr, so that fio's formats on stdout stay fio's
    if !summaries_printed {
        for run in &runs {
            let prefix = match single {
                true => String::new(),
                false => format!("[{}] ", run.label),
            };
            for line in run.assumed.to_string().lines() {
                eprintln!("{prefix}{line}");
            }
        }
    }
    // the reports go out as they are written, a job's block at a time: a run of
    // 100,000 jobs never holds its report whole (nor a copy of it)
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut emit = |text: &str| {
        stdout
            .write_all(text.as_bytes())
            .map_err(|e| format!("writing to stdout: {e}"))
    };
    for run in runs.iter_mut() {
        // JSON: a stream of documents, one per variant (jq reads them in turn)
        if !single && o.format == OutputFormat::Normal {
            emit(&format!("=== variant {} ===\n", run.label))?;
        }
        match o.format {
            OutputFormat::Summary => {}
            OutputFormat::Normal => fioreport::text::write_normal(&run.fio, &mut emit)?,
            OutputFormat::Json | OutputFormat::JsonPlus => {
                for m in &run.fio.messages {
                    eprintln!("{}", m.text);
                }
                fioreport::json::write_json(
                    &run.fio,
                    o.format == OutputFormat::JsonPlus,
                    &mut emit,
                )?;
            }
        }
        if o.timeline {
            run.record.timeline_text.each_line(&mut emit)?;
            emit(&run.io_stat)?;
            for (name, text) in &run.reports {
                if !name.ends_with(".json") {
                    emit(text)?;
                }
            }
        }
        if let Some(out) = &run.record.out {
            write_outputs(out, run, &Stderr)?;
        }
    }
    let ab = (!single).then(|| {
        let rows: Vec<(&str, &[JobSummary])> = runs
            .iter()
            .map(|r| (r.label.as_str(), r.summaries.as_slice()))
            .collect();
        summary::ab_table(&rows)
    });
    if let Some(dir) = &o.output {
        let top = OutDir::top(dir)?;
        if let Some(ab) = &ab {
            top.write("ab.txt", ab)?;
        }
        let summaries: Vec<String> = runs.iter().map(summary_text).collect();
        let charts = runs
            .iter()
            .map(|r| {
                r.record
                    .out
                    .as_ref()
                    .map(|o| chart_data(r, o.path()))
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let pages: Vec<RunPage> = runs
            .iter()
            .zip(&summaries)
            .zip(&charts)
            .map(|((r, s), c)| RunPage {
                label: &r.label,
                summary: s,
                charts: c.as_deref(),
            })
            .collect();
        let description = sc.table.get("description").and_then(|d| d.as_str());
        write_report(
            &top,
            &sc.name(),
            description.unwrap_or(""),
            ab.as_deref(),
            &pages,
        )?;
    }
    if summaries_printed {
        for run in &runs {
            emit(&format!("--- {} ---\n", run.label))?;
            emit(&summary_text(run))?;
        }
        if let Some(ab) = &ab {
            emit("\n")?;
            emit(ab)?;
        }
    }
    stdout
        .flush()
        .map_err(|e| format!("writing to stdout: {e}"))?;
    Ok(runs)
}
