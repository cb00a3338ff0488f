//! blk-iolatency properties: nothing lost (every slot returned, every sleeper woken),
//! a group without a target is never spared, lifting the target gives the sibling its
//! full depth back within one second; and the example scenario end to end
//! (determinism, the protection it shows).
//!
//! The property runs drive [`BlkIolatency`] directly: under parent `p`, `web` (a
//! target) and `batch` (no target, or a loose one) keep a fixed number of bios in
//! flight each; a toy device completes a bio `base + per · inflight` after it gets
//! all its slots, so more depth means more latency for everyone.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use blkcg_sim::blkcg::CgroupTree;
use blkcg_sim::iolatency::{
    BlkIolatency, Bypass, DoneBio, IolatRow, IolatencyConfig, behaviour_for,
};
use blkcg_sim::run::run_variant;
use blkcg_sim::scenario::{Scenario, embedded};
use blkcg_sim::sim::{NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC, Ns};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Setup {
    qd: [u32; 2],
    target_us: u64,
    /// `batch`'s target: 0 = none.
    batch_target_us: u64,
    base_us: u64,
    per_us: u64,
    nr_requests: u32,
    rotational: bool,
    /// Every n-th bio of `batch` is REQ_META (issue as root); 0 = none.
    meta_every: u32,
    /// When `web`'s target is lifted, ms.
    lift_ms: u64,
}

#[derive(Debug, Default)]
struct Outcome {
    submitted: u64,
    completed: u64,
    /// Violations of "a group without a target is never spared".
    spared: Vec<String>,
    /// After the lift + 1 s: batch's max_depth, use_delay, sleepers, and whether any
    /// batch bio had to wait after that point.
    after_lift: Option<(u32, i32, usize)>,
    waited_after_lift: bool,
    rows: u64,
    /// The lowest max_depth batch had.
    min_depth: u32,
}

enum Ev {
    Done(u64),
    Timer,
}

