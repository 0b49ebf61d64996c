//! Reclaim: kswapd's balancing, direct reclaim's passes over the LRU lists, and the throttles
//! that make a reclaimer wait (each era's, as the kernel's mm/vmscan.c has them).

use super::*;

impl<'w, B: SwapBackend> PagingSim<'w, B> {
    /// Which of 5.16's fixed-timeout throttles a failed reclaim pass takes (mm/vmscan.c
    /// `reclaim_throttle`, `consider_reclaim_throttle`, `skip_throttle_noprogress`), given the
    /// pages it freed or put under writeback:
    /// - pages under writeback at the inactive tail (`sc->nr.immediate`): WRITEBACK, HZ/10,
    ///   kswapd or direct reclaim;
    /// - otherwise a direct reclaim that made no progress: NOPROGRESS, 1 jiffy, unless fewer
    ///   than half the reclaimable pages wait for writeback (2 x write-pending <= reclaimable);
    /// - ISOLATED (HZ/50) needs pages isolated by another direct reclaimer; this model has
    ///   one, so it never applies.
    ///
    /// None: the kernel does not sleep and retries at once; with I/O in flight the model waits
    /// for the next completion (the retries cost CPU the model does not charge).
    pub fn throttle_516(
        immediate: u64,
        progress: u64,
        kswapd: bool,
        writeback: u64,
        reclaimable: u64,
    ) -> Option<Throttle516> {
        if immediate > 0 {
            Some(Throttle516::Writeback)
        } else if !kswapd && progress == 0 && 2 * writeback > reclaimable {
            Some(Throttle516::NoProgress)
        } else {
            None
        }
    }

    /// The wait after a failed reclaim, by era and setting; `progress` is what the pass freed
    /// or put under writeback.
    pub(super) fn wait(&mut self, now: SimTime, progress: u64, kswapd: bool) -> Wait {
        self.res.reclaim.waits += 1;
        let timeout = now + self.cfg.congestion_timeout.0;
        if !self.cfg.congestion_wait {
            let until = if self.writes_in_flight > 0 || self.reads_in_flight() > 0 {
                SimTime::MAX
            } else {
                now
            };
            return Wait {
                until,
                since: now,
                kind: WaitKind::NextWrite,
            };
        }
        match self.cfg.era {
            Era::Linux2632 => Wait {
                until: timeout,
                since: now,
                kind: WaitKind::Congestion {
                    congested: self.writes_in_flight >= self.congestion_on,
                },
            },
            Era::Modern => {
                let reclaimable = (self.mem.inactive_len() + self.mem.active_len()) as u64;
                match Self::throttle_516(
                    self.pass_immediate,
                    progress,
                    kswapd,
                    self.mem.writeback,
                    reclaimable,
                ) {
                    Some(Throttle516::Writeback) => {
                        self.res.reclaim.throttle_writeback += 1;
                        Wait {
                            until: timeout,
                            since: now,
                            kind: WaitKind::Throttle {
                                written_at_start: self.pages_written_back,
                            },
                        }
                    }
                    Some(Throttle516::NoProgress) => {
                        self.res.reclaim.throttle_noprogress += 1;
                        Wait {
                            until: now + self.jiffy(),
                            since: now,
                            kind: WaitKind::NoProgress,
                        }
                    }
                    None => {
                        let io = self.writes_in_flight > 0 || self.reads_in_flight() > 0;
                        Wait {
                            until: if io { SimTime::MAX } else { now },
                            since: now,
                            kind: WaitKind::NextWrite,
                        }
                    }
                }
            }
        }
    }

    /// One jiffy: 1 / `hz` seconds.
    pub(super) fn jiffy(&self) -> SimTime {
        SimTime(1_000_000_000_000 / self.cfg.hz as u64)
    }

    // ----- reclaim -----

