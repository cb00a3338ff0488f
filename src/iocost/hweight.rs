//! The weight hierarchy: per-node `active`/`inuse` and their children's sums, kept up
//! to date by [`Hier::propagate`] (mirrors `propagate_weights()`), and hierarchical
//! weights by [`Hier::hweight`] (mirrors `current_hweight()`), all in `WEIGHT_ONE`
//! fixed point. Hweights are cached per node and recomputed only after a propagation
//! changed something (the kernel's `hweight_gen`), so the per-bio path stays O(depth).

use crate::blkcg::CgroupTree;

/// Fixed-point 1.0 of weights and hweights.
pub const WEIGHT_ONE: u64 = 1 << 16;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Node {
    parent: Option<u32>,
    /// Configured weight ×WEIGHT_ONE (used for inner nodes' own active).
    weight: u64,
    active: u64,
    inuse: u64,
    child_active_sum: u64,
    child_inuse_sum: u64,
    /// (hweight_active, hweight_inuse) and the generation it was computed at.
    cached: (u64, u64, u64),
}

/// Active/inuse weights of every cgroup on one device.
#[derive(Debug, Clone)]
pub struct Hier {
    nodes: Vec<Node>,
    hweight_gen: u64,
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
            .collect();
        Hier {
            nodes,
            hweight_gen: 0,
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

    /// Sets a node's configured weight (effective on its next propagation).
    pub fn set_weight(&mut self, cg: u32, weight: u32) {
        self.nodes[cg as usize].weight = u64::from(weight) * WEIGHT_ONE;
    }

    /// Mirrors `__propagate_weights()` for a leaf: inuse ≤ active and at least 1, then
    /// walks up updating the children's sums until nothing changes.
    pub fn propagate(&mut self, cg: u32, active: u64, inuse: u64) {
        let mut idx = cg as usize;
        let mut active = active;
        let mut inuse = inuse.min(active).max(1);
        loop {
            let n = self.nodes[idx];
            if n.active == active && n.inuse == inuse {
                break;
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
        self.hweight_gen += 1;
    }

    /// Mirrors `current_hweight()`: (hweight_active, hweight_inuse), each ≥ 1.
    pub fn hweight(&mut self, cg: u32) -> (u64, u64) {
        let n = self.nodes[cg as usize];
        if n.cached.2 == self.hweight_gen {
            return (n.cached.0, n.cached.1);
        }
        let (mut hwa, mut hwi) = (WEIGHT_ONE, WEIGHT_ONE);
        let mut path = Vec::new();
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
        let r = (hwa.max(1), hwi.max(1));
        self.nodes[cg as usize].cached = (r.0, r.1, self.hweight_gen);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
