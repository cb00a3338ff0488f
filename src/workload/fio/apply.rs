//! The option table: one `key[=value]` onto a [`JobSpec`], fio's post-parse fix-ups,
//! and the known-but-unmodelled warning.
//!
//! Each arm mirrors the options.c entry of the same name (type, default unit,
//! min/max, callback); aliases are folded first by [`canonical`]. Option types that
//! fio declares `FIO_OPT_STR_SET` may be given bare (`time_based`); every other
//! option needs a value, as fio says "Option X requires an argument".

use super::known::{fio_flag, fio_knows};
use super::units::{self, SizeOrPct};
use super::{
    BsSplit, FadviseHint, IoEngine, JobSpec, NsRange, RandomDist, RateProcess, RwMode, RwSuffix,
    SubmitMode, SyncFileRange, ThinkBlocksType, UnifiedRw,
};
use crate::sim::Ns;

/// The blkcg-sim extension options (not fio's).
const EXTENSIONS: &[&str] = &["blkcg_meta"];

/// Fold an alias to its options.c name.
pub(super) fn canonical(key: &str) -> &str {
    match key {
        "readwrite" => "rw",
        "iodepth_batch" => "iodepth_batch_submit",
        "iodepth_batch_complete" => "iodepth_batch_complete_min",
        "io_limit" => "io_size",
        "fileoffset" => "offset",
        "blocksize" => "bs",
        "blockalign" => "ba",
        "blocksize_range" => "bsrange",
        "blocksize_unaligned" => "bs_unaligned",
        "allrandrepeat" => "randrepeat",
        "timeout" => "runtime",
        "ratemin" => "rate_min",
        "ratecycle" => "rate_cycle",
        "wait_for_previous" => "stonewall",
        k => k,
    }
}

/// parse.c `sort_options()` priority: higher is applied first (options.c `.prio`).
pub(super) fn prio(key: &str) -> i32 {
    match canonical(key) {
        "kb_base" | "unit_base" | "cpus_allowed_policy" => 1,
        "filename" | "lockfile" => -1,
        _ => 0,
    }
}

/// Whether `key` (canonical) is a name fio or we know at all.
pub(super) fn is_known(key: &str) -> bool {
    fio_knows(key) || EXTENSIONS.contains(&key)
}

fn bool01(v: &str) -> Result<bool, String> {
    match units::int(v) {
        Ok(0) => Ok(false),
        Ok(1) => Ok(true),
        Ok(n) => Err(format!(
            "max value out of range: {n} (1 max); accepted: 0 or 1"
        )),
        Err(e) => Err(format!("{e}; accepted: 0 or 1")),
    }
}

/// An integer option. fio reads `FIO_OPT_INT`/`FIO_OPT_STR_VAL` values with
/// `check_str_bytes()`, so size suffixes apply (`iodepth=1k` is 1024, `rate_iops=2k`
/// is 2048 under the default kb_base) — mirrored here.
fn uint(v: &str, kb: u64, notes: &mut Vec<String>, min: i64, max: i64) -> Result<u64, String> {
    let range = || format!("`{v}` out of range; accepted: {min}..={max}");
    if v.trim_start().starts_with('-') {
        return Err(range());
    }
    let n = units::bytes(v, kb, notes)?;
    if n < min as u64 || n > max as u64 {
        return Err(range());
    }
    Ok(n)
}

fn u32v(v: &str, kb: u64, notes: &mut Vec<String>, min: u32, max: u32) -> Result<u32, String> {
    Ok(uint(v, kb, notes, min.into(), max.into())? as u32)
}

fn one_of<T: Copy>(v: &str, table: &[(&str, T)]) -> Result<T, String> {
    table
        .iter()
        .find(|(k, _)| *k == v)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(k, _)| *k).collect();
            format!("`{v}` is not valid; accepted: {}", names.join(", "))
        })
}

/// `sync_file_range=wait_before,write,wait_after:N` (fio's `str_sfr_cb()`: N
/// defaults to 1; fio divides by it, so 0 is refused).
fn sync_file_range(v: &str, kb: u64, notes: &mut Vec<String>) -> Result<SyncFileRange, String> {
    let (names, every) = match v.split_once(':') {
        Some((names, n)) => (names, u32v(n, kb, notes, 1, u32::MAX)?),
        None => (v, 1),
    };
    let mut flags = 0;
    for name in names.split(',') {
        flags |= one_of(
            name.trim(),
            &[
                ("wait_before", SyncFileRange::WAIT_BEFORE),
                ("write", SyncFileRange::WRITE),
                ("wait_after", SyncFileRange::WAIT_AFTER),
            ],
        )?;
    }
    Ok(SyncFileRange { flags, every })
}

