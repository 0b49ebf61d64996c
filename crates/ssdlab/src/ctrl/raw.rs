//! The thin firmware of a raw device (`ftl.kind = "none"`): no mapping, no GC. Requests address
//! the NAND by physical unit; the firmware checks what the media allows — a page is programmed
//! whole, once after its block's erase, and a block's pages in order — and keeps what a host-side
//! FTL reads back: each block's next page to program and its erase count.
//!
//! The physical byte address of unit `pun` is `pun × unit_bytes`, units numbered as
//! `media::nand::Geometry` numbers them: block-major (`block × units_per_block + page ×
//! units_per_page + unit`), blocks plane by plane, planes die by die, dies channel by channel.

use crate::media::nand::Geometry;
use crate::request::Status;

/// Counters of the raw operations the firmware accepted.
#[derive(Clone, Debug, Default)]
pub struct RawCounters {
    pub programs_refused: u64,
    pub erases: u64,
}

pub struct RawNand {
    geo: Geometry,
    /// Per block: the next page a program may go to (`pages_per_block` when the block is full).
    next_page: Vec<u32>,
    erase_count: Vec<u32>,
    pub counters: RawCounters,
    /// The HIL's work vector for this device (`ctrl/hil/raw.rs`): a command's transactions,
    /// filled and handed to the FIL within one call, kept for its capacity.
    pub(crate) txns: Vec<u32>,
}

impl RawNand {
    pub fn new(geo: &Geometry) -> RawNand {
        RawNand {
            geo: geo.clone(),
            next_page: vec![0; geo.blocks() as usize],
            erase_count: vec![0; geo.blocks() as usize],
            counters: RawCounters::default(),
            txns: Vec::new(),
        }
    }

    /// Check a program of `len` bytes at byte `offset` and, if the media allows it, take its
    /// pages: whole pages, each the next erased page of its block. All or nothing.
    pub fn program(&mut self, offset: u64, len: u64) -> Status {
        let page = self.geo.page_bytes;
        if len == 0 || !offset.is_multiple_of(page) || !len.is_multiple_of(page) {
            self.counters.programs_refused += 1;
            return Status::Misaligned;
        }
        let upp = self.geo.units_per_page as u64;
        let first = offset / page;
        let pages = len / page;
        // The pages are consecutive, so those of one block are too: each block's run must
        // start at its next page. Check all before taking any.
        let mut block = u32::MAX;
        let mut expect = 0;
        for p in first..first + pages {
            let pun = (p * upp) as u32;
            let b = self.geo.block_of_unit(pun);
            if b != block {
                block = b;
                expect = self.next_page[b as usize];
            }
            if self.geo.page_in_block(pun) != expect {
                self.counters.programs_refused += 1;
                return Status::ProgramOrder;
            }
            expect += 1;
        }
        for p in first..first + pages {
            let block = self.geo.block_of_unit((p * upp) as u32) as usize;
            self.next_page[block] += 1;
        }
        Status::Ok
    }

    /// The blocks `len` bytes at `offset` cover, if they are whole blocks.
    pub fn blocks_of(&self, offset: u64, len: u64) -> Option<std::ops::Range<u32>> {
        let block_bytes = self.geo.unit_bytes * self.geo.units_per_block() as u64;
        if len == 0 || !offset.is_multiple_of(block_bytes) || !len.is_multiple_of(block_bytes) {
            return None;
        }
        let first = (offset / block_bytes) as u32;
        Some(first..first + (len / block_bytes) as u32)
    }

    /// Block `block` was erased: its pages may be programmed again, from the first.
    pub fn erased(&mut self, block: u32) {
        self.next_page[block as usize] = 0;
        self.erase_count[block as usize] += 1;
        self.counters.erases += 1;
    }

    /// Block `block`'s erase was cut by a power failure: its state is unknown, so it counts as
    /// full until it is erased again.
    pub fn needs_erase(&mut self, block: u32) {
        self.next_page[block as usize] = self.geo.pages_per_block;
    }

    /// The next page a program of `block` may go to.
    pub fn next_page(&self, block: u32) -> u32 {
        self.next_page[block as usize]
    }

    /// Whether physical unit `pun` was programmed since its block's last erase (false beyond
    /// the media).
    pub fn is_programmed(&self, pun: u64) -> bool {
        let Ok(pun) = u32::try_from(pun) else {
            return false;
        };
        if u64::from(pun) >= self.geo.units() {
            return false;
        }
        let block = self.geo.block_of_unit(pun);
        self.geo.page_in_block(pun) < self.next_page[block as usize]
    }

    /// Erases of every block, by block index.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;

    fn raw() -> RawNand {
        // small-tlc: 16 KiB pages of four 4 KiB units.
        let cfg = SsdConfig::resolve(
            "small-tlc",
            &[
                "ftl.kind=\"none\"".into(),
                "ftl.over_provisioning=0.0".into(),
                "precondition.fill=\"none\"".into(),
                "precondition.random_overwrite=0.0".into(),
            ],
        )
        .unwrap();
        RawNand::new(&Geometry::from_config(&cfg))
    }

    #[test]
    fn pages_are_programmed_in_order_once_per_erase() {
        let mut r = raw();
        let page = r.geo.page_bytes;
        let block = page * r.geo.pages_per_block as u64;
        assert_eq!(r.program(0, page), Status::Ok);
        assert_eq!(r.program(0, page), Status::ProgramOrder, "programmed twice");
        assert_eq!(
            r.program(2 * page, page),
            Status::ProgramOrder,
            "skips page 1"
        );
        assert_eq!(r.program(page, 2 * page), Status::Ok);
        assert_eq!(r.next_page(0), 3);
        // Another block has its own pointer.
        assert_eq!(r.program(block, page), Status::Ok);
        assert_eq!(r.next_page(1), 1);
        r.erased(0);
        assert_eq!(r.next_page(0), 0);
        assert_eq!(r.program(0, page), Status::Ok);
        assert_eq!(r.erase_counts()[0], 1);
        assert_eq!(r.counters.programs_refused, 2);
    }

    #[test]
    fn a_refused_program_takes_nothing() {
        let mut r = raw();
        let page = r.geo.page_bytes;
        // Page 0 is taken: a program of pages 0 to 2 is refused whole.
        assert_eq!(r.program(0, page), Status::Ok);
        assert_eq!(r.program(0, 3 * page), Status::ProgramOrder);
        assert_eq!(r.next_page(0), 1, "unchanged");
        // Not whole pages.
        assert_eq!(r.program(page, 4096), Status::Misaligned);
        assert_eq!(r.program(page + 4096, page), Status::Misaligned);
        assert_eq!(r.next_page(0), 1);
    }

    #[test]
    fn a_program_may_run_into_the_next_block_when_both_are_in_order() {
        let mut r = raw();
        let page = r.geo.page_bytes;
        let ppb = r.geo.pages_per_block as u64;
        for p in 0..ppb - 1 {
            assert_eq!(r.program(p * page, page), Status::Ok);
        }
        assert_eq!(r.program((ppb - 1) * page, 2 * page), Status::Ok);
        assert_eq!(r.next_page(0), ppb as u32);
        assert_eq!(r.next_page(1), 1);
    }

    #[test]
    fn erases_cover_whole_blocks() {
        let r = raw();
        let block = r.geo.page_bytes * r.geo.pages_per_block as u64;
        assert_eq!(r.blocks_of(block, 2 * block), Some(1..3));
        assert_eq!(r.blocks_of(block + 4096, block), None);
        assert_eq!(r.blocks_of(0, block - 4096), None);
        assert_eq!(r.blocks_of(0, 0), None);
    }
}
