//! Device models driven directly through the EventQueue.

use blkcg_sim::device::config::{Keys, build, describe, resolve};
use blkcg_sim::device::{BlockDevice, Completion, DevRq, cloud, hdd, nullb};
use blkcg_sim::sim::{Dir, Event, EventQueue, NSEC_PER_MSEC, NSEC_PER_SEC, Ns};

fn table(s: &str) -> toml::Table {
    s.parse().unwrap()
}

fn rq(tag: u32, bytes: u64, sector: u64) -> DevRq {
    DevRq {
        tag,
        dir: Dir::Read,
        sector,
        bytes,
    }
}

/// Closed loop: `qd` tags kept busy with `bytes`-sized IOs (sector from `pos`) until
/// `end`; returns the completion times.
fn closed_loop(
    dev: &mut dyn BlockDevice,
    qd: u32,
    bytes: u64,
    end: Ns,
    mut pos: impl FnMut(u32) -> u64,
) -> Vec<Ns> {
    let mut q = EventQueue::new();
    let mut done = Vec::new();
    let mut times = Vec::new();
    let mut n = 0;
    // the block layer's hctx->dispatch: what the driver refused (Completion::Requeued)
    // waits, in order, for the driver to restart its queue
    let mut held = std::collections::VecDeque::new();
    let send = |dev: &mut dyn BlockDevice,
                q: &mut EventQueue,
                held: &mut std::collections::VecDeque<_>,
                at: Ns,
                r| {
        if !held.is_empty() || dev.submit(at, r, q) == Completion::Requeued {
            held.push_back(r);
        }
    };
    for t in 0..qd {
        send(dev, &mut q, &mut held, 0, rq(t, bytes, pos(n)));
        n += 1;
    }
    while let Some((at, ev)) = q.pop() {
        if at > end {
            break;
        }
        let Event::Device(tok) = ev else {
            panic!("foreign event")
        };
        dev.on_event(at, tok, &mut q, &mut done);
        for tag in done.drain(..) {
            times.push(at);
            send(dev, &mut q, &mut held, at, rq(tag, bytes, pos(n)));
            n += 1;
        }
        if dev.restarted() {
            while let Some(r) = held.pop_front() {
                if dev.submit(at, r, &mut q) == Completion::Requeued {
                    held.push_front(r);
                    break;
                }
            }
        }
    }
    times
}

#[test]
fn nullb_qd1_timer_completion_exact() {
    let mut d = build(&table("model='nullb'\nirqmode=2\ncompletion_nsec=12345"), 1).unwrap();
    let t = closed_loop(d.as_mut(), 1, 4096, 100_000, |_| 0);
    assert_eq!(t, (1..=8).map(|i| i * 12345).collect::<Vec<_>>());
    assert_eq!(d.limits().major, 252);
    assert_eq!(d.limits().max_sectors_kb, 127);
}

#[test]
fn nullb_irqmode1_completes_at_once() {
    let mut d = build(&table("model='nullb'\nmbps=4"), 1).unwrap();
    let mut q = EventQueue::new();
    d.submit(5, rq(3, 4096, 0), &mut q);
    let (at, ev) = q.pop().unwrap();
    assert_eq!(at, 5);
    let mut done = vec![];
    let Event::Device(tok) = ev else { panic!() };
    d.on_event(at, tok, &mut q, &mut done);
    assert_eq!(done, vec![3]);
}

#[test]
fn nullb_mbps_ticks() {
    // mb_per_tick(4) = 1048576/50*4 = 83884 bytes: 20 4 KiB requests fit (81920), the
    // 21st drives the grant below zero and is requeued.
    assert_eq!(nullb::mb_per_tick(4), 83884);
    let mut d = build(&table("model='nullb'\nmbps=4\nirqmode=0"), 1).unwrap();
    let t = closed_loop(d.as_mut(), 64, 4096, 200 * NSEC_PER_MSEC - 1, |_| 0);
    // first window (t=0) and each 20 ms tick: exactly 20 completions, all at the tick
    // (the grant is reset, not accumulated).
    for k in 0..10u64 {
        let at = k * 20 * NSEC_PER_MSEC;
        let c = t.iter().filter(|&&x| x == at).count();
        assert_eq!(c, 20, "tick {k}");
    }
    assert_eq!(t.len(), 200);
}

