//! The live device's memory store on its own (docs/live-device.md, "Speed"): `cargo build
//! --release --example serve_store -p ssdlab`, then `target/release/examples/serve_store
//! [READS]`, or the same under `valgrind --tool=callgrind` for instructions per read, a figure
//! the machine's load does not change.
//!
//! 256 MiB written (65,536 pages, as `scripts/bench-serve.sh` writes before it reads), then
//! READS (1,000,000 unless given) 4 KiB reads at pseudo-random page-aligned offsets, each
//! served as a structured reply serves it: the written extents, then the bytes. Prints the
//! reads per wall-clock second and a checksum of what was read (the same before and after a
//! change to the store).
use ssdlab::serve::data::Pages;
use std::process::exit;

fn main() {
    let reads: u64 = match std::env::args().nth(1) {
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("serve_store: READS `{a}` is not a whole number of reads");
            exit(2)
        }),
        None => 1_000_000,
    };
    const SPAN: u64 = 256 << 20;
    let mut pages = Pages::default();
    let chunk: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    for at in (0..SPAN).step_by(chunk.len()) {
        pages.write(at, &chunk);
    }
    let (mut x, mut sum, mut out) = (1u64, 0u64, Vec::with_capacity(8192));
    let t = std::time::Instant::now();
    for _ in 0..reads {
        // xorshift64: the same offsets on every run.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let offset = (x % (SPAN / 4096)) * 4096;
        let runs = pages.extents(offset, 4096);
        out.clear();
        pages.read_into(offset, 4096, &mut out);
        sum = sum
            .wrapping_add(runs.len() as u64)
            .wrapping_add(out[(x % 4096) as usize] as u64);
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "reads {reads} checksum {sum} reads_per_s {:.0}",
        reads as f64 / s
    );
}
