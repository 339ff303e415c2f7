//! Policy files (policies/*.toml) and the per-class decision table they resolve to.
//!
//! A policy says how each class is treated; a mode only rewrites policy values
//! (placement, priorities, cut-off), so the cache engine has one code path per decision
//! whatever the mode.

use crate::config::Config;
use serde::Deserialize;
use std::fmt;
use std::str::FromStr;

/// Number of distinct classes (class ids are a byte).
pub const CLASSES: usize = 256;

/// Where the data of a class lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Ssd,
    Hdd,
}

/// What the engine does with a block of a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Write-back cached on the SSD in front of the HDD.
    Cache,
    /// Kept on the SSD only (never written back): `ssd` mode and SSD classes in `tiered`.
    Ssd,
    /// Straight to the HDD.
    Hdd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Hdd,
    Ssd,
    Lru,
    Dss,
    Tiered,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Hdd => "hdd",
            Mode::Ssd => "ssd",
            Mode::Lru => "lru",
            Mode::Dss => "dss",
            Mode::Tiered => "tiered",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        Ok(match s {
            "hdd" => Mode::Hdd,
            "ssd" => Mode::Ssd,
            "lru" => Mode::Lru,
            "dss" => Mode::Dss,
            "tiered" => Mode::Tiered,
            _ => {
                return Err(PolicyError(format!(
                    "unknown mode {s:?} (hdd, ssd, lru, dss, tiered)"
                )));
            }
        })
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The order clean entries are reused in (the base list under the class priorities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BaseList {
    /// One free list in LRU order: the paper's baseline.
    Lru,
    /// Segmented LRU (Karedla, Love and Wherry, 1994): a block referenced again while
    /// cached is protected; clean blocks seen once (a scan's) are reused first.
    Slru,
    /// CLOCK-Pro (Jiang, Chen and Zhang, 2005): hot and cold clean blocks on one clock, with
    /// a test period for cold ones and the keys of recently evicted cold blocks, so that a
    /// block is hot by its reuse distance; clean blocks seen once are reused first.
    #[serde(rename = "clock-pro")]
    ClockPro,
}

/// What a write does when it finds no entry to take (none free, none clean) while dirty
/// ones are waiting for the syncer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WhenFull {
    /// The writer waits for the syncer to clean entries, and its block then goes to the
    /// SSD: the paper's baseline allocates every write it caches from the free list.
    Wait,
    /// The block goes to the HDD at once (counted in `bypassed_bytes`), as caches that
    /// write around when full do.
    WriteAround,
}

/// Which read misses are copied into the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAllocate {
    /// Every class the placement caches (`true`).
    Always,
    /// None (`false`).
    Never,
    /// Classes before the cut-off only (`"below-cutoff"`): classes at or past
    /// `bypass_priority` are read from the HDD without a fill, pressure or not.
    BelowCutoff,
    /// A block is filled on its second read miss within the last cache-size misses
    /// (`"second-miss"`, the admission rule of 2Q's A1out ghost list): blocks read once,
    /// such as a scan's, never enter the cache through reads.
    SecondMiss,
}

impl<'de> Deserialize<'de> for ReadAllocate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bool(true) => Ok(ReadAllocate::Always),
            Raw::Bool(false) => Ok(ReadAllocate::Never),
            Raw::Str(s) if s == "below-cutoff" => Ok(ReadAllocate::BelowCutoff),
            Raw::Str(s) if s == "second-miss" => Ok(ReadAllocate::SecondMiss),
            Raw::Str(s) => Err(serde::de::Error::custom(format!(
                "read_allocate {s:?}: true, false, \"below-cutoff\" or \"second-miss\""
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

fn err<T>(msg: impl Into<String>) -> Result<T, PolicyError> {
    Err(PolicyError(msg.into()))
}

/// A set of class ids written as "24", "1-10" or "11-14,24".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSet(pub Vec<(u8, u8)>);

impl ClassSet {
    pub fn contains(&self, class: u8) -> bool {
        self.0.iter().any(|&(a, b)| a <= class && class <= b)
    }

    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        self.0.iter().flat_map(|&(a, b)| a..=b)
    }
}

impl FromStr for ClassSet {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        let num = |t: &str| -> Result<u8, PolicyError> {
            t.trim()
                .parse::<u8>()
                .map_err(|_| PolicyError(format!("bad class id {t:?} in {s:?} (0-255)")))
        };
        let mut out = Vec::new();
        for part in s.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => {
                    let v = num(part)?;
                    (v, v)
                }
            };
            if a > b {
                return err(format!("empty class range {part:?}"));
            }
            out.push((a, b));
        }
        Ok(ClassSet(out))
    }
}

