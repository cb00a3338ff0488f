//! The seeds' summary table (`CGROUP IOPS MiB/s slat-avg clat-avg clat-max P90 P99
//! P99.9 P99.99`, as the iocost seed's `get_result` prints it — whose `MB/s` is
//! `bw_bytes / 1024 / 1024`, so here it is headed MiB/s, and every latency column with
//! its unit, ms), the `iostat -x 1` style device timeline, the clat percentile picture,
//! and the A/B table that sets the runs of several variants or kernels side by side.

use crate::report::plot::{Panel, Series, percentile_x};
use crate::sim::iostat::IostatRow;

/// One job's headline figures, as the seed scripts extract them from fio's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSummary {
    /// Cgroup path the job ran in.
    pub cgroup: String,
    pub job: String,
    /// Which of the cgroup's successive fio runs (from 0).
    pub round: u32,
    /// fio `iops` (reads + writes, or `mixed`).
    pub iops: f64,
    /// `bw_bytes / 1024 / 1024`.
    pub mib_s: f64,
    pub slat_mean_ms: f64,
    pub clat_mean_ms: f64,
    pub clat_max_ms: f64,
    /// (percentile, clat in ms) as fio reports them (bucketed).
    pub clat_pct_ms: Vec<(f64, f64)>,
    /// The I/O priority its bios carry when not the default
    /// (`crate::ioprio::prio_label`): a `PRIO` column shows it.
    pub prio: Option<String>,
    /// A replaying job's lateness, each I/O's issue against its time in the log:
    /// mean, P99 and max in ms (`crate::sim::fio::replay`).
    pub lateness_ms: Option<[f64; 3]>,
}

impl JobSummary {
    /// clat percentile `p` in ms, if fio reported it.
    pub fn pct(&self, p: f64) -> Option<f64> {
        self.clat_pct_ms
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|x| x.1)
    }
}

/// How tables and pictures name a job: `cgroup/job`, or `job` alone when it is named
/// after its cgroup (or runs in the root); ` #N` for the cgroup's N-th fio run from the
/// second on.
pub fn job_label(cgroup: &str, job: &str, round: u32) -> String {
    let name = if cgroup == job || cgroup.is_empty() {
        job.to_string()
    } else {
        format!("{cgroup}/{job}")
    };
    if round == 0 {
        name
    } else {
        format!("{name} #{}", round + 1)
    }
}

/// Each job's clat percentiles as fio reports them (1st to 99.99th), latency on a log
/// axis: the latency CDF turned on its side, so tails of cgroups that differ by orders
/// of magnitude stay readable. Each percentile `p` is at x = `plot::percentile_x(p)`,
/// for a picture drawn with `plot::XScale::Percentile`: p90, p99, p99.9 and p99.99
/// evenly apart, the tail as wide as the body (a 100th percentile, at infinity, is
/// left out).
pub fn clat_percentile_panel(rows: &[JobSummary]) -> Panel {
    Panel {
        y_label: "clat (ms)".into(),
        series: rows
            .iter()
            .map(|r| Series {
                name: job_label(&r.cgroup, &r.job, r.round),
                points: r
                    .clat_pct_ms
                    .iter()
                    .filter(|(p, _)| *p < 100.0)
                    .map(|&(p, ms)| (percentile_x(p), ms))
                    .collect(),
            })
            .collect(),
        log_y: true,
    }
}

/// A figure with the precision a reader needs: whole numbers from 1000, one decimal
/// from 10, two down to 0.1, three significant digits below (0.00520).
pub fn fmt_figure(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else {
        let digits = 2 - a.log10().floor() as i32;
        format!("{v:.*}", digits.clamp(2, 12) as usize)
    }
}

