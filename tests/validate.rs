//! `blkcg-sim validate`: the guest's `/init` for the built-in validation scenarios
//! (golden files, no boot), the scenarios validate refuses, and one real boot when
//! qemu and a kernel are at hand.

use std::path::Path;
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

#[test]
fn init_for_an_iocost_scenario() {
    let p = plan("validate-iocost-weights");
    assert!(p.iocost && p.debug_stats);
    let init = p.init_script(&modules());
    assert!(init.contains("iocost_ioc_vrate_adj/enable"));
    assert!(init.contains("w /sys/fs/cgroup/heavy io.weight 'default 300'"));
    golden("validate-iocost-weights", &init);
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

/// One real boot: only where qemu, busybox and fio are installed and a kernel can be
/// had (CI installs them; set BLKCG_SIM_SKIP_BOOT=1 to skip).
#[test]
fn boots_a_real_kernel_and_compares() {
    let have = |c: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {c}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if std::env::var_os("BLKCG_SIM_SKIP_BOOT").is_some()
        || !["qemu-system-x86_64", "busybox", "fio", "cpio", "apt-get"]
            .iter()
            .all(|c| have(c))
    {
        eprintln!("skipped: qemu-system-x86_64, busybox, fio, cpio or apt-get missing");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("validate-scenario");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // a short version of the io.max validation scenario
    let text = embedded::get("validate-iomax-riops")
        .expect("built in")
        .replace("--runtime=10", "--runtime=3");
    let file = dir.join("short.toml");
    std::fs::write(&file, text).expect("write scenario");
    let out = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .arg("validate")
        .arg(&file)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "validate failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
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
