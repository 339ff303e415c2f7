//! The host memory that holds file-system metadata: the kernel's inode, dentry and buffer
//! caches, in front of any cache device.
//!
//! On a local file system a lookup, a `stat`, an xattr read or a directory read finds the
//! inode, the directory block or the xattr block in memory once it has been read or
//! written, and the block device never sees the request. Swift drops object data from the
//! page cache after each read and write (`fadvise(DONTNEED)`) but leaves metadata alone,
//! so on a storage node with gigabytes of memory its metadata stays there. Behind FUSE the
//! kernel caches entries and attributes for a while but sends every xattr and directory
//! read to the daemon; this set stands in for what the kernel of a local file system
//! would have held, so that such reads cost what they would on one.
//!
//! Blocks are kept in least-recently-used order up to a capacity in blocks; a capacity of
//! zero holds nothing (every metadata read reaches the cache and the devices).

use crate::block::{BlockHasher, BlockKey};
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

#[derive(Debug, Default)]
pub struct MetaMemory {
    capacity: usize,
    /// Each block's last use.
    used: HashMap<BlockKey, u64, BuildHasherDefault<BlockHasher>>,
    /// Blocks by last use, oldest first.
    order: BTreeMap<u64, BlockKey>,
    clock: u64,
    hits: u64,
}

impl MetaMemory {
    /// Memory for `capacity` blocks.
    pub fn new(capacity: usize) -> MetaMemory {
        MetaMemory {
            capacity,
            ..MetaMemory::default()
        }
    }

    /// A use of `key`: true if it was held (a read of it then costs nothing). It is held
    /// afterwards, the least recently used block making room if needed.
    pub fn touch(&mut self, key: BlockKey) -> bool {
        if self.capacity == 0 {
            return false;
        }
        self.clock += 1;
        let held = match self.used.insert(key, self.clock) {
            Some(last) => {
                self.order.remove(&last);
                true
            }
            None => false,
        };
        self.order.insert(self.clock, key);
        if self.used.len() > self.capacity
            && let Some((_, oldest)) = self.order.pop_first()
        {
            self.used.remove(&oldest);
        }
        self.hits += u64::from(held);
        held
    }

    /// The block is freed on the file system (its inode was removed).
    pub fn forget(&mut self, key: BlockKey) {
        if let Some(last) = self.used.remove(&key) {
            self.order.remove(&last);
        }
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.used.len()
    }

    pub fn is_empty(&self) -> bool {
        self.used.is_empty()
    }

    /// Uses that found their block held.
    pub fn hits(&self) -> u64 {
        self.hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(file: u64) -> BlockKey {
        BlockKey { file, index: 0 }
    }

    #[test]
    fn a_block_is_held_from_its_first_use_on() {
        let mut m = MetaMemory::new(4);
        assert!(!m.touch(key(1)));
        assert!(m.touch(key(1)));
        assert!(m.touch(key(1)));
        assert_eq!((m.len(), m.hits()), (1, 2));
    }

    #[test]
    fn the_least_recently_used_block_makes_room() {
        let mut m = MetaMemory::new(2);
        m.touch(key(1));
        m.touch(key(2));
        // 1 used again: 2 is now the oldest and goes for 3.
        assert!(m.touch(key(1)));
        assert!(!m.touch(key(3)));
        assert_eq!(m.len(), 2);
        assert!(m.touch(key(1)));
        assert!(m.touch(key(3)));
        assert!(!m.touch(key(2)));
    }

    #[test]
    fn no_capacity_holds_nothing() {
        let mut m = MetaMemory::new(0);
        assert!(!m.touch(key(1)));
        assert!(!m.touch(key(1)));
        assert!(m.is_empty());
        assert_eq!(m.hits(), 0);
    }

    #[test]
    fn a_forgotten_block_is_read_again() {
        let mut m = MetaMemory::new(4);
        m.touch(key(1));
        m.touch(key(2));
        m.forget(key(1));
        m.forget(key(9));
        assert!(!m.touch(key(1)));
        assert!(m.touch(key(2)));
        assert_eq!(m.len(), 2);
    }
}
