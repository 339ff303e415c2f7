//! The no-I/O core of dss-tier: policy files, the class-priority cache engine and the
//! device models. Everything here is deterministic and testable without a filesystem.

mod block;
pub mod blockmap;
pub mod cache;
pub mod clockpro;
mod config;
pub mod device;
pub mod metamemory;
pub mod pagecache;
pub mod policy;

pub use cache::{
    BlockKey, Cache, ClassCounters, Config, Durable, ReadOutcome, Resident, State, Victim,
    WriteOutcome,
};
pub use clockpro::ClockProStats;
pub use policy::{
    BaseList, Mode, Placement, Policy, PolicyError, ReadAllocate, Resolved, WhenFull,
};
