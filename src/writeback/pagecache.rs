//! One file's page cache, as page ranges (`[start, end)`), so that a sequential
//! writer's gigabyte of dirty pages — or a reader's cached gigabyte — is one entry:
//! [`PageRanges`] is the set, [`DirtyPages`] the dirty pages writeback walks
//! (`write_cache_pages()`'s range-cyclic walk from `writeback_index` is a range
//! lookup), [`CachedPages`] what a read finds (`filemap_get_read_batch()`): pages in
//! the cache, those still being read (locked, not uptodate), and the `PG_readahead`
//! marks. Clean pages' reclaim is the owner's (`crate::writeback::Writeback`).

use std::collections::BTreeMap;

use super::readahead::RaRead;

/// A set of pages as ranges.
#[derive(Debug, Default, Clone)]
pub struct PageRanges {
    /// start page → end page (exclusive); ranges never touch or overlap.
    ranges: BTreeMap<u64, u64>,
    count: u64,
}

impl PageRanges {
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Add `[first, first + n)`; returns how many of them were not in the set.
    pub fn mark(&mut self, first: u64, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let (mut start, mut end) = (first, first + n);
        let mut already = 0;
        // the ranges that overlap or touch [start, end), merged into it
        let touching: Vec<(u64, u64)> = self
            .ranges
            .range(..=end)
            .rev()
            .take_while(|&(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.ranges.remove(&s);
            already += e.min(first + n).saturating_sub(s.max(first));
            start = start.min(s);
            end = end.max(e);
        }
        self.ranges.insert(start, end);
        let new = n - already;
        self.count += new;
        new
    }

    /// Remove `[first, first + n)`; returns how many of them were in the set.
    pub fn remove(&mut self, first: u64, n: u64) -> u64 {
        let end = first + n;
        let overlapping: Vec<(u64, u64)> = self
            .ranges
            .range(..end)
            .rev()
            .take_while(|&(_, &e)| e > first)
            .map(|(&s, &e)| (s, e))
            .collect();
        let mut removed = 0;
        for (s, e) in overlapping {
            self.ranges.remove(&s);
            if s < first {
                self.ranges.insert(s, first);
            }
            if end < e {
                self.ranges.insert(end, e);
            }
            removed += e.min(end) - s.max(first);
        }
        self.count -= removed;
        removed
    }

    /// The range holding page `p`, if any.
    pub fn range_of(&self, p: u64) -> Option<(u64, u64)> {
        self.ranges
            .range(..=p)
            .next_back()
            .filter(|&(_, &e)| e > p)
            .map(|(&s, &e)| (s, e))
    }

    pub fn contains(&self, p: u64) -> bool {
        self.range_of(p).is_some()
    }

    /// The ranges overlapping `[first, first + n)`, clipped to it, in order.
    pub fn within(&self, first: u64, n: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let end = first + n;
        let before = self.range_of(first).map(|(s, _)| s).unwrap_or(first);
        self.ranges
            .range(before..end)
            .map(move |(&s, &e)| (s.max(first), e.min(end)))
    }

    /// `page_cache_next_miss()`: the first page from `index` on, within `max`, that is
    /// not in the set; `index + max` when there is none.
    pub fn next_miss(&self, index: u64, max: u64) -> u64 {
        match self.range_of(index) {
            Some((_, e)) => e.min(index + max),
            None => index,
        }
    }

    /// `page_cache_prev_miss()`: the first page from `index` down, within `max`, that is
    /// not in the set; `index - max` when there is none; `None` (the kernel's
    /// `ULONG_MAX`) when the set holds everything down to page 0.
    pub fn prev_miss(&self, index: u64, max: u64) -> Option<u64> {
        match self.range_of(index) {
            None => Some(index),
            Some((s, _)) if index - s + 1 >= max => Some(index + 1 - max),
            Some((0, _)) => None,
            Some((s, _)) => Some(s - 1),
        }
    }
}

/// A file's dirty pages.
#[derive(Debug, Default, Clone)]
pub struct DirtyPages {
    pages: PageRanges,
}

impl DirtyPages {
    pub fn count(&self) -> u64 {
        self.pages.count()
    }

    /// Mark `[first, first + n)` dirty; returns how many of them were clean
    /// (`folio_account_dirtied()` counts only those).
    pub fn mark(&mut self, first: u64, n: u64) -> u64 {
        self.pages.mark(first, n)
    }

    /// The dirty pages, as a set.
    pub fn pages(&self) -> &PageRanges {
        &self.pages
    }

