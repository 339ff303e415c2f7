//! Device models: each device is a queue whose service times are those of the modelled
//! hardware. Time is virtual (nanoseconds supplied by the caller), so the models are
//! deterministic; the daemon turns completion times into sleeps.
//!
//! A model may also be dilated (DieCast's time dilation): with factor K every service time
//! is K times longer, and so is every interval of the page cache in front of the device,
//! as if the whole modelled machine ran K times slower.
//!
//! And a model may be rate-scaled for a workload whose object sizes were scaled by a
//! factor s (`rate_scale=s`): its transfer rates, and the gaps it passes over without a
//! seek or takes for one write stream, are multiplied by s; its per-operation times and
//! its capacity (over which files lie, whatever their size) are not. A transfer then takes
//! as long as the full-size one would on the real device, so a request's fixed costs and
//! its transfer keep the proportions they had before the sizes were scaled; left
//! unscaled, a workload at a tenth of the sizes is mostly seeks.

use crate::pagecache::{Disk, NO_FILE, PageCache, PageCacheConfig};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// Rotating disk: seek time grows with the square root of the distance, then half a
/// rotation on average, then transfer at the sustained rate.
#[derive(Clone, Debug, PartialEq)]
pub struct HddModel {
    pub rpm: f64,
    /// Average seek over uniformly random pairs of positions.
    pub seek_ms: f64,
    pub track_to_track_ms: f64,
    pub mbps: f64,
    pub capacity_bytes: u64,
    /// The stretch of the disk, from its start, over which files lie (`span=SIZE`; the
    /// whole capacity when unset). A fresh ext4 allocates new files near their
    /// directory's block group, so a disk holding a tenth of its capacity keeps its data
    /// within about that tenth, and switching files costs a seek over that distance, not
    /// over the whole stroke.
    pub span_bytes: Option<u64>,
    /// Forward gaps up to this size are passed over by the head (no seek, no rotation).
    pub near_gap_bytes: u64,
    /// The kernel's page cache and elevator in front of the disk (`pagecache=SIZE`).
    pub pagecache: Option<PageCacheConfig>,
    /// Time dilation factor.
    pub dilation: u32,
    /// The factor `mbps` and `near_gap_bytes` were scaled by (`rate_scale`), 1 when not.
    pub rate_scale: f64,
}

/// Flash: `parallelism` independent units each charging a per-operation overhead, all
/// sharing one transfer channel. The overhead is derived from the random 4 KiB IOPS so
/// that a saturated device delivers exactly those IOPS.
///
/// A write that continues one of the last `write_streams` writes (starts at its end, or
/// up to `stream_gap_bytes` past it) is charged the read overhead instead of the random
/// write overhead. A flash device's random-write rate is far below its read rate because
/// of the garbage collection that scattered overwrites cause inside the device, which a
/// stream filling flash blocks in order does not (the intrinsic-characteristics and
/// RS-Wrapper studies in the seeds); without this, a block-at-a-time stream into the
/// cache ran at the random 4 KiB rate, 11 MB/s on the Intel 710, instead of its 210 MB/s.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdModel {
    pub read_mbps: f64,
    pub write_mbps: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub parallelism: u32,
    /// Sequential write streams recognised at once; 0 charges every write as random.
    pub write_streams: u32,
    pub stream_gap_bytes: u64,
    /// The kernel's page cache in front of the device (`pagecache=SIZE`), as in front of
    /// an HDD: the file system on the SSD holds its writes until an fsync, the flusher or
    /// the dirty limit sends them.
    pub pagecache: Option<PageCacheConfig>,
    /// Time dilation factor.
    pub dilation: u32,
    /// The factor the rates and `stream_gap_bytes` were scaled by (`rate_scale`), 1 when
    /// not; the per-operation overhead stays the profile's.
    pub rate_scale: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// A real device: nothing is charged, the caller records measured times.
    None,
    Hdd(HddModel),
    Ssd(SsdModel),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

/// Mean of sqrt(|x - y|) for x, y uniform on [0, 1]: ties the average seek to the
/// full-stroke seek.
const MEAN_SQRT_DISTANCE: f64 = 8.0 / 15.0;

impl HddModel {
    /// Seagate Constellation ST1000NM0011 (the paper's HDD).
    pub fn st1000nm0011() -> HddModel {
        HddModel {
            rpm: 7200.0,
            seek_ms: 8.5,
            track_to_track_ms: 0.8,
            mbps: 150.0,
            capacity_bytes: 1_000_000_000_000,
            span_bytes: None,
            near_gap_bytes: 256 << 10,
            pagecache: None,
            dilation: 1,
            rate_scale: 1.0,
        }
    }

    /// A generic 7,200 rpm desktop disk, a starting point for overrides.
    pub fn generic() -> HddModel {
        HddModel {
            rpm: 7200.0,
            seek_ms: 9.0,
            track_to_track_ms: 1.0,
            mbps: 120.0,
            capacity_bytes: 2_000_000_000_000,
            span_bytes: None,
            near_gap_bytes: 256 << 10,
            pagecache: None,
            dilation: 1,
            rate_scale: 1.0,
        }
    }

