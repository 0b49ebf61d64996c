//! The firmware of a block-mapped FTL (`ftl.kind = "block" | "bast" | "fast"`, `ftl::hybrid`):
//! what the HIL does for reads, writes and trims when the map names blocks.
//!
//! A host page write becomes the NAND operations the FTL lists for it — the merge's copies
//! and erases it triggered, then its program — each a transaction of the write's command, all
//! queued in order in the host-write queue of their die (a logical block's pages, logs and
//! merge blocks share one plane, so one die). The FIL runs that queue in order (a copy or an
//! erase is never overtaken), times copies as GC copies (sense, out over the channel, ECC, in,
//! program) and erases by tBERS, so a merge costs what the media's timings make it; the
//! command completes when its last transaction does, so a host write waits for the merge it
//! triggered.

use super::datacheck::DataCheck;
use super::fil::{Fil, NoPageGc, Queue, Txn, TxnKind};
use super::{units_of, HilCounters, Ports};
use crate::config::SsdConfig;
use crate::error::Result;
use crate::event::Event;
use crate::ftl::hybrid::{Hybrid, NandOp};
use crate::ftl::{Refusal, NONE};
use crate::media::nand::Geometry;
use crate::request::Status;
use crate::sim::EventQueue;
use crate::sim::SimTime;

pub struct HybridCtrl {
    pub ftl: Hybrid,
    geo: Geometry,
    /// The operations of the write being placed (capacity reused).
    ops: Vec<NandOp>,
}

impl HybridCtrl {
    /// The FTL `cfg` names over `geo`; with `[reliability]`, its factory bad blocks are drawn
    /// from `seed`.
    pub fn new(cfg: &SsdConfig, geo: &Geometry, seed: u64) -> HybridCtrl {
        let mut ftl = Hybrid::new(
            geo,
            cfg.ftl.kind,
            cfg.logical_units(),
            cfg.ftl.log_blocks.unwrap_or(0),
        );
        if let Some(r) = &cfg.reliability {
            ftl.start_wear(
                r.pe_limit_for(cfg.nand.cell),
                r.factory_bad_block_rate,
                seed,
            );
        }
        HybridCtrl {
            ftl,
            geo: geo.clone(),
            ops: Vec::new(),
        }
    }

    fn txn(&self, kind: TxnKind, cmd: u32, pun: u32, host_bytes: u32, aux: u32) -> Txn {
        let block = self.geo.block_of_unit(pun);
        Txn {
            kind,
            cmd,
            pun,
            plane: self.geo.plane_of_block(block),
            host_bytes,
            // The block's erases so far: a program that ends after its block was given up
            // (erased and reused) does not mark the new data as programmed.
            epoch: self.ftl.erase_counts()[block as usize],
            aux,
            overwrote: crate::ftl::NONE,
        }
    }

    /// A host program or merge copy ended.
    pub(crate) fn program_done(&mut self, t: &Txn) {
        let block = self.geo.block_of_unit(t.pun);
        if self.ftl.erase_counts()[block as usize] == t.epoch {
            self.ftl.mark_programmed(t.pun);
        }
    }

    /// A read: pages in the cache buffer come from its DRAM; mapped pages whose program is
    /// over are sensed; the others are answered by the controller (unmapped: zeros; not yet
    /// programmed: from the write buffer or the copy in flight).
    pub(crate) fn read(
        &mut self,
        now: SimTime,
        cmd: u32,
        counters: &mut HilCounters,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        let mut txns = 0;
        let mut direct_bytes = 0;
        let mut direct_at = now;
        let mut all_hit = cache.is_some();
        for (lpn, covered) in units_of(self.geo.unit_bytes, offset, len) {
            counters.host_units_read += 1;
            let slot = cache.as_deref().and_then(|bm| bm.find(lpn));
            let pun = self.ftl.lookup(lpn);
            if let Some(dc) = flash.check.as_mut() {
                dc.read(lpn, slot, pun.filter(|_| slot.is_none()));
            }
            if let Some(bm) = cache.as_deref_mut() {
                if let Some(t) = bm.read(now, lpn, covered) {
                    direct_bytes += covered;
                    direct_at = direct_at.max(t);
                    continue;
                }
                all_hit = false;
            }
            match pun {
                None => {
                    counters.unmapped_reads += 1;
                    direct_bytes += covered;
                }
                Some(p) if !self.ftl.is_programmed(p) => {
                    counters.buffer_reads += 1;
                    direct_bytes += covered;
                }
                Some(p) => {
                    txns += 1;
                    let t = self.txn(TxnKind::HostRead, cmd, p, covered as u32, lpn as u32);
                    let t = flash.fil.add_txn(t);
                    flash.fil.enqueue(now, t, Queue::HostRead, flash.ftl, up.q);
                }
            }
        }
        up.reads_dispatched(now, cmd, txns, direct_bytes, direct_at);
        match cache.as_deref_mut() {
            Some(bm) if all_hit => bm.maybe_preemptive_flush(now, up, &mut flash.with_blocks(self)),
            _ => Ok(()),
        }
    }

