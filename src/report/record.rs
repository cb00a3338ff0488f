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
//! - with `spool_tables` (the library API: `crate::api::run`), the text of every CSV
//!   file — exactly what the folder's file would hold, header first, made by the same
//!   code as the file's — also goes, as rows come, into a [`Spool`] per file (memory up
//!   to 1 MiB, then an unlinked temporary file), and with `spool_trace` the trace's;
//!   each is handed back as a [`Spooled`] text in [`Recorded::spooled`], read back
//!   (whole, a line or a range of bytes at a time) only when the caller reads it;
//! - with `keep`, every row is also kept in memory, typed per stream
//!   ([`Recorded::rows`]), and with `keep_trace` every trace line (tests, `validate`
//!   and `repro`, whose runs are short); the command line keeps no row: `run
//!   --timeline` asks for `timeline_text`, the device timeline's printed lines
//!   formatted as each second comes into a [`Spool`], read back once after the fio
//!   report;
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
    /// Spool every CSV file's text too (`iostat.csv` and each stream's, as the output
    /// folder's file holds it) into [`Recorded::spooled`].
    pub spool_tables: bool,
    /// Spool `trace.txt`'s text too into [`Recorded::spooled`].
    pub spool_trace: bool,
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
        self.out.is_some() || self.keep_trace || self.spool_trace || self.trace_live.is_some()
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
    pub timeline_text: Spooled,
    /// With `spool_tables` (and `spool_trace`): each file's text by its name
    /// (`iostat.csv`, `timeline.csv`, `trace.txt`), for the files the run made, and
    /// `iostat.csv` always (its header if no row).
    pub spooled: Vec<(&'static str, Spooled)>,
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
}

/// One file's text as the run makes it: into the output folder (the file created at
/// its first line) and into a spool, each where asked, its header first.
struct Stream {
    name: &'static str,
    header: String,
    /// Whether its first line came (and its header went out before it).
    started: bool,
    file: Option<BufWriter<File>>,
    spool: Option<Spool>,
}

impl Stream {
    /// The stream of file `name`, spooled if `spool`.
    fn new(name: &'static str, header: &str, spool: bool) -> Self {
        Stream {
            name,
            header: header.to_string(),
            started: false,
            file: None,
            spool: spool.then(Spool::default),
        }
    }

    /// Append `text` to the file in `dir` and to the spool, the header first.
    fn write(&mut self, dir: Option<&OutDir>, text: &str) -> Result<(), String> {
        if !self.started {
            self.started = true;
            if let Some(sp) = &mut self.spool {
                sp.push(&self.header);
            }
            if let Some(dir) = dir {
                let mut f = BufWriter::new(dir.create(self.name)?);
                f.write_all(self.header.as_bytes())
                    .map_err(|e| format!("{}: {e}", dir.path().join(self.name).display()))?;
                self.file = Some(f);
            }
        }
        if let Some(sp) = &mut self.spool {
            sp.push(text);
        }
        match (&mut self.file, dir) {
            (Some(f), Some(dir)) => f
                .write_all(text.as_bytes())
                .map_err(|e| format!("{}: {e}", dir.path().join(self.name).display())),
            _ => Ok(()),
        }
    }