impl<'de> Deserialize<'de> for ClassSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u8),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(v) => Ok(ClassSet(vec![(v, v)])),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassRule {
    pub name: String,
    pub ids: ClassSet,
    pub priority: u8,
    #[serde(default = "default_tier")]
    pub tier: Tier,
}

fn default_tier() -> Tier {
    Tier::Hdd
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameRule {
    /// Matched against the end of the file name (".db", "-journal", "hashes.pkl").
    pub suffix: Vec<String>,
    pub class: u8,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRule {
    /// Inclusive upper bound on the file size in bytes; absent on the catch-all bucket.
    pub max: Option<u64>,
    pub class: u8,
}

/// Classes the tier gives to I/O that arrives unclassified (class 0).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Classify {
    /// The tier's own write-back journal on the SSD.
    #[serde(default)]
    pub journal: u8,
    /// Inode-level metadata: attributes, file creation and deletion.
    #[serde(default)]
    pub inode: u8,
    /// Directory contents: lookups, readdir, renames.
    #[serde(default)]
    pub directory: u8,
    /// Extended attributes (Swift keeps object metadata there).
    #[serde(default)]
    pub xattr: u8,
    /// First matching rule wins; tried before the size buckets.
    #[serde(default)]
    pub name: Vec<NameRule>,
    /// Tried in order; the first bucket whose `max` holds the file size wins.
    #[serde(default)]
    pub size: Vec<SizeRule>,
}

impl Classify {
    /// True for a class of the size buckets: what a file's data is given by its size alone.
    pub fn is_size_class(&self, class: u8) -> bool {
        class != 0 && self.size.iter().any(|r| r.class == class)
    }

    /// Class for unclassified file data, from the file's name and current size.
    pub fn file_class(&self, name: &str, size: u64) -> u8 {
        for rule in &self.name {
            if rule.suffix.iter().any(|s| name.ends_with(s.as_str())) {
                return rule.class;
            }
        }
        for rule in &self.size {
            match rule.max {
                Some(max) if size > max => continue,
                _ => return rule.class,
            }
        }
        0
    }
}

/// The most neighbours a write-back victim takes along (`writeback_cluster`).
pub const MAX_WRITEBACK_CLUSTER: u32 = 4096;

/// A policy file as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub name: String,
    #[serde(default = "default_mode")]
    pub mode: Mode,
    #[serde(default = "default_block_size")]
    pub block_size: u32,
    pub low_watermark: f64,
    pub high_watermark: f64,
    /// Selective allocation: under pressure, classes whose priority is numerically at or
    /// above this bypass the cache. Absent: nothing bypasses.
    pub bypass_priority: Option<u8>,
    #[serde(default = "default_read_allocate")]
    pub read_allocate: ReadAllocate,
    #[serde(default = "default_base_list")]
    pub base_list: BaseList,
    /// `slru`: the protected segment's share of the cache at most.
    #[serde(default = "default_protected_fraction")]
    pub protected_fraction: f64,
    /// Write-back by file: each victim the syncer picks under pressure takes along up to
    /// this many dirty blocks of its file and class that follow or precede it, so that
    /// the HDD gets a file's blocks in one run. 0 (the default) is the paper's syncer.
    #[serde(default)]
    pub writeback_cluster: u32,
    #[serde(default = "default_when_full")]
    pub when_full: WhenFull,
    pub default_priority: u8,
    #[serde(default = "default_tier")]
    pub default_tier: Tier,
    #[serde(default)]
    pub classes: Vec<ClassRule>,
    #[serde(default)]
    pub classify: Classify,
}

fn default_mode() -> Mode {
    Mode::Dss
}
fn default_block_size() -> u32 {
    4096
}
fn default_read_allocate() -> ReadAllocate {
    ReadAllocate::Always
}
fn default_when_full() -> WhenFull {
    WhenFull::Wait
}
fn default_base_list() -> BaseList {
    BaseList::Lru
}
fn default_protected_fraction() -> f64 {
    0.5
}

