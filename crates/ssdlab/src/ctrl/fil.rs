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
use super::die::{Die, GcJob, GcOp, Phase, Suspended};
use crate::config::{DieScheduler, MultiplaneRule, SsdConfig};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::{Ftl, Translation, Urgency, NONE};
use crate::media::nand::{Geometry, NandTimingPs};
use crate::media::nand_errors::{ErrorModel, ReadOutcome};
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime, Slab};

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
    /// A block-mapped FTL's merge copy (`ftl::hybrid`): unit `aux` is read into the controller
    /// and programmed at `pun`, timed as a GC copy; it keeps its place in the host-write queue.
    Copy,
    /// Cached mapping (`ftl::mapping_cache`): a translation page read for commands' misses,
    /// read for a background update, or programmed; `aux` is the translation page. A
    /// `MapWrite` whose `cmd` is not `ftl::NONE` programs a map page of the power-loss model's
    /// checkpoint (`ctrl::power_loss`; `cmd` tags the checkpoint, `aux` is the map page).
    MapRead,
    MapUpdateRead,
    MapWrite,
    /// The firmware's read-ahead (`controller.read_ahead`): the page of `pun` is sensed into its
    /// register and not transferred; no command waits for it (`cmd` is `NONE`).
    ReadAhead,
}

