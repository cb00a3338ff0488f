//! fio value syntax: sizes, times, ranges, per-direction lists, arithmetic.
//!
//! Mirrors parse.c: sizes go through `str_to_decimal(kilo=1)` + `__get_mult_bytes()`
//! (the suffix after the digits picks a power of `kb_base`; the three-letter IEC
//! forms `kib`..`pib` use the *opposite* base — `1MiB` = 1,000,000 under the default
//! `kb_base=1024`, and the meanings swap under `kb_base=1000`); times go through
//! `get_mult_time()` (result in microseconds here, converted to [`Ns`](crate::sim::Ns) by callers).
//! Arithmetic `( ... )` mirrors fio's `evaluate_arithmetic_expression()` (exp/ in fio)
//! with `+ - * / % ^` and parentheses.
//!
//! Differences from fio, all on the strict side: fio's `strtoll` silently ignores
//! trailing garbage (`4x` = 4); here an unknown size suffix is an error naming the
//! accepted ones.

/// A size that may be given as a percentage (`size=20%`, `offset=50%`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeOrPct {
    /// Absolute byte count.
    Bytes(u64),
    /// Percent of the file/device size (0..=100).
    Percent(u64),
    /// A number of zones (`8z`, for `zonemode=zbd`; parse.c `FIO_OPT_STR_VAL_ZONE`).
    Zones(u64),
}

/// Split a leading (optionally signed) number from its suffix, as
/// `get_mult_bytes()` does ("go forward until we hit a non-digit").
fn split_num(s: &str) -> (&str, &str) {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if s[i..].starts_with("0x") || s[i..].starts_with("0X") {
        i += 2;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
    } else {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    (&s[..i], &s[i..])
}

fn parse_i64(num: &str, whole: &str) -> Result<i64, String> {
    let (neg, digits) = match num.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, num.strip_prefix('+').unwrap_or(num)),
    };
    let v = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(h, 16)
    } else {
        digits.parse::<i64>()
    }
    .map_err(|_| format!("`{whole}` is not a number"))?;
    Ok(if neg { -v } else { v })
}

/// Byte multiplier for a size suffix; mirrors `__get_mult_bytes()`.
/// Returns `None` for `%`.
fn size_mult(suffix: &str, kb_base: u64) -> Result<Option<u64>, String> {
    let c = suffix.to_ascii_lowercase();
    let opposite: u64 = if kb_base == 1000 { 1024 } else { 1000 };
    // k = 1 .. p = 5; compared without formatting (a scenario parses this per job)
    let pow = |prefix: &str| {
        ["k", "m", "g", "t", "p"]
            .iter()
            .position(|&p| p == prefix)
            .map(|i| i as u32 + 1)
    };
    if let Some(n) = c.strip_suffix("ib").and_then(pow) {
        return Ok(Some(opposite.pow(n)));
    }
    let stem = c.strip_suffix(['b', 'i']).unwrap_or(&c);
    if let Some(n) = pow(stem) {
        return Ok(Some(kb_base.pow(n)));
    }
    match c.as_str() {
        "" | "b" => Ok(Some(1)),
        "%" => Ok(None),
        _ => Err(format!(
            "unknown size suffix `{suffix}`; accepted: b, k/kb/ki, m/mb/mi, g/gb/gi, t/tb/ti, \
             p/pb/pi (kb_base powers), kib/mib/gib/tib/pib (the opposite base), %"
        )),
    }
}

/// Parse a size, allowing `%` and the zone suffix `z` (`size=`, `offset=`,
/// `io_size=`). Mirrors `str_to_decimal(kilo=1)`. Like fio's `strtoll`, text after
/// the number that starts with neither a letter nor `%` is ignored — with a note
/// pushed to `notes`, since `size=5*1024` meaning 5 bytes is rarely intended.
pub fn size_or_pct(s: &str, kb_base: u64, notes: &mut Vec<String>) -> Result<SizeOrPct, String> {
    let s = s.trim();
    if s.starts_with('(') {
        // `(expr)suffix`: the suffix multiplies the result as for a number.
        let close = s.rfind(')').unwrap_or(s.len() - 1);
        let (expr, suf) = s.split_at(close + 1);
        let v = eval_expr(expr)?;
        let mult = size_mult(suf, kb_base)
            .map_err(|e| format!("`{s}`: {e}"))?
            .ok_or_else(|| format!("`{s}`: a percentage cannot follow an expression"))?;
        let v = v * mult as f64;
        if !(0.0..1.8e19).contains(&v) {
            return Err(format!("`{s}` evaluates to {v}, outside 0..2^64"));
        }
        return Ok(SizeOrPct::Bytes(v as u64));
    }
    let (num, suf) = split_num(s);
    if num.is_empty() || num == "-" || num == "+" {
        return Err(format!(
            "`{s}` is not a size; expected a number with an optional suffix (4k, 1m, 1MiB, 20%)"
        ));
    }
    let v = parse_i64(num, s)?;
    if v < 0 {
        return Err(format!("`{s}`: a size cannot be negative"));
    }
    let v = v as u64;
    let suf = match suf.chars().next() {
        Some(c) if !c.is_ascii_alphabetic() && c != '%' => {
            notes.push(format!(
                "`{s}`: fio reads this as {v} and ignores `{suf}`; write `(...)` for arithmetic"
            ));
            ""
        }
        _ => suf,
    };
    if suf.eq_ignore_ascii_case("z") {
        return Ok(SizeOrPct::Zones(v));
    }
    match size_mult(suf, kb_base).map_err(|e| format!("`{s}`: {e}"))? {
        None if v <= 100 => Ok(SizeOrPct::Percent(v)),
        None => Err(format!("`{s}`: a percentage must be 0..100")),
        Some(m) => v
            .checked_mul(m)
            .map(SizeOrPct::Bytes)
            .ok_or_else(|| format!("`{s}` overflows 64 bits")),
    }
}

