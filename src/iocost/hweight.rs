//! The weight hierarchy: per-node `active`/`inuse` and their children's sums, kept up
//! to date by [`Hier::propagate`] (mirrors `propagate_weights()`), and hierarchical
//! weights by [`Hier::hweight`] (mirrors `current_hweight()`), all in `WEIGHT_ONE`
//! fixed point. Hweights are cached per node and recomputed lazily: a propagation that
//! changed a weight bumps `hweight_gen` (`commit_weights()`), and a node's cached pair
//! is good while its generation matches, so the per-bio path stays O(depth) and a
//! period touching N active leaves recomputes each at most once per change.
//! [`Hier::hweight_max`] mirrors `current_hweight_max()` and [`Hier::transfer_surpluses`]
//! the donation arithmetic of `transfer_surpluses()` (it returns the donors' new inuse;
//! the caller propagates them). Walks over inner nodes touch only the ancestors of the
//! leaves concerned ([`Hier::inner_walk`], `iocg_build_inner_walk()`), never the whole
//! tree, so period work is O(active × depth) however many cgroups exist. Node indices
//! follow `CgroupTree`, where a parent always precedes its children, so ascending index
//! order is a valid pre-order walk and descending order a bottom-up one.

use crate::blkcg::CgroupTree;
use crate::sim::prefetch::prefetch;

/// Fixed-point 1.0 of weights and hweights.
pub const WEIGHT_ONE: u64 = 1 << 16;

/// One cgroup's weights. Laid out by hand: what each I/O reads (the cached hweights,
/// `active`, `inuse`) fills the first cache line of a node that `align(64)` starts on
/// one; the sums the propagation and period walks use are in the second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(64))]
struct Node {
    // --- per I/O: the first line
    /// (hweight_active, hweight_inuse) and the generation it was computed at.
    cached: (u64, u64, u64),
    active: u64,
    inuse: u64,
    parent: Option<u32>,
    /// Configured weight ×WEIGHT_ONE (used for inner nodes' own active).
    weight: u64,
    // --- the rest
    /// inuse before the latest propagation (`last_inuse`).
    last_inuse: u64,
    child_active_sum: u64,
    child_inuse_sum: u64,
    /// On the walk being built (`!list_empty(&iocg->walk_list)`); false between walks.
    on_walk: bool,
}

// what every I/O reads stays in the first cache line
const _: () = assert!(std::mem::offset_of!(Node, last_inuse) <= 64);

/// Active/inuse weights of every cgroup on one device.
#[derive(Debug, Clone)]
pub struct Hier {
    nodes: Vec<Node>,
    hweight_gen: u64,
    /// Scratch of `hweight()`: the path from a node up to the root.
    path: Vec<(u32, u32)>,
    /// Scratch of `transfer_surpluses()`, one per node, default between calls.
    inner: Vec<Inner>,
}

