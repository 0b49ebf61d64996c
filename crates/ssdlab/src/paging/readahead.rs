//! Swap read-ahead: which slots a swap-in fault reads with the one it needs.
//!
//! - 2.6.32 (`swapin_readahead` over `valid_swaphandles`, mm/swap_state.c and mm/swapfile.c):
//!   the aligned window of 2^page_cluster slots around the target, cut to the slots in use
//!   that touch the target without a gap (a free slot ends the run on either side); slot 0
//!   (the header) is never read. No neighbour in use: the target alone.
//! - Modern (`swap_cluster_readahead` with `swapin_nr_pages`): the window's size adapts. Each
//!   fault takes the read-ahead hits counted since the last one (faults that found a
//!   read-ahead page in the swap cache); no hits: 2 pages if this fault's slot is next to the
//!   previous fault's, else 1; with hits h: h + 2 rounded up to a power of two, at least 4;
//!   at most 2^page_cluster, and never below half the previous window. The aligned window of
//!   that size is read, every slot in it that is in use (free slots are skipped, not a stop).

use super::config::Era;
use super::swapfile::SwapArea;

#[derive(Clone)]
pub struct Readahead {
    era: Era,
    page_cluster: u32,
    prev_offset: u32,
    hits: u32,
    last_pages: u32,
}

impl Readahead {
    pub fn new(era: Era, page_cluster: u32) -> Readahead {
        Readahead {
            era,
            page_cluster,
            prev_offset: 0,
            hits: 0,
            last_pages: 0,
        }
    }

    /// A fault found a page read ahead (`PG_readahead`) in the swap cache.
    pub fn hit(&mut self) {
        self.hits += 1;
    }

    /// The slots a fault on `target` reads: `[first, end)`; the caller skips slots not in use
    /// and slots already in the swap cache.
    pub fn window(&mut self, target: u32, area: &SwapArea) -> (u32, u32) {
        match self.era {
            Era::Linux2632 => self.valid_swaphandles(target, area),
            Era::Modern => {
                let pages = self.swapin_nr_pages(target);
                if pages <= 1 {
                    return (target, target + 1);
                }
                let mask = pages - 1;
                let first = (target & !mask).max(1);
                let end = (target | mask).min(area.slots() - 1) + 1;
                (first, end)
            }
        }
    }

    fn valid_swaphandles(&self, target: u32, area: &SwapArea) -> (u32, u32) {
        if self.page_cluster == 0 {
            return (target, target + 1);
        }
        let aligned = (target >> self.page_cluster) << self.page_cluster;
        let base = aligned.max(1);
        let end = (aligned + (1 << self.page_cluster)).min(area.slots());
        // The slots in use from `target + 1` up to the first free one (or `end`), and from
        // `target` down to just above the last free one (or `base`): a word of the map at a
        // time (one word for a block of up to 64 slots), where the kernel steps slot by slot.
        area.used_run_around(target, base, end)
    }

    fn swapin_nr_pages(&mut self, offset: u32) -> u32 {
        let max_pages = 1u32 << self.page_cluster;
        if max_pages <= 1 {
            return 1;
        }
        let hits = std::mem::take(&mut self.hits);
        let mut pages = hits + 2;
        if pages == 2 {
            let adjacent = offset == self.prev_offset.wrapping_add(1)
                || offset == self.prev_offset.wrapping_sub(1);
            if !adjacent {
                pages = 1;
            }
        } else {
            let mut r = 4;
            while r < pages {
                r <<= 1;
            }
            pages = r;
        }
        pages = pages.min(max_pages).max(self.last_pages / 2);
        if hits == 0 {
            self.prev_offset = offset;
        }
        self.last_pages = pages;
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An area with slots 1..=n in use.
    fn area(era: Era, used: impl IntoIterator<Item = u32>) -> SwapArea {
        let mut a = SwapArea::new(era, 1024, true, false, 1);
        let want: Vec<u32> = used.into_iter().collect();
        let mut taken = Vec::new();
        for _ in 0..*want.iter().max().unwrap() {
            taken.push(a.alloc().unwrap());
        }
        for s in taken {
            if !want.contains(&s) {
                a.free(s);
            }
        }
        a
    }

    #[test]
    fn old_window_is_the_aligned_run_of_used_slots_around_the_target() {
        // page_cluster 3: windows of 8. Slots 1..=40 in use except 19.
        let a = area(Era::Linux2632, (1..=40).filter(|&s| s != 19));
        let mut ra = Readahead::new(Era::Linux2632, 3);
        // Target 21: window 16..24; below, 20 is used, 19 free: run 20..=23.
        assert_eq!(ra.window(21, &a), (20, 24));
        // Target 17: 16, 17, 18 used, 19 free: 16..=18.
        assert_eq!(ra.window(17, &a), (16, 19));
        // Target 3: window 0..8, slot 0 (header) never read: 1..=7.
        assert_eq!(ra.window(3, &a), (1, 8));
        // Target 40: window 40..48 but 41 is free: the target alone.
        assert_eq!(ra.window(40, &a), (40, 41));
        // page_cluster 0: no read-ahead.
        assert_eq!(Readahead::new(Era::Linux2632, 0).window(21, &a), (21, 22));
    }

    #[test]
    fn modern_window_adapts_to_hits_and_adjacency() {
        let a = area(Era::Modern, 1..=600);
        let mut ra = Readahead::new(Era::Modern, 3);
        // First fault at 100: no hits, not adjacent to prev_offset 0: 1 page.
        assert_eq!(ra.window(100, &a), (100, 101));
        // Fault at 101, adjacent: 2 pages, aligned: 100..=101.
        assert_eq!(ra.window(101, &a), (100, 102));
        // Two read-ahead hits: 2 + 2 = 4 -> 4 pages: 200..=203 around 202.
        ra.hit();
        ra.hit();
        assert_eq!(ra.window(202, &a), (200, 204));
        // Five hits: 7 -> 8 (the maximum).
        for _ in 0..5 {
            ra.hit();
        }
        assert_eq!(ra.window(305, &a), (304, 312));
        // No hits, far away: 1, but not below half the last window (8 / 2 = 4).
        assert_eq!(ra.window(500, &a), (500, 504));
        // Then 2 (half of 4), then 1.
        assert_eq!(ra.window(50, &a), (50, 52));
        assert_eq!(ra.window(70, &a), (70, 71));
    }
}
