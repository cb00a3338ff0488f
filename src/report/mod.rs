//! Output: fio-compatible statistics and formats (`fio/`), and our own views (among
//! them `assumed.rs`: what a run assumed, said by every run).

pub mod assumed;
pub mod charts;
pub mod decimate;
pub mod device_plot;
pub mod fio;
pub mod glyphs;
pub mod html;
pub mod io_stat;
pub mod outdir;
pub mod outputs;
pub mod plot;
pub mod record;
pub mod summary;
pub mod timeline;

use std::borrow::Cow;

/// One field of a CSV file as RFC 4180 writes it: in double quotes, each `"` doubled,
/// when it holds a comma, a quote, CR or LF; as it is otherwise. Every text field of
/// every CSV we write goes through here: job and cgroup names come from users.
pub fn csv_field(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\r', '\n']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(csv_field("cg1/file1"), "cg1/file1");
        assert_eq!(csv_field(r#"a,"b""#), r#""a,""b""""#);
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("cr\r"), "\"cr\r\"");
        assert_eq!(csv_field(""), "");
    }
}
