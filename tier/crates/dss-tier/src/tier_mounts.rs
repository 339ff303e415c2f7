//! The dss-tier mounts in this namespace's mount table: which one is on a mount point,
//! whether it is still listed, and whether its daemon is gone.

use crate::mountinfo;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a mount's root may take to answer before its daemon counts as alive (busy,
/// or stuck: either way not for another daemon to replace).
const ANSWER_WAIT: Duration = Duration::from_secs(3);
/// How many dead mounts on one mount point `clear_dead` unmounts: one per crash that
/// no one cleaned up after.
const DEAD_MOUNTS: usize = 8;

/// `mountpoint` as mountinfo lists it. A FUSE mount whose daemon died cannot be
/// stat'ed (ENOTCONN), so only its parent is resolved.
fn mount_path(mountpoint: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(mountpoint).ok()?;
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => Some(std::fs::canonicalize(parent).ok()?.join(name)),
        _ => std::fs::canonicalize(&abs).ok(),
    }
}

/// The latest dss-tier mount (fstype `fuse.dss-tier`) on `mountpoint`.
pub(crate) fn dss_tier_mount(mountpoint: &Path) -> Option<mountinfo::Entry> {
    latest_mount(mountpoint, |e| e.fstype == "fuse.dss-tier")
}

/// The latest mount on `mountpoint` that `wanted` takes.
fn latest_mount(
    mountpoint: &Path,
    wanted: impl Fn(&mountinfo::Entry) -> bool,
) -> Option<mountinfo::Entry> {
    let abs = mount_path(mountpoint)?;
    mountinfo::read()
        .ok()?
        .into_iter()
        .rfind(|e| e.mount_point == abs && wanted(e))
}

/// True when `mountpoint` is a dss-tier mount.
pub(crate) fn is_mounted(mountpoint: &Path) -> bool {
    dss_tier_mount(mountpoint).is_some()
}

/// The mount id of the dss-tier mount on `mountpoint`.
pub(crate) fn mount_id(mountpoint: &Path) -> Option<u64> {
    dss_tier_mount(mountpoint).map(|e| e.id)
}

/// Whether mount `id` is still in this namespace (assumed so when the table cannot be
/// read: the daemon must not stop serving on a failed read).
pub(crate) fn mount_listed(id: u64) -> bool {
    mountinfo::read()
        .map(|mounts| mounts.iter().any(|e| e.id == id))
        .unwrap_or(true)
}

/// Whether the FUSE mount on `mountpoint` lost its daemon: the kernel then answers
/// ENOTCONN at once, without asking anyone. A live daemon answers, or keeps the stat
/// waiting; the stat runs on a thread of its own so that a stuck daemon cannot hold the
/// caller (the thread ends with the process). A plain stat would be answered from the
/// root's attributes the kernel keeps for a while, dead daemon or not: this one is sent
/// on (`AT_STATX_FORCE_SYNC`).
fn daemon_died(mountpoint: &Path) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = mountpoint.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("dead-mount-check".into())
        .spawn(move || {
            let asked = rustix::fs::statx(
                rustix::fs::CWD,
                &path,
                rustix::fs::AtFlags::STATX_FORCE_SYNC,
                rustix::fs::StatxFlags::BASIC_STATS,
            );
            let _ = tx.send(asked.err());
        });
    spawned.is_ok()
        && matches!(
            rx.recv_timeout(ANSWER_WAIT),
            // ECONNABORTED: sent while the daemon was dying, and ended with it.
            Ok(Some(
                rustix::io::Errno::NOTCONN | rustix::io::Errno::CONNABORTED
            ))
        )
}

/// Make way on `mountpoint` for a new daemon: a dss-tier mount whose daemon died is
/// unmounted (lazily, as processes may still hold its files, which answer ENOTCONN);
/// one whose daemon lives is refused. A daemon's fusermount3 helper unmounts its mount
/// when the daemon dies, but not when it was killed with the daemon (a service manager
/// stopping the daemon's whole control group), nor before it has had its turn to run.
/// What the dead daemon had not written back is in the journal the new one replays.
pub(crate) fn clear_dead(mountpoint: &Path) -> Result<(), String> {
    let shown = mountpoint.display();
    for _ in 0..DEAD_MOUNTS {
        let Some(dead) = dss_tier_mount(mountpoint) else {
            return Ok(());
        };
        // The check and the unmount reach whatever is mounted on top, which must be it.
        let on_top = latest_mount(mountpoint, |_| true).is_some_and(|e| e.id == dead.id);
        if !on_top || !daemon_died(mountpoint) {
            return Err(format!("{shown}: already a dss-tier mount"));
        }
        let out = std::process::Command::new("fusermount3")
            .args(["-u", "-z", "--"])
            .arg(mountpoint)
            .output()
            .map_err(|e| format!("fusermount3: {e}"))?;
        // The dead daemon's own helper may have unmounted it meanwhile: fusermount3
        // then fails, and the mount is gone all the same.
        if mount_listed(dead.id) {
            return Err(format!(
                "{shown}: the dss-tier mount of a daemon that died is still there, and \
                 fusermount3 -u -z could not unmount it: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        tell!("dss-tier: {shown}: unmounted the mount of a daemon that died");
    }
    Err(format!(
        "{shown}: still a dead dss-tier mount after unmounting {DEAD_MOUNTS}"
    ))
}
