//! The HIL's entry points of a zoned drive (`[zns]`, `ctrl::zoned`): its commands checked by the
//! zone state machine, reads of what is programmed below the write pointers, zone management's
//! erases and fillers, and writes and appends programmed where their zone puts them (or put into
//! a write-back buffer in each zone's order). No map, no GC.

use super::Hil;
use crate::ctrl::fil::{NoPageGc, Queue, TxnKind};
use crate::ctrl::zoned::{Arrival, ZonedNand};
use crate::ctrl::zones::ZoneAction;
use crate::ctrl::{units_of, Ports};
use crate::error::Result;
use crate::event::Event;
use crate::iface::HostPort;
use crate::request::{Op, Status};
use crate::sim::SimTime;

impl Hil {
    /// A zoned drive's command (`ctrl::zoned`): reads sense what was programmed below the
    /// write pointers and answer the rest with zeros; writes and appends are checked by the
    /// zone state machine first and take their LBAs at once (a refused one ends at once with
    /// its status, having changed nothing); zone management changes the states, and a reset
    /// erases the zone's blocks with data, a finish under `zns.finish = "fill"` programs the rest
    /// of its capacity. No map, no GC. With a cache buffer, reads that hit come from its DRAM,
    /// a reset drops the zone's lines, a finish first flushes them, and a flush command goes to
    /// the buffer (docs/zns.md, "With a cache buffer").
    #[inline(never)]
    pub(crate) fn dispatch_zoned(
        &mut self,
        now: SimTime,
        cmd: u32,
        z: &mut ZonedNand,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let c = p.up.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        let unit = self.geo.unit_bytes;
        let refuse = |up: &mut HostPort, status| {
            up.refuse(now, cmd, status);
            Ok(())
        };
        let lba = offset / unit;
        match op {
            Op::Read => self.zoned_read(now, cmd, offset, len, z, p)?,
            Op::Write | Op::Append => {
                let up = &mut p.up;
                if !offset.is_multiple_of(unit) || !len.is_multiple_of(unit) {
                    return refuse(up, Status::Misaligned);
                }
                let nlb = len / unit;
                let at = if op == Op::Append {
                    z.zones.append(lba, nlb)
                } else {
                    z.zones.write(lba, nlb).map(|()| lba)
                };
                match at {
                    Ok(at) => {
                        let (zone, off) = z.zones.split(at);
                        if z.buffered() {
                            // Its blocks are taken on the media when their lines are flushed.
                            z.accepted(cmd, zone as u32);
                        } else {
                            z.take(zone as u32, off + nlb);
                        }
                        z.counters.host_units_written += nlb;
                        // An append's data goes where the zone's pointer was.
                        up.cmds.get_mut(cmd).offset = at * unit;
                        let end = up.link.pull_write_data(now, up.cmds.get(cmd));
                        up.q.push(end, Event::WriteDataIn { cmd });
                    }
                    Err(s) => return refuse(up, s),
                }
            }
            Op::ZoneReset | Op::ZoneFinish | Op::ZoneOpen | Op::ZoneClose | Op::ZoneOffline => {
                self.zone_management(now, cmd, op, lba, z, p)?
            }
            // A deallocation has no meaning for a zone's data (the host resets zones).
            Op::Trim | Op::Erase => return refuse(&mut p.up, Status::Unsupported),
            Op::Flush => match p.cache.as_deref_mut() {
                Some(bm) if bm.write_back() => {
                    bm.flush_command(now, cmd, &mut p.up, &mut p.flash.with_zoned(z))?
                }
                _ => p.up.complete(now, cmd),
            },
        }
        Ok(())
    }

    /// A zoned drive's read: what the buffer holds from its DRAM, what is programmed from the
    /// media, the rest (past the write pointer) as zeros.
    fn zoned_read(
        &mut self,
        now: SimTime,
        cmd: u32,
        offset: u64,
        len: u64,
        z: &mut ZonedNand,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        let unit = self.geo.unit_bytes;
        if let Err(s) = z.zones.read(offset / unit, len.div_ceil(unit)) {
            up.refuse(now, cmd, s);
            return Ok(());
        }
        let mut txns = 0u32;
        let mut direct = 0u64;
        let mut direct_at = now;
        for (lba, covered) in units_of(unit, offset, len) {
            self.counters.host_units_read += 1;
            let programmed = z.is_programmed(lba);
            if let Some(dc) = flash.check.as_mut() {
                let slot = cache.as_deref().and_then(|bm| bm.find(lba));
                dc.read(lba, slot, programmed.then(|| z.unit_of(lba)));
            }
            if let Some(t) = cache
                .as_deref_mut()
                .and_then(|bm| bm.read(now, lba, covered))
            {
                direct += covered;
                direct_at = direct_at.max(t);
            } else if programmed {
                txns += 1;
                let pun = z.unit_of(lba);
                let mut t = self.read_txn(TxnKind::HostRead, cmd, pun, covered as u32, lba);
                // The block's wear, for the read error model (`Fil::set_error_model`).
                t.epoch = z.erase_counts()[self.geo.block_of_unit(pun) as usize];
                let t = flash.fil.add_txn(t);
                flash.fil.enqueue(now, t, Queue::HostRead, flash.ftl, up.q);
            } else {
                // Never written since the zone's reset (or past a finish): zeros.
                self.counters.unmapped_reads += 1;
                direct += covered;
            }
        }
        up.reads_dispatched(now, cmd, txns, direct, direct_at);
        Ok(())
    }

