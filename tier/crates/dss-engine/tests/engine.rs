//! Behaviour of the cache engine alone: allocation, eviction order, watermarks, bypass,
//! two-phase fills and write-backs, modes.

use dss_engine::cache::{Config, Victim};
use dss_engine::{BlockKey, Cache, Mode, Policy, ReadOutcome, State, WriteOutcome};

/// Classes 1: priority 0, 2: priority 5, 3: priority 10 (bypasses under pressure),
/// 4: priority 5 but placed on the SSD in tiered mode.
const POLICY: &str = r#"
    name = "test"
    low_watermark = 0.25
    high_watermark = 0.5
    bypass_priority = 10
    default_priority = 11
    [[classes]]
    name = "meta"
    ids = 1
    priority = 0
    tier = "ssd"
    [[classes]]
    name = "mid"
    ids = 2
    priority = 5
    [[classes]]
    name = "large"
    ids = 3
    priority = 10
    [[classes]]
    name = "fast"
    ids = 4
    priority = 5
    tier = "ssd"
"#;

fn cache(mode: Mode, entries: u32, low: u32, high: u32) -> Cache {
    let p = Policy::parse(POLICY).unwrap().resolve(Some(mode));
    Cache::new(&p, Config { entries, low, high })
}

fn k(i: u64) -> BlockKey {
    BlockKey { file: 1, index: i }
}

fn slot(w: WriteOutcome) -> u32 {
    match w {
        WriteOutcome::Ssd { slot, .. } => slot,
        other => panic!("expected an SSD write, got {other:?}"),
    }
}

fn drain(c: &mut Cache, victims: &[Victim]) {
    for v in victims {
        c.clean_done(v, true);
    }
}

#[test]
fn writes_allocate_dirty_entries_and_hit_in_place() {
    let mut c = cache(Mode::Dss, 8, 1, 2);
    let s = slot(c.write(k(0), 2, 4096));
    assert_eq!(c.lookup(k(0)), Some((s, State::Dirty)));
    assert_eq!(
        c.write(k(0), 2, 100),
        WriteOutcome::Ssd { slot: s, hit: true }
    );
    assert_eq!(c.read(k(0), 2), ReadOutcome::Hit { slot: s });
    let cnt = c.counters(2);
    assert_eq!((cnt.dirty_blocks, cnt.clean_blocks, cnt.hits), (1, 0, 1));
    assert_eq!(c.free_entries(), 7);
    c.check().unwrap();
}

#[test]
fn syncer_starts_below_low_and_stops_at_high() {
    let mut c = cache(Mode::Dss, 8, 2, 4);
    for i in 0..6 {
        slot(c.write(k(i), 2, 4096));
        assert_eq!(c.syncer_active(), c.free_entries() < 2, "after write {i}");
    }
    assert!(
        !c.syncer_active(),
        "2 free entries is not below the low watermark"
    );
    slot(c.write(k(6), 2, 4096));
    assert!(c.syncer_active());
    let mut v = Vec::new();
    let n = c.pick_victims(&mut v, 100);
    assert_eq!(
        n, 3,
        "free (1) + in flight must reach the high watermark (4)"
    );
    assert_eq!(c.pick_victims(&mut v, 100), 0, "already enough in flight");
    c.clean_done(&v[0], true);
    c.clean_done(&v[1], true);
    assert!(
        c.syncer_active(),
        "3 free entries, still under the high watermark"
    );
    c.clean_done(&v[2], true);
    assert!(!c.syncer_active());
    assert_eq!(c.free_entries(), 4);
    assert_eq!(c.counters(2).written_back_blocks, 3);
    assert_eq!(c.counters(2).clean_blocks, 3);
    c.check().unwrap();
}

#[test]
fn selective_eviction_cleans_lowest_priority_first_lru_within() {
    let mut c = cache(Mode::Dss, 16, 1, 2);
    // Interleave classes; touch k(1) again so k(4) becomes the LRU of class 2.
    let order = [(0, 1), (1, 2), (2, 3), (3, 1), (4, 2), (5, 3), (6, 2)];
    for &(i, cls) in &order {
        slot(c.write(k(i), cls, 4096));
    }
    slot(c.write(k(1), 2, 4096));
    let mut v = Vec::new();
    c.pick_flush(&mut v, 100, None);
    let got: Vec<u64> = v.iter().map(|v| v.key.index).collect();
    assert_eq!(got, vec![2, 5, 4, 6, 1, 0, 3]);
    c.check().unwrap();
}

