//! Trace replay (issue 36): fio's `read_iolog` and `write_iolog` in a scenario's jobs,
//! with fio 3.33's pacing, and the lateness the summary reports
//! (`crate::workload::iolog`, `crate::sim::fio::replay`; docs/validation.md §45).
//!
//! The hand-worked cases: a log of reads 1 ms apart capped at half that rate falls
//! behind by one log-millisecond per I/O; `replay_no_stall` ignores the log's times;
//! a v2 `wait` holds the replay until its time; a job's written log replays to the
//! same I/Os. And `validate-replay` beside Debian's kernels.

use std::fmt::Write as _;
use std::path::Path;

use blkcg_sim::run::{VariantRun, run_variant};
use blkcg_sim::scenario::Scenario;

mod common;

/// A v3 log of `n` 4 KiB reads, one every `gap_us`, at random-looking offsets.
fn reads_log(n: u64, gap_us: u64) -> String {
    let mut s = String::from("fio version 3 iolog\n1 /dev/sdx add\n2 /dev/sdx open\n");
    for i in 0..n {
        let off = (i * 7919 % 100_000) * 4096;
        let _ = writeln!(s, "{} /dev/sdx read {off} 4096", 1000 + i * gap_us);
    }
    s
}

/// Scenario `toml` written beside its logs in `dir` (as a user keeps them), run.
fn run_in(dir: &Path, toml: &str, variant: Option<&str>) -> Result<VariantRun, String> {
    let file = dir.join("s.toml");
    std::fs::write(&file, toml).unwrap();
    let sc = Scenario::parse(toml, file.to_str().unwrap()).map_err(|e| e.to_string())?;
    run_variant(&sc, variant, None, None, false)
}

const NULLB: &str = "[device]\nmodel = \"nullb\"\ndev = \"252:0\"\nirqmode = 2\n\
                     completion_nsec = 100000\n";

fn summary<'a>(run: &'a VariantRun, job: &str) -> &'a blkcg_sim::report::summary::JobSummary {
    run.summaries.iter().find(|s| s.job == job).unwrap()
}

#[test]
fn a_capped_replay_falls_behind_its_log_by_the_cap() {
    let dir = common::scratch("replay-capped");
    std::fs::write(dir.join("r.log"), reads_log(1000, 1000)).unwrap();
    let toml = format!(
        "name = \"t\"\n{NULLB}[cgroup.a]\nfio = \"fio --name=r --read_iolog=r.log \
         --ioengine=psync --direct=1\"\n[[variant]]\nname = \"free\"\n[[variant]]\n\
         name = \"capped\"\ncgroup.a.\"io.max\" = \"252:0 riops=500\"\n"
    );
    let free = run_in(&dir, &toml, Some("free")).unwrap();
    let s = summary(&free, "r");
    // 1,000 reads a second, each 100 µs: on time but for the sleeps' lateness, the
    // default host's 50 µs timer slack, which fio's carried lateness never takes back
    // (each sleep still ends within its delay): ~50 µs a read, 50 ms at the end
    assert!((930.0..=1000.0).contains(&s.iops), "{}", s.iops);
    let [mean, _, max] = s.lateness_ms.unwrap();
    assert!(mean < 40.0 && max < 80.0, "free: {mean} / {max} ms");
    let capped = run_in(&dir, &toml, Some("capped")).unwrap();
    let s = summary(&capped, "r");
    assert!((490.0..=520.0).contains(&s.iops), "{}", s.iops);
    // at 500 a second the i-th read goes at 2i ms against its i ms in the log: the
    // last is ~1 s late, the mean half that
    let [mean, _, max] = s.lateness_ms.unwrap();
    assert!((950.0..=1050.0).contains(&max), "capped max {max} ms");
    assert!((470.0..=530.0).contains(&mean), "capped mean {mean} ms");
    assert!(
        blkcg_sim::report::summary::summary_table(&capped.summaries).contains("replay lateness")
    );
}

