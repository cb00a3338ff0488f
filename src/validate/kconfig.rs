//! The guest kernel's configuration: the fragment `kernel build` puts on top of
//! `make tinyconfig`, and the check that `make olddefconfig` kept every option asked for.
//!
//! Design
//! ------
//! [`guest_fragment`] is pure data: groups of `CONFIG_*` options, each group with the
//! reason the guest needs it (qemu's PVH entry, the serial console, what validate's
//! `/init` mounts and runs, fio's system calls, null_blk and configfs built in because
//! the initramfs carries no modules, every blk-cgroup policy, the I/O schedulers, the
//! tracepoints validate reads). Options that exist only in some kernel versions are
//! chosen by the source's `MAJOR.MINOR`: `BLK_DEV_THROTTLING_LOW` (4.10 to 6.8) and the
//! slab allocator `tinyconfig` picks (SLOB before 6.2, SLUB_TINY from 6.2; the guest
//! gets plain SLUB as Debian's kernels have). `--config KEY=VAL` options ([`parse_option`])
//! replace the fragment's value for the same symbol or are added at the end.
//!
//! After `olddefconfig` resolved dependencies, [`verify`] compares the resulting
//! `.config` with every option asked for; one that did not stick is explained from the
//! source's Kconfig files ([`KconfigIndex`]): the version has no such symbol, or its
//! `depends on` lines are not met. The fragment is rendered ([`render`]) as `.config`
//! text with each group's reason as a comment, which is what `kernel build` prints and
//! keeps in its cache entry.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::stack::registry;

/// One option: the symbol without `CONFIG_`, and its value as `.config` writes it
/// (`y`, `n` for "is not set", a number, or a quoted string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    pub name: String,
    pub value: String,
}

/// Options that belong together, with why the guest needs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub why: String,
    pub opts: Vec<Opt>,
}

/// The fragment's groups for a source of version `(major, minor)`, without the user's
/// `--config` options.
pub fn guest_fragment(version: (u32, u32)) -> Vec<Group> {
    let v = version;
    let group = |why: &str, opts: &[(&str, &str)]| Group {
        why: why.to_string(),
        opts: opts
            .iter()
            .map(|(n, val)| Opt {
                name: n.to_string(),
                value: val.to_string(),
            })
            .collect(),
    };
    // every policy's and elevator's options, as the registry names them
    let mut cgroup_policies = vec![("CGROUPS", "y"), ("BLK_CGROUP", "y")];
    let mut schedulers = Vec::new();
    for o in registry::POLICIES.iter().flat_map(|d| d.kconfig) {
        if o.in_version(v) {
            cgroup_policies.push((o.name, "y"));
        }
    }
    for o in registry::ELEVATORS.iter().flat_map(|e| e.kconfig) {
        if o.in_version(v) {
            schedulers.push((o.name, "y"));
        }
    }
    // BFQ with its cgroup side, for scenarios compared on a real kernel with it
    schedulers.extend([("IOSCHED_BFQ", "y"), ("BFQ_GROUP_IOSCHED", "y")]);
    // tinyconfig's allocator is SLOB before 6.2 (removed in 6.4) and SLUB_TINY from 6.2
    let slab: &[(&str, &str)] = if v < (6, 2) {
        &[("SLUB", "y")]
    } else {
        &[("SLUB", "y"), ("SLUB_TINY", "n")]
    };
    vec![
        group(
            "a 64-bit x86 guest that qemu boots through the PVH entry of its ELF vmlinux",
            &[
                ("64BIT", "y"),
                ("SMP", "y"),
                ("HYPERVISOR_GUEST", "y"),
                ("PVH", "y"),
            ],
        ),
        group(
            "the timing Debian's kernels have: HZ=250, high-resolution timers, voluntary preemption",
            &[
                ("HZ_250", "y"),
                ("HIGH_RES_TIMERS", "y"),
                ("NO_HZ_IDLE", "y"),
                ("PREEMPT_VOLUNTARY", "y"),
            ],
        ),
        group("the memory allocator Debian's kernels have", slab),
        group(
            "the serial console validate reads (console=ttyS0)",
            &[
                ("PRINTK", "y"),
                ("TTY", "y"),
                ("SERIAL_8250", "y"),
                ("SERIAL_8250_CONSOLE", "y"),
            ],
        ),
        group(
            "power-off at the end of /init (poweroff -f needs ACPI on qemu's PC)",
            &[("PCI", "y"), ("ACPI", "y")],
        ),
        group(
            "validate's /init: an uncompressed initramfs, a busybox script, ELF binaries, its mounts",
            &[
                ("BLK_DEV_INITRD", "y"),
                ("BINFMT_ELF", "y"),
                ("BINFMT_SCRIPT", "y"),
                ("PROC_FS", "y"),
                ("SYSFS", "y"),
                ("DEVTMPFS", "y"),
                ("SHMEM", "y"),
                ("TMPFS", "y"),
                ("CONFIGFS_FS", "y"),
            ],
        ),
        group(
            "fio: glibc's threads and timers, libaio, io_uring, SysV shared memory for its job state",
            &[
                ("MULTIUSER", "y"),
                ("SYSVIPC", "y"),
                ("POSIX_TIMERS", "y"),
                ("FUTEX", "y"),
                ("EPOLL", "y"),
                ("SIGNALFD", "y"),
                ("TIMERFD", "y"),
                ("EVENTFD", "y"),
                ("AIO", "y"),
                ("IO_URING", "y"),
                ("FILE_LOCKING", "y"),
            ],
        ),
        group(
            "null_blk built in: the initramfs carries no modules",
            &[("BLOCK", "y"), ("BLK_DEV", "y"), ("BLK_DEV_NULL_BLK", "y")],
        ),
        group("every blk-cgroup policy", &cgroup_policies),
        group(
            "the I/O schedulers, BFQ with its cgroup support",
            &schedulers,
        ),
        group(
            "the tracepoints validate records (tracefs), and debugfs",
            &[
                ("FTRACE", "y"),
                ("ENABLE_DEFAULT_TRACERS", "y"),
                ("DEBUG_FS", "y"),
            ],
        ),
        group(
            "the release names the build (uname -r: VERSION-blkcg-sim)",
            &[
                ("LOCALVERSION", "\"-blkcg-sim\""),
                ("LOCALVERSION_AUTO", "n"),
            ],
        ),
    ]
}

