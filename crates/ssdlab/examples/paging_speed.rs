//! The paging model's speed benchmark (docs/paging.md "Speed"): `cargo build --release
//! --example paging_speed -p ssdlab`, then
//!
//! - `target/release/examples/paging_speed [ACCESSES]`: the run, its accesses per wall-clock
//!   second (which depend on the machine's load), and its major faults and pages written;
//! - `target/release/examples/paging_speed --instructions [ACCESSES]`: the same run under
//!   valgrind's callgrind, counting the instructions of the model's run alone (the workload's
//!   generation left out: `--toggle-collect` on `run_model`), and those per access, a figure
//!   the load does not change;
//! - `target/release/examples/paging_speed --results [ACCESSES]`: the speed run and six other
//!   configs (both eras, synchronous I/O, congestion wait off, a rotational area without
//!   discard, a small memory with `page_cluster = 4`, a swap area that fills) on ACCESSES
//!   (2,000,000 unless given), a line each with the major faults, the pages written and a
//!   digest of the whole result (its JSON, the wall-clock figures left out), the swap-in
//!   latencies and the swap trace: a change that is only about speed leaves every line as it
//!   was.
//!
//! ACCESSES (20,000,000 unless given) of `Workload::speed_benchmark` (300 K pages, 95 % of the
//! accesses to 50 K hot ones) through 256 MiB (65,536 frames) on a fixed-cost backend, seed 1:
//! deterministic, so the major faults and pages written must be the same before and after a
//! change to the model (tests/paging.rs checks them on 2,000,000).
use ssdlab::paging::{self, FixedBackend, PagingConfig, SwapOutput, Workload};
use ssdlab::sim::SimTime;
use std::process::{exit, Command};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let instructions = args.first().is_some_and(|a| a == "--instructions");
    let results = args.first().is_some_and(|a| a == "--results");
    if instructions || results {
        args.remove(0);
    }
    let n: usize = match args.first() {
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("paging_speed: ACCESSES `{a}` is not a whole number of accesses");
            exit(2)
        }),
        None if results => 2_000_000,
        None => 20_000_000,
    };
    if results {
        print_results(n);
        return;
    }
    if instructions {
        count_instructions(n);
        return;
    }
    let w = Workload::speed_benchmark(n);
    let t = std::time::Instant::now();
    let out = run_model(&w);
    let s = t.elapsed().as_secs_f64();
    let r = &out.result;
    println!(
        "{} accesses in {s:.3} s: {:.2} M accesses/s; {} major faults, {} pages written",
        w.accesses.len(),
        w.accesses.len() as f64 / s / 1e6,
        r.faults.major,
        r.writes.pages
    );
}

/// The measured part: the model's run on `w`. Never inlined, so callgrind can count it alone.
#[inline(never)]
fn run_model(w: &Workload) -> SwapOutput {
    let cfg = PagingConfig::new(256 << 20, 2 << 30);
    let us = SimTime::from_us;
    let backend = FixedBackend::new(1 << 40, (us(10), us(1)), (us(10), us(3)));
    paging::run_on(&cfg, backend, w, 1).expect("paging run")
}

/// The configs `--results` runs: a name and the `[swap]` keys beyond memory and swap size.
const RESULT_CONFIGS: [(&str, &str); 7] = [
    ("speed", ""),
    ("modern", "era = \"modern\""),
    ("modern-sync", "era = \"modern\"\nsynchronous_io = true"),
    ("no-congestion-wait", "congestion_wait = false"),
    ("rotational", "solid_state = false\ndiscard = false"),
    ("small-pc4", "memory = \"64MiB\"\npage_cluster = 4"),
    ("swap-fills", "swap_size = \"1GiB\""),
];

/// Each of `RESULT_CONFIGS` on `n` accesses of the speed workload: its figures and a digest
/// of all it returns.
fn print_results(n: usize) {
    let w = Workload::speed_benchmark(n);
    let us = SimTime::from_us;
    for (name, keys) in RESULT_CONFIGS {
        let mut t: toml::Table = toml::from_str(keys).expect("the configs' TOML");
        t.entry("memory").or_insert("256MiB".into());
        t.entry("swap_size").or_insert("2GiB".into());
        let cfg = PagingConfig::from_table(t).expect("the configs are valid");
        let backend = FixedBackend::new(1 << 40, (us(10), us(1)), (us(10), us(3)));
        let out = paging::run_on(&cfg, backend, &w, 1).expect("paging run");
        let mut r = out.result;
        (r.wall_seconds, r.accesses_per_wall_second) = (0.0, 0.0);
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        h.add(
            serde_json::to_string(&r)
                .expect("the result's JSON")
                .as_bytes(),
        );
        for v in &out.swap_in_ps {
            h.add(&v.to_le_bytes());
        }
        for x in &out.trace {
            h.add(&[x.op]);
            for v in [x.offset, x.len, x.submit_ps, x.done_ps] {
                h.add(&v.to_le_bytes());
            }
        }
        println!(
            "{name}: {} major faults, {} pages written, {} requests, digest {:016x}",
            r.faults.major,
            r.writes.pages,
            out.trace.len(),
            h.0
        );
    }
}

/// FNV-1a, 64 bits: the same bytes give the same digest on every machine and build.
struct Fnv(u64);

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Run this program on `n` accesses under callgrind, instructions counted inside `run_model`
/// only, and print its result line and the instructions per access.
fn count_instructions(n: usize) {
    let exe = std::env::current_exe().expect("the example's own path");
    let out_file = std::env::temp_dir().join(format!("paging_speed.cg.{}", std::process::id()));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--toggle-collect=*run_model*")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(&exe)
        .arg(n.to_string())
        .output()
        .unwrap_or_else(|e| {
            eprintln!(
                "paging_speed: cannot run valgrind ({e}); install it (apt-get install valgrind)"
            );
            exit(2)
        });
    let _ = std::fs::remove_file(&out_file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // callgrind's summary line: `==PID== I   refs:      6,321,000,000`.
    let refs = stderr
        .lines()
        .find_map(|l| {
            l.split_once("refs:")
                .map(|(_, v)| v.trim().replace(',', ""))
        })
        .and_then(|v| v.parse::<u64>().ok());
    let Some(refs) = refs.filter(|_| out.status.success()) else {
        eprintln!("paging_speed: valgrind failed or printed no `refs` line:\n{stderr}");
        exit(1)
    };
    print!("{}", String::from_utf8_lossy(&out.stdout));
    println!(
        "callgrind: {refs} instructions in the model for {n} accesses: {:.1} per access",
        refs as f64 / n.max(1) as f64
    );
}
