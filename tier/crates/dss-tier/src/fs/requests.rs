//! FUSE requests the daemon answered, by kind, since the mount: the round trips each
//! workload costs (a Swift PUT's, say) are the tier's main cost under small requests,
//! and the time each kind takes to answer says which of them a writer waits on.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

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

/// Counters per kind, bumped without a lock by whichever thread answers.
pub(super) struct Requests {
    counts: [AtomicU64; NAMES.len()],
    nanos: [AtomicU64; NAMES.len()],
    under_way: AtomicU64,
    under_way_seen: AtomicU64,
}

/// What the stats document carries of the requests.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Snapshot {
    /// Requests answered, by kind (kinds seen at least once).
    pub counts: BTreeMap<String, u64>,
    /// Seconds from each request's arrival in the daemon to its reply, summed by kind.
    pub seconds: BTreeMap<String, f64>,
    /// The requests under way as each one arrived, itself included, summed: over the
    /// count, the concurrency an arrival met. Near `--threads`, requests were waiting in
    /// the kernel for a free thread, a wait no counter here sees.
    pub under_way_seen: u64,
}

/// One request being answered: its time is charged to its kind when it is dropped.
pub(super) struct Answering<'a> {
    requests: &'a Requests,
    kind: Req,
    started: Instant,
    replied: Option<Instant>,
}

impl Answering<'_> {
    /// The reply goes out at AT, after the thread is free (a deferred read): the
    /// request's time runs until then, while the thread counts as free at once.
    pub(super) fn replies_at(&mut self, at: Instant) {
        self.replied = Some(at);
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        let end = self
            .replied
            .map_or_else(Instant::now, |at| at.max(Instant::now()));
        let ns = end.duration_since(self.started).as_nanos() as u64;
        self.requests.nanos[self.kind as usize].fetch_add(ns, Ordering::Relaxed);
        self.requests.under_way.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Requests {
    pub(super) fn new() -> Requests {
        Requests {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            nanos: std::array::from_fn(|_| AtomicU64::new(0)),
            under_way: AtomicU64::new(0),
            under_way_seen: AtomicU64::new(0),
        }
    }

    /// A request of KIND arrives; it is timed until the returned guard is dropped.
    pub(super) fn answer(&self, kind: Req) -> Answering<'_> {
        self.counts[kind as usize].fetch_add(1, Ordering::Relaxed);
        let before = self.under_way.fetch_add(1, Ordering::Relaxed);
        self.under_way_seen.fetch_add(before + 1, Ordering::Relaxed);
        Answering {
            requests: self,
            kind,
            started: Instant::now(),
            replied: None,
        }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot {
            under_way_seen: self.under_way_seen.load(Ordering::Relaxed),
            ..Snapshot::default()
        };
        for (i, name) in NAMES.iter().enumerate() {
            let n = self.counts[i].load(Ordering::Relaxed);
            if n > 0 {
                s.counts.insert(name.to_string(), n);
                let ns = self.nanos[i].load(Ordering::Relaxed);
                s.seconds.insert(name.to_string(), ns as f64 / 1e9);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn counts_by_kind_and_names_only_those_seen() {
        let r = Requests::new();
        assert_eq!(r.snapshot(), Snapshot::default());
        drop(r.answer(Req::Lookup));
        drop(r.answer(Req::Lookup));
        drop(r.answer(Req::Fallocate));
        let s = r.snapshot();
        assert_eq!(s.counts.len(), 2);
        assert_eq!((s.counts["lookup"], s.counts["fallocate"]), (2, 1));
        assert_eq!(
            s.seconds.keys().collect::<Vec<_>>(),
            ["fallocate", "lookup"]
        );
        assert_eq!(NAMES.len(), Req::Fallocate as usize + 1, "a name per kind");
    }

    #[test]
    fn times_each_kind_until_its_reply() {
        let r = Requests::new();
        {
            let _write = r.answer(Req::Write);
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut read = r.answer(Req::Read);
        read.replies_at(Instant::now() + Duration::from_millis(30));
        drop(read);
        let s = r.snapshot();
        assert!(s.seconds["write"] >= 0.020, "{s:?}");
        assert!(
            s.seconds["read"] >= 0.030,
            "a deferred reply's wait counts: {s:?}"
        );
    }

    #[test]
    fn arrivals_see_the_requests_under_way() {
        let r = Requests::new();
        let first = r.answer(Req::Write);
        let second = r.answer(Req::Fsync);
        drop((first, second));
        drop(r.answer(Req::Create));
        // 1 (the first alone), 2 (the second beside it), 1 (the third after both ended).
        assert_eq!(r.snapshot().under_way_seen, 4);
    }
}
