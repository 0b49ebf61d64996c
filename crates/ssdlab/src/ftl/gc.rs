//! The page FTL's garbage collection and wear levelling: when a plane collects (its free-block
//! threshold, background GC while the host leaves the device idle), which victim the policy
//! picks, the victim's valid units moved to the plane's GC block (each move told to the map's
//! translation, `translation.rs`), the erase applied once the controller reports it done (or at
//! once in instant mode), and static wear levelling's moves of cold data. Functional: the
//! controller times the `GcTask`s it emits.

use super::{clear_bits, BlockState, Ftl, GcTask, Stream, Translation, AS_FILLED, NONE, UNMAPPED};
use crate::config::GcPolicy;
use crate::error::{says, Error, Invalid, Result};
use crate::sim::mem::prefetch;

impl<M: Translation + ?Sized> Ftl<M> {
    /// The host has left the device idle (`idle` true), or sent a command again (false). With
    /// background GC, idle planes collect up to its level; a collection under way when the
    /// host comes back runs to its end, at GC's usual priority at the die.
    pub fn set_idle(&mut self, idle: bool) -> Result<()> {
        if self.background_blocks == 0 || self.idle == idle {
            return Ok(());
        }
        self.idle = idle;
        if idle {
            for plane in 0..self.geo.planes() {
                self.maybe_gc(plane)?;
            }
        }
        Ok(())
    }

    /// Start GC in `plane` if it is below its free-block threshold (or, while the device is
    /// idle, below background GC's level) and none runs there.
    pub(super) fn maybe_gc(&mut self, plane: u32) -> Result<()> {
        loop {
            let p = &self.planes[plane as usize];
            let threshold = if self.idle {
                self.background_blocks
            } else {
                self.gc_threshold_blocks
            };
            let free = p.free.len() as u32;
            if p.gc_inflight > 0 || free >= threshold {
                return Ok(());
            }
            let Some(victim) = self.pick_victim(plane) else {
                return Ok(());
            };
            if !self.collect(plane, victim, false)? {
                return Ok(());
            }
            if free >= self.gc_threshold_blocks {
                // Started only because the device is idle.
                self.stats.background_gc_runs += 1;
            }
            if !self.instant {
                return Ok(());
            }
        }
    }

    fn pick_victim(&mut self, plane: u32) -> Option<u32> {
        let bpp = self.geo.blocks_per_plane;
        let upb = self.geo.units_per_block();
        let range = plane * bpp..(plane + 1) * bpp;
        // Full blocks with stale data; failing those (a plane whose stale data all sits in its
        // open blocks), an open block with stale data, which GC then closes.
        let wanted = if range.clone().any(|b| {
            let blk = &self.blocks[b as usize];
            blk.state == BlockState::Full && blk.valid < upb
        }) {
            BlockState::Full
        } else {
            BlockState::Open
        };
        // Blocks whose replaced data is still the only copy on flash are passed over while
        // another will do (see `Block::overwrites_in_flight`): chosen among the others first,
        // then among all if none is left.
        self.pick_among(range.clone(), wanted, true)
            .or_else(|| self.pick_among(range, wanted, false))
    }

