//! The device presets against their sources (FEMU's NAND latencies, vendor datasheets),
//! the SSD write cliff, and the device columns of `iostat.csv`. Each figure is what a
//! fio job sees through the whole pipeline (host costs included: 2 us submit, 1.5 us
//! complete at 4 KiB).

use blkcg_sim::report::summary::JobSummary;
use blkcg_sim::run::{VariantRun, run_variant};
use blkcg_sim::scenario::Scenario;

fn run(text: &str, variant: Option<&str>) -> VariantRun {
    let sc = Scenario::parse(text, "devices.toml").unwrap();
    run_variant(&sc, variant, None, None, false).unwrap()
}

/// One fio job on `device` (a TOML inline table's body).
fn one_job(device: &str, fio: &str) -> JobSummary {
    let text = format!(
        "name = \"t\"\nseed = 1\n[device]\n{device}\n[cgroup.a]\nfio = \"fio --name=a \
         --ioengine=libaio --direct=1 --time_based {fio}\"\n"
    );
    run(&text, None).summaries.remove(0)
}

fn near(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got / want - 1.0).abs() <= tol,
        "{what}: {got:.1}, expected {want} within {:.0}%",
        tol * 100.0
    );
}

#[test]
fn femu_bb_latencies_are_femus_nand_latencies() {
    // FEMU bbssd ftl.h: read 40 us, program 200 us; no buffer, no controller latency
    let dev = "model = \"ssd\"\npreset = \"femu-bb\"";
    let r = one_job(dev, "--rw=randread --bs=4k --iodepth=1 --runtime=200ms");
    assert_eq!(r.clat_mean_ms, 0.0415); // 40 us + 1.5 us completion
    let w = one_job(dev, "--rw=randwrite --bs=4k --iodepth=1 --runtime=200ms");
    assert_eq!(w.clat_mean_ms, 0.2015);
    // 8 x 8 dies x 4 KiB / 200 us = 1.31 GB/s of sequential programs
    let s = one_job(dev, "--rw=write --bs=128k --iodepth=32 --runtime=1");
    near("femu-bb seq write MB/s", s.mib_s * 1.048576, 1310.0, 0.05);
}

#[test]
fn consumer_tlc_meets_its_datasheet() {
    // Samsung 970 EVO Plus 1 TB: 4K QD1 19k read / 60k write IOPS; 1,700 MB/s sequential
    // write after the SLC cache
    let dev = "model = \"ssd\"\npreset = \"consumer-tlc\"";
    let r = one_job(dev, "--rw=randread --bs=4k --iodepth=1 --runtime=200ms");
    near("consumer QD1 read IOPS", r.iops, 19_000.0, 0.05);
    let w = one_job(dev, "--rw=randwrite --bs=4k --iodepth=1 --runtime=200ms");
    near("consumer QD1 write IOPS", w.iops, 60_000.0, 0.05);
    let s = one_job(dev, "--rw=write --bs=1m --iodepth=32 --runtime=2");
    near("consumer seq write MB/s", s.mib_s * 1.048576, 1700.0, 0.1);
}

#[test]
fn dc_nvme_steady_state_random_write_meets_its_datasheet() {
    // Intel DC P4500 2 TB: 38,000 random 4K write IOPS in steady state (preconditioned),
    // 85 us random read latency
    let dev = "model = \"ssd\"\npreset = \"dc-nvme\"\nprecondition = \"random\"";
    let text = format!(
        "name = \"t\"\nseed = 1\n[device]\n{dev}\n[cgroup.a]\nfio = \"fio --name=a \
         --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=32 --runtime=6 \
         --time_based\"\n"
    );
    let rows = run(&text, None).record.iostat;
    // the last seconds: past what the idle drive had collected before t=0
    let iops = rows[3..6].iter().map(|r| r.w_ios as f64).sum::<f64>() / 3.0;
    near("dc steady random write IOPS", iops, 38_000.0, 0.15);
    let r = one_job(dev, "--rw=randread --bs=4k --iodepth=1 --runtime=100ms");
    near(
        "dc QD1 read latency us",
        (r.clat_mean_ms + 0.002) * 1000.0,
        85.0,
        0.05,
    );
}

