//! The filesystem's state: the HDD directory it passes through, the inodes and handles
//! the kernel holds, and the cache its file data goes through.

use super::convert::{errno, kind_of, time};
use super::deferred::{Buffers, Deferred};
use super::handles::{Handle, Handles, Io, has_privs, libc_o, open_file};
use super::nodes::{Node, Nodes};
use super::passthrough::Backings;
use super::requests::Requests;
use super::target::Target;
use crate::control::Control;
use crate::core::{Core, MetaKind};
use crate::ioctl::Ioctls;
use fuser::{BackingId, Errno, FileAttr, FileHandle, FileType, Generation, INodeNo, ReplyEntry};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Opens of a name that keeps going to other files before the inode is given up on.
const OPEN_TRIES: usize = 4;

/// Attribute and entry cache lifetime. Short: the HDD directory is ours alone, but
/// sizes of files being written change under the kernel's feet otherwise.
pub(super) const TTL: Duration = Duration::from_secs(1);

/// The filesystem of one mount.
pub struct TierFs {
    pub(super) root: PathBuf,
    pub(super) nodes: Mutex<Nodes>,
    pub(super) handles: Handles,
    /// Inodes written through a direct handle since their last page-cached open: that
    /// open must drop what the page cache holds of them.
    pub(super) direct_written: Mutex<HashSet<u64>>,
    /// Files (by HDD inode) whose last name went while handles were open on them: their
    /// cached blocks, for an SSD-placed one the only copy, stay until the last handle is
    /// released. Its lock is taken before the handles' whenever both are.
    pub(super) unnamed: Mutex<HashSet<u64>>,
    /// The kernel takes ENOSYS from opendir as "no directory handles needed".
    pub(super) no_opendir: bool,
    /// Kernel passthrough was asked for at mount (it is on once the kernel agrees).
    pub(super) passthrough_wanted: bool,
    pub(super) backings: Backings,
    pub(super) requests: Requests,
    /// Read replies waiting for their modelled completion, and the buffers they hold.
    pub(super) deferred: Deferred,
    pub(super) buffers: Buffers,
    pub(super) core: Arc<Core>,
    pub(super) ioctls: Ioctls,
    /// What `dss-tier flush`, `reset-counters` and `reload-policy` reach.
    pub(super) control: Control,
}

impl TierFs {
    pub fn new(
        root: PathBuf,
        core: Arc<Core>,
        ioctls: Ioctls,
        control: Control,
        passthrough: bool,
    ) -> io::Result<TierFs> {
        let root_ino = fs::metadata(&root)?.ino();
        Ok(TierFs {
            nodes: Mutex::new(Nodes::new(root.clone(), root_ino)),
            root,
            handles: Handles::new(),
            direct_written: Mutex::new(HashSet::new()),
            unnamed: Mutex::new(HashSet::new()),
            no_opendir: false,
            passthrough_wanted: passthrough,
            backings: Backings::new(),
            requests: Requests::new(),
            deferred: Deferred::start()?,
            buffers: Buffers::default(),
            core,
            ioctls,
            control,
        })
    }

    pub(super) fn fuse_ino(&self, hdd_ino: u64) -> u64 {
        fuse_ino_of(self.nodes.lock().unwrap().root_ino, hdd_ino)
    }

