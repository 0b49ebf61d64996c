//! The map pages of the power-loss model's checkpoints (`ctrl::power_loss`, docs/power-loss.md)
//! as the FTL keeps them: logical units past the host's (and past a cached map's translation
//! pages) in the map, added when the model is armed. A checkpoint programs each map page it
//! writes to a new place, as a cached map programs a translation page; the copy it replaces
//! stays on flash, GC passing its block over while another will do, until the new program has
//! finished (as for a host overwrite: `Block::overwrites_in_flight`). A map page's newest copy
//! is live until the next checkpoint that writes that page supersedes it: GC moves it like any
//! mapped unit (a copy of a map page, never host data: it counts in `gc_units_moved`, not in
//! `host_units_written`), so no checkpoint recovery needs is lost to an erase.
//!
//! Without the model none of this exists: the map is the host's units (and translation pages)
//! alone, and no path below runs.

use super::{Ftl, Translation, AS_FILLED, UNMAPPED};
use crate::error::Result;

impl<M: Translation + ?Sized> Ftl<M> {
    /// The first logical unit of the checkpoint map pages: past the host's units and a cached
    /// map's translation pages.
    pub fn checkpoint_first_lpn(&self) -> u64 {
        self.data_units + self.translation.pages()
    }

    /// Map pages a checkpoint may write (0 until [`Ftl::add_checkpoint_pages`]).
    pub fn checkpoint_pages(&self) -> u64 {
        self.l2p.len() as u64 - self.checkpoint_first_lpn()
    }

    /// Give the map room for `pages` checkpoint map pages, none of them on flash yet (the map
    /// as it stands when the model is armed counts as checkpointed; where that copy lies is
    /// not modelled). Once only.
    pub fn add_checkpoint_pages(&mut self, pages: u64) {
        debug_assert_eq!(self.checkpoint_pages(), 0, "checkpoint pages added twice");
        let len = self.l2p.len() + pages as usize;
        self.l2p.resize(len, UNMAPPED ^ AS_FILLED);
        if let Some(st) = self.streams.as_deref_mut() {
            // GC counts a moved unit against the stream that wrote it: stream 0, as for a
            // translation page.
            st.lpn_stream.resize(len, 0);
        }
    }

    /// Program checkpoint map page `page` to a new place; returns it, and the block of its last
    /// copy ([`super::NONE`]: none), let go once the program has finished (the program
    /// carries it, as a host write's does; [`Ftl::overwrote`], the last host write's, stays).
    /// Not a host write: `host_units_written` stays; `checkpoint_units_written` counts it.
    pub fn write_checkpoint_page(&mut self, page: u64) -> Result<(u32, u32)> {
        let lpn = self.checkpoint_first_lpn() + page;
        debug_assert!(page < self.checkpoint_pages(), "checkpoint page {page}");
        self.clock += 1;
        let mut overwrote = self.invalidate_overwritten(lpn);
        // Map pages share stream 0's open blocks, as translation pages do.
        let pun = self.alloc_striped(lpn, 0)?;
        self.map(lpn, pun);
        self.stats.checkpoint_units_written += 1;
        if self.instant {
            self.mark_programmed(pun);
            if overwrote != super::NONE {
                self.overwrite_programmed(overwrote);
                overwrote = super::NONE;
            }
        }
        Ok((pun, overwrote))
    }

    /// Where the newest copy of checkpoint map page `page` is (None: not written since the
    /// model was armed).
    pub fn checkpoint_page_location(&self, page: u64) -> Option<u32> {
        self.lookup(self.checkpoint_first_lpn() + page)
    }

    /// Let every checkpoint map page go and take them out of the map (a drive saving its whole
    /// state at a clean stop: the state holds the map, which supersedes them). The device must
    /// be idle.
    pub fn drop_checkpoint_pages(&mut self) {
        let first = self.checkpoint_first_lpn();
        let len = self.l2p.len() as u64;
        if len == first {
            return;
        }
        for lpn in first..len {
            self.invalidate(lpn);
        }
        self.l2p.truncate(first as usize);
        if let Some(st) = self.streams.as_deref_mut() {
            st.lpn_stream.truncate(first as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::SsdConfig;
    use crate::ftl::Ftl;

    fn ftl() -> Ftl {
        let cfg = SsdConfig::resolve(
            "small-tlc",
            &[
                "nand.blocks_per_plane=40".into(),
                "nand.pages_per_block=8".into(),
            ],
        )
        .unwrap();
        let mut f = Ftl::new(&cfg, 1);
        f.set_instant(true);
        f
    }

    /// A map page rewritten replaces its copy (one live copy per page), GC moves live copies
    /// without losing one (the map and the blocks' valid counts agree), and none counts as a
    /// host write.
    #[test]
    fn checkpoint_pages_keep_one_live_copy_through_gc() {
        let mut f = ftl();
        f.add_checkpoint_pages(3);
        assert_eq!(f.checkpoint_pages(), 3);
        let logical = f.logical_units();
        let mut rng = crate::sim::Rng::stream(1, "t");
        let mut places = [None; 3];
        let mut moved_by_gc = 0;
        for round in 0..20_000u64 {
            f.write(rng.below(logical)).unwrap();
            for (page, place) in places.iter_mut().enumerate() {
                let now = f.checkpoint_page_location(page as u64);
                moved_by_gc += (now != *place) as u32;
                *place = now;
            }
            // Page 0 rewritten every 7 host writes; pages 1 and 2 written once, live until
            // the end, so GC has to move them as it recycles their blocks.
            let pages = match round {
                0 => 0..3,
                r if r % 7 == 0 => 0..1,
                _ => 0..0,
            };
            for page in pages {
                let (pun, _) = f.write_checkpoint_page(page).unwrap();
                places[page as usize] = Some(pun);
            }
        }
        assert!(f.stats.gc_runs > 0 && moved_by_gc > 0, "GC moved map pages");
        assert_eq!(f.stats.host_units_written, 20_000);
        assert_eq!(f.stats.checkpoint_units_written, 2_860);
        f.check().unwrap();
        for page in 0..3 {
            let pun = f.checkpoint_page_location(page).expect("on flash");
            assert_eq!(f.p2l_at(pun) as u64, logical + page);
        }
        let valid: u64 = f.blocks().iter().map(|b| b.valid as u64).sum();
        f.drop_checkpoint_pages();
        assert_eq!(f.checkpoint_pages(), 0);
        let after: u64 = f.blocks().iter().map(|b| b.valid as u64).sum();
        assert_eq!(valid - after, 3);
        f.check().unwrap();
    }
}
