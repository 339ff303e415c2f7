//! `dss-tier fsck`: check the cache an unmounted tier left on its SSD (after a crash, say)
//! against the HDD, and with `--repair` move every block whose only copy is on the SSD
//! to the HDD and leave an empty, consistent cache behind.
//!
//! It also finds a lost SSD: the HDD's anchors name files whose latest blocks were only
//! on the SSD, but the SSD no longer holds them (no journal, or no slab behind the
//! journal). The HDD copies of those files are stale, so they are moved out of the tree
//! into `.dss-tier/lost/TIME/` (never served again) and the loss is appended to
//! `.dss-tier/ssd-loss.json`, which `dss-tier stats` reports. A replicated store above
//! the tier (Swift) then sees the files missing and restores them from other replicas.

use crate::anchors::Anchors;
use crate::journal::{self, Journal, Loaded};
use crate::layout::{HIDDEN, JOURNAL, SLAB};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The record of SSD losses on the HDD, under HIDDEN.
pub const LOSS_REPORT: &str = "ssd-loss.json";
/// Where the stale files of each loss go, under HIDDEN.
pub const LOST_DIR: &str = "lost";

#[derive(Debug, Default)]
pub struct WriteBack {
    pub written: u32,
    /// Dirty records whose file is gone (no anchor).
    pub orphaned: u32,
    /// Dirty records naming a block another record names too (left out).
    pub conflicts: u32,
}

/// Keys named by more than one non-empty record: the table cannot say which is current.
fn conflicting(l: &Loaded) -> HashSet<dss_engine::BlockKey> {
    let mut seen = HashSet::new();
    let mut dup = HashSet::new();
    for (_, r) in &l.records {
        if !seen.insert(r.key) {
            dup.insert(r.key);
        }
    }
    dup
}

/// Write every dirty or pinned block of `l` (read from `slab` with the journal's own
/// geometry) to its file on the HDD, and sync the files written.
pub fn write_back_all(slab: &File, l: &Loaded, anchors: &Anchors) -> io::Result<WriteBack> {
    let bs = u64::from(l.header.block_size);
    let dup = conflicting(l);
    let mut out = WriteBack::default();
    let mut files: HashMap<u64, Option<File>> = HashMap::new();
    let mut buf = vec![0u8; bs as usize];
    for &(slot, rec) in &l.records {
        if !rec.is_dirty() {
            continue;
        }
        if dup.contains(&rec.key) {
            out.conflicts += 1;
            continue;
        }
        let f = files
            .entry(rec.key.file)
            .or_insert_with(|| anchors.open_file(rec.key.file).ok());
        let Some(f) = f else {
            out.orphaned += 1;
            continue;
        };
        slab.read_exact_at(&mut buf, u64::from(slot) * bs)?;
        let valid = (rec.valid as usize).min(buf.len());
        let off = rec.key.index * bs;
        f.write_all_at(&buf[..valid], off)?;
        if f.metadata()?.len() < off + valid as u64 {
            f.set_len(off + valid as u64)?;
        }
        out.written += 1;
    }
    for f in files.values().flatten() {
        f.sync_all()?;
    }
    Ok(out)
}

