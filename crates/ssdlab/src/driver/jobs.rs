//! The fio-like job driver: `numjobs` instances, each on its own host queue (instance k:
//! queue k, so core k mod cores and interface queue k mod io_queues), each drawing requests from
//! its own generator. Closed loop: each keeps `iodepth` requests in flight and issues the next
//! when one completes. Open loop (`rate_iops`): each instance's arrivals are evenly spaced, and
//! an arrival that finds `iodepth` in flight waits in the instance's backlog.
//!
//! The I/O engine (`ioengine`, docs/host.md) sets how many of an instance's requests are at
//! the device: all (`libaio`, `io_uring`, and the default), or one (`sync`/`psync`, whose
//! `iodepth` fio caps at 1; `posixaio`, whose `iodepth` requests wait in glibc's queue of the
//! file descriptor behind the one running, here in the backlog, their latency counted from
//! their submission as fio counts it). `iodepth_low` holds the refill until the instance is
//! down to that many; `iodepth_batch` hands the refill to the kernel that many at a time, each
//! batch one system call and one block-layer plug (merging, scheduler order).

use super::zbd::Zbd;
use crate::device::{Completion, Device, Driver, Flags, Request};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::workload::job::{Generator, IoEngine, Job, Rw, ZoneMode};
use std::collections::VecDeque;

/// Most open-loop arrivals one instance may hold waiting (8 bytes each) before the run stops
/// with an error rather than grow without end.
const MAX_BACKLOG: usize = 10_000_000;

struct Instance {
    inflight: u32,
    gen: Generator,
    /// The instance's next request, drawn one request early so that its map entry is on its
    /// way to the cache when it is submitted (`draw`).
    ahead: Option<(Op, u64, u64)>,
    /// Open-loop arrivals waiting for a free slot of the iodepth.
    backlog: VecDeque<SimTime>,
    /// `thinktime`: completions since the instance last paused, and when its pause ends.
    completed: u32,
    think_until: SimTime,
}

/// fio's `thinktime`: after `blocks` completions an instance issues nothing for `time`.
#[derive(Clone, Copy, Debug)]
struct Think {
    time: SimTime,
    blocks: u32,
}

/// The closed loop's host side, from the job's engine options.
#[derive(Clone, Copy, Debug)]
struct Engine {
    kind: IoEngine,
    /// Requests of one instance at the device at most.
    device_depth: u32,
    /// Requests one instance keeps outstanding (at the device or waiting in the backlog).
    outstanding: u32,
    /// Refill when outstanding requests drop to this many.
    low: u32,
    /// Requests per submitting system call.
    batch: u32,
    /// Today's driver exactly: libaio-like, refill at every completion, one at a time.
    plain: bool,
    /// Pauses between requests, if the job has them.
    think: Option<Think>,
}

impl Engine {
    fn of(job: &Job) -> Engine {
        let s = &job.spec;
        let kind = s.engine();
        let outstanding = kind.outstanding(s.iodepth);
        let low = s.iodepth_low.unwrap_or(s.iodepth).min(outstanding);
        let batch = s.iodepth_batch.unwrap_or(1);
        let think = s.thinktime.map(|t| Think {
            time: t.0,
            blocks: s.thinktime_blocks.unwrap_or(1),
        });
        Engine {
            think,
            kind,
            device_depth: kind.device_depth(s.iodepth),
            outstanding,
            low,
            batch,
            // Zoned writes and thinking jobs take the other path (`submit_any`), out of the
            // default one.
            plain: !kind.syscall_per_request()
                && low == outstanding
                && batch == 1
                && s.zonemode != Some(ZoneMode::Zbd)
                && think.is_none(),
        }
    }
}

