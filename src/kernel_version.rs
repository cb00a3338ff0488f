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

    /// Parse `s` (`newest`, `6.12`, `6.12.117`, `7.0-rc3`); the error says what is
    /// accepted.
    pub fn parse(s: &str) -> Result<KernelVersion, String> {
        let bad = || {
            format!(
                "`{s}` is not a kernel version: expected MAJOR.MINOR (e.g. \"6.12\"), a stable \
                 release MAJOR.MINOR.PATCH (\"6.12.117\"), a release candidate \
                 MAJOR.MINOR-rcN (\"7.0-rc3\"), or \"newest\" ({NEWEST})"
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
    pub fn checked(s: &str) -> Result<(KernelVersion, Option<String>), String> {
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
}
