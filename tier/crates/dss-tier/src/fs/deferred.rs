//! Replies sent when the modelled device finishes, not when the daemon has the data.
//!
//! A FUSE thread that slept until a modelled completion held that thread for the whole
//! device time. With a few HDD reads under way every thread slept on the disk, and a read
//! the SSD model had served in microseconds waited in the kernel's queue behind them; in
//! a kernel, a read of one device never waits for another device's queue. So a read
//! hands its reply, the data and the completion time to one timer thread and its FUSE
//! thread goes back to the queue at once.
//!
//! The read buffers are pooled: a deferred reply keeps its buffer until it is sent, and a
//! fresh buffer for every large read would cost page faults on each of its bytes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

type Job = Box<dyn FnOnce() + Send>;

struct Pending {
    at: Instant,
    /// Arrival order, so that jobs due at the same instant run in it.
    seq: u64,
    job: Job,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    /// Reversed: `BinaryHeap` is a max-heap and the earliest job must come first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Queue {
    due: BinaryHeap<Pending>,
    seq: u64,
    stopping: bool,
}

type Shared = Arc<(Mutex<Queue>, Condvar)>;

/// One timer thread running jobs at their times.
pub struct Deferred {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
}

impl Deferred {
    pub fn start() -> std::io::Result<Deferred> {
        let shared: Shared = Arc::default();
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("dss-tier-replies".into())
            .spawn(move || run(&s))?;
        Ok(Deferred {
            shared,
            thread: Some(thread),
        })
    }

    /// Run `job` at `at` (at once if that has passed).
    pub fn at(&self, at: Instant, job: impl FnOnce() + Send + 'static) {
        let (lock, cv) = &*self.shared;
        let mut q = lock.lock().unwrap();
        if q.stopping {
            drop(q);
            return job();
        }
        q.seq += 1;
        let seq = q.seq;
        let earliest = q.due.peek().is_none_or(|p| at < p.at);
        q.due.push(Pending {
            at,
            seq,
            job: Box::new(job),
        });
        if earliest {
            cv.notify_one();
        }
    }

    /// Jobs not yet run.
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.shared.0.lock().unwrap().due.len()
    }
}

impl Drop for Deferred {
    /// Runs what is still pending at once: a reply the kernel waits for must be sent.
    fn drop(&mut self) {
        self.shared.0.lock().unwrap().stopping = true;
        self.shared.1.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(shared: &Shared) {
    let (lock, cv) = &**shared;
    let mut q = lock.lock().unwrap();
    loop {
        let now = Instant::now();
        match q.due.peek() {
            Some(p) if p.at <= now || q.stopping => {
                let p = q.due.pop().expect("peeked");
                drop(q);
                (p.job)();
                q = lock.lock().unwrap();
            }
            Some(p) => {
                let wait = p.at - now;
                q = cv.wait_timeout(q, wait).unwrap().0;
            }
            None if q.stopping => return,
            None => q = cv.wait(q).unwrap(),
        }
    }
}

/// Read buffers kept for reuse, at most `MAX_POOLED` of them.
#[derive(Clone, Default)]
pub struct Buffers(Arc<Mutex<Vec<Vec<u8>>>>);

const MAX_POOLED: usize = 64;

impl Buffers {
    pub fn take(&self) -> Vec<u8> {
        self.0.lock().unwrap().pop().unwrap_or_default()
    }

    pub fn give(&self, buf: Vec<u8>) {
        let mut pool = self.0.lock().unwrap();
        if pool.len() < MAX_POOLED {
            pool.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn jobs_run_in_order_of_their_times_not_of_their_arrival() {
        let d = Deferred::start().unwrap();
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        for (name, ms) in [("late", 60), ("early", 20), ("now", 0), ("tie", 20)] {
            let tx = tx.clone();
            d.at(t0 + Duration::from_millis(ms), move || {
                tx.send((name, Instant::now())).unwrap();
            });
        }
        let got: Vec<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
        let names: Vec<_> = got.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["now", "early", "tie", "late"]);
        // None runs before its time.
        assert!(got[3].1 >= t0 + Duration::from_millis(60));
        assert!(got[1].1 >= t0 + Duration::from_millis(20));
    }

    #[test]
    fn a_caller_does_not_wait_for_its_job() {
        let d = Deferred::start().unwrap();
        let (tx, rx) = mpsc::channel();
        d.at(Instant::now() + Duration::from_secs(3600), move || {
            tx.send(()).unwrap();
        });
        assert_eq!(d.pending(), 1);
        assert!(rx.try_recv().is_err());
        // Dropping runs it: a reply the kernel waits for is never lost.
        drop(d);
        assert!(rx.try_recv().is_ok());
    }

    #[test]
    fn buffers_are_reused_up_to_the_pool_size() {
        let b = Buffers::default();
        let mut v = b.take();
        v.reserve(1 << 20);
        let p = v.as_ptr();
        b.give(v);
        let again = b.take();
        assert_eq!((again.as_ptr(), again.capacity() >= 1 << 20), (p, true));
        for _ in 0..MAX_POOLED + 5 {
            b.give(Vec::new());
        }
        assert_eq!(b.0.lock().unwrap().len(), MAX_POOLED);
    }
}