/// Time option → Ns. `seconds` = bare numbers are seconds (else µs).
fn time_ns(v: &str, seconds: bool, notes: &mut Vec<String>) -> Result<Ns, String> {
    let t = units::time_us(v, seconds)?;
    notes.extend(t.quirk);
    t.us.checked_mul(1000)
        .ok_or_else(|| format!("`{v}` is too long"))
}

/// Millisecond integer option (`rate_cycle`, `bwavgtime`) → Ns.
fn ms_ns(v: &str, kb: u64, notes: &mut Vec<String>) -> Result<Ns, String> {
    Ok(uint(v, kb, notes, 0, i64::from(u32::MAX))? * 1_000_000)
}

/// Apply a per-direction list through `f`.
fn per_dir<T>(
    v: &str,
    arr: &mut [T; 3],
    mut f: impl FnMut(&str) -> Result<T, String>,
) -> Result<(), String> {
    for (slot, p) in arr.iter_mut().zip(units::per_dir(v)?) {
        if let Some(p) = p {
            *slot = f(p)?;
        }
    }
    Ok(())
}

/// `rw=mode[:N]` (options.c `str_rw_cb`).
fn rw(spec: &mut JobSpec, v: &str, notes: &mut Vec<String>) -> Result<(), String> {
    let (mode, suffix) = match v.split_once(':') {
        Some((m, s)) => (m, Some(s)),
        None => (v, None),
    };
    spec.rw = one_of(
        mode,
        &[
            ("read", RwMode::Read),
            ("write", RwMode::Write),
            ("trim", RwMode::Trim),
            ("randread", RwMode::RandRead),
            ("randwrite", RwMode::RandWrite),
            ("randtrim", RwMode::RandTrim),
            ("rw", RwMode::ReadWrite),
            ("readwrite", RwMode::ReadWrite),
            ("randrw", RwMode::RandRw),
            ("trimwrite", RwMode::TrimWrite),
            ("randtrimwrite", RwMode::RandTrimWrite),
        ],
    )?;
    spec.rw_suffix = match suffix {
        None => RwSuffix::Every(1),
        // str_rw_cb: random patterns take a count, sequential ones a hole size.
        Some(s) if spec.rw.is_random() => {
            let n = units::int(s).map_err(|e| format!("rw suffix: {e}"))?;
            if n < 1 {
                return Err(format!("rw suffix `{s}` must be at least 1"));
            }
            RwSuffix::Every(n as u64)
        }
        // A negative hole seeks backwards (examples/backwards-read.fio: `read:-8k`).
        Some(s) => {
            let (neg, mag) = match s.strip_prefix('-') {
                Some(m) => (true, m),
                None => (false, s),
            };
            let b = i64::try_from(units::bytes(mag, spec.kb_base, notes)?)
                .map_err(|_| format!("rw hole `{s}` is too large"))?;
            RwSuffix::Hole(if neg { -b } else { b })
        }
    };
    Ok(())
}

