//! fio's text logs as `read_iolog()` (iolog.c) reads them: a header line, then one
//! line per entry, fields split at white space and told apart by how many parse —
//! v2 `file action [offset length]`, v3 `µs file action [offset length]`.

use std::io::BufRead;

use super::{IoLog, LogEntry, LogOp, ReplayOpts};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    V2,
    V3,
}

/// Lines fio would print "bad iolog" for and skip: how many, and the first.
#[derive(Default)]
struct Skipped {
    n: u64,
    first: Option<(usize, String)>,
}

impl Skipped {
    fn add(&mut self, line: usize, why: String) {
        self.n += 1;
        if self.first.is_none() {
            self.first = Some((line, why));
        }
    }
}

pub(super) fn read(name: &str, mut r: impl BufRead, o: &ReplayOpts) -> Result<IoLog, String> {
    let mut buf = Vec::new();
    let io_err = |e: std::io::Error| format!("{name}: {e}");
    if r.read_until(b'\n', &mut buf).map_err(io_err)? == 0 {
        return Err(format!("{name}: empty: not an fio iolog"));
    }
    // a prefix compare, as fio's strncmp()
    let version = if buf.starts_with(b"fio version 2 iolog") {
        Version::V2
    } else if buf.starts_with(b"fio version 3 iolog") {
        Version::V3
    } else {
        return Err(format!(
            "{name}:1: not an fio iolog: the first line must be `fio version 2 iolog` or \
             `fio version 3 iolog` (fio no longer reads version 1), or the file a blktrace \
             binary (`blkparse -d`)"
        ));
    };
    let mut log = IoLog {
        timed: version == Version::V3 && !o.no_stall,
        ..IoLog::default()
    };
    let mut files: Vec<String> = Vec::new();
    let mut skipped = Skipped::default();
    let mut last_ts = 0u64;
    let mut lineno = 1usize;
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf).map_err(io_err)? == 0 {
            break;
        }
        lineno += 1;
        let line = String::from_utf8_lossy(&buf);
        let mut tok = line.split_whitespace();
        let mut delay = 0;
        if version == Version::V3 {
            let Some(ts) = tok.next().and_then(|t| t.parse::<u64>().ok()) else {
                skipped.add(lineno, "no timestamp".into());
                continue;
            };
            // the baseline moves with every line read, kept or not (fio's order)
            delay = o.gap(last_ts, ts);
            last_ts = ts;
        }
        let (Some(file), Some(action)) = (tok.next(), tok.next()) else {
            skipped.add(lineno, "fewer fields than a file line".into());
            continue;
        };
        let offset = tok.next().map(|t| t.parse::<u64>());
        let len = tok.next().map(|t| t.parse::<u32>());
        let file = o.redirect.as_deref().unwrap_or(file);
        let io = match (offset, len) {
            (Some(Ok(off)), Some(Ok(len))) => Some((off, len)),
            // `file action` with a third field that is no number: still a file line
            (None, _) | (Some(Err(_)), _) => None,
            (Some(Ok(_)), _) => {
                skipped.add(lineno, "an offset without a length".into());
                continue;
            }
        };
        let op = match (io, action) {
            (Some(_), "read") => LogOp::Read,
            (Some(_), "write") => LogOp::Write,
            (Some(_), "trim") => LogOp::Trim,
            (Some(_), "sync") => LogOp::Sync,
            (Some(_), "datasync") => LogOp::Datasync,
            (_, "wait") if version == Version::V3 => {
                skipped.add(lineno, "`wait` in a version 3 log (fio ignores it)".into());
                continue;
            }
            (Some(_), "wait") => LogOp::Wait,
            (None, "add" | "open" | "close") => LogOp::File,
            (_, a) => {
                skipped.add(lineno, format!("bad action `{a}`"));
                continue;
            }
        };
        if action == "add" {
            if !files.iter().any(|f| f == file) {
                files.push(file.to_string());
            }
        } else if op != LogOp::Wait && !files.iter().any(|f| f == file) {
            return Err(format!(
                "{name}:{lineno}: `{action}` on file `{file}`, which no `add` line before it \
                 named (each file of a log is added first: `{file} add`)"
            ));
        }
        if o.skips(op) || (op == LogOp::Wait && o.no_stall) {
            continue;
        }
        let (off, len) = io.unwrap_or((0, 0));
        let entry = match op {
            LogOp::Wait => LogEntry {
                delay_us: 0,
                offset: off,
                len: 0,
                op,
            },
            LogOp::Read | LogOp::Write | LogOp::Trim => {
                let offset = o.offset(off);
                if op == LogOp::Trim {
                    log.trims += 1;
                } else {
                    log.saw_io(offset, u64::from(len), lineno);
                }
                LogEntry {
                    delay_us: delay,
                    offset,
                    len,
                    op,
                }
            }
            LogOp::Sync | LogOp::Datasync | LogOp::File => LogEntry {
                delay_us: delay,
                offset: 0,
                len: 0,
                op,
            },
        };
        log.entries.push(entry);
    }
    if let Some((line, why)) = skipped.first {
        log.warnings.push(format!(
            "{name}: {} lines were not understood and skipped, as fio skips them (the \
             first, line {line}: {why})",
            skipped.n
        ));
    }
    log.all_one_device(name, "files", files);
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(delay_us: u64, op: LogOp, offset: u64, len: u32) -> LogEntry {
        LogEntry {
            delay_us,
            offset,
            len,
            op,
        }
    }

    /// Read as a job's log is read (with the checks after the lines).
    fn log(text: &str, o: &ReplayOpts) -> Result<IoLog, String> {
        super::super::read("t.log", text.as_bytes(), o)
    }

    /// fio's own t/jobs/t0038.iolog, as fio 3.x wrote it (v3, one file, trims and
    /// writes in pairs).
    const T0038: &str = "fio version 3 iolog
