//! The data path: carries out the engine's decisions on the SSD slab and the HDD files,
//! charges every access to the device model that holds the data, and runs the syncer.
//!
//! One lock covers the engine and the data I/O it decides, so a write-back or a fill can
//! never interleave with a foreground access to the same block. The syncer takes it per
//! small batch, so foreground I/O waits for at most one batch.

use crate::stats::{DevStats, Stats, class_map};
use dss_engine::device::{Device, Model, Op};
use dss_engine::policy::Classify;
use dss_engine::{BlockKey, Cache, ReadOutcome, Resolved, Victim, WriteOutcome};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Metadata pseudo-files: block keys with this bit set stand for inode, directory and
/// xattr updates, so that file-system metadata is charged through the same cache.
const META: u64 = 1 << 63;

/// Blocks the syncer writes back per batch (per lock hold).
const SYNC_BATCH: usize = 64;

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
    /// Writable descriptors of files with blocks on the SSD, for the syncer.
    files: HashMap<u64, Arc<File>>,
    victims: Vec<Victim>,
}

pub struct Core {
    inner: Mutex<Inner>,
    wake: Condvar,
    store: File,
    bs: u64,
    t0: Instant,
    mode: String,
    policy_name: String,
    classify: Classify,
    ssd_model: String,
    hdd_model: String,
}

/// Virtual address of a file's data on the modelled HDD: files are spread over the
/// platter so that switching files costs a seek, as it would on a real disk.
fn hdd_addr(file: u64, offset: u64) -> u64 {
    (file.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24 << 20).wrapping_add(offset)
}

impl Core {
    pub fn new(
        resolved: &Resolved,
        policy_name: &str,
        classify: Classify,
        cache_bytes: u64,
        store: File,
        ssd_model: &str,
        hdd_model: &str,
    ) -> io::Result<Core> {
        let cfg = resolved.cache_config(cache_bytes);
        let bs = u64::from(resolved.block_size);
        store.set_len(u64::from(cfg.entries) * bs)?;
        let parse =
            |m: &str| Model::parse(m).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
        Ok(Core {
            inner: Mutex::new(Inner {
                cache: Cache::new(resolved, cfg),
                ssd: Device::new(parse(ssd_model)?),
                hdd: Device::new(parse(hdd_model)?),
                files: HashMap::new(),
                victims: Vec::with_capacity(SYNC_BATCH),
            }),
            wake: Condvar::new(),
            store,
            bs,
            t0: Instant::now(),
            mode: resolved.mode.to_string(),
            policy_name: policy_name.to_string(),
            classify,
            ssd_model: ssd_model.to_string(),
            hdd_model: hdd_model.to_string(),
        })
    }

    pub fn block_size(&self) -> u32 {
        self.bs as u32
    }

