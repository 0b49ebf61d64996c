//! HFSL, seed 002's host-side FTL (§2.5–2.7), as a driver of the fusion device
//! (`ctrl::fusion`): host reads and writes by logical address become raw PCM and NAND commands
//! (`map`), run phase by phase (reads, then writes, then erases), one host request at a time.
//!
//! One at a time because the device checks NAND program order when a command reaches its
//! firmware: with the map placing pages as requests arrive, two requests in flight could reach
//! it out of order. Within a request the commands of a phase run in parallel, over the striped
//! channels. The per-channel circular queues sent in batches (§2.6.3) are not modelled yet.

pub mod map;

use crate::config::{OwnedRange, SsdConfig};
use crate::device::{Completion, Device, Driver, Flags, Request, Status};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::workload::Op;
use map::{HfslCounters, HfslMap, RawOp};

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

/// What a run of HFSL measured.
#[derive(Clone, Debug, Default)]
pub struct HfslReport {
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
}

/// Refusal messages kept in a report (the count goes on).
pub const MAX_REFUSALS: usize = 16;

struct Runner<'a> {
    map: HfslMap,
    protect: &'a [OwnedRange],
    ios: &'a [HostIo],
    next: usize,
    phase: u8,
    /// Raw commands of the current phase still running.
    left: u32,
    arrival: SimTime,
    page_bytes: u64,
    block_bytes: u64,
    report: HfslReport,
    failed: Option<Error>,
}

impl Runner<'_> {
    fn raw_request(&self, op: &RawOp, at: SimTime) -> Request {
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

    /// Start the next phase of the current request, or the next request (none left: nothing).
    fn advance(&mut self, dev: &mut Device, now: SimTime) {
        loop {
            if self.failed.is_some() {
                return;
            }
            if self.phase == 0 {
                // A new host request.
                if self.next == self.ios.len() {
                    return;
                }
                let io = self.ios[self.next];
                self.next += 1;
                if io.write && self.refuse(&io) {
                    continue;
                }
                self.arrival = now;
                let planned = if io.write {
                    self.map.write(io.offset, io.len, io.meta, self.next as u32)
                } else {
                    self.map.read(io.offset, io.len)
                };
                if let Err(e) = planned {
                    self.failed = Some(e);
                    return;
                }
                self.phase = 1;
            }
            while self.phase <= 3 {
                let plan = self.map.plan();
                let ops = match self.phase {
                    1 => &plan.reads,
                    2 => &plan.writes,
                    _ => &plan.erases,
                };
                let reqs: Vec<Request> = ops.iter().map(|o| self.raw_request(o, now)).collect();
                self.phase += 1;
                if reqs.is_empty() {
                    continue;
                }
                for r in reqs {
                    if let Err(e) = dev.submit(now, r) {
                        self.failed = Some(e);
                        return;
                    }
                    self.left += 1;
                    self.report.raw_commands += 1;
                }
                return;
            }
            // Every phase ran: the host request is done.
            self.report.requests += 1;
            self.report.latency_sum += now - self.arrival;
            self.report.end = now;
            self.phase = 0;
        }
    }

    /// Whether write `io` touches a range another application owns; if so it is counted and
    /// its reason kept (the host's stray write fails, §2.7.4), and nothing of it runs.
    fn refuse(&mut self, io: &HostIo) -> bool {
        let Some((i, r)) = self
            .protect
            .iter()
            .enumerate()
            .find(|(_, r)| r.app != io.app && r.overlaps(io.offset, io.len))
        else {
            return false;
        };
        self.report.refused_writes += 1;
        if self.report.refusals.len() < MAX_REFUSALS {
            self.report.refusals.push(format!(
                "hfsl: application {} may not write bytes {}..{}: hfsl.protect[{i}], bytes {}..{}, belongs to application {}",
                io.app,
                io.offset,
                io.offset.saturating_add(io.len),
                r.offset.0,
                r.end(),
                r.app
            ));
        }
        true
    }
}

impl Driver for Runner<'_> {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        if done.status != Status::Ok && self.failed.is_none() {
            self.failed = Some(Error::Sim(format!(
                "hfsl: the device refused a raw {} at byte {} ({})",
                done.op.name(),
                done.offset,
                done.status.describe()
            )));
        }
        self.left -= 1;
        if self.left == 0 {
            self.advance(dev, now);
        }
    }
}

/// Run `ios` through HFSL on the fusion device `cfg` describes, over `logical_pages` logical
/// pages, with `cfg`'s `[hfsl]` (or its defaults).
pub fn run(cfg: &SsdConfig, seed: u64, logical_pages: u32, ios: &[HostIo]) -> Result<HfslReport> {
    let mut dev = Device::new(cfg, seed)?;
    let hw = dev.hardware_info().ok_or_else(|| {
        Error::Config(format!(
            "config `{}` is not a fusion device: HFSL drives [nand] with ftl.kind = \"none\" and [pcm]",
            cfg.meta.name
        ))
    })?;
    let hfsl = cfg.hfsl.clone().unwrap_or_default();
    let map = HfslMap::new(&hfsl, &hw, logical_pages)?;
    let mut r = Runner {
        map,
        protect: &hfsl.protect,
        ios,
        next: 0,
        phase: 0,
        left: 0,
        arrival: SimTime::ZERO,
        page_bytes: hw.nand_page_bytes,
        block_bytes: hw.nand_block_bytes(),
        report: HfslReport::default(),
        failed: None,
    };
    r.advance(&mut dev, SimTime::ZERO);
    dev.run(&mut r, u64::MAX, &mut |_, _| true)?;
    if let Some(e) = r.failed {
        return Err(e);
    }
    let mut report = r.report;
    report.counters = r.map.counters.clone();
    (report.pcm_pages, report.nand_pages) = r.map.where_data_lives();
    Ok(report)
}
