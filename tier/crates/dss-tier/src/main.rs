//! dss-tier: class-priority write-back SSD caching in front of an HDD, as a FUSE
//! filesystem mounted as a Swift device. `dss-tier --help` lists the commands; `cli`
//! holds their options.

#[macro_use]
mod diag;

mod anchors;
mod cli;
mod control;
mod core;
mod fs;
mod fsck;
mod ioctl;
mod journal;
mod layout;
mod mount_checks;
mod mountinfo;
mod output;
mod runs;
#[cfg(test)]
mod scratch;
mod stats;
mod tier_mounts;

use clap::Parser;
use cli::{Cli, Command, MountArgs};
use control::{CONTROL_XATTR, Outcome, Request};
use mount_checks::{Checked, check_mount, directory};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tier_mounts::{dss_tier_mount, is_mounted, mount_id, mount_listed};

/// The daemon holds a descriptor per open handle of the mount (every file Swift's servers
/// have open) and up to 1,024 for write-back: the soft limit of 1024 that a service
/// manager or a shell gives by default is too few, so it is raised to the hard limit, as
/// Swift's servers raise theirs.
fn raise_open_files_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        );
    }
}

/// The mount point an operator command names, once it is known to be a dss-tier mount.
/// Found in the mount table without looking at the mount itself: a stat of its root
/// would be charged to the cache like any request, and show in the counters read next.
fn tier_mount(mountpoint: &Path) -> Result<mountinfo::Entry, String> {
    if let Some(e) = dss_tier_mount(mountpoint) {
        return Ok(e);
    }
    let shown = mountpoint.display();
    match std::fs::symlink_metadata(mountpoint) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("{shown}: {e}")),
        _ => Err(format!("{shown}: not a dss-tier mount")),
    }
}

