//! `validate-iocost-saturated` (docs/validation.md §8, §11): the iocost seed's workload on
//! a null_blk capped at 170 MiB/s, simulated as `validate` simulates the built 6.12.117
//! kernels — stock (`iocost.no_completion = "reset"`, the version's default) and with the
//! seed's fix (`keep-if-lagging`) — with bands next to the real kernels' figures.
//!
//! Two regimes exist on this device. In the real kernel's, the backlog at each 20 ms
//! bandwidth tick exceeds the tick's grant, every completion of a tick lands at once
//! 2 ms after it, and ~40% of the 12 ms periods see none. The simulation left to itself,
//! with noiseless host costs (the scenario's), settles in the other one (a backlog of
//! ~18 requests, completions every period) and never leaves it: the first test. Pushed into the real kernel's regime (base vrate held at the real
//! stock kernel's 133.46% for 3 s, then released), it shows the seed's before/after as
//! the real kernels do: the second test. With scheduling noise on cgB's rate sleeps
//! (the real guest's cgB slips by milliseconds now and then) it leaves the middle regime
//! by itself in some seeds, and then only the fixed kernel gets back: the third test
//! with an exponential noise. The noise measured on the real guest (`validate`'s 6.12
//! profile) is too small for that: the fourth test (docs/validation.md §8). What decides
//! the regime is where cgB's rate-paced I/Os fall in blk-iocost's period: every fio here
//! starts on a whole millisecond, 55 µs of CPU before its I/O; with each fio starting at
//! a drawn phase of the tick, as a real fio does (`[host] fio_start_phase`), the guest
//! profile's simulation goes where the real kernels go — the stock kernel collapses in
//! most seeds, the fix in none: the fifth test (§8, session 29).

use blkcg_sim::iocost::ctl::PeriodRow;
use blkcg_sim::report::summary::JobSummary;
use blkcg_sim::run::run_variant;
use blkcg_sim::scenario::Scenario;
use blkcg_sim::scenario::embedded::SCENARIOS;
use blkcg_sim::sim::NSEC_PER_SEC;
use blkcg_sim::validate::guest_host;

const NAME: &str = "validate-iocost-saturated";
const QOS_FREE: &str = "min=80 max=10000";
/// The real stock 6.12.117's base vrate from t = 2.5 s on (`iocost_ioc_vrate_adj`:
/// `vrate=183430`), held for the first 3 s.
const QOS_HELD: &str = "min=133.46 max=133.46";

struct Out {
    jobs: Vec<JobSummary>,
    rows: Vec<PeriodRow>,
}

impl Out {
    fn iops(&self, cg: &str) -> f64 {
        self.jobs.iter().find(|j| j.cgroup == cg).unwrap().iops
    }

    /// Periods ending after `from_s`.
    fn after(&self, from_s: u64) -> impl Iterator<Item = &PeriodRow> {
        self.rows
            .iter()
            .filter(move |r| r.t > from_s * NSEC_PER_SEC)
    }

    /// Share of the periods after `from_s` for which `f` holds.
    fn share(&self, from_s: u64, f: impl Fn(&PeriodRow) -> bool) -> f64 {
        let n = self.after(from_s).count();
        self.after(from_s).filter(|r| f(r)).count() as f64 / n as f64
    }
}

/// The built-in scenario with `edit` applied, simulated as 6.12.117 and, with `fix`, the
/// seed's patch pinned (what `validate --kernel built:KEY` does for a patched build).
fn run(edit: impl Fn(&str) -> String, fix: bool) -> Out {
    run_seed(edit, fix, None)
}

fn run_seed(edit: impl Fn(&str) -> String, fix: bool, seed: Option<u64>) -> Out {
    let text = SCENARIOS.iter().find(|(n, _)| *n == NAME).unwrap().1;
    let mut text = edit(text);
    if fix {
        text = text.replace(
            "[kernel]\n",
            "[kernel]\n\"iocost.no_completion\" = \"keep-if-lagging\"\n",
        );
    }
    let sc = Scenario::parse(&text, NAME).unwrap();
    let run = run_variant(&sc, None, Some("6.12.117"), seed, false).unwrap();
    Out {
        jobs: run.summaries,
        rows: run.record.rows::<PeriodRow>().to_vec(),
    }
}

/// `[host]` with a mean wake-up delay of 200 µs on every fio sleep (here: cgB's rate
/// pacing).
fn noisy(text: &str) -> String {
    format!("{text}\n[host]\nwakeup_jitter_ns = 200000\n")
}

