//! A run's timelines as the pipeline makes them: streamed to their files, decimated for
//! the pictures, and kept whole only where a caller asks.
//!
//! Design
//! ------
//! The pipeline hands every row and trace line to a [`Recorder`] once per
//! sample tick and keeps none itself. [`RunRecorder`] is the one implementation. It
//! knows the device's seconds (`iostat.csv`) and the trace (`trace.txt`); every other
//! row is a policy's or elevator's [`TimelineRow`], handled by its
//! [`StreamDef`] (`crate::stack::stream`) without the recorder knowing whose it is:
//! - with an output folder, each stream's CSV (`iostat.csv`, and those of the registry:
//!   `throttle.csv`, `timeline.csv`, `iolatency.csv`, `deadline.csv`, ...) and
//!   `trace.txt` is created at its first row — so a file exists exactly when there is
//!   something to put in it — and written through a buffer as the run goes; a row's
//!   lines are formatted only then;
//! - with an output folder (the pictures are drawn there, and only there), the
//!   pictures' series (device throughput, and each stream's [`Series`]) are fed as rows
//!   come, each of bounded size (`crate::report::decimate`); without one they are not
//!   kept at all;
//! - with `keep`, every row is also kept in memory (the library API, tests,
//!   `validate` and `repro`, whose runs are short): typed per stream
//!   ([`Recorded::rows`]), or as CSV text ([`Recorded::csv`]); with `keep_trace` every
//!   trace line; the command line keeps no row: `run --timeline` asks for
//!   `timeline_text`, the device timeline's printed lines formatted as each second
//!   comes into a [`Spool`] (memory up to 1 MiB, then an unlinked temporary file), read
//!   back once after the fio report;
//! - trace lines go to stderr as they come when the user asked for `--trace` without
//!   an output folder.
//!
//! So a run's memory does not grow with simulated time unless the caller keeps rows.
//! A write error (disk full) is remembered and reported once the run ends.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::blkcg::CgroupTree;
use crate::report::decimate::Decimated;
use crate::report::outdir::OutDir;
use crate::report::summary::{
    IOSTAT_CSV_HEADER, iostat_csv_row, iostat_text_header, iostat_text_row,
};
use crate::sim::NSEC_PER_SEC;
use crate::sim::iostat::IostatRow;
use crate::stack::Recorder;
use crate::stack::stream::{AnyRow, KeptRows, RowCtx, Series, StreamDef, TimelineRow};

/// What a caller wants of a run's timelines.
#[derive(Default)]
pub struct RecordOptions {
    /// Stream the files into this folder.
    pub out: Option<OutDir>,
    /// Keep every row in memory too.
    pub keep: bool,
    /// Keep every trace line in memory too.
    pub keep_trace: bool,
    /// Hand each trace line to this sink as it comes (the command line prints them
    /// on stderr).
    pub trace_live: Option<crate::notify::TraceSink>,
    /// Keep each job's completions over time (`RunOutput::job_timelines`) even
    /// without an output folder to draw them into: for a reader such as `tune protect`.
    pub keep_job_timelines: bool,
    /// Format the device's timeline as `run --timeline` prints it, a line as each
    /// second comes, into [`Recorded::timeline_text`] (without keeping the rows).
    pub timeline_text: bool,
}

impl RecordOptions {
    /// Whether trace lines go anywhere (a file, memory, stderr); when not, the
    /// policies need not format them.
    pub fn takes_trace(&self) -> bool {
        self.out.is_some() || self.keep_trace || self.trace_live.is_some()
    }

    /// Whether anything reads each job's completions over time (the pictures and
    /// `jobs.csv` of an output folder, or the caller); when not, the pipeline need not
    /// keep them.
    pub fn takes_job_timelines(&self) -> bool {
        self.out.is_some() || self.keep_job_timelines
    }
}

/// What was kept of one policy's or elevator's timeline: the stream, the picture's
/// series (with an output folder), every row (with `keep`).
pub struct RecordedStream {
    pub def: &'static StreamDef,
    pub series: Option<Box<dyn Series>>,
    pub rows: Option<Box<dyn KeptRows>>,
}

impl std::fmt::Debug for RecordedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordedStream")
            .field("def", &self.def.name)
            .field("rows", &self.rows.as_ref().map_or(0, |r| r.len()))
            .finish()
    }
}

