//! The NVMe controller: BAR0 registers and doorbells, the PCI configuration space, admin and NVM
//! command execution, PRP transfers, completions and interrupts. I/O commands are timed by the
//! performance model (an embedded [`Device`] driven from outside); their data lives in a
//! functional [`Store`].
//!
//! Execution model. MMIO accesses take no simulated time. A write to an SQ tail doorbell at
//! controller time `clock` fetches the new entries at once (as many as the SQ's CQ has free
//! slots; the rest wait for a CQ head doorbell). Admin commands run one after the other, each
//! taking [`ADMIN_FIRMWARE_TIME`]. The I/O commands of one doorbell are submitted together to
//! the model at `clock`; the model runs until all are done and their completions are posted in
//! completion-time order with those times. `clock` then moves to the last completion: the host
//! is taken to wait for what it submitted.

use super::mem::HostMemory;
use super::pci::{self, ConfigSpace, MSIX_PBA_OFFSET, MSIX_TABLE_OFFSET};
use super::structs::{ctrl_off as co, ns_off as no, put_str, put_u128, put_u16, put_u32, put_u64};
use super::{admin, feat, io, reg, Cqe, Sqe, Status};
use crate::config::LinkSpec;
use crate::config::{CacheMode, SsdConfig};
use crate::device::store::Store;
use crate::device::{Device, Flags, Request};
use crate::error::{got, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

mod admin_commands;
pub mod fdp_logs;
mod io_commands;
mod registers;

/// Firmware time of an admin command (assumed: tens of µs is typical of Identify or queue
/// creation on real drives; nothing in the seeds gives a figure).
pub const ADMIN_FIRMWARE_TIME: SimTime = SimTime::from_us(10);
/// CAP.MQES: largest I/O queue, 0's based (§3.1.1): 65536 entries, the spec's maximum.
pub const MQES: u32 = 0xFFFF;
/// CAP.TO in 500 ms units (§3.1.1): 1 s worst case to RDY (assumed; RDY follows at once here).
pub const CAP_TO: u64 = 2;
/// CAP.MPSMIN / MPSMAX: 4 KiB (2^(12+0)) to 64 KiB (2^(12+4)) pages (assumed).
pub const MPSMIN: u32 = 0;
pub const MPSMAX: u32 = 4;
/// VS: NVMe 1.4.0 (§3.1.2: MJR 31:16, MNR 15:8, TER 7:0).
pub const VERSION: u32 = 0x0001_0400;
/// VS of a zoned drive: NVMe 2.0.0, the revision that brought I/O command sets (CAP.CSS bit 6,
/// CC.CSS = 110b, Identify with a CSI) on which the Zoned Namespace Command Set stands.
pub const VERSION_2_0: u32 = 0x0002_0000;
/// SQ and CQ entry sizes as powers of two (§4.2, §4.6): 64 B and 16 B.
pub const SQES: u32 = 6;
pub const CQES: u32 = 4;
/// Queue pairs the doorbell and MSI-X space of BAR0 can hold (assumed limit: 255 I/O queues,
/// 256 MSI-X vectors in a 4 KiB table).
pub const MAX_IO_QUEUES: u32 = 255;
/// Asynchronous Event Request limit, 0's based (Identify AERL; 4 is the spec's recommended
/// minimum, §5.2).
pub const AERL: u8 = 3;
/// Error Information log entries kept, 0's based (Identify ELPE; assumed).
pub const ELPE: u8 = 15;
/// Composite temperature reported (assumed constant: 40 °C = 313 K); thresholds WCTEMP and
/// CCTEMP (assumed 70 °C and 85 °C, typical of client drives).
pub const TEMPERATURE_K: u16 = 313;
pub const WCTEMP_K: u16 = 343;
pub const CCTEMP_K: u16 = 358;
/// Available spare threshold (assumed 10 %); the model has no bad blocks, so spare stays 100 %.
pub const SPARE_THRESHOLD: u8 = 10;

/// How a controller is built.
#[derive(Clone, Debug)]
pub struct NvmeOptions {
    /// Logical block size: 4096 (default; LBA format 0) or 512 (LBA format 1).
    pub lba_size: u32,
    /// Seed of the performance model.
    pub seed: u64,
}

impl Default for NvmeOptions {
    fn default() -> Self {
        NvmeOptions {
            lba_size: 4096,
            seed: 1,
        }
    }
}

#[derive(Clone, Debug)]
struct Sq {
    base: u64,
    size: u32,
    head: u32,
    tail: u32,
    cqid: u16,
}

#[derive(Clone, Debug)]
struct Cq {
    base: u64,
    size: u32,
    head: u32,
    tail: u32,
    phase: bool,
    ien: bool,
    iv: u16,
}

impl Cq {
    fn used(&self) -> u32 {
        (self.tail + self.size - self.head) % self.size
    }
    fn free(&self) -> u32 {
        self.size - 1 - self.used()
    }
}

/// A completion the controller posted, with its timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Posted {
    pub sqid: u16,
    pub cqid: u16,
    pub cid: u16,
    pub status: Status,
    pub dw0: u32,
    /// When the command was fetched (the doorbell's time).
    pub submitted: SimTime,
    /// When its completion entry was posted.
    pub completed: SimTime,
}

