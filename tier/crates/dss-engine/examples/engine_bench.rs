//! Decisions per second of the cache engine on a skewed mixed workload with the syncer
//! running: `cargo run --release -p dss-engine --example engine_bench`.

use dss_engine::{BlockKey, Cache, Policy, ReadOutcome};
use std::time::Instant;

fn main() {
    let policy = Policy::parse(include_str!("../../../../policies/reference.toml"))
        .expect("reference policy")
        .resolve(None);
    let mut cache = Cache::new(&policy, policy.cache_config(1 << 30));
    let mut victims = Vec::with_capacity(4096);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let ops = 20_000_000u64;
    let start = Instant::now();
    for i in 0..ops {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Blocks over 4x the cache; small class ids are hotter.
        let key = BlockKey {
            file: seed % 1024,
            index: (seed >> 10) % 1024,
        };
        let class = [2u8, 11, 12, 15, 20, 24, 0][(seed >> 40) as usize % 7];
        if seed & 3 == 0 {
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
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{:.2} M decisions/s ({ops} in {secs:.2} s)",
        ops as f64 / secs / 1e6
    );
    cache.check().expect("consistent after the run");
}
