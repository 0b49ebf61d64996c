//! The page FTL's map tables: the map and the reverse map read and written (each entry stored
//! against the closed-form fill's, `fill.rs`), where a cached map's translation pages are, the
//! programmed bits and block prefixes, the prefetches that warm an access, and the check of
//! every invariant between them.

use super::fill::AS_FILLED;
use super::{set_bits, BlockState, Ftl, Translation, GC_STREAM, UNMAPPED};
use crate::sim::mem::prefetch;

impl<M: Translation + ?Sized> Ftl<M> {
    #[inline]
    pub fn lookup(&self, lpn: u64) -> Option<u32> {
        let p = self.l2p_at(lpn);
        (p != UNMAPPED).then_some(p)
    }

    /// Where a read of `lpn` finds its data (None: it has no map entry) and whether that
    /// unit's program has finished. A unit still where the fill or the steady state's dealing
    /// put it was programmed before the run began, which its map entry alone says: its block
    /// record, a cache miss on a large drive (about a tenth of the bench's run), is not read.
    #[inline]
    pub fn read_target(&self, lpn: u64) -> Option<(u32, bool)> {
        match self.l2p_and_origin(lpn) {
            (UNMAPPED, _) => None,
            (pun, true) => {
                debug_assert!(self.is_programmed(pun), "filled unit {pun} not programmed");
                Some((pun, true))
            }
            (pun, false) => Some((pun, self.is_programmed(pun))),
        }
    }

    /// The map entry of `lpn` ([`UNMAPPED`] when it has none).
    #[inline]
    pub(crate) fn l2p_at(&self, lpn: u64) -> u32 {
        self.l2p_and_origin(lpn).0
    }

    /// [`Ftl::l2p_at`], and whether the entry is still the one the fill or the steady state's
    /// dealing laid out (none was stored since).
    #[inline]
    fn l2p_and_origin(&self, lpn: u64) -> (u32, bool) {
        let pun = self.l2p[lpn as usize] ^ AS_FILLED;
        if pun == AS_FILLED {
            (self.fill.pun_of(lpn), true)
        } else {
            (pun, false)
        }
    }

    /// [`Ftl::l2p_at`] for the second stage of a prefetch: None, when the entry was dealt by
    /// steady-state preconditioning, after prefetching the next step of working it out (in
    /// place of a walk whose misses would stall the prefetch).
    #[inline]
    pub(super) fn l2p_known(&self, lpn: u64) -> Option<u32> {
        let pun = self.l2p[lpn as usize] ^ AS_FILLED;
        if pun != AS_FILLED {
            Some(pun)
        } else if self.fill.prefetch_dealt_place(lpn) {
            None
        } else {
            Some(self.fill.pun_of(lpn))
        }
    }

    /// The reverse-map entry of `pun`: the logical unit whose data it holds ([`UNMAPPED`] when
    /// it holds none that is current).
    #[inline]
    pub(crate) fn p2l_at(&self, pun: u32) -> u32 {
        let lpn = self.p2l[pun as usize] ^ AS_FILLED;
        if lpn == AS_FILLED {
            self.fill.lpn_of(pun)
        } else {
            lpn
        }
    }

    #[inline]
    pub(super) fn set_l2p(&mut self, lpn: u64, pun: u32) {
        self.l2p[lpn as usize] = pun ^ AS_FILLED;
    }

    #[inline]
    pub(super) fn set_p2l(&mut self, pun: u32, lpn: u32) {
        self.p2l[pun as usize] = lpn ^ AS_FILLED;
    }

    /// Warm the cache for a coming access to `lpn`: its map entry and, if the entry is already
    /// cached, the reverse-map entry, block record and programmed bit of where it points.
    #[inline]
    pub fn prefetch(&self, lpn: u64) {
        prefetch(&self.l2p, lpn as usize);
        self.fill.prefetch(lpn);
        if let Some(page) = self.translation.page_of(lpn) {
            // Cached mapping: the translation page's record and its GTD entry.
            self.translation.prefetch_page(page);
            prefetch(&self.l2p, (self.data_units + page as u64) as usize);
        }
    }

