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
//! wrong. Scenarios shipped with the binary live in `scenarios/` and are embedded at
//! build time (`embedded.rs`), so `blkcg-sim repro` needs no files.
//!
//! - `mod.rs`      — loading, variants, merging, error positions;
//! - `resolve.rs`  — the typed view of one variant (device, kernel, cgroups, jobs);
//! - `run.rs`      — build the pipeline for a resolved variant and run it;
//! - `embedded.rs` — the scenarios compiled into the binary.

pub mod embedded;
pub mod repro;
pub mod resolve;
pub mod run;

use toml::{Table, Value};

/// A scenario problem: file, line (when known), what is wrong and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {msg}", .line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ScenarioError {
    pub file: String,
    pub line: Option<usize>,
    pub msg: String,
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
}

impl Scenario {
    /// Parse a scenario from its text; `file` is used in error messages.
    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let table: Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map(|s| line_of_offset(text, s.start));
            ScenarioError {
                file: file.to_string(),
                line,
                msg: format!("not valid TOML: {}", e.message()),
            }
        })?;
        let sc = Scenario {
            file: file.to_string(),
            text: text.to_string(),
            table,
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
        if let Some(vs) = sc.table.get("variant") {
            let Some(arr) = vs.as_array() else {
                return Err(sc.err_at(
                    &[],
                    "variant",
                    "`variant` must be an array of tables: [[variant]]",
                ));
            };
            let mut names = Vec::new();
            for v in arr {
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
                        return Err(sc.err_key_anywhere(
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
    /// line where that key is written when it can be found.
    pub fn err_at(&self, path: &[&str], key: &str, msg: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.clone(),
            line: find_key_line(&self.text, path, key),
            msg: msg.into(),
        }
    }

    /// An error about `key` wherever it first appears in the file.
    pub fn err_key_anywhere(&self, key: &str, msg: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.clone(),
            line: find_key_anywhere(&self.text, key),
            msg: msg.into(),
        }
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

/// Does `line` assign `key` (bare or quoted)?
/// The 1-based line of the `nth` (from 0) `device = ...` / `device.KEY = ...`
/// assignment after the first `[[schedule]]` header.
pub fn find_schedule_device_line(text: &str, nth: usize) -> Option<usize> {
    let start = text
        .lines()
        .position(|l| l.trim().starts_with("[[schedule]]"))?;
    text.lines()
        .enumerate()
        .skip(start)
        .filter(|(_, l)| {
            let l = l.trim_start();
            assigns(l, "device") || l.strip_prefix("device.").is_some_and(|r| r.contains('='))
        })
        .nth(nth)
        .map(|(i, _)| i + 1)
}

fn assigns(line: &str, key: &str) -> bool {
    let l = line.trim_start();
    let rest = if let Some(r) = l.strip_prefix(key) {
        r
    } else if let Some(r) = l.strip_prefix(&format!("\"{key}\"")) {
        r
    } else {
        return false;
    };
    rest.trim_start().starts_with('=')
}

/// The 1-based line of `key` in table `path` (inline tables and dotted headers are
/// matched loosely: the first assignment of `key` after the table's header).
fn find_key_line(text: &str, path: &[&str], key: &str) -> Option<usize> {
    let mut in_table = path.is_empty();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            let header = t.trim_matches(|c| c == '[' || c == ']').replace('"', "");
            in_table = !path.is_empty() && header == path.join(".");
            if path.is_empty() {
                in_table = false;
            }
            continue;
        }
        if in_table && assigns(line, key) {
            return Some(i + 1);
        }
        // `kernel = { ... key = ... }` inline form
        if !path.is_empty() && assigns(line, path[path.len() - 1]) && line.contains(key) {
            return Some(i + 1);
        }
    }
    if !path.is_empty() {
        let header = format!("[{}]", path.join("."));
        for (i, line) in text.lines().enumerate() {
            if line.trim().replace('"', "") == header {
                return Some(i + 1);
            }
        }
    }
    None
}

fn find_key_anywhere(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| assigns(l, key) || l.trim().trim_matches(|c| c == '[' || c == ']') == key)
        .map(|i| i + 1)
}

/// Parse a duration as a scenario writes it: integer ns, or a string with a unit
/// (`"10s"`, `"250ms"`, `"100us"`, `"5000ns"`, `"2m"`).
pub fn parse_duration(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) if *i >= 0 => Ok(*i as u64),
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
            Ok((x * mult).round() as u64)
        }
        _ => Err("expected a duration: integer nanoseconds or a string like \"10s\"".into()),
    }
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
        assert_eq!(find_key_line(SC, &["device"], "completion_nsec"), Some(7));
        assert_eq!(find_key_line(SC, &["cgroup", "a"], "io.max"), Some(13));
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration(&Value::String("10s".into())),
            Ok(10_000_000_000)
        );
        assert_eq!(
            parse_duration(&Value::String("2.5ms".into())),
            Ok(2_500_000)
        );
        assert_eq!(parse_duration(&Value::Integer(7)), Ok(7));
        assert!(parse_duration(&Value::String("3 parsecs".into())).is_err());
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
}