    /// Bytes from the disk's start over which files lie.
    pub fn span(&self) -> u64 {
        self.span_bytes.unwrap_or(self.capacity_bytes)
    }

    fn full_stroke_ms(&self) -> f64 {
        self.track_to_track_ms + (self.seek_ms - self.track_to_track_ms) / MEAN_SQRT_DISTANCE
    }

    /// Positioning time in ns to go from `from` to `to`.
    pub fn position_ns(&self, from: u64, to: u64) -> u64 {
        if to >= from && to - from <= self.near_gap_bytes {
            return self.transfer_ns(to - from);
        }
        let d = to.abs_diff(from) as f64 / self.capacity_bytes.max(1) as f64;
        let seek = self.track_to_track_ms
            + (self.full_stroke_ms() - self.track_to_track_ms) * d.min(1.0).sqrt();
        let half_rotation = 30_000.0 / self.rpm;
        ((seek + half_rotation) * 1e6) as u64
    }

    pub fn transfer_ns(&self, len: u64) -> u64 {
        (len as f64 * 1e3 / self.mbps) as u64
    }
}

impl SsdModel {
    /// Intel 710 (the paper's SSD).
    pub fn intel710() -> SsdModel {
        SsdModel {
            read_mbps: 270.0,
            write_mbps: 210.0,
            read_iops: 38_500.0,
            write_iops: 2_700.0,
            parallelism: 4,
            write_streams: 8,
            stream_gap_bytes: 128 << 10,
            pagecache: None,
            dilation: 1,
            rate_scale: 1.0,
        }
    }

    /// A generic SATA SSD, a starting point for overrides.
    pub fn generic() -> SsdModel {
        SsdModel {
            read_mbps: 500.0,
            write_mbps: 450.0,
            read_iops: 90_000.0,
            write_iops: 80_000.0,
            parallelism: 8,
            write_streams: 8,
            stream_gap_bytes: 128 << 10,
            pagecache: None,
            dilation: 1,
            rate_scale: 1.0,
        }
    }

    fn mbps(&self, op: Op) -> f64 {
        match op {
            Op::Read => self.read_mbps,
            Op::Write => self.write_mbps,
        }
    }

    pub fn transfer_ns(&self, op: Op, len: u64) -> u64 {
        (len as f64 * 1e3 / self.mbps(op)) as u64
    }

    /// Per-operation overhead on one unit, in ns.
    pub fn overhead_ns(&self, op: Op) -> u64 {
        let iops = match op {
            Op::Read => self.read_iops,
            Op::Write => self.write_iops,
        };
        let per_op = f64::from(self.parallelism) * 1e9 / iops;
        // The IOPS are the real device's at 4 KiB, so its unscaled transfer is taken out.
        let transfer = self.transfer_ns(op, 4096) as f64 * self.rate_scale;
        (per_op - transfer).max(0.0) as u64
    }
}

