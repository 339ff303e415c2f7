//! The consistency walk of the cache (`Cache::check`): every list, the clock, the block
//! map and the counters, checked against one another.

use super::lists::{FREE_LIST, HOT, NIL, PROTECTED};
use super::{Cache, State};
use crate::policy::CLASSES;

impl Cache {
    /// Walk every structure and check that it agrees with the counters. For tests and
    /// `fsck`; costs O(entries).
    pub fn check(&self) -> Result<(), String> {
        let n = self.cfg.entries as usize;
        let mut seen = vec![false; n];
        let mut counters = vec![(0u64, 0u64); CLASSES];
        for (li, l) in self.lists.iter().enumerate() {
            let (mut cur, mut prev, mut len) = (l.head, NIL, 0u32);
            while cur != NIL {
                let e = &self.entries[cur as usize];
                if self.list_of(e) as usize != li || e.prev != prev {
                    return Err(format!("slot {cur}: broken link in list {li}"));
                }
                if std::mem::replace(&mut seen[cur as usize], true) {
                    return Err(format!("slot {cur} in two lists"));
                }
                let hot = e.marks & HOT != 0;
                let ok = if li == FREE_LIST as usize {
                    matches!(e.state, State::Empty | State::Clean) && !hot
                } else if li == PROTECTED as usize {
                    e.state == State::Clean && hot && self.slru
                } else {
                    e.state == State::Dirty && self.table[e.class as usize].priority as usize == li
                };
                if !ok {
                    return Err(format!("slot {cur}: state {:?} on list {li}", e.state));
                }
                prev = cur;
                cur = e.next;
                len += 1;
            }
            if l.tail != prev || l.len != len {
                return Err(format!("list {li}: tail or length wrong"));
            }
            let bit = li < CLASSES && self.lists.marked_nonempty(li);
            if li < CLASSES && bit != (len > 0) {
                return Err(format!("list {li}: non-empty bit wrong"));
            }
        }
        if let Some(c) = &self.clock {
            c.check(
                |slot| {
                    let e = &self.entries[slot as usize];
                    if e.state != State::Clean || e.marks & HOT != 0 {
                        return Err(format!("slot {slot}: state {:?} on the clock", e.state));
                    }
                    if std::mem::replace(&mut seen[slot as usize], true) {
                        return Err(format!("slot {slot} on the clock and a list"));
                    }
                    Ok(())
                },
                |key| self.find(key).is_some(),
            )?;
        }
        let (mut in_flight, mut pinned, mut mapped) = (0u32, 0u32, 0usize);
        for (slot, e) in self.entries.iter().enumerate() {
            let listed = matches!(e.state, State::Empty | State::Clean | State::Dirty);
            if listed != seen[slot] {
                return Err(format!(
                    "slot {slot}: state {:?} vs. list membership",
                    e.state
                ));
            }
            match e.state {
                State::Filling | State::Cleaning => in_flight += 1,
                State::Pinned => pinned += 1,
                _ => {}
            }
            if e.cancelled && !matches!(e.state, State::Filling | State::Cleaning) {
                return Err(format!("slot {slot}: cancelled but not in flight"));
            }
            let holds = e.state != State::Empty && !e.cancelled;
            if holds {
                mapped += 1;
                if self.find(e.key) != Some(slot as u32) {
                    return Err(format!("slot {slot}: not in the block map"));
                }
                match e.state {
                    State::Clean => counters[e.class as usize].0 += 1,
                    State::Filling => {}
                    _ => counters[e.class as usize].1 += 1,
                }
            }
        }
        if mapped != self.map.len() {
            return Err("block map holds entries no slot holds".into());
        }
        if in_flight != self.in_flight || pinned != self.pinned {
            return Err("in-flight or pinned count wrong".into());
        }
        for (c, &(clean, dirty)) in counters.iter().enumerate() {
            let s = &self.stats[c];
            if s.clean_blocks != clean || s.dirty_blocks != dirty {
                return Err(format!("class {c}: counters wrong"));
            }
        }
        if self.protected_entries() > self.protected_cap {
            return Err("protected segment over its cap".into());
        }
        let free = self.unprotected_free();
        if self.syncer_active && free >= self.cfg.high || !self.syncer_active && free < self.cfg.low
        {
            return Err("syncer state disagrees with the watermarks".into());
        }
        Ok(())
    }
}
