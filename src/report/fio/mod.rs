//! (stub until the fio-output branch lands)
use crate::sim::Dir;
#[derive(Debug, Default, Clone)]
pub struct JobStats {
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub clat_sum: [u64; 2],
    pub clat_max: [u64; 2],
    pub slat_sum: [u64; 2],
}
impl JobStats {
    pub fn add_slat(&mut self, d: Dir, ns: u64) {
        self.slat_sum[d.idx()] += ns;
    }
    pub fn add_clat(&mut self, d: Dir, ns: u64) {
        self.clat_sum[d.idx()] += ns;
        self.clat_max[d.idx()] = self.clat_max[d.idx()].max(ns);
    }
    pub fn add_lat(&mut self, _d: Dir, _ns: u64) {}
    pub fn add_io(&mut self, d: Dir, bytes: u64) {
        self.ios[d.idx()] += 1;
        self.bytes[d.idx()] += bytes;
    }
    pub fn mark_depth(&mut self, _depth: u32) {}
    pub fn mark_submit(&mut self, _n: u32) {}
    pub fn mark_complete(&mut self, _n: u32) {}
    pub fn sample(&mut self, _elapsed_ms: u64) {}
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}
