//! Where each key of a scenario file is written: the line index behind every
//! `file:line` in an error message.
//!
//! Design
//! ------
//! The TOML text is parsed once more with spans (`toml::de::DeTable`), and every key
//! at every depth is recorded under its path — table names, keys, and the index of an
//! element of an array (`["variant", "1", "kernel", "version"]`,
//! `["cgroup", "a", "fio", "0"]`) — with the 1-based line where the key (or the array
//! element) starts. One linear pass over the document, one hash look-up per question,
//! so a scenario with 100,000 cgroups is indexed as fast as it is parsed. A question
//! about a key that is not written (a default, a missing key) is answered with the
//! line of the nearest enclosing table that is.

use std::collections::HashMap;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The line of every key path in one scenario text.
#[derive(Debug, Clone, Default)]
pub struct KeyLines {
    lines: HashMap<String, usize>,
}

/// Path elements joined by a byte no TOML key can hold unescaped in a sane scenario.
fn join(path: &[&str]) -> String {
    path.join("\u{1f}")
}

/// Byte offset -> 1-based line, by the offsets of every newline.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(text: &str) -> Self {
        LineStarts(text.match_indices('\n').map(|(i, _)| i).collect())
    }
    fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

impl KeyLines {
    /// Index `text`; a text that is not valid TOML indexes what could be parsed.
    pub fn index(text: &str) -> KeyLines {
        let (doc, _errors) = DeTable::parse_recoverable(text);
        let starts = LineStarts::new(text);
        let mut k = KeyLines::default();
        let mut path = Vec::new();
        k.table(doc.get_ref(), &starts, &mut path);
        k
    }

    fn table(&mut self, t: &DeTable<'_>, starts: &LineStarts, path: &mut Vec<String>) {
        for (key, value) in t {
            path.push(key.get_ref().to_string());
            self.record(path, starts.line(key.span().start));
            self.value(value, starts, path);
            path.pop();
        }
    }

    fn value(&mut self, v: &Spanned<DeValue<'_>>, starts: &LineStarts, path: &mut Vec<String>) {
        match v.get_ref() {
            DeValue::Table(t) => self.table(t, starts, path),
            DeValue::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    path.push(i.to_string());
                    self.record(path, starts.line(e.span().start));
                    self.value(e, starts, path);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn record(&mut self, path: &[String], line: usize) {
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        // the first place a path is written (a table header before its keys)
        self.lines.entry(join(&refs)).or_insert(line);
    }

    /// The line where `path` is written, if it is.
    pub fn exact(&self, path: &[&str]) -> Option<usize> {
        self.lines.get(&join(path)).copied()
    }

    /// The line of `path`, else of its nearest written ancestor.
    pub fn nearest(&self, path: &[&str]) -> Option<usize> {
        (1..=path.len()).rev().find_map(|n| self.exact(&path[..n]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"name = "t"
[device]
model = "nullb"

[kernel]
version = "6.10"
config = { throttling_low = true }

[cgroup."web/a"]
fio = [
  "fio --name=a",
  "fio --name=b",
]

[[variant]]
name = "x"
kernel = { version = "4.18" }

[[variant]]
name = "y"
[variant.device]
model = "ssd"
"#;

    #[test]
    fn keys_at_every_depth_have_their_lines() {
        let k = KeyLines::index(TEXT);
        assert_eq!(k.exact(&["name"]), Some(1));
        assert_eq!(k.exact(&["device", "model"]), Some(3));
        assert_eq!(k.exact(&["kernel", "config", "throttling_low"]), Some(7));
        assert_eq!(k.exact(&["cgroup", "web/a", "fio"]), Some(10));
        assert_eq!(k.exact(&["cgroup", "web/a", "fio", "1"]), Some(12));
        assert_eq!(k.exact(&["variant", "0", "kernel", "version"]), Some(17));
        assert_eq!(k.exact(&["variant", "1", "device", "model"]), Some(22));
        assert_eq!(k.exact(&["kernel", "hz"]), None);
        // an unwritten key: the table that would hold it
        assert_eq!(k.nearest(&["kernel", "hz"]), Some(5));
    }

    #[test]
    fn broken_text_indexes_what_parses() {
        let k = KeyLines::index("a = 1\nb = \n");
        assert_eq!(k.exact(&["a"]), Some(1));
    }
}
