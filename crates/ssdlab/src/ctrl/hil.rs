//! Host interface layer: NVMe command fetch with round-robin arbitration in bursts, firmware
//! time per command, the split of commands into mapping-unit transactions, and data DMA.

use crate::error::Result;
use crate::sim::SimTime;
use crate::system::{Event, System, Txn, TxnKind};
use crate::workload::Op;

/// NVMe submission queue entry size.
const SQE_BYTES: u64 = 64;

/// Logical units covered by a byte range, with the bytes of each that the range covers.
#[inline]
fn units_of(unit: u64, offset: u64, len: u64) -> impl Iterator<Item = (u64, u64)> {
    let first = offset / unit;
    let last = (offset + len - 1) / unit;
    let end = offset + len;
    (first..=last).map(move |u| {
        let s = (u * unit).max(offset);
        let e = ((u + 1) * unit).min(end);
        (u, e - s)
    })
}

impl System {
    pub(crate) fn on_submit(&mut self, now: SimTime, cmd: u32) {
        let c = self.cmds.get(cmd);
        // The command is dispatched a fetch and some firmware time from now: start the map
        // look-up's cache misses early (the simulated time is unaffected).
        let first = c.offset / self.geo.unit_bytes;
        if first < self.ftl.logical_units() {
            self.ftl.prefetch(first);
        }
        if self.proto.is_some() {
            // The command came over the interface itself: no queue to fetch from.
            let (_, end) = self
                .ctrl_cpu
                .reserve(now, self.cfg.controller.cmd_overhead.0);
            self.q.push(end, Event::Dispatch { cmd });
            return;
        }
        let sq = c.sq;
        self.sqs[sq as usize].push_back(cmd);
        if self.fetching.is_none() {
            self.start_fetch(now);
        }
    }

    /// Round-robin over the SQs with entries; fetch up to one arbitration burst from the next.
    fn start_fetch(&mut self, now: SimTime) {
        let n = self.sqs.len() as u32;
        for k in 0..n {
            let sq = (self.rr + k) % n;
            let pending = self.sqs[sq as usize].len() as u32;
            if pending == 0 {
                continue;
            }
            self.rr = (sq + 1) % n;
            let count = pending.min(self.cfg.interface.arbitration_burst);
            let lat = self.link.latency;
            // A memory read request up, the SQ entries back down as completions.
            let (_, req) = self.link_up.reserve(now, self.link.wire_time(0));
            let (_, data) = self
                .link_down
                .reserve(req + lat, self.link.wire_time(SQE_BYTES * count as u64));
            self.fetching = Some((sq, count));
            self.q.push(data + lat, Event::FetchDone);
            return;
        }
    }

    pub(crate) fn on_fetch_done(&mut self, now: SimTime) {
        let (sq, count) = self.fetching.take().expect("a fetch was under way");
        let overhead = self.cfg.controller.cmd_overhead.0;
        for _ in 0..count {
            let cmd = self.sqs[sq as usize]
                .pop_front()
                .expect("fetched entries are queued");
            let c = self.cmds.get(cmd);
            if c.op == Op::Read {
                self.ftl
                    .prefetch_read_target(c.offset / self.geo.unit_bytes);
            }
            let (_, end) = self.ctrl_cpu.reserve(now, overhead);
            self.q.push(end, Event::Dispatch { cmd });
        }
        self.start_fetch(now);
    }

