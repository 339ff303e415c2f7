//! What makes the cache's state survive the daemon: the journal kept in step with the
//! engine, the anchors of files with dirty blocks, and fsync.

use super::device_io::SLAB_PAGES;
use super::state::{Core, Inner, META};
use crate::journal::Record;
use dss_engine::Durable;
use dss_engine::device::{Device, Model, Op};
use std::fs::File;
use std::io;

impl Core {
    /// `commit` of a change no request waits on (a discard, a metadata update): a journal
    /// that cannot be written is reported, and the change stays in memory.
    pub(super) fn commit_logged(&self, inner: &mut Inner) {
        if let Err(e) = self.commit(inner, None) {
            tell!("dss-tier: journal write failed: {e}");
        }
    }

    /// Journal what the engine changed since the last call and write it out, so that it
    /// survives the daemon dying once the request that made the change is answered.
    /// `op` is the file the request wrote and its size after the request.
    pub(super) fn commit(&self, inner: &mut Inner, op: Option<(u64, u64)>) -> io::Result<()> {
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
    pub(super) fn anchor(&self, file: &File, id: u64) -> io::Result<()> {
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
    pub(super) fn gc(&self, inner: &mut Inner) -> io::Result<u64> {
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
    pub(super) fn charge_journal(&self, ssd: &mut Device, runs: &[(u64, u64)], start: u64) -> u64 {
        let bytes: u64 = runs.iter().map(|&(_, len)| len).sum();
        if bytes == 0 {
            return 0;
        }
        if matches!(ssd.model(), Model::None) {
            ssd.record(Op::Write, bytes, start, self.now());
            return 0;
        }
        let after_slab = self.slab_bytes;
        let written = runs
            .iter()
            .map(|&(off, len)| ssd.access(start, Op::Write, SLAB_PAGES, after_slab + off, len))
            .max()
            .unwrap_or(0);
        written.max(self.ssd_synced(ssd, start))
    }

    /// fsync: the file's blocks on the SSD and their journal records are made durable
    /// (no write-back); the HDD file is synced too if it was written directly, and the
    /// file's dirty pages in a modelled HDD page cache are written back.
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
            let done = done.max(self.ssd_synced(&mut g.ssd, start));
            // A modelled HDD's page cache may hold the file's pages whichever path wrote
            // them (bypass or write-back): an fsync forces them out there too.
            let done = done.max(self.hdd_synced(&mut g, [id]));
            let done = done.max(g.meta_written);
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
}
