//! The policies shipped in policies/ parse and say what the papers say.

use dss_engine::cache::Config;
use dss_engine::{BaseList, BlockKey, Cache, Mode, Placement, Policy, ReadAllocate, WriteOutcome};

const REFERENCE: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/reference.toml"));
const LRU: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/lru.toml"));
const DSS_SLRU: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-slru.toml"));
const DSS_READCUT: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-readcut.toml"));
const DSS_SLRU_READCUT: &str =
    include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-slru-readcut.toml"));
const SLRU: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/slru.toml"));
const DSS_SECONDMISS: &str =
    include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-secondmiss.toml"));
const DSS_CLOCKPRO: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-clockpro.toml"));

#[test]
fn reference_is_table_ii() {
    let r = Policy::parse(REFERENCE).unwrap().resolve(None);
    assert_eq!(r.mode, Mode::Dss);
    let prio = |c: usize| r.classes[c].priority;
    assert!((1..=10).all(|c| prio(c) == 0), "FS metadata");
    assert!((11..=14).all(|c| prio(c) == 1), "files <= 256 KB");
    assert!(
        (24..=31).all(|c| prio(c) == (c - 22) as u8),
        "USER0-USER7 -> 2-9"
    );
    assert!((15..=22).all(|c| prio(c) == 10), "files > 256 KB");
    assert_eq!(prio(0), 11, "unclassified");
    assert_eq!(r.bypass_priority, Some(9), "USER7 and below are fenced off");
}

/// The paper's selective allocation with the reference policy: once the free entries
/// are below the low watermark, large objects (USER7), large files and unclassified data
/// go to the HDD, while metadata, small files and the other user classes are still
/// cached. Nothing here runs a syncer: pressure comes from the free entries alone.
#[test]
fn reference_fences_off_large_objects_under_pressure() {
    let r = Policy::parse(REFERENCE).unwrap().resolve(None);
    let mut cache = Cache::new(&r, Config::from_fractions(100, 0.05, 0.15));
    let cfg = cache.config();
    assert_eq!((cfg.low, cfg.high), (5, 15));
    let key = |file: u64, index: u64| BlockKey { file, index };
    // No pressure yet: even the largest class is cached.
    assert!(matches!(
        cache.write(key(31, 0), 31, 4096),
        WriteOutcome::Ssd { .. }
    ));
    for i in 0..94 {
        assert!(matches!(
            cache.write(key(24, i), 24, 4096),
            WriteOutcome::Ssd { .. }
        ));
    }
    assert_eq!(cache.free_entries(), 5);
    assert!(
        !cache.syncer_active(),
        "5 free is not below the low watermark"
    );
    assert!(matches!(
        cache.write(key(31, 1), 31, 4096),
        WriteOutcome::Ssd { .. }
    ));
    assert!(cache.syncer_active());
    for class in [31u8, 15, 22, 0] {
        assert_eq!(
            cache.write(key(u64::from(class), 100), class, 4096),
            WriteOutcome::Hdd { bypassed: true },
            "class {class}"
        );
        assert_eq!(cache.counters(class).bypassed_bytes, 4096);
    }
    for class in [30u8, 24, 11, 2] {
        assert!(
            matches!(
                cache.write(key(u64::from(class), 200), class, 4096),
                WriteOutcome::Ssd { .. }
            ),
            "class {class} is still allocated"
        );
        assert_eq!(cache.counters(class).bypassed_bytes, 0);
    }
    cache.check().unwrap();
}

#[test]
fn reference_classifies_unclassified_io() {
    let p = Policy::parse(REFERENCE).unwrap();
    let r = p.resolve(None);
    let c = &p.classify;
    for meta in [c.journal, c.inode, c.directory, c.xattr] {
        assert_eq!(r.classes[meta as usize].priority, 0);
    }
    assert_eq!(
        r.classes[c.file_class("container.db", 50 << 20) as usize].priority,
        0
    );
    assert_eq!(
        r.classes[c.file_class("1.data", 256 << 10) as usize].priority,
        1
    );
    assert_eq!(
        r.classes[c.file_class("1.data", (256 << 10) + 1) as usize].priority,
        10
    );
    assert_eq!(c.file_class("1.data", 1 << 40), 22);
}

