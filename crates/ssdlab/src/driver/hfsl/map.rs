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

/// An address-map entry as the PCM's map area holds it (Table 3's fields less the changed
/// flag, which only the copy in DRAM needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persisted {
    pub loc: Loc,
    pub addr: u32,
    pub state: u8,
    pub counter: u32,
}

impl Persisted {
    /// A never-written area: every page unmapped.
    pub const UNMAPPED: Persisted = Persisted {
        loc: Loc::Unmapped,
        addr: NONE,
        state: 0,
        counter: 0,
    };
}

/// What a restart found in the persisted map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Entries that map a page.
    pub mapped: u64,
    /// Entries dropped: they pointed at a page not programmed, or at a place another entry
    /// holds (a stale map, kept in DRAM and last written at an earlier halt).
    pub dropped: u64,
    /// The raw commands the restart runs, in order.
    pub steps: RecoverySteps,
}

/// A restart's raw commands in lists, each run after the one before has completed: erases of
/// written blocks without valid data, then, for each block a die with no free block gives up,
/// the reads of its valid pages, their programs into a block with room, their entries' writes
/// and its erase. Nothing is erased before the entries that pointed into it have moved on, so
/// a cut at any point of a restart loses nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoverySteps {
    pub lists: Vec<Vec<RawOp>>,
}

impl RecoverySteps {
    /// The lists in the order they run.
    pub fn in_order(&self) -> impl Iterator<Item = &[RawOp]> {
        self.lists.iter().map(|l| &l[..])
    }

    pub fn erases(&self) -> u64 {
        let erase = |op: &&RawOp| matches!(op, RawOp::NandErase { .. });
        self.lists.iter().flatten().filter(erase).count() as u64
    }
}

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

/// The hot/cold judgement (§2.6.1: "the simple unidimensional bloom filter algorithm"): one
/// Bloom filter of the logical pages written since it was last cleared, every `window` writes.
/// A page is hot when the filter holds it (false positives make a cold page look hot now and
/// then, never the reverse).
struct Bloom {
    words: Vec<u64>,
    mask: u64,
    hashes: u32,
    window: u32,
    recorded: u32,
}

impl Bloom {
    fn new(bits: u32, hashes: u32, window: u32) -> Bloom {
        Bloom {
            words: vec![0; (bits / 64) as usize],
            mask: bits as u64 - 1,
            hashes,
            window,
            recorded: 0,
        }
    }

    /// The filter's bit indices for `lpn`: double hashing over a SplitMix64 finaliser.
    fn bits(&self, lpn: u32) -> impl Iterator<Item = u64> + '_ {
        let mix = |mut z: u64| {
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let h1 = mix(lpn as u64 + 0x9E37_79B9_7F4A_7C15);
        let h2 = mix(h1) | 1;
        (0..self.hashes as u64).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) & self.mask)
    }

    #[cfg(test)]
    fn contains(&self, lpn: u32) -> bool {
        self.bits(lpn)
            .all(|b| self.words[(b / 64) as usize] & (1 << (b % 64)) != 0)
    }

    #[cfg(test)]
    fn record(&mut self, lpn: u32) {
        self.contains_then_record(lpn);
    }

    /// Whether the filter holds `lpn`, then record it (one hashing for both: every write does
    /// this).
    fn contains_then_record(&mut self, lpn: u32) -> bool {
        // At most 8 hashes (validated): the bits fit on the stack.
        let mut set = [0u64; 8];
        let n = self.hashes as usize;
        for (slot, b) in set.iter_mut().zip(self.bits(lpn)) {
            *slot = b;
        }
        let held = set[..n]
            .iter()
            .all(|&b| self.words[(b / 64) as usize] & (1 << (b % 64)) != 0);
        if self.recorded == self.window {
            self.words.fill(0);
            self.recorded = 0;
        }
        self.recorded += 1;
        for &b in &set[..n] {
            self.words[(b / 64) as usize] |= 1 << (b % 64);
        }
        held
    }
}

/// A die's write streams: with wear-aware allocation each has a block open, so cold host data
/// fill worn blocks and hot data fresh ones (§2.6.1 (b)); GC's moves join the stream whose
/// block filled. Without wear-aware allocation, only `COLD`.
const COLD: usize = 0;
const HOT: usize = 1;

