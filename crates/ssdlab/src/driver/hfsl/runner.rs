//! `Runner`, HFSL's driver of the fusion device: host requests from a [`HostSource`] planned
//! by the map, their raw commands run phase by phase through the channel queues of the I/O
//! scheduler (§2.6.3), one host request at a time.

use super::map::{HfslMap, RawOp, PHASES};
use super::persist::Media;
use super::{refusal, HfslReport, HostDone, HostIo, HostLatency, HostSource, MAX_REFUSALS};
use crate::config::{HfslConfig, OwnedRange};
use crate::device::HardwareInfo;
use crate::device::{Completion, Device, Driver, Flags, Request, Status};
use crate::error::{got, says, Error, Invalid, Result};
use crate::request::Op;
use crate::sim::SimTime;

/// The device's shape as HFSL's raw commands need it: where a command goes and which channel
/// queue it joins.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    pub(super) nand_channels: u32,
    pub(super) chips_per_channel: u32,
    pub(super) blocks_per_die: u32,
    pub(super) pages_per_block: u32,
    pub(super) pcm_channels: u64,
    pub(super) pcm_line: u64,
    pub(super) page_bytes: u64,
    pub(super) block_bytes: u64,
}

impl Shape {
    pub(super) fn request(&self, op: &RawOp, at: SimTime) -> Request {
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
    pub(super) fn channel(&self, op: &RawOp) -> usize {
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

pub(super) struct Runner<S> {
    pub(super) map: HfslMap,
    pub(super) protect: Vec<OwnedRange>,
    pub(super) source: S,
    /// The next host request, read from the source but not started (it arrives later).
    pub(super) pending: Option<(SimTime, HostIo)>,
    /// Its wake-up is queued.
    pub(super) waiting: bool,
    /// The source has no more.
    pub(super) exhausted: bool,
    /// The current host request (phase > 0), and how many it was (its data version for tests).
    pub(super) current: HostIo,
    pub(super) started: u32,
    pub(super) phase: u8,
    /// Raw commands sent and not completed (the scheduler's data counter).
    pub(super) left: u32,
    /// Per channel (NAND channels, then PCM channels): commands waiting, with when they
    /// joined.
    pub(super) queues: Vec<std::collections::VecDeque<(Request, SimTime)>>,
    /// Commands waiting in all queues.
    pub(super) queued: usize,
    pub(super) max_send: usize,
    pub(super) timer: SimTime,
    /// `hfsl.request_cost`: host CPU per host request.
    pub(super) request_cost: SimTime,
    /// Host time of one batch transfer into the BRAM (`hfsl.bram_transfer`).
    pub(super) bram_transfer: SimTime,
    /// A timer wake-up is pending.
    pub(super) ticking: bool,
    pub(super) shape: Shape,
    pub(super) arrival: SimTime,
    /// Raw commands sent before the current request.
    pub(super) raw_before: u64,
    /// The last host request that completed.
    pub(super) last: Option<HostDone>,
    pub(super) report: HfslReport,
    pub(super) latency: HostLatency,
    pub(super) failed: Option<Error>,
    /// With power cuts possible: the data on the media, and the raw commands in flight (by
    /// the id the device gave them).
    pub(super) media: Option<Media>,
    pub(super) in_flight: Vec<(u32, Request)>,
}

impl<S: HostSource> Runner<S> {
    pub(super) fn new(map: HfslMap, hfsl: &HfslConfig, hw: &HardwareInfo, source: S) -> Runner<S> {
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
    pub(super) fn track_data(&mut self) -> Result<()> {
        let m = &self.map;
        let need = Media::bytes_for(
            m.logical_pages() as u64,
            m.map_base() / m.page_bytes(),
            m.nand_pages(),
            m.sub_pages() as u64,
        );
        crate::sim::mem::check_fits(need, crate::sim::mem::available_bytes()).map_err(|t| {
            Error::bad_config(Invalid::unnamed(
                "hfsl power cuts",
                got(
                    format_args!("a data model of about {}", t.need_text()),
                    format!("at most {}", t.available_text()),
                ),
            ))
        })?;
        self.map.track_versions();
        self.media = Some(Media::new(&self.map));
        Ok(())
    }

    /// The next host request that has arrived by `now`, or None (none left, or the next one
    /// arrives later: a wake-up is then queued for it).
    pub(super) fn next_arrived(
        &mut self,
        dev: &mut Device,
        now: SimTime,
    ) -> Option<(SimTime, HostIo)> {
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
    pub(super) fn advance(&mut self, dev: &mut Device, now: SimTime) {
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
    pub(super) fn send(&mut self, dev: &mut Device, now: SimTime) {
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
    pub(super) fn refuse(&mut self, io: &HostIo) -> Option<String> {
        let why = refusal(&self.protect, io)?;
        self.report.refused_writes += 1;
        if self.report.refusals.len() < MAX_REFUSALS {
            self.report.refusals.push(why.clone());
        }
        Some(why)
    }
}

impl<S> Runner<S> {
    /// Run raw commands `ops` outside the host requests (a restart's, a halt's) from the
    /// device's present to completion; the media take their writes and erases.
    pub(super) fn run_raw(&mut self, dev: &mut Device, ops: &[RawOp]) -> Result<()> {
        self.run_raw_until(dev, ops, None).map(|_| ())
    }

    /// [`Runner::run_raw`], stopped by a power cut armed at device event `cut_at` if the
    /// device gets there first: then false, and the commands not completed are in flight (for
    /// [`Runner::cut`] to tear).
    pub(super) fn run_raw_until(
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
                return Err(Error::bad_device(Invalid::unnamed(
                    "hfsl",
                    says(format!(
                        "the device refused a raw command outside a host request ({})",
                        status.describe()
                    )),
                )));
            }
            let i = sent
                .binary_search_by_key(&id, |&(id, _)| id)
                .ok()
                .filter(|&i| !completed[i])
                .ok_or_else(|| {
                    Error::bad_device(Invalid::unnamed(
                        "hfsl",
                        says(format!(
                            "a raw command completed that was not sent (id {id})"
                        )),
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

impl<S> Runner<S> {
    /// The report with the map's counters and where data lives now.
    pub(super) fn final_report(&self) -> HfslReport {
        let mut report = self.report.clone();
        report.counters = self.map.counters.clone();
        (report.pcm_pages, report.nand_pages) = self.map.where_data_lives();
        report
    }
}

impl<S: HostSource> Driver for Runner<S> {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        if done.status != Status::Ok && self.failed.is_none() {
            self.failed = Some(Error::bad_device(Invalid::unnamed(
                "hfsl",
                says(format!(
                    "the device refused a raw {} at byte {} ({})",
                    done.op.name(),
                    done.offset,
                    done.status.describe()
                )),
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
