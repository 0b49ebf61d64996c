//! HFSL's address map and placement (seed 002 §2.6.1, Table 3), functional only: for each host
//! write or read, which raw commands the fusion device must run, in phases (reads, then writes,
//! then erases). The timing is the driver's (`driver::hfsl`).
//!
//! A logical page (LPN) is one NAND page; the PCM holds it as `sub_pages` sub-pages of
//! `sub_page` bytes in a slot of its own. Each entry carries Table 3's flags: the write
//! `counter` (hot/cold), the `state` bits (which sub-pages are in PCM), the `changed` flag
//! (the entry changed since it was last persisted — point 6 of issue 11 will persist it), and
//! `loc` (Add_Flag: NAND or PCM). An LPN lives wholly in one place: in PCM, its data is the
//! slot's sub-pages whose state bit is set (the others were never written); in NAND, its page.
//!
//! Placement: a write of at most SSW, or flagged metadata, goes to PCM (same-level pool); with
//! the cache method every write goes to PCM (cache pool); with both, large writes go to the
//! cache pool. A small write to an LPN that lives in NAND reads the page and merges it into PCM
//! (Fig. 15's "update"). A large write to an LPN in PCM moves it to NAND (merging what it does
//! not cover). When a pool is full, its victim — the coldest LPN (lowest counter, then least
//! recently written) of the same-level pool, the least recently used (written or read) of the
//! cache pool — moves to NAND. NAND pages are allocated striped over the dies, channel first (§2.6.1 (c));
//! with GC on, a die short of free blocks moves the valid pages of its block with the fewest and
//! erases it.

use crate::error::{got, Invalid};
use std::collections::BTreeSet;

use crate::config::{FusionMethod, HfslConfig, MapStore};
use crate::device::HardwareInfo;
use crate::error::{Error, Result};
pub use crate::stats::result::HfslCounters;

mod bloom;
mod nand;
mod persisted;

use bloom::Bloom;
pub use nand::usable_pages;
use nand::{spare_blocks, Die};
pub use persisted::{Persisted, Recovered, RecoverySteps};

const NONE: u32 = u32::MAX;

/// Where an LPN's data lives (Table 3's Add_Flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    Unmapped,
    Nand,
    Pcm,
}

/// One address-map entry with Table 3's flags.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Writes to the LPN (Counter: hot/cold).
    pub counter: u32,
    /// Sub-pages held in PCM, one bit each (State).
    pub state: u8,
    /// Changed since last persisted (Flag).
    pub changed: bool,
    /// NAND or PCM (Add_Flag).
    pub loc: Loc,
    /// In NAND: the physical page; in PCM: the slot.
    pub addr: u32,
    /// In PCM: whether the slot is in the cache pool (else the same-level pool).
    cache: bool,
    /// Tick of the last write (recency); in the cache pool, of the last write or read.
    tick: u64,
}

impl Entry {
    const EMPTY: Entry = Entry {
        counter: 0,
        state: 0,
        changed: false,
        loc: Loc::Unmapped,
        addr: NONE,
        cache: false,
        tick: 0,
    };
}

/// One raw command of the fusion device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawOp {
    PcmRead { addr: u64, len: u64 },
    PcmWrite { addr: u64, len: u64 },
    NandRead { page: u32 },
    NandProgram { page: u32 },
    NandErase { block: u32 },
}

/// A host request's raw commands: each phase runs after the one before has completed.
///
/// With the map in PCM the order is what keeps a power cut from losing an acknowledged write:
/// data is written before the map entries that point at it (`map` after `writes`), and nothing
/// a persisted entry points at is overwritten before the entry moves on — a PCM slot freed by
/// an eviction is refilled only after the evicted page's new entry is written (`late_writes`,
/// then `late_map`), and blocks are erased last.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub reads: Vec<RawOp>,
    pub writes: Vec<RawOp>,
    /// Map entries written to the PCM's map area (`PcmWrite`s there).
    pub map: Vec<RawOp>,
    /// Writes into PCM slots this request's evictions freed, and their map entries.
    pub late_writes: Vec<RawOp>,
    pub late_map: Vec<RawOp>,
    pub erases: Vec<RawOp>,
}

impl Plan {
    fn clear(&mut self) {
        for phase in self.phases_mut() {
            phase.clear();
        }
    }

