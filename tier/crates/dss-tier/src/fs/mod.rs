//! The FUSE adapter: a passthrough namespace over the HDD directory whose file data goes
//! through the cache (`crate::core`).
//!
//! `tierfs` holds the filesystem's state, `filesystem` answers the FUSE requests,
//! `nodes` is the inode table, `target` where a request by inode reaches its file,
//! `handles` the open handles, `passthrough` the backing files of handles the kernel
//! serves itself, `requests` the requests answered by kind, `deferred` the read replies
//! that wait for their modelled device, and `convert` turns HDD-side values into FUSE's.

mod convert;
mod deferred;
mod filesystem;
mod handles;
mod nodes;
mod passthrough;
mod requests;
mod target;
mod tierfs;

pub use filesystem::{CONTENT_XATTR, STATS_XATTR};
pub use tierfs::TierFs;
