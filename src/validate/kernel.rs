//! The kernel to boot: found, downloaded and unpacked, and read.
//!
//! Design
//! ------
//! `--kernel` names one of: nothing (Debian's current `linux-image-amd64` dependency),
//! a Debian package name (`linux-image-6.12.48+deb12-amd64`), a distribution's kernel
//! as scenarios name it (`debian-12`: the newest package of its series apt knows,
//! `crate::kernel_version::Distro::package`), a `.deb` file, or an
//! unpacked package tree (a folder with `boot/vmlinuz-*` and `lib/modules/*`). Packages
//! are fetched with `apt-get download` and unpacked with `dpkg-deb -x` into the cache
//! folder (`$BLKCG_SIM_CACHE`, else `$XDG_CACHE_HOME/blkcg-sim`, else
//! `~/.cache/blkcg-sim`), once.
//!
//! From the tree we read the release (`uname -r`), `CONFIG_HZ` and whether blk-throttle
//! and blk-iocost are built in, from `boot/config-*`, and the upstream stable version
//! from the bzImage's banner (Debian's `6.1.0-56` is 6.1.192). The bzImage's xz/zstd/gzip
//! payload is unpacked to an ELF `vmlinux` once: qemu boots it through its PVH entry in
//! about half the time (decompressing under TCG is slow). Modules are found by name
//! under `lib/modules/RELEASE/kernel`, their dependencies read with `modinfo -F
//! depends`, and handed over decompressed (busybox `insmod` reads plain `.ko`).
//!
//! Decompressors read a file as their stdin, never a pipe we write: `xz --single-stream`
//! stops at the end of the bzImage's stream, and a write into the pipe it closed would
//! kill us with SIGPIPE (`main` restores its default disposition, for `| head`).
//! [`at_hand`] reads a kernel only if nothing needs downloading, unpacking or
//! extracting (for `--dry-run` and to decide which host tools a run needs).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::kernel_version::{Distro, distro};

/// A kernel ready to boot.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// `uname -r`, e.g. `6.1.0-56-amd64`.
    pub release: String,
    /// What to hand to qemu's `-kernel` (an ELF vmlinux when one could be extracted).
    pub image: PathBuf,
    /// `lib/modules/RELEASE`.
    pub modules: PathBuf,
    /// The kernel's build configuration (`CONFIG_*` → value).
    pub config: BTreeMap<String, String>,
    /// The bzImage's version banner (`6.1.0-56-amd64 (...) #1 SMP ... Debian 6.1.192-2`).
    pub banner: String,
}

impl Kernel {
    /// `CONFIG_HZ` (Debian: 250).
    pub fn hz(&self) -> Option<u32> {
        self.config.get("CONFIG_HZ").and_then(|v| v.parse().ok())
    }

    /// The upstream version this kernel is built from, `MAJOR.MINOR.PATCH`, for
    /// `kernel.version` (stable series carry backported fixes, and presets know some).
    /// Debian's release names hide the patch level (`6.1.0-56-amd64` is 6.1.192), so
    /// the bzImage's version banner (`... Debian 6.1.192-2 ...`) is read first.
    pub fn upstream_version(&self) -> String {
        let from = |s: &str| -> Option<String> {
            let v: Vec<&str> = s
                .split(|c: char| !c.is_ascii_digit())
                .take(3)
                .take_while(|p| !p.is_empty())
                .collect();
            (v.len() >= 2).then(|| v.join("."))
        };
        self.banner
            .split_once("Debian ")
            .and_then(|(_, rest)| from(rest))
            .or_else(|| from(&self.release))
            .unwrap_or_else(|| self.release.clone())
    }

    /// Whether `CONFIG_name` is `y` (built in) or `m` (a module).
    pub fn has(&self, name: &str) -> Option<&str> {
        self.config.get(name).map(String::as_str)
    }