/// `bssplit=` (options.c `str_bssplit_cb` → `str_split_parse` → `split_parse_ddir` →
/// `bssplit_ddir`, fio 3.33), each direction resolved to the share of I/Os each size
/// gets as io_u.c `get_next_buflen()` draws them. fio's rules: entries split at `:`
/// (an empty one ends the list; past 64, `BSSPLIT_MAX`, the rest are ignored); a
/// percentage is read by `atoi()`, over 100 (or negative: it lands in an unsigned)
/// is 100, 0 or none is blank; blanks share `100 - given` evenly (integer division,
/// unsigned: over 100 with one blank wraps around), a lone blank entry gets 0 (it
/// is the only size anyway); only given percentages over 100 with two blanks or more
/// are refused. Entries are sorted by percentage as an `int` (`bs_cmp`; stable
/// here, as glibc's merge sort is), and each I/O takes the first entry whose running
/// sum reaches its draw, else the last with a percentage: sums over 100 starve the
/// largest entries, sums under 100 give the rest to the last.
fn bssplit(spec: &mut JobSpec, v: &str, notes: &mut Vec<String>) -> Result<(), String> {
    let kb = spec.kb_base;
    let parts = units::per_dir(v)?;
    for (d, part) in parts.iter().enumerate() {
        let Some(part) = *part else { continue };
        // this direction's notes: none where a direction before had the same text
        let mut mine = Vec::new();
        let written: Vec<&str> = part.split(':').take_while(|e| !e.is_empty()).collect();
        if written.len() > BSSPLIT_MAX {
            mine.push(format!(
                "bssplit `{part}` has {} entries; fio keeps the first {BSSPLIT_MAX} \
                 (BSSPLIT_MAX) and ignores the rest",
                written.len()
            ));
        }
        // (size as written, bytes, percentage; None: blank)
        let mut entries: Vec<(&str, u64, Option<u32>)> = Vec::new();
        for e in written.into_iter().take(BSSPLIT_MAX) {
            let (size, pct) = match e.split_once('/') {
                Some((s, p)) => (s, percentage(p, &mut mine)),
                None => (e, None),
            };
            entries.push((size, units::bytes(size, kb, notes)?, pct));
        }
        if entries.is_empty() {
            continue;
        }
        let given: u32 = entries.iter().filter_map(|e| e.2).sum();
        let blanks = entries.iter().filter(|e| e.2.is_none()).count() as u32;
        if given > 100 && blanks > 1 {
            return Err(format!(
                "`{part}`: the percentages given add to {given}, more than 100, \
                 leaving nothing for its {blanks} blank entries (fio: \"bssplit percentages \
                 add to more than 100%\"); accepted: given percentages up to 100 in all, \
                 blanks sharing the rest"
            ));
        }
        // fio's unsigned int arithmetic, wrap-around included
        let fill = match (blanks, entries.len()) {
            (0, _) | (1, 1) => 0,
            (b, _) => 100u32.wrapping_sub(given) / b,
        };
        let mut pcts: Vec<(&str, u64, u32)> = entries
            .iter()
            .map(|&(w, size, p)| (w, size, p.unwrap_or(fill)))
            .collect();
        spec.bs_min[d] = pcts.iter().map(|e| e.1).min().unwrap_or(4096);
        spec.bs_max[d] = pcts.iter().map(|e| e.1).max().unwrap_or(4096);
        pcts.sort_by_key(|e| e.2 as i32);
        let mut list = Vec::with_capacity(pcts.len());
        let mut sum = 0u64;
        for &(_, size, p) in &pcts {
            let before = sum.min(100) as u32;
            sum += u64::from(p);
            list.push(BsSplit {
                size,
                pct: sum.min(100) as u32 - before,
            });
        }
        // a draw past every running sum keeps the last entry with a percentage
        let rest = 100 - sum.min(100) as u32;
        let last = pcts
            .iter()
            .rposition(|e| e.2 != 0)
            .unwrap_or(pcts.len() - 1);
        list[last].pct += rest;
        if given > 100 || (blanks == 0 && given != 100) {
            let shares: Vec<String> = pcts
                .iter()
                .zip(&list)
                .map(|(e, b)| format!("{} {}%", e.0, b.pct))
                .collect();
            mine.push(format!(
                "bssplit `{part}`: the percentages given add to {given}, not 100{}; fio \
                 draws sizes from the smallest percentage up, so the shares are {}",
                if blanks > 0 {
                    format!(
                        ", and the blank entry's 100 - {given} wraps around in fio's \
                         unsigned arithmetic"
                    )
                } else {
                    String::new()
                },
                shares.join(", ")
            ));
        }
        spec.bssplit[d] = list;
        if !parts[..d].contains(&Some(part)) {
            notes.append(&mut mine);
        }
    }
    Ok(())
}

/// fio's `BSSPLIT_MAX`: the entries one direction of a bssplit keeps.
const BSSPLIT_MAX: usize = 64;

