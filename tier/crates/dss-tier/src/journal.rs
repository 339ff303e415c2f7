//! The write-back journal: what each SSD slot holds, kept on the SSD beside the slab so
//! that a restart after a crash knows which slab blocks are the only current copy.
//!
//! It is a table with one fixed-size record per slot, rewritten in place: a slot's record
//! is its latest transition, so replay is a single pass with no log to trim. Records are
//! staged in memory and written out (to the page cache) before the FUSE request that made
//! the change is answered, which is what survives a kill of the daemon; `sync` makes them
//! durable, which fsync does before it answers.
//!
//! File layout: a 4 KiB header, then `entries` records of 32 bytes, slot order.
//!   header: magic u64, version u32, block_size u32, entries u32, clean u32, crc u32,
//!           then clean_at u64, crc u32
//!   record: file u64, index u64, valid u32, class u8, state u8, 0u16, 0u32, crc u32
//! `clean` is 1 only while the tier is unmounted after a complete final write-back;
//! `clean_at` is then when that was (ns since the epoch, the clock file times use), so
//! that a warm start can tell the HDD files changed since. It follows the header with a
//! checksum of its own, so that builds from before it read the journal as before (and
//! leave it zeroed when they write the header, which reads as 0, unknown).
//! An all-zero record is an empty slot; any other record must match its CRC, or it is
//! treated as empty (a torn record only ever belongs to an unacknowledged change).

use dss_engine::{BlockKey, Durable};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MAGIC: u64 = u64::from_le_bytes(*b"DSSTIERJ");
const VERSION: u32 = 1;
pub const HEADER: u64 = 4096;
/// The bytes of the header that hold anything.
const HEADER_BYTES: usize = 40;
pub const RECORD: usize = 32;

/// Open one of the cache's files (journal, slab) for reading and writing, creating it when
/// absent and never truncating it: what it holds is the cache.
pub fn open_rw_create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}
/// More than the longest tick of the coarse clock file times are stamped from (HZ=100).
const CLOCK_TICK: Duration = Duration::from_millis(20);

/// The wall clock in ns since the epoch, as file times count.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Records are written out in units of this many bytes (a page).
const PAGE: usize = 4096;

/// CRC-32 (IEEE), bitwise: records are tiny and the table is built at compile time.
const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

pub fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

/// One slot's journalled state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: BlockKey,
    /// Bytes of the block that lie inside the file (the file's size is at least
    /// `index * block_size + valid` once this block is written back).
    pub valid: u32,
    pub class: u8,
    pub state: Durable,
}

impl Record {
    pub const EMPTY: Record = Record {
        key: BlockKey { file: 0, index: 0 },
        valid: 0,
        class: 0,
        state: Durable::Empty,
    };

    /// Holds the only current copy of its block.
    pub fn is_dirty(&self) -> bool {
        matches!(self.state, Durable::Dirty | Durable::Pinned)
    }

