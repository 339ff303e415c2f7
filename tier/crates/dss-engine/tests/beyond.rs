//! The options beyond the paper: the segmented-LRU and CLOCK-Pro base lists and the
//! read-allocation rule, against the paper's LRU base on the same streams.

use dss_engine::cache::Config;
use dss_engine::{BlockKey, Cache, Mode, Policy, ReadOutcome, WriteOutcome};

/// Class 1: priority 0, 2: priority 5, 3: priority 10 (past the cut-off).
const CLASSES: &str = r#"
    [[classes]]
    name = "meta"
    ids = 1
    priority = 0
    [[classes]]
    name = "objects"
    ids = 2
    priority = 5
    [[classes]]
    name = "large"
    ids = 3
    priority = 10
"#;

fn cache(options: &str, mode: Mode, entries: u32) -> Cache {
    let text = format!(
        "name = \"t\"\nlow_watermark = 0.1\nhigh_watermark = 0.2\nbypass_priority = 10\n\
         default_priority = 11\n{options}\n{CLASSES}"
    );
    let r = Policy::parse(&text).unwrap().resolve(Some(mode));
    Cache::new(&r, Config::from_fractions(entries, 0.1, 0.2))
}

fn k(file: u64, index: u64) -> BlockKey {
    BlockKey { file, index }
}

/// Read a block the way the daemon does, completing any fill at once. True on a hit.
fn read(c: &mut Cache, key: BlockKey, class: u8) -> bool {
    match c.read(key, class) {
        ReadOutcome::Hit { .. } => true,
        ReadOutcome::Miss => false,
        ReadOutcome::MissFill { slot, version } => {
            c.fill_done(slot, version, true);
            false
        }
    }
}

/// The syncer keeping up: write back whatever pressure asks for, at once.
fn sync(c: &mut Cache) {
    let mut v = Vec::new();
    c.pick_victims(&mut v, usize::MAX);
    for victim in &v {
        c.clean_done(victim, true);
    }
}

const HOT: u64 = 30;

/// A hot set read twice (so it was referenced while cached), of class `class`.
fn warm(c: &mut Cache, class: u8) {
    for round in 0..2 {
        for i in 0..HOT {
            assert_eq!(read(c, k(1, i), class), round == 1);
        }
    }
}

fn hot_hits(c: &mut Cache, class: u8) -> u64 {
    (0..HOT).filter(|&i| read(c, k(1, i), class)).count() as u64
}

/// Runs a 1,000-block `scan` over a 100-entry cache after warming the hot set: under
/// `lru` the scan evicts all of the set, under `slru` none of it, under `clock-pro` all
/// but `clock_pro_loses` of it.
fn hot_set_after(clock_pro_loses: u64, scan: impl Fn(&mut Cache, u64)) {
    for (base, want) in [
        ("lru", 0),
        ("slru", HOT),
        ("clock-pro", HOT - clock_pro_loses),
    ] {
        let mut c = cache(&format!("base_list = \"{base}\""), Mode::Lru, 100);
        warm(&mut c, 2);
        for i in 0..1000 {
            scan(&mut c, i);
        }
        c.check().unwrap();
        assert_eq!(hot_hits(&mut c, 2), want, "{base}");
    }
}

#[test]
fn slru_and_clock_pro_keep_a_re_referenced_set_through_a_read_scan() {
    hot_set_after(0, |c, i| assert!(!read(c, k(2, i), 2), "a scan never hits"));
}

#[test]
fn slru_and_clock_pro_keep_a_re_referenced_set_through_a_write_scan() {
    // CLOCK-Pro loses one block of the set, once. The set is cold and referenced until a
    // hand passes; the writes fill the 70 empty entries without pressure (the 30 cold
    // blocks count as free), and the first eviction promotes the whole set, which leaves
    // no cold block: HAND_hot demotes one and it goes. That eviction brings pressure, so
    // the syncer cleans from then on and the scan reuses its own written-back blocks.
    hot_set_after(1, |c, i| {
        let w = c.write(k(2, i), 2, 4096);
        assert!(matches!(w, WriteOutcome::Ssd { .. }), "{w:?}");
        sync(c);
        assert_eq!(c.counters(2).bypassed_bytes, 0, "the syncer keeps up");
    });
}