    /// Take up to `max` dirty pages for writeback, walking from page `from` to the end
    /// and then from the start (range-cyclic), as runs of contiguous pages no longer
    /// than `max_run`; each run goes to `out` as (first page, pages). Returns the page
    /// after the last one taken (the next `writeback_index`).
    pub fn take(&mut self, from: u64, max: u64, max_run: u64, out: &mut Vec<(u64, u64)>) -> u64 {
        let mut left = max;
        let mut next = from;
        for pass in 0..2 {
            while left > 0 {
                let found = if pass == 0 {
                    // the range holding `next`, or the first after it
                    self.pages.range_of(next).or_else(|| {
                        self.pages
                            .ranges
                            .range(next..)
                            .next()
                            .map(|(&s, &e)| (s, e))
                    })
                } else {
                    self.pages
                        .ranges
                        .range(..from)
                        .next()
                        .map(|(&s, &e)| (s, e.min(from)))
                };
                let Some((s, e)) = found else { break };
                let begin = s.max(if pass == 0 { next } else { s });
                let n = (e - begin).min(left).min(max_run.max(1));
                self.pages.remove(begin, n);
                out.push((begin, n));
                left -= n;
                next = begin + n;
            }
            if left == 0 || pass == 1 {
                break;
            }
        }
        next
    }

    /// Take every dirty page in `[first, first + n)`, in order, as runs no longer than
    /// `max_run` (`__filemap_fdatawrite_range()`).
    pub fn take_in(&mut self, first: u64, n: u64, max_run: u64, out: &mut Vec<(u64, u64)>) {
        let found: Vec<(u64, u64)> = self.pages.within(first, n).collect();
        for (s, e) in found {
            self.pages.remove(s, e - s);
            let mut p = s;
            while p < e {
                let k = (e - p).min(max_run.max(1));
                out.push((p, k));
                p += k;
            }
        }
    }
}

/// What a read finds of one file in the page cache.
#[derive(Debug, Default, Clone)]
pub struct CachedPages {
    /// Every page in the cache: read, being read, written (dirty, under writeback or
    /// clean again).
    pub present: PageRanges,
    /// Pages being read: in the cache, locked, not uptodate.
    pub locked: PageRanges,
    /// Pages with `PG_readahead` set (one per readahead window, usually one at all).
    pub marks: Vec<u64>,
}

impl CachedPages {
    /// `filemap_get_read_batch()` from page `index` up to `end` (exclusive), at most
    /// `max` pages: the pages present in a row, stopping after the first that is not
    /// uptodate or carries `PG_readahead`. Returns the batch's length.
    pub fn read_batch(&self, index: u64, end: u64, max: u64) -> u64 {
        let Some((_, e)) = self.present.range_of(index) else {
            return 0;
        };
        let mut n = e.min(end).min(index + max) - index;
        // the first locked page ends the batch (included)
        if let Some((s, _)) = self.locked.within(index, n).next() {
            n = s + 1 - index;
        }
        if let Some(&m) = self
            .marks
            .iter()
            .filter(|&&m| m >= index && m < index + n)
            .min()
        {
            n = m + 1 - index;
        }
        n
    }

    /// `do_page_cache_ra()` → `page_cache_ra_unbounded()`: the pages of `r` not yet
    /// cached — none past the file's last page (`isize_pages`) — are added, locked, the
    /// one `r.lookahead` pages before the end marked `PG_readahead` if it is new. Runs of
    /// new pages go to `out` as (first page, pages), split at `max_run` (a bio's
    /// pages: `mpage_readahead()`). Returns the pages added.
    pub fn alloc_for_read(
        &mut self,
        r: RaRead,
        isize_pages: u64,
        max_run: u64,
        out: &mut Vec<(u64, u64)>,
    ) -> u64 {
        if r.index >= isize_pages {
            return 0;
        }
        let nr = r.nr.min(isize_pages - r.index);
        let mark = (r.index + nr)
            .checked_sub(r.lookahead)
            .filter(|_| r.lookahead > 0);
        let mut added = 0;
        let mut at = r.index;
        let end = r.index + nr;
        while at < end {
            let (s, e) = match self.present.range_of(at) {
                Some((_, e)) => {
                    at = e;
                    continue;
                }
                // the missing run from `at`: up to the next cached page
                None => (
                    at,
                    self.present
                        .within(at, end - at)
                        .next()
                        .map_or(end, |r| r.0),
                ),
            };
            self.present.mark(s, e - s);
            self.locked.mark(s, e - s);
            if let Some(m) = mark.filter(|m| (s..e).contains(m)) {
                self.marks.push(m);
            }
            let mut p = s;
            while p < e {
                let n = (e - p).min(max_run.max(1));
                out.push((p, n));
                p += n;
            }
            added += e - s;
            at = e;
        }
        added
    }

