//! Random operation sequences against a model of the two devices' contents. The engine's
//! answers are carried out on the model exactly as the daemon would (including fills and
//! write-backs that land late), and after every step:
//! - every read is served the newest data (never a stale copy);
//! - a clean block equals the HDD's copy, a dirty one is the newest and only copy;
//! - the engine's lists and counters add up (`Cache::check`);
//! - write-back victims come lowest priority first;
//! - under pressure, bypassing classes never get a new entry.

use dss_engine::cache::{Config, Victim};
use dss_engine::{BlockKey, Cache, Mode, Placement, Policy, ReadOutcome, State, WriteOutcome};
use proptest::prelude::*;
use std::collections::HashMap;

const POLICY: &str = r#"
    name = "prop"
    low_watermark = 0.2
    high_watermark = 0.4
    bypass_priority = 8
    default_priority = 11
    [[classes]]
    name = "a"
    ids = 1
    priority = 0
    tier = "ssd"
    [[classes]]
    name = "b"
    ids = 2
    priority = 4
    [[classes]]
    name = "c"
    ids = 3
    priority = 8
    [[classes]]
    name = "d"
    ids = 4
    priority = 4
    tier = "ssd"
"#;

#[derive(Clone, Debug)]
enum Op {
    Write(u64, u8),
    Read(u64, u8),
    Reclassify(u64, u8),
    Discard(u64),
    FinishFill(usize, bool),
    Sync(usize),
    Flush(usize),
    FinishClean(usize, bool),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u64..24;
    let class = 0u8..5;
    prop_oneof![
        6 => (key.clone(), class.clone()).prop_map(|(k, c)| Op::Write(k, c)),
        4 => (key.clone(), class.clone()).prop_map(|(k, c)| Op::Read(k, c)),
        1 => (key.clone(), class).prop_map(|(k, c)| Op::Reclassify(k, c)),
        1 => key.prop_map(Op::Discard),
        2 => (0usize..4, prop::bool::weighted(0.9)).prop_map(|(i, ok)| Op::FinishFill(i, ok)),
        2 => (1usize..6).prop_map(Op::Sync),
        1 => (1usize..4).prop_map(Op::Flush),
        3 => (0usize..6, prop::bool::weighted(0.9)).prop_map(|(i, ok)| Op::FinishClean(i, ok)),
    ]
}

/// Top-level policy options beyond the paper, prepended to `POLICY`.
fn options() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just("lru"), Just("slru"), Just("clock-pro")],
        prop_oneof![
            Just("true"),
            Just("false"),
            Just("\"below-cutoff\""),
            Just("\"second-miss\"")
        ],
        prop_oneof![Just(0.25), Just(0.75)],
        prop_oneof![Just(0u32), Just(3), Just(64)],
    )
        .prop_map(|(base, read, frac, cluster)| {
            format!(
                "base_list = \"{base}\"\nread_allocate = {read}\nprotected_fraction = {frac}\n\
                 writeback_cluster = {cluster}\n"
            )
        })
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Dss),
        Just(Mode::Lru),
        Just(Mode::Tiered),
        Just(Mode::Ssd),
        Just(Mode::Hdd)
    ]
}

struct World {
    cache: Cache,
    /// Newest data of each block (None: never written or discarded).
    latest: HashMap<u64, u64>,
    hdd: HashMap<u64, u64>,
    ssd: Vec<Option<(u64, u64)>>,
    fills: Vec<(u32, u32, u64, Option<u64>)>,
    /// Victims with the SSD content read when the syncer picked them.
    cleans: Vec<(Victim, Option<(u64, u64)>)>,
    next_data: u64,
}

fn key(i: u64) -> BlockKey {
    BlockKey { file: 7, index: i }
}

