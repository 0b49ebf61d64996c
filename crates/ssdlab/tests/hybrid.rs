//! The block-mapped FTLs (block, BAST, FAST) in whole runs: the data oracle under random
//! writes, and a full merge timed by the media against seed 003's merge times.

mod common;

use proptest::prelude::*;
use ssdlab::device::{Completion, Device, Driver, Flags, Request};
use ssdlab::request::Op;
use ssdlab::sim::SimTime;
use ssdlab::{JobSpec, SsdConfig};

/// small-tlc with a block-mapped FTL over 16 KiB pages and half its space hidden.
fn small(kind: &str, logs: Option<u32>) -> SsdConfig {
    let mut ov: Vec<String> = vec![
        format!("ftl.kind=\"{kind}\""),
        "ftl.map_unit=\"16KiB\"".into(),
        "ftl.over_provisioning=0.5".into(),
        "precondition.fill=\"none\"".into(),
        "precondition.random_overwrite=0.0".into(),
    ];
    if let Some(n) = logs {
        ov.push(format!("ftl.log_blocks={n}"));
    }
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Reads find the latest data under random reads and writes (partial pages too, which
    /// read before they write), while merges move it, for every block-mapped FTL.
    #[test]
    fn reads_always_find_the_latest_data(
        kind in prop_oneof![Just(("block", None)), Just(("bast", Some(2))), Just(("fast", Some(3)))],
        seed in 0u64..1000,
        bs in prop_oneof![Just("16KiB"), Just("8KiB"), Just("64KiB")],
    ) {
        let cfg = small(kind.0, kind.1);
        // A small region, so that merges come often.
        let job = format!("rw = \"randrw\"\nrwmixread = 40\nbs = \"{bs}\"\niodepth = 8\nsize = \"4MiB\"\nio_count = 1200");
        let dev = common::run_checked(&cfg, &job, seed, false);
        let m = &dev.backend().block_mapped().unwrap().ftl.counts;
        prop_assert!(m.full + m.partial + m.switch > 0, "no merge: {:?}", m);
    }
}

/// Writes pages one at a time (queue depth 1) and keeps each latency.
struct OneByOne {
    offsets: Vec<u64>,
    page: u64,
    next: usize,
    latency: Vec<SimTime>,
}

impl OneByOne {
    fn issue(&mut self, dev: &mut Device, now: SimTime) {
        if let Some(&offset) = self.offsets.get(self.next) {
            let r = Request {
                op: Op::Write,
                offset,
                len: self.page,
                queue: 0,
                flags: Flags::NONE,
                arrival: now,
            };
            dev.submit(now, r).unwrap();
            self.next += 1;
        }
    }
}

impl Driver for OneByOne {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        self.latency.push(done.done - done.arrival);
        self.issue(dev, now);
    }
}

/// Fill logical block 0 in place, write its pages again (`reverse`: last to first, so they
/// fill its log out of order; else in order), then write page 0 once more: its log is full, so
/// a merge comes before the write (reversed: full, every page copied and the data and log
/// blocks erased; in order: a switch, one erase). Returns the last write's latency less the
/// one before it (a plain log write), the merge's cost, and the device.
fn merge_cost(preset: &str, reverse: bool) -> (SimTime, Device) {
    let cfg = SsdConfig::resolve(preset, &[]).unwrap();
    let page = cfg.nand.page_size.0;
    let ppb = cfg.nand.pages_per_block as u64;
    let mut offsets: Vec<u64> = (0..ppb).map(|p| p * page).collect();
    if reverse {
        offsets.extend((0..ppb).rev().map(|p| p * page));
    } else {
        offsets.extend((0..ppb).map(|p| p * page));
    }
    offsets.push(0);
    let mut dev = Device::new(&cfg, 1).unwrap();
    let mut drv = OneByOne {
        offsets,
        page,
        next: 0,
        latency: Vec::new(),
    };
    drv.issue(&mut dev, SimTime::ZERO);
    dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap();
    let n = drv.latency.len();
    assert_eq!(n as u64, 2 * ppb + 1);
    (drv.latency[n - 1] - drv.latency[n - 2], dev)
}

