//! A running cache taking a new policy (`set_policy`) and zeroing its activity counters
//! (`reset_counters`), both without touching the blocks it holds.
//!
//! A new decision table only moves entries between lists: dirty blocks go to the dirty
//! list of their class's new priority (in their old LRU order, one old list after the
//! other), and blocks whose placement now keeps them on the SSD (or no longer does) turn
//! pinned (or dirty), as `reclassify` does for one block. Clean copies stay where they
//! are. What would change the shape of the cache is refused instead: the block size
//! (every slot's offset on the slab), the base list (the order clean blocks are kept
//! in), and under `clock-pro` the watermarks (the clock is sized by the high one).

use super::ghosts::Ghosts;
use super::lists::{NIL, PROTECTED};
use super::{Cache, State};
use crate::policy::{BaseList, CLASSES, PolicyError, ReadAllocate, Resolved, WhenFull};

impl Cache {
    /// Take `policy` as the decision table from now on. Cached blocks stay valid, dirty
    /// ones stay dirty; a refused policy leaves the cache as it was.
    pub fn set_policy(&mut self, policy: &Resolved) -> Result<(), PolicyError> {
        let cfg = policy.cache_config(u64::from(self.cfg.entries) * u64::from(self.block_size));
        let base = if self.slru {
            BaseList::Slru
        } else if self.clock.is_some() {
            BaseList::ClockPro
        } else {
            BaseList::Lru
        };
        let refuse = |what: String| {
            Err(PolicyError(format!(
                "{what} cannot change on a mounted cache"
            )))
        };
        if policy.block_size != self.block_size {
            return refuse(format!(
                "block_size ({} -> {})",
                self.block_size, policy.block_size
            ));
        }
        if policy.base_list != base {
            return refuse(format!("base_list ({base:?} -> {:?})", policy.base_list));
        }
        if self.clock.is_some() && cfg != self.cfg {
            return refuse("under clock-pro the watermarks".into());
        }
        // Dirty entries in their lists' order, taken off under the old table.
        let mut dirty = Vec::with_capacity(self.lists.dirty_len() as usize);
        for prio in 0..CLASSES as u16 {
            let mut slot = self.lists.head(prio);
            while slot != NIL {
                dirty.push(slot);
                slot = self.entries[slot as usize].next;
            }
        }
        let pinned: Vec<u32> = (0..self.cfg.entries)
            .filter(|&s| self.entries[s as usize].state == State::Pinned)
            .collect();
        for &slot in dirty.iter().chain(&pinned) {
            self.detach(slot);
        }
        self.table = policy.classes;
        self.cfg = cfg;
        self.cluster = policy.writeback_cluster;
        self.wait_when_full = policy.when_full == WhenFull::Wait;
        self.bypass_from = policy.bypass_priority.map_or(u16::MAX, u16::from);
        self.read_fill_from = match policy.read_allocate {
            ReadAllocate::Always | ReadAllocate::SecondMiss => u16::MAX,
            ReadAllocate::Never => 0,
            ReadAllocate::BelowCutoff => self.bypass_from,
        };
        let second_miss = policy.read_allocate == ReadAllocate::SecondMiss;
        if second_miss != self.ghosts.is_some() {
            self.ghosts = second_miss.then(|| Ghosts::new(cfg.entries as usize));
        }
        if self.slru {
            self.protected_cap = (f64::from(cfg.entries) * policy.protected_fraction) as u32;
            while self.lists.len(PROTECTED) > self.protected_cap {
                self.lists
                    .demote_overflow(&mut self.entries, self.protected_cap);
            }
        }
        for &slot in dirty.iter().chain(&pinned) {
            let class = self.entries[slot as usize].class;
            let state = Self::written_state(self.table[class as usize].placement);
            self.attach(slot, state, false);
        }
        self.update_pressure();
        Ok(())
    }

    /// Zero the activity counters of every class (hits, misses, bypassed, evicted and
    /// written-back); the counts of cached blocks describe the cache's content and stay.
    pub fn reset_counters(&mut self) {
        for s in &mut self.stats {
            s.hits = 0;
            s.misses = 0;
            s.bypassed_bytes = 0;
            s.evicted_blocks = 0;
            s.written_back_blocks = 0;
        }
    }
}
