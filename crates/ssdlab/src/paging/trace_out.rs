//! The swap block trace written out in one of the trace formats ssdlab reads (issue 12,
//! point 6), so `ssdlab trace stats` and `ssdlab run --trace` take it as they take any other
//! trace. fio's iolog (v3) is the default: it is the one format that keeps the discards the
//! swap area sends. Each request is written at its submission time; completion times stay in
//! the Python arrays and the result's latencies.

use super::result::IoRecord;
use crate::error::{got, Invalid};
use crate::error::{Error, Result};
use crate::workload::trace::{Format, TraceOp, TraceRecord};

/// The swap trace's records in submission order (ties in the order submitted), as trace
/// records of device 0.
pub fn records(trace: &[IoRecord]) -> Vec<TraceRecord> {
    let mut v: Vec<TraceRecord> = trace
        .iter()
        .map(|r| TraceRecord {
            directive: crate::workload::trace::Directive::None,
            all_zones: false,
            time_ps: r.submit_ps,
            op: match r.op {
                0 => TraceOp::Read,
                1 => TraceOp::Write,
                _ => TraceOp::Trim,
            },
            offset: r.offset,
            len: r.len,
            device: 0,
        })
        .collect();
    // Application and kswapd submit on one clock but the model may record one a little ahead
    // of the other; a trace must not go back in time.
    v.sort_by_key(|r| r.time_ps);
    v
}

/// Write `trace` to `path` in `format` (a path ending in `.gz` is gzip-compressed). Returns the
/// requests written and those the format cannot hold (e.g. discards in MSR).
pub fn write(trace: &[IoRecord], path: &str, format: Format) -> Result<(u64, u64)> {
    crate::workload::trace::write::write_file(records(trace).into_iter(), path, format)
}

/// A format by name for `--swap-trace-format`, as a one-line error naming the field.
pub fn format_named(name: &str) -> Result<Format> {
    Format::from_name(name).ok_or_else(|| {
        Error::bad_paging(Invalid::unnamed(
            "swap-trace-format",
            got(format!("{name:?}"), format!("one of {}", Format::names())),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::trace::{ReadOptions, TraceReader};

    fn rec(op: u8, offset: u64, len: u64, submit_ps: u64) -> IoRecord {
        IoRecord {
            op,
            offset,
            len,
            submit_ps,
            done_ps: submit_ps + 1,
        }
    }

    #[test]
    fn written_trace_reads_back_with_its_requests_and_discards() {
        let dir = std::env::temp_dir().join(format!("ssdlab-swaptrace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = [
            rec(2, 4096, 1 << 20, 0),
            rec(1, 4096, 131072, 5_000_000),
            // Recorded after a later one: written in time order.
            rec(0, 8192, 32768, 9_000_000),
            rec(1, 135168, 4096, 7_000_000),
        ];
        for (name, f, gz) in [
            ("t.iolog", Format::Fio, false),
            ("t.iolog.gz", Format::Fio, true),
        ] {
            let path = dir.join(name);
            let p = path.to_str().unwrap();
            assert_eq!(write(&t, p, f).unwrap(), (4, 0));
            if gz {
                let raw = std::fs::read(&path).unwrap();
                assert_eq!(&raw[..2], &[0x1f, 0x8b]);
            }
            let mut r = TraceReader::open(p, &ReadOptions::default()).unwrap();
            let mut got = Vec::new();
            while let Some(x) = r.next_record().unwrap() {
                got.push((x.op, x.offset, x.len));
            }
            assert_eq!(
                got,
                vec![
                    (TraceOp::Trim, 4096, 1 << 20),
                    (TraceOp::Write, 4096, 131072),
                    (TraceOp::Write, 135168, 4096),
                    (TraceOp::Read, 8192, 32768),
                ]
            );
        }
        // MSR has no discards: the trim is left out and counted.
        let p = dir.join("t.csv");
        assert_eq!(write(&t, p.to_str().unwrap(), Format::Msr).unwrap(), (3, 1));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn unknown_format_and_unwritable_path_are_one_line() {
        let e = format_named("tarot").unwrap_err().to_string();
        assert!(e.contains("swap-trace-format") && e.contains("tarot") && e.contains("fio"));
        let e = write(&[], "/nonexistent/dir/t.iolog", Format::Fio)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/dir/t.iolog: cannot write") && !e.contains('\n'));
    }
}
