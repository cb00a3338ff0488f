//! Buffered writes (issue 34): `example-buffered-iomax`, a dd-like writer in a cgroup
//! held to 10 MiB/s of writes by `io.max`, on a host with 4 GiB of dirtyable memory
//! (dirty limit 819 MiB, background 409 MiB, freerun ceiling 614 MiB), and fio's
//! `fsync=N` on its own.
//!
//! What the kernel does, and so the bands: a write only copies into the page cache,
//! so below the freerun ceiling the writer runs at memory speed (1 µs a page here:
//! ~3.9 GiB/s) and `io.max` holds only the flusher's writeback, at 10 MiB/s, long
//! after the writer is done; past the ceiling `balance_dirty_pages()` paces the writer
//! toward its wb's write bandwidth; `end_fsync` (dd's `conv=fsync`) makes the job wait
//! for the device; `memory.max` gives the cgroup its own dirty limits, a fifth of what
//! it may use; `direct=1` is held by `io.max` itself.

use blkcg_sim::run::{VariantRun, run_variant};
use blkcg_sim::scenario::{Scenario, embedded};

mod common;

const MIB: f64 = 1024.0 * 1024.0;

fn variant(name: &str) -> VariantRun {
    let text = embedded::get("example-buffered-iomax").expect("built-in scenario");
    let sc = Scenario::parse(text, "example-buffered-iomax.toml").unwrap();
    run_variant(&sc, Some(name), None, None, false).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The writer's fio bandwidth (MiB/s), its cgroup's written bytes (io.stat, MiB), its
/// most dirty-or-under-writeback pages at once (MiB), and when the last page reached
/// the device (s).
fn figures(run: &VariantRun) -> (f64, f64, f64, f64) {
    let bw = run.summaries[0].mib_s;
    let written = run.out.cg_stat[1].wbytes as f64 / MIB;
    let pc = run.out.page_cache.as_deref();
    let peak = pc.map_or(0.0, |p| p.model.wbs[1].peak as f64 * 4096.0 / MIB);
    let last = pc.and_then(|p| p.last_written).unwrap_or(run.out.end) as f64 / 1e9;
    (bw, written, peak, last)
}

#[test]
fn io_max_holds_the_writeback_not_the_writer_below_the_freerun_ceiling() {
    let run = variant("buffered");
    let (bw, written, peak, last) = figures(&run);
    // 512 MiB copied at ~1 µs a page (plus a syscall per MiB): ~3.9 GiB/s; io.max
    // would give 10
    assert!(bw > 2000.0, "the writer got {bw:.1} MiB/s");
    // every page reaches the device, as the writeback of `batch`, at 10 MiB/s:
    // 51.2 s (+ the first writeback's start)
    assert_eq!(written, 512.0);
    assert!((51.2..52.0).contains(&last), "the last page at {last:.3} s");
    assert_eq!(peak, 512.0);
    let summary = blkcg_sim::report::outputs::summary_text(&run);
    assert!(
        summary.contains("page cache: dirty limit 819 MiB, background 409 MiB, freerun 614 MiB"),
        "{summary}"
    );
    assert!(
        summary.contains("assumed: page cache of 4294967296 bytes dirtyable"),
        "{summary}"
    );
}

#[test]
fn past_the_freerun_ceiling_the_writer_is_paced_toward_its_writeback() {
    let run = variant("past-the-setpoint");
    let (bw, written, peak, last) = figures(&run);
    // 2 GiB: the first ~614 MiB at memory speed, the rest paced down from 100 MiB/s
    // (INIT_BW) toward the 10 MiB/s its pages are written at; never over the limit
    assert!((11.0..25.0).contains(&bw), "the writer got {bw:.1} MiB/s");
    assert_eq!(written, 2048.0);
    assert!(
        (780.0..819.0).contains(&peak),
        "at most {peak:.1} MiB dirty"
    );
    assert!(
        (204.8..206.0).contains(&last),
        "the last page at {last:.3} s"
    );
    let paused = run.out.jobs[0].2.dirty_paused as f64 / 1e9;
    assert!(paused > 100.0, "paused {paused:.1} s");
}

#[test]
fn end_fsync_makes_the_writer_wait_for_the_device() {
    let (bw, written, _, _) = figures(&variant("end_fsync"));
    assert!((9.7..10.1).contains(&bw), "the writer got {bw:.2} MiB/s");
    assert_eq!(written, 512.0);
}

#[test]
fn memory_max_gives_the_cgroup_its_own_lower_dirty_limits() {
    let run = variant("memory.max");
    let (bw, written, peak, _) = figures(&run);
    // 256 MiB of memory: limit 51 MiB, freerun 38 MiB; the writer is paced from there
    assert!(bw < 15.0, "the writer got {bw:.1} MiB/s");
    assert_eq!(written, 512.0);
    assert!((45.0..56.0).contains(&peak), "at most {peak:.1} MiB dirty");
    let summary = blkcg_sim::report::outputs::summary_text(&run);
    assert!(
        summary.contains("its own limit 51 MiB, background 26 MiB"),
        "{summary}"
    );
}

#[test]
fn direct_writes_are_held_by_io_max_itself() {
    let run = variant("direct");
    let (bw, written, _, _) = figures(&run);
    assert!((9.95..10.05).contains(&bw), "the writer got {bw:.2} MiB/s");
    assert_eq!(written, 512.0);
    assert!(run.out.page_cache.is_none());
}

/// fio's `fsync=16`: a sync after every 16 writes issued, none after the last (fio
/// stops at the size first), each in the sync statistics with its latency: the
/// device's time for the 16 MiB it wrote out.
#[test]
fn fsync_every_n_writes_is_timed_as_fio_reports_it() {
    let text = "name = \"fsync\"\n[device]\nmodel = \"nullb\"\ndev = \"252:0\"\n\
                [kernel]\nversion = \"6.12\"\nhz = 250\n[cgroup.a]\n\
                \"io.max\" = \"252:0 wbps=10485760\"\n\
                fio = \"fio --name=w --rw=write --bs=1M --size=64M --fsync=16\"\n";
    let sc = Scenario::parse(text, "fsync.toml").unwrap();
    let run = run_variant(&sc, None, None, None, false).unwrap();
    let stats = &run.out.jobs[0].1;
    assert_eq!(stats.sync.n, 3);
    let mean_s = stats.sync.mean / 1e9;
    assert!((1.55..1.65).contains(&mean_s), "a sync took {mean_s:.3} s");
    let text = blkcg_sim::report::fio::text::to_normal(&run.fio);
    assert!(
        text.contains("  fsync/fdatasync/sync_file_range:\n    sync (usec): min="),
        "{text}"
    );
}

/// fio's `sync_file_range=flags:4` on a writer of a MiB every 250 ms (io.max at
/// 10 MiB/s): its range is what the job wrote since its last sync (fio's
/// `first_write`..`last_write`), each flag one step of `sync_file_range()`. All three
/// flags are an `fsync()` of the range: 4 MiB at 10 MiB/s each. `write` alone starts
/// the range's writeback and returns, so the device keeps pace with the writer;
/// `wait_after` alone waits only for writeback already started in the range — none:
/// the 16 MiB stay dirty, below the background threshold, until the job's close
/// writes them (`sync_blockdev()`).
#[test]
fn sync_file_range_writes_and_waits_as_its_flags_say() {
    let run = |flags: &str| {
        let text = format!(
            "name = \"sfr\"\n[device]\nmodel = \"nullb\"\ndev = \"252:0\"\n\
             [kernel]\nversion = \"6.12\"\nhz = 250\n[cgroup.a]\n\
             \"io.max\" = \"252:0 wbps=10485760\"\n\
             fio = \"fio --name=w --rw=write --bs=1M --size=16M --thinktime=250ms \
             --sync_file_range={flags}:4\"\n"
        );
        let sc = Scenario::parse(&text, "sfr.toml").unwrap();
        let run = run_variant(&sc, None, None, None, false).unwrap();
        let sync = &run.out.jobs[0].1.sync;
        (sync.n, sync.mean / 1e9, run.out.end as f64 / 1e9)
    };
    let (n, mean_s, _) = run("wait_before,write,wait_after");
    assert_eq!(n, 3);
    assert!((0.39..0.42).contains(&mean_s), "a sync took {mean_s:.3} s");
    let (n, mean_s, kept_pace) = run("write");
    assert_eq!(n, 3);
    assert!(mean_s < 0.001, "a sync took {mean_s:.4} s");
    let (n, mean_s, at_close) = run("wait_after");
    assert_eq!(n, 3);
    assert!(mean_s < 0.001, "a sync took {mean_s:.4} s");
    // the job closes its file at 4 s (16 × 250 ms): 4 MiB left to write then with
    // `write` (0.4 s), all 16 MiB without (1.6 s)
    assert!(
        (4.35..4.45).contains(&kept_pace) && (5.55..5.65).contains(&at_close),
        "the device was done at {kept_pace:.2} s with write, {at_close:.2} s without"
    );
}

#[test]
fn sync_file_range_is_parsed_as_fio_does() {
    for (value, error) in [
        (
            "flush:8",
            "`flush` is not valid; accepted: wait_before, write, wait_after",
        ),
        ("write:0", "0"),
    ] {
        let text = format!(
            "name = \"sfr\"\n[device]\nmodel = \"nullb\"\n[cgroup.a]\n\
             fio = \"fio --name=w --rw=write --bs=1M --size=64M --sync_file_range={value}\"\n"
        );
        let sc = Scenario::parse(&text, "sfr.toml").unwrap();
        let Err(err) = run_variant(&sc, None, None, None, false) else {
            panic!("sync_file_range={value} was accepted");
        };
        let err = err.to_string();
        assert!(
            err.contains("sync_file_range") && err.contains(error),
            "{err}"
        );
    }
}

#[test]
fn a_buffered_run_is_the_same_run_twice() {
    let a = variant("past-the-setpoint");
    let b = variant("past-the-setpoint");
    let text = |r: &VariantRun| blkcg_sim::report::fio::text::to_normal(&r.fio);
    assert_eq!(text(&a), text(&b));
    assert_eq!(a.out.end, b.out.end);
}

/// `validate-buffered-iomax` as `validate` simulates it (the qemu guest's profile: its
/// dirtyable memory while writing and its page copy, measured there), beside Debian's
/// kernels (docs/validation.md §40: the mean of six boots on `buffered`, one on
/// `end_fsync`). The writer's median `write()` is the copy; its total time is within
/// the 10% issue #34 asks (MiB/s 0.91–1.10 of the real, sim 1.03 and 0.95 since
/// session 32); with `end_fsync` both wait for the device.
#[test]
fn validate_buffered_iomax_stays_next_to_the_real_kernels() {
    // (release, variant, real MiB/s, real clat p50 µs, band on the MiB/s ratio)
    let cases = [
        ("6.12.117", "buffered", 178.7, 1548.0, 0.91..1.10),
        ("6.1.192", "buffered", 186.3, 1524.0, 0.91..1.10),
        ("6.12.117", "end_fsync", 19.5, 1532.0, 0.98..1.04),
        ("6.1.192", "end_fsync", 19.7, 1516.0, 0.98..1.03),
    ];
    for (release, v, real_bw, real_p50, band) in cases {
        let run = common::validate_run_next_to_real(
            "validate-buffered-iomax",
            v,
            release,
            (real_bw, band),
            (real_p50, 0.03),
        );
        // io.max holds the writeback: every byte at 20 MiB/s, done by 19.2 s + the
        // start (the real device's last second is its 19th)
        let last = run
            .out
            .page_cache
            .as_deref()
            .and_then(|p| p.last_written)
            .unwrap() as f64
            / 1e9;
        let mib = run.out.cg_stat[1].wbytes as f64 / MIB;
        assert!(
            last >= mib / 20.0 && last < mib / 20.0 + 1.0,
            "{release} {v}: last page at {last:.2} s"
        );
    }
}

/// The page cache's plateau as `validate` compares it (§40): the most dirty and under
/// writeback pages at once of the whole seconds, against `/proc/meminfo`'s `Dirty` +
/// `Writeback` sampled once a second in the guest (real: 347.8 MiB on both, the
/// mean of two boots each).
#[test]
fn validate_buffered_iomax_dirty_plateau_is_the_real_kernels() {
    use blkcg_sim::writeback::timeline::WbRow;
    for (release, real) in [("6.12.117", 347.8), ("6.1.192", 347.8)] {
        let run = common::as_validate_simulates_variant(
            "validate-buffered-iomax",
            Some("buffered"),
            release,
        );
        let peak = run
            .record
            .rows::<WbRow>()
            .iter()
            .filter_map(|r| match *r {
                WbRow::Global {
                    at,
                    dirty,
                    writeback,
                    ..
                } if at % 1_000_000_000 == 0 => Some((dirty + writeback) as f64 * 4096.0 / MIB),
                _ => None,
            })
            .fold(0.0, f64::max);
        assert!(
            (peak / real - 1.0).abs() < 0.05,
            "{release}: most dirty + under writeback {peak:.1} MiB, real {real}"
        );
    }
}
