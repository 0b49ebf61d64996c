//! A run through seed 002's host-side FTL (`[hfsl]` on a fusion device): the job or trace as
//! host requests, and the result with HFSL's counts beside the device's.

use super::result::{build_result, op_result, per, per_s, totals};
use super::{new_device, RunOptions, RunOutput};
use crate::config::SsdConfig;
use crate::device::precondition::tenth_seconds;
use crate::device::Device;
use crate::driver::hfsl::{self, source::JobSource, source::TraceSource};
use crate::error::{got, Error, Invalid, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::result::{HfslQueueResult, HfslResult};
use crate::workload::trace::replay::{Replay, TraceJob};
use crate::workload::JobSpec;
use std::collections::BTreeMap;
use std::time::Instant;

/// The bytes HFSL offers on fusion device `cfg` (its NAND less GC's spare blocks).
pub(super) fn hfsl_capacity(cfg: &SsdConfig) -> Result<u64> {
    let hw = hfsl::hardware(cfg)?;
    let h = cfg.hfsl.clone().unwrap_or_default();
    Ok(hfsl::usable_pages(&h, &hw) * hw.nand_page_bytes)
}

/// The application a run's workload is sent by (`hfsl.app`).
fn hfsl_app(cfg: &SsdConfig) -> u32 {
    cfg.hfsl.as_ref().map_or(0, |h| h.app)
}

/// A synthetic job through HFSL on a fusion device (`[hfsl]` in the config).
pub(super) fn run_hfsl_job(
    cfg: &SsdConfig,
    spec: &JobSpec,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    spec.refuse_startdelay("HFSL on a fusion device ([hfsl])")?;
    let capacity = hfsl_capacity(cfg)?;
    let job = spec.fit(capacity)?;
    let span = job.region_start + job.region_len;
    let mut source = JobSource::new(job, opts.seed, hfsl_app(cfg))?;
    let job_json = serde_json::to_value(spec).expect("job serialises");
    let out = run_hfsl(cfg, opts, capacity, span, &mut source, progress)?;
    let stop = source.stop_reason();
    Ok(hfsl_output(cfg, opts, out, job_json, stop, 0, None))
}

/// A trace or workload model through HFSL on a fusion device (`[hfsl]` in the config).
pub(super) fn run_hfsl_replay(
    cfg: &SsdConfig,
    tjob: &TraceJob,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    if tjob.end_flush {
        // HFSL passes trace flushes over (its host FTL has no volatile cache to drain).
        return Err(Error::bad_job(Invalid::got(
            "trace job",
            "end_flush",
            true,
            "false: HFSL on a fusion device ([hfsl]) has no write-back buffer to drain and \
             passes flushes over",
        )));
    }
    let capacity = hfsl_capacity(cfg)?;
    let replay = Replay::new(tjob, capacity, opts.seed)?;
    let span = replay.out.mapping.span_bytes.min(capacity);
    let mut source = TraceSource::new(replay, hfsl_app(cfg));
    let job_json = serde_json::to_value(tjob).expect("trace job serialises");
    let out = run_hfsl(cfg, opts, capacity, span, &mut source, progress)?;
    let stop = source.stop_reason();
    let skipped = source.skipped;
    let trace = source.outcome();
    Ok(hfsl_output(
        cfg,
        opts,
        out,
        job_json,
        stop,
        skipped,
        Some(trace),
    ))
}

/// What an HFSL run leaves for its result: the device, HFSL's report and host latencies, and
/// the wall seconds.
struct HfslRun {
    dev: Device,
    report: hfsl::HfslReport,
    latency: hfsl::HostLatency,
    logical_bytes: u64,
    /// The bytes HFSL offers (its NAND less GC's spare blocks).
    capacity: u64,
    /// Bytes of HFSL's map area in the PCM.
    map_area_bytes: u64,
    wall_s: f64,
}

/// Run `source` through HFSL (which offers `capacity` bytes) over the logical pages of its
/// first `span` bytes.
fn run_hfsl(
    cfg: &SsdConfig,
    opts: &RunOptions,
    capacity: u64,
    span: u64,
    source: &mut dyn hfsl::HostSource,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<HfslRun> {
    let page = cfg.nand.page_size.0;
    let pages = span.div_ceil(page).max(1);
    let pages = u32::try_from(pages).map_err(|_| {
        Error::bad_job(Invalid::unnamed(
            "hfsl",
            got(
                format_args!("a workload spanning {span} bytes, {pages} NAND pages"),
                format!("at most {} pages (what HFSL's map holds)", u32::MAX),
            ),
        ))
    })?;
    let mut dev = new_device(cfg, opts)?;
    if !opts.record_requests {
        // HFSL measures its host requests itself; the raw commands' latencies would be
        // counted and then left out of the result (2 % of a replay's time).
        dev.measure_from(SimTime::MAX);
    }
    let t0 = Instant::now();
    let (report, latency) = hfsl::run_on(&mut dev, pages, source, &mut tenth_seconds(progress))?;
    let run = HfslRun {
        dev,
        report,
        latency,
        logical_bytes: pages as u64 * page,
        capacity,
        map_area_bytes: pages as u64 * cfg.hfsl.clone().unwrap_or_default().map_entry_bytes as u64,
        wall_s: t0.elapsed().as_secs_f64(),
    };
    Ok(run)
}

/// The result of an HFSL run: the device's figures for its raw commands, with the host
/// requests as the run's `ops` and HFSL's counts beside them.
fn hfsl_output(
    cfg: &SsdConfig,
    opts: &RunOptions,
    mut run: HfslRun,
    job: serde_json::Value,
    stop: &str,
    skipped: u64,
    trace: Option<serde_json::Value>,
) -> RunOutput {
    let mut result = build_result(&run.dev, cfg, job, opts.seed, stop, run.wall_s, 0.0);
    let r = &run.report;
    let window = r.end.as_secs_f64();
    let mut ops = BTreeMap::new();
    for (op, l) in [
        (Op::Read, &run.latency.read),
        (Op::Write, &run.latency.write),
    ] {
        if l.count > 0 {
            ops.insert(op.name(), op_result(l, window));
        }
    }
    let count = run.latency.read.count + run.latency.write.count;
    let bytes = run.latency.read.bytes + run.latency.write.bytes;
    result.ops = ops;
    result.total = totals(count, bytes, window);
    result.sim.requests = r.requests;
    result.sim.measured_time_s = window;
    result.wall.requests_per_s = per_s(r.requests, run.wall_s);
    result.trace = trace;
    // The host's pages are HFSL's: what it was asked to read and write, in NAND pages; the
    // NAND's write amplification counts programs (GC's among them) per host page written, so a
    // PCM that absorbs small writes brings it below 1.
    let page = cfg.nand.page_size.0;
    let d = &mut result.device;
    d.logical_bytes = run.capacity;
    d.host_pages_read = run.latency.read.bytes.div_ceil(page);
    d.host_pages_written = run.latency.write.bytes.div_ceil(page);
    d.write_amplification = per(r.counters.nand_programs, d.host_pages_written);
    d.gc_runs = r.counters.gc_runs;
    d.gc_units_moved = r.counters.gc_pages_moved;
    result.hfsl = Some(HfslResult {
        logical_bytes: run.logical_bytes,
        raw_commands: r.raw_commands,
        raw_commands_per_request: per(r.raw_commands, r.requests),
        counters: r.counters.clone(),
        pcm_pages: r.pcm_pages,
        nand_pages: r.nand_pages,
        refused_writes: r.refused_writes,
        refusals: r.refusals.clone(),
        skipped_requests: skipped,
        queues: HfslQueueResult {
            batches: r.queues.batches,
            commands: r.queues.commands,
            commands_per_batch: per(r.queues.commands, r.queues.batches),
            timer_waits: r.queues.timer_waits,
            mean_wait_us: per(r.queues.queued.ps(), r.queues.commands) / 1e6,
        },
        map_store: cfg.hfsl.as_ref().map(|h| h.map_store).unwrap_or_default(),
        map_area_bytes: run.map_area_bytes,
        power_cut: r.power_cut.as_ref().map(hfsl::PowerCut::result),
    });
    RunOutput {
        result,
        records: run.dev.take_records(),
        interrupted: false,
        flow_records: None,
    }
}
