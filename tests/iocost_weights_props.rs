//! blk-iocost through the whole pipeline: cgroups with random `io.weight`s, all
//! saturating, split the cost model's capacity in proportion to their weights.
//!
//! The cost model is set to 2000 random 4 KiB reads per second with vrate pinned at
//! 100% (`min=100 max=100`), on a null_blk that could do ~10× more, so iocost — not the
//! device — is the bottleneck (as `validate-iocost-weights` checks against a real
//! kernel). Every cgroup runs QD16 for 2 s; the first period's activation and the
//! last IOs are noise of a few IOs out of ~4000.

use blkcg_sim::scenario::Scenario;
use blkcg_sim::scenario::run::run_variant;
use proptest::prelude::*;

fn scenario(weights: &[u32]) -> String {
    let mut t = String::from(
        "[device]\nmodel = \"nullb\"\ndev = \"252:0\"\nirqmode = 2\ncompletion_nsec = 100000\nhw_queue_depth = 128\n\
         [root]\n\"io.cost.model\" = \"252:0 ctrl=user model=linear rbps=200000000 rseqiops=2000 rrandiops=2000 wbps=200000000 wseqiops=2000 wrandiops=2000\"\n\
         \"io.cost.qos\" = \"252:0 enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=100 max=100\"\n",
    );
    for (i, w) in weights.iter().enumerate() {
        t.push_str(&format!(
            "[cgroup.c{i}]\n\"io.weight\" = \"default {w}\"\n\
             fio = \"fio --name=c{i} --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=16 --runtime=2 --time_based\"\n"
        ));
    }
    t
}

fn ios_per_cgroup(weights: &[u32]) -> Vec<f64> {
    let sc = Scenario::parse(&scenario(weights), "props.toml").expect("scenario parses");
    let run = run_variant(&sc, None, None, None, false).expect("runs");
    run.out
        .jobs
        .iter()
        .map(|(_, s, _)| s.dd[0].total_ios as f64)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn shares_follow_weights(weights in prop::collection::vec(1u32..=10_000, 2..=3)) {
        let ios = ios_per_cgroup(&weights);
        let total: f64 = ios.iter().sum();
        let wsum: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        // the capacity: 2000 IOPS × 2 s, all of it used
        prop_assert!((total - 4000.0).abs() / 4000.0 < 0.03, "total {total}");
        for (i, &w) in weights.iter().enumerate() {
            let want = total * f64::from(w) / wsum;
            // a cgroup's share is at least one IO per period less than its weight's;
            // allow 3% of the total or 30 IOs, whichever is larger
            let tol = (0.03 * total).max(30.0);
            prop_assert!(
                (ios[i] - want).abs() <= tol,
                "weights {weights:?}: cgroup {i} did {} IOs, its weight's share is {want:.0}", ios[i]
            );
        }
    }
}

#[test]
fn one_to_three() {
    let ios = ios_per_cgroup(&[100, 300]);
    let share = ios[1] / (ios[0] + ios[1]);
    assert!((share - 0.75).abs() < 0.01, "ios {ios:?}");
}