/// A bssplit percentage as `split_parse_ddir()` reads it: `atoi()` (the leading
/// integer; text after it is ignored, with a note), then over 100 — a negative too,
/// once in fio's unsigned — is 100, and 0 is blank (None).
fn percentage(p: &str, notes: &mut Vec<String>) -> Option<u32> {
    let t = p.trim_start();
    let (neg, digits) = match t.strip_prefix(['-', '+']) {
        Some(d) => (t.starts_with('-'), d),
        None => (false, t),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let n = digits[..end].bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    });
    let value = match (neg, n) {
        (_, 0) => None,
        (true, _) | (false, 101..) => Some(100),
        (false, n) => Some(n as u32),
    };
    let what = value.map_or("0: blank".to_string(), |v| v.to_string());
    if end < digits.len() {
        notes.push(format!(
            "bssplit percentage `{p}`: fio's atoi() stops at `{}`, so it is {what}",
            &digits[end..]
        ));
    } else if neg && n > 0 {
        notes.push(format!(
            "bssplit percentage `{p}`: fio keeps it unsigned, where a negative is over \
             100, so it is 100"
        ));
    }
    value
}

fn dist_params(v: &str, dflt: f64) -> Result<(f64, Option<f64>), String> {
    let mut it = v.splitn(2, ':');
    let parse = |s: &str| {
        s.trim()
            .parse::<f64>()
            .map_err(|_| format!("`{s}` is not a number in random_distribution"))
    };
    let val = match it.next() {
        Some(s) if !s.is_empty() => parse(s)?,
        _ => dflt,
    };
    let center = match it.next() {
        Some(s) => {
            let c = parse(s)?;
            if !(0.0..=1.0).contains(&c) {
                return Err("distribution center out of range (0 <= center <= 1.0)".into());
            }
            Some(c)
        }
        None => None,
    };
    Ok((val, center))
}

/// `random_distribution=` (options.c `str_random_distribution_cb`).
fn random_dist(v: &str, notes: &mut Vec<String>) -> Result<RandomDist, String> {
    let (kind, rest) = match v.split_once(':') {
        Some((k, r)) => (k, r),
        None => (v, ""),
    };
    Ok(match kind {
        "random" => RandomDist::Random,
        "zipf" => {
            let (theta, center) = dist_params(rest, 1.1)?;
            if theta == 1.0 {
                return Err("zipf theta must different than 1.0".into());
            }
            RandomDist::Zipf { theta, center }
        }
        "pareto" => {
            let (h, center) = dist_params(rest, 0.2)?;
            if h <= 0.0 || h >= 1.0 {
                return Err("pareto input out of range (0 < input < 1.0)".into());
            }
            RandomDist::Pareto { h, center }
        }
        "normal" | "gauss" => {
            let (sigma, center) = dist_params(rest, 0.0)?;
            if !(0.0..100.0).contains(&sigma) {
                return Err("normal deviation out of range (0 <= input < 100.0)".into());
            }
            RandomDist::Normal { sigma, center }
        }
        "zoned" | "zoned_abs" => {
            if rest.is_empty() {
                return Err(format!(
                    "`{kind}` needs zone definitions, e.g. {kind}:60/10:40/90"
                ));
            }
            RandomDist::Zoned {
                absolute: kind == "zoned_abs",
                spec: rest.to_string(),
            }
        }
        "sequence" => {
            notes.push("random_distribution=sequence is not modelled; uniform used".into());
            RandomDist::Random
        }
        _ => {
            return Err(format!(
                "`{kind}` is not valid; accepted: random, zipf, pareto, normal, gauss, \
                 zoned, zoned_abs, sequence"
            ));
        }
    })
}

fn engine(v: &str) -> IoEngine {
    match v {
        "libaio" => IoEngine::Libaio,
        "io_uring" => IoEngine::IoUring,
        "psync" => IoEngine::Psync,
        "sync" => IoEngine::Sync,
        "pvsync" => IoEngine::Pvsync,
        "pvsync2" => IoEngine::Pvsync2,
        "null" => IoEngine::Null,
        "posixaio" => IoEngine::Posixaio,
        "mmap" => IoEngine::Mmap,
        other => IoEngine::Other(other.to_string()),
    }
}

/// Whether `key` (canonical) is a flag, which may be given without a value: fio's
/// `FIO_OPT_STR_SET` options, and our extensions (all flags).
pub(super) fn is_flag(key: &str) -> bool {
    fio_flag(key) || EXTENSIONS.contains(&key)
}

/// `size=`/`io_size=` of 0 (or 0%) is fio's "not given": the whole file or device
/// (filesetup.c: a zero size falls back to `real_file_size - file_offset`), and for
/// `io_size` the size.
fn unless_zero(v: SizeOrPct) -> Option<SizeOrPct> {
    match v {
        SizeOrPct::Bytes(0) | SizeOrPct::Percent(0) | SizeOrPct::Zones(0) => None,
        v => Some(v),
    }
}

