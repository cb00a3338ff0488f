//! `blkcg-sim validate`: run a scenario on a real Linux kernel under qemu and beside
//! its simulation.
//!
//! Design
//! ------
//! The scenario is the single source: one resolved variant yields both the guest's
//! `/init` and the simulation, so the two sides cannot drift apart. The moving parts:
//!
//! - `kernel.rs`  — obtain a kernel (Debian package via `apt-get download`, a `.deb`,
//!   or an unpacked tree), cache it, read `CONFIG_HZ`, extract a PVH `vmlinux`, resolve
//!   module dependencies; check the host's tools;
//! - `guest.rs`   — the scenario as a busybox `/init` (pure text, golden-tested; every
//!   name and argument of the scenario in it shell-quoted);
//! - `boot.rs`    — the initramfs (busybox, the host's fio and its libraries, modules),
//!   staged in a scratch folder of its own, and the qemu run with its console captured
//!   (TCG icount by default; KVM only if it really boots);
//! - `console.rs` — the `@@blkcg-sim` marker protocol read back;
//! - `compare.rs` — both sides' fio JSON read by one reader, lined up with ratios, plus
//!   the vrate trajectories and, with several kernels, a before/after table;
//! - `random.rs`  — `validate --random N`: scenarios drawn from a grammar, each
//!   validated as above, their figures appended to `random.jsonl` (resumable, sharded);
//! - `build.rs`, `kconfig.rs` — `blkcg-sim kernel build`: a guest kernel from source
//!   with patches, cached as an unpacked package (`--kernel built:KEY`).
//!
//! A run checks what it can before anything slow: the scenario, the host tools (one
//! error listing the missing ones), then downloads the kernel, reads its modules, and
//! only then simulates and boots. `--dry-run` stops after the plan and prints the
//! guest's files and `/init`, downloading nothing. Nothing is deleted but the scratch
//! folder the run created and, in `--output DIR`, files of validate's own naming an
//! earlier run left (`is_output_name`); DIR gets our own named files only, and last
//! `report.html`: each kernel's real-vs-simulated table with the ratios coloured (within
//! 5%, 20%, beyond), the full text, the before/after table and links to the files.
//!
//! The simulation runs with `kernel.version` set to the booted kernel's upstream
//! release (`MAJOR.MINOR.PATCH`, from its banner), `hz` to its `CONFIG_HZ`, and by
//! default the host costs measured in the guest for that kernel series
//! ([`GUEST_HOSTS`]: the emulated CPU's work per I/O and per page differs between
//! kernels); everything else (behaviour switches) is the scenario's, so a disagreement
//! is the simulator's to explain — except the behaviours a built kernel's patches
//! declare (`--patch fix.patch=iocost.no_completion:keep-if-lagging`), pinned too. Each
//! `--kernel` is one such run; with several, a before/after table of every kernel's
//! real and simulated headline figures ends the report.

pub mod boot;
pub mod build;
pub mod campaign;
pub mod compare;
pub mod console;
pub mod guest;
pub mod kconfig;
pub mod kernel;
pub mod random;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::notify::Notify;
use crate::report::charts::Exhibits;
use crate::report::fio as fioreport;
use crate::report::html::Page;
use crate::report::outdir::OutDir;
use crate::report::plot::{Panel, Series};
use crate::run::{VariantRun, run_variant};
use crate::scenario::Scenario;
use crate::scenario::host_profile;
use crate::scenario::resolve::Resolved;
use crate::stack::registry::{self, Kconfig};
use crate::workload::cmdline::parse_fio;
pub use boot::Timing;
use compare::Figures;
use console::GuestOutput;
use guest::GuestPlan;

/// Whose host costs the simulation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostSource {
    /// The guest's, measured under TCG icount ([`GUEST_HOSTS`]): compares the kernels.
    Guest,
    /// The scenario's `[host]`, as `blkcg-sim run` uses it.
    Scenario,
}

/// One guest profile: the kernel series it was measured on, its `[host] profile`
/// (`crate::scenario::host_profile`, where the keys' values live), and the driver's
/// completion-to-dispatch cost (`[device] dispatch_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestHost {
    pub series: (u32, u32),
    pub profile: &'static str,
    pub dispatch_ns: i64,
}

impl GuestHost {
    /// The `[host]` keys of its profile and their values, as `validate` pins them.
    pub fn host(&self) -> Vec<(&'static str, toml::Value)> {
        let keys = host_profile::profile(self.profile).map_or(&[][..], |p| p.keys);
        std::iter::once(("profile", toml::Value::String(self.profile.into())))
            .chain(
                keys.iter()
                    .map(|&(k, v)| (k, toml::Value::Integer(v as i64))),
            )
            .collect()
    }
}

