//! Property tests: budget per window, nothing lost, determinism.

use blkcg_sim::blkcg::{CgroupTree, DeviceTable};
use blkcg_sim::device::QueueLimits;
use blkcg_sim::sim::{Bio, BioSlab, Dir, Event, EventQueue, NSEC_PER_MSEC, Ns};
use blkcg_sim::throttle::policy::ID as THROTTLE;
use blkcg_sim::throttle::{Throttle, ThrottleConfig, behaviour_for};
use proptest::prelude::*;

/// Runs arrivals (gap ms, size in 4 KiB units, dir) for a child of a limited parent;
/// returns (id, dir, bytes, release ns) in release order.
fn run(version: &str, arrivals: &[(u64, u64, bool)]) -> Vec<(u32, Dir, u64, Ns)> {
    let mut tree = CgroupTree::default();
    let leaf = tree.ensure("p/c");
    let parent = tree.find("p").unwrap();
    let lim = QueueLimits {
        major: 8,
        minor: 0,
        name: "sda".into(),
        rotational: true,
        hw_queue_depth: 32,
        nr_requests: 64,
        max_sectors_kb: 512,
        logical_block_size: 512,
        capacity: 1 << 40,
        write_cache: false,
        queue_depth: None,
    };
    let b = behaviour_for(version, false, &[]).unwrap();
    let mut t = Throttle::new(ThrottleConfig::new(1000, b), &tree, &lim);
    let mut q = EventQueue::new();
    let devs = DeviceTable {
        disks: vec![(8, 0)],
    };
    t.write_io_max(0, parent, "8:0 rbps=1048576 wbps=1048576\n", &devs, &mut q)
        .unwrap();
    t.write_io_max(0, leaf, "8:0 riops=50 wiops=50\n", &devs, &mut q)
        .unwrap();
    let mut slab = BioSlab::default();
    let mut at = 0;
    for (i, &(gap, _, _)) in arrivals.iter().enumerate() {
        at += gap * NSEC_PER_MSEC;
        q.push(at, Event::Job(i as u32));
    }
    let mut out = Vec::new();
    let mut rel = Vec::new();
    while let Some((now, ev)) = q.pop() {
        match ev {
            Event::Job(i) => {
                let (_, units, w) = arrivals[i as usize];
                let dir = if w { Dir::Write } else { Dir::Read };
                let mut b = Bio {
                    io: i,
                    ..Bio::new(leaf, dir, 0, units * 4096, now)
                };
                let id = slab.alloc(b);
                if t.submit(now, id, &mut b, &mut q) {
                    rel.push((i, dir, b.bytes, now));
                    slab.release(id);
                }
            }
            Event::Policy(THROTTLE, tok) => {
                out.clear();
                t.on_event(now, tok, &mut q, &mut slab, &mut out);
                for &id in &out {
                    let b = slab.get(id);
                    rel.push((b.io, b.dir, b.bytes, now));
                    slab.release(id);
                }
            }
            _ => {}
        }
    }
    assert_eq!(slab.live(), 0);
    rel
}

fn arrivals() -> impl Strategy<Value = Vec<(u64, u64, bool)>> {
    prop::collection::vec((0u64..40, 1u64..64, any::<bool>()), 1..150)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn budgets_hold_nothing_lost_deterministic(a in arrivals(), v in 0usize..4) {
        let version = ["4.18", "6.1", "6.15", "6.16"][v];
        let rel = run(version, &a);
        prop_assert_eq!(rel.len(), a.len());
        let mut ids: Vec<u32> = rel.iter().map(|r| r.0).collect();
        ids.sort_unstable();
        prop_assert_eq!(ids, (0..a.len() as u32).collect::<Vec<_>>());
        prop_assert_eq!(&run(version, &a), &rel);
        // windows of k slices (100 ms) starting at every release
        let slice = 100 * NSEC_PER_MSEC;
        let max_bio = 63 * 4096;
        for dir in Dir::BOTH {
            let r: Vec<_> = rel.iter().filter(|x| x.1 == dir).collect();
            for (i, s) in r.iter().enumerate() {
                for k in 1..=5u64 {
                    let end = s.3 + k * slice;
                    let in_win: Vec<_> = r[i..].iter().take_while(|x| x.3 < end).collect();
                    let bytes: u64 = in_win.iter().map(|x| x.2).sum();
                    let ios = in_win.len() as u64;
                    // budget of k slices + one slice of burst (+ one retained slice in
                    // 6.15+, + the bio that overdraws)
                    let b_lim = 1048576 * (k + 2) / 10 + max_bio;
                    let i_lim = 50 * (k + 2) / 10 + 1;
                    prop_assert!(bytes <= b_lim, "{} {:?} k={} bytes={}", version, dir, k, bytes);
                    prop_assert!(ios <= i_lim, "{} {:?} k={} ios={}", version, dir, k, ios);
                }
            }
        }
    }
}