#[test]
fn a_full_merge_costs_seed_003s_merge_time_on_its_presets() {
    // Each copy: tR, the page out (tTrans 20 µs), in again (20 µs), tPROG; no command time or
    // decode in these presets. SLC: 64 × (50 + 20 + 20 + 500) = 37,760 µs; with two erases of
    // 2,620 µs, 43,000 µs: seed 003's SLC merge time. MLC: 128 × (80 + 40 + 1300) = 181,760 µs
    // + 5,240 µs = 187,000 µs.
    for (preset, merge_us) in [("seed003-slc-bast", 43_000), ("seed003-mlc-bast", 187_000)] {
        let (cost, dev) = merge_cost(preset, true);
        assert_eq!(cost, SimTime::from_us(merge_us), "{preset}");
        let m = &dev.backend().block_mapped().unwrap().ftl.counts;
        assert_eq!((m.switch, m.partial, m.full), (0, 0, 1), "{preset}");
        assert_eq!(m.erases, 2);
        assert_eq!(
            m.pages_copied,
            SsdConfig::resolve(preset, &[])
                .unwrap()
                .nand
                .pages_per_block as u64
        );
    }
}

#[test]
fn a_switch_merge_costs_one_erase() {
    // The log holds the block's pages in order: it becomes the data block, and the old data
    // block's erase (2,620 µs, calibrated) is all the write waits for.
    let (cost, dev) = merge_cost("seed003-slc-bast", false);
    assert_eq!(cost, SimTime::from_us(2_620));
    let m = &dev.backend().block_mapped().unwrap().ftl.counts;
    assert_eq!((m.switch, m.partial, m.full, m.pages_copied), (1, 0, 0, 0));
}

#[test]
fn defaults_carry_no_merge_counters_and_hybrid_runs_report_them() {
    let spec = JobSpec::from_toml_str(
        "rw = \"randwrite\"\nbs = \"16KiB\"\niodepth = 4\nsize = \"2MiB\"\nio_count = 400",
        "job",
    )
    .unwrap();
    let page = ssdlab::run(
        &SsdConfig::resolve("small-tlc", &[]).unwrap(),
        &spec,
        &common::opts(1),
        &mut |_, _| true,
    )
    .unwrap();
    let v = common::without_wall(&page.result);
    assert!(v["device"].get("merges").is_none());
    let out = ssdlab::run(
        &small("fast", Some(3)),
        &spec,
        &common::opts(1),
        &mut |_, _| true,
    )
    .unwrap();
    let v = common::without_wall(&out.result);
    let m = &v["device"]["merges"];
    assert!(m["full"].as_u64().unwrap() > 0, "{m}");
    let copied = m["pages_copied"].as_u64().unwrap();
    let host = v["device"]["host_pages_written"].as_u64().unwrap();
    assert_eq!(host, 400);
    let wa = v["device"]["write_amplification"].as_f64().unwrap();
    assert!((wa - (host + copied) as f64 / host as f64).abs() < 1e-12);
    // Same inputs, same bytes.
    let again = ssdlab::run(
        &small("fast", Some(3)),
        &spec,
        &common::opts(1),
        &mut |_, _| true,
    )
    .unwrap();
    assert_eq!(v, common::without_wall(&again.result));
}

#[test]
fn the_paging_model_swaps_through_seed_003s_nand_presets() {
    use ssdlab::paging::{self, Era, PagingConfig, Workload};
    // Touch 3,000 pages writing, then again in reverse (swap-outs rewrite slots out of order,
    // so merges come), then read them all.
    let n = 3000u32;
    let mut v: Vec<(u32, bool)> = (0..n).map(|p| (p, true)).collect();
    v.extend((0..n).rev().map(|p| (p, true)));
    v.extend((0..n).map(|p| (p, false)));
    let work = Workload::from_pages(v);
    let mut cfg = PagingConfig::new(1 << 20, 64 << 20);
    cfg.era = Era::Linux2632;
    let mut device_us = Vec::new();
    for preset in ["seed003-slc-bast", "seed003-mlc-bast"] {
        let dev = SsdConfig::resolve(preset, &[]).unwrap();
        let out = paging::run(&dev, preset, &cfg, &work, 3).unwrap();
        let r = &out.result;
        assert_eq!(r.oracle_mismatches, 0, "{preset}");
        assert!(r.faults.major > 0 && r.writes.requests > 0, "{preset}");
        device_us.push(r.swap_in_breakdown.device_us);
    }
    // MLC senses in 80 µs where SLC takes 50, and its merges are longer.
    assert!(device_us[0] < device_us[1], "{device_us:?}");
}

