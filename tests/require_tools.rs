//! The one helper every test that needs an outside tool goes through
//! (`tests/common/mod.rs`): locally a missing tool is a skip that says so; under
//! `BLKCG_SIM_REQUIRE_TOOLS=1`, as CI runs, it is a failure naming the tool and its
//! Debian package. The decision is a pure function, tested here directly; the one test
//! that reads the real variable runs in a child process of its own, so no test here
//! writes the environment other threads read.

mod common;

use common::{MissingTool, missing_tool_outcome, require_tool_as, tools_required_by};
use std::ffi::OsStr;
use std::process::Command;

/// A command no machine has.
const NO_SUCH_TOOL: &str = "blkcg-sim-no-such-tool-0b5e";

#[test]
fn the_variable_asks_for_the_tools_when_set_and_not_0() {
    assert!(!tools_required_by(None));
    assert!(!tools_required_by(Some(OsStr::new(""))));
    assert!(!tools_required_by(Some(OsStr::new("0"))));
    assert!(tools_required_by(Some(OsStr::new("1"))));
    assert!(tools_required_by(Some(OsStr::new("true"))));
}

#[test]
fn required_and_missing_is_a_failure_naming_the_tool_and_package() {
    let out = missing_tool_outcome(
        true,
        "`qemu-system-x86_64`",
        "apt-get install qemu-system-x86",
        "to boot the guest",
    );
    let MissingTool::Fail(m) = out else {
        panic!("not a failure: {out:?}")
    };
    for w in [
        "qemu-system-x86_64",
        "apt-get install qemu-system-x86",
        "to boot the guest",
        "BLKCG_SIM_REQUIRE_TOOLS",
    ] {
        assert!(m.contains(w), "{w:?} not in {m:?}");
    }
}

#[test]
fn not_required_and_missing_is_a_skip_that_says_why() {
    let out = missing_tool_outcome(false, "`chromium`", "apt-get install chromium", "to look");
    let MissingTool::Skip(m) = out else {
        panic!("not a skip: {out:?}")
    };
    assert!(m.starts_with("skipped: "), "{m}");
    assert!(
        m.contains("`chromium`") && m.contains("apt-get install chromium"),
        "{m}"
    );
    assert!(m.contains("BLKCG_SIM_REQUIRE_TOOLS=1"), "{m}");
}

#[test]
#[should_panic(
    expected = "missing: `blkcg-sim-no-such-tool-0b5e` (needed to prove the helper fails); install: apt-get install no-such-package"
)]
fn require_tool_panics_when_required_and_the_tool_is_missing() {
    require_tool_as(
        true,
        NO_SUCH_TOOL,
        "no-such-package",
        "to prove the helper fails",
    );
}

#[test]
fn require_tool_skips_when_not_required_and_goes_on_when_present() {
    assert!(!require_tool_as(
        false,
        NO_SUCH_TOOL,
        "no-such-package",
        "to skip"
    ));
    assert!(require_tool_as(true, "sh", "dash", "to run a shell"));
}

/// Set by [`the_variable_turns_a_skip_into_a_failure`] for the child process it runs.
const PROBE_VAR: &str = "BLKCG_SIM_TOOLS_PROBE";

/// The probe that the next test runs in a child process; in this process (the variable
/// unset) it does nothing.
#[test]
fn probe_a_missing_tool() {
    if std::env::var_os(PROBE_VAR).is_none() {
        return;
    }
    assert!(!common::require_tool(
        NO_SUCH_TOOL,
        "no-such-package",
        "by the probe"
    ));
}

/// End to end, through the real variable: this test binary runs its own probe with
/// `BLKCG_SIM_REQUIRE_TOOLS=1` (it fails, naming the tool) and without (it passes,
/// saying it skipped).
#[test]
fn the_variable_turns_a_skip_into_a_failure() {
    let probe = |required: Option<&str>| {
        let mut cmd = Command::new(std::env::current_exe().expect("this test binary"));
        cmd.args([
            "--exact",
            "probe_a_missing_tool",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_VAR, "1");
        match required {
            Some(v) => cmd.env(common::REQUIRE_TOOLS_VAR, v),
            None => cmd.env_remove(common::REQUIRE_TOOLS_VAR),
        };
        let out = cmd.output().expect("the test binary runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, text) = probe(Some("1"));
    assert!(!ok, "required, the probe passed: {text}");
    assert!(
        text.contains(&format!("missing: `{NO_SUCH_TOOL}`"))
            && text.contains("apt-get install no-such-package"),
        "{text}"
    );
    let (ok, text) = probe(None);
    assert!(ok, "not required, the probe failed: {text}");
    assert!(
        text.contains(&format!("skipped: missing `{NO_SUCH_TOOL}`")),
        "{text}"
    );
}
