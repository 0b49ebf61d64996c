//! A host driver model: brings the controller up the way Linux's nvme driver does (§7.6.1 of
//! the spec) and offers synchronous helpers that build commands with PRPs in host memory, ring
//! doorbells and consume completions by phase tag.
//!
//! Host memory layout (assumed addresses, page aligned): admin SQ at 1 MiB, admin CQ at
//! 1 MiB + 64 KiB, I/O SQ at 2 MiB, I/O CQ at 6 MiB, PRP lists from 8 MiB (one 4 KiB page
//! per command slot), data buffers from 16 MiB (one `max_transfer` slot per command).

use super::controller::Controller;
use super::pci;
use super::{admin, feat, io, reg, Cqe, Sqe, Status};
use crate::config::InterruptMode;
use crate::error::{got, says, Error, Invalid, Result};
use crate::sim::SimTime;

pub const ASQ_ADDR: u64 = 0x0010_0000;
pub const ACQ_ADDR: u64 = 0x0011_0000;
pub const IOSQ_ADDR: u64 = 0x0020_0000;
pub const IOCQ_ADDR: u64 = 0x0060_0000;
pub const PRP_LIST_ADDR: u64 = 0x0080_0000;
pub const DATA_ADDR: u64 = 0x0100_0000;
/// Admin queue entries (assumed; Linux uses 32).
pub const ADMIN_QUEUE_SIZE: u32 = 32;
/// MSI-X message address of the x86 local APIC (assumed destination).
pub const MSI_ADDR: u64 = 0xFEE0_0000;
/// Polls of CSTS before giving up on a state change (the controller changes state at once, so
/// one poll is enough; the bound keeps a broken controller from hanging the host).
const POLLS: u32 = 1000;

/// A completion as the driver sees it, with its timing from the controller.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    pub cqe: Cqe,
    pub submitted: SimTime,
    pub completed: SimTime,
}

impl Done {
    pub fn latency(&self) -> SimTime {
        self.completed - self.submitted
    }
}

/// One I/O command for [`HostDriver::submit_batch`].
#[derive(Clone, Copy, Debug)]
pub enum IoCmd {
    Read {
        slba: u64,
        nlb: u32,
    },
    Write {
        slba: u64,
        nlb: u32,
    },
    Flush,
    Deallocate {
        slba: u64,
        nlb: u32,
    },
    /// Zone Append of `nlb` blocks to the zone starting at `zslba` (a zoned drive).
    Append {
        zslba: u64,
        nlb: u32,
    },
    /// Zone Management Send: `action` (1 close, 2 finish, 3 open, 4 reset, 5 offline) on the
    /// zone starting at `slba` (a zoned drive).
    ZoneSend {
        slba: u64,
        action: u8,
    },
}

pub struct HostDriver {
    pub ctrl: Controller,
    admin_tail: u32,
    admin_head: u32,
    admin_phase: bool,
    io_size: u32,
    io_tail: u32,
    io_head: u32,
    io_phase: bool,
    next_cid: u16,
    id_ctrl: Vec<u8>,
    id_ns: Vec<u8>,
    /// Largest transfer per command, bytes (MDTS, or the controller's limit).
    max_xfer: u64,
    lba_size: u64,
    nsze: u64,
    /// Completion timings reported by the controller and not yet matched to a CQ entry.
    timings: Vec<super::controller::Posted>,
    /// The data placement directive writes carry (FDP, TP4146): `Some(pid)` sends DTYPE 2 with
    /// DSPEC `pid`; None, no directive.
    placement: Option<u16>,
}

/// A job error: what the caller asked of the driver (`what`: a command, an argument) against
/// what it takes.
fn job_err(what: &str, value: impl std::fmt::Display, expected: String) -> Error {
    Error::bad_job(Invalid::unnamed(what, got(value, expected)))
}

