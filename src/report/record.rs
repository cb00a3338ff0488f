//! A run's timelines as the pipeline makes them: streamed to their files, decimated for
//! the pictures, and kept whole only where a caller asks.
//!
//! Design
//! ------
//! The pipeline hands every row and trace line to a [`Recorder`] once per
//! sample tick and keeps none itself. [`RunRecorder`] is the one implementation:
//! - with an output folder, each CSV (`iostat.csv`, `timeline.csv`, `throttle.csv`,
//!   `iolatency.csv`, `deadline.csv`) and
//!   `trace.txt` is created at its first row — so a file exists exactly when there is
//!   something to put in it — and written through a buffer as the run goes;
//! - with an output folder (the pictures are drawn there, and only there), the
//!   pictures' series (device throughput, blk-iocost's vrate, busy_level and
//!   hweights, blk-iolatency's depths and windows, mq-deadline's per-level queue and
//!   dispatch rate) go into [`Decimated`] series of bounded size, per-cgroup ones
//!   for the first [`crate::report::decimate::MAX_LINES`] cgroups only (`Lines`);
//!   without one they are not kept at all;
//! - with `keep`, every row is also kept in memory (the library API, tests,
//!   `validate` and `repro`, whose runs are short), with `keep_trace` every trace line;
//!   the command line keeps only what it prints (`run --timeline` prints the device
//!   timeline, no trace line);
//! - trace lines go to stderr as they come when the user asked for `--trace` without
//!   an output folder;
//! - figures a band needs from the whole run (blk-iocost's busy_level resets) are
//!   counted on the way.
//!
//! So a run's memory does not grow with simulated time unless the caller keeps rows.
//! A write error (disk full) is remembered and reported once the run ends.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::blkcg::CgroupTree;
use crate::iocost::ctl::PeriodRow;
use crate::iolatency::IolatRow;
use crate::report::decimate::Decimated;
use crate::report::outdir::OutDir;
use crate::report::summary::{IOSTAT_CSV_HEADER, iostat_csv_row};
use crate::report::timeline::{
    DEADLINE_CSV_HEADER, DeadlineSeries, IOCOST_CSV_HEADER, IOLATENCY_CSV_HEADER, IocostSeries,
    IolatencySeries, THROTTLE_CSV_HEADER, deadline_csv_row, iocost_csv_rows, iolatency_csv_row,
    throttle_csv_row,
};
use crate::sched::mq_deadline::elevator::DeadlineRow;
use crate::sim::iostat::IostatRow;
use crate::sim::{NSEC_PER_SEC, Ns};
use crate::stack::Recorder;
use crate::throttle::ThrotlRow;

/// What a caller wants of a run's timelines.
#[derive(Default)]
pub struct RecordOptions {
    /// Stream the files into this folder.
    pub out: Option<OutDir>,
    /// Keep every row in memory too.
    pub keep: bool,
    /// Keep every trace line in memory too.
    pub keep_trace: bool,
    /// Print trace lines to stderr as they come, after this prefix.
    pub trace_stderr: Option<String>,
    /// Keep each job's completions over time (`RunOutput::job_timelines`) even
    /// without an output folder to draw them into: for a reader such as `tune protect`.
    pub keep_job_timelines: bool,
}

impl RecordOptions {
    /// Whether trace lines go anywhere (a file, memory, stderr); when not, the
    /// policies need not format them.
    pub fn takes_trace(&self) -> bool {
        self.out.is_some() || self.keep_trace || self.trace_stderr.is_some()
    }

    /// Whether anything reads each job's completions over time (the pictures and
    /// `jobs.csv` of an output folder, or the caller); when not, the pipeline need not
    /// keep them.
    pub fn takes_job_timelines(&self) -> bool {
        self.out.is_some() || self.keep_job_timelines
    }
}

