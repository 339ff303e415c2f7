//! CLOCK-Pro (Jiang, Chen and Zhang, USENIX ATC 2005) as the base list of the cache: the
//! order in which clean entries are reused, `base_list = "clock-pro"`.
//!
//! One clock holds the clean resident blocks, each hot or cold with a reference bit, and
//! the metadata of recently evicted cold blocks still in their test period (non-resident
//! cold entries). Three hands go round it as in the paper:
//! - `HAND_cold` looks for a resident cold block to evict. An unreferenced one is evicted;
//!   if it was in its test period its key stays in the clock, non-resident, until the test
//!   ends. A referenced one is spared (its bit cleared, moved to the head) and turns hot if
//!   it was in its test period.
//! - `HAND_hot` turns the unreferenced hot block with the largest recency cold (clearing
//!   the bits of referenced hot blocks it passes), and ends the test period of the cold
//!   entries it passes, dropping the non-resident ones.
//! - `HAND_test` ends test periods and drops non-resident entries when there are more of
//!   them than the cache has entries.
//!
//! A block missed while its key is non-resident (re-referenced within its test period)
//! comes back hot. The target number of resident cold blocks, `m_c`, adapts as in the
//! paper: one more for each cold block re-referenced in its test period, one fewer for
//! each test period that ends without one. Hot blocks are held to `m - m_c` (`m` the
//! cache's entries) by running `HAND_hot`, which is how the paper's hands realise a
//! changed `m_c`.
//!
//! Where this departs from the paper, and why:
//! - Dirty, pinned and in-flight blocks are not in the clock: the engine keeps them on
//!   their per-priority dirty lists so that the syncer cleans lowest priority first. A
//!   block leaves the clock when it is written (and when it is filled, it enters only
//!   once the fill lands); it keeps its hot/cold status and reference bit meanwhile and
//!   re-enters at the head when it is clean again, cold ones with a new test period. The
//!   paper's clock holds every page, so a block's position here is its last return to the
//!   clean state rather than its last fault.
//! - Reads and writes are both references (a write hit sets the bit as a read hit does):
//!   the cache serves both, and a block written again is as much reused as one read again.
//! - The engine's watermarks count empty entries and resident cold blocks
//!   (`cold_resident`), so that the syncer makes room from dirty blocks before an
//!   allocation has to demote a hot block. For that, `m_c` stays at least `floor` (the
//!   engine passes the high watermark, in entries): hot blocks are then at most
//!   `m - high`, so writing dirty blocks back can always bring the count to the high
//!   watermark; were hot blocks allowed past that, the cache could stay under pressure
//!   (selective allocation on) with nothing left for the syncer to do. The paper gives
//!   `m_c` no floor. Referenced cold blocks count too, though the hand will
//!   spare them: not counting them would let a run of hits put the cache under pressure
//!   that no write-back can end, and the syncer would write back every dirty block.
//! - When every clean block is hot (dirty blocks took the room of the cold ones) an
//!   allocation runs `HAND_hot` until one turns cold, so it never fails while a clean
//!   entry exists.
//! - The hot limit `m - m_c` counts the hot blocks on the clock only: a dirty hot block
//!   is counted once it is written back and re-enters, when the limit is enforced again.
//!   Dirty blocks are the syncer's to order, so the clock cannot demote them.
//! - Non-resident entries are at most `m` by construction (a pool of `m` nodes, `HAND_test`
//!   run when it is empty) rather than by the paper's count of cold pages against
//!   `m_c + m`; `HAND_cold` moves one entry past its victim rather than on to the next
//!   resident cold block, which is where its next search starts either way.
//! - Empty entries (never used, or freed by a discard) are reused before any clean one;
//!   the cache keeps them on its free list, outside the clock.
//! - A discarded block leaves no non-resident entry: it was dropped, not evicted.

use crate::block::BlockKey;
use crate::blockmap::BlockMap;

const NIL: u32 = u32::MAX;

/// `Node::flags` bits.
const HOT: u8 = 1;
const REF: u8 = 2;
/// A cold entry in its test period.
const TEST: u8 = 4;
/// On the clock (a resident node off it belongs to a dirty, pinned, in-flight or empty slot).
const LINKED: u8 = 8;

#[derive(Clone, Copy, Debug)]
struct Node {
    prev: u32,
    next: u32,
    flags: u8,
}

