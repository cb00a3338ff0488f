//! Progress where a person waits: a bar on a terminal, a status line every few
//! seconds when stderr is a file or a pipe (CI logs, `2> log`), nothing with `--quiet`.
//!
//! Design
//! ------
//! A [`Reporter`] is made once per command from the `--quiet` flag and whether stderr
//! is a terminal; each simulation run asks it for a [`Progress`] with its label and
//! its horizon — simulated time (the duration cap, or the longest job's planned
//! time), or, when no job is bounded by time (`size=`-bound jobs), the bytes the jobs
//! plan to move, or a count of runs (a sweep's points). The pipeline calls
//! [`Progress::update`] once per simulated second with the simulated time and the bytes
//! completed; a sweep calls it as points finish, with the count done. On a terminal the bars of runs
//! that go on in parallel share one `MultiProgress`; elsewhere a run stays silent for
//! its first [`FIRST_LINE_AFTER`] of wall time (quick runs print nothing) and then
//! writes one line every [`LINE_EVERY`] to the sink the reporter holds (the command
//! line's prints it on stderr; the library prints nothing itself). Progress never goes
//! to stdout, so it never changes what a command prints there.
//!
//! A caller that may stop waiting (the Python binding, on Ctrl-C) holds a [`Cancel`]:
//! the pipeline asks it at every progress update (once per simulated second, and
//! every [`crate::sim::engine::Pipeline::run`]'s fixed number of events, so a slow
//! second is no slower to stop) and ends the run early when it is set; `simulate` then
//! returns [`CANCELLED`] instead of the run's outputs, and a sweep starts no new run.
//! A run never cancelled is exactly the run without one.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::notify::Notify;
use crate::sim::Ns;

/// Where a [`Reporter::Lines`] sends its status lines.
pub type LineSink = Arc<dyn Notify + Send>;

/// A run quicker than this prints no status line.
pub const FIRST_LINE_AFTER: Duration = Duration::from_secs(3);
/// Between two status lines.
pub const LINE_EVERY: Duration = Duration::from_secs(5);

/// How a command shows progress.
#[derive(Clone)]
pub enum Reporter {
    /// `--quiet`, or a caller that shows none (tests, the Python binding).
    Quiet,
    /// A terminal: bars.
    Bars(MultiProgress),
    /// A file or a pipe: status lines, to this sink.
    Lines(LineSink),
}

impl Reporter {
    /// The reporter for stderr as it is, unless `quiet`.
    pub fn for_stderr(quiet: bool) -> Reporter {
        if quiet {
            Reporter::Quiet
        } else if std::io::stderr().is_terminal() {
            Reporter::Bars(MultiProgress::new())
        } else {
            Reporter::Lines(Arc::new(crate::cli::Stderr))
        }
    }

    /// Progress of one run labelled `label` towards `horizon`.
    pub fn start(&self, label: &str, horizon: Horizon) -> Progress {
        let total = match horizon {
            Horizon::Time(ns) => ns / 1_000_000,
            Horizon::Bytes(b) | Horizon::Count(b) => b,
        };
        let shown = match self {
            Reporter::Quiet => Shown::Nothing,
            _ if total == 0 => Shown::Nothing,
            Reporter::Bars(multi) => {
                let pb = multi.add(ProgressBar::new(total));
                let template = match horizon {
                    Horizon::Time(_) => "{prefix:>24} [{bar:30}] {pos}/{len} ms simulated",
                    Horizon::Bytes(_) => "{prefix:>24} [{bar:30}] {bytes}/{total_bytes} done",
                    Horizon::Count(_) => "{prefix:>24} [{bar:30}] {pos}/{len} runs, eta {eta}",
                };
                pb.set_style(
                    ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                pb.set_prefix(label.to_string());
                Shown::Bar(pb)
            }
            Reporter::Lines(sink) => Shown::Lines {
                sink: sink.clone(),
                started: Instant::now(),
                next_line: Instant::now() + FIRST_LINE_AFTER,
                printed: false,
            },
        };
        Progress {
            label: label.to_string(),
            horizon,
            shown,
        }
    }
}

/// What a run's progress is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Horizon {
    /// Simulated nanoseconds.
    Time(Ns),
    /// Bytes the jobs plan to move.
    Bytes(u64),
    /// Runs to finish (a sweep's points × seeds).
    Count(u64),
}

enum Shown {
    Nothing,
    Bar(ProgressBar),
    Lines {
        sink: LineSink,
        started: Instant,
        next_line: Instant,
        printed: bool,
    },
}

/// One run's progress.
pub struct Progress {
    label: String,
    horizon: Horizon,
    shown: Shown,
}