    /// The GC policy's choice among the blocks of `range` in state `wanted` holding stale
    /// data, only those with no overwrite in flight if `settled`.
    fn pick_among(
        &mut self,
        range: std::ops::Range<u32>,
        wanted: BlockState,
        settled: bool,
    ) -> Option<u32> {
        let upb = self.geo.units_per_block();
        let blocks = &self.blocks;
        let candidates = range.filter(|&b| {
            let blk = &blocks[b as usize];
            blk.state == wanted
                && blk.valid < blk.write_ptr
                && (!settled || blk.overwrites_in_flight == 0)
        });
        match self.policy {
            GcPolicy::Greedy => candidates.min_by_key(|&b| (blocks[b as usize].valid, b)),
            GcPolicy::CostBenefit => {
                let clock = self.clock;
                let mut best: Option<(f64, u32)> = None;
                for b in candidates {
                    let blk = &blocks[b as usize];
                    let u = blk.valid as f64 / upb as f64;
                    let age = (clock - blk.last_write + 1) as f64;
                    let score = if blk.valid == 0 {
                        f64::INFINITY
                    } else {
                        (1.0 - u) / (2.0 * u) * age
                    };
                    if best.is_none_or(|(s, _)| score > s) {
                        best = Some((score, b));
                    }
                }
                best.map(|(_, b)| b)
            }
            GcPolicy::Random => {
                let list: Vec<u32> = candidates.collect();
                if list.is_empty() {
                    None
                } else {
                    Some(list[self.rng.below(list.len() as u64) as usize])
                }
            }
        }
    }

    /// With `ftl.gc.per_stream`: the GC stream for moving logical unit `lpn` (out of line, so
    /// that the shared GC block's loop stays as lean as it was).
    #[cold]
    #[inline(never)]
    fn gc_stream_of(&self, lpn: u32) -> Stream {
        match self
            .streams
            .as_deref()
            .map_or(0, |st| st.lpn_stream[lpn as usize])
        {
            0 => Stream::Gc,
            s => Stream::GcOf(s),
        }
    }

    /// Move the valid units of `victim` to the plane's GC block and schedule its erase.
    /// Returns false if the plane ran out of room before the victim was empty.
    fn collect(&mut self, plane: u32, victim: u32, wear_level: bool) -> Result<bool> {
        self.watch_progress(plane)?;
        let upb = self.geo.units_per_block();
        let p = &mut self.planes[plane as usize];
        if p.host_open == victim {
            p.host_open = NONE;
        }
        if p.gc_open == victim {
            p.gc_open = NONE;
        }
        if let Some(st) = self.streams.as_deref_mut() {
            for b in st.open.iter_mut().chain(st.gc_open.iter_mut()) {
                if *b == victim {
                    *b = NONE;
                }
            }
        }
        self.blocks[victim as usize].state = BlockState::Victim;
        self.planes[plane as usize].gc_inflight += 1;
        let base = victim * upb;
        let fill_start = self.fill.block_start(victim);
        // On a drive steady-state preconditioning laid out, the victim's plane as its dealing
        // sees it, worked out once for all its units (`Dealt::lpn_in_plane`).
        let dealt_plane = match fill_start {
            None => self.fill.dealt().map(|d| d.plane_of(base)),
            Some(_) => None,
        };
        // First the valid units and their logical units, each one's map entry fetched towards
        // the cache as it is found: remapping them writes the map at random, and with every
        // fetch under way before the first write, the misses (and, on a large drive, the page
        // walks) overlap instead of each stalling the move that waits on it (a tenth of the
        // bench's run was that one store).
        let mut found = std::mem::take(&mut self.gc_found);
        found.clear();
        for from in base..base + upb {
            // As `p2l_at`, with the fill's layout of this block worked out once.
            let lpn = match (self.p2l[from as usize] ^ AS_FILLED, fill_start) {
                (AS_FILLED, Some(start)) => self.fill.lpn_in_block(start, from - base),
                (AS_FILLED, None) => match (self.fill.dealt(), &dealt_plane) {
                    (Some(d), Some(p)) => d.lpn_in_plane(p, from),
                    _ => UNMAPPED,
                },
                (lpn, _) => lpn,
            };
            if lpn != UNMAPPED {
                prefetch(&self.l2p, lpn as usize);
                found.push((from, lpn));
            }
        }
        let result = self.move_found(plane, victim, wear_level, &found);
        self.gc_found = found;
        result
    }

