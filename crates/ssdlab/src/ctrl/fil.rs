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
use crate::media::nand_errors::{ErrorModel, ReadOutcome};
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
    /// A raw device's block erase (`ctrl::raw`), asked for by the driver: `pun` is the block's
    /// first unit.
    Erase,
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
    /// A driver's block erase finished (a raw device): the caller finishes the transaction,
    /// then calls [`Fil::finish_op`].
    Erased(Vec<u32>),
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
    /// With `[reliability]`: map-unit reads that needed read-retry steps, the steps taken, and
    /// the reads that stayed uncorrectable after the last step.
    pub reads_retried: u64,
    pub read_retry_steps: u64,
    pub uncorrectable_reads: u64,
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
    /// Read errors and read retry, with `[reliability]`.
    errors: Option<ErrorModel>,
    /// Read transactions that could not be decoded, until the HIL has heard of them.
    failed: Vec<u32>,
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
            errors: None,
            failed: Vec::new(),
            counters: FilCounters::default(),
        }
    }

    /// Reads decode through `model`: some need read-retry steps, some fail.
    pub fn set_error_model(&mut self, model: ErrorModel) {
        self.errors = Some(model);
    }

    /// Whether read transaction `txn` could not be decoded (asked once, as it finishes).
    #[inline]
    pub fn take_failure(&mut self, txn: u32) -> bool {
        if self.failed.is_empty() {
            return false;
        }
        match self.failed.iter().position(|&t| t == txn) {
            Some(i) => {
                self.failed.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// The reads of `die`'s operation were sensed: decode each through the error model. When
    /// any needs read-retry steps, the die senses again for the most any of them needs (each
    /// step: the page's tR, the unit's transfer and an ECC decode) and the step ends later;
    /// returns whether it did.
    fn retry_reads(&mut self, now: SimTime, die: u32, op: &[u32], ftl: &Ftl) -> Option<SimTime> {
        let m = self.errors.as_mut()?;
        let mut steps = 0u32;
        let mut t_r = SimTime::ZERO;
        for &t in op {
            let pun = self.txns.get(t).pun;
            let erase_count = ftl.blocks()[self.geo.block_of_unit(pun) as usize].erase_count;
            let n = match m.read(erase_count) {
                ReadOutcome::Decoded { retries } => retries,
                ReadOutcome::Uncorrectable => {
                    self.failed.push(t);
                    self.counters.uncorrectable_reads += 1;
                    m.retry_max()
                }
            };
            if n > 0 {
                self.counters.reads_retried += 1;
                self.counters.read_retry_steps += n as u64;
                t_r = t_r.max(self.nand.read[self.nand.page_type(self.geo.page_in_block(pun))]);
            }
            steps = steps.max(n);
        }
        if steps == 0 {
            return None;
        }
        let step = t_r + self.nand.bus_time(self.geo.unit_bytes) + self.nand.ecc_decode;
        let end = now + step * steps as u64;
        self.dies[die as usize].busy += end - now;
        Some(end)
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

    /// Queue transactions at their dies, then start the dies that are idle: units of one page
    /// queued together become one operation (a raw device's page is read or programmed once).
    #[inline]
    pub(crate) fn enqueue_all(
        &mut self,
        now: SimTime,
        txns: &[u32],
        queue: Queue,
        ftl: &Ftl,
        q: &mut EventQueue<Event>,
    ) {
        for &t in txns {
            let die = self.geo.die_of_plane(self.txns.get(t).plane);
            self.dies[die as usize].queues[queue as usize].push_back(t);
        }
        for &t in txns {
            let die = self.geo.die_of_plane(self.txns.get(t).plane);
            self.start_die(now, die, ftl, q);
        }
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
            TxnKind::Erase => {
                let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time);
                let end = cmd_end + timing.erase;
                (Phase::BlockErased, end, end - start)
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
        let kind = self.txns.get(op[0]).kind;
        // An erase runs alone (multi-plane erase is not modelled).
        if (!self.multiplane && self.geo.units_per_page == 1) || kind == TxnKind::Erase {
            return;
        }
        let window = self.window;
        let max_members = (self.geo.planes_per_die * self.geo.units_per_page) as usize;
        let mut i = 0;
        while i < window.min(self.dies[die as usize].queues[queue].len()) && op.len() < max_members
        {
            let cand = self.dies[die as usize].queues[queue][i];
            let c = self.txns.get(cand);
            // Nothing overtakes a driver's erase: programs after it go to the erased block.
            if c.kind == TxnKind::Erase {
                break;
            }
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
                if self.errors.is_some() {
                    if let Some(end) = self.retry_reads(now, die, &op, ftl) {
                        // Sensed again at `end`, with every outcome already decided.
                        let d = &mut self.dies[die as usize];
                        d.op = op;
                        d.phase = Phase::Retried;
                        q.push(end, Event::DieStep { die });
                        return Ok(Step::Done);
                    }
                }
                self.counters.nand_pages_read += distinct_pages(&op, &self.txns, &self.geo);
                return Ok(Step::Sensed(op));
            }
            Phase::Retried => {
                self.counters.nand_pages_read += distinct_pages(&op, &self.txns, &self.geo);
                return Ok(Step::Sensed(op));
            }
            Phase::Programmed => {
                self.counters.nand_pages_written += distinct_pages(&op, &self.txns, &self.geo);
                return Ok(Step::Programmed(op));
            }
            Phase::BlockErased => return Ok(Step::Erased(op)),
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

#[cfg(test)]
mod tests {
    //! The FIL alone, on small-tlc: 4 channels × 2 dies × 2 planes, 128 blocks of 32 pages of
    //! 16 KiB per plane (4 map units of 4 KiB per page); tR 50 µs on LSB pages (page 0), tPROG
    //! 500 µs on LSB; 100 ns of command/address cycles per plane; 800 MT/s × 8 bits, so a 4 KiB
    //! unit takes 5.12 µs on the channel; ECC 3 µs.

    use super::*;
    use crate::config::SsdConfig;

    struct Rig {
        fil: Fil,
        ftl: Ftl,
        q: EventQueue<Event>,
        geo: Geometry,
    }

    fn rig() -> Rig {
        let cfg = SsdConfig::resolve("small-tlc", &[]).unwrap();
        let geo = Geometry::from_config(&cfg);
        Rig {
            fil: Fil::new(&cfg, &geo),
            ftl: Ftl::new(&cfg, 1),
            q: EventQueue::new(),
            geo,
        }
    }

    impl Rig {
        /// Unit 0 of page `page` of block `block` of global plane `plane`.
        fn pun(&self, plane: u32, block: u32, page: u32) -> u32 {
            let b = plane * self.geo.blocks_per_plane + block;
            b * self.geo.units_per_block() + page * self.geo.units_per_page
        }

        fn txn(&mut self, kind: TxnKind, plane: u32, block: u32, page: u32) -> u32 {
            let pun = self.pun(plane, block, page);
            self.fil.add_txn(Txn {
                kind,
                cmd: 0,
                pun,
                plane,
                host_bytes: 4096,
                epoch: 0,
                aux: 0,
            })
        }

        fn enqueue(&mut self, now: SimTime, t: u32, queue: Queue) {
            self.fil.enqueue(now, t, queue, &self.ftl, &mut self.q);
        }

        /// The next die step: its time, die and what it ended; the operation is finished (the
        /// die takes its next one) before returning.
        fn step(&mut self) -> (SimTime, u32, Vec<u32>, bool) {
            let (now, ev) = self.q.pop().expect("a die step is pending");
            let Event::DieStep { die } = ev else {
                panic!("expected a die step, got {ev:?}")
            };
            match self
                .fil
                .die_step(now, die, &mut self.ftl, None, &mut self.q)
                .unwrap()
            {
                Step::Sensed(op) => {
                    let members = op.clone();
                    let mut last = now;
                    for _ in &op {
                        last = self.fil.read_out(now, die).0;
                    }
                    self.fil
                        .finish_read(now, die, last, op, &self.ftl, &mut self.q);
                    (now, die, members, false)
                }
                Step::Programmed(op) | Step::Erased(op) => {
                    let members = op.clone();
                    self.fil.finish_op(now, die, op, &self.ftl, &mut self.q);
                    (now, die, members, true)
                }
                Step::Done => (now, die, Vec::new(), false),
            }
        }
    }

    const CMD: u64 = 100; // ns of command/address cycles per plane
    const TR_LSB: u64 = 50_000;
    const TPROG_LSB: u64 = 500_000;

    #[test]
    fn a_read_takes_its_command_cycles_and_tr_then_its_transfer_and_ecc() {
        let mut r = rig();
        let t = r.txn(TxnKind::HostRead, 0, 3, 0);
        r.enqueue(SimTime::ZERO, t, Queue::HostRead);
        let (now, die, op, programmed) = r.step();
        assert_eq!((die, op, programmed), (0, vec![t], false));
        assert_eq!(now, SimTime::from_ns(CMD + TR_LSB));
        // The unit's transfer (5.12 µs) and decode (3 µs) follow; the channel was free.
        let mut r2 = rig();
        let t2 = r2.txn(TxnKind::HostRead, 0, 3, 0);
        r2.enqueue(SimTime::ZERO, t2, Queue::HostRead);
        let (now, ev) = r2.q.pop().unwrap();
        assert!(matches!(ev, Event::DieStep { die: 0 }));
        r2.fil
            .die_step(now, 0, &mut r2.ftl, None, &mut r2.q)
            .unwrap();
        let (out, ready) = r2.fil.read_out(now, 0);
        assert_eq!(out, now + SimTime::from_ns(5120));
        assert_eq!(ready, out + SimTime::from_us(3));
        assert_eq!(r2.fil.counters.nand_pages_read, 1);
    }

    #[test]
    fn reads_on_two_planes_of_a_die_become_one_operation_with_one_tr() {
        let mut r = rig();
        // Keep die 0 busy so that the next two wait together.
        let first = r.txn(TxnKind::HostRead, 0, 1, 0);
        r.enqueue(SimTime::ZERO, first, Queue::HostRead);
        let a = r.txn(TxnKind::HostRead, 0, 5, 0);
        let b = r.txn(TxnKind::HostRead, 1, 9, 0);
        r.enqueue(SimTime::ZERO, a, Queue::HostRead);
        r.enqueue(SimTime::ZERO, b, Queue::HostRead);
        let (t1, _, op1, _) = r.step();
        assert_eq!(op1, vec![first]);
        let (t2, _, op2, _) = r.step();
        assert_eq!(op2, vec![a, b], "one multi-plane read");
        // The first read's transfer holds the channel until t1 + 5.12 µs; then one command per
        // plane and a single tR.
        let start = t1 + SimTime::from_ns(5120);
        assert_eq!(t2, start + SimTime::from_ns(2 * CMD + TR_LSB));
        assert_eq!(r.fil.counters.multiplane_ops, 1);
        assert_eq!(r.fil.counters.nand_pages_read, 3);
    }

    #[test]
    fn two_pages_of_one_plane_do_not_pair() {
        let mut r = rig();
        let first = r.txn(TxnKind::HostRead, 0, 1, 0);
        r.enqueue(SimTime::ZERO, first, Queue::HostRead);
        let a = r.txn(TxnKind::HostRead, 0, 5, 0);
        let b = r.txn(TxnKind::HostRead, 0, 6, 0);
        r.enqueue(SimTime::ZERO, a, Queue::HostRead);
        r.enqueue(SimTime::ZERO, b, Queue::HostRead);
        r.step();
        assert_eq!(r.step().2, vec![a]);
        assert_eq!(r.step().2, vec![b]);
        assert_eq!(r.fil.counters.multiplane_ops, 0);
    }

    #[test]
    fn partners_are_searched_only_within_the_window() {
        let cfg =
            SsdConfig::resolve("small-tlc", &["controller.multiplane_window=1".into()]).unwrap();
        let geo = Geometry::from_config(&cfg);
        let mut r = Rig {
            fil: Fil::new(&cfg, &geo),
            ftl: Ftl::new(&cfg, 1),
            q: EventQueue::new(),
            geo,
        };
        let first = r.txn(TxnKind::HostRead, 0, 1, 0);
        r.enqueue(SimTime::ZERO, first, Queue::HostRead);
        let a = r.txn(TxnKind::HostRead, 0, 5, 0);
        let same_plane = r.txn(TxnKind::HostRead, 0, 6, 0);
        let other_plane = r.txn(TxnKind::HostRead, 1, 9, 0);
        for t in [a, same_plane, other_plane] {
            r.enqueue(SimTime::ZERO, t, Queue::HostRead);
        }
        r.step();
        // With a window of one entry the partner on plane 1, third in the queue, is not seen.
        assert_eq!(r.step().2, vec![a]);
    }

    #[test]
    fn host_reads_go_before_host_writes() {
        let mut r = rig();
        let w1 = r.txn(TxnKind::HostWrite, 0, 2, 0);
        r.enqueue(SimTime::ZERO, w1, Queue::HostWrite);
        let w2 = r.txn(TxnKind::HostWrite, 0, 3, 0);
        let rd = r.txn(TxnKind::HostRead, 1, 4, 0);
        r.enqueue(SimTime::ZERO, w2, Queue::HostWrite);
        r.enqueue(SimTime::ZERO, rd, Queue::HostRead);
        let (t1, _, op1, programmed) = r.step();
        assert!(programmed);
        assert_eq!(op1, vec![w1]);
        // Command cycles and 4 KiB of data on the channel, then tPROG.
        assert_eq!(t1, SimTime::from_ns(CMD + 5120 + TPROG_LSB));
        let (_, _, op2, programmed) = r.step();
        assert!(
            !programmed,
            "the read, queued after the second write, goes first"
        );
        assert_eq!(op2, vec![rd]);
        assert_eq!(r.step().2, vec![w2]);
    }

    #[test]
    fn dies_of_one_channel_share_its_bus() {
        let mut r = rig();
        // Die 0 (planes 0-1) and die 1 (planes 2-3) are both on channel 0.
        let a = r.txn(TxnKind::HostRead, 0, 1, 0);
        let b = r.txn(TxnKind::HostRead, 2, 1, 0);
        r.enqueue(SimTime::ZERO, a, Queue::HostRead);
        r.enqueue(SimTime::ZERO, b, Queue::HostRead);
        let (t1, d1, _, _) = r.step();
        let (t2, d2, _, _) = r.step();
        assert_eq!((d1, d2), (0, 1));
        assert_eq!(t1, SimTime::from_ns(CMD + TR_LSB));
        // Die 1's command waited for die 0's on the shared bus.
        assert_eq!(t2, SimTime::from_ns(2 * CMD + TR_LSB));
        // A die on another channel does not wait.
        let c = r.txn(TxnKind::HostRead, 4, 1, 0);
        let now = r.q.now();
        r.enqueue(now, c, Queue::HostRead);
        let (t3, d3, _, _) = r.step();
        assert_eq!(d3, 2);
        assert_eq!(t3, now + SimTime::from_ns(CMD + TR_LSB));
    }
}
