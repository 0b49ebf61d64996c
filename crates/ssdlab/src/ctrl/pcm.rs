//! The controller of a PCM-only device: every command goes to the PCM media (`media::pcm`),
//! updated in place — no map, no erase, no GC. Firmware time is `controller.cmd_overhead` per
//! command on the controller's core, as the HIL charges it for NAND; the device routes a PCM
//! device's commands here with events of their own (`PcmDispatch`, `PcmDataIn`), so the NAND
//! path never tests which medium it serves.
//!
//! A read's data goes up the link once its last access has left the media (not line by line);
//! a write completes when its last access is programmed. With write pausing on, a write
//! access's end may move later while it runs, so each access ends with an event
//! (`PcmWriteEnd`) that checks its end again.
//!
//! With a DRAM cache buffer (`[cache]`, `ctrl::buffer`), its lines are PCM lines
//! (`pcm.line`): a read's lines that hit come from DRAM and the runs of lines that miss from
//! the PCM (a whole line read is kept as a clean copy with `read_allocate`); a write-back
//! buffer takes a write's lines and completes it from DRAM, and its flushes write one line in
//! place each (`PcmFlushEnd`, or the flush access's `PcmWriteEnd` with write pausing, ends
//! it); a write-through buffer lets the write go to the PCM as without it and updates the
//! lines it holds. An NVMe Flush waits for the buffer's dirty lines. Trims change nothing:
//! the PCM keeps its data and the buffer its lines.

use super::buffer::{BufferManager, Lines};
use super::datacheck::DataCheck;
use super::units_of;
use crate::config::{PcmConfig, PcmEnergy};
use crate::error::Result;
use crate::event::Event;
use crate::iface::HostPort;
use crate::media::pcm::PcmMedia;
use crate::request::Op;
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime};
use crate::stats::result::{PcmEnergyResult, PcmResult, PcmWear, PcmWearBucket, UnitUtil};

/// The cache buffer's way to a PCM-only device's media: a line is PCM line `lpn`, written in
/// place (`buffer::Lines`).
pub(crate) struct PcmLines<'a> {
    pub pcm: &'a mut PcmCtrl,
    /// Tests only: the data-placement oracle.
    pub check: &'a mut Option<DataCheck>,
}

impl Lines for PcmLines<'_> {
    /// PCM is written in place: line `lpn` is always PCM line `lpn`.
    fn lookup(&self, lpn: u64) -> Option<u32> {
        Some(lpn as u32)
    }

    fn check(&mut self) -> Option<&mut DataCheck> {
        self.check.as_mut()
    }

    /// No map: nothing for a flush to look up.
    fn mapping(&mut self) -> Option<&mut crate::ftl::mapping_cache::MappingCache> {
        None
    }

    /// No map to checkpoint: the oracle's note only.
    fn written_to_line(
        &mut self,
        _now: SimTime,
        lpn: u64,
        slot: u32,
        _q: &mut EventQueue<Event>,
    ) -> crate::error::Result<()> {
        if let Some(dc) = self.check.as_mut() {
            dc.write_to_line_in_place(lpn, slot);
        }
        Ok(())
    }

    /// No zones: lines go back in any order.
    fn zoned(&self) -> Option<&super::zoned::ZonedNand> {
        None
    }

    /// Write the line in place; its end comes as an event (`PcmFlushEnd`, or the access's
    /// `PcmWriteEnd` with write pausing).
    fn flush_out(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        line_bytes: u64,
        up: &mut HostPort,
    ) -> Result<()> {
        self.pcm.flush_line(now, lpn, slot, line_bytes, up.q);
        Ok(())
    }
}

/// A write access in flight (write pausing) that is a cache line's flush, not a command's:
/// this bit, and the line's slot, in `write_cmd`.
const FLUSH: u32 = 1 << 31;

pub struct PcmCtrl {
    pub media: PcmMedia,
    pub energy: PcmEnergy,
    pub writes_per_line: Option<f64>,
    /// With write pausing: the command of each write access in flight, by access id.
    write_cmd: Vec<u32>,
    /// The controller's firmware core.
    cpu: Timeline,
    cmd_overhead: SimTime,
    /// Bytes of the PCM's logical space (`pcm.*`: its lines less Start-Gap's spare one).
    logical_bytes: u64,
}

impl PcmCtrl {
    pub fn new(cfg: &PcmConfig, cmd_overhead: SimTime) -> PcmCtrl {
        PcmCtrl {
            logical_bytes: cfg.logical_bytes(),
            media: PcmMedia::new(cfg),
            energy: cfg.energy.clone(),
            writes_per_line: cfg.endurance.writes_per_line,
            write_cmd: Vec::new(),
            cpu: Timeline::default(),
            cmd_overhead,
        }
    }

