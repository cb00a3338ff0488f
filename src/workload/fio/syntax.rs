//! Job file and command line syntax → sections → resolved jobs.
//!
//! Mirrors init.c `parse_jobs_ini()` (sections, comments, `include`, options outside
//! a section refused), parse.c `fio_option_dup_subs()` (`${VAR}` and the reserved
//! `$pagesize`/`$mb_memory`/`$ncpus`), init.c `parse_cmd_line()` (`--name=` starts a
//! job, `--name=global` the global section, options before any `--name` are global)
//! and init.c `add_job()` (numjobs clones, group ids).
//!
//! Moving parts: [`Builder`] holds the global spec and the group-id counters and
//! turns each finished section into jobs; [`read_ini`] flattens one file (and its
//! includes) into sections of [`Entry`]s that remember their file and line.

use super::apply::{self, Outcome};
use super::{FioError, FioJobs, JobSpec, SIM_MB_MEMORY, SIM_NCPUS, SIM_PAGESIZE};

/// Maximum include nesting (guards against `include` loops).
const MAX_INCLUDE_DEPTH: usize = 16;

/// fio program options (init.c `l_opts`) that are not job options: accepted on the
/// command line with a warning.
pub const PROGRAM_OPTIONS: &[&str] = &[
    "output",
    "output-format",
    "minimal",
    "json",
    "append-terse",
    "terse-version",
    "eta",
    "eta-interval",
    "eta-newline",
    "status-interval",
    "parse-only",
    "showcmd",
    "readonly",
    "debug",
    "warnings-fatal",
    "max-jobs",
    "latency-log",
    "bandwidth-log",
    "alloc-size",
    "section",
    "aux-path",
];

/// One `key[=value]` with where it was written.
#[derive(Debug, Clone)]
struct Entry {
    key: String,
    val: Option<String>,
    file: String,
    line: usize,
    /// A warning about how it was written (see [`parse_entry`]).
    note: Option<String>,
}

/// One `[name]` section.
#[derive(Debug)]
struct Section {
    name: String,
    entries: Vec<Entry>,
}

struct Builder {
    out: FioJobs,
    global: JobSpec,
    groupid: u32,
    prev_group_jobs: u32,
}

fn err(file: &str, line: usize, msg: impl Into<String>) -> FioError {
    FioError {
        file: file.to_string(),
        line,
        msg: msg.into(),
    }
}

impl Builder {
    fn new() -> Self {
        Builder {
            out: FioJobs::default(),
            global: JobSpec::default(),
            groupid: 0,
            prev_group_jobs: 0,
        }
    }

    /// Apply one entry to `spec`; unknown → error, known-unmodelled → warning.
    fn apply_entry(&mut self, spec: &mut JobSpec, e: &Entry) -> Result<(), FioError> {
        let key = apply::canonical(&e.key);
        if !apply::is_known(key) {
            let whole = match &e.val {
                Some(v) => format!("{}={}", e.key, v),
                None => e.key.clone(),
            };
            return Err(err(
                &e.file,
                e.line,
                format!("Bad option <{whole}>: not an fio option (see `fio --cmdhelp`)"),
            ));
        }
        let mut notes: Vec<String> = e.note.iter().cloned().collect();
        let r = apply::apply(spec, key, e.val.as_deref(), &mut notes)
            .map_err(|m| err(&e.file, e.line, format!("{}: {m}", e.key)))?;
        if let Outcome::Unmodelled = r {
            notes.push(format!(
                "option `{}` is an fio option blkcg-sim does not model; ignored",
                e.key
            ));
        }
        for n in notes {
            self.out
                .warnings
                .push(format!("{}:{}: {n}", e.file, e.line));
        }
        Ok(())
    }

    /// Apply a section's entries in fio's priority order (parse.c `sort_options()`).
    fn apply_sorted(&mut self, spec: &mut JobSpec, entries: &[Entry]) -> Result<(), FioError> {
        let mut order: Vec<&Entry> = entries.iter().collect();
        order.sort_by_key(|e| -apply::prio(&e.key));
        for e in order {
            self.apply_entry(spec, e)?;
        }
        Ok(())
    }

    fn record(e: &Entry) -> (String, String) {
        (e.key.clone(), e.val.clone().unwrap_or_default())
    }

    fn global_entries(&mut self, entries: &[Entry], sorted: bool) -> Result<(), FioError> {
        let mut g = std::mem::take(&mut self.global);
        let r = if sorted {
            self.apply_sorted(&mut g, entries)
        } else {
            entries.iter().try_for_each(|e| self.apply_entry(&mut g, e))
        };
        self.global = g;
        r?;
        self.out
            .global_options
            .extend(entries.iter().map(Self::record));
        Ok(())
    }

