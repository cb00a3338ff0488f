//! `blkcg-sim device plot`: pictures of a device model alone, no controller, through
//! the real pipeline (generated fio jobs in one cgroup), so what they show is what
//! fio would see.
//!
//! Design
//! ------
//! A device is a `[device]` table ([`DeviceUnderTest`]: from a scenario, a preset, a
//! `--device`-style spec, or [`builtin_devices`], every model and preset). Each
//! picture is a handful of generated one-cgroup scenarios run in parallel with
//! `run::in_parallel` (results in input order, so the output is byte-identical
//! whatever the thread count), then drawn with `report::plot`:
//! - [`latency_vs_load`], any model: 4 KiB randread and randwrite at QD 1..256 (one
//!   run each, [`QDS`]); IOPS on x, clat p50 and p99 (fio's buckets) on a log y. The
//!   curve bends where the device saturates: IOPS stop growing, latency climbs.
//! - [`write_cliff`], the FTL `ssd` only: 4 KiB random writes at QD32 from t=0, once
//!   on the configured drive preconditioned sequentially (full) and once fresh
//!   (`precondition = "none"`): write IOPS per time bin, and from `iostat.csv` the
//!   write amplification and free blocks per second.
//! - [`cloud_bucket`], `cloud` only: a QD32 4 KiB reader for T, idle for T, again for T
//!   (T = 1.5 × `credit_secs` with credit bursting, so the credits drain, partly refill
//!   and drain again; else 10 s): device IOPS, `throttled` and `backlog` per second.
//!
//! Every run's fio text is built here; the device table is the user's, so a key error
//! names where the user wrote the key (the scenario's line, `--model`, `--preset`),
//! never a line of the scenario generated here. Files: `DIR/NAME-latency.{png,svg,csv}`,
//! `DIR/NAME-write-cliff.{png,svg}`, `DIR/NAME-bucket.{png,svg}`.

use crate::device::{cloud, config, flash};
use crate::report::outdir::OutDir;
use crate::report::plot::{Panel, Series, plot_panels};
use crate::report::timeline::{JobLine, job_panels};
use crate::run::{VariantRun, in_parallel, run_variant};
use crate::scenario::Scenario;
use crate::scenario::source::{Place, Places};
use crate::scenario::spec::parse_device_spec;
use crate::sim::iostat::IostatRow;

/// Queue depths of the latency-vs-load curve.
pub const QDS: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/// A device model to draw: its `[device]` table and the files' name.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceUnderTest {
    pub name: String,
    pub table: toml::Table,
    /// Where the table's keys were written, for messages.
    pub places: Places,
}

impl DeviceUnderTest {
    /// From a `--device`-style spec (`model:key=value,...`, given as `--model`),
    /// named after it.
    pub fn from_spec(spec: &str) -> Result<Self, String> {
        let table = parse_device_spec(spec)?;
        let mut places = Places::default();
        places.set(&["device"], Place::argument(format!("--model `{spec}`")));
        Ok(DeviceUnderTest {
            name: file_name(spec),
            table,
            places,
        })
    }

    /// The preset `name` of whichever model has it (`ssd` FTL or `cloud`).
    pub fn from_preset(name: &str) -> Result<Self, String> {
        let model = if flash::presets().contains(&name) {
            "ssd"
        } else if cloud::presets().contains(&name) {
            "cloud"
        } else {
            return Err(format!(
                "--preset {name}: no such preset; ssd (FTL): {}; cloud: {}",
                flash::presets().join(", "),
                cloud::presets().join(", ")
            ));
        };
        let mut d = Self::from_spec(&format!("{model}:preset={name}"))?;
        d.name = format!("{model}-{name}");
        d.places
            .set(&["device"], Place::argument(format!("--preset `{name}`")));
        Ok(d)
    }

