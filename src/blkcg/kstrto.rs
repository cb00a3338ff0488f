//! The kernel's `kstrto*()` family (`lib/kstrtox.c`), as sysfs and cgroup files parse a
//! written number: the value, or the errno the write returns.

use super::Errno;

/// `_kstrtoll()` of `s` (one trailing newline allowed; `-` or `+` first) in `base`:
/// 0 guesses it as `_parse_integer_fixup_radix()` does ("0x" and a hex digit is hex, a
/// leading 0 octal, else decimal). EINVAL for anything that is not a number, ERANGE for
/// a magnitude past `u64`; the caller narrows the type (ERANGE again).
pub fn kstrtoll(s: &str, base: u32) -> Result<i128, Errno> {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (digits, radix) = match (base, body.get(..2)) {
        (0 | 16, Some("0x" | "0X")) if body[2..].starts_with(|c: char| c.is_ascii_hexdigit()) => {
            (&body[2..], 16)
        }
        (0, _) if body.starts_with('0') => (body, 8),
        (0, _) => (body, 10),
        (b, _) => (body, b),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(Errno::EINVAL);
    }
    // every digit checked above: the only failure left is overflow
    let mag = u64::from_str_radix(digits, radix).map_err(|_| Errno::ERANGE)?;
    Ok(if neg {
        -i128::from(mag)
    } else {
        i128::from(mag)
    })
}

/// `kstrtoint(s, 0, &res)`.
pub fn kstrtoint(s: &str) -> Result<i32, Errno> {
    i32::try_from(kstrtoll(s, 0)?).map_err(|_| Errno::ERANGE)
}

/// `kstrtos64(s, 10, &res)` (`queue_var_store64()`).
pub fn kstrtos64(s: &str) -> Result<i64, Errno> {
    i64::try_from(kstrtoll(s, 10)?).map_err(|_| Errno::ERANGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_the_kernel_reads_them() {
        assert_eq!(kstrtoint("10\n"), Ok(10));
        assert_eq!(kstrtoint("0x10"), Ok(16));
        assert_eq!(kstrtoint("010"), Ok(8));
        assert_eq!(kstrtoint("-5"), Ok(-5));
        assert_eq!(kstrtoint("+5"), Ok(5));
        assert_eq!(kstrtoint("2147483648"), Err(Errno::ERANGE));
        assert_eq!(kstrtoint("5 "), Err(Errno::EINVAL));
        assert_eq!(kstrtoint(""), Err(Errno::EINVAL));
        // base 10: no prefixes, a leading zero is decimal
        assert_eq!(kstrtos64("010"), Ok(10));
        assert_eq!(kstrtos64("0x10"), Err(Errno::EINVAL));
        assert_eq!(kstrtos64("-1\n"), Ok(-1));
        assert_eq!(kstrtos64("9223372036854775808"), Err(Errno::ERANGE));
        assert_eq!(kstrtos64("18446744073709551616"), Err(Errno::ERANGE));
    }
}