fn mount(m: MountArgs) -> Result<(), String> {
    tier_mounts::clear_dead(&m.mountpoint)?;
    let Checked {
        policy,
        policy_path,
        hdd,
    } = check_mount(&m)?;
    if m.daemon {
        // Re-run in the foreground, detached into its own process group, and return
        // once the mount is visible.
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let rest: Vec<OsString> = std::env::args_os()
            .skip(1)
            .filter(|a| a != "--daemon")
            .collect();
        // The detached daemon's messages (a journal replayed, a final write-back that
        // failed) would otherwise be lost with its terminal.
        let shown = |e: std::io::Error| format!("{}: {e}", m.ssd.display());
        std::fs::create_dir_all(&m.ssd).map_err(shown)?;
        let log_path = m.ssd.join(layout::DAEMON_LOG);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(shown)?;
        let before = log.metadata().map_or(0, |md| md.len()) as usize;
        let mut child = std::process::Command::new(exe)
            .args(rest)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().map_err(shown)?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .map_err(|e| e.to_string())?;
        for _ in 0..200 {
            if is_mounted(&m.mountpoint) {
                return Ok(());
            }
            if let Ok(Some(st)) = child.try_wait() {
                let said = std::fs::read_to_string(&log_path).unwrap_or_default();
                let full = rustix::fs::statvfs(&m.ssd).is_ok_and(|fs| fs.f_bavail == 0);
                return Err(match said.get(before..).and_then(|s| s.lines().last()) {
                    Some(line) => format!("mount failed ({st}): {line}"),
                    // The daemon's reason went to a log that had no room.
                    None if full => format!(
                        "mount failed ({st}); the file system under --ssd {} is full, {} \
                         included: run the mount in the foreground to see why",
                        m.ssd.display(),
                        layout::DAEMON_LOG
                    ),
                    None => format!("mount failed ({st})"),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        return Err("mount did not appear within 10 s".into());
    }
    raise_open_files_limit();
    let resolved = policy.resolve(m.mode);
    std::fs::create_dir_all(&m.ssd).map_err(|e| format!("{}: {e}", m.ssd.display()))?;
    // Before the cache opens (which would drop the anchors of blocks it cannot find):
    // files whose latest blocks died with the SSD must never be served from the HDD.
    if let Some(loss) = fsck::detect_loss(&m.ssd, &hdd)? {
        let ev = fsck::quarantine(&m.ssd, &hdd, &loss)?;
        tell!(
            "dss-tier: SSD cache lost: {}; {} files whose latest blocks were only on the SSD \
             moved to {} ({} more were deleted files); see {}",
            ev.reason,
            ev.files.len(),
            hdd.join(&ev.moved_to).display(),
            ev.unnamed,
            fsck::loss_report_path(&hdd).display()
        );
    }
    let (mut core, replay) = core::Core::open(
        &resolved,
        &policy.name,
        policy.classify.clone(),
        m.cache_size,
        &m.ssd,
        &hdd,
        &m.ssd_model,
        &m.hdd_model,
        m.meta_memory,
        m.warm,
    )
    .map_err(|e| format!("{}: {e}", m.ssd.display()))?;
    if m.meta_writes == cli::MetaWrites::Buffered {
        core.buffer_meta_writes();
    }
    if replay.clean_restored > 0 {
        tell!(
            "dss-tier: warm start: {} clean blocks kept from the last clean unmount",
            replay.clean_restored
        );
    } else if replay.clean_unchecked {
        tell!(
            "dss-tier: --warm: the journal was marked clean by a build that did not record \
             when, so its clean blocks cannot be checked against the HDD; starting cold"
        );
    } else if m.warm && !replay.previous_clean {
        tell!("dss-tier: --warm: no clean unmount to start from; starting cold");
    }
    if replay.restored + replay.orphaned + replay.corrupt + replay.written_back > 0 {
        tell!(
            "dss-tier: journal replayed: {} dirty blocks restored, {} written back, {} of \
             deleted files dropped, {} torn records",
            replay.restored,
            replay.written_back,
            replay.orphaned,
            replay.corrupt
        );
    }
    let core = Arc::new(core);
    let ioctls = ioctl::Ioctls::load()?;
    let control = control::Control::new(policy_path, &policy, m.mode, hdd.clone());
    let tierfs = fs::TierFs::new(
        hdd.clone(),
        core.clone(),
        ioctls,
        control,
        !m.no_passthrough,
    )
    .map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let syncer = {
        let (core, stop) = (core.clone(), stop.clone());
        std::thread::Builder::new()
            .name("syncer".into())
            .spawn(move || core.syncer(stop))
            .map_err(|e| e.to_string())?
    };
    let mut cfg = fuser::Config::default();
    cfg.mount_options = vec![
        fuser::MountOption::FSName(format!("dss-tier:{}", hdd.display())),
        fuser::MountOption::Subtype("dss-tier".into()),
        fuser::MountOption::DefaultPermissions,
        // Goes through fusermount3 even as root (fuser's direct mount(2) path would drop
        // the subtype, and the Python side finds mounts by `fuse.dss-tier`), and unmounts
        // if the daemon dies.
        fuser::MountOption::AutoUnmount,
    ];
    // Swift's servers usually run as another user than the one mounting.
    cfg.acl = fuser::SessionACL::All;
    cfg.n_threads = Some(usize::from(m.threads));
    let session = fuser::Session::new(tierfs, &m.mountpoint, &cfg)
        .map_err(|e| format!("{}: {e}", m.mountpoint.display()))?;
    let mount_id = mount_id(&m.mountpoint);
    let bg = session
        .spawn()
        .map_err(|e| format!("{}: {e}", m.mountpoint.display()))?;
    // The FUSE threads only stop when the kernel tears the connection down, and it does
    // not while a copy of the mount lives on in another mount namespace (any process
    // that unshared its namespace while we were mounted holds one). So the daemon
    // watches its own namespace: once the mount is gone here, it is unmounted.
    while !bg.guard.is_finished() && mount_id.is_none_or(mount_listed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = syncer.join();
    match core.shutdown() {
        // Exit while holding the engine: a request still in flight (through a copy of
        // the mount elsewhere) is never answered, so none can be acknowledged after the
        // final write-back.
        Ok(_held) => std::process::exit(0),
        Err(e) => {
            tell!("dss-tier: final write-back: {e} (the journal keeps the rest)");
            std::process::exit(1)
        }
    }
}

/// Read one of the root's xattrs.
fn read_xattr(mp: &Path, name: &str) -> Result<String, String> {
    let mut buf = Vec::with_capacity(1 << 16);
    loop {
        match rustix::fs::getxattr(mp, name, rustix::buffer::spare_capacity(&mut buf)) {
            Ok(_) => break,
            Err(rustix::io::Errno::RANGE) => buf = Vec::with_capacity(buf.capacity() * 4),
            Err(e) => {
                return Err(format!(
                    "{}: the daemon does not answer ({e})",
                    mp.display()
                ));
            }
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The stats document of the mount on `mp` as the daemon sends it.
fn read_stats(mp: &Path) -> Result<String, String> {
    tier_mount(mp)?;
    read_xattr(mp, fs::STATS_XATTR)
}

fn stats(a: cli::StatsArgs) -> Result<(), String> {
    if a.content {
        return dump(cli::DumpArgs {
            json: a.json,
            mountpoint: a.mountpoint,
        });
    }
    let mp = a.mountpoint.as_path();
    let text = read_stats(mp)?;
    let s: stats::Stats = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if a.csv {
        say!("{}", output::stats_csv(&s));
        return Ok(());
    }
    // Losses are recorded on the HDD, found through the mount's source (`dss-tier:HDD`).
    let losses = hdd_of_mount(mp)
        .map(|hdd| fsck::read_loss_report(&hdd).events)
        .unwrap_or_default();
    if a.json {
        let mut doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        if let Some(obj) = doc.as_object_mut() {
            obj.insert(
                "ssd_loss".into(),
                serde_json::to_value(&losses).map_err(|e| e.to_string())?,
            );
        }
        sayln!("{doc}");
    } else {
        say!("{}", s.render());
        for ev in &losses {
            sayln!(
                "SSD cache lost (at {} s since the epoch): {}; {} stale files set aside in {}",
                ev.time,
                ev.reason,
                ev.files.len(),
                ev.moved_to
            );
        }
    }
    Ok(())
}

/// The HDD directory of a mountinfo entry of a dss-tier mount (its source `dss-tier:HDD`).
fn hdd_of(e: &mountinfo::Entry) -> Option<PathBuf> {
    let hdd = e.source.as_bytes().strip_prefix(b"dss-tier:")?;
    Some(PathBuf::from(OsStr::from_bytes(hdd)))
}

/// The HDD directory behind the dss-tier mount on `mountpoint`.
fn hdd_of_mount(mountpoint: &Path) -> Option<PathBuf> {
    hdd_of(&dss_tier_mount(mountpoint)?)
}

fn dump(a: cli::DumpArgs) -> Result<(), String> {
    let mp = a.mountpoint.as_path();
    tier_mount(mp)?;
    let text = read_xattr(mp, fs::CONTENT_XATTR)?;
    if a.json {
        sayln!("{text}");
    } else {
        let c: stats::Content = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        say!("{}", c.render());
    }
    Ok(())
}

fn list(a: cli::ListArgs) -> Result<(), String> {
    let mounts = mountinfo::read().map_err(|e| format!("mount table: {e}"))?;
    let rows: Vec<output::MountRow> = mounts
        .iter()
        .filter(|e| e.fstype == "fuse.dss-tier")
        .map(|e| {
            let stats = read_xattr(&e.mount_point, fs::STATS_XATTR)
                .ok()
                .and_then(|t| serde_json::from_str::<stats::Stats>(&t).ok());
            let hdd = hdd_of(e).unwrap_or_default();
            output::MountRow::new(e.mount_point.clone(), hdd, stats.as_ref())
        })
        .collect();
    if a.json {
        sayln!(
            "{}",
            serde_json::to_string(&rows).map_err(|e| e.to_string())?
        );
    } else {
        say!("{}", output::mounts_table(&rows));
    }
    Ok(())
}

/// Send `request` to the daemon of the mount on `mp` and print what it did.
fn control(mp: &Path, request: Request) -> Result<(), String> {
    tier_mount(mp)?;
    let sent = rustix::fs::setxattr(
        mp,
        CONTROL_XATTR,
        &request.encode(),
        rustix::fs::XattrFlags::empty(),
    );
    let shown = mp.display();
    match sent {
        Err(rustix::io::Errno::PERM | rustix::io::Errno::ACCESS) => {
            return Err(format!("{shown}: only root may control a mount"));
        }
        // The outcome says why.
        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(format!("{shown}: the daemon does not answer ({e})")),
    }
    let text = read_xattr(mp, CONTROL_XATTR)?;
    let outcome: Outcome = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if outcome.ok {
        sayln!("{shown}: {}", outcome.message);
        Ok(())
    } else {
        Err(format!("{shown}: {}", outcome.message))
    }
}

fn reload_policy(a: cli::ReloadArgs) -> Result<(), String> {
    // The daemon reads the file: it needs a path that means the same thing to it.
    let policy = match &a.policy {
        Some(p) => Some(std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    if let Some(p) = &policy
        && !p.is_file()
    {
        return Err(format!("{}: not a file", p.display()));
    }
    control(&a.mountpoint, Request::ReloadPolicy(policy))
}

/// Whether process `pid` has exited (gone, or a zombie nobody reaped yet).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn umount(a: cli::UmountArgs) -> Result<(), String> {
    let mp = a.mountpoint.as_path();
    tier_mount(mp)?;
    // Ask the daemon who it is while it still answers.
    let pid = read_xattr(mp, fs::STATS_XATTR)
        .ok()
        .and_then(|t| serde_json::from_str::<stats::Stats>(&t).ok())
        .map(|s| s.pid)
        .filter(|&p| p != 0);
    let st = std::process::Command::new("fusermount3")
        .arg("-u")
        .arg(mp)
        .status()
        .map_err(|e| format!("fusermount3: {e}"))?;
    if !st.success() {
        return Err(format!("fusermount3 -u {} failed ({st})", mp.display()));
    }
    let Some(pid) = pid else {
        return Ok(());
    };
    // The daemon notices the unmount, writes back, syncs and exits.
    let timeout = a.timeout;
    let deadline = std::time::Instant::now() + Duration::from_secs(timeout);
    while !exited(pid) {
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "unmounted, but the daemon (pid {pid}) is still writing back after {timeout} s"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn fsck_cmd(a: cli::FsckArgs) -> Result<bool, String> {
    // A mistyped path must not pass for an empty cache, nor the HDD for the cache.
    mount_checks::apart(&[
        ("--ssd", &a.ssd, directory(&a.ssd)?),
        ("--hdd", &a.hdd, directory(&a.hdd)?),
    ])?;
    let r = fsck::fsck(&a.ssd, &a.hdd, a.repair)?;
    for n in &r.notes {
        sayln!("{n}");
    }
    for p in &r.problems {
        sayln!("problem: {p}");
    }
    Ok(r.problems.is_empty() || a.repair)
}

/// A command-line error as one line.
fn usage_error(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "dss-tier: a command is needed (see dss-tier --help)".into();
    }
    let text = e.render().to_string();
    // The message, with what it lists on the lines below it (the missing arguments).
    let message: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let first = message.join(" ");
    let first = first.strip_prefix("error: ").unwrap_or(&first);
    // "Usage: dss-tier stats [OPTIONS] <MOUNTPOINT>" names the command whose help helps.
    let command = text
        .lines()
        .find_map(|l| l.strip_prefix("Usage: "))
        .map(|u| {
            u.split(' ')
                .take_while(|w| !w.starts_with(['[', '<']))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "dss-tier".into());
    format!("dss-tier: {first} (see {command} --help)")
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            tell!("{}", usage_error(&e));
            return ExitCode::from(2);
        }
    };
    let r = match cli.command {
        Command::Mount(m) => mount(m),
        Command::Stats(a) => stats(a),
        Command::Umount(a) => umount(a),
        Command::Dump(a) => dump(a),
        Command::List(a) => list(a),
        Command::Flush(t) => control(&t.mountpoint, Request::Flush),
        Command::ResetCounters(t) => control(&t.mountpoint, Request::ResetCounters),
        Command::DropCaches(t) => control(&t.mountpoint, Request::DropCaches),
        Command::ReloadPolicy(a) => reload_policy(a),
        Command::Fsck(a) => match fsck_cmd(a) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::from(1),
            Err(e) => Err(e),
        },
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tell!("dss-tier: {e}");
            ExitCode::FAILURE
        }
    }
}
