//! The typed view of one scenario variant: every key checked, every problem reported
//! with the file, line and what is accepted.

use toml::{Table, Value};

use super::{BareNumber, Scenario, ScenarioError, parse_duration};
use crate::blkcg::CgroupTree;
use crate::device::fault::BadblocksWrite;
use crate::kernel_version::{Distro, Named, named};
use crate::scenario::host::{HostCosts, LatenessTable, WakeupLateness};
use crate::scenario::host_profile::{self, HostProfile};
use crate::sim::Ns;
use crate::stack::registry::{self, CgroupFile};

/// Which interface file a write goes to: one of the registry's
/// (`crate::stack::registry`), with where it may be written.
#[derive(Debug, Clone, Copy)]
pub struct IfaceFile(&'static CgroupFile);

impl PartialEq for IfaceFile {
    fn eq(&self, o: &Self) -> bool {
        self.0.name == o.0.name
    }
}

impl Eq for IfaceFile {}

impl IfaceFile {
    /// As cgroupfs names it (`io.max`).
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The file named `k`, if some policy has one.
    pub fn from_key(k: &str) -> Option<IfaceFile> {
        registry::cgroup_file(k).map(|(_, f)| IfaceFile(f))
    }
}

/// The registry's switch prefixes as an error lists them: `"throttle.*" / "iocost.*"`.
pub fn switch_forms() -> String {
    let forms: Vec<String> = registry::switch_prefixes()
        .map(|p| format!("\"{p}*\""))
        .collect();
    forms.join(" / ")
}

/// One `echo LINE > cgroup/FILE`, at time `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceWrite {
    pub at: Ns,
    pub cgroup: u32,
    pub file: IfaceFile,
    pub line: String,
    /// Where the line is written in the scenario file.
    pub src_line: Option<usize>,
}

/// What a `[[schedule]]` entry does to the disk, as a user would on the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceAction {
    /// `device = "remove"` (e.g. `echo 1 > /sys/block/sdX/device/delete`), or
    /// null_blk's `device.power = 0` (`echo 0 > .../nullb0/power`): `del_gendisk()`.
    Remove,
    /// null_blk's `device.badblocks = "+START-END"` (`echo ... > .../badblocks`).
    Badblocks(BadblocksWrite),
}

/// One device action at time `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceWrite {
    pub at: Ns,
    pub action: DeviceAction,
    /// The configfs line, as `echo` would write it (`0`, `+2048-4095`; `remove`).
    pub line: String,
    pub src_line: Option<usize>,
}

/// One run of fio in a cgroup (command line or job file text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioSource {
    pub cgroup: u32,
    pub text: String,
    /// Where it is written (the element of a `fio = [...]` array).
    pub src_line: Option<usize>,
    /// The scenario's line of each line of `text` (see [`Scenario::text_lines_in`]).
    pub lines: Vec<usize>,
    /// Which run of the cgroup this is (`fio = [...]`, from 0): every cgroup's run k
    /// starts once every run k-1 has ended, as a shell script's `wait` between loops.
    pub round: u32,
}

/// Who gave a `[kernel]` value: what a run's `assumed:` block says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// Nobody: the simulator's default.
    Default,
    /// The scenario (or a variant, or `sweep --set`).
    Scenario,
    /// `run --kernel`.
    CommandLine,
    /// The distribution named as the version (its `CONFIG_HZ`).
    Distro(&'static Distro),
}

/// Where the version and HZ of a [`KernelSettings`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelOrigin {
    pub version: Given,
    /// The distribution the version was named by (`debian-12`), if any.
    pub distro: Option<&'static Distro>,
    pub hz: Given,
}

/// `[kernel]`: the version preset, HZ, config options and behaviour overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSettings {
    /// A version (a distribution named in `[kernel] version` is resolved to its own).
    pub version: String,
    pub hz: u32,
    /// CONFIG_BLK_DEV_THROTTLING_LOW (4.12–6.8): 20 ms slice on non-rotational disks.
    pub throttling_low: bool,
    /// blk-cgroup's `blkcg_debug_stats` module parameter (iocost debug io.stat keys).
    pub debug_stats: bool,
    /// Behaviour switches (`throttle.*`, `iocost.*`, `deadline.*`) overriding the version preset.
    pub overrides: Vec<(String, String)>,
    /// Who gave the version and HZ (what a run's `assumed:` block says).
    pub origin: KernelOrigin,
}

