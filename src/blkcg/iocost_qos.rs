//! `io.cost.qos` (root cgroup only): parsing and printing as `ioc_qos_write()` and
//! `ioc_qos_prfill()` do.
//!
//! - [`open_bdev`]: the `MAJ:MIN` prefix shared by every per-device interface file,
//!   mirrors `blkg_conf_open_bdev()` (EINVAL when unparsable or not followed by
//!   whitespace, ENODEV when not a known whole disk).
//! - [`parse_float2`]: `cgroup_parse_float(…, 2, …)` with its `sscanf` leniency.
//! - [`QosParams::apply_write`]: the token loop, applied left to right onto a copy of the
//!   current state; `min > max` is refused after all tokens; in auto mode the preset's
//!   latency targets are reloaded.

use super::{DeviceTable, Errno, KernelError};

/// `VRATE_MIN_PPM` / `VRATE_MAX_PPM`: bounds of the qos `min`/`max` (1% .. 10000%).
pub const VRATE_MIN_PPM: u32 = 10_000;
pub const VRATE_MAX_PPM: u32 = 100_000_000;

fn einval(why: impl Into<String>) -> KernelError {
    KernelError::new(Errno::EINVAL, why)
}

/// Mirrors `blkg_conf_open_bdev()`: returns the device and the body after the spaces.
pub fn open_bdev<'a>(
    input: &'a str,
    devs: &DeviceTable,
) -> Result<((u32, u32), &'a str), KernelError> {
    let bad = || einval("expected `MAJ:MIN` followed by whitespace at the start of the write");
    let (maj_s, rest) = input.split_once(':').ok_or_else(bad)?;
    let num_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (min_s, body) = rest.split_at(num_end);
    let parse = |s: &str| s.trim_start().parse::<u32>().map_err(|_| bad());
    let dev = (parse(maj_s)?, parse(min_s)?);
    if !body.starts_with(|c: char| c.is_ascii_whitespace()) {
        return Err(bad());
    }
    if !devs.contains(dev.0, dev.1) {
        return Err(KernelError::new(
            Errno::ENODEV,
            format!("{}:{} is not a whole disk of this scenario", dev.0, dev.1),
        ));
    }
    Ok((dev, body.trim_start()))
}

/// Leading-whitespace, optional sign and decimal digits as the kernel's `%lld` takes
/// them; returns the value and the rest, or None when no digit was consumed.
fn scan_lld(s: &str) -> Option<(i64, &str)> {
    let t = s.trim_start();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let mut v: i64 = 0;
    for b in digits[..end].bytes() {
        v = v.wrapping_mul(10).wrapping_add(i64::from(b - b'0'));
    }
    Some((if neg { v.wrapping_neg() } else { v }, &digits[end..]))
}

/// Mirrors `cgroup_parse_float(input, 2, &v)`: value ×100, fractional digits beyond two
/// rounded to closest; trailing garbage after the number is ignored as `sscanf` does.
pub fn parse_float2(input: &str) -> Option<i64> {
    let (whole, rest) = scan_lld(input)?;
    let mut frac = 0i64;
    let mut flen = 0usize;
    if let Some((after_dot, (f, tail))) = rest
        .strip_prefix('.')
        .and_then(|a| scan_lld(a).map(|r| (a, r)))
    {
        frac = f;
        flen = after_dot.len() - tail.len();
    }
    if frac < 0 {
        return None;
    }
    let frac = if flen < 2 {
        frac * 10i64.pow((2 - flen) as u32)
    } else {
        let d = 10i64.checked_pow((flen - 2) as u32)?;
        (frac + d / 2) / d
    };
    Some(whole.wrapping_mul(100).wrapping_add(frac))
}

