//! One run from (config, job, seed) to a result — a synthetic job or a trace replay — and the
//! benchmark. Here: fitting the job, building the device and its driver, preconditioning and
//! running; `result.rs` assembles the result from what the layers report, `hfsl_run.rs` sends
//! a run through seed 002's host-side FTL, `bench.rs` is `ssdlab bench`.

use crate::config::SsdConfig;
use crate::device::precondition::tenth_seconds;
use crate::device::{Device, Driver, RequestRecord, Status};
use crate::driver::jobs::JobDriver;
use crate::driver::power_cut::{run_to_cut, CutAt};
use crate::driver::replay::ReplayDriver;
use crate::driver::requests::{RequestList, RequestListDriver};
use crate::driver::sampler::Sampler;
use crate::error::{got, says, Invalid, JOB};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::stats::result::{FlowResult, PowerLossResult, RunResult, Series};
use crate::workload::trace::replay::{DriveTarget, Replay, TraceJob};
use crate::workload::JobSpec;
use std::time::Instant;

mod bench;
mod hfsl_run;
mod result;

pub use bench::{bench, bench_state, bench_with, cached_mapping, gc_tail};
use hfsl_run::{hfsl_capacity, run_hfsl_job, run_hfsl_replay};
pub use result::build_result;
use result::{ops_over, totals};

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
        return Err(Error::bad_job(Invalid::unnamed(
            "flows",
            says(
                "several flows on a fusion device driven by HFSL ([hfsl]) are not modelled; run \
                 one job",
            ),
        )));
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
    FlowResult {
        name: o.job.spec.name.clone(),
        group: o.job.spec.group,
        start_s: o.start.as_secs_f64(),
        end_s: o.last_completion.as_secs_f64(),
        measured_time_s: window,
        ops,
        total: totals(count, bytes, window),
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
        return Err(Error::bad_job(Invalid::unnamed(
            "request list",
            says("it runs on a drive, not through HFSL ([hfsl] in the config)"),
        )));
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
        return Err(Error::bad_config(Invalid::unnamed(
            "precondition --save",
            says(format!(
                "saving a drive state is not supported for {why}; only the page-mapped FTL \
                 (ftl.kind = \"page\", full or cached map) saves one"
            )),
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
        Some(c) => Err(Error::bad_job(Invalid::unnamed(
            c.option(),
            says(
                "this config drives a fusion device with HFSL ([hfsl]), whose power cut is \
                 hfsl.power_cut_event (the run's power_cut_event and power_cut_at are the \
                 page-mapped FTL's)",
            ),
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
        return Err(Error::bad_job(Invalid::unnamed(
            "run",
            says(format!(
                "the simulated clock reached its end (2^64 ps, about 213 days) with {} requests \
                 completed: a time in the config, job or trace is too long for it (link \
                 latency, bus or link rate, transfer overhead, trace timestamps or \
                 --time-scale); the result would show later requests completing in 0 ps",
                dev.host().completed()
            )),
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
        return Err(Error::bad_job(Invalid::unnamed(
            "run",
            says(format!(
                "{n} of {} requests failed; the first, a {} at byte {offset}: {}",
                dev.host().completed(),
                op.name(),
                status.describe()
            )),
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
            if let Err(p) = dev.check_stream_id(s as u8) {
                return Err(Error::bad_job(Invalid::new(JOB, field, p)));
            }
        }
    }
    Ok(())
}
