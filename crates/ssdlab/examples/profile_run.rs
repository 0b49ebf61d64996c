//! A small whole run for instruction counts: `valgrind --tool=callgrind
//! target/release/examples/profile_run [IO_COUNT] [PRESET] [RW] [KEY=VALUE ...]`. Small-tlc, 4 KiB random 70 %
//! reads (`randrw`; RW may name another pattern, e.g. `randread`; `randrw:50` sets the read
//! share, `rwmixread`, to 50 %), iodepth 32, seed 1: the hot
//! path of the event loop without the 1 TiB benchmark's fill. RW `trace:SPEC` replays a trace or
//! `model:NAME` as fast as possible instead, IO_COUNT requests (a fusion preset replays through
//! HFSL): `profile_run 300000 seed002-fusion trace:model:financial1 nand.blocks_per_plane=160`.
//! RW ending in `+zbd` runs the job with `zonemode = "zbd"`, for a zoned drive:
//! `profile_run 200000 zns-tlc write+zbd`.
//! With `PROFILE_RUN_JSON=PATH` set it also writes the whole result to PATH as JSON, without
//! its wall-clock figures, so that two builds' results can be compared byte for byte.
fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let preset = args.next().unwrap_or_else(|| "small-tlc".into());
    let rw_arg = args.next().unwrap_or_else(|| "randrw".into());
    let (rw_arg, zbd) = match rw_arg.strip_suffix("+zbd") {
        Some(rw) => (rw.to_string(), r#","zonemode":"zbd""#),
        None => (rw_arg, ""),
    };
    let (rw, mix) = rw_arg.split_once(':').unwrap_or((&rw_arg, "70"));
    // Any further arguments are config overrides, as `--set` takes them.
    let sets: Vec<String> = args.collect();
    let cfg = ssdlab::SsdConfig::resolve(&preset, &sets).expect("preset");
    let opts = ssdlab::RunOptions::seeded(1);
    if let Some(trace) = rw_arg.strip_prefix("trace:") {
        let tjob: ssdlab::workload::trace::replay::TraceJob = serde_json::from_value(
            serde_json::json!({"trace": trace, "mode": "afap", "repeat": 1000, "io_count": n}),
        )
        .expect("trace job");
        let out = ssdlab::run_replay(&cfg, &tjob, &opts, &mut |_, _| true).expect("replay");
        return report(&out);
    }
    let job = ssdlab::JobSpec::from_json(&format!(
        r#"{{"name":"profile","rw":"{rw}","rwmixread":{mix},"bs":"4KiB","iodepth":32,"io_count":{n}{zbd}}}"#
    ))
    .expect("job");
    let out = ssdlab::run(&cfg, &job, &opts, &mut |_, _| true).expect("run");
    report(&out);
}

fn report(out: &ssdlab::RunOutput) {
    let r = &out.result;
    println!(
        "requests {} events {} waf {:.4} gc_runs {} sim_s {:.6} wall_s {:.3} req/s {:.0}",
        r.sim.requests,
        r.sim.events,
        r.device.write_amplification,
        r.device.gc_runs,
        r.sim.simulated_time_s,
        r.wall.seconds,
        r.wall.requests_per_s
    );
    if let Some(path) = std::env::var_os("PROFILE_RUN_JSON") {
        let mut v = serde_json::to_value(r).expect("result as JSON");
        if let Some(m) = v.as_object_mut() {
            m.remove("wall");
        }
        let text = serde_json::to_string_pretty(&v).expect("result as JSON");
        std::fs::write(path, text).expect("write PROFILE_RUN_JSON");
    }
}
