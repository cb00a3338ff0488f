//! Real beside simulated: the same figures read from both sides' fio JSON, and the
//! blk-iocost vrate trajectories.
//!
//! Design
//! ------
//! Both sides are fio JSON documents (real fio's, ours), so one reader
//! ([`job_figures`]) serves both: per job and direction with I/O, IOPS, MiB/s, slat and
//! clat means, clat p50/p90/p95/p99/p99.9 and max. [`table`] lines them up by job name
//! and direction; with several real runs it shows their mean and range, so a
//! difference can be judged against the kernel's own run-to-run noise. The vrate
//! trajectory of the real side comes from the `iocost_ioc_vrate_adj` tracepoint
//! (timestamps relative to the first `iocost_iocg_activate`, i.e. the first I/O), the
//! simulated one from the period rows, both sampled once a second ([`vrate_table`]).

use crate::report::summary::fmt_figure;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::iocost::model::VTIME_PER_USEC;

/// The figures compared, with how to read each from one direction of a fio job.
pub const FIGURES: [(&str, &str); 10] = [
    ("IOPS", "iops"),
    ("MiB/s", "bw_bytes"),
    ("slat mean µs", "slat_ns.mean"),
    ("clat mean µs", "clat_ns.mean"),
    ("clat p50 µs", "clat_ns.percentile.50.000000"),
    ("clat p90 µs", "clat_ns.percentile.90.000000"),
    ("clat p95 µs", "clat_ns.percentile.95.000000"),
    ("clat p99 µs", "clat_ns.percentile.99.000000"),
    ("clat p99.9 µs", "clat_ns.percentile.99.900000"),
    ("clat max µs", "clat_ns.max"),
];

/// (job name, direction) → one value per figure.
pub type Figures = BTreeMap<(String, String), Vec<Option<f64>>>;

fn lookup(dir: &Value, path: &str) -> Option<f64> {
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let v = dir.get(head)?;
    let v = match head {
        "slat_ns" | "clat_ns" => {
            let (k, p) = rest.split_once('.').unwrap_or((rest, ""));
            if k == "percentile" {
                v.get("percentile")?.get(p)?
            } else {
                v.get(k)?
            }
        }
        _ => v,
    };
    let x = v.as_f64()?;
    Some(match path {
        "bw_bytes" => x / 1_048_576.0,
        p if p.ends_with("_ns") || p.contains("_ns.") => x / 1000.0,
        _ => x,
    })
}

/// Every job × direction with I/O in a fio JSON document. `round_of(i)` says which
/// successive fio run (`fio = [...]`) the document's i-th job belongs to: a job of a
/// later run is keyed `name #k` so a job file run twice compares run by run.
pub fn job_figures(doc: &Value, round_of: impl Fn(usize) -> u32) -> Figures {
    let mut out = Figures::new();
    for (i, job) in doc
        .get("jobs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let jobname = job.get("jobname").and_then(Value::as_str).unwrap_or("?");
        let name = crate::report::summary::job_label("", jobname, round_of(i));
        for dir in ["read", "write", "trim", "mixed"] {
            let Some(d) = job.get(dir) else { continue };
            if d.get("total_ios").and_then(Value::as_u64).unwrap_or(0) == 0 {
                continue;
            }
            let vals = FIGURES.iter().map(|(_, p)| lookup(d, p)).collect();
            out.insert((name.clone(), dir.to_string()), vals);
        }
    }
    out
}

/// Figure `i` of `key` in every run that has it.
fn runs_of(real: &[Figures], key: &(String, String), i: usize) -> Vec<f64> {
    real.iter()
        .filter_map(|r| r.get(key).and_then(|v| v[i]))
        .collect()
}

fn mean_of(runs: &[f64]) -> Option<f64> {
    (!runs.is_empty()).then(|| runs.iter().sum::<f64>() / runs.len() as f64)
}