#[test]
fn lru_mode_ignores_classes_when_evicting() {
    let mut c = cache(Mode::Lru, 16, 1, 2);
    for &(i, cls) in &[(0, 1), (1, 3), (2, 2), (3, 1)] {
        slot(c.write(k(i), cls, 4096));
    }
    c.read(k(0), 1);
    let mut v = Vec::new();
    c.pick_flush(&mut v, 100, None);
    let got: Vec<u64> = v.iter().map(|v| v.key.index).collect();
    assert_eq!(got, vec![1, 2, 3, 0]);
}

#[test]
fn free_list_reuses_least_recently_used_clean_entry() {
    let mut c = cache(Mode::Lru, 3, 0, 1);
    let slots: Vec<u32> = (0..3).map(|i| slot(c.write(k(i), 2, 4096))).collect();
    let mut v = Vec::new();
    c.pick_flush(&mut v, 100, None);
    drain(&mut c, &v);
    // Clean, in cleaning order 0, 1, 2; a read of k(0) makes k(1) the LRU clean entry.
    assert_eq!(c.read(k(0), 2), ReadOutcome::Hit { slot: slots[0] });
    let s = slot(c.write(k(10), 2, 4096));
    assert_eq!(s, slots[1]);
    assert_eq!(c.lookup(k(1)), None);
    assert_eq!(c.counters(2).evicted_blocks, 1);
    assert!(matches!(
        c.read(k(1), 2),
        ReadOutcome::MissFill { .. } | ReadOutcome::Miss
    ));
    c.check().unwrap();
}

#[test]
fn selective_allocation_bypasses_low_priority_only_under_pressure() {
    let mut c = cache(Mode::Dss, 8, 3, 5);
    for i in 0..5 {
        slot(c.write(k(i), 3, 4096));
    }
    assert!(!c.syncer_active());
    assert_eq!(
        c.write(k(5), 3, 4096),
        WriteOutcome::Ssd {
            slot: 5,
            hit: false
        }
    );
    assert!(c.syncer_active());
    assert_eq!(c.write(k(6), 3, 1000), WriteOutcome::Hdd { bypassed: true });
    assert_eq!(c.counters(3).bypassed_bytes, 1000);
    assert!(
        matches!(c.write(k(7), 2, 4096), WriteOutcome::Ssd { .. }),
        "priority 5 still cached"
    );
    // Unclassified (priority 11) bypasses too, read fills as well.
    assert_eq!(c.write(k(8), 0, 4096), WriteOutcome::Hdd { bypassed: true });
    assert_eq!(c.read(k(9), 3), ReadOutcome::Miss);
    // A clean copy of a bypassing class is dropped by a write rather than dirtied.
    let mut v = Vec::new();
    c.pick_victims(&mut v, 100);
    assert!(
        v.iter().all(|v| v.class == 3),
        "the lowest priority goes first"
    );
    drain(&mut c, &v[..1]);
    let cleaned = v[0].key;
    assert_eq!(c.lookup(cleaned).map(|x| x.1), Some(State::Clean));
    assert_eq!(
        c.write(cleaned, 3, 4096),
        WriteOutcome::Hdd { bypassed: true }
    );
    assert_eq!(c.lookup(cleaned), None);
    drain(&mut c, &v[1..]);
    c.check().unwrap();
}

