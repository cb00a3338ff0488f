//! mq-deadline's `queue/iosched/` files: stored in the kernel's units (jiffies for the
//! expiry times), written and shown as `STORE_FUNCTION`/`SHOW_INT` do.
//!
//! A write is `kstrtoint(page, 0)` (decimal, `0x` hex, leading-`0` octal, optional
//! sign, one trailing newline; EINVAL for anything else, ERANGE past `int`), then
//! **clamped** to the file's range — the kernel never refuses a number in range of
//! `int` — and the `*_expire` values go through `msecs_to_jiffies()`. Reading shows
//! `jiffies_to_msecs()` of them, so a write of 1 ms on HZ=250 reads back 4.

use crate::blkcg::KernelError;
use crate::blkcg::kstrto::kstrtoint;
use crate::error::KeyError;

use super::behaviour::{AsyncDepth, DeadlineBehaviour, PrioMode};

/// The files, by their sysfs names (`deadline_attrs[]` order).
pub const NAMES: &[&str] = &[
    "read_expire",
    "write_expire",
    "writes_starved",
    "front_merges",
    "async_depth",
    "fifo_batch",
    "prio_aging_expire",
];

/// `struct deadline_data`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunables {
    /// CONFIG_HZ the jiffies values are counted in.
    pub hz: u32,
    /// `fifo_expire[DD_READ]`, `fifo_expire[DD_WRITE]`, in jiffies.
    pub fifo_expire: [u32; 2],
    pub writes_starved: i32,
    pub front_merges: i32,
    pub fifo_batch: i32,
    /// Tags writes may hold; `None` before 5.14 (no `dd_limit_depth()`).
    pub async_depth: Option<u32>,
    /// jiffies.
    pub prio_aging_expire: u32,
}

/// `async_depth` as `dd_depth_updated()` sets it on a queue of `nr_requests`.
pub fn default_async_depth(a: AsyncDepth, nr_requests: u32) -> Option<u32> {
    match a {
        AsyncDepth::None => None,
        AsyncDepth::ThreeQuarters => Some((3 * nr_requests / 4).max(1)),
        AsyncDepth::NrRequests => Some(nr_requests),
    }
}

impl Tunables {
    /// `dd_init_sched()` + `dd_depth_updated()` on a queue of `nr_requests`.
    pub fn new(hz: u32, nr_requests: u32, b: DeadlineBehaviour) -> Self {
        Tunables {
            hz,
            fifo_expire: [hz / 2, 5 * hz],
            writes_starved: 2,
            front_merges: 1,
            fifo_batch: 16,
            async_depth: default_async_depth(b.async_depth, nr_requests),
            prio_aging_expire: 10 * hz,
        }
    }

    /// `echo VALUE > queue/iosched/NAME`, as the key `iosched.NAME`: a file the kernel
    /// of behaviour `b` does not have (`async_depth` before 5.14, `prio_aging_expire`
    /// before 5.16) is named with the files it has; a value `kstrtoint()` refuses is
    /// the kernel's write error (EINVAL, ERANGE).
    pub fn store(&mut self, name: &str, value: &str, b: DeadlineBehaviour) -> Result<(), KeyError> {
        let key = format!("iosched.{name}");
        if self.show(name, b).is_none() {
            return Err(KeyError::new(
                key,
                format!(
                    "this kernel's mq-deadline has no such file; it has: {}",
                    self.names(b).join(", ")
                ),
            ));
        }
        let v = kstrtoint(value).map_err(|errno| {
            let why = format!(
                "`{}`: an integer (decimal, 0x hex or 0 octal) in int range",
                value.trim_end()
            );
            KeyError::new(key.as_str(), KernelError::new(errno, why).to_string())
        })?;
        let ms = |v: i32| msecs_to_jiffies(v.max(0) as u32, self.hz);
        match name {
            "read_expire" => self.fifo_expire[0] = ms(v),
            "write_expire" => self.fifo_expire[1] = ms(v),
            "prio_aging_expire" => self.prio_aging_expire = ms(v),
            "writes_starved" => self.writes_starved = v,
            "front_merges" => self.front_merges = v.clamp(0, 1),
            "async_depth" => self.async_depth = Some(v.max(1) as u32),
            _ => self.fifo_batch = v.max(0),
        }
        Ok(())
    }

    /// `cat queue/iosched/NAME`, without the newline; `None` for a file this kernel
    /// does not have.
    pub fn show(&self, name: &str, b: DeadlineBehaviour) -> Option<String> {
        let ms = |j: u32| jiffies_to_msecs(j, self.hz).to_string();
        Some(match name {
            "read_expire" => ms(self.fifo_expire[0]),
            "write_expire" => ms(self.fifo_expire[1]),
            "prio_aging_expire" if b.prio == PrioMode::InFlightAging => ms(self.prio_aging_expire),
            "writes_starved" => self.writes_starved.to_string(),
            "front_merges" => self.front_merges.to_string(),
            "async_depth" => self.async_depth?.to_string(),
            "fifo_batch" => self.fifo_batch.to_string(),
            _ => return None,
        })
    }

