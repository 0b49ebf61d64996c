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

/// Most open-loop arrivals one instance may hold waiting (8 bytes each) before the run stops
/// with an error rather than grow without end.
const MAX_BACKLOG: usize = 10_000_000;

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
            flags: Flags::NONE.with_stream(self.job.spec.stream as u8),
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
        if !self.may_issue(now) || self.error.is_some() {
            return;
        }
        self.issued += 1;
        let rate = self.job.spec.rate_iops.expect("arrivals only in open loop");
        // The job's checks keep the gap between 1 ps and 10^6 s.
        let gap = (1e12 / rate) as u64;
        let Some(next) = now.0.checked_add(gap) else {
            self.error = Some(Error::Job(format!(
                "job, field `rate_iops`: at {rate} requests per second the next arrival would come after {:.0} s of simulated time, past the simulator's clock (2^64 ps, about 213 days); raise rate_iops or lower io_count",
                now.as_secs_f64()
            )));
            return;
        };
        dev.wake_at(SimTime(next), inst);
        let i = &mut self.insts[inst as usize];
        if i.inflight < self.job.spec.iodepth {
            self.submit(dev, now, inst, now);
        } else if i.backlog.len() >= MAX_BACKLOG {
            // Arrivals faster than the device serves them would queue without end.
            self.error = Some(Error::Job(format!(
                "job, field `rate_iops`: {rate} requests per second is more than the device serves at iodepth {}: {MAX_BACKLOG} arrivals of one job instance were waiting at {:.6} s of simulated time; lower rate_iops or raise iodepth",
                self.job.spec.iodepth,
                now.as_secs_f64()
            )));
        } else {
            i.backlog.push_back(now);
        }
    }

    fn expected_requests(&self) -> u64 {
        self.job.total_ios.unwrap_or(0)
    }

    fn finished(&self, now: SimTime) -> bool {
        !self.may_issue(now) || self.error.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;
    use crate::workload::JobSpec;

    fn setup(cfg_over: &[&str], job: &str) -> (Device, JobDriver) {
        let ov: Vec<String> = cfg_over.iter().map(|s| s.to_string()).collect();
        let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
        let spec = JobSpec::from_json(job).unwrap();
        let job = spec.fit(cfg.logical_bytes()).unwrap();
        let mut dev = Device::new(&cfg, 1).unwrap();
        dev.record_requests();
        let drv = JobDriver::new(job, &dev, 1).unwrap();
        (dev, drv)
    }

    /// Wraps the job driver to look at the device at every completion.
    struct Watch {
        inner: JobDriver,
        most_in_flight: usize,
        completions: u64,
    }

    impl Driver for Watch {
        fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
            self.completions += 1;
            self.inner.on_complete(dev, now, done);
            self.most_in_flight = self.most_in_flight.max(dev.host().in_flight());
        }
        fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
            self.inner.on_wake(dev, now, token);
        }
    }

    #[test]
    fn closed_loop_keeps_iodepth_requests_in_flight_per_instance() {
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randread","bs":"4KiB","iodepth":3,"numjobs":2,"io_count":200}"#,
        );
        drv.start(&mut dev);
        assert_eq!(dev.host().in_flight(), 6);
        let mut w = Watch {
            inner: drv,
            most_in_flight: 0,
            completions: 0,
        };
        assert!(dev.run(&mut w, u64::MAX, &mut |_, _| true).unwrap());
        assert_eq!(
            w.most_in_flight, 6,
            "refilled to iodepth × numjobs, never more"
        );
        assert_eq!(w.completions, 200);
        assert_eq!(w.inner.finish().unwrap(), "io_count reached");
    }

    /// Open loop: each instance's arrivals are 1/rate apart, instances staggered over the first
    /// gap; an arrival that finds iodepth requests in flight waits, and its latency counts from
    /// its arrival.
    #[test]
    fn open_loop_arrivals_follow_the_rate_and_wait_in_a_backlog() {
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randwrite","bs":"4KiB","iodepth":1,"numjobs":2,"rate_iops":20000,"io_count":40}"#,
        );
        drv.start(&mut dev);
        assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
        let mut issues: Vec<u64> = dev
            .take_records()
            .unwrap()
            .iter()
            .map(|r| r.issue_ps)
            .collect();
        issues.sort_unstable();
        // 20,000 IOPS per instance: 50 µs apart; the second instance 25 µs after the first.
        let expected: Vec<u64> = (0..20u64)
            .flat_map(|k| [k * 50_000_000, k * 50_000_000 + 25_000_000])
            .collect();
        assert_eq!(issues, expected);
        // TLC programs take hundreds of µs: with iodepth 1, arrivals had to wait.
        let lat = dev.host().latency(crate::workload::Op::Write);
        assert!(lat.summary().max > 500.0, "{:?}", lat.summary());
    }

    #[test]
    fn nvme_queues_too_small_for_the_job_are_refused_naming_iodepth() {
        let cfg = SsdConfig::resolve(
            "small-tlc",
            &[
                "interface.queue_depth=16".into(),
                "interface.io_queues=1".into(),
            ],
        )
        .unwrap();
        let spec =
            JobSpec::from_json(r#"{"rw":"randread","bs":"4KiB","iodepth":8,"numjobs":2}"#).unwrap();
        let job = spec.fit(cfg.logical_bytes()).unwrap();
        let dev = Device::new(&cfg, 1).unwrap();
        let e = JobDriver::new(job, &dev, 1).err().unwrap().to_string();
        assert!(e.contains("field `iodepth`"), "{e}");
        assert!(e.contains("need 16 queue entries"), "{e}");
        assert!(e.contains("holds at most 15"), "{e}");
    }
}
