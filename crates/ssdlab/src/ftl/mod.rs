//! Page-level FTL: the logical→physical map, striped allocation, garbage collection, wear
//! levelling and TRIM.
//!
//! The FTL is functional: it decides *what* happens to the map and the blocks. The controller
//! decides *when*, by turning the GC work the FTL emits ([`GcTask`]) into timed NAND operations.
//! Two modes:
//! - *timed*: a GC victim's valid units are remapped at once, the block waits as `Victim` until
//!   the controller reports its erase done ([`Ftl::erase_done`]), so free space follows timing;
//! - *instant* (preconditioning): the erase is applied at once and no work is emitted.
//!
//! The unit of mapping is the map unit (by default one NAND page). "lpn" names a logical unit,
//! "pun" a physical one (see `media::nand` for the address layout).

use crate::config::{GcPolicy, Placement, SsdConfig, StreamPolicy};
use crate::error::Result;
use crate::media::nand::Geometry;
use crate::sim::mem::{
    advise_huge, big_vec, prefault, prefetch, written_bytes, zero_bytes_vec, zeroed_vec, ZeroBytes,
};
use crate::sim::Rng;

mod alloc;
mod checkpoint;
pub mod fdp;
mod fill;
mod free_list;
mod gc;
pub mod hybrid;
pub mod mapping_cache;
mod precondition;
mod state;
pub mod state_io;
mod steady;
mod translation;
use fill::{FillLayout, AS_FILLED};
use free_list::FreeList;
use mapping_cache::MappingCache;
pub use steady::SteadyState;
pub use translation::{AnyFtl, CachedFtl, FullMap, Translation};

pub const UNMAPPED: u32 = u32::MAX;
/// "No block" (and "no unit") in the FTL's tables and its GC tasks.
pub const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    /// The state of a block never written ([`Block::FRESH`]): zero, so that a fresh block's
    /// record is all zero bytes.
    Free = 0,
    Open,
    Full,
    /// Chosen by GC: its valid units are moved; it waits for its erase.
    Victim,
    /// Retired (worn out at its P/E limit, or bad from the factory): never allocated again.
    Bad,
}

#[derive(Clone, Copy, Debug)]
pub struct Block {
    pub valid: u32,
    pub erase_count: u32,
    /// Bumped at every erase, so an erase that was already applied is not applied twice.
    pub epoch: u32,
    pub state: BlockState,
    pub write_ptr: u32,
    /// FTL write clock of the last write into this block (age for cost-benefit).
    pub last_write: u64,
    /// Host writes that replaced data of this block and whose programs have not finished: GC
    /// prefers other victims meanwhile, since erasing this block would destroy the only copy
    /// on flash of what those writes replace (a power cut would then leave neither the old
    /// data nor the new; docs/power-loss.md).
    pub overwrites_in_flight: u32,
    /// The end of the units from the block's start known programmed without their bits in
    /// [`Ftl::programmed`], as a physical unit (the block's first unit plus their count; 0:
    /// none): a drive laid out by preconditioning or loaded from a saved state is at rest, so
    /// its blocks' units below their write pointers are programmed, and saying so here spares
    /// setting (and backing with memory) a bit per unit of the whole drive. Later programs
    /// land at or past it, so their bits lie past it too; an erase sets it to 0. Absolute, so
    /// that [`Ftl::is_programmed`] compares without working out the unit's offset.
    pub programmed_below: u32,
}

impl Block {
    /// A block never written: free, never erased.
    pub const FRESH: Block = Block {
        valid: 0,
        erase_count: 0,
        epoch: 0,
        state: BlockState::Free,
        write_ptr: 0,
        last_write: 0,
        overwrites_in_flight: 0,
        programmed_below: 0,
    };
}

// SAFETY: every field is an integer or `BlockState`, whose zero is `Free`: all zero bytes
// are `Block::FRESH`.
unsafe impl ZeroBytes for Block {}

#[derive(Clone, Debug, Default)]
struct Plane {
    free: FreeList,
    host_open: u32,
    gc_open: u32,
    /// GC tasks emitted for this plane and not yet erased.
    gc_inflight: u32,
}

/// How urgently a plane's GC needs its die (`Ord`: the most urgent plane of a die decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Urgency {
    None,
    /// Short of space: GC and host writes take turns (`ftl.gc.preemptible`).
    Soft,
    /// GC outranks host writes.
    Hard,
}

/// Which open block a write goes to: host data and GC-moved data are kept apart, and so are
/// the host's write streams (`ftl.streams`; stream 0 is the only one by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Host(u8),
    /// GC's moves: the plane's GC block (with `ftl.gc.per_stream`, stream 0's moved data).
    Gc,
    /// With `ftl.gc.per_stream`: the GC block for the moved data of host stream s ≥ 1.
    GcOf(u8),
}

/// `block_stream` of a block GC opened: it holds moved data of any stream.
pub const GC_STREAM: u8 = u8::MAX;

/// One host write stream's counters (`ftl.streams` > 1): map units the host wrote into it, and
/// units GC moved whose data was last written by it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub host_units_written: u64,
    pub gc_units_moved: u64,
}

