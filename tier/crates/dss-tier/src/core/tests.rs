//! Crash and replay without FUSE: dropping a `Core` without `shutdown` is what a
//! kill of the daemon leaves (the page cache keeps what was written out).
use super::open::Replay;
use super::{Core, MetaKind, xattr_kind};
use crate::journal;
use crate::layout::JOURNAL;
use crate::scratch::Scratch;
use dss_engine::{Mode, Policy};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::Arc;

const POLICY: &str = include_str!(concat!(env!("DSS_POLICIES_DIR"), "/reference.toml"));

struct Dirs(Scratch);

impl Dirs {
    fn new(name: &str) -> Dirs {
        let d = Scratch::new("core", name);
        std::fs::create_dir_all(d.join("ssd")).unwrap();
        std::fs::create_dir_all(d.join("hdd")).unwrap();
        Dirs(d)
    }
    fn ssd(&self) -> PathBuf {
        self.0.join("ssd")
    }
    fn hdd(&self) -> PathBuf {
        self.0.join("hdd")
    }
    fn open(&self, cache: u64, mode: Mode) -> (Core, Replay) {
        self.open_warm(cache, mode, false)
    }
    fn open_warm(&self, cache: u64, mode: Mode, warm: bool) -> (Core, Replay) {
        self.open_models(cache, mode, warm, "none")
    }
    fn open_models(&self, cache: u64, mode: Mode, warm: bool, ssd: &str) -> (Core, Replay) {
        self.open_policy(POLICY, cache, mode, warm, ssd, "none")
    }
    fn open_policy(
        &self,
        policy: &str,
        cache: u64,
        mode: Mode,
        warm: bool,
        ssd: &str,
        hdd: &str,
    ) -> (Core, Replay) {
        self.open_memory(policy, cache, mode, warm, (ssd, hdd), 0)
    }
    fn open_memory(
        &self,
        policy: &str,
        cache: u64,
        mode: Mode,
        warm: bool,
        (ssd, hdd): (&str, &str),
        meta_memory: u64,
    ) -> (Core, Replay) {
        let p = Policy::parse(policy).unwrap();
        let r = p.resolve(Some(mode));
        Core::open(
            &r,
            "t",
            p.classify.clone(),
            cache,
            &self.ssd(),
            &self.hdd(),
            ssd,
            hdd,
            meta_memory,
            warm,
        )
        .unwrap()
    }
    /// File `name` written with class 24 by a tier in `mode`, unmounted cleanly.
    fn written_and_unmounted(&self, name: &str, mode: Mode, data: &[u8]) -> Arc<File> {
        let (f, _) = self.file(name);
        let (core, _) = self.open(1 << 20, mode);
        core.write(&f, 24, 0, data).unwrap();
        let _held = core.shutdown().unwrap();
        f
    }
    fn no_anchors(&self) -> bool {
        std::fs::read_dir(self.hdd().join(".dss-tier/anchors"))
            .unwrap()
            .next()
            .is_none()
    }
    fn file(&self, name: &str) -> (Arc<File>, u64) {
        let f = journal::open_rw_create(&self.hdd().join(name)).unwrap();
        let ino = f.metadata().unwrap().ino();
        (Arc::new(f), ino)
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn ssd_writes(core: &Core) -> (u64, u64) {
    let s = &core.stats().devices["ssd"];
    (s.write_ops, s.write_bytes)
}

#[test]
fn an_fsync_charges_the_journal_pages_it_makes_durable_to_the_ssd_model() {
    let d = Dirs::new("journal-charge");
    let (core, _) = d.open_models(1 << 20, Mode::Dss, false, "intel710");
    let (f, ino) = d.file("a");
    core.write(&f, 24, 0, &pattern(4096, 3)).unwrap();
    let written = ssd_writes(&core);
    core.sync_file(ino, &f, false).unwrap();
    let synced = ssd_writes(&core);
    // The block's dirty record sits in the journal's first page.
    assert_eq!(synced, (written.0 + 1, written.1 + 4096));
    // Nothing new in the journal: a second fsync makes nothing more durable.
    core.sync_file(ino, &f, false).unwrap();
    assert_eq!(ssd_writes(&core), synced);
    // Rewrites between two syncs are charged once, when the sync makes them durable.
    for round in 0..3 {
        core.write(&f, 24 + round, 4096, &pattern(4096, round))
            .unwrap();
    }
    let before = ssd_writes(&core);
    core.sync_file(ino, &f, false).unwrap();
    assert_eq!(ssd_writes(&core), (before.0 + 1, before.1 + 4096));
}

#[test]
fn fsynced_blocks_survive_a_crash_and_reach_the_hdd_later() {
    let d = Dirs::new("fsync");
    let data = pattern(10_000, 1);
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        let (f, ino) = d.file("a");
        core.write(&f, 24, 0, &data).unwrap();
        core.sync_file(ino, &f, false).unwrap();
        let on_hdd = std::fs::read(d.hdd().join("a")).unwrap();
        assert_ne!(
            on_hdd, data,
            "fsync did not write back: the SSD holds the data"
        );
        assert!(
            d.hdd()
                .join(".dss-tier/anchors")
                .join(ino.to_string())
                .exists()
        );
    }
    // The daemon is gone; a new one replays the journal.
    let (core, replay) = d.open(1 << 20, Mode::Dss);
    assert_eq!(replay.restored, 3);
    assert!(!replay.previous_clean);
    let (f, ino) = d.file("a");
    assert_eq!(core.read(&f, 24, 0, 20_000).unwrap(), data);
    assert_eq!(core.stats().classes["24"].dirty_bytes, 3 * 4096);
    let _held = core.shutdown().unwrap();
    assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), data);
    assert!(
        !d.hdd()
            .join(".dss-tier/anchors")
            .join(ino.to_string())
            .exists(),
        "no anchor once nothing is dirty"
    );
}

