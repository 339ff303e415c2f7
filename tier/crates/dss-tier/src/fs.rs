//! The FUSE adapter: a passthrough namespace over the HDD directory whose file data goes
//! through the cache engine (core.rs).

use crate::anchors::HIDDEN;
use crate::core::{Core, MetaKind};
use crate::ioctl::{Command, Ioctls};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    IoctlFlags, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Attribute and entry cache lifetime. Short: the HDD directory is ours alone, but
/// sizes of files being written change under the kernel's feet otherwise.
const TTL: Duration = Duration::from_secs(1);

/// The kernel's page cache stays valid across opens: every change to a file goes through
/// this mount, and the tier's cache sits below the page cache, as the paper's block-level
/// cache does below the kernel's (it sees page-cache misses, not every read()).
const KEEP_CACHE: FopenFlags = FopenFlags::FOPEN_KEEP_CACHE;

/// Files created with O_EXCL (mkstemp: Swift's PUT, rsync's temporary files) are written
/// by their creator and by nothing else until renamed into place. Their handle skips
/// the kernel's page cache: each write reaches the daemon straight from the writer's
/// buffer, one copy fewer, and nothing cached can go stale, the inode being new.
const DIRECT: FopenFlags = FopenFlags::FOPEN_DIRECT_IO;

