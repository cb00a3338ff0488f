//! `blkcg-sim kernel build`: the plumbing on a tiny fake kernel tree (its Makefile
//! answers tinyconfig, olddefconfig, bzImage and kernelrelease in a blink), and one
//! real build, booted by validate, only when its cache entry is present or
//! BLKCG_SIM_BUILD_KERNEL=1 (a real build takes ten minutes and more).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The fake tree's Makefile. `bzImage` counts its calls in `$(O)/make-count`, puts the
/// (maybe patched) `block/blk-cgroup.c` into `vmlinux`, and fails when the config asks
/// for `CONFIG_FAKE_FAIL=y`; `olddefconfig` drops `BLK_DEV_THROTTLING_LOW`, which this
/// "version" lacks.
const MAKEFILE: &str = "VERSION = 6
PATCHLEVEL = 9
SUBLEVEL = 7
EXTRAVERSION =
tinyconfig:
\tmkdir -p $(O)
\techo CONFIG_TINY=y > $(O)/.config
olddefconfig:
\tsed -i '/THROTTLING_LOW/d' $(O)/.config
bzImage:
\tif grep -q CONFIG_FAKE_FAIL=y $(O)/.config; then echo 'block/blk-cgroup.c:1: error: fake failure'; exit 1; fi
\techo x >> $(O)/make-count
\tmkdir -p $(O)/arch/x86/boot
\techo bzImage > $(O)/arch/x86/boot/bzImage
\tcp block/blk-cgroup.c $(O)/vmlinux
\techo kernel/drivers/block/null_blk/null_blk.ko > $(O)/modules.builtin
\tmkdir -p $(O)/tools/objtool
\ttest -e $(O)/tools/objtool/.objtool.cmd || echo 'cmd := ld -I$(CURDIR)/tools/include -o $(O)/tools/objtool/objtool' > $(O)/tools/objtool/.objtool.cmd
kernelrelease:
\t@echo 6.9.7-blkcg-sim
";

/// A fresh empty folder for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    if d.exists() {
        std::fs::remove_dir_all(&d).expect("clear the test's own folder");
    }
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

