//! A blktrace binary as fio's `read_blktrace()` (blktrace.c) replays it: 48-byte
//! `struct blk_io_trace` records (`blktrace_api.h`), each followed by `pdu_len` bytes
//! of payload; only queue events (`__BLK_TA_QUEUE`) become entries, each delayed by its
//! gap in ns to the queue event before; discards are trims, flushes syncs, the rest a
//! write when the write bit is set, else a read. Every non-notify event also feeds
//! fio's depth probe: queued less merged since the direction's last completion, the
//! most seen (at most 1024), which becomes `iodepth` when the job sets none.
//!
//! The byte order is the first record's (fio swaps when the magic reads backwards);
//! here both orders are read explicitly, so the result is the same on any host.
//!
//! [`records`] walks a trace's records for both readers of a binary: the replay
//! ([`read`]) and `trace split` (`super::split`), which also wants each event's pid,
//! its cgroup (the first 8 bytes of the payload when the tracer's `blk_cgroup` option
//! set `__BLK_TA_CGROUP` in the action's low half, `kernel/trace/blktrace.c`) and the
//! process names of the `__BLK_TN_PROCESS` notes.

use std::io::{BufRead, Read};

use super::{BLK_IO_TRACE_MAGIC, IoLog, LogEntry, LogOp, ReplayOpts};

/// `BLK_IO_TRACE_VERSION`.
const VERSION: u32 = 7;
/// `sizeof(struct blk_io_trace)`.
const RECORD: usize = 48;

// the category bits of `action`'s high half (`BLK_TC_*`, shifted: `BLK_TC_ACT()`)
const TC_READ: u32 = 1 << 16;
const TC_WRITE: u32 = 1 << 17;
const TC_FLUSH: u32 = 1 << 18;
const TC_NOTIFY: u32 = 1 << 26;
const TC_DISCARD: u32 = 1 << 29;
// action codes (`__BLK_TA_*`)
const TA_QUEUE: u32 = 1;
const TA_BACKMERGE: u32 = 2;
const TA_FRONTMERGE: u32 = 3;
const TA_COMPLETE: u32 = 8;
/// The probe's cap ("stacked devices may not emit COMPLETE").
const MAX_PROBED_DEPTH: i64 = 1024;

/// One record, as far as the readers look.
pub(super) struct Record {
    pub(super) time: u64,
    pub(super) sector: u64,
    pub(super) bytes: u32,
    /// The action, the cgroup flag taken out.
    pub(super) action: u32,
    pub(super) pid: u32,
    pub(super) device: u32,
    /// The cgroup id `blk_cgroup` added (`cgroup_id()`: the cgroup folder's inode).
    pub(super) cgroup: Option<u64>,
    /// A `__BLK_TN_PROCESS` note's process name.
    pub(super) comm: Option<String>,
}

/// `__BLK_TA_CGROUP`: the event carries its cgroup id first in its payload.
const TA_CGROUP: u32 = 1 << 8;
/// `__BLK_TN_PROCESS`: a notify naming a pid's process.
const TN_PROCESS: u32 = 0;

