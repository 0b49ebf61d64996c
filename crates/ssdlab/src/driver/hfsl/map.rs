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

use std::collections::BTreeSet;

use crate::config::{FusionMethod, HfslConfig};
use crate::ctrl::fusion::HardwareInfo;
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
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub reads: Vec<RawOp>,
    pub writes: Vec<RawOp>,
    pub erases: Vec<RawOp>,
}

impl Plan {
    fn clear(&mut self) {
        self.reads.clear();
        self.writes.clear();
        self.erases.clear();
    }

    /// Every command, in phase order.
    pub fn ops(&self) -> impl Iterator<Item = &RawOp> {
        self.reads.iter().chain(&self.writes).chain(&self.erases)
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

    fn contains(&self, lpn: u32) -> bool {
        self.bits(lpn)
            .all(|b| self.words[(b / 64) as usize] & (1 << (b % 64)) != 0)
    }

    fn record(&mut self, lpn: u32) {
        if self.recorded == self.window {
            self.words.fill(0);
            self.recorded = 0;
        }
        self.recorded += 1;
        let set: Vec<u64> = self.bits(lpn).collect();
        for b in set {
            self.words[(b / 64) as usize] |= 1 << (b % 64);
        }
    }
}

struct Die {
    free: Vec<u32>,
    open: u32,
    next_page: u32,
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
    /// Tests: the version each place holds, per sub-page (slot-major in PCM, page-major in
    /// NAND), moved along with the data.
    versions: Option<(Vec<u32>, Vec<u32>)>,
}

/// Blocks of each die the logical space may not use: GC's reserve and the block it writes to.
fn spare_blocks(cfg: &HfslConfig) -> u32 {
    if cfg.gc {
        cfg.gc_free_blocks + 1
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
            return Err(Error::Config(format!("field `{f}`: {m}")));
        }
        let sub_pages = (page / cfg.sub_page.0) as u32;
        let slots = (hw.pcm_bytes / page).min(u32::MAX as u64 - 1) as u32;
        let cache_slots = match cfg.fusion_method {
            FusionMethod::SameLevel => 0,
            FusionMethod::Cache => slots,
            FusionMethod::Both => (slots as f64 * cfg.cache_ratio).round() as u32,
        };
        let dies_n = hw.nand_channels * hw.nand_chips_per_channel;
        let blocks_per_die = hw.nand_blocks / dies_n;
        let usable = usable_pages(cfg, hw);
        if logical_pages as u64 > usable {
            return Err(Error::Config(format!(
                "hfsl logical pages: got {logical_pages}, expected at most {usable} (the NAND's pages less {} spare blocks per die)",
                spare_blocks(cfg)
            )));
        }
        let pages = hw.nand_blocks as usize * hw.nand_pages_per_block as usize;
        let dies = (0..dies_n)
            .map(|d| {
                let first = d * blocks_per_die;
                let mut free: Vec<u32> = (first..first + blocks_per_die).rev().collect();
                let open = free.pop().expect("a die has blocks");
                Die {
                    free,
                    open,
                    next_page: 0,
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
            dies,
            stripe,
            cursor: 0,
            same: Pool::new(cache_slots..slots, true),
            cache: Pool::new(0..cache_slots, false),
            tick: 0,
            counters: HfslCounters::default(),
            plan: Plan::default(),
            erased: Vec::new(),
            versions: None,
        })
    }

    pub fn logical_pages(&self) -> u32 {
        self.entries.len() as u32
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
            return Err(Error::Job(format!(
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
    }

    /// Sub-page bits of `lpn` that `offset..offset+len` covers (rounded out to sub-pages).
    fn covered(&self, lpn: u32, offset: u64, len: u64) -> (u8, u64) {
        let base = lpn as u64 * self.page_bytes;
        let s = offset.max(base) - base;
        let e = (offset + len).min(base + self.page_bytes) - base;
        let first = s / self.sub_page;
        let last = (e - 1) / self.sub_page;
        let mut bits = 0u8;
        for b in first..=last {
            bits |= 1 << b;
        }
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
                Loc::Unmapped => {}
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
            self.tick += 1;
            let (bits, bytes) = self.covered(lpn, offset, len);
            let base = lpn as u64 * self.page_bytes;
            let within = offset.max(base) - base;
            // Out of its pool's victim order while its key changes.
            self.unlink(lpn);
            // Hot if written since the filter was last cleared (before this write).
            let hot = self.bloom.contains(lpn);
            self.bloom.record(lpn);
            let e = &mut self.entries[lpn as usize];
            e.counter = e.counter.saturating_add(1);
            e.changed = true;
            let to_cache = match self.method {
                FusionMethod::SameLevel => false,
                FusionMethod::Cache => true,
                FusionMethod::Both => !small,
            };
            if small || to_cache {
                self.counters.writes_to_pcm += 1;
                self.write_pcm(lpn, bits, within, bytes, to_cache, version)?;
            } else {
                self.counters.writes_to_nand += 1;
                self.write_nand(lpn, bits, version, hot)?;
            }
        }
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

    fn pcm_write(&mut self, slot: u32, within: u64, len: u64) {
        let addr = slot as u64 * self.page_bytes + within;
        self.plan.writes.push(RawOp::PcmWrite { addr, len });
        self.counters.pcm_writes += 1;
        self.counters.pcm_bytes_written += len;
    }

    /// Put `bits` of `lpn` (`bytes` at `within` of its page) into PCM, in the cache pool or the
    /// same-level one.
    fn write_pcm(
        &mut self,
        lpn: u32,
        bits: u8,
        within: u64,
        bytes: u64,
        cache: bool,
        version: u32,
    ) -> Result<()> {
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
            self.pcm_write(e.addr, within, bytes);
            self.set_pcm_versions(e.addr, bits, version);
            return Ok(());
        }
        let slot = self.take_slot(cache)?;
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
            self.pcm_write(slot, 0, self.page_bytes);
        } else {
            self.pcm_write(slot, within, bytes);
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
        Ok(())
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

    /// A free slot of a pool, evicting its victim to NAND if it has none.
    fn take_slot(&mut self, cache: bool) -> Result<u32> {
        if let Some(s) = self.pool(cache).free.pop() {
            return Ok(s);
        }
        let Some(&(_, _, victim)) = self.pool(cache).order.first() else {
            return Err(Error::Config(format!(
                "hfsl: the {} pool has no PCM slot (set hfsl.cache_ratio between 0 and 1 exclusive, or another hfsl.fusion_method)",
                if cache { "cache" } else { "same-level" }
            )));
        };
        self.counters.evictions += 1;
        self.unlink(victim);
        // The coldest (or least recent) page of its pool: cold data.
        self.move_to_nand(victim, 0, 0, false)?;
        Ok(self.pool(cache).free.pop().expect("the victim's slot"))
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
                self.pool(e.cache).free.push(e.addr);
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
    /// collecting first on a die short of free blocks.
    fn allocate(&mut self, hot: bool) -> Result<u32> {
        let d = self.stripe[self.cursor] as usize;
        self.cursor = (self.cursor + 1) % self.stripe.len();
        if self.dies[d].next_page == self.pages_per_block {
            let collected = self.gc
                && (self.dies[d].free.len() as u32) < self.gc_free_blocks
                && self.collect(d)?;
            if !collected {
                self.open_next(d, hot)?;
            }
        }
        Ok(self.take_page(d))
    }

    fn take_page(&mut self, d: usize) -> u32 {
        let die = &mut self.dies[d];
        let p = die.open * self.pages_per_block + die.next_page;
        die.next_page += 1;
        p
    }

    /// Open a free block on die `d` for the `hot` (or cold) data that needs it: with wear-aware
    /// allocation the most worn free block for cold data, the least worn for hot (§2.6.1 (b));
    /// else the next free one. (One block is open per die, so the block takes the temperature
    /// of the write that opens it.)
    fn open_next(&mut self, d: usize, hot: bool) -> Result<()> {
        let die = &self.dies[d];
        let pick = if self.wear_aware {
            let wear = |i: &usize| self.erase_counts[die.free[*i] as usize];
            if !hot {
                (0..die.free.len()).rev().max_by_key(wear)
            } else {
                (0..die.free.len()).rev().min_by_key(wear)
            }
        } else {
            die.free.len().checked_sub(1)
        };
        let Some(i) = pick else {
            // Without GC a block is written once: the workload outgrew the NAND. With GC the
            // spare blocks keep one free, so running out is a bug.
            return Err(if self.gc {
                Error::Sim(format!("hfsl: die {d} has no free NAND block"))
            } else {
                let blocks = self.valid.len() / self.dies.len();
                Error::Job(format!(
                    "hfsl: die {d} has written all its {blocks} NAND blocks and hfsl.gc is off, so none is erased for reuse; turn hfsl.gc on, or write less"
                ))
            });
        };
        let die = &mut self.dies[d];
        let b = die.free.remove(i);
        die.open = b;
        die.next_page = 0;
        Ok(())
    }

    /// Greedy GC on die `d`: the full block with the fewest valid pages gives them up to the
    /// open block (which has room: the die is collected only when its open block is full, and
    /// a fresh one is opened from the spares first) and is erased.
    /// Returns whether it ran (and opened a block for the moves, which has room left).
    fn collect(&mut self, d: usize) -> Result<bool> {
        let ppb = self.pages_per_block;
        let blocks_per_die = self.valid.len() as u32 / self.dies.len() as u32;
        let first = d as u32 * blocks_per_die;
        let open = self.dies[d].open;
        let victim = (first..first + blocks_per_die)
            .filter(|&b| {
                b != open
                    && !self.dies[d].free.contains(&b)
                    && !self.erased.contains(&(d as u32, b))
            })
            .min_by_key(|&b| (self.valid[b as usize], b));
        let Some(victim) = victim else {
            return Ok(false);
        };
        if self.valid[victim as usize] == ppb {
            return Ok(false);
        }
        self.counters.gc_runs += 1;
        // The moves are cold data: they outlived the rest of their block.
        self.open_next(d, false)?;
        let n = self.sub_pages as usize;
        for page in victim * ppb..(victim + 1) * ppb {
            let Some(lpn) = self.p2l[page as usize].checked_sub(1) else {
                continue;
            };
            self.plan.reads.push(RawOp::NandRead { page });
            self.counters.nand_reads += 1;
            let versions = self.versions.as_ref().map_or(Vec::new(), |(_, nv)| {
                nv[page as usize * n..(page as usize + 1) * n].to_vec()
            });
            self.invalidate(page);
            let to = self.take_page(d);
            self.program(to, lpn, &versions);
            self.entries[lpn as usize].addr = to;
            self.counters.gc_pages_moved += 1;
        }
        self.plan.erases.push(RawOp::NandErase { block: victim });
        self.counters.nand_erases += 1;
        self.erase_counts[victim as usize] += 1;
        // Free once its erase ran: from the next request on (the driver runs them in order).
        self.erased.push((d as u32, victim));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 2 channels × 2 chips, 6 blocks of 8 pages each, 2 KiB pages; `slots` PCM pages.
    fn hw(slots: u64) -> HardwareInfo {
        HardwareInfo {
            nand_channels: 2,
            nand_chips_per_channel: 2,
            nand_page_bytes: 2048,
            nand_pages_per_block: 8,
            nand_blocks: 24,
            nand_bytes: 24 * 8 * 2048,
            pcm_channels: 2,
            pcm_chips_per_channel: 8,
            pcm_bytes: slots * 2048,
            pcm_line_bytes: 512,
            pcm_min_access_bytes: 2,
        }
    }

    fn cfg(method: FusionMethod, ssw: u64) -> HfslConfig {
        HfslConfig {
            fusion_method: method,
            ssw: crate::config::Bytes(ssw),
            ..HfslConfig::default()
        }
    }

    impl HfslMap {
        /// The map and the NAND bookkeeping agree.
        fn check_invariants(&self) {
            let ppb = self.pages_per_block;
            for (b, &v) in self.valid.iter().enumerate() {
                let mapped = (b as u32 * ppb..(b as u32 + 1) * ppb)
                    .filter(|&p| self.p2l[p as usize] != 0)
                    .count() as u32;
                assert_eq!(v, mapped, "block {b}");
            }
            for (lpn, e) in self.entries.iter().enumerate() {
                match e.loc {
                    Loc::Nand => assert_eq!(self.p2l[e.addr as usize], lpn as u32 + 1),
                    Loc::Pcm => {
                        let pool = if e.cache { &self.cache } else { &self.same };
                        assert!(pool.order.contains(&pool.key(e, lpn as u32)));
                        assert!(e.state != 0);
                    }
                    Loc::Unmapped => {}
                }
            }
        }
    }

    #[test]
    fn the_cache_pool_is_lru_a_read_hit_keeps_a_page_in_pcm() {
        // Two PCM slots, all cache: A and B written, A read, C written: B leaves, not A.
        let mut m = HfslMap::new(&cfg(FusionMethod::Cache, 512), &hw(2), 8).unwrap();
        m.write(0, 2048, false, 1).unwrap();
        m.write(2048, 2048, false, 2).unwrap();
        m.read(0, 512).unwrap();
        m.write(4096, 2048, false, 3).unwrap();
        assert_eq!(m.entry(0).loc, Loc::Pcm);
        assert_eq!(m.entry(1).loc, Loc::Nand);
        m.check_invariants();
    }

    #[test]
    fn the_bloom_filter_holds_what_it_recorded_until_its_window_ends() {
        let mut b = Bloom::new(1 << 12, 2, 100);
        for lpn in 0..100 {
            assert!(!b.contains(1000 + lpn) || lpn > 0, "empty filter");
            b.record(lpn);
        }
        assert!((0..100).all(|lpn| b.contains(lpn)));
        // 100 pages × 2 bits in 4,096: a false positive now and then, not often.
        let false_hot = (10_000..20_000).filter(|&l| b.contains(l)).count();
        assert!(false_hot < 300, "{false_hot}");
        // The 101st record clears the filter first: only it is hot then.
        b.record(500);
        assert!(b.contains(500));
        assert!((0..100).filter(|&l| b.contains(l)).count() < 5);
    }

    #[test]
    fn cold_data_opens_the_most_worn_free_block_and_hot_data_the_least_worn() {
        let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(4), 8).unwrap();
        // Die 0 holds blocks 0-5; block 0 is open, 1-5 free.
        for (b, n) in [(1, 7), (2, 3), (3, 9), (4, 1), (5, 5)] {
            m.erase_counts[b] = n;
        }
        m.open_next(0, false).unwrap();
        assert_eq!(m.dies[0].open, 3);
        m.open_next(0, true).unwrap();
        assert_eq!(m.dies[0].open, 4);
        let mut off = HfslMap::new(
            &HfslConfig {
                wear_aware: false,
                ..cfg(FusionMethod::SameLevel, 512)
            },
            &hw(4),
            8,
        )
        .unwrap();
        off.erase_counts[3] = 9;
        off.open_next(0, false).unwrap();
        assert_eq!(off.dies[0].open, 1, "in order when off");
    }

    #[test]
    fn small_writes_go_to_pcm_and_a_small_write_to_a_nand_page_is_an_update() {
        let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 1024), &hw(8), 40).unwrap();
        // 512 B < SSW into an unmapped page: PCM, nothing read.
        let p = m.write(0, 512, false, 1).unwrap();
        assert_eq!(p.reads, vec![]);
        assert_eq!(p.writes, vec![RawOp::PcmWrite { addr: 0, len: 512 }]);
        assert_eq!(m.entry(0).loc, Loc::Pcm);
        assert_eq!(m.entry(0).state, 0b0001);
        // A page-sized write: NAND, on the first die of the stripe.
        let p = m.write(2048, 2048, false, 2).unwrap();
        assert_eq!(p.writes, vec![RawOp::NandProgram { page: 0 }]);
        // The next page goes to the other channel (die 2 of chips-per-channel 2: block 12).
        let p = m.write(4096, 2048, false, 3).unwrap();
        assert_eq!(p.writes, vec![RawOp::NandProgram { page: 12 * 8 }]);
        // A small write to LPN 1, in NAND: read, merge, the whole page to PCM (slot 1).
        let p = m.write(2048 + 1024, 512, false, 4).unwrap();
        assert_eq!(p.reads, vec![RawOp::NandRead { page: 0 }]);
        assert_eq!(
            p.writes,
            vec![RawOp::PcmWrite {
                addr: 2048,
                len: 2048
            }]
        );
        assert_eq!(m.counters.nand_updates, 1);
        assert_eq!(m.entry(1).state, 0b1111);
        assert_eq!(m.entry(1).counter, 2);
        assert!(m.entry(1).changed);
        // A metadata write is small whatever its size.
        m.write(6 * 2048, 2048, true, 5).unwrap();
        assert_eq!(m.entry(6).loc, Loc::Pcm);
        assert_eq!(m.where_data_lives(), (3, 1));
        m.check_invariants();
    }

    #[test]
    fn a_full_pcm_moves_its_coldest_page_to_nand() {
        let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 2048), &hw(2), 40).unwrap();
        m.write(0, 512, false, 1).unwrap();
        m.write(0, 512, false, 2).unwrap(); // LPN 0 is hotter
        m.write(2048, 512, false, 3).unwrap();
        let p = m.write(4096, 512, false, 4).unwrap();
        // LPN 1 (written once) leaves: its sub-page read from PCM, programmed to NAND.
        assert_eq!(
            p.reads,
            vec![RawOp::PcmRead {
                addr: 2048,
                len: 512
            }]
        );
        assert_eq!(p.writes.len(), 2);
        assert_eq!(m.entry(1).loc, Loc::Nand);
        assert_eq!(m.entry(0).loc, Loc::Pcm);
        assert_eq!(m.counters.evictions, 1);
    }

    #[test]
    fn bad_requests_and_settings_are_errors() {
        let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(8), 40).unwrap();
        assert!(m.write(40 * 2048, 512, false, 1).is_err());
        assert!(m.read(0, 0).is_err());
        assert!(m.read(u64::MAX, 2).is_err());
        let e = HfslMap::new(&cfg(FusionMethod::SameLevel, 4096), &hw(8), 40)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("hfsl.ssw") && e.contains("4096"), "{e}");
        let e = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(8), 1000)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("logical pages"), "{e}");
    }

    #[test]
    fn gc_makes_room_and_without_it_the_nand_runs_out() {
        // 40 pages rewritten 10 times: 400 programs on 192 physical pages.
        let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(2), 40).unwrap();
        m.track_versions();
        for round in 0..10u32 {
            for lpn in 0..40u64 {
                m.write(lpn * 2048, 2048, false, round * 40 + lpn as u32 + 1)
                    .unwrap();
            }
        }
        assert!(m.counters.gc_runs > 0 && m.counters.nand_erases == m.counters.gc_runs);
        m.check_invariants();
        for lpn in 0..40u32 {
            assert_eq!(m.versions_of(lpn), vec![9 * 40 + lpn + 1; 4]);
        }
        let off = HfslConfig {
            gc: false,
            ..cfg(FusionMethod::SameLevel, 512)
        };
        let mut m = HfslMap::new(&off, &hw(2), 40).unwrap();
        let e = (0..400u64)
            .find_map(|i| m.write((i % 40) * 2048, 2048, false, 1).err())
            .expect("runs out")
            .to_string();
        assert!(
            e.contains("has written all its 6 NAND blocks") && e.contains("hfsl.gc is off"),
            "{e}"
        );
    }

    #[derive(Clone, Debug)]
    enum Io {
        Write {
            sector: u64,
            sectors: u64,
            meta: bool,
        },
        Read {
            sector: u64,
            sectors: u64,
        },
    }

    fn io(pages: u64) -> impl Strategy<Value = Io> {
        let sectors = pages * 4;
        prop_oneof![
            (0..sectors, 1u64..12, any::<bool>()).prop_map(move |(s, n, meta)| Io::Write {
                sector: s,
                sectors: n.min(sectors - s),
                meta: meta && n < 4,
            }),
            (0..sectors, 1u64..12).prop_map(move |(s, n)| Io::Read {
                sector: s,
                sectors: n.min(sectors - s),
            }),
        ]
    }

    fn method() -> impl Strategy<Value = (FusionMethod, f64)> {
        prop_oneof![
            Just((FusionMethod::SameLevel, 0.5)),
            Just((FusionMethod::Cache, 0.5)),
            Just((FusionMethod::Both, 0.5)),
            Just((FusionMethod::Both, 0.25)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        /// Under random writes (small, large, metadata), reads, evictions and GC, every
        /// sub-page reads back the version last written to it.
        #[test]
        fn the_map_matches_a_plain_oracle(
            (m_kind, ratio) in method(),
            ssw in prop_oneof![Just(512u64), Just(1024), Just(2048)],
            slots in 2u64..6,
            wear_aware in any::<bool>(),
            ios in proptest::collection::vec(io(40), 1..400),
        ) {
            let c = HfslConfig { cache_ratio: ratio, wear_aware, ..cfg(m_kind, ssw) };
            let mut m = HfslMap::new(&c, &hw(slots), 40).unwrap();
            m.track_versions();
            let mut oracle = vec![[0u32; 4]; 40];
            for (v, io) in ios.iter().enumerate() {
                let v = v as u32 + 1;
                match *io {
                    Io::Write { sector, sectors, meta } => {
                        m.write(sector * 512, sectors * 512, meta, v).unwrap();
                        for s in sector..sector + sectors {
                            oracle[(s / 4) as usize][(s % 4) as usize] = v;
                        }
                    }
                    Io::Read { sector, sectors } => {
                        let p = m.read(sector * 512, sectors * 512).unwrap();
                        prop_assert!(p.writes.is_empty() && p.erases.is_empty());
                    }
                }
                m.check_invariants();
                for (lpn, want) in oracle.iter().enumerate() {
                    prop_assert_eq!(&m.versions_of(lpn as u32)[..], &want[..], "lpn {}", lpn);
                }
            }
        }
    }
}
