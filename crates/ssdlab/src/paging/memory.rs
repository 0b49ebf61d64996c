//! Physical memory: page frames, the anonymous LRU lists, and the page table of the
//! workload's virtual pages.
//!
//! A frame is free, or holds one virtual page's data. It is *mapped* when the page's PTE points
//! at it, and in the *swap cache* when it has a swap slot (`add_to_swap_cache`): a page being
//! written out, a page read in (by its fault or by read-ahead) whose slot is kept, or a page
//! under writeback that was faulted back. A virtual page is untouched, mapped to the shared
//! zero page (first touched by a read: `do_anonymous_page`), resident, or swapped out (its PTE
//! holds the slot).
//!
//! The LRU lists follow mm/vmscan.c: an active and an inactive list, pages taken from the
//! inactive tail, added at the head (`lru_cache_add`), intrusive and doubly linked over frames.

pub const NONE: u32 = u32::MAX;

/// Frame flags (a `u32`, so that a frame's record has no padding: a copy of the record moves
/// its six words and no padding bytes).
pub const MAPPED: u32 = 1;
/// Written since its swap copy (or never written out).
pub const DIRTY: u32 = 2;
/// The PTE's accessed bit (`page_referenced`).
pub const REFERENCED: u32 = 4;
pub const ACTIVE: u32 = 8;
/// Under writeback (`PG_writeback`).
pub const WRITEBACK: u32 = 16;
/// Being read (`PG_locked` until the read ends).
pub const READING: u32 = 32;
/// Read ahead and not yet faulted on (`PG_readahead`).
pub const READAHEAD: u32 = 64;
/// On an LRU list.
pub const LRU: u32 = 128;

/// Virtual page states.
pub const UNTOUCHED: u8 = 0;
pub const ZERO: u8 = 1;
/// Resident or swapped out: see `frame` and `slot`.
pub const ANON: u8 = 2;

#[derive(Clone, Copy, Default)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

/// One frame in use so far: the virtual page whose data it holds, its slot (or NONE), the
/// version of the page's data it holds (the oracle's), its flags and its LRU links. Kept
/// together, so that a reclaim scan or a list move reads and writes one cache line per frame.
#[derive(Clone, Copy)]
pub struct Frame {
    pub owner: u32,
    pub slot: u32,
    pub data: u32,
    prev: u32,
    next: u32,
    pub flags: u32,
}

pub struct Memory {
    /// The frames used so far. The vector grows as frames are first handed out, so a large
    /// memory costs only the frames the workload touches (a 4 TiB memory would otherwise take
    /// 24 bytes per 4 KiB page, 24 GiB, before the first access).
    pub frames: Vec<Frame>,
    /// Frames released and free again, reused before a new one (the last released first).
    free: Vec<u32>,
    /// Frames in all: those past `frames.len()` are free and never used yet.
    nframes: u32,
    /// [inactive, active]
    lists: [List; 2],
    /// Per virtual page: state, frame (or NONE), slot (or NONE), the latest version written.
    pub state: Vec<u8>,
    pub frame: Vec<u32>,
    pub slot: Vec<u32>,
    pub version: Vec<u32>,
    /// Frames under writeback.
    pub writeback: u64,
}

impl Memory {
    pub fn new(frames: u32, vpages: u32) -> Memory {
        Memory {
            frames: Vec::new(),
            free: Vec::new(),
            nframes: frames,
            lists: [List {
                head: NONE,
                tail: NONE,
                len: 0,
            }; 2],
            state: vec![UNTOUCHED; vpages as usize],
            frame: vec![NONE; vpages as usize],
            slot: vec![NONE; vpages as usize],
            version: vec![0; vpages as usize],
            writeback: 0,
        }
    }

    #[inline]
    pub fn free_pages(&self) -> u64 {
        self.free.len() as u64 + (self.nframes as u64 - self.frames.len() as u64)
    }

    pub fn inactive_len(&self) -> u32 {
        self.lists[0].len
    }

    pub fn active_len(&self) -> u32 {
        self.lists[1].len
    }