/// Each record of the trace `r` (named `name` in errors) to `each`, with its number
/// from 1; how many there were. A short last record ends the trace, as fio's `fread()`
/// at EOF does; a bad magic or version is an error (fio's too).
pub(super) fn records(
    name: &str,
    mut r: impl BufRead,
    mut each: impl FnMut(usize, Record) -> Result<(), String>,
) -> Result<usize, String> {
    let mut big = None;
    let mut n = 0usize;
    let mut b = [0u8; RECORD];
    let mut pdu = Vec::new();
    loop {
        match r.read_exact(&mut b) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(format!("{name}: {e}")),
        }
        n += 1;
        let big = *big.get_or_insert_with(|| {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0xffff_ff00 != BLK_IO_TRACE_MAGIC
        });
        let u32_at = |o: usize| {
            let a = [b[o], b[o + 1], b[o + 2], b[o + 3]];
            if big {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            if big {
                u64::from_be_bytes(a)
            } else {
                u64::from_le_bytes(a)
            }
        };
        let magic = u32_at(0);
        if magic & 0xffff_ff00 != BLK_IO_TRACE_MAGIC {
            return Err(format!(
                "{name}: record {n} (byte {}): bad magic {magic:#x}: not a blktrace record",
                (n - 1) * RECORD
            ));
        }
        if magic & 0xff != VERSION {
            return Err(format!(
                "{name}: record {n}: blktrace version {} (fio reads version {VERSION})",
                magic & 0xff
            ));
        }
        let pdu_len = if big {
            u16::from_be_bytes([b[46], b[47]])
        } else {
            u16::from_le_bytes([b[46], b[47]])
        };
        pdu.clear();
        (&mut r)
            .take(u64::from(pdu_len))
            .read_to_end(&mut pdu)
            .map_err(|e| format!("{name}: {e}"))?;
        let raw = u32_at(28);
        let action = raw & !TA_CGROUP;
        let (cgroup, rest) = match pdu.split_first_chunk::<8>() {
            Some((id, rest)) if raw & TA_CGROUP != 0 => Some(if big {
                (u64::from_be_bytes(*id), rest)
            } else {
                (u64::from_le_bytes(*id), rest)
            }),
            _ => None,
        }
        .map_or((None, &pdu[..]), |(id, rest)| (Some(id), rest));
        let comm = (action & TC_NOTIFY != 0 && action & 0xffff == TN_PROCESS).then(|| {
            let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
            String::from_utf8_lossy(&rest[..end]).into_owned()
        });
        each(
            n,
            Record {
                time: u64_at(8),
                sector: u64_at(16),
                bytes: u32_at(24),
                action,
                pid: u32_at(32),
                device: u32_at(36),
                cgroup,
                comm,
            },
        )?;
    }
    Ok(n)
}

/// What an I/O queue event is: a trim, a sync (a flush), a write when the write bit is
/// set, else a read (`handle_trace_discard()`, `_flush()`, `_fs()`).
pub(super) fn queue_op(action: u32) -> LogOp {
    if action & TC_DISCARD != 0 {
        LogOp::Trim
    } else if action & TC_FLUSH != 0 {
        LogOp::Sync
    } else if action & TC_WRITE != 0 {
        LogOp::Write
    } else {
        LogOp::Read
    }
}

/// Whether a record is an I/O's queue event (`__BLK_TA_QUEUE`, not a note).
pub(super) fn is_queue(action: u32) -> bool {
    action & 0xffff == TA_QUEUE && action & TC_NOTIFY == 0
}

/// The direction of an event for the depth probe (`t_get_ddir()`).
fn probe_dir(action: u32) -> Option<usize> {
    if action & TC_READ != 0 {
        Some(0)
    } else if action & TC_WRITE != 0 {
        Some(1)
    } else if action & TC_DISCARD != 0 {
        Some(2)
    } else {
        None
    }
}