/// The figures of several runs, each the mean over the runs that have it.
pub fn mean(real: &[Figures]) -> Figures {
    let mut keys: Vec<&(String, String)> = real.iter().flat_map(|r| r.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let vals = (0..FIGURES.len())
                .map(|i| mean_of(&runs_of(real, k, i)))
                .collect();
            (k.clone(), vals)
        })
        .collect()
}

/// The figures of [`FIGURES`] that the before/after table shows.
const AB_FIGURES: [usize; 6] = [0, 2, 3, 5, 7, 9];

/// Before/after across kernels: per job and direction, each kernel's real (mean over
/// its runs) and simulated headline figures side by side, the kernels named by
/// `labels` (short column names) in the order given.
pub fn ab_table(labels: &[String], sides: &[(Figures, Figures)]) -> String {
    let mut keys: Vec<&(String, String)> = sides
        .iter()
        .flat_map(|(r, m)| r.keys().chain(m.keys()))
        .collect();
    keys.sort();
    keys.dedup();
    let w = labels
        .iter()
        .map(|l| l.len() + 5)
        .max()
        .unwrap_or(0)
        .max(10);
    let mut s = String::new();
    let _ = write!(s, "{:<22} {:<15}", "JOB", "FIGURE");
    for l in labels {
        let _ = write!(s, " {:>w$} {:>w$}", format!("{l} real"), format!("{l} sim"));
    }
    s.push('\n');
    for key in keys {
        let job = format!("{} {}", key.0, key.1);
        for (n, &i) in AB_FIGURES.iter().enumerate() {
            let _ = write!(
                s,
                "{:<22} {:<15}",
                if n == 0 { job.as_str() } else { "" },
                FIGURES[i].0
            );
            for (real, sim) in sides {
                let cell = |f: &Figures| {
                    f.get(key)
                        .and_then(|v| v[i])
                        .map(fmt_figure)
                        .unwrap_or_else(|| "-".into())
                };
                let _ = write!(s, " {:>w$} {:>w$}", cell(real), cell(sim));
            }
            s.push('\n');
        }
    }
    s
}

/// One figure of one job in the side-by-side table.
pub struct Row {
    pub label: &'static str,
    /// The mean over the real runs that have it.
    pub real: Option<f64>,
    /// The smallest and largest real value (several runs only).
    pub range: Option<(f64, f64)>,
    /// The mean over the simulated seeds that have it.
    pub sim: Option<f64>,
    /// The smallest and largest simulated value (several seeds only).
    pub sim_range: Option<(f64, f64)>,
}

impl Row {
    /// sim / real, where both exist and real is not 0.
    pub fn ratio(&self) -> Option<f64> {
        match (self.sim, self.real) {
            (Some(a), Some(b)) if b != 0.0 => Some(a / b),
            _ => None,
        }
    }
}

/// The smallest and largest of `runs`, when they come from several runs.
fn min_max(of_runs: usize, runs: &[f64]) -> Option<(f64, f64)> {
    (of_runs > 1 && !runs.is_empty()).then(|| {
        let lo = runs.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = runs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    })
}

/// Per job and direction (sorted), every figure of [`FIGURES`] real beside simulated:
/// `real` has one [`Figures`] per run, `sim` one per seed.
pub fn rows(real: &[Figures], sim: &[Figures]) -> Vec<(String, String, Vec<Row>)> {
    let mut keys: Vec<&(String, String)> = Vec::new();
    for r in sim.iter().chain(real) {
        for k in r.keys() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let rows = FIGURES
                .iter()
                .enumerate()
                .map(|(i, (label, _))| {
                    let runs = runs_of(real, key, i);
                    let seeds = runs_of(sim, key, i);
                    Row {
                        label,
                        real: mean_of(&runs),
                        range: min_max(real.len(), &runs),
                        sim: mean_of(&seeds),
                        sim_range: min_max(sim.len(), &seeds),
                    }
                })
                .collect();
            (key.0.clone(), key.1.clone(), rows)
        })
        .collect()
}

/// A figure as the tables print it, `-` where there is none.
pub fn cell(v: Option<f64>) -> String {
    v.map(fmt_figure).unwrap_or_else(|| "-".into())
}

