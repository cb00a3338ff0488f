//! The `--set KEY=V1,V2,...` grammar: which scenario value a sweep axis changes, and
//! how one value is written into a scenario's table.
//!
//! Design
//! ------
//! A KEY names a place in the scenario exactly as the file spells it, so a point of a
//! sweep is the scenario with those values written in by hand (the merged table of the
//! point's variant, then every axis in the order given):
//!
//! ```text
//! variant                        the scenario's [[variant]]s (default: all of them)
//! duration                       the top-level `duration`
//! device.KEY                     [device] KEY            (device.iops, device.preset)
//! kernel.version | kernel.hz     [kernel]
//! kernel.config.NAME             [kernel] config.NAME    (throttling_low, blkcg_debug_stats)
//! kernel.PREFIX.NAME             a behaviour switch of a policy or elevator
//!                                (kernel.throttle.iops_wait, kernel.deadline.prio)
//! device.iosched.NAME            an elevator's queue/iosched/ file (…iosched.fifo_batch)
//! host.KEY | state.KEY           [host] / [state]        (host.submit_ns, state.iocost.vrate)
//! sysctl.vm.NAME                 [sysctl] vm.NAME        (sysctl.vm.dirty_ratio)
//! root.FILE                      a root cgroup file's whole line (root.io.cost.qos)
//! root.FILE:TOKEN                one key=value token of it (root.io.cost.qos:max)
//! cgroup.NAME.FILE               a cgroup file's whole line (…io.weight, …io.prio.class)
//! cgroup.NAME.FILE:TOKEN         one token of it (…io.max:riops, …io.latency:target)
//! cgroup.NAME.fio                the whole fio command line / job file
//! cgroup.NAME.fio:OPTION         one fio option of every job (…fio:iodepth)
//! cgroup.NAME.memory.max         the cgroup's memory.max (its page cache's dirty limits)
//! ```
//!
//! The files, where each may be written, their tokens, the switch prefixes and the
//! `iosched` files are the registry's (`crate::stack::registry`): a new policy or
//! elevator is sweepable without a line here.
//!
//! NAME is a cgroup's path as its `[cgroup."NAME"]` table names it (dots and slashes
//! allowed: the file part is found from the end). A token is replaced where the line
//! has it and appended where it does not; a line the scenario does not write is an
//! error (a token needs a line to live in). A fio option is rewritten wherever a job
//! writes it, under any of fio's spellings (`blocksize` for `bs`); written nowhere, it
//! is added for every job (before the first `--name`, or in `[global]`); every run of a
//! `fio = [...]` array is rewritten. Values are separated by commas; `\,` is a comma
//! inside a value (`cgroup.a.fio:bs=4k\,64k`). A value is typed as a scenario would
//! write it (integer, float, boolean, else string; `kernel.version` always a string).
//! Everything the value means is checked where the scenario is checked: the sweep
//! prepares each value once before any point runs. Two axes that write the same place
//! (a whole line or fio text and one of its tokens or options, one option under two
//! spellings, `device.model` after another `device.` key) are refused, naming both
//! ([`conflict`]): one would undo the other, and a record would name a value that was
//! not in force.

use toml::{Table, Value};

use crate::scenario::spec::typed_value;
use crate::stack::registry::{self, CgroupFile};
use crate::workload::cmdline::{is_cmdline, shell_quote, split_shell_words};
use crate::workload::fio::option_name;

/// What a KEY changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `variant`: which of the scenario's variants the point is made from.
    Variant,
    /// A key in a table: the table path, then the key (`["kernel", "config", "hz"]`).
    Key(Vec<String>),
    /// An interface file's line on the root (`cgroup` None) or a cgroup: the whole
    /// line, or one `key=value` token of it.
    Line {
        cgroup: Option<String>,
        file: &'static str,
        token: Option<String>,
    },
    /// A cgroup's `fio`: the whole text, or one option of every job.
    Fio {
        cgroup: String,
        option: Option<String>,
    },
}

/// One `--set`: a key and the values it takes, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// The KEY as written.
    pub key: String,
    pub target: Target,
    pub values: Vec<String>,
}