    /// The second half of [`Ftl::collect`]: move `found` (the victim's valid units) to the
    /// plane's GC block and schedule the victim's erase.
    fn move_found(
        &mut self,
        plane: u32,
        victim: u32,
        wear_level: bool,
        found: &[(u32, u32)],
    ) -> Result<bool> {
        let per_stream = self
            .streams
            .as_deref()
            .is_some_and(|st| !st.gc_open.is_empty());
        let mut moves = Vec::with_capacity(found.len());
        for &(from, lpn) in found {
            // With `ftl.gc.per_stream` a unit moves into the GC block of the stream that wrote
            // it, so moved hot and cold data stay apart.
            let to_stream = if per_stream {
                self.gc_stream_of(lpn)
            } else {
                Stream::Gc
            };
            let Some(to) = self.alloc_in_plane(plane, to_stream, false)? else {
                // No room left in this plane: keep the rest in the victim and give up on it
                // for now (it goes back to being a full block).
                self.blocks[victim as usize].state = BlockState::Full;
                self.planes[plane as usize].gc_inflight -= 1;
                self.stats.gc_units_moved += moves.len() as u64;
                if !moves.is_empty() && !self.instant {
                    // Copies only, no erase (`block` NONE).
                    self.tasks.push(GcTask {
                        plane,
                        block: NONE,
                        epoch: 0,
                        moves,
                        wear_level,
                    });
                }
                return Ok(false);
            };
            self.set_p2l(from, UNMAPPED);
            self.blocks[victim as usize].valid -= 1;
            self.map(lpn as u64, to);
            if self.instant {
                self.mark_programmed(to);
            } else {
                // The moved unit's entry changed: with a cached map its translation page must
                // be updated (a moved translation page needs only its GTD entry, just set).
                self.translation.entry_changed(lpn as u64);
            }
            if let Some(st) = self.streams.as_deref_mut() {
                // GC's work is counted against the stream that wrote the data.
                let s = st.lpn_stream[lpn as usize];
                st.stats[s as usize].gc_units_moved += 1;
            }
            let epoch = self.blocks[self.geo.block_of_unit(to) as usize].epoch;
            moves.push((from, to, epoch));
        }
        self.stats.gc_units_moved += moves.len() as u64;
        if wear_level {
            self.stats.wl_migrations += 1;
        } else {
            self.stats.gc_runs += 1;
        }
        let epoch = self.blocks[victim as usize].epoch;
        if self.instant {
            // The caller's loop (maybe_gc) re-checks the threshold; no recursion here.
            self.apply_erase(victim);
            self.planes[plane as usize].gc_inflight -= 1;
        } else {
            self.tasks.push(GcTask {
                plane,
                block: victim,
                epoch,
                moves,
                wear_level,
            });
        }
        Ok(true)
    }

    /// End with an error a GC that cannot make progress. With no host write or trim, a
    /// collection only turns its victim's stale units into room, and GC stops once its planes
    /// are at their thresholds or no block holds stale data (the MQSim import of
    /// `tests/gc_progress.rs` at full size, on a layout where its drain did end, moved 0.36 of
    /// its units). But each move a cached map must record costs a translation-page program,
    /// and a drive whose victims are nearly all valid (little over-provisioning left above the
    /// GC threshold) spends on those programs all the room its collections free: GC can then go
    /// on for ever, or for many times the drive's units, with the host waiting or gone (a
    /// bound, not a proof: some such drains would end later). Once GC has moved over twice
    /// the drive's physical units since the host last wrote or trimmed, the run stops with a
    /// message that says so.
    fn watch_progress(&mut self, plane: u32) -> Result<()> {
        let host = self.stats.host_units_written + self.stats.trimmed_units;
        let moved = self.stats.gc_units_moved;
        let (was_host, was_moved) = self.gc_watch;
        // (Statistics reset after preconditioning: moved below the mark.)
        if host != was_host || moved < was_moved {
            self.gc_watch = (host, moved);
            return Ok(());
        }
        let physical = self.geo.units();
        if moved - was_moved <= 2 * physical {
            return Ok(());
        }
        let free = self.planes[plane as usize].free.len();
        let (map, remedy) = if self.translation.pages() > 0 {
            let map = format!(
                "; each move's translation-page program (ftl.mapping = \"cached\", {} translation pages) costs room too",
                self.translation.pages()
            );
            (map, "ftl.over_provisioning or ftl.mapping_cache")
        } else {
            (String::new(), "ftl.over_provisioning")
        };
        // The config's error, not the simulator's: the drive it describes cannot serve this
        // workload, and the message says which of its fields to change.
        Err(Error::bad_config(Invalid::unnamed(
            "FTL",
            says(format!(
                "GC cannot make progress: it moved {} units, over twice the drive's {physical}, since \
                 the host last wrote or trimmed, and plane {plane} still has {free} free blocks \
                 of the {} it collects up to{map}; the victims hold too little stale data — raise \
                 {remedy}, or lower ftl.gc.free_threshold",
                moved - was_moved,
                self.gc_threshold_blocks
            )),
        )))
    }

