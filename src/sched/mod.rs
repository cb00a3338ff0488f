//! I/O schedulers (elevators) between tag allocation and the driver, by their sysfs
//! names (`/sys/block/DEV/queue/scheduler`): `[device] scheduler = "mq-deadline"`,
//! its `queue/iosched/` files as `[device.iosched]` keys.
//!
//! - `none` is no elevator at all (`q->elevator` NULL: the stack issues directly);
//! - `bfq/` — BFQ with its cgroup side (`io.bfq.weight`): B-WF2Q+ over the cgroups'
//!   groups and the tasks' queues, budgets, idling, weight raising
//!   (`block/bfq-*.c`); `bfq/elevator.rs` plugs it into the stack;
//! - `mq_deadline/` — mq-deadline with its three priority levels, batching, expiry,
//!   `writes_starved`, `async_depth` (`block/mq-deadline.c`): the scheduler itself is
//!   self-contained (requests and jiffies in, the next request out);
//!   `mq_deadline/elevator.rs` plugs it into the stack;
//! - `nr_requests.rs` — `queue/nr_requests`, the scheduler's depth (or, without one,
//!   the driver's), as `[device] nr_requests`.
//!
//! [`build`] makes the run's elevator from the device keys and `[kernel]` (HZ, the
//! version preset and each elevator's switches) through its registry entry
//! (`crate::stack::registry::ELEVATORS`), and says what `check` prints of it.

pub mod bfq;
pub mod mq_deadline;
pub mod nr_requests;

use crate::error::KeyError;
use crate::scenario::resolve::KernelSettings;
use crate::stack::Elevator;
use crate::stack::registry::{ELEVATORS, ElevatorSetup};

/// The elevator `scheduler` with `nr_requests` tags (`queue/nr_requests` written after
/// `scheduler`: [`nr_requests::store`]), with the `iosched` files written in the
/// table's (sorted) key order — `None` for `none`, which has no `iosched` directory —
/// and `check`'s line for it: its name, tags, switches. Every registered elevator's
/// switches are checked, whichever the device uses.
pub fn build(
    scheduler: &str,
    iosched: Option<&toml::Table>,
    k: &KernelSettings,
    rotational: bool,
    nr_requests: u32,
    nr_requests_before: u32,
) -> Result<(Option<Box<dyn Elevator>>, String), KeyError> {
    let setups = ELEVATORS
        .iter()
        .map(|e| (e.configure)(k))
        .collect::<Result<Vec<Box<dyn ElevatorSetup>>, _>>()?;
    let Some(i) = ELEVATORS.iter().position(|e| e.name == scheduler) else {
        if iosched.is_some_and(|t| !t.is_empty()) {
            let with: Vec<String> = ELEVATORS
                .iter()
                .map(|e| format!("\"{}\"", e.name))
                .collect();
            return Err(KeyError::new(
                "device.iosched",
                format!(
                    "scheduler `{scheduler}` has no queue/iosched/ files; set scheduler = {}",
                    with.join(" or ")
                ),
            ));
        }
        return Ok((None, "none".to_string()));
    };
    let e = setups[i].build(
        rotational,
        nr_requests,
        nr_requests_before,
        &iosched_writes(iosched)?,
    )?;
    let nr = e.nr_requests().map(|n| format!(" nr_requests={n}"));
    let shown = format!(
        "{}{} {}",
        e.name(),
        nr.unwrap_or_default(),
        setups[i].describe()
    );
    Ok((Some(e), shown))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Dir;
    use crate::sim::sbitmap::Shallow;
    use crate::stack::TagAlloc;

    fn dd(version: &str, nr_requests: u32, before: u32) -> Box<dyn Elevator> {
        let k = KernelSettings {
            version: version.to_string(),
            ..KernelSettings::default()
        };
        build("mq-deadline", None, &k, false, nr_requests, before)
            .unwrap()
            .0
            .unwrap()
    }

    /// A request of the root cgroup's first job in direction `dir`.
    fn alloc(dir: Dir) -> TagAlloc {
        TagAlloc {
            dir,
            sync: dir == Dir::Read,
            task: 0,
            cgroup: 0,
        }
    }

    #[test]
    fn async_depth_follows_nr_requests_as_dd_depth_updated() {
        // since the tag-reservation fix: all of nr_requests, min_shallow_depth 1
        let e = dd("6.12", 64, 64);
        assert_eq!(e.nr_requests(), Some(64));
        assert_eq!(
            e.limit_depth(&alloc(Dir::Write)),
            Some(Shallow::PerWordOfQueue(64))
        );
        assert_eq!(e.min_shallow_depth(), Some(1));
        // before it: 3/4 of nr_requests, which sbitmap's wake-up batch also follows
        let e = dd("6.6", 64, 64);
        assert_eq!(
            e.limit_depth(&alloc(Dir::Write)),
            Some(Shallow::PerWord(48))
        );
        assert_eq!(e.min_shallow_depth(), Some(48));
        assert_eq!(
            dd("6.6", 4, 4).limit_depth(&alloc(Dir::Write)),
            Some(Shallow::PerWord(3))
        );
        // reads are never limited
        assert_eq!(e.limit_depth(&alloc(Dir::Read)), None);
    }

    #[test]
    fn a_write_of_nr_requests_leaves_async_depth_at_the_old_one_until_6_18() {
        // blk_mq_update_nr_requests() calls dd_depth_updated() before it stores the
        // new q->nr_requests: 32 written over the default 2 (one driver tag)
        let e = dd("6.12.117", 32, 2);
        assert_eq!(e.nr_requests(), Some(32));
        assert_eq!(e.limit_depth(&alloc(Dir::Write)), Some(Shallow::Map(2)));
        let e = dd("6.6", 32, 2);
        assert_eq!(e.limit_depth(&alloc(Dir::Write)), Some(Shallow::PerWord(1)));
        assert_eq!(e.min_shallow_depth(), Some(1));
        // 7d337eef4aff: after it
        assert_eq!(
            dd("6.18", 32, 2).limit_depth(&alloc(Dir::Write)),
            Some(Shallow::Map(32))
        );
    }
}
