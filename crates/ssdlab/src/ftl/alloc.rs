//! The page FTL's allocation: where a write goes — the plane under the stripe cursor
//! (superblock groups, GC-aware or static placement), the open block of its stream in that
//! plane, a new block opened (and GC started) when it fills — and the free block a plane gives.

use super::{BlockState, Ftl, Stream, Translation, Urgency, GC_STREAM, NONE};
use crate::config::Placement;
use crate::error::{says, Error, Invalid, Result};

impl<M: Translation + ?Sized> Ftl<M> {
    /// Allocate in the plane under the stripe cursor. The cursor moves on once a page is full,
    /// so the units of one page sit together and can be programmed in one operation. Host
    /// writes leave each plane's last free block to its GC, so GC can always make progress.
    pub(super) fn alloc_striped(&mut self, lpn: u64, stream: u8) -> Result<u32> {
        if let Some(pun) = self.alloc_striped_opt(lpn, stream)? {
            return Ok(pun);
        }
        let free: u64 = self.planes.iter().map(|p| p.free.len() as u64).sum();
        Err(Error::bad_device(Invalid::unnamed("FTL", says(format!(
            "no plane can take a write ({free} free blocks in all, each plane's last one kept for GC); \
             the valid data does not fit the planes it landed on — raise over_provisioning"
        )))))
    }

    /// [`Ftl::alloc_striped`], with None when no plane can take the unit. With static placement
    /// the plane is the logical page's, and no other will do.
    pub(super) fn alloc_striped_opt(&mut self, lpn: u64, stream: u8) -> Result<Option<u32>> {
        let n = self.stripe.len();
        let upp = self.geo.units_per_page;
        if self.placement == Placement::Static {
            let plane = self.stripe[((lpn / upp as u64) % n as u64) as usize];
            return self.alloc_in_plane(plane, Stream::Host(stream), true);
        }
        if stream != 0 {
            // Each stream stripes its own pages: its cursor takes the shared one's place for
            // this write (stream 0's stays where it was).
            let i = stream as usize - 1;
            let st = self.streams.as_deref_mut().expect("streams");
            std::mem::swap(&mut self.cursor, &mut st.cursor[i]);
            let got = self.alloc_striped_round(stream);
            let st = self.streams.as_deref_mut().expect("streams");
            std::mem::swap(&mut self.cursor, &mut st.cursor[i]);
            return got;
        }
        self.alloc_striped_round(0)
    }

    /// Round robin from the stripe cursor: the first plane that can take a unit of `stream`.
    #[inline]
    fn alloc_striped_round(&mut self, stream: u8) -> Result<Option<u32>> {
        let n = self.stripe.len();
        let upp = self.geo.units_per_page;
        for _ in 0..n {
            let plane = self.stripe[self.cursor];
            match self.alloc_in_plane(plane, Stream::Host(stream), true)? {
                Some(pun) => {
                    if (pun + 1) % upp == 0 {
                        self.cursor = self.next_in_superblock(pun, n);
                        if self.placement == Placement::GcAware {
                            self.pass_urgent_planes();
                        }
                    }
                    return Ok(Some(pun));
                }
                None => self.cursor = (self.cursor + 1) % n,
            }
        }
        Ok(None)
    }

    /// Where the stripe cursor goes once the page of `pun` is full: the next plane of the
    /// cursor's superblock group, back to the group's first plane after its last (the next page
    /// of the same blocks), or to the next group once the group's last plane has filled its
    /// block. With one group (the default) that is simply the next plane of the stripe.
    #[inline]
    fn next_in_superblock(&self, pun: u32, n: usize) -> usize {
        let d = self.superblock;
        if d == n {
            return (self.cursor + 1) % n;
        }
        let first = self.cursor - self.cursor % d;
        if self.cursor + 1 < first + d {
            self.cursor + 1
        } else if self.geo.page_in_block(pun) + 1 == self.geo.pages_per_block {
            (first + d) % n
        } else {
            first
        }
    }

    /// The open block of `stream` in `plane` (NONE when none is open).
    #[inline]
    fn open_block(&self, plane: u32, stream: Stream) -> u32 {
        match stream {
            Stream::Host(0) => self.planes[plane as usize].host_open,
            Stream::Gc => self.planes[plane as usize].gc_open,
            Stream::Host(s) => {
                let st = self.streams.as_deref().expect("streams");
                st.open[plane as usize * (st.count as usize - 1) + s as usize - 1]
            }
            Stream::GcOf(s) => {
                let st = self.streams.as_deref().expect("streams");
                st.gc_open[plane as usize * (st.count as usize - 1) + s as usize - 1]
            }
        }
    }

    /// Make `block` the open block of `stream` in `plane` (NONE: none open).
    #[inline]
    fn set_open_block(&mut self, plane: u32, stream: Stream, block: u32) {
        match stream {
            Stream::Host(0) => self.planes[plane as usize].host_open = block,
            Stream::Gc => self.planes[plane as usize].gc_open = block,
            Stream::Host(s) => {
                let st = self.streams.as_deref_mut().expect("streams");
                st.open[plane as usize * (st.count as usize - 1) + s as usize - 1] = block;
            }
            Stream::GcOf(s) => {
                let st = self.streams.as_deref_mut().expect("streams");
                st.gc_open[plane as usize * (st.count as usize - 1) + s as usize - 1] = block;
            }
        }
    }

