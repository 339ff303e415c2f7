//! The page cache and elevator in front of the modelled HDD (and, when asked, the SSD),
//! and time dilation, through the device API the daemon uses.

use dss_engine::device::{Device, HddModel, Model, Op};
use dss_engine::pagecache::{JOURNAL_ADDR, PAGE};

const S: u64 = 1_000_000_000;
const CACHED: &str = "st1000nm0011:pagecache=256MiB";

fn device(spec: &str) -> Device {
    Device::new(Model::parse(spec).unwrap())
}

fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *x >> 11
}

#[test]
fn sequential_small_writes_reach_the_disk_merged() {
    let mut d = device(CACHED);
    let piece = 64 << 10;
    for i in 0..512u64 {
        assert_eq!(d.access(i, Op::Write, 1, i * piece, piece), i, "absorbed");
    }
    assert_eq!(d.stats().write_ops, 0);
    let done = d.fsync(512, 1);
    // 32 MiB in 1 MiB requests, one positioning, then the sustained rate; then the
    // journal commit.
    assert_eq!(d.stats().write_ops, 33);
    assert_eq!(d.stats().write_bytes, (32 << 20) + PAGE);
    let h = HddModel::st1000nm0011();
    let data = 512 + 32 * h.transfer_ns(1 << 20);
    let commit = h.position_ns(32 << 20, JOURNAL_ADDR) + h.transfer_ns(PAGE);
    assert_eq!(done, data + commit, "the head starts at the data");
}

#[test]
fn random_writes_within_the_limit_cost_one_sorted_pass() {
    let h = HddModel::st1000nm0011();
    let mut seed = 3u64;
    let addrs: Vec<u64> = (0..2000)
        .map(|_| (lcg(&mut seed) % (h.capacity_bytes / PAGE)) * PAGE)
        .collect();
    let mut cached = device(CACHED);
    let mut plain = device("st1000nm0011");
    let mut unsorted = 0;
    for &a in &addrs {
        assert_eq!(cached.access(0, Op::Write, 7, a, PAGE), 0);
        unsorted = plain.access(unsorted, Op::Write, 7, a, PAGE);
    }
    let sorted = cached.fsync(0, 7);
    assert_eq!(cached.stats().write_ops, 2001, "2000 pages and a commit");
    // One sweep: each seek is a short hop between neighbours, far below a random seek's
    // average (8.5 ms plus half a rotation), which the plain model pays every time.
    assert!(sorted < unsorted / 2, "{sorted} vs {unsorted}");
    let mut sweep = device("st1000nm0011");
    let mut sorted_addrs = addrs.clone();
    sorted_addrs.sort_unstable();
    let mut t = 0;
    for a in sorted_addrs {
        t = sweep.access(t, Op::Write, 7, a, PAGE);
    }
    t = sweep.access(t, Op::Write, 7, JOURNAL_ADDR, PAGE);
    assert_eq!(sorted, t, "exactly the cost of the sorted sequence");
}

#[test]
fn a_writer_over_the_dirty_limit_pays_for_the_write_back_it_forces() {
    // 4 MiB of memory (1024 pages): throttled past 20% (204 pages), back to 10% (102).
    let mut d = device("st1000nm0011:pagecache=4MiB");
    let mut throttled = None;
    for i in 0..1024u64 {
        let done = d.access(0, Op::Write, 1, i * PAGE, PAGE);
        if done > 0 {
            throttled = Some((i, done));
            break;
        }
    }
    let (i, done) = throttled.expect("a writer is throttled");
    assert_eq!(i, 204, "the 205th dirty page passes the limit");
    let pc = d.pagecache().unwrap();
    assert_eq!(pc.dirty_bytes(), 102 * PAGE);
    assert_eq!(d.stats().write_bytes, (205 - 102) * PAGE);
    let h = HddModel::st1000nm0011();
    assert!(done >= h.transfer_ns((205 - 102) * PAGE));
}

#[test]
fn fsync_writes_back_exactly_the_files_dirty_pages() {
    let mut d = device(CACHED);
    for i in 0..10 {
        d.access(0, Op::Write, 1, (1 << 30) + i * PAGE, PAGE);
    }
    for i in 0..7 {
        d.access(0, Op::Write, 2, (5 << 30) + i * PAGE, PAGE);
    }
    let done = d.fsync(0, 1);
    assert!(done > 0);
    assert_eq!(d.stats().write_bytes, 11 * PAGE, "ten pages and a commit");
    assert_eq!(d.stats().write_ops, 2, "adjacent pages in one request");
    assert_eq!(d.pagecache().unwrap().dirty_bytes(), 7 * PAGE);
    assert_eq!(d.fsync(done, 1), done, "nothing left to write");
    assert_eq!(d.stats().write_bytes, 11 * PAGE);
}

