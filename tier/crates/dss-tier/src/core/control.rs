//! What an operator asks of a running cache (`dss-tier flush`, `reset-counters`,
//! `reload-policy`): each takes the engine lock like any request, so it lands between
//! two requests and never in the middle of one.

use super::state::Core;
use dss_engine::Resolved;
use std::io;
use std::time::Duration;

impl Core {
    /// Write back every dirty block and return once none is left, the syncer's batches
    /// in flight included: what was dirty is then on the HDD, synced. Blocks that the
    /// placement keeps on the SSD (pinned) stay. Writes that keep coming are followed
    /// until a pass finds nothing dirty.
    pub fn flush_dirty(&self) -> io::Result<()> {
        loop {
            self.flush_all()?;
            let g = self.inner.lock().unwrap();
            if g.cache.dirty_entries() == 0 && g.cache.in_flight() == 0 {
                return Ok(());
            }
            drop(g);
            // A batch the syncer is writing back (or a read fill) lets go of its blocks
            // within one HDD sync; the syncer's wake-ups are its own.
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// What `sync; echo 3 > /proc/sys/vm/drop_caches` does to a real disk's page cache,
    /// done to the modelled ones: dirty pages written back (charged, and waited for),
    /// then every page dropped, so that the next access of any data pays the device.
    /// Returns the bytes the page caches held. The SSD cache itself stays as it is.
    pub fn drop_model_caches(&self) -> u64 {
        let mut g = self.inner.lock().unwrap();
        let held = [&g.ssd, &g.hdd]
            .iter()
            .filter_map(|d| d.pagecache().map(|pc| pc.cached_bytes()))
            .sum();
        let now = self.now();
        let done = g.ssd.drop_caches(now).max(g.hdd.drop_caches(now));
        drop(g);
        self.wait_until(done);
        held
    }

    /// Zero the per-class activity counters (the cached-bytes gauges stay).
    pub fn reset_counters(&self) {
        self.inner.lock().unwrap().cache.reset_counters();
    }

    /// Take `policy` as the engine's decision table from now on. Blocks whose placement
    /// changed between pinned and dirty are journalled as such before this returns.
    pub fn set_policy(&self, policy: &Resolved) -> Result<(), String> {
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        inner.cache.set_policy(policy).map_err(|e| e.to_string())?;
        let r = self.commit(inner, None);
        self.kick(inner);
        r.map_err(|e| format!("journal: {e}"))
    }
}