#[derive(Debug, Default)]
pub struct Report {
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

fn open_rw(p: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(p)
}

/// Check (and with `repair`, fix) the cache in `ssd` in front of `hdd`.
pub fn fsck(ssd: &Path, hdd: &Path, repair: bool) -> Result<Report, String> {
    let err = |e: io::Error| e.to_string();
    let mut rep = Report::default();
    if let Some(loss) = detect_loss(ssd, hdd)? {
        rep.problems.push(format!(
            "SSD cache lost: {}, while {} files on the HDD had blocks whose only copy was \
             on the SSD (their HDD copies are stale)",
            loss.reason,
            loss.inodes.len()
        ));
        if repair {
            let ev = quarantine(ssd, hdd, &loss)?;
            rep.notes.push(format!(
                "repaired: {} stale files moved to {}",
                ev.files.len(),
                ev.moved_to
            ));
        }
        return Ok(rep);
    }
    let jpath = ssd.join(JOURNAL);
    if !jpath.exists() {
        rep.notes.push("no journal: nothing cached".into());
        return Ok(rep);
    }
    let at = |p: &Path, e: io::Error| format!("{}: {e}", p.display());
    let jfile = open_rw(&jpath).map_err(|e| at(&jpath, e))?;
    let slab_path = ssd.join(SLAB);
    let slab = journal::open_rw_create(&slab_path).map_err(|e| at(&slab_path, e))?;
    let anchors = Anchors::open(hdd).map_err(err)?;
    let loaded = match journal::load(&jfile).map_err(err)? {
        None => {
            rep.notes.push("empty journal: nothing cached".into());
            return Ok(rep);
        }
        Some(Err(e)) => {
            rep.problems
                .push(format!("{e}: the cache cannot be read back"));
            if repair {
                // Nothing can be recovered without the table: every anchored file may be
                // stale on the HDD, so those are set aside; an empty journal makes the next
                // mount start cold instead of refusing.
                let loss = Loss {
                    reason: format!("unreadable journal ({e})"),
                    inodes: anchors.list().map_err(err)?.into_iter().collect(),
                };
                let ev = quarantine(ssd, hdd, &loss)?;
                rep.notes.push(format!(
                    "repaired: journal reset, {} files with lost blocks moved to {}",
                    ev.files.len(),
                    ev.moved_to
                ));
            }
            return Ok(rep);
        }
        Some(Ok(l)) => l,
    };
    let h = loaded.header;
    let shutdown = match (h.clean, h.clean_at) {
        (false, _) => "unclean".to_string(),
        (true, 0) => "clean".to_string(),
        (true, at) => {
            let ago = crate::journal::now_ns().saturating_sub(at) / 1_000_000_000;
            format!("clean, {ago} s ago")
        }
    };
    rep.notes.push(format!(
        "journal: {} entries of {} B, last shutdown {shutdown}",
        h.entries, h.block_size,
    ));
    let need = u64::from(h.entries) * u64::from(h.block_size);
    if slab.metadata().map_err(err)?.len() < need {
        rep.problems.push(format!(
            "slab shorter than the {need} bytes the journal maps"
        ));
    }
    if !loaded.corrupt.is_empty() {
        rep.problems.push(format!(
            "{} records fail their checksum or lie past the largest file (slots {:?}...)",
            loaded.corrupt.len(),
            &loaded.corrupt[..loaded.corrupt.len().min(8)]
        ));
    }
    let dup = conflicting(&loaded);
    if !dup.is_empty() {
        rep.problems
            .push(format!("{} blocks are named by two records", dup.len()));
    }
    let mut per_class: BTreeMap<u8, (u32, u32)> = BTreeMap::new();
    let mut dirty_files = HashSet::new();
    let mut orphans = 0;
    for (_, r) in &loaded.records {
        let e = per_class.entry(r.class).or_default();
        if r.is_dirty() {
            e.1 += 1;
            if dirty_files.insert(r.key.file) && anchors.open_file(r.key.file).is_err() {
                orphans += 1;
            }
        } else {
            e.0 += 1;
        }
    }
    if orphans > 0 {
        rep.problems.push(format!(
            "{orphans} files with dirty blocks have no anchor (deleted files)"
        ));
    }
    let stale: Vec<u64> = anchors
        .list()
        .map_err(err)?
        .into_iter()
        .filter(|i| !dirty_files.contains(i))
        .collect();
    if !stale.is_empty() {
        rep.notes.push(format!(
            "{} anchors without dirty blocks (removed at the next mount)",
            stale.len()
        ));
    }
    for (c, (clean, dirty)) in &per_class {
        rep.notes
            .push(format!("class {c}: {clean} clean, {dirty} dirty blocks"));
    }
    if repair {
        let wb = write_back_all(&slab, &loaded, &anchors).map_err(err)?;
        let mut j = Journal::create(jfile, h.block_size, h.entries).map_err(err)?;
        j.set_clean(true).map_err(err)?;
        for ino in anchors.list().map_err(err)? {
            anchors.remove(ino).map_err(err)?;
        }
        anchors.sync().map_err(err)?;
        rep.notes.push(format!(
            "repaired: {} blocks written back to the HDD, {} orphaned and {} conflicting \
             dropped; the cache is empty",
            wb.written, wb.orphaned, wb.conflicts
        ));
    }
    Ok(rep)
}

/// Files on the HDD whose latest blocks the SSD should hold but does not.
#[derive(Debug)]
pub struct Loss {
    pub reason: String,
    /// Inode numbers (on the HDD) of the files concerned.
    pub inodes: HashSet<u64>,
}

/// One loss as `ssd-loss.json` keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LossEvent {
    /// Seconds since the epoch when the loss was found.
    pub time: u64,
    pub reason: String,
    /// The stale files set aside, relative to the HDD's root (the mount's root).
    pub files: Vec<String>,
    /// Anchored files that no name led to (deleted files): nothing to set aside.
    pub unnamed: u32,
    /// Where the files went, relative to the HDD's root.
    pub moved_to: String,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LossReport {
    pub events: Vec<LossEvent>,
}

pub fn loss_report_path(hdd: &Path) -> PathBuf {
    hdd.join(HIDDEN).join(LOSS_REPORT)
}

/// The losses recorded on the HDD (none when there is no report).
pub fn read_loss_report(hdd: &Path) -> LossReport {
    std::fs::read_to_string(loss_report_path(hdd))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Whether the SSD lost blocks the HDD's anchors say it holds: there is no journal, or
/// the journal maps dirty blocks into a slab that is missing or too short. An unreadable
/// journal is not judged here (mounting refuses it; `fsck --repair` handles it).
pub fn detect_loss(ssd: &Path, hdd: &Path) -> Result<Option<Loss>, String> {
    let err = |e: io::Error| e.to_string();
    let anchors = Anchors::open(hdd).map_err(err)?;
    let anchored: HashSet<u64> = anchors.list().map_err(err)?.into_iter().collect();
    if anchored.is_empty() {
        return Ok(None);
    }
    let jfile = match File::open(ssd.join(JOURNAL)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Some(Loss {
                reason: "the SSD holds no journal".into(),
                inodes: anchored,
            }));
        }
        Err(e) => return Err(format!("{}: {e}", ssd.join(JOURNAL).display())),
    };
    let loaded = match journal::load(&jfile).map_err(err)? {
        None => {
            return Ok(Some(Loss {
                reason: "the SSD's journal is empty".into(),
                inodes: anchored,
            }));
        }
        Some(Err(_)) => return Ok(None),
        Some(Ok(l)) => l,
    };
    let dirty: HashSet<u64> = loaded
        .records
        .iter()
        .filter(|(_, r)| r.is_dirty())
        .map(|(_, r)| r.key.file)
        .collect();
    let need = u64::from(loaded.header.entries) * u64::from(loaded.header.block_size);
    let slab_len = std::fs::metadata(ssd.join(SLAB))
        .map(|m| m.len())
        .unwrap_or(0);
    if !dirty.is_empty() && slab_len < need {
        return Ok(Some(Loss {
            reason: format!("the SSD's slab holds {slab_len} of the {need} bytes the journal maps"),
            inodes: dirty.intersection(&anchored).copied().collect(),
        }));
    }
    Ok(None)
}

