//! The sequential fill in closed form.
//!
//! Filling a fresh drive in order puts every logical unit in a place that a formula gives, so
//! the fill need not write the map: the map tables are allocated zeroed by the OS (untouched
//! pages cost no memory), a zero entry means "where the fill put it", and only the block records
//! are set. Entries are written as the run changes them, so memory follows the data a run
//! touches, not the drive's size. On a drive that was not filled, a zero entry is unmapped.
//!
//! The layout (the same as writing every unit in order through the striped allocator, checked
//! by an oracle test): the stripe is `g` groups of `d` planes; page `k` of the logical space is
//! on the `(k mod d)`-th plane of its group in row `r = k div d`; rows fill one block of every
//! plane of a group (`ppb` rows) before moving to the next group, so page `k` is on plane
//! `stripe[(r div ppb mod g)·d + k mod d]`, in that plane's block `r div ppb div g`, page
//! `r mod ppb`. Unit `u` of the page holds logical unit `k·upp + u`.
//!
//! Steady-state preconditioning (`steady.rs`) leaves its layout the same way: a zero entry
//! reads as where its dealing put the unit ([`Dealt`]), so it too writes no map entry.

use super::state_io::{StateReader, StateWriter};
use super::steady::Dealt;
use super::UNMAPPED;
use crate::error::Result;
use crate::media::nand::Geometry;
use crate::sim::divisor::Divisor;
use std::io::{Read, Write};

/// Stored map entries are `value ^ AS_FILLED`, so the zero the OS hands out reads as
/// `AS_FILLED`: "as the fill left it". No unit or logical index reaches it (validation keeps
/// the drive below 2^32 − 1 units, so indices stop at 2^32 − 3).
pub(super) const AS_FILLED: u32 = u32::MAX - 1;

#[derive(Clone, Debug)]
pub(super) struct FillLayout {
    /// Logical units the fill wrote, 0 when there was none.
    filled: u64,
    upp: Divisor<u32>,
    ppb: Divisor<u32>,
    upb: Divisor<u32>,
    bpp: Divisor<u32>,
    /// Planes per group (`ftl.superblock_planes`).
    d: Divisor<u32>,
    groups: Divisor<u32>,
    stripe: Vec<u32>,
    /// The inverse of `stripe`: a plane's place in it.
    stripe_pos: Vec<u32>,
    /// Steady-state preconditioning's layout, on a drive it brought there (`filled` is 0).
    dealt: Option<Box<Dealt>>,
}

/// One block's share of the fill: the first `valid` units (a prefix), the last of them holding
/// logical unit `last_write − 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FilledBlock {
    pub valid: u32,
    pub last_write: u64,
}

impl FillLayout {
    /// No fill: every untouched entry is unmapped.
    pub fn none(geo: &Geometry, stripe: &[u32], planes_per_group: usize) -> FillLayout {
        let mut stripe_pos = vec![0u32; stripe.len()];
        for (s, &plane) in stripe.iter().enumerate() {
            stripe_pos[plane as usize] = s as u32;
        }
        FillLayout {
            filled: 0,
            upp: Divisor::new(geo.units_per_page),
            ppb: Divisor::new(geo.pages_per_block),
            upb: Divisor::new(geo.units_per_block()),
            bpp: Divisor::new(geo.blocks_per_plane),
            d: Divisor::new(planes_per_group as u32),
            groups: Divisor::new((stripe.len() / planes_per_group) as u32),
            stripe: stripe.to_vec(),
            stripe_pos,
            dealt: None,
        }
    }

    /// From now on, untouched entries read as steady-state preconditioning dealt them.
    pub fn set_dealt(&mut self, dealt: Dealt) {
        debug_assert_eq!(self.filled, 0);
        self.dealt = Some(Box::new(dealt));
    }

    /// From now on, untouched entries read as a fill of the first `units` logical units.
    pub fn set_filled(&mut self, units: u64) {
        self.filled = units;
    }

    /// Where the fill put logical unit `lpn` ([`UNMAPPED`] past the filled space).
    #[inline]
    pub fn pun_of(&self, lpn: u64) -> u32 {
        if lpn >= self.filled {
            return self.dealt.as_ref().map_or(UNMAPPED, |d| d.pun_of(lpn));
        }
        let lpn = lpn as u32;
        let (k, u) = (self.upp.quotient(lpn), self.upp.remainder(lpn));
        let (r, in_group) = (self.d.quotient(k), self.d.remainder(k));
        let (turn, page) = (self.ppb.quotient(r), self.ppb.remainder(r));
        let (block_in_plane, group) = (self.groups.quotient(turn), self.groups.remainder(turn));
        let plane = self.stripe[(group * self.d.get() + in_group) as usize];
        let block = plane * self.bpp.get() + block_in_plane;
        (block * self.ppb.get() + page) * self.upp.get() + u
    }

    /// The logical unit the fill put at `pun` ([`UNMAPPED`] where it wrote nothing).
    #[inline]
    pub fn lpn_of(&self, pun: u32) -> u32 {
        let (block, offset) = (self.upb.quotient(pun), self.upb.remainder(pun));
        match self.block_start(block) {
            Some(start) => self.lpn_in_block(start, offset),
            None => self.dealt_lpn_of(pun),
        }
    }

    /// First stage of prefetching where steady-state preconditioning dealt `lpn` (nothing on
    /// a drive it did not lay out).
    #[inline]
    pub fn prefetch(&self, lpn: u64) {
        if let Some(d) = &self.dealt {
            d.prefetch_sample(lpn);
        }
    }

