//! The names of the files the tier keeps: the cache's in the SSD directory, and the
//! directory of its own at the HDD's root.

/// The slab and the journal in the SSD directory.
pub const SLAB: &str = "cache.slab";
pub const JOURNAL: &str = "cache.journal";
/// What a daemon started with `--daemon` says, appended, in the SSD directory.
pub const DAEMON_LOG: &str = "daemon.log";

/// Directory at the HDD's root that the mount hides.
pub const HIDDEN: &str = ".dss-tier";
