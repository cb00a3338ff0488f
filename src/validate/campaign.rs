//! The report of a `validate --random` campaign: each simulated figure judged against
//! the real kernel's run-to-run spread, the agreement per family and figure, and the
//! scenarios ranked by how far they disagree.
//!
//! Design
//! ------
//! A campaign's `random.jsonl` (one line per scenario, see [`super::random`]) holds,
//! per kernel, job and direction, every boot's real figures and every seed's
//! simulated ones. The report reads the lines back ([`read_lines`]; lines of several
//! shards concatenate, a line cut short by an interruption is skipped) and judges each
//! figure of [`JUDGED`] ([`judge`]):
//!
//! - the real side is a range, the lowest to the highest boot, widened by the figure's
//!   margin (a fraction, and for latencies a few µs: fio's histogram buckets and the
//!   guest's timer noise); with one boot the range is the boot's value;
//! - the simulated figure (the mean of its seeds) is *within* when it lies in that
//!   range; outside, its distance is the log of the factor by which it misses the
//!   nearer end (a figure one side has and the other lacks counts as missing by
//!   [`MISSING`]).
//!
//! So a figure that the real kernel itself cannot repeat gets a wide band and does not
//! drown the disagreements of figures it repeats closely. [`Report`] holds the counts
//! per (family, kernel) and figure and each scenario's worst figure; [`Report::text`]
//! and [`Report::html`] print them — the fractions, then the scenarios by distance
//! with the command that reproduces each. [`Report::compare`] sets two reports side
//! by side (a campaign and its resimulation by a later build).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use super::compare::{self, Figures};
use crate::report::html::{Page, escape};

/// One figure a campaign keeps and judges.
#[derive(Debug, Clone, Copy)]
pub struct Judged {
    /// Its name in `random.jsonl`.
    pub key: &'static str,
    pub label: &'static str,
    /// Its index in [`compare::FIGURES`].
    pub figure: usize,
    /// The margin around the real range: a fraction of it, and an amount in the
    /// figure's unit.
    pub margin: f64,
    pub floor: f64,
}

/// The figures kept and judged. IOPS repeat closely on the real side; percentiles are
/// read from fio's buckets (about 1.6% wide) and a tail moves with the guest's timer
/// noise.
pub const JUDGED: [Judged; 4] = [
    Judged {
        key: "iops",
        label: "IOPS",
        figure: 0,
        margin: 0.05,
        floor: 1.0,
    },
    Judged {
        key: "clat_mean_us",
        label: "clat mean",
        figure: 3,
        margin: 0.10,
        floor: 2.0,
    },
    Judged {
        key: "p50_us",
        label: "clat p50",
        figure: 4,
        margin: 0.10,
        floor: 2.0,
    },
    Judged {
        key: "p99_us",
        label: "clat p99",
        figure: 7,
        margin: 0.20,
        floor: 2.0,
    },
];

/// All jobs' I/Os simulated over real from which the report points at the guest's CPU.
const CPU_BOUND: f64 = 1.5;
const CPU_BOUND_NOTE: &str = "  (all jobs' I/Os sim/real of 1.5 or more on a fast null_blk: most often the \
     guest's one vCPU was the bottleneck, and the simulated CPU had time to spare: \
     docs/validation.md §34–38)";

/// The distance (natural log of the factor) of a figure one side has and the other
/// lacks, and the most any figure counts: a factor of 100.
pub const MISSING: f64 = 4.605_170_185_988_092;

/// One job's figures in a result line (`null` where fio had none).
#[derive(Debug, Clone, Default, Deserialize)]
struct FigureSet {
    iops: Option<f64>,
    clat_mean_us: Option<f64>,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
}

impl FigureSet {
    fn get(&self, i: usize) -> Option<f64> {
        [self.iops, self.clat_mean_us, self.p50_us, self.p99_us][i]
    }
}

#[derive(Debug, Clone, Deserialize)]
struct JobLine {
    job: String,
    dir: String,
    #[serde(default)]
    real: FigureSet,
    #[serde(default)]
    sim: FigureSet,
    #[serde(default)]
    real_runs: Vec<FigureSet>,
    #[serde(default)]
    sim_runs: Vec<FigureSet>,
}

#[derive(Debug, Clone, Deserialize)]
struct KernelLine {
    kernel: String,
    #[serde(default)]
    jobs: Vec<JobLine>,
}