    pub fn default_class(&self, name: &str, size: u64) -> u8 {
        self.classify.file_class(name, size)
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
        let off = u64::from(slot) * self.bs + within;
        let len = buf.len() as u64;
        let store = &self.store;
        let (_, t) = self.charge(&mut inner.ssd, op, off, len, || match buf {
            IoBuf::Read(b) => read_full(store, b, off).map(|_| ()),
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

    /// Charge a metadata update or lookup through the cache (no data moves: the HDD
    /// filesystem holds the metadata itself).
    pub fn meta(&self, kind: MetaKind, ino: u64, write: bool) {
        let class = match kind {
            MetaKind::Inode => self.classify.inode,
            MetaKind::Directory => self.classify.directory,
            MetaKind::Xattr => self.classify.xattr,
        };
        let key = BlockKey {
            file: META | ino,
            index: kind as u64,
        };
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        let bs = self.bs;
        let done = if write {
            match inner.cache.write(key, class, bs as u32) {
                WriteOutcome::Ssd { slot, .. } => {
                    inner
                        .ssd
                        .submit(self.now(), Op::Write, u64::from(slot) * bs, bs)
                }
                WriteOutcome::Hdd { .. } => {
                    inner
                        .hdd
                        .submit(self.now(), Op::Write, hdd_addr(key.file, 0), bs)
                }
            }
        } else {
            match inner.cache.read(key, class) {
                ReadOutcome::Hit { slot } => {
                    inner
                        .ssd
                        .submit(self.now(), Op::Read, u64::from(slot) * bs, bs)
                }
                ReadOutcome::Miss => {
                    inner
                        .hdd
                        .submit(self.now(), Op::Read, hdd_addr(key.file, 0), bs)
                }
                ReadOutcome::MissFill { slot, version } => {
                    let t = inner
                        .hdd
                        .submit(self.now(), Op::Read, hdd_addr(key.file, 0), bs);
                    inner.ssd.submit(t, Op::Write, u64::from(slot) * bs, bs);
                    inner.cache.fill_done(slot, version, true);
                    t
                }
            }
        };
        drop(g);
        self.kick();
        self.wait_until(done);
    }

    pub fn read(&self, file: &File, class: u8, offset: u64, size: usize) -> io::Result<Vec<u8>> {
        let md = file.metadata()?;
        let (id, fsize) = (md.ino(), md.size());
        if offset >= fsize {
            return Ok(Vec::new());
        }
        let end = fsize.min(offset + size as u64);
        let mut out = vec![0u8; (end - offset) as usize];
        let mut block = vec![0u8; self.bs as usize];
        let mut done = 0;
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        let mut pos = offset;
        while pos < end {
            let index = pos / self.bs;
            let within = pos % self.bs;
            let n = (self.bs - within).min(end - pos) as usize;
            let dst = &mut out[(pos - offset) as usize..][..n];
            let key = BlockKey { file: id, index };
            let t = match inner.cache.read(key, class) {
                ReadOutcome::Hit { slot } => {
                    self.ssd_io(inner, Op::Read, slot, within, IoBuf::Read(dst))?
                }
                ReadOutcome::Miss => {
                    self.hdd_io(inner, Op::Read, file, id, pos, IoBuf::Read(dst))?
                        .1
                }
                ReadOutcome::MissFill { slot, version } => {
                    let r = self.hdd_io(
                        inner,
                        Op::Read,
                        file,
                        id,
                        index * self.bs,
                        IoBuf::Read(&mut block),
                    );
                    match r {
                        Ok((got, t)) => {
                            block[got..].fill(0);
                            dst.copy_from_slice(&block[within as usize..][..n]);
                            let w = self.ssd_io(inner, Op::Write, slot, 0, IoBuf::Write(&block));
                            inner.cache.fill_done(slot, version, w.is_ok());
                            t
                        }
                        Err(e) => {
                            inner.cache.fill_done(slot, version, false);
                            return Err(e);
                        }
                    }
                }
            };
            done = done.max(t);
            pos += n as u64;
        }
        drop(g);
        self.kick();
        self.wait_until(done);
        Ok(out)
    }

    pub fn write(&self, file: &Arc<File>, class: u8, offset: u64, data: &[u8]) -> io::Result<()> {
        let md = file.metadata()?;
        let (id, fsize) = (md.ino(), md.size());
        let end = offset + data.len() as u64;
        let mut block = vec![0u8; self.bs as usize];
        let mut done = 0;
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        let mut pos = offset;
        while pos < end {
            let index = pos / self.bs;
            let within = pos % self.bs;
            let n = (self.bs - within).min(end - pos) as usize;
            let src = &data[(pos - offset) as usize..][..n];
            let key = BlockKey { file: id, index };
            let t = match inner.cache.write(key, class, n as u32) {
                WriteOutcome::Ssd { slot, hit } => {
                    inner.files.entry(id).or_insert_with(|| file.clone());
                    if hit || n as u64 == self.bs {
                        self.ssd_io(inner, Op::Write, slot, within, IoBuf::Write(src))?
                    } else {
                        // A new entry for part of a block: the rest comes from the HDD.
                        let base = index * self.bs;
                        let mut t = 0;
                        block.fill(0);
                        if base < fsize {
                            let (got, t1) = self.hdd_io(
                                inner,
                                Op::Read,
                                file,
                                id,
                                base,
                                IoBuf::Read(&mut block),
                            )?;
                            block[got..].fill(0);
                            t = t1;
                        }
                        block[within as usize..][..n].copy_from_slice(src);
                        t.max(self.ssd_io(inner, Op::Write, slot, 0, IoBuf::Write(&block))?)
                    }
                }
                WriteOutcome::Hdd { .. } => {
                    self.hdd_io(inner, Op::Write, file, id, pos, IoBuf::Write(src))?
                        .1
                }
            };
            done = done.max(t);
            pos += n as u64;
        }
        // The HDD file's size stays the file's size even while its tail is only cached.
        if end > fsize {
            file.set_len(end)?;
        }
        drop(g);
        self.kick();
        self.wait_until(done);
        Ok(())
    }

    /// Change a file's size from `old` to `new`, keeping cached blocks consistent.
    pub fn truncate(&self, id: u64, file: &File, old: u64, new: u64) -> io::Result<()> {
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
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
            }
        }
        file.set_len(new)
    }

    pub fn discard_file(&self, id: u64, size: u64) {
        let mut g = self.inner.lock().unwrap();
        g.cache.discard_from(id, 0, size.div_ceil(self.bs).max(1));
        g.files.remove(&id);
    }

    pub fn reclassify(&self, id: u64, start: u64, end: u64, class: u8) {
        let mut g = self.inner.lock().unwrap();
        for index in start / self.bs..end.div_ceil(self.bs) {
            g.cache.reclassify(BlockKey { file: id, index }, class);
        }
    }

    /// Write back every dirty block of one file (fsync), or of all files (`None`).
    pub fn flush(&self, file: Option<u64>) -> io::Result<()> {
        loop {
            let mut g = self.inner.lock().unwrap();
            let inner = &mut *g;
            let mut victims = std::mem::take(&mut inner.victims);
            victims.clear();
            inner.cache.pick_flush(&mut victims, SYNC_BATCH, file);
            let empty = victims.is_empty();
            let r = self.write_back(inner, &mut victims);
            inner.victims = victims;
            drop(g);
            self.wait_until(r?);
            if empty {
                return Ok(());
            }
        }
    }

    pub fn flush_file(&self, id: u64) -> io::Result<()> {
        self.flush(Some(id))
    }

    /// Write `victims` back in an order the HDD serves well: sorted by file and block,
    /// adjacent blocks coalesced into one sequential write.
    fn write_back(&self, inner: &mut Inner, victims: &mut [Victim]) -> io::Result<u64> {
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
            let r = self.write_back_run(inner, run);
            let ok = r.is_ok();
            match r {
                Ok(t) => done = done.max(t),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
            for v in run {
                inner.cache.clean_done(v, ok);
            }
            i = j;
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(done),
        }
    }

    fn write_back_run(&self, inner: &mut Inner, run: &[Victim]) -> io::Result<u64> {
        let key = run[0].key;
        let bs = self.bs;
        let mut buf = vec![0u8; run.len() * bs as usize];
        let mut t = 0;
        for (k, v) in run.iter().enumerate() {
            t = t.max(self.ssd_io(
                inner,
                Op::Read,
                v.slot,
                0,
                IoBuf::Read(&mut buf[k * bs as usize..][..bs as usize]),
            )?);
        }
        if key.file & META != 0 {
            return Ok(inner.hdd.submit(
                t.max(self.now()),
                Op::Write,
                hdd_addr(key.file, 0),
                buf.len() as u64,
            ));
        }
        let Some(file) = inner.files.get(&key.file).cloned() else {
            return Err(io::Error::other("no descriptor for a dirty file"));
        };
        // Never write past the file's end: the last block is partial.
        let size = file.metadata()?.size();
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
        Ok(t.max(t2))
    }

    fn kick(&self) {
        self.wake.notify_one();
    }

    /// The syncer: sleeps until the cache is under pressure, then writes back batches
    /// until the high watermark is reached.
    pub fn syncer(self: Arc<Self>, stop: Arc<std::sync::atomic::AtomicBool>) {
        use std::sync::atomic::Ordering;
        while !stop.load(Ordering::Relaxed) {
            let mut g = self.inner.lock().unwrap();
            if !g.cache.syncer_active() {
                g = self
                    .wake
                    .wait_timeout(g, Duration::from_millis(200))
                    .unwrap()
                    .0;
            }
            let inner = &mut *g;
            let mut victims = std::mem::take(&mut inner.victims);
            victims.clear();
            inner.cache.pick_victims(&mut victims, SYNC_BATCH);
            let r = self.write_back(inner, &mut victims);
            inner.victims = victims;
            drop(g);
            match r {
                Ok(t) => self.wait_until(t),
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

    pub fn stats_json(&self) -> String {
        serde_json::to_string(&self.stats()).unwrap_or_default()
    }
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
