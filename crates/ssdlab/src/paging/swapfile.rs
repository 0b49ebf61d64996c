//! The swap area: which slot a page being swapped out gets, and which clusters become free
//! for discard. Two allocators, one per era:
//!
//! - 2.6.32 (`scan_swap_map`, mm/swapfile.c): slots are handed out one after the other for
//!   `SWAPFILE_CLUSTER` (256) allocations; then the next run of 256 free slots (unaligned) is
//!   searched for; without one, the first free slot at or after `cluster_next`. Where the search
//!   starts follows seed 003: a solid-state area searches forward from `cluster_next` and wraps
//!   (so freed slots are not reused until no free run is left); a rotational one searches
//!   forward while fewer than half the clusters are touched, and from the start of the area
//!   (the first half) once half or more are (seed 003, "Conventional Swap Mechanism for HDD";
//!   mainline 2.6.32 always starts at `lowest_bit` there). A discardable area discards the free
//!   run it is about to use (`discard_swap_cluster`).
//! - Modern (6.12's `cluster_alloc_swap_entry`): aligned clusters of 256 on a free list, a
//!   nonfull list and a full list; the CPU's current cluster first, then the head of the free
//!   list, then the nonfull list. A cluster whose last slot is freed is discarded (with
//!   discard on) and goes to the tail of the free list (`swap_cluster_schedule_discard`,
//!   `free_cluster`).

use super::config::Era;
use std::collections::VecDeque;

/// `SWAPFILE_CLUSTER` (mm/swap.h without THP swap): slots per cluster.
pub const CLUSTER: u32 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    Free,
    Nonfull,
    Full,
    /// The CPU's current cluster (isolated from the lists).
    Current,
}

/// Modern-era cluster bookkeeping.
struct Clusters {
    list: Vec<List>,
    free: VecDeque<u32>,
    /// May hold stale entries (a cluster that left the list); checked against `list`.
    nonfull: VecDeque<u32>,
    /// The per-CPU cluster and the next slot to try in it (one CPU).
    current: Option<(u32, u32)>,
}

pub struct SwapArea {
    era: Era,
    /// Slots, the header slot 0 included (`si->max`).
    max: u32,
    /// Usable slots (`si->pages`).
    pages: u32,
    inuse: u32,
    /// One bit per slot, set when in use (a private anonymous page has one user); bits past
    /// the area are set. Searched a word at a time: the kernel's slot-by-slot scans, faster.
    map: Vec<u64>,
    /// One bit per word of `map`, set when none of its slots is in use: where a free run of
    /// `CLUSTER` slots can be, found 64 words at a time.
    free_words: Vec<u64>,
    lowest_bit: u32,
    highest_bit: u32,
    cluster_next: u32,
    cluster_nr: u32,
    solid_state: bool,
    discard: bool,
    /// Slots in use per aligned cluster (slots beyond the area and the header count as used).
    used: Vec<u32>,
    /// Aligned clusters with at least one slot in use.
    touched: u32,
    /// Written since their last discard (a discard of never-written slots is not sent).
    stale: Vec<bool>,
    /// Slot ranges to discard, (first slot, slots), in order.
    pub trims: Vec<(u32, u32)>,
    modern: Option<Clusters>,
    /// What allocation saw since `reset_counts` (the wear window): allocations, the sum of the
    /// slots in use at each, and how often the slot handed out lay below the one before (the
    /// scan came round to the area's start, or found its free run behind the cursor).
    pub allocations: u64,
    in_use_sum: u128,
    pub scan_returns: u64,
    last_slot: u32,
}