#[test]
fn suspend_lets_reads_pass_programs() {
    // a reader beside a saturating writer on FEMU's drive: without program suspend the
    // reads queue behind the programs reserved on their die
    let text = |suspend: u32| {
        format!(
            "name = \"t\"\nseed = 1\n[device]\nmodel = \"ssd\"\npreset = \"femu-bb\"\n\
             suspend = {suspend}\n[cgroup.w]\nfio = \"fio --name=w --rw=randwrite --bs=4k \
             --ioengine=libaio --direct=1 --iodepth=64 --runtime=300ms --time_based\"\n\
             [cgroup.r]\nfio = \"fio --name=r --rw=randread --bs=4k --ioengine=libaio \
             --direct=1 --iodepth=1 --runtime=300ms --time_based\"\n"
        )
    };
    let reader = |r: VariantRun| r.summaries.into_iter().find(|s| s.job == "r").unwrap();
    let plain = reader(run(&text(0), None));
    let susp = reader(run(&text(1), None));
    assert!(
        plain.clat_mean_ms > 2.0 * susp.clat_mean_ms,
        "{} vs {}",
        plain.clat_mean_ms,
        susp.clat_mean_ms
    );
    // 40 us read + 20 us suspend + completion, behind at most other reads
    assert!(susp.clat_mean_ms < 0.1, "{}", susp.clat_mean_ms);
}

#[test]
fn the_write_cliff_shows_in_iostat() {
    let sc = Scenario::parse(
        include_str!("../scenarios/example-ssd-write-cliff.toml"),
        "example-ssd-write-cliff.toml",
    )
    .unwrap();
    let r = run_variant(&sc, Some("unbounded"), None, None, false).unwrap();
    let rows = &r.record.iostat;
    assert_eq!(rows[0].dev_cols, ["nand_w_mib_s", "wa", "free_blocks"]);
    assert!(rows.iter().all(|x| x.dev_vals.len() == 3));
    let mib = |i: usize| rows[i].w_bytes as f64 / 1048576.0;
    // line speed for the first second, then a fraction of it
    assert!(mib(0) > 4.0 * mib(3), "{} then {}", mib(0), mib(3));
    // the flash keeps programming near its rate: the host gets 1/WA of it
    let (nand, wa) = (rows[3].dev_vals[0], rows[3].dev_vals[1]);
    assert!(wa > 4.0, "wa {wa}");
    assert!(nand > 800.0, "nand {nand} MiB/s");
}

#[test]
fn an_oversized_flash_array_is_refused_with_its_cost() {
    let sc = Scenario::parse(
        "name = \"t\"\n[device]\nmodel = \"ssd\"\nmode = \"ftl\"\nblocks_per_plane = 100000\n\
         [cgroup.a]\nfio = \"fio --name=a --rw=read --size=1m\"\n",
        "big.toml",
    );
    let e = match sc {
        Err(e) => e.to_string(),
        Ok(sc) => run_variant(&sc, None, None, None, false).err().unwrap(),
    };
    assert!(
        e.contains("device.blocks_per_plane") && e.contains("64 GiB"),
        "{e}"
    );
}

#[test]
fn dispatch_ns_delays_the_next_request_on_a_one_tag_queue() {
    // null_blk, one tag, 10 us completions. The submitter sleeps for the tag; the
    // completion wakes it and it asks again `[host] tag_wakeup_ns` (1.5 us) later, so
    // the device idles that long: 1e9 / (10 + 1.5) us IOPS. With dispatch_ns the waiting
    // request reaches the device dispatch_ns after the previous completion, which
    // covers the wake-up: 1e9 / (10 + 5) us
    let dev = |extra: &str| {
        format!(
            "model = \"nullb\"\nirqmode = 2\ncompletion_nsec = 10000\nhw_queue_depth = 1\n{extra}"
        )
    };
    let fio = "--rw=randread --bs=4k --iodepth=4 --runtime=100ms";
    let plain = one_job(&dev(""), fio);
    let slowed = one_job(&dev("dispatch_ns = 5000"), fio);
    near("one-tag IOPS", plain.iops, 1e9 / 11_500.0, 0.01);
    near(
        "one-tag IOPS with dispatch_ns",
        slowed.iops,
        1e9 / 15_000.0,
        0.01,
    );
}