/// Pressure is the free-entry count with hysteresis, not the syncer's doing: it starts
/// when the free entries drop below the low watermark, holds while they are between the
/// watermarks, and ends at the high one, here reached by discards with no syncer at all.
#[test]
fn bypass_follows_the_watermarks_without_a_syncer() {
    let mut c = cache(Mode::Dss, 10, 3, 6);
    for i in 0..8 {
        slot(c.write(k(i), 2, 4096));
    }
    assert_eq!(c.free_entries(), 2);
    assert!(c.syncer_active());
    let low = |c: &mut Cache, i| c.write(k(i), 3, 4096);
    assert_eq!(low(&mut c, 100), WriteOutcome::Hdd { bypassed: true });
    c.discard(k(0));
    c.discard(k(1));
    c.discard(k(2));
    assert_eq!(c.free_entries(), 5);
    assert!(
        c.syncer_active(),
        "between the watermarks: still under pressure"
    );
    assert_eq!(low(&mut c, 101), WriteOutcome::Hdd { bypassed: true });
    assert!(
        matches!(c.write(k(102), 1, 4096), WriteOutcome::Ssd { .. }),
        "the high class is allocated under pressure"
    );
    c.discard(k(102));
    c.discard(k(3));
    assert_eq!(c.free_entries(), 6);
    assert!(!c.syncer_active());
    assert!(matches!(low(&mut c, 103), WriteOutcome::Ssd { .. }));
    assert_eq!(c.counters(3).bypassed_bytes, 2 * 4096);
    assert_eq!(
        c.counters(1).bypassed_bytes + c.counters(2).bypassed_bytes,
        0
    );
    c.check().unwrap();
}

#[test]
fn full_cache_sends_even_high_priority_to_the_hdd() {
    let mut c = cache(Mode::Ssd, 4, 1, 2);
    for i in 0..4 {
        assert_eq!(c.lookup(k(i)), None);
        slot(c.write(k(i), 1, 4096));
        assert_eq!(c.lookup(k(i)).unwrap().1, State::Pinned);
    }
    let mut v = Vec::new();
    assert_eq!(
        c.pick_victims(&mut v, 10),
        0,
        "pinned blocks are never written back"
    );
    assert_eq!(c.write(k(9), 1, 4096), WriteOutcome::Hdd { bypassed: true });
    assert_eq!(c.pinned_entries(), 4);
    c.check().unwrap();
}

/// An LRU cache of four entries whose every entry holds a dirty block.
fn full_of_dirty(options: &str) -> Cache {
    let text = format!("{options}\n{POLICY}");
    let p = Policy::parse(&text).unwrap().resolve(Some(Mode::Lru));
    let mut c = Cache::new(
        &p,
        Config {
            entries: 4,
            low: 1,
            high: 2,
        },
    );
    for i in 0..4 {
        slot(c.write(k(i), 2, 4096));
    }
    assert_eq!(c.dirty_entries(), 4);
    c
}

#[test]
fn a_write_that_finds_only_dirty_entries_waits_for_the_syncer() {
    let mut c = full_of_dirty("");
    assert!(c.must_wait(k(9), 2, false));
    // A resident block is written in place, even behind other waiting writers.
    assert!(!c.must_wait(k(0), 2, false));
    assert!(!c.must_wait(k(0), 2, true));
    // Once the syncer has cleaned a batch, the write takes a cleaned entry...
    let mut v = Vec::new();
    c.pick_victims(&mut v, 1);
    assert!(c.must_wait(k(9), 2, false), "in flight is not yet free");
    drain(&mut c, &v);
    assert!(!c.must_wait(k(9), 2, false));
    // ... unless writers queued before it are owed that entry.
    assert!(c.must_wait(k(9), 2, true));
    slot(c.write(k(9), 2, 4096));
    assert_eq!(c.counters(2).bypassed_bytes, 0);
    c.check().unwrap();
}

#[test]
fn write_around_sends_the_block_to_the_hdd_when_only_dirty_entries_are_left() {
    let mut c = full_of_dirty("when_full = \"write-around\"");
    assert!(!c.must_wait(k(9), 2, false));
    assert!(!c.must_wait(k(9), 2, true));
    assert_eq!(c.write(k(9), 2, 4096), WriteOutcome::Hdd { bypassed: true });
    assert_eq!(c.counters(2).bypassed_bytes, 4096);
    let err = Policy::parse(&format!("when_full = \"block\"\n{POLICY}")).unwrap_err();
    assert!(err.to_string().contains("wait"), "{err}");
}

