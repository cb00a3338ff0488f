//! The one list of what the stack can hold: every blk-cgroup policy, rq-qos entry and
//! elevator, each with everything it is. Nothing else in the simulator lists them.
//!
//! Design
//! ------
//! The kernel registers its pieces in three ways, and so do we:
//! - a **blk-cgroup policy** (`struct blkcg_policy`, `blkcg_policy_register()`): its
//!   cgroup files (`struct cftype`: name, `CFTYPE_ONLY_ON_ROOT` / `CFTYPE_NOT_ON_ROOT`),
//!   made per queue at the first write of one of them;
//! - an **rq-qos entry** (`struct rq_qos_ops`, `rq_qos_add()`): per queue, either with
//!   a cgroup side (blk-iocost, blk-iolatency: a [`PolicyDef`] whose hooks are
//!   [`Hooks::RqQos`]) or made with the queue, no cgroup file written
//!   ([`Creation::WithQueue`], as wbt is by `wbt_enable_default()`);
//! - an **elevator** (`struct elevator_type`, `elv_register()`): a name in
//!   `queue/scheduler`, its `queue/iosched/` attributes, optionally a cgroup side.
//!
//! A [`PolicyDef`] or [`ElevatorDef`] carries all of it: its files with where they may
//! be written and the `key=value` tokens their lines take, its `[kernel]` switch prefix,
//! the kernel config options a real kernel needs for it (`validate`), its timeline
//! streams ([`StreamDef`]: CSV, picture), its other output files, and how to configure
//! and build it. Scenario resolution, `check`, `sweep`'s key grammar, validate's config
//! checks, the recorder, the output folder, report.html, the library API and Python
//! read these lists.
//!
//! `registry!` below is the list itself: one line per policy or elevator. It also
//! makes [`RqQosEntry`], the enum the rq-qos chain holds its entries in (one variant
//! per rq-qos entry, so the per-I/O hooks are direct calls the compiler can inline:
//! behind `dyn` the chain cost blk-iocost runs 7–9% more instructions).
//!
//! A policy comes in three steps, each owned by the policy's own folder:
//! - [`PolicyDef::configure`] reads a variant's `[kernel]` switches (and `[state]`)
//!   into its configuration, a [`PolicySetup`]. Every policy is configured for every
//!   variant, used or not, so a bad switch is refused even where nothing uses it.
//! - [`PolicyDef::refuses`] says whether the variant's kernel has the policy's files
//!   at all (blk-iocost arrived in 5.4); a write to one then fails with ENOENT.
//! - [`PolicySetup::build`] makes the policy for a run where [`PolicyDef::created`]
//!   says, as [`Hooks`] for the stack. A run builds it twice: on scratch to check every
//!   write of the run in time order, and for the run itself.
//!
//! `check` prints each policy's [`PolicySetup::describe`] under its
//! [`PolicySetup::label`].

use crate::blkcg::{CgroupTree, DeviceTable, KernelError};
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::kernel_version::KernelVersion;
use crate::scenario::resolve::{KernelSettings, Resolved};

use super::stream::StreamDef;
use super::{Elevator, Hooks, PolicyId, RqQos};

/// Where a cgroup file exists (`struct cftype`'s flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `CFTYPE_ONLY_ON_ROOT` (`io.cost.qos`).
    OnlyOnRoot,
    /// `CFTYPE_NOT_ON_ROOT` (`io.max`).
    NotOnRoot,
    /// On every cgroup (`io.prio.class`).
    Anywhere,
}

/// One cgroup interface file (`struct cftype`).
#[derive(Debug, PartialEq, Eq)]
pub struct CgroupFile {
    /// As cgroupfs names it (`io.max`).
    pub name: &'static str,
    pub place: Place,
    /// The `key=value` tokens its line takes after `MAJ:MIN` (what `sweep` may change
    /// one at a time: `io.max:riops`); empty for a line written whole.
    pub tokens: &'static [&'static str],
    /// A line the kernel accepts, with `MAJ:MIN` for the disk's numbers: what errors
    /// and the documentation show, and what the registry's tests write.
    pub example: &'static str,
}

impl CgroupFile {
    /// Whether the root cgroup has it.
    pub fn on_root(&self) -> bool {
        self.place != Place::NotOnRoot
    }

