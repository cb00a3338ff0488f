//! fio's bandwidth, latency and IOPS logs (`write_bw_log`, `write_lat_log`,
//! `write_iops_log`, `log_avg_msec`, `log_max_value`), as fio 3.33 makes them.
//!
//! Design
//! ------
//! Every row is `time, value, ddir, bs, prio` (`flush_samples()`): the time in whole
//! ms since the job's epoch (its start, or the end of `ramp_time`: nothing of the
//! ramp is logged). The job runtime (`crate::sim::fio`) hands each logged event over:
//! an I/O's submission (the slat log; async engines only, so a psync job's slat file
//! stays empty) and its reaping (lat, clat, bw, iops: `account_io_completion()`).
//!
//! Without `log_avg_msec` each event is a row: lat / clat / slat in ns, bw as that
//! I/O's bytes over its clat (`bytes * 1000000 / clat_ns`: 1000-byte kB/s, whatever
//! the HOWTO says), iops 1; bs the I/O's bytes; prio 1 for a real-time job.
//!
//! With `log_avg_msec = N`: a latency log keeps a window per direction and writes its
//! mean (`log_max_value`: its max) when an event comes at least N ms after the window's
//! start, at that event's time, bs and prio 0; the window then restarts at the
//! multiple of N below (`add_log_sample()`); a window still open at the job's end is
//! written then (`finalize_logs()`). bw and iops are fio's helper thread's samples
//! every N ms (`__add_samples()`): each direction's bytes (I/Os) of the window over
//! it, in KiB/s (per second), one row per direction that moved, at the window's end;
//! the part after the last whole window is never logged.
//!
//! Simplified, and why: fio's helper wakes about every N ms and measures what it
//! slept (its rows land on 999, 1000 or 1001); here each window is N exactly, its
//! rows written when the job's next event passes it. A command's own priority
//! (`cmdprio_percentage`) is not in the prio column: the job's class is.
//!
//! The lines go to the run's recorder with the I/O log's (`replay.rs`), file by file.

use std::fmt::Write as _;

use crate::sim::{Dir, Ns};

/// The logs fio names by type (`gen_log_name()`): bw, iops, lat, slat, clat.
pub const STAT_LOG_TYPES: [&str; 5] = ["bw", "iops", "lat", "slat", "clat"];
const BW: usize = 0;
const IOPS: usize = 1;
const LAT: usize = 2;
const SLAT: usize = 3;
const CLAT: usize = 4;

/// A job's stat logs as its options ask for them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatLogSpec {
    /// Each type's file name (in [`STAT_LOG_TYPES`] order), when written.
    pub files: [Option<Box<str>>; 5],
    /// `log_avg_msec` (0: a row per event).
    pub avg_ms: u64,
    /// `log_max_value`: a window's max, not its mean.
    pub max_value: bool,
    /// The job runs at a real-time priority (the prio column).
    pub rt: bool,
}

/// A latency window (`avg_window[ddir]`, `avg_last[ddir]`).
#[derive(Debug, Default)]
struct Window {
    n: u64,
    mean: f64,
    max: u64,
    /// Where it started, ms.
    last: u64,
}

/// One log being written.
#[derive(Debug)]
pub(in crate::sim) struct StatLog {
    pub(in crate::sim) name: Box<str>,
    pub(in crate::sim) lines: String,
    /// Its file is made (fio makes every log it was asked for, a psync job's empty
    /// slat log too).
    pub(in crate::sim) made: bool,
    win: [Window; 2],
}

/// A job's logs and the helper's bw/iops window.
#[derive(Debug)]
pub(in crate::sim) struct StatLogs {
    pub(in crate::sim) logs: [Option<StatLog>; 5],
    avg_ms: u64,
    max_value: bool,
    prio: u8,
    /// The bw/iops window under way (its index) and each direction's bytes and I/Os.
    rate_window: u64,
    moved: [(u64, u64); 2],
}

impl StatLogs {
    pub(in crate::sim) fn new(spec: &StatLogSpec) -> StatLogs {
        StatLogs {
            logs: spec.files.clone().map(|f| {
                f.map(|name| StatLog {
                    name,
                    lines: String::new(),
                    made: false,
                    win: Default::default(),
                })
            }),
            avg_ms: spec.avg_ms,
            max_value: spec.max_value,
            prio: u8::from(spec.rt),
            rate_window: 0,
            moved: [(0, 0); 2],
        }
    }

    /// A row of log `k`.
    fn row(&mut self, k: usize, ms: u64, value: u64, dir: Dir, bs: u64, prio: u8) {
        if let Some(l) = &mut self.logs[k] {
            let _ = writeln!(l.lines, "{ms}, {value}, {}, {bs}, {prio}", dir.idx());
        }
    }

    /// `add_log_sample()` of a latency `value` to log `k` at `ms`.
    fn sample(&mut self, k: usize, ms: u64, value: u64, dir: Dir, bs: u64) {
        if self.avg_ms == 0 {
            let prio = self.prio;
            self.row(k, ms, value, dir, bs, prio);
            return;
        }
        let (avg, max_value) = (self.avg_ms, self.max_value);
        let Some(l) = &mut self.logs[k] else {
            return;
        };
        let w = &mut l.win[dir.idx()];
        w.n += 1;
        w.mean += (value as f64 - w.mean) / w.n as f64;
        w.max = w.max.max(value);
        if ms < w.last || ms - w.last < avg {
            return;
        }
        let v = window_value(w, max_value);
        *w = Window {
            last: ms - ms % avg,
            ..Window::default()
        };
        self.row(k, ms, v, dir, 0, 0);
    }

