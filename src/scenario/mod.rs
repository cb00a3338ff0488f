//! Scenario files (DESIGN.md §4): a device, cgroups with interface-file lines in kernel
//! syntax, fio jobs per cgroup, kernel version and behaviour switches, and `[[variant]]`
//! blocks for A/B runs.
//!
//! Design
//! ------
//! A scenario is kept as its TOML table until a variant is chosen: `[[variant]]` blocks
//! override top-level tables key by key (`kernel`, `device`, `host`, `state`, `root`, and
//! `cgroup.NAME`), so resolution is a merge of tables followed by one typed pass
//! (`resolve.rs`) that validates every key and names the file and line of anything
//! wrong. A scenario a command writes from its arguments ([`Scenario::generated`]:
//! `blkcg-sim fio`, the tuners) names the argument instead, never a line of the text
//! it wrote. Scenarios shipped with the binary live in `scenarios/` and are embedded at
//! build time (`embedded.rs`), so `blkcg-sim repro` needs no files.
//!
//! - `mod.rs`      — loading, variants, merging, error positions;
//! - `resolve.rs`  — the typed view of one variant (device, kernel, cgroups, jobs);
//! - `host.rs`     — the `[host]` table: CPU costs around each I/O, wake-up noise;
//! - `embedded.rs` — the scenarios compiled into the binary;
//! - `repro.rs`    — a seed's `[repro]` table: published figures and bands;
//! - `spec.rs`     — scenario values given on a command line (`--device`, `--set`).
//!
//! Building and running a resolved variant is `crate::run`; the commands are
//! `crate::cli`.

pub mod embedded;
pub mod host;
pub mod host_profile;
pub mod repro;
pub mod resolve;
pub mod source;
pub mod spec;
pub mod sysctl;

use std::collections::HashMap;

use serde::Deserialize;
use source::{KeyLines, Place, Places};
use toml::de::DeTable;
use toml::{Table, Value};

/// A scenario problem: file, line (when known), what is wrong and what is accepted. In a
/// [generated](Scenario::generated) scenario `file` is the argument behind the key
/// (`--device ...`), with no line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {msg}", .line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ScenarioError {
    pub file: String,
    pub line: Option<usize>,
    pub msg: String,
    /// The key the error is about (table path, then key), empty if none: lets
    /// [`Scenario::in_variant`] point at a variant's own line for it.
    pub key: Vec<String>,
}

/// Top-level keys a scenario may have.
const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "duration",
    "device",
    "kernel",
    "host",
    "sysctl",
    "state",
    "root",
    "cgroup",
    "schedule",
    "variant",
    "repro",
];

/// Tables a variant may override.
const VARIANT_KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "duration",
    "kernel",
    "device",
    "host",
    "sysctl",
    "state",
    "root",
    "cgroup",
];

/// A loaded scenario file.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub file: String,
    pub text: String,
    pub table: Table,
    /// Where each key is written.
    pub lines: KeyLines,
    /// `blkcg-sim fio`, acting as fio: its job files read `${VAR}` from the
    /// environment, and errors quote them, as fio's do. A scenario file reads no
    /// environment (the same scenario gives the same output on any machine) and quotes
    /// no file it names.
    pub acting_as_fio: bool,
    /// A scenario written from a command's arguments ([`Scenario::generated`]): the
    /// place of each line of `text`; None for a scenario file.
    pub places: Option<HashMap<usize, Place>>,
}

