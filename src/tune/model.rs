//! `tune model`: the kernel's `tools/cgroup/iocost_coef_gen.py` against a simulated
//! device, and with `--qos` resctl-demo rd-agent's QoS heuristic.
//!
//! Design
//! ------
//! The kernel script (6.12) runs six fio jobs, each
//! `fio --direct=1 --ioengine=libaio --name=coef --filename=TESTFILE --runtime=DURATION
//! --readwrite=RW --iodepth=QD --blocksize=BS --time_based --numjobs=N`, in this order:
//! rbps (`read`, QD1, `--seqio-block-mb` 128 MiB blocks), rseqiops (`read`,
//! `--seq-depth` 64, 4 KiB), rrandiops (`randread`, `--rand-depth` 64, 4 KiB), then the
//! same three writing; `--duration` 120 s, `--numjobs` 1, on a 16 GiB test file
//! (`--testfile-size-gb`), with the scheduler set to `none` and `nomerges=1` (blkcg-sim
//! merges nothing under `none` either). Each result is `sum(j['read']['bw_bytes'] +
//! j['write']['bw_bytes'] for j in d['jobs'])` of fio's JSON, and the IOPS figures are
//! that divided by 4096 and rounded as Python rounds (`round()`, halves to even). It
//! prints `MAJ:MIN rbps=… rseqiops=… rrandiops=… wbps=… wseqiops=… wrandiops=…`. Here
//! the six jobs run in parallel (they are independent runs on a fresh device) and the
//! arithmetic reads the very JSON `blkcg-sim run --output-format json` prints.
//!
//! rd-agent's copy (`rd-agent/src/misc/iocost_coef_gen.py`, `determine_qos()`) adds
//! QoS "very rough heuristics": `rpct = wpct = 95` on a non-rotational device, else
//! 50; for each direction a random 4 KiB job at the random depth with
//! `--rate_iops=int(randiops * 0.9)` (per fio job), whose `jobs[0]` clat percentile
//! nearest `pct` (`read_lat()`, in µs) times 1.5, rounded, is `rlat` / `wlat`; `min=60
//! max=100`. We run those two jobs with the kernel script's depths and numjobs (rd-agent
//! itself defaults to QD256 and 8 jobs, and would then ask for 8 × 90% of the IOPS).

use serde_json::Value as Json;

use super::{Machine, py_round};
use crate::progress::{Cancel, Horizon, Reporter};
use crate::report::fio::json::to_json;
use crate::report::record::RecordOptions;
use crate::run::{prepare, simulate};
use crate::sweep::pool;

/// The kernel script's parameters (its argparse defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct CoefGen {
    pub duration_s: u64,
    pub seqio_block_mb: u64,
    pub seq_depth: u32,
    pub rand_depth: u32,
    pub numjobs: u32,
    pub testfile_size_gb: f64,
}

impl Default for CoefGen {
    fn default() -> Self {
        CoefGen {
            duration_s: 120,
            seqio_block_mb: 128,
            seq_depth: 64,
            rand_depth: 64,
            numjobs: 1,
            testfile_size_gb: 16.0,
        }
    }
}

/// `io.cost.model`'s six coefficients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelParams {
    pub rbps: u64,
    pub rseqiops: u64,
    pub rrandiops: u64,
    pub wbps: u64,
    pub wseqiops: u64,
    pub wrandiops: u64,
}

impl ModelParams {
    /// The coefficients as the kernel script prints them (after `MAJ:MIN `).
    pub fn params(&self) -> String {
        format!(
            "rbps={} rseqiops={} rrandiops={} wbps={} wseqiops={} wrandiops={}",
            self.rbps, self.rseqiops, self.rrandiops, self.wbps, self.wseqiops, self.wrandiops
        )
    }

    /// Every coefficient times `f`, rounded (resctl-demo `IoCostModelParams * f64`).
    pub fn scaled(&self, f: f64) -> ModelParams {
        let m = |u: u64| (u as f64 * f).round() as u64;
        ModelParams {
            rbps: m(self.rbps),
            rseqiops: m(self.rseqiops),
            rrandiops: m(self.rrandiops),
            wbps: m(self.wbps),
            wseqiops: m(self.wseqiops),
            wrandiops: m(self.wrandiops),
        }
    }

    /// The six coefficients of an `io.cost.model` line (other tokens ignored), or
    /// which are missing.
    pub fn from_line(line: &str) -> Result<ModelParams, String> {
        let get = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("io.cost.model `{line}` has no integer `{k}=`"))
        };
        Ok(ModelParams {
            rbps: get("rbps")?,
            rseqiops: get("rseqiops")?,
            rrandiops: get("rrandiops")?,
            wbps: get("wbps")?,
            wseqiops: get("wseqiops")?,
            wrandiops: get("wrandiops")?,
        })
    }
}

