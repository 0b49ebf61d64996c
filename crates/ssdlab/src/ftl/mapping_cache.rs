//! Demand-paged mapping (DFTL, Gupta et al., ASPLOS 2009): with `ftl.mapping = "cached"` the
//! logical→physical map lives in translation pages on NAND, and a mapping cache in controller
//! memory (or in the host's memory, NVMe HMB) holds the translation pages in use.
//!
//! A translation page fills one map unit and holds `unit / entry` consecutive entries
//! (`ftl.mapping_entry`, 4 B by default as in DFTL). The translation pages are extra logical
//! units of the FTL, numbered after the host's (`base + page`), so they are allocated, moved by
//! GC and erased like data, and their places, the global translation directory (GTD), are the
//! FTL's map entries for those units, kept in controller memory.
//!
//! The simulator keeps the whole map in memory as the truth; this module decides only what the
//! cache holds and so what NAND traffic the map costs. It is functional (no timing): the HIL
//! asks it before a command touches the map and turns what it reports into NAND transactions.
//!
//! The cache holds whole translation pages (entries grouped by translation page), in LRU order,
//! each with a dirty bit:
//! - a command's lookup of a cached page is a hit (it becomes most recent); of a page not
//!   cached, a miss: the page is read from NAND (unless the GTD has no place for it yet, or
//!   its program has not finished) and the command waits for it; a miss on a page already on
//!   its way in waits for the same read;
//! - a loaded page enters as most recent; if the cache is over its size, the least recent pages
//!   leave, and a dirty one is programmed to a new place (all the updates it collected go out in
//!   one program, DFTL's batching);
//! - an update of a page's entries (a host write, a GC move, a trim) makes a cached page dirty;
//!   of a page not cached, it is a read-modify-write in the background: the page is read, then
//!   programmed, and updates arriving while the read runs share that program.

/// Translation-page state bits.
const CACHED: u8 = 1;
const DIRTY: u8 = 2;
/// Read from NAND for a command's miss, not yet in.
const LOADING: u8 = 4;
/// Loading, and updated meanwhile: enters dirty.
const DIRTY_ON_LOAD: u8 = 8;
/// A background read-modify-write's read is issued or running.
const UPDATING: u8 = 16;

use crate::sim::divisor::Divisor;

const NIL: u32 = u32::MAX;

/// One translation page's bookkeeping.
#[derive(Clone, Copy, Debug)]
struct PageInfo {
    /// `CACHED`, `DIRTY`, ... bits.
    state: u8,
    /// LRU neighbours while cached (`prev` towards the most recent), `NIL` at the ends.
    prev: u32,
    next: u32,
    /// The last of the page's chain of waits (`NIL`: no command waits for it).
    wait_head: u32,
}

/// What a command's lookup of a translation page found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    /// Already on its way in for another command: wait for that read.
    Loading,
    /// Not cached: the caller reads it (or loads it at once, see [`MappingCache::loaded`]).
    Miss,
}

/// Where a waiting command goes on once its translation pages are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// A read command: look up its units and read them.
    Read,
    /// A write command whose data is in: place its units.
    Write,
    /// A cache buffer's flush (the waiter is its line, not a command): map the line's unit and
    /// program it. A flush waits for one page only.
    Flush,
}

/// The mapping cache's counters (in the result's `ftl.mapping`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MappingStats {
    /// Lookups, one per translation page a command touches: found cached.
    pub hits: u64,
    /// Lookups that found the page not cached (loading for another command included).
    pub misses: u64,
    /// Translation pages read from NAND: for misses, and for background read-modify-writes.
    pub translation_reads: u64,
    /// Translation pages programmed: dirty evictions and background read-modify-writes.
    pub translation_writes: u64,
}

