//! `io.max` (blk-throttle) as the kernel parses and prints it.
//!
//! The idea: a write is `MAJ:MIN` + whitespace + `key=value` tokens. We mirror
//! `blkg_conf_open_bdev()` (device part) and `tg_set_limit()` (token loop) step by step,
//! including their quirks, so a scenario string is rejected exactly where the kernel
//! rejects it and with the same errno:
//!
//! - tokens are read with `%26s`: a longer token is cut after 26 chars and the rest is
//!   read as the next token;
//! - values go through `%llu`: a decimal prefix is enough (`wbps=10M` → 10), `max` means
//!   unlimited, anything else is EINVAL; 0 is ERANGE;
//! - 1 is EINVAL on 5.10–6.12 (the caller passes the version's smallest limit,
//!   `throttle.min_limit`): Baolin Wang's 5b7048b89745 took only `val > 1`, since io.low
//!   could not scale a limit of 1 up; reverted in 6.13. `wbps=1M` reads as 1, so it is
//!   refused there too;
//! - `riops`/`wiops` above `u32::MAX` clamp to `u32::MAX`, the "unlimited" sentinel;
//! - partial updates: unnamed keys keep their value; nothing applies unless the whole
//!   line parses (the kernel commits after the loop).
//!
//! Printing mirrors `tg_prfill_limit()`: all four keys, and no line at all when every
//! limit is `max`.

use super::{DeviceTable, Errno, KernelError};

/// The four `io.max` limits of one (cgroup, disk). `u64::MAX` / `u32::MAX` = `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoMax {
    pub rbps: u64,
    pub wbps: u64,
    pub riops: u32,
    pub wiops: u32,
}

impl Default for IoMax {
    fn default() -> Self {
        IoMax {
            rbps: u64::MAX,
            wbps: u64::MAX,
            riops: u32::MAX,
            wiops: u32::MAX,
        }
    }
}

/// Kernel `vsscanf("%llu")`: optional leading whitespace was already skipped by the
/// tokenizer; needs at least one decimal digit, stops at the first non-digit, wraps on
/// overflow like `simple_strtoull`.
pub(crate) fn scan_llu(s: &str) -> Option<u64> {
    let s = s.strip_prefix('+').unwrap_or(s);
    let digits: &str = &s[..s.bytes().take_while(u8::is_ascii_digit).count()];
    if digits.is_empty() {
        return None;
    }
    Some(digits.bytes().fold(0u64, |v, d| {
        v.wrapping_mul(10).wrapping_add(u64::from(d - b'0'))
    }))
}

/// Parse `MAJ:MIN` the way `sscanf("%u:%u%n")` does; returns (major, minor, rest).
fn scan_devno(input: &str) -> Option<(u32, u32, &str)> {
    let input = input.trim_start();
    let n1 = input.bytes().take_while(u8::is_ascii_digit).count();
    let major: u32 = input[..n1].parse().ok()?;
    let rest = input[n1..].strip_prefix(':')?;
    let n2 = rest.bytes().take_while(u8::is_ascii_digit).count();
    let minor: u32 = rest[..n2].parse().ok()?;
    Some((major, minor, &rest[n2..]))
}

impl IoMax {
    /// True when no limit is set (the `io.max` line disappears).
    pub fn is_unlimited(&self) -> bool {
        *self == IoMax::default()
    }