/// An MSI-X message the controller sent (address and data from the table entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsixMessage {
    pub time: SimTime,
    pub vector: u16,
    pub addr: u64,
    pub data: u32,
}

#[derive(Clone, Debug)]
struct Features {
    arbitration: u32,
    power_state: u32,
    temp_threshold: u16,
    wce: bool,
    irq_coalescing: u32,
    write_atomicity: u32,
    async_event_cfg: u32,
    /// Allocated I/O SQs and CQs (Number of Queues, 1-based counts).
    nsqa: u32,
    ncqa: u32,
}

#[derive(Clone, Debug, Default)]
struct Smart {
    /// Commands that ended in an unrecovered read error (SMART "Media and Data Integrity
    /// Errors").
    media_errors: u128,
    /// In 512-byte units.
    read_units: u128,
    written_units: u128,
    host_reads: u128,
    host_writes: u128,
    busy: SimTime,
}

/// One I/O command of a doorbell batch.
struct IoEntry {
    cid: u16,
    /// Completion status when known before timing (errors, or success without model work).
    status: Status,
    /// Model requests still running, and the latest completion among the finished ones.
    pending: u32,
    done: SimTime,
    kind: IoKind,
    units512: u64,
    /// With `[reliability]`, a write's overwritten data (first LBA, bytes), put back if the
    /// model refuses the write: a failed command changes nothing.
    undo: Option<(u64, Vec<u8>)>,
    /// A write's stream: the Streams directive's identifier (DTYPE 1, DSPEC), 0 without one.
    stream: u8,
    /// A zone management command for every zone (Select All).
    all_zones: bool,
    /// What a zone command still has to do once the model has run it successfully.
    zone_after: ZoneAfter,
    /// The command's result, DW0 (low half) and DW1 (high half) of its completion: a Zone
    /// Append's LBA.
    result: u64,
}