/// A `--config` value: `KEY=VAL` with `KEY` a Kconfig symbol (with or without
/// `CONFIG_`) and `VAL` one of `y`, `n`, `m`, a decimal or hex number, or a string in
/// double quotes without quotes, backslashes, `$` or backquotes inside (make reads
/// `include/config/auto.conf`, and would expand `$(shell ...)` in a value it uses).
pub fn parse_option(s: &str) -> Result<Opt, String> {
    let bad = |why: &str| {
        format!(
            "--config `{}`: {why}; expected KEY=VAL, e.g. BLK_DEV_THROTTLING_LOW=y, HZ_1000=y, \
             LOCALVERSION=\"-mine\"",
            s.escape_debug()
        )
    };
    let (k, v) = s.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let name = k.strip_prefix("CONFIG_").unwrap_or(k);
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(bad(
            "a Kconfig symbol is upper-case letters, digits and `_`",
        ));
    }
    let number = |t: &str| {
        let digits = t.strip_prefix('-').unwrap_or(t);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    let hex = |t: &str| {
        t.strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let string = |t: &str| {
        t.len() >= 2
            && t.starts_with('"')
            && t.ends_with('"')
            && t[1..t.len() - 1]
                .chars()
                .all(|c| !matches!(c, '"' | '\\' | '$' | '`') && !c.is_control())
    };
    if !(matches!(v, "y" | "n" | "m") || number(v) || hex(v) || string(v)) {
        return Err(bad("the value is y, n, m, a number or a \"string\""));
    }
    Ok(Opt {
        name: name.to_string(),
        value: v.to_string(),
    })
}

/// The longest release the kernel builds: the top Makefile's `uts_len`, which
/// `filechk_utsrelease.h` checks (`UTS_RELEASE` fills `utsname.release[65]`).
const UTS_LEN: usize = 64;

/// The release `make kernelrelease` will print for `version` with `groups`' options —
/// `KERNELVERSION` then `CONFIG_LOCALVERSION`, as `scripts/setlocalversion` joins them
/// (the environment's `LOCALVERSION` is cleared for every make) — checked before
/// anything is built: it names the installed files (`vmlinuz-RELEASE`,
/// `lib/modules/RELEASE`), so it holds no `/` or blank, and the kernel refuses one over
/// 64 characters. (`LOCALVERSION_AUTO=y` appends a git description this cannot know.)
pub fn check_release(version: &str, groups: &[Group]) -> Result<(), String> {
    let local = groups
        .iter()
        .flat_map(|g| &g.opts)
        .rfind(|o| o.name == "LOCALVERSION")
        .map_or("", |o| o.value.trim_matches('"'));
    let release = format!("{version}{local}");
    if local.contains(|c: char| c == '/' || c.is_whitespace()) {
        return Err(format!(
            "--config LOCALVERSION=\"{local}\": the release `{release}` names the kernel's \
             files (vmlinuz-RELEASE, lib/modules/RELEASE), so it holds no `/` or blank"
        ));
    }
    if release.len() > UTS_LEN {
        return Err(format!(
            "--config LOCALVERSION=\"{local}\": the release `{release}` is {} characters; \
             the kernel refuses more than {UTS_LEN} (Makefile: uts_len)",
            release.len()
        ));
    }
    Ok(())
}

/// The guest fragment with the user's options: one replacing a fragment option of the
/// same symbol takes its place, the others form a last group.
pub fn with_options(mut groups: Vec<Group>, extra: &[Opt]) -> Vec<Group> {
    let mut added = Vec::new();
    for o in extra {
        let existing = groups
            .iter_mut()
            .flat_map(|g| g.opts.iter_mut())
            .chain(added.iter_mut())
            .find(|e| e.name == o.name);
        match existing {
            Some(e) => e.value = o.value.clone(),
            None => added.push(o.clone()),
        }
    }
    if !added.is_empty() {
        groups.push(Group {
            why: "--config".into(),
            opts: added,
        });
    }
    groups
}

/// One option as a `.config` line.
fn line(o: &Opt) -> String {
    if o.value == "n" {
        format!("# CONFIG_{} is not set", o.name)
    } else {
        format!("CONFIG_{}={}", o.name, o.value)
    }
}

/// The fragment as `.config` text, each group under a comment saying why.
pub fn render(groups: &[Group]) -> String {
    let mut s = String::new();
    for g in groups {
        let _ = writeln!(s, "## {}", g.why);
        for o in &g.opts {
            let _ = writeln!(s, "{}", line(o));
        }
    }
    s
}

/// A `.config` file read: symbol (without `CONFIG_`) → value, `n` for "is not set".
pub fn read_dot_config(text: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# CONFIG_")
            && let Some(name) = rest.strip_suffix(" is not set")
        {
            m.insert(name.to_string(), "n".to_string());
        } else if let Some(rest) = l.strip_prefix("CONFIG_")
            && let Some((k, v)) = rest.split_once('=')
        {
            m.insert(k.to_string(), v.to_string());
        }
    }
    m
}