/// Write streams beyond the single host stream (`ftl.streams` > 1). Stream 0 keeps the
/// plane's `host_open` and the FTL's `cursor`, so a single stream runs as before.
#[derive(Clone, Debug)]
struct Streams {
    count: u32,
    /// Open block of stream s ≥ 1 in plane p at `(p × (count − 1)) + s − 1`.
    open: Vec<u32>,
    /// `ftl.gc.per_stream`: GC's open block for the moved data of stream s ≥ 1, indexed as
    /// `open` (empty otherwise: all moved data shares the plane's GC block).
    gc_open: Vec<u32>,
    /// Stripe cursor of stream s ≥ 1 at `s − 1`: each stream stripes its own pages.
    cursor: Vec<usize>,
    /// Per logical unit (translation pages included): the stream that last wrote it.
    lpn_stream: Vec<u8>,
    /// Per block: the stream whose open block it was (GC's: [`GC_STREAM`]).
    block_stream: Vec<u8>,
    stats: Vec<StreamStats>,
    /// `hot-cold`: per logical unit, the low 32 bits of the host write clock at its last
    /// write (0: never written); and the window within which a rewrite is hot.
    stamp: Vec<u32>,
    hot_window: u64,
}

/// GC work for the controller to time: copy each `(from, to)` unit, then erase `block`
/// (`u32::MAX` when a collection stopped early: copies only, nothing to erase).
#[derive(Clone, Debug)]
pub struct GcTask {
    pub plane: u32,
    pub block: u32,
    pub epoch: u32,
    /// `(from, to, epoch of to's block)`: the epoch as the move was decided, so a copy landing
    /// after that block was erased and reused does not mark the new data as programmed.
    pub moves: Vec<(u32, u32, u32)>,
    pub wear_level: bool,
}

#[derive(Clone, Debug, Default)]
pub struct FtlStats {
    pub host_units_written: u64,
    pub gc_units_moved: u64,
    pub gc_runs: u64,
    pub wl_migrations: u64,
    pub erases: u64,
    pub trimmed_units: u64,
    /// Allocations that found no free block and took a victim before its timed erase ran.
    pub forced_erases: u64,
    /// Collections started while the host left the device idle (`ftl.gc.background`); also
    /// counted in `gc_runs`.
    pub background_gc_runs: u64,
    /// Map pages the power-loss model's checkpoints programmed (`ftl/checkpoint.rs`; 0
    /// without the model).
    pub checkpoint_units_written: u64,
}

/// Wear-out state, with `[reliability]`: blocks retire at their P/E limit, and the drive turns
/// read-only once its good blocks no longer hold the logical space and what GC keeps free.
#[derive(Clone, Debug)]
pub struct Wear {
    pub pe_limit: u32,
    pub factory_bad_blocks: u64,
    pub retired_blocks: u64,
    pub good_blocks: u64,
    /// Good blocks below which the drive turns read-only: the logical space in whole blocks,
    /// plus per plane the urgent GC level, the block kept for GC and the two open blocks.
    pub min_good_blocks: u64,
    pub read_only: bool,
}

/// Why a write was not placed (with `[reliability]`; without, a failure is a simulator error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The drive has worn out into read-only mode.
    ReadOnly,
    /// No plane could take the write.
    NoSpace,
}

/// What [`Ftl::memory`] reports: the bytes each large table has allocated.
pub struct FtlMemory {
    pub map_bytes: u64,
    pub reverse_map_bytes: u64,
    pub programmed_bits_bytes: u64,
    pub block_records_bytes: u64,
    pub free_lists_bytes: u64,
}

/// The page FTL; `M` is what of its map controller memory holds (`translation.rs`): the whole
/// map ([`FullMap`], the `page` scheme) or a mapping cache of translation pages
/// ([`MappingCache`], the `cached` scheme). `M` is the last field, so that what does not depend
/// on it can borrow any page FTL as [`AnyFtl`].
pub struct Ftl<M: ?Sized = FullMap> {
    pub geo: Geometry,
    /// The map and the reverse map, stored as `entry ^ AS_FILLED` and read through
    /// [`Ftl::l2p_at`] / [`Ftl::p2l_at`]: a zero entry (never written, so never backed by
    /// memory) reads as the closed-form sequential fill or steady-state dealing in `fill` left
    /// it (`fill.rs`, `steady.rs`).
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    fill: FillLayout,
    /// One bit per physical unit past its block's `programmed_below`: its program has
    /// completed (data is on NAND, not in flight). Allocated zeroed, so memory backs only the
    /// parts where the run programmed something ([`Ftl::is_programmed`] reads a block's bits
    /// only past its prefix).
    programmed: Vec<u64>,
    /// One record a block, allocated zeroed ([`Block::FRESH`] is all zero bytes): the OS
    /// backs only the pages of blocks the run wrote.
    blocks: Vec<Block>,
    planes: Vec<Plane>,
    stripe: Vec<u32>,
    cursor: usize,
    /// `ftl.superblock_planes`: the stripe is cut into groups of this many planes, and host
    /// writes rotate within one group until its blocks are full (the whole stripe by default).
    superblock: usize,
    gc_threshold_blocks: u32,
    /// `ftl.gc.background`: the free-block level GC works up to while the device is idle (0:
    /// no background GC).
    background_blocks: u32,
    /// The host has left the device idle (background GC), set and cleared by the device.
    idle: bool,
    urgent_free_blocks: u32,
    /// Free blocks at or below which urgent GC outranks host writes outright; without
    /// `ftl.gc.preemptible` the same as `urgent_free_blocks`.
    hard_free_blocks: u32,
    policy: GcPolicy,
    dynamic_wl: bool,
    static_gap: u32,
    /// `ftl.placement`: which plane a host write goes to.
    placement: Placement,
    rng: Rng,
    clock: u64,
    instant: bool,
    /// GC work emitted in timed mode, drained by the controller.
    pub tasks: Vec<GcTask>,
    pub stats: FtlStats,
    /// Wear-out and bad blocks, when the config has `[reliability]`.
    pub wear: Option<Wear>,
    /// The host's logical units; with cached mapping the translation pages follow them in
    /// `l2p` (their entries are the global translation directory).
    data_units: u64,
    /// Write streams beyond the first, with `ftl.streams` > 1 (or `[fdp]`: its handles).
    streams: Option<Box<Streams>>,
    /// With `[fdp]`: its reclaim units' bookkeeping.
    fdp: Option<Box<fdp::FdpUnits>>,
    /// What steady-state preconditioning reached, when it ran.
    pub steady_state: Option<SteadyState>,
    /// The block whose data the last host write replaced ([`NONE`]: none), for the program
    /// that write makes to carry (see [`Block::overwrites_in_flight`]).
    overwrote: u32,
    /// The part of the map [`Ftl::expect_touches`] had the OS back (empty: none).
    l2p_backed: std::ops::Range<usize>,
    /// [`Ftl::expect_touches`] had the OS back the reverse map whole (and the programmed bits
    /// in huge pages).
    p2l_backed: bool,
    /// What of the map controller memory holds, told of each change of an entry in timed mode.
    pub translation: M,
}

