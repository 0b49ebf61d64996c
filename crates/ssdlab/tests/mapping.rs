//! Demand-paged mapping (`ftl.mapping = "cached"`) in whole runs: the same data as the full
//! map under random I/O with more NAND traffic, and a hand-worked sequence with exact
//! translation-page counts.

mod common;

use ssdlab::device::{Device, Flags, Request};
use ssdlab::request::Op;
use ssdlab::{JobSpec, SsdConfig};

fn small(extra: &[&str]) -> SsdConfig {
    let ov: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

fn cached(cache: &str) -> SsdConfig {
    small(&[
        "ftl.mapping=\"cached\"",
        &format!("ftl.mapping_cache=\"{cache}\""),
    ])
}

/// Run `job` with the data oracle on, after the config's preconditioning; many reads checked
/// and the FTL's own invariants hold at the end.
fn run_checked(cfg: &SsdConfig, job: &str, seed: u64) -> Device {
    let dev = common::run_checked(cfg, job, seed, true);
    let reads = dev.check().unwrap().reads;
    assert!(reads > 1000, "only {reads} reads were checked");
    dev.backend().page_ftl().unwrap().check().unwrap();
    dev
}

const RANDOM: &str = r#"
name = "mixed"
rw = "randrw"
rwmixread = 50
bs = "4KiB"
iodepth = 32
io_count = 40000
"#;

#[test]
fn cached_mapping_returns_the_same_data_with_more_nand_traffic() {
    let full = run_checked(&small(&[]), RANDOM, 3);
    // 64 KiB: 16 of the 224 translation pages, so most lookups miss.
    let dftl = run_checked(&cached("64KiB"), RANDOM, 3);
    let (f, d) = (
        full.backend().nand().unwrap().fil.counters.clone(),
        dftl.backend().nand().unwrap().fil.counters.clone(),
    );
    let m = &dftl.backend().mapping_cache().unwrap().stats;
    assert!(m.misses > m.hits, "{m:?}");
    assert!(
        m.translation_reads > 10_000 && m.translation_writes > 5_000,
        "{m:?}"
    );
    assert!(
        d.nand_pages_read >= f.nand_pages_read + m.translation_reads / 2,
        "reads: full {} cached {} ({m:?})",
        f.nand_pages_read,
        d.nand_pages_read
    );
    assert!(
        d.nand_pages_written > f.nand_pages_written + m.translation_writes / 4,
        "programs: full {} cached {} ({m:?})",
        f.nand_pages_written,
        d.nand_pages_written
    );
    // The full map knows no translation page.
    assert!(full.backend().mapping_cache().is_none());
}

#[test]
fn a_cache_that_holds_the_whole_map_reads_each_translation_page_once() {
    // 1 MiB holds all 224 translation pages, which preconditioning wrote: each is read once,
    // at its first miss (commands that miss on it while it is read wait for that read, and
    // count as misses too), and nothing is ever pushed out, so nothing is written back.
    let dev = run_checked(&cached("1MiB"), RANDOM, 5);
    let m = &dev.backend().mapping_cache().unwrap().stats;
    assert_eq!(m.translation_reads, 224, "{m:?}");
    assert!(m.misses >= 224 && m.misses < 300, "{m:?}");
    assert_eq!(m.translation_writes, 0, "{m:?}");
    assert_eq!(m.hits + m.misses, 40_000, "one lookup per 4 KiB request");
}

/// One request at a time, each run to completion (so every program has finished before the
/// next request arrives).
fn one_by_one(cfg: &SsdConfig, reqs: &[(Op, u64)]) -> Device {
    let mut dev = Device::new(cfg, 1).unwrap();
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
    dev
}

#[test]
fn hand_worked_translation_page_counts() {
    // small-tlc: 4 KiB map units, 4 B entries, so a translation page holds 1024 entries (units
    // 0-1023 are page 0, 1024-2047 page 1, ...). A 4 KiB cache holds one translation page.
    // On a fresh drive no translation page is on NAND yet.
    let seq = [
        // page 0: miss, never written: in at once, no read; the write makes it dirty.
        (Op::Write, 0),
        // page 1: miss, in at once; page 0 leaves dirty: write #1.
        (Op::Write, 1024),
        // page 0: miss, on NAND now: read #1; page 1 leaves dirty: write #2.
        (Op::Read, 0),
        // page 0: hit.
        (Op::Read, 1),
        // page 2: miss, never written: no read; page 0 leaves clean: no write.
        (Op::Read, 2048),
        // page 2: hit (the unit is unmapped: no NAND read for the data either).
        (Op::Read, 2049),
    ];
    let dftl = one_by_one(&cached("4KiB"), &seq);
    let full = one_by_one(&small(&[]), &seq);
    let m = &dftl.backend().mapping_cache().unwrap().stats;
    assert_eq!(
        (m.hits, m.misses, m.translation_reads, m.translation_writes),
        (2, 4, 1, 2)
    );
    // The full map: two programs and one data read (units 1, 2048 and 2049 were never
    // written). The cached map adds exactly its translation reads and writes.
    let (f, d) = (
        &full.backend().nand().unwrap().fil.counters,
        &dftl.backend().nand().unwrap().fil.counters,
    );
    assert_eq!((f.nand_pages_read, f.nand_pages_written), (1, 2));
    // (A read that finds its page still in the page register from the translation read before
    // it senses nothing: counted apart from the pages sensed.)
    assert_eq!(
        (
            d.nand_pages_read + d.page_register_hits,
            d.nand_pages_written
        ),
        (2, 4)
    );
    // Both maps agree on where the data is.
    assert_eq!(
        dftl.backend().page_ftl().unwrap().lookup(0).is_some(),
        full.backend().page_ftl().unwrap().lookup(0).is_some()
    );
    assert_eq!(
        dftl.backend().page_ftl().unwrap().lookup(1024).is_some(),
        full.backend().page_ftl().unwrap().lookup(1024).is_some()
    );
    // The translation pages written are mapped in the GTD; page 2 was never written.
    assert!(dftl
        .backend()
        .page_ftl()
        .unwrap()
        .translation_location(0)
        .is_some());
    assert!(dftl
        .backend()
        .page_ftl()
        .unwrap()
        .translation_location(1)
        .is_some());
    assert!(dftl
        .backend()
        .page_ftl()
        .unwrap()
        .translation_location(2)
        .is_none());
}

#[test]
fn a_cache_in_host_memory_pays_the_link_for_every_hit() {
    // The same sequence of one request at a time, the cache in the HMB: every hit reads its
    // entry over PCIe (a read request up, 4 B down), so the link is busier and the run longer;
    // the map traffic on NAND is the same.
    let seq: Vec<(Op, u64)> = (0..200).map(|i| (Op::Read, (i * 7919) % 4096)).collect();
    let dram = one_by_one(&cached("8KiB"), &seq);
    let hmb = one_by_one(
        &small(&[
            "ftl.mapping=\"cached\"",
            "ftl.mapping_cache=\"8KiB\"",
            "ftl.mapping_cache_location=\"hmb\"",
        ]),
        &seq,
    );
    let (d, h) = (
        &dram.backend().mapping_cache().unwrap().stats,
        &hmb.backend().mapping_cache().unwrap().stats,
    );
    assert_eq!(d, h);
    assert!(h.hits > 100, "{h:?}");
    let (du, dd) = dram.interface().link_busy();
    let (hu, hd) = hmb.interface().link_busy();
    assert!(
        hu > du && hd > dd,
        "up {du:?} -> {hu:?}, down {dd:?} -> {hd:?}"
    );
    // Each hit waits at least two link latencies (200 ns each way on small-tlc).
    let per_hit_ps = (hmb.now().ps() - dram.now().ps()) / h.hits;
    assert!(per_hit_ps >= 400_000, "{per_hit_ps} ps per hit");
}

#[test]
fn cached_runs_are_deterministic_and_report_their_mapping_figures() {
    let cfg = small(&[
        "ftl.mapping=\"cached\"",
        "ftl.mapping_cache=\"32KiB\"",
        "ftl.mapping_cache_location=\"hmb\"",
    ]);
    let job = JobSpec::from_toml_str(RANDOM, "test job").unwrap();
    let once = || {
        let out = ssdlab::run(&cfg, &job, &common::opts(11), &mut |_, _| true).unwrap();
        common::without_wall(&out.result)
    };
    let (a, b) = (once(), once());
    assert_eq!(a, b);
    let m = &a["ftl"]["mapping"];
    assert_eq!(m["location"], "hmb");
    assert_eq!(m["translation_pages"], 224);
    assert_eq!(m["cache_pages"], 8);
    let (hits, misses) = (m["hits"].as_u64().unwrap(), m["misses"].as_u64().unwrap());
    assert_eq!(hits + misses, 40_000);
    let ratio = m["hit_ratio"].as_f64().unwrap();
    assert!((ratio - hits as f64 / 40_000.0).abs() < 1e-12);
    // The full map writes no `ftl` block at all.
    let full = ssdlab::run(&small(&[]), &job, &common::opts(11), &mut |_, _| true).unwrap();
    assert!(common::without_wall(&full.result).get("ftl").is_none());
}
