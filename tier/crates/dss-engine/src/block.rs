//! Block identity: `BlockKey`, the logical block every structure of the engine is keyed
//! by, and `BlockHasher`, the cheap hasher for standard maps keyed by it.

use std::hash::{Hash, Hasher};

/// A logical block: a file and a block index inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct BlockKey {
    pub file: u64,
    pub index: u64,
}

impl Hash for BlockKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.file ^ self.index.rotate_left(29));
    }
}

/// Multiplicative hash for maps keyed by blocks outside the engine: SipHash costs more
/// than the rest of a decision.
#[derive(Default)]
pub struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        let x = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 32);
    }
}
