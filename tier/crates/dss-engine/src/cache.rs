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

use crate::blockmap::BlockMap;
use crate::clockpro::{ClockPro, ClockProStats};
use crate::policy::{BaseList, CLASSES, ClassPolicy, Placement, ReadAllocate, Resolved};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};

const NIL: u32 = u32::MAX;
const NO_LIST: u16 = u16::MAX;
const FREE_LIST: u16 = CLASSES as u16;
/// `slru` only: clean entries referenced again while cached. Reused after the free list.
const PROTECTED: u16 = CLASSES as u16 + 1;
/// `clock-pro` only: clean entries, on the clock rather than on a list of `lists`.
const CLOCK: u16 = CLASSES as u16 + 2;

/// `Entry::marks` bits.
const LOGGED: u8 = 1;
const HOT: u8 = 2;

/// A logical block: a file and a block index inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct BlockKey {
    pub file: u64,
    pub index: u64,
}

impl Hash for BlockKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.file ^ self.index.rotate_left(29));
    }
}

/// Multiplicative hash for maps keyed by blocks outside the engine: SipHash costs more
/// than the rest of a decision.
#[derive(Default)]
pub struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        let x = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 32);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Holds nothing.
    Empty,
    /// Holds the same data as the HDD; reusable.
    Clean,
    /// Holds the only current copy; waits for the syncer.
    Dirty,
    /// Holds the only current copy and stays on the SSD (SSD placement).
    Pinned,
    /// Being filled from the HDD after a read miss; not yet servable.
    Filling,
    /// Being written back by the syncer.
    Cleaning,
}

/// One slot. 32 bytes, aligned so that an entry never straddles two cache lines: a
/// decision touches a handful of entries at random, and each costs one miss at most. The
/// list an entry is on follows from its state and class (see `list_of`).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
struct Entry {
    key: BlockKey,
    prev: u32,
    next: u32,
    version: u32,
    state: State,
    class: u8,
    /// A Filling or Cleaning entry whose block was dropped meanwhile: it keeps its slot
    /// until the I/O in flight reports back, then becomes Empty.
    cancelled: bool,
    /// `LOGGED`: already in the change log since it was last drained. `HOT` (`slru`):
    /// referenced again since it was cached, so its clean copy is protected.
    marks: u8,
}

#[derive(Clone, Copy, Debug, Default)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

/// Blocks that missed on a read recently and were not filled (`"second-miss"`): a
/// bounded FIFO of keys, each with the sequence number of its latest entry so that an
/// older duplicate leaving the queue does not forget a newer miss.
struct Ghosts {
    latest: HashMap<BlockKey, u64, BuildHasherDefault<BlockHasher>>,
    order: VecDeque<(BlockKey, u64)>,
    seq: u64,
    cap: usize,
}

impl Ghosts {
    fn new(cap: usize) -> Ghosts {
        Ghosts {
            latest: HashMap::default(),
            order: VecDeque::new(),
            seq: 0,
            cap: cap.max(1),
        }
    }

    /// True if `key` missed recently (and forgets it); otherwise remembers this miss.
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

/// Cache geometry: entry count and watermarks in free entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub entries: u32,
    pub low: u32,
    pub high: u32,
}

impl Config {
    pub fn from_fractions(entries: u32, low: f64, high: f64) -> Config {
        let e = f64::from(entries);
        let mut lo = (e * low).ceil() as u32;
        let mut hi = (e * high).ceil() as u32;
        lo = lo.clamp(1.min(entries), entries);
        hi = hi.clamp(lo, entries);
        // Equal watermarks would make the cleaner start and stop on the same entry; when
        // rounding puts both at the top, the low one gives way instead.
        if hi == lo && hi < entries {
            hi += 1;
        } else if hi == lo && lo > 1 {
            lo -= 1;
        }
        Config {
            entries,
            low: lo,
            high: hi,
        }
    }
}

/// Per-class counters. Block counts are in allocation units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounters {
    pub clean_blocks: u64,
    /// Dirty, pinned and being-cleaned blocks: every block whose only copy is the SSD's.
    pub dirty_blocks: u64,
    pub hits: u64,
    pub misses: u64,
    /// Bytes of writes and read fills that the placement would have cached but went to
    /// the HDD (selective allocation or a full cache).
    pub bypassed_bytes: u64,
    /// Clean blocks whose data was dropped to make room.
    pub evicted_blocks: u64,
    /// Blocks the syncer wrote back to the HDD.
    pub written_back_blocks: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Write the block into SSD slot `slot`. `hit`: the slot already held this block (a
    /// partial write needs no read from the HDD first).
    Ssd { slot: u32, hit: bool },
    /// Write the block to the HDD. Any clean cached copy has been dropped.
    Hdd { bypassed: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Serve from SSD slot `slot`.
    Hit { slot: u32 },
    /// Serve from the HDD.
    Miss,
    /// Serve from the HDD, copy the block into `slot`, then call `fill_done`.
    MissFill { slot: u32, version: u32 },
}

/// A dirty block handed to the syncer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    pub slot: u32,
    pub key: BlockKey,
    pub version: u32,
    pub class: u8,
}

/// One cached block, for dumps and journal checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resident {
    pub slot: u32,
    pub key: BlockKey,
    pub class: u8,
    pub state: State,
}

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
    block_size: u32,
    entries: Vec<Entry>,
    /// Dirty lists indexed by priority, then the free list.
    lists: Vec<List>,
    /// Bit p set when the dirty list of priority p is not empty.
    nonempty: [u64; 4],
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