impl KernelSettings {
    /// The behaviour switches under `prefix` (`throttle.`), in the order given: what
    /// one policy's or elevator's `behaviour_for` reads.
    pub fn switches(&self, prefix: &str) -> Vec<(String, String)> {
        self.overrides
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Run kernel `n`, named by `given`: its version, and a distribution's HZ and
    /// config options — except those the scenario set itself (`hz_set`,
    /// `throttling_low_set`), which it keeps.
    pub fn set_kernel(&mut self, n: Named, given: Given, hz_set: bool, throttling_low_set: bool) {
        self.version = n.version.to_string();
        self.origin.version = given;
        self.origin.distro = n.distro;
        if let Some(d) = n.distro {
            if !hz_set {
                self.hz = d.hz;
                self.origin.hz = Given::Distro(d);
            }
            if !throttling_low_set {
                self.throttling_low = d.throttling_low;
            }
        }
    }
}

impl Default for KernelSettings {
    fn default() -> Self {
        KernelSettings {
            version: crate::kernel_version::NEWEST.to_string(),
            hz: crate::kernel_version::DEFAULT_HZ,
            throttling_low: false,
            debug_stats: false,
            overrides: Vec::new(),
            origin: KernelOrigin {
                version: Given::Default,
                distro: None,
                hz: Given::Default,
            },
        }
    }
}

/// `[state]`: controller state left on the machine by what ran before the scenario.
/// blk-iocost keeps `vtime_base_rate` across runs and across writes to `io.cost.qos`
/// (`ioc_refresh_params_disk()` resets it only when the autop preset changes), so a
/// run on a machine that has been busy since boot starts from wherever the last one
/// left it; its root `io.stat` shows it as `cost.vrate`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PriorState {
    /// `"iocost.vrate"`: the base vrate in percent (`cost.vrate`), None = boot's 100%.
    pub iocost_vrate_pct: Option<f64>,
}

/// A variant ready to run.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub scenario: String,
    pub variant: Option<String>,
    pub seed: u64,
    pub duration: Option<Ns>,
    pub device: Table,
    pub kernel: KernelSettings,
    pub host: HostCosts,
    /// The host profile in force: the scenario's `[host] profile`, or the default.
    pub host_profile: &'static HostProfile,
    /// Who named it: the scenario, or nobody (the default).
    pub host_profile_given: Given,
    /// The `[host]` keys the scenario set over the profile (`profile` itself not
    /// counted).
    pub host_set: Vec<String>,
    pub state: PriorState,
    pub tree: CgroupTree,
    pub writes: Vec<IfaceWrite>,
    /// Device actions from `[[schedule]]`, in file order.
    pub device_writes: Vec<DeviceWrite>,
    /// Every fio run, ordered by round, then by cgroup as the scenario lists them.
    pub fio: Vec<FioSource>,
    /// `[sysctl]`: the `vm.*` writeback sysctls.
    pub vm: crate::writeback::VmWriteback,
    /// Each cgroup's `memory.max` in bytes, where one is set (not `max`).
    pub memory_max: Vec<(u32, u64)>,
    /// What is accepted but worth saying (a kernel newer than the newest modelled).
    pub warnings: Vec<String>,
}

/// The shortest `duration`: 1 ms (a shorter run completes no I/O on any device).
const MIN_DURATION_NS: u64 = 1_000_000;

