//! Coalescing of per-block I/O: the engine decides block by block, but a request's
//! blocks usually land on consecutive slab slots (slots are handed out in order from the
//! free list) or on consecutive bytes of an HDD file, and one system call per stretch
//! costs a fraction of one per block.

/// A stretch of a request buffer (`buf..buf + len`) that maps onto one contiguous device
/// range starting at byte `dev`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    pub dev: u64,
    pub buf: usize,
    pub len: usize,
}

impl Run {
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Add the piece `dev`, `buf`, `len` if it continues this run both on the device and
    /// in the buffer (an empty run takes any piece). On `false` the caller carries the run
    /// out and starts a new one with `Run::start`.
    pub fn extend(&mut self, dev: u64, buf: usize, len: usize) -> bool {
        if self.len == 0 {
            *self = Run { dev, buf, len };
            return true;
        }
        if self.dev + self.len as u64 == dev && self.buf + self.len == buf {
            self.len += len;
            return true;
        }
        false
    }

    pub fn start(dev: u64, buf: usize, len: usize) -> Run {
        Run { dev, buf, len }
    }

    /// Take the run out, leaving an empty one.
    pub fn take(&mut self) -> Run {
        std::mem::take(self)
    }

    /// The run cut where `side` changes between the blocks of `block` bytes it covers,
    /// the run's first byte being byte `at` of its file: (the side, the piece) in order.
    pub fn split_at_blocks(
        &self,
        at: u64,
        block: u64,
        mut side: impl FnMut(u64) -> bool,
    ) -> Vec<(bool, Run)> {
        let mut out: Vec<(bool, Run)> = Vec::new();
        let mut done = 0;
        while done < self.len {
            let pos = at + done as u64;
            let n = ((block - pos % block) as usize).min(self.len - done);
            let s = side(pos / block);
            match out.last_mut() {
                Some((last, run)) if *last == s => run.len += n,
                _ => out.push((s, Run::start(self.dev + done as u64, self.buf + done, n))),
            }
            done += n;
        }
        out
    }
}

/// Read misses the engine wants cached, on consecutive blocks of one file: one HDD read
/// carries them all, whatever slots they are bound for (the HDD's order is the file's,
/// and a read split by slot would pay the disk's positioning once per piece); the slab
/// writes go in runs of consecutive slots (`slot_runs`). The request wants `len` bytes
/// of them at `buf`, starting `within` the first block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FillRun {
    pub index: u64,
    pub within: u64,
    pub buf: usize,
    pub len: usize,
    /// Each block's slot and the engine's version of its fill, in block order.
    pub slots: Vec<u32>,
    pub versions: Vec<u32>,
}

impl FillRun {
    pub fn is_empty(&self) -> bool {
        self.versions.is_empty()
    }

    /// Add block `index`, bound for `slot`, of which the request wants `len` bytes at
    /// `buf` starting `within` it, if it continues the run (an empty run takes any).
    pub fn extend(
        &mut self,
        index: u64,
        slot: u32,
        version: u32,
        (within, buf, len): (u64, usize, usize),
    ) -> bool {
        let k = self.versions.len();
        if k == 0 {
            *self = FillRun {
                index,
                within,
                buf,
                len,
                slots: vec![slot],
                versions: vec![version],
            };
            return true;
        }
        let next = self.index + k as u64 == index && self.buf + self.len == buf && within == 0;
        if next {
            self.slots.push(slot);
            self.versions.push(version);
            self.len += len;
        }
        next
    }

    /// The run's blocks as (first block's position in the run, first slot, blocks):
    /// consecutive slots together.
    pub fn slot_runs(&self) -> Vec<(usize, u32, usize)> {
        let mut out: Vec<(usize, u32, usize)> = Vec::new();
        for (i, &slot) in self.slots.iter().enumerate() {
            match out.last_mut() {
                Some((_, first, n)) if u64::from(*first) + *n as u64 == u64::from(slot) => *n += 1,
                _ => out.push((i, slot, 1)),
            }
        }
        out
    }

    /// Take the run out, leaving an empty one.
    pub fn take(&mut self) -> FillRun {
        std::mem::take(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_merge_on_the_next_block_whatever_its_slot() {
        let mut r = FillRun::default();
        assert!(r.is_empty());
        // A read starting 100 bytes into block 7, bound for slot 3.
        assert!(r.extend(7, 3, 1, (100, 0, 3996)));
        assert!(r.extend(8, 4, 9, (0, 3996, 4096)));
        assert_eq!((r.index, r.within, r.buf, r.len), (7, 100, 0, 8092));
        assert_eq!(r.versions, [1, 9]);
        assert!(
            r.extend(9, 40, 2, (0, 8092, 4096)),
            "another slot: one HDD read still"
        );
        assert!(!r.extend(11, 41, 2, (0, 12188, 4096)), "a block skipped");
        assert!(
            !r.extend(10, 41, 2, (0, 9000, 4096)),
            "not next in the buffer"
        );
        assert!(r.extend(10, 41, 5, (0, 12188, 1)));
        assert!(r.extend(11, 7, 6, (0, 12189, 4096)));
        assert_eq!(r.slots, [3, 4, 40, 41, 7]);
        // Slab writes: slots 3-4, 40-41, 7.
        assert_eq!(r.slot_runs(), [(0, 3, 2), (2, 40, 2), (4, 7, 1)]);
        assert_eq!(r.take().versions, [1, 9, 2, 5, 6]);
        assert!(r.is_empty());
        assert!(r.slot_runs().is_empty());
    }

    #[test]
    fn adjacent_pieces_merge_and_gaps_do_not() {
        let mut r = Run::default();
        assert!(r.is_empty());
        assert!(r.extend(8192, 100, 4096));
        assert!(r.extend(12288, 4196, 4096));
        assert_eq!(r, Run::start(8192, 100, 8192));
        // Next slot on the device but not next in the buffer.
        assert!(!r.extend(16384, 9000, 4096));
        // Next in the buffer but another slot.
        assert!(!r.extend(40960, 8292, 4096));
        // Backwards on the device.
        assert!(!r.extend(4096, 8292, 4096));
        assert_eq!(r.take(), Run::start(8192, 100, 8192));
        assert!(r.is_empty());
        assert!(r.extend(40960, 8292, 4096));
    }

    #[test]
    fn a_run_splits_where_its_blocks_change_side() {
        // 100 bytes into block 2 of the file, through block 7, 300 bytes into it.
        let r = Run::start(10_000, 50, 3996 + 4 * 4096 + 300);
        let split = r.split_at_blocks(2 * 4096 + 100, 4096, |i| i == 3 || i == 4);
        assert_eq!(
            split,
            [
                (false, Run::start(10_000, 50, 3996)),
                (true, Run::start(13_996, 4046, 8192)),
                (false, Run::start(22_188, 12_238, 2 * 4096 + 300)),
            ]
        );
        let total: usize = split.iter().map(|(_, p)| p.len).sum();
        assert_eq!(total, r.len);
        assert_eq!(r.split_at_blocks(0, 4096, |_| true), [(true, r)]);
        assert!(Run::default().split_at_blocks(0, 4096, |_| true).is_empty());
    }
}
