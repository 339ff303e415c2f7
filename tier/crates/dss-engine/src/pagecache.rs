//! A kernel page cache and I/O elevator in front of a modelled disk, in virtual time:
//! what ext4 on a real HDD does between a process's `write` and the platter.
//!
//! Writes dirty 4 KiB pages and cost nothing until the dirty pages pass the dirty limit;
//! the writer that passes it then writes back (and waits for) enough of them to come down
//! to the background limit, as `balance_dirty_pages` throttles a writer to the disk's
//! write-back rate. A flusher wakes every `writeback` interval and writes back pages dirty
//! for longer than `expire`, and everything above the background limit. `fsync` writes
//! back the file's dirty pages, then a journal commit block (ext4's ordered mode), and
//! waits. Every write-back is sorted by device address and
//! merged into runs of adjacent pages (at most `MAX_RUN` each, a request's size limit),
//! served in one elevator sweep upwards from the head (C-LOOK), so a run pays positioning
//! once and then its transfer. Pages stay cached (clean) after write-back and reads of
//! cached pages cost nothing; cold reads go to the disk. Clean pages beyond the cache's
//! size are dropped least recently used first, and `drop_range` drops them on request, as
//! `posix_fadvise(POSIX_FADV_DONTNEED)` does. A cache that keeps no clean file data
//! (`set_keeps_clean_data(false)`) only orders and merges the data it writes: what a disk
//! sees below a block-level cache, whose reads and write-backs no page cache holds
//! (metadata pseudo-blocks, of no file, stay cached as before).

use crate::device::Op;
use std::collections::{BTreeSet, HashMap};

pub const PAGE: u64 = 4096;
/// Largest request the elevator builds (a typical `max_sectors_kb`).
pub const MAX_RUN: u64 = 1 << 20;

/// ext4's journal: a circular log in the middle of the disk's span, where each fsync
/// that wrote data commits a block.
pub const JOURNAL_ADDR: u64 = 1 << 39;
pub const JOURNAL_BYTES: u64 = 128 << 20;

/// Pages of no file that can be fsynced (metadata the caller charges by address only).
pub const NO_FILE: u64 = u64::MAX;

#[derive(Clone, Debug, PartialEq)]
pub struct PageCacheConfig {
    /// Memory the page cache may hold (clean and dirty pages).
    pub bytes: u64,
    /// Dirty share of `bytes` at which a writer is throttled (`vm.dirty_ratio`).
    pub dirty_ratio: f64,
    /// Dirty share the flusher and a throttled writer bring it back to
    /// (`vm.dirty_background_ratio`).
    pub background_ratio: f64,
    /// Age at which a dirty page is written back (`vm.dirty_expire_centisecs`).
    pub expire_ns: u64,
    /// Interval between flusher wake-ups (`vm.dirty_writeback_centisecs`).
    pub writeback_ns: u64,
}

impl PageCacheConfig {
    /// Linux's defaults for the ratios and intervals in front of `bytes` of memory.
    pub fn linux(bytes: u64) -> PageCacheConfig {
        PageCacheConfig {
            bytes,
            dirty_ratio: 0.2,
            background_ratio: 0.1,
            expire_ns: 30_000_000_000,
            writeback_ns: 5_000_000_000,
        }
    }

    fn pages(&self, ratio: f64) -> u64 {
        ((self.bytes / PAGE) as f64 * ratio) as u64
    }
}

/// The disk under the page cache: where its head is and a queue to submit to.
pub trait Disk {
    fn head(&self) -> u64;
    /// Submit an access arriving at `at`; returns its completion.
    fn submit(&mut self, at: u64, op: Op, addr: u64, len: u64) -> u64;
}

struct Page {
    file: u64,
    /// When it was dirtied; `None` when clean.
    dirtied: Option<u64>,
    /// Recency stamp (its key in `clean` while clean).
    used: u64,
}

pub struct PageCache {
    cfg: PageCacheConfig,
    /// By page number (device address / `PAGE`).
    pages: HashMap<u64, Page>,
    /// (recency stamp, page) of every clean page, least recently used first.
    clean: BTreeSet<(u64, u64)>,
    /// (dirtied, page) of every dirty page, oldest first.
    dirty: BTreeSet<(u64, u64)>,
    /// Dirty pages per file.
    by_file: HashMap<u64, BTreeSet<u64>>,
    clock: u64,
    /// Where the next journal commit goes, past `JOURNAL_ADDR`.
    journal: u64,
    /// The flusher's next wake-up.
    next_wakeup: u64,
    /// Whether pages of a file stay cached once clean.
    keeps_clean_data: bool,
}