/// Everything kept of a run's timelines once it has ended.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// With `keep`: every second of the device, every period; with `keep_trace`, every
    /// trace line.
    pub iostat: Vec<IostatRow>,
    pub iocost_rows: Vec<PeriodRow>,
    pub throttle_rows: Vec<(Ns, ThrotlRow)>,
    pub trace: Vec<String>,
    /// The folder the files streamed to, for the run's other outputs.
    pub out: Option<OutDir>,
    /// Device throughput in MiB/s, read and write, decimated (with an output folder).
    pub read_mib: Decimated,
    pub write_mib: Decimated,
    /// blk-iocost's series, decimated; None when blk-iocost made no period or the run
    /// has no output folder to draw them into (so for the three below).
    pub iocost: Option<IocostSeries>,
    /// blk-iolatency's series, decimated; None when it made no row.
    pub iolatency: Option<IolatencySeries>,
    /// With `keep`: every blk-iolatency row.
    pub iolatency_rows: Vec<IolatRow>,
    /// mq-deadline's series, decimated; None when the run has no mq-deadline.
    pub deadline: Option<DeadlineSeries>,
    /// With `keep`: every mq-deadline row.
    pub deadline_rows: Vec<DeadlineRow>,
    /// Periods where no I/O completed and lagging I/O reset a positive busy_level to
    /// 0 (the bug of the iocost no-completion seed).
    pub no_completion_resets: u64,
    /// blk-iocost's periods and the sum of their base vrates (%), for the mean.
    pub iocost_periods: u64,
    pub vrate_pct_sum: f64,
}

impl Recorded {
    /// blk-iocost's mean base vrate over its periods (%), if it made any.
    pub fn mean_vrate_pct(&self) -> Option<f64> {
        (self.iocost_periods > 0).then(|| self.vrate_pct_sum / self.iocost_periods as f64)
    }
}

/// One streamed file: created at its first line.
struct Stream {
    name: &'static str,
    header: String,
    file: Option<BufWriter<File>>,
}

impl Stream {
    fn new(name: &'static str, header: &'static str) -> Self {
        Stream {
            name,
            header: header.to_string(),
            file: None,
        }
    }

    fn write(&mut self, dir: &OutDir, text: &str) -> Result<(), String> {
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let mut f = BufWriter::new(dir.create(self.name)?);
                f.write_all(self.header.as_bytes())
                    .map_err(|e| format!("{}: {e}", dir.path().join(self.name).display()))?;
                self.file.insert(f)
            }
        };
        file.write_all(text.as_bytes())
            .map_err(|e| format!("{}: {e}", dir.path().join(self.name).display()))
    }

    fn finish(&mut self, dir: &OutDir) -> Result<(), String> {
        match self.file.take() {
            Some(mut f) => f
                .flush()
                .map_err(|e| format!("{}: {e}", dir.path().join(self.name).display())),
            None => Ok(()),
        }
    }
}

/// `iostat.csv`'s header with a device model's own columns after the common ones.
fn device_columns_header(cols: &[&str]) -> String {
    let mut h = IOSTAT_CSV_HEADER.trim_end().to_string();
    for c in cols {
        h.push(',');
        h.push_str(c);
    }
    h.push('\n');
    h
}

/// Append a device model's column values to a CSV row that ends in a newline.
fn device_columns_values(line: &mut String, vals: &[f64]) {
    if vals.is_empty() {
        return;
    }
    line.pop();
    for v in vals {
        line.push_str(&format!(",{v:.2}"));
    }
    line.push('\n');
}

/// The recorder of one run (see the module comment).
pub struct RunRecorder {
    tree: CgroupTree,
    opts: RecordOptions,
    iostat: Stream,
    timeline: Stream,
    throttle: Stream,
    iolatency: Stream,
    deadline: Stream,
    trace: Stream,
    /// The depth blk-iolatency's picture draws for `max` (`nr_requests`).
    unlimited_depth: u32,
    /// One line's text, reused.
    line: String,
    rec: Recorded,
    error: Option<String>,
}