/// What a crash-safe caller must remember of a slot: the state a replay would restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durable {
    /// Nothing to restore (empty, being filled, or dropped while in flight).
    Empty,
    /// Same data as the HDD.
    Clean,
    /// The only current copy, waiting for (or under) write-back.
    Dirty,
    /// The only current copy, kept on the SSD.
    Pinned,
}

impl Cache {
    pub fn new(policy: &Resolved, cfg: Config) -> Cache {
        let n = cfg.entries;
        let mut entries = Vec::with_capacity(n as usize);
        for i in 0..n {
            entries.push(Entry {
                prev: if i == 0 { NIL } else { i - 1 },
                next: if i + 1 == n { NIL } else { i + 1 },
                state: State::Empty,
                class: 0,
                cancelled: false,
                marks: 0,
                version: 0,
                key: BlockKey::default(),
            });
        }
        let mut lists = vec![
            List {
                head: NIL,
                tail: NIL,
                len: 0
            };
            CLASSES + 2
        ];
        if n > 0 {
            lists[FREE_LIST as usize] = List {
                head: 0,
                tail: n - 1,
                len: n,
            };
        }
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
            block_size: policy.block_size,
            entries,
            lists,
            nonempty: [0; 4],
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
        self.lists[FREE_LIST as usize].len
            + self.lists[PROTECTED as usize].len
            + self.clock.as_ref().map_or(0, ClockPro::resident)
    }

    /// Clean entries in the protected segment (`slru`; 0 otherwise).
    pub fn protected_entries(&self) -> u32 {
        self.lists[PROTECTED as usize].len
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
        self.lists[FREE_LIST as usize].len + self.clock.as_ref().map_or(0, ClockPro::cold_resident)
    }

    pub fn dirty_entries(&self) -> u32 {
        self.lists[..CLASSES].iter().map(|l| l.len).sum()
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
        let e = self.entries[slot as usize];
        let list = self.list_of(&e);
        if list == NO_LIST {
            return;
        }
        if list == CLOCK {
            if let Some(c) = &mut self.clock {
                c.remove(slot);
            }
            return;
        }
        let l = &mut self.lists[list as usize];
        if e.prev == NIL {
            l.head = e.next;
        } else {
            self.entries[e.prev as usize].next = e.next;
        }
        if e.next == NIL {
            l.tail = e.prev;
        } else {
            self.entries[e.next as usize].prev = e.prev;
        }
        l.len -= 1;
        if l.len == 0 && list < FREE_LIST {
            self.nonempty[(list / 64) as usize] &= !(1u64 << (list % 64));
        }
        let e = &mut self.entries[slot as usize];
        e.prev = NIL;
        e.next = NIL;
    }

    fn link(&mut self, slot: u32, list: u16, at_head: bool) {
        let l = self.lists[list as usize];
        {
            let e = &mut self.entries[slot as usize];
            if at_head {
                e.prev = NIL;
                e.next = l.head;
            } else {
                e.prev = l.tail;
                e.next = NIL;
            }
        }
        let l = &mut self.lists[list as usize];
        if at_head {
            if l.head == NIL {
                l.tail = slot;
            } else {
                self.entries[l.head as usize].prev = slot;
            }
            l.head = slot;
        } else {
            if l.tail == NIL {
                l.head = slot;
            } else {
                self.entries[l.tail as usize].next = slot;
            }
            l.tail = slot;
        }
        l.len += 1;
        if list < FREE_LIST {
            self.nonempty[(list / 64) as usize] |= 1u64 << (list % 64);
        }
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
                self.link(slot, PROTECTED, at_head);
                self.demote_overflow();
            }
            State::Empty | State::Clean => self.link(slot, FREE_LIST, at_head),
            State::Dirty => {
                let prio = self.table[self.entries[slot as usize].class as usize].priority;
                self.link(slot, u16::from(prio), at_head)
            }
            State::Pinned => self.pinned += 1,
            State::Filling | State::Cleaning => self.in_flight += 1,
        }
        self.count(slot, true);
    }

    /// Past its cap, the protected segment hands its least recently used entry back to
    /// the free list's most recent end, as segmented LRU does.
    fn demote_overflow(&mut self) {
        if self.lists[PROTECTED as usize].len > self.protected_cap {
            let slot = self.lists[PROTECTED as usize].head;
            self.unlink(slot);
            self.entries[slot as usize].marks &= !HOT;
            self.link(slot, FREE_LIST, false);
        }
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
        let mut slot = self.lists[FREE_LIST as usize].head;
        if slot == NIL {
            slot = match &mut self.clock {
                Some(c) => {
                    let entries = &self.entries;
                    c.evict(|s| entries[s as usize].key)?
                }
                None => self.lists[PROTECTED as usize].head,
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

    /// Victims for the syncer under pressure: lowest priority first, LRU within a
    /// priority, until the free entries plus those in flight reach the high watermark.
    /// Appends to `out` (no allocation when it has room) and returns how many.
    pub fn pick_victims(&mut self, out: &mut Vec<Victim>, max: usize) -> usize {
        if !self.syncer_active {
            return 0;
        }
        let mut n = 0;
        while n < max && self.unprotected_free() + self.in_flight < self.cfg.high {
            let Some(slot) = self.lowest_priority_dirty() else {
                break;
            };
            out.push(self.start_cleaning(slot));
            n += 1;
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
            let Some(slot) = self.lowest_priority_dirty() else {
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

    fn lowest_priority_dirty(&self) -> Option<u32> {
        for w in (0..4).rev() {
            let bits = self.nonempty[w];
            if bits != 0 {
                let prio = w * 64 + 63 - bits.leading_zeros() as usize;
                return Some(self.lists[prio].head);
            }
        }
        None
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
            let bit = li < CLASSES && self.nonempty[li / 64] & (1u64 << (li % 64)) != 0;
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