/// The A/B table of `blkcg-sim run` with several variants or kernels: per job, each
/// headline figure of every run side by side, with its ratio to the first run's, so
/// what a patch or a kernel version changes reads off one table. `runs` holds each
/// run's label and summary rows; a job missing from a run shows `-`.
pub fn ab_table(runs: &[(&str, &[JobSummary])]) -> String {
    type Figure = fn(&JobSummary) -> Option<f64>;
    const FIGURES: [(&str, Figure); 9] = [
        ("IOPS", |r| Some(r.iops)),
        ("MiB/s", |r| Some(r.mib_s)),
        ("slat avg ms", |r| Some(r.slat_mean_ms)),
        ("clat avg ms", |r| Some(r.clat_mean_ms)),
        ("clat P50 ms", |r| r.pct(50.0)),
        ("clat P90 ms", |r| r.pct(90.0)),
        ("clat P99 ms", |r| r.pct(99.0)),
        ("clat P99.9 ms", |r| r.pct(99.9)),
        ("clat max ms", |r| Some(r.clat_max_ms)),
    ];
    let label = |r: &JobSummary| job_label(&r.cgroup, &r.job, r.round);
    let mut jobs: Vec<String> = Vec::new();
    for (_, rows) in runs {
        for r in rows.iter() {
            if !jobs.contains(&label(r)) {
                jobs.push(label(r));
            }
        }
    }
    let Some((first, _)) = runs.first() else {
        return String::new();
    };
    let job_w = jobs.iter().map(String::len).max().unwrap_or(3).max(3);
    let col_w = runs.iter().map(|(l, _)| l.len()).max().unwrap_or(0).max(16);
    let mut s = format!(
        "A/B: each run against the first ({first}), the ratio in brackets
"
    );
    s += &format!("{:<job_w$}  {:<13}", "JOB", "FIGURE");
    for (l, _) in runs {
        s += &format!(" {l:>col_w$}");
    }
    s.push('\n');
    for job in &jobs {
        let of = |rows: &[JobSummary]| rows.iter().find(|r| label(r) == *job).cloned();
        let found: Vec<Option<JobSummary>> = runs.iter().map(|(_, rows)| of(rows)).collect();
        for (k, (name, get)) in FIGURES.iter().enumerate() {
            let shown = if k == 0 { job.as_str() } else { "" };
            s += &format!("{shown:<job_w$}  {name:<13}");
            let base = found[0].as_ref().and_then(get);
            for (i, r) in found.iter().enumerate() {
                let cell = match (r.as_ref().and_then(get), base) {
                    (Some(v), Some(b)) if i > 0 && b != 0.0 => {
                        format!("{} ({})", fmt_figure(v), fmt_figure(v / b))
                    }
                    (Some(v), _) => fmt_figure(v),
                    (None, _) => "-".into(),
                };
                s += &format!(" {cell:>col_w$}");
            }
            s.push('\n');
        }
    }
    s
}

/// The summary table; a `PRIO` column at the end when a job's priority is not the
/// default.
pub fn summary_table(rows: &[JobSummary]) -> String {
    let prio = rows.iter().any(|r| r.prio.is_some());
    let mut s = String::new();
    s.push_str(&format!(
        "{:<14} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}\n",
        "", "", "", "slat", "clat", "clat", "clat", "clat", "clat", "clat"
    ));
    s.push_str(&format!(
        "{:<14} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}{}\n",
        "CGROUP",
        "IOPS",
        "MiB/s",
        "avg(ms)",
        "avg(ms)",
        "max(ms)",
        "P90(ms)",
        "P99(ms)",
        "P99.9(ms)",
        "P99.99(ms)",
        if prio { "  PRIO" } else { "" }
    ));
    for r in rows {
        let label = job_label(&r.cgroup, &r.job, r.round);
        let p = |q: f64| {
            r.pct(q)
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "-".into())
        };
        let prio = match (&r.prio, prio) {
            (Some(p), _) => format!("  {p}"),
            (None, true) => "  -".into(),
            (None, false) => String::new(),
        };
        s.push_str(&format!(
            "{:<14} {:>7.0} {:>8.2} {:>9.2} {:>9.2} {:>9.2} {:>9} {:>9} {:>10} {:>10}{prio}\n",
            label,
            r.iops,
            r.mib_s,
            r.slat_mean_ms,
            r.clat_mean_ms,
            r.clat_max_ms,
            p(90.0),
            p(99.0),
            p(99.9),
            p(99.99)
        ));
    }
    s + &lateness_lines(rows)
}

