//! Endurance and errors (`[reliability]`): blocks retire at their P/E limit until the drive
//! turns read-only without losing an acknowledged write; weak ECC makes reads retry and fail;
//! factory bad blocks; and nothing changes without the section. The same for the block-mapped
//! FTLs (block, BAST, FAST) and a zoned drive, whose worn zones go offline.

mod common;

use ssdlab::device::{Completion, Device, Driver, Flags, Request, Status};
use ssdlab::request::Op;
use ssdlab::sim::{Rng, SimTime};
use ssdlab::{JobSpec, RunOptions, SsdConfig};
use std::collections::{BTreeMap, BTreeSet};

/// small-tlc cut to one die of two planes, 64 blocks each (64 MiB raw, 16,384 map units of
/// 4 KiB, a quarter of them spare), so a P/E limit of a few cycles wears it out in tens of thousands of writes.
fn tiny(extra: &[&str]) -> SsdConfig {
    let mut o: Vec<String> = [
        "nand.channels=1",
        "nand.dies_per_package=1",
        "nand.blocks_per_plane=64",
        "ftl.over_provisioning=0.25",
        "ftl.gc.free_threshold=0.05",
        "precondition.fill=\"none\"",
        "precondition.random_overwrite=0.0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    o.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("small-tlc", &o).unwrap()
}

const UNIT: u64 = 4096;

fn req(op: Op, lpn: u64, at: SimTime) -> Request {
    Request {
        op,
        offset: lpn * UNIT,
        len: UNIT,
        queue: 0,
        flags: Flags::NONE,
        arrival: at,
    }
}

/// Random 4 KiB writes at depth 8 (never two to the same unit at once) until the drive says
/// it is read-only, then a read of every unit a write was acknowledged for.
struct WearOut {
    rng: Rng,
    units: u64,
    in_flight: BTreeMap<u32, (Op, u64)>,
    busy: BTreeSet<u64>,
    /// Units with an acknowledged write.
    acked: BTreeSet<u64>,
    read_only: bool,
    reading: bool,
    to_read: Vec<u64>,
    reads_ok: u64,
    other_failures: Vec<Completion>,
    writes_sent: u64,
}

impl WearOut {
    fn new(units: u64) -> WearOut {
        WearOut {
            rng: Rng::stream(9, "test"),
            units,
            in_flight: BTreeMap::new(),
            busy: BTreeSet::new(),
            acked: BTreeSet::new(),
            read_only: false,
            reading: false,
            to_read: Vec::new(),
            reads_ok: 0,
            other_failures: Vec::new(),
            writes_sent: 0,
        }
    }
}

impl WearOut {
    fn issue(&mut self, dev: &mut Device, now: SimTime) {
        while self.in_flight.len() < 8 {
            let (op, lpn) = if !self.read_only {
                let lpn = self.rng.below(self.units);
                if self.busy.contains(&lpn) {
                    continue;
                }
                self.writes_sent += 1;
                (Op::Write, lpn)
            } else if !self.in_flight.values().any(|&(op, _)| op == Op::Write) {
                if !self.reading {
                    // Every write has answered: read back each acknowledged one.
                    self.reading = true;
                    self.to_read = self.acked.iter().copied().collect();
                }
                match self.to_read.pop() {
                    Some(lpn) => (Op::Read, lpn),
                    None => return,
                }
            } else {
                return;
            };
            let id = dev.submit(now, req(op, lpn, now)).unwrap();
            self.in_flight.insert(id, (op, lpn));
            self.busy.insert(lpn);
        }
    }
}

impl Driver for WearOut {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        let (op, lpn) = self.in_flight.remove(&done.id).unwrap();
        self.busy.remove(&lpn);
        match (op, done.status) {
            (Op::Write, Status::Ok) => {
                self.acked.insert(lpn);
            }
            // The first refusal is ReadOnly, or NoSpace when a plane found it had nothing
            // left to compact into before the spare count said so; either keeps the old data,
            // and the drive is read-only from then on.
            (Op::Write, Status::ReadOnly | Status::NoSpace) if !self.read_only => {
                self.read_only = true;
            }
            (Op::Write, Status::ReadOnly | Status::NoSpace) => {}
            (Op::Read, Status::Ok) => self.reads_ok += 1,
            _ => self.other_failures.push(done),
        }
        self.issue(dev, now);
    }
}