    /// The modules to load for `names`, dependencies first: (name, host path of the
    /// module file, maybe compressed; [`read_module`] gives it plain). Built-in modules
    /// are skipped.
    pub fn modules_for(&self, names: &[&str]) -> Result<Vec<(String, PathBuf)>, String> {
        let index = module_index(&self.modules.join("kernel"))?;
        let builtin =
            std::fs::read_to_string(self.modules.join("modules.builtin")).unwrap_or_default();
        let is_builtin = |n: &str| {
            builtin.lines().any(|l| {
                Path::new(l)
                    .file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| module_name(f) == Some(n.replace('-', "_")))
            })
        };
        let mut order: Vec<String> = Vec::new();
        let mut stack: Vec<(String, bool)> = names
            .iter()
            .rev()
            .map(|n| (n.replace('-', "_"), false))
            .collect();
        while let Some((name, deps_done)) = stack.pop() {
            if order.contains(&name) {
                continue;
            }
            let Some(path) = index.get(&name) else {
                if is_builtin(&name) {
                    continue;
                }
                return Err(format!(
                    "module `{name}` is neither built into {} nor under {}",
                    self.release,
                    self.modules.display()
                ));
            };
            if deps_done {
                order.push(name);
                continue;
            }
            stack.push((name.clone(), true));
            for d in module_depends(path)? {
                if !order.contains(&d) {
                    stack.push((d, false));
                }
            }
        }
        Ok(order
            .into_iter()
            .map(|name| {
                let path = index[&name].clone();
                (name, path)
            })
            .collect())
    }
}

/// `null_blk.ko.xz` → `null_blk` (dashes as underscores, as modprobe does).
fn module_name(file: &str) -> Option<String> {
    let stem = file
        .strip_suffix(".ko")
        .or_else(|| file.strip_suffix(".ko.xz"))
        .or_else(|| file.strip_suffix(".ko.zst"))
        .or_else(|| file.strip_suffix(".ko.gz"))?;
    Some(stem.replace('-', "_"))
}

fn module_index(dir: &Path) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if let Some(n) = p.file_name().and_then(|f| f.to_str()).and_then(module_name) {
                out.insert(n, p);
            }
        }
    }
    Ok(out)
}

fn module_depends(path: &Path) -> Result<Vec<String>, String> {
    let out = tool("modinfo", "kmod")?
        .args(["-F", "depends"])
        .arg(path)
        .output()
        .map_err(|e| format!("modinfo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "modinfo {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.replace('-', "_"))
        .collect())
}

/// A command, or an error naming the Debian package that provides it.
pub fn tool(cmd: &str, package: &str) -> Result<Command, String> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain([PathBuf::from("/sbin"), PathBuf::from("/usr/sbin")])
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
        .map(Command::new)
        .ok_or_else(|| {
            format!(
                "`{cmd}` is not installed; it comes with the Debian package `{package}` \
                 (all of validate's tools: {INSTALL_LINE})"
            )
        })
}

/// Nothing, if every one of `tools` (command, Debian package) is installed; else one
/// error naming the missing ones and the `apt-get install` line for their packages.
pub fn check_tools(tools: &[(&str, &str)]) -> Result<(), String> {
    let missing: Vec<(&str, &str)> = tools
        .iter()
        .filter(|(c, p)| tool(c, p).is_err())
        .copied()
        .collect();
    missing_error("validate", &missing)
}

/// Nothing if `missing` (what, Debian package) is empty; else one line: what `who`
/// needs that is missing here and the `apt-get install` line for its packages.
pub fn missing_error(who: &str, missing: &[(&str, &str)]) -> Result<(), String> {
    if missing.is_empty() {
        return Ok(());
    }
    let mut packages: Vec<&str> = Vec::new();
    for (_, p) in missing {
        if !packages.contains(p) {
            packages.push(p);
        }
    }
    let commands: Vec<&str> = missing.iter().map(|(c, _)| *c).collect();
    Err(format!(
        "{who} needs {} on this machine, missing here: apt-get install -y \
         --no-install-recommends {}",
        commands.join(", "),
        packages.join(" ")
    ))
}

/// The one line that installs everything validate needs.
pub const INSTALL_LINE: &str =
    "apt-get install -y qemu-system-x86 busybox-static fio cpio xz-utils zstd kmod";

/// What `cmd` prints reading `input` from its current offset as its stdin: a file, not
/// a pipe, so a decompressor that stops early cannot make us write into a closed pipe.
fn decompress(cmd: &mut Command, input: File) -> Result<Vec<u8>, String> {
    let out = cmd
        .stdin(Stdio::from(input))
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    Ok(out.stdout)
}