/// The qemu TCG icount guest, per kernel series (the guest's own CPU work per I/O
/// differs between kernels). Its profile's keys: measured with QD1 O_DIRECT I/O of 4 KiB, 64 KiB
/// and 1 MiB on null_blk at 100 µs (docs/validation.md §5): submission for 4 KiB and
/// per further page (slat), completion likewise (clat), and fio's loop (the QD1 job's
/// IOPS short of slat + clat). No exponential wake-up noise; but fio's sleeps on the
/// guest's one vCPU now and then end late (`wakeup_slip_*`).
/// - 6.1.192: slat 5.2 / 10.7 / 103–106 µs, clat 105.9 / 106.3 / 119–120 µs; slips not
///   measured (no block tracepoints recorded on it), none;
/// - 6.12.117: slat 5.5 / 13.6 / 143–145 µs, clat 106.6 / 108.4 / 131–136 µs; slips
///   from `validate-iocost-saturated`'s block tracepoints, stock and patched boots
///   (docs/validation.md §8): of the 464 rate-paced sleeps of cgB's fio (`rate_iops`,
///   each I/O due 10 ms after the last of its direction) once both fio jobs run, 12
///   ended 32–165 µs late, the rest within 16 µs. (While the other fio starts up, the
///   first ~0.3 s, 13 of 31 slept up to 3.7 ms late; not modelled.)
///
/// `dispatch_ns`: a one-tag null_blk in timer mode with a QD4 reader
/// (`validate-nullb-dispatch`, docs/validation.md §15) completes a request every
/// completion_nsec + dispatch_ns: the completion path, the waiting submitter's
/// wake-up and the next `->queue_rq()` (`blk_mq_end_request()` →
/// `blk_mq_get_tag()` → `null_queue_rq()`).
/// Steady seconds of the device timeline:
/// - 6.1.192: 58.2k IOPS at 10 µs (7.2 µs more per request), 17.66k at 50 µs (6.6 µs):
///   6.9 µs;
/// - 6.12.117: 63.8k at 10 µs, 17.97k at 50 µs: 5.7 µs both.
///
/// The completion inside the submitting call (`inline_complete_ns`, `reap_ns`,
/// `sync_submit_ns`): null_blk in softirq mode (irqmode=1) ends a request inside
/// `->queue_rq()` on the guest's one vCPU, so a QD1 libaio job's slat holds the
/// completion path and its clat only io_getevents() finding the event; psync has no
/// aio to set up. Measured with `validate-nullb-softirq` (docs/validation.md §21):
/// 4 KiB QD1 libaio slat less `submit_ns`, its clat, and psync's clat less the inline
/// completion (64 KiB adds nothing measurable to the inline completion: flat):
/// - 6.1.0-56: slat 6.05 µs, clat 1.46 µs, psync 4.64 µs: 0.85, 1.46, 3.8 (timer-mode
///   psync 3.8 + `complete_ns` = 9.8 µs, the campaign's 9.07–9.82);
/// - 6.12.117: slat 6.90 µs, clat 1.51 µs (p50), psync 5.09 µs: 1.4, 1.51, 3.7.
///
/// Who runs the queue (`elevator_ns`, `workqueue_ns`, `sleep_flush_ns`;
/// `crate::sim::plug`): `validate-kblockd-queue-run` (docs/validation.md §23), QD1
/// 4 KiB on a softirq null_blk, mq-deadline against `none`:
/// - 6.1.0-56: an aio write (plugged, flushed as the call returns: the caller runs
///   the queue) 8.36 µs slat against 6.40: `elevator_ns` 1.9 (the psync writes differ
///   by 1.35); an aio read (kblockd) 14.23 against 6.03 and a psync read 12.74 against
///   4.64: 8.1–8.2 µs more, of which the elevator's 1.9: `workqueue_ns` 6.2; a psync
///   write sleeps with its request in the plug, with `none` too: 14.78 against the
///   read's 4.64: `sleep_flush_ns` 10.1;
/// - 6.12.117: every job 1.79–1.90 µs more with mq-deadline (no write plug since 6.5),
///   split as on 6.1: `elevator_ns` 0.45, `workqueue_ns` 1.4; `sleep_flush_ns` 2.3
///   (6.1's ratio; no 6.12 path sleeps with a plug).
///
/// The tag sleeper's wake-up (`tag_wakeup_ns`, `tag_wakeup_slip_*`, `cpus`): the same
/// scenario at 50 µs traced (`--trace-event sched:sched_switch`, `timer:*`,
/// `block:*`, docs/validation.md §15): from the hrtimer's expiry to the woken
/// submitter's `block_getrq` (it has the tag), less ~0.7 µs per tracepoint on the
/// way (the tracing's own cost under icount: 0.72 on 6.1, 0.71 on 6.12, so that the
/// traced expiry-to-issue is the untraced `dispatch_ns`): 6.4 µs on 6.1, 5.4 µs on
/// 6.12. Of its wake-ups 12 in 15,726 (6.1) and 7 in
/// 14,533 (6.12) ran more than 20 µs late, 68 and 231 µs on average (uniform up to
/// twice that). One vCPU: the tasks a completion wakes run one after another,
/// the reaping fio first (§13's traces).
pub const GUEST_HOSTS: [GuestHost; 2] = [
    GuestHost {
        series: (6, 1),
        profile: "qemu-6.1",
        dispatch_ns: 6_900,
    },
    GuestHost {
        series: (6, 12),
        profile: "qemu-6.12",
        dispatch_ns: 5_700,
    },
];

/// The guest profile measured on the newest series not newer than `version`
/// (`MAJOR.MINOR[.PATCH]`), or the oldest one; and the series it was measured on.
pub fn guest_host(version: &str) -> (String, &'static GuestHost) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let v = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let g = GUEST_HOSTS
        .iter()
        .rev()
        .find(|g| g.series <= v)
        .unwrap_or(&GUEST_HOSTS[0]);
    (format!("{}.{}", g.series.0, g.series.1), g)
}

/// `blkcg-sim validate` options.
#[derive(Debug, Clone)]
pub struct ValidateOptions<'a> {
    pub variant: Option<String>,
    /// Each a Debian package name, `.deb`, unpacked tree, or a build (`built:KEY`, or
    /// its folder); none: Debian's current kernel. Several: one run each, then a
    /// before/after table.
    pub kernels: Vec<String>,
    pub runs: u32,
    pub timing: Timing,
    /// Keep the console captures and both sides' fio JSON here.
    pub output: Option<PathBuf>,
    pub host: HostSource,
    /// More tracepoints to record in the guest (`SYSTEM:EVENT`), kept with --output.
    pub trace_events: Vec<String>,
    /// Kprobes to define and record in the guest (`--kprobe p:NAME FUNCTION ARGS`).
    pub kprobes: Vec<String>,
    /// Record the disk's blktrace in the guest (`--blktrace`), kept with --output.
    pub blktrace: bool,
    /// Print the guest's `/init` and the initramfs's files instead of running.
    pub dry_run: bool,
    /// Where its status lines go (booting, building the initramfs, the guest's own).
    pub notify: &'a dyn Notify,
}

/// Host commands every run needs (command, Debian package): [`kernel::INSTALL_LINE`].
const RUN_TOOLS: [(&str, &str); 8] = [
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("busybox", "busybox-static"),
    ("fio", "fio"),
    ("cpio", "cpio"),
    ("ldd", "libc-bin"),
    ("modinfo", "kmod"),
    ("xz", "xz-utils"),
    ("zstd", "zstd"),
];

/// Host commands fetching and unpacking a kernel package needs.
const FETCH_TOOLS: [(&str, &str); 3] = [
    ("apt-get", "apt"),
    ("apt-cache", "apt"),
    ("dpkg-deb", "dpkg"),
];

/// The host tools a run with `--kernel spec` needs: [`FETCH_TOOLS`] too unless that
/// kernel is at hand.
fn check_tools(spec: Option<&str>) -> Result<(), String> {
    let mut tools = RUN_TOOLS.to_vec();
    if !matches!(kernel::at_hand(spec), Ok(Some(_))) {
        tools.extend(FETCH_TOOLS);
    }
    kernel::check_tools(&tools)
}

/// What `--dry-run` says of the host tools the kernels of `--kernel` (`specs`) need:
/// `all installed`, or what is missing and how to install it.
pub(crate) fn host_tools(specs: &[String]) -> String {
    match Target::all(specs) {
        Ok(targets) => targets
            .iter()
            .find_map(|t| check_tools(t.spec.as_deref()).err())
            .unwrap_or_else(|| "all installed".into()),
        Err(e) => e,
    }
}

