//! File-system metadata (inodes, directories, xattrs) charged through the cache as
//! pseudo-blocks, competing for the SSD with the file data by class.

use super::device_io::hdd_addr;
use super::state::{Core, Inner, META};
use dss_engine::device::{Device, Op};
use dss_engine::{BlockKey, ReadOutcome, WriteOutcome};

/// What a metadata pseudo-block stands for; each has its own class in the policy.
#[derive(Clone, Copy)]
pub enum MetaKind {
    Inode,
    Directory,
    Xattr,
}

impl Core {
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
}
