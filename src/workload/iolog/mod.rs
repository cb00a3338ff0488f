//! I/O logs a job replays (`read_iolog=`) and writes (`write_iolog=`), as fio 3.33
//! reads and writes them.
//!
//! Design
//! ------
//! The idea: a log is read once, before the run, into a flat list of [`LogEntry`]s —
//! what fio's `read_iolog()` / `read_blktrace()` queue as `io_piece`s — with every
//! option that fio applies while reading already applied (`replay_scale`,
//! `replay_align`, `replay_skip`, `replay_time_scale`, `replay_no_stall`); the job
//! runtime (`crate::sim::fio`) then walks the list with fio's pacing. An entry is 24
//! bytes, so a million-line trace costs 24 MiB however long it plays; the file itself
//! is streamed through, never held.
//!
//! Moving parts:
//! - `text.rs`: fio's text logs, `fio version 2 iolog` and `fio version 3 iolog`
//!   (iolog.c `read_iolog()`): v3's per-line µs timestamps become each entry's delay
//!   after the line before (`delay_since_ttime()`); v2 has no delays, only `wait`
//!   lines (an absolute time in ms since fio started its jobs, as fio's code reads
//!   them — its HOWTO's "relative µs" is not what it does).
//! - `blktrace.rs`: a blktrace binary (`blkparse -d` output, or one CPU's file) as
//!   fio's blktrace.c reads it: queue events only, ns deltas, and the depth probe that
//!   sets `iodepth` when the job does not.
//! - [`v3_header`]: the first line fio's `init_iolog_write()` writes (the job runtime
//!   writes the rest of `write_iolog`'s lines, `crate::sim::fio::replay`).
//! - `split.rs`: `blkcg-sim trace split`, a machine's blktrace (blkparse text or the
//!   binary) into one v3 log per cgroup and a scenario replaying them.
//!
//! What the job runtime does with an entry (fio's `read_iolog_get()` and
//! `iolog_delay()`): the entry is taken once the job has a free slot (at most
//! `iodepth` in flight); its delay is waited from the job's last issue, less the
//! lateness fio carries (`time_offset`); reads and writes become I/Os; file lines
//! (`add`/`open`/`close`) only pace; `sync`/`datasync` are the job's sync call; a
//! v2 `wait` sleeps until its time. The log ends the job (`loops` and `time_based`
//! do not repeat it, `runtime` can cut it short).
//!
//! Simplified, and why:
//! - Every file a log names is the scenario's device, as if `replay_redirect` named
//!   it (the scenario has one device); a log of several files says so in a warning.
//! - Trims (discards) are not modelled: a trim line paces the replay like a file line
//!   and issues nothing, and the run warns how many there were.
//! - Lines fio cannot read are skipped, as fio skips them, and counted in a warning
//!   (fio prints each); an I/O on a file no `add` line named — which fio does not
//!   check, and crashes on — is an error here.

mod blktrace;
pub mod split;
mod text;

use std::io::BufRead;

/// What an entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LogOp {
    Read,
    Write,
    /// A discard: paced, not issued (not modelled).
    Trim,
    /// `fsync()` of the job's file.
    Sync,
    /// `fdatasync()`.
    Datasync,
    /// A v2 `wait`: sleep until `offset` ms after fio started its jobs.
    Wait,
    /// `add` / `open` / `close`: paced, no I/O.
    File,
}

/// One entry of a log, as fio's `io_piece`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogEntry {
    /// Wait this long (µs, already scaled by `replay_time_scale`) after the job's
    /// previous issue before this entry.
    pub delay_us: u64,
    /// Bytes (already divided by `replay_scale` and aligned down to `replay_align`);
    /// for [`LogOp::Wait`] the time in ms.
    pub offset: u64,
    pub len: u32,
    pub op: LogOp,
}

const _: () = assert!(std::mem::size_of::<LogEntry>() == 24);

/// The `replay_*` options, as the reader applies them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReplayOpts {
    /// `replay_no_stall`: no delays, no waits.
    pub no_stall: bool,
    /// `replay_time_scale` (%, default 100): 200 plays twice as fast.
    pub time_scale: u32,
    /// `replay_redirect`: every file is this one.
    pub redirect: Option<String>,
    /// `replay_align` (a power of 2, 0 = off): offsets aligned down (blktrace lengths up).
    pub align: u64,
    /// `replay_scale` (default 1, 0 = off): offsets divided by it.
    pub scale: u64,
    /// `replay_skip` as [`SKIP_READ`] .. [`SKIP_TRIM`] bits.
    pub skip: u8,
    /// `read_iolog_chunked`: fio reads the log as it goes (and then does not probe a
    /// blktrace's depth).
    pub chunked: bool,
}

impl Default for ReplayOpts {
    fn default() -> Self {
        ReplayOpts {
            no_stall: false,
            time_scale: 100,
            redirect: None,
            align: 0,
            scale: 1,
            skip: 0,
            chunked: false,
        }
    }
}

