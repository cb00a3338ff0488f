//! `blkcg-sim sweep`: the plan ([`Sweep`]) run on every core, results streamed on
//! stdout as JSON lines or CSV, and to `--output`'s files; the sweep itself (keys,
//! plan, runs, records, pictures) is `crate::sweep`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use crate::cli::Stderr;
use crate::notify::Notify;
use crate::progress::{Cancel, Horizon, Reporter};
use crate::report::charts::Exhibits;
use crate::report::html::write_command_page;
use crate::report::outdir::{OutDir, OutFile};
use crate::scenario::Scenario;
use crate::sweep::record::csv_header;
use crate::sweep::{MAX_PICTURES, Pictures, Shard, Sweep, draw, pool};

/// How `sweep` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per run.
    Jsonl,
    /// One CSV row per job of each run, with a header.
    Csv,
}

/// Options of the `sweep` command.
pub struct SweepOptions {
    pub sets: Vec<String>,
    pub seeds: u32,
    pub jobs: usize,
    pub shard: Option<Shard>,
    pub output: Option<PathBuf>,
    pub format: Format,
    /// Print the runs (point, seed, values) instead of running them.
    pub list: bool,
    pub progress: Reporter,
}

/// `blkcg-sim sweep`.
pub fn sweep_command(sc: &Scenario, o: &SweepOptions) -> Result<u8, String> {
    if o.jobs == 0 {
        return Err(
            "sweep: --jobs 0: give at least 1 worker thread (default: one per core)".into(),
        );
    }
    let sweep = Sweep::new(sc, &o.sets, o.seeds)?;
    for w in sweep.schedule_warnings()? {
        Stderr.warning(&w);
    }
    let total = sweep.runs();
    let shard = o.shard.unwrap_or(Shard { index: 1, count: 1 });
    let range = shard.range(total);
    if o.list {
        // streamed, each point's values from its index: a plan of 1e8 runs is never
        // held, and `| head` stops it at the first write that finds the pipe closed
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let seeds = o.seeds as usize;
        for r in range {
            let p = r / seeds;
            let written = write!(out, "{p}\t{}\t", r % seeds).and_then(|_| {
                for (i, (a, k)) in sweep.axes.iter().zip(sweep.indices(p)).enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    write!(out, "{sep}{}={}", a.key, a.values[k])?;
                }
                writeln!(out)
            });
            match written {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(0),
                Err(e) => return Err(format!("stdout: {e}")),
            }
        }
        return match out.flush() {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
            _ => Ok(0),
        };
    }
    let keys: Vec<String> = sweep.axes.iter().map(|a| a.key.clone()).collect();
    let header = (shard.index == 1).then(|| csv_header(&keys));
    let mut files = match &o.output {
        Some(dir) => Some(OutputFiles::open(dir, o.shard, header.as_deref())?),
        None => None,
    };
    let mut stdout = std::io::stdout().lock();
    let mut print = |s: &str| {
        stdout
            .write_all(s.as_bytes())
            .and_then(|_| stdout.flush())
            .map_err(|e| format!("stdout: {e}"))
    };
    if o.format == Format::Csv
        && let Some(h) = &header
    {
        print(h)?;
    }
    let started = Instant::now();
    let mut shown = o
        .progress
        .start("sweep", Horizon::Count(range.len() as u64));
    let mut pictures = (o.output.is_some() && o.shard.is_none()).then(|| Pictures::new(&sweep));
    let first = range.start;
    // the command line is stopped by its signals, never cancelled
    let never = Cancel::default();
    let mut done = 0;
    pool::ordered(
        range.len(),
        o.jobs,
        |i| sweep.run(first + i, &never).map(|(rec, _)| rec),
        |_, rec| {
            let rec = rec?;
            let json = rec.json_line();
            let csv = rec.csv_rows();
            print(match o.format {
                Format::Jsonl => &json,
                Format::Csv => &csv,
            })?;
            if let Some(f) = files.as_mut() {
                f.jsonl.write(&json)?;
                f.csv.write(&csv)?;
            }
            if let Some(p) = pictures.as_mut() {
                p.add(&sweep, &rec);
            }
            done += 1;
            shown.update(0, done);
            Ok(())
        },
    )?;
    shown.finish();
    if let Some(dir) = &o.output {
        match o.shard {
            None => {
                if let Some(p) = &pictures {
                    let out = OutputFiles::pictures_dir(dir)?;
                    let mut exhibits = Exhibits::default();
                    draw(&sweep, p, &out, &mut exhibits, &Stderr);
                    write_page(sc, &sweep, o.seeds, &out, &exhibits)?;
                }
            }
            Some(_) => eprintln!(
                "blkcg-sim: sweep: no pictures for one shard; plot the concatenated sweep.csv"
            ),
        }
    }
    if !matches!(o.progress, Reporter::Quiet) {
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "blkcg-sim: sweep: {} run(s) in {secs:.1} s wall ({:.1} runs/s, {} worker(s))",
            range.len(),
            range.len() as f64 / secs.max(1e-9),
            o.jobs
        );
    }
    Ok(0)
}