/// The edit distance between `a` and `b` (insertions, deletions, substitutions).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl Scenario {
    /// A variant may add a cgroup (`merged` inserts a `[cgroup.NAME]` the base lacks:
    /// a variant with one more tenant is a legitimate experiment), so a name the base
    /// does not declare is accepted; but one within two edits of a declared cgroup is
    /// most likely a misspelling of it, and the warning names that cgroup.
    fn new_cgroups_in_variant(&self, variant: Option<&str>, merged: &Table) -> Vec<String> {
        let base = self.table.get("cgroup").and_then(Value::as_table);
        let declared: Vec<&str> = base
            .into_iter()
            .flat_map(|t| t.keys())
            .map(|k| k.trim_matches('/'))
            .collect();
        let mut out = Vec::new();
        for name in merged.keys() {
            let n = name.trim_matches('/');
            if declared.contains(&n) || variant.is_none() {
                continue;
            }
            let nearest = declared.iter().map(|d| (edit_distance(n, d), *d)).min();
            if let Some((d, near)) = nearest
                && d <= 2
            {
                out.push(format!(
                    "{}: variant `{}` adds cgroup `{n}`, which the base scenario does \
                     not declare; did you mean `{near}`? (a variant's [cgroup.NAME] sets \
                     keys of a declared cgroup, or adds a new one)",
                    self.place(self.line_in(variant, &["cgroup", name])),
                    variant.unwrap_or_default()
                ));
            }
        }
        out
    }

    /// Resolve variant `variant` (None: the base scenario) into a typed configuration.
    /// An error in a key the variant sets points at the variant's line and names it.
    pub fn resolve(&self, variant: Option<&str>) -> Result<Resolved, ScenarioError> {
        self.resolve_merged(variant)
            .map_err(|e| self.in_variant(variant, e))
    }

    fn resolve_merged(&self, variant: Option<&str>) -> Result<Resolved, ScenarioError> {
        let t = self.merged(variant)?;
        let seed = match t.get("seed") {
            None => 1,
            Some(Value::Integer(i)) if *i >= 0 => *i as u64,
            Some(_) => {
                return Err(self.err_at(&[], "seed", "`seed` must be a non-negative integer"));
            }
        };
        let duration = match t.get("duration") {
            None => None,
            Some(v) => Some(
                parse_duration(v, BareNumber::Seconds)
                    .and_then(|ns| {
                        if ns < MIN_DURATION_NS {
                            Err(format!(
                                "{ns} ns is too short: a run of less than 1 ms completes \
                                 nothing; give at least \"1ms\" (or leave `duration` out: \
                                 the run lasts as long as its fio jobs)"
                            ))
                        } else {
                            Ok(ns)
                        }
                    })
                    .map_err(|m| self.err_at(&[], "duration", format!("`duration`: {m}")))?,
            ),
        };
        let device = match t.get("device") {
            Some(Value::Table(d)) => d.clone(),
            Some(_) => return Err(self.err_at(&[], "device", "`device` must be a table: [device]")),
            None => {
                return Err(ScenarioError {
                    file: self.file.clone(),
                    line: None,
                    msg: "no [device] table; a scenario needs one (model = \"nullb\" | \"ssd\" | \"hdd\" | \"cloud\")".into(),
                    key: Vec::new(),
                })
            }
        };
        let mut warnings = Vec::new();
        let kernel = self.kernel_settings(t.get("kernel"), &mut warnings)?;
        let (host, host_profile) = self.host_costs(t.get("host"))?;
        let host_set = t
            .get("host")
            .and_then(Value::as_table)
            .map(|h| h.keys().filter(|k| *k != "profile").cloned().collect())
            .unwrap_or_default();
        let host_profile_given = match t.get("host").and_then(Value::as_table) {
            Some(h) if h.contains_key("profile") => Given::Scenario,
            _ => Given::Default,
        };
        let state = self.prior_state(t.get("state"))?;
        let vm = self.sysctls(t.get("sysctl"))?;
        let mut memory_max = Vec::new();
        let mut tree = CgroupTree::default();
        let mut writes = Vec::new();
        let mut fio = Vec::new();
        if let Some(root) = t.get("root") {
            let Some(root) = root.as_table() else {
                return Err(self.err_at(&[], "root", "`root` must be a table: [root]"));
            };
            for (k, v) in root {
                match IfaceFile::from_key(k) {
                    Some(f) if f.0.on_root() => {
                        for line in self.lines_of(&["root"], k, v)? {
                            writes.push(IfaceWrite {
                                at: 0,
                                cgroup: CgroupTree::ROOT,
                                file: f,
                                line,
                                src_line: self.line_in(variant, &["root", k]),
                            });
                        }
                    }
                    Some(f) => {
                        return Err(self.err_at(
                            &["root"],
                            k,
                            format!(
                                "`{}` does not exist on the root cgroup (only on children)",
                                f.name()
                            ),
                        ));
                    }
                    None => {
                        return Err(self.err_at(
                            &["root"],
                            k,
                            format!(
                                "unknown root key `{k}`; accepted: {}",
                                registry::file_names(true)
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(cgs) = t.get("cgroup") {
            let Some(cgs) = cgs.as_table() else {
                return Err(self.err_at(&[], "cgroup", "`cgroup` must be tables: [cgroup.NAME]"));
            };
            // `a`, `/a` and `a/` are one cgroup: two tables for it would merge silently
            let mut seen: std::collections::BTreeMap<&str, &String> = Default::default();
            for name in cgs.keys() {
                if let Some(first) = seen.insert(name.trim_matches('/'), name) {
                    return Err(self.err_at(
                        &["cgroup"],
                        name,
                        format!(
                            "[cgroup.\"{}\"] and [cgroup.\"{}\"] are the same cgroup `{}`: \
                             write one table for it",
                            first.escape_debug(),
                            name.escape_debug(),
                            name.trim_matches('/').escape_debug()
                        ),
                    ));
                }
            }
            warnings.extend(self.new_cgroups_in_variant(variant, cgs));
            // parents first, so their limits are written before their children's
            let mut names: Vec<&String> = cgs.keys().collect();
            names.sort_by_key(|n| n.matches('/').count());
            for name in names {
                let path = ["cgroup", name.as_str()];
                let Some(ct) = cgs[name].as_table() else {
                    return Err(self.err_at(
                        &["cgroup"],
                        name,
                        format!("`cgroup.{name}` must be a table"),
                    ));
                };
                if name.trim_matches('/').is_empty() {
                    return Err(self.err_at(
                        &["cgroup"],
                        name,
                        "the root cgroup is [root], not a [cgroup.\"\"] table",
                    ));
                }
                crate::blkcg::tree::check_path(name)
                    .map_err(|m| self.err_at(&["cgroup"], name, m))?;
                let cg = tree.ensure(name);
                for (k, v) in ct {
                    if k == "fio" {
                        let bad = || {
                            self.err_at(
                                &path,
                                k,
                                "`fio` must be a string (a fio command line or job file text), or an array of them: runs one after another, each cgroup's next run starting when every cgroup's run before has ended",
                            )
                        };
                        let texts: Vec<&str> = match v {
                            Value::String(t) => vec![t.as_str()],
                            Value::Array(a) => a
                                .iter()
                                .map(|x| x.as_str().ok_or_else(bad))
                                .collect::<Result<_, _>>()?,
                            _ => return Err(bad()),
                        };
                        for (round, text) in texts.into_iter().enumerate() {
                            let n = round.to_string();
                            let mut at = vec!["cgroup", name.as_str(), k.as_str()];
                            if v.is_array() {
                                at.push(&n);
                            }
                            fio.push(FioSource {
                                cgroup: cg,
                                text: text.to_string(),
                                src_line: self.line_in(variant, &at),
                                lines: self.text_lines_in(variant, &at),
                                round: round as u32,
                            });
                        }
                        continue;
                    }
                    if k == "memory.max" {
                        if let Some(b) = self.memory_max(&path, v)? {
                            memory_max.push((cg, b));
                        }
                        continue;
                    }
                    match IfaceFile::from_key(k) {
                        Some(f) if f.0.on_children() => {
                            for line in self.lines_of(&path, k, v)? {
                                writes.push(IfaceWrite {
                                    at: 0,
                                    cgroup: cg,
                                    file: f,
                                    line,
                                    src_line: self.line_in(variant, &["cgroup", name, k]),
                                });
                            }
                        }
                        Some(f) => {
                            return Err(self.err_at(
                                &path,
                                k,
                                format!(
                                    "`{}` exists only on the root cgroup; put it in [root]",
                                    f.name()
                                ),
                            ));
                        }
                        None => {
                            return Err(self.err_at(
                                &path,
                                k,
                                format!(
                                    "unknown cgroup key `{k}`; accepted: {}, fio",
                                    registry::file_names(false)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        let mut device_writes = Vec::new();
        self.schedule(&t, &tree, &mut writes, &mut device_writes)?;
        // run by run, cgroups in scenario order within each (a stable sort)
        fio.sort_by_key(|f: &FioSource| f.round);
        Ok(Resolved {
            scenario: self.name(),
            variant: variant.map(str::to_string),
            seed,
            duration,
            device,
            kernel,
            host,
            host_profile,
            host_profile_given,
            host_set,
            state,
            tree,
            writes,
            device_writes,
            fio,
            vm,
            memory_max,
            warnings,
        })
    }

    /// An interface value: one line as a string, or several as an array of strings.
    fn lines_of(&self, path: &[&str], k: &str, v: &Value) -> Result<Vec<String>, ScenarioError> {
        match v {
            Value::String(s) => Ok(vec![s.clone()]),
            Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_str().map(str::to_string).ok_or_else(|| {
                        self.err_at(path, k, format!("`{k}`: every line must be a string"))
                    })
                })
                .collect(),
            _ => Err(self.err_at(
                path,
                k,
                format!("`{k}` must be a string (one line) or an array of strings"),
            )),
        }
    }

    /// A top-level table the scenario may leave out.
    fn optional_table<'a>(
        &self,
        v: Option<&'a Value>,
        name: &str,
    ) -> Result<Option<&'a Table>, ScenarioError> {
        match v {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(_) => Err(self.err_at(&[], name, format!("`{name}` must be a table"))),
        }
    }

    /// `[kernel]`, a distribution named as the version resolved to its kernel; a
    /// version past the newest modelled is a warning.
    fn kernel_settings(
        &self,
        v: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<KernelSettings, ScenarioError> {
        let mut k = KernelSettings::default();
        let Some(t) = self.optional_table(v, "kernel")? else {
            return Ok(k);
        };
        let path = ["kernel"];
        let mut version = None;
        let mut throttling_low_set = false;
        for (key, val) in t {
            match key.as_str() {
                "version" => {
                    version = match val {
                        Value::String(s) => Some(s),
                        // TOML reads 6.10 as the number 6.1: never guess which was meant
                        Value::Float(f) => return Err(self.err_at(&path, key, format!("`kernel.version = {f}` is a number (TOML reads 6.10 as 6.1): write the version as a string, e.g. \"6.10\""))),
                        _ => return Err(self.err_at(&path, key, "`kernel.version` must be a string like \"6.10\" or \"debian-12\"")),
                    }
                }
                "hz" => {
                    k.hz = match val.as_integer() {
                        Some(h @ (100 | 250 | 300 | 1000)) => h as u32,
                        _ => return Err(self.err_at(&path, key, "`kernel.hz` must be 100, 250, 300 or 1000 (CONFIG_HZ)")),
                    };
                    k.origin.hz = Given::Scenario;
                }
                "config" => {
                    let Some(ct) = val.as_table() else {
                        return Err(self.err_at(&path, key, "`kernel.config` must be a table"));
                    };
                    for (ck, cv) in ct {
                        let b = cv.as_bool().ok_or_else(|| {
                            self.err_at(&path, ck, format!("`kernel.config.{ck}` must be true or false"))
                        })?;
                        match ck.as_str() {
                            "throttling_low" => {
                                k.throttling_low = b;
                                throttling_low_set = true;
                            }
                            "blkcg_debug_stats" => k.debug_stats = b,
                            _ => {
                                return Err(self.err_at(
                                    &path,
                                    ck,
                                    format!("unknown `kernel.config.{ck}`; accepted: throttling_low, blkcg_debug_stats"),
                                ))
                            }
                        }
                    }
                }
                s if registry::is_switch(s) => {
                    let sv = match val {
                        Value::String(s) => s.clone(),
                        Value::Boolean(b) => b.to_string(),
                        Value::Integer(i) => i.to_string(),
                        _ => return Err(self.err_at(&path, key, format!("`kernel.{key}` must be a string"))),
                    };
                    k.overrides.push((key.clone(), sv));
                }
                _ => {
                    return Err(self.err_at(
                        &path,
                        key,
                        format!("unknown `kernel.{key}`; accepted: version, hz, config, and behaviour switches {}", switch_forms()),
                    ))
                }
            }
        }
        if let Some(s) = version {
            let (n, too_new) = named(s)
                .map_err(|m| self.err_at(&path, "version", format!("`kernel.version`: {m}")))?;
            warnings.extend(too_new);
            let hz_set = k.origin.hz == Given::Scenario;
            k.set_kernel(n, Given::Scenario, hz_set, throttling_low_set);
        }
        Ok(k)
    }

    /// The `[host]` table: its `profile` (or the default one) first, then every other
    /// key over it; with the profile in force.
    fn host_costs(
        &self,
        v: Option<&Value>,
    ) -> Result<(HostCosts, &'static HostProfile), ScenarioError> {
        let t = self.optional_table(v, "host")?;
        let named = match t.and_then(|t| t.get("profile")) {
            None => host_profile::default_profile(),
            Some(p) => p.as_str().and_then(host_profile::profile).ok_or_else(|| {
                self.err_at(
                    &["host"],
                    "profile",
                    format!(
                        "`host.profile` = {p}: no such host profile; accepted: {} \
                             (`blkcg-sim host list` shows what each holds)",
                        host_profile::names()
                    ),
                )
            })?,
        };
        let mut h = named.costs();
        let Some(t) = t else {
            return Ok((h, named));
        };
        for (key, val) in t {
            // the keys that are not times: shares and a count, integers up to `max`
            let count = |max: u32, accepted: &str| {
                val.as_integer()
                    .and_then(|v| u32::try_from(v).ok())
                    .filter(|v| *v <= max)
                    .ok_or_else(|| {
                        self.err_at(
                            &["host"],
                            key,
                            format!("`host.{key}` = {val}: {accepted} is accepted"),
                        )
                    })
            };
            const PPM: &str = "an integer from 0 to 1000000 (parts per million of the wake-ups)";
            let n = match key.as_str() {
                "profile" => continue,
                "wakeup_lateness" => {
                    h.wakeup_lateness = Some(self.wakeup_lateness(key, val)?);
                    continue;
                }
                "cpus" => u64::from(count(
                    1,
                    "0 (every woken task runs at once) or 1 (one CPU, as the qemu guest's vCPU)",
                )?),
                "fio_sleep_compensation" => u64::from(count(
                    1,
                    "0 (every fio sleep ends late by the whole lateness) or 1 (fio's own \
                     compensation)",
                )?),
                "fio_start_phase" => u64::from(count(
                    1,
                    "0 (every fio starts on a whole millisecond) or 1 (at a phase of the \
                     tick drawn from the seed)",
                )?),
                "fio_replay_poll" => u64::from(count(
                    1,
                    "0 (fio 3.33: a replay sleeps for its next entry, reaping nothing) or 1 \
                     (fio 3.36 and later: it polls, reaping as completions come)",
                )?),
                "wakeup_slip_ppm" | "tag_wakeup_slip_ppm" => u64::from(count(1_000_000, PPM)?),
                "memory" => self.host_memory(val)?,
                k if !HostCosts::KEYS.contains(&k) => {
                    return Err(self.err_at(
                        &["host"],
                        key,
                        format!(
                            "unknown `host.{key}`; accepted: {}",
                            HostCosts::KEYS.join(", ")
                        ),
                    ));
                }
                _ => self.host_time(key, val)?,
            };
            h.set_integer(key, n);
        }
        Ok((h, named))
    }

    /// A cgroup's `memory.max` (the page cache's limit for its dirty pages): `max`, or
    /// bytes with the kernel's suffixes (`"512M"`, `memparse()`); None for `max`.
    fn memory_max(&self, path: &[&str], v: &Value) -> Result<Option<u64>, ScenarioError> {
        let bytes = match v {
            Value::String(s) if s.trim() == "max" => return Ok(None),
            Value::Integer(i) => u64::try_from(*i).ok(),
            Value::String(s) => {
                crate::workload::fio::units::bytes(s.trim(), 1024, &mut Vec::new()).ok()
            }
            _ => None,
        };
        match bytes {
            Some(b) if b >= 1 << 20 => Ok(Some(b)),
            _ => Err(self.err_at(
                path,
                "memory.max",
                format!(
                    "`memory.max` = {v}: \"max\" or a size of at least 1 MiB is accepted \
                     (bytes, or \"512M\", \"2G\")"
                ),
            )),
        }
    }

    /// `[host] memory`: bytes, as an integer or a size with fio's units (`"16G"`,
    /// `"512MiB"`), from 1 MiB to 1 PiB.
    fn host_memory(&self, val: &Value) -> Result<u64, ScenarioError> {
        let bytes = match val {
            Value::Integer(i) => u64::try_from(*i).ok(),
            Value::String(s) => crate::workload::fio::units::bytes(s, 1024, &mut Vec::new()).ok(),
            _ => None,
        };
        bytes
            .filter(|b| (1 << 20..=1 << 50).contains(b))
            .ok_or_else(|| {
                self.err_at(
                    &["host"],
                    "memory",
                    format!(
                        "`host.memory` = {val}: a size from 1 MiB to 1 PiB is accepted, in bytes \
                     or with a unit (\"16G\", \"512MiB\")"
                    ),
                )
            })
    }

    /// A `[host]` time: a duration (a bare number is ns) up to a second, or an hour
    /// for `fio_restart_ns` (more is a typo).
    fn host_time(&self, key: &str, val: &Value) -> Result<Ns, ScenarioError> {
        let ns = parse_duration(val, BareNumber::Nanoseconds)
            .map_err(|m| self.err_at(&["host"], key, format!("`host.{key}`: {m}")))?;
        let max = if key == "fio_restart_ns" {
            3_600_000_000_000
        } else {
            1_000_000_000
        };
        if ns > max {
            return Err(self.err_at(
                &["host"],
                key,
                format!(
                    "`host.{key}` = {val}: at most {max} ns ({} s) is accepted",
                    max / 1_000_000_000
                ),
            ));
        }
        Ok(ns)
    }

    /// `[host] wakeup_lateness`: one table of (percentile, lateness) points for every
    /// sleep, `[[0, "52us"], [50, "61us"], ..., [100, "4ms"]]`, or a table of them
    /// by sleep length, `{ "100us" = [...], "4ms" = [...] }`.
    fn wakeup_lateness(&self, key: &str, val: &Value) -> Result<WakeupLateness, ScenarioError> {
        let bad = |m: String| {
            self.err_at(
                &["host"],
                key,
                format!(
                    "`host.{key}`: {m}; accepted: an array of [percentile, lateness] pairs from \
                     the 0th to the 100th percentile, e.g. [[0, \"52us\"], [50, \"61us\"], \
                     [99, \"1.1ms\"], [100, \"4ms\"]], for every sleep; or a table of such \
                     arrays by sleep length, up to {} lengths, e.g. {{ \"100us\" = [...], \
                     \"4ms\" = [...] }} (`blkcg-sim host probe` measures one)",
                    WakeupLateness::MAX_LENGTHS
                ),
            )
        };
        // `of`: which table, when there are several
        let table = |v: &Value, of: &str| -> Result<LatenessTable, ScenarioError> {
            let arr = v
                .as_array()
                .ok_or_else(|| bad(format!("{of}{v} is not an array")))?;
            let mut points = Vec::with_capacity(arr.len());
            for p in arr {
                let pair = p.as_array().filter(|a| a.len() == 2);
                let Some(pair) = pair else {
                    return Err(bad(format!("{of}{p} is not a [percentile, lateness] pair")));
                };
                let pct = match &pair[0] {
                    Value::Integer(i) => *i as f64,
                    Value::Float(f) => *f,
                    other => {
                        return Err(bad(format!("{of}the percentile {other} is not a number")));
                    }
                };
                if !(0.0..=100.0).contains(&pct) {
                    return Err(bad(format!(
                        "{of}the percentile {pct} is not within 0 to 100"
                    )));
                }
                let ns = self.host_time(key, &pair[1])?;
                points.push(((pct * 10_000.0).round() as u32, ns));
            }
            LatenessTable::new(&points).map_err(|m| bad(format!("{of}{m}")))
        };
        let Value::Table(by_len) = val else {
            return Ok(WakeupLateness::every_sleep(table(val, "")?));
        };
        let mut tables = Vec::with_capacity(by_len.len());
        for (len, v) in by_len {
            let ns = parse_duration(&Value::String(len.clone()), BareNumber::Nanoseconds)
                .map_err(|m| bad(format!("the sleep length \"{len}\": {m}")))?;
            tables.push((ns, table(v, &format!("the table for \"{len}\": "))?));
        }
        tables.sort_by_key(|&(ns, _)| ns);
        WakeupLateness::by_sleep(&tables).map_err(bad)
    }

    fn prior_state(&self, v: Option<&Value>) -> Result<PriorState, ScenarioError> {
        let mut st = PriorState::default();
        let Some(t) = self.optional_table(v, "state")? else {
            return Ok(st);
        };
        for (key, val) in t {
            match key.as_str() {
                "iocost.vrate" => {
                    let pct = match val {
                        Value::Float(f) => *f,
                        Value::Integer(i) => *i as f64,
                        _ => f64::NAN,
                    };
                    if !(1.0..=10_000.0).contains(&pct) {
                        return Err(self.err_at(
                            &["state"],
                            key,
                            format!(
                                "`state.iocost.vrate` = {val}: expected the base vrate in percent as io.stat's `cost.vrate` shows it, a number from 1 to 10000 (e.g. 125.5)"
                            ),
                        ));
                    }
                    st.iocost_vrate_pct = Some(pct);
                }
                _ => {
                    return Err(self.err_at(
                        &["state"],
                        key,
                        format!("unknown `state.{key}`; accepted: \"iocost.vrate\""),
                    ));
                }
            }
        }
        Ok(st)
    }

    /// `[[schedule]]`: interface writes at a time (`at = "5s"`, `cgroup = "a"`, then
    /// one `"io.max" = ...`-style key). The cgroup must be one the scenario declares:
    /// writing into a directory that does not exist is ENOENT.
    fn schedule(
        &self,
        t: &Table,
        tree: &CgroupTree,
        writes: &mut Vec<IfaceWrite>,
        device_writes: &mut Vec<DeviceWrite>,
    ) -> Result<(), ScenarioError> {
        let Some(s) = t.get("schedule") else {
            return Ok(());
        };
        let Some(arr) = s.as_array() else {
            return Err(self.err_at(
                &[],
                "schedule",
                "`schedule` must be an array of tables: [[schedule]]",
            ));
        };
        for (i, e) in arr.iter().enumerate() {
            let i = i.to_string();
            let path = ["schedule", i.as_str()];
            let Some(et) = e.as_table() else {
                return Err(self.err_at(&["schedule"], &i, "each [[schedule]] must be a table"));
            };
            let at = match et.get("at") {
                Some(v) => parse_duration(v, BareNumber::Seconds)
                    .map_err(|m| self.err_at(&path, "at", format!("`schedule.at`: {m}")))?,
                None => {
                    return Err(self.err_at(
                        &["schedule"],
                        &i,
                        "every [[schedule]] needs `at = \"5s\"`",
                    ));
                }
            };
            if let Some(d) = et.get("device") {
                let model = t
                    .get("device")
                    .and_then(|d| d.get("model"))
                    .and_then(Value::as_str)
                    .unwrap_or("nullb");
                let src_line = self.lines.nearest(&[path[0], path[1], "device"]);
                for (action, line) in self.device_actions(&path, et, d, model)? {
                    device_writes.push(DeviceWrite {
                        at,
                        action,
                        line,
                        src_line,
                    });
                }
                continue;
            }
            let cg = match et.get("cgroup") {
                None => CgroupTree::ROOT,
                Some(Value::String(p)) => tree.find(p).ok_or_else(|| {
                    self.err_at(
                        &path,
                        "cgroup",
                        format!(
                            "cgroup `{}` does not exist (ENOENT): declare it with a [cgroup.\"{}\"] table",
                            p.escape_debug(),
                            p.trim_matches('/').escape_debug()
                        ),
                    )
                })?,
                Some(_) => return Err(self.err_at(&path, "cgroup", "`cgroup` must be a string: the cgroup's path, e.g. \"a/b\"")),
            };
            let mut n = 0;
            for (k, v) in et {
                if k == "at" || k == "cgroup" {
                    continue;
                }
                let Some(f) = IfaceFile::from_key(k) else {
                    let names: Vec<String> = registry::cgroup_files()
                        .map(|f| format!("\"{}\"", f.name))
                        .collect();
                    return Err(self.err_at(
                        &path,
                        k,
                        format!(
                            "[[schedule]]: unknown key `{k}`; accepted: at, cgroup, and one of {}",
                            names.join(", ")
                        ),
                    ));
                };
                for line in self.lines_of(&path, k, v)? {
                    n += 1;
                    writes.push(IfaceWrite {
                        at,
                        cgroup: cg,
                        file: f,
                        line,
                        src_line: self.lines.nearest(&[path[0], path[1], k]),
                    });
                }
            }
            if n == 0 {
                return Err(self.err_at(&["schedule"], &i, "a [[schedule]] entry writes nothing: add e.g. \"io.max\" = \"MAJ:MIN riops=100\""));
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// A `[[schedule]]` entry's `device` value (`path` is the entry's): `"remove"`, or
    /// null_blk configfs attributes (`power = 0`, `badblocks = "+START-END"` or an
    /// array of lines).
    fn device_actions(
        &self,
        path: &[&str],
        entry: &Table,
        v: &Value,
        model: &str,
    ) -> Result<Vec<(DeviceAction, String)>, ScenarioError> {
        let err = |msg: String| self.err_at(path, "device", format!("[[schedule]] device: {msg}"));
        if let Some(k) = entry.keys().find(|k| *k != "at" && *k != "device") {
            return Err(err(format!(
                "`{k}` beside `device`: an entry acts on the device or writes cgroup files, not both"
            )));
        }
        let attrs = match v {
            Value::String(s) if s == "remove" => {
                return Ok(vec![(DeviceAction::Remove, s.clone())]);
            }
            Value::Table(a) => a,
            _ => {
                return Err(err(format!(
                    "`{v}` is not accepted: expected \"remove\" (the disk goes away), or null_blk configfs attributes: power = 0, badblocks = \"+START-END\""
                )));
            }
        };
        if model != "nullb" {
            return Err(err(format!(
                "configfs attributes are null_blk's; this device is `{model}`: use device = \"remove\""
            )));
        }
        let mut out = Vec::new();
        for (k, val) in attrs {
            match (k.as_str(), val) {
                ("power", Value::Integer(0)) => out.push((DeviceAction::Remove, "0".into())),
                ("power", _) => {
                    return Err(err(format!(
                        "power = {val}: only 0 is accepted (powering the device off removes the disk; powering it on again makes a new disk, which is not modelled)"
                    )));
                }
                ("badblocks", _) => {
                    let lines = match val {
                        Value::String(l) => vec![l.as_str()],
                        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                        _ => Vec::new(),
                    };
                    if lines.is_empty() || matches!(val, Value::Array(a) if a.len() != lines.len())
                    {
                        return Err(err(format!(
                            "badblocks = {val}: expected a line \"+START-END\" / \"-START-END\" or an array of them"
                        )));
                    }
                    for l in lines {
                        let w = BadblocksWrite::parse(l)
                            .map_err(|e| err(format!("echo \"{l}\" > badblocks: {e}")))?;
                        out.push((DeviceAction::Badblocks(w), l.to_string()));
                    }
                }
                _ => {
                    return Err(err(format!(
                        "unknown attribute `{k}`; accepted: power, badblocks"
                    )));
                }
            }
        }
        if out.is_empty() {
            return Err(err(
                "writes nothing: add power = 0 or badblocks = \"+START-END\"".into(),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_distribution_as_the_version_sets_its_kernel_and_hz_unless_the_scenario_does() {
        let sc = Scenario::parse(
            "[device]\nmodel = \"nullb\"\n[kernel]\nversion = \"debian-12\"\n\
             [[variant]]\nname = \"hz\"\nkernel = { hz = 1000 }\n\
             [[variant]]\nname = \"ubuntu\"\nkernel = { version = \"ubuntu-24.04\" }\n\
             [[variant]]\nname = \"plain\"\nkernel = { version = \"6.1\" }\n",
            "d.toml",
        )
        .unwrap();
        let k = |v| sc.resolve(Some(v)).unwrap().kernel;
        let debian = crate::kernel_version::distro("debian-12");
        let hz = k("hz");
        assert_eq!((hz.version.as_str(), hz.hz), ("6.1.192", 1000));
        assert_eq!(hz.origin.distro, debian);
        assert_eq!(hz.origin.hz, Given::Scenario);
        let u = k("ubuntu");
        assert_eq!(
            (u.version.as_str(), u.hz, u.throttling_low),
            ("6.8", 1000, false)
        );
        assert_eq!(u.origin.version, Given::Scenario);
        // a plain version is only a version: HZ is the default, and says so
        let p = k("plain");
        assert_eq!((p.version.as_str(), p.hz), ("6.1", 1000));
        assert_eq!((p.origin.distro, p.origin.hz), (None, Given::Default));
        let none = Scenario::parse("[device]\nmodel = \"nullb\"\n", "n.toml").unwrap();
        let n = none.resolve(None).unwrap().kernel;
        assert_eq!(n.origin.version, Given::Default);
    }

    #[test]
    fn resolves_cgroups_writes_and_jobs() {
        let sc = Scenario::parse(
            r#"
[device]
model = "nullb"
[kernel]
version = "4.18"
hz = 250
"throttle.iops_wait" = "slice-end"
config = { throttling_low = true }
[root]
"io.cost.qos" = "252:0 enable=1"
[cgroup."p/c"]
"io.max" = ["252:0 riops=10", "252:0 wiops=5"]
fio = "fio --name=c"
[[schedule]]
at = "2s"
cgroup = "p/c"
"io.max" = "252:0 riops=max"
"#,
            "x.toml",
        )
        .unwrap();
        let r = sc.resolve(None).unwrap();
        assert_eq!(r.kernel.hz, 250);
        assert!(r.kernel.throttling_low);
        assert_eq!(
            r.kernel.overrides,
            vec![("throttle.iops_wait".into(), "slice-end".into())]
        );
        let c = r.tree.find("p/c").unwrap();
        assert_eq!(r.writes.len(), 4);
        assert_eq!(r.writes[1].cgroup, c);
        assert_eq!(r.writes[3].at, 2_000_000_000);
        assert_eq!(r.fio[0].cgroup, c);
    }

    #[test]
    fn misplaced_files_are_refused_with_a_line() {
        let sc = Scenario::parse(
            "[device]\nmodel=\"nullb\"\n[cgroup.a]\n\"io.cost.qos\" = \"x\"\n",
            "y.toml",
        )
        .unwrap();
        let e = sc.resolve(None).unwrap_err();
        assert_eq!(e.line, Some(4));
        assert!(e.msg.contains("only on the root"), "{e}");
        let sc =
            Scenario::parse("[device]\nmodel=\"nullb\"\n[kernel]\nhz = 99\n", "y.toml").unwrap();
        assert!(
            sc.resolve(None)
                .unwrap_err()
                .to_string()
                .starts_with("y.toml:4:")
        );
    }
}
