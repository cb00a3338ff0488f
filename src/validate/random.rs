//! `blkcg-sim validate --random N`: differential validation against scenarios nobody
//! chose.
//!
//! Design
//! ------
//! A grammar draws N scenarios over what both the simulator and a real kernel support
//! on null_blk; each is written as a scenario file, then validated exactly as
//! `blkcg-sim validate FILE` does ([`super::validate_figures`]: the same checks, the
//! same simulation, the same boots and comparison), and its figures are appended to a
//! JSON-lines file as it finishes. The moving parts, all here:
//!
//! - [`Family`] and [`scenario`] — the grammar: scenario `i` of family `F` under seed
//!   `S` comes from its own [`SimRng`] stream (`validate-random/F/i`), so the set is
//!   deterministic for (N, F, S) and scenario `i` does not depend on N;
//! - [`write_scenarios`] — `DIR/scenarios/NNNN-FAMILY.toml`, names of our own only,
//!   through [`OutDir`] (never through a symlink);
//! - [`pending`] — resuming: the shard's scenarios ([`Shard`], contiguous slices)
//!   less those `DIR/random.jsonl` already holds;
//! - [`random_command`] — the loop: each pending scenario validated (its boots' files
//!   in `DIR/runs/NNNN-FAMILY/`), then one line appended to `DIR/random.jsonl`: the
//!   file, the family, per kernel, job and direction the real (mean of the boots) and
//!   simulated (mean of the seeds) IOPS, clat mean, p50 and p99 (µs) and the ratio
//!   sim/real; or the error that stopped it. `--dry-run` runs `validate --dry-run`'s
//!   checks (`validate::check`) on each and prints what would run.
//!
//! What the grammar covers: null_blk in timer mode (completion 20 µs–1 ms) or softirq
//! mode, 1–64 driver tags, `mbps` caps, rotational or not; one to three leaf cgroups
//! at depth one to three, with intermediate cgroups that may carry lines too; fio
//! with every rw pattern (read, write, randread, randwrite, rw and randrw with a
//! mix), block sizes from 4 KiB to 1 MiB (128 KiB and above split at null_blk's 255
//! sectors), depths 1–32, libaio or psync, `rate`/`rate_iops` and `thinktime`, 2–3 s
//! time-based runs; sometimes two jobs in one fio process, sometimes a second fio run
//! after the first (`fio = [...]`), and sometimes one of the family's lines rewritten
//! one or two seconds in (`[[schedule]]`). Per family:
//! - throttle: `io.max` of one to four keys (mixed bps and iops), limits that bind
//!   and limits far above the device, `max`;
//! - iocost: `io.cost.model` (linear) at ¼, ½, 1, 2 or 4 times the device's speed or
//!   the kernel's own (auto) model, `io.cost.qos` (percentiles, latency targets, vrate
//!   bounds), `io.weight`;
//! - iolatency: `io.latency` targets (50 µs–10 ms) on siblings of unprotected jobs
//!   (the real side needs a kernel with CONFIG_BLK_CGROUP_IOLATENCY: `kernel build`);
//! - deadline: mq-deadline with its tunables, `nr_requests`, fio `prioclass`;
//! - bfq: BFQ with its tunables (`slice_idle`, `low_latency`, `timeout_sync`,
//!   `strict_guarantees`, `max_budget`), `io.bfq.weight` on leaves and the cgroups
//!   above them, two or three busy leaves, fio `prioclass` (BFQ's RT, BE and idle
//!   classes), reads more often than writes;
//! - mixed: one of iocost, iolatency or deadline with `io.max` lines added (not bfq:
//!   a mixed campaign's scenarios stay what they were).
//!
//! Not drawn: `io.prio.class` (Debian's kernels lack CONFIG_BLK_CGROUP_IOPRIO; the
//! hand-written `validate-ioprio-class` covers it on a built kernel), kyber (not
//! modelled), `nr_requests` without a scheduler.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::campaign::{self, JUDGED};
use super::compare::{self, Figures};
use super::{KernelFigures, ValidateOptions};
use crate::report::outdir::OutDir;
use crate::scenario::Scenario;
use crate::sim::rng::SimRng;
use crate::sweep::Shard;

/// The most scenarios one `--random` may ask for (a typo, not a campaign).
pub const MAX_SCENARIOS: usize = 9999;

/// What the scenarios exercise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Throttle,
    Iocost,
    Iolatency,
    Deadline,
    Mixed,
    Bfq,
}

impl Family {
    pub const ALL: [Family; 6] = [
        Family::Throttle,
        Family::Iocost,
        Family::Iolatency,
        Family::Deadline,
        Family::Mixed,
        Family::Bfq,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Throttle => "throttle",
            Family::Iocost => "iocost",
            Family::Iolatency => "iolatency",
            Family::Deadline => "deadline",
            Family::Mixed => "mixed",
            Family::Bfq => "bfq",
        }
    }
}

impl std::str::FromStr for Family {
    type Err = String;
    fn from_str(s: &str) -> Result<Family, String> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "--family `{s}`: accepted: throttle, iocost, iolatency, deadline, mixed, bfq"
                )
            })
    }
}