#[test]
fn dispatch_ns_leaves_a_completion_inside_the_submit_call_alone() {
    // softirq null_blk: the submitter ran the completion path itself and dispatches
    // next, so the gap does not apply: a QD1 libaio job cycles at submit + inline
    // completion + reap (2 + 0.4 + 0.4 us by default), with dispatch_ns or without
    let dev = |extra: &str| format!("model = \"nullb\"\nirqmode = 1\n{extra}");
    let fio = "--rw=randread --bs=4k --iodepth=1 --runtime=100ms";
    for extra in ["", "dispatch_ns = 5000"] {
        let r = one_job(&dev(extra), fio);
        near("softirq QD1 IOPS", r.iops, 1e9 / 2_800.0, 0.01);
    }
}

#[test]
fn tag_wakeup_ns_is_the_woken_sleepers_delay_not_the_reapers() {
    // the same one-tag queue: the device idles tag_wakeup_ns after each completion,
    // whatever fio's reaping costs (complete_ns lands in clat only); a slip on every
    // wake-up, uniform up to 2 us, adds 1 us on average; and with one CPU (a single
    // job, nothing else woken to reap) nothing changes
    let dev = |host: &str| {
        format!(
            "model = \"nullb\"\nirqmode = 2\ncompletion_nsec = 10000\nhw_queue_depth = 1\n\
             [host]\ncomplete_ns = 8000\n{host}"
        )
    };
    let fio = "--rw=randread --bs=4k --iodepth=4 --runtime=100ms";
    near("default", one_job(&dev(""), fio).iops, 1e9 / 11_500.0, 0.01);
    let r = one_job(&dev("tag_wakeup_ns = 4000"), fio);
    near("tag_wakeup_ns = 4000", r.iops, 1e9 / 14_000.0, 0.01);
    let slip = "tag_wakeup_ns = 4000\ntag_wakeup_slip_ppm = 1000000\ntag_wakeup_slip_ns = 2000";
    near(
        "with slips",
        one_job(&dev(slip), fio).iops,
        1e9 / 15_000.0,
        0.02,
    );
    let one = one_job(&dev("tag_wakeup_ns = 4000\ncpus = 1"), fio);
    assert_eq!(one.iops, r.iops);
}

#[test]
fn cloud_lognormal_tail_matches_the_seed_p20() {
    // the iocost seed's v3 table, cgB at 4k and iodepth 1: clat mean 1.95 ms, p99 7.5 ms
    let dev = "model = \"cloud\"\npreset = \"azure-p20\"\nlatency_dist = \"lognormal\"";
    let r = one_job(dev, "--rw=randread --bs=4k --iodepth=1 --runtime=20");
    // + 4 KiB at the volume's rate (24 us) and the completion (1.5 us)
    near("p20 clat mean ms", r.clat_mean_ms, 1.975, 0.03);
    near("p20 clat p99 ms", r.pct(99.0).unwrap(), 7.5, 0.1);
    // the default stays flat
    let flat = one_job(
        "model = \"cloud\"\npreset = \"azure-p20\"",
        "--rw=randread --bs=4k --iodepth=1 --runtime=1",
    );
    assert_eq!(
        flat.clat_max_ms,
        flat.pct(1.0).unwrap().max(flat.clat_max_ms)
    );
    assert!(flat.pct(99.0).unwrap() < 2.0);
}

#[test]
fn cloud_throttling_is_counted_in_iostat() {
    let text = |rate: &str| {
        format!(
            "name = \"t\"\nseed = 1\n[device]\nmodel = \"cloud\"\npreset = \"azure-p20\"\n\
             [cgroup.a]\nfio = \"fio --name=a --rw=randread --bs=4k --ioengine=libaio \
             --direct=1 --iodepth=32 --runtime=3 --time_based {rate}\"\n"
        )
    };
    let busy = run(&text(""), None).record.iostat;
    assert_eq!(busy[1].dev_cols, ["throttled", "backlog"]);
    // at the 3566 IOPS cap most IOs wait for a refill
    assert!(busy[1].dev_vals[0] > 1000.0, "{:?}", busy[1].dev_vals);
    let calm = run(&text("--rate_iops=500"), None).record.iostat;
    assert!(calm.iter().all(|r| r.dev_vals[0] == 0.0), "{calm:?}");
}
