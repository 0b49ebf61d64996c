//! Host interface layer: firmware time per command, the split of commands into map-unit
//! transactions, and what a finished transaction means for its command (data to the host, the
//! command's completion).
//!
//! The HIL reaches the host through [`HostPort`] (data movement and completions are the
//! interface's), flash through [`FlashPort`], and the cache buffer, when there is one, through
//! its manager: the three together are a handler's [`Ports`], its one argument for them.
//!
//! This file holds what every NAND back end shares: the HIL's state, a command's firmware time,
//! the write protection, and what a finished read or program means for its command; and the two
//! traits the page FTL's map answers ([`MapOwner`], [`MapWork`]). What only one scheme's paths
//! keep is that scheme's, never the HIL's: the `page` scheme's read-ahead (`ctrl::read_ahead`,
//! beside its FTL), a raw device's and a zoned drive's work vector (`RawNand::txns`,
//! `ZonedNand::txns`), a cached map's (`mapping_cache::LookupScratch`). Each back end's entry
//! points are in a file of their own: `hil/page.rs` (the page-mapped FTL, whole map or cached),
//! `hil/cached.rs` (a cached map's translation pages), `hil/block.rs` (block-mapped FTLs),
//! `hil/raw.rs` (raw NAND) and `hil/zoned.rs` (zoned drives).

use super::buffer::Lines;
use super::fil::{FlashOwner, NoPageGc, Txn, TxnKind};
use super::{FlashPort, HilCounters, Ports};
use crate::config::{FtlKind, SsdConfig};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::mapping_cache::Stage;
use crate::ftl::{Ftl, Translation};
use crate::iface::HostPort;
use crate::media::nand::Geometry;
use crate::request::Op;
use crate::request::Status;
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime};

pub struct Hil {
    geo: Geometry,
    /// The controller's firmware core.
    cpu: Timeline,
    cmd_overhead: SimTime,
    /// `controller.ftl_unit_cost` (zero on a raw device).
    ftl_unit_cost: SimTime,
    /// GC work (pages moved and blocks erased) already charged to the firmware core.
    gc_units_charged: u64,
    /// The firmware answers at once, without touching the media (seed 000 §6.2).
    skip_media: bool,
    /// Whether any range is write-protected (`controller.write_protect`).
    write_protect: Vec<crate::config::ProtectedRange>,
    pub counters: HilCounters,
}

impl Hil {
    pub fn new(cfg: &SsdConfig, geo: &Geometry) -> Hil {
        Hil {
            geo: geo.clone(),
            cpu: Timeline::default(),
            cmd_overhead: cfg.controller.cmd_overhead.0,
            ftl_unit_cost: if cfg.ftl.kind == FtlKind::None {
                SimTime::ZERO
            } else {
                cfg.controller.ftl_unit_cost.0
            },
            gc_units_charged: 0,
            skip_media: cfg.controller.skip_media,
            write_protect: cfg.controller.write_protect.clone(),
            counters: HilCounters::default(),
        }
    }

    /// Busy time of the firmware core.
    pub fn cpu_busy(&self) -> SimTime {
        self.cpu.busy
    }

    /// A command of `len` bytes reached the controller: its firmware time, then `Dispatch`.
    /// With `controller.ftl_unit_cost`, the FTL's work is part of it: one unit of work per page
    /// the command covers, and one per page GC moved or block it erased since the last
    /// command (`gc`: the FTL's counts), which the core did between commands.
    #[inline]
    pub(crate) fn accept(
        &mut self,
        now: SimTime,
        cmd: u32,
        len: u64,
        gc: &crate::ftl::FtlStats,
        q: &mut EventQueue<Event>,
    ) {
        let mut work = self.cmd_overhead;
        if self.ftl_unit_cost != SimTime::ZERO {
            work += self.ftl_work(len, gc);
        }
        let (_, end) = self.cpu.reserve(now, work);
        q.push(end, Event::Dispatch { cmd });
    }

    /// The FTL's part of a command's firmware time (`accept`); out of line, so that the usual
    /// path, without it, stays small enough to inline.
    #[inline(never)]
    fn ftl_work(&mut self, len: u64, gc: &crate::ftl::FtlStats) -> SimTime {
        let gc_units = gc.gc_units_moved + gc.erases;
        // Saturating: the counts start again from zero after preconditioning.
        let units = len.div_ceil(self.geo.unit_bytes).max(1)
            + gc_units.saturating_sub(self.gc_units_charged);
        self.gc_units_charged = gc_units;
        SimTime(self.ftl_unit_cost.ps().saturating_mul(units))
    }

    #[inline]
    fn read_txn(&self, kind: TxnKind, cmd: u32, pun: u32, host_bytes: u32, lpn: u64) -> Txn {
        Txn {
            kind,
            cmd,
            pun,
            plane: self.geo.plane_of_block(self.geo.block_of_unit(pun)),
            host_bytes,
            epoch: 0,
            aux: lpn as u32,
            overwrote: crate::ftl::NONE,
        }
    }