/// One of `choices`, uniformly.
fn pick<T: Copy>(rng: &mut SimRng, choices: &[T]) -> T {
    choices[rng.below(choices.len() as u64) as usize]
}

/// True with probability 1/`n`.
fn one_in(rng: &mut SimRng, n: u64) -> bool {
    rng.below(n) == 0
}

/// The null_blk drawn for a scenario, and its rough speed for the cost model.
struct Device {
    text: String,
    /// 4 KiB random reads per second, roughly.
    iops: u64,
    /// Bytes per second, roughly.
    bps: u64,
}

fn device(rng: &mut SimRng, base: Family) -> Device {
    let deadline = base == Family::Deadline;
    let timer = !one_in(rng, 4);
    let completion_nsec = pick(rng, &[20_000u64, 50_000, 100_000, 250_000, 1_000_000]);
    let tags = if deadline {
        pick(rng, &[1u64, 2, 4, 8])
    } else {
        pick(rng, &[1u64, 2, 4, 8, 16, 32, 64])
    };
    let mbps = if one_in(rng, 3) {
        pick(rng, &[50u64, 100, 200, 400])
    } else {
        0
    };
    let mut t = String::from("[device]\nmodel = \"nullb\"\ndev = \"252:0\"\n");
    let mut iops = if timer {
        let _ = writeln!(t, "irqmode = 2\ncompletion_nsec = {completion_nsec}");
        tags * 1_000_000_000 / completion_nsec
    } else {
        t.push_str("irqmode = 1\n");
        // the guest's CPU bounds it
        50_000
    };
    iops = iops.min(80_000);
    let _ = writeln!(t, "hw_queue_depth = {tags}");
    let mut bps = iops * 128 * 1024;
    if mbps > 0 {
        let _ = writeln!(t, "mbps = {mbps}");
        bps = bps.min(mbps << 20);
        iops = iops.min(bps / 4096);
    }
    if one_in(rng, 6) {
        t.push_str("rotational = 1\n");
    }
    if deadline {
        t.push_str("scheduler = \"mq-deadline\"\n");
        if one_in(rng, 2) {
            let _ = writeln!(
                t,
                "nr_requests = {}",
                pick(rng, &[4u64, 8, 16, 32, 64, 128, 256])
            );
        }
        t.push_str(&iosched(
            rng,
            &[
                ("read_expire", &[100, 500]),
                ("write_expire", &[1000, 5000]),
                ("fifo_batch", &[1, 16]),
                ("writes_starved", &[1, 2, 4]),
                ("front_merges", &[0, 1]),
                ("prio_aging_expire", &[500, 2000, 10_000]),
            ],
        ));
    }
    if base == Family::Bfq {
        t.push_str("scheduler = \"bfq\"\n");
        t.push_str(&iosched(
            rng,
            &[
                ("slice_idle", &[0, 2, 8]),
                ("low_latency", &[0, 1]),
                ("timeout_sync", &[50, 125, 250]),
                ("strict_guarantees", &[0, 1]),
                ("max_budget", &[0, 4096, 16384]),
            ],
        ));
    }
    Device { text: t, iops, bps }
}

/// A `[device.iosched]` table: each of `keys` one time in three, at one of its values
/// (empty if none was drawn).
fn iosched(rng: &mut SimRng, keys: &[(&str, &[u64])]) -> String {
    let mut lines = String::new();
    for &(key, values) in keys {
        if one_in(rng, 3) {
            let _ = writeln!(lines, "{key} = {}", pick(rng, values));
        }
    }
    if lines.is_empty() {
        lines
    } else {
        format!("[device.iosched]\n{lines}")
    }
}

/// The cgroups: `leaves` leaf paths (each running one fio job) at depth one to three,
/// and every intermediate cgroup, parents first.
fn hierarchy(rng: &mut SimRng, leaves: usize) -> (Vec<String>, Vec<String>) {
    let mut parents = BTreeSet::new();
    let mut leaf_paths = Vec::new();
    for i in 0..leaves {
        let top = format!("p{}", rng.below(2));
        let path = match rng.below(3) {
            0 => format!("j{i}"),
            1 => format!("{top}/j{i}"),
            _ => format!("{top}/q/j{i}"),
        };
        let mut at = String::new();
        for part in path.split('/').take(path.split('/').count() - 1) {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            parents.insert(at.clone());
        }
        leaf_paths.push(path);
    }
    (parents.into_iter().collect(), leaf_paths)
}