/// (read, write) operations of device `dev` ("ssd" or "hdd").
fn dev_ops(core: &Core, dev: &str) -> (u64, u64) {
    let s = &core.stats().devices[dev];
    (s.read_ops, s.write_ops)
}

#[test]
fn adjacent_slots_move_in_one_call_and_scattered_ones_stay_intact() {
    let d = Dirs::new("runs");
    let (core, _) = d.open(1 << 20, Mode::Dss);
    let ((a, _), (b, _), (c, ino_c)) = (d.file("a"), d.file("b"), d.file("c"));
    // Two files written block by block in turn: their slots alternate.
    for i in 0..8u64 {
        core.write(&a, 24, i * 4096, &pattern(4096, i as u8))
            .unwrap();
        core.write(&b, 24, i * 4096, &pattern(4096, 100 + i as u8))
            .unwrap();
    }
    let (r0, w0) = dev_ops(&core, "ssd");
    let data = pattern(8 * 4096, 7);
    core.write(&a, 24, 0, &data).unwrap();
    assert_eq!(
        dev_ops(&core, "ssd").1 - w0,
        8,
        "eight hits on every other slot"
    );
    assert_eq!(core.read(&a, 24, 0, 8 * 4096).unwrap(), data);
    assert_eq!(dev_ops(&core, "ssd").0 - r0, 8);
    for i in 0..8u64 {
        let got = core.read(&b, 24, i * 4096, 4096).unwrap();
        assert_eq!(got, pattern(4096, 100 + i as u8), "block {i} of b");
    }
    // Sixteen fresh blocks take sixteen adjacent free slots: one write, one read.
    let (r0, w0) = dev_ops(&core, "ssd");
    let big = pattern(16 * 4096, 3);
    core.write(&c, 24, 0, &big).unwrap();
    assert_eq!(core.read(&c, 24, 0, big.len()).unwrap(), big);
    assert_eq!(dev_ops(&core, "ssd"), (r0 + 1, w0 + 1));
    // Truncation frees them so that a rewrite gets them back in order.
    core.truncate(ino_c, &c, big.len() as u64, 0).unwrap();
    let (_, w0) = dev_ops(&core, "ssd");
    let again = pattern(16 * 4096, 4);
    core.write(&c, 24, 0, &again).unwrap();
    assert_eq!(dev_ops(&core, "ssd").1, w0 + 1);
    assert_eq!(core.read(&c, 24, 0, again.len()).unwrap(), again);
}

#[test]
fn read_fills_of_adjacent_blocks_move_in_one_call_each_way() {
    use std::os::unix::fs::FileExt;
    let d = Dirs::new("fills");
    let (core, _) = d.open(1 << 20, Mode::Dss);
    let (f, _) = d.file("f");
    // On the HDD only, 16 blocks and a tail: every block read misses and is filled.
    let data = pattern(16 * 4096 + 100, 9);
    f.write_all_at(&data, 0).unwrap();
    let (h0, s0) = (dev_ops(&core, "hdd"), dev_ops(&core, "ssd"));
    // Unaligned at both ends: from inside block 0 to the file's end.
    assert_eq!(core.read(&f, 24, 10, 1 << 20).unwrap(), data[10..]);
    assert_eq!(
        dev_ops(&core, "hdd").0 - h0.0,
        1,
        "one HDD read for 17 blocks"
    );
    assert_eq!(
        dev_ops(&core, "ssd").1 - s0.1,
        1,
        "one slab write for 17 blocks"
    );
    assert_eq!(core.stats().classes["24"].misses, 17);
    // All of it is cached now: read back from the slab alone.
    let (h1, s1) = (dev_ops(&core, "hdd"), dev_ops(&core, "ssd"));
    assert_eq!(core.read(&f, 24, 0, data.len()).unwrap(), data);
    assert_eq!(core.read(&f, 24, 4095, 2).unwrap(), data[4095..4097]);
    assert_eq!(dev_ops(&core, "hdd"), h1);
    assert_eq!(dev_ops(&core, "ssd").0 - s1.0, 2);
}

