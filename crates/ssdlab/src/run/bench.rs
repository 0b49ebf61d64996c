//! The benchmark (`ssdlab bench`) and its side figures: GC's tail and the cached map's speed.

use super::{precondition_to_state, precondition_with, run, RunOptions, RunOutput};
use crate::config::SsdConfig;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::stats::peak_memory_bytes;
use crate::stats::result::{OpResult, RunResult};
use crate::workload::JobSpec;

/// The benchmark: random 4 KiB I/O, 70 % reads, iodepth 32, on the 64-channel preset brought
/// to the steady state of random overwrites (then `overwrite` × its capacity more of them), so
/// GC runs throughout at the rate a drive in long use sees.
pub fn bench(io_count: u64, seed: u64, overwrite: f64) -> Result<serde_json::Value> {
    bench_with(io_count, seed, overwrite, &mut |_, _| true)
}

/// [`bench`], calling `progress(done, total)` about ten times per wall second in each of its
/// runs; returning false stops the benchmark with [`Error::Interrupted`].
pub fn bench_with(
    io_count: u64,
    seed: u64,
    overwrite: f64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<serde_json::Value> {
    let cfg = bench_device(&[
        "precondition.fill=\"steady-state\"".into(),
        format!("precondition.random_overwrite={overwrite}"),
    ])?;
    let job = JobSpec::from_json(&format!(
        r#"{{"name":"bench","rw":"randrw","rwmixread":70,"bs":"4KiB","iodepth":32,"io_count":{io_count}}}"#
    ))?;
    let mem_before = peak_memory_bytes();
    let out = run_to_end(&cfg, &job, &RunOptions::seeded(seed), progress)?;
    let r = &out.result;
    let logical_units = cfg.logical_units();
    let physical_units = cfg.physical_units();
    let map_bytes = logical_units * 4;
    let peak = r.wall.peak_memory_bytes;
    let beyond = peak.map(|p| (p.saturating_sub(map_bytes)) as f64 / logical_units as f64);
    Ok(serde_json::json!({
        "benchmark": "random 4KiB, 70% read, iodepth 32, seed004-64ch-mlc (multi-plane, 400 MT/s, every-plane striping) preconditioned to the steady state",
        "io_count": io_count,
        "seed": seed,
        "precondition_random_overwrite": overwrite,
        "simulated_requests": r.sim.requests,
        "events": r.sim.events,
        "wall_seconds": r.wall.seconds,
        "precondition_seconds": r.wall.precondition_seconds,
        "requests_per_s": r.wall.requests_per_s,
        "events_per_s": r.wall.events_per_s,
        "peak_memory_bytes": peak,
        "peak_memory_before_run_bytes": mem_before,
        "logical_pages": logical_units,
        "physical_pages": physical_units,
        "mapping_table_bytes": map_bytes,
        "bytes_per_logical_page_beyond_mapping_table": beyond,
        "gc_runs": r.device.gc_runs,
        "write_amplification": r.device.write_amplification,
        "steady_state": r.device.steady_state,
        "iops_simulated": r.total.iops,
        // The tail GC causes (issue 16): host reads wait behind urgent collections at their die,
        // host writes behind the collection itself. Simulated time, in µs.
        "read_latency_tail_us": tail(r.ops.get("read")),
        "write_latency_tail_us": tail(r.ops.get("write")),
        "gc_tail": gc_tail_with(seed, 100_000, progress)?,
        "cached_mapping": cached_mapping_with(seed, io_count, progress)?,
    }))
}

/// The saved state's figure (docs/state.md): the benchmark's drive preconditioned to the
/// steady state and saved to `path`; then the benchmark's job run on it preconditioned again
/// and loaded from `path`: the seconds each start took (the shortest of four), their ratio,
/// and whether the two results agree (everything but the wall times and the config's hash,
/// which names the file).
pub fn bench_state(
    io_count: u64,
    seed: u64,
    path: &std::path::Path,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<serde_json::Value> {
    let cfg = bench_device(&[
        "precondition.fill=\"steady-state\"".into(),
        "precondition.random_overwrite=0".into(),
    ])?;
    let saved = precondition_to_state(&cfg, seed, path, progress)?;
    let mut loaded_cfg = cfg.clone();
    loaded_cfg.precondition.state = Some(path.display().to_string());
    let job = JobSpec::from_json(&format!(
        r#"{{"name":"bench","rw":"randrw","rwmixread":70,"bs":"4KiB","iodepth":32,"io_count":{io_count}}}"#
    ))?;
    let opts = RunOptions::seeded(seed);
    let fresh = run_to_end(&cfg, &job, &opts, progress)?.result;
    let loaded = run_to_end(&loaded_cfg, &job, &opts, progress)?.result;
    // Each start timed three times more and the shortest kept, for both alike: on a shared
    // machine a single start is as likely to measure its neighbours as itself.
    let mut starts = |c: &SsdConfig, first: f64| -> Result<f64> {
        let mut best = first;
        for _ in 0..3 {
            let mut dev = Device::new(c, seed)?;
            best = best.min(precondition_with(&mut dev, c, seed, progress)?);
        }
        Ok(best)
    };
    let pre = starts(&cfg, fresh.wall.precondition_seconds)?;
    let load = starts(&loaded_cfg, loaded.wall.precondition_seconds)?;
    let figures = |r: &RunResult| {
        let mut v: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
        let o = v.as_object_mut().expect("an object");
        o.remove("wall");
        o.remove("config_hash");
        v
    };
    Ok(serde_json::json!({
        "benchmark": "seed004-64ch-mlc (multi-plane, 400 MT/s, every-plane striping) preconditioned to the steady state, against its saved state loaded",
        "logical_bytes": cfg.logical_bytes(),
        "state": saved["state"],
        "state_bytes": saved["bytes"],
        "save_seconds": saved["save_seconds"],
        "precondition_seconds": pre,
        "load_seconds": load,
        "load_speedup": if load > 0.0 { pre / load } else { f64::INFINITY },
        "io_count": io_count,
        "seed": seed,
        "identical_results": figures(&fresh) == figures(&loaded),
    }))
}

/// [`run`], where an interrupted run is an error (the benchmark's figures are its whole runs').
fn run_to_end(
    cfg: &SsdConfig,
    spec: &JobSpec,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    let out = run(cfg, spec, opts, progress)?;
    if out.interrupted {
        return Err(Error::Interrupted);
    }
    Ok(out)
}

/// The benchmark's device: `seed004-64ch-mlc` as it was before it took SimpleSSD v1.0's page
/// layout and timing (multi-plane operations, 400 MT/s, writes striped over every plane), so
/// that the benchmark's figures stay comparable from commit to commit; then `extra`.
fn bench_device(extra: &[String]) -> Result<SsdConfig> {
    let mut overrides = vec![
        "nand.multiplane=true".to_string(),
        "nand.bus.rate=\"400MT/s\"".to_string(),
    ];
    overrides.extend_from_slice(extra);
    let mut cfg = SsdConfig::resolve("seed004-64ch-mlc", &overrides)?;
    // Every plane in one group (always valid, so no second check is needed).
    cfg.ftl.superblock_planes = None;
    Ok(cfg)
}

/// The benchmark's demand-paged mapping figure (issue 16's speed bar, issue 44's ratio):
/// `io_count` random 4 KiB I/Os, 50 % reads, iodepth 32, on the 64-channel preset at 2 packages
/// per channel (512 GiB raw, 476 GiB logical), fresh, with `ftl.mapping = "cached"` and a
/// 64 MiB mapping cache, so most commands miss and cost translation-page reads and writes;
/// and the same drive and job with the full map (`ftl.mapping = "full"`, nothing else
/// changed), so that the two rates compare like for like. Simulated requests per wall-clock
/// second (the timed run only, as every run reports it), the cache's figures, and
/// `full_over_cached`, the full map's rate over the cached map's (issue 44 asks for at most
/// 1.5).
pub fn cached_mapping(seed: u64, io_count: u64) -> Result<serde_json::Value> {
    cached_mapping_with(seed, io_count, &mut |_, _| true)
}

fn cached_mapping_with(
    seed: u64,
    io_count: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<serde_json::Value> {
    let cfg = bench_device(&[
        "nand.packages_per_channel=2".into(),
        "ftl.mapping=\"cached\"".into(),
        "ftl.mapping_cache=\"64MiB\"".into(),
    ])?;
    let full_cfg = bench_device(&[
        "nand.packages_per_channel=2".into(),
        "ftl.mapping=\"full\"".into(),
    ])?;
    let job = JobSpec::from_json(&format!(
        r#"{{"name":"cached-mapping","rw":"randrw","rwmixread":50,"bs":"4KiB","iodepth":32,"io_count":{io_count}}}"#
    ))?;
    let opts = RunOptions::seeded(seed);
    // Each map run twice, in turn, and its faster run kept: on a shared machine one run is as
    // likely to time its neighbours as itself, and alternating keeps a slow spell from falling
    // on one map only. The runs are deterministic, so the figures other than the wall times
    // are the same either way.
    let mut cached: Option<RunResult> = None;
    let mut full: Option<RunResult> = None;
    for _ in 0..2 {
        for (c, best) in [(&cfg, &mut cached), (&full_cfg, &mut full)] {
            let r = run_to_end(c, &job, &opts, progress)?.result;
            if best
                .as_ref()
                .is_none_or(|b| r.wall.seconds < b.wall.seconds)
            {
                *best = Some(r);
            }
        }
    }
    let (r, f) = (cached.expect("ran"), full.expect("ran"));
    let m = r.ftl.as_ref().and_then(|f| f.mapping.as_ref());
    Ok(serde_json::json!({
        "workload": format!(
            "seed004-64ch-mlc (multi-plane, 400 MT/s, every-plane striping) at 2 packages per \
             channel, ftl.mapping=cached, 64MiB cache, \
             random 4KiB 50% read, iodepth 32, {io_count} I/Os; the faster of two runs"
        ),
        "logical_bytes": cfg.logical_bytes(),
        "requests_per_s": r.wall.requests_per_s,
        "wall_seconds": r.wall.seconds,
        "events": r.sim.events,
        "hit_ratio": m.map(|m| m.hit_ratio),
        "translation_reads": m.map(|m| m.translation_reads),
        "translation_writes": m.map(|m| m.translation_writes),
        "full_map_requests_per_s": f.wall.requests_per_s,
        "full_map_wall_seconds": f.wall.seconds,
        "full_map_events": f.sim.events,
        "full_over_cached": f.wall.requests_per_s / r.wall.requests_per_s,
    }))
}

/// The benchmark's GC figure: `io_count` random 4 KiB writes at QD32 on the small
/// preconditioned TLC drive (GC-bound, WAF about 5, so the tail is GC's), with the defaults and
/// with GC-aware placement and preemptible GC: write latency p99, p99.9, p99.99 and max in
/// simulated µs, WAF and IOPS. 100,000 I/Os take about 0.3 s of wall time per setting.
pub fn gc_tail(seed: u64, io_count: u64) -> Result<serde_json::Value> {
    gc_tail_with(seed, io_count, &mut |_, _| true)
}

fn gc_tail_with(
    seed: u64,
    io_count: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<serde_json::Value> {
    let job = JobSpec::from_json(&format!(
        r#"{{"name":"gc-tail","rw":"randwrite","bs":"4KiB","iodepth":32,"io_count":{io_count}}}"#
    ))?;
    let mut runs = serde_json::Map::new();
    runs.insert(
        "workload".into(),
        format!("small-tlc, random 4KiB writes, iodepth 32, {io_count} I/Os").into(),
    );
    for (name, overrides) in [
        ("defaults", vec![]),
        (
            "gc_aware_preemptible",
            vec![
                "ftl.placement=\"gc-aware\"".to_string(),
                "ftl.gc.preemptible=true".to_string(),
            ],
        ),
    ] {
        let cfg = SsdConfig::resolve("small-tlc", &overrides)?;
        let opts = RunOptions::seeded(seed);
        let r = run_to_end(&cfg, &job, &opts, progress)?.result;
        let mut v = tail(r.ops.get("write"));
        v["write_amplification"] = r.device.write_amplification.into();
        v["iops_simulated"] = r.total.iops.into();
        runs.insert(name.into(), v);
    }
    Ok(runs.into())
}

/// p99, p99.9, p99.99 and max of one operation's latency, for the benchmark.
fn tail(op: Option<&OpResult>) -> serde_json::Value {
    op.map_or(serde_json::Value::Null, |o| {
        let l = &o.latency_us;
        serde_json::json!({"p99": l.p99, "p99_9": l.p99_9, "p99_99": l.p99_99, "max": l.max})
    })
}
