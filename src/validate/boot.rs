//! Booting the guest: the initramfs, then qemu with the console captured.
//!
//! Design
//! ------
//! [`initramfs`] lists the files of the guest's root — busybox, the host's `fio` with
//! every library `ldd` names, the kernel modules, the job files, the generated `/init` —
//! each with where its content comes from; `--dry-run` prints that list, and
//! [`build_initramfs`] stages it in a [`ScratchDir`] and packs it with `cpio -H newc`,
//! uncompressed (the kernel unpacks it at once; gzip costs seconds under TCG). Staging
//! happens only in a folder this run created itself, under a fresh name, and only that
//! folder is ever removed: nothing of the user's (`--output DIR`, the cache) is
//! deleted. [`boot`] runs `qemu-system-x86_64` with the serial console on stdout,
//! reads it line by line on a thread, and kills the guest at a deadline — or when
//! `validate` itself dies (a signal, a crash): qemu is started with
//! `PR_SET_PDEATHSIG`, so no guest outlives the run that owns it. Two clocks
//! ([`Timing`]): `icount` (TCG with `-icount shift=0,sleep=off`: guest time follows
//! instructions, idle time is skipped; runs repeat closely) and `realtime` (guest time
//! is host time: KVM when it works here, else TCG). KVM is never assumed: on these
//! machines `/dev/kvm` is a software hypervisor that a stock kernel dies under, so a
//! KVM boot that does not reach `/init` falls back to TCG.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::guest::{BEGIN_TRACE, GuestPlan, MARK};
use super::kernel::{Kernel, read_module, tool};

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

/// The kernel modules the guest loads (with their dependencies).
pub const MODULES: [&str; 1] = ["null_blk"];

/// Empty folders of the guest's root (mount points and the like).
const FOLDERS: [&str; 10] = [
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
];

/// Where one file of the initramfs comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A host file, copied.
    Host(PathBuf),
    /// A kernel module, decompressed (busybox `insmod` reads plain `.ko`).
    Module(PathBuf),
    /// Generated text (`init`, executable; job files).
    Text(String),
    /// A host command that is not installed here (its Debian package): listed by a dry
    /// run, refused by [`build_initramfs`].
    Missing {
        command: &'static str,
        package: &'static str,
    },
}

/// One file of the initramfs: its path under the guest's `/`, and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitramfsFile {
    pub path: String,
    pub content: Content,
}

/// The initramfs for `plan`, `/init` last. `modules` are the kernel modules to load
/// ([`Kernel::modules_for`] of [`MODULES`]), None when no kernel is at hand (a dry
/// run): `/init` then loads none.
pub fn initramfs(
    plan: &GuestPlan,
    modules: Option<&[(String, PathBuf)]>,
) -> Result<Vec<InitramfsFile>, String> {
    let mut files = Vec::new();
    for (command, package, dst) in BINARIES {
        let Ok(c) = tool(command, package) else {
            files.push(InitramfsFile {
                path: dst.into(),
                content: Content::Missing { command, package },
            });
            continue;
        };
        let path = PathBuf::from(c.get_program());
        let libs = shared_libraries(&path)?;
        files.push(InitramfsFile {
            path: dst.into(),
            content: Content::Host(path),
        });
        for lib in libs {
            files.push(InitramfsFile {
                path: lib.strip_prefix("/").unwrap_or(&lib).display().to_string(),
                content: Content::Host(lib),
            });
        }
    }
    let mut loads = Vec::new();
    for (name, host) in modules.unwrap_or_default() {
        let file = format!("{name}.ko");
        files.push(InitramfsFile {
            path: format!("lib/modules/{file}"),
            content: Content::Module(host.clone()),
        });
        // the script creates its devices through configfs
        let params = if name == "null_blk" {
            "nr_devices=0"
        } else {
            ""
        };
        loads.push((file, params.to_string()));
    }
    for (path, text) in plan.job_files() {
        files.push(InitramfsFile {
            path,
            content: Content::Text(text),
        });
    }
    for (path, host) in plan.iolog_files() {
        files.push(InitramfsFile {
            path,
            content: Content::Host(host.into()),
        });
    }
    files.push(InitramfsFile {
        path: "init".into(),
        content: Content::Text(plan.init_script(&loads)),
    });
    Ok(files)
}

