//! Where a request by inode reaches its file. The inode table remembers a name per inode,
//! but a name can leave its inode (an unlink, or a rename over it) while the kernel still
//! holds the inode: a file open after its last name went, or one reached by another
//! link. Another file may have that name now, so every request by inode goes to a name
//! checked to be the inode's, or, for a file with no name left, to one of its open
//! handles (through `/proc/self/fd`, following the link the `l*` calls would not).

use super::convert::{errno, sys_errno};
use super::handles::Handle;
use fuser::Errno;
use rustix::fs::{AtFlags, Timestamps, XattrFlags};
use std::ffi::OsStr;
use std::fs::{self, Metadata};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;

pub(super) enum Target {
    /// A name of the inode on the HDD; a symlink is not followed.
    Name(PathBuf),
    /// A regular file with no name left, through one of its handles (kept open while
    /// the target is in use).
    Open(Arc<Handle>),
}

impl Target {
    /// The path to give a call: the name, or the handle's `/proc/self/fd` link, which
    /// calls that follow links reach the file through.
    pub(super) fn path(&self) -> PathBuf {
        match self {
            Target::Name(p) => p.clone(),
            Target::Open(h) => PathBuf::from(format!("/proc/self/fd/{}", h.file.as_raw_fd())),
        }
    }

    pub(super) fn metadata(&self) -> Result<Metadata, Errno> {
        match self {
            Target::Name(p) => fs::symlink_metadata(p),
            Target::Open(h) => h.file.metadata(),
        }
        .map_err(errno)
    }

    pub(super) fn chown(&self, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
        match self {
            Target::Name(p) => std::os::unix::fs::lchown(p, uid, gid),
            Target::Open(h) => std::os::unix::fs::fchown(&h.file, uid, gid),
        }
        .map_err(errno)
    }

    pub(super) fn set_times(&self, times: &Timestamps) -> Result<(), Errno> {
        // NOFOLLOW: `touch -h` and rsync set a symlink's own times; following the
        // name would change the target's instead, or fail while it does not exist yet.
        match self {
            Target::Name(p) => {
                rustix::fs::utimensat(rustix::fs::CWD, p, times, AtFlags::SYMLINK_NOFOLLOW)
            }
            Target::Open(h) => rustix::fs::futimens(&h.file, times),
        }
        .map_err(sys_errno)
    }

    pub(super) fn set_xattr(
        &self,
        name: &OsStr,
        value: &[u8],
        flags: XattrFlags,
    ) -> Result<(), Errno> {
        match self {
            Target::Name(p) => rustix::fs::lsetxattr(p, name, value, flags),
            Target::Open(h) => rustix::fs::fsetxattr(&h.file, name, value, flags),
        }
        .map_err(sys_errno)
    }

    pub(super) fn get_xattr(&self, name: &OsStr) -> Result<Vec<u8>, Errno> {
        let mut buf = Vec::with_capacity(4096);
        loop {
            let spare = rustix::buffer::spare_capacity(&mut buf);
            let got = match self {
                Target::Name(p) => rustix::fs::lgetxattr(p, name, spare),
                Target::Open(h) => rustix::fs::fgetxattr(&h.file, name, spare),
            };
            match got {
                Ok(_) => return Ok(buf),
                Err(rustix::io::Errno::RANGE) => {
                    let n = match self {
                        Target::Name(p) => rustix::fs::lgetxattr_query(p, name),
                        Target::Open(h) => rustix::fs::fgetxattr_query(&h.file, name),
                    }
                    .map_err(sys_errno)?;
                    buf = Vec::with_capacity(n.max(buf.capacity() * 2));
                }
                Err(e) => return Err(sys_errno(e)),
            }
        }
    }

    pub(super) fn list_xattrs(&self) -> Result<Vec<u8>, Errno> {
        let n = match self {
            Target::Name(p) => rustix::fs::llistxattr_query(p),
            Target::Open(h) => rustix::fs::flistxattr_query(&h.file),
        }
        .map_err(sys_errno)?;
        let mut buf = Vec::with_capacity(n + 256);
        let spare = rustix::buffer::spare_capacity(&mut buf);
        match self {
            Target::Name(p) => rustix::fs::llistxattr(p, spare),
            Target::Open(h) => rustix::fs::flistxattr(&h.file, spare),
        }
        .map_err(sys_errno)?;
        Ok(buf)
    }

    pub(super) fn remove_xattr(&self, name: &OsStr) -> Result<(), Errno> {
        match self {
            Target::Name(p) => rustix::fs::lremovexattr(p, name),
            Target::Open(h) => rustix::fs::fremovexattr(&h.file, name),
        }
        .map_err(sys_errno)
    }
}