impl Model {
    /// Parse `none`, a profile (`st1000nm0011`, `intel710`, `hdd`, `ssd`), optionally
    /// followed by `:key=value,...` overrides of the profile's fields, `dilation=K` (a
    /// whole number, any model) and, for an HDD or an SSD, the page cache in front of it
    /// (`pagecache=SIZE` turns it on; `dirty_ratio`, `background_ratio`, `expire=TIME`,
    /// `writeback=TIME` adjust it), for an HDD the stretch its files lie over
    /// (`span=SIZE`, at most its capacity), and `rate_scale=S` (a number in (0, 1], any
    /// model but `none`: the transfer rates and gaps, overridden or not, times S). Sizes
    /// take `KiB`, `MiB`, `GiB` (or bytes), times `ms` or `s`.
    pub fn parse(spec: &str) -> Result<Model, ModelError> {
        let (name, overrides) = match spec.split_once(':') {
            Some((n, o)) => (n, o),
            None => (spec, ""),
        };
        let mut model = match name {
            "none" => Model::None,
            "st1000nm0011" | "constellation" => Model::Hdd(HddModel::st1000nm0011()),
            "intel710" => Model::Ssd(SsdModel::intel710()),
            "hdd" => Model::Hdd(HddModel::generic()),
            "ssd" => Model::Ssd(SsdModel::generic()),
            _ => {
                return Err(ModelError(format!(
                    "unknown device model {name:?} (none, st1000nm0011, intel710, hdd, ssd)"
                )));
            }
        };
        let mut pagecache: Option<PageCacheConfig> = None;
        let mut cache_keys = Vec::new();
        let mut rate_scale = 1.0;
        for kv in overrides.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| ModelError(format!("override {kv:?} is not key=value")))?;
            match (&mut model, k) {
                (Model::Hdd(h), "dilation") => h.dilation = parse_dilation(kv, v)?,
                (Model::Hdd(h), "span") => h.span_bytes = Some(parse_size(kv, v)?),
                (Model::Ssd(s), "dilation") => s.dilation = parse_dilation(kv, v)?,
                (Model::Hdd(_) | Model::Ssd(_), "rate_scale") => rate_scale = parse_ratio(kv, v)?,
                (Model::Hdd(_) | Model::Ssd(_), "pagecache") => {
                    pagecache = Some(PageCacheConfig::linux(parse_size(kv, v)?));
                }
                (
                    Model::Hdd(_) | Model::Ssd(_),
                    "dirty_ratio" | "background_ratio" | "expire" | "writeback",
                ) => {
                    cache_keys.push((k, kv, v));
                }
                _ => set_number(&mut model, name, kv, k, v)?,
            }
        }
        for (k, kv, v) in cache_keys {
            let cfg = pagecache.as_mut().ok_or_else(|| {
                ModelError(format!(
                    "override {kv:?} needs pagecache=SIZE to turn the page cache on"
                ))
            })?;
            match k {
                "dirty_ratio" => cfg.dirty_ratio = parse_ratio(kv, v)?,
                "background_ratio" => cfg.background_ratio = parse_ratio(kv, v)?,
                "expire" => cfg.expire_ns = parse_time(kv, v)?,
                _ => cfg.writeback_ns = parse_time(kv, v)?,
            }
        }
        if let Some(cfg) = &pagecache
            && cfg.background_ratio > cfg.dirty_ratio
        {
            return Err(ModelError("background_ratio exceeds dirty_ratio".into()));
        }
        if let Model::Hdd(h) = &mut model {
            h.pagecache = pagecache.take();
            if h.track_to_track_ms > h.seek_ms {
                return Err(ModelError("track_to_track_ms exceeds seek_ms".into()));
            }
            if h.span() > h.capacity_bytes {
                return Err(ModelError("span exceeds the disk's capacity".into()));
            }
            h.rate_scale = rate_scale;
            h.mbps *= rate_scale;
            h.near_gap_bytes = scale_bytes(h.near_gap_bytes, rate_scale);
        }
        if let Model::Ssd(s) = &mut model {
            s.pagecache = pagecache;
            if s.parallelism == 0 {
                return Err(ModelError("parallelism must be at least 1".into()));
            }
            s.rate_scale = rate_scale;
            s.read_mbps *= rate_scale;
            s.write_mbps *= rate_scale;
            s.stream_gap_bytes = scale_bytes(s.stream_gap_bytes, rate_scale);
        }
        Ok(model)
    }

    /// The time dilation factor (1 for `none`).
    pub fn dilation(&self) -> u32 {
        match self {
            Model::None => 1,
            Model::Hdd(h) => h.dilation,
            Model::Ssd(s) => s.dilation,
        }
    }
}

/// A profile field that is a plain number.
fn set_number(model: &mut Model, name: &str, kv: &str, k: &str, v: &str) -> Result<(), ModelError> {
    let known: &[&str] = match model {
        Model::Hdd(_) => &[
            "rpm",
            "seek_ms",
            "track_to_track_ms",
            "mbps",
            "capacity_gb",
            "near_gap_kib",
        ],
        Model::Ssd(_) => &[
            "read_mbps",
            "write_mbps",
            "read_iops",
            "write_iops",
            "parallelism",
            "write_streams",
            "stream_gap_kib",
        ],
        Model::None => &[],
    };
    if !known.contains(&k) {
        return Err(ModelError(format!("{name} has no parameter {k:?}")));
    }
    // Stream detection may be switched off; every other parameter is a rate, a time or a
    // size that must be positive.
    let may_be_zero = matches!(k, "write_streams" | "stream_gap_kib");
    let v: f64 = v
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && (*v > 0.0 || (may_be_zero && *v == 0.0)))
        .ok_or_else(|| ModelError(format!("override {kv:?}: need a positive number")))?;
    let field = match (model, k) {
        (Model::Hdd(h), "rpm") => &mut h.rpm,
        (Model::Hdd(h), "seek_ms") => &mut h.seek_ms,
        (Model::Hdd(h), "track_to_track_ms") => &mut h.track_to_track_ms,
        (Model::Hdd(h), "mbps") => &mut h.mbps,
        (Model::Hdd(h), "capacity_gb") => {
            h.capacity_bytes = (v * 1e9) as u64;
            return Ok(());
        }
        (Model::Hdd(h), "near_gap_kib") => {
            h.near_gap_bytes = (v * 1024.0) as u64;
            return Ok(());
        }
        (Model::Ssd(s), "read_mbps") => &mut s.read_mbps,
        (Model::Ssd(s), "write_mbps") => &mut s.write_mbps,
        (Model::Ssd(s), "read_iops") => &mut s.read_iops,
        (Model::Ssd(s), "write_iops") => &mut s.write_iops,
        (Model::Ssd(s), "parallelism") => {
            s.parallelism = v as u32;
            return Ok(());
        }
        (Model::Ssd(s), "write_streams") => {
            s.write_streams = v as u32;
            return Ok(());
        }
        (Model::Ssd(s), "stream_gap_kib") => {
            s.stream_gap_bytes = (v * 1024.0) as u64;
            return Ok(());
        }
        _ => return Err(ModelError(format!("{name} has no parameter {k:?}"))),
    };
    *field = v;
    Ok(())
}

