//! BFQ (issue 35): `example-bfq-weights`, two tenants at weights 100 and 300 under
//! none, mq-deadline, BFQ and blk-iocost on an HDD and an SSD, and `validate-bfq`
//! beside Debian's kernels (docs/validation.md §44).
//!
//! What the kernel does, and so the bands: only BFQ and blk-iocost know weights;
//! under none and mq-deadline two sequential streams of equal depth split the disk
//! evenly, and on the HDD each seek between them costs the whole stream's speed. BFQ
//! serves one stream for a budget and idles for its next request: on the HDD the
//! disk streams at nearly its sequential speed, the heavier tenant three times as
//! long. Those bands are the model's own (its algorithm, not yet the real kernel's
//! at depth: §44); the QD1 figures stand next to 6.12's.

use blkcg_sim::run::{VariantRun, run_variant};
use blkcg_sim::scenario::{Scenario, embedded};

mod common;

fn variant(name: &str) -> VariantRun {
    let text = embedded::get("example-bfq-weights").expect("built-in scenario");
    let sc = Scenario::parse(text, "example-bfq-weights.toml").unwrap();
    run_variant(&sc, Some(name), None, None, false).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Job `name`'s summary in `run`.
fn job<'a>(run: &'a VariantRun, name: &str) -> &'a blkcg_sim::report::summary::JobSummary {
    run.summaries
        .iter()
        .find(|s| s.job == name)
        .expect("the job ran")
}

/// (the heavy tenant's share of the bytes, both tenants' MiB/s together).
fn split(run: &VariantRun) -> (f64, f64) {
    let (light, heavy) = (job(run, "light").mib_s, job(run, "heavy").mib_s);
    (heavy / (light + heavy), light + heavy)
}

#[test]
fn only_bfq_and_iocost_know_weights_and_bfq_keeps_the_hdd_streaming() {
    let (none_share, none_total) = split(&variant("hdd-none"));
    let (dd_share, _) = split(&variant("hdd-mq-deadline"));
    let (bfq_share, bfq_total) = split(&variant("hdd-bfq"));
    for (what, share) in [("none", none_share), ("mq-deadline", dd_share)] {
        assert!((0.45..0.55).contains(&share), "{what}: {share:.3}");
    }
    // the weights' 3:1, and the streams served a budget at a time
    assert!((0.70..0.80).contains(&bfq_share), "bfq: {bfq_share:.3}");
    assert!(
        bfq_total > 10.0 * none_total,
        "bfq {bfq_total:.1} MiB/s, none {none_total:.1}"
    );
    let (ssd_bfq, _) = split(&variant("ssd-bfq"));
    assert!((0.70..0.80).contains(&ssd_bfq), "ssd bfq: {ssd_bfq:.3}");
    let (ssd_none, _) = split(&variant("ssd-none"));
    assert!((0.45..0.55).contains(&ssd_none), "ssd none: {ssd_none:.3}");
}

/// `io.bfq.weight` exists with the module loaded, whatever the disk's scheduler: a
/// default weight is taken, a per-device one refused where the disk is not on BFQ
/// (EOPNOTSUPP), and one out of 1..1000 refused (ERANGE).
#[test]
fn io_bfq_weight_is_the_kernels_file() {
    let run = |line: &str, scheduler: &str| {
        let text = format!(
            "name = \"w\"\n[device]\nmodel = \"nullb\"\ndev = \"252:0\"\nscheduler = \"{scheduler}\"\n\
             [cgroup.a]\n\"io.bfq.weight\" = \"{line}\"\n\
             fio = \"fio --name=a --rw=randread --bs=4k --direct=1 --runtime=100ms --time_based\"\n"
        );
        let sc = Scenario::parse(&text, "w.toml").unwrap();
        run_variant(&sc, None, None, None, false).map(|_| ())
    };
    assert!(run("default 300", "none").is_ok());
    assert!(run("252:0 300", "bfq").is_ok());
    let refused = |line, scheduler, errno: &str| {
        let Err(e) = run(line, scheduler) else {
            panic!("{line} on {scheduler} was taken");
        };
        assert!(e.contains(errno), "{line}: {e}");
    };
    refused("252:0 300", "none", "EOPNOTSUPP");
    refused("1001", "bfq", "ERANGE");
    refused("252:0 0", "bfq", "ERANGE");
}

/// BFQ's version switches from `[kernel]`: a value it does not know names the key and
/// what it accepts, a switch it does not have lists those it has, and a good one runs.
#[test]
fn bfq_switches_are_checked_by_name() {
    let run = |switch: &str| {
        let text = format!(
            "name = \"s\"\n[device]\nmodel = \"nullb\"\ndev = \"252:0\"\nscheduler = \"bfq\"\n\
             [kernel]\nversion = \"6.12\"\n{switch}\n\
             [cgroup.a]\nfio = \"fio --name=a --rw=randread --bs=4k --direct=1 --runtime=100ms --time_based\"\n"
        );
        let sc = Scenario::parse(&text, "s.toml").unwrap();
        run_variant(&sc, None, None, None, false).map(|_| ())
    };
    assert!(run("\"bfq.shallow_depth\" = \"per-word\"").is_ok());
    let e = run("\"bfq.inject\" = \"sometimes\"").unwrap_err();
    assert!(
        e.contains("bfq.inject") && e.contains("per-candidate") && e.contains("total"),
        "{e}"
    );
    let e = run("\"bfq.merging\" = \"on\"").unwrap_err();
    assert!(
        e.contains("bfq.merging") && e.contains("pending_groups, inject, shallow_depth"),
        "{e}"
    );
}