/// The functional part of a zone command that waits for the model: where an append's data
/// goes is known only when the drive has run it, and a reset empties its zones' data only if
/// the drive accepted it.
enum ZoneAfter {
    Nothing,
    /// A Zone Append's data, stored at the LBA the drive appended it at.
    Append(Vec<u8>),
    /// A reset of one zone (its first LBA), or of all with `None`.
    Reset(Option<u64>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum IoKind {
    Other,
    Read,
    Write,
}

/// The NVMe controller with its host memory.
pub struct Controller {
    /// Host memory, reached by the controller's DMA and by the host driver.
    pub mem: HostMemory,
    pci: ConfigSpace,
    sys: Device,
    // Registers.
    cap: u64,
    cc: u32,
    csts: u32,
    aqa: u32,
    asq: u64,
    acq: u64,
    intms: u32,
    /// Why CSTS.CFS was set, naming the field, value and what was expected.
    fatal: Option<String>,
    page_size: u64,
    sqs: Vec<Option<Sq>>,
    cqs: Vec<Option<Cq>>,
    max_io_queues: u32,
    features: Features,
    aers: Vec<(u16, u16)>,
    msix_table: Vec<[u32; 4]>,
    msix_pending: Vec<bool>,
    msix_log: Vec<MsixMessage>,
    clock: SimTime,
    smart: Smart,
    errors: Vec<[u8; 64]>,
    error_count: u64,
    /// With `[fdp]`: the host events of the FDP Events log page, oldest first.
    fdp_events: Vec<[u8; 64]>,
    posted: Vec<Posted>,
    // Identity.
    sn: String,
    mn: String,
    fr: String,
    lba_size: u32,
    nsze: u64,
    mdts_field: u8,
    max_xfer: u64,
    vwc_present: bool,
    cmd_overhead: SimTime,
    rated_pe: u64,
    capacity: u64,
    /// Wall seconds the config's preconditioning took (a result's `wall.precondition_seconds`).
    precondition_s: f64,
    /// A zoned drive (`[zns]`): namespace 1 uses the Zoned Namespace Command Set (CSI 02h).
    zoned: bool,
}

fn default_features(max_io_queues: u32, cfg: &SsdConfig, vwc: bool) -> Features {
    // Arbitration Burst: log2 of the config's burst, 111b = no limit (§5.21.1.1).
    let burst = cfg.interface.arbitration_burst.max(1);
    let ab = if burst.is_power_of_two() && burst < 128 {
        burst.trailing_zeros()
    } else {
        7
    };
    Features {
        arbitration: ab,
        power_state: 0,
        temp_threshold: WCTEMP_K,
        wce: vwc,
        irq_coalescing: 0,
        write_atomicity: 0,
        async_event_cfg: 0,
        nsqa: max_io_queues,
        ncqa: max_io_queues,
    }
}

impl Controller {
    /// A controller in reset (CC.EN = 0) for the device `cfg`.
    pub fn new(cfg: &SsdConfig, opts: &NvmeOptions) -> Result<Controller> {
        if opts.lba_size != 512 && opts.lba_size != 4096 {
            return Err(Error::bad_config(Invalid::unnamed(
                "NVMe LBA size",
                got(opts.lba_size, "512 or 4096"),
            )));
        }
        if cfg.interface.kind != crate::config::InterfaceKind::Nvme {
            return Err(Error::bad_config(Invalid::got(cfg.meta.name.to_string(), "interface.kind", format!("{:?}", cfg.interface.kind.name()), "\"nvme\": the register-level controller is an NVMe controller (use a config with an NVMe interface, or --set interface.kind=nvme with its NVMe fields)")));
        }
        let mut sys = Device::new(cfg, opts.seed)?;
        let zoned = sys.backend().zoned().is_some();
        // The NAND's mapping unit (a zoned drive has NAND).
        let unit = cfg.map_unit_bytes();
        if zoned && opts.lba_size as u64 != unit {
            return Err(Error::bad_config(Invalid::unnamed("NVMe LBA size", got(opts.lba_size, format!("{unit} on this zoned drive (its zones count {unit}-byte logical blocks, the NAND's mapping unit)")))));
        }
        if zoned {
            // Zone Append's data lands where the zone's write pointer was: the controller
            // asks the device where, per command.
            sys.record_append_offsets(true);
        }
        // The drive starts as a job's does: preconditioned as the config says (untimed). The
        // fill's data are zeros, which the store's unwritten blocks read as (as `serve` does).
        let precondition_s = sys.precondition_with(cfg, opts.seed, &mut |_, _| true)?;
        sys.enable_store(opts.lba_size as u64)?;
        let max_io_queues = cfg.interface.io_queues.clamp(1, MAX_IO_QUEUES);
        let link = LinkSpec::from_link(&cfg.interface.link)
            .map_err(|m| Error::bad_config(Invalid::says("", "interface.link", m.to_string())))?;
        let vectors = (max_io_queues + 1) as u16;
        let pci = ConfigSpace::new(vectors, link, cfg.interface.max_payload.0);
        // CAP (§3.1.1): MQES 15:0, CQR 16 (contiguous queues required), AMS 18:17 = 0 (round
        // robin only), TO 31:24, DSTRD 35:32 = 0 (4-byte stride), NSSRS 36 = 0, CSS 44:37 bit 37
        // (NVM command set) and, on a zoned drive, bit 43 (one or more I/O command sets: NVMe
        // 2.0), MPSMIN 51:48, MPSMAX 55:52.
        let cap = MQES as u64
            | (1 << 16)
            | (CAP_TO << 24)
            | (1u64 << 37)
            | ((zoned as u64) << 43)
            | ((MPSMIN as u64) << 48)
            | ((MPSMAX as u64) << 52);
        let capacity = cfg.logical_bytes();
        let nsze = capacity / opts.lba_size as u64;
        // MDTS (§5.15.2.2): a power of two in units of the minimum page size, 0 = no limit. A
        // 4 KiB limit cannot be written (2^0 is 0 = "no limit"); the controller still enforces
        // the config's value.
        let pages = (cfg.interface.mdts.0 / 4096).max(1);
        let log2 = 63 - pages.leading_zeros();
        let mdts_field = log2.min(255) as u8;
        let max_xfer = 4096u64 << log2;
        let vwc_present = cfg
            .cache
            .as_ref()
            .is_some_and(|c| c.enabled && c.mode == CacheMode::WriteBack);
        let text = toml::to_string(cfg).unwrap_or_default();
        let digest = Sha256::digest(format!("{text}\n{}", opts.seed).as_bytes());
        let sn: String = format!(
            "SL{}",
            digest
                .iter()
                .take(9)
                .map(|b| format!("{b:02X}"))
                .collect::<String>()
        );
        // Rated program/erase cycles (config::reliability names the sources).
        let rated_pe = cfg
            .reliability
            .as_ref()
            .map_or(cfg.nand.cell.rated_pe_cycles(), |r| {
                r.pe_limit_for(cfg.nand.cell)
            }) as u64;
        let c = Controller {
            mem: HostMemory::new(),
            pci,
            sys,
            cap,
            cc: 0,
            csts: 0,
            aqa: 0,
            asq: 0,
            acq: 0,
            intms: 0,
            fatal: None,
            page_size: 4096,
            sqs: vec![None; max_io_queues as usize + 1],
            cqs: vec![None; max_io_queues as usize + 1],
            max_io_queues,
            features: default_features(max_io_queues, cfg, vwc_present),
            aers: Vec::new(),
            msix_table: vec![[0, 0, 0, 1]; vectors as usize],
            msix_pending: vec![false; vectors as usize],
            msix_log: Vec::new(),
            clock: SimTime::ZERO,
            smart: Smart::default(),
            errors: Vec::new(),
            error_count: 0,
            fdp_events: Vec::new(),
            posted: Vec::new(),
            sn,
            mn: format!("ssdlab {}", cfg.meta.name),
            fr: env!("CARGO_PKG_VERSION").to_string(),
            lba_size: opts.lba_size,
            nsze,
            mdts_field,
            max_xfer,
            vwc_present,
            cmd_overhead: cfg.controller.cmd_overhead.0,
            rated_pe,
            capacity,
            precondition_s,
            zoned,
        };
        Ok(c)
    }

    // ---------------------------------------------------------------------------------------
    // Observation

    /// The controller's simulated time.
    pub fn clock(&self) -> SimTime {
        self.clock
    }

    /// Let simulated time pass (the host doing something else); never moves backwards.
    pub fn advance_to(&mut self, t: SimTime) {
        self.clock = self.clock.max(t);
    }

    /// The pin interrupt (INTx) line: asserted while MSI-X is off, INTx is not disabled in the
    /// PCI command register, vector 0 is not masked (INTMS bit 0), and some CQ with interrupts
    /// enabled holds entries the host has not acknowledged through its head doorbell.
    pub fn intx(&self) -> bool {
        !self.pci.msix_enabled()
            && self.pci.command() & pci::CMD_INTX_DISABLE == 0
            && self.intms & 1 == 0
            && self
                .cqs
                .iter()
                .flatten()
                .any(|cq| cq.ien && cq.head != cq.tail)
    }

    /// MSI-X messages sent so far.
    pub fn msix_messages(&self) -> &[MsixMessage] {
        &self.msix_log
    }

    /// Completions posted since the last call, in posting order.
    pub fn take_posted(&mut self) -> Vec<Posted> {
        std::mem::take(&mut self.posted)
    }

    /// Why CSTS.CFS is set, if it is.
    pub fn fatal_reason(&self) -> Option<&str> {
        self.fatal.as_deref()
    }

    pub fn serial(&self) -> &str {
        &self.sn
    }
    pub fn model(&self) -> &str {
        &self.mn
    }
    pub fn lba_size(&self) -> u32 {
        self.lba_size
    }
    /// Namespace size in logical blocks.
    pub fn nsze(&self) -> u64 {
        self.nsze
    }
    /// Largest transfer of one command, in bytes.
    pub fn max_transfer(&self) -> u64 {
        self.max_xfer
    }
    /// Logical blocks holding data.
    pub fn blocks_in_use(&self) -> u64 {
        self.store().allocated()
    }
    /// Wall seconds the config's `[precondition]` took at construction.
    pub fn precondition_seconds(&self) -> f64 {
        self.precondition_s
    }
    /// The embedded performance model.
    pub fn device(&self) -> &Device {
        &self.sys
    }

    /// Whether namespace 1 is zoned (the Zoned Namespace Command Set).
    pub fn is_zoned(&self) -> bool {
        self.zoned
    }

    /// The version register's value: 2.0 for a zoned drive, else 1.4.
    pub(super) fn version(&self) -> u32 {
        if self.zoned {
            VERSION_2_0
        } else {
            VERSION
        }
    }

    /// Whether the host enabled the controller with every I/O command set (CC.CSS = 110b),
    /// which the zone commands need; with CC.CSS = 000b (NVM only) they are invalid opcodes.
    pub(super) fn zone_commands_enabled(&self) -> bool {
        self.zoned && (self.cc >> 4) & 7 == 0b110
    }

    /// The namespace's data: the device's store, turned on at construction.
    fn store(&self) -> &Store {
        self.sys
            .store()
            .expect("the store is enabled in Controller::new")
    }

    fn store_mut(&mut self) -> &mut Store {
        self.sys
            .store_mut()
            .expect("the store is enabled in Controller::new")
    }

    fn ready(&self) -> bool {
        self.csts & 1 == 1 && self.csts & 2 == 0 && (self.csts >> 2) & 3 == 0
    }
}
