//! `blkcg-sim validate`: the guest's `/init` for the built-in validation scenarios
//! (golden files, no boot), the scenarios validate refuses, and one real boot when
//! qemu and a kernel are at hand.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use blkcg_sim::scenario::{Scenario, embedded};
use blkcg_sim::validate::guest::GuestPlan;

fn plan(name: &str) -> GuestPlan {
    try_plan_text(embedded::get(name).expect("built in")).expect("plans")
}

/// The guest plan for a scenario's text, or why validate refuses it.
fn try_plan_text(text: &str) -> Result<GuestPlan, String> {
    let sc = Scenario::parse(text, "t.toml").expect("parses");
    GuestPlan::from_resolved(&sc.resolve(None).expect("resolves"))
}

/// Compare with `tests/data/validate/NAME.init`; `BLESS=1` rewrites it.
fn golden(name: &str, text: &str) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/validate/{name}.init"));
    if std::env::var_os("BLESS").is_some() {
        std::fs::create_dir_all(p.parent().expect("folder")).expect("mkdir");
        std::fs::write(&p, text).expect("write golden");
    }
    let want = std::fs::read_to_string(&p).expect("golden file (BLESS=1 to create)");
    assert_eq!(text, want, "generated /init differs from {}", p.display());
}

fn modules() -> Vec<(String, String)> {
    vec![
        ("configfs.ko".into(), String::new()),
        ("null_blk.ko".into(), "nr_devices=0".into()),
    ]
}

#[test]
fn init_for_an_io_max_scenario() {
    let p = plan("validate-iomax-riops");
    assert_eq!(p.disk, "nullb0");
    assert!(!p.iocost);
    let init = p.init_script(&modules());
    // the scenario's 252:0 becomes the guest's device number
    assert!(init.contains("w /sys/fs/cgroup/limited io.max \"$DEV\"' riops=100'"));
    assert!(!init.contains("252:0"));
    golden("validate-iomax-riops", &init);
}

/// `--kprobe`: defined in tracefs after the modules are in (a module's function can
/// be probed), enabled, and a refusal said as an error line with tracefs's reason
/// (`error_log`); the definition quoted.
#[test]
fn init_defines_and_enables_a_kprobe() {
    let mut p = plan("validate-bfq");
    p.kprobes = vec![(
        "bfq_expire".into(),
        "p:bfq_expire bfq:bfq_bfqq_expire reason=%cx".into(),
    )];
    let init = p.init_script(&modules());
    let line = "echo 'p:bfq_expire bfq:bfq_bfqq_expire reason=%cx' >> $T/kprobe_events \
                && echo 1 > $T/events/kprobes/bfq_expire/enable \
                || say 'error the kernel refused the kprobe p:bfq_expire bfq:bfq_bfqq_expire reason=%cx: '\
                \"$(tail -n 3 $T/error_log | tr '\\n' ' ')\"";
    let at = init.find(line).expect("the kprobe's lines");
    assert!(init.find("insmod").expect("modules") < at);
    assert!(
        init.contains("buffer_size_kb"),
        "a kprobe alone records a trace"
    );
    assert!(at < init.find("say start").expect("start"));
}

#[test]
fn init_for_an_iocost_scenario() {
    let p = plan("validate-iocost-weights");
    assert!(p.iocost && p.debug_stats);
    let init = p.init_script(&modules());
    assert!(init.contains("iocost_ioc_vrate_adj/enable"));
    assert!(init.contains("w /sys/fs/cgroup/heavy io.weight 'default 300'"));
    golden("validate-iocost-weights", &init);
}

/// A recorded trace is printed over the serial console after the jobs, which takes
/// its time: the boot gets more once the guest starts printing, as much as the
/// buffer needs (a full 32 MiB blktrace of validate-bfq's capped disk did not fit the
/// old budget), and nothing more without a trace.
#[test]
fn a_trace_buffer_adds_the_time_to_print_it() {
    let mut p = plan("validate-bfq");
    assert_eq!(p.trace_print_budget_s(), 0);
    p.blk_tracer = true;
    assert_eq!(p.trace_buffer_kb(), 32768);
    assert!(
        p.trace_print_budget_s() >= 200,
        "{}",
        p.trace_print_budget_s()
    );
    assert!(plan("validate-iocost-weights").trace_print_budget_s() > 0);
}

