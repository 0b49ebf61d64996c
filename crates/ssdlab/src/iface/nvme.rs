//! NVMe over PCIe, the whole path in one place: the doorbell write, the submission queues and
//! the controller's fetch of each SQ in bursts, the write-data pull and read-data DMA over the
//! link, and the completion (CQ entry, then an MSI-X message, a pin interrupt with its status
//! read, or polling).
//!
//! The link is two timelines, one per direction (`up`: device to host, `down`: host to device),
//! each carrying TLPs whose cost is `pcie::LinkCost`; every crossing adds the link latency.

use super::arbiter::Arbiter;
use super::pcie::LinkCost;
use crate::config::LinkSpec;
use crate::config::{InterfaceConfig, InterruptMode, PriorityClass};
use crate::error::Problem;
use crate::event::Event;
use crate::host::HostCpu;
use crate::request::Cmd;
use crate::sim::time::BackfillTimeline;
use crate::sim::{EventQueue, SimTime, Slab};
use std::collections::VecDeque;

/// NVMe submission queue entry size.
const SQE_BYTES: u64 = 64;
/// Completion queue entry size.
const CQE_BYTES: u64 = 16;
/// A doorbell, an MSI-X message, a status register: one 4-byte TLP.
const DWORD: u64 = 4;

/// A controller that holds a bounded number of commands: its free slots, its SQ arbiter, and
/// the fetches in flight (an SQ may have several).
struct Bounded {
    free: u32,
    arbiter: Arbiter,
    /// Per SQ: its entries under fetch, the count of each fetch in flight in the order they
    /// land, and when the latest lands.
    under_fetch: Vec<u32>,
    in_flight: Vec<VecDeque<u32>>,
    lands: Vec<SimTime>,
}

pub struct Nvme {
    link: LinkCost,
    up: BackfillTimeline,
    down: BackfillTimeline,
    /// Submitted commands per SQ, waiting for the controller's fetch.
    sqs: Vec<VecDeque<u32>>,
    /// Entries of each SQ under fetch (0: no fetch in flight for it). Without a bound on the
    /// controller's commands; with one, `Bounded` keeps them and these stay 0.
    fetching: Vec<u32>,
    arbitration_burst: u32,
    /// With `interface.controller_slots`: the controller's free command slots and the arbiter
    /// that fills them. None: no bound, each SQ fetches as its doorbell rings.
    bounded: Option<Box<Bounded>>,
    interrupt: InterruptMode,
    interrupt_latency: SimTime,
    /// Commands one SQ holds (its depth − 1).
    sq_capacity: u32,
    link_name: String,
}