impl HostDriver {
    /// Bring `ctrl` up with one I/O queue pair of `queue_depth` entries (clamped to CAP.MQES+1
    /// and to at least 2), using the interrupt mode given.
    pub fn bring_up(
        mut ctrl: Controller,
        queue_depth: u32,
        irq: InterruptMode,
    ) -> Result<HostDriver> {
        // PCI: memory space and bus mastering on; MSI-X on if asked, vector 0 and 1 unmasked.
        ctrl.config_write(
            0x04,
            2,
            (pci::CMD_MEMORY_SPACE | pci::CMD_BUS_MASTER) as u32,
        );
        if irq == InterruptMode::Msix {
            for v in 0..2u64 {
                let e = pci::MSIX_TABLE_OFFSET as u64 + 16 * v;
                ctrl.write32(e, MSI_ADDR as u32);
                ctrl.write32(e + 4, (MSI_ADDR >> 32) as u32);
                ctrl.write32(e + 8, 0x40 + v as u32);
                ctrl.write32(e + 12, 0);
            }
            let mc = ctrl.config_read(pci::MSIX_CAP as u32 + 2, 2);
            ctrl.config_write(pci::MSIX_CAP as u32 + 2, 2, mc | 0x8000);
        }
        let cap = ctrl.read64(reg::CAP);
        let mqes = (cap & 0xFFFF) as u32 + 1;
        // 1. Disable, wait for RDY = 0.
        if ctrl.read32(reg::CC) & 1 == 1 {
            ctrl.write32(reg::CC, ctrl.read32(reg::CC) & !1);
        }
        wait_csts(&ctrl, 0)?;
        // 2. Admin queue attributes and addresses.
        let a = ADMIN_QUEUE_SIZE - 1;
        ctrl.write32(reg::AQA, a | (a << 16));
        ctrl.write64(reg::ASQ, ASQ_ADDR);
        ctrl.write64(reg::ACQ, ACQ_ADDR);
        // 3. Enable: 4 KiB pages, round robin, 64/16-byte entries; the NVM command set, or
        //    every I/O command set when CAP.CSS bit 43 offers them (as Linux does: a zoned
        //    namespace needs CC.CSS = 110b).
        let css = if cap & (1 << 43) != 0 { 0b110 << 4 } else { 0 };
        let cc = 1 | css | (super::controller::SQES << 16) | (super::controller::CQES << 20);
        ctrl.write32(reg::CC, cc);
        wait_csts(&ctrl, 1)?;
        let io_size = queue_depth.clamp(2, mqes.min(65536));
        let mut d = HostDriver {
            ctrl,
            admin_tail: 0,
            admin_head: 0,
            admin_phase: true,
            io_size,
            io_tail: 0,
            io_head: 0,
            io_phase: true,
            next_cid: 0,
            id_ctrl: Vec::new(),
            placement: None,
            id_ns: Vec::new(),
            max_xfer: 4096,
            lba_size: 512,
            nsze: 0,
            timings: Vec::new(),
        };
        // 4. Identify controller and namespace 1.
        d.id_ctrl = d.identify(1, 0)?;
        d.id_ns = d.identify(0, 1)?;
        let mdts = d.id_ctrl[super::structs::ctrl_off::MDTS];
        d.max_xfer = if mdts == 0 {
            d.ctrl.max_transfer()
        } else {
            4096u64 << mdts.min(20)
        };
        let flbas = (d.id_ns[super::structs::ns_off::FLBAS] & 0xF) as usize;
        let lbaf = u32::from_le_bytes(
            d.id_ns[128 + 4 * flbas..132 + 4 * flbas]
                .try_into()
                .unwrap_or([0; 4]),
        );
        d.lba_size = 1u64 << ((lbaf >> 16) & 0xFF).clamp(9, 20);
        d.nsze = u64::from_le_bytes(d.id_ns[0..8].try_into().unwrap_or([0; 8]));
        // 5. Number of queues: one pair.
        let r = d.admin_cmd(Sqe {
            cdw10: feat::NUM_QUEUES as u32,
            cdw11: 0,
            ..Sqe::new(admin::SET_FEATURES)
        })?;
        check(&r.cqe, "Set Features (Number of Queues)")?;
        // 6. I/O CQ 1 (interrupts unless polling, vector 1 with MSI-X), then I/O SQ 1.
        let ien = if irq == InterruptMode::Polling { 0 } else { 2 };
        let iv = if irq == InterruptMode::Msix { 1 } else { 0 };
        let r = d.admin_cmd(Sqe {
            prp1: IOCQ_ADDR,
            cdw10: 1 | ((io_size - 1) << 16),
            cdw11: 1 | ien | (iv << 16),
            ..Sqe::new(admin::CREATE_IO_CQ)
        })?;
        check(&r.cqe, "Create I/O Completion Queue")?;
        let r = d.admin_cmd(Sqe {
            prp1: IOSQ_ADDR,
            cdw10: 1 | ((io_size - 1) << 16),
            cdw11: 1 | (1 << 16),
            ..Sqe::new(admin::CREATE_IO_SQ)
        })?;
        check(&r.cqe, "Create I/O Submission Queue")?;
        Ok(d)
    }

