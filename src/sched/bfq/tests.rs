//! BFQ against hand-worked rules and a toy device: a disk serving one request at a
//! time in a fixed time, tasks keeping a number of random 4 KiB reads outstanding.

use super::behaviour::{BfqBehaviour, Inject, PendingGroups};
use super::tunables::Tunables;
use super::*;

/// A task of the toy run: its cgroup, priority, and the reads it keeps outstanding.
struct Task {
    cgroup: u32,
    ioprio: Ioprio,
    depth: u32,
}

/// Run `tasks` on a device of one request at a time taking `service` each, for
/// `until` ns, a task's next read `THINK` after its last completed; each task's
/// sectors served. Cgroups: the root and `weights.len()` children of it at those
/// weights.
fn toy_run(b: BfqBehaviour, weights: &[u64], tasks: &[Task], service: Ns, until: Ns) -> Vec<u64> {
    const THINK: Ns = 5_000;
    let mut bfq = Bfq::new(Tunables::new(250), b, true);
    let mut parents = vec![None];
    parents.extend(weights.iter().map(|_| Some(0)));
    bfq.set_parents(parents);
    for (i, &w) in weights.iter().enumerate() {
        bfq.set_cgroup_weight(i as u32 + 1, w);
    }
    let mut free_tags: Vec<u32> = (0..256).rev().collect();
    let mut outstanding = vec![0u32; tasks.len()];
    let mut served = vec![0u64; tasks.len()];
    let mut reqs: HashMap<u32, (usize, BfqRequest)> = HashMap::new();
    let mut in_flight: Option<(Ns, u32)> = None;
    let mut ready_at = vec![0; tasks.len()];
    let mut rng = 12345u64;
    let mut now: Ns = 0;
    while now < until {
        for (i, t) in tasks.iter().enumerate() {
            while outstanding[i] < t.depth && ready_at[i] <= now {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let tag = free_tags.pop().expect("enough tags");
                let r = BfqRequest {
                    token: tag,
                    task: i as u32,
                    task_ioprio: t.ioprio,
                    sync: true,
                    cgroup: t.cgroup,
                    sector: (rng >> 20) % (1 << 30) / 8 * 8,
                    sectors: 8,
                };
                reqs.insert(tag, (i, r));
                bfq.insert(r, now);
                outstanding[i] += 1;
            }
        }
        if in_flight.is_none()
            && let Some(tag) = bfq.dispatch(now)
        {
            in_flight = Some((now + service, tag));
        }
        let next_ready = (0..tasks.len())
            .filter(|&i| outstanding[i] < tasks[i].depth)
            .map(|i| ready_at[i])
            .min()
            .unwrap_or(Ns::MAX);
        let timer = bfq.idle_timer;
        let first = in_flight
            .map_or(Ns::MAX, |f| f.0)
            .min(timer.unwrap_or(Ns::MAX));
        if next_ready < first {
            now = now.max(next_ready);
            continue;
        }
        match (in_flight, timer) {
            (Some((done, tag)), t) if t.is_none_or(|t| done <= t) => {
                now = done;
                in_flight = None;
                let (i, r) = reqs.remove(&tag).expect("a request in flight");
                served[i] += r.sectors;
                outstanding[i] -= 1;
                free_tags.push(tag);
                ready_at[i] = now + THINK;
                bfq.completed(&r, now);
            }
            (_, Some(t)) => {
                now = t;
                bfq.idle_slice_timer(now);
            }
            _ => now += service,
        }
    }
    served
}

fn be() -> Ioprio {
    Ioprio::DEFAULT
}

fn newest() -> BfqBehaviour {
    BfqBehaviour::default()
}

/// Two groups at 100 and 300, each with one task keeping 8 reads queued: the device
/// is theirs 1:3 (the groups' weights; their queues are alike).
#[test]
fn backlogged_groups_share_the_sectors_by_weight() {
    let tasks = [
        Task {
            cgroup: 1,
            ioprio: be(),
            depth: 8,
        },
        Task {
            cgroup: 2,
            ioprio: be(),
            depth: 8,
        },
    ];
    let s = toy_run(newest(), &[100, 300], &tasks, 40_000, 10_000_000_000);
    let share = s[0] as f64 / (s[0] + s[1]) as f64;
    assert!((0.23..0.27).contains(&share), "{s:?}: {share:.3}");
}

/// In one group, an RT task's queue is served before a BE one's, whatever their
/// weights; the group itself is BE in its parent.
#[test]
fn rt_comes_before_be_in_a_group() {
    let rt = Ioprio::new(IoprioClass::Rt, 4);
    let tasks = [
        Task {
            cgroup: 1,
            ioprio: rt,
            depth: 8,
        },
        Task {
            cgroup: 1,
            ioprio: be(),
            depth: 8,
        },
    ];
    let s = toy_run(newest(), &[100], &tasks, 40_000, 5_000_000_000);
    assert!(s[1] * 50 < s[0], "{s:?}");
}