#[test]
fn a_fill_reads_the_hdd_once_however_scattered_its_slots() {
    use std::os::unix::fs::FileExt;
    let d = Dirs::new("scattered-fills");
    // Sixteen slots: two files read block by block in turn fill them alternately.
    let (core, _) = d.open(16 * 4096, Mode::Dss);
    let ((a, ino_a), (b, _), (c, _)) = (d.file("a"), d.file("b"), d.file("c"));
    for (f, seed) in [(&a, 1), (&b, 2)] {
        f.write_all_at(&pattern(8 * 4096, seed), 0).unwrap();
    }
    for i in 0..8u64 {
        core.read(&a, 24, i * 4096, 4096).unwrap();
        core.read(&b, 24, i * 4096, 4096).unwrap();
    }
    // a's blocks go: every other slot is free.
    core.discard_file(ino_a, 8 * 4096);
    let data = pattern(8 * 4096, 3);
    c.write_all_at(&data, 0).unwrap();
    let (h0, s0) = (dev_ops(&core, "hdd"), dev_ops(&core, "ssd"));
    assert_eq!(core.read(&c, 24, 0, data.len()).unwrap(), data);
    assert_eq!(
        dev_ops(&core, "hdd").0 - h0.0,
        1,
        "one HDD read for 8 blocks"
    );
    assert_eq!(
        dev_ops(&core, "ssd").1 - s0.1,
        8,
        "a slab write per scattered slot"
    );
    assert_eq!(core.stats().classes["24"].cached_bytes, 16 * 4096);
    // Every block landed in its own slot: c and b read back from the slab alone.
    let h1 = dev_ops(&core, "hdd");
    assert_eq!(core.read(&c, 24, 0, data.len()).unwrap(), data);
    assert_eq!(
        core.read(&b, 24, 0, 8 * 4096).unwrap(),
        pattern(8 * 4096, 2)
    );
    assert_eq!(dev_ops(&core, "hdd"), h1);
}

#[test]
fn unaligned_writes_keep_the_bytes_around_them() {
    let d = Dirs::new("unaligned");
    let (f, ino) = d.file("a");
    let old = pattern(40_000, 5);
    std::fs::write(d.hdd().join("a"), &old).unwrap();
    let (core, _) = d.open(1 << 20, Mode::Dss);
    // Starts and ends inside blocks that only the HDD holds so far.
    let new = pattern(20_000, 9);
    core.write(&f, 24, 3000, &new).unwrap();
    let mut want = old.clone();
    want[3000..23_000].copy_from_slice(&new);
    assert_eq!(core.read(&f, 24, 0, 50_000).unwrap(), want);
    // And once more across the cached blocks and past the end of the file.
    let tail = pattern(10_000, 11);
    core.write(&f, 24, 35_000, &tail).unwrap();
    want.resize(45_000, 0);
    want[35_000..].copy_from_slice(&tail);
    assert_eq!(core.read(&f, 24, 0, 50_000).unwrap(), want);
    core.flush_file(ino, 45_000).unwrap();
    assert_eq!(core.stats().dirty_entries, 0);
    assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), want);
}

#[test]
fn clean_copies_are_never_served_after_a_restart() {
    let d = Dirs::new("clean");
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        let (f, _) = d.file("a");
        core.write(&f, 24, 0, &pattern(4096, 1)).unwrap();
        core.flush_all().unwrap();
        assert_eq!(core.stats().classes["24"].clean_bytes, 4096);
    }
    // The HDD copy moves on after the cache called its copy clean.
    let newer = pattern(4096, 2);
    std::fs::write(d.hdd().join("a"), &newer).unwrap();
    let (core, replay) = d.open(1 << 20, Mode::Dss);
    assert_eq!((replay.restored, replay.clean_dropped), (0, 1));
    let (f, _) = d.file("a");
    assert_eq!(core.read(&f, 24, 0, 4096).unwrap(), newer);
}

/// File "a" written (two blocks) and fsynced, its blocks dropped first if `discarded`,
/// then its last name removed, and the tier killed: what the next mount replays.
fn removed_then_crashed(d: &Dirs, discarded: bool) -> Replay {
    let (f, ino) = d.file("a");
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        core.write(&f, 24, 0, &pattern(8192, 1)).unwrap();
        core.sync_file(ino, &f, false).unwrap();
        if discarded {
            core.discard_file(ino, 8192);
        }
        std::fs::remove_file(d.hdd().join("a")).unwrap();
    }
    d.open(1 << 20, Mode::Dss).1
}

#[test]
fn blocks_of_deleted_files_are_dropped_not_written_back() {
    let d = Dirs::new("deleted");
    let replay = removed_then_crashed(&d, true);
    assert_eq!(replay.restored, 0);
    assert!(d.no_anchors(), "the stale anchor went at mount");
}

#[test]
fn blocks_of_a_file_removed_while_open_are_dropped_after_a_crash() {
    let d = Dirs::new("removed-open");
    // Its last name goes while it is open: the blocks stay for the open handle, and the
    // daemon dies before the handle is released.
    let replay = removed_then_crashed(&d, false);
    assert_eq!((replay.restored, replay.orphaned), (0, 2));
    assert!(d.no_anchors(), "the anchor, its last name, went at mount");
}

