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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
