//! Endurance and errors (`[reliability]`): blocks retire at their P/E limit until the drive
//! turns read-only without losing an acknowledged write; weak ECC makes reads retry and fail;
//! factory bad blocks; and nothing changes without the section.

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
    let units = dev.capacity_bytes() / UNIT;
    let mut d = WearOut {
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
    };
    d.issue(&mut dev, SimTime::ZERO);
    dev.run(&mut d, u64::MAX, &mut |_, _| true).unwrap();

    assert!(
        d.read_only,
        "never turned read-only after {} writes",
        d.writes_sent
    );
    assert!(d.other_failures.is_empty(), "{:?}", &d.other_failures[..1]);
    let w = dev.ftl().wear.clone().unwrap();
    assert!(w.read_only);
    assert!(w.retired_blocks > 0);
    assert!(
        w.good_blocks < (dev.ftl().blocks().len() as u64 + w.min_good_blocks) / 2,
        "read-only with most of the spare still good: {w:?}"
    );
    // Every acknowledged unit is still mapped, and its read found the latest version.
    assert_eq!(d.reads_ok, d.acked.len() as u64);
    for &lpn in &d.acked {
        assert!(dev.ftl().lookup(lpn).is_some(), "unit {lpn} lost its data");
    }
    let check = dev.check().unwrap();
    assert_eq!(check.first_error, None);
    assert_eq!(check.reads, d.acked.len() as u64);
    dev.ftl().check().unwrap();
    // No block went past its limit.
    assert!(dev.ftl().blocks().iter().all(|b| b.erase_count <= 4));
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
