//! `blkcg-sim trace split`: a block trace of a whole machine → one v3 iolog per
//! cgroup, and a scenario that replays each in its cgroup.
//!
//! Design
//! ------
//! The idea: only the queue events (`Q`) matter, as for fio's replay: each is one
//! bio as its submitter issued it (before the scheduler, merges or the device).
//! They are read from blkparse's text or from the binary, grouped by who issued them
//! — the cgroup when the trace has one (the tracer's `blk_cgroup` option, printed by
//! blkparse's `%g` as `ino,gen` in hex, where `ino` is the cgroup folder's inode:
//! `stat -c %i /sys/fs/cgroup/PATH`), else the process name, or the pid if asked —
//! and each group becomes a v3 iolog with the trace's times. Every log keeps the
//! trace's one clock: its I/O lines stand at their µs since the trace's first queue
//! event, after `add`/`open` lines at 1 µs, so that replays started together stay as
//! far apart as the trace had them (fio's first line has no delay; the next ones wait
//! their gap to it).
//!
//! Moving parts: [`read_events`] (text or binary, told apart by blktrace's magic; the
//! text's lines by their fields: blkparse's default `%D %2c %8s %5T.%9t %5p %2a %3d`
//! then `sector + blocks [comm]`, with `%g` after the pid when the format has it;
//! other lines — blkparse's closing statistics — are skipped and counted); [`split`]
//! (groups, names, the logs and the scenario's text).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

use super::blktrace;
use super::{BLK_IO_TRACE_MAGIC, LogOp};

/// One queue event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEvent {
    pub time_ns: u64,
    pub pid: u32,
    /// The cgroup id (`ino | gen << 32`), when the trace recorded it.
    pub cgroup: Option<u64>,
    pub op: LogOp,
    pub sector: u64,
    pub bytes: u64,
    /// The process name, when the line (or a process note) gives it.
    pub comm: Option<String>,
}

/// What groups the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// The cgroup if the trace has it, else the process name.
    Auto,
    Cgroup,
    Comm,
    Pid,
}

/// The events of a trace and what was skipped reading it.
#[derive(Debug, Default)]
pub struct Events {
    pub events: Vec<QueueEvent>,
    /// Lines of text that are no event (blkparse's statistics, blank lines).
    pub other_lines: u64,
}

/// Reads the queue events of trace `name` from `r`: blkparse text or a binary.
pub fn read_events(name: &str, mut r: impl BufRead) -> Result<Events, String> {
    let head = r.fill_buf().map_err(|e| format!("{name}: {e}"))?;
    let binary = head.get(..4).is_some_and(|m| {
        let m = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
        m & 0xffff_ff00 == BLK_IO_TRACE_MAGIC || m.swap_bytes() & 0xffff_ff00 == BLK_IO_TRACE_MAGIC
    });
    if binary {
        binary_events(name, r)
    } else {
        text_events(name, r)
    }
}

fn binary_events(name: &str, r: impl BufRead) -> Result<Events, String> {
    let mut out = Events::default();
    let mut comms: BTreeMap<u32, String> = BTreeMap::new();
    blktrace::records(name, r, |_, t| {
        if let Some(c) = t.comm {
            comms.insert(t.pid, c);
        } else if blktrace::is_queue(t.action) {
            out.events.push(QueueEvent {
                time_ns: t.time,
                pid: t.pid,
                cgroup: t.cgroup,
                op: blktrace::queue_op(t.action),
                sector: t.sector,
                bytes: u64::from(t.bytes),
                comm: None,
            });
        }
        Ok(())
    })?;
    for e in &mut out.events {
        e.comm = comms.get(&e.pid).cloned();
    }
    Ok(out)
}

/// blkparse's `rwbs` of a queue event → what it is (`fill_rwbs()`: F for a preflush
/// first, then D discard, W write, R read, N none).
fn rwbs_op(rwbs: &str) -> Option<LogOp> {
    let rest = rwbs.strip_prefix('F');
    match rest.unwrap_or(rwbs).chars().next() {
        _ if rest.is_some() => Some(LogOp::Sync),
        Some('D') => Some(LogOp::Trim),
        Some('W') => Some(LogOp::Write),
        Some('R') => Some(LogOp::Read),
        Some('N') => Some(LogOp::Sync),
        _ => None,
    }
}