#[test]
fn scan_resistant_bases_under_dss_keep_selective_eviction() {
    for base in ["slru", "clock-pro"] {
        selective_eviction_under(base);
    }
}

fn selective_eviction_under(base: &str) {
    let mut c = cache(&format!("base_list = \"{base}\""), Mode::Dss, 100);
    for (i, class) in [(0, 1), (1, 3), (2, 2), (3, 3), (4, 1)] {
        assert!(matches!(
            c.write(k(5, i), class, 4096),
            WriteOutcome::Ssd { .. }
        ));
    }
    let mut v = Vec::new();
    c.pick_flush(&mut v, 100, None);
    let order: Vec<u64> = v.iter().map(|v| v.key.index).collect();
    assert_eq!(
        order,
        vec![1, 3, 2, 0, 4],
        "lowest priority first, LRU within ({base})"
    );
}

#[test]
fn slru_protected_segment_is_capped_and_hands_back_its_oldest() {
    let mut c = cache(
        "base_list = \"slru\"\nprotected_fraction = 0.25",
        Mode::Lru,
        20,
    );
    for round in 0..2 {
        for i in 0..8 {
            assert_eq!(read(&mut c, k(1, i), 2), round == 1);
        }
    }
    assert_eq!(c.protected_entries(), 5);
    assert_eq!(c.free_entries(), 20, "protected entries are still free");
    // The three referenced first were demoted: a scan reuses them before the five.
    for i in 0..15 {
        read(&mut c, k(2, i), 2);
    }
    let kept: Vec<u64> = (0..8).filter(|&i| c.lookup(k(1, i)).is_some()).collect();
    assert_eq!(kept, vec![3, 4, 5, 6, 7]);
    c.check().unwrap();
}

#[test]
fn read_allocation_below_the_cutoff_only() {
    let mut c = cache("read_allocate = \"below-cutoff\"", Mode::Dss, 100);
    assert!(!c.syncer_active());
    assert_eq!(c.read(k(3, 0), 3), ReadOutcome::Miss, "past the cut-off");
    assert!(matches!(c.read(k(2, 0), 2), ReadOutcome::MissFill { .. }));
    let large = c.counters(3);
    assert_eq!((large.misses, large.bypassed_bytes), (1, 0));
    // Writes of that class are still cached while there is room.
    assert!(matches!(
        c.write(k(3, 1), 3, 4096),
        WriteOutcome::Ssd { .. }
    ));
    // lru mode has no cut-off, so it fills every read miss.
    let mut c = cache("read_allocate = \"below-cutoff\"", Mode::Lru, 100);
    assert!(matches!(c.read(k(3, 0), 3), ReadOutcome::MissFill { .. }));
    let mut c = cache("read_allocate = false", Mode::Dss, 100);
    assert_eq!(c.read(k(1, 0), 1), ReadOutcome::Miss);
}

#[test]
fn read_rule_keeps_large_reads_from_flushing_what_hits() {
    // A large class read once, after a smaller one that is read again: with fills of the
    // large class, the objects' blocks are evicted; without, they stay.
    for (rule, want) in [("true", 0), ("\"below-cutoff\"", HOT)] {
        let mut c = cache(&format!("read_allocate = {rule}"), Mode::Dss, 100);
        for i in 0..HOT {
            read(&mut c, k(1, i), 2);
        }
        for i in 0..500 {
            read(&mut c, k(9, i), 3);
        }
        assert_eq!(hot_hits(&mut c, 2), want, "read_allocate = {rule}");
        c.check().unwrap();
    }
}