impl RunRecorder {
    /// A recorder for a run over cgroups `tree`.
    pub fn new(tree: &CgroupTree, opts: RecordOptions) -> Self {
        RunRecorder {
            tree: tree.clone(),
            opts,
            iostat: Stream::new("iostat.csv", IOSTAT_CSV_HEADER),
            timeline: Stream::new("timeline.csv", IOCOST_CSV_HEADER),
            throttle: Stream::new("throttle.csv", THROTTLE_CSV_HEADER),
            iolatency: Stream::new("iolatency.csv", IOLATENCY_CSV_HEADER),
            deadline: Stream::new("deadline.csv", DEADLINE_CSV_HEADER),
            trace: Stream::new("trace.txt", ""),
            unlimited_depth: u32::MAX,
            line: String::new(),
            rec: Recorded {
                read_mib: Decimated::new(NSEC_PER_SEC),
                write_mib: Decimated::new(NSEC_PER_SEC),
                ..Recorded::default()
            },
            error: None,
        }
    }

    /// A recorder that keeps everything in memory and writes nothing.
    pub fn keep_all(tree: &CgroupTree) -> Self {
        Self::new(
            tree,
            RecordOptions {
                keep: true,
                keep_trace: true,
                ..RecordOptions::default()
            },
        )
    }

    /// Draw blk-iolatency's unlimited depth as `nr_requests` in its picture.
    pub fn set_nr_requests(&mut self, nr_requests: u32) {
        self.unlimited_depth = nr_requests;
    }

    /// Whether the pictures will be drawn (`report::outputs`, into the output folder),
    /// so their series are worth keeping.
    fn pictures(&self) -> bool {
        self.opts.out.is_some()
    }

    /// `self.line` into `stream`, remembering the first error.
    fn emit(&mut self, which: fn(&mut Self) -> &mut Stream) {
        let Some(dir) = self.opts.out.take() else {
            return;
        };
        let line = std::mem::take(&mut self.line);
        if let Err(e) = which(self).write(&dir, &line) {
            self.error.get_or_insert(e);
        }
        self.line = line;
        self.opts.out = Some(dir);
    }

    /// The run has ended: flush the files; what was kept, or the first write error.
    pub fn finish(mut self) -> Result<Recorded, String> {
        if let Some(dir) = self.opts.out.take() {
            // iostat.csv is always written, if only its header
            if self.iostat.file.is_none()
                && let Err(e) = self.iostat.write(&dir, "")
            {
                self.error.get_or_insert(e);
            }
            for s in [
                &mut self.iostat,
                &mut self.timeline,
                &mut self.throttle,
                &mut self.iolatency,
                &mut self.deadline,
                &mut self.trace,
            ] {
                if let Err(e) = s.finish(&dir) {
                    self.error.get_or_insert(e);
                }
            }
            self.rec.out = Some(dir);
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.rec),
        }
    }
}

impl Recorder for RunRecorder {
    fn iostat(&mut self, row: &IostatRow) {
        if self.pictures() {
            let t = row.t * NSEC_PER_SEC;
            self.rec.read_mib.add(t, row.r_bytes as f64 / 1048576.0);
            self.rec.write_mib.add(t, row.w_bytes as f64 / 1048576.0);
        }
        if self.iostat.file.is_none() && !row.dev_cols.is_empty() {
            // the device model's columns, known from the first row, before any is written
            self.iostat.header = device_columns_header(row.dev_cols);
        }
        self.line.clear();
        iostat_csv_row(&mut self.line, row);
        device_columns_values(&mut self.line, &row.dev_vals);
        self.emit(|r| &mut r.iostat);
        if self.opts.keep {
            self.rec.iostat.push(row.clone());
        }
    }

    fn throttle(&mut self, t: Ns, row: &ThrotlRow) {
        self.line.clear();
        throttle_csv_row(&mut self.line, t, row, &self.tree);
        self.emit(|r| &mut r.throttle);
        if self.opts.keep {
            self.rec.throttle_rows.push((t, row.clone()));
        }
    }

