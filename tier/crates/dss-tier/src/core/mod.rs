//! The cache on the SSD in front of the HDD: carries out the engine's decisions on the
//! SSD slab and the HDD files, charges every access to the device model that holds the
//! data, journals what the SSD holds, and runs the syncer.
//!
//! One lock covers the engine and the data I/O it decides, so a fill can never interleave
//! with a foreground access to the same block. The syncer takes it per small batch and
//! lets go while the HDD syncs what it wrote; blocks in that window are `Cleaning`, and a
//! foreground write to one keeps it dirty.
//!
//! Crash safety rests on three orderings: a block's data reaches the slab before its
//! dirty record reaches the journal file; the journal is written out before the request
//! is answered (so a killed daemon loses nothing it acknowledged to the kernel); and a
//! record turns clean only after the HDD copy is synced. fsync syncs the slab, then the
//! journal: that is the whole cost of an acknowledged write.
//!
//! `state` holds the structures, `device_io` the charged I/O, `durability` the journal,
//! anchors and fsync, `open` the mount-time replay, `data` the foreground reads and
//! writes, `meta` the metadata pseudo-blocks, `syncer` the write-back, `report` the
//! stats documents, `control` what an operator asks of a running cache and `warm` the
//! check of a warm start's kept blocks against the HDD files.

mod control;
mod data;
mod device_io;
mod durability;
mod meta;
mod open;
mod report;
mod state;
mod syncer;
#[cfg(test)]
mod tests;
mod warm;

pub use meta::{MetaKind, xattr_kind};
pub use state::Core;
