//! Reading the guest's serial console back: the `@@blkcg-sim` marker protocol that
//! [`super::guest`]'s `/init` speaks.
//!
//! Single lines: `kernel RELEASE`, `dev MAJ:MIN`, `refused PATH LINE: ERROR`,
//! `error TEXT`, `start`, `finish`, `done`. Blocks: `begin fio N` (fio's JSON of the
//! N-th fio process), `begin fio-log N` (what fio printed besides), `begin io.stat
//! CGROUP`, `begin trace` (the tracefs buffer), `begin trace-stats` (its ring
//! buffer's counters, `per_cpu/cpu0/stats`), `begin diskstat` (the disk's counters
//! once a second) — each closed by `end`. Kernel messages
//! may interleave anywhere; serial line endings (`\r\n`) are normalised.

use std::collections::BTreeMap;

use super::guest::MARK;

/// What the guest reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuestOutput {
    pub kernel: Option<String>,
    pub dev: Option<String>,
    /// Interface writes the kernel refused, with its error.
    pub refused: Vec<String>,
    pub errors: Vec<String>,
    /// fio's JSON by fio process index.
    pub fio: BTreeMap<usize, String>,
    pub fio_logs: BTreeMap<usize, String>,
    /// `io.stat` by cgroup path.
    pub io_stat: Vec<(String, String)>,
    /// `io.pressure` by cgroup path (the root's: `/proc/pressure/io`).
    pub io_pressure: Vec<(String, String)>,
    pub trace: String,
    /// The ring buffer's counters (`entries: N`, `overrun: N`, ...).
    pub trace_stats: String,
    /// `UPTIME FIELDS...` of `/sys/block/NAME/stat`, once a second.
    pub diskstat: String,
    /// `UPTIME Dirty: N kB Writeback: N kB` of `/proc/meminfo`, once a second (a run
    /// with a page cache).
    pub dirty: String,
    pub done: bool,
}

impl GuestOutput {
    /// Parse a console capture.
    pub fn parse(console: &str) -> GuestOutput {
        let mut out = GuestOutput::default();
        let mut block: Option<(String, String)> = None;
        let prefix = format!("{MARK} ");
        for raw in console.lines() {
            let line = raw.trim_end_matches('\r');
            // a marker may follow kernel output on the same line
            let marker = line.find(&prefix).map(|i| &line[i + prefix.len()..]);
            if block.is_some() {
                if marker == Some("end") {
                    if let Some((what, body)) = block.take() {
                        out.store(&what, body);
                    }
                } else if let Some((_, body)) = block.as_mut()
                    && !is_printk(line)
                {
                    body.push_str(line);
                    body.push('\n');
                }
                continue;
            }
            if let Some(m) = marker {
                match m.strip_prefix("begin ") {
                    Some(what) => block = Some((what.to_string(), String::new())),
                    None => out.single(m),
                }
            }
        }
        out
    }

    /// Events the tracefs ring buffer overwrote, and how many were written, from the
    /// header of `trace` (`# entries-in-buffer/entries-written: KEPT/WRITTEN`), or,
    /// for a tracer whose header has no counts (`blk`), from the buffer's own
    /// (`entries: KEPT`, `overrun: LOST`); None when none were lost.
    pub fn trace_lost(&self) -> Option<(u64, u64)> {
        let (kept, written) = match self
            .trace
            .lines()
            .find_map(|l| l.split_once("entries-in-buffer/entries-written:"))
        {
            Some((_, counts)) => {
                let (kept, written) = counts.split_whitespace().next()?.split_once('/')?;
                (kept.parse::<u64>().ok()?, written.parse::<u64>().ok()?)
            }
            None => {
                let stat = |key: &str| {
                    self.trace_stats
                        .lines()
                        .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                };
                let kept = stat("entries:")?;
                (kept, kept + stat("overrun:")?)
            }
        };
        (written > kept).then_some((written - kept, written))
    }

