//! The I/O scheduler interface (`struct elevator_mq_ops`, `block/elevator.h`) and its
//! first implementation, `none`.
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
//! `none` ([`NoneSched`]) is a FIFO with no depth limit: with it a request goes to
//! the driver as soon as it has a tag, as blk-mq does with no scheduler.

use std::collections::VecDeque;

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

/// `none`: first in, first out, no depth limit.
#[derive(Debug, Default)]
pub struct NoneSched {
    fifo: VecDeque<Request>,
}

impl Elevator for NoneSched {
    fn name(&self) -> &'static str {
        "none"
    }
    fn insert_requests(&mut self, rq: Request) {
        self.fifo.push_back(rq);
    }
    fn has_work(&self) -> bool {
        !self.fifo.is_empty()
    }
    fn dispatch_request(&mut self) -> Option<Request> {
        self.fifo.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rq(tag: u32) -> Request {
        Request {
            tag,
            bio: tag,
            cgroup: 0,
            dir: Dir::Read,
            sector: u64::from(tag) * 8,
            bytes: 4096,
            alloc_time: 0,
            start_time: 0,
        }
    }

    #[test]
    fn none_dispatches_in_insertion_order_without_a_depth_limit() {
        let mut e = NoneSched::default();
        assert!(!e.has_work());
        for t in [3, 1, 2] {
            e.insert_requests(rq(t));
        }
        assert_eq!(e.limit_depth(Dir::Write), None);
        let order: Vec<u32> = std::iter::from_fn(|| e.dispatch_request())
            .map(|r| r.tag)
            .collect();
        assert_eq!(order, [3, 1, 2]);
        assert!(!e.has_work());
    }
}
