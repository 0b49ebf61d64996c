//! The power-loss model of the page-mapped FTL (issue 43; see docs/power-loss.md): what each
//! NAND unit's out-of-band area holds, which map checkpoints are on flash, what the volatile
//! write cache holds, and — at a cut — what recovery rebuilds from them, how long it takes on
//! the media and which writes it lost.
//!
//! What is durable where:
//! - every program writes the unit's logical address, a sequence number (one counter for the
//!   whole drive, taken when the FTL maps the unit) and the data's version into the unit's
//!   out-of-band area; a unit whose program had not finished at the cut is torn or never
//!   started, and reads as neither (its out-of-band area is invalid);
//! - the map is checkpointed to flash every `ftl.checkpoint_units` host map units written. A
//!   checkpoint is a barrier: it holds the entries of every placement whose program had
//!   finished (and every trim done) when it was taken; placements still in flight at that time
//!   are found by the scan, since recovery scans every block that received a placement at or
//!   after the oldest one still in flight. It programs the map pages (one map unit each, 4 B
//!   entries, as a cached map's translation pages) holding an entry changed since the one
//!   before, through the FIL like any program (`ftl/checkpoint.rs` keeps them in the map: die
//!   time, pages of the drive, a share of the write amplification, GC moving live ones); it
//!   counts for recovery once those programs, and every earlier checkpoint's, have finished;
//! - the DRAM write cache is volatile: its dirty lines are lost at a cut, unless the drive has
//!   power-loss protection (`ftl.power_loss_protection`), whose capacitors then finish the
//!   programs in flight and write the dirty lines out.
//!
//! Recovery reads the last checkpoint and scans the out-of-band areas of the blocks written
//! since (highest sequence number wins). For each logical unit that gives the checkpoint's
//! place for it if its block was not erased since, the newest copy the scan finds whose
//! program finished, or the durable trim newer than both; a unit with none reads unmapped. A
//! trim is durable at a checkpoint, at a completed FLUSH, or once GC erased the data it let
//! go (docs/power-loss.md, "Trims no checkpoint holds"). The model computes that result directly from
//! its records (the same as a scan of every block would find, the barrier making the
//! checkpoint agree with it) and charges the media time of the checkpoint read and of the
//! scan of the blocks written since the checkpoint.
//!
//! Versions: each update (write or trim) of a logical unit the controller accepts gets the
//! next version of that unit, from 1; 0 is what the unit held when the model started.

use crate::ftl::{AnyFtl, UNMAPPED};
use crate::media::nand::{Geometry, NandTimingPs};
use crate::sim::SimTime;
use crate::stats::result::PowerLossResult;
use std::collections::{HashMap, HashSet, VecDeque};

/// Bytes of a map entry in a checkpoint: a 4-byte physical address, as DFTL's translation
/// pages hold them (Gupta et al., ASPLOS 2009) and `ftl.mapping_entry` defaults to.
const CHECKPOINT_ENTRY_BYTES: u64 = 4;

/// Bytes recovery moves per scanned page: the out-of-band records of the page's units
/// (logical address and sequence number, 8 B each per unit; assumed, the spare area's layout
/// is the vendor's).
const OOB_RECORD_BYTES: u64 = 16;

/// Logical units the result lists by number (the count covers them all).
const LISTED_UNITS: usize = 64;

/// What a unit's out-of-band area says after its program.
#[derive(Clone, Copy, Debug)]
struct Oob {
    lpn: u64,
    seq: u64,
    version: u32,
    /// The block's erase epoch when the unit was placed: the record is gone once it moves on.
    epoch: u32,
}

/// A placement of a logical unit's data: its sequence number, version, unit and the unit's
/// block epoch then.
#[derive(Clone, Copy, Debug)]
struct Placed {
    seq: u64,
    version: u32,
    pun: u32,
    epoch: u32,
}