#[test]
fn a_file_keeps_its_cached_blocks_until_its_last_name_is_gone() {
    let d = Dirs::new("keeps-name");
    let (f, ino) = d.file("a");
    let data = pattern(8192, 4);
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        core.write(&f, 24, 0, &data).unwrap();
        core.sync_file(ino, &f, false).unwrap();
        // The unlink (or rename over the file) fails: the name stays, and so does the data.
        let refused = core.discard_file_after(ino, 8192, || Err("refused"));
        assert_eq!(refused, Err("refused"));
        assert_eq!(core.stats().dirty_entries, 2);
        assert_eq!(core.read(&f, 24, 0, 8192).unwrap(), data);
        // The daemon dies with the blocks dirty.
    }
    let (core, replay) = d.open(1 << 20, Mode::Dss);
    assert_eq!(replay.restored, 2);
    let (f, _) = d.file("a");
    assert_eq!(core.read(&f, 24, 0, 8192).unwrap(), data);
}

#[test]
fn truncation_and_size_survive_through_the_journal() {
    let d = Dirs::new("size");
    let (f, ino) = d.file("a");
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        core.write(&f, 24, 0, &pattern(10_000, 3)).unwrap();
        core.truncate(ino, &f, 10_000, 5000).unwrap();
        core.sync_file(ino, &f, false).unwrap();
    }
    // Even an HDD that lost the size (it was never synced there) gets it back.
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.hdd().join("a"))
        .unwrap()
        .set_len(0)
        .unwrap();
    let (core, replay) = d.open(1 << 20, Mode::Dss);
    assert_eq!(replay.restored, 2);
    let (f, _) = d.file("a");
    assert_eq!(f.metadata().unwrap().len(), 5000);
    assert_eq!(
        core.read(&f, 24, 0, 20_000).unwrap(),
        pattern(10_000, 3)[..5000]
    );
}

#[test]
fn pinned_blocks_stay_on_the_ssd_across_a_clean_unmount() {
    let d = Dirs::new("pinned");
    let data = pattern(4096, 9);
    let f = d.written_and_unmounted("a", Mode::Ssd, &data);
    assert_ne!(std::fs::read(d.hdd().join("a")).unwrap(), data);
    let (core, replay) = d.open(1 << 20, Mode::Ssd);
    assert!(replay.previous_clean);
    assert_eq!(replay.restored, 1);
    assert_eq!(core.read(&f, 24, 0, 4096).unwrap(), data);
    assert_eq!(core.stats().pinned_entries, 1);
}

#[test]
fn a_new_geometry_writes_the_old_cache_back_first() {
    let d = Dirs::new("geometry");
    let data = pattern(6000, 4);
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        let (f, ino) = d.file("a");
        core.write(&f, 24, 0, &data).unwrap();
        core.sync_file(ino, &f, false).unwrap();
    }
    let (_core, replay) = d.open(2 << 20, Mode::Dss);
    assert_eq!((replay.written_back, replay.restored), (2, 0));
    assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), data);
}

#[test]
fn fsck_reports_and_repairs_a_crashed_cache() {
    let d = Dirs::new("fsck");
    let data = pattern(9000, 5);
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        let (f, ino) = d.file("a");
        core.write(&f, 24, 0, &data).unwrap();
        core.sync_file(ino, &f, false).unwrap();
    }
    let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), false).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(r.notes.iter().any(|n| n.contains("unclean")));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("class 24: 0 clean, 3 dirty"))
    );
    // Damage one record: fsck notices.
    let j = std::fs::OpenOptions::new()
        .write(true)
        .open(d.ssd().join(JOURNAL))
        .unwrap();
    j.write_all_at(&[0xAB; 4], journal::HEADER + 32 * 100 + 4)
        .unwrap();
    let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), false).unwrap();
    assert!(r.problems.iter().any(|p| p.contains("checksum")));
    let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), true).unwrap();
    assert!(r.notes.iter().any(|n| n.contains("3 blocks written back")));
    assert_eq!(std::fs::read(d.hdd().join("a")).unwrap(), data);
    let r = crate::fsck::fsck(&d.ssd(), &d.hdd(), false).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let (_core, replay) = d.open(1 << 20, Mode::Dss);
    assert_eq!(replay.restored, 0);
}

#[test]
fn reads_move_blocks_to_the_files_current_size_bucket_and_no_other_class() {
    let d = Dirs::new("resize");
    let (core, _) = d.open(1 << 20, Mode::Dss);
    let cached = |class: &str| {
        let s = core.stats();
        s.classes
            .get(class)
            .map_or(0, |c| (c.clean_bytes + c.dirty_bytes) / 4096)
    };
    // Written while the file was one block (bucket <= 4 KiB, class 11), then grown
    // to 100 KiB (bucket <= 256 KiB, class 14).
    let (a, _) = d.file("a");
    core.write(&a, 11, 0, &pattern(4096, 1)).unwrap();
    core.write(&a, 14, 4096, &pattern(96 * 1024, 2)).unwrap();
    assert_eq!((cached("11"), cached("14")), (1, 24));
    // A read by a name rule's class (5) is not by size: nothing moves.
    core.read(&a, 5, 0, 4096).unwrap();
    assert_eq!((cached("11"), cached("14")), (1, 24));
    // A read by the current size bucket moves the early block along.
    assert_eq!(
        core.read(&a, 14, 0, 8192).unwrap()[..4096],
        pattern(4096, 1)
    );
    assert_eq!((cached("11"), cached("14")), (0, 25));
    // A client's class stays whatever the size-classified reader says.
    let (b, _) = d.file("b");
    core.write(&b, 25, 0, &pattern(8192, 3)).unwrap();
    core.read(&b, 14, 0, 8192).unwrap();
    assert_eq!((cached("25"), cached("14")), (2, 25));
}

