//! The HIL's paths of the page-mapped FTL (the `page` and `cached` schemes), generic over what
//! of its map controller memory holds ([`MapWork`]): a command dispatched (reads looked up and
//! sensed, with read-ahead after sequential streams; trims; flushes to the cache buffer), a
//! write's data in (its read-modify-write reads, then its units mapped and programmed, or put
//! into a write-back buffer), its programs' ends, and the map work a cached map asks for. The
//! whole map's answers to [`MapWork`] are here too: nothing to do, folded away.

use super::{Hil, MapWork};
use crate::ctrl::fil::{Queue, Txn, TxnKind};
use crate::ctrl::read_ahead::ReadAhead;
use crate::ctrl::{units_of, Ports};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::mapping_cache::Stage;
use crate::ftl::{Ftl, FullMap, Refusal};
use crate::media::nand::Geometry;
use crate::request::{Op, Status};
use crate::sim::SimTime;
use std::ops::Range;

impl Hil {
    /// The firmware is done with a command of the page-mapped FTL (full or cached map): start
    /// its work. `ahead`: the scheme's read-ahead ([`MapWork::Ahead`]).
    #[inline(always)]
    pub(crate) fn dispatch<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        ahead: &mut M::Ahead,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        if self.refuse_protected(now, cmd, &mut p.up) {
            return Ok(());
        }
        self.dispatch_mapped(now, cmd, ahead, p)
    }

    /// A command of the page-mapped FTL, once past the write protection.
    #[inline(always)]
    fn dispatch_mapped<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        ahead: &mut M::Ahead,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        let c = p.up.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        match op {
            Op::Read => {
                if !self.skip_media && !M::look_up(self, now, cmd, Stage::Read, p)? {
                    return Ok(());
                }
                self.dispatch_read(now, cmd, offset, len, ahead, p)?
            }
            Op::Write => {
                // The map entry was prefetched at the doorbell; now warm where it points, for
                // the FTL write when the data is in.
                p.flash.ftl.prefetch_target(offset / self.geo.unit_bytes);
                let end = p.up.link.pull_write_data(now, p.up.cmds.get(cmd));
                p.up.q.push(end, Event::WriteDataIn { cmd });
            }
            Op::Trim if p.flash.ftl.read_only() => {
                p.up.refuse(now, cmd, Status::ReadOnly);
            }
            Op::Trim => {
                let unit = self.geo.unit_bytes;
                let flash = &mut p.flash;
                for (lpn, covered) in units_of(unit, offset, len) {
                    // Only whole units can be unmapped; a partial one keeps its data.
                    if covered == unit {
                        // (With a cached map, the FTL tells its translation page.)
                        if let Some(dc) = flash.check.as_mut() {
                            dc.trimmed(lpn, flash.ftl);
                        }
                        flash.ftl.trim(lpn);
                        if let Some(bm) = p.cache.as_deref_mut() {
                            bm.discard(lpn);
                        }
                    }
                }
                self.pump_map(now, p)?;
                p.up.complete(now, cmd);
            }
            Op::Flush => match p.cache.as_deref_mut() {
                Some(bm) if bm.write_back() => {
                    bm.flush_command(now, cmd, &mut p.up, &mut p.flash)?;
                    self.pump_map(now, p)?
                }
                // No volatile data to write back: done once the firmware saw it.
                _ => p.up.complete(now, cmd),
            },
            // The device refuses erases and zone commands of a mapped device at submission.
            Op::Erase => unreachable!("an erase on a device with an FTL"),
            Op::Append
            | Op::ZoneReset
            | Op::ZoneFinish
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneOffline => unreachable!("a zone command on a device without zones"),
        }
        Ok(())
    }

    pub(super) fn dispatch_read<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        offset: u64,
        len: u64,
        ahead: &mut M::Ahead,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        if self.skip_media {
            // Firmware answers at once: only the data phase remains.
            let end = up.push_read_data(now, cmd, len, 0);
            up.complete(end, cmd);
            return Ok(());
        }
        let mut txns = 0u32;
        let mut direct_bytes = 0u64;
        let mut direct_at = now;
        let mut all_hit = cache.is_some();
        let unit = self.geo.unit_bytes;
        for (lpn, covered) in units_of(unit, offset, len) {
            self.counters.host_units_read += 1;
            // Where in the unit the read starts (only the first unit's may be past its start).
            let start = || offset.saturating_sub(lpn * unit);
            if let Some(dc) = flash.check.as_mut() {
                let slot = cache.as_deref().and_then(|bm| bm.find(lpn));
                let pun = if slot.is_none() {
                    flash.ftl.lookup(lpn)
                } else {
                    None
                };
                dc.read(lpn, slot, pun);
                if let (Some(s), Some(bm)) = (slot, cache.as_deref()) {
                    if bm.merges_partial() {
                        let held = bm.holds(s, start(), covered);
                        dc.read_part(s, start(), covered, held, flash.ftl.lookup(lpn));
                    }
                }
            }
            if let Some(bm) = cache.as_deref_mut() {
                if let Some(t) = bm.read_part(now, lpn, start(), covered) {
                    direct_bytes += covered;
                    direct_at = direct_at.max(t);
                    continue;
                }
                all_hit = false;
            }
            match flash.ftl.read_target(lpn) {
                None => {
                    self.counters.unmapped_reads += 1;
                    direct_bytes += covered;
                }
                Some((_, false)) => {
                    // Still on its way to NAND: served from the controller's write buffer.
                    self.counters.buffer_reads += 1;
                    direct_bytes += covered;
                }
                Some((pun, true)) => {
                    txns += 1;
                    let t = flash.fil.add_txn(self.read_txn(
                        TxnKind::HostRead,
                        cmd,
                        pun,
                        covered as u32,
                        lpn,
                    ));
                    flash.fil.enqueue(now, t, Queue::HostRead, flash.ftl, up.q);
                }
            }
        }
        up.reads_dispatched(now, cmd, txns, direct_bytes, direct_at);
        if let Some(range) = M::read_ahead(ahead, offset, len, &self.geo, flash.ftl) {
            self.sense_ahead(now, range, p);
        }
        if all_hit {
            if let Some(bm) = p.cache.as_deref_mut() {
                bm.maybe_preemptive_flush(now, &mut p.up, &mut p.flash)?;
                // With a cached map, the flush may have missed on its translation page.
                self.pump_map(now, p)?;
            }
        }
        Ok(())
    }

    /// Read-ahead (`controller.read_ahead`, the `page` scheme's): the mapped, programmed pages
    /// of `range` (bytes, whole pages) are sensed into their registers, one read-ahead per
    /// page, queued after the host's reads.
    #[cold]
    #[inline(never)]
    fn sense_ahead<M: MapWork>(&self, now: SimTime, range: Range<u64>, p: &mut Ports<Ftl<M>>) {
        let Ports { up, flash, .. } = p;
        let unit = self.geo.unit_bytes;
        let mut last_page = crate::ftl::NONE;
        for (lpn, _) in units_of(unit, range.start, range.end - range.start) {
            let Some(pun) = flash.ftl.lookup(lpn) else {
                continue;
            };
            let page = self.geo.page_id(pun);
            if page == last_page || !flash.ftl.is_programmed(pun) {
                continue;
            }
            last_page = page;
            let t = self.read_txn(TxnKind::ReadAhead, crate::ftl::NONE, pun, 0, lpn);
            let t = flash.fil.add_txn(t);
            flash.fil.enqueue(now, t, Queue::HostRead, flash.ftl, up.q);
        }
    }

    /// A write command's data is in the controller (page-mapped FTL): read what partial units
    /// keep of their old data first, else place the units.
    #[inline(always)]
    pub(crate) fn write_data_in<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        if self.write_skips_media(now, cmd, &mut p.up) {
            return Ok(());
        }
        if !M::look_up(self, now, cmd, Stage::Write, p)? {
            return Ok(());
        }
        self.write_data_mapped(now, cmd, p)
    }

    /// A write command's data is in and its map entries are at hand: read-modify-write reads,
    /// else place the units.
    pub(super) fn write_data_mapped<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        let c = up.cmds.get(cmd);
        let unit = self.geo.unit_bytes;
        let mut rmw = 0;
        for (lpn, covered) in units_of(unit, c.offset, c.len) {
            // A whole unit, or one whose old data is in the cache buffer (or merged with it
            // when its line is flushed: `cache.partial_lines`), needs no read.
            if covered == unit
                || cache.as_deref().is_some_and(|bm| {
                    bm.write_back() && (bm.merges_partial() || bm.find(lpn).is_some())
                })
            {
                continue;
            }
            // A partial unit keeps the rest of its old data: read it first.
            if let Some(pun) = flash.ftl.lookup(lpn) {
                if flash.ftl.is_programmed(pun) {
                    let t = flash
                        .fil
                        .add_txn(self.read_txn(TxnKind::RmwRead, cmd, pun, 0, 0));
                    rmw += 1;
                    flash.fil.enqueue(now, t, Queue::HostRead, flash.ftl, up.q);
                }
            }
        }
        if rmw > 0 {
            up.cmds.get_mut(cmd).rmw_left = rmw;
            return Ok(());
        }
        self.write_units(now, cmd, p)
    }

    /// Map every unit of a write command to a new physical unit and queue its program (or,
    /// with a write-back buffer, put the units into the buffer).
    #[inline]
    pub(crate) fn write_units<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        if flash.ftl.read_only() {
            // A worn-out drive takes nothing new, into its buffer or onto NAND.
            up.refuse(now, cmd, Status::ReadOnly);
            return Ok(());
        }
        if let Some(bm) = cache.as_deref_mut() {
            if bm.write_back() && up.cmds.get(cmd).fua {
                // Force Unit Access: the data goes to NAND and the command completes once it is
                // programmed; the buffer's copies of its units (older data) are dropped first,
                // so that no later flush puts them back over it.
                let c = up.cmds.get(cmd);
                for (lpn, _) in units_of(self.geo.unit_bytes, c.offset, c.len) {
                    bm.discard(lpn);
                    if let Some(dc) = flash.check.as_mut() {
                        dc.discarded(lpn);
                    }
                }
            } else if bm.write_back() {
                bm.write(now, cmd, up, flash)?;
                // With a cached map, a flush to make room may have missed on its translation
                // page.
                return self.pump_map(now, p);
            }
        }
        let c = up.cmds.get(cmd);
        let (offset, len, stream) = (c.offset, c.len, c.stream);
        let unit = self.geo.unit_bytes;
        if c.status != Status::Ok {
            // Its read-modify-write read failed: nothing is written.
            up.complete(now, cmd);
            return Ok(());
        }
        up.cmds.get_mut(cmd).txns_left = (units_of(unit, offset, len).count()) as u32;
        let wear = flash.ftl.wear.is_some();
        for (lpn, covered) in units_of(unit, offset, len) {
            // Where the unit was, for the data oracle and the power-loss model only.
            let old = match flash.check {
                Some(_) => flash.ftl.lookup(lpn),
                None => None,
            };
            let pun = if wear {
                match flash.ftl.write_checked_in(lpn, stream)? {
                    Ok(pun) => pun,
                    Err(refusal) => {
                        // The units placed so far still program; this one and the rest keep
                        // their old data, and the command fails.
                        let c = up.cmds.get_mut(cmd);
                        c.status = match refusal {
                            Refusal::ReadOnly => Status::ReadOnly,
                            Refusal::NoSpace => Status::NoSpace,
                        };
                        let left = units_of(unit, offset, len)
                            .filter(|&(l, _)| l >= lpn)
                            .count() as u32;
                        c.txns_left -= left;
                        if c.txns_left == 0 {
                            up.complete(now, cmd);
                        }
                        break;
                    }
                }
            } else {
                flash.ftl.write_in(lpn, stream)?
            };
            if let Some(dc) = flash.check.as_mut() {
                dc.write_to_nand(lpn, pun, old, flash.ftl);
                if dc.checkpoint_due() {
                    flash.program_checkpoint(now, up.q)?;
                }
            }
            if let Some(bm) = cache.as_deref_mut() {
                // Write-through: the data goes into the buffer as well, now.
                bm.write_through(now, lpn, pun, flash);
            }
            let block = self.geo.block_of_unit(pun);
            let t = flash.fil.add_txn(Txn {
                kind: TxnKind::HostWrite,
                cmd,
                pun,
                plane: self.geo.plane_of_block(block),
                host_bytes: covered as u32,
                epoch: flash.ftl.blocks()[block as usize].epoch,
                aux: lpn as u32,
                overwrote: flash.ftl.overwrote(),
            });
            flash.fil.enqueue(now, t, Queue::HostWrite, flash.ftl, up.q);
            flash.drain_gc(now, up.q);
        }
        self.pump_map(now, p)
    }

    /// The translation-page work the mapping cache asked for, issued ([`MapWork::pump`]; with
    /// the whole map in memory, nothing).
    #[inline(always)]
    pub(crate) fn pump_map<M: MapWork>(
        &mut self,
        now: SimTime,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        M::pump(self, now, p)
    }

    /// `cmd`'s map entries crossed the link from a mapping cache in host memory
    /// (`Event::MapReady`): it goes on at `stage` ([`MapWork::resume`]).
    pub(crate) fn map_resume<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        M::resume(self, now, cmd, stage, p)
    }

    /// A program transaction of the page-mapped FTL finished at `now`.
    #[inline]
    pub(crate) fn program_done<M: MapWork>(
        &mut self,
        now: SimTime,
        txn: u32,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        let geo = &self.geo;
        let mark = |t: &Txn, ftl: &mut Ftl<M>| {
            // Only if the block was not erased (and reused) since the write was mapped.
            if ftl.blocks()[geo.block_of_unit(t.pun) as usize].epoch == t.epoch {
                ftl.mark_programmed(t.pun);
            }
        };
        let t = p.flash.fil.remove_txn(txn);
        mark(&t, p.flash.ftl);
        if t.overwrote != crate::ftl::NONE {
            // The data it replaced may go with its block now.
            p.flash.ftl.overwrite_programmed(t.overwrote);
        }
        self.programmed(now, t, p)
    }
}

