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
//!
//! The device's code is in three files: this one (the `Device` and its construction, a power
//! cycle, what drivers and the result read of it, the parts a driver turns on: data store,
//! data check, power-loss model, records), `submit.rs` (a request into the device: its checks,
//! the host's split and the interface queues it enters, the host CPU's work, the map's
//! prefetches) and `dispatch.rs` (the event loop: `run` and its variants, the one dispatch
//! `match` per medium and FTL scheme, a die's phase ends, background GC's idle checks, a
//! request's completion).

use crate::config::{BackendKind, PriorityClass, SsdConfig};
pub use crate::ctrl::backend::{
    Backend, BackendFigures, GcCounts, NandBackend, Scheme, UnitsWritten,
};
use crate::ctrl::buffer::{BufferManager, DataPath};
use crate::ctrl::datacheck::DataCheck;
/// A zoned drive's zone actions and states, as drivers name them (Zone Management Send, Report
/// Zones).
pub use crate::ctrl::zones::{ZoneAction, ZoneState};
use crate::error::{got, says, Error, Invalid, Result};
mod dispatch;
mod fdp;
mod hardware;
pub mod precondition;
pub mod state;
pub mod store;
mod submit;

pub use crate::ctrl::power_loss::PowerCutOutcome;
pub use crate::event::Event;
pub use crate::ftl::AnyFtl;
use crate::ftl::{Ftl, Translation};
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
                .map_err(|t| {
                    Error::bad_config(Invalid::unnamed(
                        &cfg.meta.name,
                        got(
                            format_args!(
                                "FTL tables (map, reverse map, block records) of about {}",
                                t.need_text()
                            ),
                            format!(
                                "at most {}: choose a smaller geometry or a larger ftl.map_unit",
                                t.available_text()
                            ),
                        ),
                    ))
                })?;
        }
        let link = Interface::from_config(cfg)?;
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
            host.set_prd(crate::host::PrdSplit::for_buffer(
                b.0,
                cfg.interface.ata.prd_buffer,
                seed,
            ));
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

    /// The run will touch about `units` map units, all among the logical units `span`: the
    /// page FTL backs its tables at once if that is most of them (`Ftl::expect_touches`; speed
    /// only). Called before preconditioning, which says whether the drive will hold data by
    /// then. Nothing on a PCM-only device.
    pub fn expect_touches(&mut self, units: u64, span: std::ops::Range<u64>) {
        let held = self.cfg.precondition.leaves_data();
        if let Some(f) = self.backend.page_ftl_mut() {
            f.expect_touches(units, span, held);
        }
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
                let kind = self.backend.kind().name();
                return Err(Error::bad_config(
                    Invalid::unnamed(
                        what,
                        says(format!(
                "the power-loss model covers the page-mapped FTL (ftl.kind = \"page\"), \
                 this device's back end is {kind} (a fusion device's host-side FTL has its own: \
                 hfsl.power_cut_event)"
                    )),
                    )
                    .valued(kind),
                ));
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
        Some(p.cut(
            self.backend.page_ftl()?,
            &timing,
            self.q.handled,
            self.now(),
        ))
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
}