/// Parse a size in bytes (no `%`, no zones).
pub fn bytes(s: &str, kb_base: u64, notes: &mut Vec<String>) -> Result<u64, String> {
    match size_or_pct(s, kb_base, notes)? {
        SizeOrPct::Bytes(b) => Ok(b),
        SizeOrPct::Percent(_) => Err(format!("`{s}`: a percentage is not accepted here")),
        SizeOrPct::Zones(_) => Err(format!("`{s}`: a zone count is not accepted here")),
    }
}

/// A plain (non-size) integer, with optional arithmetic.
pub fn int(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if s.starts_with('(') {
        let v = eval_expr(s)?;
        if !(-9.2e18..9.2e18).contains(&v) {
            return Err(format!("`{s}` evaluates to {v}, out of range"));
        }
        return Ok(v as i64);
    }
    let (num, suf) = split_num(s);
    if num.is_empty() || !suf.is_empty() {
        return Err(format!("`{s}` is not an integer"));
    }
    parse_i64(num, s)
}

/// Result of a time parse: microseconds, and a note if fio's suffix rule silently
/// read an unrecognised suffix as "no multiplier" (fio's `get_mult_time()` quirk:
/// `runtime=2sec` is 2 µs, checked against fio 3.33).
pub struct TimeUs {
    pub us: u64,
    pub quirk: Option<String>,
}

/// Parse a time value into microseconds. `seconds_default` says a bare number is in
/// seconds (fio `is_seconds`), else microseconds. Mirrors `get_mult_time()`.
pub fn time_us(s: &str, seconds_default: bool) -> Result<TimeUs, String> {
    let s = s.trim();
    if s.starts_with('(') {
        // fio: expressions evaluate with time values in µs; an is_seconds option
        // takes the bare result as seconds.
        // str_to_decimal(): `ival / 1000000` in integer arithmetic, so an
        // is_seconds option truncates to whole seconds.
        let v = eval_expr(s)?;
        let us = if seconds_default { v.trunc() * 1e6 } else { v };
        if !(0.0..1.8e19).contains(&us) {
            return Err(format!("`{s}` evaluates to {v}, outside the time range"));
        }
        return Ok(TimeUs {
            us: us as u64,
            quirk: None,
        });
    }
    let (num, suf) = split_num(s);
    if num.is_empty() {
        return Err(format!(
            "`{s}` is not a time; expected a number with an optional suffix (us, ms, s, m, h, d)"
        ));
    }
    let v = parse_i64(num, s)?;
    if v < 0 {
        return Err(format!("`{s}`: a time cannot be negative"));
    }
    let c = suf.to_ascii_lowercase();
    let mut quirk = None;
    let mult: u64 = if c.is_empty() {
        if seconds_default { 1_000_000 } else { 1 }
    } else if !c.as_bytes()[0].is_ascii_alphabetic() {
        return Err(format!(
            "`{s}`: bad time suffix `{suf}`; accepted: us/usec, ms/msec, s, m, h, d"
        ));
    } else if c.starts_with("us") {
        1
    } else if c.starts_with("ms") {
        1000
    } else {
        match c.as_str() {
            "s" => 1_000_000,
            "m" => 60_000_000,
            "h" => 3_600_000_000,
            "d" => 86_400_000_000,
            _ => {
                quirk = Some(format!(
                    "`{s}`: fio does not recognise time suffix `{suf}` and reads the number \
                     as microseconds (accepted: us/usec, ms/msec, s, m, h, d)"
                ));
                1
            }
        }
    };
    (v as u64)
        .checked_mul(mult)
        .map(|us| TimeUs { us, quirk })
        .ok_or_else(|| format!("`{s}` overflows"))
}

