//! A hard disk: one actuator serving a FIFO (scheduler `none`).
//!
//! Design
//! ------
//! Service time = seek(distance) + rotational latency + transfer.
//! - Seek curve: 0 for distance 0, else `t2t + (full - t2t) * sqrt(d / capacity)`
//!   (`track_to_track_us`, `full_stroke_us`), so the average over uniform random
//!   positions (E\[sqrt\] ≈ 0.53 of the stroke) lands near datasheet averages.
//! - Rotation: uniform in [0, 60/rpm) from the seeded RNG, or exactly half a
//!   revolution with `rot_mode = "half"`; skipped for a sequential continuation.
//! - Transfer at `mbps` (10^6 B/s).
//!
//! Events: one `Event::Device(tag)` per request; the completion starts the next.

use super::config::Keys;
use super::{BlockDevice, Completion, DevRq, LatencyModel, QueueLimits};
use crate::error::KeyError;
use crate::sim::{Event, EventQueue, NSEC_PER_SEC, NSEC_PER_USEC, Ns, SimRng, time_text};
use std::collections::VecDeque;

/// Resolved HDD configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub rpm: u64,
    pub track_to_track_us: u64,
    pub full_stroke_us: u64,
    pub mbps: u64,
    pub queue_depth: u32,
    pub half_rotation: bool,
    pub max_sectors_kb: u32,
    pub size_gb: u64,
    pub dev: (u32, u32),
    pub name: String,
}

impl Config {
    pub fn from_keys(k: &mut Keys) -> Result<Self, KeyError> {
        Ok(Config {
            rpm: k.u64("rpm", 7200, 1000, 20000)?,
            track_to_track_us: k.u64("track_to_track_us", 500, 0, 1_000_000)?,
            full_stroke_us: k.u64("full_stroke_us", 16_000, 0, 1_000_000)?,
            mbps: k.u64("mbps", 180, 1, 100_000)?,
            queue_depth: k.u64("queue_depth", 32, 1, 4096)? as u32,
            half_rotation: k.choice("rot_mode", "random", &["random", "half"])? == "half",
            max_sectors_kb: k.u64("max_sectors_kb", 1280, 4, 1 << 20)? as u32,
            size_gb: k.u64("size_gb", 1000, 1, 1 << 20)?,
            dev: k.dev((8, 0))?,
            name: k.name("sda")?,
        })
    }
}

pub struct Hdd {
    cfg: Config,
    limits: QueueLimits,
    rng: SimRng,
    busy: bool,
    /// Sector just past the last transfer.
    head: u64,
    fifo: VecDeque<DevRq>,
}

impl Hdd {
    pub fn new(cfg: Config, seed: u64) -> Self {
        let limits = QueueLimits {
            major: cfg.dev.0,
            minor: cfg.dev.1,
            name: cfg.name.clone(),
            rotational: true,
            hw_queue_depth: cfg.queue_depth,
            nr_requests: cfg.queue_depth,
            max_sectors_kb: cfg.max_sectors_kb,
            logical_block_size: 512,
            capacity: cfg.size_gb * 1_000_000_000,
            // a SATA disk's write cache is on from the factory (WCE)
            write_cache: true,
            // a SATA disk is SCSI to the block layer: sd sets q->queue_depth
            queue_depth: Some(cfg.queue_depth),
        };
        let fifo = VecDeque::with_capacity(cfg.queue_depth as usize);
        Hdd {
            rng: SimRng::new(seed, "device.hdd"),
            cfg,
            limits,
            busy: false,
            head: 0,
            fifo,
        }
    }

    /// Seek time in ns for a move of `dist` sectors.
    pub fn seek_ns(&self, dist: u64) -> Ns {
        if dist == 0 {
            return 0;
        }
        let frac = (dist as f64 / (self.limits.capacity / 512).max(1) as f64).min(1.0);
        let (a, b) = (
            self.cfg.track_to_track_us as f64,
            self.cfg.full_stroke_us as f64,
        );
        ((a + (b - a).max(0.0) * frac.sqrt()) * NSEC_PER_USEC as f64) as Ns
    }

    fn start(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) {
        let dist = self.head.abs_diff(rq.sector);
        let rev = 60 * NSEC_PER_SEC / self.cfg.rpm;
        let rot = match (dist, self.cfg.half_rotation) {
            (0, _) => 0,
            (_, true) => rev / 2,
            (_, false) => self.rng.below(rev),
        };
        let xfer =
            (rq.bytes as u128 * NSEC_PER_SEC as u128 / (self.cfg.mbps as u128 * 1_000_000)) as Ns;
        self.head = rq.sector + rq.bytes / 512;
        self.busy = true;
        q.push(
            now + self.seek_ns(dist) + rot + xfer,
            Event::Device(rq.tag as u64),
        );
    }
}

impl BlockDevice for Hdd {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Completion {
        if self.busy {
            self.fifo.push_back(rq);
        } else {
            self.start(now, rq, q);
        }
        Completion::Later
    }

    fn on_event(&mut self, now: Ns, token: u64, q: &mut EventQueue, done: &mut Vec<u32>) {
        done.push(token as u32);
        self.busy = false;
        if let Some(rq) = self.fifo.pop_front() {
            self.start(now, rq, q);
        }
    }

    fn model(&self) -> &'static str {
        "hdd"
    }

    fn latency_model(&self) -> LatencyModel {
        let c = &self.cfg;
        LatencyModel {
            text: format!(
                "seek {}–{} by distance + {} rotation at {} rpm + transfer at {} MB/s",
                time_text(c.track_to_track_us * NSEC_PER_USEC),
                time_text(c.full_stroke_us * NSEC_PER_USEC),
                if c.half_rotation {
                    "half a"
                } else {
                    "a random"
                },
                c.rpm,
                c.mbps
            ),
            keys: vec![
                "rpm",
                "track_to_track_us",
                "full_stroke_us",
                "mbps",
                "rot_mode",
            ],
        }
    }
}