/// Check that the booted kernel has what the scenario uses: the kernel config options
/// the registry names for each written file's policy and for the scheduler's elevator.
fn check_config(plan: &GuestPlan, k: &kernel::Kernel) -> Result<(), String> {
    // `6.1.0-56-amd64` → (6, 1); an unreadable release checks every option
    let mut nums = k.release.split(['.', '-']).map(|n| n.parse::<u32>().ok());
    let version = match (nums.next().flatten(), nums.next().flatten()) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let mut needs: Vec<(String, &[Kconfig])> = Vec::new();
    for w in &plan.writes {
        if let Some((owner, _)) = registry::cgroup_file(w.file) {
            needs.push((format!("{} lines", w.file), owner.kconfig));
        }
    }
    for (attr, value) in &plan.queue_attrs {
        if let Some(e) = registry::ELEVATORS
            .iter()
            .find(|e| attr == "scheduler" && e.name == value)
        {
            needs.push((format!("scheduler {value}"), e.kconfig));
        }
    }
    for (what, opts) in needs {
        let required = opts
            .iter()
            .filter(|o| o.required && version.is_none_or(|v| o.in_version(v)));
        for o in required {
            let opt = format!("CONFIG_{}", o.name);
            // a module (`=m`) is loaded by the guest (`GuestPlan::modules()`)
            if !matches!(k.has(&opt), Some("y" | "m")) {
                return Err(format!(
                    "kernel {} is built without {opt}, which the scenario's {what} need",
                    k.release
                ));
            }
        }
    }
    Ok(())
}

/// fio options validate cannot carry over to real fio, read from the very text the
/// simulation reads.
fn check_fio(sc: &Scenario, r: &Resolved) -> Result<(), String> {
    for f in r.fio.iter().filter(|f| !f.text.trim().is_empty()) {
        let jobs = parse_fio(sc, f)?;
        for j in &jobs.jobs {
            if j.cgroup.is_some() {
                return Err(format!(
                    "{}: fio job `{}` sets fio's `cgroup=` option; validate starts each fio \
                     inside its scenario cgroup instead: put the job under [cgroup.NAME]",
                    sc.file, j.name
                ));
            }
        }
    }
    Ok(())
}

fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON ({e})"))
}

/// The names validate may write under `--output` for `kernels` kernels, `runs` boots
/// each and `fio` fio runs per boot: per kernel (its column and `-` before each name
/// with several) `sim-fio.json`, `console-R.txt`, `trace-R.txt`,
/// `real-fio-N-runR.json`; then `report.html`.
fn output_names(kernels: usize, runs: u32, fio: usize) -> Vec<String> {
    let mut names = Vec::new();
    for k in 0..kernels {
        let prefix = kernel_prefix(k, kernels);
        names.push(format!("{prefix}sim-fio.json"));
        for run in 1..=runs {
            names.push(format!("{prefix}console-{run}.txt"));
            names.push(format!("{prefix}trace-{run}.txt"));
            names.extend((0..fio).map(|n| format!("{prefix}real-fio-{n}-run{run}.json")));
        }
    }
    names.push("report.html".into());
    names
}

/// What starts the names of kernel `n`'s files: its column and `-` with several.
fn kernel_prefix(n: usize, kernels: usize) -> String {
    if kernels > 1 {
        format!("{}-", column(n))
    } else {
        String::new()
    }
}

/// Whether `name` is one of the names [`output_names`] gives for some count of
/// kernels, boots and fio runs: what an earlier validate may have left in `--output`.
fn is_output_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if name == "report.html" {
        return true;
    }
    // with several kernels: the column (`A`..`Z`, then `K27`...) and `-`
    let name = match name.split_once('-') {
        Some((col, rest))
            if (col.len() == 1 && col.bytes().all(|b| b.is_ascii_uppercase()))
                || col.strip_prefix('K').is_some_and(digits) =>
        {
            rest
        }
        _ => name,
    };
    if name == "sim-fio.json" {
        return true;
    }
    if let Some(n) = name
        .strip_prefix("console-")
        .or_else(|| name.strip_prefix("trace-"))
        .and_then(|r| r.strip_suffix(".txt"))
    {
        return digits(n);
    }
    name.strip_prefix("real-fio-")
        .and_then(|r| r.strip_suffix(".json"))
        .and_then(|r| r.split_once("-run"))
        .is_some_and(|(n, run)| digits(n) && digits(run))
}

/// validate's folder under `--output`, through [`OutDir`] as `run --output` writes:
/// every name of [`output_names`] and every other file of validate's naming an
/// earlier run left (one with more boots, fio runs or kernels: [`is_output_name`]) is
/// removed first (a symlink as a link, never followed), then each file is created
/// with `O_NOFOLLOW | O_EXCL`. Remembers what it wrote, for `report.html`'s links.
struct Files {
    dir: OutDir,
    written: Vec<String>,
}

impl Files {
    fn open(dir: &Path, names: &[String]) -> Result<Files, String> {
        let earlier: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| is_output_name(n) && !names.contains(n))
            .collect();
        let names: Vec<&str> = names.iter().chain(&earlier).map(String::as_str).collect();
        Ok(Files {
            dir: OutDir::top_owning(dir, &names)?,
            written: Vec::new(),
        })
    }

    fn write(&mut self, name: &str, text: &str) -> Result<(), String> {
        self.dir.write(name, text)?;
        self.written.push(name.to_string());
        Ok(())
    }

    /// The files written since the last call, sorted.
    fn take_written(&mut self) -> Vec<String> {
        let mut v = std::mem::take(&mut self.written);
        v.sort();
        v
    }
}

/// `--trace-event` values, checked: `SYSTEM:EVENT` as tracefs names them.
fn trace_events(given: &[String]) -> Result<Vec<String>, String> {
    given
        .iter()
        .map(|e| match e.split_once(':') {
            Some((sys, ev))
                if !sys.is_empty()
                    && !ev.is_empty()
                    && e.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') =>
            {
                Ok(e.clone())
            }
            _ => Err(format!(
                "--trace-event `{e}`: expected SYSTEM:EVENT as in /sys/kernel/tracing/events, \
                 e.g. block:block_rq_requeue"
            )),
        })
        .collect()
}

/// `--kprobe` values, checked: `p:NAME` or `r:NAME`, a function (`MODULE:` before it
/// for a module's), then fetch arguments, each word of the characters tracefs's
/// kprobe syntax uses (`kernel/trace/trace_kprobe.c`); returned as (NAME, definition).
/// The guest's shell gets the definition quoted all the same.
fn kprobes(given: &[String]) -> Result<Vec<(String, String)>, String> {
    let word_ok = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.:%$+-()=@>,[]/".contains(&b))
    };
    let name_ok =
        |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    given
        .iter()
        .map(|def| {
            let words: Vec<&str> = def.split_whitespace().collect();
            let name = words
                .first()
                .and_then(|w| w.strip_prefix("p:").or_else(|| w.strip_prefix("r:")))
                .filter(|n| name_ok(n));
            match (name, words.get(1)) {
                (Some(name), Some(_)) if words[1..].iter().all(|w| word_ok(w)) => {
                    Ok((name.to_string(), words.join(" ")))
                }
                _ => Err(format!(
                    "--kprobe `{def}`: expected `p:NAME [MODULE:]FUNCTION [ARG=FETCH ...]` (or \
                     `r:NAME ...` on return) as /sys/kernel/tracing/kprobe_events takes it, \
                     NAME of letters, digits and `_`, e.g. `p:bfq_expire bfq:bfq_bfqq_expire \
                     reason=%cx`"
                )),
            }
        })
        .collect()
}

