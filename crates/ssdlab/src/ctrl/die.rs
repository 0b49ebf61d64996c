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
    /// Time spent busy, for utilisation.
    pub busy: SimTime,
    /// The last operation it started was GC (soft urgency alternates GC with host writes).
    pub last_was_gc: bool,
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
}

impl Default for Die {
    fn default() -> Self {
        Die {
            queues: [VecDeque::new(), VecDeque::new()],
            gc: VecDeque::new(),
            phase: Phase::Idle,
            op: Vec::with_capacity(16),
            gc_op: GcOp::default(),
            busy: SimTime::ZERO,
            last_was_gc: false,
            step_at: SimTime::ZERO,
            array_start: SimTime::ZERO,
            next_stale: SimTime::MAX,
            stale: VecDeque::new(),
            suspended: None,
            op_suspends: 0,
        }
    }
}

impl Die {
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    /// Which queue an idle die serves next: 0 host reads, 1 host writes, 2 GC; None when it has
    /// nothing to do. GC goes before host writes when there are none or GC's `urgency` is
    /// hard; when it is soft, GC and host writes take turns (one GC operation, then one write).
    #[inline]
    pub fn pick(&self, urgency: impl FnOnce() -> Urgency) -> Option<usize> {
        if !self.queues[0].is_empty() {
            Some(0)
        } else if !self.gc.is_empty()
            && (self.queues[1].is_empty() || {
                match urgency() {
                    Urgency::Hard => true,
                    Urgency::Soft => !self.last_was_gc,
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
        assert_eq!(d.pick(|| Urgency::Hard), None);
        d.gc.push_back(job());
        // GC alone is taken.
        assert_eq!(d.pick(|| Urgency::None), Some(2));
        d.queues[1].push_back(7);
        // Host writes outrank GC unless a plane is urgent.
        assert_eq!(d.pick(|| Urgency::None), Some(1));
        assert_eq!(d.pick(|| Urgency::Hard), Some(2));
        d.queues[0].push_back(3);
        // Host reads outrank everything, urgent GC included.
        assert_eq!(d.pick(|| Urgency::Hard), Some(0));
    }

    #[test]
    fn urgency_is_only_asked_when_it_matters() {
        let mut d = Die::default();
        d.queues[0].push_back(1);
        d.gc.push_back(job());
        d.queues[1].push_back(2);
        assert_eq!(d.pick(|| panic!("not needed: a read is queued")), Some(0));
    }

    #[test]
    fn soft_urgency_takes_turns_between_gc_and_host_writes() {
        let mut d = Die::default();
        d.gc.push_back(job());
        d.queues[1].push_back(7);
        // After a host write, GC's turn; after a GC operation, the write's.
        assert_eq!(d.pick(|| Urgency::Soft), Some(2));
        d.last_was_gc = true;
        assert_eq!(d.pick(|| Urgency::Soft), Some(1));
        // Hard urgency keeps GC first whatever came before; none leaves it behind writes.
        assert_eq!(d.pick(|| Urgency::Hard), Some(2));
        assert_eq!(d.pick(|| Urgency::None), Some(1));
    }
}
