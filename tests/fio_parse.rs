//! fio job file / command line parser: units, per-direction lists, bssplit, numjobs
//! and group ids, include and `${VAR}`, errors with lines, warnings. Expected values
//! are fio's (checked with fio 3.33 where noted).

use blkcg_sim::workload::fio::units::{self, SizeOrPct};
use blkcg_sim::workload::fio::{
    BsSplit, Env, FioJobs, IoEngine, JobSpec, NsRange, Origin, RandomDist, Reader, RwMode,
    RwSuffix, UnifiedRw, parse_cmdline, parse_cmdline_with, parse_jobfile, program_option,
};
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

fn no_env(_: &str) -> Option<String> {
    None
}

fn no_files(p: &str) -> Result<String, String> {
    Err(format!("no such file {p}"))
}

/// Reads as fio does: `env` for `${VAR}`, `files` for includes and job files.
fn rd<'a>(
    env: &'a dyn Fn(&str) -> Option<String>,
    files: &'a dyn Fn(&str) -> Result<String, String>,
) -> Reader<'a> {
    Reader {
        env: Env::Vars(env),
        read_file: files,
        quote_job_files: true,
        honours_program_options: true,
    }
}

/// Text that is the whole of `file`.
fn at(file: &str) -> Origin<'_> {
    Origin { file, lines: &[] }
}

fn parse(text: &str) -> FioJobs {
    parse_jobfile(text, &at("t.fio"), &rd(&no_env, &no_files)).unwrap_or_else(|e| panic!("{e}"))
}

fn job(text: &str) -> JobSpec {
    let mut j = parse(text).jobs;
    assert_eq!(j.len(), 1);
    j.remove(0)
}

