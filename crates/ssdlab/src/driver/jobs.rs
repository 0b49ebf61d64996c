//! The fio-like job driver: one job, or several running together as flows (fio's jobs of one
//! group, MQSim's flows), each with its own `numjobs` instances. Every instance has its own host
//! queue (instance k of the whole run: queue k, so core k mod cores and interface queue k mod
//! io_queues), drawing requests from its own generator. Closed loop: each keeps `iodepth`
//! requests in flight and issues the next when one completes. Open loop (`rate_iops`): each
//! instance's arrivals are evenly spaced, and an arrival that finds `iodepth` in flight waits in
//! the instance's backlog.
//!
//! Flows: those of one `group` run at once on the device, each started `startdelay` after its
//! group, its `runtime` and `ramp` counted from its own start; the groups run one after another
//! in ascending order, a group starting when every flow of the one before has stopped issuing
//! and its last request completed (fio's `stonewall`), on the device as the group before left
//! it. With several flows each flow's requests are also measured on their own (`FlowOutcome`).
//!
//! The I/O engine (`ioengine`, docs/host.md) sets how many of an instance's requests are at
//! the device: all (`libaio`, `io_uring`, and the default), or one (`sync`/`psync`, whose
//! `iodepth` fio caps at 1; `posixaio`, whose `iodepth` requests wait in glibc's queue of the
//! file descriptor behind the one running, here in the backlog, their latency counted from
//! their submission as fio counts it). `iodepth_low` holds the refill until the instance is
//! down to that many; `iodepth_batch` hands the refill to the kernel that many at a time, each
//! batch one system call and one block-layer plug (merging, scheduler order).
//!
//! `latency_target` (fio's queue-depth search, `driver::depth_search`): each instance of the
//! job keeps at most the depth its search allows in flight, raising it window by window while
//! the target is met; once found, one more window at that depth is measured on its own (the
//! figures restart there, for a job of one instance) and the instance stops.

use super::depth_search::{DepthSearch, Step};
use super::zbd::Zbd;
use crate::config::PriorityClass;
use crate::device::{Completion, Device, Driver, Flags, Request};
use crate::error::{Error, Result};
use crate::error::{Invalid, JOB};
use crate::request::Op;
use crate::sim::{Rng, SimTime};
use crate::stats::LatencyStats;
use crate::workload::job::{Generator, IoEngine, Job, RateProcess, ZoneMode};
use std::collections::VecDeque;

mod build;

/// Most open-loop arrivals one instance may hold waiting (8 bytes each) before the run stops
/// with an error rather than grow without end.
const MAX_BACKLOG: usize = 10_000_000;

/// A wake token with this bit set starts flow `token & !START` (its `startdelay` is over); the
/// others name an instance.
const START: u32 = 1 << 31;

struct Instance {
    /// Its flow, an index into `JobDriver::flows`.
    flow: u32,
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
    /// Requests it may still issue: its own count under `instances = "clones"` (fio's
    /// `number_ios` and `size` are each clone's), else a count never reached (the flow's
    /// total bounds its instances together).
    remaining: u64,
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
                && think.is_none()
                && s.latency_target.is_none(),
        }
    }
}

/// One job of the run: its instances, when it started and how far it has come.
struct Flow {
    job: Job,
    engine: Engine,
    /// Its instances are the driver's `first..first + numjobs` (their host queues too).
    first: u32,
    /// Requests issued so far (arrivals, in open loop).
    issued: u64,
    /// Whether it has started, and when (its group's start plus its `startdelay`).
    started: bool,
    start: SimTime,
    /// When it stops issuing: its start plus its runtime (None: no runtime).
    end: Option<SimTime>,
    /// Its requests that arrive from then on are measured: its start plus its ramp.
    measure_from: SimTime,
    /// `zonemode = "zbd"`: where writes go on a zoned drive.
    zbd: Option<Zbd>,
    /// Its own measured requests by op, and its last completion (several flows only).
    lat: Vec<LatencyStats>,
    last_completion: SimTime,
    /// `latency_target`: its instances whose search has not ended, and whether the search
    /// ended the flow.
    searching: u32,
    depth_found: bool,
}