#[test]
fn second_miss_fills_only_blocks_missed_twice() {
    let mut c = cache("read_allocate = \"second-miss\"", Mode::Dss, 100);
    assert_eq!(
        c.read(k(1, 0), 2),
        ReadOutcome::Miss,
        "first miss: remembered"
    );
    assert!(!read(&mut c, k(1, 0), 2), "second miss: filled");
    assert!(read(&mut c, k(1, 0), 2));
    // A scan read once never takes an entry.
    for i in 0..1000 {
        assert_eq!(c.read(k(2, i), 2), ReadOutcome::Miss);
    }
    assert_eq!(c.residents().count(), 1);
    assert!(read(&mut c, k(1, 0), 2));
    // Writes are cached as before.
    assert!(matches!(
        c.write(k(3, 0), 2, 4096),
        WriteOutcome::Ssd { .. }
    ));
    c.check().unwrap();
}

#[test]
fn second_miss_remembers_as_many_misses_as_the_cache_has_entries() {
    let mut c = cache("read_allocate = \"second-miss\"", Mode::Lru, 10);
    assert_eq!(c.read(k(1, 0), 2), ReadOutcome::Miss);
    for i in 0..9 {
        assert_eq!(c.read(k(2, i), 2), ReadOutcome::Miss);
    }
    assert!(
        matches!(c.read(k(1, 0), 2), ReadOutcome::MissFill { .. }),
        "within the last 10 misses"
    );
    assert_eq!(c.read(k(1, 1), 2), ReadOutcome::Miss);
    for i in 10..20 {
        assert_eq!(c.read(k(2, i), 2), ReadOutcome::Miss);
    }
    assert_eq!(
        c.read(k(1, 1), 2),
        ReadOutcome::Miss,
        "forgotten: first again"
    );
    assert!(matches!(c.read(k(1, 1), 2), ReadOutcome::MissFill { .. }));
}

#[test]
fn second_miss_keeps_a_hot_set_through_a_read_scan() {
    for (rule, want) in [("true", 0), ("\"second-miss\"", HOT)] {
        let mut c = cache(&format!("read_allocate = {rule}"), Mode::Lru, 100);
        for _ in 0..3 {
            for i in 0..HOT {
                read(&mut c, k(1, i), 2);
            }
        }
        for i in 0..1000 {
            read(&mut c, k(2, i), 2);
        }
        assert_eq!(hot_hits(&mut c, 2), want, "read_allocate = {rule}");
        c.check().unwrap();
    }
}

fn clock_pro(entries: u32) -> Cache {
    cache("base_list = \"clock-pro\"", Mode::Lru, entries)
}

fn slot_of(c: &Cache, key: BlockKey) -> u32 {
    c.lookup(key).expect("resident").0
}

#[test]
fn clock_pro_block_re_referenced_in_its_test_period_comes_back_hot() {
    let mut c = clock_pro(100);
    let (a, b) = (k(3, 0), k(3, 1));
    assert!(!read(&mut c, a, 2));
    assert!(!c.is_hot(slot_of(&c, a)), "a new block is cold");
    // A scan fills the cache and evicts `a` unreferenced: its key stays, non-resident.
    for i in 0..100 {
        read(&mut c, k(2, i), 2);
    }
    assert_eq!(c.lookup(a), None);
    let before = c.clock_pro().unwrap();
    assert!(before.nonresident >= 1);
    assert!(!read(&mut c, a, 2), "evicted, so a miss");
    assert!(c.is_hot(slot_of(&c, a)), "re-referenced in its test period");
    let after = c.clock_pro().unwrap();
    assert_eq!(after.cold_target, before.cold_target + 1, "m_c grows");
    assert_eq!(after.hot, 1);
    c.check().unwrap();

    // `b` is evicted too, but then more blocks are evicted than the cache has entries:
    // its test period is over and it comes back cold.
    assert!(!read(&mut c, b, 2));
    for i in 100..400 {
        read(&mut c, k(2, i), 2);
    }
    assert_eq!(c.lookup(b), None);
    assert!(!read(&mut c, b, 2));
    assert!(!c.is_hot(slot_of(&c, b)), "test period over");
    assert!(read(&mut c, a, 2), "the hot block stayed through the scans");
    c.check().unwrap();
}

