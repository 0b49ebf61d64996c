//! Readers on hand-written fixtures and the shared public samples, detection, errors, writers
//! read back, statistics, the mapping of a replay, and property tests: no byte sequence makes
//! any reader panic, and what a writer writes reads back the same.

use super::stats::{StatsOptions, TraceStats};
use super::write::TraceWriter;
use super::*;
use proptest::prelude::*;
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

#[test]
fn blkparse_takes_d_or_q_events_and_ignores_the_summary() {
    let (fmt, d) = read_all(&fixture("blkparse.txt"), &ReadOptions::default()).unwrap();
    assert_eq!(fmt, Format::Blkparse);
    let sda = formats::blk_device(8, 0).unwrap();
    let sdb = formats::blk_device(8, 16).unwrap();
    let ops: Vec<(TraceOp, u64, u64, u32)> = d
        .iter()
        .map(|r| (r.op, r.offset, r.len, r.device))
        .collect();
    assert_eq!(
        ops,
        vec![
            (TraceOp::Write, 2048 * 512, 4096, sda),
            (TraceOp::Read, 4096 * 512, 8192, sda),
            (TraceOp::Trim, 8192 * 512, 256 * 512, sda),
            (TraceOp::Flush, 0, 0, sda),
            (TraceOp::Read, 100 * 512, 4096, sdb),
            (TraceOp::Write, 2056 * 512, 3 * 512, sda),
        ]
    );
    assert_eq!(d[1].time_ps, 302_500_000 - 4_500_000);
    let q = ReadOptions {
        blkparse_event: BlkEvent::Q,
        ..Default::default()
    };
    let (_, q) = read_all(&fixture("blkparse.txt"), &q).unwrap();
    assert_eq!(q.len(), 6);
    assert_eq!(q[3].op, TraceOp::Flush, "Q FWS without data is a flush");
    assert_eq!(q[0].time_ps, 0);
}

