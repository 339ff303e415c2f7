//! Tests' scratch directories, removed when the test ends, passed or failed, so that
//! `cargo test` leaves nothing in the temporary directory.
use std::path::{Path, PathBuf};

pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// An empty directory named for its user and test; the pid keeps two test runs at
    /// once (two checkouts) from sharing one.
    pub(crate) fn new(user: &str, test: &str) -> Scratch {
        let name = format!("dss-{user}-{}-{test}", std::process::id());
        let dir = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub(crate) fn join(&self, path: impl AsRef<Path>) -> PathBuf {
        self.0.join(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