pub(super) fn read(name: &str, r: impl BufRead, o: &ReplayOpts) -> Result<IoLog, String> {
    let mut log = IoLog {
        timed: !o.no_stall,
        ..IoLog::default()
    };
    let mut last_time = 0u64;
    let mut this_depth = [0i64; 3];
    let mut depth = [0i64; 3];
    let mut ios = [0u64; 3];
    let mut devices: Vec<u32> = Vec::new();
    let mut zero_bytes = 0u64;
    let mut with_cgroup = 0u64;
    let n = records(name, r, |n, t| {
        let notify = t.action & TC_NOTIFY != 0;
        let code = t.action & 0xffff;
        if t.cgroup.is_some() {
            // fio compares the whole low half with the action codes: an event with
            // blk_cgroup's flag is none of them (not queued, not probed)
            with_cgroup += u64::from(code == TA_QUEUE);
            return Ok(());
        }
        if !notify && let Some(d) = probe_dir(t.action) {
            match code {
                TA_QUEUE => this_depth[d] += 1,
                TA_BACKMERGE | TA_FRONTMERGE => this_depth[d] -= 1,
                TA_COMPLETE => {
                    depth[d] = depth[d].max(this_depth[d]);
                    this_depth[d] = 0;
                }
                _ => {}
            }
        }
        if !is_queue(t.action) {
            return Ok(());
        }
        let delay_ns = o.gap(last_time, t.time);
        last_time = t.time;
        let bytes = if o.align > 0 {
            u64::from(t.bytes).next_multiple_of(o.align)
        } else {
            u64::from(t.bytes)
        };
        let op = queue_op(t.action);
        if o.skips(op) {
            return Ok(());
        }
        if op != LogOp::Sync && bytes == 0 {
            zero_bytes += 1;
            return Ok(());
        }
        if !devices.contains(&t.device) {
            devices.push(t.device);
        }
        let len = u32::try_from(bytes).map_err(|_| {
            format!("{name}: record {n}: {bytes} bytes in one event (at most 4 GiB)")
        })?;
        let (offset, len) = if op == LogOp::Sync {
            (0, 0)
        } else {
            (o.offset(t.sector.saturating_mul(512)), len)
        };
        match op {
            LogOp::Trim => {
                log.trims += 1;
                ios[2] += 1;
            }
            LogOp::Read | LogOp::Write => {
                ios[usize::from(op == LogOp::Write)] += 1;
                log.saw_io(offset, u64::from(len), n);
            }
            _ => {}
        }
        log.entries.push(LogEntry {
            delay_us: delay_ns / 1000,
            offset,
            len,
            op,
        });
        Ok(())
    })?;
    if n == 0 {
        return Err(format!("{name}: no blktrace record in it"));
    }
    if with_cgroup > 0 {
        let what = format!(
            "{with_cgroup} queue events carry blk_cgroup's cgroup id (the tracer's \
             blk_cgroup option was on), which fio does not take for queue events"
        );
        if log.entries.is_empty() {
            return Err(format!(
                "{name}: {what}: fio finds no I/O in it; split it per cgroup with \
                 `blkcg-sim trace split {name} --output DIR` and replay those logs"
            ));
        }
        log.warnings
            .push(format!("{name}: {what}: left out, as fio leaves them"));
    }
    if !o.chunked {
        // fio caps and floors each direction's depth, then takes the deepest
        let probed = (0..3)
            .map(|d| {
                let v = depth[d].min(MAX_PROBED_DEPTH);
                if v <= 0 && ios[d] > 0 { 1 } else { v.max(0) }
            })
            .max()
            .unwrap_or(0);
        log.depth = (probed > 0).then_some(probed as u32);
    }
    if zero_bytes > 0 {
        log.warnings.push(format!(
            "{name}: {zero_bytes} queue events of 0 bytes ignored, as fio ignores them"
        ));
    }
    let devices = devices
        .iter()
        .map(|d| format!("{}:{}", d >> 20, d & 0xf_ffff));
    log.all_one_device(name, "devices", devices.collect());
    Ok(log)
}

