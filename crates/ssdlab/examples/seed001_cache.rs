//! Seed 001 Figs. 3–4 in miniature: write latency and erases of `single` (16 MiB),
//! `single2x` (32 MiB) and `dual` (16 MiB, dual port) on the seed 001 preset, under an
//! open-loop workload. `cargo run --release -p ssdlab --example seed001_cache [JOB.toml]`
use ssdlab::{run, JobSpec, RunOptions, SsdConfig};

fn main() {
    let job_text = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(path).expect("job file"),
        None => "rw = \"randrw\"\nrwmixread = 30\nbs = { \"4KiB\" = 60, \"8KiB\" = 25, \"32KiB\" = 15 }\n\
                 size = \"1GiB\"\ndistribution = \"zipf:0.9\"\nrate_iops = 1500\niodepth = 32\nio_count = 60000"
            .to_string(),
    };
    let job = JobSpec::from_toml_str(&job_text, "job").expect("job");
    let setups: [(&str, &[&str]); 3] = [
        ("single", &[]),
        ("single2x", &["cache.capacity=\"32MiB\""]),
        ("dual", &["cache.ports=\"dual\""]),
    ];
    println!(
        "{:<9} {:>10} {:>10} {:>8} {:>9} {:>9} {:>7}",
        "config", "write µs", "p99 µs", "erases", "on-demand", "pre-empt", "hit %"
    );
    for (name, ov) in setups {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        let cfg = SsdConfig::resolve("seed001-16g-mlc-dram-cache", &ov).expect("preset");
        let out = run(
            &cfg,
            &job,
            &RunOptions {
                seed: 1,
                record_requests: false,
            },
            &mut |_, _| true,
        )
        .expect("run");
        let r = &out.result;
        let w = &r.ops["write"].latency_us;
        let c = r.cache.as_ref().unwrap();
        println!(
            "{name:<9} {:>10.1} {:>10.1} {:>8} {:>9} {:>9} {:>7.1}",
            w.mean,
            w.p99,
            r.device.erases,
            c.flushes.on_demand,
            c.flushes.preemptive,
            100.0 * (c.read_hits + c.write_hits) as f64
                / (c.read_hits + c.read_misses + c.write_hits + c.write_misses).max(1) as f64
        );
    }
}