/// One side's values of figure `i`: each run's, or the one set of a line written
/// without runs.
fn side(runs: &[FigureSet], one: &FigureSet, i: usize) -> Vec<Option<f64>> {
    if runs.is_empty() {
        vec![one.get(i)]
    } else {
        runs.iter().map(|f| f.get(i)).collect()
    }
}

impl KernelLine {
    /// Its jobs' IOPS summed, simulated over real (each side the mean of its runs).
    fn io_ratio(&self) -> Option<f64> {
        let mean = |runs: &[FigureSet], one: &FigureSet| {
            let v: Vec<f64> = side(runs, one, 0).into_iter().flatten().collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let (mut real, mut sim) = (0.0, 0.0);
        for j in &self.jobs {
            real += mean(&j.real_runs, &j.real)?;
            sim += mean(&j.sim_runs, &j.sim)?;
        }
        (real > 0.0).then(|| sim / real)
    }
}

/// One scenario's line of `random.jsonl`.
#[derive(Debug, Clone, Deserialize)]
pub struct Line {
    pub file: String,
    #[serde(default)]
    pub family: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    kernels: Vec<KernelLine>,
}

/// The whole lines of `path` (several shards' or kernels' files concatenated are one
/// campaign); a line that does not parse (cut short by an interruption) is skipped. A
/// scenario with several lines on the same kernels counts once, its last.
pub fn read_lines(path: &Path) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut by_file: BTreeMap<(String, Vec<String>), Line> = BTreeMap::new();
    for l in text.lines() {
        if let Ok(line) = serde_json::from_str::<Line>(l) {
            let kernels = line.kernels.iter().map(|k| k.kernel.clone()).collect();
            by_file.insert((line.file.clone(), kernels), line);
        }
    }
    Ok(by_file.into_values().collect())
}

impl Line {
    /// Per kernel (its name), each boot's real figures as the line keeps them (the
    /// figures of [`JUDGED`]; the others `None`): what a resimulation is judged against.
    pub fn real_runs(&self) -> Vec<(String, Vec<Figures>)> {
        self.kernels
            .iter()
            .map(|k| {
                let boots = k.jobs.iter().map(|j| j.real_runs.len()).max().unwrap_or(0);
                let runs = (0..boots)
                    .map(|b| {
                        k.jobs
                            .iter()
                            .filter_map(|j| {
                                let f = j.real_runs.get(b)?;
                                let mut v = vec![None; compare::FIGURES.len()];
                                for (i, judged) in JUDGED.iter().enumerate() {
                                    v[judged.figure] = f.get(i);
                                }
                                Some(((j.job.clone(), j.dir.clone()), v))
                            })
                            .collect()
                    })
                    .collect();
                (k.kernel.clone(), runs)
            })
            .collect()
    }
}

/// How one simulated figure stands against the real runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// The real runs' range, widened by the margin.
    pub lo: f64,
    pub hi: f64,
    /// The real runs' own range and the simulated mean (`None`: that side lacks it).
    pub real: Option<(f64, f64)>,
    pub sim: Option<f64>,
    /// 0 within; else ln of the factor by which it misses (at most [`MISSING`]).
    pub distance: f64,
}

/// Judge figure `i` of [`JUDGED`]: the real runs' values against the simulated
/// seeds' mean. `None` when neither side has the figure.
pub fn judge(i: usize, real: &[Option<f64>], sim: &[Option<f64>]) -> Option<Verdict> {
    let (frac, abs) = (JUDGED[i].margin, JUDGED[i].floor);
    let real: Vec<f64> = real.iter().flatten().copied().collect();
    let sims: Vec<f64> = sim.iter().flatten().copied().collect();
    let sim = (!sims.is_empty()).then(|| sims.iter().sum::<f64>() / sims.len() as f64);
    let range = (!real.is_empty()).then(|| {
        let lo = real.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = real.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    });
    let (lo, hi) = match range {
        Some((lo, hi)) => ((lo * (1.0 - frac) - abs).max(0.0), hi * (1.0 + frac) + abs),
        None => (0.0, 0.0),
    };
    let distance = match (range, sim) {
        (None, None) => return None,
        (None, Some(_)) | (Some(_), None) => MISSING,
        (Some(_), Some(s)) if s > hi => (s / hi).ln().min(MISSING),
        (Some(_), Some(s)) if s < lo => (lo / s.max(lo / 100.0)).ln().min(MISSING),
        _ => 0.0,
    };
    Some(Verdict {
        lo,
        hi,
        real: range,
        sim,
        distance,
    })
}