#[test]
fn device_actions_become_configfs_writes_in_the_guest() {
    let p = try_plan_text("[device]\nmodel = \"nullb\"\nbadblocks = \"+8-15\"\n[device.timeout_inject]\nprobability = 100\ntimes = -1\n[cgroup.a]\nfio = \"fio --name=a --rw=randread\"\n[[schedule]]\nat = \"1s\"\ndevice.badblocks = \"-8-15\"\n[[schedule]]\nat = \"2500ms\"\ndevice = \"remove\"\n").expect("plans");
    let init = p.init_script(&modules());
    assert!(init.contains("echo +8-15 > $N/badblocks || die"));
    assert!(init.contains("echo 100 > $N/timeout_inject/probability || die"));
    assert!(init.contains("echo -1 > $N/timeout_inject/times || die"));
    assert!(init.contains("(sleep 1.000; echo -8-15 > $N/badblocks || say"));
    // the guest's disk is a null_blk: removing it is powering it off
    assert!(init.contains("(sleep 2.500; echo 0 > $N/power || say"));
}

#[test]
fn devices_without_a_guest_counterpart_are_refused() {
    let e = try_plan_text("[device]\nmodel = \"cloud\"\npreset = \"azure-p20\"\n[cgroup.a]\nfio = \"fio --name=a --rw=randread\"\n").expect_err("refused");
    assert!(e.contains("`cloud`") && e.contains("null_blk"), "{e}");
}

#[test]
fn job_files_get_the_guest_disk() {
    let p = try_plan_text("[device]\nmodel = \"nullb\"\nname = \"disk1\"\n[cgroup.a]\nfio = \"\"\"\n[a]\nfilename=/dev/sdz\nrw=randread\nruntime=1\n\"\"\"\n").expect("plans");
    let files = p.job_files();
    assert_eq!(files.len(), 1);
    assert!(files[0].1.starts_with("[global]\nfilename=/dev/disk1\n"));
    assert!(
        !files[0].1.contains("sdz"),
        "the job's own filename is dropped"
    );
    assert!(p.init_script(&[]).contains("/jobs/0.fio"));
}

/// The guest's fio gets its options as `run` reads them: `--bs 4k` and `-rw=...` are
/// one option each (fio's getopt), and a dropped program option takes its value along.
#[test]
fn command_line_options_reach_the_guest_as_run_reads_them() {
    let p = try_plan_text(
        "[device]\nmodel = \"nullb\"\n[cgroup.a]\n\
         fio = \"fio --name a --bs 4k --output-format json -rw=randread --runtime 1\"\n",
    )
    .expect("plans");
    let init = p.init_script(&[]);
    assert!(
        init.contains(" --name=a --bs=4k --rw=randread --runtime=1 >"),
        "{init}"
    );
}

/// A job file named on a fio command line reaches the guest as `run` reads it; an
/// `include` in a job file cannot, and says so.
#[test]
fn job_files_named_on_the_command_line_are_staged() {
    let dir = fresh_dir("validate-job-args");
    let job = dir.join("my job.fio");
    std::fs::write(
        &job,
        "[mine]\nrw=randread\nfilename=/dev/sdz\ndescription=two words\n",
    )
    .expect("write");
    let text = format!(
        "[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = \"fio --runtime=1 '{}'\"\n",
        job.display()
    );
    let p = try_plan_text(&text).expect("plans");
    let init = p.init_script(&[]);
    assert!(init.contains(" --runtime=1 /jobs/0-0.fio >"), "{init}");
    assert_eq!(
        p.job_files(),
        [(
            "jobs/0-0.fio".to_string(),
            "[global]\nfilename=/dev/nullb0\n\n[mine]\nrw=randread\ndescription=two words\n"
                .to_string()
        )]
    );
    let e = try_plan_text("[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = \"\"\"\n[a]\nrw=randread\ninclude more.fio\n\"\"\"\n").expect_err("refused");
    assert!(e.contains("`include more.fio`"), "{e}");
}

/// A fresh empty folder for one test, under the target's temporary folder.
fn fresh_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    if d.exists() {
        std::fs::remove_dir_all(&d).expect("clear the test's own folder");
    }
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The io.max validation scenario, 3 s long, as a file in `dir`.
fn short_scenario(dir: &Path) -> PathBuf {
    let text = embedded::get("validate-iomax-riops")
        .expect("built in")
        .replace("--runtime=10", "--runtime=3");
    let file = dir.join("short.toml");
    std::fs::write(&file, text).expect("write scenario");
    file
}

