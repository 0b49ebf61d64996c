//! The HIL's paths of the cached map (`ftl.mapping = "cached"`, DFTL; the `cached` scheme):
//! a command's translation pages looked up before it goes on, a miss read from NAND (or loaded
//! at once when it has no place there yet), the commands and cache buffer flushes waiting for
//! pages resumed, and the translation-page reads and programs the mapping cache asks for
//! (`ftl::mapping_cache` decides what it holds; this file turns that into NAND transactions).
//! The page path reaches them through [`MapWork`], which the whole map answers with nothing.
//! What they keep from call to call (the size of an entry, their work vectors,
//! [`LookupScratch`](crate::ftl::mapping_cache::LookupScratch)) is the mapping cache's, so that
//! the HIL holds nothing of the cached map.

use super::{Hil, MapWork};
use crate::ctrl::fil::{Queue, Txn, TxnKind};
use crate::ctrl::{units_of, Ports};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::mapping_cache::{Lookup, MappingCache, Stage};
use crate::ftl::CachedFtl;
use crate::media::nand::Geometry;
use crate::sim::SimTime;
use std::ops::Range;

impl MapWork for MappingCache {
    /// No read-ahead: the firmware would have to read translation pages it has not got.
    type Ahead = ();

    #[inline(always)]
    fn read_ahead(
        _ahead: &mut (),
        _offset: u64,
        _len: u64,
        _geo: &Geometry,
        _ftl: &CachedFtl,
    ) -> Option<Range<u64>> {
        None
    }

    #[inline]
    fn look_up(
        hil: &mut Hil,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        p: &mut Ports<CachedFtl>,
    ) -> Result<bool> {
        hil.map_lookup(now, cmd, stage, p)
    }

    #[inline]
    fn pump(hil: &mut Hil, now: SimTime, p: &mut Ports<CachedFtl>) -> Result<()> {
        let m = &p.flash.ftl.translation;
        if m.pending_updates.is_empty() && m.pending_writes.is_empty() && m.pending_loads.is_empty()
        {
            // Nothing asked for: most calls.
            return Ok(());
        }
        hil.pump_map_work(now, p)
    }

    #[inline]
    fn read_done(hil: &mut Hil, ready: SimTime, t: &Txn, p: &mut Ports<CachedFtl>) -> Result<()> {
        if t.kind == TxnKind::MapRead {
            return hil.map_loaded(ready, t.aux, p);
        }
        p.flash.ftl.translation.update_read(t.aux);
        hil.pump_map(ready, p)
    }

    fn resume(
        hil: &mut Hil,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        p: &mut Ports<CachedFtl>,
    ) -> Result<()> {
        hil.resume_mapped(now, cmd, stage, p)
    }
}

impl Hil {
    /// look up the translation pages `cmd`'s units use. True when all are
    /// cached in controller memory: the command goes on now. Else it waits, for the pages'
    /// reads (it goes on from [`Hil::map_loaded`]), or, with the cache in host memory, for
    /// its entries to cross the link (`Event::MapReady`). With a cache buffer, only the units
    /// that need their entry look it up: a read's units not in the buffer, a write-back
    /// write's partial units not in the buffer (their old data is read first), every unit of a
    /// write-through write; a read's unit in the buffer needs no translation, and a write-back
    /// write's units change their entries when flushed, not now.
    fn map_lookup(
        &mut self,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        p: &mut Ports<CachedFtl>,
    ) -> Result<bool> {
        let c = p.up.cmds.get(cmd);
        let unit = self.geo.unit_bytes;
        let Some(bm) = p.cache.as_deref() else {
            let m = &p.flash.ftl.translation;
            let (first, last) = (
                self.geo.unit_of(c.offset),
                self.geo.unit_of(c.offset + c.len - 1),
            );
            let pages = m.page_of(first)..=m.page_of(last);
            return self.map_lookup_pages(now, cmd, stage, pages, last - first + 1, p);
        };
        let write_back = stage == Stage::Write && bm.write_back();
        let mut pages = std::mem::take(&mut p.flash.ftl.translation.scratch.pages);
        pages.clear();
        let m = &p.flash.ftl.translation;
        let mut units = 0;
        for (lpn, covered) in units_of(unit, c.offset, c.len) {
            let needs_entry = match stage {
                // A write-through write changes every unit's entry now.
                Stage::Write if !write_back => true,
                Stage::Write => covered < unit && bm.find(lpn).is_none(),
                _ => bm.find(lpn).is_none(),
            };
            if needs_entry {
                units += 1;
                let page = m.page_of(lpn);
                if pages.last() != Some(&page) {
                    pages.push(page);
                }
            }
        }
        let go_on = pages.is_empty()
            || self.map_lookup_pages(now, cmd, stage, pages.iter().copied(), units, p)?;
        p.flash.ftl.translation.scratch.pages = pages;
        Ok(go_on)
    }

