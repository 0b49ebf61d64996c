//! Reader throughput and memory, one reader per process so that peak memory is the reader's own:
//!
//! ```sh
//! cargo run --release -p ssdlab --example trace_read -- gen /tmp/traces 10000000
//! cargo run --release -p ssdlab --example trace_read -- read /tmp/traces/big.msr
//! ```
//!
//! `gen` writes the `financial1` workload model's requests in every format (and a gzip copy of
//! the DiskSim one); `read` reads a file to its end and prints lines per second and the peak
//! resident memory of the process.

use ssdlab::workload::trace::write::write_model;
use ssdlab::workload::trace::{Format, ReadOptions, TraceReader, FORMATS};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen") if args.len() == 3 => {
            let dir = &args[1];
            let n: u64 = args[2].parse().expect("a request count");
            std::fs::create_dir_all(dir).expect("output directory");
            for f in FORMATS {
                let path = format!("{dir}/big.{}", f.name);
                let t = Instant::now();
                let (written, _) =
                    write_model(&format!("financial1,count={n}"), &path, f.format, 1)
                        .expect("write");
                println!(
                    "{path}: {written} requests in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
            }
            let path = format!("{dir}/big.disksim.gz");
            write_model(&format!("financial1,count={n}"), &path, Format::Disksim, 1)
                .expect("write");
            println!("{path}");
        }
        Some("read") if args.len() >= 2 => {
            let format = args
                .get(2)
                .map(|n| Format::from_name(n).expect("a format name"));
            let opts = ReadOptions {
                format,
                ..Default::default()
            };
            let t = Instant::now();
            let mut r = TraceReader::open(&args[1], &opts).expect("open");
            let mut n = 0u64;
            let mut bytes = 0u64;
            while let Some(rec) = r.next_record().expect("read") {
                n += 1;
                bytes = bytes.wrapping_add(rec.len);
            }
            let s = t.elapsed().as_secs_f64();
            let peak = ssdlab::stats::peak_memory_bytes().unwrap_or(0);
            println!(
                "{}: format {}, compression {}, {} lines, {} requests ({} bytes), {:.2} s, \
                 {:.0} lines/s, peak memory {:.1} MiB",
                args[1],
                r.format().name(),
                r.compression().name(),
                r.lines(),
                n,
                bytes,
                s,
                r.lines() as f64 / s,
                peak as f64 / (1 << 20) as f64
            );
        }
        _ => {
            eprintln!("usage: trace_read gen DIR COUNT | trace_read read FILE [FORMAT]");
            std::process::exit(2);
        }
    }
}
