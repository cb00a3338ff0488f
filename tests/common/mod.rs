//! What the integration tests share: the binary itself, a successful command's output,
//! a refused command's one-line error, and what a test does when a tool it needs is
//! missing (skip locally, fail under `BLKCG_SIM_REQUIRE_TOOLS=1`, as CI runs).
//!
//! Each test crate compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh folder for one test under cargo's target tmpdir, removed when the test
/// ends (pass or fail).
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// [`Scratch`] named after the test crate's `what` and this process.
pub fn scratch(what: &str) -> Scratch {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// The `blkcg-sim` binary cargo built for the tests.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
}

/// Runs `blkcg-sim ARGS`.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// Runs `line` as a user pastes a printed command into a shell in `dir`, with this
/// build's blkcg-sim first on the PATH; its stdout (the line must succeed).
pub fn shell(dir: &std::path::Path, line: &str) -> String {
    let bins = std::path::Path::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
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

/// The environment variable that turns a missing tool from a skip into a failure. CI
/// (`.ci/run`) sets it to 1: there every tool must be installed, and a test that would
/// skip fails instead, so a green run means every test really ran.
pub const REQUIRE_TOOLS_VAR: &str = "BLKCG_SIM_REQUIRE_TOOLS";

/// Whether a value of [`REQUIRE_TOOLS_VAR`] asks for the tools: set and neither empty
/// nor `0`.
pub fn tools_required_by(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether this process runs with [`REQUIRE_TOOLS_VAR`] set (read, never written).
pub fn tools_required() -> bool {
    tools_required_by(std::env::var_os(REQUIRE_TOOLS_VAR).as_deref())
}

/// What a test does when something it needs is missing.
#[derive(Debug, PartialEq, Eq)]
pub enum MissingTool {
    /// Return early; the message says what was skipped and why.
    Skip(String),
    /// Fail the test with this message.
    Fail(String),
}

/// The decision, as a pure function: `missing` is what is not here (a command, a tool
/// list from a dry run, a source tree), `install` how to get it (the apt-get line), `why`
/// what the test would have done with it.
pub fn missing_tool_outcome(
    required: bool,
    missing: &str,
    install: &str,
    why: &str,
) -> MissingTool {
    if required {
        MissingTool::Fail(format!(
            "missing: {missing} (needed {why}); install: {install}. {REQUIRE_TOOLS_VAR} \
             is set, so this fails instead of skipping"
        ))
    } else {
        MissingTool::Skip(format!(
            "skipped: missing {missing} (needed {why}); install: {install} \
             ({REQUIRE_TOOLS_VAR}=1 makes this a failure)"
        ))
    }
}

/// Acts on [`missing_tool_outcome`]: prints the skip and returns, or panics.
#[track_caller]
pub fn missing_tool_as(required: bool, missing: &str, install: &str, why: &str) {
    match missing_tool_outcome(required, missing, install, why) {
        MissingTool::Skip(m) => eprintln!("{m}"),
        MissingTool::Fail(m) => panic!("{m}"),
    }
}

/// Something a test needs is missing: skip (saying so on stderr) or, under
/// `BLKCG_SIM_REQUIRE_TOOLS=1`, fail. Every test that skips for a missing tool goes
/// through here; the caller returns right after.
#[track_caller]
pub fn missing_tool(missing: &str, install: &str, why: &str) {
    missing_tool_as(tools_required(), missing, install, why);
}

/// Whether `command` is an executable file in one of `$PATH`'s folders.
pub fn on_path(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(command))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// [`require_tool`] with the decision given: true when `command` is on `$PATH`;
/// otherwise skips (false) or, when `required`, panics naming the command and its
/// Debian package.
#[track_caller]
pub fn require_tool_as(required: bool, command: &str, package: &str, why: &str) -> bool {
    if on_path(command) {
        return true;
    }
    missing_tool_as(
        required,
        &format!("`{command}`"),
        &format!("apt-get install {package}"),
        why,
    );
    false
}

/// Whether the test can go on: true when `command` is installed. When it is not, the
/// test is skipped (false; a line on stderr says so) or, under
/// `BLKCG_SIM_REQUIRE_TOOLS=1`, fails naming the command and the Debian `package`.
/// `why` completes "needed …", e.g. "to open report.html headless".
#[track_caller]
pub fn require_tool(command: &str, package: &str, why: &str) -> bool {
    require_tool_as(tools_required(), command, package, why)
}

/// A test that runs only on request (an expensive one, like a 20-minute kernel build)
/// and was not requested: a skip whatever `BLKCG_SIM_REQUIRE_TOOLS` says, since no tool
/// is missing. `how` says how to ask for it.
pub fn skip_unrequested(what: &str, how: &str) {
    eprintln!("skipped: {what} ({how})");
}

/// The real fio JSON files `device fit` is tested on (`tests/data/fit/*.json`), sorted.
pub fn fit_files() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fit");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The built-in scenario `name` run as `validate` simulates it on Debian's kernel
/// `release` in its qemu guest: that series' measured host costs and `dispatch_ns`
/// (`validate::GUEST_HOSTS`), the kernel version pinned.
pub fn as_validate_simulates(name: &str, release: &str) -> blkcg_sim::run::VariantRun {
    as_validate_simulates_variant(name, None, release)
}

/// [`as_validate_simulates`] for one of the scenario's variants (`validate --variant`).
pub fn as_validate_simulates_variant(
    name: &str,
    variant: Option<&str>,
    release: &str,
) -> blkcg_sim::run::VariantRun {
    as_validate_simulates_seed(name, variant, release, None)
}

/// `name`'s variant `v` as `validate` simulates it on `release`, its first job's MiB/s
/// checked against the real `real_bw` (the ratio within `band`) and its clat median
/// against the real `real_p50` µs (within `p50_tol`, a fraction); the run, for more.
pub fn validate_run_next_to_real(
    name: &str,
    v: &str,
    release: &str,
    (real_bw, band): (f64, std::ops::Range<f64>),
    (real_p50, p50_tol): (f64, f64),
) -> blkcg_sim::run::VariantRun {
    let run = as_validate_simulates_variant(name, Some(v), release);
    let s = &run.summaries[0];
    let ratio = s.mib_s / real_bw;
    assert!(
        band.contains(&ratio),
        "{release} {v}: {:.1} MiB/s, real {real_bw}",
        s.mib_s
    );
    let p50 = s.pct(50.0).unwrap() * 1000.0;
    assert!(
        (p50 / real_p50 - 1.0).abs() < p50_tol,
        "{release} {v}: clat p50 {p50:.2} µs, real {real_p50}"
    );
    run
}

/// [`as_validate_simulates_variant`] with `seed` in place of the scenario's
/// (`validate --runs N` simulates seeds from the scenario's on).
pub fn as_validate_simulates_seed(
    name: &str,
    variant: Option<&str>,
    release: &str,
    seed: Option<u64>,
) -> blkcg_sim::run::VariantRun {
    let text = blkcg_sim::scenario::embedded::get(name).unwrap();
    let sc = blkcg_sim::scenario::Scenario::parse(text, name).unwrap();
    as_validate_simulates_scenario(&sc, variant, release, seed)
}

/// [`as_validate_simulates_seed`] for a parsed scenario `sc` (one read from a file,
/// whose relative names — a replayed log — are beside it).
pub fn as_validate_simulates_scenario(
    sc: &blkcg_sim::scenario::Scenario,
    variant: Option<&str>,
    release: &str,
    seed: Option<u64>,
) -> blkcg_sim::run::VariantRun {
    use toml::Value;
    let (_, guest) = blkcg_sim::validate::guest_host(release);
    let mut pins: Vec<(&[&str], &str, Value)> = guest
        .host()
        .into_iter()
        .map(|(k, v)| (&["host"][..], k, v))
        .collect();
    pins.push((
        &["device"],
        "dispatch_ns",
        Value::Integer(guest.dispatch_ns),
    ));
    blkcg_sim::run::run_variant(&sc.pinned(&pins), variant, Some(release), seed, false).unwrap()
}

/// [`as_validate_simulates`], as the fio JSON document `validate` reads.
pub fn as_validate_simulates_json(name: &str, release: &str) -> serde_json::Value {
    as_validate_simulates_variant_json(name, None, release)
}

/// [`as_validate_simulates_variant`], as the fio JSON document `validate` reads.
pub fn as_validate_simulates_variant_json(
    name: &str,
    variant: Option<&str>,
    release: &str,
) -> serde_json::Value {
    let run = as_validate_simulates_variant(name, variant, release);
    serde_json::from_str(&blkcg_sim::report::fio::json::to_json(&run.fio, false)).unwrap()
}

/// Job `job`'s direction `dir` (`"read"`, `"write"`) in a fio JSON document.
pub fn fio_job<'a>(doc: &'a serde_json::Value, job: &str, dir: &str) -> &'a serde_json::Value {
    let j = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == job)
        .unwrap();
    &j[dir]
}