impl Nvme {
    pub fn new(i: &InterfaceConfig) -> Result<Nvme, Problem> {
        // Validation refused a link of another kind already (config::validate).
        let spec = LinkSpec::from_link(&i.link)?;
        let link_name = match spec {
            LinkSpec::Pcie { gen, lanes } => format!("PCIe Gen{gen} x{lanes}"),
            _ => "PCIe ideal (no link limit)".into(),
        };
        Ok(Nvme {
            link: LinkCost::new(spec, i.max_payload.0, i.tlp_overhead.0, i.link_latency.0),
            up: BackfillTimeline::default(),
            down: BackfillTimeline::default(),
            sqs: vec![VecDeque::new(); i.io_queues as usize],
            fetching: vec![0; i.io_queues as usize],
            arbitration_burst: i.arbitration_burst,
            bounded: i.controller_slots.map(|free| {
                let n = i.io_queues as usize;
                Box::new(Bounded {
                    free,
                    arbiter: Arbiter::new(i.arbitration, i.arbitration_weights, i.io_queues),
                    under_fetch: vec![0; n],
                    in_flight: vec![VecDeque::new(); n],
                    lands: vec![SimTime::ZERO; n],
                })
            }),
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
        (self.up.line.busy, self.down.line.busy)
    }

    /// The driver rings the doorbell of a command it finished preparing at `ready`: a posted
    /// 4-byte MMIO write, after which the command is in its SQ.
    #[inline]
    pub(crate) fn ring(&mut self, ready: SimTime, cmd: u32, q: &mut EventQueue<Event>) {
        let (_, bell) = self.down.reserve(ready, self.link.wire_time(DWORD));
        q.push(bell + self.link.latency, Event::Submit { cmd });
    }

    /// The doorbell reached the controller: the command is in its SQ; fetch it if the SQ has
    /// no fetch in flight.
    #[inline]
    pub(crate) fn on_doorbell(
        &mut self,
        now: SimTime,
        cmd: u32,
        sq: u32,
        q: &mut EventQueue<Event>,
    ) {
        self.sqs[sq as usize].push_back(cmd);
        // (A bounded controller keeps `fetching` at 0: every doorbell reaches its arbiter.)
        if self.fetching[sq as usize] == 0 {
            self.start_fetch(now, sq, q);
        }
    }

    /// Each SQ's priority class (the QPRIO the host created it with), one per SQ; only
    /// weighted round robin with a bound on the controller's commands tells them apart.
    pub fn set_queue_classes(&mut self, classes: &[PriorityClass]) {
        if let Some(b) = &mut self.bounded {
            b.arbiter.set_classes(classes);
        }
    }

    /// `sq` has entries and no fetch in flight: fetch up to one arbitration burst of them at
    /// once; with a bound on the controller's commands, as the arbiter gives free slots.
    fn start_fetch(&mut self, now: SimTime, sq: u32, q: &mut EventQueue<Event>) {
        if self.bounded.is_some() {
            return self.arbitrate(now, q);
        }
        let count = (self.sqs[sq as usize].len() as u32).min(self.arbitration_burst);
        let lands = self.fetch_lands(now, count);
        self.fetching[sq as usize] = count;
        q.push(lands, Event::FetchDone { sq });
    }

    /// A bounded controller fills its free slots: fetch from the SQs the arbiter picks, while
    /// slots are free and some SQ has entries not under fetch. An SQ may have several fetches
    /// in flight (a controller keeps several memory reads outstanding): the arbiter, not a
    /// fetch under way, decides whose turn it is.
    #[inline(never)]
    fn arbitrate(&mut self, now: SimTime, q: &mut EventQueue<Event>) {
        loop {
            let b = self
                .bounded
                .as_mut()
                .expect("only a bounded controller arbitrates");
            if b.free == 0 {
                return;
            }
            let (sqs, under) = (&self.sqs, &b.under_fetch);
            let waiting = |sq: u32| sqs[sq as usize].len() as u32 - under[sq as usize];
            let Some((sq, count)) = b.arbiter.pick(waiting, self.arbitration_burst, b.free) else {
                return;
            };
            b.free -= count;
            let lands = self.fetch_lands(now, count);
            let b = self.bounded.as_mut().expect("bounded");
            let s = sq as usize;
            // The controller takes an SQ's entries in order: a fetch that the link would
            // deliver sooner than one started before it on the same SQ lands with it.
            let lands = lands.max(b.lands[s]);
            b.lands[s] = lands;
            b.under_fetch[s] += count;
            b.in_flight[s].push_back(count);
            q.push(lands, Event::FetchDone { sq });
        }
    }

    /// A bounded controller posted a command's completion entry: its slot is free again.
    #[cold]
    #[inline(never)]
    pub(crate) fn slot_freed(&mut self, now: SimTime, q: &mut EventQueue<Event>) {
        let b = self
            .bounded
            .as_mut()
            .expect("only a bounded controller frees slots");
        b.free += 1;
        self.arbitrate(now, q);
    }

    /// A fetch of `count` entries started at `now`: a memory read request up, the entries back
    /// down; returns when they are in the controller. Fetches of different SQs are in flight
    /// together (a controller keeps several memory reads outstanding); they share the link in
    /// the order they start.
    #[inline(always)]
    fn fetch_lands(&mut self, now: SimTime, count: u32) -> SimTime {
        let lat = self.link.latency;
        let (_, req) = self.up.reserve(now, self.link.wire_time(0));
        let (_, data) = self
            .down
            .reserve(req + lat, self.link.wire_time(SQE_BYTES * count as u64));
        data + lat
    }

    /// `sq`'s oldest fetch in flight arrived: the number of entries, to be taken with
    /// [`Nvme::fetched`].
    #[inline]
    pub(crate) fn fetch_done(&mut self, sq: u32) -> u32 {
        match std::mem::take(&mut self.fetching[sq as usize]) {
            // A fetch takes at least one entry: none under fetch here is a bounded
            // controller's, which keeps its own (so the unbounded path tests nothing more).
            0 => self.bounded_fetch_done(sq),
            count => count,
        }
    }

    #[inline(never)]
    fn bounded_fetch_done(&mut self, sq: u32) -> u32 {
        let b = self.bounded.as_mut().expect("an SQ with a fetch in flight");
        let count = b.in_flight[sq as usize]
            .pop_front()
            .expect("a fetch in flight");
        b.under_fetch[sq as usize] -= count;
        count
    }

    /// After `sq`'s burst was taken at `now`: fetch the entries that arrived meanwhile (a
    /// bounded controller fetched all it had slots for when they arrived).
    pub(crate) fn fetch_more(&mut self, now: SimTime, sq: u32, q: &mut EventQueue<Event>) {
        if !self.sqs[sq as usize].is_empty() && self.bounded.is_none() {
            self.start_fetch(now, sq, q);
        }
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
        if self.bounded.is_some() {
            free_slot_at(t, q);
        }
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

/// A bounded controller's slot frees when it posts the completion entry at `t` (out of line:
/// the unbounded path pays only the test).
#[cold]
#[inline(never)]
fn free_slot_at(t: SimTime, q: &mut EventQueue<Event>) {
    q.push(t, Event::SlotFree);
}

#[cfg(test)]
mod tests {
    //! NVMe alone on small-tlc's link: PCIe 3.0 ×4 (253.906 25 ps per byte), 24 B of TLP
    //! overhead, 256 B payloads, 200 ns one way; MSI-X after a 1 µs interrupt latency; the host
    //! completes a command in 2 µs (0.3 µs more per poll). Wire times, truncated to ps: a
    //! header-only read request 24 B = 6 093 ps; a doorbell or MSI-X message 28 B = 7 109 ps; one
    //! SQ entry 88 B = 22 343 ps, two 152 B = 38 593 ps; a CQ entry 40 B = 10 156 ps.

    use super::*;
    use crate::config::SsdConfig;
    use crate::request::Op;

    const LAT: u64 = 200_000;

    fn nvme(over: &[&str]) -> (Nvme, HostCpu) {
        let ov: Vec<String> = over.iter().map(|s| s.to_string()).collect();
        let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
        (Nvme::new(&cfg.interface).unwrap(), HostCpu::new(&cfg.host))
    }

    fn cmd(cmds: &mut Slab<Cmd>, sq: u32) -> u32 {
        cmds.insert(Cmd::new(0, Op::Read, 0, 4096, sq, 0))
    }

    #[test]
    fn a_doorbell_arrives_one_wire_time_and_latency_after_the_submit() {
        let (mut n, _) = nvme(&[]);
        let mut q = EventQueue::new();
        n.ring(SimTime::from_ns(1500), 7, &mut q);
        let (t, ev) = q.pop().unwrap();
        assert!(matches!(ev, Event::Submit { cmd: 7 }));
        assert_eq!(t, SimTime(1_500_000 + 7_109 + LAT));
    }

    #[test]
    fn a_fetch_is_a_read_request_up_and_the_entries_down() {
        let (mut n, _) = nvme(&[]);
        let mut q = EventQueue::new();
        n.on_doorbell(SimTime::ZERO, 0, 0, &mut q);
        let (t, ev) = q.pop().unwrap();
        assert!(matches!(ev, Event::FetchDone { sq: 0 }));
        assert_eq!(t, SimTime(6_093 + LAT + 22_343 + LAT));
        assert_eq!(n.fetch_done(0), 1);
    }

    /// Read data reserved up the link for when it will be ready (10 µs) leaves the link idle
    /// until then: a write's data request made at 0 goes up first, not behind it.
    #[test]
    fn a_transfer_before_one_reserved_ahead_uses_the_idle_link() {
        let (mut n, _) = nvme(&[]);
        let ahead = SimTime::from_us(10);
        let data_out = n.push_read_data(ahead, 4096);
        assert!(data_out > ahead);
        // Request up (6,093 ps), 4 KiB down (16 TLPs: 4096 + 16 × 24 B = 4,480 B), latency
        // each way.
        let wire = n.link.wire_time(4096);
        assert_eq!(
            n.pull_write_data(SimTime::ZERO, 4096),
            SimTime(6_093 + LAT) + wire + SimTime(LAT)
        );
    }

    /// Each SQ with entries has its own fetch in flight, of at most `arbitration_burst` entries;
    /// the fetches share the link in the order they start, and an SQ fetches again when its
    /// burst arrived and entries wait.
    #[test]
    fn every_sq_has_a_fetch_in_flight_of_at_most_one_burst() {
        let (mut n, _) = nvme(&["interface.io_queues=3", "interface.arbitration_burst=2"]);
        let mut q = EventQueue::new();
        // SQ 0 gets commands 0, 1, 2; SQ 1 gets 3; SQ 2 gets 4 and 5 — all at time 0. A doorbell
        // starts a fetch of its SQ when none is under way: SQ 0 fetches command 0 alone, SQ 1
        // command 3, SQ 2 command 4; SQ 0 then fetches 1 and 2, SQ 2 fetches 5.
        for (c, sq) in [(0, 0), (1, 0), (2, 0), (3, 1), (4, 2), (5, 2)] {
            n.on_doorbell(SimTime::ZERO, c, sq, &mut q);
        }
        assert_eq!(q.len(), 3, "one fetch in flight per SQ with entries");
        let mut order = Vec::new();
        let mut times = Vec::new();
        while let Some((now, ev)) = q.pop() {
            let Event::FetchDone { sq } = ev else {
                panic!("{ev:?}")
            };
            let count = n.fetch_done(sq);
            let got: Vec<u32> = (0..count).map(|_| n.fetched(sq)).collect();
            order.push((sq, got));
            times.push(now);
            n.fetch_more(now, sq, &mut q);
            assert!(q.len() <= 3);
        }
        assert_eq!(
            order,
            vec![
                (0, vec![0]),
                (1, vec![3]),
                (2, vec![4]),
                (0, vec![1, 2]),
                (2, vec![5])
            ]
        );
        // The three first fetches overlap: their requests leave back to back (6,093 ps each)
        // and their entries follow one another down (22,343 ps each).
        assert_eq!(times[0], SimTime(6_093 + LAT + 22_343 + LAT));
        assert_eq!(times[1], times[0] + SimTime(22_343));
        assert_eq!(times[2], times[1] + SimTime(22_343));
    }

    fn completion_time(interrupt: &str) -> SimTime {
        let (mut n, mut cpu) = nvme(&[&format!("interface.interrupt=\"{interrupt}\"")]);
        let mut cmds = Slab::default();
        let c = cmd(&mut cmds, 0);
        let mut q = EventQueue::new();
        n.complete(SimTime::ZERO, c, &cmds, &mut cpu, &mut q);
        let (t, ev) = q.pop().unwrap();
        assert!(matches!(ev, Event::HostComplete { cmd } if cmd == c));
        t
    }

    #[test]
    fn completion_by_msix_pin_and_polling() {
        // MSI-X: CQ entry, then the message, latency, interrupt latency, complete_cost.
        assert_eq!(
            completion_time("msix"),
            SimTime(10_156 + 7_109 + LAT + 1_000_000 + 2_000_000)
        );
        // Pin: the entry is seen one latency after it left; the handler's status read is a
        // round trip with a 4-byte read; then interrupt latency and complete_cost.
        assert_eq!(
            completion_time("pin"),
            SimTime(10_156 + LAT + LAT + LAT + 7_109 + 1_000_000 + 2_000_000)
        );
        // Polling: found as soon as it lands, for one poll more and no interrupt latency.
        assert_eq!(
            completion_time("polling"),
            SimTime(10_156 + LAT + 300_000 + 2_000_000)
        );
    }

    #[test]
    fn completions_on_one_core_queue_behind_each_other() {
        let (mut n, mut cpu) = nvme(&[]);
        let mut cmds = Slab::default();
        let a = cmd(&mut cmds, 0);
        let b = cmd(&mut cmds, 1);
        let mut q = EventQueue::new();
        n.complete(SimTime::ZERO, a, &cmds, &mut cpu, &mut q);
        n.complete(SimTime::ZERO, b, &cmds, &mut cpu, &mut q);
        let (ta, _) = q.pop().unwrap();
        let (tb, _) = q.pop().unwrap();
        // Same core: the second handler starts when the first ends.
        assert_eq!(tb, ta + SimTime::from_ns(2000));
    }
}