/// An IDLE queue is served only when nothing else is, and once every
/// `BFQ_CL_IDLE_TIMEOUT` (HZ/5) otherwise: a request at a time.
#[test]
fn the_idle_class_gets_a_request_per_idle_timeout() {
    let idle = Ioprio::new(IoprioClass::Idle, 7);
    let tasks = [
        Task {
            cgroup: 1,
            ioprio: be(),
            depth: 8,
        },
        Task {
            cgroup: 1,
            ioprio: idle,
            depth: 8,
        },
    ];
    let s = toy_run(newest(), &[100], &tasks, 40_000, 5_000_000_000);
    // 5 s / 200 ms: about 25 turns of one 8-sector request
    assert!(s[1] <= 40 * 8, "{s:?}");
    assert!(s[1] >= 10 * 8, "{s:?}");
}

/// `bfq_asymmetric_scenario()`'s groups: one busy cgroup is asymmetric on 6.1 (any
/// non-root group with pending requests), not on 6.12 (two groups needed).
#[test]
fn one_busy_group_is_asymmetric_only_before_6_2() {
    for (pending_groups, asymmetric) in [
        (PendingGroups::AnyChild, true),
        (PendingGroups::AtLeastTwo, false),
    ] {
        let b = BfqBehaviour {
            pending_groups,
            inject: Inject::Total,
            ..BfqBehaviour::default()
        };
        let mut bfq = Bfq::new(Tunables::new(250), b, true);
        bfq.set_parents(vec![None, Some(0)]);
        let r = BfqRequest {
            token: 0,
            task: 0,
            task_ioprio: be(),
            sync: true,
            cgroup: 1,
            sector: 0,
            sectors: 8,
        };
        bfq.insert(r, 0);
        assert_eq!(bfq.asymmetric(Some(0)), asymmetric, "{pending_groups:?}");
    }
}

/// `bfq_choose_req()`: sync first; ahead of the head by distance, behind it at
/// `back_seek_penalty` times the distance within `back_seek_max`, beyond it last.
#[test]
fn the_next_request_is_chosen_with_the_back_seek_penalty() {
    let mut bfq = Bfq::new(Tunables::new(250), newest(), true);
    let rq = |sector, sync| {
        Some(Rq {
            queue: 0,
            sync,
            sector,
            sectors: 8,
            seq: 0,
        })
    };
    bfq.rqs = vec![
        rq(1_100, true),
        rq(960, true),
        rq(100_000, true),
        rq(1_010, false),
    ];
    // 100 ahead against 40 behind, ×2 = 80: behind wins
    assert_eq!(bfq.choose_req(Some(0), Some(1), 1_000), Some(1));
    // 40 behind (80) against 99,000 ahead
    assert_eq!(bfq.choose_req(Some(2), Some(1), 1_000), Some(1));
    // an async request loses to a sync one, however close
    assert_eq!(bfq.choose_req(Some(3), Some(0), 1_000), Some(0));
    // beyond back_seek_max (16 MiB = 32,768 sectors) behind: the one ahead
    assert_eq!(bfq.choose_req(Some(1), Some(2), 40_000), Some(2));
}

/// `bfq_ioprio_to_weight()`: levels 0..7 are weights 80..10.
#[test]
fn a_queue_weight_is_its_level() {
    assert_eq!(ioprio_to_weight(0), 80);
    assert_eq!(ioprio_to_weight(4), 40);
    assert_eq!(ioprio_to_weight(7), 10);
}

/// The weight sum and vtime advance: `vtime += (served << 22) / wsum` on each level.
#[test]
fn service_advances_each_level_by_its_weight_sum() {
    assert_eq!(wf2q::bfq_delta(8, 400), (8 << 22) / 400);
    assert!(wf2q::bfq_gt(5, 3) && !wf2q::bfq_gt(3, 3));
    assert!(wf2q::bfq_gt(1, u64::MAX), "wrap-safe");
}

