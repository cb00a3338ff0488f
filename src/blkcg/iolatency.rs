//! `io.latency` (blk-iolatency, non-root cgroups): parsing and printing as
//! `iolatency_set_limit()` and `iolatency_prfill_limit()` do (`block/blk-iolatency.c`).
//!
//! A write is `MAJ:MIN` (`blkg_conf_open_bdev()`), then the body split at every single
//! space (`strsep(&p, " ")`), each token read with `sscanf("%15[^=]=%20s")`: a key of
//! 1..15 characters other than `=`, `=`, then a value (leading whitespace skipped, up to
//! 20 non-space characters, the rest of the token ignored). The only key is `target`:
//! `max` is 0 = off, otherwise `%llu` microseconds (a decimal prefix is enough), stored
//! as `v * 1000` ns with u64 wrap-around. Anything else is EINVAL, including an empty
//! token (two spaces in a row, or a trailing space before `echo`'s newline), which
//! `sscanf` cannot match. Several `target=` tokens: the last wins. The line is written
//! as `echo` writes it, with its newline.
//!
//! Read-back: `MAJ:MIN target=<us>` (ns / 1000, truncated), no line without a target.

use super::iocost_qos::open_bdev;
use super::iomax::scan_llu;
use super::{DeviceTable, Errno, KernelError};
use crate::sim::NSEC_PER_USEC;

/// A parsed `io.latency` write: the disk and the target in ns (0 = `max`, off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyWrite {
    pub dev: (u32, u32),
    pub target_ns: u64,
}

fn einval(why: String) -> KernelError {
    KernelError::new(Errno::EINVAL, why)
}

/// `sscanf(tok, "%15[^=]=%20s", key, val) == 2`: the key and the value, or None.
fn scan_key_val(tok: &str) -> Option<(&str, &str)> {
    let key_len = tok.find('=').unwrap_or(tok.len());
    if key_len == 0 || key_len > 15 || key_len == tok.len() {
        return None;
    }
    let val = tok[key_len + 1..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    let end = val
        .char_indices()
        .take_while(|(_, c)| !c.is_ascii_whitespace())
        .take(20)
        .last()
        .map(|(i, c)| i + c.len_utf8())?;
    Some((&tok[..key_len], &val[..end]))
}

/// Parse one write (the line without its newline) as `iolatency_set_limit()`.
pub fn parse(input: &str, devs: &DeviceTable) -> Result<LatencyWrite, KernelError> {
    let (dev, body) = open_bdev(input, devs)?;
    // the body as the kernel gets it, with echo's newline
    let line = format!("{body}\n");
    let mut target_ns = 0;
    for tok in line.split(' ') {
        let shown = tok.trim_end_matches('\n');
        let (key, val) = scan_key_val(tok).ok_or_else(|| {
            einval(format!(
                "token `{shown}`: expected key=value (io.latency accepts `target=<us>` or \
                 `target=max`; tokens are separated by single spaces)"
            ))
        })?;
        if key != "target" {
            return Err(einval(format!(
                "unknown key `{key}` (io.latency accepts only `target`)"
            )));
        }
        target_ns = if val == "max" {
            0
        } else {
            scan_llu(val)
                .ok_or_else(|| {
                    einval(format!(
                        "`{shown}`: the target is microseconds (a decimal number) or `max`"
                    ))
                })?
                .wrapping_mul(NSEC_PER_USEC)
        };
    }
    Ok(LatencyWrite { dev, target_ns })
}

/// `iolatency_prfill_limit()`: the read-back line, or None without a target.
pub fn show(dev: (u32, u32), target_ns: u64) -> Option<String> {
    (target_ns != 0).then(|| format!("{}:{} target={}", dev.0, dev.1, target_ns / NSEC_PER_USEC))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devs() -> DeviceTable {
        DeviceTable {
            disks: vec![(8, 16)],
        }
    }

    fn p(s: &str) -> Result<u64, Errno> {
        parse(s, &devs()).map(|w| w.target_ns).map_err(|e| e.errno)
    }

    #[test]
    fn targets_and_max() {
        assert_eq!(p("8:16 target=2000"), Ok(2_000_000));
        assert_eq!(p("8:16   target=75"), Ok(75_000));
        assert_eq!(p("8:16 target=max"), Ok(0));
        assert_eq!(p("8:16 target=0"), Ok(0));
        // %llu takes a decimal prefix; the last target wins
        assert_eq!(p("8:16 target=10ms"), Ok(10_000));
        assert_eq!(p("8:16 target=5 target=7"), Ok(7_000));
        // wraps like the kernel's u64 multiply
        assert_eq!(
            p("8:16 target=18446744073709551615"),
            Ok(u64::MAX.wrapping_mul(1000))
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(p("8:16 latency=5"), Err(Errno::EINVAL));
        assert_eq!(p("8:16 target=abc"), Err(Errno::EINVAL));
        assert_eq!(p("8:16 target="), Err(Errno::EINVAL));
        assert_eq!(
            p("8:16 target=5  target=6"),
            Err(Errno::EINVAL),
            "empty token"
        );
        assert_eq!(p("8:16 target=5 "), Err(Errno::EINVAL), "trailing space");
        assert_eq!(p("8:16 =5"), Err(Errno::EINVAL));
        assert_eq!(p("8:16 averyveryverylongkey=5"), Err(Errno::EINVAL));
        assert_eq!(p("8:16"), Err(Errno::EINVAL));
        assert_eq!(
            p("8:16 "),
            Err(Errno::EINVAL),
            "an empty body is one empty token"
        );
        assert_eq!(p("8:17 target=5"), Err(Errno::ENODEV));
        assert_eq!(p("8-16 target=5"), Err(Errno::EINVAL));
        let e = parse("8:16 foo=1", &devs()).unwrap_err();
        assert!(e.why.contains("only `target`"), "{}", e.why);
    }

    #[test]
    fn read_back() {
        assert_eq!(
            show((8, 16), 2_000_999).as_deref(),
            Some("8:16 target=2000")
        );
        assert_eq!(show((8, 16), 0), None);
    }
}
