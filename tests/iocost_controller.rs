//! Drives the iocost controller directly with a tiny fake device: a serial server with a
//! fixed 100 us service time (10,000 IOPS), FIFO, completions fed back through
//! on_rq_done/on_bio_done. QoS `rpct=90 rlat=2000` so a deep queue misses its target.

use blkcg_sim::blkcg::{CgroupTree, DeviceTable};
use blkcg_sim::device::QueueLimits;
use blkcg_sim::iocost::ctl::PeriodRow;
use blkcg_sim::iocost::{Iocost, IocostConfig, TimerMode, behaviour_for};
use blkcg_sim::sim::bio::{Bio, BioSlab, Dir};
use blkcg_sim::sim::queue::{Event, EventQueue};

const SERVICE_NS: u64 = 100_000;

struct Out {
    done: Vec<u64>,
    waiting_left: usize,
    trace: Vec<String>,
    rows: Vec<PeriodRow>,
    /// Issuer delays (ns) handed out on return to user space, in order.
    delays: Vec<u64>,
    io_stat: Vec<String>,
}

struct Rig {
    ioc: Iocost,
    q: EventQueue,
    bios: BioSlab,
    waiting: usize,
    seq: u64,
    free_at: u64,
    meta: Vec<bool>,
    delays: Vec<u64>,
}

impl Rig {
    fn dispatch(&mut self, now: u64, id: u32) {
        self.bios.get_mut(id).submitted = now;
        self.free_at = self.free_at.max(now) + SERVICE_NS;
        self.q.push(self.free_at, Event::Device(id as u64));
    }

    fn submit(&mut self, now: u64, cg: u32) {
        self.seq += 1;
        let sector = (self.seq * 2_654_435_761 % (1 << 28)) * 8;
        let mut bio = Bio {
            meta: self.meta[cg as usize],
            ..Bio::new(cg, Dir::Read, sector, 4096, now)
        };
        let id = self.bios.alloc(bio);
        let issue = self.ioc.throttle(now, id, &mut bio, &mut self.q);
        *self.bios.get_mut(id) = bio;
        let d = self.ioc.user_delay(now, cg);
        if d > 0 {
            self.delays.push(d);
        }
        if issue {
            self.dispatch(now, id);
        } else {
            self.waiting += 1;
        }
    }
}

fn run(qos: &str, weights: &[u32], qd: usize, secs: u64) -> Out {
    run_meta(qos, weights, &[], qd, secs)
}

