//! Named host profiles: `[host] profile = "NAME"`, and the one `run` assumes.
//!
//! Design
//! ------
//! The idea: the CPU time around each I/O and how late a sleeping task wakes are
//! properties of a machine, not of a scenario; a profile is one machine's `[host]`
//! keys, measured, under a name. A scenario names one (or gets [`DEFAULT_PROFILE`]),
//! and any `[host]` key it sets itself overrides the profile's value for that key.
//!
//! Moving parts: [`PROFILES`], each with where and how it was measured; [`profile`]
//! and [`default_profile`] for `resolve.rs`; [`HostProfile::costs`] builds the
//! [`HostCosts`] (the keys over [`HostCosts::default`], the simulator's baseline);
//! `validate` pins the `qemu-*` profile of the kernel it boots
//! (`crate::validate::GUEST_HOSTS`); `blkcg-sim host list` prints them and `blkcg-sim
//! host probe` (`crate::host_probe`) measures a new one. Why the default is the one
//! it is: docs/validation.md §24.

use super::host::{HostCosts, LatenessTable, WakeupLateness};
use crate::sim::Ns;

/// A named, measured set of `[host]` keys.
#[derive(Debug, PartialEq, Eq)]
pub struct HostProfile {
    pub name: &'static str,
    /// One line: what machine this is.
    pub about: &'static str,
    /// Where and how it was measured.
    pub measured: &'static str,
    /// `[host]` keys and their values (ns, or counts), over [`HostCosts::default`].
    pub keys: &'static [(&'static str, u64)],
    /// `wakeup_lateness`: per sleep length (ns, rising), its (percentile in ppm, ns)
    /// points; empty: none.
    pub wakeup_lateness: &'static [(Ns, &'static [(u32, Ns)])],
}

impl HostProfile {
    /// The [`HostCosts`] this profile stands for.
    pub fn costs(&self) -> HostCosts {
        let mut h = HostCosts::default();
        for &(k, v) in self.keys {
            let known = h.set_integer(k, v);
            debug_assert!(known, "profile {}: unknown key {k}", self.name);
        }
        if !self.wakeup_lateness.is_empty() {
            let tables: Option<Vec<(Ns, LatenessTable)>> = self
                .wakeup_lateness
                .iter()
                .map(|&(len, pts)| LatenessTable::new(pts).ok().map(|t| (len, t)))
                .collect();
            h.wakeup_lateness = tables.and_then(|t| WakeupLateness::by_sleep(&t).ok());
            debug_assert!(
                h.wakeup_lateness.is_some(),
                "profile {}: a bad table",
                self.name
            );
        }
        h
    }
}

/// `cloud-vm`'s costs, busy or not: `submit_ns` and `submit_page_ns` from fio's slat
/// on the idle VM, the rest in `qemu-6.12`'s proportions to `submit_ns`
/// (docs/validation.md §24).
const CLOUD_VM_COSTS: &[(&str, u64)] = &[
    ("submit_ns", 16780),
    ("submit_page_ns", 380),
    ("complete_ns", 20140),
    ("complete_page_ns", 310),
    ("sync_submit_ns", 11290),
    ("inline_complete_ns", 4270),
    ("reap_ns", 4610),
    ("elevator_ns", 5640),
    ("bfq_ns", 9150),
    ("workqueue_ns", 4270),
    ("sleep_flush_ns", 7020),
    ("fio_loop_ns", 6100),
    ("tag_wakeup_ns", 16480),
];

/// The profile `run` assumes when a scenario names none (docs/validation.md §24).
pub const DEFAULT_PROFILE: &str = "minimal";

