//! Pipeline-level property: cgroups with random io.weight, all saturating a null_blk
//! device through fio and blk-iocost, share the IOPS in proportion to their weights.
//!
//! Set-up: null_blk (100 us timer completions, 64 tags) can do ~640k IOPS; the iocost
//! model says 10,000 4 KiB random reads/s and vrate is pinned at 100% (min=max=100),
//! so iocost, not the device, decides the split. Latency is always met, every cgroup
//! always has waiters (QD32 each), so none donates and hweight = weight / Σ weights.
//!
//! Tolerance, 1 percentage point of the total: the controller's error sources are
//! bounded by much less — budget a cgroup may hold at any instant ≤ the target margin
//! (half a 10 ms period) out of a 2 s run (0.25%); the I/Os in flight at the end
//! (≤ 32 per cgroup of ~20,000 counted, 0.16% each); WEIGHT_ONE fixed point (2^-16).

use blkcg_sim::run::run_variant;
use blkcg_sim::scenario::Scenario;
use proptest::prelude::*;

fn shares(weights: &[u32]) -> Vec<f64> {
    let mut text = String::from(
        r#"
[device]
model = "nullb"
dev = "252:0"
irqmode = 2
completion_nsec = 100000
hw_queue_depth = 64

[root]
"io.cost.model" = "252:0 ctrl=user model=linear rbps=0 rseqiops=10000 rrandiops=10000 wbps=0 wseqiops=10000 wrandiops=10000"
"io.cost.qos" = "252:0 enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=100 max=100"
"#,
    );
    for (i, w) in weights.iter().enumerate() {
        text.push_str(&format!(
            "\n[cgroup.c{i}]\n\"io.weight\" = \"default {w}\"\nfio = \"fio --name=c{i} --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=32 --runtime=2 --time_based\"\n"
        ));
    }
    let sc = Scenario::parse(&text, "props.toml").unwrap();
    let run = run_variant(&sc, None, None, None, false).unwrap();
    let iops: Vec<f64> = (0..weights.len())
        .map(|i| {
            run.summaries
                .iter()
                .find(|s| s.cgroup == format!("c{i}"))
                .unwrap()
                .iops
        })
        .collect();
    let total: f64 = iops.iter().sum();
    assert!(
        total > 9_000.0 && total < 10_100.0,
        "iocost binds: {iops:?}"
    );
    iops.iter().map(|x| x / total).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn iops_shares_follow_weights(weights in prop::collection::vec(1u32..=1000, 2..=3)) {
        let got = shares(&weights);
        let sum: u32 = weights.iter().sum();
        for (g, w) in got.iter().zip(&weights) {
            let want = f64::from(*w) / f64::from(sum);
            prop_assert!((g - want).abs() < 0.01, "weights {weights:?}: share {g} want {want}");
        }
    }
}

/// A fixed case: 100:300 gives 25%/75% (measured 25.002%/74.998%).
#[test]
fn one_to_three_by_hand() {
    let s = shares(&[100, 300]);
    assert!(
        (s[0] - 0.25).abs() < 0.01 && (s[1] - 0.75).abs() < 0.01,
        "{s:?}"
    );
}
