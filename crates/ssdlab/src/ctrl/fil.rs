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
//!
//! This file holds the FIL's types, its queues' entry (`enqueue`), its figures, and what it
//! asks of the blocks' owner (`FlashOwner`); the rest is in `fil/`, one file per moment of a
//! die's work: `start.rs` (an idle die's next operation: which queue, its multi-plane
//! partners, its command, transfer and array time; program/erase suspension), `gc.rs` (GC
//! work handed to the dies and cut into copies and erases), `step.rs` (a die's phase ends:
//! read-retry, read-out on the channel, the operation finished).

use super::datacheck::DataCheck;
use super::die::{Die, GcOp, Phase};
use crate::config::{DieScheduler, MultiplaneRule, SsdConfig};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::{Ftl, Translation, Urgency, NONE};
use crate::media::nand::{Geometry, NandTimingPs};
use crate::media::nand_errors::ErrorModel;
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime, Slab};

mod gc;
mod start;
mod step;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnKind {
    HostRead,
    RmwRead,
    /// The rest of a cache-buffer line's unit, read for its flush (`cache.partial_lines =
    /// "merge-at-flush"`); `cmd` is the line.
    MergeRead,
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

/// A plane's bit in a die's 64-bit set of planes, from its index in the die (folded into 64
/// bits: on a die of more planes two share a bit, and a read on one of them then senses anew).
#[inline(always)]
fn plane_bit(plane_in_die: u32) -> u64 {
    1u64 << (plane_in_die % 64)
}

#[cfg(test)]
mod tests;