/// One job's options (after its `--name`): pattern, block size, engine and depth, a
/// rate or thinktime, a priority class.
fn job_options(rng: &mut SimRng, reads_mostly: bool, prioclass: bool) -> String {
    let rw = if reads_mostly && !one_in(rng, 3) {
        pick(rng, &["read", "randread"])
    } else {
        pick(
            rng,
            &["read", "randread", "write", "randwrite", "rw", "randrw"],
        )
    };
    let bs = pick(
        rng,
        &[
            "4k", "4k", "4k", "4k", "8k", "16k", "64k", "128k", "256k", "1m",
        ],
    );
    let mut f = format!(" --rw={rw} --bs={bs}");
    if one_in(rng, 4) {
        f.push_str(" --ioengine=psync");
    } else {
        let _ = write!(
            f,
            " --ioengine=libaio --iodepth={}",
            pick(rng, &[1u32, 2, 4, 8, 16, 32])
        );
    }
    if rw.contains("rw") {
        let _ = write!(f, " --rwmixread={}", pick(rng, &[30u32, 50, 70]));
    }
    match rng.below(6) {
        0 => {
            let _ = write!(f, " --rate_iops={}", pick(rng, &[100u32, 500, 2000]));
        }
        1 => {
            let _ = write!(f, " --rate={}", pick(rng, &["1m", "4m", "16m"]));
        }
        _ => {}
    }
    if one_in(rng, 6) {
        let _ = write!(f, " --thinktime={}", pick(rng, &[100u32, 1000, 5000]));
    }
    if prioclass && one_in(rng, 2) {
        let _ = write!(f, " --prioclass={}", pick(rng, &[1u32, 2, 3]));
    }
    f
}

/// One fio command line: job `name`, and one time in five a second job `{name}b`
/// beside it in the same fio process (the options before the first `--name` are
/// fio's global ones, shared by both).
fn fio(rng: &mut SimRng, name: &str, reads_mostly: bool, prioclass: bool) -> String {
    let mut f = format!(
        "fio --direct=1 --runtime={} --time_based --name={name}",
        pick(rng, &[2u32, 3])
    );
    f.push_str(&job_options(rng, reads_mostly, prioclass));
    if one_in(rng, 5) {
        let _ = write!(f, " --name={name}b");
        f.push_str(&job_options(rng, reads_mostly, prioclass));
    }
    f
}

/// An `io.max` line of one to four keys, each binding or far above the device.
fn io_max(rng: &mut SimRng, dev: &Device) -> String {
    let mut line = String::from("252:0");
    let keys = ["rbps", "wbps", "riops", "wiops"];
    let first = rng.below(4) as usize;
    let count = 1 + rng.below(4) as usize;
    for k in 0..count {
        let key = keys[(first + k) % 4];
        let value = if one_in(rng, 8) {
            "max".to_string()
        } else if key.ends_with("bps") {
            let binding = dev.bps / pick(rng, &[2u64, 4, 16, 64]);
            let free = dev.bps.saturating_mul(4);
            (if one_in(rng, 3) { free } else { binding })
                .max(65_536)
                .to_string()
        } else {
            let binding = dev.iops / pick(rng, &[2u64, 4, 16, 64]);
            (if one_in(rng, 3) {
                dev.iops * 4
            } else {
                binding
            })
            .max(10)
            .to_string()
        };
        let _ = write!(line, " {key}={value}");
    }
    line
}

/// An `io.bfq.weight` (1–1000, 100 the default).
fn bfq_weight(rng: &mut SimRng) -> u32 {
    pick(rng, &[10u32, 50, 100, 200, 300, 500, 1000])
}

/// The root's `io.cost.model` and `io.cost.qos`: a linear model at a multiple of the
/// device's speed.
fn iocost_root(rng: &mut SimRng, dev: &Device) -> String {
    let (num, den) = pick(rng, &[(1u64, 4u64), (1, 2), (1, 1), (2, 1), (4, 1)]);
    let iops = (dev.iops * num / den).max(1);
    let bps = (dev.bps * num / den).max(4096);
    let pct = pick(rng, &[90u32, 95, 99]);
    let lat = pick(rng, &[1000u32, 5000, 25_000]);
    let min = pick(rng, &[25u32, 50, 100]);
    let max = pick(rng, &[100u32, 150, 200]);
    // one time in four the kernel's own model (`ctrl=auto`: the autop[] preset it picks)
    let model = if one_in(rng, 4) {
        String::new()
    } else {
        format!(
            "\"io.cost.model\" = \"252:0 ctrl=user model=linear rbps={bps} \
             rseqiops={iops} rrandiops={iops} wbps={bps} wseqiops={iops} wrandiops={iops}\"\n"
        )
    };
    format!(
        "[root]\n{model}\"io.cost.qos\" = \"252:0 enable=1 ctrl=user rpct={pct} rlat={lat} \
         wpct={pct} wlat={lat} min={min} max={max}\"\n"
    )
}

/// The file name of scenario `index` (from 0) of `family`: `NNNN-FAMILY.toml`.
pub fn file_name(index: usize, family: Family) -> String {
    format!("{:04}-{}.toml", index + 1, family.name())
}

