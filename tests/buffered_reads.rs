//! Buffered reads (issue 34): the page cache's hits and readahead.
//!
//! What the kernel does, and so the bands: a buffered read copies from the page cache
//! and the device sees only what was missing, in readahead's windows (`mm/readahead.c`).
//! fio opens its file with `POSIX_FADV_SEQUENTIAL` for a sequential job (twice the
//! device's `read_ahead_kb`: 64 pages on a 128 KiB queue) and `POSIX_FADV_RANDOM` for a
//! random one (the request as is). A second pass over a file that fits finds it cached;
//! a `memory.max` too small for it drops what the cgroup read first.
//!
//! `validate-buffered-read` beside Debian's kernels (two boots each, docs/validation.md
//! §43): the device's io.stat is the real one to the byte on the sequential readers,
//! the readers' medians agree, and on 6.1 so does their throughput; 6.12's readers
//! stall for milliseconds now and then (its means), which is not modelled.

use blkcg_sim::run::{VariantRun, run_variant};
use blkcg_sim::scenario::Scenario;

mod common;

const MIB: f64 = 1024.0 * 1024.0;

fn run(text: &str) -> VariantRun {
    let sc = Scenario::parse(text, "reads.toml").unwrap();
    run_variant(&sc, None, None, None, false).unwrap()
}

/// A scenario with one buffered reader in `a` (its fio options after `--name=r`).
fn reader(fio: &str, cgroup_keys: &str) -> String {
    format!(
        "name = \"reads\"\nseed = 1\n[device]\nmodel = \"nullb\"\ndev = \"252:0\"\n\
         [kernel]\nversion = \"6.12\"\nhz = 250\n[cgroup.a]\n{cgroup_keys}\
         fio = \"fio --name=r --ioengine=psync {fio}\"\n"
    )
}

/// fio's read MiB, the device's (io.stat), and the summary's page-cache line.
fn figures(r: &VariantRun) -> (f64, f64, String) {
    let fio = r.out.jobs[0].1.dd[0].io_bytes as f64 / MIB;
    let dev = r.out.cg_stat[1].rbytes as f64 / MIB;
    let summary = blkcg_sim::report::outputs::summary_text(r);
    (fio, dev, summary)
}

#[test]
fn a_second_pass_over_a_file_that_fits_reads_nothing_from_the_device() {
    // 8 MiB read over and over for 100 ms: only the first pass (and readahead's
    // last window past it) reaches the device
    let r = run(&reader(
        "--rw=read --bs=64k --size=8M --runtime=100ms --time_based",
        "",
    ));
    let (fio, dev, summary) = figures(&r);
    assert!(fio > 64.0, "fio read {fio:.1} MiB");
    assert!((8.0..=8.5).contains(&dev), "the device read {dev:.2} MiB");
    assert!(
        summary.contains("  a: read ") && summary.contains("MiB read in from the device"),
        "{summary}"
    );
}

#[test]
fn a_memory_max_too_small_for_the_file_drops_what_was_read_first() {
    // the same reader with 4 MiB of memory: each pass misses what the last one read
    let r = run(&reader(
        "--rw=read --bs=64k --size=8M --runtime=100ms --time_based",
        "\"memory.max\" = \"4M\"\n",
    ));
    let (fio, dev, _) = figures(&r);
    assert!(
        dev > 0.9 * fio,
        "fio read {fio:.1} MiB, the device only {dev:.1}"
    );
}

#[test]
fn readahead_windows_follow_the_fadvise_fio_gives() {
    // 4 KiB sequential reads of 16 MiB: windows of 64 pages after
    // POSIX_FADV_SEQUENTIAL (fadvise_hint=1, fio's default), of 32 without it; each
    // window a bio the queue's 127 KiB max_sectors_kb splits (a 64-page one in three)
    let rios = |hint: &str| {
        let r = run(&reader(&format!("--rw=read --bs=4k --size=16M {hint}"), ""));
        (r.out.cg_stat[1].rios, r.out.cg_stat[1].rbytes)
    };
    let (seq, seq_bytes) = rios("");
    let (normal, normal_bytes) = rios("--fadvise_hint=0");
    // the ramp-up's windows of 4, 8, 16 and 32 pages (the last split in two), then
    // 64-page windows in three bios each up to the file's end, and the one readahead
    // sends past it: 5 + 65 × 3 (validate-buffered-read's seq4k, 128 MiB: 5 + 513 × 3 =
    // 1544 bios on both sides)
    assert_eq!(seq, 5 + 65 * 3, "{seq} bios, {seq_bytes} bytes");
    assert!(
        normal > seq,
        "{normal} bios without the hint, {seq} with it"
    );
    assert!(seq_bytes >= 16 << 20 && normal_bytes >= 16 << 20);
    // POSIX_FADV_RANDOM: every random 4 KiB read is one 4 KiB bio
    let r = run(&reader(
        "--rw=randread --bs=4k --size=1G --io_size=4000k",
        "",
    ));
    assert_eq!(r.out.cg_stat[1].rios, 1000);
    assert_eq!(r.out.cg_stat[1].rbytes, 1000 * 4096);
}

