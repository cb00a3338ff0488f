//! Job file and command line syntax → sections → resolved jobs.
//!
//! Mirrors init.c `parse_jobs_ini()` (sections, comments, `include`, options outside
//! a section refused), options.c `dup_and_sub_options()` (`${VAR}`, then the reserved
//! `$pagesize`/`$mb_memory`/`$ncpus` and `bc` arithmetic on them; job files only, as
//! in fio), init.c `parse_cmd_line()` (`getopt_long_only()`: `--name=` starts a job,
//! `--name=global` the global section, options before any `--name` are global, a long
//! option may start with one dash, one that needs a value and has no `=` takes the next
//! word) and init.c `add_job()` (numjobs clones, group ids).
//!
//! Moving parts: [`Builder`] holds the global spec and the group-id counters and
//! turns each finished section into jobs; [`read_ini`] flattens one file (and its
//! includes) into sections of [`Entry`]s that remember their file and line. A
//! [`Reader`] says where `${VAR}` and named files come from, which lines errors may
//! quote and whether the caller acts on fio's `--output-format`; an [`Origin`] maps the text's lines to its file's (fio text inside a
//! scenario).

use std::borrow::Cow;
use std::rc::Rc;

use super::apply::{self, Outcome};
use super::units;
use super::{FioError, FioJobs, JobSpec, SIM_MB_MEMORY, SIM_NCPUS, SIM_PAGESIZE};

/// Maximum include nesting (guards against `include` loops).
const MAX_INCLUDE_DEPTH: usize = 16;

/// fio program options (init.c `l_opts`) that are not job options: accepted on the
/// command line with a warning.
pub const PROGRAM_OPTIONS: &[&str] = &[
    "output",
    "output-format",
    "minimal",
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

/// The [`PROGRAM_OPTIONS`] acting as fio honours wherever they are on the command
/// line, as fio does (init.c `parse_cmd_line()` reads every option, before the job
/// options or after them): `blkcg-sim fio` prints in the last `--output-format` of its
/// fio arguments ([`program_option`]), and a [`Reader`] that
/// [`honours_program_options`](Reader::honours_program_options) reads them without
/// the "ignored" warning the others get.
pub const HONOURED_PROGRAM_OPTIONS: &[&str] = &["output-format"];

/// The [`PROGRAM_OPTIONS`] getopt gives no argument or an optional one (init.c
/// `l_opts`): a value only after `=`. The others take the next word without one.
const PROGRAM_FLAGS: &[&str] = &[
    "minimal",
    "append-terse",
    "showcmd",
    "readonly",
    "parse-only",
    "warnings-fatal",
    "bandwidth-log",
];

/// What `${VAR}` in a job file expands to (options.c `fio_option_dup_subs()`).
#[derive(Clone, Copy)]
pub enum Env<'a> {
    /// The variable's value from this lookup (acting as fio: the process
    /// environment); an unset one expands to nothing, as in fio, with a warning.
    Vars(&'a dyn Fn(&str) -> Option<String>),
    /// No expansion: `${VAR}` is an error naming the variable. Scenarios read no
    /// environment, so that the same scenario gives the same output on any machine.
    Off,
}

/// How fio text is read: `${VAR}`, the files it names, and what errors may quote.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    pub env: Env<'a>,
    /// The text of a file named by path: an `include`, or a job file named on a
    /// command line.
    pub read_file: &'a dyn Fn(&str) -> Result<String, String>,
    /// Whether an error may quote a line of a job file named on a command line: yes
    /// acting as fio (the user's own file, which fio quotes too), no for a scenario. A
    /// line of an `include`d file is never quoted: any file on the machine can be
    /// included, and the first line of one that is not a job file is the error.
    pub quote_job_files: bool,
    /// Whether the caller acts on the [`HONOURED_PROGRAM_OPTIONS`] (acting as fio): yes
    /// for `blkcg-sim fio`, no for a scenario, whose output is `run`'s to choose.
    pub honours_program_options: bool,
}

impl Reader<'static> {
    /// Acting as fio: `${VAR}` from the process environment, files from the file
    /// system, job files named on a command line quoted in errors, the
    /// [`HONOURED_PROGRAM_OPTIONS`] the caller's.
    pub fn fio() -> Self {
        Reader {
            env: Env::Vars(&process_env),
            read_file: &read_fs,
            quote_job_files: true,
            honours_program_options: true,
        }
    }

    /// A scenario's fio text: no environment, files from the file system, none of
    /// them quoted in errors.
    pub fn scenario() -> Self {
        Reader {
            env: Env::Off,
            read_file: &read_fs,
            quote_job_files: false,
            honours_program_options: false,
        }
    }
}

fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// Reads at most this much of a named file: more is no job file (and an `include` of
/// `/dev/zero` must not eat the memory).
const MAX_FILE: u64 = 16 << 20;

fn read_fs(path: &str) -> Result<String, String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE + 1).read_to_string(&mut text))
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE {
        return Err(format!(
            "larger than {} MiB: not a job file",
            MAX_FILE >> 20
        ));
    }
    Ok(text)
}

/// Where fio text is written, for messages and relative includes.
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    /// The file, named in messages; a relative `include` is read from its folder.
    pub file: &'a str,
    /// The file's line of each line of the text (of each argument of a command line)
    /// when the text is part of the file, as a scenario's `fio` string is; empty
    /// when the text is the whole file.
    pub lines: &'a [usize],
}

impl Origin<'_> {
    /// The file's line of line (argument) `n` of the text, 1-based.
    fn line(&self, n: usize) -> usize {
        let i = n.saturating_sub(1).min(self.lines.len().saturating_sub(1));
        self.lines.get(i).copied().unwrap_or(n)
    }
}

/// One `key[=value]` with where it was written.
#[derive(Debug, Clone)]
struct Entry {
    key: String,
    val: Option<String>,
    /// The file it was written in, shared by every entry of the file.
    file: Rc<str>,
    line: usize,
    /// Whether an error may quote the line (see [`Reader::quote_job_files`]).
    quote: bool,
    /// Warnings about how it was written (see [`split_entry`], [`substitute`]).
    notes: Vec<String>,
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

/// An error's message: `quoted` when it may quote the line, else `plain`, which says
/// what went wrong without it.
fn quoting(quote: bool, quoted: String, plain: &str) -> String {
    if quote {
        quoted
    } else {
        format!("{plain} (the line is not quoted: the file may not be a job file)")
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
            let msg = quoting(
                e.quote,
                format!("Bad option <{whole}>: not an fio option (see `fio --cmdhelp`)"),
                "not an fio option",
            );
            return Err(err(&e.file, e.line, msg));
        }
        let mut notes = e.notes.clone();
        let r = apply::apply(spec, key, e.val.as_deref(), &mut notes).map_err(|m| {
            let msg = quoting(
                e.quote,
                format!("{}: {m}", e.key),
                &format!("{key}: not a valid value"),
            );
            // an unset `${VAR}` left the value this option refuses: say that first
            let msg = match e
                .notes
                .iter()
                .find(|n| n.contains("is not set in the environment"))
            {
                Some(n) => format!("{n}, so {msg}"),
                None => msg,
            };
            err(&e.file, e.line, msg)
        })?;
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

    /// An applied entry as fio's JSON lists it ("job options").
    fn record(e: Entry) -> (String, String) {
        (e.key, e.val.unwrap_or_default())
    }

    fn global_entries(&mut self, entries: Vec<Entry>, sorted: bool) -> Result<(), FioError> {
        let mut g = std::mem::take(&mut self.global);
        let r = if sorted {
            self.apply_sorted(&mut g, &entries)
        } else {
            entries.iter().try_for_each(|e| self.apply_entry(&mut g, e))
        };
        self.global = g;
        r?;
        self.out
            .global_options
            .extend(entries.into_iter().map(Self::record));
        Ok(())
    }

    fn job(&mut self, name: String, entries: Vec<Entry>, sorted: bool) -> Result<(), FioError> {
        let mut spec = self.global.clone();
        spec.name = name;
        if sorted {
            self.apply_sorted(&mut spec, &entries)?;
        } else {
            for e in &entries {
                self.apply_entry(&mut spec, e)?;
            }
        }
        spec.options = entries.into_iter().map(Self::record).collect();
        apply::fixup(&mut spec);
        self.add_job(spec);
        Ok(())
    }

    /// init.c `add_job()`: the job, then `numjobs - 1` clones (fio numbers them
    /// `subjob_number` n-1 down to 1) with stonewall/new_group cleared; a job with
    /// stonewall or new_group opens a new group if the current one has jobs.
    fn add_job(&mut self, spec: JobSpec) {
        let n = spec.numjobs;
        // exactly as many as there are: a Vec's first push would make room for four
        self.out.jobs.reserve_exact(n as usize);
        let mut clones = Vec::with_capacity(n.saturating_sub(1) as usize);
        for sub in (1..n).rev() {
            let mut c = spec.clone();
            c.numjobs = 1;
            c.stonewall = false;
            c.new_group = false;
            c.clone_index = sub;
            clones.push(c);
        }
        let mut first = spec;
        first.clone_index = 0;
        for mut j in std::iter::once(first).chain(clones) {
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
                self.global_entries(s.entries, true)?;
            } else {
                self.job(s.name, s.entries, true)?;
            }
        }
        Ok(())
    }
}