    /// Second stage of [`Ftl::prefetch`] for a read: the programmed bit of where it points. (Its
    /// block record is read only for a unit written since preconditioning, [`Ftl::read_target`];
    /// a unit still where the fill or the dealing put it, most of a long-used drive's, needs
    /// neither, but its place is not known yet at this stage.)
    #[inline]
    pub fn prefetch_read_target(&self, lpn: u64) {
        let Some(pun) = self.l2p_known(lpn) else {
            return;
        };
        if pun != UNMAPPED {
            prefetch(&self.programmed, (pun / 64) as usize);
        }
        if let Some(page) = self.translation.page_of(lpn) {
            // Cached mapping: the programmed bit of where the translation page is.
            let tp = self.l2p_at(self.data_units + page as u64);
            if tp != UNMAPPED {
                prefetch(&self.programmed, (tp / 64) as usize);
            }
        }
    }

    /// Second stage of [`Ftl::prefetch`], once the map entry has arrived.
    #[inline]
    pub fn prefetch_target(&self, lpn: u64) {
        let Some(pun) = self.l2p_known(lpn) else {
            return;
        };
        if pun != UNMAPPED {
            prefetch(&self.p2l, pun as usize);
            prefetch(&self.blocks, self.geo.block_of_unit(pun) as usize);
            prefetch(&self.programmed, (pun / 64) as usize);
        }
    }

    /// Cached mapping: warm the cache for a coming program of translation page `page`, which
    /// lets go of where the page is now (its reverse-map entry and block record, written long
    /// ago and by then out of the cache). Reads its GTD entry: see
    /// [`Ftl::prefetch_translation_entry`] for the step before.
    #[inline]
    pub fn prefetch_translation_move(&self, page: u32) {
        let old = self.l2p_at(self.data_units + page as u64);
        if old != UNMAPPED {
            prefetch(&self.p2l, old as usize);
            prefetch(&self.blocks, self.geo.block_of_unit(old) as usize);
        }
    }

    /// Cached mapping: warm the cache for a coming read of translation page `page`'s GTD entry.
    #[inline]
    pub fn prefetch_translation_entry(&self, page: u32) {
        prefetch(&self.l2p, (self.data_units + page as u64) as usize);
    }

    #[inline]
    pub fn is_programmed(&self, pun: u32) -> bool {
        pun < self.blocks[self.geo.block_of_unit(pun) as usize].programmed_below
            || self.programmed[(pun / 64) as usize] & (1 << (pun % 64)) != 0
    }

    /// `pun`'s program has finished. A block's programs nearly always finish in the order its
    /// units were written: the unit next in line lengthens the prefix its block record holds
    /// ([`Block::programmed_below`]), and only one out of line sets its bit (on a large drive
    /// the bit is a cache miss in a table an eighth of a byte per unit, where the record is
    /// already at hand: the caller checked its epoch). The prefix grows only onto a unit with
    /// no bit, so bits still lie past it.
    #[inline]
    pub fn mark_programmed(&mut self, pun: u32) {
        let block = self.geo.block_of_unit(pun);
        let first = block * self.geo.units_per_block();
        let blk = &mut self.blocks[block as usize];
        debug_assert!(
            pun >= blk.programmed_below,
            "unit {pun} programmed twice without an erase"
        );
        if pun == blk.programmed_below.max(first) {
            blk.programmed_below = pun + 1;
        } else {
            self.programmed[(pun / 64) as usize] |= 1 << (pun % 64);
        }
    }

    /// Units from the start of `block` programmed without their bits (see
    /// [`Block::programmed_below`]).
    pub(super) fn programmed_prefix(&self, block: usize) -> u64 {
        let first = block as u64 * self.geo.units_per_block() as u64;
        (self.blocks[block].programmed_below as u64).saturating_sub(first)
    }

