//! `blkcg-sim kernel build`: a guest kernel built from source, with patches, cached.
//!
//! Design
//! ------
//! A build is named by its *key*, `VERSION-HASH`, the hash (64-bit FNV-1a) taken over
//! everything that makes the kernel: the source's identity (Debian package and version;
//! a tree's path with every file's size and mtime; a tarball's path, size and mtime),
//! each patch's name, content and declared behaviours, and the config fragment
//! ([`super::kconfig`]) with the user's `--config` options. Everything lives under
//! `CACHE/builds/` (`CACHE` as `kernel.rs`'s [`cache_dir`]):
//!
//! ```text
//! builds/sources/linux-source-6.12_6.12.117-1~deb12u1/   pristine tree (apt-get download,
//!                                                         dpkg-deb -x, tar -x), once
//! builds/sources/tarball-HASH/                            a --source TARBALL unpacked
//! builds/KEY/src/       the source, hard-linked from the pristine tree (a user's tree is
//!                       linked, never written), the patches applied with `patch -p1`
//!                       (GNU patch writes new files, so the links break and the pristine
//!                       tree stays as it was)
//! builds/KEY/src/build/ make O=: tinyconfig + fragment + olddefconfig, then bzImage
//!                       (inside the source, so kbuild names the source `..` and the
//!                       command lines of two entries are the same)
//! builds/KEY/tree/      an unpacked package's layout, so validate reads it as it reads
//!                       Debian's: boot/vmlinuz-R, boot/config-R, vmlinux-R (ELF, booted
//!                       through PVH), lib/modules/R/modules.builtin (no loadable module)
//! builds/KEY/build.log  every command's output; build.toml the record ([`BuildRecord`]);
//!                       fragment.config; patches/ (copies); .complete once done
//! ```
//!
//! A patched build starts from a copy of the objects of a finished build of the same
//! source without patches (`seed_build`): make then recompiles what the patches
//! touched (their files are newer than every object) and what a changed config symbol
//! reaches, so a patched kernel after the stock one takes a minute or two, not ten.
//!
//! Steps are idempotent and resumable: an interrupted or failed build keeps its folder,
//! and the next call re-links and re-patches the source only if that step never ended,
//! then lets make rebuild incrementally. A second call with the same arguments finds
//! `.complete` and returns at once. A lock (`flock` on `KEY/.lock`) keeps two builds of
//! one key apart. Every folder we create carries a marker file ([`MARK`]); `kernel clean`
//! removes only folders with that marker, and a build only ever replaces its own
//! unfinished steps. User strings never reach a shell: every command gets its arguments
//! as a vector, and the only paths made from them are read (the source, the patches).
//!
//! A patch may declare the named simulator behaviours it turns on
//! (`--patch fix.patch=iocost.no_completion:keep-if-lagging`): they are checked against
//! the simulator's switches, kept in the record, and `validate --kernel built:KEY` pins
//! them on the simulated side ([`built`]).

use std::fmt::Write as _;
use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::boot::ScratchDir;
use super::kconfig::{self, Group, KconfigIndex, Opt};
use super::kernel::{cache_dir, tool};
use crate::notify::Notify;

/// A file in every folder `kernel build` creates; `kernel clean` removes only those.
pub const MARK: &str = ".blkcg-sim";

/// The Debian source series `--source` defaults to.
pub const DEFAULT_SOURCE: &str = "6.12";

/// `kernel build` options.
#[derive(Debug, Clone)]
pub struct BuildOptions<'a> {
    /// `6.1`, `6.12` (Debian's `linux-source-X.Y`), a source tree, or a tarball.
    pub source: Option<String>,
    /// `FILE` or `FILE=SWITCH:VALUE[,SWITCH:VALUE]...`.
    pub patches: Vec<String>,
    /// `KEY=VAL` Kconfig options.
    pub config: Vec<String>,
    /// Say what would be built and whether it is cached; build nothing.
    pub dry_run: bool,
    /// Where its progress lines go (`notify::Ignore` for none).
    pub notify: &'a dyn Notify,
}

/// A patch and the behaviours it turns on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchSpec {
    pub file: PathBuf,
    /// (`iocost.no_completion`, `keep-if-lagging`), checked against the simulator.
    pub behaviours: Vec<(String, String)>,
}

impl PatchSpec {
    /// `FILE` or `FILE=SWITCH:VALUE[,SWITCH:VALUE]...`; a name that is an existing file
    /// is the file even with `=` in it.
    pub fn parse(s: &str) -> Result<PatchSpec, String> {
        let (file, list) = match s.rsplit_once('=') {
            Some((f, l)) if !Path::new(s).is_file() => (f, Some(l)),
            _ => (s, None),
        };
        let file = PathBuf::from(file);
        if !file.is_file() {
            return Err(format!("--patch {}: no such file", file.display()));
        }
        let mut behaviours = Vec::new();
        for item in list.into_iter().flat_map(|l| l.split(',')) {
            let (k, v) = item.split_once(':').ok_or_else(|| {
                format!(
                    "--patch {s}: `{item}` is not SWITCH:VALUE; a patch declares the simulator \
                     behaviours it turns on, e.g. fix.patch=iocost.no_completion:keep-if-lagging"
                )
            })?;
            check_behaviour(k, v).map_err(|e| format!("--patch {s}: {e}"))?;
            if let Some((_, first)) = behaviours.iter().find(|(b, _)| b == k) {
                return Err(format!(
                    "--patch {s}: `{k}` is given twice ({k}:{first}, {k}:{v}); a patch turns \
                     a switch to one value"
                ));
            }
            behaviours.push((k.to_string(), v.to_string()));
        }
        Ok(PatchSpec { file, behaviours })
    }
}

/// `key:value` is a behaviour switch the simulator knows, with a value it accepts.
pub fn check_behaviour(key: &str, value: &str) -> Result<(), String> {
    let o = [(key.to_string(), value.to_string())];
    let r = if key.starts_with("iocost.") {
        crate::iocost::behaviour_for("newest", &o).map(|_| ())
    } else if key.starts_with("throttle.") {
        crate::throttle::behaviour::behaviour_for("newest", false, &o).map(|_| ())
    } else {
        return Err(format!(
            "`{key}` is not a behaviour switch (they are named iocost.* and throttle.*; \
             `blkcg-sim check SCENARIO` prints every one)"
        ));
    };
    r.map_err(|e| format!("`{}`: {}", e.key, e.msg))
}

/// Where the source comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Debian's `linux-source-SERIES` package at `version` (`6.12.117-1~deb12u1`).
    Debian { package: String, version: String },
    /// A kernel source tree of the user's (read only).
    Tree(PathBuf),
    /// A source tarball (`.tar.xz`, `.tar.gz`, ...).
    Tarball(PathBuf),
}

