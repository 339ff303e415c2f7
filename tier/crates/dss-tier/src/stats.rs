//! The stats document (`dss-tier stats --json`): per-class cache counters and per-device
//! activity, as docs/tier.md "Stats and content" gives it.

use dss_engine::cache::{ClassCounters, Resident, State};
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
    /// What the cache's write-back submitted (the syncer's SSD reads, its HDD writes
    /// and syncs) and the busy time it added; absent from stats of older tiers.
    #[serde(default)]
    pub writeback_ops: u64,
    #[serde(default)]
    pub writeback_bytes: u64,
    #[serde(default)]
    pub writeback_busy_s: f64,
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
            writeback_ops: d.writeback_ops,
            writeback_bytes: d.writeback_bytes,
            writeback_busy_s: d.writeback_busy_ns as f64 / 1e9,
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Stats {
    pub mode: String,
    /// The daemon's process id (`dss-tier umount` waits for it to exit).
    #[serde(default)]
    pub pid: u32,
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
    /// Kernel passthrough is on: files that qualify are read and written by the kernel
    /// on the HDD, unseen by the counters above.
    #[serde(default)]
    pub passthrough: bool,
    /// Handles opened in passthrough since the mount.
    #[serde(default)]
    pub passthrough_opens: u64,
    /// FUSE requests answered since the mount, by kind (those seen at least once).
    #[serde(default)]
    pub fuse_requests: BTreeMap<String, u64>,
    /// Seconds from each request's arrival in the daemon to its reply, summed by kind
    /// (a deferred read's until its reply is sent).
    #[serde(default)]
    pub fuse_request_s: BTreeMap<String, f64>,
    /// The requests under way as each arrived, itself included, summed: over the
    /// requests' count, the concurrency an arrival met (against `--threads`).
    #[serde(default)]
    pub fuse_under_way_seen: u64,
    /// Per class id (of the file), the data requests `read`, `write`, `fsync` and
    /// `fallocate`: each kind's [count, seconds].
    #[serde(default)]
    pub fuse_class_requests: BTreeMap<String, BTreeMap<String, (u64, f64)>>,
    /// Metadata the host's memory holds (`--meta-memory`), and the metadata reads and
    /// writes that found their block there.
    #[serde(default)]
    pub meta_memory_bytes: u64,
    #[serde(default)]
    pub meta_memory_hits: u64,
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
        if self.passthrough {
            s += &format!(
                "passthrough: on, {} handles opened (their I/O is not counted above)\n",
                self.passthrough_opens
            );
        }
        s
    }
}

/// Cached blocks of one class, by state.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct ClassContent {
    pub cached_bytes: u64,
    pub clean_bytes: u64,
    pub dirty_bytes: u64,
    pub pinned_bytes: u64,
    /// Distinct files (metadata pseudo-blocks count as one file per inode).
    pub files: u64,
}

/// A run of consecutive cached blocks of one file, class and state.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Extent {
    pub file: u64,
    pub index: u64,
    pub blocks: u64,
    pub class: u8,
    pub state: String,
}

/// `dss-tier dump`: what the cache holds, by class.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Content {
    pub block_size: u32,
    pub classes: BTreeMap<String, ClassContent>,
    /// File data extents in slot order of their first block, up to `MAX_EXTENTS`.
    pub extents: Vec<Extent>,
    /// True when there were more extents than listed.
    pub truncated: bool,
}

/// Keeps the document under the 64 KiB an extended attribute may carry.
pub const MAX_EXTENTS: usize = 500;

fn state_name(s: State) -> &'static str {
    match s {
        State::Clean => "clean",
        State::Pinned => "pinned",
        _ => "dirty",
    }
}

impl Content {
    /// From the engine's residents; keys with `meta_bit` set are metadata pseudo-blocks.
    pub fn new(
        residents: impl Iterator<Item = Resident>,
        block_size: u32,
        meta_bit: u64,
    ) -> Content {
        let b = u64::from(block_size);
        let mut classes: BTreeMap<u8, ClassContent> = BTreeMap::new();
        let mut files: std::collections::HashSet<(u8, u64)> = Default::default();
        let mut runs: BTreeMap<(u64, u8, &'static str), Vec<u64>> = BTreeMap::new();
        for r in residents {
            let c = classes.entry(r.class).or_default();
            c.cached_bytes += b;
            match r.state {
                State::Clean => c.clean_bytes += b,
                State::Pinned => c.pinned_bytes += b,
                _ => c.dirty_bytes += b,
            }
            if files.insert((r.class, r.key.file)) {
                c.files += 1;
            }
            if r.key.file & meta_bit == 0 {
                runs.entry((r.key.file, r.class, state_name(r.state)))
                    .or_default()
                    .push(r.key.index);
            }
        }
        let mut extents = Vec::new();
        let mut truncated = false;
        'outer: for ((file, class, state), mut idx) in runs {
            idx.sort_unstable();
            let mut i = 0;
            while i < idx.len() {
                let mut j = i + 1;
                while j < idx.len() && idx[j] == idx[j - 1] + 1 {
                    j += 1;
                }
                if extents.len() == MAX_EXTENTS {
                    truncated = true;
                    break 'outer;
                }
                extents.push(Extent {
                    file,
                    index: idx[i],
                    blocks: (j - i) as u64,
                    class,
                    state: state.to_string(),
                });
                i = j;
            }
        }
        Content {
            block_size,
            classes: classes
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            extents,
            truncated,
        }
    }