    fn phases_mut(&mut self) -> [&mut Vec<RawOp>; 6] {
        [
            &mut self.reads,
            &mut self.writes,
            &mut self.map,
            &mut self.late_writes,
            &mut self.late_map,
            &mut self.erases,
        ]
    }

    /// The commands of phase `i` (0 to 5, in the order they run).
    pub fn phase(&self, i: usize) -> &[RawOp] {
        [
            &self.reads,
            &self.writes,
            &self.map,
            &self.late_writes,
            &self.late_map,
            &self.erases,
        ][i]
    }

    /// Every command, in phase order.
    pub fn ops(&self) -> impl Iterator<Item = &RawOp> {
        (0..PHASES).flat_map(|i| self.phase(i))
    }
}

/// Phases of a plan.
pub const PHASES: usize = 6;

/// A PCM pool: its slots and the order its victims are taken in.
struct Pool {
    free: Vec<u32>,
    /// (coldness key, tick, lpn): the first is the victim.
    order: BTreeSet<(u32, u64, u32)>,
    /// Whether the key is the write counter (same-level: coldest first) or 0 (cache: LRU).
    by_counter: bool,
}

impl Pool {
    fn new(slots: std::ops::Range<u32>, by_counter: bool) -> Pool {
        Pool {
            free: slots.rev().collect(),
            order: BTreeSet::new(),
            by_counter,
        }
    }

    fn key(&self, e: &Entry, lpn: u32) -> (u32, u64, u32) {
        (if self.by_counter { e.counter } else { 0 }, e.tick, lpn)
    }

    fn capacity(&self) -> usize {
        self.free.len() + self.order.len()
    }
}

pub struct HfslMap {
    method: FusionMethod,
    ssw: u64,
    page_bytes: u64,
    sub_page: u64,
    sub_pages: u32,
    full_state: u8,
    pages_per_block: u32,
    gc: bool,
    gc_free_blocks: u32,
    wear_aware: bool,
    bloom: Bloom,
    /// Per block: its erases (HFSL counts the P/E cycles it causes, §2.6.1 (b)).
    erase_counts: Vec<u32>,
    entries: Vec<Entry>,
    /// Per NAND page: 1 + the LPN whose valid data it holds, or 0 (no valid data): zero so
    /// that the OS hands the table over zeroed, touched only where pages are written.
    p2l: Vec<u32>,
    /// Per block: valid pages.
    valid: Vec<u32>,
    /// Per block: in its die's free list, or erased by this request's GC (`erased`) — not a
    /// GC victim. Kept here so that GC's victim search is one pass over the die's blocks.
    free_block: Vec<bool>,
    dies: Vec<Die>,
    /// Dies in allocation order: channel first.
    stripe: Vec<u32>,
    cursor: usize,
    same: Pool,
    cache: Pool,
    tick: u64,
    pub counters: HfslCounters,
    plan: Plan,
    /// Blocks of this request's GC erases: free from the next request on.
    erased: Vec<(u32, u32)>,
    /// PCM slots this request freed (cache pool?, slot): free from the next request on, so a
    /// persisted entry never points at a slot refilled before the entry is rewritten.
    released: Vec<(bool, u32)>,
    map_store: MapStore,
    entry_bytes: u64,
    /// Byte address of the map area in the PCM (after the slots).
    map_base: u64,
    /// Slots of the cache pool (slots below this) and in all.
    cache_slots: u32,
    slots: u32,
    /// LPNs whose entries this request changed, with their data in `writes` and in
    /// `late_writes` (map in PCM only).
    dirty: Vec<u32>,
    dirty_late: Vec<u32>,
    /// The LPNs the write being planned has yet to place: never an eviction's victim (its
    /// old place would be refilled before its new entry is written).
    pending: std::ops::Range<u32>,
    /// Tests: the version each place holds, per sub-page (slot-major in PCM, page-major in
    /// NAND), moved along with the data.
    versions: Option<(Vec<u32>, Vec<u32>)>,
}

