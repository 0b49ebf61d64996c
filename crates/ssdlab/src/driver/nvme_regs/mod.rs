//! A register-level NVMe controller: BAR0 registers and doorbells, a PCI configuration space,
//! the admin and NVM command sets over SQs and CQs in simulated host memory, PRP data transfers,
//! a functional store (data written reads back), and completion times from the performance
//! model ([`crate::device::Device`], driven through its boundary).
//!
//! - [`mem::HostMemory`]: the host's memory (queues, PRP lists, data buffers).
//! - [`controller::Controller`]: the device — MMIO, config space, command execution.
//! - [`host_driver::HostDriver`]: a host driver model that brings the controller up as Linux does and
//!   offers read/write/flush/deallocate/identify/log helpers.
//! - [`workload`]: a job or a trace run through the driver.
//! - [`structs`]: the Identify and log page layouts, and their decoding into named fields.
//!
//! Spec references are to the NVM Express Base Specification 1.4 unless stated otherwise.
//! See `docs/nvme-controller.md`.

pub mod controller;
pub mod host_driver;
pub mod mem;
pub mod pci;
pub mod structs;
pub mod workload;

#[cfg(test)]
mod tests;

pub use controller::{Controller, MsixMessage, NvmeOptions, Posted};
pub use host_driver::HostDriver;
pub use mem::HostMemory;

/// BAR0 register offsets (§3.1, Figure 78).
pub mod reg {
    pub const CAP: u64 = 0x00;
    pub const VS: u64 = 0x08;
    pub const INTMS: u64 = 0x0C;
    pub const INTMC: u64 = 0x10;
    pub const CC: u64 = 0x14;
    pub const CSTS: u64 = 0x1C;
    pub const NSSR: u64 = 0x20;
    pub const AQA: u64 = 0x24;
    pub const ASQ: u64 = 0x28;
    pub const ACQ: u64 = 0x30;
    /// First doorbell (SQ 0 tail); §3.1.24.
    pub const DOORBELL_BASE: u64 = 0x1000;
}

/// Admin command opcodes (§5, Figure 139).
pub mod admin {
    pub const DELETE_IO_SQ: u8 = 0x00;
    pub const CREATE_IO_SQ: u8 = 0x01;
    pub const GET_LOG_PAGE: u8 = 0x02;
    pub const DELETE_IO_CQ: u8 = 0x04;
    pub const CREATE_IO_CQ: u8 = 0x05;
    pub const IDENTIFY: u8 = 0x06;
    pub const ABORT: u8 = 0x08;
    pub const SET_FEATURES: u8 = 0x09;
    pub const GET_FEATURES: u8 = 0x0A;
    pub const ASYNC_EVENT: u8 = 0x0C;
}

/// NVM command set opcodes (NVM command set, §6, Figure 346).
pub mod io {
    pub const FLUSH: u8 = 0x00;
    pub const WRITE: u8 = 0x01;
    pub const READ: u8 = 0x02;
    pub const DSM: u8 = 0x09;
    // Zoned Namespace Command Set (NVMe ZNS 1.1, "I/O Commands"): Zone Management Send and
    // Receive, Zone Append.
    pub const ZONE_MGMT_SEND: u8 = 0x79;
    pub const ZONE_MGMT_RECV: u8 = 0x7A;
    pub const ZONE_APPEND: u8 = 0x7D;
}

/// Command Set Identifiers (NVMe 2.0 base, "Command Set Identifiers"): the CSI field of
/// Identify (CDW11 bits 31:24) and of a namespace's CSI descriptor.
pub mod csi {
    pub const NVM: u8 = 0x00;
    pub const ZONED: u8 = 0x02;
}

/// Feature identifiers (§5.21.1, Figure 271).
pub mod feat {
    pub const ARBITRATION: u8 = 0x01;
    pub const POWER_MGMT: u8 = 0x02;
    pub const TEMP_THRESHOLD: u8 = 0x04;
    pub const VOLATILE_WC: u8 = 0x06;
    pub const NUM_QUEUES: u8 = 0x07;
    pub const IRQ_COALESCING: u8 = 0x08;
    pub const WRITE_ATOMICITY: u8 = 0x0A;
    pub const ASYNC_EVENT_CFG: u8 = 0x0B;
}

/// A completion status: status code type, status code, do-not-retry (§4.6.1, Figure 124).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub sct: u8,
    pub sc: u8,
    pub dnr: bool,
}

