//! The write-back side of the cache: choosing the dirty blocks the syncer cleans (under
//! pressure, or all of them for a flush) and taking back its reports.

use super::{Cache, State, Victim};
use crate::block::BlockKey;
use crate::policy::Placement;

impl Cache {
    /// Victims for the syncer under pressure: lowest priority first, LRU within a
    /// priority, until the free entries plus those in flight reach the high watermark.
    /// Appends to `out` (no allocation when it has room) and returns how many.
    pub fn pick_victims(&mut self, out: &mut Vec<Victim>, max: usize) -> usize {
        if !self.syncer_active {
            return 0;
        }
        let mut n = 0;
        while n < max && self.unprotected_free() + self.in_flight < self.cfg.high {
            let Some(slot) = self.lists.lowest_priority_dirty() else {
                break;
            };
            let victim = self.start_cleaning(slot);
            out.push(victim);
            n += 1;
            if self.cluster > 0 {
                n += self.take_neighbours(out, victim, max - n);
            }
        }
        n
    }

    /// The dirty blocks of `victim`'s file and class next to it, after it and then
    /// before it, up to the cluster size and `room`: written back with it, they reach the
    /// HDD as one run instead of one piece per batch they would otherwise fall into. Same
    /// class only, so that no block of a higher priority is cleaned before its turn.
    fn take_neighbours(&mut self, out: &mut Vec<Victim>, victim: Victim, room: usize) -> usize {
        let want = (self.cluster as usize).min(room);
        let mut n = 0;
        for step in [1i64, -1] {
            let mut index = victim.key.index;
            while n < want {
                let Some(next) = index.checked_add_signed(step) else {
                    break;
                };
                index = next;
                let key = BlockKey {
                    file: victim.key.file,
                    index,
                };
                let Some(slot) = self.find(key) else {
                    break;
                };
                let e = self.entries[slot as usize];
                if e.state != State::Dirty || e.class != victim.class {
                    break;
                }
                out.push(self.start_cleaning(slot));
                n += 1;
            }
        }
        n
    }

    /// Victims regardless of pressure (drain before unmount, explicit flush), lowest
    /// priority first; `file` restricts them to one file.
    pub fn pick_flush(&mut self, out: &mut Vec<Victim>, max: usize, file: Option<u64>) -> usize {
        let mut n = 0;
        if let Some(f) = file {
            for slot in 0..self.cfg.entries {
                if n == max {
                    break;
                }
                let e = self.entries[slot as usize];
                if e.state == State::Dirty && e.key.file == f {
                    out.push(self.start_cleaning(slot));
                    n += 1;
                }
            }
            return n;
        }
        while n < max {
            let Some(slot) = self.lists.lowest_priority_dirty() else {
                break;
            };
            out.push(self.start_cleaning(slot));
            n += 1;
        }
        n
    }

    /// Dirty blocks of `file` among the indices `range`, in index order, regardless of
    /// pressure. `range.start` moves past the blocks looked at, so that repeated calls walk
    /// the range once: a flush of one file costs lookups of its own blocks, not a scan of
    /// the cache. A range longer than the cache has entries is scanned slot by slot.
    pub fn pick_flush_range(
        &mut self,
        out: &mut Vec<Victim>,
        max: usize,
        file: u64,
        range: &mut std::ops::Range<u64>,
    ) -> usize {
        if range.end.saturating_sub(range.start) > u64::from(self.cfg.entries) {
            let n = self.pick_flush(out, max, Some(file));
            if n < max {
                range.start = range.end;
            }
            return n;
        }
        let mut n = 0;
        while n < max && range.start < range.end {
            let key = BlockKey {
                file,
                index: range.start,
            };
            range.start += 1;
            if let Some(slot) = self.find(key)
                && self.entries[slot as usize].state == State::Dirty
            {
                out.push(self.start_cleaning(slot));
                n += 1;
            }
        }
        n
    }

    fn start_cleaning(&mut self, slot: u32) -> Victim {
        self.detach(slot);
        self.attach(slot, State::Cleaning, false);
        let e = self.entries[slot as usize];
        Victim {
            slot,
            key: e.key,
            version: e.version,
            class: e.class,
        }
    }

    /// The syncer wrote `victim` back (`ok`) or failed to.
    pub fn clean_done(&mut self, victim: &Victim, ok: bool) {
        let slot = victim.slot;
        let e = self.entries[slot as usize];
        if e.state != State::Cleaning {
            return;
        }
        self.detach(slot);
        let next = if e.cancelled {
            self.entries[slot as usize].cancelled = false;
            State::Empty
        } else if ok && e.version == victim.version {
            self.stats[e.class as usize].written_back_blocks += 1;
            // Written back, so clean; a class that should no longer be cached leaves
            // with it instead of waiting for reuse.
            if self.table[e.class as usize].placement == Placement::Hdd {
                self.map.remove(e.key, slot);
                State::Empty
            } else {
                State::Clean
            }
        } else {
            // Rewritten while in flight (or the write-back failed): still dirty.
            Self::written_state(self.table[e.class as usize].placement)
        };
        let at_head = next == State::Empty;
        self.attach(slot, next, at_head);
        self.update_pressure();
    }
}
