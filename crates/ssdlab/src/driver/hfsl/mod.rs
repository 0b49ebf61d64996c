//! HFSL, seed 002's host-side FTL (§2.5–2.7), as a driver of the fusion device
//! (`ctrl::fusion`): host reads and writes by logical address become raw PCM and NAND commands
//! (`map`), run phase by phase (reads, then writes, then erases), one host request at a time.
//!
//! One at a time because the device checks NAND program order when a command reaches its
//! firmware: with the map placing pages as requests arrive, two requests in flight could reach
//! it out of order. Within a request the commands of a phase run in parallel, over the striped
//! channels. The I/O scheduler of §2.6.3 sits between the map and the device: a phase's raw
//! commands join their channel's circular queue, and on the scheduler's timer, once every
//! command sent before has completed, each queue sends up to `hfsl.max_cmd_send` of them.
//!
//! Host requests come from a [`HostSource`]: a list ([`run`]), a trace or workload model, or a
//! synthetic job (`crate::run` builds those). A request starts when the one before has ended,
//! or at its arrival if that is later; its latency counts from its arrival.

mod cut;
mod host;
pub mod map;
pub mod persist;
mod runner;
pub mod source;

use crate::config::{BackendKind, HfslConfig, OwnedRange, SsdConfig};
use crate::device::Device;
use crate::device::HardwareInfo;
use crate::error::{got, says, Invalid};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::stats::LatencyStats;
pub use cut::PowerCut;
pub use host::HfslHost;
use map::{HfslCounters, HfslMap};
use runner::Runner;

/// One host request to HFSL.
#[derive(Clone, Copy, Debug)]
pub struct HostIo {
    pub write: bool,
    pub offset: u64,
    pub len: u64,
    /// A write flagged metadata (goes to PCM whatever its size).
    pub meta: bool,
    /// The application that sends it: a write into a range another application owns
    /// (`hfsl.protect`) is refused.
    pub app: u32,
}

/// Where HFSL's host requests come from, in order.
pub trait HostSource {
    /// The next host request and its arrival, asked for at simulated time `now` (None: the
    /// source has no more, or its runtime is over).
    fn next_io(&mut self, now: SimTime) -> Result<Option<(SimTime, HostIo)>>;
}

impl<T: HostSource + ?Sized> HostSource for &mut T {
    fn next_io(&mut self, now: SimTime) -> Result<Option<(SimTime, HostIo)>> {
        (**self).next_io(now)
    }
}

/// A list of host requests, all arrived at time 0.
pub struct ListSource<'a> {
    ios: std::slice::Iter<'a, HostIo>,
}

impl<'a> ListSource<'a> {
    pub fn new(ios: &'a [HostIo]) -> ListSource<'a> {
        ListSource { ios: ios.iter() }
    }
}

impl HostSource for ListSource<'_> {
    fn next_io(&mut self, _now: SimTime) -> Result<Option<(SimTime, HostIo)>> {
        Ok(self.ios.next().map(|io| (SimTime::ZERO, *io)))
    }
}

/// What a run of HFSL measured.
#[derive(Clone, Debug, Default)]
pub struct HfslReport {
    /// Host requests that ran (refused writes are not among them).
    pub requests: u64,
    pub raw_commands: u64,
    /// Simulated time of the last completion.
    pub end: SimTime,
    /// Sum of host request latencies.
    pub latency_sum: SimTime,
    pub counters: HfslCounters,
    /// LPNs in PCM and in NAND at the end.
    pub pcm_pages: u64,
    pub nand_pages: u64,
    /// Writes refused by write protection (`hfsl.protect`, §2.7.4): not run, nothing changed.
    pub refused_writes: u64,
    /// Why, for the first [`MAX_REFUSALS`] of them.
    pub refusals: Vec<String>,
    pub queues: QueueCounters,
    /// With `hfsl.power_cut_event`: the cut and the restart.
    pub power_cut: Option<PowerCut>,
}

/// The I/O scheduler's figures (§2.6.3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Sends: a channel queue's commands handed to the device together.
    pub batches: u64,
    /// Commands sent in them.
    pub commands: u64,
    /// Sends that waited for a timer tick.
    pub timer_waits: u64,
    /// Sum over commands of the time they waited in their queue.
    pub queued: SimTime,
}

/// Refusal messages kept in a report (the count goes on).
pub const MAX_REFUSALS: usize = 16;

/// Host request latencies by kind (from arrival to the end of the last raw command).
#[derive(Default)]
pub struct HostLatency {
    pub read: LatencyStats,
    pub write: LatencyStats,
}

/// One host request's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostDone {
    pub arrival: SimTime,
    /// When its last raw command completed (its arrival, if it needed none).
    pub completed: SimTime,
    /// Raw PCM and NAND commands it became.
    pub raw_commands: u64,
    /// The power failed during the call ([`HfslHost::arm_power_cut`]); then `completed` is the
    /// cut's time unless the request was acknowledged before it.
    pub power_cut: bool,
    pub acknowledged: bool,
    /// The request's number among the host requests started (from 1): a write's data version,
    /// what [`HfslHost::read_back`] reports for the sub-pages holding its bytes.
    pub version: u32,
}

impl HostDone {
    pub fn latency(&self) -> SimTime {
        self.completed - self.arrival
    }
}