/// The words of a bit table that bits `from..to` fall in, each with the mask of those bits.
fn bit_words(from: u64, to: u64) -> impl Iterator<Item = (usize, u64)> {
    let mut at = from;
    std::iter::from_fn(move || {
        if at >= to {
            return None;
        }
        let (word, bit) = ((at / 64) as usize, at % 64);
        let take = (64 - bit).min(to - at);
        at += take;
        let ones = if take == 64 {
            u64::MAX
        } else {
            (1u64 << take) - 1
        };
        Some((word, ones << bit))
    })
}

/// Set `count` bits of `bits` from bit `first`, a word at a time.
fn set_bits(bits: &mut [u64], first: u64, count: u64) {
    for (word, mask) in bit_words(first, first + count) {
        bits[word] |= mask;
    }
}

/// Whether bits `from..to` of `bits` are all `value`.
fn bits_all(bits: &[u64], from: u64, to: u64, value: bool) -> bool {
    bit_words(from, to).all(|(word, mask)| bits[word] & mask == if value { mask } else { 0 })
}

/// Clear bits `from..to` of `bits`, writing only the words that hold any (a word read as zero
/// is left alone, so a part of the table never written stays unbacked).
fn clear_bits(bits: &mut [u64], from: u64, to: u64) {
    for (word, mask) in bit_words(from, to) {
        if bits[word] & mask != 0 {
            bits[word] &= !mask;
        }
    }
}

impl Ftl {
    /// Bytes the tables [`Ftl::new`] allocates for `cfg` once a run has touched all of them
    /// (the map tables take memory only where written): the map and its translation
    /// directory, the reverse map, the programmed bits and the block records (the optional
    /// per-unit stream tables aside). Saturates rather than wraps.
    pub fn table_bytes(cfg: &SsdConfig) -> u64 {
        let geo = Geometry::from_config(cfg);
        let map_pages = cfg.translation_pages().map_or(0, |(_, pages)| pages);
        let units = geo.units();
        let entry = std::mem::size_of::<u32>() as u64;
        cfg.logical_units()
            .saturating_add(map_pages)
            .saturating_mul(entry)
            .saturating_add(units.saturating_mul(entry))
            .saturating_add(units.div_ceil(64).saturating_mul(8))
            .saturating_add(
                (geo.blocks() as u64).saturating_mul(std::mem::size_of::<Block>() as u64),
            )
    }

    /// The page FTL with its whole map in controller memory (the `page` scheme).
    pub fn new(cfg: &SsdConfig, seed: u64) -> Ftl {
        Ftl::build(cfg, seed, cfg.logical_units(), FullMap)
    }
}

impl Ftl<MappingCache> {
    /// The page FTL with a demand-paged map (the `cached` scheme, `ftl.mapping = "cached"`):
    /// its translation pages after the host's units, and the mapping cache that holds those in
    /// use.
    pub fn cached(cfg: &SsdConfig, seed: u64) -> CachedFtl {
        let geo = Geometry::from_config(cfg);
        let (per_page, pages) = cfg
            .translation_pages()
            .expect("validation: ftl.mapping = \"cached\" has translation pages");
        let cache_bytes = cfg.ftl.mapping_cache.map_or(0, |b| b.0);
        let logical = cfg.logical_units();
        let entry_bytes = cfg
            .ftl
            .mapping_entry
            .map_or(crate::config::DEFAULT_MAPPING_ENTRY_BYTES, |b| b.0);
        let cache = MappingCache::new(
            per_page,
            entry_bytes,
            pages,
            logical,
            cache_bytes / geo.unit_bytes,
            !cfg.ftl.mapping_cache_location.is_dram(),
        );
        Ftl::build(cfg, seed, logical, cache)
    }
}