/// Scenario `index` (from 0) of `family` under `seed`: the text of its file.
pub fn scenario(family: Family, seed: u64, index: usize) -> String {
    let mut rng = SimRng::new(seed, &format!("validate-random/{}/{index}", family.name()));
    let base = match family {
        Family::Mixed => pick(
            &mut rng,
            &[Family::Iocost, Family::Iolatency, Family::Deadline],
        ),
        f => f,
    };
    let throttle = matches!(family, Family::Throttle | Family::Mixed);
    let dev = device(&mut rng, base);
    let leaves = match base {
        Family::Iolatency | Family::Bfq => 2 + rng.below(2) as usize,
        _ => 1 + rng.below(3) as usize,
    };
    let (parents, leaf_paths) = hierarchy(&mut rng, leaves);
    let name = format!(
        "random-s{seed}-{}",
        file_name(index, family).trim_end_matches(".toml")
    );
    let mut t = format!(
        "# generated by `blkcg-sim validate --random`: family {}, seed {seed}, scenario {}\n\
         name = \"{name}\"\n\
         description = \"\"\"\nA random {} scenario (blkcg-sim validate --random, seed {seed}).\n\"\"\"\n\
         seed = {}\n\n{}\n[kernel]\nhz = 250\n\n",
        family.name(),
        index + 1,
        family.name(),
        1 + rng.below(1_000_000),
        dev.text
    );
    if base == Family::Iocost {
        t.push_str(&iocost_root(&mut rng, &dev));
        t.push('\n');
    }
    let mut io_max_lines = 0;
    let mut latency_targets = 0;
    let n_nodes = parents.len() + leaf_paths.len();
    for (k, path) in parents.iter().chain(&leaf_paths).enumerate() {
        let leaf = k >= parents.len();
        let last = k + 1 == n_nodes;
        let _ = writeln!(t, "[cgroup.\"{path}\"]");
        if throttle
            && ((leaf && one_in(&mut rng, 2))
                || (!leaf && one_in(&mut rng, 3))
                || (last && io_max_lines == 0))
        {
            let _ = writeln!(t, "\"io.max\" = \"{}\"", io_max(&mut rng, &dev));
            io_max_lines += 1;
        }
        if base == Family::Iocost && !one_in(&mut rng, 3) {
            let _ = writeln!(
                t,
                "\"io.weight\" = \"default {}\"",
                pick(&mut rng, &[25u32, 50, 100, 200, 400, 1000])
            );
        }
        // a target on some leaves, never all: io.latency protects against siblings
        if base == Family::Iolatency
            && leaf
            && (latency_targets == 0 || (!last && one_in(&mut rng, 3)))
        {
            let _ = writeln!(
                t,
                "\"io.latency\" = \"252:0 target={}\"",
                pick(&mut rng, &[50u32, 120, 500, 2000, 10_000])
            );
            latency_targets += 1;
        }
        // a weight on two leaves in three, on one cgroup above them in three
        if base == Family::Bfq && one_in(&mut rng, 3) != leaf {
            let _ = writeln!(
                t,
                "\"io.bfq.weight\" = \"default {}\"",
                bfq_weight(&mut rng)
            );
        }
        if leaf {
            let job = path.rsplit('/').next().unwrap_or(path);
            let reads = matches!(base, Family::Iolatency | Family::Bfq);
            let prio = matches!(base, Family::Deadline | Family::Bfq);
            let first = fio(&mut rng, job, reads, prio);
            // one time in six a second run of fio once the first has exited
            if one_in(&mut rng, 6) {
                let second = fio(&mut rng, &format!("{job}r2"), reads, prio);
                let _ = writeln!(t, "fio = [\n  \"{first}\",\n  \"{second}\",\n]");
            } else {
                let _ = writeln!(t, "fio = \"{first}\"");
            }
        }
        t.push('\n');
    }
    // one time in three, a line of the family's rewritten a second in
    let all: Vec<&String> = parents.iter().chain(&leaf_paths).collect();
    if one_in(&mut rng, 3) {
        let at = pick(&mut rng, &[1u32, 2]);
        let (cgroup, line) = match base {
            _ if throttle => (
                pick(&mut rng, &all),
                format!("\"io.max\" = \"{}\"", io_max(&mut rng, &dev)),
            ),
            Family::Iocost => (
                pick(&mut rng, &all),
                format!(
                    "\"io.weight\" = \"default {}\"",
                    pick(&mut rng, &[25u32, 100, 400, 1000])
                ),
            ),
            Family::Bfq => (
                pick(&mut rng, &all),
                format!("\"io.bfq.weight\" = \"default {}\"", bfq_weight(&mut rng)),
            ),
            Family::Iolatency => (
                pick(&mut rng, &leaf_paths.iter().collect::<Vec<_>>()),
                format!(
                    "\"io.latency\" = \"252:0 target={}\"",
                    pick(&mut rng, &["50", "500", "5000", "max"])
                ),
            ),
            _ => return t,
        };
        let _ = writeln!(
            t,
            "[[schedule]]\nat = \"{at}s\"\ncgroup = \"{cgroup}\"\n{line}"
        );
    }
    t
}

/// The scenarios of this shard among `n` (file name, text), in order.
pub fn scenarios(
    n: usize,
    family: Family,
    seed: u64,
    shard: Option<Shard>,
) -> Vec<(String, String)> {
    let range = shard.map_or(0..n, |s| s.range(n));
    range
        .map(|i| (file_name(i, family), scenario(family, seed, i)))
        .collect()
}

/// The JSON-lines file of results under `--output`.
pub const RESULTS: &str = "random.jsonl";

/// The scenario files (`scenarios/NAME`) the JSON-lines file `path` holds a line for;
/// a line cut short by an interruption is not one.
pub fn done(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("file")?.as_str().map(str::to_string))
        .collect()
}

