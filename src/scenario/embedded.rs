//! Scenarios compiled into the binary (the `scenarios/` folder), so `blkcg-sim repro`
//! and `blkcg-sim run NAME` need no files. Seeds come first, examples after.

/// (name, TOML text) of every built-in scenario.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "throttle-iops-tail-latency",
        include_str!("../../scenarios/throttle-iops-tail-latency.toml"),
    ),
    (
        "throttle-wbps-wiops",
        include_str!("../../scenarios/throttle-wbps-wiops.toml"),
    ),
    (
        "iocost-no-completion",
        include_str!("../../scenarios/iocost-no-completion.toml"),
    ),
    (
        "iocost-linear-max",
        include_str!("../../scenarios/iocost-linear-max.toml"),
    ),
    (
        "sanity-nullb-ssd",
        include_str!("../../scenarios/sanity-nullb-ssd.toml"),
    ),
    (
        "example-throttle-hierarchy",
        include_str!("../../scenarios/example-throttle-hierarchy.toml"),
    ),
    (
        "example-iocost-hierarchy",
        include_str!("../../scenarios/example-iocost-hierarchy.toml"),
    ),
    (
        "example-iocost-debt",
        include_str!("../../scenarios/example-iocost-debt.toml"),
    ),
    (
        "example-buffered-iomax",
        include_str!("../../scenarios/example-buffered-iomax.toml"),
    ),
    (
        "example-bfq-weights",
        include_str!("../../scenarios/example-bfq-weights.toml"),
    ),
    (
        "example-wbt",
        include_str!("../../scenarios/example-wbt.toml"),
    ),
    (
        "example-ssd-write-cliff",
        include_str!("../../scenarios/example-ssd-write-cliff.toml"),
    ),
    (
        "throttle-meta-bypass",
        include_str!("../../scenarios/throttle-meta-bypass.toml"),
    ),
    (
        "example-device-removal",
        include_str!("../../scenarios/example-device-removal.toml"),
    ),
    (
        "example-ioprio-deadline",
        include_str!("../../scenarios/example-ioprio-deadline.toml"),
    ),
    (
        "example-deadline-reads-vs-writes",
        include_str!("../../scenarios/example-deadline-reads-vs-writes.toml"),
    ),
    (
        "example-iolatency-protect",
        include_str!("../../scenarios/example-iolatency-protect.toml"),
    ),
    (
        "validate-buffered-iomax",
        include_str!("../../scenarios/validate-buffered-iomax.toml"),
    ),
    (
        "validate-wbt",
        include_str!("../../scenarios/validate-wbt.toml"),
    ),
    (
        "validate-buffered-read",
        include_str!("../../scenarios/validate-buffered-read.toml"),
    ),
    (
        "validate-bfq",
        include_str!("../../scenarios/validate-bfq.toml"),
    ),
    (
        "validate-iomax-riops",
        include_str!("../../scenarios/validate-iomax-riops.toml"),
    ),
    (
        "validate-iolatency",
        include_str!("../../scenarios/validate-iolatency.toml"),
    ),
    (
        "validate-iocost-weights",
        include_str!("../../scenarios/validate-iocost-weights.toml"),
    ),
    (
        "validate-iocost-saturated",
        include_str!("../../scenarios/validate-iocost-saturated.toml"),
    ),
    (
        "validate-iocost-capped-weights",
        include_str!("../../scenarios/validate-iocost-capped-weights.toml"),
    ),
    (
        "validate-iocost-donation",
        include_str!("../../scenarios/validate-iocost-donation.toml"),
    ),
    (
        "validate-iocost-tag-bound",
        include_str!("../../scenarios/validate-iocost-tag-bound.toml"),
    ),
    (
        "validate-ioprio-deadline",
        include_str!("../../scenarios/validate-ioprio-deadline.toml"),
    ),
    (
        "validate-ioprio-class",
        include_str!("../../scenarios/validate-ioprio-class.toml"),
    ),
    (
        "validate-nullb-mbps-share",
        include_str!("../../scenarios/validate-nullb-mbps-share.toml"),
    ),
    (
        "validate-nullb-dispatch",
        include_str!("../../scenarios/validate-nullb-dispatch.toml"),
    ),
    (
        "validate-nullb-softirq",
        include_str!("../../scenarios/validate-nullb-softirq.toml"),
    ),
    (
        "validate-kblockd-queue-run",
        include_str!("../../scenarios/validate-kblockd-queue-run.toml"),
    ),
    (
        "validate-none-tag-share",
        include_str!("../../scenarios/validate-none-tag-share.toml"),
    ),
    (
        "validate-tag-sleeper-preempt",
        include_str!("../../scenarios/validate-tag-sleeper-preempt.toml"),
    ),
    (
        "validate-deadline-tag-race",
        include_str!("../../scenarios/validate-deadline-tag-race.toml"),
    ),
    (
        "validate-fio-sleeps",
        include_str!("../../scenarios/validate-fio-sleeps.toml"),
    ),
    (
        "validate-deadline-idle-poll",
        include_str!("../../scenarios/validate-deadline-idle-poll.toml"),
    ),
    (
        "validate-deadline-write-tags",
        include_str!("../../scenarios/validate-deadline-write-tags.toml"),
    ),
    (
        "validate-deadline-merges",
        include_str!("../../scenarios/validate-deadline-merges.toml"),
    ),
];

/// Names of the built-in scenarios, in order.
pub fn names() -> Vec<&'static str> {
    SCENARIOS.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of built-in scenario `name`.
pub fn get(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Built-in scenarios that carry a `[repro]` table (the seed reproductions).
pub fn seeds() -> Vec<&'static str> {
    SCENARIOS
        .iter()
        .filter(|(_, t)| t.contains("\n[repro]"))
        .map(|(n, _)| *n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn every_built_in_scenario_parses_and_resolves() {
        for (name, text) in SCENARIOS {
            let sc = Scenario::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
            let variants = sc.variants();
            if variants.is_empty() {
                sc.resolve(None).unwrap_or_else(|e| panic!("{e}"));
            }
            for v in variants {
                sc.resolve(Some(&v)).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
