//! The application's side of the paging simulation: its accesses (the hit path run ahead in
//! one go), its faults (first touches, write-protect faults, swap-cache hits, swap-ins with
//! their read-ahead), the frames it allocates (direct reclaim when memory is at the min
//! watermark) and the wear count's start after the aging rounds.

use super::*;

impl<'w, B: SwapBackend> PagingSim<'w, B> {
    pub(super) fn run_app(&mut self, limit: SimTime) -> Result<()> {
        if let App::Wait(w) = self.app {
            self.end_wait(w, true);
            self.app = App::Run;
            self.app_t = w.until;
        }
        let access = self.cfg.cost.access.0;
        loop {
            if self.pos == self.accesses.len() {
                self.app = App::Done;
                return Ok(());
            }
            if self.pos == self.wear_from {
                self.start_wear_count();
            }
            if self.run_hits(access, limit) > 0 && self.app_t >= limit {
                return Ok(());
            }
            if self.pos == self.accesses.len().min(self.wear_from) {
                continue;
            }
            // The access at `pos` faults.
            let a = self.accesses[self.pos];
            let (vp, write) = (a >> 1, a & 1 != 0);
            let step = self.fault(vp, write)?;
            self.flush_trims_at(self.app_t)?;
            match step {
                Step::Done => {
                    if access.0 != 0 {
                        self.app_t += access;
                        self.baseline += access;
                    }
                    self.pos += 1;
                }
                Step::Blocked => return Ok(()),
            }
            // kswapd woken by this fault runs before the application goes on.
            if matches!(self.kswapd, Kswapd::Run(t) if t <= self.app_t) {
                return Ok(());
            }
            if self.app_t >= limit {
                return Ok(());
            }
        }
    }

    /// The hit path: the accesses from `pos` on to mapped pages (a write to one that has no
    /// slot), each costing `access`, up to the first that faults, the end of the stream or of
    /// the aging rounds, or the access that takes the application to `limit` (the first one
    /// at least, as each access is taken before the clock is checked). Returns how many.
    /// The clock moves once for them all, as their accesses one by one would have moved it
    /// (saturating sums of non-negative times).
    #[inline]
    fn run_hits(&mut self, access: SimTime, limit: SimTime) -> usize {
        let end = self.accesses.len().min(self.wear_from);
        // The accesses that reach `limit`: k with app_t + k x access >= limit, the least.
        let to_limit = if self.app_t >= limit {
            1
        } else if access.0 == 0 {
            usize::MAX
        } else {
            usize::try_from((limit.0 - self.app_t.0).div_ceil(access.0)).unwrap_or(usize::MAX)
        };
        let end = end.min(self.pos.saturating_add(to_limit));
        let accesses = self.accesses;
        let m = &mut self.mem;
        // The page table and the versions as slices of one length, so that the page's index,
        // checked against the first, needs no second check for the other.
        let frame = &m.frame[..];
        let version = &mut m.version[..frame.len()];
        let frames = &mut m.frames[..];
        let mut n = 0;
        for &a in &accesses[self.pos..end] {
            let (vp, write) = (a >> 1, a & 1 != 0);
            // A page not resident has NONE (u32::MAX) for its frame, past every frame
            // record: the record's bounds check is the residence check too.
            let Some(fr) = frames.get_mut(frame[vp as usize] as usize) else {
                debug_assert_eq!(frame[vp as usize], NONE);
                break;
            };
            if write && fr.slot != NONE {
                break;
            }
            fr.flags |= REFERENCED;
            if write {
                fr.flags |= DIRTY;
                let v = &mut version[vp as usize];
                *v = v.wrapping_add(1);
                fr.data = *v;
            }
            n += 1;
        }
        self.pos += n;
        // Accesses are free by default (`cost.access`): then the clock stays.
        if access.0 != 0 {
            let t = access * n as u64;
            self.app_t += t;
            self.baseline += t;
        }
        n
    }

