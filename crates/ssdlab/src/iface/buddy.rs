//! A buddy allocator over a byte range: blocks are powers of two from `min_block` up to the
//! whole range; a freed block merges with its free buddy. Requests round up to a power of two,
//! so a nearly full buffer can refuse a request although enough bytes are free in total
//! (external fragmentation, which the DRAM-interface host reports).

use std::collections::BTreeSet;

#[derive(Clone, Debug)]
pub struct Buddy {
    min_order: u32,
    max_order: u32,
    /// Free block offsets per order (order k = blocks of 2^k bytes), lowest offset first.
    free: Vec<BTreeSet<u64>>,
    /// Order of each allocated block, by offset.
    used: rustc_hash::FxHashMap<u64, u32>,
    free_bytes: u64,
}

impl Buddy {
    /// `total` and `min_block` must be powers of two with `min_block <= total`.
    pub fn new(total: u64, min_block: u64) -> Buddy {
        assert!(total.is_power_of_two() && min_block.is_power_of_two() && min_block <= total);
        let min_order = min_block.trailing_zeros();
        let max_order = total.trailing_zeros();
        let mut free = vec![BTreeSet::new(); max_order as usize + 1];
        free[max_order as usize].insert(0);
        Buddy {
            min_order,
            max_order,
            free,
            used: Default::default(),
            free_bytes: total,
        }
    }

    /// The block size a request of `bytes` takes.
    pub fn block_for(&self, bytes: u64) -> u64 {
        bytes
            .max(1 << self.min_order)
            .checked_next_power_of_two()
            .unwrap_or(u64::MAX)
    }

    /// Allocate a block for `bytes`; its offset, or None when no free block is large enough.
    pub fn alloc(&mut self, bytes: u64) -> Option<u64> {
        let size = self.block_for(bytes);
        if size > 1 << self.max_order {
            return None;
        }
        let order = size.trailing_zeros();
        // The smallest free block at least as large, split down.
        let mut k = order;
        while k <= self.max_order && self.free[k as usize].is_empty() {
            k += 1;
        }
        if k > self.max_order {
            return None;
        }
        let off = self.free[k as usize].pop_first().expect("non-empty");
        while k > order {
            k -= 1;
            self.free[k as usize].insert(off + (1 << k));
        }
        self.used.insert(off, order);
        self.free_bytes -= size;
        Some(off)
    }

    /// Free the block at `off` (returned by `alloc`); merges buddies. Returns false if `off`
    /// was not allocated.
    pub fn free(&mut self, off: u64) -> bool {
        let Some(mut order) = self.used.remove(&off) else {
            return false;
        };
        self.free_bytes += 1 << order;
        let mut off = off;
        while order < self.max_order {
            let buddy = off ^ (1 << order);
            if !self.free[order as usize].remove(&buddy) {
                break;
            }
            off = off.min(buddy);
            order += 1;
        }
        self.free[order as usize].insert(off);
        true
    }

    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    pub fn total_bytes(&self) -> u64 {
        1 << self.max_order
    }

    /// The largest block that could be allocated now.
    pub fn largest_free(&self) -> u64 {
        (self.min_order..=self.max_order)
            .rev()
            .find(|&k| !self.free[k as usize].is_empty())
            .map_or(0, |k| 1 << k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn split_and_merge() {
        let mut b = Buddy::new(1 << 20, 512);
        let a = b.alloc(256 << 10).unwrap();
        let c = b.alloc(300 << 10).unwrap(); // rounds to 512 KiB
        assert_eq!(b.free_bytes(), 256 << 10);
        assert!(b.alloc(300 << 10).is_none());
        // Fragmentation: 256 KiB free in total, but not as one 512 KiB block.
        assert!(b.free(a));
        assert!(!b.free(a));
        assert!(b.free(c));
        assert_eq!(b.largest_free(), 1 << 20);
    }

    proptest! {
        /// Against an oracle of allocated intervals: blocks never overlap, stay in range, are
        /// aligned to their size, and freeing everything gives back one whole block.
        #[test]
        fn never_overlaps(ops in prop::collection::vec((any::<bool>(), 1u64..200_000), 1..200)) {
            let total = 1u64 << 20;
            let mut b = Buddy::new(total, 512);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (alloc, n) in ops {
                if alloc || live.is_empty() {
                    let size = b.block_for(n);
                    if let Some(off) = b.alloc(n) {
                        prop_assert!(off % size == 0 && off + size <= total);
                        for &(o, s) in &live {
                            prop_assert!(off + size <= o || o + s <= off);
                        }
                        live.push((off, size));
                    } else {
                        // Refused only if no aligned block of that size is free.
                        prop_assert!(b.largest_free() < size);
                    }
                } else {
                    let (o, _) = live.swap_remove((n as usize) % live.len());
                    prop_assert!(b.free(o));
                }
                let used: u64 = live.iter().map(|l| l.1).sum();
                prop_assert_eq!(b.free_bytes(), total - used);
            }
            for (o, _) in live {
                prop_assert!(b.free(o));
            }
            prop_assert_eq!(b.largest_free(), total);
        }
    }
}