/// rd-agent's QoS parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QosParams {
    pub rpct: f64,
    pub rlat: u64,
    pub wpct: f64,
    pub wlat: u64,
    pub min: f64,
    pub max: f64,
}

/// What `tune model` measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// `MAJ:MIN` of the device.
    pub devno: String,
    pub rotational: bool,
    pub model: ModelParams,
    pub qos: Option<QosParams>,
}

impl Measured {
    /// The kernel script's line.
    pub fn model_line(&self) -> String {
        format!("{} {}", self.devno, self.model.params())
    }

    /// rd-agent's QoS as an `io.cost.qos` line that enables blk-iocost with it.
    pub fn qos_line(&self) -> Option<String> {
        self.qos.map(|q| {
            format!(
                "{} enable=1 ctrl=user rpct={} rlat={} wpct={} wlat={} min={} max={}",
                self.devno, q.rpct, q.rlat, q.wpct, q.wlat, q.min, q.max
            )
        })
    }
}

/// One of the script's fio runs.
struct FioRun {
    iotype: &'static str,
    iodepth: u32,
    blocksize: u64,
    rate_iops: Option<u64>,
}

impl CoefGen {
    /// The script's `run_fio()` command line (its `--eta`, `--output-format` and
    /// `--output` are fio program options, left out).
    fn cmdline(&self, r: &FioRun) -> String {
        let mut cmd = format!(
            "fio --direct=1 --ioengine=libaio --name=coef --filename=iocost-coef-fio.testfile \
             --size={} --runtime={} --readwrite={} --iodepth={} --blocksize={} --time_based \
             --numjobs={}",
            (self.testfile_size_gb * (1u64 << 30) as f64) as u64,
            self.duration_s,
            r.iotype,
            r.iodepth,
            r.blocksize,
            self.numjobs
        );
        if let Some(rate) = r.rate_iops {
            cmd.push_str(&format!(" --rate_iops={rate}"));
        }
        cmd
    }

    /// The six model runs in the script's order.
    fn model_runs(&self) -> [FioRun; 6] {
        let seq = self.seqio_block_mb << 20;
        let run = |iotype, iodepth, blocksize| FioRun {
            iotype,
            iodepth,
            blocksize,
            rate_iops: None,
        };
        [
            run("read", 1, seq),
            run("read", self.seq_depth, 4096),
            run("randread", self.rand_depth, 4096),
            run("write", 1, seq),
            run("write", self.seq_depth, 4096),
            run("randwrite", self.rand_depth, 4096),
        ]
    }
}

/// Run fio command line `cmd` alone on `machine`: fio's JSON document, and the device's
/// `MAJ:MIN` and rotational flag.
pub(crate) fn run_fio(machine: &Machine, cmd: &str) -> Result<(Json, String, bool), String> {
    let mut cg = toml::Table::new();
    cg.insert("fio".into(), toml::Value::String(cmd.to_string()));
    let sc = machine.scenario("iocost_coef_gen", 1, None, vec![("coef".into(), cg)])?;
    let run = simulate(
        &sc,
        prepare(&sc, None, None, None, false)?,
        &Reporter::Quiet,
        RecordOptions::default(),
        &Cancel::default(),
    )?;
    let doc = serde_json::from_str(&to_json(&run.fio, false))
        .map_err(|e| format!("internal error: fio JSON does not parse: {e}"))?;
    let l = &run.limits;
    Ok((doc, format!("{}:{}", l.major, l.minor), l.rotational))
}

