//! The whole simulated system and its event loop: host job instances and CPU cores, the NVMe
//! queues over a PCIe link, the controller's HIL (fetch, split, dispatch), the FTL, and the FIL's
//! per-die queues in front of the NAND dies and channels.
//!
//! Handlers live beside the concept they model: `host` (instances, submit, completion),
//! `ctrl::hil` (fetch, dispatch, data movement), `ctrl::fil` (die queues and NAND operations).

use crate::config::{InterruptMode, SsdConfig};
use crate::error::{Error, Result};
use crate::ftl::Ftl;
use crate::iface::pcie::{LinkCost, LinkSpec};
use crate::media::nand::{Geometry, NandTimingPs};
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime};
use crate::stats::LatencyStats;
use crate::workload::job::{Generator, Job, Rw};
use crate::workload::Op;
use std::collections::VecDeque;

pub const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// Open-loop arrival for a job instance.
    Arrival { inst: u32 },
    /// Trace replay: the next trace request's arrival time came.
    TraceArrival,
    /// A command's doorbell write reached the controller.
    Submit { cmd: u32 },
    /// The current arbitration burst of SQ entries arrived at the controller.
    FetchDone,
    /// The HIL finished its firmware work on a command.
    Dispatch { cmd: u32 },
    /// A write command's data is in the controller.
    WriteDataIn { cmd: u32 },
    /// All read-modify-write reads of a write command are done.
    RmwDone { cmd: u32 },
    /// The current phase of a die's operation ended.
    DieStep { die: u32 },
    /// The host finished handling a command's completion.
    HostComplete { cmd: u32 },
}

pub struct Instance {
    pub core: u32,
    pub sq: u32,
    pub inflight: u32,
    pub gen: Generator,
    /// Open-loop arrivals waiting for a free slot of the iodepth.
    pub backlog: VecDeque<SimTime>,
}

pub struct HostReq {
    pub inst: u32,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub arrival: SimTime,
    pub cmds_left: u32,
}

pub struct Cmd {
    pub req: u32,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub sq: u32,
    pub txns_left: u32,
    pub rmw_left: u32,
    /// When the last of its read data reached host memory.
    pub data_done: SimTime,
    /// Non-NVMe interfaces: its data phase has started (the set-up message was sent).
    pub data_started: bool,
    /// DRAM interface: offset of its space in the data buffer.
    pub buf: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnKind {
    HostRead,
    RmwRead,
    HostWrite,
    /// A cache-buffer line on its way to NAND (`ctrl::buffer`).
    Flush,
}

impl TxnKind {
    /// Reads and programs gather separately into multi-plane operations.
    #[inline]
    pub fn is_program(self) -> bool {
        matches!(self, TxnKind::HostWrite | TxnKind::Flush)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Txn {
    pub kind: TxnKind,
    pub cmd: u32,
    /// Read source or program destination.
    pub pun: u32,
    pub plane: u32,
    /// Bytes of this unit that go to or come from the host.
    pub host_bytes: u32,
    /// Epoch of the destination block when the transaction was made.
    pub epoch: u32,
    /// Host reads and writes: the logical unit (for the cache buffer).
    pub aux: u32,
}

/// One collection queued at its die: its page copies are cut from `task.moves` from `next` on.
pub struct GcJob {
    pub task: crate::ftl::GcTask,
    pub next: usize,
}

/// The GC operation a die is running: a copy of `units` consecutive units to `pun` from
/// `src_pages` source pages (the first at `src`), or the erase of block `pun`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GcOp {
    pub erase: bool,
    pub pun: u32,
    pub src: u32,
    pub units: u16,
    pub src_pages: u16,
    pub epoch: u32,
    pub plane: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Sensed,
    Programmed,
    CopySensed,
    CopyProgrammed,
    Erased,
}

pub struct Die {
    /// Host reads, host writes — in that priority order, then GC unless GC is urgent.
    pub queues: [VecDeque<u32>; 2],
    pub gc: VecDeque<GcJob>,
    pub phase: Phase,
    pub op: Vec<u32>,
    pub gc_op: GcOp,
    pub busy: SimTime,
}

/// Slab of values named by `u32`, reusing freed slots (no allocation per request in steady state).
pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    #[inline]
    pub fn insert(&mut self, v: T) -> u32 {
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = Some(v);
            i
        } else {
            self.items.push(Some(v));
            (self.items.len() - 1) as u32
        }
    }
    #[inline]
    pub fn remove(&mut self, i: u32) -> T {
        let v = self.items[i as usize].take().expect("slab slot in use");
        self.free.push(i);
        v
    }
    #[inline]
    pub fn get(&self, i: u32) -> &T {
        self.items[i as usize].as_ref().expect("slab slot in use")
    }
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        self.items[i as usize].as_mut().expect("slab slot in use")
    }
}