impl Scenario {
    /// Parse a scenario from its text; `file` is used in error messages.
    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        Self::parse_placed(text, file, None)
    }

    /// A scenario a command writes from its arguments: `table`, named `file` where
    /// a message has nothing more precise, each key at the place `places` gives it
    /// (the argument that set it), never at a line of the text written here.
    pub fn generated(table: &Table, file: &str, places: &Places) -> Result<Scenario, String> {
        let text = toml::to_string(table).map_err(|e| format!("{file}: {e}"))?;
        Self::parse_placed(&text, file, Some(places)).map_err(|e| e.to_string())
    }

    fn parse_placed(
        text: &str,
        file: &str,
        places: Option<&Places>,
    ) -> Result<Scenario, ScenarioError> {
        let not_toml = |e: toml::de::Error| {
            let line = e.span().map(|s| line_of_offset(text, s.start));
            ScenarioError {
                file: file.to_string(),
                line,
                msg: format!("not valid TOML: {}", e.message()),
                key: Vec::new(),
            }
        };
        // one parse with spans: the key lines are read off the document, which then
        // becomes the table (what `text.parse::<Table>()` does, without parsing twice)
        let doc = DeTable::parse(text).map_err(not_toml)?;
        let lines = KeyLines::index(doc.get_ref(), text);
        let table = Table::deserialize(toml::de::Deserializer::from(doc)).map_err(not_toml)?;
        let sc = Scenario {
            file: file.to_string(),
            text: text.to_string(),
            table,
            places: places.map(|p| p.by_line(&lines)),
            lines,
            acting_as_fio: false,
        };
        for k in sc.table.keys() {
            if !TOP_KEYS.contains(&k.as_str()) {
                return Err(sc.err_at(
                    &[],
                    k,
                    format!("unknown key `{k}`; accepted: {}", TOP_KEYS.join(", ")),
                ));
            }
        }
        if let Some(n) = sc.table.get("name")
            && !n.is_str()
        {
            return Err(sc.err_at(
                &[],
                "name",
                format!("`name` must be a string (name = \"my-scenario\"), not `{n}`"),
            ));
        }
        sc.check_repro_keys()?;
        if let Some(vs) = sc.table.get("variant") {
            let Some(arr) = vs.as_array() else {
                return Err(sc.err_at(
                    &[],
                    "variant",
                    "`variant` must be an array of tables: [[variant]]",
                ));
            };
            let mut names = Vec::new();
            for (i, v) in arr.iter().enumerate() {
                let at = ["variant", &i.to_string()];
                let Some(t) = v.as_table() else {
                    return Err(sc.err_at(&[], "variant", "each [[variant]] must be a table"));
                };
                let Some(name) = t.get("name").and_then(Value::as_str) else {
                    return Err(sc.err_at(
                        &[],
                        "variant",
                        "every [[variant]] needs `name = \"...\"`",
                    ));
                };
                crate::report::outdir::check_label(name).map_err(|m| {
                    sc.err_at(
                        &at,
                        "name",
                        format!("variant name: {m} (it names a folder under --output)"),
                    )
                })?;
                if names.contains(&name) {
                    return Err(sc.err_at(
                        &[],
                        "variant",
                        format!("two variants are named `{name}`"),
                    ));
                }
                names.push(name);
                for k in t.keys() {
                    if !VARIANT_KEYS.contains(&k.as_str()) {
                        return Err(sc.err_at(
                            &at,
                            k,
                            format!(
                                "variant `{name}`: unknown key `{k}`; a variant may set: {}",
                                VARIANT_KEYS.join(", ")
                            ),
                        ));
                    }
                }
            }
        }
        Ok(sc)
    }

    /// `[repro]` and each `[[repro.band]]` take only the keys `repro::ReproSpec` reads.
    fn check_repro_keys(&self) -> Result<(), ScenarioError> {
        let Some(r) = self.table.get("repro").and_then(Value::as_table) else {
            return Ok(());
        };
        for k in r.keys() {
            if !repro::REPRO_KEYS.contains(&k.as_str()) {
                return Err(self.err_at(
                    &["repro"],
                    k,
                    format!(
                        "unknown [repro] key `{k}`; accepted: {}",
                        repro::REPRO_KEYS.join(", ")
                    ),
                ));
            }
        }
        let bands = r.get("band").and_then(Value::as_array);
        for (i, b) in bands.into_iter().flatten().enumerate() {
            let at = i.to_string();
            for k in b.as_table().into_iter().flat_map(|t| t.keys()) {
                if !repro::BAND_KEYS.contains(&k.as_str()) {
                    return Err(self.err_at(
                        &["repro", "band", &at],
                        k,
                        format!(
                            "unknown [[repro.band]] key `{k}`; accepted: {}",
                            repro::BAND_KEYS.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Scenario name (`name = ...`, else the file name).
    pub fn name(&self) -> String {
        self.table
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| self.file.clone())
    }

    /// Variant names in file order (empty if the scenario has none).
    pub fn variants(&self) -> Vec<String> {
        self.table
            .get("variant")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The same scenario with `values` pinned — each a (table path, key, value), e.g.
    /// (`["kernel"]`, `"hz"`, 250) — at the top level and in every variant that sets
    /// that table, so no variant can override them. `validate` pins the booted
    /// kernel's version, HZ and build options, and the guest's host costs.
    pub fn pinned(&self, values: &[(&[&str], &str, Value)]) -> Scenario {
        fn pin(t: &mut Table, path: &[&str], key: &str, v: &Value) {
            let mut t = t;
            for p in path {
                let e = t
                    .entry(p.to_string())
                    .or_insert_with(|| Value::Table(Table::new()));
                if !e.is_table() {
                    *e = Value::Table(Table::new());
                }
                let Value::Table(inner) = e else { return };
                t = inner;
            }
            t.insert(key.to_string(), v.clone());
        }
        let mut sc = self.clone();
        for (path, key, v) in values {
            pin(&mut sc.table, path, key, v);
            if let Some(Value::Array(vs)) = sc.table.get_mut("variant") {
                for vt in vs.iter_mut().filter_map(Value::as_table_mut) {
                    // merging is shallow below the top tables: pin only where the
                    // variant has the whole path, else the base's value shows through
                    let mut has = Some(&*vt);
                    for p in path.iter() {
                        has = has.and_then(|t| t.get(*p)).and_then(Value::as_table);
                    }
                    if has.is_some() {
                        pin(vt, path, key, v);
                    }
                }
            }
        }
        sc
    }

    /// The scenario table with variant `name` merged in (None: the base scenario).
    pub fn merged(&self, variant: Option<&str>) -> Result<Table, ScenarioError> {
        let mut base = self.table.clone();
        base.remove("variant");
        let Some(name) = variant else {
            return Ok(base);
        };
        let arr = self.table.get("variant").and_then(Value::as_array);
        let Some(v) = arr.and_then(|a| {
            a.iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
        }) else {
            let known = self.variants();
            return Err(ScenarioError {
                file: self.file.clone(),
                line: None,
                msg: format!(
                    "no variant `{name}`; this scenario has: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
                key: Vec::new(),
            });
        };
        let Some(vt) = v.as_table() else {
            return Ok(base);
        };
        for (k, val) in vt {
            if k == "name" {
                continue;
            }
            match (base.get_mut(k), val) {
                (Some(Value::Table(bt)), Value::Table(over)) if k == "cgroup" => {
                    for (cg, cgv) in over {
                        match (bt.get_mut(cg), cgv) {
                            (Some(Value::Table(b)), Value::Table(o)) => merge_keys(b, o),
                            _ => {
                                bt.insert(cg.clone(), cgv.clone());
                            }
                        }
                    }
                }
                // a different device model is a different device: replace the table
                (Some(Value::Table(bt)), Value::Table(over))
                    if k == "device"
                        && over
                            .get("model")
                            .is_some_and(|m| bt.get("model") != Some(m)) =>
                {
                    *bt = over.clone();
                }
                (Some(Value::Table(bt)), Value::Table(over)) => merge_keys(bt, over),
                _ => {
                    base.insert(k.clone(), val.clone());
                }
            }
        }
        Ok(base)
    }

    /// An error about `key` inside the table at `path` (e.g. `["device"]`), with the
    /// line where that key is written, else where its table is.
    pub fn err_at(&self, path: &[&str], key: &str, msg: impl Into<String>) -> ScenarioError {
        let mut full: Vec<&str> = path.to_vec();
        full.push(key);
        let at = self.place(self.lines.nearest(&full));
        ScenarioError {
            file: at.file,
            line: at.line,
            msg: msg.into(),
            key: full.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Where line `line` of the text is, as a message names it: the file and line of a
    /// scenario file; in a [generated](Scenario::generated) one, the place of the key
    /// on that line, else the file alone.
    pub fn place(&self, line: Option<usize>) -> Place {
        let Some(places) = &self.places else {
            return Place {
                file: self.file.clone(),
                line,
            };
        };
        line.and_then(|l| places.get(&l))
            .cloned()
            .unwrap_or_else(|| Place::argument(self.file.as_str()))
    }

    /// The places of the top-level tables `tables` and of every key under them, for
    /// a scenario [generated](Scenario::generated) from them (a tuner's machine).
    pub fn places_of(&self, tables: &[&str]) -> Places {
        fn walk<'a>(sc: &Scenario, path: &mut Vec<&'a str>, v: &'a Value, to: &mut Places) {
            to.set(path, sc.place(sc.lines.nearest(path)));
            for (k, v) in v.as_table().into_iter().flatten() {
                path.push(k);
                walk(sc, path, v, to);
                path.pop();
            }
        }
        let mut places = Places::default();
        for &t in tables {
            if let Some(v) = self.table.get(t) {
                walk(self, &mut vec![t], v, &mut places);
            }
        }
        places
    }

    /// The line where `path` is written in the scenario as variant `variant` sees it:
    /// the variant's own line when the variant sets that key, else the base's, else
    /// its nearest enclosing table's.
    pub fn line_in(&self, variant: Option<&str>, path: &[&str]) -> Option<usize> {
        self.exact_line_in(variant, path)
            .or_else(|| self.lines.nearest(path))
    }

    /// The line where `path` itself is written, in the variant or the base.
    pub fn exact_line_in(&self, variant: Option<&str>, path: &[&str]) -> Option<usize> {
        self.variant_index(variant)
            .and_then(|i| {
                let i = i.to_string();
                let mut full = vec!["variant", i.as_str()];
                full.extend_from_slice(path);
                self.lines.exact(&full)
            })
            .or_else(|| self.lines.exact(path))
    }

    /// The line of each line of the string at `path` as variant `variant` sees it:
    /// one by one for a multi-line string, else the line where it is written.
    pub fn text_lines_in(&self, variant: Option<&str>, path: &[&str]) -> Vec<usize> {
        let index = self.variant_index(variant).map(|i| i.to_string());
        let own: Option<Vec<&str>> = index
            .as_deref()
            .map(|i| [&["variant", i][..], path].concat());
        let written = own
            .filter(|p| self.lines.exact(p).is_some())
            .unwrap_or_else(|| path.to_vec());
        match self.lines.text_lines(&written) {
            Some(lines) => lines.to_vec(),
            None => self.line_in(variant, path).into_iter().collect(),
        }
    }

    /// `e` as seen while resolving `variant`: pointed at the variant's line for its key
    /// when the variant sets it, and naming the variant.
    pub fn in_variant(&self, variant: Option<&str>, mut e: ScenarioError) -> ScenarioError {
        let Some(name) = variant else { return e };
        if !e.key.is_empty() {
            let key: Vec<&str> = e.key.iter().map(String::as_str).collect();
            let at = self.place(self.line_in(variant, &key));
            (e.file, e.line) = (at.file, at.line);
        }
        e.msg = format!("variant `{name}`: {}", e.msg);
        e
    }

    /// The position of variant `name` among the `[[variant]]` tables.
    fn variant_index(&self, name: Option<&str>) -> Option<usize> {
        let name = name?;
        self.table
            .get("variant")?
            .as_array()?
            .iter()
            .position(|v| v.get("name").and_then(Value::as_str) == Some(name))
    }
}

fn merge_keys(base: &mut Table, over: &Table) {
    for (k, v) in over {
        base.insert(k.clone(), v.clone());
    }
}

fn line_of_offset(text: &str, off: usize) -> usize {
    text[..off.min(text.len())].matches('\n').count() + 1
}

/// What a bare number (no unit) means for a duration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareNumber {
    /// Seconds, as fio reads `runtime=30`: `duration`, `at`.
    Seconds,
    /// Nanoseconds: keys named `*_ns` (`[host] submit_ns = 2000`).
    Nanoseconds,
}

/// The longest duration a scenario may give: a simulated year.
const MAX_DURATION_NS: f64 = 365.0 * 86_400e9;

/// Parse a duration as a scenario writes it: a string with a unit (`"10s"`, `"250ms"`,
/// `"100us"`, `"5000ns"`, `"2m"`, `"1h"`; no unit is seconds, as fio reads it) or a bare
/// number meaning what `bare` says.
pub fn parse_duration(v: &Value, bare: BareNumber) -> Result<u64, String> {
    let unit_of_bare = match bare {
        BareNumber::Seconds => 1e9,
        BareNumber::Nanoseconds => 1.0,
    };
    let ns = match v {
        Value::Integer(i) => *i as f64 * unit_of_bare,
        Value::Float(f) => f * unit_of_bare,
        Value::String(s) => {
            let s = s.trim();
            let split = s
                .find(|c: char| !c.is_ascii_digit() && c != '.')
                .unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let x: f64 = num
                .parse()
                .map_err(|_| format!("`{s}` is not a duration (e.g. \"10s\", \"250ms\")"))?;
            let mult = match unit.trim() {
                "ns" => 1.0,
                "us" | "usec" => 1e3,
                "ms" | "msec" => 1e6,
                "" | "s" | "sec" => 1e9,
                "m" | "min" => 60e9,
                "h" => 3600e9,
                u => {
                    return Err(format!(
                        "unknown time unit `{u}` in `{s}`; accepted: ns, us, ms, s, m, h"
                    ));
                }
            };
            x * mult
        }
        _ => {
            return Err(format!(
                "expected a duration: a string like \"10s\" or \"250ms\", or a number of {}",
                match bare {
                    BareNumber::Seconds => "seconds",
                    BareNumber::Nanoseconds => "nanoseconds",
                }
            ));
        }
    };
    if !(0.0..=MAX_DURATION_NS).contains(&ns) {
        return Err(format!(
            "`{v}` is out of range: from 0 to a year (\"8760h\") is accepted"
        ));
    }
    Ok(ns.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SC: &str = r#"
name = "t"
seed = 3

[device]
model = "nullb"
completion_nsec = 1000

[kernel]
version = "6.10"

[cgroup.a]
"io.max" = "252:0 riops=100"
fio = "fio --name=a --rw=randread"

[[variant]]
name = "old"
kernel = { version = "4.18" }
cgroup.a = { "io.max" = "252:0 riops=50" }
"#;

    #[test]
    fn variants_override_key_by_key() {
        let sc = Scenario::parse(SC, "t.toml").unwrap();
        assert_eq!(sc.variants(), vec!["old"]);
        let m = sc.merged(Some("old")).unwrap();
        assert_eq!(m["kernel"]["version"].as_str(), Some("4.18"));
        assert_eq!(m["cgroup"]["a"]["io.max"].as_str(), Some("252:0 riops=50"));
        // untouched keys are inherited
        assert!(m["cgroup"]["a"].get("fio").is_some());
        assert_eq!(m["device"]["completion_nsec"].as_integer(), Some(1000));
        assert!(
            sc.merged(Some("nope"))
                .unwrap_err()
                .msg
                .contains("has: old")
        );
    }

    #[test]
    fn unknown_top_key_names_its_line() {
        let e = Scenario::parse("name = \"x\"\n\ndevise = 3\n", "s.toml").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(
            e.to_string().starts_with("s.toml:3: unknown key `devise`"),
            "{e}"
        );
    }

    #[test]
    fn toml_syntax_errors_have_a_line() {
        let e = Scenario::parse("name = \"x\"\n[device\n", "s.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn key_lines_are_found_in_tables_and_inline_tables() {
        let sc = Scenario::parse(SC, "t.toml").unwrap();
        assert_eq!(sc.err_at(&["device"], "completion_nsec", "").line, Some(7));
        assert_eq!(sc.err_at(&["cgroup", "a"], "io.max", "").line, Some(13));
    }

    #[test]
    fn durations() {
        let s = |x: &str| Value::String(x.into());
        let secs = BareNumber::Seconds;
        assert_eq!(parse_duration(&s("10s"), secs), Ok(10_000_000_000));
        assert_eq!(parse_duration(&s("2.5ms"), secs), Ok(2_500_000));
        // a bare number is seconds where fio would read seconds, ns for `*_ns` keys
        assert_eq!(parse_duration(&Value::Integer(7), secs), Ok(7_000_000_000));
        assert_eq!(parse_duration(&Value::Float(0.5), secs), Ok(500_000_000));
        assert_eq!(
            parse_duration(&Value::Integer(7), BareNumber::Nanoseconds),
            Ok(7)
        );
        assert!(parse_duration(&s("3 parsecs"), secs).is_err());
        assert!(parse_duration(&Value::Integer(-1), secs).is_err());
        assert!(parse_duration(&Value::Integer(i64::MAX), BareNumber::Nanoseconds).is_err());
        assert!(parse_duration(&s("9000h"), secs).is_err());
    }

    #[test]
    fn pinned_values_reach_every_variant_without_hiding_base_tables() {
        let sc = Scenario::parse(
            "[kernel]\nversion = \"4.18\"\nconfig = { blkcg_debug_stats = true }\n\
             [device]\nmodel = \"nullb\"\n\
             [[variant]]\nname = \"a\"\nkernel = { version = \"6.16\" }\n",
            "t.toml",
        )
        .unwrap();
        let p = sc.pinned(&[
            (&["kernel"], "version", Value::from("6.1")),
            (&["kernel", "config"], "throttling_low", Value::from(false)),
        ]);
        for v in [None, Some("a")] {
            let r = p.resolve(v).unwrap();
            assert_eq!(r.kernel.version, "6.1", "variant {v:?}");
            assert!(r.kernel.debug_stats, "base config kept in variant {v:?}");
            assert!(!r.kernel.throttling_low);
        }
    }

    /// Issue 32 item 14: a generated scenario's error names the argument that set the
    /// key, or the line of the file it was copied from, never a line of its own text.
    #[test]
    fn a_generated_scenarios_errors_name_their_arguments() {
        let t: Table = "[device]\nmodel = \"cloud\"\nbps = \"x\"\n\
                        [kernel]\nversion = \"9.9\"\n[cgroup.a]\nfio = \"fio --name=a\"\n"
            .parse()
            .unwrap();
        let file =
            Scenario::parse("name = \"k\"\n\n[kernel]\nversion = \"9.9\"\n", "k.toml").unwrap();
        let mut places = file.places_of(&["kernel"]);
        let copied = places.nearest(&["kernel", "version"]).cloned();
        assert_eq!(copied.map(|p| p.to_string()).as_deref(), Some("k.toml:4"));
        places.set(&["device"], Place::argument("--device `cloud:bps=x`"));
        let sc = Scenario::generated(&t, "<command line>", &places).unwrap();
        let e = sc.err_at(&["device"], "bps", "bad");
        assert_eq!(e.to_string(), "--device `cloud:bps=x`: bad");
        assert_eq!(e.line, None);
        let e = sc.resolve(None).unwrap_err().to_string();
        assert!(e.starts_with("k.toml:4: `kernel.version`"), "{e}");
        // a key nobody placed: the file alone
        assert_eq!(
            sc.err_at(&["cgroup", "a"], "fio", "x").to_string(),
            "<command line>: x"
        );
    }
}
