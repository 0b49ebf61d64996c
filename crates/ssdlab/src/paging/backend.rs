//! The swap device behind the paging model: what the model submits swap I/O to and learns
//! completion times from. Two backends:
//!
//! - [`SsdBackend`]: any ssdlab [`Device`], through its boundary (`Device::submit`,
//!   `Device::run_until` with a [`Driver`] that collects completions), as the replay driver
//!   drives it. The device's own model gives every read's and write's latency.
//! - [`FixedBackend`]: a serial device with a fixed cost per request and per page; for the
//!   paging model's own speed and for analytic device models (seed 003's SCM and NAND cost
//!   models belong here, or in a `Device` with those media, when they exist).

use crate::device::{Completion, Device, Driver, Flags, Request, Status};
use crate::error::{says, Error, Invalid, Result};
use crate::request::Op;
use crate::sim::time::Timeline;
use crate::sim::SimTime;
use std::collections::VecDeque;

pub trait SwapBackend {
    /// Submit `len` bytes at byte `offset`; returns an id named again at completion. Ids
    /// follow one another from 0 (wrapping), the numbering the model keeps its requests by.
    fn submit(&mut self, now: SimTime, op: Op, offset: u64, len: u64) -> Result<u32>;
    /// When the backend next has something to do (None: idle).
    fn next_event(&self) -> Option<SimTime>;
    /// Do what is due at or before `until`, pushing (id, completion time) in completion order.
    fn advance(&mut self, until: SimTime, done: &mut Vec<(u32, SimTime)>) -> Result<()>;
    /// Bytes of the device's logical space.
    fn capacity_bytes(&self) -> u64;
    /// A short name for the result.
    fn describe(&self) -> String;
    /// Block merges the device charged, for a device model that counts them (the analytic
    /// NAND model); None for the others.
    fn merges(&self) -> Option<u64> {
        None
    }
    /// Whether requests reach the device through a request queue whose completions free
    /// requests (what `congestion_wake = "auto"` follows): an ssdlab device's interface
    /// queues them; the cost models do not.
    fn queues_requests(&self) -> bool {
        false
    }
}

/// Collects completions for [`SsdBackend`], and the first request the device failed.
struct Collect<'a>(&'a mut Vec<(u32, SimTime)>, Option<Completion>);

impl Driver for Collect<'_> {
    fn on_complete(&mut self, _dev: &mut Device, now: SimTime, done: Completion) {
        if done.status != Status::Ok && self.1.is_none() {
            self.1 = Some(done);
        }
        self.0.push((done.id, now));
    }
}

/// An ssdlab device. Requests wait in a FIFO here while their interface queue is full (the
/// block layer's dispatch queue), as the replay driver waits for queue room.
pub struct SsdBackend {
    pub dev: Device,
    name: String,
    waiting: std::collections::VecDeque<(u32, Request)>,
    next_id: u32,
    /// Device request id -> our id.
    of_dev: Vec<u32>,
}

impl SsdBackend {
    pub fn new(dev: Device, name: &str) -> SsdBackend {
        SsdBackend {
            dev,
            name: name.to_string(),
            waiting: Default::default(),
            next_id: 0,
            of_dev: Vec::new(),
        }
    }

    fn pump(&mut self, now: SimTime) -> Result<()> {
        while let Some(&(id, r)) = self.waiting.front() {
            if !self.dev.queue_has_room(0, r.op, r.offset, r.len) {
                break;
            }
            self.waiting.pop_front();
            let did = self.dev.submit(now, r)? as usize;
            if self.of_dev.len() <= did {
                self.of_dev.resize(did + 1, u32::MAX);
            }
            self.of_dev[did] = id;
        }
        Ok(())
    }
}