/// One row per completed request, when the caller asks for them.
#[derive(Clone, Copy, Debug)]
pub struct RequestRecord {
    pub op: u8,
    pub offset: u64,
    pub issue_ps: u64,
    pub latency_ps: u64,
}

#[derive(Default, Clone, Debug)]
pub struct Counters {
    pub nand_pages_read: u64,
    pub nand_pages_written: u64,
    pub host_units_read: u64,
    pub unmapped_reads: u64,
    pub buffer_reads: u64,
    pub multiplane_ops: u64,
}

pub struct System {
    pub cfg: SsdConfig,
    pub geo: Geometry,
    pub nand: NandTimingPs,
    pub ftl: Ftl,
    pub q: EventQueue<Event>,
    /// The synthetic job; for a trace replay, only its limits (`iodepth`, `numjobs` = host
    /// queues, `total_ios`, `runtime`, `ramp`) are used and the requests come from `replay`.
    pub job: Job,
    pub replay: Option<Box<crate::host::ReplayHost>>,
    // Host
    pub insts: Vec<Instance>,
    pub cores: Vec<Timeline>,
    pub reqs: Slab<HostReq>,
    pub issued: u64,
    pub completed: u64,
    pub lat: [LatencyStats; 4],
    pub records: Option<Vec<RequestRecord>>,
    pub last_completion: SimTime,
    // Interface
    pub link: LinkCost,
    pub link_up: Timeline,
    pub link_down: Timeline,
    pub sqs: Vec<VecDeque<u32>>,
    pub rr: u32,
    pub fetching: Option<(u32, u32)>,
    pub interrupt: InterruptMode,
    /// Every interface but NVMe (`iface::Proto`); None: the NVMe queue pairs.
    pub proto: Option<crate::iface::Proto>,
    /// Non-NVMe: commands waiting in the host for a device slot (and DRAM interface: for buffer
    /// space), with when the driver had them ready.
    pub host_q: VecDeque<(u32, SimTime)>,
    /// Non-NVMe: commands the device holds.
    pub dev_inflight: u32,
    /// SATA with NCQ: a non-queued command (FLUSH CACHE, DATA SET MANAGEMENT) holds the device
    /// alone; nothing else is sent until it completes.
    pub exclusive: bool,
    /// The DRAM interface's buffer, DMA engine and banks.
    pub dramif: Option<Box<crate::iface::dramif::DramIf>>,
    /// Largest command the host driver sends (MDTS, or the DRAM interface's chunk).
    pub max_cmd_bytes: u64,
    // Controller
    pub ctrl_cpu: Timeline,
    pub cmds: Slab<Cmd>,
    pub txns: Slab<Txn>,
    pub dies: Vec<Die>,
    pub channels: Vec<Timeline>,
    pub counters: Counters,
    pub cache: Option<crate::ctrl::buffer::BufferManager>,
    /// Tests only: the data-placement oracle (`ctrl::datacheck`).
    pub check: Option<crate::ctrl::datacheck::DataCheck>,
    /// Driven from outside (`host::external`): each finished request and when it finished.
    pub external: Option<Vec<(u32, SimTime)>>,
}