    /// The `[device]` table of scenario `sc` (its base, not a variant's), named after
    /// the scenario.
    pub fn from_scenario(sc: &Scenario) -> Result<Self, String> {
        let table = match sc.table.get("device") {
            Some(toml::Value::Table(t)) => t.clone(),
            Some(_) => return Err(format!("{}: [device] is not a table", sc.file)),
            None => toml::Table::new(),
        };
        let name = match sc.table.get("name") {
            Some(toml::Value::String(n)) => file_name(n),
            _ => "device".to_string(),
        };
        Ok(DeviceUnderTest {
            name,
            table,
            places: sc.places_of(&["device"]),
        })
    }

    /// Every file [`plot_device`] may write for this device.
    pub fn file_names(&self) -> Vec<String> {
        ["latency.csv", "latency.png", "latency.svg"]
            .iter()
            .chain(&[
                "write-cliff.png",
                "write-cliff.svg",
                "bucket.png",
                "bucket.svg",
            ])
            .map(|what| format!("{}-{what}", self.name))
            .collect()
    }

    fn model(&self) -> &str {
        match self.table.get("model") {
            Some(toml::Value::String(m)) => m,
            _ => "nullb",
        }
    }

    /// Whether the device is the FTL `ssd` (`mode = "ftl"`, or any preset).
    fn is_ftl(&self) -> bool {
        self.model() == "ssd"
            && match self.table.get("mode") {
                Some(toml::Value::String(m)) => m == "ftl",
                _ => self.table.contains_key("preset"),
            }
    }

    /// This device with `key` set to `v`.
    fn with(&self, key: &str, v: toml::Value) -> toml::Table {
        let mut t = self.table.clone();
        t.insert(key.to_string(), v);
        t
    }
}

/// Every built-in model and preset, as `docs/devices.md` shows them: null_blk in timer
/// mode (100 µs), the simple `ssd`, each FTL preset, the `hdd`, each cloud preset.
pub fn builtin_devices() -> Vec<DeviceUnderTest> {
    let mut v = vec![
        DeviceUnderTest::from_spec("nullb:irqmode=2,completion_nsec=100000"),
        DeviceUnderTest::from_spec("ssd"),
    ];
    v.extend(
        flash::presets()
            .into_iter()
            .map(DeviceUnderTest::from_preset),
    );
    v.push(DeviceUnderTest::from_spec("hdd"));
    v.extend(
        cloud::presets()
            .into_iter()
            .map(DeviceUnderTest::from_preset),
    );
    let mut v: Vec<DeviceUnderTest> = v.into_iter().map(|d| d.expect("built-in spec")).collect();
    v[0].name = "nullb-timer-100us".into();
    v[1].name = "ssd-simple".into();
    v
}

/// One generated job: its cgroup, fio text.
struct GenJob {
    cgroup: &'static str,
    fio: String,
}

/// Run `jobs` (one cgroup each, at once) on `device`, its keys written at `places`.
fn run_on(
    device: &toml::Table,
    places: &Places,
    jobs: &[GenJob],
    what: &str,
) -> Result<VariantRun, String> {
    let mut t = toml::Table::new();
    t.insert("name".into(), toml::Value::String(what.to_string()));
    t.insert("device".into(), toml::Value::Table(device.clone()));
    let mut cgs = toml::Table::new();
    for j in jobs {
        let mut cg = toml::Table::new();
        cg.insert("fio".into(), toml::Value::String(j.fio.clone()));
        cgs.insert(j.cgroup.into(), toml::Value::Table(cg));
    }
    t.insert("cgroup".into(), toml::Value::Table(cgs));
    let sc = Scenario::generated(&t, what, places)?;
    run_variant(&sc, None, None, None, false)
}

fn fio(name: &str, rw: &str, qd: u32, runtime_s: u64, extra: &str) -> String {
    format!(
        "fio --name={name} --rw={rw} --bs=4k --ioengine=libaio --direct=1 --iodepth={qd} \
         --runtime={runtime_s} --time_based{extra}"
    )
}

/// One point of the latency-vs-load curve.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPoint {
    pub rw: &'static str,
    pub qd: u32,
    pub iops: f64,
    pub clat_p50_ms: f64,
    pub clat_p99_ms: f64,
}

