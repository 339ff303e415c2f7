//! The `"second-miss"` read-allocation filter: the recent read misses that were not
//! filled, so that a block is filled only when it misses a second time.

use crate::block::{BlockHasher, BlockKey};
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;

/// Blocks that missed on a read recently and were not filled (`"second-miss"`): a
/// bounded FIFO of keys, each with the sequence number of its latest entry so that an
/// older duplicate leaving the queue does not forget a newer miss.
pub(super) struct Ghosts {
    latest: HashMap<BlockKey, u64, BuildHasherDefault<BlockHasher>>,
    order: VecDeque<(BlockKey, u64)>,
    seq: u64,
    cap: usize,
}

impl Ghosts {
    pub(super) fn new(cap: usize) -> Ghosts {
        Ghosts {
            latest: HashMap::default(),
            order: VecDeque::new(),
            seq: 0,
            cap: cap.max(1),
        }
    }

    /// True if `key` missed recently (and forgets it); otherwise remembers this miss.
    pub(super) fn second_miss(&mut self, key: BlockKey) -> bool {
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
