//! Where each key of a scenario file is written: the line index behind every
//! `file:line` in an error message.
//!
//! Design
//! ------
//! The TOML text is parsed once, with spans (`toml::de::DeTable`); before that document
//! becomes the scenario's table (`Scenario::parse`) every key at every depth is
//! recorded under its path — table names, keys, and the index of an
//! element of an array (`["variant", "1", "kernel", "version"]`,
//! `["cgroup", "a", "fio", "0"]`) — with the 1-based line where the key (or the array
//! element) starts. One linear pass over the document, one hash look-up per question,
//! so a scenario with 100,000 cgroups is indexed as fast as it is parsed. A question
//! about a key that is not written (a default, a missing key) is answered with the
//! line of the nearest enclosing table that is. A multi-line string (`"""`, `'''`:
//! fio job text) also keeps the line of each of its lines, so an error in its third
//! line names the file's line of it.
//!
//! A scenario a command writes from its arguments (`blkcg-sim fio --device ...`,
//! `tune model`) has a text nobody has seen: its keys are given [`Places`] instead —
//! the argument (`--device cloud:bps=x`) or the line of the file a key was copied
//! from — and each line of the generated text takes the place of the key written on
//! it ([`Places::by_line`]), so an error names what the user wrote.

use std::collections::HashMap;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The line of every key path in one scenario text.
#[derive(Debug, Clone, Default)]
pub struct KeyLines {
    lines: HashMap<String, usize>,
    /// Multi-line strings: the line of each line of the value.
    texts: HashMap<String, Vec<usize>>,
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
    /// Index `doc`, the document parsed from `text`.
    pub fn index(doc: &DeTable<'_>, text: &str) -> KeyLines {
        let starts = LineStarts::new(text);
        let mut k = KeyLines::default();
        let mut path = Vec::new();
        k.table(doc, &Source { text, starts }, &mut path);
        k
    }

    fn table(&mut self, t: &DeTable<'_>, src: &Source, path: &mut Vec<String>) {
        for (key, value) in t {
            path.push(key.get_ref().to_string());
            self.record(path, src.starts.line(key.span().start));
            self.value(value, src, path);
            path.pop();
        }
    }

    fn value(&mut self, v: &Spanned<DeValue<'_>>, src: &Source, path: &mut Vec<String>) {
        match v.get_ref() {
            DeValue::Table(t) => self.table(t, src, path),
            DeValue::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    path.push(i.to_string());
                    self.record(path, src.starts.line(e.span().start));
                    self.value(e, src, path);
                    path.pop();
                }
            }
            DeValue::String(_) => {
                let raw = src.text.get(v.span()).unwrap_or_default();
                if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
                    let refs: Vec<&str> = path.iter().map(String::as_str).collect();
                    let lines = value_lines(raw, src.starts.line(v.span().start));
                    self.texts.insert(join(&refs), lines);
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

    /// The line of each line of the multi-line string written at `path`, if it is one.
    pub fn text_lines(&self, path: &[&str]) -> Option<&[usize]> {
        self.texts.get(&join(path)).map(Vec::as_slice)
    }
}

/// Where a message points: a file (or a command-line argument, which has no line) and
/// its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: Option<usize>,
}

