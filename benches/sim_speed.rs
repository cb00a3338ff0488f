//! Simulated I/Os per wall-clock second: a QD32 4 KiB random reader on null_blk
//! (timer mode, 20 µs), alone, under an `io.max` riops limit that never binds, and
//! with blk-iocost enabled across 100 cgroups; and, as the ceiling, a bare event loop
//! that pushes and pops the same three events per I/O through our `EventQueue`
//! (submit, device completion, reap: the pipeline's own delays) with no model at all.
//! The bare loop's time per I/O is the event queue's cost per simulated I/O;
//! docs/performance.md sets every case against it. Run with `cargo bench`;
//! scripts/scale-bench times the 1,000 to 100,000-cgroup cases as whole processes.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use blkcg_sim::run::run_variant;
use blkcg_sim::scenario::Scenario;
use blkcg_sim::sim::{Event, EventQueue, Ns};

const DEVICE: &str =
    "[device]\nmodel = \"nullb\"\nirqmode = 2\ncompletion_nsec = 20000\nhw_queue_depth = 64\n";
const IOCOST: &str = "[root]\n\"io.cost.qos\" = \"252:0 enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=200\"\n\"io.cost.model\" = \"252:0 ctrl=user model=linear rbps=2000000000 rseqiops=1600000 rrandiops=1600000 wbps=2000000000 wseqiops=1600000 wrandiops=1600000\"\n";

/// The pipeline's delays for a 4 KiB I/O: submit (host submit cost), device service
/// (null_blk completion_nsec), reap (host completion cost).
const SUBMIT_NS: Ns = 2_000;
const SERVICE_NS: Ns = 20_000;
const REAP_NS: Ns = 1_500;

/// `jobs` cgroups sharing a total depth of ~32, each with `cg_extra` lines.
fn scenario(root: &str, cg_extra: &str, jobs: usize) -> Scenario {
    let mut t = format!("{DEVICE}{root}");
    for i in 0..jobs {
        t.push_str(&format!(
            "[cgroup.c{i}]\n{cg_extra}fio = \"fio --name=j{i} --rw=randread --bs=4k --ioengine=libaio --iodepth={} --runtime=2 --time_based\"\n",
            (32 / jobs).max(1)
        ));
    }
    Scenario::parse(&t, "bench.toml").unwrap()
}

fn ios(sc: &Scenario) -> u64 {
    let run = run_variant(sc, None, None, None, false).unwrap();
    run.out.jobs.iter().map(|(_, s, _)| s.dd[0].total_ios).sum()
}

/// `depth` I/Os in flight, each a chain of three events (submit → device completion
/// → reap, which starts the next I/O), until `total` I/Os have been reaped: what the
/// pipeline asks of the event queue, and nothing else.
fn bare_loop(total: u64, depth: u32) -> u64 {
    let mut q = EventQueue::new();
    for slot in 0..depth {
        q.push(SUBMIT_NS, Event::Job(slot));
    }
    let mut done = 0;
    while let Some((_, ev)) = q.pop() {
        match ev {
            Event::Job(slot) => q.after(SERVICE_NS, Event::Device(u64::from(slot))),
            Event::Device(slot) => q.after(REAP_NS, Event::Ctx(slot as u32)),
            Event::Ctx(slot) => {
                done += 1;
                if done + u64::from(depth) <= total {
                    q.after(SUBMIT_NS, Event::Job(slot));
                }
            }
            _ => {}
        }
    }
    done
}

fn bench(c: &mut Criterion) {
    // criterion draws its reports with plotters, which this crate builds without system
    // fonts: its text comes from the face our pictures register
    blkcg_sim::report::glyphs::register().expect("the built-in font");
    let mut g = c.benchmark_group("simulated_ios");
    g.sample_size(10);
    let cases = [
        ("nullb_qd32", scenario("", "", 1)),
        (
            "nullb_qd32_riops",
            scenario("", "\"io.max\" = \"252:0 riops=1000000\"\n", 1),
        ),
        ("nullb_100cg", scenario("", "", 100)),
        ("nullb_100cg_iocost", scenario(IOCOST, "", 100)),
    ];
    // the ceiling: as many I/Os as the plain case simulates
    let total = ios(&cases[0].1);
    g.throughput(Throughput::Elements(total));
    g.bench_function("bare_event_loop", |b| {
        b.iter(|| bare_loop(black_box(total), 32))
    });
    for (name, sc) in &cases {
        g.throughput(Throughput::Elements(ios(sc)));
        g.bench_function(*name, |b| b.iter(|| ios(sc)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