/// The simulated side: the scenario pinned to the booted kernel.
struct SimSide {
    /// The first seed's run (its io.stat, iostat and vrate rows are the report's).
    run: VariantRun,
    json: String,
    /// One per seed: the scenario's seed and the next ones, as many as `--runs`, since
    /// with the guest's scheduling noise a regime can be a draw as on the real side.
    figures: Vec<Figures>,
    /// The longest job's run time, seconds.
    seconds: u64,
    version: String,
    hz: u32,
    throttling_low: bool,
    /// The kernel series whose guest host costs the simulation used.
    host_series: String,
    /// Behaviours pinned for a built kernel's patches (`SWITCH=VALUE`).
    behaviours: Vec<String>,
}

fn simulate(
    sc: &Scenario,
    o: &ValidateOptions<'_>,
    kernel: &kernel::Kernel,
    behaviours: &[(String, String)],
    seed: u64,
) -> Result<SimSide, String> {
    let hz = kernel
        .hz()
        .ok_or_else(|| format!("kernel {}: no CONFIG_HZ in its config file", kernel.release))?;
    let version = kernel.upstream_version();
    let throttling_low = kernel.has("CONFIG_BLK_DEV_THROTTLING_LOW") == Some("y");
    let mut pins: Vec<(&[&str], &str, toml::Value)> = vec![
        (&["kernel"], "version", version.clone().into()),
        (&["kernel"], "hz", i64::from(hz).into()),
        (
            &["kernel", "config"],
            "throttling_low",
            throttling_low.into(),
        ),
    ];
    // the guest boots fresh: blk-iocost starts from 100% there, so the simulation does too
    if sc
        .resolve(o.variant.as_deref())
        .is_ok_and(|r| r.state.iocost_vrate_pct.is_some())
    {
        o.notify.status(
            "validate: [state] \"iocost.vrate\" cannot be set on a freshly booted kernel; both sides start from 100%",
        );
        pins.push((&["state"], "iocost.vrate", toml::Value::Float(100.0)));
    }
    // what a built kernel's patches turn on, as the simulator's named behaviours
    pins.extend(
        behaviours
            .iter()
            .map(|(k, v)| (&["kernel"][..], k.as_str(), toml::Value::String(v.clone()))),
    );
    let (host_series, guest_costs) = guest_host(&version);
    if o.host == HostSource::Guest {
        pins.extend(
            guest_costs
                .host()
                .into_iter()
                .map(|(k, v)| (&["host"][..], k, v)),
        );
        pins.push((
            &["device"],
            "dispatch_ns",
            toml::Value::Integer(guest_costs.dispatch_ns),
        ));
    }
    let pinned = sc.pinned(&pins);
    let figures_of = |run: &VariantRun, json: &str| -> Result<Figures, String> {
        let doc = parse_json(json, "the simulator's fio JSON")?;
        Ok(compare::job_figures(&doc, |i| {
            run.fio.jobs.get(i).map_or(0, |j| j.round)
        }))
    };
    let run = run_variant(&pinned, o.variant.as_deref(), None, None, false)?;
    let json = fioreport::json::to_json(&run.fio, false);
    let mut figures = vec![figures_of(&run, &json)?];
    for n in 1..u64::from(o.runs.max(1)) {
        let more = run_variant(
            &pinned,
            o.variant.as_deref(),
            None,
            Some(seed.wrapping_add(n)),
            false,
        )?;
        figures.push(figures_of(
            &more,
            &fioreport::json::to_json(&more.fio, false),
        )?);
    }
    let doc = parse_json(&json, "the simulator's fio JSON")?;
    let seconds = doc["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|j| j["elapsed"].as_u64())
        .max()
        .unwrap_or(0);
    Ok(SimSide {
        figures,
        run,
        json,
        seconds,
        version,
        hz,
        throttling_low,
        host_series,
        behaviours: behaviours.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    })
}

/// The real side: one set of figures per boot, and the last boot's other outputs.
struct RealSide {
    runs: Vec<Figures>,
    last: GuestOutput,
    accel: String,
    mean_wall_s: f64,
}

fn boot_runs(
    plan: &GuestPlan,
    kernel: &kernel::Kernel,
    o: &ValidateOptions<'_>,
    initrd: &Path,
    seconds: u64,
    files: &mut Option<Files>,
    prefix: &str,
) -> Result<RealSide, String> {
    let budget = boot::BootBudget {
        run: Duration::from_secs(90 + 4 * seconds),
        trace: Duration::from_secs(plan.trace_print_budget_s()),
    };
    let n_runs = o.runs.max(1);
    let mut real = RealSide {
        runs: Vec::new(),
        last: GuestOutput::default(),
        accel: String::new(),
        mean_wall_s: 0.0,
    };
    for run in 1..=n_runs {
        o.notify.status(&format!(
            "validate: booting Linux {} under qemu, run {run} of {n_runs} (about {} s)",
            kernel.release,
            seconds * 2 + 10
        ));
        let b = boot::boot(kernel, initrd, o.timing, 2048, budget, &mut |m| {
            o.notify.status(&format!("  guest: {m}"))
        })?;
        let g = GuestOutput::parse(&b.console);
        if let Some((lost, written)) = g.trace_lost() {
            o.notify.warning(&format!(
                "the guest's trace buffer ({} KiB) kept the last {} of {written} events: \
                 trace fewer events (--trace-event, no --blktrace) or a shorter run",
                plan.trace_buffer_kb(),
                written - lost
            ));
        }
        if let Some(f) = files.as_mut() {
            f.write(&format!("{prefix}console-{run}.txt"), &b.console)?;
            f.write(&format!("{prefix}trace-{run}.txt"), &g.trace)?;
        }
        if !g.errors.is_empty() || !g.done {
            return Err(format!(
                "the guest did not complete: {}",
                if g.errors.is_empty() {
                    "no `done` marker (see the console with --output DIR)".to_string()
                } else {
                    g.errors.join("; ")
                }
            ));
        }
        let mut figs = Figures::new();
        for (n, f) in plan.fio.iter().enumerate() {
            let Some(text) = g.fio.get(&n) else {
                return Err(format!(
                    "real fio #{n} (cgroup `{}`) wrote no JSON: {}",
                    f.cgroup,
                    g.fio_logs
                        .get(&n)
                        .map(String::as_str)
                        .unwrap_or("no output")
                        .trim()
                ));
            };
            if let Some(f) = files.as_mut() {
                f.write(&format!("{prefix}real-fio-{n}-run{run}.json"), text)?;
            }
            figs.extend(compare::job_figures(
                &parse_json(text, "real fio's JSON")?,
                |_| f.round,
            ));
        }
        real.runs.push(figs);
        real.accel = b.accel;
        real.mean_wall_s += b.wall.as_secs_f64() / f64::from(n_runs);
        real.last = g;
    }
    Ok(real)
}

/// The side-by-side report.
fn render(
    plan: &GuestPlan,
    o: &ValidateOptions,
    target: &Target,
    kernel: &kernel::Kernel,
    seed: u64,
    real: &RealSide,
    sim: &SimSide,
) -> String {
    let last = &real.last;
    let mut s = String::new();
    let _ = writeln!(s, "validate: {}", plan.title);
    if let Some(b) = &target.built {
        let _ = writeln!(s, "kernel: built:{}, {}", b.key, b.summary());
    }
    let _ = writeln!(
        s,
        "real: Linux {} (CONFIG_HZ={}) under qemu, {}; {} run(s), {:.1} s wall each",
        last.kernel.as_deref().unwrap_or(&kernel.release),
        sim.hz,
        real.accel,
        real.runs.len(),
        real.mean_wall_s
    );
    let _ = writeln!(
        s,
        "sim:  kernel.version = \"{}\", hz = {}, throttling_low = {}, {}, {}",
        sim.version,
        sim.hz,
        sim.throttling_low,
        match sim.figures.len() as u64 {
            1 => format!("seed {seed}"),
            n => format!("seeds {seed}..{}", seed.wrapping_add(n - 1)),
        },
        match o.host {
            HostSource::Guest => format!(
                "host costs and dispatch_ns of the qemu guest, measured on {} (--host guest)",
                sim.host_series
            ),
            HostSource::Scenario => "the scenario's host costs (--host scenario)".to_string(),
        }
    );
    if !sim.behaviours.is_empty() {
        let _ = writeln!(
            s,
            "      pinned for the kernel's patches: {}",
            sim.behaviours.join(", ")
        );
    }
    if o.timing == Timing::Icount && real.runs.len() > 1 {
        let _ = writeln!(
            s,
            "      (icount runs differ only slightly; --timing realtime shows the kernel's run-to-run noise)"
        );
    }
    for r in &last.refused {
        let _ = writeln!(s, "the real kernel refused: {r}");
    }
    s.push('\n');
    s.push_str(&compare::table(&real.runs, &sim.figures));
    let _ = writeln!(
        s,
        "\nio.stat, real (guest device {}):",
        last.dev.as_deref().unwrap_or("?")
    );
    for (cg, text) in &last.io_stat {
        let _ = write!(s, "  {}: {text}", if cg.is_empty() { "/" } else { cg });
    }
    let _ = writeln!(s, "io.stat, simulated:");
    for l in sim.run.io_stat.lines() {
        let _ = writeln!(s, "  {l}");
    }
    if !last.io_pressure.is_empty() {
        let _ = writeln!(s, "\nio.pressure, real:");
        for (cg, text) in &last.io_pressure {
            for l in text.lines() {
                let _ = writeln!(s, "  {}: {l}", if cg.is_empty() { "/" } else { cg });
            }
        }
        let _ = writeln!(s, "io.pressure, simulated:");
        for l in sim.run.io_pressure.lines() {
            let _ = writeln!(s, "  {l}");
        }
    }
    let sim_disk = sim_disk(sim);
    let _ = writeln!(
        s,
        "\ndevice timeline (real: /sys/block/{}/stat once a second):",
        plan.disk
    );
    s.push_str(&compare::iostat_table(
        &compare::real_iostat(&last.diskstat),
        &sim_disk,
    ));
    if !last.dirty.is_empty() {
        let sim_dirty = sim_dirty(sim);
        let _ = writeln!(
            s,
            "\npage cache (real: /proc/meminfo Dirty and Writeback once a second; sim: its rows):"
        );
        s.push_str(&compare::dirty_table(
            &compare::real_dirty(&last.dirty),
            &sim_dirty,
        ));
    }
    if plan.iocost {
        let sim_vrate = sim_vrate(sim);
        let _ = writeln!(
            s,
            "\nblk-iocost vrate (real: iocost_ioc_vrate_adj tracepoint; sim: period rows):"
        );
        s.push_str(&compare::vrate_table(
            &compare::real_vrate(&last.trace),
            &sim_vrate,
            sim.seconds,
        ));
    }
    s
}

/// The simulated device's seconds as the real side's are read.
fn sim_disk(sim: &SimSide) -> Vec<compare::DiskSecond> {
    sim.run
        .record
        .iostat
        .iter()
        .map(|r| compare::DiskSecond {
            r_iops: r.r_ios as f64,
            w_iops: r.w_ios as f64,
            r_mib: r.r_bytes as f64 / 1_048_576.0,
            w_mib: r.w_bytes as f64 / 1_048_576.0,
            r_merges: r.r_merges as f64,
            w_merges: r.w_merges as f64,
        })
        .collect()
}

/// The simulated page cache at each whole second (its 100 ms global rows), empty at
/// the start as the real one is at its first sample.
fn sim_dirty(sim: &SimSide) -> Vec<compare::PageCacheSecond> {
    let mib = |pages: u64| (pages * crate::writeback::limits::PAGE_SIZE) as f64 / 1_048_576.0;
    std::iter::once((0.0, 0.0))
        .chain(
            sim.run
                .record
                .rows::<crate::writeback::timeline::WbRow>()
                .iter()
                .filter_map(|r| match *r {
                    crate::writeback::timeline::WbRow::Global {
                        at,
                        dirty,
                        writeback,
                        ..
                    } if at % crate::sim::NSEC_PER_SEC == 0 => Some((mib(dirty), mib(writeback))),
                    _ => None,
                }),
        )
        .collect()
}

/// The simulated base vrate after each period: (seconds, %).
fn sim_vrate(sim: &SimSide) -> Vec<(f64, f64)> {
    sim.run
        .record
        .rows::<crate::iocost::ctl::PeriodRow>()
        .iter()
        .map(|r| (r.t as f64 / 1e9, r.vrate_base_pct))
        .collect()
}

/// report.html's charts of one kernel: the real and the simulated series over time
/// where the guest sampled them (the disk's counters and the page cache once a
/// second, blk-iocost's vrate from its tracepoint), each real line beside its
/// simulated twin.
fn timeline_charts(plan: &GuestPlan, real: &RealSide, sim: &SimSide) -> Exhibits {
    let last = &real.last;
    let per_second = |name: &str, values: Vec<f64>| Series {
        name: name.to_string(),
        points: values
            .into_iter()
            .enumerate()
            .map(|(t, v)| (t as f64, v))
            .collect(),
    };
    let (real_disk, sim_disk) = (compare::real_iostat(&last.diskstat), sim_disk(sim));
    let disk = |label: &str, get: fn(&compare::DiskSecond) -> f64| Panel {
        y_label: label.to_string(),
        log_y: false,
        series: vec![
            per_second("real", real_disk.iter().map(get).collect()),
            per_second("sim", sim_disk.iter().map(get).collect()),
        ],
    };
    let mut panels = vec![
        disk("device reads/s", |d| d.r_iops),
        disk("device writes/s", |d| d.w_iops),
        disk("device read MiB/s", |d| d.r_mib),
        disk("device write MiB/s", |d| d.w_mib),
    ];
    if !last.dirty.is_empty() {
        let (r, s) = (compare::real_dirty(&last.dirty), sim_dirty(sim));
        panels.push(Panel {
            y_label: "page cache MiB".into(),
            log_y: false,
            series: vec![
                per_second("real Dirty", r.iter().map(|d| d.0).collect()),
                per_second("sim dirty", s.iter().map(|d| d.0).collect()),
                per_second("real Writeback", r.iter().map(|d| d.1).collect()),
                per_second("sim writeback", s.iter().map(|d| d.1).collect()),
            ],
        });
    }
    if plan.iocost {
        panels.push(Panel {
            y_label: "blk-iocost base vrate %".into(),
            log_y: false,
            series: vec![
                Series {
                    name: "real (iocost_ioc_vrate_adj)".into(),
                    points: compare::real_vrate(&last.trace),
                },
                Series {
                    name: "sim (period rows)".into(),
                    points: sim_vrate(sim),
                },
            ],
        });
    }
    panels.retain(|p| p.series.iter().any(|s| s.points.iter().any(|q| q.1 != 0.0)));
    let mut exhibits = Exhibits::default();
    exhibits.panels("real and simulated over time", "time (s)", &panels, false);
    exhibits
}

/// `--dry-run`: the kernel and host tools at hand, the initramfs's files and where
/// each comes from, then the generated ones (`/init`, job files) in full.
fn dry_run(plan: &GuestPlan, target: &Target) -> Result<String, String> {
    let mut s = String::new();
    let _ = writeln!(s, "validate --dry-run: {}", plan.title);
    let kernel = kernel::at_hand(target.spec.as_deref())
        .and_then(|k| k.ok_or_else(|| "not downloaded yet".to_string()))
        .and_then(|k| Ok((k.modules_for(&plan.modules())?, k)));
    match &kernel {
        Ok((_, k)) => {
            let _ = writeln!(
                s,
                "kernel: Linux {} (modules from {})",
                k.release,
                k.modules.display()
            );
        }
        Err(e) => {
            let _ = writeln!(
                s,
                "kernel: none at hand ({e}); a dry run downloads none, so the /init below \
                 loads no modules (a real run loads {} and its dependencies first)",
                boot::MODULES.join(", ")
            );
        }
    }
    let _ = writeln!(
        s,
        "host tools: {}",
        check_tools(target.spec.as_deref()).map_or_else(|e| e, |()| "all installed".into())
    );
    let files = boot::initramfs(plan, kernel.as_ref().ok().map(|(m, _)| m.as_slice()))?;
    let _ = writeln!(s, "\nfiles of the initramfs (guest path, from):");
    for f in &files {
        let from = match &f.content {
            boot::Content::Host(p) => p.display().to_string(),
            boot::Content::Module(p) if p.extension().is_some_and(|e| e == "ko") => {
                p.display().to_string()
            }
            boot::Content::Module(p) => format!("{}, decompressed", p.display()),
            boot::Content::Text(_) => "generated, below".into(),
            boot::Content::Missing { command, package } => {
                format!("`{command}`, not installed here (Debian package {package})")
            }
        };
        let _ = writeln!(s, "  /{:<40} {from}", f.path);
    }
    let mut texts: Vec<(&str, &str)> = files
        .iter()
        .filter_map(|f| match &f.content {
            boot::Content::Text(t) => Some((f.path.as_str(), t.as_str())),
            _ => None,
        })
        .collect();
    texts.sort_by_key(|(path, _)| *path != "init");
    for (path, text) in texts {
        let _ = write!(s, "\n==> /{path} <==\n{text}");
    }
    Ok(s)
}

/// One kernel to run on: the spec `kernel.rs` obtains (None: Debian's current one),
/// and for a kernel `kernel build` made, its record, whose patches' behaviours the
/// simulation pins.
struct Target {
    spec: Option<String>,
    built: Option<build::BuildRecord>,
}

impl Target {
    /// `--kernel` values, builds (`built:KEY`, a build's folder) resolved to the
    /// package-like tree in their cache entry.
    fn all(specs: &[String]) -> Result<Vec<Target>, String> {
        if specs.is_empty() {
            return Ok(vec![Target {
                spec: None,
                built: None,
            }]);
        }
        specs
            .iter()
            .map(|s| {
                if s.starts_with('-') {
                    return Err(format!(
                        "--kernel `{s}`: a kernel is a package name, a .deb, a folder or \
                         built:KEY, never starting with `-` (write ./{s} for a file)"
                    ));
                }
                Ok(match build::built(s)? {
                    Some(b) => Target {
                        spec: Some(b.tree.display().to_string()),
                        built: Some(b.record),
                    },
                    None => Target {
                        spec: Some(s.clone()),
                        built: None,
                    },
                })
            })
            .collect()
    }

    /// The kernel as reports name it: `Linux RELEASE`, or `built:KEY (what it has)`.
    fn name(&self, kernel: &kernel::Kernel) -> String {
        match &self.built {
            Some(b) => format!("built:{} ({})", b.key, b.summary()),
            None => format!("Linux {}", kernel.release),
        }
    }

    fn behaviours(&self) -> Vec<(String, String)> {
        self.built
            .as_ref()
            .map(build::BuildRecord::behaviours)
            .unwrap_or_default()
    }
}

/// The name of the n-th kernel's columns in the before/after table: A, B, ...
fn column(n: usize) -> String {
    match u8::try_from(n) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => format!("K{}", n + 1),
    }
}