    /// A write or trim of a write-protected range (`controller.write_protect`) fails at once:
    /// true when `cmd` was refused so.
    #[inline(always)]
    fn refuse_protected(&self, now: SimTime, cmd: u32, up: &mut HostPort) -> bool {
        let c = up.cmds.get(cmd);
        if !self.write_protect.is_empty()
            && matches!(c.op, Op::Write | Op::Trim)
            && self
                .write_protect
                .iter()
                .any(|r| r.overlaps(c.offset, c.len))
        {
            up.refuse(now, cmd, Status::WriteProtected);
            return true;
        }
        false
    }

    /// A transaction of a back end that keeps no map (raw, zoned) on physical unit `pun`: its
    /// plane from the geometry, no block epoch to check.
    #[inline]
    fn raw_txn(&self, kind: TxnKind, cmd: u32, pun: u32, host_bytes: u32, aux: u32) -> Txn {
        Txn {
            kind,
            cmd,
            pun,
            plane: self.geo.plane_of_block(self.geo.block_of_unit(pun)),
            host_bytes,
            epoch: 0,
            aux,
            overwrote: crate::ftl::NONE,
        }
    }

    /// The firmware answers a write at once, without touching the media (`skip_media`): true
    /// when `cmd` was completed so.
    #[inline(always)]
    fn write_skips_media(&self, now: SimTime, cmd: u32, up: &mut HostPort) -> bool {
        if self.skip_media {
            up.complete(now, cmd);
        }
        self.skip_media
    }

    /// A read transaction's data is decoded at `ready`: move it to the host (or, for a
    /// read-modify-write, count it) and complete the command when it was the last. What the
    /// cache buffer, when there is one, keeps of it follows the map of the back end the flash
    /// port carries.
    #[inline]
    pub(crate) fn read_done<O: MapOwner>(
        &mut self,
        ready: SimTime,
        txn: u32,
        p: &mut Ports<O>,
    ) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        let t = p.flash.fil.remove_txn(txn);
        if matches!(t.kind, TxnKind::MapRead | TxnKind::MapUpdateRead) {
            // A translation page cannot fail to decode here: the model knows the map.
            p.flash.fil.take_failure(txn);
            return O::map_read_done(self, ready, &t, p);
        }
        let cmd = t.cmd;
        let failed = p.flash.fil.take_failure(txn);
        let up = &mut p.up;
        if failed {
            // Uncorrectable: the command fails, and no data of this unit goes up (a failed
            // read-modify-write read fails its write the same way).
            let c = up.cmds.get_mut(cmd);
            c.status = c.status.and(Status::Uncorrectable);
        }
        if t.kind == TxnKind::RmwRead {
            let c = up.cmds.get_mut(cmd);
            c.rmw_left -= 1;
            if c.rmw_left == 0 {
                up.q.push(ready, Event::RmwDone { cmd });
            }
            return Ok(());
        }
        if t.kind == TxnKind::MergeRead {
            // A flush's read of the rest of its line's unit (an uncorrectable one still lets
            // the flush go on: the model keeps no data to lose).
            let bm = p.cache.as_deref_mut();
            let bm = bm.expect("a merge read comes from the cache buffer");
            return bm.merged_for_flush(ready, cmd, up, &mut p.flash);
        }
        if !failed {
            if let Some(bm) = p.cache.as_deref_mut() {
                bm.fill(ready, t.aux as u64, t.pun, &mut p.flash);
            }
            let pos = (t.aux as u64 * self.geo.unit_bytes).saturating_sub(up.cmds.get(cmd).offset);
            let end = up.push_read_data(ready, cmd, t.host_bytes as u64, pos);
            // The completion entry may follow the last data TLP at once: posted writes stay
            // in order.
            let c = up.cmds.get_mut(cmd);
            c.data_done = c.data_done.max(end);
        }
        let c = up.cmds.get_mut(cmd);
        if failed {
            // Answered when its (failed) decode is over.
            c.data_done = c.data_done.max(ready);
        }
        c.txns_left -= 1;
        if c.txns_left == 0 {
            let done = c.data_done;
            up.complete(done, cmd);
        }
        Ok(())
    }

    /// A program transaction of another back end finished at `now`: `mark` records it in the
    /// back end's map (a block-mapped FTL's; a raw device's firmware keeps nothing).
    #[inline(never)]
    pub(crate) fn program_done_by(
        &mut self,
        now: SimTime,
        txn: u32,
        mark: impl FnOnce(&Txn),
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let t = p.flash.fil.remove_txn(txn);
        mark(&t);
        self.programmed(now, t, p)
    }

    /// A cache buffer's flush of line `slot` is on NAND. Out of line: the flushes it starts
    /// may miss on their translation pages (cached map), which the HIL then reads.
    #[inline(never)]
    fn flush_programmed<O: MapOwner>(
        &mut self,
        now: SimTime,
        slot: u32,
        p: &mut Ports<O>,
    ) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        let bm = p.cache.as_deref_mut();
        let bm = bm.expect("a flush comes from the cache buffer");
        bm.flush_done(now, slot, &mut p.up, &mut p.flash)?;
        O::pump_map(self, now, p)
    }

    /// What a finished program means for its command.
    #[inline(always)]
    fn programmed<O: MapOwner>(&mut self, now: SimTime, t: Txn, p: &mut Ports<O>) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        if t.kind == TxnKind::MapWrite {
            // A translation page or a map checkpoint's page is on NAND: no command waited for
            // it (a checkpoint's counts once all its pages are).
            if t.cmd != crate::ftl::NONE {
                p.flash.checkpoint_page_programmed(t.cmd);
            }
            return Ok(());
        }
        if t.kind == TxnKind::Flush {
            return self.flush_programmed(now, t.cmd, p);
        }
        if let Some(bm) = p.cache.as_deref_mut() {
            bm.write_through(now, t.aux as u64, t.pun, &mut p.flash);
        }
        let c = p.up.cmds.get_mut(t.cmd);
        c.txns_left -= 1;
        if c.txns_left == 0 {
            p.up.complete(now, t.cmd);
        }
        Ok(())
    }
}