impl<M: Translation> Ftl<M> {
    /// The page FTL for `cfg` holding `logical` host units (the config's, or the steady-state
    /// model plane's share of a whole drive's, `steady.rs`), its map held as `translation`
    /// says.
    fn build(cfg: &SsdConfig, seed: u64, logical: u64, translation: M) -> Ftl<M> {
        let geo = Geometry::from_config(cfg);
        let logical = logical as usize;
        let map_pages = translation.pages() as usize;
        let units = geo.units() as usize;
        let bpp = geo.blocks_per_plane;
        let blocks: Vec<Block> = zero_bytes_vec(geo.blocks() as usize);
        let planes = (0..geo.planes())
            .map(|p| Plane {
                free: FreeList::range(p * bpp, (p + 1) * bpp),
                host_open: NONE,
                gc_open: NONE,
                gc_inflight: 0,
            })
            .collect();
        let gc = &cfg.ftl.gc;
        let stripe = geo.stripe_order(&cfg.ftl.allocation);
        let superblock = cfg.superblock_planes().map_or(stripe.len(), |d| d as usize);
        let mut ftl = Ftl {
            superblock,
            fill: FillLayout::none(&geo, &stripe, superblock),
            stripe,
            l2p: zeroed_vec(logical + map_pages),
            p2l: zeroed_vec(units),
            programmed: zeroed_vec(units.div_ceil(64)),
            blocks,
            planes,
            cursor: 0,
            gc_threshold_blocks: gc.threshold_blocks(bpp),
            background_blocks: gc.background_blocks(bpp, cfg.ftl.over_provisioning),
            idle: false,
            urgent_free_blocks: gc.urgent_free_blocks,
            hard_free_blocks: if gc.preemptible {
                gc.hard_free_blocks
            } else {
                gc.urgent_free_blocks
            },
            policy: gc.policy,
            dynamic_wl: cfg.ftl.wear_leveling.dynamic,
            static_gap: cfg.ftl.wear_leveling.static_gap,
            placement: cfg.ftl.placement,
            rng: Rng::stream(seed, "ftl.gc"),
            clock: 0,
            instant: false,
            tasks: Vec::new(),
            stats: FtlStats::default(),
            wear: None,
            data_units: logical as u64,
            streams: None,
            fdp: None,
            steady_state: None,
            overwrote: NONE,
            l2p_backed: 0..0,
            p2l_backed: false,
            translation,
            geo,
        };
        // With `[fdp]` the streams are its reclaim unit handles, kept even with one handle
        // (its figures are the result's `device.fdp`).
        if cfg.write_streams() > 1 || cfg.fdp.is_some() {
            let k = cfg.write_streams();
            let hot_cold = cfg.ftl.stream_policy == StreamPolicy::HotCold;
            let lpns = logical + map_pages;
            ftl.streams = Some(Box::new(Streams {
                count: k,
                open: vec![NONE; ftl.planes.len() * (k as usize - 1)],
                gc_open: if cfg.gc_per_stream() {
                    vec![NONE; ftl.planes.len() * (k as usize - 1)]
                } else {
                    Vec::new()
                },
                cursor: vec![0; k as usize - 1],
                lpn_stream: big_vec(lpns, 0u8),
                block_stream: vec![0u8; ftl.blocks.len()],
                stats: vec![StreamStats::default(); k as usize],
                stamp: if hot_cold {
                    big_vec(lpns, 0u32)
                } else {
                    Vec::new()
                },
                hot_window: cfg.ftl.hot_window.unwrap_or(logical as u64),
            }));
        }
        ftl.fdp = fdp::FdpUnits::new(cfg, &ftl.stripe).map(Box::new);
        if let Some(r) = &cfg.reliability {
            ftl.start_wear(r, cfg, seed);
        }
        ftl
    }
}

impl<M: Translation + ?Sized> Ftl<M> {
    /// Mark factory bad blocks (each with probability `factory_bad_block_rate`, from its own
    /// random stream) and set the read-only level.
    fn start_wear(&mut self, r: &crate::config::ReliabilityConfig, cfg: &SsdConfig, seed: u64) {
        let mut rng = Rng::stream(seed, "nand.factory_bad_blocks");
        let mut bad = 0u64;
        if r.factory_bad_block_rate > 0.0 {
            for b in 0..self.blocks.len() {
                if rng.unit_f64() < r.factory_bad_block_rate {
                    self.blocks[b].state = BlockState::Bad;
                    bad += 1;
                }
            }
            let blocks = &self.blocks;
            for p in &mut self.planes {
                p.free
                    .retain(|&b| blocks[b as usize].state == BlockState::Free);
            }
        }
        let upb = self.geo.units_per_block() as u64;
        // The urgent level, the block kept for GC, GC's open block and one per write stream.
        let per_plane = cfg.ftl.gc.urgent_free_blocks as u64 + 2 + cfg.write_streams() as u64;
        let min_good = self.logical_units().div_ceil(upb) + self.geo.planes() as u64 * per_plane;
        let good = self.blocks.len() as u64 - bad;
        self.wear = Some(Wear {
            pe_limit: r.pe_limit_for(cfg.nand.cell),
            factory_bad_blocks: bad,
            retired_blocks: 0,
            good_blocks: good,
            min_good_blocks: min_good,
            read_only: good < min_good,
        });
    }

    /// Mean erase count of the good blocks against the P/E limit, in percent (0 without
    /// `[reliability]`).
    pub fn percentage_used(&self) -> f64 {
        let Some(w) = &self.wear else { return 0.0 };
        let (n, sum) = self
            .blocks
            .iter()
            .filter(|b| b.state != BlockState::Bad)
            .fold((0u64, 0u64), |(n, s), b| (n + 1, s + b.erase_count as u64));
        if n == 0 {
            return 100.0;
        }
        sum as f64 / n as f64 / w.pe_limit as f64 * 100.0
    }

    /// Good blocks above the read-only level against those the drive started with, in
    /// percent (100 without `[reliability]`).
    pub fn available_spare_percent(&self) -> f64 {
        let Some(w) = &self.wear else { return 100.0 };
        let start =
            (self.blocks.len() as u64 - w.factory_bad_blocks).saturating_sub(w.min_good_blocks);
        if start == 0 {
            return 0.0;
        }
        w.good_blocks.saturating_sub(w.min_good_blocks) as f64 / start as f64 * 100.0
    }

    /// The drive refuses writes: it wore out into read-only mode.
    #[inline]
    pub fn read_only(&self) -> bool {
        self.wear.as_ref().is_some_and(|w| w.read_only)
    }

    pub fn logical_units(&self) -> u64 {
        self.data_units
    }

