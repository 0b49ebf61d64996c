//! The readers: each format on hand-written fixtures (blkparse as it comes, with pass-through
//! events and a summary; SPC, Alibaba, MSR, Tencent, DiskSim, fio), byte-order marks,
//! compressed files, the shared public samples, detection, and a bad line's error and its
//! parts.

use super::*;

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