/// What `--help` and errors list as accepted keys, from the registry.
pub fn key_forms() -> String {
    let root: Vec<String> = registry::cgroup_files()
        .filter(|f| f.on_root())
        .map(|f| file_form("root.", f))
        .collect();
    let child: Vec<String> = registry::cgroup_files()
        .filter(|f| f.on_children())
        .map(|f| file_form("cgroup.NAME.", f))
        .collect();
    let switches: Vec<String> = registry::switch_prefixes()
        .map(|p| format!("kernel.{p}*"))
        .collect();
    format!(
        "variant, duration, device.KEY, device.iosched.NAME, kernel.version, kernel.hz, \
         kernel.config.NAME, {}, host.KEY, state.KEY, sysctl.vm.NAME, {}, {}, \
         cgroup.NAME.fio[:OPTION], cgroup.NAME.memory.max",
        switches.join(", "),
        root.join(", "),
        child.join(", ")
    )
}

/// `PREFIXFILE[:TOKEN]`, or `PREFIXFILE` for a file without tokens.
fn file_form(prefix: &str, f: &CgroupFile) -> String {
    let token = if f.tokens.is_empty() { "" } else { "[:TOKEN]" };
    format!("{prefix}{}{token}", f.name)
}

impl Axis {
    /// Parse one `--set KEY=V1,V2,...`.
    pub fn parse(spec: &str) -> Result<Axis, String> {
        let Some((key, values)) = spec.split_once('=') else {
            return Err(format!(
                "--set `{spec}`: expected KEY=V1,V2,... (e.g. root.io.cost.qos:max=50,100)"
            ));
        };
        let key = key.trim();
        let target = parse_key(key).map_err(|m| format!("--set {key}: {m}"))?;
        let values = split_values(values).map_err(|m| format!("--set {key}: {m}"))?;
        for v in &values {
            check_value(&target, v).map_err(|m| format!("--set {key}={v}: {m}"))?;
        }
        Ok(Axis {
            key: key.to_string(),
            target,
            values,
        })
    }

    /// Write value `v` into `t`, a scenario's table with its variant merged in.
    pub fn apply(&self, t: &mut Table, v: &str) -> Result<(), String> {
        let k = &self.key;
        match &self.target {
            Target::Variant => Ok(()),
            Target::Key(path) => {
                let value = if path == &["kernel", "version"] {
                    Value::String(v.to_string())
                } else {
                    typed_value(v)
                };
                set_key(t, path, value);
                Ok(())
            }
            Target::Line {
                cgroup,
                file,
                token,
            } => {
                let owner = match cgroup {
                    None => "the root".to_string(),
                    Some(c) => format!("cgroup `{c}`"),
                };
                let place = owner_table(t, cgroup.as_deref())
                    .ok_or_else(|| format!("--set {k}: the scenario has no {owner}"))?;
                let Some(tok) = token else {
                    place.insert(file.to_string(), Value::String(v.to_string()));
                    return Ok(());
                };
                let lines = match place.get_mut(*file) {
                    Some(Value::String(s)) => vec![s],
                    Some(Value::Array(a)) => a.iter_mut().filter_map(as_string_mut).collect(),
                    _ => Vec::new(),
                };
                if lines.is_empty() {
                    return Err(format!(
                        "--set {k}: {owner} has no `{file}` line whose `{tok}` to change; set the whole line instead (--set {}='MAJ:MIN {tok}={v}')",
                        k.rsplit_once(':').map(|x| x.0).unwrap_or(k)
                    ));
                }
                for line in lines {
                    *line = set_token(line, tok, v);
                }
                Ok(())
            }
            Target::Fio { cgroup, option } => {
                let place = owner_table(t, Some(cgroup))
                    .ok_or_else(|| format!("--set {k}: the scenario has no cgroup `{cgroup}`"))?;
                let Some(opt) = option else {
                    place.insert("fio".into(), Value::String(v.to_string()));
                    return Ok(());
                };
                let texts: Vec<&mut String> = match place.get_mut("fio") {
                    Some(Value::String(s)) => vec![s],
                    Some(Value::Array(a)) => a.iter_mut().filter_map(as_string_mut).collect(),
                    _ => Vec::new(),
                };
                let texts: Vec<&mut String> =
                    texts.into_iter().filter(|s| !s.trim().is_empty()).collect();
                if texts.is_empty() {
                    return Err(format!(
                        "--set {k}: cgroup `{cgroup}` runs no fio job whose `{opt}` to change"
                    ));
                }
                for text in texts {
                    *text = set_fio_option(text, opt, v)
                        .map_err(|m| format!("--set {k}: cgroup `{cgroup}`: {m}"))?;
                }
                Ok(())
            }
        }
    }
}

