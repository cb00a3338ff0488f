//! Readahead (`mm/readahead.c`): how much a buffered read asks of the device.
//!
//! Design
//! ------
//! The idea: a read that misses the page cache does not read just what it asked for.
//! Each open file carries a readahead window (`file_ra_state`: `start`, `size`,
//! `async_size`, and `prev_pos`, where the last read ended). A miss
//! (`page_cache_sync_ra()`) starts a window — a small initial one at the file's start
//! or after a sequential read, the request as is for a read that looks random — and
//! marks the page `async_size` pages before the window's end with `PG_readahead`.
//! When a later read reaches the marked page (`page_cache_async_ra()`) the next
//! window, grown (`get_next_ra_size()`: ×4, ×2, then the most), goes out before the
//! reader needs it, so a sequential reader keeps one window in flight. The most is
//! the device's `read_ahead_kb` (`bdi->ra_pages`: 128 KiB), or for a request larger
//! than that its `max_sectors_kb` (`bdi->io_pages`).
//!
//! Moving parts: [`RaState`] is the window; [`sync_ra`] and [`async_ra`] decide, as
//! the kernel's functions of those names, which [`RaRead`]s to issue; the page cache
//! itself (`crate::writeback::pagecache::CachedPages::alloc_for_read`) turns a read
//! into the pages not yet cached (`page_cache_ra_unbounded()`), which the pipeline
//! reads as one bio per run (`crate::sim::readahead`).
//!
//! Versions (`mm.readahead`): before 6.11 one function decided both cases
//! (`ondemand_readahead()`): a miss at the window's expected place grows it like a
//! marked page does, a miss-started window that the read itself would hit is merged
//! with its successor, and `page_cache_next_miss()` answers one page short when
//! everything it looked at is cached. 6.11 (3a7a11a57e46, "readahead: disentangle
//! async and sync readahead") split it: a miss starts the initial window only after
//! a sequential read or at the file's start, with `async_size` half the window when
//! the request fills it.
//!
//! Left out: large folios (a block device's page cache, and ext2's, has none before
//! 6.15, so `page_cache_ra_order()` always falls back to order-0 pages), `FMODE_RANDOM`
//! (`fadvise` is not an fio option here), and `blk_cgroup_congested()` turning
//! readahead off for a cgroup blk-iolatency or blk-iocost is delaying.

use crate::error::{KeyError, Named};
use crate::kernel_version::KernelVersion;

use super::limits::PAGE_SIZE;
use super::pagecache::PageRanges;

/// The `[kernel]` switches of the page cache (`mm.`).
pub const SWITCH_PREFIX: &str = "mm.";

/// `VM_READAHEAD_PAGES`: the default `read_ahead_kb`, 128 KiB.
pub const VM_READAHEAD_PAGES: u64 = (128 << 10) / PAGE_SIZE;

/// `force_page_cache_ra()` reads in 2 MiB chunks.
const FORCE_CHUNK_PAGES: u64 = (2 << 20) / PAGE_SIZE;

/// How a miss and a marked page decide the window (`mm.readahead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncRa {
    /// Before 6.11: `ondemand_readahead()` for both.
    Ondemand,
    /// 6.11 on: `page_cache_sync_ra()` and `page_cache_async_ra()` apart.
    Split,
}

impl Named for SyncRa {
    const NAMES: &'static [(&'static str, Self)] =
        &[("ondemand", Self::Ondemand), ("split", Self::Split)];
}

/// The page cache's behaviours that differ between kernel versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmBehaviour {
    pub readahead: SyncRa,
}

impl std::fmt::Display for MmBehaviour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mm.readahead={}", self.readahead.name())
    }
}

/// The behaviour of kernel `version`, then `overrides` (`mm.*`) applied in order.
pub fn behaviour_for(
    version: &str,
    overrides: &[(String, String)],
) -> Result<MmBehaviour, KeyError> {
    let kv = KernelVersion::parse(version).map_err(|m| KeyError::new("kernel.version", m))?;
    let mut b = MmBehaviour {
        readahead: if kv.before(6, 11) {
            SyncRa::Ondemand
        } else {
            SyncRa::Split
        },
    };
    for (key, val) in overrides {
        match key.as_str() {
            "mm.readahead" => b.readahead = Named::parse(key, val)?,
            _ => {
                return Err(KeyError::new(
                    key.as_str(),
                    "unknown page cache behaviour (accepted: mm.readahead)",
                ));
            }
        }
    }
    Ok(b)
}

