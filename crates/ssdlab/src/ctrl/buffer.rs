//! The cache buffer manager: what the controller does with its DRAM cache buffer.
//!
//! - Write-back ("cached write"): a write's units go into the buffer and the command completes
//!   when the DRAM has them. A unit that misses needs a line: a free one, or the eviction
//!   candidate if clean; if the candidate is dirty it is flushed to NAND first and the unit
//!   waits for it ("on-demand flushing").
//! - Write-through: writes go to NAND as without a buffer; the buffer keeps a clean copy.
//! - Reads that hit are served from DRAM; misses go to NAND and, with `read_allocate`, leave a
//!   clean copy when a line can be had without flushing.
//! - Background flushing keeps the dirty share between two watermarks.
//! - Dual port (seed 001): a pre-emptive flush through the additional port starts only when
//!   (1) the current host request hit in the buffer, (2) no other pre-emptive flush runs, and
//!   (3) a dirty line lies within the first `preemptive_window` of the buffer's capacity in
//!   eviction order, free lines first (a miss takes those before it evicts). It cleans the
//!   line and leaves it in place.
//! - An explicit flush (NVMe Flush) completes once every flush started up to its arrival, and
//!   every line dirty at its arrival, has reached NAND.
//!
//! A flush reads the line out of DRAM, maps it in the FTL and queues its program with the host
//! writes of its die. One flush per line at a time: a line written during its flush stays dirty
//! and is flushed again later, so two writes of one page never reach NAND out of order.
//!
//! In front of a zoned drive a zone's blocks must be programmed in order, so a flush asked for
//! any dirty line of a zone flushes the zone's line at its flush pointer instead (the lowest not
//! yet on the media; `ctrl::zoned::ZoneOrder`), and no write unit is placed past one that waits
//! for a line. A Force Unit Access write there goes into the buffer and completes once its zone's
//! lines up to its end are on the media.

use crate::config::{CacheConfig, CacheMode, CachePorts, PartialLines, SsdConfig};
use crate::ctrl::cache::CacheBuffer;
use crate::error::{says, Error, Invalid, Result};
use crate::iface::HostPort;
use crate::media::dram::{Dram, DramTiming, Port};
use crate::sim::SimTime;
use std::collections::{BTreeSet, VecDeque};