/// Why axis `later` (given after `earlier`) cannot be swept with it, if it cannot: the
/// two write the same place, so one would undo the other at some points and a record
/// would name a value that was not in force. Two tokens of one line, two options of
/// one fio text, and `device.model` before the device's other keys compose; a whole
/// line or fio text with one of its tokens or options, one fio option under two
/// spellings, a key inside another's table, and `device.model` after another
/// `device.` key (a new model is a new `[device]` table) do not.
pub fn conflict(earlier: &Axis, later: &Axis) -> Option<String> {
    let what = match (&earlier.target, &later.target) {
        (
            Target::Line {
                cgroup: c1,
                file: f1,
                token: t1,
            },
            Target::Line {
                cgroup: c2,
                file: f2,
                token: t2,
            },
        ) if c1 == c2 && f1 == f2 && (t1.is_none() || t2.is_none() || t1 == t2) => {
            format!("both write `{f1}`'s line")
        }
        (
            Target::Fio {
                cgroup: c1,
                option: o1,
            },
            Target::Fio {
                cgroup: c2,
                option: o2,
            },
        ) if c1 == c2 && (o1.is_none() || o2.is_none() || o1 == o2) => match (o1, o2) {
            (Some(o), Some(_)) => format!("both write fio option `{o}`"),
            _ => "both write the same fio text".to_string(),
        },
        (Target::Key(p1), Target::Key(p2)) => {
            let n = p1.len().min(p2.len());
            if p1[..n] == p2[..n] {
                "one writes inside the other's table".to_string()
            } else if p2 == &["device", "model"] && p1.first().is_some_and(|t| t == "device") {
                "a new device.model replaces the whole [device] table; give --set device.model first".to_string()
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(format!(
        "--set {} and --set {}: {what}, so a point would not hold the value its record names; sweep one of them, or write the combinations as variants",
        later.key, earlier.key
    ))
}

fn as_string_mut(v: &mut Value) -> Option<&mut String> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// The table of the root (`[root]`, created if missing) or of cgroup `name`.
fn owner_table<'a>(t: &'a mut Table, cgroup: Option<&str>) -> Option<&'a mut Table> {
    match cgroup {
        None => {
            let e = t
                .entry("root")
                .or_insert_with(|| Value::Table(Table::new()));
            e.as_table_mut()
        }
        Some(name) => t
            .get_mut("cgroup")?
            .as_table_mut()?
            .get_mut(name)?
            .as_table_mut(),
    }
}

/// Set `path` (tables, then the key) to `v`, creating tables on the way. A new
/// `device.model` replaces the whole `[device]` table, as a variant's does.
fn set_key(t: &mut Table, path: &[String], v: Value) {
    let (key, tables) = path.split_last().expect("a key path is never empty");
    let mut cur = t;
    for name in tables {
        let e = cur
            .entry(name.clone())
            .or_insert_with(|| Value::Table(Table::new()));
        if !e.is_table() {
            *e = Value::Table(Table::new());
        }
        cur = e.as_table_mut().expect("made a table just above");
    }
    if tables == ["device"] && key == "model" && cur.get("model") != Some(&v) {
        cur.clear();
    }
    cur.insert(key.clone(), v);
}

/// `line` with token `key=value` replaced, or appended when the line has none.
pub(crate) fn set_token(line: &str, key: &str, value: &str) -> String {
    let mut found = false;
    let mut words: Vec<String> = line
        .split_whitespace()
        .map(|w| match w.split_once('=') {
            Some((k, _)) if k == key => {
                found = true;
                format!("{key}={value}")
            }
            _ => w.to_string(),
        })
        .collect();
    if !found {
        words.push(format!("{key}={value}"));
    }
    words.join(" ")
}

/// A fio command line or job file with option `opt` set to `value` in every job (see
/// the module's design).
fn set_fio_option(text: &str, opt: &str, value: &str) -> Result<String, String> {
    let same = |k: &str| option_name(k.trim()) == Some(opt);
    if is_cmdline(text) {
        let t = text.trim();
        let prefixed = t.starts_with("fio");
        let mut words = split_shell_words(t.strip_prefix("fio").unwrap_or(t))?;
        let mut found = false;
        for w in words.iter_mut() {
            let Some(o) = w.strip_prefix("--") else {
                continue;
            };
            let k = o.split_once('=').map(|x| x.0).unwrap_or(o);
            if same(k) {
                *w = format!("--{k}={value}");
                found = true;
            }
        }
        if !found {
            // before the first --name: a global option, which every job starts from
            words.insert(0, format!("--{opt}={value}"));
        }
        let mut out: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        if prefixed {
            out.insert(0, "fio".into());
        }
        return Ok(out.join(" "));
    }
    let mut found = false;
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            let t = line.trim_start();
            let indent = &line[..line.len() - t.len()];
            let k = t.split_once('=').map(|x| x.0).unwrap_or(t);
            if !t.starts_with(['[', ';', '#']) && !t.is_empty() && same(k) {
                found = true;
                format!("{indent}{}={value}", k.trim())
            } else {
                line.to_string()
            }
        })
        .collect();
    if !found {
        let at = lines.iter().position(|l| l.trim() == "[global]");
        match at {
            Some(i) => lines.insert(i + 1, format!("{opt}={value}")),
            None => {
                lines.insert(0, format!("{opt}={value}"));
                lines.insert(0, "[global]".into());
            }
        }
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// Where KEY points (see the module's design for the grammar).
fn parse_key(key: &str) -> Result<Target, String> {
    let bad = || format!("not a sweepable key; accepted: {}", key_forms());
    let rest_of = |p: &str| key.strip_prefix(p).filter(|r| !r.is_empty());
    let path = |tables: &[&str], k: &str| {
        let mut p: Vec<String> = tables.iter().map(|s| s.to_string()).collect();
        p.push(k.to_string());
        Target::Key(p)
    };
    match key {
        "variant" => return Ok(Target::Variant),
        "duration" => return Ok(path(&[], "duration")),
        "seed" => {
            return Err(
                "seeds are their own axis: use --seeds N (the scenario's seed, then the next N-1)"
                    .into(),
            );
        }
        _ => {}
    }
    if let Some(a) = rest_of("device.iosched.") {
        // an elevator's queue/iosched/ file: [device.iosched] NAME
        if !registry::ELEVATORS
            .iter()
            .any(|e| e.attributes.contains(&a))
        {
            let all: Vec<&str> = registry::ELEVATORS
                .iter()
                .flat_map(|e| e.attributes.iter().copied())
                .collect();
            return Err(format!(
                "no elevator has queue/iosched/{a}; accepted: {}",
                all.join(", ")
            ));
        }
        return Ok(path(&["device", "iosched"], a));
    }
    if let Some(k) = rest_of("device.") {
        return Ok(path(&["device"], k));
    }
    if let Some(k) = rest_of("host.") {
        return Ok(path(&["host"], k));
    }
    if let Some(k) = rest_of("state.") {
        return Ok(path(&["state"], k));
    }
    if let Some(k) = rest_of("sysctl.vm.") {
        return Ok(path(&["sysctl", "vm"], k));
    }
    if let Some(k) = rest_of("kernel.") {
        if let Some(c) = k.strip_prefix("config.").filter(|c| !c.is_empty()) {
            return Ok(path(&["kernel", "config"], c));
        }
        if ["version", "hz"].contains(&k) || registry::is_switch(k) {
            return Ok(path(&["kernel"], k));
        }
        let switches: Vec<String> = registry::switch_prefixes()
            .map(|p| format!("kernel.{p}*"))
            .collect();
        return Err(format!(
            "unknown kernel key; accepted: kernel.version, kernel.hz, kernel.config.NAME, and the switches {}",
            switches.join(", ")
        ));
    }
    if let Some(r) = rest_of("root.") {
        let (file, token) = split_token(r);
        return match registry::cgroup_file(file) {
            Some((_, f)) if f.on_root() => line_target(None, f, token),
            _ => {
                let forms: Vec<String> = registry::cgroup_files()
                    .filter(|f| f.on_root())
                    .map(|f| file_form("root.", f))
                    .collect();
                Err(format!(
                    "the root has no file `{file}`; accepted: {}",
                    forms.join(", ")
                ))
            }
        };
    }
    if let Some(r) = rest_of("cgroup.") {
        // the memory controller's limit, a key of the cgroup's table (not an io file)
        if let Some(cgroup) = r.strip_suffix(".memory.max").filter(|c| !c.is_empty()) {
            return Ok(path(&["cgroup", cgroup], "memory.max"));
        }
        // the file is found from the end: a cgroup's name may hold dots
        // each child file as `.NAME`, and the fio text (None)
        let files: Vec<(String, Option<&'static CgroupFile>)> = registry::cgroup_files()
            .filter(|f| f.on_children())
            .map(|f| (format!(".{}", f.name), Some(f)))
            .chain([(".fio".to_string(), None)])
            .collect();
        let found = files
            .iter()
            .filter_map(|(dotted, f)| {
                r.match_indices(dotted.as_str())
                    .filter(|(i, _)| {
                        let end = i + dotted.len();
                        end == r.len() || r[end..].starts_with(':')
                    })
                    .last()
                    .map(|(i, _)| (i, *f))
            })
            .max_by_key(|(i, _)| *i);
        let Some((i, f)) = found.filter(|(i, _)| *i > 0) else {
            let forms: Vec<String> = registry::cgroup_files()
                .filter(|f| f.on_children())
                .map(|f| file_form("cgroup.NAME.", f))
                .collect();
            return Err(format!(
                "expected {}, or cgroup.NAME.fio[:OPTION]",
                forms.join(", ")
            ));
        };
        let cgroup = r[..i].to_string();
        let (_, token) = split_token(&r[i + 1..]);
        return match f {
            Some(f) => line_target(Some(cgroup), f, token),
            None => {
                let option = match token {
                    None => None,
                    Some(o) => Some(
                        option_name(o)
                            .ok_or_else(|| format!("fio has no option `{o}`"))?
                            .to_string(),
                    ),
                };
                Ok(Target::Fio { cgroup, option })
            }
        };
    }
    Err(bad())
}

/// `FILE` and `TOKEN` of `FILE[:TOKEN]`.
fn split_token(s: &str) -> (&str, Option<&str>) {
    match s.split_once(':') {
        Some((f, t)) => (f, Some(t)),
        None => (s, None),
    }
}

fn line_target(
    cgroup: Option<String>,
    f: &'static CgroupFile,
    token: Option<&str>,
) -> Result<Target, String> {
    let (file, tokens) = (f.name, f.tokens);
    if let Some(t) = token
        && !tokens.contains(&t)
    {
        return Err(if tokens.is_empty() {
            format!("{file} has no key=value tokens: set its whole line")
        } else {
            format!("{file} has no token `{t}`; accepted: {}", tokens.join(", "))
        });
    }
    Ok(Target::Line {
        cgroup,
        file,
        token: token.map(str::to_string),
    })
}

/// The values of `V1,V2,...`: commas separate, `\,` is a comma and `\\` a backslash.
fn split_values(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n @ (',' | '\\')) => cur.push(n),
                Some(n) => {
                    cur.push('\\');
                    cur.push(n);
                }
                None => cur.push('\\'),
            },
            ',' => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    if out.iter().any(|v| v.trim().is_empty()) {
        return Err(format!(
            "`{s}`: an empty value; give values separated by commas (V1,V2,...; \\, for a comma inside one)"
        ));
    }
    Ok(out.into_iter().map(|v| v.trim().to_string()).collect())
}

