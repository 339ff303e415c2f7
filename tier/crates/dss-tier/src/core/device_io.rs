//! I/O on the slab and the HDD files, each access charged to the device model of the
//! device that holds the data (or timed, with no model).

use super::state::{Core, Inner};
use crate::runs::Run;
use dss_engine::device::{Device, Model, Op};
use dss_engine::pagecache::NO_FILE;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// Virtual address of a file's data on the modelled HDD: files start at 1 MiB boundaries
/// spread over the model's span (the stretch of the disk its file system fills, the
/// whole disk by default), so that switching files costs a seek of a random distance
/// within it, as it would on a real disk.
pub(super) fn hdd_addr(span: u64, file: u64, offset: u64) -> u64 {
    let starts = (span >> 20).max(1);
    let mixed = file.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
    ((mixed % starts) << 20).wrapping_add(offset)
}

/// What a modelled SSD page cache files the slab's and the write-back journal's pages
/// under: the tier syncs both files at every fsync, so one fsync of this writes back all
/// of them. Metadata pseudo-blocks stay under `NO_FILE`, which no fsync names: they reach
/// the device with the flusher, as a file system's own metadata does.
pub(super) const SLAB_PAGES: u64 = NO_FILE - 1;

impl Core {
    pub(super) fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// The instant of the modelled completion time `until` (virtual ns since start), or
    /// `None` if it has passed.
    pub(super) fn deadline(&self, until: u64) -> Option<Instant> {
        (until > self.now()).then(|| self.t0 + Duration::from_nanos(until))
    }

    /// Sleep until the modelled completion time `until` (virtual ns since start).
    pub(super) fn wait_until(&self, until: u64) {
        let now = self.now();
        if until > now {
            std::thread::sleep(Duration::from_nanos(until - now));
        }
    }

    /// Charge one access to a device: modelled (completion time returned) or real
    /// (the closure's measured time recorded). `file` names the data for the modelled
    /// page cache's fsync.
    pub(super) fn charge<T>(
        &self,
        dev: &mut Device,
        op: Op,
        (file, addr): (u64, u64),
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
            Ok((r, dev.access(self.now(), op, file, addr, len)))
        }
    }

    /// The modelled HDD's side of syncing files `ids` (the real sync is the caller's):
    /// their dirty pages in the modelled page cache are written back. Returns when that
    /// completes (0 without a page cache, where every write was charged as it came).
    pub(super) fn hdd_synced(&self, inner: &mut Inner, ids: impl IntoIterator<Item = u64>) -> u64 {
        if inner.hdd.pagecache().is_none() {
            return 0;
        }
        let now = self.now();
        ids.into_iter()
            .map(|id| inner.hdd.fsync(now, id))
            .max()
            .unwrap_or(0)
    }

    /// The modelled SSD's side of the tier's sync of the slab and the journal: their
    /// dirty pages in its page cache are written back (0 without one).
    pub(super) fn ssd_synced(&self, ssd: &mut Device, at: u64) -> u64 {
        if ssd.pagecache().is_none() {
            return 0;
        }
        ssd.fsync(at, SLAB_PAGES)
    }

    pub(super) fn ssd_io(
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
    pub(super) fn ssd_at(
        &self,
        inner: &mut Inner,
        op: Op,
        off: u64,
        buf: IoBuf<'_>,
    ) -> io::Result<u64> {
        let len = buf.len() as u64;
        let store = &self.store;
        let (_, t) = self.charge(&mut inner.ssd, op, (SLAB_PAGES, off), len, || match buf {
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

    pub(super) fn hdd_io(
        &self,
        inner: &mut Inner,
        op: Op,
        file: &File,
        id: u64,
        off: u64,
        buf: IoBuf<'_>,
    ) -> io::Result<(usize, u64)> {
        let len = buf.len() as u64;
        self.charge(
            &mut inner.hdd,
            op,
            (id, hdd_addr(self.hdd_span, id, off)),
            len,
            || match buf {
                IoBuf::Read(b) => read_full(file, b, off),
                IoBuf::Write(b) => file.write_all_at(b, off).map(|_| b.len()),
            },
        )
    }

    pub(super) fn ssd_read_run(
        &self,
        inner: &mut Inner,
        run: Run,
        out: &mut [u8],
    ) -> io::Result<u64> {
        if run.is_empty() {
            return Ok(0);
        }
        let dst = &mut out[run.buf..][..run.len];
        self.ssd_at(inner, Op::Read, run.dev, IoBuf::Read(dst))
    }
}

pub(super) enum IoBuf<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

impl IoBuf<'_> {
    pub(super) fn len(&self) -> usize {
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
