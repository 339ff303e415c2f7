//! A warm start's check of the HDD files. The clean blocks kept from a clean unmount are
//! copies of HDD files as they were then; a file changed on the HDD while the tier was
//! unmounted (restored from a backup, rewritten by a tool run on the directory) carries
//! a ctime after the unmount, and its blocks must go before the tier serves any of it.
//! A file is checked when the kernel first learns of it after the mount: every request
//! that reaches a file's data or changes it comes after a lookup of one of its names, and
//! a lookup stats the HDD file. A new file given the inode number of a removed one is
//! caught the same way (its ctime is its creation's).

use super::state::Core;
use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::Ordering;

/// The kept blocks of the files no lookup has reached yet.
#[derive(Default)]
pub(super) struct WarmFiles {
    /// When the journal was marked clean, in ns since the epoch.
    pub(super) since: u64,
    /// Block indexes kept, per HDD inode.
    pub(super) blocks: HashMap<u64, Vec<u64>>,
}

impl Core {
    /// Drop the kept blocks of the file `md` describes if it changed on the HDD after
    /// the clean unmount they were kept from. Costs one atomic load once every kept
    /// file has been looked up, or on a mount that kept none.
    pub fn check_warm(&self, md: &Metadata) {
        if !self.warm_pending.load(Ordering::Acquire) || !md.is_file() {
            return;
        }
        // Held until the blocks are gone: a lookup of another name of the file, in
        // another thread, must not find it checked and read what is about to go.
        let mut w = self.warm.lock().unwrap();
        let Some(indexes) = w.blocks.remove(&md.ino()) else {
            return;
        };
        if w.blocks.is_empty() {
            self.warm_pending.store(false, Ordering::Release);
        }
        let ctime = i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec());
        if ctime <= i128::from(w.since) {
            return;
        }
        let mut g = self.inner.lock().unwrap();
        for index in indexes.iter().rev() {
            g.cache.discard(dss_engine::BlockKey {
                file: md.ino(),
                index: *index,
            });
        }
        self.commit_logged(&mut g);
        tell!(
            "dss-tier: warm start: inode {} changed on the HDD after the clean unmount; \
             its {} kept blocks dropped",
            md.ino(),
            indexes.len()
        );
    }
}