/// The fake source tree under `dir`.
fn fake_tree(dir: &Path) -> PathBuf {
    let t = dir.join("linux");
    std::fs::create_dir_all(t.join("block")).expect("mkdir");
    std::fs::write(t.join("Makefile"), MAKEFILE).expect("Makefile");
    std::fs::write(
        t.join("Kconfig"),
        "config BLK_DEV_THROTTLING\n\tbool \"t\"\n\tdepends on BLK_CGROUP\n",
    )
    .expect("Kconfig");
    std::fs::write(
        t.join("block/blk-cgroup.c"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    )
    .expect("source");
    t
}

/// A patch of the fake tree's `block/blk-cgroup.c`: `two` → `TWO` (applies), or with
/// `reject` a second hunk whose context is not there.
fn patch_file(dir: &Path, name: &str, reject: bool) -> PathBuf {
    let mut text = String::from(
        "--- a/block/blk-cgroup.c\n+++ b/block/blk-cgroup.c\n@@ -1,3 +1,3 @@ first\n one\n-two\n+TWO\n three\n",
    );
    if reject {
        text.push_str(
            "@@ -5,3 +5,3 @@ static void ioc_timer_fn(void)\n five\n-sixty\n+SIX\n seven\n",
        );
    }
    let p = dir.join(name);
    std::fs::write(&p, text).expect("patch");
    p
}

fn blkcg_sim(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args(args)
        .env("BLKCG_SIM_CACHE", cache)
        .output()
        .expect("runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The value after `key:` on stdout.
fn field(stdout: &str, key: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no `{key}:` in\n{stdout}"))
}

/// Every file under `dir` with its content, sorted.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// Why the plumbing cannot run here: the build's own tool check, as the dry run says.
fn cannot_build(tree: &Path, cache: &Path) -> Option<String> {
    let out = blkcg_sim(
        &[
            "kernel",
            "build",
            "--source",
            &tree.display().to_string(),
            "--dry-run",
        ],
        cache,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "dry run: {stderr}");
    let tools = field(&stdout, "tools");
    (tools != "all installed").then_some(tools)
}

/// Build, cache, patch, seed, list and clean on the fake tree; the user's tree is never
/// written.
#[test]
fn build_patch_cache_and_clean_on_a_fake_tree() {
    let dir = fresh_dir("kbuild-plumbing");
    let cache = dir.join("cache");
    let tree = fake_tree(&dir);
    let before = snapshot(&tree);
    let src = tree.display().to_string();
    if let Some(why) = cannot_build(&tree, &cache) {
        common::missing_tool(
            "the kernel toolchain",
            &why,
            "to run `kernel build` on a fake tree",
        );
        return;
    }
    // the stock build
    let out = blkcg_sim(&["kernel", "build", "--source", &src], &cache);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}{stdout}");
    let stock = field(&stdout, "key");
    assert!(stock.starts_with("6.9.7-"), "{stock}");
    assert!(
        field(&stdout, "kernel").starts_with("Linux 6.9.7-blkcg-sim from the tree "),
        "{stdout}"
    );
    assert!(
        stdout.contains("  CONFIG_BLK_CGROUP_IOCOST=y\n"),
        "{stdout}"
    );
    // 6.9 no longer has the .low limit: the fragment leaves it out
    assert!(!stdout.contains("THROTTLING_LOW"), "{stdout}");
    let entry = cache.join("builds").join(&stock);
    let vmlinux = entry.join("tree/vmlinux-6.9.7-blkcg-sim");
    assert!(
        std::fs::read_to_string(&vmlinux)
            .expect("vmlinux")
            .contains("\ntwo\n")
    );
    for f in [
        "tree/boot/vmlinuz-6.9.7-blkcg-sim",
        "tree/boot/config-6.9.7-blkcg-sim",
        "tree/lib/modules/6.9.7-blkcg-sim/modules.builtin",
        "build.log",
        "build.toml",
        "fragment.config",
    ] {
        assert!(entry.join(f).is_file(), "{f} missing");
    }
    // the same call again: from the cache, make not run
    let out = blkcg_sim(&["kernel", "build", "--source", &src], &cache);
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert_eq!(field(&stdout, "key"), stock);
    assert!(
        stdout.contains("(cached: this call built nothing)"),
        "{stdout}"
    );
    let count = |e: &Path| {
        std::fs::read_to_string(e.join("src/build/make-count"))
            .expect("count")
            .lines()
            .count()
    };
    assert_eq!(count(&entry), 1);
    // patched, with a behaviour: a new key, started from the stock build's objects
    let fix = patch_file(&dir, "fix.patch", false);
    let arg = format!("{}=iocost.no_completion:keep-if-lagging", fix.display());
    let out = blkcg_sim(
        &["kernel", "build", "--source", &src, "--patch", &arg],
        &cache,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}{stdout}");
    let patched = field(&stdout, "key");
    assert_ne!(patched, stock);
    assert!(
        field(&stdout, "kernel").ends_with("+ fix.patch (iocost.no_completion=keep-if-lagging)"),
        "{stdout}"
    );
    assert!(
        field(&stdout, "time").contains(&format!("starting from the objects of built:{stock}")),
        "{stdout}"
    );
    let pentry = cache.join("builds").join(&patched);
    assert_eq!(count(&pentry), 2, "the stock build's objects were copied");
    // the tools' make records name the new entry, so make finds them up to date
    let cmd = std::fs::read_to_string(pentry.join("src/build/tools/objtool/.objtool.cmd"))
        .expect("tools record");
    assert!(
        cmd.contains(&format!(
            "{}/src/build/tools/objtool/objtool",
            pentry.display()
        )) && cmd.contains(&format!("-I{}/src/tools/include", pentry.display()))
            && !cmd.contains(&stock),
        "{cmd}"
    );
    let pv = std::fs::read_to_string(pentry.join("tree/vmlinux-6.9.7-blkcg-sim")).expect("vmlinux");
    assert!(pv.contains("\nTWO\n") && !pv.contains("\ntwo\n"), "{pv}");
    let record = std::fs::read_to_string(pentry.join("build.toml")).expect("record");
    assert!(
        record.contains("\"iocost.no_completion=keep-if-lagging\""),
        "{record}"
    );
    // the stock entry's source (hard links) and the user's tree are unchanged
    assert!(
        std::fs::read_to_string(entry.join("src/block/blk-cgroup.c"))
            .expect("read")
            .contains("\ntwo\n")
    );
    assert_eq!(snapshot(&tree), before, "the user's tree was written");
    // validate finds the build by key prefix; its dry run reads the kernel from the cache
    let scen = dir.join("s.toml");
    std::fs::write(
        &scen,
        "[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = \"fio --name=a --rw=randread --runtime=1\"\n",
    )
    .expect("scenario");
    let prefix = &patched[..patched.len() - 4];
    let out = blkcg_sim(
        &[
            "validate",
            &scen.display().to_string(),
            "--kernel",
            &format!("built:{prefix}"),
            "--dry-run",
        ],
        &cache,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("kernel: Linux 6.9.7-blkcg-sim (modules from "),
        "{stdout}"
    );
    assert!(!stdout.contains("insmod"), "null_blk is built in: {stdout}");
    let out = blkcg_sim(
        &[
            "validate",
            &scen.display().to_string(),
            "--kernel",
            "built:6.9.7-ffff",
        ],
        &cache,
    );
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("no such build") && stderr.contains(&stock),
        "{stderr}"
    );
    // list, then clean: only folders we made
    let out = blkcg_sim(&["kernel", "list"], &cache);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(&format!("built:{stock}")) && stdout.contains(&format!("built:{patched}")),
        "{stdout}"
    );
    let foreign = cache.join("builds/not-ours");
    std::fs::create_dir_all(&foreign).expect("mkdir");
    std::fs::write(foreign.join("keep"), "x").expect("write");
    let out = blkcg_sim(&["kernel", "clean", &stock], &cache);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(!entry.exists() && pentry.exists());
    let out = blkcg_sim(&["kernel", "clean", "--all"], &cache);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(!pentry.exists());
    assert!(
        foreign.join("keep").is_file(),
        "a folder we did not create was removed"
    );
    assert_eq!(snapshot(&tree), before);
    std::fs::remove_dir_all(&dir).expect("remove the test's folder");
}

