//! Shared body of the fuzz targets: read every record of the input with one reader (both with
//! and without skipping bad lines) and feed what it reads to the statistics. Any panic is a bug.

use ssdlab::workload::trace::stats::{StatsOptions, TraceStats};
use ssdlab::workload::trace::{Format, ReadOptions, TraceReader};
use std::io::Cursor;

pub fn read_all(data: &[u8], format: Option<Format>) {
    for skip_bad_lines in [false, true] {
        let opts = ReadOptions {
            format,
            skip_bad_lines,
            ..Default::default()
        };
        let Ok(mut r) =
            TraceReader::from_reader("fuzz", Box::new(Cursor::new(data.to_vec())), &opts)
        else {
            continue;
        };
        let mut stats = TraceStats::new(StatsOptions {
            max_chunks: 64,
            ..Default::default()
        });
        // Bounded: a fuzz input is small, but a compressed one can expand a lot.
        for _ in 0..100_000 {
            match r.next_record() {
                Ok(Some(rec)) => stats.add(&rec),
                Ok(None) | Err(_) => break,
            }
        }
        let _ = stats.summary();
    }
}
