//! Flash interface layer: per-die transaction queues and the NAND operations they become.
//!
//! Each die (`die::Die`) has two transaction queues (host reads, host writes) and a queue of GC
//! jobs (one per collection: its page copies, then the victim's erase). An idle die takes host
//! reads first, then host writes, then GC — except that GC outranks host writes while one of the
//! die's planes is at or below the urgent free-block level, which is how sustained writes feel
//! GC. A read or program gathers partners from its queue (within a window) on other planes, or
//! on the same page, into one multi-plane operation. GC work is cut from its job one destination
//! page at a time, when the die takes it, so a victim of many pages costs no queue entries up
//! front.
//!
//! The channel bus is a timeline shared by the dies of a channel: command/address cycles and
//! data transfers are reserved on it in the order the engine reaches them. A die is held from
//! its command to the end of its last transfer (reads) or of tPROG/tBERS.
//!
//! The FIL times operations and reports their ends; what a finished read or program means for
//! its command is the HIL's business. A die step that ends host reads or programs returns them
//! ([`Step`]); the caller hands each to the HIL and then calls [`Fil::finish_op`].

use super::datacheck::DataCheck;
use super::die::{Die, GcJob, GcOp, Phase};
use crate::config::SsdConfig;
use crate::error::Result;
use crate::event::Event;
use crate::ftl::Ftl;
use crate::media::nand::{Geometry, NandTimingPs};
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime, Slab};

/// "No block": a GC job that stopped early has nothing to erase.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnKind {
    HostRead,
    RmwRead,
    HostWrite,
    /// A cache-buffer line on its way to NAND (`ctrl::buffer`).
    Flush,
}

impl TxnKind {
    /// Reads and programs gather separately into multi-plane operations.
    #[inline]
    pub fn is_program(self) -> bool {
        matches!(self, TxnKind::HostWrite | TxnKind::Flush)
    }
}

/// One map unit's read or program.
#[derive(Clone, Copy, Debug)]
pub struct Txn {
    pub kind: TxnKind,
    /// The command it serves (a flush: the buffer line).
    pub cmd: u32,
    /// Read source or program destination.
    pub pun: u32,
    pub plane: u32,
    /// Bytes of this unit that go to or come from the host.
    pub host_bytes: u32,
    /// Epoch of the destination block when the transaction was made.
    pub epoch: u32,
    /// Host reads and writes: the logical unit (for the cache buffer).
    pub aux: u32,
}

/// The queue a transaction waits in at its die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    HostRead = 0,
    HostWrite = 1,
}

/// What a die step ended.
pub enum Step {
    /// Host or read-modify-write reads were sensed: for each, [`Fil::read_out`] moves its data
    /// out, then [`Fil::finish_read`].
    Sensed(Vec<u32>),
    /// Host writes or flushes were programmed: the caller finishes each transaction, then
    /// calls [`Fil::finish_op`].
    Programmed(Vec<u32>),
    /// GC work, handled inside the FIL.
    Done,
}

/// Operation counts.
#[derive(Clone, Debug, Default)]
pub struct FilCounters {
    /// Distinct pages per operation on the dies (GC and read-modify-write included).
    pub nand_pages_read: u64,
    pub nand_pages_written: u64,
    /// Operations with more than one member.
    pub multiplane_ops: u64,
}

pub struct Fil {
    geo: Geometry,
    nand: NandTimingPs,
    dies: Vec<Die>,
    channels: Vec<Timeline>,
    txns: Slab<Txn>,
    multiplane: bool,
    /// Queue entries searched for multi-plane partners.
    window: usize,
    pub counters: FilCounters,
}

impl Fil {
    pub fn new(cfg: &SsdConfig, geo: &Geometry) -> Fil {
        Fil {
            geo: geo.clone(),
            nand: NandTimingPs::from_config(cfg),
            dies: (0..geo.dies()).map(|_| Die::default()).collect(),
            channels: vec![Timeline::default(); geo.channels as usize],
            txns: Slab::default(),
            multiplane: cfg.nand.multiplane,
            window: cfg.controller.multiplane_window as usize,
            counters: FilCounters::default(),
        }
    }

    #[inline]
    pub fn add_txn(&mut self, t: Txn) -> u32 {
        self.txns.insert(t)
    }

    #[inline]
    pub fn remove_txn(&mut self, t: u32) -> Txn {
        self.txns.remove(t)
    }

