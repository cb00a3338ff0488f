//! What a run assumed: the kernel (version and HZ), the host's costs and the device's
//! latency model, each with who gave it — the scenario, `run --kernel`, a
//! distribution's preset, or the simulator's default.
//!
//! Design
//! ------
//! A result can turn on a value nobody wrote down (a scenario without `[kernel]` runs
//! the newest upstream at HZ=1000; a cloud volume's latency is flat unless tails are
//! asked for), so every run says what it assumed. [`Assumed::of`] makes that text, in
//! one place, from the resolved variant and its device (`run::prepare` calls it once
//! per variant); everything that shows it takes it from there: the top of
//! `summary.txt` (and so `run --output-format summary`, `report.html` and the
//! library's summary), `run`'s stderr when the summaries are not printed, and `check`.
//! Three lines, each starting `assumed: ` so that `grep` finds them:
//!
//! ```text
//! assumed: kernel 7.0, the newest upstream modelled (default), HZ=1000 (default)
//! assumed: host profile minimal (default): submit 2 µs + 75 ns/page, complete 1.5 µs + 20 ns/page, ...
//! assumed: device ssd nvme0n1, model defaults: 80 µs read / 20 µs write + bytes ...
//! ```
//!
//! [`Assumed::upstream_defaults`] says where a variant relies on a default that no
//! distribution ships (the version) or that only some do (HZ): `check`'s warnings.

use std::fmt;

use crate::device::BlockDevice;
use crate::kernel_version::{DEFAULT_HZ, DISTROS, Distro, NEWEST, distro_list};
use crate::scenario::resolve::{Given, Resolved};

/// What one variant assumed (see the module comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assumed {
    kernel: String,
    host: String,
    device: String,
    /// With buffered writers: the page cache's memory and sysctls.
    page_cache: Option<String>,
    /// The defaults no distribution ships, as `check` warns of them.
    defaults: Vec<String>,
}

/// Who gave a value, in words; `distro` is the distribution the version was named by.
fn by(g: Given, distro: Option<&Distro>) -> String {
    match g {
        Given::Default => "default".into(),
        Given::Scenario => "scenario".into(),
        Given::CommandLine => "--kernel".into(),
        Given::Distro(d) if distro == Some(d) => format!("{}'s CONFIG_HZ", d.name),
        // `run --kernel 6.1` on a scenario that named a distribution keeps its HZ
        Given::Distro(d) => format!("the scenario's {}: its CONFIG_HZ", d.name),
    }
}

impl Assumed {
    /// What variant `r` on device `dev` assumes.
    pub fn of(r: &Resolved, dev: &dyn BlockDevice) -> Assumed {
        let k = &r.kernel;
        let o = k.origin;
        let version = match (o.version, o.distro) {
            (Given::Default, _) => {
                format!(
                    "kernel {}, the newest upstream modelled (default)",
                    k.version
                )
            }
            (g, Some(d)) => format!("kernel {} = {} ({})", k.version, d.name, by(g, None)),
            (g, None) => format!("kernel {} ({})", k.version, by(g, None)),
        };
        let mut kernel = format!("{version}, HZ={} ({})", k.hz, by(o.hz, o.distro));
        if k.throttling_low {
            kernel += ", CONFIG_BLK_DEV_THROTTLING_LOW=y";
        }
        let profile = format!(
            "host profile {} ({})",
            r.host_profile.name,
            by(r.host_profile_given, None)
        );
        let host = if r.host_set.is_empty() {
            format!("{profile}: {}", r.host.summary())
        } else {
            format!(
                "{profile}, [{}] from the scenario: {}",
                r.host_set.join(", "),
                r.host.summary()
            )
        };
        let m = dev.latency_model();
        let set: Vec<&str> = m
            .keys
            .iter()
            .copied()
            .filter(|key| r.device.contains_key(*key))
            .collect();
        let given = if set.is_empty() {
            "model defaults".to_string()
        } else {
            format!("[{}] from the scenario", set.join(", "))
        };
        let device = format!(
            "device {} {}, {given}: {}",
            dev.model(),
            dev.limits().name,
            m.text
        );
        let mut defaults = Vec::new();
        if o.version == Given::Default {
            defaults.push(format!(
                "no [kernel] version: this runs the newest upstream modelled ({NEWEST}), \
                 which no distribution ships; a distribution's kernel is kernel.version = \
                 one of {}",
                distro_list()
            ));
        }
        if o.hz == Given::Default {
            let shipped: Vec<String> = DISTROS
                .iter()
                .map(|d| format!("{} {}", d.name, d.hz))
                .collect();
            defaults.push(format!(
                "no [kernel] hz: HZ={DEFAULT_HZ}, the simulator's default (upstream's Kconfig \
                 defaults to 250; the distributions ship {}): set kernel.hz, or name a \
                 distribution as kernel.version",
                shipped.join(", ")
            ));
        }
        Assumed {
            kernel,
            host,
            device,
            page_cache: None,
            defaults,
        }
    }

    /// The run has buffered readers or writers: say what their page cache is (a
    /// fourth line).
    pub fn set_page_cache(&mut self, r: &Resolved, read_ahead_kb: u64) {
        let memcg: Vec<String> = r
            .memory_max
            .iter()
            .map(|&(cg, b)| format!("{} memory.max={b}", r.tree.nodes[cg as usize].path))
            .collect();
        let memcg = if memcg.is_empty() {
            String::new()
        } else {
            format!(", {}", memcg.join(", "))
        };
        let wbt = match r.device.get("wbt_lat_usec") {
            Some(v) => format!("wbt_lat_usec={v} ([device])"),
            None => "the default target (2 ms non-rotational, 75 ms rotational)".into(),
        };
        self.page_cache = Some(format!(
            "page cache of {} bytes dirtyable ([host] memory), {}, a buffered write's copy \
             {}/page ([host] page_copy_ns); cgroup writeback (each cgroup's pages written \
             back as that cgroup){memcg}; writeback throttling (wbt) with {wbt}; \
             readahead of {read_ahead_kb} KiB (read_ahead_kb)",
            r.host.memory,
            crate::scenario::sysctl::describe(&r.vm),
            crate::sim::time_text(r.host.page_copy_ns),
        ));
    }

    /// Where the variant relies on a default no distribution ships: one line each,
    /// naming the presets that would replace it.
    pub fn upstream_defaults(&self) -> &[String] {
        &self.defaults
    }
}

/// The block, a line each for the kernel, the host and the device.
impl fmt::Display for Assumed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in [&self.kernel, &self.host, &self.device] {
            writeln!(f, "assumed: {line}")?;
        }
        if let Some(line) = &self.page_cache {
            writeln!(f, "assumed: {line}")?;
        }
        Ok(())
    }
}