    /// A free frame for `vpage`, holding `data`, with `flags` (not on a list yet).
    #[inline]
    pub fn alloc(&mut self, vpage: u32, data: u32, flags: u32) -> u32 {
        let fr = Frame {
            owner: vpage,
            slot: NONE,
            data,
            prev: NONE,
            next: NONE,
            flags,
        };
        self.store_free(fr)
    }

    /// `fr` stored in a free frame, which is returned: a released frame first, else the lowest
    /// never used (frame 0 first).
    #[inline(always)]
    fn store_free(&mut self, fr: Frame) -> u32 {
        store_free(&mut self.frames, &mut self.free, self.nframes, fr)
    }

    /// Make `f`, whose record's `next` is `head` (the list's head), the head of the active or
    /// inactive list.
    #[inline(always)]
    fn link_as_head(&mut self, f: u32, head: u32, active: bool) {
        let l = &mut self.lists[active as usize];
        if head != NONE {
            self.frames[head as usize].prev = f;
        } else {
            l.tail = f;
        }
        l.head = f;
        l.len += 1;
    }

    /// A free frame for `vpage`, holding `data` in `slot` (or NONE), with `flags`, at the head
    /// of the active or inactive list: what `alloc`, a write of the slot and `add_head` give,
    /// with the frame's record written once (a swap-in's pages, a first touch's).
    #[inline(always)]
    pub fn alloc_at_head(
        &mut self,
        vpage: u32,
        slot: u32,
        data: u32,
        flags: u32,
        active: bool,
    ) -> u32 {
        let head = self.lists[active as usize].head;
        let f = self.store_free(Frame {
            owner: vpage,
            slot,
            data,
            prev: NONE,
            next: head,
            flags: (flags & !ACTIVE) | LRU | if active { ACTIVE } else { 0 },
        });
        self.link_as_head(f, head, active);
        f
    }

    /// Return frame `f` to the free pool (off its list first).
    #[inline]
    pub fn release(&mut self, f: u32) {
        if self.frames[f as usize].flags & LRU != 0 {
            self.unlink(f);
        }
        let fr = &mut self.frames[f as usize];
        fr.owner = NONE;
        fr.slot = NONE;
        fr.flags = 0;
        self.free.push(f);
    }

    /// Add `f` at the head of the active or inactive list.
    #[inline]
    pub fn add_head(&mut self, f: u32, active: bool) {
        let head = self.lists[active as usize].head;
        self.link_as_head(f, head, active);
        let fr = &mut self.frames[f as usize];
        fr.flags = (fr.flags & !ACTIVE) | LRU | if active { ACTIVE } else { 0 };
        fr.prev = NONE;
        fr.next = head;
    }

    #[inline]
    pub fn unlink(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        fr.flags &= !LRU;
        let (p, n, i) = (fr.prev, fr.next, (fr.flags & ACTIVE != 0) as usize);
        let l = &mut self.lists[i];
        if p != NONE {
            self.frames[p as usize].next = n;
        } else {
            l.head = n;
        }
        if n != NONE {
            self.frames[n as usize].prev = p;
        } else {
            l.tail = p;
        }
        l.len -= 1;
    }

    /// Take the tail off the inactive (false) or active (true) list: `unlink` of a frame with
    /// no next, the reclaim scans' step.
    #[inline]
    pub fn pop_tail(&mut self, active: bool) -> Option<u32> {
        let l = &mut self.lists[active as usize];
        let f = l.tail;
        if f == NONE {
            return None;
        }
        let fr = &mut self.frames[f as usize];
        fr.flags &= !LRU;
        let p = fr.prev;
        if p != NONE {
            self.frames[p as usize].next = NONE;
        } else {
            l.head = NONE;
        }
        l.tail = p;
        l.len -= 1;
        Some(f)
    }