    /// [`Hil::map_lookup`] of the translation pages `pages`, for `units` map units.
    fn map_lookup_pages(
        &mut self,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        pages: impl Iterator<Item = u32> + Clone,
        units: u64,
        p: &mut Ports<CachedFtl>,
    ) -> Result<bool> {
        let m = &mut p.flash.ftl.translation;
        // Nothing queued for the map means nothing else can move a translation page while the
        // missing ones come in below.
        let quiet = m.pending_updates.is_empty()
            && m.pending_writes.is_empty()
            && m.pending_loads.is_empty();
        let mut loading = false;
        for page in pages.clone() {
            match m.lookup(page) {
                Lookup::Hit => {}
                Lookup::Loading => loading = true,
                Lookup::Miss => m.scratch.misses.push(page),
            }
        }
        let ftl = &p.flash.ftl;
        let misses = &ftl.translation.scratch.misses;
        let all_at_once = !loading
            && quiet
            && !misses.is_empty()
            && !misses
                .iter()
                .any(|&page| ftl.translation_on_nand(page).is_some());
        if all_at_once {
            // Every missing page comes in at once (nothing on NAND to read: the common case on a
            // fresh drive), and nobody waits for it: the same steps as through the waits below,
            // without registering and releasing them.
            let mut misses = std::mem::take(&mut p.flash.ftl.translation.scratch.misses);
            for page in misses.drain(..) {
                self.map_loaded(now, page, p)?;
            }
            p.flash.ftl.translation.scratch.misses = misses;
            self.map_resume(now, cmd, stage, p)?;
            return Ok(false);
        }
        if loading || !p.flash.ftl.translation.scratch.misses.is_empty() {
            // The command waits for every page not cached; every wait is registered before any
            // page comes in (some do at once).
            let m = &mut p.flash.ftl.translation;
            for page in pages {
                if m.is_loading(page) {
                    m.wait(page, cmd, stage);
                }
            }
            let mut misses = std::mem::take(&mut m.scratch.misses);
            for page in misses.drain(..) {
                self.load_page(now, page, p)?;
            }
            p.flash.ftl.translation.scratch.misses = misses;
            return Ok(false);
        }
        let m = &p.flash.ftl.translation;
        if m.hmb {
            let bytes = units * m.entry_bytes;
            let t = p.up.link.host_memory_read(now, bytes);
            let write = stage == Stage::Write;
            p.up.q.push(t, Event::MapReady { cmd, write });
            return Ok(false);
        }
        Ok(true)
    }

    /// translation page `page` missed. It is read from where the GTD puts it;
    /// a page never written (its entries all unmapped) or whose program has not finished (its
    /// data still in the controller) comes in at once.
    fn load_page(&mut self, now: SimTime, page: u32, p: &mut Ports<CachedFtl>) -> Result<()> {
        let flash = &mut p.flash;
        match flash.ftl.translation_on_nand(page) {
            Some(pun) => {
                flash.ftl.translation.stats.translation_reads += 1;
                let t = self.map_txn(TxnKind::MapRead, pun, page, 0);
                let t = flash.fil.add_txn(t);
                flash
                    .fil
                    .enqueue(now, t, Queue::HostRead, flash.ftl, p.up.q);
                Ok(())
            }
            None => self.map_loaded(now, page, p),
        }
    }

    #[inline]
    fn map_txn(&self, kind: TxnKind, pun: u32, page: u32, epoch: u32) -> Txn {
        Txn {
            kind,
            cmd: u32::MAX,
            pun,
            plane: self.geo.plane_of_block(self.geo.block_of_unit(pun)),
            host_bytes: 0,
            epoch,
            aux: page,
            overwrote: crate::ftl::NONE,
        }
    }

