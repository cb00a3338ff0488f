//! No input makes a parser panic: random bytes and near-miss strings go through the
//! scenario loader, the kernel interface-file writers (io.max, io.cost.qos,
//! io.cost.model, io.weight), the device-spec parser and the trace readers (fio's
//! iologs, blktrace binaries, blkparse text). (The fio parsers have their own
//! property tests in fio_parse.rs.)

use blkcg_sim::blkcg::{CgroupTree, DeviceTable};
use blkcg_sim::device::QueueLimits;
use blkcg_sim::iocost::{self, Iocost, IocostConfig, TimerMode};
use blkcg_sim::scenario::Scenario;
use blkcg_sim::scenario::spec::parse_device_spec;
use blkcg_sim::sim::EventQueue;
use blkcg_sim::throttle::{Throttle, ThrottleConfig, behaviour_for};
use proptest::prelude::*;

fn limits() -> QueueLimits {
    QueueLimits {
        major: 8,
        minor: 0,
        name: "sda".into(),
        rotational: false,
        hw_queue_depth: 64,
        nr_requests: 64,
        max_sectors_kb: 512,
        logical_block_size: 512,
        capacity: 1 << 30,
        write_cache: false,
        queue_depth: None,
    }
}

fn interface_line() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9: ]{0,6}(rbps|wbps|riops|wiops|enable|ctrl|rpct|rlat|min|max|model|default|x)=[0-9a-z.\\-]{0,12}( [a-z]{1,6}=[0-9.]{0,8}){0,4}",
        "8:0 [ -~]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn scenario_loader_never_panics(text in any::<String>()) {
        if let Ok(sc) = Scenario::parse(&text, "p.toml") {
            let _ = sc.resolve(None);
        }
    }

    #[test]
    fn scenario_loader_never_panics_on_near_misses(
        key in "(model|dev|seed|hz|version|io\\.max|fio|at|cgroup|submit_ns)",
        val in "(\"[ -~]{0,20}\"|-?[0-9]{1,20}|true|\\[\\]|\\{\\})",
    ) {
        for t in [
            format!("{key} = {val}\n"),
            format!("[device]\nmodel = \"nullb\"\n{key} = {val}\n[cgroup.a]\nfio = \"fio --name=a\"\n"),
            format!("[device]\nmodel = \"nullb\"\n[kernel]\n{key} = {val}\n"),
            format!("[device]\nmodel = \"nullb\"\n[cgroup.a]\n\"{key}\" = {val}\n"),
        ] {
            if let Ok(sc) = Scenario::parse(&t, "p.toml") {
                let _ = sc.resolve(None);
            }
        }
    }

    #[test]
    fn interface_writers_never_panic(line in interface_line()) {
        let mut tree = CgroupTree::default();
        let cg = tree.ensure("a");
        let devs = DeviceTable { disks: vec![(8, 0)] };
        let mut q = EventQueue::new();
        let b = behaviour_for("6.16", false, &[]).unwrap();
        let mut t = Throttle::new(ThrottleConfig::new(250, b), &tree, &limits());
        let _ = t.write_io_max(0, cg, &line, &devs, &mut q);
        let cfg = IocostConfig {
            timer: TimerMode::Exact,
            behaviour: iocost::behaviour_for("newest", &[]).unwrap(),
            debug_stats: false,
        };
        let mut ioc = Iocost::new(cfg, &tree, &limits());
        let _ = ioc.write_qos(0, &line, &devs);
        let _ = ioc.write_model(0, &line, &devs);
        let _ = ioc.write_weight(0, cg, &line, &devs);
        let _ = parse_device_spec(&line);
    }

    #[test]
    fn trace_readers_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        head in prop_oneof![
            Just(&b"fio version 2 iolog\n"[..]),
            Just(&b"fio version 3 iolog\n"[..]),
            Just(&b"\x07\x74\x61\x65"[..]),
            Just(&b"\x65\x61\x74\x07"[..]),
            Just(&b"  8,0 "[..]),
        ],
    ) {
        use blkcg_sim::workload::iolog::{self, ReplayOpts, split};
        let input: Vec<u8> = head.iter().chain(&bytes).copied().collect();
        let o = ReplayOpts { time_scale: 7, align: 4096, scale: 3, ..ReplayOpts::default() };
        let _ = iolog::read("p.log", &input[..], &o);
        if let Ok(ev) = split::read_events("p.trace", &input[..]) {
            let _ = split::split("p.trace", &ev, split::GroupBy::Auto, &[], toml::Table::new(), 8);
        }
    }
}