    /// Zone management (reset, finish, open, close, offline) of the zone at `lba`, or of all
    /// zones: the state machine's changes, then a reset's erases and a filling finish's
    /// programs (after the buffer has flushed the zone).
    fn zone_management(
        &mut self,
        now: SimTime,
        cmd: u32,
        op: Op,
        lba: u64,
        z: &mut ZonedNand,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let unit = self.geo.unit_bytes;
        let action = ZoneAction::of_op(op).expect("a zone management op");
        // For all zones, the device addressed it to the namespace's end.
        let all = lba >= z.zones.count() as u64 * z.zones.zone_lbas();
        let changed = match z.zones.manage(action, lba, all) {
            Ok(c) => c,
            Err(s) => {
                p.up.refuse(now, cmd, s);
                return Ok(());
            }
        };
        let mut txns = 0u32;
        let zl = z.zones.zone_lbas();
        for ch in changed {
            let start = ch.zone as u64 * zl;
            match action {
                ZoneAction::Reset => {
                    Self::forget_zone(now, ch.zone, z, p)?;
                    for block in z.reset_blocks(ch.zone) {
                        txns += 1;
                        let t = p.flash.fil.add_txn(self.raw_txn(
                            TxnKind::Erase,
                            cmd,
                            block * self.geo.units_per_block(),
                            0,
                            0,
                        ));
                        p.flash
                            .fil
                            .enqueue(now, t, Queue::HostWrite, p.flash.ftl, p.up.q);
                    }
                }
                ZoneAction::Finish => {
                    if let Some(bm) = p.cache.as_deref_mut().filter(|_| z.buffered()) {
                        // The zone's data goes to the media before it is full.
                        let mut flash = p.flash.with_zoned(z);
                        bm.flush_zone(now, start, start + zl, &mut p.up, &mut flash)?;
                    }
                    if z.finish != crate::config::FinishMode::Fill {
                        continue;
                    }
                    // The filler goes past the host's data: with a write-back buffer,
                    // past what is still on its way to the media too.
                    let from = if z.buffered() {
                        ch.old_wp
                    } else {
                        z.programmed(ch.zone)
                    };
                    let to = z.zones.cap_lbas();
                    z.take(ch.zone, to);
                    z.counters.filled_units += to - from;
                    for off in from..to {
                        let lba = start + off;
                        let pun = z.unit_of(lba);
                        if let Some(dc) = p.flash.check.as_mut() {
                            // Filler reads as zeros.
                            dc.erased(pun);
                        }
                        txns += 1;
                        let t = p.flash.fil.add_txn(self.raw_txn(
                            TxnKind::HostWrite,
                            cmd,
                            pun,
                            unit as u32,
                            lba as u32,
                        ));
                        p.flash
                            .fil
                            .enqueue(now, t, Queue::HostWrite, p.flash.ftl, p.up.q);
                    }
                }
                _ => {}
            }
        }
        p.up.cmds.get_mut(cmd).txns_left = txns;
        if txns == 0 {
            p.up.complete(now, cmd);
        }
        Ok(())
    }

    /// `zone` is being reset: its lines leave the cache buffer (the host gave their data up),
    /// its writes not yet in the buffer are given up, and the data oracle forgets its blocks.
    fn forget_zone(
        now: SimTime,
        zone: u32,
        z: &mut ZonedNand,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        let start = zone as u64 * z.zones.zone_lbas();
        let extent = z.written_extent(zone);
        if let Some(dc) = flash.check.as_mut() {
            for lba in start..start + extent {
                dc.trimmed_in_place(lba);
                dc.erased(z.unit_of(lba));
            }
        }
        for parked in z.reset_order(zone) {
            up.complete(now, parked);
        }
        match cache.as_deref_mut() {
            Some(bm) => bm.drop_zone(now, start, start + extent, up, &mut flash.with_zoned(z)),
            None => Ok(()),
        }
    }

    /// A zoned drive's write or append has its data: program each unit where its zone puts it,
    /// or, with a write-back buffer, put it into the buffer in its zone's order (a write whose
    /// data came before an earlier one's of its zone waits for it: `ctrl::zoned::ZoneOrder`).
    #[inline(never)]
    pub(crate) fn write_data_in_zoned(
        &mut self,
        now: SimTime,
        cmd: u32,
        z: &mut ZonedNand,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        if self.write_skips_media(now, cmd, up) {
            return Ok(());
        }
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        let unit = self.geo.unit_bytes;
        if let Some(bm) = cache.as_deref_mut().filter(|_| z.buffered()) {
            let (lba, nlb) = (offset / unit, len / unit);
            match z.arrived(cmd, lba, nlb) {
                Arrival::Dropped => up.complete(now, cmd),
                Arrival::Parked => {}
                Arrival::Buffer => {
                    let zone = z.zones.split(lba).0 as u32;
                    let mut next = Some(cmd);
                    while let Some(cmd) = next {
                        bm.write(now, cmd, up, &mut flash.with_zoned(z))?;
                        next = z.unpark(zone, |c| up.cmds.get(c).len / unit);
                    }
                }
            }
            return Ok(());
        }
        // The drive's work vector, taken for the call (the units' places are `z`'s too) and
        // put back: only its capacity outlives the call.
        let mut txns = std::mem::take(&mut z.txns);
        txns.clear();
        txns.extend(units_of(unit, offset, len).map(|(lba, covered)| {
            let pun = z.unit_of(lba);
            if let Some(dc) = flash.check.as_mut() {
                dc.write_to_nand_in_place(lba, pun);
            }
            flash.fil.add_txn(self.raw_txn(
                TxnKind::HostWrite,
                cmd,
                pun,
                covered as u32,
                lba as u32,
            ))
        }));
        up.cmds.get_mut(cmd).txns_left = txns.len() as u32;
        flash
            .fil
            .enqueue_all(now, &txns, Queue::HostWrite, flash.ftl, up.q);
        z.txns = txns;
        Ok(())
    }
}