#[test]
fn a_warm_start_keeps_the_clean_blocks_of_a_clean_unmount_only() {
    let d = Dirs::new("warm");
    let data = pattern(10_000, 7);
    let f = d.written_and_unmounted("a", Mode::Dss, &data);
    // Cold (the default): the clean copies are dropped.
    {
        let (core, replay) = d.open(1 << 20, Mode::Dss);
        assert_eq!((replay.clean_restored, replay.clean_dropped), (0, 3));
        assert_eq!(
            core.stats().classes.get("24").map_or(0, |c| c.clean_bytes),
            0
        );
        // Read back into the cache, then unmounted cleanly again.
        assert_eq!(core.read(&f, 24, 0, 10_000).unwrap(), data);
        let _held = core.shutdown().unwrap();
    }
    // Warm: kept, and served without touching the HDD.
    {
        let (core, replay) = d.open_warm(1 << 20, Mode::Dss, true);
        assert!(replay.previous_clean);
        assert_eq!((replay.clean_restored, replay.clean_dropped), (3, 0));
        assert_eq!(core.stats().classes["24"].clean_bytes, 3 * 4096);
        let hdd_reads = dev_ops(&core, "hdd").0;
        assert_eq!(core.read(&f, 24, 0, 10_000).unwrap(), data);
        assert_eq!(dev_ops(&core, "hdd").0, hdd_reads);
        core.flush_all().unwrap();
        // The daemon dies without unmounting: clean records, an unclean journal.
    }
    let (_core, replay) = d.open_warm(1 << 20, Mode::Dss, true);
    assert!(!replay.previous_clean);
    assert_eq!(replay.clean_restored, 0);
}

#[test]
fn a_warm_start_drops_the_kept_blocks_of_a_file_changed_on_the_hdd_since() {
    let d = Dirs::new("warm-changed");
    let (a, b) = (pattern(10_000, 7), pattern(10_000, 8));
    let ((fa, ino_a), (fb, _)) = (d.file("a"), d.file("b"));
    {
        let (core, _) = d.open(1 << 20, Mode::Dss);
        core.write(&fa, 24, 0, &a).unwrap();
        core.write(&fb, 24, 0, &b).unwrap();
        // A metadata pseudo-block, kept too, but no file's: no lookup checks it.
        core.meta(MetaKind::Xattr, ino_a, true);
        let _held = core.shutdown().unwrap();
    }
    // Right after the unmount, behind the tier: a's middle block rewritten in place, its
    // size unchanged.
    let mut changed = a.clone();
    changed[4096..8192].fill(0xEE);
    fa.write_all_at(&changed[4096..8192], 4096).unwrap();
    let (core, replay) = d.open_warm(1 << 20, Mode::Dss, true);
    assert_eq!(replay.clean_restored, 7);
    let md = |name: &str| std::fs::metadata(d.hdd().join(name)).unwrap();
    core.check_warm(&md("a"));
    core.check_warm(&md("b"));
    assert_eq!(core.stats().classes["24"].clean_bytes, 3 * 4096);
    assert!(!core.warm_pending.load(std::sync::atomic::Ordering::Acquire));
    let hdd_reads = dev_ops(&core, "hdd").0;
    assert_eq!(core.read(&fb, 24, 0, 10_000).unwrap(), b);
    assert_eq!(
        dev_ops(&core, "hdd").0,
        hdd_reads,
        "b's kept blocks serve it"
    );
    assert_eq!(core.read(&fa, 24, 0, 10_000).unwrap(), changed);
}

/// (ops, bytes) of HDD writes.
fn hdd_writes(core: &Core) -> (u64, u64) {
    let s = &core.stats().devices["hdd"];
    (s.write_ops, s.write_bytes)
}

#[test]
fn hdd_writes_reach_the_model_through_its_page_cache_and_fsync_forces_them_out() {
    let d = Dirs::new("pagecache");
    let model = "st1000nm0011:pagecache=64MiB";
    let (core, _) = d.open_policy(POLICY, 1 << 20, Mode::Hdd, false, "none", model);
    let ((a, ino_a), (b, _)) = (d.file("a"), d.file("b"));
    let data = pattern(1 << 20, 9);
    for (i, piece) in data.chunks(64 << 10).enumerate() {
        core.write(&a, 24, (i as u64) << 16, piece).unwrap();
    }
    core.write(&b, 24, 0, &pattern(8192, 2)).unwrap();
    assert_eq!(hdd_writes(&core), (0, 0), "absorbed by the page cache");
    assert_eq!(core.read(&a, 24, 0, 1 << 20).unwrap(), data);
    assert_eq!(
        dev_ops(&core, "hdd").0,
        0,
        "dirty pages are read from memory"
    );
    core.sync_file(ino_a, &a, false).unwrap();
    assert_eq!(
        hdd_writes(&core),
        (2, (1 << 20) + 4096),
        "the file's sixteen writes in one request and a journal commit, not the other file"
    );
    // Data the page cache never saw is read from the disk.
    std::fs::write(d.hdd().join("cold"), pattern(4096, 4)).unwrap();
    let cold = File::open(d.hdd().join("cold")).unwrap();
    assert_eq!(core.read(&cold, 24, 0, 4096).unwrap(), pattern(4096, 4));
    assert_eq!(dev_ops(&core, "hdd").0, 1);
}