/// `run` where cgroup `c{i}` issues REQ_META bios when `meta[i]`.
fn run_meta(qos: &str, weights: &[u32], meta: &[bool], qd: usize, secs: u64) -> Out {
    let mut tree = CgroupTree::default();
    let cgs: Vec<u32> = (0..weights.len())
        .map(|i| tree.ensure(&format!("c{i}")))
        .collect();
    let limits = QueueLimits {
        major: 8,
        minor: 0,
        name: "fake".into(),
        rotational: false,
        hw_queue_depth: 64,
        nr_requests: 64,
        max_sectors_kb: 1280,
        logical_block_size: 512,
        capacity: 1 << 40,
        write_cache: false,
        queue_depth: None,
    };
    let cfg = IocostConfig {
        timer: TimerMode::Jiffies {
            hz: 1000,
            one_cpu: false,
        },
        behaviour: behaviour_for("newest", &[]).unwrap(),
        debug_stats: true,
    };
    let devs = DeviceTable {
        disks: vec![(8, 0)],
    };
    let mut ioc = Iocost::new(cfg, &tree, &limits);
    ioc.write_qos(
        0,
        &format!("8:0 enable=1 rpct=90 rlat=2000 wpct=90 wlat=2000 {qos}"),
        &devs,
    )
    .unwrap();
    for (i, &w) in weights.iter().enumerate() {
        ioc.write_weight(0, cgs[i], &format!("8:0 {w}"), &devs)
            .unwrap();
    }
    let mut rig = Rig {
        ioc,
        q: EventQueue::new(),
        bios: BioSlab::default(),
        waiting: 0,
        seq: 0,
        free_at: 0,
        meta: std::iter::once(false)
            .chain((0..weights.len()).map(|i| meta.get(i).copied().unwrap_or(false)))
            .collect(),
        delays: Vec::new(),
    };
    let mut done = vec![0; weights.len()];
    let end = secs * 1_000_000_000;
    for &cg in &cgs {
        for _ in 0..qd {
            rig.submit(0, cg);
        }
    }
    let mut woken = Vec::new();
    while let Some((now, ev)) = rig.q.pop() {
        match ev {
            Event::Policy(blkcg_sim::iocost::rqos::ID, tok) => {
                rig.ioc
                    .on_event(now, tok, &mut rig.q, &mut rig.bios, &mut woken);
                for id in std::mem::take(&mut woken) {
                    rig.waiting -= 1;
                    rig.dispatch(now, id);
                }
            }
            Event::Device(tok) => {
                let id = tok as u32;
                let b = *rig.bios.get(id);
                rig.ioc
                    .on_rq_done(now, b.dir, b.bytes, b.submitted, b.submitted);
                rig.ioc.on_bio_done(now, &b);
                rig.bios.release(id);
                let k = cgs.iter().position(|&c| c == b.cgroup).unwrap();
                if now < end {
                    done[k] += 1;
                    rig.submit(now, b.cgroup);
                }
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    let mon = rig.ioc.monitor_text(end);
    assert!(mon.starts_with("8:0 "), "{mon}");
    let json = rig.ioc.monitor_json(end);
    let dev: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(dev["period_ms"].as_u64(), Some(4));
    for l in json.lines().skip(1) {
        let cg: serde_json::Value = serde_json::from_str(l).unwrap();
        for k in [
            "cgroup",
            "timestamp",
            "is_active",
            "weight",
            "weight_active",
            "weight_inuse",
            "hweight_active_pct",
            "hweight_inuse_pct",
            "inflight_pct",
            "debt_ms",
            "delay_ms",
            "usage_pct",
            "address",
        ] {
            assert!(cg.get(k).is_some(), "{k} in {l}");
        }
    }
    assert!(rig.ioc.io_stat(0).starts_with("cost.vrate="));
    Out {
        done,
        waiting_left: rig.waiting,
        trace: rig.ioc.take_trace(),
        rows: rig.ioc.take_rows(),
        delays: rig.delays,
        io_stat: std::iter::once(0)
            .chain(cgs.iter().copied())
            .map(|c| rig.ioc.io_stat(c))
            .collect(),
    }
}

#[test]
fn weight_proportionality_1_to_3() {
    // vrate capped at 100% (8518 IOPS < the device's 10,000) so iocost, not the device
    // FIFO, decides the split.
    let o = run("max=100", &[100, 300], 32, 10);
    let ratio = o.done[1] as f64 / o.done[0] as f64;
    assert!(
        (ratio - 3.0).abs() / 3.0 < 0.05,
        "done {:?} ratio {ratio}",
        o.done
    );
    assert_eq!(o.waiting_left, 0, "every waiting bio is eventually woken");
}

#[test]
fn lone_cgroup_is_work_conserving() {
    // SSD_DFL 4 KiB random read costs 14983047 + 1152074 vtime ≈ 117.4 us at 100%
    // (≈ 8518 IOPS); the device does 10,000. Work conservation: vrate is raised while the
    // lone cgroup is short and latency is met, so it gets more than the model's 100%
    // rate. vrate then oscillates around the point where the device FIFO misses the
    // 2 ms target (up while met, down while missed): with the period timer firing a
    // jiffy late as the kernel's does (5 ms periods), the average is ~8650 IOPS.
    let o = run("", &[100], 32, 5);
    let iops = o.done[0] / 5;
    assert!((8519..=10_000).contains(&iops), "iops {iops}");
    assert_eq!(o.waiting_left, 0);
}

#[test]
fn deterministic() {
    let a = run("", &[100, 300], 8, 2);
    let b = run("", &[100, 300], 8, 2);
    assert!(
        a.trace
            .iter()
            .any(|l| l.starts_with("iocost_ioc_vrate_adj: [fake] vrate=")),
        "vrate_adj traced"
    );
    assert_eq!(a.done, b.done);
    assert_eq!(a.trace, b.trace);
}

/// Parses `a->b` out of `key=a->b` in a trace line.
fn arrow(line: &str, key: &str) -> (u64, u64) {
    let v = line.split(' ').find_map(|t| t.strip_prefix(key)).unwrap();
    let (a, b) = v.split_once("->").unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

#[test]
fn metadata_debt_delay_and_forgiveness() {
    // c0 (weight 100) issues REQ_META only, c1 (weight 300) normal reads; both QD32
    // for 2 s on the 10,000-IOPS FIFO. c0's bios are never blocked, so it takes about
    // half the device against a quarter share: debt.
    let o = run_meta("max=100", &[100, 300], &[true, false], 32, 2);
    let c0: Vec<_> = o
        .rows
        .iter()
        .filter_map(|r| r.cgroups.iter().find(|c| c.cg == 1))
        .collect();
    let max_debt = c0.iter().map(|c| c.debt).max().unwrap();
    assert!(max_debt > 0, "debt grows");
    // debt handling owns inuse: a debtor sits at the minimum (iocg_incur_debt)
    assert!(c0.iter().filter(|c| c.debt > 0).all(|c| c.inuse == 1));
    // the debt keeps growing while c0 issues: later debt above the first one seen
    let first = c0.iter().find(|c| c.debt > 0).unwrap().debt;
    assert!(max_debt > first);
    // issuer delay: MIN_DELAY..=MAX_DELAY (250 us .. 250 ms), handed out as ns
    assert!(!o.delays.is_empty(), "delay applied");
    assert!(
        o.delays
            .iter()
            .all(|&d| (250_000..=250_000_000).contains(&d))
    );
    assert!(c0.iter().any(|c| c.delay >= 250));
    // the normal cgroup is never in debt
    assert!(o.rows.iter().all(|r| {
        r.cgroups
            .iter()
            .filter(|c| c.cg == 2)
            .all(|c| c.debt == 0 && c.delay == 0)
    }));
    // forgiveness once the device idles after 2 s: each line halves debt and delay
    // the same number of times (>> n, never to 0), at ≤ 50% usage
    let fg: Vec<&String> = o
        .trace
        .iter()
        .filter(|l| l.starts_with("iocost_iocg_forgive_debt: [fake:/c0] "))
        .collect();
    assert!(!fg.is_empty(), "forgiveness kicks in");
    for l in &fg {
        let usage: u64 = l
            .split(' ')
            .find_map(|t| t.strip_prefix("usage="))
            .unwrap()
            .parse()
            .unwrap();
        assert!(usage <= 50, "{l}");
        let (d0, d1) = arrow(l, "debt=");
        let (_, y1) = arrow(l, "delay=");
        // halved at least once (abs_vdebt >>= n ?: 1), then the kick may pay more
        assert!(d1 <= (d0 >> 1).max(1), "{l}");
        assert!(y1 <= 250_000, "{l}");
    }
    // in the end the debt is gone and the cgroup went idle
    let last = o.rows.last().unwrap();
    assert!(last.cgroups.iter().all(|c| c.debt == 0), "{:?}", last);
    assert_eq!(o.waiting_left, 0);
    // io.stat (blkcg_debug_stats): c0 spent time in debt and in delay, never waiting
    // (REQ_META is never queued); c1 waited; the root sums its children
    let key = |line: &str, k: &str| -> u64 {
        line.split(' ')
            .find_map(|t| t.strip_prefix(k))
            .unwrap()
            .parse()
            .unwrap()
    };
    let (root, c0s, c1s) = (&o.io_stat[0], &o.io_stat[1], &o.io_stat[2]);
    assert!(root.starts_with("cost.vrate="), "{root}");
    assert!(key(c0s, "cost.indebt=") > 100_000, "{c0s}");
    assert!(key(c0s, "cost.indelay=") > 0, "{c0s}");
    assert_eq!(key(c0s, "cost.wait="), 0, "{c0s}");
    assert!(key(c1s, "cost.wait=") > 100_000, "{c1s}");
    assert_eq!(key(c1s, "cost.indebt="), 0, "{c1s}");
    for k in ["cost.usage=", "cost.wait=", "cost.indebt=", "cost.indelay="] {
        assert_eq!(key(root, k), key(c0s, k) + key(c1s, k), "{k}");
    }
    // wall-clock counters cannot exceed the run (2 s plus the drain)
    let end_us = o.rows.last().unwrap().t / 1000;
    assert!(key(c0s, "cost.indebt=") <= end_us);
}

#[test]
fn debt_scenario_delay_lands_in_slat() {
    use blkcg_sim::run::run_variant;
    use blkcg_sim::scenario::Scenario;
    let text = std::fs::read_to_string("scenarios/example-iocost-debt.toml").unwrap();
    let sc = Scenario::parse(&text, "example-iocost-debt.toml").unwrap();
    let run = run_variant(&sc, None, None, None, false).unwrap();
    let job = |cg: &str| run.summaries.iter().find(|s| s.cgroup == cg).unwrap();
    // the issuer delay is part of the submitting syscall: meta's slat, not data's
    assert!(
        job("meta").slat_mean_ms > 1.0,
        "{}",
        job("meta").slat_mean_ms
    );
    assert!(job("data").slat_mean_ms < 0.01);
    assert!(
        run.record
            .rows::<PeriodRow>()
            .iter()
            .any(|r| r.cgroups.iter().any(|c| c.debt > 0))
    );
    assert!(
        run.record
            .trace
            .iter()
            .any(|l| l.starts_with("iocost_iocg_forgive_debt: "))
    );
}

/// Every iocost trace line has its tracepoint's TP_printk shape (include/trace/events/
/// iocost.h): `name: [dev:/cgroup] key=value ...` with the kernel's keys in order.
#[test]
fn trace_lines_follow_the_tracepoint_formats() {
    use blkcg_sim::run::run_variant;
    use blkcg_sim::scenario::Scenario;
    use blkcg_sim::scenario::embedded::SCENARIOS;
    let mut seen = std::collections::BTreeSet::new();
    for name in ["iocost-no-completion", "example-iocost-debt"] {
        let text = SCENARIOS.iter().find(|(n, _)| *n == name).unwrap().1;
        let sc = Scenario::parse(text, name).unwrap();
        let run = run_variant(
            &sc,
            sc.variants().last().map(|s| s.as_str()),
            None,
            None,
            false,
        )
        .unwrap();
        for l in &run.record.trace {
            let (ev, rest) = l.split_once(": [").unwrap();
            let (head, body) = rest.split_once("] ").unwrap();
            let keys: Vec<&str> = body
                .split(' ')
                .map(|t| t.split('=').next().unwrap())
                .collect();
            let want: &[&str] = match ev {
                "iocost_iocg_activate" | "iocost_iocg_idle" => {
                    &["now", "vrate", "period", "vtime", "weight", "hweight"]
                }
                "iocost_inuse_shortage" | "iocost_inuse_transfer" | "iocost_inuse_adjust" => {
                    &["now", "inuse", "hw_inuse"]
                }
                "iocost_iocg_forgive_debt" => &["now", "usage", "debt", "delay"],
                "iocost_ioc_vrate_adj" => &[
                    "vrate",
                    "busy",
                    "missed_ppm",
                    "rq_wait_pct",
                    "lagging",
                    "shortages",
                ],
                other => panic!("unexpected trace line {other}: {l}"),
            };
            assert_eq!(keys, want, "{l}");
            assert_eq!(head.contains(":/"), ev != "iocost_ioc_vrate_adj", "{l}");
            seen.insert(ev.to_string());
        }
    }
    for ev in [
        "iocost_iocg_activate",
        "iocost_iocg_idle",
        "iocost_inuse_transfer",
        "iocost_inuse_adjust",
        "iocost_ioc_vrate_adj",
        "iocost_iocg_forgive_debt",
    ] {
        assert!(seen.contains(ev), "{ev} never traced");
    }
}