    fn single(&mut self, m: &str) {
        let (k, v) = m.split_once(' ').unwrap_or((m, ""));
        match k {
            "kernel" => self.kernel = Some(v.to_string()),
            "dev" => self.dev = Some(v.to_string()),
            "refused" => self.refused.push(v.to_string()),
            "error" => self.errors.push(v.to_string()),
            "done" => self.done = true,
            _ => {}
        }
    }

    fn store(&mut self, what: &str, body: String) {
        let (k, v) = what.split_once(' ').unwrap_or((what, ""));
        match k {
            "fio" => {
                if let Ok(n) = v.parse() {
                    self.fio.insert(n, body);
                }
            }
            "fio-log" => {
                if let Ok(n) = v.parse() {
                    self.fio_logs.insert(n, body);
                }
            }
            "io.stat" => self.io_stat.push((v.to_string(), body)),
            "io.pressure" => self.io_pressure.push((v.to_string(), body)),
            "trace" => self.trace = body,
            "trace-stats" => self.trace_stats = body,
            "diskstat" => self.diskstat = body,
            "dirty" => self.dirty = body,
            _ => {}
        }
    }
}

/// A kernel message on the console (`[   12.345678] ...`), not ours.
fn is_printk(line: &str) -> bool {
    line.strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .is_some_and(|(ts, _)| {
            let ts = ts.trim();
            !ts.is_empty() && ts.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_markers_blocks_and_noise() {
        let c = "SeaBIOS\r\n@@blkcg-sim kernel 6.1.0-56-amd64\r\n@@blkcg-sim dev 254:0\r\n\
                 @@blkcg-sim refused /sys/fs/cgroup/a/io.max 254:0 riops=0: sh: write error: Numerical result out of range\r\n\
                 @@blkcg-sim begin fio 0\r\n{\r\n[   12.5] some kernel line\r\n  \"x\" : 1\r\n}\r\n@@blkcg-sim end\r\n\
                 @@blkcg-sim begin io.stat a\r\n254:0 rbytes=4096\r\n@@blkcg-sim end\r\n@@blkcg-sim done\r\n";
        let g = GuestOutput::parse(c);
        assert_eq!(g.kernel.as_deref(), Some("6.1.0-56-amd64"));
        assert_eq!(g.dev.as_deref(), Some("254:0"));
        assert_eq!(g.refused.len(), 1);
        assert!(g.refused[0].ends_with("Numerical result out of range"));
        assert_eq!(g.fio[&0], "{\n  \"x\" : 1\n}\n");
        assert_eq!(
            g.io_stat,
            vec![("a".to_string(), "254:0 rbytes=4096\n".to_string())]
        );
        assert!(g.done);
    }

    #[test]
    fn a_full_trace_buffer_is_told() {
        let head = |counts: &str| GuestOutput {
            trace: format!(
                "# tracer: nop\n#\n# entries-in-buffer/entries-written: {counts}   #P:1\n"
            ),
            ..GuestOutput::default()
        };
        assert_eq!(head("224/224").trace_lost(), None);
        assert_eq!(head("9000/12500").trace_lost(), Some((3500, 12500)));
        assert_eq!(GuestOutput::default().trace_lost(), None);
        // the blk tracer's header has no counts: the buffer's own stats
        let blk = |stats: &str| GuestOutput {
            trace: "# tracer: blk\n#\n".into(),
            trace_stats: stats.into(),
            ..GuestOutput::default()
        };
        let stats = "entries: 9000\noverrun: 3500\ncommit overrun: 0\nbytes: 1\n";
        assert_eq!(blk(stats).trace_lost(), Some((3500, 12500)));
        assert_eq!(blk("entries: 9000\noverrun: 0\n").trace_lost(), None);
    }

    #[test]
    fn an_unclosed_block_is_dropped() {
        let g = GuestOutput::parse("@@blkcg-sim begin fio 0\n{\n");
        assert!(g.fio.is_empty());
        assert!(!g.done);
    }
}
