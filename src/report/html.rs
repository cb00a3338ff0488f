//! `report.html`: one page a person opens in a browser to look at a run instead of
//! reading its files — the scenario and its description, the A/B table, and per run its
//! summary, its pictures and links to every file it wrote.
//!
//! Design
//! ------
//! The page is written last, at the top of `--output DIR` beside `ab.txt`, after every
//! run's folder is complete, so it links only what is there: a picture is shown when its
//! SVG exists in the run's folder (`DIR/<label>/NAME.svg`, with a link to the PNG), a
//! file is listed when it exists. Everything is relative (the folder can be moved or
//! served as it is) and self-contained: inline CSS, no fonts, scripts or images from
//! anywhere else. Every text that comes from a scenario (its name, description, job and
//! cgroup names inside the summaries) goes through [`escape`]; labels are already plain
//! path components (`outdir::check_label`). A short inline script marks each picture
//! that failed to load with a note and counts the loaded ones in the body's
//! `data-pictures-loaded` attribute, which the browser test reads.

use std::fmt::Write as _;
use std::path::Path;

use crate::report::outdir::{OutDir, owned};
use crate::stack::registry;

/// The pictures every run may have, in the order shown, with what each one shows;
/// each policy's and elevator's follow (their streams' `PictureDef`).
const RUN_PICTURES: &[(&str, &str)] = &[
    ("jobs", "each job's IOPS and latency over time"),
    ("clat", "completion-latency percentiles per job"),
    ("iostat", "device throughput over time"),
];

/// Prose from a scenario as HTML: escaped, and `code` in backticks as `<code>`, the way
/// the descriptions are written.
fn prose(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape(s.trim()).split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

/// One run as the page shows it.
pub struct RunPage<'a> {
    /// The run's folder name under DIR (a checked label).
    pub label: &'a str,
    /// Its summary table, as `summary.txt` holds it.
    pub summary: &'a str,
}

