//! Every `blkcg-sim` command the README and `docs/*.md` show, run as written.
//!
//! The commands are read from the documents' `sh` (and unlabelled) code blocks: a line
//! starting with `blkcg-sim` or `$ blkcg-sim` (optionally after `cd DIR &&`), with its
//! `\` continuation lines, the trailing `# comment` cut. Each runs through `sh` in a
//! fresh folder laid out as a user's would be:
//! - the files the documents name: `docs/examples/` (`my.toml`, `web.toml`,
//!   `fix.patch`), the fio JSON files the tour's `device fit --print-jobs` jobs write
//!   (this VM's, from `tests/data/fit/`, also copied there, as `docs/devices.md` names
//!   them), the block traces of `tests/data/trace/`, and the checkout's `patches/`
//!   and `scenarios/` (read only);
//! - a home of its own (`~/linux` is a stand-in kernel tree: the files that make one) and an
//!   empty cache (`BLKCG_SIM_CACHE`), holding only stand-in records of the kernel builds
//!   the documents name (`built:KEY`), since a real one takes 18 minutes to make;
//! - `SLURM_*` set as a Slurm array task would have them.
//!
//! What cannot run here runs as far as it can: `validate` and `kernel build` with
//! `--dry-run` (every check, no boot, no build; `tests/validate.rs` boots real kernels),
//! and a synopsis line (`SCENARIO`, `[--seeds N]`) has each option it names checked
//! against the command's `--help`. Every other command must exit 0, and where the
//! document shows its output (after a `$ ` prompt), print those lines in that order
//! (`...` stands for lines left out), so no document shows figures the tool no longer
//! prints.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One command of a document.
#[derive(Debug, Clone)]
struct DocCommand {
    /// `README.md:53`
    at: String,
    text: String,
    /// With `$ ` before it: the output the document shows (`...` for lines left out).
    shown: Vec<String>,
}

/// The documents whose commands run: the README and every `docs/*.md`.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, Path::new(ROOT).join("README.md"));
    docs
}

/// The commands of one document (see the module comment).
fn commands_of(doc: &Path) -> Vec<DocCommand> {
    let name = doc.strip_prefix(ROOT).unwrap().display().to_string();
    let text = std::fs::read_to_string(doc).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut block: Option<&str> = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(lang) = l.strip_prefix("```") {
            block = if block.is_some() {
                None
            } else {
                Some(lang.trim())
            };
        } else if matches!(block, Some("sh" | "bash" | "console" | "")) {
            let prompt = l.starts_with("$ ");
            let l = l.strip_prefix("$ ").unwrap_or(l);
            let after_cd = l
                .strip_prefix("cd ")
                .and_then(|r| r.split_once(" && "))
                .map(|(_, c)| c);
            if l.starts_with("blkcg-sim ") || after_cd.is_some_and(|c| c.starts_with("blkcg-sim "))
            {
                let at = format!("{name}:{}", i + 1);
                let mut cmd = l.to_string();
                while cmd.trim_end().ends_with('\\') && i + 1 < lines.len() {
                    i += 1;
                    cmd = format!(
                        "{} {}",
                        cmd.trim_end().trim_end_matches('\\'),
                        lines[i].trim()
                    );
                }
                let cmd = match cmd.find(" # ").or_else(|| cmd.find("  #")) {
                    Some(c) => cmd[..c].to_string(),
                    None => cmd,
                };
                // after a prompt, the output shown: up to the next prompt or the block's end
                let mut shown = Vec::new();
                while prompt
                    && i + 1 < lines.len()
                    && !lines[i + 1].starts_with("$ ")
                    && !lines[i + 1].starts_with("```")
                {
                    i += 1;
                    shown.push(lines[i].trim_end().to_string());
                }
                out.push(DocCommand {
                    at,
                    text: cmd.split_whitespace().collect::<Vec<_>>().join(" "),
                    shown,
                });
            }
        }
        i += 1;
    }
    out
}

/// A synopsis rather than a command: it names placeholders.
fn is_synopsis(cmd: &str) -> bool {
    ["SCENARIO", "SPEC|", "[--", "CGROUP", "KEY=V1"]
        .iter()
        .any(|p| cmd.contains(p))
}

/// The `built:KEY`s a command names, and the key prefix `kernel clean` removes.
fn build_keys(cmd: &str) -> Vec<String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut keys: Vec<String> = words
        .iter()
        .filter_map(|w| w.strip_prefix("built:"))
        .map(str::to_string)
        .collect();
    if let Some(i) = words.windows(2).position(|w| w == ["kernel", "clean"]) {
        keys.extend(
            words
                .get(i + 2)
                .filter(|w| !w.starts_with('-'))
                .map(|w| format!("{w}-stand-in")),
        );
    }
    keys
}

