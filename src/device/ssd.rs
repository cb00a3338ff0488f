//! A flash SSD: `channels` parallel service units fed from one FIFO.
//!
//! Design
//! ------
//! A request takes a free channel for `lat + bytes / bw` (per direction: `read_lat_us`,
//! `read_mbps`, ...; bandwidth in 10^6 B/s per channel), stretched by a seeded uniform
//! jitter of ±`jitter_pct` %. With no free channel it waits in a FIFO (scheduler
//! `none`). Events: one `Event::Device(tag)` per request, at its completion; the
//! completion frees the channel and starts the FIFO head. O(1) per request.

use super::config::Keys;
use super::{BlockDevice, Completion, DevRq, LatencyModel, QueueLimits};
use crate::error::KeyError;
use crate::sim::{Dir, Event, EventQueue, NSEC_PER_SEC, NSEC_PER_USEC, Ns, SimRng, time_text};
use std::collections::VecDeque;

/// Resolved SSD configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub channels: u32,
    pub read_lat_us: u64,
    pub write_lat_us: u64,
    /// Per-channel bandwidth, 10^6 B/s.
    pub read_mbps: u64,
    pub write_mbps: u64,
    pub queue_depth: u32,
    pub jitter_pct: u64,
    pub max_sectors_kb: u32,
    /// GiB.
    pub size_gb: u64,
    pub dev: (u32, u32),
    pub name: String,
}

impl Config {
    pub fn from_keys(k: &mut Keys) -> Result<Self, KeyError> {
        Ok(Config {
            channels: k.u64("channels", 8, 1, 1024)? as u32,
            read_lat_us: k.u64("read_lat_us", 80, 0, 10_000_000)?,
            write_lat_us: k.u64("write_lat_us", 20, 0, 10_000_000)?,
            read_mbps: k.u64("read_mbps", 400, 1, 1_000_000)?,
            write_mbps: k.u64("write_mbps", 250, 1, 1_000_000)?,
            queue_depth: k.u64("queue_depth", 1023, 1, 65536)? as u32,
            jitter_pct: k.u64("jitter_pct", 0, 0, 99)?,
            max_sectors_kb: k.u64("max_sectors_kb", 1280, 4, 1 << 20)? as u32,
            size_gb: k.u64("size_gb", 512, 1, 1 << 20)?,
            dev: k.dev((259, 0))?,
            name: k.name("nvme0n1")?,
        })
    }
}

/// Service time of `bytes` at `lat_us` + `mbps` (10^6 B/s), in ns.
pub fn service_ns(lat_us: u64, mbps: u64, bytes: u64) -> Ns {
    lat_us * NSEC_PER_USEC
        + (bytes as u128 * NSEC_PER_SEC as u128 / (mbps as u128 * 1_000_000)) as Ns
}

pub struct Ssd {
    cfg: Config,
    limits: QueueLimits,
    rng: SimRng,
    free: u32,
    fifo: VecDeque<DevRq>,
}

impl Ssd {
    pub fn new(cfg: Config, seed: u64) -> Self {
        let limits = QueueLimits::nvme(
            cfg.dev,
            &cfg.name,
            cfg.queue_depth,
            cfg.max_sectors_kb,
            cfg.size_gb << 30,
        );
        let fifo = VecDeque::with_capacity(cfg.queue_depth as usize);
        Ssd {
            free: cfg.channels,
            rng: SimRng::new(seed, "device.ssd"),
            cfg,
            limits,
            fifo,
        }
    }

    fn start(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) {
        let (lat, bw) = match rq.dir {
            Dir::Read => (self.cfg.read_lat_us, self.cfg.read_mbps),
            Dir::Write => (self.cfg.write_lat_us, self.cfg.write_mbps),
        };
        let mut t = service_ns(lat, bw, rq.bytes);
        if self.cfg.jitter_pct > 0 {
            // uniform factor in [1 - j, 1 + j)
            let span = 2 * self.cfg.jitter_pct * t / 100;
            t = t - self.cfg.jitter_pct * t / 100 + self.rng.below(span.max(1));
        }
        self.free -= 1;
        q.push(now + t, Event::Device(rq.tag as u64));
    }
}

impl BlockDevice for Ssd {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) -> Completion {
        if self.free > 0 {
            self.start(now, rq, q);
        } else {
            self.fifo.push_back(rq);
        }
        Completion::Later
    }

    fn on_event(&mut self, now: Ns, token: u64, q: &mut EventQueue, done: &mut Vec<u32>) {
        done.push(token as u32);
        self.free += 1;
        if let Some(rq) = self.fifo.pop_front() {
            self.start(now, rq, q);
        }
    }

    fn model(&self) -> &'static str {
        "ssd"
    }

    fn latency_model(&self) -> LatencyModel {
        let c = &self.cfg;
        let spread = match c.jitter_pct {
            0 => "flat (jitter_pct = 0)".to_string(),
            j => format!("± {j}% uniform jitter"),
        };
        LatencyModel {
            text: format!(
                "{} read / {} write + bytes at {} / {} MB/s on each of {} channels, {spread}",
                time_text(c.read_lat_us * NSEC_PER_USEC),
                time_text(c.write_lat_us * NSEC_PER_USEC),
                c.read_mbps,
                c.write_mbps,
                c.channels
            ),
            keys: vec![
                "read_lat_us",
                "write_lat_us",
                "read_mbps",
                "write_mbps",
                "channels",
                "jitter_pct",
            ],
        }
    }
}