/// Everything kept of a run's timelines once it has ended.
#[derive(Debug, Default)]
pub struct Recorded {
    /// With `keep`: every second of the device; with `keep_trace`, every trace line.
    pub iostat: Vec<IostatRow>,
    pub trace: Vec<String>,
    /// The folder the files streamed to, for the run's other outputs.
    pub out: Option<OutDir>,
    /// With `timeline_text`: the device timeline's text (`summary::iostat_text`).
    pub timeline_text: Spool,
    /// Device throughput in MiB/s, read and write, decimated (with an output folder).
    pub read_mib: Decimated,
    pub write_mib: Decimated,
    /// Each stream that made a row, in the order of their first rows.
    pub streams: Vec<RecordedStream>,
}

impl Recorded {
    /// With `keep`: every row of the stream of `T` (none if it made none).
    pub fn rows<T: TimelineRow>(&self) -> &[T] {
        self.streams
            .iter()
            .find(|s| s.def.csv == T::stream().csv)
            .and_then(|s| s.rows.as_ref())
            .and_then(|r| r.as_any().downcast_ref::<Vec<T>>())
            .map_or(&[], Vec::as_slice)
    }

    /// With `keep`: stream `def`'s CSV text as its file holds it (the header alone if
    /// it made no row).
    pub fn csv(&self, def: &StreamDef, tree: &CgroupTree) -> String {
        let mut out = def.header.to_string();
        if let Some(rows) = self
            .streams
            .iter()
            .find(|s| s.def.csv == def.csv)
            .and_then(|s| s.rows.as_ref())
        {
            rows.csv(&mut out, tree);
        }
        out
    }
}

/// One streamed file: created at its first line.
struct Stream {
    name: &'static str,
    header: String,
    file: Option<BufWriter<File>>,
}

