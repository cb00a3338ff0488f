//! Where the qemu guest's one vCPU decides a share (docs/validation.md §34, §35, §38):
//! two built-in validate scenarios on null_blk capped by `mbps` (a grant every 20 ms
//! tick, then the queue stops), each run at 64 KiB and then at 4 KiB, simulated as
//! `validate` simulates Debian's kernels in its qemu guest (the guest's host costs,
//! `dispatch_ns` and its one CPU under the kernel's fair class), with bands next to the
//! real kernels' figures (two boots each of 6.1.0-57 and 6.12.117).
//!
//! The device is the bottleneck throughout, and the totals agree. At 64 KiB the guest's
//! CPU has time to spare and the shares are the device's and blk-iocost's. At 4 KiB a
//! grant is hundreds of requests and the fio tasks race for the one vCPU to use it: a
//! QD1 reader beside a QD32 one gets what it can do while the deep job's I/Os use up
//! the grant at the CPU's pace — the simulated CPU gives it that on 6.12, and most of
//! it on 6.1. blk-iocost's 100:400 split at 4 KiB moves toward even on the real 6.1;
//! the simulated one does not (open, §38).

mod common;

use blkcg_sim::report::summary::JobSummary;

/// IOPS of each job, by name, in the scenario as `validate` simulates it on `release`.
fn iops_of(scenario: &str, release: &str) -> impl Fn(&str) -> f64 {
    let jobs: Vec<JobSummary> = common::as_validate_simulates(scenario, release).summaries;
    move |name| {
        jobs.iter()
            .find(|j| j.job == name)
            .unwrap_or_else(|| panic!("no job {name}"))
            .iops
    }
}

/// `validate-iocost-capped-weights`: io.weight 100 (`light`) and 400 (`heavy`) on a
/// null_blk capped at 100 MB/s, the model at the device's speed, on 6.1.
#[test]
fn the_weights_split_agrees_where_the_guest_cpu_has_time_to_spare() {
    let iops = iops_of("validate-iocost-capped-weights", "6.1.192");
    let (h64, l64) = (iops("heavy64k"), iops("light64k"));
    let (h4, l4) = (iops("heavy4k"), iops("light4k"));
    // the capped device is the bottleneck: real totals 1,517 and 25,065 IO/s (6.1)
    let total64 = h64 + l64;
    assert!(
        (1_440.0..1_600.0).contains(&total64),
        "64 KiB total {total64}"
    );
    let total4 = h4 + l4;
    assert!(
        (23_800.0..26_300.0).contains(&total4),
        "4 KiB total {total4}"
    );
    // 64 KiB: the real heavy share is 62.3–62.4% on both kernels (946 of 1,517 IO/s);
    // ours 70.7%
    let share64 = h64 / total64;
    assert!(
        (share64 - 0.623).abs() < 0.09,
        "heavy's share at 64 KiB {share64:.3}"
    );
    // 4 KiB: the real 58.3% (6.1) and 69.6% (6.12) are the one vCPU's; the
    // simulation's split stays blk-iocost's, within a few points of its 64 KiB split
    let share4 = h4 / total4;
    assert!(
        (share4 - share64).abs() < 0.08 && share4 > 0.65,
        "heavy's share at 4 KiB {share4:.3} (64 KiB {share64:.3})"
    );
}

/// `validate-nullb-mbps-share`: a QD1 and a QD32 random reader on a null_blk capped at
/// 50 MB/s, no scheduler.
#[test]
fn a_qd1_reader_gets_the_real_share_of_a_grant_of_few_requests() {
    // the real QD1 reader at 4 KiB, and the least of it ours gets
    for (release, real_q4, least) in [
        ("6.12.117", 2_739.0, 1_850.0),
        ("6.1.192", 4_277.0, 3_200.0),
    ] {
        let iops = iops_of("validate-nullb-mbps-share", release);
        // 64 KiB: a grant is 16 requests; the QD1 reader's waits behind the deep one's
        // requests for two ticks on both kernels (real 25.0 and 24.4 IO/s, deep 726
        // and 728)
        let (q64, d64) = (iops("qd1-64k"), iops("deep-64k"));
        assert!(
            (22.0..28.0).contains(&q64),
            "{release}: qd1 at 64 KiB {q64}"
        );
        assert!(
            (705.0..750.0).contains(&d64),
            "{release}: deep at 64 KiB {d64}"
        );
        // 4 KiB: a grant is 256 requests, the device still the bottleneck (real totals
        // 12,784 and 12,759 IO/s); the real QD1 reader gets 4,277 (6.1) and 2,739
        // (6.12) while the deep job's I/Os use up the grant at the one vCPU's pace: ours
        // 1,924 and 3,386 (without the CPU model, 2,301 and 2,201; 6.12's was 2,745
        // before the CPU picked at an interrupt's end, docs/validation.md §46)
        let (q4, d4) = (iops("qd1-4k"), iops("deep-4k"));
        assert!(
            (12_500.0..13_050.0).contains(&(q4 + d4)),
            "{release}: 4 KiB total {}",
            q4 + d4
        );
        assert!(
            (least..real_q4 * 1.05).contains(&q4),
            "{release}: qd1 at 4 KiB {q4}"
        );
    }
}