#[test]
fn lru_policy_is_class_blind_in_every_caching_mode() {
    let p = Policy::parse(LRU).unwrap();
    for mode in [None, Some(Mode::Dss), Some(Mode::Lru)] {
        let r = p.resolve(mode);
        assert!(
            r.classes
                .iter()
                .all(|c| c.priority == 0 && c.placement == Placement::Cache)
        );
        assert_eq!(r.bypass_priority, None);
        // Under pressure every class is still allocated.
        let mut cache = Cache::new(
            &r,
            Config {
                entries: 4,
                low: 3,
                high: 4,
            },
        );
        for i in 0..4u64 {
            let w = cache.write(
                BlockKey { file: 1, index: i },
                [0, 22, 31, 1][i as usize],
                4096,
            );
            assert!(matches!(w, WriteOutcome::Ssd { .. }), "{w:?}");
        }
    }
}

#[test]
fn reference_tiered_sends_small_and_important_data_to_the_ssd() {
    let r = Policy::parse(REFERENCE)
        .unwrap()
        .resolve(Some(Mode::Tiered));
    assert_eq!(r.classes[3].placement, Placement::Ssd);
    assert_eq!(r.classes[12].placement, Placement::Ssd);
    assert_eq!(r.classes[20].placement, Placement::Hdd);
    assert_eq!(r.classes[0].placement, Placement::Hdd);
    assert_eq!(r.classes[200].placement, Placement::Hdd);
}

/// The policies beyond the paper are their base policy with only the named options
/// changed, so their runs compare with the base's class for class.
#[test]
fn variants_change_only_their_options() {
    let reference = Policy::parse(REFERENCE).unwrap();
    let lru = Policy::parse(LRU).unwrap();
    for (text, base, list, read) in [
        (DSS_SLRU, &reference, BaseList::Slru, ReadAllocate::Always),
        (
            DSS_READCUT,
            &reference,
            BaseList::Lru,
            ReadAllocate::BelowCutoff,
        ),
        (
            DSS_SLRU_READCUT,
            &reference,
            BaseList::Slru,
            ReadAllocate::BelowCutoff,
        ),
        (SLRU, &lru, BaseList::Slru, ReadAllocate::Always),
        (
            DSS_SECONDMISS,
            &reference,
            BaseList::Lru,
            ReadAllocate::SecondMiss,
        ),
        (
            DSS_CLOCKPRO,
            &reference,
            BaseList::ClockPro,
            ReadAllocate::Always,
        ),
    ] {
        let p = Policy::parse(text).unwrap();
        assert_eq!((p.base_list, p.read_allocate), (list, read), "{}", p.name);
        let mut same = p.clone();
        same.name = base.name.clone();
        same.base_list = base.base_list;
        same.read_allocate = base.read_allocate;
        same.protected_fraction = base.protected_fraction;
        assert_eq!(format!("{same:?}"), format!("{base:?}"), "{}", p.name);
    }
}

const DSS_CLUSTER: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/dss-cluster.toml"));
const LRU_CLUSTER: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/lru-cluster.toml"));

/// The write-back-by-file variants change that and nothing else.
#[test]
fn cluster_variants_are_their_bases_with_write_back_by_file() {
    for (variant, base) in [(DSS_CLUSTER, REFERENCE), (LRU_CLUSTER, LRU)] {
        let v = Policy::parse(variant).unwrap().resolve(None);
        let b = Policy::parse(base).unwrap().resolve(None);
        assert_eq!((v.writeback_cluster, b.writeback_cluster), (256, 0));
        assert_eq!(v.classes, b.classes);
        assert_eq!(
            (v.mode, v.bypass_priority, v.read_allocate, v.base_list),
            (b.mode, b.bypass_priority, b.read_allocate, b.base_list)
        );
        assert_eq!(
            (v.low_watermark, v.high_watermark),
            (b.low_watermark, b.high_watermark)
        );
        assert_eq!(
            format!("{:?}", Policy::parse(variant).unwrap().classify),
            format!("{:?}", Policy::parse(base).unwrap().classify)
        );
    }
}
