//! Open file handles, and how the HDD files behind them are opened and prepared for a
//! write.

use super::convert::errno;
use fuser::{Errno, FileHandle};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(super) struct Handle {
    pub(super) file: Arc<File>,
    pub(super) ino: u64,
    pub(super) name: OsString,
    pub(super) class: AtomicU8,
    /// Opened with FOPEN_DIRECT_IO: its writes bypass the page cache of other handles.
    pub(super) direct: bool,
    /// Opened with FOPEN_PASSTHROUGH: the kernel does its I/O on the HDD file itself.
    pub(super) passthrough: bool,
}

/// How the kernel is to treat a new handle's I/O.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Io {
    Cached,
    Direct,
    Passthrough,
}

/// The open handles by number.
pub(super) struct Handles {
    map: Mutex<HashMap<u64, Arc<Handle>>>,
    next_fh: AtomicU64,
}

impl Handles {
    pub(super) fn new() -> Handles {
        Handles {
            map: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        }
    }

    /// A new handle on `file`, opened as `path` (inode `ino`); returns its number.
    pub(super) fn open(&self, ino: u64, path: &Path, file: File, io: Io) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let name = path.file_name().unwrap_or_default().to_os_string();
        let h = Handle {
            file: Arc::new(file),
            ino,
            name,
            class: AtomicU8::new(0),
            direct: io == Io::Direct,
            passthrough: io == Io::Passthrough,
        };
        self.map.lock().unwrap().insert(fh, Arc::new(h));
        fh
    }

    pub(super) fn get(&self, fh: FileHandle) -> Result<Arc<Handle>, Errno> {
        self.map
            .lock()
            .unwrap()
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::EBADF)
    }

    /// Handle `fh`, or without one any handle open on inode `ino`.
    pub(super) fn get_or_any(&self, fh: Option<FileHandle>, ino: u64) -> Option<Arc<Handle>> {
        let hs = self.map.lock().unwrap();
        match fh {
            Some(fh) => hs.get(&fh.0).cloned(),
            None => hs.values().find(|h| h.ino == ino).cloned(),
        }
    }

    /// True when a handle is open on the HDD file whose inode number is `hdd_ino`.
    pub(super) fn open_on(&self, hdd_ino: u64) -> bool {
        self.map.lock().unwrap().values().any(|h| {
            h.file
                .metadata()
                .map(|m| m.ino() == hdd_ino)
                .unwrap_or(false)
        })
    }

    /// True when any handle is open on FUSE inode `ino`.
    pub(super) fn any_on(&self, ino: u64) -> bool {
        self.map.lock().unwrap().values().any(|h| h.ino == ino)
    }

    pub(super) fn release(&self, fh: FileHandle) -> Option<Arc<Handle>> {
        self.map.lock().unwrap().remove(&fh.0)
    }
}

/// The permission bits left once a write by an unprivileged user dropped set-user-ID,
/// and set-group-ID where it marks an executable (not mandatory locking).
fn without_set_id(mode: u32) -> u32 {
    let mut keep = mode & 0o7777 & !0o4000;
    if mode & 0o2010 == 0o2010 {
        keep &= !0o2000;
    }
    keep
}

/// True when a write by an unprivileged user would have to drop something: set-ID bits
/// or file capabilities.
pub(super) fn has_privs(f: &File, mode: u32) -> bool {
    without_set_id(mode) != mode & 0o7777
        || rustix::fs::fgetxattr(f, "security.capability", &mut [0u8; 0]).is_ok()
}

/// Clear set-user-ID, set-group-ID where it marks an executable (not mandatory locking)
/// and file capabilities, as the kernel does to a file an unprivileged user writes.
pub(super) fn kill_suidgid(f: &File) -> io::Result<()> {
    let mode = f.metadata()?.mode();
    let keep = without_set_id(mode);
    if keep != mode & 0o7777 {
        f.set_permissions(fs::Permissions::from_mode(keep))?;
    }
    // Direct writes skip the kernel's own check of file capabilities.
    match rustix::fs::fremovexattr(f, "security.capability") {
        Ok(()) | Err(rustix::io::Errno::NODATA | rustix::io::Errno::NOTSUP) => Ok(()),
        Err(e) => Err(io::Error::from_raw_os_error(e.raw_os_error())),
    }
}

/// Open flags we pass on. O_DIRECT is dropped: the cache is the one doing the
/// buffering decisions, and aligned buffers are not guaranteed here.
pub(super) mod libc_o {
    pub const O_ACCMODE: i32 = 0o3;
    pub const O_WRONLY: i32 = 0o1;
    pub const O_RDWR: i32 = 0o2;
    pub const O_CREAT: i32 = 0o100;
    pub const O_EXCL: i32 = 0o200;
    pub const O_TRUNC: i32 = 0o1000;
    pub const O_APPEND: i32 = 0o2000;
    pub const O_DIRECT: i32 = 0o40000;
}

pub(super) fn open_file(path: &Path, flags: i32, mode: Option<u32>) -> Result<File, Errno> {
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
