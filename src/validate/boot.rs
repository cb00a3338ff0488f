//! Booting the guest: the initramfs, then qemu with the console captured.
//!
//! Design
//! ------
//! [`build_initramfs`] stages a root folder — busybox, the host's `fio` with every
//! library `ldd` names, the kernel modules, the job files, the generated `/init` — and
//! packs it with `cpio -H newc`, uncompressed (the kernel unpacks it at once; gzip
//! costs seconds under TCG). [`boot`] runs `qemu-system-x86_64` with the serial
//! console on stdout, reads it line by line on a thread, and kills the guest at a
//! deadline. Two clocks ([`Timing`]): `icount` (TCG with `-icount shift=0,sleep=off`:
//! guest time follows instructions, idle time is skipped; runs repeat closely) and
//! `realtime` (guest time is host time: KVM when it works here, else TCG). KVM is
//! never assumed: on these machines `/dev/kvm` is a software hypervisor that a stock
//! kernel dies under, so a KVM boot that does not reach `/init` falls back to TCG.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::guest::{GuestPlan, MARK};
use super::kernel::{Kernel, tool};

/// The guest's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// TCG, guest time by instruction count: near-deterministic, CPU looks ~1 GIPS.
    Icount,
    /// Guest time is host time (KVM if it works, else TCG ~10× slower than native).
    Realtime,
}

/// One boot's console and how it ran.
#[derive(Debug, Clone)]
pub struct Boot {
    pub console: String,
    /// `TCG (icount)`, `TCG (real time)` or `KVM`.
    pub accel: String,
    pub wall: Duration,
}

/// Host binaries copied into the guest: (host command, Debian package, guest path).
const BINARIES: [(&str, &str, &str); 2] = [
    ("busybox", "busybox-static", "bin/busybox"),
    ("fio", "fio", "usr/bin/fio"),
];

/// Stage and pack the initramfs for `plan` under `work`; returns the cpio path.
pub fn build_initramfs(plan: &GuestPlan, kernel: &Kernel, work: &Path) -> Result<PathBuf, String> {
    let root = work.join("root");
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    for d in [
        "bin",
        "sbin",
        "usr/bin",
        "proc",
        "sys",
        "dev",
        "tmp",
        "lib/modules",
        "jobs",
        "etc",
    ] {
        mkdir(&root.join(d))?;
    }
    for (cmd, pkg, dst) in BINARIES {
        let path = host_binary(cmd, pkg)?;
        copy(&path, &root.join(dst))?;
        for lib in shared_libraries(&path)? {
            let rel = lib.strip_prefix("/").unwrap_or(&lib);
            copy(&lib, &root.join(rel))?;
        }
    }
    let mut modules = Vec::new();
    for (file, host) in kernel.modules_for(&["null_blk"], &work.join("modules"))? {
        copy(&host, &root.join("lib/modules").join(&file))?;
        let params = if file == "null_blk.ko" {
            "nr_devices=0"
        } else {
            ""
        };
        modules.push((file, params.to_string()));
    }
    for (rel, text) in plan.job_files() {
        write(&root.join(rel), &text)?;
    }
    let init = root.join("init");
    write(&init, &plan.init_script(&modules))?;
    set_executable(&init)?;
    let cpio = work.join("initrd.cpio");
    pack_cpio(&root, &cpio)?;
    std::fs::remove_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    Ok(cpio)
}

fn mkdir(p: &Path) -> Result<(), String> {
    std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(d) = to.parent() {
        mkdir(d)?;
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

fn write(p: &Path, text: &str) -> Result<(), String> {
    if let Some(d) = p.parent() {
        mkdir(d)?;
    }
    std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))
}

fn set_executable(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", p.display()))
}

fn host_binary(cmd: &str, package: &str) -> Result<PathBuf, String> {
    let c = tool(cmd, package)?;
    Ok(PathBuf::from(c.get_program()))
}