    /// Second stage: true, after prefetching the words that hold its place, when `lpn` was
    /// dealt (and lies in the dealt space); false otherwise.
    #[inline]
    pub fn prefetch_dealt_place(&self, lpn: u64) -> bool {
        self.dealt.as_ref().is_some_and(|d| d.prefetch_words(lpn))
    }

    /// The logical unit steady-state preconditioning dealt to `pun` ([`UNMAPPED`] where it
    /// dealt none, or on a drive it did not lay out).
    #[inline]
    pub fn dealt_lpn_of(&self, pun: u32) -> u32 {
        self.dealt.as_ref().map_or(UNMAPPED, |d| d.lpn_of(pun))
    }

    /// Steady-state preconditioning's layout, if it laid the drive out (GC walks a victim block
    /// down it with [`Dealt::plane_of`] and [`Dealt::lpn_in_plane`]).
    #[inline]
    pub(super) fn dealt(&self) -> Option<&Dealt> {
        self.dealt.as_deref()
    }

    /// The logical page the fill put in the first page of block `block_in_plane` of the plane
    /// at place `s` of the stripe; the block's next pages hold every `d`-th logical page after.
    #[inline]
    fn first_page(&self, s: u32, block_in_plane: u32) -> u64 {
        let (group, in_group) = (self.d.quotient(s) as u64, self.d.remainder(s) as u64);
        let first_row =
            (block_in_plane as u64 * self.groups.get() as u64 + group) * self.ppb.get() as u64;
        first_row * self.d.get() as u64 + in_group
    }

    /// For GC's walk down block `block`: where the fill's logical units in it start, and the
    /// step between its pages (None without a fill). See [`FillLayout::lpn_in_block`].
    #[inline]
    pub fn block_start(&self, block: u32) -> Option<(u64, u64)> {
        if self.filled == 0 {
            return None;
        }
        let (plane, block_in_plane) = (self.bpp.quotient(block), self.bpp.remainder(block));
        let s = self.stripe_pos[plane as usize];
        let upp = self.upp.get() as u64;
        Some((
            self.first_page(s, block_in_plane) * upp,
            self.d.get() as u64 * upp,
        ))
    }

    /// The logical unit the fill put at unit `offset` of a block that starts as
    /// [`FillLayout::block_start`] says ([`UNMAPPED`] where it wrote nothing): the same as
    /// [`FillLayout::lpn_of`], with the block's part worked out once.
    #[inline]
    pub fn lpn_in_block(&self, (first, page_step): (u64, u64), offset: u32) -> u32 {
        let (page, u) = (self.upp.quotient(offset), self.upp.remainder(offset));
        let lpn = first + page as u64 * page_step + u as u64;
        if lpn < self.filled {
            lpn as u32
        } else {
            UNMAPPED
        }
    }

    /// What the fill left in block `block_in_plane` of the plane at place `s` of the stripe
    /// (None: nothing).
    pub fn filled_block(&self, s: u32, block_in_plane: u32) -> Option<FilledBlock> {
        let units = self.filled;
        let upp = self.upp.get() as u64;
        let ppb = self.ppb.get() as u64;
        let d = self.d.get() as u64;
        let total_pages = units.div_ceil(upp);
        let first = self.first_page(s, block_in_plane);
        if first >= total_pages {
            return None;
        }
        let pages = ppb.min((total_pages - first).div_ceil(d));
        let last = first + (pages - 1) * d;
        let in_last = upp.min(units - last * upp);
        Some(FilledBlock {
            valid: ((pages - 1) * upp + in_last) as u32,
            last_write: last * upp + in_last,
        })
    }
}

impl FillLayout {
    /// Write the layout's state (a saved drive state, `ftl/state.rs`).
    pub fn save_state<W: Write>(&self, w: &mut StateWriter<W>) -> std::io::Result<()> {
        w.u64(self.filled)?;
        match self.dealt.as_deref() {
            None => w.u8(0),
            Some(d) => {
                // Its classes of units: 1 (uniform overwrites), 2 (a skew's hot and cold).
                w.u8(d.class_count())?;
                d.save_state(w)
            }
        }
    }

    /// Read what [`FillLayout::save_state`] wrote, for a drive of `logical` host units and
    /// `units` physical ones.
    pub fn load_state<R: Read>(
        &mut self,
        r: &mut StateReader<R>,
        logical: u64,
        units: u64,
    ) -> Result<()> {
        let filled = r.u64("filled units")?;
        if filled > logical || (filled > 0 && !self.fill_fits(filled)) {
            return Err(r.error(&format!(
                "filled units: got {filled}, expected at most {logical} that fit the planes"
            )));
        }
        self.filled = filled;
        let classes = r.u8("steady-state layout")?;
        if classes != 0 {
            if filled > 0 {
                return Err(
                    r.error("a drive both filled and dealt by steady-state preconditioning")
                );
            }
            let upp = self.upb.get() * self.bpp.get();
            let dealt = Dealt::load_state(r, classes, logical, upp, units)?;
            self.dealt = Some(Box::new(dealt));
        }
        Ok(())
    }

    /// A sequential fill of `units` fits the planes as `Ftl::fill_fast` lays it out (its
    /// check: the first group's planes take the most blocks, and keep one for GC).
    fn fill_fits(&self, units: u64) -> bool {
        let total_pages = units.div_ceil(self.upp.get() as u64);
        let per_turn = self.d.get() as u64 * self.ppb.get() as u64;
        total_pages
            .div_ceil(per_turn)
            .div_ceil(self.groups.get() as u64)
            < self.bpp.get() as u64
    }
}
