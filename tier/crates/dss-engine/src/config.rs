//! Cache geometry (`Config`): how many entries the cache has and where its watermarks
//! sit. A policy's watermark fractions resolve to one for a given cache size.

/// Cache geometry: entry count and watermarks in free entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub entries: u32,
    pub low: u32,
    pub high: u32,
}

impl Config {
    pub fn from_fractions(entries: u32, low: f64, high: f64) -> Config {
        let e = f64::from(entries);
        let mut lo = (e * low).ceil() as u32;
        let mut hi = (e * high).ceil() as u32;
        lo = lo.clamp(1.min(entries), entries);
        hi = hi.clamp(lo, entries);
        // Equal watermarks would make the cleaner start and stop on the same entry; when
        // rounding puts both at the top, the low one gives way instead.
        if hi == lo && hi < entries {
            hi += 1;
        } else if hi == lo && lo > 1 {
            lo -= 1;
        }
        Config {
            entries,
            low: lo,
            high: hi,
        }
    }
}