/// A folder this run created under the system's temporary folder, with a name no one
/// else had, mode 0700; removed with everything in it when dropped.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A new folder `blkcg-sim-*` under `std::env::temp_dir()`.
    pub fn new() -> Result<ScratchDir, String> {
        ScratchDir::new_in(&std::env::temp_dir())
    }

    /// A new folder `blkcg-sim-*` under `parent`: `create_dir` (never an existing
    /// folder), trying another name if one is taken.
    pub fn new_in(parent: &Path) -> Result<ScratchDir, String> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU32, Ordering};
        static MADE: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for _ in 0..100 {
            let n = MADE.fetch_add(1, Ordering::Relaxed);
            let p = parent.join(format!("blkcg-sim-{}-{nanos:08x}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(ScratchDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot create {}: {e}", p.display())),
            }
        }
        Err(format!(
            "cannot create a scratch folder in {}: every name tried was taken",
            parent.display()
        ))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Stage `files` under `scratch` (a [`ScratchDir`]'s path) and pack them; returns the
/// cpio path, in `scratch` too.
pub fn build_initramfs(files: &[InitramfsFile], scratch: &Path) -> Result<PathBuf, String> {
    let root = scratch.join("root");
    mkdir(&root)?;
    for d in FOLDERS {
        mkdir(&root.join(d))?;
    }
    for f in files {
        let dst = root.join(&f.path);
        if let Some(d) = dst.parent() {
            mkdir(d)?;
        }
        match &f.content {
            Content::Host(src) => std::fs::copy(src, &dst)
                .map(|_| ())
                .map_err(|e| format!("copying {} to {}: {e}", src.display(), dst.display()))?,
            Content::Module(src) => write(&dst, &read_module(src)?)?,
            Content::Text(text) => write(&dst, text.as_bytes())?,
            Content::Missing { command, package } => {
                return Err(format!(
                    "`{command}` is not installed; it comes with the Debian package `{package}`"
                ));
            }
        }
    }
    set_executable(&root.join("init"))?;
    let cpio = scratch.join("initrd.cpio");
    pack_cpio(&root, &scratch.join("files.txt"), &cpio)?;
    Ok(cpio)
}

fn mkdir(p: &Path) -> Result<(), String> {
    std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))
}

fn write(p: &Path, data: &[u8]) -> Result<(), String> {
    std::fs::write(p, data).map_err(|e| format!("{}: {e}", p.display()))
}