    /// The files of this kernel's mq-deadline.
    pub fn names(&self, b: DeadlineBehaviour) -> Vec<&'static str> {
        NAMES
            .iter()
            .copied()
            .filter(|n| self.show(n, b).is_some())
            .collect()
    }
}

/// `msecs_to_jiffies()` for an in-range value: rounds up to whole jiffies.
pub fn msecs_to_jiffies(ms: u32, hz: u32) -> u32 {
    (u64::from(ms) * u64::from(hz)).div_ceil(1000) as u32
}

/// `jiffies_to_msecs()`: exact when HZ divides 1000, else rounded up (HZ=300).
pub fn jiffies_to_msecs(j: u32, hz: u32) -> u32 {
    (u64::from(j) * 1000).div_ceil(u64::from(hz)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn newest() -> DeadlineBehaviour {
        DeadlineBehaviour::default()
    }

    #[test]
    fn defaults_read_back_in_ms() {
        let t = Tunables::new(250, 64, newest());
        let shown: Vec<String> = NAMES.iter().map(|n| t.show(n, newest()).unwrap()).collect();
        assert_eq!(shown, ["500", "5000", "2", "1", "64", "16", "10000"]);
    }

    #[test]
    fn store_clamps_and_rounds_to_jiffies() {
        let b = newest();
        let mut t = Tunables::new(250, 64, b);
        t.store("read_expire", "1\n", b).unwrap();
        assert_eq!(t.fifo_expire[0], 1);
        assert_eq!(
            t.show("read_expire", b).unwrap(),
            "4",
            "1 ms is one 4 ms jiffy"
        );
        t.store("write_expire", "-5", b).unwrap();
        assert_eq!(t.fifo_expire[1], 0, "clamped at 0");
        t.store("front_merges", "7", b).unwrap();
        assert_eq!(t.front_merges, 1);
        t.store("async_depth", "0", b).unwrap();
        assert_eq!(t.async_depth, Some(1), "async_depth is at least 1");
        t.store("writes_starved", "-3", b).unwrap();
        assert_eq!(t.writes_starved, -3, "INT_MIN..INT_MAX");
        t.store("fifo_batch", "0x10", b).unwrap();
        assert_eq!(t.fifo_batch, 16);
        t.store("fifo_batch", "010", b).unwrap();
        assert_eq!(t.fifo_batch, 8, "leading 0 is octal");
    }

    #[test]
    fn store_errors_are_the_kernels() {
        let b = newest();
        let mut t = Tunables::new(1000, 64, b);
        let errno = |t: &mut Tunables, n: &str, v: &str| t.store(n, v, b).unwrap_err().msg;
        assert!(errno(&mut t, "fifo_batch", "16 ").contains("(EINVAL)"));
        assert!(errno(&mut t, "fifo_batch", "08").contains("(EINVAL)"));
        assert!(errno(&mut t, "fifo_batch", "").contains("(EINVAL)"));
        assert!(errno(&mut t, "fifo_batch", "2147483648").contains("(ERANGE)"));
        assert!(errno(&mut t, "writes_starved", "-2147483649").contains("(ERANGE)"));
        assert!(errno(&mut t, "quantum", "1").contains("it has: read_expire"));
        t.store("writes_starved", "-2147483648", b).unwrap();
        assert_eq!(t.writes_starved, i32::MIN);
        // a 5.13 kernel has neither async_depth nor prio_aging_expire
        let old = super::super::behaviour::behaviour_for("5.13", &[]).unwrap();
        let mut t = Tunables::new(1000, 64, old);
        let e = t.store("async_depth", "8", old).unwrap_err();
        assert_eq!(e.key, "iosched.async_depth");
        assert!(!e.msg.contains("async_depth"), "{e}");
        assert_eq!(t.names(old).len(), 5);
        assert_eq!(t.show("prio_aging_expire", old), None);
    }

    #[test]
    fn three_quarters_before_the_tag_fix() {
        let b = super::super::behaviour::behaviour_for("6.1", &[]).unwrap();
        assert_eq!(Tunables::new(1000, 64, b).async_depth, Some(48));
        assert_eq!(Tunables::new(1000, 1, b).async_depth, Some(1));
    }

    #[test]
    fn jiffies_conversions_on_hz_300() {
        assert_eq!(msecs_to_jiffies(500, 300), 150);
        assert_eq!(msecs_to_jiffies(1, 300), 1);
        assert_eq!(jiffies_to_msecs(1, 300), 4);
        assert_eq!(jiffies_to_msecs(150, 300), 500);
    }
}