    /// Whether a child cgroup has it.
    pub fn on_children(&self) -> bool {
        self.place != Place::OnlyOnRoot
    }
}

/// A kernel config option a real kernel needs for a policy or elevator, in the
/// versions that have it (`from` inclusive, `until` exclusive; `(MAJOR, MINOR)`).
#[derive(Debug, Clone, Copy)]
pub struct Kconfig {
    /// Without `CONFIG_` (`BLK_DEV_THROTTLING`).
    pub name: &'static str,
    pub from: (u32, u32),
    pub until: Option<(u32, u32)>,
    /// The policy needs it (validate refuses a kernel without it); else it is only
    /// built into the guest (`kernel build`) for the behaviours a switch follows.
    pub required: bool,
}

impl Kconfig {
    /// An option every version of the policy needs.
    pub const fn needed(name: &'static str) -> Kconfig {
        Kconfig {
            name,
            from: (0, 0),
            until: None,
            required: true,
        }
    }

    /// Whether a source of version `v` has it.
    pub fn in_version(&self, v: (u32, u32)) -> bool {
        v >= self.from && self.until.is_none_or(|u| v < u)
    }
}

/// When a run makes a policy.
#[derive(Debug, Clone, Copy)]
pub enum Creation {
    /// At the first write (in time order) to one of its files, as the kernel creates a
    /// blk-cgroup policy's per-queue state (`blkcg_activate_policy()`).
    AtFirstWrite,
    /// With the queue, before any write, where the function says so for the
    /// variant, its queue, and whether some job writes through the page cache
    /// (`wbt_enable_default()`).
    WithQueue(fn(&Resolved, &QueueLimits, bool) -> bool),
}

/// What I/O a policy acts on: what a scenario needs for it to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActsOn {
    /// Any bio of a cgroup it is set up for.
    AnyIo,
    /// Buffered writes' writeback only (wbt: an O_DIRECT write is never throttled).
    BufferedWrites,
}

impl ActsOn {
    /// As the library and Python say it.
    pub fn name(self) -> &'static str {
        match self {
            ActsOn::AnyIo => "any",
            ActsOn::BufferedWrites => "buffered-writes",
        }
    }
}

/// Where a policy sits on the bio's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// In `submit_bio()`, before the split ([`Hooks::Bio`]).
    Bio,
    /// On the rq-qos chain ([`Hooks::RqQos`]).
    RqQos,
}

/// One policy the simulator has (the kernel's `struct blkcg_policy`, or an rq-qos
/// entry's registration).
pub struct PolicyDef {
    /// As the kernel calls it (`blk-throttle`).
    pub name: &'static str,
    /// Where it sits on the bio's path; an rq-qos one also has its [`RqQosEntry`]
    /// variant (its registry line).
    pub hooks: HookKind,
    /// Its id: events, bio-level order (see [`PolicyId`]).
    pub id: PolicyId,
    /// Its cgroup files; a variant that writes one of them gets the policy.
    pub files: &'static [CgroupFile],
    /// The prefix of its `[kernel]` behaviour switches (`throttle.`), if it has any.
    pub switches: Option<&'static str>,
    /// The kernel config options it needs.
    pub kconfig: &'static [Kconfig],
    /// Its timelines.
    pub streams: &'static [&'static StreamDef],
    /// Other files it writes into a run's folder ([`super::BlkcgPolicy::reports`]).
    pub reports: &'static [&'static str],
    /// Why kernel `v` has none of its files (the policy arrived later), if it has none.
    pub refuses: fn(v: &KernelVersion) -> Option<&'static str>,
    /// Its configuration for variant `r` (behaviour switches from `[kernel]`, `[state]`).
    pub configure: fn(r: &Resolved) -> Result<Box<dyn PolicySetup>, KeyError>,
    /// When a run makes it.
    pub created: Creation,
    /// What I/O it acts on.
    pub acts_on: ActsOn,
}

/// A policy configured for one variant, ready to build.
pub trait PolicySetup: Send {
    /// Its name in `check`'s listing (`throttle`, `iocost`).
    fn label(&self) -> &'static str;
    /// Its configuration as `check` prints it (the switches, in scenario syntax).
    fn describe(&self) -> String;
    /// The policy for a run on `limits` with cgroups `tree`; `trace` collects its event
    /// log (`trace.txt`).
    fn build(&self, tree: &CgroupTree, limits: &QueueLimits, trace: bool) -> Hooks;
}