/// Real blkparse output, as it comes (issue 15, defect 5): a byte-order mark, pass-through
/// commands (`D N 0 (12 00 ..)`), a data pass-through (`D R 512 (28 ..)`), a note (`m N`), a
/// timer unplug (`UT`), then the per-CPU summary. Read without `skip_bad_lines`.
#[test]
fn blkparse_reads_real_output_with_pass_through_events_and_a_summary() {
    let path = fixture("blkparse_real.txt");
    let mut r = TraceReader::open(&path, &ReadOptions::default()).unwrap();
    assert_eq!(r.format(), Format::Blkparse);
    let mut d = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        d.push(rec);
    }
    let sda = formats::blk_device(8, 0).unwrap();
    let got: Vec<(u64, TraceOp, u64, u64)> = d
        .iter()
        .map(|r| (r.time_ps, r.op, r.offset, r.len))
        .collect();
    // Time 0 is the first D request (1.006200 ms); the pass-through ones before it are not.
    assert_eq!(
        got,
        vec![
            (0, TraceOp::Write, 1_953_024 * 512, 4096),
            (194_800_000, TraceOp::Flush, 0, 0),
            (994_700_000, TraceOp::Read, 409_600 * 512, 64 * 512),
            (1_494_800_000, TraceOp::Read, 409_664 * 512, 256 * 512),
        ]
    );
    assert!(d.iter().all(|r| r.device == sda));
    // 21 event lines, 4 of them requests; the first summary line ends the reading.
    assert_eq!(r.lines(), 22);
    assert_eq!(r.not_request_lines(), 18);
    assert_eq!(r.skipped_lines(), 0);
    assert_eq!(r.blkparse_events(), (8, 4));
    // A second call after the end stays at the end.
    assert_eq!(r.next_record().unwrap(), None);
    assert_eq!(r.not_request_lines(), 18);
    let q = ReadOptions {
        blkparse_event: BlkEvent::Q,
        ..Default::default()
    };
    let (_, q) = read_all(&path, &q).unwrap();
    let ops: Vec<TraceOp> = q.iter().map(|r| r.op).collect();
    assert_eq!(
        ops,
        vec![TraceOp::Write, TraceOp::Flush, TraceOp::Read, TraceOp::Read]
    );
    // A replay reports what it skipped.
    let j = replay::TraceJob::from_json(&format!(r#"{{"trace": {path:?}}}"#)).unwrap();
    let r = replay::Replay::new(&j, 1 << 30, 1).unwrap();
    assert_eq!((r.per_pass, r.out.not_request_lines), (4, 18));
    assert_eq!(r.out.skipped_bad_lines, 0);
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_line_in_any_format() {
    let bom = |text: &str| {
        let mut v = vec![0xef, 0xbb, 0xbf];
        v.extend_from_slice(text.as_bytes());
        v
    };
    let cases: [(&str, Format); 5] = [
        ("128166372003061629,hm,0,Read,4096,512,100\n", Format::Msr),
        ("0,303567,3584,w,0.000000\n", Format::Spc),
        ("10 0 8 8 1\n", Format::Disksim),
        ("1,16,8,1,7\n", Format::Tencent),
        (
            "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x read 0 4096\n",
            Format::Fio,
        ),
    ];
    for (text, fmt) in cases {
        let plain = bytes_reader(text.as_bytes().to_vec(), &ReadOptions::default()).unwrap();
        let opts = ReadOptions::default();
        let mut r = TraceReader::from_reader("mem", Box::new(Cursor::new(bom(text))), &opts)
            .unwrap_or_else(|e| panic!("{fmt:?}: {e}"));
        assert_eq!(r.format(), fmt);
        let mut got = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            got.push(rec);
        }
        assert_eq!(got, plain, "{fmt:?}");
        // Named, not detected, too.
        let named = ReadOptions {
            format: Some(fmt),
            ..Default::default()
        };
        assert_eq!(bytes_reader(bom(text), &named).unwrap(), plain, "{fmt:?}");
    }
}

#[test]
fn spc_reads_asus_blocks_and_seconds() {
    let (fmt, d) = read_all(&fixture("umass_spc.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(fmt, Format::Spc);
    assert_eq!(d.len(), 7);
    assert_eq!(d[0], rec(0, TraceOp::Write, 1000 * 512, 4096, 0));
    assert_eq!(d[2], rec(1_250_000_000, TraceOp::Read, 1000 * 512, 8192, 1));
    assert_eq!(d[5].len, 1000, "unaligned sizes are read as they are");
    assert_eq!(d[6].time_ps, 30_001_000_000);
}

#[test]
fn alibaba_msr_tencent_disksim_fio() {
    let (fmt, d) = read_all(&fixture("alibaba.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(fmt, Format::Alibaba);
    assert_eq!(d.len(), 5);
    assert_eq!(d[1], rec(100_000_000, TraceOp::Read, 1_052_672, 8192, 3));

    let (fmt, d) = read_all(&fixture("msr.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(fmt, Format::Msr);
    assert_eq!(d[1], rec(10_000 * 100_000, TraceOp::Read, 8192, 4096, 1));

    let (fmt, d) = read_all(&fixture("tencent.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(fmt, Format::Tencent);
    // Time 0 is the earliest of the first lines (the 4th line), not the first line.
    assert_eq!(d[0].time_ps, 1_000_000_000_000);
    assert_eq!(d[2], rec(2_000_000_000_000, TraceOp::Read, 0, 65536, 23));
    assert_eq!(d[3].time_ps, 0);
    // Beyond the first lines, an earlier time than time 0 is read as 0, and counted.
    let mut text = std::fs::read(fixture("tencent.csv")).unwrap();
    for _ in 0..20 {
        text.extend_from_slice(b"1540000003,0,8,0,17\n");
    }
    text.extend_from_slice(b"1539999990,0,8,0,17\n");
    let mut r =
        TraceReader::from_reader("mem", Box::new(Cursor::new(text)), &ReadOptions::default())
            .unwrap();
    let mut last = None;
    while let Some(x) = r.next_record().unwrap() {
        last = Some(x);
    }
    assert_eq!((last.unwrap().time_ps, r.early()), (0, 1));

    let (fmt, d) = read_all(&fixture("disksim_mixed_ws.trace"), &ReadOptions::default()).unwrap();
    assert_eq!(fmt, Format::Disksim);
    assert_eq!(d.len(), 4);
    assert_eq!(d[1], rec(1_500_000, TraceOp::Write, 2056 * 512, 4096, 0));
    assert_eq!(d[3], rec(4_500_500, TraceOp::Read, 16 * 512, 16 * 512, 1));

    let (fmt, d) = read_all(&fixture("fio_v2.log"), &ReadOptions::default()).unwrap();
    assert_eq!(fmt, Format::Fio);
    let ops: Vec<TraceOp> = d.iter().map(|r| r.op).collect();
    use TraceOp::*;
    assert_eq!(ops, vec![Write, Write, Read, Trim, Flush]);
    assert_eq!(d[2].time_ps, 1_000_000_000, "a wait of 1000 µs");

    let (_, d) = read_all(&fixture("fio_v3.log"), &ReadOptions::default()).unwrap();
    assert_eq!(d.len(), 5);
    assert_eq!(d[2], rec(30_000_000, Read, 1 << 20, 4096, 1));
    assert_eq!(d[3].op, Flush);
}

#[test]
fn compressed_files_read_the_same() {
    use std::io::Write;
    let plain = std::fs::read(fixture("umass_spc.csv")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    let a = bytes_reader(plain, &ReadOptions::default()).unwrap();
    let b = bytes_reader(gz.finish().unwrap(), &ReadOptions::default()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn a_bad_line_names_file_line_text_and_expectation() {
    let text = b"0,1000,4096,w,0.0\n0,1008,4096,x,0.1\n".to_vec();
    let opts = ReadOptions {
        format: Some(Format::Spc),
        ..Default::default()
    };
    let err = bytes_reader(text.clone(), &opts).unwrap_err();
    let e = err.to_string();
    assert_eq!(
        e,
        "mem, line 2, field `Opcode`: got \"x\", expected r or w \
         (spc trace: ASU,LBA,Size,Opcode,Timestamp[,...]); the line: \"0,1008,4096,x,0.1\""
    );
    assert!(matches!(err, Error::Trace(_)));
    let skip = ReadOptions {
        skip_bad_lines: true,
        ..opts
    };
    let mut r = TraceReader::from_reader("mem", Box::new(Cursor::new(text)), &skip).unwrap();
    let mut n = 0;
    while r.next_record().unwrap().is_some() {
        n += 1;
    }
    assert_eq!((n, r.skipped_lines()), (1, 1));
    assert!(r.bad_lines()[0].contains("line 2"));
}

/// A malformed line of each format: its error carries the file and line as the origin, and the
/// field, the value and the expectation as data (the Python exception's attributes).
#[test]
fn a_bad_line_of_each_format_has_its_parts() {
    // (format, text, field, value, the expectation's start)
    type Case = (
        Format,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
        &'static str,
    );
    let cases: [Case; 13] = [
        (Format::Msr, "1,h,0,Read,0,512,1\n2,h,0,Erase,0,512,1\n", Some("Type"), Some("\"Erase\""), "Read or Write"),
        (Format::Msr, "1,h,0,Read,0,512,1\n2,h,0,Read,0\n", None, Some("5 fields"), "7 fields Timestamp,"),
        (Format::Spc, "0,1,4096,r,0.0\n0,x,4096,r,0.1\n", Some("LBA"), Some("\"x\""), "a block number (integer, 512-byte blocks)"),
        (Format::Disksim, "0 0 8 8 1\n10 0 8 -8 1\n", Some("size_sectors"), Some("\"-8\""), "a sector count (integer)"),
        (Format::Blkparse, "8,0 3 1 0.1 697 D W 8 + 8 [fio]\n8,0 3 2 0.2 697 D W 8 + y [fio]\n", Some("blocks"), Some("\"y\""), "a count of 512-byte blocks (integer)"),
        (Format::Blkparse, "8,0 3 1 0.1 697 D W 8 + 8 [fio]\n8,0 3 2 0.2 697 D\n", Some("RWBS"), None, "flags from R, W"),
        (Format::Tencent, "1,0,8,1,7\n2,0,8,5,7\n", Some("IOType"), Some("\"5\""), "0 (read) or 1 (write)"),
        (Format::Alibaba, "1,R,0,4096,10\n1,R,0,4096,soon\n", Some("timestamp"), Some("\"soon\""), "microseconds (a non-negative number)"),
        (Format::Fio, "fio version 2 iolog\nf add\nf read 0 x\n", Some("length"), Some("\"x\""), "a length in bytes (integer)"),
        (Format::Fio, "fio version 9 iolog\n", None, Some("\"fio version 9 iolog\""), "the header \"fio version 2 iolog\""),
        (Format::Fio, "fio version 3 iolog\n1 f add\n2 f erase 0 8\n", Some("action"), Some("\"erase\""), "read, write, trim, sync or datasync"),
        (Format::Nvme, "a-1 [000] ..... 1.5: nvme_setup_cmd: nvme0: disk=nvme0n1, qid=1, cmdid=1, nsid=1, flags=0x0, meta=0x0, cmd=(nvme_cmd_write slba=q, len=0, ctrl=0x0, dsmgmt=0, reftag=0)\n", Some("slba"), Some("\"q\""), "a starting LBA (integer)"),
        (Format::Nvme, "a-1 [000] ..... 1.5: nvme_setup_cmd: nvme0: disk=nvme0n1, qid=1, cmdid=1, nsid=1, flags=0x0, meta=0x0, cmd=(nvme_cmd_zone_mgmt_send slba=0, zsa=4)\n", Some("all"), None, "the Select All bit, 0 or 1"),
    ];
    for (format, text, field, value, expected) in cases {
        let opts = ReadOptions {
            format: Some(format),
            ..Default::default()
        };
        let err = bytes_reader(text.as_bytes().to_vec(), &opts).unwrap_err();
        let lines = text.lines().count();
        let i = err
            .invalid()
            .unwrap_or_else(|| panic!("{format:?}: no parts in {err}"));
        assert!(matches!(err, Error::Trace(_)), "{err}");
        assert_eq!(i.origin, format!("mem, line {lines}"), "{err}");
        assert_eq!(i.field.as_deref(), field, "{err}");
        assert_eq!(i.value.as_deref(), value, "{err}");
        assert!(
            i.expected
                .as_deref()
                .is_some_and(|e| e.starts_with(expected)),
            "{format:?}: {err}"
        );
        // The message reads as before: the parts, then the format and the line.
        let msg = err.to_string();
        assert!(msg.starts_with(&i.origin), "{msg}");
        assert!(
            msg.contains(&format!("({} trace: ", format.name())),
            "{msg}"
        );
        let last = text.lines().last().unwrap();
        assert!(msg.ends_with(&format!("the line: {last:?}")), "{msg}");
    }
}

#[test]
fn unknown_content_is_a_clear_error() {
    let e = bytes_reader(b"hello world\n".to_vec(), &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot tell the trace format") && e.contains("--format"),
        "{e}"
    );
    let e = bytes_reader(Vec::new(), &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn shared_samples_are_detected_and_read_whole() {
    for (name, format, lines) in [
        ("msr_hm0_sample.csv", Format::Msr, 1000),
        ("tencent_cbs_sample.csv", Format::Tencent, 50_000),
        // 24,782 newlines, and a last line without one.
        ("disksim_websearch_small.trace", Format::Disksim, 24_783),
        ("disksim_tpcc_small.trace", Format::Disksim, 6_999),
        ("ssdsim_financial1_sample.ascii", Format::Disksim, 10_000),
    ] {
        let Some(path) = shared(name) else { continue };
        let (fmt, d) = read_all(&path, &ReadOptions::default()).unwrap();
        assert_eq!(fmt, format, "{name}");
        assert_eq!(d.len(), lines, "{name}");
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
fn a_replay_lays_devices_side_by_side_and_wraps() {
    use replay::{Fit, Layout, Replay, TraceJob};
    let job = |layout: Layout, fit: Fit| TraceJob {
        layout,
        fit,
        ..TraceJob::from_json(&format!(r#"{{"trace": {:?}}}"#, fixture("umass_spc.csv"))).unwrap()
    };
    let mut r = Replay::new(&job(Layout::Auto, Fit::Wrap), 1 << 30, 1).unwrap();
    assert_eq!(r.out.mapping.layout, "side-by-side");
    // ASU 0 ends at 2.5 MiB (3 MiB rounded), ASUs 1 and 2 within 1 MiB.
    assert_eq!(r.out.mapping.span_bytes, 5 << 20);
    assert!(!r.out.mapping.applied);
    let mut got = Vec::new();
    while let Some(q) = r.next_request().unwrap() {
        got.push((q.offset, q.len));
    }
    assert_eq!(
        got[2],
        ((3 << 20) + 1000 * 512, 8192),
        "ASU 1 starts at 3 MiB"
    );
    assert_eq!(
        got[5],
        ((4 << 20) + 7 * 512, 1024),
        "widened to whole sectors"
    );
    assert_eq!(r.out.unaligned, 1);
    // The same on a 2 MiB device: wrapped; scaled; refused.
    let mut r = Replay::new(&job(Layout::Auto, Fit::Wrap), 2 << 20, 1).unwrap();
    assert!(r.out.mapping.applied);
    while let Some(q) = r.next_request().unwrap() {
        assert!(q.offset + q.len <= 2 << 20);
    }
    assert!(r.out.mapping.moved > 0);
    let mut r = Replay::new(&job(Layout::Overlay, Fit::Scale), 2 << 20, 1).unwrap();
    while let Some(q) = r.next_request().unwrap() {
        assert!(q.offset + q.len <= 2 << 20);
    }
    let e = Replay::new(&job(Layout::Auto, Fit::None), 2 << 20, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("more than the device"), "{e}");
}

#[test]
fn a_replay_filters_devices_windows_and_repeats() {
    use replay::{Replay, TraceJob};
    let mut j = TraceJob::from_json(&format!(
        r#"{{"trace": {:?}, "devices": ["0"], "repeat": 2}}"#,
        fixture("umass_spc.csv")
    ))
    .unwrap();
    let mut r = Replay::new(&j, 1 << 30, 1).unwrap();
    assert_eq!((r.per_pass, r.out.filtered_device), (3, 4));
    let mut times = Vec::new();
    while let Some(q) = r.next_request().unwrap() {
        times.push(q.arrival.ps());
    }
    assert_eq!(times.len(), 6);
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    // Pass 2 starts one mean gap (15 ms) after pass 1's last arrival (30.001 ms).
    assert_eq!(times[3], 30_001_000_000 + 15_000_500_000);
    j.devices.clear();
    j.repeat = 1;
    j.start = Some(crate::config::Dur(crate::sim::SimTime(2_000_000_000)));
    j.stop = Some(crate::config::Dur(crate::sim::SimTime(25_000_000_000)));
    let r = Replay::new(&j, 1 << 30, 1).unwrap();
    assert_eq!((r.per_pass, r.out.filtered_window), (3, 3));
}

#[test]
fn model_round_trip_recovers_its_parameters() {
    // Generate a stand-in, then measure it: the knobs come back within stated tolerances.
    // 200,000 requests on 64 MiB: every block is touched (so the hot set can be measured) and
    // the fresh writes (10 % of ~350 MB) still fit in the footprint.
    let p = model::parse_spec(
        "financial1,count=200000,footprint=64MiB,overwrite=0.9,hot_fraction=0.2,seq_run=3",
    )
    .unwrap();
    let want = p.clone();
    let mut g = model::Generator::new(p, 5);
    let mut s = TraceStats::new(StatsOptions::default());
    while let Some(r) = g.next_record() {
        s.add(&r);
    }
    let m = s.summary();
    let close = |got: f64, want: f64, tol: f64, what: &str| {
        assert!(
            (got - want).abs() <= tol,
            "{what}: got {got}, want {want} ± {tol}"
        );
    };
    close(
        m.read_ratio_by_count,
        want.read_fraction,
        0.01,
        "read fraction",
    );
    close(
        m.read.mean_bytes / want.read_size.mean(),
        1.0,
        0.03,
        "mean read size",
    );
    close(
        m.write.mean_bytes / want.write_size.mean(),
        1.0,
        0.03,
        "mean write size",
    );
    close(
        m.overwrite.overwrite_ratio,
        want.overwrite_ratio,
        0.02,
        "overwrite ratio",
    );
    close(
        m.sequential.mean_run_requests / want.seq_run_requests,
        1.0,
        0.05,
        "run length",
    );
    close(
        m.hot_set.fraction_for_80pct,
        want.hot_fraction,
        0.05,
        "hot fraction",
    );
    close(m.time.iops / want.iops, 1.0, 0.02, "arrival rate");
}

#[test]
fn models_are_deterministic() {
    let run = || {
        let mut g = model::Generator::new(model::parse_spec("msnfs,count=2000").unwrap(), 9);
        std::iter::from_fn(|| g.next_record()).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

fn arb_record() -> impl Strategy<Value = TraceRecord> {
    (
        0u64..1 << 40,
        prop_oneof![Just(TraceOp::Read), Just(TraceOp::Write)],
        0u64..1 << 30,
        1u64..256,
        0u32..4,
    )
        .prop_map(|(t, op, sector, sectors, device)| {
            rec(t, op, sector * 512, sectors * 512, device)
        })
}

/// Any request an NVMe trace can hold: every op, directives on writes and appends, Select All.
fn arb_nvme_record() -> impl Strategy<Value = TraceRecord> {
    (
        (
            0u64..1 << 40,
            0usize..TraceOp::ALL.len(),
            0u64..1 << 30,
            1u64..256,
        ),
        (0u32..4, 0u8..3, any::<u16>(), any::<bool>()),
    )
        .prop_map(|((t, k, sector, sectors), (device, d, id, all))| {
            let op = TraceOp::ALL[k];
            let mut r = rec(t, op, sector * 512, sectors * 512, device);
            if op.has_no_extent() {
                r.len = 0;
                r.all_zones = all && op != TraceOp::Flush;
                if r.all_zones || op == TraceOp::Flush {
                    r.offset = 0;
                }
            }
            if matches!(op, TraceOp::Write | TraceOp::Append) {
                r.directive = match d {
                    0 => super::Directive::None,
                    1 => super::Directive::Stream(id),
                    _ => super::Directive::Placement(id),
                };
            }
            r
        })
}

fn sorted(mut v: Vec<TraceRecord>) -> Vec<TraceRecord> {
    v.sort_by_key(|r| r.time_ps);
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every reader, forced or detected, on any bytes: an error or records, never a panic.
    #[test]
    fn no_bytes_make_a_reader_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600),
                                    skip in any::<bool>()) {
        for format in std::iter::once(None).chain(Format::DETECT_ORDER.map(Some)) {
            let opts = ReadOptions { format, skip_bad_lines: skip, ..Default::default() };
            let _ = bytes_reader(bytes.clone(), &opts);
        }
    }

    /// Lines that look almost right (fields of digits, letters and separators) for every format.
    #[test]
    fn near_miss_lines_never_panic(lines in proptest::collection::vec(
        "[0-9a-zA-Z,.+:\\[\\] \\t-]{0,60}", 1..20)) {
        let mut text = String::from("fio version 3 iolog\n");
        for l in &lines { text.push_str(l); text.push('\n'); }
        for format in Format::DETECT_ORDER {
            for skip in [false, true] {
                let opts = ReadOptions { format: Some(format), skip_bad_lines: skip, ..Default::default() };
                let _ = bytes_reader(text.clone().into_bytes(), &opts);
            }
        }
    }

    /// The nvme writer and reader agree on every op, directive and Select All.
    #[test]
    fn nvme_writer_and_reader_agree(recs in proptest::collection::vec(arb_nvme_record(), 1..40)) {
        let recs = sorted(recs);
        let mut w = TraceWriter::new(Vec::new(), Format::Nvme);
        for r in &recs { prop_assert!(w.write(r).unwrap(), "{:?}", r); }
        let bytes = w.finish().unwrap();
        let got = bytes_reader(bytes, &ReadOptions { format: None, ..Default::default() }).unwrap();
        prop_assert_eq!(got.len(), recs.len());
        let first = recs[0].time_ps / 1_000_000 * 1_000_000;
        for (g, r) in got.iter().zip(&recs) {
            let mut want = *r;
            want.time_ps = r.time_ps / 1_000_000 * 1_000_000 - first;
            prop_assert_eq!(*g, want);
        }
    }

    /// Lines of a real-looking NVMe trace with a few bytes changed: an error or records.
    #[test]
    fn mutated_nvme_lines_never_panic(edits in proptest::collection::vec((0usize..4000, any::<u8>()), 1..12),
                                      lba in prop_oneof![Just(512u64), Just(65536)]) {
        let mut text = std::fs::read(fixture("nvme_fdp.txt")).unwrap();
        text.extend(std::fs::read(fixture("nvme_zns.txt")).unwrap());
        for (at, b) in edits {
            let n = text.len();
            text[at % n] = b;
        }
        for skip in [false, true] {
            let opts = ReadOptions { format: Some(Format::Nvme), skip_bad_lines: skip, lba_bytes: Some(lba), ..Default::default() };
            let _ = bytes_reader(text.clone(), &opts);
        }
    }

    /// What a writer writes, the reader reads back (times in the format's unit).
    #[test]
    fn writers_and_readers_agree(mut recs in proptest::collection::vec(arb_record(), 1..40)) {
        recs = sorted(recs);
        let t0 = recs[0].time_ps;
        for r in &mut recs { r.time_ps -= t0; }
        for (format, unit) in [(Format::Disksim, 1_000u64), (Format::Msr, 100_000), (Format::Alibaba, 1_000_000),
                               (Format::Spc, 1_000_000), (Format::Fio, 1_000_000), (Format::Blkparse, 1_000),
                               (Format::Nvme, 1_000_000)] {
            let mut w = TraceWriter::new(Vec::new(), format);
            for r in &recs { w.write(r).unwrap(); }
            let bytes = w.finish().unwrap();
            let got = bytes_reader(bytes, &ReadOptions { format: Some(format), ..Default::default() }).unwrap();
            prop_assert_eq!(got.len(), recs.len());
            let first = recs[0].time_ps / unit * unit;
            for (g, r) in got.iter().zip(&recs) {
                prop_assert_eq!((g.op, g.offset, g.len), (r.op, r.offset, r.len), "{:?}", format);
                prop_assert_eq!(g.time_ps, r.time_ps / unit * unit - first, "{:?}", format);
            }
        }
    }
}

#[test]
fn every_named_model_matches_its_published_ratio_and_sizes() {
    for m in model::MODELS {
        let mut p = (m.params)();
        p.count = 60_000;
        let want = p.clone();
        let mut g = model::Generator::new(p, 11);
        let mut s = TraceStats::new(StatsOptions::default());
        while let Some(r) = g.next_record() {
            s.add(&r);
        }
        let got = s.summary();
        let name = m.name;
        assert!(
            (got.read_ratio_by_count - want.read_fraction).abs() < 0.01,
            "{name}: read fraction {} vs {}",
            got.read_ratio_by_count,
            want.read_fraction
        );
        for (what, got, want, n) in [
            (
                "read size",
                got.read.mean_bytes,
                want.read_size.mean(),
                got.reads,
            ),
            (
                "write size",
                got.write.mean_bytes,
                want.write_size.mean(),
                got.writes,
            ),
        ] {
            // Fewer than 1,000 requests of a kind (web1's writes) say little about its mean.
            if n >= 1000 {
                assert!(
                    (got / want - 1.0).abs() < 0.05,
                    "{name}: {what} {got} vs {want}"
                );
            }
        }
        let run = got.sequential.mean_run_requests / want.seq_run_requests;
        assert!((run - 1.0).abs() < 0.1, "{name}: run length ratio {run}");
        let iops = got.time.iops / want.iops;
        assert!(
            (iops - 1.0).abs() < 0.03,
            "{name}: arrival rate ratio {iops}"
        );
    }
}

/// Filters that leave nothing are refused, naming the filter and what the trace holds (issue 15,
/// defect 11); before, each gave an all-zero replay.
#[test]
fn a_replay_whose_filters_select_nothing_is_refused() {
    use replay::{Replay, TraceJob};
    let job = |extra: &str, file: &str| {
        TraceJob::from_json(&format!(r#"{{"trace": {:?}{extra}}}"#, fixture(file))).unwrap()
    };
    let err = |j: &TraceJob| Replay::new(j, 1 << 30, 1).err().unwrap().to_string();
    let e = err(&job(r#", "devices": ["99"]"#, "umass_spc.csv"));
    assert!(e.contains("field `devices`") && e.contains("got 99"), "{e}");
    assert!(
        e.contains("expected one of the trace's device(s) 0, 1, 2"),
        "{e}"
    );
    let e = err(&job(r#", "start": "10s""#, "umass_spc.csv"));
    assert!(e.contains("field `start`") && e.contains("got 10 s"), "{e}");
    assert!(e.contains("span 0 s to 0.03"), "{e}");
    let e = err(&job(r#", "stop": "0s""#, "umass_spc.csv"));
    assert!(
        e.contains("field `stop`") && e.contains("first request (at 0 s)"),
        "{e}"
    );
    assert!(Replay::new(&job(r#", "devices": ["8:0"]"#, "blkparse.txt"), 1 << 30, 1).is_ok());
    let e = err(&job(r#", "devices": ["8:32"]"#, "blkparse.txt"));
    assert!(
        e.contains("got 8:32") && e.contains("device(s) 8:0, 8:16"),
        "{e}"
    );
    assert!(!e.contains('\n'), "one line: {e}");
}

#[test]
fn a_blkparse_replay_of_an_event_kind_not_in_the_file_is_refused() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-q-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("d_only.txt");
    std::fs::write(
        &path,
        "  8,0    1        1     0.000000000  4162  D  WS 2048 + 8 [fio]\n  \
         8,0    1        2     0.000100000  4162  D   R 4096 + 16 [fio]\n",
    )
    .unwrap();
    let j = TraceJob::from_json(&format!(
        r#"{{"trace": {:?}, "blkparse_event": "Q"}}"#,
        path.to_string_lossy()
    ))
    .unwrap();
    let e = Replay::new(&j, 1 << 30, 1).err().unwrap().to_string();
    assert!(
        e.contains("field `blkparse_event`") && e.contains("got Q"),
        "{e}"
    );
    assert!(e.contains("holds 2 D events"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A replay's `out_of_order` is the count `trace stats` gives for the same file, in either mode
/// (issue 15, defect 11: afap replays said 0 where stats said 3).
#[test]
fn a_replay_counts_out_of_order_requests_as_trace_stats_does() {
    use replay::{Replay, ReplayMode, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-ooo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Times 10, 50, 20, 30, 60, 40 µs: 20, 30 and 40 come after 50 or 60.
    let times: Vec<u64> = [10, 50, 20, 30, 60, 40].iter().map(|t| t * 1000).collect();
    let p = disksim_trace(&dir, "ooo.trace", &times);
    let st = stats::of_source(
        &p,
        &ReadOptions::default(),
        &StatsOptions::default(),
        &[],
        1,
        &mut |_| true,
    )
    .unwrap();
    assert_eq!(st.stats.time.out_of_order, 3);
    for mode in [ReplayMode::Timed, ReplayMode::Afap] {
        let mut j = TraceJob::from_json(&format!(r#"{{"trace": {p:?}}}"#)).unwrap();
        j.mode = mode;
        let mut r = Replay::new(&j, 1 << 30, 1).unwrap();
        while r.next_request().unwrap().is_some() {}
        assert_eq!(r.out.out_of_order, 3, "{mode:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `trace stats` and a replay report the timestamps' resolution (issue 45, point 14): a trace
/// in whole seconds says 1 s, however many requests share a second, so a timed replay of it can
/// be told to be a burst per second.
#[test]
fn stats_and_a_replay_report_the_timestamp_resolution() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-res-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: [(&str, Vec<u64>, Option<f64>); 4] = [
        // Seconds, in µs: 3 s, 3 s, 4 s, 6 s (out of order too): all whole seconds.
        (
            "s.trace",
            vec![3_000_000, 3_000_000, 6_000_000, 4_000_000],
            Some(1e6),
        ),
        ("ms.trace", vec![1_000, 3_500, 2_000], Some(500.0)),
        ("us.trace", vec![10, 11, 13], Some(1.0)),
        ("one.trace", vec![7, 7], None),
    ];
    for (name, times_us, want) in cases {
        let times: Vec<u64> = times_us.iter().map(|t| t * 1000).collect();
        let p = disksim_trace(&dir, name, &times);
        let st = stats::of_source(
            &p,
            &ReadOptions::default(),
            &StatsOptions::default(),
            &[],
            1,
            &mut |_| true,
        )
        .unwrap();
        assert_eq!(st.stats.time.resolution_us, want, "{name}");
        let j = TraceJob::from_json(&format!(r#"{{"trace": {p:?}}}"#)).unwrap();
        let r = Replay::new(&j, 1 << 30, 1).unwrap();
        assert_eq!(r.out.time_resolution_us, want, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A replay opens its trace once per pass: a FIFO is refused at once, never waited on (issue 15,
/// defect 9; before, the prescan blocked in open until a writer came, then the replay pass read
/// nothing).
#[cfg(unix)]
#[test]
fn a_replay_of_a_fifo_is_refused_without_blocking() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("t.fifo");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let j = TraceJob::from_json(&format!(r#"{{"trace": {:?}}}"#, fifo.to_string_lossy())).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        tx.send(Replay::new(&j, 1 << 30, 1).err().map(|e| e.to_string()))
            .ok();
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a replay of a FIFO must not block");
    let e = got.expect("a FIFO is refused");
    assert!(
        e.contains("a pipe or FIFO") && e.contains("regular file"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
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

/// A timed replay whose first request lies far before the rest says so in its result (issue 15,
/// defect 3): the device idles through the gap, which a line stamped 0 in front of later times
/// causes. Not for a trace without such a gap, nor for an as-fast-as-possible replay.
#[test]
fn a_leading_outlier_is_reported_by_a_timed_replay() {
    use replay::{Replay, ReplayMode, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-outlier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gap_of = |times_us: &[u64], mode: ReplayMode| {
        let times: Vec<u64> = times_us.iter().map(|t| t * 1000).collect();
        let p = disksim_trace(&dir, &format!("t{}.trace", times_us[1]), &times);
        let mut j = TraceJob::from_json(&format!(r#"{{"trace": {p:?}}}"#)).unwrap();
        j.mode = mode;
        let mut r = Replay::new(&j, 1 << 30, 1).unwrap();
        while r.next_request().unwrap().is_some() {}
        r.out.leading_gap_s
    };
    // 0, then three requests 10 s later, 1 µs apart.
    let outlier = [0, 10_000_000, 10_000_001, 10_000_002];
    let gap = gap_of(&outlier, ReplayMode::Timed).expect("an outlier is reported");
    assert!((gap - 10.0).abs() < 1e-9, "{gap}");
    assert_eq!(gap_of(&outlier, ReplayMode::Afap), None);
    assert_eq!(gap_of(&[0, 1, 2, 3], ReplayMode::Timed), None);
    // A long but even trace (one request a minute) has no outlier.
    assert_eq!(
        gap_of(
            &[0, 60_000_000, 120_000_000, 180_000_000],
            ReplayMode::Timed
        ),
        None
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A timed replay too long for the clock whose second request is stamped before its first (out
/// of order) is refused without calling the first an outlier: the gap between them is not
/// negative-wrapped into a huge one.
#[test]
fn an_out_of_order_second_request_is_not_taken_for_an_outlier() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-ooo2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 100 s, then 50 s, then 200 s; at time_scale 1e6 the 150 s span overflows the clock.
    let times: Vec<u64> = [100u64, 50, 200]
        .iter()
        .map(|t| t * 1_000_000_000)
        .collect();
    let p = disksim_trace(&dir, "ooo.trace", &times);
    // The refusal of a timed replay of the trace at `time_scale`.
    let refusal = |time_scale: &str| {
        let j = TraceJob::from_json(&format!(
            r#"{{"trace": {p:?}, "time_scale": {time_scale}}}"#
        ))
        .unwrap();
        Replay::new(&j, 1 << 30, 1)
            .err()
            .expect("too long")
            .to_string()
    };
    let e = refusal("1e6");
    assert!(e.contains("more than the simulated clock holds"), "{e}");
    assert!(!e.contains("outlier"), "{e}");
    // A factor so large that the product is no longer a number: both said in a few digits
    // (was the factor's 301 digits and "at least inf s").
    let e = refusal("1e300");
    assert!(e.contains("at time_scale 1e300 needs more than"), "{e}");
    assert!(!e.contains("inf") && e.len() < 400, "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