/// `sum(j['read']['bw_bytes'] + j['write']['bw_bytes'] for j in d['jobs'])`.
fn bw_bytes(doc: &Json) -> u64 {
    let jobs = doc["jobs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    jobs.iter()
        .map(|j| {
            j["read"]["bw_bytes"].as_u64().unwrap_or(0)
                + j["write"]["bw_bytes"].as_u64().unwrap_or(0)
        })
        .sum()
}

/// rd-agent's `read_lat(pct, table)`: the percentile nearest `pct` (the first of equals,
/// in fio's order), in µs.
fn read_lat(pct: f64, table: &serde_json::Map<String, Json>) -> f64 {
    let mut best = (100.0, 0.0);
    for (p, lat) in table {
        let err = (p.parse::<f64>().unwrap_or(f64::INFINITY) - pct).abs();
        if err < best.0 {
            best = (err, lat.as_f64().unwrap_or(0.0));
        }
    }
    best.1 / 1000.0
}

/// Run `runs` on `machine` in parallel: each one's JSON, with the device's identity.
fn run_all(
    machine: &Machine,
    coef: &CoefGen,
    runs: &[FioRun],
    jobs: usize,
    progress: &Reporter,
    what: &str,
) -> Result<Vec<(Json, String, bool)>, String> {
    let mut shown = progress.start(what, Horizon::Count(runs.len() as u64));
    let mut out = Vec::new();
    pool::ordered(
        runs.len(),
        jobs,
        |i| run_fio(machine, &coef.cmdline(&runs[i])),
        |_, r| {
            out.push(r?);
            shown.update(0, out.len() as u64);
            Ok(())
        },
    )?;
    shown.finish();
    Ok(out)
}

/// Measure `machine` as the kernel script does, and rd-agent's QoS if `qos`.
pub fn measure(
    machine: &Machine,
    coef: &CoefGen,
    qos: bool,
    jobs: usize,
    progress: &Reporter,
) -> Result<Measured, String> {
    let docs = run_all(
        machine,
        coef,
        &coef.model_runs(),
        jobs,
        progress,
        "iocost_coef_gen",
    )?;
    let bw: Vec<u64> = docs.iter().map(|(d, _, _)| bw_bytes(d)).collect();
    let iops = |b: u64| py_round(b as f64 / 4096.0) as u64;
    let model = ModelParams {
        rbps: bw[0],
        rseqiops: iops(bw[1]),
        rrandiops: iops(bw[2]),
        wbps: bw[3],
        wseqiops: iops(bw[4]),
        wrandiops: iops(bw[5]),
    };
    let (devno, rotational) = (docs[0].1.clone(), docs[0].2);
    let qos = if qos {
        let pct = if rotational { 50.0 } else { 95.0 };
        let runs = [
            ("randread", model.rrandiops),
            ("randwrite", model.wrandiops),
        ]
        .map(|(iotype, randiops)| FioRun {
            iotype,
            iodepth: coef.rand_depth,
            blocksize: 4096,
            rate_iops: Some((randiops as f64 * 0.9) as u64),
        });
        let docs = run_all(machine, coef, &runs, jobs, progress, "QoS heuristic")?;
        let lat = |doc: &Json, dir: &str| {
            let table = doc["jobs"][0][dir]["clat_ns"]["percentile"]
                .as_object()
                .ok_or_else(|| {
                    format!("internal error: no {dir} clat percentiles in fio's JSON")
                })?;
            Ok::<u64, String>(py_round(read_lat(pct, table) * 1.5) as u64)
        };
        Some(QosParams {
            rpct: pct,
            rlat: lat(&docs[0].0, "read")?,
            wpct: pct,
            wlat: lat(&docs[1].0, "write")?,
            min: 60.0,
            max: 100.0,
        })
    } else {
        None
    };
    Ok(Measured {
        devno,
        rotational,
        model,
        qos,
    })
}

/// Options of `tune model`.
pub struct ModelOptions {
    pub coef: CoefGen,
    pub qos: bool,
    pub jobs: usize,
    pub progress: Reporter,
}

/// `blkcg-sim tune model`: the kernel script's line (and rd-agent's QoS line), to
/// `print` (the command line's stdout).
pub fn model_command(
    machine: &Machine,
    o: &ModelOptions,
    print: &mut dyn FnMut(&str),
) -> Result<u8, String> {
    let m = measure(machine, &o.coef, o.qos, o.jobs, &o.progress)?;
    print(&format!("{}\n", m.model_line()));
    if let Some(q) = m.qos_line() {
        print(&format!("{q}\n"));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_lines_parse_and_scale_as_resctl_does() {
        let m = ModelParams::from_line(
            "8:0 ctrl=user model=linear rbps=173471131 rseqiops=3566 rrandiops=3566 wbps=173333269 wseqiops=3566 wrandiops=3559",
        )
        .unwrap();
        assert_eq!(m.wrandiops, 3559);
        let half = m.scaled(0.5);
        assert_eq!(
            (half.rbps, half.rseqiops, half.wrandiops),
            (86735566, 1783, 1780)
        );
        assert!(
            ModelParams::from_line("8:0 rbps=1")
                .unwrap_err()
                .contains("rseqiops")
        );
    }

    #[test]
    fn the_scripts_command_lines() {
        let g = CoefGen::default();
        let runs = g.model_runs();
        assert_eq!(
            g.cmdline(&runs[0]),
            "fio --direct=1 --ioengine=libaio --name=coef --filename=iocost-coef-fio.testfile \
             --size=17179869184 --runtime=120 --readwrite=read --iodepth=1 --blocksize=134217728 \
             --time_based --numjobs=1"
        );
        assert!(
            g.cmdline(&runs[5])
                .contains("--readwrite=randwrite --iodepth=64 --blocksize=4096")
        );
    }

    #[test]
    fn read_lat_takes_the_nearest_percentile_in_us() {
        let t: serde_json::Map<String, Json> =
            serde_json::from_str(r#"{"90.000000": 1000, "95.000000": 2000, "99.000000": 9000}"#)
                .unwrap();
        assert_eq!(read_lat(95.0, &t), 2.0);
        assert_eq!(read_lat(50.0, &t), 1.0);
        // rounding as Python: 2.5 -> 2, 3.5 -> 4
        assert_eq!((py_round(2.5), py_round(3.5)), (2, 4));
    }
}