impl Stream {
    fn new(name: &'static str, header: &str) -> Self {
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

/// One stream of the run: its file, and what is kept of it.
struct Live {
    file: Stream,
    kept: RecordedStream,
}

/// The recorder of one run (see the module comment).
pub struct RunRecorder {
    tree: CgroupTree,
    opts: RecordOptions,
    iostat: Stream,
    trace: Stream,
    /// The policies' and elevator's streams, at their first rows.
    streams: Vec<Live>,
    /// `q->nr_requests`, for rows drawn against it (blk-iolatency's unlimited depth).
    nr_requests: u32,
    /// One line's text, reused.
    line: String,
    /// The device's name, for the timeline's text.
    dev_name: String,
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
            trace: Stream::new("trace.txt", ""),
            streams: Vec::new(),
            nr_requests: u32::MAX,
            line: String::new(),
            dev_name: String::new(),
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

    /// The queue's `q->nr_requests`, which rows may be drawn against.
    pub fn set_nr_requests(&mut self, nr_requests: u32) {
        self.nr_requests = nr_requests;
    }

    /// The device's name, which the timeline's text prints on each line.
    pub fn set_device_name(&mut self, name: &str) {
        self.dev_name = name.to_string();
    }

    /// Whether the pictures will be drawn (`report::outputs`, into the output folder),
    /// so their series are worth keeping.
    fn pictures(&self) -> bool {
        self.opts.out.is_some()
    }

    /// `self.line` into `stream`, remembering the first error.
    fn emit(out: &Option<OutDir>, stream: &mut Stream, line: &str, error: &mut Option<String>) {
        let Some(dir) = out else {
            return;
        };
        if let Err(e) = stream.write(dir, line) {
            error.get_or_insert(e);
        }
    }

    /// The run has ended: flush the files; what was kept, or the first write error.
    pub fn finish(mut self) -> Result<Recorded, String> {
        if self.opts.timeline_text && self.rec.timeline_text.is_empty() {
            self.rec.timeline_text.push(&iostat_text_header());
        }
        if let Some(dir) = self.opts.out.take() {
            // iostat.csv is always written, if only its header
            if self.iostat.file.is_none()
                && let Err(e) = self.iostat.write(&dir, "")
            {
                self.error.get_or_insert(e);
            }
            let streams = self.streams.iter_mut().map(|s| &mut s.file);
            for s in [&mut self.iostat, &mut self.trace]
                .into_iter()
                .chain(streams)
            {
                if let Err(e) = s.finish(&dir) {
                    self.error.get_or_insert(e);
                }
            }
            self.rec.out = Some(dir);
        }
        self.rec.streams = self.streams.into_iter().map(|s| s.kept).collect();
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
        Self::emit(
            &self.opts.out,
            &mut self.iostat,
            &self.line,
            &mut self.error,
        );
        if self.opts.keep {
            self.rec.iostat.push(row.clone());
        }
        if self.opts.timeline_text {
            if self.rec.timeline_text.is_empty() {
                self.rec.timeline_text.push(&iostat_text_header());
            }
            self.line.clear();
            iostat_text_row(&mut self.line, &self.dev_name, row);
            self.rec.timeline_text.push(&self.line);
        }
    }

    fn row(&mut self, row: &dyn AnyRow) {
        let def = row.stream();
        let i = match self.streams.iter().position(|s| s.kept.def.csv == def.csv) {
            Some(i) => i,
            None => {
                let series = def
                    .picture
                    .as_ref()
                    .filter(|_| self.pictures())
                    .map(|p| (p.series)());
                let rows = self.opts.keep.then(|| row.new_store());
                self.streams.push(Live {
                    file: Stream::new(def.csv, def.header),
                    kept: RecordedStream { def, series, rows },
                });
                self.streams.len() - 1
            }
        };
        let ctx = RowCtx {
            tree: &self.tree,
            nr_requests: self.nr_requests,
        };
        let live = &mut self.streams[i];
        if let Some(s) = &mut live.kept.series {
            s.add(row.as_any(), &ctx);
        }
        // a row's lines are formatted only when there is a file to write them to
        if self.opts.out.is_some() {
            self.line.clear();
            row.write_csv(&mut self.line, &self.tree);
            Self::emit(&self.opts.out, &mut live.file, &self.line, &mut self.error);
        }
        if let Some(kept) = &mut live.kept.rows {
            kept.push(row.as_any());
        }
    }

    fn trace(&mut self, line: String) {
        if let Some(live) = &mut self.opts.trace_live {
            live(&line);
        }
        self.line.clear();
        self.line.push_str(&line);
        self.line.push('\n');
        Self::emit(&self.opts.out, &mut self.trace, &self.line, &mut self.error);
        if self.opts.keep_trace {
            self.rec.trace.push(line);
        }
    }
}

/// Text made as a run goes and read once after it: in memory up to [`Spool::MEMORY`]
/// bytes, then in an unnamed temporary file (unlinked at creation), so what a long
/// run prints does not stay in memory; in memory still if no file can be made.
#[derive(Debug, Default)]
pub struct Spool {
    mem: String,
    file: Option<BufWriter<File>>,
    len: usize,
}

impl Spool {
    /// What is kept in memory before the text goes to a file.
    pub const MEMORY: usize = 1 << 20;

    /// Append `s`.
    pub fn push(&mut self, s: &str) {
        self.len += s.len();
        if let Some(f) = &mut self.file
            && f.write_all(s.as_bytes()).is_ok()
        {
            return;
        }
        self.mem.push_str(s);
        if self.file.is_none() && self.mem.len() > Self::MEMORY {
            self.file = Self::spill(&self.mem);
            if self.file.is_some() {
                self.mem = String::new();
            }
        }
    }

    /// An unlinked temporary file holding `text`, or None.
    fn spill(text: &str) -> Option<BufWriter<File>> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("blkcg-sim-spool-{}-{n}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        let _ = std::fs::remove_file(&path);
        let mut w = BufWriter::new(f);
        w.write_all(text.as_bytes()).ok()?;
        Some(w)
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Hand the text, in order, to `emit` a piece at a time.
    pub fn drain(
        &mut self,
        emit: &mut dyn FnMut(&str) -> Result<(), String>,
    ) -> Result<(), String> {
        use std::io::{BufRead, Seek};
        let err = |e: std::io::Error| format!("the run's spooled text: {e}");
        if let Some(w) = self.file.take() {
            let mut f = w.into_inner().map_err(|e| err(e.into_error()))?;
            f.rewind().map_err(err)?;
            let mut r = std::io::BufReader::new(f);
            let mut line = String::new();
            while r.read_line(&mut line).map_err(err)? > 0 {
                emit(&line)?;
                line.clear();
            }
        }
        emit(&self.mem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spool_gives_back_what_it_was_given_past_its_memory() {
        let mut sp = Spool::default();
        assert!(sp.is_empty());
        let line = "x".repeat(99) + "\n";
        let n = Spool::MEMORY / 100 * 3;
        for _ in 0..n {
            sp.push(&line);
        }
        assert!(sp.mem.len() <= Spool::MEMORY + 100, "spilled to a file");
        let mut back = String::new();
        sp.drain(&mut |s| {
            back.push_str(s);
            Ok(())
        })
        .unwrap();
        assert_eq!(back.len(), n * 100);
        assert!(back.lines().all(|l| l.len() == 99));
    }

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
