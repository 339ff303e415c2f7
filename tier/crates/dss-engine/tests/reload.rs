//! A running cache taking a new policy (`Cache::set_policy`): priorities and placement
//! change, the blocks it holds stay valid, and a policy it cannot take changes nothing.

use dss_engine::cache::Victim;
use dss_engine::{BlockKey, Cache, Mode, Policy, ReadOutcome, State, WriteOutcome};

/// Class 2 at priority 5, class 3 at 10 (bypassed under pressure), class 4 at 5 and
/// placed on the SSD in tiered mode.
const OLD: &str = r#"
    name = "old"
    low_watermark = 0.25
    high_watermark = 0.5
    bypass_priority = 10
    default_priority = 11
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

fn policy(text: &str, mode: Option<Mode>) -> dss_engine::Resolved {
    Policy::parse(text).unwrap().resolve(mode)
}

/// Classes 2 and 3 swap priorities, nothing bypasses, class 4 goes to the HDD tier.
fn new_policy() -> String {
    OLD.replace("name = \"old\"", "name = \"new\"")
        .replace("bypass_priority = 10\n", "")
        .replace("ids = 2\n    priority = 5", "ids = 2\n    priority = 10")
        .replace("ids = 3\n    priority = 10", "ids = 3\n    priority = 5")
        .replace("tier = \"ssd\"", "tier = \"hdd\"")
}

fn cache(mode: Mode) -> Cache {
    let p = policy(OLD, Some(mode));
    Cache::new(&p, p.cache_config(16 * 4096))
}

fn k(file: u64, index: u64) -> BlockKey {
    BlockKey { file, index }
}

fn slot(w: WriteOutcome) -> u32 {
    match w {
        WriteOutcome::Ssd { slot, .. } => slot,
        other => panic!("expected an SSD write, got {other:?}"),
    }
}

/// Every dirty block's class, in the order a flush picks them.
fn flush_order(c: &mut Cache) -> Vec<u8> {
    let mut v: Vec<Victim> = Vec::new();
    c.pick_flush(&mut v, 64, None);
    v.iter().map(|v| v.class).collect()
}

#[test]
fn priorities_change_and_cached_blocks_stay() {
    let mut c = cache(Mode::Dss);
    let a = slot(c.write(k(1, 0), 2, 4096));
    let b = slot(c.write(k(2, 0), 3, 4096));
    let d = slot(c.write(k(2, 1), 3, 4096));
    c.set_policy(&policy(&new_policy(), None)).unwrap();
    c.check().unwrap();
    assert_eq!(c.class_policy(2).priority, 10);
    assert_eq!(c.class_policy(3).priority, 5);
    for (key, s) in [(k(1, 0), a), (k(2, 0), b), (k(2, 1), d)] {
        assert_eq!(c.lookup(key), Some((s, State::Dirty)));
        assert_eq!(c.read(key, 0), ReadOutcome::Hit { slot: s });
    }
    assert_eq!(c.counters(3).dirty_blocks, 2);
    // Class 2 is the lowest priority now: it is written back first.
    assert_eq!(flush_order(&mut c), vec![2, 3, 3]);
    c.check().unwrap();
}

#[test]
fn placement_changes_pin_and_unpin() {
    let mut c = cache(Mode::Tiered);
    let s = slot(c.write(k(1, 0), 4, 4096));
    assert_eq!(c.lookup(k(1, 0)), Some((s, State::Pinned)));
    assert!(flush_order(&mut c).is_empty());
    // Back to an SSD cache in front of the HDD: the block must reach the HDD some day.
    c.set_policy(&policy(OLD, Some(Mode::Dss))).unwrap();
    c.check().unwrap();
    assert_eq!(c.lookup(k(1, 0)), Some((s, State::Dirty)));
    assert_eq!(c.pinned_entries(), 0);
    // And to SSD-only again: dirty blocks are kept on the SSD from now on.
    c.set_policy(&policy(OLD, Some(Mode::Ssd))).unwrap();
    c.check().unwrap();
    assert_eq!(c.lookup(k(1, 0)), Some((s, State::Pinned)));
    assert_eq!(c.counters(4).dirty_blocks, 1);
}