#[test]
fn a_dropped_range_of_a_file_is_read_from_the_hdd_again() {
    let d = Dirs::new("pagecache-drop");
    let model = "st1000nm0011:pagecache=64MiB";
    let (core, _) = d.open_policy(POLICY, 1 << 20, Mode::Hdd, false, "none", model);
    let (a, ino) = d.file("a");
    let data = pattern(1 << 20, 3);
    core.write(&a, 24, 0, &data).unwrap();
    core.sync_file(ino, &a, false).unwrap();
    assert_eq!(core.read(&a, 24, 0, 1 << 20).unwrap(), data);
    assert_eq!(dev_ops(&core, "hdd").0, 0, "clean pages stay cached");
    // What Swift does after a PUT's fsync and after each stretch of a GET.
    core.drop_cache(ino, 512 << 10, 1 << 20);
    assert_eq!(core.read(&a, 24, 0, 1 << 20).unwrap(), data);
    let s = &core.stats().devices["hdd"];
    assert_eq!(
        (s.read_ops, s.read_bytes),
        (1, 512 << 10),
        "only the dropped half"
    );
}

#[test]
fn behind_the_lru_cache_the_hdd_page_cache_keeps_no_data() {
    let d = Dirs::new("pagecache-lru");
    let model = "st1000nm0011:pagecache=64MiB";
    // 64 blocks of cache: reading 1 MiB of other files evicts the first one.
    let (core, _) = d.open_policy(POLICY, 64 * 4096, Mode::Lru, false, "none", model);
    let cold = |name: &str, seed: u8| {
        std::fs::write(d.hdd().join(name), pattern(256 << 10, seed)).unwrap();
        Arc::new(File::open(d.hdd().join(name)).unwrap())
    };
    let first = cold("first", 1);
    assert_eq!(core.read(&first, 24, 0, 4096).unwrap(), pattern(4096, 1));
    let after_first = dev_ops(&core, "hdd").0;
    assert!(after_first > 0);
    for (i, name) in ["b", "c", "d", "e"].iter().enumerate() {
        let f = cold(name, 10 + i as u8);
        core.read(&f, 24, 0, 256 << 10).unwrap();
    }
    let before = dev_ops(&core, "hdd").0;
    assert_eq!(core.read(&first, 24, 0, 4096).unwrap(), pattern(4096, 1));
    assert!(
        dev_ops(&core, "hdd").0 > before,
        "evicted from the SSD cache and not held in a page cache below it"
    );
}

#[test]
fn hdd_addresses_of_files_lie_on_a_disks_span() {
    use super::device_io::hdd_addr;
    use std::collections::HashSet;
    for span in [1 << 40, 70 << 30] {
        for file in [1u64, 2, 12, 99_999, 1 << 40, u64::MAX] {
            assert!(hdd_addr(span, file, 0) < span, "{file}");
            assert_eq!(hdd_addr(span, file, 0) % (1 << 20), 0);
        }
        // Consecutive inode numbers land apart, over the whole span.
        let starts: HashSet<u64> = (1..5_000).map(|f| hdd_addr(span, f, 0)).collect();
        assert!(starts.len() > 4_900, "{}", starts.len());
        assert!(starts.iter().filter(|&&a| a >= span / 2).count() > 2_000);
    }
    assert_eq!(hdd_addr(1 << 30, 7, 4096), hdd_addr(1 << 30, 7, 0) + 4096);
    // A span under 1 MiB still places every file (at its start).
    assert_eq!(hdd_addr(4096, 9, 0), 0);
}

#[test]
fn ssd_writes_wait_in_its_page_cache_until_an_fsync_syncs_the_slab_and_journal() {
    let run = |model: &str| {
        let d = Dirs::new(&format!("ssd-pagecache-{}", model.len()));
        let (core, _) = d.open_models(1 << 20, Mode::Dss, false, model);
        let (f, ino) = d.file("a");
        for i in 0..4u8 {
            core.write(&f, 24, u64::from(i) << 12, &pattern(4096, i))
                .unwrap();
        }
        let written = ssd_writes(&core);
        core.sync_file(ino, &f, false).unwrap();
        let synced = ssd_writes(&core);
        core.sync_file(ino, &f, false).unwrap();
        assert_eq!(ssd_writes(&core), synced, "nothing left to write back");
        core.shutdown().unwrap();
        (written, synced)
    };
    let (plain_written, plain_synced) = run("intel710");
    let (cached_written, cached_synced) = run("intel710:pagecache=64MiB");
    assert!(plain_written.0 > 0);
    assert_eq!(cached_written, (0, 0), "absorbed by the page cache");
    // The same slab blocks and journal page, merged where adjacent, and ext4's commit.
    assert_eq!(cached_synced.1, plain_synced.1 + 4096);
    assert!(cached_synced.0 <= plain_synced.0 + 1);
}