#[test]
fn clock_pro_cold_block_referenced_while_resident_turns_hot_when_the_hand_reaches_it() {
    let mut c = clock_pro(10);
    for i in 0..10 {
        read(&mut c, k(1, i), 2);
    }
    // Written again, then clean again: a write is a reference too.
    assert!(matches!(
        c.write(k(1, 0), 2, 4096),
        WriteOutcome::Ssd { hit: true, .. }
    ));
    let mut v = Vec::new();
    c.pick_flush(&mut v, 10, None);
    for victim in &v {
        c.clean_done(victim, true);
    }
    assert!(read(&mut c, k(1, 1), 2));
    assert_eq!(
        c.clock_pro().unwrap().hot,
        0,
        "a bit only, until a hand sees it"
    );
    // The next miss sends HAND_cold on from where it started: block 1 turns hot and the
    // unreferenced block 2 is evicted instead. Block 0 re-entered the clock at the head
    // when it was cleaned, so the hand reaches it last.
    read(&mut c, k(2, 0), 2);
    assert!(c.is_hot(slot_of(&c, k(1, 1))));
    assert!(!c.is_hot(slot_of(&c, k(1, 0))));
    assert_eq!(c.lookup(k(1, 2)), None);
    // A round of the hand later, block 0 is hot too and both are still cached.
    for i in 1..=10 {
        read(&mut c, k(2, i), 2);
    }
    assert!(c.is_hot(slot_of(&c, k(1, 0))) && c.is_hot(slot_of(&c, k(1, 1))));
    assert_eq!(c.clock_pro().unwrap().hot, 2);
    assert_eq!(c.residents().count(), 10);
    c.check().unwrap();
}

#[test]
fn clock_pro_non_resident_entries_stay_bounded_by_the_cache_size() {
    for entries in [1, 7, 50] {
        let mut c = clock_pro(entries);
        for i in 0..10_000 {
            read(&mut c, k(2, i), 2);
            if i % 3 == 0 {
                // Some come back within their test period, some never.
                read(&mut c, k(2, i / 2), 2);
            }
            let s = c.clock_pro().unwrap();
            assert!(s.nonresident <= entries, "{s:?}");
            assert!(s.hot + s.cold <= entries);
        }
        c.check().unwrap();
    }
}

/// A loop over 120 blocks in a 100-entry cache: LRU always evicts the block about to be
/// read again, so after the first pass it never hits. CLOCK-Pro sees each block come back
/// within its test period, makes it hot and keeps the hot ones, so part of the loop hits.
#[test]
fn clock_pro_hits_on_a_loop_just_larger_than_the_cache_where_lru_does_not() {
    let hits = |base: &str| {
        let mut c = cache(&format!("base_list = \"{base}\""), Mode::Lru, 100);
        let mut hits = 0;
        for _ in 0..10 {
            for i in 0..120 {
                hits += u32::from(read(&mut c, k(4, i), 2));
            }
        }
        c.check().unwrap();
        hits
    };
    let (lru, clock_pro) = (hits("lru"), hits("clock-pro"));
    assert_eq!(lru, 0);
    assert!(clock_pro > lru, "lru {lru} clock-pro {clock_pro}");
}

/// Two files written block by block in turn (class 2), until pressure starts: the keys
/// of the syncer's victims, in the order it picks them.
fn victims_of_interleaved_files(options: &str) -> Vec<BlockKey> {
    let mut c = cache(options, Mode::Dss, 100);
    for i in 0..46 {
        for file in [7, 8] {
            assert!(matches!(
                c.write(k(file, i), 2, 4096),
                WriteOutcome::Ssd { .. }
            ));
        }
    }
    assert!(c.syncer_active());
    let mut v = Vec::new();
    c.pick_victims(&mut v, usize::MAX);
    c.check().unwrap();
    v.iter().map(|v| v.key).collect()
}

