//! The write-back cache of the DSS paper (section 4.4), as pure bookkeeping.
//!
//! The SSD is cut into fixed allocation units ("entries", addressed by slot number). Free
//! entries, including clean ones that still hold valid data, sit on one free list in LRU
//! order: allocation takes the head, use moves an entry to the tail. Dirty entries sit on a
//! dirty list per priority level, also LRU. The syncer cleans when the free list falls
//! below the low watermark, lowest priority first, until the high watermark is reached.
//! That span is "pressure": it is kept from the free-entry count alone (`update_pressure`
//! after every operation), so it begins with the write that crosses the low watermark,
//! not when a syncer thread gets to run. Under pressure, classes at or past the cut-off
//! priority bypass the cache (selective allocation).
//!
//! Classes that share a priority share a dirty list, so a policy where every class has the
//! same priority is plain LRU: that is how `lru` mode differs from `dss` by values only.
//!
//! Policy options beyond the paper: `base_list = "slru"` makes the free list segmented
//! LRU: a block referenced again while cached (a read hit, or a write to it) is marked,
//! and once clean it sits on a protected list that allocation takes from only when the
//! free list proper is empty; the protected list is capped and hands its oldest entry
//! back. Blocks seen once, such as a scan's, are then reused before a re-referenced set,
//! and the watermarks count the unprotected free entries only, so the syncer makes room
//! from dirty blocks rather than from protected ones.
//! `base_list = "clock-pro"` reuses clean entries in CLOCK-Pro's order instead (module
//! `clockpro`, which says where it departs from the paper): clean blocks sit on its clock,
//! hot or cold, and the watermarks count the empty entries and the cold blocks, for the same
//! reason as under `slru`. `read_allocate = "below-cutoff"`
//! fills read misses only of classes before the cut-off priority; `"second-miss"` fills a
//! block only when it missed before within the last cache-size read misses.
//!
//! Nothing here does I/O. Operations that need I/O to finish (read fills, write-backs)
//! are two-phase: the engine hands out the slot and a version, the caller does the I/O and
//! reports back, and the version tells whether the block changed meanwhile.
//!
//! This module holds the `Cache` with its foreground decisions (reads, writes, fills,
//! reclassification, discards). Its submodules hold the entries and their lists
//! (`lists`), the second-miss filter (`ghosts`), the write-back side (`syncer`), what a
//! journal needs of the cache (`journal`), the consistency walk (`check`) and the types
//! the cache reports (`outcome`).

mod check;
mod ghosts;
mod journal;
mod lists;
mod outcome;
mod reload;
mod syncer;

pub use crate::block::{BlockHasher, BlockKey};
pub use crate::config::Config;
pub use outcome::{ClassCounters, Durable, ReadOutcome, Resident, State, Victim, WriteOutcome};

use crate::blockmap::BlockMap;
use crate::clockpro::{ClockPro, ClockProStats};
use crate::policy::{BaseList, CLASSES, ClassPolicy, Placement, ReadAllocate, Resolved, WhenFull};
use ghosts::Ghosts;
use lists::{CLOCK, Entry, FREE_LIST, HOT, LOGGED, Lists, NIL, NO_LIST, PROTECTED};

pub struct Cache {
    cfg: Config,
    table: [ClassPolicy; CLASSES],
    bypass_from: u16,
    /// Read misses of priorities numerically at or past this are not filled.
    read_fill_from: u16,
    /// `"second-miss"`: recent read misses not filled.
    ghosts: Option<Ghosts>,
    slru: bool,
    /// Protected entries at most; the oldest beyond it go back to the free list.
    protected_cap: u32,
    /// `clock-pro`: the clock that orders the clean entries.
    clock: Option<ClockPro>,
    /// Dirty neighbours a write-back victim takes along (`writeback_cluster`).
    cluster: u32,
    /// `when_full = "wait"`: see `must_wait`.
    wait_when_full: bool,
    block_size: u32,
    entries: Vec<Entry>,
    lists: Lists,
    map: BlockMap,
    stats: Vec<ClassCounters>,
    /// Entries in Filling or Cleaning state (cancelled or not).
    in_flight: u32,
    pinned: u32,
    syncer_active: bool,
    /// Slots whose persistent view (`Durable`) may have changed since the last drain, for
    /// a caller that journals it; `None` when nobody asked.
    changes: Option<Vec<u32>>,
}