impl Status {
    pub const SUCCESS: Status = Status::generic(0x00);
    // Generic command status (SCT 0, §4.6.1.2.1, Figure 126).
    pub const INVALID_OPCODE: Status = Status::generic(0x01);
    pub const INVALID_FIELD: Status = Status::generic(0x02);
    pub const CID_CONFLICT: Status = Status::generic(0x03);
    pub const DATA_TRANSFER_ERROR: Status = Status::generic(0x04);
    pub const INTERNAL_ERROR: Status = Status::generic(0x06);
    pub const INVALID_NAMESPACE: Status = Status::generic(0x0B);
    pub const SEQUENCE_ERROR: Status = Status::generic(0x0C);
    pub const INVALID_PRP_OFFSET: Status = Status::generic(0x13);
    pub const LBA_OUT_OF_RANGE: Status = Status::generic(0x80);
    // Command specific status (SCT 1, §4.6.1.2.2, Figure 128).
    pub const CQ_INVALID: Status = Status::specific(0x00);
    pub const INVALID_QID: Status = Status::specific(0x01);
    pub const INVALID_QSIZE: Status = Status::specific(0x02);
    pub const AER_LIMIT: Status = Status::specific(0x05);
    pub const INVALID_VECTOR: Status = Status::specific(0x08);
    pub const INVALID_LOG_PAGE: Status = Status::specific(0x09);
    pub const INVALID_QUEUE_DELETION: Status = Status::specific(0x0C);
    pub const NOT_SAVEABLE: Status = Status::specific(0x0D);
    // Generic: a write to a worn-out, read-only medium; a write with no room left.
    pub const WRITE_PROTECTED: Status = Status::generic(0x20);
    pub const CAPACITY_EXCEEDED: Status = Status::generic(0x81);
    // Media and data integrity errors (SCT 2, Figure 130).
    pub const UNRECOVERED_READ_ERROR: Status = Status::media(0x81);

    /// The NVMe status of a model's failed request.
    pub fn of_device(s: crate::device::Status) -> Status {
        use crate::device::Status as D;
        match s {
            D::Ok => Status::SUCCESS,
            D::Uncorrectable => Status::UNRECOVERED_READ_ERROR,
            D::ReadOnly | D::WriteProtected => Status::WRITE_PROTECTED,
            D::NoSpace => Status::CAPACITY_EXCEEDED,
            // Raw-device refusals do not reach this controller (its device has an FTL).
            D::ProgramOrder | D::Misaligned | D::Unsupported => Status::INTERNAL_ERROR,
            D::InvalidField => Status::INVALID_FIELD,
            // The Zoned Namespace Command Set's command-specific statuses, B8h to BFh.
            D::ZoneBoundary => Status::specific(0xB8),
            D::ZoneFull => Status::specific(0xB9),
            D::ZoneReadOnly => Status::specific(0xBA),
            D::ZoneOffline => Status::specific(0xBB),
            D::ZoneInvalidWrite => Status::specific(0xBC),
            D::TooManyActiveZones => Status::specific(0xBD),
            D::TooManyOpenZones => Status::specific(0xBE),
            D::ZoneInvalidTransition => Status::specific(0xBF),
        }
    }

    const fn generic(sc: u8) -> Status {
        Status {
            sct: 0,
            sc,
            dnr: sc != 0,
        }
    }
    const fn media(sc: u8) -> Status {
        Status {
            sct: 2,
            sc,
            dnr: false,
        }
    }
    const fn specific(sc: u8) -> Status {
        Status {
            sct: 1,
            sc,
            dnr: true,
        }
    }

    /// The 15-bit status field (DW3 bits 31:17) shifted to bits 15:1, phase bit 0 clear.
    pub fn field(self) -> u16 {
        ((self.sc as u16) << 1) | (((self.sct & 7) as u16) << 9) | ((self.dnr as u16) << 15)
    }

    /// From DW3 bits 31:16 (the phase bit is ignored).
    pub fn from_field(f: u16) -> Status {
        Status {
            sc: (f >> 1) as u8,
            sct: ((f >> 9) & 7) as u8,
            dnr: f & 0x8000 != 0,
        }
    }

    pub fn is_success(self) -> bool {
        self.sct == 0 && self.sc == 0
    }

