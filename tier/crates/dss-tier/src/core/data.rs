//! The data path: reads, writes, read fills, truncation and fallocate carried out on
//! the slab and the HDD files as the engine decides them.

use super::device_io::{IoBuf, hdd_addr};
use super::state::{Core, Inner, ROOM_POLL};
use crate::runs::{FillRun, Run};
use dss_engine::device::{Model, Op};
use dss_engine::{BlockKey, Durable, ReadOutcome, WriteOutcome};
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::Instant;

impl Core {
    /// `read_into_by` into a new buffer, then wait until the modelled devices have
    /// finished.
    #[cfg(test)]
    pub fn read(&self, file: &File, class: u8, offset: u64, size: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(at) = self.read_into_by(file, class, offset, size, &mut out)? {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
        }
        Ok(out)
    }

    /// Read into `out` (resized to the bytes the file holds in the range; its allocation
    /// is reused across requests) at once, and return when the modelled devices finish
    /// the read (`None` if they already have): the caller answers no earlier. Hits on
    /// adjacent slots and misses on adjacent bytes of the HDD file are each read with one
    /// call.
    pub fn read_into_by(
        &self,
        file: &File,
        class: u8,
        offset: u64,
        size: usize,
        out: &mut Vec<u8>,
    ) -> io::Result<Option<Instant>> {
        let md = file.metadata()?;
        let (id, fsize) = (md.ino(), md.size());
        let end = fsize.min(offset.saturating_add(size as u64));
        let len = end.saturating_sub(offset) as usize;
        // Every byte below is overwritten by a read (or zeroed past a short one), so the
        // old contents need no clearing.
        out.truncate(len);
        out.resize(len, 0);
        if len == 0 {
            return Ok(None);
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
        // A read changes no dirty block's record that a restart needs (it fills free or
        // clean slots, and a class only orders write-back): a journal that cannot be
        // written, as on a full SSD, must not fail it.
        self.commit_logged(inner);
        self.kick(inner);
        drop(g);
        r?;
        Ok(self.deadline(done))
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
    /// slots, one call per run of consecutive slots. A failed fill leaves its blocks
    /// uncached.
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
        let mut filled = vec![false; run.versions.len()];
        if let Ok((got, _)) = &read {
            blocks[*got..].fill(0);
            out[run.buf..][..run.len].copy_from_slice(&blocks[run.within as usize..][..run.len]);
            for (at, slot, n) in run.slot_runs() {
                let src = &blocks[at * bs..][..n * bs];
                if self
                    .ssd_io(inner, Op::Write, slot, 0, IoBuf::Write(src))
                    .is_ok()
                {
                    filled[at..at + n].fill(true);
                }
            }
        }
        for ((&slot, &version), ok) in run.slots.iter().zip(&run.versions).zip(filled) {
            inner.cache.fill_done(slot, version, ok);
        }
        read.map(|(_, t)| t)
    }

    /// Write `data` at `offset`. Blocks bound for adjacent slots, and blocks bypassing to
    /// adjacent bytes of the HDD file, are each written with one call once the engine has
    /// decided them. When a block must wait for room (`Cache::must_wait`), what is decided
    /// so far is written, the writer joins the queue of waiting writers and lets the lock
    /// go; once it is first in the queue and there is room, the request goes on from that
    /// block, finishing no earlier than the write-back that made the room.
    ///
    /// Returns the bytes written: fewer than `data` holds when a device failed part-way
    /// (a full HDD, a failing SSD), as a disk's short write. The bytes past them keep
    /// their old values, except in blocks cached before the write, which may hold new ones.
    pub fn write(
        &self,
        file: &Arc<File>,
        class: u8,
        offset: u64,
        data: &[u8],
    ) -> io::Result<usize> {
        let md = file.metadata()?;
        let w = WriteReq {
            file,
            id: md.ino(),
            fsize: md.size(),
            class,
            offset,
            data,
        };
        let mut pos = offset;
        let mut place = Place::New;
        let mut done = 0;
        let mut g = self.inner.lock().unwrap();
        let mut moved = (
            Instant::now(),
            g.cleaned_batches,
            g.room_queue.front().copied(),
        );
        let r = loop {
            let inner = &mut *g;
            let mut to_hdd = false;
            let r = self.write_part(inner, &w, &mut pos, place, &mut to_hdd);
            if to_hdd {
                inner.hdd_dirty.insert(w.id);
            }
            let c = self.commit(inner, Some((w.id, w.fsize.max(pos))));
            self.kick(inner);
            match (r, c) {
                (Ok(t), Ok(())) => done = done.max(t),
                // What was placed before the failure is journalled: a short write.
                (Err(e), Ok(())) => break Err((e, pos > offset)),
                (_, Err(e)) => break Err((e, false)),
            }
            if pos == w.end() {
                break Ok(());
            }
            if place == Place::New {
                if inner.stalled_at == Some(inner.cleaned_batches) {
                    place = Place::Around;
                    continue;
                }
                place = Place::Queued(inner.next_waiter);
                inner.room_queue.push_back(inner.next_waiter);
                inner.next_waiter += 1;
            }
            g = self.room.wait_timeout(g, ROOM_POLL).unwrap().0;
            done = done.max(g.cleaned_at);
            let now = (g.cleaned_batches, g.room_queue.front().copied());
            if now != (moved.1, moved.2) {
                moved = (Instant::now(), now.0, now.1);
            } else if moved.0.elapsed() >= self.patience {
                // Nothing moved for that long: leave the queue and write around.
                g.stalled_at = Some(g.cleaned_batches);
                self.leave_room_queue(&mut g, place);
                place = Place::Around;
            }
        };
        self.leave_room_queue(&mut g, place);
        drop(g);
        match r {
            Err((e, false)) => Err(e),
            _ => {
                self.wait_until(done);
                Ok((pos - offset) as usize)
            }
        }
    }

    fn leave_room_queue(&self, inner: &mut Inner, place: Place) {
        if let Place::Queued(id) = place {
            inner.room_queue.retain(|&w| w != id);
            self.room.notify_all();
        }
    }

    /// Write `w` from `*pos` up to its end, or up to the first block that must wait for
    /// room, leaving `*pos` there: a block that takes an entry waits while another writer
    /// is first in the queue of waiting writers, unless this writer is at `Place::Around`.
    /// Returns the modelled completion time; `to_hdd` is set when anything went to the
    /// HDD file. A slab or HDD write that fails leaves `*pos` where the placed bytes end.
    fn write_part(
        &self,
        inner: &mut Inner,
        w: &WriteReq<'_>,
        pos: &mut u64,
        place: Place,
        to_hdd: &mut bool,
    ) -> io::Result<u64> {
        let (bs, id, data) = (self.bs, w.id, w.data);
        let end = w.end();
        let file_pos = |run: &Run| w.offset + run.buf as u64;
        let (mut ssd, mut hdd) = (Run::default(), Run::default());
        // The blocks of the pending SSD run that had no entry before this write, and
        // whether it holds any that had.
        let (mut fresh, mut hits) = (Vec::new(), false);
        let mut anchored = false;
        let mut done = 0;
        // Where a write to a device failed, and why.
        let mut failed = None;
        while *pos < end {
            let index = *pos / bs;
            let within = *pos % bs;
            let n = (bs - within).min(end - *pos) as usize;
            let at = (*pos - w.offset) as usize;
            let key = BlockKey { file: id, index };
            // This runs for every block of every write: `must_wait` asks its cheap tests
            // before it looks the block up.
            if place != Place::Around
                && inner.cache.must_wait(
                    key,
                    w.class,
                    inner
                        .room_queue
                        .front()
                        .is_some_and(|&f| Place::Queued(f) != place),
                )
            {
                break;
            }
            match inner.cache.write(key, w.class, n as u32) {
                WriteOutcome::Ssd { slot, hit } => {
                    if !hit {
                        fresh.push(key);
                    }
                    if !anchored {
                        if let Err(e) = self.anchor(w.file, id) {
                            failed = Some((*pos, e));
                            break;
                        }
                        inner.keep_open(id, w.file);
                        anchored = true;
                    }
                    if hit || n as u64 == bs {
                        let dev = u64::from(slot) * bs + within;
                        if ssd.extend(dev, at, n) {
                            hits |= hit;
                        } else {
                            let this = if hit { None } else { fresh.pop() };
                            let (run, had) = (ssd, hits);
                            (ssd, hits) = (Run::start(dev, at, n), hit);
                            let t = self.ssd_run_or_around(inner, w, run, &mut fresh, had, to_hdd);
                            fresh.extend(this);
                            match t {
                                Ok(t) => done = done.max(t),
                                Err(f) => {
                                    failed = Some(f);
                                    break;
                                }
                            }
                        }
                    } else {
                        // A new entry for part of a block: the rest comes from the HDD.
                        fresh.pop();
                        let src = &data[at..][..n];
                        let t = self.fill_partial(inner, w.file, key, w.fsize, slot, within, src);
                        let piece = Run::start(*pos, at, n);
                        let t = t.or_else(|_| {
                            inner.cache.discard(key);
                            inner.cache.went_around(w.class, n as u64);
                            *to_hdd = true;
                            self.hdd_write_run(inner, w.file, id, piece, data)
                        });
                        match t {
                            Ok(t) => done = done.max(t),
                            Err(e) => {
                                failed = Some((*pos, e));
                                break;
                            }
                        }
                    }
                }
                WriteOutcome::Hdd { .. } => {
                    *to_hdd = true;
                    if !hdd.extend(*pos, at, n) {
                        let run = std::mem::replace(&mut hdd, Run::start(*pos, at, n));
                        match self.hdd_write_run(inner, w.file, id, run, data) {
                            Ok(t) => done = done.max(t),
                            Err(e) => {
                                failed = Some((file_pos(&run), e));
                                break;
                            }
                        }
                    }
                }
            }
            *pos += n as u64;
        }
        if failed.is_none() {
            let run = ssd.take();
            match self.ssd_run_or_around(inner, w, run, &mut fresh, hits, to_hdd) {
                Ok(t) => done = done.max(t),
                Err(f) => failed = Some(f),
            }
        }
        if failed.is_none() {
            let run = hdd.take();
            match self.hdd_write_run(inner, w.file, id, run, data) {
                Ok(t) => done = done.max(t),
                Err(e) => failed = Some((file_pos(&run), e)),
            }
        }
        if let Some((from, e)) = failed {
            // The runs not yet written are dropped with what follows them: the write is
            // short, ending where the first of them begins.
            fresh.iter().for_each(|&key| inner.cache.discard(key));
            *pos = [from, file_pos(&ssd), file_pos(&hdd)]
                .into_iter()
                .zip([true, !ssd.is_empty(), !hdd.is_empty()])
                .filter_map(|(p, pending)| pending.then_some(p))
                .min()
                .unwrap_or(from);
            if *pos > w.fsize && *pos > w.file.metadata()?.size() {
                w.file.set_len(*pos)?;
            }
            return Err(e);
        }
        // The HDD file's size stays the file's size even while its tail is only cached
        // (the journal's `valid` makes that size durable with the block). Asked again
        // under the lock: a write that ran while this one waited for room, or between
        // its `metadata` and the lock, may have made the file longer still.
        if *pos > w.fsize && *pos > w.file.metadata()?.size() {
            w.file.set_len(*pos)?;
        }
        Ok(done)
    }

    /// The slab write of `run`, whose blocks `fresh` had no entry before this write (and
    /// `hits` says whether any other had); `fresh` is emptied. If the slab write fails
    /// (the SSD's file system full, the SSD failing), the new blocks are forgotten, so
    /// that no slot is taken for them: a new slot holds what its last block left there,
    /// or nothing, and served or written back as this block it would replace the file's
    /// bytes with those (until 29 November a failed overwrite zeroed them). The new
    /// blocks then go to the HDD file, as a bypass would have sent them, and the blocks
    /// cached before take their bytes in their own slots, which the slab holds already
    /// (such a run used to fail whole). On failure, returns where in the file
    /// the bytes placed in order end, and why.
    fn ssd_run_or_around(
        &self,
        inner: &mut Inner,
        w: &WriteReq<'_>,
        run: Run,
        fresh: &mut Vec<BlockKey>,
        hits: bool,
        to_hdd: &mut bool,
    ) -> Result<u64, (u64, io::Error)> {
        let at = w.offset + run.buf as u64;
        let written = self.ssd_write_run(inner, run, w.data).or_else(|_| {
            fresh.iter().for_each(|&key| inner.cache.discard(key));
            let pieces = if hits {
                let new = |index| fresh.iter().any(|k| k.index == index);
                run.split_at_blocks(at, self.bs, new)
            } else {
                vec![(true, run)]
            };
            let mut done = 0;
            for (around, piece) in pieces {
                let from = w.offset + piece.buf as u64;
                let t = if around {
                    *to_hdd = true;
                    inner.cache.went_around(w.class, piece.len as u64);
                    let to = Run::start(from, piece.buf, piece.len);
                    self.hdd_write_run(inner, w.file, w.id, to, w.data)
                } else {
                    self.ssd_write_run(inner, piece, w.data)
                };
                done = done.max(t.map_err(|e| (from, e))?);
            }
            Ok(done)
        });
        fresh.clear();
        written
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

    /// True when no read or write of file data is left to decide or charge: the policy
    /// places every class on the HDD and the HDD is a real device (no model).
    pub fn hdd_only(&self) -> bool {
        let g = self.inner.lock().unwrap();
        g.cache.places_all_on_hdd() && matches!(g.hdd.model(), Model::None)
    }

    /// Leave file `id` (`size` bytes) wholly on the HDD: its dirty blocks written back
    /// and its clean copies dropped, so that I/O the kernel does on the HDD file itself
    /// finds the latest data there and leaves no stale copy here.
    pub fn settle_on_hdd(&self, id: u64, size: u64) -> io::Result<()> {
        let blocks = size.div_ceil(self.bs).max(1);
        let cached = {
            let g = self.inner.lock().unwrap();
            (0..blocks).any(|index| g.cache.lookup(BlockKey { file: id, index }).is_some())
        };
        if cached {
            self.flush_file(id, size)?;
            self.discard_file(id, size);
        }
        Ok(())
    }

    pub fn discard_file(&self, id: u64, size: u64) {
        let _ = self.discard_file_after(id, size, || Ok::<(), ()>(()));
    }

    /// Let `remove` take file `id`'s last name away, then drop its cached blocks (`size`
    /// bytes' worth). In that order: a daemon that dies between the two, or a `remove`
    /// that fails, leaves a file that still has its name and its dirty blocks, where the
    /// other order would leave the name with data only the cache held gone. The engine
    /// lock is held throughout, so that no file reusing the inode number can cache a
    /// block in between.
    pub fn discard_file_after<E>(
        &self,
        id: u64,
        size: u64,
        remove: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        let mut g = self.inner.lock().unwrap();
        remove()?;
        g.cache.discard_from(id, 0, size.div_ceil(self.bs).max(1));
        g.files.remove(&id);
        g.hdd_dirty.remove(&id);
        self.commit_logged(&mut g);
        Ok(())
    }

    /// `posix_fadvise(POSIX_FADV_DONTNEED)` of bytes `[start, end)` of file `id`: the
    /// modelled HDD page cache drops its clean pages of them.
    pub fn drop_cache(&self, id: u64, start: u64, end: u64) {
        let mut g = self.inner.lock().unwrap();
        let addr = hdd_addr(self.hdd_span, id, start);
        g.hdd.drop_range(addr, end.saturating_sub(start));
    }

    pub fn reclassify(&self, id: u64, start: u64, end: u64, class: u8) -> io::Result<()> {
        let mut g = self.inner.lock().unwrap();
        for index in start / self.bs..end.div_ceil(self.bs) {
            g.cache.reclassify(BlockKey { file: id, index }, class);
        }
        self.commit(&mut g, None)
    }
}

/// A write request as `Core::write` carries it across its parts.
struct WriteReq<'a> {
    file: &'a Arc<File>,
    id: u64,
    /// The file's size before the request.
    fsize: u64,
    class: u8,
    offset: u64,
    data: &'a [u8],
}

impl WriteReq<'_> {
    /// The byte past the request's last.
    fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }
}

/// Where a writer stands with the queue of writers waiting for room.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Not queued: it takes entries as long as nobody is queued.
    New,
    /// Queued under this id: it takes entries once first in the queue.
    Queued(u64),
    /// It gave up waiting (nothing moved for the patience): it writes around a full cache.
    Around,
}