#[test]
fn a_cache_of_pinned_blocks_never_waits_since_nothing_will_be_written_back() {
    let mut c = cache(Mode::Ssd, 4, 1, 2);
    for i in 0..4 {
        slot(c.write(k(i), 1, 4096));
    }
    assert!(!c.must_wait(k(9), 1, false));
}

#[test]
fn read_miss_fills_and_a_racing_write_cancels_the_fill() {
    let mut c = cache(Mode::Dss, 8, 1, 2);
    let ReadOutcome::MissFill { slot: s, version } = c.read(k(0), 2) else {
        panic!("read miss should be allocated")
    };
    assert_eq!(
        c.read(k(0), 2),
        ReadOutcome::Miss,
        "a filling block is not servable"
    );
    c.fill_done(s, version, true);
    assert_eq!(c.read(k(0), 2), ReadOutcome::Hit { slot: s });
    assert_eq!(c.counters(2).clean_blocks, 1);

    let ReadOutcome::MissFill {
        slot: s1,
        version: v1,
    } = c.read(k(1), 2)
    else {
        panic!()
    };
    let s2 = slot(c.write(k(1), 2, 4096));
    assert_ne!(
        s1, s2,
        "the write may not share a slot the stale fill will land in"
    );
    c.fill_done(s1, v1, true);
    assert_eq!(c.lookup(k(1)), Some((s2, State::Dirty)));
    assert_eq!(c.read(k(1), 2), ReadOutcome::Hit { slot: s2 });
    c.check().unwrap();

    let ReadOutcome::MissFill {
        slot: s3,
        version: v3,
    } = c.read(k(2), 2)
    else {
        panic!()
    };
    c.fill_done(s3, v3, false);
    assert_eq!(c.lookup(k(2)), None, "a failed fill leaves nothing behind");
    c.check().unwrap();
}

#[test]
fn rewritten_or_discarded_while_cleaning() {
    let mut c = cache(Mode::Dss, 8, 1, 2);
    for i in 0..3 {
        slot(c.write(k(i), 2, 4096));
    }
    let mut v = Vec::new();
    c.pick_flush(&mut v, 3, None);
    assert_eq!(v.len(), 3);
    slot(c.write(k(0), 2, 4096));
    c.discard(k(1));
    c.clean_done(&v[0], true);
    c.clean_done(&v[1], true);
    c.clean_done(&v[2], false);
    assert_eq!(
        c.lookup(k(0)).unwrap().1,
        State::Dirty,
        "rewritten in flight: still dirty"
    );
    assert_eq!(c.lookup(k(1)), None);
    assert_eq!(
        c.lookup(k(2)).unwrap().1,
        State::Dirty,
        "failed write-back: still dirty"
    );
    assert_eq!(c.counters(2).written_back_blocks, 0);
    assert_eq!(c.free_entries(), 6);
    c.check().unwrap();
}

#[test]
fn reclassify_moves_accounting_and_eviction_order() {
    let mut c = cache(Mode::Dss, 8, 7, 8);
    slot(c.write(k(0), 3, 4096));
    slot(c.write(k(1), 2, 4096));
    c.reclassify(k(0), 1);
    assert_eq!(c.counters(3).dirty_blocks, 0);
    assert_eq!(c.counters(1).dirty_blocks, 1);
    let mut v = Vec::new();
    c.pick_flush(&mut v, 1, None);
    assert_eq!(v[0].key, k(1), "k(0) now has the highest priority");
    c.reclassify(k(42), 1);
    c.check().unwrap();
}

#[test]
fn tiered_mode_places_by_class() {
    let mut c = cache(Mode::Tiered, 8, 1, 2);
    assert_eq!(
        c.write(k(0), 2, 4096),
        WriteOutcome::Hdd { bypassed: false }
    );
    slot(c.write(k(1), 4, 4096));
    assert_eq!(c.lookup(k(1)).unwrap().1, State::Pinned);
    assert_eq!(
        c.read(k(0), 2),
        ReadOutcome::Miss,
        "no read caching in tiered mode"
    );
    // Moving a block to an HDD class makes it dirty so the syncer migrates it, and
    // once written back it leaves the SSD.
    c.reclassify(k(1), 2);
    let mut v = Vec::new();
    c.pick_flush(&mut v, 10, None);
    assert_eq!(v.len(), 1);
    c.clean_done(&v[0], true);
    assert_eq!(c.lookup(k(1)), None);
    assert_eq!(c.free_entries(), 8);
    c.check().unwrap();
}