/// Of `names` (file names under `scenarios/`), those `DIR/random.jsonl` does not hold
/// yet: what a rerun still has to validate.
pub fn pending<'a>(dir: &Path, names: &'a [String]) -> Vec<&'a String> {
    let done = done(&dir.join(RESULTS));
    names
        .iter()
        .filter(|n| !done.contains(&format!("scenarios/{n}")))
        .collect()
}

/// Write the scenarios into `DIR/scenarios/` (each file replaced, nothing else
/// touched). A file there that differs from what this build draws (the grammar
/// changed since the campaign began) is refused: its results were for the file.
pub fn write_scenarios(dir: &Path, set: &[(String, String)]) -> Result<(), String> {
    for (name, text) in set {
        let path = dir.join("scenarios").join(name);
        if let Ok(old) = std::fs::read_to_string(&path)
            && old != *text
        {
            return Err(format!(
                "{}: differs from the scenario this build draws for it (the grammar changed \
                 since the campaign began); use a new --output, or the build that began it",
                path.display()
            ));
        }
    }
    let names: Vec<&str> = set.iter().map(|(n, _)| n.as_str()).collect();
    let out = OutDir::top_owning(&dir.join("scenarios"), &names)?;
    for (name, text) in set {
        out.write(name, text)?;
    }
    Ok(())
}

/// Append one line to the JSON-lines file `path` in one write (after a newline if an
/// interrupted run left the last line unfinished); never through a symlink.
fn append(path: &Path, line: &str) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(err)?;
    let len = f.seek(SeekFrom::End(0)).map_err(err)?;
    let mut text = String::new();
    if len > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(len - 1)).map_err(err)?;
        f.read_exact(&mut last).map_err(err)?;
        if last[0] != b'\n' {
            text.push('\n');
        }
    }
    text.push_str(line);
    text.push('\n');
    f.write_all(text.as_bytes()).map_err(err)
}

fn figures_json(f: Option<&Vec<Option<f64>>>) -> Value {
    let mut m = serde_json::Map::new();
    for j in JUDGED {
        m.insert(j.key.into(), json!(f.and_then(|v| v[j.figure])));
    }
    Value::Object(m)
}

/// One scenario's result line: per kernel, job and direction, real and simulated
/// figures (means over boots and seeds), the ratio sim/real, and each boot's and each
/// seed's figures (`real_runs`, `sim_runs`: the spread the report judges against).
pub fn result_line(file: &str, family: Family, kernels: &[KernelFigures]) -> String {
    let kernels: Vec<Value> = kernels
        .iter()
        .map(|k| {
            let (real, sim): (Figures, Figures) = (compare::mean(&k.real), compare::mean(&k.sim));
            let keys: BTreeSet<&(String, String)> = real.keys().chain(sim.keys()).collect();
            let jobs: Vec<Value> = keys
                .into_iter()
                .map(|key| {
                    let (r, s) = (real.get(key), sim.get(key));
                    let mut ratio = serde_json::Map::new();
                    for j in JUDGED {
                        let q = match (r.and_then(|v| v[j.figure]), s.and_then(|v| v[j.figure])) {
                            (Some(r), Some(s)) if r > 0.0 => Some(s / r),
                            _ => None,
                        };
                        ratio.insert(j.key.into(), json!(q));
                    }
                    let each = |runs: &[Figures]| -> Vec<Value> {
                        runs.iter().map(|f| figures_json(f.get(key))).collect()
                    };
                    json!({
                        "job": key.0,
                        "dir": key.1,
                        "real": figures_json(r),
                        "sim": figures_json(s),
                        "ratio": ratio,
                        "real_runs": each(&k.real),
                        "sim_runs": each(&k.sim),
                    })
                })
                .collect();
            json!({"kernel": k.name, "jobs": jobs})
        })
        .collect();
    json!({"file": file, "family": family.name(), "kernels": kernels}).to_string()
}

/// `validate --random` options (the rest are validate's own, in `validate`).
#[derive(Debug, Clone)]
pub struct RandomOptions {
    pub n: usize,
    pub family: Family,
    pub seed: u64,
    pub output: PathBuf,
    pub shard: Option<Shard>,
    /// Boot nothing: simulate again every scenario `random.jsonl` holds real runs for,
    /// into `resimulated.jsonl`, and report the two side by side.
    pub resimulate: bool,
}

/// The files a campaign writes at the top of its folder (besides `random.jsonl`, which
/// it appends to, and `scenarios/`, `runs/`).
const REPORTS: [&str; 2] = ["report.txt", "report.html"];

/// What `--resimulate` writes at the top of the campaign's folder.
pub const RESIMULATED: &str = "resimulated.jsonl";
const RESIMULATED_REPORTS: [&str; 2] = ["resimulated.txt", "resimulated.html"];

