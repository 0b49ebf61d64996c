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
//! planes' collections stand at different points while their host write pointers stay in line
//! (as round-robin striping keeps them), are copied to every plane of the drive, and
//! the drive's logical units are dealt over the valid places at random (a [`Permutation`], so
//! neighbouring units land on unrelated planes, as random overwrites leave them).

use super::state_io::{StateReader, StateWriter};
use super::{Block, BlockState, Ftl, Refusal, NONE, UNMAPPED};
use crate::config::{MappingKind, SsdConfig};
use crate::error::{Error, Result};
use crate::media::nand::Divisor;
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

/// One state of the model plane, to be copied to planes of the drive.
struct Snapshot {
    blocks: Vec<Block>,
    /// Free blocks, open blocks: plane-local block numbers.
    free: Vec<u32>,
    host_open: u32,
    gc_open: u32,
    /// The plane-local units that hold valid data.
    valid: ValidPlaces,
    clock: u64,
}

impl Snapshot {
    fn of(model: &Ftl) -> Snapshot {
        let units = model.geo.units() as u32;
        Snapshot {
            blocks: model.blocks.clone(),
            free: model.planes[0].free.to_vec(),
            host_open: model.planes[0].host_open,
            gc_open: model.planes[0].gc_open,
            valid: {
                let mut bits = vec![0u64; units.div_ceil(64) as usize];
                for u in (0..units).filter(|&u| model.p2l_at(u) != UNMAPPED) {
                    bits[(u / 64) as usize] |= 1 << (u % 64);
                }
                ValidPlaces::new(bits)
            },
            clock: model.clock,
        }
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

impl Ftl {
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
            let (steady, _) = self.run_to_steady_state(seed, streams, 0, keep_going)?;
            return Ok(steady);
        }
        if !unused || self.streams.is_some() {
            // Validation refuses the configs this cannot copy; a used drive is a caller's bug.
            return Err(Error::device(
                "steady-state preconditioning needs a fresh drive".into(),
            ));
        }
        let planes = self.planes.len() as u64;
        let logical = self.logical_units();
        let per_plane = logical.div_ceil(planes);
        let model_cfg = model_config(cfg);
        let mut model = Ftl::with_logical_units(&model_cfg, seed, per_plane);
        let (steady, snapshots) =
            model.run_to_steady_state(seed, 1, SNAPSHOTS.min(planes), keep_going)?;
        self.copy_planes(snapshots, seed, keep_going)?;
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

    /// Fill this (model) drive and overwrite it at random until its WAF is steady, each write
    /// in one of `handles` write streams drawn uniformly (one: no draw); then take `count`
    /// states a block of host writes apart. Round-robin striping gives every plane of
    /// the drive the same number of host writes, so their host blocks fill in step: states
    /// apart by less than a block would put the planes' host write pointers out of line (the
    /// copied drive then wrote 4 % below the overwritten one over 1,952 writes per plane).
    fn run_to_steady_state(
        &mut self,
        seed: u64,
        handles: u64,
        count: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<(SteadyState, Vec<Snapshot>)> {
        if handles > 1 {
            self.fill_with_handles(seed, handles, keep_going)?;
        } else {
            self.precondition_with(true, 0.0, seed, keep_going)?;
        }
        let n = self.logical_units();
        let was = self.instant;
        self.instant = true;
        let mut rng = Rng::stream(seed, "precondition.steady_state");
        let mut written = 0u64;
        let mut write = |ftl: &mut Ftl, count: u64| -> Result<()> {
            for _ in 0..count {
                written += 1;
                if written.is_multiple_of(1 << 16) && !keep_going() {
                    return Err(Error::Interrupted);
                }
                let lpn = rng.below(n);
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
        let (wafs, converged, windows) = converge(|| {
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
        let mut snapshots = Vec::new();
        if count > 0 {
            snapshots.push(Snapshot::of(self));
        }
        for _ in 1..count {
            write(self, upb)?;
            snapshots.push(Snapshot::of(self));
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
    /// each plane's in unit order) takes the unit the permutation sends k to. Places past the
    /// logical units (the planes' shares round up) are let go of. Only block records are
    /// written (their programmed prefixes say which units are programmed): the map reads the dealing in closed form ([`Dealt`]), so a
    /// 1 TiB drive is laid out without a billion scattered writes into its map tables, and
    /// memory follows what the run then touches.
    fn copy_planes(
        &mut self,
        snapshots: Vec<Snapshot>,
        seed: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<()> {
        let bpp = self.geo.blocks_per_plane;
        let upb = self.geo.units_per_block() as u64;
        let units_per_plane = bpp as u64 * upb;
        let planes = self.planes.len();
        let logical = self.logical_units();
        let mut clock = 0;
        let per_plane = snapshots[0].valid.count();
        if snapshots.iter().any(|s| s.valid.count() != per_plane) {
            return Err(Error::device(
                "steady-state preconditioning: the model plane's states hold different numbers \
                 of valid units (a bug: its writes only move them)"
                    .into(),
            ));
        }
        let mut k = 0u64;
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
            let here = per_plane;
            // The places past the logical units hold nothing: their blocks let them go.
            if k + here > logical {
                let first_unit = p as u64 * units_per_plane;
                for rank in logical.saturating_sub(k)..here {
                    let pun = first_unit + s.valid.select(rank as u32) as u64;
                    self.blocks[(pun / upb) as usize].valid -= 1;
                }
            }
            k += here;
        }
        self.clock = clock;
        let perm = Permutation::new(logical, &mut Rng::stream(seed, "precondition.steady_state"));
        self.fill.set_dealt(Dealt {
            perm,
            logical,
            units_per_plane: Divisor::new(units_per_plane as u32),
            per_plane,
            places: snapshots.into_iter().map(|s| s.valid).collect(),
        });
        Ok(())
    }
}

/// The model plane wore out into read-only mode on its way to the steady state: the drive's
/// blocks would retire before the state it stands for, which the copy cannot lay out.
fn worn_out(model: &Ftl, refusal: Refusal) -> Error {
    let w = model.wear.as_ref().expect("with [reliability]");
    Error::config(format!(
        "precondition.fill: got \"steady-state\", but the overwrites that reach it wear the \
         drive out ({refusal:?}: {} blocks retired (of the model plane; with write streams, of \
         the drive) at reliability.pe_limit = {}, \
         {} bad from the factory): raise reliability.pe_limit or lower \
         reliability.factory_bad_block_rate, or precondition with \"sequential\" and \
         precondition.random_overwrite",
        w.retired_blocks, w.pe_limit, w.factory_bad_blocks
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
/// unit, and the place number of its first valid place.
#[derive(Clone, Copy, Debug)]
pub(super) struct DealtPlane {
    places: usize,
    first_unit: u32,
    first_k: u64,
}

/// Where steady-state preconditioning dealt the logical units, in closed form (read by the map
/// for entries nobody wrote since, `fill.rs`): valid place k of the drive, counting plane by
/// plane and each plane's valid places in unit order, holds logical unit `perm(k)`; plane p's
/// valid places are those of model-plane state p mod the states' count.
#[derive(Clone, Debug)]
pub(super) struct Dealt {
    perm: Permutation,
    logical: u64,
    units_per_plane: Divisor,
    /// Valid places in every plane: the model plane's logical units, all mapped in each of its
    /// states (its writes only move them).
    per_plane: u64,
    places: Vec<ValidPlaces>,
}

impl Dealt {
    /// The logical unit dealt to `pun` ([`UNMAPPED`] where none was).
    #[inline]
    pub fn lpn_of(&self, pun: u32) -> u32 {
        let plane = self.units_per_plane.quotient(pun) as usize;
        let offset = self.units_per_plane.remainder(pun);
        let Some(rank) = self.places[plane % self.places.len()].rank(offset) else {
            return UNMAPPED;
        };
        let k = plane as u64 * self.per_plane + rank as u64;
        if k < self.logical {
            self.perm.at(k) as u32
        } else {
            UNMAPPED
        }
    }

    /// The plane of physical unit `pun`, worked out once for [`Dealt::lpn_in_plane`] (GC's walk
    /// down a victim block).
    #[inline]
    pub fn plane_of(&self, pun: u32) -> DealtPlane {
        let plane = self.units_per_plane.quotient(pun);
        DealtPlane {
            places: plane as usize % self.places.len(),
            first_unit: plane * self.units_per_plane.get(),
            first_k: plane as u64 * self.per_plane,
        }
    }

    /// [`Dealt::lpn_of`] for a unit of the plane `p` says: the same answer without working
    /// the plane out again (a multiply, and a division for the model-plane state).
    #[inline]
    pub fn lpn_in_plane(&self, p: &DealtPlane, pun: u32) -> u32 {
        let Some(rank) = self.places[p.places].rank(pun - p.first_unit) else {
            return UNMAPPED;
        };
        let k = p.first_k + rank as u64;
        if k < self.logical {
            self.perm.at(k) as u32
        } else {
            UNMAPPED
        }
    }

    /// Where logical unit `lpn` was dealt ([`UNMAPPED`] past the logical units).
    #[inline]
    pub fn pun_of(&self, lpn: u64) -> u32 {
        if lpn >= self.logical {
            return UNMAPPED;
        }
        let (plane, rank) = self.plane_and_rank(lpn);
        let offset = self.places[plane % self.places.len()].select(rank);
        plane as u32 * self.units_per_plane.get() + offset
    }

    /// The plane of the valid place dealt to `lpn` (below the logical units), and its rank
    /// among that plane's.
    #[inline]
    fn plane_and_rank(&self, lpn: u64) -> (usize, u32) {
        let k = self.perm.inverse_at(lpn);
        ((k / self.per_plane) as usize, (k % self.per_plane) as u32)
    }

    /// Prefetch the sample [`Dealt::pun_of`] starts from (the first of its dependent loads).
    #[inline]
    pub fn prefetch_sample(&self, lpn: u64) {
        if lpn < self.logical {
            let (plane, rank) = self.plane_and_rank(lpn);
            let places = &self.places[plane % self.places.len()];
            prefetch(&places.samples, (rank / SAMPLE) as usize);
        }
    }

    /// Prefetch the words [`Dealt::pun_of`] scans (their sample should have arrived); false
    /// past the logical units.
    #[inline]
    pub fn prefetch_words(&self, lpn: u64) -> bool {
        if lpn >= self.logical {
            return false;
        }
        let (plane, rank) = self.plane_and_rank(lpn);
        let places = &self.places[plane % self.places.len()];
        let w = places.samples[(rank / SAMPLE) as usize] as usize;
        // Four words to a cache line: the sampled one's line and the next.
        prefetch(&places.words, w);
        prefetch(&places.words, w + 4);
        true
    }
}

impl Dealt {
    pub fn save_state<W: Write>(&self, w: &mut StateWriter<W>) -> std::io::Result<()> {
        let (mul, add) = self.perm.keys();
        for k in mul.iter().chain(&add) {
            w.u64(*k)?;
        }
        w.u64(self.logical)?;
        w.u64(self.per_plane)?;
        w.u64(self.places.len() as u64)?;
        for p in &self.places {
            w.array(&p.bits())?;
        }
        Ok(())
    }

    pub fn load_state<R: Read>(
        r: &mut StateReader<R>,
        logical: u64,
        units_per_plane: u32,
        units: u64,
    ) -> Result<Dealt> {
        let mut keys = [0u64; 6];
        for k in &mut keys {
            *k = r.u64("steady-state permutation")?;
        }
        let dealt_logical = r.u64("steady-state units")?;
        if dealt_logical != logical {
            return Err(r.error(&format!(
                "steady-state units: got {dealt_logical}, expected {logical} (the drive's)"
            )));
        }
        let planes = units / units_per_plane as u64;
        let per_plane = r.below("valid places per plane", units_per_plane as u64 + 1)?;
        if per_plane.saturating_mul(planes) < logical {
            return Err(r.error(&format!(
                "valid places per plane: got {per_plane}, too few for {logical} units over \
                 {planes} planes"
            )));
        }
        let count = r.below("model-plane states", planes + 1)?;
        if count == 0 {
            return Err(r.error("model-plane states: got 0, expected at least 1"));
        }
        let perm = Permutation::from_keys(
            logical,
            [keys[0], keys[1], keys[2]],
            [keys[3], keys[4], keys[5]],
        )
        .ok_or_else(|| r.error("steady-state permutation: its keys make no permutation"))?;
        let words = (units_per_plane as usize).div_ceil(64);
        let mut places = Vec::with_capacity(count as usize);
        // Bits past the plane's units (its last word's) must be clear: a place there would be
        // in the next plane, or past the drive.
        let tail_mask = match units_per_plane % 64 {
            0 => 0,
            n => !((1u64 << n) - 1),
        };
        for s in 0..count {
            let bits = r.array::<u64>("model-plane valid places", words)?;
            if bits.last().is_some_and(|&w| w & tail_mask != 0) {
                return Err(r.error(&format!(
                    "model-plane state {s}: valid places past the plane's {units_per_plane} units"
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
        Ok(Dealt {
            perm,
            logical,
            units_per_plane: Divisor::new(units_per_plane),
            per_plane,
            places,
        })
    }
}

/// Write window after window (`window` writes one and gives its WAF, or None while nothing is
/// collected yet) until the WAF is steady: at least [`MIN_OVERWRITE`] drives' worth of windows,
/// then the means of the last two groups of [`COMPARED`] windows within [`TOLERANCE`]; at most
/// [`MAX_OVERWRITE`]. The rule every FTL's steady state uses. Returns the windows' WAFs,
/// whether they converged, and how many windows were written.
pub(super) fn converge(
    mut window: impl FnMut() -> Result<Option<f64>>,
) -> Result<(Vec<f64>, bool, u64)> {
    let mut wafs: Vec<f64> = Vec::new();
    let mut windows = 0;
    while windows < MAX_OVERWRITE * WINDOW_FRACTION {
        let waf = window()?;
        windows += 1;
        let Some(waf) = waf else { continue };
        wafs.push(waf);
        if windows < MIN_OVERWRITE * WINDOW_FRACTION {
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
