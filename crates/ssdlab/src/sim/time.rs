//! Simulated time: an integer count of picoseconds.
//!
//! PCIe moves a byte in about a nanosecond or less, so nanoseconds would round link costs away;
//! picoseconds in a `u64` still cover 213 days of simulated time.

use serde::{Deserialize, Serialize};

/// A point in (or a span of) simulated time, in picoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000_000)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-12
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }

    /// `bytes` at `ps_per_byte_x1024` / 1024 picoseconds each, saturating at the clock's end
    /// as every sum of times does: rates and overheads come from the user's config, and a
    /// product past 2^64 wrapped to a short time (issue 45, defect 5).
    #[inline]
    pub fn of_bytes(bytes: u64, ps_per_byte_x1024: u64) -> SimTime {
        let ps = (bytes as u128 * ps_per_byte_x1024 as u128) >> 10;
        SimTime(u64::try_from(ps).unwrap_or(u64::MAX))
    }
}

impl std::ops::Add for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(rhs.0))
    }
}

impl std::ops::AddAssign for SimTime {
    #[inline]
    fn add_assign(&mut self, rhs: SimTime) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}

impl std::ops::Sub for SimTime {
    type Output = SimTime;
    #[inline]
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(rhs.0))
    }
}

impl std::ops::Mul<u64> for SimTime {
    type Output = SimTime;
    #[inline]
    fn mul(self, rhs: u64) -> SimTime {
        SimTime(self.0.saturating_mul(rhs))
    }
}

/// A serial resource modelled as "free at t": a link direction, a channel bus, a CPU core.
/// Reservations are first come, first served in the order the engine makes them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timeline {
    pub free_at: SimTime,
    /// Total time reserved so far (for utilisation).
    pub busy: SimTime,
}

impl Timeline {
    /// Reserve `dur` starting no earlier than `at`; returns (start, end).
    #[inline]
    pub fn reserve(&mut self, at: SimTime, dur: SimTime) -> (SimTime, SimTime) {
        let start = if self.free_at > at { self.free_at } else { at };
        let end = start + dur;
        self.free_at = end;
        self.busy += dur;
        (start, end)
    }
}

/// A [`Timeline`] that backfills: work also runs in the idle time left in front of work
/// reserved ahead of time, as the resource would run it. A host core's completion handler is
/// reserved when the device posts the entry, for the moment the interrupt will arrive; a
/// submit before that moment runs in the idle time before it instead of queueing behind the
/// handler. On a PCIe link direction, read data or a CQ entry is reserved for when it will be
/// ready; a transfer that starts earlier goes first. Work longer than the idle time runs there
/// and finishes after what was reserved ahead (the handler pre-empts it; the link interleaves
/// their packets). One gap is kept: the latest one a reservation ahead opened.
#[derive(Clone, Copy, Debug, Default)]
pub struct BackfillTimeline {
    pub line: Timeline,
    /// Idle time `gap_start .. gap_end` before the reservation that opened it.
    gap_start: SimTime,
    gap_end: SimTime,
}

impl BackfillTimeline {
    /// Reserve `dur` of work that arrives at `at`; returns (start, end).
    #[inline]
    pub fn reserve(&mut self, at: SimTime, dur: SimTime) -> (SimTime, SimTime) {
        if at < self.gap_end {
            let start = at.max(self.gap_start);
            let room = self.gap_end - start;
            if dur <= room {
                self.gap_start = start + dur;
                self.line.busy += dur;
                return (start, start + dur);
            }
            // Runs to the end of the gap, the rest after the work reserved ahead.
            self.gap_start = self.gap_end;
            let rest = dur - room;
            self.line.busy += room;
            let (_, end) = self.line.reserve(self.line.free_at, rest);
            return (start, end);
        }
        if at > self.line.free_at {
            self.gap_start = self.line.free_at;
            self.gap_end = at;
        }
        self.line.reserve(at, dur)
    }
}
