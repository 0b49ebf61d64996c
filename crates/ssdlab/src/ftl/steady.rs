//! Steady-state preconditioning (`precondition.fill = "steady-state"`): the drive as uniform
//! random overwrites leave it once the write amplification has stopped changing.
//!
//! Overwriting a whole 1 TiB drive to that state unit by unit takes minutes, because it needs
//! a few times the logical capacity in host writes and each of them costs its share of GC
//! copies. But under uniform random writes every plane sees the same process: writes striped
//! over the planes, invalidations spread over them, GC per plane. So one *model plane* (the
//! drive's blocks per plane, pages per block, map unit, over-provisioning, GC policy and
//! thresholds, wear levelling; one plane's share of the logical units) is filled and
//! overwritten at random, window by window, until the WAF of the last windows agrees with the
//! windows before them. Then snapshots of it, taken a block of host writes apart so that the
//! planes' collections stand at different points, and a 64th of a block more so that their
//! host write pointers stand spread round the block as a drive in long use has them (docs/ftl.md,
//! Steady state), are copied to every plane of the drive, and
//! the drive's logical units are dealt over the valid places at random (a [`Permutation`], so
//! neighbouring units land on unrelated planes, as random overwrites leave them).

use super::state_io::{StateReader, StateWriter};
use super::{Block, BlockState, Ftl, FullMap, Refusal, Translation, NONE, UNMAPPED};
use crate::config::{HotCold, MappingKind, SsdConfig};
use crate::error::{says, Error, Invalid, Result};
use crate::sim::divisor::Divisor;
use crate::sim::mem::prefetch;
use crate::sim::rng::Permutation;
use crate::sim::Rng;
use std::io::{Read, Write};

/// What the model plane reached.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyState {
    /// The mean WAF of the last [`COMPARED`] windows of uniform random overwrites.
    pub waf: f64,
    /// The last windows (counted from the first in which GC ran) agreed with the ones before
    /// them within [`TOLERANCE`]; false when the overwrites stopped at [`MAX_OVERWRITE`] first.
    pub converged: bool,
    /// Host writes into the model plane after its fill, in multiples of its logical units.
    pub overwrite: f64,
}

/// Windows of this fraction of the model plane's logical units.
pub(super) const WINDOW_FRACTION: u64 = 8;
/// Windows averaged on each side of the comparison.
pub(super) const COMPARED: usize = 4;
/// Relative difference of the two averages at which the WAF counts as steady.
pub(super) const TOLERANCE: f64 = 0.01;
/// Overwrites before the first comparison (in multiples of the logical units): the fill's
/// transient (a WAF of 1 while the spare lasts, then a peak as GC finds every block nearly
/// full) is over by then, so two halves of it cannot agree by chance.
pub(super) const MIN_OVERWRITE: u64 = 2;
/// Overwrites stop here (in multiples of the logical units) even if the WAF still moves.
pub(super) const MAX_OVERWRITE: u64 = 16;
/// Snapshots of the model plane dealt over the drive's planes. Planes that share a snapshot
/// run out of free blocks together and their collections then queue at the same dies: with
/// 8 (a few host writes apart), a timed run on 32 planes wrote at WAF 7.9 where the drive
/// overwritten unit by unit wrote at 8.9 (docs/ftl.md, Steady state).
const SNAPSHOTS: u64 = 64;

/// Where the model-plane states put the host write pointers of the planes they are copied to.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phases {
    /// All at the same unit of their open blocks: the planes of a superblock group, which fill
    /// the same page of their blocks in turn.
    InStep,
    /// Spread evenly round the block: planes that fill their blocks independently, as a drive
    /// in long use has them (docs/ftl.md, Steady state).
    Spread,
}

/// One state of the model plane, to be copied to planes of the drive.
struct Snapshot {
    blocks: Vec<Block>,
    /// Free blocks, open blocks: plane-local block numbers.
    free: Vec<u32>,
    host_open: u32,
    gc_open: u32,
    /// The plane-local units that hold valid data: one set (uniform overwrites), or the hot
    /// units' and the cold units' (a skew).
    valid: Vec<ValidPlaces>,
    clock: u64,
}

impl Snapshot {
    /// The model plane's state; with a skew, its valid places split into those of its first
    /// `skew.hot` logical units and the rest.
    fn of<M: Translation + ?Sized>(model: &Ftl<M>, skew: Option<&Skew>) -> Snapshot {
        let units = model.geo.units() as u32;
        let classes = if skew.is_some() { 2 } else { 1 };
        let mut bits = vec![vec![0u64; units.div_ceil(64) as usize]; classes];
        for u in 0..units {
            let lpn = model.p2l_at(u);
            if lpn != UNMAPPED {
                let class = skew.map_or(0, |s| usize::from(lpn as u64 >= s.hot));
                bits[class][(u / 64) as usize] |= 1 << (u % 64);
            }
        }
        Snapshot {
            blocks: model.blocks.clone(),
            free: model.planes[0].free.to_vec(),
            host_open: model.planes[0].host_open,
            gc_open: model.planes[0].gc_open,
            valid: bits.into_iter().map(ValidPlaces::new).collect(),
            clock: model.clock,
        }
    }
}

