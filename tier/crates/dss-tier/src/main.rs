//! dss-tier: class-priority write-back SSD caching in front of an HDD, as a FUSE
//! filesystem mounted as a Swift device.
//!
//!   dss-tier mount --ssd DIR --hdd DIR --cache-size SIZE --policy FILE [--mode M]
//!                  [--ssd-model P] [--hdd-model P] [--daemon] MOUNTPOINT
//!   dss-tier stats [--json] MOUNTPOINT
//!   dss-tier umount MOUNTPOINT

mod core;
mod fs;
mod ioctl;
mod stats;

use dss_engine::{Mode, Policy};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const USAGE: &str = "usage:
  dss-tier mount --ssd DIR --hdd DIR --cache-size SIZE --policy FILE [--mode hdd|ssd|lru|dss|tiered]
                 [--ssd-model P] [--hdd-model P] [--threads N] [--daemon] MOUNTPOINT
  dss-tier stats [--json] MOUNTPOINT
  dss-tier umount MOUNTPOINT
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

/// True when `mountpoint` is a dss-tier mount (fstype `fuse.dss-tier` in mountinfo).
fn is_mounted(mountpoint: &Path) -> bool {
    let Ok(abs) = std::fs::canonicalize(mountpoint) else {
        return false;
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    info.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let sep = f.iter().position(|x| *x == "-");
        matches!(sep, Some(i) if f.get(i + 1) == Some(&"fuse.dss-tier"))
            && f.get(4).map(|p| Path::new(p) == abs).unwrap_or(false)
    })
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
    // Without a write-back journal the previous slab's contents cannot be trusted: start
    // empty (everything an fsync acknowledged is on the HDD).
    let store = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(m.ssd.join("cache.slab"))
        .map_err(|e| format!("{}: {e}", m.ssd.display()))?;
    let core = Arc::new(
        core::Core::new(
            &resolved,
            &policy.name,
            policy.classify.clone(),
            m.cache_size,
            store,
            &m.ssd_model,
            &m.hdd_model,
        )
        .map_err(|e| e.to_string())?,
    );
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
    let r = fuser::mount(tierfs, &m.mountpoint, &cfg);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = syncer.join();
    // Unmounted: nothing may stay only in the slab, which the next mount discards.
    core.flush(None)
        .map_err(|e| format!("final write-back: {e}"))?;
    r.map_err(|e| format!("{}: {e}", m.mountpoint.display()))
}

fn stats(args: &[String]) -> Result<(), String> {
    let json = args.iter().any(|a| a == "--json");
    let mp: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [mp] = mp.as_slice() else {
        return Err("stats needs exactly one MOUNTPOINT".into());
    };
    let mut buf = Vec::with_capacity(1 << 16);
    loop {
        match rustix::fs::getxattr(
            mp.as_str(),
            fs::STATS_XATTR,
            rustix::buffer::spare_capacity(&mut buf),
        ) {
            Ok(_) => break,
            Err(rustix::io::Errno::RANGE) => buf = Vec::with_capacity(buf.capacity() * 4),
            Err(e) => return Err(format!("{mp}: not a dss-tier mount? ({e})")),
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    if json {
        println!("{text}");
    } else {
        let s: stats::Stats = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        print!("{}", s.render());
    }
    Ok(())
}

fn umount(args: &[String]) -> Result<(), String> {
    let [mp] = args else {
        return Err("umount needs exactly one MOUNTPOINT".into());
    };
    let st = std::process::Command::new("fusermount3")
        .args(["-u", mp])
        .status()
        .map_err(|e| format!("fusermount3: {e}"))?;
    if !st.success() {
        return Err(format!("fusermount3 -u {mp} failed ({st})"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("mount") => mount(&args[1..]),
        Some("stats") => stats(&args[1..]),
        Some("umount") => umount(&args[1..]),
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
