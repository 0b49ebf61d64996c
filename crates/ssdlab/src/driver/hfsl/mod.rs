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

pub mod map;
pub mod persist;
pub mod source;

use crate::config::{HfslConfig, OwnedRange, SsdConfig};
use crate::device::HardwareInfo;
use crate::device::{Completion, Device, Driver, Flags, Request, Status};
use crate::error::{got, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::LatencyStats;
use map::{HfslCounters, HfslMap, RawOp, Recovered, PHASES};
use persist::{Lost, Media};

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

/// A power cut and the restart after it (issue 11 point 6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PowerCut {
    /// Device events handled before the power failed, and the simulated time.
    pub event: u64,
    pub at: SimTime,
    /// Host requests acknowledged before it, and whether one was under way.
    pub requests_acknowledged: u64,
    pub request_cut: bool,
    /// Raw commands in the device and in HFSL's channel queues at the cut.
    pub commands_in_flight: u64,
    pub commands_queued: u64,
    /// The restart: reading the map area back from the PCM (and any erase a die needed).
    pub recovery: SimTime,
    pub map_bytes_read: u64,
    pub recovery_erases: u64,
    pub recovered: Recovered,
    /// What reads back wrong through the recovered map (not counted when the restart was
    /// itself cut).
    pub lost: Lost,
    /// A power cut armed for the restart failed it before it finished: the power is off
    /// again, and the next restart starts over from what the media hold.
    pub restart_cut: bool,
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

impl PowerCut {
    /// This restart's figures with the cut of `cut` (its event, time and what was in flight).
    fn under(self, cut: PowerCut) -> PowerCut {
        PowerCut {
            recovery: self.recovery,
            map_bytes_read: self.map_bytes_read,
            recovery_erases: self.recovery_erases,
            recovered: self.recovered,
            lost: self.lost,
            restart_cut: self.restart_cut,
            ..cut
        }
    }
}

impl HostDone {
    pub fn latency(&self) -> SimTime {
        self.completed - self.arrival
    }
}

/// The device's shape as HFSL's raw commands need it: where a command goes and which channel
/// queue it joins.
#[derive(Clone, Copy)]
struct Shape {
    nand_channels: u32,
    chips_per_channel: u32,
    blocks_per_die: u32,
    pages_per_block: u32,
    pcm_channels: u64,
    pcm_line: u64,
    page_bytes: u64,
    block_bytes: u64,
}

impl Shape {
    fn request(&self, op: &RawOp, at: SimTime) -> Request {
        let (op, offset, len, flags) = match *op {
            RawOp::PcmRead { addr, len } => (Op::Read, addr, len, Flags::PCM),
            RawOp::PcmWrite { addr, len } => (Op::Write, addr, len, Flags::PCM),
            RawOp::NandRead { page } => (
                Op::Read,
                page as u64 * self.page_bytes,
                self.page_bytes,
                Flags::NONE,
            ),
            RawOp::NandProgram { page } => (
                Op::Write,
                page as u64 * self.page_bytes,
                self.page_bytes,
                Flags::NONE,
            ),
            RawOp::NandErase { block } => (
                Op::Erase,
                block as u64 * self.block_bytes,
                self.block_bytes,
                Flags::NONE,
            ),
        };
        Request {
            op,
            offset,
            len,
            queue: 0,
            flags,
            arrival: at,
        }
    }

    /// The channel queue of raw command `op`: its die's NAND channel, or its PCM line's.
    fn channel(&self, op: &RawOp) -> usize {
        let nand = |block: u32| {
            let die = block / self.blocks_per_die;
            (die / self.chips_per_channel) as usize
        };
        match *op {
            RawOp::NandRead { page } | RawOp::NandProgram { page } => {
                nand(page / self.pages_per_block)
            }
            RawOp::NandErase { block } => nand(block),
            RawOp::PcmRead { addr, .. } | RawOp::PcmWrite { addr, .. } => {
                self.nand_channels as usize + ((addr / self.pcm_line) % self.pcm_channels) as usize
            }
        }
    }
}

struct Runner<S> {
    map: HfslMap,
    protect: Vec<OwnedRange>,
    source: S,
    /// The next host request, read from the source but not started (it arrives later).
    pending: Option<(SimTime, HostIo)>,
    /// Its wake-up is queued.
    waiting: bool,
    /// The source has no more.
    exhausted: bool,
    /// The current host request (phase > 0), and how many it was (its data version for tests).
    current: HostIo,
    started: u32,
    phase: u8,
    /// Raw commands sent and not completed (the scheduler's data counter).
    left: u32,
    /// Per channel (NAND channels, then PCM channels): commands waiting, with when they
    /// joined.
    queues: Vec<std::collections::VecDeque<(Request, SimTime)>>,
    /// Commands waiting in all queues.
    queued: usize,
    max_send: usize,
    timer: SimTime,
    /// `hfsl.request_cost`: host CPU per host request.
    request_cost: SimTime,
    /// Host time of one batch transfer into the BRAM (`hfsl.bram_transfer`).
    bram_transfer: SimTime,
    /// A timer wake-up is pending.
    ticking: bool,
    shape: Shape,
    arrival: SimTime,
    /// Raw commands sent before the current request.
    raw_before: u64,
    /// The last host request that completed.
    last: Option<HostDone>,
    report: HfslReport,
    latency: HostLatency,
    failed: Option<Error>,
    /// With power cuts possible: the data on the media, and the raw commands in flight (by
    /// the id the device gave them).
    media: Option<Media>,
    in_flight: Vec<(u32, Request)>,
}

impl<S: HostSource> Runner<S> {
    fn new(map: HfslMap, hfsl: &HfslConfig, hw: &HardwareInfo, source: S) -> Runner<S> {
        Runner {
            map,
            protect: hfsl.protect.clone(),
            source,
            pending: None,
            waiting: false,
            exhausted: false,
            current: HostIo {
                write: false,
                offset: 0,
                len: 0,
                meta: false,
                app: 0,
            },
            started: 0,
            phase: 0,
            left: 0,
            queues: vec![
                std::collections::VecDeque::new();
                (hw.nand_channels + hw.pcm_channels) as usize
            ],
            queued: 0,
            max_send: hfsl.max_cmd_send as usize,
            timer: hfsl.send_timer.0,
            request_cost: hfsl.request_cost.0,
            bram_transfer: hfsl.bram_transfer.0,
            ticking: false,
            shape: Shape {
                nand_channels: hw.nand_channels,
                chips_per_channel: hw.nand_chips_per_channel,
                blocks_per_die: hw.nand_blocks / (hw.nand_channels * hw.nand_chips_per_channel),
                pages_per_block: hw.nand_pages_per_block,
                pcm_channels: hw.pcm_channels.max(1) as u64,
                pcm_line: hw.pcm_line_bytes.max(1),
                page_bytes: hw.nand_page_bytes,
                block_bytes: hw.nand_block_bytes(),
            },
            arrival: SimTime::ZERO,
            raw_before: 0,
            last: None,
            report: HfslReport::default(),
            latency: HostLatency::default(),
            failed: None,
            media: None,
            in_flight: Vec::new(),
        }
    }

    /// Keep a model of the data on the media, so the power may be cut (memory permitting).
    fn track_data(&mut self) -> Result<()> {
        let m = &self.map;
        let need = Media::bytes_for(
            m.logical_pages() as u64,
            m.map_base() / m.page_bytes(),
            m.nand_pages(),
            m.sub_pages() as u64,
        );
        crate::sim::mem::check_fits(need, crate::sim::mem::available_bytes())
            .map_err(|e| Error::config(format!("hfsl power cuts: the data model: {e}")))?;
        self.map.track_versions();
        self.media = Some(Media::new(&self.map));
        Ok(())
    }

    /// The next host request that has arrived by `now`, or None (none left, or the next one
    /// arrives later: a wake-up is then queued for it).
    fn next_arrived(&mut self, dev: &mut Device, now: SimTime) -> Option<(SimTime, HostIo)> {
        if self.pending.is_none() && !self.exhausted {
            match self.source.next_io(now) {
                Ok(Some(p)) => self.pending = Some(p),
                Ok(None) => self.exhausted = true,
                Err(e) => {
                    self.failed = Some(e);
                    self.exhausted = true;
                }
            }
        }
        let (at, _) = self.pending?;
        if at > now {
            if !self.waiting {
                self.waiting = true;
                dev.wake_at(at, 0);
            }
            return None;
        }
        self.pending.take()
    }

    /// Start the next phase of the current request, or the next request (none due: nothing).
    fn advance(&mut self, dev: &mut Device, now: SimTime) {
        loop {
            if self.failed.is_some() {
                return;
            }
            if self.phase == 0 {
                // A new host request.
                let Some((at, io)) = self.next_arrived(dev, now) else {
                    return;
                };
                if io.write && self.refuse(&io).is_some() {
                    continue;
                }
                self.started += 1;
                self.arrival = at;
                self.raw_before = self.report.raw_commands;
                self.current = io;
                let planned = if io.write {
                    self.map.write(io.offset, io.len, io.meta, self.started)
                } else {
                    self.map.read(io.offset, io.len)
                };
                if let Err(e) = planned {
                    self.failed = Some(e);
                    return;
                }
                if let Some(m) = self.media.as_mut().filter(|_| io.write) {
                    m.begin_write(io.offset, io.len, self.started);
                }
                let host_done = dev.host_work(now, 0, self.request_cost);
                self.phase = 1;
                if host_done > now && self.map.plan().ops().next().is_none() {
                    // Nothing for the device (a read of never-written data): the request is
                    // done when HFSL's own work on the host is.
                    self.phase = PHASES as u8 + 1;
                    dev.wake_at(host_done, 2);
                    return;
                }
            }
            while self.phase as usize <= PHASES {
                let ops = self.map.plan().phase(self.phase as usize - 1);
                self.phase += 1;
                if ops.is_empty() {
                    continue;
                }
                for o in ops {
                    let ch = self.shape.channel(o);
                    self.queues[ch].push_back((self.shape.request(o, now), now));
                }
                self.queued += ops.len();
                self.send(dev, now);
                return;
            }
            // Every phase ran: the host request is done.
            let latency = now - self.arrival;
            let io = self.current;
            let stats = if io.write {
                &mut self.latency.write
            } else {
                &mut self.latency.read
            };
            stats.record(latency.ps(), io.len);
            if let Some(m) = self.media.as_mut() {
                m.acknowledge();
            }
            self.last = Some(HostDone {
                arrival: self.arrival,
                completed: now,
                raw_commands: self.report.raw_commands - self.raw_before,
                power_cut: false,
                acknowledged: true,
                version: self.started,
            });
            self.report.requests += 1;
            self.report.latency_sum += latency;
            self.report.end = now;
            self.phase = 0;
        }
    }

    /// The scheduler (§2.6.3): once every command sent before has completed, and on a timer
    /// tick if there is a timer, each channel queue sends up to `max_send` commands.
    fn send(&mut self, dev: &mut Device, now: SimTime) {
        if self.left > 0 || self.queued == 0 || self.ticking {
            return;
        }
        // A tick past the clock's end never comes: send at once, and the run reports that the
        // clock ended (rather than waking at the end again and again).
        let next_tick = (self.timer > SimTime::ZERO && !now.ps().is_multiple_of(self.timer.ps()))
            .then(|| (now.ps() - now.ps() % self.timer.ps()).checked_add(self.timer.ps()))
            .flatten();
        if let Some(next) = next_tick {
            let next = SimTime(next);
            self.ticking = true;
            self.report.queues.timer_waits += 1;
            dev.wake_at(next, 1);
            return;
        }
        for ch in 0..self.queues.len() {
            let n = self.queues[ch].len().min(self.max_send);
            if n == 0 {
                continue;
            }
            self.report.queues.batches += 1;
            // One transfer into the BRAM carries the whole batch, before its commands.
            if let Some((r, _)) = self.queues[ch].front() {
                dev.host_work(now, r.queue, self.bram_transfer);
            }
            for _ in 0..n {
                let (mut r, joined) = self.queues[ch].pop_front().expect("n queued");
                self.queued -= 1;
                r.arrival = now;
                self.report.queues.commands += 1;
                self.report.queues.queued += now - joined;
                match dev.submit(now, r) {
                    Ok(id) if self.media.is_some() => self.in_flight.push((id, r)),
                    Ok(_) => {}
                    Err(e) => {
                        self.failed = Some(e);
                        return;
                    }
                }
                self.left += 1;
                self.report.raw_commands += 1;
            }
        }
    }

    /// Whether write `io` touches a range another application owns; if so it is counted and
    /// its reason kept (the host's stray write fails, §2.7.4), and nothing of it runs.
    /// Returns the reason when it is refused.
    fn refuse(&mut self, io: &HostIo) -> Option<String> {
        let why = refusal(&self.protect, io)?;
        self.report.refused_writes += 1;
        if self.report.refusals.len() < MAX_REFUSALS {
            self.report.refusals.push(why.clone());
        }
        Some(why)
    }
}

impl PowerCut {
    /// As a run's result shows it.
    pub fn result(&self) -> crate::stats::result::PowerCutResult {
        crate::stats::result::PowerCutResult {
            event: self.event,
            at_us: self.at.as_us_f64(),
            requests_acknowledged: self.requests_acknowledged,
            request_cut: self.request_cut,
            commands_in_flight: self.commands_in_flight,
            commands_queued: self.commands_queued,
            recovery_us: self.recovery.as_us_f64(),
            map_bytes_read: self.map_bytes_read,
            recovery_erases: self.recovery_erases,
            entries_recovered: self.recovered.mapped,
            entries_dropped: self.recovered.dropped,
            lost_pages: self.lost.pages,
            lost_sub_pages: self.lost.sub_pages,
            cut_write_old: self.lost.cut_write_old,
            cut_write_new: self.lost.cut_write_new,
            cut_write_torn: self.lost.cut_write_torn,
            restart_cut: self.restart_cut,
        }
    }
}

impl<S> Runner<S> {
    /// Run raw commands `ops` outside the host requests (a restart's, a halt's) from the
    /// device's present to completion; the media take their writes and erases.
    fn run_raw(&mut self, dev: &mut Device, ops: &[RawOp]) -> Result<()> {
        self.run_raw_until(dev, ops, None).map(|_| ())
    }

    /// [`Runner::run_raw`], stopped by a power cut armed at device event `cut_at` if the
    /// device gets there first: then false, and the commands not completed are in flight (for
    /// [`Runner::cut`] to tear).
    fn run_raw_until(
        &mut self,
        dev: &mut Device,
        ops: &[RawOp],
        cut_at: Option<u64>,
    ) -> Result<bool> {
        if ops.is_empty() {
            return Ok(true);
        }
        let now = dev.now();
        let mut sent = Vec::with_capacity(ops.len());
        for op in ops {
            let r = self.shape.request(op, now);
            sent.push((dev.submit(now, r)?, r));
        }
        self.report.raw_commands += sent.len() as u64;
        // By id, to find each completion's command.
        sent.sort_unstable_by_key(|&(id, _)| id);
        let mut completed = vec![false; sent.len()];
        let (done, cut) = dev.run_to_idle_or_event(cut_at.unwrap_or(u64::MAX))?;
        for &(id, _, status) in &done {
            if status != Status::Ok {
                return Err(Error::device(format!(
                    "hfsl: the device refused a raw command outside a host request ({})",
                    status.describe()
                )));
            }
            let i = sent
                .binary_search_by_key(&id, |&(id, _)| id)
                .ok()
                .filter(|&i| !completed[i])
                .ok_or_else(|| {
                    Error::device(format!(
                        "hfsl: a raw command completed that was not sent (id {id})"
                    ))
                })?;
            completed[i] = true;
            if let Some(media) = self.media.as_mut() {
                media.completed(&sent[i].1, &self.map);
            }
        }
        // What did not complete is in flight at the cut.
        let left = sent.iter().zip(&completed).filter(|(_, &c)| !c);
        self.in_flight.extend(left.map(|(&s, _)| s));
        Ok(!cut)
    }
}

/// A cut before the restart: what it interrupted, and the device as it was.
struct Cut {
    report: PowerCut,
    before: Device,
}

impl<S: HostSource> Runner<S> {
    /// The power fails now: the raw commands in flight leave their places torn, HFSL's DRAM
    /// (its map, queues, the request under way) is lost, and the device power-cycles.
    fn cut(&mut self, dev: &mut Device) -> Result<Cut> {
        let Some(media) = self.media.as_mut() else {
            return Err(Error::job(
                "a power cut needs the data model: open HFSL with track_data (Python) or set hfsl.power_cut_event (config)".into(),
            ));
        };
        let event = dev.events();
        // Each entry of a map write in flight is old or new: a fixed mix of the event and the
        // LPN, so a run is the same each time.
        let coin = |lpn: u32| {
            let mut z = event ^ ((lpn as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15;
            z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 29)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z >> 63) == 1
        };
        for (_, r) in self.in_flight.drain(..) {
            media.cut(&r, &self.map, &coin);
        }
        let report = PowerCut {
            event,
            at: dev.now(),
            requests_acknowledged: self.report.requests,
            request_cut: self.phase != 0,
            commands_queued: self.queued as u64,
            ..PowerCut::default()
        };
        for q in &mut self.queues {
            q.clear();
        }
        self.queued = 0;
        self.left = 0;
        self.phase = 0;
        self.ticking = false;
        self.waiting = false;
        self.pending = None;
        let (before, in_flight) = dev.power_cycle()?;
        Ok(Cut {
            report: PowerCut {
                commands_in_flight: in_flight,
                ..report
            },
            before,
        })
    }

    /// The restart after `cut` (§2.6.1: "When fusion storage system boots, HFSL reads the
    /// metadata out of the fixed physical address of PCM"): read the map area, rebuild the
    /// map from it and the device's hardware information, run what the dies need, and count
    /// what reads back wrong. The recovery time is the simulated time of those commands (the
    /// host CPU's time to rebuild the tables is not modelled). With `cut_at`, the power fails
    /// again once the device has handled that many events, if the restart gets there: then
    /// the report says so (`restart_cut`) and the new cut is returned beside it.
    fn restart(
        &mut self,
        dev: &mut Device,
        hfsl: &HfslConfig,
        cut: PowerCut,
        cut_at: Option<u64>,
    ) -> Result<(PowerCut, Option<PowerCut>)> {
        let media = self.media.as_ref().expect("a cut had the data model");
        let hw = hardware(dev.config())?;
        let raw = dev.backend().raw().ok_or_else(|| {
            Error::device("hfsl: a fusion device without its raw firmware".into())
        })?;
        let next_page: Vec<u32> = (0..hw.nand_blocks).map(|b| raw.next_page(b)).collect();
        let (map, recovered) = HfslMap::recover(
            hfsl,
            &hw,
            &media.persisted,
            &next_page,
            raw.erase_counts(),
            media.pcm.clone(),
            media.nand.clone(),
            self.map.counters.clone(),
        )?;
        self.map = map;
        let start = dev.now();
        let (base, bytes) = (self.map.map_base(), self.map.map_bytes());
        let chunk = dev.max_cmd_bytes().max(self.shape.page_bytes);
        let reads: Vec<RawOp> = (0..bytes.div_ceil(chunk))
            .map(|k| RawOp::PcmRead {
                addr: base + k * chunk,
                len: chunk.min(bytes - k * chunk),
            })
            .collect();
        // Then what the dies need, step by step.
        let mut finished = true;
        for step in std::iter::once(&reads[..]).chain(recovered.steps.in_order()) {
            finished = self.run_raw_until(dev, step, cut_at)?;
            if !finished {
                break;
            }
        }
        let report = PowerCut {
            recovery: dev.now() - start,
            map_bytes_read: bytes,
            recovery_erases: recovered.steps.erases(),
            recovered,
            ..cut
        };
        if !finished {
            let again = self.cut(dev)?.report;
            return Ok((
                PowerCut {
                    restart_cut: true,
                    ..report
                },
                Some(again),
            ));
        }
        let media = self.media.as_mut().expect("a cut had the data model");
        let lost = media.lost(&self.map);
        Ok((PowerCut { lost, ..report }, None))
    }
}

impl<S> Runner<S> {
    /// The report with the map's counters and where data lives now.
    fn final_report(&self) -> HfslReport {
        let mut report = self.report.clone();
        report.counters = self.map.counters.clone();
        (report.pcm_pages, report.nand_pages) = self.map.where_data_lives();
        report
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

impl<S: HostSource> Driver for Runner<S> {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        if done.status != Status::Ok && self.failed.is_none() {
            self.failed = Some(Error::device(format!(
                "hfsl: the device refused a raw {} at byte {} ({})",
                done.op.name(),
                done.offset,
                done.status.describe()
            )));
        }
        if let Some(m) = self.media.as_mut() {
            if let Some(i) = self.in_flight.iter().position(|(id, _)| *id == done.id) {
                let (_, r) = self.in_flight.swap_remove(i);
                m.completed(&r, &self.map);
            }
        }
        self.left -= 1;
        if self.left == 0 {
            if self.queued > 0 {
                self.send(dev, now);
            } else {
                self.advance(dev, now);
            }
        }
    }

    fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
        if token == 1 {
            self.ticking = false;
            self.send(dev, now);
            return;
        }
        if token == 2 {
            // HFSL's host work on a request with no raw command is done.
            self.advance(dev, now);
            return;
        }
        self.waiting = false;
        if self.phase == 0 {
            self.advance(dev, now);
        }
    }

    fn finished(&self, _now: SimTime) -> bool {
        self.exhausted && self.pending.is_none() && self.phase == 0
    }
}

/// The hardware information of fusion device `cfg`, or an error naming the config.
pub fn hardware(cfg: &SsdConfig) -> Result<HardwareInfo> {
    HardwareInfo::of(cfg).ok_or_else(|| {
        Error::config(format!(
            "config `{}` is not a fusion device: HFSL drives [nand] with ftl.kind = \"none\" and [pcm]",
            cfg.meta.name
        ))
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
        return Err(Error::job(format!(
            "hfsl: the simulated clock reached its end (2^64 ps, about 213 days) with {} host \
             requests done: a time in the config or workload is too long for it (arrival times, \
             hfsl.send_timer, link latency or rates)",
            r.report.requests
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

/// The source of an [`HfslHost`]: the one request it was handed.
struct OneRequest(Option<(SimTime, HostIo)>);

impl HostSource for OneRequest {
    fn next_io(&mut self, _now: SimTime) -> Result<Option<(SimTime, HostIo)>> {
        Ok(self.0.take())
    }
}

/// HFSL over a fusion device, driven one host request at a time by its caller (the Python
/// `ssdlab.Hfsl`): each request runs to completion before the call returns.
pub struct HfslHost {
    dev: Device,
    runner: Runner<OneRequest>,
    hw: HardwareInfo,
    hfsl: HfslConfig,
    /// An armed power cut: the power fails once the device has handled this many events.
    cut_at: Option<u64>,
    /// The power is off after this cut, until [`HfslHost::restart`].
    off: Option<PowerCut>,
}

impl HfslHost {
    /// HFSL on the fusion device `cfg` describes, with `cfg`'s `[hfsl]` (or its defaults), over
    /// the first `logical_bytes` of its logical space (whole pages). `track_data` keeps a model
    /// of the data on the media (which power cuts need, and [`HfslHost::read_back`] reads).
    pub fn new(
        cfg: &SsdConfig,
        seed: u64,
        logical_bytes: u64,
        track_data: bool,
    ) -> Result<HfslHost> {
        let hw = hardware(cfg)?;
        let hfsl = cfg.hfsl.clone().unwrap_or_default();
        let usable = usable_pages(&hfsl, &hw);
        if usable == 0 {
            // Every block of a die is GC's reserve: no logical size could fit (the message
            // blamed logical_bytes with the range "1 to 0").
            return Err(Error::config(format!(
                "hfsl.gc_free_blocks: got {}, and with one open block per write stream GC's reserve takes every block of a die ({} blocks each), none left for data; expected fewer spare blocks, or hfsl.gc = false",
                hfsl.gc_free_blocks,
                hw.nand_blocks / (hw.nand_channels * hw.nand_chips_per_channel).max(1)
            )));
        }
        if !logical_bytes.is_multiple_of(hw.nand_page_bytes) {
            // It was rounded up to whole pages without a word.
            return Err(Error::bad_job(Invalid::unnamed(
                "logical_bytes",
                got(
                    logical_bytes,
                    format!(
                        "a whole number of HFSL's logical pages ({} bytes each, the NAND page)",
                        hw.nand_page_bytes
                    ),
                ),
            )));
        }
        let pages = logical_bytes / hw.nand_page_bytes;
        if pages == 0 || pages > usable {
            return Err(Error::bad_job(Invalid::unnamed(
                "logical_bytes",
                got(
                    logical_bytes,
                    format!(
                        "1 to {} (HFSL's NAND pages of {} bytes, less GC's spare blocks)",
                        usable * hw.nand_page_bytes,
                        hw.nand_page_bytes
                    ),
                ),
            )));
        }
        let map = HfslMap::new(&hfsl, &hw, pages as u32)?;
        let mut runner = Runner::new(map, &hfsl, &hw, OneRequest(None));
        if track_data {
            runner.track_data()?;
        }
        Ok(HfslHost {
            dev: Device::new(cfg, seed)?,
            runner,
            hw,
            hfsl,
            cut_at: None,
            off: None,
        })
    }

    fn power_is_on(&self) -> Result<()> {
        match &self.off {
            Some(c) => Err(Error::job(format!(
                "the power is off (cut after device event {}): restart() first",
                c.event
            ))),
            None => Ok(()),
        }
    }

    fn tracking(&self) -> Result<()> {
        if self.runner.media.is_none() {
            return Err(Error::job(
                "power cuts and read-back need the data model: open HFSL with track_data".into(),
            ));
        }
        Ok(())
    }

    /// Device events handled so far (a power cut is armed at an event count).
    pub fn events(&self) -> u64 {
        self.dev.events()
    }

    /// Arm a power cut: the power fails once the device has handled `event` events in all,
    /// in whichever request gets there (later than now). Armed while the power is off, it
    /// counts the events of the restarted device (from 0) and may cut the restart itself.
    pub fn arm_power_cut(&mut self, event: u64) -> Result<()> {
        self.tracking()?;
        let now = self.dev.events();
        if event <= now {
            return Err(Error::bad_job(Invalid::unnamed(
                "event",
                got(
                    event,
                    format!("more than the {now} events the device has handled"),
                ),
            )));
        }
        self.cut_at = Some(event);
        Ok(())
    }

    /// Cut the power now, between requests (what HFSL keeps in DRAM is lost).
    pub fn cut_power(&mut self) -> Result<()> {
        self.tracking()?;
        self.power_is_on()?;
        self.cut_at = None;
        self.off = Some(self.runner.cut(&mut self.dev)?.report);
        Ok(())
    }

    /// The power comes back: HFSL recovers its map from the PCM. Returns the cut and what the
    /// restart took and found. If a cut armed while the power was off fires during the
    /// restart, the report says `restart_cut` and the power is off again: restart again.
    pub fn restart(&mut self) -> Result<PowerCut> {
        let Some(cut) = self.off.take() else {
            return Err(Error::job(
                "restart: the power is on (no cut to recover from)".into(),
            ));
        };
        let armed = self.cut_at.take();
        let (report, again) = self.runner.restart(&mut self.dev, &self.hfsl, cut, armed)?;
        match again {
            Some(c) => self.off = Some(c),
            // Not reached: still armed for the requests to come.
            None => self.cut_at = armed,
        }
        Ok(report)
    }

    /// Halt (§2.6.1): write every map entry changed since it was last written to the PCM's map
    /// area (with `hfsl.map_store = "pcm"`, none is). Returns the simulated time it took and
    /// the bytes written.
    pub fn halt(&mut self) -> Result<(SimTime, u64)> {
        self.power_is_on()?;
        let before = self.runner.map.counters.map_bytes_written;
        let now = self.dev.now();
        let ops = self.runner.map.halt().map.clone();
        self.runner.run_raw(&mut self.dev, &ops)?;
        let bytes = self.runner.map.counters.map_bytes_written - before;
        Ok((self.dev.now() - now, bytes))
    }

    /// What logical page `lpn`'s sub-pages hold, read through the map: the number of the write
    /// request (counted from 1) whose data each holds, 0 if none, `persist::TORN` if a cut
    /// write left it torn.
    pub fn read_back(&self, lpn: u64) -> Result<Vec<u32>> {
        self.tracking()?;
        self.power_is_on()?;
        let pages = self.runner.map.logical_pages() as u64;
        if lpn >= pages {
            return Err(Error::bad_job(Invalid::unnamed(
                "lpn",
                got(lpn, format!("below {pages} (the logical pages)")),
            )));
        }
        let media = self.runner.media.as_ref().expect("tracking");
        Ok(media.read_back(&self.runner.map, lpn as u32))
    }

    /// Run `io`, arriving at `at` or at the simulated present if that is later, to completion.
    /// A write into another application's range is refused with its reason and changes
    /// nothing; a range beyond the logical space is refused naming it.
    pub fn submit(&mut self, io: HostIo, at: SimTime) -> Result<HostDone> {
        self.power_is_on()?;
        if io.write {
            if let Some(why) = self.runner.refuse(&io) {
                return Err(Error::job(why));
            }
        }
        let end = io.offset.checked_add(io.len);
        let space = self.logical_bytes();
        if io.len == 0 || end.is_none_or(|e| e > space) {
            return Err(Error::bad_job(Invalid::unnamed(
                "offset, length",
                got(
                    format!("{} bytes from byte {}", io.len, io.offset),
                    format!("at least 1 byte within the logical space ({space} bytes)"),
                ),
            )));
        }
        let now = self.dev.now();
        let r = &mut self.runner;
        r.source.0 = Some((at.max(now), io));
        r.exhausted = false;
        r.last = None;
        r.advance(&mut self.dev, now);
        let cut = match self.cut_at {
            Some(event) => run_to_event(&mut self.dev, r, event, &mut |_, _| true)?,
            None => {
                self.dev.run(r, u64::MAX, &mut |_, _| true)?;
                false
            }
        };
        if let Some(e) = r.failed.take() {
            return Err(e);
        }
        if self.dev.now() == SimTime::MAX {
            return Err(Error::job(format!(
                "at_ps: the request submitted at {} ps reached the end of the simulated clock \
                 (2^64 ps, about 213 days); the device's clock cannot go on, so this and every \
                 later request is refused (expected times well under 2^64 ps)",
                at.max(now).ps()
            )));
        }
        if cut {
            self.cut_at = None;
            let done = r.last.take();
            let report = r.cut(&mut self.dev)?.report;
            let at = report.at;
            self.off = Some(report);
            return Ok(match done {
                Some(d) => HostDone {
                    power_cut: true,
                    ..d
                },
                None => HostDone {
                    arrival: at.min(self.runner.arrival),
                    completed: at,
                    raw_commands: self.runner.report.raw_commands - self.runner.raw_before,
                    power_cut: true,
                    acknowledged: false,
                    version: self.runner.started,
                },
            });
        }
        r.last
            .take()
            .ok_or_else(|| Error::device("hfsl: a host request did not complete".into()))
    }

    /// Bytes of a PCM sub-page: the unit HFSL tracks data in (`hfsl.sub_page`).
    pub fn sub_page_bytes(&self) -> u64 {
        self.runner.map.page_bytes() / self.runner.map.sub_pages() as u64
    }

    /// Bytes of the logical space.
    pub fn logical_bytes(&self) -> u64 {
        self.runner.map.logical_pages() as u64 * self.hw.nand_page_bytes
    }

    /// Where logical page `lpn` lives.
    pub fn location(&self, lpn: u64) -> Result<map::Loc> {
        let pages = self.runner.map.logical_pages() as u64;
        if lpn >= pages {
            return Err(Error::bad_job(Invalid::unnamed(
                "lpn",
                got(lpn, format!("below {pages} (the logical pages)")),
            )));
        }
        Ok(self.runner.map.entry(lpn as u32).loc)
    }

    pub fn info(&self) -> &HardwareInfo {
        &self.hw
    }

    /// Every NAND block's P/E count.
    pub fn erase_counts(&self) -> &[u32] {
        self.dev.backend().raw().map_or(&[], |r| r.erase_counts())
    }

    /// What HFSL did so far.
    pub fn report(&self) -> HfslReport {
        self.runner.final_report()
    }

    /// The simulated present.
    pub fn now(&self) -> SimTime {
        self.dev.now()
    }
}