/// The replaying jobs' lateness under the table: how far each job's I/Os were issued
/// behind the times of its log (what a controller holding the replay back shows).
fn lateness_lines(rows: &[JobSummary]) -> String {
    let late: Vec<_> = rows
        .iter()
        .filter_map(|r| r.lateness_ms.map(|l| (r, l)))
        .collect();
    if late.is_empty() {
        return String::new();
    }
    let mut s =
        String::from("replay lateness, each I/O's issue behind its time in the log (ms):\n");
    s.push_str(&format!(
        "{:<14} {:>9} {:>9} {:>9}\n",
        "CGROUP", "avg", "P99", "max"
    ));
    for (r, [mean, p99, max]) in late {
        s.push_str(&format!(
            "{:<14} {mean:>9.2} {p99:>9.2} {max:>9.2}\n",
            job_label(&r.cgroup, &r.job, r.round)
        ));
    }
    s
}

/// The write amplification of a device's run counters: NAND pages per host page
/// (None without both counters, or before the host wrote anything).
pub fn write_amplification(counters: &[(&str, u64)]) -> Option<f64> {
    let get = |k: &str| counters.iter().find(|c| c.0 == k).map(|c| c.1);
    match (get("host_write_pages"), get("nand_write_pages")) {
        (Some(h), Some(n)) if h > 0 => Some(n as f64 / h as f64),
        _ => None,
    }
}

/// The device's figures of the whole run under the summary table, as
/// `BlockDevice::run_counters` gives them (the FTL's pages written and GC counts) with
/// the write amplification they make; empty for a model without counters.
pub fn device_summary(dev: &str, counters: &[(&str, u64)]) -> String {
    if counters.is_empty() {
        return String::new();
    }
    let mut s = format!("device {dev}:");
    if let Some(wa) = write_amplification(counters) {
        s += &format!(" write amplification {wa:.2};");
    }
    for (k, v) in counters {
        s += &format!(" {k}={v}");
    }
    s.push('\n');
    s
}

/// `iostat -x 1`-style text, one line per second.
pub fn iostat_text(dev: &str, rows: &[IostatRow]) -> String {
    let mut s = iostat_text_header();
    for r in rows {
        iostat_text_row(&mut s, dev, r);
    }
    s
}

/// The header line of [`iostat_text`].
pub fn iostat_text_header() -> String {
    format!(
        "{:>6} {:<8} {:>9} {:>9} {:>10} {:>10} {:>8} {:>8} {:>8} {:>7}\n",
        "t(s)", "Device", "r/s", "w/s", "rMB/s", "wMB/s", "rrqm/s", "wrqm/s", "aqu-sz", "%util"
    )
}

/// One second's line of [`iostat_text`], appended to `s`.
pub fn iostat_text_row(s: &mut String, dev: &str, r: &IostatRow) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "{:>6} {:<8} {:>9} {:>9} {:>10.2} {:>10.2} {:>8} {:>8} {:>8.2} {:>7.2}",
        r.t,
        dev,
        r.r_ios,
        r.w_ios,
        r.r_bytes as f64 / 1048576.0,
        r.w_bytes as f64 / 1048576.0,
        r.r_merges,
        r.w_merges,
        r.aqu_sz,
        r.util
    );
}

/// `iostat.csv`'s header (MB/s in MiB/s, as `iostat -h` prints M).
pub const IOSTAT_CSV_HEADER: &str =
    "t_s,r_per_s,w_per_s,r_mib_s,w_mib_s,rrqm_per_s,wrqm_per_s,aqu_sz,util_pct\n";

