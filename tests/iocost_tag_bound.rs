//! `validate-iocost-tag-bound` (docs/validation.md §17): sixteen QD1 readers on a
//! null_blk with 4 tags under blk-iocost, simulated as `validate` simulates Debian's
//! 6.1.192 in its qemu guest (the guest's host costs and `dispatch_ns`), with bands next
//! to the real kernel's figures.
//!
//! Each request's wait for a tag is blk-iocost's `rq_wait`, so `rq_wait_pct` starts far
//! above the 5% that marks the device busy and vrate falls period after period; real
//! and simulated trajectories agree to 0.01% for the first 3 s. Then the real kernel
//! goes on falling to a level that changes from boot to boot (42.6, 37.6, 16.1%; 28.1%
//! with more tracepoints on), and so does the simulation since the tag sleepers' CFS
//! bound (`[host] tag_sleeper_preempt_ns`, docs/validation.md §19): before it, a
//! sleeper yielded to the reapers however long they held the one CPU, and the
//! simulation stopped at 59.8% (68.2% before the wait timers' hrtimer slack).

mod common;

use blkcg_sim::iocost::ctl::PeriodRow;
use blkcg_sim::sim::NSEC_PER_SEC;

/// The period rows of the scenario as `validate` simulates it on 6.1.192 (`seed`: in
/// place of the scenario's).
fn rows_of_seed(seed: Option<u64>) -> Vec<PeriodRow> {
    common::as_validate_simulates_seed("validate-iocost-tag-bound", None, "6.1.192", seed)
        .record
        .rows::<PeriodRow>()
        .to_vec()
}

fn rows() -> Vec<PeriodRow> {
    rows_of_seed(None)
}

/// The base vrate in force at `t_ms` (the last period ended by then).
fn vrate_at(rows: &[PeriodRow], t_ms: u64) -> f64 {
    rows.iter()
        .rfind(|r| r.t <= t_ms * 1_000_000)
        .map_or(100.0, |r| r.vrate_base_pct)
}

/// Agree: the real 6.1.192's `iocost_ioc_vrate_adj` gave 94.15, 85.15 and 71.00% at 1, 2
/// and 3 s (the same in three boots) with `rq_wait_pct` ~1,245 while every request
/// waited for a tag; ours must stay within 0.1 of each, and start as busy.
#[test]
fn tag_waits_drive_vrate_down_as_on_the_real_kernel() {
    let rows = rows();
    for (t_ms, real) in [(1000, 94.15), (2000, 85.15), (3000, 71.00)] {
        let sim = vrate_at(&rows, t_ms);
        assert!(
            (sim - real).abs() < 0.1,
            "at {t_ms} ms: sim {sim:.2}%, real {real:.2}%"
        );
    }
    let first = rows
        .iter()
        .take_while(|r| r.t <= NSEC_PER_SEC)
        .map(|r| r.rq_wait_pct)
        .min()
        .unwrap();
    assert!(first > 500, "rq_wait_pct in the first second: {first}");
}

/// Agree (§17, §19): the real kernel settled at 16.1–42.6% over four boots — where,
/// hangs on a draw boot to boot — and so does the simulation seed to seed: over seeds
/// 1–8 it settles at 5.7–27.0%, with its median (21.0%) in the real range (39.3%
/// before the guest's CPU picked at an interrupt's end, docs/validation.md §46; 59.8%
/// for every seed before the tag sleepers' bound), and `rq_wait_pct` about the 5% edge
/// in the last 3 s (busy_level back to 0 or 1–3, which move nothing; three seeds get
/// there after 5 s). One seed's point is not the figure: a model change that shifts
/// the draw moves it by ten points either way (docs/validation.md §8, session 29).
#[test]
fn the_simulation_settles_where_the_real_kernel_does() {
    let mut settled: Vec<f64> = (1..=8)
        .map(|seed| {
            let rows = rows_of_seed(Some(seed));
            let late: Vec<u32> = rows
                .iter()
                .filter(|r| r.t > 7 * NSEC_PER_SEC)
                .map(|r| r.rq_wait_pct)
                .collect();
            assert!(
                late.iter().all(|&p| p <= 25),
                "seed {seed}: rq_wait_pct after 7 s: {late:?}"
            );
            vrate_at(&rows, 9_000)
        })
        .collect();
    settled.sort_by(f64::total_cmp);
    let median = (settled[3] + settled[4]) / 2.0;
    assert!(
        (16.1..42.6).contains(&median),
        "median settled at {median:.2}% over seeds 1-8, {settled:?} (real 16.1–42.6%, \
         sim until now 21.0%)"
    );
}
