//! The die model: what one NAND die is doing, and what waits for it. A die runs one operation at
//! a time (a multi-plane read or program, a GC page copy, an erase) through a few phases; the
//! FIL (`fil`) decides what it takes next.

use crate::ftl::GcTask;
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
        }
    }
}

impl Die {
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    /// Which queue an idle die serves next: 0 host reads, 1 host writes, 2 GC; None when it has
    /// nothing to do. GC goes before host writes when there are none or GC is `urgent`.
    #[inline]
    pub fn pick(&self, urgent: impl FnOnce() -> bool) -> Option<usize> {
        if !self.queues[0].is_empty() {
            Some(0)
        } else if !self.gc.is_empty() && (self.queues[1].is_empty() || urgent()) {
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
        assert_eq!(d.pick(|| true), None);
        d.gc.push_back(job());
        // GC alone is taken.
        assert_eq!(d.pick(|| false), Some(2));
        d.queues[1].push_back(7);
        // Host writes outrank GC unless a plane is urgent.
        assert_eq!(d.pick(|| false), Some(1));
        assert_eq!(d.pick(|| true), Some(2));
        d.queues[0].push_back(3);
        // Host reads outrank everything, urgent GC included.
        assert_eq!(d.pick(|| true), Some(0));
    }

    #[test]
    fn urgency_is_only_asked_when_it_matters() {
        let mut d = Die::default();
        d.queues[0].push_back(1);
        d.gc.push_back(job());
        d.queues[1].push_back(2);
        assert_eq!(d.pick(|| panic!("not needed: a read is queued")), Some(0));
    }
}