/// `bfq_limit_depth()` on 16 scheduler tags, three groups at 100, 200 and 300 each
/// with a queue on its tree: the lightest one's share is round(16 · 100 / 600) = 3
/// tags. With 2 allocated its sync reads may have every tag; with 3 it is held to
/// one — of the whole map on 6.12.117, of each word (of 4 bits) on 6.1. Async writes
/// get 3/16 of the tags while a queue is weight-raised, as every new one is
/// (interactive): 3 of the map, or 1 bit of each word.
#[test]
fn a_group_past_its_weights_share_of_tags_gets_one() {
    for (version, held, async_raised) in [
        ("6.12.117", Shallow::Map(1), Shallow::Map(3)),
        ("6.1.192", Shallow::PerWord(1), Shallow::PerWord(1)),
    ] {
        let b = behaviour::behaviour_for(version, &[]).unwrap();
        let mut bfq = groups(b, 3);
        for (cg, w) in [(1, 100), (2, 200), (3, 300)] {
            bfq.set_cgroup_weight(cg, w);
        }
        let mut token = 0;
        for task in 0..3 {
            for _ in 0..2 {
                bfq.insert(read(task, token), 0);
                token += 1;
            }
        }
        assert_eq!(bfq.limit_depth(&read(0, 99), false, 16), None, "{version}");
        bfq.insert(read(0, token), 0);
        assert_eq!(
            bfq.limit_depth(&read(0, 99), false, 16),
            Some(held),
            "{version}"
        );
        // what bfq.csv shows of the group: the tags it holds, its queue raised
        let state = bfq.group_state(bfq.group_of[&1] as usize);
        assert_eq!((state.tags, state.raised), (3, 1), "{version}");
        // the heaviest group's share is 8: 2 allocated is well within it
        assert_eq!(bfq.limit_depth(&read(2, 99), false, 16), None, "{version}");
        let write = BfqRequest {
            sync: false,
            ..read(2, 99)
        };
        assert!(
            bfq.wr_busy_queues > 0,
            "new queues are raised as interactive"
        );
        assert_eq!(
            bfq.limit_depth(&write, true, 16),
            Some(async_raised),
            "{version}"
        );
    }
}

/// BFQ with `n` cgroups below the root (1..=n, weight 100).
fn groups(b: BfqBehaviour, n: u32) -> Bfq {
    let mut bfq = Bfq::new(Tunables::new(250), b, true);
    bfq.set_parents([None].into_iter().chain((0..n).map(|_| Some(0))).collect());
    bfq
}

/// A 4 KiB read of task `task`, which runs in cgroup `task + 1`.
fn read(task: u32, token: u32) -> BfqRequest {
    BfqRequest {
        token,
        task,
        task_ioprio: Ioprio::DEFAULT,
        sync: true,
        cgroup: task + 1,
        sector: u64::from(token) * 1024,
        sectors: 8,
    }
}

/// `bfq_check_waker()`: a queue whose task (nothing else of its allocated) reads
/// within 4 ms of another queue's completion, three times in a row, has that queue
/// as its waker, and is in its woken list; a queue of short think time is never
/// woken, and a completion 4 ms old does not count. Every new sync queue starts with
/// a short think time, the idle class's too (`bfq_init_bfqq()` asks the class before
/// it is applied).
#[test]
fn a_queue_read_three_times_after_anothers_completion_is_woken_by_it() {
    let mut bfq = groups(newest(), 3);
    let idle = BfqRequest {
        task_ioprio: Ioprio::new(IoprioClass::Idle, 7),
        ..read(2, 2)
    };
    for r in [read(0, 0), read(1, 1), idle] {
        bfq.insert(r, 0);
    }
    let (qa, qb, qi) = (bfq.sync_q[&0], bfq.sync_q[&1], bfq.sync_q[&2]);
    assert!(bfq.queues[qi as usize].has_short_ttime);
    let mut now: Ns = 10 * MS;
    let after_b = |bfq: &mut Bfq, now: Ns, gap: Ns| {
        bfq.last_completed_rq_bfqq = Some(qb);
        bfq.last_completion = now - gap;
        bfq.check_waker(qa, now);
    };
    // short think time: never
    after_b(&mut bfq, now, MS);
    assert_eq!(bfq.queues[qa as usize].tentative_waker, None);
    bfq.queues[qa as usize].has_short_ttime = false;
    for k in 0..3 {
        now += 10 * MS;
        after_b(&mut bfq, now, MS);
        let q = &bfq.queues[qa as usize];
        assert_eq!(q.waker.is_some(), k == 2, "detection {}", k + 1);
    }
    assert_eq!(bfq.queues[qa as usize].waker, Some(qb));
    assert_eq!(bfq.queues[qb as usize].woken, vec![qa]);
    // a completion 4 ms before: not a wake-up
    now += 10 * MS;
    after_b(&mut bfq, now, 4 * MS);
    assert_eq!(bfq.queues[qa as usize].tentative_waker, None);
}

/// `bfq_select_queue()` while the queue in service waits for its reads in flight:
/// its waker's queued read goes to the device at once — where, with no waker, its
/// inject limit (0: no sample yet) keeps every other queue out.
#[test]
fn the_waker_of_the_queue_in_service_is_dispatched_while_it_is_idled_for() {
    for waker in [false, true] {
        let mut bfq = groups(newest(), 2);
        bfq.insert(read(0, 0), 0);
        let qa = bfq.sync_q[&0];
        bfq.queues[qa as usize].has_short_ttime = false;
        assert_eq!(bfq.dispatch(0), Some(0), "a's read, a in service");
        bfq.insert(read(1, 1), 1_000);
        let qb = bfq.sync_q[&1];
        if waker {
            bfq.queues[qa as usize].waker = Some(qb);
            bfq.queues[qb as usize].woken.push(qa);
        }
        let got = bfq.dispatch(2_000);
        assert_eq!(bfq.in_service, Some(qa), "a still served (idled for)");
        assert_eq!(got, waker.then_some(1), "waker {waker}");
    }
}