/// `blkcg-sim validate`: what it prints goes to `out`, its status lines to `o.notify`.
pub fn validate_command(
    sc: &Scenario,
    o: &ValidateOptions<'_>,
    out: &mut dyn FnMut(&str),
) -> Result<u8, String> {
    validate_figures(sc, o, out).map(|_| 0)
}

/// One kernel's outcome of a validate run: its name as the report gives it, the real
/// figures of each boot and the simulated ones of each seed.
#[derive(Debug, Clone)]
pub struct KernelFigures {
    pub name: String,
    pub real: Vec<Figures>,
    pub sim: Vec<Figures>,
}

/// What `validate` checks before anything slow, in its order, and what they give: the
/// resolved variant, the kernels to run on and the guest's plan.
pub(crate) struct Checked {
    resolved: Resolved,
    targets: Vec<Target>,
    pub(crate) plan: GuestPlan,
}

/// The checks of `validate` and its dry run: `--runs`, the checks `run` makes (as the
/// simulation side makes them for each kernel), what only the guest needs.
pub(crate) fn check(sc: &Scenario, o: &ValidateOptions<'_>) -> Result<Checked, String> {
    if o.runs == 0 {
        return Err(
            "validate: --runs 0: give at least 1 (boots of each kernel, and as many \
                    simulated seeds)"
                .into(),
        );
    }
    let resolved = sc
        .resolve(o.variant.as_deref())
        .map_err(|e| e.to_string())?;
    let targets = Target::all(&o.kernels)?;
    // first the checks `run` makes (the device, every switch, the fio jobs, every
    // interface write), as the simulation side makes them for each kernel, so that
    // validate, its dry run and `run` refuse the same scenarios with the same messages
    let mut page_cache = false;
    for t in &targets {
        let behaviours = t.behaviours();
        let pins: Vec<(&[&str], &str, toml::Value)> = behaviours
            .iter()
            .map(|(k, v)| (&["kernel"][..], k.as_str(), toml::Value::String(v.clone())))
            .collect();
        let p = crate::run::prepare(&sc.pinned(&pins), o.variant.as_deref(), None, None, false)?;
        page_cache |= p.uses_page_cache();
    }
    // then what only the guest needs (a null_blk it can recreate, the trace events)
    let mut plan = GuestPlan::from_resolved(&resolved).map_err(|e| format!("{}: {e}", sc.file))?;
    // cgroup writeback needs the memory controller beside io (cgroup-v2.rst,
    // Writeback), and a reader's page cache is charged by it
    plan.memory |= page_cache;
    plan.stage_iologs(&sc.file);
    plan.extra_events = trace_events(&o.trace_events)?;
    plan.kprobes = kprobes(&o.kprobes)?;
    plan.blk_tracer = o.blktrace;
    check_fio(sc, &resolved)?;
    Ok(Checked {
        resolved,
        targets,
        plan,
    })
}

