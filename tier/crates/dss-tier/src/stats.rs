//! The stats document (`dss-tier stats --json`): per-class cache counters and per-device
//! activity, as ARCHITECTURE.md section 7 fixes it.

use dss_engine::cache::ClassCounters;
use dss_engine::device::DeviceStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ClassStats {
    pub cached_bytes: u64,
    pub clean_bytes: u64,
    pub dirty_bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub bypassed_bytes: u64,
    pub evicted_bytes: u64,
    pub written_back_bytes: u64,
}

impl ClassStats {
    pub fn new(c: &ClassCounters, block_size: u32) -> ClassStats {
        let b = u64::from(block_size);
        ClassStats {
            cached_bytes: (c.clean_blocks + c.dirty_blocks) * b,
            clean_bytes: c.clean_blocks * b,
            dirty_bytes: c.dirty_blocks * b,
            hits: c.hits,
            misses: c.misses,
            bypassed_bytes: c.bypassed_bytes,
            evicted_bytes: c.evicted_blocks * b,
            written_back_bytes: c.written_back_blocks * b,
        }
    }

    fn is_zero(c: &ClassCounters) -> bool {
        *c == ClassCounters::default()
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DevStats {
    pub model: String,
    pub ops: u64,
    pub bytes: u64,
    pub busy_s: f64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl DevStats {
    pub fn new(model: &str, d: &DeviceStats) -> DevStats {
        DevStats {
            model: model.to_string(),
            ops: d.ops(),
            bytes: d.bytes(),
            busy_s: d.busy_ns as f64 / 1e9,
            read_ops: d.read_ops,
            write_ops: d.write_ops,
            read_bytes: d.read_bytes,
            write_bytes: d.write_bytes,
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Stats {
    pub mode: String,
    pub policy: String,
    pub block_size: u32,
    pub cache_entries: u32,
    pub free_entries: u32,
    pub dirty_entries: u32,
    pub pinned_entries: u32,
    pub syncer_active: bool,
    /// Keyed by class id; classes with no activity are left out.
    pub classes: BTreeMap<String, ClassStats>,
    pub devices: BTreeMap<String, DevStats>,
}

pub fn class_map(
    counters: impl Iterator<Item = (u8, ClassCounters)>,
    block_size: u32,
) -> BTreeMap<String, ClassStats> {
    counters
        .filter(|(_, c)| !ClassStats::is_zero(c))
        .map(|(id, c)| (id.to_string(), ClassStats::new(&c, block_size)))
        .collect()
}

impl Stats {
    /// The human-readable table `dss-tier stats` prints.
    pub fn render(&self) -> String {
        let mut s = format!(
            "mode {}  policy {}  cache {} x {} B, {} free, {} dirty, {} pinned{}\n",
            self.mode,
            self.policy,
            self.cache_entries,
            self.block_size,
            self.free_entries,
            self.dirty_entries,
            self.pinned_entries,
            if self.syncer_active {
                ", syncer active"
            } else {
                ""
            }
        );
        s += &format!(
            "{:>5} {:>12} {:>12} {:>10} {:>10} {:>12} {:>12}\n",
            "class", "cached", "dirty", "hits", "misses", "bypassed", "evicted"
        );
        let mut ids: Vec<&String> = self.classes.keys().collect();
        ids.sort_by_key(|k| k.parse::<u32>().unwrap_or(u32::MAX));
        for id in ids {
            let c = &self.classes[id];
            s += &format!(
                "{:>5} {:>12} {:>12} {:>10} {:>10} {:>12} {:>12}\n",
                id,
                c.cached_bytes,
                c.dirty_bytes,
                c.hits,
                c.misses,
                c.bypassed_bytes,
                c.evicted_bytes
            );
        }
        for (name, d) in &self.devices {
            s += &format!(
                "{name}: {} ops, {} bytes, busy {:.3} s ({})\n",
                d.ops, d.bytes, d.busy_s, d.model
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_documented_keys() {
        let c = ClassCounters {
            clean_blocks: 2,
            dirty_blocks: 3,
            hits: 7,
            misses: 1,
            bypassed_bytes: 100,
            evicted_blocks: 1,
            written_back_blocks: 4,
        };
        let counters = [(0u8, ClassCounters::default()), (11u8, c)];
        let mut devices = BTreeMap::new();
        let d = DeviceStats {
            read_ops: 1,
            write_ops: 2,
            read_bytes: 10,
            write_bytes: 20,
            busy_ns: 1_500_000_000,
        };
        devices.insert("ssd".to_string(), DevStats::new("intel710", &d));
        devices.insert(
            "hdd".to_string(),
            DevStats::new("none", &DeviceStats::default()),
        );
        let s = Stats {
            mode: "dss".into(),
            policy: "reference".into(),
            block_size: 4096,
            cache_entries: 10,
            free_entries: 5,
            dirty_entries: 3,
            pinned_entries: 0,
            syncer_active: false,
            classes: class_map(counters.into_iter(), 4096),
            devices,
        };
        let v: serde_json::Value = serde_json::to_value(&s).unwrap();
        assert_eq!(v["mode"], "dss");
        assert!(v["classes"].get("0").is_none(), "idle classes are left out");
        let c11 = &v["classes"]["11"];
        assert_eq!(c11["cached_bytes"], 5 * 4096);
        assert_eq!(c11["dirty_bytes"], 3 * 4096);
        for k in ["hits", "misses", "bypassed_bytes", "evicted_bytes"] {
            assert!(c11.get(k).is_some(), "{k}");
        }
        assert_eq!(v["devices"]["ssd"]["ops"], 3);
        assert_eq!(v["devices"]["ssd"]["bytes"], 30);
        assert_eq!(v["devices"]["ssd"]["busy_s"], 1.5);
        assert!(s.render().contains("   11"));
    }
}
