//! Host interface layer: firmware time per command, the split of commands into map-unit
//! transactions, and what a finished transaction means for its command (data to the host, the
//! command's completion).
//!
//! The HIL reaches the host through [`HostPort`] (data movement and completions are the
//! interface's), flash through [`FlashPort`], and the cache buffer, when there is one, through
//! its manager.

use super::buffer::{BufferManager, Lines};
use super::fil::{FlashOwner, NoPageGc, Queue, Txn, TxnKind};
use super::hybrid::HybridCtrl;
use super::raw::RawNand;
use super::{units_of, Behind, FlashPort, HilCounters};
use crate::config::{FtlKind, SsdConfig};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::mapping_cache::Stage;
use crate::ftl::{Ftl, FullMap, Refusal, Translation};
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
    /// A raw device: a command's transactions, kept for its capacity.
    raw_txns: Vec<u32>,
    /// `controller.read_ahead` in bytes (0: off), and the sequential streams it follows.
    read_ahead: u64,
    streams: Vec<Stream>,
    /// The stream a new one replaces once `STREAMS` are followed (round robin).
    stream_victim: usize,
}

/// Sequential streams the read-ahead follows at once (assumed: a few concurrent readers).
const STREAMS: usize = 8;

/// How far before a stream's end a read may start and still continue it (assumed: a queue
/// depth's worth of 4 KiB reads arriving out of order).
const STREAM_SLACK: u64 = 128 << 10;

/// A read stream: where its next read starts if it is sequential, and how far (bytes) its
/// read-ahead has already been asked for.
#[derive(Clone, Copy, Debug)]
struct Stream {
    next: u64,
    ahead: u64,
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
            raw_txns: Vec::new(),
            read_ahead: cfg.controller.read_ahead.map_or(0, |b| b.0),
            streams: Vec::new(),
            stream_victim: 0,
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