fn scale_bytes(bytes: u64, factor: f64) -> u64 {
    (bytes as f64 * factor).round() as u64
}

fn parse_dilation(kv: &str, v: &str) -> Result<u32, ModelError> {
    v.parse()
        .ok()
        .filter(|k| (1..=10_000).contains(k))
        .ok_or_else(|| {
            ModelError(format!(
                "override {kv:?}: need a whole number from 1 to 10000"
            ))
        })
}

fn parse_ratio(kv: &str, v: &str) -> Result<f64, ModelError> {
    v.parse()
        .ok()
        .filter(|r: &f64| *r > 0.0 && *r <= 1.0)
        .ok_or_else(|| ModelError(format!("override {kv:?}: need a number in (0, 1]")))
}

/// A number followed by one of `units` (suffix, multiplier); a bare number takes `bare`.
fn with_unit(v: &str, units: &[(&str, f64)], bare: Option<f64>) -> Option<f64> {
    let (num, mult) = units
        .iter()
        .find_map(|&(u, m)| v.strip_suffix(u).map(|n| (n, m)))
        .or_else(|| bare.map(|m| (v, m)))?;
    let x: f64 = num.trim().parse().ok()?;
    (x.is_finite() && x > 0.0).then_some(x * mult)
}

fn parse_size(kv: &str, v: &str) -> Result<u64, ModelError> {
    let units = [
        ("KiB", 1024.0),
        ("MiB", 1048576.0),
        ("GiB", 1073741824.0),
        ("TiB", 1099511627776.0),
    ];
    with_unit(v, &units, Some(1.0))
        .map(|b| b as u64)
        .filter(|&b| b >= crate::pagecache::PAGE)
        .ok_or_else(|| {
            ModelError(format!(
                "override {kv:?}: need a size of at least 4KiB, in bytes or with KiB, MiB, \
                 GiB or TiB (e.g. 256MiB)"
            ))
        })
}

fn parse_time(kv: &str, v: &str) -> Result<u64, ModelError> {
    with_unit(v, &[("ms", 1e6), ("s", 1e9)], None)
        .map(|ns| ns as u64)
        .filter(|&ns| ns > 0)
        .ok_or_else(|| ModelError(format!("override {kv:?}: need a time such as 30s or 500ms")))
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Time with at least one operation in service.
    pub busy_ns: u64,
    /// The part of the above submitted while the device served the cache's write-back
    /// (`Device::set_writeback`): the syncer's reads of dirty blocks from the SSD, its
    /// writes and syncs on the HDD. Busy time counts there when such an operation
    /// extended it.
    pub writeback_ops: u64,
    pub writeback_bytes: u64,
    pub writeback_busy_ns: u64,
}

impl DeviceStats {
    pub fn ops(&self) -> u64 {
        self.read_ops + self.write_ops
    }
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
}

/// A device: the modelled hardware as a queue (operations served in arrival order by the
/// model's servers), behind the page cache when the model has one, in time dilated by the
/// model's factor.
pub struct Device {
    queue: Queue,
    pagecache: Option<PageCache>,
    dilation: u64,
}

impl Device {
    pub fn new(model: Model) -> Device {
        let pagecache = match &model {
            Model::Hdd(h) => h.pagecache.clone().map(PageCache::new),
            Model::Ssd(s) => s.pagecache.clone().map(PageCache::new),
            Model::None => None,
        };
        Device {
            dilation: u64::from(model.dilation().max(1)),
            pagecache,
            queue: Queue::new(model),
        }
    }

    pub fn model(&self) -> &Model {
        &self.queue.model
    }

    /// Operations and bytes that reached the device (after the page cache), and its busy
    /// time in real (dilated) ns.
    pub fn stats(&self) -> DeviceStats {
        let mut s = self.queue.stats;
        s.busy_ns = s.busy_ns.saturating_mul(self.dilation);
        s.writeback_busy_ns = s.writeback_busy_ns.saturating_mul(self.dilation);
        s
    }

    pub fn pagecache(&self) -> Option<&PageCache> {
        self.pagecache.as_ref()
    }

    /// Count what is submitted from now on as the cache's write-back (`on`), or not.
    /// The page cache's flusher wake-ups that fall due first stay with the writers
    /// whose pages they write.
    pub fn set_writeback(&mut self, on: bool) {
        self.queue.writeback = on;
    }