    /// Which disk a write names. Mirrors `blkg_conf_open_bdev()`: EINVAL when `MAJ:MIN`
    /// does not parse or is not followed by whitespace, ENODEV for unknown disks and
    /// partitions. Returns the devno and the body after the whitespace.
    pub fn parse_target<'a>(
        input: &'a str,
        devs: &DeviceTable,
    ) -> Result<((u32, u32), &'a str), KernelError> {
        let (major, minor, rest) = scan_devno(input).ok_or_else(|| {
            KernelError::new(Errno::EINVAL, "expected MAJ:MIN (two unsigned integers)")
        })?;
        if !rest.starts_with(|c: char| c.is_ascii_whitespace()) {
            return Err(KernelError::new(
                Errno::EINVAL,
                format!("MAJ:MIN `{major}:{minor}` must be followed by whitespace"),
            ));
        }
        if !devs.contains(major, minor) {
            return Err(KernelError::new(
                Errno::ENODEV,
                format!("{major}:{minor} is not a whole disk of this scenario"),
            ));
        }
        Ok(((major, minor), rest.trim_start()))
    }

    /// Apply the token part of a write to `self` (a copy of the current limits); the
    /// result is returned only when the whole body parses. `min` is the smallest limit
    /// the kernel version takes (1, or 2 in 5.10–6.12). Mirrors `tg_set_limit()`.
    pub fn apply_body(&self, body: &str, min: u64) -> Result<IoMax, KernelError> {
        let mut v = *self;
        let mut rest = body;
        loop {
            rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
            if rest.is_empty() {
                break;
            }
            // %26s: at most 26 non-space chars
            let end = rest
                .char_indices()
                .take_while(|(_, c)| !c.is_ascii_whitespace())
                .take(26)
                .last()
                .map_or(0, |(i, c)| i + c.len_utf8());
            let tok = &rest[..end];
            rest = &rest[end..];
            let Some((key, val)) = tok.split_once('=') else {
                return Err(KernelError::new(
                    Errno::EINVAL,
                    format!("token `{tok}` has no `=` (expected key=value)"),
                ));
            };
            let val = match scan_llu(val) {
                Some(n) => n,
                None if val == "max" => u64::MAX,
                None => {
                    return Err(KernelError::new(
                        Errno::EINVAL,
                        format!("`{tok}`: value must be a decimal number or `max`"),
                    ));
                }
            };
            if val == 0 {
                return Err(KernelError::new(
                    Errno::ERANGE,
                    format!("`{tok}`: 0 is not a valid limit (use `max`)"),
                ));
            }
            let iops = u32::try_from(val).unwrap_or(u32::MAX);
            match key {
                "rbps" => v.rbps = val,
                "wbps" => v.wbps = val,
                "riops" => v.riops = iops,
                "wiops" => v.wiops = iops,
                _ => {
                    return Err(KernelError::new(
                        Errno::EINVAL,
                        format!("unknown key `{key}` (io.max accepts rbps, wbps, riops, wiops)"),
                    ));
                }
            }
            // tg_set_limit() of 5.10–6.12 takes a key only `&& val > 1`
            if val < min {
                return Err(KernelError::new(
                    Errno::EINVAL,
                    format!(
                        "`{tok}`: {val} is below the smallest limit this kernel takes, {min} \
                         (or `max`): 5.10–6.12 refuse 1 (5b7048b89745 \"blk-throttle: Fix IO \
                         hang for a corner case\", reverted in 6.13; switch \
                         `throttle.min_limit`)"
                    ),
                ));
            }
        }
        Ok(v)
    }

    /// The `io.max` line for disk `devno`, or `None` when all limits are `max`.
    /// Mirrors `tg_prfill_limit()`.
    pub fn show(&self, devno: (u32, u32)) -> Option<String> {
        if self.is_unlimited() {
            return None;
        }
        fn f(v: u64, max: u64) -> String {
            if v == max {
                "max".into()
            } else {
                v.to_string()
            }
        }
        Some(format!(
            "{}:{} rbps={} wbps={} riops={} wiops={}",
            devno.0,
            devno.1,
            f(self.rbps, u64::MAX),
            f(self.wbps, u64::MAX),
            f(u64::from(self.riops), u64::from(u32::MAX)),
            f(u64::from(self.wiops), u64::from(u32::MAX)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devs() -> DeviceTable {
        DeviceTable {
            disks: vec![(8, 16), (252, 0)],
        }
    }

    fn write_min(cur: IoMax, s: &str, min: u64) -> Result<IoMax, Errno> {
        let (dev, body) = IoMax::parse_target(s, &devs()).map_err(|e| e.errno)?;
        assert!(devs().contains(dev.0, dev.1));
        cur.apply_body(body, min).map_err(|e| e.errno)
    }

    fn write(cur: IoMax, s: &str) -> Result<IoMax, Errno> {
        write_min(cur, s, 1)
    }

    #[test]
    fn table_of_writes() {
        let d = IoMax::default();
        let ok = |s: &str| write(d, s).unwrap_or_else(|e| panic!("{s:?}: {e:?}"));
        let err = |s: &str| write(d, s).unwrap_err();
        assert_eq!(ok("8:16 rbps=2097152 wiops=120").rbps, 2097152);
        assert_eq!(ok("8:16 rbps=2097152 wiops=120").wiops, 120);
        assert_eq!(ok("8:16 wbps=10M").wbps, 10);
        assert_eq!(ok("8:16 riops=4294967296").riops, u32::MAX);
        assert_eq!(ok("8:16 riops=4294967295").riops, u32::MAX);
        assert_eq!(ok("8:16 riops=4294967294").riops, 4294967294);
        assert_eq!(ok("8:16 rbps=max"), d);
        assert_eq!(ok("8:16\n"), d); // echo appends the newline
        assert_eq!(err("8:16"), Errno::EINVAL);
        assert_eq!(ok("8:16 rbps=5 rbps=7").rbps, 7);
        assert_eq!(err("8:16rbps=1"), Errno::EINVAL);
        assert_eq!(err("8 rbps=1"), Errno::EINVAL);
        assert_eq!(err("8:17 rbps=1"), Errno::ENODEV);
        assert_eq!(err("9:0 rbps=1"), Errno::ENODEV);
        assert_eq!(err("8:16 rbps"), Errno::EINVAL);
        assert_eq!(err("8:16 rbps=abc"), Errno::EINVAL);
        assert_eq!(err("8:16 rbps=-1"), Errno::EINVAL);
        assert_eq!(err("8:16 rbps=0"), Errno::ERANGE);
        assert_eq!(err("8:16 rbps=0x10"), Errno::ERANGE);
        assert_eq!(err("8:16 idle=100"), Errno::EINVAL);
        assert_eq!(err("8:16 latency=100"), Errno::EINVAL);
        assert_eq!(err("8:16 foo=1"), Errno::EINVAL);
        // 26-char width: the 27th char starts a new token without '='
        assert_eq!(err("8:16 rbps=12345678901234567890123"), Errno::EINVAL);
        assert_eq!(
            ok("8:16 rbps=123456789012345678901").rbps,
            123456789012345678901u128 as u64
        );
    }

    #[test]
    fn one_is_einval_where_the_kernel_takes_only_val_above_1() {
        let d = IoMax::default();
        for key in ["rbps", "wbps", "riops", "wiops"] {
            let line = format!("8:16 {key}=1");
            assert!(write_min(d, &line, 1).is_ok(), "{line}");
            assert_eq!(write_min(d, &line, 2), Err(Errno::EINVAL), "{line}");
            assert!(write_min(d, &format!("8:16 {key}=2"), 2).is_ok());
        }
        // %llu reads `1M` as 1; 0 stays ERANGE (checked first); max passes
        assert_eq!(write_min(d, "8:16 wbps=1M", 2), Err(Errno::EINVAL));
        assert_eq!(write_min(d, "8:16 wbps=0", 2), Err(Errno::ERANGE));
        assert_eq!(write_min(d, "8:16 wbps=max riops=max", 2), Ok(d));
        // all or nothing: the good token before it is not applied either
        assert_eq!(write_min(d, "8:16 rbps=5 wiops=1", 2), Err(Errno::EINVAL));
        let (_, body) = IoMax::parse_target("8:16 riops=1", &devs()).unwrap();
        let e = d.apply_body(body, 2).unwrap_err();
        assert!(
            e.why.contains("riops=1") && e.why.contains("5b7048b89745"),
            "{e}"
        );
    }

    #[test]
    fn partial_update_and_all_or_nothing() {
        let cur = write(IoMax::default(), "8:16 rbps=2097152 wiops=120").unwrap();
        let next = write(cur, "8:16 wiops=max").unwrap();
        assert_eq!(
            next.show((8, 16)).unwrap(),
            "8:16 rbps=2097152 wbps=max riops=max wiops=max"
        );
        assert_eq!(
            cur.show((8, 16)).unwrap(),
            "8:16 rbps=2097152 wbps=max riops=max wiops=120"
        );
        // a bad later token leaves everything untouched (the caller keeps `cur`)
        assert!(write(cur, "8:16 wbps=5 bogus").is_err());
        assert_eq!(write(next, "8:16 rbps=max").unwrap().show((8, 16)), None);
    }
}
