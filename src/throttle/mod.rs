//! (stub until the blk-throttle branch lands)
use crate::sim::{Bio, BioId, BioSlab, EventQueue, Ns};
pub struct Throttle;
impl Throttle {
    pub fn submit(&mut self, _now: Ns, _id: BioId, _bio: &mut Bio, _q: &mut EventQueue) -> bool {
        true
    }
    pub fn on_event(
        &mut self,
        _now: Ns,
        _t: u64,
        _q: &mut EventQueue,
        _b: &mut BioSlab,
        _out: &mut Vec<BioId>,
    ) {
    }
}