/// `merge_blktrace_file` and its lists: the `read_iolog` traces merged into one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeOpts {
    /// Where fio writes the merged trace (here: nothing is written).
    pub file: String,
    /// Per trace, % of its times (default 100).
    pub scalars: Vec<u64>,
    /// Per trace, how many times it plays (default 1).
    pub iters: Vec<u64>,
}

/// `replay_skip=read`.
pub const SKIP_READ: u8 = 1;
/// `replay_skip=write`.
pub const SKIP_WRITE: u8 = 2;
/// `replay_skip=sync`.
pub const SKIP_SYNC: u8 = 4;
/// `replay_skip=trim`.
pub const SKIP_TRIM: u8 = 8;

impl ReplayOpts {
    /// `delay_since_ttime()`: the gap from the last timestamp read (`last`; 0 = none)
    /// to `t`, scaled by `replay_time_scale`; 0 without a last, going backwards or
    /// with `replay_no_stall`. fio scales in `double` and truncates.
    fn gap(&self, last: u64, t: u64) -> u64 {
        if last == 0 || self.no_stall || t < last {
            0
        } else if self.time_scale == 100 {
            t - last
        } else {
            ((t - last) as f64 * (100.0 / f64::from(self.time_scale))) as u64
        }
    }

    /// An offset as the reader stores it: divided by `replay_scale`, aligned down to
    /// `replay_align` (`ipo_bytes_align()`).
    fn offset(&self, offset: u64) -> u64 {
        let o = offset.checked_div(self.scale).unwrap_or(offset);
        if self.align > 0 {
            o & !(self.align - 1)
        } else {
            o
        }
    }

    fn skips(&self, op: LogOp) -> bool {
        let bit = match op {
            LogOp::Read => SKIP_READ,
            LogOp::Write => SKIP_WRITE,
            LogOp::Sync => SKIP_SYNC,
            LogOp::Trim => SKIP_TRIM,
            LogOp::Datasync | LogOp::Wait | LogOp::File => 0,
        };
        self.skip & bit != 0
    }
}

/// A log as read: its entries and what the run should know of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IoLog {
    pub entries: Vec<LogEntry>,
    /// blktrace's probed depth (`iodepth` when the job sets none).
    pub depth: Option<u32>,
    /// Where the largest end (offset + length) of an I/O is: (end, line or record).
    pub max_end: (u64, usize),
    /// The first I/O not on a 512-byte boundary (line or record), if any.
    pub unaligned: Option<usize>,
    /// What the reader skipped or cannot replay, for the run's warnings.
    pub warnings: Vec<String>,
    /// Trims read (not issued).
    pub trims: u64,
    /// Its entries carry the times of the log (a v3 log or a blktrace, without
    /// `replay_no_stall`): a replay's lateness is measured against them.
    pub timed: bool,
}

impl IoLog {
    /// Reads and writes in the log.
    pub fn ios(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.op, LogOp::Read | LogOp::Write))
            .count()
    }

    /// The directions it holds (read, write, trim), as fio sets `td_ddir` from it.
    pub fn dirs(&self) -> [bool; 3] {
        let has = |op| self.entries.iter().any(|e| e.op == op);
        [has(LogOp::Read), has(LogOp::Write), has(LogOp::Trim)]
    }

    /// Bytes the log reads and writes.
    pub fn bytes(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| matches!(e.op, LogOp::Read | LogOp::Write))
            .map(|e| u64::from(e.len))
            .sum()
    }

    /// Note an I/O of `len` bytes at `offset` read at `line` (or record).
    fn saw_io(&mut self, offset: u64, len: u64, line: usize) {
        let end = offset.saturating_add(len);
        if end > self.max_end.0 {
            self.max_end = (end, line);
        }
        if self.unaligned.is_none() && (!offset.is_multiple_of(512) || !len.is_multiple_of(512)) {
            self.unaligned = Some(line);
        }
    }

    /// The files (a trace's devices) the log names: more than one warns that every one
    /// is the scenario's device.
    fn all_one_device(&mut self, name: &str, what: &str, names: Vec<String>) {
        if names.len() > 1 {
            self.warnings.push(format!(
                "{name}: the log names {} {what} ({}); every one is the scenario's device",
                names.len(),
                names.join(", ")
            ));
        }
    }

    /// The run's warnings for what a replay leaves out; the entries made compact.
    fn finish(&mut self, name: &str) -> Result<(), String> {
        self.entries.shrink_to_fit();
        if !self
            .entries
            .iter()
            .any(|e| matches!(e.op, LogOp::Read | LogOp::Write | LogOp::Trim | LogOp::Wait))
        {
            return Err(format!(
                "{name}: no reads, writes, trims or waits in the log: nothing to replay \
                 (fio refuses it too)"
            ));
        }
        if self.trims > 0 {
            self.warnings.push(format!(
                "{name}: {} trims (discards) in the log are not modelled: each paces the \
                 replay and issues nothing",
                self.trims
            ));
        }
        Ok(())
    }
}

