//! dss-tier: class-priority write-back SSD caching in front of an HDD, as a FUSE
//! filesystem mounted as a Swift device.
//!
//!   dss-tier mount --ssd DIR --hdd DIR --cache-size SIZE --policy FILE [--mode M]
//!                  [--ssd-model P] [--hdd-model P] [--daemon] MOUNTPOINT
//!   dss-tier stats [--json] [--content] MOUNTPOINT
//!   dss-tier dump [--json] MOUNTPOINT
//!   dss-tier umount [--timeout SECONDS] MOUNTPOINT
//!   dss-tier fsck --ssd DIR --hdd DIR [--repair]

mod anchors;
mod core;
mod fs;
mod fsck;
mod ioctl;
mod journal;
mod layout;
mod mountinfo;
mod runs;
mod stats;

use dss_engine::{Mode, Policy};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const USAGE: &str = "usage:
  dss-tier mount --ssd DIR --hdd DIR --cache-size SIZE --policy FILE [--mode hdd|ssd|lru|dss|tiered]
                 [--ssd-model P] [--hdd-model P] [--threads N] [--warm] [--daemon] MOUNTPOINT
                                           --warm keeps the clean blocks of a clean unmount
                                           (only if the HDD directory did not change since)
  dss-tier stats [--json] [--content] MOUNTPOINT
  dss-tier dump [--json] MOUNTPOINT          cache content by class (and extents)
  dss-tier umount [--timeout SECONDS] MOUNTPOINT
                                           returns once the daemon wrote back and exited
  dss-tier fsck --ssd DIR --hdd DIR [--repair]
                                           check an unmounted cache; --repair writes every
                                           dirty block to the HDD and empties the cache
device models P: none, st1000nm0011, intel710, hdd, ssd, optionally with :key=value,...";

/// "64MiB", "1G", "4096": binary units, a bare number is bytes.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("bad size unit in {s:?}")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} too large"))
}

struct MountArgs {
    ssd: PathBuf,
    hdd: PathBuf,
    cache_size: u64,
    policy: PathBuf,
    mode: Option<Mode>,
    ssd_model: String,
    hdd_model: String,
    threads: usize,
    warm: bool,
    daemon: bool,
    mountpoint: PathBuf,
}

fn parse_mount(args: &[String]) -> Result<MountArgs, String> {
    let mut m = MountArgs {
        ssd: PathBuf::new(),
        hdd: PathBuf::new(),
        cache_size: 0,
        policy: PathBuf::new(),
        mode: None,
        ssd_model: "none".into(),
        hdd_model: "none".into(),
        threads: 4,
        warm: false,
        daemon: false,
        mountpoint: PathBuf::new(),
    };
    let mut it = args.iter();
    let mut positional = Vec::new();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--ssd" => m.ssd = val()?.into(),
            "--hdd" => m.hdd = val()?.into(),
            "--cache-size" => m.cache_size = parse_size(&val()?)?,
            "--policy" => m.policy = val()?.into(),
            "--mode" => m.mode = Some(val()?.parse().map_err(|e| format!("{e}"))?),
            "--ssd-model" => m.ssd_model = val()?,
            "--hdd-model" => m.hdd_model = val()?,
            "--threads" => m.threads = val()?.parse().map_err(|_| "bad --threads")?,
            "--daemon" => m.daemon = true,
            "--warm" => m.warm = true,
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => positional.push(a.clone()),
        }
    }
    if positional.len() != 1 {
        return Err("mount needs exactly one MOUNTPOINT".into());
    }
    m.mountpoint = positional.pop().unwrap().into();
    for (name, p) in [
        ("--ssd", &m.ssd),
        ("--hdd", &m.hdd),
        ("--policy", &m.policy),
    ] {
        if p.as_os_str().is_empty() {
            return Err(format!("mount needs {name}"));
        }
    }
    if m.cache_size == 0 {
        return Err("mount needs --cache-size (> 0)".into());
    }
    m.threads = m.threads.clamp(1, 64);
    Ok(m)
}

/// The latest dss-tier mount (fstype `fuse.dss-tier`) on `mountpoint`.
fn dss_tier_mount(mountpoint: &Path) -> Option<mountinfo::Entry> {
    let abs = std::fs::canonicalize(mountpoint).ok()?;
    mountinfo::read()
        .ok()?
        .into_iter()
        .rfind(|e| e.fstype == "fuse.dss-tier" && e.mount_point == abs)
}

/// True when `mountpoint` is a dss-tier mount.
fn is_mounted(mountpoint: &Path) -> bool {
    dss_tier_mount(mountpoint).is_some()
}