    /// Cached mapping: where translation page `page` is on NAND (None: never written, the
    /// GTD has no place for it).
    #[inline]
    pub fn translation_location(&self, page: u32) -> Option<u32> {
        self.lookup(self.data_units + page as u64)
    }

    /// Cached mapping: where translation page `page` can be read from NAND, if anywhere (None
    /// when it was never written or its program has not finished).
    #[inline]
    pub fn translation_on_nand(&self, page: u32) -> Option<u32> {
        self.translation_location(page)
            .filter(|&pun| self.is_programmed(pun))
    }

    /// Cached mapping: program translation page `page` to a new place (the old one turns
    /// stale); returns the new place. Not a host write: `host_units_written` stays.
    pub fn write_translation(&mut self, page: u32) -> Result<u32> {
        let lpn = self.data_units + page as u64;
        self.clock += 1;
        self.invalidate(lpn);
        // Translation pages share stream 0's open blocks (`lpn_stream` keeps its 0).
        let pun = self.alloc_striped(lpn, 0)?;
        self.map(lpn, pun);
        if self.instant {
            self.mark_programmed(pun);
        }
        Ok(pun)
    }

    /// Say that the coming work will touch about `entries` map entries at random, all of them
    /// among the logical units `span`. Once that is enough to touch nearly every 4 KiB page of
    /// the map's part for `span` (one entry in 1,024), that part is backed by huge pages from
    /// then on, where the OS allows: random accesses miss the TLB less (about 20 % more events
    /// per second on a 1 TiB drive), and memory, which grows 2 MiB at a time with them, would
    /// be spent anyway; so it is backed now, before the timed run, not fault by fault inside
    /// it. Below that, memory follows what the run touches (a thousand random writes to a full
    /// 1 TiB drive: about 100 MB instead of 2 GB).
    ///
    /// The reverse map is backed whole only when the drive will hold data as the run starts
    /// (`held`: preconditioned, or loaded from a saved state): overwrites then clear its
    /// entries all over it. On a fresh drive the run's writes fill it block by block, and
    /// backing it whole would double the memory of a run that fills a sliver of it (a million random requests on MQSim's 512 GiB drive: 268
    /// MB of reverse map, of which the run writes 2 MB). Speed only: results never depend on it.
    pub fn expect_touches(&mut self, entries: u64, span: std::ops::Range<u64>, held: bool) {
        let end = (span.end as usize).min(self.data_units as usize);
        let start = (span.start as usize).min(end);
        if end == start || entries < (end - start) as u64 / 1024 {
            return;
        }
        let map = &mut self.l2p[start..end];
        advise_huge(map);
        prefault(map);
        self.l2p_backed = start..end;
        if held && entries >= self.p2l.len() as u64 / 1024 {
            advise_huge(&mut self.p2l);
            prefault(&mut self.p2l);
            advise_huge(&mut self.programmed);
            self.p2l_backed = true;
        }
    }

    pub fn set_instant(&mut self, instant: bool) {
        self.instant = instant;
    }

    #[inline]
    pub fn lookup(&self, lpn: u64) -> Option<u32> {
        let p = self.l2p_at(lpn);
        (p != UNMAPPED).then_some(p)
    }

    /// The map entry of `lpn` ([`UNMAPPED`] when it has none).
    #[inline]
    pub(crate) fn l2p_at(&self, lpn: u64) -> u32 {
        let pun = self.l2p[lpn as usize] ^ AS_FILLED;
        if pun == AS_FILLED {
            self.fill.pun_of(lpn)
        } else {
            pun
        }
    }

    /// [`Ftl::l2p_at`] for the second stage of a prefetch: None, when the entry was dealt by
    /// steady-state preconditioning, after prefetching the next step of working it out (in
    /// place of a walk whose misses would stall the prefetch).
    #[inline]
    fn l2p_known(&self, lpn: u64) -> Option<u32> {
        let pun = self.l2p[lpn as usize] ^ AS_FILLED;
        if pun != AS_FILLED {
            Some(pun)
        } else if self.fill.prefetch_dealt_place(lpn) {
            None
        } else {
            Some(self.fill.pun_of(lpn))
        }
    }

    /// The reverse-map entry of `pun`: the logical unit whose data it holds ([`UNMAPPED`] when
    /// it holds none that is current).
    #[inline]
    pub(crate) fn p2l_at(&self, pun: u32) -> u32 {
        let lpn = self.p2l[pun as usize] ^ AS_FILLED;
        if lpn == AS_FILLED {
            self.fill.lpn_of(pun)
        } else {
            lpn
        }
    }

    #[inline]
    fn set_l2p(&mut self, lpn: u64, pun: u32) {
        self.l2p[lpn as usize] = pun ^ AS_FILLED;
    }

    #[inline]
    fn set_p2l(&mut self, pun: u32, lpn: u32) {
        self.p2l[pun as usize] = lpn ^ AS_FILLED;
    }

    /// Warm the cache for a coming access to `lpn`: its map entry and, if the entry is already
    /// cached, the reverse-map entry, block record and programmed bit of where it points.
    #[inline]
    pub fn prefetch(&self, lpn: u64) {
        prefetch(&self.l2p, lpn as usize);
        self.fill.prefetch(lpn);
        if let Some(page) = self.translation.page_of(lpn) {
            // Cached mapping: the translation page's record and its GTD entry.
            self.translation.prefetch_page(page);
            prefetch(&self.l2p, (self.data_units + page as u64) as usize);
        }
    }

