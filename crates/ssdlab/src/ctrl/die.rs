//! The die model: what one NAND die is doing, and what waits for it. A die runs one operation at
//! a time (a multi-plane read or program, a GC page copy, an erase) through a few phases; the
//! FIL (`fil`) decides what it takes next. With `nand.suspend`, a program or erase may be set
//! aside ([`Suspended`]) while the die serves reads, and then resumed.

use crate::ftl::{GcTask, Urgency};
use crate::sim::SimTime;
use std::collections::VecDeque;

/// One collection queued at its die: its page copies are cut from `task.moves` from `next` on.
pub struct GcJob {
    pub task: GcTask,
    pub next: usize,
}

/// The GC operation a die is running: a copy of `units` consecutive units to `pun` from
/// `src_pages` source pages (the first at `src`), or the erase of block `pun`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GcOp {
    pub erase: bool,
    pub pun: u32,
    pub src: u32,
    pub units: u16,
    pub src_pages: u16,
    pub epoch: u32,
    pub plane: u32,
    /// A copy by copyback: programmed from the die's page register, no transfer, no ECC.
    pub copyback: bool,
}

/// Where a die's current operation is; each phase ends with a `DieStep` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Idle,
    /// A host or read-modify-write read sensed its pages (tR over).
    Sensed,
    /// Its read-retry steps are over too (with `[reliability]`).
    Retried,
    /// A host write or buffer flush programmed its pages (tPROG over).
    Programmed,
    /// A GC copy read its source pages.
    CopySensed,
    /// A GC copy programmed its destination page.
    CopyProgrammed,
    /// A GC erase finished.
    Erased,
    /// A driver's block erase finished (a raw device).
    BlockErased,
    /// A program or erase is being suspended (the suspend latency): the die then serves reads.
    Suspending,
}

impl Phase {
    /// Whether the phase is a program's or an erase's array time, which a read may suspend, and
    /// which of the two (true: a program).
    #[inline]
    pub fn suspendable(self) -> Option<bool> {
        match self {
            Phase::Programmed | Phase::CopyProgrammed => Some(true),
            Phase::Erased | Phase::BlockErased => Some(false),
            _ => None,
        }
    }
}

/// A program or erase set aside while the die serves reads.
#[derive(Debug)]
pub struct Suspended {
    /// The phase it resumes in, and the array time it still needs.
    pub phase: Phase,
    pub remaining: SimTime,
    /// Its transactions (host programs, a driver's erase).
    pub op: Vec<u32>,
    /// Suspensions of this operation so far, this one included.
    pub suspends: u32,
    /// Read transactions still to serve before resuming: those queued when it was suspended
    /// (later reads wait for the resume, so that a stream of reads cannot starve it).
    pub reads_left: u32,
}

pub struct Die {
    /// Transaction queues: host reads, host writes (and buffer flushes) — in that priority
    /// order, then GC unless GC is urgent.
    pub queues: [VecDeque<u32>; 2],
    pub gc: VecDeque<GcJob>,
    pub phase: Phase,
    /// The transactions of the operation under way (reads and programs).
    pub op: Vec<u32>,
    pub gc_op: GcOp,
    /// Copies of GC jobs on the die's other planes that joined `gc_op` as one multi-plane
    /// operation (one sense and one program for all).
    pub gc_partners: Vec<GcOp>,
    /// Time spent busy, for utilisation.
    pub busy: SimTime,
    /// GC operations the die owes before its next host write under soft urgency: set by each
    /// host write to the front job's pace ([`Die::gc_pace`]), one less per GC operation.
    pub gc_owed: u32,
    /// When the current phase's `DieStep` fires, and when the current operation's array time
    /// began (after its command and data on the bus): what a suspension needs to know.
    pub step_at: SimTime,
    pub array_start: SimTime,
    /// Times of `DieStep` events of suspended phases, in order: they fire and are ignored.
    /// The first is kept apart (`SimTime::MAX`: none), so that every step checks one word.
    pub next_stale: SimTime,
    pub stale: VecDeque<SimTime>,
    pub suspended: Option<Box<Suspended>>,
    /// Suspensions of the current operation.
    pub op_suspends: u32,
    /// The planes (bits by index in the die) whose pages the current read found in their page
    /// registers: no sense, and no new decode outcome.
    pub hit_planes: u64,
    /// The current read has read-ahead members, which end at its sense.
    pub read_ahead: bool,
}

impl Default for Die {
    fn default() -> Self {
        Die {
            queues: [VecDeque::new(), VecDeque::new()],
            gc: VecDeque::new(),
            phase: Phase::Idle,
            op: Vec::with_capacity(16),
            gc_op: GcOp::default(),
            gc_partners: Vec::new(),
            busy: SimTime::ZERO,
            gc_owed: 0,
            step_at: SimTime::ZERO,
            array_start: SimTime::ZERO,
            next_stale: SimTime::MAX,
            stale: VecDeque::new(),
            suspended: None,
            op_suspends: 0,
            hit_planes: 0,
            read_ahead: false,
        }
    }
}