pub struct JobDriver {
    job: Job,
    engine: Engine,
    insts: Vec<Instance>,
    /// A refill's requests, reused.
    batch: Vec<Request>,
    /// Requests issued so far (arrivals, in open loop).
    issued: u64,
    /// A submit the device refused (cannot happen for a fitted job; kept, not panicked on).
    error: Option<Error>,
    /// The simulated time of the driver's latest call: how far a runtime-bound run has come.
    latest: SimTime,
    /// `zonemode = "zbd"`: where writes go on a zoned drive.
    zbd: Option<Zbd>,
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
            let depth = job.spec.engine().device_depth(job.spec.iodepth);
            let need = per_sq as u64 * depth as u64 * cmds_per_req;
            if need > cap as u64 {
                return Err(Error::Job(format!(
                    "job, field `iodepth`: {} instance(s) per queue × iodepth {} × {} command(s) per request need {need} \
                     queue entries, but an NVMe queue of depth {} holds at most {}; lower iodepth or raise interface.queue_depth",
                    per_sq,
                    depth,
                    cmds_per_req,
                    cap as u64 + 1,
                    cap
                )));
            }
        }
        let zbd = Self::zoned(&job, dev)?;
        let insts = (0..n_inst)
            .map(|k| Instance {
                inflight: 0,
                gen: Generator::new(&job, k, seed),
                ahead: None,
                backlog: VecDeque::new(),
                completed: 0,
                think_until: SimTime::ZERO,
            })
            .collect();
        Ok(JobDriver {
            engine: Engine::of(&job),
            job,
            insts,
            batch: Vec::new(),
            issued: 0,
            error: None,
            latest: SimTime::ZERO,
            zbd,
        })
    }

    /// The zoned writing of `job` on `dev` (fio's `zonemode`): on a zoned drive a job that
    /// writes needs `zonemode = "zbd"`, which needs a zoned drive.
    fn zoned(job: &Job, dev: &Device) -> Result<Option<Zbd>> {
        let s = &job.spec;
        let writes = match s.rw {
            Rw::Read | Rw::Randread | Rw::Trim | Rw::Randtrim => false,
            Rw::Rw | Rw::Randrw => s.rwmixread < 100,
            Rw::Write | Rw::Randwrite => true,
        };
        let zbd = s.zonemode == Some(ZoneMode::Zbd);
        let err = |m: String| Err(Error::Job(format!("job, field `{m}")));
        match (&dev.config().zns, zbd) {
            (None, true) => err(
                "zonemode`: got \"zbd\", expected a zoned drive (a config with a [zns] section)"
                    .into(),
            ),
            (None, false) if s.max_open_zones.is_some() || s.zone_append => err(
                "max_open_zones` or `zone_append`: given without zonemode = \"zbd\", expected them only for a zoned drive"
                    .into(),
            ),
            (None, false) => Ok(None),
            (Some(_), false) if writes => err(format!(
                "zonemode`: absent, expected \"zbd\" for a job that writes ({}) on a zoned drive: its writes go at each zone's write pointer",
                rw_name(s.rw)
            )),
            (Some(_), false) => Ok(None),
            (Some(z), true) => Zbd::new(
                job,
                z.zone_size.0,
                z.capacity_bytes(),
                dev.capacity_bytes(),
            )
            .map(Some),
        }
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
            None if self.engine.plain => {
                for _ in 0..self.job.spec.iodepth {
                    for inst in 0..n {
                        if self.may_issue(SimTime::ZERO) {
                            self.issue(dev, SimTime::ZERO, inst, SimTime::ZERO);
                        }
                    }
                }
            }
            None => {
                for inst in 0..n {
                    self.refill(dev, SimTime::ZERO, inst);
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

    /// Draw the instance's next request and submit it. (Always inlined: the engines' cold
    /// paths call it too, which would otherwise move it out of the default path.)
    #[inline(always)]
    fn submit(&mut self, dev: &mut Device, now: SimTime, inst: u32, arrival: SimTime) {
        dev.host_kernel_request(now, inst);
        let r = self.draw(dev, inst, arrival);
        if let Err(e) = dev.submit(now, r) {
            self.error.get_or_insert(e);
        }
    }

    /// [`JobDriver::submit`] off the plain engine's path, which zoned writes take.
    fn submit_any(&mut self, dev: &mut Device, now: SimTime, inst: u32, arrival: SimTime) {
        if self.zbd.is_none() {
            return self.submit(dev, now, inst, arrival);
        }
        dev.host_kernel_request(now, inst);
        let r = self.draw(dev, inst, arrival);
        self.submit_zoned(dev, now, r);
    }

    /// `zonemode = "zbd"`: a write goes where its zone's write pointer is (or as an append to
    /// the zone), after the zone commands it needs (`driver::zbd`). Those are no I/Os of the
    /// job: the driver does not wait for them, and the drive runs them in order before it.
    #[cold]
    fn submit_zoned(&mut self, dev: &mut Device, now: SimTime, mut r: Request) {
        let zbd = self.zbd.as_mut().expect("zoned");
        let mut res = Ok(0);
        if r.op == Op::Write {
            let p = zbd.place(r.queue, r.offset, r.len);
            for (op, offset) in p.before.into_iter().flatten() {
                let zc = Request {
                    op,
                    offset,
                    len: 0,
                    flags: Flags::NONE,
                    ..r
                };
                res = res.and(dev.submit(now, zc));
            }
            r.op = p.op;
            r.offset = p.offset;
        }
        if let Err(e) = res.and(dev.submit(now, r)) {
            self.error.get_or_insert(e);
        }
    }

    /// The instance's next request, counted in flight. On a map larger than the processor's
    /// caches the one after it is drawn now and its map entry fetched towards the cache: it is
    /// submitted a completion or more from now, time enough for the miss to land, where the
    /// doorbell's own prefetch is a few events ahead of the look-up. The generator is a
    /// function of the job and seed alone, so drawing early changes no request.
    #[inline(always)]
    fn draw(&mut self, dev: &Device, inst: u32, arrival: SimTime) -> Request {
        let i = &mut self.insts[inst as usize];
        let (op, offset, len) = if dev.map_outgrows_caches() {
            let r = match i.ahead.take() {
                Some(r) => {
                    // Its entry was fetched a completion ago: now where it points.
                    dev.prefetch_map_target(r.0, r.1);
                    r
                }
                None => i.gen.next(&self.job),
            };
            let next = i.gen.next(&self.job);
            dev.prefetch_map(next.1);
            i.ahead = Some(next);
            r
        } else {
            i.gen.next(&self.job)
        };
        i.inflight += 1;
        Request {
            op,
            offset,
            len,
            queue: inst,
            flags: Flags::NONE.with_stream(self.job.spec.stream as u8),
            arrival,
        }
    }

    /// Closed loop with an engine other than the plain one: bring the instance's outstanding
    /// requests back up to the engine's number. Those the device cannot hold wait in the
    /// backlog (posixaio); the rest go in system calls of `batch` requests.
    fn refill(&mut self, dev: &mut Device, now: SimTime, inst: u32) {
        let e = self.engine;
        let mut batch = std::mem::take(&mut self.batch);
        loop {
            let i = &self.insts[inst as usize];
            let outstanding = i.inflight + i.backlog.len() as u32;
            if outstanding >= e.outstanding || !self.may_issue(now) {
                break;
            }
            self.issued += 1;
            if i.inflight >= e.device_depth {
                self.insts[inst as usize].backlog.push_back(now);
                continue;
            }
            if e.kind.syscall_per_request() || self.zbd.is_some() {
                // (Zoned writes are placed one at a time, each its own system call.)
                dev.host_syscall(now, inst);
                self.submit_any(dev, now, inst, now);
                continue;
            }
            dev.host_kernel_request(now, inst);
            batch.push(self.draw(dev, inst, now));
            if batch.len() as u32 == e.batch {
                self.flush_batch(dev, now, inst, &mut batch);
            }
        }
        if !batch.is_empty() {
            self.flush_batch(dev, now, inst, &mut batch);
        }
        self.batch = batch;
    }

    /// A completion in the closed loop of an engine other than the plain one (kept out of
    /// the default path's `on_complete`).
    #[cold]
    fn engine_complete(&mut self, dev: &mut Device, now: SimTime, inst: u32) {
        // posixaio: the next request of the descriptor runs (glibc's helper thread's pread or
        // pwrite, one system call).
        let i = &mut self.insts[inst as usize];
        if i.inflight < self.engine.device_depth {
            if let Some(arrival) = i.backlog.pop_front() {
                dev.host_syscall(now, inst);
                self.submit_any(dev, now, inst, arrival);
            }
        }
        if let Some(think) = self.engine.think {
            let i = &mut self.insts[inst as usize];
            i.completed += 1;
            if i.completed >= think.blocks {
                i.completed = 0;
                let Some(until) = now.0.checked_add(think.time.0) else {
                    self.error.get_or_insert(Error::Job(format!(
                        "job, field `thinktime`: a pause of {:.0} s from {:.0} s of simulated time ends past the simulator's clock (2^64 ps, about 213 days)",
                        think.time.as_secs_f64(),
                        now.as_secs_f64()
                    )));
                    return;
                };
                i.think_until = SimTime(until);
                dev.wake_at(i.think_until, inst);
            }
            if now < i.think_until {
                return; // the wake at the pause's end refills
            }
        }
        let i = &self.insts[inst as usize];
        if i.inflight + i.backlog.len() as u32 <= self.engine.low {
            self.refill(dev, now, inst);
        }
    }

    /// One submitting system call of `batch`'s requests; a batch of one goes as it is.
    fn flush_batch(&mut self, dev: &mut Device, now: SimTime, inst: u32, batch: &mut Vec<Request>) {
        dev.host_syscall(now, inst);
        let res = if batch.len() == 1 {
            dev.submit(now, batch[0]).map(|_| ())
        } else {
            dev.submit_batch(now, batch)
        };
        if let Err(e) = res {
            self.error.get_or_insert(e);
        }
        batch.clear();
    }
}

/// The job's `rw` as written.
fn rw_name(rw: Rw) -> String {
    serde_json::to_value(rw)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl Driver for JobDriver {
    #[inline]
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        self.latest = now;
        let inst = done.queue;
        // A zone command the driver sent before a write is not one of the job's I/Os (the
        // plain engine sends none).
        if self.job.spec.rate_iops.is_some() {
            if done.op.is_zone_management() {
                return;
            }
            let i = &mut self.insts[inst as usize];
            i.inflight -= 1;
            if let Some(arrival) = i.backlog.pop_front() {
                self.submit_any(dev, now, inst, arrival);
            }
        } else if self.engine.plain {
            self.insts[inst as usize].inflight -= 1;
            if self.may_issue(now) {
                self.issue(dev, now, inst, now);
            }
        } else if !done.op.is_zone_management() {
            self.insts[inst as usize].inflight -= 1;
            self.engine_complete(dev, now, inst);
        }
    }

    /// An open-loop arrival of instance `inst`, or in a closed loop the end of its `thinktime`.
    fn on_wake(&mut self, dev: &mut Device, now: SimTime, inst: u32) {
        self.latest = now;
        if !self.may_issue(now) || self.error.is_some() {
            return;
        }
        if self.job.spec.rate_iops.is_none() {
            self.refill(dev, now, inst);
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
        if i.inflight < self.engine.device_depth {
            if self.engine.kind.syscall_per_request() || self.engine.batch > 1 {
                dev.host_syscall(now, inst);
            }
            self.submit_any(dev, now, inst, now);
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

    /// The job's request count; for a runtime-bound job (fio's `time_based` too, whose count is
    /// a bound never reached), the requests issued so far scaled by the runtime over the
    /// simulated time so far, so that a progress bar shows the fraction of the runtime done;
    /// once the runtime is over, the requests issued (an open loop's backlog still drains).
    fn expected_requests(&self) -> u64 {
        let t = self.latest.ps();
        let by_time = self
            .job
            .runtime
            .filter(|_| t > 0 && self.issued > 0)
            .map(|r| {
                if t >= r.ps() {
                    return self.issued;
                }
                let estimate = self.issued as u128 * r.ps() as u128 / t as u128;
                estimate.min(u64::MAX as u128) as u64
            });
        match (self.job.total_ios, by_time) {
            (Some(n), Some(e)) => n.min(e),
            (Some(n), None) => n,
            (None, Some(e)) => e,
            (None, None) => 0,
        }
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

    /// fio's `thinktime`: with one request in flight, each request is issued a think after
    /// the previous one completed (fio's sync loop: I/O, think, I/O), and never earlier.
    #[test]
    fn thinktime_pauses_an_instance_after_each_completion() {
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randread","bs":"4KiB","iodepth":1,"io_count":50,"thinktime":"100us"}"#,
        );
        drv.start(&mut dev);
        assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
        let mut recs = dev.take_records().unwrap();
        recs.sort_by_key(|r| r.issue_ps);
        assert_eq!(recs.len(), 50);
        for w in recs.windows(2) {
            let ready = w[0].issue_ps + w[0].latency_ps + 100_000_000;
            assert_eq!(
                w[1].issue_ps, ready,
                "issued exactly one think after the completion"
            );
        }
        // thinktime_blocks=4: a pause after every fourth completion only.
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randread","bs":"4KiB","iodepth":1,"io_count":40,"thinktime":"1ms","thinktime_blocks":4}"#,
        );
        drv.start(&mut dev);
        assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
        let mut recs = dev.take_records().unwrap();
        recs.sort_by_key(|r| r.issue_ps);
        let gaps: Vec<u64> = recs
            .windows(2)
            .map(|w| w[1].issue_ps - (w[0].issue_ps + w[0].latency_ps))
            .collect();
        let pauses = gaps.iter().filter(|&&g| g == 1_000_000_000).count();
        assert_eq!(
            pauses, 9,
            "39 gaps, a pause after completions 4, 8, ..., 36: {gaps:?}"
        );
        assert!(
            gaps.iter().all(|&g| g == 0 || g == 1_000_000_000),
            "{gaps:?}"
        );
    }

    /// A runtime-bound job reports progress as a fraction of its runtime (issue 45, point 11:
    /// it reported no total, and fio's `time_based`, whose count is a bound never reached, a
    /// total of 2^62), closed and open loop.
    #[test]
    fn a_runtime_bound_job_reports_its_progress_by_simulated_time() {
        for job in [
            r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms"}"#,
            r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms","io_count":4611686018427387904}"#,
            r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms","rate_iops":20000}"#,
            // Arrivals faster than the device: the backlog drains long after the runtime.
            r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"2ms","rate_iops":2000000}"#,
        ] {
            let (mut dev, mut drv) = setup(&[], job);
            drv.start(&mut dev);
            let mut reports = Vec::new();
            assert!(dev
                .run(&mut drv, 64, &mut |done, total| {
                    reports.push((done, total));
                    true
                })
                .unwrap());
            assert!(reports.len() > 10, "{job}: {} reports", reports.len());
            let completed = dev.host().completed();
            let fractions: Vec<f64> = reports
                .iter()
                .map(|&(done, total)| {
                    assert!(total > 0 && total < 4 * completed, "{job}: {done}/{total}");
                    assert!(done <= total, "{job}: {done}/{total}");
                    done as f64 / total as f64
                })
                .collect();
            // The fraction rises with the simulated time and ends near 1.
            let last = *fractions.last().unwrap();
            assert!(
                fractions[0] < 0.5 && last > 0.8 && last <= 1.05,
                "{job}: {fractions:?}"
            );
        }
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
        let lat = dev.host().latency(crate::request::Op::Write);
        assert!(lat.summary().max > 500.0, "{:?}", lat.summary());
    }

    /// Runs `drv` to the end on `dev`, noting the device's requests in flight after each
    /// completion the driver handled.
    fn watch(dev: &mut Device, drv: JobDriver) -> (Watch, Vec<usize>) {
        struct Seq(Watch, Vec<usize>);
        impl Driver for Seq {
            fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
                self.0.on_complete(dev, now, done);
                self.1.push(dev.host().in_flight());
            }
        }
        let mut s = Seq(
            Watch {
                inner: drv,
                most_in_flight: 0,
                completions: 0,
            },
            Vec::new(),
        );
        assert!(dev.run(&mut s, u64::MAX, &mut |_, _| true).unwrap());
        (s.0, s.1)
    }

    /// Hand-worked: glibc runs one request of a descriptor at a time, so a posixaio job of
    /// iodepth 256 on one file has 1 request at the device and 255 waiting behind it.
    #[test]
    fn posixaio_at_iodepth_256_keeps_one_request_at_the_device() {
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"read","bs":"4KiB","iodepth":256,"ioengine":"posixaio","io_count":400}"#,
        );
        drv.start(&mut dev);
        assert_eq!(dev.host().in_flight(), 1);
        assert_eq!(drv.insts[0].backlog.len(), 255);
        let (w, seq) = watch(&mut dev, drv);
        assert_eq!(w.most_in_flight, 1);
        assert_eq!(w.completions, 400);
        assert!(seq.iter().all(|&n| n <= 1));
        // Latency counts from the submission, so the queue behind the running request shows.
        let lat = dev.host().latency(crate::request::Op::Read).summary();
        assert!(lat.mean > 100.0 * lat.min, "{lat:?}");
    }

    #[test]
    fn psync_at_iodepth_32_keeps_one_in_flight_and_none_waiting() {
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randread","bs":"4KiB","iodepth":32,"ioengine":"psync","io_count":50}"#,
        );
        drv.start(&mut dev);
        assert_eq!(dev.host().in_flight(), 1);
        assert!(drv.insts[0].backlog.is_empty());
        let (w, _) = watch(&mut dev, drv);
        assert_eq!((w.most_in_flight, w.completions), (1, 50));
        // libaio at the same depth keeps 32.
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randread","bs":"4KiB","iodepth":32,"ioengine":"libaio","io_count":50}"#,
        );
        drv.start(&mut dev);
        assert_eq!(dev.host().in_flight(), 32);
    }

    /// iodepth 8, iodepth_low 3: the queue drains from 8 to 3 before it is filled again.
    #[test]
    fn iodepth_low_lets_the_queue_drain_before_refilling() {
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randread","bs":"4KiB","iodepth":8,"iodepth_low":3,"io_count":100}"#,
        );
        drv.start(&mut dev);
        let (_, seq) = watch(&mut dev, drv);
        assert_eq!(&seq[..12], &[7, 6, 5, 4, 8, 7, 6, 5, 4, 8, 7, 6]);
        // Without it, every completion is refilled at once.
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"randread","bs":"4KiB","iodepth":8,"io_count":100}"#,
        );
        drv.start(&mut dev);
        let (_, seq) = watch(&mut dev, drv);
        assert!(seq[..90].iter().all(|&n| n == 8), "{seq:?}");
    }

    /// Two adjacent 4 KiB writes handed to the kernel in one call become one 8 KiB request at
    /// the device, and complete as two.
    #[test]
    fn a_batch_of_adjacent_writes_is_merged_into_one_request() {
        let (mut dev, mut drv) = setup(
            &[],
            r#"{"rw":"write","bs":"4KiB","iodepth":2,"iodepth_batch":2,"iodepth_low":1,"io_count":2}"#,
        );
        drv.start(&mut dev);
        assert_eq!(dev.host().in_flight(), 1, "one merged request");
        let (w, _) = watch(&mut dev, drv);
        assert_eq!(w.completions, 2);
        let recs = dev.take_records().unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].offset, recs[1].offset), (0, 4096));
        assert_eq!(recs[0].latency_ps, recs[1].latency_ps);
        // With nomerges, two requests.
        let (mut dev, mut drv) = setup(
            &["host.nomerges=true"],
            r#"{"rw":"write","bs":"4KiB","iodepth":2,"iodepth_batch":2,"iodepth_low":1,"io_count":2}"#,
        );
        drv.start(&mut dev);
        assert_eq!(dev.host().in_flight(), 2);
    }

    /// A system call of 10 µs before each psync request: with one request at a time on an
    /// otherwise idle core, every latency grows by exactly 10 µs.
    #[test]
    fn a_syscall_cost_adds_to_each_synchronous_request() {
        let mean = |over: &[&str]| {
            let (mut dev, mut drv) = setup(
                over,
                r#"{"rw":"randread","bs":"4KiB","ioengine":"psync","io_count":40}"#,
            );
            drv.start(&mut dev);
            watch(&mut dev, drv);
            dev.host().latency(crate::request::Op::Read).summary().mean
        };
        let base = mean(&[]);
        let with = mean(&["host.syscall_cost=\"10us\""]);
        assert!((with - base - 10.0).abs() < 1e-6, "{base} {with}");
    }

    /// The kernel's layers above the driver, per request: 3 + 4 + 2 µs of file system, block
    /// layer and scheduler add 9 µs to each psync request, and as instruction counts at 1 GHz
    /// the same; with libaio batches of 4, each of the 4 requests pays them too.
    #[test]
    fn fs_block_and_scheduler_costs_add_to_each_request() {
        let mean = |over: &[&str], job: &str| {
            let (mut dev, mut drv) = setup(over, job);
            drv.start(&mut dev);
            watch(&mut dev, drv);
            (
                dev.host().latency(crate::request::Op::Read).summary().mean,
                dev.host_cpu().busy().map(|b| b.as_secs_f64()).sum::<f64>(),
            )
        };
        let psync = r#"{"rw":"randread","bs":"4KiB","ioengine":"psync","io_count":40}"#;
        let (base, _) = mean(&[], psync);
        let times = [
            "host.fs_cost=\"3us\"",
            "host.block_cost=\"4us\"",
            "host.sched_cost=\"2us\"",
        ];
        let (with, _) = mean(&times, psync);
        assert!((with - base - 9.0).abs() < 1e-6, "{base} {with}");
        let counts = [
            "host.clock=\"1GHz\"",
            "host.fs_instructions=3000",
            "host.block_instructions=4000",
            "host.sched_instructions=2000",
        ];
        let (with_counts, _) = mean(&counts, psync);
        assert!((with_counts - with).abs() < 1e-6, "{with} {with_counts}");
        let batched =
            r#"{"rw":"randread","bs":"4KiB","iodepth":4,"iodepth_batch":4,"io_count":40}"#;
        let (_, busy0) = mean(&[], batched);
        let (_, busy1) = mean(&times, batched);
        assert!(
            ((busy1 - busy0) - 40.0 * 9e-6).abs() < 1e-9,
            "{busy0} {busy1}"
        );
    }

    /// At max_sectors 1024 (512 KiB) below a 1 MiB MDTS, a 1 MiB read is two commands.
    #[test]
    fn max_sectors_below_mdts_splits_a_1mib_request_in_two() {
        let (mut dev, mut drv) = setup(
            &["interface.mdts=\"1MiB\"", "host.max_sectors=1024"],
            r#"{"rw":"read","bs":"1MiB","iodepth":1,"io_count":1}"#,
        );
        assert_eq!(dev.max_cmd_bytes(), 512 * 1024);
        drv.start(&mut dev);
        assert_eq!(dev.host().in_flight(), 1);
        let (w, _) = watch(&mut dev, drv);
        assert_eq!(w.completions, 1);
        let (dev2, _) = setup(&["interface.mdts=\"1MiB\""], r#"{"rw":"read","bs":"1MiB"}"#);
        assert_eq!(dev2.max_cmd_bytes(), 1 << 20);
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