struct Die {
    free: Vec<u32>,
    /// Per stream: its open block (`NONE` until one is opened) and the block's next page to
    /// program (`pages_per_block`: full, or none open).
    open: [u32; 2],
    next_page: [u32; 2],
}

impl Die {
    /// Whether block `b` is a stream's open block with pages left (of `ppb`).
    fn open_with_room(&self, b: u32, ppb: u32) -> bool {
        (0..2).any(|t| self.open[t] == b && self.next_page[t] < ppb)
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

/// Write streams per die (an open block each): cold and hot with wear-aware allocation.
fn streams(cfg: &HfslConfig) -> usize {
    if cfg.wear_aware {
        2
    } else {
        1
    }
}

/// Blocks of each die the logical space may not use: GC's reserve and the blocks its streams
/// write to.
fn spare_blocks(cfg: &HfslConfig) -> u32 {
    if cfg.gc {
        cfg.gc_free_blocks + streams(cfg) as u32
    } else {
        0
    }
}

/// The logical pages HFSL can offer on `hw`: the NAND's pages less each die's spare blocks.
pub fn usable_pages(cfg: &HfslConfig, hw: &HardwareInfo) -> u64 {
    let dies = hw.nand_channels * hw.nand_chips_per_channel;
    let blocks_per_die = hw.nand_blocks / dies;
    (blocks_per_die.saturating_sub(spare_blocks(cfg)) as u64)
        * dies as u64
        * hw.nand_pages_per_block as u64
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
            return Err(Error::config(format!(
                "hfsl: the map of {logical_pages} logical pages needs {map_bytes} bytes of PCM (hfsl.map_entry_bytes = {entry_bytes}), more than the PCM's {} bytes",
                hw.pcm_bytes
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

    /// LPN `lpn`'s entry as the map area holds it once written.
    pub fn persisted(&self, lpn: u32) -> Persisted {
        let e = &self.entries[lpn as usize];
        Persisted {
            loc: e.loc,
            addr: e.addr,
            state: e.state,
            counter: e.counter,
        }
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

    /// Rebuild the map after a power cut from what survived: the PCM map area's entries
    /// (`persisted`), the data on the media (`pcm_versions`, `nand_versions`, per sub-page, as
    /// `track_versions` keeps them) and what the device's firmware reports — each block's next
    /// page to program (`next_page`) and its P/E count. Entries that point at a page not
    /// programmed or at a place an earlier entry holds are dropped. A die's partly written
    /// block is its open block again; a die with no erased block erases one holding no valid
    /// data (in `plan().erases`). `counters` carry on (they are the run's figures, not HFSL's
    /// state). The Bloom filter starts empty.
    #[allow(clippy::too_many_arguments)]
    pub fn recover(
        cfg: &HfslConfig,
        hw: &HardwareInfo,
        persisted: &[Persisted],
        next_page: &[u32],
        erase_counts: &[u32],
        pcm_versions: Vec<u32>,
        nand_versions: Vec<u32>,
        counters: HfslCounters,
    ) -> Result<(HfslMap, Recovered)> {
        let mut m = HfslMap::new(cfg, hw, persisted.len() as u32)?;
        m.counters = counters;
        m.erase_counts.copy_from_slice(erase_counts);
        m.versions = Some((pcm_versions, nand_versions));
        let ppb = m.pages_per_block;
        let mut found = Recovered::default();
        let mut slot_used = vec![false; m.slots as usize];
        for (lpn, p) in persisted.iter().enumerate() {
            let lpn = lpn as u32;
            let ok = match p.loc {
                Loc::Unmapped => continue,
                Loc::Nand => {
                    let page = p.addr as usize;
                    page < m.p2l.len()
                        && p.addr % ppb < next_page[(p.addr / ppb) as usize]
                        && m.p2l[page] == 0
                }
                Loc::Pcm => {
                    p.addr < m.slots
                        && !slot_used[p.addr as usize]
                        && p.state != 0
                        && p.state & !m.full_state == 0
                }
            };
            if !ok {
                found.dropped += 1;
                continue;
            }
            found.mapped += 1;
            let cache = p.loc == Loc::Pcm && p.addr < m.cache_slots;
            m.entries[lpn as usize] = Entry {
                counter: p.counter,
                state: p.state,
                changed: false,
                loc: p.loc,
                addr: p.addr,
                cache,
                tick: 0,
            };
            if p.loc == Loc::Nand {
                m.p2l[p.addr as usize] = lpn + 1;
                m.valid[(p.addr / ppb) as usize] += 1;
            } else {
                slot_used[p.addr as usize] = true;
                let e = m.entries[lpn as usize];
                let pool = m.pool(cache);
                let k = pool.key(&e, lpn);
                pool.order.insert(k);
            }
        }
        let cache_slots = m.cache_slots;
        m.cache.free = (0..cache_slots)
            .rev()
            .filter(|&s| !slot_used[s as usize])
            .collect();
        m.same.free = (cache_slots..m.slots)
            .rev()
            .filter(|&s| !slot_used[s as usize])
            .collect();
        let per_die = m.valid.len() as u32 / m.dies.len() as u32;
        let mut steps = RecoverySteps::default();
        let mut garbage = Vec::new();
        for d in 0..m.dies.len() {
            let blocks = d as u32 * per_die..(d as u32 + 1) * per_die;
            // A written block without valid data (a cut GC's victim or its moves, a block whose
            // pages were all rewritten) is erased now, to be free again.
            for b in blocks.clone() {
                if next_page[b as usize] > 0 && m.valid[b as usize] == 0 {
                    garbage.push(m.erase(b));
                }
            }
            let free: Vec<u32> = (blocks.clone().rev())
                .filter(|&b| next_page[b as usize] == 0 || m.valid[b as usize] == 0)
                .collect();
            m.dies[d].free = free;
            // Its partly written blocks with valid data are open again, a stream each (which
            // was hot is not known; the Bloom filter starts empty too); a stream without one
            // opens a block when it next writes (or passes its pages to the next die). A
            // partly written block beyond the streams is left as if full.
            let mut partial = blocks
                .clone()
                .filter(|&b| (1..ppb).contains(&next_page[b as usize]) && m.valid[b as usize] > 0);
            for t in 0..2 {
                let die = &mut m.dies[d];
                (die.open[t], die.next_page[t]) = match partial.next() {
                    Some(b) if t < streams(cfg) => (b, next_page[b as usize]),
                    _ => (NONE, ppb),
                };
            }
        }
        steps.lists.push(garbage);
        if m.gc {
            // GC needs a free block to move pages to: a die without one gives a block up.
            for d in 0..m.dies.len() {
                if m.dies[d].free.is_empty() {
                    m.free_a_block_for_recovery(d, &mut steps)?;
                }
            }
        }
        m.free_block.fill(false);
        for die in &m.dies {
            for &b in &die.free {
                m.free_block[b as usize] = true;
            }
        }
        m.plan.clear();
        found.steps = steps;
        Ok((m, found))
    }

    /// Block `b`'s erase, counted (GC's and a restart's).
    fn erase(&mut self, b: u32) -> RawOp {
        self.counters.nand_erases += 1;
        self.erase_counts[b as usize] += 1;
        RawOp::NandErase { block: b }
    }

    /// Move `lpn`'s valid NAND page `page` (read by the caller's command) to the next page of
    /// die `d`'s stream `t`, its data version with it, and point its entry there (GC's moves
    /// and a restart's).
    // (Always inlined: GC moves every page through it.)
    #[inline(always)]
    fn relocate(&mut self, page: u32, lpn: u32, d: usize, t: usize) {
        self.counters.nand_reads += 1;
        let n = self.sub_pages as usize;
        let versions = self.versions.as_ref().map_or(Vec::new(), |(_, nv)| {
            nv[page as usize * n..(page as usize + 1) * n].to_vec()
        });
        self.invalidate(page);
        let to = self.take_page(d, t);
        self.program(to, lpn, &versions);
        self.entries[lpn as usize].addr = to;
        self.counters.gc_pages_moved += 1;
    }

    /// A restart's die `d` has no free block: the written block of it with the fewest
    /// valid pages gives them up to the room left in open blocks (its own die's first, then
    /// the others' in allocation order), and is erased once their entries point at the copies.
    /// Reads, programs, entry writes and the erase are four lists of `steps`, so the pages are
    /// always on NAND where a persisted entry says.
    fn free_a_block_for_recovery(&mut self, d: usize, steps: &mut RecoverySteps) -> Result<()> {
        let ppb = self.pages_per_block;
        let per_die = self.valid.len() as u32 / self.dies.len() as u32;
        let blocks = d as u32 * per_die..(d as u32 + 1) * per_die;
        let die = &self.dies[d];
        let victim = blocks
            .filter(|&b| self.valid[b as usize] > 0 && !die.open_with_room(b, ppb))
            .min_by_key(|&b| (self.valid[b as usize], b))
            .ok_or_else(|| {
                Error::device(format!(
                    "hfsl recovery: die {d} has no free block and no written block to give up"
                ))
            })?;
        let room = |m: &HfslMap, (e, t): (usize, usize)| ppb - m.dies[e].next_page[t];
        let others = self.stripe.iter().map(|&e| e as usize).filter(|&e| e != d);
        let targets: Vec<(usize, usize)> = std::iter::once(d)
            .chain(others)
            .flat_map(|e| [(e, COLD), (e, HOT)])
            .collect();
        let total: u32 = targets.iter().map(|&s| room(self, s)).sum();
        if total < self.valid[victim as usize] {
            return Err(Error::device(format!(
                "hfsl recovery: die {d} has no free block, and its emptiest block's {} valid pages do not fit the {total} pages left in open blocks",
                self.valid[victim as usize]
            )));
        }
        let (mut reads, mut programs) = (Vec::new(), Vec::new());
        let mut lpns = Vec::new();
        let mut target = targets.into_iter().peekable();
        self.plan.clear();
        for page in victim * ppb..(victim + 1) * ppb {
            let Some(lpn) = self.p2l[page as usize].checked_sub(1) else {
                continue;
            };
            reads.push(RawOp::NandRead { page });
            while target.next_if(|&s| room(self, s) == 0).is_some() {}
            let (e, t) = *target.peek().expect("the room was counted");
            self.relocate(page, lpn, e, t);
            self.entries[lpn as usize].changed = true;
            lpns.push(lpn);
        }
        programs.append(&mut self.plan.writes);
        lpns.sort_unstable();
        if self.map_store == MapStore::Pcm {
            self.write_entries(&lpns, false);
        }
        let map = std::mem::take(&mut self.plan.map);
        let erase = vec![self.erase(victim)];
        steps.lists.extend([reads, programs, map, erase]);
        self.dies[d].free.insert(0, victim);
        Ok(())
    }

    /// The map writes of a halt (§2.6.1: "When halts, HFSL writes down the metadata to PCM"):
    /// every entry changed since it was last written. With the map in PCM, none is.
    pub fn halt(&mut self) -> &Plan {
        self.start();
        let changed: Vec<u32> = (0..self.entries.len() as u32)
            .filter(|&l| self.entries[l as usize].changed)
            .collect();
        self.write_entries(&changed, false);
        &self.plan
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
            return Err(Error::job(format!(
                "hfsl request at byte {offset} of {len} bytes: expected 1 byte or more inside the {cap} logical bytes"
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

    /// Entry `lpn` changed; with the map in PCM it is written in this request, after its data
    /// (`late`: data in `late_writes`).
    fn touch(&mut self, lpn: u32, late: bool) {
        self.entries[lpn as usize].changed = true;
        if self.map_store == MapStore::Pcm {
            if late {
                self.dirty_late.push(lpn)
            } else {
                self.dirty.push(lpn)
            }
        }
    }

    /// The map writes of this request's changed entries. An entry whose data goes in
    /// `late_writes` is written only in `late_map`: until then the persisted entry keeps its
    /// old place, whose data nothing overwrites before the erases.
    fn persist_changed(&mut self) {
        if self.dirty.is_empty() && self.dirty_late.is_empty() {
            return;
        }
        let mut late = std::mem::take(&mut self.dirty_late);
        late.sort_unstable();
        late.dedup();
        let mut early = std::mem::take(&mut self.dirty);
        early.sort_unstable();
        early.dedup();
        early.retain(|l| late.binary_search(l).is_err());
        self.write_entries(&early, false);
        self.write_entries(&late, true);
        early.clear();
        late.clear();
        self.dirty = early;
        self.dirty_late = late;
    }

    /// PCM writes of the entries of `lpns` (sorted), one per run of consecutive LPNs, in
    /// `map` (or `late_map`); the entries are then unchanged.
    fn write_entries(&mut self, lpns: &[u32], late: bool) {
        let mut i = 0;
        while i < lpns.len() {
            let first = lpns[i];
            let mut n = 1;
            while i + n < lpns.len() && lpns[i + n] == first + n as u32 {
                n += 1;
            }
            for &l in &lpns[i..i + n] {
                self.entries[l as usize].changed = false;
            }
            let op = RawOp::PcmWrite {
                addr: self.map_base + first as u64 * self.entry_bytes,
                len: n as u64 * self.entry_bytes,
            };
            self.counters.map_writes += 1;
            self.counters.map_bytes_written += n as u64 * self.entry_bytes;
            if late {
                self.plan.late_map.push(op);
            } else {
                self.plan.map.push(op);
            }
            i += n;
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
            return Err(Error::config(format!(
                "hfsl: the {} pool has no PCM slot (set hfsl.cache_ratio between 0 and 1 exclusive, or another hfsl.fusion_method)",
                if cache { "cache" } else { "same-level" }
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

    /// Move `lpn` (already unlinked) out of PCM, if there, into a new NAND page of the `hot`
    /// or cold stream, with `bits` of it overwritten by version `version`; what it had
    /// elsewhere is read and merged.
    fn move_to_nand(&mut self, lpn: u32, bits: u8, version: u32, hot: bool) -> Result<()> {
        let e = self.entries[lpn as usize];
        let n = self.sub_pages as usize;
        let mut merged = vec![0u32; if self.versions.is_some() { n } else { 0 }];
        match e.loc {
            Loc::Pcm => {
                let missing = e.state & !bits;
                if missing != 0 {
                    // Whole sub-pages the write does not cover come from PCM.
                    let bytes = missing.count_ones() as u64 * self.sub_page;
                    self.pcm_read(e.addr, 0, bytes);
                }
                if let Some((pv, _)) = self.versions.as_ref() {
                    for (s, m) in merged.iter_mut().enumerate() {
                        if e.state & (1 << s) != 0 {
                            *m = pv[e.addr as usize * n + s];
                        }
                    }
                }
                self.released.push((e.cache, e.addr));
            }
            Loc::Nand => {
                if bits != self.full_state {
                    // A partial overwrite of a NAND page: read, merge, program (counted as an
                    // update too: NAND data read to merge with a write).
                    self.plan.reads.push(RawOp::NandRead { page: e.addr });
                    self.counters.nand_reads += 1;
                    self.counters.nand_updates += 1;
                }
                if let Some((_, nv)) = self.versions.as_ref() {
                    merged.copy_from_slice(&nv[e.addr as usize * n..(e.addr as usize + 1) * n]);
                }
                self.invalidate(e.addr);
            }
            Loc::Unmapped => {}
        }
        for (s, m) in merged.iter_mut().enumerate() {
            if bits & (1 << s) != 0 {
                *m = version;
            }
        }
        let page = self.allocate(hot)?;
        self.program(page, lpn, &merged);
        let e = &mut self.entries[lpn as usize];
        e.loc = Loc::Nand;
        e.addr = page;
        e.state = 0;
        e.cache = false;
        Ok(())
    }

    fn write_nand(&mut self, lpn: u32, bits: u8, version: u32, hot: bool) -> Result<()> {
        self.move_to_nand(lpn, bits, version, hot)?;
        self.entries[lpn as usize].tick = self.tick;
        Ok(())
    }

    fn program(&mut self, page: u32, lpn: u32, versions: &[u32]) {
        self.plan.writes.push(RawOp::NandProgram { page });
        self.counters.nand_programs += 1;
        self.p2l[page as usize] = lpn + 1;
        self.valid[(page / self.pages_per_block) as usize] += 1;
        let n = self.sub_pages as usize;
        if let Some((_, nv)) = self.versions.as_mut() {
            nv[page as usize * n..(page as usize + 1) * n].copy_from_slice(versions);
        }
    }

    fn invalidate(&mut self, page: u32) {
        self.p2l[page as usize] = 0;
        self.valid[(page / self.pages_per_block) as usize] -= 1;
    }

    /// The next NAND page for `hot` (or cold) data, striped over the dies (channel first),
    /// collecting first on a die short of free blocks. A die with no block to open now (a
    /// logical page may live on any die) passes the page to the next: the blocks its
    /// collections free are erased after the request, and more of the logical space may have
    /// come to live on it than on the others.
    fn allocate(&mut self, hot: bool) -> Result<u32> {
        let t = if hot && self.wear_aware { HOT } else { COLD };
        let ppb = self.pages_per_block;
        for _ in 0..self.stripe.len() {
            let d = self.stripe[self.cursor] as usize;
            self.cursor = (self.cursor + 1) % self.stripe.len();
            if self.dies[d].next_page[t] == ppb
                && self.gc
                && (self.dies[d].free.len() as u32) < self.gc_free_blocks
            {
                self.collect(d, t)?;
            }
            if self.dies[d].next_page[t] == ppb && !self.dies[d].free.is_empty() {
                self.open_next(d, t)?;
            }
            if self.dies[d].next_page[t] < ppb {
                return Ok(self.take_page(d, t));
            }
        }
        // Without GC a block is written once: the workload outgrew the NAND. With GC the
        // spare blocks keep one free, so running out everywhere is a bug.
        Err(if self.gc {
            Error::device("hfsl: no die has a free NAND block".into())
        } else {
            let blocks = self.valid.len();
            Error::job(format!(
                "hfsl: the dies have written all their {blocks} NAND blocks and hfsl.gc is off, so none is erased for reuse; turn hfsl.gc on, or write less"
            ))
        })
    }

    fn take_page(&mut self, d: usize, t: usize) -> u32 {
        let die = &mut self.dies[d];
        let p = die.open[t] * self.pages_per_block + die.next_page[t];
        die.next_page[t] += 1;
        p
    }

    /// Open a free block on die `d` for stream `t`: with wear-aware allocation the most worn
    /// free block for cold data, the least worn for hot (§2.6.1 (b)); else the next free one.
    fn open_next(&mut self, d: usize, t: usize) -> Result<()> {
        let die = &self.dies[d];
        let pick = if self.wear_aware {
            let wear = |i: &usize| self.erase_counts[die.free[*i] as usize];
            if t == COLD {
                (0..die.free.len()).rev().max_by_key(wear)
            } else {
                (0..die.free.len()).rev().min_by_key(wear)
            }
        } else {
            die.free.len().checked_sub(1)
        };
        let Some(i) = pick else {
            return Err(Error::device(format!(
                "hfsl: die {d} has no free NAND block"
            )));
        };
        let die = &mut self.dies[d];
        let b = die.free.remove(i);
        self.free_block[b as usize] = false;
        die.open[t] = b;
        die.next_page[t] = 0;
        Ok(())
    }

    /// Greedy GC on die `d`, whose stream `t` has filled its block: the written block with the
    /// fewest valid pages (the one just filled included; not a block open with room) gives
    /// them up to a block opened for stream `t` (which has room: the victim has fewer valid
    /// pages than a block) and is erased. The moves go where the
    /// stream that needs a block writes, not always to the cold stream, so that each block a
    /// die opens pays for itself with one collection, as with one stream: moving them to the
    /// cold stream's block would open blocks for them in bursts (at 60 valid pages of 64, 15
    /// for the 16 collections one hot block needs) that the spares cannot cover.
    /// Returns whether it ran (and opened a block for stream `t`).
    fn collect(&mut self, d: usize, t: usize) -> Result<bool> {
        let ppb = self.pages_per_block;
        let blocks_per_die = self.valid.len() as u32 / self.dies.len() as u32;
        let first = d as u32 * blocks_per_die;
        let die = &self.dies[d];
        // The first of the fewest valid pages: a block without any cannot be beaten.
        let mut victim: Option<u32> = None;
        for b in first..first + blocks_per_die {
            if self.free_block[b as usize] || die.open_with_room(b, ppb) {
                continue;
            }
            if victim.is_none_or(|v| self.valid[b as usize] < self.valid[v as usize]) {
                victim = Some(b);
                if self.valid[b as usize] == 0 {
                    break;
                }
            }
        }
        let Some(victim) = victim else {
            return Ok(false);
        };
        let moving = self.valid[victim as usize];
        if moving == ppb || (moving > 0 && die.free.is_empty()) {
            return Ok(false);
        }
        self.counters.gc_runs += 1;
        if moving > 0 {
            self.open_next(d, t)?;
        }
        for page in victim * ppb..(victim + 1) * ppb {
            let Some(lpn) = self.p2l[page as usize].checked_sub(1) else {
                continue;
            };
            self.plan.reads.push(RawOp::NandRead { page });
            self.relocate(page, lpn, d, t);
            self.touch(lpn, false);
        }
        let erase = self.erase(victim);
        self.plan.erases.push(erase);
        // Free once its erase ran: from the next request on (the driver runs them in order).
        self.erased.push((d as u32, victim));
        self.free_block[victim as usize] = true;
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
