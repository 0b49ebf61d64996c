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
use super::store::Store;
use super::structs::{ctrl_off as co, ns_off as no, put_str, put_u128, put_u16, put_u32, put_u64};
use super::{admin, feat, io, reg, Cqe, Sqe, Status};
use crate::config::{CacheMode, CellType, SsdConfig};
use crate::device::{Device, Flags, Request};
use crate::error::{Error, Result};
use crate::iface::pcie::LinkSpec;
use crate::sim::SimTime;
use crate::workload::Op;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

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
    store: Store,
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
            return Err(Error::Config(format!(
                "NVMe LBA size: got {}, expected 512 or 4096",
                opts.lba_size
            )));
        }
        if cfg.interface.kind != "nvme" {
            return Err(Error::Config(format!(
                "{}, field `interface.kind`: got {:?}, expected \"nvme\": the register-level \
                 controller is an NVMe controller (use a config with an NVMe interface, or \
                 --set interface.kind=nvme with its NVMe fields)",
                cfg.meta.name, cfg.interface.kind
            )));
        }
        let sys = Device::new(cfg, opts.seed)?;
        let max_io_queues = cfg.interface.io_queues.clamp(1, MAX_IO_QUEUES);
        let link = LinkSpec::parse(&cfg.interface.link)
            .map_err(|m| Error::Config(format!("field `interface.link`: {m}")))?;
        let vectors = (max_io_queues + 1) as u16;
        let pci = ConfigSpace::new(vectors, link, cfg.interface.max_payload.0);
        // CAP (§3.1.1): MQES 15:0, CQR 16 (contiguous queues required), AMS 18:17 = 0 (round
        // robin only), TO 31:24, DSTRD 35:32 = 0 (4-byte stride), NSSRS 36 = 0, CSS 44:37 bit 37
        // (NVM command set), MPSMIN 51:48, MPSMAX 55:52.
        let cap = MQES as u64
            | (1 << 16)
            | (CAP_TO << 24)
            | (1u64 << 37)
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
        // Rated program/erase cycles per cell type (assumed typical datasheet endurance).
        let rated_pe = match cfg.nand.cell {
            CellType::Slc => 100_000,
            CellType::Mlc => 3_000,
            CellType::Tlc => 1_000,
            CellType::Qlc => 300,
        };
        let c = Controller {
            mem: HostMemory::new(),
            pci,
            sys,
            store: Store::new(opts.lba_size as usize),
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
        self.store.allocated()
    }
    /// The embedded performance model.
    pub fn device(&self) -> &Device {
        &self.sys
    }

    fn ready(&self) -> bool {
        self.csts & 1 == 1 && self.csts & 2 == 0 && (self.csts >> 2) & 3 == 0
    }

    // ---------------------------------------------------------------------------------------
    // PCI configuration space

    pub fn config_read(&mut self, offset: u32, size: u8) -> u32 {
        self.pci.intx_pending = self.intx();
        self.pci.read(offset, size)
    }

    pub fn config_write(&mut self, offset: u32, size: u8, value: u32) {
        self.pci.write(offset, size, value);
        self.msix_deliver_pending();
    }

    // ---------------------------------------------------------------------------------------
    // MMIO (BAR0-relative offsets)

    /// Read `size` (1, 2, 4 or 8) bytes at `offset`. Reserved offsets, doorbells and other
    /// sizes read as zero.
    pub fn mmio_read(&self, offset: u64, size: u8) -> u64 {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return 0;
        }
        let mut v = 0u64;
        for i in 0..size as u64 {
            let Some(a) = offset.checked_add(i) else {
                break;
            };
            let dw = self.reg_read32(a & !3);
            let byte = (dw >> (8 * (a & 3))) & 0xFF;
            v |= (byte as u64) << (8 * i);
        }
        v
    }

    pub fn read32(&self, offset: u64) -> u32 {
        self.mmio_read(offset, 4) as u32
    }
    pub fn read64(&self, offset: u64) -> u64 {
        self.mmio_read(offset, 8)
    }

    /// Write `size` bytes at `offset`: 4 bytes at a 4-byte aligned offset, or 8 bytes at a
    /// 4-byte aligned offset (two 32-bit writes, low half first). Other accesses are ignored,
    /// as are writes to read-only and reserved registers.
    pub fn mmio_write(&mut self, offset: u64, size: u8, value: u64) {
        if offset & 3 != 0 {
            return;
        }
        match size {
            4 => self.reg_write32(offset, value as u32),
            8 => {
                self.reg_write32(offset, value as u32);
                if let Some(hi) = offset.checked_add(4) {
                    self.reg_write32(hi, (value >> 32) as u32);
                }
            }
            _ => {}
        }
    }

    pub fn write32(&mut self, offset: u64, value: u32) {
        self.mmio_write(offset, 4, value as u64);
    }
    pub fn write64(&mut self, offset: u64, value: u64) {
        self.mmio_write(offset, 8, value);
    }

    fn doorbell_stride(&self) -> u64 {
        4 << ((self.cap >> 32) & 0xF)
    }

    fn reg_read32(&self, off: u64) -> u32 {
        let tbl = MSIX_TABLE_OFFSET as u64;
        let pba = MSIX_PBA_OFFSET as u64;
        match off {
            0x00 => self.cap as u32,
            0x04 => (self.cap >> 32) as u32,
            0x08 => VERSION,
            0x0C | 0x10 => self.intms,
            0x14 => self.cc,
            0x1C => self.csts,
            0x24 => self.aqa,
            0x28 => self.asq as u32,
            0x2C => (self.asq >> 32) as u32,
            0x30 => self.acq as u32,
            0x34 => (self.acq >> 32) as u32,
            o if o >= tbl && o < tbl + 16 * self.msix_table.len() as u64 => {
                let i = ((o - tbl) / 16) as usize;
                self.msix_table[i][((o - tbl) % 16 / 4) as usize]
            }
            o if o >= pba && o < pba + 4 * self.msix_pending.len().div_ceil(32) as u64 => {
                let w = ((o - pba) / 4) as usize;
                let mut v = 0u32;
                for b in 0..32 {
                    if self.msix_pending.get(w * 32 + b).copied().unwrap_or(false) {
                        v |= 1 << b;
                    }
                }
                v
            }
            _ => 0,
        }
    }

    fn reg_write32(&mut self, off: u64, v: u32) {
        let tbl = MSIX_TABLE_OFFSET as u64;
        match off {
            reg::INTMS => self.intms |= v,
            reg::INTMC => self.intms &= !v,
            reg::CC => self.write_cc(v),
            reg::AQA => self.aqa = v & 0x0FFF_0FFF,
            0x28 => self.asq = (self.asq & !0xFFFF_FFFF) | v as u64,
            0x2C => self.asq = (self.asq & 0xFFFF_FFFF) | ((v as u64) << 32),
            0x30 => self.acq = (self.acq & !0xFFFF_FFFF) | v as u64,
            0x34 => self.acq = (self.acq & 0xFFFF_FFFF) | ((v as u64) << 32),
            o if (reg::DOORBELL_BASE..MSIX_TABLE_OFFSET as u64).contains(&o) => {
                let stride = self.doorbell_stride();
                let rel = o - reg::DOORBELL_BASE;
                if !rel.is_multiple_of(stride) {
                    return;
                }
                let idx = rel / stride;
                let qid = idx / 2;
                if qid >= self.sqs.len() as u64 {
                    return;
                }
                if idx.is_multiple_of(2) {
                    self.sq_doorbell(qid as u16, v);
                } else {
                    self.cq_doorbell(qid as u16, v);
                }
            }
            o if o >= tbl && o < tbl + 16 * self.msix_table.len() as u64 => {
                let i = ((o - tbl) / 16) as usize;
                let w = ((o - tbl) % 16 / 4) as usize;
                // Vector control: only the mask bit is defined (PCIe 4.0 §7.7.2).
                self.msix_table[i][w] = if w == 3 { v & 1 } else { v };
                self.msix_deliver_pending();
            }
            // CAP, VS, CSTS, NSSR (NSSRS = 0), the PBA and reserved offsets: read-only/ignored.
            _ => {}
        }
    }

    fn write_cc(&mut self, v: u32) {
        // Writable fields: EN 0, CSS 6:4, MPS 10:7, AMS 13:11, SHN 15:14, IOSQES 19:16,
        // IOCQES 23:20 (§3.1.5).
        let old = self.cc;
        self.cc = v & 0x00FF_FFF1;
        let (was, now) = (old & 1 == 1, v & 1 == 1);
        if !was && now {
            self.enable();
        } else if was && !now {
            self.reset();
        }
        if (v >> 14) & 3 != 0 && (old >> 14) & 3 == 0 {
            // Shutdown (normal or abrupt): nothing is in flight between doorbells, so it is
            // complete at once; SHST = 10b (§3.1.6). Commands are no longer processed.
            self.csts = (self.csts & !0xC) | (0b10 << 2);
        }
    }

    fn set_fatal(&mut self, why: String) {
        self.csts = (self.csts & !1) | 2;
        self.fatal = Some(why);
    }

    fn enable(&mut self) {
        self.csts &= !0xC; // a new enable clears a previous shutdown status
        let css = (self.cc >> 4) & 7;
        let mps = (self.cc >> 7) & 0xF;
        let ams = (self.cc >> 11) & 7;
        let iosqes = (self.cc >> 16) & 0xF;
        let iocqes = (self.cc >> 20) & 0xF;
        let asqs = (self.aqa & 0xFFF) + 1;
        let acqs = ((self.aqa >> 16) & 0xFFF) + 1;
        let page = 4096u64 << mps.min(MPSMAX);
        let problem = if css != 0 {
            Some(format!("CC.CSS = {css}, expected 0 (NVM command set)"))
        } else if !(MPSMIN..=MPSMAX).contains(&mps) {
            Some(format!("CC.MPS = {mps}, expected {MPSMIN}..={MPSMAX}"))
        } else if ams != 0 {
            Some(format!("CC.AMS = {ams}, expected 0 (round robin)"))
        } else if iosqes != 0 && iosqes != SQES {
            Some(format!(
                "CC.IOSQES = {iosqes}, expected {SQES} (64-byte entries)"
            ))
        } else if iocqes != 0 && iocqes != CQES {
            Some(format!(
                "CC.IOCQES = {iocqes}, expected {CQES} (16-byte entries)"
            ))
        } else if asqs < 2 {
            Some("AQA.ASQS = 0, expected at least 1 (two entries)".to_string())
        } else if acqs < 2 {
            Some("AQA.ACQS = 0, expected at least 1 (two entries)".to_string())
        } else if !self.asq.is_multiple_of(page) {
            Some(format!(
                "ASQ = {:#x}, expected a multiple of the {page}-byte page",
                self.asq
            ))
        } else if !self.acq.is_multiple_of(page) {
            Some(format!(
                "ACQ = {:#x}, expected a multiple of the {page}-byte page",
                self.acq
            ))
        } else if self.asq.checked_add(64 * asqs as u64).is_none()
            || self.acq.checked_add(16 * acqs as u64).is_none()
        {
            Some("ASQ/ACQ: the admin queues run past the end of the address space".to_string())
        } else {
            None
        };
        if let Some(why) = problem {
            self.set_fatal(why);
            return;
        }
        self.page_size = page;
        self.sqs[0] = Some(Sq {
            base: self.asq,
            size: asqs,
            head: 0,
            tail: 0,
            cqid: 0,
        });
        self.cqs[0] = Some(Cq {
            base: self.acq,
            size: acqs,
            head: 0,
            tail: 0,
            phase: true,
            ien: true,
            iv: 0,
        });
        self.csts |= 1;
    }

    /// Controller reset (CC.EN 1 → 0, §7.3.2): queues deleted, outstanding AERs dropped,
    /// features back to defaults, CSTS cleared. The namespace's data stays.
    fn reset(&mut self) {
        for q in self.sqs.iter_mut() {
            *q = None;
        }
        for q in self.cqs.iter_mut() {
            *q = None;
        }
        self.aers.clear();
        let (nsqa, ncqa) = (self.max_io_queues, self.max_io_queues);
        self.features.nsqa = nsqa;
        self.features.ncqa = ncqa;
        self.features.wce = self.vwc_present;
        self.intms = 0;
        self.csts = 0;
        self.fatal = None;
    }

    // ---------------------------------------------------------------------------------------
    // Doorbells and queues

    fn sq_doorbell(&mut self, qid: u16, tail: u32) {
        if !self.ready() {
            return;
        }
        let Some(sq) = self.sqs[qid as usize].as_mut() else {
            return; // invalid doorbell register: ignored (no asynchronous event is generated)
        };
        if tail >= sq.size {
            return; // invalid doorbell write value: ignored
        }
        sq.tail = tail;
        self.process_sq(qid);
    }

    fn cq_doorbell(&mut self, qid: u16, head: u32) {
        if !self.ready() {
            return;
        }
        let Some(cq) = self.cqs[qid as usize].as_mut() else {
            return;
        };
        if head >= cq.size {
            return;
        }
        // The new head may not pass the tail.
        let advance = (head + cq.size - cq.head) % cq.size;
        if advance > cq.used() {
            return;
        }
        cq.head = head;
        // Room in the CQ: fetch what waits in its SQs.
        let waiting: Vec<u16> = self
            .sqs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.as_ref()
                    .filter(|s| s.cqid == qid && s.head != s.tail)
                    .map(|_| i as u16)
            })
            .collect();
        for sqid in waiting {
            self.process_sq(sqid);
        }
    }

    /// Fetch and execute the entries of SQ `qid`, as many as its CQ can take.
    fn process_sq(&mut self, qid: u16) {
        let Some(sq) = self.sqs[qid as usize].as_ref() else {
            return;
        };
        let Some(cq) = self.cqs[sq.cqid as usize].as_ref() else {
            return;
        };
        let avail = (sq.tail + sq.size - sq.head) % sq.size;
        let n = avail.min(cq.free());
        let mut cmds = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let Some(sq) = self.sqs[qid as usize].as_mut() else {
                return;
            };
            let addr = sq.base + 64 * sq.head as u64;
            sq.head = (sq.head + 1) % sq.size;
            let mut b = [0u8; 64];
            self.mem.read(addr, &mut b);
            cmds.push(Sqe::from_bytes(&b));
        }
        if qid == 0 {
            for c in cmds {
                self.run_admin(c);
            }
        } else {
            self.run_io_batch(qid, cmds);
        }
    }

    fn post(
        &mut self,
        sqid: u16,
        cid: u16,
        dw0: u32,
        status: Status,
        submitted: SimTime,
        t: SimTime,
    ) {
        let Some(sq) = self.sqs[sqid as usize].as_ref() else {
            return;
        };
        let (cqid, sq_head) = (sq.cqid, sq.head as u16);
        let Some(cq) = self.cqs[cqid as usize].as_mut() else {
            return;
        };
        if cq.free() == 0 {
            return; // cannot happen: fetching is bounded by the CQ's free slots
        }
        let e = Cqe {
            dw0,
            dw1: 0,
            sq_head,
            sq_id: sqid,
            cid,
            phase: cq.phase,
            status,
        };
        let addr = cq.base + 16 * cq.tail as u64;
        cq.tail = (cq.tail + 1) % cq.size;
        if cq.tail == 0 {
            cq.phase = !cq.phase;
        }
        let (ien, iv) = (cq.ien, cq.iv);
        self.mem.write(addr, &e.to_bytes());
        self.posted.push(Posted {
            sqid,
            cqid,
            cid,
            status,
            dw0,
            submitted,
            completed: t,
        });
        if !status.is_success() {
            self.log_error(sqid, cid, status);
        }
        if ien && self.pci.msix_enabled() {
            self.msix_send(iv, t);
        }
    }

    fn log_error(&mut self, sqid: u16, cid: u16, status: Status) {
        // Error Information log entry (§5.14.1.1, Figure 195).
        self.error_count += 1;
        let mut e = [0u8; 64];
        put_u64(&mut e, 0, self.error_count);
        put_u16(&mut e, 8, sqid);
        put_u16(&mut e, 10, cid);
        put_u16(&mut e, 12, status.field());
        put_u16(&mut e, 14, 0xFFFF); // parameter error location: not given
        self.errors.insert(0, e);
        self.errors.truncate(ELPE as usize + 1);
    }

    fn msix_send(&mut self, iv: u16, t: SimTime) {
        let i = iv as usize;
        if i >= self.msix_table.len() {
            return;
        }
        if self.pci.msix_function_masked() || self.msix_table[i][3] & 1 == 1 {
            self.msix_pending[i] = true;
            return;
        }
        let e = self.msix_table[i];
        self.msix_log.push(MsixMessage {
            time: t,
            vector: iv,
            addr: e[0] as u64 | ((e[1] as u64) << 32),
            data: e[2],
        });
    }

    fn msix_deliver_pending(&mut self) {
        if !self.pci.msix_enabled() || self.pci.msix_function_masked() {
            return;
        }
        for i in 0..self.msix_table.len() {
            if self.msix_pending[i] && self.msix_table[i][3] & 1 == 0 {
                self.msix_pending[i] = false;
                self.msix_send(i as u16, self.clock);
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // PRP transfers (§4.3)

    /// The host memory segments of a `len`-byte transfer described by PRP1/PRP2.
    fn prp_segments(
        &self,
        prp1: u64,
        prp2: u64,
        len: u64,
    ) -> std::result::Result<Vec<(u64, u64)>, Status> {
        let ps = self.page_size;
        if prp1 & 3 != 0 {
            return Err(Status::INVALID_PRP_OFFSET);
        }
        let check = |a: u64, n: u64| {
            a.checked_add(n)
                .map(|_| ())
                .ok_or(Status::DATA_TRANSFER_ERROR)
        };
        let first = len.min(ps - prp1 % ps);
        check(prp1, first)?;
        let mut segs = vec![(prp1, first)];
        let mut left = len - first;
        if left == 0 {
            return Ok(segs);
        }
        if left <= ps {
            if !prp2.is_multiple_of(ps) {
                return Err(Status::INVALID_PRP_OFFSET);
            }
            check(prp2, left)?;
            segs.push((prp2, left));
            return Ok(segs);
        }
        // PRP2 points to a PRP list; the last entry of a list page chains to the next page.
        if prp2 & 7 != 0 {
            return Err(Status::INVALID_PRP_OFFSET);
        }
        let mut ptr = prp2;
        // A list that chains to itself (or anywhere without progress) must not loop forever:
        // a valid list needs at most one hop per list page.
        let mut hops_left = left / 8 + 2;
        while left > 0 {
            check(ptr, 8)?;
            let slots = (ps - ptr % ps) / 8;
            let e = self.mem.read_u64(ptr);
            if slots == 1 && left > ps {
                if e & 7 != 0 {
                    return Err(Status::INVALID_PRP_OFFSET);
                }
                if hops_left == 0 {
                    return Err(Status::DATA_TRANSFER_ERROR);
                }
                hops_left -= 1;
                ptr = e;
                continue;
            }
            if !e.is_multiple_of(ps) {
                return Err(Status::INVALID_PRP_OFFSET);
            }
            let n = left.min(ps);
            check(e, n)?;
            segs.push((e, n));
            left -= n;
            ptr += 8;
        }
        Ok(segs)
    }

    fn dma_to_host(&mut self, c: &Sqe, data: &[u8]) -> std::result::Result<(), Status> {
        let segs = self.prp_segments(c.prp1, c.prp2, data.len() as u64)?;
        let mut at = 0usize;
        for (a, n) in segs {
            self.mem.write(a, &data[at..at + n as usize]);
            at += n as usize;
        }
        Ok(())
    }

    fn dma_from_host(&self, c: &Sqe, len: u64) -> std::result::Result<Vec<u8>, Status> {
        let segs = self.prp_segments(c.prp1, c.prp2, len)?;
        let mut out = vec![0u8; len as usize];
        let mut at = 0usize;
        for (a, n) in segs {
            self.mem.read(a, &mut out[at..at + n as usize]);
            at += n as usize;
        }
        Ok(out)
    }

    // ---------------------------------------------------------------------------------------
    // Admin commands (§5)

    fn run_admin(&mut self, c: Sqe) {
        let submitted = self.clock;
        let t = self.clock + ADMIN_FIRMWARE_TIME;
        self.clock = t;
        let r = if c.fuse != 0 || c.psdt != 0 {
            Err(Status::INVALID_FIELD)
        } else {
            match c.opcode {
                admin::DELETE_IO_SQ => self.delete_sq(&c),
                admin::CREATE_IO_SQ => self.create_sq(&c),
                admin::GET_LOG_PAGE => self.get_log_page(&c),
                admin::DELETE_IO_CQ => self.delete_cq(&c),
                admin::CREATE_IO_CQ => self.create_cq(&c),
                admin::IDENTIFY => self.identify(&c),
                // Commands complete before an Abort can reach them: "not aborted" (DW0 bit 0).
                admin::ABORT => Ok(1),
                admin::SET_FEATURES => self.set_features(&c),
                admin::GET_FEATURES => self.get_features(&c),
                admin::ASYNC_EVENT => {
                    if self.aers.len() > AERL as usize {
                        Err(Status::AER_LIMIT)
                    } else {
                        // Outstanding until an event; none is generated (see docs).
                        self.aers.push((0, c.cid));
                        return;
                    }
                }
                _ => Err(Status::INVALID_OPCODE),
            }
        };
        let (dw0, st) = match r {
            Ok(dw0) => (dw0, Status::SUCCESS),
            Err(s) => (0, s),
        };
        self.post(0, c.cid, dw0, st, submitted, t);
    }

    fn queue_size(&self, cdw10: u32) -> std::result::Result<u32, Status> {
        let n = (cdw10 >> 16) + 1;
        if !(2..=MQES + 1).contains(&n) {
            return Err(Status::INVALID_QSIZE);
        }
        Ok(n)
    }

    fn create_cq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let qid = c.cdw10 & 0xFFFF;
        if qid == 0 || qid > self.features.ncqa || self.cqs[qid as usize].is_some() {
            return Err(Status::INVALID_QID);
        }
        let size = self.queue_size(c.cdw10)?;
        if c.cdw11 & 1 == 0 {
            return Err(Status::INVALID_FIELD); // CAP.CQR: queues must be physically contiguous
        }
        let iv = (c.cdw11 >> 16) as u16;
        if iv as usize >= self.msix_table.len() {
            return Err(Status::INVALID_VECTOR);
        }
        if (self.cc >> 20) & 0xF != CQES {
            return Err(Status::INVALID_FIELD); // CC.IOCQES not set to 16-byte entries
        }
        if !c.prp1.is_multiple_of(self.page_size) {
            return Err(Status::INVALID_PRP_OFFSET);
        }
        if c.prp1.checked_add(16 * size as u64).is_none() {
            return Err(Status::DATA_TRANSFER_ERROR);
        }
        self.cqs[qid as usize] = Some(Cq {
            base: c.prp1,
            size,
            head: 0,
            tail: 0,
            phase: true,
            ien: c.cdw11 & 2 != 0,
            iv,
        });
        Ok(0)
    }

    fn create_sq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let qid = c.cdw10 & 0xFFFF;
        if qid == 0 || qid > self.features.nsqa || self.sqs[qid as usize].is_some() {
            return Err(Status::INVALID_QID);
        }
        let cqid = c.cdw11 >> 16;
        if cqid == 0 || cqid as usize >= self.cqs.len() || self.cqs[cqid as usize].is_none() {
            return Err(Status::CQ_INVALID);
        }
        let size = self.queue_size(c.cdw10)?;
        if c.cdw11 & 1 == 0 {
            return Err(Status::INVALID_FIELD);
        }
        if (self.cc >> 16) & 0xF != SQES {
            return Err(Status::INVALID_FIELD); // CC.IOSQES not set to 64-byte entries
        }
        if !c.prp1.is_multiple_of(self.page_size) {
            return Err(Status::INVALID_PRP_OFFSET);
        }
        if c.prp1.checked_add(64 * size as u64).is_none() {
            return Err(Status::DATA_TRANSFER_ERROR);
        }
        self.sqs[qid as usize] = Some(Sq {
            base: c.prp1,
            size,
            head: 0,
            tail: 0,
            cqid: cqid as u16,
        });
        Ok(0)
    }

    fn delete_sq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let qid = (c.cdw10 & 0xFFFF) as usize;
        if qid == 0 || qid >= self.sqs.len() || self.sqs[qid].is_none() {
            return Err(Status::INVALID_QID);
        }
        self.sqs[qid] = None;
        Ok(0)
    }

    fn delete_cq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let qid = (c.cdw10 & 0xFFFF) as usize;
        if qid == 0 || qid >= self.cqs.len() || self.cqs[qid].is_none() {
            return Err(Status::INVALID_QID);
        }
        if self.sqs.iter().flatten().any(|s| s.cqid as usize == qid) {
            return Err(Status::INVALID_QUEUE_DELETION);
        }
        self.cqs[qid] = None;
        Ok(0)
    }

    fn identify(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let cns = c.cdw10 & 0xFF;
        let data = match cns {
            0x00 => {
                if c.nsid != 1 {
                    return Err(Status::INVALID_NAMESPACE);
                }
                self.id_ns()
            }
            0x01 => self.id_ctrl(),
            0x02 => {
                if c.nsid >= 0xFFFF_FFFE {
                    return Err(Status::INVALID_NAMESPACE);
                }
                let mut b = vec![0u8; 4096];
                if c.nsid < 1 {
                    put_u32(&mut b, 0, 1);
                }
                b
            }
            0x03 => {
                if c.nsid != 1 {
                    return Err(Status::INVALID_NAMESPACE);
                }
                // Namespace Identification Descriptor list (§5.15.2.3): one NGUID (type 2).
                let mut b = vec![0u8; 4096];
                b[0] = 2;
                b[1] = 16;
                b[4..20].copy_from_slice(&self.nguid());
                b
            }
            _ => return Err(Status::INVALID_FIELD),
        };
        self.dma_to_host(c, &data)?;
        Ok(0)
    }

    fn nguid(&self) -> [u8; 16] {
        let d = Sha256::digest(format!("nguid {}", self.sn).as_bytes());
        let mut g = [0u8; 16];
        g.copy_from_slice(&d[..16]);
        g
    }

    /// Identify Controller data structure (§5.15.2.2, Figure 247).
    pub fn id_ctrl(&self) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        put_u16(&mut b, co::VID, pci::VENDOR_ID);
        put_u16(&mut b, co::SSVID, pci::SUBSYS_VENDOR_ID);
        put_str(&mut b, co::SN, 20, &self.sn);
        put_str(&mut b, co::MN, 40, &self.mn);
        put_str(&mut b, co::FR, 8, &self.fr);
        b[co::RAB] = 0; // recommended arbitration burst 2^0 (assumed)
                        // IEEE OUI: none assigned (assumed 0).
        b[co::CMIC] = 0; // one port, one controller
        b[co::MDTS] = self.mdts_field;
        put_u16(&mut b, co::CNTLID, 1); // assumed
        put_u32(&mut b, co::VER, VERSION);
        put_u32(&mut b, co::OAES, 0);
        b[co::CNTRLTYPE] = 1; // I/O controller
        put_u16(&mut b, co::OACS, 0); // no optional admin commands
        b[co::ACL] = 3; // abort limit 4 (0's based, §5.15.2.2 recommends at least 4)
        b[co::AERL] = AERL;
        b[co::FRMW] = 0b0000_0011; // one slot, slot 1 read-only
        b[co::LPA] = 0b0000_0100; // extended data for Get Log Page (NUMDU, LPO)
        b[co::ELPE] = ELPE;
        b[co::NPSS] = 0; // one power state
        put_u16(&mut b, co::WCTEMP, WCTEMP_K);
        put_u16(&mut b, co::CCTEMP, CCTEMP_K);
        put_u128(&mut b, co::TNVMCAP, self.capacity as u128);
        b[co::SQES] = ((SQES << 4) | SQES) as u8;
        b[co::CQES] = ((CQES << 4) | CQES) as u8;
        put_u32(&mut b, co::NN, 1);
        // ONCS: Dataset Management (bit 2). Flush is mandatory and has no ONCS bit.
        put_u16(&mut b, co::ONCS, 1 << 2);
        // VWC: present (bit 0) with a write-back cache buffer; flush to NSID FFFFFFFFh
        // supported (bits 2:1 = 11b).
        b[co::VWC] = if self.vwc_present { 0b111 } else { 0 };
        put_u32(&mut b, co::SGLS, 0); // SGLs not supported
        put_str(
            &mut b,
            co::SUBNQN,
            256,
            &format!("nqn.2024-01.dev.ssdlab:{}", self.sn),
        );
        // Power state 0: 8 W (assumed), in centiwatts; latencies 0.
        put_u16(&mut b, co::PSD0, 800);
        b
    }

    /// Identify Namespace data structure (NVM command set, Figure 245).
    pub fn id_ns(&self) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        put_u64(&mut b, no::NSZE, self.nsze);
        put_u64(&mut b, no::NCAP, self.nsze);
        put_u64(&mut b, no::NUSE, self.store.allocated());
        b[no::NSFEAT] = 0b0000_0001; // thin provisioning: NUSE counts the blocks holding data
        b[no::NLBAF] = 1; // two formats (0's based)
        b[no::FLBAS] = if self.lba_size == 4096 { 0 } else { 1 };
        b[no::DLFEAT] = 0b001; // deallocated blocks read as zeros
        put_u128(&mut b, no::NVMCAP, self.capacity as u128);
        b[no::NGUID..no::NGUID + 16].copy_from_slice(&self.nguid());
        b[no::EUI64..no::EUI64 + 8].copy_from_slice(&self.nguid()[8..]);
        // LBA formats (Figure 246): MS 15:0, LBADS 23:16, RP 25:24. 4 KiB best (00b),
        // 512 B good (10b): a 512-byte write costs a read-modify-write of a 4 KiB map unit.
        put_u32(&mut b, no::LBAF0, 12 << 16);
        put_u32(&mut b, no::LBAF0 + 4, (9 << 16) | (0b10 << 24));
        b
    }

    /// SMART / Health Information log (§5.14.1.2, Figure 196).
    pub fn smart_log(&self) -> Vec<u8> {
        use super::structs::smart_off as so;
        let mut b = vec![0u8; 512];
        let mut warn = 0u8;
        if TEMPERATURE_K >= self.features.temp_threshold {
            warn |= 1 << 1; // temperature above the over-temperature threshold
        }
        b[so::CRITICAL_WARNING] = warn;
        put_u16(&mut b, so::TEMPERATURE, TEMPERATURE_K);
        b[so::AVAIL_SPARE] = 100;
        b[so::SPARE_THRESH] = SPARE_THRESHOLD;
        let max_erase = self
            .sys
            .ftl()
            .blocks()
            .iter()
            .map(|blk| blk.erase_count as u64)
            .max()
            .unwrap_or(0);
        b[so::PERCENT_USED] = (max_erase * 100 / self.rated_pe).min(255) as u8;
        // Data units: thousands of 512-byte units, rounded up.
        put_u128(
            &mut b,
            so::DATA_UNITS_READ,
            self.smart.read_units.div_ceil(1000),
        );
        put_u128(
            &mut b,
            so::DATA_UNITS_WRITTEN,
            self.smart.written_units.div_ceil(1000),
        );
        put_u128(&mut b, so::HOST_READ_COMMANDS, self.smart.host_reads);
        put_u128(&mut b, so::HOST_WRITE_COMMANDS, self.smart.host_writes);
        let minutes = self.smart.busy.ps() / 60_000_000_000_000;
        put_u128(&mut b, so::CONTROLLER_BUSY_TIME, minutes as u128);
        put_u128(&mut b, so::POWER_CYCLES, 1); // powered on once (assumed)
        let hours = self.clock.ps() / 3_600_000_000_000_000;
        put_u128(&mut b, so::POWER_ON_HOURS, hours as u128);
        put_u128(&mut b, so::NUM_ERR_LOG_ENTRIES, self.error_count as u128);
        put_u16(&mut b, so::TEMP_SENSOR_1, TEMPERATURE_K);
        b
    }

    fn get_log_page(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let lid = c.cdw10 & 0xFF;
        let numd = (((c.cdw11 & 0xFFFF) as u64) << 16 | (c.cdw10 >> 16) as u64) + 1;
        let len = numd * 4;
        let lpo = c.cdw12 as u64 | ((c.cdw13 as u64) << 32);
        if lpo & 3 != 0 || len > self.max_xfer {
            return Err(Status::INVALID_FIELD);
        }
        let log = match lid {
            0x01 => {
                let mut v = Vec::with_capacity(64 * (ELPE as usize + 1));
                for e in &self.errors {
                    v.extend_from_slice(e);
                }
                v.resize(64 * (ELPE as usize + 1), 0);
                v
            }
            0x02 => {
                if !matches!(c.nsid, 0 | 1 | 0xFFFF_FFFF) {
                    return Err(Status::INVALID_NAMESPACE);
                }
                self.smart_log()
            }
            0x03 => {
                // Firmware Slot Information (§5.14.1.3): slot 1 active, its revision.
                let mut v = vec![0u8; 512];
                v[0] = 1;
                put_str(&mut v, 8, 8, &self.fr);
                v
            }
            _ => return Err(Status::INVALID_LOG_PAGE),
        };
        if lpo >= log.len() as u64 {
            return Err(Status::INVALID_FIELD);
        }
        let mut out = vec![0u8; len as usize];
        let src = &log[lpo as usize..];
        let n = src.len().min(out.len());
        out[..n].copy_from_slice(&src[..n]);
        self.dma_to_host(c, &out)?;
        Ok(0)
    }

    fn set_features(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        if c.cdw10 >> 31 == 1 {
            return Err(Status::NOT_SAVEABLE);
        }
        let f = &mut self.features;
        match (c.cdw10 & 0xFF) as u8 {
            feat::ARBITRATION => f.arbitration = c.cdw11,
            feat::POWER_MGMT => {
                if c.cdw11 & 0x1F != 0 {
                    return Err(Status::INVALID_FIELD); // only power state 0 (NPSS = 0)
                }
                f.power_state = c.cdw11 & 0xFF;
            }
            feat::TEMP_THRESHOLD => {
                // Only the composite sensor's over-temperature threshold (TMPSEL 0, THSEL 0).
                if (c.cdw11 >> 16) & 0x3F != 0 {
                    return Err(Status::INVALID_FIELD);
                }
                f.temp_threshold = c.cdw11 as u16;
            }
            feat::VOLATILE_WC => {
                if !self.vwc_present {
                    return Err(Status::INVALID_FIELD);
                }
                f.wce = c.cdw11 & 1 == 1;
            }
            feat::NUM_QUEUES => {
                let (nsqr, ncqr) = (c.cdw11 & 0xFFFF, c.cdw11 >> 16);
                if nsqr == 0xFFFF || ncqr == 0xFFFF {
                    return Err(Status::INVALID_FIELD);
                }
                if self.sqs.iter().skip(1).any(|q| q.is_some())
                    || self.cqs.iter().skip(1).any(|q| q.is_some())
                {
                    return Err(Status::SEQUENCE_ERROR);
                }
                let f = &mut self.features;
                f.nsqa = (nsqr + 1).min(self.max_io_queues);
                f.ncqa = (ncqr + 1).min(self.max_io_queues);
                return Ok((f.nsqa - 1) | ((f.ncqa - 1) << 16));
            }
            feat::IRQ_COALESCING => f.irq_coalescing = c.cdw11 & 0xFFFF,
            feat::WRITE_ATOMICITY => f.write_atomicity = c.cdw11 & 1,
            feat::ASYNC_EVENT_CFG => f.async_event_cfg = c.cdw11,
            _ => return Err(Status::INVALID_FIELD),
        }
        Ok(0)
    }

    fn get_features(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let f = &self.features;
        Ok(match (c.cdw10 & 0xFF) as u8 {
            feat::ARBITRATION => f.arbitration,
            feat::POWER_MGMT => f.power_state,
            feat::TEMP_THRESHOLD => f.temp_threshold as u32,
            feat::VOLATILE_WC => {
                if !self.vwc_present {
                    return Err(Status::INVALID_FIELD);
                }
                f.wce as u32
            }
            feat::NUM_QUEUES => (f.nsqa - 1) | ((f.ncqa - 1) << 16),
            feat::IRQ_COALESCING => f.irq_coalescing,
            feat::WRITE_ATOMICITY => f.write_atomicity,
            feat::ASYNC_EVENT_CFG => f.async_event_cfg,
            _ => return Err(Status::INVALID_FIELD),
        })
    }

    // ---------------------------------------------------------------------------------------
    // I/O commands (NVM command set)

    fn run_io_batch(&mut self, sqid: u16, cmds: Vec<Sqe>) {
        let t0 = self.clock;
        let mut entries: Vec<IoEntry> = Vec::with_capacity(cmds.len());
        let mut ids: Vec<(u32, usize)> = Vec::new();
        let mut cids = BTreeSet::new();
        for c in &cmds {
            let mut e = IoEntry {
                cid: c.cid,
                status: Status::SUCCESS,
                pending: 0,
                done: t0 + self.cmd_overhead,
                kind: IoKind::Other,
                units512: 0,
            };
            if !cids.insert(c.cid) {
                e.status = Status::CID_CONFLICT;
            } else {
                match self.exec_io(c, &mut e) {
                    Ok(ops) => {
                        for (op, off, len) in ops {
                            let at = t0.max(self.sys.now());
                            let r = Request {
                                op,
                                offset: off,
                                len,
                                queue: 0,
                                flags: Flags::NONE,
                                arrival: at,
                            };
                            match self.sys.submit(at, r) {
                                Ok(id) => {
                                    ids.push((id, entries.len()));
                                    e.pending += 1;
                                }
                                Err(_) => e.status = Status::INTERNAL_ERROR,
                            }
                        }
                    }
                    Err(s) => e.status = s,
                }
            }
            entries.push(e);
        }
        if !ids.is_empty() {
            ids.sort_unstable();
            match self.sys.run_to_idle() {
                Ok(done) => {
                    for (id, t) in done {
                        if let Ok(k) = ids.binary_search_by_key(&id, |x| x.0) {
                            let e = &mut entries[ids[k].1];
                            e.pending = e.pending.saturating_sub(1);
                            e.done = e.done.max(t);
                        }
                    }
                }
                Err(_) => {
                    for e in entries.iter_mut().filter(|e| e.pending > 0) {
                        e.status = Status::INTERNAL_ERROR;
                    }
                }
            }
            for e in entries.iter_mut().filter(|e| e.pending > 0) {
                e.status = Status::INTERNAL_ERROR;
            }
        }
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by_key(|&i| (entries[i].done, i));
        let mut last = t0;
        for i in order {
            let e = &entries[i];
            let ok = e.status.is_success();
            if ok {
                match e.kind {
                    IoKind::Read => {
                        self.smart.host_reads += 1;
                        self.smart.read_units += e.units512 as u128;
                    }
                    IoKind::Write => {
                        self.smart.host_writes += 1;
                        self.smart.written_units += e.units512 as u128;
                    }
                    IoKind::Other => {}
                }
            }
            let (cid, status, done) = (e.cid, e.status, e.done);
            last = last.max(done);
            self.post(sqid, cid, 0, status, t0, done);
        }
        self.smart.busy += last - t0;
        self.clock = self.clock.max(last);
    }

    /// Validate an I/O command and do its functional part; return the model requests that
    /// time it.
    fn exec_io(
        &mut self,
        c: &Sqe,
        e: &mut IoEntry,
    ) -> std::result::Result<Vec<(Op, u64, u64)>, Status> {
        if c.fuse != 0 || c.psdt != 0 {
            return Err(Status::INVALID_FIELD);
        }
        let lba = self.lba_size as u64;
        match c.opcode {
            io::FLUSH => {
                if c.nsid != 1 && c.nsid != 0xFFFF_FFFF {
                    return Err(Status::INVALID_NAMESPACE);
                }
                Ok(vec![(Op::Flush, 0, 0)])
            }
            io::READ | io::WRITE => {
                if c.nsid != 1 {
                    return Err(Status::INVALID_NAMESPACE);
                }
                let slba = c.cdw10 as u64 | ((c.cdw11 as u64) << 32);
                let nlb = (c.cdw12 & 0xFFFF) as u64 + 1;
                if slba.checked_add(nlb).is_none_or(|end| end > self.nsze) {
                    return Err(Status::LBA_OUT_OF_RANGE);
                }
                let bytes = nlb * lba;
                if bytes > self.max_xfer {
                    return Err(Status::INVALID_FIELD);
                }
                if c.opcode == io::WRITE {
                    let data = self.dma_from_host(c, bytes)?;
                    self.store.write(slba, &data);
                    e.kind = IoKind::Write;
                } else {
                    let mut data = vec![0u8; bytes as usize];
                    self.store.read(slba, &mut data);
                    self.dma_to_host(c, &data)?;
                    e.kind = IoKind::Read;
                }
                e.units512 = bytes / 512;
                let op = if c.opcode == io::WRITE {
                    Op::Write
                } else {
                    Op::Read
                };
                Ok(vec![(op, slba * lba, bytes)])
            }
            io::DSM => {
                if c.nsid != 1 {
                    return Err(Status::INVALID_NAMESPACE);
                }
                let nr = (c.cdw10 & 0xFF) as u64 + 1;
                let ranges = self.dma_from_host(c, nr * 16)?;
                if c.cdw11 & (1 << 2) == 0 {
                    return Ok(Vec::new()); // attributes only: nothing to do
                }
                let mut list = Vec::new();
                for r in ranges.chunks_exact(16) {
                    let n = u32::from_le_bytes([r[4], r[5], r[6], r[7]]) as u64;
                    let mut s = [0u8; 8];
                    s.copy_from_slice(&r[8..16]);
                    let slba = u64::from_le_bytes(s);
                    if n == 0 {
                        continue;
                    }
                    if slba.checked_add(n).is_none_or(|end| end > self.nsze) {
                        return Err(Status::LBA_OUT_OF_RANGE);
                    }
                    list.push((slba, n));
                }
                let mut ops = Vec::new();
                for (slba, n) in list {
                    self.store.deallocate(slba, n);
                    ops.push((Op::Trim, slba * lba, n * lba));
                }
                Ok(ops)
            }
            _ => Err(Status::INVALID_OPCODE),
        }
    }
}