impl HfslMap {
    /// HFSL over the device `hw` describes, with `logical_pages` LPNs. The PCM holds as many
    /// slots as whole pages fit in it; with GC, each die keeps `gc_free_blocks` spare blocks
    /// the logical space may not use.
    pub fn new(cfg: &HfslConfig, hw: &HardwareInfo, logical_pages: u32) -> Result<HfslMap> {
        let page = hw.nand_page_bytes;
        if let Err((f, m)) = cfg.validate(page) {
            return Err(Error::bad_config(Invalid::says("", f, m)));
        }
        let sub_pages = (page / cfg.sub_page.0) as u32;
        // The map area: one entry per logical page at the top of the PCM (§2.6.1's "fixed
        // field"), the slots below it.
        let entry_bytes = cfg.map_entry_bytes as u64;
        let map_bytes = logical_pages as u64 * entry_bytes;
        let Some(below) = hw.pcm_bytes.checked_sub(map_bytes) else {
            return Err(Error::bad_config(Invalid::got(
                "hfsl",
                "map_entry_bytes",
                entry_bytes,
                format!(
                    "at most {} bytes: the map of {logical_pages} logical pages needs {map_bytes} \
                     bytes of PCM, more than the PCM's {} bytes",
                    hw.pcm_bytes / (logical_pages as u64).max(1),
                    hw.pcm_bytes
                ),
            )));
        };
        let slots = (below / page).min(u32::MAX as u64 - 1) as u32;
        let cache_slots = match cfg.fusion_method {
            FusionMethod::SameLevel => 0,
            FusionMethod::Cache => slots,
            FusionMethod::Both => (slots as f64 * cfg.cache_ratio).round() as u32,
        };
        let dies_n = hw.nand_channels * hw.nand_chips_per_channel;
        let blocks_per_die = hw.nand_blocks / dies_n;
        let usable = usable_pages(cfg, hw);
        if logical_pages as u64 > usable {
            return Err(Error::bad_config(Invalid::unnamed(
                "hfsl logical pages",
                got(
                    logical_pages,
                    format!(
                        "at most {usable} (the NAND's pages less {} spare blocks per die)",
                        spare_blocks(cfg)
                    ),
                ),
            )));
        }
        let pages = hw.nand_blocks as usize * hw.nand_pages_per_block as usize;
        let mut free_block = vec![true; hw.nand_blocks as usize];
        let dies = (0..dies_n)
            .map(|d| {
                let first = d * blocks_per_die;
                let mut free: Vec<u32> = (first..first + blocks_per_die).rev().collect();
                let open = free.pop().expect("a die has blocks");
                free_block[open as usize] = false;
                Die {
                    free,
                    open: [open, NONE],
                    next_page: [0, hw.nand_pages_per_block],
                }
            })
            .collect();
        let chips = hw.nand_chips_per_channel;
        let stripe = (0..dies_n)
            .map(|i| (i % hw.nand_channels) * chips + i / hw.nand_channels)
            .collect();
        Ok(HfslMap {
            method: cfg.fusion_method,
            ssw: cfg.ssw.0,
            page_bytes: page,
            sub_page: cfg.sub_page.0,
            sub_pages,
            full_state: ((1u16 << sub_pages) - 1) as u8,
            pages_per_block: hw.nand_pages_per_block,
            gc: cfg.gc,
            gc_free_blocks: cfg.gc_free_blocks,
            wear_aware: cfg.wear_aware,
            bloom: Bloom::new(cfg.bloom_bits, cfg.bloom_hashes, cfg.hot_window),
            erase_counts: vec![0; hw.nand_blocks as usize],
            entries: vec![Entry::EMPTY; logical_pages as usize],
            p2l: vec![0; pages],
            valid: vec![0; hw.nand_blocks as usize],
            free_block,
            dies,
            stripe,
            cursor: 0,
            same: Pool::new(cache_slots..slots, true),
            cache: Pool::new(0..cache_slots, false),
            tick: 0,
            counters: HfslCounters::default(),
            plan: Plan::default(),
            erased: Vec::new(),
            released: Vec::new(),
            map_store: cfg.map_store,
            entry_bytes,
            map_base: slots as u64 * page,
            cache_slots,
            slots,
            dirty: Vec::new(),
            dirty_late: Vec::new(),
            pending: 0..0,
            versions: None,
        })
    }

    /// Byte address of the map area in the PCM; a PCM write at or above it writes entries.
    pub fn map_base(&self) -> u64 {
        self.map_base
    }

    /// Bytes of the map area.
    pub fn map_bytes(&self) -> u64 {
        self.entries.len() as u64 * self.entry_bytes
    }