/// One second of `iostat.csv`.
pub fn iostat_csv_row(out: &mut String, r: &IostatRow) {
    out.push_str(&format!(
        "{},{},{},{:.4},{:.4},{},{},{:.4},{:.2}\n",
        r.t,
        r.r_ios,
        r.w_ios,
        r.r_bytes as f64 / 1048576.0,
        r.w_bytes as f64 / 1048576.0,
        r.r_merges,
        r.w_merges,
        r.aqu_sz,
        r.util
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cgb() -> JobSummary {
        JobSummary {
            cgroup: "cgB".into(),
            job: "cgB".into(),
            round: 0,
            iops: 199.4,
            mib_s: 0.78,
            slat_mean_ms: 0.01,
            clat_mean_ms: 1.95,
            clat_max_ms: 42.12,
            clat_pct_ms: vec![(90.0, 2.57), (99.0, 7.5), (99.9, 34.87), (99.99, 42.21)],
            prio: None,
            lateness_ms: None,
        }
    }

    #[test]
    fn the_device_line_gives_the_write_amplification_of_its_counters() {
        assert_eq!(device_summary("nullb0", &[]), "");
        let c = [
            ("host_write_pages", 100),
            ("nand_write_pages", 350),
            ("gc_erases", 2),
        ];
        assert_eq!(write_amplification(&c), Some(3.5));
        assert_eq!(
            device_summary("nvme0n1", &c),
            "device nvme0n1: write amplification 3.50; host_write_pages=100 \
             nand_write_pages=350 gc_erases=2\n"
        );
        // nothing written: no ratio to give
        let idle = [("host_write_pages", 0), ("nand_write_pages", 0)];
        assert_eq!(write_amplification(&idle), None);
        assert!(!device_summary("nvme0n1", &idle).contains("amplification"));
    }

    #[test]
    fn figures_keep_three_significant_digits_when_small() {
        assert_eq!(fmt_figure(1536.4), "1536");
        assert_eq!(fmt_figure(21.13), "21.1");
        assert_eq!(fmt_figure(0.39), "0.39");
        assert_eq!(fmt_figure(0.0052), "0.00520");
        assert_eq!(fmt_figure(0.0), "0.00");
    }

    #[test]
    fn ab_table_sets_each_run_beside_the_first() {
        let before = [JobSummary {
            iops: 5.0,
            clat_mean_ms: 190.0,
            ..cgb()
        }];
        let after = [cgb(), JobSummary { round: 1, ..cgb() }];
        let t = ab_table(&[("before", &before), ("after", &after)]);
        let line = |fig: &str, job: &str| {
            let mut in_job = false;
            t.lines()
                .find(|l| {
                    in_job = l.starts_with(job) || (in_job && l.starts_with(' '));
                    in_job && l.contains(fig)
                })
                .unwrap_or_else(|| panic!("{job} {fig} in\n{t}"))
                .to_string()
        };
        assert!(line("IOPS", "cgB ").ends_with("199.4 (39.9)"), "{t}");
        assert!(
            line("clat avg ms", "cgB ").ends_with("1.95 (0.0103)"),
            "{t}"
        );
        // the second fio run exists only in `after`
        let second = line("IOPS", "cgB #2");
        assert!(second.contains(" - ") && second.ends_with("199.4"), "{t}");
    }

    #[test]
    fn table_prints_the_seed_columns() {
        let t = summary_table(&[cgb()]);
        let last = t.lines().last().unwrap();
        assert!(last.starts_with("cgB"), "{last}");
        for f in [
            "199", "0.78", "1.95", "42.12", "2.57", "7.50", "34.87", "42.21",
        ] {
            assert!(last.contains(f), "{f} missing in {last}");
        }
    }

    #[test]
    fn iostat_rows_in_mib() {
        let rows = [IostatRow {
            t: 3,
            w_ios: 20,
            w_bytes: 10 << 20,
            ..Default::default()
        }];
        assert!(
            iostat_text("sda", &rows)
                .lines()
                .nth(1)
                .unwrap()
                .contains("10.00")
        );
        let mut csv = String::new();
        iostat_csv_row(&mut csv, &rows[0]);
        assert_eq!(csv, "3,0,20,0.0000,10.0000,0,0,0.0000,0.00\n");
    }
}