#[test]
fn nullb_completion_nsec_without_timer_mode_is_a_warning() {
    let warnings = |s: &str| resolve(&table(s), 1).unwrap().2;
    for mode in [0, 1] {
        let w = warnings(&format!(
            "model='nullb'\nirqmode={mode}\ncompletion_nsec=50000"
        ));
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].key, "device.completion_nsec");
        assert!(
            w[0].msg.contains(&format!("irqmode={mode}")) && w[0].msg.contains("irqmode=2"),
            "{}",
            w[0].msg
        );
    }
    // the default irqmode is 1
    assert_eq!(warnings("model='nullb'\ncompletion_nsec=50000").len(), 1);
    assert!(warnings("model='nullb'\nirqmode=2\ncompletion_nsec=50000").is_empty());
    assert!(warnings("model='nullb'\nirqmode=1").is_empty());
}

#[test]
fn nullb_mbps_grant_smaller_than_a_request_never_completes() {
    // mb_per_tick(1) = 20971 bytes: a 127.5 KiB request (max_sectors 255) overdraws every
    // tick's fresh grant, is requeued, and never completes - the real driver hangs too.
    let mut d = build(&table("model='nullb'\nmbps=1\nirqmode=0"), 1).unwrap();
    assert!(closed_loop(d.as_mut(), 1, 130560, NSEC_PER_SEC, |_| 0).is_empty());
    // so the set-up is refused for such requests, with the mbps that would do
    let e = d.check_request(130560).unwrap_err();
    assert_eq!(e.key, "device.mbps");
    assert!(
        e.msg.contains("20971") && e.msg.contains("mbps >= 7"),
        "{}",
        e.msg
    );
    // one grant's worth fits: one request per tick, 0 to 1000 ms
    assert!(d.check_request(20971).is_ok());
    let mut d = build(&table("model='nullb'\nmbps=1\nirqmode=0"), 1).unwrap();
    assert_eq!(
        closed_loop(d.as_mut(), 1, 20971, NSEC_PER_SEC, |_| 0).len(),
        51
    );
    let uncapped = build(&table("model='nullb'"), 1).unwrap();
    assert!(uncapped.check_request(1 << 30).is_ok());
}

#[test]
fn nullb_tick_after_idle_fires_at_once_then_on_its_grid() {
    let mut d = build(&table("model='nullb'\nmbps=4\nirqmode=0"), 1).unwrap();
    let mut q = EventQueue::new();
    let mut ticks = Vec::new();
    let mut run_until = |d: &mut Box<dyn BlockDevice>, q: &mut EventQueue, end: Ns| {
        while q.peek_time().is_some_and(|t| t <= end) {
            let (at, ev) = q.pop().unwrap();
            let Event::Device(tok) = ev else { panic!() };
            if tok == u64::MAX {
                ticks.push(at);
            }
            d.on_event(at, tok, q, &mut Vec::new());
        }
    };
    // the timer runs from set-up (time 0): one request, then idle
    d.submit(0, rq(0, 4096, 0), &mut q);
    run_until(&mut d, &mut q, 45 * NSEC_PER_MSEC);
    // 20 ms refills what the request took; 40 ms finds the grant whole and stops
    // the timer; a request at 45 ms restarts it at its past expiry: at once, and
    // the next tick is 60 ms on the set-up grid, not 65; that refill came after the
    // request took its bytes, so at 60 ms the grant is whole again and the timer stops
    d.submit(45 * NSEC_PER_MSEC, rq(1, 4096, 8), &mut q);
    run_until(&mut d, &mut q, 100 * NSEC_PER_MSEC);
    let ms: Vec<Ns> = ticks.iter().map(|t| t / NSEC_PER_MSEC).collect();
    assert_eq!(ms, vec![20, 40, 45, 60]);
}

#[test]
fn ssd_channels_scale() {
    let run = |ch: u32| {
        let mut d = build(
            &table(&format!("model='ssd'\nchannels={ch}\njitter_pct=10")),
            7,
        )
        .unwrap();
        closed_loop(d.as_mut(), 64, 65536, NSEC_PER_SEC, |_| 0).len() as f64
    };
    let (one, four) = (run(1), run(4));
    let r = four / one;
    assert!((r - 4.0).abs() < 0.1, "ratio {r}");
}

#[test]
fn hdd_seek_monotonic() {
    let cfg = hdd::Config::from_keys(&mut Keys::new(&toml::Table::new())).unwrap();
    let h = hdd::Hdd::new(cfg, 1);
    let mut prev = 0;
    for d in [0u64, 1, 100, 10_000, 1 << 20, 1 << 26, 1 << 40] {
        let s = h.seek_ns(d);
        assert!(s >= prev, "seek({d})={s} < {prev}");
        prev = s;
    }
    assert_eq!(h.seek_ns(1 << 40), 16_000_000);
    // random 4k IOPS of a 7200 rpm disk: well under 200/s
    let mut d = build(&table("model='hdd'"), 3).unwrap();
    let mut x = 12345u64;
    let n = closed_loop(d.as_mut(), 1, 4096, NSEC_PER_SEC, |_| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 20) % 1_900_000_000
    })
    .len();
    assert!((60..160).contains(&n), "{n}");
}

