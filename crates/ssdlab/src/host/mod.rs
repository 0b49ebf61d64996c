//! The host: job instances issuing requests (closed or open loop), the CPU cost of the I/O
//! stack on each core, the driver's split of large requests at MDTS, and completion handling.
//!
//! Requests come from one of two sources: each synthetic job instance's own generator, or one
//! trace replay shared by all the host queues (`ReplayHost`).

use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::system::{Cmd, Event, HostReq, RequestRecord, System};
use crate::workload::trace::replay::{Replay, ReplayMode, Request};
use crate::workload::Op;

pub mod dramif;
pub mod external;

/// The host side of a trace replay: the next request, what is in flight, and where it goes.
pub struct ReplayHost {
    pub src: Replay,
    /// The next trace request, read but not yet issued.
    pending: Option<Request>,
    /// The trace has no more requests (or could not be read: `error`).
    exhausted: bool,
    error: Option<Error>,
    /// A `TraceArrival` event is queued for `pending`.
    scheduled: bool,
    inflight: u32,
    /// Commands in flight per SQ; a queue of N entries holds N − 1.
    sq_cmds: Vec<u32>,
    sq_cap: u32,
    /// Most requests in flight.
    iodepth: u32,
    next_inst: u32,
    /// Requests issued to the device.
    pub issued: u64,
}

impl ReplayHost {
    pub fn new(src: Replay, io_queues: u32, queue_depth: u32) -> ReplayHost {
        ReplayHost {
            iodepth: src.job.iodepth,
            src,
            pending: None,
            exhausted: false,
            error: None,
            scheduled: false,
            inflight: 0,
            sq_cmds: vec![0; io_queues as usize],
            sq_cap: queue_depth - 1,
            next_inst: 0,
            issued: 0,
        }
    }
}

impl System {
    /// Requests the run expects to complete, for progress reports (0: unknown).
    pub(crate) fn progress_total(&self) -> u64 {
        match &self.replay {
            Some(r) => {
                let t = r.src.total();
                self.job.total_ios.map_or(t, |n| n.min(t))
            }
            None => self.job.total_ios.unwrap_or(0),
        }
    }