impl SwapArea {
    /// An area of `slots` slots (header included). `start` is the first `cluster_next`
    /// (2.6.29+ randomises it on a solid-state device; 1 otherwise).
    pub fn new(era: Era, slots: u32, solid_state: bool, discard: bool, start: u32) -> SwapArea {
        let nclusters = slots.div_ceil(CLUSTER);
        let mut used = vec![0u32; nclusters as usize];
        used[0] = 1; // the header
        let tail = nclusters * CLUSTER - slots;
        if tail > 0 {
            used[nclusters as usize - 1] += tail;
        }
        let words = (slots as usize).div_ceil(64);
        let mut map = vec![0u64; words];
        map[0] = 1;
        if !slots.is_multiple_of(64) {
            map[words - 1] |= !0u64 << (slots % 64);
        }
        let modern = (era == Era::Modern).then(|| {
            let list: Vec<List> = (0..nclusters)
                .map(|c| {
                    if used[c as usize] == CLUSTER {
                        List::Full
                    } else {
                        List::Free
                    }
                })
                .collect();
            // A cluster with the header (or the tail beyond the area) is not free: nonfull.
            let mut free = VecDeque::new();
            let mut nonfull = VecDeque::new();
            let mut list = list;
            for c in 0..nclusters {
                if list[c as usize] == List::Full {
                    continue;
                }
                if used[c as usize] == 0 {
                    free.push_back(c);
                } else {
                    list[c as usize] = List::Nonfull;
                    nonfull.push_back(c);
                }
            }
            Clusters {
                list,
                free,
                nonfull,
                current: None,
            }
        });
        let start = start.clamp(1, slots - 1);
        let mut free_words = vec![0u64; words.div_ceil(64)];
        for (w, _) in map.iter().enumerate().filter(|(_, &u)| u == 0) {
            free_words[w / 64] |= 1 << (w % 64);
        }
        SwapArea {
            era,
            max: slots,
            pages: slots - 1,
            inuse: 0,
            map,
            free_words,
            lowest_bit: 1,
            highest_bit: slots - 1,
            cluster_next: start,
            cluster_nr: 0,
            solid_state,
            discard: discard && solid_state,
            touched: 1,
            used,
            stale: vec![false; slots as usize],
            trims: Vec::new(),
            modern,
            allocations: 0,
            in_use_sum: 0,
            scan_returns: 0,
            last_slot: 0,
        }
    }

    pub fn slots(&self) -> u32 {
        self.max
    }

    pub fn in_use(&self, slot: u32) -> bool {
        slot != 0 && slot < self.max && self.bit(slot)
    }

    #[inline]
    fn bit(&self, slot: u32) -> bool {
        self.map[(slot / 64) as usize] >> (slot % 64) & 1 != 0
    }

    /// The first free slot at or after `from`.
    fn next_free(&self, from: u32) -> Option<u32> {
        next_free(&self.map, self.max, from)
    }

    /// The first free slot in `[from, end)`, or `end` if every slot there is in use (`end` at
    /// most the area's slots).
    pub fn first_free_in(&self, from: u32, end: u32) -> u32 {
        debug_assert!(end <= self.max);
        next_free(&self.map, end, from).unwrap_or(end)
    }

    /// The last free slot in `[base, to)`, or None if every slot there is in use (`to` at most
    /// the area's slots).
    pub fn last_free_in(&self, base: u32, to: u32) -> Option<u32> {
        debug_assert!(to <= self.max);
        if to <= base {
            return None;
        }
        let top = to - 1;
        let mut w = (top / 64) as usize;
        // The free slots of word `w` at or below `top`.
        let mut bits = !self.map[w] & (!0u64 >> (63 - top % 64));
        loop {
            if bits != 0 {
                let x = w as u32 * 64 + 63 - bits.leading_zeros();
                return (x >= base).then_some(x);
            }
            if w as u32 * 64 <= base {
                return None;
            }
            w -= 1;
            bits = !self.map[w];
        }
    }

