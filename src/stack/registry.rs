//! The policies the simulator has: one line each in [`POLICIES`].
//!
//! Design
//! ------
//! A policy comes in three steps, each owned by the policy's own folder:
//! - [`PolicyDef::configure`] reads a variant's `[kernel]` switches (and `[state]`)
//!   into its configuration, a [`PolicySetup`]. Every policy is configured for every
//!   variant, used or not, so a bad switch is refused even where nothing uses it.
//! - [`PolicyDef::refuses`] says whether the variant's kernel has the policy's files
//!   at all (blk-iocost arrived in 5.4); a write to one then fails with ENOENT.
//! - [`PolicySetup::build`] makes the policy for a run, once the variant writes one of
//!   its [`PolicyDef::files`] (the kernel creates a policy at the first write), as
//!   [`Hooks`] for the stack. A run builds it twice: on scratch to check every write of
//!   the run in time order, and for the run itself.
//!
//! `check` prints each policy's [`PolicySetup::describe`] under its
//! [`PolicySetup::label`].

use crate::blkcg::CgroupTree;
use crate::device::QueueLimits;
use crate::error::KeyError;
use crate::kernel_version::KernelVersion;
use crate::scenario::resolve::Resolved;

use super::Hooks;

/// One policy the simulator has.
pub struct PolicyDef {
    /// Its interface files; a variant that writes one of them gets the policy.
    pub files: &'static [&'static str],
    /// Why kernel `v` has none of its files (the policy arrived later), if it has none.
    pub refuses: fn(v: &KernelVersion) -> Option<&'static str>,
    /// Its configuration for variant `r` (behaviour switches from `[kernel]`, `[state]`).
    pub configure: fn(r: &Resolved) -> Result<Box<dyn PolicySetup>, KeyError>,
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

/// Every policy, in the order `check` lists them and their writes' errors are looked
/// for. Where each sits on the bio's path is its [`Hooks`] and `super::PolicyId`.
pub static POLICIES: &[PolicyDef] = &[
    crate::throttle::policy::POLICY,
    crate::iocost::rqos::POLICY,
    crate::ioprio::POLICY,
    crate::iolatency::rqos::POLICY,
];
