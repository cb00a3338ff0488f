//! Kernel versions as scenarios, `--kernel` and booted kernels name them.
//!
//! Design
//! ------
//! One parser for every place a version is read (`[kernel] version`, `run --kernel`,
//! the controllers' preset tables), so a version means the same to blk-throttle and
//! blk-iocost: `MAJOR.MINOR`, a stable release `MAJOR.MINOR.PATCH` (whose backports
//! may differ from the series' first release), a release candidate `MAJOR.MINOR-rcN`
//! (before that release), or `newest` (the newest upstream we model, the default).
//! Versions older than the oldest preset are refused — how the kernel behaved there is
//! not modelled — and versions past the newest are accepted with a warning as far as
//! one major release ahead (they behave as the newest; a typo such as `61.2` is an
//! error).
//!
//! A distribution's kernel is named by the distribution ([`DISTROS`]: `debian-12`,
//! `debian-13`, `ubuntu-24.04`): one table of what each ships for amd64 — the upstream
//! version its kernel is built from, `CONFIG_HZ`, and the options the simulator models
//! that its config leaves out — each row with the config file it was read from.
//! [`named`] reads every name a user may give (`[kernel] version`, `run --kernel`):
//! a version, or a distribution, which then also decides HZ and those options. The
//! default stays the newest upstream at HZ=1000 (docs/design.md §5 says why); the run's
//! `assumed:` block and `check` say so.

use std::fmt;

/// One kernel version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelVersion {
    pub major: u32,
    pub minor: u32,
    /// Stable patch level (0: the series' first release).
    pub patch: u32,
    /// A release candidate comes before its release: `rc: Some(3)` for `7.0-rc3`.
    pub rc: Option<u32>,
}

impl Ord for KernelVersion {
    /// Release candidates of a series before its release, then its stable releases.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        let key = |v: &Self| (v.major, v.minor, v.rc.is_none(), v.rc.unwrap_or(0), v.patch);
        key(self).cmp(&key(o))
    }
}

impl PartialOrd for KernelVersion {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// The newest upstream version modelled: the default preset and what `newest` means.
pub const NEWEST: KernelVersion = KernelVersion::series(7, 0);

/// The oldest version with presets (blk-throttle 4.18, the first seed's "before").
pub const OLDEST: KernelVersion = KernelVersion::series(4, 18);

/// HZ where a scenario sets none: the simulator's default, not upstream's (Kconfig.hz
/// defaults to 250) nor Debian's (250); Ubuntu 24.04 ships it.
pub const DEFAULT_HZ: u32 = 1000;

/// A distribution's kernel as it ships for amd64.
#[derive(Debug, PartialEq, Eq)]
pub struct Distro {
    /// `kernel.version = "debian-12"`, `run --kernel debian-12`.
    pub name: &'static str,
    /// The release, as people call it.
    pub release: &'static str,
    /// The upstream version its kernel is built from, with the stable patch level
    /// where the distribution follows upstream's stable releases (behaviours that
    /// stable series backported key on it).
    pub version: KernelVersion,
    /// `CONFIG_HZ`.
    pub hz: u32,
    /// `CONFIG_BLK_DEV_THROTTLING_LOW` (modelled in 4.10–6.8: the SSD slice).
    pub throttling_low: bool,
    /// The options a policy needs (its registry entry's `kconfig`, without `CONFIG_`)
    /// that this kernel is built without: writing one of that policy's files fails
    /// with ENOENT, as on the machine.
    pub not_built: &'static [&'static str],
    /// Where these were read.
    pub source: &'static str,
    /// Its amd64 kernel packages in Debian's archive, as an `apt-cache search
    /// --names-only` pattern: `validate --kernel debian-12` boots the newest (None: not
    /// in Debian's archive).
    pub package: Option<&'static str>,
}