    /// Frames allocated one after another at the inactive head (a swap-in's pages): what
    /// `alloc_at_head(.., false)` gives for each, with the list's head kept in the
    /// allocator until [`HeadAlloc::finish`] writes it.
    #[inline(always)]
    pub fn alloc_at_inactive_head(&mut self) -> HeadAlloc<'_> {
        let list = &mut self.lists[0];
        HeadAlloc {
            frames: &mut self.frames,
            free: &mut self.free,
            nframes: self.nframes,
            head: list.head,
            n: 0,
            list,
        }
    }

    /// The reclaim batch (`isolate_lru_pages`): up to `n` frames from the inactive tail, handed
    /// out one by one by [`InactiveScan::next`], each then activated, put back at the
    /// inactive head, kept active or freed through the scan; [`InactiveScan::finish`] writes
    /// the lists' ends. The lists end as a `pop_tail(false)` per frame then an `add_head` (or
    /// a release) would leave them: the frames put back at the inactive head are linked among
    /// themselves in a chain of their own and the chain put at the head at the end (the scan
    /// never reaches them, as it takes no more frames than the list held), and those sent to
    /// the active head go there in the order they are handed out.
    #[inline(always)]
    pub fn scan_inactive(&mut self, n: u64) -> InactiveScan<'_> {
        let [inactive, active] = &mut self.lists;
        InactiveScan {
            frames: &mut self.frames[..],
            pte: &mut self.frame[..],
            page_slot: &mut self.slot[..],
            free: &mut self.free,
            writeback: &mut self.writeback,
            left: n.min(inactive.len as u64) as u32,
            batch: n.min(inactive.len as u64) as u32,
            tail: inactive.tail,
            head: active.head,
            not_in_use: 0,
            kept: 0,
            back_head: NONE,
            back_tail: NONE,
            back: 0,
            inactive,
            active,
        }
    }

    /// Move up to `n` frames from the active tail to the inactive head, their referenced bits
    /// cleared; returns how many. The same lists as `n` times `pop_tail(true)` then
    /// `add_head(f, false)` (the tail segment keeps its order: the last frame taken is the new
    /// head, the old tail lies next to the old inactive head), but the segment moves in one
    /// piece: a walk up its links to clear the flags, and its two ends relinked.
    pub fn deactivate_tail(&mut self, n: u64) -> u32 {
        let tail = self.lists[1].tail;
        if n == 0 || tail == NONE {
            return 0;
        }
        // Walk from the tail towards the head: `first` is the segment's frame nearest the head.
        let mut first = tail;
        let mut k = 1u32;
        loop {
            let fr = &mut self.frames[first as usize];
            fr.flags &= !(REFERENCED | ACTIVE);
            if k as u64 == n || fr.prev == NONE {
                break;
            }
            first = fr.prev;
            k += 1;
        }
        // Cut the segment off the active list...
        let rest = self.frames[first as usize].prev;
        let active = &mut self.lists[1];
        active.tail = rest;
        active.len -= k;
        if rest != NONE {
            self.frames[rest as usize].next = NONE;
        } else {
            active.head = NONE;
        }
        // ... and put it at the inactive head.
        let inactive = &mut self.lists[0];
        let old_head = inactive.head;
        inactive.head = first;
        inactive.len += k;
        if old_head != NONE {
            self.frames[old_head as usize].prev = tail;
        } else {
            inactive.tail = tail;
        }
        self.frames[first as usize].prev = NONE;
        self.frames[tail as usize].next = old_head;
        k
    }

    /// The inactive anon list is low against the active one (`inactive_anon_is_low`: inactive
    /// x ratio < active, ratio = sqrt(10 x GiB of memory), at least 1).
    pub fn inactive_is_low(&self, ratio: u64) -> bool {
        (self.lists[0].len as u64) * ratio < self.lists[1].len as u64
    }

    /// Check the structure (tests): list links and lengths agree with the flags, and every
    /// frame used so far is free or on a list.
    pub fn check_lists(&self) -> Result<(), String> {
        let mut seen = vec![false; self.frames.len()];
        for (i, l) in self.lists.iter().enumerate() {
            let mut f = l.head;
            let mut n = 0;
            let mut prev = NONE;
            while f != NONE {
                if seen[f as usize] {
                    return Err(format!("frame {f} twice on the lists"));
                }
                seen[f as usize] = true;
                if self.frames[f as usize].prev != prev {
                    return Err(format!("frame {f}: bad prev link"));
                }
                let active = self.frames[f as usize].flags & ACTIVE != 0;
                if active != (i == 1) || self.frames[f as usize].flags & LRU == 0 {
                    return Err(format!("frame {f}: flags disagree with list {i}"));
                }
                prev = f;
                f = self.frames[f as usize].next;
                n += 1;
            }
            if n != l.len || prev != l.tail {
                return Err(format!("list {i}: length or tail wrong"));
            }
        }
        for &f in &self.free {
            if seen[f as usize] {
                return Err(format!("frame {f} free and on a list"));
            }
            seen[f as usize] = true;
        }
        if let Some(f) = seen.iter().position(|s| !s) {
            return Err(format!("frame {f} neither free nor on a list"));
        }
        Ok(())
    }
}

