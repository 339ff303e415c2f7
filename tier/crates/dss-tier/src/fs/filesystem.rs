//! The fuser `Filesystem` implementation: each FUSE request carried out on the HDD
//! directory, its data and metadata charged through the cache.

use super::convert::{errno, kind_of, negative_attr, reply_xattr, sys_errno, utime_spec};
use super::handles::{kill_suidgid, libc_o, open_file};
use super::requests::Req;
use super::target::Target;
use super::tierfs::{TTL, TierFs};
use crate::control::CONTROL_XATTR;
use crate::core::{MetaKind, xattr_kind};
use crate::ioctl::Command;
use crate::layout::HIDDEN;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    IoctlFlags, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::SystemTime;

/// The kernel's page cache stays valid across opens: every change to a file goes through
/// this mount, and the tier's cache sits below the page cache, as the paper's block-level
/// cache does below the kernel's (it sees page-cache misses, not every read()).
const KEEP_CACHE: FopenFlags = FopenFlags::FOPEN_KEEP_CACHE;

/// Files created with O_EXCL (mkstemp: Swift's PUT, rsync's temporary files) are written
/// by their creator and by nothing else until renamed into place. Their handle skips
/// the kernel's page cache: each write reaches the daemon straight from the writer's
/// buffer, one copy fewer, and nothing cached can go stale, the inode being new.
const DIRECT: FopenFlags = FopenFlags::FOPEN_DIRECT_IO;

/// Background requests (readahead) the kernel sends at a time.
const MAX_BACKGROUND: u16 = 128;

/// The root's xattr through which `dss-tier stats` reads the stats document.
pub const STATS_XATTR: &str = "user.dss-tier.stats";
/// The root's xattr through which `dss-tier dump` reads the cache content by class.
pub const CONTENT_XATTR: &str = "user.dss-tier.content";