    pub(super) fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        self.nodes
            .lock()
            .unwrap()
            .map
            .get(&ino.0)
            .map(|n| n.path.clone())
            .ok_or(Errno::ENOENT)
    }

    /// A name of inode `ino` now, with what it names: its remembered name or another of
    /// its names, checked to be still the inode's; None when it has none left.
    pub(super) fn live_name(&self, ino: INodeNo) -> Result<Option<(PathBuf, fs::Metadata)>, Errno> {
        let names = {
            let nodes = self.nodes.lock().unwrap();
            let n = nodes.map.get(&ino.0).ok_or(Errno::ENOENT)?;
            std::iter::once(n.path.clone())
                .chain(n.links.iter().cloned())
                .collect::<Vec<_>>()
        };
        for name in names {
            if let Ok(md) = fs::symlink_metadata(&name)
                && self.fuse_ino(md.ino()) == ino.0
            {
                return Ok(Some((name, md)));
            }
        }
        Ok(None)
    }

    /// Where a request by inode `ino` reaches its file now (`Target`): a live name, or an
    /// open handle of a file with no name left.
    pub(super) fn target(&self, ino: INodeNo) -> Result<Target, Errno> {
        match self.live_name(ino)? {
            Some((name, _)) => Ok(Target::Name(name)),
            None => self
                .handles
                .get_or_any(None, ino.0)
                .map(Target::Open)
                .ok_or(Errno::ENOENT),
        }
    }

    /// Where a call on the inode itself (its attributes or extended attributes) reaches
    /// it: handle `fh` if the kernel sent one, else any handle open on the inode, else a
    /// live name. A name checked to be the inode's can leave it before the call that
    /// follows (an unlink or a rename over it), which would answer ENOENT, or reach
    /// another file; an open handle holds the inode itself, as the caller's descriptor
    /// does on a local file system.
    pub(super) fn held(&self, ino: INodeNo, fh: Option<FileHandle>) -> Result<Target, Errno> {
        let handle = fh
            .and_then(|fh| self.handles.get_or_any(Some(fh), ino.0))
            .filter(|h| h.ino == ino.0)
            .or_else(|| self.handles.get_or_any(None, ino.0));
        match handle {
            Some(h) => Ok(Target::Open(h)),
            None => self.target(ino),
        }
    }

    /// Inode `ino` opened with `flags` (O_TRUNC left to the caller), and where it was
    /// reached. A name checked to be the inode's can go to another file before the open
    /// that follows (a rename over it): what was opened is checked too, and the inode
    /// looked for again.
    pub(super) fn open_as(&self, ino: INodeNo, flags: i32) -> Result<(Target, File), Errno> {
        for _ in 0..OPEN_TRIES {
            let target = self.target(ino)?;
            let f = open_file(&target.path(), flags, None)?;
            if self.fuse_ino(f.metadata().map_err(errno)?.ino()) == ino.0 {
                return Ok((target, f));
            }
        }
        // Renamed over again and again: as if the name had gone just before the open.
        Err(Errno::ENOENT)
    }

    pub(super) fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    pub(super) fn attr(&self, md: &fs::Metadata) -> FileAttr {
        FileAttr {
            ino: INodeNo(self.fuse_ino(md.ino())),
            size: md.size(),
            blocks: md.blocks(),
            atime: time(md.atime(), md.atime_nsec()),
            mtime: time(md.mtime(), md.mtime_nsec()),
            ctime: time(md.ctime(), md.ctime_nsec()),
            crtime: time(md.ctime(), md.ctime_nsec()),
            kind: kind_of(md.file_type()),
            perm: (md.mode() & 0o7777) as u16,
            // The anchor link is the tier's, not the user's.
            nlink: (md.nlink() - u64::from(md.is_file() && self.core.is_anchored(md.ino()))) as u32,
            uid: md.uid(),
            gid: md.gid(),
            rdev: md.rdev() as u32,
            blksize: self.core.block_size(),
            flags: 0,
        }
    }

    /// Stat `path` and remember it as an inode the kernel now knows.
    pub(super) fn remember(&self, path: PathBuf) -> Result<FileAttr, Errno> {
        let md = fs::symlink_metadata(&path).map_err(errno)?;
        self.core.check_warm(&md);
        let attr = self.attr(&md);
        let mut nodes = self.nodes.lock().unwrap();
        // Read under the guard already held: fuse_ino would take the lock a second time.
        let root = nodes.root_ino;
        let node = nodes.map.entry(attr.ino.0).or_insert(Node {
            path: path.clone(),
            links: Vec::new(),
            lookups: 0,
        });
        if node.path != path && !node.links.contains(&path) {
            let old = std::mem::replace(&mut node.path, path);
            if fs::symlink_metadata(&old).is_ok_and(|m| fuse_ino_of(root, m.ino()) == attr.ino.0) {
                node.links.push(old);
            }
        }
        node.lookups += 1;
        Ok(attr)
    }

    /// Class of data I/O on `h`: its own, or the policy's default for the file.
    pub(super) fn data_class(&self, h: &Handle) -> u8 {
        self.class_or_default(h, || h.file.metadata().map(|m| m.size()).unwrap_or(0))
    }

    /// `data_class` of a file whose metadata the caller has already read.
    pub(super) fn data_class_of(&self, h: &Handle, md: &fs::Metadata) -> u8 {
        self.class_or_default(h, || md.size())
    }

    fn class_or_default(&self, h: &Handle, size: impl FnOnce() -> u64) -> u8 {
        match h.class.load(Ordering::Relaxed) {
            0 => self.core.default_class(&h.name.to_string_lossy(), size()),
            c => c,
        }
    }

    pub(super) fn file_id(md: &fs::Metadata) -> u64 {
        md.ino()
    }

    /// Take a name away with `remove` (an unlink, or a rename over it). If it is the
    /// file's last, the file's cached blocks go too, so that a later file reusing the
    /// inode number never sees them; they go after the name, so that a file that keeps
    /// its name (the daemon died, or `remove` failed) keeps its data. A file still open
    /// keeps its blocks until its last handle is released (`released`): its handles go on
    /// reading and writing it, and the open file keeps the inode number from reuse.
    /// Returns whether this was the last name.
    pub(super) fn remove_name(
        &self,
        md: Option<&fs::Metadata>,
        remove: impl FnOnce() -> Result<(), Errno>,
    ) -> Result<bool, Errno> {
        let Some(md) = md.filter(|m| m.nlink() - u64::from(self.core.is_anchored(m.ino())) <= 1)
        else {
            remove()?;
            return Ok(false);
        };
        if md.is_file() {
            let id = Self::file_id(md);
            let mut unnamed = self.unnamed.lock().unwrap();
            if self.handles.open_on(md.ino()) {
                remove()?;
                unnamed.insert(id);
            } else {
                self.core.discard_file_after(id, md.size(), remove)?;
            }
        } else {
            remove()?;
        }
        Ok(true)
    }

    /// True when the last name of `f`, opened by a name, went before a handle on it was
    /// registered, and its cached blocks with it (no handle was open to keep them): what
    /// the cache held of it is gone, so the open fails as if the name had gone first.
    pub(super) fn lost(&self, f: &File, unnamed: &HashSet<u64>) -> Result<bool, Errno> {
        let md = f.metadata().map_err(errno)?;
        let names = md.nlink() - u64::from(self.core.is_anchored(md.ino()));
        Ok(md.is_file() && names == 0 && !unnamed.contains(&Self::file_id(&md)))
    }

    /// Release handle `fh`; the handle, if it was open. The last handle of a file whose
    /// names are all gone takes the file's cached blocks with it.
    pub(super) fn released(&self, fh: FileHandle) -> Option<Arc<Handle>> {
        let mut unnamed = self.unnamed.lock().unwrap();
        let h = self.handles.release(fh)?;
        // Nearly always empty: a release then costs no fstat.
        if unnamed.is_empty() {
            return Some(h);
        }
        if let Ok(md) = h.file.metadata() {
            let id = Self::file_id(&md);
            if unnamed.contains(&id) && !self.handles.any_on(h.ino) {
                unnamed.remove(&id);
                let _ = self
                    .core
                    .discard_file_after(id, md.size(), || Ok::<(), Errno>(()));
            }
        }
        Some(h)
    }

    /// A new name in `parent` that `make` creates on the HDD (directory, node, link).
    pub(super) fn new_entry(
        &self,
        parent: INodeNo,
        name: &OsStr,
        reply: ReplyEntry,
        make: impl FnOnce(&Path) -> Result<(), Errno>,
    ) {
        let run = || -> Result<FileAttr, Errno> {
            let path = self.child(parent, name)?;
            // A new entry changes the parent's directory block and its inode (times,
            // and the link count for a directory), as a create does.
            self.core.meta(MetaKind::Directory, parent.0, true);
            self.core.meta(MetaKind::Inode, parent.0, true);
            make(&path)?;
            let attr = self.remember(path)?;
            self.created(&attr);
            Ok(attr)
        };
        match run() {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(super) fn created(&self, attr: &FileAttr) {
        self.core
            .meta_created(attr.ino.0, attr.kind == FileType::Directory);
    }

    /// Register `file` (opened as `path`) as a handle of FUSE inode `ino`, `direct` if
    /// its creator asked for it, in passthrough when the inode qualifies (see
    /// `passthrough`): `register` hands the file to the kernel as a backing file.
    pub(super) fn new_handle(
        &self,
        ino: u64,
        path: &Path,
        file: File,
        direct: bool,
        flags: i32,
        register: impl FnOnce(&File) -> io::Result<BackingId>,
    ) -> Result<(u64, Option<Arc<BackingId>>), Errno> {
        let mut deciding = self.backings.deciding();
        let mut backing = deciding.joined(ino);
        if backing.is_none()
            && self.backings.enabled()
            && !self.handles.any_on(ino)
            && self.core.hdd_only()
        {
            let md = file.metadata().map_err(errno)?;
            // The kernel writes a backing file with the daemon's credentials, so a
            // write by another user would keep set-ID bits and capabilities: such files
            // go through the daemon, which drops them.
            if !has_privs(&file, md.mode()) {
                self.core
                    .settle_on_hdd(Self::file_id(&md), md.size())
                    .map_err(errno)?;
                backing = deciding.start(ino, || register(&file));
            }
        }
        let io = match &backing {
            Some(_) => {
                if flags & libc_o::O_ACCMODE != 0 {
                    // Pages an earlier page-cached handle left may be stale now.
                    self.direct_written.lock().unwrap().insert(ino);
                }
                Io::Passthrough
            }
            None if direct => Io::Direct,
            None => Io::Cached,
        };
        Ok((self.handles.open(ino, path, file, io), backing))
    }

    /// O_TRUNC goes through the cache so that cached blocks of the old contents go too.
    pub(super) fn truncate_on_open(&self, f: &File, flags: i32) -> Result<(), Errno> {
        if flags & libc_o::O_TRUNC != 0 && flags & libc_o::O_ACCMODE != 0 {
            let md = f.metadata().map_err(errno)?;
            if md.size() > 0 {
                self.core
                    .truncate(Self::file_id(&md), f, md.size(), 0)
                    .map_err(errno)?;
            }
        }
        Ok(())
    }
}

/// The FUSE inode number of HDD inode `hdd_ino` when the HDD root's is `root`.
fn fuse_ino_of(root: u64, hdd_ino: u64) -> u64 {
    if hdd_ino == root {
        1
    } else if hdd_ino == 1 {
        // Collides with the FUSE root; the HDD root already owns 1 here.
        root
    } else {
        hdd_ino
    }
}
