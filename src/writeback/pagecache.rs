//! One file's page cache as writeback sees it: which pages are dirty, as a set of
//! page ranges (`[start, end)`), so that a sequential writer's gigabyte of dirty pages
//! is one entry and the flusher's walk from `writeback_index` (`write_cache_pages()`'s
//! range-cyclic walk) is a range lookup. Clean pages are only counted, by the owner.

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct DirtyPages {
    /// start page → end page (exclusive); ranges never touch or overlap.
    ranges: BTreeMap<u64, u64>,
    count: u64,
}

impl DirtyPages {
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mark `[first, first + n)` dirty; returns how many of them were clean
    /// (`folio_account_dirtied()` counts only those).
    pub fn mark(&mut self, first: u64, n: u64) -> u64 {
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
                    self.ranges
                        .range(..=next)
                        .next_back()
                        .filter(|&(_, &e)| e > next)
                        .or_else(|| self.ranges.range(next..).next())
                        .map(|(&s, &e)| (s, e))
                } else {
                    self.ranges
                        .range(..from)
                        .next()
                        .map(|(&s, &e)| (s, e.min(from)))
                };
                let Some((s, e)) = found else { break };
                let begin = s.max(if pass == 0 { next } else { s });
                let n = (e - begin).min(left).min(max_run.max(1));
                self.remove(begin, n);
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

    /// Take every dirty page (`WB_SYNC_ALL` over the whole file), in order.
    pub fn take_all(&mut self, max_run: u64, out: &mut Vec<(u64, u64)>) {
        let count = self.count;
        self.take(0, count, max_run, out);
    }

    fn remove(&mut self, first: u64, n: u64) {
        let (&s, &e) = self
            .ranges
            .range(..=first)
            .next_back()
            .expect("the pages taken are dirty");
        debug_assert!(first + n <= e);
        self.ranges.remove(&s);
        if s < first {
            self.ranges.insert(s, first);
        }
        if first + n < e {
            self.ranges.insert(first + n, e);
        }
        self.count -= n;
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
        assert_eq!(d.ranges.len(), 2);
        assert_eq!(d.mark(16, 84), 84);
        assert_eq!(d.ranges.len(), 1);
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
        d.take_all(256, &mut out);
        assert_eq!(out, vec![(4, 4), (20, 2)]);
        assert_eq!(d.count(), 0);
    }
}