fn simulate(s: &Setup, stop: Ns) -> Outcome {
    let mut t = CgroupTree::default();
    let web = t.ensure("p/web");
    let batch = t.ensure("p/batch");
    let p = t.find("p").unwrap();
    let cfg = IolatencyConfig {
        behaviour: behaviour_for("newest", &[]).unwrap(),
        hz: 250,
        start_jiffies: 0,
        nr_requests: s.nr_requests,
        rotational: s.rotational,
        debug_stats: true,
    };
    let mut l = BlkIolatency::new(cfg, &t);
    l.set_limit(web, s.target_us * NSEC_PER_USEC, 0);
    if s.batch_target_us > 0 {
        l.set_limit(batch, s.batch_target_us * NSEC_PER_USEC, 0);
    }
    let lift = s.lift_ms * NSEC_PER_MSEC;
    let check_at = lift + NSEC_PER_SEC;
    let mut out = Outcome {
        min_depth: u32::MAX,
        ..Outcome::default()
    };
    // token → (group, meta, issue time once it has its slots, counted at throttle)
    let mut bios: Vec<(u32, bool, Ns, bool)> = Vec::new();
    let mut events: BinaryHeap<Reverse<(Ns, u64, u64)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut inflight_dev = 0u64;
    let mut seen_cookie = l.child_cookie(p);
    let mut lifted = false;
    let mut nth = 0u32;
    let mut push = |events: &mut BinaryHeap<_>, at: Ns, ev: u64| {
        seq += 1;
        events.push(Reverse((at, seq, ev)));
    };
    const TIMER: u64 = u64::MAX;
    let mut timer_pushed = None;

    // start a bio of `cg` at `now`: throttle, then the device when it goes
    macro_rules! start {
        ($cg:expr, $now:expr) => {{
            let cg = $cg;
            let now = $now;
            let meta = cg == batch && s.meta_every > 0 && {
                nth += 1;
                nth % s.meta_every == 0
            };
            let tok = bios.len() as u64;
            bios.push((cg, meta, now, true));
            out.submitted += 1;
            let r = if cg == batch {
                let cookie = l.child_cookie(p);
                let (depth, delay) = (l.max_depth(batch), l.use_delay(batch));
                let r = l.throttle(tok, cg, meta, now);
                if now >= check_at && r == Bypass::Wait {
                    out.waited_after_lift = true;
                }
                // only a group without a target must never be spared
                if r != Bypass::NotEnabled && cookie < seen_cookie && s.batch_target_us == 0 {
                    let want = (depth.min(s.nr_requests) / 2).max(1);
                    let ok = if depth == 1 {
                        l.use_delay(batch) == delay + 1
                    } else {
                        l.max_depth(batch) == want
                    };
                    if !ok {
                        out.spared.push(format!(
                            "t={now}: cookie {seen_cookie}->{cookie}, depth {depth}->{}, use_delay {delay}->{}",
                            l.max_depth(batch),
                            l.use_delay(batch)
                        ));
                    }
                }
                if r != Bypass::NotEnabled {
                    seen_cookie = cookie;
                }
                out.min_depth = out.min_depth.min(l.max_depth(batch));
                r
            } else {
                l.throttle(tok, cg, meta, now)
            };
            bios[tok as usize].3 = r != Bypass::NotEnabled;
            r
        }};
    }
    let mut go = Vec::new();
    for (cg, qd) in [(web, s.qd[0]), (batch, s.qd[1])] {
        for _ in 0..qd {
            if start!(cg, 0) != Bypass::Wait {
                go.push(bios.len() as u64 - 1);
            }
        }
    }
    let mut now: Ns = 0;
    loop {
        // bios that have every slot go to the device, in order
        for r in l.take_released() {
            go.push(r.token);
        }
        for tok in go.drain(..) {
            inflight_dev += 1;
            bios[tok as usize].2 = now;
            let lat = (s.base_us + s.per_us * inflight_dev) * NSEC_PER_USEC;
            push(&mut events, now + lat, tok);
        }
        if let Some(at) = l.timer_at()
            && timer_pushed != Some(at)
        {
            timer_pushed = Some(at);
            push(&mut events, at, TIMER);
        }
        if !lifted && now >= lift {
            lifted = true;
            l.set_limit(web, 0, now);
        }
        if out.after_lift.is_none() && now >= check_at {
            out.after_lift = Some((l.max_depth(batch), l.use_delay(batch), l.sleepers(batch)));
        }
        let Some(Reverse((at, _, ev))) = events.pop() else {
            break;
        };
        now = at;
        let ev = if ev == TIMER { Ev::Timer } else { Ev::Done(ev) };
        match ev {
            Ev::Timer => {
                if timer_pushed == Some(now) {
                    timer_pushed = None;
                    l.timer_fn(now);
                }
            }
            Ev::Done(tok) => {
                inflight_dev -= 1;
                out.completed += 1;
                let (cg, meta, issued, counted) = bios[tok as usize];
                let bio = DoneBio {
                    cgroup: cg,
                    issued,
                    issue_as_root: meta,
                    counted,
                    again: false,
                };
                l.done_bio(bio, now);
                if now < stop && start!(cg, now) != Bypass::Wait {
                    go.push(bios.len() as u64 - 1);
                }
            }
        }
        out.rows += l
            .take_rows()
            .iter()
            .filter(|r| matches!(r, IolatRow::Window(_)))
            .count() as u64;
    }
    for cg in [p, web, batch] {
        assert_eq!(l.inflight(cg), 0, "cgroup {cg}: slots not returned");
        assert_eq!(l.sleepers(cg), 0, "cgroup {cg}: a sleeper never woken");
    }
    out
}