fn open(path: &Path) -> Result<File, String> {
    File::open(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A module file's contents, decompressed (`.ko.xz`, `.ko.zst`, `.ko.gz`, or plain).
pub fn read_module(path: &Path) -> Result<Vec<u8>, String> {
    let name = path.to_string_lossy();
    for (ext, cmd, pkg) in [
        (".xz", "xz", "xz-utils"),
        (".zst", "zstd", "zstd"),
        (".gz", "gzip", "gzip"),
    ] {
        if name.ends_with(ext) {
            return decompress(tool(cmd, pkg)?.arg("-dc"), open(path)?);
        }
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The cache folder for kernels.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BLKCG_SIM_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("blkcg-sim")
}

/// Read a kernel configuration file into `CONFIG_*` → value.
pub fn parse_config(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.starts_with("CONFIG_"))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

/// Where the kernel `--kernel` names comes from.
enum Origin {
    /// An unpacked package tree given by the user.
    Tree(PathBuf),
    /// A `.deb` file, unpacked into `dir` in the cache.
    Deb { deb: PathBuf, dir: PathBuf },
    /// A Debian package, downloaded and unpacked into `dir` in the cache.
    Package { name: String, dir: PathBuf },
}

impl Origin {
    /// Read `spec` (None: Debian's current default package, which asks `apt-cache`).
    fn of(spec: Option<&str>) -> Result<Origin, String> {
        let cache = cache_dir().join("kernels");
        Ok(match spec {
            Some(s) if Path::new(s).is_dir() => Origin::Tree(PathBuf::from(s)),
            Some(s) if s.ends_with(".deb") => {
                let deb = PathBuf::from(s);
                if !deb.is_file() {
                    return Err(format!("{s}: no such file"));
                }
                let stem = deb.file_stem().and_then(|f| f.to_str()).unwrap_or("kernel");
                let dir = cache.join(stem);
                Origin::Deb { deb, dir }
            }
            Some(s) if s.contains('/') => {
                return Err(format!(
                    "{s}: not a folder or .deb; --kernel takes an unpacked package tree (with \
                     boot/vmlinuz-* and lib/modules/), a .deb file, or a Debian package name"
                ));
            }
            _ => {
                let name = match spec {
                    Some(p) => match distro(p) {
                        Some(d) => distro_package(d)?,
                        None => p.to_string(),
                    },
                    None => default_package()?,
                };
                let dir = cache.join(&name);
                Origin::Package { name, dir }
            }
        })
    }

    /// The unpacked tree, if it is there already.
    fn tree(&self) -> Option<&Path> {
        match self {
            Origin::Tree(t) => Some(t),
            Origin::Deb { dir, .. } | Origin::Package { dir, .. } => {
                dir.join(".unpacked").is_file().then_some(dir.as_path())
            }
        }
    }
}

/// The kernel `spec` names if it is here already, read without downloading, unpacking
/// or extracting anything (its image may still be the bzImage).
pub fn at_hand(spec: Option<&str>) -> Result<Option<Kernel>, String> {
    Origin::of(spec)?.tree().map(read_tree).transpose()
}

/// Find or fetch the kernel `spec` names (None: Debian's current default), with an
/// ELF vmlinux extracted when it can boot that way.
pub fn obtain(spec: Option<&str>, log: &mut dyn FnMut(&str)) -> Result<Kernel, String> {
    let origin = Origin::of(spec)?;
    let tree = match (&origin, origin.tree()) {
        (_, Some(t)) => t.to_path_buf(),
        (Origin::Deb { deb, dir }, None) => unpack(deb, dir, log)?,
        (Origin::Package { name, dir }, None) => download(name, dir, log)?,
        // (a user's tree is always at hand)
        (Origin::Tree(t), None) => t.clone(),
    };
    let mut k = read_tree(&tree)?;
    let vmlinux = tree.join(format!("vmlinux-{}", k.release));
    if k.image != vmlinux && k.has("CONFIG_PVH") == Some("y") {
        log("extracting an ELF vmlinux from the bzImage (boots twice as fast under TCG)");
        if let Some(elf) = extract_vmlinux(&k.image) {
            // written whole under another name first: an interrupted run leaves no
            // truncated vmlinux to boot next time
            let part = tree.join(format!("vmlinux-{}.part", k.release));
            std::fs::write(&part, elf).map_err(|e| format!("{}: {e}", part.display()))?;
            std::fs::rename(&part, &vmlinux).map_err(|e| format!("{}: {e}", vmlinux.display()))?;
            k.image = vmlinux;
        }
    }
    Ok(k)
}

/// `apt-get download` the package `name` into the cache and unpack it into `dir`.
fn download(name: &str, dir: &Path, log: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let cache = dir.parent().unwrap_or(dir);
    log(&format!("downloading {name} (apt-get download)"));
    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let out = tool("apt-get", "apt")?
        // `--`: the name is an operand, never an option, whatever it looks like
        .args(["download", "--", name])
        .current_dir(cache)
        .output()
        .map_err(|e| format!("apt-get: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "apt-get download {name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let deb = std::fs::read_dir(cache)
        .map_err(|e| format!("{}: {e}", cache.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with(&format!("{name}_")) && f.ends_with(".deb"))
        })
        .ok_or_else(|| {
            format!(
                "apt-get download {name}: no .deb appeared in {}",
                cache.display()
            )
        })?;
    let tree = unpack(&deb, dir, log)?;
    let _ = std::fs::remove_file(&deb);
    Ok(tree)
}

/// The package `linux-image-amd64` depends on today.
fn default_package() -> Result<String, String> {
    let out = tool("apt-cache", "apt")?
        .args(["depends", "linux-image-amd64"])
        .output()
        .map_err(|e| format!("apt-cache: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|p| p.starts_with("linux-image-"))
        .map(str::to_string)
        .ok_or_else(|| {
            "cannot tell which kernel package linux-image-amd64 stands for (run `apt-get \
             update` first, or name one with --kernel)"
                .into()
        })
}

/// The package that boots distribution `d`'s kernel: the newest of its names apt
/// knows (`debian-12`: `linux-image-6.1.0-N-amd64`).
fn distro_package(d: &Distro) -> Result<String, String> {
    let Some(pattern) = d.package else {
        return Err(format!(
            "--kernel {}: {}'s kernels are not in Debian's archive; name its .deb or an \
             unpacked package folder",
            d.name, d.release
        ));
    };
    let out = tool("apt-cache", "apt")?
        .args(["search", "--names-only", pattern])
        .output()
        .map_err(|e| format!("apt-cache: {e}"))?;
    let listed = String::from_utf8_lossy(&out.stdout);
    newest(listed.lines().filter_map(|l| l.split_whitespace().next())).ok_or_else(|| {
        format!(
            "--kernel {}: apt knows no package of {}'s kernel ({pattern}; run `apt-get \
             update` first, or name one)",
            d.name, d.release
        )
    })
}

/// The newest of package `names`, comparing the numbers in them in turn
/// (`linux-image-6.1.0-56-amd64` after `...-9-amd64`).
fn newest<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    let numbers = |n: &str| -> Vec<u64> {
        n.split(|c: char| !c.is_ascii_digit())
            .filter_map(|d| d.parse().ok())
            .collect()
    };
    names.max_by_key(|n| numbers(n)).map(str::to_string)
}

/// `dpkg-deb -x` the package into `dir`, marked `.unpacked` once complete.
fn unpack(deb: &Path, dir: &Path, log: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    log(&format!("unpacking {}", deb.display()));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let st = tool("dpkg-deb", "dpkg")?
        .arg("-x")
        .arg(deb)
        .arg(dir)
        .status()
        .map_err(|e| format!("dpkg-deb: {e}"))?;
    if !st.success() {
        return Err(format!("dpkg-deb -x {} failed", deb.display()));
    }
    let mark = dir.join(".unpacked");
    std::fs::write(&mark, "").map_err(|e| format!("{}: {e}", mark.display()))?;
    Ok(dir.to_path_buf())
}

/// A kernel from an unpacked package tree, read only: its image is the ELF vmlinux
/// extracted before, else the bzImage.
fn read_tree(tree: &Path) -> Result<Kernel, String> {
    let boot = tree.join("boot");
    let vmlinuz = std::fs::read_dir(&boot)
        .map_err(|e| {
            format!(
                "{}: {e} (expected an unpacked linux-image package)",
                boot.display()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with("vmlinuz-"))
        })
        .ok_or_else(|| format!("{}: no vmlinuz-* there", boot.display()))?;
    let release = vmlinuz
        .file_name()
        .and_then(|f| f.to_str())
        .and_then(|f| f.strip_prefix("vmlinuz-"))
        .unwrap_or_default()
        .to_string();
    let config_path = boot.join(format!("config-{release}"));
    let config = parse_config(
        &std::fs::read_to_string(&config_path)
            .map_err(|e| format!("{}: {e}", config_path.display()))?,
    );
    let modules = tree.join("lib/modules").join(&release);
    if !modules.is_dir() {
        return Err(format!(
            "{}: missing (the package's modules)",
            modules.display()
        ));
    }
    let banner = std::fs::read(&vmlinuz)
        .ok()
        .and_then(|d| bzimage_banner(&d))
        .unwrap_or_default();
    let vmlinux = tree.join(format!("vmlinux-{release}"));
    Ok(Kernel {
        release,
        image: if vmlinux.is_file() { vmlinux } else { vmlinuz },
        modules,
        config,
        banner,
    })
}

/// The version string a bzImage points at (boot protocol: `kernel_version` at 0x20e,
/// an offset from 0x200).
fn bzimage_banner(d: &[u8]) -> Option<String> {
    let at = u16::from_le_bytes([*d.get(0x20e)?, *d.get(0x20f)?]) as usize + 0x200;
    let s = d.get(at..)?;
    let end = s.iter().take(512).position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}

/// The ELF kernel inside a bzImage: the first compressed stream that unpacks to ELF.
/// The decompressor reads the bzImage itself from the stream's offset on.
fn extract_vmlinux(bzimage: &Path) -> Option<Vec<u8>> {
    let data = std::fs::read(bzimage).ok()?;
    let formats: [(&[u8], &str, &str); 3] = [
        (b"\xfd7zXZ\x00", "xz", "xz-utils"),
        (b"\x28\xb5\x2f\xfd", "zstd", "zstd"),
        (b"\x1f\x8b\x08\x00", "gzip", "gzip"),
    ];
    for (magic, cmd, pkg) in formats {
        let Some(at) = data.windows(magic.len()).position(|w| w == magic) else {
            continue;
        };
        let mut c = tool(cmd, pkg).ok()?;
        c.arg("-dc");
        if cmd == "xz" {
            c.arg("--single-stream");
        }
        let mut input = File::open(bzimage).ok()?;
        input.seek(SeekFrom::Start(at as u64)).ok()?;
        if let Ok(elf) = decompress(&mut c, input)
            && elf.starts_with(b"\x7fELF")
        {
            return Some(elf);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_and_version() {
        let mut k = Kernel {
            release: "6.12.48+deb12-amd64".into(),
            image: PathBuf::new(),
            modules: PathBuf::new(),
            config: parse_config(
                "# comment\nCONFIG_HZ=250\nCONFIG_BLK_CGROUP_IOCOST=y\n# CONFIG_X is not set\n",
            ),
            banner: String::new(),
        };
        assert_eq!(k.hz(), Some(250));
        assert_eq!(k.upstream_version(), "6.12.48");
        assert_eq!(k.has("CONFIG_BLK_CGROUP_IOCOST"), Some("y"));
        assert_eq!(k.has("CONFIG_X"), None);
        k.release = "6.1.0-56-amd64".into();
        k.banner = "6.1.0-56-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC \
                    Debian 6.1.192-2 (2026-11-16)"
            .into();
        assert_eq!(k.upstream_version(), "6.1.192");
    }

    #[test]
    fn missing_tools_are_named_with_the_line_that_installs_them() {
        let e = check_tools(&[
            ("sh", "dash"),
            ("blkcg-sim-no-such-tool", "pkg-a"),
            ("blkcg-sim-no-such-tool-2", "pkg-a"),
            ("blkcg-sim-no-such-tool-3", "pkg-b"),
        ])
        .expect_err("missing");
        assert!(
            e.contains(
                "blkcg-sim-no-such-tool, blkcg-sim-no-such-tool-2, blkcg-sim-no-such-tool-3"
            ) && e.ends_with("apt-get install -y --no-install-recommends pkg-a pkg-b")
                && !e.contains("sh,"),
            "{e}"
        );
        assert_eq!(check_tools(&[("sh", "dash")]), Ok(()));
    }

    #[test]
    fn a_distribution_boots_its_newest_package() {
        let listed = [
            "linux-image-6.1.0-9-amd64",
            "linux-image-6.1.0-56-amd64",
            "linux-image-6.1.0-55-amd64",
        ];
        assert_eq!(
            newest(listed.into_iter()).as_deref(),
            Some("linux-image-6.1.0-56-amd64")
        );
        assert_eq!(newest(std::iter::empty()), None);
        // not in Debian's archive: said, with what to give instead
        let ubuntu = distro("ubuntu-24.04").unwrap();
        assert!(
            distro_package(ubuntu)
                .unwrap_err()
                .contains("name its .deb")
        );
    }

    #[test]
    fn module_names() {
        assert_eq!(module_name("null_blk.ko.xz").as_deref(), Some("null_blk"));
        assert_eq!(module_name("crc-t10dif.ko").as_deref(), Some("crc_t10dif"));
        assert_eq!(module_name("README"), None);
    }
}
