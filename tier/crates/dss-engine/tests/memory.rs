//! `Cache::memory_bytes`: what the cache's structures hold, counted from their allocations.

use dss_engine::{Cache, Policy};

const BASE: &str = r#"
    name = "m"
    low_watermark = 0.05
    high_watermark = 0.15
    default_priority = 3
"#;

fn bytes(options: &str, entries: u32) -> usize {
    let policy = Policy::parse(&format!("{options}\n{BASE}"))
        .unwrap()
        .resolve(None);
    let cfg = policy.cache_config(u64::from(entries) * u64::from(policy.block_size));
    Cache::new(&policy, cfg).memory_bytes()
}

#[test]
fn counts_entries_map_clock_and_filter() {
    let n = 1 << 14;
    let lru = bytes("", n);
    // 32-byte entries and a block map of 8-byte buckets at most half full (2n of them).
    assert!(lru >= 48 * n as usize, "{lru}");
    // Plus the per-class counters and list heads, a fixed few tens of KiB.
    assert!(lru < 48 * n as usize + (64 << 10), "{lru}");
    // The clock adds a node per slot and per non-resident entry, the non-resident keys and
    // their map; the second-miss filter a ring of keys and its map.
    let clock = bytes("base_list = \"clock-pro\"", n);
    assert!(clock > lru + 48 * n as usize, "{clock}");
    let ghosts = bytes("read_allocate = \"second-miss\"", n);
    assert_eq!(ghosts, lru + 32 * n as usize);
}