    pub fn encode(&self) -> [u8; RECORD] {
        let mut b = [0u8; RECORD];
        if self.state == Durable::Empty {
            return b;
        }
        b[0..8].copy_from_slice(&self.key.file.to_le_bytes());
        b[8..16].copy_from_slice(&self.key.index.to_le_bytes());
        b[16..20].copy_from_slice(&self.valid.to_le_bytes());
        b[20] = self.class;
        b[21] = match self.state {
            Durable::Empty => 0,
            Durable::Clean => 1,
            Durable::Dirty => 2,
            Durable::Pinned => 3,
        };
        let crc = crc32(&b[..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Whether the block lies within the largest file Linux allows (`i64::MAX` bytes) and
    /// its valid bytes within the block: a record that does not cannot be replayed or
    /// written back (its offset would wrap).
    pub fn fits(&self, block_size: u32) -> bool {
        self.valid <= block_size
            && (self.key.index)
                .checked_add(1)
                .and_then(|n| n.checked_mul(u64::from(block_size)))
                .is_some_and(|end| end <= i64::MAX as u64)
    }

    /// `None` for a record that fails its checksum or names an unknown state.
    pub fn decode(b: &[u8]) -> Option<Record> {
        if b.iter().all(|&x| x == 0) {
            return Some(Record::EMPTY);
        }
        let crc = u32::from_le_bytes(b[28..32].try_into().ok()?);
        if crc != crc32(&b[..28]) || b[22..28].iter().any(|&x| x != 0) {
            return None;
        }
        let state = match b[21] {
            1 => Durable::Clean,
            2 => Durable::Dirty,
            3 => Durable::Pinned,
            _ => return None,
        };
        Some(Record {
            key: BlockKey {
                file: u64::from_le_bytes(b[0..8].try_into().ok()?),
                index: u64::from_le_bytes(b[8..16].try_into().ok()?),
            },
            valid: u32::from_le_bytes(b[16..20].try_into().ok()?),
            class: b[20],
            state,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub block_size: u32,
    pub entries: u32,
    pub clean: bool,
    /// When the journal was marked clean, in ns since the epoch; 0 if not clean, or
    /// unknown (a version 1 journal).
    pub clean_at: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.block_size.to_le_bytes());
        b[16..20].copy_from_slice(&self.entries.to_le_bytes());
        b[20..24].copy_from_slice(&u32::from(self.clean).to_le_bytes());
        let crc = crc32(&b[..24]);
        b[24..28].copy_from_slice(&crc.to_le_bytes());
        b[28..36].copy_from_slice(&self.clean_at.to_le_bytes());
        let crc = crc32(&b[28..36]);
        b[36..40].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Header, String> {
        if b.len() < HEADER_BYTES || u64::from_le_bytes(b[0..8].try_into().unwrap()) != MAGIC {
            return Err("no journal header (not a dss-tier journal)".into());
        }
        if u32::from_le_bytes(b[24..28].try_into().unwrap()) != crc32(&b[..24]) {
            return Err("journal header checksum mismatch".into());
        }
        let v = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if v != VERSION {
            return Err(format!("journal version {v}, this build reads {VERSION}"));
        }
        let block_size = u32::from_le_bytes(b[12..16].try_into().unwrap());
        let entries = u32::from_le_bytes(b[16..20].try_into().unwrap());
        // A header the checksum passes can still come from a build with other limits, or
        // be made by hand: every offset replay and repair compute depends on these two.
        if !block_size.is_power_of_two() || !(512..=1 << 20).contains(&block_size) {
            return Err(format!(
                "journal block size {block_size} is not a power of two in 512..1048576"
            ));
        }
        if entries == 0 {
            return Err("journal has no entries".into());
        }
        Ok(Header {
            block_size,
            entries,
            clean: u32::from_le_bytes(b[20..24].try_into().unwrap()) == 1,
            clean_at: if u32::from_le_bytes(b[36..40].try_into().unwrap()) == crc32(&b[28..36]) {
                u64::from_le_bytes(b[28..36].try_into().unwrap())
            } else {
                0
            },
        })
    }
}

/// A journal as found on the SSD.
pub struct Loaded {
    pub header: Header,
    /// Non-empty records, slot order.
    pub records: Vec<(u32, Record)>,
    /// Slots whose record failed its checksum.
    pub corrupt: Vec<u32>,
}

/// Read a journal file; `Ok(None)` when there is none (or it is empty).
pub fn load(file: &File) -> io::Result<Option<Result<Loaded, String>>> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    let mut head = [0u8; HEADER_BYTES];
    if len < HEADER {
        return Ok(Some(Err("journal shorter than its header".into())));
    }
    file.read_exact_at(&mut head, 0)?;
    let header = match Header::decode(&head) {
        Ok(h) => h,
        Err(e) => return Ok(Some(Err(e))),
    };
    let want = HEADER + u64::from(header.entries) * RECORD as u64;
    if len < want {
        return Ok(Some(Err(format!(
            "journal holds {len} bytes, its header needs {want}"
        ))));
    }
    let mut table = vec![0u8; header.entries as usize * RECORD];
    file.read_exact_at(&mut table, HEADER)?;
    let mut records = Vec::new();
    let mut corrupt = Vec::new();
    for (slot, chunk) in table.chunks_exact(RECORD).enumerate() {
        match Record::decode(chunk) {
            Some(r) if r.state == Durable::Empty => {}
            Some(r) if r.fits(header.block_size) => records.push((slot as u32, r)),
            _ => corrupt.push(slot as u32),
        }
    }
    Ok(Some(Ok(Loaded {
        header,
        records,
        corrupt,
    })))
}

/// A set of journal pages, listed once each in the order they joined.
struct PageSet {
    list: Vec<u32>,
    member: Vec<bool>,
}

impl PageSet {
    fn new(pages: usize) -> PageSet {
        PageSet {
            list: Vec::new(),
            member: vec![false; pages],
        }
    }

    fn insert(&mut self, page: u32) {
        if !self.member[page as usize] {
            self.member[page as usize] = true;
            self.list.push(page);
        }
    }

    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Empty the set, as runs of adjacent pages (first page, pages) in page order.
    fn take_runs(&mut self) -> Vec<(u32, u32)> {
        self.list.sort_unstable();
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &p in &self.list {
            self.member[p as usize] = false;
            match runs.last_mut() {
                Some((first, n)) if *first + *n == p => *n += 1,
                _ => runs.push((p, 1)),
            }
        }
        self.list.clear();
        runs
    }
}

/// Give the journal's `len` bytes their room on the SSD now. Written into a sparse file,
/// a record could fail once the SSD's file system was full (the slab is sparse, and other
/// files may share that file system): the cache would then go on without records that a
/// restart needs. A file system that cannot reserve room (no `fallocate`) keeps the file
/// as it is.
fn reserve(file: &File, len: u64) -> io::Result<()> {
    use rustix::fs::{FallocateFlags, fallocate};
    match fallocate(file, FallocateFlags::empty(), 0, len) {
        Err(e) if e == rustix::io::Errno::OPNOTSUPP => Ok(()),
        r => r.map_err(io::Error::from),
    }
}

/// The live journal of a mounted tier: an in-memory image of the table, the pages that
/// differ from the file, and the pages written to the file since its last sync.
pub struct Journal {
    file: File,
    header: Header,
    image: Vec<u8>,
    /// The image decoded, so that reading a slot's record costs no checksum.
    records: Vec<Record>,
    dirty: PageSet,
    unsynced: PageSet,
}

impl Journal {
    /// A journal with every slot empty, written out and synced, marked not clean (the
    /// tier is about to be mounted).
    pub fn create(file: File, block_size: u32, entries: u32) -> io::Result<Journal> {
        let size = entries as usize * RECORD;
        file.set_len(0)?;
        file.set_len(HEADER + size as u64)?;
        if let Err(e) = reserve(&file, HEADER + size as u64) {
            // Left without a header, the file would be taken for a damaged journal at
            // the next mount; an empty one is none, and that mount starts afresh.
            file.set_len(0)?;
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "no room for the journal's {} bytes: {e}",
                    HEADER + size as u64
                ),
            ));
        }
        let pages = size.div_ceil(PAGE);
        let j = Journal {
            file,
            header: Header {
                block_size,
                entries,
                clean: false,
                clean_at: 0,
            },
            image: vec![0u8; size],
            records: vec![Record::EMPTY; entries as usize],
            dirty: PageSet::new(pages),
            unsynced: PageSet::new(pages),
        };
        j.write_header()?;
        j.file.sync_all()?;
        Ok(j)
    }

    /// The live journal over a file `load` just read with the same geometry: the image
    /// is what the file holds, so nothing needs writing out yet.
    pub fn create_from(file: File, loaded: &Loaded) -> io::Result<Journal> {
        let size = loaded.header.entries as usize * RECORD;
        reserve(&file, HEADER + size as u64)?;
        let mut image = vec![0u8; size];
        let mut records = vec![Record::EMPTY; loaded.header.entries as usize];
        for &(slot, rec) in &loaded.records {
            let o = slot as usize * RECORD;
            image[o..o + RECORD].copy_from_slice(&rec.encode());
            records[slot as usize] = rec;
        }
        Ok(Journal {
            file,
            header: loaded.header,
            image,
            records,
            dirty: PageSet::new(size.div_ceil(PAGE)),
            unsynced: PageSet::new(size.div_ceil(PAGE)),
        })
    }

    pub fn get(&self, slot: u32) -> Record {
        self.records[slot as usize]
    }

    /// Stage `rec` as slot `slot`'s record; `write_out` sends it to the file.
    pub fn set(&mut self, slot: u32, rec: &Record) {
        // Every empty record encodes the same (all zeros), whatever its other fields.
        let rec = if rec.state == Durable::Empty {
            Record::EMPTY
        } else {
            *rec
        };
        if self.records[slot as usize] == rec {
            return;
        }
        self.records[slot as usize] = rec;
        let o = slot as usize * RECORD;
        self.image[o..o + RECORD].copy_from_slice(&rec.encode());
        self.dirty.insert((o / PAGE) as u32);
    }

    /// Write the staged pages to the file (not yet durable). Adjacent pages go in one
    /// write.
    pub fn write_out(&mut self) -> io::Result<()> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        let runs = self.dirty.take_runs();
        for (i, &(first, n)) in runs.iter().enumerate() {
            let (start, end) = self.span(first, n);
            if let Err(e) = self
                .file
                .write_all_at(&self.image[start..end], HEADER + start as u64)
            {
                // Still to be written: rewriting a page that did reach the file is harmless.
                for &(first, n) in &runs[i..] {
                    (first..first + n).for_each(|p| self.dirty.insert(p));
                }
                return Err(e);
            }
            (first..first + n).for_each(|p| self.unsynced.insert(p));
        }
        Ok(())
    }

