use ssdlab::{run, JobSpec, RunOptions, SsdConfig};
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let preset = &args[0];
    let ov: Vec<String> = args[2..].to_vec();
    let cfg = SsdConfig::resolve(preset, &ov).unwrap_or_else(|e| panic!("{e}"));
    let job = JobSpec::from_toml_str(&args[1].replace(';', "\n"), "job")
        .unwrap_or_else(|e| panic!("{e}"));
    let out = run(
        &cfg,
        &job,
        &RunOptions {
            seed: 1,
            record_requests: false,
        },
        &mut |_, _| true,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let v: serde_json::Value = serde_json::from_str(&out.result.to_json()).unwrap();
    for op in ["read", "write"] {
        if let Some(o) = v["ops"].get(op) {
            println!(
                "{op}: {:.1} MB/s  lat mean {:.2} us p50 {:.2}",
                o["bandwidth_mb_s"].as_f64().unwrap_or(0.0),
                o["latency_us"]["mean"].as_f64().unwrap_or(0.0),
                o["latency_us"]["p50"].as_f64().unwrap_or(0.0)
            );
        }
    }
}