    /// Busy time of each die and each channel.
    pub fn die_busy(&self) -> impl Iterator<Item = SimTime> + '_ {
        self.dies.iter().map(|d| d.busy)
    }

    pub fn channel_busy(&self) -> impl Iterator<Item = SimTime> + '_ {
        self.channels.iter().map(|c| c.busy)
    }

    /// Queue a transaction at its die and start the die if it is idle.
    #[inline]
    pub(crate) fn enqueue(
        &mut self,
        now: SimTime,
        txn: u32,
        queue: Queue,
        ftl: &Ftl,
        q: &mut EventQueue<Event>,
    ) {
        let die = self.geo.die_of_plane(self.txns.get(txn).plane);
        self.dies[die as usize].queues[queue as usize].push_back(txn);
        self.start_die(now, die, ftl, q);
    }

    /// Hand the GC work the FTL emitted to the dies of its planes.
    pub(crate) fn drain_gc(
        &mut self,
        now: SimTime,
        ftl: &mut Ftl,
        check: Option<&mut DataCheck>,
        q: &mut EventQueue<Event>,
    ) {
        if ftl.tasks.is_empty() {
            return;
        }
        // In the order emitted; the vector goes back so its capacity is reused.
        let mut tasks = std::mem::take(&mut ftl.tasks);
        if let Some(dc) = check {
            for &(from, to, _) in tasks.iter().flat_map(|t| t.moves.iter()) {
                dc.moved(from, to);
            }
        }
        for task in tasks.drain(..) {
            let die = self.geo.die_of_plane(task.plane);
            self.dies[die as usize]
                .gc
                .push_back(GcJob { task, next: 0 });
            self.start_die(now, die, ftl, q);
        }
        ftl.tasks = tasks;
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

    /// Start the die's next operation if it is idle and has work.
    #[inline]
    pub(crate) fn start_die(
        &mut self,
        now: SimTime,
        die: u32,
        ftl: &Ftl,
        q: &mut EventQueue<Event>,
    ) {
        let d = &self.dies[die as usize];
        if d.phase != Phase::Idle {
            return;
        }
        let ppd = self.geo.planes_per_die;
        let Some(queue) = d.pick(|| (die * ppd..(die + 1) * ppd).any(|p| ftl.plane_urgent(p)))
        else {
            return;
        };
        if queue == 2 {
            match self.next_gc_op(die) {
                Some(g) => self.start_gc_op(now, die, g, q),
                None => self.start_die(now, die, ftl, q),
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
        q.push(at, Event::DieStep { die });
    }

    fn start_gc_op(&mut self, now: SimTime, die: u32, g: GcOp, q: &mut EventQueue<Event>) {
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
        q.push(at, Event::DieStep { die });
    }

    /// Move queued transactions of the same kind that can join the head's operation: one page
    /// per plane (units of the same page share it).
    fn gather_partners(&mut self, die: u32, queue: usize, op: &mut Vec<u32>) {
        if !self.multiplane && self.geo.units_per_page == 1 {
            return;
        }
        let kind = self.txns.get(op[0]).kind;
        let window = self.window;
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
                    same_page || (mt.plane != c.plane && self.multiplane)
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

    /// The current phase of `die`'s operation ended at `now`. GC phases are handled here;
    /// host reads and programs are returned to the caller.
    #[inline]
    pub(crate) fn die_step(
        &mut self,
        now: SimTime,
        die: u32,
        ftl: &mut Ftl,
        check: Option<&mut DataCheck>,
        q: &mut EventQueue<Event>,
    ) -> Result<Step> {
        let ch = self.geo.channel_of_die(die) as usize;
        let phase = self.dies[die as usize].phase;
        let op = std::mem::take(&mut self.dies[die as usize].op);
        match phase {
            Phase::Sensed => {
                self.counters.nand_pages_read += distinct_pages(&op, &self.txns, &self.geo);
                return Ok(Step::Sensed(op));
            }
            Phase::Programmed => {
                self.counters.nand_pages_written += distinct_pages(&op, &self.txns, &self.geo);
                return Ok(Step::Programmed(op));
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
                q.push(in_end + t_prog, Event::DieStep { die });
            }
            Phase::CopyProgrammed => {
                let g = self.dies[die as usize].gc_op;
                self.counters.nand_pages_written += 1;
                // Only if the block was not erased (and reused) since the copy was cut.
                if ftl.blocks()[self.geo.block_of_unit(g.pun) as usize].epoch == g.epoch {
                    for pun in g.pun..g.pun + g.units as u32 {
                        ftl.mark_programmed(pun);
                    }
                }
                self.finish_op(now, die, op, ftl, q);
            }
            Phase::Erased => {
                let g = self.dies[die as usize].gc_op;
                ftl.erase_done(g.plane, g.pun, g.epoch)?;
                self.drain_gc(now, ftl, check, q);
                self.finish_op(now, die, op, ftl, q);
            }
            Phase::Idle => unreachable!("a die step for an idle die"),
        }
        Ok(Step::Done)
    }

    /// A sensed unit's data goes out on the channel from `now` (after the transfers reserved
    /// before it) and through ECC: (end of the transfer, when the data is decoded).
    #[inline]
    pub(crate) fn read_out(&mut self, now: SimTime, die: u32) -> (SimTime, SimTime) {
        let ch = self.geo.channel_of_die(die) as usize;
        let xfer = self.nand.bus_time(self.geo.unit_bytes);
        let (_, end) = self.channels[ch].reserve(now, xfer);
        (end, end + self.nand.ecc_decode)
    }

    /// Every unit of a sensed read is out (the last transfer ended at `last_out`): the die is
    /// free for its next command, which the channel timeline places after these transfers.
    #[inline]
    pub(crate) fn finish_read(
        &mut self,
        now: SimTime,
        die: u32,
        last_out: SimTime,
        op: Vec<u32>,
        ftl: &Ftl,
        q: &mut EventQueue<Event>,
    ) {
        self.dies[die as usize].busy += last_out - now;
        self.finish_op(now, die, op, ftl, q);
    }

    /// The die's operation is over: hand back its vector and start the next.
    #[inline]
    pub(crate) fn finish_op(
        &mut self,
        now: SimTime,
        die: u32,
        op: Vec<u32>,
        ftl: &Ftl,
        q: &mut EventQueue<Event>,
    ) {
        let d = &mut self.dies[die as usize];
        d.op = op;
        d.op.clear();
        d.phase = Phase::Idle;
        self.start_die(now, die, ftl, q);
    }
}

fn distinct_planes(op: &[u32], txns: &Slab<Txn>) -> u64 {
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

fn distinct_pages(op: &[u32], txns: &Slab<Txn>, geo: &Geometry) -> u64 {
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