impl Cache {
    pub fn new(policy: &Resolved, cfg: Config) -> Cache {
        let n = cfg.entries;
        let (lists, entries) = Lists::all_free(n);
        let map = BlockMap::with_capacity(n);
        let bypass_from = policy.bypass_priority.map_or(u16::MAX, u16::from);
        let slru = policy.base_list == BaseList::Slru;
        let mut c = Cache {
            cfg,
            table: policy.classes,
            bypass_from,
            read_fill_from: match policy.read_allocate {
                ReadAllocate::Always | ReadAllocate::SecondMiss => u16::MAX,
                ReadAllocate::Never => 0,
                ReadAllocate::BelowCutoff => bypass_from,
            },
            ghosts: (policy.read_allocate == ReadAllocate::SecondMiss)
                .then(|| Ghosts::new(n as usize)),
            slru,
            protected_cap: if slru {
                (f64::from(n) * policy.protected_fraction) as u32
            } else {
                0
            },
            clock: (policy.base_list == BaseList::ClockPro).then(|| ClockPro::new(n, cfg.high)),
            cluster: policy.writeback_cluster,
            wait_when_full: policy.when_full == WhenFull::Wait,
            block_size: policy.block_size,
            entries,
            lists,
            map,
            stats: vec![ClassCounters::default(); CLASSES],
            in_flight: 0,
            pinned: 0,
            syncer_active: false,
            changes: None,
        };
        c.update_pressure();
        c
    }

    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    pub fn config(&self) -> Config {
        self.cfg
    }

    pub fn class_policy(&self, class: u8) -> ClassPolicy {
        self.table[class as usize]
    }

    /// Empty and clean entries: everything an allocation may reuse.
    pub fn free_entries(&self) -> u32 {
        self.lists.len(FREE_LIST)
            + self.lists.len(PROTECTED)
            + self.clock.as_ref().map_or(0, ClockPro::resident)
    }

    /// Clean entries in the protected segment (`slru`; 0 otherwise).
    pub fn protected_entries(&self) -> u32 {
        self.lists.len(PROTECTED)
    }

    /// The clock's counts (`clock-pro`; None otherwise).
    pub fn clock_pro(&self) -> Option<ClockProStats> {
        self.clock.as_ref().map(ClockPro::stats)
    }

    /// True if `slot` holds a hot block (`clock-pro`).
    pub fn is_hot(&self, slot: u32) -> bool {
        self.clock.as_ref().is_some_and(|c| c.is_hot(slot))
    }

    /// Free entries the watermarks count: all of them under `lru`; under `slru` the
    /// protected segment is not counted, and under `clock-pro` only the empty entries and
    /// the cold blocks are (not the hot ones), so that the syncer makes room from dirty
    /// blocks before an allocation has to reuse a protected block or demote a hot one.
    fn unprotected_free(&self) -> u32 {
        self.lists.len(FREE_LIST) + self.clock.as_ref().map_or(0, ClockPro::cold_resident)
    }

