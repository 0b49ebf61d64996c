//! The device: host interface, controller (HIL, cache buffer, FIL), FTL and media, with the host
//! stack that submits to it (requests split into commands, CPU cores) — and no workload.
//!
//! Its boundary is small. A driver (`crate::driver`) submits a [`Request`] (op, offset, length,
//! queue, flags, arrival) with [`Device::submit`] and learns of each completion (time, status)
//! through [`Driver::on_complete`] while [`Device::run`] handles events; it may ask to be woken
//! at a simulated time ([`Device::wake_at`], [`Driver::on_wake`]). Whether the driver keeps a
//! fixed number of requests in flight (closed loop) or submits at arrival times (open loop) is
//! its own affair. [`Device::run_to_idle`] serves a driver that runs outside the loop (the
//! register-level NVMe controller, a test): submit, run until nothing is pending, read the
//! completions.
//!
//! Inside, one event queue and one dispatch `match` (`Device::handle`) route each event to the
//! layer that owns it; a handler reaches other layers only through the ports it is given
//! (`iface::HostPort`, `ctrl::FlashPort`).

use crate::config::{BackendKind, PriorityClass, SsdConfig};
pub use crate::ctrl::backend::{Backend, BackendFigures, NandBackend, Scheme};
use crate::ctrl::buffer::{BufferManager, DataPath, Lines};
use crate::ctrl::datacheck::DataCheck;
use crate::ctrl::fil::{Fil, NoPageGc, Step};
use crate::ctrl::hil::{Hil, MapOwner, MapWork};
use crate::ctrl::pcm::PcmCtrl;
/// A zoned drive's zone actions and states, as drivers name them (Zone Management Send, Report
/// Zones).
pub use crate::ctrl::zones::{ZoneAction, ZoneState};
use crate::ctrl::{Behind, FlashPort};
use crate::error::{got, Error, Invalid, Result};
use crate::iface::HostPort;
mod fdp;
mod hardware;
pub mod precondition;
pub mod state;
pub mod store;

pub use crate::ctrl::power_loss::PowerCutOutcome;
pub use crate::event::Event;
use crate::ftl::mapping_cache::Stage;
pub use crate::ftl::AnyFtl;
use crate::ftl::{Ftl, Translation};
use crate::host::Part;
use crate::host::{Host, HostCpu};
use crate::iface::Interface;
use crate::media::nand::Geometry;
use crate::request::Cmd;
use crate::request::Op;
pub use crate::request::{Completion, Flags, Request, RequestRecord, Space, Status};
use crate::sim::{EventQueue, SimTime, Slab};
pub use hardware::HardwareInfo;

/// Map units from which [`Device::prefetch_map`] fetches ahead: 4 Mi entries, a 16 MiB map,
/// beyond the last-level cache of most processors.
const PREFETCH_MIN_UNITS: u64 = 4 << 20;

/// The map unit of the data at byte `offset`, if it lies within the map (a fusion device's PCM
/// space lies beyond it): what a prefetch of the map may ask for.
#[inline(always)]
fn map_unit<M: Translation + ?Sized>(geo: &Geometry, ftl: &Ftl<M>, offset: u64) -> Option<u64> {
    let lpn = offset / geo.unit_bytes;
    (lpn < ftl.logical_units()).then_some(lpn)
}

/// [`Device::prefetch_map`] on the page FTL `ftl`.
#[inline(always)]
fn prefetch_entry<M: Translation>(geo: &Geometry, ftl: &Ftl<M>, offset: u64) {
    if let Some(lpn) = map_unit(geo, ftl, offset) {
        ftl.prefetch(lpn);
    }
}

/// [`Device::prefetch_map_target`] on the page FTL `ftl`.
#[inline(always)]
fn prefetch_target<M: Translation>(geo: &Geometry, ftl: &Ftl<M>, op: Op, offset: u64) {
    if let Some(lpn) = map_unit(geo, ftl, offset) {
        match op {
            Op::Read => ftl.prefetch_read_target(lpn),
            Op::Write => ftl.prefetch_target(lpn),
            _ => {}
        }
    }
}

/// A fusion device's PCM controller, for a PCM event on a device with NAND (of the NAND
/// schemes, only the fusion device has PCM to raise one).
fn fusion_pcm(scheme: &mut Scheme) -> &mut PcmCtrl {
    match scheme {
        Scheme::Fusion { pcm, .. } => pcm,
        _ => unreachable!("PCM events come from PCM"),
    }
}

/// The host has left the device idle: background GC may start in the page FTL `ftl`, its work
/// handed to the dies.
fn start_idle_gc<M: Translation>(
    now: SimTime,
    ftl: &mut Ftl<M>,
    fil: &mut Fil,
    check: Option<&mut DataCheck>,
    q: &mut EventQueue<Event>,
) -> Result<()> {
    ftl.set_idle(true)?;
    fil.drain_gc(now, ftl, check, q);
    Ok(())
}

/// With `interface.controller_slots`: the NVMe controller posted a completion entry, and the
/// arbiter fills the free slot (whatever the medium).
#[inline]
fn slot_freed(now: SimTime, link: &mut Interface, q: &mut EventQueue<Event>) {
    let Interface::Nvme(n) = link else {
        unreachable!("only NVMe bounds its commands")
    };
    n.slot_freed(now, q);
}

/// What drives a device: it submits requests and reacts to their completions and to wake-ups
/// it asked for. All calls happen inside [`Device::run`], at the simulated time `now`.
pub trait Driver {
    /// A request finished.
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion);
    /// A wake-up asked for with [`Device::wake_at`] came due.
    fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
        let _ = (dev, now, token);
    }
    /// Requests the run expects to complete in all, for progress reports (0: unknown).
    fn expected_requests(&self) -> u64 {
        0
    }
    /// At `now`, whether the driver will submit nothing more. Background GC does not start once
    /// it has (its work would only move the run's figures after the last request).
    fn finished(&self, now: SimTime) -> bool {
        let _ = now;
        false
    }
}

/// Requests finished, each with its id, completion time and status, in completion order.
pub type Finished = Vec<(u32, SimTime, Status)>;

/// A driver that only collects completions, for [`Device::run_to_idle`].
#[derive(Default)]
struct Collect(Finished);

impl Driver for Collect {
    fn on_complete(&mut self, _dev: &mut Device, now: SimTime, done: Completion) {
        self.0.push((done.id, now, done.status));
    }
}