/// `simple_strtoull(s, &end, 0)` then `kstrtoull`: the whole token must be an unsigned
/// C integer (`0x…` hex, `0…` octal, decimal).
pub fn parse_c_u64(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if s.len() > 1 && s.starts_with('0') {
        return u64::from_str_radix(&s[1..], 8).ok();
    }
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The qos vector of one device plus the enable and user flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QosParams {
    pub enable: bool,
    /// `ctrl=user` (`ioc->user_qos_params`).
    pub user: bool,
    /// Latency percentiles in ppm (95.00% → 950000).
    pub rpct: u32,
    pub wpct: u32,
    /// Latency targets in us.
    pub rlat: u32,
    pub wlat: u32,
    /// vrate bounds in ppm of 100%.
    pub min: u32,
    pub max: u32,
}

impl QosParams {
    /// The auto-mode values for a preset latency target (rpct = wpct = 0, 1%..10000%).
    pub fn auto(lat_us: u32) -> Self {
        QosParams {
            enable: false,
            user: false,
            rpct: 0,
            wpct: 0,
            rlat: lat_us,
            wlat: lat_us,
            min: VRATE_MIN_PPM,
            max: VRATE_MAX_PPM,
        }
    }

    /// Applies a write body (after `MAJ:MIN`) onto `self`, mirrors the token loop of
    /// `ioc_qos_write()`. `preset_lat_us` is reloaded when the write ends in auto mode.
    pub fn apply_write(&self, body: &str, preset_lat_us: u32) -> Result<QosParams, KernelError> {
        let mut q = *self;
        for tok in body.split([' ', '\t', '\n']).filter(|t| !t.is_empty()) {
            let (key, val) = tok.split_once('=').ok_or_else(|| {
                einval(format!(
                    "`{tok}`: expected key=value (enable, ctrl, rpct, rlat, wpct, wlat, min, max)"
                ))
            })?;
            let num = || {
                parse_c_u64(val)
                    .ok_or_else(|| einval(format!("`{tok}`: `{key}` takes an unsigned integer")))
            };
            let pct = || {
                parse_float2(val)
                    .ok_or_else(|| einval(format!("`{tok}`: `{key}` takes a decimal like 95.00")))
            };
            match key {
                "enable" => q.enable = num()? != 0,
                "ctrl" => match val {
                    "auto" => q.user = false,
                    "user" => q.user = true,
                    _ => return Err(einval(format!("`{tok}`: ctrl must be `auto` or `user`"))),
                },
                "rpct" | "wpct" => {
                    let v = pct()?;
                    if !(0..=10_000).contains(&v) {
                        return Err(einval(format!("`{tok}`: percentile must be within 0..100")));
                    }
                    let ppm = (v * 100) as u32;
                    if key == "rpct" {
                        q.rpct = ppm
                    } else {
                        q.wpct = ppm
                    }
                    q.user = true;
                }
                "rlat" | "wlat" => {
                    let v = num()? as u32; // stored in a u32 slot, truncated as the kernel does
                    if key == "rlat" {
                        q.rlat = v
                    } else {
                        q.wlat = v
                    }
                    q.user = true;
                }
                "min" | "max" => {
                    let v = pct()?;
                    if v < 0 {
                        return Err(einval(format!("`{tok}`: vrate bound cannot be negative")));
                    }
                    let ppm = v
                        .saturating_mul(100)
                        .clamp(i64::from(VRATE_MIN_PPM), i64::from(VRATE_MAX_PPM))
                        as u32;
                    if key == "min" {
                        q.min = ppm
                    } else {
                        q.max = ppm
                    }
                    q.user = true;
                }
                _ => {
                    return Err(einval(format!(
                        "`{tok}`: unknown key (accepted: enable, ctrl, rpct, rlat, wpct, wlat, min, max)"
                    )));
                }
            }
        }
        if q.min > q.max {
            return Err(einval("min is greater than max"));
        }
        if !q.user {
            let enable = q.enable;
            q = QosParams::auto(preset_lat_us);
            q.enable = enable;
        }
        Ok(q)
    }

    /// Mirrors `ioc_qos_prfill()`.
    pub fn show(&self, dev: (u32, u32)) -> String {
        let p = |ppm: u32| format!("{}.{:02}", ppm / 10_000, ppm / 100 % 100);
        format!(
            "{}:{} enable={} ctrl={} rpct={} rlat={} wpct={} wlat={} min={} max={}\n",
            dev.0,
            dev.1,
            u8::from(self.enable),
            if self.user { "user" } else { "auto" },
            p(self.rpct),
            self.rlat,
            p(self.wpct),
            self.wlat,
            p(self.min),
            p(self.max)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devs() -> DeviceTable {
        DeviceTable {
            disks: vec![(8, 0)],
        }
    }

    fn write(input: &str) -> Result<QosParams, KernelError> {
        let (_, body) = open_bdev(input, &devs())?;
        QosParams::auto(25_000).apply_write(body, 25_000)
    }

    #[test]
    fn seed_line_round_trips() {
        let q =
            write("8:0 enable=1 ctrl=user rpct=90 rlat=3500 wpct=90 wlat=3500 min=80 max=10000")
                .unwrap();
        assert_eq!(q.rpct, 900_000);
        assert_eq!(q.min, 800_000);
        assert_eq!(
            q.show((8, 0)),
            "8:0 enable=1 ctrl=user rpct=90.00 rlat=3500 wpct=90.00 wlat=3500 min=80.00 max=10000.00\n"
        );
    }

    #[test]
    fn left_to_right_ctrl_semantics() {
        let q = write("8:0 rlat=5000 ctrl=auto").unwrap();
        assert!(!q.user);
        assert_eq!(q.rlat, 25_000);
        let q = write("8:0 ctrl=auto rlat=5000").unwrap();
        assert!(q.user);
        assert_eq!(q.rlat, 5000);
    }

    #[test]
    fn fixed_point_and_clamps() {
        assert_eq!(parse_float2("95"), Some(9500));
        assert_eq!(parse_float2("95.0"), Some(9500));
        assert_eq!(parse_float2("95.125"), Some(9513));
        assert_eq!(parse_float2("95.124"), Some(9512));
        assert_eq!(parse_float2("x"), None);
        let q = write("8:0 min=0.5 max=20000").unwrap();
        assert_eq!((q.min, q.max), (VRATE_MIN_PPM, VRATE_MAX_PPM));
        let q = write("8:0 rpct=99.99 rlat=4294967297").unwrap();
        assert_eq!((q.rpct, q.rlat), (999_900, 1));
    }

    #[test]
    fn every_error() {
        let cases: &[(&str, Errno)] = &[
            ("8:0", Errno::EINVAL),
            ("8:0enable=1", Errno::EINVAL),
            ("x:0 enable=1", Errno::EINVAL),
            ("8:1 enable=1", Errno::ENODEV),
            ("9:0 enable=1", Errno::ENODEV),
            ("8:0 bogus=1", Errno::EINVAL),
            ("8:0 enable", Errno::EINVAL),
            ("8:0 enable=x", Errno::EINVAL),
            ("8:0 ctrl=manual", Errno::EINVAL),
            ("8:0 rpct=100.01", Errno::EINVAL),
            ("8:0 rpct=-1", Errno::EINVAL),
            ("8:0 rlat=5000x", Errno::EINVAL),
            ("8:0 rlat=-5", Errno::EINVAL),
            ("8:0 min=-1", Errno::EINVAL),
            ("8:0 min=90 max=80", Errno::EINVAL),
        ];
        for (input, errno) in cases {
            assert_eq!(write(input).unwrap_err().errno, *errno, "{input}");
        }
    }
}