fn setups() -> impl Strategy<Value = Setup> {
    (
        (1u32..4, 1u32..48),
        100u64..3000,
        prop_oneof![Just(0u64), 20_000u64..100_000],
        (20u64..400, 1u64..60),
        prop_oneof![Just(8u32), Just(32), Just(64), Just(256)],
        any::<bool>(),
        prop_oneof![Just(0u32), 2u32..9],
        1_000u64..4_000,
    )
        .prop_map(
            |(qd, target_us, batch_target_us, (base_us, per_us), nr, rotational, meta, lift)| {
                Setup {
                    qd: [qd.0, qd.1],
                    target_us,
                    batch_target_us,
                    base_us,
                    per_us,
                    nr_requests: nr,
                    rotational,
                    meta_every: meta,
                    lift_ms: lift,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn nothing_lost_no_target_never_spared_and_lifting_restores_depth(s in setups()) {
        let stop = (s.lift_ms + 2_000) * NSEC_PER_MSEC;
        let out = simulate(&s, stop);
        // every bio started completed (slots and sleepers are checked in simulate)
        prop_assert_eq!(out.submitted, out.completed);
        prop_assert!(out.spared.is_empty(), "{:?}", out.spared);
        let (depth, use_delay, sleepers) = out.after_lift.expect("ran past lift + 1 s");
        prop_assert_eq!(sleepers, 0);
        prop_assert!(!out.waited_after_lift, "a batch bio waited after lift + 1 s");
        if s.batch_target_us > 0 {
            // still enabled: batch saw the default cookie at its next submission
            prop_assert_eq!(depth, u32::MAX);
            prop_assert_eq!(use_delay, 0);
        }
    }
}

#[test]
fn a_noisy_sibling_is_scaled_down() {
    // QD32 against a 300 µs target where each inflight bio adds 20 µs: web misses
    // until batch is throttled
    let s = Setup {
        qd: [1, 32],
        target_us: 300,
        batch_target_us: 0,
        base_us: 100,
        per_us: 20,
        nr_requests: 64,
        rotational: false,
        meta_every: 0,
        lift_ms: 60_000,
    };
    let out = simulate(&s, 5 * NSEC_PER_SEC);
    assert!(out.rows > 10, "windows: {}", out.rows);
    assert!(out.spared.is_empty(), "{:?}", out.spared);
    // halved from 64 at each scale event, 500 ms apart, until web meets its target
    // (at depth 8: 100 + 20·9 = 280 µs)
    assert!(
        out.min_depth <= 8,
        "batch's depth went down to {}",
        out.min_depth
    );
}

/// (web's clat mean in µs, batch's IOPS) of a variant of the example, and everything it
/// reported as text (summaries, io.stat, blk-iolatency's rows).
fn example(variant: &str, version: Option<&str>) -> (f64, f64, String) {
    let text = embedded::get("example-iolatency-protect").expect("built-in scenario");
    let sc = Scenario::parse(text, "example-iolatency-protect.toml").unwrap();
    let run = run_variant(&sc, Some(variant), version, None, false).unwrap();
    let job = |name: &str| {
        run.summaries
            .iter()
            .find(|j| j.job == name)
            .unwrap_or_else(|| panic!("no job {name}"))
            .clone()
    };
    let windows = run
        .record
        .rows::<IolatRow>()
        .iter()
        .filter(|r| matches!(r, IolatRow::Window(_)))
        .count();
    assert!(windows > 10, "{variant}: {windows} windows");
    assert!(run.io_stat.contains("depth="), "{}", run.io_stat);
    let text = format!(
        "{:?}\n{}\n{:?}",
        run.summaries,
        run.io_stat,
        run.record.rows::<IolatRow>()
    );
    (job("web").clat_mean_ms * 1e3, job("batch").iops, text)
}

#[test]
fn the_example_protects_web_and_is_deterministic() {
    let (web, batch, text) = example("ssd", None);
    let (_, _, again) = example("ssd", None);
    assert_eq!(text, again, "same scenario and seed, same output");
    eprintln!("ssd: web clat mean {web:.1} µs, batch {batch:.0} IOPS");
    // web's mean over the run sits below what QD32 beside it gives (~360 µs on 8
    // channels) because batch is held to a few bios in the first half
    assert!(web < 250.0, "web clat mean {web} µs");
}
