//! Property tests of the readers and writers: no byte sequence or near-miss line makes any
//! reader panic, and what a writer writes reads back the same (every format; NVMe with every
//! op and directive).

use super::super::write::TraceWriter;
use super::*;
use proptest::prelude::*;

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
