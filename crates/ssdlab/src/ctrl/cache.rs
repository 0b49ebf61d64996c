//! The controller's DRAM cache buffer as a data structure: lines of one map unit, kept in
//! eviction order, with LRU, CLOCK (second chance) or FIFO replacement, dirty and in-flush
//! state, and the scan from the eviction end that pre-emptive flushing uses (seed 001).
//!
//! Timing lives elsewhere (the controller drives this with DRAM and NAND timing). Lines are
//! slots in one vector linked in eviction order: `tail` is evicted next, `head` was inserted or
//! (LRU) used last. Look-ups go through a map from logical unit to slot that is never iterated.

pub use crate::config::Replacement;
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub struct Line {
    pub lpn: u64,
    pub dirty: bool,
    /// A flush of this line is under way.
    pub flushing: bool,
    /// Bumped by every write, so a flush can tell whether it wrote the latest data.
    pub generation: u32,
    /// Discarded while under flush: no longer in the index; freed when the flush ends.
    pub orphan: bool,
    referenced: bool,
    prev: u32,
    next: u32,
    /// When the line last went to the head (the order is the order of these); `UNLINKED`
    /// while it is out of the order.
    stamp: u64,
}

const UNLINKED: u64 = u64::MAX;

/// A line of an idle queue as it was when pushed. Ordered by stamp alone; a stamp names one
/// push of one slot, so equal stamps mean equal entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IdleEntry {
    stamp: u64,
    slot: u32,
}

/// Oldest greatest, so the binary heap's top is the oldest entry.
impl Ord for IdleEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.stamp.cmp(&self.stamp)
    }
}