#[test]
fn reads_of_written_data_cost_nothing_and_cold_reads_pay_seeks() {
    let mut d = device(CACHED);
    d.access(0, Op::Write, 1, 1 << 30, 1 << 20);
    assert_eq!(
        d.access(10, Op::Read, 1, 1 << 30, 1 << 20),
        10,
        "dirty pages"
    );
    let synced = d.fsync(20, 1);
    assert_eq!(
        d.access(synced, Op::Read, 1, 1 << 30, 1 << 20),
        synced,
        "clean pages stay cached"
    );
    assert_eq!(d.stats().read_ops, 0);
    let h = HddModel::st1000nm0011();
    let cold = d.access(synced, Op::Read, 2, 600 << 30, PAGE) - synced;
    // A seek from the journal, where the fsync left the head.
    let seek = h.position_ns(JOURNAL_ADDR + PAGE, 600 << 30);
    assert_eq!(cold, seek + h.transfer_ns(PAGE));
    assert_eq!(d.stats().read_ops, 1);
    // Read once, cached: the second read is free.
    assert_eq!(
        d.access(synced + cold, Op::Read, 2, 600 << 30, PAGE),
        synced + cold
    );
}

#[test]
fn a_dropped_range_is_read_from_the_disk_again_and_dirty_pages_stay() {
    let mut d = device(CACHED);
    d.access(0, Op::Write, 1, 1 << 30, 1 << 20);
    let synced = d.fsync(0, 1);
    // Dirty pages of another file in the same call's range are left alone.
    d.access(synced, Op::Write, 2, (1 << 30) + (1 << 20), PAGE);
    d.drop_range((1 << 30) + (512 << 10), 1 << 20);
    assert_eq!(d.pagecache().unwrap().dirty_bytes(), PAGE);
    assert_eq!(
        d.access(synced, Op::Read, 1, 1 << 30, 512 << 10),
        synced,
        "the first half was not dropped"
    );
    assert_eq!(d.stats().read_ops, 0);
    let done = d.access(synced, Op::Read, 1, (1 << 30) + (512 << 10), 512 << 10);
    assert!(done > synced, "the dropped half pays the disk");
    assert_eq!(d.stats().read_ops, 1);
    assert_eq!(d.stats().read_bytes, 512 << 10);
    assert_eq!(
        d.access(done, Op::Read, 2, (1 << 30) + (1 << 20), PAGE),
        done,
        "the dirty page is still cached"
    );
}

#[test]
fn a_cache_that_keeps_no_clean_data_still_merges_writes_but_caches_no_reads() {
    let mut d = device(CACHED);
    d.set_keeps_clean_data(false);
    let piece = 64 << 10;
    for i in 0..16u64 {
        assert_eq!(d.access(0, Op::Write, 1, i * piece, piece), 0, "absorbed");
    }
    assert_eq!(
        d.access(0, Op::Read, 1, 0, piece),
        0,
        "dirty pages are read from memory"
    );
    let synced = d.fsync(0, 1);
    assert_eq!(
        d.stats().write_ops,
        2,
        "1 MiB in one request, then the commit"
    );
    assert_eq!(
        d.pagecache().unwrap().cached_bytes(),
        0,
        "dropped once clean"
    );
    let first = d.access(synced, Op::Read, 1, 0, 1 << 20);
    assert!(first > synced);
    let second = d.access(first, Op::Read, 1, 0, 1 << 20);
    assert!(second > first, "a read leaves nothing cached");
    assert_eq!(d.stats().read_ops, 2);
    // Metadata pseudo-blocks (of no file) are still cached once read.
    let meta = d.submit(second, Op::Read, 5 << 30, PAGE);
    assert!(meta > second);
    assert_eq!(d.submit(meta, Op::Read, 5 << 30, PAGE), meta);
}

#[test]
fn clean_pages_beyond_the_cache_size_are_dropped_oldest_first() {
    let mut d = device("st1000nm0011:pagecache=1MiB");
    let mut t = 0;
    for i in 0..512u64 {
        t = d.access(t, Op::Read, 1, i * PAGE, PAGE);
    }
    assert_eq!(d.pagecache().unwrap().cached_bytes(), 1 << 20);
    let ops = d.stats().read_ops;
    t = d.access(t, Op::Read, 1, 511 * PAGE, PAGE);
    assert_eq!(d.stats().read_ops, ops, "recent page still cached");
    d.access(t, Op::Read, 1, 0, PAGE);
    assert_eq!(d.stats().read_ops, ops + 1, "oldest page dropped");
}

