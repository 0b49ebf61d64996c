//! Building the page FTL for a config: what its tables will take ([`Ftl::table_bytes`]), the
//! two constructors (the whole map, [`Ftl::new`]; a cached map, [`Ftl::cached`]) and the one
//! `build` they share (the tables, the planes' free lists, write streams, FDP, and with
//! `[reliability]` the factory bad blocks and the read-only level); then the memory its tables
//! hold as the run goes ([`Ftl::expect_touches`], [`Ftl::memory`]).

use super::fill::FillLayout;
use super::free_list::FreeList;
use super::mapping_cache::MappingCache;
use super::{
    fdp, Block, BlockState, CachedFtl, Ftl, FtlMemory, FtlStats, FullMap, Plane, StreamStats,
    Streams, Translation, Wear, NONE,
};
use crate::config::{SsdConfig, StreamPolicy};
use crate::media::nand::Geometry;
use crate::sim::mem::{advise_huge, big_vec, prefault, written_bytes, zero_bytes_vec, zeroed_vec};
use crate::sim::Rng;

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
    pub(super) fn build(cfg: &SsdConfig, seed: u64, logical: u64, translation: M) -> Ftl<M> {
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
            gc_watch: (0, 0),
            gc_found: Vec::new(),
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
    pub(super) fn start_wear(
        &mut self,
        r: &crate::config::ReliabilityConfig,
        cfg: &SsdConfig,
        seed: u64,
    ) {
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
}