    pub(crate) fn on_dispatch(&mut self, now: SimTime, cmd: u32) -> Result<()> {
        let c = self.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        match op {
            Op::Read => self.dispatch_read(now, cmd, offset, len)?,
            Op::Write => {
                // The map entry was prefetched at the doorbell; now warm where it points, for
                // the FTL write when the data is in.
                self.ftl.prefetch_target(offset / self.geo.unit_bytes);
                if self.proto.is_some() {
                    let end = self.write_data_in(now, cmd);
                    self.q.push(end, Event::WriteDataIn { cmd });
                    return Ok(());
                }
                // The controller pulls the data: a read request up, the data down.
                let lat = self.link.latency;
                let (_, req) = self.link_up.reserve(now, self.link.wire_time(0));
                let (_, data) = self.link_down.reserve(req + lat, self.link.wire_time(len));
                self.q.push(data + lat, Event::WriteDataIn { cmd });
            }
            Op::Trim => {
                let unit = self.geo.unit_bytes;
                for (lpn, covered) in units_of(unit, offset, len) {
                    // Only whole units can be unmapped; a partial one keeps its data.
                    if covered == unit {
                        self.ftl.trim(lpn);
                        if let Some(dc) = self.check.as_mut() {
                            dc.trimmed(lpn);
                        }
                        if let Some(bm) = self.cache.as_mut() {
                            bm.buf.discard(lpn);
                        }
                    }
                }
                self.complete_cmd(now, cmd);
            }
            Op::Flush => match &self.cache {
                Some(bm) if bm.write_back() => self.cache_flush_command(now, cmd)?,
                // No volatile data to write back: done once the firmware saw it.
                _ => self.complete_cmd(now, cmd),
            },
        }
        Ok(())
    }

    fn dispatch_read(&mut self, now: SimTime, cmd: u32, offset: u64, len: u64) -> Result<()> {
        if self.cfg.controller.skip_media {
            // Firmware answers at once: only the data phase remains.
            let end = self.read_data_out(now, cmd, len, 0);
            self.complete_cmd(end, cmd);
            return Ok(());
        }
        let mut txns = 0u32;
        let mut direct_bytes = 0u64;
        let mut direct_at = now;
        let mut all_hit = self.cache.is_some();
        for (lpn, covered) in units_of(self.geo.unit_bytes, offset, len) {
            self.counters.host_units_read += 1;
            if let Some(dc) = self.check.as_mut() {
                let slot = self.cache.as_ref().and_then(|bm| bm.buf.find(lpn));
                let pun = if slot.is_none() {
                    self.ftl.lookup(lpn)
                } else {
                    None
                };
                dc.read(lpn, slot, pun);
            }
            if self.cache.is_some() {
                if let Some(t) = self.cache_read(now, lpn, covered) {
                    direct_bytes += covered;
                    direct_at = direct_at.max(t);
                    continue;
                }
                all_hit = false;
            }
            match self.ftl.lookup(lpn) {
                None => {
                    self.counters.unmapped_reads += 1;
                    direct_bytes += covered;
                }
                Some(pun) if !self.ftl.is_programmed(pun) => {
                    // Still on its way to NAND: served from the controller's write buffer.
                    self.counters.buffer_reads += 1;
                    direct_bytes += covered;
                }
                Some(pun) => {
                    txns += 1;
                    let plane = self.geo.plane_of_block(self.geo.block_of_unit(pun));
                    let t = self.txns.insert(Txn {
                        kind: TxnKind::HostRead,
                        cmd,
                        pun,
                        plane,
                        host_bytes: covered as u32,
                        epoch: 0,
                        aux: lpn as u32,
                    });
                    self.enqueue(now, t, 0);
                }
            }
        }
        let c = self.cmds.get_mut(cmd);
        c.txns_left = txns;
        if direct_bytes > 0 {
            let end = self.read_data_out(direct_at, cmd, direct_bytes, 0);
            let c = self.cmds.get_mut(cmd);
            c.data_done = c.data_done.max(end);
        }
        if txns == 0 {
            let done = self.cmds.get(cmd).data_done.max(now);
            self.complete_cmd(done, cmd);
        }
        if all_hit {
            self.maybe_preemptive_flush(now)?;
        }
        Ok(())
    }