/// Where each Kconfig symbol is defined in a source tree, with its `depends on` lines.
#[derive(Debug, Default)]
pub struct KconfigIndex {
    symbols: BTreeMap<String, (String, Vec<String>)>,
}

impl KconfigIndex {
    /// Every `Kconfig*` file under `tree` read (a few thousand files, well under a second).
    pub fn of_tree(tree: &Path) -> KconfigIndex {
        let mut idx = KconfigIndex::default();
        let mut todo = vec![tree.to_path_buf()];
        while let Some(d) = todo.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name();
                let name = name.to_string_lossy();
                if ft.is_dir() && !name.starts_with('.') {
                    todo.push(p);
                } else if ft.is_file() && name.starts_with("Kconfig") {
                    let rel = p.strip_prefix(tree).unwrap_or(&p).display().to_string();
                    if let Ok(text) = std::fs::read_to_string(&p) {
                        idx.add(&rel, &text);
                    }
                }
            }
        }
        idx
    }

    /// The `config`/`menuconfig` entries of one Kconfig file.
    pub fn add(&mut self, file: &str, text: &str) {
        let mut current: Option<String> = None;
        for l in text.lines() {
            let t = l.trim();
            let entry = t
                .strip_prefix("config ")
                .or_else(|| t.strip_prefix("menuconfig "));
            if let Some(sym) = entry.filter(|_| !l.starts_with(char::is_whitespace)) {
                let sym = sym.trim().to_string();
                self.symbols
                    .entry(sym.clone())
                    .or_insert_with(|| (file.to_string(), Vec::new()));
                current = Some(sym);
            } else if !l.starts_with(char::is_whitespace) && !t.is_empty() {
                current = None;
            } else if let (Some(sym), Some(dep)) = (&current, t.strip_prefix("depends on "))
                && let Some((f, deps)) = self.symbols.get_mut(sym)
                && *f == file
            {
                deps.push(dep.trim().to_string());
            }
        }
    }

    /// (file, `depends on` lines) of a symbol, if the tree defines it.
    pub fn get(&self, sym: &str) -> Option<&(String, Vec<String>)> {
        self.symbols.get(sym)
    }
}

