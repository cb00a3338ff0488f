//! `report.html`: one page a person opens in a browser to explore a run instead of
//! reading its files — the scenario and its description, the A/B table, and per run its
//! summary, its interactive charts, its pictures and links to every file it wrote. The
//! commands that write into DIR themselves (`sweep`, `tune`) get the same kind of page
//! ([`write_command_page`]); `validate` writes its own from the same parts.
//!
//! Design
//! ------
//! The page is written last, at the top of `--output DIR` beside `ab.txt`, after every
//! run's folder is complete, so it links only what is there: a picture is shown when its
//! SVG exists in the run's folder (`DIR/<label>/NAME.svg`, with a link to the PNG), a
//! file is listed when it exists. Everything is relative (the folder can be moved or
//! served as it is) and self-contained: inline CSS and scripts, no fonts, scripts or
//! images from anywhere else, so it opens from `file://` with no network.
//!
//! The charts: each run's data is a JSON document (`report::charts`) in a
//! `<script type="application/json">` beside an empty box; at the end of the page come
//! uPlot (`assets/uplot/`, vendored from its npm package by `scripts/vendor-uplot`) and
//! our script (`assets/report/report.js`), which draws each document into its box,
//! every time chart on one shared time axis. The JSON's every `<` is written `\u003c`
//! (`script_safe`), so no name in it can end its element.
//!
//! Every text that comes from a scenario (its name, description, job and cgroup names
//! inside the summaries) goes through [`escape`]; labels are already plain path
//! components (`outdir::check_label`). Pictures sit in a closed box and load when it
//! is opened (a run of 1,000 cgroups has megabytes of SVG); a short inline script
//! counts those loaded in the body's `data-pictures-loaded` attribute and marks one
//! that failed with a note; a long summary is folded too, so the charts come first.

use std::fmt::Write as _;
use std::path::Path;

use crate::report::charts::Exhibits;
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

/// The most lines of text a page shows unfolded.
pub const FOLD_LINES: usize = 60;

