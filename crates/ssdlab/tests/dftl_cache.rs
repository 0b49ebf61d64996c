//! The cached map (`ftl.mapping = "cached"`, DFTL) beside the DRAM cache buffer (`[cache]`):
//! the DRAM's share of each, reads that hit the buffer without translation, flushes that pay
//! for their translation pages; a hand-worked sequence with exact counts, a model of both
//! caches, the data oracle and determinism.

mod common;

use proptest::prelude::*;
use ssdlab::device::{Device, Flags, Request};
use ssdlab::request::Op;
use ssdlab::{JobSpec, SsdConfig};

/// small-tlc (4 KiB map units, 4 B entries: 1024 entries per translation page) with a cached
/// map of `map_pages` translation pages and a write-back LRU buffer of `lines` data lines, no
/// background flushing and no read allocation, so that every count follows from the order of
/// requests alone.
fn pair(lines: u64, map_pages: u64, location: &str, extra: &[&str]) -> SsdConfig {
    let dram_pages = if location == "dram" {
        lines + map_pages
    } else {
        lines
    };
    let mut ov: Vec<String> = vec![
        "ftl.mapping=\"cached\"".into(),
        format!("ftl.mapping_cache=\"{}KiB\"", map_pages * 4),
        format!("ftl.mapping_cache_location=\"{location}\""),
        format!("cache.capacity=\"{}KiB\"", dram_pages * 4),
        "cache.mode=\"write-back\"".into(),
        "cache.replacement=\"lru\"".into(),
        "cache.read_allocate=false".into(),
        "cache.flush_high_watermark=0.0".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

/// One 4 KiB request at a time, each run to completion, with the data oracle on.
fn one_by_one(cfg: &SsdConfig, reqs: &[(Op, u64)]) -> Device {
    let mut dev = Device::new(cfg, 1).unwrap();
    dev.enable_check();
    for &(op, lpn) in reqs {
        let now = dev.now();
        let r = Request {
            op,
            offset: lpn * 4096,
            len: 4096,
            queue: 0,
            flags: Flags::NONE,
            arrival: now,
        };
        dev.submit(now, r).unwrap();
        let done = dev.run_to_idle().unwrap();
        assert_eq!(done.len(), 1);
    }
    let dc = dev.check().unwrap();
    assert!(dc.first_error.is_none(), "{:?}", dc.first_error);
    dev
}

/// (mapping hits, misses, translation reads, translation writes).
fn map_counts(dev: &Device) -> (u64, u64, u64, u64) {
    let m = &dev.backend().mapping_cache().unwrap().stats;
    (m.hits, m.misses, m.translation_reads, m.translation_writes)
}

/// (buffer read hits, read misses, write hits, write misses, on-demand flushes).
fn buffer_counts(dev: &Device) -> (u64, u64, u64, u64, u64) {
    let s = dev.cache().unwrap().stats();
    (
        s.read_hits,
        s.read_misses,
        s.write_hits,
        s.write_misses,
        s.flushes[0],
    )
}

const SEQ: [(Op, u64); 8] = [
    (Op::Write, 0),
    (Op::Write, 1024),
    (Op::Read, 0),
    (Op::Write, 2048),
    (Op::Write, 3072),
    (Op::Read, 1025),
    (Op::Read, 1024),
    (Op::Read, 2048),
];

#[test]
fn hand_worked_counts_with_the_translation_pages_in_the_buffer_dram() {
    // 12 KiB of DRAM: one translation page (4 KiB) and two data lines. Units 0-1023 have
    // their entries in translation page 0, 1024-2047 in page 1, and so on; the drive is fresh,
    // so no translation page is on NAND until one is written back.
    let cfg = pair(2, 1, "dram", &[]);
    let dev = one_by_one(&cfg, &SEQ);
    // W 0, W 1024: into free lines; whole units of a write-back write need no translation.
    // R 0: a buffer hit: no translation either.
    // W 2048: the buffer is full; the LRU line (1024, dirty) is flushed on demand. Its flush
    //   looks up page 1: miss #1, never written, so in at once without a read; the flush maps
    //   unit 1024 (page 1 dirty) and programs it (data program #1); 2048 takes the line.
    // W 3072: the LRU line (0, dirty) is flushed: page 0 misses (#2), in at once; page 1 leaves
    //   the one-page mapping cache dirty: translation write #1. Data program #2.
    // R 1025: a buffer miss: page 1 misses (#3), on NAND now: translation read #1; page 0
    //   leaves dirty: translation write #2. Unit 1025 was never written: no data read.
    // R 1024: a buffer miss (its line was evicted by its flush): page 1 hits (#1); the data
    //   is read from NAND (data read #1). No line is clean: nothing is allocated.
    // R 2048: a buffer hit: no translation.
    assert_eq!(map_counts(&dev), (1, 3, 1, 2));
    assert_eq!(buffer_counts(&dev), (2, 2, 0, 4, 2));
    let f = &dev.backend().nand().unwrap().fil.counters;
    // Data: 2 programs and 1 read; translation pages: 2 programs and 1 read. (A read that
    // finds its page still in the page register senses nothing: counted apart.)
    assert_eq!(
        (
            f.nand_pages_read + f.page_register_hits,
            f.nand_pages_written
        ),
        (2, 4)
    );
    // The DRAM's share, in the result.
    let r = dev.cache().unwrap().result(1.0);
    assert_eq!(
        (
            r.dram_bytes,
            r.data_bytes,
            r.translation_bytes,
            r.reserved_bytes
        ),
        (12 << 10, 8 << 10, 4 << 10, 0)
    );
    assert_eq!(r.lines, 2);
    assert_eq!(
        r.dirty_lines_at_end, 2,
        "2048 and 3072 are still only in DRAM"
    );
}

#[test]
fn hand_worked_counts_with_the_translation_pages_in_host_memory() {
    // The same 8 requests with the mapping cache in the NVMe Host Memory Buffer: the buffer
    // keeps its whole DRAM, three lines of 4 KiB.
    let cfg = pair(3, 1, "hmb", &[]);
    let dev = one_by_one(&cfg, &SEQ);
    // W 0, W 1024, W 2048: free lines. R 0: a buffer hit.
    // W 3072: the LRU line (1024) is flushed: page 1 misses (#1), in at once.
    // R 1025: a buffer miss, page 1 hits (#1; its entry crosses the link), never written.
    // R 1024: a buffer miss, page 1 hits (#2); data read #1.
    // R 2048: a buffer hit.
    assert_eq!(map_counts(&dev), (2, 1, 0, 0));
    assert_eq!(buffer_counts(&dev), (2, 2, 0, 4, 1));
    let r = dev.cache().unwrap().result(1.0);
    assert_eq!(
        (r.dram_bytes, r.data_bytes, r.translation_bytes, r.lines),
        (12 << 10, 12 << 10, 0, 3)
    );
}

#[test]
fn reads_that_hit_the_buffer_look_up_no_translation_page() {
    // Write 16 units into a buffer of 32 lines, then read them back twice: every read hits
    // the buffer, and the mapping cache is never asked.
    let cfg = pair(32, 1, "dram", &[]);
    let mut seq: Vec<(Op, u64)> = (0..16).map(|i| (Op::Write, i * 1024)).collect();
    seq.extend((0..32).map(|i| (Op::Read, (i % 16) * 1024)));
    let dev = one_by_one(&cfg, &seq);
    assert_eq!(map_counts(&dev), (0, 0, 0, 0));
    assert_eq!(buffer_counts(&dev), (32, 0, 0, 16, 0));
}

#[test]
fn write_through_writes_look_up_every_unit_and_reads_that_hit_none() {
    // Write-through: each write changes its entry at once, in the buffer or not; the read
    // that follows hits the buffer's clean copy (kept with read allocation) and looks nothing
    // up.
    let cfg = pair(
        4,
        1,
        "dram",
        &["cache.mode=\"write-through\"", "cache.read_allocate=true"],
    );
    let dev = one_by_one(&cfg, &[(Op::Write, 0), (Op::Write, 0), (Op::Read, 0)]);
    // W 0: page 0 misses (never written: in at once). W 0: page 0 hits. R 0: buffer hit.
    assert_eq!(map_counts(&dev), (1, 1, 0, 0));
    assert_eq!(buffer_counts(&dev).0, 1);
}

#[test]
fn a_mapping_cache_that_leaves_no_room_for_two_lines_is_refused() {
    let ov: Vec<String> = [
        "ftl.mapping=\"cached\"",
        "ftl.mapping_cache=\"12KiB\"",
        "cache.capacity=\"16KiB\"",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let e = SsdConfig::resolve("small-tlc", &ov)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`ftl.mapping_cache`") && e.contains("got 12KiB") && e.contains("two"),
        "{e}"
    );
    assert!(!e.trim_end().contains('\n'), "{e}");
}

/// The model: both caches as plain lists in recency order (most recent first) with dirty
/// flags, and the translation pages on NAND. Requests one at a time, so every flush and
/// program has finished before the next request.
#[derive(Default)]
struct Model {
    lines: Vec<(u64, bool)>,
    pages: Vec<(u64, bool)>,
    on_nand: std::collections::HashSet<u64>,
    map: (u64, u64, u64, u64),
    buffer: (u64, u64, u64, u64, u64),
}

impl Model {
    /// A lookup of translation page `page` in a cache of `cap` pages; `dirty` when the caller
    /// changes an entry of it (a flush).
    fn lookup(&mut self, page: u64, cap: usize, dirty: bool) {
        if let Some(i) = self.pages.iter().position(|p| p.0 == page) {
            self.map.0 += 1;
            let mut p = self.pages.remove(i);
            p.1 |= dirty;
            self.pages.insert(0, p);
            return;
        }
        self.map.1 += 1;
        if self.on_nand.contains(&page) {
            self.map.2 += 1;
        }
        self.pages.insert(0, (page, dirty));
        while self.pages.len() > cap {
            let (p, d) = self.pages.pop().unwrap();
            if d {
                self.map.3 += 1;
                self.on_nand.insert(p);
            }
        }
    }

    fn step(&mut self, op: Op, lpn: u64, lines: usize, cap: usize) {
        let hit = self.lines.iter().position(|l| l.0 == lpn);
        match op {
            Op::Read => match hit {
                Some(i) => {
                    self.buffer.0 += 1;
                    let l = self.lines.remove(i);
                    self.lines.insert(0, l);
                }
                None => {
                    self.buffer.1 += 1;
                    self.lookup(lpn / 1024, cap, false);
                }
            },
            _ => match hit {
                Some(i) => {
                    self.buffer.2 += 1;
                    self.lines.remove(i);
                    self.lines.insert(0, (lpn, true));
                }
                None => {
                    self.buffer.3 += 1;
                    if self.lines.len() == lines {
                        let (victim, dirty) = self.lines.pop().unwrap();
                        if dirty {
                            self.buffer.4 += 1;
                            self.lookup(victim / 1024, cap, true);
                        }
                    }
                    self.lines.insert(0, (lpn, true));
                }
            },
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Every count of both caches against the model, over reads and writes of a few units in
    /// each of five translation pages.
    #[test]
    fn both_caches_count_as_the_model_says(
        ops in prop::collection::vec((any::<bool>(), 0u64..5, 0u64..4), 1..80),
        lines in 2u64..5,
        map_pages in 1u64..4,
    ) {
        let seq: Vec<(Op, u64)> = ops
            .iter()
            .map(|&(w, page, off)| (if w { Op::Write } else { Op::Read }, page * 1024 + off))
            .collect();
        let dev = one_by_one(&pair(lines, map_pages, "dram", &[]), &seq);
        let mut m = Model::default();
        for &(op, lpn) in &seq {
            m.step(op, lpn, lines as usize, map_pages as usize);
        }
        prop_assert_eq!(map_counts(&dev), m.map);
        prop_assert_eq!(buffer_counts(&dev), m.buffer);
    }

    /// Reads always find the latest data with both caches, under every replacement policy,
    /// write mode and port mode, background flushing on and off, read allocation on and off,
    /// the mapping cache in DRAM or in host memory, partial and multi-unit requests, on a fresh
    /// drive and on a full one (translation pages on NAND, GC moving data and translation
    /// pages).
    #[test]
    fn reads_always_find_the_latest_data(
        replacement in prop_oneof![Just("lru"), Just("clock"), Just("fifo")],
        mode in prop_oneof![Just("write-back"), Just("write-through")],
        ports in prop_oneof![Just("single"), Just("dual")],
        background in any::<bool>(),
        read_allocate in any::<bool>(),
        location in prop_oneof![Just("dram"), Just("hmb")],
        precondition in any::<bool>(),
        seed in 0u64..1000,
        bs in prop_oneof![Just("4KiB"), Just("2KiB"), Just("16KiB"), Just("64KiB")],
    ) {
        let hw = if background { "0.5" } else { "0.0" };
        let cfg = pair(48, 4, location, &[
            &format!("cache.replacement=\"{replacement}\""),
            &format!("cache.mode=\"{mode}\""),
            &format!("cache.ports=\"{ports}\""),
            &format!("cache.flush_high_watermark={hw}"),
            "cache.flush_low_watermark=0.25",
            &format!("cache.read_allocate={read_allocate}"),
        ]);
        // Reads and writes collide often over 8 MiB: 2048 units in two translation pages.
        let job = format!("rw = \"randrw\"\nrwmixread = 50\nbs = \"{bs}\"\niodepth = 8\nsize = \"8MiB\"\nio_count = 1500");
        let dev = common::run_checked(&cfg, &job, seed, precondition);
        dev.backend().page_ftl().unwrap().check().unwrap();
    }
}

#[test]
fn a_full_drive_under_random_io_keeps_its_data_and_pays_for_translation() {
    // Preconditioned (every translation page on NAND), a 64 KiB mapping cache (16 of 224
    // pages) beside 256 KiB of lines: the buffer's flushes miss on translation pages and read
    // them, dirty pages are written back.
    let cfg = pair(64, 16, "dram", &["cache.flush_high_watermark=0.5"]);
    let job = "rw = \"randrw\"\nrwmixread = 50\nbs = \"4KiB\"\niodepth = 32\nio_count = 20000";
    let dev = common::run_checked(&cfg, job, 7, true);
    dev.backend().page_ftl().unwrap().check().unwrap();
    let (hits, misses, reads, writes) = map_counts(&dev);
    assert!(
        misses > hits && reads > 5_000 && writes > 2_000,
        "{hits} {misses} {reads} {writes}"
    );
    let s = dev.cache().unwrap().stats();
    // Lookups: one per read that missed the buffer (4 KiB: one page each), one per flush. A
    // read that waited for its translation page may find its unit written into the buffer
    // meanwhile, and count as a buffer hit after its lookup: at most a few such.
    let flushes: u64 = s.flushes.iter().sum();
    let lookups = hits + misses;
    assert!(
        lookups >= s.read_misses + flushes && lookups - (s.read_misses + flushes) <= 8,
        "{lookups} lookups, {} read misses, {flushes} flushes",
        s.read_misses
    );
}

#[test]
fn runs_of_the_pair_are_deterministic_and_report_both_caches() {
    let cfg = pair(64, 8, "dram", &["cache.flush_high_watermark=0.5"]);
    let job = JobSpec::from_toml_str(
        "rw = \"randrw\"\nrwmixread = 50\nbs = \"4KiB\"\niodepth = 32\nio_count = 20000",
        "test job",
    )
    .unwrap();
    let once = || {
        let out = ssdlab::run(&cfg, &job, &common::opts(3), &mut |_, _| true).unwrap();
        common::without_wall(&out.result)
    };
    let (a, b) = (once(), once());
    assert_eq!(a, b);
    let c = &a["cache"];
    assert_eq!(c["dram_bytes"], 288 << 10);
    assert_eq!(c["data_bytes"], 256 << 10);
    assert_eq!(c["translation_bytes"], 32 << 10);
    assert_eq!(c["lines"], 64);
    let m = &a["ftl"]["mapping"];
    assert_eq!(m["cache_pages"], 8);
    assert!(m["misses"].as_u64().unwrap() > 0);
}
