//! FUSE requests the daemon answered, by kind, since the mount: the round trips each
//! workload costs (a Swift PUT's, say) are the tier's main cost under small requests.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! requests {
    ($($kind:ident => $name:literal),* $(,)?) => {
        /// A kind of FUSE request.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) enum Req { $($kind),* }

        const NAMES: &[&str] = &[$($name),*];
    };
}

requests! {
    Lookup => "lookup", Forget => "forget", Getattr => "getattr", Setattr => "setattr",
    Readlink => "readlink", Mkdir => "mkdir", Mknod => "mknod", Unlink => "unlink",
    Rmdir => "rmdir", Symlink => "symlink", Rename => "rename", Link => "link",
    Open => "open", Create => "create", Read => "read", Write => "write", Flush => "flush",
    Release => "release", Fsync => "fsync", Opendir => "opendir", Readdir => "readdir",
    Fsyncdir => "fsyncdir", Statfs => "statfs", Setxattr => "setxattr",
    Getxattr => "getxattr", Listxattr => "listxattr", Removexattr => "removexattr",
    Access => "access", Ioctl => "ioctl", Fallocate => "fallocate",
}

/// One counter per kind, bumped without a lock by whichever thread answers.
pub(super) struct Requests([AtomicU64; NAMES.len()]);

impl Requests {
    pub(super) fn new() -> Requests {
        Requests(std::array::from_fn(|_| AtomicU64::new(0)))
    }

    pub(super) fn count(&self, kind: Req) {
        self.0[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The kinds answered at least once, by name.
    pub(super) fn snapshot(&self) -> BTreeMap<String, u64> {
        NAMES
            .iter()
            .zip(&self.0)
            .map(|(name, n)| (name.to_string(), n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind_and_names_only_those_seen() {
        let r = Requests::new();
        assert!(r.snapshot().is_empty());
        r.count(Req::Lookup);
        r.count(Req::Lookup);
        r.count(Req::Fallocate);
        let s = r.snapshot();
        assert_eq!(s.len(), 2);
        assert_eq!((s["lookup"], s["fallocate"]), (2, 1));
        assert_eq!(NAMES.len(), Req::Fallocate as usize + 1, "a name per kind");
    }
}