    /// Count swap writes towards wear from the access at `pos` on (`Workload::wear_from`):
    /// the writes so far aged the swap area.
    pub fn count_wear_from(&mut self, pos: usize) {
        self.wear_from = pos;
    }

    /// The aging rounds are a warm-up: from here on the wear and every other figure of the
    /// result count afresh (the swap trace keeps every request). Cold: once a run, and kept
    /// out of the access loop it is called from.
    #[cold]
    #[inline(never)]
    fn start_wear_count(&mut self) {
        self.aging_page_writes = self.wear.iter().map(|&n| n as u64).sum();
        self.wear.fill(0);
        self.area.reset_counts();
        self.wear_since = self.app_t;
        self.wear_from = usize::MAX;
        self.res.faults = Faults {
            accesses: (self.accesses.len() - self.pos) as u64,
            ..Faults::default()
        };
        self.res.reclaim = Reclaim::default();
        self.swap_in_ps.clear();
        self.bd = [0; 7];
        self.baseline = SimTime::ZERO;
        self.counted_from_rec = self.trace.len();
        self.merges_before = self.dev.merges().unwrap_or(0);
    }

    pub(super) fn end_wait(&mut self, w: Wait, app: bool) {
        let d = (w.until - w.since).as_secs_f64();
        if app {
            self.res.reclaim.app_wait_s += d;
        } else {
            self.res.reclaim.kswapd_wait_s += d;
        }
    }

    fn charge(&mut self, t: SimTime) {
        self.app_t += t;
    }

    /// A fault on `vp`: Done when the access completed, Blocked when the application waits.
    fn fault(&mut self, vp: u32, write: bool) -> Result<Step> {
        let c = self.cfg.cost.clone();
        let v = vp as usize;
        match self.mem.state[v] {
            UNTOUCHED | ZERO => {
                if !write {
                    if self.mem.state[v] == UNTOUCHED {
                        // A read maps the shared zero page.
                        self.mem.state[v] = ZERO;
                        self.res.faults.minor += 1;
                        self.charge(c.minor_fault.0);
                        self.baseline += c.minor_fault.0;
                    }
                    return Ok(Step::Done);
                }
                if !self.alloc_ok(1)? {
                    return Ok(Step::Blocked);
                }
                let ver = self.mem.version[v].wrapping_add(1);
                self.mem.version[v] = ver;
                // 2.6.32 puts a new anonymous page on the active list; 5.9+ on the inactive.
                let active = self.cfg.era == Era::Linux2632;
                let f = self
                    .mem
                    .alloc_at_head(vp, NONE, ver, MAPPED | DIRTY | REFERENCED, active);
                self.mem.frame[v] = f;
                self.mem.state[v] = ANON;
                self.res.faults.minor += 1;
                self.charge(c.minor_fault.0);
                self.baseline += c.minor_fault.0;
                Ok(Step::Done)
            }
            _ => {
                let f = self.mem.frame[v];
                if f != NONE {
                    // A write to a page mapped read-only from the swap cache: do_wp_page.
                    self.res.faults.write_protect += 1;
                    self.mem.frames[f as usize].flags |= REFERENCED;
                    let mut t = c.page_reuse.0;
                    if self.reuse_swap_page(f) {
                        t += c.slot_free.0;
                    }
                    self.write_page(vp, f);
                    self.charge(t);
                    return Ok(Step::Done);
                }
                let s = self.mem.slot[v];
                debug_assert!(s != NONE, "page {vp} neither resident nor swapped");
                let cf = self.slots[s as usize].cache;
                if cf != NONE {
                    if self.mem.frames[cf as usize].flags & READING != 0 {
                        self.app = App::Frame(cf);
                        if self.pending.is_none() {
                            self.pending = Some(Pending {
                                vpage: vp,
                                start: self.app_t,
                                blocked_at: self.app_t,
                            });
                            self.res.faults.swap_cache_hits += 1;
                            self.bd_add(0, c.lookup.0);
                            self.charge(c.lookup.0);
                            self.pending.as_mut().unwrap().blocked_at = self.app_t;
                        }
                        return Ok(Step::Blocked);
                    }
                    self.map_from_cache(vp, s, cf, write);
                    return Ok(Step::Done);
                }
                // A swap-in from the device. The read-ahead pages are allocated like the
                // target (2.6.32 `read_swap_cache_async` takes `GFP_HIGHUSER_MOVABLE`, which
                // may reclaim directly), so the fault needs frames for the whole window.
                let (ra, census) = self.window_of(s);
                let reclaims = self.res.reclaim.direct_reclaims;
                if !self.alloc_ok((self.readable.len() as u64).max(1))? {
                    return Ok(Step::Blocked);
                }
                // Without a direct reclaim the swap map, the swap cache and the read-ahead
                // state are as the frames check saw them, so its window and the census of
                // the window's block stand (with the read-ahead state it moved to); a reclaim
                // may have taken slots next to the target: asked again.
                let census = if self.res.reclaim.direct_reclaims == reclaims {
                    self.ra = ra;
                    census
                } else {
                    let w = self.window(s);
                    self.take_census(s, w)
                };
                self.swap_in(vp, s, census)
            }
        }
    }

