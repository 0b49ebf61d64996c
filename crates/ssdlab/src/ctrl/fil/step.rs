//! A die's phase ends (`Fil::die_step`): a read's sense decoded through the error model (and
//! read-retry steps where it needs them), its units read out on the channel one by one, a
//! program or erase done, GC copies and erases reported to the blocks' owner, and the die
//! freed for its next operation. Apart from `start.rs` (how an operation starts): this is
//! how it ends, the `DieStep` event's side.

use super::{plane_bit, Fil, FlashOwner, Step, Txn, TxnKind};
use crate::ctrl::datacheck::DataCheck;
use crate::ctrl::die::Phase;
use crate::error::Result;
use crate::event::Event;
use crate::ftl::NONE;
use crate::media::nand::Geometry;
use crate::media::nand_errors::ReadOutcome;
use crate::sim::{EventQueue, SimTime, Slab};

impl Fil {
    /// The current phase of `die`'s operation ended at `now`. GC phases are handled here;
    /// host reads and programs are returned to the caller.
    #[inline]
    pub(crate) fn die_step<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        owner: &mut O,
        check: Option<&mut DataCheck>,
        q: &mut EventQueue<Event>,
    ) -> Result<Step> {
        let ch = self.geo.channel_of_die(die) as usize;
        let d = &mut self.dies[die as usize];
        if d.next_stale == now {
            // The end of a phase that was suspended (it ends later now). A stale step fires
            // before any live step of the same picosecond: it was queued first.
            d.next_stale = d.stale.pop_front().unwrap_or(SimTime::MAX);
            return Ok(Step::Done);
        }
        let phase = d.phase;
        let hits = d.hit_planes;
        let op = std::mem::take(&mut d.op);
        match phase {
            Phase::Sensed | Phase::Retried => {
                if self.errors.is_some() && phase == Phase::Sensed {
                    if let Some(end) = self.retry_reads(now, die, &op, owner) {
                        // Sensed again at `end`, with every outcome already decided.
                        let d = &mut self.dies[die as usize];
                        d.op = op;
                        d.phase = Phase::Retried;
                        q.push(end, Event::DieStep { die });
                        return Ok(Step::Done);
                    }
                }
                if self.dies[die as usize].read_ahead {
                    // Pages read ahead were decoded (with their retries) as any read's.
                    return Ok(self.sensed_ahead(now, die, op, hits, owner, q));
                }
                self.counters.nand_pages_read += sensed_pages(&op, &self.txns, &self.geo, hits);
                return Ok(Step::Sensed(op));
            }
            Phase::Programmed => {
                self.counters.nand_pages_written += distinct_pages(&op, &self.txns, &self.geo);
                return Ok(Step::Programmed(op));
            }
            Phase::BlockErased => return Ok(Step::Erased(op)),
            Phase::CopySensed => {
                let g = self.dies[die as usize].gc_op;
                let partners = std::mem::take(&mut self.dies[die as usize].gc_partners);
                let mut in_end = now;
                let mut t_prog = SimTime::ZERO;
                for m in std::iter::once(&g).chain(partners.iter()) {
                    in_end = if m.copyback {
                        // Copyback program: its command and address, and the page register is
                        // programmed as it is.
                        self.counters.copyback_pages += 1;
                        self.channels[ch].reserve(now, self.nand.cmd_addr).1
                    } else {
                        // Out to the controller, ECC, back in, program.
                        let xfer = if m.units == 1 {
                            self.nand.unit_xfer()
                        } else {
                            self.nand.bus_time(self.geo.unit_bytes * m.units as u64)
                        };
                        let (_, out_end) = self.channels[ch].reserve(now, xfer);
                        self.channels[ch]
                            .reserve(out_end + self.nand.ecc_decode, self.nand.cmd_addr + xfer)
                            .1
                    };
                    let page = self.geo.page_in_block(m.pun);
                    t_prog = t_prog.max(self.nand.program_time(page));
                    self.counters.nand_pages_read += m.src_pages as u64;
                }
                if !partners.is_empty() {
                    self.counters.multiplane_ops += 1;
                }
                self.counters.array_program_time += t_prog;
                let d = &mut self.dies[die as usize];
                d.gc_partners = partners;
                d.busy += in_end + t_prog - now;
                d.phase = Phase::CopyProgrammed;
                d.op = op;
                d.step_at = in_end + t_prog;
                d.array_start = in_end;
                q.push(in_end + t_prog, Event::DieStep { die });
            }
            Phase::CopyProgrammed => {
                let g = self.dies[die as usize].gc_op;
                if !op.is_empty() {
                    // A merge copy: its FTL hears of it through the caller.
                    self.counters.nand_pages_written += 1;
                    return Ok(Step::Programmed(op));
                }
                let partners = std::mem::take(&mut self.dies[die as usize].gc_partners);
                for m in std::iter::once(&g).chain(partners.iter()) {
                    self.counters.nand_pages_written += 1;
                    owner.gc_copy_programmed(m.pun, m.units as u32, m.epoch);
                }
                self.dies[die as usize].gc_partners = partners;
                self.finish_op(now, die, op, owner, q);
            }
            Phase::Erased => {
                let g = self.dies[die as usize].gc_op;
                owner.gc_erased(self, now, &g, check, q)?;
                self.finish_op(now, die, op, owner, q);
            }
            Phase::Suspending => {
                // Suspended: the die takes the reads.
                let d = &mut self.dies[die as usize];
                d.op = op;
                d.phase = Phase::Idle;
                self.start_die(now, die, owner, q);
            }
            Phase::Idle => unreachable!("a die step for an idle die"),
        }
        Ok(Step::Done)
    }

    /// The reads of `die`'s operation were sensed: decode each through the error model. When
    /// any needs read-retry steps, the die senses again for the most any of them needs (each
    /// step: the page's tR, the unit's transfer and an ECC decode) and the step ends later;
    /// returns whether it did.
    fn retry_reads<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        op: &[u32],
        owner: &O,
    ) -> Option<SimTime> {
        let m = self.errors.as_mut()?;
        let mut steps = 0u32;
        let mut t_r = SimTime::ZERO;
        let first = die * self.geo.planes_per_die;
        let hits = self.dies[die as usize].hit_planes;
        for &t in op {
            let Txn {
                pun,
                plane,
                epoch,
                kind,
                ..
            } = *self.txns.get(t);
            if hits & plane_bit(plane - first) != 0 {
                // Decoded from the register's data when it was sensed: the same bits again.
                continue;
            }
            let erase_count = owner.erase_count(self.geo.block_of_unit(pun), epoch);
            let n = match m.read(erase_count) {
                ReadOutcome::Decoded { retries } => retries,
                ReadOutcome::Uncorrectable => {
                    // The register's data does not decode: the next read senses again. A page
                    // read ahead fails no command: the host's read of it decodes on its own.
                    self.registers[plane as usize] = NONE;
                    if kind != TxnKind::ReadAhead {
                        self.failed.push(t);
                        self.counters.uncorrectable_reads += 1;
                    }
                    m.retry_max()
                }
            };
            if n > 0 {
                self.counters.reads_retried += 1;
                self.counters.read_retry_steps += n as u64;
                t_r = t_r.max(self.nand.read_time(self.geo.page_in_block(pun)));
            }
            steps = steps.max(n);
        }
        if steps == 0 {
            return None;
        }
        let step = t_r + self.nand.unit_xfer() + self.nand.ecc_decode;
        let end = now + step * steps as u64;
        self.counters.array_read_time += t_r * steps as u64;
        self.dies[die as usize].busy += end - now;
        Some(end)
    }

    /// A read with read-ahead members was sensed: those stay in their registers (their
    /// transactions end here), the others go out as any read's.
    #[cold]
    #[inline(never)]
    fn sensed_ahead<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        mut op: Vec<u32>,
        hits: u64,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) -> Step {
        self.counters.nand_pages_read += sensed_pages(&op, &self.txns, &self.geo, hits);
        self.dies[die as usize].read_ahead = false;
        op.retain(|&t| {
            if self.txns.get(t).kind == TxnKind::ReadAhead {
                self.txns.remove(t);
                self.counters.read_ahead_pages += 1;
                false
            } else {
                true
            }
        });
        if op.is_empty() {
            self.finish_op(now, die, op, owner, q);
            return Step::Done;
        }
        Step::Sensed(op)
    }

    /// A sensed unit's data goes out on the channel from `now` (after the transfers reserved
    /// before it) and through ECC: (end of the transfer, when the data is decoded).
    #[inline]
    pub(crate) fn read_out(&mut self, now: SimTime, die: u32) -> (SimTime, SimTime) {
        let ch = self.geo.channel_of_die(die) as usize;
        let xfer = self.nand.unit_xfer();
        let (_, end) = self.channels[ch].reserve(now, xfer);
        (end, end + self.nand.ecc_decode)
    }

    /// Every unit of a sensed read is out (the last transfer ended at `last_out`): the die is
    /// free for its next command, which the channel timeline places after these transfers.
    #[inline]
    pub(crate) fn finish_read<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        last_out: SimTime,
        op: Vec<u32>,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) {
        self.dies[die as usize].busy += last_out - now;
        self.finish_op(now, die, op, owner, q);
    }

    /// The die's operation is over: hand back its vector and start the next.
    #[inline]
    pub(crate) fn finish_op<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        op: Vec<u32>,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) {
        let d = &mut self.dies[die as usize];
        d.op = op;
        d.op.clear();
        d.phase = Phase::Idle;
        d.op_suspends = 0;
        self.start_die(now, die, owner, q);
    }
}

/// The pages a read sensed: its distinct pages less those found in their registers (`hits`,
/// one page per plane).
#[inline]
fn sensed_pages(op: &[u32], txns: &Slab<Txn>, geo: &Geometry, hits: u64) -> u64 {
    let pages = distinct_pages(op, txns, geo);
    if hits == 0 {
        // Most reads hit no register: no population count (a loop of shifts and masks on
        // baseline x86-64).
        return pages;
    }
    pages - hits.count_ones() as u64
}

#[inline(always)]
fn distinct_pages(op: &[u32], txns: &Slab<Txn>, geo: &Geometry) -> u64 {
    if op.len() <= 1 {
        // Most operations are one unit: no list of pages to set up (and no call).
        return op.len() as u64;
    }
    distinct_pages_of_several(op, txns, geo)
}

#[inline(never)]
fn distinct_pages_of_several(op: &[u32], txns: &Slab<Txn>, geo: &Geometry) -> u64 {
    let mut pages: [u32; 64] = [u32::MAX; 64];
    let mut n = 0usize;
    for &t in op {
        let p = geo.page_id(txns.get(t).pun);
        if !pages[..n].contains(&p) && n < 64 {
            pages[n] = p;
            n += 1;
        }
    }
    n as u64
}
