//! The trace module's tests, by what they check: `readers.rs` (each format's reader on
//! hand-written fixtures and the shared public samples, detection, compressed files, errors),
//! `replays.rs` (a replay's layout, filters, refusals and what its result reports),
//! `models.rs` (the workload models: round trip, determinism, the published ratios),
//! `props.rs` (property tests: no bytes make a reader panic, writers and readers agree); the
//! statistics of `trace stats` here, with the fixtures and readers they all use.

mod models;
mod props;
mod readers;
mod replays;

use super::stats::{StatsOptions, TraceStats};
use super::*;
use std::io::Cursor;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The public samples beside the repository (`../shared/traces`), if they are there.
fn shared(name: &str) -> Option<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(name);
    if p.exists() {
        Some(p.to_string_lossy().into_owned())
    } else {
        eprintln!("skipped: {} is not there", p.display());
        None
    }
}

fn read_all(path: &str, opts: &ReadOptions) -> Result<(Format, Vec<TraceRecord>)> {
    let mut r = TraceReader::open(path, opts)?;
    let mut v = Vec::new();
    while let Some(rec) = r.next_record()? {
        v.push(rec);
    }
    Ok((r.format(), v))
}

fn bytes_reader(bytes: Vec<u8>, opts: &ReadOptions) -> Result<Vec<TraceRecord>> {
    let mut r = TraceReader::from_reader("mem", Box::new(Cursor::new(bytes)), opts)?;
    let mut v = Vec::new();
    while let Some(rec) = r.next_record()? {
        v.push(rec);
    }
    Ok(v)
}

/// A DiskSim/MQSim ASCII trace in `dir`: one 4 KiB read per time (ns), at consecutive
/// offsets. Returns its path.
fn disksim_trace(dir: &std::path::Path, name: &str, times_ns: &[u64]) -> String {
    let path = dir.join(name);
    let mut text = String::new();
    for (i, t) in times_ns.iter().enumerate() {
        text.push_str(&format!("{t} 0 {} 8 1\n", i * 8));
    }
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn rec(time_ps: u64, op: TraceOp, offset: u64, len: u64, device: u32) -> TraceRecord {
    TraceRecord {
        time_ps,
        op,
        offset,
        len,
        device,
        directive: super::Directive::None,
        all_zones: false,
    }
}

/// The address-over-time sample keeps between N and 2N requests evenly spread (one in
/// `every`, from the first), in order, with times from the first request; none unless asked.
#[test]
fn stats_sample_requests_evenly_for_an_address_over_time_picture() {
    let opts = StatsOptions {
        sample_points: 100,
        ..Default::default()
    };
    let mut s = TraceStats::new(opts);
    for i in 0..1000u64 {
        let op = if i.is_multiple_of(3) {
            TraceOp::Write
        } else {
            TraceOp::Read
        };
        s.add(&rec(5_000_000 + i * 1_000_000, op, i * 4096, 4096, 0));
    }
    let m = s.summary().sample.expect("asked for");
    assert!((100..200).contains(&m.time_s.len()), "{}", m.time_s.len());
    assert_eq!(m.every, 8);
    assert_eq!(m.time_s.len(), m.offset_bytes.len());
    assert_eq!(m.op.len(), m.offset_bytes.len());
    for (k, &off) in m.offset_bytes.iter().enumerate() {
        let i = k as u64 * m.every;
        assert_eq!(off, i * 4096);
        assert!(
            (m.time_s[k] - i as f64 * 1e-6).abs() < 1e-12,
            "{}",
            m.time_s[k]
        );
        assert_eq!(m.op[k], if i.is_multiple_of(3) { "write" } else { "read" });
    }
    let mut plain = TraceStats::new(StatsOptions::default());
    plain.add(&rec(0, TraceOp::Read, 0, 4096, 0));
    assert!(plain.summary().sample.is_none());
}

#[test]
fn stats_count_ratios_ird_and_overwrites() {
    let mut s = TraceStats::new(StatsOptions::default());
    // Two sequential writes, an overwrite of the first, a read far away, 1 ms apart.
    for (i, (op, off, len)) in [
        (TraceOp::Write, 0u64, 4096u64),
        (TraceOp::Write, 4096, 4096),
        (TraceOp::Write, 0, 8192),
        (TraceOp::Read, 1 << 30, 16384),
    ]
    .into_iter()
    .enumerate()
    {
        s.add(&rec(i as u64 * 1_000_000_000, op, off, len, 0));
    }
    let m = s.summary();
    assert_eq!((m.reads, m.writes), (1, 3));
    assert_eq!(m.read_ratio_by_count, 0.25);
    assert_eq!(m.read_ratio_by_bytes, 16384.0 / (16384.0 + 16384.0));
    assert_eq!(m.write.mean_bytes, 16384.0 / 3.0);
    assert_eq!(m.sequential.runs, 3);
    assert_eq!(m.ird.pairs, 3);
    assert!((m.ird.sequential_fraction - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(m.overwrite.overwritten_bytes, 8192);
    assert_eq!(m.overwrite.overwrite_ratio, 0.5);
    assert_eq!(m.footprint.bytes, 8192 + 16384);
    assert!((m.time.inter_arrival_us.mean - 1000.0).abs() < 1e-9);
    assert!((m.time.inter_arrival_us.p50 - 1000.0).abs() < 1.0);
}

#[test]
fn trace_stats_of_a_device_not_in_the_trace_is_refused() {
    let err = stats::of_source(
        &fixture("umass_spc.csv"),
        &ReadOptions::default(),
        &StatsOptions::default(),
        &[99],
        1,
        &mut |_| true,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("field `devices` (--device): got 99") && err.contains("device(s) 0, 1, 2"),
        "{err}"
    );
}