/// The whole map in memory: every entry at hand, no translation page to read or program; the
/// firmware reads ahead where it knows the pages are.
impl MapWork for FullMap {
    type Ahead = ReadAhead;

    #[inline(always)]
    fn read_ahead(
        ahead: &mut ReadAhead,
        offset: u64,
        len: u64,
        geo: &Geometry,
        ftl: &Ftl,
    ) -> Option<Range<u64>> {
        if !ahead.is_on() {
            return None;
        }
        ahead.after(
            offset,
            len,
            geo,
            ftl.logical_units().saturating_mul(geo.unit_bytes),
        )
    }

    #[inline(always)]
    fn look_up(_: &mut Hil, _: SimTime, _: u32, _: Stage, _: &mut Ports) -> Result<bool> {
        Ok(true)
    }

    #[inline(always)]
    fn pump(_: &mut Hil, _: SimTime, _: &mut Ports) -> Result<()> {
        Ok(())
    }

    fn read_done(_: &mut Hil, _: SimTime, _: &Txn, _: &mut Ports) -> Result<()> {
        unreachable!("the whole map in memory reads no translation page")
    }

    fn resume(_: &mut Hil, _: SimTime, _: u32, _: Stage, _: &mut Ports) -> Result<()> {
        unreachable!("the whole map in memory waits for no map entry")
    }
}