impl Hier {
    /// Every cgroup inactive, at the given weights (×1, not ×WEIGHT_ONE).
    pub fn new(tree: &CgroupTree, weight: impl Fn(u32) -> u32) -> Self {
        let nodes = tree
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Node {
                parent: n.parent,
                weight: u64::from(weight(i as u32)) * WEIGHT_ONE,
                cached: (0, 0, u64::MAX),
                ..Node::default()
            })
            .collect::<Vec<_>>();
        Hier {
            inner: vec![Inner::default(); nodes.len()],
            nodes,
            hweight_gen: 0,
            path: Vec::new(),
        }
    }

    /// The parent cgroup (None for the root).
    pub fn parent(&self, cg: u32) -> Option<u32> {
        self.nodes[cg as usize].parent
    }

    pub fn active(&self, cg: u32) -> u64 {
        self.nodes[cg as usize].active
    }
    pub fn inuse(&self, cg: u32) -> u64 {
        self.nodes[cg as usize].inuse
    }
    /// inuse before the latest propagation (`last_inuse`): what a reactivated cgroup
    /// starts from, and what a paid-off debtor gets back.
    pub fn last_inuse(&self, cg: u32) -> u64 {
        self.nodes[cg as usize].last_inuse
    }

    /// Sets a node's configured weight (effective on its next propagation).
    pub fn set_weight(&mut self, cg: u32, weight: u32) {
        self.nodes[cg as usize].weight = u64::from(weight) * WEIGHT_ONE;
    }

    /// Mirrors `propagate_weights()` for a leaf: inuse clamped to [1, active] (0 when
    /// deactivating), the old inuse remembered, then a walk up updating the children's
    /// sums until nothing changes; `commit_weights()` bumps `hweight_gen` only if a
    /// weight changed.
    pub fn propagate(&mut self, cg: u32, active: u64, inuse: u64) {
        let mut idx = cg as usize;
        let mut active = active;
        let mut inuse = inuse.max(1).min(active);
        self.nodes[idx].last_inuse = self.nodes[idx].inuse;
        loop {
            let n = self.nodes[idx];
            if n.active == active && n.inuse == inuse {
                break;
            }
            // `weights_updated`: at least one level changes
            if idx == cg as usize {
                self.hweight_gen += 1;
            }
            self.nodes[idx].active = active;
            self.nodes[idx].inuse = inuse;
            let Some(p) = n.parent else { break };
            let p = p as usize;
            let pn = &mut self.nodes[p];
            pn.child_active_sum = pn.child_active_sum + active - n.active;
            pn.child_inuse_sum = pn.child_inuse_sum + inuse - n.inuse;
            if pn.parent.is_none() {
                break; // the root keeps WEIGHT_ONE
            }
            active = if pn.child_active_sum > 0 {
                pn.weight
            } else {
                0
            };
            inuse = if pn.child_active_sum > 0 {
                (active * pn.child_inuse_sum).div_ceil(pn.child_active_sum)
            } else {
                0
            };
            idx = p;
        }
    }

    /// Hints the line of `cg`'s node that `hweight()` reads.
    #[inline]
    pub fn prefetch(&self, cg: u32) {
        if let Some(n) = self.nodes.get(cg as usize) {
            prefetch(n);
        }
    }

    /// Mirrors `current_hweight()`: (hweight_active, hweight_inuse), each ≥ 1.
    pub fn hweight(&mut self, cg: u32) -> (u64, u64) {
        let cached = self.nodes[cg as usize].cached;
        if cached.2 == self.hweight_gen {
            return (cached.0, cached.1);
        }
        let (mut hwa, mut hwi) = (WEIGHT_ONE, WEIGHT_ONE);
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let mut c = cg;
        while let Some(p) = self.nodes[c as usize].parent {
            path.push((c, p));
            c = p;
        }
        for &(c, p) in path.iter().rev() {
            let (cn, pn) = (&self.nodes[c as usize], &self.nodes[p as usize]);
            if pn.child_active_sum == 0 || pn.child_inuse_sum == 0 {
                continue;
            }
            hwa = hwa * cn.active / cn.active.max(pn.child_active_sum);
            hwi = hwi * cn.inuse / cn.inuse.max(pn.child_inuse_sum);
        }
        self.path = path;
        let r = (hwa.max(1), hwi.max(1));
        self.nodes[cg as usize].cached = (r.0, r.1, self.hweight_gen);
        r
    }

    /// Mirrors `iocg_build_inner_walk()`: the ancestors of `leaves`, each once, in
    /// pre-order (ascending index). A walk up stops at the first ancestor already on
    /// the walk, whose own ancestors are then on it too.
    pub fn inner_walk(&mut self, leaves: impl IntoIterator<Item = u32>) -> Vec<u32> {
        let mut walk = Vec::new();
        for cg in leaves {
            let mut c = cg;
            while let Some(p) = self.nodes[c as usize].parent {
                let pn = &mut self.nodes[p as usize];
                if pn.on_walk {
                    break;
                }
                pn.on_walk = true;
                walk.push(p);
                c = p;
            }
        }
        for &p in &walk {
            self.nodes[p as usize].on_walk = false;
        }
        walk.sort_unstable();
        walk
    }
}

/// A donating leaf for [`Hier::transfer_surpluses`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Donor {
    pub cg: u32,
    /// `hweight_donating`: the donor's hweight_active at classification.
    pub hwa: u64,
    /// `hweight_after_donation`: the hweight_inuse it should end at.
    pub after: u64,
}