/// What `posix_fadvise()` told the kernel of a file (fio's `fadvise_hint`: by default
/// `POSIX_FADV_RANDOM` for a random job, `POSIX_FADV_SEQUENTIAL` otherwise), as
/// `generic_fadvise()` applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fadvise {
    /// The device's window (`POSIX_FADV_NORMAL`, `POSIX_FADV_NOREUSE`, or none).
    #[default]
    Normal,
    /// Twice the device's window (`ra_pages = bdi->ra_pages * 2`).
    Sequential,
    /// No readahead: a miss reads the request as is (`FMODE_RANDOM`).
    Random,
}

/// A file's readahead window (`struct file_ra_state`), pages; `prev_pos` in bytes,
/// `u64::MAX` before the first read (`file_ra_state_init()`'s -1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaState {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    pub prev_pos: u64,
}

impl Default for RaState {
    fn default() -> Self {
        RaState {
            start: 0,
            size: 0,
            async_size: 0,
            prev_pos: u64::MAX,
        }
    }
}

/// The device's readahead limits (`backing_dev_info`), pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bdi {
    /// `ra_pages`: `queue/read_ahead_kb`.
    pub ra_pages: u64,
    /// `io_pages`: `queue/max_sectors_kb`.
    pub io_pages: u64,
}

/// One `do_page_cache_ra()`: read `nr` pages from `index`, marking the page
/// `lookahead` pages before the end (none when 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaRead {
    pub index: u64,
    pub nr: u64,
    pub lookahead: u64,
}

/// `get_init_ra_size()`: the first window for a `size`-page request.
pub fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// `get_next_ra_size()`: the window after one of `cur` pages.
pub fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

/// `ractl_max_pages()`: a request larger than the window may read up to the
/// device's largest request.
fn max_pages(bdi: Bdi, req: u64) -> u64 {
    if req > bdi.ra_pages && bdi.io_pages > bdi.ra_pages {
        req.min(bdi.io_pages)
    } else {
        bdi.ra_pages
    }
}

/// `page_cache_next_miss()`: 6.11's answer when every page it looked at is cached
/// is `index + max`, before it the last page it looked at.
fn next_miss(b: SyncRa, present: &PageRanges, index: u64, max: u64) -> u64 {
    let m = present.next_miss(index, max);
    if b == SyncRa::Ondemand && max > 0 && m == index + max {
        m - 1
    } else {
        m
    }
}

/// `page_cache_sync_ra()` (6.11 on) or `ondemand_readahead()` without a folio (before):
/// a read of `req` pages from `index` found page `index` missing; the reads to issue
/// go to `out`. `bdi.ra_pages` is the file's (`ra->ra_pages`); `random`: the file is
/// `FMODE_RANDOM` (`POSIX_FADV_RANDOM`).
#[allow(clippy::too_many_arguments)]
pub fn sync_ra(
    b: SyncRa,
    ra: &mut RaState,
    present: &PageRanges,
    bdi: Bdi,
    random: bool,
    index: u64,
    req: u64,
    out: &mut Vec<RaRead>,
) {
    // readahead off: the page needed alone; FMODE_RANDOM: the request as is
    let forced = if bdi.ra_pages == 0 {
        Some(1)
    } else {
        random.then_some(req)
    };
    if let Some(req) = forced {
        // force_page_cache_ra(): at most the larger of the limits, in 2 MiB chunks
        let nr = req.min(bdi.io_pages.max(bdi.ra_pages));
        let mut at = index;
        let mut left = nr;
        while left > 0 {
            let chunk = left.min(FORCE_CHUNK_PAGES);
            out.push(RaRead {
                index: at,
                nr: chunk,
                lookahead: 0,
            });
            at += chunk;
            left -= chunk;
        }
        return;
    }
    let max = max_pages(bdi, req);
    let prev_index = ra.prev_pos >> 12;
    let sequential = index.wrapping_sub(prev_index) <= 1;
    match b {
        SyncRa::Split => {
            if index == 0 || req > max || sequential {
                initial_window(b, ra, index, req, max);
            } else {
                let miss = present.prev_miss(index - 1, max);
                // ULONG_MAX: cached down to the file's start
                let contig = index.wrapping_sub(miss.unwrap_or(u64::MAX)).wrapping_sub(1);
                if contig <= req {
                    // a standalone, small random read: as is
                    out.push(RaRead {
                        index,
                        nr: req,
                        lookahead: 0,
                    });
                    return;
                }
                let contig = if miss.is_none() { contig * 2 } else { contig };
                ra.start = index;
                ra.size = (contig + req).min(max);
                ra.async_size = 1;
            }
        }
        SyncRa::Ondemand => {
            let expected = ra.start + ra.size - ra.async_size;
            if index != 0 && (index == expected || index == ra.start + ra.size) {
                ra.start += ra.size;
                ra.size = ra.size.max(get_next_ra_size(ra.size, max));
                ra.async_size = ra.size;
            } else if index == 0 || req > max || sequential {
                initial_window(b, ra, index, req, max);
            } else {
                // try_context_readahead(): the history a sequential stream leaves
                let head = present.prev_miss(index - 1, max).unwrap_or(u64::MAX);
                let mut size = index.wrapping_sub(1).wrapping_sub(head);
                if size <= req {
                    out.push(RaRead {
                        index,
                        nr: req,
                        lookahead: 0,
                    });
                    return;
                }
                if size >= index {
                    size *= 2;
                }
                ra.start = index;
                ra.size = (size + req).min(max);
                ra.async_size = 1;
            }
            merge_next_window(ra, index, max);
        }
    }
    out.push(RaRead {
        index: ra.start,
        nr: ra.size,
        lookahead: ra.async_size,
    });
}