mod flush;
mod lines;
mod partial;
pub(crate) use lines::Lines;
pub(crate) use partial::Sectors;
/// What a flush under way is for, kept per line (one flush per line at a time).
#[derive(Clone, Copy, Debug)]
struct Flight {
    kind: FlushKind,
    /// Order of starting, for explicit flushes.
    seq: u64,
    /// The line's write generation when the flush read it.
    generation: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushKind {
    OnDemand = 0,
    Background = 1,
    Preemptive = 2,
    Explicit = 3,
}

#[derive(Clone, Debug, Default)]
pub struct BufferStats {
    pub read_hits: u64,
    pub read_misses: u64,
    pub write_hits: u64,
    pub write_misses: u64,
    /// Flushes by cause: on-demand, background, pre-emptive, explicit.
    pub flushes: [u64; 4],
    /// Write units that had to wait for a line.
    pub waits: u64,
    /// (time, lines in use, dirty lines), sampled as the buffer changes.
    pub occupancy: Vec<(SimTime, u32, u32)>,
    pub dram_read_bytes: u64,
    pub dram_write_bytes: u64,
    /// `cache.partial_lines = "merge-at-flush"`: flushes that read the rest of their unit from
    /// NAND first, and reads that found their line holding only another part of the unit.
    pub merge_reads: u64,
    pub partial_read_misses: u64,
}

/// A write unit waiting for a line: `bytes` from byte `start` of unit `lpn`.
#[derive(Clone, Copy, Debug)]
struct Waiter {
    cmd: u32,
    lpn: u64,
    start: u64,
    bytes: u64,
}

pub struct BufferManager {
    cfg: CacheConfig,
    buf: CacheBuffer,
    dram: Dram,
    line_bytes: u64,
    /// DRAM bytes the cached map's translation pages take (`SsdConfig::cache_translation_bytes`),
    /// between the reserved area and the lines.
    translation_bytes: u64,
    waiting: VecDeque<Waiter>,
    preemptive_busy: bool,
    background_inflight: u32,
    /// On-demand flushes under way: each will free a line for a waiting write.
    on_demand_inflight: u32,
    /// Sequence numbers of flushes under way (for explicit flushes).
    inflight: BTreeSet<u64>,
    /// The flush under way of each line, by slot.
    flights: Vec<Option<Flight>>,
    next_flush_seq: u64,
    /// Explicit flush commands: (command, the last flush sequence number it waits for).
    explicit: Vec<(u32, u64)>,
    /// Lines an explicit flush found under flush: (slot, the line's generation then). If the
    /// flush under way carries an older generation (the line was written after its data was
    /// read out), the line is flushed again when it ends, and the explicit flushes that waited
    /// for it wait for that one too.
    redo: Vec<(u32, u32)>,
    next_sample: SimTime,
    sample_every: SimTime,
    stats: BufferStats,
    /// `cache.partial_lines = "merge-at-flush"` (write-back): lines hold part of their unit,
    /// with a mask of the sectors they hold; None: every line holds its whole unit.
    partial: Option<Sectors>,
}

/// What the controller's DRAM does in the data path: with a cache buffer (`[cache]`, `enabled`)
/// its lines sit between the host and the medium; without one each command's data streams
/// straight through to the back end.
// One value per device, never moved on the event path: a box would only add a pointer to
// follow on every event.
#[allow(clippy::large_enum_variant)]
pub enum DataPath {
    /// No cache buffer: commands go to the back end as they come.
    Direct,
    /// The cache buffer and its lines.
    Buffered(BufferManager),
}

impl DataPath {
    /// The data path `cfg` describes; a cache buffer's line is the map unit (a PCM-only
    /// device's: its PCM line).
    pub fn new(cfg: &SsdConfig) -> DataPath {
        match cfg.cache.as_ref().filter(|c| c.enabled) {
            Some(c) => DataPath::Buffered(BufferManager::new(
                c,
                cfg.map_unit_bytes(),
                cfg.cache_translation_bytes(),
            )),
            None => DataPath::Direct,
        }
    }

    /// The cache buffer, when the data path has one.
    #[inline(always)]
    pub fn buffer(&self) -> Option<&BufferManager> {
        match self {
            DataPath::Buffered(b) => Some(b),
            DataPath::Direct => None,
        }
    }

    #[inline(always)]
    pub fn buffer_mut(&mut self) -> Option<&mut BufferManager> {
        match self {
            DataPath::Buffered(b) => Some(b),
            DataPath::Direct => None,
        }
    }
}

/// Occupancy is sampled at most this often (simulated time), and at most this many samples are
/// kept (the interval doubles when full).
const SAMPLE_EVERY: SimTime = SimTime::from_us(100);
const MAX_SAMPLES: usize = 1000;

impl BufferManager {
    /// A buffer of `line_bytes` lines in `cfg.capacity` of DRAM, less the reserved area and
    /// `translation_bytes` for a cached map's translation pages.
    pub fn new(cfg: &CacheConfig, line_bytes: u64, translation_bytes: u64) -> BufferManager {
        let lines = ((cfg.capacity.0 - cfg.map_reserved.0 - translation_bytes) / line_bytes) as u32;
        BufferManager {
            buf: CacheBuffer::new(lines, cfg.replacement),
            dram: Dram::new(DramTiming::preset(cfg.dram, cfg.bus_bits)),
            line_bytes,
            translation_bytes,
            waiting: VecDeque::new(),
            preemptive_busy: false,
            background_inflight: 0,
            on_demand_inflight: 0,
            inflight: BTreeSet::new(),
            flights: vec![None; lines as usize],
            next_flush_seq: 0,
            explicit: Vec::new(),
            redo: Vec::new(),
            next_sample: SimTime::ZERO,
            sample_every: SAMPLE_EVERY,
            stats: BufferStats::default(),
            partial: (cfg.partial_lines == PartialLines::MergeAtFlush
                && cfg.mode == CacheMode::WriteBack)
                .then(|| Sectors::new(line_bytes, lines)),
            cfg: cfg.clone(),
        }
    }