/// What applying one option did.
pub(super) enum Outcome {
    /// Modelled and applied.
    Applied,
    /// fio knows the option but the simulator ignores it.
    Unmodelled,
}

/// Apply `key[=val]` to `spec`. `key` is already canonical and known. Notes about
/// fio quirks hit are pushed to `notes`.
pub(super) fn apply(
    spec: &mut JobSpec,
    key: &str,
    val: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Outcome, String> {
    let v = match val {
        Some(v) => v.trim(),
        None if is_flag(key) => "1",
        // FIO_OPT_STR with a callback that takes no value (`str_write_*_log_cb()`): a
        // bare `write_bw_log` in a job file names the log after the job
        None if matches!(key, "write_bw_log" | "write_lat_log" | "write_iops_log") => "",
        None if fio_knows(key) && !is_modelled(key) => return Ok(Outcome::Unmodelled),
        None => return Err(format!("Option {key} requires an argument")),
    };
    let kb = spec.kb_base;
    match key {
        "rw" => rw(spec, v, notes)?,
        "rwmixread" => {
            spec.rwmixread = u32v(v, kb, notes, 0, 100)?;
        }
        "rwmixwrite" => {
            spec.rwmixread = 100 - u32v(v, kb, notes, 0, 100)?;
        }
        "bs" => {
            let mut lo = spec.bs_min;
            per_dir(v, &mut lo, |p| units::bytes(p, kb, notes))?;
            check_bs(&lo)?;
            spec.bs_min = lo;
            spec.bs_max = lo;
        }
        "bsrange" => {
            let mut r: [(u64, u64); 3] = std::array::from_fn(|d| (spec.bs_min[d], spec.bs_max[d]));
            per_dir(v, &mut r, |p| units::size_range(p, kb, notes))?;
            check_bs(&r.map(|x| x.0))?;
            spec.bs_min = r.map(|x| x.0);
            spec.bs_max = r.map(|x| x.1);
        }
        "bssplit" => bssplit(spec, v, notes)?,
        "bs_unaligned" => spec.bs_unaligned = bool01(v)?,
        "ba" => per_dir(v, &mut spec.blockalign, |p| units::bytes(p, kb, notes))?,
        "iodepth" => {
            spec.iodepth = u32v(v, kb, notes, 1, 65535)?;
            spec.iodepth_set = true;
        }
        "iodepth_batch_submit" => spec.iodepth_batch_submit = u32v(v, kb, notes, 0, 65535)?,
        "iodepth_batch_complete_min" => {
            spec.iodepth_batch_complete_min = u32v(v, kb, notes, 0, 65535)?
        }
        "iodepth_batch_complete_max" => {
            spec.iodepth_batch_complete_max = u32v(v, kb, notes, 0, 65535)?
        }
        "iodepth_low" => spec.iodepth_low = u32v(v, kb, notes, 0, 65535)?,
        "ioengine" => {
            if v.is_empty() {
                return Err("ioengine needs an engine name (psync, libaio, io_uring, ...)".into());
            }
            spec.ioengine = engine(v);
        }
        "direct" => spec.direct = bool01(v)?,
        "buffered" => spec.direct = !bool01(v)?,
        "fsync" => spec.fsync = u32v(v, kb, notes, 0, u32::MAX)?,
        "fdatasync" => spec.fdatasync = u32v(v, kb, notes, 0, u32::MAX)?,
        "end_fsync" => spec.end_fsync = bool01(v)?,
        "sync_file_range" => spec.sync_file_range = Some(sync_file_range(v, kb, notes)?),
        "invalidate" => spec.invalidate = bool01(v)?,
        "fadvise_hint" => {
            spec.fadvise_hint = one_of(
                v,
                &[
                    ("0", FadviseHint::None),
                    ("1", FadviseHint::Pattern),
                    ("random", FadviseHint::Random),
                    ("sequential", FadviseHint::Sequential),
                    ("noreuse", FadviseHint::Noreuse),
                ],
            )?
        }
        "size" => spec.size = unless_zero(units::size_or_pct(v, kb, notes)?),
        "filesize" => spec.filesize = Some(units::size_range(v, kb, notes)?),
        "offset" => spec.offset = units::size_or_pct(v, kb, notes)?,
        "io_size" => spec.io_size = unless_zero(units::size_or_pct(v, kb, notes)?),
        "number_ios" => spec.number_ios = uint(v, kb, notes, 0, i64::MAX)?,
        "loops" => spec.loops = u32v(v, kb, notes, 1, u32::MAX)?,
        "numjobs" => spec.numjobs = u32v(v, kb, notes, 1, 65536)?, // cap: bounded memory
        "runtime" => spec.runtime = time_ns(v, true, notes)?,
        "time_based" => spec.time_based = bool01(v)?,
        "ramp_time" => spec.ramp_time = time_ns(v, true, notes)?,
        "startdelay" => {
            // FIO_OPT_STR_VAL_TIME with off2: `lo-hi` or `lo:hi` range.
            let (lo, hi) = match v
                .char_indices()
                .skip(1)
                .find(|&(_, c)| c == '-' || c == ':')
            {
                Some((i, _)) => (&v[..i], &v[i + 1..]),
                None => (v, v),
            };
            let (lo, hi) = (time_ns(lo, true, notes)?, time_ns(hi, true, notes)?);
            spec.startdelay = NsRange {
                lo: lo.min(hi),
                hi: lo.max(hi),
            };
        }
        "rate" => per_dir(v, &mut spec.rate, |p| units::bytes(p, kb, notes))?,
        "rate_min" => per_dir(v, &mut spec.rate_min, |p| units::bytes(p, kb, notes))?,
        "rate_iops" => per_dir(v, &mut spec.rate_iops, |p| uint(p, kb, notes, 0, i64::MAX))?,
        "rate_iops_min" => per_dir(v, &mut spec.rate_iops_min, |p| {
            uint(p, kb, notes, 0, i64::MAX)
        })?,
        "rate_process" => {
            spec.rate_process = one_of(
                v,
                &[
                    ("linear", RateProcess::Linear),
                    ("poisson", RateProcess::Poisson),
                ],
            )?
        }
        "rate_ignore_thinktime" => spec.rate_ignore_thinktime = bool01(v)?,
        "rate_cycle" => spec.rate_cycle = ms_ns(v, kb, notes)?,
        "thinktime" => spec.thinktime = time_ns(v, false, notes)?,
        "thinktime_spin" => spec.thinktime_spin = time_ns(v, false, notes)?,
        "thinktime_blocks" => spec.thinktime_blocks = u32v(v, kb, notes, 1, u32::MAX)?,
        "thinktime_blocks_type" => {
            spec.thinktime_blocks_type = one_of(
                v,
                &[
                    ("complete", ThinkBlocksType::Complete),
                    ("issue", ThinkBlocksType::Issue),
                ],
            )?
        }
        "thinktime_iotime" => spec.thinktime_iotime = time_ns(v, true, notes)?,
        "norandommap" => spec.norandommap = bool01(v)?,
        "randrepeat" => spec.randrepeat = bool01(v)?,
        "randseed" => {
            spec.randseed = uint(v, kb, notes, 0, i64::MAX)?;
            spec.randseed_set = true;
        }
        "random_distribution" => spec.random_distribution = random_dist(v, notes)?,
        "group_reporting" => spec.group_reporting = bool01(v)?,
        "unified_rw_reporting" => {
            spec.unified_rw_reporting = one_of(
                v,
                &[
                    ("none", UnifiedRw::None),
                    ("0", UnifiedRw::None),
                    ("mixed", UnifiedRw::Mixed),
                    ("1", UnifiedRw::Mixed),
                    ("both", UnifiedRw::Both),
                    ("2", UnifiedRw::Both),
                ],
            )?
        }
        "percentile_list" => spec.percentile_list = percentiles(v)?,
        "clat_percentiles" => spec.clat_percentiles = bool01(v)?,
        "lat_percentiles" => spec.lat_percentiles = bool01(v)?,
        "slat_percentiles" => spec.slat_percentiles = bool01(v)?,
        "bwavgtime" => spec.bwavgtime = ms_ns(v, kb, notes)?,
        "iopsavgtime" => spec.iopsavgtime = ms_ns(v, kb, notes)?,
        "kb_base" => spec.kb_base = one_of(v, &[("1024", 1024), ("1000", 1000)])?,
        "unit_base" => spec.unit_base = one_of(v, &[("0", 0), ("8", 8), ("1", 1)])?,
        "significant_figures" => spec.significant_figures = u32v(v, kb, notes, 1, 10)?,
        "stonewall" => spec.stonewall = bool01(v)?,
        "new_group" => spec.new_group = bool01(v)?,
        "name" => spec.name = v.to_string(),
        "wait_for" => spec.wait_for = Some(v.to_string()),
        "cgroup" => spec.cgroup = Some(v.to_string()),
        "cgroup_weight" => {
            // options.c accepts 100..=1000; cgroup.c cgroup_add() then refuses
            // any weight at job start on a cgroup2 mount. The simulator is
            // cgroup2 only, so refuse now.
            uint(v, kb, notes, 100, 1000)?;
            return Err(
                "cgroup weit doesn't work with cgroup2 (fio cgroup.c, at job \
                        start); set io.weight on the cgroup in the scenario instead"
                    .into(),
            );
        }
        "cgroup_nodelete" => spec.cgroup_nodelete = bool01(v)?,
        "filename" => {
            if v.is_empty() {
                return Err("filename needs a file or device name".into());
            }
            spec.filename = Some(v.to_string())
        }
        "continue_on_error" => {
            spec.continue_on_error = one_of(
                v,
                &[
                    ("none", 0),
                    ("read", 1),
                    ("write", 2),
                    ("io", 3),
                    ("verify", 4),
                    ("all", 0xffff),
                    ("0", 0),
                    ("1", 0xffff),
                ],
            )?
        }
        "description" => spec.description = Some(v.to_string()),
        "read_iolog" => spec.read_iolog = Some(path_value(key, v)?),
        "write_iolog" => spec.write_iolog = Some(path_value(key, v)?),
        "write_bw_log" => spec.stat_logs.bw = Some(v.to_string()),
        "write_lat_log" => spec.stat_logs.lat = Some(v.to_string()),
        "write_iops_log" => spec.stat_logs.iops = Some(v.to_string()),
        "log_avg_msec" => spec.stat_logs.avg_ms = uint(v, kb, notes, 0, i64::from(u32::MAX))?,
        "log_max_value" => spec.stat_logs.max_value = bool01(v)?,
        "per_job_logs" => spec.stat_logs.per_job = bool01(v)?,
        "read_iolog_chunked" => spec.replay.chunked = bool01(v)?,
        "replay_no_stall" => spec.replay.no_stall = bool01(v)?,
        "replay_redirect" => spec.replay.redirect = Some(path_value(key, v)?),
        "replay_scale" => spec.replay.scale = uint(v, kb, notes, 0, i64::MAX)?,
        "replay_align" => {
            let a = uint(v, kb, notes, 0, i64::MAX)?;
            if a != 0 && !a.is_power_of_two() {
                return Err(format!("`{v}`: must be a power of 2 (or 0: off)"));
            }
            spec.replay.align = a;
        }
        "replay_time_scale" => spec.replay.time_scale = u32v(v, kb, notes, 1, u32::MAX)?,
        "replay_skip" => spec.replay.skip = replay_skip(v)?,
        "merge_blktrace_file" => {
            spec.merge_blktrace.get_or_insert_default().file = path_value(key, v)?;
        }
        "merge_blktrace_scalars" => {
            spec.merge_blktrace.get_or_insert_default().scalars = merge_list(v)?;
        }
        "merge_blktrace_iters" => {
            spec.merge_blktrace.get_or_insert_default().iters = merge_list(v)?;
        }
        "io_submit_mode" => {
            spec.io_submit_mode = one_of(
                v,
                &[
                    ("inline", SubmitMode::Inline),
                    ("offload", SubmitMode::Offload),
                ],
            )?
        }
        "prio" => spec.prio = Some(u32v(v, kb, notes, 0, 7)?),
        "prioclass" => spec.prioclass = Some(u32v(v, kb, notes, 0, 3)?),
        // engines/cmdprio.h CMDPRIO_OPTIONS: off1 = read, off2 = write
        "cmdprio_percentage" => per_dir(v, &mut spec.cmdprio_percentage, |p| {
            Ok(Some(u32v(p, kb, notes, 0, 100)?))
        })?,
        "cmdprio_class" => per_dir(v, &mut spec.cmdprio_class, |p| {
            Ok(Some(u32v(p, kb, notes, 1, 3)?))
        })?,
        "cmdprio" => per_dir(v, &mut spec.cmdprio, |p| {
            Ok(Some(u32v(p, kb, notes, 0, 7)?))
        })?,
        "blkcg_meta" => spec.blkcg_meta = bool01(v)?,
        _ => return Ok(Outcome::Unmodelled),
    }
    Ok(Outcome::Applied)
}

/// A `FIO_OPT_STR_STORE` naming a file: not empty.
fn path_value(key: &str, v: &str) -> Result<String, String> {
    if v.is_empty() {
        return Err(format!("{key} needs a file name"));
    }
    Ok(v.to_string())
}

/// `merge_blktrace_scalars` / `_iters` (FIO_OPT_FLOAT_LIST, `:`-separated, at most
/// 20): each value truncated to a whole number (`init_merge_param_list()`); the list
/// ends at its first 0.
fn merge_list(v: &str) -> Result<Vec<u64>, String> {
    let list = float_list(v, "a number 0 or more", |x| x.is_finite() && x >= 0.0)?;
    Ok(list
        .iter()
        .map(|&x| x as u64)
        .take_while(|&x| x > 0)
        .collect())
}

/// A `FIO_OPT_FLOAT_LIST` value: `:`-separated numbers that `ok` accepts (`what`
/// they must be), at most 20 (`FIO_IO_U_LIST_MAX_LEN`).
fn float_list(v: &str, what: &str, ok: impl Fn(f64) -> bool) -> Result<Vec<f64>, String> {
    let list: Vec<f64> = v
        .split(':')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|&x| ok(x))
                .ok_or_else(|| format!("`{p}` is not {what}"))
        })
        .collect::<Result<_, _>>()?;
    if list.len() > 20 {
        return Err(format!("has {} entries; at most 20", list.len()));
    }
    Ok(list)
}

