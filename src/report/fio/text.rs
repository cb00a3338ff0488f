//! fio's normal (text) output: the per-job block (`show_thread_status_normal()`,
//! `show_ddir_status()`, `display_lat()`, `show_clat_percentiles()`,
//! `show_latencies()`), the run-status group lines (`show_group_stats()`), and
//! `num2str()` (lib/num2str.c) which decides every unit and rounding.

use super::{GroupBw, JobReport, RunReport, gathered};
use crate::sim::IoErr;
use crate::sim::fio::stats::{DdirStats, LatStat, percentiles};
use crate::workload::fio::UnifiedRw;

/// mirrors num2str(): `num` shown in at most `maxlen` digits, dividing by 1000 or
/// 1024 and appending SI/IEC prefixes; `unit` is appended after the prefix.
pub fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    let si = ["", "k", "M", "G", "T", "P", "E"];
    let iec = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefix = if pow2 { &iec } else { &si };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0usize;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < si.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= si.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefix[post]);
    };
    let digits = num.to_string().len();
    if maxlen as i64 - digits as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefix[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    // a fraction that rounds up to "1.00" carries into the integer part (9 + 1023/1024
    // MiB/s is "10.00MiB/s"); then "0.xyz" or "1.000" -> "xyz"
    if frac.starts_with('1') {
        num += 1;
    }
    let frac = frac.get(2..).unwrap_or("0");
    format!("{num}.{frac}{}{unit}", prefix[post])
}

/// mirrors display_lat(): the unit choice and the `min/max/avg/stdev` line.
fn lat_line(name: &str, s: &LatStat) -> String {
    let (mut min, mut max, mut mean, mut dev) = (s.min, s.max, s.mean, s.stddev());
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        base = "(msec)";
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1e6;
        dev /= 1e6;
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        base = "(usec)";
        min /= 1000;
        max /= 1000;
        mean /= 1e3;
        dev /= 1e3;
    }
    format!(
        "    {name} {base}: min={}, max={}, avg={mean:5.02}, stdev={dev:5.02}\n",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    )
}