fn class_cached(core: &Core, class: &str) -> u64 {
    core.stats()
        .classes
        .get(class)
        .map_or(0, |c| c.cached_bytes)
}

#[test]
fn inodes_numbered_together_share_one_inode_table_block() {
    let d = Dirs::new("inode-table");
    let (core, _) = d.open(1 << 20, Mode::Dss);
    // Sixteen 256-byte inodes fill a 4 KiB block: 32..48 is one block, 48 starts the next.
    for ino in 32..49 {
        core.meta_created(ino, false);
    }
    assert_eq!(class_cached(&core, "2"), 2 * 4096);
    // A file's creation brings no xattr block; a directory's brings its first block.
    assert_eq!(class_cached(&core, "4"), 0);
    core.meta_created(100, true);
    assert_eq!(class_cached(&core, "3"), 4096);
    assert_eq!(class_cached(&core, "2"), 3 * 4096);
    // Looking up a neighbour of a cached inode hits its block.
    let hits = core.stats().classes["2"].hits;
    core.meta(MetaKind::Inode, 40, false);
    assert_eq!(core.stats().classes["2"].hits, hits + 1);
}

#[test]
fn metadata_the_hosts_memory_holds_is_read_without_the_cache_or_a_device() {
    let d = Dirs::new("meta-memory");
    // Room for two metadata blocks in memory; the HDD model charges what reaches it.
    let models = ("none", "st1000nm0011");
    let (core, _) = d.open_memory(POLICY, 1 << 20, Mode::Hdd, false, models, 2 * 4096);
    let reads = |core: &Core| dev_ops(core, "hdd").0;
    // A created inode is in memory: looking it up again reads nothing.
    core.meta_created(100, false);
    let r0 = reads(&core);
    core.meta(MetaKind::Inode, 100, false);
    core.meta(MetaKind::Xattr, 100, false);
    assert_eq!(reads(&core), r0 + 1, "the xattr block is read once");
    core.meta(MetaKind::Xattr, 100, false);
    core.meta(MetaKind::Inode, 100, false);
    assert_eq!(reads(&core), r0 + 1);
    assert_eq!(core.stats().meta_memory_hits, 3);
    assert_eq!(core.stats().meta_memory_bytes, 2 * 4096);
    // A third block pushes out the least recently used (the inode's, once the xattr
    // block was used after it), which is read again.
    core.meta(MetaKind::Xattr, 100, false);
    core.meta(MetaKind::Directory, 100, false);
    core.meta(MetaKind::Inode, 100, false);
    assert_eq!(reads(&core), r0 + 3);
    // A removed inode's blocks leave memory: its number reused reads them anew.
    core.meta_freed(100);
    core.meta(MetaKind::Xattr, 100, false);
    assert_eq!(reads(&core), r0 + 4);
    // Without memory every read reaches the device.
    let d = Dirs::new("meta-memory-none");
    let (core, _) = d.open_memory(POLICY, 1 << 20, Mode::Hdd, false, models, 0);
    core.meta_created(100, false);
    let r0 = reads(&core);
    for _ in 0..3 {
        core.meta(MetaKind::Xattr, 100, false);
    }
    assert_eq!(reads(&core), r0 + 3);
    assert_eq!(core.stats().meta_memory_hits, 0);
}

#[test]
fn xattrs_that_fit_in_the_inode_are_charged_to_it_and_larger_ones_to_a_block() {
    assert!(matches!(xattr_kind(6, 8), MetaKind::Inode));
    assert!(matches!(xattr_kind(19, 52), MetaKind::Inode));
    assert!(matches!(xattr_kind(19, 53), MetaKind::Xattr));
    // Swift's object metadata: a pickled dict of a few hundred bytes.
    assert!(matches!(xattr_kind(19, 300), MetaKind::Xattr));
}

#[test]
fn a_removed_inode_leaves_its_directory_and_xattr_blocks_not_its_inode_table_block() {
    let d = Dirs::new("meta-freed");
    let (core, _) = d.open(1 << 20, Mode::Dss);
    core.meta_created(64, true);
    core.meta(MetaKind::Xattr, 64, true);
    core.meta_created(65, false);
    core.meta(MetaKind::Xattr, 65, true);
    assert_eq!(class_cached(&core, "3"), 4096);
    assert_eq!(class_cached(&core, "4"), 2 * 4096);
    core.meta_freed(64);
    assert_eq!(class_cached(&core, "3"), 0);
    assert_eq!(class_cached(&core, "4"), 4096);
    assert_eq!(class_cached(&core, "2"), 4096);
}

