//! `[device] nr_requests` (`queue/nr_requests`) end to end: the scheduler's depth under
//! mq-deadline, the driver's tags under `none`, the kernel's refusals, and the
//! validate guest's write of it after the scheduler.

use blkcg_sim::run::{prepare, run_variant};
use blkcg_sim::scenario::Scenario;
use blkcg_sim::validate::guest::GuestPlan;

/// null_blk with 4 driver tags, 1 ms per request, and two submitters of 16 each.
const BASE: &str = r#"
name = "t"
seed = 1
[device]
model = "nullb"
irqmode = 2
completion_nsec = 1000000
hw_queue_depth = 4
scheduler = "mq-deadline"
[kernel]
version = "6.12"
[cgroup.a]
fio = "fio --name=a --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=16 --numjobs=2 --runtime=2 --time_based"
"#;

fn scenario(device_extra: &str) -> Scenario {
    let text = BASE.replace(
        "scheduler = \"mq-deadline\"\n",
        &format!("scheduler = \"mq-deadline\"\n{device_extra}\n"),
    );
    Scenario::parse(&text, "t.toml").unwrap()
}

/// (IOPS summed over the jobs, the largest mean submission latency in ms).
fn run(device_extra: &str) -> (f64, f64) {
    let run = run_variant(&scenario(device_extra), None, None, None, false).unwrap();
    let iops = run.summaries.iter().map(|s| s.iops).sum();
    let slat = run
        .summaries
        .iter()
        .map(|s| s.slat_mean_ms)
        .fold(0.0, f64::max);
    (iops, slat)
}

#[test]
fn mq_deadline_submitters_wait_for_tags_only_below_their_depth() {
    // 32 requests outstanding: the default 8 scheduler tags (2 · 4) and 4 make
    // submitters sleep for a tag; 64 hold them all, so io_submit() never sleeps
    let (_, default_slat) = run("");
    let (_, small_slat) = run("nr_requests = 4");
    let (big_iops, big_slat) = run("nr_requests = 64");
    assert!(default_slat > 0.1, "{default_slat}");
    assert!(small_slat > 0.1, "{small_slat}");
    assert!(big_slat < 0.01, "{big_slat}");
    // the driver still holds 4 at a time: the throughput is the device's either way
    assert!((big_iops - 4000.0).abs() < 100.0, "{big_iops}");
}

#[test]
fn without_a_scheduler_nr_requests_caps_requests_in_flight() {
    let base = "scheduler = \"none\"\nhw_queue_depth = 16";
    let text = |extra: &str| {
        BASE.replace("hw_queue_depth = 4\n", "")
            .replace("scheduler = \"mq-deadline\"", &format!("{base}\n{extra}"))
    };
    let iops = |extra: &str| {
        let sc = Scenario::parse(&text(extra), "t.toml").unwrap();
        let run = run_variant(&sc, None, None, None, false).unwrap();
        run.summaries.iter().map(|s| s.iops).sum::<f64>()
    };
    // 16 driver tags: 16 in flight at 1 ms each; nr_requests = 4: 4 of them
    let full = iops("");
    let four = iops("nr_requests = 4");
    assert!((full - 16000.0).abs() < 400.0, "{full}");
    assert!((four - 4000.0).abs() < 100.0, "{four}");
}

fn error(text: &str) -> String {
    let sc = Scenario::parse(text, "t.toml").unwrap();
    match prepare(&sc, None, None, None, false) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn refusals_name_the_file_line_key_and_errno() {
    let too_big = BASE.replace(
        "scheduler = \"mq-deadline\"\n",
        "scheduler = \"mq-deadline\"\nnr_requests = 4096\n",
    );
    let e = error(&too_big);
    assert!(e.contains("t.toml:"), "{e}");
    assert!(e.contains("device.nr_requests"), "{e}");
    assert!(e.contains("EINVAL") && e.contains("at most 2048"), "{e}");
    // without a scheduler the driver's 4 tags cannot grow
    let e = error(&too_big.replace("mq-deadline", "none").replace("4096", "8"));
    assert!(e.contains("EINVAL") && e.contains("at most 4"), "{e}");
    let e = error(&too_big.replace("4096", "\"lots\""));
    assert!(e.contains("EINVAL") && e.contains("`lots`"), "{e}");
    let e = error(&too_big.replace("4096", "1.5"));
    assert!(
        e.contains("device.nr_requests") && e.contains("integer"),
        "{e}"
    );
}

#[test]
fn check_shows_the_depth_and_async_depth_follows_it() {
    let p = prepare(&scenario("nr_requests = 2"), None, None, None, false).unwrap();
    // below BLKDEV_MIN_RQ: 4
    assert!(p.scheduler.contains("nr_requests=4 "), "{}", p.scheduler);
}

#[test]
fn the_guest_writes_nr_requests_after_the_scheduler() {
    let sc = scenario("nr_requests = 64\n[device.iosched]\nasync_depth = 8");
    let plan = GuestPlan::from_resolved(&sc.resolve(None).unwrap()).unwrap();
    let names: Vec<&str> = plan.queue_attrs.iter().map(|(k, _)| k.as_str()).collect();
    let at = |n: &str| names.iter().position(|k| *k == n).unwrap();
    assert!(at("scheduler") < at("nr_requests"), "{names:?}");
    assert!(at("nr_requests") < at("iosched/async_depth"), "{names:?}");
    assert_eq!(plan.queue_attrs[at("nr_requests")].1, "64");
    // not set: not written (the kernel's default after the scheduler stays)
    let plan = GuestPlan::from_resolved(&scenario("").resolve(None).unwrap()).unwrap();
    assert!(plan.queue_attrs.iter().all(|(k, _)| k != "nr_requests"));
}

#[test]
fn validate_dry_run_shows_the_write() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-nrreq-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let file = dir.join("t.toml");
    std::fs::write(
        &file,
        BASE.replace(
            "hw_queue_depth = 4\n",
            "hw_queue_depth = 4\nnr_requests = 16\n",
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .arg("validate")
        .arg(&file)
        .arg("--dry-run")
        .env("BLKCG_SIM_CACHE", dir.join("cache"))
        .env("TMPDIR", dir.join("tmp"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sched = stdout
        .find("queue\" scheduler mq-deadline\n")
        .expect(&stdout);
    let nr = stdout.find("queue\" nr_requests 16\n").expect(&stdout);
    assert!(sched < nr, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