/// The report of `DIR/random.jsonl` written to `DIR/report.{txt,html}`; after
/// `--resimulate`, that of `resimulated.jsonl` to `resimulated.{txt,html}`, with the
/// fractions within before (the same scenarios in `random.jsonl`) and after. Returns
/// the text for the terminal.
fn write_report(dir: &Path, resimulated: bool) -> Result<String, String> {
    let shown = dir.display().to_string();
    let campaign_lines = campaign::read_lines(&dir.join(RESULTS))?;
    let (report, before, names, title) = if resimulated {
        let after_lines = campaign::read_lines(&dir.join(RESIMULATED))?;
        let files: BTreeSet<&str> = after_lines.iter().map(|l| l.file.as_str()).collect();
        let before_lines: Vec<campaign::Line> = campaign_lines
            .into_iter()
            .filter(|l| files.contains(l.file.as_str()))
            .collect();
        (
            campaign::Report::new(&after_lines),
            Some(campaign::Report::new(&before_lines)),
            RESIMULATED_REPORTS,
            "validate --random: the campaign resimulated",
        )
    } else {
        (
            campaign::Report::new(&campaign_lines),
            None,
            REPORTS,
            "validate --random: the campaign",
        )
    };
    let mut text = report.text(&shown, 10);
    if let Some(b) = &before {
        text = format!(
            "Within tolerance, as random.jsonl has it → as this build simulates it:\n{}\n{text}",
            b.compare(&report)
        );
    }
    let out = OutDir::top_owning(dir, &names)?;
    out.write(names[0], &text)?;
    out.write(names[1], &report.html(title, before.as_ref()))?;
    Ok(text)
}

/// `blkcg-sim validate --random`: write the shard's scenarios, then validate each one
/// `DIR/random.jsonl` does not hold yet (with `--dry-run`: check each and say what
/// would run). Exit status 1 if a scenario could not be validated (its line says why).
pub fn random_command(
    r: &RandomOptions,
    validate: &ValidateOptions<'_>,
    out: &mut dyn FnMut(&str),
) -> Result<u8, String> {
    if r.n == 0 || r.n > MAX_SCENARIOS {
        return Err(format!(
            "--random {}: give a number of scenarios from 1 to {MAX_SCENARIOS}",
            r.n
        ));
    }
    let set = scenarios(r.n, r.family, r.seed, r.shard);
    write_scenarios(&r.output, &set)?;
    if r.resimulate {
        return resimulate(r, &set, validate, out);
    }
    let names: Vec<String> = set.iter().map(|(n, _)| n.clone()).collect();
    let todo = pending(&r.output, &names);
    out(&format!(
        "validate --random {} --family {} --seed {}: {} scenario(s) in this shard, {} already in {}, {} to {}\n",
        r.n,
        r.family.name(),
        r.seed,
        set.len(),
        set.len() - todo.len(),
        r.output.join(RESULTS).display(),
        todo.len(),
        if validate.dry_run {
            "check"
        } else {
            "validate"
        }
    ));
    if validate.dry_run {
        out(&format!(
            "host tools: {}\n",
            super::host_tools(&validate.kernels)
        ));
    }
    let mut failed = 0;
    for (k, name) in todo.iter().enumerate() {
        let path = r.output.join("scenarios").join(name);
        let text = &set
            .iter()
            .find(|(n, _)| n == *name)
            .map(|(_, t)| t.as_str())
            .unwrap_or("");
        let sc = Scenario::parse(text, &path.display().to_string()).map_err(|e| e.to_string())?;
        let stem = name.trim_end_matches(".toml");
        if validate.dry_run {
            let checked = super::check(&sc, validate)?;
            out(&format!(
                "would validate {} ({} fio): {}\n",
                path.display(),
                checked.plan.fio.len(),
                checked.plan.title
            ));
            continue;
        }
        out(&format!("\n== {name} ({} of {}) ==\n", k + 1, todo.len()));
        let o = ValidateOptions {
            output: Some(r.output.join("runs").join(stem)),
            ..validate.clone()
        };
        let file = format!("scenarios/{name}");
        let line = match super::validate_figures(&sc, &o, out) {
            Ok(kernels) => result_line(&file, r.family, &kernels),
            Err(e) => {
                failed += 1;
                out(&format!("{name}: {e}\n"));
                json!({"file": file, "family": r.family.name(), "error": e}).to_string()
            }
        };
        append(&r.output.join(RESULTS), &line)?;
    }
    if !validate.dry_run {
        out(&format!("\n{}", write_report(&r.output, false)?));
    }
    Ok(u8::from(failed > 0))
}

