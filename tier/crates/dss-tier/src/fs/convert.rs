//! Conversions between the HDD side's types (std, rustix) and FUSE's: errors, file
//! types, times, and the size protocol of xattr replies.

use fuser::{Errno, FileAttr, FileType, INodeNo, ReplyXattr, TimeOrNow};
use std::fs;
use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(super) fn errno(e: io::Error) -> Errno {
    Errno::from(e)
}

pub(super) fn sys_errno(e: rustix::io::Errno) -> Errno {
    Errno::from_i32(e.raw_os_error())
}

pub(super) fn kind_of(ft: fs::FileType) -> FileType {
    FileType::from_std(ft).unwrap_or(FileType::RegularFile)
}

pub(super) fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

/// The attributes of a negative entry: only the inode number (0) counts.
pub(super) fn negative_attr() -> FileAttr {
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

pub(super) fn utime_spec(t: Option<TimeOrNow>) -> rustix::fs::Timespec {
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

pub(super) fn reply_xattr(r: Result<Vec<u8>, Errno>, size: u32, reply: ReplyXattr) {
    match r {
        Ok(v) if size == 0 => reply.size(v.len() as u32),
        Ok(v) if v.len() > size as usize => reply.error(Errno::ERANGE),
        Ok(v) => reply.data(&v),
        Err(e) => reply.error(e),
    }
}