/// The shared libraries `ldd` lists for `bin` (none for a static binary).
fn shared_libraries(bin: &Path) -> Result<Vec<PathBuf>, String> {
    let out = tool("ldd", "libc-bin")?
        .arg(bin)
        .output()
        .map_err(|e| format!("ldd: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')))
        .map(PathBuf::from)
        .collect())
}

/// `find . | cpio -o -H newc` in Rust's order (sorted, parents first).
fn pack_cpio(root: &Path, out: &Path) -> Result<(), String> {
    let mut list = Vec::new();
    let mut todo = vec![PathBuf::from(".")];
    while let Some(rel) = todo.pop() {
        list.push(rel.clone());
        let abs = root.join(&rel);
        if abs.is_dir() && !abs.is_symlink() {
            let mut kids: Vec<PathBuf> = std::fs::read_dir(&abs)
                .map_err(|e| format!("{}: {e}", abs.display()))?
                .flatten()
                .map(|e| rel.join(e.file_name()))
                .collect();
            kids.sort();
            todo.extend(kids.into_iter().rev());
        }
    }
    let names: String = list.iter().map(|p| format!("{}\n", p.display())).collect();
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut child = tool("cpio", "cpio")?
        .args(["-o", "-H", "newc", "-R", "0:0", "--quiet"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(file)
        .spawn()
        .map_err(|e| format!("cpio: {e}"))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().ok_or("cpio: no stdin")?;
        stdin
            .write_all(names.as_bytes())
            .map_err(|e| format!("cpio: {e}"))?;
    }
    let st = child.wait().map_err(|e| format!("cpio: {e}"))?;
    if !st.success() {
        return Err("cpio failed to pack the initramfs".into());
    }
    Ok(())
}

/// Whether `/dev/kvm` can be opened for use.
fn kvm_openable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Boot `kernel` with `initrd`; `budget` bounds the wall time. `status` hears each of
/// the guest's single-line markers as it arrives.
pub fn boot(
    kernel: &Kernel,
    initrd: &Path,
    timing: Timing,
    memory_mb: u64,
    budget: Duration,
    status: &mut dyn FnMut(&str),
) -> Result<Boot, String> {
    if timing == Timing::Realtime && kvm_openable() {
        let b = run_qemu(kernel, initrd, "kvm", memory_mb, budget, status)?;
        if b.console.contains(&format!("{MARK} kernel")) {
            return Ok(Boot {
                accel: "KVM".into(),
                ..b
            });
        }
        status("KVM did not reach /init here (a software hypervisor?); falling back to TCG");
    }
    let (accel, name) = match timing {
        Timing::Icount => (
            "tcg-icount",
            "TCG (icount: guest time by instruction count)",
        ),
        Timing::Realtime => ("tcg", "TCG (real time)"),
    };
    let b = run_qemu(kernel, initrd, accel, memory_mb, budget, status)?;
    Ok(Boot {
        accel: name.into(),
        ..b
    })
}

fn run_qemu(
    kernel: &Kernel,
    initrd: &Path,
    accel: &str,
    memory_mb: u64,
    budget: Duration,
    status: &mut dyn FnMut(&str),
) -> Result<Boot, String> {
    let mut cmd = tool("qemu-system-x86_64", "qemu-system-x86")?;
    cmd.args([
        "-nodefaults",
        "-no-reboot",
        "-display",
        "none",
        "-serial",
        "stdio",
    ])
    .args(["-m", &memory_mb.to_string(), "-smp", "1"])
    .arg("-kernel")
    .arg(&kernel.image)
    .arg("-initrd")
    .arg(initrd)
    .args([
        "-append",
        "console=ttyS0 loglevel=1 panic=-1 mitigations=off",
    ]);
    match accel {
        "kvm" => cmd.args(["-accel", "kvm", "-cpu", "host"]),
        "tcg-icount" => cmd.args(["-accel", "tcg", "-icount", "shift=0,sleep=off"]),
        _ => cmd.args(["-accel", "tcg"]),
    };
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("qemu-system-x86_64: {e}"))?;
    let stdout = child.stdout.take().ok_or("qemu: no stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).split(b'\n').map_while(Result::ok) {
            if tx
                .send(String::from_utf8_lossy(&line).into_owned())
                .is_err()
            {
                break;
            }
        }
    });
    let mut console = String::new();
    let prefix = format!("{MARK} ");
    let mut timed_out = false;
    loop {
        let left = budget.saturating_sub(start.elapsed());
        match rx.recv_timeout(left.max(Duration::from_millis(1))) {
            Ok(line) => {
                if let Some(m) = line.trim_end_matches('\r').split(&prefix).nth(1)
                    && !m.starts_with("begin")
                    && m != "end"
                {
                    status(m);
                }
                console.push_str(&line);
                console.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                let _ = child.kill();
                break;
            }
        }
    }
    let _ = reader.join();
    let out = child.wait_with_output().map_err(|e| format!("qemu: {e}"))?;
    let wall = start.elapsed();
    if timed_out {
        return Err(format!(
            "the guest did not finish within {} s; its console so far:\n{}",
            budget.as_secs(),
            tail(&console, 30)
        ));
    }
    if !out.status.success() && !console.contains(&format!("{MARK} done")) {
        let err = String::from_utf8_lossy(&out.stderr);
        if accel != "kvm" {
            return Err(format!(
                "qemu failed ({}): {}\n{}",
                out.status,
                err.trim(),
                tail(&console, 30)
            ));
        }
    }
    Ok(Boot {
        console,
        accel: accel.to_string(),
        wall,
    })
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