/// fio's blktrace magic (`BLK_IO_TRACE_MAGIC`), in the first 4 bytes of a binary trace.
const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;

/// Reads log `name` from `r`: a blktrace binary when its first four bytes are
/// blktrace's magic (either byte order, as `is_blktrace()` checks), else a text log.
pub fn read(name: &str, mut r: impl BufRead, o: &ReplayOpts) -> Result<IoLog, String> {
    let head = r.fill_buf().map_err(|e| format!("{name}: {e}"))?;
    let magic = head.get(..4).map(|b| [b[0], b[1], b[2], b[3]]);
    let is_blktrace = magic.is_some_and(|m| {
        u32::from_ne_bytes(m) & 0xffff_ff00 == BLK_IO_TRACE_MAGIC
            || u32::from_ne_bytes(m).swap_bytes() & 0xffff_ff00 == BLK_IO_TRACE_MAGIC
    });
    let mut log = if is_blktrace {
        blktrace::read(name, r, o)?
    } else {
        text::read(name, r, o)?
    };
    log.finish(name)?;
    Ok(log)
}

/// The blktrace binaries at `paths` merged by time as `merge_blktrace_iologs()` means
/// to merge them (`blktrace::merge`), then read as one trace.
pub fn read_merged(paths: &[String], m: &MergeOpts, o: &ReplayOpts) -> Result<IoLog, String> {
    let count = |what: &str, n: usize| {
        if n > 0 && n != paths.len() {
            Err(format!(
                "merge_blktrace_{what} has {n} values for {} traces (one per trace)",
                paths.len()
            ))
        } else {
            Ok(())
        }
    };
    count("scalars", m.scalars.len())?;
    count("iters", m.iters.len())?;
    let mut traces = Vec::new();
    for p in paths {
        let f = std::fs::File::open(p).map_err(|e| format!("read_iolog={p}: {e}"))?;
        traces.push((p.clone(), std::io::BufReader::new(f)));
    }
    let merged = blktrace::merge(traces, &m.scalars, &m.iters)?;
    let name = format!("the merge of {}", paths.join(", "));
    let mut log = blktrace::read(&name, &merged[..], o)?;
    log.finish(&name)?;
    Ok(log)
}

/// Reads the log at `path`.
pub fn read_file(path: &str, o: &ReplayOpts) -> Result<IoLog, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("read_iolog={path}: {e}"))?;
    read(path, std::io::BufReader::new(f), o)
}

/// The log a job of `read_iolog=list` replays: the list's `clone_index`-th name
/// (modulo its length: `get_name_by_idx()`), names split at `:` as fio splits them
/// (`\:` is a colon in a name; a leading `:` is skipped).
pub fn pick_name(list: &str, clone_index: u32) -> String {
    let names = split_names(list);
    if names.is_empty() {
        return String::new();
    }
    names[clone_index as usize % names.len()].clone()
}

/// The names of a `read_iolog=` list, split at `:` as fio splits them.
pub fn split_names(list: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cur = String::new();
    let mut chars = list.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    names.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        names.push(cur);
    }
    names
}

/// The first line of a log fio writes (`init_iolog_write()`).
pub fn v3_header() -> &'static str {
    "fio version 3 iolog\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_fio_splits_them() {
        assert_eq!(pick_name("a:b:c", 0), "a");
        assert_eq!(pick_name("a:b:c", 4), "b");
        assert_eq!(pick_name(":a\\:1:b", 0), "a:1");
        assert_eq!(pick_name(":a\\:1:b", 1), "b");
    }

    #[test]
    fn gaps_scale_and_truncate_as_fio() {
        let o = ReplayOpts {
            time_scale: 300,
            ..ReplayOpts::default()
        };
        assert_eq!(o.gap(0, 500), 0, "no previous timestamp");
        assert_eq!(o.gap(100, 50), 0, "backwards");
        assert_eq!(o.gap(100, 200), 33, "100 µs at 300% is 33.3, truncated");
        let still = ReplayOpts {
            no_stall: true,
            ..ReplayOpts::default()
        };
        assert_eq!(still.gap(100, 200), 0);
    }

    #[test]
    fn offsets_are_scaled_then_aligned_down() {
        let o = ReplayOpts {
            scale: 3,
            align: 4096,
            ..ReplayOpts::default()
        };
        assert_eq!(o.offset(3 * 10_000), 8192);
        assert_eq!(ReplayOpts::default().offset(12_345), 12_345);
    }

    #[test]
    fn a_binary_trace_is_told_from_text_by_its_magic() {
        let text = "fio version 3 iolog\n0 /dev/sda add\n5 /dev/sda read 0 4096\n";
        let log = read("t", text.as_bytes(), &ReplayOpts::default()).unwrap();
        assert_eq!(log.ios(), 1);
        let err = read("t", &b"garbage\n"[..], &ReplayOpts::default()).unwrap_err();
        assert!(err.contains("fio version 3 iolog"), "{err}");
    }
}