/// Counts of the clock, for tests and dumps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockProStats {
    pub hot: u32,
    pub cold: u32,
    pub nonresident: u32,
    /// `m_c`, the target number of resident cold blocks.
    pub cold_target: u32,
}

/// Nodes `0..m` are the cache's slots (resident blocks); nodes `m..2m` hold the keys of
/// non-resident cold entries, so that their number is bounded by `m` by construction.
pub struct ClockPro {
    m: u32,
    floor: u32,
    nodes: Vec<Node>,
    /// Key of each non-resident node (index `node - m`).
    keys: Vec<BlockKey>,
    /// Non-resident keys to their index in `keys`: the cache's own block map, which is
    /// cheaper per lookup than a general-purpose map.
    nonresident: BlockMap,
    spare: Vec<u32>,
    hand_hot: u32,
    hand_cold: u32,
    hand_test: u32,
    hot: u32,
    cold: u32,
    cold_target: u32,
}

impl ClockPro {
    /// A clock for `m` entries; `m_c` never falls below `floor` (nor rises above `m`).
    pub fn new(m: u32, floor: u32) -> ClockPro {
        let floor = floor.clamp(1.min(m), m);
        ClockPro {
            m,
            floor,
            nodes: vec![
                Node {
                    prev: NIL,
                    next: NIL,
                    flags: 0
                };
                2 * m as usize
            ],
            keys: vec![BlockKey::default(); m as usize],
            nonresident: BlockMap::with_capacity(m),
            spare: (m..2 * m).rev().collect(),
            hand_hot: NIL,
            hand_cold: NIL,
            hand_test: NIL,
            hot: 0,
            cold: 0,
            cold_target: floor,
        }
    }

    pub fn stats(&self) -> ClockProStats {
        ClockProStats {
            hot: self.hot,
            cold: self.cold,
            nonresident: self.nonresident.len() as u32,
            cold_target: self.cold_target,
        }
    }

