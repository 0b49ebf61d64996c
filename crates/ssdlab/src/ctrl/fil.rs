//! Flash interface layer: per-die transaction queues and the NAND operations they become.
//!
//! Each die has two transaction queues (host reads, host writes) and a queue of GC jobs (one per
//! collection: its page copies, then the victim's erase). An idle die takes host reads first,
//! then host writes, then GC — except that GC outranks host writes while one of the die's planes
//! is at or below the urgent free-block level, which is how sustained writes feel GC. A read or
//! program gathers partners from its queue (within a window) on other planes, or on the same
//! page, into one multi-plane operation. GC work is cut from its job one destination page at a
//! time, when the die takes it, so a victim of many pages costs no queue entries up front.
//!
//! The channel bus is a timeline shared by the dies of a channel: command/address cycles and
//! data transfers are reserved on it in the order the engine reaches them. A die is held from
//! its command to the end of its last transfer (reads) or of tPROG/tBERS.

use crate::error::Result;
use crate::sim::SimTime;
use crate::system::{Event, GcJob, GcOp, Phase, System, Txn, TxnKind, NONE};

impl System {
    /// Queue a transaction at its die (queue 0 host reads, 1 host writes, 2 GC) and start the
    /// die if it is idle.
    pub(crate) fn enqueue(&mut self, now: SimTime, txn: u32, queue: usize) {
        let die = self.die_of_plane(self.txns.get(txn).plane);
        self.dies[die as usize].queues[queue].push_back(txn);
        self.start_die(now, die);
    }

    /// Hand the GC work the FTL emitted to the dies of its planes.
    pub(crate) fn drain_gc(&mut self, now: SimTime) {
        if self.ftl.tasks.is_empty() {
            return;
        }
        // In the order emitted; the vector goes back so its capacity is reused.
        let mut tasks = std::mem::take(&mut self.ftl.tasks);
        if let Some(dc) = self.check.as_mut() {
            for &(from, to, _) in tasks.iter().flat_map(|t| t.moves.iter()) {
                dc.moved(from, to);
            }
        }
        for task in tasks.drain(..) {
            let die = self.die_of_plane(task.plane);
            self.dies[die as usize]
                .gc
                .push_back(GcJob { task, next: 0 });
            self.start_die(now, die);
        }
        self.ftl.tasks = tasks;
    }

    /// The next GC operation of the die's first job: a copy of the units bound for one
    /// destination page (the GC block fills in order, so consecutive moves share a page), or,
    /// once the copies are cut, the victim's erase. None when the job has nothing left.
    fn next_gc_op(&mut self, die: u32) -> Option<GcOp> {
        let upp = self.geo.units_per_page as usize;
        let geo = &self.geo;
        let job = self.dies[die as usize].gc.front_mut()?;
        let moves = &job.task.moves;
        if job.next < moves.len() {
            let i = job.next;
            let (from, to, epoch) = moves[i];
            let page = geo.page_id(to);
            let mut j = i + 1;
            while j < moves.len() && geo.page_id(moves[j].1) == page && j - i < upp {
                j += 1;
            }
            let mut src_pages = 1u16;
            for k in i + 1..j {
                if (i..k).all(|m| geo.page_id(moves[m].0) != geo.page_id(moves[k].0)) {
                    src_pages += 1;
                }
            }
            job.next = j;
            // The move list was written when the victim was chosen, long ago: fetch ahead.
            crate::sim::mem::prefetch(moves, j + 16);
            return Some(GcOp {
                erase: false,
                pun: to,
                src: from,
                units: (j - i) as u16,
                src_pages,
                epoch,
                plane: job.task.plane,
            });
        }
        let job = self.dies[die as usize]
            .gc
            .pop_front()
            .expect("job at the front");
        if job.task.block == NONE {
            // A collection that stopped early: copies only.
            return self.next_gc_op(die);
        }
        Some(GcOp {
            erase: true,
            pun: job.task.block,
            src: NONE,
            units: 0,
            src_pages: 0,
            epoch: job.task.epoch,
            plane: job.task.plane,
        })
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
        } else if !d.gc.is_empty() && (d.queues[1].is_empty() || self.gc_urgent(die)) {
            2
        } else if !d.queues[1].is_empty() {
            1
        } else {
            return;
        };
        if queue == 2 {
            match self.next_gc_op(die) {
                Some(g) => self.start_gc_op(now, die, g),
                None => self.start_die(now, die),
            }
            return;
        }
        let head = self.dies[die as usize].queues[queue]
            .pop_front()
            .expect("queue not empty");
        let kind = self.txns.get(head).kind;
        let mut op = std::mem::take(&mut self.dies[die as usize].op);
        op.clear();
        op.push(head);
        self.gather_partners(die, queue, &mut op);
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
            TxnKind::HostWrite | TxnKind::Flush => {
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

    fn start_gc_op(&mut self, now: SimTime, die: u32, g: GcOp) {
        let ch = self.geo.channel_of_die(die) as usize;
        let timing = &self.nand;
        let (phase, at, busy) = if g.erase {
            let (start, cmd_end) = self.channels[ch].reserve(now, timing.cmd_addr);
            (
                Phase::Erased,
                cmd_end + timing.erase,
                cmd_end + timing.erase - start,
            )
        } else {
            // One sense per distinct source page, back to back on the die.
            let n = g.src_pages as u64;
            let (start, cmd_end) = self.channels[ch].reserve(now, timing.cmd_addr * n);
            let t_r = timing.read[timing.page_type(self.geo.page_in_block(g.src))] * n;
            (Phase::CopySensed, cmd_end + t_r, cmd_end + t_r - start)
        };
        let d = &mut self.dies[die as usize];
        d.gc_op = g;
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
            let same_kind = c.kind.is_program() == kind.is_program();
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
                    self.write_txn_done(now, t)?;
                }
                self.finish_op(now, die, op);
            }
            Phase::CopySensed => {
                // Out to the controller, ECC, back in, program.
                let g = self.dies[die as usize].gc_op;
                let xfer = self.nand.bus_time(self.geo.unit_bytes * g.units as u64);
                let (_, out_end) = self.channels[ch].reserve(now, xfer);
                let (_, in_end) = self.channels[ch]
                    .reserve(out_end + self.nand.ecc_decode, self.nand.cmd_addr + xfer);
                let t_prog = self.nand.program[self.nand.page_type(self.geo.page_in_block(g.pun))];
                self.counters.nand_pages_read += g.src_pages as u64;
                let d = &mut self.dies[die as usize];
                d.busy += in_end + t_prog - now;
                d.phase = Phase::CopyProgrammed;
                d.op = op;
                self.q.push(in_end + t_prog, Event::DieStep { die });
            }
            Phase::CopyProgrammed => {
                let g = self.dies[die as usize].gc_op;
                self.counters.nand_pages_written += 1;
                // Only if the block was not erased (and reused) since the copy was cut.
                if self.ftl.blocks()[self.geo.block_of_unit(g.pun) as usize].epoch == g.epoch {
                    for pun in g.pun..g.pun + g.units as u32 {
                        self.ftl.mark_programmed(pun);
                    }
                }
                self.finish_op(now, die, op);
            }
            Phase::Erased => {
                let g = self.dies[die as usize].gc_op;
                self.ftl.erase_done(g.plane, g.pun, g.epoch)?;
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