    /// Bytes of one line (the map unit; a PCM-only device's PCM line).
    pub fn line_bytes(&self) -> u64 {
        self.line_bytes
    }

    pub fn write_back(&self) -> bool {
        self.cfg.mode == CacheMode::WriteBack
    }

    /// A write-back write of part of a unit not in the buffer goes in without reading the rest
    /// (`cache.partial_lines = "merge-at-flush"`): the rest is merged when the line is flushed.
    #[inline]
    pub fn merges_partial(&self) -> bool {
        self.partial.is_some()
    }

    /// Move `bytes` of the line in `slot` in or out of DRAM through `port`; returns the end.
    fn dram_io(&mut self, now: SimTime, slot: u32, bytes: u64, port: Port, write: bool) -> SimTime {
        if write {
            self.stats.dram_write_bytes += bytes;
        } else {
            self.stats.dram_read_bytes += bytes;
        }
        // Lines sit after the area reserved for the map and the translation pages.
        let addr = self.cfg.map_reserved.0 + self.translation_bytes + slot as u64 * self.line_bytes;
        self.dram.access(now, addr, bytes, port)
    }

    fn sample(&mut self, now: SimTime) {
        if now < self.next_sample {
            return;
        }
        if self.stats.occupancy.len() == MAX_SAMPLES {
            // Keep every other sample and sample half as often from now on.
            let kept: Vec<_> = self.stats.occupancy.iter().step_by(2).copied().collect();
            self.stats.occupancy = kept;
            self.sample_every = self.sample_every * 2;
        }
        self.stats
            .occupancy
            .push((now, self.buf.len(), self.buf.dirty_lines()));
        self.next_sample = now + self.sample_every;
    }
}

impl BufferManager {
    /// The figures of a run that lasted `sim_s` simulated seconds.
    pub fn result(&self, sim_s: f64) -> crate::stats::result::CacheResult {
        use crate::stats::result::{CacheEnergy, CacheFlushes, CachePartial, CacheResult};
        let s = &self.stats;
        let d = &self.dram.stats;
        let ratio = |h: u64, m: u64| {
            if h + m > 0 {
                h as f64 / (h + m) as f64
            } else {
                0.0
            }
        };
        let e = &self.cfg.energy;
        let dynamic_pj = s.dram_read_bytes as f64 * e.read_pj_per_byte
            + s.dram_write_bytes as f64 * e.write_pj_per_byte;
        let mib = self.cfg.capacity.0 as f64 / (1u64 << 20) as f64;
        let area = if self.cfg.ports == CachePorts::Dual {
            1.0 + e.port_area_overhead
        } else {
            1.0
        };
        let leakage_mw = e.leakage_mw_per_mib * mib * area;
        CacheResult {
            lines: self.buf.capacity(),
            line_bytes: self.line_bytes,
            dram_bytes: self.cfg.capacity.0,
            data_bytes: self.buf.capacity() as u64 * self.line_bytes,
            translation_bytes: self.translation_bytes,
            reserved_bytes: self.cfg.map_reserved.0,
            read_hits: s.read_hits,
            read_misses: s.read_misses,
            read_hit_ratio: ratio(s.read_hits, s.read_misses),
            write_hits: s.write_hits,
            write_misses: s.write_misses,
            write_hit_ratio: ratio(s.write_hits, s.write_misses),
            flushes: CacheFlushes {
                on_demand: s.flushes[0],
                background: s.flushes[1],
                preemptive: s.flushes[2],
                explicit: s.flushes[3],
            },
            dirty_evictions: s.flushes[0],
            write_waits: s.waits,
            dram_row_hits: d.row_hits,
            dram_row_misses: d.row_misses,
            port_conflicts: d.port_conflicts,
            host_port_wait_us: d.host_wait.as_us_f64(),
            dirty_lines_at_end: self.buf.dirty_lines(),
            occupancy: s
                .occupancy
                .iter()
                .map(|&(t, l, dl)| (t.as_secs_f64(), l, dl))
                .collect(),
            energy: CacheEnergy {
                dynamic_mj: dynamic_pj * 1e-9,
                leakage_mw,
                leakage_mj: leakage_mw * sim_s,
            },
            partial: self.partial.as_ref().map(|_| CachePartial {
                merge_reads: s.merge_reads,
                read_misses: s.partial_read_misses,
            }),
        }
    }
}

/// A zoned drive's buffer found no line at the flush pointer of `lpn`'s zone. A zone's dirty
/// lines run from its flush pointer without a gap (`ctrl::zoned::ZoneOrder`), so the line there
/// is always free to flush: this is a bug, reported rather than left to hang the run.
fn no_line_to_flush(lpn: u64) -> Error {
    Error::bad_device(Invalid::unnamed(
        "cache buffer",
        says(format!(
            "the zone of logical block {lpn} has no line at its flush pointer to \
         flush (a bug: its lines entered out of order)"
        )),
    ))
}

/// The NAND unit a merge reads, from [`Lines::merge_source`] (whether programmed or not).
fn flash_unit(source: Option<(u32, bool)>) -> Option<u32> {
    source.map(|(pun, _)| pun)
}

/// Outcome of trying to put one write unit into the buffer.
enum Placed {
    /// In the buffer; the DRAM write ends at this time.
    At(SimTime),
    /// No line yet: a flush was started (or is under way) to make one.
    Waiting,
}

impl BufferManager {
    /// The buffer line holding `lpn`, if any.
    #[inline]
    pub fn find(&self, lpn: u64) -> Option<u32> {
        self.buf.find(lpn)
    }