/// One elevator the simulator has (`struct elevator_type`).
pub struct ElevatorDef {
    /// As `queue/scheduler` names it (`mq-deadline`).
    pub name: &'static str,
    /// Its id: the events it pushes are `Event::Policy(id, token)`.
    pub id: PolicyId,
    /// Its `queue/iosched/` attributes (`[device.iosched]` keys).
    pub attributes: &'static [&'static str],
    /// The prefix of its `[kernel]` behaviour switches (`deadline.`), if it has any.
    pub switches: Option<&'static str>,
    /// The kernel config options it needs.
    pub kconfig: &'static [Kconfig],
    /// Its timelines.
    pub streams: &'static [&'static StreamDef],
    /// Its cgroup files (its `struct blkcg_policy`'s, BFQ's `io.bfq.weight`): written
    /// to the run's elevator when it is this one ([`Elevator::write`]).
    pub files: &'static [CgroupFile],
    /// A write of one of its files in a run whose disk uses another elevator: the
    /// module is loaded, its cgroup side takes the line, and refuses what needs the
    /// disk to use it.
    pub write_elsewhere: fn(file: &str, line: &str, devs: &DeviceTable) -> Result<(), KernelError>,
    /// What a run with it is told of how far the model is from the real kernel, while
    /// it is (a warning on stderr and in the summary).
    pub caveat: Option<&'static str>,
    /// Its configuration for kernel `k` (its switches), checked for every variant.
    pub configure: fn(k: &KernelSettings) -> Result<Box<dyn ElevatorSetup>, KeyError>,
}

/// Who owns a cgroup file: a policy or an elevator's cgroup side.
#[derive(Clone, Copy)]
pub struct FileOwner {
    pub id: PolicyId,
    /// The kernel config options it needs.
    pub kconfig: &'static [Kconfig],
    /// An elevator's: its definition.
    pub elevator: Option<&'static ElevatorDef>,
}

/// An elevator configured for one variant, ready to build.
pub trait ElevatorSetup: Send {
    /// Its switches as `check` prints them.
    fn describe(&self) -> String;
    /// The elevator on a disk (`rotational`: `queue/rotational`) with `nr_requests` scheduler tags, its `queue/iosched/` files then
    /// written in order (`echo VALUE > queue/iosched/NAME`); a refused write is named
    /// by its key (`iosched.NAME`). `nr_requests_before` is what the queue had before
    /// `queue/nr_requests` was written (the scheduler's default; `nr_requests` if it
    /// was not): what an elevator's `depth_updated()` read before 7d337eef4aff.
    fn build(
        &self,
        rotational: bool,
        nr_requests: u32,
        nr_requests_before: u32,
        iosched: &[(String, String)],
    ) -> Result<Box<dyn Elevator>, KeyError>;
}

/// The registry: one line per policy or elevator. A policy is its [`PolicyDef`]; an
/// rq-qos one also names, after `=>`, its [`RqQosEntry`] variant and type; an elevator
/// is its [`ElevatorDef`]. Policies are listed in the order `check` shows them and
/// their writes' errors are looked for.
macro_rules! registry {
    (
        $d:tt;
        policies { $( $def:expr $(=> $variant:ident($ty:ty))? ; )* }
        elevators { $( $edef:expr ; )* }
    ) => {
        /// Every policy, in the order `check` lists them.
        pub static POLICIES: &[PolicyDef] = &[ $( $def, )* ];

        /// Every elevator but `none` (no elevator at all).
        pub static ELEVATORS: &[ElevatorDef] = &[ $( $edef, )* ];

        /// An entry of the rq-qos chain, one variant per rq-qos policy of
        /// [`POLICIES`]. The chain is walked several times per I/O, so it holds its
        /// entries in this enum rather than behind `dyn`, and the pipeline calls the
        /// per-I/O hooks through [`RqQosEntry`]'s own methods (`src/stack/mod.rs`),
        /// each a direct call on the concrete type; [`RqQosEntry::get`] is for the
        /// rest (timers, files, rows).
        pub enum RqQosEntry {
            $( $( $variant(Box<$ty>), )? )*
        }

        impl RqQosEntry {
            /// The entry as its hooks.
            #[inline(always)]
            pub fn get(&mut self) -> &mut dyn RqQos {
                match self { $( $( RqQosEntry::$variant(p) => &mut **p, )? )* }
            }

            /// The entry as its hooks, shared.
            #[inline(always)]
            pub fn get_ref(&self) -> &dyn RqQos {
                match self { $( $( RqQosEntry::$variant(p) => &**p, )? )* }
            }
        }

        /// `$call` with `$p` bound to the concrete policy of rq-qos entry `$e`: a
        /// direct call per variant, never through `dyn`.
        macro_rules! on_rq_qos_entry {
            ($d e:expr, $d p:ident => $d call:expr) => {
                match $d e { $( $( RqQosEntry::$variant($d p) => $d call, )? )* }
            };
        }
        pub(crate) use on_rq_qos_entry;
    };
}