pub struct MappingCache {
    /// Map entries per translation page.
    pub per_page: u64,
    /// Division by `per_page` (a shift: 1,024 entries of 4 B in a 4 KiB unit), for
    /// [`MappingCache::page_of`], which every command and every map update asks.
    by_per_page: Divisor,
    /// Translation pages that hold the map of the whole logical space.
    pub pages: u64,
    /// FTL unit number of translation page 0 (the host's logical units come first).
    pub base: u64,
    /// Translation pages the cache holds.
    capacity: u32,
    /// The cache is in host memory (NVMe HMB): each access crosses the link.
    pub hmb: bool,
    /// Per translation page, in one record so that a page's bookkeeping is one cache line.
    pages_info: Vec<PageInfo>,
    /// Most and least recent cached pages.
    head: u32,
    tail: u32,
    len: u32,
    /// Commands waiting for translation pages: from each page's `wait_head`, the waits `(command, stage, next in the page's chain)` (slots reused
    /// through `free_waits`), and per command slot the pages it still waits for. A load goes
    /// through its page's waits alone, however many commands wait elsewhere.
    waits: Vec<(u32, Stage, u32)>,
    free_waits: Vec<u32>,
    waits_left: Vec<u16>,
    /// Pages to program (dirty evictions, read-modify-writes whose read is done), in order.
    pub pending_writes: Vec<u32>,
    /// Pages whose background read-modify-write read is to be issued, in order.
    pub pending_updates: Vec<u32>,
    /// Pages a cache buffer's flush missed on, to be read (or loaded at once) by the HIL: the
    /// buffer manager cannot issue NAND reads of translation pages itself.
    pub pending_loads: Vec<u32>,
    pub stats: MappingStats,
    /// Bytes per map entry (`ftl.mapping_entry`): what a hit reads from a Host Memory Buffer.
    pub entry_bytes: u64,
    /// The controller's work vectors for this map, kept for their capacity.
    pub scratch: LookupScratch,
}

/// Vectors the controller's cached-map paths (`ctrl/hil/cached.rs`) fill and empty within one
/// call, kept with the map they serve so that a device with the whole map in memory carries
/// none: only their capacity outlives a call.
#[derive(Debug, Default)]
pub struct LookupScratch {
    /// The translation pages a command looks up.
    pub pages: Vec<u32>,
    /// The translation pages a command misses on.
    pub misses: Vec<u32>,
    /// The commands (and cache buffer flushes) whose pages came in.
    pub ready: Vec<(u32, Stage)>,
}

impl MappingCache {
    /// A cache of `capacity` translation pages (at least 1) over `pages` pages of `per_page`
    /// entries of `entry_bytes` each, the first at FTL unit `base`.
    pub fn new(
        per_page: u64,
        entry_bytes: u64,
        pages: u64,
        base: u64,
        capacity: u64,
        hmb: bool,
    ) -> MappingCache {
        let n = pages as usize;
        MappingCache {
            per_page,
            by_per_page: Divisor::new(per_page.max(1)),
            pages,
            base,
            capacity: capacity.clamp(1, pages.max(1)).min(u32::MAX as u64 - 1) as u32,
            hmb,
            pages_info: vec![
                PageInfo {
                    state: 0,
                    prev: NIL,
                    next: NIL,
                    wait_head: NIL,
                };
                n
            ],
            head: NIL,
            tail: NIL,
            len: 0,
            waits: Vec::new(),
            free_waits: Vec::new(),
            waits_left: Vec::new(),
            pending_writes: Vec::new(),
            pending_updates: Vec::new(),
            pending_loads: Vec::new(),
            stats: MappingStats::default(),
            entry_bytes,
            scratch: LookupScratch::default(),
        }
    }

    /// The translation page that holds logical unit `lpn`'s entry.
    #[inline]
    pub fn page_of(&self, lpn: u64) -> u32 {
        self.by_per_page.quotient(lpn) as u32
    }

    /// Warm the cache for a coming lookup of `page` (speed only).
    #[inline]
    pub fn prefetch(&self, page: u32) {
        crate::sim::mem::prefetch(&self.pages_info, page as usize);
    }

    /// The pages the next loads push out, for prefetches of what their programs touch (speed
    /// only): the next one when it is dirty (its program will move it), and the one after it
    /// (dirty or not, as far as the cache knows now).
    #[inline]
    pub fn next_victims(&self) -> (Option<u32>, Option<u32>) {
        let t = self.tail;
        if self.len < self.capacity || t == NIL {
            return (None, None);
        }
        let info = &self.pages_info[t as usize];
        let after = (info.prev != NIL).then_some(info.prev);
        ((info.state & DIRTY != 0).then_some(t), after)
    }

