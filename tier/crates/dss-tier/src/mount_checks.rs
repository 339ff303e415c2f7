//! What a mount's options point at, checked before anything is created or detached: a
//! daemon that fails after detaching can only say so in a log.

use crate::cli::MountArgs;
use dss_engine::{Cache, Mode, Policy};
use std::path::{Path, PathBuf};

pub struct Checked {
    pub policy: Policy,
    /// The policy file as an absolute path: `reload-policy` reads it again later.
    pub policy_path: PathBuf,
    pub hdd: PathBuf,
}

/// Entries whose tables are built to estimate the cost of one: large enough that the
/// fixed part (counters, list heads) is a small share of it.
const SAMPLE_ENTRIES: u64 = 1 << 14;

pub fn check_mount(m: &MountArgs) -> Result<Checked, String> {
    let (ssd, hdd, mountpoint, policy) = (&m.ssd, &m.hdd, &m.mountpoint, &m.policy);
    let shown = policy.display();
    let policy_path = std::fs::canonicalize(policy).map_err(|e| format!("{shown}: {e}"))?;
    let text = std::fs::read_to_string(&policy_path).map_err(|e| format!("{shown}: {e}"))?;
    let parsed =
        Policy::parse(&text).map_err(|e| format!("{shown}: {}", crate::control::one_line(&e.0)))?;
    let hdd_dir = directory(hdd)?;
    let mount_dir = directory(mountpoint)?;
    if ssd.exists() {
        directory(ssd)?;
    }
    let ssd_dir = resolved(ssd)?;
    apart(&[
        ("--ssd", ssd, ssd_dir.clone()),
        ("--hdd", hdd, hdd_dir.clone()),
        ("the mount point", mountpoint, mount_dir),
    ])?;
    cache_fits(&parsed, m.mode, m.cache_size)?;
    cache_room(ssd, &ssd_dir, m.cache_size)?;
    if let Some(name) = first_entry(mountpoint) {
        // Not refused: a mount over a directory that holds files is allowed, as on any
        // file system. Said, because under Swift it means a server wrote into the device
        // while the tier was down (with `mount_check = false`), and the mount hides it.
        tell!(
            "dss-tier: warning: {} is not empty ({:?} among its entries): the mount hides them",
            mountpoint.display(),
            name
        );
    }
    Ok(Checked {
        policy: parsed,
        policy_path,
        hdd: hdd_dir,
    })
}

/// The name of an entry of directory `dir`, if it has any.
fn first_entry(dir: &Path) -> Option<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .ok()?
        .find_map(|e| e.ok().map(|e| e.file_name()))
}

/// `path` made absolute, if it is a directory.
pub fn directory(path: &Path) -> Result<PathBuf, String> {
    let abs = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !abs.is_dir() {
        return Err(format!("{}: not a directory", path.display()));
    }
    Ok(abs)
}

/// `path` absolute, with the symbolic links of the part that exists resolved: the SSD
/// directory may not have been made yet.
fn resolved(path: &Path) -> Result<PathBuf, String> {
    let abs = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut existing = abs.as_path();
    let mut missing = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                existing = parent;
            }
            _ => break,
        }
    }
    let mut out =
        std::fs::canonicalize(existing).map_err(|e| format!("{}: {e}", path.display()))?;
    out.extend(missing.into_iter().rev());
    Ok(out)
}

/// The SSD directory, the HDD directory and the mount point must be three places, none
/// inside another. The daemon reads both directories by path while it serves the mount:
/// one inside the mount (or the mount inside one of them) would send the daemon's own
/// requests back to itself, and it would wait for ever. The cache inside the HDD directory
/// would show its files to Swift as data, and the HDD inside the cache would be taken for
/// cache files.
pub fn apart(named: &[(&str, &Path, PathBuf)]) -> Result<(), String> {
    for (i, (a, a_given, a_path)) in named.iter().enumerate() {
        for (b, b_given, b_path) in &named[i + 1..] {
            let relation = match (within(a_path, b_path), within(b_path, a_path)) {
                (true, true) => "is the same directory as",
                (true, false) => "is inside",
                (false, true) => "contains",
                (false, false) => continue,
            };
            return Err(format!(
                "{a} {} {relation} {b} {}: each must be apart from the others",
                a_given.display(),
                b_given.display()
            ));
        }
    }
    Ok(())
}

/// Whether `inner` is `outer` or below it: by their paths, or by the directories
/// themselves, which a bind mount shows at a second path.
fn within(inner: &Path, outer: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let identity = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    inner.starts_with(outer)
        || identity(outer).is_some_and(|id| inner.ancestors().any(|p| identity(p) == Some(id)))
}

