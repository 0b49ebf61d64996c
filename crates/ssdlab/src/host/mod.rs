//! The host: job instances issuing requests (closed or open loop), the CPU cost of the I/O
//! stack on each core, the driver's split of large requests at MDTS, and completion handling.

use crate::sim::SimTime;
use crate::system::{Cmd, Event, HostReq, RequestRecord, System};
use crate::workload::Op;

impl System {
    pub(crate) fn start_workload(&mut self) {
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

    /// Build the request, split it at MDTS into commands, and submit each on the instance's core.
    fn submit_request(&mut self, now: SimTime, inst: u32, arrival: SimTime) {
        let (op, offset, len) = {
            let job = &self.job;
            self.insts[inst as usize].gen.next(job)
        };
        let i = &mut self.insts[inst as usize];
        i.inflight += 1;
        let (core, sq) = (i.core as usize, i.sq);
        // Trims travel as one Dataset Management command whatever their length.
        let mdts = if op == Op::Trim {
            len
        } else {
            self.cfg.interface.mdts.0
        };
        let n_cmds = len.div_ceil(mdts) as u32;
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
        while off < end {
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
            });
            let (_, cpu_end) = self.cores[core].reserve(now, submit_cost);
            // The doorbell is a posted 4-byte MMIO write.
            let (_, bell) = self.link_down.reserve(cpu_end, self.link.wire_time(4));
            self.q.push(bell + lat, Event::Submit { cmd });
            off += clen;
        }
    }

    pub(crate) fn on_host_complete(&mut self, now: SimTime, cmd: u32) {
        let c = self.cmds.remove(cmd);
        let r = self.reqs.get_mut(c.req);
        r.cmds_left -= 1;
        if r.cmds_left > 0 {
            return;
        }
        let r = self.reqs.remove(c.req);
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
        if self.job.spec.rate_iops.is_some() {
            if let Some(arrival) = i.backlog.pop_front() {
                self.submit_request(now, inst, arrival);
            }
        } else if self.may_issue(now) {
            self.issue(now, inst, now);
        }
    }
}
