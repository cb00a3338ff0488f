//! I/O schedulers (elevators) between tag allocation and the driver, by their sysfs
//! names (`/sys/block/DEV/queue/scheduler`): `[device] scheduler = "mq-deadline"`,
//! its `queue/iosched/` files as `[device.iosched]` keys.
//!
//! - `none` is no elevator at all (`q->elevator` NULL: the stack issues directly);
//! - `mq_deadline/` — mq-deadline with its three priority levels, batching, expiry,
//!   `writes_starved`, `async_depth` (`block/mq-deadline.c`): the scheduler itself is
//!   self-contained (requests and jiffies in, the next request out);
//!   `mq_deadline/elevator.rs` plugs it into the stack;
//! - `nr_requests.rs` — `queue/nr_requests`, the scheduler's depth (or, without one,
//!   the driver's), as `[device] nr_requests`.
//!
//! [`build`] makes the run's elevator from the device keys and `[kernel]` (HZ, the
//! version preset and `deadline.*` switches); [`describe`] is what `check` prints.

pub mod mq_deadline;
pub mod nr_requests;

use crate::error::KeyError;
use crate::scenario::resolve::KernelSettings;
use crate::stack::Elevator;
use mq_deadline::elevator::MqDeadlineSched;
use mq_deadline::{MqDeadline, behaviour, tunables::Tunables};

/// The schedulers a device may name.
pub const NAMES: &[&str] = &["none", "mq-deadline"];

/// The `deadline.*` switches of `[kernel]`.
fn deadline_behaviour(k: &KernelSettings) -> Result<behaviour::DeadlineBehaviour, KeyError> {
    let ov: Vec<(String, String)> = k
        .overrides
        .iter()
        .filter(|(key, _)| key.starts_with("deadline."))
        .cloned()
        .collect();
    behaviour::behaviour_for(&k.version, &ov)
}

/// The elevator `scheduler` with `nr_requests` tags (`queue/nr_requests` written after
/// `scheduler`: [`nr_requests::store`]), with the `iosched` files written in the
/// table's (sorted) key order; `None` for `none`, which has no `iosched` directory.
pub fn build(
    scheduler: &str,
    iosched: Option<&toml::Table>,
    k: &KernelSettings,
    nr_requests: u32,
) -> Result<Option<Box<dyn Elevator>>, KeyError> {
    // every switch is checked, whether or not the device uses mq-deadline
    let b = deadline_behaviour(k)?;
    if scheduler != "mq-deadline" {
        if iosched.is_some_and(|t| !t.is_empty()) {
            return Err(KeyError::new(
                "device.iosched",
                format!(
                    "scheduler `{scheduler}` has no queue/iosched/ files; set scheduler = \"mq-deadline\""
                ),
            ));
        }
        return Ok(None);
    }
    // blk_mq_update_nr_requests() → dd_depth_updated(): async_depth follows it
    let mut t = Tunables::new(k.hz, nr_requests, b);
    for (name, val) in iosched_writes(iosched)? {
        t.store(&name, &val, b)
            .map_err(|e| KeyError::new(format!("device.{}", e.key), e.msg))?;
    }
    Ok(Some(Box::new(MqDeadlineSched::new(
        MqDeadline::new(t, b),
        nr_requests,
    ))))
}

/// The `[device.iosched]` table as the lines `echo` writes to `queue/iosched/NAME`, in
/// the table's (sorted) key order: an integer as its digits, a string as written.
pub fn iosched_writes(iosched: Option<&toml::Table>) -> Result<Vec<(String, String)>, KeyError> {
    iosched
        .into_iter()
        .flatten()
        .map(|(name, v)| Ok((name.clone(), echo_line(&format!("iosched.{name}"), v)?)))
        .collect()
}

/// A sysfs key's value as the line `echo` writes: an integer as its digits, a string
/// as written; the key (`device.KEY`) is named if it is neither.
pub fn echo_line(key: &str, v: &toml::Value) -> Result<String, KeyError> {
    match v {
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::String(s) => Ok(s.clone()),
        other => Err(KeyError::new(
            format!("device.{key}"),
            format!(
                "`{other}` is not accepted: expected an integer (or a string as echo writes it)"
            ),
        )),
    }
}

/// `check`'s line for the elevator: its name, tags, switches and `iosched` files.
pub fn describe(e: Option<&dyn Elevator>, k: &KernelSettings) -> String {
    match e {
        None => "none".to_string(),
        Some(e) => {
            let b = deadline_behaviour(k).unwrap_or_default();
            let nr = e.nr_requests().map(|n| format!(" nr_requests={n}"));
            format!("{}{} {b}", e.name(), nr.unwrap_or_default())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Dir;

    fn dd(version: &str, nr_requests: u32) -> Box<dyn Elevator> {
        let k = KernelSettings {
            version: version.to_string(),
            ..KernelSettings::default()
        };
        build("mq-deadline", None, &k, nr_requests)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn async_depth_follows_nr_requests_as_dd_depth_updated() {
        // since the tag-reservation fix: all of nr_requests, min_shallow_depth 1
        let e = dd("6.12", 64);
        assert_eq!(e.nr_requests(), Some(64));
        assert_eq!(e.limit_depth(Dir::Write), Some(64));
        assert_eq!(e.min_shallow_depth(), Some(1));
        // before it: 3/4 of nr_requests, which sbitmap's wake-up batch also follows
        let e = dd("6.6", 64);
        assert_eq!(e.limit_depth(Dir::Write), Some(48));
        assert_eq!(e.min_shallow_depth(), Some(48));
        assert_eq!(dd("6.6", 4).limit_depth(Dir::Write), Some(3));
        // reads are never limited
        assert_eq!(e.limit_depth(Dir::Read), None);
    }
}