/// A min..max cell, `-` where there is none.
fn range_cell(r: Option<(f64, f64)>) -> String {
    r.map_or("-".into(), |(lo, hi)| {
        format!("{}..{}", fmt_figure(lo), fmt_figure(hi))
    })
}

/// The side-by-side table: `real` has one [`Figures`] per run, `sim` one per seed;
/// with several of either, their mean and min..max.
pub fn table(real: &[Figures], sim: &[Figures]) -> String {
    let mut s = String::new();
    let (many, seeds) = (real.len() > 1, sim.len() > 1);
    let head = |many: bool, what: &str| {
        if many {
            format!(
                "{:>10} {:>21}",
                format!("{what} mean"),
                format!("{what} min..max")
            )
        } else {
            format!("{what:>10}")
        }
    };
    for (job, dir, rows) in rows(real, sim) {
        let _ = writeln!(s, "fio job `{job}`, {dir}:");
        let _ = writeln!(
            s,
            "  {:<15} {} {} {:>9}",
            "",
            head(many, "real"),
            head(seeds, "sim"),
            "sim/real"
        );
        for r in rows {
            let ratio = r.ratio().map_or("-".into(), |x| format!("{x:.2}"));
            let side = |many: bool, mean: Option<f64>, range: Option<(f64, f64)>| {
                if many {
                    format!("{:>10} {:>21}", cell(mean), range_cell(range))
                } else {
                    format!("{:>10}", cell(mean))
                }
            };
            let _ = writeln!(
                s,
                "  {:<15} {} {} {ratio:>9}",
                r.label,
                side(many, r.real, r.range),
                side(seeds, r.sim, r.sim_range)
            );
        }
    }
    s
}

/// What the colours of [`table_html`]'s ratios mean, and what to make of each.
pub const RATIO_LEGEND_HTML: &str = "<p class=\"legend\">sim/real: \
<span class=\"ok\">&nbsp;within 5%&nbsp;</span> the simulation reproduces the real \
kernel; <span class=\"near\">&nbsp;within 20%&nbsp;</span> about the spread of a guest \
under qemu from one boot to the next (compare the real min..max column when it \
ran more than once: <code>--runs N</code>); <span class=\"off\">&nbsp;beyond 20%&nbsp;\
</span> a difference to explain: the scenario's description above says which ones \
are expected and why, <code>docs/validation.md</code> lists every one we know. A \
figure of a job that completed nothing shows <code>-</code>.</p>\n";

/// The side-by-side table as HTML for `report.html`: each sim/real ratio coloured by
/// how far it is from 1 (within 5%, within 20%, beyond), explained by
/// [`RATIO_LEGEND_HTML`].
pub fn table_html(real: &[Figures], sim: &[Figures]) -> String {
    use crate::report::html::escape;
    let (many, seeds) = (real.len() > 1, sim.len() > 1);
    let range_td = |on: bool, r: Option<(f64, f64)>| {
        if on {
            format!("<td>{}</td>", range_cell(r))
        } else {
            String::new()
        }
    };
    let mut s = String::new();
    for (job, dir, rows) in rows(real, sim) {
        let _ = write!(
            s,
            "<table><caption>fio job <code>{}</code>, {dir}</caption>\n<tr><th></th>\
             <th>{}</th>{}<th>{}</th>{}<th>sim/real</th></tr>\n",
            escape(&job),
            if many { "real mean" } else { "real" },
            if many { "<th>real min..max</th>" } else { "" },
            if seeds { "sim mean" } else { "sim" },
            if seeds { "<th>sim min..max</th>" } else { "" }
        );
        for r in rows {
            let ratio = match r.ratio() {
                Some(x) => {
                    let class = match (x - 1.0).abs() {
                        d if d <= 0.05 => "ok",
                        d if d <= 0.20 => "near",
                        _ => "off",
                    };
                    format!("<td class=\"{class}\">{x:.2}</td>")
                }
                None => "<td>-</td>".into(),
            };
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td>{}<td>{}</td>{}{ratio}</tr>",
                r.label,
                cell(r.real),
                range_td(many, r.range),
                cell(r.sim),
                range_td(seeds, r.sim_range)
            );
        }
        s.push_str("</table>\n");
    }
    s
}