    fn bd_add(&mut self, i: usize, t: SimTime) {
        if self.pending.is_some() {
            self.bd[i] += t.0;
        }
    }

    /// The page in `f` is written: a new version.
    fn write_page(&mut self, vp: u32, f: u32) {
        self.mem.frames[f as usize].flags |= DIRTY;
        let ver = self.mem.version[vp as usize].wrapping_add(1);
        self.mem.version[vp as usize] = ver;
        self.mem.frames[f as usize].data = ver;
    }

    /// `reuse_swap_page` on a write fault: the slot is freed unless the page is under
    /// writeback. True if it freed the slot.
    fn reuse_swap_page(&mut self, f: u32) -> bool {
        let s = self.mem.frames[f as usize].slot;
        if s == NONE || self.mem.frames[f as usize].flags & WRITEBACK != 0 {
            return false;
        }
        self.drop_slot(f, s);
        true
    }

    /// Take `f` out of the swap cache and free its slot; the page must be written again.
    fn drop_slot(&mut self, f: u32, s: u32) {
        let vp = self.mem.frames[f as usize].owner;
        let slot = &mut self.slots[s as usize];
        (slot.cache, slot.owner) = (NONE, NONE);
        self.mem.frames[f as usize].slot = NONE;
        self.mem.slot[vp as usize] = NONE;
        self.mem.frames[f as usize].flags |= DIRTY;
        self.area.free(s);
    }

    /// Map `vp` from the swap cache frame `cf` (a read-ahead page, a page not yet freed after
    /// writeback, or the page this fault read). Charges the fault's steps after the lookup.
    fn map_from_cache(&mut self, vp: u32, s: u32, cf: u32, write: bool) {
        let c = self.cfg.cost.clone();
        let own = self.pending.take_if(|p| p.vpage == vp);
        if own.is_none() {
            self.res.faults.swap_cache_hits += 1;
            self.charge(c.lookup.0);
        }
        let fl = self.mem.frames[cf as usize].flags;
        if fl & READAHEAD != 0 {
            self.mem.frames[cf as usize].flags &= !READAHEAD;
            if own.is_none() {
                self.res.faults.readahead_hits += 1;
            }
            self.ra.hit();
        }
        if self.mem.frames[cf as usize].data != self.mem.version[vp as usize] {
            self.res.oracle_mismatches += 1;
        }
        self.mem.frame[vp as usize] = cf;
        self.mem.frames[cf as usize].flags |= MAPPED | REFERENCED;
        let mut t = c.mapping.0 + c.mmu_update.0;
        let reuse = if write { c.page_reuse.0 .0 } else { 0 };
        let mut free = 0;
        // do_swap_page keeps the slot (the page stays in the swap cache, clean) unless the
        // fault writes (reuse_swap_page), swap is more than half full (try_to_free_swap), or
        // the synchronous path read it; never while the page is under writeback.
        let sync = self.cfg.era == Era::Modern && self.cfg.synchronous_io;
        if (write || sync || self.area.swap_full())
            && self.mem.frames[cf as usize].flags & WRITEBACK == 0
        {
            self.drop_slot(cf, s);
            free = c.slot_free.0 .0;
        }
        if write {
            self.write_page(vp, cf);
        }
        t += SimTime(reuse + free);
        self.charge(t);
        if let Some(p) = own {
            self.bd[3] += reuse;
            self.bd[4] += c.mapping.0 .0;
            self.bd[5] += free;
            self.bd[6] += c.mmu_update.0 .0;
            self.swap_in_ps.push((self.app_t - p.start).0);
        }
    }