    /// Bytes the clock holds: a node per slot and per non-resident entry, the
    /// non-resident keys, their block map and the pool of spare nodes, as allocated.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.keys.capacity() * std::mem::size_of::<BlockKey>()
            + self.nonresident.memory_bytes()
            + self.spare.capacity() * std::mem::size_of::<u32>()
    }

    /// Resident cold blocks: what allocations reuse before a hot block is demoted. The
    /// watermarks count these (with the empty entries).
    #[inline]
    pub fn cold_resident(&self) -> u32 {
        self.cold
    }

    /// Resident blocks on the clock (every clean block of the cache).
    #[inline]
    pub fn resident(&self) -> u32 {
        self.hot + self.cold
    }

    pub fn is_hot(&self, slot: u32) -> bool {
        self.nodes[slot as usize].flags & HOT != 0
    }

    fn grow_target(&mut self) {
        self.cold_target = (self.cold_target + 1).min(self.m);
    }

    fn shrink_target(&mut self) {
        self.cold_target = self.cold_target.saturating_sub(1).max(self.floor);
    }

    // ---- the ring. The head is the place just before `HAND_hot`, the list tail.

    fn link_at_head(&mut self, n: u32) {
        if self.hand_hot == NIL {
            self.nodes[n as usize].prev = n;
            self.nodes[n as usize].next = n;
            self.hand_hot = n;
            self.hand_cold = n;
            self.hand_test = n;
        } else {
            let next = self.hand_hot;
            let prev = self.nodes[next as usize].prev;
            self.nodes[n as usize].prev = prev;
            self.nodes[n as usize].next = next;
            self.nodes[prev as usize].next = n;
            self.nodes[next as usize].prev = n;
        }
        self.nodes[n as usize].flags |= LINKED;
    }

    /// Take `n` off the ring; a hand on it moves on to the next node.
    fn unlink(&mut self, n: u32) {
        let Node { prev, next, .. } = self.nodes[n as usize];
        let after = if next == n { NIL } else { next };
        for hand in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *hand == n {
                *hand = after;
            }
        }
        if after != NIL {
            self.nodes[prev as usize].next = next;
            self.nodes[next as usize].prev = prev;
        }
        let node = &mut self.nodes[n as usize];
        node.prev = NIL;
        node.next = NIL;
        node.flags &= !LINKED;
    }

    /// Put non-resident node `t` where `slot` is on the ring, hands included.
    fn replace(&mut self, slot: u32, t: u32) {
        let Node { prev, next, .. } = self.nodes[slot as usize];
        if next == slot {
            self.nodes[t as usize].prev = t;
            self.nodes[t as usize].next = t;
        } else {
            self.nodes[t as usize].prev = prev;
            self.nodes[t as usize].next = next;
            self.nodes[prev as usize].next = t;
            self.nodes[next as usize].prev = t;
        }
        for hand in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *hand == slot {
                *hand = t;
            }
        }
        self.nodes[t as usize].flags = LINKED | TEST;
        let node = &mut self.nodes[slot as usize];
        node.prev = NIL;
        node.next = NIL;
        node.flags &= !LINKED;
    }

    fn drop_nonresident(&mut self, t: u32) {
        self.unlink(t);
        self.nodes[t as usize].flags = 0;
        self.nonresident
            .remove(self.keys[(t - self.m) as usize], t - self.m);
        self.spare.push(t);
    }

    // ---- what the cache tells the clock.

    /// `slot` now holds `key`, a block just allocated (not yet clean, so not on the
    /// clock). A key in its test period comes back hot.
    pub fn admit(&mut self, slot: u32, key: BlockKey) {
        debug_assert!(self.nodes[slot as usize].flags & LINKED == 0);
        self.nodes[slot as usize].flags = 0;
        let keys = &self.keys;
        if let Some(i) = self.nonresident.get(key, |i| keys[i as usize]) {
            self.drop_nonresident(self.m + i);
            self.grow_target();
            self.nodes[slot as usize].flags = HOT;
            self.balance();
        }
    }

    /// `slot`'s block is referenced (a read or write hit), on the clock or not.
    #[inline]
    pub fn reference(&mut self, slot: u32) {
        self.nodes[slot as usize].flags |= REF;
    }

    /// `slot`'s block became clean: it enters the clock at the head, a cold one with a
    /// new test period.
    pub fn insert(&mut self, slot: u32) {
        let flags = &mut self.nodes[slot as usize].flags;
        debug_assert!(*flags & LINKED == 0);
        if *flags & HOT != 0 {
            self.hot += 1;
        } else {
            *flags |= TEST;
            self.cold += 1;
        }
        self.link_at_head(slot);
        self.balance();
    }

    /// `slot`'s block stops being clean (written, dropped): it leaves the clock and leaves
    /// nothing behind. A slot no longer on it (the victim just evicted) is left alone.
    pub fn remove(&mut self, slot: u32) {
        let flags = self.nodes[slot as usize].flags;
        if flags & LINKED == 0 {
            return;
        }
        if flags & HOT != 0 {
            self.hot -= 1;
        } else {
            self.cold -= 1;
        }
        self.unlink(slot);
        self.nodes[slot as usize].flags &= !TEST;
    }

    /// Evict a resident block for an allocation: the slot whose clean block goes, off the
    /// clock already (its key kept as non-resident if it was in its test period).
    /// `key_of` gives the block a slot holds. None when the clock holds no block.
    pub fn evict(&mut self, key_of: impl Fn(u32) -> BlockKey) -> Option<u32> {
        if self.resident() == 0 {
            return None;
        }
        loop {
            if self.cold == 0 {
                self.run_hand_hot();
                continue;
            }
            let n = self.hand_cold;
            let next = self.nodes[n as usize].next;
            let flags = self.nodes[n as usize].flags;
            if n >= self.m || flags & HOT != 0 {
                self.hand_cold = next;
                continue;
            }
            if flags & REF != 0 {
                // Spared: moved to the head, hot if the reference came in its test period.
                self.hand_cold = next;
                self.unlink(n);
                let f = &mut self.nodes[n as usize].flags;
                *f &= !REF;
                if *f & TEST != 0 {
                    *f = (*f & !TEST) | HOT;
                    self.cold -= 1;
                    self.hot += 1;
                    self.grow_target();
                }
                self.link_at_head(n);
                self.balance();
                continue;
            }
            self.hand_cold = next;
            self.cold -= 1;
            if flags & TEST != 0 {
                // Room for its metadata: at most m non-resident entries, as in the paper.
                while self.spare.is_empty() {
                    self.run_hand_test();
                }
            }
            if self.nodes[n as usize].flags & TEST != 0 {
                let t = self.spare.pop().expect("a spare node was just made");
                let key = key_of(n);
                self.keys[(t - self.m) as usize] = key;
                self.nonresident.insert(key, t - self.m);
                self.replace(n, t);
            } else {
                self.unlink(n);
            }
            self.nodes[n as usize].flags = 0;
            return Some(n);
        }
    }

    /// Demote hot blocks while there are more than `m - m_c` of them.
    fn balance(&mut self) {
        while self.hot > 0 && self.hot > self.m - self.cold_target {
            self.run_hand_hot();
        }
    }

    /// One step of `HAND_hot`. Requires a non-empty clock.
    fn run_hand_hot(&mut self) {
        let n = self.hand_hot;
        let next = self.nodes[n as usize].next;
        let flags = self.nodes[n as usize].flags;
        if n >= self.m {
            // A non-resident entry past the hot block of largest recency: its test is over.
            self.hand_hot = next;
            self.drop_nonresident(n);
            self.shrink_target();
            return;
        }
        let f = &mut self.nodes[n as usize].flags;
        if flags & HOT != 0 {
            if flags & REF != 0 {
                *f &= !REF;
            } else {
                *f &= !HOT;
                self.hot -= 1;
                self.cold += 1;
            }
        } else if flags & TEST != 0 {
            *f &= !TEST;
            if flags & REF == 0 {
                self.shrink_target();
            }
        }
        self.hand_hot = next;
    }

    /// One step of `HAND_test`: end the test period of the entry under it.
    fn run_hand_test(&mut self) {
        let n = self.hand_test;
        let next = self.nodes[n as usize].next;
        let flags = self.nodes[n as usize].flags;
        self.hand_test = next;
        if n >= self.m {
            self.drop_nonresident(n);
            self.shrink_target();
        } else if flags & (HOT | TEST) == TEST {
            self.nodes[n as usize].flags &= !TEST;
            if flags & REF == 0 {
                self.shrink_target();
            }
        }
    }

    /// Walk the ring and check it against the counters; calls `resident(slot)` for each
    /// resident slot on it (the cache checks that the slot is clean) and `mapped(key)` for
    /// each non-resident key (which no slot may hold). For `Cache::check`.
    pub fn check(
        &self,
        mut resident: impl FnMut(u32) -> Result<(), String>,
        mapped: impl Fn(BlockKey) -> bool,
    ) -> Result<(), String> {
        let (mut hot, mut cold, mut nonres, mut total) = (0u32, 0u32, 0u32, 0u32);
        let start = self.hand_hot;
        let on_ring = |h: u32| h == NIL || self.nodes[h as usize].flags & LINKED != 0;
        let empty = [start, self.hand_cold, self.hand_test].map(|h| h == NIL);
        if empty != [empty[0]; 3] || !on_ring(self.hand_cold) || !on_ring(self.hand_test) {
            return Err("clock-pro: a hand is off the ring".into());
        }
        let mut n = start;
        while n != NIL {
            let node = self.nodes[n as usize];
            if node.flags & LINKED == 0 || self.nodes[node.next as usize].prev != n {
                return Err(format!("clock-pro: broken ring at node {n}"));
            }
            total += 1;
            if total > 2 * self.m {
                return Err("clock-pro: ring longer than its nodes".into());
            }
            if n < self.m {
                if node.flags & HOT != 0 {
                    if node.flags & TEST != 0 {
                        return Err(format!("clock-pro: slot {n} hot and in test"));
                    }
                    hot += 1;
                } else {
                    cold += 1;
                }
                resident(n)?;
            } else {
                let key = self.keys[(n - self.m) as usize];
                let keys = &self.keys;
                let found = self.nonresident.get(key, |i| keys[i as usize]);
                if node.flags != LINKED | TEST || found != Some(n - self.m) {
                    return Err(format!("clock-pro: non-resident node {n} out of the map"));
                }
                if mapped(key) {
                    return Err(format!("clock-pro: {key:?} resident and non-resident"));
                }
                nonres += 1;
            }
            n = node.next;
            if n == start {
                break;
            }
        }
        if hot != self.hot || cold != self.cold || nonres as usize != self.nonresident.len() {
            return Err("clock-pro: counts disagree with the ring".into());
        }
        if nonres > self.m || nonres as usize + self.spare.len() != self.m as usize {
            return Err("clock-pro: non-resident entries unbounded".into());
        }
        if !(self.floor..=self.m).contains(&self.cold_target) {
            return Err("clock-pro: m_c out of range".into());
        }
        if self.hot > self.m - self.cold_target {
            return Err("clock-pro: more hot blocks than m - m_c".into());
        }
        Ok(())
    }
}