#[test]
fn a_buffered_read_of_a_bad_block_fails_and_the_reads_around_it_do_not() {
    // sectors 1000..=1015 are 4 KiB blocks 125 and 126: the readahead window holding
    // them fails whole, its pages are read again one by one (filemap_read_folio()),
    // and only the two reads of the bad blocks fail, as with direct I/O
    let text = reader("--rw=read --bs=4k --size=1M --continue_on_error=read", "").replace(
        "dev = \"252:0\"\n",
        "dev = \"252:0\"\nbadblocks = [\"+1000-1015\"]\n",
    );
    let r = run(&text);
    let st = &r.out.jobs[0].1;
    assert_eq!((st.dd[0].issued(), st.dd[0].errors), (256, 2));
    assert_eq!(st.dd[0].io_bytes, 254 * 4096);
}

/// `mm.readahead`: the versions' rules differ only where a miss falls where the window
/// expected the next read (the unit tests of `writeback::readahead`); a fio stream
/// reads the same either way, as 6.1 and 6.12 did in `validate-buffered-read`. The
/// switch is a `[kernel]` key like the others, and a wrong one is refused.
#[test]
fn the_readahead_switch_is_a_kernel_key() {
    let with = |pin: &str| {
        let text = reader("--rw=read --bs=4k --size=1M", "")
            .replace("hz = 250\n", &format!("hz = 250\n{pin}"));
        Scenario::parse(&text, "reads.toml")
            .map_err(|e| e.to_string())
            .and_then(|sc| run_variant(&sc, None, None, None, false).map(|r| r.out.cg_stat[1].rios))
    };
    assert_eq!(
        with("\"mm.readahead\" = \"ondemand\"\n").unwrap(),
        with("").unwrap()
    );
    let err = with("\"mm.readahead\" = \"eager\"\n").unwrap_err();
    assert!(
        err.contains("mm.readahead") && err.contains("ondemand, split"),
        "{err}"
    );
}

/// `validate-buffered-read` as `validate` simulates it, beside two boots of each of
/// Debian's kernels (docs/validation.md §43).
#[test]
fn validate_buffered_read_stays_next_to_the_real_kernels() {
    // (release, variant, real io.stat rios and rbytes, real MiB/s, band on the
    // MiB/s ratio, real clat p50 µs)
    let cases = [
        (
            "6.1.192",
            "seq1m",
            6147,
            537_133_056,
            925.9,
            0.95..1.12,
            1073.0,
        ),
        (
            "6.12.117",
            "seq1m",
            6147,
            537_133_056,
            678.1,
            1.2..1.5,
            1090.0,
        ),
        (
            "6.1.192",
            "seq4k",
            1544,
            134_725_632,
            526.7,
            0.95..1.05,
            2.26,
        ),
        (
            "6.12.117",
            "seq4k",
            1544,
            134_725_632,
            310.7,
            1.5..1.8,
            2.29,
        ),
        (
            "6.1.192",
            "seq1m-iomax",
            1923,
            168_034_304,
            40.9,
            0.99..1.01,
            1073.0,
        ),
        (
            "6.12.117",
            "seq1m-iomax",
            1923,
            168_034_304,
            40.9,
            0.99..1.01,
            1106.0,
        ),
    ];
    for (release, v, rios, rbytes, real_bw, band, real_p50) in cases {
        let run = common::validate_run_next_to_real(
            "validate-buffered-read",
            v,
            release,
            (real_bw, band),
            (real_p50, 0.06),
        );
        // the device sees what the real one saw, but for the window readahead sends
        // past the end of a throttled reader's region after fio has ended
        let st = &run.out.cg_stat[1];
        let slack = if v == "seq1m-iomax" { 3 } else { 0 };
        assert!(
            st.rios + slack >= rios && st.rios <= rios,
            "{release} {v}: {} bios, real {rios}",
            st.rios
        );
        assert!(
            st.rbytes + slack * 87_382 >= rbytes && st.rbytes <= rbytes,
            "{release} {v}: {} bytes, real {rbytes}",
            st.rbytes
        );
    }
    // random 4 KiB reads: one 4 KiB bio each on both sides; the median miss agrees
    for (release, real_p50) in [("6.1.192", 8.64), ("6.12.117", 8.64)] {
        let run = common::as_validate_simulates_variant(
            "validate-buffered-read",
            Some("rand4k"),
            release,
        );
        let st = &run.out.cg_stat[1];
        assert_eq!(st.rbytes, st.rios * 4096);
        let p50 = run.summaries[0].pct(50.0).unwrap() * 1000.0;
        assert!(
            (p50 / real_p50 - 1.0).abs() < 0.03,
            "{release} rand4k: clat p50 {p50:.2} µs, real {real_p50}"
        );
    }
}