/// `SECONDS.NANOSECONDS` as blkparse prints `%5T.%9t`.
fn time_ns(t: &str) -> Option<u64> {
    let (s, ns) = t.split_once('.')?;
    if ns.is_empty() || ns.len() > 9 || !ns.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: u64 = ns.parse().ok()?;
    s.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(frac * 10u64.pow(9 - ns.len() as u32))
}

/// blkparse's `%g`: `ino,gen` in hex.
fn cgroup_id(t: &str) -> Option<u64> {
    let (ino, gen_) = t.split_once(',')?;
    let ino = u32::from_str_radix(ino, 16).ok()?;
    let gen_ = u32::from_str_radix(gen_, 16).ok()?;
    Some(u64::from(ino) | u64::from(gen_) << 32)
}

/// One line of blkparse text: its queue event, `Ok(None)` for another event, `Err`
/// for a line that is no event at all.
fn text_event(line: &str) -> Result<Option<QueueEvent>, ()> {
    let tok: Vec<&str> = line.split_whitespace().collect();
    // MAJ,MIN CPU SEQ TIME PID [CGROUP] ACTION RWBS ...
    let dev_ok = tok
        .first()
        .and_then(|d| d.split_once(','))
        .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok());
    if tok.len() < 7 || !dev_ok {
        return Err(());
    }
    let time = time_ns(tok[3]).ok_or(())?;
    let pid: u32 = tok[4].parse().map_err(|_| ())?;
    let (cgroup, at) = match cgroup_id(tok[5]) {
        Some(id) => (Some(id), 6),
        None => (None, 5),
    };
    let (Some(&action), Some(&rwbs)) = (tok.get(at), tok.get(at + 1)) else {
        return Err(());
    };
    if action != "Q" {
        return Ok(None);
    }
    let op = rwbs_op(rwbs).ok_or(())?;
    let mut rest = tok[at + 2..].iter().copied().peekable();
    let mut sector = 0;
    let mut blocks = 0;
    if let Some(s) = rest.peek().and_then(|s| s.parse::<u64>().ok()) {
        sector = s;
        rest.next();
        if rest.peek() == Some(&"+") {
            rest.next();
        }
        if let Some(n) = rest.peek().and_then(|n| n.parse::<u64>().ok()) {
            blocks = n;
            rest.next();
        }
    }
    let comm: Vec<&str> = rest.collect();
    let comm = comm.join(" ");
    let comm = comm.trim_start_matches('[').trim_end_matches(']');
    Ok(Some(QueueEvent {
        time_ns: time,
        pid,
        cgroup,
        op,
        sector,
        bytes: blocks.saturating_mul(512),
        comm: (!comm.is_empty()).then(|| comm.to_string()),
    }))
}

fn text_events(name: &str, mut r: impl BufRead) -> Result<Events, String> {
    let mut out = Events::default();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)
            .map_err(|e| format!("{name}: {e}"))?
            == 0
        {
            break;
        }
        match text_event(&String::from_utf8_lossy(&buf)) {
            Ok(Some(e)) => out.events.push(e),
            Ok(None) => {}
            Err(()) => out.other_lines += 1,
        }
    }
    Ok(out)
}

/// What `split` makes: files (name, text) and a report of what went where.
#[derive(Debug)]
pub struct Split {
    pub files: Vec<(String, String)>,
    pub report: String,
}

/// A group's key as `--map` names it.
fn group_key(e: &QueueEvent, by: GroupBy) -> String {
    match by {
        GroupBy::Cgroup | GroupBy::Auto if e.cgroup.is_some() => {
            let id = e.cgroup.unwrap_or(0);
            format!("{:x},{:x}", id as u32, id >> 32)
        }
        GroupBy::Pid => e.pid.to_string(),
        _ => e.comm.clone().unwrap_or_else(|| format!("pid{}", e.pid)),
    }
}

/// Whether `--map` key `k` names group `key` (a cgroup also by its inode, decimal as
/// `stat -c %i` prints it or `0x` hex).
fn map_names(k: &str, key: &str) -> bool {
    if k == key {
        return true;
    }
    let Some(id) = cgroup_id(key) else {
        return false;
    };
    let ino = id as u32;
    let parsed = match k.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => k.parse::<u32>().ok(),
    };
    parsed == Some(ino)
}

