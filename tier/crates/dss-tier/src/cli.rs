//! The command line of `dss-tier`: its commands, their options and how each value is
//! checked, before anything is done.

use clap::{Args, Parser, Subcommand, ValueEnum};
use dss_engine::Mode;
use dss_engine::device::Model;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "dss-tier",
    version,
    about = "Class-priority write-back SSD cache in front of an HDD, mounted as a FUSE \
             filesystem (a Swift device)",
    after_help = "Device models P: none, st1000nm0011, intel710, hdd, ssd, optionally with \
                  :key=value,...\nSizes: a whole number of bytes, or with K, M, G, T (KiB, \
                  MiB, ...)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// How metadata writes are charged (`--meta-writes`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaWrites {
    /// Each waits for its device.
    Sync,
    /// Each keeps its device busy but returns at once; fsync waits for them.
    Buffered,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Mount an SSD cache directory in front of an HDD directory on MOUNTPOINT
    Mount(MountArgs),
    /// Print a mount's cache counters per class and its device activity
    Stats(StatsArgs),
    /// Print what a mount's cache holds now, by class (and extents)
    Dump(DumpArgs),
    /// Unmount, returning once the daemon wrote every dirty block back and exited
    Umount(UmountArgs),
    /// Check an unmounted cache; --repair writes every dirty block to the HDD and
    /// empties the cache
    Fsck(FsckArgs),
    /// List the dss-tier mounts on this machine
    List(ListArgs),
    /// Write back every dirty block now; returns once it is on the HDD (root only)
    Flush(Target),
    /// Zero a mount's activity counters: hits, misses, bypassed, evicted, written back
    /// and the device counters (root only)
    ResetCounters(Target),
    /// Write back and empty the device models' page caches (`pagecache=`), as
    /// `echo 3 > /proc/sys/vm/drop_caches` does to a real disk's; the SSD cache stays
    /// (root only)
    DropCaches(Target),
    /// Read the mount's policy file again, or another one, while mounted; a file that
    /// does not parse or that changes the cache's shape is refused and the policy in
    /// force stays (root only)
    ReloadPolicy(ReloadArgs),
}

#[derive(Args, Debug)]
pub struct MountArgs {
    /// SSD cache directory (created if missing)
    #[arg(long, value_name = "DIR")]
    pub ssd: PathBuf,
    /// HDD directory: the data as Swift sees it
    #[arg(long, value_name = "DIR")]
    pub hdd: PathBuf,
    /// Size of the cache on the SSD
    #[arg(long, value_name = "SIZE", value_parser = cache_size)]
    pub cache_size: u64,
    /// Policy file (TOML)
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Overrides the policy's mode
    #[arg(long, value_name = "hdd|ssd|lru|dss|tiered", value_parser = mode)]
    pub mode: Option<Mode>,
    /// Model of the SSD whose time each access is charged
    #[arg(long, value_name = "P", default_value = "none", value_parser = model)]
    pub ssd_model: String,
    /// Model of the HDD whose time each access is charged
    #[arg(long, value_name = "P", default_value = "none", value_parser = model)]
    pub hdd_model: String,
    /// Memory the host keeps file-system metadata in (the kernel's inode, dentry and
    /// buffer caches): metadata reads of blocks held there reach neither the cache nor a
    /// device model. 0 sends every one through the cache
    #[arg(long, value_name = "SIZE", default_value = "0", value_parser = parse_size)]
    pub meta_memory: u64,
    /// Metadata writes (creates, renames, xattrs): `sync` makes each wait for its
    /// device; `buffered` charges the device but returns at once, and an fsync waits for
    /// them, as ext4's journal does
    #[arg(long, value_name = "HOW", default_value = "sync")]
    pub meta_writes: MetaWrites,
    /// FUSE threads: requests served at once (a Swift node has up to 3 x 8 workers)
    #[arg(long, value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
    /// Keep the clean blocks of a clean unmount (only if the HDD directory did not
    /// change since)
    #[arg(long)]
    pub warm: bool,
    /// Send every read and write through the daemon, even of files the kernel could
    /// serve from the HDD itself (policy placing everything on the HDD, no HDD model)
    #[arg(long)]
    pub no_passthrough: bool,
    /// Detach, returning once the mount is visible; the daemon's messages go to
    /// daemon.log in the SSD directory
    #[arg(long)]
    pub daemon: bool,
    /// The mount point
    pub mountpoint: PathBuf,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The document as JSON
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// The cache's content instead (as `dump`)
    #[arg(long, conflicts_with = "csv")]
    pub content: bool,
    /// One CSV row per class and per device
    #[arg(long)]
    pub csv: bool,
    /// The mount point
    pub mountpoint: PathBuf,
}

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// The document as JSON
    #[arg(long)]
    pub json: bool,
    /// The mount point
    pub mountpoint: PathBuf,
}