impl Policy {
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let p: Policy = toml::from_str(text).map_err(|e| PolicyError(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    fn validate(&self) -> Result<(), PolicyError> {
        if !self.block_size.is_power_of_two() || !(512..=1 << 20).contains(&self.block_size) {
            return err(format!(
                "block_size {} must be a power of two in 512..=1048576",
                self.block_size
            ));
        }
        let (lo, hi) = (self.low_watermark, self.high_watermark);
        if !(0.0..1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo >= hi {
            return err(format!(
                "watermarks must satisfy 0 <= low ({lo}) < high ({hi}) <= 1"
            ));
        }
        let f = self.protected_fraction;
        if !(f > 0.0 && f < 1.0) {
            return err(format!("protected_fraction {f} must be in (0, 1)"));
        }
        if self.writeback_cluster > MAX_WRITEBACK_CLUSTER {
            return err(format!(
                "writeback_cluster {} must be at most {MAX_WRITEBACK_CLUSTER} blocks",
                self.writeback_cluster
            ));
        }
        let mut seen = [false; CLASSES];
        for rule in &self.classes {
            for c in rule.ids.iter() {
                if std::mem::replace(&mut seen[c as usize], true) {
                    return err(format!("class {c} is listed twice (in {:?})", rule.name));
                }
            }
        }
        // A bucket no larger than the one before it could never be chosen: the first
        // bucket a size fits in wins.
        let mut below: Option<Option<u64>> = None;
        for rule in &self.classify.size {
            match (below, rule.max) {
                (Some(None), _) => {
                    return err("classify.size: a bucket follows the catch-all (no max) bucket");
                }
                (Some(Some(prev)), Some(max)) if max <= prev => {
                    return err(format!(
                        "classify.size: max {max} follows max {prev}: the buckets must grow"
                    ));
                }
                _ => {}
            }
            below = Some(rule.max);
        }
        Ok(())
    }

    /// The decision table for `mode` (the policy's own mode when `None`).
    pub fn resolve(&self, mode: Option<Mode>) -> Resolved {
        let mode = mode.unwrap_or(self.mode);
        let mut classes = [ClassPolicy {
            placement: Placement::Cache,
            priority: self.default_priority,
        }; CLASSES];
        let mut tiers = [self.default_tier; CLASSES];
        for rule in &self.classes {
            for c in rule.ids.iter() {
                classes[c as usize].priority = rule.priority;
                tiers[c as usize] = rule.tier;
            }
        }
        let mut bypass_priority = self.bypass_priority;
        for (cp, tier) in classes.iter_mut().zip(tiers) {
            cp.placement = match mode {
                Mode::Hdd => Placement::Hdd,
                Mode::Ssd => Placement::Ssd,
                Mode::Lru | Mode::Dss => Placement::Cache,
                Mode::Tiered => match tier {
                    Tier::Ssd => Placement::Ssd,
                    Tier::Hdd => Placement::Hdd,
                },
            };
            if mode == Mode::Lru {
                cp.priority = 0;
            }
        }
        if mode != Mode::Dss {
            bypass_priority = None;
        }
        Resolved {
            mode,
            block_size: self.block_size,
            low_watermark: self.low_watermark,
            high_watermark: self.high_watermark,
            bypass_priority,
            read_allocate: self.read_allocate,
            base_list: self.base_list,
            protected_fraction: self.protected_fraction,
            writeback_cluster: self.writeback_cluster,
            when_full: self.when_full,
            classes,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassPolicy {
    pub placement: Placement,
    /// 0 is the highest priority; the syncer cleans the numerically largest first.
    pub priority: u8,
}

/// Policy values after the mode is applied: all the engine looks at.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub mode: Mode,
    pub block_size: u32,
    pub low_watermark: f64,
    pub high_watermark: f64,
    pub bypass_priority: Option<u8>,
    pub read_allocate: ReadAllocate,
    pub base_list: BaseList,
    pub protected_fraction: f64,
    pub writeback_cluster: u32,
    pub when_full: WhenFull,
    pub classes: [ClassPolicy; CLASSES],
}

impl Resolved {
    /// Cache geometry for an SSD cache of `cache_bytes`.
    pub fn cache_config(&self, cache_bytes: u64) -> Config {
        let entries =
            (cache_bytes / u64::from(self.block_size)).min(u64::from(u32::MAX - 1)) as u32;
        Config::from_fractions(entries, self.low_watermark, self.high_watermark)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
        name = "t"
        low_watermark = 0.1
        high_watermark = 0.2
        bypass_priority = 5
        default_priority = 9
        [[classes]]
        name = "meta"
        ids = "1-3,7"
        priority = 0
        tier = "ssd"
        [[classes]]
        name = "big"
        ids = 20
        priority = 6
        [classify]
        inode = 2
        name = [{ suffix = [".db"], class = 7 }]
        size = [{ max = 4096, class = 11 }, { max = 65536, class = 12 }, { class = 15 }]
    "#;

    #[test]
    fn class_sets_parse_and_reject() {
        let s: ClassSet = "1-3,7".parse().unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![1, 2, 3, 7]);
        assert!("3-1".parse::<ClassSet>().is_err());
        assert!("256".parse::<ClassSet>().is_err());
        assert!("a".parse::<ClassSet>().is_err());
    }

    #[test]
    fn dss_mode_keeps_priorities_and_cutoff() {
        let p = Policy::parse(SMALL).unwrap();
        let r = p.resolve(None);
        assert_eq!(r.mode, Mode::Dss);
        assert_eq!(r.classes[2].priority, 0);
        assert_eq!(r.classes[7].priority, 0);
        assert_eq!(r.classes[20].priority, 6);
        assert_eq!(r.classes[0].priority, 9);
        assert_eq!(r.bypass_priority, Some(5));
        assert!(r.classes.iter().all(|c| c.placement == Placement::Cache));
    }

    #[test]
    fn modes_only_rewrite_values() {
        let p = Policy::parse(SMALL).unwrap();
        let lru = p.resolve(Some(Mode::Lru));
        assert!(lru.classes.iter().all(|c| c.priority == 0));
        assert_eq!(lru.bypass_priority, None);
        let t = p.resolve(Some(Mode::Tiered));
        assert_eq!(t.classes[1].placement, Placement::Ssd);
        assert_eq!(t.classes[20].placement, Placement::Hdd);
        assert_eq!(t.classes[0].placement, Placement::Hdd);
        assert!(
            p.resolve(Some(Mode::Hdd))
                .classes
                .iter()
                .all(|c| c.placement == Placement::Hdd)
        );
        assert!(
            p.resolve(Some(Mode::Ssd))
                .classes
                .iter()
                .all(|c| c.placement == Placement::Ssd)
        );
    }

    #[test]
    fn default_classification() {
        let p = Policy::parse(SMALL).unwrap();
        assert_eq!(p.classify.file_class("x.db", 1 << 30), 7);
        assert_eq!(p.classify.file_class("a", 0), 11);
        assert_eq!(p.classify.file_class("a", 4096), 11);
        assert_eq!(p.classify.file_class("a", 4097), 12);
        assert_eq!(p.classify.file_class("a", 1 << 40), 15);
        assert_eq!(p.classify.inode, 2);
    }

    #[test]
    fn options_beyond_the_paper() {
        let p = Policy::parse(SMALL).unwrap().resolve(None);
        assert_eq!(p.base_list, BaseList::Lru);
        assert_eq!(p.read_allocate, ReadAllocate::Always);
        let with = |line: &str| SMALL.replace("name = \"t\"", &format!("name = \"t\"\n{line}"));
        let p = Policy::parse(&with("base_list = \"slru\"")).unwrap();
        assert_eq!(p.resolve(Some(Mode::Lru)).base_list, BaseList::Slru);
        let p = Policy::parse(&with("base_list = \"clock-pro\"")).unwrap();
        assert_eq!(p.resolve(None).base_list, BaseList::ClockPro);
        for (v, want) in [
            ("true", ReadAllocate::Always),
            ("false", ReadAllocate::Never),
            ("\"below-cutoff\"", ReadAllocate::BelowCutoff),
            ("\"second-miss\"", ReadAllocate::SecondMiss),
        ] {
            let p = Policy::parse(&with(&format!("read_allocate = {v}"))).unwrap();
            assert_eq!(p.resolve(None).read_allocate, want);
        }
        for bad in [
            "base_list = \"clock\"",
            "base_list = \"clockpro\"",
            "read_allocate = \"sometimes\"",
            "protected_fraction = 0.0",
            "protected_fraction = 1.0",
        ] {
            assert!(Policy::parse(&with(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_bad_policies() {
        let dup = SMALL.replace("ids = 20", "ids = 3");
        assert!(Policy::parse(&dup).unwrap_err().0.contains("twice"));
        let wm = SMALL.replace("high_watermark = 0.2", "high_watermark = 0.05");
        assert!(Policy::parse(&wm).is_err());
        let bs = SMALL.replace("name = \"t\"", "name = \"t\"\nblock_size = 3000");
        assert!(Policy::parse(&bs).is_err());
        let unknown = SMALL.replace("name = \"t\"", "name = \"t\"\nbogus = 1");
        assert!(Policy::parse(&unknown).is_err());
        let order = SMALL.replace("{ class = 15 }", "{ class = 15 }, { max = 9, class = 16 }");
        assert!(Policy::parse(&order).unwrap_err().0.contains("catch-all"));
        for shrinking in ["max = 4096, class = 12", "max = 100, class = 12"] {
            let dead = SMALL.replace("max = 65536, class = 12", shrinking);
            let e = Policy::parse(&dead).unwrap_err().0;
            assert!(e.contains("the buckets must grow"), "{e}");
        }
    }
}