    /// Second stage of [`Ftl::prefetch`] for a read: the programmed bit of where it points
    /// (the block records, a few megabytes even for a 1 TiB drive, mostly stay in cache).
    #[inline]
    pub fn prefetch_read_target(&self, lpn: u64) {
        let Some(pun) = self.l2p_known(lpn) else {
            return;
        };
        if pun != UNMAPPED {
            prefetch(&self.programmed, (pun / 64) as usize);
        }
        if let Some(page) = self.translation.page_of(lpn) {
            // Cached mapping: the programmed bit of where the translation page is.
            let tp = self.l2p_at(self.data_units + page as u64);
            if tp != UNMAPPED {
                prefetch(&self.programmed, (tp / 64) as usize);
            }
        }
    }

    /// Second stage of [`Ftl::prefetch`], once the map entry has arrived.
    #[inline]
    pub fn prefetch_target(&self, lpn: u64) {
        let Some(pun) = self.l2p_known(lpn) else {
            return;
        };
        if pun != UNMAPPED {
            prefetch(&self.p2l, pun as usize);
            prefetch(&self.blocks, self.geo.block_of_unit(pun) as usize);
            prefetch(&self.programmed, (pun / 64) as usize);
        }
    }

    #[inline]
    pub fn is_programmed(&self, pun: u32) -> bool {
        pun < self.blocks[self.geo.block_of_unit(pun) as usize].programmed_below
            || self.programmed[(pun / 64) as usize] & (1 << (pun % 64)) != 0
    }

    #[inline]
    pub fn mark_programmed(&mut self, pun: u32) {
        debug_assert!(
            pun >= self.blocks[self.geo.block_of_unit(pun) as usize].programmed_below,
            "unit {pun} programmed twice without an erase"
        );
        self.programmed[(pun / 64) as usize] |= 1 << (pun % 64);
    }

    /// Units from the start of `block` programmed without their bits (see
    /// [`Block::programmed_below`]).
    fn programmed_prefix(&self, block: usize) -> u64 {
        let first = block as u64 * self.geo.units_per_block() as u64;
        (self.blocks[block].programmed_below as u64).saturating_sub(first)
    }

    /// The units of `block` below its write pointer are programmed, said by its record alone (a
    /// block at rest; its bits must be clear).
    fn programmed_to_write_ptr(&mut self, block: usize) {
        let first = block as u32 * self.geo.units_per_block();
        let blk = &mut self.blocks[block];
        blk.programmed_below = if blk.write_ptr == 0 {
            0
        } else {
            first + blk.write_ptr
        };
    }

    /// Which units are programmed, one bit each (prefixes included): for saving and tests.
    fn programmed_bits(&self) -> Vec<u64> {
        let upb = self.geo.units_per_block() as u64;
        let mut bits = self.programmed.clone();
        for b in 0..self.blocks.len() {
            set_bits(&mut bits, b as u64 * upb, self.programmed_prefix(b));
        }
        bits
    }

    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    pub fn free_blocks(&self, plane: u32) -> u32 {
        self.planes[plane as usize].free.len() as u32
    }

    /// Free blocks over every plane (the periodic statistics' figure).
    pub fn free_blocks_total(&self) -> u64 {
        self.planes.iter().map(|p| p.free.len() as u64).sum()
    }

    /// How short of space a plane is: [`Urgency::Hard`] when GC must outrank host writes,
    /// [`Urgency::Soft`] when it alternates with them (`ftl.gc.preemptible`), else none.
    #[inline]
    pub fn plane_urgency(&self, plane: u32) -> Urgency {
        // Counted in units, the room left in the GC block included: opening a GC block moves
        // a block's room from the free list into that block, which is no loss. Counted in free
        // blocks, that opening would make the plane urgent at once, and urgency would last until
        // GC had gained a whole block back — several victims when victims are mostly valid (a
        // host write waited 0.2 s on small-tlc, seconds on drives with large blocks).
        let p = &self.planes[plane as usize];
        let upb = self.geo.units_per_block();
        let gc_room = if p.gc_open == NONE {
            0
        } else {
            upb - self.blocks[p.gc_open as usize].write_ptr
        };
        let mut free = p.free.len() as u32 * upb + gc_room;
        if let Some(st) = &self.streams {
            // The open blocks of streams beyond the first count as the GC block's do: opening
            // one moves a block's room out of the free list, so that with more streams a plane
            // turns urgent at the same room as with one.
            let k = st.count as usize - 1;
            let range = plane as usize * k..(plane as usize + 1) * k;
            // So do the per-stream GC blocks, for the same reason as the GC block's.
            let gc = st.gc_open.get(range.clone()).unwrap_or(&[]);
            for &b in st.open[range].iter().chain(gc) {
                if b != NONE {
                    free += upb - self.blocks[b as usize].write_ptr;
                }
            }
        }
        if free > self.urgent_free_blocks * upb {
            Urgency::None
        } else if free <= self.hard_free_blocks * upb {
            Urgency::Hard
        } else {
            Urgency::Soft
        }
    }

    /// Write one logical unit; returns the physical unit that receives it.
    #[inline]
    pub fn write(&mut self, lpn: u64) -> Result<u32> {
        self.write_in(lpn, 0)
    }

    /// Write one logical unit in host write stream `stream` (below `ftl.streams`; the hint is
    /// passed over with `stream_policy = "hot-cold"`, which chooses itself); returns the
    /// physical unit that receives it.
    pub fn write_in(&mut self, lpn: u64, stream: u8) -> Result<u32> {
        self.clock += 1;
        let stream = self.stream_of(lpn, stream);
        self.overwrote = self.invalidate_overwritten(lpn);
        let pun = self.alloc_striped(lpn, stream)?;
        self.map(lpn, pun);
        self.stats.host_units_written += 1;
        self.stream_written(lpn, stream);
        if self.instant {
            self.mark_programmed(pun);
            if self.overwrote != NONE {
                self.overwrite_programmed(self.overwrote);
                self.overwrote = NONE;
            }
        } else {
            self.translation.entry_changed(lpn);
        }
        Ok(pun)
    }