    pub fn entry_bytes(&self) -> u64 {
        self.entry_bytes
    }

    pub fn sub_pages(&self) -> u32 {
        self.sub_pages
    }

    pub fn pages_per_block(&self) -> u32 {
        self.pages_per_block
    }

    /// Tests and power-cut runs: the versions the planned requests leave in PCM slot `slot`'s
    /// sub-pages and NAND page `page`'s (`track_versions`).
    pub fn planned_pcm(&self, slot: u32) -> &[u32] {
        let n = self.sub_pages as usize;
        let (pv, _) = self.versions.as_ref().expect("track_versions");
        &pv[slot as usize * n..(slot as usize + 1) * n]
    }

    pub fn planned_nand(&self, page: u32) -> &[u32] {
        let n = self.sub_pages as usize;
        let (_, nv) = self.versions.as_ref().expect("track_versions");
        &nv[page as usize * n..(page as usize + 1) * n]
    }

    pub fn logical_pages(&self) -> u32 {
        self.entries.len() as u32
    }

    /// NAND pages of the device.
    pub fn nand_pages(&self) -> u64 {
        self.p2l.len() as u64
    }

    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    /// The raw commands of the last request planned.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn entry(&self, lpn: u32) -> &Entry {
        &self.entries[lpn as usize]
    }

    /// LPNs in PCM and in NAND.
    pub fn where_data_lives(&self) -> (u64, u64) {
        let pcm = (self.same.order.len() + self.cache.order.len()) as u64;
        let nand = self.entries.iter().filter(|e| e.loc == Loc::Nand).count() as u64;
        (pcm, nand)
    }

    /// Keep a version per sub-page in every place (tests: `versions_of`).
    pub fn track_versions(&mut self) {
        let slots = self.same.capacity() + self.cache.capacity();
        self.versions = Some((
            vec![0; slots * self.sub_pages as usize],
            vec![0; self.p2l.len() * self.sub_pages as usize],
        ));
    }

    /// The versions an LPN's sub-pages read back as, following the map (0: never written).
    pub fn versions_of(&self, lpn: u32) -> Vec<u32> {
        let (pv, nv) = self.versions.as_ref().expect("track_versions");
        let e = &self.entries[lpn as usize];
        let n = self.sub_pages as usize;
        (0..n)
            .map(|s| match e.loc {
                Loc::Unmapped => 0,
                Loc::Nand => nv[e.addr as usize * n + s],
                Loc::Pcm if e.state & (1 << s) != 0 => pv[e.addr as usize * n + s],
                Loc::Pcm => 0,
            })
            .collect()
    }

    fn check(&self, offset: u64, len: u64) -> Result<(u32, u32)> {
        let end = offset.checked_add(len);
        let cap = self.entries.len() as u64 * self.page_bytes;
        if len == 0 || end.is_none_or(|e| e > cap) {
            return Err(Error::bad_job(Invalid::unnamed(
                "hfsl request",
                got(
                    format!("{len} bytes at byte {offset}"),
                    format!("1 byte or more inside the {cap} logical bytes"),
                ),
            )));
        }
        let first = (offset / self.page_bytes) as u32;
        let last = ((offset + len - 1) / self.page_bytes) as u32;
        Ok((first, last))
    }

    /// A new request: the previous one's commands have all run.
    fn start(&mut self) {
        self.plan.clear();
        for (d, b) in self.erased.drain(..) {
            self.dies[d as usize].free.insert(0, b);
        }
        while let Some((cache, slot)) = self.released.pop() {
            self.pool(cache).free.push(slot);
        }
    }

    /// Sub-page bits of `lpn` that `offset..offset+len` covers (rounded out to sub-pages).
    fn covered(&self, lpn: u32, offset: u64, len: u64) -> (u8, u64) {
        let base = lpn as u64 * self.page_bytes;
        let s = offset.max(base) - base;
        let e = (offset + len).min(base + self.page_bytes) - base;
        let first = s / self.sub_page;
        let last = (e - 1) / self.sub_page;
        // Bits first..=last (at most 8 sub-pages: the u16 does not overflow).
        let bits = ((1u16 << (last + 1)) - (1u16 << first)) as u8;
        (bits, e - s)
    }

    /// The raw commands of a host read.
    pub fn read(&mut self, offset: u64, len: u64) -> Result<&Plan> {
        let (first, last) = self.check(offset, len)?;
        self.start();
        for lpn in first..=last {
            let e = self.entries[lpn as usize];
            let (bits, bytes) = self.covered(lpn, offset, len);
            match e.loc {
                Loc::Unmapped => self.counters.unmapped_reads += 1,
                Loc::Nand => {
                    self.plan.reads.push(RawOp::NandRead { page: e.addr });
                    self.counters.nand_reads += 1;
                }
                Loc::Pcm => {
                    if e.state & bits != 0 {
                        let base = lpn as u64 * self.page_bytes;
                        let s = offset.max(base) - base;
                        self.pcm_read(e.addr, s, bytes);
                    }
                    if e.cache {
                        // §2.6.4: the buffer is LRU, so a hit makes the page the most recent.
                        self.unlink(lpn);
                        self.tick += 1;
                        self.entries[lpn as usize].tick = self.tick;
                        let e = self.entries[lpn as usize];
                        let k = self.cache.key(&e, lpn);
                        self.cache.order.insert(k);
                    }
                }
            }
        }
        Ok(&self.plan)
    }

    /// The raw commands of a host write of `len` bytes at `offset` (`meta`: flagged metadata);
    /// `version` is the data's version, for tests that track them.
    pub fn write(&mut self, offset: u64, len: u64, meta: bool, version: u32) -> Result<&Plan> {
        let (first, last) = self.check(offset, len)?;
        self.start();
        // At most SSW, not below it: §3.3.1 says "smaller than SSW", but §2.7.2 sets SSW to
        // 512 B and Figs. 15-20 show PCM use at 512 B, which no sector-sized write could reach
        // if a 512 B write were not small.
        let small = meta || len <= self.ssw;
        for lpn in first..=last {
            self.pending = lpn + 1..last + 1;
            self.tick += 1;
            let (bits, bytes) = self.covered(lpn, offset, len);
            let base = lpn as u64 * self.page_bytes;
            let within = offset.max(base) - base;
            // Out of its pool's victim order while its key changes.
            self.unlink(lpn);
            // Hot if written since the filter was last cleared (before this write).
            let hot = self.bloom.contains_then_record(lpn);
            let e = &mut self.entries[lpn as usize];
            e.counter = e.counter.saturating_add(1);
            let to_cache = match self.method {
                FusionMethod::SameLevel => false,
                FusionMethod::Cache => true,
                FusionMethod::Both => !small,
            };
            let placed = if small || to_cache {
                self.write_pcm(lpn, bits, within, bytes, to_cache, version)?
            } else {
                None
            };
            let late = match placed {
                Some(late) => {
                    self.counters.writes_to_pcm += 1;
                    late
                }
                // Not for PCM, or its pool holds only pages this write places after it: NAND.
                None => {
                    self.counters.writes_to_nand += 1;
                    self.write_nand(lpn, bits, version, hot)?;
                    false
                }
            };
            self.touch(lpn, late);
        }
        self.pending = 0..0;
        self.persist_changed();
        Ok(&self.plan)
    }

    fn pool(&mut self, cache: bool) -> &mut Pool {
        if cache {
            &mut self.cache
        } else {
            &mut self.same
        }
    }

    /// Take an LPN in PCM out of its pool's victim order (its key is about to change, or it
    /// is leaving); it is put back when placed in PCM again.
    fn unlink(&mut self, lpn: u32) {
        let e = self.entries[lpn as usize];
        if e.loc == Loc::Pcm {
            let pool = self.pool(e.cache);
            let k = pool.key(&e, lpn);
            let was = pool.order.remove(&k);
            debug_assert!(was, "an LPN in PCM is in its pool's order");
        }
    }

    fn pcm_read(&mut self, slot: u32, within: u64, len: u64) {
        let addr = slot as u64 * self.page_bytes + within;
        self.plan.reads.push(RawOp::PcmRead { addr, len });
        self.counters.pcm_reads += 1;
        self.counters.pcm_bytes_read += len;
    }

    /// A PCM data write (`late`: into a slot this request's eviction freed).
    fn pcm_write(&mut self, slot: u32, within: u64, len: u64, late: bool) {
        let addr = slot as u64 * self.page_bytes + within;
        let op = RawOp::PcmWrite { addr, len };
        if late {
            self.plan.late_writes.push(op);
        } else {
            self.plan.writes.push(op);
        }
        self.counters.pcm_writes += 1;
        self.counters.pcm_bytes_written += len;
    }

    /// Put `bits` of `lpn` (`bytes` at `within` of its page) into PCM, in the cache pool or the
    /// same-level one. Returns whether its data goes in `late_writes`; None (and nothing
    /// changed) when the pool has no free slot and no victim this write does not place later.
    fn write_pcm(
        &mut self,
        lpn: u32,
        bits: u8,
        within: u64,
        bytes: u64,
        cache: bool,
        version: u32,
    ) -> Result<Option<bool>> {
        let e = self.entries[lpn as usize];
        let n = self.sub_pages as usize;
        if e.loc == Loc::Pcm {
            // In place; the LPN keeps its pool, and its place in the victim order moves.
            let e = &mut self.entries[lpn as usize];
            e.state |= bits;
            e.tick = self.tick;
            let e = *e;
            let pool = self.pool(e.cache);
            let k = pool.key(&e, lpn);
            pool.order.insert(k);
            self.pcm_write(e.addr, within, bytes, false);
            self.set_pcm_versions(e.addr, bits, version);
            return Ok(Some(false));
        }
        let Some((slot, late)) = self.take_slot(cache)? else {
            return Ok(None);
        };
        // Taking the slot may have evicted to NAND and collected there, moving this LPN's page.
        let e = self.entries[lpn as usize];
        let mut state = bits;
        if e.loc == Loc::Nand {
            // Fig. 15's update: the page is read and merged, and the LPN moves whole to PCM.
            self.plan.reads.push(RawOp::NandRead { page: e.addr });
            self.counters.nand_reads += 1;
            self.counters.nand_updates += 1;
            if let Some((pv, nv)) = self.versions.as_mut() {
                for s in 0..n {
                    pv[slot as usize * n + s] = nv[e.addr as usize * n + s];
                }
            }
            self.invalidate(e.addr);
            state = self.full_state;
            self.pcm_write(slot, 0, self.page_bytes, late);
        } else {
            self.pcm_write(slot, within, bytes, late);
        }
        self.set_pcm_versions(slot, bits, version);
        let tick = self.tick;
        let e = &mut self.entries[lpn as usize];
        e.loc = Loc::Pcm;
        e.addr = slot;
        e.state = state;
        e.cache = cache;
        e.tick = tick;
        let e = *e;
        let pool = self.pool(cache);
        let k = pool.key(&e, lpn);
        pool.order.insert(k);
        Ok(Some(late))
    }

    fn set_pcm_versions(&mut self, slot: u32, bits: u8, version: u32) {
        let n = self.sub_pages as usize;
        if let Some((pv, _)) = self.versions.as_mut() {
            for s in 0..n {
                if bits & (1 << s) != 0 {
                    pv[slot as usize * n + s] = version;
                }
            }
        }
    }

    /// A free slot of a pool, evicting its victim to NAND if it has none; and whether it is
    /// the victim's (then, with the map in PCM, it is written only after the victim's entry).
    /// The victim is the pool's first page that the write being planned does not place later;
    /// None if there is none.
    fn take_slot(&mut self, cache: bool) -> Result<Option<(u32, bool)>> {
        if let Some(s) = self.pool(cache).free.pop() {
            return Ok(Some((s, false)));
        }
        if self.pool(cache).capacity() == 0 {
            return Err(Error::bad_config(Invalid::says(
                "hfsl",
                "cache_ratio",
                format!(
                    "leaves the {} pool no PCM slot; expected a ratio between 0 and 1 exclusive, \
                     or another hfsl.fusion_method",
                    if cache { "cache" } else { "same-level" }
                ),
            )));
        }
        let pending = self.pending.clone();
        let candidate = (self.pool(cache).order.iter()).find(|&&(_, _, l)| !pending.contains(&l));
        let Some(&(_, _, victim)) = candidate else {
            return Ok(None);
        };
        self.counters.evictions += 1;
        self.unlink(victim);
        // The coldest (or least recent) page of its pool: cold data.
        self.move_to_nand(victim, 0, 0, false)?;
        self.touch(victim, false);
        let (_, slot) = self.released.pop().expect("the victim's slot");
        Ok(Some((slot, self.map_store == MapStore::Pcm)))
    }
}

#[cfg(test)]
mod tests;