    pub fn render(&self) -> String {
        let mut s = format!(
            "{:>5} {:>12} {:>12} {:>12} {:>12} {:>8}\n",
            "class", "cached", "clean", "dirty", "pinned", "files"
        );
        let mut ids: Vec<&String> = self.classes.keys().collect();
        ids.sort_by_key(|k| k.parse::<u32>().unwrap_or(u32::MAX));
        for id in ids {
            let c = &self.classes[id];
            s += &format!(
                "{:>5} {:>12} {:>12} {:>12} {:>12} {:>8}\n",
                id, c.cached_bytes, c.clean_bytes, c.dirty_bytes, c.pinned_bytes, c.files
            );
        }
        s += &format!(
            "{} extents{}\n",
            self.extents.len(),
            if self.truncated { " (truncated)" } else { "" }
        );
        for e in &self.extents {
            s += &format!(
                "  file {} blocks {}..{} class {} {}\n",
                e.file,
                e.index,
                e.index + e.blocks,
                e.class,
                e.state
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
            writeback_ops: 1,
            writeback_bytes: 10,
            writeback_busy_ns: 500_000_000,
        };
        devices.insert("ssd".to_string(), DevStats::new("intel710", &d));
        devices.insert(
            "hdd".to_string(),
            DevStats::new("none", &DeviceStats::default()),
        );
        let s = Stats {
            mode: "dss".into(),
            pid: 1,
            policy: "reference".into(),
            block_size: 4096,
            cache_entries: 10,
            free_entries: 5,
            dirty_entries: 3,
            pinned_entries: 0,
            syncer_active: false,
            classes: class_map(counters.into_iter(), 4096),
            devices,
            passthrough: false,
            passthrough_opens: 0,
            fuse_requests: Default::default(),
            fuse_request_s: Default::default(),
            fuse_under_way_seen: 0,
            fuse_class_requests: Default::default(),
            meta_memory_bytes: 0,
            meta_memory_hits: 0,
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
        assert_eq!(v["devices"]["ssd"]["writeback_busy_s"], 0.5);
        assert_eq!(v["devices"]["ssd"]["writeback_bytes"], 10);
        // Stats written before the write-back counters read as none.
        let mut old = v["devices"]["ssd"].clone();
        for k in ["writeback_ops", "writeback_bytes", "writeback_busy_s"] {
            old.as_object_mut().unwrap().remove(k);
        }
        let old: DevStats = serde_json::from_value(old).unwrap();
        assert_eq!((old.writeback_ops, old.writeback_busy_s), (0, 0.0));
        // And those written before the requests were timed, as untimed.
        let mut old = v.clone();
        for k in [
            "fuse_request_s",
            "fuse_under_way_seen",
            "fuse_class_requests",
        ] {
            assert!(old.as_object_mut().unwrap().remove(k).is_some(), "{k}");
        }
        let old: Stats = serde_json::from_value(old).unwrap();
        assert!(old.fuse_request_s.is_empty() && old.fuse_under_way_seen == 0);
        assert!(old.fuse_class_requests.is_empty());
        assert!(s.render().contains("   11"));
    }

    #[test]
    fn content_groups_by_class_and_coalesces_extents() {
        use dss_engine::BlockKey;
        let r = |file, index, class, state| Resident {
            slot: 0,
            key: BlockKey { file, index },
            class,
            state,
        };
        let meta = 1u64 << 63;
        let res = vec![
            r(5, 1, 24, State::Dirty),
            r(5, 0, 24, State::Dirty),
            r(5, 3, 24, State::Dirty),
            r(6, 0, 31, State::Clean),
            r(meta | 5, 0, 2, State::Dirty),
        ];
        let c = Content::new(res.into_iter(), 4096, meta);
        assert_eq!(c.classes["24"].dirty_bytes, 3 * 4096);
        assert_eq!(c.classes["24"].files, 1);
        assert_eq!(c.classes["31"].clean_bytes, 4096);
        assert_eq!(c.classes["2"].cached_bytes, 4096);
        let runs: Vec<(u64, u64, u64)> = c
            .extents
            .iter()
            .map(|e| (e.file, e.index, e.blocks))
            .collect();
        assert_eq!(runs, vec![(5, 0, 2), (5, 3, 1), (6, 0, 1)]);
        assert!(!c.truncated);
        let many = (0..2 * MAX_EXTENTS as u64).map(|i| r(9, 2 * i, 24, State::Dirty));
        let c = Content::new(many, 4096, meta);
        assert!(c.truncated && c.extents.len() == MAX_EXTENTS);
        assert!(serde_json::to_string(&c).unwrap().len() < 60_000);
    }
}