    /// The erase of `block` (emitted with `epoch`) has completed.
    pub fn erase_done(&mut self, plane: u32, block: u32, epoch: u32) -> Result<()> {
        if self.blocks[block as usize].epoch != epoch {
            // Already erased when an allocation took it early (a forced erase).
            return Ok(());
        }
        self.apply_erase(block);
        self.planes[plane as usize].gc_inflight -= 1;
        self.maybe_gc(plane)?;
        self.maybe_wear_level(plane)
    }

    pub(super) fn apply_erase(&mut self, block: u32) {
        let upb = self.geo.units_per_block();
        let blk = &mut self.blocks[block as usize];
        debug_assert_eq!(blk.valid, 0, "erasing a block that holds valid data");
        blk.erase_count += 1;
        let erase_count = blk.erase_count;
        blk.epoch = blk.epoch.wrapping_add(1);
        blk.write_ptr = 0;
        blk.state = BlockState::Free;
        self.stats.erases += 1;
        // Bits lie only past the prefix.
        let first = block as u64 * upb as u64;
        let from = (std::mem::take(&mut blk.programmed_below) as u64).max(first);
        clear_bits(&mut self.programmed, from, first + upb as u64);
        if let Some(w) = self.wear.as_mut() {
            if erase_count >= w.pe_limit {
                // Worn out: it leaves the pool for good, and the spare shrinks.
                self.blocks[block as usize].state = BlockState::Bad;
                w.retired_blocks += 1;
                w.good_blocks -= 1;
                if w.good_blocks < w.min_good_blocks {
                    w.read_only = true;
                }
                return;
            }
        }
        let plane = self.geo.plane_of_block(block);
        self.planes[plane as usize].free.push(block);
    }

    /// Static wear levelling: if the plane's erase counts spread wider than the gap, move the
    /// data of its least-erased full block (cold data) so that block rejoins the free pool.
    pub(super) fn maybe_wear_level(&mut self, plane: u32) -> Result<()> {
        if self.static_gap == 0 || self.planes[plane as usize].gc_inflight > 0 {
            return Ok(());
        }
        let bpp = self.geo.blocks_per_plane;
        let range = plane * bpp..(plane + 1) * bpp;
        let max = range
            .clone()
            // A retired block wears no further: it would hold the gap open for ever.
            .filter(|&b| self.blocks[b as usize].state != BlockState::Bad)
            .map(|b| self.blocks[b as usize].erase_count)
            .max()
            .unwrap_or(0);
        let coldest = range
            .filter(|&b| self.blocks[b as usize].state == BlockState::Full)
            .min_by_key(|&b| (self.blocks[b as usize].erase_count, b));
        if let Some(b) = coldest {
            if max - self.blocks[b as usize].erase_count > self.static_gap {
                self.collect(plane, b, true)?;
            }
        }
        Ok(())
    }
}
