//! What runs inside the guest: the scenario turned into a shell `/init` for busybox.
//!
//! Design
//! ------
//! [`GuestPlan::from_resolved`] reads one resolved scenario variant and keeps only what
//! a real machine needs: the null_blk configfs attributes (from the same
//! `nullb::Config` the simulator uses, so both sides see one device), the cgroups to
//! create, every interface write with its time, and each cgroup's fio job.
//! [`GuestPlan::init_script`] prints that as `/init` — pure text, golden-tested without
//! booting. The script:
//!
//! 1. mounts proc/sys/devtmpfs/tmpfs/configfs/cgroup2/tracefs and loads the modules;
//! 2. creates the null_blk device through configfs and reads its real `MAJ:MIN` (the
//!    guest's differs from the scenario's: every interface line written there has the
//!    scenario's `MAJ:MIN` replaced by the guest's);
//! 3. creates the cgroups, enables `+io` on every parent, writes the time-0 interface
//!    lines — a refused write is reported with the kernel's own error, not fatal;
//! 4. starts every cgroup's fio inside its cgroup at once, and the scheduled writes
//!    (device actions too: null_blk's `power` and `badblocks`) with `sleep`, then waits;
//! 5. samples the disk's `/sys/block/NAME/stat` once a second meanwhile (the real
//!    side of the iostat timeline);
//! 6. prints fio's JSON, each cgroup's `io.stat` and the tracepoints (iocost's, and any
//!    the user asked for, with the kprobes `--kprobe` defines) between
//!    `@@blkcg-sim` markers on the console ([`super::console`] reads them back), and
//!    powers off.
//!
//! Quoting: whatever comes from the scenario (cgroup paths, interface lines, fio
//! arguments, the device name) reaches the script only as a word of [`sh_quote`] —
//! single quotes, `'` as `'\''` — or through a shell variable set once that way
//! (`DISK`, expanded as `"$DISK"`); the title goes into a comment with its control
//! characters escaped. Nothing of the scenario is ever shell code. Job files are data
//! for fio, written as files — the scenario's own, and those a fio command line names,
//! read from the host as `run` reads them ([`GuestPlan::job_files`]).

use std::fmt::Write as _;

use crate::device::config::Keys;
use crate::device::nullb;
use crate::scenario::resolve::{DeviceAction, Resolved};
use crate::sim::Ns;
use crate::workload::cmdline::{is_cmdline, split_shell_words};
use crate::workload::fio::{PROGRAM_OPTIONS, getopt_words};
use crate::writeback::VmWriteback;

/// The console marker every line of ours starts with.
pub const MARK: &str = "@@blkcg-sim";

/// The marker before the trace `/init` prints after the jobs; the boot grants the
/// trace's printing time from it (`BootBudget::trace`).
pub const BEGIN_TRACE: &str = "begin trace";

/// How one cgroup runs fio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FioInvocation {
    /// fio's own arguments (after `fio`).
    Args(Vec<String>),
    /// A job file, written to `/jobs/N.fio` in the initramfs.
    JobFile(String),
}

/// One fio process of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestFio {
    /// Cgroup path relative to the root ("" = root).
    pub cgroup: String,
    pub invocation: FioInvocation,
    /// Which run (`fio = [...]`): run k starts once every run k-1 has exited.
    pub round: u32,
    /// The job files named on its command line, read from the host as `run` reads
    /// them (from the working folder); the arguments name them `/jobs/N-K.fio`.
    pub arg_files: Vec<String>,
    /// The I/O logs its jobs replay (`read_iolog`), host paths: staged as
    /// `/jobs/N-log-K` ([`GuestPlan::stage_iologs`]).
    pub iologs: Vec<String>,
}

/// One interface write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestWrite {
    pub at: Ns,
    pub cgroup: String,
    pub file: &'static str,
    /// The line as the scenario wrote it.
    pub line: String,
}

/// One write to a null_blk configfs attribute from the scenario's faults: `badblocks`
/// lines and `timeout_inject/` of `[device]` (at 0) and `[[schedule]]` device actions
/// (a removal is `power` 0, since the guest's disk is a null_blk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestDeviceWrite {
    pub at: Ns,
    pub attr: &'static str,
    pub line: String,
}

/// One null_blk configfs attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NullbAttr {
    pub name: &'static str,
    pub value: u64,
    /// Differs from null_blk's default: a kernel without the attribute cannot run
    /// the scenario.
    pub required: bool,
}