    /// `gc-aware` placement: move the stripe cursor past planes whose GC is urgent, unless
    /// every plane's is (then it stays where round robin put it). Planes, not dies: measured
    /// on small-tlc (docs/ftl.md), passing over whole dies with an urgent plane crowds the
    /// writes onto fewer dies and lengthens the tail.
    fn pass_urgent_planes(&mut self) {
        let n = self.stripe.len();
        for step in 0..n {
            let c = (self.cursor + step) % n;
            if self.plane_urgency(self.stripe[c]) == Urgency::None {
                self.cursor = c;
                return;
            }
        }
    }

    /// Next unit of the plane's open block for `stream`, opening a new block if needed.
    /// (Always inlined, and the opening kept out of line: every GC move and host write comes
    /// here, and all but one in a block's worth find the block open. A plain hint is not
    /// enough: collect reaches itself again through the opening, and the compiler declines to
    /// inline into that cycle.)
    #[inline(always)]
    pub(super) fn alloc_in_plane(
        &mut self,
        plane: u32,
        stream: Stream,
        keep_reserve: bool,
    ) -> Result<Option<u32>> {
        let open = self.open_block(plane, stream);
        let block = if open != NONE {
            open
        } else {
            match self.open_new_block(plane, stream, keep_reserve)? {
                Some(b) => b,
                None => return Ok(None),
            }
        };
        let upb = self.geo.units_per_block();
        let blk = &mut self.blocks[block as usize];
        let pun = block * upb + blk.write_ptr;
        blk.write_ptr += 1;
        if blk.write_ptr == upb {
            blk.state = BlockState::Full;
            self.set_open_block(plane, stream, NONE);
            if let (Some(f), Stream::Host(s)) = (self.fdp.as_deref_mut(), stream) {
                f.block_filled(plane, s);
            }
        }
        Ok(Some(pun))
    }

    /// Open a new block for `stream` in `plane` ([`Ftl::alloc_in_plane`]'s slow path); None
    /// when the plane has none to give.
    #[inline(never)]
    fn open_new_block(
        &mut self,
        plane: u32,
        stream: Stream,
        keep_reserve: bool,
    ) -> Result<Option<u32>> {
        let mut taken = self.take_free_block(plane, keep_reserve);
        if !matches!(stream, Stream::Gc | Stream::GcOf(_)) {
            // Short of blocks: reclaim on demand. Each round starts a collection, whose
            // victim the next take may claim at once (its copies and erase are still
            // queued at the die, ahead of this write, so the time is paid). Stop when a
            // round frees nothing.
            for _ in 0..self.geo.blocks_per_plane {
                if taken.is_some() {
                    break;
                }
                let before = self.reclaim_work();
                self.maybe_gc(plane)?;
                taken = self.take_free_block(plane, keep_reserve);
                if taken.is_none() && before == self.reclaim_work() {
                    break;
                }
            }
        }
        let Some(b) = taken else {
            return Ok(None);
        };
        self.blocks[b as usize].state = BlockState::Open;
        self.set_open_block(plane, stream, b);
        if let Some(st) = self.streams.as_deref_mut() {
            st.block_stream[b as usize] = match stream {
                Stream::Host(s) => s,
                // Per-stream GC blocks hold one stream's data, as its host blocks do.
                Stream::GcOf(s) => s,
                Stream::Gc if !st.gc_open.is_empty() => 0,
                Stream::Gc => GC_STREAM,
            };
        }
        self.maybe_gc(plane)?;
        Ok(Some(b))
    }

    /// Grows whenever reclaiming did something (a collection, an erase, a forced erase).
    fn reclaim_work(&self) -> u64 {
        self.stats.gc_runs + self.stats.wl_migrations + self.stats.erases + self.stats.forced_erases
    }

    fn take_free_block(&mut self, plane: u32, keep_reserve: bool) -> Option<u32> {
        let reserve = if keep_reserve { 1 } else { 0 };
        while self.planes[plane as usize].free.len() <= reserve {
            // No free block to spare: take a victim whose timed erase has not run yet (it holds
            // no valid data any more) and erase it now; its queued erase still costs die time.
            let bpp = self.geo.blocks_per_plane;
            let victim = (plane * bpp..(plane + 1) * bpp).find(|&b| {
                let blk = &self.blocks[b as usize];
                blk.state == BlockState::Victim && blk.valid == 0
            });
            match victim {
                Some(v) => {
                    // The collection is settled here; the late erase finds the epoch moved on.
                    self.apply_erase(v);
                    self.planes[plane as usize].gc_inflight -= 1;
                    self.stats.forced_erases += 1;
                }
                None => return None,
            }
        }
        let p = &mut self.planes[plane as usize];
        if self.dynamic_wl {
            let blocks = &self.blocks;
            let i = p.free.least_worn(|b| blocks[b as usize].erase_count)?;
            Some(p.free.swap_remove(i))
        } else {
            p.free.pop()
        }
    }
}
