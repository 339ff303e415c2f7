//! What the operator commands print beside the stats and content documents: the stats as
//! CSV (`stats --csv`) and the table of mounts (`list`).

use crate::stats::Stats;
use serde::Serialize;
use std::path::PathBuf;

/// The CSV header: the row's kind and id, the class columns, then the device columns.
/// A row leaves the other kind's columns empty.
const CSV_HEADER: &str = "kind,id,cached_bytes,clean_bytes,dirty_bytes,hits,misses,\
bypassed_bytes,evicted_bytes,written_back_bytes,model,ops,bytes,busy_s,read_ops,\
write_ops,read_bytes,write_bytes,writeback_ops,writeback_bytes,writeback_busy_s";

/// `stats --csv`: one row per class the stats list (by class number), then one per
/// device.
pub fn stats_csv(s: &Stats) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    let mut ids: Vec<&String> = s.classes.keys().collect();
    ids.sort_by_key(|k| k.parse::<u32>().unwrap_or(u32::MAX));
    for id in ids {
        let c = &s.classes[id];
        out += &format!(
            "class,{id},{},{},{},{},{},{},{},{},,,,,,,,,,,\n",
            c.cached_bytes,
            c.clean_bytes,
            c.dirty_bytes,
            c.hits,
            c.misses,
            c.bypassed_bytes,
            c.evicted_bytes,
            c.written_back_bytes
        );
    }
    for (name, d) in &s.devices {
        out += &format!(
            "device,{name},,,,,,,,,{},{},{},{},{},{},{},{},{},{},{}\n",
            csv_field(&d.model),
            d.ops,
            d.bytes,
            d.busy_s,
            d.read_ops,
            d.write_ops,
            d.read_bytes,
            d.write_bytes,
            d.writeback_ops,
            d.writeback_bytes,
            d.writeback_busy_s
        );
    }
    out
}

/// A model spec such as "hdd:dilation=2,pagecache=1G" holds commas: quoted.
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// One dss-tier mount as `list` shows it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MountRow {
    pub mountpoint: PathBuf,
    pub hdd: PathBuf,
    /// None while the daemon does not answer (killed, or its mount left behind).
    pub mode: Option<String>,
    pub policy: Option<String>,
    pub cache_bytes: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub pid: Option<u32>,
}

impl MountRow {
    pub fn new(mountpoint: PathBuf, hdd: PathBuf, stats: Option<&Stats>) -> MountRow {
        let bs = |n: u32, s: &Stats| u64::from(n) * u64::from(s.block_size);
        MountRow {
            mountpoint,
            hdd,
            mode: stats.map(|s| s.mode.clone()),
            policy: stats.map(|s| s.policy.clone()),
            cache_bytes: stats.map(|s| bs(s.cache_entries, s)),
            dirty_bytes: stats.map(|s| bs(s.dirty_entries, s)),
            pid: stats.map(|s| s.pid),
        }
    }
}

/// `list`: a table of the mounts, one line each.
pub fn mounts_table(rows: &[MountRow]) -> String {
    let width = rows
        .iter()
        .map(|r| r.mountpoint.as_os_str().len())
        .chain(["MOUNTPOINT".len()])
        .max()
        .unwrap_or(0);
    let mut out = format!(
        "{:<width$}  {:<6}  {:>10}  {:>10}  {:<16}  {:>8}  HDD\n",
        "MOUNTPOINT", "MODE", "CACHE", "DIRTY", "POLICY", "PID"
    );
    for r in rows {
        let dash = || "-".to_string();
        out += &format!(
            "{:<width$}  {:<6}  {:>10}  {:>10}  {:<16}  {:>8}  {}\n",
            r.mountpoint.display(),
            r.mode.clone().unwrap_or_else(|| "dead".into()),
            r.cache_bytes.map_or_else(dash, human),
            r.dirty_bytes.map_or_else(dash, human),
            r.policy.clone().unwrap_or_else(dash),
            r.pid.map_or_else(dash, |p| p.to_string()),
            r.hdd.display()
        );
    }
    out
}

/// Bytes in the largest binary unit that keeps a whole number, as `--cache-size` takes
/// them ("64MiB", "1GiB", "4096").
fn human(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n > 0 && n.trailing_zeros() >= shift {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{ClassStats, DevStats};

    fn stats() -> Stats {
        let class = ClassStats {
            cached_bytes: 8192,
            clean_bytes: 4096,
            dirty_bytes: 4096,
            hits: 3,
            misses: 1,
            bypassed_bytes: 0,
            evicted_bytes: 0,
            written_back_bytes: 4096,
        };
        let dev = DevStats {
            model: "hdd:dilation=2,x=1".into(),
            ops: 2,
            bytes: 8192,
            busy_s: 0.5,
            read_ops: 1,
            write_ops: 1,
            read_bytes: 4096,
            write_bytes: 4096,
            writeback_ops: 1,
            writeback_bytes: 4096,
            writeback_busy_s: 0.25,
        };
        Stats {
            mode: "dss".into(),
            pid: 7,
            policy: "reference".into(),
            block_size: 4096,
            cache_entries: 16384,
            free_entries: 16000,
            dirty_entries: 1,
            pinned_entries: 0,
            syncer_active: false,
            classes: [("24".to_string(), class.clone()), ("3".to_string(), class)].into(),
            devices: [("hdd".to_string(), dev)].into(),
            passthrough: true,
            passthrough_opens: 3,
            fuse_requests: Default::default(),
            fuse_request_s: Default::default(),
            fuse_under_way_seen: 0,
            fuse_class_requests: Default::default(),
            meta_memory_bytes: 0,
            meta_memory_hits: 0,
        }
    }

    #[test]
    fn csv_rows_per_class_and_device() {
        let csv = stats_csv(&stats());
        let rows: Vec<&str> = csv.lines().collect();
        let columns = rows[0].split(',').count();
        assert_eq!(rows.len(), 4);
        assert!(rows[1].starts_with("class,3,8192,4096,4096,3,1,0,0,4096,"));
        assert!(rows[2].starts_with("class,24,"));
        assert_eq!(
            rows[3],
            "device,hdd,,,,,,,,,\"hdd:dilation=2,x=1\",2,8192,0.5,1,1,4096,4096,1,4096,0.25"
        );
        for r in &rows[1..3] {
            assert_eq!(r.split(',').count(), columns, "{r}");
        }
    }

    #[test]
    fn the_table_says_when_the_kernel_serves_files_itself() {
        let mut s = stats();
        assert!(s.render().contains("passthrough: on, 3 handles opened"));
        s.passthrough = false;
        assert!(!s.render().contains("passthrough"));
    }

    #[test]
    fn mount_table() {
        let s = stats();
        let rows = [
            MountRow::new("/srv/node/d1".into(), "/srv/hdd/d1".into(), Some(&s)),
            MountRow::new("/m".into(), "/h".into(), None),
        ];
        let t = mounts_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].starts_with("/srv/node/d1  dss"), "{t}");
        assert!(
            lines[1].contains("64MiB") && lines[1].ends_with("/srv/hdd/d1"),
            "{t}"
        );
        assert!(lines[2].contains("dead"), "{t}");
        assert_eq!(human(4096), "4KiB");
        assert_eq!(human(1000), "1000");
    }
}
