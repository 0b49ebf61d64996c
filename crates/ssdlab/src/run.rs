//! One run from (config, job, seed) to a result — a synthetic job or a trace replay — and the
//! benchmark.

use crate::config::SsdConfig;
use crate::device::precondition::tenth_seconds;
use crate::device::{Backend, Device, Driver, RequestRecord, Status};
use crate::driver::hfsl::{self, source::JobSource, source::TraceSource};
use crate::driver::jobs::JobDriver;
use crate::driver::power_cut::{run_to_cut, CutAt};
use crate::driver::replay::ReplayDriver;
use crate::driver::requests::{RequestList, RequestListDriver};
use crate::driver::sampler::Sampler;
use crate::error::{got, Invalid, JOB};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::peak_memory_bytes;
use crate::stats::power::PowerInputs;
use crate::stats::result::*;
use crate::workload::trace::replay::{DriveTarget, Replay, TraceJob};
use crate::workload::JobSpec;
use std::collections::BTreeMap;
use std::time::Instant;

pub struct RunOptions {
    pub seed: u64,
    pub record_requests: bool,
    /// Periodic statistics: sample the device's state every this much simulated time
    /// (`driver::sampler`, the result's `samples`); None: no sampling, the driver unwrapped.
    pub stats_interval: Option<SimTime>,
    /// A power cut on the page-mapped FTL (docs/power-loss.md): after the device has handled
    /// this many events, or at this simulated time (at most one of the two); the run ends there
    /// and its result gains `power_loss`. None: no cut, and no power-loss model.
    pub power_cut_event: Option<u64>,
    pub power_cut_at: Option<SimTime>,
}

impl RunOptions {
    /// A plain run with `seed`: no records, no sampling, no power cut.
    pub fn seeded(seed: u64) -> RunOptions {
        RunOptions {
            seed,
            record_requests: false,
            stats_interval: None,
            power_cut_event: None,
            power_cut_at: None,
        }
    }

    /// The cut these options ask for, checked.
    pub fn power_cut(&self) -> Result<Option<CutAt>> {
        match (self.power_cut_event, self.power_cut_at) {
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(Error::bad_job(Invalid::unnamed(
                "power_cut_event and power_cut_at",
                got("both", "at most one"),
            ))),
            (Some(0), None) => Err(Error::bad_job(Invalid::unnamed(
                "power_cut_event",
                got(
                    "0",
                    "at least 1 (the device event after which the power fails)",
                ),
            ))),
            (Some(n), None) => Ok(Some(CutAt::Event(n))),
            (None, Some(t)) => Ok(Some(CutAt::Time(t))),
        }
    }
}

pub struct RunOutput {
    pub result: RunResult,
    pub records: Option<Vec<RequestRecord>>,
    /// The progress callback stopped the run (Ctrl-C) after preconditioning: the result holds
    /// the requests completed by then, its stop reason [`INTERRUPTED`].
    pub interrupted: bool,
    /// A run of several flows with records: each flow's measured requests (from the end of its
    /// own ramp), in the order the flows were given.
    pub flow_records: Option<Vec<Vec<RequestRecord>>>,
}

/// The stop reason of a run its progress callback stopped.
pub const INTERRUPTED: &str = "interrupted";

/// How often (in events) the run checks the wall clock to report progress.
const CHECK_EVERY: u64 = 1 << 16;

/// Run `job` on the device `cfg`. `progress(done, total)` is called about ten times per wall
/// second; returning false stops the run: with [`Error::Interrupted`] while preconditioning,
/// after it with the result so far ([`RunOutput::interrupted`]).
pub fn run(
    cfg: &SsdConfig,
    spec: &JobSpec,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    if cfg.hfsl.is_some() {
        refuse_cut_under_hfsl(opts)?;
        return run_hfsl_job(cfg, spec, opts, progress);
    }
    let job = spec.fit(cfg.logical_bytes())?;
    let mut dev = new_device(cfg, opts)?;
    let unit = cfg.map_unit_bytes();
    dev.expect_touches(job.touched_units(unit), job.touched_span(unit));
    check_streams(&dev, spec)?;
    let mut driver = JobDriver::new(job, &dev, opts.seed)?;
    let job_json = serde_json::to_value(spec).expect("job serialises");
    let (mut result, finished) =
        drive_to_result(&mut dev, &mut driver, cfg, job_json, opts, progress)?;
    result.latency_depth = driver.outcomes()[0].latency_depth;
    Ok(RunOutput {
        result,
        records: dev.take_records(),
        interrupted: !finished,
        flow_records: None,
    })
}

