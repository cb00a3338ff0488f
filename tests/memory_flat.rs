//! Memory flat in simulated time: an hour and a day of the same blk-iocost scenario,
//! every output file written, peak RSS within 20% of each other (the timelines stream
//! to their files, the pictures keep a fixed number of points).
//!
//! The day runs in about two seconds: two cgroups at 20 IOPS each, 1 s iocost periods
//! (86,400 periods, a 20 MB timeline.csv). Before streaming, the day's peak RSS was
//! 74 MB against the hour's 16 MB.

use std::path::Path;
use std::process::Command;

/// The scenario, running for `secs` seconds (`tests/data/long-iocost.toml.in`).
fn scenario(secs: u64) -> String {
    include_str!("data/long-iocost.toml.in").replace("SECS", &secs.to_string())
}

/// Run `blkcg-sim run FILE --output OUT`; its peak RSS in KiB (wait4's rusage).
fn peak_rss_kib(file: &Path, out: &Path) -> i64 {
    let out = out.to_str().unwrap();
    run_peak_rss_kib(file, &["--output-format", "summary", "--output", out])
}

/// Run `blkcg-sim run --quiet ARGS FILE`, stdout discarded; its peak RSS in KiB.
#[allow(clippy::zombie_processes, reason = "wait4 below reaps the child")]
fn run_peak_rss_kib(file: &Path, args: &[&str]) -> i64 {
    let child = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args(["run", "--quiet"])
        .args(args)
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

/// `run --timeline` prints the device's seconds as a table after the report: an hour's
/// and a day's peak RSS within 20% (the lines are spooled as they come, not the rows
/// kept; before, the day took 45 MB against the hour's 9 MB).
#[test]
fn a_timeline_of_a_day_takes_an_hours_memory() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-memtl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rss = Vec::new();
    for (name, secs) in [("hour", 3600), ("day", 86_400)] {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, scenario(secs)).unwrap();
        rss.push(run_peak_rss_kib(
            &file,
            &["--timeline", "--output-format", "summary"],
        ));
    }
    let (hour, day) = (rss[0] as f64, rss[1] as f64);
    assert!(
        day < hour * 1.2,
        "run --timeline peak RSS: an hour {hour} KiB, a day {day} KiB (must be within 20%)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Peak RSS in KiB of `blkcg-sim ARGS` after reading its first `lines` lines of stdout
/// (within 60 s), then killing it — `| head` without a shell.
#[allow(clippy::zombie_processes, reason = "wait4 below reaps the child")]
fn first_lines_peak_rss_kib(args: &[&str], lines: usize) -> (Vec<String>, i64) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn blkcg-sim");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let got: Vec<String> = std::io::BufReader::new(stdout)
            .lines()
            .take(lines)
            .map_while(Result::ok)
            .collect();
        let _ = tx.send(got);
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(60));
    // SAFETY: signalling our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for the child just spawned, which nothing else waits for.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    let got = got.expect("no lines within 60 s");
    (got, usage.ru_maxrss)
}

#[test]
fn a_hundred_million_point_list_streams() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-memlist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("list.toml");
    std::fs::write(
        &file,
        r#"name = "list"
[device]
model = "nullb"
irqmode = 2
completion_nsec = 50000
[cgroup.a]
"io.max" = "252:0 riops=100"
fio = "fio --name=a --rw=randread --bs=4k --iodepth=4 --ioengine=libaio --runtime=1 --time_based"
"#,
    )
    .unwrap();
    let ten = |f: &dyn Fn(u64) -> u64| -> String {
        (1..=10)
            .map(|i| f(i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let sets = [
        format!("duration={}", ten(&|i| i)),
        format!("device.completion_nsec={}", ten(&|i| i * 10_000)),
        format!("cgroup.a.io.max:riops={}", ten(&|i| i * 100)),
        format!("cgroup.a.io.max:wiops={}", ten(&|i| i * 100)),
        format!("cgroup.a.io.max:rbps={}", ten(&|i| i * 1_000_000)),
        format!("cgroup.a.io.max:wbps={}", ten(&|i| i * 1_000_000)),
        format!("cgroup.a.fio:iodepth={}", ten(&|i| i)),
        format!("cgroup.a.fio:rate_iops={}", ten(&|i| i * 100)),
    ];
    let mut args = vec!["sweep", "--list", file.to_str().unwrap()];
    for s in &sets {
        args.push("--set");
        args.push(s);
    }
    let (lines, rss) = first_lines_peak_rss_kib(&args, 1000);
    assert_eq!(lines.len(), 1000);
    assert!(lines[0].starts_with("0\t0\tduration=1 "), "{}", lines[0]);
    assert!(lines[999].starts_with("999\t0\t"), "{}", lines[999]);
    assert!(
        rss < 100 * 1024,
        "sweep --list of 1e8 points: peak RSS {rss} KiB (must stay under 100 MB)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