// (`$;` hands the macro a `$` for the macro it defines, `on_rq_qos_entry!`)
registry! {
    $;
    policies {
        crate::throttle::policy::POLICY;
        crate::iocost::rqos::POLICY => Cost(crate::iocost::Iocost);
        crate::ioprio::POLICY;
        crate::iolatency::rqos::POLICY => Latency(crate::iolatency::rqos::LatencyEntry);
        crate::wbt::rqos::POLICY => Wbt(crate::wbt::rqos::WbtEntry);
    }
    elevators {
        crate::sched::mq_deadline::elevator::ELEVATOR;
        crate::sched::bfq::elevator::ELEVATOR;
    }
}

/// The cgroup file `name`, with the policy or elevator that owns it.
pub fn cgroup_file(name: &str) -> Option<(FileOwner, &'static CgroupFile)> {
    let policy = POLICIES.iter().find_map(|d| {
        let f = d.files.iter().find(|f| f.name == name)?;
        Some((
            FileOwner {
                id: d.id,
                kconfig: d.kconfig,
                elevator: None,
            },
            f,
        ))
    });
    policy.or_else(|| {
        ELEVATORS.iter().find_map(|e| {
            let f = e.files.iter().find(|f| f.name == name)?;
            Some((
                FileOwner {
                    id: e.id,
                    kconfig: e.kconfig,
                    elevator: Some(e),
                },
                f,
            ))
        })
    })
}

/// Every cgroup file, in registry order: policies', then elevators'.
pub fn cgroup_files() -> impl Iterator<Item = &'static CgroupFile> {
    POLICIES
        .iter()
        .flat_map(|d| d.files.iter())
        .chain(ELEVATORS.iter().flat_map(|e| e.files.iter()))
}

/// The names of the files a cgroup may have (`root`: the root's), quoted and joined
/// for an error's "accepted:" list.
pub fn file_names(root: bool) -> String {
    let names: Vec<String> = cgroup_files()
        .filter(|f| if root { f.on_root() } else { f.on_children() })
        .map(|f| format!("\"{}\"", f.name))
        .collect();
    names.join(", ")
}

/// Every `[kernel]` switch prefix (`throttle.`): the block core's
/// (`crate::sim::plug`), the CPU scheduler's (`crate::sim::cpu`) and the page cache's
/// (`crate::writeback::readahead`), then policies' and elevators'.
pub fn switch_prefixes() -> impl Iterator<Item = &'static str> {
    [
        crate::sim::plug::SWITCH_PREFIX,
        crate::sim::cpu::SWITCH_PREFIX,
        crate::writeback::readahead::SWITCH_PREFIX,
    ]
    .into_iter()
    .chain(POLICIES.iter().filter_map(|d| d.switches))
    .chain(ELEVATORS.iter().filter_map(|e| e.switches))
}

/// Whether `key` (of `[kernel]`) is a behaviour switch some policy or elevator reads.
pub fn is_switch(key: &str) -> bool {
    switch_prefixes().any(|p| key.starts_with(p) && key.len() > p.len())
}

/// The names `queue/scheduler` accepts: `none`, then every elevator.
pub fn scheduler_names() -> Vec<&'static str> {
    std::iter::once("none")
        .chain(ELEVATORS.iter().map(|e| e.name))
        .collect()
}

/// The streams of the pipeline itself, not of a policy: the page cache's and
/// io.pressure's.
const CORE_STREAMS: &[&StreamDef] = &[
    &crate::writeback::timeline::STREAM,
    &crate::psi::timeline::STREAM,
];

