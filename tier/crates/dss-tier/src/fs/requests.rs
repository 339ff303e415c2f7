//! FUSE requests the daemon answered, by kind, since the mount: the round trips each
//! workload costs (a Swift PUT's, say) are the tier's main cost under small requests,
//! and the time each kind takes to answer says which of them a writer waits on.

use std::cell::Cell;
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

/// The kinds on a file's data, also timed per class of the file: where one class's
/// files sit on the SSD and another's on the HDD, the kind's mean alone mixes them.
const CLASSED: [Req; 4] = [Req::Read, Req::Write, Req::Fsync, Req::Fallocate];

/// A count and a sum of nanoseconds.
type Tally = [AtomicU64; 2];

/// Counters per kind, bumped without a lock by whichever thread answers.
pub(super) struct Requests {
    counts: [AtomicU64; NAMES.len()],
    nanos: [AtomicU64; NAMES.len()],
    /// Per class id, per kind of `CLASSED`.
    by_class: Vec<[Tally; CLASSED.len()]>,
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
    /// Per class id, the data kinds' counts and seconds (classes seen at least once).
    pub by_class: BTreeMap<String, BTreeMap<String, (u64, f64)>>,
}

/// One request being answered: its time is charged to its kind when it is dropped.
pub(super) struct Answering<'a> {
    requests: &'a Requests,
    kind: Req,
    started: Instant,
    replied: Option<Instant>,
    class: Cell<Option<u8>>,
}

impl Answering<'_> {
    /// The reply goes out at AT, after the thread is free (a deferred read): the
    /// request's time runs until then, while the thread counts as free at once.
    pub(super) fn replies_at(&mut self, at: Instant) {
        self.replied = Some(at);
    }

    /// The request is on the data of a file of CLASS.
    pub(super) fn of_class(&self, class: u8) {
        self.class.set(Some(class));
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        let end = self
            .replied
            .map_or_else(Instant::now, |at| at.max(Instant::now()));
        let ns = end.duration_since(self.started).as_nanos() as u64;
        self.requests.nanos[self.kind as usize].fetch_add(ns, Ordering::Relaxed);
        let classed = CLASSED.iter().position(|k| *k == self.kind);
        if let (Some(class), Some(i)) = (self.class.get(), classed) {
            let [n, sum] = &self.requests.by_class[usize::from(class)][i];
            n.fetch_add(1, Ordering::Relaxed);
            sum.fetch_add(ns, Ordering::Relaxed);
        }
        self.requests.under_way.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Requests {
    pub(super) fn new() -> Requests {
        Requests {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            nanos: std::array::from_fn(|_| AtomicU64::new(0)),
            by_class: (0..=u8::MAX)
                .map(|_| std::array::from_fn(|_| Default::default()))
                .collect(),
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
            class: Cell::new(None),
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
        for (class, tallies) in self.by_class.iter().enumerate() {
            let kinds: BTreeMap<String, (u64, f64)> = CLASSED
                .iter()
                .zip(tallies)
                .map(|(kind, [n, sum])| (kind, n.load(Ordering::Relaxed), sum))
                .filter(|(_, n, _)| *n > 0)
                .map(|(kind, n, sum)| {
                    let s = sum.load(Ordering::Relaxed) as f64 / 1e9;
                    (NAMES[*kind as usize].to_string(), (n, s))
                })
                .collect();
            if !kinds.is_empty() {
                s.by_class.insert(class.to_string(), kinds);
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

    #[test]
    fn data_requests_are_also_timed_by_their_file_s_class() {
        let r = Requests::new();
        for class in [25, 25, 28] {
            r.answer(Req::Fsync).of_class(class);
        }
        r.answer(Req::Rename).of_class(25);
        drop(r.answer(Req::Write));
        let s = r.snapshot();
        assert_eq!(s.by_class.keys().collect::<Vec<_>>(), ["25", "28"]);
        assert_eq!(
            s.by_class["25"].keys().collect::<Vec<_>>(),
            ["fsync"],
            "{s:?}"
        );
        assert_eq!(
            (s.by_class["25"]["fsync"].0, s.by_class["28"]["fsync"].0),
            (2, 1)
        );
        assert!(s.by_class["25"]["fsync"].1 > 0.0);
        assert_eq!(s.counts["fsync"], 3, "the kind's own count has them all");
        assert_eq!(s.counts["write"], 1);
    }
}
