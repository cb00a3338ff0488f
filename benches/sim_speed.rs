//! Simulated I/Os per wall-clock second: a QD32 4 KiB random reader on null_blk
//! (timer mode, 20 µs), alone, under an `io.max` riops limit that never binds, and
//! with blk-iocost enabled across 100 cgroups. Run with `cargo bench`; the README
//! reports the figures.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use blkcg_sim::scenario::Scenario;
use blkcg_sim::scenario::run::run_variant;

const DEVICE: &str =
    "[device]\nmodel = \"nullb\"\nirqmode = 2\ncompletion_nsec = 20000\nhw_queue_depth = 64\n";
const IOCOST: &str = "[root]\n\"io.cost.qos\" = \"252:0 enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=200\"\n\"io.cost.model\" = \"252:0 ctrl=user model=linear rbps=2000000000 rseqiops=1600000 rrandiops=1600000 wbps=2000000000 wseqiops=1600000 wrandiops=1600000\"\n";

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

fn bench(c: &mut Criterion) {
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
    for (name, sc) in &cases {
        g.throughput(Throughput::Elements(ios(sc)));
        g.bench_function(*name, |b| b.iter(|| ios(sc)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
