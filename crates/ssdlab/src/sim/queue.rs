//! The event queue: a 4-ary heap ordered by (time, sequence number).
//!
//! The sequence number breaks ties in insertion order, so two events at the same picosecond are
//! always handled in the same order and a run is a pure function of its inputs. Both are packed
//! into one 128-bit key (time high, sequence low), so ordering is a single comparison; a 4-ary
//! heap is shallower than a binary one, which the hot loop notices.

use super::SimTime;
use dary_heap::QuaternaryHeap;
use std::cmp::Ordering;

struct Entry<E> {
    /// `time << 64 | seq`.
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: the heap is a max-heap and we want the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

pub struct EventQueue<E> {
    heap: QuaternaryHeap<Entry<E>>,
    next_seq: u64,
    now: SimTime,
    /// Events popped so far.
    pub handled: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: QuaternaryHeap::with_capacity(1024),
            next_seq: 0,
            now: SimTime::ZERO,
            handled: 0,
        }
    }

    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Set the clock of an empty queue to `t` (a device restarted after a power cut goes on
    /// from the cut's time).
    pub fn start_at(&mut self, t: SimTime) {
        debug_assert!(self.heap.is_empty() && t >= self.now);
        self.now = t;
    }

    /// Schedule `event` at `time`. Scheduling in the past is a logic error in the caller; it is
    /// clamped to now so the clock never runs backwards.
    #[inline]
    pub fn push(&mut self, time: SimTime, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let time = if time < self.now { self.now } else { time };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            key: ((time.0 as u128) << 64) | seq as u128,
            event,
        });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let e = self.heap.pop()?;
        let time = SimTime((e.key >> 64) as u64);
        self.now = time;
        self.handled += 1;
        Some((time, e.event))
    }

    /// When the next event is due, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| SimTime((e.key >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), 'a');
        q.push(SimTime(1), 'b');
        q.push(SimTime(5), 'c');
        q.push(SimTime(1), 'd');
        let got: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(got, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), SimTime(5));
    }

    #[test]
    fn peek_shows_the_next_time_without_advancing() {
        let mut q = EventQueue::new();
        assert_eq!(q.peek_time(), None);
        q.push(SimTime(9), 'x');
        q.push(SimTime(4), 'y');
        assert_eq!(q.peek_time(), Some(SimTime(4)));
        assert_eq!(q.now(), SimTime::ZERO);
        assert_eq!(q.pop(), Some((SimTime(4), 'y')));
        assert_eq!(q.peek_time(), Some(SimTime(9)));
    }
}