    /// Bytes the cache's structures hold, as allocated: the entries, the block map's
    /// buckets, the lists' heads, the counters, the clock (`clock-pro`), the filter
    /// (`second-miss`) and the change log. Divided by `config().entries`, the memory
    /// each entry costs.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Cache>()
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.map.memory_bytes()
            + self.lists.memory_bytes()
            + self.stats.capacity() * std::mem::size_of::<ClassCounters>()
            + self.clock.as_ref().map_or(0, ClockPro::memory_bytes)
            + self.ghosts.as_ref().map_or(0, Ghosts::memory_bytes)
            + self
                .changes
                .as_ref()
                .map_or(0, |c| c.capacity() * std::mem::size_of::<u32>())
    }

    pub fn dirty_entries(&self) -> u32 {
        self.lists.dirty_len()
    }

    /// True when the policy places every class on the HDD: no read or write of file data
    /// is left for the engine to decide (blocks cached under an earlier policy aside).
    pub fn places_all_on_hdd(&self) -> bool {
        self.table.iter().all(|c| c.placement == Placement::Hdd)
    }

    pub fn pinned_entries(&self) -> u32 {
        self.pinned
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// True while the free list is between falling under the low watermark and climbing
    /// back to the high one: the cache is under pressure.
    pub fn syncer_active(&self) -> bool {
        self.syncer_active
    }

    pub fn counters(&self, class: u8) -> ClassCounters {
        self.stats[class as usize]
    }

    /// `bytes` of class `class` that the engine placed on the SSD went to the HDD instead,
    /// because the SSD could not take them (the caller has discarded their blocks).
    pub fn went_around(&mut self, class: u8, bytes: u64) {
        self.stats[class as usize].bypassed_bytes += bytes;
    }

    pub fn lookup(&self, key: BlockKey) -> Option<(u32, State)> {
        self.find(key).map(|s| (s, self.entries[s as usize].state))
    }

    // ---- list and accounting primitives: every state change goes through detach/attach.

    /// The list an entry sits on, from its state, class and marks: the free list (or the
    /// protected one), the dirty list of its priority, or none (pinned and in flight).
    #[inline]
    fn list_of(&self, e: &Entry) -> u16 {
        match e.state {
            State::Clean if self.clock.is_some() => CLOCK,
            State::Clean if e.marks & HOT != 0 => PROTECTED,
            State::Empty | State::Clean => FREE_LIST,
            State::Dirty => u16::from(self.table[e.class as usize].priority),
            _ => NO_LIST,
        }
    }

    /// Take `slot` off its list. Its state and class must still be the ones it was
    /// linked with.
    fn unlink(&mut self, slot: u32) {
        let list = self.list_of(&self.entries[slot as usize]);
        if list == NO_LIST {
            return;
        }
        if list == CLOCK {
            if let Some(c) = &mut self.clock {
                c.remove(slot);
            }
            return;
        }
        self.lists.unlink(&mut self.entries, slot, list);
    }

    /// The slot mapped to `key`.
    #[inline]
    fn find(&self, key: BlockKey) -> Option<u32> {
        let entries = &self.entries;
        self.map.get(key, |s| entries[s as usize].key)
    }

    fn count(&mut self, slot: u32, add: bool) {
        let e = self.entries[slot as usize];
        let s = &mut self.stats[e.class as usize];
        let field = match e.state {
            State::Clean => &mut s.clean_blocks,
            State::Dirty | State::Pinned => &mut s.dirty_blocks,
            State::Cleaning if !e.cancelled => &mut s.dirty_blocks,
            _ => return,
        };
        if add {
            *field += 1;
        } else {
            *field -= 1;
        }
    }

    /// Take an entry out of its list and its counters.
    fn detach(&mut self, slot: u32) {
        self.unlink(slot);
        self.count(slot, false);
        match self.entries[slot as usize].state {
            State::Filling | State::Cleaning => self.in_flight -= 1,
            State::Pinned => self.pinned -= 1,
            _ => {}
        }
    }

    /// Put an entry in `state`: into the list and counters that state implies.
    fn attach(&mut self, slot: u32, state: State, at_head: bool) {
        let e = &mut self.entries[slot as usize];
        e.state = state;
        if state == State::Empty {
            e.marks &= !HOT;
        }
        let hot = e.marks & HOT != 0;
        if let Some(log) = &mut self.changes
            && e.marks & LOGGED == 0
        {
            e.marks |= LOGGED;
            log.push(slot);
        }
        match state {
            State::Clean if self.clock.is_some() => {
                if let Some(c) = &mut self.clock {
                    c.insert(slot);
                }
            }
            State::Clean if hot => {
                self.lists.link(&mut self.entries, slot, PROTECTED, at_head);
                self.lists
                    .demote_overflow(&mut self.entries, self.protected_cap);
            }
            State::Empty | State::Clean => {
                self.lists.link(&mut self.entries, slot, FREE_LIST, at_head)
            }
            State::Dirty => {
                let prio = self.table[self.entries[slot as usize].class as usize].priority;
                self.lists
                    .link(&mut self.entries, slot, u16::from(prio), at_head)
            }
            State::Pinned => self.pinned += 1,
            State::Filling | State::Cleaning => self.in_flight += 1,
        }
        self.count(slot, true);
    }

    /// A cached block is referenced again: under `slru` it becomes protected. Only for a
    /// detached entry (the mark decides its list).
    #[inline]
    fn referenced(&mut self, slot: u32) {
        if self.slru {
            self.entries[slot as usize].marks |= HOT;
        } else if let Some(c) = &mut self.clock {
            c.reference(slot);
        }
    }

    fn update_pressure(&mut self) {
        let free = self.unprotected_free();
        if free < self.cfg.low {
            self.syncer_active = true;
        } else if free >= self.cfg.high {
            self.syncer_active = false;
        }
    }

    /// True when a write of block `key` in `class` should wait before `write`: the policy
    /// says `when_full = "wait"`, the write would take an entry (`takes_entry`), and
    /// either `others_waiting` (writers queued earlier are owed the room write-back
    /// frees; the caller keeps that queue) or none is free or clean to take while some
    /// are dirty or in flight under pressure, so that write-back will free one. Otherwise
    /// `write` decides at once (and writes around a full cache). A query only: the caller
    /// waits and asks again. The block is looked up last, after the cheap tests.
    pub fn must_wait(&self, key: BlockKey, class: u8, others_waiting: bool) -> bool {
        self.wait_when_full
            && (others_waiting
                || (self.syncer_active
                    && !self.has_reusable()
                    && self.lists.dirty_len() + self.in_flight > 0))
            && self.takes_entry(key, class)
    }

    /// True when a write of block `key` in `class` would take a new entry: the block is
    /// not resident, and its class is cached and not bypassing.
    fn takes_entry(&self, key: BlockKey, class: u8) -> bool {
        self.table[class as usize].placement != Placement::Hdd
            && self.may_allocate(class)
            && self.find(key).is_none()
    }

    /// True when `allocate` has an entry to take without waiting for write-back.
    fn has_reusable(&self) -> bool {
        self.lists.head(FREE_LIST) != NIL
            || self.lists.head(PROTECTED) != NIL
            || self.clock.as_ref().is_some_and(|c| c.resident() > 0)
    }

    fn may_allocate(&self, class: u8) -> bool {
        !(self.syncer_active && u16::from(self.table[class as usize].priority) >= self.bypass_from)
    }

    /// Drop the block held by `slot` (its mapping goes away). In-flight entries keep the
    /// slot until their I/O reports back.
    fn drop_block(&mut self, slot: u32) {
        let e = self.entries[slot as usize];
        self.map.remove(e.key, slot);
        self.detach(slot);
        match e.state {
            State::Filling | State::Cleaning => {
                self.entries[slot as usize].cancelled = true;
                self.attach(slot, e.state, false);
            }
            _ => self.attach(slot, State::Empty, true),
        }
    }

    /// Allocate the head of the free list for `key`, evicting the clean block it held.
    fn allocate(&mut self, key: BlockKey, class: u8, state: State) -> Option<u32> {
        let mut slot = self.lists.head(FREE_LIST);
        if slot == NIL {
            slot = match &mut self.clock {
                Some(c) => {
                    let entries = &self.entries;
                    c.evict(|s| entries[s as usize].key)?
                }
                None => self.lists.head(PROTECTED),
            };
            if slot == NIL {
                return None;
            }
        }
        self.detach(slot);
        self.entries[slot as usize].marks &= !HOT;
        let e = self.entries[slot as usize];
        if e.state == State::Clean {
            self.map.remove(e.key, slot);
            self.stats[e.class as usize].evicted_blocks += 1;
        }
        let e = &mut self.entries[slot as usize];
        e.key = key;
        e.class = class;
        e.cancelled = false;
        e.version = e.version.wrapping_add(1);
        self.map.insert(key, slot);
        if let Some(c) = &mut self.clock {
            c.admit(slot, key);
        }
        self.attach(slot, state, false);
        Some(slot)
    }

    /// The resident state a written block takes under `placement`.
    fn written_state(placement: Placement) -> State {
        if placement == Placement::Ssd {
            State::Pinned
        } else {
            State::Dirty
        }
    }

    /// A block of class `class` is written (`bytes` of it). Decides where the data goes.
    pub fn write(&mut self, key: BlockKey, class: u8, bytes: u32) -> WriteOutcome {
        let cp = self.table[class as usize];
        let mut resident = self.find(key);
        if let Some(slot) = resident
            && self.entries[slot as usize].state == State::Filling
        {
            // The fill would carry the old data: let it land in a slot nobody maps.
            self.drop_block(slot);
            resident = None;
        }
        let out = match resident {
            Some(slot) => self.write_resident(slot, class, cp, bytes),
            None => self.write_miss(key, class, cp, bytes),
        };
        self.update_pressure();
        out
    }

    fn write_resident(
        &mut self,
        slot: u32,
        class: u8,
        cp: ClassPolicy,
        bytes: u32,
    ) -> WriteOutcome {
        let state = self.entries[slot as usize].state;
        if state == State::Clean && (cp.placement == Placement::Hdd || !self.may_allocate(class)) {
            // A clean copy of a block that should not be cached: drop it rather than
            // dirty it, so the write frees space instead of taking it.
            if cp.placement != Placement::Hdd {
                self.stats[class as usize].bypassed_bytes += u64::from(bytes);
            }
            self.drop_block(slot);
            return WriteOutcome::Hdd {
                bypassed: cp.placement != Placement::Hdd,
            };
        }
        // Otherwise the SSD holds the newest bytes of this block (or will, once the
        // write lands), so the write must go there whatever the placement; a block that
        // should not stay is left dirty for the syncer to move out.
        self.detach(slot);
        self.referenced(slot);
        let e = &mut self.entries[slot as usize];
        e.class = class;
        e.version = e.version.wrapping_add(1);
        let next = match state {
            State::Cleaning => State::Cleaning,
            _ => Self::written_state(cp.placement),
        };
        self.attach(slot, next, false);
        WriteOutcome::Ssd { slot, hit: true }
    }

    fn write_miss(
        &mut self,
        key: BlockKey,
        class: u8,
        cp: ClassPolicy,
        bytes: u32,
    ) -> WriteOutcome {
        if cp.placement == Placement::Hdd {
            return WriteOutcome::Hdd { bypassed: false };
        }
        if self.may_allocate(class)
            && let Some(slot) = self.allocate(key, class, Self::written_state(cp.placement))
        {
            return WriteOutcome::Ssd { slot, hit: false };
        }
        self.stats[class as usize].bypassed_bytes += u64::from(bytes);
        WriteOutcome::Hdd { bypassed: true }
    }

    /// A block of class `class` is read.
    pub fn read(&mut self, key: BlockKey, class: u8) -> ReadOutcome {
        let out = match self.find(key) {
            Some(slot) => {
                let state = self.entries[slot as usize].state;
                match state {
                    State::Filling => {
                        self.stats[class as usize].misses += 1;
                        ReadOutcome::Miss
                    }
                    State::Clean if self.clock.is_some() => {
                        // A clock does not move what it hits: the reference bit is enough.
                        self.stats[class as usize].hits += 1;
                        self.referenced(slot);
                        ReadOutcome::Hit { slot }
                    }
                    State::Clean | State::Dirty => {
                        self.stats[class as usize].hits += 1;
                        self.detach(slot);
                        self.referenced(slot);
                        self.attach(slot, state, false);
                        ReadOutcome::Hit { slot }
                    }
                    _ => {
                        // Pinned or being cleaned: on no list, so the mark can change.
                        self.stats[class as usize].hits += 1;
                        self.referenced(slot);
                        ReadOutcome::Hit { slot }
                    }
                }
            }
            None => {
                self.stats[class as usize].misses += 1;
                self.read_miss(key, class)
            }
        };
        self.update_pressure();
        out
    }

    fn read_miss(&mut self, key: BlockKey, class: u8) -> ReadOutcome {
        let cp = self.table[class as usize];
        if cp.placement != Placement::Cache || u16::from(cp.priority) >= self.read_fill_from {
            return ReadOutcome::Miss;
        }
        if let Some(g) = &mut self.ghosts
            && !g.second_miss(key)
        {
            return ReadOutcome::Miss;
        }
        if self.may_allocate(class)
            && let Some(slot) = self.allocate(key, class, State::Filling)
        {
            let version = self.entries[slot as usize].version;
            return ReadOutcome::MissFill { slot, version };
        }
        self.stats[class as usize].bypassed_bytes += u64::from(self.block_size);
        ReadOutcome::Miss
    }

    /// The fill of `slot` (from `MissFill`) has landed on the SSD (`ok`) or failed.
    pub fn fill_done(&mut self, slot: u32, version: u32, ok: bool) {
        let e = self.entries[slot as usize];
        if e.state != State::Filling || e.version != version {
            return;
        }
        if !e.cancelled && !ok {
            self.map.remove(e.key, slot);
            self.entries[slot as usize].cancelled = true;
        }
        self.detach(slot);
        if self.entries[slot as usize].cancelled {
            self.entries[slot as usize].cancelled = false;
            self.attach(slot, State::Empty, true);
        } else {
            self.attach(slot, State::Clean, false);
        }
        self.update_pressure();
    }

    /// Change the class of a cached block (no data moves now; a block whose new
    /// placement is elsewhere is left dirty for the syncer).
    pub fn reclassify(&mut self, key: BlockKey, class: u8) {
        let Some(slot) = self.find(key) else {
            return;
        };
        let state = self.entries[slot as usize].state;
        let cp = self.table[class as usize];
        self.detach(slot);
        self.entries[slot as usize].class = class;
        let next = match (state, cp.placement) {
            (State::Pinned, Placement::Cache | Placement::Hdd) => State::Dirty,
            (State::Dirty, Placement::Ssd) => State::Pinned,
            (s, _) => s,
        };
        self.attach(slot, next, false);
        self.update_pressure();
    }

    /// The class the block in `slot` is cached under (a hit's slot, say).
    pub fn class_at(&self, slot: u32) -> u8 {
        self.entries[slot as usize].class
    }

    /// Forget a block (truncate, unlink): its cached data, dirty or not, is dropped.
    pub fn discard(&mut self, key: BlockKey) {
        if let Some(slot) = self.find(key) {
            self.drop_block(slot);
            self.update_pressure();
        }
    }

    /// Forget blocks `first..end` of `file`.
    ///
    /// Freed slots go to the head of the free list one by one, so they are freed last to
    /// first: the next sequential writer gets them back in ascending order, which lets
    /// its blocks reach the slab in one write per run of slots.
    pub fn discard_from(&mut self, file: u64, first: u64, end: u64) {
        if end.saturating_sub(first) <= u64::from(self.cfg.entries) {
            for index in (first..end).rev() {
                self.discard(BlockKey { file, index });
            }
            return;
        }
        for slot in (0..self.cfg.entries).rev() {
            let e = self.entries[slot as usize];
            let live = matches!(
                e.state,
                State::Clean | State::Dirty | State::Pinned | State::Filling | State::Cleaning
            ) && !e.cancelled;
            if live && e.key.file == file && (first..end).contains(&e.key.index) {
                self.drop_block(slot);
            }
        }
        self.update_pressure();
    }
}