/// Everything the guest needs to know about one scenario variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestPlan {
    pub title: String,
    /// The null_blk disk name (configfs directory, `/dev/NAME`, `/sys/block/NAME`).
    pub disk: String,
    /// The scenario's `MAJ:MIN`, replaced in interface lines by the guest's.
    pub scenario_dev: String,
    /// configfs attributes in the order they are written (`power` last).
    pub nullb_attrs: Vec<NullbAttr>,
    /// `/sys/block/NAME/queue/` attributes, in the order they are written (the
    /// scheduler before `nr_requests`, which it resets, and before its `iosched/`
    /// files).
    pub queue_attrs: Vec<(String, String)>,
    /// Non-root cgroups, parents first.
    pub cgroups: Vec<String>,
    pub writes: Vec<GuestWrite>,
    pub device_writes: Vec<GuestDeviceWrite>,
    pub fio: Vec<GuestFio>,
    /// blk-iocost is enabled somewhere: collect its tracepoint.
    pub iocost: bool,
    /// `kernel.config.blkcg_debug_stats`: the debug keys in `io.stat`.
    pub debug_stats: bool,
    /// More tracepoints to record (`--trace-event block:block_rq_requeue`).
    pub extra_events: Vec<String>,
    /// Kprobes to define and record (`--kprobe`): (NAME, the `kprobe_events` line).
    pub kprobes: Vec<(String, String)>,
    /// Record the disk's blktrace through ftrace's `blk` tracer (`--blktrace`): its
    /// requests' actions and the I/O scheduler's messages (`bfq_log_bfqq()`).
    pub blk_tracer: bool,
    /// Enable the memory controller beside io: a job writes buffered (cgroup
    /// writeback needs both) or a cgroup has a `memory.max`.
    pub memory: bool,
    /// `memory.max` per cgroup (bytes).
    pub memory_max: Vec<(String, u64)>,
    /// `/proc/sys/vm/` files the scenario sets (`[sysctl]`), in writing order.
    pub sysctls: Vec<(&'static str, u64)>,
}

/// Quote `s` for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=./:,+%@".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn cgroup_dir(path: &str) -> String {
    if path.is_empty() {
        "/sys/fs/cgroup".to_string()
    } else {
        sh_quote(&format!("/sys/fs/cgroup/{path}"))
    }
}

/// Refuse a job file with an `include` line: the included file would not be in the
/// guest.
fn no_include(text: &str) -> Result<(), String> {
    match text.lines().map(str::trim).find(|l| {
        l.strip_prefix("include")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_whitespace()))
    }) {
        Some(l) => Err(format!(
            "fio job file line `{l}`: validate stages job files alone, so an included \
             file would be missing in the guest; put its options in the job file instead"
        )),
        None => Ok(()),
    }
}

/// A command-line fio argument the guest's fio does not get: `--filename=` and fio's
/// program options.
fn dropped_arg(arg: &str) -> bool {
    arg.strip_prefix("--")
        .map(|o| o.split_once('=').map_or(o, |(k, _)| k))
        .is_some_and(|k| k == "filename" || PROGRAM_OPTIONS.contains(&k))
}

/// The `/proc/sys/vm/` writes that set `vm` from the kernel's defaults: only the
/// values that differ, a byte value after its ratio (writing one zeroes the other).
fn vm_writes(vm: &VmWriteback) -> Vec<(&'static str, u64)> {
    let d = VmWriteback::default();
    let mut out = Vec::new();
    let pairs = [
        ("dirty_ratio", vm.dirty.dirty_ratio, d.dirty.dirty_ratio),
        ("dirty_bytes", vm.dirty.dirty_bytes, d.dirty.dirty_bytes),
        (
            "dirty_background_ratio",
            vm.dirty.dirty_background_ratio,
            d.dirty.dirty_background_ratio,
        ),
        (
            "dirty_background_bytes",
            vm.dirty.dirty_background_bytes,
            d.dirty.dirty_background_bytes,
        ),
        (
            "dirty_expire_centisecs",
            vm.dirty_expire_centisecs,
            d.dirty_expire_centisecs,
        ),
        (
            "dirty_writeback_centisecs",
            vm.dirty_writeback_centisecs,
            d.dirty_writeback_centisecs,
        ),
    ];
    for (name, v, default) in pairs {
        // a byte value of 0 is "use the ratio", which the ratio's write says
        if v != default && !(name.ends_with("_bytes") && v == 0) {
            out.push((name, v));
        }
    }
    out
}

