//! The cache buffer's flushes: starting one (on demand, in the background, pre-emptively
//! through the additional port), the program it queues, a partial line's merge first, and its
//! end (waiters retried, a line written meanwhile flushed again).

use super::{flash_unit, BufferManager, Flight, FlushKind, Lines, Placed};
use crate::config::CachePorts;
use crate::error::Result;
use crate::iface::HostPort;
use crate::media::dram::Port;
use crate::sim::SimTime;

impl BufferManager {
    /// Start a flush of the dirty line in `slot`. With a cached map (DFTL) the flush changes
    /// its unit's map entry, so it first looks up the entry's translation page; on a miss it
    /// waits for the page's read (the HIL issues it, and goes on with
    /// [`BufferManager::flush_program`] when the page is in). In front of a zoned drive the
    /// line of the zone's flush pointer is flushed instead (the zone's blocks go in order).
    /// False when no flush started (a zone with no line at its flush pointer).
    pub(super) fn flush_line(
        &mut self,
        now: SimTime,
        slot: u32,
        kind: FlushKind,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<bool> {
        let slot = match flash.zoned() {
            Some(z) => {
                let first = z.next_to_flush(self.buf.line(slot).lpn);
                match self.buf.find(first) {
                    Some(s) if self.buf.line(s).dirty && !self.buf.line(s).flushing => s,
                    _ => return Ok(false),
                }
            }
            None => slot,
        };
        let generation = self.buf.start_flush(slot);
        self.stats.flushes[kind as usize] += 1;
        let seq = self.next_flush_seq;
        self.next_flush_seq += 1;
        self.inflight.insert(seq);
        match kind {
            FlushKind::Preemptive => self.preemptive_busy = true,
            FlushKind::Background => self.background_inflight += 1,
            FlushKind::OnDemand => self.on_demand_inflight += 1,
            FlushKind::Explicit => {}
        }
        self.flights[slot as usize] = Some(Flight {
            kind,
            seq,
            generation,
        });
        if let Some(m) = flash.mapping() {
            let lpn = self.buf.line(slot).lpn;
            if !m.flush_lookup(lpn, slot) {
                return Ok(true);
            }
            if m.hmb {
                // The new entry goes into host memory (a posted write; nothing waits for it).
                let entry_bytes = self.line_bytes / m.per_page;
                up.link.host_memory_write(now, entry_bytes);
            }
        }
        self.flush_program(now, slot, up, flash)?;
        Ok(true)
    }

    /// A flush under way has its map entry at hand: read the line out of DRAM and write it back
    /// ([`Lines::flush_out`]: on NAND, map its unit in the FTL and queue the program with the
    /// die's host writes; on PCM, write it in place). A line trimmed meanwhile (only
    /// while its flush waited for a translation page) programs nothing: its flush ends here.
    pub(crate) fn flush_program(
        &mut self,
        now: SimTime,
        slot: u32,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        let line = *self.buf.line(slot);
        if line.orphan {
            return self.flush_done(now, slot, up, flash);
        }
        if let Some(p) = self.partial.as_ref() {
            if !p.whole(slot) {
                return self.merge_for_flush(now, slot, up, flash);
            }
            if let Some(dc) = flash.check() {
                dc.flushed_whole(slot);
            }
        }
        let f = self.flights[slot as usize]
            .as_mut()
            .expect("a flush under way on this line");
        // What the program carries is the line as it is read out now: writes made while the
        // flush waited for its translation page go with it.
        f.generation = line.generation;
        let port = self.flush_port(slot);
        self.dram_io(now, slot, self.line_bytes, port, false);
        flash.flush_out(now, line.lpn, slot, self.line_bytes, up)
    }

    /// The DRAM port the flush of line `slot` moves its data through: a pre-emptive flush's
    /// is the additional port (dual port), any other's the host port.
    pub(super) fn flush_port(&self, slot: u32) -> Port {
        match self.flights[slot as usize] {
            Some(f) if f.kind == FlushKind::Preemptive && self.cfg.ports == CachePorts::Dual => {
                Port::Additional
            }
            _ => Port::Host,
        }
    }

    /// A flush found its line holding part of its unit (`cache.partial_lines =
    /// "merge-at-flush"`): the rest is read from NAND first, and the program goes on from
    /// [`BufferManager::merged_for_flush`]; with nothing on NAND to read (never written, or
    /// still in the controller on its way to NAND) the line is whole at once.
    #[cold]
    #[inline(never)]
    pub(super) fn merge_for_flush(
        &mut self,
        now: SimTime,
        slot: u32,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        let lpn = self.buf.line(slot).lpn;
        let source = flash.merge_source(lpn);
        if let Some(dc) = flash.check() {
            dc.merged(slot, flash_unit(source));
        }
        match source {
            Some((pun, true)) => {
                self.stats.merge_reads += 1;
                flash.merge_read(now, slot, pun, up);
                Ok(())
            }
            _ => {
                self.partial.as_mut().expect("partial lines").fill(slot);
                if let Some(dc) = flash.check() {
                    dc.line_whole(slot);
                }
                self.flush_program(now, slot, up, flash)
            }
        }
    }

    /// The rest of line `slot`'s unit came in from NAND at `now` for its flush: it goes into
    /// the line's DRAM (through the flush's port), and the whole line is programmed.
    pub(crate) fn merged_for_flush(
        &mut self,
        now: SimTime,
        slot: u32,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        let p = self.partial.as_mut().expect("partial lines");
        let missing = p.missing_bytes(slot);
        p.fill(slot);
        if let Some(dc) = flash.check() {
            dc.line_whole(slot);
        }
        let port = self.flush_port(slot);
        let end = self.dram_io(now, slot, missing, port, true);
        self.flush_program(end, slot, up, flash)
    }

    /// A read of unit `lpn` from NAND unit `pun` came in at `now` while the buffer holds part of
    /// the unit in a line (`cache.partial_lines = "merge-at-flush"`): the rest goes into the
    /// line, which then holds the whole unit and needs no read when flushed. Not while the
    /// line's flush reads it anyway, nor if `pun` no longer holds the unit's data.
    pub(super) fn merge_read_in(
        &mut self,
        now: SimTime,
        slot: u32,
        pun: u32,
        flash: &mut impl Lines,
    ) {
        let Some(p) = self.partial.as_mut() else {
            return;
        };
        if p.whole(slot)
            || self.buf.line(slot).flushing
            || flash.lookup(self.buf.line(slot).lpn) != Some(pun)
        {
            return;
        }
        let missing = p.missing_bytes(slot);
        p.fill(slot);
        self.dram_io(now, slot, missing, Port::Host, true);
        if let Some(dc) = flash.check() {
            dc.merged(slot, Some(pun));
            dc.line_whole(slot);
        }
    }

    /// A flush program finished: the line is clean unless written since; an on-demand flush
    /// also frees its line. Waiting writes then try again.
    pub(crate) fn flush_done(
        &mut self,
        now: SimTime,
        slot: u32,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        let f = self.flights[slot as usize]
            .take()
            .expect("a flush under way on this line");
        let still_cached = self.buf.flush_done(slot, f.generation);
        self.inflight.remove(&f.seq);
        match f.kind {
            FlushKind::Preemptive => self.preemptive_busy = false,
            FlushKind::Background => self.background_inflight -= 1,
            FlushKind::OnDemand => {
                self.on_demand_inflight -= 1;
                let l = self.buf.line(slot);
                if still_cached && !l.dirty && !l.flushing {
                    self.buf.evict(slot);
                }
            }
            FlushKind::Explicit => {}
        }
        if !self.redo.is_empty() {
            self.redo_flush(now, slot, f, still_cached, up, flash)?;
        }
        self.retry_waiters(now, up, flash)?;
        self.finish_explicit(now, up);
        self.sample(now);
        self.maybe_background_flush(now, up, flash)
    }

    /// The flush `f` of line `slot` ended: if an explicit flush needs data written to the
    /// line after `f` read it out, flush the line again, and have the explicit flushes that
    /// waited for `f` wait for that flush instead (NVMe: a Flush completes once every write
    /// completed before it is durable).
    pub(super) fn redo_flush(
        &mut self,
        now: SimTime,
        slot: u32,
        f: Flight,
        still_cached: bool,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        let mut needed = None;
        self.redo.retain(|&(s, g)| {
            if s == slot {
                // Generations wrap: the one furthest after the flush's is the newest.
                let ahead = g.wrapping_sub(f.generation) as i32;
                if ahead > 0 && needed.is_none_or(|n: i32| ahead > n) {
                    needed = Some(ahead);
                }
                false
            } else {
                true
            }
        });
        let line = self.buf.line(slot);
        if needed.is_none() || !still_cached || !line.dirty || line.flushing {
            return Ok(());
        }
        if !self.flush_line(now, slot, FlushKind::Explicit, up, flash)? {
            return Ok(());
        }
        let again = self.next_flush_seq - 1;
        for e in &mut self.explicit {
            if e.1 >= f.seq {
                e.1 = e.1.max(again);
            }
        }
        Ok(())
    }

    pub(super) fn retry_waiters(
        &mut self,
        now: SimTime,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        while let Some(w) = self.waiting.front().copied() {
            let waiting = self.waiting.len();
            match self.place(now, w.lpn, w.start, w.bytes, waiting, up, flash)? {
                Placed::At(t) => {
                    self.waiting.pop_front();
                    let c = up.cmds.get_mut(w.cmd);
                    c.data_done = c.data_done.max(t);
                    c.txns_left -= 1;
                    if c.txns_left == 0 {
                        let done = c.data_done;
                        self.written(done, w.cmd, up, flash)?;
                    }
                }
                Placed::Waiting => break,
            }
        }
        Ok(())
    }

    pub(super) fn maybe_background_flush(
        &mut self,
        now: SimTime,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        loop {
            let hi = self.cfg.flush_high_watermark;
            if hi <= 0.0 || self.background_inflight >= self.cfg.max_background_flushes {
                return Ok(());
            }
            let cap = self.buf.capacity() as f64;
            let pending_dirty = self
                .buf
                .dirty_lines()
                .saturating_sub(self.background_inflight) as f64;
            // Start above the high mark; once started, go on down to the low mark.
            let threshold = if self.background_inflight > 0 {
                self.cfg.flush_low_watermark
            } else {
                hi
            };
            if pending_dirty <= threshold * cap {
                return Ok(());
            }
            let window = self.buf.capacity();
            let Some(slot) = self.buf.dirty_near_eviction(window) else {
                return Ok(());
            };
            if !self.flush_line(now, slot, FlushKind::Background, up, flash)? {
                return Ok(());
            }
        }
    }

    /// Dual port only: a pre-emptive flush if the current host request hit, none runs, and a
    /// dirty line lies near the eviction end.
    ///
    /// The window is a share of the whole buffer's capacity, counted along the eviction order,
    /// and the free lines come first in that order: seed 001 §II checks "in the descending order
    /// of eviction priority until the amount of checked data reaches 5 % of the total CB
    /// capacity", so that "the eviction can be done before it is demanded" (Fig. 1). A miss
    /// takes a free line before it evicts anything, so while more lines are free than the
    /// window holds no line is near eviction and nothing is flushed ahead; with `f` free lines,
    /// the window's other `window − f` places are the lines in use at the eviction end.
    pub(crate) fn maybe_preemptive_flush(
        &mut self,
        now: SimTime,
        up: &mut HostPort,
        flash: &mut impl Lines,
    ) -> Result<()> {
        if self.cfg.ports != CachePorts::Dual || self.preemptive_busy {
            return Ok(());
        }
        let window =
            ((self.cfg.preemptive_window * self.buf.capacity() as f64).ceil() as u32).max(1);
        let free = self.buf.capacity() - self.buf.len();
        let near_eviction = window.saturating_sub(free);
        if near_eviction == 0 {
            return Ok(());
        }
        if let Some(slot) = self.buf.dirty_near_eviction(near_eviction) {
            self.flush_line(now, slot, FlushKind::Preemptive, up, flash)?;
        }
        Ok(())
    }
}