impl Die {
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    /// GC operations per host write that keep a plane's free space level while its front
    /// victim is collected: the victim frees `units_per_block − moves` units for `moves` copied,
    /// so each page the host programs must be matched by ⌈moves / freed⌉ page copies (at least
    /// one). A job that frees nothing (a copy-only remainder, a wear-levelling migration of a
    /// full block) is run to its end: its remaining operations. 0 when there is no GC work.
    #[inline]
    pub fn gc_pace(&self, units_per_block: u32, units_per_page: u32) -> u32 {
        let Some(job) = self.gc.front() else {
            return 0;
        };
        let moves = job.task.moves.len() as u32;
        let left_ops = (moves - job.next as u32).div_ceil(units_per_page) + 1;
        let freed = if job.task.block == crate::ftl::NONE {
            0
        } else {
            units_per_block.saturating_sub(moves)
        };
        if freed == 0 {
            left_ops
        } else {
            moves.div_ceil(freed).clamp(1, left_ops)
        }
    }

    /// Which queue an idle die serves next: 0 host reads, 1 host writes, 2 GC; None when it has
    /// nothing to do. Reads go first unless the scheduler says the oldest write is due
    /// (`write_due`); then, as when no read waits, GC goes before host writes when there are
    /// none or GC's `urgency` is hard; when it is soft, GC and host writes take turns (the GC
    /// operations owed, then one write).
    #[inline]
    pub fn pick(&self, write_due: bool, urgency: impl FnOnce() -> Urgency) -> Option<usize> {
        if !self.queues[0].is_empty() && !write_due {
            Some(0)
        } else if !self.gc.is_empty()
            && (self.queues[1].is_empty() || {
                match urgency() {
                    Urgency::Hard => true,
                    Urgency::Soft => self.gc_owed > 0,
                    Urgency::None => false,
                }
            })
        {
            Some(2)
        } else if !self.queues[1].is_empty() {
            Some(1)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> GcJob {
        GcJob {
            task: GcTask {
                plane: 0,
                block: 0,
                epoch: 0,
                moves: Vec::new(),
                wear_level: false,
            },
            next: 0,
        }
    }

    #[test]
    fn reads_first_then_writes_then_gc_unless_urgent() {
        let mut d = Die::default();
        assert_eq!(d.pick(false, || Urgency::Hard), None);
        d.gc.push_back(job());
        // GC alone is taken.
        assert_eq!(d.pick(false, || Urgency::None), Some(2));
        d.queues[1].push_back(7);
        // Host writes outrank GC unless a plane is urgent.
        assert_eq!(d.pick(false, || Urgency::None), Some(1));
        assert_eq!(d.pick(false, || Urgency::Hard), Some(2));
        d.queues[0].push_back(3);
        // Host reads outrank everything, urgent GC included.
        assert_eq!(d.pick(false, || Urgency::Hard), Some(0));
    }

    #[test]
    fn a_write_due_goes_before_reads_and_still_takes_turns_with_gc() {
        let mut d = Die::default();
        d.queues[0].push_back(3);
        d.queues[1].push_back(7);
        assert_eq!(d.pick(true, || Urgency::None), Some(1));
        // Urgent GC still goes before the write it makes room for.
        d.gc.push_back(job());
        assert_eq!(d.pick(true, || Urgency::Hard), Some(2));
        assert_eq!(d.pick(false, || Urgency::Hard), Some(0));
    }

    #[test]
    fn urgency_is_only_asked_when_it_matters() {
        let mut d = Die::default();
        d.queues[0].push_back(1);
        d.gc.push_back(job());
        d.queues[1].push_back(2);
        assert_eq!(
            d.pick(false, || panic!("not needed: a read is queued")),
            Some(0)
        );
    }

    /// A victim of 128 units with 104 valid frees 24: ⌈104 / 24⌉ = 5 page copies per host
    /// page keep the plane level (4 units a page: 26 copies and the erase, 27 operations, cap
    /// it). A copy-only remainder frees nothing and runs to its end.
    #[test]
    fn gc_pace_matches_the_victims_copies_to_what_it_frees() {
        let mut d = Die::default();
        assert_eq!(d.gc_pace(128, 4), 0);
        let mut j = job();
        j.task.moves = vec![(0, 0, 0); 104];
        d.gc.push_back(j);
        assert_eq!(d.gc_pace(128, 4), 5);
        // Late in the victim only its remaining operations are owed: 3 copies and the erase.
        d.gc[0].next = 92;
        assert_eq!(d.gc_pace(128, 4), 4);
        // A mostly stale victim: at least one copy per host page.
        d.gc[0].next = 0;
        d.gc[0].task.moves.truncate(10);
        assert_eq!(d.gc_pace(128, 4), 1);
        d.gc[0].task.block = crate::ftl::NONE;
        assert_eq!(d.gc_pace(128, 4), 3 + 1);
    }

    #[test]
    fn soft_urgency_takes_turns_between_gc_and_host_writes() {
        let mut d = Die::default();
        d.gc.push_back(job());
        d.queues[1].push_back(7);
        // While GC operations are owed, GC's turn; then the write's.
        d.gc_owed = 2;
        assert_eq!(d.pick(false, || Urgency::Soft), Some(2));
        d.gc_owed = 0;
        assert_eq!(d.pick(false, || Urgency::Soft), Some(1));
        // Hard urgency keeps GC first whatever came before; none leaves it behind writes.
        assert_eq!(d.pick(false, || Urgency::Hard), Some(2));
        assert_eq!(d.pick(false, || Urgency::None), Some(1));
    }
}
