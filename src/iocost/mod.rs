//! (stub until the blk-iocost branch lands)
use crate::sim::{Bio, BioId, BioSlab, Dir, EventQueue, Ns};
pub struct Iocost;
impl Iocost {
    pub fn throttle(&mut self, _now: Ns, _id: BioId, _bio: &mut Bio, _q: &mut EventQueue) -> bool {
        true
    }
    pub fn on_event(
        &mut self,
        _now: Ns,
        _t: u64,
        _q: &mut EventQueue,
        _b: &mut BioSlab,
        _w: &mut Vec<BioId>,
    ) {
    }
    pub fn on_rq_done(&mut self, _now: Ns, _dir: Dir, _bytes: u64, _alloc: Ns, _start: Ns) {}
    pub fn on_bio_done(&mut self, _now: Ns, _bio: &Bio) {}
    pub fn user_delay(&mut self, _now: Ns, _cg: u32) -> Ns {
        0
    }
}
