//! The data path: carries out the engine's decisions on the SSD slab and the HDD files,
//! charges every access to the device model that holds the data, journals what the SSD
//! holds, and runs the syncer.
//!
//! One lock covers the engine and the data I/O it decides, so a fill can never interleave
//! with a foreground access to the same block. The syncer takes it per small batch and
//! lets go while the HDD syncs what it wrote; blocks in that window are `Cleaning`, and a
//! foreground write to one keeps it dirty.
//!
//! Crash safety rests on three orderings: a block's data reaches the slab before its
//! dirty record reaches the journal file; the journal is written out before the request
//! is answered (so a killed daemon loses nothing it acknowledged to the kernel); and a
//! record turns clean only after the HDD copy is synced. fsync syncs the slab, then the
//! journal: that is the whole cost of an acknowledged write.

use crate::anchors::Anchors;
use crate::journal::{self, Journal, Record};
use crate::runs::{FillRun, Run};
use crate::stats::{Content, DevStats, Stats, class_map};
use dss_engine::device::{Device, Model, Op};
use dss_engine::policy::Classify;
use dss_engine::{BlockKey, Cache, Durable, ReadOutcome, Resolved, Victim, WriteOutcome};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Metadata pseudo-files: block keys with this bit set stand for inode, directory and
/// xattr updates, so that file-system metadata is charged through the same cache.
const META: u64 = 1 << 63;

/// Blocks the syncer writes back per batch (per lock hold).
const SYNC_BATCH: usize = 64;

/// The slab and the journal in the SSD directory.
pub const SLAB: &str = "cache.slab";
pub const JOURNAL: &str = "cache.journal";

#[derive(Clone, Copy)]
pub enum MetaKind {
    Inode,
    Directory,
    Xattr,
}

struct Inner {
    cache: Cache,
    ssd: Device,
    hdd: Device,
    /// Writable descriptors of files with dirty blocks, for the syncer.
    files: HashMap<u64, Arc<File>>,
    victims: Vec<Victim>,
    journal: Journal,
    /// Dirty or pinned blocks per file, as journalled.
    dirty_count: HashMap<u64, u32>,
    /// Files whose last dirty block is gone: their anchors go once that is durable.
    unanchor: Vec<u64>,
    /// Files written on the HDD (data, size) since their last HDD sync.
    hdd_dirty: HashSet<u64>,
}

pub struct Core {
    inner: Mutex<Inner>,
    wake: Condvar,
    store: File,
    /// The journal's file, for syncing it without holding the lock.
    journal_file: File,
    anchors: Anchors,
    /// Files that have an anchor (read without the engine lock, for link counts).
    anchored: Mutex<HashSet<u64>>,
    bs: u64,
    /// The slab's size: the journal follows it on the modelled SSD.
    slab_bytes: u64,
    t0: Instant,
    mode: String,
    policy_name: String,
    classify: Classify,
    ssd_model: String,
    hdd_model: String,
}

/// What a mount found in the journal and did with it.
#[derive(Debug, Default)]
pub struct Replay {
    pub restored: u32,
    /// Dirty records whose file no longer exists (no anchor).
    pub orphaned: u32,
    pub corrupt: u32,
    pub clean_dropped: u32,
    /// Clean blocks kept from a clean unmount (warm start).
    pub clean_restored: u32,
    /// Dirty blocks written back because the cache geometry changed.
    pub written_back: u32,
    pub previous_clean: bool,
}

/// Virtual address of a file's data on the modelled HDD: files are spread over the
/// platter so that switching files costs a seek, as it would on a real disk.
fn hdd_addr(file: u64, offset: u64) -> u64 {
    (file.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24 << 20).wrapping_add(offset)
}

/// The state a closed tier must be left in once the daemon stops: holding the engine
/// lock keeps every FUSE request that is still in flight from being answered.
pub struct Quiesced<'a>(#[allow(dead_code)] MutexGuard<'a, Inner>);