/// Per-inner-node scratch values of `transfer_surpluses()`.
#[derive(Debug, Clone, Copy, Default)]
struct Inner {
    donating: u64,
    after: u64,
    hwa: u64,
    hwi: u64,
    adjusted_sum: u64,
}

impl Hier {
    /// Mirrors `current_hweight_max()`: the hweight_inuse `cg` would get with inuse
    /// raised to active, every other weight unchanged.
    pub fn hweight_max(&self, cg: u32) -> u64 {
        let mut hwm = WEIGHT_ONE;
        let mut inuse = self.nodes[cg as usize].active;
        let mut child = cg as usize;
        while let Some(p) = self.nodes[child].parent {
            let pn = &self.nodes[p as usize];
            let child_inuse_sum = pn.child_inuse_sum + inuse - self.nodes[child].inuse;
            if child_inuse_sum == 0 || pn.child_active_sum == 0 {
                return 1;
            }
            hwm = hwm * inuse / child_inuse_sum;
            inuse = (pn.active * child_inuse_sum).div_ceil(pn.child_active_sum);
            child = p as usize;
        }
        hwm.max(1)
    }

    /// Mirrors the arithmetic of `transfer_surpluses()` (the three passes described in
    /// the comment above it in blk-iocost.c): returns each donor's new inuse so that its
    /// hweight_inuse becomes `after` while every non-donating pair keeps its relative
    /// share. Inner-node values are scratch and discarded, as in the kernel.
    pub fn transfer_surpluses(&mut self, donors: &[Donor]) -> Vec<(u32, u64)> {
        let mut donors = donors.to_vec();
        // keep the sum of afters below WEIGHT_ONE by scaling down those above their hwa
        let after_sum: u64 = donors.iter().map(|d| d.after).sum();
        let over_sum: u64 = donors
            .iter()
            .filter(|d| d.after > d.hwa)
            .map(|d| d.after)
            .sum();
        if after_sum >= WEIGHT_ONE {
            let over_target = over_sum.saturating_sub(after_sum - (WEIGHT_ONE - 1));
            if over_target > 0 {
                for d in donors.iter_mut().filter(|d| d.after > d.hwa) {
                    d.after = d.after * over_target / over_sum;
                }
            }
        }
        let walk = self.inner_walk(donors.iter().map(|d| d.cg));
        let mut inner = std::mem::take(&mut self.inner);
        let out = self.transfer_on_walk(&donors, &walk, &mut inner);
        // scratch back to its defaults: only the walk was touched
        for &i in &walk {
            inner[i as usize] = Inner::default();
        }
        self.inner = inner;
        out
    }

