//! `dss-tier fsck`: check the cache an unmounted tier left on its SSD (after a crash, say)
//! against the HDD, and with `--repair` move every block whose only copy is on the SSD
//! to the HDD and leave an empty, consistent cache behind.

use crate::anchors::Anchors;
use crate::core::{JOURNAL, SLAB};
use crate::journal::{self, Journal, Loaded};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

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
    let jpath = ssd.join(JOURNAL);
    if !jpath.exists() {
        rep.notes.push("no journal: nothing cached".into());
        return Ok(rep);
    }
    let jfile = open_rw(&jpath).map_err(err)?;
    let slab = open_rw(&ssd.join(SLAB)).map_err(err)?;
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
                // Nothing can be recovered without the table; an empty journal makes the
                // next mount start cold instead of refusing.
                jfile.set_len(0).map_err(err)?;
                for ino in anchors.list().map_err(err)? {
                    anchors.remove(ino).map_err(err)?;
                }
                rep.notes
                    .push("repaired: journal reset, dirty blocks lost".into());
            }
            return Ok(rep);
        }
        Some(Ok(l)) => l,
    };
    let h = loaded.header;
    rep.notes.push(format!(
        "journal: {} entries of {} B, last shutdown {}",
        h.entries,
        h.block_size,
        if h.clean { "clean" } else { "unclean" }
    ));
    let need = u64::from(h.entries) * u64::from(h.block_size);
    if slab.metadata().map_err(err)?.len() < need {
        rep.problems.push(format!(
            "slab shorter than the {need} bytes the journal maps"
        ));
    }
    if !loaded.corrupt.is_empty() {
        rep.problems.push(format!(
            "{} records fail their checksum (slots {:?}...)",
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
