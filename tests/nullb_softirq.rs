//! Two validate scenarios on the guests' one vCPU, simulated as `validate` simulates
//! them and read from fio's JSON as `validate` reads both sides, with bands next to the
//! real kernels' figures (Debian's 6.1.0-56 and 6.12.117, two boots each, TCG icount):
//! - `validate-nullb-softirq` (docs/validation.md §21): null_blk's softirq mode
//!   completes a request inside the submitting call. Before the inline completion a QD1
//!   libaio job's clat was an interrupt's 6 µs (real 1.5) and psync ran at half the
//!   real rate.
//! - `validate-none-tag-share` (§22): three jobs racing for 4 tags share the disk evenly
//!   on the real 6.1; letting the reaper run first gave one of them two tags to itself
//!   (1965 / 997 / 968 IO/s).

mod common;

use serde_json::Value;

/// (IOPS, slat mean µs, clat mean µs, clat p50 µs) of `job`'s reads.
fn figures(doc: &Value, job: &str) -> (f64, f64, f64, f64) {
    let d = common::fio_job(doc, job, "read");
    (
        d["iops"].as_f64().unwrap(),
        d["slat_ns"]["mean"].as_f64().unwrap() / 1e3,
        d["clat_ns"]["mean"].as_f64().unwrap() / 1e3,
        d["clat_ns"]["percentile"]["50.000000"].as_f64().unwrap() / 1e3,
    )
}

fn near(what: &str, got: f64, real: f64, band: f64) {
    assert!(
        (got / real - 1.0).abs() <= band,
        "{what}: {got:.2} against the real {real} (band {band})"
    );
}

/// Real per kernel: `aio` IOPS, slat, clat; `sync` IOPS, clat p50; `deep` IOPS, slat.
#[test]
fn a_completion_inside_the_submit_call_agrees_with_the_real_kernels() {
    for (release, real) in [
        (
            "6.1.0",
            [105_470.0, 6.05, 1.47, 146_192.0, 4.64, 66_469.0, 11.6],
        ),
        (
            "6.12.117",
            [93_215.0, 6.90, 1.67, 136_984.0, 5.09, 53_357.0, 15.3],
        ),
    ] {
        let doc = common::as_validate_simulates_json("validate-nullb-softirq", release);
        let (iops, slat, clat, _) = figures(&doc, "aio");
        near(&format!("{release} aio IOPS"), iops, real[0], 0.05);
        near(&format!("{release} aio slat"), slat, real[1], 0.05);
        near(&format!("{release} aio clat"), clat, real[2], 0.12);
        let (iops, _, _, p50) = figures(&doc, "sync");
        near(&format!("{release} sync IOPS"), iops, real[3], 0.05);
        near(&format!("{release} sync clat p50"), p50, real[4], 0.05);
        let (iops, slat, _, _) = figures(&doc, "deep");
        near(&format!("{release} deep IOPS"), iops, real[5], 0.05);
        near(&format!("{release} deep slat"), slat, real[6], 0.05);
    }
}

/// Real 6.1: be 1367, idle 1367, rt 1218 IO/s (3,952 in all, the 4 tags' 4,000 less the
/// driver's gaps): nobody keeps two tags to itself, each job's slat (the tag wait) is
/// hundreds of µs (290–460 µs for `be` and `idle`; one that kept its tags would wait
/// 5 µs), and the QD4 `rt` gets a little less than the QD2 jobs. Ours (1,503 / 1,488 /
/// 948, slat 193 / 190 / 943 µs): the total within 3%, every slat over 150 µs, and
/// `rt` below the others — by more than on the real kernel (its lost races are
/// decided the same way too often: docs/validation.md §38).
#[test]
fn no_submitter_keeps_two_of_four_tags_to_itself_as_on_the_real_kernel() {
    let doc = common::as_validate_simulates_json("validate-none-tag-share", "6.1.0");
    let mut total = 0.0;
    let mut iops_of = std::collections::BTreeMap::new();
    for job in ["be", "idle", "rt"] {
        let (iops, slat, _, _) = figures(&doc, job);
        assert!(
            slat > 150.0,
            "{job} slat {slat} µs: it never waits for a tag"
        );
        total += iops;
        iops_of.insert(job, iops);
    }
    near("IOPS in all", total, 3952.0, 0.03);
    let (be, idle, rt) = (iops_of["be"], iops_of["idle"], iops_of["rt"]);
    near("idle IOPS against be's", idle, be, 0.05);
    assert!(
        rt < be && rt > 0.5 * 1218.0,
        "rt {rt} IOPS (be {be}): the real 1218 against 1367"
    );
}