/// `small` with a write-back cache buffer in front of its block map.
fn small_cached(kind: &str, logs: Option<u32>, extra: &[&str]) -> SsdConfig {
    let mut ov: Vec<String> = vec![
        format!("ftl.kind=\"{kind}\""),
        "ftl.map_unit=\"16KiB\"".into(),
        "ftl.over_provisioning=0.5".into(),
        "precondition.fill=\"none\"".into(),
        "precondition.random_overwrite=0.0".into(),
        "cache.capacity=\"256KiB\"".into(),
        "cache.dram=\"ddr2\"".into(),
    ];
    if let Some(n) = logs {
        ov.push(format!("ftl.log_blocks={n}"));
    }
    ov.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// The cache buffer in front of every block-mapped FTL: reads find the latest data while
    /// lines are flushed into the block map and merges move it, under every write mode,
    /// replacement policy and port mode, with partial pages.
    #[test]
    fn a_cache_buffer_in_front_of_a_block_map_keeps_the_latest_data(
        kind in prop_oneof![Just(("block", None)), Just(("bast", Some(2))), Just(("fast", Some(3)))],
        mode in prop_oneof![Just("write-back"), Just("write-through")],
        replacement in prop_oneof![Just("lru"), Just("clock"), Just("fifo")],
        ports in prop_oneof![Just("single"), Just("dual")],
        read_allocate in any::<bool>(),
        seed in 0u64..1000,
        bs in prop_oneof![Just("16KiB"), Just("8KiB"), Just("64KiB")],
    ) {
        let cfg = small_cached(kind.0, kind.1, &[
            &format!("cache.mode=\"{mode}\""),
            &format!("cache.replacement=\"{replacement}\""),
            &format!("cache.ports=\"{ports}\""),
            &format!("cache.read_allocate={read_allocate}"),
            "cache.flush_high_watermark=0.5",
            "cache.flush_low_watermark=0.25",
        ]);
        // 4 MiB hot region over a 256 KiB buffer (16 lines of 16 KiB): flushes and merges
        // both come often.
        let job = format!("rw = \"randrw\"\nrwmixread = 40\nbs = \"{bs}\"\niodepth = 8\nsize = \"4MiB\"\nio_count = 1200");
        let dev = common::run_checked(&cfg, &job, seed, false);
        let m = &dev.backend().block_mapped().unwrap().ftl.counts;
        prop_assert!(m.full + m.partial + m.switch > 0, "no merge: {:?}", m);
        let s = dev.cache().unwrap().stats();
        // Write-through without read allocation keeps nothing (as in front of the page FTL).
        if mode == "write-back" || read_allocate {
            prop_assert!(s.read_hits + s.write_hits > 0, "no hit: {:?}", s);
        }
        dev.backend().block_mapped().unwrap().ftl.check().map_err(TestCaseError::fail)?;
    }
}

/// Does a write cache hide a hybrid FTL's merge cost? seed 003's BAST drive written as in
/// `merge_cost` (a block's pages, then all again in reverse, then page 0): without a buffer
/// the last write waits for a full merge; with a write-back buffer that holds a block's pages,
/// every rewrite hits a dirty line, no page reaches NAND and no merge happens.
#[test]
fn a_write_back_buffer_absorbs_the_rewrites_that_would_merge() {
    let (uncached, _) = merge_cost("seed003-slc-bast", true);
    assert_eq!(uncached, SimTime::from_us(43_000));
    let cfg = SsdConfig::resolve(
        "seed003-slc-bast",
        &[
            "cache.capacity=\"1MiB\"".to_string(),
            "cache.flush_high_watermark=0.0".to_string(),
        ],
    )
    .unwrap();
    let page = cfg.nand.page_size.0;
    let ppb = cfg.nand.pages_per_block as u64;
    let lines = cfg.cache.as_ref().unwrap().capacity.0 / page;
    assert!(lines >= ppb, "{lines} lines for a {ppb}-page block");
    let mut offsets: Vec<u64> = (0..ppb).map(|p| p * page).collect();
    offsets.extend((0..ppb).rev().map(|p| p * page));
    offsets.push(0);
    let mut dev = Device::new(&cfg, 1).unwrap();
    let mut drv = OneByOne {
        offsets,
        page,
        next: 0,
        latency: Vec::new(),
    };
    drv.issue(&mut dev, SimTime::ZERO);
    dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap();
    let n = drv.latency.len();
    assert_eq!(n as u64, 2 * ppb + 1);
    let worst = drv.latency.iter().max().unwrap();
    assert!(*worst < SimTime::from_us(100), "worst write {worst:?}");
    let m = &dev.backend().block_mapped().unwrap().ftl.counts;
    assert_eq!(
        (m.switch, m.partial, m.full, m.host_pages_written),
        (0, 0, 0, 0)
    );
    let s = dev.cache().unwrap().stats();
    assert_eq!((s.write_misses, s.write_hits), (ppb, ppb + 1));
}