/// Split a per-direction list `read,write,trim` (parse.c `__handle_option` with
/// `off2`/`off3`): an empty element leaves that direction untouched; when the
/// value does not end in a comma, its last element also applies to the following
/// directions (`8k,32k` → [8k, 32k, 32k]; `8k,32k,` → [8k, 32k, -]).
pub fn per_dir(s: &str) -> Result<[Option<&str>; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "`{s}` has {} comma-separated values; at most 3 (read,write,trim)",
            parts.len()
        ));
    }
    let mut out = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let p = match parts.get(i) {
            Some(p) => *p,
            None => parts[parts.len() - 1],
        };
        if !p.is_empty() {
            *slot = Some(p);
        }
    }
    Ok(out)
}

/// A `lo-hi` or `lo:hi` range of sizes; a single value gives `lo == hi`.
pub fn size_range(s: &str, kb_base: u64, notes: &mut Vec<String>) -> Result<(u64, u64), String> {
    let s = s.trim();
    let sep = s
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '-' || c == ':')
        .map(|(i, _)| i);
    let (lo, hi) = match sep {
        Some(i) => (
            bytes(&s[..i], kb_base, notes)?,
            bytes(&s[i + 1..], kb_base, notes)?,
        ),
        None => {
            let v = bytes(s, kb_base, notes)?;
            (v, v)
        }
    };
    // fio swaps a reversed range (parse.c FIO_OPT_RANGE: "if (ul1 > ul2) swap").
    Ok((lo.min(hi), lo.max(hi)))
}

/// Evaluate a parenthesised arithmetic expression (`(1+2)*4`). Operators:
/// `+ - * / % ^`, unary minus, parentheses. Numbers may be decimal.
pub fn eval_expr(s: &str) -> Result<f64, String> {
    eval(s, false)
}

/// Evaluate `s` as `bc` does at its default scale 0, where a division truncates: how
/// fio computes a value in which it replaced a reserved keyword and that holds
/// `+ - * /` (options.c `bc_calc()`: `size=8*$mb_memory`).
pub fn eval_bc(s: &str) -> Result<i64, String> {
    let v = eval(s, true)?;
    if !(-9.2e18..9.2e18).contains(&v) {
        return Err(format!("`{s}` evaluates to {v}, out of range"));
    }
    Ok(v as i64)
}

fn eval(s: &str, truncate: bool) -> Result<f64, String> {
    let mut p = Expr {
        b: s.as_bytes(),
        i: 0,
        depth: 0,
        truncate,
    };
    let v = p.sum()?;
    p.ws();
    if p.i != p.b.len() {
        return Err(format!(
            "`{s}`: unexpected text at position {} in arithmetic expression",
            p.i + 1
        ));
    }
    if !v.is_finite() {
        return Err(format!("`{s}`: arithmetic result is not finite"));
    }
    Ok(v)
}

struct Expr<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
    /// Divisions truncate toward zero (bc's scale 0).
    truncate: bool,
}

impl Expr<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }
    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if c == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.power()?;
            if c != b'*' && r == 0.0 {
                return Err("division by zero in arithmetic expression".into());
            }
            v = match c {
                b'*' => v * r,
                b'/' if self.truncate => (v / r).trunc(),
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let e = self.power()?;
            return Ok(base.powf(e));
        }
        Ok(base)
    }
    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(-self.unary()?)
            }
            Some(b'(') => {
                self.depth += 1;
                if self.depth > 64 {
                    return Err("arithmetic expression nested too deeply".into());
                }
                self.i += 1;
                let v = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("missing `)` in arithmetic expression".into());
                }
                self.i += 1;
                self.depth -= 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let st = self.i;
                while self.i < self.b.len()
                    && (self.b[self.i].is_ascii_digit() || self.b[self.i] == b'.')
                {
                    self.i += 1;
                }
                std::str::from_utf8(&self.b[st..self.i])
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .ok_or_else(|| "bad number in arithmetic expression".to_string())
            }
            _ => Err("expected a number or `(` in arithmetic expression".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every suffix fio's `__get_mult_bytes()` knows, in both bases, and a few it
    /// refuses.
    #[test]
    fn size_suffixes() {
        for (kb_base, opposite) in [(1024u64, 1000u64), (1000, 1024)] {
            for (i, p) in ["k", "m", "g", "t", "p"].iter().enumerate() {
                let n = i as u32 + 1;
                for s in [p.to_string(), format!("{p}b"), format!("{p}i")] {
                    assert_eq!(size_mult(&s, kb_base), Ok(Some(kb_base.pow(n))), "{s}");
                    let upper = s.to_ascii_uppercase();
                    assert_eq!(size_mult(&upper, kb_base), Ok(Some(kb_base.pow(n))));
                }
                let s = format!("{p}iB");
                assert_eq!(size_mult(&s, kb_base), Ok(Some(opposite.pow(n))), "{s}");
            }
            assert_eq!(size_mult("", kb_base), Ok(Some(1)));
            assert_eq!(size_mult("B", kb_base), Ok(Some(1)));
            assert_eq!(size_mult("%", kb_base), Ok(None));
            for bad in ["i", "ib", "bb", "kbb", "x", "kibb", "e"] {
                assert!(size_mult(bad, kb_base).is_err(), "{bad}");
            }
        }
    }
}