/// What the run functions need of a driver besides [`Driver`]: to start on the device, and to
/// say how it ended.
trait RunDriver: Driver {
    fn start_on(&mut self, dev: &mut Device);
    fn stop_reason(&mut self) -> Result<&'static str>;
}

macro_rules! run_driver {
    ($($t:ty),*) => {$(
        impl RunDriver for $t {
            fn start_on(&mut self, dev: &mut Device) {
                self.start(dev)
            }
            fn stop_reason(&mut self) -> Result<&'static str> {
                self.finish()
            }
        }
    )*};
}
run_driver!(JobDriver, ReplayDriver, RequestListDriver);

/// Precondition `dev`, run `driver` on it to its end (or until `progress` says stop, or to the
/// power cut `opts` asks for), and build the result with its samples and power-loss figures;
/// true when the run finished. What every run function shares once its driver is built.
fn drive_to_result<D: RunDriver>(
    dev: &mut Device,
    driver: &mut D,
    cfg: &SsdConfig,
    job_json: serde_json::Value,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<(RunResult, bool)> {
    let t = precondition_with(dev, cfg, opts.seed, progress)?;
    let cut = arm_cut(dev, opts)?;
    driver.start_on(dev);
    let (wall, finished, samples, power_loss) =
        drive_sampled(dev, driver, progress, opts.stats_interval, cut)?;
    let stop = match (finished, &power_loss) {
        (true, Some(_)) => POWER_CUT,
        (true, None) => driver.stop_reason()?,
        (false, _) => INTERRUPTED,
    };
    let mut result = build_result(dev, cfg, job_json, opts.seed, stop, wall, t);
    result.samples = samples;
    result.power_loss = power_loss;
    Ok((result, finished))
}

/// Run `specs` as flows on the device `cfg` (`driver::jobs`): the flows of a group together,
/// the groups one after another on the device as the one before left it. With one spec this is
/// [`run`]; with several the result has each flow's figures (`flows`) and `job` lists the specs,
/// and with records each flow's own ([`RunOutput::flow_records`]).
pub fn run_flows(
    cfg: &SsdConfig,
    specs: &[JobSpec],
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    if specs.len() == 1 {
        return run(cfg, &specs[0], opts, progress);
    }
    if specs.is_empty() {
        return Err(Error::bad_job(Invalid::unnamed(
            "flows",
            got("none", "at least one job"),
        )));
    }
    if cfg.hfsl.is_some() {
        return Err(Error::job(
            "flows: several flows on a fusion device driven by HFSL ([hfsl]) are not modelled; run one job".into(),
        ));
    }
    let mut jobs = Vec::with_capacity(specs.len());
    let mut touched = 0u64;
    // The flows' regions' hull (empty until a flow is added: start past end).
    let mut span = std::ops::Range {
        start: u64::MAX,
        end: 0,
    };
    let mut dev = new_device(cfg, opts)?;
    for (f, spec) in specs.iter().enumerate() {
        let job = spec
            .fit(cfg.logical_bytes())
            .map_err(|e| e.in_flow(f, &spec.name))?;
        touched = touched.saturating_add(job.touched_units(cfg.map_unit_bytes()));
        let flow = job.touched_span(cfg.map_unit_bytes());
        span = span.start.min(flow.start)..span.end.max(flow.end);
        check_streams(&dev, spec).map_err(|e| e.in_flow(f, &spec.name))?;
        jobs.push(job);
    }
    dev.expect_touches(touched, span);
    let mut driver = JobDriver::flows(jobs, &dev, opts.seed)?;
    let job_json = serde_json::to_value(specs).expect("jobs serialise");
    let (mut result, finished) =
        drive_to_result(&mut dev, &mut driver, cfg, job_json, opts, progress)?;
    let outcomes = driver.outcomes();
    result.flows = Some(outcomes.iter().map(flow_result).collect());
    let records = dev.take_records();
    let flow_records = records.as_ref().map(|recs| {
        let mut per_flow: Vec<Vec<RequestRecord>> = vec![Vec::new(); outcomes.len()];
        for r in recs {
            let f = driver.flow_of_queue(r.queue);
            if r.issue_ps >= outcomes[f].measure_from.ps() {
                per_flow[f].push(*r);
            }
        }
        per_flow
    });
    Ok(RunOutput {
        result,
        records,
        interrupted: !finished,
        flow_records,
    })
}

/// A flow's own figures, from the end of its ramp to its last completion.
fn flow_result(o: &crate::driver::jobs::FlowOutcome) -> FlowResult {
    let window = (o.last_completion - o.measure_from.min(o.last_completion)).as_secs_f64();
    let (ops, count, bytes) = ops_over(|op| &o.lat[op.index()], window);
    let (mib, mb) = bandwidth(bytes, window);
    FlowResult {
        name: o.job.spec.name.clone(),
        group: o.job.spec.group,
        start_s: o.start.as_secs_f64(),
        end_s: o.last_completion.as_secs_f64(),
        measured_time_s: window,
        ops,
        total: Totals {
            count,
            bytes,
            iops: per_s(count, window),
            bandwidth_mib_s: mib,
            bandwidth_mb_s: mb,
        },
        latency_depth: o.latency_depth,
    }
}

/// Replay a trace (or a workload model) on the device `cfg`. The trace is read once to check
/// it and fix the address mapping, then again as the run goes.
pub fn run_replay(
    cfg: &SsdConfig,
    tjob: &TraceJob,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    if cfg.hfsl.is_some() {
        refuse_cut_under_hfsl(opts)?;
        return run_hfsl_replay(cfg, tjob, opts, progress);
    }
    let replay = Replay::on_drive(tjob, DriveTarget::of(cfg), opts.seed)?;
    let mut dev = new_device(cfg, opts)?;
    // A trace may touch any unit of the drive.
    dev.expect_touches(replay.per_pass, 0..u64::MAX);
    let mut driver = ReplayDriver::new(replay, tjob);
    let job_json = serde_json::to_value(tjob).expect("trace job serialises");
    let (mut result, finished) =
        drive_to_result(&mut dev, &mut driver, cfg, job_json, opts, progress)?;
    result.trace = Some(driver.outcome());
    Ok(RunOutput {
        result,
        records: dev.take_records(),
        interrupted: !finished,
        flow_records: None,
    })
}

/// Run a host program's request list on the device `cfg` (`driver::requests`): in order, at
/// most `list.iodepth` in flight, measured after `list.warmup` requests. The result's `job`
/// describes the list and its `requests` section holds the measured write counters.
pub fn run_requests(
    cfg: &SsdConfig,
    list: RequestList,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    if cfg.hfsl.is_some() {
        return Err(Error::job(
            "a request list runs on a drive, not through HFSL ([hfsl] in the config)".into(),
        ));
    }
    list.check()?;
    let job_json = list.job_json();
    let mut dev = new_device(cfg, opts)?;
    let mut driver = RequestListDriver::new(list);
    let (mut result, finished) =
        drive_to_result(&mut dev, &mut driver, cfg, job_json, opts, progress)?;
    result.requests = Some(driver.outcome(&dev));
    Ok(RunOutput {
        result,
        records: dev.take_records(),
        interrupted: !finished,
        flow_records: None,
    })
}

/// The bytes a job on `cfg` may address, what [`run`] fits a job to: the logical capacity, or
/// on a fusion device what HFSL offers. (The fio reader checks a job file against it, so that a
/// job too large for the drive is named by its file and line.)
pub fn job_capacity(cfg: &SsdConfig) -> Result<u64> {
    if cfg.hfsl.is_some() {
        hfsl_capacity(cfg)
    } else {
        Ok(cfg.logical_bytes())
    }
}

/// The bytes HFSL offers on fusion device `cfg` (its NAND less GC's spare blocks).
fn hfsl_capacity(cfg: &SsdConfig) -> Result<u64> {
    let hw = hfsl::hardware(cfg)?;
    let h = cfg.hfsl.clone().unwrap_or_default();
    Ok(hfsl::usable_pages(&h, &hw) * hw.nand_page_bytes)
}

/// The application a run's workload is sent by (`hfsl.app`).
fn hfsl_app(cfg: &SsdConfig) -> u32 {
    cfg.hfsl.as_ref().map_or(0, |h| h.app)
}

/// A synthetic job through HFSL on a fusion device (`[hfsl]` in the config).
fn run_hfsl_job(
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
fn run_hfsl_replay(
    cfg: &SsdConfig,
    tjob: &TraceJob,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
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
        Error::job(format!(
            "hfsl: the workload spans {span} bytes, {pages} NAND pages; HFSL's map holds at most {} pages",
            u32::MAX
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
    let (mib, mb) = bandwidth(bytes, window);
    result.ops = ops;
    result.total = Totals {
        count,
        bytes,
        iops: per_s(count, window),
        bandwidth_mib_s: mib,
        bandwidth_mb_s: mb,
    };
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

fn new_device(cfg: &SsdConfig, opts: &RunOptions) -> Result<Device> {
    let mut dev = Device::new(cfg, opts.seed)?;
    if opts.record_requests {
        dev.record_requests();
    }
    Ok(dev)
}

/// Precondition the FTL as the config says (untimed); returns the wall seconds it took.
pub fn precondition(dev: &mut Device, cfg: &SsdConfig, seed: u64) -> Result<f64> {
    precondition_with(dev, cfg, seed, &mut |_, _| true)
}

/// [`precondition`], with progress (see [`Device::precondition_with`], which every driver shares).
pub fn precondition_with(
    dev: &mut Device,
    cfg: &SsdConfig,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<f64> {
    dev.precondition_with(cfg, seed, progress)
}

/// Precondition the drive `cfg` describes (or load the state it names) and save its state to
/// `path` (`ssdlab precondition --save`, docs/state.md): what it took, as JSON (the path, the
/// file's bytes, the seconds preconditioning and saving took, the steady state reached).
pub fn precondition_to_state(
    cfg: &SsdConfig,
    seed: u64,
    path: &std::path::Path,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<serde_json::Value> {
    if let Some(why) = cfg.state_unsupported() {
        return Err(Error::config(format!(
            "precondition --save: saving a drive state is not supported for {why}; only the \
             page-mapped FTL (ftl.kind = \"page\", full or cached map) saves one"
        )));
    }
    let mut dev = Device::new(cfg, seed)?;
    let t = precondition_with(&mut dev, cfg, seed, progress)?;
    let made_by = crate::device::state::made_by_precondition(cfg, seed);
    let saved = dev.save_state(cfg, path, &made_by)?;
    Ok(serde_json::json!({
        "state": saved.path,
        "bytes": saved.bytes,
        "precondition_seconds": t,
        "save_seconds": saved.save_seconds,
        "steady_state": dev.steady_state_result(),
        "config_name": cfg.meta.name,
        "seed": seed,
    }))
}

/// [`drive`], sampling the device every `interval` if given (`driver::sampler`): the wall
/// seconds, whether it ran to the end, and the samples. Without an interval the driver runs
/// unwrapped, so periodic statistics cost nothing when off.
#[allow(clippy::type_complexity)]
fn drive_sampled<D: Driver>(
    dev: &mut Device,
    driver: &mut D,
    progress: &mut dyn FnMut(u64, u64) -> bool,
    interval: Option<SimTime>,
    cut: Option<CutAt>,
) -> Result<(f64, bool, Option<Series>, Option<PowerLossResult>)> {
    if let Some(cut) = cut {
        // Up to the cut (sampled if asked), then recovery.
        let t1 = Instant::now();
        let mut tick = tenth_seconds(progress);
        let (out, series) = match interval {
            Some(SimTime::ZERO) => {
                return Err(Error::bad_job(Invalid::unnamed(
                    "stats_interval",
                    got("0", "a positive duration"),
                )))
            }
            Some(i) => {
                let mut s = Sampler::start(driver, dev, i);
                let out = run_to_cut(dev, &mut s, cut, &mut tick)?;
                (out, Some(s.finish()?))
            }
            None => (run_to_cut(dev, driver, cut, &mut tick)?, None),
        };
        return Ok((t1.elapsed().as_secs_f64(), true, series, Some(out.result)));
    }
    let Some(interval) = interval else {
        let (wall, finished) = drive(dev, driver, progress)?;
        return Ok((wall, finished, None, None));
    };
    if interval == SimTime::ZERO {
        return Err(Error::bad_job(Invalid::unnamed(
            "stats_interval",
            got("0", "a positive duration"),
        )));
    }
    let mut sampler = Sampler::start(driver, dev, interval);
    let (wall, finished) = drive(dev, &mut sampler, progress)?;
    Ok((wall, finished, Some(sampler.finish()?), None))
}

/// The stop reason of a run cut by a power failure (`RunOptions::power_cut_event`, `_at`).
pub const POWER_CUT: &str = "power_cut";

/// Arm the device's power-loss model when `opts` ask for a cut (after preconditioning: the
/// preconditioned drive counts as checkpointed); the cut, checked.
fn arm_cut(dev: &mut Device, opts: &RunOptions) -> Result<Option<CutAt>> {
    let cut = opts.power_cut()?;
    if let Some(c) = cut {
        dev.enable_power_loss(c.option())?;
    }
    Ok(cut)
}

/// A fusion device under HFSL is cut with its own option.
fn refuse_cut_under_hfsl(opts: &RunOptions) -> Result<()> {
    match opts.power_cut()? {
        None => Ok(()),
        Some(c) => Err(Error::job(format!(
            "{}: this config drives a fusion device with HFSL ([hfsl]), whose power cut is \
             hfsl.power_cut_event (the run's power_cut_event and power_cut_at are the \
             page-mapped FTL's)",
            c.option()
        ))),
    }
}

/// Run `driver` on `dev` until the device is idle, or until `progress` says stop; returns the
/// wall seconds it took and whether it ran to the end.
fn drive<D: Driver>(
    dev: &mut Device,
    driver: &mut D,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<(f64, bool)> {
    let t1 = Instant::now();
    let finished = dev.run(driver, CHECK_EVERY, &mut tenth_seconds(progress))?;
    if !finished {
        // What completed so far is still a result (fio keeps it too); the caller marks it.
        return Ok((t1.elapsed().as_secs_f64(), false));
    }
    // Simulated time adds with saturation: once an event lands at the clock's end, every later
    // step takes 0 ps and the run "completes" with figures that mean nothing.
    // The times come from the user's config, job or trace: a user error (exit 2), not a bug.
    if dev.now() == SimTime::MAX {
        return Err(Error::job(format!(
            "the simulated clock reached its end (2^64 ps, about 213 days) with {} requests \
             completed: a time in the config, job or trace is too long for it (link latency, \
             bus or link rate, transfer overhead, trace timestamps or --time-scale); the \
             result would show later requests completing in 0 ps",
            dev.host().completed()
        )));
    }
    // A device that refused requests (a raw device given writes out of order) ran a different
    // workload from the one asked for: its figures would mislead.
    if let (n, Some((op, offset, status))) = dev.host().failed() {
        // Media errors under `[reliability]` are what the experiment measures: the result
        // counts them. Any other failure is a workload the device refused.
        let media = dev.host().failed_with(Status::Uncorrectable)
            + dev.host().failed_with(Status::ReadOnly)
            + dev.host().failed_with(Status::NoSpace);
        if dev.config().reliability.is_some() && media == n {
            return Ok((t1.elapsed().as_secs_f64(), true));
        }
        // A zoned drive's refusals are its answers to the host (a write off the write
        // pointer, too many open zones): the result counts them by status.
        if dev.config().zns.is_some() {
            return Ok((t1.elapsed().as_secs_f64(), true));
        }
        return Err(Error::job(format!(
            "{n} of {} requests failed; the first, a {} at byte {offset}: {}",
            dev.host().completed(),
            op.name(),
            status.describe()
        )));
    }
    Ok((t1.elapsed().as_secs_f64(), true))
}

/// Every stream (placement identifier) `spec`'s writes may carry must exist on the device:
/// an error naming the field otherwise.
fn check_streams(dev: &Device, spec: &JobSpec) -> Result<()> {
    let field = if spec.placement_ids.is_empty() {
        "stream"
    } else {
        "placement_ids"
    };
    for s in spec.streams_used() {
        if s != 0 {
            if let Err(m) = dev.check_stream_id(s as u8) {
                return Err(Error::bad_job(Invalid::says(JOB, field, m)));
            }
        }
    }
    Ok(())
}

/// The FTL's figures beyond `device`'s: the mapping cache's (cached mapping) and the write
/// streams' (`ftl.streams` > 1); None when neither is on.
fn ftl_result(dev: &Device) -> Option<FtlResult> {
    let ftl = dev.ftl()?;
    let mapping = ftl.mapping.as_ref().map(|m| MappingResult {
        location: if m.hmb { "hmb" } else { "dram" },
        translation_pages: m.pages,
        cache_pages: m.capacity() as u64,
        hits: m.stats.hits,
        misses: m.stats.misses,
        hit_ratio: if m.stats.hits + m.stats.misses > 0 {
            m.stats.hits as f64 / (m.stats.hits + m.stats.misses) as f64
        } else {
            0.0
        },
        translation_reads: m.stats.translation_reads,
        translation_writes: m.stats.translation_writes,
    });
    // With `[fdp]` the streams are its handles, reported in `device.fdp`.
    let streams = ftl
        .stream_stats()
        .filter(|_| dev.config().fdp.is_none())
        .map(|all| {
            all.iter()
                .enumerate()
                .map(|(i, s)| StreamResult {
                    stream: i as u32,
                    host_units_written: s.host_units_written,
                    gc_units_moved: s.gc_units_moved,
                    write_amplification: if s.host_units_written > 0 {
                        (s.host_units_written + s.gc_units_moved) as f64
                            / s.host_units_written as f64
                    } else {
                        0.0
                    },
                })
                .collect()
        });
    (mapping.is_some() || streams.is_some()).then_some(FtlResult { mapping, streams })
}

/// Wear-out and errors, when the config has `[reliability]`.
fn reliability_result(dev: &Device) -> Option<ReliabilityResult> {
    let w = dev.backend().wear()?;
    // Wear is modelled on NAND only.
    let fil = &dev.fil()?.counters;
    let host = dev.host();
    Some(ReliabilityResult {
        pe_limit: w.pe_limit,
        factory_bad_blocks: w.factory_bad_blocks,
        retired_blocks: w.retired_blocks,
        good_blocks: w.good_blocks,
        min_good_blocks: w.min_good_blocks,
        read_only: w.read_only,
        percentage_used: dev.percentage_used()?,
        available_spare_percent: dev.available_spare_percent(),
        reads_retried: fil.reads_retried,
        read_retry_steps: fil.read_retry_steps,
        uncorrectable_reads: fil.uncorrectable_reads,
        failed_reads: host.failed_with(Status::Uncorrectable),
        refused_writes_read_only: host.failed_with(Status::ReadOnly),
        refused_writes_no_space: host.failed_with(Status::NoSpace),
        offline_zones: dev.backend().zoned().and_then(|z| z.offline_zones()),
    })
}

fn bandwidth(bytes: u64, secs: f64) -> (f64, f64) {
    if secs <= 0.0 {
        return (0.0, 0.0);
    }
    (
        bytes as f64 / secs / (1024.0 * 1024.0),
        bytes as f64 / secs / 1e6,
    )
}

/// `n` per second over `secs` (0 over no time).
fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// `n` per `of` (0 when `of` is 0).
fn per(n: u64, of: u64) -> f64 {
    if of > 0 {
        n as f64 / of as f64
    } else {
        0.0
    }
}

/// One op's figures from its latencies, over a window of `secs`.
/// Each operation that ran, with its figures over `secs` (from `latency`, an operation's
/// latencies), and the requests and bytes of them all: the `ops` of a run's result or a flow's.
fn ops_over<'a>(
    latency: impl Fn(Op) -> &'a crate::stats::LatencyStats,
    secs: f64,
) -> (BTreeMap<&'static str, OpResult>, u64, u64) {
    let mut ops = BTreeMap::new();
    let (mut count, mut bytes) = (0, 0);
    for op in Op::ALL {
        let l = latency(op);
        if l.count == 0 {
            continue;
        }
        count += l.count;
        bytes += l.bytes;
        ops.insert(op.name(), op_result(l, secs));
    }
    (ops, count, bytes)
}

fn op_result(l: &crate::stats::LatencyStats, secs: f64) -> OpResult {
    let (mib, mb) = bandwidth(l.bytes, secs);
    OpResult {
        count: l.count,
        bytes: l.bytes,
        iops: per_s(l.count, secs),
        bandwidth_mib_s: mib,
        bandwidth_mb_s: mb,
        latency_us: l.summary(),
    }
}

/// The result of a run on `dev`, from its layers' figures.
pub fn build_result(
    dev: &Device,
    cfg: &SsdConfig,
    job: serde_json::Value,
    seed: u64,
    stop: &str,
    wall_s: f64,
    pre_s: f64,
) -> RunResult {
    let host = dev.host();
    let end = host.last_completion();
    let start = host.measure_from().min(end);
    let window = (end - start).as_secs_f64();
    let (ops, count, bytes) = ops_over(|op| host.latency(op), window);
    let (mib, mb) = bandwidth(bytes, window);
    // The NAND layers' counts; a PCM-only device has none of these layers: zeros.
    let f = dev.ftl().map(|f| f.stats.clone()).unwrap_or_default();
    let hil = dev.hil().map(|h| h.counters.clone()).unwrap_or_default();
    let fil = dev.fil().map(|f| f.counters.clone()).unwrap_or_default();
    let unit_per_page = dev.geometry().map_or(1, |g| g.units_per_page) as f64;
    let mut host_pages_written = (f.host_units_written as f64 / unit_per_page).ceil() as u64;
    // GC may run on after the last completion: utilisation is over all simulated time.
    let total_time = end.max(dev.now()).as_secs_f64().max(1e-18);
    let util = |busy: SimTime| (busy.as_secs_f64() / total_time).min(1.0);
    let backend = dev.backend();
    let own = backend.figures();
    let firmware_busy = dev.hil().map_or(SimTime::ZERO, |h| h.cpu_busy()) + backend.firmware_busy();
    // The power-loss model's map checkpoints are programs of the drive too (0 without it).
    let mut wa = if f.host_units_written > 0 {
        (f.host_units_written + f.gc_units_moved + f.checkpoint_units_written) as f64
            / f.host_units_written as f64
    } else {
        0.0
    };
    if let Some(pages) = own.host_pages_written {
        host_pages_written = pages;
    }
    if let Some(own_wa) = own.write_amplification {
        wa = own_wa;
    }
    let events = dev.events();
    let completed = host.completed();
    let (link_up, link_down) = dev.interface().link_busy();
    let cores = dev.host_cpu();
    let cache = dev
        .cache()
        .map(|bm| bm.result(end.max(dev.now()).as_secs_f64()));
    let pcm = backend.pcm().map(|p| p.result(total_time, &util));
    RunResult {
        schema: SCHEMA,
        ssdlab_version: env!("CARGO_PKG_VERSION"),
        config_name: cfg.meta.name.clone(),
        config_hash: cfg.hash(),
        seed,
        job,
        trace: None,
        requests: None,
        latency_depth: None,
        flows: None,
        samples: None,
        power_loss: None,
        sim: SimInfo {
            simulated_time_s: end.as_secs_f64(),
            measured_time_s: window,
            requests: completed,
            events,
            stop_reason: stop.to_string(),
        },
        ops,
        total: Totals {
            count,
            bytes,
            iops: per_s(count, window),
            bandwidth_mib_s: mib,
            bandwidth_mb_s: mb,
        },
        device: DeviceResult {
            logical_bytes: cfg.logical_bytes(),
            map_unit_bytes: cfg.map_unit_bytes(),
            host_pages_read: (hil.host_units_read as f64 / unit_per_page).ceil() as u64,
            host_pages_written,
            nand_pages_read: fil.nand_pages_read,
            nand_pages_written: fil.nand_pages_written,
            write_amplification: wa,
            gc_runs: f.gc_runs,
            gc_units_moved: f.gc_units_moved,
            erases: f.erases + own.erases,
            erase_count: own.erase_count.unwrap_or_else(|| {
                Spread::of(
                    dev.ftl()
                        .into_iter()
                        .flat_map(|f| f.blocks().iter().map(|b| b.erase_count as f64)),
                )
            }),
            wear_level_migrations: f.wl_migrations,
            forced_erases: f.forced_erases,
            trimmed_units: f.trimmed_units,
            unmapped_reads: hil.unmapped_reads,
            buffer_reads: hil.buffer_reads,
            multiplane_ops: fil.multiplane_ops,
            page_register_hits: fil.page_register_hits,
            read_ahead_pages: cfg
                .controller
                .read_ahead
                .filter(|b| b.0 > 0)
                .map(|_| fil.read_ahead_pages),
            nand_ops: cfg.nand.names_nand_ops().then_some(NandOpsResult {
                single_plane_ops: fil.single_plane_ops(),
                multi_plane_ops: fil.multi_plane_ops,
                partners_refused: fil.partners_refused,
                program_suspensions: fil.program_suspensions,
                erase_suspensions: fil.erase_suspensions,
            }),
            merges: own.merges,
            gc: (cfg.ftl.gc.background || cfg.ftl.gc.copyback).then_some(GcResult {
                background_runs: f.background_gc_runs,
                copyback_pages: fil.copyback_pages,
            }),
            steady_state: dev.steady_state_result(),
            zones: own.zones.map(|mut z| {
                for st in Status::ALL {
                    let n = host.failed_with(st);
                    if n > 0 {
                        z.errors.insert(st.name(), n);
                    }
                }
                z
            }),
            fdp: dev.fdp_result(),
        },
        utilisation: Utilisation {
            channel: UnitUtil::of(
                dev.fil()
                    .map_or(Vec::new(), |f| f.channel_busy().map(util).collect()),
            ),
            die: UnitUtil::of(
                dev.fil()
                    .map_or(Vec::new(), |f| f.die_busy().map(util).collect()),
            ),
            link_up: util(link_up),
            link_down: util(link_down),
            host_cpu: cores.busy().map(util).sum::<f64>() / cores.cores() as f64,
            controller_cpu: util(firmware_busy),
            host_cpu_busy_s: cores.busy().map(|b| b.as_secs_f64()).sum(),
            controller_cpu_busy_s: firmware_busy.as_secs_f64(),
        },
        interface: interface_result(dev),
        ftl: ftl_result(dev),
        reliability: reliability_result(dev),
        power: cfg.power.as_ref().map(|p| {
            let x = power_inputs(
                dev,
                total_time,
                firmware_busy,
                own.pages_copied,
                cache.as_ref(),
                pcm.as_ref(),
            );
            crate::stats::power::power(p, &x)
        }),
        cache,
        pcm,
        hfsl: None,
        wall: Wall {
            seconds: wall_s,
            precondition_seconds: pre_s,
            requests_per_s: per_s(completed, wall_s),
            events_per_s: per_s(events, wall_s),
            memory: dev.memory(),
            peak_memory_bytes: peak_memory_bytes(),
            reply_lag_us: None,
        },
    }
}

/// What the power model needs of a NAND device's run, over `secs` of simulated time, with the
/// energy its cache buffer and PCM report in their own blocks.
fn power_inputs(
    dev: &Device,
    secs: f64,
    firmware_busy: SimTime,
    backend_copies: u64,
    cache: Option<&CacheResult>,
    pcm: Option<&PcmResult>,
) -> PowerInputs {
    let Backend::Nand(nand) = dev.backend() else {
        // A PCM-only device: no NAND dies; the controller's idle and core power, its data
        // path over the bytes the PCM moved, the cache buffer's DRAM if it has one, and the
        // PCM's own energy.
        return PowerInputs {
            seconds: secs,
            controller_busy_s: firmware_busy.as_secs_f64(),
            bytes_read: pcm.map_or(0, |r| r.bytes_read),
            bytes_written: pcm.map_or(0, |r| r.bytes_written),
            cache_mj: cache.map(|c| c.energy.dynamic_mj + c.energy.leakage_mj),
            pcm_mj: pcm.and_then(|r| {
                r.energy
                    .read_uj
                    .zip(r.energy.write_uj)
                    .map(|(read, write)| (read + write) * 1e-3)
            }),
            ..PowerInputs::default()
        };
    };
    let (fil, f, geo) = (&nand.fil.counters, &nand.ftl.stats, &nand.geo);
    PowerInputs {
        seconds: secs,
        dies: nand.fil.die_busy().count() as u64,
        array_read_s: fil.array_read_time.as_secs_f64(),
        array_program_s: fil.array_program_time.as_secs_f64(),
        array_erase_s: fil.array_erase_time.as_secs_f64(),
        channel_busy_s: nand.fil.channel_busy().map(|b| b.as_secs_f64()).sum(),
        controller_busy_s: firmware_busy.as_secs_f64(),
        // Saturating: a count of units times their size cannot wrap into a small figure.
        bytes_read: (nand
            .hil
            .counters
            .host_units_read
            .saturating_add(f.gc_units_moved))
        .saturating_mul(geo.unit_bytes)
        .saturating_add(backend_copies.saturating_mul(geo.page_bytes)),
        bytes_written: fil.nand_pages_written.saturating_mul(geo.page_bytes),
        cache_mj: cache.map(|c| c.energy.dynamic_mj + c.energy.leakage_mj),
        // Only when both figures exist: a missing one (null in the pcm block) is unknown.
        pcm_mj: pcm.and_then(|r| Some((r.energy.read_uj? + r.energy.write_uj?) * 1e-3)),
    }
}

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

fn interface_result(dev: &Device) -> InterfaceResult {
    let link = dev.interface();
    InterfaceResult {
        kind: link.kind().name(),
        link: link.link_name().to_string(),
        device_queue_depth: link.device_queue_depth(),
        dram: link.dramif().map(|d| DramIfResult {
            stats: d.stats.clone(),
            interface_bandwidth_mb_s: {
                // Data movement: the copy phases without the DMA set-ups (protocol work).
                let moving_ns = d.stats.copy_phase_ns - d.stats.dma_setup_ns;
                if moving_ns > 0.0 {
                    d.stats.data_bytes as f64 / (moving_ns * 1e-9) / 1e6
                } else {
                    0.0
                }
            },
        }),
    }
}