    fn job(&mut self, name: &str, entries: &[Entry], sorted: bool) -> Result<(), FioError> {
        let mut spec = self.global.clone();
        spec.name = name.to_string();
        if sorted {
            self.apply_sorted(&mut spec, entries)?;
        } else {
            for e in entries {
                self.apply_entry(&mut spec, e)?;
            }
        }
        spec.options = entries.iter().map(Self::record).collect();
        apply::fixup(&mut spec);
        self.add_job(spec);
        Ok(())
    }

    /// init.c `add_job()`: the job, then `numjobs - 1` clones (fio numbers them
    /// `subjob_number` n-1 down to 1) with stonewall/new_group cleared; a job with
    /// stonewall or new_group opens a new group if the current one has jobs.
    fn add_job(&mut self, spec: JobSpec) {
        let n = spec.numjobs;
        let mut clones = Vec::with_capacity(n as usize);
        let mut first = spec.clone();
        first.clone_index = 0;
        clones.push(first);
        for sub in (1..n).rev() {
            let mut c = spec.clone();
            c.numjobs = 1;
            c.stonewall = false;
            c.new_group = false;
            c.clone_index = sub;
            clones.push(c);
        }
        for mut j in clones {
            if (j.stonewall || j.new_group) && self.prev_group_jobs > 0 {
                self.prev_group_jobs = 0;
                self.groupid += 1;
            }
            j.groupid = self.groupid;
            self.prev_group_jobs += 1;
            self.out.jobs.push(j);
        }
    }

    fn sections(&mut self, secs: Vec<Section>) -> Result<(), FioError> {
        for s in secs {
            if s.name == "global" {
                self.global_entries(&s.entries, true)?;
            } else {
                self.job(&s.name, &s.entries, true)?;
            }
        }
        Ok(())
    }
}

/// Expand `${VAR}` (unset → empty) and the reserved `$pagesize`, `$mb_memory`,
/// `$ncpus` (parse.c `fio_option_dup_subs()` / `expand_reserved`).
fn expand(s: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(body) = tail.strip_prefix("${")
            && let Some(end) = body.find('}')
        {
            out.push_str(&env(&body[..end]).unwrap_or_default());
            rest = &body[end + 1..];
            continue;
        }
        let reserved = [
            ("$pagesize", SIM_PAGESIZE),
            ("$mb_memory", SIM_MB_MEMORY),
            ("$ncpus", SIM_NCPUS),
        ];
        if let Some((k, v)) = reserved.iter().find(|(k, _)| tail.starts_with(k)) {
            out.push_str(&v.to_string());
            rest = &tail[k.len()..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Cut a trailing ` ; comment` / ` # comment` (a `;`/`#` after whitespace). fio
/// keeps it in the value, where its number parsing then ignores it
/// (`numjobs=2  ; two copies` in fio's examples); cutting gives the same numbers
/// and keeps string values clean.
fn strip_comment(s: &str) -> &str {
    let b = s.as_bytes();
    for i in 1..b.len() {
        if (b[i] == b';' || b[i] == b'#') && b[i - 1].is_ascii_whitespace() {
            return s[..i].trim_end();
        }
    }
    s
}

fn parse_entry(text: &str, file: &str, line: usize, env: &dyn Fn(&str) -> Option<String>) -> Entry {
    let text = expand(strip_comment(text), env);
    let (key, val) = match text.split_once('=') {
        Some((k, v)) => (k.trim().to_string(), Some(v)),
        None => (text.trim().to_string(), None),
    };
    // fio keeps the blank after `=` in the value, so a number's unit suffix is
    // lost there (checked with fio 3.33: `bs = 1MiB` runs 1-byte I/Os). We trim
    // and warn.
    let note = val
        .filter(|v| v.starts_with(|c: char| c.is_ascii_whitespace()))
        .map(|_| {
            format!(
                "blank after `=` in `{}`: fio keeps it and then drops a number's unit \
                 suffix (`bs = 1MiB` is 1 byte in fio); blkcg-sim trims it",
                text.trim()
            )
        });
    Entry {
        key,
        val: val.map(|v| v.trim().to_string()),
        file: file.to_string(),
        line,
        note,
    }
}

/// Directory part of `path` joined with a relative `inc` (fio resolves includes
/// relative to the including file).
fn include_path(path: &str, inc: &str) -> String {
    if inc.starts_with('/') {
        return inc.to_string();
    }
    match path.rfind('/') {
        Some(i) => format!("{}/{}", &path[..i], inc),
        None => inc.to_string(),
    }
}

struct IniCtx<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    read_include: &'a dyn Fn(&str) -> Result<String, String>,
}

/// Flatten one file (recursing into includes) into `secs`. `in_include` forbids
/// sections, as fio does for included files.
fn read_ini(
    ctx: &IniCtx,
    text: &str,
    path: &str,
    depth: usize,
    secs: &mut Vec<Section>,
) -> Result<(), FioError> {
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(inc) = l
            .strip_prefix("include")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_whitespace()))
        {
            let inc = expand(inc.trim(), ctx.env);
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(err(
                    path,
                    line,
                    format!("include nesting deeper than {MAX_INCLUDE_DEPTH} (include loop?)"),
                ));
            }
            let full = include_path(path, &inc);
            let body = (ctx.read_include)(&full)
                .map_err(|e| err(path, line, format!("cannot include `{full}`: {e}")))?;
            read_ini(ctx, &body, &full, depth + 1, secs)?;
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            if depth > 0 {
                return Err(err(
                    path,
                    line,
                    "an included file may not contain [sections]; it may only hold options",
                ));
            }
            let Some(name) = rest.strip_suffix(']') else {
                return Err(err(
                    path,
                    line,
                    format!("bad section header `{l}`; expected `[name]`"),
                ));
            };
            let name = expand(name.trim(), ctx.env);
            if name.is_empty() {
                return Err(err(
                    path,
                    line,
                    "empty section name `[]`; expected `[name]`",
                ));
            }
            secs.push(Section {
                name,
                entries: Vec::new(),
            });
            continue;
        }
        let Some(sec) = secs.last_mut() else {
            return Err(err(
                path,
                line,
                format!(
                    "option `{l}` outside of a [] job section; start one with `[global]` or `[jobname]`"
                ),
            ));
        };
        sec.entries.push(parse_entry(l, path, line, ctx.env));
    }
    Ok(())
}