fn mount(args: &[String]) -> Result<(), String> {
    let m = parse_mount(args)?;
    if m.daemon {
        // Re-run in the foreground, detached into its own process group, and return
        // once the mount is visible.
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let rest: Vec<&String> = args.iter().filter(|a| *a != "--daemon").collect();
        let mut child = std::process::Command::new(exe)
            .arg("mount")
            .args(rest)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| e.to_string())?;
        for _ in 0..200 {
            if is_mounted(&m.mountpoint) {
                return Ok(());
            }
            if let Ok(Some(st)) = child.try_wait() {
                return Err(format!("mount failed ({st})"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        return Err("mount did not appear within 10 s".into());
    }
    let text =
        std::fs::read_to_string(&m.policy).map_err(|e| format!("{}: {e}", m.policy.display()))?;
    let policy = Policy::parse(&text).map_err(|e| format!("{}: {e}", m.policy.display()))?;
    let resolved = policy.resolve(m.mode);
    std::fs::create_dir_all(&m.ssd).map_err(|e| e.to_string())?;
    let hdd = std::fs::canonicalize(&m.hdd).map_err(|e| format!("{}: {e}", m.hdd.display()))?;
    // Before the cache opens (which would drop the anchors of blocks it cannot find):
    // files whose latest blocks died with the SSD must never be served from the HDD.
    if let Some(loss) = fsck::detect_loss(&m.ssd, &hdd)? {
        let ev = fsck::quarantine(&m.ssd, &hdd, &loss)?;
        eprintln!(
            "dss-tier: SSD cache lost: {}; {} files whose latest blocks were only on the SSD \
             moved to {} ({} more were deleted files); see {}",
            ev.reason,
            ev.files.len(),
            hdd.join(&ev.moved_to).display(),
            ev.unnamed,
            fsck::loss_report_path(&hdd).display()
        );
    }
    let (core, replay) = core::Core::open(
        &resolved,
        &policy.name,
        policy.classify.clone(),
        m.cache_size,
        &m.ssd,
        &hdd,
        &m.ssd_model,
        &m.hdd_model,
        m.warm,
    )
    .map_err(|e| format!("{}: {e}", m.ssd.display()))?;
    if replay.clean_restored > 0 {
        eprintln!(
            "dss-tier: warm start: {} clean blocks kept from the last clean unmount",
            replay.clean_restored
        );
    } else if m.warm && !replay.previous_clean {
        eprintln!("dss-tier: --warm: no clean unmount to start from; starting cold");
    }
    if replay.restored + replay.orphaned + replay.corrupt + replay.written_back > 0 {
        eprintln!(
            "dss-tier: journal replayed: {} dirty blocks restored, {} written back, {} of \
             deleted files dropped, {} torn records",
            replay.restored, replay.written_back, replay.orphaned, replay.corrupt
        );
    }
    let core = Arc::new(core);
    let ioctls = ioctl::Ioctls::load()?;
    let tierfs = fs::TierFs::new(hdd.clone(), core.clone(), ioctls).map_err(|e| e.to_string())?;
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
    cfg.n_threads = Some(m.threads);
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
            eprintln!("dss-tier: final write-back: {e} (the journal keeps the rest)");
            std::process::exit(1)
        }
    }
}

/// The mount id of the dss-tier mount on `mountpoint`.
fn mount_id(mountpoint: &Path) -> Option<u64> {
    dss_tier_mount(mountpoint).map(|e| e.id)
}

/// Whether mount `id` is still in this namespace (assumed so when the table cannot be
/// read: the daemon must not stop serving on a failed read).
fn mount_listed(id: u64) -> bool {
    mountinfo::read()
        .map(|mounts| mounts.iter().any(|e| e.id == id))
        .unwrap_or(true)
}

/// Read one of the root's control xattrs.
fn read_xattr(mp: &str, name: &str) -> Result<String, String> {
    let mut buf = Vec::with_capacity(1 << 16);
    loop {
        match rustix::fs::getxattr(mp, name, rustix::buffer::spare_capacity(&mut buf)) {
            Ok(_) => break,
            Err(rustix::io::Errno::RANGE) => buf = Vec::with_capacity(buf.capacity() * 4),
            Err(e) => return Err(format!("{mp}: not a dss-tier mount? ({e})")),
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn one_mountpoint<'a>(args: &'a [String], cmd: &str) -> Result<&'a str, String> {
    let mp: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    match mp.as_slice() {
        [mp] => Ok(mp.as_str()),
        _ => Err(format!("{cmd} needs exactly one MOUNTPOINT")),
    }
}

fn stats(args: &[String]) -> Result<(), String> {
    let json = args.iter().any(|a| a == "--json");
    let content = args.iter().any(|a| a == "--content");
    let mp = one_mountpoint(args, "stats")?;
    if content {
        return dump(args);
    }
    let text = read_xattr(mp, fs::STATS_XATTR)?;
    // Losses are recorded on the HDD, found through the mount's source (`dss-tier:HDD`).
    let losses = hdd_of_mount(Path::new(mp))
        .map(|hdd| fsck::read_loss_report(&hdd).events)
        .unwrap_or_default();
    if json {
        let mut doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        if let Some(obj) = doc.as_object_mut() {
            obj.insert(
                "ssd_loss".into(),
                serde_json::to_value(&losses).map_err(|e| e.to_string())?,
            );
        }
        println!("{doc}");
    } else {
        let s: stats::Stats = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        print!("{}", s.render());
        for ev in &losses {
            println!(
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

/// The HDD directory behind the dss-tier mount on `mountpoint`, from its mountinfo source.
fn hdd_of_mount(mountpoint: &Path) -> Option<PathBuf> {
    let source = dss_tier_mount(mountpoint)?.source;
    let hdd = source.as_bytes().strip_prefix(b"dss-tier:")?;
    Some(PathBuf::from(OsStr::from_bytes(hdd)))
}

fn dump(args: &[String]) -> Result<(), String> {
    let json = args.iter().any(|a| a == "--json");
    let mp = one_mountpoint(args, "dump")?;
    let text = read_xattr(mp, fs::CONTENT_XATTR)?;
    if json {
        println!("{text}");
    } else {
        let c: stats::Content = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        print!("{}", c.render());
    }
    Ok(())
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

fn umount(args: &[String]) -> Result<(), String> {
    let mut timeout = 300u64;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--timeout" {
            timeout = it
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or("--timeout needs seconds")?;
        } else {
            rest.push(a.clone());
        }
    }
    let [mp] = rest.as_slice() else {
        return Err("umount needs exactly one MOUNTPOINT".into());
    };
    // Ask the daemon who it is while it still answers.
    let pid = read_xattr(mp, fs::STATS_XATTR)
        .ok()
        .and_then(|t| serde_json::from_str::<stats::Stats>(&t).ok())
        .map(|s| s.pid)
        .filter(|&p| p != 0);
    let st = std::process::Command::new("fusermount3")
        .args(["-u", mp])
        .status()
        .map_err(|e| format!("fusermount3: {e}"))?;
    if !st.success() {
        return Err(format!("fusermount3 -u {mp} failed ({st})"));
    }
    let Some(pid) = pid else {
        return Ok(());
    };
    // The daemon notices the unmount, writes back, syncs and exits.
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

fn fsck_cmd(args: &[String]) -> Result<bool, String> {
    let mut ssd = None;
    let mut hdd = None;
    let mut repair = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--ssd" => ssd = it.next().map(PathBuf::from),
            "--hdd" => hdd = it.next().map(PathBuf::from),
            "--repair" => repair = true,
            s => return Err(format!("fsck: unexpected {s}")),
        }
    }
    let (Some(ssd), Some(hdd)) = (ssd, hdd) else {
        return Err("fsck needs --ssd DIR --hdd DIR".into());
    };
    let r = fsck::fsck(&ssd, &hdd, repair)?;
    for n in &r.notes {
        println!("{n}");
    }
    for p in &r.problems {
        println!("problem: {p}");
    }
    Ok(r.problems.is_empty() || repair)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("mount") => mount(&args[1..]),
        Some("stats") => stats(&args[1..]),
        Some("umount") => umount(&args[1..]),
        Some("dump") => dump(&args[1..]),
        Some("fsck") => match fsck_cmd(&args[1..]) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::from(1),
            Err(e) => Err(e),
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(USAGE.to_string()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dss-tier: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn mount_arguments() {
        let a: Vec<String> = "--ssd /s --hdd /h --cache-size 1M --policy p.toml --mode lru /mnt"
            .split(' ')
            .map(String::from)
            .collect();
        let m = parse_mount(&a).unwrap();
        assert_eq!(
            (m.cache_size, m.mode, m.mountpoint),
            (1 << 20, Some(Mode::Lru), "/mnt".into())
        );
        assert!(parse_mount(&a[..a.len() - 1]).is_err(), "no mountpoint");
        assert!(parse_mount(&a[2..]).is_err(), "no --ssd");
        let mut bad = a.clone();
        bad[9] = "fast".into();
        assert!(parse_mount(&bad).is_err(), "bad mode");
    }
}