    /// The units of `block` below its write pointer are programmed, said by its record alone (a
    /// block at rest; its bits must be clear).
    pub(super) fn programmed_to_write_ptr(&mut self, block: usize) {
        let first = block as u32 * self.geo.units_per_block();
        let blk = &mut self.blocks[block];
        blk.programmed_below = if blk.write_ptr == 0 {
            0
        } else {
            first + blk.write_ptr
        };
    }

    /// Which units are programmed, one bit each (prefixes included): for saving and tests.
    pub(super) fn programmed_bits(&self) -> Vec<u64> {
        let upb = self.geo.units_per_block() as u64;
        let mut bits = self.programmed.clone();
        for b in 0..self.blocks.len() {
            set_bits(&mut bits, b as u64 * upb, self.programmed_prefix(b));
        }
        bits
    }

    /// Cached mapping: where translation page `page` is on NAND (None: never written, the
    /// GTD has no place for it).
    #[inline]
    pub fn translation_location(&self, page: u32) -> Option<u32> {
        self.lookup(self.data_units + page as u64)
    }

    /// Cached mapping: where translation page `page` can be read from NAND, if anywhere (None
    /// when it was never written or its program has not finished).
    #[inline]
    pub fn translation_on_nand(&self, page: u32) -> Option<u32> {
        self.translation_location(page)
            .filter(|&pun| self.is_programmed(pun))
    }

    pub(super) fn invalidate(&mut self, lpn: u64) {
        let old = self.l2p_at(lpn);
        if old != UNMAPPED {
            self.set_p2l(old, UNMAPPED);
            let b = self.geo.block_of_unit(old) as usize;
            self.blocks[b].valid -= 1;
        }
    }

    #[inline]
    pub(super) fn map(&mut self, lpn: u64, pun: u32) {
        self.set_l2p(lpn, pun);
        self.set_p2l(pun, lpn as u32);
        let b = self.geo.block_of_unit(pun) as usize;
        let clock = self.clock;
        let blk = &mut self.blocks[b];
        blk.valid += 1;
        blk.last_write = clock;
    }

    /// Check every invariant of the map and the blocks (tests and debug runs).
    pub fn check(&self) -> std::result::Result<(), String> {
        let upb = self.geo.units_per_block();
        let mut valid = vec![0u32; self.blocks.len()];
        for lpn in 0..self.l2p.len() as u64 {
            let pun = self.l2p_at(lpn);
            if pun == UNMAPPED {
                continue;
            }
            if self.p2l_at(pun) != lpn as u32 {
                return Err(format!(
                    "lpn {lpn} maps to pun {pun}, which maps back to {}",
                    self.p2l_at(pun)
                ));
            }
            valid[(pun / upb) as usize] += 1;
        }
        for (b, blk) in self.blocks.iter().enumerate() {
            if blk.valid != valid[b] {
                return Err(format!(
                    "block {b} counts {} valid units, holds {}",
                    blk.valid, valid[b]
                ));
            }
            if blk.state == BlockState::Free && blk.valid != 0 {
                return Err(format!("free block {b} holds valid data"));
            }
        }
        if let Some(st) = self.streams.as_deref() {
            // Streams never share a block: every valid unit of a host block was written by
            // the stream that opened it.
            for pun in 0..self.p2l.len() as u32 {
                let lpn = self.p2l_at(pun);
                if lpn == UNMAPPED {
                    continue;
                }
                let b = (pun / upb) as usize;
                let owner = st.block_stream[b];
                let wrote = st.lpn_stream[lpn as usize];
                if owner != GC_STREAM && owner != wrote {
                    return Err(format!(
                        "block {b} of stream {owner} holds lpn {lpn} of stream {wrote}"
                    ));
                }
            }
        }
        let mapped_p = (0..self.p2l.len() as u32)
            .filter(|&pun| self.p2l_at(pun) != UNMAPPED)
            .count();
        let mapped_l = (0..self.l2p.len() as u64)
            .filter(|&lpn| self.l2p_at(lpn) != UNMAPPED)
            .count();
        if mapped_p != mapped_l {
            return Err(format!(
                "{mapped_l} logical units mapped but {mapped_p} physical units valid"
            ));
        }
        Ok(())
    }
}
