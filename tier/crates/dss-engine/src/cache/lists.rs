//! The slots' entries and the lists threaded through them: one dirty list per priority,
//! the free list (empty and clean entries) and, under `slru`, the protected segment, each
//! in LRU order (head oldest). The links live in the entries, so moving an entry costs no
//! allocation, and a bitmap of the non-empty dirty lists finds the lowest priority with
//! dirty blocks without looking at the others. Which list an entry belongs on is the
//! cache's to decide (`Cache::list_of`); this module keeps the links and lengths right.

use super::outcome::State;
use crate::block::BlockKey;
use crate::policy::CLASSES;

pub(super) const NIL: u32 = u32::MAX;
/// Pinned and in-flight entries sit on no list.
pub(super) const NO_LIST: u16 = u16::MAX;
/// Lists `0..CLASSES` are the dirty lists, indexed by priority.
pub(super) const FREE_LIST: u16 = CLASSES as u16;
/// `slru` only: clean entries referenced again while cached. Reused after the free list.
pub(super) const PROTECTED: u16 = CLASSES as u16 + 1;
/// `clock-pro` only: clean entries, on the clock rather than on a list of `Lists`.
pub(super) const CLOCK: u16 = CLASSES as u16 + 2;

/// `Entry::marks` bits.
pub(super) const LOGGED: u8 = 1;
pub(super) const HOT: u8 = 2;

/// One slot. 32 bytes, aligned so that an entry never straddles two cache lines: a
/// decision touches a handful of entries at random, and each costs one miss at most. The
/// list an entry is on follows from its state and class (see `Cache::list_of`).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub(super) struct Entry {
    pub(super) key: BlockKey,
    pub(super) prev: u32,
    pub(super) next: u32,
    pub(super) version: u32,
    pub(super) state: State,
    pub(super) class: u8,
    /// A Filling or Cleaning entry whose block was dropped meanwhile: it keeps its slot
    /// until the I/O in flight reports back, then becomes Empty.
    pub(super) cancelled: bool,
    /// `LOGGED`: already in the change log since it was last drained. `HOT` (`slru`):
    /// referenced again since it was cached, so its clean copy is protected.
    pub(super) marks: u8,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct List {
    pub(super) head: u32,
    pub(super) tail: u32,
    pub(super) len: u32,
}

/// The dirty lists, the free list and the protected segment, over the cache's entries
/// (passed in, as the cache owns them).
pub(super) struct Lists {
    /// Dirty lists indexed by priority, then the free list and the protected segment.
    lists: Vec<List>,
    /// Bit p set when the dirty list of priority p is not empty.
    nonempty: [u64; 4],
}

impl Lists {
    /// `n` empty entries, all on the free list in slot order.
    pub(super) fn all_free(n: u32) -> (Lists, Vec<Entry>) {
        let mut entries = Vec::with_capacity(n as usize);
        for i in 0..n {
            entries.push(Entry {
                prev: if i == 0 { NIL } else { i - 1 },
                next: if i + 1 == n { NIL } else { i + 1 },
                state: State::Empty,
                class: 0,
                cancelled: false,
                marks: 0,
                version: 0,
                key: BlockKey::default(),
            });
        }
        let mut lists = vec![
            List {
                head: NIL,
                tail: NIL,
                len: 0
            };
            CLASSES + 2
        ];
        if n > 0 {
            lists[FREE_LIST as usize] = List {
                head: 0,
                tail: n - 1,
                len: n,
            };
        }
        (
            Lists {
                lists,
                nonempty: [0; 4],
            },
            entries,
        )
    }

    #[inline]
    pub(super) fn len(&self, list: u16) -> u32 {
        self.lists[list as usize].len
    }

    /// The least recently used entry of `list`, or `NIL`.
    #[inline]
    pub(super) fn head(&self, list: u16) -> u32 {
        self.lists[list as usize].head
    }

    /// Bytes of the list heads (the entries are the cache's).
    pub(super) fn memory_bytes(&self) -> usize {
        self.lists.capacity() * std::mem::size_of::<List>()
    }

    /// Entries on the dirty lists.
    pub(super) fn dirty_len(&self) -> u32 {
        self.lists[..CLASSES].iter().map(|l| l.len).sum()
    }

    /// Every list, in list-id order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &List> {
        self.lists.iter()
    }

    /// Whether the bitmap says dirty list `list` is non-empty.
    pub(super) fn marked_nonempty(&self, list: usize) -> bool {
        self.nonempty[list / 64] & (1u64 << (list % 64)) != 0
    }

    /// Take `slot` off `list`, the list it is on.
    #[inline]
    pub(super) fn unlink(&mut self, entries: &mut [Entry], slot: u32, list: u16) {
        let e = entries[slot as usize];
        let l = &mut self.lists[list as usize];
        if e.prev == NIL {
            l.head = e.next;
        } else {
            entries[e.prev as usize].next = e.next;
        }
        if e.next == NIL {
            l.tail = e.prev;
        } else {
            entries[e.next as usize].prev = e.prev;
        }
        l.len -= 1;
        if l.len == 0 && list < FREE_LIST {
            self.nonempty[(list / 64) as usize] &= !(1u64 << (list % 64));
        }
        let e = &mut entries[slot as usize];
        e.prev = NIL;
        e.next = NIL;
    }

    #[inline]
    pub(super) fn link(&mut self, entries: &mut [Entry], slot: u32, list: u16, at_head: bool) {
        let l = self.lists[list as usize];
        {
            let e = &mut entries[slot as usize];
            if at_head {
                e.prev = NIL;
                e.next = l.head;
            } else {
                e.prev = l.tail;
                e.next = NIL;
            }
        }
        let l = &mut self.lists[list as usize];
        if at_head {
            if l.head == NIL {
                l.tail = slot;
            } else {
                entries[l.head as usize].prev = slot;
            }
            l.head = slot;
        } else {
            if l.tail == NIL {
                l.head = slot;
            } else {
                entries[l.tail as usize].next = slot;
            }
            l.tail = slot;
        }
        l.len += 1;
        if list < FREE_LIST {
            self.nonempty[(list / 64) as usize] |= 1u64 << (list % 64);
        }
    }

    /// The least recently used entry of the lowest priority (numerically largest) that
    /// has dirty entries.
    pub(super) fn lowest_priority_dirty(&self) -> Option<u32> {
        for w in (0..4).rev() {
            let bits = self.nonempty[w];
            if bits != 0 {
                let prio = w * 64 + 63 - bits.leading_zeros() as usize;
                return Some(self.lists[prio].head);
            }
        }
        None
    }

    /// Past `cap`, the protected segment hands its least recently used entry back to
    /// the free list's most recent end, as segmented LRU does.
    pub(super) fn demote_overflow(&mut self, entries: &mut [Entry], cap: u32) {
        if self.lists[PROTECTED as usize].len > cap {
            let slot = self.lists[PROTECTED as usize].head;
            self.unlink(entries, slot, PROTECTED);
            entries[slot as usize].marks &= !HOT;
            self.link(entries, slot, FREE_LIST, false);
        }
    }
}
