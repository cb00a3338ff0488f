//! Runs on every core, results in order as soon as they can be: the engine under
//! `sweep` and `tune`.
//!
//! Design
//! ------
//! `jobs` worker threads take run indices from one counter, so runs start in index
//! order and at most `jobs` are under way. They are plain scoped threads, not a rayon
//! pool: a worker blocks while it waits for the window, and a rayon worker that blocks
//! can be the one a run's own parallel work (`run::in_parallel`) is waiting on, or
//! steal another worker's loop into its stack — a deadlock seen under `tune`. A run's
//! own parallel work goes to rayon's global pool. A finished run goes to the calling
//! thread, which holds it in a small reorder buffer until every run before it is out,
//! then hands it on: output is in index order — byte-identical whatever `jobs` — and
//! streams while later runs go on. A worker does not start run `i` until run
//! `i - window` is out, so one slow run cannot make the buffer grow without bound.
//! When `emit` fails (a run's error, a closed pipe), no new run starts, the ones under
//! way finish, and that error is returned: the first in index order, so errors are as
//! deterministic as output.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

/// The cores of this machine (what `--jobs` defaults to).
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Run `run(i)` for `i` in `0..n` on `jobs` threads and call `emit(i, result)` in
/// order of `i`, on the calling thread (see the module's design).
pub fn ordered<T: Send>(
    n: usize,
    jobs: usize,
    run: impl Fn(usize) -> T + Sync,
    mut emit: impl FnMut(usize, T) -> Result<(), String>,
) -> Result<(), String> {
    let jobs = jobs.clamp(1, n.max(1));
    let window = 8 * jobs;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // how many results are out, and the condition workers wait on for the window
    let out = (Mutex::new(0usize), Condvar::new());
    let (tx, rx) = mpsc::channel::<(usize, T)>();
    let mut result = Ok(());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, stop, out, run) = (&next, &stop, &out, &run);
            let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n || stop.load(Ordering::SeqCst) {
                        return;
                    }
                    {
                        let mut done = out.0.lock().unwrap_or_else(|p| p.into_inner());
                        while i >= *done + window && !stop.load(Ordering::SeqCst) {
                            done = out.1.wait(done).unwrap_or_else(|p| p.into_inner());
                        }
                    }
                    if stop.load(Ordering::SeqCst) || tx.send((i, run(i))).is_err() {
                        return;
                    }
                }
            });
            if let Err(e) = spawned {
                result = Err(format!("cannot start {jobs} worker threads: {e}"));
                stop.store(true, Ordering::SeqCst);
                break;
            }
        }
        drop(tx);
        let mut pending = BTreeMap::new();
        let mut first = 0;
        for (i, r) in rx.iter() {
            if result.is_err() {
                break;
            }
            pending.insert(i, r);
            while let Some(r) = pending.remove(&first) {
                if let Err(e) = emit(first, r) {
                    result = Err(e);
                    stop.store(true, Ordering::SeqCst);
                    break;
                }
                first += 1;
                *out.0.lock().unwrap_or_else(|p| p.into_inner()) = first;
                out.1.notify_all();
            }
            if result.is_err() {
                break;
            }
        }
        // wake the workers waiting for the window (`stop` is set when `emit` failed),
        // so that the scope can end
        let _guard = out.0.lock().unwrap_or_else(|p| p.into_inner());
        out.1.notify_all();
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_whatever_the_threads() {
        for jobs in [1, 2, 7] {
            let mut seen = Vec::new();
            // later indices finish first
            ordered(
                40,
                jobs,
                |i| {
                    std::thread::sleep(std::time::Duration::from_micros(((40 - i) * 50) as u64));
                    i * 10
                },
                |i, v| {
                    seen.push((i, v));
                    Ok(())
                },
            )
            .unwrap();
            let want: Vec<(usize, usize)> = (0..40).map(|i| (i, i * 10)).collect();
            assert_eq!(seen, want, "jobs={jobs}");
        }
    }

    /// A run that does its own work in parallel (`prepare()` parses fio texts with
    /// rayon) while other workers wait for the window. On a rayon pool of workers, the
    /// first worker's run, waiting for its parallel pieces, could take the second
    /// worker's loop (not yet started by an idle thread) into its own stack; that loop
    /// then waits for the window, which waits for the run beneath it: a deadlock, at
    /// the start of about one `tune` in five. Many starts, then, each watched.
    #[test]
    fn runs_that_use_rayon_themselves_never_deadlock_the_workers() {
        use rayon::prelude::*;
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut sums = Vec::new();
            for _ in 0..300 {
                let mut sum = 0;
                let r = ordered(
                    40,
                    2,
                    |i| (0..64usize).into_par_iter().map(|x| x ^ i).sum::<usize>(),
                    |_, v| {
                        sum += v;
                        Ok(())
                    },
                );
                sums.push((r, sum));
            }
            let _ = done_tx.send(sums);
        });
        let sums = done_rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("ordered() did not finish: deadlocked");
        let want: usize = (0..40usize)
            .map(|i| (0..64usize).map(|x| x ^ i).sum::<usize>())
            .sum();
        assert!(sums.iter().all(|s| *s == (Ok(()), want)));
    }

    #[test]
    fn the_first_error_in_order_stops_the_rest() {
        let mut seen = Vec::new();
        let e = ordered(
            1000,
            2,
            |i| i,
            |i, _| {
                if i == 5 {
                    return Err(format!("run {i} failed"));
                }
                seen.push(i);
                Ok(())
            },
        );
        assert_eq!(e, Err("run 5 failed".to_string()));
        assert_eq!(seen, [0, 1, 2, 3, 4]);
    }
}