/// `fr` stored in a free frame, which is returned: a released frame first, else the lowest
/// never used (frame 0 first).
#[inline(always)]
fn store_free(frames: &mut Vec<Frame>, free: &mut Vec<u32>, nframes: u32, fr: Frame) -> u32 {
    match free.pop() {
        Some(f) => {
            frames[f as usize] = fr;
            f
        }
        None => {
            let f = frames.len() as u32;
            assert!(f < nframes, "caller checked free pages");
            frames.push(fr);
            f
        }
    }
}

/// Frames allocated at the inactive head one after another ([`Memory::alloc_at_inactive_head`]).
pub struct HeadAlloc<'a> {
    frames: &'a mut Vec<Frame>,
    free: &'a mut Vec<u32>,
    nframes: u32,
    list: &'a mut List,
    /// The list's head, and the frames put there.
    head: u32,
    n: u32,
}

impl HeadAlloc<'_> {
    /// A free frame for `vpage`, holding `data` in `slot` (or NONE), with `flags`, at the
    /// inactive head.
    #[inline(always)]
    pub fn alloc(&mut self, vpage: u32, slot: u32, data: u32, flags: u32) -> u32 {
        let fr = Frame {
            owner: vpage,
            slot,
            data,
            prev: NONE,
            next: self.head,
            flags: (flags & !ACTIVE) | LRU,
        };
        let f = store_free(self.frames, self.free, self.nframes, fr);
        if self.head != NONE {
            linked(self.frames, self.head).prev = f;
        } else {
            self.list.tail = f;
        }
        self.head = f;
        self.n += 1;
        f
    }

    /// Write the list's head and length.
    #[inline(always)]
    pub fn finish(self) {
        self.list.head = self.head;
        self.list.len += self.n;
    }
}

/// A reclaim batch taken off the inactive tail ([`Memory::scan_inactive`]): the frames' records
/// and the page table as slices taken once, the lists' ends in the scan's fields until
/// `finish` writes them.
pub struct InactiveScan<'a> {
    frames: &'a mut [Frame],
    /// The page table (`Memory::frame`) and each page's slot (`Memory::slot`).
    pub pte: &'a mut [u32],
    pub page_slot: &'a mut [u32],
    free: &'a mut Vec<u32>,
    pub writeback: &'a mut u64,
    inactive: &'a mut List,
    active: &'a mut List,
    /// Frames still to hand out, and the next (the inactive list's tail once those handed
    /// out are off it).
    left: u32,
    tail: u32,
    /// The active head, and the frames handed out not in use (the others were activated)
    /// and kept active.
    head: u32,
    not_in_use: u32,
    kept: u32,
    /// The frames put back at the inactive head, a chain of their own (the last put back
    /// first) until `finish` links it in.
    back_head: u32,
    back_tail: u32,
    back: u32,
    /// The frames in the batch.
    batch: u32,
}