/// The distributions' kernels, oldest release first.
pub const DISTROS: &[Distro] = &[
    Distro {
        name: "debian-12",
        release: "Debian 12 \"bookworm\"",
        version: KernelVersion {
            major: 6,
            minor: 1,
            patch: 192,
            rc: None,
        },
        hz: 250,
        throttling_low: false,
        not_built: &["BLK_CGROUP_IOLATENCY", "BLK_CGROUP_IOPRIO"],
        source: "linux-config-6.1 6.1.192-3 (bookworm-security), \
                 /usr/src/linux-config-6.1/config.amd64_none_amd64.xz: CONFIG_HZ_250=y, \
                 CONFIG_BLK_DEV_THROTTLING_LOW, CONFIG_BLK_CGROUP_IOLATENCY and \
                 CONFIG_BLK_CGROUP_IOPRIO not set (the cloud-amd64 and rt flavours alike)",
        package: Some(r"^linux-image-6\.1\.0-[0-9]+-amd64$"),
    },
    Distro {
        name: "debian-13",
        release: "Debian 13 \"trixie\"",
        version: KernelVersion {
            major: 6,
            minor: 12,
            patch: 117,
            rc: None,
        },
        hz: 250,
        throttling_low: false,
        not_built: &["BLK_CGROUP_IOLATENCY", "BLK_CGROUP_IOPRIO"],
        source: "linux-config-6.12 6.12.117-1~deb12u1 (bookworm-security: trixie's \
                 linux 6.12.117-1 rebuilt for bookworm, same config), \
                 config.amd64_none_amd64.xz: CONFIG_HZ_250=y, CONFIG_BLK_CGROUP_IOLATENCY \
                 and CONFIG_BLK_CGROUP_IOPRIO not set (THROTTLING_LOW is gone since 6.9)",
        // trixie's own (+deb13), or its rebuild for bookworm (+deb12)
        package: Some(r"^linux-image-6\.12\.[0-9]+\+deb1[23]-amd64$"),
    },
    Distro {
        name: "ubuntu-24.04",
        release: "Ubuntu 24.04 LTS \"noble\"",
        // Ubuntu's 6.8.0-N is 6.8 with its own picks from later stable series: no
        // upstream patch level stands for it
        version: KernelVersion::series(6, 8),
        hz: 1000,
        throttling_low: false,
        not_built: &["BLK_CGROUP_IOLATENCY"],
        source: "Ubuntu's noble kernel tree (linux 6.8.0-84), \
                 debian.master/config/annotations: CONFIG_HZ_1000 'y' for amd64 \
                 (LP: #2051342, 24.04 moved generic from 250 to 1000), \
                 CONFIG_BLK_DEV_THROTTLING_LOW and CONFIG_BLK_CGROUP_IOLATENCY 'n', \
                 CONFIG_BLK_CGROUP_IOPRIO 'y'; read from a public mirror of that tree \
                 (Ubuntu's archive is not reachable from here to check a .deb)",
        package: None,
    },
];

/// The distribution called `name`, if it is one.
pub fn distro(name: &str) -> Option<&'static Distro> {
    DISTROS.iter().find(|d| d.name == name)
}

/// The distributions as help and errors list them: `debian-12 (6.1.192, HZ=250), ...`.
pub fn distro_list() -> String {
    let all: Vec<String> = DISTROS
        .iter()
        .map(|d| format!("{} ({}, HZ={})", d.name, d.version, d.hz))
        .collect();
    all.join(", ")
}

/// A kernel as a user names it: a version, or a distribution's kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named {
    pub version: KernelVersion,
    /// The distribution named, which also decides HZ and config options.
    pub distro: Option<&'static Distro>,
}

/// Read `s` as `[kernel] version` and `run --kernel` take it: a distribution's name or
/// a version ([`KernelVersion::checked`]); Ok with an optional warning (a version
/// past the newest), or why it is refused, naming what is accepted.
pub fn named(s: &str) -> Result<(Named, Option<String>), String> {
    if let Some(d) = distro(s) {
        let n = Named {
            version: d.version,
            distro: Some(d),
        };
        return Ok((n, None));
    }
    let (version, warning) = KernelVersion::checked(s)?;
    Ok((
        Named {
            version,
            distro: None,
        },
        warning,
    ))
}

impl KernelVersion {
    /// The first release of a series.
    pub const fn series(major: u32, minor: u32) -> Self {
        KernelVersion {
            major,
            minor,
            patch: 0,
            rc: None,
        }
    }

