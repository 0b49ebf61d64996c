//! The swap requests in flight, by id, with the frames each one reads or writes.
//!
//! Backends number requests one after another (`SwapBackend::submit`), so the requests are
//! kept in a ring from the oldest id in flight (entries of completed ones stay, marked done,
//! until the oldest completes): no search or map node per request. Their frames lie in one
//! vector, each request's after the one before it, dropped when no request is left in flight
//! (or moved down when the retired ones are most of it): no vector per request.

use crate::error::{says, Error, Invalid, Result};
use std::collections::VecDeque;

/// A request in flight: its kind (0 read, 1 write, 2 trim), its record in the trace, and
/// where its frames lie (`InFlight::frames_of`).
#[derive(Clone, Copy)]
pub(super) struct IoInFlight {
    pub op: u8,
    pub rec: usize,
    done: bool,
    /// Its first frame's place among all the frames ever pushed, and its frames.
    frames_at: u64,
    frames_len: u32,
}

#[derive(Default)]
pub(super) struct InFlight {
    /// The id of `ring[0]`.
    base: u32,
    ring: VecDeque<IoInFlight>,
    /// The frames of the requests in `ring`, in its order, after those of requests retired
    /// (before `frames_head`).
    frames: Vec<u32>,
    frames_head: usize,
    /// Frames pushed and dropped before `frames[0]`.
    frames_dropped: u64,
}

/// Retired requests' frames moved out of the vector when they are at least this many and
/// half of it (while requests stay in flight; all go when none is left).
const FRAMES_MOVED_FROM: usize = 4096;

impl InFlight {
    /// Add request `id` (the next id: an error otherwise) with its kind, trace record and
    /// frames.
    pub fn insert(
        &mut self,
        id: u32,
        op: u8,
        rec: usize,
        frames: impl IntoIterator<Item = u32>,
    ) -> Result<()> {
        if self.ring.is_empty() {
            self.base = id;
        }
        let k = id.wrapping_sub(self.base) as usize;
        if k != self.ring.len() {
            return Err(Error::bad_device(Invalid::unnamed(
                "paging",
                says(format!(
                    "the backend numbered a request {id} where {} was next (ids must follow \
                 one another)",
                    self.base.wrapping_add(self.ring.len() as u32)
                )),
            )));
        }
        let before = self.frames.len();
        self.frames.extend(frames);
        self.ring.push_back(IoInFlight {
            op,
            rec,
            done: false,
            frames_at: self.frames_dropped + before as u64,
            frames_len: (self.frames.len() - before) as u32,
        });
        Ok(())
    }

    /// Mark request `id` done and return it (None if it is not in flight). Its frames stay
    /// readable (`frames_of`) until `retire`.
    pub fn take(&mut self, id: u32) -> Option<IoInFlight> {
        let k = id.wrapping_sub(self.base) as usize;
        let io = self.ring.get_mut(k).filter(|io| !io.done)?;
        io.done = true;
        Some(*io)
    }

    /// The frames of `io`, a request taken since the last `retire` or still in flight.
    pub fn frames_of(&self, io: &IoInFlight) -> &[u32] {
        let at = (io.frames_at - self.frames_dropped) as usize;
        &self.frames[at..at + io.frames_len as usize]
    }

    /// Drop the requests done from the front of the ring, with their frames.
    pub fn retire(&mut self) {
        while let Some(io) = self.ring.front().filter(|io| io.done) {
            self.frames_head += io.frames_len as usize;
            self.ring.pop_front();
            self.base = self.base.wrapping_add(1);
        }
        let head = self.frames_head;
        if self.ring.is_empty() {
            // Every frame pushed is retired: the vector empties without a drain's move.
            debug_assert_eq!(head, self.frames.len());
            self.frames.clear();
        } else if head >= FRAMES_MOVED_FROM && 2 * head >= self.frames.len() {
            self.frames.drain(..head);
        } else {
            return;
        }
        self.frames_dropped += head as u64;
        self.frames_head = 0;
    }

    /// The requests in flight.
    pub fn values(&self) -> impl Iterator<Item = &IoInFlight> {
        self.ring.iter().filter(|io| !io.done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_keep_their_frames_until_retired_in_id_order() {
        let mut f = InFlight::default();
        f.insert(7, 0, 0, [10, 11, 12]).unwrap();
        f.insert(8, 1, 1, []).unwrap();
        f.insert(9, 1, 2, [20, 21]).unwrap();
        // An id out of turn is the backend's error.
        assert!(f.insert(11, 0, 3, [30]).is_err());
        // 8 and 9 complete before 7: kept (marked done) until 7 does.
        let io = f.take(9).unwrap();
        assert_eq!((io.op, io.rec), (1, 2));
        assert_eq!(f.frames_of(&io), [20, 21]);
        assert!(f.take(9).is_none(), "taken twice");
        f.retire();
        assert_eq!(f.values().count(), 2);
        let io = f.take(8).unwrap();
        assert!(f.frames_of(&io).is_empty());
        f.retire();
        let io = f.take(7).unwrap();
        assert_eq!(f.frames_of(&io), [10, 11, 12]);
        f.retire();
        assert_eq!((f.values().count(), f.frames.len()), (0, 0));
        // The next ids go on from the ring's start again, their frames from the front.
        f.insert(10, 0, 4, [40]).unwrap();
        let io = f.take(10).unwrap();
        assert_eq!(f.frames_of(&io), [40]);
        assert!(f.take(7).is_none());
    }
}
