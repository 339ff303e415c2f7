//! What the cache reports to its caller: the state of a slot (`State`, and `Durable`, the
//! part of it a journal keeps), the decisions of a read or write (`ReadOutcome`,
//! `WriteOutcome`), the blocks handed to the syncer (`Victim`), the blocks a dump lists
//! (`Resident`) and the per-class counters (`ClassCounters`).

use crate::block::BlockKey;

/// What a slot holds, and whether I/O on it is in flight.
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