#[test]
fn no_stall_plays_as_fast_as_the_queue_and_a_wait_holds_until_its_time() {
    let dir = common::scratch("replay-stall");
    std::fs::write(dir.join("r.log"), reads_log(200, 1000)).unwrap();
    let job = |opts: &str| {
        format!(
            "name = \"t\"\n{NULLB}[cgroup.a]\nfio = \"fio --name=r --read_iolog=r.log \
             --ioengine=psync --direct=1 {opts}\"\n"
        )
    };
    let timed = run_in(&dir, &job(""), None).unwrap();
    let still = run_in(&dir, &job("--replay_no_stall=1"), None).unwrap();
    // 200 reads 1 ms apart take 0.2 s; without the times, 200 × ~100 µs
    let ms = |r: &VariantRun| r.fio.jobs[0].runtime_ms;
    assert!((195..=215).contains(&ms(&timed)), "{}", ms(&timed));
    assert!(ms(&still) < 40, "no stall: {} ms", ms(&still));
    assert!(
        summary(&still, "r").lateness_ms.is_none(),
        "no times, no lateness"
    );
    // v2: no times but its waits, in ms after fio started
    let v2 = "fio version 2 iolog\nf add\nf open\nf read 0 4096\nf wait 300 0\nf read 4096 4096\n";
    std::fs::write(dir.join("r.log"), v2).unwrap();
    let waited = run_in(&dir, &job(""), None).unwrap();
    assert!((300..=320).contains(&ms(&waited)), "{}", ms(&waited));
}