/// Counts of one (family, kernel) group: per figure, judged and within.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub scenarios: usize,
    pub judged: [usize; 4],
    pub within: [usize; 4],
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.scenarios += other.scenarios;
        for i in 0..4 {
            self.judged[i] += other.judged[i];
            self.within[i] += other.within[i];
        }
    }

    /// The fraction within of figure `i` (`None` when none was judged).
    pub fn fraction(&self, i: usize) -> Option<f64> {
        (self.judged[i] > 0).then(|| self.within[i] as f64 / self.judged[i] as f64)
    }
}

/// A scenario's worst figure.
#[derive(Debug, Clone)]
pub struct Worst {
    pub file: String,
    pub family: String,
    pub kernel: String,
    pub job: String,
    pub dir: String,
    pub figure: usize,
    pub verdict: Verdict,
    /// How many of its figures are outside.
    pub outside: usize,
    pub judged: usize,
    /// The I/Os of all its jobs a second, simulated over real (its first kernel's):
    /// far above 1 on a fast null_blk, the guest's one vCPU is most often the
    /// bottleneck, more than the simulated CPU (docs/validation.md §34–38).
    pub io_ratio: Option<f64>,
}

/// A campaign judged.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// (family, kernel) → counts.
    pub groups: BTreeMap<(String, String), Counts>,
    /// Every scenario's worst figure, the farthest first.
    pub ranked: Vec<Worst>,
    /// (file, error) of the scenarios that could not be validated.
    pub errors: Vec<(String, String)>,
    /// The most boots any scenario had (1: no spread to judge against).
    pub boots: usize,
}

impl Report {
    pub fn new(lines: &[Line]) -> Report {
        let mut r = Report::default();
        for line in lines {
            if let Some(e) = &line.error {
                r.errors.push((line.file.clone(), e.clone()));
                continue;
            }
            let mut worst: Option<Worst> = None;
            let (mut outside, mut judged) = (0, 0);
            let io_ratio = line.kernels.first().and_then(KernelLine::io_ratio);
            for k in &line.kernels {
                let counts = r
                    .groups
                    .entry((line.family.clone(), k.kernel.clone()))
                    .or_default();
                counts.scenarios += 1;
                for j in &k.jobs {
                    r.boots = r.boots.max(j.real_runs.len());
                    for i in 0..JUDGED.len() {
                        let real = side(&j.real_runs, &j.real, i);
                        let sim = side(&j.sim_runs, &j.sim, i);
                        let Some(v) = judge(i, &real, &sim) else {
                            continue;
                        };
                        counts.judged[i] += 1;
                        judged += 1;
                        if v.distance == 0.0 {
                            counts.within[i] += 1;
                        } else {
                            outside += 1;
                        }
                        if worst
                            .as_ref()
                            .is_none_or(|w| v.distance > w.verdict.distance)
                        {
                            worst = Some(Worst {
                                file: line.file.clone(),
                                family: line.family.clone(),
                                kernel: k.kernel.clone(),
                                job: j.job.clone(),
                                dir: j.dir.clone(),
                                figure: i,
                                verdict: v,
                                outside: 0,
                                judged: 0,
                                io_ratio,
                            });
                        }
                    }
                }
            }
            if let Some(mut w) = worst {
                (w.outside, w.judged) = (outside, judged);
                r.ranked.push(w);
            }
        }
        // the farthest first; ties in file order (stable)
        r.ranked
            .sort_by(|a, b| b.verdict.distance.total_cmp(&a.verdict.distance));
        r
    }

