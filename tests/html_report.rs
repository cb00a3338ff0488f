//! `run --output DIR` writes DIR/report.html: every picture and file it links exists,
//! and — where Debian's chromium is installed — a real browser, offline, loads every
//! picture, draws every chart with its lines, zooms them all together and reads values
//! under the pointer, with nothing on its console; its screenshot is kept in
//! `target/artefacts/`.

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
fn the_report_page_links_only_what_the_run_wrote_and_a_browser_draws_zooms_and_reads_its_charts() {
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

    // nothing the page loads comes from elsewhere: it opens from file:// offline
    for outside in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!page.contains(outside), "the page loads {outside}…");
    }

    let Some(view) = common::browse(&dir.join("report.html"), "report-example-ioprio-deadline")
    else {
        return;
    };
    let body = |k: &str| view.body.get(k).cloned().unwrap_or_default();
    assert!(view.console.is_empty(), "console: {:?}", view.console);
    assert_eq!(body("errors"), "", "script errors");
    assert_eq!(
        body("pictures-loaded"),
        pictures.to_string(),
        "the browser did not load every picture"
    );
    // per run: jobs 2, iostat 4, clat 1, and mq-deadline 3 or pressure 2; overlaid:
    // the 6 kinds both runs have
    assert_eq!(body("charts"), "25");
    let series = body("series");
    for want in [
        "jobs: IOPS: be, idle, rt",
        "jobs: mean latency: be, idle, rt",
        "device (iostat): throughput: r_mib_s, w_mib_s",
        "mq-deadline: queued in the scheduler: rt, be, idle",
        "io.pressure: some avg10: /, be, idle, rt",
        "clat: be, idle, rt",
        "jobs: IOPS: mq-deadline: be, mq-deadline: idle, mq-deadline: rt, none: be, none: idle, none: rt",
    ] {
        assert!(
            series.lines().any(|l| l == want),
            "no chart `{want}` in:\n{series}"
        );
    }
    // a drag across the middle half of the first chart zooms another to that range
    let zoom = body("zoom");
    let (before, after) = zoom.split_once(" -> ").expect("the self-test zoomed");
    assert_eq!(before, "0.00..35.0", "{zoom}");
    let (lo, hi) = after.split_once("..").unwrap();
    let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
    assert!(lo > 5.0 && lo < 12.0 && hi > 23.0 && hi < 30.0, "{zoom}");
    // the pointer at the middle reads the time and every job's IOPS there
    let hover: Vec<String> = body("hover").split(" | ").map(str::to_string).collect();
    assert_eq!(hover.len(), 4, "{hover:?}");
    let t: f64 = hover[0].parse().expect("a time");
    assert!((lo..=hi).contains(&t), "{hover:?}");
    assert!(
        hover[1..].iter().all(|v| v.parse::<f64>().is_ok()),
        "{hover:?}"
    );
    assert!(std::fs::metadata(&view.screenshot).unwrap().len() > 10_000);
    // a link to a view: the page opened at `#t=5..10` shows that range (in the charts
    // drawn first, those in a tall window)
    let dom = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            "--window-size=1280,3000",
            "--dump-dom",
        ])
        .arg(format!(
            "file://{}#t=5..10",
            dir.join("report.html").display()
        ))
        .output()
        .expect("chromium starts");
    let dom = String::from_utf8_lossy(&dom.stdout);
    let body = &dom[dom.find("<body").unwrap_or(0)..][..200.min(dom.len())];
    assert!(
        dom.contains("data-range=\"5.00..10.0\""),
        "not opened at 5..10: {body}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