/// `merge_blktrace_iologs()`: each trace's I/O queue events (reads, writes and
/// discards; flushes, notes and events with blk_cgroup's flag left out, as fio's
/// `read_trace()` leaves them) at `time × scalar / 100`, iteration `i` of a trace
/// played again after its last event (`(time + i × last) × scalar / 100`), all merged
/// by time — the earlier trace first on a tie — into one little-endian trace without
/// payloads. fio's own merge also writes a repeated trace's last event twice and
/// scales its later passes twice; neither is copied.
pub(super) fn merge(
    traces: Vec<(String, impl BufRead)>,
    scalars: &[u64],
    iters: &[u64],
) -> Result<Vec<u8>, String> {
    // (time, trace, iteration, record bytes)
    let mut all: Vec<(u64, usize, u64, [u8; RECORD])> = Vec::new();
    for (k, (name, r)) in traces.into_iter().enumerate() {
        let scalar = scalars.get(k).copied().unwrap_or(100);
        let times = iters.get(k).copied().unwrap_or(1).max(1);
        let mut kept: Vec<(u64, Record)> = Vec::new();
        let n = records(&name, r, |_, t| {
            let io = t.action & (TC_READ | TC_WRITE | TC_DISCARD) != 0;
            if t.cgroup.is_none() && is_queue(t.action) && io {
                kept.push((t.time, t));
            }
            Ok(())
        })?;
        if n == 0 {
            return Err(format!(
                "{name}: no blktrace record in it (merge_blktrace_file)"
            ));
        }
        let last = kept.last().map_or(0, |(t, _)| *t);
        for i in 0..times {
            for (t, rec) in &kept {
                let time = t
                    .saturating_add(i.saturating_mul(last))
                    .saturating_mul(scalar)
                    / 100;
                all.push((time, k, i, encode(rec, time)));
            }
        }
    }
    all.sort_by_key(|&(t, k, i, _)| (t, k, i));
    Ok(all.iter().flat_map(|(_, _, _, b)| *b).collect())
}