impl System {
    pub fn new(cfg: &SsdConfig, job: Job, seed: u64, record: bool) -> Result<System> {
        let geo = Geometry::from_config(cfg);
        let i = &cfg.interface;
        let kind = crate::iface::Kind::parse(&i.kind).map_err(Error::Config)?;
        let (link, proto) = if kind == crate::iface::Kind::Nvme {
            let spec = LinkSpec::parse(&i.link).map_err(Error::Config)?;
            (
                LinkCost::new(spec, i.max_payload.0, i.tlp_overhead.0, i.link_latency.0),
                None,
            )
        } else {
            (
                LinkCost::latency_only(i.link_latency.0),
                Some(crate::iface::Proto::from_config(cfg).map_err(Error::Config)?),
            )
        };
        let dramif = (kind == crate::iface::Kind::Dram)
            .then(|| Box::new(crate::iface::dramif::DramIf::new(i)));
        let max_cmd_bytes = dramif.as_ref().map_or(i.mdts.0, |d| d.max_cmd_bytes());
        let n_inst = job.spec.numjobs;
        // Each SQ holds queue_depth − 1 commands; the instances sharing it must fit.
        let per_sq = n_inst.div_ceil(i.io_queues).min(n_inst);
        let max_bs = job
            .sizes
            .iter()
            .filter(|s| s.1 > 0)
            .map(|s| s.0)
            .max()
            .unwrap_or(4096);
        // Trims travel as one command whatever their length.
        let trims_only = matches!(job.spec.rw, Rw::Trim | Rw::Randtrim);
        let cmds_per_req = if trims_only {
            1
        } else {
            max_bs.div_ceil(i.mdts.0)
        };
        let need = per_sq as u64 * job.spec.iodepth as u64 * cmds_per_req;
        // Other interfaces keep what the device cannot take in the host's block layer.
        if proto.is_none() && need > (i.queue_depth - 1) as u64 {
            return Err(Error::Job(format!(
                "job, field `iodepth`: {} instance(s) per queue × iodepth {} × {} command(s) per request need {need} \
                 queue entries, but an NVMe queue of depth {} holds at most {}; lower iodepth or raise interface.queue_depth",
                per_sq,
                job.spec.iodepth,
                cmds_per_req,
                i.queue_depth,
                i.queue_depth - 1
            )));
        }
        let insts = (0..n_inst)
            .map(|k| Instance {
                core: k % cfg.host.cores,
                sq: k % i.io_queues,
                inflight: 0,
                gen: Generator::new(&job, k, seed),
                backlog: VecDeque::new(),
            })
            .collect();
        let dies = (0..geo.dies())
            .map(|_| Die {
                queues: [VecDeque::new(), VecDeque::new()],
                gc: VecDeque::new(),
                phase: Phase::Idle,
                op: Vec::with_capacity(16),
                gc_op: GcOp::default(),
                busy: SimTime::ZERO,
            })
            .collect();
        Ok(System {
            nand: NandTimingPs::from_config(cfg),
            ftl: Ftl::new(cfg, seed),
            q: EventQueue::new(),
            replay: None,
            insts,
            cores: vec![Timeline::default(); cfg.host.cores as usize],
            reqs: Slab::default(),
            issued: 0,
            completed: 0,
            lat: Default::default(),
            records: record.then(Vec::new),
            last_completion: SimTime::ZERO,
            link,
            link_up: Timeline::default(),
            link_down: Timeline::default(),
            sqs: vec![VecDeque::new(); i.io_queues as usize],
            rr: 0,
            fetching: None,
            interrupt: i.interrupt,
            proto,
            host_q: VecDeque::new(),
            dev_inflight: 0,
            exclusive: false,
            dramif,
            max_cmd_bytes,
            ctrl_cpu: Timeline::default(),
            cmds: Slab::default(),
            txns: Slab::default(),
            dies,
            channels: vec![Timeline::default(); geo.channels as usize],
            counters: Counters::default(),
            cache: cfg
                .cache
                .as_ref()
                .filter(|c| c.enabled)
                .map(|c| crate::ctrl::buffer::BufferManager::new(c, geo.unit_bytes)),
            check: None,
            external: None,
            job,
            geo,
            cfg: cfg.clone(),
        })
    }

