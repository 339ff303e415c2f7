//! The tier's state: the engine and the device models under one lock (`Inner`), and
//! what lives beside them without it (`Core`).

use super::warm::WarmFiles;
use crate::anchors::Anchors;
use crate::journal::Journal;
use dss_engine::device::Device;
use dss_engine::metamemory::MetaMemory;
use dss_engine::policy::Classify;
use dss_engine::{Cache, Victim};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Metadata pseudo-files: block keys with this bit set stand for inode, directory and
/// xattr updates, so that file-system metadata is charged through the same cache.
pub(super) const META: u64 = 1 << 63;

/// Blocks the syncer writes back per batch (per lock hold).
pub(super) const SYNC_BATCH: usize = 64;

/// How long a writer waiting for room goes on waiting while nothing moves (no write-back
/// batch done, no writer ahead of it served) before it writes around the full cache
/// instead: a batch takes milliseconds to a second of modelled time, so this many
/// seconds without one means write-back is failing, and the writer must not hang on it.
/// Modelled time: a dilated model stretches it (`room_patience`).
const ROOM_PATIENCE: Duration = Duration::from_secs(10);

/// `ROOM_PATIENCE` for devices dilated by `ssd` and `hdd` (DieCast factors, 1 for none):
/// a batch of a K times slower HDD takes K times as long, and a patience that did not
/// stretch with it would send writers around the cache sooner the larger K.
pub(super) fn room_patience(ssd: u32, hdd: u32) -> Duration {
    ROOM_PATIENCE * ssd.max(hdd).max(1)
}

/// How often a waiting writer looks again without being woken: room can also come from
/// a file's blocks being dropped, which no batch announces.
pub(super) const ROOM_POLL: Duration = Duration::from_millis(50);

/// At most this many descriptors of files with dirty blocks are kept open for the
/// syncer (`Inner::files`); the syncer opens any other such file through its anchor when
/// it writes it back. A cache holds the dirty blocks of millions of small objects, and a
/// descriptor each would exhaust the daemon's limit, failing every open of the mount.
pub(super) const OPEN_FILES: usize = 1024;

/// What the engine lock covers: the engine and everything its decisions change at once.
pub(super) struct Inner {
    pub(super) cache: Cache,
    pub(super) ssd: Device,
    pub(super) hdd: Device,
    /// Writable descriptors of files with dirty blocks, for the syncer: at most
    /// `OPEN_FILES`.
    pub(super) files: HashMap<u64, Arc<File>>,
    pub(super) victims: Vec<Victim>,
    pub(super) journal: Journal,
    /// Dirty or pinned blocks per file, as journalled.
    pub(super) dirty_count: HashMap<u64, u32>,
    /// Files whose last dirty block is gone: their anchors go once that is durable.
    pub(super) unanchor: Vec<u64>,
    /// Files written on the HDD (data, size) since their last HDD sync.
    pub(super) hdd_dirty: HashSet<u64>,
    /// Write-back batches that have cleaned blocks, and the modelled time the last of
    /// them was durable: a writer waiting for room (`Cache::must_wait`) waits for both.
    pub(super) cleaned_batches: u64,
    pub(super) cleaned_at: u64,
    /// `cleaned_batches` when a writer last waited its whole patience for room in vain.
    /// While no batch has cleaned since, write-back is failing (a full HDD) and the
    /// writers after it go around the cache at once instead of each waiting as long.
    pub(super) stalled_at: Option<u64>,
    /// Writers waiting for room, first come first served (ids from `next_waiter`): the
    /// entries a write-back batch frees go to the longest waiting writer, not to whichever
    /// thread wakes first, so that no request starves while others go on.
    pub(super) room_queue: VecDeque<u64>,
    pub(super) next_waiter: u64,
    /// Metadata blocks the host's memory holds (`--meta-memory`).
    pub(super) meta_memory: MetaMemory,
    /// With buffered metadata writes, the modelled time the last of them is on its
    /// device: an fsync waits for it, as ext4's waits for the journal's commit.
    pub(super) meta_written: u64,
}

impl Inner {
    /// Keep `file`'s descriptor for the syncer, while fewer than `OPEN_FILES` are kept.
    pub(super) fn keep_open(&mut self, id: u64, file: &Arc<File>) {
        if self.files.len() < OPEN_FILES {
            self.files.entry(id).or_insert_with(|| file.clone());
        }
    }
}

/// The cache of one mount, shared by the FUSE threads and the syncer.
pub struct Core {
    pub(super) inner: Mutex<Inner>,
    pub(super) wake: Condvar,
    /// Signalled when write-back has cleaned blocks or a writer has left the queue of
    /// writers waiting for room.
    pub(super) room: Condvar,
    /// `room_patience` for this mount's device models.
    pub(super) patience: Duration,
    pub(super) store: File,
    /// The journal's file, for syncing it without holding the lock.
    pub(super) journal_file: File,
    pub(super) anchors: Anchors,
    /// Files that have an anchor (read without the engine lock, for link counts).
    pub(super) anchored: Mutex<HashSet<u64>>,
    pub(super) bs: u64,
    /// The slab's size: the journal follows it on the modelled SSD.
    pub(super) slab_bytes: u64,
    /// The modelled HDD's span: where files lie on it.
    pub(super) hdd_span: u64,
    pub(super) t0: Instant,
    pub(super) mode: String,
    pub(super) policy_name: String,
    pub(super) classify: Classify,
    pub(super) ssd_model: String,
    pub(super) hdd_model: String,
    /// Metadata writes return at once, their device time charged but not waited for
    /// (`--meta-writes buffered`).
    pub(super) meta_buffered: bool,
    /// A warm start's kept blocks not yet checked against their HDD files, and whether
    /// any are left. Taken before the engine lock, never after it.
    pub(super) warm: Mutex<WarmFiles>,
    pub(super) warm_pending: AtomicBool,
}

impl Core {
    pub fn block_size(&self) -> u32 {
        self.bs as u32
    }

    pub fn default_class(&self, name: &str, size: u64) -> u8 {
        self.classify.file_class(name, size)
    }

    /// True when the HDD holds an anchor link for `ino` (one of its links is ours).
    pub fn is_anchored(&self, ino: u64) -> bool {
        self.anchored.lock().unwrap().contains(&ino)
    }
}