/// The base vrate trajectory from an ftrace buffer: (seconds since the first
/// `iocost_iocg_activate`, else since our `blkcg-sim-start` marker; base vrate % after
/// each adjustment).
///
/// The tracepoint prints `vrate=OLD->NEW` where OLD is the effective `vtime_rate` (loss
/// compensation included). `ioc_adjust_base_vrate()` fires it on two paths: when it
/// adjusts (NEW = the new base rate) and when it returns early — busy_level 0, or
/// negative with lagging iocgs — where NEW is the effective rate again and the base is
/// unchanged. Only the first kind moves the base.
pub fn real_vrate(trace: &str) -> Vec<(f64, f64)> {
    let stamp = |l: &str| -> Option<f64> {
        // "  task-1  [000] d..1.  12.345678: event: ..."
        let before = l.split(": ").next()?;
        before.split_whitespace().last()?.parse().ok()
    };
    let field = |l: &str, key: &str| -> Option<i64> {
        l.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse().ok())
    };
    // time 0 is the first activation (the first I/O), as in the simulation: fio's
    // own start-up after our marker takes a few hundred ms of guest time
    let first = |what: &str| trace.lines().find(|l| l.contains(what)).and_then(stamp);
    let t0 = first("iocost_iocg_activate:").or_else(|| first("blkcg-sim-start"));
    let mut out = Vec::new();
    for l in trace
        .lines()
        .filter(|l| l.contains("iocost_ioc_vrate_adj:"))
    {
        let (Some(busy), Some(lagging)) = (field(l, "busy="), field(l, "lagging=")) else {
            continue;
        };
        let early_return = busy == 0 || (busy < 0 && lagging > 0);
        if !early_return
            && let (Some(t), Some(v)) = (stamp(l), l.split("->").nth(1))
            && let Some(pct) = vrate_pct(v.split_whitespace().next().unwrap_or(""))
        {
            out.push((t - t0.unwrap_or(0.0), pct));
        }
    }
    out
}

/// One second of the device timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskSecond {
    pub r_iops: f64,
    pub w_iops: f64,
    pub r_mib: f64,
    pub w_mib: f64,
    /// Merges a second (`rrqm/s`, `wrqm/s`).
    pub r_merges: f64,
    pub w_merges: f64,
}

/// Per-second rates from `UPTIME <fields of /sys/block/NAME/stat>` samples (fields 1–3,
/// 5–7: read I/Os, read merges, read sectors, write I/Os, write merges, write sectors).
pub fn real_iostat(diskstat: &str) -> Vec<DiskSecond> {
    let samples: Vec<(f64, [f64; 6])> = diskstat
        .lines()
        .filter_map(|l| {
            let f: Vec<f64> = l.split_whitespace().map_while(|w| w.parse().ok()).collect();
            (f.len() >= 8).then(|| (f[0], [f[1], f[3], f[5], f[7], f[2], f[6]]))
        })
        .collect();
    samples
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| {
            let dt = w[1].0 - w[0].0;
            let d = |i: usize| (w[1].1[i] - w[0].1[i]) / dt;
            DiskSecond {
                r_iops: d(0),
                w_iops: d(2),
                r_mib: d(1) * 512.0 / 1_048_576.0,
                w_mib: d(3) * 512.0 / 1_048_576.0,
                r_merges: d(4),
                w_merges: d(5),
            }
        })
        .collect()
}