    /// The read-ahead window around `s`, worked out on a copy of the read-ahead state (so
    /// asking does not consume its hits): the state the copy moved to, and the census of the
    /// window's block (`take_census`: the slots a swap-in would read are left in `readable`).
    fn window_of(&mut self, s: u32) -> (Readahead, Census) {
        let mut ra = self.ra.clone();
        let sync = self.cfg.era == Era::Modern && self.cfg.synchronous_io;
        let window = if sync {
            (s, s + 1)
        } else {
            ra.window(s, &self.area)
        };
        (ra, self.take_census(s, window))
    }

    /// The slots of the window `[first, end)` around `s` a swap-in reads, in ascending order,
    /// into `readable` (in use, owned and not in the swap cache), and how many of the other
    /// slots of `s`'s aligned block of 2^page_cluster slots (the header slot and slots past the
    /// area's end left out; the window alone for a synchronous swap-in, which reads the target
    /// alone) are free, in the swap cache, or in use and not read (in the window without an
    /// owner, or outside it: cut off from the run). The window lies within the block (both
    /// eras' windows are aligned parts of it), so one walk over the block's slots in use, a
    /// word of the swap map at a time (one word for a block of up to 64 slots), takes it all.
    fn take_census(&mut self, s: u32, (first, end): (u32, u32)) -> Census {
        let sync = self.cfg.era == Era::Modern && self.cfg.synchronous_io;
        let (low, top) = if sync {
            (first, end)
        } else {
            let pc = self.cfg.page_cluster;
            let aligned = (s >> pc) << pc;
            (aligned.max(1), (aligned + (1 << pc)).min(self.area.slots()))
        };
        debug_assert!(low <= first && first <= s && s < end && end <= top);
        let slots = &self.slots;
        let readable = &mut self.readable;
        readable.clear();
        let mut c = Census::default();
        let mut used = 0u64;
        self.area.for_each_used_in(low, top, |x| {
            used += 1;
            let slot = &slots[x as usize];
            if slot.cache != NONE {
                c.cached += 1;
            } else if slot.owner == NONE || x < first || x >= end {
                c.cut_off += 1;
            } else {
                readable.push(x);
            }
        });
        c.free = (top - low) as u64 - used;
        c
    }

    /// The read-ahead window of a swap-in of `s` (`[first, end)`), the read-ahead state moved on.
    fn window(&mut self, s: u32) -> (u32, u32) {
        let sync = self.cfg.era == Era::Modern && self.cfg.synchronous_io;
        if sync {
            (s, s + 1)
        } else {
            self.ra.window(s, &self.area)
        }
    }