    /// Run until every issued request completed. `progress(done, total)` is called every
    /// `check_every` events; returning false stops the run (reported as interrupted).
    pub fn run(
        &mut self,
        check_every: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<&'static str> {
        self.start_workload();
        if !self.drain(check_every, progress)? {
            return Ok("interrupted");
        }
        if let Some(stop) = self.replay_stop()? {
            return Ok(stop);
        }
        Ok(if self.job.total_ios.is_some_and(|t| self.issued >= t) {
            "io_count reached"
        } else {
            "runtime reached"
        })
    }

    /// Handle events until none is left; false if `progress` asked to stop. The only loop over
    /// the queue (`run` and `run_external` share it): a second copy of the loop cost the NVMe
    /// path about 4 % more instructions per request (callgrind).
    pub(crate) fn drain(
        &mut self,
        check_every: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<bool> {
        let mut next_check = self.q.handled.saturating_add(check_every);
        while let Some((now, ev)) = self.q.pop() {
            self.handle(now, ev)?;
            if self.q.handled >= next_check {
                next_check = next_check.saturating_add(check_every);
                let total = self.progress_total();
                if !progress(self.completed, total) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Handle one event.
    #[inline]
    fn handle(&mut self, now: SimTime, ev: Event) -> Result<()> {
        match ev {
            Event::Arrival { inst } => self.on_arrival(now, inst),
            Event::TraceArrival => self.on_trace_arrival(now),
            Event::Submit { cmd } => self.on_submit(now, cmd),
            Event::FetchDone => self.on_fetch_done(now),
            Event::Dispatch { cmd } => self.on_dispatch(now, cmd)?,
            Event::WriteDataIn { cmd } => self.on_write_data_in(now, cmd)?,
            Event::RmwDone { cmd } => self.issue_write_txns(now, cmd)?,
            Event::DieStep { die } => self.on_die_step(now, die)?,
            Event::HostComplete { cmd } => self.on_host_complete(now, cmd),
        }
        Ok(())
    }

    /// Controller-side completion of a command at `t`: post the CQ entry and interrupt the
    /// host, whose core then runs the completion path.
    pub fn complete_cmd(&mut self, t: SimTime, cmd: u32) {
        if self.proto.is_some() {
            return self.complete_other(t, cmd);
        }
        let lat = self.link.latency;
        let (_, cqe) = self.link_up.reserve(t, self.link.wire_time(16));
        let seen = cqe + lat;
        let host = &self.cfg.host;
        let (at, cost) = match self.interrupt {
            InterruptMode::Msix => {
                let (_, msg) = self.link_up.reserve(cqe, self.link.wire_time(4));
                (
                    msg + lat + self.cfg.interface.interrupt_latency.0,
                    host.complete_cost.0,
                )
            }
            // A legacy interrupt: the handler also reads the controller's status over MMIO.
            InterruptMode::Pin => (
                seen + self.cfg.interface.interrupt_latency.0 + lat + lat + self.link.wire_time(4),
                host.complete_cost.0,
            ),
            InterruptMode::Polling => (seen, host.poll_cost.0 + host.complete_cost.0),
        };
        let core = self.core_of_cmd(cmd);
        let (_, end) = self.cores[core].reserve(at, cost);
        self.q.push(end, Event::HostComplete { cmd });
    }

    #[inline]
    pub fn die_of_plane(&self, plane: u32) -> u32 {
        self.geo.die_of_plane(plane)
    }
}