    /// translation page `page` is in at `now`. Pages it pushes out that are
    /// dirty are programmed, and the commands (and cache buffer flushes) that waited for it
    /// alone go on.
    fn map_loaded(&mut self, now: SimTime, page: u32, p: &mut Ports<CachedFtl>) -> Result<()> {
        let m = &mut p.flash.ftl.translation;
        let mut ready = std::mem::take(&mut m.scratch.ready);
        m.loaded(page, &mut ready);
        // The next load pushes the least recent page out and, if dirty, programs it, which lets
        // go of where it is: fetch that now, a command or more ahead, from its GTD entry (asked
        // for one load ago), and ask for the GTD entry of the page after it (speed only).
        let (next, after) = m.next_victims();
        if let Some(victim) = next {
            p.flash.ftl.prefetch_translation_move(victim);
        }
        if let Some(page) = after {
            p.flash.ftl.prefetch_translation_entry(page);
        }
        let m = &mut p.flash.ftl.translation;
        if m.hmb {
            // The page goes into host memory (a posted write; nothing waits for it).
            p.up.link.host_memory_write(now, self.geo.unit_bytes);
        }
        self.pump_map(now, p)?;
        for (cmd, stage) in ready.drain(..) {
            self.map_resume(now, cmd, stage, p)?;
        }
        p.flash.ftl.translation.scratch.ready = ready;
        Ok(())
    }

    /// `cmd`'s map entries are at hand; it goes on at `stage` (with
    /// [`Stage::Flush`], `cmd` is a cache buffer line whose flush goes on).
    fn resume_mapped(
        &mut self,
        now: SimTime,
        cmd: u32,
        stage: Stage,
        p: &mut Ports<CachedFtl>,
    ) -> Result<()> {
        match stage {
            Stage::Read => {
                let c = p.up.cmds.get(cmd);
                let (offset, len) = (c.offset, c.len);
                self.dispatch_read(now, cmd, offset, len, &mut (), p)
            }
            Stage::Write => self.write_data_mapped(now, cmd, p),
            Stage::Flush => {
                let bm = p.cache.as_deref_mut();
                let bm = bm.expect("a flush comes from the cache buffer");
                bm.flush_program(now, cmd, &mut p.up, &mut p.flash)?;
                self.pump_map(now, p)
            }
        }
    }

    /// Issue the translation-page work the cache asked for: the reads of background
    /// read-modify-writes (behind host reads, in the host-write queue), the programs of dirty
    /// pages pushed out and of read-modify-writes whose read is done, and the reads of pages a
    /// cache buffer's flush missed on. A program may start GC, whose moves update more
    /// translation pages: repeat until none is left. Out of line, so that the calls with
    /// nothing to do stay cheap ([`MapWork::pump`]).
    #[inline(never)]
    fn pump_map_work(&mut self, now: SimTime, p: &mut Ports<CachedFtl>) -> Result<()> {
        loop {
            let Ports { up, flash, .. } = p;
            let m = &mut flash.ftl.translation;
            if m.pending_updates.is_empty()
                && m.pending_writes.is_empty()
                && m.pending_loads.is_empty()
            {
                return Ok(());
            }
            let hmb = m.hmb;
            let mut updates = std::mem::take(&mut m.pending_updates);
            let mut writes = std::mem::take(&mut m.pending_writes);
            let mut loads = std::mem::take(&mut m.pending_loads);
            for page in updates.drain(..) {
                match flash.ftl.translation_on_nand(page) {
                    Some(pun) => {
                        flash.ftl.translation.stats.translation_reads += 1;
                        let t =
                            flash
                                .fil
                                .add_txn(self.map_txn(TxnKind::MapUpdateRead, pun, page, 0));
                        flash.fil.enqueue(now, t, Queue::HostWrite, flash.ftl, up.q);
                    }
                    // Nothing on NAND to read: the program follows at once.
                    _ => flash.ftl.translation.update_read(page),
                }
            }
            if flash.ftl.read_only() {
                // A worn-out drive programs nothing more: the updates stay in memory only.
                writes.clear();
            }
            for page in writes.drain(..) {
                if hmb {
                    // The dirty page comes out of host memory first.
                    up.link.host_memory_read(now, self.geo.unit_bytes);
                }
                let pun = flash.ftl.write_translation(page)?;
                flash.ftl.translation.stats.translation_writes += 1;
                let epoch = flash.ftl.blocks()[self.geo.block_of_unit(pun) as usize].epoch;
                let t = flash
                    .fil
                    .add_txn(self.map_txn(TxnKind::MapWrite, pun, page, epoch));
                flash.fil.enqueue(now, t, Queue::HostWrite, flash.ftl, up.q);
                flash.drain_gc(now, up.q);
            }
            for page in loads.drain(..) {
                // A flush's miss: read like a command's (the flush waits for it).
                self.load_page(now, page, p)?;
            }
            // The vectors go back for their capacity when nothing new was queued meanwhile.
            let m = &mut p.flash.ftl.translation;
            if m.pending_updates.is_empty() {
                m.pending_updates = updates;
            }
            if m.pending_writes.is_empty() {
                m.pending_writes = writes;
            }
            if m.pending_loads.is_empty() {
                m.pending_loads = loads;
            }
        }
    }
}
