//! The cgroup tree of a scenario: index 0 is the root; every other cgroup names its
//! parent. Paths are `a/b/c` relative to the root, as in `[cgroup."a/b"]`; a hash
//! index finds a path in constant time, so a tree of 100,000 cgroups builds in
//! linear time. [`check_path`] refuses what `mkdir` in cgroupfs refuses.

use std::collections::HashMap;

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
    /// Path -> index, the root included.
    index: HashMap<String, u32>,
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
            index: HashMap::from([(String::new(), Self::ROOT)]),
        }
    }
}

/// PATH_MAX of include/uapi/linux/limits.h: a path's bytes with its NUL.
const PATH_MAX: usize = 4096;

/// Whether `mkdir` of cgroup `path` (relative to the root, `a/b`) succeeds in cgroupfs;
/// else why not, with the errno: every component must be a name (not empty, `.` or
/// `..`: a path is written `a/b`, without `//` or `..` games), shorter than NAME_MAX,
/// without a newline (`cgroup_mkdir()` refuses it, EINVAL) or NUL, and not the name
/// of an interface file that already exists in the parent (`cgroup.*`, `io.*`: EEXIST).
pub fn check_path(path: &str) -> Result<(), String> {
    let trimmed = path.strip_prefix('/').unwrap_or(path);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    if trimmed.is_empty() {
        return Err(
            "the root cgroup has no name here; name a child such as \"a\" or \"a/b\"".into(),
        );
    }
    for c in trimmed.split('/') {
        let why = match c {
            "" => Some("an empty component (`//`): write the path as `a/b`".to_string()),
            "." | ".." => Some(format!(
                "a `{c}` component: write the path from the root as `a/b` (mkdir: EEXIST)"
            )),
            _ if c.contains('\n') => {
                Some("a newline in the name (cgroup_mkdir: EINVAL, Invalid argument)".into())
            }
            _ if c.contains('\0') => Some("a NUL byte in the name".into()),
            _ if c.len() > 255 => Some(format!(
                "a name of {} bytes; NAME_MAX is 255 (ENAMETOOLONG)",
                c.len()
            )),
            _ if c.starts_with("cgroup.") || c.starts_with("io.") => Some(format!(
                "`{c}` is an interface file's name in every cgroup (mkdir: EEXIST, File exists)"
            )),
            _ => None,
        };
        if let Some(why) = why {
            return Err(format!("cgroup `{}`: {why}", path.escape_debug()));
        }
    }
    // the guest writes `/sys/fs/cgroup/PATH/FILE`; a path of PATH_MAX (4096) bytes or
    // more with its NUL fails every syscall with ENAMETOOLONG (getname_flags(), and
    // strncpy_from_user() bounded by PATH_MAX in fs/namei.c)
    let longest = format!("/sys/fs/cgroup/{trimmed}/cgroup.subtree_control");
    if longest.len() >= PATH_MAX {
        return Err(format!(
            "cgroup `{}…`: a path of {} bytes, so its files' paths \
             (/sys/fs/cgroup/PATH/cgroup.subtree_control) reach PATH_MAX, {PATH_MAX} bytes \
             with the NUL (ENAMETOOLONG): nest less deeply or use shorter names",
            trimmed.chars().take(40).collect::<String>().escape_debug(),
            trimmed.len()
        ));
    }
    Ok(())
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
        self.index.insert(path.to_string(), id);
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
        self.index.get(path.trim_matches('/')).copied()
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
        assert_eq!(t.find(""), Some(CgroupTree::ROOT));
        assert_eq!(t.find("b"), None);
    }

    #[test]
    fn names_mkdir_refuses_are_refused() {
        for ok in ["a", "a/b", "/a/b/", "web frontend", "a.b", "x$(id)"] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "root"),
            ("a//b", "empty component"),
            ("a/../b", "`..`"),
            (".", "`.`"),
            ("a\nb", "EINVAL"),
            ("cgroup.procs", "EEXIST"),
            ("a/io.max", "EEXIST"),
        ] {
            let e = check_path(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert!(
            check_path(&"x".repeat(256))
                .unwrap_err()
                .contains("ENAMETOOLONG")
        );
    }
}
