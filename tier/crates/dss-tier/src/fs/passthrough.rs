//! Kernel passthrough (FUSE_PASSTHROUGH, Linux 6.9 and later): the kernel serves the
//! reads, writes and mappings of a handle straight from the HDD file, page cache
//! included, without a request to the daemon.
//!
//! A file qualifies only when its data has one home and no decision is left per I/O:
//! the policy places every class on the HDD and the HDD has no device model to charge.
//! The kernel's own rules (fs/fuse/iomode.c) shape the rest: while one handle of an
//! inode is in passthrough, every open of it must be, with the same backing file, or
//! the opener gets EIO; and a passthrough open fails while a page-cached handle is
//! open. So an inode enters passthrough only with no other handle open, and stays in it
//! (whatever the policy says meanwhile) until its last passthrough handle is released.

use fuser::BackingId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

struct Backing {
    id: Arc<BackingId>,
    handles: u32,
}

/// The backing files registered with the kernel, by FUSE inode.
pub(super) struct Backings {
    map: Mutex<HashMap<u64, Backing>>,
    /// Negotiated at init and not given up since (a refused registration turns it off).
    enabled: AtomicBool,
    opens: AtomicU64,
}

/// The table held for one open: the decision and the handle's registration happen
/// under it, so two opens of one inode cannot decide differently.
pub(super) struct Deciding<'a> {
    backings: &'a Backings,
    map: MutexGuard<'a, HashMap<u64, Backing>>,
}

impl Backings {
    pub(super) fn new() -> Backings {
        Backings {
            map: Mutex::new(HashMap::new()),
            enabled: AtomicBool::new(false),
            opens: AtomicU64::new(0),
        }
    }

    pub(super) fn enable(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub(super) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Passthrough opens since the mount.
    pub(super) fn opens(&self) -> u64 {
        self.opens.load(Ordering::Relaxed)
    }

    pub(super) fn deciding(&self) -> Deciding<'_> {
        Deciding {
            backings: self,
            map: self.map.lock().unwrap(),
        }
    }

    /// A passthrough handle of `ino` was released: the last one unregisters the
    /// backing file (dropping the id closes it in the kernel).
    pub(super) fn released(&self, ino: u64) {
        let mut map = self.map.lock().unwrap();
        if let Some(b) = map.get_mut(&ino) {
            b.handles -= 1;
            if b.handles == 0 {
                map.remove(&ino);
            }
        }
    }
}

impl Deciding<'_> {
    /// The backing file `ino` is in passthrough with, if it is: the new handle must
    /// join it.
    pub(super) fn joined(&mut self, ino: u64) -> Option<Arc<BackingId>> {
        let b = self.map.get_mut(&ino)?;
        b.handles += 1;
        self.backings.opens.fetch_add(1, Ordering::Relaxed);
        Some(b.id.clone())
    }

    /// Put `ino` in passthrough with the backing file `register` hands to the kernel.
    /// A refusal (no CAP_SYS_ADMIN, a backing filesystem stacked too deep) turns
    /// passthrough off for the mount, once, with a line on standard error.
    pub(super) fn start(
        &mut self,
        ino: u64,
        register: impl FnOnce() -> std::io::Result<BackingId>,
    ) -> Option<Arc<BackingId>> {
        match register() {
            Ok(id) => {
                let id = Arc::new(id);
                self.map.insert(
                    ino,
                    Backing {
                        id: id.clone(),
                        handles: 1,
                    },
                );
                self.backings.opens.fetch_add(1, Ordering::Relaxed);
                Some(id)
            }
            Err(e) => {
                if self.backings.enabled.swap(false, Ordering::Relaxed) {
                    tell!(
                        "dss-tier: the kernel refused a passthrough backing file ({e}); \
                         passthrough is off for this mount"
                    );
                }
                None
            }
        }
    }
}
