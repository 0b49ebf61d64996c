//! Preconditioning the page FTL untimed (instant mode): a sequential fill (in closed form on a
//! fresh drive, `fill_fast`), random overwrites (uniform or skewed), and with a cached map the
//! translation pages of what it wrote.

use super::free_list::FreeList;
use super::{steady, BlockState, Ftl, Translation, UNMAPPED};
use crate::config::HotCold;
use crate::error::{Error, Invalid, Result};
use crate::sim::Rng;

impl<M: Translation + ?Sized> Ftl<M> {
    /// Fill the logical space without timing: sequential writes of every unit, then `overwrite`
    /// × logical units of random overwrites.
    pub fn precondition(&mut self, fill: bool, overwrite: f64, seed: u64) -> Result<()> {
        self.precondition_with(fill, overwrite, None, seed, &mut || true)
    }

    /// [`Ftl::precondition`], the overwrites skewed as `skew` says (None: uniform;
    /// `precondition.hot_fraction`), asking `keep_going` every 65,536 unit writes (a few
    /// milliseconds); false stops it with [`Error::Interrupted`], leaving a drive only fit to
    /// be dropped.
    pub fn precondition_with(
        &mut self,
        fill: bool,
        overwrite: f64,
        skew: Option<HotCold>,
        seed: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<()> {
        const CHECK_EVERY: u64 = 1 << 16;
        if let Some(w) = self.wear.as_ref().filter(|w| w.read_only) {
            if fill || overwrite > 0.0 {
                return Err(Error::bad_config(Invalid::says(
                    "",
                    "precondition.fill",
                    format!(
                        "the drive starts read-only ({} good blocks of {}, {} bad from \
                     the factory; it needs {} to take writes), so it cannot be filled: lower \
                     reliability.factory_bad_block_rate or set precondition.fill = \"none\" and \
                     precondition.random_overwrite = 0",
                        w.good_blocks,
                        self.blocks.len(),
                        w.factory_bad_blocks,
                        w.min_good_blocks
                    ),
                )));
            }
        }
        let was = self.instant;
        self.instant = true;
        let n = self.logical_units();
        let filled = fill && self.fill_fast(keep_going)?;
        let mut ask = |k: u64| -> Result<()> {
            if (k + 1).is_multiple_of(CHECK_EVERY) && !keep_going() {
                return Err(Error::Interrupted);
            }
            Ok(())
        };
        if fill && !filled {
            for lpn in 0..n {
                ask(lpn)?;
                self.write(lpn)?;
            }
        }
        let count = (overwrite * n as f64) as u64;
        self.expect_touches(count, 0..n, true);
        let mut rng = Rng::stream(seed, "precondition");
        let skew = skew.map(|h| steady::Skew::over(h, n));
        for k in 0..count {
            ask(k)?;
            let lpn = steady::draw_overwrite(skew.as_ref(), &mut rng, n);
            self.write(lpn)?;
        }
        // With a cached map, the map of what preconditioning wrote is on NAND: every
        // translation page with a mapped entry is written once (the cache starts empty).
        for page in 0..self.translation.pages() as u32 {
            if self
                .translation
                .entries_of(page)
                .any(|lpn| self.l2p_at(lpn) != UNMAPPED)
            {
                self.write_translation(page)?;
            }
        }
        self.instant = was;
        Ok(())
    }

    /// Nothing was ever written: every block free, the clock and the stripe cursor at 0
    /// (preconditioning in closed form needs it).
    fn is_fresh(&self) -> bool {
        self.clock == 0
            && self.cursor == 0
            && self.blocks.iter().all(|b| b.state == BlockState::Free)
    }

    /// Sequential fill of a fresh drive, plane by plane: the same state as writing every
    /// logical unit in order through the allocator, without touching 1000 planes in turn for
    /// every unit. The stripe is `g` groups of `d` planes (`ftl.superblock_planes`; one group
    /// by default); page k is the (k mod d)-th plane's in row r = k div d, rows fill a block of
    /// every plane of a group (`ppb` rows) before the next group, so page k lands on plane
    /// `stripe[(r div ppb mod g)·d + k mod d]`, in its block r div ppb div g, page r mod ppb.
    /// Returns false, doing nothing, when the drive is not fresh or a plane would need the
    /// block it keeps for GC (then the caller writes unit by unit). Asks `keep_going` before
    /// each plane (a 1 TiB drive takes seconds); false stops it with [`Error::Interrupted`],
    /// leaving a drive only fit to be dropped.
    pub(super) fn fill_fast(&mut self, keep_going: &mut dyn FnMut() -> bool) -> Result<bool> {
        let logical = self.logical_units();
        let n = self.stripe.len() as u64;
        let d = self.superblock as u64;
        let groups = n / d;
        let upp = self.geo.units_per_page as u64;
        let ppb = self.geo.pages_per_block as u64;
        let upb = self.geo.units_per_block() as u64;
        let bpp = self.geo.blocks_per_plane as u64;
        let total_pages = logical.div_ceil(upp);
        // The first group's planes take the most blocks.
        if !self.is_fresh() || total_pages.div_ceil(d * ppb).div_ceil(groups) + 1 > bpp {
            return Ok(false);
        }
        self.fill.set_filled(logical);
        for s in 0..n {
            if !keep_going() {
                return Err(Error::Interrupted);
            }
            let plane = self.stripe[s as usize];
            let base_block = plane as u64 * bpp;
            // The map stays untouched (zero entries read as the layout): only the blocks the
            // fill used are set, each holding a prefix of its units.
            let mut used = 0u64;
            while let Some(f) = self.fill.filled_block(s as u32, used as u32) {
                let b = base_block + used;
                let blk = &mut self.blocks[b as usize];
                blk.valid = f.valid;
                blk.last_write = f.last_write;
                blk.write_ptr = f.valid;
                if f.valid as u64 == upb {
                    blk.state = BlockState::Full;
                } else {
                    blk.state = BlockState::Open;
                    self.planes[plane as usize].host_open = b as u32;
                }
                self.programmed_to_write_ptr(b as usize);
                used += 1;
            }
            // The allocator hands out the lowest free blocks first.
            self.planes[plane as usize].free =
                FreeList::range((base_block + used) as u32, (base_block + bpp) as u32);
        }
        let last_full = logical.is_multiple_of(upp);
        // The plane of the next page (or of the partly written last one).
        let next = if last_full {
            total_pages
        } else {
            total_pages - 1
        };
        self.cursor = ((next / d / ppb % groups) * d + next % d) as usize;
        self.clock = logical;
        self.stats.host_units_written += logical;
        if let Some(st) = self.streams.as_deref_mut() {
            // As unit by unit: every unit written once, in stream 0 (hot-cold: cold, its
            // first write), at clock lpn + 1.
            st.stats[0].host_units_written += logical;
            for (lpn, stamp) in st.stamp.iter_mut().take(logical as usize).enumerate() {
                *stamp = (lpn + 1) as u32;
            }
        }
        Ok(true)
    }
}