    pub(super) fn run_kswapd(&mut self, t: SimTime) -> Result<()> {
        let t = match self.kswapd {
            Kswapd::Wait(w) => {
                self.end_wait(w, false);
                w.until
            }
            _ => t,
        };
        if self.mem.free_pages() >= self.wm.high {
            self.kswapd = Kswapd::Sleep;
            return Ok(());
        }
        self.reclaim_pass(t, true)?;
        // kswapd's CPU time: one CPU, so a running application loses it too.
        let cpu = self.reclaim_cpu;
        self.res.reclaim.cpu_s += cpu.as_secs_f64();
        if self.app == App::Run {
            self.app_t = self.app_t.max(t) + cpu;
        }
        let t = t + cpu;
        if self.kswapd_balanced() {
            self.kswapd = Kswapd::Sleep;
        } else if self.writes_in_flight > 0 {
            let w = self.wait(t, 0, true);
            self.kswapd = Kswapd::Wait(w);
        } else {
            // Nothing to reclaim and nothing in flight: kswapd gives up until woken again.
            self.kswapd = Kswapd::Sleep;
        }
        Ok(())
    }

    /// kswapd's goal. 2.6.32's `balance_pgdat` checks the high watermark against free pages
    /// alone (`zone_watermark_ok`), so pages still under writeback do not count; the modern era
    /// keeps the model's earlier rule, free pages plus pages under writeback.
    pub(super) fn kswapd_balanced(&self) -> bool {
        match self.cfg.era {
            Era::Linux2632 => self.mem.free_pages() >= self.wm.high,
            Era::Modern => self.mem.free_pages() + self.mem.writeback >= self.wm.high,
        }
    }

    /// One reclaim pass (`do_try_to_free_pages` / `balance_pgdat`) at priorities from 12 down:
    /// at each, up to max(SWAP_CLUSTER_MAX, lru >> priority) pages are scanned from the inactive
    /// tail in batches of SWAP_CLUSTER_MAX (`shrink_inactive_list`), the inactive list refilled
    /// from the active one when low (`shrink_active_list`). The pass ends when its goal is met.
    /// 2.6.32: direct reclaim's goal is SWAP_CLUSTER_MAX pages freed (`nr_reclaimed`: a page
    /// put under writeback is not freed yet), kswapd's the high watermark in free pages; and
    /// both take a nap (`congestion_wait`) after scanning at a priority below DEF_PRIORITY - 2
    /// without meeting it, so with writes in flight the pass ends after priority 9 and the
    /// caller waits, then starts again at 12 (the kernel goes on at 8, but after the nap the
    /// written pages are free and it restarts at 12 once it has reclaimed SWAP_CLUSTER_MAX).
    /// Modern era: direct reclaim's goal is SWAP_CLUSTER_MAX pages freed or on their way
    /// (writeback started), kswapd's free pages and pages under writeback at the high
    /// watermark, through priority 0. Returns the pages freed or put under writeback.
    pub(super) fn reclaim_pass(&mut self, now: SimTime, kswapd: bool) -> Result<u64> {
        let mut progress = 0u64;
        self.pass_immediate = 0;
        self.reclaim_cpu = SimTime::ZERO;
        let era2632 = self.cfg.era == Era::Linux2632;
        let free_at_start = self.mem.free_pages();
        let goal = |s: &Self, progress: u64| {
            if kswapd {
                s.kswapd_balanced()
            } else if era2632 {
                s.mem.free_pages() >= free_at_start + SWAP_CLUSTER_MAX_PAGES
            } else {
                progress >= SWAP_CLUSTER_MAX_PAGES
            }
        };
        for prio in (0..=DEF_PRIORITY).rev() {
            let lru = (self.mem.inactive_len() + self.mem.active_len()) as u64;
            let budget = (lru >> prio).max(SWAP_CLUSTER_MAX_PAGES);
            let mut scanned = 0;
            while scanned < budget {
                if self.mem.inactive_is_low(self.inactive_ratio) {
                    self.shrink_active(SWAP_CLUSTER_MAX_PAGES);
                }
                let (n, p) =
                    self.shrink_inactive(now, SWAP_CLUSTER_MAX_PAGES.min(budget - scanned))?;
                if kswapd {
                    self.res.reclaim.kswapd_scanned += n;
                } else {
                    self.res.reclaim.direct_scanned += n;
                }
                progress += p;
                if goal(self, progress) {
                    return Ok(progress);
                }
                if n == 0 {
                    break;
                }
                scanned += n;
            }
            if era2632 && prio < DEF_PRIORITY - 2 && self.writes_in_flight > 0 {
                // 2.6.32's nap (`if (sc->nr_scanned && priority < DEF_PRIORITY - 2)
                // congestion_wait(...)`): the caller waits for the writes. With none in
                // flight the nap would only pass time (the kernel sleeps its timeout); the
                // pass goes on to lower priorities instead.
                break;
            }
        }
        Ok(progress)
    }

