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
            return Err(Error::Sim(
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
            return Err(Error::Sim(
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
    Error::Config(format!(
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
mod tests {
    use super::*;
    use crate::ftl::tests::tiny;

    /// 8 planes of 64 blocks of 64 pages, 12 % spare, greedy GC at 2 free blocks: large enough
    /// for a steady WAF to mean something, small enough to overwrite to it unit by unit.
    fn drive() -> SsdConfig {
        let mut cfg = tiny("greedy", 0);
        cfg.nand.channels = 4;
        cfg.nand.blocks_per_plane = 64;
        cfg.nand.pages_per_block = 256;
        cfg.ftl.over_provisioning = 0.10;
        cfg.ftl.gc.free_threshold = 0.03;
        cfg
    }

    /// Rank and select against counting bit by bit, on block sizes that do and do not divide
    /// a word, with empty words and blocks.
    #[test]
    fn valid_places_rank_and_select_as_counting_says() {
        let mut rng = Rng::stream(9, "places");
        for (units_per_block, blocks, density) in [(64, 8, 2), (96, 7, 3), (40, 20, 5), (256, 3, 1)]
        {
            let units = units_per_block * blocks;
            let mut bits = vec![0u64; (units as usize).div_ceil(64)];
            let mut set = Vec::new();
            for u in 0..units {
                // Whole empty stretches as well as scattered places.
                if (u / 50) % 3 != 1 && rng.below(density) == 0 {
                    bits[(u / 64) as usize] |= 1 << (u % 64);
                    set.push(u);
                }
            }
            let places = ValidPlaces::new(bits);
            assert_eq!(places.count(), set.len() as u64);
            for (rank, &u) in set.iter().enumerate() {
                assert_eq!(places.select(rank as u32), u, "upb {units_per_block}");
                assert_eq!(places.rank(u), Some(rank as u32));
            }
            for u in (0..units).filter(|u| !set.contains(u)) {
                assert_eq!(places.rank(u), None);
            }
        }
    }

    /// GC's walk down a block, with its plane worked out once, gives unit by unit what
    /// `lpn_of` works out from scratch, over every block of a steady-state drive (valid and
    /// stale units, and the spare).
    #[test]
    fn lpn_in_plane_says_what_lpn_of_says() {
        let cfg = drive();
        let mut ftl = Ftl::new(&cfg, 4);
        ftl.reach_steady_state(&cfg, 4, &mut || true).unwrap();
        let dealt = ftl.fill.dealt().expect("dealt");
        let upb = ftl.geo.units_per_block();
        let mut dealt_units = 0;
        for block in 0..ftl.geo.blocks() {
            let first = block * upb;
            let plane = dealt.plane_of(first);
            for pun in first..first + upb {
                let lpn = dealt.lpn_in_plane(&plane, pun);
                assert_eq!(lpn, dealt.lpn_of(pun), "unit {pun}");
                dealt_units += (lpn != UNMAPPED) as u64;
            }
        }
        assert_eq!(dealt_units, ftl.logical_units());
    }

    /// WAF of `count` uniform random overwrites from the drive's state.
    fn waf_of_overwrites(ftl: &mut Ftl, count: u64, seed: u64) -> f64 {
        let (host, moved) = (ftl.stats.host_units_written, ftl.stats.gc_units_moved);
        ftl.instant = true;
        let mut rng = Rng::stream(seed, "test");
        let n = ftl.logical_units();
        for _ in 0..count {
            ftl.write(rng.below(n)).unwrap();
        }
        let host = ftl.stats.host_units_written - host;
        (host + ftl.stats.gc_units_moved - moved) as f64 / host as f64
    }

    #[test]
    fn the_copied_drive_keeps_every_unit_once_and_stays_sound_under_writes() {
        let cfg = drive();
        let mut ftl = Ftl::new(&cfg, 1);
        let steady = ftl.reach_steady_state(&cfg, 1, &mut || true).unwrap();
        assert!(steady.converged, "{steady:?}");
        // The layout is read in closed form: no map entry was written for it.
        assert!(ftl.l2p.iter().chain(&ftl.p2l).all(|&e| e == 0));
        ftl.check().unwrap();
        let n = ftl.logical_units();
        let mut seen = vec![false; ftl.geo.units() as usize];
        for lpn in 0..n {
            let pun = ftl.lookup(lpn).expect("every unit mapped") as usize;
            assert!(!seen[pun], "two units at {pun}");
            seen[pun] = true;
        }
        // The same seed gives the same drive.
        let mut again = Ftl::new(&cfg, 1);
        assert_eq!(
            again.reach_steady_state(&cfg, 1, &mut || true).unwrap(),
            steady
        );
        assert!((0..n).all(|lpn| again.lookup(lpn) == ftl.lookup(lpn)));
        // GC works on the copied blocks as on its own.
        waf_of_overwrites(&mut ftl, 3 * n, 2);
        ftl.check().unwrap();
        assert!((0..n).all(|lpn| ftl.lookup(lpn).is_some()));
    }

    /// `drive()` with `[reliability]`.
    fn worn_drive(pe_limit: u32, factory_bad_block_rate: f64) -> SsdConfig {
        let mut cfg = drive();
        cfg.reliability = Some(crate::config::ReliabilityConfig {
            pe_limit: Some(pe_limit),
            factory_bad_block_rate,
            ..Default::default()
        });
        cfg
    }

    fn mean_erases(ftl: &Ftl) -> f64 {
        let good = ftl.blocks.iter().filter(|b| b.state != BlockState::Bad);
        let (n, sum) = good.fold((0u64, 0u64), |(n, s), b| (n + 1, s + b.erase_count as u64));
        sum as f64 / n as f64
    }

    /// With `[reliability]` the steady state's blocks carry the wear of the overwrites it
    /// stands for: their mean erase count is that of the same drive overwritten unit by unit
    /// as often as the model plane was, and SMART's Percentage Used shows it.
    #[test]
    fn the_steady_state_ages_the_blocks_as_the_overwrites_it_stands_for() {
        let cfg = worn_drive(1000, 0.0);
        let mut copied = Ftl::new(&cfg, 3);
        let steady = copied.reach_steady_state(&cfg, 3, &mut || true).unwrap();
        let mut overwritten = Ftl::new(&cfg, 3);
        overwritten.precondition(true, steady.overwrite, 3).unwrap();
        let (c, o) = (mean_erases(&copied), mean_erases(&overwritten));
        assert!(c > 1.0, "no wear: {c}");
        assert!(
            (c - o).abs() <= 0.05 * o,
            "copied {c:.3}, overwritten {o:.3}"
        );
        assert!((copied.percentage_used() - c / 1000.0 * 100.0).abs() < 1e-9);
        let w = copied.wear.as_ref().unwrap();
        assert_eq!((w.retired_blocks, w.factory_bad_blocks), (0, 0));
        assert!(!w.read_only);
        assert_eq!(copied.available_spare_percent(), 100.0);
        copied.check().unwrap();
    }

    /// Factory bad blocks: every plane gets the model plane's (the drive's plane 0's draw),
    /// none holds data, the counts say so, and the drive writes on without touching them. An
    /// endurance the overwrites would exhaust is a one-line error naming the field.
    #[test]
    fn the_steady_state_keeps_factory_bad_blocks_and_refuses_to_wear_out() {
        let cfg = worn_drive(1000, 0.03);
        let mut ftl = Ftl::new(&cfg, 5);
        ftl.reach_steady_state(&cfg, 5, &mut || true).unwrap();
        let bpp = ftl.geo.blocks_per_plane as usize;
        let bad_of = |p: usize| -> Vec<usize> {
            (0..bpp)
                .filter(|&b| ftl.blocks[p * bpp + b].state == BlockState::Bad)
                .collect()
        };
        let plane0 = bad_of(0);
        assert!(!plane0.is_empty());
        assert!((1..ftl.planes.len()).all(|p| bad_of(p) == plane0));
        let w = ftl.wear.clone().unwrap();
        assert_eq!(
            w.factory_bad_blocks,
            (plane0.len() * ftl.planes.len()) as u64
        );
        assert_eq!(
            w.good_blocks,
            ftl.blocks.len() as u64 - w.factory_bad_blocks
        );
        assert!(ftl
            .blocks
            .iter()
            .all(|b| b.state != BlockState::Bad || b.valid == 0));
        let n = ftl.logical_units();
        let mut rng = Rng::stream(6, "test");
        for _ in 0..2 * n {
            ftl.write_checked(rng.below(n)).unwrap().unwrap();
        }
        ftl.check().unwrap();
        assert!(ftl
            .blocks
            .iter()
            .all(|b| b.state != BlockState::Bad || b.write_ptr == 0 || b.erase_count >= 1000));

        let cfg = worn_drive(3, 0.0);
        let e = Ftl::new(&cfg, 5)
            .reach_steady_state(&cfg, 5, &mut || true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("reliability.pe_limit") && !e.contains('\n'),
            "{e}"
        );
    }

    /// The oracle: a drive overwritten unit by unit for 8 × its capacity is in the steady
    /// state; the copied drive must write at its WAF from the first window on (a model plane
    /// that did not overwrite reports WAF 1 and fails this).
    #[test]
    fn the_copied_drive_writes_at_the_waf_of_a_drive_overwritten_to_steady_state() {
        let cfg = drive();
        let mut overwritten = Ftl::new(&cfg, 3);
        overwritten.precondition(true, 8.0, 3).unwrap();
        let n = overwritten.logical_units();
        let window = n / 4;
        let reference = waf_of_overwrites(&mut overwritten, 2 * n, 4);

        let mut copied = Ftl::new(&cfg, 3);
        let steady = copied.reach_steady_state(&cfg, 3, &mut || true).unwrap();
        let first = waf_of_overwrites(&mut copied, window, 4);
        let later = waf_of_overwrites(&mut copied, 2 * n, 5);

        let near = |x: f64, tol: f64| (x - reference).abs() <= tol * reference;
        assert!(
            near(steady.waf, 0.05) && near(first, 0.10) && near(later, 0.05),
            "reference {reference:.3}, model plane {:.3}, first window {first:.3}, \
             later {later:.3}",
            steady.waf
        );
    }

    /// WAF of `count` uniform random overwrites, each in one of `handles` streams drawn
    /// uniformly.
    fn waf_with_handles(ftl: &mut Ftl, count: u64, handles: u64, seed: u64) -> f64 {
        let (host, moved) = (ftl.stats.host_units_written, ftl.stats.gc_units_moved);
        ftl.instant = true;
        let mut rng = Rng::stream(seed, "test");
        let n = ftl.logical_units();
        for _ in 0..count {
            let lpn = rng.below(n);
            ftl.write_in(lpn, rng.below(handles) as u8).unwrap();
        }
        let host = ftl.stats.host_units_written - host;
        (host + ftl.stats.gc_units_moved - moved) as f64 / host as f64
    }

    /// FDP: the drive itself is overwritten with its handles drawn uniformly; it must write at
    /// the WAF of a drive filled and overwritten so for 8 × its capacity from the first window
    /// on, hold every unit once, keep each block to one handle's host data (`check`), and
    /// leave each handle its share of the data (within 5 %).
    #[test]
    fn an_fdp_drive_reaches_the_waf_of_one_overwritten_with_its_handles() {
        for (handles, groups) in [(2u64, 1u32), (3, 2)] {
            let ov: Vec<String> = [
                "nand.channels=2",
                "nand.dies_per_package=1",
                "nand.blocks_per_plane=80",
                "nand.pages_per_block=16",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([
                format!("fdp.handles={handles}"),
                format!("fdp.reclaim_groups={groups}"),
            ])
            .collect();
            let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
            let mut overwritten = Ftl::new(&cfg, 3);
            overwritten.precondition(true, 0.0, 3).unwrap();
            let n = overwritten.logical_units();
            waf_with_handles(&mut overwritten, 8 * n, handles, 4);
            let reference = waf_with_handles(&mut overwritten, 2 * n, handles, 5);

            let mut drive = Ftl::new(&cfg, 3);
            let steady = drive.reach_steady_state(&cfg, 3, &mut || true).unwrap();
            drive.check().unwrap();
            assert!((0..n).all(|lpn| drive.lookup(lpn).is_some()));
            let st = drive.streams.as_deref().unwrap();
            for h in 0..handles {
                let share = (0..n)
                    .filter(|&l| st.lpn_stream[l as usize] as u64 == h)
                    .count() as f64
                    / n as f64;
                let want = 1.0 / handles as f64;
                assert!((share - want).abs() < 0.05 * want, "handle {h}: {share:.3}");
            }
            let mut again = Ftl::new(&cfg, 3);
            assert_eq!(
                again.reach_steady_state(&cfg, 3, &mut || true).unwrap(),
                steady
            );
            assert!((0..n).all(|lpn| again.lookup(lpn) == drive.lookup(lpn)));

            let first = waf_with_handles(&mut drive, n / 4, handles, 5);
            let later = waf_with_handles(&mut drive, 2 * n, handles, 6);
            drive.check().unwrap();
            let near = |x: f64, tol: f64| (x - reference).abs() <= tol * reference;
            assert!(
                near(steady.waf, 0.05) && near(first, 0.10) && near(later, 0.05),
                "{handles} handles: reference {reference:.3}, reached {steady:?}, first window \
                 {first:.3}, later {later:.3}"
            );
        }
    }

    /// Plain write streams (`ftl.streams = 2`, with and without `ftl.gc.per_stream`) reach
    /// theirs as FDP does: the drive converges to the WAF of one overwritten with its streams
    /// drawn uniformly, holds every unit exactly once, keeps each host block to one stream's
    /// data (and, with GC per stream, every GC block too), leaves each stream half the data,
    /// and is the same for the same seed.
    #[test]
    fn a_drive_with_write_streams_reaches_the_waf_of_one_overwritten_with_them() {
        for per_stream in [false, true] {
            let ov: Vec<String> = [
                "nand.channels=2",
                "nand.dies_per_package=1",
                "nand.blocks_per_plane=80",
                "nand.pages_per_block=16",
                "ftl.streams=2",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([format!("ftl.gc.per_stream={per_stream}")])
            .collect();
            let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
            let mut overwritten = Ftl::new(&cfg, 3);
            overwritten.precondition(true, 0.0, 3).unwrap();
            let n = overwritten.logical_units();
            waf_with_handles(&mut overwritten, 8 * n, 2, 4);
            let reference = waf_with_handles(&mut overwritten, 2 * n, 2, 5);

            let mut drive = Ftl::new(&cfg, 3);
            let steady = drive.reach_steady_state(&cfg, 3, &mut || true).unwrap();
            assert!(steady.converged, "{steady:?}");
            drive.check().unwrap();
            let mut seen = vec![false; drive.geo.units() as usize];
            for lpn in 0..n {
                let pun = drive.lookup(lpn).expect("every unit mapped") as usize;
                assert!(!seen[pun], "two units at {pun}");
                seen[pun] = true;
            }
            let st = drive.streams.as_deref().unwrap();
            for s in 0..2u8 {
                let share =
                    (0..n).filter(|&l| st.lpn_stream[l as usize] == s).count() as f64 / n as f64;
                assert!((share - 0.5).abs() < 0.025, "stream {s}: {share:.3}");
            }
            let upb = drive.geo.units_per_block();
            for b in 0..drive.blocks.len() as u32 {
                let owner = st.block_stream[b as usize];
                if owner == crate::ftl::GC_STREAM {
                    assert!(!per_stream, "block {b}: GC's own with GC per stream");
                    continue;
                }
                for pun in b * upb..(b + 1) * upb {
                    let lpn = drive.p2l_at(pun);
                    if lpn != UNMAPPED {
                        assert_eq!(st.lpn_stream[lpn as usize], owner, "block {b}, lpn {lpn}");
                    }
                }
            }
            let mut again = Ftl::new(&cfg, 3);
            assert_eq!(
                again.reach_steady_state(&cfg, 3, &mut || true).unwrap(),
                steady
            );
            assert!((0..n).all(|lpn| again.lookup(lpn) == drive.lookup(lpn)));

            let first = waf_with_handles(&mut drive, n / 4, 2, 5);
            let later = waf_with_handles(&mut drive, 2 * n, 2, 6);
            drive.check().unwrap();
            let near = |x: f64, tol: f64| (x - reference).abs() <= tol * reference;
            assert!(
                near(steady.waf, 0.05) && near(first, 0.10) && near(later, 0.05),
                "GC per stream {per_stream}: reference {reference:.3}, reached {steady:?}, \
                 first window {first:.3}, later {later:.3}"
            );
        }
    }

    /// With `[reliability]`, FDP's and write streams' steady state writes through the checked
    /// path: the drive's blocks carry the wear of its overwrites, its factory bad blocks are
    /// never written, every unit is mapped once, the same seed gives the same drive, and an
    /// endurance the overwrites would exhaust is a one-line error naming the field.
    #[test]
    fn streams_reach_their_steady_state_through_the_wear_model() {
        for streams in ["fdp.handles=2", "ftl.streams=2"] {
            let cfg_with = |pe_limit: u32| {
                let ov: Vec<String> = [
                    "nand.channels=2",
                    "nand.dies_per_package=1",
                    "nand.blocks_per_plane=80",
                    "nand.pages_per_block=16",
                    "reliability.factory_bad_block_rate=0.03",
                    streams,
                ]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("reliability.pe_limit={pe_limit}")])
                .collect();
                SsdConfig::resolve("small-tlc", &ov).unwrap()
            };
            let cfg = cfg_with(1000);
            let mut drive = Ftl::new(&cfg, 7);
            let bad_before: Vec<usize> = (0..drive.blocks.len())
                .filter(|&b| drive.blocks[b].state == BlockState::Bad)
                .collect();
            assert!(!bad_before.is_empty(), "{streams}: no factory bad block");
            let steady = drive.reach_steady_state(&cfg, 7, &mut || true).unwrap();
            assert!(steady.converged, "{streams}: {steady:?}");
            drive.check().unwrap();
            let n = drive.logical_units();
            let mut seen = vec![false; drive.geo.units() as usize];
            for lpn in 0..n {
                let pun = drive.lookup(lpn).expect("every unit mapped") as usize;
                assert!(!seen[pun], "{streams}: two units at {pun}");
                seen[pun] = true;
            }
            assert!(bad_before
                .iter()
                .all(|&b| drive.blocks[b].write_ptr == 0 && drive.blocks[b].valid == 0));
            assert!(
                mean_erases(&drive) > 1.0,
                "{streams}: {}",
                mean_erases(&drive)
            );
            let w = drive.wear.as_ref().unwrap();
            assert_eq!(w.factory_bad_blocks, bad_before.len() as u64);
            assert_eq!(w.retired_blocks, 0);
            let mut again = Ftl::new(&cfg, 7);
            assert_eq!(
                again.reach_steady_state(&cfg, 7, &mut || true).unwrap(),
                steady
            );
            assert!((0..n).all(|lpn| again.lookup(lpn) == drive.lookup(lpn)));

            let cfg = cfg_with(3);
            let e = Ftl::new(&cfg, 7)
                .reach_steady_state(&cfg, 7, &mut || true)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("reliability.pe_limit") && !e.contains('\n'),
                "{streams}: {e}"
            );
        }
    }
}