/// The record of frame `f`, on a list or handed out by the reclaim scan (taken off one):
/// within `frames`, as a list links only frames whose records are stored (`store_free`) and
/// the records never shrink. Unchecked: the reclaim
/// scan's loop holds more values than the registers, and a bounds check keeps the slice's
/// length live in one.
#[inline(always)]
fn linked(frames: &mut [Frame], f: u32) -> &mut Frame {
    debug_assert!(
        (f as usize) < frames.len(),
        "frame {f} on a list is not stored"
    );
    // SAFETY: `f` is or was on a list, so below `frames.len()` (above).
    unsafe { frames.get_unchecked_mut(f as usize) }
}

impl InactiveScan<'_> {
    /// The next frame of the batch not in use and a copy of its record, off the inactive tail
    /// (the record unchanged: the frame is out of the lists until it is put back, kept active
    /// or released). The
    /// frames in use before it (`page_referenced`: mapped and referenced, neither under
    /// writeback nor being read) go to the active head on the way, their referenced bits
    /// cleared (`SetPageActive`).
    #[inline(always)]
    pub fn next_not_in_use(&mut self) -> Option<(u32, Frame)> {
        while self.left > 0 {
            let f = self.tail;
            debug_assert!(f != NONE, "the batch is no longer than the list");
            self.left -= 1;
            let fr = linked(self.frames, f);
            let prev = fr.prev;
            let fl = fr.flags;
            if fl & (REFERENCED | MAPPED) != REFERENCED | MAPPED || fl & (WRITEBACK | READING) != 0
            {
                let fr = *fr;
                self.tail = prev;
                self.not_in_use += 1;
                return Some((f, fr));
            }
            fr.flags = (fl & !REFERENCED) | ACTIVE;
            fr.next = self.head;
            self.tail = prev;
            self.link_active(f);
        }
        None
    }

    /// Frames handed out so far (scanned), and those of them activated.
    #[inline(always)]
    pub fn counts(&self) -> (u64, u64) {
        let scanned = self.batch - self.left;
        (scanned as u64, (scanned - self.not_in_use) as u64)
    }

    /// Link `f`, whose record's `next` is the active head, as the new active head (its
    /// `prev` is written by the next frame linked there, or by `finish`).
    #[inline(always)]
    fn link_active(&mut self, f: u32) {
        if self.head != NONE {
            linked(self.frames, self.head).prev = f;
        } else {
            self.active.tail = f;
        }
        self.head = f;
    }

    /// Write `fr` back as the record of `f` (handed out) with `f` at the active head (kept
    /// active: swap is full).
    #[inline(always)]
    pub fn keep_active(&mut self, f: u32, mut fr: Frame) {
        fr.flags |= ACTIVE | LRU;
        fr.next = self.head;
        self.frames[f as usize] = fr;
        self.link_active(f);
        self.kept += 1;
    }

    /// Write `fr` back as the record of `f` (handed out) with `f` put back at the inactive
    /// head (under I/O, or written out).
    #[inline(always)]
    pub fn put_back(&mut self, f: u32, mut fr: Frame) {
        fr.flags = (fr.flags & !ACTIVE) | LRU;
        fr.next = self.back_head;
        self.frames[f as usize] = fr;
        if self.back_head != NONE {
            self.frames[self.back_head as usize].prev = f;
        } else {
            self.back_tail = f;
        }
        self.back_head = f;
        self.back += 1;
    }

    /// Return `f` (handed out) to the free pool.
    #[inline(always)]
    pub fn release(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        fr.owner = NONE;
        fr.slot = NONE;
        fr.flags = 0;
        self.free.push(f);
    }

    /// Write the lists' ends and lengths: what is left of the inactive list ends at the next
    /// frame not handed out, the chain put back goes at its head, the active head is the last
    /// frame put there. Every frame handed out must have been activated, put back, kept
    /// active or released.
    #[inline(always)]
    pub fn finish(self) {
        let frames = self.frames;
        let (inactive, active) = (self.inactive, self.active);
        // What is left of the inactive list: from its head to `tail`, or nothing.
        let (mut head, tail) = if self.tail != NONE {
            frames[self.tail as usize].next = NONE;
            (inactive.head, self.tail)
        } else {
            (NONE, NONE)
        };
        let tail = if self.back_head != NONE {
            frames[self.back_head as usize].prev = NONE;
            frames[self.back_tail as usize].next = head;
            let t = if head != NONE {
                frames[head as usize].prev = self.back_tail;
                tail
            } else {
                self.back_tail
            };
            head = self.back_head;
            t
        } else {
            tail
        };
        (inactive.head, inactive.tail) = (head, tail);
        inactive.len = inactive.len - (self.batch - self.left) + self.back;
        if self.head != active.head {
            frames[self.head as usize].prev = NONE;
            active.head = self.head;
            active.len += (self.batch - self.left) - self.not_in_use + self.kept;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_allocated_as_they_are_first_used() {
        // 4 GiB of memory: nothing allocated until a frame is handed out.
        let n = 1 << 20;
        let mut m = Memory::new(n, 4);
        assert_eq!(m.frames.capacity(), 0);
        assert_eq!(m.free_pages(), n as u64);
        let a = m.alloc(0, 0, 0);
        let b = m.alloc(1, 0, 0);
        assert_eq!((a, b), (0, 1));
        assert_eq!(m.free_pages(), n as u64 - 2);
        // A released frame is reused before a new one, as the free list did.
        m.release(a);
        assert_eq!(m.free_pages(), n as u64 - 1);
        assert_eq!(m.alloc(2, 0, 0), a);
        assert_eq!(m.alloc(3, 0, 0), 2);
        assert_eq!(m.frames.len(), 3);
        for f in 0..3 {
            m.add_head(f, false);
        }
        m.check_lists().unwrap();
        // The tail comes off as unlink takes it: 0, the first added, then 1 from the active
        // list it moved to.
        assert_eq!(m.pop_tail(false), Some(0));
        m.add_head(0, true);
        m.check_lists().unwrap();
        assert_eq!((m.inactive_len(), m.active_len()), (2, 1));
        assert_eq!(m.pop_tail(true), Some(0));
        assert_eq!(m.pop_tail(true), None);
        m.release(0);
        assert_eq!(m.pop_tail(false), Some(1));
        assert_eq!(m.pop_tail(false), Some(2));
        assert_eq!(m.pop_tail(false), None);
        m.release(1);
        m.release(2);
        m.check_lists().unwrap();
    }

    /// The lists against a plain model (a vector per list, head first): random adds, tail
    /// moves, releases of frames on a list and deactivations of the active tail give the same
    /// frames in the same order, and `deactivate_tail` clears the flags `pop_tail` and
    /// `add_head` would; `alloc_at_head` stands in for `alloc` with `add_head`, and a reclaim
    /// batch (`scan_inactive`) for a `pop_tail` of each frame then an `add_head` or a release
    /// (`check_lists` finds a frame neither free nor on a list).
    mod against_a_plain_list {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
            #[test]
            fn same_frames_in_the_same_order(
                ops in proptest::collection::vec((0u8..6, any::<bool>(), any::<u16>()), 1..2000),
            ) {
                let mut m = Memory::new(300, 1);
                // model[list]: frames from head to tail.
                let mut model: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
                for (op, active, k) in ops {
                    match op {
                        // A new frame at a head, referenced or not.
                        0 | 1 => {
                            if m.free_pages() == 0 {
                                continue;
                            }
                            let flags = [
                                REFERENCED | MAPPED,
                                REFERENCED,
                                MAPPED,
                                0,
                                REFERENCED | MAPPED | WRITEBACK,
                                REFERENCED | MAPPED | READING,
                            ][k as usize % 6];
                            // Allocated then added, or both in one step.
                            let f = if (k / 6) % 2 == 0 {
                                let f = m.alloc(0, 0, flags);
                                m.add_head(f, active);
                                f
                            } else {
                                m.alloc_at_head(0, NONE, 0, flags, active)
                            };
                            prop_assert_eq!(m.frames[f as usize].flags & !(ACTIVE | LRU), flags);
                            model[active as usize].insert(0, f);
                        }
                        // The tail to a list's head (a rotation or a move).
                        2 => {
                            let got = m.pop_tail(active);
                            prop_assert_eq!(got, model[active as usize].pop());
                            if let Some(f) = got {
                                let to = k % 2 == 0;
                                m.add_head(f, to);
                                model[to as usize].insert(0, f);
                            }
                        }
                        // Release a frame on a list.
                        3 => {
                            let l = &mut model[active as usize];
                            if l.is_empty() {
                                continue;
                            }
                            let f = l.remove(k as usize % l.len());
                            m.release(f);
                        }
                        // A reclaim batch of up to n frames off the inactive tail: those in use
                        // to the active head, each of the others released, put back at the
                        // inactive head or kept active; the model takes the tail and puts it
                        // at a head one frame at a time.
                        4 => {
                            let n = (k % 40) as u64;
                            let batch: Vec<(u32, u32)> = model[0]
                                .iter()
                                .rev()
                                .take(n as usize)
                                .map(|&f| (f, m.frames[f as usize].flags))
                                .collect();
                            let mut scan = m.scan_inactive(n);
                            let mut actions = Vec::new();
                            for (i, &(f, fl)) in batch.iter().enumerate() {
                                prop_assert_eq!(model[0].pop(), Some(f));
                                let in_use = fl & (REFERENCED | MAPPED) == REFERENCED | MAPPED
                                    && fl & (WRITEBACK | READING) == 0;
                                if in_use {
                                    model[1].insert(0, f);
                                    actions.push((f, 3));
                                    continue;
                                }
                                let got = scan.next_not_in_use();
                                prop_assert_eq!(got.map(|(g, _)| g), Some(f));
                                let fr = got.unwrap().1;
                                prop_assert_eq!(fr.flags, fl);
                                let action = (k as usize / 40 + i) % 3;
                                match action {
                                    0 => scan.release(f),
                                    1 => {
                                        scan.put_back(f, fr);
                                        model[0].insert(0, f);
                                    }
                                    _ => {
                                        scan.keep_active(f, fr);
                                        model[1].insert(0, f);
                                    }
                                }
                                actions.push((f, action));
                            }
                            prop_assert!(scan.next_not_in_use().is_none());
                            let (scanned, activated) = scan.counts();
                            scan.finish();
                            prop_assert_eq!(scanned as usize, batch.len());
                            let in_use = actions.iter().filter(|a| a.1 == 3).count();
                            prop_assert_eq!(activated as usize, in_use);
                            for &(f, action) in &actions {
                                let fl = m.frames[f as usize].flags;
                                let want = [0, LRU, ACTIVE | LRU, ACTIVE | LRU][action];
                                prop_assert_eq!(fl & (ACTIVE | LRU), want);
                                if action == 3 {
                                    prop_assert_eq!(fl & REFERENCED, 0);
                                }
                            }
                        }
                        // Up to n frames from the active tail to the inactive head.
                        _ => {
                            let n = (k % 40) as u64;
                            let k = m.deactivate_tail(n);
                            prop_assert_eq!(k as u64, n.min(model[1].len() as u64));
                            for _ in 0..k {
                                let f = model[1].pop().unwrap();
                                let fl = m.frames[f as usize].flags;
                                prop_assert_eq!(fl & (REFERENCED | ACTIVE), 0);
                                prop_assert!(fl & LRU != 0);
                                model[0].insert(0, f);
                            }
                        }
                    }
                    prop_assert_eq!(m.inactive_len() as usize, model[0].len());
                    prop_assert_eq!(m.active_len() as usize, model[1].len());
                }
                m.check_lists().map_err(TestCaseError::fail)?;
                for active in [false, true] {
                    while let Some(f) = m.pop_tail(active) {
                        prop_assert_eq!(Some(f), model[active as usize].pop());
                    }
                    prop_assert!(model[active as usize].is_empty());
                }
            }
        }
    }
}