/// A flow's own figures at the end of a run of several: what `run_flows` reports per flow.
pub struct FlowOutcome<'a> {
    pub job: &'a Job,
    pub start: SimTime,
    pub measure_from: SimTime,
    pub last_completion: SimTime,
    /// Latencies of its measured requests, by `Op::index`.
    pub lat: &'a [LatencyStats],
    /// `latency_target`: the depth its search is at (its last instance's, as fio's
    /// `group_reporting` keeps the last job's).
    pub latency_depth: Option<u32>,
}

pub struct JobDriver {
    flows: Vec<Flow>,
    insts: Vec<Instance>,
    /// The flows of each group, groups in the order they run.
    groups: Vec<Vec<u32>>,
    /// The group running.
    group: usize,
    /// More than one flow: each is measured on its own, and errors name it.
    several: bool,
    /// A group is still to start after the one running (its end is watched for).
    staged: bool,
    /// A refill's requests, reused.
    batch: Vec<Request>,
    /// A submit the device refused (cannot happen for a fitted job; kept, not panicked on).
    error: Option<Error>,
    /// The simulated time of the driver's latest call: how far a runtime-bound run has come.
    latest: SimTime,
    /// Under weighted round robin: each NVMe SQ's priority class, from the flows that submit
    /// on it, given to the device at the start (None: every queue alike).
    queue_classes: Option<Vec<PriorityClass>>,
    /// `latency_target`: each instance's depth search (None for an instance of a job
    /// without); empty when no job has a target.
    searches: Vec<Option<DepthSearch>>,
    /// `rate_process = "poisson"`: each instance's stream of exponential gaps between
    /// arrivals (unused for an instance of a linear job); empty when no job has one.
    arrivals: Vec<Rng>,
}

impl JobDriver {
    /// The first (or only) job.
    pub fn job(&self) -> &Job {
        &self.flows[0].job
    }

