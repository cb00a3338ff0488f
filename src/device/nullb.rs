//! null_blk (drivers/block/null_blk/main.c), as configured through configfs.
//!
//! - `irqmode` 0 (none) and 1 (softirq) complete a request right after it is queued;
//!   2 (timer) completes it `completion_nsec` after it is queued, each request
//!   independently (`null_cmd_end_timer()`).
//! - `mbps` (MiB/s) is enforced in ticks of 20 ms (`TICKS_PER_SEC = 50`): every tick
//!   *resets* the grant to mbps MiB / 50 (unused grant is lost); each request subtracts
//!   its bytes, and the one that drives the grant below zero is requeued — it keeps its
//!   tag — and the queue stays stopped until the next tick restarts it
//!   (`null_handle_throttled()`, `nullb_bwtimer_fn()`). A capped null_blk therefore
//!   completes I/O in bursts every 20 ms.
//! - Queue limits: `hw_queue_depth` tags (`nr_requests` follows it with scheduler
//!   `none`), `max_sectors` (512-byte sectors; 0 = the block layer's default of 255
//!   sectors rounded down to the block size), `blocksize`, `size` in MB, `rotational`.

use std::collections::VecDeque;

use super::config::{DeviceConfig, Keys};
use super::{BlockDevice, DevRq, QueueLimits};
use crate::error::KeyError;
use crate::sim::{Event, EventQueue, Ns};

/// The bandwidth tick: 1 s / TICKS_PER_SEC.
const TICK_NS: Ns = 20_000_000;

/// Token kinds carried in `Event::Device`.
const TOKEN_TICK: u64 = u64::MAX;

pub struct NullBlk {
    limits: QueueLimits,
    irqmode: u32,
    completion_nsec: Ns,
    /// Bytes per 20 ms tick (0 = no cap).
    grant_per_tick: i64,
    grant: i64,
    /// Requests waiting for the queue to restart (mbps cap).
    stopped: VecDeque<u32>,
    tick_armed: bool,
    /// Sizes of requests held, by tag.
    bytes: Vec<u64>,
}

impl NullBlk {
    pub fn from_config(cfg: &DeviceConfig) -> Result<NullBlk, KeyError> {
        let mut k = Keys::new(cfg, "nullb");
        let (major, minor) = k.dev((252, 0))?;
        let irqmode = k.int("irqmode", 1, 0, 2)? as u32;
        let completion_nsec = k.int("completion_nsec", 10_000, 0, u64::MAX / 4)?;
        let hw_queue_depth = k.int("hw_queue_depth", 64, 1, 65536)? as u32;
        let _submit_queues = k.int("submit_queues", 1, 1, 4096)?;
        let blocksize = k.int("blocksize", 512, 512, 4096)?;
        if !blocksize.is_power_of_two() {
            return Err(k.err("blocksize", "must be a power of two between 512 and 4096"));
        }
        let size_mb = k.int("size", 250 * 1024, 1, 1 << 40)?;
        let _memory_backed = k.int("memory_backed", 0, 0, 1)?;
        let mbps = k.int("mbps", 0, 0, 1 << 30)?;
        let max_sectors = k.int("max_sectors", 0, 0, 1 << 22)?;
        let rotational = k.int("rotational", 0, 0, 1)? == 1;
        // block-queue sysfs names
        let nr_requests = k.int("nr_requests", hw_queue_depth as u64, 1, 65536)? as u32;
        let default_sectors = if max_sectors == 0 {
            255 / (blocksize / 512) * (blocksize / 512)
        } else {
            max_sectors
        };
        let max_sectors_kb =
            k.int("max_sectors_kb", (default_sectors / 2).max(1), 1, 1 << 21)? as u32;
        k.scheduler()?;
        let name = k.name("nullb0")?;
        k.finish()?;
        let grant_per_tick = ((1u64 << 20) / 50 * mbps) as i64;
        Ok(NullBlk {
            limits: QueueLimits {
                major,
                minor,
                name,
                rotational,
                hw_queue_depth,
                nr_requests: nr_requests.min(hw_queue_depth),
                max_sectors_kb,
                logical_block_size: blocksize as u32,
                capacity: size_mb << 20,
            },
            irqmode,
            completion_nsec,
            grant_per_tick,
            grant: grant_per_tick,
            stopped: VecDeque::new(),
            tick_armed: false,
            bytes: Vec::new(),
        })
    }

    fn complete_after(&self) -> Ns {
        if self.irqmode == 2 {
            self.completion_nsec
        } else {
            0
        }
    }