impl Source {
    /// `--source`: a series (`6.1`, `6.12`), a folder, or a tarball.
    pub fn of(spec: Option<&str>) -> Result<Source, String> {
        let spec = spec.unwrap_or(DEFAULT_SOURCE);
        let p = Path::new(spec);
        if p.is_dir() {
            let canon = p
                .canonicalize()
                .map_err(|e| format!("--source {spec}: {e}"))?;
            for f in ["Makefile", "Kconfig", "block/blk-cgroup.c"] {
                if !canon.join(f).is_file() {
                    return Err(format!(
                        "--source {spec}: not a Linux source tree (no {f} there)"
                    ));
                }
            }
            if canon.join(".config").exists() {
                return Err(format!(
                    "--source {spec}: the tree was configured in place (it has a .config); the \
                     build runs out of tree (make O=) and kbuild refuses a tree that is not \
                     clean: run `make mrproper` there, or pass a clean copy"
                ));
            }
            return Ok(Source::Tree(canon));
        }
        if p.is_file() {
            let name = spec.to_ascii_lowercase();
            let tar = [
                ".tar", ".tar.xz", ".txz", ".tar.gz", ".tgz", ".tar.bz2", ".tar.zst",
            ];
            if tar.iter().any(|e| name.ends_with(e)) {
                let canon = p
                    .canonicalize()
                    .map_err(|e| format!("--source {spec}: {e}"))?;
                return Ok(Source::Tarball(canon));
            }
            return Err(format!(
                "--source {spec}: not a tarball (.tar, .tar.xz, .tar.gz, .tar.bz2, .tar.zst)"
            ));
        }
        let series = spec.split('.').collect::<Vec<_>>();
        if series.len() == 2
            && series
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            let package = format!("linux-source-{spec}");
            let version = debian_version(&package)?;
            return Ok(Source::Debian { package, version });
        }
        Err(format!(
            "--source {spec}: not a kernel series (6.1, 6.12: Debian's linux-source-X.Y), a \
             source folder or a tarball"
        ))
    }

    /// What the key hashes for the source.
    fn identity(&self) -> Result<String, String> {
        Ok(match self {
            Source::Debian { package, version } => format!("debian {package} {version}"),
            Source::Tree(t) => format!("tree {} {:016x}", t.display(), tree_fingerprint(t)?),
            Source::Tarball(t) => {
                let m = std::fs::metadata(t).map_err(|e| format!("{}: {e}", t.display()))?;
                format!(
                    "tarball {} {} {:?}",
                    t.display(),
                    m.len(),
                    m.modified().ok()
                )
            }
        })
    }

    /// How the record and the output name the source.
    pub fn describe(&self) -> String {
        match self {
            Source::Debian { package, version } => format!("Debian's {package} {version}"),
            Source::Tree(t) => format!("the tree {}", t.display()),
            Source::Tarball(t) => format!("the tarball {}", t.display()),
        }
    }
}

/// The version apt would download of `package` (`apt-cache policy`, no network), else
/// the newest one already unpacked in the cache.
fn debian_version(package: &str) -> Result<String, String> {
    let out = tool("apt-cache", "apt")
        .map_err(|_| {
            super::kernel::missing_error("kernel build --source SERIES", &[("apt-cache", "apt")])
                .err()
                .unwrap_or_default()
        })?
        .args(["policy", package])
        .output()
        .map_err(|e| format!("apt-cache: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let candidate = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate: "))
        .map(str::trim)
        .filter(|v| *v != "(none)");
    if let Some(v) = candidate {
        return Ok(v.to_string());
    }
    let prefix = format!("{package}_");
    let mut cached: Vec<String> = std::fs::read_dir(sources_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix(&prefix)
                .map(str::to_string)
        })
        .collect();
    cached.sort();
    cached.pop().ok_or_else(|| {
        format!(
            "apt knows no package {package}: run `apt-get update` (Debian 12 has \
             linux-source-6.1, and linux-source-6.12 from bookworm-security or -backports)"
        )
    })
}

/// 64-bit FNV-1a.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        // a separator, so ("ab", "c") and ("a", "bc") differ
        self.0 = (self.0 ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// Every file of a tree by relative path, size and mtime (not content: a kernel tree
/// is 1.5 GB), `.git` left out.
fn tree_fingerprint(root: &Path) -> Result<u64, String> {
    use std::os::unix::fs::MetadataExt;
    let mut h = Fnv::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)
            .map_err(|e| format!("{}: {e}", d.display()))?
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            if e.file_name() == ".git" {
                continue;
            }
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            h.add(
                p.strip_prefix(root)
                    .unwrap_or(&p)
                    .as_os_str()
                    .as_encoded_bytes(),
            );
            h.add(&m.len().to_le_bytes());
            h.add(&m.mtime().to_le_bytes());
            h.add(&m.mtime_nsec().to_le_bytes());
            if m.is_dir() {
                todo.push(p);
            }
        }
    }
    Ok(h.0)
}

/// `VERSION.PATCHLEVEL.SUBLEVEL` from a tree's top Makefile.
pub fn tree_version(tree: &Path) -> Result<String, String> {
    let mk = tree.join("Makefile");
    let text = std::fs::read_to_string(&mk).map_err(|e| format!("{}: {e}", mk.display()))?;
    let field = |k: &str| {
        text.lines().find_map(|l| {
            let (a, b) = l.split_once('=')?;
            (a.trim() == k).then(|| b.trim().to_string())
        })
    };
    match (field("VERSION"), field("PATCHLEVEL"), field("SUBLEVEL")) {
        (Some(v), Some(p), s) if !v.is_empty() && !p.is_empty() => Ok(format!(
            "{v}.{p}.{}",
            s.filter(|s| !s.is_empty()).unwrap_or_else(|| "0".into())
        )),
        _ => Err(format!(
            "{}: no VERSION/PATCHLEVEL (not a kernel Makefile)",
            mk.display()
        )),
    }
}

/// `6.12.117` → (6, 12).
fn series(version: &str) -> (u32, u32) {
    let mut p = version.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    (p.next().unwrap_or(0), p.next().unwrap_or(0))
}

/// `CACHE/builds`.
pub fn builds_dir() -> PathBuf {
    cache_dir().join("builds")
}

fn sources_dir() -> PathBuf {
    builds_dir().join("sources")
}

/// What one cache entry records.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BuildRecord {
    pub key: String,
    /// How the source was named (`Debian's linux-source-6.12 6.12.117-1~deb12u1`).
    pub source: String,
    /// The source's identity as the key hashes it (package and version; a tree's
    /// path and fingerprint; a tarball's path, size and mtime).
    pub origin: String,
    /// The source's `VERSION.PATCHLEVEL.SUBLEVEL`.
    pub version: String,
    /// `uname -r` of the kernel.
    pub release: String,
    pub patches: Vec<PatchRecord>,
    /// Hunks `patch` applied elsewhere than their patch said (offset, fuzz).
    pub adapted: Vec<String>,
    /// `make tinyconfig`, then this fragment.
    pub fragment: String,
    /// make's `-j`.
    pub jobs: u32,
    /// Wall time of the build (make only; the source's download is not counted).
    pub build_seconds: u64,
    /// The build whose objects this one started from, if any.
    #[serde(default)]
    pub seeded_from: Option<String>,
}