/// fio's substitutions in a job-file line (options.c `dup_and_sub_options()`):
/// `${VAR}` (`fio_option_dup_subs()`, answered by `env`), then the reserved
/// `$pagesize`, `$mb_memory`, `$ncpus` (`fio_keyword_replace()`, with the simulated
/// machine's values), after which a value holding `+ - * /` (and no `'`) is computed
/// as fio's `bc_calc()` has `bc` compute it (`size=8*$mb_memory`). Warnings go to
/// `notes`.
fn substitute(s: &str, env: Env, notes: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        let body = &rest[i + 2..];
        let Some(end) = body.find('}') else { break };
        out.push_str(&rest[..i]);
        let name = &body[..end];
        match env {
            Env::Off => {
                return Err(format!(
                    "`${{{name}}}`: environment variables are not expanded in scenarios (the \
                     same scenario gives the same output on any machine); write the value"
                ));
            }
            Env::Vars(get) => match get(name) {
                Some(v) => out.push_str(&v),
                None => notes.push(format!(
                    "`${{{name}}}` is not set in the environment: it expands to nothing, as in fio"
                )),
            },
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    let mut replaced = false;
    for (word, value) in [
        ("$pagesize", SIM_PAGESIZE),
        ("$mb_memory", SIM_MB_MEMORY),
        ("$ncpus", SIM_NCPUS),
    ] {
        if out.contains(word) {
            out = out.replace(word, &value.to_string());
            replaced = true;
        }
    }
    if replaced
        && !out.contains('\'')
        && out.contains(['+', '-', '*', '/'])
        && let Some((key, val)) = out.split_once('=')
    {
        let v = units::eval_bc(val).map_err(|m| {
            format!(
                "{}: {m} (fio computes a value with $pagesize, $mb_memory or $ncpus and \
                 + - * / with bc)",
                key.trim()
            )
        })?;
        out = format!("{key}={v}");
    }
    Ok(out)
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

/// A job-file line (comment cut, substitutions done) as an entry.
fn job_line(
    text: &str,
    file: &Rc<str>,
    line: usize,
    quote: bool,
    env: Env,
) -> Result<Entry, FioError> {
    let mut notes = Vec::new();
    let text = substitute(strip_comment(text), env, &mut notes).map_err(|m| {
        let msg = quoting(
            quote,
            m,
            "a `${VAR}` or `$keyword` on this line cannot be substituted",
        );
        err(file, line, msg)
    })?;
    Ok(split_entry(&text, file, line, quote, notes))
}

/// `key[=value]` as an entry.
fn split_entry(
    text: &str,
    file: &Rc<str>,
    line: usize,
    quote: bool,
    mut notes: Vec<String>,
) -> Entry {
    let (key, val) = match text.split_once('=') {
        Some((k, v)) => (k.trim().to_string(), Some(v)),
        None => (text.trim().to_string(), None),
    };
    // fio keeps the blank after `=` in the value, so a number's unit suffix is
    // lost there (checked with fio 3.33: `bs = 1MiB` runs 1-byte I/Os). We trim
    // and warn.
    if val.is_some_and(|v| v.starts_with(|c: char| c.is_ascii_whitespace())) {
        notes.push(format!(
            "blank after `=` in `{}`: fio keeps it and then drops a number's unit \
             suffix (`bs = 1MiB` is 1 byte in fio); blkcg-sim trims it",
            text.trim()
        ));
    }
    Entry {
        key,
        val: val.map(|v| v.trim().to_string()),
        file: Rc::clone(file),
        line,
        quote,
        notes,
    }
}

/// Directory part of `path` joined with a relative `inc` (fio resolves includes
/// relative to the including file; it tries the working folder first, which would
/// make a scenario's meaning depend on where it is run from).
pub fn include_path(path: &str, inc: &str) -> String {
    if inc.starts_with('/') {
        return inc.to_string();
    }
    match path.rfind('/') {
        Some(i) => format!("{}/{}", &path[..i], inc),
        None => inc.to_string(),
    }
}

/// Flatten one file (recursing into includes) into `secs`. Included files (`depth` >
/// 0) may hold no sections, as in fio, and are never quoted; `quote` says whether
/// errors may quote this one's lines.
fn read_ini(
    rd: &Reader,
    text: &str,
    at: &Origin,
    depth: usize,
    quote: bool,
    secs: &mut Vec<Section>,
) -> Result<(), FioError> {
    let path = at.file;
    let file: Rc<str> = Rc::from(path);
    for (idx, raw) in text.lines().enumerate() {
        let line = at.line(idx + 1);
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(inc) = l
            .strip_prefix("include")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_whitespace()))
        {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(err(
                    path,
                    line,
                    format!("include nesting deeper than {MAX_INCLUDE_DEPTH} (include loop?)"),
                ));
            }
            let full = include_path(path, inc.trim());
            let body = (rd.read_file)(&full).map_err(|e| {
                let msg = quoting(
                    quote,
                    format!("cannot include `{full}`: {e}"),
                    &format!("cannot include the file this line names: {e}"),
                );
                err(path, line, msg)
            })?;
            let inner = Origin {
                file: &full,
                lines: &[],
            };
            read_ini(rd, &body, &inner, depth + 1, false, secs)?;
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
                let msg = quoting(
                    quote,
                    format!("bad section header `{l}`; expected `[name]`"),
                    "bad section header; expected `[name]`",
                );
                return Err(err(path, line, msg));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(err(
                    path,
                    line,
                    "empty section name `[]`; expected `[name]`",
                ));
            }
            secs.push(Section {
                name: name.to_string(),
                entries: Vec::new(),
            });
            continue;
        }
        let Some(sec) = secs.last_mut() else {
            let msg = quoting(
                quote,
                format!(
                    "option `{l}` outside of a [] job section; start one with `[global]` or `[jobname]`"
                ),
                "an option outside of a [] job section",
            );
            return Err(err(path, line, msg));
        };
        sec.entries.push(job_line(l, &file, line, quote, rd.env)?);
    }
    Ok(())
}