    /// The stream a host write of `lpn` goes to, with `hint` from the host. The clock has
    /// counted this write.
    #[inline]
    fn stream_of(&mut self, lpn: u64, hint: u8) -> u8 {
        let Some(st) = self.streams.as_deref_mut() else {
            return 0;
        };
        let s = if st.stamp.is_empty() {
            debug_assert!((hint as u32) < st.count, "stream {hint} not validated");
            hint
        } else {
            // Hot-cold: hot when the unit was written within the window (the stamp keeps the
            // clock's low 32 bits, so the distance is taken modulo 2^32).
            let now = self.clock as u32;
            let last = std::mem::replace(&mut st.stamp[lpn as usize], now);
            u8::from(last != 0 && (now.wrapping_sub(last) as u64) <= st.hot_window)
        };
        s
    }

    /// `lpn` was written in `stream` (and its old place let go of): counted there, and GC will
    /// count moving it there too.
    #[inline]
    fn stream_written(&mut self, lpn: u64, stream: u8) {
        if let Some(st) = self.streams.as_deref_mut() {
            st.lpn_stream[lpn as usize] = stream;
            st.stats[stream as usize].host_units_written += 1;
        }
    }

    /// Zero the per-stream counters (with the FTL's: the result speaks of the timed run).
    pub fn reset_stream_stats(&mut self) {
        if let Some(st) = self.streams.as_deref_mut() {
            st.stats.fill(StreamStats::default());
        }
        if let Some(f) = self.fdp.as_deref_mut() {
            f.reset_stats();
        }
    }

    /// With `[fdp]`: its reclaim units' bookkeeping (the handles' write counters are
    /// [`Ftl::stream_stats`], handle h being stream h).
    pub fn fdp_units(&self) -> Option<&fdp::FdpUnits> {
        self.fdp.as_deref()
    }

    /// Whether a write may name stream `stream`: below `ftl.streams`, and only with the host
    /// choosing (`ftl.stream_policy = "host"`). The message says what was expected.
    pub fn check_stream(&self, stream: u8) -> std::result::Result<(), String> {
        let count = self.streams.as_ref().map_or(1, |st| st.count);
        if stream as u32 >= count {
            let (what, field) = if self.fdp.is_some() {
                ("placement identifier ", "fdp.handles")
            } else {
                ("", "ftl.streams")
            };
            return Err(format!(
                "got {what}{stream}, expected 0 up to {} ({field} = {count})",
                count - 1
            ));
        }
        if self.streams.as_ref().is_some_and(|st| !st.stamp.is_empty()) && stream != 0 {
            return Err(format!(
                "got {stream}, expected 0: with ftl.stream_policy = \"hot-cold\" the device chooses each write's stream"
            ));
        }
        Ok(())
    }

    /// Bytes of the FTL's large tables that hold what the run wrote (`wall.memory` in a
    /// result): the map, the reverse map, the programmed-unit bits and the block records,
    /// each as its 4 KiB pages that hold a written entry (`sim::mem::written_bytes`; what
    /// [`Ftl::expect_touches`] backed counts whole: the map's part it backed, and the reverse
    /// map with the programmed bits, in huge pages of 16 million units, which a run touching
    /// that much touches all of), and the planes' free-block lists as allocated.
    pub fn memory(&self) -> FtlMemory {
        // What was backed counts whole (and needs no reading through); the rest by the pages
        // the run wrote.
        let (before, rest) = self.l2p.split_at(self.l2p_backed.start);
        let (backed, after) = rest.split_at(self.l2p_backed.len());
        let zero = |&e: &u32| e == 0;
        let map = written_bytes(before, zero)
            + std::mem::size_of_val(backed) as u64
            + written_bytes(after, zero);
        let (reverse, bits) = if self.p2l_backed {
            (
                std::mem::size_of_val(&self.p2l[..]) as u64,
                std::mem::size_of_val(&self.programmed[..]) as u64,
            )
        } else {
            (
                written_bytes(&self.p2l, zero),
                written_bytes(&self.programmed, |&w| w == 0),
            )
        };
        let fresh = |b: &Block| {
            b.valid == 0
                && b.erase_count == 0
                && b.epoch == 0
                && b.state == BlockState::Free
                && b.write_ptr == 0
                && b.last_write == 0
                && b.overwrites_in_flight == 0
                && b.programmed_below == 0
        };
        FtlMemory {
            map_bytes: map,
            reverse_map_bytes: reverse,
            programmed_bits_bytes: bits,
            block_records_bytes: written_bytes(&self.blocks, fresh),
            free_lists_bytes: self.planes.iter().map(|p| p.free.allocated_bytes()).sum(),
        }
    }

    /// Counters per host write stream, with `ftl.streams` > 1 (None with one stream).
    pub fn stream_stats(&self) -> Option<&[StreamStats]> {
        self.streams.as_ref().map(|st| &st.stats[..])
    }

    /// The stream whose open block `block` was ([`GC_STREAM`] for GC's), with `ftl.streams` > 1.
    pub fn block_stream(&self, block: u32) -> Option<u8> {
        self.streams
            .as_ref()
            .map(|st| st.block_stream[block as usize])
    }

    /// Write one logical unit on a drive with `[reliability]`: a worn-out drive refuses it,
    /// and a unit that cannot be placed keeps its old data (the new place is found before the
    /// old one is let go, so a refusal loses nothing).
    pub fn write_checked(&mut self, lpn: u64) -> Result<std::result::Result<u32, Refusal>> {
        self.write_checked_in(lpn, 0)
    }

