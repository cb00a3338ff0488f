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
//! `none` is no elevator at all, as in the kernel (`q->elevator` is NULL): a request
//! goes to the driver as soon as it has a tag (`blk_mq_try_issue_directly()`), with no
//! depth limit — a FIFO in tag order. A run has `none` unless it sets an elevator
//! (mq-deadline, BFQ: their own issues implement [`Elevator`]).

use crate::sim::{BioId, Dir, Ns};

/// A request: a bio that holds a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Its tag (index into the queue's tags).
    pub tag: u32,
    /// The bio it carries.
    pub bio: BioId,
    pub cgroup: u32,
    pub dir: Dir,
    /// Start, in 512-byte sectors.
    pub sector: u64,
    pub bytes: u64,
    /// `alloc_time_ns`: when its submitter started to wait for a tag.
    pub alloc_time: Ns,
    /// `start_time_ns`: when it got its tag.
    pub start_time: Ns,
}

/// An I/O scheduler (`struct elevator_mq_ops`).
pub trait Elevator: Send {
    /// Its name, as `/sys/block/DEV/queue/scheduler` shows it.
    fn name(&self) -> &'static str;
    /// `limit_depth`: how many tags a request in direction `dir` may hold at once
    /// (`shallow_depth`); None for all of them.
    fn limit_depth(&self, _dir: Dir) -> Option<u32> {
        None
    }
    /// `insert_requests`: `rq` has its tag and waits for dispatch.
    fn insert_requests(&mut self, rq: Request);
    /// `has_work`: a request waits for dispatch.
    fn has_work(&self) -> bool;
    /// `dispatch_request`: the next request for the driver.
    fn dispatch_request(&mut self) -> Option<Request>;
    /// `completed_request`: `rq` completed at `now`.
    fn completed_request(&mut self, _rq: &Request, _now: Ns) {}
}