/// `replay_skip=read,write,trim,sync` (options.c `str_replay_skip_cb()`).
fn replay_skip(v: &str) -> Result<u8, String> {
    use crate::workload::iolog::{SKIP_READ, SKIP_SYNC, SKIP_TRIM, SKIP_WRITE};
    v.split(',').try_fold(0, |bits, p| {
        let bit = match p {
            "read" => SKIP_READ,
            "write" => SKIP_WRITE,
            "trim" => SKIP_TRIM,
            "sync" => SKIP_SYNC,
            _ => {
                return Err(format!(
                    "Unknown skip type: `{p}`; accepted: read, write, trim, sync, \
                     separated by commas"
                ));
            }
        };
        Ok(bits | bit)
    })
}

/// Whether [`apply`] has an arm for `key`.
fn is_modelled(key: &str) -> bool {
    let mut probe = JobSpec::default();
    // An arm that needs a value fails on "" or succeeds; only the fallthrough
    // returns Unmodelled.
    !matches!(
        apply(&mut probe, key, Some(""), &mut Vec::new()),
        Ok(Outcome::Unmodelled)
    )
}

fn check_bs(bs: &[u64; 3]) -> Result<(), String> {
    if bs.contains(&0) {
        return Err("block size must be at least 1 byte".into());
    }
    Ok(())
}

