//! Sweep points per wall-clock second on 1 and 2 workers: the iocost seed scenario
//! (`iocost-no-completion`, both variants, 3 × 10 s of fio each) over eight vrate caps,
//! 16 points. Run with `cargo bench --bench sweep_speed`; docs/performance.md reports
//! the figures. Two workers should approach twice one worker's rate on a 2-core machine.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use blkcg_sim::scenario::{Scenario, embedded};
use blkcg_sim::sweep::{Sweep, pool};

fn sweep() -> Sweep {
    let name = "iocost-no-completion";
    let sc = Scenario::parse(embedded::get(name).unwrap(), name).unwrap();
    let sets = ["root.io.cost.qos:max=80,100,120,140,160,180,200,220".to_string()];
    Sweep::new(&sc, &sets, 1).unwrap()
}

/// Every run of `s` on `jobs` workers; the number of jobs' completions seen, so no
/// run can be optimised away.
fn run_all(s: &Sweep, jobs: usize) -> usize {
    let mut n = 0;
    pool::ordered(
        s.runs(),
        jobs,
        |r| s.run(r, &Default::default()).map(|(rec, _)| rec.jobs.len()),
        |_, jobs| {
            n += jobs?;
            Ok(())
        },
    )
    .unwrap();
    n
}

fn bench(c: &mut Criterion) {
    // criterion draws its reports with plotters, which this crate builds without system
    // fonts: its text comes from the face our pictures register
    blkcg_sim::report::glyphs::register().expect("the built-in font");
    let s = sweep();
    let mut g = c.benchmark_group("sweep_points");
    g.sample_size(10);
    g.throughput(Throughput::Elements(s.runs() as u64));
    for jobs in [1, 2] {
        g.bench_function(format!("iocost_seed_16_points_{jobs}_workers"), |b| {
            b.iter(|| run_all(&s, jobs))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