/// The initial window at `index` for a `req`-page read.
fn initial_window(b: SyncRa, ra: &mut RaState, index: u64, req: u64, max: u64) {
    ra.start = index;
    ra.size = get_init_ra_size(req, max);
    ra.async_size = if ra.size > req {
        ra.size - req
    } else if b == SyncRa::Split {
        ra.size >> 1
    } else {
        ra.size
    };
}

/// `ondemand_readahead()`'s `readit`: a window the read itself would hit the mark of
/// takes its successor at once.
fn merge_next_window(ra: &mut RaState, index: u64, max: u64) {
    if index == ra.start && ra.size == ra.async_size {
        let add = get_next_ra_size(ra.size, max);
        if ra.size + add <= max {
            ra.async_size = add;
            ra.size += add;
        } else {
            ra.size = max;
            ra.async_size = max >> 1;
        }
    }
}

/// `page_cache_async_ra()` (6.11 on) or `ondemand_readahead()` with the folio: a read
/// of `req` pages reached the marked page `index` (its mark already cleared); the
/// read to issue, if any.
pub fn async_ra(
    b: SyncRa,
    ra: &mut RaState,
    present: &PageRanges,
    bdi: Bdi,
    index: u64,
    req: u64,
) -> Option<RaRead> {
    if bdi.ra_pages == 0 {
        return None;
    }
    let max = max_pages(bdi, req);
    let expected = ra.start + ra.size - ra.async_size;
    let at_window_end = b == SyncRa::Ondemand && index == ra.start + ra.size;
    if (b == SyncRa::Ondemand && index == 0) || (index == expected || at_window_end) {
        if b == SyncRa::Ondemand && index == 0 {
            initial_window(b, ra, index, req, max);
        } else {
            ra.start += ra.size;
            ra.size = ra.size.max(get_next_ra_size(ra.size, max));
            ra.async_size = ra.size;
        }
    } else {
        // a marked page without the window that marked it (interleaved reads)
        let start = next_miss(b, present, index + 1, max);
        if start == 0 || start - index > max {
            return None;
        }
        ra.start = start;
        ra.size = get_next_ra_size(start - index + req, max);
        ra.async_size = ra.size;
    }
    if b == SyncRa::Ondemand {
        merge_next_window(ra, index, max);
    }
    Some(RaRead {
        index: ra.start,
        nr: ra.size,
        lookahead: ra.async_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BDI: Bdi = Bdi {
        ra_pages: 32,
        io_pages: 31,
    };

    #[test]
    fn window_sizes_are_the_kernels() {
        // "1-2 page = 16k, 3-4 page 32k, 5-8 page = 64k, > 8 page = 128k initial"
        assert_eq!(get_init_ra_size(1, 32), 4);
        assert_eq!(get_init_ra_size(4, 32), 8);
        assert_eq!(get_init_ra_size(8, 32), 16);
        assert_eq!(get_init_ra_size(9, 32), 32);
        assert_eq!(get_next_ra_size(1, 32), 4);
        assert_eq!(get_next_ra_size(8, 32), 16);
        assert_eq!(get_next_ra_size(17, 32), 32);
    }

    #[test]
    fn a_sequential_4k_reader_keeps_a_window_ahead() {
        for b in [SyncRa::Split, SyncRa::Ondemand] {
            let mut ra = RaState::default();
            let cached = PageRanges::default();
            let mut out = Vec::new();
            sync_ra(b, &mut ra, &cached, BDI, false, 0, 1, &mut out);
            let first = out[0];
            assert_eq!((first.index, first.nr), (0, 4), "{b:?}");
            let mark = first.index + first.nr - first.lookahead;
            // the request's page, then 3 ahead, marked at page 1
            assert_eq!(mark, 1, "{b:?}");
            let next = async_ra(b, &mut ra, &cached, BDI, mark, 1).unwrap();
            assert_eq!(next.index, first.index + first.nr, "{b:?}");
            assert_eq!(next.nr, next.lookahead, "the whole next window is async");
        }
    }

    #[test]
    fn a_miss_where_the_window_expected_the_next_read_differs_by_version() {
        // a window of 16 at 64, its successor's pages dropped: a miss at 80
        let at = |b| {
            let mut ra = RaState {
                start: 64,
                size: 16,
                async_size: 16,
                prev_pos: 80 * PAGE_SIZE - 1,
            };
            let mut out = Vec::new();
            sync_ra(
                b,
                &mut ra,
                &PageRanges::default(),
                BDI,
                false,
                80,
                1,
                &mut out,
            );
            out[0]
        };
        // ondemand: the stream goes on, the window grows (and takes its successor)
        assert_eq!(
            (at(SyncRa::Ondemand).index, at(SyncRa::Ondemand).nr),
            (80, 32)
        );
        // split: a sequential miss starts the initial window
        assert_eq!((at(SyncRa::Split).index, at(SyncRa::Split).nr), (80, 4));
    }

    #[test]
    fn a_random_read_is_read_as_is() {
        let mut ra = RaState {
            prev_pos: 100 * PAGE_SIZE,
            ..RaState::default()
        };
        let mut out = Vec::new();
        sync_ra(
            SyncRa::Split,
            &mut ra,
            &PageRanges::default(),
            BDI,
            false,
            5000,
            1,
            &mut out,
        );
        assert_eq!(
            out,
            vec![RaRead {
                index: 5000,
                nr: 1,
                lookahead: 0
            }]
        );
        assert_eq!(ra.size, 0, "the window is left alone");
    }

    #[test]
    fn a_request_past_the_window_reads_up_to_max_sectors() {
        let bdi = Bdi {
            ra_pages: 32,
            io_pages: 256,
        };
        let mut ra = RaState::default();
        let mut out = Vec::new();
        sync_ra(
            SyncRa::Split,
            &mut ra,
            &PageRanges::default(),
            bdi,
            false,
            0,
            256,
            &mut out,
        );
        assert_eq!((out[0].nr, out[0].lookahead), (256, 128));
        // FMODE_RANDOM: the request as is, no mark
        out.clear();
        sync_ra(
            SyncRa::Split,
            &mut ra,
            &PageRanges::default(),
            bdi,
            true,
            0,
            300,
            &mut out,
        );
        assert_eq!((out[0].nr, out[0].lookahead), (256, 0));
    }

    #[test]
    fn switches_by_version_and_override() {
        let b = |v: &str, o: &[(&str, &str)]| {
            let o: Vec<(String, String)> = o
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            behaviour_for(v, &o)
        };
        assert_eq!(b("6.10", &[]).unwrap().readahead, SyncRa::Ondemand);
        assert_eq!(b("6.11", &[]).unwrap().readahead, SyncRa::Split);
        assert_eq!(
            b("6.12", &[("mm.readahead", "ondemand")])
                .unwrap()
                .readahead,
            SyncRa::Ondemand
        );
        assert_eq!(b("6.12", &[("mm.nope", "x")]).unwrap_err().key, "mm.nope");
    }
}
