//! Admin commands (§5): queue creation and deletion, Identify, Get Log Page, Set and Get
//! Features.

use super::*;

impl Controller {
    // ---------------------------------------------------------------------------------------
    // Admin commands (§5)

    pub(super) fn run_admin(&mut self, c: Sqe) {
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
        self.post(0, c.cid, dw0 as u64, st, submitted, t);
    }

    pub(super) fn queue_size(&self, cdw10: u32) -> std::result::Result<u32, Status> {
        let n = (cdw10 >> 16) + 1;
        if !(2..=MQES + 1).contains(&n) {
            return Err(Status::INVALID_QSIZE);
        }
        Ok(n)
    }

    pub(super) fn create_cq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
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

    pub(super) fn create_sq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
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

    pub(super) fn delete_sq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let qid = (c.cdw10 & 0xFFFF) as usize;
        if qid == 0 || qid >= self.sqs.len() || self.sqs[qid].is_none() {
            return Err(Status::INVALID_QID);
        }
        self.sqs[qid] = None;
        Ok(0)
    }

    pub(super) fn delete_cq(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
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

    pub(super) fn identify(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
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
                // Namespace Identification Descriptor list (§5.15.2.3): one NGUID (type 2),
                // and on a zoned drive its Command Set Identifier (type 4, NVMe 2.0), which
                // tells a host the namespace is zoned.
                let mut b = vec![0u8; 4096];
                b[0] = 2;
                b[1] = 16;
                b[4..20].copy_from_slice(&self.nguid());
                if self.zoned {
                    b[20] = 4;
                    b[21] = 1;
                    b[24] = super::super::csi::ZONED;
                }
                b
            }
            // NVMe 2.0's I/O command set specific structures: only a zoned drive's controller
            // reports 2.0 (a 1.4 controller has these CNS values reserved: Invalid Field).
            0x05 | 0x06 | 0x1C if self.zoned => self.identify_command_set(c, cns)?,
            _ => return Err(Status::INVALID_FIELD),
        };
        self.dma_to_host(c, &data)?;
        Ok(0)
    }

    /// Identify CNS 05h (I/O Command Set specific Identify Namespace), 06h (… Identify
    /// Controller) and 1Ch (I/O Command Set data structure) of a zoned drive. The CSI is
    /// CDW11 bits 31:24. Fields follow the ZNS Command Set specification 1.1: its Identify
    /// Namespace (ZOC, OZCS, MAR, MOR, RRL, FRL, and the LBA Format Extensions from byte 2816,
    /// 16 bytes each: ZSZE, ZDES) and Identify Controller (ZASL). For the NVM command set (CSI
    /// 00h) both structures are zeros: no protection information or storage tags, and no
    /// Verify, Write Zeroes or Write Uncorrectable size limits reported.
    fn identify_command_set(&self, c: &Sqe, cns: u32) -> std::result::Result<Vec<u8>, Status> {
        use super::super::csi;
        let id = (c.cdw11 >> 24) as u8;
        let mut b = vec![0u8; 4096];
        match (cns, id) {
            (0x1C, _) => {
                // One I/O command set combination, index 0: NVM (bit 0) and Zoned (bit 2).
                put_u64(&mut b, 0, 1 | (1 << csi::ZONED));
            }
            (0x05, csi::NVM) | (0x05, csi::ZONED) if c.nsid != 1 => {
                return Err(Status::INVALID_NAMESPACE)
            }
            (0x05, csi::NVM) | (0x06, csi::NVM) => {}
            (0x05, csi::ZONED) => {
                let z = &self.sys.backend().zoned().expect("a zoned drive").zones;
                // OZCS bit 0: Read Across Zone Boundaries (reads may span zones here).
                put_u16(&mut b, 2, 1);
                // MAR and MOR are 0's based; all ones means no limit (the config's 0).
                let limit = |n: u32| if n == 0 { u32::MAX } else { n - 1 };
                put_u32(&mut b, 4, limit(z.max_active()));
                put_u32(&mut b, 8, limit(z.max_open()));
                let zone_bytes = z.zone_lbas() * self.lba_size as u64;
                for (k, lba) in [4096u64, 512].iter().enumerate() {
                    put_u64(&mut b, 2816 + 16 * k, zone_bytes / lba);
                }
            }
            // ZASL 0: the Zone Append size limit is MDTS.
            (0x06, csi::ZONED) => {}
            _ => return Err(Status::INVALID_FIELD),
        }
        Ok(b)
    }

    pub(super) fn nguid(&self) -> [u8; 16] {
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
        put_u32(&mut b, co::VER, self.version());
        put_u32(&mut b, co::OAES, 0);
        if self.sys.config().fdp.is_some() {
            // CTRATT bit 19: Flexible Data Placement supported.
            put_u32(&mut b, co::CTRATT, 1 << 19);
        }
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
        put_u64(&mut b, no::NUSE, self.store().allocated());
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
        use crate::driver::nvme_regs::structs::smart_off as so;
        let mut b = vec![0u8; 512];
        let mut warn = 0u8;
        if TEMPERATURE_K >= self.features.temp_threshold {
            warn |= 1 << 1; // temperature above the over-temperature threshold
        }
        // Spare and wear from the model's bad-block state (`[reliability]`); without it no
        // block retires, so the spare stays whole.
        let spare = self.sys.available_spare_percent().floor() as u8;
        if spare < SPARE_THRESHOLD {
            warn |= 1 << 0; // available spare below the threshold
        }
        if self.smart.media_errors > 0 {
            warn |= 1 << 2; // reliability degraded by media errors
        }
        if self.sys.read_only() {
            warn |= 1 << 3; // media placed in read-only mode
        }
        b[so::CRITICAL_WARNING] = warn;
        put_u16(&mut b, so::TEMPERATURE, TEMPERATURE_K);
        b[so::AVAIL_SPARE] = spare;
        b[so::SPARE_THRESH] = SPARE_THRESHOLD;
        // With a wear model, the mean wear of the good blocks against their P/E limit; else
        // the most-erased block against the rated P/E cycles.
        let used = match self.sys.percentage_used() {
            Some(p) => p.ceil() as u64,
            None => self.sys.max_erase_count() * 100 / self.rated_pe,
        };
        b[so::PERCENT_USED] = used.min(255) as u8;
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
        put_u128(&mut b, so::MEDIA_ERRORS, self.smart.media_errors);
        put_u128(&mut b, so::NUM_ERR_LOG_ENTRIES, self.error_count as u128);
        put_u16(&mut b, so::TEMP_SENSOR_1, TEMPERATURE_K);
        b
    }

    pub(super) fn get_log_page(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
        let lid = c.cdw10 & 0xFF;
        let numd = (((c.cdw11 & 0xFFFF) as u64) << 16 | (c.cdw10 >> 16) as u64) + 1;
        let len = numd * 4;
        let lpo = c.cdw12 as u64 | ((c.cdw13 as u64) << 32);
        if lpo & 3 != 0 || len > self.max_xfer {
            return Err(Status::INVALID_FIELD);
        }
        // LSP (bits 11:8), and LSI (CDW11 bits 31:16): the FDP pages' endurance group, 1.
        let lsp = (c.cdw10 >> 8) & 0xF;
        if let Some(page) = self.fdp_log(lid, lsp & 1 == 1) {
            if c.cdw11 >> 16 != 1 {
                return Err(Status::INVALID_FIELD);
            }
            let log = page?;
            return self.log_to_host(c, &log, lpo, len);
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
        self.log_to_host(c, &log, lpo, len)
    }

    /// `len` bytes of `log` from offset `lpo` to the command's buffer (zeros past its end).
    fn log_to_host(
        &mut self,
        c: &Sqe,
        log: &[u8],
        lpo: u64,
        len: u64,
    ) -> std::result::Result<u32, Status> {
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

    pub(super) fn set_features(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
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

    pub(super) fn get_features(&mut self, c: &Sqe) -> std::result::Result<u32, Status> {
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
}