impl PageCache {
    pub fn new(cfg: PageCacheConfig) -> PageCache {
        let next_wakeup = cfg.writeback_ns;
        PageCache {
            cfg,
            pages: HashMap::new(),
            clean: BTreeSet::new(),
            dirty: BTreeSet::new(),
            by_file: HashMap::new(),
            clock: 0,
            journal: 0,
            next_wakeup,
            keeps_clean_data: true,
        }
    }

    /// Keep file pages once clean (the default), or drop them as soon as they are
    /// written back and cache none that a read brings in.
    pub fn set_keeps_clean_data(&mut self, keep: bool) {
        self.keeps_clean_data = keep;
        if !keep {
            let pages = &mut self.pages;
            self.clean.retain(|&(_, page)| {
                let data = pages.get(&page).is_some_and(|p| p.file != NO_FILE);
                if data {
                    pages.remove(&page);
                }
                !data
            });
        }
    }

    fn keeps(&self, file: u64) -> bool {
        self.keeps_clean_data || file == NO_FILE
    }

    /// Drop the clean pages of device addresses `[addr, addr + len)`; dirty pages stay
    /// (fadvise starts their write-back but does not wait for it, nor drop them).
    pub fn drop_range(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        for page in Self::page_range(addr, len) {
            if let Some(p) = self.pages.get(&page)
                && p.dirtied.is_none()
            {
                self.clean.remove(&(p.used, page));
                self.pages.remove(&page);
            }
        }
    }

    pub fn config(&self) -> &PageCacheConfig {
        &self.cfg
    }

    pub fn dirty_bytes(&self) -> u64 {
        self.dirty.len() as u64 * PAGE
    }

    pub fn cached_bytes(&self) -> u64 {
        self.pages.len() as u64 * PAGE
    }

    fn page_range(addr: u64, len: u64) -> std::ops::Range<u64> {
        addr / PAGE..addr.saturating_add(len.max(1)).div_ceil(PAGE)
    }

    /// Mark `page` used now (cached clean if it was not cached).
    fn touch(&mut self, page: u64, file: u64) -> &mut Page {
        self.clock += 1;
        let used = self.clock;
        let p = self.pages.entry(page).or_insert(Page {
            file,
            dirtied: None,
            used,
        });
        if p.dirtied.is_none() {
            self.clean.remove(&(p.used, page));
            self.clean.insert((used, page));
        }
        p.used = used;
        p
    }

    /// A write of `len` bytes at `addr` of `file` at `now`: returns when the writer may
    /// go on (`now`, unless it was throttled).
    pub fn write(&mut self, disk: &mut dyn Disk, now: u64, file: u64, addr: u64, len: u64) -> u64 {
        self.advance(disk, now);
        for page in Self::page_range(addr, len) {
            let p = self.touch(page, file);
            if p.dirtied.is_some() {
                continue;
            }
            p.dirtied = Some(now);
            p.file = file;
            let used = p.used;
            self.clean.remove(&(used, page));
            self.dirty.insert((now, page));
            self.by_file.entry(file).or_default().insert(page);
        }
        let done = if self.dirty.len() as u64 > self.cfg.pages(self.cfg.dirty_ratio) {
            self.write_back_over(disk, now, self.cfg.pages(self.cfg.background_ratio))
        } else {
            now
        };
        self.shrink();
        done
    }

    /// A read: cached pages cost nothing, each run of missing pages is one disk read.
    pub fn read(&mut self, disk: &mut dyn Disk, now: u64, file: u64, addr: u64, len: u64) -> u64 {
        self.advance(disk, now);
        let mut done = now;
        let mut missing: Option<(u64, u64)> = None;
        for page in Self::page_range(addr, len) {
            if self.pages.contains_key(&page) {
                self.touch(page, file);
                if let Some((first, n)) = missing.take() {
                    done = done.max(disk.submit(now, Op::Read, first * PAGE, n * PAGE));
                }
                continue;
            }
            if self.keeps(file) {
                self.touch(page, file);
            }
            missing = match missing {
                Some((first, n)) if n * PAGE < MAX_RUN => Some((first, n + 1)),
                Some((first, n)) => {
                    done = done.max(disk.submit(now, Op::Read, first * PAGE, n * PAGE));
                    Some((page, 1))
                }
                None => Some((page, 1)),
            };
        }
        if let Some((first, n)) = missing {
            done = done.max(disk.submit(now, Op::Read, first * PAGE, n * PAGE));
        }
        self.shrink();
        done
    }