/// [`validate_command`], handing back each kernel's figures (none with `--dry-run`).
pub fn validate_figures(
    sc: &Scenario,
    o: &ValidateOptions<'_>,
    out: &mut dyn FnMut(&str),
) -> Result<Vec<KernelFigures>, String> {
    let Checked {
        resolved,
        targets,
        plan,
    } = check(sc, o)?;
    if o.dry_run {
        for t in &targets {
            out(&dry_run(&plan, t)?);
        }
        return Ok(Vec::new());
    }
    // everything checkable is checked before a 70 MB download and the simulation
    for t in &targets {
        check_tools(t.spec.as_deref())?;
    }
    let several = targets.len() > 1;
    let mut files = match &o.output {
        Some(dir) => Some(Files::open(
            dir,
            &output_names(targets.len(), o.runs.max(1), plan.fio.len()),
        )?),
        None => None,
    };
    let mut before_after = Vec::new();
    let description = sc.table.get("description").and_then(|d| d.as_str());
    let mut page = Page::new(
        &format!("validate {}", sc.name()),
        description.unwrap_or(""),
    );
    for (n, t) in targets.iter().enumerate() {
        // with several kernels each one's files under --output start with its column
        let prefix = kernel_prefix(n, targets.len());
        let kernel = kernel::obtain(t.spec.as_deref(), &mut |m| {
            o.notify.status(&format!("validate: {m}"))
        })?;
        check_config(&plan, &kernel)?;
        let modules = kernel.modules_for(&plan.modules())?;
        // the simulation first: it is quick, and its run length sizes the guest's deadline
        let sim = simulate(sc, o, &kernel, &t.behaviours(), resolved.seed)?;
        if let Some(f) = files.as_mut() {
            f.write(&format!("{prefix}sim-fio.json"), &sim.json)?;
        }
        o.notify.status(&format!(
            "validate: building the initramfs (busybox, fio{}) for {}",
            if modules.is_empty() { "" } else { ", modules" },
            kernel.release
        ));
        // staged in a folder of our own, removed (when dropped) whatever happens
        let scratch = boot::ScratchDir::new()?;
        let initrd =
            boot::build_initramfs(&boot::initramfs(&plan, Some(&modules))?, scratch.path())?;
        let real = boot_runs(&plan, &kernel, o, &initrd, sim.seconds, &mut files, &prefix)?;
        let text = render(&plan, o, t, &kernel, resolved.seed, &real, &sim);
        if several {
            out(&format!("== {}: Linux {} ==\n", column(n), kernel.release));
        }
        out(&text);
        let name = t.name(&kernel);
        if let Some(f) = files.as_mut() {
            page.heading(
                &format!("kernel-{}", column(n)),
                &format!("{}: {name}", column(n)),
            );
            page.markup(&compare::table_html(&real.runs, &sim.figures));
            page.markup(compare::RATIO_LEGEND_HTML);
            let charts = timeline_charts(&plan, &real, &sim);
            if !charts.is_empty() {
                page.charts(
                    &format!("charts-{}", column(n)),
                    &name,
                    &charts.json(),
                    false,
                );
            }
            page.pre_folded("What it printed", &text);
            page.files(&f.take_written());
        }
        before_after.push(KernelFigures {
            name,
            real: real.runs,
            sim: sim.figures,
        });
    }
    if several {
        out("\nbefore/after: each kernel's real (mean of its runs) and simulated figures\n");
        for (n, k) in before_after.iter().enumerate() {
            out(&format!("  {}: {}\n", column(n), k.name));
        }
        let labels: Vec<String> = (0..before_after.len()).map(column).collect();
        let sides: Vec<(compare::Figures, compare::Figures)> = before_after
            .iter()
            .map(|k| (compare::mean(&k.real), compare::mean(&k.sim)))
            .collect();
        let ab = compare::ab_table(&labels, &sides);
        out(&ab);
        page.heading("before-after", "before/after");
        page.pre(&ab);
    }
    if let Some(f) = files.as_mut() {
        f.write("report.html", &page.finish())?;
    }
    Ok(before_after)
}