/// 4 KiB randread and randwrite at each of [`QDS`] for `runtime_s` each.
pub fn latency_vs_load(d: &DeviceUnderTest, runtime_s: u64) -> Result<Vec<LoadPoint>, String> {
    let cases: Vec<(&'static str, u32)> = ["randread", "randwrite"]
        .into_iter()
        .flat_map(|rw| QDS.into_iter().map(move |qd| (rw, qd)))
        .collect();
    in_parallel(&cases, |&(rw, qd)| {
        let job = GenJob {
            cgroup: "load",
            fio: fio("load", rw, qd, runtime_s, ""),
        };
        let run = run_on(
            &d.table,
            &d.places,
            &[job],
            &format!("{} {rw} QD{qd}", d.name),
        )?;
        let s = run
            .summaries
            .first()
            .ok_or_else(|| format!("{}: {rw} QD{qd} made no job", d.name))?;
        Ok(LoadPoint {
            rw,
            qd,
            iops: s.iops,
            clat_p50_ms: s.pct(50.0).unwrap_or(0.0),
            clat_p99_ms: s.pct(99.0).unwrap_or(0.0),
        })
    })
}

/// The points as CSV (`rw,qd,iops,clat_p50_ms,clat_p99_ms`).
pub fn load_csv(points: &[LoadPoint]) -> String {
    let mut s = String::from("rw,qd,iops,clat_p50_ms,clat_p99_ms\n");
    for p in points {
        s += &format!(
            "{},{},{:.1},{:.4},{:.4}\n",
            p.rw, p.qd, p.iops, p.clat_p50_ms, p.clat_p99_ms
        );
    }
    s
}

fn load_panels(points: &[LoadPoint]) -> Vec<Panel> {
    ["randread", "randwrite"]
        .into_iter()
        .map(|rw| {
            let of = |f: fn(&LoadPoint) -> f64| {
                points
                    .iter()
                    .filter(|p| p.rw == rw)
                    .map(|p| (p.iops, f(p)))
                    .collect()
            };
            Panel {
                y_label: format!("4k {rw} clat (ms)"),
                series: vec![
                    Series {
                        name: "p50".into(),
                        points: of(|p| p.clat_p50_ms),
                    },
                    Series {
                        name: "p99".into(),
                        points: of(|p| p.clat_p99_ms),
                    },
                ],
                log_y: true,
            }
        })
        .collect()
}

/// A per-second column of the device's iostat rows (a model's own, or `r/s`).
fn iostat_series(name: &str, rows: &[IostatRow], col: &str) -> Series {
    let points = rows
        .iter()
        .filter_map(|r| {
            let v = match col {
                "r/s" => Some(r.r_ios as f64),
                c => r
                    .dev_cols
                    .iter()
                    .position(|x| *x == c)
                    .and_then(|i| r.dev_vals.get(i).copied()),
            };
            v.map(|v| (r.t as f64 + 0.5, v))
        })
        .collect();
    Series {
        name: name.to_string(),
        points,
    }
}

/// The job's IOPS per time bin (the jobs picture's first panel), named `name`.
fn job_iops(run: &VariantRun, name: &str) -> Vec<Series> {
    let lines: Vec<JobLine> = crate::report::outputs::job_lines(run)
        .into_iter()
        .map(|mut j| {
            j.label = name.to_string();
            j
        })
        .collect();
    job_panels(&lines).swap_remove(0).series
}

/// The FTL drive's write cliff: 4 KiB random writes at QD32 for `runtime_s` from
/// t=0, full (sequential preconditioning) and fresh. None for other models.
pub fn write_cliff(d: &DeviceUnderTest, runtime_s: u64) -> Result<Option<Vec<Panel>>, String> {
    if !d.is_ftl() {
        return Ok(None);
    }
    let states = ["sequential", "none"];
    let runs = in_parallel(&states, |state| {
        let table = d.with("precondition", toml::Value::String(state.to_string()));
        let job = GenJob {
            cgroup: "writer",
            fio: fio("writer", "randwrite", 32, runtime_s, ""),
        };
        run_on(
            &table,
            &d.places,
            &[job],
            &format!("{} write cliff, {state}", d.name),
        )
    })?;
    let label = |s: &str| match s {
        "none" => "fresh (precondition none)".to_string(),
        s => format!("full (precondition {s})"),
    };
    let mut panels = vec![
        Panel {
            y_label: "write IOPS".into(),
            series: Vec::new(),
            log_y: false,
        },
        Panel {
            y_label: "write amplification".into(),
            series: Vec::new(),
            log_y: false,
        },
        Panel {
            y_label: "free blocks".into(),
            series: Vec::new(),
            log_y: false,
        },
    ];
    for (state, run) in states.iter().zip(&runs) {
        let name = label(state);
        panels[0].series.extend(job_iops(run, &name));
        // a second without host writes has no write amplification to show
        let mut wa = iostat_series(&name, &run.record.iostat, "wa");
        wa.points.retain(|p| p.1 > 0.0);
        panels[1].series.push(wa);
        panels[2]
            .series
            .push(iostat_series(&name, &run.record.iostat, "free_blocks"));
    }
    Ok(Some(panels))
}

/// The cloud volume's token buckets draining and refilling: a QD32 4 KiB reader for
/// T, idle for T, then again for T. None for other models.
pub fn cloud_bucket(d: &DeviceUnderTest) -> Result<Option<(u64, Vec<Panel>)>, String> {
    if d.model() != "cloud" {
        return Ok(None);
    }
    let (_, resolved, _) = config::resolve(&d.table, 1).map_err(|e| e.to_string())?;
    let key = |k: &str| {
        resolved
            .iter()
            .find(|(x, _)| x == k)
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let t = match (key("bursting"), key("credit_secs")) {
        (1, c) if c > 0 => c * 3 / 2,
        _ => 10,
    };
    let jobs = [
        GenJob {
            cgroup: "first",
            fio: fio("first", "randread", 32, t, ""),
        },
        GenJob {
            cgroup: "again",
            fio: fio(
                "again",
                "randread",
                32,
                t,
                &format!(" --startdelay={}", 2 * t),
            ),
        },
    ];
    let run = run_on(&d.table, &d.places, &jobs, &format!("{} bucket", d.name))?;
    let rows = &run.record.iostat;
    Ok(Some((
        t,
        vec![
            Panel {
                y_label: "IOPS".into(),
                series: vec![iostat_series("reads completed", rows, "r/s")],
                log_y: false,
            },
            Panel {
                y_label: "IOs per second".into(),
                series: vec![iostat_series(
                    "throttled (found a bucket empty)",
                    rows,
                    "throttled",
                )],
                log_y: false,
            },
            Panel {
                y_label: "IOs".into(),
                series: vec![iostat_series(
                    "backlog (waiting at the second's end)",
                    rows,
                    "backlog",
                )],
                log_y: false,
            },
        ],
    )))
}

/// The longest name kept whole in a file name; with the suffixes (`-write-cliff.png`)
/// and a hash, a file name stays far below NAME_MAX (255).
const FILE_NAME_KEPT: usize = 64;

/// A device's name as its files' prefix: the name itself when it is at most
/// [`FILE_NAME_KEPT`] letters, digits, `-` and `_`; otherwise those characters kept
/// (any other becomes `-`, at most [`FILE_NAME_KEPT`] of them) then `-` and the name's
/// FNV-1a hash in 8 hex digits — so names that differ never share files (`.`, `*` and
/// `ä` would all be `-`), and a long name fails nowhere.
fn file_name(name: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if !name.is_empty() && name.len() <= FILE_NAME_KEPT && name.chars().all(safe) {
        return name.to_string();
    }
    let slug: String = name
        .chars()
        .take(FILE_NAME_KEPT)
        .map(|c| if safe(c) { c } else { '-' })
        .collect();
    format!("{slug}-{:08x}", crate::sim::rng::fnv1a(name) & 0xffff_ffff)
}

/// Draw every picture that applies to `d` into `out` (opened owning
/// [`DeviceUnderTest::file_names`]); returns the latency-vs-load table (text) and the
/// files written.
pub fn plot_device(
    d: &DeviceUnderTest,
    out: &OutDir,
    runtime_s: u64,
    cliff_s: u64,
) -> Result<(String, Vec<String>), String> {
    let mut files = Vec::new();
    let base = |what: &str| out.path().join(format!("{}-{what}", d.name));
    let points = latency_vs_load(d, runtime_s)?;
    let csv = load_csv(&points);
    let path = base("latency").with_extension("csv");
    out.write(&format!("{}-latency.csv", d.name), &csv)?;
    files.push(path.display().to_string());
    plot_panels(
        &base("latency"),
        &format!(
            "{}: 4 KiB random I/O, QD {}..{} ({runtime_s} s each)",
            d.name,
            QDS[0],
            QDS[QDS.len() - 1]
        ),
        "IOPS",
        &load_panels(&points),
    )?;
    files.push(base("latency").with_extension("png").display().to_string());
    if let Some(panels) = write_cliff(d, cliff_s)? {
        plot_panels(
            &base("write-cliff"),
            &format!("{}: 4 KiB random writes at QD32 from t=0", d.name),
            "time (s)",
            &panels,
        )?;
        files.push(
            base("write-cliff")
                .with_extension("png")
                .display()
                .to_string(),
        );
    }
    if let Some((t, panels)) = cloud_bucket(d)? {
        plot_panels(
            &base("bucket"),
            &format!(
                "{}: 4 KiB random reads at QD32 for {t} s, idle {t} s, again {t} s",
                d.name
            ),
            "time (s)",
            &panels,
        )?;
        files.push(base("bucket").with_extension("png").display().to_string());
    }
    Ok((csv, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32 item 14: a key error names the option the device came from.
    #[test]
    fn a_bad_key_names_the_option_that_gave_it() {
        let d = DeviceUnderTest::from_spec("cloud:bps=x").unwrap();
        let job = GenJob {
            cgroup: "r",
            fio: fio("r", "randread", 1, 1, ""),
        };
        let e = run_on(&d.table, &d.places, &[job], "cloud-bps-x randread QD1").err();
        let e = e.unwrap_or_default();
        assert!(e.starts_with("--model `cloud:bps=x`: `device.bps`"), "{e}");
    }

    #[test]
    fn names_that_differ_never_share_files() {
        assert_eq!(file_name("ssd-dc-nvme"), "ssd-dc-nvme");
        let names = [".", "*", "ä", "-", "a b", "a/b", "a-b"];
        let files: std::collections::BTreeSet<String> =
            names.iter().map(|n| file_name(n)).collect();
        assert_eq!(files.len(), names.len(), "{files:?}");
        for f in &files {
            assert!(
                f.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                "{f}"
            );
        }
        // 300 characters: kept short, still told apart from the same with one change
        let long = "x".repeat(300);
        let other = format!("{}y", "x".repeat(299));
        assert!(file_name(&long).len() <= FILE_NAME_KEPT + 9);
        assert_ne!(file_name(&long), file_name(&other));
    }

    #[test]
    fn every_builtin_device_has_a_distinct_name_and_builds() {
        let devs = builtin_devices();
        let mut names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), devs.len());
        for d in &devs {
            config::resolve(&d.table, 1).unwrap_or_else(|e| panic!("{}: {e}", d.name));
        }
        assert_eq!(devs.iter().filter(|d| d.is_ftl()).count(), 3);
    }

    #[test]
    fn an_unknown_preset_names_the_known_ones() {
        let e = DeviceUnderTest::from_preset("nope").unwrap_err();
        assert!(e.contains("femu-bb") && e.contains("azure-p20"), "{e}");
    }

    #[test]
    fn a_one_tag_timer_nullb_saturates_at_its_nominal_rate() {
        // 100 µs per request on 1 tag: 10k IOPS at most, whatever the depth; the
        // queue then waits for the tag, so p50 grows with the depth
        let d =
            DeviceUnderTest::from_spec("nullb:irqmode=2,completion_nsec=100000,hw_queue_depth=1")
                .unwrap();
        let pts = latency_vs_load(&d, 1).unwrap();
        assert_eq!(pts.len(), 2 * QDS.len());
        let read = |qd: u32| {
            pts.iter()
                .find(|p| p.rw == "randread" && p.qd == qd)
                .unwrap()
        };
        assert!(
            read(256).iops <= 10_000.0 && read(256).iops > 9_000.0,
            "{:?}",
            read(256)
        );
        assert!(read(1).iops < read(4).iops, "{:?} {:?}", read(1), read(4));
        assert!(read(64).clat_p50_ms > 10.0 * read(1).clat_p50_ms);
        assert!(load_csv(&pts).starts_with("rw,qd,iops,clat_p50_ms,clat_p99_ms\nrandread,1,"));
    }

    #[test]
    fn only_the_models_with_the_behaviour_get_the_cliff_and_bucket_pictures() {
        let nullb = DeviceUnderTest::from_spec("nullb").unwrap();
        assert!(write_cliff(&nullb, 1).unwrap().is_none());
        assert!(cloud_bucket(&nullb).unwrap().is_none());
        assert!(!DeviceUnderTest::from_spec("ssd").unwrap().is_ftl());
        assert!(DeviceUnderTest::from_spec("ssd:mode=ftl").unwrap().is_ftl());
    }

    #[test]
    fn the_run_counters_reach_the_report_for_ftl_drives_only() {
        let run = |spec: &str, secs: u64| {
            let d = DeviceUnderTest::from_spec(spec).unwrap();
            let job = GenJob {
                cgroup: "w",
                fio: fio("w", "randwrite", 32, secs, ""),
            };
            run_on(&d.table, &d.places, &[job], spec).unwrap()
        };
        let get = |r: &VariantRun, k: &str| r.fio.device.iter().find(|c| c.0 == k).unwrap().1;
        let wa = |r: &VariantRun| crate::report::summary::write_amplification(&r.fio.device);
        assert!(run("nullb", 1).fio.device.is_empty());
        // no write buffer: every 4 KiB the job wrote is a host page (the run's end may
        // leave up to the queue depth programmed but not yet reported to fio)
        let femu = run("ssd:preset=femu-bb", 1);
        let written = femu.fio.jobs[0].stats.dd[1].io_bytes / 4096;
        let host = get(&femu, "host_write_pages");
        assert!(
            host >= written && host <= written + 32,
            "{host} vs {written}"
        );
        assert_eq!(
            get(&femu, "nand_write_pages"),
            host + get(&femu, "gc_copied_pages")
        );
        // the full consumer drive is past its buffer and spare blocks within 2 s
        let full = run("ssd:preset=consumer-tlc", 2);
        assert!(wa(&full).unwrap() > 1.5, "{:?}", full.fio.device);
        assert!(get(&full, "gc_erases") >= get(&full, "gc_erases_background"));
        assert!(get(&full, "gc_erases") > 0);
        // a fresh drive has free blocks for the whole second: nothing to copy
        let fresh = run("ssd:preset=femu-bb,precondition=none", 1);
        assert_eq!(get(&fresh, "gc_copied_pages"), 0);
        assert_eq!(wa(&fresh), Some(1.0));
    }

    #[test]
    fn a_bursting_volume_drains_its_credits_then_runs_at_the_baseline() {
        // gp2-like: 300 baseline, 3000 burst, credits for 4 s of burst
        let d = DeviceUnderTest::from_spec("cloud:preset=aws-gp2-100g,credit_secs=4").unwrap();
        let (t, panels) = cloud_bucket(&d).unwrap().unwrap();
        assert_eq!(t, 6);
        let iops = &panels[0].series[0].points;
        let at = |s: f64| {
            iops.iter()
                .find(|p| p.0 == s + 0.5)
                .map(|p| p.1)
                .unwrap_or(0.0)
        };
        assert!(at(1.0) > 2_500.0, "{iops:?}");
        assert!(at(5.0) < 400.0, "{iops:?}");
        // idle from 6 s to 12 s: 6 s of unused baseline buy a shorter second burst
        assert!(at(12.0) > 1_500.0, "{iops:?}");
        assert!(at(14.0) < 400.0, "{iops:?}");
        let throttled = &panels[1].series[0].points;
        assert!(throttled.iter().any(|p| p.1 > 0.0));
    }
}