    /// Bytes `start..end` of the table held by `n` pages from page `first`.
    fn span(&self, first: u32, n: u32) -> (usize, usize) {
        let start = first as usize * PAGE;
        (start, ((first + n) as usize * PAGE).min(self.image.len()))
    }

    /// The pages written to the file since the last call, as runs of (file offset,
    /// bytes): what the next sync of the file makes durable, for the SSD model.
    pub fn take_unsynced(&mut self) -> Vec<(u64, u64)> {
        let runs = self.unsynced.take_runs();
        runs.into_iter()
            .map(|(first, n)| {
                let (start, end) = self.span(first, n);
                (HEADER + start as u64, (end - start) as u64)
            })
            .collect()
    }

    /// Write out and sync; returns what the sync made durable (`take_unsynced`).
    pub fn sync(&mut self) -> io::Result<Vec<(u64, u64)>> {
        self.write_out()?;
        self.file.sync_data()?;
        Ok(self.take_unsynced())
    }

    fn write_header(&self) -> io::Result<()> {
        let mut page = vec![0u8; HEADER as usize];
        let h = self.header.encode();
        page[..h.len()].copy_from_slice(&h);
        self.file.write_all_at(&page, 0)
    }

    /// Mark the journal clean (after a complete final write-back) or not, durably. A
    /// clean mark records when it was made and then lets the file-time clock's tick go
    /// by: a change to an HDD file after the caller is gone then carries a later ctime
    /// (the kernel stamps ctime from a coarse clock that lags the precise one by up to
    /// a tick, 1-10 ms), and a change the tier made before carries an earlier one.
    pub fn set_clean(&mut self, clean: bool) -> io::Result<()> {
        self.write_out()?;
        self.file.sync_data()?;
        self.header.clean = clean;
        self.header.clean_at = if clean { now_ns() } else { 0 };
        self.write_header()?;
        self.file.sync_data()?;
        if clean {
            std::thread::sleep(CLOCK_TICK);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    /// A journal file's path in a scratch directory that lives as long as the guard.
    fn tmp(name: &str) -> (Scratch, std::path::PathBuf) {
        let dir = Scratch::new("journal", name);
        let path = dir.join("journal");
        (dir, path)
    }

    fn open(p: &std::path::Path) -> File {
        open_rw_create(p).unwrap()
    }

    fn rec(file: u64, index: u64, state: Durable) -> Record {
        Record {
            key: BlockKey { file, index },
            valid: 1000,
            class: 24,
            state,
        }
    }

    #[test]
    fn crc_matches_the_reference_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn records_round_trip_and_reject_damage() {
        for state in [Durable::Clean, Durable::Dirty, Durable::Pinned] {
            let r = rec(7, 9, state);
            let b = r.encode();
            assert_eq!(Record::decode(&b), Some(r));
            for bit in [0, 70, 160, 170, 230] {
                let mut d = b;
                d[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(Record::decode(&d), None, "bit {bit} flipped");
            }
        }
        assert_eq!(Record::decode(&[0u8; RECORD]), Some(Record::EMPTY));
        assert_eq!(Record::EMPTY.encode(), [0u8; RECORD]);
    }

    #[test]
    fn a_journal_holds_its_room_on_the_ssd_from_the_start() {
        use rustix::fs::{FallocateFlags, fallocate};
        use std::os::unix::fs::MetadataExt;
        let (_dir, p) = tmp("room");
        let on_disk = || std::fs::metadata(&p).unwrap().blocks() * 512;
        let len = HEADER + 1000 * RECORD as u64;
        drop(Journal::create(open(&p), 4096, 1000).unwrap());
        assert!(on_disk() >= len, "{} of {len} bytes reserved", on_disk());
        // One reopened sparse (as a daemon before 29 November left it) gets its room too.
        let l = load(&open(&p)).unwrap().unwrap().unwrap();
        let f = open(&p);
        let hole = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
        fallocate(&f, hole, HEADER, len - HEADER).unwrap();
        assert!(on_disk() < len);
        Journal::create_from(f, &l).unwrap();
        assert!(on_disk() >= len, "{} of {len} bytes reserved", on_disk());
    }

    #[test]
    fn staged_records_reach_the_file_only_when_written_out() {
        let (_dir, p) = tmp("stage");
        let mut j = Journal::create(open(&p), 4096, 1000).unwrap();
        j.set(3, &rec(1, 2, Durable::Dirty));
        j.set(999, &rec(1, 5, Durable::Pinned));
        let l = load(&open(&p)).unwrap().unwrap().unwrap();
        assert!(l.records.is_empty(), "nothing written out yet");
        j.write_out().unwrap();
        j.set(3, &Record::EMPTY);
        j.set(500, &rec(2, 0, Durable::Clean));
        let l = load(&open(&p)).unwrap().unwrap().unwrap();
        assert_eq!(
            l.records,
            vec![
                (3, rec(1, 2, Durable::Dirty)),
                (999, rec(1, 5, Durable::Pinned))
            ]
        );
        assert!(!l.header.clean);
        let before = now_ns();
        j.set_clean(true).unwrap();
        let l = load(&open(&p)).unwrap().unwrap().unwrap();
        let at = l.header.clean_at;
        assert!(before <= at && at + CLOCK_TICK.as_nanos() as u64 <= now_ns());
        assert_eq!(
            l.records,
            vec![
                (500, rec(2, 0, Durable::Clean)),
                (999, rec(1, 5, Durable::Pinned))
            ]
        );
        assert_eq!(
            l.header,
            Header {
                block_size: 4096,
                entries: 1000,
                clean: true,
                clean_at: at,
            }
        );
        j.set_clean(false).unwrap();
        let h = load(&open(&p)).unwrap().unwrap().unwrap().header;
        assert_eq!((h.clean, h.clean_at), (false, 0));
    }

    #[test]
    fn records_and_headers_out_of_range_are_refused_though_their_checksums_pass() {
        let (_dir, p) = tmp("range");
        let f = open(&p);
        let mut j = Journal::create(f.try_clone().unwrap(), 4096, 10).unwrap();
        // Its end, 2^64 bytes, wraps: replay or repair would write at offset 0.
        j.set(1, &rec(1, 1 << 52, Durable::Dirty));
        j.set(2, &rec(1, u64::MAX, Durable::Dirty));
        j.set(3, &rec(1, (i64::MAX as u64 >> 12) - 1, Durable::Dirty));
        let mut long = rec(1, 0, Durable::Dirty);
        long.valid = 4097;
        j.set(4, &long);
        j.sync().unwrap();
        let l = load(&f).unwrap().unwrap().unwrap();
        assert_eq!(l.corrupt, vec![1, 2, 4]);
        assert_eq!(l.records.iter().map(|r| r.0).collect::<Vec<_>>(), vec![3]);
        let header = |block_size: u32, entries: u32| {
            let mut h = [0u8; 28];
            f.read_exact_at(&mut h, 0).unwrap();
            h[12..16].copy_from_slice(&block_size.to_le_bytes());
            h[16..20].copy_from_slice(&entries.to_le_bytes());
            let crc = crc32(&h[..24]);
            h[24..28].copy_from_slice(&crc.to_le_bytes());
            f.write_all_at(&h, 0).unwrap();
            load(&f).unwrap().unwrap().err()
        };
        let bad = "journal block size 0 is not a power of two in 512..1048576";
        assert_eq!(header(0, 10).as_deref(), Some(bad));
        assert!(header(3, 10).is_some());
        assert!(header(2 << 20, 10).is_some());
        assert_eq!(header(4096, 0).as_deref(), Some("journal has no entries"));
        assert_eq!(header(4096, 10), None);
    }

    #[test]
    fn the_clean_time_follows_the_header_builds_before_it_wrote() {
        let (_dir, p) = tmp("clean-at");
        let f = open(&p);
        let mut j = Journal::create(f.try_clone().unwrap(), 4096, 10).unwrap();
        j.set_clean(true).unwrap();
        // The first 28 bytes are the header as builds before the clean time wrote and
        // read it: version 1, its checksum over the 24 bytes before it.
        let mut old = [0u8; 28];
        f.read_exact_at(&mut old, 0).unwrap();
        assert_eq!(old[8..12], 1u32.to_le_bytes());
        assert_eq!(old[24..28], crc32(&old[..24]).to_le_bytes());
        assert!(load(&f).unwrap().unwrap().unwrap().header.clean_at > 0);
        // Such a build writes its header into a page of zeros: no clean time.
        let mut page = vec![0u8; HEADER as usize];
        page[..28].copy_from_slice(&old);
        f.write_all_at(&page, 0).unwrap();
        let h = load(&f).unwrap().unwrap().unwrap().header;
        assert_eq!(
            (h.block_size, h.entries, h.clean, h.clean_at),
            (4096, 10, true, 0)
        );
        // A clean time its checksum does not match is none either.
        f.write_all_at(&[0xAB; 12], 28).unwrap();
        assert_eq!(load(&f).unwrap().unwrap().unwrap().header.clean_at, 0);
        old[8..12].copy_from_slice(&3u32.to_le_bytes());
        let crc = crc32(&old[..24]);
        old[24..28].copy_from_slice(&crc.to_le_bytes());
        f.write_all_at(&old, 0).unwrap();
        let e = load(&f).unwrap().unwrap().err();
        assert_eq!(e.unwrap(), "journal version 3, this build reads 1");
    }

    #[test]
    fn a_sync_reports_each_page_written_since_the_last_once_in_runs() {
        let (_dir, p) = tmp("unsynced");
        // 1,000 records of 32 bytes: pages 0-6 whole, page 7 holds the last 3,328 bytes.
        let mut j = Journal::create(open(&p), 4096, 1000).unwrap();
        let page = |n: u64| HEADER + n * PAGE as u64;
        j.set(0, &rec(1, 0, Durable::Dirty));
        j.set(300, &rec(1, 1, Durable::Dirty));
        assert_eq!(j.take_unsynced(), vec![], "staged is not yet written");
        j.write_out().unwrap();
        assert_eq!(j.take_unsynced(), vec![(page(0), 4096), (page(2), 4096)]);
        assert_eq!(j.take_unsynced(), vec![]);
        j.set(130, &rec(1, 2, Durable::Dirty));
        j.write_out().unwrap();
        j.set(1, &rec(1, 3, Durable::Dirty));
        j.write_out().unwrap();
        j.set(999, &rec(1, 4, Durable::Dirty));
        j.write_out().unwrap();
        assert_eq!(j.take_unsynced(), vec![(page(0), 8192), (page(7), 3328)]);
        j.set(2, &rec(1, 5, Durable::Dirty));
        assert_eq!(j.sync().unwrap(), vec![(page(0), 4096)]);
    }

    #[test]
    fn a_torn_record_is_reported_not_restored() {
        let (_dir, p) = tmp("torn");
        let mut j = Journal::create(open(&p), 4096, 10).unwrap();
        j.set(4, &rec(1, 2, Durable::Dirty));
        j.sync().unwrap();
        let f = open(&p);
        f.write_all_at(&[0xFF; 8], HEADER + 4 * RECORD as u64 + 8)
            .unwrap();
        let l = load(&f).unwrap().unwrap().unwrap();
        assert!(l.records.is_empty());
        assert_eq!(l.corrupt, vec![4]);
        f.write_all_at(b"garbage!", 0).unwrap();
        assert!(load(&f).unwrap().unwrap().is_err());
        f.set_len(0).unwrap();
        assert!(load(&f).unwrap().is_none());
    }
}