impl TxnKind {
    /// Reads and programs gather separately into multi-plane operations.
    #[inline]
    pub fn is_program(self) -> bool {
        matches!(
            self,
            TxnKind::HostWrite | TxnKind::Flush | TxnKind::MapWrite
        )
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
    /// Epoch of the destination block when the transaction was made. A block-mapped FTL's
    /// transactions and a zoned drive's reads carry the block's erase count here.
    pub epoch: u32,
    /// Host reads and writes: the logical unit (for the cache buffer).
    pub aux: u32,
    /// A page-FTL host write or cache flush: the block whose data it replaces, told when the
    /// program is done (`ftl::Block::overwrites_in_flight`); `ftl::NONE` otherwise.
    pub overwrote: u32,
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
    /// Reads and programs (host, read-modify-write, flush) on several planes.
    pub multi_plane_ops: u64,
    /// Reads, programs and a raw device's erases started from the transaction queues; less the
    /// erases and the multi-plane operations, the single-plane reads and programs.
    pub array_ops: u64,
    pub block_erases: u64,
    /// Candidate partners on another plane that the relaxed rule would have taken and the
    /// `nand.multiplane_rule` refused (counted each time one is passed over).
    pub partners_refused: u64,
    /// Programs (host and GC) and erases suspended for reads.
    pub program_suspensions: u64,
    pub erase_suspensions: u64,
    /// With `[reliability]`: map-unit reads that needed read-retry steps, the steps taken, and
    /// the reads that stayed uncorrectable after the last step.
    pub reads_retried: u64,
    pub read_retry_steps: u64,
    pub uncorrectable_reads: u64,
    /// GC page copies done by copyback (`ftl.gc.copyback`).
    pub copyback_pages: u64,
    /// Pages sensed for the firmware's read-ahead (in `nand_pages_read` too).
    pub read_ahead_pages: u64,
    /// Pages a read found still in its plane's page register (sensed by the plane's last
    /// read, with no program, erase or other read on the plane since): transferred without a
    /// new tR, and not in `nand_pages_read`.
    pub page_register_hits: u64,
    /// Time the dies' arrays spent sensing, programming and erasing, summed over the dies: a
    /// die draws its operating current for that long (`[power]`).
    pub array_read_time: SimTime,
    pub array_program_time: SimTime,
    pub array_erase_time: SimTime,
}

impl FilCounters {
    /// Reads and programs (host, read-modify-write, flush) on one plane.
    pub fn single_plane_ops(&self) -> u64 {
        self.array_ops - self.block_erases - self.multi_plane_ops
    }
}

pub struct Fil {
    geo: Geometry,
    nand: NandTimingPs,
    dies: Vec<Die>,
    channels: Vec<Timeline>,
    txns: Slab<Txn>,
    multiplane: bool,
    rule: MultiplaneRule,
    /// Queue entries searched for multi-plane partners.
    window: usize,
    /// `ftl.gc.copyback`: GC copies a page inside the die where the page allows it.
    copyback: bool,
    /// `nand.multiplane` and `ftl.gc.multiplane_copies`: GC copies of the die's planes pair up.
    gc_multiplane: bool,
    /// Read errors and read retry, with `[reliability]`.
    errors: Option<ErrorModel>,
    /// Read transactions that could not be decoded, until the HIL has heard of them.
    failed: Vec<u32>,
    /// Per plane, the page its page register holds as sensed (a global page id), or `NONE`
    /// once a program, an erase or a resumed operation has loaded it with other data: a read of
    /// that page transfers it without a new tR.
    registers: Vec<u32>,
    /// `controller.scheduler` and, for `deadline`, `controller.write_deadline`.
    scheduler: DieScheduler,
    write_deadline: SimTime,
    /// When each queued transaction reached its die (by transaction id), kept only for a
    /// scheduler other than read-priority, which never looks at it.
    queued_at: Vec<SimTime>,
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
            rule: cfg.nand.multiplane_rule(),
            window: cfg.controller.multiplane_window as usize,
            copyback: cfg.ftl.gc.copyback,
            gc_multiplane: cfg.nand.multiplane && cfg.ftl.gc.multiplane_copies,
            errors: None,
            failed: Vec::new(),
            registers: vec![NONE; geo.planes() as usize],
            scheduler: cfg.controller.scheduling().0,
            write_deadline: cfg.controller.scheduling().1,
            queued_at: Vec::new(),
            counters: FilCounters::default(),
        }
    }

    /// Reads decode through `model`: some need read-retry steps, some fail. A block's wear is
    /// what the blocks' owner says ([`FlashOwner::erase_count`]).
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
                t_r = t_r.max(self.nand.read[self.nand.page_type(self.geo.page_in_block(pun))]);
            }
            steps = steps.max(n);
        }
        if steps == 0 {
            return None;
        }
        let step = t_r + self.nand.bus_time(self.geo.unit_bytes) + self.nand.ecc_decode;
        let end = now + step * steps as u64;
        self.counters.array_read_time += t_r * steps as u64;
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

    /// Each die's busy time that has run by `now`, for the periodic statistics: `busy` takes a
    /// phase's whole time when the phase starts, so the part still ahead of `now` (to the
    /// phase's step) comes off.
    pub fn die_busy_by(&self, now: SimTime) -> impl Iterator<Item = SimTime> + '_ {
        self.dies.iter().map(move |d| {
            let ahead = if d.phase == Phase::Idle {
                SimTime::ZERO
            } else {
                d.step_at - now
            };
            d.busy - ahead
        })
    }

    /// Each channel's busy time that has run by `now`: its reservations run back to back up
    /// to `free_at`, so what lies ahead of `now` comes off.
    pub fn channel_busy_by(&self, now: SimTime) -> impl Iterator<Item = SimTime> + '_ {
        self.channels
            .iter()
            .map(move |c| c.busy - (c.free_at - now))
    }

    /// Queue a transaction at its die and start the die if it is idle.
    #[inline]
    pub(crate) fn enqueue<O: FlashOwner>(
        &mut self,
        now: SimTime,
        txn: u32,
        queue: Queue,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) {
        let die = self.geo.die_of_plane(self.txns.get(txn).plane);
        self.dies[die as usize].queues[queue as usize].push_back(txn);
        if self.scheduler != DieScheduler::ReadPriority {
            self.stamp(now, txn);
        }
        self.start_die(now, die, owner, q);
    }

    /// Queue transactions at their dies, then start the dies that are idle: units of one page
    /// queued together become one operation (a raw device's page is read or programmed once).
    #[inline]
    pub(crate) fn enqueue_all<O: FlashOwner>(
        &mut self,
        now: SimTime,
        txns: &[u32],
        queue: Queue,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) {
        for &t in txns {
            let die = self.geo.die_of_plane(self.txns.get(t).plane);
            self.dies[die as usize].queues[queue as usize].push_back(t);
            if self.scheduler != DieScheduler::ReadPriority {
                self.stamp(now, t);
            }
        }
        for &t in txns {
            let die = self.geo.die_of_plane(self.txns.get(t).plane);
            self.start_die(now, die, owner, q);
        }
    }

    /// Note when transaction `t` reached its die.
    #[cold]
    #[inline(never)]
    fn stamp(&mut self, now: SimTime, t: u32) {
        let i = t as usize;
        if i >= self.queued_at.len() {
            // Transaction ids are slab slots, reused: the table grows to the most in flight.
            self.queued_at
                .resize((i + 1).next_power_of_two(), SimTime::ZERO);
        }
        self.queued_at[i] = now;
    }

    /// Whether `die`'s oldest queued host write goes before its queued reads, by the scheduler
    /// (never under read-priority; only asked when both queues hold work).
    #[cold]
    #[inline(never)]
    fn write_due(&self, now: SimTime, die: u32) -> bool {
        let d = &self.dies[die as usize];
        let (Some(&r), Some(&w)) = (d.queues[0].front(), d.queues[1].front()) else {
            return false;
        };
        let (read_at, write_at) = (self.queued_at[r as usize], self.queued_at[w as usize]);
        match self.scheduler {
            DieScheduler::ReadPriority => false,
            // A tie goes to the read, as under read priority.
            DieScheduler::Fifo => write_at < read_at,
            DieScheduler::Deadline => now >= write_at + self.write_deadline,
        }
    }

    /// Hand the GC work the FTL emitted to the dies of its planes.
    pub(crate) fn drain_gc<M: Translation>(
        &mut self,
        now: SimTime,
        ftl: &mut Ftl<M>,
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
                dc.moved(from, to, ftl.p2l_at(to), ftl);
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
        let job = self.dies[die as usize].gc.front_mut()?;
        if let Some((g, next)) = gc_copy_of(&self.geo, self.copyback, job) {
            job.next = next;
            // The move list was written when the victim was chosen, long ago: fetch ahead.
            crate::sim::mem::prefetch(&job.task.moves, next + 16);
            return Some(g);
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
            copyback: false,
        })
    }

    /// Copies of the die's other planes' GC jobs that join `lead` as one multi-plane
    /// operation, as a controller's firmware pairs GC copies across planes: one per plane, each
    /// the next copy of the first job of its plane (so every plane's copies keep their order),
    /// copied the way `lead` is (by copyback or not), and, under an address rule, at addresses
    /// it lets pair. Taken from their jobs into `die.gc_partners`.
    fn gather_gc_partners(&mut self, die: u32, lead: &GcOp) {
        // The die's fields are borrowed apart (its jobs, its partners) so that partners go
        // straight into place: no vector taken out and put back, no job indexed twice.
        let d = &mut self.dies[die as usize];
        d.gc_partners.clear();
        if !self.gc_multiplane || lead.erase {
            return;
        }
        let geo = &self.geo;
        let ppd = geo.planes_per_die;
        let max = ppd as usize;
        // Planes whose first job has been met (by index in the die, folded into 64 bits: on a
        // die of more planes two may share a bit, which only passes a partner up). The die's
        // planes are numbered from `first`, which spares a division per job.
        let first = die * ppd;
        let bit = |plane: u32| 1u64 << ((plane - first) % 64);
        let mut seen = bit(lead.plane);
        let every = if ppd >= 64 { u64::MAX } else { (1 << ppd) - 1 };
        for job in d.gc.iter_mut().skip(1) {
            if d.gc_partners.len() + 1 >= max || seen == every {
                break;
            }
            let plane = job.task.plane;
            if seen & bit(plane) != 0 {
                continue;
            }
            seen |= bit(plane);
            let Some((g, next)) = gc_copy_of(geo, self.copyback, job) else {
                continue;
            };
            let rule_ok = self.rule == MultiplaneRule::Relaxed
                || (geo.multiplane_addresses_ok(self.rule, lead.src, g.src)
                    && geo.multiplane_addresses_ok(self.rule, lead.pun, g.pun));
            if g.copyback == lead.copyback && rule_ok {
                job.next = next;
                d.gc_partners.push(g);
            }
        }
    }

    /// Which of an idle die's queues goes next (0 host reads, 1 writes, 2 GC), and whether the
    /// die serves reads while suspended; None when nothing starts (the die is busy, has no
    /// work, or resumes its suspended operation).
    #[inline(always)]
    fn pick_queue<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) -> Option<(usize, bool)> {
        let d = &self.dies[die as usize];
        if d.phase != Phase::Idle {
            if self.nand.suspend.is_some() && !d.queues[0].is_empty() {
                self.try_suspend(now, die, q);
            }
            return None;
        }
        let suspended = d.suspended.is_some();
        let queue = if suspended {
            // A suspended die serves the reads it was suspended for, then resumes.
            let s = d.suspended.as_deref().expect("suspended");
            if s.reads_left == 0 || d.queues[0].is_empty() {
                self.resume(now, die, q);
                return None;
            }
            0
        } else {
            let ppd = self.geo.planes_per_die;
            let write_due = self.scheduler != DieScheduler::ReadPriority
                && !d.queues[0].is_empty()
                && self.write_due(now, die);
            let d = &self.dies[die as usize];
            let queue = d.pick(write_due, || {
                // The most urgent plane decides; a hard one ends the search.
                let mut most = Urgency::None;
                for p in die * ppd..(die + 1) * ppd {
                    match owner.plane_urgency(p) {
                        Urgency::Hard => return Urgency::Hard,
                        u => most = most.max(u),
                    }
                }
                most
            })?;
            let d = &mut self.dies[die as usize];
            if queue == 2 {
                d.gc_owed = d.gc_owed.saturating_sub(1);
            } else if queue == 1 {
                d.gc_owed = d.gc_pace(self.geo.units_per_block(), self.geo.units_per_page);
            }
            queue
        };
        Some((queue, suspended))
    }

    /// A read operation's command and sense on `die`: its phase, when its array time ends, the
    /// die's busy time and when the array starts. On a plane whose page register still holds
    /// the member's page, the command selects the data in the register (a column change in
    /// place of the read command: the same command/address cycles) and no sense is needed; the
    /// other planes sense, for the slowest page type among them.
    #[inline(always)]
    fn start_read(
        &mut self,
        now: SimTime,
        die: u32,
        ch: usize,
        op: &[u32],
        planes: u64,
    ) -> (Phase, SimTime, SimTime, SimTime) {
        let timing = &self.nand;
        let cmd_time = timing.cmd_addr;
        let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time * planes);
        let (t_r, hits, ahead) = if op.len() == 1 {
            // Most reads are one unit: no sets of planes to keep.
            let Txn {
                pun, plane, kind, ..
            } = *self.txns.get(op[0]);
            let page = self.geo.page_id(pun);
            let reg = &mut self.registers[plane as usize];
            let ahead = kind == TxnKind::ReadAhead;
            if *reg == page {
                let first = die * self.geo.planes_per_die;
                (SimTime::ZERO, plane_bit(plane - first), ahead)
            } else {
                *reg = page;
                let t_r = timing.read[timing.page_type(self.geo.page_in_block(pun))];
                (t_r, 0, ahead)
            }
        } else {
            self.sense_members(die, op)
        };
        self.counters.page_register_hits += hits.count_ones() as u64;
        let d = &mut self.dies[die as usize];
        d.hit_planes = hits;
        d.read_ahead = ahead;
        self.counters.array_read_time += t_r;
        (Phase::Sensed, cmd_end + t_r, cmd_end + t_r - start, cmd_end)
    }

    /// Start the die's next operation if it is idle and has work.
    #[inline]
    pub(crate) fn start_die<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) {
        let Some((queue, suspended)) = self.pick_queue(now, die, owner, q) else {
            return;
        };
        if queue == 2 {
            match self.next_gc_op(die) {
                Some(g) => {
                    self.gather_gc_partners(die, &g);
                    let d = &mut self.dies[die as usize];
                    d.gc_owed = d.gc_owed.saturating_sub(d.gc_partners.len() as u32);
                    self.start_gc_op(now, die, g, q)
                }
                None => self.start_die(now, die, owner, q),
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
        if kind == TxnKind::Copy {
            return self.start_copy(now, die, op, q);
        }
        if self.rule == MultiplaneRule::Relaxed {
            self.gather_partners::<false>(die, queue, &mut op);
        } else {
            self.gather_partners::<true>(die, queue, &mut op);
        }
        let ch = self.geo.channel_of_die(die) as usize;
        let timing = &self.nand;
        let cmd_time = timing.cmd_addr;
        let planes = distinct_planes(&op, &self.txns);
        let (phase, at, busy, array_start) = match kind {
            TxnKind::HostRead
            | TxnKind::RmwRead
            | TxnKind::MapRead
            | TxnKind::MapUpdateRead
            | TxnKind::ReadAhead => self.start_read(now, die, ch, &op, planes),
            TxnKind::HostWrite | TxnKind::Flush | TxnKind::MapWrite => {
                // The data goes through the planes' registers: what a read left there is gone.
                for &t in &op {
                    self.registers[self.txns.get(t).plane as usize] = NONE;
                }
                // Command/address once per plane, then every unit's data, in one bus tenure.
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
                self.counters.array_program_time += t_prog;
                (Phase::Programmed, end + t_prog, end + t_prog - start, end)
            }
            TxnKind::Erase => {
                self.registers[self.txns.get(head).plane as usize] = NONE;
                self.counters.block_erases += 1;
                self.counters.array_erase_time += timing.erase;
                let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time);
                let end = cmd_end + timing.erase;
                (Phase::BlockErased, end, end - start, cmd_end)
            }
            TxnKind::Copy => unreachable!("merge copies start in start_copy"),
        };
        if op.len() > 1 {
            self.counters.multiplane_ops += 1;
        }
        // Branch-free: a driver's erase counts as a single-plane operation here and is taken
        // back out in `erases_started`.
        self.counters.multi_plane_ops += (planes > 1) as u64;
        self.counters.array_ops += 1;
        let d = &mut self.dies[die as usize];
        if suspended {
            let s = d.suspended.as_deref_mut().expect("suspended");
            s.reads_left = s.reads_left.saturating_sub(op.len() as u32);
        }
        d.op = op;
        d.phase = phase;
        d.busy += busy;
        d.step_at = at;
        d.array_start = array_start;
        q.push(at, Event::DieStep { die });
    }

    /// A read waits at `die`, which is busy: suspend its program or erase if the die allows it
    /// (`nand.suspend`, at most `max_suspends_per_op` times per operation) and the operation
    /// would still be running once suspended. The suspend command goes on the channel once the
    /// operation's array time has begun (a program's data is in); the array stops at the end of
    /// the command, keeping the time it has left, and the die serves reads after the suspend
    /// latency.
    #[cold]
    #[inline(never)]
    fn try_suspend(&mut self, now: SimTime, die: u32, q: &mut EventQueue<Event>) {
        let Some(sp) = self.nand.suspend else { return };
        let ch = self.geo.channel_of_die(die) as usize;
        let cmd = self.nand.cmd_addr;
        let d = &self.dies[die as usize];
        let Some(program) = d.phase.suspendable() else {
            return;
        };
        if d.op_suspends >= sp.max_per_op {
            return;
        }
        let latency = if program { sp.program } else { sp.erase };
        let issue = now.max(d.array_start);
        let stops = issue.max(self.channels[ch].free_at) + cmd;
        if stops + latency >= d.step_at {
            // It ends before the die could take the read.
            return;
        }
        let (_, stops) = self.channels[ch].reserve(issue, cmd);
        let d = &mut self.dies[die as usize];
        let remaining = d.step_at - stops;
        if d.next_stale == SimTime::MAX {
            d.next_stale = d.step_at;
        } else {
            d.stale.push_back(d.step_at);
        }
        // The array time not yet run moves to the resume; the suspend latency is busy time.
        d.busy = d.busy - remaining + latency;
        let op = std::mem::take(&mut d.op);
        d.suspended = Some(Box::new(Suspended {
            phase: d.phase,
            remaining,
            op,
            suspends: d.op_suspends + 1,
            reads_left: d.queues[0].len() as u32,
        }));
        d.phase = Phase::Suspending;
        d.step_at = stops + latency;
        q.push(d.step_at, Event::DieStep { die });
        if program {
            self.counters.program_suspensions += 1;
        } else {
            self.counters.erase_suspensions += 1;
        }
    }

    /// The reads a suspension was for are done: the resume command goes on the channel (after
    /// the reads' data transfers) and the operation runs its remaining array time after the
    /// resume latency.
    #[cold]
    #[inline(never)]
    fn resume(&mut self, now: SimTime, die: u32, q: &mut EventQueue<Event>) {
        let sp = self
            .nand
            .suspend
            .expect("a suspended die has suspension on");
        let ch = self.geo.channel_of_die(die) as usize;
        let (start, cmd_end) = self.channels[ch].reserve(now, self.nand.cmd_addr);
        // The reads served meanwhile used the page registers; the resumed operation's data
        // is in them again.
        let ppd = self.geo.planes_per_die as usize;
        self.registers[die as usize * ppd..(die as usize + 1) * ppd].fill(NONE);
        let d = &mut self.dies[die as usize];
        let s = *d.suspended.take().expect("suspended");
        let running = cmd_end + sp.resume;
        let end = running + s.remaining;
        d.phase = s.phase;
        d.op = s.op;
        d.op_suspends = s.suspends;
        d.array_start = running;
        d.step_at = end;
        d.busy += end - start;
        q.push(end, Event::DieStep { die });
    }

    /// A merge copy from the host-write queue: a GC copy whose operation vector names its
    /// transaction, so that its end is reported (`Step::Programmed`).
    #[cold]
    #[inline(never)]
    fn start_copy(&mut self, now: SimTime, die: u32, op: Vec<u32>, q: &mut EventQueue<Event>) {
        let t = *self.txns.get(op[0]);
        // Its source is sensed into its plane's register and its data replaced there.
        let src_plane = self.geo.plane_of_block(self.geo.block_of_unit(t.aux));
        self.registers[src_plane as usize] = NONE;
        self.dies[die as usize].op = op;
        let g = GcOp {
            erase: false,
            pun: t.pun,
            src: t.aux,
            units: 1,
            src_pages: 1,
            epoch: t.epoch,
            plane: t.plane,
            copyback: false,
        };
        self.dies[die as usize].gc_partners.clear();
        self.start_gc_op(now, die, g, q);
    }

    /// Start GC operation `g` with the partners in `die.gc_partners` (a multi-plane copy).
    fn start_gc_op(&mut self, now: SimTime, die: u32, g: GcOp, q: &mut EventQueue<Event>) {
        let ch = self.geo.channel_of_die(die) as usize;
        // A copy senses its source pages and programs through the register, an erase clears
        // the plane: no read finds its page there afterwards.
        self.registers[g.plane as usize] = NONE;
        for m in &self.dies[die as usize].gc_partners {
            self.registers[m.plane as usize] = NONE;
        }
        let timing = &self.nand;
        let (phase, at, busy, array_start) = if g.erase {
            self.counters.array_erase_time += timing.erase;
            let (start, cmd_end) = self.channels[ch].reserve(now, timing.cmd_addr);
            (
                Phase::Erased,
                cmd_end + timing.erase,
                cmd_end + timing.erase - start,
                cmd_end,
            )
        } else {
            // One sense per distinct source page, back to back on the die. A multi-plane copy
            // addresses every member's pages in turn and senses a page of each plane at once:
            // as many senses as the member with the most source pages, each as long as the
            // slowest page type among the members.
            let partners = &self.dies[die as usize].gc_partners;
            let sense = |src: u32| timing.read[timing.page_type(self.geo.page_in_block(src))];
            // The lead first, then the partners (a chained iterator costs a state check per
            // member).
            let (mut pages, mut rounds, mut slowest) =
                (g.src_pages as u64, g.src_pages as u64, sense(g.src));
            for m in partners {
                pages += m.src_pages as u64;
                rounds = rounds.max(m.src_pages as u64);
                slowest = slowest.max(sense(m.src));
            }
            let t_r = slowest * rounds;
            self.counters.array_read_time += t_r;
            let (start, cmd_end) = self.channels[ch].reserve(now, timing.cmd_addr * pages);
            (
                Phase::CopySensed,
                cmd_end + t_r,
                cmd_end + t_r - start,
                cmd_end,
            )
        };
        let d = &mut self.dies[die as usize];
        d.gc_op = g;
        d.phase = phase;
        d.busy += busy;
        d.step_at = at;
        d.array_start = array_start;
        q.push(at, Event::DieStep { die });
    }

    /// Move queued transactions of the same kind that can join the head's operation: one page
    /// per plane (units of the same page share it).
    /// `RULED`: an address rule other than the relaxed one applies (a separate instance keeps
    /// the relaxed scan as lean as it was).
    fn gather_partners<const RULED: bool>(&mut self, die: u32, queue: usize, op: &mut Vec<u32>) {
        let kind = self.txns.get(op[0]).kind;
        // An erase runs alone (multi-plane erase is not modelled).
        if (!self.multiplane && self.geo.units_per_page == 1) || kind == TxnKind::Erase {
            return;
        }
        let window = self.window;
        let rule = self.rule;
        let max_members = (self.geo.planes_per_die * self.geo.units_per_page) as usize;
        let mut i = 0;
        while i < window.min(self.dies[die as usize].queues[queue].len()) && op.len() < max_members
        {
            let cand = self.dies[die as usize].queues[queue][i];
            let c = self.txns.get(cand);
            // Nothing overtakes a driver's erase: programs after it go to the erased block. Nor
            // a merge's copy: the pages after it in its block come after it.
            if c.kind == TxnKind::Erase || c.kind == TxnKind::Copy {
                break;
            }
            let same_kind = c.kind.is_program() == kind.is_program();
            let page = self.geo.page_id(c.pun);
            // Against every member: the same page, or (multi-plane) a page of another plane
            // whose address the rule lets pair with the member's.
            let fits = same_kind
                && op.iter().all(|&m| {
                    let mt = self.txns.get(m);
                    self.geo.page_id(mt.pun) == page
                        || (mt.plane != c.plane
                            && self.multiplane
                            && (!RULED || self.geo.multiplane_addresses_ok(rule, mt.pun, c.pun)))
                })
                // A plane contributes one page: units on a plane already used must share its page.
                && op.iter().filter(|&&m| self.txns.get(m).plane == c.plane).all(|&m| self.geo.page_id(self.txns.get(m).pun) == page);
            if fits {
                self.dies[die as usize].queues[queue].remove(i);
                op.push(cand);
            } else {
                if RULED && same_kind && self.refused_by_rule(op, c) {
                    self.counters.partners_refused += 1;
                }
                i += 1;
            }
        }
    }

    /// Whether candidate `c`, which could not join `op`, is on a plane `op` does not use yet and
    /// would have joined under the relaxed rule: the address rule alone refused it.
    #[cold]
    #[inline(never)]
    fn refused_by_rule(&self, op: &[u32], c: &Txn) -> bool {
        // On a plane of its own, the relaxed rule takes any candidate.
        self.multiplane && op.iter().all(|&m| self.txns.get(m).plane != c.plane)
    }

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
                        let xfer = self.nand.bus_time(self.geo.unit_bytes * m.units as u64);
                        let (_, out_end) = self.channels[ch].reserve(now, xfer);
                        self.channels[ch]
                            .reserve(out_end + self.nand.ecc_decode, self.nand.cmd_addr + xfer)
                            .1
                    };
                    let page = self.geo.page_in_block(m.pun);
                    t_prog = t_prog.max(self.nand.program[self.nand.page_type(page)]);
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

    /// The registers a read of several members finds its pages in: (the tR of the planes that
    /// sense, the planes that hit, whether any member is a read-ahead); the registers of the
    /// planes that sense take their pages.
    fn sense_members(&mut self, die: u32, op: &[u32]) -> (SimTime, u64, bool) {
        let first = die * self.geo.planes_per_die;
        let (mut t_r, mut hits, mut misses) = (SimTime::ZERO, 0u64, 0u64);
        let mut ahead = false;
        for &t in op {
            let Txn {
                pun, plane, kind, ..
            } = *self.txns.get(t);
            ahead |= kind == TxnKind::ReadAhead;
            let page = self.geo.page_id(pun);
            let bit = plane_bit(plane - first);
            let reg = &mut self.registers[plane as usize];
            // A plane whose first member missed senses for the others too.
            if *reg == page && misses & bit == 0 {
                hits |= bit;
            } else {
                misses |= bit;
                *reg = page;
                let timing = &self.nand;
                t_r = t_r.max(timing.read[timing.page_type(self.geo.page_in_block(pun))]);
            }
        }
        (t_r, hits, ahead)
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
        let xfer = self.nand.bus_time(self.geo.unit_bytes);
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

/// What the FIL asks of whoever keeps the FTL state of the blocks it operates on: the page
/// FTL ([`Ftl`]) under the page-mapped schemes, [`NoPageGc`] under the others. The FIL's calls
/// are generic over it (never a trait object), so the page path is compiled for `Ftl` alone.
pub(crate) trait FlashOwner {
    /// How urgently `plane` needs GC: weighed against host writes while its die has GC jobs.
    fn plane_urgency(&self, plane: u32) -> Urgency;
    /// Erases of block `block`, the wear a read of it decodes at (read retry); `txn_epoch` is
    /// what the read's transaction carries.
    fn erase_count(&self, block: u32, txn_epoch: u32) -> u32;
    /// A GC copy to units `pun..pun + units` was programmed; `epoch` was its block's when the
    /// copy was cut.
    fn gc_copy_programmed(&mut self, pun: u32, units: u32, epoch: u32);
    /// GC's erase `g` is done: the block is free again, and the GC work that frees goes to
    /// `fil`'s dies.
    fn gc_erased(
        &mut self,
        fil: &mut Fil,
        now: SimTime,
        g: &GcOp,
        check: Option<&mut DataCheck>,
        q: &mut EventQueue<Event>,
    ) -> Result<()>;
}

impl<M: Translation> FlashOwner for Ftl<M> {
    #[inline]
    fn plane_urgency(&self, plane: u32) -> Urgency {
        Ftl::plane_urgency(self, plane)
    }

    /// The page FTL's own records of its blocks.
    #[inline]
    fn erase_count(&self, block: u32, _txn_epoch: u32) -> u32 {
        self.blocks()[block as usize].erase_count
    }

    #[inline]
    fn gc_copy_programmed(&mut self, pun: u32, units: u32, epoch: u32) {
        // Only if the block was not erased (and reused) since the copy was cut.
        if self.blocks()[self.geo.block_of_unit(pun) as usize].epoch == epoch {
            for pun in pun..pun + units {
                self.mark_programmed(pun);
            }
        }
    }

    #[inline]
    fn gc_erased(
        &mut self,
        fil: &mut Fil,
        now: SimTime,
        g: &GcOp,
        check: Option<&mut DataCheck>,
        q: &mut EventQueue<Event>,
    ) -> Result<()> {
        self.erase_done(g.plane, g.pun, g.epoch)?;
        fil.drain_gc(now, self, check, q);
        Ok(())
    }
}

/// The blocks' owner under a scheme that runs no page-FTL GC (block-mapped, raw, fusion,
/// zoned): it emits no GC job, so no die ever weighs its urgency or finishes one of its GC
/// copies or erases; the scheme keeps its own blocks' records, and a read transaction carries
/// its block's erase count (a block-mapped FTL's, a zoned drive's; a raw device reads without
/// an error model: validation refuses `[reliability]` on it).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NoPageGc;

impl FlashOwner for NoPageGc {
    #[inline]
    fn plane_urgency(&self, _plane: u32) -> Urgency {
        Urgency::None
    }

    #[inline]
    fn erase_count(&self, _block: u32, txn_epoch: u32) -> u32 {
        txn_epoch
    }

    fn gc_copy_programmed(&mut self, _pun: u32, _units: u32, _epoch: u32) {
        unreachable!("a scheme without page-FTL GC queues no GC copy")
    }

    fn gc_erased(
        &mut self,
        _fil: &mut Fil,
        _now: SimTime,
        _g: &GcOp,
        _check: Option<&mut DataCheck>,
        _q: &mut EventQueue<Event>,
    ) -> Result<()> {
        unreachable!("a scheme without page-FTL GC queues no GC erase")
    }
}

/// `job`'s next copy and the index of the move after it, or None once its copies are cut.
/// (Always inlined: called for every GC copy and every partner looked at, its call and its
/// result passed through memory cost as much as its work.)
#[inline(always)]
fn gc_copy_of(geo: &Geometry, copyback: bool, job: &GcJob) -> Option<(GcOp, usize)> {
    let upp = geo.units_per_page as usize;
    let moves = &job.task.moves;
    let i = job.next;
    if i >= moves.len() {
        return None;
    }
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
    // Copyback programs the page register as sensed: one source page, and each unit at
    // the offset it had there.
    let copyback = copyback
        && src_pages == 1
        && moves[i..j]
            .iter()
            .all(|&(f, t, _)| f % upp as u32 == t % upp as u32);
    Some((
        GcOp {
            erase: false,
            pun: to,
            src: from,
            units: (j - i) as u16,
            src_pages,
            epoch,
            plane: job.task.plane,
            copyback,
        },
        j,
    ))
}

/// A plane's bit in a die's 64-bit set of planes, from its index in the die (folded into 64
/// bits: on a die of more planes two share a bit, and a read on one of them then senses anew).
#[inline(always)]
fn plane_bit(plane_in_die: u32) -> u64 {
    1u64 << (plane_in_die % 64)
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

/// The pages a read sensed: its distinct pages less those found in their registers (`hits`,
/// one page per plane).
#[inline]
fn sensed_pages(op: &[u32], txns: &Slab<Txn>, geo: &Geometry, hits: u64) -> u64 {
    distinct_pages(op, txns, geo) - hits.count_ones() as u64
}

fn distinct_pages(op: &[u32], txns: &Slab<Txn>, geo: &Geometry) -> u64 {
    if op.len() <= 1 {
        // Most operations are one unit: no list of pages to set up.
        return op.len() as u64;
    }
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
mod tests;
