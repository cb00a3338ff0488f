//! The cgroup tree of a scenario: index 0 is the root; every other cgroup names its
//! parent. Paths are `a/b/c` relative to the root, as in `[cgroup."a/b"]`.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgNode {
    /// Path relative to the root (`""` for the root itself).
    pub path: String,
    pub parent: Option<u32>,
    pub children: Vec<u32>,
    /// 0 for the root.
    pub level: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupTree {
    pub nodes: Vec<CgNode>,
}

impl Default for CgroupTree {
    fn default() -> Self {
        CgroupTree {
            nodes: vec![CgNode {
                path: String::new(),
                parent: None,
                children: Vec::new(),
                level: 0,
            }],
        }
    }
}

impl CgroupTree {
    pub const ROOT: u32 = 0;

    /// Index of `path`, creating it and any missing ancestors (like `mkdir -p`).
    pub fn ensure(&mut self, path: &str) -> u32 {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Self::ROOT;
        }
        if let Some(i) = self.find(path) {
            return i;
        }
        let parent = match path.rfind('/') {
            Some(p) => self.ensure(&path[..p]),
            None => Self::ROOT,
        };
        let id = self.nodes.len() as u32;
        let level = self.nodes[parent as usize].level + 1;
        self.nodes.push(CgNode {
            path: path.to_string(),
            parent: Some(parent),
            children: Vec::new(),
            level,
        });
        self.nodes[parent as usize].children.push(id);
        id
    }

    pub fn find(&self, path: &str) -> Option<u32> {
        let path = path.trim_matches('/');
        self.nodes
            .iter()
            .position(|n| n.path == path)
            .map(|i| i as u32)
    }

    pub fn parent(&self, cg: u32) -> Option<u32> {
        self.nodes[cg as usize].parent
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// `cg` and its ancestors up to (excluding) the root, innermost first.
    pub fn ancestry(&self, cg: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(cg), move |&c| self.parent(c)).take_while(|&c| c != Self::ROOT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensure_creates_ancestors_once() {
        let mut t = CgroupTree::default();
        let c = t.ensure("a/b");
        let a = t.find("a").unwrap();
        assert_eq!(t.parent(c), Some(a));
        assert_eq!(t.parent(a), Some(0));
        assert_eq!(t.ensure("/a/b/"), c);
        assert_eq!(t.nodes[c as usize].level, 2);
        assert_eq!(t.ancestry(c).collect::<Vec<_>>(), vec![c, a]);
    }
}
