//! The block map: which slot holds a block. Open addressing with linear probing over
//! 8-byte buckets, each a 32-bit hash tag and a slot number; the key itself lives in the
//! slot's entry, which a hit reads anyway. A lookup is then one cache line of buckets in
//! the common case, against two or three for a general-purpose map holding the keys.
//! Removal shifts the following buckets back (no tombstones), so probes stay short
//! however long the cache runs.

use crate::block::BlockKey;

const EMPTY: u64 = u64::MAX;

pub struct BlockMap {
    buckets: Vec<u64>,
    /// log2 of the bucket count.
    bits: u32,
    len: usize,
}

/// 64-bit mix of a key (multiply, xor-shift): block indices of one file are consecutive
/// and file ids are inode numbers, both far from random.
fn hash(key: BlockKey) -> u64 {
    let x = (key.file.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.index)
        .wrapping_mul(0xD6E8_FEB8_6659_FD93);
    x ^ (x >> 29)
}

impl BlockMap {
    /// A map for at most `capacity` blocks, kept at most half full.
    pub fn with_capacity(capacity: u32) -> BlockMap {
        let n = (u64::from(capacity) * 2).next_power_of_two().max(16);
        BlockMap {
            buckets: vec![EMPTY; n as usize],
            bits: n.trailing_zeros(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the map holds: its buckets, as allocated.
    pub fn memory_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<u64>()
    }

    fn mask(&self) -> usize {
        self.buckets.len() - 1
    }

    /// The tag of a key: the hash's top 32 bits, whose top `bits` are its home bucket.
    fn tag(key: BlockKey) -> u32 {
        (hash(key) >> 32) as u32
    }

    fn home(&self, tag: u32) -> usize {
        (u64::from(tag) >> (32 - self.bits.min(32))) as usize
    }

    /// The slot holding `key`; `key_of` gives the key a slot holds.
    #[inline]
    pub fn get(&self, key: BlockKey, key_of: impl Fn(u32) -> BlockKey) -> Option<u32> {
        let tag = Self::tag(key);
        let mask = self.mask();
        let mut i = self.home(tag);
        loop {
            let b = self.buckets[i];
            if b == EMPTY {
                return None;
            }
            let slot = b as u32;
            if (b >> 32) as u32 == tag && key_of(slot) == key {
                return Some(slot);
            }
            i = (i + 1) & mask;
        }
    }

    /// Map `key` (not mapped yet) to `slot`.
    #[inline]
    pub fn insert(&mut self, key: BlockKey, slot: u32) {
        debug_assert!(self.len < self.buckets.len() / 2 + 1);
        let tag = Self::tag(key);
        let mask = self.mask();
        let mut i = self.home(tag);
        while self.buckets[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.buckets[i] = (u64::from(tag) << 32) | u64::from(slot);
        self.len += 1;
    }

    /// Unmap `key`, which `slot` holds. Returns false if it was not mapped there.
    #[inline]
    pub fn remove(&mut self, key: BlockKey, slot: u32) -> bool {
        let want = (u64::from(Self::tag(key)) << 32) | u64::from(slot);
        let mask = self.mask();
        let mut i = self.home(Self::tag(key));
        loop {
            let b = self.buckets[i];
            if b == EMPTY {
                return false;
            }
            if b == want {
                break;
            }
            i = (i + 1) & mask;
        }
        // Backward shift: move each following bucket into the hole unless its home lies
        // cyclically after the hole (then it is already as close to home as it can be).
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let b = self.buckets[j];
            if b == EMPTY {
                break;
            }
            let home = self.home((b >> 32) as u32);
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.buckets[hole] = b;
                hole = j;
            }
        }
        self.buckets[hole] = EMPTY;
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(file: u64, index: u64) -> BlockKey {
        BlockKey { file, index }
    }

    #[test]
    fn agrees_with_a_reference_map_under_churn() {
        // A small table so probes wrap around its end and removals shift across it.
        let n = 64u32;
        let mut m = BlockMap::with_capacity(n);
        let mut keys = vec![BlockKey::default(); n as usize];
        let mut reference: HashMap<BlockKey, u32> = HashMap::new();
        let mut free: Vec<u32> = (0..n).collect();
        let mut seed = 0x1234_5678_9abc_def0u64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let k = key(seed % 7, (seed >> 8) % 40);
            let found = m.get(k, |s| keys[s as usize]);
            assert_eq!(found, reference.get(&k).copied());
            match found {
                Some(s) => {
                    assert!(m.remove(k, s));
                    reference.remove(&k);
                    free.push(s);
                }
                None => {
                    if let Some(s) = free.pop() {
                        keys[s as usize] = k;
                        m.insert(k, s);
                        reference.insert(k, s);
                    }
                }
            }
            assert_eq!(m.len(), reference.len());
        }
        for (&k, &s) in &reference {
            assert_eq!(m.get(k, |s| keys[s as usize]), Some(s));
        }
    }

    #[test]
    fn removal_needs_the_right_slot() {
        let mut m = BlockMap::with_capacity(4);
        let keys = [key(1, 1), key(1, 2)];
        m.insert(keys[0], 0);
        assert!(!m.remove(keys[0], 1));
        assert!(!m.remove(keys[1], 0));
        assert!(m.remove(keys[0], 0));
        assert!(m.is_empty());
        assert_eq!(m.get(keys[0], |s| keys[s as usize]), None);
    }
}
