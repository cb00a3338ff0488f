//! `Bio`: one block-layer I/O as the controllers see it.
//!
//! A fio `io_u` becomes one bio. When the bio is larger than the device's
//! `max_sectors_kb`, the pipeline splits it: the front piece goes on down the stack,
//! the remainder is a new `Bio` (with `parent` pointing at the original) that re-enters
//! the stack from the top, exactly as `__bio_split_to_limits()` + `submit_bio_noacct()`
//! do. The fio I/O completes when its last piece completes (`bio_chain`). A bio merged
//! into a request is chained behind (or before) the request's bios through `next`
//! (`bi_next`), and ends when that request completes.

use super::Ns;
use crate::blkcg::ioprio::Ioprio;

/// Index of a bio in the pipeline's slab.
pub type BioId = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    Read = 0,
    Write = 1,
}

impl Dir {
    #[inline]
    pub fn idx(self) -> usize {
        self as usize
    }
    pub const BOTH: [Dir; 2] = [Dir::Read, Dir::Write];
    pub fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
        }
    }
}

/// How an I/O that did not succeed ended, as the submitter's errno: the block layer's
/// `blk_status_to_errno()` (BLK_STS_IOERR, BLK_STS_TIMEOUT) or the block device's
/// `write_iter` refusing a write past the end of a removed disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoErr {
    Eio,
    Enospc,
    Etimedout,
}

impl IoErr {
    pub fn errno(self) -> i32 {
        match self {
            IoErr::Eio => 5,
            IoErr::Enospc => 28,
            IoErr::Etimedout => 110,
        }
    }
    /// glibc's `strerror()`.
    pub fn strerror(self) -> &'static str {
        match self {
            IoErr::Eio => "Input/output error",
            IoErr::Enospc => "No space left on device",
            IoErr::Etimedout => "Connection timed out",
        }
    }
}

/// The `bi_opf` flags a policy reads (`include/linux/blk_types.h`), as bits of
/// [`Bio::opf`].
pub mod req {
    /// `REQ_SYNC`.
    pub const SYNC: u8 = 1;
    /// `REQ_IDLE`: no more I/O follows soon (an O_DIRECT write).
    pub const IDLE: u8 = 2;
    /// `REQ_BACKGROUND`: background or periodic writeback (`wbc_to_write_flags()`).
    pub const BACKGROUND: u8 = 4;
    /// An O_DIRECT I/O's: `REQ_SYNC | REQ_IDLE` (`dio_bio_write_op()`).
    pub const DIRECT: u8 = SYNC | IDLE;
}

#[derive(Debug, Clone, Copy)]
pub struct Bio {
    /// Cgroup index (0 = root) in the scenario's cgroup tree.
    pub cgroup: u32,
    pub dir: Dir,
    /// Start, in 512-byte sectors.
    pub sector: u64,
    /// Length in bytes (a multiple of 512).
    pub bytes: u64,
    /// REQ_META / REQ_SWAP: must not be blocked (blk-throttle 6.12+ bypass, iocost debt).
    pub meta: bool,
    /// The `REQ_SYNC` / `REQ_IDLE` / `REQ_BACKGROUND` bits of `bi_opf` ([`req`]): what
    /// kind of write it is, as wbt tells an O_DIRECT write from writeback.
    pub opf: u8,
    /// BIO_BPS_THROTTLED: bytes already charged by blk-throttle on the whole path; a
    /// split remainder inherits it and is then looked at for iops only.
    pub bps_throttled: bool,
    /// Per-level scratch flag of the 6.16+ two-stage throttle queue
    /// (BIO_TG_BPS_THROTTLED): bytes charged at the current level.
    pub tg_bps_charged: bool,
    /// blk-iocost: the vtime cost this bio was charged (added to done_vtime on completion).
    pub iocost_cost: u64,
    /// The fio I/O this bio (or piece) belongs to.
    pub io: u32,
    /// When the bio first entered the block layer.
    pub submitted: Ns,
    /// `blkcg_bio_issue_init()`: when it passed the bio-level policies (after
    /// blk-throttle), stamped again for each piece of a split; blk-iolatency measures
    /// its latency from here.
    pub issue_time: Ns,
    /// `bi_ioprio`: the I/O priority (`crate::blkcg::ioprio`), set by the submitter and
    /// `bio_set_ioprio()`; a split piece keeps it.
    pub ioprio: Ioprio,
    /// `bi_next`: the next bio of the request it was merged into ([`NO_BIO`] for none;
    /// `crate::sim::merge`).
    pub next: BioId,
}

/// No bio: the end of a request's bio chain.
pub const NO_BIO: BioId = BioId::MAX;

impl Bio {
    /// A plain bio of `bytes` at `sector`, entering the block layer at `submitted`:
    /// an O_DIRECT one ([`req::DIRECT`]), not metadata, nothing charged yet, fio I/O 0
    /// (set `meta`/`opf`/`io` with struct update).
    pub fn new(cgroup: u32, dir: Dir, sector: u64, bytes: u64, submitted: Ns) -> Bio {
        Bio {
            cgroup,
            dir,
            sector,
            bytes,
            meta: false,
            opf: req::DIRECT,
            bps_throttled: false,
            tg_bps_charged: false,
            iocost_cost: 0,
            io: 0,
            submitted,
            issue_time: submitted,
            ioprio: Ioprio::DEFAULT,
            next: NO_BIO,
        }
    }

    /// `bio_split()`: keep the first `bytes` here and return the rest, which goes through
    /// the stack again from the top, so what a policy charged to this pass
    /// (`tg_bps_charged`, `iocost_cost`) is not carried over; `bps_throttled` is.
    pub fn split_off(&mut self, bytes: u64) -> Bio {
        let mut rest = *self;
        rest.sector += bytes / 512;
        rest.bytes -= bytes;
        rest.tg_bps_charged = false;
        rest.iocost_cost = 0;
        self.bytes = bytes;
        rest
    }
}

/// All live bios, indexed by `BioId`; freed slots are reused (bounded memory).
#[derive(Debug, Default)]
pub struct BioSlab {
    items: Vec<Bio>,
    free: Vec<BioId>,
}

impl BioSlab {
    pub fn alloc(&mut self, bio: Bio) -> BioId {
        if let Some(id) = self.free.pop() {
            self.items[id as usize] = bio;
            id
        } else {
            self.items.push(bio);
            (self.items.len() - 1) as BioId
        }
    }

    pub fn release(&mut self, id: BioId) {
        self.free.push(id);
    }

    #[inline]
    pub fn get(&self, id: BioId) -> &Bio {
        &self.items[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: BioId) -> &mut Bio {
        &mut self.items[id as usize]
    }

    /// Number of bios currently allocated.
    pub fn live(&self) -> usize {
        self.items.len() - self.free.len()
    }
}