/// A record as blktrace writes it on a little-endian machine, at `time`, no payload.
fn encode(t: &Record, time: u64) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    b[0..4].copy_from_slice(&(BLK_IO_TRACE_MAGIC | VERSION).to_le_bytes());
    b[8..16].copy_from_slice(&time.to_le_bytes());
    b[16..24].copy_from_slice(&t.sector.to_le_bytes());
    b[24..28].copy_from_slice(&t.bytes.to_le_bytes());
    b[28..32].copy_from_slice(&t.action.to_le_bytes());
    b[32..36].copy_from_slice(&t.pid.to_le_bytes());
    b[36..40].copy_from_slice(&t.device.to_le_bytes());
    b
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// One record as blktrace writes it (little-endian, or big).
    pub(crate) fn rec(time: u64, sector: u64, bytes: u32, action: u32, big: bool) -> Vec<u8> {
        let mut v = Vec::with_capacity(RECORD);
        let w32 = |v: &mut Vec<u8>, x: u32| {
            v.extend(if big {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            })
        };
        w32(&mut v, BLK_IO_TRACE_MAGIC | VERSION);
        w32(&mut v, 0);
        v.extend(if big {
            time.to_be_bytes()
        } else {
            time.to_le_bytes()
        });
        v.extend(if big {
            sector.to_be_bytes()
        } else {
            sector.to_le_bytes()
        });
        w32(&mut v, bytes);
        w32(&mut v, action);
        w32(&mut v, 42); // pid
        w32(&mut v, (8 << 20) | 16); // 8:16
        w32(&mut v, 0); // cpu
        v.extend([0u8; 4]); // error, pdu_len
        v
    }

    const Q: u32 = TA_QUEUE;

    fn trace(big: bool) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend(rec(1_000_000, 8, 4096, Q | TC_READ, big));
        t.extend(rec(1_000_000, 8, 4096, 7 | TC_READ, big)); // issue: ignored
        t.extend(rec(1_250_500, 16, 8192, Q | TC_WRITE, big));
        t.extend(rec(1_260_000, 24, 4096, Q | TC_WRITE, big));
        t.extend(rec(1_270_000, 24, 4096, TA_BACKMERGE | TC_WRITE, big));
        t.extend(rec(2_000_000, 8, 4096, TA_COMPLETE | TC_READ, big));
        t.extend(rec(2_100_000, 16, 8192, TA_COMPLETE | TC_WRITE, big));
        t.extend(rec(3_000_000, 0, 0, Q | TC_FLUSH | TC_WRITE, big));
        t.extend(rec(3_500_000, 100, 4096, Q | TC_DISCARD | TC_WRITE, big));
        t
    }

    #[test]
    fn queue_events_become_entries_in_either_byte_order() {
        for big in [false, true] {
            let l = read("b", &trace(big)[..], &ReplayOpts::default()).unwrap();
            let ops: Vec<(LogOp, u64, u64, u32)> = l
                .entries
                .iter()
                .map(|e| (e.op, e.delay_us, e.offset, e.len))
                .collect();
            assert_eq!(
                ops,
                vec![
                    (LogOp::Read, 0, 4096, 4096),
                    (LogOp::Write, 250, 8192, 8192),
                    (LogOp::Write, 9, 12288, 4096),
                    (LogOp::Sync, 1740, 0, 0),
                    (LogOp::Trim, 500, 51200, 4096),
                ],
                "big-endian: {big}"
            );
            // writes: two queued, one merged away before the completion → 1;
            // reads 1
            assert_eq!(l.depth, Some(1));
        }
    }

    #[test]
    fn a_pdu_is_skipped_and_a_bad_record_named() {
        let mut t = rec(1, 8, 4096, Q | TC_READ, false);
        t[46] = 5; // pdu_len 5
        t.extend(b"hello");
        t.extend(rec(2, 16, 4096, Q | TC_READ, false));
        let l = read("b", &t[..], &ReplayOpts::default()).unwrap();
        assert_eq!(l.ios(), 2);
        let mut bad = rec(1, 8, 4096, Q | TC_READ, false);
        bad.extend([0u8; RECORD]);
        let err = read("b", &bad[..], &ReplayOpts::default()).unwrap_err();
        assert!(err.contains("record 2 (byte 48): bad magic"), "{err}");
    }

    #[test]
    fn the_probe_finds_the_depth_and_chunked_reading_skips_it() {
        let mut t = Vec::new();
        for i in 0..6 {
            t.extend(rec(i, i * 8, 4096, Q | TC_READ, false));
        }
        t.extend(rec(10, 0, 4096, TA_COMPLETE | TC_READ, false));
        let l = read("b", &t[..], &ReplayOpts::default()).unwrap();
        assert_eq!(l.depth, Some(6));
        let chunked = ReplayOpts {
            chunked: true,
            ..ReplayOpts::default()
        };
        assert_eq!(read("b", &t[..], &chunked).unwrap().depth, None);
    }

    #[test]
    fn traces_merge_by_scaled_time_and_repeat() {
        let mut a = Vec::new();
        a.extend(rec(1_000_000, 8, 4096, Q | TC_READ, false));
        a.extend(rec(3_000_000, 16, 4096, Q | TC_READ, false));
        a.extend(rec(3_500_000, 0, 0, Q | TC_FLUSH, false)); // dropped, as fio drops it
        let mut b = Vec::new();
        b.extend(rec(2_000_000, 800, 4096, Q | TC_WRITE, true));
        let merged = merge(
            vec![("a".to_string(), &a[..]), ("b".to_string(), &b[..])],
            &[50],
            &[2],
        )
        .unwrap();
        let l = read("m", &merged[..], &ReplayOpts::default()).unwrap();
        let got: Vec<(LogOp, u64, u64)> = l
            .entries
            .iter()
            .map(|e| (e.op, e.delay_us, e.offset))
            .collect();
        // a at 50%: 0.5, 1.5 ms, again 2.0, 3.0 ms; b at 2 ms, after a's 2.0 on the tie
        assert_eq!(
            got,
            vec![
                (LogOp::Read, 0, 4096),
                (LogOp::Read, 1000, 8192),
                (LogOp::Read, 500, 4096),
                (LogOp::Write, 0, 409_600),
                (LogOp::Read, 1000, 8192),
            ]
        );
    }
}