    /// The firmware is done with a command of the page-mapped FTL (full or cached map): start
    /// its work.
    #[inline(always)]
    pub(crate) fn dispatch<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        if self.refuse_protected(now, cmd, up) {
            return Ok(());
        }
        self.dispatch_mapped(now, cmd, up, flash, cache)
    }

    /// The firmware is done with a command of a block-mapped FTL: reads and trims are the
    /// FTL's; writes pull their data, flushes go to the cache buffer, as on the page FTL.
    /// Never inlined, nor are the other back ends' handlers: inlined, they would make
    /// `Device::handle` too big to be inlined into the event loop with the page FTL's path.
    #[inline(never)]
    pub(crate) fn dispatch_block(
        &mut self,
        now: SimTime,
        cmd: u32,
        h: &mut HybridCtrl,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        if self.refuse_protected(now, cmd, up) {
            return Ok(());
        }
        let c = up.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        match op {
            // With `skip_media` the firmware answers reads at once, whatever the FTL.
            Op::Read if !self.skip_media => h.read(now, cmd, up, flash, &mut self.counters, cache),
            Op::Trim => {
                if h.ftl.read_only() {
                    // As on the page FTL: a worn-out drive changes nothing.
                    up.cmds.get_mut(cmd).status = Status::ReadOnly;
                } else {
                    h.trim(offset, len, flash, cache);
                }
                up.complete(now, cmd);
                Ok(())
            }
            Op::Flush => match cache {
                Some(bm) if bm.write_back() => {
                    bm.flush_command(now, cmd, up, &mut flash.with_blocks(h))
                }
                _ => {
                    up.complete(now, cmd);
                    Ok(())
                }
            },
            Op::Read => {
                // `skip_media`: the firmware answers at once, only the data phase remains.
                let end = up.push_read_data(now, cmd, len, 0);
                up.complete(end, cmd);
                Ok(())
            }
            Op::Write => {
                // Its data first; the block map places it (`write_data_in_block`).
                let end = up.link.pull_write_data(now, up.cmds.get(cmd));
                up.q.push(end, Event::WriteDataIn { cmd });
                Ok(())
            }
            // The device refuses erases and zone commands of a mapped device at submission.
            Op::Erase => unreachable!("an erase on a device with an FTL"),
            Op::Append
            | Op::ZoneReset
            | Op::ZoneFinish
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneOffline => unreachable!("a zone command on a device without zones"),
        }
    }

    /// A command of the page-mapped FTL, once past the write protection.
    #[inline(always)]
    fn dispatch_mapped<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        mut cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        let c = up.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        match op {
            Op::Read => {
                if !self.skip_media
                    && !M::look_up(self, now, cmd, Stage::Read, up, flash, cache.as_deref_mut())?
                {
                    return Ok(());
                }
                self.dispatch_read(now, cmd, offset, len, up, flash, cache)?
            }
            Op::Write => {
                // The map entry was prefetched at the doorbell; now warm where it points, for
                // the FTL write when the data is in.
                flash.ftl.prefetch_target(offset / self.geo.unit_bytes);
                let end = up.link.pull_write_data(now, up.cmds.get(cmd));
                up.q.push(end, Event::WriteDataIn { cmd });
            }
            Op::Trim if flash.ftl.read_only() => {
                up.refuse(now, cmd, Status::ReadOnly);
            }
            Op::Trim => {
                let unit = self.geo.unit_bytes;
                let mut cache = cache;
                for (lpn, covered) in units_of(unit, offset, len) {
                    // Only whole units can be unmapped; a partial one keeps its data.
                    if covered == unit {
                        // (With a cached map, the FTL tells its translation page.)
                        if let Some(dc) = flash.check.as_mut() {
                            dc.trimmed(lpn, flash.ftl);
                        }
                        flash.ftl.trim(lpn);
                        if let Some(bm) = cache.as_deref_mut() {
                            bm.discard(lpn);
                        }
                    }
                }
                self.pump_map(now, up, flash, cache)?;
                up.complete(now, cmd);
            }
            Op::Flush => match cache {
                Some(bm) if bm.write_back() => {
                    bm.flush_command(now, cmd, up, flash)?;
                    self.pump_map(now, up, flash, Some(bm))?
                }
                // No volatile data to write back: done once the firmware saw it.
                _ => up.complete(now, cmd),
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

    /// A raw device's command: reads sense the units named, programs and erases are checked
    /// against the media's rules first (a refused one ends at once with its status, having
    /// changed nothing), trims are not done.
    #[inline(never)]
    pub(crate) fn dispatch_raw(
        &mut self,
        now: SimTime,
        cmd: u32,
        raw: &mut RawNand,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
    ) {
        let c = up.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        let refuse = |up: &mut HostPort, status| up.refuse(now, cmd, status);
        match op {
            Op::Read => {
                let mut txns = std::mem::take(&mut self.raw_txns);
                txns.clear();
                txns.extend(
                    units_of(self.geo.unit_bytes, offset, len).map(|(pun, covered)| {
                        let t =
                            self.read_txn(TxnKind::HostRead, cmd, pun as u32, covered as u32, pun);
                        flash.fil.add_txn(t)
                    }),
                );
                self.counters.host_units_read += txns.len() as u64;
                up.cmds.get_mut(cmd).txns_left = txns.len() as u32;
                flash
                    .fil
                    .enqueue_all(now, &txns, Queue::HostRead, flash.ftl, up.q);
                self.raw_txns = txns;
            }
            Op::Write => match raw.program(offset, len) {
                Status::Ok => {
                    let end = up.link.pull_write_data(now, up.cmds.get(cmd));
                    up.q.push(end, Event::WriteDataIn { cmd });
                }
                refused => refuse(up, refused),
            },
            Op::Erase => {
                let Some(blocks) = raw.blocks_of(offset, len) else {
                    return refuse(up, Status::Misaligned);
                };
                up.cmds.get_mut(cmd).txns_left = blocks.len() as u32;
                for block in blocks {
                    raw.erased(block);
                    let t = flash.fil.add_txn(self.raw_txn(
                        TxnKind::Erase,
                        cmd,
                        block * self.geo.units_per_block(),
                        0,
                        0,
                    ));
                    flash.fil.enqueue(now, t, Queue::HostWrite, flash.ftl, up.q);
                }
            }
            Op::Trim => refuse(up, Status::Unsupported),
            Op::Flush => up.complete(now, cmd),
            Op::Append
            | Op::ZoneReset
            | Op::ZoneFinish
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneOffline => unreachable!("the device refuses zone commands without zones"),
        }
    }

    /// A raw device's program has its data: program every unit where the request names it.
    fn program_raw(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
    ) {
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        let unit = self.geo.unit_bytes;
        let mut txns = std::mem::take(&mut self.raw_txns);
        txns.clear();
        txns.extend(units_of(unit, offset, len).map(|(pun, covered)| {
            let pun = pun as u32;
            flash
                .fil
                .add_txn(self.raw_txn(TxnKind::HostWrite, cmd, pun, covered as u32, pun))
        }));
        up.cmds.get_mut(cmd).txns_left = txns.len() as u32;
        flash
            .fil
            .enqueue_all(now, &txns, Queue::HostWrite, flash.ftl, up.q);
        self.raw_txns = txns;
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

    /// A driver's block erase finished (a raw device).
    pub(crate) fn erase_done(
        &mut self,
        now: SimTime,
        txn: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
    ) {
        let t = flash.fil.remove_txn(txn);
        if t.cmd == crate::ftl::NONE {
            // A merge's erase for a cache buffer's flush: no command waits for it.
            return;
        }
        let c = up.cmds.get_mut(t.cmd);
        c.txns_left -= 1;
        if c.txns_left == 0 {
            up.complete(now, t.cmd);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn dispatch_read<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        offset: u64,
        len: u64,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        mut cache: Option<&mut BufferManager>,
    ) -> Result<()> {
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
        for (lpn, covered) in units_of(self.geo.unit_bytes, offset, len) {
            self.counters.host_units_read += 1;
            if let Some(dc) = flash.check.as_mut() {
                let slot = cache.as_deref().and_then(|bm| bm.find(lpn));
                let pun = if slot.is_none() {
                    flash.ftl.lookup(lpn)
                } else {
                    None
                };
                dc.read(lpn, slot, pun);
            }
            if let Some(bm) = cache.as_deref_mut() {
                if let Some(t) = bm.read(now, lpn, covered) {
                    direct_bytes += covered;
                    direct_at = direct_at.max(t);
                    continue;
                }
                all_hit = false;
            }
            match flash.ftl.lookup(lpn) {
                None => {
                    self.counters.unmapped_reads += 1;
                    direct_bytes += covered;
                }
                Some(pun) if !flash.ftl.is_programmed(pun) => {
                    // Still on its way to NAND: served from the controller's write buffer.
                    self.counters.buffer_reads += 1;
                    direct_bytes += covered;
                }
                Some(pun) => {
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
        if self.read_ahead != 0 {
            self.read_ahead_after(now, offset, len, up, flash);
        }
        if all_hit {
            if let Some(bm) = cache {
                bm.maybe_preemptive_flush(now, up, flash)?;
                // With a cached map, the flush may have missed on its translation page.
                self.pump_map(now, up, flash, Some(bm))?;
            }
        }
        Ok(())
    }

    /// Read-ahead (`controller.read_ahead`): a read of `len` bytes at `offset` that starts where
    /// a followed stream's last read ended continues it; the mapped pages from the end of what
    /// was already read ahead up to `read_ahead` bytes past the read's end are sensed into their
    /// registers (one read-ahead per page, queued after the host's reads). Any other read starts
    /// a stream of its own. Not with cached mapping: the firmware would have to load
    /// translation pages it has not got.
    #[cold]
    #[inline(never)]
    fn read_ahead_after<M: MapWork>(
        &mut self,
        now: SimTime,
        offset: u64,
        len: u64,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
    ) {
        let end = offset.saturating_add(len);
        // Reads of one stream may reach the firmware a little out of order (several queues):
        // one that starts at most `STREAM_SLACK` bytes before the stream's end, or anywhere in
        // what it read ahead, continues it.
        let Some(i) = self.streams.iter().position(|s| {
            offset >= s.next.saturating_sub(STREAM_SLACK) && offset <= s.ahead.max(s.next)
        }) else {
            let s = Stream {
                next: end,
                ahead: end,
            };
            if self.streams.len() < STREAMS {
                self.streams.push(s);
            } else {
                self.streams[self.stream_victim] = s;
                self.stream_victim = (self.stream_victim + 1) % STREAMS;
            }
            return;
        };
        if !M::READS_AHEAD {
            return;
        }
        let unit = self.geo.unit_bytes;
        let logical_end = flash.ftl.logical_units().saturating_mul(unit);
        let s = &mut self.streams[i];
        s.next = s.next.max(end);
        // In whole logical pages, so that reads advancing a few KiB at a time do not ask for
        // one page again and again.
        let page_bytes = unit * self.geo.units_per_page as u64;
        let from = s.ahead.max(end).div_ceil(page_bytes) * page_bytes;
        // No further than one page per plane from the read's start: a stream's pages go round
        // the planes, and a page read ahead further would replace an earlier one, not yet
        // read, in its plane's register.
        let one_round = offset.saturating_add(page_bytes * self.geo.planes() as u64);
        let to = end
            .saturating_add(self.read_ahead)
            .min(one_round)
            .div_ceil(page_bytes)
            .saturating_mul(page_bytes)
            .min(logical_end);
        if from >= to {
            return;
        }
        s.ahead = to;
        let mut last_page = crate::ftl::NONE;
        for (lpn, _) in units_of(unit, from, to - from) {
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

    /// The firmware answers a write at once, without touching the media (`skip_media`): true
    /// when `cmd` was completed so.
    #[inline(always)]
    fn write_skips_media(&self, now: SimTime, cmd: u32, up: &mut HostPort) -> bool {
        if self.skip_media {
            up.complete(now, cmd);
        }
        self.skip_media
    }

    /// A raw device's write command's data is in the controller: program it.
    #[inline(never)]
    pub(crate) fn write_data_in_raw(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
    ) {
        if !self.write_skips_media(now, cmd, up) {
            self.program_raw(now, cmd, up, flash);
        }
    }

    /// A block-mapped FTL's write command's data is in the controller: its read-modify-write
    /// reads first, else its units.
    #[inline(never)]
    pub(crate) fn write_data_in_block(
        &mut self,
        now: SimTime,
        cmd: u32,
        h: &mut HybridCtrl,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        if self.write_skips_media(now, cmd, up) {
            return Ok(());
        }
        let rmw = h.rmw_reads(now, cmd, up, flash, cache.as_deref());
        if rmw > 0 {
            up.cmds.get_mut(cmd).rmw_left = rmw;
            return Ok(());
        }
        Self::write_units_block(now, cmd, h, up, flash, cache)
    }

    /// A block-mapped FTL's write command's data is in and its old data read: a write-back
    /// buffer takes its pages (flushed to the block map later), else they are placed now.
    #[inline(never)]
    pub(crate) fn write_units_block(
        now: SimTime,
        cmd: u32,
        h: &mut HybridCtrl,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        if h.ftl.read_only() {
            // A worn-out drive takes nothing new, into its buffer or onto NAND.
            up.refuse(now, cmd, Status::ReadOnly);
            return Ok(());
        }
        match cache {
            Some(bm) if bm.write_back() && up.cmds.get(cmd).status == Status::Ok => {
                bm.write(now, cmd, up, &mut flash.with_blocks(h))
            }
            cache => h.write_units(now, cmd, up, flash, cache),
        }
    }

    /// A write command's data is in the controller (page-mapped FTL): read what partial units
    /// keep of their old data first, else place the units.
    #[inline(always)]
    pub(crate) fn write_data_in<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        if self.write_skips_media(now, cmd, up) {
            return Ok(());
        }
        let mut cache = cache;
        if !M::look_up(
            self,
            now,
            cmd,
            Stage::Write,
            up,
            flash,
            cache.as_deref_mut(),
        )? {
            return Ok(());
        }
        self.write_data_mapped(now, cmd, up, flash, cache)
    }

    /// A write command's data is in and its map entries are at hand: read-modify-write reads,
    /// else place the units.
    fn write_data_mapped<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        let c = up.cmds.get(cmd);
        let unit = self.geo.unit_bytes;
        let mut rmw = 0;
        for (lpn, covered) in units_of(unit, c.offset, c.len) {
            // A whole unit, or one whose old data is in the cache buffer, needs no read.
            if covered == unit
                || cache
                    .as_deref()
                    .is_some_and(|bm| bm.write_back() && bm.find(lpn).is_some())
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
        self.write_units(now, cmd, up, flash, cache)
    }

    /// Map every unit of a write command to a new physical unit and queue its program (or,
    /// with a write-back buffer, put the units into the buffer).
    #[inline]
    pub(crate) fn write_units<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        mut cache: Option<&mut BufferManager>,
    ) -> Result<()> {
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
                return self.pump_map(now, up, flash, Some(bm));
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
        self.pump_map(now, up, flash, cache)
    }

    /// The translation-page work the mapping cache asked for, issued ([`MapWork::pump`]; with
    /// the whole map in memory, nothing).
    #[inline(always)]
    pub(crate) fn pump_map<M: MapWork>(
        &mut self,
        now: SimTime,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        M::pump(self, now, up, flash, cache)
    }

    /// `cmd`'s map entries crossed the link from a mapping cache in host memory
    /// (`Event::MapReady`): it goes on at `stage` ([`MapWork::resume`]).
    pub(crate) fn map_resume<M: MapWork>(
        &mut self,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        M::resume(self, now, cmd, stage, up, flash, cache)
    }

    /// A read transaction's data is decoded at `ready`: move it to the host (or, for a
    /// read-modify-write, count it) and complete the command when it was the last. `behind`:
    /// what the cache buffer, when there is one, works in front of (whose map it follows).
    #[inline]
    pub(crate) fn read_done<O: MapOwner>(
        &mut self,
        ready: SimTime,
        txn: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<O>,
        cache: Option<&mut BufferManager>,
        behind: &mut Behind<'_>,
    ) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        let t = flash.fil.remove_txn(txn);
        if matches!(t.kind, TxnKind::MapRead | TxnKind::MapUpdateRead) {
            // A translation page cannot fail to decode here: the model knows the map.
            flash.fil.take_failure(txn);
            return O::map_read_done(self, ready, &t, up, flash, cache);
        }
        let cmd = t.cmd;
        let failed = flash.fil.take_failure(txn);
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
        if !failed {
            if let Some(bm) = cache {
                // What the buffer keeps follows the map of the back end behind it.
                match behind {
                    Behind::PageFtl => bm.fill(ready, t.aux as u64, t.pun, flash),
                    _ => bm.fill(ready, t.aux as u64, t.pun, &mut flash.with_behind(behind)),
                }
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

    /// A program transaction of the page-mapped FTL finished at `now`.
    #[inline]
    pub(crate) fn program_done<M: MapWork>(
        &mut self,
        now: SimTime,
        txn: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<M>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        let geo = &self.geo;
        let mark = |t: &Txn, ftl: &mut Ftl<M>| {
            // Only if the block was not erased (and reused) since the write was mapped.
            if ftl.blocks()[geo.block_of_unit(t.pun) as usize].epoch == t.epoch {
                ftl.mark_programmed(t.pun);
            }
        };
        let t = flash.fil.remove_txn(txn);
        mark(&t, flash.ftl);
        if t.overwrote != crate::ftl::NONE {
            // The data it replaced may go with its block now.
            flash.ftl.overwrite_programmed(t.overwrote);
        }
        self.programmed(now, t, up, flash, cache)
    }

    /// A program transaction of another back end finished at `now`: `mark` records it in the
    /// back end's map (a block-mapped FTL's; a raw device's firmware keeps nothing).
    #[inline(never)]
    pub(crate) fn program_done_by(
        &mut self,
        now: SimTime,
        txn: u32,
        mark: impl FnOnce(&Txn),
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        let t = flash.fil.remove_txn(txn);
        mark(&t);
        self.programmed(now, t, up, flash, cache)
    }

    /// A cache buffer's flush of line `slot` is on NAND. Out of line: the flushes it starts
    /// may miss on their translation pages (cached map), which the HIL then reads.
    #[inline(never)]
    fn flush_programmed<O: MapOwner>(
        &mut self,
        now: SimTime,
        slot: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<O>,
        bm: &mut BufferManager,
    ) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        bm.flush_done(now, slot, up, flash)?;
        O::pump_map(self, now, up, flash, Some(bm))
    }

    /// A program transaction of a block-mapped FTL finished at `now`: recorded in its map, then
    /// a merge copy counts for its write command (none: a flush's merge), a flush's program
    /// goes back to the cache buffer, a host page to its command. `flash` holds the FTL.
    #[inline(never)]
    pub(crate) fn program_done_block(
        &mut self,
        now: SimTime,
        txn: u32,
        up: &mut HostPort,
        flash: &mut FlashPort<NoPageGc>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        let t = flash.fil.remove_txn(txn);
        let super::Behind::Blocks(h) = &mut flash.behind else {
            unreachable!("the block-mapped FTL in the port")
        };
        h.program_done(&t);
        if t.kind == TxnKind::Copy {
            if t.cmd != crate::ftl::NONE {
                let c = up.cmds.get_mut(t.cmd);
                c.txns_left -= 1;
                if c.txns_left == 0 {
                    up.complete(now, t.cmd);
                }
            }
            return Ok(());
        }
        self.programmed(now, t, up, flash, cache)
    }

    /// What a finished program means for its command.
    #[inline(always)]
    fn programmed<O: MapOwner>(
        &mut self,
        now: SimTime,
        t: Txn,
        up: &mut HostPort,
        flash: &mut FlashPort<O>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        if t.kind == TxnKind::MapWrite {
            // A translation page or a map checkpoint's page is on NAND: no command waited for
            // it (a checkpoint's counts once all its pages are).
            if t.cmd != crate::ftl::NONE {
                flash.checkpoint_page_programmed(t.cmd);
            }
            return Ok(());
        }
        if t.kind == TxnKind::Flush {
            let bm = cache.expect("a flush comes from the cache buffer");
            return self.flush_programmed(now, t.cmd, up, flash, bm);
        }
        if let Some(bm) = cache {
            bm.write_through(now, t.aux as u64, t.pun, flash);
        }
        let c = up.cmds.get_mut(t.cmd);
        c.txns_left -= 1;
        if c.txns_left == 0 {
            up.complete(now, t.cmd);
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
    fn map_read_done(
        hil: &mut Hil,
        ready: SimTime,
        t: &Txn,
        up: &mut HostPort,
        flash: &mut FlashPort<Self>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()>;
    /// Start the map work that can go on now ([`Hil::pump_map`]).
    fn pump_map(
        hil: &mut Hil,
        now: SimTime,
        up: &mut HostPort,
        flash: &mut FlashPort<Self>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()>;
}

impl<M: MapWork> MapOwner for Ftl<M> {
    #[inline]
    fn map_read_done(
        hil: &mut Hil,
        ready: SimTime,
        t: &Txn,
        up: &mut HostPort,
        flash: &mut FlashPort<Self>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        M::read_done(hil, ready, t, up, flash, cache)
    }

    #[inline]
    fn pump_map(
        hil: &mut Hil,
        now: SimTime,
        up: &mut HostPort,
        flash: &mut FlashPort<Self>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        M::pump(hil, now, up, flash, cache)
    }
}

/// What the page path asks of the page FTL's map beyond the FTL's own calls. With the whole
/// map in memory ([`FullMap`]) nothing: its answers are constants the compiler folds away, so
/// the `page` scheme's path is what it would be without a cached map. With a mapping cache
/// (`hil/cached.rs`): a command's translation pages looked up before it goes on, and the
/// translation-page reads and programs the cache asks for. The page path is generic over it,
/// compiled once for each page-mapped scheme.
pub(crate) trait MapWork: Translation + Sized {
    /// Whether read-ahead may run: the firmware knows where every page is without reading
    /// translation pages it has not got.
    const READS_AHEAD: bool;
    /// `cmd`'s map entries, before it goes on at `stage`: true when they are at hand now;
    /// else it waits, and goes on from the map's own paths.
    fn look_up(
        hil: &mut Hil,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<Self>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<bool>;
    /// Issue the map work the map asked for ([`Hil::pump_map`]).
    fn pump(
        hil: &mut Hil,
        now: SimTime,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<Self>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()>;
    /// Translation page read `t` (`MapRead` or `MapUpdateRead`) is done.
    fn read_done(
        hil: &mut Hil,
        ready: SimTime,
        t: &Txn,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<Self>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()>;
    /// `cmd`'s map entries are at hand: it goes on at `stage` ([`Hil::map_resume`]).
    fn resume(
        hil: &mut Hil,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        up: &mut HostPort,
        flash: &mut FlashPort<Ftl<Self>>,
        cache: Option<&mut BufferManager>,
    ) -> Result<()>;
}

/// The whole map in memory: every entry at hand, no translation page to read or program.
impl MapWork for FullMap {
    const READS_AHEAD: bool = true;

    #[inline(always)]
    fn look_up(
        _hil: &mut Hil,
        _now: SimTime,
        _cmd: u32,
        _stage: Stage,
        _up: &mut HostPort,
        _flash: &mut FlashPort<Ftl<Self>>,
        _cache: Option<&mut BufferManager>,
    ) -> Result<bool> {
        Ok(true)
    }

    #[inline(always)]
    fn pump(
        _hil: &mut Hil,
        _now: SimTime,
        _up: &mut HostPort,
        _flash: &mut FlashPort<Ftl<Self>>,
        _cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        Ok(())
    }

    fn read_done(
        _hil: &mut Hil,
        _ready: SimTime,
        _t: &Txn,
        _up: &mut HostPort,
        _flash: &mut FlashPort<Ftl<Self>>,
        _cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        unreachable!("the whole map in memory reads no translation page")
    }

    fn resume(
        _hil: &mut Hil,
        _now: SimTime,
        _cmd: u32,
        _stage: Stage,
        _up: &mut HostPort,
        _flash: &mut FlashPort<Ftl<Self>>,
        _cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        unreachable!("the whole map in memory waits for no map entry")
    }
}

/// A scheme with its own map reads and programs no translation page.
impl MapOwner for NoPageGc {
    fn map_read_done(
        _hil: &mut Hil,
        _ready: SimTime,
        _t: &Txn,
        _up: &mut HostPort,
        _flash: &mut FlashPort<Self>,
        _cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        unreachable!("a scheme with its own map reads no translation page")
    }

    #[inline]
    fn pump_map(
        _hil: &mut Hil,
        _now: SimTime,
        _up: &mut HostPort,
        _flash: &mut FlashPort<Self>,
        _cache: Option<&mut BufferManager>,
    ) -> Result<()> {
        Ok(())
    }
}

mod cached;
#[cfg(test)]
mod tests;
mod zoned;