impl Place {
    /// A command-line argument as the user wrote it (`--device cloud:bps=x`).
    pub fn argument(arg: impl Into<String>) -> Place {
        Place {
            file: arg.into(),
            line: None,
        }
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// The place each key of a generated scenario came from, by key path; a key without
/// one of its own has its nearest ancestor's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Places(HashMap<String, Place>);

impl Places {
    /// `path` (and every key under it without a place of its own) came from `place`.
    pub fn set(&mut self, path: &[&str], place: Place) {
        self.0.insert(join(path), place);
    }

    /// The place of `path`, else of its nearest ancestor that has one.
    pub fn nearest(&self, path: &[&str]) -> Option<&Place> {
        (1..=path.len())
            .rev()
            .find_map(|n| self.0.get(&join(&path[..n])))
    }

    /// The place of each line of the text `lines` indexes: that of the deepest key
    /// written on the line (a table header's line holds the table, its first key's
    /// line the key). A line whose keys have no place is not in the map.
    pub fn by_line(&self, lines: &KeyLines) -> HashMap<usize, Place> {
        let mut deepest: HashMap<usize, (usize, &str)> = HashMap::new();
        for (path, &line) in &lines.lines {
            let depth = path.split('\u{1f}').count();
            let e = deepest.entry(line).or_insert((depth, path));
            // deterministic whatever the hash order: deeper, then the smaller path
            if (depth, std::cmp::Reverse(path.as_str())) > (e.0, std::cmp::Reverse(e.1)) {
                *e = (depth, path);
            }
        }
        deepest
            .into_iter()
            .filter_map(|(line, (_, path))| {
                let path: Vec<&str> = path.split('\u{1f}').collect();
                self.nearest(&path).map(|p| (line, p.clone()))
            })
            .collect()
    }
}

/// The text being indexed, with its line starts.
struct Source<'a> {
    text: &'a str,
    starts: LineStarts,
}

/// The line of each line of the value of the multi-line string token `raw` (quotes
/// included) that starts on line `first`. TOML drops a newline right after the
/// opening quotes; in a `"""` string a `\n` escape starts a line of the value on the
/// same line of the file, and a line-ending backslash joins lines of the file.
fn value_lines(raw: &str, first: usize) -> Vec<usize> {
    let basic = raw.starts_with('"');
    let body = raw.get(3..raw.len().saturating_sub(3)).unwrap_or_default();
    let mut line = first;
    let body = match body
        .strip_prefix("\r\n")
        .or_else(|| body.strip_prefix('\n'))
    {
        Some(rest) => {
            line += 1;
            rest
        }
        None => body,
    };
    let mut out = vec![line];
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                line += 1;
                out.push(line);
            }
            '\\' if basic => match chars.next() {
                Some('n') => out.push(line),
                // a line-ending backslash: the whitespace after it, newlines too, goes
                Some(w) if w.is_whitespace() => {
                    line += usize::from(w == '\n');
                    while let Some(w) = chars.next_if(|w| w.is_whitespace()) {
                        line += usize::from(w == '\n');
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    out
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

    fn index(text: &str) -> KeyLines {
        // a text that is not valid TOML indexes what could be parsed
        let (doc, _errors) = DeTable::parse_recoverable(text);
        KeyLines::index(doc.get_ref(), text)
    }

    #[test]
    fn keys_at_every_depth_have_their_lines() {
        let k = index(TEXT);
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
    fn multi_line_strings_keep_the_line_of_each_line() {
        let text = "[cgroup.a]\n\
                    fio = \"\"\"\n\
                    [a]\n\
                    \n\
                    rw=read\"\"\"\n\
                    [cgroup.b]\n\
                    fio = [\"fio --name=x\", '''[b]\n\
                    bs=4k''', \"\"\"[c]\\nrw=write\\\n   \n\
                    \x20 bs=8k\"\"\"]\n";
        let k = index(text);
        // the newline right after `"""` is not part of the value
        assert_eq!(k.text_lines(&["cgroup", "a", "fio"]), Some(&[3, 4, 5][..]));
        assert_eq!(k.text_lines(&["cgroup", "b", "fio", "0"]), None);
        assert_eq!(
            k.text_lines(&["cgroup", "b", "fio", "1"]),
            Some(&[7, 8][..])
        );
        // `\n` breaks the value's line, a line-ending backslash joins the file's
        assert_eq!(
            k.text_lines(&["cgroup", "b", "fio", "2"]),
            Some(&[8, 8][..])
        );
        let doc: toml::Table = text.parse().unwrap();
        let v = doc["cgroup"]["b"]["fio"][2].as_str().unwrap();
        assert_eq!(v, "[c]\nrw=writebs=8k");
    }

    #[test]
    fn each_line_takes_the_place_of_its_deepest_key() {
        let k = index("[device]\nmodel = \"x\"\n[cgroup.a]\nfio = \"f\"\n\"io.max\" = \"m\"\n");
        let mut p = Places::default();
        p.set(&["device"], Place::argument("--device x"));
        p.set(&["cgroup", "a", "io.max"], Place::argument("--io-max m"));
        let by_line = p.by_line(&k);
        let at = |l: usize| by_line.get(&l).map(ToString::to_string);
        assert_eq!(at(1).as_deref(), Some("--device x"));
        assert_eq!(at(2).as_deref(), Some("--device x"));
        // `[cgroup.a]` and `fio` have no place; `io.max` has its own
        assert_eq!((at(3), at(4)), (None, None));
        assert_eq!(at(5).as_deref(), Some("--io-max m"));
        let copied = Place {
            file: "s.toml".into(),
            line: Some(7),
        };
        assert_eq!(copied.to_string(), "s.toml:7");
    }

    #[test]
    fn broken_text_indexes_what_parses() {
        let k = index("a = 1\nb = \n");
        assert_eq!(k.exact(&["a"]), Some(1));
    }
}