    pub fn lba_size(&self) -> u64 {
        self.lba_size
    }
    pub fn nsze(&self) -> u64 {
        self.nsze
    }
    pub fn max_transfer(&self) -> u64 {
        self.max_xfer
    }
    /// I/O SQ entries (it holds one fewer commands).
    pub fn queue_size(&self) -> u32 {
        self.io_size
    }
    /// The Identify Controller data read at bring-up.
    pub fn id_ctrl_data(&self) -> &[u8] {
        &self.id_ctrl
    }

    fn cid(&mut self) -> u16 {
        let c = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        c
    }

    /// A command can be taken only by a running controller: one disabled or reset through its
    /// registers (`mmio_write` of CC) answers nothing, which is the caller's doing, not a fault
    /// of the simulator, so it is named as such before anything is submitted.
    fn require_ready(&self) -> Result<()> {
        let csts = self.ctrl.read32(reg::CSTS);
        if csts & 2 != 0 {
            return Err(job_err(
                "the NVMe controller",
                format_args!(
                    "fatal status (CSTS.CFS = 1: {})",
                    self.ctrl.fatal_reason().unwrap_or("no reason given")
                ),
                "a ready controller: reset it (CC.EN = 0, then 1) before submitting commands"
                    .into(),
            ));
        }
        if csts & 1 == 0 {
            let en = self.ctrl.read32(reg::CC) & 1;
            return Err(job_err(
                "the NVMe controller",
                format_args!("not ready (CSTS.RDY = 0, CC.EN = {en})"),
                "a ready controller: it was disabled or reset through its registers; set CC.EN = 1 \
                 and wait for CSTS.RDY before submitting commands"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Submit one admin command and wait for its completion.
    pub fn admin_cmd(&mut self, mut c: Sqe) -> Result<Done> {
        self.require_ready()?;
        c.cid = self.cid();
        let slot = ASQ_ADDR + 64 * self.admin_tail as u64;
        self.ctrl.mem.write(slot, &c.to_bytes());
        self.admin_tail = (self.admin_tail + 1) % ADMIN_QUEUE_SIZE;
        self.ctrl.write32(reg::DOORBELL_BASE, self.admin_tail);
        let mut got = self.reap(0, 1)?;
        got.pop().ok_or_else(|| {
            Error::bad_device(Invalid::unnamed("admin command", says("no completion")))
        })
    }

    /// Consume up to `want` completions from CQ `qid`, ringing its head doorbell.
    fn reap(&mut self, qid: u16, want: usize) -> Result<Vec<Done>> {
        let mut out = Vec::new();
        let posted = self.ctrl.take_posted();
        self.timings.extend(posted);
        loop {
            let (base, size, head, phase) = if qid == 0 {
                (
                    ACQ_ADDR,
                    ADMIN_QUEUE_SIZE,
                    self.admin_head,
                    self.admin_phase,
                )
            } else {
                (IOCQ_ADDR, self.io_size, self.io_head, self.io_phase)
            };
            let mut b = [0u8; 16];
            self.ctrl.mem.read(base + 16 * head as u64, &mut b);
            let e = Cqe::from_bytes(&b);
            if e.phase != phase {
                break;
            }
            let head = (head + 1) % size;
            let phase = if head == 0 { !phase } else { phase };
            if qid == 0 {
                self.admin_head = head;
                self.admin_phase = phase;
            } else {
                self.io_head = head;
                self.io_phase = phase;
            }
            let t = self
                .timings
                .iter()
                .position(|p| p.cid == e.cid && p.sqid == e.sq_id)
                .map(|i| self.timings.remove(i));
            out.push(Done {
                cqe: e,
                submitted: t.map_or(SimTime::ZERO, |p| p.submitted),
                completed: t.map_or(self.ctrl.clock(), |p| p.completed),
            });
            if out.len() >= want {
                break;
            }
        }
        let head = if qid == 0 {
            self.admin_head
        } else {
            self.io_head
        };
        let db = reg::DOORBELL_BASE + (2 * qid as u64 + 1) * 4;
        self.ctrl.write32(db, head);
        Ok(out)
    }

    /// Identify with `cns` for `nsid`: the 4096-byte data structure.
    pub fn identify(&mut self, cns: u32, nsid: u32) -> Result<Vec<u8>> {
        let buf = DATA_ADDR;
        self.ctrl.mem.write(buf, &[0u8; 4096]);
        let r = self.admin_cmd(Sqe {
            nsid,
            prp1: buf,
            cdw10: cns,
            ..Sqe::new(admin::IDENTIFY)
        })?;
        check(&r.cqe, &format!("Identify (CNS {cns:02x}h)"))?;
        Ok(self.ctrl.mem.read_vec(buf, 4096))
    }

    /// Identify with `cns` for `nsid` and Command Set Identifier `csi` (NVMe 2.0: CNS 05h
    /// and 06h, the I/O command set specific structures).
    pub fn identify_csi(&mut self, cns: u32, nsid: u32, csi: u8) -> Result<Vec<u8>> {
        let buf = DATA_ADDR;
        self.ctrl.mem.write(buf, &[0u8; 4096]);
        let r = self.admin_cmd(Sqe {
            nsid,
            prp1: buf,
            cdw10: cns,
            cdw11: (csi as u32) << 24,
            ..Sqe::new(admin::IDENTIFY)
        })?;
        check(
            &r.cqe,
            &format!("Identify (CNS {cns:02x}h, CSI {csi:02x}h)"),
        )?;
        Ok(self.ctrl.mem.read_vec(buf, 4096))
    }

    /// Zone Management Send: `action` (the Zone Send Action: 1 close, 2 finish, 3 open,
    /// 4 reset, 5 offline) on the zone starting at `slba`, or on every zone with `all`.
    /// Returns the completion whatever its status (a refused action is the drive's answer).
    pub fn zone_mgmt_send(&mut self, slba: u64, action: u8, all: bool) -> Result<Done> {
        let s = Sqe {
            nsid: 1,
            cdw10: slba as u32,
            cdw11: (slba >> 32) as u32,
            cdw13: action as u32 | ((all as u32) << 8),
            ..Sqe::new(io::ZONE_MGMT_SEND)
        };
        self.submit_one(s, "Zone Management Send")
    }

    /// Zone Management Receive, Report Zones: from the zone of `slba`, the zones in the state
    /// `option` selects (0 all, 1–7 one state), into a `bytes`-long buffer (a multiple of 4,
    /// at most the largest transfer); `partial` sets the Partial Report bit. Returns the
    /// report's bytes (a 64-byte header, then 64-byte zone descriptors).
    pub fn report_zones(
        &mut self,
        slba: u64,
        option: u8,
        partial: bool,
        bytes: u64,
    ) -> Result<(Vec<u8>, Done)> {
        if bytes < 4 || !bytes.is_multiple_of(4) || bytes > self.max_xfer.min(2 << 20) {
            return Err(job_err(
                "report buffer",
                format_args!("{bytes} bytes"),
                format!("a multiple of 4 from 4 to {}", self.max_xfer.min(2 << 20)),
            ));
        }
        let buf = DATA_ADDR;
        let (prp1, prp2) = self.prps(buf, bytes, PRP_LIST_ADDR);
        let s = Sqe {
            nsid: 1,
            prp1,
            prp2,
            cdw10: slba as u32,
            cdw11: (slba >> 32) as u32,
            cdw12: (bytes / 4 - 1) as u32,
            cdw13: ((option as u32) << 8) | ((partial as u32) << 16),
            ..Sqe::new(io::ZONE_MGMT_RECV)
        };
        let d = self.submit_one(s, "Zone Management Receive")?;
        Ok((self.ctrl.mem.read_vec(buf, bytes as usize), d))
    }

    /// Zone Append `data` (a whole number of blocks) to the zone starting at `zslba`. Returns
    /// the completion; on success its DW0 and DW1 hold the LBA the data was written at
    /// ([`appended_lba`]).
    pub fn zone_append(&mut self, zslba: u64, data: &[u8]) -> Result<Done> {
        let nlb = self.blocks_of(data.len())?;
        let len = data.len() as u64;
        if nlb > 65536 || len > self.max_xfer.min(2 << 20) {
            return Err(self.past_the_largest("append", len));
        }
        let buf = DATA_ADDR;
        self.ctrl.mem.write(buf, data);
        let (prp1, prp2) = self.prps(buf, len, PRP_LIST_ADDR);
        let s = Sqe {
            nsid: 1,
            prp1,
            prp2,
            cdw10: zslba as u32,
            cdw11: (zslba >> 32) as u32,
            cdw12: nlb - 1,
            ..Sqe::new(io::ZONE_APPEND)
        };
        self.submit_one(s, "Zone Append")
    }

    /// Get Log Page `lid` for all namespaces: `len` bytes (a multiple of 4, at most 4096).
    pub fn get_log(&mut self, lid: u8, len: u32) -> Result<Vec<u8>> {
        self.log_page(lid, len, 0, 0)
    }

    /// Get Log Page `lid` with log specific field `lsp` (CDW10 bits 14:8) and CDW11 `cdw11`
    /// (its log specific identifier): `len` bytes, a multiple of 4 from 4 to 4096.
    fn log_page(&mut self, lid: u8, len: u32, lsp: u32, cdw11: u32) -> Result<Vec<u8>> {
        if len == 0 || !len.is_multiple_of(4) || len > 4096 {
            return Err(job_err(
                "log page length",
                len,
                "a multiple of 4 from 4 to 4096".into(),
            ));
        }
        let buf = DATA_ADDR;
        let numd = len / 4 - 1;
        let r = self.admin_cmd(Sqe {
            nsid: 0xFFFF_FFFF,
            prp1: buf,
            prp2: buf + 4096,
            cdw10: lid as u32 | (lsp << 8) | (numd << 16),
            cdw11,
            ..Sqe::new(admin::GET_LOG_PAGE)
        })?;
        check(&r.cqe, &format!("Get Log Page (LID {lid:02x}h)"))?;
        Ok(self.ctrl.mem.read_vec(buf, len as usize))
    }

    /// Whether the controller supports Flexible Data Placement (Identify Controller CTRATT
    /// bit 19).
    pub fn fdp_supported(&self) -> bool {
        let at = super::structs::ctrl_off::CTRATT;
        self.id_ctrl
            .get(at..at + 4)
            .is_some_and(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & (1 << 19) != 0)
    }

    /// Writes from now on carry the data placement directive naming placement identifier
    /// `pid` (None: no directive).
    pub fn set_placement(&mut self, pid: Option<u16>) {
        self.placement = pid;
    }

    /// FDP log page `lid` (20h–23h) of endurance group 1 (`host_events`: the events page's
    /// host events, LSP bit 0; else its controller events), `len` bytes (at most 4096).
    pub fn fdp_log(&mut self, lid: u8, len: u32, host_events: bool) -> Result<Vec<u8>> {
        self.log_page(lid, len, u32::from(host_events), 1 << 16)
    }

    pub fn smart_log(&mut self) -> Result<Vec<u8>> {
        self.get_log(0x02, 512)
    }

    /// Build the PRP entries for `len` bytes at host address `buf` (PRP list at `list`).
    pub fn prps(&mut self, buf: u64, len: u64, list: u64) -> (u64, u64) {
        let ps = 4096u64;
        let first = len.min(ps - buf % ps);
        let rest = len - first;
        if rest == 0 {
            return (buf, 0);
        }
        let second = buf - buf % ps + ps;
        if rest <= ps {
            return (buf, second);
        }
        let n = rest.div_ceil(ps);
        let mut entries = Vec::with_capacity(n as usize * 8);
        for k in 0..n {
            entries.extend_from_slice(&(second + k * ps).to_le_bytes());
        }
        // One list page holds 512 entries: enough for 2 MiB; MDTS keeps transfers below that
        // in this driver (`submit_batch` refuses larger ones).
        self.ctrl.mem.write(list, &entries);
        (buf, list)
    }

    fn io_sqe(&mut self, cmd: IoCmd, slot: u64, buf: u64) -> Result<Sqe> {
        let list = PRP_LIST_ADDR + 4096 * slot;
        Ok(match cmd {
            IoCmd::Read { slba, nlb }
            | IoCmd::Write { slba, nlb }
            | IoCmd::Append { zslba: slba, nlb } => {
                if nlb == 0 || nlb > 65536 {
                    return Err(job_err("blocks per command", nlb, "1 to 65536".into()));
                }
                let len = nlb as u64 * self.lba_size;
                if len > self.max_xfer.min(2 << 20) {
                    return Err(self.past_the_largest("transfer", len));
                }
                let (prp1, prp2) = self.prps(buf, len, list);
                let op = match cmd {
                    IoCmd::Read { .. } => io::READ,
                    IoCmd::Append { .. } => io::ZONE_APPEND,
                    _ => io::WRITE,
                };
                // A write's data placement directive: DTYPE 2 in CDW12 bits 23:20, the
                // placement identifier in CDW13 bits 31:16.
                let (dtype, dspec) = match self.placement {
                    Some(pid) if op == io::WRITE => (2u32 << 20, (pid as u32) << 16),
                    _ => (0, 0),
                };
                Sqe {
                    nsid: 1,
                    prp1,
                    prp2,
                    cdw10: slba as u32,
                    cdw11: (slba >> 32) as u32,
                    cdw12: (nlb - 1) | dtype,
                    cdw13: dspec,
                    ..Sqe::new(op)
                }
            }
            IoCmd::Flush => Sqe {
                nsid: 1,
                ..Sqe::new(io::FLUSH)
            },
            IoCmd::ZoneSend { slba, action } => Sqe {
                nsid: 1,
                cdw10: slba as u32,
                cdw11: (slba >> 32) as u32,
                cdw13: action as u32,
                ..Sqe::new(io::ZONE_MGMT_SEND)
            },
            IoCmd::Deallocate { slba, nlb } => {
                let mut r = [0u8; 16];
                r[4..8].copy_from_slice(&nlb.to_le_bytes());
                r[8..16].copy_from_slice(&slba.to_le_bytes());
                self.ctrl.mem.write(list, &r);
                Sqe {
                    nsid: 1,
                    prp1: list,
                    cdw10: 0,
                    cdw11: 1 << 2,
                    ..Sqe::new(io::DSM)
                }
            }
        })
    }

    /// Submit raw I/O commands (cids are assigned here) with one doorbell write, and wait for
    /// all their completions (in completion order).
    pub fn submit_raw(&mut self, cmds: &[Sqe]) -> Result<Vec<Done>> {
        self.require_ready()?;
        if cmds.len() as u32 > self.io_size - 1 {
            return Err(batch_too_large(cmds.len(), self.io_size));
        }
        let mut sent = Vec::new();
        for c in cmds {
            let mut c = *c;
            c.cid = self.cid();
            sent.push(c);
        }
        self.submit_with_cids(&sent)
    }

    /// Like [`HostDriver::submit_raw`] but keeps the commands' own cids.
    pub fn submit_with_cids(&mut self, cmds: &[Sqe]) -> Result<Vec<Done>> {
        for c in cmds {
            let slot = IOSQ_ADDR + 64 * self.io_tail as u64;
            self.ctrl.mem.write(slot, &c.to_bytes());
            self.io_tail = (self.io_tail + 1) % self.io_size;
        }
        self.ctrl.write32(reg::DOORBELL_BASE + 8, self.io_tail);
        let mut out = Vec::new();
        // The controller fetches only what the CQ can hold; each head doorbell lets it go on.
        let mut idle = 0;
        while out.len() < cmds.len() {
            let got = self.reap(1, cmds.len() - out.len())?;
            if got.is_empty() {
                idle += 1;
                if idle > 2 {
                    return Err(Error::bad_device(Invalid::unnamed(
                        "I/O commands",
                        crate::error::got(
                            format_args!("{} completed", out.len()),
                            format!("all {} completed", cmds.len()),
                        ),
                    )));
                }
            }
            out.extend(got);
        }
        Ok(out)
    }

    /// Submit a batch of I/O commands with one doorbell; data buffers are one
    /// `max_transfer` slot per command from [`DATA_ADDR`] on, or all at `shared_buf` when
    /// given. Returns each completion, in completion order, with the buffer each used.
    pub fn submit_batch(
        &mut self,
        cmds: &[IoCmd],
        shared_buf: Option<u64>,
    ) -> Result<Vec<(Done, u64)>> {
        let mut sqes = Vec::with_capacity(cmds.len());
        let mut bufs = Vec::with_capacity(cmds.len());
        for (k, &cmd) in cmds.iter().enumerate() {
            let buf = shared_buf.unwrap_or(DATA_ADDR + k as u64 * self.max_xfer);
            let mut s = self.io_sqe(cmd, k as u64, buf)?;
            s.cid = self.cid();
            bufs.push((s.cid, buf));
            sqes.push(s);
        }
        if sqes.len() as u32 > self.io_size - 1 {
            return Err(batch_too_large(sqes.len(), self.io_size));
        }
        let done = self.submit_with_cids(&sqes)?;
        Ok(done
            .into_iter()
            .map(|d| {
                let buf = bufs
                    .iter()
                    .find(|b| b.0 == d.cqe.cid)
                    .map_or(DATA_ADDR, |b| b.1);
                (d, buf)
            })
            .collect())
    }

    fn one(&mut self, cmd: IoCmd, buf: u64, what: &str) -> Result<Done> {
        let s = self.io_sqe(cmd, 0, buf)?;
        let d = self.submit_one(s, what)?;
        check(&d.cqe, what)?;
        Ok(d)
    }

    /// Submit one I/O command and wait for its completion, whatever its status.
    fn submit_one(&mut self, s: Sqe, what: &str) -> Result<Done> {
        self.submit_raw(&[s])?.pop().ok_or_else(|| {
            Error::bad_device(Invalid::unnamed(
                what,
                says("the command got no completion"),
            ))
        })
    }

    /// Write `data` (a whole number of blocks) at `slba`, from host buffer `buf`.
    pub fn write_at(&mut self, slba: u64, data: &[u8], buf: u64) -> Result<Done> {
        let nlb = self.blocks_of(data.len())?;
        self.ctrl.mem.write(buf, data);
        self.one(
            IoCmd::Write { slba, nlb },
            buf,
            &format!("Write at LBA {slba}"),
        )
    }

    /// Read `nlb` blocks at `slba` into host buffer `buf`; returns the data.
    pub fn read_at(&mut self, slba: u64, nlb: u32, buf: u64) -> Result<(Vec<u8>, Done)> {
        let d = self.one(
            IoCmd::Read { slba, nlb },
            buf,
            &format!("Read at LBA {slba}"),
        )?;
        let len = nlb as usize * self.lba_size as usize;
        Ok((self.ctrl.mem.read_vec(buf, len), d))
    }

    pub fn write(&mut self, slba: u64, data: &[u8]) -> Result<Done> {
        self.write_at(slba, data, DATA_ADDR)
    }

    pub fn read(&mut self, slba: u64, nlb: u32) -> Result<Vec<u8>> {
        Ok(self.read_at(slba, nlb, DATA_ADDR)?.0)
    }

    pub fn flush(&mut self) -> Result<Done> {
        self.one(IoCmd::Flush, DATA_ADDR, "Flush")
    }

    pub fn deallocate(&mut self, slba: u64, nlb: u32) -> Result<Done> {
        self.one(
            IoCmd::Deallocate { slba, nlb },
            DATA_ADDR,
            &format!("Dataset Management (deallocate) at LBA {slba}"),
        )
    }

    fn blocks_of(&self, len: usize) -> Result<u32> {
        let lba = self.lba_size as usize;
        if len == 0 || !len.is_multiple_of(lba) {
            return Err(job_err(
                "data length",
                format_args!("{len} bytes"),
                format!("a non-zero multiple of the {lba}-byte block"),
            ));
        }
        u32::try_from(len / lba).map_err(|_| {
            job_err(
                "data length",
                format_args!("{len} bytes"),
                format!("at most {} blocks of {lba} bytes", u32::MAX),
            )
        })
    }

    /// A transfer (`what`) of `len` bytes past the largest one command carries.
    fn past_the_largest(&self, what: &str, len: u64) -> Error {
        job_err(
            what,
            format_args!("{len} bytes"),
            format!(
                "at most the largest transfer, {} bytes",
                self.max_xfer.min(2 << 20)
            ),
        )
    }

    /// Shut the controller down (CC.SHN = 01b) and wait for SHST = complete.
    pub fn shutdown(&mut self) -> Result<()> {
        let cc = self.ctrl.read32(reg::CC);
        self.ctrl.write32(reg::CC, (cc & !(3 << 14)) | (1 << 14));
        for _ in 0..POLLS {
            if (self.ctrl.read32(reg::CSTS) >> 2) & 3 == 0b10 {
                return Ok(());
            }
        }
        Err(Error::bad_device(Invalid::unnamed(
            "CSTS.SHST",
            got(
                format_args!(
                    "{:02b}b after {POLLS} polls",
                    (self.ctrl.read32(reg::CSTS) >> 2) & 3
                ),
                "10b (shutdown complete)",
            ),
        )))
    }
}

fn wait_csts(ctrl: &Controller, rdy: u32) -> Result<()> {
    for _ in 0..POLLS {
        let csts = ctrl.read32(reg::CSTS);
        if csts & 2 != 0 {
            return Err(Error::bad_device(Invalid::unnamed(
                "NVMe controller bring-up",
                says(format!(
                    "fatal status (CSTS.CFS): {}",
                    ctrl.fatal_reason().unwrap_or("no reason given")
                )),
            )));
        }
        if csts & 1 == rdy {
            return Ok(());
        }
    }
    Err(Error::bad_device(Invalid::unnamed(
        "CSTS.RDY",
        got(
            format_args!("{} after {POLLS} polls", ctrl.read32(reg::CSTS) & 1),
            rdy.to_string(),
        ),
    )))
}

/// A batch of `n` commands for an I/O queue of `io_size` entries, which holds one less.
fn batch_too_large(n: usize, io_size: u32) -> Error {
    job_err(
        "batch",
        format_args!("{n} commands"),
        format!("at most {} (what the I/O queue holds)", io_size - 1),
    )
}

/// An error unless the completion is successful.
pub fn check(cqe: &Cqe, what: &str) -> Result<()> {
    if cqe.status.is_success() {
        Ok(())
    } else {
        // The status is the value; the command is what the message opens with.
        let mut i = Invalid::unnamed(
            what,
            says(format!("the controller answered {}", cqe.status)),
        );
        i.value = Some(cqe.status.name().to_string());
        Err(Error::bad_job(i))
    }
}

/// The LBA a successful Zone Append wrote its data at (DW0 and DW1 of its completion).
pub fn appended_lba(d: &Done) -> u64 {
    d.cqe.dw0 as u64 | ((d.cqe.dw1 as u64) << 32)
}

/// The completion status of a command, for callers that expect a failure.
pub fn status_of(d: &Done) -> Status {
    d.cqe.status
}