/// `blkcg-sim validate ARGS` with its own cache and temporary folder.
fn validate(args: &[&std::ffi::OsStr], cache: &Path, tmp: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .arg("validate")
        .args(args)
        .env("BLKCG_SIM_CACHE", cache)
        .env("TMPDIR", tmp)
        .output()
        .expect("runs")
}

/// Why validate cannot boot here with these arguments, if it cannot: the host tools
/// missing, as `--dry-run` reports them (CI installs them; BLKCG_SIM_SKIP_BOOT=1 skips,
/// unless BLKCG_SIM_REQUIRE_TOOLS=1 asks for every test to run).
fn cannot_boot(args: &[&std::ffi::OsStr], cache: &Path, tmp: &Path) -> Option<String> {
    if std::env::var_os("BLKCG_SIM_SKIP_BOOT").is_some() {
        return Some("nothing: BLKCG_SIM_SKIP_BOOT is set, unset it".into());
    }
    let mut dry = args.to_vec();
    dry.push("--dry-run".as_ref());
    let out = validate(&dry, cache, tmp);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let tools = stdout
        .lines()
        .find_map(|l| l.strip_prefix("host tools: "))
        .unwrap_or_else(|| {
            panic!(
                "the dry run names no host tools: {}{stdout}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    (tools != "all installed").then(|| tools.to_string())
}

/// Skips a test that cannot boot here for `why` ([`cannot_boot`]), or fails it under
/// BLKCG_SIM_REQUIRE_TOOLS=1.
fn no_boot(why: &str) {
    common::missing_tool("validate's host tools", why, "to boot the guest in qemu");
}

/// Whether the tools [`fake_kernel`] needs are here; skips (or fails) the test if not.
fn fake_kernel_tools() -> bool {
    common::require_tool("xz", "xz-utils", "to make a fake bzImage")
        && common::require_tool("objcopy", "binutils", "to make a fake null_blk module")
}

/// A kernel package tree whose bzImage is a 1 KiB header, an xz stream holding a
/// small "ELF" image, and 2 MiB after the stream (as a real bzImage has the
/// decompressor's code there), plus a null_blk module with nothing but its modinfo.
/// With `extracted`, the tree already holds that ELF image as `vmlinux-RELEASE`.
/// None if `xz` or `objcopy` fails ([`fake_kernel_tools`] checks they are here). qemu refuses to boot the image.
fn fake_kernel(dir: &Path, extracted: bool) -> Option<(PathBuf, Vec<u8>)> {
    let release = "6.9.9-fake";
    let tree = dir.join("tree");
    let modules = tree.join(format!("lib/modules/{release}/kernel/drivers/block"));
    std::fs::create_dir_all(&modules).expect("mkdir");
    std::fs::create_dir_all(tree.join("boot")).expect("mkdir");
    std::fs::write(
        tree.join(format!("boot/config-{release}")),
        "CONFIG_HZ=250\nCONFIG_PVH=y\nCONFIG_BLK_DEV_THROTTLING=y\nCONFIG_BLK_CGROUP_IOCOST=y\n",
    )
    .expect("config");
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(64 * 1024, 0x5a);
    let payload = dir.join("payload");
    std::fs::write(&payload, &elf).expect("payload");
    let xz = Command::new("xz")
        .args(["-c", "-0"])
        .stdin(std::fs::File::open(&payload).expect("payload"))
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut bzimage = vec![0u8; 1024];
    bzimage.extend_from_slice(&xz.stdout);
    bzimage.resize(bzimage.len() + 2 * 1024 * 1024, 0xaa);
    std::fs::write(tree.join(format!("boot/vmlinuz-{release}")), bzimage).expect("bzImage");
    if extracted {
        std::fs::write(tree.join(format!("vmlinux-{release}")), &elf).expect("vmlinux");
    }
    let modinfo = dir.join("modinfo");
    std::fs::write(&modinfo, "license=GPL\0depends=\0name=null_blk\0").expect("modinfo");
    let ok = Command::new("objcopy")
        .args([
            "-I",
            "binary",
            "-O",
            "elf64-x86-64",
            "--rename-section",
            ".data=.modinfo",
        ])
        .arg(&modinfo)
        .arg(modules.join("null_blk.ko"))
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some((tree, elf))
}

/// A fresh machine: validate extracts the ELF kernel from the bzImage, where xz stops
/// reading at the end of its stream with most of the file unread; that must not kill
/// validate (SIGPIPE, exit 141 without a word). Here it goes on to qemu, which refuses
/// the fake image with an error of its own.
#[test]
fn extracting_the_kernel_survives_the_end_of_the_xz_stream() {
    let dir = fresh_dir("validate-extract");
    let (cache, tmp) = (dir.join("cache"), dir.join("tmp"));
    std::fs::create_dir_all(&tmp).expect("mkdir");
    if !fake_kernel_tools() {
        return;
    }
    let (tree, elf) = fake_kernel(&dir, false).expect("xz and objcopy make the fake kernel");
    let scenario = short_scenario(&dir);
    let args: Vec<&std::ffi::OsStr> = vec![scenario.as_ref(), "--kernel".as_ref(), tree.as_ref()];
    if let Some(why) = cannot_boot(&args, &cache, &tmp) {
        no_boot(&why);
        return;
    }
    let out = validate(&args, &cache, &tmp);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?}: {stderr}", out.status);
    assert!(stderr.contains("extracting an ELF vmlinux"), "{stderr}");
    assert!(stderr.contains("blkcg-sim: qemu failed"), "{stderr}");
    let vmlinux = std::fs::read(tree.join("vmlinux-6.9.9-fake")).expect("vmlinux extracted");
    assert!(
        vmlinux == elf,
        "the extracted image is the stream's content"
    );
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch folders left");
}

/// `--output DIR` writes our own named files there and nothing else: staging happens
/// in a scratch folder of ours, removed even when the boot fails.
#[test]
fn output_dir_keeps_what_was_there() {
    let dir = fresh_dir("validate-output");
    let (cache, tmp, out_dir) = (dir.join("cache"), dir.join("tmp"), dir.join("out"));
    for d in ["root", "modules"] {
        std::fs::create_dir_all(out_dir.join(d)).expect("mkdir");
        std::fs::write(out_dir.join(d).join("keep"), "the user's").expect("write");
    }
    std::fs::write(out_dir.join("initrd.cpio"), "the user's").expect("write");
    std::fs::create_dir_all(&tmp).expect("mkdir");
    if !fake_kernel_tools() {
        return;
    }
    let (tree, _) = fake_kernel(&dir, true).expect("xz and objcopy make the fake kernel");
    let scenario = short_scenario(&dir);
    let args: Vec<&std::ffi::OsStr> = vec![
        scenario.as_ref(),
        "--kernel".as_ref(),
        tree.as_ref(),
        "--output".as_ref(),
        out_dir.as_ref(),
    ];
    if let Some(why) = cannot_boot(&args, &cache, &tmp) {
        no_boot(&why);
        return;
    }
    let out = validate(&args, &cache, &tmp);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?}: {stderr}", out.status);
    assert!(stderr.contains("building the initramfs"), "{stderr}");
    assert!(stderr.contains("blkcg-sim: qemu failed"), "{stderr}");
    for d in ["root", "modules"] {
        assert!(out_dir.join(d).join("keep").is_file(), "{d}/keep is gone");
    }
    assert_eq!(
        std::fs::read_to_string(out_dir.join("initrd.cpio")).expect("read"),
        "the user's"
    );
    assert_eq!(
        entries(&out_dir),
        ["initrd.cpio", "modules", "root", "sim-fio.json"]
    );
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch folders left");
    assert_eq!(
        entries(&cache),
        Vec::<String>::new(),
        "the cache is not a work folder"
    );
}

/// Without its host tools validate stops at once, saying what is missing and how to
/// install it — before a 70 MB download and the simulation.
#[test]
fn missing_host_tools_are_named_before_anything_runs() {
    let dir = fresh_dir("validate-tools");
    let (cache, tmp, empty) = (dir.join("cache"), dir.join("tmp"), dir.join("bin"));
    std::fs::create_dir_all(&empty).expect("mkdir");
    let out = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args(["validate", "validate-iomax-riops"])
        .env("PATH", &empty)
        .env("BLKCG_SIM_CACHE", &cache)
        .env("TMPDIR", &tmp)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("qemu-system-x86_64")
            && stderr.contains("fio")
            && stderr.contains("apt-get install -y --no-install-recommends qemu-system-x86"),
        "{stderr}"
    );
    assert!(!cache.exists(), "nothing downloaded");
}