/// One logical unit the model has seen change.
#[derive(Clone, Debug, Default)]
struct UnitLog {
    /// Updates accepted (the newest version).
    accepted: u32,
    /// The newest version whose completion reached the host.
    acknowledged: u32,
    /// Where the unit's data was when the model first saw it change (unit, block epoch);
    /// None: unmapped.
    base: Option<(u32, u32)>,
    /// The updates that were trims, with the sequence number the map took them at.
    trims: Vec<(u32, u64)>,
    /// Its placements the model saw (writes, flushes, GC moves), in order: the newest below the last checkpoint's barrier is the place the checkpoint
    /// holds for the unit (none: the base copy).
    placed: Vec<Placed>,
}

/// A checkpoint taken whose map pages are not all on flash yet.
#[derive(Clone, Copy, Debug)]
struct Taken {
    number: u64,
    /// Its map pages whose programs have not finished.
    pages_left: u64,
    /// Its barrier and the sequence number it was taken at (see `PowerLoss`'s fields).
    barrier: u64,
    seq: u64,
}

/// What a cut leaves: the figures of the result and, for tests, each logical unit's version
/// after recovery.
#[derive(Clone, Debug)]
pub struct PowerCutOutcome {
    pub result: PowerLossResult,
    /// Per logical unit the model saw change: the version recovery reads back (0: what it held
    /// before), or None when it reads unmapped though it held data (neither old nor new).
    pub recovered: HashMap<u64, Option<u32>>,
}

pub struct PowerLoss {
    plp: bool,
    checkpoint_units: u64,
    logical_units: u64,
    next_seq: u64,
    oob: HashMap<u32, Oob>,
    units: HashMap<u64, UnitLog>,
    /// The buffer lines written by the host: slot → (unit, version) it holds now.
    lines: HashMap<u32, (u64, u32)>,
    /// The highest sequence number placed in each block.
    block_seq: HashMap<u32, u64>,
    /// Placements whose program may not have finished, oldest first: (seq, unit, epoch,
    /// logical unit).
    pending: VecDeque<(u64, u32, u32, u64)>,
    host_units_since_checkpoint: u64,
    /// Placements below this sequence number were on flash at the last checkpoint on flash.
    checkpoint_barrier: u64,
    /// Map updates (trims) below this sequence number are in the last checkpoint on flash.
    checkpoint_seq: u64,
    /// Checkpoints taken whose map pages (or an earlier one's) are still being programmed,
    /// oldest first; and the map pages of those taken whose programs the controller has not
    /// issued yet (`FlashPort::program_checkpoint`), each with its checkpoint's number.
    in_flight: VecDeque<Taken>,
    due: Vec<(u64, u64)>,
    checkpoints_on_flash: u64,
    checkpoint_pages_moved: u64,
    /// Trims below this sequence number were made durable by a FLUSH that completed.
    flushed_seq: u64,
    checkpoints: u64,
    /// Map entries per page of a checkpoint, the map's pages, and the map pages holding an
    /// entry changed since the last checkpoint (those the next one writes).
    entries_per_map_page: u64,
    map_pages: u64,
    dirty_map_pages: HashSet<u64>,
    checkpoint_pages_written: u64,
}

impl PowerLoss {
    /// The model from now on, the drive as it stands taken as checkpointed (the
    /// preconditioning's map is on flash when the run starts: assumed). The FTL's map gains
    /// the checkpoint's map pages, each one map unit (`ftl/checkpoint.rs`).
    pub fn new(plp: bool, checkpoint_units: u64, ftl: &mut AnyFtl) -> PowerLoss {
        let logical_units = ftl.logical_units();
        let entries_per_map_page = (ftl.geo.unit_bytes / CHECKPOINT_ENTRY_BYTES).max(1);
        let map_pages = logical_units.div_ceil(entries_per_map_page);
        if ftl.checkpoint_pages() == 0 {
            ftl.add_checkpoint_pages(map_pages);
        }
        PowerLoss {
            entries_per_map_page,
            map_pages,
            in_flight: VecDeque::new(),
            due: Vec::new(),
            checkpoints_on_flash: 0,
            checkpoint_pages_moved: 0,
            dirty_map_pages: HashSet::new(),
            checkpoint_pages_written: 0,
            plp,
            checkpoint_units: checkpoint_units.max(1),
            logical_units,
            next_seq: 1,
            oob: HashMap::new(),
            units: HashMap::new(),
            lines: HashMap::new(),
            block_seq: HashMap::new(),
            pending: VecDeque::new(),
            host_units_since_checkpoint: 0,
            checkpoint_barrier: 1,
            checkpoint_seq: 1,
            flushed_seq: 1,
            checkpoints: 0,
        }
    }

