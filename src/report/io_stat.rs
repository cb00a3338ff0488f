//! The `io.stat` text of a run: blk-cgroup's own counters (`blkcg_print_one_stat()`:
//! rbytes, wbytes, rios, wios, dbytes, dios), summed up the tree as the kernel's
//! recursive stats are, then every policy's keys for the cgroup (`pd_stat_fn`, through
//! `crate::stack::BlkcgPolicy::pd_stat`); and the `io.pressure` text of every cgroup
//! (`crate::psi`) in the same shape.

use crate::blkcg::CgroupTree;
use crate::device::QueueLimits;
use crate::sim::engine::RunOutput;

/// `io.stat` of every cgroup whose subtree did I/O: cgroup v2 counts are hierarchical
/// (a cgroup's line includes its descendants', `blkcg_rstat_flush()`), as are the
/// iocost keys; the root's are the whole disk's (`blkcg_fill_root_iostats()`).
pub fn io_stat_text(out: &mut RunOutput, tree: &CgroupTree, limits: &QueueLimits) -> String {
    let mut sums = out.cg_stat.clone();
    // a parent's index is below its children's: descending order is bottom-up
    for i in (1..sums.len().min(tree.nodes.len())).rev() {
        if let Some(p) = tree.nodes[i].parent {
            let c = sums[i];
            let ps = &mut sums[p as usize];
            ps.rbytes += c.rbytes;
            ps.wbytes += c.wbytes;
            ps.rios += c.rios;
            ps.wios += c.wios;
        }
    }
    let mut s = String::new();
    for (i, st) in sums.iter().enumerate() {
        if st.rios + st.wios == 0 {
            continue;
        }
        let path = &tree.nodes[i].path;
        s.push_str(&format!(
            "{}: {}:{} rbytes={} wbytes={} rios={} wios={} dbytes=0 dios=0{}\n",
            if path.is_empty() { "/" } else { path },
            limits.major,
            limits.minor,
            st.rbytes,
            st.wbytes,
            st.rios,
            st.wios,
            out.stack.pd_stat(i as u32)
        ));
    }
    s
}

/// `io.pressure` of every cgroup at the end of the run, the root's first (the system's,
/// `/proc/pressure/io`), each of the file's two lines after the cgroup's path.
pub fn io_pressure_text(out: &RunOutput, tree: &CgroupTree) -> String {
    let mut s = String::new();
    for (i, text) in out.pressure.iter().enumerate() {
        let path = tree.nodes.get(i).map_or("", |n| n.path.as_str());
        for line in text.lines() {
            s.push_str(&format!(
                "{}: {line}\n",
                if path.is_empty() { "/" } else { path }
            ));
        }
    }
    s
}