/// One real boot from an EMPTY cache, as on a fresh machine: the kernel is downloaded,
/// unpacked and its ELF image extracted, then booted. Only where the host tools are
/// installed (CI installs them; set BLKCG_SIM_SKIP_BOOT=1 to skip).
#[test]
fn boots_a_real_kernel_from_an_empty_cache_and_compares() {
    let dir = fresh_dir("validate-boot");
    let (cache, tmp, out_dir) = (dir.join("cache"), dir.join("tmp"), dir.join("out"));
    std::fs::create_dir_all(&tmp).expect("mkdir");
    let scenario = short_scenario(&dir);
    let args: Vec<&std::ffi::OsStr> = vec![
        scenario.as_ref(),
        "--output".as_ref(),
        out_dir.as_ref(),
        "--blktrace".as_ref(),
        "--kprobe".as_ref(),
        "p:read_bio submit_bio bio=%di".as_ref(),
    ];
    if let Some(why) = cannot_boot(&args, &cache, &tmp) {
        no_boot(&why);
        return;
    }
    let out = validate(&args, &cache, &tmp);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "validate failed: {stderr}{stdout}");
    for step in [
        "downloading linux-image-",
        "unpacking",
        "extracting an ELF vmlinux",
    ] {
        assert!(
            stderr.contains(step),
            "no `{step}` on a fresh cache: {stderr}"
        );
    }
    // the limited job's real IOPS: riops=100 works on the real kernel
    let block = stdout
        .split("fio job `limited`, read:")
        .nth(1)
        .expect("limited job in the table");
    let iops_line = block
        .lines()
        .find(|l| l.trim_start().starts_with("IOPS"))
        .expect("IOPS row");
    let cols: Vec<f64> = iops_line
        .split_whitespace()
        .skip(1)
        .filter_map(|c| c.parse().ok())
        .collect();
    assert!((97.0..=103.0).contains(&cols[0]), "real IOPS {iops_line}");
    assert!((97.0..=103.0).contains(&cols[1]), "sim IOPS {iops_line}");
    assert!(stdout.contains("io.stat, real"));
    assert_eq!(
        entries(&out_dir),
        [
            "console-1.txt",
            "real-fio-0-run1.json",
            "real-fio-1-run1.json",
            "report.html",
            "sim-fio.json",
            "trace-1.txt"
        ]
    );
    // --blktrace: the disk's blktrace through ftrace's blk tracer, each read queued
    // (Q), issued (D) and completed (C) by the real kernel
    let trace = std::fs::read_to_string(out_dir.join("trace-1.txt")).expect("trace-1.txt");
    assert!(
        trace.starts_with("# tracer: blk\n"),
        "{}",
        &trace[..trace.len().min(500)]
    );
    // a blktrace line: TASK-PID [CPU] FLAGS TIME: MAJ,MIN ACTION RWBS SECTOR + N [..]
    let action_of = |l: &str| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let at = f.iter().position(|w| w.ends_with(':'))?;
        let (dev, action, rwbs) = (f.get(at + 1)?, f.get(at + 2)?, f.get(at + 3)?);
        (dev.contains(',') && rwbs.starts_with('R')).then(|| action.to_string())
    };
    for action in ["Q", "D", "C"] {
        assert!(
            trace
                .lines()
                .any(|l| action_of(l).as_deref() == Some(action)),
            "no read `{action}` in the blktrace"
        );
    }
    // --kprobe: the kernel's submit_bio() entered, with its argument, in the same buffer
    assert!(
        trace
            .lines()
            .any(|l| l.contains(" read_bio: (submit_bio+0x") && l.contains(" bio=0x")),
        "no kprobe event in the trace"
    );
    // the same on one page: the table with its ratios coloured, links to every file
    let page = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
    assert!(page.contains("<caption>fio job <code>limited</code>, read</caption>"));
    assert!(page.contains("class=\"ok\""), "no ratio within 5%: {page}");
    for f in [
        "console-1.txt",
        "real-fio-0-run1.json",
        "sim-fio.json",
        "trace-1.txt",
    ] {
        assert!(
            page.contains(&format!("<a href=\"{f}\">")),
            "{f} not linked"
        );
    }
    // what its colours mean, and the real and simulated seconds overlaid, in a browser:
    // the reads (a read-only job: no write chart), as IOPS and MiB/s
    assert!(page.contains("within 20%"), "no legend: {page}");
    common::check_page(
        &out_dir.join("report.html"),
        "report-validate",
        2,
        &[
            "real and simulated over time: device reads/s: real, sim",
            "real and simulated over time: device read MiB/s: real, sim",
        ],
    );
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch folders left");
    assert_eq!(entries(&cache), ["kernels"]);
    std::fs::remove_dir_all(&dir).expect("remove the test's folder");
}

