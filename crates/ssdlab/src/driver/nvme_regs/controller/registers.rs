//! The controller's register side: PCI configuration space, BAR0 registers (CAP, VS, CC/CSTS,
//! AQA/ASQ/ACQ, INTMS/INTMC), enable and reset, SQ/CQ doorbells, completion posting, the error
//! log, and interrupts (pin and MSI-X).

use super::*;

impl Controller {
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

    pub(super) fn doorbell_stride(&self) -> u64 {
        4 << ((self.cap >> 32) & 0xF)
    }

    pub(super) fn reg_read32(&self, off: u64) -> u32 {
        let tbl = MSIX_TABLE_OFFSET as u64;
        let pba = MSIX_PBA_OFFSET as u64;
        match off {
            0x00 => self.cap as u32,
            0x04 => (self.cap >> 32) as u32,
            0x08 => self.version(),
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

    pub(super) fn reg_write32(&mut self, off: u64, v: u32) {
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

    pub(super) fn write_cc(&mut self, v: u32) {
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

    pub(super) fn set_fatal(&mut self, why: String) {
        self.csts = (self.csts & !1) | 2;
        self.fatal = Some(why);
    }

    pub(super) fn enable(&mut self) {
        self.csts &= !0xC; // a new enable clears a previous shutdown status
        let css = (self.cc >> 4) & 7;
        let mps = (self.cc >> 7) & 0xF;
        let ams = (self.cc >> 11) & 7;
        let iosqes = (self.cc >> 16) & 0xF;
        let iocqes = (self.cc >> 20) & 0xF;
        let asqs = (self.aqa & 0xFFF) + 1;
        let acqs = ((self.aqa >> 16) & 0xFFF) + 1;
        let page = 4096u64 << mps.min(MPSMAX);
        // CC.CSS (NVMe 2.0): 000b the NVM command set only, 110b every I/O command set CAP.CSS
        // names (a zoned drive's; its zone commands need it).
        let problem = if css != 0 && !(css == 0b110 && self.zoned) {
            Some(if self.zoned {
                format!("CC.CSS = {css}, expected 0 (NVM command set) or 6 (all I/O command sets)")
            } else {
                format!("CC.CSS = {css}, expected 0 (NVM command set)")
            })
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
    pub(super) fn reset(&mut self) {
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

    pub(super) fn sq_doorbell(&mut self, qid: u16, tail: u32) {
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

    pub(super) fn cq_doorbell(&mut self, qid: u16, head: u32) {
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
    pub(super) fn process_sq(&mut self, qid: u16) {
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

    pub(super) fn post(
        &mut self,
        sqid: u16,
        cid: u16,
        result: u64,
        status: Status,
        submitted: SimTime,
        t: SimTime,
    ) {
        // The command's result: DW0, and DW1 for a 64-bit one (a Zone Append's LBA).
        let (dw0, dw1) = (result as u32, (result >> 32) as u32);
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
            dw1,
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

    pub(super) fn log_error(&mut self, sqid: u16, cid: u16, status: Status) {
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

    pub(super) fn msix_send(&mut self, iv: u16, t: SimTime) {
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

    pub(super) fn msix_deliver_pending(&mut self) {
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
}