/// A buffer smaller than the rewrite set: its flushes reach the block map out of page order,
/// and the merges they cause are the buffer's flushes' (no host command waits for them), yet
/// runs are byte-identical for one seed.
#[test]
fn flushes_into_a_block_map_merge_and_runs_repeat_exactly() {
    let spec = JobSpec::from_toml_str(
        "rw = \"randwrite\"\nbs = \"16KiB\"\niodepth = 4\nsize = \"2MiB\"\nio_count = 600",
        "job",
    )
    .unwrap();
    let cfg = small_cached("bast", Some(2), &[]);
    let out = ssdlab::run(&cfg, &spec, &common::opts(3), &mut |_, _| true).unwrap();
    let v = common::without_wall(&out.result);
    let m = &v["device"]["merges"];
    assert!(
        m["full"].as_u64().unwrap() + m["partial"].as_u64().unwrap() > 0,
        "{m}"
    );
    assert!(
        v["cache"]["flushes"]["on_demand"].as_u64().unwrap() > 0,
        "{}",
        v["cache"]
    );
    let again = ssdlab::run(&cfg, &spec, &common::opts(3), &mut |_, _| true).unwrap();
    assert_eq!(v, common::without_wall(&again.result));
}

/// Issues a fixed random mix of page writes, partial writes, reads, trims and flush commands
/// one at a time.
struct Mixed {
    left: u32,
    rng: u64,
    pages: u64,
    page: u64,
}

impl Mixed {
    fn issue(&mut self, dev: &mut Device, now: SimTime) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        // A 64-bit LCG (Knuth's MMIX constants): enough to mix the operations.
        self.rng = self
            .rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = self.rng >> 33;
        let offset = (r % self.pages) * self.page;
        let (op, offset, len) = match r % 20 {
            0 => (Op::Trim, offset, self.page),
            1 => (Op::Flush, 0, 0),
            2..=3 => (Op::Write, offset + 4096, 4096),
            4..=11 => (Op::Write, offset, self.page),
            _ => (Op::Read, offset, self.page),
        };
        let r = Request {
            op,
            offset,
            len,
            queue: 0,
            flags: Flags::NONE,
            arrival: now,
        };
        dev.submit(now, r).unwrap();
    }
}

impl Driver for Mixed {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, _: Completion) {
        self.issue(dev, now);
    }
}

/// Trims and flush commands between writes and reads, through the cache buffer into each
/// block map: every read finds the latest data.
#[test]
fn trims_and_flush_commands_through_a_buffer_into_a_block_map_keep_the_data() {
    for (kind, logs) in [("block", None), ("bast", Some(2)), ("fast", Some(3))] {
        for mode in ["write-back", "write-through"] {
            let cfg = small_cached(kind, logs, &[&format!("cache.mode=\"{mode}\"")]);
            let mut dev = Device::new(&cfg, 1).unwrap();
            dev.enable_check();
            let mut drv = Mixed {
                left: 3000,
                rng: 7,
                pages: 64,
                page: cfg.nand.page_size.0,
            };
            drv.issue(&mut dev, SimTime::ZERO);
            dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap();
            let dc = dev.check().unwrap();
            assert!(dc.reads > 500, "{kind} {mode}: {} reads", dc.reads);
            assert_eq!(dc.first_error, None, "{kind} {mode}");
            let m = &dev.backend().block_mapped().unwrap().ftl.counts;
            assert!(m.full + m.partial + m.switch > 0, "{kind} {mode}: {m:?}");
        }
    }
}

/// Seed 003's BAST drive preconditioned to steady state: the run repeats exactly, reports
/// the steady state with its merge rate, and its timed random writes merge at that rate
/// (within 5 %) from the start.
#[test]
fn a_steady_state_bast_drive_merges_at_its_steady_rate_from_the_start() {
    let steady = SsdConfig::resolve(
        "seed003-slc-bast",
        &["precondition.fill=\"steady-state\"".to_string()],
    )
    .unwrap();
    let job = JobSpec::from_toml_str(
        "rw = \"randwrite\"\nbs = \"8KiB\"\niodepth = 4\nio_count = 2000",
        "test job",
    )
    .unwrap();
    let run = |cfg: &SsdConfig| {
        common::without_wall(
            &ssdlab::run(cfg, &job, &common::opts(1), &mut |_, _| true)
                .unwrap()
                .result,
        )
    };
    let a = run(&steady);
    assert_eq!(a, run(&steady));
    let s = &a["device"]["steady_state"];
    let rate = s["merges_per_host_page"].as_f64().unwrap();
    assert_eq!(s["converged"], true, "{s}");
    assert!(rate > 0.5, "{s}");
    let m = &a["device"]["merges"];
    let merges = ["switch", "partial", "full"]
        .iter()
        .map(|k| m[k].as_u64().unwrap())
        .sum::<u64>() as f64;
    // 2,000 writes of one 8 KiB page each.
    let timed = merges / 2000.0;
    assert!(
        (timed - rate).abs() <= 0.05 * rate,
        "timed {timed}, steady {s}"
    );
}
