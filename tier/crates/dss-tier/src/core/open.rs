//! Mounting the cache: replaying the journal a previous daemon left on the SSD.

use super::state::{Core, Inner, META, SYNC_BATCH, room_patience};
use super::warm::WarmFiles;
use crate::anchors::Anchors;
use crate::journal::{self, Journal, Record};
use crate::layout::{JOURNAL, SLAB};
use dss_engine::device::{Device, Model};
use dss_engine::metamemory::MetaMemory;
use dss_engine::policy::{Classify, Mode};
use dss_engine::{Cache, Resolved};
use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// What a mount found in the journal and did with it.
#[derive(Debug, Default)]
pub struct Replay {
    pub restored: u32,
    /// Dirty records whose file no longer exists: no anchor, or no name but its anchor
    /// (removed while open when the daemon died).
    pub orphaned: u32,
    pub corrupt: u32,
    pub clean_dropped: u32,
    /// Clean blocks kept from a clean unmount (warm start).
    pub clean_restored: u32,
    /// A warm start found a clean journal of a version that did not record when it was
    /// marked clean, so its clean blocks could not be checked and were dropped.
    pub clean_unchecked: bool,
    /// Dirty blocks written back because the cache geometry changed.
    pub written_back: u32,
    pub previous_clean: bool,
}