    /// Busy time of the firmware core.
    pub fn cpu_busy(&self) -> SimTime {
        self.cpu.busy
    }

    /// Bytes of the PCM's logical space: a fusion device's PCM space.
    pub fn logical_bytes(&self) -> u64 {
        self.logical_bytes
    }

    /// The PCM's figures for a run's result, over `secs` of simulated time.
    pub fn result(&self, secs: f64, util: &dyn Fn(SimTime) -> f64) -> PcmResult {
        let p = self;
        let m = &p.media;
        let c = &m.counters;
        let max = m.wear.max() as u64;
        let (read_pj, write_pj) = m.energy_pj(p.energy.read_pj_per_bit, p.energy.write_pj_per_bit);
        const YEAR_S: f64 = 365.25 * 86400.0;
        PcmResult {
            reads: m.reads_by_size().values().sum(),
            writes: m.writes_by_size().values().sum(),
            bytes_read: c.bytes_read,
            bytes_written: c.bytes_written,
            reads_by_size: m.reads_by_size(),
            writes_by_size: m.writes_by_size(),
            write_pauses: c.pauses,
            gap_moves: c.gap_moves,
            wear: PcmWear {
                lines: m.wear.lines(),
                max_line_writes: max,
                mean_line_writes: m.wear.mean(),
                histogram: m
                    .wear
                    .histogram()
                    .into_iter()
                    .map(|(lo, hi, lines)| PcmWearBucket { lo, hi, lines })
                    .collect(),
                writes_per_line: p.writes_per_line,
                years_to_first_wear_out: p
                    .writes_per_line
                    .filter(|_| max > 0 && secs > 0.0)
                    .map(|e| e / (max as f64 / secs) / YEAR_S),
            },
            energy: PcmEnergyResult {
                read_uj: read_pj.map(|pj| pj * 1e-6),
                write_uj: write_pj.map(|pj| pj * 1e-6),
            },
            channel_utilisation: UnitUtil::of(m.channel_busy().map(util).collect()),
        }
    }

    /// A command reached the controller: its firmware time, then `PcmDispatch`.
    #[inline]
    pub(crate) fn accept(&mut self, now: SimTime, cmd: u32, q: &mut EventQueue<Event>) {
        let (_, end) = self.cpu.reserve(now, self.cmd_overhead);
        q.push(end, Event::PcmDispatch { cmd });
    }

    /// The firmware is done with `cmd`: read from the media, pull a write's data, or answer.
    /// Never inlined, nor are the other handlers: inlined, the media's loops would make
    /// `Device::handle` too big to be inlined into the NAND event loop.
    #[inline(never)]
    pub(crate) fn dispatch(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let c = up.cmds.get(cmd);
        match c.op {
            Op::Read => {
                let (offset, len) = (c.offset, c.len);
                let ready = match cache {
                    None => self.media.read(now, offset, len),
                    Some(bm) => return self.read_cached(now, cmd, up, bm, check),
                };
                let end = up.push_read_data(ready, cmd, len, 0);
                let c = up.cmds.get_mut(cmd);
                c.data_done = c.data_done.max(end);
                up.complete(end, cmd);
            }
            Op::Write => {
                let end = up.link.pull_write_data(now, c);
                up.q.push(end, Event::PcmDataIn { cmd });
            }
            // Nothing is mapped, so nothing to unmap; the buffer's lines stay (the PCM keeps
            // its data too).
            Op::Trim => up.complete(now, cmd),
            // Dirty lines of a cache buffer go to the PCM first; without one, nothing is
            // volatile.
            Op::Flush => match cache {
                Some(bm) => bm.flush_command(now, cmd, up, &mut PcmLines { pcm: self, check })?,
                None => up.complete(now, cmd),
            },
            Op::Erase => unreachable!("the device refuses erases of PCM at submission"),
            Op::Append
            | Op::ZoneReset
            | Op::ZoneFinish
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneOffline => unreachable!("the device refuses zone commands without zones"),
        }
        Ok(())
    }

