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
//!
//! This file holds the FTL's types and records, its wear and free-space figures and how urgently
//! a plane needs GC. The rest is in a file a concept: `build.rs` (construction, table memory),
//! `map.rs` (the map tables, programmed bits, prefetches, the invariants' check), `write.rs`
//! (host writes, trims, write streams), `alloc.rs`, `gc.rs`, `precondition.rs`, `checkpoint.rs`,
//! `translation.rs` and `mapping_cache.rs`.

use crate::config::{GcPolicy, Placement};
use crate::media::nand::Geometry;
use crate::sim::mem::ZeroBytes;
use crate::sim::Rng;

mod alloc;
mod build;
mod checkpoint;
pub mod fdp;
mod fill;
mod free_list;
mod gc;
pub mod hybrid;
mod map;
pub mod mapping_cache;
mod precondition;
mod state;
pub mod state_io;
mod steady;
mod translation;
mod write;
use fill::{FillLayout, AS_FILLED};
use free_list::FreeList;
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
    /// setting (and backing with memory) a bit per unit of the whole drive. A program that
    /// finishes in line (at it) moves it on by one ([`Ftl::mark_programmed`]); one out of line
    /// sets its bit, past it; an erase sets it to 0. Absolute, so
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
/// ([`MappingCache`](mapping_cache::MappingCache), the `cached` scheme). `M` is the last field,
/// so that what does not depend on it can borrow any page FTL as [`AnyFtl`].
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
    /// GC's progress watch: the host units written and trimmed, and the units GC had moved,
    /// when a collection last found the host had written or trimmed since the one before
    /// (`Ftl::watch_progress`).
    gc_watch: (u64, u64),
    /// A collection's valid units, `(unit, logical unit)`, gathered before any is moved
    /// (`Ftl::collect`); kept between collections so that none allocates it again.
    gc_found: Vec<(u32, u32)>,
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

impl<M: Translation + ?Sized> Ftl<M> {
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

    pub fn set_instant(&mut self, instant: bool) {
        self.instant = instant;
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
}

#[cfg(test)]
mod fdp_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