#[test]
fn a_written_log_replays_to_the_same_ios() {
    let dir = common::scratch("replay-roundtrip");
    let out = dir.join("out");
    let first = format!(
        "name = \"w\"\n{NULLB}[cgroup.a]\nfio = \"fio --name=w --rw=randrw --rwmixread=70 \
         --bsrange=4k-16k --ioengine=psync --direct=1 --rate_iops=400 --runtime=1 \
         --time_based --write_iolog=w.log\"\n"
    );
    std::fs::write(dir.join("w.toml"), &first).unwrap();
    common::stdout_of(&[
        "run",
        dir.join("w.toml").to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let log = std::fs::read_to_string(out.join("default/w.log")).unwrap();
    assert!(log.starts_with("fio version 3 iolog\n0 /dev/nullb0 add\n0 /dev/nullb0 open\n"));
    assert!(log.trim_end().ends_with("/dev/nullb0 close"), "{log}");
    let sc = Scenario::parse(&first, "w.toml").unwrap();
    let written = run_variant(&sc, None, None, None, false).unwrap();
    std::fs::copy(out.join("default/w.log"), dir.join("w.log")).unwrap();
    let replay = format!(
        "name = \"r\"\n{NULLB}[cgroup.a]\nfio = \"fio --name=w --read_iolog=w.log \
         --ioengine=psync --direct=1\"\n"
    );
    let replayed = run_in(&dir, &replay, None).unwrap();
    // the same reads and writes, byte for byte, in the same cgroup
    assert_eq!(replayed.io_stat, written.io_stat);
    let (a, b) = (summary(&written, "w"), summary(&replayed, "w"));
    assert!(
        (b.iops / a.iops - 1.0).abs() < 0.02,
        "{} vs {}",
        b.iops,
        a.iops
    );
    assert!((b.clat_mean_ms / a.clat_mean_ms - 1.0).abs() < 0.05);
}

/// One blktrace record of a 4 KiB event, as blktrace writes it on x86.
fn rec(time: u64, sector: u64, action: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend((0x6561_7400u32 | 7).to_le_bytes());
    v.extend(0u32.to_le_bytes());
    v.extend(time.to_le_bytes());
    v.extend(sector.to_le_bytes());
    v.extend(4096u32.to_le_bytes());
    v.extend(action.to_le_bytes());
    v.extend([0u8; 16]);
    v
}

#[test]
fn a_blktrace_binary_replays_its_queue_events() {
    // two reads and a write queued 1 ms apart on 8:16, each issued and completed
    let (q, c) = (1, 8);
    let (read, write) = (1 << 16, 1 << 17);
    let mut t = Vec::new();
    for (i, dir) in [read, read, write].into_iter().enumerate() {
        let at = 1_000_000 * (i as u64 + 1);
        t.extend(rec(at, 8 * i as u64, q | dir));
        t.extend(rec(at + 100_000, 8 * i as u64, c | dir));
    }
    let dir = common::scratch("replay-blktrace");
    std::fs::write(dir.join("sdb.blktrace.0"), t).unwrap();
    let toml = format!(
        "name = \"t\"\n{NULLB}[cgroup.a]\nfio = \"fio --name=b --read_iolog=sdb.blktrace.0 \
         --ioengine=libaio --direct=1\"\n"
    );
    let run = run_in(&dir, &toml, None).unwrap();
    assert!(run.io_stat.contains("rios=2 wios=1"), "{}", run.io_stat);
    assert!((2..=3).contains(&run.fio.jobs[0].runtime_ms));
}

#[test]
fn logs_the_device_cannot_take_are_refused_with_their_line() {
    let dir = common::scratch("replay-refused");
    let big = "fio version 3 iolog\n1 f add\n2 f read 0 4096\n3 f read 999999999999999 4096\n";
    std::fs::write(dir.join("big.log"), big).unwrap();
    let job = |opts: &str| {
        format!("name = \"t\"\n{NULLB}[cgroup.a]\nfio = \"fio --name=r --direct=1 {opts}\"\n")
    };
    let refused = |opts: &str| match run_in(&dir, &job(opts), None) {
        Ok(_) => panic!("{opts}: ran"),
        Err(e) => e,
    };
    let e = refused("--read_iolog=big.log");
    assert!(
        e.contains("big.log:4:") && e.contains("replay_scale="),
        "{e}"
    );
    let e = refused("--read_iolog=missing.log");
    assert!(
        e.contains("missing.log") && e.contains("No such file"),
        "{e}"
    );
    let e = refused("--rw=read --write_iolog=../x.log");
    assert!(
        e.contains("write_iolog=../x.log") && e.contains("plain file name"),
        "{e}"
    );
    let e = refused("--read_iolog=big.log --replay_align=3000");
    assert!(e.contains("power of 2"), "{e}");
    let e = refused("--read_iolog=big.log --replay_skip=reads");
    assert!(
        e.contains("Unknown skip type") && e.contains("read, write, trim, sync"),
        "{e}"
    );
}

/// `validate-replay` as `validate` simulates it on Debian's 6.12.117 and 6.1.192,
/// against the real kernels (docs/validation.md §45): the replaying job's reads and
/// writes a second within 5% — with the log's own times (`free`: fio's pacing falls
/// ~5% behind the log on both) and under `riops=1000` (`capped`: the replay takes
/// twice the log's 2 s), and on 6.1 without the times (`no-stall`, depth 2; 6.12's
/// guest CPU is the busier there: real 7,648 reads a second, the model 8,772, §45).
/// fio 3.33 reaps nothing while it sleeps for the next entry, so the replay's clat is
/// the wait for its next burst (3.5 ms real, on a 200 µs disk): its mean within 5% too.
#[test]
fn validate_replay_agrees_with_the_real_kernels() {
    let text = std::fs::read_to_string("scenarios/validate-replay.toml").unwrap();
    let sc = Scenario::parse(&text, "scenarios/validate-replay.toml").unwrap();
    // (release, variant, real read IOPS, real write IOPS, real read clat mean µs)
    let real = [
        ("6.12.117", "free", 1909.0, 95.5, Some(3535.0)),
        ("6.12.117", "capped", 1013.0, 50.6, None),
        ("6.1.192", "free", 1956.0, 97.8, None),
        ("6.1.192", "capped", 1013.0, 50.7, None),
        ("6.1.192", "no-stall", 8889.0, 444.4, None),
    ];
    for (release, v, reads, writes, clat) in real {
        let run = common::as_validate_simulates_scenario(&sc, Some(v), release, None);
        let web = &run.fio.jobs.iter().find(|j| j.name == "web").unwrap().stats;
        let runtime = run
            .fio
            .jobs
            .iter()
            .find(|j| j.name == "web")
            .unwrap()
            .runtime_ms;
        let iops = |d: usize| web.dd[d].total_ios as f64 * 1000.0 / runtime as f64;
        for (d, real) in [(0, reads), (1, writes)] {
            let ratio = iops(d) / real;
            assert!(
                (0.95..=1.05).contains(&ratio),
                "{release} {v} dir {d}: {:.1} IOPS, real {real}",
                iops(d)
            );
        }
        if let Some(real) = clat {
            let mean = web.dd[0].clat.mean / 1000.0;
            assert!(
                (mean / real - 1.0).abs() < 0.05,
                "{release} {v}: clat {mean:.0} µs"
            );
        }
    }
}

/// `trace split` on a blkparse text (written by hand from blkparse's format, `%g`
/// after the pid: two cgroups, reads and writes, the closing statistics): one log per
/// cgroup, `--map` by the inode as `stat -c %i` prints it, and the scenario it writes
/// replays every queued bio in its cgroup.
#[test]
fn a_split_trace_replays_each_cgroup_in_its_own() {
    let dir = common::scratch("replay-split");
    let out = dir.join("split");
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/trace/two-cgroups.blkparse"
    );
    let printed = common::stdout_of(&[
        "trace",
        "split",
        trace,
        "--map",
        "6699=web",
        "--map",
        "1a2c,0=batch/dump",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(
        printed.contains("100 reads, 0 writes, 0 other"),
        "{printed}"
    );
    assert!(printed.contains("0 reads, 20 writes, 1 other"), "{printed}");
    assert!(printed.contains("blkcg-sim run"), "{printed}");
    let web = std::fs::read_to_string(out.join("web.log")).unwrap();
    assert!(web.starts_with("fio version 3 iolog\n1 /dev/replay add\n1 /dev/replay open\n"));
    let sc = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(sc.contains("[cgroup.\"batch/dump\"]"), "{sc}");
    let run = common::stdout_of(&[
        "run",
        out.join("scenario.toml").to_str().unwrap(),
        "--output-format",
        "summary",
    ]);
    assert!(run.contains("replay lateness"), "{run}");
    let text = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    let sc = Scenario::parse(&text, out.join("scenario.toml").to_str().unwrap()).unwrap();
    let r = run_variant(&sc, None, None, None, false).unwrap();
    assert!(
        r.io_stat
            .contains("web: 252:0 rbytes=409600 wbytes=0 rios=100 wios=0"),
        "{}",
        r.io_stat
    );
    // 128 KiB writes, each split in two bios at null_blk's 127 KiB (max_sectors 255)
    assert!(
        r.io_stat
            .contains("batch/dump: 252:0 rbytes=0 wbytes=2621440 rios=0 wios=40"),
        "{}",
        r.io_stat
    );
    let e = common::one_line_error(&["trace", "split", trace, "--map", "99=x", "--output", "o"]);
    assert!(
        e.contains("no group `99`") && e.contains("1a2b,0, 1a2c,0"),
        "{e}"
    );
}

/// `[host] fio_replay_poll`: fio 3.33 reaps nothing while it sleeps for a replay's next
/// entry, so a burst's reads are reaped with the next burst, 2 ms later; fio 3.36+
/// polls and reaps each as it completes, 100 µs after issue (and ends every wait on
/// time).
#[test]
fn a_polling_fio_reaps_a_replay_s_completions_as_they_come() {
    let dir = common::scratch("replay-poll");
    let mut log = String::from("fio version 3 iolog\n1 f add\n2 f open\n");
    for b in 0..200u64 {
        for i in 0..4u64 {
            let _ = writeln!(
                log,
                "{} f read {} 4096",
                1000 + b * 2000 + i * 10,
                (b * 4 + i) * 4096
            );
        }
    }
    std::fs::write(dir.join("b.log"), log).unwrap();
    let scenario = |poll: u32| {
        format!(
            "name = \"t\"\n{NULLB}[host]\nfio_replay_poll = {poll}\n[cgroup.a]\n\
             fio = \"fio --name=r --read_iolog=b.log --ioengine=libaio --direct=1 --iodepth=8\"\n"
        )
    };
    let sleeping = run_in(&dir, &scenario(0), None).unwrap();
    let polling = run_in(&dir, &scenario(1), None).unwrap();
    let (s, p) = (summary(&sleeping, "r"), summary(&polling, "r"));
    assert!(s.clat_mean_ms > 1.0, "fio 3.33: {} ms", s.clat_mean_ms);
    assert!(
        (0.09..0.12).contains(&p.clat_mean_ms),
        "fio 3.36: {} ms",
        p.clat_mean_ms
    );
    // a poll's wait ends on time: what is left is each io_submit()'s 2 µs, counted
    // from the issue before (fio's pacing), against a sleep's overshoot every burst
    let (sl, pl) = (s.lateness_ms.unwrap()[2], p.lateness_ms.unwrap()[2]);
    assert!(
        pl < 2.0 && pl < sl / 3.0,
        "late {pl} ms polling, {sl} ms sleeping"
    );
    assert!((1990.0..=2000.0).contains(&p.iops), "{}", p.iops);
}

/// `merge_blktrace_file`: the `read_iolog` traces merged by time, each at its scalar
/// and played its iterations, replayed as one (fio's own merge then refuses the job:
/// the run says so).
#[test]
fn blktraces_merge_into_one_replay() {
    let dir = common::scratch("replay-merge");
    let read = (1 << 16) | 1;
    let a: Vec<u8> = [rec(1_000_000, 0, read), rec(2_000_000, 8, read)].concat();
    let b: Vec<u8> = [rec(1_500_000, 80, read), rec(9_000_000, 88, read)].concat();
    std::fs::write(dir.join("a.bin"), a).unwrap();
    std::fs::write(dir.join("b.bin"), b).unwrap();
    let toml = format!(
        "name = \"t\"\n{NULLB}[cgroup.x]\nfio = \"fio --name=m --read_iolog=a.bin:b.bin \
         --merge_blktrace_file=m.bin --merge_blktrace_scalars=50:100 \
         --merge_blktrace_iters=2:1 --ioengine=libaio --direct=1\"\n"
    );
    let run = run_in(&dir, &toml, None).unwrap();
    // a twice at half time (0.5, 1, 1.5, 2 ms), b once (1.5, 9 ms): 6 reads in ~9 ms
    assert!(
        run.io_stat
            .contains("x: 252:0 rbytes=24576 wbytes=0 rios=6"),
        "{}",
        run.io_stat
    );
    assert!(
        (8..=10).contains(&run.fio.jobs[0].runtime_ms),
        "{}",
        run.fio.jobs[0].runtime_ms
    );
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("--merge-blktrace-only")),
        "{:?}",
        run.warnings
    );
    let bad = toml.replace("50:100", "50:100:100");
    match run_in(&dir, &bad, None) {
        Ok(_) => panic!("three scalars for two traces ran"),
        Err(e) => assert!(
            e.contains("merge_blktrace_scalars has 3 values for 2 traces"),
            "{e}"
        ),
    }
}

/// `check` says what a replaying job replays: its log, how much, and whether paced.
#[test]
fn check_shows_each_replay_and_its_log() {
    let out = common::stdout_of(&["check", "scenarios/validate-replay.toml"]);
    assert!(
        out.contains(
            "job web          cgroup=web read_iolog=iologs/web-burst.log (4200 reads and \
             writes, 29491200 bytes, paced by its times) iodepth=8"
        ),
        "{out}"
    );
    assert!(out.contains("29491200 bytes, untimed) iodepth=2"), "{out}");
}

/// fio's stat logs: `PREFIX_TYPE.N.log` in the run's folder (N the job's number in its
/// fio, from 1), a row per I/O without `log_avg_msec` (`time, value, ddir, bs, prio`),
/// windows with it; `write_lat_log` makes lat, slat and clat, and a psync job's slat
/// log stays empty, as fio leaves it.
#[test]
fn stat_logs_are_fio_s_files() {
    let dir = common::scratch("replay-statlogs");
    let out = dir.join("out");
    let toml = format!(
        "name = \"s\"\n{NULLB}[cgroup.a]\nfio = \"fio --name=r --rw=randread --ioengine=libaio \
         --direct=1 --iodepth=2 --rate_iops=1000 --runtime=1 --time_based --write_lat_log=r \
         --write_bw_log=r --write_iops_log=r --log_avg_msec=100\"\n[cgroup.b]\n\
         fio = \"fio --name=w --rw=randwrite --ioengine=psync --direct=1 --runtime=10ms \
         --time_based --write_lat_log= --name=w2 --rw=randwrite --ioengine=psync --direct=1 \
         --runtime=10ms --time_based --write_bw_log=w\"\n"
    );
    std::fs::write(dir.join("s.toml"), &toml).unwrap();
    common::stdout_of(&[
        "run",
        dir.join("s.toml").to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let read = |f: &str| std::fs::read_to_string(out.join("default").join(f)).unwrap();
    // 1,000 reads a second, 100 µs each: every 100 ms window 100 of them
    let clat = read("r_clat.1.log");
    assert!(
        clat.starts_with("100, 101500, 0, 0, 0\n200, 101500, 0, 0, 0\n"),
        "{clat}"
    );
    assert!(read("r_iops.1.log").starts_with("100, 1000, 0, 0, 0\n"));
    assert!(read("r_bw.1.log").starts_with("100, 4000, 0, 0, 0\n"));
    // per I/O; the second job of b's fio is number 2
    let lat = read("w_lat.1.log");
    assert!(lat.lines().count() > 50 && lat.starts_with("0, "), "{lat}");
    assert!(lat.lines().all(|l| l.ends_with(", 1, 4096, 0")), "{lat}");
    assert_eq!(read("w_slat.1.log"), "");
    let bw = read("w_bw.2.log");
    assert!(
        bw.lines()
            .all(|l| l.split(", ").nth(1).unwrap().parse::<u64>().unwrap() > 30_000),
        "{bw}"
    );
}
