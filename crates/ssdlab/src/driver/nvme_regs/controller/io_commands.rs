//! I/O commands (NVM command set): PRP transfers (§4.3) between host memory and the data store,
//! and each doorbell's batch of reads, writes, flushes and deallocations, timed by the device
//! model.

use super::*;

impl Controller {
    // ---------------------------------------------------------------------------------------
    // PRP transfers (§4.3)

    /// The host memory segments of a `len`-byte transfer described by PRP1/PRP2.
    pub(super) fn prp_segments(
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

    pub(super) fn dma_to_host(&mut self, c: &Sqe, data: &[u8]) -> std::result::Result<(), Status> {
        let segs = self.prp_segments(c.prp1, c.prp2, data.len() as u64)?;
        let mut at = 0usize;
        for (a, n) in segs {
            self.mem.write(a, &data[at..at + n as usize]);
            at += n as usize;
        }
        Ok(())
    }

    pub(super) fn dma_from_host(&self, c: &Sqe, len: u64) -> std::result::Result<Vec<u8>, Status> {
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
    // I/O commands (NVM command set)

    pub(super) fn run_io_batch(&mut self, sqid: u16, cmds: Vec<Sqe>) {
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
                undo: None,
                stream: 0,
                all_zones: false,
                zone_after: ZoneAfter::Nothing,
                result: 0,
            };
            if !cids.insert(c.cid) {
                e.status = Status::CID_CONFLICT;
            } else {
                match self.exec_io(c, &mut e) {
                    Ok(ops) => {
                        for (op, off, len) in ops {
                            let at = t0.max(self.sys.now());
                            let flags = if e.all_zones {
                                Flags::ALL_ZONES
                            } else {
                                Flags::NONE
                            };
                            let r = Request {
                                op,
                                offset: off,
                                len,
                                queue: 0,
                                flags: flags.with_stream(e.stream),
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
                    for (id, t, st) in done {
                        if let Ok(k) = ids.binary_search_by_key(&id, |x| x.0) {
                            let e = &mut entries[ids[k].1];
                            e.pending = e.pending.saturating_sub(1);
                            e.done = e.done.max(t);
                            if st != crate::device::Status::Ok && e.status.is_success() {
                                e.status = Status::of_device(st);
                                if st == crate::device::Status::Uncorrectable {
                                    self.smart.media_errors += 1;
                                }
                            }
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
            if self.zoned {
                self.finish_zone_commands(&mut entries, &ids);
            }
        }
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by_key(|&i| (entries[i].done, i));
        let mut last = t0;
        for e in entries.iter_mut() {
            if let (false, Some((slba, old))) = (e.status.is_success(), e.undo.take()) {
                self.store_mut().write(slba, &old);
            }
        }
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
            self.post(sqid, cid, e.result, status, t0, done);
        }
        self.smart.busy += last - t0;
        self.clock = self.clock.max(last);
    }

    /// A write's stream, from its directive (NVMe 1.3, the Write command's DTYPE in CDW12 bits
    /// 23:20 and DSPEC in CDW13 bits 31:16; §9.3, the Streams directive). No directive (DTYPE 0) is stream 0; the Streams directive
    /// (DTYPE 1) names stream DSPEC, which must be below `ftl.streams` (and 0 with
    /// `ftl.stream_policy = "hot-cold"`, which places writes itself); any other directive
    /// type, or a stream out of range, is Invalid Field, as for a directive not enabled. The
    /// Directive Send and Receive commands (enabling, allocating streams) are not modelled:
    /// the config's streams are open from the start.
    ///
    /// With `[fdp]` the data placement directive (DTYPE 2, TP4146) names a placement
    /// identifier in DSPEC: its handle is the stream. One that names no handle places the
    /// write with handle 0 and logs an Invalid Placement Identifier event, as the
    /// specification has it (QEMU's emulation does the same); without `[fdp]` DTYPE 2 is
    /// Invalid Field.
    fn write_stream(&mut self, c: &Sqe) -> std::result::Result<u8, Status> {
        let dtype = (c.cdw12 >> 20) & 0xF;
        let dspec = c.cdw13 >> 16;
        match dtype {
            0 => Ok(0),
            2 if self.sys.config().fdp.is_some() => {
                match u8::try_from(dspec)
                    .ok()
                    .filter(|&s| self.sys.check_stream_id(s).is_ok())
                {
                    Some(s) => Ok(s),
                    None => {
                        self.log_invalid_pid(dspec as u16);
                        Ok(0)
                    }
                }
            }
            // A drive with FDP has no Streams directive (the specification keeps the two
            // apart): Invalid Field, below.
            1 if self.sys.config().fdp.is_none() => {
                let s = u8::try_from(dspec).map_err(|_| Status::INVALID_FIELD)?;
                self.sys
                    .check_stream_id(s)
                    .map_err(|_| Status::INVALID_FIELD)?;
                Ok(s)
            }
            _ => Err(Status::INVALID_FIELD),
        }
    }

    /// The first LBA (CDW10–11) and byte count (CDW12 bits 15:0, 0's based blocks) of a
    /// command that moves data: within the namespace (else LBA Out of Range) and at most the
    /// largest transfer (else Invalid Field).
    fn data_range(&self, c: &Sqe) -> std::result::Result<(u64, u64), Status> {
        let slba = c.cdw10 as u64 | ((c.cdw11 as u64) << 32);
        let nlb = (c.cdw12 & 0xFFFF) as u64 + 1;
        if slba.checked_add(nlb).is_none_or(|end| end > self.nsze) {
            return Err(Status::LBA_OUT_OF_RANGE);
        }
        let bytes = nlb * self.lba_size as u64;
        if bytes > self.max_xfer {
            return Err(Status::INVALID_FIELD);
        }
        Ok((slba, bytes))
    }

    /// Validate an I/O command and do its functional part; return the model requests that
    /// time it.
    pub(super) fn exec_io(
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
                let (slba, bytes) = self.data_range(c)?;
                if c.opcode == io::WRITE {
                    e.stream = self.write_stream(c)?;
                    if self.sys.read_only() {
                        return Err(Status::WRITE_PROTECTED);
                    }
                    let data = self.dma_from_host(c, bytes)?;
                    // A write the drive may refuse (a worn medium; a zoned drive's write off
                    // its zone's write pointer) must leave the data as it was.
                    if self.sys.config().reliability.is_some() || self.zoned {
                        let mut old = vec![0u8; bytes as usize];
                        self.store_mut().read(slba, &mut old);
                        e.undo = Some((slba, old));
                    }
                    self.store_mut().write(slba, &data);
                    e.kind = IoKind::Write;
                } else {
                    let mut data = vec![0u8; bytes as usize];
                    self.store_mut().read(slba, &mut data);
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
                if c.cdw11 & (1 << 2) != 0 && self.sys.read_only() {
                    return Err(Status::WRITE_PROTECTED);
                }
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
                    self.store_mut().deallocate(slba, n);
                    ops.push((Op::Trim, slba * lba, n * lba));
                }
                Ok(ops)
            }
            io::ZONE_MGMT_SEND | io::ZONE_MGMT_RECV | io::ZONE_APPEND
                if self.zone_commands_enabled() =>
            {
                if c.nsid != 1 {
                    return Err(Status::INVALID_NAMESPACE);
                }
                self.exec_zone_command(c, e)
            }
            _ => Err(Status::INVALID_OPCODE),
        }
    }

    // ---------------------------------------------------------------------------------------
    // Zoned Namespace Command Set (NVMe ZNS 1.1, "I/O Commands")

    /// Zone Management Send (79h), Zone Management Receive (7Ah) and Zone Append (7Dh). The
    /// zone state machine is the drive's (`ctrl::zones` inside the model): a send or an append
    /// becomes a model request whose completion carries the drive's status; a receive reads
    /// the zones' states as the commands before it left them.
    fn exec_zone_command(
        &mut self,
        c: &Sqe,
        e: &mut IoEntry,
    ) -> std::result::Result<Vec<(Op, u64, u64)>, Status> {
        use crate::device::{ZoneAction, ZoneState};
        let lba = self.lba_size as u64;
        let slba = c.cdw10 as u64 | ((c.cdw11 as u64) << 32);
        match c.opcode {
            io::ZONE_MGMT_SEND => {
                // CDW13: Zone Send Action 7:0, Select All bit 8. Set Zone Descriptor Extension
                // (10h) needs descriptor extensions, which this drive has none of (ZDES 0).
                let action = ZoneAction::of_code(c.cdw13 as u8).ok_or(Status::INVALID_FIELD)?;
                let all = c.cdw13 & (1 << 8) != 0;
                if !all && slba >= self.nsze {
                    return Err(Status::LBA_OUT_OF_RANGE);
                }
                if self.sys.read_only() && action != ZoneAction::Close {
                    return Err(Status::WRITE_PROTECTED);
                }
                e.all_zones = all;
                if action == ZoneAction::Reset {
                    e.zone_after = ZoneAfter::Reset((!all).then_some(slba));
                }
                Ok(vec![(action.op(), if all { 0 } else { slba * lba }, 0)])
            }
            io::ZONE_MGMT_RECV => {
                // CDW12: Number of Dwords, 0's based. CDW13: Zone Receive Action 7:0 (00h
                // Report Zones; 01h Extended Report Zones needs descriptor extensions),
                // Reporting Options 15:8, Partial Report bit 16.
                let bytes = (c.cdw12 as u64 + 1) * 4;
                if bytes > self.max_xfer {
                    return Err(Status::INVALID_FIELD);
                }
                if c.cdw13 & 0xFF != 0 {
                    return Err(Status::INVALID_FIELD);
                }
                let filter = ZoneState::of_report_option((c.cdw13 >> 8) as u8)
                    .map_err(|_| Status::INVALID_FIELD)?;
                let partial = c.cdw13 & (1 << 16) != 0;
                if slba >= self.nsze {
                    return Err(Status::LBA_OUT_OF_RANGE);
                }
                let zones = &self.sys.backend().zoned().expect("a zoned drive").zones;
                let max = (bytes.saturating_sub(64) / 64) as usize;
                let report = zones
                    .report(slba, filter, partial, max)
                    .map_err(|_| Status::INVALID_FIELD)?;
                let mut data = vec![0u8; 64 + 64 * report.zones.len()];
                put_u64(&mut data, 0, report.nr_zones);
                for (k, d) in report.zones.iter().enumerate() {
                    let at = 64 + 64 * k;
                    data[at] = 0x2; // Zone Type: Sequential Write Required
                    data[at + 1] = d.state.code() << 4;
                    put_u64(&mut data, at + 8, d.zcap);
                    put_u64(&mut data, at + 16, d.zslba);
                    put_u64(&mut data, at + 24, d.wp);
                }
                data.resize(bytes as usize, 0);
                self.dma_to_host(c, &data)?;
                Ok(Vec::new())
            }
            _ => {
                // Zone Append: CDW10–11 the zone's first LBA, CDW12 bits 15:0 the blocks, 0's
                // based, as a Write's. ZASL is 0 (the MDTS limit applies).
                let (slba, bytes) = self.data_range(c)?;
                if self.sys.read_only() {
                    return Err(Status::WRITE_PROTECTED);
                }
                e.zone_after = ZoneAfter::Append(self.dma_from_host(c, bytes)?);
                e.kind = IoKind::Write;
                e.units512 = bytes / 512;
                Ok(vec![(Op::Append, slba * lba, bytes)])
            }
        }
    }

    /// After the model ran a batch: store each successful append's data where the drive put
    /// it (its LBA is the command's result) and empty the zones a successful reset emptied.
    fn finish_zone_commands(&mut self, entries: &mut [IoEntry], ids: &[(u32, usize)]) {
        let lba = self.lba_size as u64;
        for (id, offset) in self.sys.take_append_offsets() {
            if let Ok(k) = ids.binary_search_by_key(&id, |x| x.0) {
                let e = &mut entries[ids[k].1];
                e.result = offset / lba;
            }
        }
        for e in entries.iter_mut().filter(|e| e.status.is_success()) {
            match std::mem::replace(&mut e.zone_after, ZoneAfter::Nothing) {
                ZoneAfter::Nothing => {}
                ZoneAfter::Append(data) => {
                    self.store_mut().write(e.result, &data);
                }
                ZoneAfter::Reset(one) => {
                    let zones = &self.sys.backend().zoned().expect("a zoned drive").zones;
                    let zl = zones.zone_lbas();
                    // An empty zone holds no data: after a reset of all, every empty zone's
                    // blocks read as zeros (those already empty change nothing).
                    let empty: Vec<u64> = match one {
                        Some(slba) => vec![slba - slba % zl],
                        None => (0..zones.count())
                            .filter(|&z| zones.state(z) == crate::device::ZoneState::Empty)
                            .map(|z| z as u64 * zl)
                            .collect(),
                    };
                    for start in empty {
                        self.store_mut().deallocate(start, zl);
                    }
                }
            }
        }
    }
}