/// `percentile_list=1:5:99.9` (FIO_OPT_FLOAT_LIST, maxlen 20, 0..=100).
fn percentiles(v: &str) -> Result<Vec<f64>, String> {
    float_list(v, "a number in 0..100", |x| (0.0..=100.0).contains(&x))
        .map_err(|e| format!("percentile_list {e}"))
}

/// init.c `fixup_options()` parts that change modelled fields, plus the sync-engine
/// depth cap (fio caps the depth of `FIO_SYNCIO` engines at 1).
pub(super) fn fixup(spec: &mut JobSpec) {
    if spec.ioengine.is_sync() {
        spec.iodepth = 1;
    }
    if spec.thinktime_spin > spec.thinktime {
        spec.thinktime_spin = spec.thinktime;
    }
    if spec.iodepth_low > spec.iodepth || spec.iodepth_low == 0 {
        spec.iodepth_low = spec.iodepth;
    }
    if spec.iodepth_batch_submit > spec.iodepth || spec.iodepth_batch_submit == 0 {
        spec.iodepth_batch_submit = spec.iodepth;
    }
    if spec.iodepth_batch_complete_min > spec.iodepth_batch_complete_max {
        spec.iodepth_batch_complete_max = spec.iodepth_batch_complete_min;
    }
}