    /// The run has ended: flush the file; the spooled text, if it was spooled and made.
    fn finish(&mut self, dir: Option<&OutDir>) -> Result<Option<Spooled>, String> {
        if let (Some(mut f), Some(dir)) = (self.file.take(), dir) {
            f.flush()
                .map_err(|e| format!("{}: {e}", dir.path().join(self.name).display()))?;
        }
        match self.spool.take().filter(|_| self.started) {
            Some(sp) => sp.finish().map(Some),
            None => Ok(None),
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
    /// `run --timeline`'s text: spooled only, never a file.
    timeline_text: Stream,
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
    /// The jobs' logs (`write_iolog`, `write_*_log`) being written, by file name.
    iologs: Vec<(String, BufWriter<File>)>,
}

impl RunRecorder {
    /// A recorder for a run over cgroups `tree`.
    pub fn new(tree: &CgroupTree, opts: RecordOptions) -> Self {
        RunRecorder {
            tree: tree.clone(),
            iostat: Stream::new("iostat.csv", IOSTAT_CSV_HEADER, opts.spool_tables),
            trace: Stream::new("trace.txt", "", opts.spool_trace),
            timeline_text: Stream::new("timeline", &iostat_text_header(), opts.timeline_text),
            opts,
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
            iologs: Vec::new(),
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

    /// `line` into `stream`, remembering the first error.
    fn emit(out: Option<&OutDir>, stream: &mut Stream, line: &str, error: &mut Option<String>) {
        if let Err(e) = stream.write(out, line) {
            error.get_or_insert(e);
        }
    }

    /// The run has ended: flush the files and spools; what was kept, or the first
    /// write error.
    pub fn finish(mut self) -> Result<Recorded, String> {
        let dir = self.opts.out.take();
        // iostat.csv is always made, if only its header; so is the timeline's text
        // (never a file)
        if !self.iostat.started {
            Self::emit(dir.as_ref(), &mut self.iostat, "", &mut self.error);
        }
        if !self.timeline_text.started {
            Self::emit(None, &mut self.timeline_text, "", &mut self.error);
        }
        match self.timeline_text.finish(None) {
            Ok(text) => self.rec.timeline_text = text.unwrap_or_default(),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        let streams = self.streams.iter_mut().map(|s| &mut s.file);
        for s in [&mut self.iostat, &mut self.trace]
            .into_iter()
            .chain(streams)
        {
            match s.finish(dir.as_ref()) {
                Ok(Some(text)) => self.rec.spooled.push((s.name, text)),
                Ok(None) => {}
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
        }
        for (name, f) in &mut self.iologs {
            if let (Err(e), Some(dir)) = (f.flush(), &dir) {
                self.error
                    .get_or_insert(format!("{}: {e}", dir.path().join(name).display()));
            }
        }
        self.rec.out = dir;
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
        if !self.iostat.started && !row.dev_cols.is_empty() {
            // the device model's columns, known from the first row, before any is written
            self.iostat.header = device_columns_header(row.dev_cols);
        }
        let out = self.opts.out.as_ref();
        self.line.clear();
        iostat_csv_row(&mut self.line, row);
        device_columns_values(&mut self.line, &row.dev_vals);
        Self::emit(out, &mut self.iostat, &self.line, &mut self.error);
        if self.opts.keep {
            self.rec.iostat.push(row.clone());
        }
        if self.opts.timeline_text {
            self.line.clear();
            iostat_text_row(&mut self.line, &self.dev_name, row);
            Self::emit(None, &mut self.timeline_text, &self.line, &mut self.error);
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
                    file: Stream::new(def.csv, def.header, self.opts.spool_tables),
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
        // a row's lines are formatted only when there is a file or a spool for them
        if self.opts.out.is_some() || self.opts.spool_tables {
            self.line.clear();
            row.write_csv(&mut self.line, &self.tree);
            let out = self.opts.out.as_ref();
            Self::emit(out, &mut live.file, &self.line, &mut self.error);
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
        let out = self.opts.out.as_ref();
        Self::emit(out, &mut self.trace, &self.line, &mut self.error);
        if self.opts.keep_trace {
            self.rec.trace.push(line);
        }
    }

    fn job_log(&mut self, name: &str, lines: &str) {
        let Some(dir) = self.opts.out.as_ref() else {
            return;
        };
        let i = match self.iologs.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => match dir.create_replacing(name) {
                Ok(f) => {
                    self.iologs.push((name.to_string(), BufWriter::new(f)));
                    self.iologs.len() - 1
                }
                Err(e) => {
                    self.error.get_or_insert(e);
                    return;
                }
            },
        };
        if let Err(e) = self.iologs[i].1.write_all(lines.as_bytes()) {
            self.error
                .get_or_insert(format!("{}: {e}", dir.path().join(name).display()));
        }
    }
}

/// Text made as a run goes: in memory up to [`Spool::MEMORY`] bytes, then in an
/// unnamed temporary file (unlinked at creation), so what a long run makes does not
/// stay in memory; in memory still if no file can be made. [`Spool::finish`] hands it
/// back as a [`Spooled`] to read.
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

    /// The text is whole: to be read back, as often as wanted.
    pub fn finish(self) -> Result<Spooled, String> {
        let file = match self.file {
            Some(w) => Some(w.into_inner().map_err(|e| spool_error(e.into_error()))?),
            None => None,
        };
        Ok(Spooled {
            file_len: (self.len - self.mem.len()) as u64,
            file,
            mem: self.mem,
        })
    }
}

fn spool_error(e: std::io::Error) -> String {
    format!("the run's spooled text: {e}")
}

/// A [`Spool`]'s text once made: its first `file_len` bytes in the file, the rest in
/// memory. Read at any offset (`pread`, no shared cursor), so readers never disturb
/// one another; the file goes with it.
#[derive(Debug, Default)]
pub struct Spooled {
    file: Option<File>,
    file_len: u64,
    mem: String,
}

impl From<String> for Spooled {
    /// A short text, held in memory (a table's header alone).
    fn from(mem: String) -> Self {
        Spooled {
            mem,
            ..Spooled::default()
        }
    }
}

impl Spooled {
    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.file_len + self.mem.len() as u64
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Up to `buf.len()` bytes from byte `pos` into `buf`: how many (0 at the end).
    pub fn read_at(&self, pos: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        if let (Some(f), true) = (&self.file, pos < self.file_len) {
            let left = usize::try_from(self.file_len - pos).unwrap_or(usize::MAX);
            let n = buf.len().min(left);
            return f.read_at(&mut buf[..n], pos);
        }
        let rest = usize::try_from(pos.saturating_sub(self.file_len))
            .ok()
            .and_then(|at| self.mem.as_bytes().get(at..))
            .unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
    }

    /// A reader of the text from its start.
    pub fn reader(&self) -> impl std::io::BufRead + '_ {
        std::io::BufReader::with_capacity(1 << 16, At { text: self, pos: 0 })
    }

    /// The whole text.
    pub fn text(&self) -> std::io::Result<String> {
        let mut s = String::with_capacity(self.len() as usize);
        std::io::Read::read_to_string(&mut self.reader(), &mut s)?;
        Ok(s)
    }

    /// Hand the text, in order, to `emit` a line at a time.
    pub fn each_line(
        &self,
        emit: &mut dyn FnMut(&str) -> Result<(), String>,
    ) -> Result<(), String> {
        use std::io::BufRead;
        let mut r = self.reader();
        let mut line = String::new();
        while r.read_line(&mut line).map_err(spool_error)? > 0 {
            emit(&line)?;
            line.clear();
        }
        Ok(())
    }
}

/// A [`Spooled`] read from `pos` on.
struct At<'a> {
    text: &'a Spooled,
    pos: u64,
}

impl std::io::Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.text.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spool_gives_back_what_it_was_given_past_its_memory() {
        let mut sp = Spool::default();
        let line = "x".repeat(99) + "\n";
        let n = Spool::MEMORY / 100 * 3;
        for _ in 0..n {
            sp.push(&line);
        }
        assert!(sp.mem.len() <= Spool::MEMORY + 100, "spilled to a file");
        let text = sp.finish().unwrap();
        assert!(text.file.is_some() && text.len() == (n * 100) as u64);
        // read back whole, a line at a time, and at any offset, as often as wanted
        let back = text.text().unwrap();
        assert_eq!(back.len(), n * 100);
        assert!(back.lines().all(|l| l.len() == 99));
        let mut lines = 0;
        text.each_line(&mut |l| {
            assert_eq!(l, line);
            lines += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(lines, n);
        let mut buf = [0u8; 150];
        let at = text.file_len - 50;
        assert_eq!(text.read_at(at, &mut buf).unwrap(), 50, "the file's end");
        assert_eq!(
            text.read_at(at + 50, &mut buf).unwrap(),
            text.mem.len().min(150)
        );
        assert_eq!(text.read_at(text.len(), &mut buf).unwrap(), 0);
        assert_eq!(text.text().unwrap(), back);
    }

    #[test]
    fn spooled_tables_are_the_files_byte_for_byte() {
        let dir = std::env::temp_dir().join(format!("blkcg-record-sp-{}", std::process::id()));
        let out = OutDir::open(&dir, "v").unwrap();
        let path = out.path().join("iostat.csv");
        let opts = RecordOptions {
            out: Some(out),
            spool_tables: true,
            ..RecordOptions::default()
        };
        let mut rec = RunRecorder::new(&CgroupTree::default(), opts);
        for t in 0..40_000 {
            rec.iostat(&IostatRow {
                t,
                r_ios: t,
                dev_cols: &["wa"],
                dev_vals: vec![1.5],
                ..IostatRow::default()
            });
        }
        let kept = rec.finish().unwrap();
        let file = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(file.len() > Spool::MEMORY, "past the spool's memory");
        let [(name, text)] = &kept.spooled[..] else {
            panic!("iostat.csv alone: {:?}", kept.spooled)
        };
        assert_eq!(*name, "iostat.csv");
        assert_eq!(text.text().unwrap(), file);
        assert!(kept.iostat.is_empty(), "no row kept");
        // without rows, the header alone
        let opts = RecordOptions {
            spool_tables: true,
            ..RecordOptions::default()
        };
        let empty = RunRecorder::new(&CgroupTree::default(), opts)
            .finish()
            .unwrap();
        assert_eq!(empty.spooled.len(), 1);
        assert_eq!(empty.spooled[0].1.text().unwrap(), IOSTAT_CSV_HEADER);
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
        // the folder holds the files with something in them, and nothing else
        let files: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(files, ["iostat.csv"]);
        std::fs::remove_dir_all(&dir).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "t_s,r_per_s,w_per_s,r_mib_s,w_mib_s,rrqm_per_s,wrqm_per_s,aqu_sz,util_pct,wa,free_blocks"
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