pub struct Device {
    cfg: SsdConfig,
    /// Bytes of the logical space (computed once: a float product of the config).
    capacity: u64,
    q: EventQueue<Event>,
    /// Commands in flight, from the host's split to the host's completion.
    cmds: Slab<Cmd>,
    host: Host,
    cpu: HostCpu,
    link: Interface,
    /// The cache buffer in the data path, or none.
    cache: DataPath,
    /// The medium and FTL scheme, with the layers each has: on NAND the HIL, the FIL and the
    /// page FTL, and the scheme they hand commands to (a fusion device hands the commands
    /// flagged PCM to its PCM controller); PCM-only, the PCM controller alone.
    backend: Backend,
    /// Tests only: the data-placement oracle (`ctrl::datacheck`).
    check: Option<DataCheck>,
    /// The data written, for drivers that move real bytes.
    store: Option<store::Store>,
    /// Background GC (`ftl.gc.background`): how long the host must leave the device idle
    /// before it starts (zero: off), and a count of submissions that tells a pending idle
    /// check whether the host came back since.
    idle_after: SimTime,
    submissions: u32,
    /// Whether the page FTL's map is larger than a processor's caches
    /// ([`Device::map_outgrows_caches`]; never under a scheme without the page FTL: no map to
    /// warm): asked once per request, so kept rather than found through the back end each time.
    map_outgrows_caches: bool,
    /// The seed it was built with (a power cycle rebuilds it).
    seed: u64,
    /// Where each completed Zone Append's data went (request id, byte offset), kept only when
    /// a driver asks (`record_append_offsets`): the NVMe controller returns the LBA to the host.
    append_offsets: Option<Vec<(u32, u64)>>,
}

impl Device {
    /// Build the device `cfg` describes; `seed` feeds its random streams (GC victims,
    /// preconditioning).
    pub fn new(cfg: &SsdConfig, seed: u64) -> Result<Device> {
        if cfg.backend_kind() != BackendKind::Pcm {
            // The FTL's tables are filled at once: a drive too large for this machine is
            // refused here, naming both figures, rather than killed by the OOM killer part-way.
            crate::sim::mem::check_fits(Ftl::table_bytes(cfg), crate::sim::mem::available_bytes())
                .map_err(Error::config)?;
        }
        let link = Interface::from_config(cfg).map_err(Error::config)?;
        let link_max = link
            .dramif()
            .map_or(cfg.interface.mdts.0, |d| d.max_cmd_bytes());
        // The block layer splits at the smaller of its own limit and the interface's.
        let max_cmd_bytes = cfg
            .host
            .max_request_bytes()
            .map_or(link_max, |b| b.min(link_max));
        let mut host = Host::new(cfg.interface.io_queues, link.sq_capacity(), max_cmd_bytes);
        if let Some(b) = cfg.interface.ata.prd_boundary {
            let fixed_offset = cfg.interface.ata.prd_buffer.fixed_offset(b.0, seed);
            host.set_prd(crate::host::PrdSplit::new(b.0, fixed_offset, seed));
        }
        let backend = Backend::new(cfg, seed);
        let map_outgrows_caches = backend
            .page_ftl()
            .is_some_and(|f| f.logical_units() >= PREFETCH_MIN_UNITS);
        Ok(Device {
            q: EventQueue::new(),
            cmds: Slab::default(),
            host,
            cpu: HostCpu::new(&cfg.host),
            link,
            // Lines of a map unit: on NAND, the FTL's; on a PCM-only device, its PCM lines
            // (`pcm.line`).
            cache: DataPath::new(cfg),
            backend,
            map_outgrows_caches,
            check: None,
            store: None,
            idle_after: if cfg.ftl.gc.background {
                cfg.ftl
                    .gc
                    .idle_after
                    .unwrap_or(crate::config::DEFAULT_IDLE_AFTER)
                    .0
            } else {
                SimTime::ZERO
            },
            submissions: 0,
            seed,
            append_offsets: None,
            capacity: cfg.logical_bytes(),
            cfg: cfg.clone(),
        })
    }

    pub fn config(&self) -> &SsdConfig {
        &self.cfg
    }

    /// The power fails at the simulated present and comes back at once. Everything volatile is
    /// lost — commands in flight, the interface's queues, the controllers' state and timers —
    /// and the media keep what they hold: the device restarts at the same simulated time with
    /// the raw NAND firmware's view of its blocks (pages programmed, erase counts; a block whose
    /// erase was cut counts as full, so it is erased again before reuse), the PCM's wear and
    /// Start-Gap state, and the data store. Returns the device as it was at the cut (its
    /// figures describe the run up to it; its raw NAND state has moved to the new one) and how
    /// many commands were in flight.
    pub fn power_cycle(&mut self) -> Result<(Device, u64)> {
        let mut fresh = Device::new(&self.cfg, self.seed)?;
        fresh.q.start_at(self.now());
        let mut cut = std::mem::replace(self, fresh);
        let in_flight = cut.cmds.len() as u64;
        if let (Some(new), Some(old)) = (self.backend.raw_mut(), cut.backend.raw_mut()) {
            // The raw firmware's view of its blocks is the media's: it moves to the new device.
            for c in cut.cmds.iter().filter(|c| c.op == Op::Erase) {
                for b in old.blocks_of(c.offset, c.len).into_iter().flatten() {
                    old.needs_erase(b);
                }
            }
            std::mem::swap(new, old);
        }
        if let (Some(new), Some(old)) = (self.backend.zoned_mut(), cut.backend.zoned_mut()) {
            // Zone states, write pointers and erase counts are kept on the media.
            std::mem::swap(new, old);
        }
        if let (Some(new), Some(old)) = (self.backend.pcm_mut(), cut.backend.pcm()) {
            new.media.keep_durable(&old.media);
        }
        self.store = cut.store.take();
        self.append_offsets = cut.append_offsets.as_ref().map(|_| Vec::new());
        Ok((cut, in_flight))
    }

    /// Go on from simulated time `t` (no earlier than now), idle: a drive restarted after a
    /// power cut comes back at the cut's time plus its recovery.
    pub fn resume_at(&mut self, t: SimTime) {
        let t = t.max(self.now());
        self.q.start_at(t);
    }

    /// Keep (or stop keeping) where each completed Zone Append's data went, for
    /// [`Device::take_append_offsets`].
    pub fn record_append_offsets(&mut self, on: bool) {
        self.append_offsets = on.then(Vec::new);
    }

