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
