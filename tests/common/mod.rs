//! What the integration tests that run the binary share: the binary itself, a
//! successful command's output, and a refused command's one-line error.
//!
//! Each test crate compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::process::{Command, Output};

/// The `blkcg-sim` binary cargo built for the tests.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
}

/// Runs `blkcg-sim ARGS`.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// The standard output of `blkcg-sim ARGS`, which must succeed.
pub fn stdout_of(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The error of `blkcg-sim ARGS`, which must be refused as users see a refusal: exit
/// status 2, one line on stderr, never a panic.
pub fn one_line_error(args: &[&str]) -> String {
    let out = run(args);
    let e = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "one line expected: {e}");
    e
}
