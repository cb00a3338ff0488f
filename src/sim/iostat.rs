//! The device's per-second accounting, as `iostat -x 1` shows it: `iostat.csv`, the
//! summary's device table, `run --timeline`.
//!
//! Design
//! ------
//! The idea: the kernel's disk stats (`part_stat`, `update_io_ticks()`) count
//! completed ios and bytes per direction, and integrate the requests in flight over
//! time; iostat turns two readings a second apart into `aqu-sz` (the time-averaged
//! queue) and `%util` (the share of the second with anything in flight). Here the
//! integrals are kept exactly, in ns, and closed once per simulated second.
//!
//! Moving parts: [`IostatRow`], one second (with the device model's own columns,
//! `BlockDevice::stat_columns()`), what the pipeline hands to the `Recorder`;
//! `DevAcct`, the running counts the pipeline (`crate::sim::engine`) updates where a
//! request is counted in flight (tag allocation with an elevator, else the driver's
//! `queue_rq()`) and where it completes, and closes at each whole second of its
//! sample tick (`Pipeline::on_sample`); a final partial second is kept only if it saw
//! a completion.

use crate::sim::{NSEC_PER_SEC, Ns};

/// Per-second device view, like `iostat -x 1`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IostatRow {
    /// Second index (row covers [t, t+1) s).
    pub t: u64,
    pub r_ios: u64,
    pub w_ios: u64,
    pub r_bytes: u64,
    pub w_bytes: u64,
    /// Merges (`rrqm/s`, `wrqm/s`): bios merged into a waiting request, and requests
    /// merged into another (`crate::sim::merge`).
    pub r_merges: u64,
    pub w_merges: u64,
    /// Time-averaged requests in flight (aqu-sz).
    pub aqu_sz: f64,
    /// Percent of the second with at least one request in flight.
    pub util: f64,
    /// The device model's own columns (`BlockDevice::stat_columns()`) and their values.
    pub dev_cols: &'static [&'static str],
    pub dev_vals: Vec<f64>,
}

/// The device's accounting: what is in flight, and the second being counted.
#[derive(Debug, Default)]
pub(super) struct DevAcct {
    /// Requests in flight (`in_flight`; with an elevator, from tag allocation on).
    pub(super) inflight: u32,
    last: Ns,
    area: u128,
    busy: Ns,
    /// The second being counted: its ios and bytes, added at each completion.
    pub(super) cur: IostatRow,
    /// Seconds closed since the last drain.
    pub(super) rows: Vec<IostatRow>,
    /// Bytes completed since the start (progress by bytes).
    pub(super) done_bytes: u64,
}

impl DevAcct {
    /// `part_stat_inc(merges[])`: a merge in direction `dir`.
    pub(super) fn count_merge(&mut self, dir: crate::sim::Dir) {
        match dir {
            crate::sim::Dir::Read => self.cur.r_merges += 1,
            crate::sim::Dir::Write => self.cur.w_merges += 1,
        }
    }

    /// Brings the time integrals (in flight × time, busy time) up to `now`; called
    /// before every change of `inflight`.
    pub(super) fn advance(&mut self, now: Ns) {
        let dt = now - self.last;
        self.area += self.inflight as u128 * dt as u128;
        if self.inflight > 0 {
            self.busy += dt;
        }
        self.last = now;
    }
    /// Closes the second ending at `now` into `rows` and starts the next.
    pub(super) fn close_second(&mut self, now: Ns) {
        self.advance(now);
        let mut row = std::mem::take(&mut self.cur);
        row.aqu_sz = self.area as f64 / NSEC_PER_SEC as f64;
        row.util = self.busy as f64 * 100.0 / NSEC_PER_SEC as f64;
        self.area = 0;
        self.busy = 0;
        self.cur.t = row.t + 1;
        self.rows.push(row);
    }
}
