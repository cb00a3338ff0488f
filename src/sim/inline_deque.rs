//! [`InlineDeque`]: a FIFO queue whose first `N` elements live inside the struct.
//!
//! Design
//! ------
//! The pipeline's small per-owner queues — a submission context's bios still to push,
//! a fio job's completions not yet reaped, a blk-iocost cgroup's waiting bios — hold
//! one or two elements nearly always. As a `VecDeque` each keeps its elements in a
//! heap block of its own, so with thousands of owners every I/O pays one more cold
//! cache line per queue it touches. Here the first `N` elements are a ring inside the
//! owner's record, next to the fields read with them; only a queue that grows past `N`
//! puts the elements after those in `more`, a boxed `VecDeque` (one pointer inline)
//! allocated the first time and kept.
//!
//! Invariant: `more` holds elements only while the ring is full, and they come after
//! the ring's in queue order; taking the front refills the ring from `more`. Every
//! operation but [`InlineDeque::insert`] (a split bio's remainder, rare) is O(1).

use std::collections::VecDeque;

/// A FIFO of `Copy` elements, the first `N` (1 ≤ N ≤ 255) held inline.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct InlineDeque<T, const N: usize> {
    /// The ring's front slot.
    head: u8,
    /// Elements in the ring.
    len: u8,
    ring: [T; N],
    /// Elements after the ring's, while the ring is full (read only then).
    #[expect(
        clippy::box_collection,
        reason = "one pointer inline instead of a VecDeque's four words: the owner's cache line"
    )]
    more: Option<Box<VecDeque<T>>>,
}

impl<T: Copy + Default, const N: usize> Default for InlineDeque<T, N> {
    fn default() -> Self {
        const { assert!(N >= 1 && N <= u8::MAX as usize) };
        InlineDeque {
            head: 0,
            len: 0,
            ring: [T::default(); N],
            more: None,
        }
    }
}

impl<T: Copy + Default, const N: usize> InlineDeque<T, N> {
    #[inline]
    fn slot(&self, i: usize) -> usize {
        (self.head as usize + i) % N
    }

    /// Elements held in `more` (none unless the ring is full).
    #[inline]
    fn more_len(&self) -> usize {
        if self.len as usize == N {
            self.more.as_ref().map_or(0, |m| m.len())
        } else {
            0
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize + self.more_len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.ring[self.head as usize])
    }

    #[inline]
    pub fn front_mut(&mut self) -> Option<&mut T> {
        (self.len > 0).then(|| &mut self.ring[self.head as usize])
    }

    #[inline]
    pub fn push_back(&mut self, x: T) {
        if (self.len as usize) < N {
            let at = self.slot(self.len as usize);
            self.ring[at] = x;
            self.len += 1;
        } else {
            self.more.get_or_insert_default().push_back(x);
        }
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let x = self.ring[self.head as usize];
        let was_full = self.len as usize == N;
        self.head = ((self.head as usize + 1) % N) as u8;
        self.len -= 1;
        if let Some(y) = self
            .more
            .as_mut()
            .filter(|_| was_full)
            .and_then(|m| m.pop_front())
        {
            let at = self.slot(self.len as usize);
            self.ring[at] = y;
            self.len += 1;
        }
        Some(x)
    }

    /// Puts `x` at position `i` (0 = the front), moving the elements from there back.
    /// O(len); `i` past the end appends.
    pub fn insert(&mut self, i: usize, x: T) {
        let mut all = VecDeque::with_capacity(self.len() + 1);
        while let Some(y) = self.pop_front() {
            all.push_back(y);
        }
        all.insert(i.min(all.len()), x);
        for y in all {
            self.push_back(y);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sequence of operations leaves the same queue as a `VecDeque` does.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut rng = crate::sim::SimRng::new(7, "inline_deque");
        let mut a: InlineDeque<u32, 2> = InlineDeque::default();
        let mut b: VecDeque<u32> = VecDeque::new();
        for n in 0..20_000u32 {
            match rng.below(7) {
                0..=2 => {
                    a.push_back(n);
                    b.push_back(n);
                }
                3..=4 => assert_eq!(a.pop_front(), b.pop_front()),
                5 => {
                    let i = rng.below(b.len() as u64 + 2) as usize;
                    a.insert(i, n);
                    b.insert(i.min(b.len()), n);
                }
                _ => {
                    if let (Some(x), Some(y)) = (a.front_mut(), b.front_mut()) {
                        *x += 1;
                        *y += 1;
                    }
                }
            }
            assert_eq!(a.len(), b.len());
            assert_eq!(a.is_empty(), b.is_empty());
            assert_eq!(a.front(), b.front());
        }
        while let Some(y) = b.pop_front() {
            assert_eq!(a.pop_front(), Some(y));
        }
        assert_eq!(a.pop_front(), None);
    }

    /// A queue that never grows past `N` never allocates.
    #[test]
    fn stays_inline_up_to_n() {
        let mut a: InlineDeque<(u32, u64), 1> = InlineDeque::default();
        for n in 0..100 {
            a.push_back((n, u64::from(n)));
            assert_eq!(a.pop_front(), Some((n, u64::from(n))));
        }
        assert!(a.more.is_none());
    }
}
