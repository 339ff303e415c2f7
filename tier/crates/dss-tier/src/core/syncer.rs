//! Write-back: the syncer thread under pressure, flushes of a file or of everything,
//! and the final write-back at unmount.

use super::device_io::{IoBuf, hdd_addr};
use super::state::{Core, Inner, META, SYNC_BATCH};
use crate::runs::Run;
use dss_engine::Victim;
use dss_engine::device::Op;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

/// The state a closed tier must be left in once the daemon stops: holding the engine
/// lock keeps every FUSE request that is still in flight from being answered.
pub struct Quiesced<'a>(#[allow(dead_code)] MutexGuard<'a, Inner>);

impl Core {
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
        let (t, first_err) = as_writeback(inner, |inner| {
            self.write_runs(inner, &mut victims, &mut results, &mut touched)
        });
        drop(g);
        // The HDD copy must be durable before a record calls the block clean.
        let mut synced = true;
        for f in &touched {
            if let Err(e) = f.sync_data() {
                tell!("dss-tier: sync after write-back failed: {e}");
                synced = false;
            }
        }
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        // The sync_data above also forces the modelled page cache out, as the kernel's
        // would: write-back from the SSD pays for it like any other HDD writer.
        let mut files: Vec<u64> = victims.iter().map(|v| v.key.file).collect();
        files.dedup();
        let t = t.max(as_writeback(inner, |inner| self.hdd_synced(inner, files)));
        for (v, ok) in victims.iter().zip(&results) {
            inner.cache.clean_done(v, *ok && synced);
        }
        let cleaned = synced && results.contains(&true);
        let n = victims.len();
        inner.victims = victims;
        self.commit(inner, None)?;
        let journalled = self.gc(inner)?;
        if cleaned {
            // Only a batch that made room is progress to the writers waiting for it: one
            // that failed (a full or failing HDD) must let their patience run out.
            inner.cleaned_batches += 1;
        }
        inner.cleaned_at = inner.cleaned_at.max(t.max(journalled));
        self.room.notify_all();
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
                hdd_addr(self.hdd_span, key.file, 0),
                buf.len() as u64,
            ));
        }
        let file = match inner.files.get(&key.file) {
            Some(f) => f.clone(),
            None => {
                // Restored from the journal, or beyond the descriptors kept open: reach
                // the file through its anchor.
                let f = Arc::new(self.anchors.open_file(key.file)?);
                inner.keep_open(key.file, &f);
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
    pub(super) fn kick(&self, inner: &Inner) {
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
                    tell!("dss-tier: write-back failed: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
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

/// Run `f` with the devices counting what it submits as the cache's write-back. The
/// lock is held throughout, so no other request's I/O is counted with it.
fn as_writeback<T>(inner: &mut Inner, f: impl FnOnce(&mut Inner) -> T) -> T {
    inner.hdd.set_writeback(true);
    inner.ssd.set_writeback(true);
    let r = f(inner);
    inner.hdd.set_writeback(false);
    inner.ssd.set_writeback(false);
    r
}