    /// A read with the cache buffer: lines that hit come from DRAM; each run of lines that
    /// miss is one PCM read; the data goes up once the last of them is out. Whole lines read
    /// from the PCM are kept as clean copies (`read_allocate`), once their data is in.
    fn read_cached(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        bm: &mut BufferManager,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        let unit = bm.line_bytes();
        let mut ready = now;
        let mut run: Option<(u64, u64)> = None;
        let mut whole_misses = Vec::new();
        for (lpn, covered) in units_of(unit, offset, len) {
            if let Some(t) = bm.read(now, lpn, covered) {
                ready = ready.max(t);
                if let Some((s, e)) = run.take() {
                    ready = ready.max(self.media.read(now, s, e - s));
                }
                continue;
            }
            if covered == unit {
                whole_misses.push(lpn);
            }
            let s = (lpn * unit).max(offset);
            run = Some((run.map_or(s, |r| r.0), s + covered));
        }
        let all_hit = whole_misses.is_empty() && run.is_none();
        if let Some((s, e)) = run {
            ready = ready.max(self.media.read(now, s, e - s));
        }
        let end = up.push_read_data(ready, cmd, len, 0);
        let c = up.cmds.get_mut(cmd);
        c.data_done = c.data_done.max(end);
        up.complete(end, cmd);
        let mut port = PcmLines { pcm: self, check };
        for lpn in whole_misses {
            bm.fill(ready, lpn, lpn as u32, &mut port);
        }
        if all_hit {
            bm.maybe_preemptive_flush(now, up, &mut port)?;
        }
        Ok(())
    }

    /// The cache buffer flushes line `slot`, holding PCM line `lpn`: write it in place.
    pub(crate) fn flush_line(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        line_bytes: u64,
        q: &mut EventQueue<Event>,
    ) {
        let mut accesses = 0;
        let write_cmd = &mut self.write_cmd;
        let end = self
            .media
            .write(now, lpn * line_bytes, line_bytes, |w, end| {
                if write_cmd.len() <= w as usize {
                    write_cmd.resize(w as usize + 1, u32::MAX);
                }
                write_cmd[w as usize] = FLUSH | slot;
                q.push(end, Event::PcmWriteEnd { write: w });
                accesses += 1;
            });
        if accesses == 0 {
            q.push(end, Event::PcmFlushEnd { slot });
        }
    }

    /// A write's data is in the controller: write it in place.
    #[inline(never)]
    pub(crate) fn write_data_in(
        &mut self,
        now: SimTime,
        cmd: u32,
        up: &mut HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        if let Some(bm) = cache {
            if bm.write_back() {
                return bm.write(now, cmd, up, &mut PcmLines { pcm: self, check });
            }
            // Write-through: the lines held (and whole lines, with read_allocate) take the new
            // data as it goes to the PCM.
            let unit = bm.line_bytes();
            let mut port = PcmLines { pcm: self, check };
            for (lpn, covered) in units_of(unit, offset, len) {
                if covered == unit || bm.find(lpn).is_some() {
                    bm.write_through(now, lpn, lpn as u32, &mut port);
                }
            }
        }
        self.write_in_place(now, cmd, offset, len, up);
        Ok(())
    }

    /// Write `len` bytes at `offset` for command `cmd`; it completes with its last access.
    fn write_in_place(&mut self, now: SimTime, cmd: u32, offset: u64, len: u64, up: &mut HostPort) {
        let mut n = 0;
        let write_cmd = &mut self.write_cmd;
        let q = &mut *up.q;
        let end = self.media.write(now, offset, len, |w, end| {
            if write_cmd.len() <= w as usize {
                write_cmd.resize(w as usize + 1, u32::MAX);
            }
            write_cmd[w as usize] = cmd;
            q.push(end, Event::PcmWriteEnd { write: w });
            n += 1;
        });
        if n == 0 {
            up.complete(end, cmd);
        } else {
            up.cmds.get_mut(cmd).txns_left = n;
        }
    }

    /// A write access's event came due: if a read paused it meanwhile, wait for its new end;
    /// else it is done, and its command with its last access.
    /// A flush's access ends its flush (a line is written in one access: a cache line is a
    /// PCM line).
    #[inline(never)]
    pub(crate) fn write_end(
        &mut self,
        now: SimTime,
        write: u32,
        up: &mut HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let end = self.media.write_end(write);
        if end > now {
            up.q.push(end, Event::PcmWriteEnd { write });
            return Ok(());
        }
        self.media.release_write(write);
        let cmd = self.write_cmd[write as usize];
        if cmd & FLUSH != 0 {
            return self.flush_end(now, cmd & !FLUSH, up, cache, check);
        }
        let c = up.cmds.get_mut(cmd);
        c.txns_left -= 1;
        if c.txns_left == 0 {
            up.complete(now, cmd);
        }
        Ok(())
    }

    /// The flush of cache line `slot` reached the PCM.
    #[inline(never)]
    pub(crate) fn flush_end(
        &mut self,
        now: SimTime,
        slot: u32,
        up: &mut HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let bm = cache.expect("a flush comes from the cache buffer");
        bm.flush_done(now, slot, up, &mut PcmLines { pcm: self, check })
    }
}
