//! Device configuration: the scenario's `[device]` table → a boxed [`BlockDevice`].
//!
//! Design
//! ------
//! [`Keys`] wraps the TOML table, hands out typed values by key (recording which keys
//! were read) and finally rejects any key nobody read, so a typo is an error naming the
//! key and listing what is accepted. A key that is valid but does nothing in the
//! configured mode (null_blk's `completion_nsec` without `irqmode=2`) is a warning,
//! collected by [`Keys::warn`]. Each model's `Config::from_keys` reads its own keys
//! with real defaults; [`resolve`] dispatches on `model` and also returns the resolved
//! `key=value` list for `check` and the warnings. Nothing here panics on input.

use super::{BlockDevice, cloud, dispatch, flash, hdd, nullb, ssd};
use crate::error::KeyError;
use crate::sim::NSEC_PER_SEC;
use std::collections::BTreeSet;

/// Typed, tracked access to a `[device]` table.
pub struct Keys<'a> {
    table: &'a toml::Table,
    used: BTreeSet<&'static str>,
    /// Resolved `key=value` pairs, in the order read.
    pub resolved: Vec<(String, String)>,
    /// Keys the scenario set that have no effect as configured: the key and why.
    pub warnings: Vec<KeyError>,
}

fn full(key: &str) -> String {
    format!("device.{key}")
}

/// The size of `gendisk.disk_name` with its NUL (include/linux/blkdev.h).
const DISK_NAME_LEN: usize = 32;

/// Whether `name` can name the disk as the guest makes it: null_blk names the disk
/// after its configfs directory (`null_add_dev()`: snprintf into `disk_name`, so a
/// longer name is cut to DISK_NAME_LEN - 1 bytes and /dev/NAME is another name), and
/// configfs `mkdir` refuses `.`, `..` and `/`; whitespace and control characters would
/// split the guest's shell words and /proc/partitions' columns.
fn disk_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() < DISK_NAME_LEN
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c.is_whitespace() || c.is_control())
}

impl<'a> Keys<'a> {
    pub fn new(table: &'a toml::Table) -> Self {
        Keys {
            table,
            used: BTreeSet::new(),
            resolved: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Whether the scenario set `key` (explicit keys override presets).
    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// A non-negative integer in `[min, max]`, or `default` when absent.
    pub fn u64(
        &mut self,
        key: &'static str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, KeyError> {
        self.used.insert(key);
        let v = match self.table.get(key) {
            None => default,
            Some(toml::Value::Integer(i)) if *i >= min as i64 && (*i as u64) <= max => *i as u64,
            Some(v) => {
                return Err(KeyError::new(
                    full(key),
                    format!("`{v}` is not accepted: expected an integer in [{min}, {max}]"),
                ));
            }
        };
        self.resolved.push((key.to_string(), v.to_string()));
        Ok(v)
    }

    /// A string among `accepted`, or `default` when absent.
    pub fn choice(
        &mut self,
        key: &'static str,
        default: &'static str,
        accepted: &[&'static str],
    ) -> Result<&'static str, KeyError> {
        self.used.insert(key);
        let v = match self.table.get(key) {
            None => default,
            Some(toml::Value::String(s)) => match accepted.iter().find(|a| **a == s.as_str()) {
                Some(a) => a,
                None => {
                    return Err(KeyError::new(
                        full(key),
                        format!(
                            "`{s}` is not accepted: expected one of {}",
                            accepted.join(", ")
                        ),
                    ));
                }
            },
            Some(v) => {
                return Err(KeyError::new(
                    full(key),
                    format!(
                        "`{v}` is not accepted: expected a string, one of {}",
                        accepted.join(", ")
                    ),
                ));
            }
        };
        self.resolved.push((key.to_string(), v.to_string()));
        Ok(v)
    }

    /// Lines written to an attribute one after another: a string or an array of
    /// strings (none when absent).
    pub fn lines(&mut self, key: &'static str) -> Result<Vec<String>, KeyError> {
        self.used.insert(key);
        let bad = |v: &toml::Value| {
            KeyError::new(
                full(key),
                format!(
                    "`{v}` is not accepted: expected a string (one line) or an array of strings"
                ),
            )
        };
        let v: Vec<String> = match self.table.get(key) {
            None => Vec::new(),
            Some(toml::Value::String(s)) => vec![s.clone()],
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(|| bad(x)))
                .collect::<Result<_, _>>()?,
            Some(v) => return Err(bad(v)),
        };
        self.resolved
            .extend(v.iter().map(|l| (key.to_string(), l.clone())));
        Ok(v)
    }

    /// A sub-table (a configfs group, e.g. null_blk's `timeout_inject/`), if given.
    pub fn table(&mut self, key: &'static str) -> Result<Option<&'a toml::Table>, KeyError> {
        self.used.insert(key);
        match self.table.get(key) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(t)),
            Some(v) => Err(KeyError::new(
                full(key),
                format!("`{v}` is not accepted: expected a table ([device.{key}])"),
            )),
        }
    }