    /// The spec's name of the status.
    pub fn name(self) -> &'static str {
        match (self.sct, self.sc) {
            (0, 0x00) => "Successful Completion",
            (0, 0x01) => "Invalid Command Opcode",
            (0, 0x02) => "Invalid Field in Command",
            (0, 0x03) => "Command ID Conflict",
            (0, 0x04) => "Data Transfer Error",
            (0, 0x06) => "Internal Error",
            (0, 0x0B) => "Invalid Namespace or Format",
            (0, 0x0C) => "Command Sequence Error",
            (0, 0x13) => "PRP Offset Invalid",
            (0, 0x80) => "LBA Out of Range",
            (1, 0x00) => "Completion Queue Invalid",
            (1, 0x01) => "Invalid Queue Identifier",
            (1, 0x02) => "Invalid Queue Size",
            (1, 0x05) => "Asynchronous Event Request Limit Exceeded",
            (1, 0x08) => "Invalid Interrupt Vector",
            (1, 0x09) => "Invalid Log Page",
            (1, 0x0C) => "Invalid Queue Deletion",
            (1, 0x0D) => "Feature Identifier Not Saveable",
            (0, 0x20) => "Namespace is Write Protected",
            (0, 0x81) => "Capacity Exceeded",
            (2, 0x81) => "Unrecovered Read Error",
            (1, 0xB8) => "Zone Boundary Error",
            (1, 0xB9) => "Zone Is Full",
            (1, 0xBA) => "Zone Is Read Only",
            (1, 0xBB) => "Zone Is Offline",
            (1, 0xBC) => "Zone Invalid Write",
            (1, 0xBD) => "Too Many Active Zones",
            (1, 0xBE) => "Too Many Open Zones",
            (1, 0xBF) => "Invalid Zone State Transition",
            _ => "unknown status",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (SCT {:x}h, SC {:02x}h)",
            self.name(),
            self.sct,
            self.sc
        )
    }
}

/// A 64-byte submission queue entry (§4.2, Figure 104).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sqe {
    pub opcode: u8,
    /// Fused operation, bits 9:8 of DW0.
    pub fuse: u8,
    /// PRP or SGL, bits 15:14 of DW0.
    pub psdt: u8,
    pub cid: u16,
    pub nsid: u32,
    pub mptr: u64,
    pub prp1: u64,
    pub prp2: u64,
    pub cdw10: u32,
    pub cdw11: u32,
    pub cdw12: u32,
    pub cdw13: u32,
    pub cdw14: u32,
    pub cdw15: u32,
}

impl Sqe {
    pub fn new(opcode: u8) -> Sqe {
        Sqe {
            opcode,
            ..Sqe::default()
        }
    }

    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        let dw0 = self.opcode as u32
            | ((self.fuse as u32 & 3) << 8)
            | ((self.psdt as u32 & 3) << 14)
            | ((self.cid as u32) << 16);
        b[0..4].copy_from_slice(&dw0.to_le_bytes());
        b[4..8].copy_from_slice(&self.nsid.to_le_bytes());
        b[16..24].copy_from_slice(&self.mptr.to_le_bytes());
        b[24..32].copy_from_slice(&self.prp1.to_le_bytes());
        b[32..40].copy_from_slice(&self.prp2.to_le_bytes());
        for (i, v) in [
            self.cdw10, self.cdw11, self.cdw12, self.cdw13, self.cdw14, self.cdw15,
        ]
        .iter()
        .enumerate()
        {
            b[40 + 4 * i..44 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub fn from_bytes(b: &[u8; 64]) -> Sqe {
        let d = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let q = |i: usize| d(i) as u64 | ((d(i + 4) as u64) << 32);
        let dw0 = d(0);
        Sqe {
            opcode: dw0 as u8,
            fuse: ((dw0 >> 8) & 3) as u8,
            psdt: ((dw0 >> 14) & 3) as u8,
            cid: (dw0 >> 16) as u16,
            nsid: d(4),
            mptr: q(16),
            prp1: q(24),
            prp2: q(32),
            cdw10: d(40),
            cdw11: d(44),
            cdw12: d(48),
            cdw13: d(52),
            cdw14: d(56),
            cdw15: d(60),
        }
    }
}

/// A 16-byte completion queue entry (§4.6, Figure 121).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    pub dw0: u32,
    pub dw1: u32,
    pub sq_head: u16,
    pub sq_id: u16,
    pub cid: u16,
    pub phase: bool,
    pub status: Status,
}

impl Cqe {
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&self.dw0.to_le_bytes());
        b[4..8].copy_from_slice(&self.dw1.to_le_bytes());
        let dw2 = self.sq_head as u32 | ((self.sq_id as u32) << 16);
        b[8..12].copy_from_slice(&dw2.to_le_bytes());
        let dw3 =
            self.cid as u32 | ((self.phase as u32) << 16) | ((self.status.field() as u32) << 16);
        b[12..16].copy_from_slice(&dw3.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; 16]) -> Cqe {
        let d = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (dw2, dw3) = (d(8), d(12));
        Cqe {
            dw0: d(0),
            dw1: d(4),
            sq_head: dw2 as u16,
            sq_id: (dw2 >> 16) as u16,
            cid: dw3 as u16,
            phase: dw3 & (1 << 16) != 0,
            status: Status::from_field((dw3 >> 16) as u16),
        }
    }
}