/// Every timeline stream, policies' then elevators', in registry order, then the
/// pipeline's own.
pub fn streams() -> impl Iterator<Item = &'static StreamDef> {
    POLICIES
        .iter()
        .flat_map(|d| d.streams.iter())
        .chain(ELEVATORS.iter().flat_map(|e| e.streams.iter()))
        .chain(CORE_STREAMS.iter())
        .copied()
}

/// The files of a run's folder the policies and elevators may write, in registry
/// order: each policy's reports, then each stream's CSV and picture.
pub fn output_files() -> Vec<&'static str> {
    let mut v = Vec::new();
    let policies = POLICIES.iter().map(|d| (d.reports, d.streams));
    let elevators = ELEVATORS.iter().map(|e| (&[][..], e.streams));
    let core = std::iter::once((&[][..], CORE_STREAMS));
    for (reports, streams) in policies.chain(elevators).chain(core) {
        v.extend(reports);
        for s in streams {
            v.push(s.csv);
            if let Some(p) = &s.picture {
                v.extend([p.png, p.svg]);
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_ids_files_and_streams_are_unique() {
        let mut ids = HashSet::new();
        let mut names = HashSet::new();
        for d in POLICIES {
            assert!(ids.insert(d.id), "{}: id {:?} taken", d.name, d.id);
            assert!(names.insert(d.name), "{}", d.name);
        }
        for e in ELEVATORS {
            assert!(ids.insert(e.id), "{}: id {:?} taken", e.name, e.id);
            assert!(names.insert(e.name) && e.name != "none", "{}", e.name);
        }
        let mut files = HashSet::new();
        for f in cgroup_files() {
            assert!(files.insert(f.name), "two policies own {}", f.name);
        }
        let mut out = HashSet::new();
        for f in output_files() {
            assert!(out.insert(f), "two streams write {f}");
        }
        let prefixes: Vec<_> = switch_prefixes().collect();
        for p in &prefixes {
            assert!(p.ends_with('.'), "{p}");
            assert_eq!(prefixes.iter().filter(|q| q == &p).count(), 1, "{p}");
        }
    }

    #[test]
    fn each_policy_builds_where_its_entry_says_it_sits() {
        let r = crate::scenario::Scenario::parse("[device]\nmodel = \"nullb\"\n", "t").unwrap();
        let res = r.resolve(None).unwrap();
        let limits = crate::device::config::resolve(&res.device, 1)
            .unwrap()
            .0
            .limits()
            .clone();
        for d in POLICIES {
            let built = (d.configure)(&res)
                .unwrap()
                .build(&res.tree, &limits, false);
            let kind = match &built {
                Hooks::Bio(p) => (HookKind::Bio, p.id()),
                Hooks::RqQos(e) => (HookKind::RqQos, e.get_ref().id()),
            };
            assert_eq!(kind, (d.hooks, d.id), "{}", d.name);
        }
    }

    #[test]
    fn every_switch_prefix_is_read_by_its_owner() {
        // a switch nobody knows under a registered prefix is refused by its owner
        let r = crate::scenario::Scenario::parse("[device]\nmodel = \"nullb\"\n", "t").unwrap();
        for p in switch_prefixes() {
            let mut res = r.resolve(None).unwrap();
            res.kernel
                .overrides
                .push((format!("{p}no_such_switch"), "x".into()));
            let policies = POLICIES.iter().map(|d| (d.configure)(&res).err());
            let elevators = ELEVATORS.iter().map(|e| (e.configure)(&res.kernel).err());
            let core = crate::sim::plug::behaviour_for(
                &res.kernel.version,
                &res.kernel.switches(crate::sim::plug::SWITCH_PREFIX),
            )
            .err();
            let sched = crate::sim::cpu::fair_for(
                &res.kernel.version,
                &res.kernel.switches(crate::sim::cpu::SWITCH_PREFIX),
            )
            .err();
            let mm = crate::writeback::readahead::behaviour_for(
                &res.kernel.version,
                &res.kernel
                    .switches(crate::writeback::readahead::SWITCH_PREFIX),
            )
            .err();
            let refused = policies
                .chain(elevators)
                .chain([core, sched, mm])
                .flatten()
                .count();
            assert_eq!(
                refused, 1,
                "`{p}no_such_switch` refused by exactly its owner"
            );
        }
    }
}
