//! Flash interface layer: per-die transaction queues and the NAND operations they become.
//!
//! Each die has three queues: host reads, host writes, GC (copies and erases). An idle die takes
//! host reads first, then host writes, then GC — except that GC outranks host writes while one
//! of the die's planes is at or below the urgent free-block level, which is how sustained
//! writes feel GC. A read or program gathers partners from its queue (within a window) on other
//! planes, or on the same page, into one multi-plane operation.
//!
//! The channel bus is a timeline shared by the dies of a channel: command/address cycles and
//! data transfers are reserved on it in the order the engine reaches them. A die is held from
//! its command to the end of its last transfer (reads) or of tPROG/tBERS.

use crate::error::Result;
use crate::sim::SimTime;
use crate::system::{Event, Phase, System, Txn, TxnKind, NONE};

impl System {
    /// Queue a transaction at its die (queue 0 host reads, 1 host writes, 2 GC) and start the
    /// die if it is idle.
    pub(crate) fn enqueue(&mut self, now: SimTime, txn: u32, queue: usize) {
        let die = self.die_of_plane(self.txns.get(txn).plane);
        self.dies[die as usize].queues[queue].push_back(txn);
        self.start_die(now, die);
    }

    /// Turn the GC work the FTL emitted into copy and erase transactions.
    pub(crate) fn drain_gc(&mut self, now: SimTime) {
        if self.ftl.tasks.is_empty() {
            return;
        }
        let tasks = std::mem::take(&mut self.ftl.tasks);
        let upp = self.geo.units_per_page;
        for task in &tasks {
            // One copy per destination page: the GC block fills in order, so consecutive moves
            // share a page and go in one program.
            let mut i = 0;
            while i < task.moves.len() {
                let (from, to) = task.moves[i];
                let page = self.geo.page_id(to);
                let mut j = i + 1;
                while j < task.moves.len()
                    && self.geo.page_id(task.moves[j].1) == page
                    && j - i < upp as usize
                {
                    j += 1;
                }
                let mut src_pages = 1u16;
                for k in i + 1..j {
                    if (i..k).all(|m| {
                        self.geo.page_id(task.moves[m].0) != self.geo.page_id(task.moves[k].0)
                    }) {
                        src_pages += 1;
                    }
                }
                let block = self.geo.block_of_unit(to);
                let t = self.txns.insert(Txn {
                    kind: TxnKind::GcCopy,
                    cmd: NONE,
                    pun: to,
                    src: from,
                    plane: task.plane,
                    host_bytes: 0,
                    epoch: self.ftl.blocks()[block as usize].epoch,
                    units: (j - i) as u16,
                    src_pages,
                });
                self.enqueue(now, t, 2);
                i = j;
            }
            if task.block == NONE {
                continue;
            }
            let t = self.txns.insert(Txn {
                kind: TxnKind::Erase,
                cmd: NONE,
                pun: task.block,
                src: NONE,
                plane: task.plane,
                host_bytes: 0,
                epoch: task.epoch,
                units: 0,
                src_pages: 0,
            });
            self.enqueue(now, t, 2);
        }
        // Hand the vector back so its capacity is reused.
        self.ftl.tasks = tasks;
        self.ftl.tasks.clear();
    }

    fn gc_urgent(&self, die: u32) -> bool {
        let ppd = self.geo.planes_per_die;
        (die * ppd..(die + 1) * ppd).any(|p| self.ftl.plane_urgent(p))
    }