30 /dev/null add
10731 /dev/null open
10736 /dev/null trim 0 2147483648
10752 /dev/null write 0 4096
10770 /dev/null trim 4096 2147483648
10775 /dev/null write 4096 4096
10892 /dev/null close
";

    #[test]
    fn fio_s_own_v3_log_reads_with_gaps_from_the_line_before() {
        let l = log(T0038, &ReplayOpts::default()).unwrap();
        assert_eq!(
            l.entries,
            vec![
                entry(0, LogOp::File, 0, 0),
                entry(10701, LogOp::File, 0, 0),
                entry(5, LogOp::Trim, 0, 1 << 31),
                entry(16, LogOp::Write, 0, 4096),
                entry(18, LogOp::Trim, 4096, 1 << 31),
                entry(5, LogOp::Write, 4096, 4096),
                entry(117, LogOp::File, 0, 0),
            ]
        );
        assert_eq!(l.trims, 2);
        assert_eq!(l.max_end, (8192, 7));
        assert!(
            l.warnings.iter().any(|w| w.contains("2 trims")),
            "{:?}",
            l.warnings
        );
    }

    #[test]
    fn v2_has_no_delays_and_waits_hold_their_milliseconds() {
        let text = "fio version 2 iolog\nf add\nf open\nf read 0 4096\nf wait 250 0\n\
                    f write 8192 512\nf close";
        let l = log(text, &ReplayOpts::default()).unwrap();
        assert_eq!(l.entries[2], entry(0, LogOp::Read, 0, 4096));
        assert_eq!(l.entries[3], entry(0, LogOp::Wait, 250, 0));
        assert_eq!(l.entries[4], entry(0, LogOp::Write, 8192, 512));
        assert_eq!(l.entries.len(), 6, "the last line needs no newline");
        let still = ReplayOpts {
            no_stall: true,
            ..ReplayOpts::default()
        };
        let l = log(text, &still).unwrap();
        assert!(l.entries.iter().all(|e| e.op != LogOp::Wait));
    }

    #[test]
    fn skipped_lines_still_move_the_clock() {
        let text = "fio version 3 iolog\n1 f add\n100 f read 0 4096\n400 f write 0 4096\n\
                    1000 f read 4096 4096\n";
        let o = ReplayOpts {
            skip: super::super::SKIP_WRITE,
            ..ReplayOpts::default()
        };
        let l = log(text, &o).unwrap();
        let reads: Vec<u64> = l
            .entries
            .iter()
            .filter(|e| e.op == LogOp::Read)
            .map(|e| e.delay_us)
            .collect();
        // the skipped write's 300 µs are lost, as in fio
        assert_eq!(reads, vec![99, 600]);
    }

    #[test]
    fn bad_lines_are_counted_and_an_unknown_file_is_an_error() {
        let text = "fio version 3 iolog\n0 f add\nnonsense\n5 f frobnicate 0 1\n6 f read 0\n\
                    7 f wait 5 0\n8 f read 0 4096\n";
        let l = log(text, &ReplayOpts::default()).unwrap();
        assert_eq!(l.ios(), 1);
        let w = l.warnings.join("\n");
        assert!(
            w.contains("4 lines were not understood") && w.contains("line 3"),
            "{w}"
        );
        let err = log(
            "fio version 2 iolog\ng read 0 4096\n",
            &ReplayOpts::default(),
        )
        .unwrap_err();
        assert!(
            err.starts_with("t.log:2:") && err.contains("`g add`"),
            "{err}"
        );
    }

    #[test]
    fn redirect_makes_one_file_and_several_files_warn() {
        let text = "fio version 2 iolog\na add\nb add\na read 0 4096\nb write 0 4096\n";
        let l = log(text, &ReplayOpts::default()).unwrap();
        assert!(
            l.warnings.iter().any(|w| w.contains("2 files (a, b)")),
            "{:?}",
            l.warnings
        );
        let o = ReplayOpts {
            redirect: Some("/dev/x".into()),
            ..ReplayOpts::default()
        };
        let l = log(text, &o).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.ios(), 2);
    }

    #[test]
    fn unaligned_io_is_remembered_by_line() {
        let text = "fio version 2 iolog\nf add\nf read 0 4096\nf read 100 4096\n";
        let l = log(text, &ReplayOpts::default()).unwrap();
        assert_eq!(l.unaligned, Some(4));
    }
}