/// A patch in the record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PatchRecord {
    /// As given on the command line.
    pub file: String,
    /// The copy in the entry (`patches/1-fix.patch`).
    pub copy: String,
    /// `SWITCH=VALUE` the patch turns on in the simulator.
    pub behaviours: Vec<String>,
}

impl BuildRecord {
    /// Every behaviour the patches turn on, as (switch, value), in patch order.
    pub fn behaviours(&self) -> Vec<(String, String)> {
        self.patches
            .iter()
            .flat_map(|p| &p.behaviours)
            .filter_map(|b| b.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// One line: release, source, patches and their behaviours.
    pub fn summary(&self) -> String {
        let mut s = format!("Linux {} from {}", self.release, self.source);
        for p in &self.patches {
            let name = Path::new(&p.file)
                .file_name()
                .map_or(p.file.clone(), |f| f.to_string_lossy().into_owned());
            let _ = write!(s, " + {name}");
            if !p.behaviours.is_empty() {
                let _ = write!(s, " ({})", p.behaviours.join(", "));
            }
        }
        s
    }
}

/// Everything a build is made of, resolved, before anything is fetched.
struct Plan {
    source: Source,
    version: String,
    patches: Vec<(PatchSpec, Vec<u8>)>,
    groups: Vec<Group>,
    key: String,
}

impl Plan {
    /// Read the options; the version comes from the package, the tree, or (a tarball)
    /// the unpacked tree, which this may unpack.
    fn new(
        o: &BuildOptions,
        source: Source,
        unpack: bool,
    ) -> Result<(Plan, Option<PathBuf>), String> {
        let mut patches: Vec<(PatchSpec, Vec<u8>)> = Vec::new();
        for p in &o.patches {
            let spec = PatchSpec::parse(p)?;
            for (k, v) in &spec.behaviours {
                let earlier = patches
                    .iter()
                    .flat_map(|(s, _)| s.behaviours.iter().map(move |b| (s, b)))
                    .find(|(_, (k2, v2))| k2 == k && v2 != v);
                if let Some((s, (_, v2))) = earlier {
                    return Err(format!(
                        "--patch {p}: `{k}:{v}`, but --patch {} declares `{k}:{v2}`; a switch \
                         has one value per build",
                        s.file.display()
                    ));
                }
            }
            let text = std::fs::read(&spec.file)
                .map_err(|e| format!("--patch {}: {e}", spec.file.display()))?;
            patches.push((spec, text));
        }
        let extra: Vec<Opt> = o
            .config
            .iter()
            .map(|c| kconfig::parse_option(c))
            .collect::<Result<_, _>>()?;
        let (version, pristine) = match &source {
            Source::Debian { version, .. } => (
                version
                    .split(['-', '+', '~'])
                    .next()
                    .unwrap_or(version)
                    .to_string(),
                None,
            ),
            Source::Tree(t) => (tree_version(t)?, Some(t.clone())),
            Source::Tarball(t) => {
                let dir = tarball_dir(t)?;
                match (dir.join(MARK).is_file(), unpack) {
                    (true, _) => {}
                    (false, true) => unpack_tarball(t, &dir, o.notify)?,
                    (false, false) => {
                        return Err(format!(
                            "--source {}: not unpacked yet, so its version (and the build's \
                             key) is unknown; run without --dry-run",
                            t.display()
                        ));
                    }
                }
                let tree = source_root(&dir)?;
                (tree_version(&tree)?, Some(tree))
            }
        };
        let groups = kconfig::with_options(kconfig::guest_fragment(series(&version)), &extra);
        kconfig::check_release(&version, &groups)?;
        let mut h = Fnv::new();
        h.add(b"blkcg-sim kernel build 1: tinyconfig + fragment, make bzImage");
        h.add(source.identity()?.as_bytes());
        for (spec, text) in &patches {
            h.add(spec.file.file_name().unwrap_or_default().as_encoded_bytes());
            h.add(text);
            for (k, v) in &spec.behaviours {
                h.add(format!("{k}={v}").as_bytes());
            }
        }
        h.add(kconfig::render(&groups).as_bytes());
        let key = format!("{version}-{:012x}", h.0 & 0xffff_ffff_ffff);
        Ok((
            Plan {
                source,
                version,
                patches,
                groups,
                key,
            },
            pristine,
        ))
    }
}

/// Where a tarball is unpacked in the cache.
fn tarball_dir(t: &Path) -> Result<PathBuf, String> {
    let mut h = Fnv::new();
    h.add(Source::Tarball(t.to_path_buf()).identity()?.as_bytes());
    Ok(sources_dir().join(format!("tarball-{:016x}", h.0)))
}

/// The tree inside an unpacked source folder: itself if it has the Makefile, else its
/// one sub-folder that has.
fn source_root(dir: &Path) -> Result<PathBuf, String> {
    if dir.join("Makefile").is_file() {
        return Ok(dir.to_path_buf());
    }
    std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("Makefile").is_file() && p.join("Kconfig").is_file())
        .ok_or_else(|| format!("{}: no kernel source tree inside", dir.display()))
}

/// The host tools a build needs: (what, Debian package, how to tell it is here).
fn build_needs(source: &Source) -> Vec<(&'static str, &'static str, Need)> {
    let mut v = vec![
        ("make", "make", Need::Command),
        ("gcc", "gcc", Need::Command),
        ("ld", "binutils", Need::Command),
        ("bc", "bc", Need::Command),
        ("bison", "bison", Need::Command),
        ("flex", "flex", Need::Command),
        ("perl", "perl", Need::Command),
        ("patch", "patch", Need::Command),
        ("cp", "coreutils", Need::Command),
        ("gelf.h", "libelf-dev", Need::Header),
        ("openssl/ssl.h", "libssl-dev", Need::Header),
    ];
    match source {
        Source::Debian { .. } => v.extend([
            ("apt-get", "apt", Need::Command),
            ("dpkg-deb", "dpkg", Need::Command),
            ("tar", "tar", Need::Command),
            ("xz", "xz-utils", Need::Command),
        ]),
        Source::Tarball(_) => v.extend([
            ("tar", "tar", Need::Command),
            ("xz", "xz-utils", Need::Command),
        ]),
        Source::Tree(_) => {}
    }
    v
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Command,
    Header,
}

/// One error naming every missing tool and the line that installs them.
fn check_build_needs(source: &Source) -> Result<(), String> {
    let missing: Vec<(&str, &str)> = build_needs(source)
        .into_iter()
        .filter(|(what, pkg, need)| match need {
            Need::Command => tool(what, pkg).is_err(),
            Need::Header => !Path::new("/usr/include").join(what).is_file(),
        })
        .map(|(what, pkg, _)| (what, pkg))
        .collect();
    super::kernel::missing_error("kernel build", &missing)
}

/// Run `cmd`, its output appended to `log`; Err with the log's last lines on failure.
/// `heartbeat`: where to say, every minute while it runs, how far it is.
fn run_logged(
    cmd: &mut Command,
    log: &Path,
    what: &str,
    heartbeat: Option<&dyn Notify>,
) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let _ = writeln!(f, "\n$ {cmd:?}");
    let err = f
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(f))
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    let start = Instant::now();
    let mut next = Duration::from_secs(60);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => {}
            Err(e) => return Err(format!("{what}: {e}")),
        }
        std::thread::sleep(Duration::from_millis(200));
        if let Some(say) = heartbeat
            && start.elapsed() >= next
        {
            next += Duration::from_secs(60);
            say.status(&format!(
                "kernel build: {what}: {} min so far; now: {}",
                start.elapsed().as_secs() / 60,
                log_tail(log, 1).trim()
            ));
        }
    };
    if status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({status}); the last lines of {}:\n{}",
        log.display(),
        log_tail(log, 25)
    ))
}