    /// The Zone Appends completed since the last call: (request id, byte offset the device
    /// wrote the data at). Empty unless [`Device::record_append_offsets`] is on.
    pub fn take_append_offsets(&mut self) -> Vec<(u32, u64)> {
        self.append_offsets
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    #[cold]
    fn note_append(&mut self, id: u32, offset: u64) {
        if let Some(v) = &mut self.append_offsets {
            v.push((id, offset));
        }
    }

    /// The NAND geometry (a device with NAND).
    pub fn geometry(&self) -> Option<&Geometry> {
        self.backend.nand().map(|n| &n.geo)
    }

    /// Bytes of the logical space.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    /// The simulated time of the last event handled.
    pub fn now(&self) -> SimTime {
        self.q.now()
    }

    /// Events handled so far.
    pub fn events(&self) -> u64 {
        self.q.handled
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    pub fn interface(&self) -> &Interface {
        &self.link
    }

    /// The page-mapped FTL, where it keeps the map (`Backend::page_ftl`; None under a scheme
    /// that keeps its own map, and on a PCM-only device).
    pub fn ftl(&self) -> Option<&AnyFtl> {
        self.backend.page_ftl()
    }

    /// The page-mapped FTL, for untimed work between runs (preconditioning).
    pub fn ftl_mut(&mut self) -> Option<&mut AnyFtl> {
        self.backend.page_ftl_mut()
    }

    /// The run will touch about `units` map units, all among the logical units `span`: the
    /// page FTL backs its tables at once if that is most of them (`Ftl::expect_touches`; speed
    /// only). Called before preconditioning, which says whether the drive will hold data by
    /// then. Nothing on a PCM-only device.
    pub fn expect_touches(&mut self, units: u64, span: std::ops::Range<u64>) {
        let held = self.cfg.precondition.leaves_data();
        if let Some(f) = self.ftl_mut() {
            f.expect_touches(units, span, held);
        }
    }

    /// The host interface layer (a device with NAND).
    pub fn hil(&self) -> Option<&Hil> {
        self.backend.nand().map(|n| &n.hil)
    }

    /// The medium and FTL scheme, with what each keeps of its own.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Whether logical unit `lpn` holds data the device keeps (the back end's map says so).
    pub fn is_mapped(&self, lpn: u64) -> bool {
        self.backend.is_mapped(lpn)
    }

    /// Whether the device has worn out and takes no more writes.
    pub fn read_only(&self) -> bool {
        self.backend.read_only()
    }

    /// Spare blocks left, in percent of the reserve (SMART's Available Spare).
    pub fn available_spare_percent(&self) -> f64 {
        self.backend.available_spare_percent()
    }

    /// Mean wear of the good blocks against their P/E limit, in percent, where the device models
    /// wear (`[reliability]`).
    pub fn percentage_used(&self) -> Option<f64> {
        self.backend.percentage_used()
    }

    /// Erases of the most-erased block.
    pub fn max_erase_count(&self) -> u64 {
        self.backend.max_erase_count()
    }

    /// The back end, for untimed work between runs (a block-mapped FTL's preconditioning).
    pub fn backend_mut(&mut self) -> &mut Backend {
        &mut self.backend
    }

    /// The flash interface layer (a device with NAND).
    pub fn fil(&self) -> Option<&Fil> {
        self.backend.nand().map(|n| &n.fil)
    }

    /// A fusion device's hardware information (`ctrl::fusion`); its per-block P/E counts are
    /// `backend().raw()`'s erase counts.
    pub fn hardware_info(&self) -> Option<HardwareInfo> {
        HardwareInfo::of(&self.cfg)
    }

    pub fn cache(&self) -> Option<&BufferManager> {
        self.cache.buffer()
    }

    pub fn host_cpu(&self) -> &HostCpu {
        &self.cpu
    }

    /// Keep the data written, in blocks of `block_bytes` (a power of two from 512 to 64 KiB),
    /// for a driver that moves real bytes. The store is functional only: the driver writes into
    /// it what it submits, and timing stays the model's.
    pub fn enable_store(&mut self, block_bytes: u64) -> Result<()> {
        if !(512..=65536).contains(&block_bytes) || !block_bytes.is_power_of_two() {
            return Err(Error::bad_config(Invalid::unnamed(
                "data store block size",
                got(
                    format!("{block_bytes} bytes"),
                    "a power of two from 512 to 65536",
                ),
            )));
        }
        self.store = Some(store::Store::new(block_bytes as usize));
        Ok(())
    }

    /// The data store, if [`Device::enable_store`] turned it on.
    pub fn store(&self) -> Option<&store::Store> {
        self.store.as_ref()
    }

    /// Bytes the model's large structures have allocated (the result's `wall.memory`).
    pub fn memory(&self) -> crate::stats::result::MemoryResult {
        let data_store_bytes = self.store.as_ref().map_or(0, |s| s.held_bytes());
        let mut m = crate::stats::result::MemoryResult {
            data_store_bytes,
            ..Default::default()
        };
        // The page FTL's tables, where it keeps the map: a scheme with its own map has no page
        // FTL, nor has a PCM-only device.
        if let Some(f) = self.backend.page_ftl().map(AnyFtl::memory) {
            m.map_bytes = f.map_bytes;
            m.reverse_map_bytes = f.reverse_map_bytes;
            m.programmed_bits_bytes = f.programmed_bits_bytes;
            m.block_records_bytes = f.block_records_bytes;
            m.free_lists_bytes = f.free_lists_bytes;
        }
        m.total_bytes = m.map_bytes
            + m.reverse_map_bytes
            + m.programmed_bits_bytes
            + m.block_records_bytes
            + m.free_lists_bytes
            + data_store_bytes;
        m
    }

    pub fn store_mut(&mut self) -> Option<&mut store::Store> {
        self.store.as_mut()
    }

    /// Turn on the data-placement oracle (tests).
    pub fn enable_check(&mut self) {
        self.check = Some(DataCheck::default());
    }

    pub fn check(&self) -> Option<&DataCheck> {
        self.check.as_ref()
    }

    /// Arm the power-loss model (issue 43, `ctrl::power_loss`): from now on the device keeps
    /// what each program leaves in its unit's out-of-band area, its map checkpoints and its
    /// write cache's contents, for [`Device::power_cut`]. The drive as it stands now counts as
    /// checkpointed. Only the page-mapped FTL (full or cached map) has the model; another back
    /// end gets a one-line error naming `what` (the option that asked for it).
    pub fn enable_power_loss(&mut self, what: &str) -> Result<()> {
        let plp = self.cfg.ftl.power_loss_protection;
        let checkpoint_units = self
            .cfg
            .ftl
            .checkpoint_units
            .unwrap_or(crate::config::DEFAULT_CHECKPOINT_UNITS);
        let model = match self.backend.page_ftl_mut() {
            Some(ftl) => crate::ctrl::power_loss::PowerLoss::new(plp, checkpoint_units, ftl),
            None => {
                return Err(Error::config(format!(
                "{what}: the power-loss model covers the page-mapped FTL (ftl.kind = \"page\"), \
                 this device's back end is {} (a fusion device's host-side FTL has its own: \
                 hfsl.power_cut_event)",
                    self.backend.kind().name()
                )))
            }
        };
        self.check.get_or_insert_with(DataCheck::default).power = Some(Box::new(model));
        Ok(())
    }

    /// A completion reached the host (the driver calls it with each one when the power-loss
    /// model is armed): the writes and trims it covers are acknowledged; a FLUSH makes the
    /// trims done by then durable.
    pub fn power_loss_acknowledged(&mut self, done: &Completion) {
        let Some(p) = self.check.as_mut().and_then(|c| c.power.as_deref_mut()) else {
            return;
        };
        if done.status == Status::Ok && done.op == Op::Flush {
            p.flush_completed();
            return;
        }
        if done.status != Status::Ok || !matches!(done.op, Op::Write | Op::Trim) || done.len == 0 {
            return;
        }
        // Armed only on the page-mapped FTL, whose map unit this is.
        let unit = self.cfg.map_unit_bytes();
        for lpn in done.offset / unit..=(done.offset + done.len - 1) / unit {
            p.acknowledged(lpn);
        }
    }

    /// The power fails now: what recovery rebuilds from the flash and what it costs
    /// ([`Device::enable_power_loss`] first; None without it). The device is left as it was,
    /// its figures those of the run up to the cut.
    pub fn power_cut(&self) -> Option<crate::ctrl::power_loss::PowerCutOutcome> {
        let p = self.check.as_ref()?.power.as_deref()?;
        let timing = crate::media::nand::NandTimingPs::from_config(&self.cfg);
        Some(p.cut(self.ftl()?, &timing, self.q.handled, self.now()))
    }

    /// Requests that arrive before `t` complete as usual but are left out of the latency
    /// figures (a ramp).
    pub fn measure_from(&mut self, t: SimTime) {
        self.host.set_measure_from(t);
    }

    /// Start the measured figures afresh at `t`: the latencies and records so far are
    /// dropped (fio's statistics reset when a latency-target search has found its depth).
    #[cold]
    pub fn restart_measuring(&mut self, t: SimTime) {
        self.host.restart_measuring(t);
    }

    /// Keep one record per measured request ([`Device::take_records`]).
    pub fn record_requests(&mut self) {
        self.host.record_requests();
    }

    pub fn take_records(&mut self) -> Option<Vec<RequestRecord>> {
        self.host.take_records()
    }

    /// Largest command the host sends (MDTS, or the DRAM interface's chunk).
    pub fn max_cmd_bytes(&self) -> u64 {
        self.host.max_cmd_bytes()
    }

    /// Commands one interface queue holds (NVMe: its depth − 1); `u32::MAX` where commands
    /// wait in the host instead.
    pub fn queue_capacity(&self) -> u32 {
        self.link.sq_capacity()
    }

    /// Each NVMe SQ's priority class (the QPRIO of its creation), one per SQ
    /// (`interface.io_queues` of them); other interfaces have one queue and no classes.
    pub fn set_queue_classes(&mut self, classes: &[PriorityClass]) {
        if let Interface::Nvme(n) = &mut self.link {
            n.set_queue_classes(classes);
        }
    }

    /// Whether a request of `op` and `len` bytes at `offset` from `queue` fits in its interface
    /// queue now.
    pub fn queue_has_room(&self, queue: u32, op: Op, offset: u64, len: u64) -> bool {
        self.host.queue_has_room(queue, op, offset, len)
    }

    /// Wake the driver at `t` with `token` (not before now).
    #[inline]
    pub fn wake_at(&mut self, t: SimTime, token: u32) {
        self.q.push(t, Event::Wake { token });
    }

    /// Submit `r` at the simulated time `now` (not before the device's present): the host
    /// splits it into commands and sends each. Returns its id, named again in its
    /// [`Completion`]. A request beyond the logical space (a raw device: the physical one; a
    /// fusion device: the space `Flags::PCM` names), a read or write of no bytes, and an erase
    /// on a device with an FTL or of PCM are refused.
    #[inline]
    pub fn submit(&mut self, now: SimTime, r: Request) -> Result<u32> {
        let r = self.check_request(r)?;
        let now = now.max(self.q.now());
        if self.idle_after != SimTime::ZERO {
            self.host_returns()?;
        }
        let Device {
            q,
            cmds,
            host,
            cpu,
            link,
            ..
        } = self;
        let cores = cpu.cores();
        let id = host.split(&r, cores, |c| {
            let core = c.core;
            let c_len = c.len;
            let cmd = cmds.insert(c);
            let ready = cpu.submit(core, now, c_len);
            link.send(cmd, ready, q);
        });
        link.issue(now, cmds, cpu, q);
        Ok(id)
    }

    /// Submit the requests of one system call together (fio's `iodepth_batch`): the block
    /// layer merges those that touch and orders them by its scheduler (`host::blk`), then
    /// each goes as [`Device::submit`] sends one. A merged request completes as each of the
    /// requests it was made of, one `on_complete` each.
    pub fn submit_batch(&mut self, now: SimTime, reqs: &[Request]) -> Result<()> {
        for r in reqs {
            self.check_request(*r)?;
        }
        let rules = crate::host::blk::PlugRules {
            max_bytes: self.host.max_cmd_bytes(),
            nomerges: self.cfg.host.nomerges,
            scheduler: self
                .cfg
                .host
                .scheduler
                .unwrap_or(crate::config::Scheduler::None),
        };
        for p in crate::host::blk::plug(reqs, rules) {
            // Through `submit` itself (its check passes again): a second copy of its body would
            // move the per-command closure out of line on the default path.
            let id = self.submit(now, p.req)?;
            if p.parts.len() > 1 {
                self.host.set_parts(id, p.parts.into_boxed_slice());
            }
        }
        Ok(())
    }

    /// One system call of a driver's I/O engine on the core of `queue`, from `now` (work
    /// submitted afterwards on that core waits for it).
    pub fn host_syscall(&mut self, now: SimTime, queue: u32) {
        let (core, now) = self.host_core(now, queue);
        self.cpu.syscall(core, now);
    }

    /// The host core of interface queue `queue`, and `now` brought up to the present.
    #[inline]
    fn host_core(&self, now: SimTime, queue: u32) -> (u32, SimTime) {
        (queue % self.cpu.cores(), now.max(self.q.now()))
    }

    /// Whether the map is larger than a processor's caches ([`PREFETCH_MIN_UNITS`]), so that
    /// a driver gains by [`Device::prefetch_map`]: on a smaller one the entries are at hand and
    /// prefetches cost instructions for nothing.
    #[inline(always)]
    pub fn map_outgrows_caches(&self) -> bool {
        self.map_outgrows_caches
    }

    /// Start the cache misses of the map entry of the data at byte `offset` (no effect on the
    /// simulation): for a driver that knows a request before it submits it.
    #[inline(always)]
    pub fn prefetch_map(&self, offset: u64) {
        if let Some(n) = self.backend.nand() {
            match &n.scheme {
                Scheme::Page(ftl) => prefetch_entry(&n.geo, ftl, offset),
                Scheme::Cached(ftl) => prefetch_entry(&n.geo, ftl, offset),
                _ => {}
            }
        }
    }

    /// The second stage of [`Device::prefetch_map`], once the entry has arrived: the records
    /// of the unit it points to that a read or write of it touches.
    #[inline(always)]
    pub fn prefetch_map_target(&self, op: Op, offset: u64) {
        if let Some(n) = self.backend.nand() {
            match &n.scheme {
                Scheme::Page(ftl) => prefetch_target(&n.geo, ftl, op, offset),
                Scheme::Cached(ftl) => prefetch_target(&n.geo, ftl, op, offset),
                _ => {}
            }
        }
    }

    /// One request of a driver through the kernel's layers above the block driver (file
    /// system, block layer, I/O scheduler: `host.fs_cost`, `block_cost`, `sched_cost`) on the
    /// core of `queue`, from `now`. The conventional drivers (jobs, trace replay) call it once
    /// per request; a host-side FTL that calls the driver directly (HFSL) does not.
    #[inline]
    pub fn host_kernel_request(&mut self, now: SimTime, queue: u32) {
        let cost = self.cpu.request_cost();
        if cost != SimTime::ZERO {
            self.host_work(now, queue, cost);
        }
    }

    /// Host CPU work of `dur` on the core of interface queue `queue` from `now` (a host-side
    /// driver's own work, e.g. HFSL's map): what that core does next queues behind it.
    /// Returns when the work is done (`now` for no work).
    pub fn host_work(&mut self, now: SimTime, queue: u32, dur: SimTime) -> SimTime {
        if dur == SimTime::ZERO {
            return now;
        }
        let (core, now) = self.host_core(now, queue);
        self.cpu.reserve(core, now, dur).1
    }

    /// Refuse a request the device cannot take, with a one-line reason; the request as the
    /// device takes it (a zone management command for all zones is addressed to the end of the
    /// namespace, where no zone starts: `ctrl::zoned` reads it so).
    #[inline(always)]
    fn check_request(&self, r: Request) -> Result<Request> {
        let space = crate::request::Space::of(r.flags);
        crate::ctrl::fusion::check_space(space, r.op, r.offset, r.len, self.capacity, || {
            self.backend.pcm_space_bytes()
        })
        .map_err(Error::job)?;
        if !matches!(r.op, Op::Read | Op::Write) {
            return self.check_other_op(r);
        }
        if r.len == 0 {
            return Err(Self::no_bytes(&r));
        }
        self.check_stream(&r)?;
        Ok(r)
    }

    #[cold]
    fn no_bytes(r: &Request) -> Error {
        Error::job(format!(
            "{} request at byte {} has no bytes",
            r.op.name(),
            r.offset
        ))
    }

    /// The stream a request carries, if any, is one the FTL has.
    #[inline(always)]
    fn check_stream(&self, r: &Request) -> Result<()> {
        if r.flags.stream() != 0 {
            if let Err(m) = self.check_stream_id(r.flags.stream()) {
                return Err(Error::job(format!(
                    "{} request at byte {}, its stream: {m}",
                    r.op.name(),
                    r.offset
                )));
            }
        }
        Ok(())
    }

    /// Whether write stream `stream` exists (`Backend::check_stream`). The one-line refusal
    /// names the field.
    pub fn check_stream_id(&self, stream: u8) -> std::result::Result<(), String> {
        self.backend.check_stream(stream)
    }

    /// The checks of the ops other than reads and writes (out of the common path): erases
    /// only on a raw device, appends and zone management only on a zoned drive.
    #[cold]
    #[inline(never)]
    fn check_other_op(&self, mut r: Request) -> Result<Request> {
        if r.len == 0 && !r.op.moves_no_data() {
            return Err(Self::no_bytes(&r));
        }
        self.check_stream(&r)?;
        let kind = self.backend.kind();
        if r.op == Op::Erase && kind == BackendKind::Pcm {
            return Err(Error::job(
                "erase: this device is PCM, updated in place; it has no erase".into(),
            ));
        }
        let zoned = kind == BackendKind::Zoned;
        if (r.op == Op::Append || r.op.is_zone_management()) && !zoned {
            return Err(Error::job(format!(
                "{}: this device has no zones (a zoned drive has a [zns] section)",
                r.op.name()
            )));
        }
        if r.op == Op::Erase && zoned {
            return Err(Error::job(
                "erase: this is a zoned drive; its blocks are erased by zone resets (zone_reset)"
                    .into(),
            ));
        }
        if r.op == Op::Erase && self.backend.raw().is_none() {
            return Err(Error::job(
                "erase: this device has an FTL that erases for itself; erases are for a raw device (ftl.kind = \"none\")".into(),
            ));
        }
        if r.op.is_zone_management() && r.flags.contains(Flags::ALL_ZONES) {
            r.offset = self.capacity;
        }
        Ok(r)
    }

    /// Handle events until none is left, calling `driver` on completions and wake-ups; false
    /// if `progress(completed, expected)`, called every `check_every` events, asked to stop.
    pub fn run<D: Driver>(
        &mut self,
        driver: &mut D,
        check_every: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<bool> {
        let mut next_check = self.q.handled.saturating_add(check_every);
        while let Some((now, ev)) = self.q.pop() {
            self.step(driver, now, ev)?;
            if self.q.handled >= next_check {
                next_check = next_check.saturating_add(check_every);
                if !progress(self.host.completed(), driver.expected_requests()) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Handle the events due at or before `limit`, calling `driver` as [`Device::run`] does,
    /// and stop: the model's clock is then at its last event, at most `limit`. For a driver
    /// whose requests arrive in wall-clock time: it submits what arrived, runs the model up to
    /// the present, answers what completed, and sleeps until [`Device::next_event_time`] or its
    /// next input.
    pub fn run_until<D: Driver>(&mut self, driver: &mut D, limit: SimTime) -> Result<()> {
        while self.q.peek_time().is_some_and(|t| t <= limit) {
            let (now, ev) = self.q.pop().expect("peeked");
            self.step(driver, now, ev)?;
        }
        Ok(())
    }

    /// When the next event is due; None when the device is idle.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.q.peek_time()
    }

    /// One event: the driver's own, a request's completion (which may call the driver), or a
    /// device event.
    #[inline]
    fn step<D: Driver>(&mut self, driver: &mut D, now: SimTime, ev: Event) -> Result<()> {
        match ev {
            Event::Wake { token } => driver.on_wake(self, now, token),
            Event::HostComplete { cmd } => {
                if let Some(done) = self.on_host_complete(now, cmd) {
                    // A merged request completes as each submitted request it was made of,
                    // each counted by the host and reported. One loop for both cases: a
                    // second copy would keep the compiler from inlining the driver's
                    // `on_complete` and the histogram's record on the default path.
                    let merged = self.host.take_parts(done.id);
                    let one = [Part {
                        offset: done.offset,
                        len: done.len,
                        arrival: done.arrival,
                    }];
                    for p in merged.as_deref().unwrap_or(&one) {
                        self.host.count(now, done.op, p, done.status, done.queue);
                        let each = Completion {
                            offset: p.offset,
                            len: p.len,
                            arrival: p.arrival,
                            ..done
                        };
                        driver.on_complete(self, now, each);
                    }
                }
                if self.idle_after != SimTime::ZERO {
                    self.arm_idle_check(now);
                }
            }
            Event::IdleCheck { submissions } => {
                if submissions == self.submissions && !driver.finished(now) {
                    self.host_leaves(now)?;
                }
            }
            _ => self.handle(now, ev)?,
        }
        Ok(())
    }

    /// Run until no event is pending; returns each request finished since the last call with
    /// its completion time and status, in completion order.
    pub fn run_to_idle(&mut self) -> Result<Finished> {
        Ok(self.run_to_idle_or_event(u64::MAX)?.0)
    }

    /// [`Device::run_to_idle`], stopping early once the device has handled `event` events in
    /// all (a power cut armed at that event); the flag says whether it stopped there.
    pub fn run_to_idle_or_event(&mut self, event: u64) -> Result<(Finished, bool)> {
        let left = event.saturating_sub(self.q.handled);
        if left == 0 {
            return Ok((Vec::new(), true));
        }
        let mut c = Collect::default();
        let idle = self.run(&mut c, left, &mut |_, _| false)?;
        Ok((c.0, !idle))
    }

    /// Handle one device event. Always inlined into the event loop (its one caller): as a call
    /// it saved and restored six registers and re-derived the layers' addresses per event
    /// (callgrind, `profile_run 200000 small-tlc`: 919,440,804 -> 890,621,125 instructions).
    #[inline(always)]
    fn handle(&mut self, now: SimTime, ev: Event) -> Result<()> {
        let Device {
            q,
            cmds,
            cpu,
            link,
            cache,
            backend,
            check,
            ..
        } = self;
        let nand = match backend {
            Backend::Nand(n) => n,
            Backend::Pcm(p) => {
                let up = HostPort { q, cmds, link, cpu };
                return Self::handle_pcm(now, ev, p, up, cache.buffer_mut(), check);
            }
        };
        let NandBackend {
            geo,
            hil,
            fil,
            scheme,
        } = nand;
        let ftl = match scheme {
            Scheme::Page(ftl) => ftl,
            Scheme::Cached(ftl) => {
                let up = HostPort { q, cmds, link, cpu };
                let cache = cache.buffer_mut();
                return Self::handle_page(now, ev, geo, hil, fil, ftl, up, cache, check);
            }
            other => {
                let up = HostPort { q, cmds, link, cpu };
                let cache = cache.buffer_mut();
                return Self::handle_own_map(now, ev, hil, fil, other, up, cache, check);
            }
        };
        let up = HostPort { q, cmds, link, cpu };
        Self::handle_page(now, ev, geo, hil, fil, ftl, up, cache.buffer_mut(), check)
    }

    /// Handle one event of the page-mapped FTL whose map is `M` (`ftl::Translation`): the
    /// whole map or a mapping cache, each scheme's path compiled for its own map and both
    /// inlined into the event loop (callgrind, `profile_run 200000 small-tlc`: 883,001,602 ->
    /// 880,340,859 instructions; with `ftl.mapping = "cached"` and a 256 KiB cache,
    /// 1,557,438,856 -> 1,513,782,024 against the cached path out of line: its call, per event,
    /// saved and restored registers).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn handle_page<M: MapWork>(
        now: SimTime,
        ev: Event,
        geo: &Geometry,
        hil: &mut Hil,
        fil: &mut Fil,
        ftl: &mut Ftl<M>,
        up: HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let HostPort { q, cmds, link, cpu } = up;
        match ev {
            Event::Submit { cmd } => {
                // The command is dispatched a fetch and some firmware time from now: start the
                // map look-up's cache misses early (the simulated time is unaffected).
                let c = cmds.get(cmd);
                if let Some(first) = map_unit(geo, ftl, c.offset) {
                    ftl.prefetch(first);
                }
                match link {
                    Interface::Nvme(n) => n.on_doorbell(now, cmd, c.sq, q),
                    // The command came over the interface itself: no queue to fetch from.
                    _ => hil.accept(now, cmd, c.len, &ftl.stats, q),
                }
            }
            Event::FetchDone { sq } => {
                let Interface::Nvme(n) = link else {
                    unreachable!("only NVMe fetches")
                };
                let count = n.fetch_done(sq);
                for _ in 0..count {
                    let cmd = n.fetched(sq);
                    let c = cmds.get(cmd);
                    if c.op == Op::Read {
                        if let Some(lpn) = map_unit(geo, ftl, c.offset) {
                            ftl.prefetch_read_target(lpn);
                        }
                    }
                    hil.accept(now, cmd, c.len, &ftl.stats, q);
                }
                n.fetch_more(now, sq, q);
            }
            Event::SlotFree => slot_freed(now, link, q),
            // The rest reach past the HIL: through the ports.
            _ => {
                let mut up = HostPort { q, cmds, link, cpu };
                let mut flash = FlashPort::new(fil, ftl, check);
                match ev {
                    Event::Dispatch { cmd } => {
                        hil.dispatch(now, cmd, &mut up, &mut flash, cache)?
                    }
                    Event::WriteDataIn { cmd } => {
                        hil.write_data_in(now, cmd, &mut up, &mut flash, cache)?
                    }
                    Event::RmwDone { cmd } => {
                        hil.write_units(now, cmd, &mut up, &mut flash, cache)?
                    }
                    Event::MapReady { cmd, write } => {
                        let stage = if write { Stage::Write } else { Stage::Read };
                        hil.map_resume(now, cmd, stage, &mut up, &mut flash, cache)?
                    }
                    Event::DieStep { die } => {
                        Self::die_step_page(now, die, hil, &mut up, &mut flash, cache)?
                    }
                    _ => unreachable!("driver events are handled in Device::step, PCM's are PCM's"),
                }
            }
        }
        Ok(())
    }

    /// Handle one event of a NAND scheme with its own map (block-mapped, raw, fusion, zoned):
    /// no page FTL, so no map entry to warm and no page-FTL GC work to charge to the firmware
    /// core; the flash port carries `NoPageGc`. Never inlined (as the PCM-only handler): the
    /// page FTL's event loop stays as small as without these schemes.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn handle_own_map(
        now: SimTime,
        ev: Event,
        hil: &mut Hil,
        fil: &mut Fil,
        scheme: &mut Scheme,
        mut up: HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let no_page_gc = crate::ftl::FtlStats::default();
        match ev {
            Event::Submit { cmd } => {
                let c = up.cmds.get(cmd);
                match up.link {
                    Interface::Nvme(n) => n.on_doorbell(now, cmd, c.sq, up.q),
                    // The command came over the interface itself: no queue to fetch from.
                    // A fusion device's commands all go through the one firmware core.
                    _ => hil.accept(now, cmd, c.len, &no_page_gc, up.q),
                }
            }
            Event::FetchDone { sq } => {
                let Interface::Nvme(n) = up.link else {
                    unreachable!("only NVMe fetches")
                };
                for _ in 0..n.fetch_done(sq) {
                    let cmd = n.fetched(sq);
                    hil.accept(now, cmd, up.cmds.get(cmd).len, &no_page_gc, up.q);
                }
                n.fetch_more(now, sq, up.q);
            }
            Event::SlotFree => slot_freed(now, up.link, up.q),
            // The rest reach past the HIL: through the ports.
            _ => {
                let up = &mut up;
                let mut owner = NoPageGc;
                let flash = &mut FlashPort::new(fil, &mut owner, check);
                match ev {
                    Event::Dispatch { cmd } => match scheme {
                        Scheme::BlockMapped(h) => {
                            hil.dispatch_block(now, cmd, h, up, flash, cache)?
                        }
                        // The fusion firmware's command distribution (`ctrl::fusion`).
                        Scheme::Fusion { pcm, .. } if up.cmds.get(cmd).space == Space::Pcm => {
                            pcm.dispatch(now, cmd, up, None, flash.check)?
                        }
                        Scheme::Raw(raw) | Scheme::Fusion { raw, .. } => {
                            hil.dispatch_raw(now, cmd, raw, up, flash)
                        }
                        Scheme::Zoned(z) => hil.dispatch_zoned(now, cmd, z, up, flash, cache)?,
                        Scheme::Page(_) | Scheme::Cached(_) => unreachable!("the page FTL's"),
                    },
                    Event::WriteDataIn { cmd } => match scheme {
                        Scheme::BlockMapped(h) => {
                            hil.write_data_in_block(now, cmd, h, up, flash, cache)?
                        }
                        Scheme::Raw(_) | Scheme::Fusion { .. } => {
                            hil.write_data_in_raw(now, cmd, up, flash)
                        }
                        Scheme::Zoned(z) => {
                            hil.write_data_in_zoned(now, cmd, z, up, flash, cache)?
                        }
                        Scheme::Page(_) | Scheme::Cached(_) => unreachable!("the page FTL's"),
                    },
                    // A fusion device's PCM events: the NAND path above never asks which
                    // medium it serves.
                    Event::PcmDispatch { cmd } => {
                        fusion_pcm(scheme).dispatch(now, cmd, up, cache, flash.check)?
                    }
                    Event::PcmDataIn { cmd } => {
                        fusion_pcm(scheme).write_data_in(now, cmd, up, cache, flash.check)?
                    }
                    Event::PcmWriteEnd { write } => {
                        fusion_pcm(scheme).write_end(now, write, up, cache, flash.check)?
                    }
                    Event::PcmFlushEnd { slot } => {
                        fusion_pcm(scheme).flush_end(now, slot, up, cache, flash.check)?
                    }
                    // Only a block-mapped FTL reads before it writes, of these schemes.
                    Event::RmwDone { cmd } => match scheme {
                        Scheme::BlockMapped(h) => {
                            Hil::write_units_block(now, cmd, h, up, flash, cache)?
                        }
                        _ => unreachable!("a read-modify-write of a scheme without a map"),
                    },
                    Event::DieStep { die } => {
                        Self::die_step_own_map(now, die, hil, scheme, up, flash, cache)?
                    }
                    // No translation pages: no map to wait for.
                    _ => unreachable!("driver events are handled in Device::step"),
                }
            }
        }
        Ok(())
    }

    /// Handle one event of a PCM-only device: its PCM controller takes every command (it has
    /// no NAND layer). Never inlined, and cold for the NAND event loop's layout: that loop
    /// stays as small as without PCM.
    #[cold]
    #[inline(never)]
    fn handle_pcm(
        now: SimTime,
        ev: Event,
        p: &mut PcmCtrl,
        mut up: HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        match ev {
            Event::Submit { cmd } => match up.link {
                Interface::Nvme(n) => n.on_doorbell(now, cmd, up.cmds.get(cmd).sq, up.q),
                // The command came over the interface itself: no queue to fetch from.
                _ => p.accept(now, cmd, up.q),
            },
            Event::FetchDone { sq } => {
                let Interface::Nvme(n) = up.link else {
                    unreachable!("only NVMe fetches")
                };
                // No map to warm.
                for _ in 0..n.fetch_done(sq) {
                    p.accept(now, n.fetched(sq), up.q);
                }
                n.fetch_more(now, sq, up.q);
            }
            Event::SlotFree => slot_freed(now, up.link, up.q),
            Event::PcmDispatch { cmd } => p.dispatch(now, cmd, &mut up, cache, check)?,
            Event::PcmDataIn { cmd } => p.write_data_in(now, cmd, &mut up, cache, check)?,
            Event::PcmWriteEnd { write } => p.write_end(now, write, &mut up, cache, check)?,
            Event::PcmFlushEnd { slot } => p.flush_end(now, slot, &mut up, cache, check)?,
            _ => unreachable!("a PCM-only device raises no NAND event, nor a driver's here"),
        }
        Ok(())
    }

    /// A die's phase ended, on the page FTL: the FIL handles GC phases itself and returns the
    /// reads and programs that ended, which the HIL finishes one by one before the die takes
    /// its next operation.
    #[inline]
    fn die_step_page<M: MapWork>(
        now: SimTime,
        die: u32,
        hil: &mut Hil,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        mut cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        match flash
            .fil
            .die_step(now, die, flash.ftl, flash.check.as_mut(), up.q)?
        {
            Step::Sensed(op) => {
                let cache = cache.as_deref_mut();
                Self::sensed(now, die, op, hil, up, flash, cache, &mut Behind::PageFtl)?
            }
            Step::Programmed(op) => {
                for &t in &op {
                    hil.program_done(now, t, up, flash, cache.as_deref_mut())?;
                }
                flash.fil.finish_op(now, die, op, flash.ftl, up.q);
            }
            // The page FTL's erases are its GC's, which the FIL finishes itself.
            Step::Erased(_) => unreachable!("a block erase on the page FTL"),
            Step::Done => {}
        }
        // With a cached map, GC started by an erase moved units: their translation pages need
        // updates.
        hil.pump_map(now, up, flash, cache)
    }

    /// A die's phase ended, under a scheme with its own map: its reads, programs and erases
    /// go back to the HIL's handlers of the scheme.
    fn die_step_own_map(
        now: SimTime,
        die: u32,
        hil: &mut Hil,
        scheme: &mut Scheme,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
        mut cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        match flash
            .fil
            .die_step(now, die, flash.ftl, flash.check.as_mut(), up.q)?
        {
            Step::Sensed(op) => {
                // A cache buffer keeps what a read brought in if the map of the scheme behind
                // it still points there.
                let mut behind = match (&cache, scheme) {
                    (Some(_), Scheme::BlockMapped(h)) => Behind::Blocks(h),
                    (Some(_), Scheme::Zoned(z)) => Behind::Zoned(z),
                    _ => Behind::PageFtl,
                };
                Self::sensed(now, die, op, hil, up, flash, cache, &mut behind)?
            }
            Step::Programmed(op) => {
                match scheme {
                    Scheme::BlockMapped(h) => {
                        let mut flash = flash.with_blocks(h);
                        for &t in &op {
                            let cache = cache.as_deref_mut();
                            hil.program_done_block(now, t, up, &mut flash, cache)?;
                        }
                    }
                    // A zoned drive's flushes and written-through blocks go back to the cache
                    // buffer in front of it.
                    Scheme::Zoned(z) => {
                        let mut flash = flash.with_zoned(z);
                        for &t in &op {
                            let cache = cache.as_deref_mut();
                            hil.program_done_by(now, t, |_| {}, up, &mut flash, cache)?;
                        }
                    }
                    // The raw firmware's pages were taken when the program was accepted.
                    Scheme::Raw(_) | Scheme::Fusion { .. } => {
                        for &t in &op {
                            let cache = cache.as_deref_mut();
                            hil.program_done_by(now, t, |_| {}, up, flash, cache)?;
                        }
                    }
                    Scheme::Page(_) | Scheme::Cached(_) => unreachable!("the page FTL's"),
                }
                flash.fil.finish_op(now, die, op, flash.ftl, up.q);
            }
            Step::Erased(op) => {
                for &t in &op {
                    hil.erase_done(now, t, up, flash);
                }
                flash.fil.finish_op(now, die, op, flash.ftl, up.q);
            }
            Step::Done => {}
        }
        Ok(())
    }

    /// A read's units were sensed: each goes out on the channel and to the HIL, then the die is
    /// free. `behind`: what the cache buffer, if any, works in front of.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn sensed<O: MapOwner>(
        now: SimTime,
        die: u32,
        op: Vec<u32>,
        hil: &mut Hil,
        up: &mut HostPort,
        flash: &mut FlashPort<O>,
        mut cache: Option<&mut BufferManager>,
        behind: &mut Behind<'_>,
    ) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        let mut last = now;
        for &t in &op {
            let (out, ready) = flash.fil.read_out(now, die);
            last = out;
            hil.read_done(ready, t, up, flash, cache.as_deref_mut(), behind)?;
        }
        flash.fil.finish_read(now, die, last, op, flash.ftl, up.q);
        Ok(())
    }

    /// The host finished the completion work of `cmd`: free its slot, and on its request's
    /// last command report the request.
    #[inline]
    /// With nothing in flight, check again once the idle time has passed.
    #[cold]
    fn arm_idle_check(&mut self, now: SimTime) {
        if self.cmds.is_empty() {
            let at = now + self.idle_after;
            self.q.push(
                at,
                Event::IdleCheck {
                    submissions: self.submissions,
                },
            );
        }
    }

    /// The host has sent nothing for the idle time: background GC may start.
    #[cold]
    fn host_leaves(&mut self, now: SimTime) -> Result<()> {
        if let Backend::Nand(n) = &mut self.backend {
            let (check, q) = (self.check.as_mut(), &mut self.q);
            match &mut n.scheme {
                Scheme::Page(ftl) => start_idle_gc(now, ftl, &mut n.fil, check, q)?,
                Scheme::Cached(ftl) => start_idle_gc(now, ftl, &mut n.fil, check, q)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// A host request arrives: an idle period, if any, ends (background GC starts no new
    /// victims) and a pending idle check is void.
    #[inline]
    fn host_returns(&mut self) -> Result<()> {
        self.submissions = self.submissions.wrapping_add(1);
        match self.backend.page_ftl_mut() {
            Some(ftl) => ftl.set_idle(false),
            // No page-FTL GC to hold back.
            None => Ok(()),
        }
    }

    /// (Always inlined: as a call of its own it cost 1.3 % of profile_run's instructions.)
    #[inline(always)]
    fn on_host_complete(&mut self, now: SimTime, cmd: u32) -> Option<Completion> {
        let c = self.cmds.remove(cmd);
        self.link
            .release(now, &c, &mut self.cmds, &mut self.cpu, &mut self.q);
        let (id, r) = self.host.command_finished(now, c.req, c.sq, c.status)?;
        if c.op == Op::Append {
            // The zoned firmware set the command's offset to where its data went.
            self.note_append(id, c.offset);
        }
        Some(Completion {
            id,
            op: r.op,
            offset: r.offset,
            len: r.len,
            queue: r.queue,
            arrival: r.arrival,
            done: now,
            status: r.status,
        })
    }
}
