//! Faults a user provokes on a real machine, and what fio makes of them: the disk
//! removed under throttled I/O (`device = "remove"`, null_blk's `power = 0`), null_blk's
//! `badblocks`, and fio's error accounting (`err=`, `"error"`, `continue_on_error`).

use blkcg_sim::report::fio::JobReport;
use blkcg_sim::report::fio::json::to_json;
use blkcg_sim::report::fio::text::to_normal;
use blkcg_sim::run::{VariantRun, run_variant};
use blkcg_sim::scenario::Scenario;
use blkcg_sim::sim::fio::JobTimes;
use blkcg_sim::sim::{NSEC_PER_MSEC, NSEC_PER_SEC};

fn run(text: &str) -> VariantRun {
    let sc = Scenario::parse(text, "faults.toml").unwrap();
    run_variant(&sc, None, None, None, false).unwrap()
}

fn job<'a>(r: &'a VariantRun, name: &str) -> &'a JobReport {
    r.fio.jobs.iter().find(|j| j.name == name).unwrap()
}

/// When job `name` ended.
fn finished(r: &VariantRun, name: &str) -> u64 {
    times(r, name).finished
}

fn times(r: &VariantRun, name: &str) -> JobTimes {
    r.out
        .jobs
        .iter()
        .find(|(p, _, _)| &*p.name == name)
        .unwrap()
        .2
}

/// A QD16 reader held at 100 IOPS by io.max (its bios wait in blk-throttle) beside an
/// unlimited QD1 reader; the disk goes away at 2 s.
fn removal(limited_extra: &str, how: &str) -> String {
    format!(
        r#"
[device]
model = "nullb"
irqmode = 2
completion_nsec = 100000
[kernel]
hz = 250
[cgroup.limited]
"io.max" = "252:0 riops=100"
fio = "fio --name=limited --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=16 --runtime=4 --time_based {limited_extra}"
[cgroup.free]
fio = "fio --name=free --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=1 --runtime=4 --time_based"
[[schedule]]
at = "2s"
{how}
"#
    )
}

#[test]
fn removal_fails_the_throttled_bios_with_eio_and_stops_the_job() {
    let r = run(&removal("", "device = \"remove\""));
    let lim = job(&r, "limited");
    let st = &lim.stats;
    // the 16 bios waiting in blk-throttle fail: those its timer releases at 2 s
    // fail at once at the dead queue; once the queue has drained (the free reader's
    // request, 100 us) blk_throtl_cancel_bios() lets the rest go at the next jiffy
    // (4 ms at HZ=250), to fail the same way
    assert_eq!(st.dd[0].errors, 16);
    assert_eq!(st.err.log.len(), 16);
    let times: Vec<u64> = st.err.log.iter().map(|(at, _)| *at).collect();
    let last = times[15];
    assert!(times[0] > 2 * NSEC_PER_SEC && times[0] < 2 * NSEC_PER_SEC + NSEC_PER_MSEC);
    assert!(
        last > 2 * NSEC_PER_SEC + 3 * NSEC_PER_MSEC && last < 2 * NSEC_PER_SEC + 5 * NSEC_PER_MSEC,
        "{times:?}"
    );
    // fio stops the job at the first error, then waits for what is in flight
    assert_eq!(finished(&r, "limited"), last);
    assert_eq!((st.err.error, st.err.total_err), (5, 0));
    // issued counts the failed I/Os, bytes do not
    assert_eq!(st.dd[0].issued(), st.dd[0].total_ios + 16);
    assert_eq!(st.dd[0].io_bytes, st.dd[0].total_ios * 4096);
    assert!(
        st.err.log[0]
            .1
            .starts_with("fio: io_u error on file /dev/nullb0: Input/output error: read offset="),
        "{}",
        st.err.log[0].1
    );
    assert!(st.err.log[0].1.ends_with(", buflen=4096"));
    // the unlimited reader saw no error: its requests drained, and a read of the
    // removed disk (size 0) returns 0 bytes
    let free = job(&r, "free");
    assert_eq!(free.stats.err.error, 0);
    // its 4 s and the last I/O's reap, in whole µs rounded up to ms as fio does
    assert!(
        (4000..=4001).contains(&free.runtime_ms),
        "{}",
        free.runtime_ms
    );

    let json = to_json(&r.fio, false);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    let lj = jobs.iter().find(|j| j["jobname"] == "limited").unwrap();
    assert_eq!(lj["error"], 5);
    assert_eq!(lj["read"]["total_ios"], st.dd[0].issued());
    assert!(lj.get("total_err").is_none(), "no continue_on_error");
    let fj = jobs.iter().find(|j| j["jobname"] == "free").unwrap();
    assert_eq!(fj["error"], 0);

    let text = to_normal(&r.fio);
    assert!(
        text.contains(
            "limited: (groupid=0, jobs=1): err= 5 (file:io_u.c:1876, func=io_u error, error=Input/output error): pid=1001: "
        ),
        "{text}"
    );
    assert!(text.contains("free: (groupid=0, jobs=1): err= 0: pid=1000: "));
    assert!(text.contains(
        "fio: pid=1001, err=5/file:io_u.c:1876, func=io_u error, error=Input/output error\n\n"
    ));
    // fio's lines come after "Starting", before the job blocks
    let starting = text.find("Starting 2 processes\nfio: io_u error").unwrap();
    assert!(starting < text.find("limited: (groupid").unwrap());
    assert!(!text.contains("errors    :"));
}