/// What a user meets when something is wrong: each a one-line cause (a build failure
/// adds the log's last lines), nothing left half-done in the user's tree.
#[test]
fn rejects_options_and_failures_are_named() {
    let dir = fresh_dir("kbuild-errors");
    let cache = dir.join("cache");
    let tree = fake_tree(&dir);
    let src = tree.display().to_string();
    if let Some(why) = cannot_build(&tree, &cache) {
        common::missing_tool(
            "the kernel toolchain",
            &why,
            "to run `kernel build` on a fake tree",
        );
        return;
    }
    let before = snapshot(&tree);
    let bad = patch_file(&dir, "bad.patch", true).display().to_string();
    // each refused with exit 2 and a message naming what was wrong
    let refusals: [(&[&str], &[&str]); 4] = [
        // a hunk that does not apply: named by file, number and header
        (
            &["--patch", &bad],
            &[
                "bad.patch does not apply to the tree",
                "block/blk-cgroup.c hunk #2 @@ -5,3 +5,3 @@ static void ioc_timer_fn(void): Hunk #2 FAILED at 5.",
            ],
        ),
        // an option this version does not have
        (
            &["--config", "BLK_DEV_THROTTLING_LOW=y"],
            &["CONFIG_BLK_DEV_THROTTLING_LOW=y: Linux 6.9.7 has no such option"],
        ),
        // a malformed option, before anything runs
        (&["--config", "HZ=$(reboot)"], &["--config `HZ=$(reboot)`"]),
        // the build fails: the log's tail and where the log is
        (
            &["--config", "FAKE_FAIL=y"],
            &[
                "make bzImage failed",
                "build.log:",
                "block/blk-cgroup.c:1: error: fake failure",
            ],
        ),
    ];
    for (extra, wanted) in refusals {
        let mut args = vec!["kernel", "build", "--source", &src];
        args.extend_from_slice(extra);
        let out = blkcg_sim(&args, &cache);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        for w in wanted {
            assert!(stderr.contains(w), "{extra:?}: wanted {w:?} in: {stderr}");
        }
    }
    // no toolchain: one line naming what is missing and the packages that bring it
    let empty = dir.join("bin");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let out = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args(["kernel", "build", "--source", &src])
        .env("BLKCG_SIM_CACHE", &cache)
        .env("PATH", &empty)
        .output()
        .expect("runs");
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("kernel build needs make, gcc, ld, bc, bison, flex, perl, patch")
            && stderr.contains("apt-get install -y --no-install-recommends make gcc binutils bc bison flex perl patch"),
        "{stderr}"
    );
    // a tree configured in place cannot be built out of tree
    std::fs::write(tree.join(".config"), "CONFIG_X=y\n").expect("write");
    let out = blkcg_sim(&["kernel", "build", "--source", &src], &cache);
    let (_, stderr) = text(&out);
    assert!(stderr.contains("make mrproper"), "{stderr}");
    std::fs::remove_file(tree.join(".config")).expect("rm");
    assert_eq!(snapshot(&tree), before, "the user's tree was written");
    std::fs::remove_dir_all(&dir).expect("remove the test's folder");
}