#[test]
fn cloud_unit_accounting() {
    assert_eq!(cloud::io_units(4096), 1);
    assert_eq!(cloud::io_units(256 << 10), 1);
    assert_eq!(cloud::io_units(1 << 20), 4);
    assert_eq!(cloud::io_units(1100 << 10), 5);
    // IOPS-bound with 1 MiB IOs: 400 units/s → 100 IO/s
    let mut d = build(&table("model='cloud'\niops=400\nbps=1000000000"), 1).unwrap();
    let n = closed_loop(d.as_mut(), 32, 1 << 20, 10 * NSEC_PER_SEC, |_| 0).len();
    assert!((995..=1010).contains(&n), "{n}");
}

#[test]
fn cloud_p20_saturated_bursty() {
    let mut d = build(&table("model='cloud'\npreset='azure-p20'"), 1).unwrap();
    let t = closed_loop(d.as_mut(), 128, 1 << 20, 11 * NSEC_PER_SEC, |_| 0);
    let from = NSEC_PER_SEC;
    let n = t
        .iter()
        .filter(|&&x| x > from && x <= from + 10 * NSEC_PER_SEC)
        .count() as f64;
    let want = 173_471_131.0 * 10.0 / (1u64 << 20) as f64;
    assert!((n / want - 1.0).abs() < 0.01, "{n} vs {want}");
    // completions cluster at refill instants: gaps are 0 or the 20 ms refill period
    let gaps: Vec<Ns> = t
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&g| g > 0)
        .collect();
    assert!(
        gaps.iter().all(|&g| g == 20 * NSEC_PER_MSEC),
        "{:?}",
        &gaps[..5]
    );
}

#[test]
fn cloud_4k_random_sustains_iops() {
    let mut d = build(&table("model='cloud'\npreset='azure-p20'"), 1).unwrap();
    let t = closed_loop(d.as_mut(), 128, 4096, 11 * NSEC_PER_SEC, |i| i as u64 * 8);
    let n = t.iter().filter(|&&x| x > NSEC_PER_SEC).count() as f64;
    assert!((n / 35660.0 - 1.0).abs() < 0.01, "{n}");
}

#[test]
fn cloud_gp2_bursting_drains_then_baseline() {
    // short credits so the test is quick: (3000-300)*2 s = 5400 credits
    let mut d = build(
        &table("model='cloud'\npreset='aws-gp2-100g'\ncredit_secs=2"),
        1,
    )
    .unwrap();
    let t = closed_loop(d.as_mut(), 64, 4096, 10 * NSEC_PER_SEC, |_| 0);
    let in_sec = |s: u64| {
        t.iter()
            .filter(|&&x| x >= s * NSEC_PER_SEC && x < (s + 1) * NSEC_PER_SEC)
            .count()
    };
    assert!(in_sec(0) > 2900, "{}", in_sec(0));
    assert!((290..=310).contains(&in_sec(8)), "{}", in_sec(8));
}

#[test]
fn explicit_keys_override_preset() {
    let (d, res, warnings) =
        resolve(&table("model='cloud'\npreset='aws-gp3'\niops=5000"), 1).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(d.model(), "cloud");
    assert!(res.contains(&("iops".into(), "5000".into())));
    assert!(res.contains(&("bps".into(), (125u64 << 20).to_string())));
    assert!(describe(&res).starts_with("model=cloud\npreset=aws-gp3\niops=5000\n"));
}

#[test]
fn bad_keys_name_the_key() {
    let err = |s: &str| build(&table(s), 1).err().unwrap();
    let e = err("model='nullb'\ncompletion_nsec=-1");
    assert_eq!(e.key, "device.completion_nsec");
    assert!(e.msg.contains("expected"));
    let e = err("model='nullb'\ncompletion_nsecs=5");
    assert_eq!(e.key, "device.completion_nsecs");
    assert!(e.msg.contains("completion_nsec"));
    assert_eq!(
        err("model='nullb'\nscheduler='kyber'").key,
        "device.scheduler"
    );
    assert_eq!(err("model='floppy'").key, "device.model");
    assert_eq!(
        err("model='cloud'\npreset='azure-p99'").key,
        "device.preset"
    );
    assert_eq!(err("model='cloud'\nbps=1\nmbps=1").key, "device.mbps");
    assert_eq!(err("model='ssd'\ndev='8'").key, "device.dev");
}