/// The simulated side alone, on each kernel `validate` would boot (obtained as it
/// obtains them, nothing booted): what `validate --random --resimulate` judges
/// against a campaign's stored real runs. Each kernel's `real` is empty.
pub fn simulated_figures(
    sc: &Scenario,
    o: &ValidateOptions<'_>,
) -> Result<Vec<KernelFigures>, String> {
    let Checked {
        resolved, targets, ..
    } = check(sc, o)?;
    targets
        .iter()
        .map(|t| {
            let kernel = kernel::obtain(t.spec.as_deref(), &mut |m| {
                o.notify.status(&format!("validate: {m}"))
            })?;
            let sim = simulate(sc, o, &kernel, &t.behaviours(), resolved.seed)?;
            Ok(KernelFigures {
                name: t.name(&kernel),
                real: Vec::new(),
                sim: sim.figures,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kprobe_is_a_name_a_function_and_fetch_arguments() {
        let ok = kprobes(&["p:bfq_expire  bfq:bfq_bfqq_expire bfqq=%si reason=%cx".into()])
            .expect("accepted");
        assert_eq!(
            ok,
            [(
                "bfq_expire".to_string(),
                "p:bfq_expire bfq:bfq_bfqq_expire bfqq=%si reason=%cx".to_string()
            )]
        );
        assert!(kprobes(&["r:ret blk_mq_dispatch_rq_list ret=$retval".into()]).is_ok());
        for bad in [
            "bfq_bfqq_expire",
            "p:x",
            "p: bfq_bfqq_expire",
            "x:name f",
            "p:a-b f",
            "p:n f a=`id`",
            "p:n f; reboot",
            "p:n f a='x'",
        ] {
            let e = kprobes(&[bad.into()]).expect_err(bad);
            assert!(e.contains("p:NAME [MODULE:]FUNCTION"), "{e}");
        }
    }

    #[test]
    fn output_names_are_every_file_a_run_writes() {
        let one = output_names(1, 2, 1);
        assert_eq!(
            one,
            [
                "sim-fio.json",
                "console-1.txt",
                "trace-1.txt",
                "real-fio-0-run1.json",
                "console-2.txt",
                "trace-2.txt",
                "real-fio-0-run2.json",
                "report.html"
            ]
        );
        let two = output_names(2, 1, 2);
        assert!(two.contains(&"A-sim-fio.json".to_string()));
        assert!(two.contains(&"B-real-fio-1-run1.json".to_string()));
        assert_eq!(two.len(), 2 * 5 + 1);
        // every name validate writes is recognised as its own, and nothing else
        for name in output_names(30, 3, 2).iter().chain(&two) {
            assert!(is_output_name(name), "{name}");
        }
        for other in [
            "notes.md",
            "console-.txt",
            "console-1.txt.bak",
            "real-fio-1.json",
            "real-fio-x-run1.json",
            "ab-sim-fio.json",
            "K0x-trace-1.txt",
            "sim-fio.json.orig",
            "report.htm",
        ] {
            assert!(!is_output_name(other), "{other}");
        }
    }

    /// A run with fewer boots after one with more: the earlier run's extra files go
    /// (they would read as this run's), the user's files stay.
    #[test]
    fn an_earlier_runs_extra_files_are_removed() {
        let d =
            std::env::temp_dir().join(format!("blkcg-sim-validate-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        for name in output_names(2, 3, 2) {
            std::fs::write(d.join(&name), "earlier").unwrap();
        }
        std::fs::write(d.join("notes.md"), "the user's").unwrap();
        Files::open(&d, &output_names(1, 1, 1)).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["notes.md"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn output_files_never_go_through_a_symlink() {
        let d = std::env::temp_dir().join(format!("blkcg-sim-validate-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("out")).unwrap();
        let outside = d.join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        let out = d.join("out");
        // a symlink named like one of our files, left there: removed as a link
        std::os::unix::fs::symlink(&outside, out.join("sim-fio.json")).unwrap();
        std::fs::write(out.join("notes.md"), "the user's").unwrap();
        let mut files = Files::open(&out, &output_names(1, 1, 1)).unwrap();
        files.write("sim-fio.json", "{}").unwrap();
        let meta = std::fs::symlink_metadata(out.join("sim-fio.json")).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        // one planted after the folder was opened: the write fails, nothing lands outside
        std::os::unix::fs::symlink(&outside, out.join("console-1.txt")).unwrap();
        assert!(files.write("console-1.txt", "boot").is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        files.write("trace-1.txt", "").unwrap();
        // report.html links what was written, nothing else of the folder's
        assert_eq!(files.take_written(), ["sim-fio.json", "trace-1.txt"]);
        assert_eq!(
            std::fs::read_to_string(out.join("notes.md")).unwrap(),
            "the user's"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_install_line_installs_every_tool_a_run_needs() {
        for (cmd, package) in RUN_TOOLS {
            assert!(
                package == "libc-bin" || kernel::INSTALL_LINE.split(' ').any(|w| w == package),
                "{cmd} ({package}) not in `{}`",
                kernel::INSTALL_LINE
            );
        }
    }

    #[test]
    fn the_guest_profile_of_the_newest_series_not_newer() {
        let series = |v: &str| guest_host(v).0;
        assert_eq!(series("6.1.192"), "6.1");
        assert_eq!(series("6.11"), "6.1");
        assert_eq!(series("6.12.117"), "6.12");
        assert_eq!(series("6.19"), "6.12");
        // older than every profile: the oldest
        assert_eq!(series("5.10.0"), "6.1");
        let (_, costs) = guest_host("6.12.117");
        assert!(
            costs
                .host()
                .contains(&("submit_page_ns", toml::Value::Integer(540)))
        );
        assert_eq!(costs.dispatch_ns, 5_700);
    }

    /// Every key of every profile is one `[host]` accepts, with its value in range;
    /// and 6.12's measured slips (12 of 464 sleeps, up to 165 µs) and tag sleeper
    /// wake-ups land in the costs.
    #[test]
    fn the_guest_profiles_parse_as_host_tables() {
        for g in &GUEST_HOSTS {
            let series = g.series;
            let host: String = g
                .host()
                .iter()
                .map(|(k, v)| format!("{k} = {v}\n"))
                .collect();
            let text = format!(
                "name = \"p\"\n[device]\nmodel = \"nullb\"\n[cgroup.a]\n\
                 fio = \"fio --name=a --rw=read --size=1m\"\n[host]\n{host}"
            );
            let sc = Scenario::parse(&text, "p").unwrap();
            let r = sc
                .resolve(None)
                .unwrap_or_else(|e| panic!("{series:?}: {e}"));
            if series == (6, 12) {
                assert_eq!(r.host.wakeup_slip_ppm, 12 * 1_000_000 / 464);
                assert_eq!(r.host.wakeup_slip_ns, 165_000);
                assert_eq!(r.host.wakeup_jitter_ns, 0);
                assert!(r.host.to_string().contains(
                    "wakeup_slip_ns=165000 tag_wakeup_ns=5400 cpus=1 complete_irq_ns=2000 \
                     tick_irq_ns=2000 tag_wakeup_slip_ppm=482 tag_wakeup_slip_ns=461000"
                ));
            }
            // every guest has one vCPU, and a measured tag sleeper's wake-up
            assert_eq!(r.host.cpus, 1, "{series:?}");
            assert!(r.host.tag_wakeup_ns > 0 && r.host.tag_wakeup_slip_ppm > 0);
        }
        // a share beyond every sleep, or not an integer: refused, naming what is accepted
        for bad in ["1000001", "-1", "0.5", "\"5%\""] {
            let text = format!(
                "name = \"p\"\n[device]\nmodel = \"nullb\"\n[cgroup.a]\n\
                 fio = \"fio --name=a --rw=read --size=1m\"\n[host]\nwakeup_slip_ppm = {bad}\n"
            );
            let e = Scenario::parse(&text, "p")
                .unwrap()
                .resolve(None)
                .unwrap_err();
            let e = e.to_string();
            assert!(
                e.contains("wakeup_slip_ppm") && e.contains("0 to 1000000"),
                "{e}"
            );
        }
    }
}