    pub(crate) fn on_write_data_in(&mut self, now: SimTime, cmd: u32) -> Result<()> {
        if self.cfg.controller.skip_media {
            self.complete_cmd(now, cmd);
            return Ok(());
        }
        let c = self.cmds.get(cmd);
        let unit = self.geo.unit_bytes;
        let mut rmw = 0;
        for (lpn, covered) in units_of(unit, c.offset, c.len) {
            // A whole unit, or one whose old data is in the cache buffer, needs no read.
            if covered == unit
                || self
                    .cache
                    .as_ref()
                    .is_some_and(|bm| bm.write_back() && bm.buf.find(lpn).is_some())
            {
                continue;
            }
            // A partial unit keeps the rest of its old data: read it first.
            if let Some(pun) = self.ftl.lookup(lpn) {
                if self.ftl.is_programmed(pun) {
                    let plane = self.geo.plane_of_block(self.geo.block_of_unit(pun));
                    let t = self.txns.insert(Txn {
                        kind: TxnKind::RmwRead,
                        cmd,
                        pun,
                        plane,
                        host_bytes: 0,
                        epoch: 0,
                        aux: 0,
                    });
                    rmw += 1;
                    self.enqueue(now, t, 0);
                }
            }
        }
        if rmw > 0 {
            self.cmds.get_mut(cmd).rmw_left = rmw;
            return Ok(());
        }
        self.issue_write_txns(now, cmd)
    }

    /// Map every unit of a write command to a new physical unit and queue its program.
    pub(crate) fn issue_write_txns(&mut self, now: SimTime, cmd: u32) -> Result<()> {
        if self.cache.as_ref().is_some_and(|bm| bm.write_back()) {
            return self.cache_write(now, cmd);
        }
        let c = self.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        let unit = self.geo.unit_bytes;
        self.cmds.get_mut(cmd).txns_left = (units_of(unit, offset, len).count()) as u32;
        for (lpn, covered) in units_of(unit, offset, len) {
            let pun = self.ftl.write(lpn)?;
            if let Some(dc) = self.check.as_mut() {
                dc.write_to_nand(lpn, pun);
            }
            if self.cache.is_some() {
                // Write-through: the data goes into the buffer as well, now.
                self.cache_write_through(now, lpn, pun);
            }
            let block = self.geo.block_of_unit(pun);
            let t = self.txns.insert(Txn {
                kind: TxnKind::HostWrite,
                cmd,
                pun,
                plane: self.geo.plane_of_block(block),
                host_bytes: covered as u32,
                epoch: self.ftl.blocks()[block as usize].epoch,
                aux: lpn as u32,
            });
            self.enqueue(now, t, 1);
            self.drain_gc(now);
        }
        Ok(())
    }

    /// A read transaction's data is decoded at `ready`: move it to the host (or, for a
    /// read-modify-write, count it) and complete the command when it was the last.
    pub(crate) fn read_txn_done(&mut self, ready: SimTime, txn: u32) {
        let t = self.txns.remove(txn);
        let cmd = t.cmd;
        if t.kind == TxnKind::RmwRead {
            let c = self.cmds.get_mut(cmd);
            c.rmw_left -= 1;
            if c.rmw_left == 0 {
                self.q.push(ready, Event::RmwDone { cmd });
            }
            return;
        }
        if self.cache.is_some() {
            self.cache_fill(ready, t.aux as u64, t.pun);
        }
        let pos = (t.aux as u64 * self.geo.unit_bytes).saturating_sub(self.cmds.get(cmd).offset);
        let end = self.read_data_out(ready, cmd, t.host_bytes as u64, pos);
        let c = self.cmds.get_mut(cmd);
        // The completion entry may follow the last data TLP at once: posted writes stay in order.
        c.data_done = c.data_done.max(end);
        c.txns_left -= 1;
        if c.txns_left == 0 {
            let done = c.data_done;
            self.complete_cmd(done, cmd);
        }
    }

    /// A program transaction finished at `now`.
    pub(crate) fn write_txn_done(&mut self, now: SimTime, txn: u32) -> Result<()> {
        let t = self.txns.remove(txn);
        // Only if the block was not erased (and reused) since the write was mapped.
        let block = self.geo.block_of_unit(t.pun);
        if self.ftl.blocks()[block as usize].epoch == t.epoch {
            self.ftl.mark_programmed(t.pun);
        }
        if t.kind == TxnKind::Flush {
            return self.flush_done(now, t.cmd);
        }
        if self.cache.is_some() {
            self.cache_write_through(now, t.aux as u64, t.pun);
        }
        let c = self.cmds.get_mut(t.cmd);
        c.txns_left -= 1;
        if c.txns_left == 0 {
            self.complete_cmd(now, t.cmd);
        }
        Ok(())
    }
}
