//! The map's NAND side: each die's free blocks and write streams, pages allocated striped over
//! the dies (wear-aware with hot and cold streams, §2.6.1 (b)), pages moved to NAND, and greedy
//! GC.

use super::{HfslMap, Loc, RawOp};
use crate::config::HfslConfig;
use crate::device::HardwareInfo;
use crate::error::{says, Error, Invalid, Result};

/// A die's write streams: with wear-aware allocation each has a block open, so cold host data
/// fill worn blocks and hot data fresh ones (§2.6.1 (b)); GC's moves join the stream whose
/// block filled. Without wear-aware allocation, only `COLD`.
pub(super) const COLD: usize = 0;
pub(super) const HOT: usize = 1;

pub(super) struct Die {
    pub(super) free: Vec<u32>,
    /// Per stream: its open block (`NONE` until one is opened) and the block's next page to
    /// program (`pages_per_block`: full, or none open).
    pub(super) open: [u32; 2],
    pub(super) next_page: [u32; 2],
}

impl Die {
    /// Whether block `b` is a stream's open block with pages left (of `ppb`).
    pub(super) fn open_with_room(&self, b: u32, ppb: u32) -> bool {
        (0..2).any(|t| self.open[t] == b && self.next_page[t] < ppb)
    }
}

/// Write streams per die (an open block each): cold and hot with wear-aware allocation.
pub(super) fn streams(cfg: &HfslConfig) -> usize {
    if cfg.wear_aware {
        2
    } else {
        1
    }
}

/// Blocks of each die the logical space may not use: GC's reserve and the blocks its streams
/// write to.
pub(super) fn spare_blocks(cfg: &HfslConfig) -> u32 {
    if cfg.gc {
        cfg.gc_free_blocks + streams(cfg) as u32
    } else {
        0
    }
}

/// The logical pages HFSL can offer on `hw`: the NAND's pages less each die's spare blocks.
pub fn usable_pages(cfg: &HfslConfig, hw: &HardwareInfo) -> u64 {
    let dies = hw.nand_channels * hw.nand_chips_per_channel;
    let blocks_per_die = hw.nand_blocks / dies;
    (blocks_per_die.saturating_sub(spare_blocks(cfg)) as u64)
        * dies as u64
        * hw.nand_pages_per_block as u64
}

impl HfslMap {
    /// Block `b`'s erase, counted (GC's and a restart's).
    pub(super) fn erase(&mut self, b: u32) -> RawOp {
        self.counters.nand_erases += 1;
        self.erase_counts[b as usize] += 1;
        RawOp::NandErase { block: b }
    }

    /// Move `lpn`'s valid NAND page `page` (read by the caller's command) to the next page of
    /// die `d`'s stream `t`, its data version with it, and point its entry there (GC's moves
    /// and a restart's).
    // (Always inlined: GC moves every page through it.)
    #[inline(always)]
    pub(super) fn relocate(&mut self, page: u32, lpn: u32, d: usize, t: usize) {
        self.counters.nand_reads += 1;
        let n = self.sub_pages as usize;
        let versions = self.versions.as_ref().map_or(Vec::new(), |(_, nv)| {
            nv[page as usize * n..(page as usize + 1) * n].to_vec()
        });
        self.invalidate(page);
        let to = self.take_page(d, t);
        self.program(to, lpn, &versions);
        self.entries[lpn as usize].addr = to;
        self.counters.gc_pages_moved += 1;
    }