#[test]
fn expired_pages_are_written_back_at_the_flushers_wake_up() {
    let mut d = device("st1000nm0011:pagecache=256MiB,expire=30s,writeback=5s");
    d.access(0, Op::Write, 1, 0, PAGE);
    d.access(S, Op::Write, 1, 1 << 30, PAGE);
    d.advance(30 * S - 1);
    assert_eq!(d.stats().write_ops, 0, "nothing has expired yet");
    d.advance(30 * S);
    assert_eq!(d.stats().write_ops, 1, "the first page, at 30 s");
    d.advance(35 * S - 1);
    assert_eq!(
        d.stats().write_ops,
        1,
        "the second expires at 31 s, written at 35 s"
    );
    d.advance(35 * S);
    assert_eq!(d.stats().write_ops, 2);
    assert_eq!(d.pagecache().unwrap().dirty_bytes(), 0);
    // The write-back occupied the disk from 35 s: a read arriving then waits for it.
    let h = HddModel::st1000nm0011();
    let read = d.access(35 * S, Op::Read, 2, 3 << 30, PAGE);
    assert!(read - 35 * S > h.position_ns(0, 3 << 30));
}

#[test]
fn background_write_back_starts_above_the_background_ratio() {
    // 10% of 8 MiB is 204 pages: a wake-up writes back down to it without waiting for
    // the pages to expire.
    let mut d = device("st1000nm0011:pagecache=8MiB");
    for i in 0..300u64 {
        assert_eq!(d.access(0, Op::Write, 1, i * PAGE, PAGE), 0);
    }
    d.advance(5 * S);
    assert_eq!(d.pagecache().unwrap().dirty_bytes(), 204 * PAGE);
    assert_eq!(d.stats().write_bytes, 96 * PAGE);
}

/// A mixed sequence of reads, writes, fsyncs and idle gaps, `k` times slower; returns
/// every completion and the busy time.
fn run(spec: &str, k: u64) -> (Vec<u64>, u64) {
    let mut d = device(spec);
    let (mut t, mut seed, mut out) = (0u64, 5u64, Vec::new());
    for i in 0..3000u64 {
        let r = lcg(&mut seed);
        let addr = (r % (1 << 28)) * PAGE;
        let file = r % 5;
        t += (r % 3) * 7_000_000 + if i % 500 == 0 { 40 * S } else { 0 };
        let done = match r % 7 {
            0 => d.fsync(t * k, file),
            1 | 2 => d.access(t * k, Op::Read, file, addr, PAGE * (1 + r % 16)),
            _ => d.access(t * k, Op::Write, file, addr, PAGE * (1 + r % 16)),
        };
        out.push(done);
        if i % 2 == 0 {
            t = done / k;
        }
    }
    (out, d.stats().busy_ns)
}

#[test]
fn dilation_stretches_every_charge_and_interval_by_its_factor() {
    for spec in [
        "st1000nm0011",
        "st1000nm0011:pagecache=2MiB,expire=3s,writeback=1s",
        "intel710",
        "intel710:pagecache=2MiB,expire=3s,writeback=1s",
    ] {
        let (one, busy_one) = run(spec, 1);
        let (four, busy_four) = run(&format!("{spec}{}dilation=4", sep(spec)), 4);
        assert!(busy_one > 0);
        assert_eq!(busy_four, 4 * busy_one, "{spec}");
        let times_four: Vec<u64> = one.iter().map(|t| 4 * t).collect();
        assert_eq!(four, times_four, "{spec}");
    }
}

fn sep(spec: &str) -> &'static str {
    if spec.contains(':') { "," } else { ":" }
}