    /// Translation pages cached now.
    pub fn cached(&self) -> u32 {
        self.len
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn is_cached(&self, page: u32) -> bool {
        self.pages_info[page as usize].state & CACHED != 0
    }

    /// On its way in: a command's miss is being read (or about to be).
    #[inline]
    pub fn is_loading(&self, page: u32) -> bool {
        self.pages_info[page as usize].state & LOADING != 0
    }

    pub fn is_dirty(&self, page: u32) -> bool {
        self.pages_info[page as usize].state & DIRTY != 0
    }

    /// A command looks up translation page `page` (counted as a hit or a miss). On a miss the
    /// page is marked loading: the caller reads it and reports [`MappingCache::loaded`].
    #[inline]
    pub fn lookup(&mut self, page: u32) -> Lookup {
        let s = self.pages_info[page as usize].state;
        if s & CACHED != 0 {
            self.stats.hits += 1;
            self.touch(page);
            Lookup::Hit
        } else if s & LOADING != 0 {
            self.stats.misses += 1;
            Lookup::Loading
        } else {
            self.stats.misses += 1;
            self.pages_info[page as usize].state |= LOADING;
            Lookup::Miss
        }
    }

    /// Command `cmd` waits for `page` (loading) before going on at `stage`; with
    /// [`Stage::Flush`], `cmd` is a cache buffer line, which waits for this page alone.
    pub fn wait(&mut self, page: u32, cmd: u32, stage: Stage) {
        let w = (cmd, stage, self.pages_info[page as usize].wait_head);
        let slot = match self.free_waits.pop() {
            Some(i) => {
                self.waits[i as usize] = w;
                i
            }
            None => {
                self.waits.push(w);
                (self.waits.len() - 1) as u32
            }
        };
        self.pages_info[page as usize].wait_head = slot;
        if stage == Stage::Flush {
            // Lines are not commands: no count of pages left, which is by command slot.
            return;
        }
        if self.waits_left.len() <= cmd as usize {
            self.waits_left.resize(cmd as usize + 1, 0);
        }
        self.waits_left[cmd as usize] += 1;
    }

    /// `page` is in (read from NAND, or loaded without a read): it becomes the most recent,
    /// the least recent pages leave while the cache is over its size (dirty ones onto
    /// `pending_writes`), and the commands that waited for nothing else go into `ready`.
    pub fn loaded(&mut self, page: u32, ready: &mut Vec<(u32, Stage)>) {
        let s = self.pages_info[page as usize].state;
        debug_assert!(s & LOADING != 0, "page {page} loaded without a miss");
        let dirty = if s & DIRTY_ON_LOAD != 0 { DIRTY } else { 0 };
        self.pages_info[page as usize].state = (s & !(LOADING | DIRTY_ON_LOAD)) | CACHED | dirty;
        self.push_front(page);
        while self.len > self.capacity {
            let victim = self.tail;
            self.unlink(victim);
            let vs = self.pages_info[victim as usize].state;
            if vs & DIRTY != 0 {
                self.pending_writes.push(victim);
            }
            self.pages_info[victim as usize].state = vs & !(CACHED | DIRTY);
        }
        // The next eviction unlinks the tail (warm now: its `next` was just written) and writes
        // its predecessor's record, a random one: fetch it ahead (speed only).
        if self.tail != NIL {
            let prev = self.pages_info[self.tail as usize].prev;
            if prev != NIL {
                crate::sim::mem::prefetch(&self.pages_info, prev as usize);
            }
        }
        let first = ready.len();
        let mut w = std::mem::replace(&mut self.pages_info[page as usize].wait_head, NIL);
        while w != NIL {
            let (cmd, stage, next) = self.waits[w as usize];
            self.free_waits.push(w);
            if stage == Stage::Flush {
                ready.push((cmd, stage));
                w = next;
                continue;
            }
            let left = &mut self.waits_left[cmd as usize];
            *left -= 1;
            if *left == 0 {
                ready.push((cmd, stage));
            }
            w = next;
        }
        // The chain runs from the last wait to the first: commands go on in the order they came.
        ready[first..].reverse();
    }

    /// An entry of `page` changed (a host write, a GC move, a trim): a cached page turns dirty;
    /// a page on its way in enters dirty; any other needs a background read-modify-write,
    /// unless one is already reading it (the update joins that one's program).
    #[inline]
    pub fn update(&mut self, page: u32) {
        let s = &mut self.pages_info[page as usize].state;
        if *s & CACHED != 0 {
            *s |= DIRTY;
        } else if *s & LOADING != 0 {
            *s |= DIRTY_ON_LOAD;
        } else if *s & UPDATING == 0 {
            *s |= UPDATING;
            self.pending_updates.push(page);
        }
    }

    /// A cache buffer's flush of unit `lpn` looks up its translation page, whose entry it is
    /// about to change: true on a hit (the flush goes on; its mapping makes the page dirty). On
    /// a miss the flush's line `slot` waits for the page, which is read first (a fresh miss
    /// goes onto `pending_loads`, for the HIL to read).
    pub fn flush_lookup(&mut self, lpn: u64, slot: u32) -> bool {
        let page = self.page_of(lpn);
        match self.lookup(page) {
            Lookup::Hit => return true,
            Lookup::Miss => self.pending_loads.push(page),
            Lookup::Loading => {}
        }
        self.wait(page, slot, Stage::Flush);
        false
    }

    /// A data unit's entry changed: the update of its translation page.
    #[inline]
    pub fn update_lpn(&mut self, lpn: u64) {
        if lpn < self.base {
            self.update(self.page_of(lpn));
        }
    }

    /// A background read-modify-write's read of `page` is done: its program follows, unless
    /// the page came into the cache meanwhile (then it is dirty there).
    pub fn update_read(&mut self, page: u32) {
        let s = &mut self.pages_info[page as usize].state;
        *s &= !UPDATING;
        if *s & CACHED != 0 {
            *s |= DIRTY;
        } else if *s & LOADING != 0 {
            *s |= DIRTY_ON_LOAD;
        } else {
            self.pending_writes.push(page);
        }
    }

    #[inline]
    fn touch(&mut self, page: u32) {
        if self.head != page {
            self.unlink(page);
            self.push_front(page);
        }
    }

    fn push_front(&mut self, page: u32) {
        self.pages_info[page as usize].prev = NIL;
        self.pages_info[page as usize].next = self.head;
        if self.head != NIL {
            self.pages_info[self.head as usize].prev = page;
        } else {
            self.tail = page;
        }
        self.head = page;
        self.len += 1;
    }

    fn unlink(&mut self, page: u32) {
        let (p, n) = (
            self.pages_info[page as usize].prev,
            self.pages_info[page as usize].next,
        );
        if p != NIL {
            self.pages_info[p as usize].next = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.pages_info[n as usize].prev = p;
        } else {
            self.tail = p;
        }
        self.len -= 1;
    }

    /// Cached pages from the most to the least recent (tests).
    pub fn order(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len as usize);
        let mut p = self.head;
        while p != NIL {
            out.push(p);
            p = self.pages_info[p as usize].next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8 translation pages of 4 entries after 32 data units, a cache of 2 pages.
    fn cache() -> MappingCache {
        MappingCache::new(4, 4, 8, 32, 2, false)
    }

    fn load(c: &mut MappingCache, page: u32) -> Vec<(u32, Stage)> {
        assert_eq!(c.lookup(page), Lookup::Miss);
        let mut ready = Vec::new();
        c.loaded(page, &mut ready);
        ready
    }

    #[test]
    fn lru_order_hits_and_misses() {
        let mut c = cache();
        load(&mut c, 0);
        load(&mut c, 1);
        assert_eq!(c.order(), vec![1, 0]);
        assert_eq!(c.lookup(0), Lookup::Hit);
        assert_eq!(c.order(), vec![0, 1]);
        // A third page pushes out the least recent (1), which is clean: nothing to write.
        load(&mut c, 2);
        assert_eq!(c.order(), vec![2, 0]);
        assert!(!c.is_cached(1));
        assert!(c.pending_writes.is_empty());
        assert_eq!((c.stats.hits, c.stats.misses), (1, 3));
    }

    #[test]
    fn a_dirty_page_is_written_once_when_it_leaves() {
        let mut c = cache();
        load(&mut c, 0);
        // Three updates of page 0 (units 0, 1, 3): one dirty page.
        for lpn in [0, 1, 3] {
            c.update_lpn(lpn);
        }
        assert!(c.is_dirty(0));
        load(&mut c, 1);
        load(&mut c, 2);
        assert_eq!(c.pending_writes, vec![0]);
        assert!(!c.is_cached(0) && !c.is_dirty(0));
    }

    #[test]
    fn an_update_of_an_uncached_page_is_one_read_modify_write() {
        let mut c = cache();
        c.update_lpn(5);
        c.update_lpn(6); // the same page (1), its read not done: joins it
        assert_eq!(c.pending_updates, vec![1]);
        c.update_read(1);
        assert_eq!(c.pending_writes, vec![1]);
        // After the read, a new update needs a new read-modify-write.
        c.update_lpn(7);
        assert_eq!(c.pending_updates, vec![1, 1]);
        // Translation-page units themselves (≥ base) are not entries of any page.
        c.update_lpn(32);
        assert_eq!(c.pending_updates.len(), 2);
    }

    #[test]
    fn an_update_during_a_load_makes_the_page_enter_dirty() {
        let mut c = cache();
        assert_eq!(c.lookup(3), Lookup::Miss);
        c.update(3);
        assert!(c.pending_updates.is_empty());
        let mut ready = Vec::new();
        c.loaded(3, &mut ready);
        assert!(c.is_dirty(3));
        // A read-modify-write whose read ends after the page came in: dirty there, no write.
        let mut c = cache();
        c.update(4);
        load(&mut c, 4);
        c.update_read(4);
        assert!(c.is_dirty(4) && c.pending_writes.is_empty());
    }

    #[test]
    fn waiters_go_on_when_every_page_they_wait_for_is_in() {
        let mut c = cache();
        assert_eq!(c.lookup(0), Lookup::Miss);
        assert_eq!(c.lookup(1), Lookup::Miss);
        c.wait(0, 7, Stage::Read);
        c.wait(1, 7, Stage::Read);
        // Another command misses on page 0 too: it waits for the same read.
        assert_eq!(c.lookup(0), Lookup::Loading);
        c.wait(0, 9, Stage::Write);
        let mut ready = Vec::new();
        c.loaded(0, &mut ready);
        assert_eq!(ready, vec![(9, Stage::Write)]);
        ready.clear();
        c.loaded(1, &mut ready);
        assert_eq!(ready, vec![(7, Stage::Read)]);
        assert_eq!(c.stats.misses, 3);
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a plain model (a vector in recency order with dirty flags): the same pages
        /// cached in the same order, and every dirty page that left written exactly once.
        #[test]
        fn matches_a_reference_lru(ops in prop::collection::vec((0u8..3, 0u32..12), 1..300),
                                   cap in 1u64..6) {
            let mut c = MappingCache::new(8, 4, 12, 96, cap, false);
            let mut model: Vec<(u32, bool)> = Vec::new();
            let mut written = Vec::new();
            let mut ready = Vec::new();
            for (op, page) in ops {
                match op {
                    0 => {
                        match c.lookup(page) {
                            Lookup::Hit => {
                                let i = model.iter().position(|e| e.0 == page).unwrap();
                                let e = model.remove(i);
                                model.insert(0, e);
                            }
                            Lookup::Miss => {
                                prop_assert!(model.iter().all(|e| e.0 != page));
                                c.loaded(page, &mut ready);
                                model.insert(0, (page, false));
                                while model.len() > cap as usize {
                                    let (p, d) = model.pop().unwrap();
                                    if d { written.push(p); }
                                }
                            }
                            Lookup::Loading => prop_assert!(false, "nothing is left loading"),
                        }
                    }
                    1 => {
                        if let Some(e) = model.iter_mut().find(|e| e.0 == page) {
                            e.1 = true;
                            c.update(page);
                        }
                    }
                    _ => {
                        // An update of an uncached page: read then write.
                        if model.iter().all(|e| e.0 != page) {
                            c.update(page);
                            prop_assert_eq!(c.pending_updates.pop(), Some(page));
                            c.update_read(page);
                            written.push(page);
                        }
                    }
                }
                prop_assert_eq!(c.order(), model.iter().map(|e| e.0).collect::<Vec<_>>());
                prop_assert_eq!(&c.pending_writes, &written);
            }
        }
    }
}

#[cfg(test)]
mod wait_tests {
    use super::*;

    #[test]
    fn commands_waiting_for_one_page_go_on_in_the_order_they_came() {
        let mut c = MappingCache::new(4, 4, 8, 32, 4, false);
        assert_eq!(c.lookup(2), Lookup::Miss);
        for cmd in [5, 1, 9] {
            c.wait(2, cmd, Stage::Read);
        }
        let mut ready = Vec::new();
        c.loaded(2, &mut ready);
        assert_eq!(
            ready,
            vec![(5, Stage::Read), (1, Stage::Read), (9, Stage::Read)]
        );
        // The wait slots are reused: a second round allocates none.
        assert_eq!(c.lookup(3), Lookup::Miss);
        for cmd in [1, 9, 5] {
            c.wait(3, cmd, Stage::Write);
        }
        assert_eq!(c.waits.len(), 3);
        ready.clear();
        c.loaded(3, &mut ready);
        assert_eq!(ready.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 9, 5]);
    }
}