/// `--resimulate`: every scenario of the shard that `random.jsonl` holds real runs for
/// and `resimulated.jsonl` does not hold yet, simulated again by this build (on the
/// kernels of `--kernel`, which must include those the campaign ran on) and judged
/// against the stored runs; then the report, before and after.
fn resimulate(
    r: &RandomOptions,
    set: &[(String, String)],
    validate: &ValidateOptions<'_>,
    out: &mut dyn FnMut(&str),
) -> Result<u8, String> {
    let results = r.output.join(RESULTS);
    if validate.dry_run && !results.exists() {
        out(&format!(
            "validate --random --resimulate --dry-run: nothing to simulate again: no {} yet\n",
            results.display()
        ));
        return Ok(0);
    }
    if !results.exists() {
        return Err(format!(
            "--resimulate: no {} yet: run the campaign first (the same command without \
             --resimulate)",
            results.display()
        ));
    }
    let lines = campaign::read_lines(&results)?;
    let done = done(&r.output.join(RESIMULATED));
    let todo: Vec<&campaign::Line> = lines
        .iter()
        .filter(|l| l.error.is_none() && !done.contains(&l.file))
        .filter(|l| set.iter().any(|(n, _)| l.file == format!("scenarios/{n}")))
        .collect();
    out(&format!(
        "validate --random --resimulate: {} scenario(s) with real runs to simulate again \
         ({} already in {})\n",
        todo.len(),
        done.len(),
        r.output.join(RESIMULATED).display(),
    ));
    if validate.dry_run {
        for line in &todo {
            out(&format!("would simulate {} again\n", line.file));
        }
        return Ok(0);
    }
    let mut failed = 0;
    // scenarios booted on a kernel not given: left for a run that gives it (a
    // campaign that spans a distribution's point release holds boots of two)
    let mut waiting: Vec<String> = Vec::new();
    for (k, line) in todo.iter().enumerate() {
        let path = r.output.join(&line.file);
        out(&format!("{} ({} of {})\n", line.file, k + 1, todo.len()));
        let simulated = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|text| {
                Scenario::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())
            })
            .and_then(|sc| {
                let o = ValidateOptions {
                    output: None,
                    ..validate.clone()
                };
                super::simulated_figures(&sc, &o)
            });
        let family = line.family.parse().unwrap_or(r.family);
        let text = match simulated {
            Ok(sim) => {
                let real = line.real_runs();
                if let Some((name, _)) = real
                    .iter()
                    .find(|(name, _)| !sim.iter().any(|k| &k.name == name))
                {
                    out(&format!(
                        "{}: the campaign ran it on {name}: left for --resimulate --kernel \
                         with that kernel\n",
                        line.file
                    ));
                    waiting.push(name.clone());
                    continue;
                }
                let kernels: Vec<KernelFigures> = real
                    .into_iter()
                    .filter_map(|(name, real)| {
                        let s = sim.iter().find(|k| k.name == name)?;
                        Some(KernelFigures {
                            name,
                            real,
                            sim: s.sim.clone(),
                        })
                    })
                    .collect();
                result_line(&line.file, family, &kernels)
            }
            Err(e) => {
                failed += 1;
                out(&format!("{}: {e}\n", line.file));
                json!({"file": line.file, "family": family.name(), "error": e}).to_string()
            }
        };
        append(&r.output.join(RESIMULATED), &text)?;
    }
    if !waiting.is_empty() {
        waiting.sort();
        let mut kernels = waiting.clone();
        kernels.dedup();
        let each: Vec<String> = kernels
            .iter()
            .map(|k| format!("{k} ({})", waiting.iter().filter(|w| *w == k).count()))
            .collect();
        out(&format!(
            "{} scenario(s) were booted on a kernel not given: {}; run --resimulate again \
             with --kernel naming it (linux-image-...), into the same folder\n",
            waiting.len(),
            each.join(", ")
        ));
    }
    // nothing judged yet (every scenario waits for its kernel): no report to write
    if r.output.join(RESIMULATED).exists() {
        out(&format!("\n{}", write_report(&r.output, true)?));
    }
    Ok(u8::from(failed > 0 || !waiting.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::Ignore;
    use crate::validate::{HostSource, Timing};

    fn opts(dry_run: bool) -> ValidateOptions<'static> {
        ValidateOptions {
            variant: None,
            kernels: Vec::new(),
            runs: 1,
            timing: Timing::Icount,
            output: None,
            host: HostSource::Guest,
            trace_events: Vec::new(),
            kprobes: Vec::new(),
            blktrace: false,
            dry_run,
            notify: &Ignore,
        }
    }

    fn temp(what: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("blkcg-sim-random-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_set_is_deterministic_for_its_seed() {
        for family in Family::ALL {
            let a = scenarios(6, family, 7, None);
            assert_eq!(a, scenarios(6, family, 7, None));
            assert_ne!(a, scenarios(6, family, 8, None));
            // scenario i does not depend on N
            assert_eq!(a[..3], scenarios(3, family, 7, None)[..]);
            assert_eq!(a[0].0, format!("0001-{}.toml", family.name()));
        }
        // the files written are the texts, byte for byte, and rewritten the same
        let d = temp("det");
        let set = scenarios(4, Family::Mixed, 3, None);
        write_scenarios(&d, &set).unwrap();
        write_scenarios(&d, &set).unwrap();
        for (name, text) in &set {
            assert_eq!(
                &std::fs::read_to_string(d.join("scenarios").join(name)).unwrap(),
                text
            );
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Every family's scenarios pass the simulator's own checks (`run::prepare`) and
    /// every other check of `validate --dry-run`, for 200 seeds.
    #[test]
    fn every_scenario_prepares_and_dry_runs_cleanly() {
        let o = opts(true);
        for family in Family::ALL {
            for seed in 0..200 {
                for (name, text) in scenarios(2, family, seed, None) {
                    let sc = Scenario::parse(&text, &name)
                        .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}\n{text}"));
                    let checked = crate::validate::check(&sc, &o)
                        .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}\n{text}"));
                    assert!(!checked.plan.fio.is_empty());
                }
            }
        }
    }

    /// The grammar reaches what its header says it covers.
    #[test]
    fn the_grammar_covers_its_keys() {
        let all: String = Family::ALL
            .into_iter()
            .flat_map(|f| scenarios(40, f, 1, None))
            .map(|(_, t)| t)
            .collect();
        for needle in [
            "irqmode = 1",
            "irqmode = 2",
            "mbps = ",
            "rotational = 1",
            "cgroup.\"p0/q/j",
            "rbps=",
            "wiops=",
            "=max",
            "io.cost.model",
            "io.weight",
            "io.latency",
            "mq-deadline",
            "nr_requests",
            "fifo_batch",
            "scheduler = \"bfq\"",
            "io.bfq.weight",
            "slice_idle = ",
            "max_budget = ",
            "--ioengine=psync",
            "--rate_iops=",
            "--rate=",
            "--thinktime=",
            "--prioclass=",
            "--bs=1m",
            "--rwmixread=",
            "b --rw=",
            "fio = [",
            "r2 --rw=",
            "target=max",
        ] {
            assert!(all.contains(needle), "no scenario has `{needle}`");
        }
        // each family's line is rewritten mid-run somewhere
        let scheduled: String = all.split("[[schedule]]").skip(1).collect();
        for file in ["io.max", "io.weight", "io.latency", "io.bfq.weight"] {
            assert!(scheduled.contains(file), "no schedule rewrites {file}");
        }
        // the kernel's own model: qos without a model line
        assert!(all.matches("io.cost.qos").count() > all.matches("io.cost.model").count());
    }

    #[test]
    fn shards_cover_the_set_once() {
        let whole = scenarios(23, Family::Throttle, 5, None);
        for count in [1, 2, 3, 7, 23, 30] {
            let parts: Vec<(String, String)> = (1..=count)
                .flat_map(|index| scenarios(23, Family::Throttle, 5, Some(Shard { index, count })))
                .collect();
            assert_eq!(parts, whole, "{count} shards");
        }
    }

    /// A rerun skips what random.jsonl holds, including a line of an error; a line cut
    /// short by an interruption does not count, and the next line starts afresh.
    #[test]
    fn a_rerun_resumes_after_what_random_jsonl_holds() {
        let d = temp("resume");
        std::fs::create_dir_all(&d).unwrap();
        let names: Vec<String> = scenarios(4, Family::Iocost, 1, None)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(pending(&d, &names).len(), 4);
        let one = KernelFigures {
            name: "Linux 6.1".into(),
            real: Vec::new(),
            sim: Vec::new(),
        };
        append(
            &d.join(RESULTS),
            &result_line("scenarios/0002-iocost.toml", Family::Iocost, &[one]),
        )
        .unwrap();
        append(
            &d.join(RESULTS),
            &json!({"file": "scenarios/0004-iocost.toml", "error": "x"}).to_string(),
        )
        .unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.join(RESULTS))
            .unwrap();
        f.write_all(b"{\"file\": \"scenarios/0001-iocost.toml\", \"fam")
            .unwrap();
        assert_eq!(
            pending(&d, &names),
            ["0001-iocost.toml", "0003-iocost.toml"]
        );
        append(
            &d.join(RESULTS),
            &json!({"file": "scenarios/0003-iocost.toml"}).to_string(),
        )
        .unwrap();
        assert_eq!(pending(&d, &names), ["0001-iocost.toml"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_result_line_has_every_figure_and_its_ratio() {
        let fig = |iops: f64| {
            let mut f = Figures::new();
            let mut v = vec![None; compare::FIGURES.len()];
            v[0] = Some(iops);
            v[7] = Some(200.0);
            f.insert(("j0".to_string(), "read".to_string()), v);
            f
        };
        let k = KernelFigures {
            name: "Linux 6.12".into(),
            real: vec![fig(100.0), fig(300.0)],
            sim: vec![fig(100.0)],
        };
        let v: Value = serde_json::from_str(&result_line(
            "scenarios/0001-mixed.toml",
            Family::Mixed,
            &[k],
        ))
        .unwrap();
        let job = &v["kernels"][0]["jobs"][0];
        assert_eq!(v["family"], "mixed");
        assert_eq!(job["real"]["iops"], 200.0);
        assert_eq!(job["ratio"]["iops"], 0.5);
        assert_eq!(job["ratio"]["p99_us"], 1.0);
        assert!(job["ratio"]["p50_us"].is_null());
    }

    #[test]
    fn bad_options_are_one_line_errors() {
        let e = "bogus".parse::<Family>().unwrap_err();
        assert!(
            e.contains("--family") && e.contains("throttle, iocost"),
            "{e}"
        );
        for n in [0, MAX_SCENARIOS + 1] {
            let r = RandomOptions {
                n,
                family: Family::Throttle,
                seed: 1,
                output: temp("bad"),
                shard: None,
                resimulate: false,
            };
            let e = random_command(&r, &opts(true), &mut |_| {}).unwrap_err();
            assert!(e.contains("--random") && !e.contains('\n'), "{e}");
        }
    }
}