    pub(crate) fn start_die(&mut self, now: SimTime, die: u32) {
        let d = &self.dies[die as usize];
        if d.phase != Phase::Idle {
            return;
        }
        let queue = if !d.queues[0].is_empty() {
            0
        } else if !d.queues[2].is_empty() && (d.queues[1].is_empty() || self.gc_urgent(die)) {
            2
        } else if !d.queues[1].is_empty() {
            1
        } else {
            return;
        };
        let head = self.dies[die as usize].queues[queue]
            .pop_front()
            .expect("queue not empty");
        let kind = self.txns.get(head).kind;
        let mut op = std::mem::take(&mut self.dies[die as usize].op);
        op.clear();
        op.push(head);
        if matches!(
            kind,
            TxnKind::HostRead | TxnKind::RmwRead | TxnKind::HostWrite
        ) {
            self.gather_partners(die, queue, &mut op);
        }
        let ch = self.geo.channel_of_die(die) as usize;
        let timing = &self.nand;
        let cmd_time = timing.cmd_addr;
        let (phase, at, busy) = match kind {
            TxnKind::HostRead | TxnKind::RmwRead => {
                let planes = distinct_planes(&op, &self.txns);
                let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time * planes);
                let t_r = op
                    .iter()
                    .map(|&t| {
                        timing.read[timing.page_type(self.geo.page_in_block(self.txns.get(t).pun))]
                    })
                    .max()
                    .unwrap();
                (Phase::Sensed, cmd_end + t_r, cmd_end + t_r - start)
            }
            TxnKind::HostWrite => {
                // Command/address once per plane, then every unit's data, in one bus tenure.
                let planes = distinct_planes(&op, &self.txns);
                let data = timing.bus_time(self.geo.unit_bytes * op.len() as u64);
                let (start, end) = self.channels[ch].reserve(now, cmd_time * planes + data);
                let t_prog = op
                    .iter()
                    .map(|&t| {
                        timing.program
                            [timing.page_type(self.geo.page_in_block(self.txns.get(t).pun))]
                    })
                    .max()
                    .unwrap();
                (Phase::Programmed, end + t_prog, end + t_prog - start)
            }
            TxnKind::GcCopy => {
                // One sense per distinct source page, back to back on the die.
                let t = *self.txns.get(head);
                let n = t.src_pages as u64;
                let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time * n);
                let t_r = timing.read[timing.page_type(self.geo.page_in_block(t.src))] * n;
                (Phase::CopySensed, cmd_end + t_r, cmd_end + t_r - start)
            }
            TxnKind::Erase => {
                let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time);
                (
                    Phase::Erased,
                    cmd_end + timing.erase,
                    cmd_end + timing.erase - start,
                )
            }
        };
        if op.len() > 1 {
            self.counters.multiplane_ops += 1;
        }
        let d = &mut self.dies[die as usize];
        d.op = op;
        d.phase = phase;
        d.busy += busy;
        self.q.push(at, Event::DieStep { die });
    }

    /// Move queued transactions of the same kind that can join the head's operation: one page
    /// per plane (units of the same page share it).
    fn gather_partners(&mut self, die: u32, queue: usize, op: &mut Vec<u32>) {
        if !self.cfg.nand.multiplane && self.geo.units_per_page == 1 {
            return;
        }
        let kind = self.txns.get(op[0]).kind;
        let window = self.cfg.controller.multiplane_window as usize;
        let max_members = (self.geo.planes_per_die * self.geo.units_per_page) as usize;
        let mut i = 0;
        while i < window.min(self.dies[die as usize].queues[queue].len()) && op.len() < max_members
        {
            let cand = self.dies[die as usize].queues[queue][i];
            let c = self.txns.get(cand);
            let same_kind =
                c.kind == kind || (kind != TxnKind::HostWrite && c.kind != TxnKind::HostWrite);
            let page = self.geo.page_id(c.pun);
            let fits = same_kind
                && op.iter().all(|&m| {
                    let mt = self.txns.get(m);
                    let same_page = self.geo.page_id(mt.pun) == page;
                    same_page || (mt.plane != c.plane && self.cfg.nand.multiplane)
                })
                // A plane contributes one page: units on a plane already used must share its page.
                && op.iter().filter(|&&m| self.txns.get(m).plane == c.plane).all(|&m| self.geo.page_id(self.txns.get(m).pun) == page);
            if fits {
                self.dies[die as usize].queues[queue].remove(i);
                op.push(cand);
            } else {
                i += 1;
            }
        }
    }

    pub(crate) fn on_die_step(&mut self, now: SimTime, die: u32) -> Result<()> {
        let ch = self.geo.channel_of_die(die) as usize;
        let phase = self.dies[die as usize].phase;
        let op = std::mem::take(&mut self.dies[die as usize].op);
        match phase {
            Phase::Sensed => {
                // Data out, one unit after another, then ECC; the die is free for its next
                // command, which the channel timeline places after these transfers.
                self.counters.nand_pages_read += distinct_pages(&op, &self.txns, &self.geo);
                let xfer = self.nand.bus_time(self.geo.unit_bytes);
                let ecc = self.nand.ecc_decode;
                let mut last = now;
                for &t in &op {
                    let (_, end) = self.channels[ch].reserve(now, xfer);
                    last = end;
                    self.read_txn_done(end + ecc, t);
                }
                self.dies[die as usize].busy += last - now;
                self.finish_op(now, die, op);
            }
            Phase::Programmed => {
                self.counters.nand_pages_written += distinct_pages(&op, &self.txns, &self.geo);
                for &t in &op {
                    self.write_txn_done(now, t);
                }
                self.finish_op(now, die, op);
            }
            Phase::CopySensed => {
                // Out to the controller, ECC, back in, program.
                let t = *self.txns.get(op[0]);
                let xfer = self.nand.bus_time(self.geo.unit_bytes * t.units as u64);
                let (_, out_end) = self.channels[ch].reserve(now, xfer);
                let (_, in_end) = self.channels[ch]
                    .reserve(out_end + self.nand.ecc_decode, self.nand.cmd_addr + xfer);
                let t_prog = self.nand.program[self.nand.page_type(self.geo.page_in_block(t.pun))];
                self.counters.nand_pages_read += t.src_pages as u64;
                let d = &mut self.dies[die as usize];
                d.busy += in_end + t_prog - now;
                d.phase = Phase::CopyProgrammed;
                d.op = op;
                self.q.push(in_end + t_prog, Event::DieStep { die });
            }
            Phase::CopyProgrammed => {
                self.counters.nand_pages_written += 1;
                self.write_txn_done(now, op[0]);
                self.finish_op(now, die, op);
            }
            Phase::Erased => {
                let t = self.txns.remove(op[0]);
                self.ftl.erase_done(t.plane, t.pun, t.epoch)?;
                self.drain_gc(now);
                self.finish_op(now, die, op);
            }
            Phase::Idle => unreachable!("a die step for an idle die"),
        }
        Ok(())
    }

    fn finish_op(&mut self, now: SimTime, die: u32, op: Vec<u32>) {
        let d = &mut self.dies[die as usize];
        d.op = op;
        d.op.clear();
        d.phase = Phase::Idle;
        self.start_die(now, die);
    }
}

fn distinct_planes(op: &[u32], txns: &crate::system::Slab<Txn>) -> u64 {
    let mut seen = 0u64;
    let mut n = 0;
    for &t in op {
        let bit = 1u64 << (txns.get(t).plane % 64);
        if seen & bit == 0 {
            seen |= bit;
            n += 1;
        }
    }
    n
}

fn distinct_pages(
    op: &[u32],
    txns: &crate::system::Slab<Txn>,
    geo: &crate::media::nand::Geometry,
) -> u64 {
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