/// Where preconditioning's random overwrites fall with a skew (`precondition.hot_fraction`):
/// the first `hot` logical units take `hot_writes` of them, uniformly within each part (a
/// job's `zoned` distribution with two zones).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Skew {
    /// The hot units: the first of the logical space.
    pub hot: u64,
    /// The share of the overwrites that go to them.
    pub hot_writes: f64,
}

impl Skew {
    /// The config's skew over a logical space of `logical` units.
    pub fn over(h: HotCold, logical: u64) -> Skew {
        Skew {
            hot: h.hot_units(logical),
            hot_writes: h.hot_write_fraction,
        }
    }

    /// How many times over the logical space the overwrites must go for every unit of the
    /// part that takes the fewest per unit to be written once on average (1 when uniform):
    /// its data turns over that much slower than under uniform overwrites of the same space.
    fn slowest_turnover(&self, logical: u64) -> f64 {
        let hot = self.hot as f64 / logical as f64;
        let per_unit = (self.hot_writes / hot).min((1.0 - self.hot_writes) / (1.0 - hot));
        1.0 / per_unit.min(1.0)
    }
}

/// One random overwrite's logical unit, below `n`: uniform (one draw, `rng.below(n)`, as
/// before skews existed), or a draw of the part and one within it. Inlined always: the
/// uniform draw stays what it was in the overwrite loops.
#[inline(always)]
pub fn draw_overwrite(skew: Option<&Skew>, rng: &mut Rng, n: u64) -> u64 {
    match skew {
        None => rng.below(n),
        Some(s) if rng.unit_f64() < s.hot_writes => rng.below(s.hot),
        Some(s) => s.hot + rng.below(n - s.hot),
    }
}

/// The config of the model plane: `cfg` with one plane and a whole map in memory (a cached
/// map's translation pages are written after the copy, as after a fill).
fn model_config(cfg: &SsdConfig) -> SsdConfig {
    let mut m = cfg.clone();
    m.nand.channels = 1;
    m.nand.packages_per_channel = 1;
    m.nand.dies_per_package = 1;
    m.nand.planes_per_die = 1;
    m.ftl.superblock_planes = None;
    m.ftl.mapping = MappingKind::Full;
    m.ftl.mapping_cache = None;
    m
}