    /// Move up to `n` pages from the active tail to the inactive head, their referenced bits
    /// cleared (anonymous pages are all deactivated, as `shrink_active_list` does).
    pub(super) fn shrink_active(&mut self, n: u64) {
        self.mem.deactivate_tail(n);
    }

    /// Scan up to `n` pages from the inactive tail (`shrink_page_list`); returns (scanned,
    /// freed or put under writeback).
    pub(super) fn shrink_inactive(&mut self, now: SimTime, n: u64) -> Result<(u64, u64)> {
        let mut writes = std::mem::take(&mut self.slots_buf);
        writes.clear();
        let (mut unmapped, mut freed_clean) = (0u64, 0u64);
        // The batch off the inactive tail (`isolate_lru_pages`), then each page in turn.
        let mut scan = self.mem.scan_inactive(n);
        let slots = &mut self.slots[..];
        let wear = &mut self.wear[..];
        // page_referenced: anonymous pages in use go back to the active list on the way.
        // The frame's record is read once and written back once with its links (where it
        // stays on a list).
        while let Some((f, mut fr)) = scan.next_not_in_use() {
            let fl = fr.flags;
            if fl & (WRITEBACK | READING) != 0 {
                if fl & WRITEBACK != 0 {
                    self.pass_immediate += 1;
                }
                scan.put_back(f, fr);
                continue;
            }
            debug_assert!(fl & REFERENCED == 0 || fl & MAPPED == 0);
            let vp = fr.owner;
            let mut s = fr.slot;
            if s == NONE {
                // add_to_swap
                match self.area.alloc() {
                    Some(x) => {
                        s = x;
                        fr.slot = s;
                        let slot = &mut slots[s as usize];
                        (slot.cache, slot.owner) = (f, vp);
                        scan.page_slot[vp as usize] = s;
                    }
                    None => {
                        self.res.reclaim.swap_full += 1;
                        scan.keep_active(f, fr);
                        continue;
                    }
                }
            }
            // try_to_unmap: the PTE now holds the slot.
            if fl & MAPPED != 0 {
                scan.pte[vp as usize] = NONE;
                fr.flags &= !MAPPED;
                unmapped += 1;
            }
            if fl & DIRTY != 0 {
                // pageout -> swap_writepage
                fr.flags = (fr.flags & !DIRTY) | WRITEBACK;
                *scan.writeback += 1;
                slots[s as usize].data = fr.data;
                self.area.written(s);
                wear[s as usize] += 1;
                scan.put_back(f, fr);
                writes.push((s, f));
            } else {
                // Clean, with a valid copy in swap: freed now (`release` sets the record's
                // owner, slot and flags, the fields changed here).
                slots[s as usize].cache = NONE;
                scan.release(f);
                freed_clean += 1;
            }
        }
        let (scanned, activated) = scan.counts();
        scan.finish();
        let progress = freed_clean + writes.len() as u64;
        let r = &mut self.res.reclaim;
        r.activated += activated;
        r.freed_clean += freed_clean;
        // The batch's CPU time: its bios leave when the CPU has built them. One CPU, so
        // `reclaim_pass` charges it to whoever reclaims (and kswapd's to the application too).
        let c = &self.cfg.cost;
        let cpu = reclaim_cpu(c, scanned, unmapped, writes.len() as u64);
        self.reclaim_cpu += cpu;
        let at = now + self.reclaim_cpu;
        // Discards of clusters the allocator took, then the batch's bios, which go down
        // together and merge where their slots are adjacent.
        self.flush_trims_at(at)?;
        self.submit_runs(Op::Write, &writes, at)?;
        self.slots_buf = writes;
        Ok((scanned, progress))
    }
}

/// CPU time of a reclaim batch that scanned, unmapped and wrote out so many pages.
fn reclaim_cpu(
    c: &crate::paging::config::FaultCosts,
    scanned: u64,
    unmapped: u64,
    written: u64,
) -> SimTime {
    SimTime(
        (c.reclaim_scan.0 .0 as u128 * scanned as u128
            + c.reclaim_unmap.0 .0 as u128 * unmapped as u128
            + c.reclaim_write.0 .0 as u128 * written as u128)
            .min(u64::MAX as u128) as u64,
    )
}
