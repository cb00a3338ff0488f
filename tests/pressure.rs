//! io.pressure (issue 34) against `kernel/sched/psi.c`'s rules: which waits are
//! iowait (a psync call waiting for its I/O, a tag, an rq-qos entry, a writer paused
//! in `balance_dirty_pages()`) and which are not (libaio's `io_getevents()`, fio's
//! thinktime); `some` and `full` per CPU; a task counts for its cgroup and every
//! ancestor.

use blkcg_sim::run::{VariantRun, run_variant};
use blkcg_sim::scenario::Scenario;

/// A 2 s run on a 1 ms-per-request null_blk with `cgroups` (TOML lines) and `extra`
/// top-level lines.
fn run(extra: &str, cgroups: &str) -> VariantRun {
    let text = format!(
        "[device]\nmodel = \"nullb\"\nirqmode = 2\ncompletion_nsec = 1000000\n\
         hw_queue_depth = 8\n[kernel]\nversion = \"6.12\"\nhz = 250\n{extra}\n{cgroups}"
    );
    let sc = Scenario::parse(&text, "t.toml").unwrap();
    run_variant(&sc, None, None, None, false).unwrap()
}

/// (`some`, `full`) totals of cgroup `path` (`/` the root), in seconds.
fn totals(r: &VariantRun, path: &str) -> (f64, f64) {
    let mut t = (0.0, 0.0);
    for line in r.io_pressure.lines() {
        let Some(rest) = line.strip_prefix(&format!("{path}: ")) else {
            continue;
        };
        let total: f64 = rest.rsplit_once("total=").unwrap().1.parse().unwrap();
        if rest.starts_with("some") {
            t.0 = total / 1e6;
        } else {
            t.1 = total / 1e6;
        }
    }
    t
}

const JOB: &str = "--bs=4k --runtime=2s --time_based --direct=1";

#[test]
fn a_psync_wait_is_iowait_and_libaios_io_getevents_is_not() {
    let r = run(
        "",
        &format!(
            "[cgroup.sync]\nfio = \"fio --name=s --rw=randread --ioengine=psync {JOB}\"\n\
             [cgroup.aio]\nfio = \"fio --name=a --rw=randread --ioengine=libaio --iodepth=4 {JOB}\"\n"
        ),
    );
    // the psync reader waits for each 1 ms read in the call: stalled nearly all along
    let (some, full) = totals(&r, "sync");
    assert!(some > 1.9 && some <= 2.0, "psync: some {some} s");
    assert_eq!(some, full, "on a CPU of its own, full is some");
    // the libaio reader sleeps in io_getevents(): no pressure (4 of 8 tags: no tag wait)
    assert_eq!(totals(&r, "aio"), (0.0, 0.0));
    // the root sees both tasks' CPUs, each weighted by its non-idle time: the libaio
    // job's CPU is non-idle only while it submits, so the root is close to `sync`'s
    let (root, _) = totals(&r, "/");
    assert!(root > 1.8 && root <= 2.0, "root: some {root} s");
    assert!(
        r.io_pressure.starts_with("/: some avg10="),
        "{}",
        r.io_pressure
    );
}

#[test]
fn a_tag_wait_is_iowait_for_an_async_submitter_too() {
    // 32 in flight on 8 tags: the submitter sleeps in blk_mq_get_tag()
    let r = run(
        "",
        &format!(
            "[cgroup.aio]\nfio = \"fio --name=a --rw=randread --ioengine=libaio --iodepth=32 {JOB}\"\n"
        ),
    );
    let (some, _) = totals(&r, "aio");
    assert!(some > 1.0, "libaio over the tags: some {some} s");
}

#[test]
fn thinktime_is_not_a_stall_and_a_parent_counts_its_childrens_tasks() {
    let r = run(
        "",
        &format!(
            "[cgroup.\"p/t\"]\nfio = \"fio --name=t --rw=randread --ioengine=psync \
             --thinktime=1ms --thinktime_blocks=1 {JOB}\"\n"
        ),
    );
    // half of each 2 ms round is the read, half thinking
    let (some, _) = totals(&r, "p/t");
    assert!(some > 0.9 && some < 1.1, "with thinktime: some {some} s");
    assert_eq!(
        totals(&r, "p"),
        totals(&r, "p/t"),
        "the parent counts its child's task"
    );
}

#[test]
fn on_one_cpu_full_excludes_the_time_another_task_of_the_group_runs() {
    let r = run(
        "[host]\ncpus = 1\n",
        &format!(
            "[cgroup.g]\nfio = \"fio --name=s --rw=randread --ioengine=psync {JOB}\"\n\
             [cgroup.\"g/b\"]\nfio = \"fio --name=b --rw=randread --ioengine=psync {JOB}\"\n"
        ),
    );
    let (some, full) = totals(&r, "g");
    assert!(some > 1.9, "some {some} s");
    // two psync readers share the CPU: whenever one runs its submission or completion,
    // `g` is not fully stalled
    assert!(full < some, "full {full} s, some {some} s");
}

#[test]
fn a_writer_paused_in_balance_dirty_pages_is_stalled_and_so_is_its_last_close() {
    let r = run(
        "[host]\nmemory = \"256M\"\n",
        "[cgroup.w]\n\"io.max\" = \"252:0 wbps=10485760\"\n\
         fio = \"fio --name=w --rw=write --bs=1M --ioengine=psync --size=96M\"\n",
    );
    let times = &r.out.jobs[0].2;
    let paused = times.dirty_paused as f64 / 1e9;
    // its close() is the device's last: sync_blockdev() waits for every page
    let last = r.out.page_cache.as_deref().unwrap().last_written.unwrap();
    let close = last.saturating_sub(times.finished) as f64 / 1e9;
    let (some, _) = totals(&r, "w");
    assert!(
        paused > 1.0 && close > 1.0,
        "paused {paused} s, close {close} s"
    );
    assert!(
        (some - paused - close).abs() < 0.05 * (paused + close),
        "some {some} s, paused {paused} s, close {close} s"
    );
}

mod common;

/// `validate-buffered-iomax` as `validate` simulates it, beside one boot of Debian's
/// kernels each (docs/validation.md §42): the writer's cgroup is stalled while paused
/// in `balance_dirty_pages()`, in `fsync`, and in the device's last `close()`, which
/// waits for every page at `io.max`'s 20 MiB/s.
#[test]
fn validate_buffered_iomax_pressure_is_the_real_kernels() {
    // (release, variant, real `some` total of `batch`, s)
    let cases = [
        ("6.12.117", "buffered", 18.42),
        ("6.1.192", "buffered", 18.47),
        ("6.12.117", "end_fsync", 12.27),
        ("6.1.192", "end_fsync", 12.34),
    ];
    for (release, v, real) in cases {
        let run =
            common::as_validate_simulates_variant("validate-buffered-iomax", Some(v), release);
        let (some, full) = totals(&run, "batch");
        assert!(
            (some / real - 1.0).abs() < 0.05,
            "{release} {v}: some {some} s, real {real} s"
        );
        assert_eq!(some, full, "one writer: stalled means all stalled");
    }
}
