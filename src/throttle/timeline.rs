//! blk-throttle's timeline: `throttle.csv`, one line per limited group and direction
//! every sample tick (its queue, what it dispatched in the slice, the slice's jiffies),
//! as a [`TimelineRow`] of the stack's streams. No picture: the jobs' own show the
//! limits.

use super::ThrotlRow;
use crate::blkcg::CgroupTree;
use crate::report::csv_field;
use crate::report::timeline::cg_name;
use crate::stack::stream::{ChartDef, StreamDef, TimelineRow};

/// blk-throttle's stream.
pub static STREAM: StreamDef = StreamDef {
    name: "throttle",
    title: "blk-throttle",
    csv: "throttle.csv",
    header: THROTTLE_CSV_HEADER,
    picture: None,
    charts: &THROTTLE_CHARTS,
};

/// blk-throttle's charts: per group and direction; the slice as its jiffies (a new
/// slice is a step in both lines, an extended one in its end alone).
const THROTTLE_CHARTS: [ChartDef; 4] = [
    ChartDef::new("bios queued", "", &["queued"], &["cgroup", "dir"]),
    ChartDef::new(
        "bytes dispatched in the slice",
        "B",
        &["bytes_disp"],
        &["cgroup", "dir"],
    ),
    ChartDef::new(
        "ios dispatched in the slice",
        "",
        &["ios_disp"],
        &["cgroup", "dir"],
    ),
    ChartDef::new(
        "slice start and end",
        "jiffies",
        &["slice_start_jiffies", "slice_end_jiffies"],
        &["cgroup", "dir"],
    ),
];

impl TimelineRow for ThrotlRow {
    fn stream() -> &'static StreamDef {
        &STREAM
    }
    fn csv(&self, out: &mut String, tree: &CgroupTree) {
        throttle_csv_row(out, self, tree);
    }
}

/// `throttle.csv`'s header: blk-throttle, one line per limited group and direction
/// every sample tick.
const THROTTLE_CSV_HEADER: &str = "t_s,cgroup,dir,queued,bytes_disp,ios_disp,slice_start_jiffies,slice_end_jiffies,disptime_jiffies\n";

/// One line of `throttle.csv`.
fn throttle_csv_row(out: &mut String, r: &ThrotlRow, tree: &CgroupTree) {
    out.push_str(&format!(
        "{:.3},{},{},{},{},{},{},{},{}\n",
        r.t as f64 / 1e9,
        csv_field(&cg_name(tree, r.cg)),
        r.dir.name(),
        r.queued,
        r.bytes_disp,
        r.io_disp,
        r.slice_start,
        r.slice_end,
        r.disptime.map(|d| d.to_string()).unwrap_or_default()
    ));
}