/// The last `n` lines of a log.
fn log_tail(log: &Path, n: usize) -> String {
    let Ok(f) = std::fs::File::open(log) else {
        return String::new();
    };
    let mut last: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    for l in std::io::BufReader::new(f)
        .split(b'\n')
        .map_while(Result::ok)
    {
        if last.len() == n {
            last.pop_front();
        }
        last.push_back(String::from_utf8_lossy(&l).into_owned());
    }
    Vec::from(last).join("\n")
}

fn mkdir_marked(d: &Path) -> Result<(), String> {
    std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    let m = d.join(MARK);
    if !m.exists() {
        std::fs::write(&m, "created by blkcg-sim kernel build\n")
            .map_err(|e| format!("{}: {e}", m.display()))?;
    }
    Ok(())
}

/// Remove `d` if, and only if, it is a folder we created (it holds [`MARK`]).
fn remove_ours(d: &Path) -> Result<(), String> {
    if !d.exists() {
        return Ok(());
    }
    if !d.join(MARK).is_file() {
        return Err(format!(
            "{} was not created by blkcg-sim (no {MARK} file in it); left alone",
            d.display()
        ));
    }
    std::fs::remove_dir_all(d).map_err(|e| format!("removing {}: {e}", d.display()))
}

/// Unpack `tarball` into `dir` (through a scratch folder, renamed when complete).
fn unpack_tarball(tarball: &Path, dir: &Path, say: &dyn Notify) -> Result<(), String> {
    let parent = dir.parent().unwrap_or(dir);
    mkdir_marked(parent)?;
    say.status(&format!("kernel build: unpacking {}", tarball.display()));
    let scratch = ScratchDir::new_in(parent)?;
    let out = scratch.path().join("tree");
    std::fs::create_dir(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let log = scratch.path().join("tar.log");
    run_logged(
        tool("tar", "tar")?
            .arg("-xf")
            .arg(tarball)
            .arg("-C")
            .arg(&out),
        &log,
        "tar -x",
        None,
    )?;
    std::fs::write(out.join(MARK), "unpacked by blkcg-sim kernel build\n")
        .map_err(|e| format!("{}: {e}", out.display()))?;
    std::fs::rename(&out, dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The pristine tree of a Debian source package, downloaded and unpacked once.
fn debian_tree(package: &str, version: &str, say: &dyn Notify) -> Result<PathBuf, String> {
    let dir = sources_dir().join(format!("{package}_{version}"));
    if !dir.join(MARK).is_file() {
        let parent = sources_dir();
        mkdir_marked(&parent)?;
        let scratch = ScratchDir::new_in(&parent)?;
        let log = scratch.path().join("fetch.log");
        say.status(&format!(
            "kernel build: downloading {package} {version} (apt-get download, ~150 MB)"
        ));
        run_logged(
            tool("apt-get", "apt")?
                .args(["download", &format!("{package}={version}")])
                .current_dir(scratch.path()),
            &log,
            "apt-get download",
            None,
        )?;
        let deb = std::fs::read_dir(scratch.path())
            .map_err(|e| format!("{}: {e}", scratch.path().display()))?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "deb"))
            .ok_or_else(|| format!("apt-get download {package}: no .deb appeared"))?;
        let x = scratch.path().join("deb");
        run_logged(
            tool("dpkg-deb", "dpkg")?.arg("-x").arg(&deb).arg(&x),
            &log,
            "dpkg-deb -x",
            None,
        )?;
        let series = package.strip_prefix("linux-source-").unwrap_or(package);
        let tarball = ["tar.xz", "tar.bz2", "tar.gz"]
            .iter()
            .map(|e| x.join(format!("usr/src/linux-source-{series}.{e}")))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("{package}: no usr/src/linux-source-{series}.tar.* inside"))?;
        say.status(&format!("kernel build: unpacking {}", tarball.display()));
        let out = scratch.path().join("src");
        std::fs::create_dir(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        run_logged(
            tool("tar", "tar")?
                .arg("-xf")
                .arg(&tarball)
                .arg("-C")
                .arg(&out),
            &log,
            "tar -x",
            None,
        )?;
        let tree = source_root(&out)?;
        std::fs::write(tree.join(MARK), "unpacked by blkcg-sim kernel build\n")
            .map_err(|e| format!("{}: {e}", tree.display()))?;
        std::fs::rename(&tree, &dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(dir)
}

/// The n-th (1-based) hunk header for `file` in a unified diff, with the line it
/// names (`@@ -2397,9 +2400,17 @@ static void ioc_timer_fn(...)`).
fn hunk_header(patch: &str, file: &str, n: usize) -> Option<String> {
    let mut in_file = false;
    let mut seen = 0;
    for l in patch.lines() {
        if let Some(target) = l.strip_prefix("+++ ") {
            let t = target.split('\t').next().unwrap_or(target).trim();
            let t = t.split_once('/').map_or(t, |(_, rest)| rest);
            in_file = t == file;
            seen = 0;
        } else if in_file && l.starts_with("@@ ") {
            seen += 1;
            if seen == n {
                return Some(l.to_string());
            }
        }
    }
    None
}

/// What `patch` said about hunks that failed or moved, named by file and hunk header.
fn hunk_report(patch_output: &str, patch_text: &str, failed: bool) -> Vec<String> {
    let mut file = String::new();
    let mut out = Vec::new();
    for l in patch_output.lines() {
        if let Some(f) = l
            .strip_prefix("patching file ")
            .or_else(|| l.strip_prefix("checking file "))
        {
            file = f.trim().trim_matches(['\'', '`']).to_string();
            continue;
        }
        let Some(rest) = l.strip_prefix("Hunk #") else {
            if failed
                && (l.contains("Reversed (or previously applied)") || l.contains("can't find file"))
            {
                out.push(format!("{file}: {}", l.trim()));
            }
            continue;
        };
        let n: usize = rest
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|d| d.parse().ok())
            .unwrap_or(0);
        let is_failure = rest.contains("FAILED");
        if is_failure != failed || !(is_failure || rest.contains("offset") || rest.contains("fuzz"))
        {
            continue;
        }
        let header = hunk_header(patch_text, &file, n)
            .map(|h| format!(" {h}"))
            .unwrap_or_default();
        out.push(format!("{file} hunk #{n}{header}: {}", l.trim()));
    }
    out
}

/// Apply one patch to `src`: a dry run first (a reject changes nothing and names the
/// hunk), then for real. Returns `patch`'s notes on hunks applied elsewhere than the
/// patch said (offset, fuzz): the context was adapted.
fn apply_patch(
    src: &Path,
    spec: &PatchSpec,
    text: &[u8],
    log: &Path,
    what: &str,
) -> Result<Vec<String>, String> {
    let run = |dry: bool| -> Result<(bool, String), String> {
        let mut c = tool("patch", "patch")?;
        c.args([
            "-p1",
            "--forward",
            "--batch",
            "--no-backup-if-mismatch",
            "-d",
        ])
        .arg(src)
        .arg("-i")
        .arg(
            spec.file
                .canonicalize()
                .unwrap_or_else(|_| spec.file.clone()),
        );
        if dry {
            c.arg("--dry-run");
        }
        let out = c.output().map_err(|e| format!("patch: {e}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let _ = writeln!(f, "\n$ {c:?}\n{text}");
        Ok((out.status.success(), text))
    };
    let patch_text = String::from_utf8_lossy(text);
    let (ok, out) = run(true)?;
    if !ok {
        let rejected = hunk_report(&out, &patch_text, true);
        return Err(format!(
            "--patch {} does not apply to {what}: {}",
            spec.file.display(),
            if rejected.is_empty() {
                out.trim().replace('\n', "; ")
            } else {
                rejected.join("; ")
            }
        ));
    }
    let (ok, out) = run(false)?;
    if !ok {
        return Err(format!(
            "--patch {}: patch failed after its dry run passed: {}",
            spec.file.display(),
            out.trim().replace('\n', "; ")
        ));
    }
    Ok(hunk_report(&out, &patch_text, false))
}

/// `make -C SRC O=BUILD ARCH=x86_64 ARGS...`, with the caller's kbuild variables
/// cleared so that only ours count.
fn make(src: &Path, build: &Path, args: &[&str]) -> Result<Command, String> {
    let mut c = tool("make", "make")?;
    c.arg("-C")
        .arg(src)
        .arg(format!("O={}", build.display()))
        .arg("ARCH=x86_64")
        .args(args);
    for v in [
        "KBUILD_OUTPUT",
        "KCONFIG_CONFIG",
        "KCONFIG_ALLCONFIG",
        "CROSS_COMPILE",
        "LLVM",
        "KCFLAGS",
        "KCPPFLAGS",
        "LOCALVERSION",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
    ] {
        c.env_remove(v);
    }
    Ok(c)
}

/// Hard-link `from` into `to` (`cp -al`), or copy it where links cannot be made.
fn link_tree(from: &Path, to: &Path, log: &Path) -> Result<(), String> {
    let mut c = tool("cp", "coreutils")?;
    c.arg("-al").arg(from).arg(to);
    if run_logged(&mut c, log, "cp -al", None).is_ok() {
        return Ok(());
    }
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    run_logged(
        tool("cp", "coreutils")?.arg("-a").arg(from).arg(to),
        log,
        "cp -a",
        None,
    )
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

/// An exclusive lock on a build entry, held while the value lives.
struct Lock {
    _file: std::fs::File,
}

impl Lock {
    fn take(entry: &Path) -> Result<Lock, String> {
        use std::os::fd::AsRawFd;
        let p = entry.join(".lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            return Err(format!(
                "another blkcg-sim is building {} right now; wait for it",
                entry.display()
            ));
        }
        Ok(Lock { _file: f })
    }
}

fn fmt_duration(s: u64) -> String {
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

/// A finished build: its record and where things are.
pub struct Built {
    pub record: BuildRecord,
    pub entry: PathBuf,
    /// The package-like tree validate boots.
    pub tree: PathBuf,
    /// Whether this call built it (else it was in the cache).
    pub fresh: bool,
}

impl Built {
    /// What `kernel build` prints on stdout.
    pub fn report(&self) -> String {
        let r = &self.record;
        let mut s = String::new();
        let _ = writeln!(s, "kernel: {}", r.summary());
        let _ = writeln!(s, "key:    {}", r.key);
        let _ = writeln!(
            s,
            "image:  {} (ELF, booted through PVH; bzImage: {})",
            self.tree.join(format!("vmlinux-{}", r.release)).display(),
            self.tree
                .join(format!("boot/vmlinuz-{}", r.release))
                .display()
        );
        for a in &r.adapted {
            let _ = writeln!(s, "patch:  context adapted: {a}");
        }
        let _ = writeln!(s, "entry:  {} (build.log there)", self.entry.display());
        let _ = writeln!(
            s,
            "time:   {} with make -j{}{}{}",
            fmt_duration(r.build_seconds),
            r.jobs,
            r.seeded_from
                .as_ref()
                .map(|k| format!(", starting from the objects of built:{k}"))
                .unwrap_or_default(),
            if self.fresh {
                ""
            } else {
                " (cached: this call built nothing)"
            }
        );
        let _ = writeln!(
            s,
            "use:    blkcg-sim validate SCENARIO --kernel built:{}",
            r.key
        );
        let _ = writeln!(
            s,
            "config: make tinyconfig, then this fragment, then make olddefconfig:"
        );
        for l in r.fragment.lines() {
            let _ = writeln!(s, "  {l}");
        }
        s
    }
}

/// Build (or find in the cache) the kernel `o` describes.
pub fn build(o: &BuildOptions<'_>) -> Result<Built, String> {
    let source = Source::of(o.source.as_deref())?;
    let (plan, given_tree) = Plan::new(o, source, true)?;
    let entry = builds_dir().join(&plan.key);
    let tree = entry.join("tree");
    let record_path = entry.join("build.toml");
    if entry.join(".complete").is_file() {
        return Ok(Built {
            record: read_record(&record_path)?,
            entry,
            tree,
            fresh: false,
        });
    }
    // only a build needs the toolchain: a cached kernel boots without one
    check_build_needs(&plan.source)?;
    mkdir_marked(&builds_dir())?;
    mkdir_marked(&entry)?;
    let _lock = Lock::take(&entry)?;
    let log = entry.join("build.log");
    let say = |m: &str| o.notify.status(&format!("kernel build: {m}"));
    let pristine = match (&plan.source, given_tree) {
        (Source::Debian { package, version }, _) => debian_tree(package, version, o.notify)?,
        (_, Some(t)) => t,
        (_, None) => return Err("internal: a source without a tree".into()),
    };
    let what = format!("{} ({})", plan.source.describe(), plan.version);
    // the source, linked and patched, once
    let src = entry.join("src");
    let patched = entry.join(".patched");
    let mut notes = Vec::new();
    let mut patch_records = Vec::new();
    if !patched.is_file() {
        if src.exists() {
            // an unfinished step of ours: its folder is inside our marked entry
            std::fs::remove_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
        }
        say(&format!("linking the source into {}", src.display()));
        link_tree(&pristine, &src, &log)?;
        for (spec, text) in &plan.patches {
            say(&format!("applying {}", spec.file.display()));
            for n in apply_patch(&src, spec, text, &log, &what)? {
                notes.push(format!("{}: {n}", spec.file.display()));
            }
        }
        std::fs::write(&patched, notes.join("\n"))
            .map_err(|e| format!("{}: {e}", patched.display()))?;
    } else {
        notes = std::fs::read_to_string(&patched)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
    }
    for n in &notes {
        say(&format!("context adapted: {n}"));
    }
    let pdir = entry.join("patches");
    std::fs::create_dir_all(&pdir).map_err(|e| format!("{}: {e}", pdir.display()))?;
    for (i, (spec, text)) in plan.patches.iter().enumerate() {
        let name = spec
            .file
            .file_name()
            .map_or_else(|| "patch".into(), |f| f.to_string_lossy().into_owned());
        let copy_name = format!("{}-{name}", i + 1);
        let p = pdir.join(&copy_name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        patch_records.push(PatchRecord {
            file: spec.file.display().to_string(),
            copy: format!("patches/{copy_name}"),
            behaviours: spec
                .behaviours
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
        });
    }
    // configure: tinyconfig, the fragment appended (later lines win), olddefconfig
    // inside the source: kbuild then names the source `..` in every command line, so a
    // build seeded from another entry's objects finds them up to date
    let bdir = src.join("build");
    let seed = if bdir.exists() {
        None
    } else {
        seed_build(&plan.source.identity()?, &bdir, &log)?
    };
    if let Some(k) = &seed {
        say(&format!(
            "starting from the objects of built:{k} (same source, no patches): make rebuilds \
             what the patches and the config change"
        ));
    }
    std::fs::create_dir_all(&bdir).map_err(|e| format!("{}: {e}", bdir.display()))?;
    let fragment = kconfig::render(&plan.groups);
    let frag_path = entry.join("fragment.config");
    std::fs::write(&frag_path, &fragment).map_err(|e| format!("{}: {e}", frag_path.display()))?;
    say(&format!(
        "configuring (tinyconfig + {})",
        frag_path.display()
    ));
    run_logged(
        &mut make(&src, &bdir, &["tinyconfig"])?,
        &log,
        "make tinyconfig",
        None,
    )?;
    let dot = bdir.join(".config");
    let mut cfg = std::fs::read_to_string(&dot).map_err(|e| format!("{}: {e}", dot.display()))?;
    cfg.push_str(&fragment);
    std::fs::write(&dot, cfg).map_err(|e| format!("{}: {e}", dot.display()))?;
    run_logged(
        &mut make(&src, &bdir, &["olddefconfig"])?,
        &log,
        "make olddefconfig",
        None,
    )?;
    let got = kconfig::read_dot_config(
        &std::fs::read_to_string(&dot).map_err(|e| format!("{}: {e}", dot.display()))?,
    );
    let missing = kconfig::verify(
        &plan.groups,
        &got,
        &KconfigIndex::of_tree(&src),
        &plan.version,
    );
    if !missing.is_empty() {
        return Err(format!(
            "{what}: the configuration lacks what was asked for:\n  {}",
            missing.join("\n  ")
        ));
    }
    // build
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    say(&format!(
        "make -j{jobs} bzImage for Linux {} (a guest kernel is about 8 min of CPU: 4 min on two idle cores, 18 on busy ones; log: {})",
        plan.version,
        log.display()
    ));
    let start = Instant::now();
    run_logged(
        &mut make(&src, &bdir, &[&format!("-j{jobs}"), "bzImage"])?,
        &log,
        "make bzImage",
        Some(o.notify),
    )?;
    let seconds = start.elapsed().as_secs();
    let out = make(&src, &bdir, &["-s", "kernelrelease"])?
        .output()
        .map_err(|e| format!("make kernelrelease: {e}"))?;
    let release = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || release.is_empty() || release.contains(['/', '\n']) {
        return Err(format!(
            "make kernelrelease gave no release: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    install(&bdir, &tree, &release)?;
    let record = BuildRecord {
        key: plan.key.clone(),
        source: plan.source.describe(),
        origin: plan.source.identity()?,
        version: plan.version.clone(),
        release,
        patches: patch_records,
        adapted: notes,
        fragment,
        jobs,
        build_seconds: seconds,
        seeded_from: seed,
    };
    let text = toml::to_string(&record).map_err(|e| format!("build.toml: {e}"))?;
    std::fs::write(&record_path, text).map_err(|e| format!("{}: {e}", record_path.display()))?;
    let done = entry.join(".complete");
    std::fs::write(&done, "").map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(Built {
        record,
        entry,
        tree,
        fresh: true,
    })
}

/// Copy the objects of a finished build of the same source without patches into
/// `bdir` (`cp -a`, a real copy: the compiler rewrites objects in place). Sound because
/// every file of this entry's source is either the pristine one that build compiled
/// (same mtime, older than its object) or one a patch rewrote just now (newer than
/// any object), and kbuild rebuilds what a changed config symbol touches. Returns the
/// key of the build copied from.
fn seed_build(origin: &str, bdir: &Path, log: &Path) -> Result<Option<String>, String> {
    let Some((dir, r)) = list().into_iter().find_map(|(d, r)| {
        r.ok()
            .filter(|r| r.origin == origin && r.patches.is_empty())
            .map(|r| (d, r))
    }) else {
        return Ok(None);
    };
    let from = dir.join("src/build");
    if !from.is_dir() {
        return Ok(None);
    }
    run_logged(
        tool("cp", "coreutils")?.arg("-a").arg(&from).arg(bdir),
        log,
        "cp -a (seeding the build)",
        None,
    )?;
    // the tools record both the build folder and the source (`-I.../src/tools/include`)
    if let (Some(from_src), Some(to_src)) = (from.parent(), bdir.parent()) {
        repoint(&bdir.join("tools"), from_src, to_src)?;
    }
    Ok(Some(r.key))
}

/// In the make records (`*.cmd`, `*.d`) under `dir`, replace the folder `from` by `to`,
/// keeping each file's mtime. The kernel's own objects name the source `..`, but the
/// userspace tools it builds first (objtool) record absolute paths: left as they were
/// copied, they would look changed, objtool would be relinked, and every object that
/// objtool checks would be rebuilt with it.
fn repoint(dir: &Path, from: &Path, to: &Path) -> Result<(), String> {
    let (old, new) = (
        from.as_os_str().as_encoded_bytes(),
        to.as_os_str().as_encoded_bytes(),
    );
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            let name = e.file_name();
            let name = name.to_string_lossy();
            if ft.is_dir() {
                todo.push(p);
                continue;
            }
            if !ft.is_file() || !(name.ends_with(".cmd") || name.ends_with(".d")) {
                continue;
            }
            let data = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            if !data.windows(old.len()).any(|w| w == old) {
                continue;
            }
            let mut out = Vec::with_capacity(data.len());
            let mut i = 0;
            while i < data.len() {
                if data[i..].starts_with(old) {
                    out.extend_from_slice(new);
                    i += old.len();
                } else {
                    out.push(data[i]);
                    i += 1;
                }
            }
            let mtime = e
                .metadata()
                .and_then(|m| m.modified())
                .map_err(|e| format!("{}: {e}", p.display()))?;
            let f = std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            (&f).write_all(&out)
                .and_then(|()| f.set_modified(mtime))
                .map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// The build's outputs as an unpacked kernel package: what `kernel.rs` reads.
fn install(build: &Path, tree: &Path, release: &str) -> Result<(), String> {
    let boot = tree.join("boot");
    let modules = tree.join("lib/modules").join(release);
    for d in [&boot, &modules.join("kernel")] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    copy(
        &build.join("arch/x86/boot/bzImage"),
        &boot.join(format!("vmlinuz-{release}")),
    )?;
    copy(
        &build.join(".config"),
        &boot.join(format!("config-{release}")),
    )?;
    copy(
        &build.join("vmlinux"),
        &tree.join(format!("vmlinux-{release}")),
    )?;
    let builtin = build.join("modules.builtin");
    if builtin.is_file() {
        copy(&builtin, &modules.join("modules.builtin"))
    } else {
        std::fs::write(modules.join("modules.builtin"), "")
            .map_err(|e| format!("{}: {e}", modules.display()))
    }
}

fn read_record(p: &Path) -> Result<BuildRecord, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
}

/// Every complete build in the cache, by key.
pub fn list() -> Vec<(PathBuf, Result<BuildRecord, String>)> {
    let mut v: Vec<(PathBuf, Result<BuildRecord, String>)> = std::fs::read_dir(builds_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(".complete").is_file())
        .map(|p| {
            let r = read_record(&p.join("build.toml"));
            (p, r)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The entry whose key is `key` or starts with it: among the finished builds, or with
/// `complete` false among every folder of ours (a build that failed or never ended).
fn find_entry(key: &str, complete: bool) -> Result<PathBuf, String> {
    let all: Vec<PathBuf> = std::fs::read_dir(builds_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(MARK).is_file() && *p != sources_dir())
        .filter(|p| !complete || p.join(".complete").is_file())
        .collect();
    let name = |p: &PathBuf| {
        p.file_name()
            .map_or(String::new(), |f| f.to_string_lossy().into_owned())
    };
    let found: Vec<&PathBuf> = all.iter().filter(|p| name(p).starts_with(key)).collect();
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            let mut keys: Vec<String> = all.iter().map(name).collect();
            keys.sort();
            Err(format!(
                "no such build in {} (built: {}); `blkcg-sim kernel build` makes one",
                builds_dir().display(),
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ))
        }
        many => Err(format!(
            "{} builds start with {key}; give more of the key",
            many.len()
        )),
    }
}

/// `--kernel` of validate naming a build: `built:KEY` (a key or a unique prefix of
/// one) or the path of a build's folder (one with `build.toml`). None for anything
/// else (a package, a .deb, an unpacked package tree).
pub fn built(spec: &str) -> Result<Option<Built>, String> {
    let entry = if let Some(key) = spec.strip_prefix("built:") {
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
            || key.starts_with('.')
        {
            return Err(format!(
                "--kernel {spec}: a build key is what `blkcg-sim kernel build` printed \
                 (VERSION-HASH)"
            ));
        }
        find_entry(key, true).map_err(|e| format!("--kernel {spec}: {e}"))?
    } else {
        let p = Path::new(spec);
        if !(p.is_dir() && p.join("build.toml").is_file()) {
            return Ok(None);
        }
        p.to_path_buf()
    };
    if !entry.join(".complete").is_file() {
        return Err(format!(
            "{}: this build never finished; run its `blkcg-sim kernel build` again",
            entry.display()
        ));
    }
    Ok(Some(Built {
        record: read_record(&entry.join("build.toml"))?,
        tree: entry.join("tree"),
        entry,
        fresh: false,
    }))
}

/// `kernel build --dry-run`: the key, whether it is cached, the fragment; fetches and
/// builds nothing.
pub fn dry_run(o: &BuildOptions<'_>) -> Result<String, String> {
    let (plan, _) = Plan::new(o, Source::of(o.source.as_deref())?, false)?;
    let entry = builds_dir().join(&plan.key);
    let mut s = String::new();
    let _ = writeln!(s, "source: {} ({})", plan.source.describe(), plan.version);
    for (p, _) in &plan.patches {
        let b: Vec<String> = p
            .behaviours
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(s, "patch:  {} {}", p.file.display(), b.join(", "));
    }
    let _ = writeln!(s, "key:    {}", plan.key);
    let _ = writeln!(
        s,
        "cached: {} ({})",
        if entry.join(".complete").is_file() {
            "yes"
        } else {
            "no"
        },
        entry.display()
    );
    let _ = writeln!(
        s,
        "tools:  {}",
        check_build_needs(&plan.source).map_or_else(|e| e, |()| "all installed".into())
    );
    let _ = writeln!(
        s,
        "config: make tinyconfig, then this fragment, then make olddefconfig:"
    );
    for l in kconfig::render(&plan.groups).lines() {
        let _ = writeln!(s, "  {l}");
    }
    Ok(s)
}

/// `kernel clean`: remove the named builds (keys or unique prefixes), or with `all`
/// every build and unpacked source; only folders we created. Returns what was removed.
pub fn clean(keys: &[String], all: bool) -> Result<Vec<PathBuf>, String> {
    let mut gone = Vec::new();
    if all {
        let dirs: Vec<PathBuf> = std::fs::read_dir(builds_dir())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.join(MARK).is_file() && p != &sources_dir())
            .chain(
                std::fs::read_dir(sources_dir())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir() && p.join(MARK).is_file()),
            )
            .collect();
        for d in dirs {
            remove_ours(&d)?;
            gone.push(d);
        }
        return Ok(gone);
    }
    for k in keys {
        let entry = find_entry(k, false)?;
        remove_ours(&entry)?;
        gone.push(entry);
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_patches_give_a_switch_one_value() {
        let dir = std::env::temp_dir().join(format!("blkcg-sim-patchtwice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("fix.patch");
        std::fs::write(&f, "").unwrap();
        let fs = f.display().to_string();
        // one patch giving a switch twice: patches_declare_behaviours_the_simulator_knows;
        // here two patches, each giving it once
        let o = BuildOptions {
            patches: vec![
                format!("{fs}=iocost.no_completion:keep-if-lagging"),
                format!("{fs}=iocost.no_completion:reset"),
            ],
            source: None,
            config: vec![],
            dry_run: true,
            notify: &crate::notify::Ignore,
        };
        let tree = dir.join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(
            tree.join("Makefile"),
            "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 1\n",
        )
        .unwrap();
        let e = Plan::new(&o, Source::Tree(tree), false).err().unwrap();
        assert!(e.contains("a switch has one value per build"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn patches_declare_behaviours_the_simulator_knows() {
        let dir = std::env::temp_dir().join(format!("blkcg-sim-patchspec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("fix.patch");
        std::fs::write(&f, "").unwrap();
        let fs = f.display().to_string();
        assert_eq!(
            PatchSpec::parse(&fs).unwrap(),
            PatchSpec {
                file: f.clone(),
                behaviours: vec![]
            }
        );
        let p = PatchSpec::parse(&format!(
            "{fs}=iocost.no_completion:keep-if-lagging,throttle.slice:hz/10"
        ))
        .unwrap();
        assert_eq!(
            p.behaviours,
            [
                (
                    "iocost.no_completion".to_string(),
                    "keep-if-lagging".to_string()
                ),
                ("throttle.slice".to_string(), "hz/10".to_string())
            ]
        );
        let e = PatchSpec::parse(&format!("{fs}=iocost.no_completion:maybe")).unwrap_err();
        assert!(
            e.contains("`maybe`: accepted: reset, clamp-4, keep-if-lagging"),
            "{e}"
        );
        let e = PatchSpec::parse(&format!("{fs}=iocost.no_completion")).unwrap_err();
        assert!(e.contains("not SWITCH:VALUE"), "{e}");
        let e = PatchSpec::parse(&format!("{fs}=wbt.x:y")).unwrap_err();
        assert!(e.contains("not a behaviour switch"), "{e}");
        let e = PatchSpec::parse(&format!(
            "{fs}=iocost.no_completion:reset,iocost.no_completion:clamp-4"
        ))
        .unwrap_err();
        assert!(
            e.contains("`iocost.no_completion` is given twice (iocost.no_completion:reset, iocost.no_completion:clamp-4)"),
            "{e}"
        );
        let e = PatchSpec::parse("/no/such.patch").unwrap_err();
        assert!(e.contains("no such file"), "{e}");
        // a file whose name has `=` is still the file
        let g = dir.join("a=b.patch");
        std::fs::write(&g, "").unwrap();
        assert_eq!(PatchSpec::parse(&g.display().to_string()).unwrap().file, g);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rejected_and_moved_hunks_are_named() {
        let patch = "--- a/block/blk-iocost.c\n+++ b/block/blk-iocost.c\n@@ -10,3 +10,4 @@ static int a(void)\n x\n+y\n@@ -2397,9 +2400,17 @@ static void ioc_timer_fn(struct timer_list *timer)\n-a\n+b\n--- a/other.c\n+++ b/other.c\n@@ -1 +1 @@\n-c\n+d\n";
        let out = "checking file block/blk-iocost.c\nHunk #1 succeeded at 12 (offset 2 lines).\nHunk #2 FAILED at 2397.\n1 out of 2 hunks FAILED\nchecking file other.c\n";
        assert_eq!(
            hunk_report(out, patch, true),
            [
                "block/blk-iocost.c hunk #2 @@ -2397,9 +2400,17 @@ static void ioc_timer_fn(struct timer_list *timer): Hunk #2 FAILED at 2397."
            ]
        );
        assert_eq!(
            hunk_report(out, patch, false),
            [
                "block/blk-iocost.c hunk #1 @@ -10,3 +10,4 @@ static int a(void): Hunk #1 succeeded at 12 (offset 2 lines)."
            ]
        );
        assert_eq!(
            hunk_header(patch, "other.c", 1).as_deref(),
            Some("@@ -1 +1 @@")
        );
        assert_eq!(hunk_header(patch, "other.c", 2), None);
    }

    #[test]
    fn sources_are_series_folders_or_tarballs() {
        for bad in ["6", "6.x", "latest", "6.12.1"] {
            let e = Source::of(Some(bad)).unwrap_err();
            assert!(
                e.starts_with(&format!("--source {bad}: not a kernel series")),
                "{e}"
            );
        }
        let e = Source::of(Some("/")).unwrap_err();
        assert!(
            e.contains("not a Linux source tree (no Makefile there)"),
            "{e}"
        );
        let e = Source::of(Some("Cargo.toml")).unwrap_err();
        assert!(e.contains("not a tarball"), "{e}");
    }

    #[test]
    fn built_keys_are_plain_names() {
        for bad in ["built:", "built:../x", "built:a/b", "built:.hidden"] {
            let e = built(bad).err().unwrap_or_default();
            assert!(e.contains("a build key is what"), "{bad}: {e}");
        }
        assert!(matches!(built("linux-image-6.1.0-56-amd64"), Ok(None)));
    }

    #[test]
    fn a_record_lists_its_behaviours() {
        let r = BuildRecord {
            key: "6.12.117-0123456789ab".into(),
            source: "Debian's linux-source-6.12 6.12.117-1~deb12u1".into(),
            origin: "debian linux-source-6.12 6.12.117-1~deb12u1".into(),
            version: "6.12.117".into(),
            release: "6.12.117-blkcg-sim".into(),
            patches: vec![PatchRecord {
                file: "/x/fix.patch".into(),
                copy: "patches/1-fix.patch".into(),
                behaviours: vec!["iocost.no_completion=keep-if-lagging".into()],
            }],
            adapted: vec![],
            fragment: "CONFIG_X=y\n".into(),
            jobs: 2,
            build_seconds: 600,
            seeded_from: None,
        };
        assert_eq!(
            r.behaviours(),
            [(
                "iocost.no_completion".to_string(),
                "keep-if-lagging".to_string()
            )]
        );
        assert_eq!(
            r.summary(),
            "Linux 6.12.117-blkcg-sim from Debian's linux-source-6.12 6.12.117-1~deb12u1 + fix.patch (iocost.no_completion=keep-if-lagging)"
        );
        let back: BuildRecord = toml::from_str(&toml::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn fnv_separates_fields() {
        let h = |parts: &[&str]| {
            let mut f = Fnv::new();
            for p in parts {
                f.add(p.as_bytes());
            }
            f.0
        };
        assert_ne!(h(&["ab", "c"]), h(&["a", "bc"]));
        assert_eq!(h(&["x"]), h(&["x"]));
    }
}