    /// Run the flusher's wake-ups due by `now` outside the write-back's account, before
    /// a write-back's access.
    fn flush_due(&mut self, now: u64) {
        if self.queue.writeback {
            self.queue.writeback = false;
            self.advance(now);
            self.queue.writeback = true;
        }
    }

    /// Submit an access of `len` bytes at device address `addr` arriving at `now`
    /// (virtual ns). Returns when it completes. With model `none` it completes at once;
    /// call `record` with the measured time instead.
    pub fn submit(&mut self, now: u64, op: Op, addr: u64, len: u64) -> u64 {
        self.access(now, op, NO_FILE, addr, len)
    }

    /// `submit` for data of file `file` (which `fsync` can then write back).
    pub fn access(&mut self, now: u64, op: Op, file: u64, addr: u64, len: u64) -> u64 {
        if matches!(self.queue.model, Model::None) {
            self.queue.count(op, len);
            return now;
        }
        // The model runs in its own (undilated) time: every time it charges, and every
        // interval of the page cache, stretches by the same factor.
        let k = self.dilation;
        self.flush_due(now);
        let t = now / k;
        let end = match (&mut self.pagecache, op) {
            (Some(pc), Op::Write) => pc.write(&mut self.queue, t, file, addr, len),
            (Some(pc), Op::Read) => pc.read(&mut self.queue, t, file, addr, len),
            (None, _) => self.queue.submit(t, op, addr, len),
        };
        end.saturating_mul(k)
    }

    /// fsync of `file` at `now`: returns when its dirty pages are on the device (`now`
    /// without a page cache: every write was charged as it came).
    pub fn fsync(&mut self, now: u64, file: u64) -> u64 {
        self.flush_due(now);
        let k = self.dilation;
        match &mut self.pagecache {
            Some(pc) => pc.fsync(&mut self.queue, now / k, file).saturating_mul(k),
            None => now,
        }
    }

    /// Write the page cache's dirty pages back and empty it, at `now`: returns when the
    /// write-back completes (`now` without a page cache).
    pub fn drop_caches(&mut self, now: u64) -> u64 {
        let k = self.dilation;
        match &mut self.pagecache {
            Some(pc) => pc.drop_caches(&mut self.queue, now / k).saturating_mul(k),
            None => now,
        }
    }

    /// `posix_fadvise(POSIX_FADV_DONTNEED)` of device addresses `[addr, addr + len)`:
    /// the page cache's clean pages there are dropped.
    pub fn drop_range(&mut self, addr: u64, len: u64) {
        if let Some(pc) = &mut self.pagecache {
            pc.drop_range(addr, len);
        }
    }

    /// Whether the page cache (if any) keeps file pages once clean; see `PageCache`.
    pub fn set_keeps_clean_data(&mut self, keep: bool) {
        if let Some(pc) = &mut self.pagecache {
            pc.set_keeps_clean_data(keep);
        }
    }

    /// Let the page cache's flusher run the wake-ups due by `now`.
    pub fn advance(&mut self, now: u64) {
        let k = self.dilation;
        if let Some(pc) = &mut self.pagecache {
            pc.advance(&mut self.queue, now / k);
        }
    }

    /// Account an access on a real device that took `start..end` (ns, monotonic clock).
    pub fn record(&mut self, op: Op, len: u64, start: u64, end: u64) {
        self.queue.count(op, len);
        self.queue.busy(start, end.max(start));
    }
}

/// The modelled hardware itself.
struct Queue {
    model: Model,
    /// Per unit: virtual time at which it is free (one unit for an HDD).
    units: Vec<u64>,
    channel_free: u64,
    head: u64,
    /// SSD: where each recent write stream ended; the oldest is replaced first.
    streams: Vec<u64>,
    next_stream: usize,
    busy_until: u64,
    stats: DeviceStats,
    /// Whether what is submitted now is the cache's write-back.
    writeback: bool,
}

impl Queue {
    fn new(model: Model) -> Queue {
        let (units, streams) = match &model {
            Model::Ssd(s) => (
                vec![0; s.parallelism as usize],
                vec![u64::MAX; s.write_streams as usize],
            ),
            _ => (vec![0], Vec::new()),
        };
        Queue {
            model,
            units,
            channel_free: 0,
            head: 0,
            streams,
            next_stream: 0,
            busy_until: 0,
            stats: DeviceStats::default(),
            writeback: false,
        }
    }

    fn count(&mut self, op: Op, len: u64) {
        if self.writeback {
            self.stats.writeback_ops += 1;
            self.stats.writeback_bytes += len;
        }
        match op {
            Op::Read => {
                self.stats.read_ops += 1;
                self.stats.read_bytes += len;
            }
            Op::Write => {
                self.stats.write_ops += 1;
                self.stats.write_bytes += len;
            }
        }
    }

    fn busy(&mut self, start: u64, end: u64) {
        if end > self.busy_until {
            let added = end - start.max(self.busy_until);
            self.stats.busy_ns += added;
            if self.writeback {
                self.stats.writeback_busy_ns += added;
            }
            self.busy_until = end;
        }
    }