    /// Each flow's own figures (measured only when the run has several flows).
    pub fn outcomes(&self) -> Vec<FlowOutcome<'_>> {
        self.flows
            .iter()
            .map(|f| FlowOutcome {
                job: &f.job,
                start: f.start,
                measure_from: f.measure_from,
                last_completion: f.last_completion,
                lat: &f.lat,
                latency_depth: (f.first..f.first + f.job.spec.numjobs)
                    .rev()
                    .find_map(|k| self.searches.get(k as usize)?.as_ref())
                    .map(DepthSearch::depth),
            })
            .collect()
    }

    /// The flow whose instance sent on host queue `queue`.
    pub fn flow_of_queue(&self, queue: u32) -> usize {
        self.insts[queue as usize].flow as usize
    }

    /// Set the device's measuring window and start the first group at time 0: its flows
    /// issue their first requests (closed loop) or schedule their first arrivals (open loop),
    /// each after its `startdelay`. The device measures from the earliest end of a ramp in the
    /// first group; each flow's own figures from the end of its own.
    pub fn start(&mut self, dev: &mut Device) {
        if let Some(classes) = &self.queue_classes {
            dev.set_queue_classes(classes);
        }
        let first_measured = self.groups[0]
            .iter()
            .map(|&f| {
                let s = &self.flows[f as usize].job;
                s.spec.startdelay.map_or(SimTime::ZERO, |d| d.0) + s.ramp
            })
            .min()
            .unwrap_or(SimTime::ZERO);
        dev.measure_from(first_measured);
        self.start_group(dev, SimTime::ZERO);
    }

    /// Start the flows of the running group at `now`, or schedule their start.
    fn start_group(&mut self, dev: &mut Device, now: SimTime) {
        for idx in 0..self.groups[self.group].len() {
            let f = self.groups[self.group][idx];
            match self.flows[f as usize].job.spec.startdelay {
                Some(d) if d.0 > SimTime::ZERO => dev.wake_at(now + d.0, START | f),
                _ => self.start_flow(dev, f as usize, now),
            }
        }
    }

    /// Flow `f` starts at `now`.
    fn start_flow(&mut self, dev: &mut Device, f: usize, now: SimTime) {
        let fl = &mut self.flows[f];
        fl.started = true;
        fl.start = now;
        fl.end = fl.job.runtime.map(|r| now + r);
        fl.measure_from = now + fl.job.ramp;
        let (first, n) = (fl.first, fl.job.spec.numjobs);
        let insts = first..first + n;
        if fl.job.spec.latency_target.is_some() {
            fl.searching = n;
            for k in insts.clone() {
                self.searches[k as usize] =
                    DepthSearch::new(&fl.job, fl.engine.outstanding, fl.measure_from);
            }
        }
        match fl.job.spec.rate_iops {
            Some(rate) => {
                // Instances start staggered across one inter-arrival gap, each at its own rate
                // (a Poisson process's first arrival is one gap of its own after the start).
                let gap = (1e12 / rate) as u64;
                let poisson = fl.job.spec.rate_process == Some(RateProcess::Poisson);
                for (j, inst) in insts.enumerate() {
                    let first = if poisson {
                        self.poisson_gap(inst, rate)
                    } else {
                        gap * j as u64 / n as u64
                    };
                    dev.wake_at(now + SimTime(first), inst);
                }
            }
            None if fl.engine.plain => {
                for _ in 0..fl.job.spec.iodepth {
                    for inst in insts.clone() {
                        if self.may_issue(f, inst, now) {
                            self.issue(dev, now, inst, now);
                        }
                    }
                }
            }
            None => {
                for inst in insts {
                    self.refill(dev, now, inst);
                }
            }
        }
    }

    /// Why the run ended (once the device is idle), or the error that ended it.
    pub fn finish(&mut self) -> Result<&'static str> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.several {
            return Ok("all flows finished");
        }
        let fl = &self.flows[0];
        Ok(if fl.depth_found {
            "latency target's depth found"
        } else if fl.job.total_ios.is_some_and(|t| fl.issued >= t) {
            "io_count reached"
        } else {
            "runtime reached"
        })
    }

    /// Whether flow `f` may issue another request (its total and runtime allow it).
    #[inline]
    fn flow_may_issue(&self, f: usize, now: SimTime) -> bool {
        let fl = &self.flows[f];
        fl.job.total_ios.is_none_or(|t| fl.issued < t) && fl.end.is_none_or(|e| now < e)
    }

    /// Whether instance `inst` of flow `f` may issue another request: its flow may, and it
    /// has not issued its own count (fio's clones).
    #[inline]
    fn may_issue(&self, f: usize, inst: u32, now: SimTime) -> bool {
        self.insts[inst as usize].remaining > 0 && self.flow_may_issue(f, now)
    }

    /// Count a request of instance `inst` of flow `f` as issued.
    #[inline]
    fn count_issue(&mut self, f: usize, inst: u32) {
        self.flows[f].issued += 1;
        self.insts[inst as usize].remaining -= 1;
    }

    /// A new request from `inst`, arriving at `arrival`.
    fn issue(&mut self, dev: &mut Device, now: SimTime, inst: u32, arrival: SimTime) {
        let f = self.insts[inst as usize].flow as usize;
        self.count_issue(f, inst);
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
        let f = self.insts[inst as usize].flow as usize;
        if self.flows[f].zbd.is_none() {
            return self.submit(dev, now, inst, arrival);
        }
        dev.host_kernel_request(now, inst);
        let r = self.draw(dev, inst, arrival);
        self.submit_zoned(dev, now, f, r);
    }

    /// `zonemode = "zbd"`: a write goes where its zone's write pointer is (or as an append to
    /// the zone), after the zone commands it needs (`driver::zbd`). Those are no I/Os of the
    /// job: the driver does not wait for them, and the drive runs them in order before it.
    #[cold]
    fn submit_zoned(&mut self, dev: &mut Device, now: SimTime, f: usize, mut r: Request) {
        let fl = &mut self.flows[f];
        let zbd = fl.zbd.as_mut().expect("zoned");
        let mut res = Ok(0);
        if r.op == Op::Write {
            // The zones are shared out among the flow's own instances.
            let p = zbd.place(r.queue - fl.first, r.offset, r.len);
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
        let job = &self.flows[i.flow as usize].job;
        let (op, offset, len) = if dev.map_outgrows_caches() {
            let r = match i.ahead.take() {
                Some(r) => {
                    // Its entry was fetched a completion ago: now where it points.
                    dev.prefetch_map_target(r.0, r.1);
                    r
                }
                None => i.gen.next(job),
            };
            let next = i.gen.next(job);
            dev.prefetch_map(next.1);
            i.ahead = Some(next);
            r
        } else {
            i.gen.next(job)
        };
        i.inflight += 1;
        // Writes take their placement identifier in turn (`placement_ids`); reads carry the
        // job's stream, which places nothing.
        let stream = if op == Op::Write {
            i.gen.placement(job)
        } else {
            job.spec.stream as u8
        };
        Request {
            op,
            offset,
            len,
            queue: inst,
            flags: Flags::NONE.with_stream(stream),
            arrival,
        }
    }

    /// Closed loop with an engine other than the plain one: bring the instance's outstanding
    /// requests back up to the engine's number. Those the device cannot hold wait in the
    /// backlog (posixaio); the rest go in system calls of `batch` requests.
    fn refill(&mut self, dev: &mut Device, now: SimTime, inst: u32) {
        let f = self.insts[inst as usize].flow as usize;
        let e = self.flows[f].engine;
        let zoned = self.flows[f].zbd.is_some();
        // The depth its latency-target search allows, if it has one.
        let most = match self.searches.get(inst as usize) {
            Some(Some(s)) => e.outstanding.min(s.depth_allowed()),
            _ => e.outstanding,
        };
        let mut batch = std::mem::take(&mut self.batch);
        loop {
            let i = &self.insts[inst as usize];
            let outstanding = i.inflight + i.backlog.len() as u32;
            if outstanding >= most || !self.may_issue(f, inst, now) {
                break;
            }
            let at_device_depth = i.inflight >= e.device_depth;
            self.count_issue(f, inst);
            if at_device_depth {
                self.insts[inst as usize].backlog.push_back(now);
                continue;
            }
            if e.kind.syscall_per_request() || zoned {
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
    fn engine_complete(&mut self, dev: &mut Device, now: SimTime, inst: u32, arrival: SimTime) {
        let f = self.insts[inst as usize].flow as usize;
        let engine = self.flows[f].engine;
        if matches!(self.searches.get(inst as usize), Some(Some(_))) {
            self.search_complete(dev, now, inst, f, arrival);
        }
        // posixaio: the next request of the descriptor runs (glibc's helper thread's pread or
        // pwrite, one system call).
        let i = &mut self.insts[inst as usize];
        if i.inflight < engine.device_depth {
            if let Some(arrival) = i.backlog.pop_front() {
                dev.host_syscall(now, inst);
                self.submit_any(dev, now, inst, arrival);
            }
        }
        if let Some(think) = engine.think {
            let i = &mut self.insts[inst as usize];
            i.completed += 1;
            if i.completed >= think.blocks {
                i.completed = 0;
                let Some(until) = now.0.checked_add(think.time.0) else {
                    let e = Error::bad_job(Invalid::says(JOB, "thinktime", format!("a pause of {:.0} s from {:.0} s of simulated time ends past the simulator's clock (2^64 ps, about 213 days)", think.time.as_secs_f64(), now.as_secs_f64())));
                    let e = name_flow(e, f, &self.flows[f].job, self.several);
                    self.error.get_or_insert(e);
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
        if i.inflight + i.backlog.len() as u32 <= engine.low {
            self.refill(dev, now, inst);
        }
    }

    /// `latency_target`: a completion of instance `inst` (of flow `f`) judged by its depth
    /// search; a drain that ends starts the next window (the final one restarting the flow's
    /// figures), and a search that ends stops the instance.
    fn search_complete(
        &mut self,
        dev: &mut Device,
        now: SimTime,
        inst: u32,
        f: usize,
        arrival: SimTime,
    ) {
        let measuring = now >= self.flows[f].measure_from;
        let (inflight, waiting) = {
            let i = &self.insts[inst as usize];
            (i.inflight, i.backlog.len())
        };
        let Some(s) = self.searches[inst as usize].as_mut() else {
            return;
        };
        let was_done = s.done();
        let latency = now - arrival;
        if s.on_completion(now, latency.ps(), measuring) == Step::Fatal {
            let target = self.flows[f]
                .job
                .spec
                .latency_target
                .map_or(0.0, |t| t.0.as_us_f64());
            let e = Error::bad_job(Invalid::says(JOB, "latency_target", format!("a request took {:.1} µs at queue depth 1 ({:.6} s of simulated time), over the target of {target:.1} µs; with latency_percentile 100 no depth meets it (fio ends the job with ETIMEDOUT); raise latency_target or lower latency_percentile", latency.as_us_f64(), now.as_secs_f64())));
            self.error.get_or_insert(self.flow_error(f, e));
            return;
        }
        if s.draining() && inflight == 0 && waiting == 0 && s.drained(now) {
            self.restart_measuring(dev, f, now);
        }
        let ended = !was_done
            && self.searches[inst as usize]
                .as_ref()
                .is_some_and(DepthSearch::done);
        if ended {
            let fl = &mut self.flows[f];
            fl.searching -= 1;
            if fl.searching == 0 {
                // Every instance found its depth and ran its final window: the flow ends.
                fl.depth_found = true;
                fl.end = Some(fl.end.map_or(now, |e| e.min(now)));
            }
        }
    }

    /// The final window of a latency-target search: the flow's figures restart at `now` (fio
    /// resets the job's statistics there). A flow of several instances keeps its figures from
    /// its ramp's end: each instance's final window starts at its own time.
    #[cold]
    fn restart_measuring(&mut self, dev: &mut Device, f: usize, now: SimTime) {
        let fl = &mut self.flows[f];
        if fl.job.spec.numjobs > 1 {
            return;
        }
        fl.measure_from = now;
        for l in &mut fl.lat {
            *l = LatencyStats::default();
        }
        if !self.several {
            dev.restart_measuring(now);
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

    /// Several flows: measure a completion as flow `f`'s own.
    #[cold]
    fn measure(&mut self, f: usize, now: SimTime, done: &Completion) {
        let fl = &mut self.flows[f];
        fl.last_completion = now;
        if done.arrival >= fl.measure_from {
            fl.lat[done.op.index()].record((now - done.arrival).ps(), done.len);
        }
    }

    /// Whether flow `f` has stopped issuing and has nothing left in flight or waiting.
    fn flow_done(&self, f: usize, now: SimTime) -> bool {
        let fl = &self.flows[f];
        fl.started
            && !self.flow_may_issue(f, now)
            && self.insts[fl.first as usize..(fl.first + fl.job.spec.numjobs) as usize]
                .iter()
                .all(|i| i.inflight == 0 && i.backlog.is_empty())
    }

    /// With a group still to come: start it once every flow of the running one is done.
    #[cold]
    fn next_group_if_done(&mut self, dev: &mut Device, now: SimTime) {
        if self.error.is_some() {
            return;
        }
        let running = &self.groups[self.group];
        if running.iter().all(|&f| self.flow_done(f as usize, now)) {
            self.group += 1;
            self.staged = self.group + 1 < self.groups.len();
            self.start_group(dev, now);
        }
    }

    /// The error `e` of flow `f`, naming the flow in a run of several.
    fn flow_error(&self, f: usize, e: Error) -> Error {
        name_flow(e, f, &self.flows[f].job, self.several)
    }

    /// An open-loop arrival of instance `inst`, or in a closed loop the end of its
    /// `thinktime`.
    fn instance_wake(&mut self, dev: &mut Device, now: SimTime, inst: u32) {
        let f = self.insts[inst as usize].flow as usize;
        if !self.may_issue(f, inst, now) || self.error.is_some() {
            return;
        }
        let fl = &self.flows[f];
        let Some(rate) = fl.job.spec.rate_iops else {
            self.refill(dev, now, inst);
            return;
        };
        let engine = fl.engine;
        let iodepth = fl.job.spec.iodepth;
        let poisson = fl.job.spec.rate_process == Some(RateProcess::Poisson);
        self.count_issue(f, inst);
        // The job's checks keep the gap between 1 ps and 10^6 s (a Poisson gap: any length
        // from 1 ps, the clock's overflow checked below).
        let gap = if !poisson {
            (1e12 / rate) as u64
        } else {
            self.poisson_gap(inst, rate)
        };
        let Some(next) = now.0.checked_add(gap) else {
            let e = Error::bad_job(Invalid::says(JOB, "rate_iops", format!("at {rate} requests per second the next arrival would come after {:.0} s of simulated time, past the simulator's clock (2^64 ps, about 213 days); raise rate_iops or lower io_count", now.as_secs_f64())));
            self.error = Some(self.flow_error(f, e));
            return;
        };
        dev.wake_at(SimTime(next), inst);
        let i = &mut self.insts[inst as usize];
        if i.inflight < engine.device_depth {
            if engine.kind.syscall_per_request() || engine.batch > 1 {
                dev.host_syscall(now, inst);
            }
            self.submit_any(dev, now, inst, now);
        } else if i.backlog.len() >= MAX_BACKLOG {
            // Arrivals faster than the device serves them would queue without end.
            let e = Error::bad_job(Invalid::says(JOB, "rate_iops", format!("{rate} requests per second is more than the device serves at iodepth {iodepth}: {MAX_BACKLOG} arrivals of one job instance were waiting at {:.6} s of simulated time; lower rate_iops or raise iodepth", now.as_secs_f64())));
            self.error = Some(self.flow_error(f, e));
        } else {
            i.backlog.push_back(now);
        }
    }

    /// `rate_process = "poisson"`: instance `inst`'s next gap between arrivals (ps), drawn
    /// from an exponential distribution of mean 1 / `rate` (fio's `usec_for_io`), at least
    /// 1 ps.
    #[cold]
    fn poisson_gap(&mut self, inst: u32, rate: f64) -> u64 {
        let gap = self.arrivals[inst as usize].exp(1e12 / rate);
        (gap.min(u64::MAX as f64) as u64).max(1)
    }

    /// Flow `f`'s request count; for a runtime-bound flow (fio's `time_based` too, whose count
    /// is a bound never reached), the requests issued so far scaled by the runtime over the
    /// simulated time since its start, so that a progress bar shows the fraction of the
    /// runtime done; once the runtime is over, the requests issued (an open loop's backlog
    /// still drains). 0 for a flow not started whose count is unknown.
    fn expected_of(&self, f: usize) -> u64 {
        let fl = &self.flows[f];
        let t = (self.latest - fl.start).ps();
        let by_time = fl
            .job
            .runtime
            .filter(|_| fl.started && t > 0 && fl.issued > 0)
            .map(|r| {
                if t >= r.ps() {
                    return fl.issued;
                }
                let estimate = fl.issued as u128 * r.ps() as u128 / t as u128;
                estimate.min(u64::MAX as u128) as u64
            });
        match (fl.job.total_ios, by_time) {
            (Some(n), Some(e)) => n.min(e),
            (Some(n), None) => n,
            (None, Some(e)) => e,
            (None, None) => 0,
        }
    }
}

/// `e` naming `job` as the flow it is, in a run of several (a job's own errors say "job").
fn name_flow(e: Error, f: usize, job: &Job, several: bool) -> Error {
    if several {
        e.in_flow(f, &job.spec.name)
    } else {
        e
    }
}

impl Driver for JobDriver {
    // Always inlined into the run loop, as it was before flows: grown by the flow look-up it
    // was left out of line (+1.4 % instructions on profile_run).
    #[inline(always)]
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        self.latest = now;
        let inst = done.queue;
        let f = self.insts[inst as usize].flow as usize;
        if self.several {
            self.measure(f, now, &done);
        }
        let fl = &self.flows[f];
        // A zone command the driver sent before a write is not one of the job's I/Os (the
        // plain engine sends none).
        if fl.job.spec.rate_iops.is_some() {
            if done.op.is_zone_management() {
                return;
            }
            let i = &mut self.insts[inst as usize];
            i.inflight -= 1;
            if let Some(arrival) = i.backlog.pop_front() {
                self.submit_any(dev, now, inst, arrival);
            }
        } else if fl.engine.plain {
            self.insts[inst as usize].inflight -= 1;
            if self.may_issue(f, inst, now) {
                self.issue(dev, now, inst, now);
            }
        } else if !done.op.is_zone_management() {
            self.insts[inst as usize].inflight -= 1;
            self.engine_complete(dev, now, inst, done.arrival);
        }
        if self.staged {
            self.next_group_if_done(dev, now);
        }
    }

    /// An instance's open-loop arrival or end of `thinktime`, or a flow's start.
    fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
        self.latest = now;
        if token & START != 0 {
            if self.error.is_none() {
                self.start_flow(dev, (token & !START) as usize, now);
            }
        } else {
            self.instance_wake(dev, now, token);
        }
        if self.staged {
            self.next_group_if_done(dev, now);
        }
    }

    /// The run's request count (see `expected_of`), over its flows.
    fn expected_requests(&self) -> u64 {
        (0..self.flows.len())
            .map(|f| self.expected_of(f))
            .fold(0u64, u64::saturating_add)
    }

    fn finished(&self, now: SimTime) -> bool {
        self.error.is_some()
            || (!self.staged
                && self.groups[self.group].iter().all(|&f| {
                    self.flows[f as usize].started && !self.flow_may_issue(f as usize, now)
                }))
    }
}

#[cfg(test)]
mod tests;