    /// Whether page `p` carries `PG_readahead`; clears it (`folio_clear_readahead()`).
    pub fn take_mark(&mut self, p: u64) -> bool {
        let before = self.marks.len();
        self.marks.retain(|&m| m != p);
        self.marks.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marking_merges_and_counts_only_clean_pages() {
        let mut d = DirtyPages::default();
        assert_eq!(d.mark(0, 10), 10);
        assert_eq!(d.mark(5, 10), 5);
        assert_eq!(d.mark(15, 1), 1);
        assert_eq!(d.mark(100, 4), 4);
        assert_eq!(d.count(), 20);
        assert_eq!(d.pages.ranges.len(), 2);
        assert_eq!(d.mark(16, 84), 84);
        assert_eq!(d.pages.ranges.len(), 1);
        assert_eq!(d.count(), 104);
    }

    #[test]
    fn the_walk_is_range_cyclic_in_runs() {
        let mut d = DirtyPages::default();
        d.mark(0, 8);
        d.mark(20, 8);
        let mut out = Vec::new();
        let next = d.take(22, 10, 4, &mut out);
        assert_eq!(out, vec![(22, 4), (26, 2), (0, 4)]);
        assert_eq!(next, 4);
        assert_eq!(d.count(), 6);
        out.clear();
        d.mark(30, 10);
        // a sync_file_range() of pages 5..33: clipped to it, in runs of 4
        d.take_in(5, 28, 4, &mut out);
        assert_eq!(out, vec![(5, 3), (20, 2), (30, 3)]);
        assert_eq!(d.count(), 8);
        out.clear();
        d.take_in(0, u64::MAX, 256, &mut out);
        assert_eq!(out, vec![(4, 1), (33, 7)]);
        assert_eq!(d.count(), 0);
    }

    #[test]
    fn removing_splits_and_counts() {
        let mut p = PageRanges::default();
        p.mark(0, 10);
        p.mark(20, 10);
        assert_eq!(p.remove(5, 20), 10);
        assert_eq!(p.count(), 10);
        assert_eq!(p.within(0, 100).collect::<Vec<_>>(), vec![(0, 5), (25, 30)]);
        assert_eq!(p.remove(40, 5), 0);
    }

    #[test]
    fn misses_are_the_kernels() {
        let mut p = PageRanges::default();
        p.mark(10, 10);
        assert_eq!(p.next_miss(12, 100), 20);
        assert_eq!(p.next_miss(12, 4), 16);
        assert_eq!(p.next_miss(25, 4), 25);
        assert_eq!(p.prev_miss(15, 100), Some(9));
        assert_eq!(p.prev_miss(15, 3), Some(13));
        assert_eq!(p.prev_miss(25, 3), Some(25));
        p.mark(0, 10);
        assert_eq!(p.prev_miss(15, 100), None, "cached from the file's start");
    }

    #[test]
    fn a_read_batch_ends_at_a_locked_or_marked_page() {
        let mut c = CachedPages::default();
        c.present.mark(0, 64);
        assert_eq!(c.read_batch(0, 64, 31), 31);
        assert_eq!(c.read_batch(40, 50, 31), 10);
        c.locked.mark(32, 32);
        assert_eq!(c.read_batch(20, 64, 31), 13, "up to the first locked page");
        c.marks.push(24);
        assert_eq!(c.read_batch(20, 64, 31), 5, "up to the marked page");
        assert!(c.take_mark(24) && !c.take_mark(24));
        assert_eq!(c.read_batch(64, 70, 31), 0);
    }

    #[test]
    fn a_readahead_adds_only_missing_pages_and_marks_a_new_one() {
        let mut c = CachedPages::default();
        c.present.mark(4, 2);
        let mut out = Vec::new();
        let r = RaRead {
            index: 0,
            nr: 10,
            lookahead: 7,
        };
        assert_eq!(c.alloc_for_read(r, 100, 3, &mut out), 8);
        assert_eq!(out, vec![(0, 3), (3, 1), (6, 3), (9, 1)]);
        assert_eq!(c.marks, vec![3]);
        assert_eq!(c.locked.count(), 8);
        // nothing past the file's end
        out.clear();
        let r = RaRead {
            index: 98,
            nr: 32,
            lookahead: 0,
        };
        assert_eq!(c.alloc_for_read(r, 100, 256, &mut out), 2);
        assert_eq!(c.marks, vec![3]);
    }
}