/// The device timeline of both sides, second by second.
pub fn iostat_table(real: &[DiskSecond], sim: &[DiskSecond]) -> String {
    let side = |r: &str| {
        format!(
            "{r:>9} {:>9} {:>9} {:>9} {:>8} {:>8}",
            "w/s", "rMiB/s", "wMiB/s", "rrqm/s", "wrqm/s"
        )
    };
    let mut s = format!(
        "{:>5}  {}   {}\n",
        "t(s)",
        side("real r/s"),
        side("sim r/s")
    );
    let cells = |d: Option<&DiskSecond>| match d {
        Some(d) => format!(
            "{:>9.1} {:>9.1} {:>9.2} {:>9.2} {:>8.1} {:>8.1}",
            d.r_iops, d.w_iops, d.r_mib, d.w_mib, d.r_merges, d.w_merges
        ),
        None => format!(
            "{:>9} {:>9} {:>9} {:>9} {:>8} {:>8}",
            "-", "-", "-", "-", "-", "-"
        ),
    };
    for t in 0..real.len().max(sim.len()) {
        let _ = writeln!(s, "{t:>5}  {}   {}", cells(real.get(t)), cells(sim.get(t)));
    }
    s
}

/// The page cache each second, MiB: (dirty, under writeback).
pub type PageCacheSecond = (f64, f64);

/// Per-second page cache from `UPTIME Dirty: N kB Writeback: N kB` lines
/// (`/proc/meminfo`), the first sample at second 0.
pub fn real_dirty(text: &str) -> Vec<PageCacheSecond> {
    let mib = |kb: &str| kb.parse::<f64>().ok().map(|k| k / 1024.0);
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1));
            Some((mib(at("Dirty:")?)?, mib(at("Writeback:")?)?))
        })
        .collect()
}

/// The page cache of both sides second by second, then the most dirty and under
/// writeback at once on each (the plateau a writer's pages settle at).
pub fn dirty_table(real: &[PageCacheSecond], sim: &[PageCacheSecond]) -> String {
    let mut s = format!(
        "{:>5}  {:>9} {:>9}   {:>9} {:>9}\n",
        "t(s)", "real MiB", "writeback", "sim MiB", "writeback"
    );
    let cells = |d: Option<&PageCacheSecond>| match d {
        Some(&(dirty, wb)) => format!("{dirty:>9.1} {wb:>9.1}"),
        None => format!("{:>9} {:>9}", "-", "-"),
    };
    for t in 0..real.len().max(sim.len()) {
        let _ = writeln!(s, "{t:>5}  {}   {}", cells(real.get(t)), cells(sim.get(t)));
    }
    let peak = |v: &[PageCacheSecond]| v.iter().map(|(d, w)| d + w).fold(0.0, f64::max);
    let (r, m) = (peak(real), peak(sim));
    let ratio = if r > 0.0 {
        format!("{:.2}", m / r)
    } else {
        "-".into()
    };
    let _ = writeln!(
        s,
        "most dirty + under writeback at once: real {r:.1} MiB, sim {m:.1} MiB, sim/real {ratio}"
    );
    s
}

/// A tracepoint's vrate: `126.23%` (newer kernels print a percentage), or the raw
/// `vtime_base_rate` (6.1 prints `137438` for 100%: `VTIME_PER_USEC`).
fn vrate_pct(v: &str) -> Option<f64> {
    match v.strip_suffix('%') {
        Some(p) => p.parse().ok(),
        None => v
            .parse::<f64>()
            .ok()
            .map(|raw| raw * 100.0 / VTIME_PER_USEC as f64),
    }
}