impl<M: Translation + ?Sized> Ftl<M> {
    /// Bring this fresh drive to the steady state of uniform random overwrites of single map
    /// units (see the module's text). Asks `keep_going` every 65,536 writes of the model plane
    /// and before each plane of the copy; false stops it with [`Error::Interrupted`].
    pub fn reach_steady_state(
        &mut self,
        cfg: &SsdConfig,
        seed: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<SteadyState> {
        // A factory bad block is no use: the copy puts the model plane's own in its place.
        let unused = self.clock == 0
            && self.cursor == 0
            && (self.blocks.iter()).all(|b| matches!(b.state, BlockState::Free | BlockState::Bad));
        if self.streams.is_some() && unused {
            // Write streams (FDP's handles or `ftl.streams`): each stream's open blocks (FDP's
            // reclaim units are superblocks over a reclaim group's planes) and its stripe
            // cursor are more than a one-plane model holds; the drive itself is overwritten,
            // each write in a stream drawn uniformly, as a config does not know the workload's
            // mix (docs/fdp.md and docs/ftl.md, Steady state). `stream_policy = "hot-cold"`
            // passes the draw over and chooses itself. With `[reliability]` the writes are
            // the checked ones: blocks retire on the way, factory bad ones are never written.
            let streams = cfg.write_streams().max(1) as u64;
            let skew = (cfg.precondition.hot_cold()).map(|h| Skew::over(h, self.logical_units()));
            let (steady, _) =
                self.run_to_steady_state(seed, streams, 0, Phases::InStep, skew, keep_going)?;
            return Ok(steady);
        }
        if !unused || self.streams.is_some() {
            // Validation refuses the configs this cannot copy; a used drive is a caller's bug.
            return Err(Error::bad_device(Invalid::unnamed(
                "steady-state preconditioning",
                says("it needs a fresh drive"),
            )));
        }
        let planes = self.planes.len() as u64;
        let logical = self.logical_units();
        // One plane's share of the logical units, rounded up; with a skew, of the hot units
        // and of the cold units each (the model plane's first units are its hot ones).
        let (per_plane, model_skew, skew) = match cfg.precondition.hot_cold() {
            None => (logical.div_ceil(planes), None, None),
            Some(h) => {
                let skew = Skew::over(h, logical);
                let hot = skew.hot.div_ceil(planes);
                let cold = (logical - skew.hot).div_ceil(planes);
                let model = Skew { hot, ..skew };
                (hot + cold, Some(model), Some(skew))
            }
        };
        let model_cfg = model_config(cfg);
        let mut model = Ftl::build(&model_cfg, seed, per_plane, FullMap);
        let count = SNAPSHOTS.min(planes);
        // With one group of planes in the stripe the host blocks fill independently, and a
        // drive in long use has them at every page; a superblock group's planes fill the same
        // page of their blocks by construction (docs/ftl.md, Steady state).
        let phases = if self.superblock >= self.stripe.len() {
            Phases::Spread
        } else {
            Phases::InStep
        };
        let (steady, snapshots) =
            model.run_to_steady_state(seed, 1, count, phases, model_skew, keep_going)?;
        self.copy_planes(snapshots, skew, seed, keep_going)?;
        self.count_copied_wear(&model);
        Ok(steady)
    }

    /// With `[reliability]`: the copied blocks carry the model plane's erase counts (the wear
    /// its fill and overwrites gave them, collected by the configured GC policy), its factory
    /// bad blocks (drawn from the seed over one plane's blocks: the drive's plane 0's draw, on
    /// every plane) and the blocks its overwrites retired. Count them for the drive.
    fn count_copied_wear(&mut self, model: &Ftl) {
        let (Some(w), Some(mw)) = (self.wear.as_mut(), model.wear.as_ref()) else {
            return;
        };
        let bad = (self.blocks.iter())
            .filter(|b| b.state == BlockState::Bad)
            .count() as u64;
        w.factory_bad_blocks = mw.factory_bad_blocks * self.planes.len() as u64;
        w.retired_blocks = bad.saturating_sub(w.factory_bad_blocks);
        w.good_blocks = self.blocks.len() as u64 - bad;
        w.read_only = w.good_blocks < w.min_good_blocks;
    }

    /// Fill this (model) drive and overwrite it at random (uniformly, or as `skew` says) until
    /// its WAF is steady, each write in one of `handles` write streams drawn uniformly (one: no
    /// draw); then take `count` states, each a block of host writes after the one before (so
    /// that the planes' collections stand at different points) and, with [`Phases::Spread`],
    /// `1/count` of a block more (in whole pages), so that state i's host write pointer stands
    /// i/count of a block round from the first's.
    fn run_to_steady_state(
        &mut self,
        seed: u64,
        handles: u64,
        count: u64,
        phases: Phases,
        skew: Option<Skew>,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<(SteadyState, Vec<Snapshot>)> {
        if handles > 1 {
            self.fill_with_handles(seed, handles, keep_going)?;
        } else {
            self.precondition_with(true, 0.0, None, seed, keep_going)?;
        }
        let n = self.logical_units();
        let was = self.instant;
        self.instant = true;
        let mut rng = Rng::stream(seed, "precondition.steady_state");
        let mut written = 0u64;
        let mut write = |ftl: &mut Self, count: u64| -> Result<()> {
            for _ in 0..count {
                written += 1;
                if written.is_multiple_of(1 << 16) && !keep_going() {
                    return Err(Error::Interrupted);
                }
                let lpn = draw_overwrite(skew.as_ref(), &mut rng, n);
                let handle = if handles > 1 { rng.below(handles) } else { 0 };
                if ftl.wear.is_some() {
                    if let Err(refusal) = ftl.write_checked_in(lpn, handle as u8)? {
                        return Err(worn_out(ftl, refusal));
                    }
                } else {
                    ftl.write_in(lpn, handle as u8)?;
                }
            }
            Ok(())
        };
        let window = n.div_ceil(WINDOW_FRACTION);
        // A skew's slowest part turns over more slowly: its data stays as the fill left it
        // that many times longer, so the overwrites go on that many times longer too.
        let slow = skew.map_or(1, |s| s.slowest_turnover(n).ceil() as u64);
        let (wafs, converged, windows) = converge_within(slow, || {
            let (host, moved) = (self.stats.host_units_written, self.stats.gc_units_moved);
            write(self, window)?;
            if self.stats.gc_runs == 0 {
                // Still writing into the space the fill left free: WAF 1, but not steady.
                return Ok(None);
            }
            let host = self.stats.host_units_written - host;
            let moved = self.stats.gc_units_moved - moved;
            Ok(Some((host + moved) as f64 / host as f64))
        })?;
        let steady = SteadyState {
            // No window collected anything: every overwrite fitted the free space.
            waf: tail_mean(&wafs).unwrap_or(1.0),
            converged,
            overwrite: (windows * window) as f64 / n as f64,
        };
        let upb = self.geo.units_per_block() as u64;
        let (ppb, upp) = (
            self.geo.pages_per_block as u64,
            self.geo.units_per_page as u64,
        );
        // State i's host write pointer, in units round the block from state 0's: whole pages,
        // so that the drive's stripe cursor, a page on each plane in turn, fills whole pages.
        let phase = |i: u64| match phases {
            Phases::InStep => 0,
            Phases::Spread => i * ppb / count * upp,
        };
        let mut snapshots = Vec::new();
        if count > 0 {
            snapshots.push(Snapshot::of(self, skew.as_ref()));
        }
        for i in 1..count {
            write(self, upb + phase(i) - phase(i - 1))?;
            snapshots.push(Snapshot::of(self, skew.as_ref()));
        }
        self.instant = was;
        Ok((steady, snapshots))
    }

    /// Write every logical unit once, in order, each in one of `handles` streams drawn
    /// uniformly (stream `precondition.steady_state.handles`): the handles' shares of the data
    /// are then those of the overwrites from the start (a fill in stream 0 would leave the
    /// units no overwrite reached to stream 0).
    fn fill_with_handles(
        &mut self,
        seed: u64,
        handles: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<()> {
        let was = self.instant;
        self.instant = true;
        let mut rng = Rng::stream(seed, "precondition.steady_state.handles");
        for lpn in 0..self.logical_units() {
            if (lpn + 1).is_multiple_of(1 << 16) && !keep_going() {
                return Err(Error::Interrupted);
            }
            let handle = rng.below(handles) as u8;
            if self.wear.is_some() {
                if let Err(refusal) = self.write_checked_in(lpn, handle)? {
                    return Err(worn_out(self, refusal));
                }
            } else {
                self.write_in(lpn, handle)?;
            }
        }
        self.instant = was;
        Ok(())
    }

    /// Copy the snapshots to the planes (plane p takes snapshot p mod their count) and deal
    /// the logical units over the valid places: valid place k of the drive (in plane order,
    /// each plane's in unit order) takes the unit the permutation sends k to. With a skew the
    /// hot units are dealt so over the hot places only (the model plane's hot units' places)
    /// and the cold over the cold ones, each with its own permutation. Places past the
    /// logical units (the planes' shares round up) are let go of. Only block records are
    /// written (their programmed prefixes say which units are programmed): the map reads the
    /// dealing in closed form ([`Dealt`]), so a 1 TiB drive is laid out without a billion
    /// scattered writes into its map tables, and memory follows what the run then touches.
    fn copy_planes(
        &mut self,
        snapshots: Vec<Snapshot>,
        skew: Option<Skew>,
        seed: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<()> {
        let bpp = self.geo.blocks_per_plane;
        let upb = self.geo.units_per_block() as u64;
        let units_per_plane = bpp as u64 * upb;
        let planes = self.planes.len();
        let logical = self.logical_units();
        let mut clock = 0;
        // Each class's logical units: all of them, or the hot then the cold.
        let counts = match skew {
            None => vec![(0, logical)],
            Some(s) => vec![(0, s.hot), (s.hot, logical - s.hot)],
        };
        let per_plane: Vec<u64> = snapshots[0].valid.iter().map(|v| v.count()).collect();
        if snapshots
            .iter()
            .any(|s| s.valid.iter().map(|v| v.count()).ne(per_plane.clone()))
        {
            return Err(Error::bad_device(Invalid::unnamed(
                "steady-state preconditioning",
                says(
                    "the model plane's states hold different numbers \
                 of valid units (a bug: its writes only move them)",
                ),
            )));
        }
        let mut k = vec![0u64; counts.len()];
        for p in 0..planes {
            if !keep_going() {
                return Err(Error::Interrupted);
            }
            let s = &snapshots[p % snapshots.len()];
            let base = p as u32 * bpp;
            let global = |b: u32| if b == NONE { NONE } else { base + b };
            for (b, blk) in s.blocks.iter().enumerate() {
                let g = base as usize + b;
                self.blocks[g] = *blk;
                // The model's clock ticks once per write into one plane, the drive's once
                // per write into any: ages scale with the planes (cost-benefit GC).
                self.blocks[g].last_write = blk.last_write * planes as u64;
                // At rest: the units below the write pointer are programmed (no bits).
                self.programmed_to_write_ptr(g);
            }
            let plane = &mut self.planes[p];
            plane.free = super::FreeList::listed(s.free.iter().map(|&b| base + b).collect());
            plane.host_open = global(s.host_open);
            plane.gc_open = global(s.gc_open);
            clock = clock.max(s.clock * planes as u64);
            for (c, &(_, count)) in counts.iter().enumerate() {
                let here = per_plane[c];
                // The places past the class's units hold nothing: their blocks let them go.
                if k[c] + here > count {
                    let first_unit = p as u64 * units_per_plane;
                    for rank in count.saturating_sub(k[c])..here {
                        let pun = first_unit + s.valid[c].select(rank as u32) as u64;
                        self.blocks[(pun / upb) as usize].valid -= 1;
                    }
                }
                k[c] += here;
            }
        }
        self.clock = clock;
        // One stream for the permutations: uniform overwrites draw theirs as before skews.
        let mut rng = Rng::stream(seed, "precondition.steady_state");
        let mut places: Vec<Vec<ValidPlaces>> = vec![Vec::new(); counts.len()];
        for s in snapshots {
            for (c, v) in s.valid.into_iter().enumerate() {
                places[c].push(v);
            }
        }
        let classes = (counts.iter().zip(per_plane).zip(places))
            .map(|((&(first, count), per_plane), places)| DealtClass {
                perm: Permutation::new(count, &mut rng),
                first,
                count,
                per_plane,
                places,
            })
            .collect();
        (self.fill).set_dealt(Dealt::new(logical, units_per_plane as u32, classes));
        Ok(())
    }
}

/// The model plane wore out into read-only mode on its way to the steady state: the drive's
/// blocks would retire before the state it stands for, which the copy cannot lay out.
fn worn_out<M: Translation + ?Sized>(model: &Ftl<M>, refusal: Refusal) -> Error {
    let w = model.wear.as_ref().expect("with [reliability]");
    Error::bad_config(Invalid::got(
        "",
        "precondition.fill",
        "\"steady-state\"",
        format!(
            "a fill the drive survives: the overwrites that reach the steady state wear it out \
             ({refusal:?}: {} blocks retired (of the model plane; with write streams, of the \
             drive) at reliability.pe_limit = {}, {} bad from the factory); raise \
             reliability.pe_limit or lower reliability.factory_bad_block_rate, or precondition \
             with \"sequential\" and precondition.random_overwrite",
            w.retired_blocks, w.pe_limit, w.factory_bad_blocks
        ),
    ))
}

/// Set bits between two samples of [`ValidPlaces::samples`].
const SAMPLE: u32 = 256;

/// 64 plane-local units: which hold valid data, and how many valid places come before them
/// (one cache line holds four, so a rank costs one miss and a select's scan one or two).
#[derive(Clone, Copy, Debug)]
struct PlaceWord {
    bits: u64,
    before: u32,
}

/// One model-plane state's valid places, a bit per plane-local unit, with what makes a place's
/// rank and the place of a rank quick: the count before each word, and the word of every
/// [`SAMPLE`]-th valid place, from which a select scans a few words forward.
#[derive(Clone, Debug)]
struct ValidPlaces {
    words: Vec<PlaceWord>,
    samples: Vec<u32>,
}

impl ValidPlaces {
    fn new(bits: Vec<u64>) -> ValidPlaces {
        let mut count = 0u32;
        let mut samples = Vec::new();
        let words = bits
            .iter()
            .enumerate()
            .map(|(w, &bits)| {
                let before = count;
                count += bits.count_ones();
                // Every sample rank this word holds (the next one due, and any after it).
                while (samples.len() as u32) * SAMPLE < count {
                    samples.push(w as u32);
                }
                PlaceWord { bits, before }
            })
            .collect();
        ValidPlaces { words, samples }
    }

    /// The bit per plane-local unit it was made from.
    fn bits(&self) -> Vec<u64> {
        self.words.iter().map(|w| w.bits).collect()
    }

    fn count(&self) -> u64 {
        self.words
            .last()
            .map_or(0, |w| (w.before + w.bits.count_ones()) as u64)
    }

    /// The rank of the valid place at plane-local unit `offset` (None: not valid).
    #[inline]
    fn rank(&self, offset: u32) -> Option<u32> {
        let word = self.words[(offset / 64) as usize];
        let bit = offset % 64;
        (word.bits >> bit & 1 == 1)
            .then(|| word.before + (word.bits & ((1u64 << bit) - 1)).count_ones())
    }

    /// The plane-local unit of the valid place of rank `rank` (below [`ValidPlaces::count`]).
    #[inline]
    fn select(&self, rank: u32) -> u32 {
        // From the sampled word, on to the last word with no more than `rank` valid places
        // before it (a word with none shares its count with the next, and is passed over).
        let mut w = self.samples[(rank / SAMPLE) as usize] as usize;
        while self.words.get(w + 1).is_some_and(|n| n.before <= rank) {
            w += 1;
        }
        let mut bits = self.words[w].bits;
        for _ in 0..rank - self.words[w].before {
            bits &= bits - 1;
        }
        w as u32 * 64 + bits.trailing_zeros()
    }
}

/// [`Dealt::plane_of`]: one plane, the model-plane state its valid places follow, its first
/// unit, and the place number of its first valid place in each class.
#[derive(Clone, Copy, Debug)]
pub(super) struct DealtPlane {
    places: usize,
    first_unit: u32,
    first_k: u64,
    cold_first_k: u64,
}

/// Where steady-state preconditioning dealt the logical units, in closed form (read by the map
/// for entries nobody wrote since, `fill.rs`), class by class ([`DealtClass`]): one class
/// holding every unit after uniform overwrites; with a skew, the hot units (the first) and the
/// cold, each over its own places. The first class is held in place and the cold one boxed
/// beside it, so that a uniform layout is read as before skews (one class, no loop).
#[derive(Clone, Debug)]
pub(super) struct Dealt {
    logical: u64,
    units_per_plane: Divisor<u32>,
    first: DealtClass,
    cold: Option<Box<DealtClass>>,
}

/// Logical units `first..first + count` over their valid places: place k of the class (plane
/// by plane, each plane's in unit order) holds unit `first + perm(k)`; plane p's places are
/// those of model-plane state p mod the states' count.
#[derive(Clone, Debug)]
struct DealtClass {
    perm: Permutation,
    first: u64,
    count: u64,
    /// The class's valid places in every plane: the model plane's units of the class, all
    /// mapped in each of its states (its writes only move them).
    per_plane: u64,
    places: Vec<ValidPlaces>,
}

impl DealtClass {
    /// The unit dealt to place `k` of the class ([`UNMAPPED`] past its units).
    #[inline]
    fn lpn_at(&self, k: u64) -> u32 {
        if k < self.count {
            (self.first + self.perm.at(k)) as u32
        } else {
            UNMAPPED
        }
    }

    /// The plane of the place dealt to the class's `lpn`, and its rank among that plane's.
    #[inline]
    fn plane_and_rank(&self, lpn: u64) -> (usize, u32) {
        let k = self.perm.inverse_at(lpn - self.first);
        ((k / self.per_plane) as usize, (k % self.per_plane) as u32)
    }

    /// The unit at plane-local `offset` of a plane whose places follow model-plane state
    /// `places` and whose first place of the class is `first_k` ([`UNMAPPED`]: none). Kept
    /// out of line: only a skew's cold class asks it, and inlined it would crowd the uniform
    /// path in GC's loop.
    #[inline(never)]
    fn lpn_of_place(&self, places: usize, first_k: u64, offset: u32) -> u32 {
        match self.places[places].rank(offset) {
            Some(rank) => self.lpn_at(first_k + rank as u64),
            None => UNMAPPED,
        }
    }

    #[inline]
    fn places_of(&self, plane: usize) -> &ValidPlaces {
        &self.places[plane % self.places.len()]
    }
}

impl Dealt {
    /// One class (uniform overwrites) or two (a skew's hot units, then its cold).
    fn new(logical: u64, units_per_plane: u32, mut classes: Vec<DealtClass>) -> Dealt {
        let cold = (classes.len() > 1).then(|| Box::new(classes.pop().expect("two")));
        Dealt {
            logical,
            units_per_plane: Divisor::new(units_per_plane),
            first: classes.pop().expect("a class"),
            cold,
        }
    }

    fn classes(&self) -> impl Iterator<Item = &DealtClass> {
        std::iter::once(&self.first).chain(self.cold.as_deref())
    }

    /// [`DealtClass::lpn_at`] of the first class, whose units start at 0 (all of them, or a
    /// skew's hot ones): no offset to add on the uniform path.
    #[inline]
    fn first_lpn_at(&self, k: u64) -> u32 {
        debug_assert_eq!(self.first.first, 0);
        if k < self.first.count {
            self.first.perm.at(k) as u32
        } else {
            UNMAPPED
        }
    }

    /// The class of `lpn` (below the logical units).
    #[inline]
    fn class_of(&self, lpn: u64) -> &DealtClass {
        match &self.cold {
            Some(c) if lpn >= c.first => c,
            _ => &self.first,
        }
    }

    /// The logical unit dealt to `pun` ([`UNMAPPED`] where none was).
    #[inline]
    pub fn lpn_of(&self, pun: u32) -> u32 {
        let plane = self.units_per_plane.quotient(pun) as usize;
        let offset = self.units_per_plane.remainder(pun);
        if let Some(rank) = self.first.places_of(plane).rank(offset) {
            return self.first_lpn_at(plane as u64 * self.first.per_plane + rank as u64);
        }
        match &self.cold {
            Some(c) => c.lpn_of_place(plane % c.places.len(), plane as u64 * c.per_plane, offset),
            None => UNMAPPED,
        }
    }

    /// The plane of physical unit `pun`, worked out once for [`Dealt::lpn_in_plane`] (GC's walk
    /// down a victim block).
    #[inline]
    pub fn plane_of(&self, pun: u32) -> DealtPlane {
        let plane = self.units_per_plane.quotient(pun);
        DealtPlane {
            places: plane as usize % self.first.places.len(),
            first_unit: plane * self.units_per_plane.get(),
            first_k: plane as u64 * self.first.per_plane,
            cold_first_k: self.cold.as_ref().map_or(0, |c| plane as u64 * c.per_plane),
        }
    }

    /// [`Dealt::lpn_of`] for a unit of the plane `p` says: the same answer without working
    /// the plane out again (a multiply, and a division for the model-plane state).
    #[inline]
    pub fn lpn_in_plane(&self, p: &DealtPlane, pun: u32) -> u32 {
        let offset = pun - p.first_unit;
        if let Some(rank) = self.first.places[p.places].rank(offset) {
            return self.first_lpn_at(p.first_k + rank as u64);
        }
        match &self.cold {
            Some(c) => c.lpn_of_place(p.places, p.cold_first_k, offset),
            None => UNMAPPED,
        }
    }

    /// Where logical unit `lpn` was dealt ([`UNMAPPED`] past the logical units).
    #[inline]
    pub fn pun_of(&self, lpn: u64) -> u32 {
        if lpn >= self.logical {
            return UNMAPPED;
        }
        let c = self.class_of(lpn);
        let (plane, rank) = c.plane_and_rank(lpn);
        let offset = c.places_of(plane).select(rank);
        plane as u32 * self.units_per_plane.get() + offset
    }

    /// Prefetch the sample [`Dealt::pun_of`] starts from (the first of its dependent loads).
    #[inline]
    pub fn prefetch_sample(&self, lpn: u64) {
        if lpn < self.logical {
            let c = self.class_of(lpn);
            let (plane, rank) = c.plane_and_rank(lpn);
            prefetch(&c.places_of(plane).samples, (rank / SAMPLE) as usize);
        }
    }

    /// Prefetch the words [`Dealt::pun_of`] scans (their sample should have arrived); false
    /// past the logical units.
    #[inline]
    pub fn prefetch_words(&self, lpn: u64) -> bool {
        if lpn >= self.logical {
            return false;
        }
        let c = self.class_of(lpn);
        let (plane, rank) = c.plane_and_rank(lpn);
        let places = c.places_of(plane);
        let w = places.samples[(rank / SAMPLE) as usize] as usize;
        // Four words to a cache line: the sampled one's line and the next.
        prefetch(&places.words, w);
        prefetch(&places.words, w + 4);
        true
    }
}

impl Dealt {
    /// How many classes [`Dealt::save_state`] writes (the saved layout's tag, `fill.rs`).
    pub fn class_count(&self) -> u8 {
        self.classes().count() as u8
    }

    /// Each class in turn: its permutation's keys, its units, its valid places per plane, its
    /// model-plane states' count and their places (one class: the layout's format from before
    /// skews, so a saved uniform state reads as it did).
    pub fn save_state<W: Write>(&self, w: &mut StateWriter<W>) -> std::io::Result<()> {
        for c in self.classes() {
            let (mul, add) = c.perm.keys();
            for k in mul.iter().chain(&add) {
                w.u64(*k)?;
            }
            w.u64(c.count)?;
            w.u64(c.per_plane)?;
            w.u64(c.places.len() as u64)?;
            for p in &c.places {
                w.array(&p.bits())?;
            }
        }
        Ok(())
    }

    /// Read what [`Dealt::save_state`] wrote of `classes` classes (1 or 2), for a drive of
    /// `logical` host units, `units` physical ones, `units_per_plane` to a plane.
    pub fn load_state<R: Read>(
        r: &mut StateReader<R>,
        classes: u8,
        logical: u64,
        units_per_plane: u32,
        units: u64,
    ) -> Result<Dealt> {
        if !(1..=2).contains(&classes) {
            return Err(r.error(&format!(
                "steady-state layout: got {classes} classes of units, expected 1 or 2"
            )));
        }
        let planes = units / units_per_plane as u64;
        let words = (units_per_plane as usize).div_ceil(64);
        // Bits past the plane's units (its last word's) must be clear: a place there would be
        // in the next plane, or past the drive.
        let tail_mask = match units_per_plane % 64 {
            0 => 0,
            n => !((1u64 << n) - 1),
        };
        let mut out: Vec<DealtClass> = Vec::new();
        let mut first = 0u64;
        for c in 0..classes as usize {
            let mut keys = [0u64; 6];
            for k in &mut keys {
                *k = r.u64("steady-state permutation")?;
            }
            let last = c + 1 == classes as usize;
            let count = r.u64("steady-state units")?;
            // The last class holds the rest; a first of two at least one and not all.
            if (last && count != logical - first) || (!last && !(1..logical).contains(&count)) {
                return Err(r.error(&format!(
                    "steady-state units (class {c}): got {count}, expected {} (of the \
                     drive's {logical})",
                    if last {
                        format!("{}", logical - first)
                    } else {
                        format!("1 to {}", logical - 1)
                    }
                )));
            }
            let before: u64 = out.iter().map(|c| c.per_plane).sum();
            let per_plane = r.below(
                "valid places per plane",
                units_per_plane as u64 - before + 1,
            )?;
            if per_plane.saturating_mul(planes) < count {
                return Err(r.error(&format!(
                    "valid places per plane: got {per_plane}, too few for {count} units over \
                     {planes} planes"
                )));
            }
            let states = r.below("model-plane states", planes + 1)?;
            if states == 0 {
                return Err(r.error("model-plane states: got 0, expected at least 1"));
            }
            if out.first().is_some_and(|o| o.places.len() as u64 != states) {
                return Err(r.error(&format!(
                    "model-plane states (class {c}): got {states}, expected {} (the first \
                     class's)",
                    out[0].places.len()
                )));
            }
            let perm = Permutation::from_keys(
                count,
                [keys[0], keys[1], keys[2]],
                [keys[3], keys[4], keys[5]],
            )
            .ok_or_else(|| r.error("steady-state permutation: its keys make no permutation"))?;
            let mut places = Vec::with_capacity(states as usize);
            for s in 0..states as usize {
                let bits = r.array::<u64>("model-plane valid places", words)?;
                if bits.last().is_some_and(|&w| w & tail_mask != 0) {
                    return Err(r.error(&format!(
                        "model-plane state {s}: valid places past the plane's {units_per_plane} \
                         units"
                    )));
                }
                // A place is one class's or none: the classes' places never meet.
                let earlier = out.iter().map(|o| o.places[s].bits());
                if earlier
                    .into_iter()
                    .any(|e| e.iter().zip(&bits).any(|(a, b)| a & b != 0))
                {
                    return Err(r.error(&format!(
                        "model-plane state {s}: a valid place in two classes of units"
                    )));
                }
                let p = ValidPlaces::new(bits);
                if p.count() != per_plane {
                    return Err(r.error(&format!(
                        "model-plane state {s}: {} valid places, expected {per_plane}",
                        p.count()
                    )));
                }
                places.push(p);
            }
            out.push(DealtClass {
                perm,
                first,
                count,
                per_plane,
                places,
            });
            first += count;
        }
        Ok(Dealt::new(logical, units_per_plane, out))
    }
}

/// Write window after window (`window` writes one and gives its WAF, or None while nothing is
/// collected yet) until the WAF is steady: at least [`MIN_OVERWRITE`] drives' worth of windows,
/// then the means of the last two groups of [`COMPARED`] windows within [`TOLERANCE`]; at most
/// [`MAX_OVERWRITE`]. The rule every FTL's steady state uses. Returns the windows' WAFs,
/// whether they converged, and how many windows were written.
pub(super) fn converge(
    window: impl FnMut() -> Result<Option<f64>>,
) -> Result<(Vec<f64>, bool, u64)> {
    converge_within(1, window)
}

/// [`converge`] with [`MIN_OVERWRITE`] and [`MAX_OVERWRITE`] `slow` times over (a skew's,
/// [`Skew::slowest_turnover`]).
fn converge_within(
    slow: u64,
    mut window: impl FnMut() -> Result<Option<f64>>,
) -> Result<(Vec<f64>, bool, u64)> {
    let mut wafs: Vec<f64> = Vec::new();
    let mut windows = 0;
    while windows < slow * MAX_OVERWRITE * WINDOW_FRACTION {
        let waf = window()?;
        windows += 1;
        let Some(waf) = waf else { continue };
        wafs.push(waf);
        if windows < slow * MIN_OVERWRITE * WINDOW_FRACTION {
            continue;
        }
        if let Some(w) = last_two_means(&wafs) {
            if (w.0 - w.1).abs() <= TOLERANCE * w.0 {
                return Ok((wafs, true, windows));
            }
        }
    }
    Ok((wafs, false, windows))
}

/// The mean of the last [`COMPARED`] values (None: there are none).
pub(super) fn tail_mean(values: &[f64]) -> Option<f64> {
    let tail = &values[values.len().saturating_sub(COMPARED)..];
    (!tail.is_empty()).then(|| mean(tail))
}

pub(super) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The means of the last [`COMPARED`] windows and of the [`COMPARED`] before them.
pub(super) fn last_two_means(wafs: &[f64]) -> Option<(f64, f64)> {
    let n = wafs.len();
    if n < 2 * COMPARED {
        return None;
    }
    Some((
        mean(&wafs[n - COMPARED..]),
        mean(&wafs[n - 2 * COMPARED..n - COMPARED]),
    ))
}

#[cfg(test)]
mod tests;