    /// The three passes of `transfer_surpluses()` over the inner walk (ascending
    /// index), with per-node values in `inner`.
    fn transfer_on_walk(
        &self,
        donors: &[Donor],
        walk: &[u32],
        inner: &mut [Inner],
    ) -> Vec<(u32, u64)> {
        // pass 1: donating and after-donation budgets summed up the tree
        for d in donors {
            if let Some(p) = self.nodes[d.cg as usize].parent {
                inner[p as usize].donating += d.hwa;
                inner[p as usize].after += d.after;
            }
        }
        for &i in walk.iter().rev() {
            if let Some(p) = self.nodes[i as usize].parent {
                let (donating, after) = (inner[i as usize].donating, inner[i as usize].after);
                inner[p as usize].donating += donating;
                inner[p as usize].after += after;
            }
        }
        // pass 2: inner hwa, donation values clamped into range (pre-order)
        for &i in walk {
            let i = i as usize;
            inner[i].hwa = match self.nodes[i].parent {
                None => WEIGHT_ONE,
                Some(p) => (inner[p as usize].hwa * self.nodes[i].active)
                    .div_ceil(self.nodes[p as usize].child_active_sum.max(1)),
            };
            let n = &mut inner[i];
            n.donating = n.donating.min(n.hwa);
            if n.donating > 0 {
                n.after = n.after.min(n.donating - 1);
            }
        }
        // gamma = (1 - t_r') / (1 - t_r), the growth of non-donating budgets
        if walk.first() != Some(&0) || inner[0].after >= WEIGHT_ONE {
            return Vec::new();
        }
        let root = inner[0];
        let gamma = ((WEIGHT_ONE - root.after) * WEIGHT_ONE)
            .div_ceil(WEIGHT_ONE - root.donating.min(WEIGHT_ONE - 1));
        // pass 3: adjusted hwi, inuse and children's adjusted sum (pre-order)
        for &i in walk {
            let i = i as usize;
            let node = &self.nodes[i];
            let Some(p) = node.parent else {
                // s' = s * b_pf / b'_pf
                inner[i].hwi = WEIGHT_ONE;
                inner[i].adjusted_sum = (node.child_active_sum * (WEIGHT_ONE - root.donating))
                    .div_ceil(WEIGHT_ONE - root.after);
                continue;
            };
            let par = inner[p as usize];
            let n = inner[i];
            // b' = gamma * b_f + b'_t ; w' = s' * b' / b'_p
            let hwi = (gamma * (n.hwa - n.donating)).div_ceil(WEIGHT_ONE) + n.after;
            let inuse = (par.adjusted_sum * hwi).div_ceil(par.hwi.max(1));
            // s' = s_f + s_t * w'_pt / w_pt
            let st = (node.child_active_sum * n.donating).div_ceil(n.hwa.max(1));
            let sf = node.child_active_sum - st.min(node.child_active_sum);
            let wpt = (node.active * n.donating).div_ceil(n.hwa.max(1));
            let wptp = (inuse * n.after).div_ceil(hwi.max(1));
            inner[i].hwi = hwi;
            // u64 as in the kernel (wraps only far beyond realistic weight sums)
            inner[i].adjusted_sum = sf + st.wrapping_mul(wptp).div_ceil(wpt.max(1));
        }
        // leaves: w' = s' * b'_t / b'_p
        donors
            .iter()
            .filter_map(|d| {
                let par = inner[self.nodes[d.cg as usize].parent? as usize];
                Some((d.cg, (par.adjusted_sum * d.after).div_ceil(par.hwi.max(1))))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `__propagate_weights()`: a deactivated leaf holds inuse 0 (clamp(0, 1, 0)), so
    /// its parent's inuse sum drops it entirely, and `last_inuse` remembers the donor's
    /// inuse it went idle with, which `iocg_activate()` starts it from again.
    #[test]
    fn deactivation_zeroes_inuse_and_remembers_it() {
        let mut t = CgroupTree::default();
        let a = t.ensure("A");
        let b = t.ensure("B");
        let mut h = Hier::new(&t, |_| 100);
        let w = 100 * WEIGHT_ONE;
        h.propagate(a, w, w);
        h.propagate(b, w, w);
        h.propagate(b, w, w / 4);
        assert_eq!(h.last_inuse(b), w);
        h.propagate(b, 0, 0);
        assert_eq!((h.active(b), h.inuse(b)), (0, 0));
        assert_eq!(h.last_inuse(b), w / 4);
        assert_eq!(h.nodes[0].child_inuse_sum, w);
        assert_eq!(h.hweight(a), (WEIGHT_ONE, WEIGHT_ONE));
    }

    /// `iocg_build_inner_walk()`: every ancestor once, parents before children, and
    /// nothing off the walk (B's own subtree is not on it).
    #[test]
    fn inner_walk_covers_ancestors_once_in_pre_order() {
        let mut t = CgroupTree::default();
        let a1 = t.ensure("A/A1/x");
        let a0 = t.ensure("A/A0");
        let b = t.ensure("B/B0");
        let (a, aa1) = (t.find("A").unwrap(), t.find("A/A1").unwrap());
        let mut h = Hier::new(&t, |_| 100);
        assert_eq!(h.inner_walk([a1, a0]), vec![0, a, aa1]);
        assert_eq!(h.inner_walk([a0, a1, a0]), vec![0, a, aa1]);
        assert_eq!(h.inner_walk([b]).len(), 2);
        assert!(h.inner_walk([]).is_empty());
        assert!(h.nodes.iter().all(|n| !n.on_walk));
    }

    #[test]
    fn kernel_header_example() {
        let mut t = CgroupTree::default();
        let a0 = t.ensure("A/A0");
        let a1 = t.ensure("A/A1");
        let b = t.ensure("B");
        let a = t.find("A").unwrap();
        let mut h = Hier::new(&t, |cg| if cg == b { 300 } else { 100 });
        for cg in [a0, a1, b] {
            let w = h.nodes[cg as usize].weight;
            h.propagate(cg, w, w);
        }
        assert_eq!(h.active(a), 100 * WEIGHT_ONE);
        assert_eq!(h.hweight(b), (WEIGHT_ONE * 3 / 4, WEIGHT_ONE * 3 / 4));
        assert_eq!(h.hweight(a0), (WEIGHT_ONE / 8, WEIGHT_ONE / 8));
        assert_eq!(h.hweight(a1), (WEIGHT_ONE / 8, WEIGHT_ONE / 8));
        // B alone: 100%
        h.propagate(a0, 0, 0);
        h.propagate(a1, 0, 0);
        assert_eq!(h.hweight(b).0, WEIGHT_ONE);
        // donation: B lowers inuse to a third → hwi falls, hwa stays
        let mut h2 = Hier::new(&t, |_| 100);
        h2.propagate(b, 100 * WEIGHT_ONE, 100 * WEIGHT_ONE);
        h2.propagate(a0, 100 * WEIGHT_ONE, 100 * WEIGHT_ONE);
        h2.propagate(b, 100 * WEIGHT_ONE, 50 * WEIGHT_ONE);
        let (hwa, hwi) = h2.hweight(b);
        assert_eq!(hwa, WEIGHT_ONE / 2);
        assert_eq!(hwi, WEIGHT_ONE / 3);
    }

    /// Root → {A → {A0, A1}, B}, all weight 100 and active; A0 (hwa 1/4) donates down
    /// to hwi 1/16. By hand, following transfer_surpluses(): root and A carry
    /// donating 16384 / after 4096; A's hwa = ceil(65536·w/2w) = 32768;
    /// gamma = ceil(61440·65536/49152) = 81920; root s' = ceil(2w·49152/61440) = 1.6w;
    /// A: hwi' = ceil(81920·16384/65536) + 4096 = 24576, inuse' = ceil(1.6w·24576/65536)
    /// = 0.6w, st = sf = w, wpt = w/2, wptp = ceil(0.6w·4096/24576) = 0.1w,
    /// s' = w + ceil(w·0.1w/(w/2)) = 1.2w; A0: inuse = ceil(1.2w·4096/24576) = 0.2w
    /// (w = 6553600). The flat formula (every leaf under the root) would give
    /// ceil(3w·49152/61440) = 2.4w, then 2.4w·4096/65536 = 0.15w, which leaves A0 at
    /// hwi 3120 instead of 4096.
    #[test]
    fn hierarchical_transfer_differs_from_flat() {
        let mut t = CgroupTree::default();
        let a0 = t.ensure("A/A0");
        let a1 = t.ensure("A/A1");
        let b = t.ensure("B");
        let mut h = Hier::new(&t, |_| 100);
        let w = 100 * WEIGHT_ONE;
        for cg in [a0, a1, b] {
            h.propagate(cg, w, w);
        }
        assert_eq!(h.hweight(a0).0, 16384);
        assert_eq!(h.hweight_max(a0), 16384);
        let donor = Donor {
            cg: a0,
            hwa: 16384,
            after: 4096,
        };
        let out = h.transfer_surpluses(&[donor]);
        assert_eq!(out, vec![(a0, w / 5)]);
        h.propagate(a0, w, w / 5);
        assert_eq!(h.hweight(a0).1, 4096);
        // non-donors keep their 1:2 ratio and absorb the freed share
        assert_eq!(h.hweight(a1).1, 20480);
        assert_eq!(h.hweight(b).1, 40960);
        // hwm: B, already at inuse == active, could use more than its hwa now
        assert_eq!((h.hweight(b).0, h.hweight_max(b)), (32768, 40960));
        // what the flat formula would have set, for contrast
        h.propagate(a0, w, (3 * w * 49152).div_ceil(61440) * 4096 / WEIGHT_ONE);
        assert_eq!(h.hweight(a0).1, 3120);
    }
}