    /// Before the first release of `major.minor` (release candidates of it included).
    pub fn before(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) < (major, minor)
            || ((self.major, self.minor) == (major, minor) && self.rc.is_some())
    }

    /// Whether this kernel carries a change merged for `since` (`(major, minor)`, its
    /// release candidates included) or backported to a stable series: `stable` lists
    /// `((major, minor), first patch)`.
    pub fn carries(&self, since: (u32, u32), stable: &[((u32, u32), u32)]) -> bool {
        let v = (self.major, self.minor);
        since <= v
            || stable
                .iter()
                .any(|&(series, first)| series == v && self.patch >= first)
    }

    /// Parse `s` (`newest`, `6.12`, `6.12.117`, `7.0-rc3`); the error says what is
    /// accepted.
    pub fn parse(s: &str) -> Result<KernelVersion, String> {
        let bad = || {
            format!(
                "`{s}` is not a kernel version: expected MAJOR.MINOR (e.g. \"6.12\"), a stable \
                 release MAJOR.MINOR.PATCH (\"6.12.117\"), a release candidate \
                 MAJOR.MINOR-rcN (\"7.0-rc3\"), \"newest\" ({NEWEST}), or a \
                 distribution's kernel: {}",
                distro_list()
            )
        };
        if s == "newest" {
            return Ok(NEWEST);
        }
        let (num, rc) = match s.split_once("-rc") {
            Some((n, r)) => (n, Some(r.parse::<u32>().map_err(|_| bad())?)),
            None => (s, None),
        };
        let parts: Vec<u32> = num
            .split('.')
            .map(|p| p.parse::<u32>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let v = match (parts.as_slice(), rc) {
            ([major, minor], rc) => KernelVersion {
                major: *major,
                minor: *minor,
                patch: 0,
                rc,
            },
            ([major, minor, patch], None) => KernelVersion {
                major: *major,
                minor: *minor,
                patch: *patch,
                rc: None,
            },
            _ => return Err(bad()),
        };
        Ok(v)
    }

    /// Parse `s` and check it against the versions modelled: Ok with an optional warning
    /// (a version past the newest), or why it is refused.
    fn checked(s: &str) -> Result<(KernelVersion, Option<String>), String> {
        let v = Self::parse(s)?;
        if v.before(OLDEST.major, OLDEST.minor) {
            return Err(format!(
                "kernel {v} is older than any version modelled: presets start at {OLDEST} \
                 (blk-throttle's io.max as 4.18 had it); the newest is {NEWEST}"
            ));
        }
        if v.major > NEWEST.major + 1 {
            return Err(format!(
                "kernel {v} is far newer than the newest modelled ({NEWEST}): a typo?"
            ));
        }
        let warning = (v > NEWEST && v.series_of() != NEWEST.series_of()).then(|| {
            format!(
                "kernel {v} is newer than the newest version modelled ({NEWEST}); it runs with \
                 {NEWEST}'s behaviours"
            )
        });
        Ok((v, warning))
    }

    fn series_of(&self) -> (u32, u32) {
        (self.major, self.minor)
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if self.patch > 0 {
            write!(f, ".{}", self.patch)?;
        }
        if let Some(rc) = self.rc {
            write!(f, "-rc{rc}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_parse_and_order() {
        let v = |s| KernelVersion::parse(s).unwrap();
        assert_eq!(v("newest"), NEWEST);
        assert_eq!(v("6.12.117").patch, 117);
        assert!(v("7.0-rc3") < v("7.0"));
        assert!(v("7.0-rc3").before(7, 0));
        assert!(!v("7.0").before(7, 0));
        assert!(v("6.12.117").before(6, 13));
        assert_eq!(v("7.0-rc3").to_string(), "7.0-rc3");
        for bad in [
            "",
            "6",
            "6.x",
            "6.12.1.2",
            "6.12.1-rc1",
            "7.0-rc",
            "v6.1",
            "6.1.0-56",
        ] {
            assert!(KernelVersion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn versions_outside_the_presets_are_refused_or_warned() {
        for old in ["2.6", "3.10", "4.17", "4.18-rc1"] {
            assert!(KernelVersion::checked(old).is_err(), "{old}");
        }
        assert!(KernelVersion::checked("99.0").is_err());
        assert_eq!(KernelVersion::checked("6.12").unwrap().1, None);
        assert_eq!(KernelVersion::checked("7.0.5").unwrap().1, None);
        assert!(KernelVersion::checked("7.1").unwrap().1.is_some());
        assert!(KernelVersion::checked("8.0").unwrap().1.is_some());
    }

    #[test]
    fn distributions_name_their_kernels() {
        let (n, warning) = named("debian-12").unwrap();
        assert_eq!((n.version.to_string(), warning), ("6.1.192".into(), None));
        assert_eq!(n.distro.map(|d| d.hz), Some(250));
        let hz = |name| {
            named(name)
                .unwrap()
                .0
                .distro
                .map(|d| (d.version.to_string(), d.hz))
        };
        assert_eq!(hz("debian-13"), Some(("6.12.117".into(), 250)));
        assert_eq!(hz("ubuntu-24.04"), Some(("6.8".into(), 1000)));
        assert_eq!(named("6.1").unwrap().0.distro, None);
        // every distribution's version is one the presets model
        for d in DISTROS {
            assert!(
                KernelVersion::checked(&d.version.to_string()).is_ok(),
                "{}",
                d.name
            );
            assert!(!d.source.is_empty());
        }
        let e = named("debian-11").unwrap_err();
        assert!(
            e.contains("debian-12 (6.1.192, HZ=250)") && e.contains("ubuntu-24.04"),
            "{e}"
        );
    }
}