/// The cache's slab lives in the SSD directory. One larger than the file system under
/// it could never be filled: once that file system is full, new blocks go around the
/// cache to the HDD, and the cache is smaller than the operator asked for, without a
/// word. `ssd_dir` is `ssd` resolved; the part of it that exists says which file system.
fn cache_room(ssd: &Path, ssd_dir: &Path, cache_size: u64) -> Result<(), String> {
    let Some(existing) = ssd_dir.ancestors().find(|p| p.exists()) else {
        return Ok(());
    };
    let fs = rustix::fs::statvfs(existing).map_err(|e| format!("{}: {e}", ssd.display()))?;
    let total = fs.f_blocks.saturating_mul(fs.f_frsize);
    if cache_size > total {
        return Err(format!(
            "--cache-size {cache_size} is larger than the file system under --ssd {}, which \
             holds {total} bytes: give a smaller cache or a larger SSD",
            ssd.display()
        ));
    }
    Ok(())
}

/// A cache whose tables this host cannot hold would abort the daemon as it starts. The
/// engine's tables are counted, about two thirds of what the daemon holds per block (72
/// bytes a block in all under the LRU list, measured): a cache that passes can still be
/// too large for the host, one that fails never fits.
fn cache_fits(policy: &Policy, mode: Option<Mode>, cache_size: u64) -> Result<(), String> {
    let resolved = policy.resolve(mode);
    let block = u64::from(resolved.block_size);
    let blocks = cache_size / block;
    let most = u64::from(u32::MAX - 1);
    if blocks > most {
        return Err(format!(
            "--cache-size {cache_size} is {blocks} blocks of {block} bytes; a cache holds at \
             most {most}: give the policy a larger block_size"
        ));
    }
    let sample = Cache::new(&resolved, resolved.cache_config(SAMPLE_ENTRIES * block));
    let need = (sample.memory_bytes() as u64).div_ceil(SAMPLE_ENTRIES) * blocks;
    match available_memory() {
        Some(have) if need > have => Err(format!(
            "--cache-size {cache_size} is {blocks} blocks of {block} bytes, whose tables need \
             at least {} MiB of memory; {} MiB are available: give a smaller cache or a \
             larger block_size",
            need >> 20,
            have >> 20
        )),
        _ => Ok(()),
    }
}

/// The host's available memory (`MemAvailable`), if it can be read.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(block: u32) -> Policy {
        Policy::parse(&format!(
            "name = \"t\"\nblock_size = {block}\nlow_watermark = 0.1\nhigh_watermark = 0.2\ndefault_priority = 3"
        ))
        .unwrap()
    }

    /// The three places as `check_mount` names them, given as s, h and m.
    fn three(ssd: &str, hdd: &str, mnt: &str) -> [(&'static str, &'static Path, PathBuf); 3] {
        [
            ("--ssd", Path::new("s"), PathBuf::from(ssd)),
            ("--hdd", Path::new("h"), PathBuf::from(hdd)),
            ("the mount point", Path::new("m"), PathBuf::from(mnt)),
        ]
    }

    #[test]
    fn nested_or_equal_directories_are_refused() {
        assert!(apart(&three("/srv/ssd", "/srv/hdd", "/srv/hdd-mnt")).is_ok());
        for (ssd, hdd, mnt, said) in [
            (
                "/srv/a",
                "/srv/a",
                "/m",
                "--ssd s is the same directory as --hdd h",
            ),
            ("/srv/h/cache", "/srv/h", "/m", "--ssd s is inside --hdd h"),
            ("/srv/s", "/srv/s/data", "/m", "--ssd s contains --hdd h"),
            (
                "/m",
                "/h",
                "/m",
                "--ssd s is the same directory as the mount point m",
            ),
            ("/s", "/m/h", "/m", "--hdd h is inside the mount point m"),
            ("/s", "/h", "/h/m", "--hdd h contains the mount point m"),
        ] {
            let e = apart(&three(ssd, hdd, mnt)).unwrap_err();
            assert!(e.starts_with(said), "{e}");
        }
    }

    #[test]
    fn a_missing_ssd_directory_resolves_through_what_exists() {
        let dir = std::env::temp_dir().join(format!("dss-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let got = resolved(&link.join("new/cache")).unwrap();
        assert_eq!(got, std::fs::canonicalize(&dir).unwrap().join("new/cache"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cache_beyond_the_block_count_or_the_memory_is_refused() {
        assert!(cache_fits(&policy(4096), None, 64 << 20).is_ok());
        let e = cache_fits(&policy(512), None, 4 << 40).unwrap_err();
        assert!(e.contains("a cache holds at most 4294967294"), "{e}");
        // 2^32 - 2 blocks of 1 MiB are within the count; their tables are not in memory.
        let e = cache_fits(&policy(1 << 20), None, (u64::from(u32::MAX) - 1) << 20).unwrap_err();
        assert!(e.contains("MiB of memory"), "{e}");
    }
}