    fn arm_tick(&mut self, now: Ns, q: &mut EventQueue) {
        if !self.tick_armed {
            self.tick_armed = true;
            let next = (now / TICK_NS + 1) * TICK_NS;
            q.push(next, Event::Device(TOKEN_TICK));
        }
    }

    /// Hand `tag` to the "hardware": mirrors null_queue_rq() + null_handle_throttled().
    fn dispatch(&mut self, now: Ns, tag: u32, q: &mut EventQueue) -> bool {
        if self.grant_per_tick > 0 {
            let b = self.bytes[tag as usize] as i64;
            self.grant -= b;
            if self.grant < 0 {
                // requeued; the queue is stopped until the timer restarts it
                return false;
            }
        }
        q.push(now + self.complete_after(), Event::Device(tag as u64));
        true
    }
}

impl BlockDevice for NullBlk {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    fn submit(&mut self, now: Ns, rq: DevRq, q: &mut EventQueue) {
        let t = rq.tag as usize;
        if self.bytes.len() <= t {
            self.bytes.resize(t + 1, 0);
        }
        self.bytes[t] = rq.bytes;
        if self.grant_per_tick > 0 {
            self.arm_tick(now, q);
        }
        if !self.stopped.is_empty() || !self.dispatch(now, rq.tag, q) {
            self.stopped.push_back(rq.tag);
        }
    }

    fn on_event(&mut self, now: Ns, token: u64, q: &mut EventQueue, done: &mut Vec<u32>) {
        if token != TOKEN_TICK {
            done.push(token as u32);
            return;
        }
        // nullb_bwtimer_fn(): reset the grant, restart the queue
        self.tick_armed = false;
        let active = self.grant < self.grant_per_tick;
        self.grant = self.grant_per_tick;
        while let Some(&tag) = self.stopped.front() {
            if !self.dispatch(now, tag, q) {
                break;
            }
            self.stopped.pop_front();
        }
        // the timer keeps running while the device is in use
        if !self.stopped.is_empty() || active {
            self.arm_tick(now, q);
        }
    }

    fn model(&self) -> &'static str {
        "nullb"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(t: &str) -> NullBlk {
        let table: toml::Table = t.parse().unwrap();
        NullBlk::from_config(&DeviceConfig {
            table: &table,
            seed: 1,
        })
        .unwrap()
    }

    fn rq(tag: u32, bytes: u64) -> DevRq {
        DevRq {
            tag,
            dir: crate::sim::Dir::Read,
            sector: 0,
            bytes,
        }
    }

    #[test]
    fn timer_mode_completes_after_completion_nsec() {
        let mut d = dev("irqmode = 2\ncompletion_nsec = 100000");
        let mut q = EventQueue::new();
        d.submit(0, rq(3, 4096), &mut q);
        let (t, ev) = q.pop().unwrap();
        assert_eq!(t, 100_000);
        let Event::Device(tok) = ev else { panic!() };
        let mut done = vec![];
        d.on_event(t, tok, &mut q, &mut done);
        assert_eq!(done, vec![3]);
    }

    #[test]
    fn mbps_grants_reset_every_20ms() {
        // 4 MiB/s: 83,886 bytes per tick = 20 requests of 4 KiB (the 21st goes negative)
        let mut d = dev("mbps = 4\nhw_queue_depth = 256");
        let mut q = EventQueue::new();
        for tag in 0..100 {
            d.submit(0, rq(tag, 4096), &mut q);
        }
        let mut per_tick = std::collections::BTreeMap::new();
        let mut done = vec![];
        while let Some((t, Event::Device(tok))) = q.pop() {
            done.clear();
            d.on_event(t, tok, &mut q, &mut done);
            *per_tick.entry(t / TICK_NS).or_insert(0) += done.len();
            if t > 200_000_000 {
                break;
            }
        }
        assert_eq!(per_tick.get(&0), Some(&20));
        assert_eq!(per_tick.get(&1), Some(&20));
        assert_eq!(per_tick.values().sum::<usize>(), 100);
    }

    #[test]
    fn defaults_and_bad_keys() {
        let d = dev("");
        assert_eq!(d.limits().max_sectors_kb, 127);
        assert_eq!(d.limits().nr_requests, 64);
        let table: toml::Table = "irqmod = 2".parse().unwrap();
        let e = NullBlk::from_config(&DeviceConfig {
            table: &table,
            seed: 1,
        })
        .err()
        .unwrap();
        assert_eq!(e.key, "device.irqmod");
        assert!(e.msg.contains("irqmode"), "{}", e.msg);
        let table: toml::Table = "irqmode = 5".parse().unwrap();
        assert!(
            NullBlk::from_config(&DeviceConfig {
                table: &table,
                seed: 1
            })
            .is_err()
        );
    }
}