/// The built-in profiles.
pub const PROFILES: [HostProfile; 5] = [
    HostProfile {
        name: "minimal",
        about: "a quiet bare-metal server: the least the stack costs, no scheduling noise",
        measured: "not measured: the costs are the qemu guests' in proportion, scaled to a \
                   submission of 2 µs, the host the device presets meet their bare-metal \
                   datasheets with (docs/validation.md §24); sleeps end late by the 50 µs \
                   timer slack only",
        keys: &[],
        wakeup_lateness: &[],
    },
    HostProfile {
        name: "cloud-vm",
        about: "a small cloud VM, idle: µs-scale costs ~3x a bare server's, millisecond wake-up tails",
        measured: "`blkcg-sim host probe --samples 2000 --fio-dir DIR` on a 2-vCPU Firecracker \
                   VM (kernel 6.18, ext4 on virtio-blk) with nothing else running: sleeps of 100 µs, 1 ms and \
                   4 ms, a table each; `submit_ns` and `submit_page_ns` from fio's slat through ext4; \
                   the other costs in the qemu-6.12 profile's proportions to `submit_ns` \
                   (docs/validation.md §24)",
        keys: CLOUD_VM_COSTS,
        wakeup_lateness: &[
            (
                100_000,
                &[
                    (0, 18_400),
                    (10_000, 48_500),
                    (100_000, 55_500),
                    (250_000, 55_800),
                    (500_000, 56_000),
                    (750_000, 58_600),
                    (900_000, 61_300),
                    (950_000, 62_800),
                    (990_000, 76_200),
                    (995_000, 83_300),
                    (999_000, 103_400),
                    (1_000_000, 117_600),
                ],
            ),
            (
                1_000_000,
                &[
                    (0, 15_300),
                    (10_000, 49_400),
                    (100_000, 70_200),
                    (250_000, 75_600),
                    (500_000, 79_900),
                    (750_000, 85_700),
                    (900_000, 92_100),
                    (950_000, 101_900),
                    (990_000, 195_200),
                    (995_000, 476_400),
                    (999_000, 1_119_400),
                    (1_000_000, 2_386_200),
                ],
            ),
            (
                4_000_000,
                &[
                    (0, 46_400),
                    (10_000, 74_500),
                    (100_000, 95_400),
                    (250_000, 107_800),
                    (500_000, 120_400),
                    (750_000, 138_800),
                    (900_000, 163_600),
                    (950_000, 219_700),
                    (990_000, 925_200),
                    (995_000, 1_191_200),
                    (999_000, 3_045_600),
                    (1_000_000, 3_743_800),
                ],
            ),
        ],
    },
    HostProfile {
        name: "cloud-vm-busy",
        about: "the same cloud VM with its other vCPU busy (a CPU-bound neighbour): later wake-ups",
        measured: "`blkcg-sim host probe --samples 2000 --fio-dir DIR` on a 2-vCPU Firecracker \
                   VM (kernel 6.18, ext4 on virtio-blk) with its other vCPU running a CPU-bound qemu: sleeps of 100 µs, 1 ms and \
                   4 ms, a table each; `submit_ns` and `submit_page_ns` from fio's slat through ext4; \
                   the other costs in the qemu-6.12 profile's proportions to `submit_ns` \
                   (docs/validation.md §24)",
        keys: CLOUD_VM_COSTS,
        wakeup_lateness: &[
            (
                100_000,
                &[
                    (0, 14_500),
                    (10_000, 56_000),
                    (100_000, 57_700),
                    (250_000, 59_200),
                    (500_000, 61_000),
                    (750_000, 63_800),
                    (900_000, 66_300),
                    (950_000, 73_300),
                    (990_000, 95_900),
                    (995_000, 108_600),
                    (999_000, 267_800),
                    (1_000_000, 830_800),
                ],
            ),
            (
                1_000_000,
                &[
                    (0, 20_500),
                    (10_000, 61_400),
                    (100_000, 71_400),
                    (250_000, 77_000),
                    (500_000, 83_000),
                    (750_000, 90_700),
                    (900_000, 130_200),
                    (950_000, 501_700),
                    (990_000, 1_361_100),
                    (995_000, 1_856_500),
                    (999_000, 2_546_300),
                    (1_000_000, 4_737_500),
                ],
            ),
            (
                4_000_000,
                &[
                    (0, 32_100),
                    (10_000, 65_600),
                    (100_000, 79_900),
                    (250_000, 90_100),
                    (500_000, 105_700),
                    (750_000, 127_300),
                    (900_000, 167_900),
                    (950_000, 407_300),
                    (990_000, 1_725_000),
                    (995_000, 2_154_700),
                    (999_000, 3_725_000),
                    (1_000_000, 3_905_900),
                ],
            ),
        ],
    },
    HostProfile {
        name: "qemu-6.1",
        about: "validate's qemu guest (TCG icount, one vCPU) on Debian's 6.1",
        measured: "null_blk QD1 O_DIRECT runs in the guest (docs/validation.md §5, §15, §21, \
                   §23); tag wake-ups from block tracepoints; the completion's interrupt part \
                   fitted on the deadline campaign, the tick's from irq tracepoints (§38)",
        keys: &[
            ("submit_ns", 5_200),
            ("submit_page_ns", 380),
            ("complete_ns", 6_000),
            ("complete_page_ns", 53),
            ("complete_irq_ns", 1_000),
            ("tick_irq_ns", 2_000),
            ("sync_submit_ns", 3_800),
            ("inline_complete_ns", 850),
            ("reap_ns", 1_460),
            ("elevator_ns", 1_900),
            ("bfq_ns", 2_800),
            ("workqueue_ns", 6_200),
            ("sleep_flush_ns", 10_100),
            ("fio_loop_ns", 2_000),
            ("wakeup_jitter_ns", 0),
            ("wakeup_slip_ppm", 0),
            ("wakeup_slip_ns", 0),
            ("tag_wakeup_ns", 6_400),
            ("tag_wakeup_slip_ppm", 763),
            ("tag_wakeup_slip_ns", 135_000),
            ("cpus", 1),
            ("page_copy_ns", 5_900),
            ("read_call_ns", 1_450),
            ("page_read_ns", 840),
            ("readahead_page_ns", 2_700),
            ("memory", 1_834_434_560),
        ],
        wakeup_lateness: &[],
    },
    HostProfile {
        name: "qemu-6.12",
        about: "validate's qemu guest (TCG icount, one vCPU) on Debian's 6.12",
        measured: "null_blk QD1 O_DIRECT runs in the guest (docs/validation.md §5, §15, §21, \
                   §23); fio's rate-paced sleeps and tag wake-ups from block tracepoints (§8); \
                   the completion's interrupt part fitted on the deadline campaign, the \
                   tick's from irq tracepoints (§38)",
        keys: &[
            ("submit_ns", 5_500),
            ("submit_page_ns", 540),
            ("complete_ns", 6_600),
            ("complete_page_ns", 100),
            ("complete_irq_ns", 2_000),
            ("tick_irq_ns", 2_000),
            ("sync_submit_ns", 3_700),
            ("inline_complete_ns", 1_400),
            ("reap_ns", 1_510),
            ("elevator_ns", 1_850),
            ("bfq_ns", 3_000),
            ("workqueue_ns", 1_400),
            ("sleep_flush_ns", 2_300),
            ("fio_loop_ns", 2_000),
            ("wakeup_jitter_ns", 0),
            ("wakeup_slip_ppm", 25_862),
            ("wakeup_slip_ns", 165_000),
            ("tag_wakeup_ns", 5_400),
            ("tag_wakeup_slip_ppm", 482),
            ("tag_wakeup_slip_ns", 461_000),
            ("cpus", 1),
            ("page_copy_ns", 6_000),
            ("read_call_ns", 1_450),
            ("page_read_ns", 840),
            ("readahead_page_ns", 2_700),
            ("memory", 1_843_650_560),
        ],
        wakeup_lateness: &[],
    },
];

/// The profile named `name`.
pub fn profile(name: &str) -> Option<&'static HostProfile> {
    PROFILES.iter().find(|p| p.name == name)
}

/// The profile `run` assumes.
pub fn default_profile() -> &'static HostProfile {
    profile(DEFAULT_PROFILE).unwrap_or(&PROFILES[0])
}

/// The names, for errors: `minimal, qemu-6.1, ...`.
pub fn names() -> String {
    PROFILES
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_sets_only_known_keys_and_the_default_exists() {
        assert_eq!(default_profile().name, DEFAULT_PROFILE);
        for p in &PROFILES {
            let mut h = HostCosts::default();
            for &(k, v) in p.keys {
                assert!(h.set_integer(k, v), "{}: {k}", p.name);
            }
            // every table a distribution, the lengths rising
            assert_eq!(
                p.costs().wakeup_lateness.is_some(),
                !p.wakeup_lateness.is_empty(),
                "{}",
                p.name
            );
        }
        assert_eq!(profile("minimal").unwrap().costs(), HostCosts::default());
        assert_eq!(profile("qemu-6.12").unwrap().costs().cpus, 1);
        assert!(profile("nope").is_none());
    }
}