impl Core {
    /// Open the cache on the SSD directory `ssd_dir` in front of `hdd_root`: replay the
    /// journal (restoring every block whose only copy is on the SSD) and mark it in use.
    /// With `warm`, the clean blocks of a cache that was unmounted cleanly are kept too:
    /// the caller vouches that the HDD directory did not change while it was unmounted.
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
        warm: bool,
    ) -> io::Result<(Core, Replay)> {
        let cfg = resolved.cache_config(cache_bytes);
        let bs = u64::from(resolved.block_size);
        let parse =
            |m: &str| Model::parse(m).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
        let (ssd, hdd) = (
            Device::new(parse(ssd_model)?),
            Device::new(parse(hdd_model)?),
        );
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
        let journal = match loaded {
            Some(l) if same_geometry => {
                replay.previous_clean = l.header.clean;
                replay.corrupt = l.corrupt.len() as u32;
                let mut j = Journal::create_from(jfile.try_clone()?, &l)?;
                for &slot in &l.corrupt {
                    j.set(slot, &Record::EMPTY);
                }
                for &(slot, rec) in &l.records {
                    if !rec.is_dirty() {
                        // A clean unmount synced the slab before it marked the journal
                        // clean, so its clean copies are sound as long as the HDD copy did
                        // not move on meanwhile, which only the operator can vouch for.
                        if warm && l.header.clean && cache.restore(slot, rec.key, rec.class, false)
                        {
                            replay.clean_restored += 1;
                            continue;
                        }
                        // Clean copies are not worth the doubt after a crash: the HDD
                        // has the data.
                        replay.clean_dropped += 1;
                        j.set(slot, &Record::EMPTY);
                        continue;
                    }
                    let ok = anchors.open_file(rec.key.file).and_then(|f| {
                        let end = rec.key.index * bs + u64::from(rec.valid);
                        if f.metadata()?.len() < end {
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
        };
        let core = Core {
            inner: Mutex::new(inner),
            wake: Condvar::new(),
            store,
            journal_file: jfile,
            anchors,
            anchored: Mutex::new(keep),
            bs,
            slab_bytes: u64::from(cfg.entries) * bs,
            t0: Instant::now(),
            mode: resolved.mode.to_string(),
            policy_name: policy_name.to_string(),
            classify,
            ssd_model: ssd_model.to_string(),
            hdd_model: hdd_model.to_string(),
        };
        {
            let mut g = core.inner.lock().unwrap();
            core.commit(&mut g, None)?;
            core.store.sync_data()?;
            g.journal.set_clean(false)?;
        }
        Ok((core, replay))
    }

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

    fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// Sleep until the modelled completion time `until` (virtual ns since start).
    fn wait_until(&self, until: u64) {
        let now = self.now();
        if until > now {
            std::thread::sleep(Duration::from_nanos(until - now));
        }
    }

    /// Charge one access to a device: modelled (completion time returned) or real
    /// (the closure's measured time recorded).
    fn charge<T>(
        &self,
        dev: &mut Device,
        op: Op,
        addr: u64,
        len: u64,
        io: impl FnOnce() -> io::Result<T>,
    ) -> io::Result<(T, u64)> {
        if matches!(dev.model(), Model::None) {
            let start = self.now();
            let r = io()?;
            dev.record(op, len, start, self.now());
            Ok((r, 0))
        } else {
            let r = io()?;
            Ok((r, dev.submit(self.now(), op, addr, len)))
        }
    }

    fn ssd_io(
        &self,
        inner: &mut Inner,
        op: Op,
        slot: u32,
        within: u64,
        buf: IoBuf<'_>,
    ) -> io::Result<u64> {
        self.ssd_at(inner, op, u64::from(slot) * self.bs + within, buf)
    }

    /// One access to the slab at byte `off` (one or more adjacent slots).
    fn ssd_at(&self, inner: &mut Inner, op: Op, off: u64, buf: IoBuf<'_>) -> io::Result<u64> {
        let len = buf.len() as u64;
        let store = &self.store;
        let (_, t) = self.charge(&mut inner.ssd, op, off, len, || match buf {
            IoBuf::Read(b) => {
                // The slab is sized to hold every slot: a short read is past its end.
                let got = read_full(store, b, off)?;
                b[got..].fill(0);
                Ok(())
            }
            IoBuf::Write(b) => store.write_all_at(b, off),
        })?;
        Ok(t)
    }

    fn hdd_io(
        &self,
        inner: &mut Inner,
        op: Op,
        file: &File,
        id: u64,
        off: u64,
        buf: IoBuf<'_>,
    ) -> io::Result<(usize, u64)> {
        let len = buf.len() as u64;
        self.charge(&mut inner.hdd, op, hdd_addr(id, off), len, || match buf {
            IoBuf::Read(b) => read_full(file, b, off),
            IoBuf::Write(b) => file.write_all_at(b, off).map(|_| b.len()),
        })
    }

    /// Journal what the engine changed since the last call and write it out, so that it
    /// survives the daemon dying once the request that made the change is answered.
    /// `op` is the file the request wrote and its size after the request.
    fn commit(&self, inner: &mut Inner, op: Option<(u64, u64)>) -> io::Result<()> {
        let bs = self.bs;
        let anchored = self.anchored.lock().unwrap();
        let Inner {
            cache,
            journal,
            dirty_count,
            unanchor,
            ..
        } = inner;
        cache.drain_changes(|c, slot| {
            let (d, key, class) = c.durable(slot);
            let old = journal.get(slot);
            // Metadata pseudo-blocks hold no data; blocks of a file without an anchor
            // (its last name was already gone) cannot be found again after a restart.
            let journalled = key.file & META == 0 && anchored.contains(&key.file);
            let rec = if d == Durable::Empty || (!journalled && d != Durable::Clean) {
                Record::EMPTY
            } else {
                let valid = match op {
                    Some((f, size)) if f == key.file => {
                        size.saturating_sub(key.index * bs).min(bs) as u32
                    }
                    _ if old.state != Durable::Empty && old.key == key => old.valid,
                    _ => bs as u32,
                };
                Record {
                    key,
                    valid,
                    class,
                    state: d,
                }
            };
            if old.is_dirty() {
                let n = dirty_count.entry(old.key.file).or_default();
                *n = n.saturating_sub(1);
                if *n == 0 {
                    dirty_count.remove(&old.key.file);
                    unanchor.push(old.key.file);
                }
            }
            if rec.is_dirty() {
                *dirty_count.entry(key.file).or_default() += 1;
            }
            journal.set(slot, &rec);
        });
        journal.write_out()
    }

    /// Make sure `file` (inode `id`) has an anchor before any of its blocks is journalled
    /// as dirty. A file whose last name is gone cannot get one; its blocks are then kept
    /// out of the journal (nothing could find the file after a restart anyway).
    fn anchor(&self, file: &File, id: u64) -> io::Result<()> {
        let mut a = self.anchored.lock().unwrap();
        if a.contains(&id) {
            return Ok(());
        }
        match self.anchors.link(file, id) {
            Ok(()) => {
                a.insert(id);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Remove the anchors of files with no dirty blocks left, once the journal saying so
    /// is durable (an anchor removed first could let the inode number be reused while a
    /// stale record still names it).
    /// Returns the modelled completion of the journal's sync.
    fn gc(&self, inner: &mut Inner) -> io::Result<u64> {
        if inner.unanchor.is_empty() {
            return Ok(0);
        }
        let start = self.now();
        let runs = inner.journal.sync()?;
        let done = self.charge_journal(&mut inner.ssd, &runs, start);
        let mut a = self.anchored.lock().unwrap();
        for id in std::mem::take(&mut inner.unanchor) {
            if !inner.dirty_count.contains_key(&id) && a.remove(&id) {
                self.anchors.remove(id)?;
                inner.files.remove(&id);
            }
        }
        Ok(done)
    }

    /// Charge the journal pages a sync begun at `start` made durable to the SSD, which
    /// holds the journal: as writes after the slab's last byte when the SSD is modelled
    /// (returns their completion), as one write of the sync's measured time otherwise.
    /// The pages are charged when synced, not each time a request rewrites them: the
    /// kernel's page cache absorbs the rewrites in between, as it would for any file.
    fn charge_journal(&self, ssd: &mut Device, runs: &[(u64, u64)], start: u64) -> u64 {
        let bytes: u64 = runs.iter().map(|&(_, len)| len).sum();
        if bytes == 0 {
            return 0;
        }
        if matches!(ssd.model(), Model::None) {
            ssd.record(Op::Write, bytes, start, self.now());
            return 0;
        }
        let after_slab = self.slab_bytes;
        runs.iter()
            .map(|&(off, len)| ssd.submit(start, Op::Write, after_slab + off, len))
            .max()
            .unwrap_or(0)
    }

    /// Charge a metadata update or lookup through the cache (no data moves: the HDD
    /// filesystem holds the metadata itself).
    pub fn meta(&self, kind: MetaKind, ino: u64, write: bool) {
        let mut g = self.inner.lock().unwrap();
        let done = self.meta_io(&mut g, kind, ino, write, true);
        self.meta_done(g, done);
    }

    /// A new inode is written, and a new directory's first block: the lookups that follow
    /// find them in the cache, as a kernel finds a new inode in memory, instead of each
    /// reading it from the HDD once. Its (empty) xattr block enters the cache too, without
    /// a device access of its own: small xattrs live in the inode just written.
    pub fn meta_created(&self, ino: u64, directory: bool) {
        let mut g = self.inner.lock().unwrap();
        let mut done = self.meta_io(&mut g, MetaKind::Inode, ino, true, true);
        self.meta_io(&mut g, MetaKind::Xattr, ino, true, false);
        if directory {
            done = done.max(self.meta_io(&mut g, MetaKind::Directory, ino, true, true));
        }
        self.meta_done(g, done);
    }

    fn meta_done(&self, mut g: std::sync::MutexGuard<'_, Inner>, done: u64) {
        if let Err(e) = self.commit(&mut g, None) {
            eprintln!("dss-tier: journal write failed: {e}");
        }
        self.kick(&g);
        drop(g);
        self.wait_until(done);
    }

    /// One metadata pseudo-block through the engine; `charge` = false decides it without
    /// a device access (one that another access carries). Returns the completion time.
    fn meta_io(
        &self,
        inner: &mut Inner,
        kind: MetaKind,
        ino: u64,
        write: bool,
        charge: bool,
    ) -> u64 {
        let class = match kind {
            MetaKind::Inode => self.classify.inode,
            MetaKind::Directory => self.classify.directory,
            MetaKind::Xattr => self.classify.xattr,
        };
        let key = BlockKey {
            file: META | ino,
            index: kind as u64,
        };
        let (bs, now) = (self.bs, self.now());
        let hdd_at = hdd_addr(key.file, 0);
        let (ssd, hdd) = (&mut inner.ssd, &mut inner.hdd);
        let submit = |dev: &mut Device, at: u64, op: Op, addr: u64| {
            if charge {
                dev.submit(at, op, addr, bs)
            } else {
                at
            }
        };
        if write {
            match inner.cache.write(key, class, bs as u32) {
                WriteOutcome::Ssd { slot, .. } => submit(ssd, now, Op::Write, u64::from(slot) * bs),
                WriteOutcome::Hdd { .. } => submit(hdd, now, Op::Write, hdd_at),
            }
        } else {
            match inner.cache.read(key, class) {
                ReadOutcome::Hit { slot } => submit(ssd, now, Op::Read, u64::from(slot) * bs),
                ReadOutcome::Miss => submit(hdd, now, Op::Read, hdd_at),
                ReadOutcome::MissFill { slot, version } => {
                    let t = submit(hdd, now, Op::Read, hdd_at);
                    submit(ssd, t, Op::Write, u64::from(slot) * bs);
                    inner.cache.fill_done(slot, version, true);
                    t
                }
            }
        }
    }

    #[cfg(test)]
    pub fn read(&self, file: &File, class: u8, offset: u64, size: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(file, class, offset, size, &mut out)?;
        Ok(out)
    }

    /// Read into `out` (resized to the bytes the file holds in the range; its allocation
    /// is reused across requests). Hits on adjacent slots and misses on adjacent bytes of
    /// the HDD file are each read with one call.
    pub fn read_into(
        &self,
        file: &File,
        class: u8,
        offset: u64,
        size: usize,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let md = file.metadata()?;
        let (id, fsize) = (md.ino(), md.size());
        let end = fsize.min(offset.saturating_add(size as u64));
        let len = end.saturating_sub(offset) as usize;
        // Every byte below is overwritten by a read (or zeroed past a short one), so the
        // old contents need no clearing.
        out.truncate(len);
        out.resize(len, 0);
        if len == 0 {
            return Ok(());
        }
        let bs = self.bs;
        let mut done = 0;
        // A growing file's early blocks were cached under the size bucket the file had when
        // they were written. A read classified by the file's size now moves them to the
        // current bucket, as the DSS paper's ext3 reclassifies blocks "with the latest file
        // size" on subsequent I/O. Blocks cached under any other class (a client's, a name
        // rule's, metadata) keep it: background readers such as an auditor or rsync, whose
        // I/O is unclassified, must not strip an object of the class its client gave it.
        let resize = self.classify.is_size_class(class);
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        let r = (|| -> io::Result<()> {
            let (mut hits, mut misses) = (Run::default(), Run::default());
            let mut fills = FillRun::default();
            let mut pos = offset;
            while pos < end {
                let index = pos / bs;
                let within = pos % bs;
                let n = (bs - within).min(end - pos) as usize;
                let at = (pos - offset) as usize;
                let key = BlockKey { file: id, index };
                match inner.cache.read(key, class) {
                    ReadOutcome::Hit { slot } => {
                        let was = inner.cache.class_at(slot);
                        if resize && was != class && self.classify.is_size_class(was) {
                            inner.cache.reclassify(key, class);
                        }
                        let dev = u64::from(slot) * bs + within;
                        if !hits.extend(dev, at, n) {
                            done = done.max(self.ssd_read_run(inner, hits, out)?);
                            hits = Run::start(dev, at, n);
                        }
                    }
                    ReadOutcome::Miss => {
                        if !misses.extend(pos, at, n) {
                            done = done.max(self.hdd_read_run(inner, file, id, misses, out)?);
                            misses = Run::start(pos, at, n);
                        }
                    }
                    ReadOutcome::MissFill { slot, version } => {
                        // The fill may take the slot of a block that a pending hit reads:
                        // those reads go first. Hits noted later cannot be on a slot a
                        // fill took, so the fills' slab write may wait for the run's end.
                        done = done.max(self.ssd_read_run(inner, hits.take(), out)?);
                        if !fills.extend(index, slot, version, (within, at, n)) {
                            done = done.max(self.fill(inner, file, id, fills.take(), out)?);
                            fills.extend(index, slot, version, (within, at, n));
                        }
                    }
                }
                pos += n as u64;
            }
            done = done.max(self.ssd_read_run(inner, hits, out)?);
            done = done.max(self.hdd_read_run(inner, file, id, misses, out)?);
            done = done.max(self.fill(inner, file, id, fills, out)?);
            Ok(())
        })();
        let c = self.commit(inner, None);
        self.kick(inner);
        drop(g);
        r?;
        c?;
        self.wait_until(done);
        Ok(())
    }

    fn ssd_read_run(&self, inner: &mut Inner, run: Run, out: &mut [u8]) -> io::Result<u64> {
        if run.is_empty() {
            return Ok(0);
        }
        let dst = &mut out[run.buf..][..run.len];
        self.ssd_at(inner, Op::Read, run.dev, IoBuf::Read(dst))
    }

    fn hdd_read_run(
        &self,
        inner: &mut Inner,
        file: &File,
        id: u64,
        run: Run,
        out: &mut [u8],
    ) -> io::Result<u64> {
        if run.is_empty() {
            return Ok(0);
        }
        let dst = &mut out[run.buf..][..run.len];
        let (got, t) = self.hdd_io(inner, Op::Read, file, id, run.dev, IoBuf::Read(dst))?;
        dst[got..].fill(0);
        Ok(t)
    }

    /// Read misses the engine wants cached: read their whole blocks from the HDD with
    /// one call, serve the requested bytes into `out` and copy the blocks into their
    /// slots with one call. A failed fill leaves its blocks uncached.
    fn fill(
        &self,
        inner: &mut Inner,
        file: &File,
        id: u64,
        run: FillRun,
        out: &mut [u8],
    ) -> io::Result<u64> {
        if run.is_empty() {
            return Ok(0);
        }
        let bs = self.bs as usize;
        let mut blocks = vec![0u8; bs * run.versions.len()];
        let read = self.hdd_io(
            inner,
            Op::Read,
            file,
            id,
            run.index * self.bs,
            IoBuf::Read(&mut blocks),
        );
        let ok = match &read {
            Ok((got, _)) => {
                blocks[*got..].fill(0);
                out[run.buf..][..run.len]
                    .copy_from_slice(&blocks[run.within as usize..][..run.len]);
                self.ssd_io(inner, Op::Write, run.slot, 0, IoBuf::Write(&blocks))
                    .is_ok()
            }
            Err(_) => false,
        };
        for (i, &version) in run.versions.iter().enumerate() {
            inner.cache.fill_done(run.slot + i as u32, version, ok);
        }
        read.map(|(_, t)| t)
    }

    /// Write `data` at `offset`. Blocks bound for adjacent slots, and blocks bypassing to
    /// adjacent bytes of the HDD file, are each written with one call once the engine has
    /// decided the whole request.
    pub fn write(&self, file: &Arc<File>, class: u8, offset: u64, data: &[u8]) -> io::Result<()> {
        let md = file.metadata()?;
        let (id, fsize) = (md.ino(), md.size());
        let end = offset + data.len() as u64;
        let bs = self.bs;
        let mut done = 0;
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        let mut to_hdd = false;
        let r = (|| -> io::Result<()> {
            let (mut ssd, mut hdd) = (Run::default(), Run::default());
            let mut anchored = false;
            let mut pos = offset;
            while pos < end {
                let index = pos / bs;
                let within = pos % bs;
                let n = (bs - within).min(end - pos) as usize;
                let at = (pos - offset) as usize;
                let key = BlockKey { file: id, index };
                match inner.cache.write(key, class, n as u32) {
                    WriteOutcome::Ssd { slot, hit } => {
                        if !anchored {
                            self.anchor(file, id)?;
                            inner.files.entry(id).or_insert_with(|| file.clone());
                            anchored = true;
                        }
                        if hit || n as u64 == bs {
                            let dev = u64::from(slot) * bs + within;
                            if !ssd.extend(dev, at, n) {
                                done = done.max(self.ssd_write_run(inner, ssd, data)?);
                                ssd = Run::start(dev, at, n);
                            }
                        } else {
                            // A new entry for part of a block: the rest comes from the HDD.
                            let src = &data[at..][..n];
                            let t =
                                self.fill_partial(inner, file, key, fsize, slot, within, src)?;
                            done = done.max(t);
                        }
                    }
                    WriteOutcome::Hdd { .. } => {
                        to_hdd = true;
                        if !hdd.extend(pos, at, n) {
                            done = done.max(self.hdd_write_run(inner, file, id, hdd, data)?);
                            hdd = Run::start(pos, at, n);
                        }
                    }
                }
                pos += n as u64;
            }
            done = done.max(self.ssd_write_run(inner, ssd, data)?);
            done = done.max(self.hdd_write_run(inner, file, id, hdd, data)?);
            // The HDD file's size stays the file's size even while its tail is only
            // cached (the journal's `valid` makes that size durable with the block).
            if end > fsize {
                file.set_len(end)?;
            }
            Ok(())
        })();
        if to_hdd {
            inner.hdd_dirty.insert(id);
        }
        let c = self.commit(inner, Some((id, fsize.max(end))));
        self.kick(inner);
        drop(g);
        r?;
        c?;
        self.wait_until(done);
        Ok(())
    }

    fn ssd_write_run(&self, inner: &mut Inner, run: Run, data: &[u8]) -> io::Result<u64> {
        if run.is_empty() {
            return Ok(0);
        }
        let src = &data[run.buf..][..run.len];
        self.ssd_at(inner, Op::Write, run.dev, IoBuf::Write(src))
    }

    fn hdd_write_run(
        &self,
        inner: &mut Inner,
        file: &File,
        id: u64,
        run: Run,
        data: &[u8],
    ) -> io::Result<u64> {
        if run.is_empty() {
            return Ok(0);
        }
        let src = &data[run.buf..][..run.len];
        Ok(self
            .hdd_io(inner, Op::Write, file, id, run.dev, IoBuf::Write(src))?
            .1)
    }

    /// Part of a block goes into a newly allocated slot: the block's other bytes come
    /// from the HDD file (zeros past its end `fsize`).
    #[allow(clippy::too_many_arguments)]
    fn fill_partial(
        &self,
        inner: &mut Inner,
        file: &File,
        key: BlockKey,
        fsize: u64,
        slot: u32,
        within: u64,
        src: &[u8],
    ) -> io::Result<u64> {
        let base = key.index * self.bs;
        let mut block = vec![0u8; self.bs as usize];
        let mut t = 0;
        if base < fsize {
            let (got, t1) = self.hdd_io(
                inner,
                Op::Read,
                file,
                key.file,
                base,
                IoBuf::Read(&mut block),
            )?;
            block[got..].fill(0);
            t = t1;
        }
        block[within as usize..][..src.len()].copy_from_slice(src);
        Ok(t.max(self.ssd_io(inner, Op::Write, slot, 0, IoBuf::Write(&block))?))
    }

    /// Change a file's size from `old` to `new`, keeping cached blocks consistent.
    pub fn truncate(&self, id: u64, file: &File, old: u64, new: u64) -> io::Result<()> {
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        let r = (|| -> io::Result<()> {
            if new < old {
                let first_gone = new.div_ceil(self.bs);
                inner
                    .cache
                    .discard_from(id, first_gone, old.div_ceil(self.bs));
                let within = new % self.bs;
                if within != 0
                    && let Some((slot, _)) = inner.cache.lookup(BlockKey {
                        file: id,
                        index: new / self.bs,
                    })
                {
                    // Bytes past the new end must read as zeros if the file grows again.
                    let zeros = vec![0u8; (self.bs - within) as usize];
                    self.ssd_io(inner, Op::Write, slot, within, IoBuf::Write(&zeros))?;
                    let mut rec = inner.journal.get(slot);
                    if rec.state != Durable::Empty && rec.key.file == id {
                        rec.valid = within as u32;
                        inner.journal.set(slot, &rec);
                    }
                }
            }
            inner.hdd_dirty.insert(id);
            file.set_len(new)
        })();
        let c = self.commit(inner, Some((id, new)));
        r.and(c)
    }

    /// fallocate: the HDD file first (so a refusal changes nothing), then the cached
    /// blocks of a range whose contents became zeros: whole blocks are dropped, the
    /// cached parts of edge blocks zeroed in place.
    pub fn fallocate(
        &self,
        id: u64,
        file: &File,
        offset: u64,
        length: u64,
        flags: rustix::fs::FallocateFlags,
    ) -> io::Result<()> {
        use rustix::fs::FallocateFlags as F;
        if flags.intersects(F::COLLAPSE_RANGE | F::INSERT_RANGE) {
            // They move data between blocks under cached copies; Swift never asks.
            return Err(io::Error::from_raw_os_error(95));
        }
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        rustix::fs::fallocate(file, flags, offset, length)
            .map_err(|e| io::Error::from_raw_os_error(e.raw_os_error()))?;
        inner.hdd_dirty.insert(id);
        let r = (|| -> io::Result<()> {
            if !flags.intersects(F::PUNCH_HOLE | F::ZERO_RANGE) {
                return Ok(());
            }
            let end = offset.saturating_add(length);
            let (first_full, end_full) = (offset.div_ceil(self.bs), end / self.bs);
            if first_full < end_full {
                inner.cache.discard_from(id, first_full, end_full);
            }
            for index in [offset / self.bs, end.saturating_sub(1) / self.bs] {
                let base = index * self.bs;
                let (lo, hi) = (offset.max(base), end.min(base + self.bs));
                if lo >= hi || (lo == base && hi == base + self.bs) {
                    continue;
                }
                if let Some((slot, _)) = inner.cache.lookup(BlockKey { file: id, index }) {
                    let zeros = vec![0u8; (hi - lo) as usize];
                    self.ssd_io(inner, Op::Write, slot, lo - base, IoBuf::Write(&zeros))?;
                }
            }
            Ok(())
        })();
        let size = file.metadata().map(|m| m.size()).unwrap_or(0);
        let c = self.commit(inner, Some((id, size)));
        r.and(c)
    }

    /// The HDD copy of `id` changed outside the data path (allocation, attributes).
    pub fn hdd_changed(&self, id: u64) {
        self.inner.lock().unwrap().hdd_dirty.insert(id);
    }

    pub fn discard_file(&self, id: u64, size: u64) {
        let mut g = self.inner.lock().unwrap();
        g.cache.discard_from(id, 0, size.div_ceil(self.bs).max(1));
        g.files.remove(&id);
        g.hdd_dirty.remove(&id);
        if let Err(e) = self.commit(&mut g, None) {
            eprintln!("dss-tier: journal write failed: {e}");
        }
    }

    pub fn reclassify(&self, id: u64, start: u64, end: u64, class: u8) -> io::Result<()> {
        let mut g = self.inner.lock().unwrap();
        for index in start / self.bs..end.div_ceil(self.bs) {
            g.cache.reclassify(BlockKey { file: id, index }, class);
        }
        self.commit(&mut g, None)
    }

    /// fsync: the file's blocks on the SSD and their journal records are made durable
    /// (no write-back); the HDD file is synced too if it was written directly.
    pub fn sync_file(&self, id: u64, file: &File, datasync: bool) -> io::Result<()> {
        let (hdd, journal_pages) = {
            let mut g = self.inner.lock().unwrap();
            (g.hdd_dirty.remove(&id), g.journal.take_unsynced())
        };
        let r = (|| {
            self.store.sync_data()?;
            let start = self.now();
            self.journal_file.sync_data()?;
            let mut g = self.inner.lock().unwrap();
            let done = self.charge_journal(&mut g.ssd, &journal_pages, start);
            drop(g);
            if hdd {
                if datasync {
                    file.sync_data()?;
                } else {
                    file.sync_all()?;
                }
            }
            self.wait_until(done);
            Ok(())
        })();
        if r.is_err() && hdd {
            self.inner.lock().unwrap().hdd_dirty.insert(id);
        }
        r
    }

    /// Write back every dirty block.
    pub fn flush_all(&self) -> io::Result<()> {
        while self.flush_batch(Pick::All)? > 0 {}
        Ok(())
    }

    /// Write back every dirty block of file `id`, whose size is `size`.
    pub fn flush_file(&self, id: u64, size: u64) -> io::Result<()> {
        let mut range = 0..size.div_ceil(self.bs);
        while self.flush_batch(Pick::File(id, &mut range))? > 0 {}
        Ok(())
    }

    fn flush_batch(&self, pick: Pick<'_>) -> io::Result<usize> {
        let (n, t) = self.write_back_batch(pick)?;
        self.wait_until(t);
        Ok(n)
    }

    /// Final write-back before the daemon exits: afterwards the HDD alone holds every
    /// block except pinned ones (which stay journalled), and the journal is marked clean.
    /// The returned guard keeps any request still in flight from being answered.
    pub fn shutdown(&self) -> io::Result<Quiesced<'_>> {
        loop {
            self.flush_all()?;
            let mut g = self.inner.lock().unwrap();
            if g.cache.dirty_entries() + g.cache.in_flight() > 0 {
                continue;
            }
            self.commit(&mut g, None)?;
            self.gc(&mut g)?;
            self.store.sync_data()?;
            g.journal.set_clean(true)?;
            return Ok(Quiesced(g));
        }
    }

    /// One batch of write-back: pick victims (under pressure, or all dirty blocks of
    /// `file` / of everything), write them to the HDD, make that durable, and only then
    /// journal them clean. Returns the blocks handled and the modelled completion time.
    fn write_back_batch(&self, pick: Pick<'_>) -> io::Result<(usize, u64)> {
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        let mut victims = std::mem::take(&mut inner.victims);
        victims.clear();
        match pick {
            Pick::Pressure => inner.cache.pick_victims(&mut victims, SYNC_BATCH),
            Pick::All => inner.cache.pick_flush(&mut victims, SYNC_BATCH, None),
            Pick::File(id, range) => {
                inner
                    .cache
                    .pick_flush_range(&mut victims, SYNC_BATCH, id, range)
            }
        };
        if victims.is_empty() {
            inner.victims = victims;
            return self.gc(inner).map(|t| (0, t));
        }
        let mut results = Vec::with_capacity(victims.len());
        let mut touched: Vec<Arc<File>> = Vec::new();
        let (t, first_err) = self.write_runs(inner, &mut victims, &mut results, &mut touched);
        drop(g);
        // The HDD copy must be durable before a record calls the block clean.
        let mut synced = true;
        for f in &touched {
            if let Err(e) = f.sync_data() {
                eprintln!("dss-tier: sync after write-back failed: {e}");
                synced = false;
            }
        }
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        for (v, ok) in victims.iter().zip(&results) {
            inner.cache.clean_done(v, *ok && synced);
        }
        let n = victims.len();
        inner.victims = victims;
        self.commit(inner, None)?;
        let journalled = self.gc(inner)?;
        match first_err {
            Some(e) => Err(e),
            None if !synced => Err(io::Error::other("sync after write-back failed")),
            None => Ok((n, t.max(journalled))),
        }
    }

    /// Write `victims` back in an order the HDD serves well: sorted by file and block,
    /// adjacent blocks coalesced into one sequential write. `results` gets one success
    /// flag per victim (in the sorted order), `touched` the files written.
    fn write_runs(
        &self,
        inner: &mut Inner,
        victims: &mut [Victim],
        results: &mut Vec<bool>,
        touched: &mut Vec<Arc<File>>,
    ) -> (u64, Option<io::Error>) {
        victims.sort_unstable_by_key(|v| v.key);
        let mut done = 0;
        let mut first_err = None;
        let mut i = 0;
        while i < victims.len() {
            let mut j = i + 1;
            while j < victims.len()
                && victims[j].key.file == victims[i].key.file
                && victims[j].key.index == victims[j - 1].key.index + 1
            {
                j += 1;
            }
            let run = &victims[i..j];
            let r = self.write_back_run(inner, run, touched);
            let ok = r.is_ok();
            match r {
                Ok(t) => done = done.max(t),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
            results.extend(std::iter::repeat_n(ok, run.len()));
            i = j;
        }
        (done, first_err)
    }

    fn write_back_run(
        &self,
        inner: &mut Inner,
        run: &[Victim],
        touched: &mut Vec<Arc<File>>,
    ) -> io::Result<u64> {
        let key = run[0].key;
        let bs = self.bs;
        let mut buf = vec![0u8; run.len() * bs as usize];
        let mut t = 0;
        let mut slots = Run::default();
        for (k, v) in run.iter().enumerate() {
            let (dev, at) = (u64::from(v.slot) * bs, k * bs as usize);
            if !slots.extend(dev, at, bs as usize) {
                t = t.max(self.ssd_read_run(inner, slots, &mut buf)?);
                slots = Run::start(dev, at, bs as usize);
            }
        }
        t = t.max(self.ssd_read_run(inner, slots, &mut buf)?);
        if key.file & META != 0 {
            return Ok(inner.hdd.submit(
                t.max(self.now()),
                Op::Write,
                hdd_addr(key.file, 0),
                buf.len() as u64,
            ));
        }
        let file = match inner.files.get(&key.file) {
            Some(f) => f.clone(),
            None => {
                // Restored from the journal: reach the file through its anchor.
                let f = Arc::new(self.anchors.open_file(key.file)?);
                inner.files.insert(key.file, f.clone());
                f
            }
        };
        // Never write past the file's end: the last block is partial.
        let md = file.metadata()?;
        let size = md.size();
        let off = key.index * bs;
        let len = (buf.len() as u64).min(size.saturating_sub(off)) as usize;
        if len == 0 {
            return Ok(t);
        }
        let (_, t2) = self.hdd_io(
            inner,
            Op::Write,
            &file,
            key.file,
            off,
            IoBuf::Write(&buf[..len]),
        )?;
        // The file's times are the user's: a write-back is not a modification (rsync and
        // Swift's replicators compare mtimes).
        file.set_times(
            std::fs::FileTimes::new()
                .set_modified(md.modified()?)
                .set_accessed(md.accessed()?),
        )?;
        if !touched.iter().any(|f| Arc::ptr_eq(f, &file)) {
            touched.push(file);
        }
        Ok(t.max(t2))
    }

    /// Wake the syncer if the cache is under pressure. Only then: a wake-up per request
    /// would have it contend for the engine lock with every FUSE thread for nothing (its
    /// timed wait still collects anchors of files that no longer need them).
    fn kick(&self, inner: &Inner) {
        if inner.cache.syncer_active() {
            self.wake.notify_one();
        }
    }

    /// The syncer: sleeps until the cache is under pressure, then writes back batches
    /// until the high watermark is reached.
    pub fn syncer(self: Arc<Self>, stop: Arc<std::sync::atomic::AtomicBool>) {
        use std::sync::atomic::Ordering;
        while !stop.load(Ordering::Relaxed) {
            {
                let g = self.inner.lock().unwrap();
                if !g.cache.syncer_active() {
                    drop(
                        self.wake
                            .wait_timeout(g, Duration::from_millis(200))
                            .unwrap(),
                    );
                }
            }
            match self.write_back_batch(Pick::Pressure) {
                // Under pressure with nothing to write back (all pinned, or in flight):
                // wait for new dirty data instead of spinning on the lock that
                // foreground I/O needs.
                Ok((0, _)) => {
                    let g = self.inner.lock().unwrap();
                    drop(
                        self.wake
                            .wait_timeout(g, Duration::from_millis(20))
                            .unwrap(),
                    );
                }
                Ok((_, t)) => self.wait_until(t),
                Err(e) => {
                    eprintln!("dss-tier: write-back failed: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    pub fn stats(&self) -> Stats {
        let g = self.inner.lock().unwrap();
        let c = &g.cache;
        let mut devices = std::collections::BTreeMap::new();
        devices.insert(
            "ssd".to_string(),
            DevStats::new(&self.ssd_model, &g.ssd.stats()),
        );
        devices.insert(
            "hdd".to_string(),
            DevStats::new(&self.hdd_model, &g.hdd.stats()),
        );
        Stats {
            mode: self.mode.clone(),
            pid: std::process::id(),
            policy: self.policy_name.clone(),
            block_size: self.bs as u32,
            cache_entries: c.config().entries,
            free_entries: c.free_entries(),
            dirty_entries: c.dirty_entries(),
            pinned_entries: c.pinned_entries(),
            syncer_active: c.syncer_active(),
            classes: class_map((0..=255u8).map(|id| (id, c.counters(id))), self.bs as u32),
            devices,
        }
    }

    pub fn content_json(&self) -> String {
        let g = self.inner.lock().unwrap();
        let c = Content::new(g.cache.residents(), self.bs as u32, META);
        serde_json::to_string(&c).unwrap_or_default()
    }

    pub fn stats_json(&self) -> String {
        serde_json::to_string(&self.stats()).unwrap_or_default()
    }
}

/// Which dirty blocks a write-back batch takes.
enum Pick<'a> {
    /// The syncer's choice under pressure.
    Pressure,
    /// Any, lowest priority first.
    All,
    /// Those of one file in a range of block indices (advanced as batches go).
    File(u64, &'a mut std::ops::Range<u64>),
}

enum IoBuf<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

impl IoBuf<'_> {
    fn len(&self) -> usize {
        match self {
            IoBuf::Read(b) => b.len(),
            IoBuf::Write(b) => b.len(),
        }
    }
}

/// Read as much of `buf` as the file holds at `off`; returns the bytes read (short at
/// the end of the file).
fn read_full(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    //! Crash and replay without FUSE: dropping a `Core` without `shutdown` is what a
    //! kill of the daemon leaves (the page cache keeps what was written out).
    use super::*;
    use dss_engine::{Mode, Policy};
    use std::path::PathBuf;

    const POLICY: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/reference.toml"));

    struct Dirs(PathBuf);

    impl Dirs {
        fn new(name: &str) -> Dirs {
            let d = std::env::temp_dir().join(format!("dss-core-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(d.join("ssd")).unwrap();
            std::fs::create_dir_all(d.join("hdd")).unwrap();
            Dirs(d)
        }
        fn ssd(&self) -> PathBuf {
            self.0.join("ssd")
        }
        fn hdd(&self) -> PathBuf {
            self.0.join("hdd")
        }
        fn open(&self, cache: u64, mode: Mode) -> (Core, Replay) {
            self.open_warm(cache, mode, false)
        }
        fn open_warm(&self, cache: u64, mode: Mode, warm: bool) -> (Core, Replay) {
            self.open_models(cache, mode, warm, "none")
        }
        fn open_models(&self, cache: u64, mode: Mode, warm: bool, ssd: &str) -> (Core, Replay) {
            let p = Policy::parse(POLICY).unwrap();
            let r = p.resolve(Some(mode));
            Core::open(
                &r,
                "t",
                p.classify.clone(),
                cache,
                &self.ssd(),
                &self.hdd(),
                ssd,
                "none",
                warm,
            )
            .unwrap()
        }
        /// File `name` written with class 24 by a tier in `mode`, unmounted cleanly.
        fn written_and_unmounted(&self, name: &str, mode: Mode, data: &[u8]) -> Arc<File> {
            let (f, _) = self.file(name);
            let (core, _) = self.open(1 << 20, mode);
            core.write(&f, 24, 0, data).unwrap();
            let _held = core.shutdown().unwrap();
            f
        }
        fn file(&self, name: &str) -> (Arc<File>, u64) {
            let f = journal::open_rw_create(&self.hdd().join(name)).unwrap();
            let ino = f.metadata().unwrap().ino();
            (Arc::new(f), ino)
        }
    }

    impl Drop for Dirs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    fn ssd_writes(core: &Core) -> (u64, u64) {
        let s = &core.stats().devices["ssd"];
        (s.write_ops, s.write_bytes)
    }

    #[test]
    fn an_fsync_charges_the_journal_pages_it_makes_durable_to_the_ssd_model() {
        let d = Dirs::new("journal-charge");
        let (core, _) = d.open_models(1 << 20, Mode::Dss, false, "intel710");
        let (f, ino) = d.file("a");
        core.write(&f, 24, 0, &pattern(4096, 3)).unwrap();
        let written = ssd_writes(&core);
        core.sync_file(ino, &f, false).unwrap();
        let synced = ssd_writes(&core);
        // The block's dirty record sits in the journal's first page.
        assert_eq!(synced, (written.0 + 1, written.1 + 4096));
        // Nothing new in the journal: a second fsync makes nothing more durable.
        core.sync_file(ino, &f, false).unwrap();
        assert_eq!(ssd_writes(&core), synced);
        // Rewrites between two syncs are charged once, when the sync makes them durable.
        for round in 0..3 {
            core.write(&f, 24 + round, 4096, &pattern(4096, round))
                .unwrap();
        }
        let before = ssd_writes(&core);
        core.sync_file(ino, &f, false).unwrap();
        assert_eq!(ssd_writes(&core), (before.0 + 1, before.1 + 4096));
    }

    #[test]
    fn fsynced_blocks_survive_a_crash_and_reach_the_hdd_later() {
        let d = Dirs::new("fsync");
        let data = pattern(10_000, 1);
        {
            let (core, _) = d.open(1 << 20, Mode::Dss);
            let (f, ino) = d.file("a");
            core.write(&f, 24, 0, &data).unwrap();
            core.sync_file(ino, &f, false).unwrap();
            let on_hdd = std::fs::read(d.hdd().join("a")).unwrap();
            assert_ne!(
                on_hdd, data,
                "fsync did not write back: the SSD holds the data"
            );
            assert!(
                d.hdd()
                    .join(".dss-tier/anchors")
                    .join(ino.to_string())
                    .exists()
            );
        }
        // The daemon is gone; a new one replays the journal.
        let (core, replay) = d.open(1 << 20, Mode::Dss);
        assert_eq!(replay.restored, 3);
        assert!(!replay.previous_clean);
        let (f, ino) = d.file("a");
        assert_eq!(core.read(&f, 24, 0, 20_000).unwrap(), data);
        assert_eq!(core.stats().classes["24"].dirty_bytes, 3 * 4096);
        let _held = core.shutdown().unwrap();
        assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), data);
        assert!(
            !d.hdd()
                .join(".dss-tier/anchors")
                .join(ino.to_string())
                .exists(),
            "no anchor once nothing is dirty"
        );
    }

    /// (read, write) operations of device `dev` ("ssd" or "hdd").
    fn dev_ops(core: &Core, dev: &str) -> (u64, u64) {
        let s = &core.stats().devices[dev];
        (s.read_ops, s.write_ops)
    }

    #[test]
    fn adjacent_slots_move_in_one_call_and_scattered_ones_stay_intact() {
        let d = Dirs::new("runs");
        let (core, _) = d.open(1 << 20, Mode::Dss);
        let ((a, _), (b, _), (c, ino_c)) = (d.file("a"), d.file("b"), d.file("c"));
        // Two files written block by block in turn: their slots alternate.
        for i in 0..8u64 {
            core.write(&a, 24, i * 4096, &pattern(4096, i as u8))
                .unwrap();
            core.write(&b, 24, i * 4096, &pattern(4096, 100 + i as u8))
                .unwrap();
        }
        let (r0, w0) = dev_ops(&core, "ssd");
        let data = pattern(8 * 4096, 7);
        core.write(&a, 24, 0, &data).unwrap();
        assert_eq!(
            dev_ops(&core, "ssd").1 - w0,
            8,
            "eight hits on every other slot"
        );
        assert_eq!(core.read(&a, 24, 0, 8 * 4096).unwrap(), data);
        assert_eq!(dev_ops(&core, "ssd").0 - r0, 8);
        for i in 0..8u64 {
            let got = core.read(&b, 24, i * 4096, 4096).unwrap();
            assert_eq!(got, pattern(4096, 100 + i as u8), "block {i} of b");
        }
        // Sixteen fresh blocks take sixteen adjacent free slots: one write, one read.
        let (r0, w0) = dev_ops(&core, "ssd");
        let big = pattern(16 * 4096, 3);
        core.write(&c, 24, 0, &big).unwrap();
        assert_eq!(core.read(&c, 24, 0, big.len()).unwrap(), big);
        assert_eq!(dev_ops(&core, "ssd"), (r0 + 1, w0 + 1));
        // Truncation frees them so that a rewrite gets them back in order.
        core.truncate(ino_c, &c, big.len() as u64, 0).unwrap();
        let (_, w0) = dev_ops(&core, "ssd");
        let again = pattern(16 * 4096, 4);
        core.write(&c, 24, 0, &again).unwrap();
        assert_eq!(dev_ops(&core, "ssd").1, w0 + 1);
        assert_eq!(core.read(&c, 24, 0, again.len()).unwrap(), again);
    }

    #[test]
    fn read_fills_of_adjacent_blocks_move_in_one_call_each_way() {
        use std::os::unix::fs::FileExt;
        let d = Dirs::new("fills");
        let (core, _) = d.open(1 << 20, Mode::Dss);
        let (f, _) = d.file("f");
        // On the HDD only, 16 blocks and a tail: every block read misses and is filled.
        let data = pattern(16 * 4096 + 100, 9);
        f.write_all_at(&data, 0).unwrap();
        let (h0, s0) = (dev_ops(&core, "hdd"), dev_ops(&core, "ssd"));
        // Unaligned at both ends: from inside block 0 to the file's end.
        assert_eq!(core.read(&f, 24, 10, 1 << 20).unwrap(), data[10..]);
        assert_eq!(
            dev_ops(&core, "hdd").0 - h0.0,
            1,
            "one HDD read for 17 blocks"
        );
        assert_eq!(
            dev_ops(&core, "ssd").1 - s0.1,
            1,
            "one slab write for 17 blocks"
        );
        assert_eq!(core.stats().classes["24"].misses, 17);
        // All of it is cached now: read back from the slab alone.
        let (h1, s1) = (dev_ops(&core, "hdd"), dev_ops(&core, "ssd"));
        assert_eq!(core.read(&f, 24, 0, data.len()).unwrap(), data);
        assert_eq!(core.read(&f, 24, 4095, 2).unwrap(), data[4095..4097]);
        assert_eq!(dev_ops(&core, "hdd"), h1);
        assert_eq!(dev_ops(&core, "ssd").0 - s1.0, 2);
    }

    #[test]
    fn unaligned_writes_keep_the_bytes_around_them() {
        let d = Dirs::new("unaligned");
        let (f, ino) = d.file("a");
        let old = pattern(40_000, 5);
        std::fs::write(d.hdd().join("a"), &old).unwrap();
        let (core, _) = d.open(1 << 20, Mode::Dss);
        // Starts and ends inside blocks that only the HDD holds so far.
        let new = pattern(20_000, 9);
        core.write(&f, 24, 3000, &new).unwrap();
        let mut want = old.clone();
        want[3000..23_000].copy_from_slice(&new);
        assert_eq!(core.read(&f, 24, 0, 50_000).unwrap(), want);
        // And once more across the cached blocks and past the end of the file.
        let tail = pattern(10_000, 11);
        core.write(&f, 24, 35_000, &tail).unwrap();
        want.resize(45_000, 0);
        want[35_000..].copy_from_slice(&tail);
        assert_eq!(core.read(&f, 24, 0, 50_000).unwrap(), want);
        core.flush_file(ino, 45_000).unwrap();
        assert_eq!(core.stats().dirty_entries, 0);
        assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), want);
    }

    #[test]
    fn clean_copies_are_never_served_after_a_restart() {
        let d = Dirs::new("clean");
        {
            let (core, _) = d.open(1 << 20, Mode::Dss);
            let (f, _) = d.file("a");
            core.write(&f, 24, 0, &pattern(4096, 1)).unwrap();
            core.flush_all().unwrap();
            assert_eq!(core.stats().classes["24"].clean_bytes, 4096);
        }
        // The HDD copy moves on after the cache called its copy clean.
        let newer = pattern(4096, 2);
        std::fs::write(d.hdd().join("a"), &newer).unwrap();
        let (core, replay) = d.open(1 << 20, Mode::Dss);
        assert_eq!((replay.restored, replay.clean_dropped), (0, 1));
        let (f, _) = d.file("a");
        assert_eq!(core.read(&f, 24, 0, 4096).unwrap(), newer);
    }

    #[test]
    fn blocks_of_deleted_files_are_dropped_not_written_back() {
        let d = Dirs::new("deleted");
        let (f, ino) = d.file("a");
        {
            let (core, _) = d.open(1 << 20, Mode::Dss);
            core.write(&f, 24, 0, &pattern(8192, 1)).unwrap();
            core.sync_file(ino, &f, false).unwrap();
            core.discard_file(ino, 8192);
            std::fs::remove_file(d.hdd().join("a")).unwrap();
        }
        let (_core, replay) = d.open(1 << 20, Mode::Dss);
        assert_eq!(replay.restored, 0);
        assert!(
            std::fs::read_dir(d.hdd().join(".dss-tier/anchors"))
                .unwrap()
                .next()
                .is_none(),
            "the stale anchor went at mount"
        );
    }

    #[test]
    fn truncation_and_size_survive_through_the_journal() {
        let d = Dirs::new("size");
        let (f, ino) = d.file("a");
        {
            let (core, _) = d.open(1 << 20, Mode::Dss);
            core.write(&f, 24, 0, &pattern(10_000, 3)).unwrap();
            core.truncate(ino, &f, 10_000, 5000).unwrap();
            core.sync_file(ino, &f, false).unwrap();
        }
        // Even an HDD that lost the size (it was never synced there) gets it back.
        std::fs::OpenOptions::new()
            .write(true)
            .open(d.hdd().join("a"))
            .unwrap()
            .set_len(0)
            .unwrap();
        let (core, replay) = d.open(1 << 20, Mode::Dss);
        assert_eq!(replay.restored, 2);
        let (f, _) = d.file("a");
        assert_eq!(f.metadata().unwrap().len(), 5000);
        assert_eq!(
            core.read(&f, 24, 0, 20_000).unwrap(),
            pattern(10_000, 3)[..5000]
        );
    }

    #[test]
    fn pinned_blocks_stay_on_the_ssd_across_a_clean_unmount() {
        let d = Dirs::new("pinned");
        let data = pattern(4096, 9);
        let f = d.written_and_unmounted("a", Mode::Ssd, &data);
        assert_ne!(std::fs::read(d.hdd().join("a")).unwrap(), data);
        let (core, replay) = d.open(1 << 20, Mode::Ssd);
        assert!(replay.previous_clean);
        assert_eq!(replay.restored, 1);
        assert_eq!(core.read(&f, 24, 0, 4096).unwrap(), data);
        assert_eq!(core.stats().pinned_entries, 1);
    }

    #[test]
    fn a_new_geometry_writes_the_old_cache_back_first() {
        let d = Dirs::new("geometry");
        let data = pattern(6000, 4);
        {
            let (core, _) = d.open(1 << 20, Mode::Dss);
            let (f, ino) = d.file("a");
            core.write(&f, 24, 0, &data).unwrap();
            core.sync_file(ino, &f, false).unwrap();
        }
        let (_core, replay) = d.open(2 << 20, Mode::Dss);
        assert_eq!((replay.written_back, replay.restored), (2, 0));
        assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), data);
    }

    #[test]
    fn fsck_reports_and_repairs_a_crashed_cache() {
        let d = Dirs::new("fsck");
        let data = pattern(9000, 5);
        {
            let (core, _) = d.open(1 << 20, Mode::Dss);
            let (f, ino) = d.file("a");
            core.write(&f, 24, 0, &data).unwrap();
            core.sync_file(ino, &f, false).unwrap();
        }
        let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), false).unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert!(r.notes.iter().any(|n| n.contains("unclean")));
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("class 24: 0 clean, 3 dirty"))
        );
        // Damage one record: fsck notices.
        let j = std::fs::OpenOptions::new()
            .write(true)
            .open(d.ssd().join(JOURNAL))
            .unwrap();
        j.write_all_at(&[0xAB; 4], journal::HEADER + 32 * 100 + 4)
            .unwrap();
        let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), false).unwrap();
        assert!(r.problems.iter().any(|p| p.contains("checksum")));
        let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), true).unwrap();
        assert!(r.notes.iter().any(|n| n.contains("3 blocks written back")));
        assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), data);
        let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), false).unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        let (_core, replay) = d.open(1 << 20, Mode::Dss);
        assert_eq!(replay.restored, 0);
    }

    #[test]
    fn reads_move_blocks_to_the_files_current_size_bucket_and_no_other_class() {
        let d = Dirs::new("resize");
        let (core, _) = d.open(1 << 20, Mode::Dss);
        let cached = |class: &str| {
            let s = core.stats();
            s.classes
                .get(class)
                .map_or(0, |c| (c.clean_bytes + c.dirty_bytes) / 4096)
        };
        // Written while the file was one block (bucket <= 4 KiB, class 11), then grown
        // to 100 KiB (bucket <= 256 KiB, class 14).
        let (a, _) = d.file("a");
        core.write(&a, 11, 0, &pattern(4096, 1)).unwrap();
        core.write(&a, 14, 4096, &pattern(96 * 1024, 2)).unwrap();
        assert_eq!((cached("11"), cached("14")), (1, 24));
        // A read by a name rule's class (5) is not by size: nothing moves.
        core.read(&a, 5, 0, 4096).unwrap();
        assert_eq!((cached("11"), cached("14")), (1, 24));
        // A read by the current size bucket moves the early block along.
        assert_eq!(
            core.read(&a, 14, 0, 8192).unwrap()[..4096],
            pattern(4096, 1)
        );
        assert_eq!((cached("11"), cached("14")), (0, 25));
        // A client's class stays whatever the size-classified reader says.
        let (b, _) = d.file("b");
        core.write(&b, 25, 0, &pattern(8192, 3)).unwrap();
        core.read(&b, 14, 0, 8192).unwrap();
        assert_eq!((cached("25"), cached("14")), (2, 25));
    }

    #[test]
    fn a_warm_start_keeps_the_clean_blocks_of_a_clean_unmount_only() {
        let d = Dirs::new("warm");
        let data = pattern(10_000, 7);
        let f = d.written_and_unmounted("a", Mode::Dss, &data);
        // Cold (the default): the clean copies are dropped.
        {
            let (core, replay) = d.open(1 << 20, Mode::Dss);
            assert_eq!((replay.clean_restored, replay.clean_dropped), (0, 3));
            assert_eq!(
                core.stats().classes.get("24").map_or(0, |c| c.clean_bytes),
                0
            );
            // Read back into the cache, then unmounted cleanly again.
            assert_eq!(core.read(&f, 24, 0, 10_000).unwrap(), data);
            let _held = core.shutdown().unwrap();
        }
        // Warm: kept, and served without touching the HDD.
        {
            let (core, replay) = d.open_warm(1 << 20, Mode::Dss, true);
            assert!(replay.previous_clean);
            assert_eq!((replay.clean_restored, replay.clean_dropped), (3, 0));
            assert_eq!(core.stats().classes["24"].clean_bytes, 3 * 4096);
            let hdd_reads = dev_ops(&core, "hdd").0;
            assert_eq!(core.read(&f, 24, 0, 10_000).unwrap(), data);
            assert_eq!(dev_ops(&core, "hdd").0, hdd_reads);
            core.flush_all().unwrap();
            // The daemon dies without unmounting: clean records, an unclean journal.
        }
        let (_core, replay) = d.open_warm(1 << 20, Mode::Dss, true);
        assert!(!replay.previous_clean);
        assert_eq!(replay.clean_restored, 0);
    }
}