/// Every path under `root` (but not under HIDDEN at the top) naming one of `inodes`.
fn names_of(root: &Path, inodes: &HashSet<u64>) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            let path = e.path();
            if dir == root && e.file_name() == HIDDEN {
                continue;
            }
            let md = std::fs::symlink_metadata(&path)?;
            if md.is_dir() {
                todo.push(path);
            } else if md.is_file() && inodes.contains(&md.ino()) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Set aside every file `loss` names (moved under HIDDEN/lost/TIME, keeping its path),
/// drop their anchors, empty a journal whose blocks are gone, and record the loss.
pub fn quarantine(ssd: &Path, hdd: &Path, loss: &Loss) -> Result<LossEvent, String> {
    let err = |e: io::Error| e.to_string();
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut rel_dir = PathBuf::from(HIDDEN).join(LOST_DIR).join(time.to_string());
    let mut n = 1;
    while hdd.join(&rel_dir).exists() {
        rel_dir = PathBuf::from(HIDDEN)
            .join(LOST_DIR)
            .join(format!("{time}.{n}"));
        n += 1;
    }
    let names = names_of(hdd, &loss.inodes).map_err(err)?;
    let mut files = Vec::new();
    let mut named = HashSet::new();
    for path in &names {
        let rel = path.strip_prefix(hdd).map_err(|e| e.to_string())?;
        let to = hdd.join(&rel_dir).join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(err)?;
        }
        if let Ok(md) = std::fs::symlink_metadata(path) {
            named.insert(md.ino());
        }
        std::fs::rename(path, &to).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push(rel.to_string_lossy().into_owned());
    }
    let anchors = Anchors::open(hdd).map_err(err)?;
    for &ino in &loss.inodes {
        anchors.remove(ino).map_err(err)?;
    }
    anchors.sync().map_err(err)?;
    // A journal whose dirty records point into a lost slab would restore zeros.
    if let Ok(j) = OpenOptions::new().write(true).open(ssd.join(JOURNAL)) {
        j.set_len(0).map_err(err)?;
        j.sync_all().map_err(err)?;
    }
    let ev = LossEvent {
        time,
        reason: loss.reason.clone(),
        files,
        unnamed: loss.inodes.len().saturating_sub(named.len()) as u32,
        moved_to: rel_dir.to_string_lossy().into_owned(),
    };
    let mut report = read_loss_report(hdd);
    report.events.push(ev.clone());
    let path = loss_report_path(hdd);
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, text + "\n").map_err(err)?;
    File::open(&tmp).and_then(|f| f.sync_all()).map_err(err)?;
    std::fs::rename(&tmp, &path).map_err(err)?;
    File::open(hdd.join(HIDDEN))
        .and_then(|f| f.sync_all())
        .map_err(err)?;
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Record;
    use crate::scratch::Scratch;
    use dss_engine::{BlockKey, Durable};

    fn dirs(name: &str) -> (Scratch, PathBuf, PathBuf) {
        let base = Scratch::new("fsck", name);
        let (ssd, hdd) = (base.join("ssd"), base.join("hdd"));
        std::fs::create_dir_all(&ssd).unwrap();
        std::fs::create_dir_all(hdd.join("objects/7")).unwrap();
        (base, ssd, hdd)
    }

    /// A file on the HDD with an anchor and a dirty record in a fresh journal and slab.
    fn cached_dirty(ssd: &Path, hdd: &Path, name: &str) -> u64 {
        let path = hdd.join(name);
        std::fs::write(&path, b"old contents").unwrap();
        let f = File::open(&path).unwrap();
        let ino = f.metadata().unwrap().ino();
        Anchors::open(hdd).unwrap().link(&f, ino).unwrap();
        let jfile = open_rw_create(&ssd.join(JOURNAL));
        let mut j = Journal::create(jfile, 4096, 16).unwrap();
        let rec = Record {
            key: BlockKey {
                file: ino,
                index: 0,
            },
            valid: 12,
            class: 25,
            state: Durable::Dirty,
        };
        j.set(3, &rec);
        j.sync().unwrap();
        open_rw_create(&ssd.join(SLAB)).set_len(16 * 4096).unwrap();
        ino
    }

    fn open_rw_create(p: &Path) -> File {
        journal::open_rw_create(p).unwrap()
    }

    #[test]
    fn an_intact_cache_is_no_loss() {
        let (_scratch, ssd, hdd) = dirs("intact");
        assert!(
            detect_loss(&ssd, &hdd).unwrap().is_none(),
            "nothing anchored"
        );
        cached_dirty(&ssd, &hdd, "objects/7/a.data");
        assert!(detect_loss(&ssd, &hdd).unwrap().is_none());
    }

    #[test]
    fn a_wiped_ssd_sets_the_stale_files_aside_and_is_recorded() {
        let (_scratch, ssd, hdd) = dirs("wiped");
        let ino = cached_dirty(&ssd, &hdd, "objects/7/a.data");
        std::fs::write(hdd.join("objects/7/other.data"), b"never cached").unwrap();
        std::fs::remove_dir_all(&ssd).unwrap();
        std::fs::create_dir_all(&ssd).unwrap();
        let loss = detect_loss(&ssd, &hdd).unwrap().expect("the loss is found");
        assert_eq!(loss.inodes, HashSet::from([ino]));
        assert!(loss.reason.contains("no journal"));
        let rep = fsck(&ssd, &hdd, false).unwrap();
        assert!(rep.problems[0].starts_with("SSD cache lost"), "{rep:?}");
        assert!(
            hdd.join("objects/7/a.data").exists(),
            "fsck alone changes nothing"
        );
        let ev = quarantine(&ssd, &hdd, &loss).unwrap();
        assert_eq!(ev.files, vec!["objects/7/a.data".to_string()]);
        assert!(
            !hdd.join("objects/7/a.data").exists(),
            "the stale copy is gone"
        );
        assert!(hdd.join("objects/7/other.data").exists());
        let moved = hdd.join(&ev.moved_to).join("objects/7/a.data");
        assert_eq!(std::fs::read(moved).unwrap(), b"old contents");
        assert!(Anchors::open(&hdd).unwrap().list().unwrap().is_empty());
        assert_eq!(read_loss_report(&hdd).events.len(), 1);
        assert!(detect_loss(&ssd, &hdd).unwrap().is_none(), "reported once");
        assert!(fsck(&ssd, &hdd, false).unwrap().problems.is_empty());
    }

    #[test]
    fn a_lost_slab_behind_a_journal_is_a_loss_too() {
        let (_scratch, ssd, hdd) = dirs("slab");
        let ino = cached_dirty(&ssd, &hdd, "objects/7/b.data");
        std::fs::remove_file(ssd.join(SLAB)).unwrap();
        let loss = detect_loss(&ssd, &hdd).unwrap().expect("the loss is found");
        assert_eq!(loss.inodes, HashSet::from([ino]));
        let rep = fsck(&ssd, &hdd, true).unwrap();
        assert!(rep.notes[0].contains("1 stale files moved"), "{rep:?}");
        // The journal no longer maps blocks that are gone.
        let j = File::open(ssd.join(JOURNAL)).unwrap();
        assert!(journal::load(&j).unwrap().is_none());
        assert!(!hdd.join("objects/7/b.data").exists());
        assert_eq!(
            read_loss_report(&hdd).events[0].files,
            vec!["objects/7/b.data"]
        );
    }
}