/// What a value must look like for its place, before the scenario checks its meaning.
fn check_value(t: &Target, v: &str) -> Result<(), String> {
    if v.contains('\n') {
        return Err("a value is one line".into());
    }
    let one_word = |what: &str| {
        if v.contains(char::is_whitespace) || v.contains('=') {
            Err(format!(
                "{what} is one word without `=` (the whole line is set by the key without `:`)"
            ))
        } else {
            Ok(())
        }
    };
    match t {
        Target::Line { token: Some(_), .. } => one_word("a token's value"),
        Target::Fio {
            option: Some(_), ..
        } => {
            if v.contains('\'') && v.contains('"') {
                Err("an fio option's value cannot hold both quote characters".into())
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn keys_name_their_place() {
        let t = |k: &str| parse_key(k).unwrap();
        assert_eq!(
            t("kernel.throttle.iops_wait"),
            Target::Key(vec!["kernel".into(), "throttle.iops_wait".into()])
        );
        assert_eq!(
            t("kernel.config.throttling_low"),
            Target::Key(vec![
                "kernel".into(),
                "config".into(),
                "throttling_low".into()
            ])
        );
        assert_eq!(
            t("cgroup.a.b.memory.max"),
            Target::Key(vec!["cgroup".into(), "a.b".into(), "memory.max".into()])
        );
        assert_eq!(
            t("sysctl.vm.dirty_ratio"),
            Target::Key(vec!["sysctl".into(), "vm".into(), "dirty_ratio".into()])
        );
        assert_eq!(
            t("state.iocost.vrate"),
            Target::Key(vec!["state".into(), "iocost.vrate".into()])
        );
        assert_eq!(
            t("root.io.cost.qos:max"),
            Target::Line {
                cgroup: None,
                file: "io.cost.qos",
                token: Some("max".into())
            }
        );
        // a cgroup whose name holds dots and the file's own name
        assert_eq!(
            t("cgroup.web/x.fio.fio:blocksize"),
            Target::Fio {
                cgroup: "web/x.fio".into(),
                option: Some("bs".into())
            }
        );
        assert_eq!(
            t("cgroup.a.io.max"),
            Target::Line {
                cgroup: Some("a".into()),
                file: "io.max",
                token: None
            }
        );
        for (bad, says) in [
            ("seed", "--seeds"),
            ("devise.iops", "accepted:"),
            ("root.io.max", "root has"),
            ("cgroup.a.io.max:rlat", "accepted: rbps"),
            ("cgroup.a.io.weight:default", "whole line"),
            ("cgroup.a.fio:iodepht", "no option `iodepht`"),
            ("cgroup.io.max", "expected cgroup.NAME"),
            ("kernel.nope", "kernel.version"),
        ] {
            let e = parse_key(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn values_split_on_unescaped_commas() {
        assert_eq!(split_values("1,2, 3").unwrap(), ["1", "2", "3"]);
        assert_eq!(split_values(r"4k\,64k,8k").unwrap(), ["4k,64k", "8k"]);
        assert!(split_values("1,,2").is_err());
        assert!(Axis::parse("root.io.cost.qos:max=1 0").is_err());
        assert!(Axis::parse("device.iops").unwrap_err().contains("KEY=V1"));
    }

    #[test]
    fn tokens_are_replaced_or_appended() {
        let a = Axis::parse("root.io.cost.qos:max=50").unwrap();
        let mut t = table("[root]\n\"io.cost.qos\" = \"8:0 enable=1 min=80 max=100\"\n");
        a.apply(&mut t, "50").unwrap();
        assert_eq!(
            t["root"]["io.cost.qos"].as_str(),
            Some("8:0 enable=1 min=80 max=50")
        );
        let a = Axis::parse("cgroup.b.io.max:riops=7").unwrap();
        let mut t = table("[cgroup.b]\n\"io.max\" = [\"8:0 wbps=9\"]\n");
        a.apply(&mut t, "7").unwrap();
        assert_eq!(
            t["cgroup"]["b"]["io.max"][0].as_str(),
            Some("8:0 wbps=9 riops=7")
        );
        // no line to hold the token
        let mut t = table("[cgroup.b]\nfio = \"fio --name=b\"\n");
        assert!(a.apply(&mut t, "7").unwrap_err().contains("whole line"));
    }

    #[test]
    fn fio_options_are_rewritten_under_any_spelling() {
        assert_eq!(
            set_fio_option("fio --name=a --blocksize=4k --rw=read", "bs", "64k").unwrap(),
            "fio --name=a --blocksize=64k --rw=read"
        );
        assert_eq!(
            set_fio_option("fio --name=a --rw=read", "iodepth", "8").unwrap(),
            "fio --iodepth=8 --name=a --rw=read"
        );
        let jf = "[global]\nioengine=libaio\n[a]\nbs = 4k\n";
        assert_eq!(
            set_fio_option(jf, "bs", "8k").unwrap(),
            "[global]\nioengine=libaio\n[a]\nbs=8k\n"
        );
        assert_eq!(
            set_fio_option(jf, "iodepth", "2").unwrap(),
            "[global]\niodepth=2\nioengine=libaio\n[a]\nbs = 4k\n"
        );
        assert_eq!(
            set_fio_option("[a]\nrw=read", "iodepth", "2").unwrap(),
            "[global]\niodepth=2\n[a]\nrw=read"
        );
    }

    #[test]
    fn a_new_device_model_is_a_new_device() {
        let a = Axis::parse("device.model=ssd").unwrap();
        let mut t = table("[device]\nmodel = \"nullb\"\nirqmode = 2\n");
        a.apply(&mut t, "ssd").unwrap();
        assert_eq!(t["device"].as_table().unwrap().len(), 1);
        let a = Axis::parse("kernel.version=6.10").unwrap();
        a.apply(&mut t, "6.10").unwrap();
        assert_eq!(t["kernel"]["version"].as_str(), Some("6.10"));
    }
}