/// `s` with `& < > " '` replaced by entities, so no text of a scenario becomes markup.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:80em;padding:0 1em;\
color:#222}pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:90%}\
figure{margin:1.5em 0}figure img{max-width:100%;border:1px solid #ddd}\
figcaption{color:#555;font-size:90%}.missing{color:#a00}nav a{margin-right:1em}\
h2{border-bottom:1px solid #ccc;padding-bottom:.2em}\
table{border-collapse:collapse;margin:1em 0}th,td{padding:.15em .7em;text-align:right}\
th{border-bottom:1px solid #999}td:first-child,th:first-child{text-align:left}\
.ok{background:#d9f2d9}.near{background:#fff3c4}.off{background:#f8d0d0}";

const SCRIPT: &str = "window.addEventListener('load',function(){var n=0;\
document.querySelectorAll('figure img').forEach(function(i){\
if(i.complete&&i.naturalWidth>0){n++}else{var p=document.createElement('p');\
p.className='missing';p.textContent='picture not loaded: '+i.getAttribute('src');\
i.replaceWith(p)}});document.body.dataset.picturesLoaded=n;});";

/// A page being written: [`Page::new`] opens it with its title and description, the
/// commands add sections, [`Page::finish`] closes it.
pub struct Page {
    html: String,
}

impl Page {
    /// A page headed `title` (escaped) with `description` (scenario prose) below it.
    pub fn new(title: &str, description: &str) -> Page {
        let title = escape(title);
        let mut html = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>blkcg-sim: {title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
             <h1>{title}</h1>\n"
        );
        if !description.is_empty() {
            let _ = writeln!(html, "<p>{}</p>", prose(description));
        }
        Page { html }
    }

    /// A section heading; `id` is a checked label or a fixed word, used as the anchor.
    pub fn heading(&mut self, id: &str, text: &str) {
        let _ = writeln!(self.html, "<h2 id=\"{id}\">{}</h2>", escape(text));
    }

    /// Text shown as it is printed on a terminal (escaped).
    pub fn pre(&mut self, text: &str) {
        let _ = writeln!(self.html, "<pre>{}</pre>", escape(text));
    }

    /// Markup made by our own code, every outside text in it already escaped.
    pub fn markup(&mut self, html: &str) {
        self.html.push_str(html);
    }

    /// A paragraph linking `files` (relative paths that exist; escaped, since a name
    /// read back from the folder may be one we did not make).
    pub fn files(&mut self, files: &[String]) {
        self.html.push_str("<p>Files: ");
        for (i, f) in files.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let f = escape(f);
            let _ = write!(self.html, "{sep}<a href=\"{f}\">{f}</a>");
        }
        self.html.push_str("</p>\n");
    }

    /// The page's text, closed.
    pub fn finish(mut self) -> String {
        let _ = write!(
            self.html,
            "<p><small>Written by blkcg-sim {}.</small></p>\n<script>{SCRIPT}</script>\n\
             </body>\n</html>\n",
            env!("CARGO_PKG_VERSION")
        );
        self.html
    }
}

/// The page for the runs of one `run` command whose folders are under `top`.
pub fn report_page(
    top: &Path,
    scenario: &str,
    description: &str,
    ab: Option<&str>,
    runs: &[RunPage],
) -> String {
    let mut page = Page::new(scenario, description);
    if runs.len() > 1 {
        let mut nav = String::from("<nav>");
        for r in runs {
            let _ = write!(nav, "<a href=\"#run-{0}\">{0}</a>", r.label);
        }
        nav.push_str("</nav>\n");
        page.markup(&nav);
    }
    if let Some(ab) = ab {
        page.heading("ab", "A/B");
        page.markup(
            "<p>Each job's figures in every run beside the first run's \
             (<a href=\"ab.txt\">ab.txt</a>).</p>\n",
        );
        page.pre(ab);
    }
    for r in runs {
        let dir = top.join(r.label);
        page.heading(&format!("run-{}", r.label), r.label);
        page.pre(r.summary);
        let streams = registry::streams().filter_map(|s| s.picture.as_ref());
        let pictures = RUN_PICTURES
            .iter()
            .copied()
            .chain(streams.map(|p| (p.stem, p.about)));
        for (name, what) in pictures {
            if dir.join(format!("{name}.svg")).is_file() {
                page.markup(&format!(
                    "<figure><img src=\"{0}/{1}.svg\" alt=\"{1}: {2}\" loading=\"lazy\">\
                     <figcaption>{1}: {2} (<a href=\"{0}/{1}.png\">PNG</a>)</figcaption>\
                     </figure>\n",
                    r.label, name, what
                ));
            }
        }
        let files: Vec<String> = owned()
            .iter()
            .filter(|f| !f.ends_with(".png") && !f.ends_with(".svg"))
            .filter(|f| dir.join(f).is_file())
            .map(|f| format!("{}/{f}", r.label))
            .collect();
        page.files(&files);
    }
    page.finish()
}

/// Write `report.html` at the top of the output folder.
pub fn write_report(
    top: &OutDir,
    scenario: &str,
    description: &str,
    ab: Option<&str>,
    runs: &[RunPage],
) -> Result<(), String> {
    top.write(
        "report.html",
        &report_page(top.path(), scenario, description, ab, runs),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_text_never_becomes_markup() {
        assert_eq!(
            escape(r#"<script>"a" & 'b'</script>"#),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
        let page = report_page(
            Path::new("/nonexistent"),
            "x<y",
            "a <b>bold</b> claim",
            Some("A & B"),
            &[RunPage {
                label: "default",
                summary: "cg/<job>",
            }],
        );
        assert!(page.contains("<h1>x&lt;y</h1>"));
        assert!(page.contains("a &lt;b&gt;bold&lt;/b&gt; claim"));
        assert_eq!(
            prose("set `io.max` <here>"),
            "set <code>io.max</code> &lt;here&gt;"
        );
        assert!(page.contains("A &amp; B"));
        assert!(page.contains("cg/&lt;job&gt;"));
        // nothing exists there: no picture, no file linked
        assert!(!page.contains("<figure>"));
        assert!(page.contains("<p>Files: </p>"));
        assert!(page.contains("<h2 id=\"ab\">A/B</h2>"));
    }
}
