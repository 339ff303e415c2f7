//! Decisions per second of the cache engine on a skewed mixed workload with the syncer
//! running, side by side with a plain LRU block cache (a hash map and one intrusive list:
//! what any block cache needs at the least) on the same operation stream:
//! `cargo run --release -p dss-engine --example engine_bench [OPS]`.
//! Prints `engine <M/s>` and `baseline <M/s>` lines.

use dss_engine::cache::BlockHasher;
use dss_engine::{BlockKey, Cache, Policy, ReadOutcome};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::Instant;

const CLASSES: [u8; 7] = [2, 11, 12, 15, 20, 24, 0];

/// The operation stream: (key, class, is_read), over 4x the cache's blocks.
fn stream(ops: u64) -> impl Iterator<Item = (BlockKey, u8, bool)> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    (0..ops).map(move |_| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let key = BlockKey {
            file: seed % 1024,
            index: (seed >> 10) % 1024,
        };
        (key, CLASSES[(seed >> 40) as usize % 7], seed & 3 == 0)
    })
}

/// The baseline: class-blind LRU with a write-back flag per entry, no watermarks.
struct Lru {
    map: HashMap<BlockKey, u32, BuildHasherDefault<BlockHasher>>,
    keys: Vec<BlockKey>,
    prev: Vec<u32>,
    next: Vec<u32>,
    dirty: Vec<bool>,
    head: u32,
    tail: u32,
    used: u32,
    written_back: u64,
}

const NIL: u32 = u32::MAX;

impl Lru {
    fn new(n: u32) -> Lru {
        let mut map = HashMap::default();
        map.reserve(n as usize);
        Lru {
            map,
            keys: vec![BlockKey::default(); n as usize],
            prev: vec![NIL; n as usize],
            next: vec![NIL; n as usize],
            dirty: vec![false; n as usize],
            head: NIL,
            tail: NIL,
            used: 0,
            written_back: 0,
        }
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NIL {
            self.head = n
        } else {
            self.next[p as usize] = n
        }
        if n == NIL {
            self.tail = p
        } else {
            self.prev[n as usize] = p
        }
    }

    fn push_tail(&mut self, s: u32) {
        self.prev[s as usize] = self.tail;
        self.next[s as usize] = NIL;
        if self.tail == NIL {
            self.head = s
        } else {
            self.next[self.tail as usize] = s
        }
        self.tail = s;
    }

    /// One access; returns the slot used.
    fn access(&mut self, key: BlockKey, write: bool) -> u32 {
        let s = if let Some(&s) = self.map.get(&key) {
            self.unlink(s);
            s
        } else if self.used < self.keys.len() as u32 {
            self.used += 1;
            self.map.insert(key, self.used - 1);
            self.keys[self.used as usize - 1] = key;
            self.used - 1
        } else {
            let s = self.head;
            self.unlink(s);
            if std::mem::take(&mut self.dirty[s as usize]) {
                self.written_back += 1;
            }
            self.map.remove(&self.keys[s as usize]);
            self.map.insert(key, s);
            self.keys[s as usize] = key;
            s
        };
        self.dirty[s as usize] |= write;
        self.push_tail(s);
        s
    }
}

fn main() {
    let ops: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let policy = Policy::parse(include_str!("../../../../policies/reference.toml"))
        .expect("reference policy")
        .resolve(None);
    let cfg = policy.cache_config(1 << 30);

    let mut cache = Cache::new(&policy, cfg);
    let mut victims = Vec::with_capacity(4096);
    let start = Instant::now();
    for (i, (key, class, read)) in stream(ops).enumerate() {
        if read {
            if let ReadOutcome::MissFill { slot, version } = cache.read(key, class) {
                cache.fill_done(slot, version, true);
            }
        } else {
            cache.write(key, class, 4096);
        }
        if i % 64 == 0 {
            victims.clear();
            cache.pick_victims(&mut victims, 4096);
            for v in &victims {
                cache.clean_done(v, true);
            }
        }
    }
    let engine = ops as f64 / start.elapsed().as_secs_f64() / 1e6;
    cache.check().expect("consistent after the run");

    let mut lru = Lru::new(cfg.entries);
    let mut sink = 0u64;
    let start = Instant::now();
    for (key, _class, read) in stream(ops) {
        sink = sink.wrapping_add(u64::from(lru.access(key, !read)));
    }
    let baseline = ops as f64 / start.elapsed().as_secs_f64() / 1e6;
    println!("engine {engine:.3} M decisions/s ({ops} operations)");
    println!(
        "baseline {baseline:.3} M decisions/s (plain LRU; {} write-backs, {sink})",
        lru.written_back
    );
}