#[test]
fn a_worn_out_drive_ends_read_only_and_keeps_every_acknowledged_write() {
    let cfg = tiny(&["reliability.pe_limit=4"]);
    let mut dev = Device::new(&cfg, 3).unwrap();
    dev.enable_check();
    let mut d = WearOut::new(dev.capacity_bytes() / UNIT);
    d.issue(&mut dev, SimTime::ZERO);
    dev.run(&mut d, u64::MAX, &mut |_, _| true).unwrap();

    assert!(
        d.read_only,
        "never turned read-only after {} writes",
        d.writes_sent
    );
    assert!(d.other_failures.is_empty(), "{:?}", &d.other_failures[..1]);
    let w = dev.backend().page_ftl().unwrap().wear.clone().unwrap();
    assert!(w.read_only);
    assert!(w.retired_blocks > 0);
    assert!(
        w.good_blocks
            < (dev.backend().page_ftl().unwrap().blocks().len() as u64 + w.min_good_blocks) / 2,
        "read-only with most of the spare still good: {w:?}"
    );
    // Every acknowledged unit is still mapped, and its read found the latest version.
    assert_eq!(d.reads_ok, d.acked.len() as u64);
    for &lpn in &d.acked {
        assert!(
            dev.backend().page_ftl().unwrap().lookup(lpn).is_some(),
            "unit {lpn} lost its data"
        );
    }
    let check = dev.check().unwrap();
    assert_eq!(check.first_error, None);
    assert_eq!(check.reads, d.acked.len() as u64);
    dev.backend().page_ftl().unwrap().check().unwrap();
    // No block went past its limit.
    assert!(dev
        .backend()
        .page_ftl()
        .unwrap()
        .blocks()
        .iter()
        .all(|b| b.erase_count <= 4));
}