    /// Move `lpn` (already unlinked) out of PCM, if there, into a new NAND page of the `hot`
    /// or cold stream, with `bits` of it overwritten by version `version`; what it had
    /// elsewhere is read and merged.
    pub(super) fn move_to_nand(
        &mut self,
        lpn: u32,
        bits: u8,
        version: u32,
        hot: bool,
    ) -> Result<()> {
        let e = self.entries[lpn as usize];
        let n = self.sub_pages as usize;
        let mut merged = vec![0u32; if self.versions.is_some() { n } else { 0 }];
        match e.loc {
            Loc::Pcm => {
                let missing = e.state & !bits;
                if missing != 0 {
                    // Whole sub-pages the write does not cover come from PCM.
                    let bytes = missing.count_ones() as u64 * self.sub_page;
                    self.pcm_read(e.addr, 0, bytes);
                }
                if let Some((pv, _)) = self.versions.as_ref() {
                    for (s, m) in merged.iter_mut().enumerate() {
                        if e.state & (1 << s) != 0 {
                            *m = pv[e.addr as usize * n + s];
                        }
                    }
                }
                self.released.push((e.cache, e.addr));
            }
            Loc::Nand => {
                if bits != self.full_state {
                    // A partial overwrite of a NAND page: read, merge, program (counted as an
                    // update too: NAND data read to merge with a write).
                    self.plan.reads.push(RawOp::NandRead { page: e.addr });
                    self.counters.nand_reads += 1;
                    self.counters.nand_updates += 1;
                }
                if let Some((_, nv)) = self.versions.as_ref() {
                    merged.copy_from_slice(&nv[e.addr as usize * n..(e.addr as usize + 1) * n]);
                }
                self.invalidate(e.addr);
            }
            Loc::Unmapped => {}
        }
        for (s, m) in merged.iter_mut().enumerate() {
            if bits & (1 << s) != 0 {
                *m = version;
            }
        }
        let page = self.allocate(hot)?;
        self.program(page, lpn, &merged);
        let e = &mut self.entries[lpn as usize];
        e.loc = Loc::Nand;
        e.addr = page;
        e.state = 0;
        e.cache = false;
        Ok(())
    }

    pub(super) fn write_nand(&mut self, lpn: u32, bits: u8, version: u32, hot: bool) -> Result<()> {
        self.move_to_nand(lpn, bits, version, hot)?;
        self.entries[lpn as usize].tick = self.tick;
        Ok(())
    }

    pub(super) fn program(&mut self, page: u32, lpn: u32, versions: &[u32]) {
        self.plan.writes.push(RawOp::NandProgram { page });
        self.counters.nand_programs += 1;
        self.p2l[page as usize] = lpn + 1;
        self.valid[(page / self.pages_per_block) as usize] += 1;
        let n = self.sub_pages as usize;
        if let Some((_, nv)) = self.versions.as_mut() {
            nv[page as usize * n..(page as usize + 1) * n].copy_from_slice(versions);
        }
    }

    pub(super) fn invalidate(&mut self, page: u32) {
        self.p2l[page as usize] = 0;
        self.valid[(page / self.pages_per_block) as usize] -= 1;
    }

    /// The next NAND page for `hot` (or cold) data, striped over the dies (channel first),
    /// collecting first on a die short of free blocks. A die with no block to open now (a
    /// logical page may live on any die) passes the page to the next: the blocks its
    /// collections free are erased after the request, and more of the logical space may have
    /// come to live on it than on the others.
    pub(super) fn allocate(&mut self, hot: bool) -> Result<u32> {
        let t = if hot && self.wear_aware { HOT } else { COLD };
        let ppb = self.pages_per_block;
        for _ in 0..self.stripe.len() {
            let d = self.stripe[self.cursor] as usize;
            self.cursor = (self.cursor + 1) % self.stripe.len();
            if self.dies[d].next_page[t] == ppb
                && self.gc
                && (self.dies[d].free.len() as u32) < self.gc_free_blocks
            {
                self.collect(d, t)?;
            }
            if self.dies[d].next_page[t] == ppb && !self.dies[d].free.is_empty() {
                self.open_next(d, t)?;
            }
            if self.dies[d].next_page[t] < ppb {
                return Ok(self.take_page(d, t));
            }
        }
        // Without GC a block is written once: the workload outgrew the NAND. With GC the
        // spare blocks keep one free, so running out everywhere is a bug.
        Err(if self.gc {
            Error::bad_device(Invalid::unnamed(
                "hfsl",
                says("no die has a free NAND block"),
            ))
        } else {
            let blocks = self.valid.len();
            Error::bad_job(Invalid::got(
                "hfsl",
                "gc",
                false,
                format!(
                    "true, or a workload that writes less: the dies have written all their \
                     {blocks} NAND blocks, and with hfsl.gc off none is erased for reuse"
                ),
            ))
        })
    }