    /// `dev = "MAJ:MIN"`, or the model's default.
    pub fn dev(&mut self, default: (u32, u32)) -> Result<(u32, u32), KeyError> {
        self.used.insert("dev");
        let v = match self.table.get("dev") {
            None => default,
            Some(toml::Value::String(s)) => {
                let p = s
                    .split_once(':')
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                let (maj, min): (u32, u32) = p.ok_or_else(|| {
                    KeyError::new(
                        "device.dev",
                        format!("`{s}` is not accepted: expected \"MAJ:MIN\" with decimal numbers"),
                    )
                })?;
                // a disk's dev_t: register_blkdev(0, ...) asks for a dynamic major, so
                // no block device has major 0 (0 is the anonymous devices' major,
                // get_anon_bdev()); MKDEV() keeps 12 bits of major, 20 of minor
                // (include/linux/kdev_t.h, MINORBITS)
                if maj == 0 || maj >= 1 << 12 || min >= 1 << 20 {
                    return Err(KeyError::new(
                        "device.dev",
                        format!(
                            "`{s}` is not accepted: a block device's major is 1 to 4095 and \
                             its minor 0 to 1048575 (MKDEV(); major 0 is no block device's)"
                        ),
                    ));
                }
                (maj, min)
            }
            Some(v) => {
                return Err(KeyError::new(
                    "device.dev",
                    format!("`{v}` is not accepted: expected a string \"MAJ:MIN\""),
                ));
            }
        };
        self.resolved
            .push(("dev".into(), format!("{}:{}", v.0, v.1)));
        Ok(v)
    }

    /// `name`, or the model's default.
    pub fn name(&mut self, default: &str) -> Result<String, KeyError> {
        self.used.insert("name");
        let v = match self.table.get("name") {
            None => default.to_string(),
            Some(toml::Value::String(s)) if disk_name_ok(s) => s.clone(),
            Some(v) => {
                return Err(KeyError::new(
                    "device.name",
                    format!(
                        "`{}` is not accepted: expected a disk name of 1 to {} bytes without \
                         '/', whitespace or control characters, not `.` or `..`",
                        match v {
                            toml::Value::String(s) => s.escape_debug().to_string(),
                            v => v.to_string(),
                        },
                        DISK_NAME_LEN - 1
                    ),
                ));
            }
        };
        self.resolved.push(("name".into(), v.clone()));
        Ok(v)
    }

    /// `nr_requests`: `queue/nr_requests` as the kernel takes a write of it on a queue
    /// of `hw_queue_depth` driver tags, with or without an elevator
    /// (`crate::sched::nr_requests`), or its default after the scheduler is set.
    pub fn nr_requests(&mut self, elevator: bool, hw_queue_depth: u32) -> Result<u32, KeyError> {
        use crate::sched::nr_requests::{default_nr_requests, store};
        self.used.insert("nr_requests");
        let v = match self.table.get("nr_requests") {
            None => default_nr_requests(elevator, hw_queue_depth),
            Some(v) => {
                let line = crate::sched::echo_line("nr_requests", v)?;
                store(&line, elevator, hw_queue_depth)
                    .map_err(|e| KeyError::new("device.nr_requests", e.to_string()))?
            }
        };
        self.resolved.push(("nr_requests".into(), v.to_string()));
        Ok(v)
    }

    /// `wbt_lat_usec`: `queue/wbt_lat_usec` as the kernel takes a write of it
    /// (`crate::wbt::store_lat_usec`), if the scenario writes it.
    pub fn wbt_lat_usec(&mut self) -> Result<(), KeyError> {
        self.used.insert("wbt_lat_usec");
        if let Some(v) = self.table.get("wbt_lat_usec") {
            let line = crate::sched::echo_line("wbt_lat_usec", v)?;
            let v = crate::wbt::store_lat_usec(&line)
                .map_err(|e| KeyError::new("device.wbt_lat_usec", e.to_string()))?;
            self.resolved.push(("wbt_lat_usec".into(), v.to_string()));
        }
        Ok(())
    }

    /// Note that `key`, if the scenario set it, has no effect, and `why`.
    pub fn warn(&mut self, key: &'static str, why: impl Into<String>) {
        if self.has(key) {
            self.warnings.push(KeyError::new(full(key), why));
        }
    }