    /// `lpn` was trimmed: drop its line.
    pub fn discard(&mut self, lpn: u64) {
        self.buf.discard(lpn);
    }

    /// The figures so far.
    /// Lines holding data now, and those of them not yet on NAND (the periodic statistics).
    pub fn lines_in_use(&self) -> u32 {
        self.buf.len()
    }

    pub fn dirty_lines(&self) -> u32 {
        self.buf.dirty_lines()
    }

    pub fn stats(&self) -> &BufferStats {
        &self.stats
    }

    /// Write-back: put every unit of a write command into the buffer; the command completes
    /// when its last unit is in DRAM.
    pub(crate) fn write(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        let unit = self.line_bytes;
        let mut done = now;
        let mut pending = 0u32;
        let mut all_hit = true;
        let first = offset / unit;
        let last = (offset + len - 1) / unit;
        for lpn in first..=last {
            let start = (lpn * unit).max(offset);
            let bytes = ((lpn + 1) * unit).min(offset + len) - start;
            let start = start - lpn * unit;
            if self.buf.find(lpn).is_some() {
                self.stats.write_hits += 1;
            } else {
                self.stats.write_misses += 1;
                all_hit = false;
            }
            let waiting = self.waiting.len() + 1;
            if waiting > 1 && flash.zoned().is_some() {
                // A zone's blocks enter the buffer in order: none passes one that waits. It
                // waits too, with a flush started for it as one that found no line would.
                self.stats.waits += 1;
                self.waiting.push_back(Waiter {
                    cmd,
                    lpn,
                    start,
                    bytes,
                });
                pending += 1;
                self.make_room(now, up, flash)?;
                continue;
            }
            match self.place(now, lpn, start, bytes, waiting, up, flash)? {
                Placed::At(t) => done = done.max(t),
                Placed::Waiting => {
                    self.stats.waits += 1;
                    self.waiting.push_back(Waiter {
                        cmd,
                        lpn,
                        start,
                        bytes,
                    });
                    pending += 1;
                }
            }
        }
        let c = up.cmds.get_mut(cmd);
        c.txns_left = pending;
        c.data_done = done;
        if pending == 0 {
            self.written(done, cmd, up, flash)?;
        }
        self.sample(now);
        self.maybe_background_flush(now, up, flash)?;
        if all_hit {
            self.maybe_preemptive_flush(now, up, flash)?;
        }
        Ok(())
    }