impl Filesystem for TierFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Without it the kernel asks for security.capability before every write (to
        // see whether the write must drop privileges): a round trip per write. With
        // it, the kernel remembers per inode that there is nothing to drop, and we
        // clear set-ID bits ourselves when it says so (write) or when an unprivileged
        // user truncates (setattr). Capabilities stay the kernel's: it checks them on
        // the first write and after any security.* xattr changes.
        if let Err(missing) = config.add_capabilities(InitFlags::FUSE_HANDLE_KILLPRIV_V2) {
            tell!("dss-tier: kernel lacks {missing:?}; every write costs a getxattr");
        }
        // Lookups and readdirs of one directory in parallel (Swift's workers all work in
        // the same few directories); each takes only the locks it needs here.
        let _ = config.add_capabilities(InitFlags::FUSE_PARALLEL_DIROPS);
        self.no_opendir = config
            .add_capabilities(InitFlags::FUSE_NO_OPENDIR_SUPPORT)
            .is_ok();
        // Shared mappings of a file whose handle is DIRECT (new since 6.6; older kernels
        // refuse them with ENODEV, nothing worse).
        let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        // Readahead is background work, of which the kernel sends at most this many
        // requests at a time and queues the rest in order. At its default (12) a few
        // streams read ahead from the modelled HDD filled the quota, and any other file's
        // readahead, cached on the SSD or not, queued behind the disk. A block device
        // takes 128 requests at a time (nr_requests) and serves each device apart.
        let _ = config.set_max_background(MAX_BACKGROUND);
        // Backing files on a plain filesystem (stack depth 0); depth 1 still lets an
        // overlayfs stack on this mount.
        if self.passthrough_wanted {
            let granted = config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
                && config.set_max_stack_depth(1).is_ok();
            if !granted {
                tell!(
                    "dss-tier: the kernel offers no FUSE passthrough; every I/O goes through the daemon"
                );
            }
            self.backings.enable(granted);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let _answering = self.requests.answer(Req::Lookup);
        if parent.0 == 1 && name == HIDDEN {
            return reply.error(Errno::ENOENT);
        }
        self.core.meta(MetaKind::Directory, parent.0, false);
        match self.child(parent, name).and_then(|p| self.remember(p)) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            // Inode 0 makes the kernel remember that the name does not exist (Swift
            // looks for many files that are not there); every change to the directory
            // comes through this mount, and the kernel drops the entry on a create.
            Err(Errno::ENOENT) => reply.entry(&TTL, &negative_attr(), Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        let _answering = self.requests.answer(Req::Forget);
        if ino.0 == 1 {
            return;
        }
        let mut nodes = self.nodes.lock().unwrap();
        if nodes.forget(ino.0, nlookup) {
            // The kernel's page cache of the inode went with it.
            self.direct_written.lock().unwrap().remove(&ino.0);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let _answering = self.requests.answer(Req::Getattr);
        self.core.meta(MetaKind::Inode, ino.0, false);
        let by_handle = |ino: u64| {
            self.handles
                .get_or_any(fh, ino)
                .ok_or(Errno::ENOENT)
                .and_then(|h| h.file.metadata().map_err(errno))
        };
        let md = match fh {
            Some(_) => by_handle(ino.0),
            // A live name's (one lstat, nearly always of the remembered name), else an
            // open handle's.
            None => match self.live_name(ino) {
                Ok(Some((_, md))) => Ok(md),
                Ok(None) => by_handle(ino.0),
                Err(e) => Err(e),
            },
        };
        match md {
            Ok(md) => reply.attr(&TTL, &self.attr(&md)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let _answering = self.requests.answer(Req::Setattr);
        let run = || -> Result<FileAttr, Errno> {
            let target = self.held(ino, fh)?;
            self.core.meta(MetaKind::Inode, ino.0, true);
            if let Some(m) = mode {
                fs::set_permissions(target.path(), fs::Permissions::from_mode(m & 0o7777))
                    .map_err(errno)?;
            }
            if uid.is_some() || gid.is_some() {
                target.chown(uid, gid)?;
            }
            if let Some(len) = size {
                // Opened as an open is (`open_as`): a name can go to another file first.
                let (_, f) = self.open_as(ino, libc_o::O_WRONLY)?;
                // FUSE_HANDLE_KILLPRIV_V2 leaves this to us; fuser does not pass on the
                // kernel's CAP_FSETID verdict, so root stands for the privileged caller.
                if mode.is_none() && req.uid() != 0 {
                    kill_suidgid(&f).map_err(errno)?;
                }
                let md = f.metadata().map_err(errno)?;
                self.core
                    .truncate(Self::file_id(&md), &f, md.size(), len)
                    .map_err(errno)?;
            }
            if mode.is_some()
                || uid.is_some()
                || gid.is_some()
                || atime.is_some()
                || mtime.is_some()
            {
                // fsync must make attribute changes durable on the HDD.
                if let Ok(md) = target.metadata() {
                    self.core.hdd_changed(md.ino());
                }
            }
            if atime.is_some() || mtime.is_some() {
                target.set_times(&rustix::fs::Timestamps {
                    last_access: utime_spec(atime),
                    last_modification: utime_spec(mtime),
                })?;
            }
            Ok(self.attr(&target.metadata()?))
        };
        match run() {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let _answering = self.requests.answer(Req::Readlink);
        match self.path(ino).and_then(|p| fs::read_link(p).map_err(errno)) {
            Ok(t) => reply.data(t.as_os_str().as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let _answering = self.requests.answer(Req::Mkdir);
        self.new_entry(parent, name, reply, |path| {
            fs::DirBuilder::new()
                .mode(mode & !umask & 0o7777)
                .create(path)
                .map_err(errno)
        });
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let _answering = self.requests.answer(Req::Mknod);
        // mknod(2) takes a type of 0 for a regular file.
        let kind = match mode & 0o170000 {
            0 => rustix::fs::FileType::RegularFile,
            t => rustix::fs::FileType::from_raw_mode(t),
        };
        let perm = rustix::fs::Mode::from_bits_truncate(mode & !umask & 0o7777);
        self.new_entry(parent, name, reply, |path| {
            // The kernel sends the device number encoded as mknodat(2) takes it.
            rustix::fs::mknodat(rustix::fs::CWD, path, kind, perm, u64::from(rdev))
                .map_err(sys_errno)
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _answering = self.requests.answer(Req::Unlink);
        let run = || -> Result<(), Errno> {
            let path = self.child(parent, name)?;
            self.core.meta(MetaKind::Directory, parent.0, true);
            let md = fs::symlink_metadata(&path).ok();
            let last = self.remove_name(md.as_ref(), || fs::remove_file(&path).map_err(errno))?;
            if let Some(ino) = md.map(|m| self.fuse_ino(m.ino())) {
                if let Some(n) = self.nodes.lock().unwrap().map.get_mut(&ino) {
                    n.forget_name(&path);
                }
                if last {
                    self.core.meta_freed(ino);
                }
            }
            Ok(())
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _answering = self.requests.answer(Req::Rmdir);
        let run = || -> Result<(), Errno> {
            let path = self.child(parent, name)?;
            self.core.meta(MetaKind::Directory, parent.0, true);
            let ino = fs::symlink_metadata(&path).map(|m| self.fuse_ino(m.ino()));
            fs::remove_dir(&path).map_err(errno)?;
            if let Ok(ino) = ino {
                self.core.meta_freed(ino);
            }
            Ok(())
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let _answering = self.requests.answer(Req::Symlink);
        self.new_entry(parent, link_name, reply, |path| {
            std::os::unix::fs::symlink(target, path).map_err(errno)
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let _answering = self.requests.answer(Req::Rename);
        let run = || -> Result<(), Errno> {
            if !flags.is_empty() {
                return Err(Errno::EINVAL);
            }
            let from = self.child(parent, name)?;
            let to = self.child(newparent, newname)?;
            self.core.meta(MetaKind::Directory, parent.0, true);
            self.core.meta(MetaKind::Directory, newparent.0, true);
            // A rename between two names of one inode changes nothing and removes nothing.
            let from_ino = fs::symlink_metadata(&from).map_err(errno)?.ino();
            let replaced = fs::symlink_metadata(&to)
                .ok()
                .filter(|m| m.ino() != from_ino);
            let last =
                self.remove_name(replaced.as_ref(), || fs::rename(&from, &to).map_err(errno))?;
            if let Some(gone) = replaced {
                let gone = self.fuse_ino(gone.ino());
                // `to` names the renamed inode now. The replaced one's other name, if it
                // has one, must become its path, or requests by its inode would reach the
                // file that took its name.
                if let Some(n) = self.nodes.lock().unwrap().map.get_mut(&gone) {
                    n.forget_name(&to);
                }
                if last {
                    self.core.meta_freed(gone);
                }
            }
            let md = fs::symlink_metadata(&to).map_err(errno)?;
            let ino = self.fuse_ino(md.ino());
            self.nodes
                .lock()
                .unwrap()
                .renamed(ino, md.is_dir(), &from, &to);
            Ok(())
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let _answering = self.requests.answer(Req::Link);
        let run = || -> Result<FileAttr, Errno> {
            // A file with no name left cannot be given one by path.
            let Target::Name(from) = self.target(ino)? else {
                return Err(Errno::ENOENT);
            };
            let to = self.child(newparent, newname)?;
            self.core.meta(MetaKind::Directory, newparent.0, true);
            fs::hard_link(&from, &to).map_err(errno)?;
            let md = fs::symlink_metadata(&to).map_err(errno)?;
            let attr = self.attr(&md);
            if let Some(n) = self.nodes.lock().unwrap().map.get_mut(&ino.0) {
                n.lookups += 1;
                n.links.push(to.clone());
            }
            Ok(attr)
        };
        match run() {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let _answering = self.requests.answer(Req::Open);
        let run = || -> Result<_, Errno> {
            let (target, f) = self.open_as(ino, flags.0)?;
            // Registered under this lock, the handle is seen by every removal of the
            // file's last name from then on (`remove_name`); one before it found none.
            let unnamed = self.unnamed.lock().unwrap();
            if self.lost(&f, &unnamed)? {
                return Err(Errno::ENOENT);
            }
            self.truncate_on_open(&f, flags.0)?;
            // The name gives the file's default class: for a file with none left, the
            // one it had.
            let name = match &target {
                Target::Name(p) => p.clone(),
                Target::Open(h) => PathBuf::from(&h.name),
            };
            self.new_handle(ino.0, &name, f, false, flags.0, |f| reply.open_backing(f))
        };
        match run() {
            Ok((fh, Some(backing))) => {
                reply.opened_passthrough(FileHandle(fh), FopenFlags::empty(), &backing)
            }
            Ok((fh, None)) if self.direct_written.lock().unwrap().remove(&ino.0) => {
                reply.opened(FileHandle(fh), FopenFlags::empty())
            }
            Ok((fh, None)) => reply.opened(FileHandle(fh), KEEP_CACHE),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let _answering = self.requests.answer(Req::Create);
        let direct = flags & libc_o::O_EXCL != 0;
        let run = || -> Result<_, Errno> {
            let path = self.child(parent, name)?;
            self.core.meta(MetaKind::Directory, parent.0, true);
            self.core.meta(MetaKind::Inode, parent.0, true);
            let existed = flags & libc_o::O_EXCL == 0 && fs::symlink_metadata(&path).is_ok();
            let f = open_file(&path, flags | libc_o::O_CREAT, Some(mode & !umask & 0o7777))?;
            self.truncate_on_open(&f, flags)?;
            let attr = self.remember(path.clone())?;
            if !existed {
                self.created(&attr);
            }
            let register = |f: &File| reply.open_backing(f);
            let (fh, backing) = self.new_handle(attr.ino.0, &path, f, direct, flags, register)?;
            Ok((attr, fh, backing))
        };
        let open = if direct { DIRECT } else { KEEP_CACHE };
        match run() {
            Ok((a, fh, Some(b))) => {
                let fh = FileHandle(fh);
                reply.created_passthrough(&TTL, &a, Generation(0), fh, FopenFlags::empty(), &b)
            }
            Ok((a, fh, None)) => reply.created(&TTL, &a, Generation(0), FileHandle(fh), open),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let mut answering = self.requests.answer(Req::Read);
        let mut buf = self.buffers.take();
        let run = |buf: &mut Vec<u8>| -> Result<_, Errno> {
            let h = self.handles.get(fh)?;
            let class = self.data_class(&h);
            answering.of_class(class);
            self.core
                .read_into_by(&h.file, class, offset, size as usize, buf)
                .map_err(errno)
        };
        match run(&mut buf) {
            Ok(Some(at)) => {
                answering.replies_at(at);
                let buffers = self.buffers.clone();
                self.deferred.at(at, move || {
                    reply.data(&buf);
                    buffers.give(buf);
                });
            }
            Ok(None) => {
                reply.data(&buf);
                self.buffers.give(buf);
            }
            Err(e) => {
                reply.error(e);
                self.buffers.give(buf);
            }
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let answering = self.requests.answer(Req::Write);
        let run = || -> Result<u32, Errno> {
            let h = self.handles.get(fh)?;
            if write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID) {
                kill_suidgid(&h.file).map_err(errno)?;
            }
            if h.direct {
                self.direct_written.lock().unwrap().insert(h.ino);
            }
            let class = self.data_class(&h);
            answering.of_class(class);
            let written = self
                .core
                .write(&h.file, class, offset, data)
                .map_err(errno)?;
            Ok(written as u32)
        };
        match run() {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lo: LockOwner,
        reply: ReplyEmpty,
    ) {
        let _answering = self.requests.answer(Req::Flush);
        // Nothing to do at close (writes are synchronous, locks are the kernel's), and
        // ENOSYS tells the kernel to stop sending a round trip per close().
        reply.error(Errno::ENOSYS);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let _answering = self.requests.answer(Req::Release);
        if let Some(h) = self.released(fh)
            && h.passthrough
        {
            self.backings.released(h.ino);
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let answering = self.requests.answer(Req::Fsync);
        let run = || -> Result<(), Errno> {
            let h = self.handles.get(fh)?;
            let md = h.file.metadata().map_err(errno)?;
            answering.of_class(self.data_class_of(&h, &md));
            let id = Self::file_id(&md);
            if h.passthrough {
                // The kernel wrote the HDD file itself, unseen.
                self.core.hdd_changed(id);
            }
            self.core.sync_file(id, &h.file, datasync).map_err(errno)
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let _answering = self.requests.answer(Req::Opendir);
        // Directory handles carry nothing here (readdir and fsyncdir go by inode):
        // with FUSE_NO_OPENDIR_SUPPORT, ENOSYS spares the open and release round trips
        // of every directory open from then on (Swift opens one to fsync it per PUT).
        if self.no_opendir {
            return reply.error(Errno::ENOSYS);
        }
        match self.path(ino) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let _answering = self.requests.answer(Req::Readdir);
        self.core.meta(MetaKind::Directory, ino.0, false);
        let run = |reply: &mut ReplyDirectory| -> Result<(), Errno> {
            let path = self.path(ino)?;
            let mut entries: Vec<(u64, FileType, OsString)> = vec![
                (ino.0, FileType::Directory, ".".into()),
                (1, FileType::Directory, "..".into()),
            ];
            let mut rest: Vec<(u64, FileType, OsString)> = fs::read_dir(&path)
                .map_err(errno)?
                .filter_map(|e| e.ok())
                .filter(|e| ino.0 != 1 || e.file_name() != HIDDEN)
                .map(|e| {
                    let kind = e.file_type().map(kind_of).unwrap_or(FileType::RegularFile);
                    let ino = e
                        .metadata()
                        .map(|m| self.fuse_ino(m.ino()))
                        .unwrap_or(u64::MAX);
                    (ino, kind, e.file_name())
                })
                .collect();
            // A stable order makes the offsets meaningful across calls.
            rest.sort_by(|a, b| a.2.cmp(&b.2));
            entries.extend(rest);
            for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
                if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                    break;
                }
            }
            Ok(())
        };
        match run(&mut reply) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let _answering = self.requests.answer(Req::Fsyncdir);
        self.core.meta_synced();
        match self
            .path(ino)
            .and_then(|p| File::open(p).and_then(|d| d.sync_all()).map_err(errno))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let _answering = self.requests.answer(Req::Statfs);
        match rustix::fs::statvfs(&self.root) {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(sys_errno(e)),
        }
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let _answering = self.requests.answer(Req::Setxattr);
        let run = || -> Result<(), Errno> {
            if ino.0 == 1 && name == CONTROL_XATTR {
                // Flushing, zeroing counters and changing the policy are the operator's.
                if req.uid() != 0 {
                    return Err(Errno::EPERM);
                }
                return match self.control.run(&self.core, req.pid(), value) {
                    true => Ok(()),
                    false => Err(Errno::EINVAL),
                };
            }
            let target = self.held(ino, None)?;
            let kind = xattr_kind(name.len(), value.len());
            self.core.meta(kind, ino.0, true);
            let flags = rustix::fs::XattrFlags::from_bits_truncate(flags as u32);
            target.set_xattr(name, value, flags)
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let _answering = self.requests.answer(Req::Getxattr);
        let run = || -> Result<Vec<u8>, Errno> {
            if ino.0 == 1 && name == STATS_XATTR {
                let mut stats = self.control.stats(&self.core);
                stats.passthrough = self.backings.enabled();
                stats.passthrough_opens = self.backings.opens();
                let requests = self.requests.snapshot();
                stats.fuse_requests = requests.counts;
                stats.fuse_request_s = requests.seconds;
                stats.fuse_under_way_seen = requests.under_way_seen;
                stats.fuse_class_requests = requests.by_class;
                return Ok(serde_json::to_vec(&stats).unwrap_or_default());
            }
            if ino.0 == 1 && name == CONTROL_XATTR {
                let outcome = self.control.outcome(req.pid()).ok_or(Errno::ENODATA)?;
                return Ok(serde_json::to_vec(&outcome).unwrap_or_default());
            }
            if ino.0 == 1 && name == CONTENT_XATTR {
                return Ok(self.core.content_json().into_bytes());
            }
            let got = self.held(ino, None)?.get_xattr(name);
            // Where the value lives is known once it is read: charged after.
            match &got {
                Ok(value) => self
                    .core
                    .meta(xattr_kind(name.len(), value.len()), ino.0, false),
                Err(Errno::ENODATA) => self.core.meta(MetaKind::Inode, ino.0, false),
                Err(_) => {}
            }
            got
        };
        reply_xattr(run(), size, reply);
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let _answering = self.requests.answer(Req::Listxattr);
        let run = || -> Result<Vec<u8>, Errno> { self.held(ino, None)?.list_xattrs() };
        reply_xattr(run(), size, reply);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _answering = self.requests.answer(Req::Removexattr);
        let run = || -> Result<(), Errno> {
            let target = self.held(ino, None)?;
            self.core.meta(MetaKind::Xattr, ino.0, true);
            target.remove_xattr(name)
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        let _answering = self.requests.answer(Req::Access);
        match self.path(ino) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: IoctlFlags,
        cmd: u32,
        in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        let _answering = self.requests.answer(Req::Ioctl);
        let run = || -> Result<(), Errno> {
            let h = self.handles.get(fh)?;
            match self.ioctls.decode(cmd, in_data) {
                Some(Command::SetClass { class, flags }) => {
                    if class > 255 || flags != 0 {
                        return Err(Errno::EINVAL);
                    }
                    h.class.store(class as u8, Ordering::Relaxed);
                    Ok(())
                }
                Some(Command::Reclassify {
                    offset,
                    length,
                    class,
                    flags,
                }) => {
                    if class > 255 || flags != 0 {
                        return Err(Errno::EINVAL);
                    }
                    let md = h.file.metadata().map_err(errno)?;
                    let end = if length == 0 {
                        md.size()
                    } else {
                        offset.saturating_add(length)
                    };
                    self.core
                        .reclassify(Self::file_id(&md), offset, end, class as u8)
                        .map_err(errno)
                }
                Some(Command::DropCache { offset, length }) => {
                    let md = h.file.metadata().map_err(errno)?;
                    let end = if length == 0 {
                        md.size()
                    } else {
                        offset.saturating_add(length)
                    };
                    self.core.drop_cache(Self::file_id(&md), offset, end);
                    Ok(())
                }
                None => Err(Errno::ENOTTY),
            }
        };
        match run() {
            Ok(()) => reply.ioctl(0, &[]),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let answering = self.requests.answer(Req::Fallocate);
        let run = || -> Result<(), Errno> {
            let h = self.handles.get(fh)?;
            let md = h.file.metadata().map_err(errno)?;
            answering.of_class(self.data_class_of(&h, &md));
            let flags = rustix::fs::FallocateFlags::from_bits_truncate(mode as u32);
            self.core.meta(MetaKind::Inode, h.ino, true);
            let id = Self::file_id(&md);
            self.core
                .fallocate(id, &h.file, offset, length, flags)
                .map_err(errno)
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}
