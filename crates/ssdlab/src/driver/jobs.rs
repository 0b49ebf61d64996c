//! The fio-like job driver: `numjobs` instances, each on its own host queue (instance k:
//! queue k, so core k mod cores and interface queue k mod io_queues), each drawing requests from
//! its own generator. Closed loop: each keeps `iodepth` requests in flight and issues the next
//! when one completes. Open loop (`rate_iops`): each instance's arrivals are evenly spaced, and
//! an arrival that finds `iodepth` in flight waits in the instance's backlog.

use crate::device::{Completion, Device, Driver, Flags, Request};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::workload::job::{Generator, Job, Rw};
use std::collections::VecDeque;

struct Instance {
    inflight: u32,
    gen: Generator,
    /// Open-loop arrivals waiting for a free slot of the iodepth.
    backlog: VecDeque<SimTime>,
}

pub struct JobDriver {
    job: Job,
    insts: Vec<Instance>,
    /// Requests issued so far (arrivals, in open loop).
    issued: u64,
    /// A submit the device refused (cannot happen for a fitted job; kept, not panicked on).
    error: Option<Error>,
}

impl JobDriver {
    /// A driver of `job` on `dev`. NVMe queues must hold what the instances sharing one keep
    /// in flight.
    pub fn new(job: Job, dev: &Device, seed: u64) -> Result<JobDriver> {
        let n_inst = job.spec.numjobs;
        let cap = dev.queue_capacity();
        if cap != u32::MAX {
            let io_queues = dev.config().interface.io_queues;
            // Each SQ holds queue_depth − 1 commands; the instances sharing it must fit.
            let per_sq = n_inst.div_ceil(io_queues).min(n_inst);
            let max_bs = job
                .sizes
                .iter()
                .filter(|s| s.1 > 0)
                .map(|s| s.0)
                .max()
                .unwrap_or(4096);
            // Trims travel as one command whatever their length.
            let trims_only = matches!(job.spec.rw, Rw::Trim | Rw::Randtrim);
            let cmds_per_req = if trims_only {
                1
            } else {
                max_bs.div_ceil(dev.max_cmd_bytes())
            };
            let need = per_sq as u64 * job.spec.iodepth as u64 * cmds_per_req;
            if need > cap as u64 {
                return Err(Error::Job(format!(
                    "job, field `iodepth`: {} instance(s) per queue × iodepth {} × {} command(s) per request need {need} \
                     queue entries, but an NVMe queue of depth {} holds at most {}; lower iodepth or raise interface.queue_depth",
                    per_sq,
                    job.spec.iodepth,
                    cmds_per_req,
                    cap as u64 + 1,
                    cap
                )));
            }
        }
        let insts = (0..n_inst)
            .map(|k| Instance {
                inflight: 0,
                gen: Generator::new(&job, k, seed),
                backlog: VecDeque::new(),
            })
            .collect();
        Ok(JobDriver {
            job,
            insts,
            issued: 0,
            error: None,
        })
    }

    pub fn job(&self) -> &Job {
        &self.job
    }

    /// Set the device's measuring window and issue the first requests (closed loop) or
    /// schedule the first arrivals (open loop), at time 0.
    pub fn start(&mut self, dev: &mut Device) {
        dev.measure_from(self.job.ramp);
        let n = self.insts.len() as u32;
        match self.job.spec.rate_iops {
            Some(rate) => {
                // Instances start staggered across one inter-arrival gap, each at its own rate.
                let gap = (1e12 / rate) as u64;
                for inst in 0..n {
                    dev.wake_at(SimTime(gap * inst as u64 / n as u64), inst);
                }
            }
            None => {
                for _ in 0..self.job.spec.iodepth {
                    for inst in 0..n {
                        if self.may_issue(SimTime::ZERO) {
                            self.issue(dev, SimTime::ZERO, inst, SimTime::ZERO);
                        }
                    }
                }
            }
        }
    }

    /// Why the run ended (once the device is idle), or the error that ended it.
    pub fn finish(&mut self) -> Result<&'static str> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        Ok(if self.job.total_ios.is_some_and(|t| self.issued >= t) {
            "io_count reached"
        } else {
            "runtime reached"
        })
    }

    fn may_issue(&self, now: SimTime) -> bool {
        self.job.total_ios.is_none_or(|t| self.issued < t)
            && self.job.runtime.is_none_or(|r| now < r)
    }

    /// A new request from `inst`, arriving at `arrival`.
    fn issue(&mut self, dev: &mut Device, now: SimTime, inst: u32, arrival: SimTime) {
        self.issued += 1;
        self.submit(dev, now, inst, arrival);
    }

    /// Draw the instance's next request and submit it.
    #[inline]
    fn submit(&mut self, dev: &mut Device, now: SimTime, inst: u32, arrival: SimTime) {
        let i = &mut self.insts[inst as usize];
        let (op, offset, len) = i.gen.next(&self.job);
        i.inflight += 1;
        let r = Request {
            op,
            offset,
            len,
            queue: inst,
            flags: Flags::NONE,
            arrival,
        };
        if let Err(e) = dev.submit(now, r) {
            self.error.get_or_insert(e);
        }
    }
}

impl Driver for JobDriver {
    #[inline]
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        let inst = done.queue;
        let i = &mut self.insts[inst as usize];
        i.inflight -= 1;
        if self.job.spec.rate_iops.is_some() {
            if let Some(arrival) = i.backlog.pop_front() {
                self.submit(dev, now, inst, arrival);
            }
        } else if self.may_issue(now) {
            self.issue(dev, now, inst, now);
        }
    }

    /// An open-loop arrival of instance `inst`.
    fn on_wake(&mut self, dev: &mut Device, now: SimTime, inst: u32) {
        if !self.may_issue(now) {
            return;
        }
        self.issued += 1;
        let rate = self.job.spec.rate_iops.expect("arrivals only in open loop");
        let gap = SimTime((1e12 / rate) as u64);
        dev.wake_at(now + gap, inst);
        if self.insts[inst as usize].inflight < self.job.spec.iodepth {
            self.submit(dev, now, inst, now);
        } else {
            self.insts[inst as usize].backlog.push_back(now);
        }
    }

    fn expected_requests(&self) -> u64 {
        self.job.total_ios.unwrap_or(0)
    }
}