    /// Reject every key that no reader asked for.
    pub fn finish(self) -> Result<Vec<(String, String)>, KeyError> {
        for k in self.table.keys() {
            if k != "model" && !self.used.contains(k.as_str()) {
                let acc: Vec<&str> = self.used.iter().copied().collect();
                return Err(KeyError::new(
                    full(k),
                    format!(
                        "unknown key for this model; accepted: model, {}",
                        acc.join(", ")
                    ),
                ));
            }
        }
        Ok(self.resolved)
    }
}

/// The device, its resolved configuration (`key=value` pairs, for `check`) and the
/// keys that have no effect as configured (warnings).
pub type Resolved = (Box<dyn BlockDevice>, Vec<(String, String)>, Vec<KeyError>);

/// Every device model, as `[device] model` and `--device MODEL:...` name it (the
/// help of each command that takes a device names them all: tests/cli.rs).
pub const MODELS: [&str; 4] = ["nullb", "ssd", "hdd", "cloud"];

/// Build the device described by `table`, returning its resolved key list and
/// warnings too.
pub fn resolve(table: &toml::Table, seed: u64) -> Result<Resolved, KeyError> {
    let model = match table.get("model") {
        None => "nullb",
        Some(toml::Value::String(s)) => s.as_str(),
        Some(v) => {
            return Err(KeyError::new(
                "device.model",
                format!(
                    "`{v}` is not accepted: expected a string: {}",
                    MODELS.join(", ")
                ),
            ));
        }
    };
    let mut k = Keys::new(table);
    let dev: Box<dyn BlockDevice> = match model {
        "nullb" => Box::new(nullb::NullBlk::new(nullb::Config::from_keys(&mut k)?, seed)),
        "ssd" => {
            // the FTL model when asked for, or when a preset (an FTL drive) is named
            let ftl = if k.has("preset") { "ftl" } else { "simple" };
            match k.choice("mode", ftl, &["simple", "ftl"])? {
                "ftl" => Box::new(flash::Flash::new(flash::Config::from_keys(&mut k)?, seed)),
                _ => Box::new(ssd::Ssd::new(ssd::Config::from_keys(&mut k)?, seed)),
            }
        }
        "hdd" => Box::new(hdd::Hdd::new(hdd::Config::from_keys(&mut k)?, seed)),
        "cloud" => Box::new(cloud::Cloud::new(cloud::Config::from_keys(&mut k)?, seed)),
        m => {
            return Err(KeyError::new(
                "device.model",
                format!("`{m}` is not accepted: expected {}", MODELS.join(", ")),
            ));
        }
    };
    // any model: the driver's completion-to-dispatch cost (dispatch.rs)
    let dispatch_ns = k.u64("dispatch_ns", 0, 0, NSEC_PER_SEC)?;
    let dev = match dispatch_ns {
        0 => dev,
        ns => Box::new(dispatch::Dispatch::new(dev, ns)),
    };
    // elevator_get_default(): mq-deadline on a single-queue disk (the SATA disk), none
    // where blkcg-sim's models stand for multi-queue devices or fixed setups
    let default = if model == "hdd" {
        "mq-deadline"
    } else {
        "none"
    };
    let scheduler = k.choice(
        "scheduler",
        default,
        &crate::stack::registry::scheduler_names(),
    )?;
    // queue/nr_requests, written after the scheduler (which resets it)
    k.nr_requests(scheduler != "none", dev.limits().hw_queue_depth)?;
    // read by crate::sched::build
    k.table("iosched")?;
    // queue/nomerges (queue_nomerges_store(): any unsigned int; read by the pipeline,
    // crate::sim::merge::NoMerges)
    k.u64("nomerges", 0, 0, u64::from(u32::MAX))?;
    // queue/wbt_lat_usec (read by crate::wbt)
    k.wbt_lat_usec()?;
    // queue/read_ahead_kb (queue_ra_store(): any unsigned long; read by the page
    // cache, crate::writeback::readahead): the default of a queue without an optimal
    // I/O size, VM_READAHEAD_PAGES
    k.u64("read_ahead_kb", 128, 0, u64::from(u32::MAX))?;
    let mut res = vec![("model".to_string(), model.to_string())];
    let warnings = std::mem::take(&mut k.warnings);
    res.extend(k.finish()?);
    Ok((dev, res, warnings))
}

/// Build the device described by `table`.
pub fn build(table: &toml::Table, seed: u64) -> Result<Box<dyn BlockDevice>, KeyError> {
    resolve(table, seed).map(|r| r.0)
}

/// `key=value` lines of a resolved configuration, for `check`.
pub fn describe(resolved: &[(String, String)]) -> String {
    resolved.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}