/// `check` says what systemd's `IOWeight=` writes to `io.bfq.weight` (its own
/// mapping above 100: 300 → 118).
#[test]
fn check_shows_what_systemd_writes_to_io_bfq_weight() {
    let out = common::run(&["check", "example-bfq-weights", "--variant", "hdd-bfq"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "systemd's IOWeight=300 writes io.bfq.weight \"118\" and io.weight \"default 300\""
        ),
        "{text}"
    );
}

/// The held rows' real figures: kernel, variant, then each boot's reads a second of
/// `a`, `b` and `c` or `idle` (`validate validate-bfq --variant V --runs 3`, session 41).
const BOOTS: &str = "
6.12.117 qd1              10591 14574      | 12551 12600      | 12481 12663
6.12.117 rot-qd1          12498 12657      | 12564 12617      | 12538 12631
6.12.117 qd8-mbps25       2881 3499        | 1834 4523        | 1830 4546
6.12.117 idle-class       9362 10148 5851  | 9224 10303 5810  | 9479 10049 5892
6.12.117 slow-qd1         2157 2372        | 1797 2374        | 2183 2372
6.12.117 slow-rot-qd1     1834 2375        | 2176 2368        | 2121 2371
6.12.117 slow-qd8         3535 10897       | 5691 12264       | 3514 10958
6.12.117 slow-idle-class  2014 2377 151    | 2196 2376 152    | 2270 2374 151
6.1.192  qd1              6460 18458       | 6460 18467       | 6460 18463
6.1.192  rot-qd1          6333 18541       | 6333 18546       | 6333 18545
6.1.192  qd8              11824 13801      | 11872 13753      | 11698 13925
6.1.192  three-qd8        8153 9240 8168   | 8156 9231 8175   | 8229 9188 8213
6.1.192  qd8-mbps25       2368 3996        | 2755 3610        | 2754 3613
6.1.192  idle-class       12692 8229 4460  | 20489 4164 426   | 18934 4978 1231
6.1.192  slow-qd1         612 1767         | 612 1767         | 612 1766
6.1.192  slow-rot-qd1     608 1771         | 608 1771         | 608 1771
6.1.192  slow-qd8         3694 11447       | 3704 11463       | 3694 11447
6.1.192  slow-three-qd8   2858 10746 3873  | 5229 8183 4730   | 3499 8982 5004
6.1.192  slow-idle-class  2118 2309 152    | 2122 2309 152    | 2122 2309 152
";

/// `validate-bfq` as `validate --runs 3` judges it (docs/validation.md §44): three
/// boots of each Debian kernel beside seeds 1–3 of the model, the seeds' mean share of
/// each job's reads within 5 points of the range the boots' shares span, and their
/// mean total within 10% of the boots' — the bar, widened to the real
/// kernel's own spread as `validate --random` judges (on several rows the real kernel
/// lands in one of two states from boot to boot: 6.12's capped `qd1` and
/// `qd8-mbps25`, 6.1's capped `idle-class`). Held: 19 of the 22 rows — all but 6.12's
/// capped `qd8` and `three-qd8`, which split evenly on the real kernel and by weight
/// in the model, and its slow three groups, which give `a` less than the real kernel.
/// The capped depth-1 rows on both kernels came within it with BFQ's own CPU per
/// request (`[host] bfq_ns`), 6.12's slow depth-1 rows and 6.1's quarter cap with
/// kblockd's kworker at nice −20, run to its end before a woken task (session 41).
/// Real figures: reads a second, one row of three a boot.
#[test]
fn validate_bfq_shares_and_totals_are_the_real_kernels() {
    let rows = BOOTS.lines().filter(|l| !l.is_empty()).map(|line| {
        let mut words = line.split_whitespace();
        let (release, v) = (words.next().unwrap(), words.next().unwrap());
        let rest: Vec<&str> = words.collect();
        let boots: Vec<Vec<f64>> = rest
            .split(|w| *w == "|")
            .map(|boot| boot.iter().map(|x| x.parse().unwrap()).collect())
            .collect();
        assert!(boots.len() == 3 && boots.iter().all(|b| b.len() == boots[0].len()));
        (release, v, boots)
    });
    for (release, v, boots) in rows {
        // three jobs: a third cgroup `c`, or `b`'s idle-class reader
        let names: &[&str] = match (boots[0].len(), v.ends_with("idle-class")) {
            (3, true) => &["a", "b", "idle"],
            (3, false) => &["a", "b", "c"],
            _ => &["a", "b"],
        };
        let seeds: Vec<Vec<f64>> = (1..=3)
            .map(|seed| {
                let run = common::as_validate_simulates_seed(
                    "validate-bfq",
                    Some(v),
                    release,
                    Some(seed),
                );
                names.iter().map(|name| job(&run, name).iops).collect()
            })
            .collect();
        let total = |r: &Vec<f64>| r.iter().sum::<f64>();
        let share = |r: &Vec<f64>, k: usize| r[k] / total(r);
        let span = |xs: Vec<f64>| {
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            (lo, xs.iter().copied().fold(lo, f64::max))
        };
        for (k, name) in names.iter().enumerate() {
            let sim = seeds.iter().map(|r| share(r, k)).sum::<f64>() / 3.0;
            let (lo, hi) = span(boots.iter().map(|r| share(r, k)).collect());
            assert!(
                (lo - 0.05..=hi + 0.05).contains(&sim),
                "{release} {v}: {name}'s share {sim:.3}, real {lo:.3}–{hi:.3}"
            );
        }
        let sim = seeds.iter().map(total).sum::<f64>() / 3.0;
        let (lo, hi) = span(boots.iter().map(total).collect());
        assert!(
            (lo * 0.9..=hi * 1.1).contains(&sim),
            "{release} {v}: total {sim:.0}, real {lo:.0}–{hi:.0}"
        );
    }
}