/// One run as the page shows it.
pub struct RunPage<'a> {
    /// The run's folder name under DIR (a checked label).
    pub label: &'a str,
    /// Its summary table, as `summary.txt` holds it.
    pub summary: &'a str,
    /// Its charts' data (`report::charts::run_charts`), when it has any.
    pub charts: Option<&'a str>,
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
.ok{background:#d9f2d9}.near{background:#fff3c4}.off{background:#f8d0d0}\
.chart{margin:1em 0}.chart figcaption{font-weight:bold;color:#333}.note{font-weight:normal;\
color:#777}.u-legend{max-height:9em;overflow-y:auto;display:block;font-size:85%}\
.hint{color:#555;font-size:90%}h3{margin-bottom:.2em}details{margin:1em 0}";

/// uPlot (MIT), vendored from its npm package by `scripts/vendor-uplot`.
const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
/// Our script that draws the charts (`assets/report/report.js`).
const REPORT_JS: &str = include_str!("../../assets/report/report.js");

/// JSON made safe inside a `<script>` element: every `<` (only ever inside a string)
/// as `\u003c`, so no `</script>` or `<!--` from a name ends or bends it.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

/// Loads the pictures of a "Pictures" box when it is opened (their `data-src`: a
/// closed box's images would otherwise all load with the page, megabytes of SVG for a
/// run of 1,000 cgroups), counts those loaded in the body's `data-pictures-loaded`,
/// and marks one that fails with a note. `#selftest` opens every box.
const SCRIPT: &str = "(function(){var n=0;function ok(){n++;document.body.dataset.picturesLoaded=n}\
function bad(i){var p=document.createElement('p');p.className='missing';\
p.textContent='picture not loaded: '+i.dataset.src;i.replaceWith(p)}\
document.querySelectorAll('details').forEach(function(d){d.addEventListener('toggle',function(){\
if(!d.open)return;d.querySelectorAll('img[data-src]').forEach(function(i){\
i.addEventListener('load',ok);i.addEventListener('error',function(){bad(i)});\
i.src=i.dataset.src;i.removeAttribute('data-src')})});\
if(location.hash==='#selftest'){d.open=true}})})();";

/// A page being written: [`Page::new`] opens it with its title and description, the
/// commands add sections, [`Page::finish`] closes it.
pub struct Page {
    html: String,
    /// Whether it holds charts: then it embeds the library and our script.
    charts: bool,
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
        Page {
            html,
            charts: false,
        }
    }

    /// Interactive charts drawn from `json` (a document of `report::charts`: a run's,
    /// or a command's [`Exhibits`]) into a box anchored `id`.
    /// `over_time`: a run's timelines, which share one time axis (else a command's
    /// figures over values, each chart on its own).
    pub fn charts(&mut self, id: &str, label: &str, json: &str, over_time: bool) {
        self.charts = true;
        let hint = if over_time {
            "Drag across a chart to zoom every chart to that time; double-click or \
             <button class=\"whole-run\">whole run</button> to see it all again; hover to \
             read every line at that instant. The address keeps the zoom (<code>#t=A..B</code>): \
             send it to share the view."
        } else {
            "Drag across a chart to zoom it, double-click to see it all again; hover to \
             read every line at that value."
        };
        let _ = writeln!(
            self.html,
            "<p class=\"hint\">{hint}</p>\n\
             <div class=\"charts\" id=\"{id}\"></div>\n\
             <script type=\"application/json\" class=\"run-charts\" data-label=\"{}\" \
             data-target=\"{id}\">{}</script>",
            escape(label),
            script_safe(json)
        );
    }

    /// A section heading; `id` is a checked label or a fixed word, used as the anchor.
    pub fn heading(&mut self, id: &str, text: &str) {
        let _ = writeln!(self.html, "<h2 id=\"{id}\">{}</h2>", escape(text));
    }

    /// Text shown as it is printed on a terminal (escaped).
    pub fn pre(&mut self, text: &str) {
        let _ = writeln!(self.html, "<pre>{}</pre>", escape(text));
    }

    /// Text as [`Page::pre`] does, in a box to open when it is longer than
    /// [`FOLD_LINES`] (a run of 1,000 jobs has a summary of thousands of lines, which
    /// would push its charts out of sight), headed `what`.
    pub fn pre_folded(&mut self, what: &str, text: &str) {
        let lines = text.lines().count();
        if lines <= FOLD_LINES {
            return self.pre(text);
        }
        let _ = writeln!(
            self.html,
            "<details><summary>{} ({lines} lines)</summary><pre>{}</pre></details>",
            escape(what),
            escape(text)
        );
    }

    /// Markup made by our own code, every outside text in it already escaped.
    pub fn markup(&mut self, html: &str) {
        self.html.push_str(html);
    }

    /// A box to open with each of `pictures` (stem, what it shows) whose SVG is in
    /// `dir`, reached from the page as `prefix/STEM.svg` (and `.png`); nothing when
    /// none is there.
    pub fn pictures(&mut self, dir: &Path, prefix: &str, pictures: &[(&str, &str)]) {
        let prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        let mut figures = String::new();
        for (name, what) in pictures {
            if dir.join(format!("{name}.svg")).is_file() {
                let (name, what) = (escape(name), escape(what));
                let _ = writeln!(
                    figures,
                    "<figure><img data-src=\"{prefix}{name}.svg\" alt=\"{name}: {what}\">\
                     <figcaption>{name}: {what} (<a href=\"{prefix}{name}.png\">PNG</a>)\
                     </figcaption></figure>"
                );
            }
        }
        if !figures.is_empty() {
            let _ = writeln!(
                self.html,
                "<details><summary>Pictures (as drawn into the folder)</summary>\n\
                 {figures}</details>"
            );
        }
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
            "<p><small>Written by blkcg-sim {}.</small></p>\n<script>{SCRIPT}</script>\n",
            env!("CARGO_PKG_VERSION")
        );
        if self.charts {
            let _ = write!(
                self.html,
                "<style>{UPLOT_CSS}</style>\n<script>{UPLOT_JS}</script>\n<script>{REPORT_JS}</script>\n"
            );
        }
        self.html.push_str("</body>\n</html>\n");
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
        page.pre_folded("A/B table", ab);
    }
    if runs.len() > 1 && runs.iter().all(|r| r.charts.is_some()) {
        page.heading("overlay", "All runs overlaid");
        page.markup(
            "<p>Each chart with every run's lines, named <code>run: line</code>.</p>\n\
             <div class=\"charts\" id=\"overlay-charts\"></div>\n",
        );
    }
    for r in runs {
        let dir = top.join(r.label);
        page.heading(&format!("run-{}", r.label), r.label);
        page.pre_folded("Summary", r.summary);
        if let Some(json) = r.charts {
            page.charts(&format!("charts-{}", r.label), r.label, json, true);
        }
        let streams = registry::streams().filter_map(|s| s.picture.as_ref());
        let pictures: Vec<(&str, &str)> = RUN_PICTURES
            .iter()
            .copied()
            .chain(streams.map(|p| (p.stem, p.about)))
            .collect();
        page.pictures(&dir, r.label, &pictures);
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

/// `report.html` of a command that writes into DIR itself (`sweep`, `tune`): what it
/// printed, its charts (the interactive twins of its pictures), its pictures (stem,
/// what it shows) and its files, those that are in DIR.
pub fn write_command_page(
    out: &OutDir,
    title: &str,
    text: &str,
    exhibits: &Exhibits,
    pictures: &[(&str, &str)],
    files: &[&str],
) -> Result<(), String> {
    let mut page = Page::new(title, "");
    page.pre_folded("What it printed", text);
    if !exhibits.is_empty() {
        page.charts("charts", "", &exhibits.json(), false);
    }
    page.pictures(out.path(), "", pictures);
    let files: Vec<String> = files
        .iter()
        .filter(|f| out.path().join(f).is_file())
        .map(|f| f.to_string())
        .collect();
    page.files(&files);
    out.write("report.html", &page.finish())
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
                charts: Some(r#"{"names":["</script><b>"]}"#),
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
        // a name in the charts' data cannot close their script element
        assert!(page.contains(r#"{"names":["\u003c/script>\u003cb>"]}"#));
        assert_eq!(page.matches("</script>").count(), 4, "ours only");
    }
}