    /// SSD: whether a write at `addr` continues one of the recent write streams; either
    /// way the write becomes that stream's (or, replacing the oldest, a new stream's) end.
    fn continues_stream(&mut self, addr: u64, len: u64) -> bool {
        let Model::Ssd(s) = &self.model else {
            return false;
        };
        let gap = s.stream_gap_bytes;
        let found = self
            .streams
            .iter()
            .position(|&e| addr >= e && addr - e <= gap);
        let i = found.unwrap_or(self.next_stream);
        if let Some(end) = self.streams.get_mut(i) {
            *end = addr.saturating_add(len);
            if found.is_none() {
                self.next_stream = (i + 1) % self.streams.len();
            }
        }
        found.is_some()
    }
}

impl Disk for Queue {
    fn head(&self) -> u64 {
        self.head
    }

    fn submit(&mut self, now: u64, op: Op, addr: u64, len: u64) -> u64 {
        self.count(op, len);
        let (unit, free) = self
            .units
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, t)| t)
            .unwrap_or((0, 0));
        let start = now.max(free);
        let continues = op == Op::Write && self.continues_stream(addr, len);
        let end = match &self.model {
            Model::None => return now,
            Model::Hdd(h) => {
                let end = start + h.position_ns(self.head, addr) + h.transfer_ns(len);
                self.head = addr.saturating_add(len);
                end
            }
            Model::Ssd(s) => {
                let overhead = s.overhead_ns(if continues { Op::Read } else { op });
                let ready = start + overhead;
                let xfer = ready.max(self.channel_free);
                self.channel_free = xfer + s.transfer_ns(op, len);
                self.channel_free
            }
        };
        self.units[unit] = end;
        self.busy(start, end);
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(x: &mut u64) -> u64 {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *x >> 11
    }

    #[test]
    fn hdd_random_access_costs_seek_plus_half_rotation() {
        let h = HddModel::st1000nm0011();
        let mut d = Device::new(Model::Hdd(h.clone()));
        let (mut t, mut seed, n) = (0u64, 7u64, 20_000u64);
        for _ in 0..n {
            let addr = (lcg(&mut seed) % (h.capacity_bytes / 4096)) * 4096;
            t = d.submit(t, Op::Read, addr, 4096);
        }
        let mean_ms = t as f64 / n as f64 / 1e6;
        let expect = 8.5 + 30_000.0 / 7200.0 + h.transfer_ns(4096) as f64 / 1e6;
        assert!(
            (mean_ms - expect).abs() < 0.03 * expect,
            "{mean_ms} vs {expect}"
        );
        assert_eq!(d.stats().busy_ns, t);
    }

    #[test]
    fn hdd_sequential_access_runs_at_sustained_rate() {
        let mut d = Device::new(Model::parse("st1000nm0011").unwrap());
        let mut t = 0;
        let len = 1 << 20;
        for i in 0..100u64 {
            t = d.submit(t, Op::Write, i * len, len);
        }
        let mbps = (100 * len) as f64 / (t as f64 / 1e9) / 1e6;
        assert!((mbps - 150.0).abs() < 1.5, "{mbps}");
    }

    #[test]
    fn hdd_short_forward_gap_is_cheaper_than_a_seek() {
        let h = HddModel::st1000nm0011();
        assert!(h.position_ns(0, 64 << 10) < h.position_ns(0, 4 << 20) / 10);
        assert!(
            h.position_ns(64 << 10, 0) > 4_000_000,
            "backward needs a rotation"
        );
        assert!(h.position_ns(0, h.capacity_bytes) > h.position_ns(0, 1 << 30));
    }

    #[test]
    fn ssd_saturated_random_iops_match_the_profile() {
        for (op, iops) in [(Op::Read, 38_500.0), (Op::Write, 2_700.0)] {
            let mut d = Device::new(Model::parse("intel710").unwrap());
            let (n, mut seed) = (10_000u64, 11u64);
            let mut end = 0;
            for _ in 0..n {
                let addr = (lcg(&mut seed) % (1 << 24)) * 4096;
                end = end.max(d.submit(0, op, addr, 4096));
            }
            let got = n as f64 / (end as f64 / 1e9);
            assert!((got - iops).abs() < 0.02 * iops, "{op:?}: {got}");
        }
    }

    #[test]
    fn ssd_large_transfers_are_bandwidth_bound() {
        let mut d = Device::new(Model::parse("intel710").unwrap());
        let mut end = 0;
        for i in 0..200u64 {
            end = end.max(d.submit(0, Op::Read, i << 20, 1 << 20));
        }
        let mbps = (200u64 << 20) as f64 / (end as f64 / 1e9) / 1e6;
        assert!((mbps - 270.0).abs() < 5.0, "{mbps}");
        // One request alone waits for nobody: its latency is overhead plus transfer.
        let mut d = Device::new(Model::parse("intel710").unwrap());
        let s = SsdModel::intel710();
        assert_eq!(
            d.submit(1_000, Op::Read, 0, 4096),
            1_000 + s.overhead_ns(Op::Read) + s.transfer_ns(Op::Read, 4096)
        );
    }

    /// Writes one after another (queue depth 1), `n` streams interleaved block by block;
    /// returns blocks per second.
    fn interleaved_write_rate(spec: &str, n: u64) -> f64 {
        let mut d = Device::new(Model::parse(spec).unwrap());
        let (mut t, blocks) = (0, 40_000u64);
        for i in 0..blocks {
            let (stream, index) = (i % n, i / n);
            t = d.submit(t, Op::Write, (stream << 32) + index * 4096, 4096);
        }
        blocks as f64 / (t as f64 / 1e9)
    }

    #[test]
    fn ssd_write_streams_skip_the_random_write_overhead() {
        let s = SsdModel::intel710();
        let per_op = |op| (s.overhead_ns(op) + s.transfer_ns(Op::Write, 4096)) as f64 / 1e9;
        let (sequential, random) = (1.0 / per_op(Op::Read), 1.0 / per_op(Op::Write));
        for streams in [1, 4, 8] {
            let got = interleaved_write_rate("intel710", streams);
            assert!(
                (got - sequential).abs() < 0.01 * sequential,
                "{streams}: {got}"
            );
        }
        // More streams than the model follows, or none followed: every write is random.
        for spec in ["intel710:write_streams=4", "intel710:write_streams=0"] {
            let got = interleaved_write_rate(spec, 8);
            assert!((got - random).abs() < 0.01 * random, "{spec}: {got}");
        }
        assert!(sequential > 10.0 * random);
    }

    #[test]
    fn ssd_stream_tolerates_a_short_forward_gap_only() {
        let mut d = Device::new(Model::parse("intel710:stream_gap_kib=8").unwrap());
        let s = SsdModel::intel710();
        let cost = |d: &mut Device, t: u64, addr: u64| d.submit(t, Op::Write, addr, 4096) - t;
        let random = s.overhead_ns(Op::Write) + s.transfer_ns(Op::Write, 4096);
        let t = 1 << 40;
        assert_eq!(cost(&mut d, 0, 0), random, "a first write starts no stream");
        assert!(
            cost(&mut d, t, 4096 + 8192) < random,
            "8 KiB gap: continues"
        );
        assert_eq!(cost(&mut d, 2 * t, 16384 + 12288), random, "12 KiB gap");
        assert_eq!(cost(&mut d, 3 * t, 0), random, "backwards");
    }

    #[test]
    fn queueing_and_busy_time() {
        let mut d = Device::new(Model::parse("hdd").unwrap());
        let a = d.submit(0, Op::Read, 1 << 30, 4096);
        let b = d.submit(0, Op::Read, 1 << 35, 4096);
        assert!(b > a, "second request waits for the first");
        let idle_gap = 1_000_000_000;
        let c = d.submit(b + idle_gap, Op::Read, 1 << 30, 4096);
        assert_eq!(d.stats().busy_ns, c - idle_gap);
        assert_eq!(d.stats().read_ops, 3);
        assert_eq!(d.stats().bytes(), 3 * 4096);
    }

    #[test]
    fn none_charges_nothing_but_records() {
        let mut d = Device::new(Model::None);
        assert_eq!(d.submit(5, Op::Write, 0, 100), 5);
        d.record(Op::Read, 10, 100, 300);
        d.record(Op::Read, 10, 200, 400);
        assert_eq!(d.stats().busy_ns, 300);
        assert_eq!(d.stats().ops(), 3);
    }

    #[test]
    fn overrides() {
        let Model::Hdd(h) = Model::parse("hdd:rpm=15000,seek_ms=3.5,capacity_gb=300").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (h.rpm, h.seek_ms, h.capacity_bytes),
            (15000.0, 3.5, 300_000_000_000)
        );
        let Model::Ssd(s) = Model::parse("ssd:parallelism=2,write_iops=1000").unwrap() else {
            panic!()
        };
        assert_eq!((s.parallelism, s.write_iops), (2, 1000.0));
        let Model::Hdd(h) = Model::parse("st1000nm0011:span=70GiB").unwrap() else {
            panic!()
        };
        assert_eq!((h.span(), h.capacity_bytes), (70 << 30, 1_000_000_000_000));
        let Model::Hdd(h) = Model::parse("st1000nm0011").unwrap() else {
            panic!()
        };
        assert_eq!(h.span(), h.capacity_bytes);
        let Model::Hdd(h) = Model::parse("st1000nm0011:pagecache=1TiB").unwrap() else {
            panic!()
        };
        assert_eq!(h.pagecache.map(|p| p.bytes), Some(1 << 40));
        let e = Model::parse("st1000nm0011:pagecache=1T").unwrap_err().0;
        assert!(e.contains("with KiB, MiB, GiB or TiB"), "{e}");
        for bad in [
            "hdd:span=3000GiB",
            "st1000nm0011:capacity_gb=50,span=70GiB",
            "ssd:span=1GiB",
            "hdd:span=1",
            "tape",
            "hdd:rpm",
            "hdd:rpm=-1",
            "hdd:read_iops=5",
            "ssd:rpm=1",
            "hdd:track_to_track_ms=20",
            "ssd:parallelism=0.5",
            "ssd:write_iops=0",
            "ssd:write_streams=-1",
            "hdd:rate_scale=0",
            "hdd:rate_scale=1.5",
            "none:rate_scale=0.1",
        ] {
            assert!(Model::parse(bad).is_err(), "{bad}");
        }
    }

    /// Time to serve `n` accesses of `len` bytes, sequential from 0, or with `slots` =
    /// (unit, count) at random multiples of unit below unit x count.
    fn serve(spec: &str, op: Op, len: u64, n: u64, slots: Option<(u64, u64)>) -> u64 {
        let mut d = Device::new(Model::parse(spec).unwrap());
        let (mut t, mut seed, mut addr) = (0u64, 11u64, 0u64);
        for _ in 0..n {
            if let Some((unit, count)) = slots {
                addr = (lcg(&mut seed) % count) * unit;
            }
            t = d.submit(t, op, addr, len);
            addr += len;
        }
        t
    }

    #[test]
    fn rate_scaled_transfers_take_as_long_as_the_full_size_ones() {
        // A tenth of the bytes at a tenth of the rate: the full-size transfer's time.
        for spec in ["st1000nm0011", "intel710"] {
            for op in [Op::Read, Op::Write] {
                let full = serve(spec, op, 10 << 20, 20, None);
                let scaled = serve(&format!("{spec}:rate_scale=0.1"), op, 1 << 20, 20, None);
                let ratio = scaled as f64 / full as f64;
                assert!((ratio - 1.0).abs() < 0.01, "{spec} {op:?}: {ratio}");
            }
        }
    }

    #[test]
    fn rate_scaling_keeps_the_per_operation_times() {
        // Random accesses: an HDD's seeks and rotation, an SSD's per-operation overhead,
        // are those of the profile; only the transfer of the bytes is slower.
        let Model::Hdd(h) = Model::parse("st1000nm0011:rate_scale=0.1").unwrap() else {
            panic!()
        };
        let full = HddModel::st1000nm0011();
        assert_eq!(h.capacity_bytes, full.capacity_bytes);
        assert_eq!(h.near_gap_bytes, full.near_gap_bytes / 10);
        assert_eq!(
            h.position_ns(0, h.capacity_bytes / 2),
            full.position_ns(0, full.capacity_bytes / 2)
        );
        let Model::Ssd(s) = Model::parse("intel710:rate_scale=0.1").unwrap() else {
            panic!()
        };
        let base = SsdModel::intel710();
        for op in [Op::Read, Op::Write] {
            // Equal to the nanosecond: the two round at different steps.
            assert!(
                s.overhead_ns(op).abs_diff(base.overhead_ns(op)) <= 1,
                "{op:?}"
            );
        }
        let slots = Some((4096, full.capacity_bytes / 4096));
        let scaled = serve("st1000nm0011:rate_scale=0.1", Op::Read, 4096, 2000, slots);
        let unscaled = serve("st1000nm0011", Op::Read, 4096, 2000, slots);
        let extra = 2000.0 * (h.transfer_ns(4096) - full.transfer_ns(4096)) as f64;
        let diff = scaled as f64 - unscaled as f64;
        assert!((diff - extra).abs() < 0.01 * extra, "{diff} vs {extra}");
    }

    #[test]
    fn write_back_is_accounted_apart_from_the_flusher() {
        const S: u64 = 1_000_000_000;
        let mut d = Device::new(Model::parse("st1000nm0011:pagecache=64MiB").unwrap());
        let len = 64 << 10;
        // A writer's pages, dirty until the flusher finds them expired (after 30 s).
        d.access(0, Op::Write, 1, 0, len);
        d.set_writeback(true);
        let start = 40 * S;
        d.access(start, Op::Write, 2, 1 << 30, len);
        let synced = d.fsync(start, 2);
        d.set_writeback(false);
        d.access(synced, Op::Write, 3, 2 << 30, len);
        d.fsync(synced, 3);
        let s = d.stats();
        // Every file's data and two journal commits reached the disk...
        assert_eq!(s.write_bytes, 3 * len + 2 * 4096);
        // ...but only file 2's data and its commit while the write-back was on: the
        // flusher's wake-up at 30 s wrote file 1 outside its account.
        assert_eq!((s.writeback_ops, s.writeback_bytes), (2, len + 4096));
        assert!(s.writeback_busy_ns > 0 && s.writeback_busy_ns < s.busy_ns);
        assert_eq!(s.writeback_busy_ns, synced - start);
    }
}