#[test]
fn hdd_mode_never_touches_the_ssd() {
    let mut c = cache(Mode::Hdd, 8, 1, 2);
    for cls in 0..=4 {
        assert_eq!(
            c.write(k(cls), cls as u8, 4096),
            WriteOutcome::Hdd { bypassed: false }
        );
        assert_eq!(c.read(k(cls), cls as u8), ReadOutcome::Miss);
    }
    assert_eq!(c.free_entries(), 8);
}

#[test]
fn flush_of_one_file_and_discard_of_a_range() {
    let mut c = cache(Mode::Dss, 16, 1, 2);
    for i in 0..4 {
        slot(c.write(BlockKey { file: 1, index: i }, 2, 4096));
        slot(c.write(BlockKey { file: 2, index: i }, 2, 4096));
    }
    let mut v = Vec::new();
    assert_eq!(c.pick_flush(&mut v, 100, Some(2)), 4);
    assert!(v.iter().all(|v| v.key.file == 2));
    drain(&mut c, &v);
    c.discard_from(1, 2, u64::MAX);
    assert!(c.lookup(BlockKey { file: 1, index: 1 }).is_some());
    assert!(c.lookup(BlockKey { file: 1, index: 2 }).is_none());
    c.discard_from(2, 0, 2);
    assert!(c.lookup(BlockKey { file: 2, index: 1 }).is_none());
    assert!(c.lookup(BlockKey { file: 2, index: 2 }).is_some());
    assert_eq!(c.residents().count(), 4);
    c.check().unwrap();
}

#[test]
fn flush_of_a_range_walks_it_once_in_batches() {
    let mut c = cache(Mode::Dss, 64, 1, 2);
    for i in 0..10 {
        slot(c.write(BlockKey { file: 1, index: i }, 2, 4096));
        slot(c.write(BlockKey { file: 2, index: i }, 2, 4096));
    }
    let mut v = Vec::new();
    let mut range = 2..8;
    assert_eq!(c.pick_flush_range(&mut v, 4, 2, &mut range), 4);
    assert_eq!(range, 6..8);
    assert_eq!(c.pick_flush_range(&mut v, 4, 2, &mut range), 2);
    assert!(range.is_empty());
    assert_eq!(c.pick_flush_range(&mut v, 4, 2, &mut range), 0);
    let picked: Vec<(u64, u64)> = v.iter().map(|v| (v.key.file, v.key.index)).collect();
    assert_eq!(picked, (2..8).map(|i| (2, i)).collect::<Vec<_>>());
    drain(&mut c, &v);
    // Blocks outside the range and of the other file are still dirty.
    assert_eq!(c.dirty_entries(), 20 - 6);
    // A range wider than the cache falls back to a scan and still finds every block.
    v.clear();
    let mut all = 0..u64::MAX;
    assert_eq!(c.pick_flush_range(&mut v, 100, 2, &mut all), 4);
    assert!(all.is_empty());
    assert!(v.iter().all(|v| v.key.file == 2));
    drain(&mut c, &v);
    c.check().unwrap();
}

#[test]
fn restore_rebuilds_state() {
    let mut c = cache(Mode::Dss, 4, 1, 2);
    assert!(c.restore(2, k(5), 2, true));
    assert!(c.restore(3, k(6), 3, false));
    assert!(!c.restore(2, k(7), 2, true), "slot taken");
    assert!(!c.restore(0, k(5), 2, true), "block already mapped");
    assert!(!c.restore(9, k(8), 2, true), "slot out of range");
    assert_eq!(c.lookup(k(5)), Some((2, State::Dirty)));
    assert_eq!(c.lookup(k(6)), Some((3, State::Clean)));
    // Slots 0 and 1 are still free and come first.
    let s = slot(c.write(k(0), 2, 4096));
    assert!(s < 2);
    c.check().unwrap();
}