/// One real build (Debian's 6.12 source, the guest fragment) booted by validate. Runs
/// when that build is in the cache already (then it costs one boot), or with
/// BLKCG_SIM_BUILD_KERNEL=1 (then it builds, ten minutes and more).
#[test]
fn a_real_build_boots_in_validate() {
    let cache = blkcg_sim::validate::kernel::cache_dir();
    let dry = blkcg_sim(
        &["kernel", "build", "--source", "6.12", "--dry-run"],
        &cache,
    );
    let (stdout, stderr) = text(&dry);
    let requested = std::env::var_os("BLKCG_SIM_BUILD_KERNEL").is_some();
    if !dry.status.success() {
        if requested {
            common::missing_tool(
                "what `kernel build --source 6.12 --dry-run` needs",
                stderr.trim(),
                "to build Debian's 6.12",
            );
        } else {
            common::skip_unrequested(
                &format!("no 6.12 build here: {}", stderr.trim()),
                "BLKCG_SIM_BUILD_KERNEL=1 builds one: 4 to 20 min",
            );
        }
        return;
    }
    let cached = field(&stdout, "cached").starts_with("yes");
    if !cached && !requested {
        common::skip_unrequested(
            &format!("no 6.12 guest kernel in {}", cache.display()),
            "BLKCG_SIM_BUILD_KERNEL=1 builds one: 4 to 20 min",
        );
        return;
    }
    let out = blkcg_sim(&["kernel", "build", "--source", "6.12"], &cache);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}{stdout}");
    let key = field(&stdout, "key");
    assert!(
        field(&stdout, "kernel").starts_with("Linux 6.12.117-blkcg-sim"),
        "{stdout}"
    );
    let boots = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args(["validate", "validate-iomax-riops", "--dry-run"])
        .output()
        .expect("runs");
    let dry = String::from_utf8_lossy(&boots.stdout);
    if std::env::var_os("BLKCG_SIM_SKIP_BOOT").is_some() {
        common::missing_tool(
            "the boot",
            "nothing: BLKCG_SIM_SKIP_BOOT is set, unset it",
            "to boot the built kernel in validate",
        );
        return;
    }
    let tools = dry
        .lines()
        .find_map(|l| l.strip_prefix("host tools: "))
        .unwrap_or("unknown: validate's dry run names no host tools");
    if tools != "all installed" {
        common::missing_tool(
            "validate's host tools",
            tools,
            "to boot the built kernel in validate",
        );
        return;
    }
    let dir = fresh_dir("kbuild-real");
    let scen = dir.join("short.toml");
    let text_of = blkcg_sim::scenario::embedded::get("validate-iomax-riops")
        .expect("built in")
        .replace("--runtime=10", "--runtime=3");
    std::fs::write(&scen, text_of).expect("scenario");
    let out = blkcg_sim(
        &[
            "validate",
            &scen.display().to_string(),
            "--kernel",
            &format!("built:{key}"),
        ],
        &cache,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}{stdout}");
    assert!(stdout.contains(&format!("kernel: built:{key}")), "{stdout}");
    assert!(
        stdout.contains("real: Linux 6.12.117-blkcg-sim"),
        "{stdout}"
    );
    let iops = stdout
        .split("fio job `limited`, read:")
        .nth(1)
        .and_then(|b| b.lines().find(|l| l.trim_start().starts_with("IOPS")))
        .expect("IOPS row")
        .to_string();
    let cols: Vec<f64> = iops
        .split_whitespace()
        .skip(1)
        .filter_map(|c| c.parse().ok())
        .collect();
    assert!(
        (97.0..=103.0).contains(&cols[0]),
        "real riops=100 on the built kernel: {iops}"
    );
    std::fs::remove_dir_all(&dir).expect("remove the test's folder");
}