/// Every tenth of a second through the first, then once a second: the vrate in force on each side (the last value at or before t).
pub fn vrate_table(real: &[(f64, f64)], sim: &[(f64, f64)], seconds: u64) -> String {
    let at = |series: &[(f64, f64)], t: f64| {
        series
            .iter()
            .take_while(|(ts, _)| *ts <= t)
            .last()
            .map(|(_, v)| format!("{v:.2}%"))
            .unwrap_or_else(|| "-".into())
    };
    let mut s = format!("{:>6} {:>12} {:>12}\n", "t(s)", "real vrate", "sim vrate");
    // tenths through the first second, where vrate moves most, then whole seconds
    let times = (1..10)
        .map(|d| d as f64 / 10.0)
        .chain((1..=seconds).map(|t| t as f64));
    for t in times {
        let _ = writeln!(s, "{t:>6.1} {:>12} {:>12}", at(real, t), at(sim, t));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_html_table_colours_each_ratio_by_its_distance_from_one() {
        let figs = |iops: f64, clat: f64, p50: f64| -> Figures {
            let mut v = vec![None; FIGURES.len()];
            (v[0], v[3], v[4]) = (Some(iops), Some(clat), Some(p50));
            [(("<a>".to_string(), "read".to_string()), v)].into()
        };
        let html = table_html(&[figs(100.0, 1000.0, 10.0)], &[figs(104.0, 1150.0, 30.0)]);
        assert!(html.contains("<caption>fio job <code>&lt;a&gt;</code>, read</caption>"));
        assert!(
            html.contains("<td>IOPS</td><td>100.0</td><td>104.0</td><td class=\"ok\">1.04</td>")
        );
        assert!(html.contains("<td class=\"near\">1.15</td>"), "{html}");
        assert!(html.contains("<td class=\"off\">3.00</td>"), "{html}");
        // a figure neither side has: no ratio, no colour
        assert!(html.contains("<td>MiB/s</td><td>-</td><td>-</td><td>-</td>"));
        // several real runs: their mean and range
        let two = table_html(
            &[figs(90.0, 1.0, 1.0), figs(110.0, 1.0, 1.0)],
            &[figs(100.0, 1.0, 1.0)],
        );
        assert!(
            two.contains("<td>IOPS</td><td>100.0</td><td>90.0..110.0</td><td>100.0</td>"),
            "{two}"
        );
        // several seeds too: theirs
        let seeds = table_html(
            &[figs(90.0, 1.0, 1.0), figs(110.0, 1.0, 1.0)],
            &[figs(30.0, 1.0, 1.0), figs(200.0, 1.0, 1.0)],
        );
        assert!(
            seeds.contains(
                "<td>IOPS</td><td>100.0</td><td>90.0..110.0</td><td>115.0</td><td>30.0..200.0</td>"
            ),
            "{seeds}"
        );
    }

    #[test]
    fn before_after_lines_up_each_kernel_real_and_sim() {
        let figs = |iops: f64, clat: f64| -> Figures {
            let mut v = vec![None; FIGURES.len()];
            v[0] = Some(iops);
            v[3] = Some(clat);
            [(("cgB".to_string(), "mixed".to_string()), v)].into()
        };
        // two real runs on the stock kernel: their mean
        let stock_real = mean(&[figs(4.0, 180_000.0), figs(6.0, 200_000.0)]);
        assert_eq!(stock_real[&("cgB".into(), "mixed".into())][0], Some(5.0));
        let t = ab_table(
            &["A".into(), "B".into()],
            &[
                (stock_real, figs(5.5, 185_000.0)),
                (figs(200.0, 2000.0), figs(199.0, 2100.0)),
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + AB_FIGURES.len(), "{t}");
        let cols = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            cols(lines[0])[2..],
            ["A", "real", "A", "sim", "B", "real", "B", "sim"]
        );
        assert_eq!(
            cols(lines[1]),
            ["cgB", "mixed", "IOPS", "5.00", "5.50", "200.0", "199.0"]
        );
        assert_eq!(
            cols(lines[3]),
            ["clat", "mean", "µs", "190000", "185000", "2000", "2100"]
        );
        // a figure neither side has
        assert_eq!(cols(lines[2]), ["slat", "mean", "µs", "-", "-", "-", "-"]);
    }

    #[test]
    fn figures_from_a_real_fio_document() {
        let doc: Value =
            serde_json::from_str(include_str!("../../tests/data/fio/null-randrw.json"))
                .expect("golden fio JSON");
        let f = job_figures(&doc, |_| 0);
        let read = f
            .iter()
            .find(|((_, d), _)| d == "read")
            .map(|(_, v)| v.clone())
            .expect("a read direction");
        assert!(read[0].is_some_and(|iops| iops > 0.0));
        assert!(read[4].is_some(), "p50 present");
        assert!(read.iter().all(Option::is_some));
    }

    #[test]
    fn ratios_and_ranges() {
        let key = ("a".to_string(), "read".to_string());
        let mk = |iops: f64| {
            let mut f = Figures::new();
            f.insert(key.clone(), vec![Some(iops); FIGURES.len()]);
            f
        };
        let t = table(&[mk(100.0)], &[mk(99.0)]);
        assert!(t.contains("fio job `a`, read:"));
        assert!(
            t.lines()
                .any(|l| l.contains("IOPS") && l.trim_end().ends_with("0.99")),
            "{t}"
        );
        let t = table(&[mk(98.0), mk(102.0)], &[mk(100.0)]);
        assert!(t.contains("98.0..102"), "{t}");
        assert!(!t.contains("sim min..max"), "{t}");
        // several seeds: the sim mean, its range, and the ratio of the means
        let t = table(&[mk(100.0)], &[mk(50.0), mk(150.0)]);
        assert!(t.contains("sim min..max"), "{t}");
        assert!(
            t.lines()
                .any(|l| l.contains("IOPS") && l.contains("50.0..150") && l.ends_with("1.00")),
            "{t}"
        );
    }

    #[test]
    fn iostat_from_diskstat_samples() {
        let d = "10.00 0 0 0 0 100 0 2048 5 0 0 0\n11.00 10 30 80 1 300 7 4096 9 0 0 0\n";
        let r = real_iostat(d);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].r_iops, 10.0);
        assert_eq!(r[0].w_iops, 200.0);
        assert_eq!((r[0].r_merges, r[0].w_merges), (30.0, 7.0));
        assert!((r[0].w_mib - 1.0).abs() < 1e-9);
        let t = iostat_table(&r, &[]);
        assert!(
            t.lines()
                .nth(1)
                .is_some_and(|l| l.contains("200.0") && l.ends_with("-")),
            "{t}"
        );
    }

    #[test]
    fn vrate_from_ftrace() {
        let tr = "# tracer: nop\n\
                  sh-1 [000] ..... 10.000000: tracing_mark_write: blkcg-sim-start\n\
                  kworker/0:1-9 [000] ..s1. 10.500000: iocost_ioc_vrate_adj: [nullb0] vrate=100.00%->98.50% busy=1 missed_ppm=0:0 rq_wait_pct=0 lagging=0 shortages=0\n\
                  kworker/0:1-9 [000] ..s1. 10.600000: iocost_ioc_vrate_adj: [nullb0] vrate=200.00%->200.00% busy=0 missed_ppm=0:0 rq_wait_pct=0 lagging=1 shortages=0\n";
        let v = real_vrate(tr);
        // the second line returned early: its 200% is the effective rate, not the base
        assert_eq!(v, vec![(0.5, 98.5)]);
        // 6.1 prints the raw vtime_base_rate
        let raw = tr.replace("vrate=100.00%->98.50%", "vrate=137438->206157");
        assert_eq!(real_vrate(&raw)[0].1.round(), 150.0);
        let t = vrate_table(&v, &[(0.2, 100.0)], 1);
        assert!(t.contains("98.50%") && t.contains("100.00%"), "{t}");
    }
}

#[cfg(test)]
mod dirty_tests {
    use super::*;

    #[test]
    fn meminfo_samples_become_seconds_and_the_plateau() {
        let text =
            "5.01 Dirty: 1024 kB Writeback: 0 kB \n6.01 Dirty: 204800 kB Writeback: 10240 kB \n";
        let real = real_dirty(text);
        assert_eq!(real, vec![(1.0, 0.0), (200.0, 10.0)]);
        let t = dirty_table(&real, &[(2.0, 0.0), (190.0, 9.0)]);
        assert!(
            t.contains("real 210.0 MiB, sim 199.0 MiB, sim/real 0.95"),
            "{t}"
        );
    }
}