    /// A swap-in of `s` reading the slots of `readable`, which `census` (the other slots of
    /// its read-ahead block) was taken with.
    fn swap_in(&mut self, vp: u32, s: u32, census: Census) -> Result<Step> {
        let c = self.cfg.cost.clone();
        // A fault whose page was reclaimed again before it could map it keeps its start.
        let start = self
            .pending
            .take()
            .filter(|p| p.vpage == vp)
            .map_or(self.app_t, |p| p.start);
        self.res.faults.major += 1;
        self.charge(c.lookup.0 + c.swap_read.0);
        self.bd[0] += c.lookup.0 .0;
        self.bd[1] += c.swap_read.0 .0;
        let mut slots = std::mem::take(&mut self.slots_buf);
        slots.clear();
        let mut target = NONE;
        // The frames at the inactive head, the list's head kept by the allocator and the
        // slots' records taken as a slice once.
        let mut at_head = self.mem.alloc_at_inactive_head();
        let swap_slots = &mut self.slots[..];
        for &x in &self.readable {
            let mut flags = READING;
            if x != s {
                flags |= READAHEAD;
            }
            let slot = &mut swap_slots[x as usize];
            let f = at_head.alloc(slot.owner, x, slot.data, flags);
            slot.cache = f;
            if x == s {
                target = f;
            }
            slots.push((x, f));
        }
        at_head.finish();
        debug_assert!(target != NONE);
        // The target's neighbours only (a synchronous swap-in, whose run is the target alone,
        // counts none).
        let b = &mut self.res.faults.readahead_block;
        b.read += slots.len() as u64 - 1;
        b.free += census.free;
        b.cached += census.cached;
        b.cut_off += census.cut_off;
        self.submit_runs(Op::Read, &slots, self.app_t)?;
        self.slots_buf = slots;
        self.pending = Some(Pending {
            vpage: vp,
            start,
            blocked_at: self.app_t,
        });
        self.app = App::Frame(target);
        Ok(Step::Blocked)
    }

    /// Whether the application may take `n` pages now; reclaims directly (and may block the
    /// application in a wait) when memory is at the min watermark (`__alloc_pages_slowpath`).
    fn alloc_ok(&mut self, n: u64) -> Result<bool> {
        let free = self.mem.free_pages();
        if free >= self.wm.low + n {
            self.end_stall();
            return Ok(true);
        }
        // Below low: wake kswapd (wakeup_kswapd), then allow down to min.
        if self.kswapd == Kswapd::Sleep {
            self.kswapd = Kswapd::Run(self.app_t);
            self.res.reclaim.kswapd_wakeups += 1;
        }
        if free >= self.wm.min + n {
            self.end_stall();
            return Ok(true);
        }
        // Direct reclaim (try_to_free_pages).
        if self.stall_since.is_none() {
            self.stall_since = Some(self.app_t);
        }
        self.res.reclaim.direct_reclaims += 1;
        let progress = self.reclaim_pass(self.app_t, false)?;
        // Direct reclaim runs on the application's time.
        let cpu = self.reclaim_cpu;
        self.charge(cpu);
        self.res.reclaim.cpu_s += cpu.as_secs_f64();
        let now = self.app_t;
        if self.mem.free_pages() >= self.wm.min + n {
            self.end_stall();
            return Ok(true);
        }
        if self.writes_in_flight == 0 && self.reads_in_flight() == 0 && progress == 0 {
            return Err(Error::bad_paging(Invalid::unnamed(
                PAGING,
                says(format!(
                    "out of memory and swap: {} pages of memory, {} of {} swap slots in use, \
                     nothing left to reclaim",
                    self.cfg.memory_pages(),
                    self.area.inuse_pages(),
                    self.area.pages()
                )),
            )));
        }
        // The direct reclaim failed: wait before retrying.
        let w = self.wait(now, progress, false);
        self.app = App::Wait(w);
        Ok(false)
    }

    fn end_stall(&mut self) {
        if let Some(s) = self.stall_since.take() {
            self.res.reclaim.direct_stall_s += (self.app_t - s).as_secs_f64();
        }
    }
}