impl PartialOrd for IdleEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Entries taken oldest stamp first. Most pushes carry the newest stamp (a line going to the
/// head), so they queue in order at the back of `in_order`; a push older than that back (a line
/// whose flush ended, or that turned dirty, where it stands) goes to the small heap `late`.
/// The oldest entry is the older of the two fronts. With one binary heap of every entry, MQSim's
/// drive (256 MiB buffer, every write evicting) spent 5 % of its run's samples in the heap's
/// sift-downs, which miss the processor's cache on a heap of 65,536 entries; the queue's front
/// is read in order (`perf record`, `profile_run 1000000 mqsim-default randrw:50`).
#[derive(Default)]
struct IdleQueue {
    in_order: VecDeque<IdleEntry>,
    late: BinaryHeap<IdleEntry>,
}

impl IdleQueue {
    fn len(&self) -> usize {
        self.in_order.len() + self.late.len()
    }

    fn push(&mut self, e: IdleEntry) {
        match self.in_order.back() {
            Some(back) if back.stamp > e.stamp => self.late.push(e),
            _ => self.in_order.push_back(e),
        }
    }

    /// The oldest entry.
    fn peek(&self) -> Option<IdleEntry> {
        match (self.in_order.front(), self.late.peek()) {
            (Some(&a), Some(&b)) => Some(if b.stamp < a.stamp { b } else { a }),
            (a, b) => a.or(b).copied(),
        }
    }

    /// Drop the oldest entry.
    fn pop(&mut self) {
        match (self.in_order.front(), self.late.peek()) {
            (Some(a), Some(b)) if b.stamp < a.stamp => {
                self.late.pop();
            }
            (Some(_), _) => {
                self.in_order.pop_front();
            }
            _ => {
                self.late.pop();
            }
        }
    }

    fn retain(&mut self, keep: impl Fn(IdleEntry) -> bool) {
        self.in_order.retain(|&e| keep(e));
        self.late.retain(|&e| keep(e));
    }
}

pub struct CacheBuffer {
    policy: Replacement,
    capacity: u32,
    lines: Vec<Line>,
    /// Resident line of each logical unit (FxHash: see Cargo.toml's note).
    index: FxHashMap<u64, u32>,
    free: Vec<u32>,
    /// Newest end of the order.
    head: u32,
    /// Eviction end.
    tail: u32,
    dirty: u32,
    /// LRU and FIFO: the lines not under flush, oldest first; entries
    /// whose line has moved, started a flush or left are dropped when they reach the front. A
    /// write of many lines puts thousands under flush at the eviction end, and a scan of the
    /// order passed all of them again for every line it evicted (issue 15: 512 B map units
    /// with 1 MiB writes ran 40 times slower per event). A line going to the head is the
    /// newest, so its push goes to the back of the queue.
    idle: IdleQueue,
    /// LRU and FIFO: the dirty lines not under flush, oldest first, kept as `idle` is. A
    /// background flush takes the oldest; a scan from the tail passed every line flushed
    /// before it again (clean now, still in the order until evicted), and with a 1 GiB buffer
    /// of 4 KiB lines random writes ran at 8 K requests per wall-clock second.
    dirty_idle: IdleQueue,
    next_stamp: u64,
}

impl CacheBuffer {
    pub fn new(capacity: u32, policy: Replacement) -> CacheBuffer {
        assert!(capacity > 0);
        CacheBuffer {
            policy,
            capacity,
            lines: Vec::with_capacity(capacity as usize),
            index: FxHashMap::with_capacity_and_hasher(capacity as usize, Default::default()),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            dirty: 0,
            idle: IdleQueue::default(),
            dirty_idle: IdleQueue::default(),
            next_stamp: 0,
        }
    }

    /// An entry of `idle` names a line that is in the order, not under flush, and has not
    /// moved since.
    fn idle_entry_current(lines: &[Line], e: IdleEntry) -> bool {
        let l = &lines[e.slot as usize];
        l.stamp == e.stamp && !l.flushing
    }

    fn push_idle(&mut self, slot: u32) {
        if self.policy == Replacement::Clock {
            return;
        }
        if self.idle.len() > 4 * self.capacity.max(64) as usize {
            // Moves and flushes left too many stale entries: keep the current ones.
            let lines = &self.lines;
            self.idle.retain(|e| Self::idle_entry_current(lines, e));
        }
        let stamp = self.lines[slot as usize].stamp;
        self.idle.push(IdleEntry { stamp, slot });
        if self.lines[slot as usize].dirty {
            self.push_dirty_idle(slot);
        }
    }

    /// An entry of `dirty_idle` names a line that is in the order, dirty, not under flush, and
    /// has not moved since.
    fn dirty_entry_current(lines: &[Line], e: IdleEntry) -> bool {
        let l = &lines[e.slot as usize];
        l.stamp == e.stamp && l.dirty && !l.flushing
    }

    /// `slot` is dirty and not under flush at its place in the order (LRU, FIFO).
    fn push_dirty_idle(&mut self, slot: u32) {
        if self.dirty_idle.len() > 4 * self.capacity.max(64) as usize {
            let lines = &self.lines;
            self.dirty_idle
                .retain(|e| Self::dirty_entry_current(lines, e));
        }
        let stamp = self.lines[slot as usize].stamp;
        self.dirty_idle.push(IdleEntry { stamp, slot });
    }

    /// The dirty line not under flush nearest the eviction end (LRU, FIFO).
    fn oldest_dirty_idle(&mut self) -> Option<u32> {
        while let Some(e) = self.dirty_idle.peek() {
            if Self::dirty_entry_current(&self.lines, e) {
                return Some(e.slot);
            }
            self.dirty_idle.pop();
        }
        None
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }
    pub fn len(&self) -> u32 {
        self.index.len() as u32
    }
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
    pub fn dirty_lines(&self) -> u32 {
        self.dirty
    }
    /// Every slot is taken: by a cached line, or by a discarded one whose flush is still under
    /// way (its slot comes free when the flush ends; counting only cached lines let an insert
    /// take a slot past the capacity).
    pub fn is_full(&self) -> bool {
        (self.lines.len() - self.free.len()) as u32 >= self.capacity
    }
    pub fn line(&self, slot: u32) -> &Line {
        &self.lines[slot as usize]
    }

    /// The slot holding `lpn`, without counting as a use.
    pub fn find(&self, lpn: u64) -> Option<u32> {
        self.index.get(&lpn).copied()
    }

    /// The slot holding `lpn`, counted as a use (LRU moves it to the head, CLOCK marks it).
    pub fn touch(&mut self, lpn: u64) -> Option<u32> {
        let slot = self.find(lpn)?;
        match self.policy {
            Replacement::Lru => {
                self.unlink(slot);
                self.push_head(slot);
            }
            Replacement::Clock => self.lines[slot as usize].referenced = true,
            Replacement::Fifo => {}
        }
        Some(slot)
    }

    /// Insert `lpn` (not present) into a free slot. The caller evicts first when full.
    pub fn insert(&mut self, lpn: u64, dirty: bool) -> u32 {
        debug_assert!(self.find(lpn).is_none(), "lpn {lpn} already cached");
        assert!(!self.is_full(), "insert into a full cache buffer");
        let line = Line {
            lpn,
            dirty,
            flushing: false,
            generation: 0,
            orphan: false,
            referenced: false,
            prev: NIL,
            next: NIL,
            stamp: UNLINKED,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.lines[s as usize] = line;
                s
            }
            None => {
                self.lines.push(line);
                (self.lines.len() - 1) as u32
            }
        };
        self.push_head(slot);
        self.index.insert(lpn, slot);
        if dirty {
            self.dirty += 1;
        }
        slot
    }

    /// Record a write to a cached line.
    pub fn write(&mut self, slot: u32) {
        let l = &mut self.lines[slot as usize];
        l.generation = l.generation.wrapping_add(1);
        if !l.dirty {
            l.dirty = true;
            self.dirty += 1;
            if !l.flushing && self.policy != Replacement::Clock {
                self.push_dirty_idle(slot);
            }
        }
    }

    /// A flush that started at `generation` finished: the line is clean unless written since.
    /// Returns false if the line had been discarded (its slot is now free).
    pub fn flush_done(&mut self, slot: u32, generation: u32) -> bool {
        let l = &mut self.lines[slot as usize];
        l.flushing = false;
        if l.orphan {
            self.unlink(slot);
            self.free.push(slot);
            return false;
        }
        let l = &mut self.lines[slot as usize];
        if l.dirty && l.generation == generation {
            l.dirty = false;
            self.dirty -= 1;
        }
        // After the clean-up: only a line written during its flush is still dirty.
        self.push_idle(slot);
        true
    }

    pub fn start_flush(&mut self, slot: u32) -> u32 {
        let l = &mut self.lines[slot as usize];
        debug_assert!(l.dirty && !l.flushing);
        l.flushing = true;
        l.generation
    }

    /// The line to evict next, giving CLOCK's referenced lines their second chance. Lines being
    /// flushed are passed over (their data is still needed). None if every line is in flush.
    pub fn victim(&mut self) -> Option<u32> {
        if self.policy != Replacement::Clock {
            // The oldest line not under flush.
            while let Some(e) = self.idle.peek() {
                if Self::idle_entry_current(&self.lines, e) {
                    return Some(e.slot);
                }
                self.idle.pop();
            }
            return None;
        }
        // CLOCK's scan also gives the referenced lines under flush that it passes their second
        // chance, so it walks the whole order.
        self.victim_by_walk()
    }

    /// The eviction scan of the whole order from the tail (CLOCK's, and the tests' oracle for
    /// the idle queue).
    fn victim_by_walk(&mut self) -> Option<u32> {
        let mut slot = self.tail;
        let mut seen = 0;
        while slot != NIL && seen < 2 * self.capacity {
            seen += 1;
            let l = self.lines[slot as usize];
            if self.policy == Replacement::Clock && l.referenced {
                self.lines[slot as usize].referenced = false;
                let prev = l.prev;
                self.unlink(slot);
                self.push_head(slot);
                slot = if prev == NIL { self.tail } else { prev };
                continue;
            }
            if !l.flushing {
                return Some(slot);
            }
            slot = l.prev;
        }
        None
    }

    /// Forget `lpn` (its data was trimmed), dirty or not. A line under flush leaves the index
    /// at once (look-ups miss) and its slot is freed when the flush ends.
    pub fn discard(&mut self, lpn: u64) {
        let Some(slot) = self.index.remove(&lpn) else {
            return;
        };
        let l = &mut self.lines[slot as usize];
        if l.dirty {
            l.dirty = false;
            self.dirty -= 1;
        }
        if l.flushing {
            l.orphan = true;
        } else {
            self.unlink(slot);
            self.free.push(slot);
        }
    }

    /// Drop a clean line.
    pub fn evict(&mut self, slot: u32) {
        let l = self.lines[slot as usize];
        assert!(!l.dirty && !l.flushing, "evicting a dirty or flushing line");
        self.unlink(slot);
        self.index.remove(&l.lpn);
        self.free.push(slot);
    }

    /// The first dirty line not being flushed among the `window` lines at the eviction end.
    pub fn dirty_near_eviction(&mut self, window: u32) -> Option<u32> {
        if window >= self.len() && self.policy != Replacement::Clock {
            return self.oldest_dirty_idle();
        }
        let mut slot = self.tail;
        let mut n = 0;
        while slot != NIL && n < window {
            let l = &self.lines[slot as usize];
            if l.dirty && !l.flushing {
                return Some(slot);
            }
            slot = l.prev;
            n += 1;
        }
        None
    }

    /// Every dirty line not being flushed, eviction end first.
    pub fn dirty_idle_lines(&self) -> Vec<u32> {
        let mut v = Vec::new();
        let mut slot = self.tail;
        while slot != NIL {
            let l = &self.lines[slot as usize];
            if l.dirty && !l.flushing {
                v.push(slot);
            }
            slot = l.prev;
        }
        v
    }

    /// Lines in eviction order, eviction end first (tests and checks).
    pub fn order(&self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.len() as usize);
        let mut slot = self.tail;
        while slot != NIL {
            v.push(self.lines[slot as usize].lpn);
            slot = self.lines[slot as usize].prev;
        }
        v
    }

    fn unlink(&mut self, slot: u32) {
        let (prev, next) = (
            self.lines[slot as usize].prev,
            self.lines[slot as usize].next,
        );
        self.lines[slot as usize].stamp = UNLINKED;
        if prev != NIL {
            self.lines[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.lines[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
    }

    /// `prev` points towards the head (newer), `next` towards the tail (older).
    fn push_head(&mut self, slot: u32) {
        let l = &mut self.lines[slot as usize];
        l.prev = NIL;
        l.next = self.head;
        if self.head != NIL {
            self.lines[self.head as usize].prev = slot;
        } else {
            self.tail = slot;
        }
        self.head = slot;
        self.lines[slot as usize].stamp = self.next_stamp;
        self.next_stamp += 1;
        if !self.lines[slot as usize].flushing {
            self.push_idle(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Oracle: a plain vector in eviction order (front = evicted next).
    struct Model {
        order: Vec<(u64, bool)>,
        policy: Replacement,
        cap: usize,
    }

    impl Model {
        fn access(&mut self, lpn: u64, write: bool) -> Option<u64> {
            if let Some(i) = self.order.iter().position(|x| x.0 == lpn) {
                let mut e = self.order[i];
                e.1 |= write;
                match self.policy {
                    Replacement::Lru => {
                        self.order.remove(i);
                        self.order.push(e);
                    }
                    _ => self.order[i] = e,
                }
                return None;
            }
            let mut evicted = None;
            if self.order.len() == self.cap {
                evicted = Some(self.order.remove(0).0);
            }
            self.order.push((lpn, write));
            evicted
        }
    }

    proptest! {
        #[test]
        fn lru_and_fifo_match_a_plain_list(policy in prop_oneof![Just(Replacement::Lru), Just(Replacement::Fifo)],
                                           ops in proptest::collection::vec((0u64..24, any::<bool>()), 1..400)) {
            let cap = 8;
            let mut c = CacheBuffer::new(cap, policy);
            let mut m = Model { order: Vec::new(), policy, cap: cap as usize };
            for (lpn, write) in ops {
                let expect_evicted = m.access(lpn, write);
                match c.touch(lpn) {
                    Some(slot) => {
                        prop_assert!(expect_evicted.is_none());
                        if write { c.write(slot); }
                    }
                    None => {
                        if c.is_full() {
                            let v = c.victim().unwrap();
                            prop_assert_eq!(Some(c.line(v).lpn), expect_evicted);
                            // Clean it as a flush would, then evict.
                            if c.line(v).dirty {
                                let g = c.start_flush(v);
                                assert!(c.flush_done(v, g));
                            }
                            c.evict(v);
                        }
                        let slot = c.insert(lpn, false);
                        if write { c.write(slot); }
                    }
                }
                let order: Vec<u64> = m.order.iter().map(|x| x.0).collect();
                prop_assert_eq!(c.order(), order);
            }
        }
    }

    impl CacheBuffer {
        /// What a user of the buffer can see: the order, and each line's state.
        fn state(&self) -> Vec<(u64, bool, bool, bool)> {
            let mut v = Vec::new();
            let mut slot = self.tail;
            while slot != NIL {
                let l = &self.lines[slot as usize];
                v.push((l.lpn, l.dirty, l.flushing, l.referenced));
                slot = l.prev;
            }
            v
        }
    }

    proptest! {
        /// The victim, and the dirty line a background flush takes, are what a scan of the whole
        /// order from the tail picks, under every policy, with flushes starting and ending,
        /// writes, hits, discards and evictions in any order.
        #[test]
        fn the_victim_matches_a_scan_from_the_tail(
            policy in prop_oneof![Just(Replacement::Lru), Just(Replacement::Fifo), Just(Replacement::Clock)],
            ops in proptest::collection::vec((0u8..6, 0u64..40), 1..600),
        ) {
            let cap = 16;
            let mut fast = CacheBuffer::new(cap, policy);
            let mut slow = CacheBuffer::new(cap, policy);
            let mut flushes: Vec<(u32, u32)> = Vec::new();
            for (op, x) in ops {
                match op {
                    // A host access: a hit, or an insert after an eviction of a clean victim.
                    0 | 1 => {
                        let (a, b) = (fast.touch(x), slow.touch(x));
                        prop_assert_eq!(a, b);
                        if let Some(s) = a {
                            if op == 1 { fast.write(s); slow.write(s); }
                        } else {
                            if fast.is_full() {
                                let (va, vb) = (fast.victim(), slow.victim_by_walk());
                                prop_assert_eq!(va, vb);
                                match va {
                                    Some(v) if !fast.line(v).dirty => { fast.evict(v); slow.evict(v); }
                                    _ => continue,
                                }
                            }
                            fast.insert(x, op == 1);
                            slow.insert(x, op == 1);
                        }
                    }
                    // A flush of the victim if dirty, else of the x-th dirty idle line.
                    2 => {
                        let lines = fast.dirty_idle_lines();
                        if lines.is_empty() { continue; }
                        let s = lines[x as usize % lines.len()];
                        let g = fast.start_flush(s);
                        prop_assert_eq!(slow.start_flush(s), g);
                        flushes.push((s, g));
                    }
                    // The x-th flush under way ends.
                    3 => {
                        if flushes.is_empty() { continue; }
                        let (s, g) = flushes.remove(x as usize % flushes.len());
                        prop_assert_eq!(fast.flush_done(s, g), slow.flush_done(s, g));
                    }
                    4 => { fast.discard(x); slow.discard(x); }
                    // A scan alone (a read's fill asks for a victim and may not use it).
                    _ => prop_assert_eq!(fast.victim(), slow.victim_by_walk()),
                }
                prop_assert_eq!(fast.state(), slow.state());
                // The oldest dirty line not under flush (a background flush's pick) is the
                // first a walk from the tail finds.
                let walked = slow.dirty_idle_lines().first().copied();
                prop_assert_eq!(fast.dirty_near_eviction(u32::MAX), walked);
            }
        }
    }

    #[test]
    fn a_line_discarded_during_its_flush_is_freed_when_the_flush_ends() {
        let mut c = CacheBuffer::new(2, Replacement::Lru);
        let s = c.insert(5, true);
        let g = c.start_flush(s);
        c.discard(5);
        assert!(c.find(5).is_none());
        assert_eq!(c.dirty_lines(), 0);
        let t = c.insert(5, true);
        assert_ne!(
            s, t,
            "the flushing slot is not reused before its flush ends"
        );
        assert!(!c.flush_done(s, g));
        assert_eq!(c.find(5), Some(t));
        assert_eq!(c.len(), 1);
        assert_eq!(c.order(), vec![5]);
    }

    #[test]
    fn hits_without_evictions_keep_the_victim_right_and_the_idle_queue_bounded() {
        let mut c = CacheBuffer::new(4, Replacement::Lru);
        for lpn in 0..4 {
            c.insert(lpn, false);
        }
        for k in 0..5000u64 {
            c.touch(k * 7 % 4);
            if k % 3 == 0 {
                c.touch(k % 4);
            }
        }
        assert!(c.idle.len() <= 4 * 64 + 1, "{} entries", c.idle.len());
        let v = c.victim().unwrap();
        assert_eq!(c.line(v).lpn, c.order()[0]);
    }

    #[test]
    fn clock_gives_a_second_chance() {
        let mut c = CacheBuffer::new(2, Replacement::Clock);
        c.insert(1, false);
        c.insert(2, false);
        c.touch(1);
        let v = c.victim().unwrap();
        assert_eq!(c.line(v).lpn, 2, "1 was referenced, so 2 goes first");
    }

    #[test]
    fn a_write_during_flush_keeps_the_line_dirty() {
        let mut c = CacheBuffer::new(4, Replacement::Lru);
        let s = c.insert(9, true);
        let g = c.start_flush(s);
        c.write(s);
        assert!(c.flush_done(s, g));
        assert!(c.line(s).dirty, "the newer write has not been flushed");
        assert_eq!(c.dirty_lines(), 1);
        let g = c.start_flush(s);
        assert!(c.flush_done(s, g));
        assert!(!c.line(s).dirty);
        assert_eq!(c.dirty_lines(), 0);
    }

    #[test]
    fn scan_finds_dirty_lines_only_near_the_eviction_end() {
        let mut c = CacheBuffer::new(10, Replacement::Lru);
        for lpn in 0..10 {
            c.insert(lpn, lpn == 7);
        }
        assert_eq!(
            c.dirty_near_eviction(5),
            None,
            "7 is the 8th from the eviction end"
        );
        assert_eq!(c.dirty_near_eviction(8).map(|s| c.line(s).lpn), Some(7));
        let victim = c.victim().unwrap();
        assert_eq!(c.line(victim).lpn, 0);
    }

    proptest! {
        /// The idle queue gives its entries in the order one binary heap of them would: pushes
        /// mostly newest (to the back), some older (a flush ended), drops of the oldest, and
        /// clean-ups that keep some entries.
        #[test]
        fn the_idle_queue_pops_as_one_heap(
            ops in proptest::collection::vec((0u8..8, 0u64..50, 0u32..20), 1..500),
        ) {
            let mut queue = IdleQueue::default();
            let mut heap: BinaryHeap<IdleEntry> = BinaryHeap::new();
            let mut newest = 0u64;
            for (op, x, slot) in ops {
                match op {
                    0..=3 => {
                        newest += x % 3;
                        let e = IdleEntry { stamp: newest, slot };
                        queue.push(e);
                        heap.push(e);
                    }
                    4 => {
                        let e = IdleEntry { stamp: newest.saturating_sub(x), slot };
                        queue.push(e);
                        heap.push(e);
                    }
                    5 | 6 => {
                        queue.pop();
                        heap.pop();
                    }
                    _ => {
                        let keep = |e: IdleEntry| !(e.stamp + x).is_multiple_of(3);
                        queue.retain(keep);
                        heap.retain(|&e| keep(e));
                    }
                }
                prop_assert_eq!(queue.len(), heap.len());
                // Equal stamps are equal entries to the buffer; compare stamps.
                prop_assert_eq!(queue.peek().map(|e| e.stamp), heap.peek().map(|e| e.stamp));
            }
        }
    }
}