    /// Whole pages in the range are unmapped (and dropped from the cache buffer); no NAND work.
    pub(crate) fn trim(&mut self, offset: u64, len: u64, p: &mut Ports<NoPageGc>) {
        let unit = self.geo.unit_bytes;
        for (lpn, covered) in units_of(unit, offset, len) {
            if covered == unit {
                self.ftl.trim(lpn);
                if let Some(dc) = p.flash.check.as_mut() {
                    dc.trimmed_in_place(lpn);
                }
                if let Some(bm) = p.cache.as_deref_mut() {
                    bm.discard(lpn);
                }
            }
        }
    }

    /// A write's data is in: partial pages with programmed old data are read first, unless a
    /// write-back buffer holds the page (returns how many reads were queued; 0: place the pages
    /// now).
    pub(crate) fn rmw_reads(&mut self, now: SimTime, cmd: u32, p: &mut Ports<NoPageGc>) -> u32 {
        let Ports { up, flash, cache } = p;
        let c = up.cmds.get(cmd);
        let unit = self.geo.unit_bytes;
        let mut rmw = 0;
        for (lpn, covered) in units_of(unit, c.offset, c.len) {
            if covered == unit
                || cache
                    .as_deref()
                    .is_some_and(|bm| bm.write_back() && bm.find(lpn).is_some())
            {
                continue;
            }
            if let Some(p) = self.ftl.lookup(lpn).filter(|&p| self.ftl.is_programmed(p)) {
                let t = flash.fil.add_txn(self.txn(TxnKind::RmwRead, cmd, p, 0, 0));
                flash.fil.enqueue(now, t, Queue::HostRead, flash.ftl, up.q);
                rmw += 1;
            }
        }
        rmw
    }

    /// Place every page of a write command: each page's merge work and program go to its die,
    /// in the order the FTL listed them, as transactions of the command. A write-through
    /// buffer takes each page's new data as it is mapped (a read must not find an older copy
    /// in it while the program runs).
    pub(crate) fn write_units(
        &mut self,
        now: SimTime,
        cmd: u32,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let Ports { up, flash, cache } = p;
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        if c.status != Status::Ok {
            // Its read-modify-write read failed: nothing is written.
            up.complete(now, cmd);
            return Ok(());
        }
        let upb = self.geo.units_per_block();
        let mut ops = std::mem::take(&mut self.ops);
        let mut total = 0u32;
        let mut refused = None;
        for (lpn, covered) in units_of(self.geo.unit_bytes, offset, len) {
            ops.clear();
            if let Err(refusal) = self.ftl.write_checked(lpn, &mut ops)? {
                // The pages placed so far still program, and so does the merge work listed
                // before the refusal; this page and the rest keep their old data.
                refused = Some(match refusal {
                    Refusal::ReadOnly => Status::ReadOnly,
                    Refusal::NoSpace => Status::NoSpace,
                });
            }
            for &op in &ops {
                let t = match op {
                    NandOp::Copy { from, to } => {
                        if let Some(dc) = flash.check.as_mut() {
                            dc.moved_in_place(from, to);
                        }
                        self.txn(TxnKind::Copy, cmd, to, 0, from)
                    }
                    NandOp::Erase { block } => self.txn(TxnKind::Erase, cmd, block * upb, 0, 0),
                    NandOp::Program { pun } => {
                        if let Some(dc) = flash.check.as_mut() {
                            dc.write_to_nand_in_place(lpn, pun);
                        }
                        if let Some(bm) = cache.as_deref_mut() {
                            bm.write_through(now, lpn, pun, &mut flash.with_blocks(self));
                        }
                        self.txn(TxnKind::HostWrite, cmd, pun, covered as u32, lpn as u32)
                    }
                };
                total += 1;
                let t = flash.fil.add_txn(t);
                flash.fil.enqueue(now, t, Queue::HostWrite, flash.ftl, up.q);
            }
            if refused.is_some() {
                break;
            }
        }
        self.ops = ops;
        // No transaction ends before an event is handled: the count is complete in time.
        let c = up.cmds.get_mut(cmd);
        c.txns_left = total;
        if let Some(status) = refused {
            c.status = status;
            if total == 0 {
                up.complete(now, cmd);
            }
        }
        Ok(())
    }

    /// The cache buffer flushes line `slot`, holding logical page `lpn`: the merge work the
    /// page's write implies is queued first, as transactions of no command (`ftl::NONE`), then
    /// the line's program, a flush transaction naming the line; all on the page's die, in order.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn flush_line(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        fil: &mut Fil,
        owner: &NoPageGc,
        check: &mut Option<DataCheck>,
        q: &mut EventQueue<Event>,
    ) -> Result<()> {
        let upb = self.geo.units_per_block();
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        self.ftl.write(lpn, &mut ops)?;
        for &op in &ops {
            let t = match op {
                NandOp::Copy { from, to } => {
                    if let Some(dc) = check.as_mut() {
                        dc.moved_in_place(from, to);
                    }
                    self.txn(TxnKind::Copy, NONE, to, 0, from)
                }
                NandOp::Erase { block } => self.txn(TxnKind::Erase, NONE, block * upb, 0, 0),
                NandOp::Program { pun } => {
                    if let Some(dc) = check.as_mut() {
                        dc.flush_in_place(slot, pun);
                    }
                    self.txn(TxnKind::Flush, slot, pun, 0, 0)
                }
            };
            let t = fil.add_txn(t);
            fil.enqueue(now, t, Queue::HostWrite, owner, q);
        }
        self.ops = ops;
        Ok(())
    }
}