    fn iocost(&mut self, row: &PeriodRow) {
        if row.nr_done == 0 && row.nr_lagging > 0 && row.busy_before > 0 && row.busy_after == 0 {
            self.rec.no_completion_resets += 1;
        }
        self.rec.iocost_periods += 1;
        self.rec.vrate_pct_sum += row.vrate_base_pct;
        if self.pictures() {
            self.rec
                .iocost
                .get_or_insert_with(IocostSeries::default)
                .add(row);
        }
        // a line per cgroup each period: formatted only when there is a file to write
        if self.opts.out.is_some() {
            self.line.clear();
            iocost_csv_rows(&mut self.line, row, &self.tree);
            self.emit(|r| &mut r.timeline);
        }
        if self.opts.keep {
            self.rec.iocost_rows.push(row.clone());
        }
    }

    fn iolatency(&mut self, row: &IolatRow) {
        if self.pictures() {
            self.rec
                .iolatency
                .get_or_insert_with(IolatencySeries::default)
                .add(row, self.unlimited_depth);
        }
        self.line.clear();
        iolatency_csv_row(&mut self.line, row, &self.tree);
        self.emit(|r| &mut r.iolatency);
        if self.opts.keep {
            self.rec.iolatency_rows.push(*row);
        }
    }

    fn deadline(&mut self, row: &DeadlineRow) {
        if self.pictures() {
            self.rec
                .deadline
                .get_or_insert_with(DeadlineSeries::default)
                .add(row);
        }
        self.line.clear();
        deadline_csv_row(&mut self.line, row);
        self.emit(|r| &mut r.deadline);
        if self.opts.keep {
            self.rec.deadline_rows.push(*row);
        }
    }

    fn trace(&mut self, line: String) {
        if let Some(prefix) = &self.opts.trace_stderr {
            eprintln!("{prefix}{line}");
        }
        self.line.clear();
        self.line.push_str(&line);
        self.line.push('\n');
        self.emit(|r| &mut r.trace);
        if self.opts.keep_trace {
            self.rec.trace.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_columns_are_in_the_streamed_header_and_every_row() {
        let dir = std::env::temp_dir().join(format!("blkcg-record-{}", std::process::id()));
        let out = OutDir::open(&dir, "v").unwrap();
        let path = out.path().join("iostat.csv");
        let mut rec = RunRecorder::new(
            &CgroupTree::default(),
            RecordOptions {
                out: Some(out),
                ..RecordOptions::default()
            },
        );
        for t in 0..2 {
            rec.iostat(&IostatRow {
                t,
                w_ios: 10,
                dev_cols: &["wa", "free_blocks"],
                dev_vals: vec![2.5, 64.0 - t as f64],
                ..IostatRow::default()
            });
        }
        rec.finish().unwrap();
        let csv = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "t_s,r_per_s,w_per_s,r_mib_s,w_mib_s,aqu_sz,util_pct,wa,free_blocks"
        );
        assert!(lines[1].ends_with(",2.50,64.00"), "{}", lines[1]);
        assert!(lines[2].ends_with(",2.50,63.00"), "{}", lines[2]);
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn picture_series_are_kept_only_with_an_output_folder() {
        let row = IostatRow {
            t: 0,
            r_bytes: 1 << 20,
            ..IostatRow::default()
        };
        let mut kept = RunRecorder::keep_all(&CgroupTree::default());
        kept.iostat(&row);
        let kept = kept.finish().unwrap();
        assert_eq!(kept.iostat.len(), 1, "the rows are kept");
        assert!(kept.read_mib.points().is_empty(), "no picture series");

        let dir = std::env::temp_dir().join(format!("blkcg-record-pic-{}", std::process::id()));
        let out = OutDir::open(&dir, "v").unwrap();
        let opts = RecordOptions {
            out: Some(out),
            ..RecordOptions::default()
        };
        let mut drawn = RunRecorder::new(&CgroupTree::default(), opts);
        drawn.iostat(&row);
        let drawn = drawn.finish().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(drawn.read_mib.points(), vec![(0.0, 1.0)]);
    }
}