/// Why write `io` may not run: it touches a range of `protect` another application owns.
pub fn refusal(protect: &[OwnedRange], io: &HostIo) -> Option<String> {
    let (i, r) = protect
        .iter()
        .enumerate()
        .find(|(_, r)| r.app != io.app && r.overlaps(io.offset, io.len))?;
    Some(format!(
        "hfsl: application {} may not write bytes {}..{}: hfsl.protect[{i}], bytes {}..{}, belongs to application {}",
        io.app,
        io.offset,
        io.offset.saturating_add(io.len),
        r.offset.0,
        r.end(),
        r.app
    ))
}

/// The hardware information of fusion device `cfg`, or an error naming the config.
pub fn hardware(cfg: &SsdConfig) -> Result<HardwareInfo> {
    HardwareInfo::of(cfg).ok_or_else(|| {
        Error::bad_config(cfg.not_backend(format!(
            "a fusion device: HFSL drives {}",
            BackendKind::Fusion.what_sections_say()
        )))
    })
}

/// Run `ios` through HFSL on the fusion device `cfg` describes, over `logical_pages` logical
/// pages, with `cfg`'s `[hfsl]` (or its defaults).
pub fn run(cfg: &SsdConfig, seed: u64, logical_pages: u32, ios: &[HostIo]) -> Result<HfslReport> {
    let mut dev = Device::new(cfg, seed)?;
    let (report, _) = run_on(
        &mut dev,
        logical_pages,
        &mut ListSource::new(ios),
        &mut |_, _| true,
    )?;
    Ok(report)
}

/// Run the host requests of `source` through HFSL on `dev` (a fusion device) with its
/// config's `[hfsl]` (or its defaults), over `logical_pages` logical pages, until the source
/// is exhausted and the device idle. `progress(done, total)` is called as `Device::run` calls
/// it; returning false stops the run with [`Error::Interrupted`].
///
/// With `hfsl.power_cut_event = N` the power fails once the device has handled N events: HFSL
/// restarts, recovers its map and reports it (`HfslReport::power_cut`); the run ends there,
/// and `dev` is left as it was at the cut, so its figures describe the run up to it.
pub fn run_on(
    dev: &mut Device,
    logical_pages: u32,
    source: &mut dyn HostSource,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<(HfslReport, HostLatency)> {
    let cfg = dev.config().clone();
    let hw = hardware(&cfg)?;
    let hfsl = cfg.hfsl.clone().unwrap_or_default();
    let map = HfslMap::new(&hfsl, &hw, logical_pages)?;
    let mut r = Runner::new(map, &hfsl, &hw, source);
    if hfsl.power_cut_event.is_some() {
        r.track_data()?;
    }
    r.advance(dev, SimTime::ZERO);
    let cut = match hfsl.power_cut_event {
        None if !dev.run(&mut r, 1 << 16, progress)? => return Err(Error::Interrupted),
        None => None,
        Some(n) => Some(run_to_event(dev, &mut r, n, progress)?),
    };
    if let Some(e) = r.failed.take() {
        return Err(e);
    }
    // Simulated time saturates: at the clock's end every later step takes 0 ps, and the
    // figures would mean nothing.
    if dev.now() == SimTime::MAX {
        return Err(Error::bad_job(Invalid::unnamed(
            "hfsl",
            says(format!(
                "the simulated clock reached its end (2^64 ps, about 213 days) with {} host \
                 requests done: a time in the config or workload is too long for it (arrival \
                 times, hfsl.send_timer, link latency or rates)",
                r.report.requests
            )),
        )));
    }
    let mut report = r.final_report();
    if let Some(n) = cut {
        if !n {
            return Err(Error::bad_job(Invalid::unnamed(
                "hfsl.power_cut_event",
                got(
                    hfsl.power_cut_event.unwrap_or(0),
                    format!(
                        "at most {} (the events the run's device handled)",
                        dev.events()
                    ),
                ),
            )));
        }
        let mut cut = r.cut(dev)?;
        let first = cut.report.clone();
        let (restarted, again) = r.restart(dev, &hfsl, cut.report, hfsl.restart_cut_event)?;
        let restarted = match (again, hfsl.restart_cut_event) {
            (None, Some(n)) => {
                return Err(Error::bad_job(Invalid::unnamed(
                    "hfsl.restart_cut_event",
                    got(
                        n,
                        format!("at most {} (the events the restart handled)", dev.events()),
                    ),
                )))
            }
            (None, None) => restarted,
            // The restart that finished, under the cut that started it all.
            (Some(again), _) => PowerCut {
                restart_cut: true,
                ..r.restart(dev, &hfsl, again, None)?.0.under(first)
            },
        };
        report.power_cut = Some(restarted);
        std::mem::swap(dev, &mut cut.before);
    }
    Ok((report, r.latency))
}

/// Run `r` on `dev` until the device has handled `event` events (true) or has nothing left
/// before that (false), calling `progress` between slices.
fn run_to_event<S: HostSource>(
    dev: &mut Device,
    r: &mut Runner<S>,
    event: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<bool> {
    loop {
        let handled = dev.events();
        if handled >= event {
            return Ok(true);
        }
        let slice = (event - handled).min(1 << 16);
        if dev.run(r, slice, &mut |_, _| false)? {
            return Ok(dev.events() >= event);
        }
        if r.failed.is_some() {
            return Ok(true);
        }
        if !progress(dev.host().completed(), 0) {
            return Err(Error::Interrupted);
        }
    }
}

/// The logical pages HFSL can offer on `hw` with `cfg`: the NAND's pages less the spare blocks
/// GC keeps on each die.
pub fn usable_pages(cfg: &HfslConfig, hw: &HardwareInfo) -> u64 {
    map::usable_pages(cfg, hw)
}