impl World {
    fn step(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Write(k, c) => {
                let pressured = self.cache.syncer_active();
                let resident = self.cache.lookup(key(k)).is_some();
                let cp = self.cache.class_policy(c);
                self.next_data += 1;
                let d = self.next_data;
                self.latest.insert(k, d);
                match self.cache.write(key(k), c, 4096) {
                    WriteOutcome::Ssd { slot, hit } => {
                        prop_assert!(hit || !resident || self.filling(k));
                        if !hit {
                            let bypasses = pressured
                                && cp.placement == Placement::Cache
                                && self.bypass_class(c);
                            prop_assert!(!bypasses, "class {c} allocated under pressure");
                        }
                        self.ssd[slot as usize] = Some((k, d));
                    }
                    WriteOutcome::Hdd { .. } => {
                        self.hdd.insert(k, d);
                    }
                }
            }
            Op::Read(k, c) => {
                let want = self.latest.get(&k).copied();
                match self.cache.read(key(k), c) {
                    ReadOutcome::Hit { slot } => {
                        prop_assert_eq!(self.ssd[slot as usize], want.map(|d| (k, d)));
                    }
                    ReadOutcome::Miss => prop_assert_eq!(self.hdd.get(&k).copied(), want),
                    ReadOutcome::MissFill { slot, version } => {
                        let got = self.hdd.get(&k).copied();
                        prop_assert_eq!(got, want);
                        self.fills.push((slot, version, k, got));
                    }
                }
            }
            Op::Reclassify(k, c) => self.cache.reclassify(key(k), c),
            Op::Discard(k) => {
                self.latest.remove(&k);
                self.hdd.remove(&k);
                self.cache.discard(key(k));
            }
            Op::FinishFill(i, ok) => {
                if i < self.fills.len() {
                    let (slot, version, k, data) = self.fills.remove(i);
                    if ok {
                        self.ssd[slot as usize] = data.map(|d| (k, d));
                    }
                    self.cache.fill_done(slot, version, ok);
                }
            }
            Op::Sync(max) | Op::Flush(max) => {
                let mut v = Vec::new();
                let n = if matches!(op, Op::Sync(_)) {
                    self.cache.pick_victims(&mut v, max)
                } else {
                    self.cache.pick_flush(&mut v, max, None)
                };
                prop_assert_eq!(n, v.len());
                let mut last = u8::MAX;
                for victim in &v {
                    let prio = self.cache.class_policy(victim.class).priority;
                    prop_assert!(prio <= last, "victims out of priority order");
                    last = prio;
                }
                // Whatever stays dirty must not be of a lower priority than a victim.
                if let Some(lowest) = v
                    .iter()
                    .map(|v| self.cache.class_policy(v.class).priority)
                    .min()
                {
                    for r in self.cache.residents() {
                        if r.state == State::Dirty {
                            prop_assert!(self.cache.class_policy(r.class).priority <= lowest);
                        }
                    }
                }
                for victim in v {
                    let content = self.ssd[victim.slot as usize];
                    self.cleans.push((victim, content));
                }
            }
            Op::FinishClean(i, ok) => {
                if i < self.cleans.len() {
                    let (victim, content) = self.cleans.remove(i);
                    let still_ours =
                        self.cache.lookup(victim.key) == Some((victim.slot, State::Cleaning));
                    // The daemon checks this under the file's lock before writing back,
                    // so a discarded block is never resurrected on the HDD.
                    if ok && still_ours {
                        let (k, d) = content.expect("a dirty slot holds data");
                        prop_assert_eq!(k, victim.key.index);
                        self.hdd.insert(k, d);
                    }
                    self.cache.clean_done(&victim, ok);
                }
            }
        }
        self.cache.check().map_err(TestCaseError::fail)?;
        self.check_contents()
    }

    fn filling(&self, k: u64) -> bool {
        self.fills.iter().any(|f| f.2 == k)
    }

    fn bypass_class(&self, c: u8) -> bool {
        // Mirrors the policy: only dss mode has a cut-off (8).
        self.cache.class_policy(c).priority >= 8 && self.cache.class_policy(0).priority == 11
    }

    fn check_contents(&self) -> Result<(), TestCaseError> {
        for k in 0..24u64 {
            let want = self.latest.get(&k).copied();
            match self.cache.lookup(key(k)) {
                Some((slot, State::Clean)) => {
                    prop_assert_eq!(self.ssd[slot as usize], want.map(|d| (k, d)));
                    prop_assert_eq!(self.hdd.get(&k).copied(), want, "clean but HDD differs");
                }
                Some((slot, State::Dirty | State::Pinned | State::Cleaning)) => {
                    prop_assert_eq!(self.ssd[slot as usize], want.map(|d| (k, d)));
                }
                Some((_, State::Filling)) | None => {
                    prop_assert_eq!(self.hdd.get(&k).copied(), want, "HDD copy is stale");
                }
                Some((_, State::Empty)) => prop_assert!(false, "empty slot mapped"),
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn engine_never_serves_stale_data(
        mode in mode(),
        options in options(),
        entries in 1u32..12,
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let text = format!("{options}{POLICY}");
        let policy = Policy::parse(&text).unwrap().resolve(Some(mode));
        let cfg = Config::from_fractions(entries, policy.low_watermark, policy.high_watermark);
        let mut w = World {
            cache: Cache::new(&policy, cfg),
            latest: HashMap::new(),
            hdd: HashMap::new(),
            ssd: vec![None; entries as usize],
            fills: Vec::new(),
            cleans: Vec::new(),
            next_data: 0,
        };
        for op in ops {
            w.step(op)?;
        }
        // Drain: finish everything in flight, flush all, and the HDD alone is current.
        while !w.fills.is_empty() {
            w.step(Op::FinishFill(0, true))?;
        }
        loop {
            while !w.cleans.is_empty() {
                w.step(Op::FinishClean(0, true))?;
            }
            w.step(Op::Flush(64))?;
            if w.cleans.is_empty() {
                break;
            }
        }
        for r in w.cache.residents() {
            prop_assert!(matches!(r.state, State::Clean | State::Pinned));
        }
        let pinned: Vec<u64> = w.cache.residents().filter(|r| r.state == State::Pinned).map(|r| r.key.index).collect();
        for (k, d) in &w.latest {
            if !pinned.contains(k) {
                prop_assert_eq!(w.hdd.get(k), Some(d));
            }
        }
    }

    #[test]
    fn watermark_config_is_ordered(entries in 0u32..100_000, lo in 0.0f64..0.9, gap in 0.01f64..0.5) {
        let c = Config::from_fractions(entries, lo, (lo + gap).min(1.0));
        prop_assert!(c.low <= c.high && c.high <= c.entries);
        prop_assert!(entries < 2 || c.low < c.high);
    }
}

#[test]
fn watermarks_rounded_to_the_top_stay_apart() {
    // Both fractions round up to every entry of a two-entry cache.
    let c = Config::from_fractions(2, 0.6848687968452832, 0.6948687968452832);
    assert_eq!((c.low, c.high), (1, 2));
    let c = Config::from_fractions(1, 0.7, 0.8);
    assert_eq!((c.low, c.high), (1, 1));
}

/// Operations for the selective-allocation property: every I/O completes at once, so the
/// only state is the engine's.
#[derive(Clone, Debug)]
enum AllocOp {
    Write(u64, u8, u32),
    Read(u64, u8),
    Discard(u64),
    Sync(usize),
}

fn alloc_op() -> impl Strategy<Value = AllocOp> {
    let key = 0u64..40;
    let class = 0u8..5;
    prop_oneof![
        8 => (key.clone(), class.clone(), 1u32..=4096).prop_map(|(k, c, b)| AllocOp::Write(k, c, b)),
        3 => (key.clone(), class).prop_map(|(k, c)| AllocOp::Read(k, c)),
        2 => key.prop_map(AllocOp::Discard),
        1 => (1usize..8).prop_map(AllocOp::Sync),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Selective allocation against a model that knows only the watermarks: pressure starts
    /// when the free entries (under `slru`, the unprotected ones; under `clock-pro`, the
    /// empty ones and the cold blocks) fall below the low
    /// watermark and ends when they reach the high one, whether or not a syncer ever runs. Under pressure, and only then, a miss of a
    /// class at or past the cut-off goes to the HDD (in `dss`; never in `lru`); other
    /// classes are allocated while any entry is free. Bypassed bytes add up per class and
    /// every entry is in exactly one place.
    #[test]
    fn selective_allocation_follows_the_free_entries(
        dss in any::<bool>(),
        base in prop_oneof![Just("lru"), Just("slru"), Just("clock-pro")],
        entries in 1u32..24,
        ops in prop::collection::vec(alloc_op(), 1..400),
    ) {
        let mode = if dss { Mode::Dss } else { Mode::Lru };
        let policy = Policy::parse(&format!("base_list = \"{base}\"\n{POLICY}"))
            .unwrap()
            .resolve(Some(mode));
        let cfg = Config::from_fractions(entries, policy.low_watermark, policy.high_watermark);
        let mut cache = Cache::new(&policy, cfg);
        let fenced = |c: u8| dss && policy.classes[c as usize].priority >= 8;
        let mut pressure = false;
        // The model's view after each engine call.
        let watch = |pressure: &mut bool, free: u32| {
            if free < cfg.low {
                *pressure = true;
            } else if free >= cfg.high {
                *pressure = false;
            }
        };
        // What the watermarks count, from the counts the engine reports: the protected
        // segment (`slru`) and the hot clean blocks (`clock-pro`) are left out.
        let counted = |c: &Cache| {
            c.free_entries() - c.protected_entries() - c.clock_pro().map_or(0, |s| s.hot)
        };
        let mut bypassed = [0u64; 5];
        for op in ops {
            let free = cache.free_entries();
            match op {
                AllocOp::Write(k, c, bytes) => {
                    let resident = cache.lookup(key(k)).map(|r| r.1);
                    let out = cache.write(key(k), c, bytes);
                    let expect = match resident {
                        Some(State::Dirty) => WriteOutcome::Ssd { slot: 0, hit: true },
                        Some(State::Clean) if pressure && fenced(c) => {
                            WriteOutcome::Hdd { bypassed: true }
                        }
                        Some(_) => WriteOutcome::Ssd { slot: 0, hit: true },
                        None if (pressure && fenced(c)) || free == 0 => {
                            WriteOutcome::Hdd { bypassed: true }
                        }
                        None => WriteOutcome::Ssd { slot: 0, hit: false },
                    };
                    match (out, expect) {
                        (WriteOutcome::Ssd { hit, .. }, WriteOutcome::Ssd { hit: want, .. }) => {
                            prop_assert_eq!(hit, want);
                        }
                        (got, want) => prop_assert_eq!(got, want, "class {} pressure {}", c, pressure),
                    }
                    if out == (WriteOutcome::Hdd { bypassed: true }) {
                        bypassed[c as usize] += u64::from(bytes);
                        prop_assert_eq!(cache.lookup(key(k)), None);
                    }
                }
                AllocOp::Read(k, c) => {
                    let resident = cache.lookup(key(k)).is_some();
                    match cache.read(key(k), c) {
                        ReadOutcome::Hit { .. } => prop_assert!(resident),
                        ReadOutcome::Miss => {
                            prop_assert!(!resident);
                            prop_assert!((pressure && fenced(c)) || free == 0);
                            bypassed[c as usize] += 4096;
                        }
                        ReadOutcome::MissFill { slot, version } => {
                            let fenced_off = pressure && fenced(c);
                            prop_assert!(!resident && !fenced_off && free > 0);
                            watch(&mut pressure, counted(&cache));
                            cache.fill_done(slot, version, true);
                        }
                    }
                }
                AllocOp::Discard(k) => cache.discard(key(k)),
                AllocOp::Sync(max) => {
                    let mut v = Vec::new();
                    cache.pick_victims(&mut v, max);
                    for victim in &v {
                        cache.clean_done(victim, true);
                        watch(&mut pressure, counted(&cache));
                    }
                }
            }
            watch(&mut pressure, counted(&cache));
            prop_assert_eq!(cache.syncer_active(), pressure);
            for c in 0..5u8 {
                prop_assert_eq!(cache.counters(c).bypassed_bytes, bypassed[c as usize]);
            }
            prop_assert_eq!(
                cache.free_entries() + cache.dirty_entries() + cache.pinned_entries() + cache.in_flight(),
                entries
            );
            let held: u64 = (0..5u8)
                .map(|c| cache.counters(c).clean_blocks + cache.counters(c).dirty_blocks)
                .sum();
            prop_assert_eq!(held, cache.residents().count() as u64);
            cache.check().map_err(TestCaseError::fail)?;
        }
    }
}