#[test]
fn a_block_in_flight_lands_under_the_new_table() {
    let mut c = cache(Mode::Dss);
    slot(c.write(k(1, 0), 2, 4096));
    let mut v = Vec::new();
    c.pick_flush(&mut v, 8, None);
    c.set_policy(&policy(OLD, Some(Mode::Hdd))).unwrap();
    c.clean_done(&v[0], true);
    c.check().unwrap();
    // Written back under a table that caches nothing: it leaves instead of staying clean.
    assert_eq!(c.lookup(k(1, 0)), None);
    assert_eq!(c.counters(2).written_back_blocks, 1);
}

#[test]
fn the_cut_off_follows_the_policy() {
    let mut c = cache(Mode::Dss);
    // Fill past the low watermark with dirty blocks: pressure.
    for i in 0..14 {
        slot(c.write(k(1, i), 2, 4096));
    }
    assert!(c.syncer_active());
    assert_eq!(
        c.write(k(2, 0), 3, 4096),
        WriteOutcome::Hdd { bypassed: true }
    );
    c.set_policy(&policy(&new_policy(), None)).unwrap();
    // Class 3 no longer bypasses (no cut-off at all now).
    slot(c.write(k(2, 1), 3, 4096));
    c.check().unwrap();
}

#[test]
fn watermarks_move_pressure() {
    let mut c = cache(Mode::Dss);
    for i in 0..10 {
        slot(c.write(k(1, i), 2, 4096));
    }
    assert!(!c.syncer_active(), "6 of 16 free, low watermark 4");
    let high = OLD
        .replace("low_watermark = 0.25", "low_watermark = 0.5")
        .replace("high_watermark = 0.5", "high_watermark = 0.75");
    c.set_policy(&policy(&high, None)).unwrap();
    assert_eq!((c.config().low, c.config().high), (8, 12));
    assert!(c.syncer_active(), "6 free is under the new low watermark");
    let mut v = Vec::new();
    assert_eq!(c.pick_victims(&mut v, 64), 6);
}

#[test]
fn a_policy_that_changes_the_cache_shape_is_refused_and_changes_nothing() {
    let mut c = cache(Mode::Dss);
    let s = slot(c.write(k(1, 0), 3, 4096));
    for (bad, what) in [
        ("block_size = 8192", "block_size"),
        ("base_list = \"slru\"", "base_list"),
    ] {
        let text = new_policy().replace("name = \"new\"", &format!("name = \"new\"\n{bad}"));
        let err = c.set_policy(&policy(&text, None)).unwrap_err();
        assert!(err.0.contains(what), "{err}");
        assert_eq!(c.class_policy(3).priority, 10, "old table kept");
        assert_eq!(c.lookup(k(1, 0)), Some((s, State::Dirty)));
        c.check().unwrap();
    }
    let clock = |high: &str| {
        let text = OLD
            .replace(
                "name = \"old\"",
                "name = \"old\"\nbase_list = \"clock-pro\"",
            )
            .replace("high_watermark = 0.5", high);
        policy(&text, None)
    };
    let old = clock("high_watermark = 0.5");
    let mut c = Cache::new(&old, old.cache_config(16 * 4096));
    assert!(c.set_policy(&clock("high_watermark = 0.5")).is_ok());
    let wm = clock("high_watermark = 0.75");
    assert!(c.set_policy(&wm).unwrap_err().0.contains("watermarks"));
}

#[test]
fn reset_counters_zeroes_activity_not_content() {
    let mut c = cache(Mode::Dss);
    let s = slot(c.write(k(1, 0), 2, 4096));
    assert_eq!(c.read(k(1, 0), 2), ReadOutcome::Hit { slot: s });
    assert!(matches!(c.read(k(1, 1), 2), ReadOutcome::MissFill { .. }));
    c.reset_counters();
    let n = c.counters(2);
    assert_eq!((n.hits, n.misses, n.dirty_blocks), (0, 0, 1));
    c.check().unwrap();
}

#[test]
fn only_a_table_with_every_class_on_the_hdd_leaves_no_data_decision() {
    for (mode, all_hdd) in [
        (Mode::Hdd, true),
        (Mode::Ssd, false),
        (Mode::Lru, false),
        (Mode::Dss, false),
        (Mode::Tiered, false),
    ] {
        assert_eq!(cache(mode).places_all_on_hdd(), all_hdd, "{mode:?}");
    }
    // A reload moves it either way.
    let mut c = cache(Mode::Dss);
    c.set_policy(&policy(OLD, Some(Mode::Hdd))).unwrap();
    assert!(c.places_all_on_hdd());
    c.set_policy(&policy(OLD, Some(Mode::Lru))).unwrap();
    assert!(!c.places_all_on_hdd());
}
