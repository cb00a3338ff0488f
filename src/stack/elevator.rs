//! The I/O scheduler interface (`struct elevator_mq_ops`, `block/elevator.h`).
//!
//! Design
//! ------
//! A request exists once its bio has a tag. The pipeline hands it to the elevator
//! (`insert_requests`), then runs the queue (`blk_mq_run_hw_queue()`): while the
//! elevator `has_work`, `dispatch_request` gives the next request for the driver. On
//! completion the elevator hears `completed_request`. Before a tag is taken,
//! `limit_depth` may cap how many tags a request of this kind can hold (mq-deadline's
//! `async_depth`: `data->shallow_depth`); a submitter over it sleeps for a tag (slat).
//!
//! The elevator sees the time (`now`) when a request is inserted and when the queue is
//! run: mq-deadline's expiry is in jiffies of it. An elevator with its own scheduler
//! tags says how many ([`Elevator::nr_requests`], `blk_mq_init_sched()`); the driver
//! then still takes at most `hw_queue_depth` of them at once, the rest wait in the
//! elevator. mq-deadline plugs in from `crate::sched::mq_deadline::elevator`.
//!
//! *Merges.* An elevator that merges ([`Elevator::merges`], the kernel's `bio_merge`
//! op) lets the block core (`crate::sim::merge`) merge a new bio into a request it
//! holds, and a new request into one it holds, before the request is inserted. The
//! core keeps what `elevator.c` keeps for every elevator (the back-merge hash,
//! `q->last_merge`) and asks the elevator only what is its own: the request a bio may
//! front-merge into (`request_merge`), a request's neighbours in its sort order
//! (`next_request`, `former_request`), and tells it of a request that grew at the
//! front (`request_merged`) or that absorbed another (`requests_merged`).
//!
//! `none` is no elevator at all, as in the kernel (`q->elevator` is NULL): a request
//! goes to the driver as soon as it has a tag (`blk_mq_try_issue_directly()`), with no
//! depth limit — a FIFO in tag order. A run has `none` unless it sets an elevator
//! (mq-deadline, BFQ: their own issues implement [`Elevator`]).

use crate::blkcg::ioprio::Ioprio;
use crate::blkcg::{DeviceTable, KernelError};
use crate::sim::sbitmap::Shallow;
use crate::sim::{BioId, Dir, EventQueue, Ns};
use crate::stack::{PolicyId, Recorder};

/// A request: a bio that holds a tag, and the bios merged into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Its tag (index into the queue's tags).
    pub tag: u32,
    /// Its first bio (`rq->bio`); merged bios follow through `Bio::next`.
    pub bio: BioId,
    pub cgroup: u32,
    pub dir: Dir,
    /// Start, in 512-byte sectors (`blk_rq_pos()`).
    pub sector: u64,
    /// Its bios' bytes together (`blk_rq_bytes()`).
    pub bytes: u64,
    /// `alloc_time_ns`: when its submitter started to wait for a tag.
    pub alloc_time: Ns,
    /// `start_time_ns`: when it got its tag.
    pub start_time: Ns,
    /// `req_get_ioprio()`: its bio's priority.
    pub ioprio: Ioprio,
    /// The task that submitted it (its io context): a job's index, or [`FLUSHER`]
    /// for writeback a flusher issued.
    pub task: u32,
    /// `op_is_sync()`: a read, or a write with `REQ_SYNC`.
    pub sync: bool,
}

/// What `limit_depth` is told of a request it limits (`blk_mq_alloc_data`): its
/// direction, whether it is sync, and who submits it for which cgroup (BFQ limits
/// each queue and group by weight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagAlloc {
    pub dir: Dir,
    pub sync: bool,
    /// As [`Request::task`].
    pub task: u32,
    pub cgroup: u32,
}

/// [`Request::task`] of the flushers' writeback (a kworker's io context).
pub const FLUSHER: u32 = u32::MAX;