fn parse_err(text: &str) -> String {
    match parse_jobfile(text, &at("t.fio"), &rd(&no_env, &no_files)) {
        Ok(j) => panic!("expected an error, got {j:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn size_units_default_kb_base() {
    // [run here] fio 3.33: 1m = 1mi = 1MB = 1,048,576; 1MiB = 1,000,000.
    let table: &[(&str, u64)] = &[
        ("1", 1),
        ("1b", 1),
        ("4k", 4096),
        ("4K", 4096),
        ("4kb", 4096),
        ("4KB", 4096),
        ("4ki", 4096),
        ("1kib", 1000),
        ("1KiB", 1000),
        ("1m", 1_048_576),
        ("1mi", 1_048_576),
        ("1MB", 1_048_576),
        ("1MiB", 1_000_000),
        ("1000ki", 1_024_000),
        ("1g", 1 << 30),
        ("1GiB", 1_000_000_000),
        ("2t", 2 << 40),
        ("1p", 1 << 50),
        ("1pib", 1_000_000_000_000_000),
        ("0x10", 16),
        ("0x10k", 16 * 1024),
        ("(2*4)k", 8192),
        ("(1+1)", 2),
    ];
    let mut notes = Vec::new();
    for &(s, want) in table {
        assert_eq!(units::bytes(s, 1024, &mut notes), Ok(want), "{s}");
    }
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn size_units_kb_base_1000_swap() {
    let table: &[(&str, u64)] = &[
        ("1k", 1000),
        ("1m", 1_000_000),
        ("1mi", 1_000_000),
        ("1MiB", 1_048_576),
        ("1kib", 1024),
        ("1g", 1_000_000_000),
    ];
    for &(s, want) in table {
        assert_eq!(units::bytes(s, 1000, &mut Vec::new()), Ok(want), "{s}");
    }
}

#[test]
fn size_percent_zones_and_errors() {
    let mut n = Vec::new();
    assert_eq!(
        units::size_or_pct("20%", 1024, &mut n),
        Ok(SizeOrPct::Percent(20))
    );
    assert_eq!(
        units::size_or_pct("8z", 1024, &mut n),
        Ok(SizeOrPct::Zones(8))
    );
    for bad in ["4q", "abc", "-1k", "", "101%", "k"] {
        let e = units::size_or_pct(bad, 1024, &mut n).unwrap_err();
        assert!(e.contains('`'), "{bad}: {e}");
    }
    assert!(units::bytes("20%", 1024, &mut n).is_err());
    // fio's strtoll stops at `*`: 5 bytes, with a warning.
    assert_eq!(units::bytes("5*1024", 1024, &mut n), Ok(5));
    assert_eq!(n.len(), 1);
}

#[test]
fn time_units() {
    let t = |s: &str, secs: bool| units::time_us(s, secs).map(|t| t.us);
    assert_eq!(t("10", true), Ok(10_000_000));
    assert_eq!(t("10", false), Ok(10));
    assert_eq!(t("2m", true), Ok(120_000_000));
    assert_eq!(t("1h", false), Ok(3_600_000_000));
    assert_eq!(t("1d", true), Ok(86_400_000_000));
    assert_eq!(t("5s", false), Ok(5_000_000));
    assert_eq!(t("500ms", true), Ok(500_000));
    assert_eq!(t("500msec", true), Ok(500_000));
    assert_eq!(t("7us", true), Ok(7));
    assert_eq!(t("7usec", true), Ok(7));
    assert_eq!(
        t("(5/2)", true),
        Ok(2_000_000),
        "fio truncates to whole seconds"
    );
    // [run here] fio 3.33: runtime=2sec → job_runtime 0 ms (read as 2 µs).
    let q = units::time_us("2sec", true).unwrap();
    assert_eq!(q.us, 2);
    assert!(q.quirk.is_some());
    assert!(units::time_us("x", true).is_err());
    assert!(units::time_us("5 %", true).is_err());
}

#[test]
fn option_times_in_ns() {
    let j = job(
        "[a]\nruntime=30\nramp_time=2s\nthinktime=250\nthinktime_spin=1ms\n\
                 startdelay=1-3\nthinktime_iotime=1\nrate_cycle=250\nbwavgtime=100\n",
    );
    assert_eq!(j.runtime, 30 * S);
    assert_eq!(j.ramp_time, 2 * S);
    assert_eq!(j.thinktime, 250_000);
    // thinktime_spin capped at thinktime (init.c fixup_options)
    assert_eq!(j.thinktime_spin, 250_000);
    assert_eq!(j.startdelay, NsRange { lo: S, hi: 3 * S });
    let k = job("[a]\nstartdelay=5:2\n");
    assert_eq!(
        k.startdelay,
        NsRange {
            lo: 2 * S,
            hi: 5 * S
        }
    );
    assert_eq!(j.thinktime_iotime, S);
    assert_eq!(j.rate_cycle, 250_000_000);
    assert_eq!(j.bwavgtime, 100_000_000);
    assert_eq!(j.iopsavgtime, 500_000_000);
}

#[test]
fn per_direction_lists() {
    // [run here] fio 3.33, rw=rw bs=8k,32k: reads 8 KiB, writes 32 KiB.
    let table: &[(&str, [u64; 3])] = &[
        ("bs=4k", [4096; 3]),
        ("bs=8k,32k", [8192, 32768, 32768]),
        ("bs=8k,32k,", [8192, 32768, 4096]),
        ("bs=,16k", [4096, 16384, 16384]),
        ("bs=1k,2k,3k", [1024, 2048, 3072]),
        ("blocksize=2k", [2048; 3]),
    ];
    for (opt, want) in table {
        let j = job(&format!("[a]\n{opt}\n"));
        assert_eq!(j.bs_min, *want, "{opt}");
        assert_eq!(j.bs_max, *want, "{opt}");
    }
    let j = job("[a]\nbsrange=1k-4k,8k:16k\nrate=1m,2m\nrate_iops=100,,\nrate_iops_min=5\n");
    assert_eq!(j.bs_min, [1024, 8192, 8192]);
    assert_eq!(j.bs_max, [4096, 16384, 16384]);
    assert_eq!(j.rate, [1 << 20, 2 << 20, 2 << 20]);
    assert_eq!(j.rate_iops, [100, 0, 0]);
    assert_eq!(j.rate_iops_min, [5, 5, 5]);
    let e = parse_err("[a]\nbs=4k,8k,16k,32k\n");
    assert!(e.starts_with("t.fio:2: bs:"), "{e}");
}

#[test]
fn bssplit_rules() {
    let j = job("[a]\nbssplit=4k/10:64k/50:32k/40\n");
    let want = vec![
        BsSplit {
            size: 4096,
            pct: 10,
        },
        BsSplit {
            size: 32768,
            pct: 40,
        },
        BsSplit {
            size: 65536,
            pct: 50,
        },
    ];
    for d in 0..3 {
        assert_eq!(j.bssplit[d], want, "sorted by percentage as fio's bs_cmp");
        assert_eq!((j.bs_min[d], j.bs_max[d]), (4096, 65536));
    }
    // blanks share the rest evenly
    let j = job("[a]\nbssplit=4k:8k/50:16k\n");
    let pcts: Vec<(u64, u32)> = j.bssplit[0].iter().map(|b| (b.size, b.pct)).collect();
    assert_eq!(pcts, vec![(4096, 25), (16384, 25), (8192, 50)]);
    // fio's t/jobs/t0023.fio writes blanks as `1k/`
    let j = job("[a]\nbssplit=512/25:1k/:2k/:4k/\n");
    assert!(j.bssplit[0].iter().all(|b| b.pct == 25));
    // per direction
    let j = job("[a]\nbssplit=4k/100,8k/50:16k/50\n");
    assert_eq!(
        j.bssplit[0],
        vec![BsSplit {
            size: 4096,
            pct: 100
        }]
    );
    assert_eq!(j.bssplit[2].len(), 2);
    assert_eq!(j.bs_max[1], 16384);
    for bad in ["4k/60:8k/60:16k:32k", "4k/10:8x/20"] {
        let e = parse_err(&format!("[a]\nbssplit={bad}\n"));
        assert!(e.starts_with("t.fio:2: bssplit:"), "{bad}: {e}");
    }
}

/// Issue 32 item 15: bssplit as fio 3.33's options.c `bssplit_ddir()` reads it and
/// io_u.c `get_next_buflen()` draws from it: each entry's share of the I/Os.
/// [run here] fio 3.33, ioengine=null, 10,000 randread I/Os, sizes from write_iolog:
/// `4k/50:8k/60` 5026/4974; `4k/10:8k/20` 1021/8979; `4k/60:8k/60:16k` 16k 9999 (one
/// 4k where 16k did not fit before the end); `4k/-5:8k` 4k 10000; `4k/x:8k`
/// 5026/4974; `4k/30:8k/30:16k/` 3037/3041/3922; `4k/60:8k/60:16k:32k` "bssplit
/// percentages add to more than 100%"; 65 blank entries 4k..260k: none larger than
/// 256k ("hit max of 64 split entries").
#[test]
fn bssplit_shares_follow_fio() {
    let shares = |v: &str| -> (Vec<(u64, u32)>, Vec<String>) {
        let f = parse(&format!("[a]\nbssplit={v}\n"));
        let s = f.jobs[0].bssplit[0]
            .iter()
            .map(|b| (b.size, b.pct))
            .collect();
        (s, f.warnings)
    };
    let k = |n: u64| n * 1024;
    // over 100 with no blank: the largest entries get what is left of 100
    let (s, w) = shares("4k/50:8k/60");
    assert_eq!(s, [(k(4), 50), (k(8), 50)]);
    assert_eq!(w.len(), 1, "one note for the three directions: {w:?}");
    assert!(
        w[0].contains("add to 110, not 100") && w[0].ends_with("4k 50%, 8k 50%"),
        "{w:?}"
    );
    // under 100: the last entry drawn (the largest percentage) gets the rest
    assert_eq!(shares("4k/10:8k/20").0, [(k(4), 10), (k(8), 90)]);
    // over 100 with one blank: its 100 - 120 wraps around, sorts first as an int and
    // takes every I/O
    let (s, w) = shares("4k/60:8k/60:16k");
    assert_eq!(s, [(k(16), 100), (k(4), 0), (k(8), 0)]);
    assert!(w[0].contains("wraps around"), "{w:?}");
    // atoi(): a negative is over 100 once unsigned; text after the digits is ignored
    let (s, w) = shares("4k/-5:8k");
    assert_eq!(s, [(k(8), 0), (k(4), 100)]);
    assert!(w[0].contains("`-5`"), "{w:?}");
    let (s, w) = shares("4k/x:8k/50%");
    assert_eq!(s, [(k(4), 50), (k(8), 50)]);
    assert!(
        w[0].contains("atoi() stops at `x`, so it is 0: blank"),
        "{w:?}"
    );
    assert!(w[1].contains("atoi() stops at `%`, so it is 50"), "{w:?}");
    // over 100 is 100, 0 is blank: a lone entry is every I/O either way
    assert_eq!(shares("4k/200").0, [(k(4), 100)]);
    assert_eq!(shares("4k/0").0, [(k(4), 100)]);
    // blanks share the rest evenly; what integer division leaves goes to the last
    assert_eq!(
        shares("4k/30:8k/30:16k/").0,
        [(k(4), 30), (k(8), 30), (k(16), 40)]
    );
    let (s, w) = shares("4k:8k:16k");
    assert_eq!(s, [(k(4), 33), (k(8), 33), (k(16), 34)]);
    assert!(w.is_empty(), "{w:?}");
    // BSSPLIT_MAX: the first 64 entries, the rest ignored with a note
    let many: Vec<String> = (1..=65).map(|i| format!("{}k", 4 * i)).collect();
    let f = parse(&format!("[a]\nbssplit={}\n", many.join(":")));
    let j = &f.jobs[0];
    assert_eq!((j.bssplit[0].len(), j.bs_max[0]), (64, k(256)));
    assert_eq!(
        j.bssplit[0].last(),
        Some(&BsSplit {
            size: k(256),
            pct: 37
        })
    );
    assert!(
        f.warnings[0].contains("has 65 entries; fio keeps the first 64"),
        "{:?}",
        f.warnings
    );
    // given percentages over 100 leave nothing for two blanks: fio refuses it
    let e = parse_err("[a]\nbssplit=4k/60:8k/60:16k:32k\n");
    assert!(
        e.starts_with("t.fio:2: bssplit: `4k/60:8k/60:16k:32k`: the percentages given add to 120"),
        "{e}"
    );
}

#[test]
fn kb_base_ordering_like_fio() {
    // [run here] fio 3.33: kb_base sorts first within a section, so bs=1m after
    // it in the same section is 1,000,000 (10 MB in 10 I/Os)...
    assert_eq!(job("[a]\nbs=1m\nkb_base=1000\n").bs_min, [1_000_000; 3]);
    // ...but a size from [global] was already parsed (9 I/Os of 1 MiB).
    let j = job("[global]\nbs=1m\n[a]\nkb_base=1000\nsize=1m\n");
    assert_eq!(j.bs_min, [1_048_576; 3]);
    assert_eq!(j.size, Some(SizeOrPct::Bytes(1_000_000)));
    let e = parse_err("[a]\nkb_base=1001\n");
    assert!(e.contains("1024, 1000"), "{e}");
}

#[test]
fn numjobs_groupid_stonewall() {
    // [run here] fio 3.33 printed groupids 0,0,1,1,2,2 for this file.
    let f = parse(
        "[global]\nioengine=null\nsize=1m\n[a]\nnumjobs=2\n[b]\nstonewall\nnumjobs=2\n\
         [c]\nnew_group\n[d]\n",
    );
    let got: Vec<(&str, u32, u32)> = f
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.groupid, j.clone_index))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a", 0, 0),
            ("a", 0, 1),
            ("b", 1, 0),
            ("b", 1, 1),
            ("c", 2, 0),
            ("d", 2, 0)
        ]
    );
    assert!(f.jobs[2].stonewall && !f.jobs[3].stonewall);
    assert_eq!(
        f.global_options,
        vec![
            ("ioengine".into(), "null".into()),
            ("size".into(), "1m".into())
        ]
    );
    assert_eq!(f.jobs[0].options, vec![("numjobs".into(), "2".into())]);
    // a stonewall on the very first job does not open a new group
    let f = parse("[a]\nwait_for_previous\n[b]\nstonewall\n");
    assert_eq!(f.jobs[0].groupid, 0);
    assert_eq!(f.jobs[1].groupid, 1);
    // several [global] sections: each applies to the jobs below it
    let f = parse("[global]\nbs=8k\n[a]\n[global]\niodepth=4\nioengine=libaio\n[b]\n");
    assert_eq!((f.jobs[0].bs_min[0], f.jobs[0].iodepth), (8192, 1));
    assert_eq!((f.jobs[1].bs_min[0], f.jobs[1].iodepth), (8192, 4));
}