/// Parse a fio job file: `text`, written at `at`, read as `rd` says.
pub fn parse_jobfile(text: &str, at: &Origin, rd: &Reader) -> Result<FioJobs, FioError> {
    let mut b = Builder::new();
    jobfile_into(&mut b, rd, text, at, true)?;
    Ok(b.out)
}

fn jobfile_into(
    b: &mut Builder,
    rd: &Reader,
    text: &str,
    at: &Origin,
    quote: bool,
) -> Result<(), FioError> {
    let mut secs = Vec::new();
    read_ini(rd, text, at, 0, quote, &mut secs)?;
    b.sections(secs)
}

/// Whether `name` is a long option fio's getopt knows: a job option or a program
/// option.
fn long_option(name: &str) -> bool {
    PROGRAM_OPTIONS.contains(&name) || apply::is_known(apply::canonical(name))
}

/// Whether getopt gives command-line option `--key` a required argument, which
/// without `=` is the next word (init.c `l_opts`; options.c `add_to_lopt()`: every
/// job option but the flags).
fn takes_next_word(key: &str) -> bool {
    if PROGRAM_OPTIONS.contains(&key) {
        return !PROGRAM_FLAGS.contains(&key);
    }
    let key = apply::canonical(key);
    apply::is_known(key) && !apply::is_flag(key)
}

/// The command line as fio's `getopt_long_only()` reads it, each option written
/// `--key[=value]`: a long option may start with one dash (`-rw=read`), and one that
/// requires a value and has no `=` takes the next word (`--bs 4k` is `--bs=4k`). Each
/// with the index of its first word. An option missing its value at the end stays as
/// written.
pub fn getopt_words(args: &[String]) -> Vec<(usize, Cow<'_, str>)> {
    let mut out = Vec::with_capacity(args.len());
    let mut words = args.iter().enumerate();
    while let Some((i, a)) = words.next() {
        let long = a.strip_prefix("--").or_else(|| {
            a.strip_prefix('-')
                .filter(|o| long_option(o.split_once('=').map_or(o, |(k, _)| k)))
        });
        // a word already written `--key[=value]` is taken as it is
        let word = match long {
            Some(opt) if !opt.contains('=') && takes_next_word(opt) => match words.next() {
                Some((_, v)) => Cow::Owned(format!("--{opt}={v}")),
                None => Cow::Owned(format!("--{opt}")),
            },
            Some(_) if a.starts_with("--") => Cow::Borrowed(a.as_str()),
            Some(opt) => Cow::Owned(format!("--{opt}")),
            None => Cow::Borrowed(a.as_str()),
        };
        out.push((i, word));
    }
    out
}