/// What headless Chromium showed of one of our HTML pages.
pub struct BrowserView {
    /// The body's `data-*` attributes (without `data-`), as our scripts left them.
    pub body: std::collections::HashMap<String, String>,
    /// Every console message the page produced (ours produce none: each is an error).
    pub console: Vec<String>,
    /// The screenshot kept as CI's artefact (`target/artefacts/NAME.png`).
    pub screenshot: PathBuf,
}

/// Open `page` in headless Chromium as a person would, with the network cut off (a
/// dead proxy, every host name unresolvable): once at `#selftest` (every chart drawn,
/// the first zoomed and hovered, every picture box opened) to read what the scripts
/// recorded on the body, once for a screenshot kept in `target/artefacts/NAME.png`.
/// `None` where chromium is missing and tools are not required.
pub fn browse(page: &Path, name: &str) -> Option<BrowserView> {
    if !require_tool("chromium", "chromium", "to open the HTML report headless") {
        return None;
    }
    let offline = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--proxy-server=http://127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--virtual-time-budget=15000",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", page.display());
    let out = Command::new("chromium")
        .args(offline)
        .arg("--dump-dom")
        .arg(format!("{url}#selftest"))
        .output()
        .expect("chromium starts");
    let dom = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let start = dom.find("<body").expect("a body in the DOM") + 5;
    let tag = &dom[start..start + dom[start..].find('>').unwrap()];
    let unescape = |s: &str| {
        s.replace("&gt;", ">")
            .replace("&lt;", "<")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    let mut body = std::collections::HashMap::new();
    for piece in tag.split(" data-").skip(1) {
        if let Some((k, v)) = piece.split_once("=\"") {
            let v = &v[..v.rfind('"').unwrap_or(v.len())];
            body.insert(k.to_string(), unescape(v));
        }
    }
    let artefacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../artefacts");
    std::fs::create_dir_all(&artefacts).unwrap();
    let screenshot = artefacts.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&screenshot);
    let shot = Command::new("chromium")
        .args(offline)
        .arg("--window-size=1280,2000")
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .output()
        .expect("chromium starts");
    assert!(
        screenshot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    Some(BrowserView {
        body,
        console,
        screenshot,
    })
}

/// Open `page` as [`browse`] does and check what a person would see: no script error
/// and nothing on the console, `charts` charts, each of `series` (`CHART: LINE, …` as
/// the page lists them) among them, a zoom that narrowed the first chart's range and
/// values read under the pointer. The view, for more checks; `None` as [`browse`].
pub fn check_page(page: &Path, name: &str, charts: usize, series: &[&str]) -> Option<BrowserView> {
    let view = browse(page, name)?;
    let body = |k: &str| view.body.get(k).cloned().unwrap_or_default();
    assert!(view.console.is_empty(), "console: {:?}", view.console);
    assert_eq!(body("errors"), "", "script errors");
    assert_eq!(body("charts"), charts.to_string(), "{:?}", body("series"));
    let listed = body("series");
    for want in series {
        assert!(
            listed.lines().any(|l| l == *want),
            "no chart `{want}` in:\n{listed}"
        );
    }
    let zoom = body("zoom");
    let (before, after) = zoom.split_once(" -> ").expect("the self-test zoomed");
    assert_ne!(before, after, "a drag did not zoom");
    let hover = body("hover");
    assert!(
        hover.split(" | ").any(|v| v.parse::<f64>().is_ok()),
        "nothing read under the pointer: {hover}"
    );
    Some(view)
}