/// A scenario whose names and fio arguments are shell code.
const HOSTILE: &str = r#"
name = "hostile;touch pwned `touch pwned`\nz"
seed = 1

[device]
model = "nullb"
dev = "252:0"
name = "d$(touch${IFS}pwned)"
irqmode = 2
completion_nsec = 100000

[cgroup."x$(touch pwned)"]
"io.max" = "252:0 riops=100"
fio = "fio --name='a b' --rw=randread --runtime=1 --output-format=normal --description=\"it's $(touch pwned) `touch pwned`\""

[cgroup."y`touch pwned`"]
fio = """
[job]
rw=randread
runtime=1
description=two words
"""

[[variant]]
name = "v"
"#;

/// Variant names are folder names under --output (letters, digits, `. _ + - @`), so
/// the hostile text rides in the scenario's name, which reaches the script's title.
const HOSTILE_VARIANT: &str = "v";

#[test]
fn scenario_text_never_becomes_shell_code() {
    let sc = Scenario::parse(HOSTILE, "hostile.toml").expect("parses");
    let r = sc.resolve(Some(HOSTILE_VARIANT)).expect("resolves");
    let init = GuestPlan::from_resolved(&r)
        .expect("plans")
        .init_script(&modules());
    for line in [
        // the title, in a comment: the line break escaped
        "# generated by blkcg-sim validate: hostile;touch pwned `touch pwned`\\nz (variant v)\n",
        "\nDISK='d$(touch${IFS}pwned)'\n",
        "\nmkdir '/sys/fs/cgroup/x$(touch pwned)'\n",
        "\nmkdir '/sys/fs/cgroup/y`touch pwned`'\n",
        "\nw '/sys/fs/cgroup/x$(touch pwned)' io.max \"$DEV\"' riops=100'\n",
        " '/sys/fs/cgroup/x$(touch pwned)' fio --output-format=json --output=/tmp/fio-0.json \"--filename=/dev/$DISK\" '--name=a b' --rw=randread --runtime=1 '--description=it'\\''s $(touch pwned) `touch pwned`' >",
        "\nsay 'begin io.stat x$(touch pwned)'; cat '/sys/fs/cgroup/x$(touch pwned)'/io.stat; say end\n",
    ] {
        assert!(init.contains(line), "`{line}` not in\n{init}");
    }
    assert!(!init.contains("--output-format=normal"), "{init}");
    assert!(
        !init.contains("\nz)"),
        "the title's line break ends the comment"
    );
    if common::require_tool("sh", "dash", "to check /init's syntax with `sh -n`") {
        let out = Command::new("sh")
            .args(["-n", "-c", &init])
            .output()
            .expect("sh starts");
        assert!(
            out.status.success(),
            "sh -n: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn dry_run_prints_the_guest_and_fetches_nothing() {
    let dir = fresh_dir("validate-dry-run");
    let (cache, tmp) = (dir.join("cache"), dir.join("tmp"));
    std::fs::create_dir_all(&tmp).expect("mkdir");
    let scenario = dir.join("hostile.toml");
    std::fs::write(&scenario, HOSTILE).expect("write");
    let out = validate(
        &[
            scenario.as_ref(),
            "--variant".as_ref(),
            HOSTILE_VARIANT.as_ref(),
            "--dry-run".as_ref(),
        ],
        &cache,
        &tmp,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("kernel: none at hand"), "{stdout}");
    assert!(stdout.contains("loads no modules"), "{stdout}");
    for listed in [
        "  /bin/busybox ",
        "  /usr/bin/fio ",
        "  /jobs/1.fio ",
        "  /init ",
    ] {
        assert!(stdout.contains(listed), "`{listed}` not listed:\n{stdout}");
    }
    let init = stdout
        .split("==> /init <==\n")
        .nth(1)
        .and_then(|s| s.split("\n==> ").next())
        .expect("/init printed");
    assert!(init.starts_with("#!/bin/busybox sh\n") && init.contains("'--name=a b'"));
    assert!(!init.contains("insmod"));
    assert!(stdout.contains("==> /jobs/1.fio <==\n[global]\nfilename=/dev/d$(touch${IFS}pwned)\n"));
    assert!(stdout.contains("\ndescription=two words\n"), "{stdout}");
    assert!(!stderr.contains("downloading"), "{stderr}");
    assert!(!cache.exists(), "a dry run fetches nothing");
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

#[test]
fn successive_fio_runs_wait_for_the_run_before() {
    let p = try_plan_text("[device]\nmodel = \"nullb\"\n[cgroup.a]\nfio = [\"fio --name=a1 --rw=randread\", \"fio --name=a2 --rw=randread\"]\n[cgroup.b]\nfio = \"fio --name=b1 --rw=randread\"\n").expect("plans");
    let init = p.init_script(&modules());
    let at = |s: &str| init.find(s).unwrap_or_else(|| panic!("`{s}` in\n{init}"));
    // a1 and b1 start together; a2 once both have exited
    let (a1, b1, a2) = (at("--name=a1"), at("--name=b1"), at("--name=a2"));
    let barrier = at("wait $P\nP=\n");
    assert!(a1 < barrier && b1 < barrier && barrier < a2, "{init}");
}

/// The differential campaign's smoke run, as CI runs it: three random scenarios of a
/// fixed seed, each booted twice, from an empty cache. Every scenario is validated
/// (exit status 0), random.jsonl has a line per scenario with both boots' figures, the
/// report ranks them, and a rerun resumes with nothing left to boot.
#[test]
fn a_random_campaign_of_three_scenarios_runs_resumes_and_reports() {
    let dir = fresh_dir("validate-random");
    let (cache, tmp, out_dir) = (dir.join("cache"), dir.join("tmp"), dir.join("camp"));
    std::fs::create_dir_all(&tmp).expect("mkdir");
    let args: Vec<&std::ffi::OsStr> = [
        "--random", "3", "--family", "throttle", "--seed", "1", "--output",
    ]
    .iter()
    .map(|a| a.as_ref())
    .chain([out_dir.as_os_str()])
    .collect();
    if let Some(why) = cannot_boot(&args, &cache, &tmp) {
        no_boot(&why);
        return;
    }
    let out = validate(&args, &cache, &tmp);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "validate --random failed: {stderr}{stdout}"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out_dir.join("random.jsonl"))
        .expect("random.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 3);
    for l in &lines {
        assert!(l.get("error").is_none(), "{l}");
        for job in l["kernels"][0]["jobs"].as_array().expect("jobs") {
            assert_eq!(job["real_runs"].as_array().map(Vec::len), Some(2), "{job}");
            assert!(job["real"]["iops"].as_f64().is_some(), "{job}");
        }
    }
    for f in ["report.txt", "report.html"] {
        assert!(out_dir.join(f).is_file(), "{f}");
    }
    // every file the page links is there, and a real browser shows the ranked table
    let page = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
    let hrefs: Vec<&str> = page
        .split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    assert_eq!(hrefs.len(), 6, "{hrefs:?}");
    for h in &hrefs {
        assert!(
            out_dir.join(h).is_file(),
            "report.html links {h}, not there"
        );
    }
    if common::require_tool("chromium", "chromium", "to open the campaign's report.html") {
        let browser = Command::new("chromium")
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
            .arg(format!("file://{}", out_dir.join("report.html").display()))
            .output()
            .expect("chromium starts");
        let dom = String::from_utf8_lossy(&browser.stdout);
        assert!(
            dom.contains("Scenarios by disagreement") && dom.matches("<tr>").count() >= 3 + 2,
            "the browser did not show the ranked table: {dom}"
        );
    }
    assert!(
        stdout.contains("3 scenario(s) judged, 0 could not be validated; up to 2 real boot(s)"),
        "{stdout}"
    );
    assert!(stdout.contains("throttle · Linux 6.1"), "{stdout}");
    let again = validate(&args, &cache, &tmp);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success());
    assert!(
        stdout.contains("3 already in") && stdout.contains("0 to validate"),
        "{stdout}"
    );
    // resimulated on another kernel than the boots': each scenario is left for a run
    // that names its kernel (a campaign across a point release), not judged, not an
    // error line; then on the boots' own kernel, judged
    let booted = lines[0]["kernels"][0]["kernel"]
        .as_str()
        .expect("kernel")
        .to_string();
    let mut other = args.clone();
    other.extend(["--resimulate", "--kernel", "debian-13"].map(std::ffi::OsStr::new));
    let elsewhere = validate(&other, &cache, &tmp);
    let stdout = String::from_utf8_lossy(&elsewhere.stdout);
    assert_eq!(elsewhere.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "3 scenario(s) were booted on a kernel not given: {booted} (3)"
        )),
        "{stdout}"
    );
    let resimulated = out_dir.join("resimulated.jsonl");
    let judged = || {
        std::fs::read_to_string(&resimulated)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(judged(), 0);
    let mut own = args.clone();
    own.push("--resimulate".as_ref());
    let home = validate(&own, &cache, &tmp);
    let stdout = String::from_utf8_lossy(&home.stdout);
    assert!(home.status.success(), "{stdout}");
    assert_eq!(judged(), 3, "{stdout}");
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch folders left");
    // killed while its guest runs fio, the campaign takes the guest with it (no qemu
    // left on the scratch folder's initramfs), and what it had judged stays
    let mut more = args.clone();
    more[1] = "4".as_ref();
    let mut child = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .arg("validate")
        .args(&more)
        .env("BLKCG_SIM_CACHE", &cache)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let started = std::io::BufRead::lines(stderr)
        .map_while(Result::ok)
        .any(|l| l.contains("guest: start"));
    assert!(started, "the fourth scenario's guest never started");
    // SAFETY: a plain kill(2) of our own child
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    child.wait().expect("waits");
    let tmp_name = tmp.to_string_lossy().into_owned();
    let guests = || {
        std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).contains(&tmp_name))
            .count()
    };
    let t0 = std::time::Instant::now();
    while guests() > 0 && t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        guests(),
        0,
        "a guest outlived the validate run that owned it"
    );
    let lines = std::fs::read_to_string(out_dir.join("random.jsonl")).expect("random.jsonl");
    assert_eq!(lines.lines().count(), 3);
    std::fs::remove_dir_all(&dir).expect("remove the test's folder");
}