/// Parse a fio command line (the arguments after `fio`), written at `at` (its lines
/// are per argument): `--name=x` starts a job, `--name=global` the global section,
/// options before any `--name` are global; `-bs 4k` is `--bs=4k`, as getopt reads
/// it ([`getopt_words`]). A bare argument is a job file read through `rd` and parsed
/// after the command-line jobs, starting from the command line's global options.
/// `${VAR}` and fio's keywords are substituted only inside job files, as fio does: in
/// arguments the shell already did it.
pub fn parse_cmdline_with(args: &[String], at: &Origin, rd: &Reader) -> Result<FioJobs, FioError> {
    let file = at.file;
    let file_rc: Rc<str> = Rc::from(file);
    let mut b = Builder::new();
    let mut files = Vec::new();
    // (name, entries) of the section being collected; None = global.
    let mut cur: (Option<String>, Vec<Entry>) = (None, Vec::new());
    let flush = |b: &mut Builder, cur: &mut (Option<String>, Vec<Entry>)| {
        let (name, entries) = std::mem::take(cur);
        match name {
            Some(n) if n != "global" => b.job(n, entries, false),
            _ => b.global_entries(entries, false),
        }
    };
    for (i, a) in getopt_words(args) {
        let line = at.line(i + 1);
        let Some(opt) = a.strip_prefix("--") else {
            if a.starts_with('-') {
                return Err(err(
                    file,
                    line,
                    format!(
                        "`{a}`: not an fio option; job options are written `--key=value` or `--key value`"
                    ),
                ));
            }
            files.push((line, a.into_owned()));
            continue;
        };
        if !opt.contains('=') && takes_next_word(opt) {
            return Err(err(
                file,
                line,
                format!(
                    "option `--{opt}` requires an argument: `--{opt}=VALUE` or `--{opt} VALUE`"
                ),
            ));
        }
        let e = split_entry(opt, &file_rc, line, true, Vec::new());
        if PROGRAM_OPTIONS.contains(&e.key.as_str()) {
            let honoured = HONOURED_PROGRAM_OPTIONS.contains(&e.key.as_str());
            if !(honoured && rd.honours_program_options) {
                b.out.warnings.push(format!(
                    "{file}:{line}: `--{}` is an fio program option, not a job option; ignored",
                    e.key
                ));
            }
            continue;
        }
        if e.key == "name" {
            let Some(n) = e.val.filter(|v| !v.is_empty()) else {
                return Err(err(file, line, "--name needs a job name (or `global`)"));
            };
            flush(&mut b, &mut cur)?;
            cur.0 = Some(n);
            continue;
        }
        cur.1.push(e);
    }
    flush(&mut b, &mut cur)?;
    for (line, f) in files {
        let text = (rd.read_file)(&f)
            .map_err(|e| err(file, line, format!("cannot read job file `{f}`: {e}")))?;
        let job_file = Origin {
            file: &f,
            lines: &[],
        };
        jobfile_into(&mut b, rd, &text, &job_file, rd.quote_job_files)?;
    }
    Ok(b.out)
}

/// The value of the last `--NAME=VALUE` among `args` as fio's getopt reads them
/// ([`getopt_words`]: `--NAME VALUE`, `-NAME=VALUE` too), None if there is none: a
/// program option given twice is the last, as fio's `parse_output_format()` starts
/// over each time.
pub fn program_option(args: &[String], name: &str) -> Option<String> {
    getopt_words(args).into_iter().rev().find_map(|(_, w)| {
        w.strip_prefix("--")
            .and_then(|o| o.strip_prefix(name))
            .and_then(|v| v.strip_prefix('='))
            .map(str::to_string)
    })
}

/// [`parse_cmdline_with`] acting as fio: arguments numbered as `<cmdline>:N`, job
/// files read from the file system (and quoted in errors), `${VAR}` from the process
/// environment.
pub fn parse_cmdline(args: &[String]) -> Result<FioJobs, FioError> {
    let at = Origin {
        file: "<cmdline>",
        lines: &[],
    };
    parse_cmdline_with(args, &at, &Reader::fio())
}
