//! A plane's list of free blocks, in the order the allocator takes them, holding the blocks
//! never handed out as a range rather than one entry each: a fresh 7 TiB drive's 4 million
//! free blocks take no memory until they come back from an erase (issue 44: memory in
//! proportion to what the drive holds).
//!
//! The list reads as the range `lo..hi` counted down (so that taking the last entry hands out
//! the lowest block first), followed by the blocks listed one by one (those erased since, or
//! a list a saved state or the steady-state layout gave). Every operation behaves as it would
//! on that sequence held as a vector, which the tests check against one.

/// See the module's text.
#[derive(Clone, Debug, Default)]
pub struct FreeList {
    /// Blocks `lo..hi`, counted down, come first.
    lo: u32,
    hi: u32,
    /// Then these, in order.
    listed: Vec<u32>,
}

impl FreeList {
    /// Blocks `lo..hi`, the lowest taken first.
    pub fn range(lo: u32, hi: u32) -> FreeList {
        FreeList {
            lo,
            hi: hi.max(lo),
            listed: Vec::new(),
        }
    }

    /// These blocks, in this order (the last taken first).
    pub fn listed(blocks: Vec<u32>) -> FreeList {
        FreeList {
            lo: 0,
            hi: 0,
            listed: blocks,
        }
    }

    #[inline]
    fn ranged(&self) -> usize {
        (self.hi - self.lo) as usize
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.ranged() + self.listed.len()
    }

    /// Take the last block.
    #[inline]
    pub fn pop(&mut self) -> Option<u32> {
        if let Some(b) = self.listed.pop() {
            return Some(b);
        }
        (self.lo < self.hi).then(|| {
            self.lo += 1;
            self.lo - 1
        })
    }

    /// Put `block` last.
    #[inline]
    pub fn push(&mut self, block: u32) {
        self.listed.push(block);
    }

    /// The blocks in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        (self.lo..self.hi).rev().chain(self.listed.iter().copied())
    }

    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// Take the block at `i`, the last block taking its place (as `Vec::swap_remove`).
    pub fn swap_remove(&mut self, i: usize) -> u32 {
        let r = self.ranged();
        assert!(i < self.len(), "free list: index {i} past {}", self.len());
        if i >= r {
            return self.listed.swap_remove(i - r);
        }
        if i + 1 == r {
            // The range's lowest block: the last listed block takes its place, which puts it
            // first among the listed ones (the range shrinks from below).
            self.lo += 1;
            if let Some(last) = self.listed.pop() {
                self.listed.insert(0, last);
            }
            return self.lo - 1;
        }
        // Inside the range: the range is no longer one.
        self.spell_out();
        self.listed.swap_remove(i)
    }

    /// Keep only the blocks `keep` says yes to, in order.
    pub fn retain(&mut self, keep: impl FnMut(&u32) -> bool) {
        self.spell_out();
        self.listed.retain(keep);
    }

    /// Hold every block as an entry of `listed`.
    fn spell_out(&mut self) {
        if self.lo < self.hi {
            let mut all: Vec<u32> = (self.lo..self.hi).rev().collect();
            all.append(&mut self.listed);
            self.listed = all;
            self.hi = self.lo;
        }
    }

    /// The place of the block with the fewest erases (`erase_count`), the one nearest the end
    /// among equals (the one `pop` would take). Walked from the end, a block never erased ends
    /// the walk: none is less worn, and those before it lose the tie. A fresh drive's plane
    /// lists thousands of free blocks: reading every one's record cost about 74,000
    /// instructions a block opened on MQSim's fresh drive (callgrind; 88 with the early end).
    pub fn least_worn(&self, erase_count: impl Fn(u32) -> u32) -> Option<usize> {
        let mut least: Option<(usize, u32)> = None;
        for (i, b) in (0..self.len()).rev().zip(self.iter().rev()) {
            let count = erase_count(b);
            if least.is_none_or(|(_, c)| count < c) {
                least = Some((i, count));
                if count == 0 {
                    break;
                }
            }
        }
        least.map(|(i, _)| i)
    }

    /// Bytes this list has allocated.
    pub fn allocated_bytes(&self) -> u64 {
        (self.listed.capacity() * std::mem::size_of::<u32>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Pop,
        Push(u32),
        SwapRemove(usize),
        Retain(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Pop),
            3 => (100u32..200).prop_map(Op::Push),
            3 => (0usize..64).prop_map(Op::SwapRemove),
            1 => (2u32..5).prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// Against the vector it stands for, through any operations; the least-worn block
        /// (blocks' erase counts drawn from 0 to 3) is the minimum over the whole vector by
        /// count, then by place from the end.
        #[test]
        fn behaves_as_the_vector_it_stands_for(
            lo in 0u32..20,
            n in 0u32..40,
            listed in proptest::collection::vec(50u32..90, 0..5),
            ops in proptest::collection::vec(op(), 0..80),
            counts in proptest::collection::vec(0u32..4, 200),
        ) {
            let count = |b: u32| counts[b as usize];
            let mut f = FreeList::range(lo, lo + n);
            let mut v: Vec<u32> = (lo..lo + n).rev().collect();
            for &b in &listed {
                f.push(b);
                v.push(b);
            }
            for op in ops {
                match op {
                    Op::Pop => prop_assert_eq!(f.pop(), v.pop()),
                    Op::Push(b) => {
                        f.push(b);
                        v.push(b);
                    }
                    Op::SwapRemove(i) if i < v.len() => {
                        prop_assert_eq!(f.swap_remove(i), v.swap_remove(i))
                    }
                    Op::SwapRemove(_) => {}
                    Op::Retain(k) => {
                        f.retain(|b| b % k != 0);
                        v.retain(|b| b % k != 0);
                    }
                }
                prop_assert_eq!(f.len(), v.len());
                prop_assert_eq!(f.to_vec(), v.clone());
                let least = v
                    .iter()
                    .enumerate()
                    .min_by_key(|&(i, &b)| (count(b), usize::MAX - i))
                    .map(|(i, _)| i);
                prop_assert_eq!(f.least_worn(count), least);
            }
        }
    }

    #[test]
    fn a_range_takes_no_memory_and_hands_out_the_lowest_block_first() {
        let mut f = FreeList::range(512, 1024);
        assert_eq!((f.len(), f.allocated_bytes()), (512, 0));
        assert_eq!(f.pop(), Some(512));
        assert_eq!(FreeList::listed(vec![3, 1]).to_vec(), vec![3, 1]);
        assert_eq!(FreeList::range(5, 5).len(), 0);
    }
}
