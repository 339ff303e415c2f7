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

/// An ext4 inode's size on disk (its default): an inode-table block holds block size /
/// this many inodes, and one pseudo-block stands for them all, so that inodes made one
/// after another share a block as they do on the disk. One block per inode would make
/// Swift's metadata, a few inodes per object, take sixteen times its room in the cache.
pub const INODE_BYTES: u64 = 256;

/// Room for extended attributes inside a 256-byte inode: 96 bytes past the inode's fixed
/// part and its extra fields, less the 4-byte header and the 4-byte end marker.
const IN_INODE_XATTR_BYTES: usize = 88;

/// Per attribute inside the inode: its 16-byte entry, then its name and value, each
/// padded to 4 bytes.
const XATTR_ENTRY_BYTES: usize = 16;

/// Where an xattr of NAME_LEN and VALUE_LEN bytes lives on ext4: in the inode when it fits
/// there, else in an xattr block of its own. Swift's object metadata (a pickled dict of a
/// few hundred bytes) takes a block; a short attribute is charged to the inode's block.
pub fn xattr_kind(name_len: usize, value_len: usize) -> MetaKind {
    let pad = |n: usize| n.div_ceil(4) * 4;
    if XATTR_ENTRY_BYTES + pad(name_len) + pad(value_len) <= IN_INODE_XATTR_BYTES {
        MetaKind::Inode
    } else {
        MetaKind::Xattr
    }
}

impl Core {
    /// Charge a metadata update or lookup through the cache (no data moves: the HDD
    /// filesystem holds the metadata itself).
    pub fn meta(&self, kind: MetaKind, ino: u64, write: bool) {
        let mut g = self.inner.lock().unwrap();
        let done = self.meta_io(&mut g, kind, ino, write, true);
        let done = if write {
            self.meta_write_done(&mut g, done)
        } else {
            done
        };
        self.meta_done(g, done);
    }

    /// Metadata writes from now on are buffered: each is charged to its device, which
    /// it keeps busy, but its caller goes on at once, and an fsync waits for them all.
    /// That is ext4's way: a create or a rename changes blocks in memory and the
    /// journal's commit writes them, so only a sync waits for a disk. Written through,
    /// each create waited for its device, and since the kernel holds the directory's lock
    /// through a create, every upload of a node queued on its temporary directory.
    pub fn buffer_meta_writes(&mut self) {
        self.meta_buffered = true;
    }

    /// Wait until the buffered metadata writes so far are on their devices (a directory's
    /// fsync); at once when metadata is written through.
    pub fn meta_synced(&self) {
        let done = self.inner.lock().unwrap().meta_written;
        self.wait_until(done);
    }

    /// When the caller of a metadata write that completes at DONE may go on.
    fn meta_write_done(&self, g: &mut Inner, done: u64) -> u64 {
        if !self.meta_buffered {
            return done;
        }
        g.meta_written = g.meta_written.max(done);
        self.now()
    }

    /// A new inode is written, and a new directory's first block: the lookups that follow
    /// find them in the cache, as a kernel finds a new inode in memory, instead of each
    /// reading it from the HDD once. A new inode has no xattr block: ext4 allocates one
    /// with the first attribute that does not fit in the inode.
    pub fn meta_created(&self, ino: u64, directory: bool) {
        let mut g = self.inner.lock().unwrap();
        let mut done = self.meta_io(&mut g, MetaKind::Inode, ino, true, true);
        if directory {
            done = done.max(self.meta_io(&mut g, MetaKind::Directory, ino, true, true));
        }
        let done = self.meta_write_done(&mut g, done);
        self.meta_done(g, done);
    }

    /// Inode INO is gone (its last name removed): its directory and xattr blocks are freed,
    /// so their pseudo-blocks leave the cache. Its inode-table block stays, shared with
    /// its neighbours. Without this, the blocks of every removed inode would stay at
    /// their class's priority, since a backing file system may never reuse the number.
    pub fn meta_freed(&self, ino: u64) {
        let mut g = self.inner.lock().unwrap();
        for kind in [MetaKind::Directory, MetaKind::Xattr] {
            let key = self.meta_key(kind, ino);
            g.meta_memory.forget(key);
        }
        g.cache.discard_from(
            META | ino,
            MetaKind::Directory as u64,
            MetaKind::Xattr as u64 + 1,
        );
        self.commit_logged(&mut g);
    }

    /// The pseudo-block of KIND for inode INO: an inode shares its inode-table block with
    /// its neighbours by number; directory and xattr blocks are the inode's own.
    pub(super) fn meta_key(&self, kind: MetaKind, ino: u64) -> BlockKey {
        let file = match kind {
            MetaKind::Inode => ino / (self.bs / INODE_BYTES).max(1),
            MetaKind::Directory | MetaKind::Xattr => ino,
        };
        BlockKey {
            file: META | file,
            index: kind as u64,
        }
    }

    fn meta_done(&self, mut g: std::sync::MutexGuard<'_, Inner>, done: u64) {
        self.commit_logged(&mut g);
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
        let key = self.meta_key(kind, ino);
        let (bs, now) = (self.bs, self.now());
        // In the host's memory: a read ends there, a write still reaches the devices.
        if inner.meta_memory.touch(key) && !write {
            return now;
        }
        let hdd_at = hdd_addr(self.hdd_span, key.file, 0);
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