    /// Every group's counts summed.
    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for c in self.groups.values() {
            t.add(c);
        }
        t
    }

    /// Counts per family (all kernels), and per kernel (all families).
    fn rows(&self) -> Vec<(String, Counts)> {
        let mut rows: Vec<(String, Counts)> = self
            .groups
            .iter()
            .map(|((f, k), c)| (format!("{f} · {k}"), c.clone()))
            .collect();
        let mut by_kernel: BTreeMap<&str, Counts> = BTreeMap::new();
        for ((_, k), c) in &self.groups {
            by_kernel.entry(k).or_default().add(c);
        }
        if self.groups.len() > 1 {
            rows.extend(
                by_kernel
                    .into_iter()
                    .map(|(k, c)| (format!("all · {k}"), c)),
            );
        }
        rows.push(("all".into(), self.total()));
        rows
    }

    /// The report as text: the tolerance, the fractions within, the `top` farthest
    /// scenarios with the command that reproduces each (`dir`: the campaign folder as
    /// the user named it), the errors.
    pub fn text(&self, dir: &str, top: usize) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "{} scenario(s) judged, {} could not be validated; up to {} real boot(s) per scenario{}",
            self.ranked.len(),
            self.errors.len(),
            self.boots,
            if self.boots < 2 {
                " (no run-to-run spread: judged against the margins alone; use --runs 2)"
            } else {
                ""
            }
        );
        let _ = writeln!(t, "{}", tolerance_sentence());
        let rows = self.rows();
        let w = name_width(&rows);
        let _ = writeln!(
            t,
            "\nWithin tolerance (job figures within / judged):\n{:<w$} {:>9}{}",
            "family · kernel",
            "scenarios",
            JUDGED
                .iter()
                .map(|j| format!(" {:>17}", j.label))
                .collect::<String>()
        );
        for (name, c) in rows {
            let _ = write!(t, "{name:<w$} {:>9}", c.scenarios);
            for i in 0..JUDGED.len() {
                let _ = write!(t, " {:>17}", cell(&c, i));
            }
            t.push('\n');
        }
        let _ = writeln!(
            t,
            "\nThe scenarios farthest from the real kernel (worst figure; factor outside the real range):"
        );
        for (n, w) in self.ranked.iter().take(top).enumerate() {
            if w.verdict.distance == 0.0 {
                let _ = writeln!(t, "  (the rest agree on every figure)");
                break;
            }
            let _ = writeln!(
                t,
                "{:>3}. {:>6}  {}  {}: {}\n       blkcg-sim validate {} --runs {}",
                n + 1,
                factor(w.verdict.distance),
                w.file,
                w.kernel,
                describe(w),
                shell_path(dir, &w.file),
                self.boots.max(2)
            );
        }
        if self
            .ranked
            .iter()
            .take(top)
            .any(|w| w.verdict.distance > 0.0 && w.io_ratio.is_some_and(|r| r >= CPU_BOUND))
        {
            let _ = writeln!(t, "{CPU_BOUND_NOTE}");
        }
        if !self.errors.is_empty() {
            let _ = writeln!(t, "\nCould not be validated:");
            for (file, e) in &self.errors {
                let _ = writeln!(t, "  {file}: {e}");
            }
        }
        t
    }

    /// The report as a page of its own (links relative to the campaign folder).
    pub fn html(&self, title: &str, before: Option<&Report>) -> String {
        let mut page = Page::new(title, "");
        page.markup(&format!("<p>{}</p>\n", escape(&tolerance_sentence())));
        if let Some(b) = before {
            page.heading("before-after", "Before and after");
            page.pre(&b.compare(self));
        }
        page.heading("within", "Within tolerance");
        let mut h = String::from("<table><tr><th>family · kernel</th><th>scenarios</th>");
        for j in JUDGED {
            let _ = write!(h, "<th>{}</th>", escape(j.label));
        }
        h.push_str("</tr>\n");
        for (name, c) in self.rows() {
            let _ = write!(h, "<tr><td>{}</td><td>{}</td>", escape(&name), c.scenarios);
            for i in 0..JUDGED.len() {
                let class = match c.fraction(i) {
                    Some(f) if f >= 0.9 => "ok",
                    Some(f) if f >= 0.7 => "near",
                    Some(_) => "off",
                    None => "",
                };
                let _ = write!(h, "<td class=\"{class}\">{}</td>", escape(&cell(&c, i)));
            }
            h.push_str("</tr>\n");
        }
        h.push_str(
            "</table>\n<p>Green: 90% or more of the figures within; yellow: 70% or more; \
             red: fewer.</p>\n",
        );
        page.markup(&h);
        page.heading("ranked", "Scenarios by disagreement");
        let mut h = String::from(
            "<table><tr><th>#</th><th>factor</th><th>scenario</th><th>kernel</th>\
             <th>worst figure</th><th>outside</th><th>runs</th></tr>\n",
        );
        for (n, w) in self.ranked.iter().enumerate() {
            let class = match w.verdict.distance {
                0.0 => "ok",
                d if d < 0.25 => "near",
                _ => "off",
            };
            let stem = w
                .file
                .trim_start_matches("scenarios/")
                .trim_end_matches(".toml");
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"{class}\">{}</td><td><a href=\"{}\">{}</a></td>\
                 <td>{}</td><td>{}</td><td>{}/{}</td><td><a href=\"runs/{}/report.html\">\
                 report</a></td></tr>",
                n + 1,
                factor(w.verdict.distance),
                escape(&w.file),
                escape(&w.file),
                escape(&w.kernel),
                escape(&describe(w)),
                w.outside,
                w.judged,
                escape(stem),
            );
        }
        h.push_str("</table>\n");
        page.markup(&h);
        if !self.errors.is_empty() {
            page.heading("errors", "Could not be validated");
            let text: String = self
                .errors
                .iter()
                .map(|(f, e)| format!("{f}: {e}\n"))
                .collect();
            page.pre(&text);
        }
        page.finish()
    }

    /// The fractions within of `self` (before) and `after`, side by side per row.
    pub fn compare(&self, after: &Report) -> String {
        let rows = after.rows();
        let w = name_width(&rows);
        let mut t = format!(
            "{:<w$}{}\n",
            "family · kernel",
            JUDGED
                .iter()
                .map(|j| format!(" {:>22}", format!("{} before→after", j.label)))
                .collect::<String>()
        );
        let before: BTreeMap<String, Counts> = self.rows().into_iter().collect();
        for (name, a) in rows {
            let b = before.get(&name).cloned().unwrap_or_default();
            let _ = write!(t, "{name:<w$}");
            for i in 0..JUDGED.len() {
                let shown = |c: &Counts| c.fraction(i).map_or("-".into(), pct);
                let _ = write!(t, " {:>22}", format!("{}→{}", shown(&b), shown(&a)));
            }
            t.push('\n');
        }
        t
    }
}