/// Seconds with millisecond precision, as busybox `sleep` takes them.
fn secs(ns: Ns) -> String {
    format!("{}.{:03}", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

impl GuestPlan {
    /// The guest's view of a resolved variant; errors say why a scenario cannot run
    /// on a real kernel.
    pub fn from_resolved(r: &Resolved) -> Result<GuestPlan, String> {
        let model = r
            .device
            .get("model")
            .and_then(toml::Value::as_str)
            .unwrap_or("nullb");
        if model != "nullb" {
            return Err(format!(
                "device model `{model}` has no real counterpart inside the guest yet: validate \
                 recreates the device in the booted kernel, which can only be null_blk \
                 (model = \"nullb\"); an ssd/hdd/cloud model would need real hardware or a \
                 backend that behaves like it"
            ));
        }
        let mut keys = Keys::new(&r.device);
        let c = nullb::Config::from_keys(&mut keys).map_err(|e| e.to_string())?;
        // (attribute, value, null_blk's default): an attribute this kernel lacks is
        // fine at its default, an error otherwise
        let mut nullb_attrs: Vec<NullbAttr> = [
            ("size", c.size, 250 * 1024),
            ("blocksize", c.blocksize.into(), 512),
            ("memory_backed", c.memory_backed, 0),
            ("submit_queues", c.submit_queues, 1),
            ("hw_queue_depth", c.hw_queue_depth.into(), 64),
            ("irqmode", c.irqmode, 1),
            ("completion_nsec", c.completion_nsec, 10_000),
            ("max_sectors", c.max_sectors, 255),
            ("mbps", c.mbps, 0),
        ]
        .into_iter()
        .map(|(name, value, default)| NullbAttr {
            name,
            value,
            required: value != default,
        })
        .collect();
        nullb_attrs.push(NullbAttr {
            name: "power",
            value: 1,
            required: true,
        });
        // `rotational` through the queue's sysfs file, which every kernel has (null_blk's
        // configfs attribute is recent: neither Debian's 6.1 nor 6.12 has it)
        let scheduler = r
            .device
            .get("scheduler")
            .and_then(toml::Value::as_str)
            .unwrap_or("none");
        let iosched = r.device.get("iosched").and_then(toml::Value::as_table);
        // `rotational` before the scheduler: BFQ reads it when it starts on the queue
        // (bfq_init_queue(): its reference rate, weight-raising time)
        let mut queue_attrs = vec![
            ("rotational".to_string(), u8::from(c.rotational).to_string()),
            ("scheduler".to_string(), scheduler.to_string()),
        ];
        // switching the scheduler resets nr_requests (and mq-deadline's async_depth
        // follows nr_requests): the scheduler first, then nr_requests, then iosched/
        if let Some(v) = r.device.get("nr_requests") {
            let line = crate::sched::echo_line("nr_requests", v).map_err(|e| e.to_string())?;
            queue_attrs.push(("nr_requests".to_string(), line));
        }
        queue_attrs.push(("max_sectors_kb".to_string(), c.max_sectors_kb.to_string()));
        for attr in ["nomerges", "read_ahead_kb"] {
            if let Some(v) = r.device.get(attr).and_then(toml::Value::as_integer) {
                queue_attrs.push((attr.to_string(), v.to_string()));
            }
        }
        // wbt was made with the disk (its target from the rotational flag null_blk had
        // then: non-rotational); a scenario's own value is written like any queue file
        if let Some(v) = r.device.get("wbt_lat_usec") {
            let line = crate::sched::echo_line("wbt_lat_usec", v).map_err(|e| e.to_string())?;
            queue_attrs.push(("wbt_lat_usec".to_string(), line));
        }
        queue_attrs.extend(
            crate::sched::iosched_writes(iosched)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|(k, v)| (format!("iosched/{k}"), v)),
        );
        let tree = &r.tree;
        let cgroups = tree.nodes.iter().skip(1).map(|n| n.path.clone()).collect();
        let path_of = |cg: u32| tree.nodes[cg as usize].path.clone();
        let writes = r
            .writes
            .iter()
            .map(|w| GuestWrite {
                at: w.at,
                cgroup: path_of(w.cgroup),
                file: w.file.name(),
                line: w.line.clone(),
            })
            .collect();
        let badblocks = |at, line: String| GuestDeviceWrite {
            at,
            attr: "badblocks",
            line,
        };
        let mut device_writes: Vec<GuestDeviceWrite> = c
            .badblocks
            .iter()
            .map(|b| {
                badblocks(
                    0,
                    format!("{}{}-{}", if b.set { '+' } else { '-' }, b.start, b.end),
                )
            })
            .collect();
        // timeout_inject/ exists with CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION only (not
        // in Debian's kernels): a kernel without it refuses the write
        let t = &c.timeout_inject;
        if t.probability > 0 {
            device_writes.extend(
                [
                    ("timeout_inject/probability", t.probability as i64),
                    ("timeout_inject/interval", t.interval as i64),
                    ("timeout_inject/times", t.times),
                    ("timeout_inject/space", t.space),
                ]
                .map(|(attr, v)| GuestDeviceWrite {
                    at: 0,
                    attr,
                    line: v.to_string(),
                }),
            );
        }
        device_writes.extend(r.device_writes.iter().map(|w| match w.action {
            DeviceAction::Remove => GuestDeviceWrite {
                at: w.at,
                attr: "power",
                line: "0".into(),
            },
            DeviceAction::Badblocks(_) => badblocks(w.at, w.line.clone()),
        }));
        let mut fio = Vec::new();
        for src in &r.fio {
            let text = src.text.trim();
            if text.is_empty() {
                continue;
            }
            // fio's program options (`--output-format=`, ...) are ignored by the
            // simulation and would spoil the JSON validate asks real fio for: dropped
            let mut arg_files = Vec::new();
            let invocation = if is_cmdline(text) {
                let mut args = Vec::new();
                let words = split_shell_words(text.strip_prefix("fio").unwrap_or(text))?;
                for (_, a) in getopt_words(&words) {
                    let a = a.into_owned();
                    if a.starts_with('-') {
                        if !dropped_arg(&a) {
                            args.push(a);
                        }
                        continue;
                    }
                    let text = std::fs::read_to_string(&a)
                        .map_err(|e| format!("cannot read fio job file `{a}`: {e}"))?;
                    args.push(format!("/jobs/{}-{}.fio", fio.len(), arg_files.len()));
                    arg_files.push(text);
                }
                FioInvocation::Args(args)
            } else {
                FioInvocation::JobFile(text.to_string())
            };
            if let FioInvocation::JobFile(t) = &invocation {
                no_include(t)?;
            }
            for t in &arg_files {
                no_include(t)?;
            }
            fio.push(GuestFio {
                cgroup: path_of(src.cgroup),
                invocation,
                round: src.round,
                arg_files,
                iologs: Vec::new(),
            });
        }
        if fio.is_empty() {
            return Err("the scenario runs no fio job: nothing to compare".into());
        }
        let iocost = r
            .writes
            .iter()
            .any(|w| w.file.name() == "io.cost.qos" && w.line.contains("enable=1"));
        Ok(GuestPlan {
            title: match &r.variant {
                Some(v) => format!("{} (variant {v})", r.scenario),
                None => r.scenario.clone(),
            },
            disk: c.name,
            scenario_dev: format!("{}:{}", c.dev.0, c.dev.1),
            nullb_attrs,
            queue_attrs,
            cgroups,
            writes,
            device_writes,
            fio,
            iocost,
            debug_stats: r.kernel.debug_stats,
            extra_events: Vec::new(),
            kprobes: Vec::new(),
            blk_tracer: false,
            memory: !r.memory_max.is_empty(),
            memory_max: r
                .memory_max
                .iter()
                .map(|&(cg, b)| (path_of(cg), b))
                .collect(),
            sysctls: vm_writes(&r.vm),
        })
    }

    /// The kernel modules the guest loads: null_blk, and the scenario's elevator
    /// where it is one (`bfq.ko`; one built in is skipped).
    pub fn modules(&self) -> Vec<&str> {
        let mut m = super::boot::MODULES.to_vec();
        if let Some((_, e)) = self.queue_attrs.iter().find(|(k, _)| k == "scheduler")
            && e != "none"
        {
            m.push(e);
        }
        m
    }

    /// Stage the I/O logs the jobs replay: each `read_iolog` name, read as `run` reads
    /// it (beside `scenario_file`), becomes `/jobs/N-log-K` in the guest, and a job's
    /// own `replay_redirect` (a device of the log's machine) is dropped: the guest's
    /// disk is every replay's ([`GuestPlan::job_files`], the command line).
    pub fn stage_iologs(&mut self, scenario_file: &str) {
        for (n, f) in self.fio.iter_mut().enumerate() {
            let mut iologs = Vec::new();
            let mut stage = |list: &str| -> String {
                let guest: Vec<String> = crate::workload::iolog::split_names(list)
                    .iter()
                    .map(|name| {
                        iologs.push(crate::workload::fio::include_path(scenario_file, name));
                        format!("/jobs/{n}-log-{}", iologs.len() - 1)
                    })
                    .collect();
                guest.join(":")
            };
            let in_file = |text: &str, stage: &mut dyn FnMut(&str) -> String| -> String {
                let lines: Vec<String> = text
                    .lines()
                    .filter(|l| {
                        l.split_once('=')
                            .is_none_or(|(k, _)| k.trim() != "replay_redirect")
                    })
                    .map(|l| match l.split_once('=') {
                        Some((k, v)) if k.trim() == "read_iolog" => {
                            format!("read_iolog={}", stage(v.trim()))
                        }
                        _ => l.to_string(),
                    })
                    .collect();
                lines.join("\n")
            };
            match &mut f.invocation {
                FioInvocation::Args(args) => {
                    args.retain(|a| !a.starts_with("--replay_redirect="));
                    for a in args.iter_mut() {
                        if let Some(v) = a.strip_prefix("--read_iolog=") {
                            *a = format!("--read_iolog={}", stage(v));
                        }
                    }
                }
                FioInvocation::JobFile(t) => *t = in_file(t, &mut stage),
            }
            for t in &mut f.arg_files {
                *t = in_file(t, &mut stage);
            }
            f.iologs = iologs;
        }
    }

    /// The I/O logs to place in the initramfs: (`jobs/N-log-K`, host path).
    pub fn iolog_files(&self) -> Vec<(String, String)> {
        let mut files = Vec::new();
        for (n, f) in self.fio.iter().enumerate() {
            for (k, host) in f.iologs.iter().enumerate() {
                files.push((format!("jobs/{n}-log-{k}"), host.clone()));
            }
        }
        files
    }

    /// Job files to place in the initramfs: (`jobs/N.fio` or, named on a command
    /// line, `jobs/N-K.fio`; text). A job's own `filename=` names a disk of the
    /// scenario's author: dropped, so that every job uses the guest's disk, the
    /// default set in `[global]` first.
    pub fn job_files(&self) -> Vec<(String, String)> {
        let guest = |text: &str, redirect: &str| {
            let own: Vec<&str> = text
                .lines()
                .filter(|l| {
                    l.split_once('=')
                        .is_none_or(|(k, _)| k.trim() != "filename")
                })
                .collect();
            format!(
                "[global]\nfilename=/dev/{}\n{}\n{}\n",
                self.disk,
                redirect,
                own.join("\n")
            )
        };
        let mut files = Vec::new();
        for (n, f) in self.fio.iter().enumerate() {
            // a replay opens the files its log names: all of them the guest's disk
            let redirect = if f.iologs.is_empty() {
                String::new()
            } else {
                format!("replay_redirect=/dev/{}\n", self.disk)
            };
            if let FioInvocation::JobFile(t) = &f.invocation {
                files.push((format!("jobs/{n}.fio"), guest(t, &redirect)));
            }
            for (k, t) in f.arg_files.iter().enumerate() {
                files.push((format!("jobs/{n}-{k}.fio"), guest(t, &redirect)));
            }
        }
        files
    }

    /// Tracepoints to record (`SYSTEM/EVENT`): blk-iocost's vrate adjustments and
    /// activations when it is on, plus the user's `--trace-event`s.
    /// The tracefs ring buffer, KiB (one vCPU). 64 MiB holds a block-layer trace of a
    /// whole run, but its pages are taken from the memory the page cache's thresholds
    /// are a fraction of: with a buffered writer it cut the guest's dirty threshold by
    /// 3,300 pages and the writer's throughput by a fifth (docs/validation.md §40), so
    /// a run with a page cache keeps 4 MiB (dirty throttling's own tracepoints fill a
    /// few hundred KiB). A blktrace (`--blktrace`) keeps 32 MiB: BFQ logs about
    /// 30 MiB a second of a busy disk, and 64 MiB would keep the serial console
    /// printing for some 7 minutes ([`Self::trace_print_budget_s`]) — a long run
    /// keeps its last second or so.
    /// [`GuestOutput::trace_lost`](super::console::GuestOutput::trace_lost) tells when
    /// it was not enough.
    pub fn trace_buffer_kb(&self) -> u32 {
        match (self.memory, self.blk_tracer) {
            (true, _) => 4096,
            (false, true) => 32768,
            (false, false) => 65536,
        }
    }

    /// Whether the guest records a trace: tracepoints, or the disk's blktrace.
    fn records_trace(&self) -> bool {
        self.blk_tracer || !self.trace_events().is_empty() || !self.kprobes.is_empty()
    }

    /// Seconds the serial console may take to print a full trace buffer, granted to
    /// the boot once the guest starts printing one (`BootBudget::trace`): under TCG
    /// it carries about 150 KiB a second (a blktrace of `validate-bfq`'s capped disk:
    /// 148,000 lines in 80 s), so a full 32 MiB blktrace needs some 220 s.
    pub fn trace_print_budget_s(&self) -> u64 {
        const SERIAL_KIB_PER_S: u64 = 150;
        if self.records_trace() {
            u64::from(self.trace_buffer_kb()) / SERIAL_KIB_PER_S
        } else {
            0
        }
    }

    pub fn trace_events(&self) -> Vec<String> {
        let mut ev: Vec<String> = Vec::new();
        if self.iocost {
            ev.push("iocost/iocost_ioc_vrate_adj".into());
            ev.push("iocost/iocost_iocg_activate".into());
        }
        for e in &self.extra_events {
            let e = e.replace(':', "/");
            if !ev.contains(&e) {
                ev.push(e);
            }
        }
        ev
    }

    /// An interface line for the shell, with the scenario's `MAJ:MIN` replaced by the
    /// guest's (`$DEV`).
    fn shell_line(&self, line: &str) -> String {
        match line.split_once(' ') {
            Some((dev, rest)) if dev == self.scenario_dev => {
                format!("\"$DEV\"{}", sh_quote(&format!(" {rest}")))
            }
            _ if line == self.scenario_dev => "\"$DEV\"".into(),
            _ => sh_quote(line),
        }
    }

    /// `/init` for the guest; `modules` are the module files to load, dependencies
    /// first (names under `/lib/modules/`).
    pub fn init_script(&self, modules: &[(String, String)]) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "#!/bin/busybox sh");
        // escaped: a line break in a variant's name would end the comment
        let _ = writeln!(
            s,
            "# generated by blkcg-sim validate: {}",
            self.title.escape_debug()
        );
        s.push_str(&format!(
            "/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
say() {{ echo \"{MARK} $*\"; }}
die() {{ say \"error $*\"; poweroff -f; }}
# w CGROUP-DIR FILE LINE: a write the kernel may refuse (reported, not fatal)
w() {{
  if ! echo \"$3\" > \"$1/$2\" 2>/tmp/werr; then
    say \"refused $1/$2 $3: $(cat /tmp/werr)\"
  fi
}}
say \"kernel $(uname -r)\"
"
        ));
        for (file, params) in modules {
            let _ = writeln!(
                s,
                "insmod {}{}{} || die {}",
                sh_quote(&format!("/lib/modules/{file}")),
                if params.is_empty() { "" } else { " " },
                if params.is_empty() {
                    String::new()
                } else {
                    sh_quote(params)
                },
                sh_quote(&format!("insmod {file} failed"))
            );
        }
        s.push_str(
            "mount -t configfs none /sys/kernel/config || die \"no configfs\"
mount -t cgroup2 none /sys/fs/cgroup || die \"no cgroup2\"
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
",
        );
        if self.debug_stats {
            s.push_str("echo 1 > /sys/module/blk_cgroup/parameters/blkcg_debug_stats\n");
        }
        let _ = writeln!(s, "# null_blk through configfs");
        let _ = writeln!(s, "DISK={}", sh_quote(&self.disk));
        let _ = writeln!(s, "N=\"/sys/kernel/config/nullb/$DISK\"");
        let _ = writeln!(s, "mkdir \"$N\" || die \"cannot create null_blk $DISK\"");
        // a ATTR VALUE [required]: set a configfs attribute this kernel may lack
        s.push_str(
            "a() {
  if [ -e \"$N/$1\" ]; then echo \"$2\" > \"$N/$1\" || die \"null_blk refused $1=$2\"
  elif [ -n \"$3\" ]; then die \"this kernel's null_blk has no $1 attribute (the scenario needs $1=$2)\"
  fi
}
",
        );
        for a in &self.nullb_attrs {
            let _ = writeln!(
                s,
                "a {} {}{}",
                a.name,
                a.value,
                if a.required { " required" } else { "" }
            );
        }
        let _ = writeln!(
            s,
            "DEV=$(cat \"/sys/block/$DISK/dev\") || die \"no /sys/block/$DISK\""
        );
        let _ = writeln!(s, "say \"dev $DEV\"");
        for w in self.device_writes.iter().filter(|w| w.at == 0) {
            let _ = writeln!(
                s,
                "echo {} > $N/{} || die \"null_blk refused {}={}\"",
                sh_quote(&w.line),
                w.attr,
                w.attr,
                w.line
            );
        }
        for (k, v) in &self.queue_attrs {
            let _ = writeln!(s, "w \"/sys/block/$DISK/queue\" {k} {}", sh_quote(v));
        }
        let _ = writeln!(s, "# cgroups");
        let mut parents: Vec<&str> = vec![""];
        for cg in &self.cgroups {
            if let Some((p, _)) = cg.rsplit_once('/')
                && !parents.contains(&p)
            {
                parents.push(p);
            }
        }
        // cgroup writeback needs the memory controller beside io; each its own write,
        // so that a kernel without it still enables io
        let controllers: &[&str] = if self.memory {
            &["+io", "+memory"]
        } else {
            &["+io"]
        };
        for c in controllers {
            let _ = writeln!(s, "w /sys/fs/cgroup cgroup.subtree_control {c}");
        }
        for cg in &self.cgroups {
            let _ = writeln!(s, "mkdir {}", cgroup_dir(cg));
            if parents.contains(&cg.as_str()) {
                for c in controllers {
                    let _ = writeln!(s, "w {} cgroup.subtree_control {c}", cgroup_dir(cg));
                }
            }
        }
        for (cg, bytes) in &self.memory_max {
            let _ = writeln!(s, "w {} memory.max {bytes}", cgroup_dir(cg));
        }
        for (name, v) in &self.sysctls {
            let _ = writeln!(s, "w /proc/sys/vm {name} {v}");
        }
        if self.memory {
            // the page cache's thresholds as the guest computes them (pages)
            let _ = writeln!(
                s,
                "say \"vmstat $(grep -E '^nr_dirty_(background_)?threshold ' /proc/vmstat | tr '\\n' ' ')\""
            );
        }
        let _ = writeln!(s, "# interface files at time 0");
        for w in self.writes.iter().filter(|w| w.at == 0) {
            let _ = writeln!(
                s,
                "w {} {} {}",
                cgroup_dir(&w.cgroup),
                w.file,
                self.shell_line(&w.line)
            );
        }
        let events = self.trace_events();
        let tracing = self.records_trace();
        if tracing {
            let _ = writeln!(
                s,
                "T=/sys/kernel/tracing\necho {} > $T/buffer_size_kb",
                self.trace_buffer_kb()
            );
            for e in &events {
                let _ = writeln!(
                    s,
                    "echo 1 > $T/events/{}/enable || say {}",
                    sh_quote(e),
                    sh_quote(&format!("error no tracepoint {e}"))
                );
            }
            for (name, def) in &self.kprobes {
                let _ = writeln!(
                    s,
                    "echo {} >> $T/kprobe_events && echo 1 > $T/events/kprobes/{name}/enable \
                     || say {}\"$(tail -n 3 $T/error_log | tr '\\n' ' ')\"",
                    sh_quote(def),
                    sh_quote(&format!("error the kernel refused the kprobe {def}: "))
                );
            }
            if self.blk_tracer {
                // blktrace through ftrace (kernel/trace/blktrace.c): the disk's trace
                // enabled in sysfs, every action and message, into the ring buffer
                s.push_str(
                    "{ echo 1 > \"/sys/block/$DISK/trace/enable\" && echo blk > $T/current_tracer; } \
                     || say 'error no blk tracer (CONFIG_BLK_DEV_IO_TRACE)'\n",
                );
            }
            s.push_str("echo blkcg-sim-start > $T/trace_marker\n");
        }
        let _ = writeln!(s, "say start");
        // with a page cache, its dirty and under-writeback KiB each second too
        let dirty = if self.memory {
            "; grep -E '^(Dirty|Writeback):' /proc/meminfo | tr -s ' \\n' ' ' | sed \"s/^/$up /\" >>/tmp/dirty; echo >>/tmp/dirty"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "# the disk's counters once a second, as iostat reads them\n\
             (while :; do read up idle < /proc/uptime; printf '%s ' \"$up\"; cat \"/sys/block/$DISK/stat\"{dirty}; sleep 1; done) >/tmp/diskstat 2>&1 &\n\
             SAMPLER=$!"
        );
        let _ = writeln!(s, "# every cgroup's fio at once, each inside its cgroup");
        let _ = writeln!(s, "P=");
        let mut later_rounds = String::new();
        for (n, f) in self.fio.iter().enumerate() {
            if f.round > 0 && (n == 0 || self.fio[n - 1].round != f.round) {
                let _ = writeln!(
                    later_rounds,
                    "# run {} of each cgroup's fio, once every earlier one has exited\nwait $P\nP=",
                    f.round + 1
                );
            }
            let out = if f.round == 0 {
                &mut s
            } else {
                &mut later_rounds
            };
            let mut cmd = format!(
                "sh -c 'echo $$ > \"$0/cgroup.procs\" && exec \"$@\"' {} fio --output-format=json --output=/tmp/fio-{n}.json",
                cgroup_dir(&f.cgroup)
            );
            match &f.invocation {
                FioInvocation::Args(args) => {
                    cmd.push_str(" \"--filename=/dev/$DISK\"");
                    if !f.iologs.is_empty() {
                        cmd.push_str(" \"--replay_redirect=/dev/$DISK\"");
                    }
                    for a in args {
                        cmd.push(' ');
                        cmd.push_str(&sh_quote(a));
                    }
                }
                FioInvocation::JobFile(_) => {
                    let _ = write!(cmd, " /jobs/{n}.fio");
                }
            }
            let _ = writeln!(out, "{cmd} >/tmp/fio-{n}.log 2>&1 &\nP=\"$P $!\"");
        }
        for w in self.writes.iter().filter(|w| w.at > 0) {
            let _ = writeln!(
                s,
                "(sleep {}; w {} {} {}) &",
                secs(w.at),
                cgroup_dir(&w.cgroup),
                w.file,
                self.shell_line(&w.line)
            );
        }
        for w in self.device_writes.iter().filter(|w| w.at > 0) {
            let _ = writeln!(
                s,
                "(sleep {}; echo {} > $N/{} || say \"refused {} {}\") &",
                secs(w.at),
                sh_quote(&w.line),
                w.attr,
                w.attr,
                w.line
            );
        }
        s.push_str(&later_rounds);
        let _ = writeln!(s, "wait $P");
        let _ = writeln!(s, "kill $SAMPLER");
        let _ = writeln!(s, "say finish");
        let _ = writeln!(s, "say \"begin diskstat\"; cat /tmp/diskstat; say end");
        if self.memory {
            let _ = writeln!(s, "say \"begin dirty\"; cat /tmp/dirty; say end");
        }
        for n in 0..self.fio.len() {
            let _ = writeln!(
                s,
                "say \"begin fio {n}\"; cat /tmp/fio-{n}.json; say end\n\
                 if [ -s /tmp/fio-{n}.log ]; then say \"begin fio-log {n}\"; cat /tmp/fio-{n}.log; say end; fi"
            );
        }
        for cg in std::iter::once(&String::new()).chain(&self.cgroups) {
            let _ = writeln!(
                s,
                "say {}; cat {}/io.stat; say end",
                sh_quote(&format!("begin io.stat {cg}")),
                cgroup_dir(cg)
            );
        }
        // io.pressure: the root's is the system's, /proc/pressure/io
        let _ = writeln!(
            s,
            "say 'begin io.pressure '; cat /proc/pressure/io; say end"
        );
        for cg in &self.cgroups {
            let _ = writeln!(
                s,
                "say {}; cat {}/io.pressure; say end",
                sh_quote(&format!("begin io.pressure {cg}")),
                cgroup_dir(cg)
            );
        }
        if tracing {
            let _ = writeln!(
                s,
                "say \"{BEGIN_TRACE}\"; cat $T/trace; say end\n\
                 say \"begin trace-stats\"; cat $T/per_cpu/cpu0/stats; say end"
            );
        }
        let _ = writeln!(s, "say done");
        let _ = writeln!(s, "poweroff -f");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_is_shell_safe() {
        assert_eq!(sh_quote("--bs=4k"), "--bs=4k");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("$DEV"), "'$DEV'");
    }

    /// What a POSIX shell makes of each quoted word is the string itself: no
    /// expansion, substitution, splitting or globbing.
    #[test]
    fn quoted_words_reach_a_real_shell_unchanged() {
        let nasty = [
            "x$(touch pwned)",
            "y`touch pwned`",
            "it's",
            "'",
            "''\\'",
            "a b\tc\nd",
            "$HOME ${IFS} $$ $1",
            "; rm -rf / #",
            "*",
            "~",
            "-n",
            "\\",
            "\"double\"",
            "",
        ];
        let script: String = nasty
            .iter()
            .map(|w| format!("printf '%s\\0' {}\n", sh_quote(w)))
            .collect();
        let Ok(out) = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
        else {
            return; // no POSIX shell here
        };
        assert!(out.status.success(), "{script}");
        let got: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
        let want: Vec<&[u8]> = nasty
            .iter()
            .map(|w| w.as_bytes())
            .chain([&b""[..]])
            .collect();
        assert_eq!(got, want, "{script}");
    }

    #[test]
    fn program_options_and_filename_stay_with_us() {
        assert!(dropped_arg("--filename=/dev/sdz"));
        assert!(dropped_arg("--output-format=normal"));
        assert!(dropped_arg("--output=x.json"));
        assert!(!dropped_arg("--name=output"));
        assert!(!dropped_arg("jobs.fio"));
    }

    #[test]
    fn seconds_for_sleep() {
        assert_eq!(secs(5_000_000_000), "5.000");
        assert_eq!(secs(1_250_000_000), "1.250");
    }
}