#[test]
fn profile_strings() {
    let Model::Hdd(h) = Model::parse(
        "st1000nm0011:pagecache=64MiB,dirty_ratio=0.4,background_ratio=0.2,expire=500ms,\
         writeback=2s,dilation=3",
    )
    .unwrap() else {
        panic!()
    };
    let pc = h.pagecache.unwrap();
    assert_eq!(
        (
            pc.bytes,
            pc.dirty_ratio,
            pc.background_ratio,
            pc.expire_ns,
            pc.writeback_ns
        ),
        (64 << 20, 0.4, 0.2, 500_000_000, 2 * S)
    );
    assert_eq!(h.dilation, 3);
    assert_eq!(Model::parse("st1000nm0011").unwrap().dilation(), 1);
    assert!(HddModel::st1000nm0011().pagecache.is_none());
    assert_eq!(Model::parse("intel710:dilation=8").unwrap().dilation(), 8);
    for (bad, says) in [
        ("st1000nm0011:pagecache=lots", "need a size"),
        ("st1000nm0011:pagecache=256M", "need a size"),
        ("st1000nm0011:pagecache=0", "need a size"),
        ("st1000nm0011:expire=30s", "needs pagecache=SIZE"),
        ("st1000nm0011:pagecache=1GiB,expire=30", "need a time"),
        ("st1000nm0011:pagecache=1GiB,writeback=-1s", "need a time"),
        ("st1000nm0011:pagecache=1GiB,dirty_ratio=1.5", "in (0, 1]"),
        (
            "st1000nm0011:pagecache=1GiB,dirty_ratio=0.05",
            "background_ratio exceeds",
        ),
        ("st1000nm0011:pagecache", "not key=value"),
        ("st1000nm0011:dilation=0", "whole number"),
        ("st1000nm0011:dilation=2.5", "whole number"),
        ("intel710:expire=1s", "needs pagecache=SIZE"),
        ("none:dilation=2", "no parameter \"dilation\""),
        ("st1000nm0011:cache=1GiB", "no parameter \"cache\""),
    ] {
        let e = Model::parse(bad).expect_err(bad).to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn dropping_the_caches_writes_dirty_pages_back_then_every_read_pays_the_disk() {
    let mut d = device(CACHED);
    d.access(0, Op::Write, 1, 1 << 30, 1 << 20);
    d.access(0, Op::Write, 2, 2 << 30, 64 << 10);
    let read_back = d.access(1, Op::Read, 1, 1 << 30, 1 << 20);
    assert_eq!(read_back, 1, "cached before");
    let done = d.drop_caches(10);
    let s = d.stats();
    assert_eq!(
        s.write_bytes,
        (1 << 20) + (64 << 10),
        "both files' pages written back"
    );
    assert_eq!(s.write_ops, 2, "one run per file, in one sweep");
    assert!(done > 10);
    assert_eq!(d.pagecache().unwrap().cached_bytes(), 0);
    let again = d.access(done, Op::Read, 1, 1 << 30, 1 << 20);
    assert!(again > done, "the read reaches the disk");
    assert_eq!(d.stats().read_ops, 1);
    // Nothing dirty and nothing cached: a second drop costs nothing but empties it again.
    let t = again + 1;
    assert_eq!(d.drop_caches(t), t);
    assert!(d.access(t, Op::Read, 1, 1 << 30, 1 << 20) > t);
    // Without a page cache there is nothing to drop.
    let mut plain = device("st1000nm0011");
    assert_eq!(plain.drop_caches(5), 5);
}

#[test]
fn an_ssd_behind_a_page_cache_holds_writes_until_fsync_or_the_flusher() {
    let Model::Ssd(s) = Model::parse("intel710:pagecache=64MiB,expire=2s").unwrap() else {
        panic!()
    };
    assert_eq!(s.pagecache.as_ref().unwrap().bytes, 64 << 20);
    let mut cached = device("intel710:pagecache=64MiB,expire=2s");
    let mut plain = device("intel710");
    // A file's 16 scattered pages, and 100 pages of metadata no fsync names.
    let mut seed = 9u64;
    let mut plain_done = 0;
    for i in 0..116u64 {
        let (file, addr) = if i < 16 {
            (3, (lcg(&mut seed) % (1 << 20)) * PAGE)
        } else {
            (u64::MAX, (1 << 32) + i * 64 * PAGE)
        };
        assert_eq!(cached.access(0, Op::Write, file, addr, PAGE), 0, "absorbed");
        plain_done = plain_done.max(plain.access(0, Op::Write, file, addr, PAGE));
    }
    assert_eq!(cached.stats().write_ops, 0);
    assert_eq!(plain.stats().write_ops, 116);
    let synced = cached.fsync(0, 3);
    // The file's pages and a journal commit reach the flash; the metadata waits.
    assert_eq!(cached.stats().write_ops, 17);
    assert!(
        synced > 0 && synced < plain_done,
        "{synced} vs {plain_done}"
    );
    assert_eq!(cached.pagecache().unwrap().dirty_bytes(), 100 * PAGE);
    // Past the expiry, the flusher's next wake-up writes the metadata in one sweep.
    cached.advance(10 * S);
    assert_eq!(cached.stats().write_ops, 117);
    assert_eq!(cached.pagecache().unwrap().dirty_bytes(), 0);
    // A read of a written page costs nothing; a cold one reaches the flash.
    assert_eq!(
        cached.access(11 * S, Op::Read, 3, (1 << 32) + 16 * 64 * PAGE, PAGE),
        11 * S
    );
    assert!(cached.access(11 * S, Op::Read, 4, 1 << 40, PAGE) > 11 * S);
}