/// Held at the real kernel's base vrate for 3 s, then free (`[[schedule]]` at 3 s).
fn held_then_free(text: &str) -> String {
    assert!(text.contains(QOS_FREE));
    let qos = text
        .lines()
        .find(|l| l.starts_with("\"io.cost.qos\""))
        .unwrap()
        .to_string();
    format!(
        "{}\n[[schedule]]\nat = \"3s\"\ncgroup = \"/\"\n{qos}\n",
        text.replace(QOS_FREE, QOS_HELD)
    )
}

/// Open (§8): left to itself the simulation never reaches the real kernel's regime. The
/// real stock 6.12.117 gives cgB 26–50 IOPS with 40% of the periods after 2 s without a
/// completion; ours 200 IOPS and none, so the fix's branch never runs and stock and fix
/// print the same. A model change that moves this shows up here (then update §8/§11).
#[test]
fn left_to_itself_the_simulation_stays_in_the_other_regime() {
    let stock = run(str::to_string, false);
    let fix = run(str::to_string, true);
    assert!(stock.iops("cgB") > 190.0, "{}", stock.iops("cgB"));
    assert_eq!(stock.share(2, |r| r.nr_done == 0), 0.0);
    // the base vrate stops short of the real kernel's 133.46%
    let last = stock.rows.last().unwrap().vrate_base_pct;
    assert!(last < 133.0, "{last}");
    assert_eq!(stock.iops("cgB"), fix.iops("cgB"));
    assert_eq!(stock.iops("cgA"), fix.iops("cgA"));
}

/// In the real kernel's regime the simulation shows the seed's before/after as the
/// real kernels do. Bands next to the real figures (docs/validation.md §8; "free": the
/// scenario as it is, "held": this test's set-up booted with `validate`):
/// - stock: cgB stays collapsed, vrate never falls: real cgB 26.2 IOPS (free, 3 boots),
///   50.0 (free, one boot), 73.9 (held); free: 40% of the periods after 2 s without a
///   completion (279 of 698), all of them lagging, busy_level never reaches 4;
/// - fix: cgB recovers, cgA gives a little up, vrate is cut: real cgB 198.7–200.0 IOPS,
///   cgA 156.4–159.9 (free and held); free: busy_level ≥ 4 in 41% of the periods (283 of
///   693), 18% without a completion.
#[test]
fn in_the_real_regime_stock_stays_collapsed_and_the_fix_recovers() {
    let stock = run(held_then_free, false);
    let fix = run(held_then_free, true);

    let b = stock.iops("cgB");
    assert!((15.0..80.0).contains(&b), "stock cgB {b} IOPS");
    let none = stock.share(4, |r| r.nr_done == 0);
    assert!(
        (0.3..0.5).contains(&none),
        "stock: {none} of periods without completion"
    );
    assert_eq!(stock.share(4, |r| r.nr_done == 0 && r.nr_lagging == 0), 0.0);
    assert_eq!(stock.share(4, |r| r.busy_after >= 4), 0.0);
    let v = stock.rows.last().unwrap().vrate_base_pct;
    assert!((v - 133.46).abs() < 0.01, "stock vrate {v}");

    let b = fix.iops("cgB");
    assert!(b > 180.0, "fix cgB {b} IOPS");
    let a = fix.iops("cgA");
    assert!((145.0..165.0).contains(&a), "fix cgA {a} IOPS");
    let busy = fix.share(4, |r| r.busy_after >= 4);
    assert!(
        (0.25..0.65).contains(&busy),
        "fix: busy_level >= 4 in {busy}"
    );
    let none = fix.share(4, |r| r.nr_done == 0);
    assert!(
        (0.1..0.3).contains(&none),
        "fix: {none} of periods without completion"
    );
    let v = fix.after(4).map(|r| r.vrate_base_pct).sum::<f64>() / fix.after(4).count() as f64;
    assert!(v < 125.0, "fix: mean base vrate {v}");
}

/// Each seed's cgB IOPS, stock and fixed, with `edit` applied.
fn cgb_over_seeds(
    edit: impl Fn(&str) -> String + Copy,
    seeds: std::ops::RangeInclusive<u64>,
) -> Vec<(u64, Out, Out)> {
    seeds
        .map(|seed| {
            (
                seed,
                run_seed(edit, false, Some(seed)),
                run_seed(edit, true, Some(seed)),
            )
        })
        .collect()
}

