//! What a crash-safe caller needs of the cache: the persistent view of each slot
//! (`durable`), the log of slots whose view changed since it was last drained, every
//! cached block for a checkpoint or dump (`residents`), and the replay of a recovered
//! block (`restore`).

use super::lists::LOGGED;
use super::{Cache, Durable, Resident, State};
use crate::block::BlockKey;

impl Cache {
    /// Start (or stop) logging the slots whose `durable` view changes, for journalling.
    pub fn track_changes(&mut self, on: bool) {
        self.changes = on.then(Vec::new);
        for e in &mut self.entries {
            e.marks &= !LOGGED;
        }
    }

    /// The state a journal must hold for `slot`, with its block and class.
    pub fn durable(&self, slot: u32) -> (Durable, BlockKey, u8) {
        let e = &self.entries[slot as usize];
        let d = match e.state {
            _ if e.cancelled => Durable::Empty,
            State::Empty | State::Filling => Durable::Empty,
            State::Clean => Durable::Clean,
            State::Dirty | State::Cleaning => Durable::Dirty,
            State::Pinned => Durable::Pinned,
        };
        (d, e.key, e.class)
    }

    /// Hand the logged slots to `f` (each once) and clear the log.
    pub fn drain_changes(&mut self, mut f: impl FnMut(&Cache, u32)) {
        let Some(mut log) = self.changes.take() else {
            return;
        };
        for &slot in &log {
            self.entries[slot as usize].marks &= !LOGGED;
            f(self, slot);
        }
        log.clear();
        self.changes = Some(log);
    }

    /// Every cached block, in slot order.
    pub fn residents(&self) -> impl Iterator<Item = Resident> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.cancelled && !matches!(e.state, State::Empty | State::Filling))
            .map(|(slot, e)| Resident {
                slot: slot as u32,
                key: e.key,
                class: e.class,
                state: e.state,
            })
    }

    /// Put a recovered block back (journal replay): `dirty` blocks go on their dirty
    /// list, others on the free list as clean. The slot must be Empty.
    pub fn restore(&mut self, slot: u32, key: BlockKey, class: u8, dirty: bool) -> bool {
        if slot >= self.cfg.entries
            || self.entries[slot as usize].state != State::Empty
            || self.find(key).is_some()
        {
            return false;
        }
        self.detach(slot);
        let e = &mut self.entries[slot as usize];
        e.key = key;
        e.class = class;
        e.version = e.version.wrapping_add(1);
        self.map.insert(key, slot);
        if let Some(c) = &mut self.clock {
            c.admit(slot, key);
        }
        let state = if dirty {
            Self::written_state(self.table[class as usize].placement)
        } else {
            State::Clean
        };
        self.attach(slot, state, false);
        self.update_pressure();
        true
    }
}