/// mirrors show_clat_percentiles()
fn pct_block(pre: &str, s: &LatStat, plist: &[f64]) -> String {
    let mut sorted = plist.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut vals = percentiles(&s.hist, &sorted);
    if vals.is_empty() {
        return String::new();
    }
    let (minv, maxv) = (s.min, s.max);
    let (scale, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let mut out = format!("    {pre} percentiles ({unit}):\n     |");
    let precision = 2usize;
    let time_width = 5.max(((maxv / divisor).max(1) as f64).log10() as usize + 1);
    let per_line = (80 - 7) / (precision + 10 + time_width);
    for j in 0..vals.len() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let last = j == vals.len() - 1;
        for _ in 0..scale {
            vals[j] = vals[j].div_ceil(1000);
        }
        out.push_str(&format!(
            " {:>w$.p$}th=[{:>tw$}]{}",
            sorted[j],
            vals[j],
            if last { '\n' } else { ',' },
            w = precision + 3,
            p = precision,
            tw = time_width
        ));
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
    out
}

fn ddir_block(
    r: &JobReport,
    name: &str,
    s: &DdirStats,
    runtime: u64,
    gbw: u64,
    pow2: bool,
) -> String {
    let mut out = String::new();
    let runt = runtime.max(1);
    let iops = s.issued() * 1000 / runt;
    let bw = s.io_bytes * 1000 / runt;
    let sig = r.sig_figs as usize;
    out.push_str(&format!(
        "  {name}: IOPS={}, BW={} ({})({}/{runtime}msec){}\n",
        num2str(iops, sig, false, ""),
        num2str(bw, sig, pow2, "B/s"),
        num2str(bw, sig, !pow2, "B/s"),
        num2str(s.io_bytes, sig, pow2, "B"),
        if name == "write" {
            "; 0 zone resets"
        } else {
            ""
        }
    ));
    if s.slat.n > 0 {
        out.push_str(&lat_line("slat", &s.slat));
    }
    if s.clat.n > 0 {
        out.push_str(&lat_line("clat", &s.clat));
    }
    if s.lat.n > 0 {
        out.push_str(&lat_line(" lat", &s.lat));
    }
    if r.slat_percentiles && s.slat.n > 0 {
        out.push_str(&pct_block("slat", &s.slat, &r.percentile_list));
    }
    if r.clat_percentiles && s.clat.n > 0 {
        out.push_str(&pct_block("clat", &s.clat, &r.percentile_list));
    }
    if r.lat_percentiles && s.lat.n > 0 {
        out.push_str(&pct_block(" lat", &s.lat, &r.percentile_list));
    }
    if s.bw.n > 0 {
        let mut agg = if gbw > 1024 {
            s.bw.mean * 100.0 / (gbw as f64 / 1024.0)
        } else {
            100.0
        };
        if agg > 100.0 {
            agg = 100.0;
        }
        // past kb_base² KiB/s the figures are shown in MiB/s: min and max divided as
        // integers, and "MiB" whatever the base (show_ddir_status()'s `fkb_base`)
        let (mut min, mut max, mut mean, mut dev) = (s.bw.min, s.bw.max, s.bw.mean, s.bw.stddev());
        let mut unit = if pow2 { "KiB" } else { "kB" };
        let kb_base: u64 = if pow2 { 1024 } else { 1000 };
        if mean > (kb_base * kb_base) as f64 {
            min /= kb_base;
            max /= kb_base;
            mean /= kb_base as f64;
            dev /= kb_base as f64;
            unit = "MiB";
        }
        out.push_str(&format!(
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={agg:3.2}%, avg={mean:5.02}, stdev={dev:5.02}, samples={}\n",
            s.bw.n
        ));
        out.push_str(&format!(
            "   iops        : min={:5}, max={:5}, avg={:5.02}, stdev={:5.02}, samples={}\n",
            s.iops.min,
            s.iops.max,
            s.iops.mean,
            s.iops.stddev(),
            s.iops.n
        ));
    }
    out
}

fn lat_lines(unit: &str, counts: &[u64], keys: &[&str], total: u64) -> String {
    let mut out = String::new();
    let mut line = 0;
    for (c, k) in counts.iter().zip(keys) {
        let v = if total > 0 {
            *c as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        if v <= 0.0 {
            continue;
        }
        if line == 0 {
            out.push_str(&format!("  lat ({unit})   : "));
        } else {
            out.push_str(", ");
        }
        out.push_str(&format!("{k}={v:3.2}%"));
        line += 1;
        if line == 5 {
            out.push('\n');
            line = 0;
        }
    }
    if line > 0 {
        out.push('\n');
    }
    out
}

fn pcts(counts: &[u64]) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    counts
        .iter()
        .map(|c| {
            if total > 0 {
                *c as f64 * 100.0 / total as f64
            } else {
                0.0
            }
        })
        .collect()
}

fn job_block(r: &JobReport, group_bw: &GroupBw) -> String {
    let st = &r.stats;
    let pow2 = r.kb_base == 1024;
    // `err=%2d`, with `(verror)` once there is an error
    let (err, verror) = st.err.shown();
    let why = if err == 0 {
        String::new()
    } else {
        format!(" ({verror})")
    };
    let mut out = format!(
        "{}: (groupid={}, jobs={}): err={err:2}{why}: pid={}: {}\n",
        r.name, r.groupid, r.jobs, r.pid, r.time
    );
    let names = ["read", "write", "trim"];
    if r.unified != UnifiedRw::Mixed {
        for (d, name) in names.iter().enumerate() {
            if st.dd[d].io_bytes > 0 {
                out.push_str(&ddir_block(
                    r,
                    name,
                    &st.dd[d],
                    r.ddir_runtime(d),
                    group_bw.get(r.groupid, d),
                    pow2,
                ));
            }
        }
    }
    if r.unified != UnifiedRw::None {
        let m = st.mixed();
        let runtime = (0..3).map(|d| r.ddir_runtime(d)).max().unwrap_or(0);
        let gbw = group_bw.get(r.groupid, 0) + group_bw.get(r.groupid, 1);
        out.push_str(&ddir_block(r, "mixed", &m, runtime, gbw, pow2));
    }
    let total: u64 = st.dd.iter().map(|d| d.issued()).sum();
    let nk = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let mk = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    out.push_str(&lat_lines("nsec", &st.lat_n, &nk, total));
    out.push_str(&lat_lines("usec", &st.lat_u, &nk, total));
    out.push_str(&lat_lines("msec", &st.lat_m, &mk, total));
    // show_ddir_status(DDIR_SYNC): the syncs of fsync=/fdatasync=
    if st.sync.n > 0 {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        out.push_str(&lat_line("sync", &st.sync));
        out.push_str(&pct_block("sync", &st.sync, &r.percentile_list));
    }
    out.push_str(&format!(
        "  cpu          : usr=0.00%, sys=0.00%, ctx={}, majf=0, minf={}\n",
        st.ctx, st.minf
    ));
    let d = pcts(&st.io_u_map);
    out.push_str(&format!(
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%\n",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    ));
    for (label, counts) in [("submit", &st.io_u_submit), ("complete", &st.io_u_complete)] {
        let d = pcts(counts);
        out.push_str(&format!(
            "     {label:<9} : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%\n",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        ));
    }
    out.push_str(&format!(
        "     issued rwts: total={},{},{},0 short=0,0,0,0 dropped=0,0,0,0\n",
        st.dd[0].issued(),
        st.dd[1].issued(),
        st.dd[2].issued()
    ));
    if st.err.coe {
        let first = st.err.first_error;
        out.push_str(&format!(
            "     errors    : total={}, first_error={first}/<{}>\n",
            st.err.total_err,
            strerror(first)
        ));
    }
    out.push_str(&format!(
        "     latency   : target=0, window=0, percentile=100.00%, depth={}\n",
        r.iodepth
    ));
    out
}

/// mirrors show_group_stats(): one line per direction of each reporting group.
fn group_block(gid: u32, jobs: &[&JobReport], group_bw: &GroupBw) -> String {
    let mut out = format!("\nRun status group {gid} (all jobs):\n");
    let pow2 = jobs.first().is_none_or(|j| j.kb_base == 1024);
    let sig = jobs.first().map(|j| j.sig_figs as usize).unwrap_or(4);
    for (d, name) in ["   READ", "  WRITE", "   TRIM"].iter().enumerate() {
        let bytes: u64 = jobs.iter().map(|j| j.stats.dd[d].io_bytes).sum();
        if bytes == 0 {
            continue;
        }
        let agg = group_bw.get(gid, d);
        let bws: Vec<u64> = jobs
            .iter()
            .filter(|j| j.ddir_runtime(d) > 0)
            .map(|j| j.stats.dd[d].io_bytes * 1000 / j.ddir_runtime(d))
            .collect();
        let runs: Vec<u64> = jobs
            .iter()
            .map(|j| j.ddir_runtime(d))
            .filter(|&r| r > 0)
            .collect();
        let (minb, maxb) = (
            bws.iter().copied().min().unwrap_or(0),
            bws.iter().copied().max().unwrap_or(0),
        );
        out.push_str(&format!(
            "{name}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec\n",
            num2str(agg, sig, pow2, "B/s"),
            num2str(agg, sig, !pow2, "B/s"),
            num2str(minb, sig, pow2, "B/s"),
            num2str(maxb, sig, pow2, "B/s"),
            num2str(minb, sig, !pow2, "B/s"),
            num2str(maxb, sig, !pow2, "B/s"),
            num2str(bytes, sig, pow2, "B"),
            num2str(bytes, sig, !pow2, "B"),
            runs.iter().min().unwrap_or(&0),
            runs.iter().max().unwrap_or(&0)
        ));
    }
    out
}

/// glibc's `strerror()` of the errnos a simulated I/O can end in.
fn strerror(errno: i32) -> &'static str {
    [IoErr::Eio, IoErr::Enospc, IoErr::Etimedout]
        .into_iter()
        .find(|e| e.errno() == errno)
        .map_or("Success", IoErr::strerror)
}

/// The whole normal output of one run: job headers, the lines fio prints while the
/// jobs run (errors), per-job blocks, group lines.
pub fn to_normal(run: &RunReport) -> String {
    gathered(|mut emit| write_normal(run, &mut emit))
}

/// [`to_normal`], piece by piece to `emit` (a job's block at a time): a run of many
/// jobs prints its report without holding it whole.
pub fn write_normal<E>(
    run: &RunReport,
    emit: &mut impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    for j in &run.jobs {
        emit(&format!("{}: (g={}): {}\n", j.name, j.groupid, j.header))?;
    }
    let n = run.jobs.iter().map(|j| j.jobs).sum::<u32>();
    emit(&format!(
        "{}\nStarting {n} process{}\n",
        run.version,
        if n == 1 { "" } else { "es" }
    ))?;
    for m in &run.messages {
        emit(&m.text)?;
        emit("\n")?;
    }
    emit("\n")?;
    let group_bw = GroupBw::of(&run.jobs);
    for j in &run.jobs {
        emit(&job_block(j, &group_bw))?;
    }
    // each group once, in groupid order, though the jobs of several cgroups' fio
    // processes interleave their groups (a, b with stonewall: 0, 1, 0, 1)
    for g in group_bw.groupids() {
        let jobs: Vec<&JobReport> = run.jobs.iter().filter(|j| j.groupid == g).collect();
        emit(&group_block(g, &jobs, &group_bw))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_as_fio() {
        // from a real fio 3.33 run: "IOPS=88, BW=623KiB/s (638kB/s)(1869KiB/3001msec)"
        assert_eq!(num2str(88, 4, false, ""), "88");
        assert_eq!(
            num2str(1869 * 1024 * 1000 / 3001, 4, true, "B/s"),
            "623KiB/s"
        );
        assert_eq!(
            num2str(1869 * 1024 * 1000 / 3001, 4, false, "B/s"),
            "638kB/s"
        );
        assert_eq!(num2str(1869 * 1024, 4, true, "B"), "1869KiB");
        // "BW=37.3MiB/s (39.1MB/s)(74.6MiB/...)"
        assert_eq!(num2str(39_100_000, 4, true, "B/s"), "37.3MiB/s");
        assert_eq!(num2str(9549, 4, false, ""), "9549");
        // display_lat's max: "max=52572k"
        assert_eq!(num2str(52_572_000, 6, false, ""), "52572k");
        // a fraction rounding up to 1 carries (fio 3.33 prints 10.00MiB/s here)
        assert_eq!(num2str(10_484_974, 4, true, "B/s"), "10.00MiB/s");
    }

    #[test]
    fn latency_line_units() {
        let mut s = LatStat::default();
        for v in [15_000u64, 51_609_000] {
            s.add(v);
        }
        assert!(lat_line("clat", &s).starts_with("    clat (usec): min=15, max=51609,"));
        let mut n = LatStat::default();
        n.add(500);
        assert!(lat_line("slat", &n).starts_with("    slat (nsec): min=500, max=500,"));
    }
}
