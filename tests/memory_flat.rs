//! Memory flat in simulated time: an hour and a day of the same blk-iocost scenario,
//! every output file written, peak RSS within 20% of each other (the timelines stream
//! to their files, the pictures keep a fixed number of points).
//!
//! The day runs in about two seconds: two cgroups at 20 IOPS each, 1 s iocost periods
//! (86,400 periods, a 20 MB timeline.csv). Before streaming, the day's peak RSS was
//! 74 MB against the hour's 16 MB.

use std::path::Path;
use std::process::Command;

/// The scenario, running for `secs` seconds.
fn scenario(secs: u64) -> String {
    format!(
        r#"name = "blk-iocost for {secs} s"
duration = {secs}
[device]
model = "nullb"
irqmode = 2
completion_nsec = 200000
[root]
"io.cost.qos" = "252:0 enable=1 ctrl=user rpct=90 rlat=500000 wpct=90 wlat=500000 min=50 max=150"
"io.cost.model" = "252:0 ctrl=user model=linear rbps=400000000 rseqiops=20000 rrandiops=20000 wbps=400000000 wseqiops=20000 wrandiops=20000"
[cgroup.a]
"io.weight" = "default 100"
fio = "fio --name=a --rw=randread --bs=4k --ioengine=libaio --iodepth=4 --rate_iops=20 --time_based --runtime={secs}"
[cgroup.b]
"io.weight" = "default 300"
fio = "fio --name=b --rw=randread --bs=4k --ioengine=libaio --iodepth=4 --rate_iops=20 --time_based --runtime={secs}"
"#
    )
}

/// Run `blkcg-sim run FILE --output OUT`; its peak RSS in KiB (wait4's rusage).
#[allow(clippy::zombie_processes, reason = "wait4 below reaps the child")]
fn peak_rss_kib(file: &Path, out: &Path) -> i64 {
    let child = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args(["run", "--quiet", "--output-format", "summary", "--output"])
        .arg(out)
        .arg(file)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn blkcg-sim");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for the child just spawned, which nothing else waits for.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "blkcg-sim failed: status {status}"
    );
    usage.ru_maxrss
}

#[test]
fn an_hour_and_a_day_take_the_same_memory() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-memflat-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rss = Vec::new();
    for (name, secs) in [("hour", 3600), ("day", 86_400)] {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, scenario(secs)).unwrap();
        let out = dir.join(format!("out-{name}"));
        rss.push(peak_rss_kib(&file, &out));
        // every row was written: one per cgroup per period, and a 1 s period lasts
        // 1.001 s (the timer fires one jiffy late at HZ=1000)
        let timeline = std::fs::read_to_string(out.join("default/timeline.csv")).unwrap();
        let rows = timeline.lines().count() as f64 - 1.0;
        let expected = 2.0 * secs as f64 / 1.001;
        assert!(
            (rows - expected).abs() <= 4.0,
            "{name}: {rows} timeline rows, {expected:.0} expected"
        );
        let svg = std::fs::metadata(out.join("default/iocost.svg"))
            .unwrap()
            .len();
        assert!(svg < 1 << 20, "{name}: iocost.svg is {svg} bytes");
    }
    let (hour, day) = (rss[0] as f64, rss[1] as f64);
    assert!(
        day < hour * 1.2,
        "peak RSS: an hour {hour} KiB, a day {day} KiB (must be within 20%)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
