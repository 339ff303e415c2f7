//! Anchors: a hidden hard link on the HDD for every file that has blocks whose only
//! current copy is on the SSD, named after the file's inode number.
//!
//! Journal records name files by inode number. An anchor keeps that inode alive (and its
//! number from being reused) for as long as the journal may name it, and gives the
//! write-back after a restart a path to open it by, whatever the file was renamed to or
//! even if its last name was removed. A dirty record whose anchor is missing belongs to a
//! file that no longer exists and is dropped.

use crate::layout::HIDDEN;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub struct Anchors {
    dir: PathBuf,
}

impl Anchors {
    pub fn dir_of(hdd_root: &Path) -> PathBuf {
        hdd_root.join(HIDDEN).join("anchors")
    }

    pub fn open(hdd_root: &Path) -> io::Result<Anchors> {
        let dir = Self::dir_of(hdd_root);
        fs::create_dir_all(&dir)?;
        Ok(Anchors { dir })
    }

    pub fn path(&self, ino: u64) -> PathBuf {
        self.dir.join(ino.to_string())
    }

    /// Link `file` (inode `ino`) into the anchor directory. An existing anchor of that
    /// name is the same file: the anchor itself keeps the number from being reused.
    pub fn link(&self, file: &File, ino: u64) -> io::Result<()> {
        let to = self.path(ino);
        let r = rustix::fs::linkat(
            file,
            "",
            rustix::fs::CWD,
            &to,
            rustix::fs::AtFlags::EMPTY_PATH,
        )
        .or_else(|e| {
            // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc's link does not.
            if e == rustix::io::Errno::NOENT || e == rustix::io::Errno::EXIST {
                return Err(e);
            }
            let proc = format!("/proc/self/fd/{}", rustix::fd::AsRawFd::as_raw_fd(file));
            rustix::fs::linkat(
                rustix::fs::CWD,
                proc.as_str(),
                rustix::fs::CWD,
                &to,
                rustix::fs::AtFlags::SYMLINK_FOLLOW,
            )
        });
        match r {
            Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
            Err(e) => Err(io::Error::from_raw_os_error(e.raw_os_error())),
        }
    }

    pub fn remove(&self, ino: u64) -> io::Result<()> {
        match fs::remove_file(self.path(ino)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Open the anchored file for write-back; `NotFound` when there is no anchor, and an
    /// error when the anchor names another inode than its own name says.
    pub fn open_file(&self, ino: u64) -> io::Result<File> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.path(ino))?;
        if f.metadata()?.ino() != ino {
            return Err(io::Error::other(format!(
                "anchor {ino} names another inode"
            )));
        }
        Ok(f)
    }

    /// Every anchored inode number.
    pub fn list(&self) -> io::Result<Vec<u64>> {
        let mut out = Vec::new();
        for e in fs::read_dir(&self.dir)? {
            if let Some(ino) = e?.file_name().to_str().and_then(|s| s.parse().ok()) {
                out.push(ino);
            }
        }
        Ok(out)
    }

    pub fn sync(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}