    /// fsync of `file`: its dirty pages are written back, then (if there were any) a
    /// journal commit block; returns when that completes.
    pub fn fsync(&mut self, disk: &mut dyn Disk, now: u64, file: u64) -> u64 {
        self.advance(disk, now);
        let pages: Vec<u64> = self
            .by_file
            .get(&file)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        if pages.is_empty() {
            return now;
        }
        let data = self.write_back(disk, now, pages);
        // The commit is ordered after the data (ext4's ordered mode).
        let commit = disk.submit(data, Op::Write, JOURNAL_ADDR + self.journal, PAGE);
        self.journal = (self.journal + PAGE) % JOURNAL_BYTES;
        commit
    }

    /// `sync` and `echo 3 > /proc/sys/vm/drop_caches` at `now`: every dirty page is
    /// written back in one sweep, then every page dropped, so that the next read of any
    /// data pays the disk. Returns when the write-back completes.
    pub fn drop_caches(&mut self, disk: &mut dyn Disk, now: u64) -> u64 {
        self.advance(disk, now);
        let dirty: Vec<u64> = self.dirty.iter().map(|&(_, p)| p).collect();
        let done = self.write_back(disk, now, dirty);
        self.pages.clear();
        self.clean.clear();
        done
    }

    /// Run the flusher's wake-ups due by `now`, each at its own time.
    pub fn advance(&mut self, disk: &mut dyn Disk, now: u64) {
        let interval = self.cfg.writeback_ns.max(1);
        while self.next_wakeup <= now {
            let Some(&(oldest, _)) = self.dirty.first() else {
                // Nothing dirty: the wake-ups until `now` find nothing to do.
                self.next_wakeup = (now / interval + 1) * interval;
                return;
            };
            // Skip the wake-ups before the oldest page expires, unless one finds too
            // much dirty data.
            let over_background =
                self.dirty.len() as u64 > self.cfg.pages(self.cfg.background_ratio);
            if !over_background {
                let due = oldest.saturating_add(self.cfg.expire_ns);
                if due > self.next_wakeup {
                    self.next_wakeup = due.div_ceil(interval) * interval;
                    continue;
                }
            }
            let at = self.next_wakeup;
            let expired: Vec<u64> = self
                .dirty
                .iter()
                .take_while(|&&(t, _)| t.saturating_add(self.cfg.expire_ns) <= at)
                .map(|&(_, p)| p)
                .collect();
            self.write_back(disk, at, expired);
            self.write_back_over(disk, at, self.cfg.pages(self.cfg.background_ratio));
            self.next_wakeup += interval;
        }
    }

    /// Write back the oldest dirty pages until at most `keep` are left.
    fn write_back_over(&mut self, disk: &mut dyn Disk, at: u64, keep: u64) -> u64 {
        let n = (self.dirty.len() as u64).saturating_sub(keep) as usize;
        if n == 0 {
            return at;
        }
        let pages: Vec<u64> = self.dirty.iter().take(n).map(|&(_, p)| p).collect();
        self.write_back(disk, at, pages)
    }

    /// Write `pages` (dirty) back in one elevator sweep starting at `at`: sorted, merged
    /// into runs, issued upwards from the head and then from the lowest address. Returns
    /// the completion of the last run (`at` for none).
    fn write_back(&mut self, disk: &mut dyn Disk, at: u64, mut pages: Vec<u64>) -> u64 {
        pages.sort_unstable();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for page in pages {
            let Some(p) = self.pages.get_mut(&page) else {
                continue;
            };
            let Some(t) = p.dirtied.take() else {
                continue;
            };
            self.dirty.remove(&(t, page));
            let (file, used) = (p.file, p.used);
            if self.keeps(file) {
                self.clean.insert((used, page));
            } else {
                self.pages.remove(&page);
            }
            if let Some(s) = self.by_file.get_mut(&file) {
                s.remove(&page);
                if s.is_empty() {
                    self.by_file.remove(&file);
                }
            }
            match runs.last_mut() {
                Some((first, n)) if *first + *n == page && (*n + 1) * PAGE <= MAX_RUN => {
                    *n += 1;
                }
                _ => runs.push((page, 1)),
            }
        }
        let head = disk.head() / PAGE;
        let split = runs.partition_point(|&(first, _)| first < head);
        runs.rotate_left(split);
        let mut done = at;
        for (first, n) in runs {
            done = done.max(disk.submit(at, Op::Write, first * PAGE, n * PAGE));
        }
        done
    }

    /// Drop the least recently used clean pages while the cache holds more than its size.
    fn shrink(&mut self) {
        let cap = self.cfg.bytes / PAGE;
        while self.pages.len() as u64 > cap {
            // Dirty pages stay under the dirty limit, below the cache's size.
            let Some((_, page)) = self.clean.pop_first() else {
                return;
            };
            self.pages.remove(&page);
        }
    }
}