    /// Try to put one write unit (`bytes` from byte `start` of unit `lpn`) into the buffer;
    /// `waiting` counts the writes that wait for a line if this one has to, itself included.
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        now: SimTime,
        lpn: u64,
        start: u64,
        bytes: u64,
        waiting: usize,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<Placed> {
        let fresh = self.partial.is_some() && self.buf.find(lpn).is_none();
        let placed = self.place_unchecked(now, lpn, bytes, waiting, up, flash)?;
        if let (Placed::At(_), Some(p)) = (&placed, self.partial.as_mut()) {
            let slot = self.buf.find(lpn).expect("placed");
            p.written(slot, start, bytes, fresh);
            if let Some(dc) = flash.check() {
                dc.line_part(slot, lpn, start, bytes, p.line_bytes(), fresh);
            }
        }
        if let (Placed::At(_), Some(_)) = (&placed, flash.check()) {
            let slot = self.buf.find(lpn).expect("placed");
            flash.written_to_line(now, lpn, slot, up.q)?;
        }
        Ok(placed)
    }

    fn place_unchecked(
        &mut self,
        now: SimTime,
        lpn: u64,
        bytes: u64,
        waiting: usize,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<Placed> {
        if let Some(slot) = self.buf.touch(lpn) {
            self.buf.write(slot);
            return Ok(Placed::At(self.dram_io(now, slot, bytes, Port::Host, true)));
        }
        if !self.buf.is_full() {
            let slot = self.buf.insert(lpn, true);
            return Ok(Placed::At(self.dram_io(now, slot, bytes, Port::Host, true)));
        }
        match self.buf.victim() {
            Some(v) if !self.buf.line(v).dirty => {
                self.buf.evict(v);
                let slot = self.buf.insert(lpn, true);
                Ok(Placed::At(self.dram_io(now, slot, bytes, Port::Host, true)))
            }
            // Flushes already under way will free enough lines for every waiting write.
            Some(_) if self.on_demand_inflight as usize >= waiting => Ok(Placed::Waiting),
            Some(v) => {
                if !self.flush_line(now, v, FlushKind::OnDemand, up, flash)? {
                    return Err(no_line_to_flush(self.buf.line(v).lpn));
                }
                Ok(Placed::Waiting)
            }
            // Every line is being flushed: one will come free.
            None => Ok(Placed::Waiting),
        }
    }

    /// Write units wait for lines: start an on-demand flush of the eviction candidate unless
    /// the flushes under way will free a line for each of them (as [`Self::place`] does for a
    /// unit that finds no line).
    fn make_room(&mut self, now: SimTime, up: &mut HostPort, flash: &mut impl Lines) -> Result<()> {
        if self.on_demand_inflight as usize >= self.waiting.len() || !self.buf.is_full() {
            return Ok(());
        }
        match self.buf.victim() {
            Some(v) if self.buf.line(v).dirty => {
                if !self.flush_line(now, v, FlushKind::OnDemand, up, flash)? {
                    return Err(no_line_to_flush(self.buf.line(v).lpn));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Read `bytes` from byte `start` of unit `lpn`: from DRAM if its line holds them (with
    /// `cache.partial_lines = "merge-at-flush"` a line may hold only part of its unit), else
    /// None: the unit is read from NAND, and the line's part is laid over it on the way out.
    #[inline]
    pub(crate) fn read_part(
        &mut self,
        now: SimTime,
        lpn: u64,
        start: u64,
        bytes: u64,
    ) -> Option<SimTime> {
        if let Some(p) = self.partial.as_ref() {
            if let Some(slot) = self.buf.find(lpn) {
                if !p.holds(slot, start, bytes) {
                    self.stats.read_misses += 1;
                    self.stats.partial_read_misses += 1;
                    self.buf.touch(lpn);
                    return None;
                }
            }
        }
        self.read(now, lpn, bytes)
    }

    /// Whether the line of `lpn` (if any) holds `bytes` from byte `start` of it: every line
    /// does, unless lines may hold part of their unit.
    #[inline]
    pub(crate) fn holds(&self, slot: u32, start: u64, bytes: u64) -> bool {
        self.partial
            .as_ref()
            .is_none_or(|p| p.holds(slot, start, bytes))
    }

    /// Read: serve the units of `lpn` that hit from DRAM. Returns when the data is out of DRAM,
    /// or None on a miss.
    pub(crate) fn read(&mut self, now: SimTime, lpn: u64, bytes: u64) -> Option<SimTime> {
        match self.buf.touch(lpn) {
            Some(slot) => {
                self.stats.read_hits += 1;
                Some(self.dram_io(now, slot, bytes, Port::Host, false))
            }
            None => {
                self.stats.read_misses += 1;
                None
            }
        }
    }

    /// Unit `lpn` was read from NAND unit `pun`: keep a clean copy if a line comes without
    /// flushing, unless newer data for it exists by now (in the buffer, or mapped elsewhere).
    pub(crate) fn fill(&mut self, now: SimTime, lpn: u64, pun: u32, flash: &mut impl Lines) {
        let unit = self.line_bytes;
        if flash.lookup(lpn) != Some(pun) {
            return;
        }
        if let Some(slot) = self.buf.find(lpn) {
            if self.partial.is_some() {
                self.merge_read_in(now, slot, pun, flash);
            }
            return;
        }
        if !self.cfg.read_allocate {
            return;
        }
        if self.buf.is_full() {
            match self.buf.victim() {
                Some(v) if !self.buf.line(v).dirty => self.buf.evict(v),
                _ => return,
            }
        }
        let slot = self.buf.insert(lpn, false);
        if let Some(p) = self.partial.as_mut() {
            p.fill(slot);
        }
        self.dram_io(now, slot, unit, Port::Host, true);
        self.sample(now);
        if let Some(dc) = flash.check() {
            dc.fill_line(slot, Some(pun));
        }
    }

    /// Write-through: unit `lpn`, just programmed at `pun`, goes into (or updates) the buffer,
    /// unless a newer write has replaced it meanwhile.
    pub(crate) fn write_through(
        &mut self,
        now: SimTime,
        lpn: u64,
        pun: u32,
        flash: &mut impl Lines,
    ) {
        if flash.lookup(lpn) != Some(pun) {
            return;
        }
        let unit = self.line_bytes;
        if let Some(slot) = self.buf.touch(lpn) {
            self.dram_io(now, slot, unit, Port::Host, true);
            if let Some(dc) = flash.check() {
                dc.fill_line(slot, Some(pun));
            }
            return;
        }
        self.fill(now, lpn, pun, flash);
    }

    /// An NVMe Flush: flush every dirty line, and complete once all flushes started up to now
    /// have reached NAND.
    pub(crate) fn flush_command(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        for (slot, f) in self.flights.iter().enumerate() {
            if f.is_none() {
                continue;
            }
            let line = self.buf.line(slot as u32);
            if line.dirty && !line.orphan {
                self.redo.push((slot as u32, line.generation));
            }
        }
        for slot in self.buf.dirty_idle_lines() {
            // In front of a zoned drive each call flushes its zone's next line: as many calls
            // as dirty lines flush every one, each zone's in order.
            self.flush_line(now, slot, FlushKind::Explicit, up, flash)?;
        }
        self.complete_when_flushed(now, cmd, up);
        Ok(())
    }

    /// `cmd` completes once every flush started so far has reached the media (at once if none
    /// is under way).
    fn complete_when_flushed(&mut self, now: SimTime, cmd: u32, up: &mut HostPort) {
        match self.next_flush_seq.checked_sub(1) {
            Some(last) if self.inflight.first().is_some_and(|&s| s <= last) => {
                self.explicit.push((cmd, last));
            }
            _ => up.complete(now, cmd),
        }
    }

    /// Every unit of write command `cmd` is in the buffer (the last DRAM write ends at
    /// `done`): it completes, unless it is a Force Unit Access write to a zoned drive, whose
    /// zone's lines up to its end are flushed first and which completes once they are on the
    /// media.
    fn written(
        &mut self,
        done: SimTime,
        cmd: u32,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        let c = up.cmds.get(cmd);
        if !(c.fua && flash.zoned().is_some()) {
            up.complete(done, cmd);
            return Ok(());
        }
        let end = (c.offset + c.len) / self.line_bytes;
        self.flush_zone(done, c.offset / self.line_bytes, end, up, flash)?;
        self.complete_when_flushed(done, cmd, up);
        Ok(())
    }

    /// In front of a zoned drive: flush the lines of `lba`'s zone from its flush pointer up to
    /// block `end` (exclusive), in order, as explicit flushes; stops at the first block not in
    /// the buffer.
    pub(crate) fn flush_zone(
        &mut self,
        now: SimTime,
        lba: u64,
        end: u64,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        loop {
            let Some(z) = flash.zoned() else {
                return Ok(());
            };
            let next = z.next_to_flush(lba);
            let Some(slot) = self.buf.find(next).filter(|_| next < end) else {
                return Ok(());
            };
            if !self.flush_line(now, slot, FlushKind::Explicit, up, flash)? {
                return Ok(());
            }
        }
    }

    /// In front of a zoned drive: zone blocks `lo..hi` were reset. Their lines go, dirty or
    /// not (the host gave the data up; a line under flush is freed when its flush ends), and
    /// so do write units waiting for a line there (their commands count them as done); the
    /// other waiting units then take the lines that came free.
    pub(crate) fn drop_zone(
        &mut self,
        now: SimTime,
        lo: u64,
        hi: u64,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        for lpn in lo..hi {
            self.buf.discard(lpn);
        }
        let mut kept = VecDeque::with_capacity(self.waiting.len());
        for w in self.waiting.drain(..) {
            if !(lo..hi).contains(&w.lpn) {
                kept.push_back(w);
                continue;
            }
            let c = up.cmds.get_mut(w.cmd);
            c.txns_left -= 1;
            if c.txns_left == 0 {
                let done = c.data_done.max(now);
                up.complete(done, w.cmd);
            }
        }
        self.waiting = kept;
        self.sample(now);
        self.retry_waiters(now, up, flash)
    }

    fn finish_explicit(&mut self, now: SimTime, up: &mut HostPort) {
        if self.explicit.is_empty() {
            return;
        }
        let oldest = self.inflight.first().copied().unwrap_or(u64::MAX);
        let (ready, waiting): (Vec<_>, Vec<_>) = self
            .explicit
            .drain(..)
            .partition(|&(_, last)| oldest > last);
        self.explicit = waiting;
        for (cmd, _) in ready {
            up.complete(now, cmd);
        }
    }
}

#[cfg(test)]
mod tests;