    pub(super) fn take_page(&mut self, d: usize, t: usize) -> u32 {
        let die = &mut self.dies[d];
        let p = die.open[t] * self.pages_per_block + die.next_page[t];
        die.next_page[t] += 1;
        p
    }

    /// Open a free block on die `d` for stream `t`: with wear-aware allocation the most worn
    /// free block for cold data, the least worn for hot (§2.6.1 (b)); else the next free one.
    pub(super) fn open_next(&mut self, d: usize, t: usize) -> Result<()> {
        let die = &self.dies[d];
        let pick = if self.wear_aware {
            let wear = |i: &usize| self.erase_counts[die.free[*i] as usize];
            if t == COLD {
                (0..die.free.len()).rev().max_by_key(wear)
            } else {
                (0..die.free.len()).rev().min_by_key(wear)
            }
        } else {
            die.free.len().checked_sub(1)
        };
        let Some(i) = pick else {
            return Err(Error::bad_device(Invalid::unnamed(
                "hfsl",
                says(format!("die {d} has no free NAND block")),
            )));
        };
        let die = &mut self.dies[d];
        let b = die.free.remove(i);
        self.free_block[b as usize] = false;
        die.open[t] = b;
        die.next_page[t] = 0;
        Ok(())
    }

    /// Greedy GC on die `d`, whose stream `t` has filled its block: the written block with the
    /// fewest valid pages (the one just filled included; not a block open with room) gives
    /// them up to a block opened for stream `t` (which has room: the victim has fewer valid
    /// pages than a block) and is erased. The moves go where the
    /// stream that needs a block writes, not always to the cold stream, so that each block a
    /// die opens pays for itself with one collection, as with one stream: moving them to the
    /// cold stream's block would open blocks for them in bursts (at 60 valid pages of 64, 15
    /// for the 16 collections one hot block needs) that the spares cannot cover.
    /// Returns whether it ran (and opened a block for stream `t`).
    pub(super) fn collect(&mut self, d: usize, t: usize) -> Result<bool> {
        let ppb = self.pages_per_block;
        let blocks_per_die = self.valid.len() as u32 / self.dies.len() as u32;
        let first = d as u32 * blocks_per_die;
        let die = &self.dies[d];
        // The first of the fewest valid pages: a block without any cannot be beaten.
        let mut victim: Option<u32> = None;
        for b in first..first + blocks_per_die {
            if self.free_block[b as usize] || die.open_with_room(b, ppb) {
                continue;
            }
            if victim.is_none_or(|v| self.valid[b as usize] < self.valid[v as usize]) {
                victim = Some(b);
                if self.valid[b as usize] == 0 {
                    break;
                }
            }
        }
        let Some(victim) = victim else {
            return Ok(false);
        };
        let moving = self.valid[victim as usize];
        if moving == ppb || (moving > 0 && die.free.is_empty()) {
            return Ok(false);
        }
        self.counters.gc_runs += 1;
        if moving > 0 {
            self.open_next(d, t)?;
        }
        for page in victim * ppb..(victim + 1) * ppb {
            let Some(lpn) = self.p2l[page as usize].checked_sub(1) else {
                continue;
            };
            self.plan.reads.push(RawOp::NandRead { page });
            self.relocate(page, lpn, d, t);
            self.touch(lpn, false);
        }
        let erase = self.erase(victim);
        self.plan.erases.push(erase);
        // Free once its erase ran: from the next request on (the driver runs them in order).
        self.erased.push((d as u32, victim));
        self.free_block[victim as usize] = true;
        Ok(true)
    }
}