    /// A replay's stop reason once the event queue is empty, or its read error.
    pub(crate) fn replay_stop(&mut self) -> Result<Option<&'static str>> {
        let Some(r) = self.replay.as_mut() else {
            return Ok(None);
        };
        if let Some(e) = r.error.take() {
            return Err(e);
        }
        Ok(Some(if r.exhausted && r.pending.is_none() {
            "trace end"
        } else if self.job.total_ios.is_some_and(|t| self.issued >= t) {
            "io_count reached"
        } else {
            "runtime reached"
        }))
    }

    pub(crate) fn on_trace_arrival(&mut self, now: SimTime) {
        if let Some(r) = self.replay.as_mut() {
            r.scheduled = false;
        }
        self.replay_pump(now);
    }

    /// Issue trace requests while they are due, the iodepth has room and their SQ has room.
    fn replay_pump(&mut self, now: SimTime) {
        let n_inst = self.insts.len() as u32;
        // Count commands as `submit_io` cuts them (MDTS, or the DRAM interface's chunk).
        let mdts = self.max_cmd_bytes;
        loop {
            if !self.may_issue(now) {
                return;
            }
            let r = self.replay.as_mut().expect("replaying");
            if r.pending.is_none() && !r.exhausted {
                match r.src.next_request() {
                    Ok(Some(req)) => r.pending = Some(req),
                    Ok(None) => r.exhausted = true,
                    Err(e) => {
                        r.error = Some(e);
                        r.exhausted = true;
                    }
                }
            }
            let Some(req) = r.pending else {
                return;
            };
            let timed = r.src.job.mode == ReplayMode::Timed;
            if timed && req.arrival > now {
                if !r.scheduled {
                    r.scheduled = true;
                    self.q.push(req.arrival, Event::TraceArrival);
                }
                return;
            }
            if r.inflight >= r.iodepth {
                return;
            }
            let inst = r.next_inst;
            let sq = self.insts[inst as usize].sq as usize;
            let cmds = cmds_of(req.op, req.len, mdts);
            // A request that needs more entries than its queue has free waits for completions
            // (one larger than the whole queue goes alone).
            if r.sq_cmds[sq] > 0 && r.sq_cmds[sq] + cmds > r.sq_cap {
                return;
            }
            r.pending = None;
            r.inflight += 1;
            r.sq_cmds[sq] += cmds;
            r.next_inst = (inst + 1) % n_inst;
            r.issued += 1;
            self.issued += 1;
            let arrival = if timed { req.arrival } else { now };
            self.submit_io(now, inst, arrival, req.op, req.offset, req.len);
        }
    }

    pub(crate) fn start_workload(&mut self) {
        if self.replay.is_some() {
            self.replay_pump(SimTime::ZERO);
            return;
        }
        let n = self.insts.len() as u32;
        match self.job.spec.rate_iops {
            Some(rate) => {
                // Instances start staggered across one inter-arrival gap, each at its own rate.
                let gap = (1e12 / rate) as u64;
                for inst in 0..n {
                    let t = SimTime(gap * inst as u64 / n as u64);
                    self.q.push(t, Event::Arrival { inst });
                }
            }
            None => {
                for _ in 0..self.job.spec.iodepth {
                    for inst in 0..n {
                        if self.may_issue(SimTime::ZERO) {
                            self.issue(SimTime::ZERO, inst, SimTime::ZERO);
                        }
                    }
                }
            }
        }
    }

    fn may_issue(&self, now: SimTime) -> bool {
        self.job.total_ios.is_none_or(|t| self.issued < t)
            && self.job.runtime.is_none_or(|r| now < r)
    }

    pub(crate) fn on_arrival(&mut self, now: SimTime, inst: u32) {
        if !self.may_issue(now) {
            return;
        }
        self.issued += 1;
        let rate = self.job.spec.rate_iops.expect("arrivals only in open loop");
        let gap = SimTime((1e12 / rate) as u64);
        self.q.push(now + gap, Event::Arrival { inst });
        let i = &mut self.insts[inst as usize];
        if i.inflight < self.job.spec.iodepth {
            self.submit_request(now, inst, now);
        } else {
            i.backlog.push_back(now);
        }
    }

    /// Closed loop: a new request from `inst`, arriving now.
    fn issue(&mut self, now: SimTime, inst: u32, arrival: SimTime) {
        self.issued += 1;
        self.submit_request(now, inst, arrival);
    }

    /// Draw the instance's next request and submit it.
    fn submit_request(&mut self, now: SimTime, inst: u32, arrival: SimTime) {
        let (op, offset, len) = {
            let job = &self.job;
            self.insts[inst as usize].gen.next(job)
        };
        self.submit_io(now, inst, arrival, op, offset, len);
    }

    /// Build the request, split it at MDTS into commands, and submit each on the instance's core.
    pub(crate) fn submit_io(
        &mut self,
        now: SimTime,
        inst: u32,
        arrival: SimTime,
        op: Op,
        offset: u64,
        len: u64,
    ) -> u32 {
        let i = &mut self.insts[inst as usize];
        i.inflight += 1;
        let (core, sq) = (i.core as usize, i.sq);
        // Trims travel as one Dataset Management command whatever their length; a flush is one
        // command without data.
        let mdts = if matches!(op, Op::Trim | Op::Flush) {
            len.max(1)
        } else {
            self.max_cmd_bytes
        };
        let n_cmds = cmds_of(op, len, self.max_cmd_bytes);
        let req = self.reqs.insert(HostReq {
            inst,
            op,
            offset,
            len,
            arrival,
            cmds_left: n_cmds,
        });
        let submit_cost = self.cfg.host.submit_cost.0;
        let lat = self.link.latency;
        let mut off = offset;
        let end = offset + len;
        // At least one command (a flush has no bytes).
        loop {
            let clen = mdts.min(end - off);
            let cmd = self.cmds.insert(Cmd {
                req,
                op,
                offset: off,
                len: clen,
                sq,
                txns_left: 0,
                rmw_left: 0,
                data_done: SimTime::ZERO,
                data_started: false,
                buf: 0,
            });
            let (_, cpu_end) = self.cores[core].reserve(now, submit_cost);
            if self.proto.is_some() {
                // Into the block layer's queue until the device has a slot for it.
                self.host_q.push_back((cmd, cpu_end));
            } else {
                // The doorbell is a posted 4-byte MMIO write.
                let (_, bell) = self.link_down.reserve(cpu_end, self.link.wire_time(4));
                self.q.push(bell + lat, Event::Submit { cmd });
            }
            off += clen;
            if off >= end {
                break;
            }
        }
        if self.proto.is_some() {
            self.issue_queued(now);
        }
        req
    }

    pub(crate) fn on_host_complete(&mut self, now: SimTime, cmd: u32) {
        let c = self.cmds.remove(cmd);
        if self.proto.is_some() {
            self.release_slot(now, &c);
        }
        if let Some(r) = self.replay.as_mut() {
            r.sq_cmds[c.sq as usize] -= 1;
        }
        let r = self.reqs.get_mut(c.req);
        r.cmds_left -= 1;
        if r.cmds_left > 0 {
            return;
        }
        let r = self.reqs.remove(c.req);
        if let Some(done) = self.external.as_mut() {
            done.push((c.req, now));
        }
        self.completed += 1;
        self.last_completion = now;
        if r.arrival >= self.job.ramp {
            let latency = now - r.arrival;
            self.lat[r.op.index()].record(latency.ps(), r.len);
            if let Some(rec) = self.records.as_mut() {
                rec.push(RequestRecord {
                    op: r.op.index() as u8,
                    offset: r.offset,
                    issue_ps: r.arrival.ps(),
                    latency_ps: latency.ps(),
                });
            }
        }
        let inst = r.inst;
        let i = &mut self.insts[inst as usize];
        i.inflight -= 1;
        if let Some(rp) = self.replay.as_mut() {
            rp.inflight -= 1;
            self.replay_pump(now);
        } else if self.job.spec.rate_iops.is_some() {
            if let Some(arrival) = i.backlog.pop_front() {
                self.submit_request(now, inst, arrival);
            }
        } else if self.may_issue(now) {
            self.issue(now, inst, now);
        }
    }
}

/// Commands a request becomes: trims and flushes are one command, the rest split at MDTS.
#[inline]
fn cmds_of(op: Op, len: u64, mdts: u64) -> u32 {
    if matches!(op, Op::Trim | Op::Flush) {
        1
    } else {
        len.div_ceil(mdts).max(1) as u32
    }
}
