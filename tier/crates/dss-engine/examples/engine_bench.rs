//! Decisions per second of the cache engine on a skewed mixed workload with the syncer
//! running, under each shipped tier policy, side by side with a plain LRU block cache (a
//! hash map and one intrusive list: what any block cache needs at the least) on the same
//! operation stream: `cargo run --release -p dss-engine --example engine_bench [OPS
//! [POLICY...]]` (default: every policy, in the order of `POLICIES`). Prints one
//! `engine <policy> <M/s>` line per policy and a `baseline <M/s>` line: decisions per
//! second of wall time, then per CPU-second of this thread, which other load on the
//! machine disturbs far less. After each engine line, a `memory <policy> <bytes>
//! bytes/entry` line: what the cache's structures hold (`Cache::memory_bytes`: entries,
//! block map, clock, filter) per cache entry; after the baseline line, a `baseline memory`
//! line with the same for the plain LRU.

use dss_engine::cache::BlockHasher;
use dss_engine::cache::Config;
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

    /// Bytes the structures hold, as allocated. The standard map does not tell its bucket
    /// count: it is derived from its capacity by hashbrown's rule (7/8 of a power of two
    /// full at most), each bucket a (key, slot) pair and a control byte.
    fn memory_bytes(&self) -> usize {
        let buckets = (self.map.capacity() * 8 / 7).next_power_of_two();
        let n = self.keys.capacity();
        std::mem::size_of::<Lru>()
            + buckets * (std::mem::size_of::<(BlockKey, u32)>() + 1)
            + n * std::mem::size_of::<BlockKey>()
            + (self.prev.capacity() + self.next.capacity()) * std::mem::size_of::<u32>()
            + self.dirty.capacity() * std::mem::size_of::<bool>()
    }
}

/// CPU seconds this thread has used (user and system), from /proc: the standard library
/// has no thread clock. The fields count USER_HZ ticks, 100 per second on Linux.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let ticks: u64 = after_name
        .split(' ')
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

/// Decisions per wall second and per CPU-second since `start` / `cpu0`.
fn rates(ops: u64, start: Instant, cpu0: f64) -> (f64, f64) {
    let wall = ops as f64 / start.elapsed().as_secs_f64() / 1e6;
    let cpu = ops as f64 / (cpu_seconds() - cpu0).max(0.01) / 1e6;
    (wall, cpu)
}

/// The policies measured, by the names the experiment selects them with.
const POLICIES: [(&str, &str); 10] = [
    (
        "dss",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/reference.toml")),
    ),
    (
        "lru",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/lru.toml")),
    ),
    (
        "dss-slru",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-slru.toml")),
    ),
    (
        "dss-readcut",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-readcut.toml")),
    ),
    (
        "dss-slru-readcut",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-slru-readcut.toml")),
    ),
    (
        "slru",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/slru.toml")),
    ),
    (
        "dss-secondmiss",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-secondmiss.toml")),
    ),
    (
        "dss-clockpro",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-clockpro.toml")),
    ),
    (
        "dss-cluster",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-cluster.toml")),
    ),
    (
        "lru-cluster",
        include_str!(concat!(env!("DSS_POLICIES_DIR"), "/lru-cluster.toml")),
    ),
];

/// One engine run over the stream; returns M decisions per wall and per CPU-second, the
/// read hit ratio, the geometry and the bytes the cache holds at the end.
fn run_engine(text: &str, ops: u64) -> ((f64, f64), f64, Config, usize) {
    let policy = Policy::parse(text).expect("shipped policy").resolve(None);
    let cfg = policy.cache_config(1 << 30);
    let mut cache = Cache::new(&policy, cfg);
    let mut victims = Vec::with_capacity(4096);
    let (mut reads, mut hits) = (0u64, 0u64);
    let (start, cpu0) = (Instant::now(), cpu_seconds());
    for (i, (key, class, read)) in stream(ops).enumerate() {
        if read {
            reads += 1;
            match cache.read(key, class) {
                ReadOutcome::Hit { .. } => hits += 1,
                ReadOutcome::MissFill { slot, version } => cache.fill_done(slot, version, true),
                ReadOutcome::Miss => {}
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
    let rate = rates(ops, start, cpu0);
    cache.check().expect("consistent after the run");
    let bytes = cache.memory_bytes();
    (rate, hits as f64 / reads.max(1) as f64, cfg, bytes)
}

fn main() {
    let ops: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let chosen: Vec<String> = std::env::args().skip(2).collect();
    // Unmeasured: the first run in a process pays for faulting in the heap the later
    // ones reuse, which would count against whichever policy comes first.
    run_engine(POLICIES[0].1, ops / 4);
    let mut entries = 0;
    for (name, text) in POLICIES {
        if !chosen.is_empty() && !chosen.iter().any(|c| c == name) {
            continue;
        }
        let ((wall, cpu), hit_ratio, cfg, bytes) = run_engine(text, ops);
        entries = cfg.entries;
        println!(
            "engine {name} {wall:.3} M decisions/s, cpu {cpu:.3} M decisions/s \
             ({ops} operations, read hit ratio {hit_ratio:.3})"
        );
        println!("{}", memory_line(&format!("memory {name}"), bytes, entries));
    }

    let mut lru = Lru::new(entries);
    let mut sink = 0u64;
    let (start, cpu0) = (Instant::now(), cpu_seconds());
    for (key, _class, read) in stream(ops) {
        sink = sink.wrapping_add(u64::from(lru.access(key, !read)));
    }
    let (wall, cpu) = rates(ops, start, cpu0);
    println!(
        "baseline {wall:.3} M decisions/s, cpu {cpu:.3} M decisions/s \
         (plain LRU; {} write-backs, {sink})",
        lru.written_back
    );
    println!(
        "{}",
        memory_line("baseline memory", lru.memory_bytes(), entries)
    );
}

/// `<what> <bytes per entry> bytes/entry (<bytes> bytes, <entries> entries)`.
fn memory_line(what: &str, bytes: usize, entries: u32) -> String {
    let per = bytes as f64 / f64::from(entries.max(1));
    format!("{what} {per:.2} bytes/entry ({bytes} bytes, {entries} entries)")
}