#[test]
fn include_env_and_reserved() {
    let env = |v: &str| (v == "BS").then(|| "16k".to_string());
    let read = |p: &str| match p {
        "dir/common.fio" => Ok("; shared\nioengine=libaio\niodepth=${DEPTH}8\n".to_string()),
        "dir/sect.fio" => Ok("[x]\n".to_string()),
        _ => Err("not found".to_string()),
    };
    let f = parse_jobfile(
        "[a]\ninclude common.fio\nbs=${BS}\nnumjobs=$ncpus\nsize=$mb_memory\nba=$pagesize\n",
        &at("dir/job.fio"),
        &rd(&env, &read),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let j = &f.jobs[0];
    assert_eq!(j.ioengine, IoEngine::Libaio);
    assert_eq!(j.iodepth, 8, "unset ${{DEPTH}} expands to nothing");
    assert_eq!(j.bs_min, [16384; 3]);
    assert_eq!(f.jobs.len(), 2, "$ncpus = 2");
    assert_eq!(j.size, Some(SizeOrPct::Bytes(8192)));
    assert_eq!(j.blockalign, [4096; 3]);
    let e = parse_jobfile(
        "[a]\ninclude sect.fio\n",
        &at("dir/job.fio"),
        &rd(&env, &read),
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("dir/sect.fio", 1));
    let e = parse_jobfile(
        "[a]\n\ninclude nope.fio\n",
        &at("dir/job.fio"),
        &rd(&env, &read),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "dir/job.fio:3: cannot include `dir/nope.fio`: not found"
    );
    // include loop is an error, not a stack overflow
    let looping = |_: &str| Ok("include self.fio\n".to_string());
    assert!(
        parse_jobfile(
            "[a]\ninclude self.fio\n",
            &at("self.fio"),
            &rd(&env, &looping)
        )
        .is_err()
    );
}

#[test]
fn errors_name_file_and_line() {
    let cases: &[(&str, &str)] = &[
        ("[a]\nrw=read\nfoo=1\n", "t.fio:3: Bad option <foo=1>"),
        ("[a]\n\nbs=4q\n", "t.fio:3: bs: `4q`: unknown size suffix"),
        (
            "rw=read\n",
            "t.fio:1: option `rw=read` outside of a [] job section",
        ),
        (
            "[a]\ndirect\n",
            "t.fio:2: direct: Option direct requires an argument",
        ),
        (
            "[a]\ndirect=2\n",
            "t.fio:2: direct: max value out of range: 2 (1 max)",
        ),
        (
            "[a]\nrw=bogus\n",
            "t.fio:2: rw: `bogus` is not valid; accepted: read, write",
        ),
        (
            "[a]\nrandom_distribution=zipf:1\n",
            "t.fio:2: random_distribution: zipf theta",
        ),
        ("[a\n", "t.fio:1: bad section header"),
        (
            "[a]\ncgroup_weight=100\n",
            "t.fio:2: cgroup_weight: cgroup weit doesn't work",
        ),
        (
            "[a]\npercentile_list=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21\n",
            "t.fio:2: percentile_list: percentile_list has 21 entries; at most 20",
        ),
        (
            "[a]\niodepth=0\n",
            "t.fio:2: iodepth: `0` out of range; accepted: 1..=65535",
        ),
    ];
    for (text, want) in cases {
        let e = parse_err(text);
        assert!(e.starts_with(want), "{text:?}: got {e}");
    }
}

#[test]
fn unmodelled_options_warn() {
    let f = parse("[global]\nthread\nverify=md5\n[a]\nzonemode=zbd\nrw=read\n");
    assert_eq!(f.warnings.len(), 3, "{:?}", f.warnings);
    assert!(f.warnings[0].starts_with("t.fio:2: option `thread`"));
    assert!(f.warnings[1].contains("`verify`"));
    assert!(f.warnings[2].starts_with("t.fio:5:"));
    let f = parse("[a]\nbs = 1MiB\n");
    assert_eq!(f.jobs[0].bs_min[0], 1_000_000);
    assert!(f.warnings[0].contains("blank after `=`"));
}

#[test]
fn rw_modes_mix_and_suffix() {
    let j = job("[a]\nreadwrite=randrw:8\nrwmixread=70\nrwmixwrite=40\n");
    assert_eq!(j.rw, RwMode::RandRw);
    assert_eq!(j.rw_suffix, RwSuffix::Every(8));
    assert_eq!(j.rwmixread, 60, "later rwmixwrite wins");
    assert!(j.rw.reads() && j.rw.writes() && !j.rw.trims() && j.rw.is_random());
    assert_eq!(job("[a]\nrw=write:4k\n").rw_suffix, RwSuffix::Hole(4096));
    assert_eq!(job("[a]\nrw=read:-8k\n").rw_suffix, RwSuffix::Hole(-8192));
    assert_eq!(job("[a]\nrw=trimwrite\n").rw, RwMode::TrimWrite);
    assert_eq!(job("[a]\n").rw, RwMode::Read);
}

#[test]
fn engine_depth_fixups() {
    let j = job("[a]\nioengine=psync\niodepth=16\n");
    assert!(j.ioengine.is_sync());
    assert_eq!(
        (j.iodepth, j.iodepth_low, j.iodepth_batch_submit),
        (1, 1, 1)
    );
    let j = job("[a]\nioengine=libaio\niodepth=16\niodepth_batch=0\niodepth_batch_complete=4\n");
    assert!(!j.ioengine.is_sync());
    assert_eq!(j.iodepth, 16);
    assert_eq!(j.iodepth_low, 16);
    assert_eq!(j.iodepth_batch_submit, 16);
    assert_eq!(j.iodepth_batch_complete_min, 4);
    assert_eq!(j.iodepth_batch_complete_max, 4);
    // integer options take size suffixes (parse.c check_str_bytes)
    let j = job("[a]\nioengine=libaio\niodepth=1k\nrate_iops=2k,1k\n");
    assert_eq!((j.iodepth, j.rate_iops), (1024, [2048, 1024, 1024]));
    assert_eq!(
        job("[a]\nioengine=spdk\n").ioengine,
        IoEngine::Other("spdk".into())
    );
    let d = job("[a]\n");
    assert_eq!(
        (d.ioengine.clone(), d.iodepth, d.direct),
        (IoEngine::Psync, 1, false)
    );
}

#[test]
fn reporting_random_and_misc() {
    let j = job(
        "[a]\nunified_rw_reporting=1\npercentile_list=50:99.9\nlat_percentiles=1\n\
         random_distribution=pareto:0.5:0.3\nrandrepeat=0\nrandseed=42\nnorandommap\n\
         group_reporting\ncgroup=lo/a\nblkcg_meta=1\nio_submit_mode=offload\nprio=4\n\
         prioclass=2\nio_limit=10%\noffset=4k\nnumber_ios=100\nloops=3\ndescription=x y\n\
         wait_for=b\nfilename=/dev/sdb\nbuffered=0\n",
    );
    assert_eq!(j.unified_rw_reporting, UnifiedRw::Mixed);
    assert_eq!(j.percentile_list, vec![50.0, 99.9]);
    assert!(j.lat_percentiles && j.clat_percentiles && !j.slat_percentiles);
    assert_eq!(
        j.random_distribution,
        RandomDist::Pareto {
            h: 0.5,
            center: Some(0.3)
        }
    );
    assert!(!j.randrepeat && j.norandommap && j.group_reporting && j.blkcg_meta && j.direct);
    assert_eq!((j.randseed, j.randseed_set), (42, true));
    assert_eq!((d_seed().randseed, d_seed().randseed_set), (0x89, false));
    assert_eq!(j.cgroup.as_deref(), Some("lo/a"));
    assert_eq!((j.prio, j.prioclass), (Some(4), Some(2)));
    assert_eq!(j.io_size, Some(SizeOrPct::Percent(10)));
    assert_eq!(j.offset, SizeOrPct::Bytes(4096));
    assert_eq!((j.number_ios, j.loops), (100, 3));
    assert_eq!(j.description.as_deref(), Some("x y"));
    assert_eq!(j.wait_for.as_deref(), Some("b"));
    assert_eq!(
        job("[a]\nrandom_distribution=zipf\n").random_distribution,
        RandomDist::Zipf {
            theta: 1.1,
            center: None
        }
    );
    assert_eq!(
        job("[a]\nunified_rw_reporting=both\n").unified_rw_reporting,
        UnifiedRw::Both
    );
}

#[test]
fn inline_comments_like_fio_examples() {
    let j = job("[a]\nnumjobs=1  ; one copy\nsize=102404k ; 100Mb+4k\nruntime=3600 # 1 h\n");
    assert_eq!(j.size, Some(SizeOrPct::Bytes(102_404 * 1024)));
    assert_eq!(j.runtime, 3600 * S);
}

fn d_seed() -> JobSpec {
    job("[a]\n")
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn command_line() {
    let f = parse_cmdline(&args(&[
        "--rw=randrw",
        "--eta=never",
        "--name=a",
        "--bs=8k",
        "--name=global",
        "--iodepth=2",
        "--ioengine=libaio",
        "--name=b",
        "--numjobs=2",
        "--time_based",
        "--runtime=5",
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(f.jobs.len(), 3);
    assert_eq!(
        (f.jobs[0].rw, f.jobs[0].bs_min[0], f.jobs[0].iodepth),
        (RwMode::RandRw, 8192, 1)
    );
    assert_eq!(f.jobs[1].iodepth, 2);
    assert!(f.jobs[2].time_based);
    assert_eq!(f.jobs[2].runtime, 5 * S);
    assert_eq!(f.global_options.len(), 3);
    assert_eq!(f.warnings.len(), 1);
    let e = parse_cmdline(&args(&["--name=a", "--bogus=1"])).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("<cmdline>", 2));
    assert!(parse_cmdline(&args(&["--name="])).is_err());
    // a bare argument is a job file, parsed after the command-line jobs and
    // starting from the command line's global options
    let read = |p: &str| {
        (p == "j.fio")
            .then(|| "[c]\nrw=write\n".to_string())
            .ok_or_else(|| "missing".to_string())
    };
    let f = parse_cmdline_with(
        &args(&["--bs=16k", "j.fio", "--name=d"]),
        &at("<cmdline>"),
        &rd(&no_env, &read),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = f.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["d", "c"]);
    assert_eq!((f.jobs[1].rw, f.jobs[1].bs_min[0]), (RwMode::Write, 16384));
    assert!(parse_cmdline_with(&args(&["x.fio"]), &at("<cmdline>"), &rd(&no_env, &read)).is_err());
}

/// Acting as fio, `${VAR}` is read from the environment as fio reads it (unset:
/// nothing, with a warning naming it); with the environment off, as in scenarios, it
/// is an error naming the variable, never silently "".
#[test]
fn env_vars_as_fio_or_refused() {
    let env = |v: &str| (v == "BS").then(|| "16k".to_string());
    let f = parse_jobfile(
        "[a]\nbs=${BS}\n\nrwmixread=${PCT}40\n",
        &at("j.fio"),
        &rd(&env, &no_files),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((f.jobs[0].bs_min[0], f.jobs[0].rwmixread), (16384, 40));
    assert_eq!(
        f.warnings,
        ["j.fio:4: `${PCT}` is not set in the environment: it expands to nothing, as in fio"]
    );
    let off = Reader {
        env: Env::Off,
        read_file: &no_files,
        quote_job_files: false,
        honours_program_options: false,
    };
    let e = parse_jobfile("[a]\n\nfilename=/dev/${DEV}\n", &at("s.toml"), &off).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(
        e.msg
            .starts_with("`${DEV}`: environment variables are not expanded in scenarios"),
        "{e}"
    );
    // fio substitutes nothing on its command line (the shell did): `$ncpus` stays
    // (fio 3.33: "failed parsing numjobs=$ncpus"), `${X}` is not emptied
    let e = parse_cmdline(&args(&["--name=a", "--numjobs=$ncpus"])).unwrap_err();
    assert!(e.msg.contains("$ncpus"), "{e}");
    let f = parse_cmdline(&args(&["--name=a", "--filename=${NOT_SET_HERE}"])).unwrap();
    assert_eq!(f.jobs[0].filename.as_deref(), Some("${NOT_SET_HERE}"));
}

/// fio hands a value in which it replaced `$ncpus`, `$mb_memory` or `$pagesize` and
/// that holds `+ - * /` to bc (scale 0: divisions truncate). fio 3.33, 2 CPUs:
/// `numjobs=$ncpus*2` runs 4 jobs.
#[test]
fn reserved_keywords_with_arithmetic() {
    let f = parse("[a]\nnumjobs=$ncpus*2\nsize=$mb_memory/3\nbs=$pagesize*2\n");
    assert_eq!(f.jobs.len(), 4);
    assert_eq!(f.jobs[0].size, Some(SizeOrPct::Bytes(8192 / 3)));
    assert_eq!(f.jobs[0].bs_min, [8192; 3]);
    let e = parse_err("[a]\n\nsize=$mb_memory/0\n");
    assert!(e.starts_with("t.fio:3: size: division by zero"), "{e}");
    // bc cannot read a unit: fio 3.33 fails parsing `size=(4*$ncpus)MiB`
    let e = parse_err("[a]\nsize=(4*$ncpus)MiB\n");
    assert!(e.starts_with("t.fio:2: size: `(4*2)MiB`"), "{e}");
}

/// Issue 32 item 15: fio reads its program options anywhere on its command line. Acting
/// as fio, `--output-format` is the caller's (the last one given), read without the
/// "ignored" warning a scenario's fio text still gets for it.
#[test]
fn output_format_is_the_last_anywhere_and_honoured_acting_as_fio() {
    let a = args(&[
        "--output-format=json",
        "--name=a",
        "-output-format",
        "json+",
        "--rw=read",
    ]);
    assert_eq!(
        program_option(&a, "output-format").as_deref(),
        Some("json+")
    );
    assert_eq!(program_option(&args(&["--name=a"]), "output-format"), None);
    let f = parse_cmdline(&a).unwrap_or_else(|e| panic!("{e}"));
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let scenario = Reader {
        env: Env::Off,
        read_file: &no_files,
        quote_job_files: false,
        honours_program_options: false,
    };
    let f = parse_cmdline_with(&a, &at("s.toml"), &scenario).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(f.warnings.len(), 2, "{:?}", f.warnings);
    assert!(
        f.warnings[1].starts_with("s.toml:3: `--output-format` is an fio program option"),
        "{:?}",
        f.warnings
    );
}

/// getopt: an option with a required argument and no `=` takes the next word
/// (`--bs 4k`); a flag (`FIO_OPT_STR_SET`) takes a value only after `=`, so the word
/// after it is a job file, as fio 3.33 reads `--time_based 1` ("unable to open '1'
/// job file").
#[test]
fn command_line_options_take_the_next_word() {
    let f = parse_cmdline(&args(&[
        "--output-format",
        "json",
        "--name",
        "a",
        "--bs",
        "8k",
        "--time_based",
        "--runtime",
        "5",
        "--rw=randread",
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(f.jobs.len(), 1);
    let j = &f.jobs[0];
    assert_eq!(
        (j.name.as_str(), j.bs_min[0], j.rw),
        ("a", 8192, RwMode::RandRead)
    );
    assert!(j.time_based);
    assert_eq!(j.runtime, 5 * S);
    // `json` is its value, not a job file; acting as fio it is honoured, unwarned
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let e = parse_cmdline(&args(&["--name=a", "--time_based", "1"])).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.msg.starts_with("cannot read job file `1`"), "{e}");
    // getopt_long_only: one dash is enough for a long option (fio 3.33 runs
    // `fio -name=a -bs 8k`)
    let f = parse_cmdline(&args(&[
        "-name",
        "b",
        "-bs",
        "16k",
        "-time_based",
        "-runtime=2",
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let j = &f.jobs[0];
    assert_eq!(
        (j.name.as_str(), j.bs_min[0], j.runtime),
        ("b", 16384, 2 * S)
    );
    assert!(j.time_based);
    let e = parse_cmdline(&args(&["--name=a", "-x"])).unwrap_err();
    assert!(e.msg.starts_with("`-x`: not an fio option"), "{e}");
    let e = parse_cmdline(&args(&["--name=a", "--bs"])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "<cmdline>:2: option `--bs` requires an argument: `--bs=VALUE` or `--bs VALUE`"
    );
}

/// `size=0` (and `0%`) is fio's "not given": the whole file or device; `io_size=0`
/// likewise falls back to the size.
#[test]
fn size_zero_is_the_whole_device() {
    for v in ["0", "0%", "0k"] {
        let j = job(&format!("[a]\nsize={v}\nio_size={v}\n"));
        assert_eq!((j.size, j.io_size), (None, None), "size={v}");
    }
    let f = parse_cmdline(&args(&["--name=a", "--size", "0"])).unwrap();
    assert_eq!(f.jobs[0].size, None);
}

/// An included file need not be a job file, and its first line is then the error:
/// errors name its file and line and never quote it. So is a job file a scenario's
/// command line names; acting as fio, that one is quoted as fio quotes it.
#[test]
fn files_read_by_name_are_not_quoted() {
    let read = |p: &str| match p {
        "d/shadow" => Ok("root:$y$j9T$SECRETHASH:19000:0:99999:7:::\n".to_string()),
        "d/opts" => Ok("iodepth=4\nbs=SECRET\n".to_string()),
        "d/early" => Ok("SECRET=1\n".to_string()),
        "d/nested" => Ok("include SECRETPATH\n".to_string()),
        _ => Err("No such file or directory (os error 2)".to_string()),
    };
    let cases = [
        ("[a]\ninclude shadow\n", "d/shadow:1: not an fio option"),
        ("[a]\ninclude opts\n", "d/opts:2: bs: not a valid value"),
        (
            "include early\n[a]\n",
            "d/early:1: an option outside of a [] job section",
        ),
        (
            "[a]\ninclude nested\n",
            "d/nested:1: cannot include the file this line names",
        ),
    ];
    for (text, want) in cases {
        let e = parse_jobfile(text, &at("d/j.fio"), &rd(&no_env, &read))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(want), "{e}");
        assert!(e.contains("(the line is not quoted"), "{e}");
        assert!(!e.contains("SECRET") && !e.contains("root"), "{e}");
    }
    let cmd = args(&["d/shadow"]);
    let scenario = Reader {
        env: Env::Off,
        read_file: &read,
        quote_job_files: false,
        honours_program_options: false,
    };
    let e = parse_cmdline_with(&cmd, &at("<cmdline>"), &scenario).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("d/shadow", 1));
    assert!(!e.msg.contains("SECRET"), "{e}");
    let e = parse_cmdline_with(&cmd, &at("<cmdline>"), &rd(&no_env, &read)).unwrap_err();
    assert!(e.msg.contains("SECRETHASH"), "acting as fio, quoted: {e}");
    // an endless file is read only so far
    let e = parse_jobfile(
        "[a]\ninclude /dev/zero\n",
        &at("s.toml"),
        &Reader::scenario(),
    )
    .unwrap_err();
    assert!(e.msg.ends_with("larger than 16 MiB: not a job file"), "{e}");
}

/// Text held in another file reports that file's lines: line n of the text is
/// `lines[n-1]`, argument n of a command line likewise.
#[test]
fn errors_and_warnings_at_the_holding_files_lines() {
    let lines = [11, 12, 13, 14];
    let held = Origin {
        file: "s.toml",
        lines: &lines,
    };
    let f = parse_jobfile("[a]\nbs = 4k\n", &held, &rd(&no_env, &no_files)).unwrap();
    assert!(
        f.warnings[0].starts_with("s.toml:12: blank after `=`"),
        "{:?}",
        f.warnings
    );
    let e = parse_jobfile("[a]\n\n\nbs=4q\n", &held, &rd(&no_env, &no_files)).unwrap_err();
    assert_eq!(e.to_string().split(": ").next(), Some("s.toml:14"));
    let e = parse_cmdline_with(
        &args(&["--name=a", "--bogus=1"]),
        &held,
        &rd(&no_env, &no_files),
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("s.toml", 12));
}

proptest! {
    #[test]
    fn never_panics_on_text(s in "\\PC{0,200}") {
        let _ = parse_jobfile(&s, &at("p.fio"), &rd(&no_env, &no_files));
        let _ = parse_jobfile(&format!("[a]\n{s}"), &at("p.fio"), &rd(&no_env, &no_files));
        let held = Origin { file: "s.toml", lines: &[3, 5] };
        let _ = parse_jobfile(&format!("[a]\n{s}"), &held, &Reader::scenario());
    }

    #[test]
    fn never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        let s = String::from_utf8_lossy(&b);
        let _ = parse_jobfile(&format!("[a]\n{s}"), &at("p.fio"), &rd(&no_env, &no_files));
        let _ = parse_cmdline_with(&[s.to_string()], &at("<cmdline>"), &rd(&no_env, &no_files));
        let _ = parse_cmdline_with(&["--name=a".into(), format!("--{s}")], &at("<cmdline>"), &rd(&no_env, &no_files));
    }

    #[test]
    fn never_panics_on_option_values(
        key in proptest::sample::select(vec![
            "bs", "bsrange", "bssplit", "rw", "size", "offset", "runtime", "thinktime",
            "startdelay", "rate", "rate_iops", "random_distribution", "percentile_list",
            "kb_base", "iodepth", "rwmixread", "unified_rw_reporting", "filesize",
        ]),
        val in "[0-9a-zA-Z%:,/()*+^. -]{0,30}",
    ) {
        let _ = parse_jobfile(&format!("[a]\n{key}={val}\n"), &at("p.fio"), &rd(&no_env, &no_files));
        let _ = parse_cmdline(&["--name=a".into(), format!("--{key}={val}")]);
    }
}
