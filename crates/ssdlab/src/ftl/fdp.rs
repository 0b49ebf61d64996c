//! Reclaim units of Flexible Data Placement (`[fdp]`, docs/fdp.md) over the FTL's write
//! streams: handle h is host stream h, and its reclaim unit in a reclaim group is the set of
//! its open blocks on one superblock group of that reclaim group's planes (the FTL stripes a
//! stream's pages over a superblock group until each of its blocks is full, then moves to the
//! next group). This module keeps the bookkeeping the allocator does not need: which reclaim
//! group a plane is in, and how many reclaim units each handle filled.

use crate::config::SsdConfig;

/// One handle's reclaim-unit counters over the timed run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandleRuStats {
    /// Reclaim units the handle's host writes filled (the handle then moved to a new one).
    pub ru_fills: u64,
}

#[derive(Clone, Debug)]
pub struct FdpUnits {
    /// Planes (one block each) of a reclaim unit.
    pub ru_planes: u32,
    pub reclaim_groups: u32,
    /// Reclaim group of each plane, by plane number.
    group_of_plane: Vec<u32>,
    /// Host blocks filled per (handle, reclaim group), handle-major: every `ru_planes`-th
    /// completes a reclaim unit.
    blocks_filled: Vec<u64>,
    pub stats: Vec<HandleRuStats>,
}

impl FdpUnits {
    /// For `cfg`'s `[fdp]` over the FTL's allocation order `stripe` (None without `[fdp]`).
    pub fn new(cfg: &SsdConfig, stripe: &[u32]) -> Option<FdpUnits> {
        let f = cfg.fdp.as_ref()?;
        let groups = f.reclaim_groups.max(1);
        let per_group = (stripe.len() / groups as usize).max(1);
        let mut group_of_plane = vec![0u32; stripe.len()];
        for (i, &plane) in stripe.iter().enumerate() {
            group_of_plane[plane as usize] = (i / per_group) as u32;
        }
        let handles = f.handles.max(1) as usize;
        Some(FdpUnits {
            ru_planes: f.ru_planes(&cfg.nand).max(1) as u32,
            reclaim_groups: groups,
            group_of_plane,
            blocks_filled: vec![0; handles * groups as usize],
            stats: vec![HandleRuStats::default(); handles],
        })
    }

    /// The reclaim group `plane` belongs to.
    pub fn group_of(&self, plane: u32) -> u32 {
        self.group_of_plane[plane as usize]
    }

    /// A host block of `handle` on `plane` is full: the last of a reclaim unit's blocks
    /// completes it.
    pub fn block_filled(&mut self, plane: u32, handle: u8) {
        let g = self.group_of(plane) as usize;
        let i = handle as usize * self.reclaim_groups as usize + g;
        self.blocks_filled[i] += 1;
        if self.blocks_filled[i].is_multiple_of(self.ru_planes as u64) {
            self.stats[handle as usize].ru_fills += 1;
        }
    }

    /// Zero the counters (the result speaks of the timed run); a reclaim unit part-filled
    /// before keeps its blocks counted, so it is still counted once when it fills.
    pub fn reset_stats(&mut self) {
        self.stats.fill(HandleRuStats::default());
    }
}