impl Progress {
    /// The run has reached simulated time `now` with `done` completed: bytes, or runs
    /// for a [`Horizon::Count`] (whose `now` is unused).
    pub fn update(&mut self, now: Ns, done: u64) {
        let (pos, total) = match self.horizon {
            Horizon::Time(t) => (now / 1_000_000, t / 1_000_000),
            Horizon::Bytes(b) | Horizon::Count(b) => (done, b),
        };
        match &mut self.shown {
            Shown::Nothing => {}
            Shown::Bar(pb) => pb.set_position(pos.min(total)),
            Shown::Lines {
                sink,
                started,
                next_line,
                printed,
            } => {
                let wall = Instant::now();
                if wall < *next_line {
                    return;
                }
                *next_line = wall + LINE_EVERY;
                *printed = true;
                let pct = pos.min(total) as f64 * 100.0 / total.max(1) as f64;
                let done = match self.horizon {
                    // past the horizon (I/O in flight when the jobs' runtime ended):
                    // said as such, never "N s of M s" with N > M
                    Horizon::Time(t) if now > t => format!(
                        "{:.1} s simulated, past the {:.1} s horizon (finishing the I/O in flight)",
                        now as f64 / 1e9,
                        t as f64 / 1e9
                    ),
                    Horizon::Time(t) => format!(
                        "{:.1} s of {:.1} s simulated",
                        now as f64 / 1e9,
                        t as f64 / 1e9
                    ),
                    Horizon::Bytes(b) => format!(
                        "{:.1} of {:.1} MiB done",
                        done as f64 / 1048576.0,
                        b as f64 / 1048576.0
                    ),
                    Horizon::Count(n) => format!("{done} of {n} runs done"),
                };
                sink.status(&format!(
                    "blkcg-sim: {}: {done} ({pct:.0}%), {:.0} s wall",
                    self.label,
                    started.elapsed().as_secs_f64()
                ));
            }
        }
    }

    /// The run has ended: clear the bar, or close the status lines if any were printed.
    pub fn finish(self) {
        match self.shown {
            Shown::Nothing => {}
            Shown::Bar(pb) => pb.finish_and_clear(),
            Shown::Lines {
                sink,
                started,
                printed,
                ..
            } => {
                if printed {
                    sink.status(&format!(
                        "blkcg-sim: {}: done in {:.1} s wall",
                        self.label,
                        started.elapsed().as_secs_f64()
                    ));
                }
            }
        }
    }
}

/// The error of a run or sweep stopped by its [`Cancel`] (the library facade turns it
/// into `api::Error::Cancelled`).
pub const CANCELLED: &str = "cancelled by the caller";

/// A caller's request to stop runs early, shared by its clones (see the module's
/// design); a new one is never set until [`Cancel::cancel`].
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Ask every run holding this (or a clone) to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// [`CANCELLED`] once cancelled.
    pub fn check(&self) -> Result<(), String> {
        if self.is_cancelled() {
            return Err(CANCELLED.to_string());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_and_empty_horizons_show_nothing() {
        let p = Reporter::Quiet.start("a", Horizon::Time(10_000_000_000));
        assert!(matches!(p.shown, Shown::Nothing));
        let p = Reporter::Lines(Arc::new(crate::notify::Ignore)).start("a", Horizon::Time(0));
        assert!(matches!(p.shown, Shown::Nothing));
    }

    #[test]
    fn status_lines_wait_for_a_slow_run() {
        let mut p =
            Reporter::Lines(Arc::new(crate::notify::Ignore)).start("a", Horizon::Bytes(1 << 20));
        p.update(1, 1 << 19);
        let Shown::Lines { printed, .. } = p.shown else {
            panic!("lines expected")
        };
        assert!(!printed, "a quick run prints no line");
    }

    #[test]
    fn a_run_past_its_horizon_says_so_and_never_passes_100_percent() {
        use std::sync::Mutex;
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let got = lines.clone();
        let sink = move |n: crate::notify::Notice<'_>| {
            if let crate::notify::Notice::Status(l) = n {
                got.lock().unwrap().push(l.to_string());
            }
        };
        let mut p = Reporter::Lines(Arc::new(sink)).start("a", Horizon::Time(20_000_000_000));
        for now in [10_000_000_000, 7_506_050_000_000_000] {
            if let Shown::Lines { next_line, .. } = &mut p.shown {
                *next_line = Instant::now();
            }
            p.update(now, 0);
        }
        let lines = lines.lock().unwrap();
        assert!(
            lines[0].contains("10.0 s of 20.0 s simulated (50%)"),
            "{lines:?}"
        );
        assert!(
            lines[1].contains("7506050.0 s simulated, past the 20.0 s horizon")
                && lines[1].contains("(100%)")
                && !lines[1].contains(" of 20.0 s"),
            "{lines:?}"
        );
    }
}