/// A collapsed stock run is in the real stock kernel's regime: no completion in ~40% of
/// the periods, busy_level never 4.
fn assert_real_regime(seed: u64, stock: &Out) {
    let none = stock.share(4, |r| r.nr_done == 0);
    assert!((0.3..0.5).contains(&none), "seed {seed}: {none}");
    assert_eq!(stock.share(4, |r| r.busy_after >= 4), 0.0);
}

/// With noise the free simulation reaches the real kernel's regime by itself in some
/// seeds (the real kernels: 5 of 6 stock 6.12.117 boots and 4 of 7 6.1.192 boots
/// collapsed), and then only the fix gets out of it: over seeds 1–8, the stock kernel's
/// cgB collapses (< 80 IOPS) in some, the fix's never (> 180 IOPS, real 198.7–200.0).
#[test]
fn with_noise_the_stock_kernel_collapses_in_some_seeds_the_fix_in_none() {
    let collapsed = stock_collapses_fix_holds(noisy);
    assert!((1..=6).contains(&collapsed), "{collapsed} of 8 collapsed");
}

/// Over seeds 1–8 with `edit` applied: each stock run in one regime or the other,
/// nothing between (a collapsed one, < 80 IOPS, in the real kernel's), each fixed run
/// holding cgB's rate (> 180 IOPS); how many stock runs collapsed.
fn stock_collapses_fix_holds(edit: impl Fn(&str) -> String + Copy) -> usize {
    let mut collapsed = 0;
    for (seed, stock, fix) in cgb_over_seeds(edit, 1..=8) {
        let (s, f) = (stock.iops("cgB"), fix.iops("cgB"));
        assert!(
            !(80.0..=180.0).contains(&s),
            "seed {seed}: stock cgB {s} IOPS"
        );
        if s < 80.0 {
            collapsed += 1;
            assert_real_regime(seed, &stock);
        }
        assert!(f > 180.0, "seed {seed}: fix cgB {f} IOPS");
    }
    collapsed
}

/// `validate`'s guest profile for 6.12 (`GUEST_HOSTS`), with the slips measured on the
/// real guest's cgB once both fio jobs run (~2.6% of its sleeps, up to 165 µs late).
fn guest_profile(text: &str) -> String {
    let (_, costs) = guest_host("6.12.117");
    let host: String = costs
        .host()
        .iter()
        .map(|(k, v)| format!("{k} = {v}\n"))
        .collect();
    format!("{text}\n[host]\n{host}")
}

/// The noise the real guest shows once both jobs run is too small to move the regime
/// (§8, session 8) — with `validate`'s 6.12 profile, every fio starting on a whole
/// millisecond, every seed of 1–6 stays in the middle regime, stock and fixed alike
/// (the real stock kernel: 5 of 6 boots collapsed). A profile or model change that
/// moves this shows up here.
#[test]
fn with_the_measured_guest_noise_the_simulation_stays_in_the_middle_regime() {
    for (seed, stock, fix) in cgb_over_seeds(guest_profile, 1..=6) {
        let (s, f) = (stock.iops("cgB"), fix.iops("cgB"));
        assert!(s > 190.0, "seed {seed}: stock cgB {s} IOPS");
        assert!(f > 190.0, "seed {seed}: fix cgB {f} IOPS");
        assert_eq!(stock.share(2, |r| r.nr_done == 0), 0.0, "seed {seed}");
    }
}

/// With each fio process starting at a phase of the tick drawn from the seed, as a real
/// fio does (`[host] fio_start_phase = 1` over `validate`'s 6.12 profile; §8, session
/// 29), cgB's rate-paced I/Os fall where in blk-iocost's period a real fio's do, cgA
/// issues at the real kernel's rate for a given vrate (held at 124.44%: 155–157 IOPS in
/// six seeds of eight, real 6.12 155.2–157.3, against 164 on a whole millisecond), and
/// the free simulation goes where the real kernels go: the stock kernel collapses into
/// the real kernel's regime in most seeds (real stock 6.12.117: 5 of 6 boots, cgB 26–50 IOPS; the sixth 200.0),
/// the fix holds every seed (real 198.5–200.0 IOPS, 4 boots).
#[test]
fn with_fio_starting_at_any_phase_of_the_tick_the_stock_kernel_collapses_in_most_seeds() {
    let phased = |text: &str| format!("{}fio_start_phase = 1\n", guest_profile(text));
    let collapsed = stock_collapses_fix_holds(phased);
    assert!((5..=8).contains(&collapsed), "{collapsed} of 8 collapsed");
}