/// A fresh folder for `cmd` (see the module comment).
fn workdir(base: &Path, n: usize, cmd: &str) -> PathBuf {
    let dir = base.join(format!("cmd-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    let copy_all = |from: &Path, ext: &[&str], to: &Path| {
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| ext.iter().any(|e| x == *e)) {
                std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
            }
        }
    };
    let fit = Path::new(ROOT).join("tests/data/fit");
    copy_all(
        &Path::new(ROOT).join("docs/examples"),
        &["toml", "patch"],
        &dir,
    );
    copy_all(&fit, &["json"], &dir);
    // the checkout's files a command names, copied: a command may write beside them
    let fit_copy = dir.join("tests/data/fit");
    std::fs::create_dir_all(&fit_copy).unwrap();
    copy_all(&fit, &["json"], &fit_copy);
    std::os::unix::fs::symlink(Path::new(ROOT).join("patches"), dir.join("patches")).unwrap();
    // the checkout's traces a command splits
    let traces = Path::new(ROOT).join("tests/data/trace");
    let traces_copy = dir.join("tests/data/trace");
    std::fs::create_dir_all(&traces_copy).unwrap();
    copy_all(&traces, &["blkparse"], &traces_copy);
    // the checkout's scenarios, with the logs they replay beside them
    std::os::unix::fs::symlink(Path::new(ROOT).join("scenarios"), dir.join("scenarios")).unwrap();
    let linux = dir.join("linux");
    std::fs::create_dir_all(&linux).unwrap();
    std::fs::write(
        linux.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n",
    )
    .unwrap();
    std::fs::write(linux.join("Kconfig"), "").unwrap();
    std::fs::create_dir_all(linux.join("block")).unwrap();
    std::fs::write(linux.join("block/blk-cgroup.c"), "").unwrap();
    for key in build_keys(cmd) {
        let entry = dir.join("cache/builds").join(&key);
        std::fs::create_dir_all(&entry).unwrap();
        let version = key.split('-').next().unwrap();
        std::fs::write(
            entry.join("build.toml"),
            format!(
                "key = \"{key}\"\nsource = \"a stand-in\"\norigin = \"a stand-in\"\n\
                 version = \"{version}\"\nrelease = \"{version}-blkcg-sim\"\npatches = []\n\
                 adapted = []\nfragment = \"\"\njobs = 2\nbuild_seconds = 0\n"
            ),
        )
        .unwrap();
        for mark in [".complete", blkcg_sim::validate::build::MARK] {
            std::fs::write(entry.join(mark), "").unwrap();
        }
    }
    dir
}

/// Run `cmd` as the documents show it (see the module comment); an error if it fails.
fn run_command(base: &Path, n: usize, c: &DocCommand) -> Result<(), String> {
    let bin = Path::new(env!("CARGO_BIN_EXE_blkcg-sim"));
    if is_synopsis(&c.text) {
        let words: Vec<&str> = c.text.split_whitespace().collect();
        let sub: Vec<&str> = words[1..]
            .iter()
            .take_while(|w| w.chars().all(|ch| ch.is_ascii_lowercase()))
            .copied()
            .collect();
        let help = Command::new(bin).args(&sub).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        let unknown: Vec<&str> = words
            .iter()
            .map(|w| w.trim_start_matches('['))
            .filter(|w| w.starts_with("--"))
            .map(|w| w.split(['=', ']']).next().unwrap())
            .filter(|o| !help.contains(o))
            .collect();
        return if unknown.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{}: `{}` names options `blkcg-sim {} --help` lacks: {unknown:?}",
                c.at,
                c.text,
                sub.join(" ")
            ))
        };
    }
    let mut text = c.text.clone();
    let dry = text.contains("blkcg-sim validate ") || text.contains("blkcg-sim kernel build ");
    if dry && !text.contains("--dry-run") {
        text.push_str(" --dry-run");
    }
    let dir = workdir(base, n, &text);
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", &text])
        .current_dir(&dir)
        .env("PATH", path)
        .env("HOME", &dir)
        .env("BLKCG_SIM_CACHE", dir.join("cache"))
        .env("SLURM_CPUS_PER_TASK", "2")
        .env("SLURM_ARRAY_TASK_ID", "1")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    if out.status.success() {
        if dry {
            return Ok(());
        }
        // the lines shown, in order, among the output's (stdout then stderr)
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut printed = printed.lines().map(str::trim_end);
        for want in c
            .shown
            .iter()
            .filter(|l| !l.is_empty() && l.trim() != "...")
        {
            if !printed.any(|l| l == want) {
                return Err(format!(
                    "{}: `{text}` no longer prints, in this order, the line the document shows: `{want}`",
                    c.at
                ));
            }
        }
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "{}: `{text}`: {}: {}",
            c.at,
            out.status,
            err.trim().lines().last().unwrap_or("")
        ))
    }
}

#[test]
fn every_documented_command_runs_as_written() {
    if !common::require_tool("jq", "jq", "the README pipes our JSON into jq") {
        return;
    }
    let cmds: Vec<DocCommand> = documents().iter().flat_map(|d| commands_of(d)).collect();
    assert!(cmds.len() >= 60, "only {} commands found", cmds.len());
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-docs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = cmds.get(n) else { break };
                    if let Err(e) = run_command(&base, n, c) {
                        failures.lock().unwrap().push(e);
                    }
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&base);
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} documented commands failed:\n{}",
        failures.len(),
        cmds.len(),
        failures.join("\n")
    );
}
