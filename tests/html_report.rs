//! `run --output DIR` writes DIR/report.html: every picture and file it links exists,
//! and — where Debian's chromium is installed — a real browser loads every picture.

mod common;

use std::path::Path;
use std::process::Command;

/// Every `src="…"` and `href="…"` target of the page that is a relative file.
fn links(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["src=\"", "href=\""] {
        for piece in page.split(attr).skip(1) {
            let target = &piece[..piece.find('"').unwrap()];
            if !target.starts_with('#') {
                out.push(target.to_string());
            }
        }
    }
    out
}

#[test]
fn the_report_page_links_only_what_the_run_wrote_and_a_browser_shows_every_picture() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("blkcg-sim-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_blkcg-sim"))
        .args([
            "run",
            "example-ioprio-deadline",
            "--quiet",
            "--output-format",
            "summary",
        ])
        .arg("--output")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // both runs, the A/B table, the description with its code spans
    for want in [
        "id=\"run-mq-deadline\"",
        "id=\"run-none\"",
        "<h2 id=\"ab\">A/B</h2>",
        "<code>none</code>",
        // what each run assumed heads its summary (`example-ioprio-deadline` sets both)
        "assumed: kernel 6.12 (scenario), HZ=250 (scenario)",
    ] {
        assert!(page.contains(want), "{want} missing");
    }
    let targets = links(&page);
    let pictures = targets.iter().filter(|t| t.ends_with(".svg")).count();
    // jobs, clat, iostat in both runs, deadline only under mq-deadline, pressure only
    // under none (its 8 in flight wait for the driver's tags: iowait; mq-deadline's
    // scheduler tags hold them all)
    assert_eq!(pictures, 8, "{targets:?}");
    assert!(targets.iter().any(|t| t == "none/pressure.svg"));
    assert!(targets.iter().any(|t| t == "mq-deadline/deadline.svg"));
    assert!(!targets.iter().any(|t| t == "none/deadline.svg"));
    for t in &targets {
        assert!(
            dir.join(t).is_file(),
            "report.html links {t}, which is not there"
        );
    }

    if !common::require_tool(
        "chromium",
        "chromium",
        "to load report.html's pictures headless",
    ) {
        return;
    }
    let browser = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", dir.join("report.html").display()))
        .output()
        .expect("chromium starts");
    let dom = String::from_utf8_lossy(&browser.stdout);
    assert!(
        dom.contains(&format!("data-pictures-loaded=\"{pictures}\"")),
        "the browser did not load every picture: {}",
        String::from_utf8_lossy(&browser.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