    /// Call `f` with each slot in use in `[from, end)`, in ascending order (`end` at most the
    /// area's slots): a word of the map at a time, its set bits taken one by one, where a walk
    /// would ask `in_use` of every slot.
    #[inline]
    pub fn for_each_used_in(&self, from: u32, end: u32, mut f: impl FnMut(u32)) {
        debug_assert!(end <= self.max);
        if from >= end {
            return;
        }
        let (first_word, last_word) = (from / 64, (end - 1) / 64);
        for w in first_word..=last_word {
            let mut bits = self.map[w as usize];
            if w == first_word {
                bits &= !0u64 << (from % 64);
            }
            if w == last_word {
                bits &= !0u64 >> (63 - (end - 1) % 64);
            }
            while bits != 0 {
                f(w * 64 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
    }

    /// The run of slots in use around `target` within `[base, end)`: `(lo, hi)` with `lo` just
    /// above the last free slot below `target` (or `base`) and `hi` the first free slot above
    /// it (or `end`); `base <= target < end <= slots`. What `last_free_in(base, target)` and
    /// `first_free_in(target + 1, end)` give, in one load of the map when the range lies in
    /// one word (an aligned read-ahead block of up to 64 slots does).
    #[inline]
    pub fn used_run_around(&self, target: u32, base: u32, end: u32) -> (u32, u32) {
        debug_assert!(base <= target && target < end && end <= self.max);
        let w = target / 64;
        if base / 64 != w || (end - 1) / 64 != w {
            let lo = self.last_free_in(base, target).map_or(base, |x| x + 1);
            return (lo, self.first_free_in(target + 1, end));
        }
        let free = !self.map[w as usize];
        let t = target % 64;
        let above = free & (!1u64 << t);
        let below = free & ((1u64 << t) - 1);
        let hi = if above != 0 {
            (w * 64 + above.trailing_zeros()).min(end)
        } else {
            end
        };
        let lo = if below != 0 {
            (w * 64 + 64 - below.leading_zeros()).max(base)
        } else {
            base
        };
        (lo, hi)
    }

    /// The first used slot at or after `from` (`max` if none); the old search's step.
    #[cfg(test)]
    fn next_used(&self, from: u32) -> u32 {
        if from >= self.max {
            return self.max;
        }
        let mut w = (from / 64) as usize;
        let mut bits = self.map[w] & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                return (w as u32 * 64 + bits.trailing_zeros()).min(self.max);
            }
            w += 1;
            if w == self.map.len() {
                return self.max;
            }
            bits = self.map[w];
        }
    }

    pub fn inuse_pages(&self) -> u32 {
        self.inuse
    }

    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// More than half the swap is in use (`vm_swap_full`).
    pub fn swap_full(&self) -> bool {
        (self.pages - self.inuse) as u64 * 2 < self.pages as u64
    }

    /// A slot for a page being swapped out (`get_swap_page`), or None when the area is full.
    pub fn alloc(&mut self) -> Option<u32> {
        if self.inuse >= self.pages {
            return None;
        }
        let slot = match self.era {
            Era::Linux2632 => self.scan_swap_map()?,
            Era::Modern => self.cluster_alloc()?,
        };
        self.allocations += 1;
        self.in_use_sum += self.inuse as u128;
        if slot < self.last_slot {
            self.scan_returns += 1;
        }
        self.last_slot = slot;
        self.take(slot);
        Some(slot)
    }

    /// Slots in use on average when a slot was allocated since `reset_counts` (0 without
    /// allocations).
    pub fn in_use_mean(&self) -> f64 {
        if self.allocations == 0 {
            0.0
        } else {
            self.in_use_sum as f64 / self.allocations as f64
        }
    }

    /// Start the allocation counts afresh (the wear window begins).
    pub fn reset_counts(&mut self) {
        self.allocations = 0;
        self.in_use_sum = 0;
        self.scan_returns = 0;
    }

    /// Mark `slot` free (`swap_entry_free`); a modern cluster left empty is discarded.
    pub fn free(&mut self, slot: u32) {
        debug_assert!(self.in_use(slot), "free of unused slot {slot}");
        let w = (slot / 64) as usize;
        self.map[w] &= !(1u64 << (slot % 64));
        if self.map[w] == 0 {
            self.free_words[w / 64] |= 1 << (w % 64);
        }
        self.inuse -= 1;
        if slot < self.lowest_bit {
            self.lowest_bit = slot;
        }
        if slot > self.highest_bit {
            self.highest_bit = slot;
        }
        let c = (slot / CLUSTER) as usize;
        self.used[c] -= 1;
        if self.used[c] == 0 {
            self.touched -= 1;
        }
        let discard = self.discard;
        let used = self.used[c];
        let SwapArea {
            modern,
            stale,
            trims,
            ..
        } = self;
        if let Some(m) = modern {
            let cur = m.current.is_some_and(|(cc, _)| cc as usize == c);
            if used == 0 {
                if cur {
                    m.current = None;
                }
                let (first, n) = (c as u32 * CLUSTER, CLUSTER);
                if discard
                    && stale[first as usize..(first + n) as usize]
                        .iter()
                        .any(|&s| s)
                {
                    stale[first as usize..(first + n) as usize].fill(false);
                    trims.push((first, n));
                }
                m.list[c] = List::Free;
                m.free.push_back(c as u32);
            } else if m.list[c] == List::Full {
                m.list[c] = List::Nonfull;
                m.nonfull.push_back(c as u32);
            }
        }
    }

    /// Record that `slot` was written (for discard).
    pub fn written(&mut self, slot: u32) {
        self.stale[slot as usize] = true;
    }

    fn take(&mut self, slot: u32) {
        debug_assert!(!self.in_use(slot));
        if slot == self.lowest_bit {
            self.lowest_bit += 1;
        }
        if slot == self.highest_bit {
            self.highest_bit -= 1;
        }
        self.inuse += 1;
        if self.inuse == self.pages {
            self.lowest_bit = self.max;
            self.highest_bit = 0;
        }
        let w = (slot / 64) as usize;
        self.map[w] |= 1u64 << (slot % 64);
        self.free_words[w / 64] &= !(1 << (w % 64));
        self.cluster_next = slot + 1;
        let c = (slot / CLUSTER) as usize;
        if self.used[c] == 0 {
            self.touched += 1;
        }
        self.used[c] += 1;
        if let Some(m) = &mut self.modern {
            if self.used[c] == CLUSTER {
                if m.current.is_some_and(|(cc, _)| cc as usize == c) {
                    m.current = None;
                }
                m.list[c] = List::Full;
            }
        }
    }

    /// Where a search for a free run starts (seed 003's rule; see the module comment).
    fn search_start(&self) -> u32 {
        if self.solid_state {
            return self.cluster_next;
        }
        let total = self.used.len() as u64;
        if (self.touched as u64) * 2 < total {
            self.cluster_next
        } else {
            self.lowest_bit
        }
    }

    /// The 2.6.32 slot choice, without taking it.
    fn scan_swap_map(&mut self) -> Option<u32> {
        let (mut offset, mut scan_base) = if self.cluster_nr == 0 {
            self.next_cluster()
        } else {
            self.cluster_nr -= 1;
            (self.cluster_next, self.cluster_next)
        };
        // checks:
        if offset > self.highest_bit {
            offset = self.lowest_bit;
            scan_base = offset;
        }
        if !self.in_use(offset) && offset < self.max {
            return Some(offset);
        }
        // scan: the first free slot after offset up to highest_bit, then from just after
        // lowest_bit up to scan_base.
        if let Some(o) = self
            .next_free(offset + 1)
            .filter(|&o| o <= self.highest_bit)
        {
            return Some(o);
        }
        self.next_free(self.lowest_bit + 1)
            .filter(|&o| o < scan_base)
    }

    /// Where `scan_swap_map` looks once a cluster's `CLUSTER` allocations are done: the next
    /// free run of `CLUSTER` slots (discarded first on a discardable area), or where the
    /// search started without one; `(offset, scan_base)`. Once in 256 allocations, so kept
    /// out of line: the allocation of the slot after the last one stays short.
    #[cold]
    #[inline(never)]
    fn next_cluster(&mut self) -> (u32, u32) {
        self.cluster_nr = CLUSTER - 1;
        let offset = self.cluster_next;
        if self.pages - self.inuse < CLUSTER {
            return (offset, offset);
        }
        let scan_base = self.search_start();
        let Some(run) = self
            .free_run(scan_base, |last| last <= self.highest_bit)
            .or_else(|| self.free_run(self.lowest_bit, |last| last < scan_base))
        else {
            return (scan_base, scan_base);
        };
        if self.discard {
            self.discard_run(run);
        }
        (run, scan_base)
    }

    /// The first `CLUSTER` free slots in a row at or after `from` whose first run start passes
    /// `go(last_in_cluster)`: the kernel's scan, which restarts its window after each used
    /// slot, finds the same run. A run of `CLUSTER` (more than 126) free slots holds a whole
    /// free bitmap word, so the search looks for free words only (a comparison per word) and
    /// measures the run around each; the shorter runs between are skipped unseen. That skips
    /// `go` on their starts too, which finds the same answer because `go` is monotone (both
    /// callers' bounds: once false for a start, false for every later one).
    fn free_run(&self, from: u32, go: impl Fn(u32) -> bool) -> Option<u32> {
        if from >= self.max {
            return None;
        }
        let first = (from / 64) as usize;
        // Slots below `from` count as used. Bits past the area are set, so no run passes it.
        let word = |w: usize| {
            if w == first {
                self.map[w] | !(!0u64 << (from % 64))
            } else {
                self.map[w]
            }
        };
        // Here `w` is `first` or a word with a slot in use.
        let mut w = first;
        loop {
            let z = if word(w) == 0 {
                w
            } else {
                self.next_free_word(w + 1)?
            };
            // The run holding free word `z` starts at the free slots topping the word before
            // (which has a slot in use, or is before `from`'s word).
            let start = if z > first {
                z as u32 * 64 - word(z - 1).leading_zeros()
            } else {
                z as u32 * 64
            };
            if !go(start + CLUSTER - 1) {
                return None;
            }
            let mut len = z as u32 * 64 + 64 - start;
            let mut e = z + 1;
            loop {
                if len >= CLUSTER {
                    return Some(start);
                }
                if e == self.map.len() {
                    return None;
                }
                let u = self.map[e];
                if u != 0 {
                    len += u.trailing_zeros();
                    if len >= CLUSTER {
                        return Some(start);
                    }
                    break;
                }
                len += 64;
                e += 1;
            }
            w = e;
        }
    }

    /// The first word of `map` at or after `from` with no slot in use.
    fn next_free_word(&self, from: usize) -> Option<usize> {
        let mut i = from / 64;
        let mut bits = *self.free_words.get(i)? & (!0u64 << (from % 64));
        while bits == 0 {
            i += 1;
            bits = *self.free_words.get(i)?;
        }
        Some(i * 64 + bits.trailing_zeros() as usize)
    }

    /// The search as it was, one free run after another (the oracle of `free_run`).
    #[cfg(test)]
    fn free_run_by_fragments(&self, from: u32, go: impl Fn(u32) -> bool) -> Option<u32> {
        let mut at = from;
        loop {
            let first = self.next_free(at)?;
            if !go(first + CLUSTER - 1) {
                return None;
            }
            let end = self.next_used(first);
            if end - first >= CLUSTER {
                return Some(first);
            }
            at = end;
        }
    }

    fn discard_run(&mut self, first: u32) {
        let r = first as usize..(first + CLUSTER) as usize;
        if self.stale[r.clone()].iter().any(|&s| s) {
            self.stale[r].fill(false);
            self.trims.push((first, CLUSTER));
        }
    }

    /// The modern slot choice, without taking it.
    fn cluster_alloc(&mut self) -> Option<u32> {
        let max = self.max;
        let m = self.modern.as_mut().expect("modern era");
        if let Some((c, next)) = m.current {
            let end = ((c + 1) * CLUSTER).min(max);
            if let Some(s) = next_free(&self.map, end, next) {
                m.current = Some((c, s + 1));
                return Some(s);
            }
            m.current = None;
            if m.list[c as usize] == List::Current {
                m.list[c as usize] = List::Nonfull;
                m.nonfull.push_back(c);
            }
        }
        loop {
            let c = if let Some(c) = m.free.pop_front() {
                if m.list[c as usize] != List::Free {
                    continue;
                }
                c
            } else if let Some(c) = m.nonfull.pop_front() {
                if m.list[c as usize] != List::Nonfull {
                    continue;
                }
                c
            } else {
                return None;
            };
            let first = c * CLUSTER;
            let end = (first + CLUSTER).min(max);
            if let Some(s) = next_free(&self.map, end, first) {
                m.list[c as usize] = List::Current;
                m.current = Some((c, s + 1));
                return Some(s);
            }
            m.list[c as usize] = List::Full;
        }
    }

    /// Clusters in use over all clusters (seed 003's "swap cluster utilization").
    pub fn cluster_utilisation(&self) -> f64 {
        self.touched as f64 / self.used.len() as f64
    }
}

/// The first clear bit of `map` at or after `from`, below `max` (at most the map's bits): the
/// words past the one that holds `max` are not read.
fn next_free(map: &[u64], max: u32, from: u32) -> Option<u32> {
    if from >= max {
        return None;
    }
    let mut w = (from / 64) as usize;
    let mut bits = !map[w] & (!0u64 << (from % 64));
    loop {
        if bits != 0 {
            let s = w as u32 * 64 + bits.trailing_zeros();
            return (s < max).then_some(s);
        }
        w += 1;
        if w as u32 * 64 >= max {
            return None;
        }
        bits = !map[w];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc_n(a: &mut SwapArea, n: usize) -> Vec<u32> {
        (0..n).map(|_| a.alloc().unwrap()).collect()
    }

    #[test]
    fn sequential_within_a_cluster_then_the_next_free_run() {
        // 2.6.32, 1024 slots, cluster_next = 1. First call: cluster_nr is 0, 1023 free >= 256:
        // the free run search from 1 finds slots 1..=256 (last_in_cluster = 256); then 255
        // more calls take 2..=256 in order. The 257th call searches again from 257.
        let mut a = SwapArea::new(Era::Linux2632, 1024, true, false, 1);
        let s = alloc_n(&mut a, 257);
        assert_eq!(s[0], 1);
        assert_eq!(s[255], 256);
        assert_eq!(s[256], 257);
        // Free slots 10..20; the SSD search goes on forward from 258 (no reuse).
        for x in 10..20 {
            a.free(x);
        }
        let s = alloc_n(&mut a, 300);
        assert_eq!(s[0], 258);
        assert!(!s.iter().any(|x| (10..20).contains(x)), "{s:?}");
    }

    #[test]
    fn freed_slots_are_reused_only_when_no_free_run_is_left() {
        // 512 slots: 511 usable. Take all, free 5 scattered slots: no run of 256 exists, and
        // fewer than 256 are free, so the scan takes the first free slot at or after
        // cluster_next, wrapping from just after lowest_bit.
        let mut a = SwapArea::new(Era::Linux2632, 512, true, false, 1);
        alloc_n(&mut a, 511);
        assert!(a.alloc().is_none());
        for x in [3, 100, 200, 400, 500] {
            a.free(x);
        }
        // cluster_next is 512 (> highest_bit 500): offset wraps to lowest_bit 3, which is free.
        let s = alloc_n(&mut a, 5);
        assert_eq!(s, vec![3, 100, 200, 400, 500]);
    }

    #[test]
    fn scan_returns_and_slots_in_use_count_what_allocation_saw_since_the_reset() {
        // The sequence of the test above: 511 slots taken in order (no return), 5 freed, then
        // 3, 100, 200, 400, 500 taken: one return (3 after 511), four steps forward.
        let mut a = SwapArea::new(Era::Linux2632, 512, true, false, 1);
        alloc_n(&mut a, 511);
        assert_eq!((a.allocations, a.scan_returns), (511, 0));
        // Taken with 0, 1, ..., 510 slots in use: mean 255.
        assert_eq!(a.in_use_mean(), 255.0);
        a.reset_counts();
        assert_eq!(
            (a.allocations, a.scan_returns, a.in_use_mean()),
            (0, 0, 0.0)
        );
        for x in [3, 100, 200, 400, 500] {
            a.free(x);
        }
        alloc_n(&mut a, 5);
        assert_eq!((a.allocations, a.scan_returns), (5, 1));
        // 506, 507, ..., 510 in use at the five allocations.
        assert_eq!(a.in_use_mean(), 508.0);
        // Free 400 and 500 again: the next allocation (cluster_next 501 is past highest_bit
        // 500) comes round to 400, then goes on to 500.
        a.free(400);
        a.free(500);
        assert_eq!(alloc_n(&mut a, 2), vec![400, 500]);
        assert_eq!(a.scan_returns, 2);
    }

    #[test]
    fn rotational_area_searches_from_the_start_once_half_the_clusters_are_touched() {
        // 8 aligned clusters (2048 slots). Fill clusters 0..4 (slots 1..1279) so 5 of 8 are
        // touched, then free cluster 1 wholly (256..511) and cluster 6 is untouched.
        let mut a = SwapArea::new(Era::Linux2632, 2048, false, false, 1);
        alloc_n(&mut a, 1279);
        for x in 256..512 {
            a.free(x);
        }
        // 4 of 8 touched now (clusters 0, 2, 3, 4): not below half, so the next new-cluster
        // search starts at lowest_bit (256) and finds 256..=511.
        // Use up the current cluster's count first.
        while a.cluster_nr != 0 {
            a.alloc().unwrap();
        }
        assert_eq!(a.alloc(), Some(256));
        // The same on a solid-state area would go forward.
        let mut b = SwapArea::new(Era::Linux2632, 2048, true, false, 1);
        alloc_n(&mut b, 1279);
        for x in 256..512 {
            b.free(x);
        }
        while b.cluster_nr != 0 {
            b.alloc().unwrap();
        }
        assert!(b.alloc().unwrap() > 1279);
    }

    #[test]
    fn discard_of_a_run_before_reuse_and_of_an_emptied_modern_cluster() {
        let mut a = SwapArea::new(Era::Linux2632, 1024, true, true, 1);
        // 768 = 3 x 256 allocations: 1..=768, and cluster_nr is 0 again.
        for s in alloc_n(&mut a, 768) {
            a.written(s);
        }
        for x in 1..=256 {
            a.free(x);
        }
        assert!(a.trims.is_empty());
        // The next search starts at 769: 769..=1023 is 255 slots, no run; it wraps to
        // lowest_bit 1 and finds 1..=256, which it discards before use.
        let s = a.alloc().unwrap();
        assert_eq!(s, 1);
        assert_eq!(a.trims, vec![(1, 256)]);

        let mut m = SwapArea::new(Era::Modern, 1024, true, true, 1);
        let s = alloc_n(&mut m, 300);
        // The header's cluster 0 is nonfull; the free list comes first: cluster 1 (256..511),
        // then cluster 2.
        assert_eq!(s[0], 256);
        assert_eq!(s[255], 511);
        assert_eq!(s[256], 512);
        for &x in &s {
            m.written(x);
        }
        for x in 256..512 {
            m.free(x);
        }
        assert_eq!(m.trims, vec![(256, 256)]);
        // Cluster 1 went to the tail of the free list: after cluster 3.
        let more = alloc_n(&mut m, 212 + 1);
        assert_eq!(more[211], 767);
        assert_eq!(more[212], 768);
    }

    #[test]
    fn modern_uses_nonfull_clusters_when_no_free_one_is_left() {
        let mut m = SwapArea::new(Era::Modern, 768, true, false, 1);
        let s = alloc_n(&mut m, 512);
        assert_eq!((s[0], s[511]), (256, 767));
        // Only cluster 0 (nonfull: header) is left.
        assert_eq!(m.alloc(), Some(1));
        m.free(300);
        // The current cluster (0) goes on first.
        assert_eq!(m.alloc(), Some(2));
    }

    /// A 2.6.32 area of `slots` slots with the slots of `runs` (first, length) taken, where
    /// they lie in the area (the header aside).
    fn area_with_runs(slots: u32, runs: Vec<(u32, u32)>) -> SwapArea {
        let mut a = SwapArea::new(Era::Linux2632, slots, true, false, 1);
        for (first, n) in runs {
            for s in first..(first + n).min(slots) {
                if s > 0 && !a.in_use(s) {
                    a.take(s);
                }
            }
        }
        a
    }

    proptest::proptest! {
        /// The first and last free slots of a range, found a word at a time, are those a walk
        /// slot by slot finds (`in_use`), and so are the slots in use of the range, on areas
        /// with random runs of used slots; and the run
        /// in use around a target, found in one word where the range allows, is the one those
        /// searches give, on aligned blocks of 1 to 256 slots (within a word up to 64, as
        /// read-ahead asks, and across words).
        #[test]
        fn free_slots_in_a_range_by_words_match_the_walk(
            slots in 2u32..700,
            runs in proptest::collection::vec((0u32..700, 1u32..150), 0..20),
            a0 in 0u32..700,
            b0 in 0u32..700,
            pc in 0u32..9,
        ) {
            let a = area_with_runs(slots, runs);
            // From slot 1: the read-ahead window never holds the header, slot 0.
            let (lo, hi) = (a0.min(b0).clamp(1, slots), a0.max(b0).min(slots));
            let walk_first = (lo..hi).find(|&x| !a.in_use(x)).unwrap_or(hi);
            let walk_last = (lo..hi).rev().find(|&x| !a.in_use(x));
            proptest::prop_assert_eq!(a.first_free_in(lo, hi), walk_first);
            let mut used = Vec::new();
            a.for_each_used_in(lo, hi, |x| used.push(x));
            let walk_used: Vec<u32> = (lo..hi).filter(|&x| a.in_use(x)).collect();
            proptest::prop_assert_eq!(used, walk_used);
            proptest::prop_assert_eq!(a.last_free_in(lo, hi), walk_last);
            let target = a0.clamp(1, slots - 1);
            let aligned = (target >> pc) << pc;
            let (base, end) = (aligned.max(1), (aligned + (1 << pc)).min(slots));
            let want = (
                a.last_free_in(base, target).map_or(base, |x| x + 1),
                a.first_free_in(target + 1, end),
            );
            proptest::prop_assert_eq!(a.used_run_around(target, base, end), want);
        }

        /// The word-at-a-time search finds the run the fragment-by-fragment one finds, on
        /// areas of random sizes with random runs of used slots, from any start, with the
        /// bounds `scan_swap_map` passes.
        #[test]
        fn free_run_word_search_matches_the_fragment_search(
            slots in 2u32..3000,
            runs in proptest::collection::vec((0u32..3000, 1u32..300), 0..40),
            freed in proptest::collection::vec((0u32..3000, 1u32..200), 0..10),
            from in 0u32..3100,
            bound in 0u32..3400,
        ) {
            let mut a = area_with_runs(slots, runs);
            // Some freed again, so free words come back.
            for (first, n) in freed {
                for s in first..(first + n).min(slots) {
                    if a.in_use(s) {
                        a.free(s);
                    }
                }
            }
            for (w, &u) in a.map.iter().enumerate() {
                proptest::prop_assert_eq!(a.free_words[w / 64] >> (w % 64) & 1 == 1, u == 0);
            }
            proptest::prop_assert_eq!(
                a.free_run(from, |last| last <= bound),
                a.free_run_by_fragments(from, |last| last <= bound)
            );
            proptest::prop_assert_eq!(
                a.free_run(from, |last| last < bound),
                a.free_run_by_fragments(from, |last| last < bound)
            );
        }
    }
}