/// An I/O scheduler (`struct elevator_mq_ops`).
pub trait Elevator: Send {
    /// Its name, as `/sys/block/DEV/queue/scheduler` shows it.
    fn name(&self) -> &'static str;
    /// Its id (its registry entry's): the events it pushes are `Event::Policy(id,
    /// token)`.
    fn id(&self) -> PolicyId;
    /// Its timer fired with `token` (an event it pushed; a timer it has cancelled or
    /// re-armed since fires as nothing); true when it asks for a queue run, which
    /// kblockd does (`blk_mq_run_hw_queues(q, true)`).
    fn on_timer(&mut self, _now: Ns, _token: u64, _q: &mut EventQueue) -> bool {
        false
    }
    /// The run's cgroup tree (each cgroup's parent) and its tasks' io contexts' I/O
    /// priorities (`ioprio_set()`, by task), once, before any request: what an
    /// elevator with a cgroup side (BFQ) builds its groups and queues from.
    fn attach(&mut self, _cgroup_parents: &[Option<u32>], _task_ioprios: &[Option<Ioprio>]) {}
    /// `echo line > file` in cgroup `cg` (0 = root) at `now`, `file` one of its
    /// registry entry's cgroup files; the kernel's errno if it refuses.
    fn write(
        &mut self,
        _now: Ns,
        file: &str,
        _cg: u32,
        _line: &str,
        _devs: &DeviceTable,
        _q: &mut EventQueue,
    ) -> Result<(), KernelError> {
        Err(KernelError::new(
            crate::blkcg::Errno::ENOENT,
            format!("{} has no cgroup file {file}", self.name()),
        ))
    }
    /// `limit_depth`: how the tag allocation of request `alloc` is limited
    /// (`shallow_depth`, and how sbitmap reads it); None for all of the tags.
    fn limit_depth(&self, _alloc: &TagAlloc) -> Option<Shallow> {
        None
    }
    /// The CPU its own work on a request costs beyond `[host] elevator_ns`, paid by a
    /// fio job in the call that submits the request (BFQ: `[host] bfq_ns`).
    fn submit_ns(&self, _host: &crate::scenario::host::HostCosts) -> Ns {
        0
    }
    /// The scheduler tags it allocates (`q->nr_requests` once it is set up), or None
    /// to keep the queue's `nr_requests` (`none`: the driver's tags).
    fn nr_requests(&self) -> Option<u32> {
        None
    }
    /// The smallest `shallow_depth` its `limit_depth` may give, as it tells sbitmap
    /// (`sbitmap_queue_min_shallow_depth()`, which sizes the wake-up batch); None if
    /// it limits nothing.
    fn min_shallow_depth(&self) -> Option<u32> {
        None
    }
    /// `insert_requests`: `rq` has its tag and waits for dispatch, from `now`.
    fn insert_requests(&mut self, rq: &Request, now: Ns);
    /// `has_work`: a request waits for dispatch.
    fn has_work(&self) -> bool;
    /// `dispatch_request`: the tag of the next request for the driver, at `now`.
    fn dispatch_request(&mut self, now: Ns) -> Option<u32>;
    /// Whether it merges bios into the requests it holds (`ops.bio_merge`).
    fn merges(&self) -> bool {
        false
    }
    /// `request_merge`: a request it holds that a bio in `dir` of priority `ioprio`
    /// ending at sector `end` would front-merge into (starts at `end`), if any.
    fn request_merge(&self, _dir: Dir, _ioprio: Ioprio, _end: u64) -> Option<u32> {
        None
    }
    /// `request_merged` after a front merge: request `tag` now starts at `sector`.
    fn request_merged(&mut self, _tag: u32, _sector: u64) {}
    /// `requests_merged`: request `next` was merged into request `tag` and is gone;
    /// `next` may be one it was never given (an insert merge).
    fn requests_merged(&mut self, _tag: u32, _next: &Request) {}
    /// `next_request`: the request after `tag` in its sort order (`elv_rb_latter_request()`).
    fn next_request(&self, _tag: u32) -> Option<u32> {
        None
    }
    /// `former_request`: the request before `tag` in its sort order.
    fn former_request(&self, _tag: u32) -> Option<u32> {
        None
    }
    /// `completed_request`: `rq` completed at `now` (a timer it arms goes in `q`); true
    /// when it asks for a queue run, which kblockd does (`blk_mq_run_hw_queues(q,
    /// true)`).
    fn completed_request(&mut self, _rq: &Request, _now: Ns, _q: &mut EventQueue) -> bool {
        false
    }
    /// Every sample tick (100 ms): take the rows it keeps per tick.
    fn sample(&mut self, _now: Ns) {}
    /// Hand the rows made since the last call to `rec`.
    fn drain(&mut self, _rec: &mut dyn Recorder) {}
}
