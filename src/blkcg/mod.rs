//! cgroup v2 side of the block controllers: the interface files, parsed and printed as
//! the kernel does, and the errors the kernel returns for bad writes.
//!
//! - `iomax.rs`       — `io.max` (blk-throttle), mirrors `tg_set_limit()` / `tg_prfill_limit()`;
//! - `ioweight.rs`    — `io.weight`, mirrors `ioc_weight_write()` / `ioc_weight_show()`;
//! - `iocost_qos.rs`  — `io.cost.qos`, mirrors `ioc_qos_write()` / `ioc_qos_prfill()`;
//! - `iocost_model.rs`— `io.cost.model`, mirrors `ioc_cost_model_write()` / `..._prfill()`;
//! - `ioprio.rs`      — `io.prio.class` (blk-ioprio) and a bio's I/O priority, mirrors
//!   `ioprio_set_prio_policy()` / `blkcg_set_ioprio()` / `bio_set_ioprio()`;
//! - `iolatency.rs`   — `io.latency` (blk-iolatency), mirrors `iolatency_set_limit()` /
//!   `iolatency_prfill_limit()`;
//! - `tree.rs`        — the cgroup hierarchy of a scenario;
//! - `kstrto.rs`      — `kstrtoint()` and kin, as a written number is read.

/// The errno a refused interface-file write returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Errno {
    EINVAL,
    ENODEV,
    ENOENT,
    ERANGE,
    EOPNOTSUPP,
}

impl Errno {
    pub fn name(self) -> &'static str {
        match self {
            Errno::EINVAL => "EINVAL",
            Errno::ENODEV => "ENODEV",
            Errno::ENOENT => "ENOENT",
            Errno::ERANGE => "ERANGE",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
        }
    }
    /// The text `strerror()` gives, as a shell's `echo` would print it.
    pub fn strerror(self) -> &'static str {
        match self {
            Errno::EINVAL => "Invalid argument",
            Errno::ENODEV => "No such device",
            Errno::ENOENT => "No such file or directory",
            Errno::ERANGE => "Numerical result out of range",
            Errno::EOPNOTSUPP => "Operation not supported",
        }
    }
}

/// A write the kernel refuses: the errno it returns and our explanation of why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("write error: {} ({}): {why}", .errno.strerror(), .errno.name())]
pub struct KernelError {
    pub errno: Errno,
    pub why: String,
}

impl KernelError {
    pub fn new(errno: Errno, why: impl Into<String>) -> Self {
        KernelError {
            errno,
            why: why.into(),
        }
    }
}

/// The devices an interface write can name: `MAJ:MIN` of whole disks known to the
/// scenario. A partition or unknown device is ENODEV, as in `blkg_conf_open_bdev()`.
#[derive(Debug, Clone, Default)]
pub struct DeviceTable {
    pub disks: Vec<(u32, u32)>,
}

impl DeviceTable {
    pub fn contains(&self, major: u32, minor: u32) -> bool {
        self.disks.contains(&(major, minor))
    }
}

pub mod iocost_model;
pub mod iocost_qos;
pub mod iolatency;
pub mod iomax;
pub mod ioprio;
pub mod ioweight;
pub mod kstrto;
pub mod tree;

pub use tree::CgroupTree;