/// A cgroup path made of a group key: letters, digits, `-` and `_` (what a cgroup
/// folder's name may safely be).
fn cgroup_name(key: &str) -> String {
    let s: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("t-{s}")
}

/// Split `events` of trace `name` into one v3 log per group and a scenario replaying
/// each in its cgroup on `device` (a `[device]` table), at `iodepth` each.
pub fn split(
    name: &str,
    ev: &Events,
    by: GroupBy,
    map: &[(String, String)],
    device: toml::Table,
    iodepth: u32,
) -> Result<Split, String> {
    if ev.events.is_empty() {
        return Err(format!(
            "{name}: no queue event (`Q`) in it; give blkparse's text (its default output, \
             or `-f` with `%D %2c %8s %5T.%9t %5p %2a %3d` first and `%g` after the pid for \
             cgroups) or the binary (`blkparse -d` output, or a `*.blktrace.N` file)"
        ));
    }
    let by = match by {
        GroupBy::Auto if ev.events.iter().any(|e| e.cgroup.is_some()) => GroupBy::Cgroup,
        GroupBy::Auto => GroupBy::Comm,
        GroupBy::Cgroup if ev.events.iter().all(|e| e.cgroup.is_none()) => {
            return Err(format!(
                "{name}: no event carries a cgroup (trace with `echo 1 > \
                 /sys/kernel/tracing/options/blk_cgroup`, print it with blkparse's `%g`); \
                 split by comm or pid instead"
            ));
        }
        b => b,
    };
    let t0 = ev.events.iter().map(|e| e.time_ns).min().unwrap_or(0);
    let mut groups: BTreeMap<String, Vec<&QueueEvent>> = BTreeMap::new();
    for e in &ev.events {
        groups.entry(group_key(e, by)).or_default().push(e);
    }
    for (k, _) in map {
        if !groups.keys().any(|g| map_names(k, g)) {
            return Err(format!(
                "--map {k}=...: no group `{k}` in {name}; its groups: {}",
                groups.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let mut files = Vec::new();
    let mut report = String::new();
    let mut scenario = toml::Table::new();
    scenario.insert("name".into(), format!("replay of {name}").into());
    scenario.insert(
        "description".into(),
        format!(
            "Made by `blkcg-sim trace split` from {name}: {} queue events in {} groups (by \
             {by:?}), each replayed by fio in its cgroup with the trace's times. The device \
             is yours to choose; iodepth bounds what each may have in flight.",
            ev.events.len(),
            groups.len()
        )
        .into(),
    );
    scenario.insert("seed".into(), 1.into());
    let mut max_end = 0u64;
    let mut cgroups = toml::Table::new();
    let mut used = Vec::new();
    for (key, events) in &groups {
        let path = map
            .iter()
            .find(|(k, _)| map_names(k, key))
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| cgroup_name(key));
        crate::blkcg::tree::check_path(&path).map_err(|m| format!("--map {key}={path}: {m}"))?;
        if used.contains(&path) {
            return Err(format!(
                "--map: two groups go to cgroup `{path}`; a cgroup replays one log"
            ));
        }
        used.push(path.clone());
        let file = format!("{}.log", path.replace('/', "-"));
        let dev = "/dev/replay";
        let mut log = format!("{}1 {dev} add\n1 {dev} open\n", super::v3_header());
        let (mut reads, mut writes, mut other) = (0u64, 0u64, 0u64);
        let mut last = 1;
        for e in events {
            let us = 1 + (e.time_ns - t0) / 1000;
            last = us;
            let (action, io) = match e.op {
                LogOp::Read => ("read", true),
                LogOp::Write => ("write", true),
                LogOp::Trim => ("trim", true),
                _ => ("sync", false),
            };
            match e.op {
                LogOp::Read => reads += 1,
                LogOp::Write => writes += 1,
                _ => other += 1,
            }
            if io {
                let offset = e.sector.saturating_mul(512);
                max_end = max_end.max(offset.saturating_add(e.bytes));
                let _ = writeln!(log, "{us} {dev} {action} {offset} {}", e.bytes);
            } else {
                let _ = writeln!(log, "{us} {dev} {action} 0 0");
            }
        }
        let _ = writeln!(log, "{} {dev} close", last + 1);
        let _ = writeln!(
            report,
            "{key:<16} → cgroup {path:<20} {file}: {reads} reads, {writes} writes, {other} \
             other"
        );
        let mut cg = toml::Table::new();
        cg.insert(
            "fio".into(),
            format!(
                "fio --name={path} --read_iolog={file} --ioengine=libaio --direct=1 \
                 --iodepth={iodepth}"
            )
            .into(),
        );
        cgroups.insert(path, cg.into());
        files.push((file, log));
    }
    let mut device = device;
    if device.get("model").and_then(|m| m.as_str()) == Some("nullb") && !device.contains_key("size")
    {
        // null_blk's size is in MiB: at least the trace's reach
        let mib = max_end.div_ceil(1 << 20).max(1);
        if mib > 250 << 10 {
            device.insert("size".into(), (mib as i64).into());
        }
    }
    scenario.insert("device".into(), device.into());
    scenario.insert("cgroup".into(), cgroups.into());
    let text = toml::to_string(&scenario).map_err(|e| e.to_string())?;
    files.push(("scenario.toml".into(), text));
    if ev.other_lines > 0 {
        let _ = writeln!(
            report,
            "({} lines of {name} are no event — blkparse's statistics — and were skipped)",
            ev.other_lines
        );
    }
    Ok(Split { files, report })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blkparse_lines_are_read_with_and_without_a_cgroup() {
        let q = text_event("  8,16   1       17     0.000123456  4242  Q  WS 2048 + 16 [postgres]")
            .unwrap()
            .unwrap();
        assert_eq!(
            (q.time_ns, q.pid, q.cgroup, q.op, q.sector, q.bytes),
            (123_456, 4242, None, LogOp::Write, 2048, 8192)
        );
        assert_eq!(q.comm.as_deref(), Some("postgres"));
        let q = text_event("8,0 0 3 1.5 77 1a2b,0 Q R 8 + 8 [fio]")
            .unwrap()
            .unwrap();
        assert_eq!(q.cgroup, Some(0x1a2b));
        assert_eq!(q.time_ns, 1_500_000_000);
        let f = text_event("8,0 0 4 1.6 77 Q FWS [jbd2/sda1-8]")
            .unwrap()
            .unwrap();
        assert_eq!((f.op, f.bytes), (LogOp::Sync, 0));
        assert_eq!(text_event("8,0 0 5 1.7 77 C R 8 + 8 [0]").unwrap(), None);
        assert!(text_event("CPU0 (8,0):").is_err());
        assert!(text_event(" Reads Queued:           5,       20KiB").is_err());
    }

    #[test]
    fn groups_keep_one_clock_and_map_by_inode() {
        let ev = |t: u64, cg: u64, s: u64| QueueEvent {
            time_ns: t,
            pid: 1,
            cgroup: Some(cg),
            op: LogOp::Read,
            sector: s,
            bytes: 4096,
            comm: None,
        };
        let events = Events {
            events: vec![
                ev(5_000_000, 0x10, 0),
                ev(7_000_000, 0x20, 8),
                ev(9_000_000, 0x10, 16),
            ],
            other_lines: 0,
        };
        let map = [("16".to_string(), "web/frontend".to_string())];
        let table = crate::scenario::spec::parse_device_spec("nullb").unwrap();
        let s = split("t", &events, GroupBy::Auto, &map, table, 8).unwrap();
        let names: Vec<&str> = s.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["web-frontend.log", "t-20_0.log", "scenario.toml"]);
        let web = &s.files[0].1;
        assert!(
            web.contains("\n1 /dev/replay read 0 4096\n4001 /dev/replay read 8192 4096\n"),
            "{web}"
        );
        assert!(s.files[1].1.contains("\n2001 /dev/replay read 4096 4096\n"));
        let sc = &s.files[2].1;
        assert!(
            sc.contains("[cgroup.\"web/frontend\"]")
                && sc.contains("--read_iolog=web-frontend.log"),
            "{sc}"
        );
        let e = split(
            "t",
            &events,
            GroupBy::Auto,
            &[("99".into(), "x".into())],
            toml::Table::new(),
            8,
        )
        .unwrap_err();
        assert!(
            e.contains("no group `99`") && e.contains("10,0, 20,0"),
            "{e}"
        );
    }
}