/// A replaying job's logs go into the guest beside its job: each `read_iolog` name,
/// read beside the scenario file, staged as `/jobs/N-log-K`, the option pointed there,
/// and every replay redirected to the guest's disk (the log names the recording
/// machine's devices); a job's own `replay_redirect` is dropped.
#[test]
fn replayed_logs_are_staged_for_the_guest() {
    let text = "name = \"r\"\n[device]\nmodel = \"nullb\"\n\
                [cgroup.a]\nfio = \"fio --name=r --read_iolog=logs/a.log:b.log \
                --replay_redirect=/dev/sdq --direct=1\"\n\
                [cgroup.b]\nfio = \"\"\"\n[r]\nread_iolog = c.log\nreplay_redirect=/dev/sdq\n\"\"\"\n";
    let sc = Scenario::parse(text, "dir/s.toml").expect("parses");
    let mut plan = GuestPlan::from_resolved(&sc.resolve(None).expect("resolves")).unwrap();
    plan.stage_iologs("dir/s.toml");
    let mut staged = plan.iolog_files();
    staged.sort();
    assert_eq!(
        staged,
        [
            ("jobs/0-log-0".to_string(), "dir/logs/a.log".to_string()),
            ("jobs/0-log-1".to_string(), "dir/b.log".to_string()),
            ("jobs/1-log-0".to_string(), "dir/c.log".to_string()),
        ]
    );
    let init = plan.init_script(&modules());
    assert!(
        init.contains("\"--replay_redirect=/dev/$DISK\" --name=r '--read_iolog=/jobs/0-log-0:/jobs/0-log-1' --direct=1")
            || init.contains("\"--replay_redirect=/dev/$DISK\" --name=r --read_iolog=/jobs/0-log-0:/jobs/0-log-1 --direct=1"),
        "{init}"
    );
    assert!(!init.contains("sdq"), "{init}");
    let (_, job) = plan
        .job_files()
        .into_iter()
        .find(|(p, _)| p == "jobs/1.fio")
        .unwrap();
    assert!(job.contains("replay_redirect=/dev/nullb0\n"), "{job}");
    assert!(
        job.contains("read_iolog=/jobs/1-log-0") && !job.contains("sdq"),
        "{job}"
    );
}