#[derive(Args, Debug)]
pub struct UmountArgs {
    /// How long to wait for the daemon's write-back (at most 4294967295: the deadline
    /// must fit the clock)
    #[arg(long, value_name = "SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(..=u64::from(u32::MAX)))]
    pub timeout: u64,
    /// The mount point
    pub mountpoint: PathBuf,
}

#[derive(Args, Debug)]
pub struct FsckArgs {
    #[arg(long, value_name = "DIR")]
    pub ssd: PathBuf,
    #[arg(long, value_name = "DIR")]
    pub hdd: PathBuf,
    #[arg(long)]
    pub repair: bool,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// One JSON object per mount, in a list
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct Target {
    /// The mount point
    pub mountpoint: PathBuf,
}

#[derive(Args, Debug)]
pub struct ReloadArgs {
    /// Policy file to take instead of the mount's own (it becomes the mount's)
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The mount point
    pub mountpoint: PathBuf,
}

/// "64MiB", "1G", "4096": binary units, a bare number is bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
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

fn cache_size(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err("the cache needs a size above 0".into()),
        n => Ok(n),
    }
}

fn mode(s: &str) -> Result<Mode, String> {
    s.parse()
        .map_err(|e: dss_engine::PolicyError| e.to_string())
}

fn model(s: &str) -> Result<String, String> {
    Model::parse(s).map(|_| s.to_string()).map_err(|e| e.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    fn parse(line: &str) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("dss-tier").chain(line.split_whitespace()))
            .map(|c| c.command)
    }

    fn kind(line: &str) -> ErrorKind {
        parse(line).unwrap_err().kind()
    }

    const MOUNT: &str = "mount --ssd /s --hdd /h --cache-size 1M --policy p.toml";

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
    fn mount_takes_what_the_python_side_passes() {
        let line = format!(
            "{MOUNT} --mode lru --ssd-model intel710 --hdd-model st1000nm0011:dilation=2 \
             --meta-memory 24GiB --meta-writes buffered --warm --daemon /mnt"
        );
        let Command::Mount(m) = parse(&line).unwrap() else {
            panic!("not a mount")
        };
        assert_eq!(
            (m.cache_size, m.mode, m.mountpoint),
            (1 << 20, Some(Mode::Lru), "/mnt".into())
        );
        assert!(m.warm && m.daemon);
        assert_eq!((m.ssd_model.as_str(), m.threads), ("intel710", 32));
        assert_eq!(m.meta_memory, 24 << 30);
        assert_eq!(m.meta_writes, MetaWrites::Buffered);
        // The mount point may come first too.
        let Command::Mount(m) = parse(&format!("mount /mnt {}", &MOUNT[6..])).unwrap() else {
            panic!("not a mount")
        };
        assert_eq!((m.mode, m.ssd_model.as_str()), (None, "none"));
        assert_eq!(m.meta_memory, 0);
        assert_eq!(m.meta_writes, MetaWrites::Sync);
    }

    #[test]
    fn bad_mounts_are_refused() {
        assert_eq!(kind(MOUNT), ErrorKind::MissingRequiredArgument);
        assert_eq!(
            kind(&format!("{MOUNT} /mnt /other")),
            ErrorKind::UnknownArgument
        );
        assert_eq!(
            kind("mount --hdd /h --cache-size 1M --policy p /m"),
            ErrorKind::MissingRequiredArgument
        );
        for bad in [
            "--mode fast",
            "--cache-size 1X",
            "--cache-size 0",
            "--threads 0",
            "--threads many",
            "--ssd-model floppy",
            "--meta-memory lots",
            "--meta-memory 1.5G",
        ] {
            let line = match bad.strip_prefix("--cache-size") {
                Some(_) => format!("mount --ssd /s --hdd /h --policy p {bad} /m"),
                None => format!("{MOUNT} {bad} /m"),
            };
            assert_eq!(kind(&line), ErrorKind::ValueValidation, "{bad}");
        }
        assert_eq!(
            kind(&format!("{MOUNT} --meta-writes lazy /m")),
            ErrorKind::InvalidValue
        );
        assert_eq!(
            kind(&format!("{MOUNT} --bogus /m")),
            ErrorKind::UnknownArgument
        );
        assert_eq!(
            kind(&format!("{MOUNT} /m --policy")),
            ErrorKind::InvalidValue
        );
    }

    #[test]
    fn reporting_commands() {
        let Command::Stats(s) = parse("stats --json /m").unwrap() else {
            panic!()
        };
        assert!(s.json && !s.csv && !s.content);
        assert!(matches!(parse("stats --csv /m"), Ok(Command::Stats(s)) if s.csv));
        assert_eq!(kind("stats --csv --json /m"), ErrorKind::ArgumentConflict);
        assert_eq!(kind("stats --verbose /m"), ErrorKind::UnknownArgument);
        assert_eq!(kind("stats"), ErrorKind::MissingRequiredArgument);
        assert_eq!(kind("stats /a /b"), ErrorKind::UnknownArgument);
        assert!(matches!(parse("dump --json /m"), Ok(Command::Dump(d)) if d.json));
        assert!(matches!(parse("list"), Ok(Command::List(l)) if !l.json));
        assert_eq!(kind("list /m"), ErrorKind::UnknownArgument);
    }

    #[test]
    fn operator_commands() {
        let Command::Umount(u) = parse("umount --timeout 7 /m").unwrap() else {
            panic!()
        };
        assert_eq!((u.timeout, u.mountpoint), (7, "/m".into()));
        assert_eq!(kind("umount --timeout soon /m"), ErrorKind::ValueValidation);
        let forever = format!("umount --timeout {} /m", u64::MAX);
        assert_eq!(kind(&forever), ErrorKind::ValueValidation);
        let Command::Fsck(f) = parse("fsck --ssd /s --hdd /h --repair").unwrap() else {
            panic!()
        };
        assert!(f.repair);
        assert_eq!(kind("fsck --ssd /s"), ErrorKind::MissingRequiredArgument);
        assert_eq!(
            kind("fsck --ssd /s --hdd /h extra"),
            ErrorKind::UnknownArgument
        );
        assert!(matches!(parse("flush /m"), Ok(Command::Flush(_))));
        assert!(matches!(
            parse("reset-counters /m"),
            Ok(Command::ResetCounters(_))
        ));
        let Command::ReloadPolicy(r) = parse("reload-policy /m --policy /p.toml").unwrap() else {
            panic!()
        };
        assert_eq!(r.policy, Some("/p.toml".into()));
        assert_eq!(kind("reload-policy"), ErrorKind::MissingRequiredArgument);
        assert_eq!(kind("flush /m --now"), ErrorKind::UnknownArgument);
        assert_eq!(kind("defrag /m"), ErrorKind::InvalidSubcommand);
        assert_eq!(
            kind(""),
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
    }

    #[test]
    fn help_and_version() {
        assert_eq!(kind("--version"), ErrorKind::DisplayVersion);
        assert_eq!(kind("--help"), ErrorKind::DisplayHelp);
        assert_eq!(kind("mount --help"), ErrorKind::DisplayHelp);
        let help = parse("reload-policy --help").unwrap_err().to_string();
        assert!(help.contains("--policy <FILE>"), "{help}");
    }
}