    /// The unit's record, made with `old` (where it is mapped before this change) as its base
    /// the first time.
    fn unit(&mut self, lpn: u64, old: Option<u32>, ftl: &AnyFtl) -> &mut UnitLog {
        self.units.entry(lpn).or_insert_with(|| UnitLog {
            base: old.map(|p| (p, ftl.blocks()[ftl.geo.block_of_unit(p) as usize].epoch)),
            ..UnitLog::default()
        })
    }

    fn place(&mut self, lpn: u64, pun: u32, version: u32, ftl: &AnyFtl) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let block = ftl.geo.block_of_unit(pun);
        let epoch = ftl.blocks()[block as usize].epoch;
        self.oob.insert(
            pun,
            Oob {
                lpn,
                seq,
                version,
                epoch,
            },
        );
        self.block_seq.insert(block, seq);
        self.pending.push_back((seq, pun, epoch, lpn));
        self.map_changed(lpn);
        if let Some(u) = self.units.get_mut(&lpn) {
            u.placed.push(Placed {
                seq,
                version,
                pun,
                epoch,
            });
        }
    }

    /// A host map unit was written (to NAND or into the cache): a checkpoint when one is due.
    fn host_unit(&mut self, ftl: &AnyFtl) {
        self.host_units_since_checkpoint += 1;
        if self.host_units_since_checkpoint >= self.checkpoint_units {
            self.checkpoint(ftl);
        }
    }

    /// Take a checkpoint: the map pages changed since the last one are due to be programmed
    /// (`FlashPort::program_checkpoint`), in page order. The map page of a placement still in flight
    /// holds its old entry: it stays changed, for the next checkpoint to write again.
    fn checkpoint(&mut self, ftl: &AnyFtl) {
        self.host_units_since_checkpoint = 0;
        self.checkpoints += 1;
        let in_flight = |pun: u32, epoch: u32| {
            ftl.blocks()[ftl.geo.block_of_unit(pun) as usize].epoch == epoch
                && !ftl.is_programmed(pun)
        };
        while let Some(&(_, pun, epoch, _)) = self.pending.front() {
            if in_flight(pun, epoch) {
                break;
            }
            self.pending.pop_front();
        }
        let mut pages: Vec<u64> = self.dirty_map_pages.drain().collect();
        pages.sort_unstable();
        for &(_, pun, epoch, lpn) in &self.pending {
            if in_flight(pun, epoch) && lpn < self.logical_units {
                self.dirty_map_pages.insert(lpn / self.entries_per_map_page);
            }
        }
        self.checkpoint_pages_written += pages.len() as u64;
        self.in_flight.push_back(Taken {
            number: self.checkpoints,
            pages_left: pages.len() as u64,
            barrier: self.pending.front().map_or(self.next_seq, |p| p.0),
            seq: self.next_seq,
        });
        let number = self.checkpoints;
        self.due
            .extend(pages.into_iter().map(|page| (number, page)));
        self.settle();
    }

    /// The checkpoints at the front whose map pages are all on flash count from now on, in
    /// the order they were taken (a later one holds only the pages changed since the one
    /// before, so it needs that one).
    fn settle(&mut self) {
        while let Some(t) = self.in_flight.front() {
            if t.pages_left > 0 {
                return;
            }
            self.checkpoint_barrier = t.barrier;
            self.checkpoint_seq = t.seq;
            self.checkpoints_on_flash += 1;
            self.in_flight.pop_front();
        }
    }

    /// Whether a checkpoint's map pages wait to be programmed.
    #[inline]
    pub fn checkpoint_due(&self) -> bool {
        !self.due.is_empty()
    }

    /// The map pages due to be programmed, in order, each with the tag its program carries
    /// (its checkpoint's, for [`PowerLoss::checkpoint_page_programmed`]).
    pub fn take_due(&mut self) -> Vec<(u32, u64)> {
        self.due
            .drain(..)
            .map(|(number, page)| (checkpoint_tag(number), page))
            .collect()
    }

    /// A map page of the checkpoint whose [`checkpoint_tag`] is `tag` is programmed.
    pub fn checkpoint_page_programmed(&mut self, tag: u32) {
        let Some(front) = self.in_flight.front() else {
            return;
        };
        let after = (tag as u64 + TAGS - checkpoint_tag(front.number) as u64) % TAGS;
        let Some(t) = self.in_flight.get_mut(after as usize) else {
            return;
        };
        debug_assert_eq!(checkpoint_tag(t.number), tag);
        t.pages_left -= 1;
        self.settle();
    }

    /// A host write of `lpn` mapped to NAND unit `pun`, `old` its place before.
    pub fn write_to_nand(&mut self, lpn: u64, pun: u32, old: Option<u32>, ftl: &AnyFtl) {
        let u = self.unit(lpn, old, ftl);
        u.accepted += 1;
        let v = u.accepted;
        self.place(lpn, pun, v, ftl);
        self.host_unit(ftl);
    }

    /// A host write of `lpn` placed in buffer line `slot` (the FTL's map unchanged).
    pub fn write_to_line(&mut self, lpn: u64, slot: u32, ftl: &AnyFtl) {
        let old = ftl.lookup(lpn);
        let u = self.unit(lpn, old, ftl);
        u.accepted += 1;
        let v = u.accepted;
        self.lines.insert(slot, (lpn, v));
        self.host_unit(ftl);
    }

    /// Line `slot` now holds a clean copy of NAND data.
    pub fn fill_line(&mut self, slot: u32) {
        self.lines.remove(&slot);
    }

    /// Line `slot` is being flushed to NAND unit `pun`.
    pub fn flush(&mut self, slot: u32, pun: u32, ftl: &AnyFtl) {
        if let Some(&(lpn, v)) = self.lines.get(&slot) {
            self.place(lpn, pun, v, ftl);
        }
    }

    /// GC copied `from` to `to`; `lpn` is the unit the FTL maps at `to` (UNMAPPED when it has
    /// changed since), used when the model has no record of `from` (data from before it
    /// started).
    pub fn moved(&mut self, from: u32, to: u32, lpn: u32, ftl: &AnyFtl) {
        if lpn != UNMAPPED && lpn as u64 >= self.logical_units {
            // A map page, not host data: a cached map's translation page, or a checkpoint's
            // (whose pages follow the translation pages; `from` may hold an out-of-band record
            // of the data it held before its last erase, which is not what it holds now).
            if lpn as u64 >= ftl.checkpoint_first_lpn() {
                self.checkpoint_pages_moved += 1;
            }
            return;
        }
        let (lpn, version) = match self.oob.get(&from) {
            Some(o) => (o.lpn, o.version),
            None if lpn == UNMAPPED => return,
            None => {
                // Data from before the model: its first move makes `from` its base.
                self.unit(lpn as u64, Some(from), ftl);
                (lpn as u64, 0)
            }
        };
        self.place(lpn, to, version, ftl);
    }

    /// The cache buffer dropped the line of `lpn`: what it held is not written out.
    pub fn discarded(&mut self, lpn: u64) {
        self.lines.retain(|_, l| l.0 != lpn);
    }

    /// `lpn` is being trimmed; `old` is where it is mapped now.
    pub fn trimmed(&mut self, lpn: u64, old: Option<u32>, ftl: &AnyFtl) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let u = self.unit(lpn, old, ftl);
        u.accepted += 1;
        let v = u.accepted;
        u.trims.push((v, seq));
        self.lines.retain(|_, l| l.0 != lpn);
        self.map_changed(lpn);
    }

    /// The map entry of `lpn` changed: its map page goes into the next checkpoint (a cached
    /// map's translation pages moved by GC are not host data, and have no entry there).
    fn map_changed(&mut self, lpn: u64) {
        if lpn < self.logical_units {
            self.dirty_map_pages.insert(lpn / self.entries_per_map_page);
        }
    }

    /// A FLUSH completed to the host. NVMe's Flush commits data and metadata to non-volatile
    /// media, and which blocks are deallocated is metadata: the trims done by now are durable
    /// (the drive writes them out with the map's journal; a trim whose unit's data was only in
    /// the cache would otherwise leave neither the flushed write nor the trim, and bring back
    /// older data, which the oracle test found).
    pub fn flush_completed(&mut self) {
        self.flushed_seq = self.next_seq;
    }

    /// A write or trim of `lpn` completed to the host: its newest accepted update is
    /// acknowledged.
    pub fn acknowledged(&mut self, lpn: u64) {
        if let Some(u) = self.units.get_mut(&lpn) {
            u.acknowledged = u.accepted;
        }
    }

    /// The newest durable copy of each unit that the out-of-band areas show, as (seq, version)
    /// by unit; and the programs under way at the cut: lost, or finished on the capacitors'
    /// energy (power-loss protection).
    fn durable_copies(&self, ftl: &AnyFtl) -> (HashMap<u64, (u64, u32)>, u64, u64) {
        let geo = &ftl.geo;
        let epoch_of = |pun: u32| ftl.blocks()[geo.block_of_unit(pun) as usize].epoch;
        let mut best: HashMap<u64, (u64, u32)> = HashMap::new();
        let mut programs_lost = 0;
        let mut programs_finished_on_plp = 0;
        for (&pun, o) in &self.oob {
            if epoch_of(pun) != o.epoch {
                continue;
            }
            if !ftl.is_programmed(pun) {
                if !self.plp {
                    programs_lost += 1;
                    continue;
                }
                programs_finished_on_plp += 1;
            }
            let e = best.entry(o.lpn).or_insert((0, 0));
            if o.seq > e.0 {
                *e = (o.seq, o.version);
            }
        }
        (best, programs_lost, programs_finished_on_plp)
    }

    /// The cache's lines whose data is not on flash (`best`, the durable copies): lost, or
    /// written out on the capacitors' energy, newer than anything on flash (then added to
    /// `best`). Returns (lost, flushed on PLP).
    fn cache_at_cut(&self, best: &mut HashMap<u64, (u64, u32)>) -> (u64, u64) {
        let mut cache_units_lost = 0;
        let mut cache_units_flushed_on_plp = 0;
        let mut extra_seq = self.next_seq;
        let mut lines: Vec<_> = self.lines.values().copied().collect();
        lines.sort_unstable();
        for (lpn, v) in lines {
            if best.get(&lpn).is_some_and(|b| b.1 == v) {
                continue;
            }
            if self.plp {
                cache_units_flushed_on_plp += 1;
                best.insert(lpn, (extra_seq, v));
                extra_seq += 1;
            } else {
                cache_units_lost += 1;
            }
        }
        (cache_units_lost, cache_units_flushed_on_plp)
    }

    /// The power fails now (`event`, `now`): what recovery finds and what it costs.
    pub fn cut(
        &self,
        ftl: &AnyFtl,
        timing: &NandTimingPs,
        event: u64,
        now: SimTime,
    ) -> PowerCutOutcome {
        let geo = &ftl.geo;
        let epoch_of = |pun: u32| ftl.blocks()[geo.block_of_unit(pun) as usize].epoch;
        let (mut best, programs_lost, programs_finished_on_plp) = self.durable_copies(ftl);
        let (cache_units_lost, cache_units_flushed_on_plp) = self.cache_at_cut(&mut best);
        let mut r = PowerLossResult {
            event,
            at_us: now.as_us_f64(),
            power_loss_protection: self.plp,
            checkpoints: self.checkpoints,
            checkpoints_on_flash: self.checkpoints_on_flash,
            checkpoint_pages_written: self.checkpoint_pages_written,
            checkpoint_pages_moved: self.checkpoint_pages_moved,
            checkpoint_write_amplification: if ftl.stats.host_units_written > 0 {
                ftl.stats.checkpoint_units_written as f64 / ftl.stats.host_units_written as f64
            } else {
                0.0
            },
            programs_lost,
            programs_finished_on_plp,
            cache_units_lost,
            cache_units_flushed_on_plp,
            ..PowerLossResult::default()
        };
        let mut recovered = HashMap::with_capacity(self.units.len());
        let mut lost_units = Vec::new();
        for (&lpn, u) in &self.units {
            if lpn >= self.logical_units {
                // A cached map's translation page moved by GC: not host data.
                continue;
            }
            // Candidates, the newest (by sequence number) winning: the place the checkpoint
            // holds for the unit (its newest placement below the barrier, or the base copy,
            // seq 0, when it has none there); the newest durable copy the scan finds (at or past
            // the barrier: an older copy is stale data the checkpoint supersedes); a durable
            // trim. With protection the map written out at the cut holds every placement. A
            // candidate whose data is gone (`None`) is an entry pointing into a block erased
            // since: recovery drops it (the block table, rebuilt with the map, says that block
            // was erased after the checkpoint).
            let held_below = if self.plp {
                self.next_seq
            } else {
                self.checkpoint_barrier
            };
            let held = u.placed[..u.placed.partition_point(|p| p.seq < held_below)].last();
            let mut winner: (u64, Option<u32>) = match held {
                Some(h) => (
                    h.seq,
                    best.get(&lpn).filter(|b| b.0 == h.seq).map(|_| h.version),
                ),
                None => {
                    let base_there = match u.base {
                        Some((p, e)) => epoch_of(p) == e && ftl.is_programmed(p),
                        None => true,
                    };
                    (0, base_there.then_some(0))
                }
            };
            if let Some(&(seq, v)) = best.get(&lpn) {
                if seq >= held_below && seq > winner.0 {
                    winner = (seq, Some(v));
                }
            }
            // A trim is durable once a checkpoint holds it, or once GC has erased the block of
            // the data it let go: the erase's record in the block table carries the trims that
            // freed the block (else a cut would bring back data older than that, even older
            // than a flushed write, which the oracle test found).
            let mut by_erase = false;
            for &(v, seq) in &u.trims {
                let checkpointed = self.plp || seq < self.checkpoint_seq || seq < self.flushed_seq;
                if seq <= winner.0 {
                    continue;
                }
                let before = u.placed[..u.placed.partition_point(|p| p.seq < seq)].last();
                let freed_erased = match before {
                    Some(p) => epoch_of(p.pun) != p.epoch,
                    None => u.base.is_some_and(|(p, e)| epoch_of(p) != e),
                };
                if checkpointed || freed_erased {
                    winner = (seq, Some(v));
                    by_erase = !checkpointed;
                }
            }
            if by_erase {
                r.trims_durable_by_erase += 1;
            }
            let got = winner.1;
            let newest_kept = got.unwrap_or(0);
            let is_trim = |v: u32| u.trims.iter().any(|t| t.0 == v);
            let lost = (newest_kept + 1..=u.accepted).filter(|&v| !is_trim(v));
            let lost_acked = lost.clone().filter(|&v| v <= u.acknowledged).count() as u64;
            r.writes_lost += lost.count() as u64;
            r.acknowledged_writes_lost += lost_acked;
            r.trims_lost += (newest_kept + 1..=u.accepted)
                .filter(|&v| is_trim(v))
                .count() as u64;
            if got.is_none() {
                r.units_unreadable += 1;
            }
            if lost_acked > 0 || got.is_none() {
                lost_units.push(lpn);
            }
            recovered.insert(lpn, got);
        }
        lost_units.sort_unstable();
        r.units_lost = lost_units.len() as u64;
        lost_units.truncate(LISTED_UNITS);
        r.lost_units = lost_units;
        self.recovery_time(ftl, timing, &mut r);
        PowerCutOutcome {
            result: r,
            recovered,
        }
    }

    /// The media time of recovery: the map's pages read, each where its newest copy is (a
    /// page no checkpoint wrote since the model started is where preconditioning left it,
    /// taken as spread over every die; a page whose newest copy is still being programmed is
    /// read where that copy goes, its older copy taken to be on the same die), then the
    /// out-of-band areas of every programmed page of the blocks written since the checkpoint,
    /// each die reading its own blocks (the dies in parallel, the channels' transfers short).
    fn recovery_time(&self, ftl: &AnyFtl, timing: &NandTimingPs, r: &mut PowerLossResult) {
        let geo: &Geometry = &ftl.geo;
        let dies = geo.dies() as u64;
        let upp = geo.units_per_page as u64;
        let mean_read =
            SimTime(timing.read.iter().map(|t| t.0).sum::<u64>() / timing.read.len().max(1) as u64);
        // The NAND pages holding map pages, each sensed once, and the map pages nowhere yet.
        let mut sensed: Vec<u32> = Vec::new();
        let mut elsewhere = 0u64;
        for page in 0..self.map_pages {
            match ftl.checkpoint_page_location(page) {
                Some(pun) => sensed.push(geo.page_id(pun)),
                None => elsewhere += 1,
            }
        }
        sensed.sort_unstable();
        sensed.dedup();
        let elsewhere_pages = elsewhere.div_ceil(upp);
        let mut array_ps = vec![0u64; dies as usize];
        let mut bus_ps = vec![0u64; geo.channels as usize];
        let unit_bus = timing.unit_xfer().0;
        for &page_id in &sensed {
            let pun = page_id * geo.units_per_page;
            let die = geo.die_of_plane(geo.plane_of_block(geo.block_of_unit(pun)));
            let t = timing.read_time(geo.page_in_block(pun)) + timing.cmd_addr;
            array_ps[die as usize] = array_ps[die as usize].saturating_add(t.0);
        }
        for page in 0..self.map_pages {
            if let Some(pun) = ftl.checkpoint_page_location(page) {
                let die = geo.die_of_plane(geo.plane_of_block(geo.block_of_unit(pun)));
                let ch = geo.channel_of_die(die) as usize;
                bus_ps[ch] = bus_ps[ch].saturating_add(unit_bus);
            }
        }
        let per_die = elsewhere_pages.div_ceil(dies);
        let array_spread = (mean_read + timing.cmd_addr).0.saturating_mul(per_die);
        let bus_spread = unit_bus.saturating_mul(elsewhere.div_ceil(geo.channels as u64));
        let array = array_ps.iter().max().copied().unwrap_or(0);
        let bus = bus_ps.iter().max().copied().unwrap_or(0);
        let checkpoint_ps = array
            .saturating_add(array_spread)
            .max(bus.saturating_add(bus_spread));
        let pages = sensed.len() as u64 + elsewhere_pages;
        let mut die_ps = vec![0u64; dies as usize];
        let mut blocks = 0;
        let mut scanned = 0;
        let oob_bus = timing.bus_time(OOB_RECORD_BYTES * geo.units_per_page as u64);
        let mut written: Vec<_> = self
            .block_seq
            .iter()
            .filter(|&(_, &s)| s >= self.checkpoint_barrier)
            .map(|(&b, _)| b)
            .collect();
        written.sort_unstable();
        for b in written {
            let blk = &ftl.blocks()[b as usize];
            let pages = blk.write_ptr.div_ceil(geo.units_per_page);
            if pages == 0 {
                continue;
            }
            blocks += 1;
            scanned += pages as u64;
            let die = geo.die_of_plane(geo.plane_of_block(b)) as usize;
            for page in 0..pages {
                let t = timing.read_time(page) + timing.cmd_addr + oob_bus;
                die_ps[die] = die_ps[die].saturating_add(t.0);
            }
        }
        let scan_ps = die_ps.into_iter().max().unwrap_or(0);
        r.checkpoint_pages_read = pages;
        r.blocks_scanned = blocks;
        r.pages_scanned = scanned;
        r.checkpoint_read_us = SimTime(checkpoint_ps).as_us_f64();
        r.scan_us = SimTime(scan_ps).as_us_f64();
        r.recovery_us = SimTime(checkpoint_ps.saturating_add(scan_ps)).as_us_f64();
    }
}

/// Tags a checkpoint's map-page programs carry in their transaction's `cmd` (a cached map's
/// translation page carries `ftl::NONE` there): the checkpoint's number modulo `TAGS`, which
/// never reaches `NONE`. Checkpoints in flight at once are far fewer than `TAGS`.
const TAGS: u64 = u32::MAX as u64;

/// The tag of checkpoint `number`'s programs.
fn checkpoint_tag(number: u64) -> u32 {
    (number % TAGS) as u32
}