fn set_executable(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", p.display()))
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

/// `find . | cpio -o -H newc` in Rust's order (sorted, parents first); the list of
/// names goes to cpio as a file (`list`, outside `root`), not through a pipe.
fn pack_cpio(root: &Path, list: &Path, out: &Path) -> Result<(), String> {
    let mut names = Vec::new();
    let mut todo = vec![PathBuf::from(".")];
    while let Some(rel) = todo.pop() {
        names.push(rel.clone());
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
    let text: String = names.iter().map(|p| format!("{}\n", p.display())).collect();
    write(list, text.as_bytes())?;
    let stdin = std::fs::File::open(list).map_err(|e| format!("{}: {e}", list.display()))?;
    let stdout = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let st = tool("cpio", "cpio")?
        .args(["-o", "-H", "newc", "-R", "0:0", "--quiet"])
        .current_dir(root)
        .stdin(stdin)
        .stdout(stdout)
        .status()
        .map_err(|e| format!("cpio: {e}"))?;
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

/// How long a boot may take (qemu's own CPU time under icount, else wall time: see
/// `ICOUNT_WALL_CAP`): `run` for the guest's work, and `trace` more once it starts
/// printing a recorded trace over the serial console (granted only then, so a guest
/// that hangs before is stopped as soon as without a trace).
#[derive(Debug, Clone, Copy)]
pub struct BootBudget {
    pub run: Duration,
    pub trace: Duration,
}

/// Boot `kernel` with `initrd` within `budget`. `status` hears each of the guest's
/// single-line markers as it arrives.
pub fn boot(
    kernel: &Kernel,
    initrd: &Path,
    timing: Timing,
    memory_mb: u64,
    budget: BootBudget,
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

/// The kernel's command line. A null_blk built into the kernel (`kernel build`) is
/// told what the module gets from `insmod`: no devices of its own, `/init` creates its
/// one through configfs (else its `nullb0` would take the scenario's name).
fn kernel_cmdline(kernel: &Kernel) -> String {
    let mut c = String::from("console=ttyS0 loglevel=1 panic=-1 mitigations=off");
    if kernel.has("CONFIG_BLK_DEV_NULL_BLK") == Some("y") {
        c.push_str(" null_blk.nr_devices=0");
    }
    c
}

/// The CPU time (user + system) process `pid` has used, from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // fields after the command name in parentheses: state is field 3, utime 14, stime 15
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = rest.get(11)?.parse::<u64>().ok()? + rest.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a configuration value
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|&h| h > 0)?;
    Some(Duration::from_millis(ticks * 1000 / hz))
}

/// Under icount the guest advances by instructions, so how long it takes depends on how
/// much CPU qemu gets, not on the clock: on a busy host a run needs more wall time for
/// the same guest. Its budget is therefore qemu's CPU time, with a wall-clock cap of
/// this many budgets so a guest starved of CPU still ends.
const ICOUNT_WALL_CAP: u32 = 8;

/// Why a guest that ran out of time did, when it was printing its trace: the jobs
/// were done, and the serial console carries a trace of a fast run slower than the
/// budget allows.
fn trace_cut_short(console: &str, prefix: &str) -> String {
    let Some((_, trace)) = console.split_once(&format!("{prefix}{BEGIN_TRACE}")) else {
        return String::new();
    };
    if trace.contains(&format!("{prefix}end")) {
        return String::new();
    }
    format!(
        " while printing its trace ({} lines so far): the jobs had finished, but the \
         serial console carries the trace of a fast run slower than that; trace fewer \
         events (--trace-event, no --blktrace) or a shorter run (fio's --runtime in a \
         copy of the scenario)",
        trace.lines().skip(1).count()
    )
}

fn run_qemu(
    kernel: &Kernel,
    initrd: &Path,
    accel: &str,
    memory_mb: u64,
    budget: BootBudget,
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
    .arg("-append")
    .arg(kernel_cmdline(kernel));
    match accel {
        "kvm" => cmd.args(["-accel", "kvm", "-cpu", "host"]),
        "tcg-icount" => cmd.args(["-accel", "tcg", "-icount", "shift=0,sleep=off"]),
        _ => cmd.args(["-accel", "tcg"]),
    };
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid). This thread waits for qemu below,
    // so it outlives the child, as PR_SET_PDEATHSIG (tied to the forking thread) needs.
    let parent = std::process::id();
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // the parent died between fork() and prctl(): nobody would own the guest
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
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
    let icount = accel == "tcg-icount";
    let mut allowed = budget.run;
    loop {
        let used = match icount {
            true => cpu_time(child.id()).unwrap_or_else(|| start.elapsed()),
            false => start.elapsed(),
        };
        let left = allowed.saturating_sub(used);
        if left.is_zero() || (icount && start.elapsed() >= allowed * ICOUNT_WALL_CAP) {
            timed_out = true;
            let _ = child.kill();
            break;
        }
        // wake at least once a second to look at qemu's CPU time again
        match rx.recv_timeout(left.min(Duration::from_secs(1))) {
            Ok(line) => {
                if let Some(m) = line.trim_end_matches('\r').split(&prefix).nth(1) {
                    if m == BEGIN_TRACE {
                        allowed = budget.run + budget.trace;
                    } else if !m.starts_with("begin") && m != "end" {
                        status(m);
                    }
                }
                console.push_str(&line);
                console.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    let _ = reader.join();
    let out = child.wait_with_output().map_err(|e| format!("qemu: {e}"))?;
    let wall = start.elapsed();
    if timed_out {
        return Err(format!(
            "the guest did not finish within {} s{} ({} s of wall time){}; its console so far:\n{}",
            allowed.as_secs(),
            if icount { " of qemu's CPU time" } else { "" },
            wall.as_secs(),
            trace_cut_short(&console, &prefix),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_reads_this_process_and_grows_with_work() {
        let before = cpu_time(std::process::id()).expect("our own /proc/PID/stat");
        let start = Instant::now();
        let mut x = 0u64;
        while cpu_time(std::process::id()).unwrap() <= before
            && start.elapsed() < Duration::from_secs(10)
        {
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
        assert!(cpu_time(std::process::id()).unwrap() > before, "{x}");
        assert_eq!(cpu_time(u32::MAX), None);
    }

    #[test]
    fn a_guest_out_of_time_in_its_trace_is_told_so() {
        let p = format!("{MARK} ");
        let cut = format!("{p}finish\n{p}begin trace\n a\n b\n");
        let why = trace_cut_short(&cut, &p);
        assert!(
            why.contains("printing its trace (2 lines") && why.contains("--runtime"),
            "{why}"
        );
        assert_eq!(trace_cut_short(&format!("{cut}{p}end\n"), &p), "");
        assert_eq!(trace_cut_short(&format!("{p}start\n"), &p), "");
    }

    #[test]
    fn a_scratch_dir_is_new_private_and_removed_alone() {
        let parent = ScratchDir::new().expect("parent");
        let keep = parent.path().join("keep");
        std::fs::write(&keep, "the user's").expect("write");
        let (a, b) = (
            ScratchDir::new_in(parent.path()).expect("a"),
            ScratchDir::new_in(parent.path()).expect("b"),
        );
        assert_ne!(a.path(), b.path());
        assert_eq!(a.path().parent(), Some(parent.path()));
        assert_eq!(std::fs::read_dir(a.path()).expect("a").count(), 0);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(a.path()).expect("a").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(a.path().join("f"), "x").expect("write");
        let a_path = a.path().to_path_buf();
        drop(a);
        assert!(!a_path.exists());
        assert!(
            b.path().is_dir() && keep.is_file(),
            "only its own folder goes"
        );
        let p = parent.path().to_path_buf();
        drop((b, parent));
        assert!(!p.exists());
    }

    #[test]
    fn a_built_in_null_blk_makes_no_device_of_its_own() {
        let mut k = Kernel {
            release: "6.12.117-blkcg-sim".into(),
            image: PathBuf::new(),
            modules: PathBuf::new(),
            config: super::super::kernel::parse_config("CONFIG_BLK_DEV_NULL_BLK=m\n"),
            banner: String::new(),
        };
        assert!(!kernel_cmdline(&k).contains("null_blk"));
        k.config = super::super::kernel::parse_config("CONFIG_BLK_DEV_NULL_BLK=y\n");
        assert!(kernel_cmdline(&k).ends_with(" null_blk.nr_devices=0"));
    }

    #[test]
    fn a_scratch_dir_cannot_be_made_where_nothing_can() {
        let e = ScratchDir::new_in(Path::new("/nonexistent/blkcg-sim")).expect_err("refused");
        assert!(e.contains("/nonexistent/blkcg-sim"), "{e}");
    }
}