#[test]
fn continue_on_error_counts_the_errors_and_goes_on() {
    let r = run(&removal("--continue_on_error=all", "device = \"remove\""));
    let st = &job(&r, "limited").stats;
    assert_eq!((st.err.total_err, st.err.first_error), (16, 5));
    assert_eq!(st.err.error, 0, "non-fatal errors are cleared");
    assert!(st.err.log.is_empty(), "fio logs no non-fatal error");
    // the job runs its 4 s: later reads of the removed disk return 0 bytes, inside
    // io_submit(), so the job ends within one submission and reap of 4 s from its
    // start (fio's epoch: the fio process's phase of the tick)
    let t = times(&r, "limited");
    let end = t.finished - t.epoch;
    assert!(
        (4 * NSEC_PER_SEC..4 * NSEC_PER_SEC + 2_400).contains(&end),
        "{end}"
    );
    assert!(r.fio.messages.is_empty());
    let json = to_json(&r.fio, false);
    assert!(json.contains(
        "      \"total_err\" : 16,\n      \"first_error\" : 5,\n      \"latency_depth\" : 16,"
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let lj = &v["jobs"][1];
    assert_eq!(
        (lj["jobname"].as_str(), lj["error"].as_i64()),
        (Some("limited"), Some(5))
    );
    let text = to_normal(&r.fio);
    assert!(text.contains("limited: (groupid=0, jobs=1): err= 5 (): pid=1001: "));
    assert!(text.contains(
        "     errors    : total=16, first_error=5/<Input/output error>\n     latency   : "
    ));
    // continue_on_error=write does not cover read errors
    let w = run(&removal("--continue_on_error=write", "device = \"remove\""));
    let st = &job(&w, "limited").stats;
    assert_eq!(
        (st.err.error, st.err.total_err, st.err.log.len()),
        (5, 0, 16)
    );
    assert!(to_normal(&w.fio).contains("errors    : total=0, first_error=0/<Success>"));
}

#[test]
fn null_blk_power_off_removes_the_disk_and_runs_repeat_byte_for_byte() {
    let remove = run(&removal("", "device = \"remove\""));
    let power = run(&removal("", "device.power = 0"));
    let again = run(&removal("", "device.power = 0"));
    assert_eq!(to_json(&remove.fio, false), to_json(&power.fio, false));
    assert_eq!(to_json(&power.fio, true), to_json(&again.fio, true));
    assert_eq!(to_normal(&power.fio), to_normal(&again.fio));
}

#[test]
fn writes_after_removal_fail_with_enospc_and_sync_reads_with_full_resid() {
    let r = run(r#"
[device]
model = "nullb"
[cgroup.w]
fio = "fio --name=w --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --runtime=2 --time_based --continue_on_error=all"
[cgroup.r]
fio = "fio --name=r --rw=randread --bs=4k --ioengine=psync --direct=1 --runtime=2 --time_based"
[[schedule]]
at = "1s"
device = "remove"
"#);
    // blkdev_write_iter() on a disk of size 0: ENOSPC, which continue_on_error does
    // not let pass
    let w = &job(&r, "w").stats.err;
    assert_eq!((w.error, w.total_err), (28, 0));
    assert!(
        w.log[0]
            .1
            .contains(": No space left on device: write offset=")
    );
    // psync's read returns 0 bytes: fio's "full resid" error, not logged as io_u error
    // (an O_DIRECT read: a buffered one in the middle of its call at the removal
    // fails its readahead bio on the dead disk, EIO, as bio_queue_enter() does)
    let rd = &job(&r, "r").stats.err;
    assert_eq!(rd.error, 5);
    assert_eq!(
        rd.verror,
        "file:backend.c:471, func=full resid, error=Input/output error"
    );
    assert!(rd.log.is_empty());
    assert!(finished(&r, "r") < NSEC_PER_SEC + NSEC_PER_MSEC);
}

fn badblocks_run(bad: &str, fio_extra: &str) -> VariantRun {
    run(&format!(
        r#"
[device]
model = "nullb"
badblocks = {bad}
[cgroup.a]
fio = "fio --name=a --rw=read --ioengine=libaio --direct=1 --iodepth=4 --size=1M {fio_extra}"
"#
    ))
}

#[test]
fn badblocks_fail_exactly_the_ios_touching_them() {
    // 4 KiB block k covers sectors 8k..=8k+7: 1000..=1015 is blocks 125 and 126,
    // 2047..=2048 block 255 (the last one of the 1 MiB read) and 256; 1500..=1510
    // is marked and cleared again
    let r = badblocks_run(
        r#"["+1000-1015", "+2047-2048", "+1500-1510", "-1500-1510"]"#,
        "--bs=4k --continue_on_error=read",
    );
    let st = &job(&r, "a").stats;
    assert_eq!((st.dd[0].issued(), st.dd[0].errors), (256, 3));
    assert_eq!(st.dd[0].io_bytes, 253 * 4096);
    assert_eq!((st.err.total_err, st.err.first_error), (3, 5));
    // without continue_on_error the first one stops the job; the one behind it,
    // already in flight, is reaped with it and logged too
    let r = badblocks_run(r#""+1000-1015""#, "--bs=4k");
    let st = &job(&r, "a").stats;
    assert_eq!(st.err.error, 5);
    let lines: Vec<&str> = st.err.log.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        lines,
        [
            "fio: io_u error on file /dev/nullb0: Input/output error: read offset=512000, buflen=4096",
            "fio: io_u error on file /dev/nullb0: Input/output error: read offset=516096, buflen=4096"
        ]
    );
    // a 128 KiB read is split at null_blk's 127 KiB (max_sectors 255): a bad sector
    // in the 1 KiB remainder fails the whole I/O, and only that one
    let r = badblocks_run(r#""+255-255""#, "--bs=128k --continue_on_error=read");
    let st = &job(&r, "a").stats;
    assert_eq!((st.dd[0].issued(), st.dd[0].errors), (8, 1));
}

#[test]
fn badblocks_written_during_the_run_take_effect_then() {
    let r = run(r#"
[device]
model = "nullb"
[cgroup.a]
fio = "fio --name=a --rw=randread --bs=4k --ioengine=libaio --direct=1 --size=1M --rate_iops=1000 --runtime=3 --time_based"
[[schedule]]
at = "1s"
device.badblocks = "+0-2047"
"#);
    let st = &job(&r, "a").stats;
    assert_eq!(st.err.error, 5);
    let t = st.err.log[0].0;
    assert!(
        (NSEC_PER_SEC..NSEC_PER_SEC + 2 * NSEC_PER_MSEC).contains(&t),
        "t={t}"
    );
    assert_eq!(finished(&r, "a"), t);
}

#[test]
fn device_actions_are_checked_with_the_scenario_line() {
    let err = |model: &str, action: &str| {
        let text = format!(
            "[device]\nmodel = \"{model}\"\n[cgroup.a]\nfio = \"fio --name=a --runtime=1 --time_based\"\n[[schedule]]\nat = \"1s\"\n{action}\n"
        );
        let sc = Scenario::parse(&text, "bad.toml").unwrap();
        sc.resolve(None).unwrap_err().to_string()
    };
    let e = err("ssd", "device.power = 0");
    assert!(
        e.starts_with("bad.toml:7: ") && e.contains("use device = \"remove\""),
        "{e}"
    );
    let e = err("nullb", "device.badblocks = \"10-20\"");
    assert!(e.starts_with("bad.toml:7: ") && e.contains("EINVAL"), "{e}");
    let e = err("nullb", "device = \"unplug\"");
    assert!(e.contains("expected \"remove\""), "{e}");
    let e = err("nullb", "device.power = 1");
    assert!(e.contains("only 0 is accepted"), "{e}");
    // any model can lose its disk
    let text = "[device]\nmodel = \"ssd\"\n[cgroup.a]\nfio = \"fio --name=a --ioengine=libaio --runtime=1 --time_based\"\n[[schedule]]\nat = \"500ms\"\ndevice = \"remove\"\n";
    let sc = Scenario::parse(text, "ok.toml").unwrap();
    assert!(run_variant(&sc, None, None, None, false).is_ok());
}

#[test]
fn an_injected_timeout_ends_the_request_after_5_s_with_etimedout() {
    // null_blk's configfs timeout_inject/: the 1000th request is never completed by
    // the driver; the block layer times it out after 5 s (BLK_STS_TIMEOUT), which
    // continue_on_error does not let pass (fio's non-fatal errors are EIO, EILSEQ)
    let r = run(r#"
[device]
model = "nullb"
irqmode = 2
completion_nsec = 100000
[device.timeout_inject]
probability = 100
interval = 1000
times = 1
[cgroup.a]
fio = "fio --name=a --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=4 --runtime=10 --time_based --continue_on_error=all"
"#);
    let st = &job(&r, "a").stats;
    assert_eq!((st.err.error, st.err.total_err), (110, 0));
    assert_eq!(st.dd[0].errors, 1);
    assert_eq!(st.err.log.len(), 1);
    assert!(
        st.err.log[0]
            .1
            .starts_with("fio: io_u error on file /dev/nullb0: Connection timed out: read offset="),
        "{}",
        st.err.log[0].1
    );
    // the job ran on three slots until the timeout, then stopped once the other
    // three were back (100 us)
    let t = st.err.log[0].0;
    assert!(
        (5 * NSEC_PER_SEC..5 * NSEC_PER_SEC + 100 * NSEC_PER_MSEC).contains(&t),
        "t={t}"
    );
    let end = finished(&r, "a");
    assert!(end > t && end <= t + 200_000, "{end}");
    let text = to_normal(&r.fio);
    assert!(text.contains(
        "a: (groupid=0, jobs=1): err=110 (file:io_u.c:1876, func=io_u error, error=Connection timed out): pid=1000: "
    ));
    assert!(text.contains("errors    : total=0, first_error=0/<Success>"));
}