    /// [`Ftl::write_checked`] in host write stream `stream` (see [`Ftl::write_in`]).
    pub fn write_checked_in(
        &mut self,
        lpn: u64,
        stream: u8,
    ) -> Result<std::result::Result<u32, Refusal>> {
        if self.read_only() {
            return Ok(Err(Refusal::ReadOnly));
        }
        self.clock += 1;
        let stream = self.stream_of(lpn, stream);
        let Some(pun) = self.alloc_striped_opt(lpn, stream)? else {
            // Nothing could take it: no room is left where the data landed.
            if let Some(w) = self.wear.as_mut() {
                w.read_only = true;
            }
            return Ok(Err(Refusal::NoSpace));
        };
        // GC may have moved the old data while the place was found: let go of where it is now.
        self.overwrote = self.invalidate_overwritten(lpn);
        self.map(lpn, pun);
        self.stats.host_units_written += 1;
        self.stream_written(lpn, stream);
        if self.instant {
            self.mark_programmed(pun);
            if self.overwrote != NONE {
                self.overwrite_programmed(self.overwrote);
                self.overwrote = NONE;
            }
        } else {
            self.translation.entry_changed(lpn);
        }
        Ok(Ok(pun))
    }

    pub fn trim(&mut self, lpn: u64) {
        if self.l2p_at(lpn) != UNMAPPED {
            if !self.instant {
                self.translation.entry_changed(lpn);
            }
            self.invalidate(lpn);
            self.set_l2p(lpn, UNMAPPED);
            self.stats.trimmed_units += 1;
        }
    }

    /// [`Ftl::invalidate`] for a host write, whose program will replace the data: the old
    /// block counts the write in flight until [`Ftl::overwrite_programmed`]. Returns that
    /// block ([`NONE`] when the unit was unmapped).
    #[inline]
    fn invalidate_overwritten(&mut self, lpn: u64) -> u32 {
        let old = self.l2p_at(lpn);
        if old == UNMAPPED {
            return NONE;
        }
        self.set_p2l(old, UNMAPPED);
        let b = self.geo.block_of_unit(old);
        let blk = &mut self.blocks[b as usize];
        blk.valid -= 1;
        blk.overwrites_in_flight += 1;
        b
    }

    /// The block whose data the last host write ([`Ftl::write`] and its kin) replaced, or
    /// [`NONE`]: the program of that write carries it, and reports it when done.
    #[inline]
    pub fn overwrote(&self) -> u32 {
        self.overwrote
    }

    /// The program of a host write that replaced data of `block` has finished (or will never
    /// run).
    #[inline]
    pub fn overwrite_programmed(&mut self, block: u32) {
        self.blocks[block as usize].overwrites_in_flight -= 1;
    }

    fn invalidate(&mut self, lpn: u64) {
        let old = self.l2p_at(lpn);
        if old != UNMAPPED {
            self.set_p2l(old, UNMAPPED);
            let b = self.geo.block_of_unit(old) as usize;
            self.blocks[b].valid -= 1;
        }
    }

    #[inline]
    fn map(&mut self, lpn: u64, pun: u32) {
        self.set_l2p(lpn, pun);
        self.set_p2l(pun, lpn as u32);
        let b = self.geo.block_of_unit(pun) as usize;
        let clock = self.clock;
        let blk = &mut self.blocks[b];
        blk.valid += 1;
        blk.last_write = clock;
    }

    /// Check every invariant of the map and the blocks (tests and debug runs).
    pub fn check(&self) -> std::result::Result<(), String> {
        let upb = self.geo.units_per_block();
        let mut valid = vec![0u32; self.blocks.len()];
        for lpn in 0..self.l2p.len() as u64 {
            let pun = self.l2p_at(lpn);
            if pun == UNMAPPED {
                continue;
            }
            if self.p2l_at(pun) != lpn as u32 {
                return Err(format!(
                    "lpn {lpn} maps to pun {pun}, which maps back to {}",
                    self.p2l_at(pun)
                ));
            }
            valid[(pun / upb) as usize] += 1;
        }
        for (b, blk) in self.blocks.iter().enumerate() {
            if blk.valid != valid[b] {
                return Err(format!(
                    "block {b} counts {} valid units, holds {}",
                    blk.valid, valid[b]
                ));
            }
            if blk.state == BlockState::Free && blk.valid != 0 {
                return Err(format!("free block {b} holds valid data"));
            }
        }
        if let Some(st) = self.streams.as_deref() {
            // Streams never share a block: every valid unit of a host block was written by
            // the stream that opened it.
            for pun in 0..self.p2l.len() as u32 {
                let lpn = self.p2l_at(pun);
                if lpn == UNMAPPED {
                    continue;
                }
                let b = (pun / upb) as usize;
                let owner = st.block_stream[b];
                let wrote = st.lpn_stream[lpn as usize];
                if owner != GC_STREAM && owner != wrote {
                    return Err(format!(
                        "block {b} of stream {owner} holds lpn {lpn} of stream {wrote}"
                    ));
                }
            }
        }
        let mapped_p = (0..self.p2l.len() as u32)
            .filter(|&pun| self.p2l_at(pun) != UNMAPPED)
            .count();
        let mapped_l = (0..self.l2p.len() as u64)
            .filter(|&lpn| self.l2p_at(lpn) != UNMAPPED)
            .count();
        if mapped_p != mapped_l {
            return Err(format!(
                "{mapped_l} logical units mapped but {mapped_p} physical units valid"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod fdp_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