#[test]
fn write_back_by_file_takes_a_victims_dirty_neighbours_along() {
    // The paper's syncer: least recently written first, the two files alternating.
    let plain = victims_of_interleaved_files("");
    assert_eq!(plain[..4], [k(7, 0), k(8, 0), k(7, 1), k(8, 1)]);
    // Clustered: the oldest block brings the next 8 of its file, then the other file's.
    let clustered = victims_of_interleaved_files("writeback_cluster = 8");
    let want: Vec<BlockKey> = (0..9)
        .map(|i| k(7, i))
        .chain((0..9).map(|i| k(8, i)))
        .collect();
    assert_eq!(clustered[..18], want[..]);
    // Both stop where pressure ends: as many blocks in flight either way, give or take
    // the last cluster.
    assert!(clustered.len() >= plain.len() && clustered.len() < plain.len() + 9);
}

#[test]
fn write_back_by_file_stays_within_the_class_and_before_the_victim_too() {
    let mut c = cache("writeback_cluster = 16", Mode::Dss, 100);
    // Blocks 0-2 of file 7 in class 1 (priority 0), 3-9 in class 2; then filler.
    for i in 0..10 {
        c.write(k(7, i), if i < 3 { 1 } else { 2 }, 4096);
    }
    for i in 0..85 {
        c.write(k(9, i), 2, 4096);
    }
    let mut v = Vec::new();
    c.pick_victims(&mut v, usize::MAX);
    c.check().unwrap();
    let keys: Vec<BlockKey> = v.iter().map(|v| v.key).collect();
    // Class 2's oldest is file 7's block 3: it takes 4-9 after it, and nothing before
    // (block 2 is class 1, a higher priority, cleaned only after every lower one).
    assert_eq!(keys[..7], (3..10).map(|i| k(7, i)).collect::<Vec<_>>()[..]);
    assert!(!keys.contains(&k(7, 2)));
    // Backwards: a victim in the middle of a file takes its predecessors too.
    let mut c = cache("writeback_cluster = 4", Mode::Dss, 100);
    for i in [5, 4, 3, 2, 1, 0, 6, 7] {
        c.write(k(7, i), 2, 4096);
    }
    for i in 0..90 {
        c.write(k(9, i), 2, 4096);
    }
    let mut v = Vec::new();
    c.pick_victims(&mut v, usize::MAX);
    let keys: Vec<BlockKey> = v.iter().map(|v| v.key).collect();
    // Block 5 is the oldest: 6 and 7 after it, then 4 and 3 before it (4 in all).
    assert_eq!(keys[..5], [k(7, 5), k(7, 6), k(7, 7), k(7, 4), k(7, 3)]);
}

#[test]
fn write_back_cluster_is_checked_and_reloadable() {
    let text = |n: u32| {
        format!(
            "name = \"t\"\nlow_watermark = 0.1\nhigh_watermark = 0.2\n\
             default_priority = 11\nwriteback_cluster = {n}\n"
        )
    };
    let err = Policy::parse(&text(5000)).unwrap_err().to_string();
    assert!(
        err.contains("writeback_cluster 5000 must be at most 4096"),
        "{err}"
    );
    let p = Policy::parse(&text(16)).unwrap().resolve(None);
    assert_eq!(p.writeback_cluster, 16);
    let mut c = cache("", Mode::Dss, 100);
    c.set_policy(&p).unwrap();
    for i in 0..46 {
        for file in [7, 8] {
            c.write(k(file, i), 2, 4096);
        }
    }
    let mut v = Vec::new();
    c.pick_victims(&mut v, usize::MAX);
    assert_eq!(v[1].key, k(7, 1), "clustered after the reload");
}