/// `[reliability]` with the given overrides on small-tlc, through `ssdlab::run`.
fn run(extra: &[&str], job: &str) -> ssdlab::stats::result::RunResult {
    let mut o: Vec<String> = vec![
        "precondition.fill=\"sequential\"".into(),
        "precondition.random_overwrite=0.0".into(),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    let cfg = SsdConfig::resolve("small-tlc", &o).unwrap();
    let job = JobSpec::from_json(job).unwrap();
    ssdlab::run(
        &cfg,
        &job,
        &RunOptions {
            seed: 5,
            record_requests: false,
            stats_interval: None,
            power_cut_event: None,
            power_cut_at: None,
        },
        &mut |_, _| true,
    )
    .unwrap()
    .result
}

const READS: &str = r#"{"name":"r","rw":"randread","bs":"4KiB","iodepth":1,"io_count":2000}"#;

#[test]
fn weak_ecc_makes_reads_retry_and_slower() {
    let healthy = run(&["reliability.rber_fresh=1e-8"], READS);
    let weak = run(
        &[
            "reliability.ecc_correctable_bits=4",
            "reliability.rber_fresh=1e-3",
        ],
        READS,
    );
    let h = healthy.reliability.as_ref().unwrap();
    let w = weak.reliability.as_ref().unwrap();
    assert_eq!(h.reads_retried, 0);
    assert_eq!(h.uncorrectable_reads, 0);
    assert!(w.reads_retried > 1900, "{w:?}");
    assert_eq!(w.uncorrectable_reads, 0, "8 halvings bring every read back");
    // Each retry step senses again: tR (50-80 µs) + 5.12 µs transfer + 3 µs ECC.
    let mean = |r: &ssdlab::stats::result::RunResult| r.ops["read"].latency_us.mean;
    let steps = w.read_retry_steps as f64 / w.reads_retried as f64;
    assert!(
        mean(&weak) > mean(&healthy) + steps * 55.0,
        "{} vs {} with {steps} steps a read",
        mean(&weak),
        mean(&healthy)
    );
}

#[test]
fn reads_beyond_the_ecc_fail_and_are_counted_not_fatal() {
    let r = run(
        &[
            "reliability.ecc_correctable_bits=4",
            "reliability.rber_fresh=1e-2",
            "reliability.read_retry_max=2",
        ],
        READS,
    );
    let rel = r.reliability.as_ref().unwrap();
    assert_eq!(rel.uncorrectable_reads, 2000);
    assert_eq!(rel.failed_reads, 2000);
    assert_eq!(rel.reads_retried, 2000);
    assert_eq!(rel.read_retry_steps, 4000);
}

#[test]
fn factory_bad_blocks_shrink_the_spare() {
    let r = run(
        &["reliability.factory_bad_block_rate=0.02"],
        r#"{"name":"w","rw":"randwrite","bs":"4KiB","iodepth":8,"io_count":3000}"#,
    );
    let rel = r.reliability.as_ref().unwrap();
    // 2 % of 2,048 blocks: 41 expected; a binomial spread of ±6.3.
    assert!(
        (20..=65).contains(&rel.factory_bad_blocks),
        "{}",
        rel.factory_bad_blocks
    );
    assert_eq!(rel.good_blocks, 2048 - rel.factory_bad_blocks);
    assert!(rel.available_spare_percent == 100.0 && !rel.read_only);
    assert_eq!(rel.refused_writes_read_only, 0);
}

#[test]
fn the_section_absent_changes_nothing_and_present_keeps_a_fresh_drive_identical() {
    let job =
        r#"{"name":"m","rw":"randrw","rwmixread":50,"bs":"4KiB","iodepth":16,"io_count":4000}"#;
    let plain = run(&[], job);
    let fresh = run(&["reliability.pe_limit=1000"], job);
    assert!(plain.reliability.is_none());
    // A fresh drive's reads never fail or retry, so the timing is the same event for event.
    assert_eq!(plain.sim.events, fresh.sim.events);
    assert_eq!(plain.sim.simulated_time_s, fresh.sim.simulated_time_s);
    assert_eq!(
        plain.ops["read"].latency_us.mean,
        fresh.ops["read"].latency_us.mean
    );
}

#[test]
fn bad_reliability_settings_are_one_line_errors_naming_the_field() {
    for (set, field) in [
        ("reliability.pe_limit=0", "reliability.pe_limit"),
        (
            "reliability.factory_bad_block_rate=0.7",
            "reliability.factory_bad_block_rate",
        ),
        ("reliability.rber_fresh=-1.0", "reliability.rber_fresh"),
        (
            "reliability.ecc_codeword_bytes=3000",
            "reliability.ecc_codeword_bytes",
        ),
        (
            "reliability.read_retry_rber_factor=0.0",
            "reliability.read_retry_rber_factor",
        ),
        ("reliability.data_age_days=1e9", "reliability.data_age_days"),
        ("reliability.colour=1", "colour"),
    ] {
        let e = SsdConfig::resolve("small-tlc", &[set.into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(field), "{set}: {e}");
        assert!(!e.contains('\n'), "{set}: {e}");
    }
}

/// small-tlc with a block-mapped FTL (`kind`, with `logs` log blocks per plane) on one die of
/// two planes of 64 blocks of 16 KiB pages, half the space hidden, and `[reliability]` with the
/// overrides `extra`.
fn block_mapped(kind: &str, logs: Option<u32>, extra: &[&str]) -> SsdConfig {
    let mut o: Vec<String> = vec![
        format!("ftl.kind=\"{kind}\""),
        "ftl.map_unit=\"16KiB\"".into(),
        "ftl.over_provisioning=0.5".into(),
        "nand.channels=1".into(),
        "nand.dies_per_package=1".into(),
        "nand.blocks_per_plane=64".into(),
        "precondition.fill=\"none\"".into(),
        "precondition.random_overwrite=0.0".into(),
        "reliability.rber_fresh=1e-8".into(),
    ];
    if let Some(n) = logs {
        o.push(format!("ftl.log_blocks={n}"));
    }
    o.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("small-tlc", &o).unwrap()
}

const BLOCK_MAPPED: [(&str, Option<u32>); 3] =
    [("block", None), ("bast", Some(2)), ("fast", Some(3))];

/// Wear grows with the writes on every block-mapped FTL, and shows in SMART and the run's
/// result; the data oracle holds meanwhile, and the same run twice is the same result.
#[test]
fn block_mapped_ftls_wear_with_writes_and_report_it() {
    for (kind, logs) in BLOCK_MAPPED {
        let cfg = block_mapped(kind, logs, &["reliability.pe_limit=100"]);
        let mut used = Vec::new();
        for n in [400, 1600] {
            let job = format!(
                "rw = \"randrw\"\nrwmixread = 30\nbs = \"16KiB\"\niodepth = 8\nsize = \"2MiB\"\nio_count = {n}"
            );
            let dev = common::run_checked(&cfg, &job, 7, false);
            let h = dev.backend().block_mapped().unwrap();
            assert!(h.ftl.counts.erases > 0, "{kind}: no erase");
            let w = dev.backend().wear().expect("wear figures");
            assert_eq!(w.pe_limit, 100);
            let pu = dev.percentage_used().expect("percentage used");
            // Mean erases of the good blocks (those below the limit) over the limit.
            let good: Vec<u64> = (h.ftl.erase_counts().iter())
                .filter(|&&e| e < 100)
                .map(|&e| e as u64)
                .collect();
            let mean = good.iter().sum::<u64>() as f64 / good.len() as f64;
            assert_eq!(w.good_blocks, good.len() as u64, "{kind}");
            assert!((pu - mean / 100.0 * 100.0).abs() < 1e-9, "{kind}: {pu}");
            used.push(pu);
        }
        assert!(used[1] > used[0], "{kind}: wear did not grow: {used:?}");
        let job = JobSpec::from_json(
            r#"{"name":"w","rw":"randwrite","bs":"16KiB","iodepth":8,"size":"2MiB","io_count":1500}"#,
        )
        .unwrap();
        let a = common::run_twice_alike(&cfg, &job, &common::opts(3), kind);
        let rel = a.result.reliability.as_ref().expect("reliability figures");
        assert!(rel.percentage_used > 0.0, "{kind}: {rel:?}");
        // Block mapping copies a block for each of 1,500 overwrites of 2 MiB, which takes the
        // blocks its merges keep reusing to the limit of 100: they retire, and the spare
        // shrinks. The log-block FTLs merge far less.
        assert_eq!(rel.retired_blocks > 0, kind == "block", "{kind}: {rel:?}");
        assert_eq!(
            rel.available_spare_percent < 100.0,
            rel.retired_blocks > 0,
            "{kind}: {rel:?}"
        );
        assert!(!rel.read_only && rel.offline_zones.is_none(), "{kind}");
    }
}

/// Steady-state preconditioning of a block-mapped FTL with `[reliability]` (issue 46): the
/// run's result reports the steady state and the wear its overwrites left (SMART's Percentage
/// Used above zero for the log-block FTLs, whose steady state overwrites; zero before the run
/// for block mapping, whose steady state is its fill), the data oracle holds through the timed
/// run, and the same run twice is the same result.
#[test]
fn block_mapped_steady_state_ages_the_drive_and_reports_its_wear() {
    for (kind, logs) in BLOCK_MAPPED {
        let cfg = block_mapped(
            kind,
            logs,
            &[
                "reliability.pe_limit=100000",
                "precondition.fill=\"steady-state\"",
            ],
        );
        // The drive the runs below start from (seed 3).
        let mut dev = Device::new(&cfg, 3).unwrap();
        ssdlab::run::precondition(&mut dev, &cfg, 3).unwrap();
        let pu = dev.percentage_used().expect("percentage used");
        assert_eq!(pu > 0.0, kind != "block", "{kind}: {pu}");
        let job = "rw = \"randrw\"\nrwmixread = 50\nbs = \"16KiB\"\niodepth = 4\nsize = \"2MiB\"\nio_count = 400";
        common::run_checked(&cfg, job, 7, true);
        let job = JobSpec::from_json(
            r#"{"name":"w","rw":"randwrite","bs":"16KiB","iodepth":8,"size":"2MiB","io_count":400}"#,
        )
        .unwrap();
        let a = common::run_twice_alike(&cfg, &job, &common::opts(3), kind);
        let rel = a.result.reliability.as_ref().expect("reliability figures");
        assert!(rel.percentage_used > 0.0, "{kind}: {rel:?}");
        assert!(rel.percentage_used >= pu, "{kind}: {rel:?} after {pu}");
        let s = a.result.device.steady_state.as_ref().expect("steady state");
        assert!(s.merges_per_host_page.is_some(), "{kind}: {s:?}");
    }
}

/// A block-mapped drive worn to its P/E limit retires blocks until a plane cannot hold its
/// logical blocks, logs and merges: it turns read-only, SMART says so, and every acknowledged
/// write still reads back as written.
#[test]
fn a_worn_out_block_mapped_drive_ends_read_only_and_keeps_acknowledged_writes() {
    for (kind, logs) in BLOCK_MAPPED {
        let cfg = block_mapped(kind, logs, &["reliability.pe_limit=3"]);
        let mut dev = Device::new(&cfg, 3).unwrap();
        dev.enable_check();
        let mut d = WearOut::new(dev.capacity_bytes() / UNIT);
        d.issue(&mut dev, SimTime::ZERO);
        dev.run(&mut d, u64::MAX, &mut |_, _| true).unwrap();
        assert!(
            d.read_only,
            "{kind}: never read-only after {} writes",
            d.writes_sent
        );
        assert!(
            d.other_failures.is_empty(),
            "{kind}: {:?}",
            &d.other_failures[..1]
        );
        assert!(dev.read_only(), "{kind}");
        let w = dev.backend().wear().unwrap().clone();
        assert!(w.read_only && w.retired_blocks > 0, "{kind}: {w:?}");
        assert_eq!(dev.available_spare_percent(), 0.0, "{kind}");
        assert_eq!(d.reads_ok, d.acked.len() as u64, "{kind}");
        let check = dev.check().unwrap();
        assert_eq!(check.first_error, None, "{kind}");
        let h = dev.backend().block_mapped().unwrap();
        h.ftl.check().unwrap();
        assert!(h.ftl.erase_counts().iter().all(|&e| e <= 3), "{kind}");
        // From then on writes and trims are refused and change nothing; reads still work.
        let lpn = *d.acked.iter().next().unwrap();
        let page = 16384;
        let at = lpn * UNIT / page * page;
        assert_eq!(
            one(&mut dev, Op::Trim, at, page),
            Status::ReadOnly,
            "{kind}"
        );
        assert_eq!(
            one(&mut dev, Op::Write, at, page),
            Status::ReadOnly,
            "{kind}"
        );
        assert!(dev.is_mapped(lpn * UNIT / page), "{kind}");
        assert_eq!(
            one(&mut dev, Op::Read, lpn * UNIT, UNIT),
            Status::Ok,
            "{kind}"
        );
        assert_eq!(dev.check().unwrap().first_error, None, "{kind}");
    }
}

/// Weak ECC makes a block-mapped drive's reads retry, and slower.
#[test]
fn block_mapped_reads_retry_through_the_error_model() {
    let job = JobSpec::from_json(
        r#"{"name":"r","rw":"randread","bs":"16KiB","iodepth":1,"size":"2MiB","io_count":500}"#,
    )
    .unwrap();
    for (kind, logs) in BLOCK_MAPPED {
        let seq = ["precondition.fill=\"sequential\""];
        let healthy = block_mapped(kind, logs, &seq);
        let weak = block_mapped(
            kind,
            logs,
            &[
                seq[0],
                "reliability.ecc_correctable_bits=4",
                "reliability.rber_fresh=1e-3",
            ],
        );
        let run = |cfg: &SsdConfig| {
            ssdlab::run(cfg, &job, &common::opts(5), &mut |_, _| true)
                .unwrap()
                .result
        };
        let (h, w) = (run(&healthy), run(&weak));
        let (hr, wr) = (
            h.reliability.as_ref().unwrap(),
            w.reliability.as_ref().unwrap(),
        );
        assert_eq!(hr.reads_retried, 0, "{kind}");
        assert!(wr.reads_retried > 450, "{kind}: {wr:?}");
        assert!(
            w.ops["read"].latency_us.mean > h.ops["read"].latency_us.mean + 50.0,
            "{kind}"
        );
    }
}

/// zns-tlc (128 zones of 8 MiB striped over 16 planes) with `[reliability]` and `extra`.
fn zoned(extra: &[&str]) -> SsdConfig {
    let mut o: Vec<String> = vec!["reliability.rber_fresh=1e-8".into()];
    o.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("zns-tlc", &o).unwrap()
}

fn zbd_writes(cfg: &SsdConfig, drives: f64) -> ssdlab::stats::result::RunResult {
    let n = (cfg.logical_bytes() as f64 / (128 << 10) as f64 * drives) as u64;
    let job = JobSpec::from_json(&format!(
        r#"{{"rw":"write","bs":"128KiB","iodepth":8,"zonemode":"zbd","io_count":{n}}}"#
    ))
    .unwrap();
    ssdlab::run(cfg, &job, &common::opts(1), &mut |_, _| true)
        .unwrap()
        .result
}

/// A zoned drive's blocks wear as resets erase them: SMART's Percentage Used follows the
/// erases, and the same run twice is the same result.
#[test]
fn a_zoned_drive_wears_as_its_zones_are_reset() {
    let cfg = zoned(&["reliability.pe_limit=100"]);
    let once = zbd_writes(&cfg, 1.25);
    let twice = zbd_writes(&cfg, 2.25);
    let used =
        |r: &ssdlab::stats::result::RunResult| r.reliability.as_ref().unwrap().percentage_used;
    // 32 resets of 16 blocks of 2,048: 0.25 erases a block on average, of 100.
    assert!((used(&once) - 0.25).abs() < 1e-9, "{}", used(&once));
    assert!((used(&twice) - 1.25).abs() < 1e-9, "{}", used(&twice));
    let rel = once.reliability.as_ref().unwrap();
    assert_eq!(rel.offline_zones, Some(0));
    assert_eq!(rel.available_spare_percent, 100.0);
    assert!(once.device.zones.as_ref().unwrap().errors.is_empty());
    let again = zbd_writes(&cfg, 1.25);
    assert_eq!(common::without_wall(&once), common::without_wall(&again));
}

/// A reset that wears a zone's block out takes the zone offline: its capacity leaves the
/// drive (Available Spare counts the zones left), and writes to it are refused as offline.
#[test]
fn a_worn_zone_goes_offline() {
    let cfg = zoned(&["reliability.pe_limit=1"]);
    let r = zbd_writes(&cfg, 1.25);
    let rel = r.reliability.as_ref().unwrap();
    let z = r.device.zones.as_ref().unwrap();
    assert_eq!(z.resets, 32);
    // Each reset brought its zone's 16 blocks to the limit of 1.
    assert_eq!(rel.offline_zones, Some(32));
    assert_eq!(rel.retired_blocks, 32 * 16);
    assert_eq!(rel.available_spare_percent, 75.0);
    assert!(!rel.read_only);
    // Every zone reset once and offline: none is left to write.
    let mut dev = Device::new(&cfg, 1).unwrap();
    let zone = 8u64 << 20;
    for zi in 0..128u64 {
        for (op, len) in [(Op::Write, 4096), (Op::ZoneReset, 0)] {
            let now = dev.now();
            let rq = Request {
                op,
                offset: zi * zone,
                len,
                queue: 0,
                flags: Flags::NONE,
                arrival: now,
            };
            dev.submit(now, rq).unwrap();
            let done = dev.run_to_idle().unwrap();
            assert_eq!(done[0].2, Status::Ok, "zone {zi} {op:?}");
        }
    }
    assert!(dev.read_only());
    assert_eq!(dev.available_spare_percent(), 0.0);
    let now = dev.now();
    let rq = Request {
        op: Op::Read,
        offset: 0,
        len: 4096,
        queue: 0,
        flags: Flags::NONE,
        arrival: now,
    };
    dev.submit(now, rq).unwrap();
    assert_eq!(dev.run_to_idle().unwrap()[0].2, Status::ZoneOffline);
}

/// Weak ECC makes a zoned drive's reads retry; factory bad blocks take their zones offline
/// from the start.
#[test]
fn zoned_reads_retry_and_factory_bad_blocks_take_zones_offline() {
    let fill = zoned(&[
        "reliability.ecc_correctable_bits=4",
        "reliability.rber_fresh=1e-3",
    ]);
    let mut dev = Device::new(&fill, 1).unwrap();
    let now = dev.now();
    let rq = Request {
        op: Op::Write,
        offset: 0,
        len: 1 << 20,
        queue: 0,
        flags: Flags::NONE,
        arrival: now,
    };
    dev.submit(now, rq).unwrap();
    dev.run_to_idle().unwrap();
    for i in 0..64u64 {
        let now = dev.now();
        let rq = Request {
            op: Op::Read,
            offset: i * 16384,
            len: 4096,
            queue: 0,
            flags: Flags::NONE,
            arrival: now,
        };
        dev.submit(now, rq).unwrap();
        assert_eq!(dev.run_to_idle().unwrap()[0].2, Status::Ok);
    }
    assert!(
        dev.backend().nand().unwrap().fil.counters.reads_retried >= 60,
        "{}",
        dev.backend().nand().unwrap().fil.counters.reads_retried
    );

    let bad = zoned(&["reliability.factory_bad_block_rate=0.002"]);
    let dev = Device::new(&bad, 1).unwrap();
    let w = dev.backend().wear().unwrap();
    let z = dev.backend().zoned().unwrap();
    let offline = z.offline_zones().unwrap();
    assert!(w.factory_bad_blocks > 0 && offline > 0 && offline as u64 <= w.factory_bad_blocks);
    assert_eq!(
        dev.available_spare_percent(),
        100.0,
        "factory losses are not spare used"
    );
}

/// One request on an idle device; its status.
fn one(dev: &mut Device, op: Op, offset: u64, len: u64) -> Status {
    let now = dev.now();
    let rq = Request {
        op,
        offset,
        len,
        queue: 0,
        flags: Flags::NONE,
        arrival: now,
    };
    dev.submit(now, rq).unwrap();
    dev.run_to_idle().unwrap()[0].2
}

/// The error model reads each block's own wear on the back ends that keep their blocks: with
/// errors that come from wear alone, reads of worn blocks retry and reads of fresh ones do not.
#[test]
fn worn_blocks_read_worse_than_fresh_ones_on_block_mapped_and_zoned_drives() {
    // The raw bit-error rate is 1e-2 × (erases ÷ 100): 0 fresh, 5e-3 after 50 erases, against
    // ECC of 4 bits per 1 KiB (a mean of 41 errors a codeword fails every first decode).
    let wear_only = [
        "reliability.pe_limit=100",
        "reliability.rber_fresh=0.0",
        "reliability.rber_wear=1e-2",
        "reliability.wear_exponent=1.0",
        "reliability.ecc_correctable_bits=4",
    ];
    let zone = 8u64 << 20;
    let mut dev = Device::new(&zoned(&wear_only), 1).unwrap();
    for _ in 0..50 {
        assert_eq!(one(&mut dev, Op::Write, 0, 1 << 20), Status::Ok);
        assert_eq!(one(&mut dev, Op::ZoneReset, 0, 0), Status::Ok);
    }
    one(&mut dev, Op::Write, 0, 1 << 20);
    one(&mut dev, Op::Write, zone, 1 << 20);
    let retried = |dev: &Device| dev.backend().nand().unwrap().fil.counters.reads_retried;
    for i in 0..32u64 {
        assert_eq!(one(&mut dev, Op::Read, zone + i * 16384, 4096), Status::Ok);
    }
    assert_eq!(retried(&dev), 0, "zone 1 is fresh");
    for i in 0..32u64 {
        assert_eq!(one(&mut dev, Op::Read, i * 16384, 4096), Status::Ok);
    }
    assert_eq!(retried(&dev), 32, "zone 0's blocks were erased 50 times");

    for (kind, logs) in BLOCK_MAPPED {
        let mut dev = Device::new(&block_mapped(kind, logs, &wear_only), 1).unwrap();
        let page = 16384u64;
        // Logical block 1 (plane 1) is written once; pages of logical block 0 (plane 0) again
        // and again, so merges erase plane 0's blocks.
        one(&mut dev, Op::Write, 256 * page, 256 * page);
        for round in 0..2000u64 {
            one(&mut dev, Op::Write, (round * 7 % 256) * page, page);
        }
        let pu = dev.percentage_used().unwrap();
        assert!(pu > 0.0, "{kind}");
        let before = retried(&dev);
        for i in 0..16u64 {
            assert_eq!(one(&mut dev, Op::Read, (256 + i) * page, page), Status::Ok);
        }
        assert_eq!(
            retried(&dev),
            before,
            "{kind}: logical block 1's block is fresh"
        );
        let erases = dev
            .backend()
            .block_mapped()
            .unwrap()
            .ftl
            .erase_counts()
            .to_vec();
        let worn = (0..256u64)
            .filter(|&l| {
                let pun = dev.backend().block_mapped().unwrap().ftl.lookup(l).unwrap();
                // At 10 erases the rate is 1e-3: 8.2 errors a codeword on average, and one of
                // a page's 16 codewords fails its first decode all but surely.
                erases[(pun / 256) as usize] >= 10
            })
            .count() as u64;
        for l in 0..256u64 {
            assert_eq!(
                one(&mut dev, Op::Read, l * page, page),
                Status::Ok,
                "{kind}"
            );
        }
        assert!(worn > 0, "{kind}: no page on a worn block");
        assert!(
            retried(&dev) - before >= worn,
            "{kind}: {} of {worn}",
            retried(&dev) - before
        );
    }
}

const SEQ_READS: &str = r#"{"name":"r","rw":"read","bs":"4KiB","iodepth":1,"io_count":2000}"#;

/// Read-ahead (`controller.read_ahead`) on a drive whose reads need retries: a page sensed
/// ahead decodes through the error model with the retries its block's wear asks for, as a host
/// read's page does, so every page sensed (read ahead or not) is retried as often; the host's
/// reads that then find it in the register have paid them. The same seed gives the same result.
#[test]
fn pages_read_ahead_retry_as_normal_reads_do() {
    let weak = [
        "reliability.ecc_correctable_bits=4",
        "reliability.rber_fresh=1e-3",
    ];
    let ra = |extra: &[&str]| {
        let mut o: Vec<&str> = weak.to_vec();
        o.extend(extra);
        run(&o, SEQ_READS)
    };
    let plain = run(&weak, SEQ_READS);
    let ahead = ra(&["controller.read_ahead=\"64KiB\""]);
    let (p, a) = (
        plain.reliability.as_ref().unwrap(),
        ahead.reliability.as_ref().unwrap(),
    );
    let pages_ahead = ahead.device.read_ahead_pages.unwrap();
    // 2,000 reads of 4 KiB cover 500 pages of 16 KiB.
    assert!(pages_ahead > 400, "{pages_ahead} pages read ahead");
    // Without read-ahead every sensed page is retried (nearly all: 8 halvings of the RBER)...
    let share = |r: &ssdlab::stats::result::RunResult| {
        let rel = r.reliability.as_ref().unwrap();
        rel.reads_retried as f64 / r.device.nand_pages_read as f64
    };
    assert!(share(&plain) > 0.95, "{p:?}");
    // ... and with it the same share, the pages read ahead among them.
    assert!(
        (share(&ahead) - share(&plain)).abs() < 0.03,
        "retried {} of {} pages sensed ({pages_ahead} ahead), against {} of {}",
        a.reads_retried,
        ahead.device.nand_pages_read,
        p.reads_retried,
        plain.device.nand_pages_read
    );
    assert!(a.reads_retried > pages_ahead, "{a:?}");
    let steps = |r: &ssdlab::stats::result::ReliabilityResult| {
        r.read_retry_steps as f64 / r.reads_retried as f64
    };
    assert!((steps(a) - steps(p)).abs() < 0.1 * steps(p), "{a:?} {p:?}");
    assert_eq!((a.uncorrectable_reads, a.failed_reads), (0, 0));
    // The same seed, the same run.
    let again = ra(&["controller.read_ahead=\"64KiB\""]);
    assert_eq!(
        serde_json::to_string(&again.device).unwrap(),
        serde_json::to_string(&ahead.device).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&again.reliability).unwrap(),
        serde_json::to_string(&ahead.reliability).unwrap()
    );
    assert_eq!(
        again.ops["read"].latency_us.mean,
        ahead.ops["read"].latency_us.mean
    );

    // A page read ahead that does not decode fails no command: the host's read of it senses
    // again and fails on its own, and only the host's reads count as uncorrectable.
    let lost = ra(&[
        "reliability.rber_fresh=1e-2",
        "reliability.read_retry_max=2",
        "controller.read_ahead=\"64KiB\"",
    ]);
    let l = lost.reliability.as_ref().unwrap();
    let pages_ahead = lost.device.read_ahead_pages.unwrap();
    assert!(pages_ahead > 400, "{pages_ahead} pages read ahead");
    assert_eq!((l.uncorrectable_reads, l.failed_reads), (2000, 2000));
    assert_eq!(l.reads_retried, 2000 + pages_ahead, "{l:?}");
}