    /// Submission at `ms` of an I/O of `bytes` with its `slat` (`io_u_queued()`).
    pub(in crate::sim) fn submitted(&mut self, ms: u64, dir: Dir, bytes: u64, slat: Ns) {
        self.sample(SLAT, ms, slat, dir, bytes);
    }

    /// Completion reaped at `ms` of an I/O of `bytes` (`account_io_completion()`).
    pub(in crate::sim) fn completed(&mut self, ms: u64, dir: Dir, bytes: u64, lat: Ns, clat: Ns) {
        self.sample(LAT, ms, lat, dir, bytes);
        self.sample(CLAT, ms, clat, dir, bytes);
        if self.avg_ms == 0 {
            let prio = self.prio;
            let rate = (bytes * 1_000_000).checked_div(clat).unwrap_or(0);
            self.row(BW, ms, rate, dir, bytes, prio);
            self.row(IOPS, ms, 1, dir, bytes, prio);
            return;
        }
        self.close_rate_windows(ms);
        let m = &mut self.moved[dir.idx()];
        m.0 += bytes;
        m.1 += 1;
    }

    /// The helper's samples of every whole window before `ms` (`__add_samples()`).
    fn close_rate_windows(&mut self, ms: u64) {
        let avg = self.avg_ms;
        if ms / avg <= self.rate_window {
            return;
        }
        let end = (self.rate_window + 1) * avg;
        for dir in Dir::BOTH {
            let (bytes, ios) = std::mem::take(&mut self.moved[dir.idx()]);
            if ios > 0 {
                self.row(BW, end, bytes * 1000 / avg / 1024, dir, 0, 0);
                self.row(IOPS, end, ios * 1000 / avg, dir, 0, 0);
            }
        }
        self.rate_window = ms / avg;
    }

    /// The job ends at `ms`: the latency windows still open are written
    /// (`finalize_logs()`); the rates' partial window is not.
    pub(in crate::sim) fn finish(&mut self, ms: u64) {
        if self.avg_ms == 0 {
            return;
        }
        self.close_rate_windows(ms);
        let max_value = self.max_value;
        for k in [LAT, SLAT, CLAT] {
            for dir in Dir::BOTH {
                let Some(l) = &mut self.logs[k] else {
                    continue;
                };
                let w = &mut l.win[dir.idx()];
                if w.n > 0 {
                    let v = window_value(w, max_value);
                    *w = Window::default();
                    self.row(k, ms, v, dir, 0, 0);
                }
            }
        }
    }
}

/// A window's row: its rounded mean (`(u64)(mean + 0.50)`), or its max.
fn window_value(w: &Window, max_value: bool) -> u64 {
    if max_value {
        w.max
    } else {
        (w.mean + 0.5) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logs(avg_ms: u64) -> StatLogs {
        let names = STAT_LOG_TYPES.map(|t| Some(format!("j_{t}.1.log").into()));
        StatLogs::new(&StatLogSpec {
            files: names,
            avg_ms,
            max_value: false,
            rt: false,
        })
    }

    fn text(l: &StatLogs, k: usize) -> &str {
        &l.logs[k].as_ref().unwrap().lines
    }

    #[test]
    fn without_windows_every_io_is_a_row() {
        let mut l = logs(0);
        l.submitted(0, Dir::Read, 4096, 2_000);
        l.completed(3, Dir::Read, 4096, 102_000, 100_000);
        assert_eq!(text(&l, SLAT), "0, 2000, 0, 4096, 0\n");
        assert_eq!(text(&l, LAT), "3, 102000, 0, 4096, 0\n");
        assert_eq!(text(&l, CLAT), "3, 100000, 0, 4096, 0\n");
        // 4096 bytes in 100 µs: 40960 bytes a ms
        assert_eq!(text(&l, BW), "3, 40960, 0, 4096, 0\n");
        assert_eq!(text(&l, IOPS), "3, 1, 0, 4096, 0\n");
    }

    #[test]
    fn windows_close_on_the_first_event_past_them() {
        let mut l = logs(100);
        for (ms, clat) in [(10, 100), (60, 300), (99, 200), (100, 1000), (250, 7)] {
            l.completed(ms, Dir::Write, 4096, clat, clat);
        }
        l.finish(260);
        // 10..99 are one window, closed by the event at 100 (mean of 100, 300, 200,
        // 1000 = 400); the next starts at 100 and is closed by 250 alone; none left
        assert_eq!(text(&l, CLAT), "100, 400, 1, 0, 0\n250, 7, 1, 0, 0\n");
        // the rates: window 0 moved 3 I/Os (12 KiB), window 1 one, window 2's one is
        // in a partial window at the end: not logged
        assert_eq!(text(&l, IOPS), "100, 30, 1, 0, 0\n200, 10, 1, 0, 0\n");
        assert_eq!(text(&l, BW), "100, 120, 1, 0, 0\n200, 40, 1, 0, 0\n");
    }
}
