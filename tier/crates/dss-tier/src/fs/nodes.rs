//! The inode table: the HDD path behind each inode the kernel knows, with the other
//! names of a hard-linked file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub(super) struct Node {
    pub(super) path: PathBuf,
    /// Other names of a hard-linked file, so that removing `path` leaves one to use.
    pub(super) links: Vec<PathBuf>,
    pub(super) lookups: u64,
}

impl Node {
    /// `gone` no longer names this inode.
    pub(super) fn forget_name(&mut self, gone: &Path) {
        if self.path == gone {
            if let Some(p) = self.links.pop() {
                self.path = p;
            }
        } else {
            self.links.retain(|p| p != gone);
        }
    }
}

/// Inode numbers are the HDD's, except the root which FUSE wants as 1.
pub(super) struct Nodes {
    pub(super) root_ino: u64,
    pub(super) map: HashMap<u64, Node>,
}

impl Nodes {
    /// The table of a mount that the kernel knows only the root of: `root` on the HDD,
    /// whose inode number is `root_ino`.
    pub(super) fn new(root: PathBuf, root_ino: u64) -> Nodes {
        let mut map = HashMap::new();
        map.insert(
            1,
            Node {
                path: root,
                links: Vec::new(),
                lookups: 1,
            },
        );
        Nodes { root_ino, map }
    }

    /// The kernel dropped `nlookup` of its references to `ino`; true when that was its
    /// last and the inode left the table.
    pub(super) fn forget(&mut self, ino: u64, nlookup: u64) -> bool {
        if let Some(n) = self.map.get_mut(&ino) {
            n.lookups = n.lookups.saturating_sub(nlookup);
            if n.lookups == 0 {
                self.map.remove(&ino);
                return true;
            }
        }
        false
    }

    /// `from` was renamed to `to`, which now names inode `ino`.
    pub(super) fn renamed(&mut self, ino: u64, is_dir: bool, from: &Path, to: &Path) {
        if !is_dir {
            // A file has no paths below it: only its own entry moves. Every Swift PUT
            // renames a file, and a walk over every inode the kernel remembers would
            // make each PUT slower than the last.
            if let Some(n) = self.map.get_mut(&ino) {
                if n.path == from {
                    n.path = to.to_path_buf();
                }
                for l in n.links.iter_mut().filter(|l| **l == from) {
                    *l = to.to_path_buf();
                }
            }
            return;
        }
        // A directory's paths, and those of everything under it, move with it.
        let moved = |p: &mut PathBuf| {
            if let Ok(rest) = p.strip_prefix(from) {
                *p = if rest.as_os_str().is_empty() {
                    to.to_path_buf()
                } else {
                    to.join(rest)
                };
            }
        };
        for n in self.map.values_mut() {
            moved(&mut n.path);
            n.links.iter_mut().for_each(moved);
        }
    }
}