impl SwapBackend for SsdBackend {
    fn submit(&mut self, now: SimTime, op: Op, offset: u64, len: u64) -> Result<u32> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let r = Request {
            op,
            offset,
            len,
            queue: 0,
            flags: Flags::NONE,
            arrival: now,
        };
        self.waiting.push_back((id, r));
        self.pump(now)?;
        Ok(id)
    }

    fn next_event(&self) -> Option<SimTime> {
        self.dev.next_event_time()
    }

    fn advance(&mut self, until: SimTime, done: &mut Vec<(u32, SimTime)>) -> Result<()> {
        let start = done.len();
        let mut collect = Collect(done, None);
        self.dev.run_until(&mut collect, until)?;
        if let Some(f) = collect.1 {
            // A swap read or write the device failed (a media error, a worn-out drive): the
            // page's contents are gone, which no kernel would carry on from silently.
            return Err(Error::bad_paging(Invalid::unnamed(
                super::PAGING,
                says(format!(
                    "the swap device failed a {} of {} bytes at byte {}: {}",
                    f.op.name(),
                    f.len,
                    f.offset,
                    f.status.describe()
                )),
            )));
        }
        for d in &mut done[start..] {
            d.0 = self.of_dev[d.0 as usize];
        }
        if done.len() > start {
            let now = done.last().map_or(until, |d| d.1);
            self.pump(now)?;
        }
        Ok(())
    }

    fn capacity_bytes(&self) -> u64 {
        self.dev.capacity_bytes()
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn queues_requests(&self) -> bool {
        true
    }
}

/// A serial device: each request takes `per_request + pages x per_page` of its direction's
/// time (reads and writes share one timeline), in submission order; a trim takes
/// `per_request` only.
pub struct FixedBackend {
    read_per_request: SimTime,
    read_per_page: SimTime,
    write_per_request: SimTime,
    write_per_page: SimTime,
    capacity: u64,
    serial: Serial,
}

/// A device that serves one request at a time, each for a cost its model computes: requests
/// queue on one timeline and complete in order of their end times.
///
/// A request starts when the one before it ends (or later), so end times never fall in
/// submission order: the requests in flight are a queue in that order, and the first is the
/// next to end (a tie ends in submission order, the order of ids).
#[derive(Default)]
pub struct Serial {
    busy: Timeline,
    /// (end time, id), in submission order: the end times are non-decreasing.
    pending: VecDeque<(SimTime, u32)>,
    next_id: u32,
}

impl Serial {
    /// Queue a request of `cost` at `now`; returns its id.
    pub fn submit(&mut self, now: SimTime, cost: SimTime) -> u32 {
        let (_, end) = self.busy.reserve(now, cost);
        debug_assert!(self.pending.back().is_none_or(|&(t, _)| t <= end));
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.pending.push_back((end, id));
        id
    }

    pub fn next_event(&self) -> Option<SimTime> {
        self.pending.front().map(|r| r.0)
    }

    /// Move the requests that end by `until` to `done`.
    pub fn advance(&mut self, until: SimTime, done: &mut Vec<(u32, SimTime)>) {
        while let Some(&(t, id)) = self.pending.front() {
            if t > until {
                break;
            }
            self.pending.pop_front();
            done.push((id, t));
        }
    }
}

impl FixedBackend {
    pub fn new(capacity: u64, read: (SimTime, SimTime), write: (SimTime, SimTime)) -> FixedBackend {
        FixedBackend {
            read_per_request: read.0,
            read_per_page: read.1,
            write_per_request: write.0,
            write_per_page: write.1,
            capacity,
            serial: Serial::default(),
        }
    }
}

impl SwapBackend for FixedBackend {
    fn submit(&mut self, now: SimTime, op: Op, offset: u64, len: u64) -> Result<u32> {
        let _ = offset;
        let pages = len.div_ceil(super::PAGE_BYTES);
        let cost = match op {
            Op::Read => self.read_per_request + self.read_per_page * pages,
            Op::Write => self.write_per_request + self.write_per_page * pages,
            _ => self.write_per_request,
        };
        Ok(self.serial.submit(now, cost))
    }

    fn next_event(&self) -> Option<SimTime> {
        self.serial.next_event()
    }

    fn advance(&mut self, until: SimTime, done: &mut Vec<(u32, SimTime)>) -> Result<()> {
        self.serial.advance(until, done);
        Ok(())
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    fn describe(&self) -> String {
        "fixed".into()
    }
}
