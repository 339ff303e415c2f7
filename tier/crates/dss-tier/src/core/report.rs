//! The stats and content documents, read from the engine's counters and the device
//! models.

use super::state::{Core, META};
use crate::stats::{Content, DevStats, Stats, class_map};

impl Core {
    pub fn stats(&self) -> Stats {
        let g = self.inner.lock().unwrap();
        let c = &g.cache;
        let mut devices = std::collections::BTreeMap::new();
        devices.insert(
            "ssd".to_string(),
            DevStats::new(&self.ssd_model, &g.ssd.stats()),
        );
        devices.insert(
            "hdd".to_string(),
            DevStats::new(&self.hdd_model, &g.hdd.stats()),
        );
        Stats {
            mode: self.mode.clone(),
            pid: std::process::id(),
            policy: self.policy_name.clone(),
            block_size: self.bs as u32,
            cache_entries: c.config().entries,
            free_entries: c.free_entries(),
            dirty_entries: c.dirty_entries(),
            pinned_entries: c.pinned_entries(),
            syncer_active: c.syncer_active(),
            classes: class_map((0..=255u8).map(|id| (id, c.counters(id))), self.bs as u32),
            devices,
            passthrough: false,
            passthrough_opens: 0,
            fuse_requests: Default::default(),
            fuse_request_s: Default::default(),
            fuse_under_way_seen: 0,
            fuse_class_requests: Default::default(),
            meta_memory_bytes: g.meta_memory.len() as u64 * self.bs,
            meta_memory_hits: g.meta_memory.hits(),
        }
    }

    pub fn content_json(&self) -> String {
        let g = self.inner.lock().unwrap();
        let c = Content::new(g.cache.residents(), self.bs as u32, META);
        serde_json::to_string(&c).unwrap_or_default()
    }
}