/// Four writers each write 512 KiB in 4 KiB requests into a 256 KiB LRU cache while the
/// syncer runs; checks the bytes read back and returns the class's counters.
fn through_a_full_cache(name: &str, policy: &str) -> crate::stats::ClassStats {
    use std::sync::atomic::{AtomicBool, Ordering};
    let d = Dirs::new(name);
    let (core, _) = d.open_policy(policy, 256 << 10, Mode::Lru, false, "none", "none");
    let core = Arc::new(core);
    let stop = Arc::new(AtomicBool::new(false));
    let syncer = {
        let (core, stop) = (core.clone(), stop.clone());
        std::thread::spawn(move || core.syncer(stop))
    };
    let files: Vec<_> = (0..4u8)
        .map(|i| (d.file(&format!("f{i}")).0, pattern(512 << 10, i)))
        .collect();
    std::thread::scope(|s| {
        for (f, data) in &files {
            let core = &core;
            s.spawn(move || {
                for (i, chunk) in data.chunks(4096).enumerate() {
                    core.write(f, 24, (i * 4096) as u64, chunk).unwrap();
                }
            });
        }
    });
    stop.store(true, Ordering::Relaxed);
    syncer.join().unwrap();
    // Taken before reading back: read misses that find no room count as bypassed too.
    let stats = core.stats().classes["24"].clone();
    for (f, data) in &files {
        assert!(core.read(f, 24, 0, data.len()).unwrap() == *data);
    }
    assert!(core.inner.lock().unwrap().room_queue.is_empty());
    stats
}

#[test]
fn a_write_into_a_cache_full_of_dirty_blocks_waits_for_write_back() {
    let waited = through_a_full_cache("full-wait", POLICY);
    // Every block went through the SSD: the writers waited for the syncer to make room.
    assert_eq!(waited.bypassed_bytes, 0);
    assert!(
        waited.written_back_bytes >= (2 << 20) - (256 << 10),
        "{waited:?}"
    );
    let around = format!("when_full = \"write-around\"\n{POLICY}");
    let went_around = through_a_full_cache("full-around", &around);
    // Without waiting, the blocks that found no room went to the HDD.
    assert!(went_around.bypassed_bytes > 0, "{went_around:?}");
}

#[test]
fn the_patience_for_room_stretches_with_the_models_dilation() {
    use std::time::Duration;
    let d = Dirs::new("patience");
    let policy = POLICY;
    let plain = d
        .open_policy(policy, 1 << 20, Mode::Lru, false, "none", "none")
        .0;
    let base = plain.patience;
    assert_eq!(base, Duration::from_secs(10));
    drop(plain);
    let dilated = d
        .open_policy(
            policy,
            1 << 20,
            Mode::Lru,
            false,
            "intel710",
            "st1000nm0011:dilation=4",
        )
        .0;
    assert_eq!(dilated.patience, base * 4);
}

#[test]
fn buffered_metadata_writes_keep_the_device_busy_and_only_an_fsync_waits_for_them() {
    let d = Dirs::new("meta-buffered");
    // An HDD slowed thirtyfold: a metadata write there takes a quarter of a second.
    let models = ("none", "st1000nm0011:dilation=30");
    let written = |core: &Core| dev_ops(core, "hdd").1;
    // Written through, a create returns once its write is on the device.
    let (core, _) = d.open_memory(POLICY, 1 << 20, Mode::Hdd, false, models, 0);
    core.meta_created(100, false);
    assert_eq!(written(&core), 1);
    assert_eq!(
        core.inner.lock().unwrap().meta_written,
        0,
        "nothing left pending"
    );
    drop(core);
    // Buffered, it is charged to the device all the same, but returns before it is done.
    let (mut core, _) = d.open_memory(POLICY, 1 << 20, Mode::Hdd, false, models, 0);
    core.buffer_meta_writes();
    core.meta_created(200, false);
    assert_eq!(written(&core), 1);
    let pending = core.inner.lock().unwrap().meta_written;
    assert!(
        pending > core.now(),
        "the caller went on before its device finished"
    );
    // A file's fsync waits for it, as ext4's waits for the journal's commit.
    let (f, ino) = d.file("f");
    core.sync_file(ino, &f, false).unwrap();
    assert!(core.now() >= pending);
}

#[test]
fn the_descriptors_kept_for_write_back_are_bounded_and_every_file_is_written_back() {
    let d = Dirs::new("open-files");
    let n = super::state::OPEN_FILES + 100;
    // Room for every file's dirty block: nothing is written back before the flush.
    let (core, _) = d.open(2 * n as u64 * 4096, Mode::Dss);
    for i in 0..n {
        let (f, _) = d.file(&format!("f{i}"));
        core.write(&f, 24, 0, &pattern(4096, i as u8)).unwrap();
        // The writer closes its file: a descriptor left open is the core's own.
    }
    assert_eq!(
        core.inner.lock().unwrap().files.len(),
        super::state::OPEN_FILES
    );
    core.flush_all().unwrap();
    for i in 0..n {
        let on_hdd = std::fs::read(d.hdd().join(format!("f{i}"))).unwrap();
        assert_eq!(on_hdd, pattern(4096, i as u8), "f{i}");
    }
    let _held = core.shutdown().unwrap();
}