/// Parse a fio job file. `path` names it in errors and anchors relative includes;
/// `env` answers `${VAR}`; `read_include` returns an included file's text.
pub fn parse_jobfile(
    text: &str,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    read_include: &dyn Fn(&str) -> Result<String, String>,
) -> Result<FioJobs, FioError> {
    let mut b = Builder::new();
    let ctx = IniCtx { env, read_include };
    jobfile_into(&mut b, &ctx, text, path)?;
    Ok(b.out)
}

fn jobfile_into(b: &mut Builder, ctx: &IniCtx, text: &str, path: &str) -> Result<(), FioError> {
    let mut secs = Vec::new();
    read_ini(ctx, text, path, 0, &mut secs)?;
    b.sections(secs)
}

/// Parse a fio command line (the arguments after `fio`): `--name=x` starts a job,
/// `--name=global` the global section, options before any `--name` are global.
/// A bare argument is a job file read through `read_include` and parsed after the
/// command-line jobs, starting from the command line's global options.
/// `${VAR}` is expanded (through `env`) only inside job files: in arguments the
/// shell already did it.
pub fn parse_cmdline_with(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    read_include: &dyn Fn(&str) -> Result<String, String>,
) -> Result<FioJobs, FioError> {
    const FILE: &str = "<cmdline>";
    let mut b = Builder::new();
    let mut files = Vec::new();
    // (name, entries) of the section being collected; None = global.
    let mut cur: (Option<String>, Vec<Entry>) = (None, Vec::new());
    let no_env = |_: &str| None;
    let flush = |b: &mut Builder, cur: &mut (Option<String>, Vec<Entry>)| {
        let (name, entries) = std::mem::take(cur);
        match name {
            Some(n) if n != "global" => b.job(&n, &entries, false),
            _ => b.global_entries(&entries, false),
        }
    };
    for (i, a) in args.iter().enumerate() {
        let line = i + 1;
        let Some(opt) = a.strip_prefix("--") else {
            if a.starts_with('-') {
                return Err(err(
                    FILE,
                    line,
                    format!("`{a}`: job options are written `--key=value`"),
                ));
            }
            files.push((line, a.clone()));
            continue;
        };
        let e = parse_entry(opt, FILE, line, &no_env);
        if PROGRAM_OPTIONS.contains(&e.key.as_str()) {
            b.out.warnings.push(format!(
                "{FILE}:{line}: `--{}` is an fio program option, not a job option; ignored",
                e.key
            ));
            continue;
        }
        if e.key == "name" {
            let Some(n) = e.val.filter(|v| !v.is_empty()) else {
                return Err(err(FILE, line, "--name needs a job name (or `global`)"));
            };
            flush(&mut b, &mut cur)?;
            cur.0 = Some(n);
            continue;
        }
        cur.1.push(e);
    }
    flush(&mut b, &mut cur)?;
    let ctx = IniCtx { env, read_include };
    for (line, f) in files {
        let text = read_include(&f)
            .map_err(|e| err(FILE, line, format!("cannot read job file `{f}`: {e}")))?;
        jobfile_into(&mut b, &ctx, &text, &f)?;
    }
    Ok(b.out)
}

/// [`parse_cmdline_with`] reading job-file arguments from the real file system and
/// `${VAR}` from the process environment.
pub fn parse_cmdline(args: &[String]) -> Result<FioJobs, FioError> {
    parse_cmdline_with(args, &|v| std::env::var(v).ok(), &|p| {
        std::fs::read_to_string(p).map_err(|e| e.to_string())
    })
}