thread_local! {
    /// Each FUSE thread's read buffer, kept across requests: a fresh one of a large read
    /// costs page faults on every byte.
    static READ_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The root's xattr through which `dss-tier stats` reads the stats document.
pub const STATS_XATTR: &str = "user.dss-tier.stats";
/// The root's xattr through which `dss-tier dump` reads the cache content by class.
pub const CONTENT_XATTR: &str = "user.dss-tier.content";

fn errno(e: io::Error) -> Errno {
    Errno::from(e)
}

fn sys_errno(e: rustix::io::Errno) -> Errno {
    Errno::from_i32(e.raw_os_error())
}

fn kind_of(ft: fs::FileType) -> FileType {
    FileType::from_std(ft).unwrap_or(FileType::RegularFile)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

struct Node {
    path: PathBuf,
    /// Other names of a hard-linked file, so that removing `path` leaves one to use.
    links: Vec<PathBuf>,
    lookups: u64,
}

impl Node {
    /// `gone` no longer names this inode.
    fn forget_name(&mut self, gone: &Path) {
        if self.path == gone {
            if let Some(p) = self.links.pop() {
                self.path = p;
            }
        } else {
            self.links.retain(|p| p != gone);
        }
    }
}

/// Inode numbers are the HDD's, except the root which FUSE wants as 1.
struct Nodes {
    root_ino: u64,
    map: HashMap<u64, Node>,
}

pub struct Handle {
    file: Arc<File>,
    ino: u64,
    name: OsString,
    class: AtomicU8,
    /// Opened with FOPEN_DIRECT_IO: its writes bypass the page cache of other handles.
    direct: bool,
}

pub struct TierFs {
    root: PathBuf,
    nodes: Mutex<Nodes>,
    handles: Mutex<HashMap<u64, Arc<Handle>>>,
    /// Inodes written through a direct handle since their last page-cached open: that
    /// open must drop what the page cache holds of them.
    direct_written: Mutex<HashSet<u64>>,
    next_fh: AtomicU64,
    /// The kernel takes ENOSYS from opendir as "no directory handles needed".
    no_opendir: bool,
    core: Arc<Core>,
    ioctls: Ioctls,
}

impl TierFs {
    pub fn new(root: PathBuf, core: Arc<Core>, ioctls: Ioctls) -> io::Result<TierFs> {
        let root_ino = fs::metadata(&root)?.ino();
        let mut map = HashMap::new();
        map.insert(
            1,
            Node {
                path: root.clone(),
                links: Vec::new(),
                lookups: 1,
            },
        );
        Ok(TierFs {
            root,
            nodes: Mutex::new(Nodes { root_ino, map }),
            handles: Mutex::new(HashMap::new()),
            direct_written: Mutex::new(HashSet::new()),
            next_fh: AtomicU64::new(1),
            no_opendir: false,
            core,
            ioctls,
        })
    }

    fn fuse_ino(&self, hdd_ino: u64) -> u64 {
        let root = self.nodes.lock().unwrap().root_ino;
        if hdd_ino == root {
            1
        } else if hdd_ino == 1 {
            // Collides with the FUSE root; the HDD root already owns 1 here.
            root
        } else {
            hdd_ino
        }
    }

    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        self.nodes
            .lock()
            .unwrap()
            .map
            .get(&ino.0)
            .map(|n| n.path.clone())
            .ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    fn attr(&self, md: &fs::Metadata) -> FileAttr {
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
    fn remember(&self, path: PathBuf) -> Result<FileAttr, Errno> {
        let md = fs::symlink_metadata(&path).map_err(errno)?;
        let attr = self.attr(&md);
        let mut nodes = self.nodes.lock().unwrap();
        let node = nodes.map.entry(attr.ino.0).or_insert(Node {
            path: path.clone(),
            links: Vec::new(),
            lookups: 0,
        });
        if node.path != path && !node.links.contains(&path) {
            let old = std::mem::replace(&mut node.path, path);
            if fs::symlink_metadata(&old).is_ok_and(|m| self.fuse_ino(m.ino()) == attr.ino.0) {
                node.links.push(old);
            }
        }
        node.lookups += 1;
        Ok(attr)
    }

    fn open_handle(&self, ino: u64, path: &Path, file: File, direct: bool) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let name = path.file_name().unwrap_or_default().to_os_string();
        let h = Handle {
            file: Arc::new(file),
            ino,
            name,
            class: AtomicU8::new(0),
            direct,
        };
        self.handles.lock().unwrap().insert(fh, Arc::new(h));
        fh
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<Handle>, Errno> {
        self.handles
            .lock()
            .unwrap()
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::EBADF)
    }

    /// Class of data I/O on `h`: its own, or the policy's default for the file.
    fn data_class(&self, h: &Handle) -> u8 {
        match h.class.load(Ordering::Relaxed) {
            0 => {
                let size = h.file.metadata().map(|m| m.size()).unwrap_or(0);
                self.core.default_class(&h.name.to_string_lossy(), size)
            }
            c => c,
        }
    }

    fn file_id(md: &fs::Metadata) -> u64 {
        md.ino()
    }

    /// Drop the cached blocks of a file that is losing its last name, so that a later
    /// file reusing the inode number never sees them. Open handles keep reading: their
    /// dirty blocks are written back first.
    fn before_last_unlink(&self, path: &Path) {
        if let Ok(md) = fs::symlink_metadata(path)
            && md.is_file()
            && md.nlink() - u64::from(self.core.is_anchored(md.ino())) <= 1
        {
            let id = Self::file_id(&md);
            let open = self.handles.lock().unwrap().values().any(|h| {
                h.file
                    .metadata()
                    .map(|m| m.ino() == md.ino())
                    .unwrap_or(false)
            });
            if open {
                let _ = self.core.flush_file(id, md.size());
            }
            self.core.discard_file(id, md.size());
        }
    }
}

impl TierFs {
    /// A new name in `parent` that `make` creates on the HDD (directory, node, link).
    fn new_entry(
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

    fn created(&self, attr: &FileAttr) {
        self.core
            .meta_created(attr.ino.0, attr.kind == FileType::Directory);
    }

    /// O_TRUNC goes through the cache so that cached blocks of the old contents go too.
    fn truncate_on_open(&self, f: &File, flags: i32) -> Result<(), Errno> {
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

/// The attributes of a negative entry: only the inode number (0) counts.
fn negative_attr() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: FileType::RegularFile,
        perm: 0,
        nlink: 0,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 0,
        flags: 0,
    }
}

fn utime_spec(t: Option<TimeOrNow>) -> rustix::fs::Timespec {
    let (tv_sec, tv_nsec) = match t {
        None => (0, rustix::fs::UTIME_OMIT),
        Some(TimeOrNow::Now) => (0, rustix::fs::UTIME_NOW),
        Some(TimeOrNow::SpecificTime(s)) => match s.duration_since(UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, d.subsec_nanos().into()),
            Err(e) => {
                // Before 1970: whole seconds down, nanoseconds up, as timespec wants.
                let d = e.duration();
                let (mut sec, mut nsec) = (-(d.as_secs() as i64), -i64::from(d.subsec_nanos()));
                if nsec < 0 {
                    sec -= 1;
                    nsec += 1_000_000_000;
                }
                (sec, nsec)
            }
        },
    };
    rustix::fs::Timespec { tv_sec, tv_nsec }
}

/// Clear set-user-ID, set-group-ID where it marks an executable (not mandatory locking)
/// and file capabilities, as the kernel does to a file an unprivileged user writes.
fn kill_suidgid(f: &File) -> io::Result<()> {
    let mode = f.metadata()?.mode();
    let mut keep = mode & 0o7777 & !0o4000;
    if mode & 0o2010 == 0o2010 {
        keep &= !0o2000;
    }
    if keep != mode & 0o7777 {
        f.set_permissions(fs::Permissions::from_mode(keep))?;
    }
    // Direct writes skip the kernel's own check of file capabilities.
    match rustix::fs::fremovexattr(f, "security.capability") {
        Ok(()) | Err(rustix::io::Errno::NODATA | rustix::io::Errno::NOTSUP) => Ok(()),
        Err(e) => Err(io::Error::from_raw_os_error(e.raw_os_error())),
    }
}

impl Filesystem for TierFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Without it the kernel asks for security.capability before every write (to
        // see whether the write must drop privileges): a round trip per write. With
        // it, the kernel remembers per inode that there is nothing to drop, and we
        // clear set-ID bits ourselves when it says so (write) or when an unprivileged
        // user truncates (setattr). Capabilities stay the kernel's: it checks them on
        // the first write and after any security.* xattr changes.
        if let Err(missing) = config.add_capabilities(InitFlags::FUSE_HANDLE_KILLPRIV_V2) {
            eprintln!("dss-tier: kernel lacks {missing:?}; every write costs a getxattr");
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
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
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
        if ino.0 == 1 {
            return;
        }
        let mut nodes = self.nodes.lock().unwrap();
        if let Some(n) = nodes.map.get_mut(&ino.0) {
            n.lookups = n.lookups.saturating_sub(nlookup);
            if n.lookups == 0 {
                nodes.map.remove(&ino.0);
                // The kernel's page cache of the inode went with it.
                self.direct_written.lock().unwrap().remove(&ino.0);
            }
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        self.core.meta(MetaKind::Inode, ino.0, false);
        let by_handle = |ino: u64| {
            let hs = self.handles.lock().unwrap();
            let h = match fh {
                Some(fh) => hs.get(&fh.0).cloned(),
                None => hs.values().find(|h| h.ino == ino).cloned(),
            };
            h.ok_or(Errno::ENOENT)
                .and_then(|h| h.file.metadata().map_err(errno))
        };
        let md = match fh {
            Some(_) => by_handle(ino.0),
            // A path that now names another inode (its name was renamed over): the
            // old inode lives on only through open handles.
            None => self
                .path(ino)
                .and_then(|p| fs::symlink_metadata(p).map_err(errno))
                .and_then(|md| {
                    if self.fuse_ino(md.ino()) == ino.0 {
                        Ok(md)
                    } else {
                        by_handle(ino.0)
                    }
                }),
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
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let run = || -> Result<FileAttr, Errno> {
            let path = self.path(ino)?;
            self.core.meta(MetaKind::Inode, ino.0, true);
            if let Some(m) = mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(m & 0o7777))
                    .map_err(errno)?;
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::lchown(&path, uid, gid).map_err(errno)?;
            }
            if let Some(len) = size {
                let f = OpenOptions::new().write(true).open(&path).map_err(errno)?;
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
                if let Ok(md) = fs::symlink_metadata(&path) {
                    self.core.hdd_changed(md.ino());
                }
            }
            if atime.is_some() || mtime.is_some() {
                // NOFOLLOW: `touch -h` and rsync set a symlink's own times; opening
                // the path would change the target's instead, or fail with ENOENT
                // while the target does not exist yet.
                let times = rustix::fs::Timestamps {
                    last_access: utime_spec(atime),
                    last_modification: utime_spec(mtime),
                };
                rustix::fs::utimensat(
                    rustix::fs::CWD,
                    &path,
                    &times,
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )
                .map_err(sys_errno)?;
            }
            let md = fs::symlink_metadata(&path).map_err(errno)?;
            Ok(self.attr(&md))
        };
        match run() {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
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
        let run = || -> Result<(), Errno> {
            let path = self.child(parent, name)?;
            self.core.meta(MetaKind::Directory, parent.0, true);
            let ino = fs::symlink_metadata(&path).map(|m| self.fuse_ino(m.ino()));
            self.before_last_unlink(&path);
            fs::remove_file(&path).map_err(errno)?;
            if let Ok(ino) = ino
                && let Some(n) = self.nodes.lock().unwrap().map.get_mut(&ino)
            {
                n.forget_name(&path);
            }
            Ok(())
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let run = || -> Result<(), Errno> {
            let path = self.child(parent, name)?;
            self.core.meta(MetaKind::Directory, parent.0, true);
            fs::remove_dir(&path).map_err(errno)
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
        let run = || -> Result<(), Errno> {
            if !flags.is_empty() {
                return Err(Errno::EINVAL);
            }
            let from = self.child(parent, name)?;
            let to = self.child(newparent, newname)?;
            self.core.meta(MetaKind::Directory, parent.0, true);
            self.core.meta(MetaKind::Directory, newparent.0, true);
            self.before_last_unlink(&to);
            fs::rename(&from, &to).map_err(errno)?;
            let md = fs::symlink_metadata(&to).map_err(errno)?;
            let ino = self.fuse_ino(md.ino());
            let mut nodes = self.nodes.lock().unwrap();
            if !md.is_dir() {
                // A file has no paths below it: only its own entry moves. Every Swift PUT
                // renames a file, and a walk over every inode the kernel remembers would
                // make each PUT slower than the last.
                if let Some(n) = nodes.map.get_mut(&ino) {
                    if n.path == from {
                        n.path = to.clone();
                    }
                    for l in n.links.iter_mut().filter(|l| **l == from) {
                        *l = to.clone();
                    }
                }
                return Ok(());
            }
            // A directory's paths, and those of everything under it, move with it.
            let moved = |p: &mut PathBuf| {
                if let Ok(rest) = p.strip_prefix(&from) {
                    *p = if rest.as_os_str().is_empty() {
                        to.clone()
                    } else {
                        to.join(rest)
                    };
                }
            };
            for n in nodes.map.values_mut() {
                moved(&mut n.path);
                n.links.iter_mut().for_each(moved);
            }
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
        let run = || -> Result<FileAttr, Errno> {
            let from = self.path(ino)?;
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
        let run = || -> Result<u64, Errno> {
            let path = self.path(ino)?;
            let f = open_file(&path, flags.0, None)?;
            self.truncate_on_open(&f, flags.0)?;
            Ok(self.open_handle(ino.0, &path, f, false))
        };
        match run() {
            Ok(fh) if self.direct_written.lock().unwrap().remove(&ino.0) => {
                reply.opened(FileHandle(fh), FopenFlags::empty())
            }
            Ok(fh) => reply.opened(FileHandle(fh), KEEP_CACHE),
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
        let direct = flags & libc_o::O_EXCL != 0;
        let run = || -> Result<(FileAttr, u64), Errno> {
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
            let fh = self.open_handle(attr.ino.0, &path, f, direct);
            Ok((attr, fh))
        };
        let open = if direct { DIRECT } else { KEEP_CACHE };
        match run() {
            Ok((a, fh)) => reply.created(&TTL, &a, Generation(0), FileHandle(fh), open),
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
        READ_BUF.with_borrow_mut(|buf| {
            let run = |buf: &mut Vec<u8>| -> Result<(), Errno> {
                let h = self.handle(fh)?;
                let class = self.data_class(&h);
                self.core
                    .read_into(&h.file, class, offset, size as usize, buf)
                    .map_err(errno)
            };
            match run(buf) {
                Ok(()) => reply.data(buf),
                Err(e) => reply.error(e),
            }
        })
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
        let run = || -> Result<u32, Errno> {
            let h = self.handle(fh)?;
            if write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID) {
                kill_suidgid(&h.file).map_err(errno)?;
            }
            if h.direct {
                self.direct_written.lock().unwrap().insert(h.ino);
            }
            let class = self.data_class(&h);
            self.core
                .write(&h.file, class, offset, data)
                .map_err(errno)?;
            Ok(data.len() as u32)
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
        self.handles.lock().unwrap().remove(&fh.0);
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
        let run = || -> Result<(), Errno> {
            let h = self.handle(fh)?;
            let id = Self::file_id(&h.file.metadata().map_err(errno)?);
            self.core.sync_file(id, &h.file, datasync).map_err(errno)
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
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
        match self
            .path(ino)
            .and_then(|p| File::open(p).and_then(|d| d.sync_all()).map_err(errno))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
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
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let run = || -> Result<(), Errno> {
            let path = self.path(ino)?;
            self.core.meta(MetaKind::Xattr, ino.0, true);
            let flags = rustix::fs::XattrFlags::from_bits_truncate(flags as u32);
            rustix::fs::lsetxattr(&path, name, value, flags).map_err(sys_errno)
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let run = || -> Result<Vec<u8>, Errno> {
            if ino.0 == 1 && name == STATS_XATTR {
                return Ok(self.core.stats_json().into_bytes());
            }
            if ino.0 == 1 && name == CONTENT_XATTR {
                return Ok(self.core.content_json().into_bytes());
            }
            let path = self.path(ino)?;
            self.core.meta(MetaKind::Xattr, ino.0, false);
            let mut buf = Vec::with_capacity(4096);
            loop {
                match rustix::fs::lgetxattr(&path, name, rustix::buffer::spare_capacity(&mut buf)) {
                    Ok(_) => return Ok(buf),
                    Err(rustix::io::Errno::RANGE) => {
                        let n = rustix::fs::lgetxattr_query(&path, name).map_err(sys_errno)?;
                        buf = Vec::with_capacity(n.max(buf.capacity() * 2));
                    }
                    Err(e) => return Err(sys_errno(e)),
                }
            }
        };
        reply_xattr(run(), size, reply);
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let run = || -> Result<Vec<u8>, Errno> {
            let path = self.path(ino)?;
            let n = rustix::fs::llistxattr_query(&path).map_err(sys_errno)?;
            let mut buf = Vec::with_capacity(n + 256);
            rustix::fs::llistxattr(&path, rustix::buffer::spare_capacity(&mut buf))
                .map_err(sys_errno)?;
            Ok(buf)
        };
        reply_xattr(run(), size, reply);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let run = || -> Result<(), Errno> {
            let path = self.path(ino)?;
            self.core.meta(MetaKind::Xattr, ino.0, true);
            rustix::fs::lremovexattr(&path, name).map_err(sys_errno)
        };
        match run() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
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
        let run = || -> Result<(), Errno> {
            let h = self.handle(fh)?;
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
        let run = || -> Result<(), Errno> {
            let h = self.handle(fh)?;
            let flags = rustix::fs::FallocateFlags::from_bits_truncate(mode as u32);
            self.core.meta(MetaKind::Inode, h.ino, true);
            let id = Self::file_id(&h.file.metadata().map_err(errno)?);
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

fn reply_xattr(r: Result<Vec<u8>, Errno>, size: u32, reply: ReplyXattr) {
    match r {
        Ok(v) if size == 0 => reply.size(v.len() as u32),
        Ok(v) if v.len() > size as usize => reply.error(Errno::ERANGE),
        Ok(v) => reply.data(&v),
        Err(e) => reply.error(e),
    }
}

/// Open flags we pass on. O_DIRECT is dropped: the cache is the one doing the
/// buffering decisions, and aligned buffers are not guaranteed here.
mod libc_o {
    pub const O_ACCMODE: i32 = 0o3;
    pub const O_WRONLY: i32 = 0o1;
    pub const O_RDWR: i32 = 0o2;
    pub const O_CREAT: i32 = 0o100;
    pub const O_EXCL: i32 = 0o200;
    pub const O_TRUNC: i32 = 0o1000;
    pub const O_APPEND: i32 = 0o2000;
    pub const O_DIRECT: i32 = 0o40000;
}

fn open_file(path: &Path, flags: i32, mode: Option<u32>) -> Result<File, Errno> {
    use libc_o::*;
    let acc = flags & O_ACCMODE;
    let mut o = OpenOptions::new();
    // Write-back needs a writable descriptor even for handles opened write-only, and
    // partial block writes read the block first.
    o.read(true);
    o.write(acc == O_WRONLY || acc == O_RDWR);
    if let Some(m) = mode {
        o.mode(m);
        if flags & O_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
    }
    // Appends are positioned by the kernel (FUSE sends the offset), so O_APPEND must not
    // reach the HDD file or positional writes would land at the end.
    let passed = flags & !(O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DIRECT);
    o.custom_flags(passed);
    let f = o.open(path).or_else(|e| {
        if acc == O_WRONLY && e.kind() == io::ErrorKind::PermissionDenied {
            let mut o2 = OpenOptions::new();
            o2.write(true).custom_flags(passed);
            o2.open(path)
        } else {
            Err(e)
        }
    });
    f.map_err(errno)
}