/// The width of the rows' first column: the longest name (in characters).
fn name_width(rows: &[(String, Counts)]) -> usize {
    rows.iter()
        .map(|(n, _)| n.chars().count())
        .chain(["family · kernel".chars().count()])
        .max()
        .unwrap_or(0)
}

fn pct(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

fn cell(c: &Counts, i: usize) -> String {
    c.fraction(i).map_or("-".into(), |f| {
        format!("{} {}/{}", pct(f), c.within[i], c.judged[i])
    })
}

/// `×2.3` for a distance of ln 2.3; `=` within.
fn factor(distance: f64) -> String {
    if distance == 0.0 {
        "=".into()
    } else if distance >= MISSING {
        "≥×100".into()
    } else {
        format!("×{:.2}", distance.exp())
    }
}

fn number(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// `j0 read IOPS: sim 1234 vs real 2800–2950 (2 of 8 figures outside)`.
fn describe(w: &Worst) -> String {
    let label = JUDGED[w.figure].label;
    let unit = if w.figure == 0 { "" } else { " µs" };
    let sim = w.verdict.sim.map_or("none".into(), number);
    let real = w.verdict.real.map_or("none".into(), |(lo, hi)| {
        let (lo, hi) = (number(lo), number(hi));
        if lo == hi { lo } else { format!("{lo}–{hi}") }
    });
    let io = w.io_ratio.map_or(String::new(), |r| {
        format!("; all jobs' I/Os sim/real {r:.2}")
    });
    format!(
        "{} {} {label}: sim {sim}{unit} vs real {real}{unit} ({} of {} figures outside{io})",
        w.job, w.dir, w.outside, w.judged
    )
}

/// `DIR/scenarios/NNNN-F.toml` as a word a shell reads back unchanged.
fn shell_path(dir: &str, file: &str) -> String {
    let p = Path::new(dir).join(file).display().to_string();
    if p.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+@".contains(&b))
    {
        p
    } else {
        super::guest::sh_quote(&p)
    }
}

fn tolerance_sentence() -> String {
    let margins: Vec<String> = JUDGED
        .iter()
        .map(|j| {
            let unit = if j.figure == 0 { "" } else { " µs" };
            format!("{} {:.0}% + {}{unit}", j.label, j.margin * 100.0, j.floor)
        })
        .collect();
    format!(
        "A simulated figure (the mean of its seeds) is within tolerance when it lies in the \
         real boots' range (lowest to highest) widened by a margin: {}.",
        margins.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_spread_widens_the_band() {
        // one boot: the margin alone (IOPS 5% + 1)
        let v = judge(0, &[Some(1000.0)], &[Some(1060.0)]).unwrap();
        assert!(v.distance > 0.0 && (v.hi - 1051.0).abs() < 1e-9, "{v:?}");
        // two boots 1000 and 1100: 1060 is inside
        let v = judge(0, &[Some(1000.0), Some(1100.0)], &[Some(1060.0)]).unwrap();
        assert_eq!(v.distance, 0.0);
        // the simulated seeds' mean is what is judged
        let v = judge(0, &[Some(1000.0)], &[Some(900.0), Some(1100.0)]).unwrap();
        assert_eq!(v.distance, 0.0);
        // below: ln(lo / sim); a factor of two
        let v = judge(3, &[Some(210.0)], &[Some(90.0)]).unwrap();
        assert!((v.lo - 166.0).abs() < 1e-9 && (v.distance - (166.0f64 / 90.0).ln()).abs() < 1e-9);
        // one side lacks it: missing; neither: not judged
        assert_eq!(judge(1, &[Some(5.0)], &[None]).unwrap().distance, MISSING);
        assert_eq!(judge(1, &[None], &[Some(5.0)]).unwrap().distance, MISSING);
        assert!(judge(1, &[None, None], &[None]).is_none());
        // a simulated zero against a real figure is as far as a missing one, no farther
        assert_eq!(
            judge(0, &[Some(500.0)], &[Some(0.0)]).unwrap().distance,
            MISSING
        );
    }

    fn line(file: &str, family: &str, real: &[f64], sim: f64) -> String {
        let runs: Vec<String> = real
            .iter()
            .map(|r| {
                format!("{{\"iops\":{r},\"clat_mean_us\":100.0,\"p50_us\":null,\"p99_us\":null}}")
            })
            .collect();
        format!(
            "{{\"file\":\"{file}\",\"family\":\"{family}\",\"kernels\":[{{\"kernel\":\"Linux 6.1\",\
             \"jobs\":[{{\"job\":\"j0\",\"dir\":\"read\",\"real_runs\":[{}],\
             \"sim_runs\":[{{\"iops\":{sim},\"clat_mean_us\":100.0}}]}}]}}]}}",
            runs.join(",")
        )
    }

    #[test]
    fn the_report_counts_ranks_and_names_the_reproduction() {
        let dir = std::env::temp_dir().join(format!("blkcg-sim-campaign-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("random.jsonl");
        let text = [
            line("scenarios/0001-throttle.toml", "throttle", &[1000.0, 1010.0], 1005.0),
            line("scenarios/0002-throttle.toml", "throttle", &[1000.0, 1010.0], 400.0),
            line("scenarios/0003-throttle.toml", "throttle", &[1000.0], 2000.0),
            "{\"file\":\"scenarios/0004-throttle.toml\",\"family\":\"throttle\",\"error\":\"boom\"}".into(),
            // a line cut short, and a later line replacing an earlier one
            "{\"file\":\"scenarios/0005".into(),
            line("scenarios/0003-throttle.toml", "throttle", &[1000.0], 2500.0),
        ]
        .join("\n");
        std::fs::write(&path, text).unwrap();
        let r = Report::new(&read_lines(&path).unwrap());
        let c = &r.groups[&("throttle".to_string(), "Linux 6.1".to_string())];
        assert_eq!(
            (c.scenarios, c.judged, c.within),
            (3, [3, 3, 0, 0], [1, 3, 0, 0])
        );
        assert_eq!(
            r.errors,
            [(
                "scenarios/0004-throttle.toml".to_string(),
                "boom".to_string()
            )]
        );
        let order: Vec<&str> = r.ranked.iter().map(|w| w.file.as_str()).collect();
        assert_eq!(
            order,
            [
                "scenarios/0003-throttle.toml",
                "scenarios/0002-throttle.toml",
                "scenarios/0001-throttle.toml"
            ]
        );
        assert_eq!(r.ranked[0].verdict.sim, Some(2500.0));
        let t = r.text("camp dir", 10);
        assert!(t.contains("33% 1/3"), "{t}");
        assert!(
            t.contains("blkcg-sim validate 'camp dir/scenarios/0003-throttle.toml' --runs 2"),
            "{t}"
        );
        assert!(
            t.contains(
                "j0 read IOPS: sim 2500 vs real 1000 (1 of 2 figures outside; \
                 all jobs' I/Os sim/real 2.50)"
            ),
            "{t}"
        );
        assert!(t.contains("0004-throttle.toml: boom"), "{t}");
        assert!(t.contains(CPU_BOUND_NOTE), "{t}");
        let h = r.html("campaign", Some(&r));
        assert!(h.contains("runs/0002-throttle/report.html") && h.contains("before→after"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