/// The files `--output DIR` receives as runs finish.
struct OutputFiles {
    jsonl: OutFile,
    csv: OutFile,
}

impl OutputFiles {
    /// `sweep.jsonl` and `sweep.csv` (or `sweep-I-of-N.*` for a shard, I zero-padded,
    /// so `cat sweep-*-of-N.jsonl` is the whole sweep in order).
    fn open(
        dir: &std::path::Path,
        shard: Option<Shard>,
        header: Option<&str>,
    ) -> Result<Self, String> {
        let stem = match shard {
            None => "sweep".to_string(),
            Some(s) => {
                let w = s.count.to_string().len();
                format!("sweep-{:0w$}-of-{}", s.index, s.count)
            }
        };
        let (j, c) = (format!("{stem}.jsonl"), format!("{stem}.csv"));
        let out = OutDir::top_owning(dir, &[j.as_str(), c.as_str()])?;
        let mut csv = out.open_file(&c)?;
        if let Some(h) = header {
            csv.write(h)?;
        }
        Ok(OutputFiles {
            jsonl: out.open_file(&j)?,
            csv,
        })
    }

    /// DIR emptied of every picture name a sweep may write, and of its report.html.
    fn pictures_dir(dir: &std::path::Path) -> Result<OutDir, String> {
        let names: Vec<String> = (1..=MAX_PICTURES)
            .flat_map(|i| ["png", "svg"].map(|e| format!("sweep-axis-{i}.{e}")))
            .chain(["report.html".to_string()])
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        OutDir::top_owning(dir, &names)
    }
}

/// DIR/report.html: the sweep's plan, each axis's figures as interactive charts, its
/// pictures and files.
fn write_page(
    sc: &Scenario,
    sweep: &Sweep,
    seeds: u32,
    out: &OutDir,
    exhibits: &Exhibits,
) -> Result<(), String> {
    let mut text = format!(
        "sweep of {}: {} run(s), {} seed(s) per point\n",
        sc.name(),
        sweep.runs(),
        seeds
    );
    for a in &sweep.axes {
        text.push_str(&format!("  {} = {}\n", a.key, a.values.join(", ")));
    }
    text.push_str(
        "Each axis's chart holds the others at their first value, each figure the mean \
         over the seeds (every run is in sweep.csv).\n",
    );
    let stems: Vec<String> = (1..=sweep.axes.len().min(MAX_PICTURES))
        .map(|i| format!("sweep-axis-{i}"))
        .collect();
    let pictures: Vec<(&str, &str)> = stems
        .iter()
        .map(|s| (s.as_str(), "each job's figures against the axis"))
        .collect();
    write_command_page(
        out,
        &format!("sweep: {}", sc.name()),
        &text,
        exhibits,
        &pictures,
        &["sweep.csv", "sweep.jsonl"],
    )
}