impl Core {
    /// Open the cache on the SSD directory `ssd_dir` in front of `hdd_root`: replay the
    /// journal (restoring every block whose only copy is on the SSD) and mark it in use.
    /// With `warm`, the clean blocks of a cache that was unmounted cleanly are kept too,
    /// each file's until a lookup finds the file changed on the HDD since (`check_warm`).
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        resolved: &Resolved,
        policy_name: &str,
        classify: Classify,
        cache_bytes: u64,
        ssd_dir: &Path,
        hdd_root: &Path,
        ssd_model: &str,
        hdd_model: &str,
        meta_memory: u64,
        warm: bool,
    ) -> io::Result<(Core, Replay)> {
        let cfg = resolved.cache_config(cache_bytes);
        let bs = u64::from(resolved.block_size);
        let parse =
            |m: &str| Model::parse(m).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
        let (ssd, mut hdd) = (
            Device::new(parse(ssd_model)?),
            Device::new(parse(hdd_model)?),
        );
        // Behind the SSD cache the HDD model stands where the disk stands below a block
        // cache: the page cache is the file system's, above the cache, and holds none of
        // the data the cache writes back or reads on a miss.
        if matches!(resolved.mode, Mode::Lru | Mode::Dss) {
            hdd.set_keeps_clean_data(false);
        }
        let anchors = Anchors::open(hdd_root)?;
        let store = journal::open_rw_create(&ssd_dir.join(SLAB))?;
        let jfile = journal::open_rw_create(&ssd_dir.join(JOURNAL))?;
        let mut replay = Replay::default();
        let loaded = match journal::load(&jfile)? {
            Some(Ok(l)) => Some(l),
            Some(Err(e)) => {
                return Err(io::Error::other(format!(
                    "{}: {e}; run `dss-tier fsck --repair`",
                    ssd_dir.join(JOURNAL).display()
                )));
            }
            None => None,
        };
        let same_geometry = loaded.as_ref().is_some_and(|l| {
            l.header.block_size == resolved.block_size && l.header.entries == cfg.entries
        });
        if let Some(l) = &loaded
            && !same_geometry
        {
            // Another geometry: move its dirty blocks home first, then start afresh.
            let r = crate::fsck::write_back_all(&store, l, &anchors)?;
            replay.written_back = r.written;
            replay.orphaned = r.orphaned;
        }
        store.set_len(u64::from(cfg.entries) * bs)?;
        let mut cache = Cache::new(resolved, cfg);
        cache.track_changes(true);
        let mut dirty_count: HashMap<u64, u32> = HashMap::new();
        let mut keep: HashSet<u64> = HashSet::new();
        let mut warm_files = WarmFiles::default();
        let journal = match loaded {
            Some(l) if same_geometry => {
                replay.previous_clean = l.header.clean;
                let warm = warm && l.header.clean;
                replay.clean_unchecked = warm && l.header.clean_at == 0;
                let warm = warm && !replay.clean_unchecked;
                warm_files.since = l.header.clean_at;
                replay.corrupt = l.corrupt.len() as u32;
                let mut j = Journal::create_from(jfile.try_clone()?, &l)?;
                for &slot in &l.corrupt {
                    j.set(slot, &Record::EMPTY);
                }
                for &(slot, rec) in &l.records {
                    if !rec.is_dirty() {
                        // A clean unmount synced the slab before it marked the journal
                        // clean, so its clean copies are sound as long as the HDD copy did
                        // not move on meanwhile, which `check_warm` finds out.
                        if warm && cache.restore(slot, rec.key, rec.class, false) {
                            replay.clean_restored += 1;
                            // Metadata pseudo-blocks hold no bytes to go stale.
                            if rec.key.file & META == 0 {
                                let file = warm_files.blocks.entry(rec.key.file).or_default();
                                file.push(rec.key.index);
                            }
                            continue;
                        }
                        // Clean copies are not worth the doubt after a crash: the HDD
                        // has the data.
                        replay.clean_dropped += 1;
                        j.set(slot, &Record::EMPTY);
                        continue;
                    }
                    let ok = anchors.open_file(rec.key.file).and_then(|f| {
                        // Only its anchor names it: its last name went while it was
                        // still open, and the handles died with the daemon. Nothing can
                        // reach it again, and its inode goes with the anchor.
                        let md = f.metadata()?;
                        if md.nlink() <= 1 {
                            return Err(io::Error::from(io::ErrorKind::NotFound));
                        }
                        let end = rec.key.index * bs + u64::from(rec.valid);
                        if md.len() < end {
                            f.set_len(end)?;
                        }
                        Ok(())
                    });
                    if ok.is_err() || !cache.restore(slot, rec.key, rec.class, true) {
                        replay.orphaned += 1;
                        j.set(slot, &Record::EMPTY);
                        continue;
                    }
                    replay.restored += 1;
                    *dirty_count.entry(rec.key.file).or_default() += 1;
                    keep.insert(rec.key.file);
                }
                j
            }
            _ => Journal::create(jfile.try_clone()?, resolved.block_size, cfg.entries)?,
        };
        // Anchors of files with nothing left to write back.
        for ino in anchors.list()? {
            if !keep.contains(&ino) {
                anchors.remove(ino)?;
            }
        }
        let hdd_span = match hdd.model() {
            Model::Hdd(h) => h.span(),
            _ => 1 << 40,
        };
        let patience = room_patience(ssd.model().dilation(), hdd.model().dilation());
        let inner = Inner {
            cache,
            ssd,
            hdd,
            files: HashMap::new(),
            victims: Vec::with_capacity(SYNC_BATCH),
            journal,
            dirty_count,
            unanchor: Vec::new(),
            hdd_dirty: HashSet::new(),
            cleaned_batches: 0,
            cleaned_at: 0,
            stalled_at: None,
            room_queue: Default::default(),
            next_waiter: 0,
            meta_memory: MetaMemory::new((meta_memory / bs) as usize),
            meta_written: 0,
        };
        let core = Core {
            inner: Mutex::new(inner),
            wake: Condvar::new(),
            room: Condvar::new(),
            patience,
            store,
            journal_file: jfile,
            anchors,
            anchored: Mutex::new(keep),
            bs,
            slab_bytes: u64::from(cfg.entries) * bs,
            hdd_span,
            t0: Instant::now(),
            mode: resolved.mode.to_string(),
            policy_name: policy_name.to_string(),
            classify,
            ssd_model: ssd_model.to_string(),
            hdd_model: hdd_model.to_string(),
            meta_buffered: false,
            warm_pending: AtomicBool::new(!warm_files.blocks.is_empty()),
            warm: Mutex::new(warm_files),
        };
        {
            let mut g = core.inner.lock().unwrap();
            core.commit(&mut g, None)?;
            core.store.sync_data()?;
            g.journal.set_clean(false)?;
        }
        Ok((core, replay))
    }
}
