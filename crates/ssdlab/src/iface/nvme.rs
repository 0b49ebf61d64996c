//! NVMe over PCIe, the whole path in one place: the doorbell write, the submission queues and
//! the controller's round-robin fetch in bursts, the write-data pull and read-data DMA over the
//! link, and the completion (CQ entry, then an MSI-X message, a pin interrupt with its status
//! read, or polling).
//!
//! The link is two timelines, one per direction (`up`: device to host, `down`: host to device),
//! each carrying TLPs whose cost is `pcie::LinkCost`; every crossing adds the link latency.

use super::pcie::{LinkCost, LinkSpec};
use crate::config::{InterfaceConfig, InterruptMode};
use crate::event::Event;
use crate::host::HostCpu;
use crate::request::Cmd;
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime, Slab};
use std::collections::VecDeque;

/// NVMe submission queue entry size.
const SQE_BYTES: u64 = 64;
/// Completion queue entry size.
const CQE_BYTES: u64 = 16;
/// A doorbell, an MSI-X message, a status register: one 4-byte TLP.
const DWORD: u64 = 4;

pub struct Nvme {
    link: LinkCost,
    up: Timeline,
    down: Timeline,
    /// Submitted commands per SQ, waiting for the controller's fetch.
    sqs: Vec<VecDeque<u32>>,
    /// The SQ the next arbitration round starts at.
    rr: u32,
    /// The fetch under way: (SQ, entries).
    fetching: Option<(u32, u32)>,
    arbitration_burst: u32,
    interrupt: InterruptMode,
    interrupt_latency: SimTime,
    /// Commands one SQ holds (its depth − 1).
    sq_capacity: u32,
    link_name: String,
}

impl Nvme {
    pub fn new(i: &InterfaceConfig) -> Result<Nvme, String> {
        let spec = LinkSpec::parse(&i.link)?;
        let link_name = match spec {
            LinkSpec::Pcie { gen, lanes } => format!("PCIe Gen{gen} x{lanes}"),
            _ => "PCIe ideal (no link limit)".into(),
        };
        Ok(Nvme {
            link: LinkCost::new(spec, i.max_payload.0, i.tlp_overhead.0, i.link_latency.0),
            up: Timeline::default(),
            down: Timeline::default(),
            sqs: vec![VecDeque::new(); i.io_queues as usize],
            rr: 0,
            fetching: None,
            arbitration_burst: i.arbitration_burst,
            interrupt: i.interrupt,
            interrupt_latency: i.interrupt_latency.0,
            sq_capacity: i.queue_depth - 1,
            link_name,
        })
    }

    pub fn link_name(&self) -> &str {
        &self.link_name
    }

    pub fn sq_capacity(&self) -> u32 {
        self.sq_capacity
    }

    /// Commands the device holds at once: every SQ full.
    pub fn device_queue_depth(&self) -> u64 {
        self.sq_capacity as u64 * self.sqs.len() as u64
    }

    /// Busy time of the link: (up, down).
    pub fn link_busy(&self) -> (SimTime, SimTime) {
        (self.up.busy, self.down.busy)
    }

    /// The driver rings the doorbell of a command it finished preparing at `ready`: a posted
    /// 4-byte MMIO write, after which the command is in its SQ.
    #[inline]
    pub(crate) fn ring(&mut self, ready: SimTime, cmd: u32, q: &mut EventQueue<Event>) {
        let (_, bell) = self.down.reserve(ready, self.link.wire_time(DWORD));
        q.push(bell + self.link.latency, Event::Submit { cmd });
    }

    /// The doorbell reached the controller: the command is in its SQ; fetch if idle.
    #[inline]
    pub(crate) fn on_doorbell(
        &mut self,
        now: SimTime,
        cmd: u32,
        sq: u32,
        q: &mut EventQueue<Event>,
    ) {
        self.sqs[sq as usize].push_back(cmd);
        if self.fetching.is_none() {
            self.start_fetch(now, q);
        }
    }

    /// Round-robin over the SQs with entries; fetch up to one arbitration burst from the next:
    /// a memory read request up, the entries back down.
    pub(crate) fn start_fetch(&mut self, now: SimTime, q: &mut EventQueue<Event>) {
        let n = self.sqs.len() as u32;
        for k in 0..n {
            let sq = (self.rr + k) % n;
            let pending = self.sqs[sq as usize].len() as u32;
            if pending == 0 {
                continue;
            }
            self.rr = (sq + 1) % n;
            let count = pending.min(self.arbitration_burst);
            let lat = self.link.latency;
            let (_, req) = self.up.reserve(now, self.link.wire_time(0));
            let (_, data) = self
                .down
                .reserve(req + lat, self.link.wire_time(SQE_BYTES * count as u64));
            self.fetching = Some((sq, count));
            q.push(data + lat, Event::FetchDone);
            return;
        }
    }

    /// The fetched burst arrived: (SQ, number of entries), to be taken with [`Nvme::fetched`].
    pub(crate) fn fetch_done(&mut self) -> (u32, u32) {
        self.fetching.take().expect("a fetch was under way")
    }

    /// The next fetched command of `sq`.
    #[inline]
    pub(crate) fn fetched(&mut self, sq: u32) -> u32 {
        self.sqs[sq as usize]
            .pop_front()
            .expect("fetched entries are queued")
    }

    /// The controller pulls a write command's `len` bytes from host memory from `now`: a read
    /// request up, the data down. Returns when the data is in the controller.
    #[inline]
    pub(crate) fn pull_write_data(&mut self, now: SimTime, len: u64) -> SimTime {
        let lat = self.link.latency;
        let (_, req) = self.up.reserve(now, self.link.wire_time(0));
        let (_, data) = self.down.reserve(req + lat, self.link.wire_time(len));
        data + lat
    }

    /// `bytes` of read data go up from `at`; returns when they have left the link.
    #[inline]
    pub(crate) fn push_read_data(&mut self, at: SimTime, bytes: u64) -> SimTime {
        self.up.reserve(at, self.link.wire_time(bytes)).1
    }

    /// The controller completes `cmd` at `t`: the CQ entry, the interrupt (or the poll that
    /// finds it), and the host's completion work on the command's core.
    #[inline]
    pub(crate) fn complete(
        &mut self,
        t: SimTime,
        cmd: u32,
        cmds: &Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        let lat = self.link.latency;
        let (_, cqe) = self.up.reserve(t, self.link.wire_time(CQE_BYTES));
        let seen = cqe + lat;
        let (at, extra) = match self.interrupt {
            InterruptMode::Msix => {
                let (_, msg) = self.up.reserve(cqe, self.link.wire_time(DWORD));
                (msg + lat, SimTime::ZERO)
            }
            // A legacy interrupt: the handler also reads the controller's status over MMIO.
            InterruptMode::Pin => (seen + lat + lat + self.link.wire_time(DWORD), SimTime::ZERO),
            InterruptMode::Polling => (seen, SimTime::ZERO),
        };
        let (start, cost) = cpu.completion(self.interrupt, at, self.interrupt_latency, extra);
        let (_, end) = cpu.reserve(cmds.get(cmd).core, start, cost);
        q.push(end, Event::HostComplete { cmd });
    }
}