/// What a finished transaction leads to that only the page FTL's schemes have: a translation
/// page read in, the map work a cache buffer's flush lets go on (a cached map). The HIL's paths
/// that every NAND scheme shares (a read's or program's end) are generic over the blocks'
/// owner, compiled once for the page FTL and once for the schemes with their own map.
pub(crate) trait MapOwner: FlashOwner + Sized {
    /// Translation page read `t` (`MapRead` or `MapUpdateRead`) is done.
    fn map_read_done(hil: &mut Hil, ready: SimTime, t: &Txn, p: &mut Ports<Self>) -> Result<()>;
    /// Start the map work that can go on now ([`Hil::pump_map`]).
    fn pump_map(hil: &mut Hil, now: SimTime, p: &mut Ports<Self>) -> Result<()>;
}

impl<M: MapWork> MapOwner for Ftl<M> {
    #[inline]
    fn map_read_done(hil: &mut Hil, ready: SimTime, t: &Txn, p: &mut Ports<Self>) -> Result<()> {
        M::read_done(hil, ready, t, p)
    }

    #[inline]
    fn pump_map(hil: &mut Hil, now: SimTime, p: &mut Ports<Self>) -> Result<()> {
        M::pump(hil, now, p)
    }
}

/// What the page path asks of the page FTL's map beyond the FTL's own calls. With the whole
/// map in memory ([`FullMap`](crate::ftl::FullMap)) nothing: its answers are constants the compiler folds away, so
/// the `page` scheme's path is what it would be without a cached map. With a mapping cache
/// (`hil/cached.rs`): a command's translation pages looked up before it goes on, and the
/// translation-page reads and programs the cache asks for. The page path is generic over it,
/// compiled once for each page-mapped scheme.
pub(crate) trait MapWork: Translation + Sized {
    /// What the page path keeps to read ahead of sequential streams (`controller.read_ahead`),
    /// the scheme's beside its FTL: [`ReadAhead`](crate::ctrl::read_ahead::ReadAhead) with
    /// the whole map, whose firmware knows where every page is; nothing (`()`) with a mapping
    /// cache, whose firmware would have to read translation pages it has not got.
    type Ahead;
    /// A host read of `len` bytes at `offset` was dispatched: the bytes to sense ahead of its
    /// stream, in whole pages of `geo` within `ftl`'s logical space (None: nothing new, or no
    /// read-ahead).
    fn read_ahead(
        ahead: &mut Self::Ahead,
        offset: u64,
        len: u64,
        geo: &Geometry,
        ftl: &Ftl<Self>,
    ) -> Option<std::ops::Range<u64>>;
    /// `cmd`'s map entries, before it goes on at `stage`: true when they are at hand now;
    /// else it waits, and goes on from the map's own paths.
    fn look_up(
        hil: &mut Hil,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        p: &mut Ports<Ftl<Self>>,
    ) -> Result<bool>;
    /// Issue the map work the map asked for ([`Hil::pump_map`]).
    fn pump(hil: &mut Hil, now: SimTime, p: &mut Ports<Ftl<Self>>) -> Result<()>;
    /// Translation page read `t` (`MapRead` or `MapUpdateRead`) is done.
    fn read_done(hil: &mut Hil, ready: SimTime, t: &Txn, p: &mut Ports<Ftl<Self>>) -> Result<()>;
    /// `cmd`'s map entries are at hand: it goes on at `stage` ([`Hil::map_resume`]).
    fn resume(
        hil: &mut Hil,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        p: &mut Ports<Ftl<Self>>,
    ) -> Result<()>;
}

/// A scheme with its own map reads and programs no translation page.
impl MapOwner for NoPageGc {
    fn map_read_done(_: &mut Hil, _: SimTime, _: &Txn, _: &mut Ports<Self>) -> Result<()> {
        unreachable!("a scheme with its own map reads no translation page")
    }

    #[inline]
    fn pump_map(_: &mut Hil, _: SimTime, _: &mut Ports<Self>) -> Result<()> {
        Ok(())
    }
}

mod block;
mod cached;
mod page;
mod raw;
#[cfg(test)]
mod tests;
mod zoned;