/// Every option of `groups` that `.config` (after `olddefconfig`) does not have as
/// asked, each explained on one line; empty when all stuck. `version` names the source.
pub fn verify(
    groups: &[Group],
    config: &BTreeMap<String, String>,
    index: &KconfigIndex,
    version: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for o in groups.iter().flat_map(|g| &g.opts) {
        let got = config.get(&o.name).map_or("n", String::as_str);
        if got == o.value {
            continue;
        }
        let why = match index.get(&o.name) {
            None => format!("Linux {version} has no such option (no Kconfig file defines it)"),
            Some((file, deps)) if deps.is_empty() => {
                format!("olddefconfig set it to {got} ({file}: a choice or a select overrides it)")
            }
            Some((file, deps)) => format!(
                "olddefconfig set it to {got}: its dependencies are not met ({file}: depends on {})",
                deps.join(" && ")
            ),
        };
        out.push(format!("{}: {why}", line(o)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(groups: &[Group]) -> Vec<String> {
        groups
            .iter()
            .flat_map(|g| g.opts.iter().map(|o| format!("{}={}", o.name, o.value)))
            .collect()
    }

    #[test]
    fn the_release_is_checked_before_the_build() {
        let with = |v: &str| {
            let extra = [parse_option(&format!("LOCALVERSION=\"{v}\"")).unwrap()];
            check_release("6.12.117", &with_options(guest_fragment((6, 12)), &extra))
        };
        // the fragment's own `-blkcg-sim`, and a user's
        assert_eq!(check_release("6.12.117", &guest_fragment((6, 12))), Ok(()));
        assert_eq!(with("-mine"), Ok(()));
        assert_eq!(with(&"x".repeat(64 - "6.12.117".len())), Ok(()));
        let e = with(&"x".repeat(65 - "6.12.117".len())).unwrap_err();
        assert!(
            e.contains("is 65 characters") && e.contains("uts_len"),
            "{e}"
        );
        for bad in ["-a/b", "-a b"] {
            let e = with(bad).unwrap_err();
            assert!(e.contains("no `/` or blank"), "{e}");
        }
    }

    #[test]
    fn throttling_low_only_where_the_version_has_it() {
        let has = |v| names(&guest_fragment(v)).contains(&"BLK_DEV_THROTTLING_LOW=y".into());
        assert!(has((6, 1)));
        assert!(has((6, 8)));
        assert!(!has((6, 9)));
        assert!(!has((6, 12)));
        let f612 = names(&guest_fragment((6, 12)));
        for must in [
            "BLK_DEV_THROTTLING=y",
            "BLK_CGROUP_IOCOST=y",
            "BLK_CGROUP_IOLATENCY=y",
            "BLK_CGROUP_IOPRIO=y",
            "MQ_IOSCHED_DEADLINE=y",
            "IOSCHED_BFQ=y",
            "BFQ_GROUP_IOSCHED=y",
            "BLK_DEV_NULL_BLK=y",
            "CONFIGFS_FS=y",
            "PVH=y",
            "SERIAL_8250_CONSOLE=y",
            "DEVTMPFS=y",
            "BINFMT_ELF=y",
            "FTRACE=y",
            "SLUB_TINY=n",
        ] {
            assert!(f612.contains(&must.to_string()), "{must} missing");
        }
        // 6.1 has no SLUB_TINY to turn off
        assert!(
            !names(&guest_fragment((6, 1)))
                .iter()
                .any(|n| n.starts_with("SLUB_TINY"))
        );
    }

    #[test]
    fn options_from_the_command_line() {
        assert_eq!(
            parse_option("CONFIG_HZ_1000=y"),
            Ok(Opt {
                name: "HZ_1000".into(),
                value: "y".into()
            })
        );
        assert_eq!(parse_option("NR_CPUS=4").map(|o| o.value), Ok("4".into()));
        assert_eq!(
            parse_option("LOCALVERSION=\"-x\"").map(|o| o.value),
            Ok("\"-x\"".into())
        );
        assert!(parse_option("PHYSICAL_START=0x1000000").is_ok());
        for bad in [
            "HZ_1000",
            "hz=y",
            "A B=y",
            "X=yes",
            "X=\"a\"b\"",
            "X=\"a\nb\"",
            "X=$(reboot)",
            "LOCALVERSION=\"$(shell reboot)\"",
            "LOCALVERSION=\"`reboot`\"",
            "=y",
        ] {
            let e = parse_option(bad).expect_err(bad);
            assert!(e.starts_with("--config `") && e.contains("KEY=VAL"), "{e}");
        }
    }

    #[test]
    fn user_options_replace_or_extend_the_fragment() {
        let base = guest_fragment((6, 12));
        let g = with_options(
            base.clone(),
            &[
                parse_option("HZ_250=n").unwrap(),
                parse_option("HZ_1000=y").unwrap(),
                parse_option("HZ_1000=n").unwrap(),
            ],
        );
        let all = names(&g);
        assert!(all.contains(&"HZ_250=n".into()) && !all.contains(&"HZ_250=y".into()));
        assert_eq!(g.len(), base.len() + 1);
        assert_eq!(names(&g[base.len()..]), ["HZ_1000=n"]);
        let text = render(&g);
        assert!(text.contains("# CONFIG_HZ_250 is not set\n"), "{text}");
        assert!(
            text.contains("## --config\n# CONFIG_HZ_1000 is not set\n"),
            "{text}"
        );
        assert!(
            text.contains("CONFIG_LOCALVERSION=\"-blkcg-sim\"\n"),
            "{text}"
        );
    }

    #[test]
    fn options_that_did_not_stick_are_explained() {
        let mut idx = KconfigIndex::default();
        idx.add(
            "block/Kconfig",
            "config BLK_DEV_THROTTLING\n\tbool \"x\"\n\tdepends on BLK_CGROUP\n\nconfig BLK_CGROUP_IOCOST\n\tbool \"y\"\n\tdepends on BLK_CGROUP\n\tdepends on !X\nif FOO\nconfig INSIDE\n\tbool\nendif\n",
        );
        let groups = vec![Group {
            why: "t".into(),
            opts: [
                "BLK_DEV_THROTTLING=y",
                "BLK_CGROUP_IOCOST=y",
                "BLK_DEV_THROTTLING_LOW=y",
                "INSIDE=y",
                "SLUB_TINY=n",
                "HZ=250",
            ]
            .iter()
            .map(|s| parse_option(s).unwrap())
            .collect(),
        }];
        let cfg = read_dot_config(
            "CONFIG_BLK_DEV_THROTTLING=y\n# CONFIG_BLK_CGROUP_IOCOST is not set\n# CONFIG_SLUB_TINY is not set\nCONFIG_HZ=250\n",
        );
        assert_eq!(cfg.get("BLK_CGROUP_IOCOST").map(String::as_str), Some("n"));
        let bad = verify(&groups, &cfg, &idx, "6.12.117");
        assert_eq!(
            bad,
            [
                "CONFIG_BLK_CGROUP_IOCOST=y: olddefconfig set it to n: its dependencies are not met (block/Kconfig: depends on BLK_CGROUP && !X)",
                "CONFIG_BLK_DEV_THROTTLING_LOW=y: Linux 6.12.117 has no such option (no Kconfig file defines it)",
                "CONFIG_INSIDE=y: olddefconfig set it to n (block/Kconfig: a choice or a select overrides it)",
            ]
        );
    }
}
