//! The `"second-miss"` read-allocation filter: the recent read misses that were not
//! filled, so that a block is filled only when it misses a second time.

use crate::block::BlockKey;
use crate::blockmap::BlockMap;

/// Blocks that missed on a read recently and were not filled (`"second-miss"`): the last
/// `cap` such misses in a ring of keys, oldest first from `next` once it is full, and a
/// block map from each remembered key to the ring position of its latest miss. A key is
/// remembered while that record is in the ring and has not been consumed by a second
/// miss; an older duplicate leaving the ring does not forget a newer miss, since the map
/// points at the newer position (`BlockMap::remove` needs the position to match).
///
/// This is a FIFO of `cap` records with a map beside it, as a queue of (key, sequence
/// number) pairs with a hash map would be, at 16 bytes of key per record and the block
/// map's 8-byte buckets instead of a general-purpose map's.
pub(super) struct Ghosts {
    ring: Vec<BlockKey>,
    /// The oldest record's position once the ring is full.
    next: usize,
    latest: BlockMap,
    cap: usize,
}

impl Ghosts {
    pub(super) fn new(cap: usize) -> Ghosts {
        let cap = cap.clamp(1, u32::MAX as usize);
        Ghosts {
            ring: Vec::with_capacity(cap),
            next: 0,
            latest: BlockMap::with_capacity(cap as u32),
            cap,
        }
    }

    /// True if `key` missed recently (and forgets it); otherwise remembers this miss.
    pub(super) fn second_miss(&mut self, key: BlockKey) -> bool {
        let ring = &self.ring;
        if let Some(pos) = self.latest.get(key, |p| ring[p as usize]) {
            self.latest.remove(key, pos);
            return true;
        }
        let pos = if self.ring.len() < self.cap {
            self.ring.push(key);
            self.ring.len() - 1
        } else {
            // The oldest record leaves; its key is forgotten only if this was its latest.
            let pos = self.next;
            self.latest.remove(self.ring[pos], pos as u32);
            self.ring[pos] = key;
            self.next = if pos + 1 == self.cap { 0 } else { pos + 1 };
            pos
        };
        self.latest.insert(key, pos as u32);
        false
    }

    /// Bytes held: the ring (at its capacity) and the map's buckets.
    pub(super) fn memory_bytes(&self) -> usize {
        self.ring.capacity() * std::mem::size_of::<BlockKey>() + self.latest.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::BlockHasher;
    use std::collections::{HashMap, VecDeque};
    use std::hash::BuildHasherDefault;

    /// The filter as first written: a queue of (key, sequence) and a hash map.
    struct Reference {
        latest: HashMap<BlockKey, u64, BuildHasherDefault<BlockHasher>>,
        order: VecDeque<(BlockKey, u64)>,
        seq: u64,
        cap: usize,
    }

    impl Reference {
        fn second_miss(&mut self, key: BlockKey) -> bool {
            if self.latest.remove(&key).is_some() {
                return true;
            }
            self.seq += 1;
            self.latest.insert(key, self.seq);
            self.order.push_back((key, self.seq));
            if self.order.len() > self.cap
                && let Some((old, seq)) = self.order.pop_front()
                && self.latest.get(&old) == Some(&seq)
            {
                self.latest.remove(&old);
            }
            false
        }
    }

    #[test]
    fn agrees_with_a_queue_and_a_hash_map() {
        for cap in [1usize, 2, 3, 7, 64, 500] {
            let mut g = Ghosts::new(cap);
            let mut r = Reference {
                latest: HashMap::default(),
                order: VecDeque::new(),
                seq: 0,
                cap,
            };
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ cap as u64;
            for i in 0..100_000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Few keys so that duplicates, re-misses and wrap-around all happen.
                let key = BlockKey {
                    file: seed % 3,
                    index: (seed >> 8) % (2 * cap as u64 + 3),
                };
                assert_eq!(g.second_miss(key), r.second_miss(key), "cap {cap} op {i}");
                assert_eq!(g.latest.len(), r.latest.len(), "cap {cap} op {i}");
            }
        }
    }
}
