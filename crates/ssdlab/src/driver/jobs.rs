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
use crate::config::{Arbitration, PriorityClass};
use crate::device::{Completion, Device, Driver, Flags, Request};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::{Rng, SimTime};
use crate::stats::LatencyStats;
use crate::workload::job::{Generator, IoEngine, Job, RateProcess, Rw, ZoneMode};
use std::collections::VecDeque;

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
    /// A driver of `job` on `dev`. NVMe queues must hold what the instances sharing one keep
    /// in flight.
    pub fn new(job: Job, dev: &Device, seed: u64) -> Result<JobDriver> {
        Self::flows(vec![job], dev, seed)
    }

    /// A driver of `jobs` running as flows on `dev` (grouped by their `group`, each started
    /// after its `startdelay`). Flow f's generators draw from the seed mixed with f (flow 0's
    /// from `seed` itself, so that one job runs as it always did): two flows alike still send
    /// different requests.
    pub fn flows(jobs: Vec<Job>, dev: &Device, seed: u64) -> Result<JobDriver> {
        if jobs.is_empty() {
            return Err(Error::Job(
                "flows: got none, expected at least one job".into(),
            ));
        }
        let several = jobs.len() > 1;
        let total_insts = jobs
            .iter()
            .try_fold(0u32, |n, j| n.checked_add(j.spec.numjobs))
            .filter(|&n| n < START)
            .ok_or_else(|| {
                Error::Job(format!(
                    "flows: their numjobs add up to more than {} instances",
                    START - 1
                ))
            })?;
        Self::check_queues(&jobs, dev, total_insts)?;
        let queue_classes = Self::queue_classes(&jobs, dev)?;
        let mut flows = Vec::with_capacity(jobs.len());
        let mut insts = Vec::with_capacity(total_insts as usize);
        for (f, job) in jobs.into_iter().enumerate() {
            if job.spec.latency_target.is_some() && job.spec.rate_iops.is_some() {
                let e = Error::Job(
                    "job, field `latency_target`: given with rate_iops, expected a closed loop: the search sets how many requests are in flight, which a rate does not".into(),
                );
                return Err(name_flow(e, f, &job, several));
            }
            let zbd = Zbd::for_job(&job, dev).map_err(|e| name_flow(e, f, &job, several))?;
            let flow_seed = seed ^ (f as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let first = insts.len() as u32;
            for k in 0..job.spec.numjobs {
                insts.push(Instance {
                    flow: f as u32,
                    inflight: 0,
                    gen: Generator::new(&job, k, flow_seed),
                    ahead: None,
                    backlog: VecDeque::new(),
                    completed: 0,
                    think_until: SimTime::ZERO,
                    remaining: job.instance_ios.unwrap_or(u64::MAX),
                });
            }
            flows.push(Flow {
                engine: Engine::of(&job),
                first,
                issued: 0,
                started: false,
                start: SimTime::ZERO,
                end: None,
                measure_from: SimTime::ZERO,
                zbd,
                lat: if several {
                    (0..Op::ALL.len())
                        .map(|_| LatencyStats::default())
                        .collect()
                } else {
                    Vec::new()
                },
                last_completion: SimTime::ZERO,
                searching: 0,
                depth_found: false,
                job,
            });
        }
        let mut numbers: Vec<u32> = flows.iter().map(|f| f.job.spec.group).collect();
        numbers.sort_unstable();
        numbers.dedup();
        let groups: Vec<Vec<u32>> = numbers
            .iter()
            .map(|&g| {
                (0..flows.len() as u32)
                    .filter(|&f| flows[f as usize].job.spec.group == g)
                    .collect()
            })
            .collect();
        let searching = flows.iter().any(|f| f.job.spec.latency_target.is_some());
        let poisson = flows
            .iter()
            .any(|f| f.job.spec.rate_process == Some(RateProcess::Poisson));
        // Each instance's arrivals from its own stream, keyed by the run's instance number
        // and the seed: the gaps change nothing else the run draws.
        let arrivals = if poisson {
            (0..total_insts)
                .map(|k| Rng::stream(seed, &format!("arrivals.{k}")))
                .collect()
        } else {
            Vec::new()
        };
        Ok(JobDriver {
            arrivals,
            searches: if searching {
                vec![None; total_insts as usize]
            } else {
                Vec::new()
            },
            staged: groups.len() > 1,
            groups,
            group: 0,
            several,
            flows,
            insts,
            batch: Vec::new(),
            error: None,
            latest: SimTime::ZERO,
            queue_classes,
        })
    }

    /// Under weighted round robin, each NVMe SQ's class: that of the flows whose instances
    /// submit on it (instance k on SQ k mod io_queues), as a host creates each SQ with one
    /// QPRIO. Two classes on one SQ are refused. None under round robin, where the classes
    /// change nothing, or when no flow names a priority.
    fn queue_classes(jobs: &[Job], dev: &Device) -> Result<Option<Vec<PriorityClass>>> {
        let i = &dev.config().interface;
        if i.arbitration != Arbitration::WeightedRoundRobin
            || jobs.iter().all(|j| j.spec.priority.is_none())
        {
            return Ok(None);
        }
        // Per SQ: its class and the flow (index) that first submits on it.
        let mut classes: Vec<Option<(PriorityClass, usize)>> = vec![None; i.io_queues as usize];
        let mut k = 0u32;
        for (f, job) in jobs.iter().enumerate() {
            let class = job.spec.priority.unwrap_or_default();
            for _ in 0..job.spec.numjobs {
                let sq = (k % i.io_queues) as usize;
                match classes[sq] {
                    Some((other, g)) if other != class => {
                        let e = Error::Job(format!(
                            "job, field `priority`: got {}, but NVMe queue {sq} also carries flow `{}` of class {}, and a queue has one priority class (its QPRIO); \
                             expected interface.io_queues (now {}) large enough to give each class its own queues (instance k submits on queue k mod io_queues)",
                            class.name(),
                            jobs[g].spec.name,
                            other.name(),
                            i.io_queues
                        ));
                        return Err(name_flow(e, f, job, jobs.len() > 1));
                    }
                    _ => classes[sq] = Some((class, f)),
                }
                k += 1;
            }
        }
        Ok(Some(
            classes
                .into_iter()
                .map(|c| c.map_or(PriorityClass::Medium, |c| c.0))
                .collect(),
        ))
    }

    /// NVMe queues must hold what the instances sharing one keep in flight (over all flows).
    fn check_queues(jobs: &[Job], dev: &Device, total_insts: u32) -> Result<()> {
        let cap = dev.queue_capacity();
        if cap == u32::MAX {
            return Ok(());
        }
        let io_queues = dev.config().interface.io_queues;
        let n_sq = io_queues.min(total_insts).max(1) as usize;
        // Per interface queue: the instances on it, and the entries they need.
        let mut need = vec![(0u32, 0u64); n_sq];
        let mut worst = (0usize, 0u32, 0u64);
        let mut k = 0u32;
        for job in jobs {
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
            for _ in 0..job.spec.numjobs {
                let sq = (k % io_queues) as usize;
                need[sq].0 += 1;
                need[sq].1 = need[sq].1.saturating_add(depth as u64 * cmds_per_req);
                if need[sq].1 > cap as u64 && worst.2 == 0 {
                    worst = (sq, depth, cmds_per_req);
                }
                k += 1;
            }
        }
        let (sq, depth, cmds_per_req) = worst;
        if cmds_per_req == 0 {
            return Ok(());
        }
        let (insts, entries) = need[sq];
        let who = if jobs.len() > 1 { "flows" } else { "job" };
        Err(Error::Job(format!(
            "{who}, field `iodepth`: {insts} instance(s) per queue × iodepth {depth} × {cmds_per_req} command(s) per request need {entries} \
             queue entries, but an NVMe queue of depth {} holds at most {cap}; lower iodepth or raise interface.queue_depth",
            cap as u64 + 1,
        )))
    }

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
                    let e = Error::Job(format!(
                        "job, field `thinktime`: a pause of {:.0} s from {:.0} s of simulated time ends past the simulator's clock (2^64 ps, about 213 days)",
                        think.time.as_secs_f64(),
                        now.as_secs_f64()
                    ));
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
            let e = Error::Job(format!(
                "job, field `latency_target`: a request took {:.1} µs at queue depth 1 ({:.6} s of simulated time), over the target of {target:.1} µs; with latency_percentile 100 no depth meets it (fio ends the job with ETIMEDOUT); raise latency_target or lower latency_percentile",
                latency.as_us_f64(),
                now.as_secs_f64()
            ));
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
            let e = Error::Job(format!(
                "job, field `rate_iops`: at {rate} requests per second the next arrival would come after {:.0} s of simulated time, past the simulator's clock (2^64 ps, about 213 days); raise rate_iops or lower io_count",
                now.as_secs_f64()
            ));
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
            let e = Error::Job(format!(
                "job, field `rate_iops`: {rate} requests per second is more than the device serves at iodepth {iodepth}: {MAX_BACKLOG} arrivals of one job instance were waiting at {:.6} s of simulated time; lower rate_iops or raise iodepth",
                now.as_secs_f64()
            ));
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

    /// `instances = "clones"` (fio's `numjobs`): each instance issues exactly its own
    /// `io_count`, whichever engine or loop runs it, where the default shares the total;
    /// sequential clones each start at the region's start; without `io_count` each clone makes
    /// one pass of the region, and `io_count` never extends past it (fio 3.33: `size=64k
    /// bs=4k number_ios=40` gives each clone 16).
    #[test]
    fn clones_each_issue_their_own_count() {
        let per_queue = |dev: &mut Device| {
            let mut n = [0u64; 3];
            for r in dev.take_records().unwrap() {
                n[r.queue as usize] += 1;
            }
            n
        };
        for extra in [
            "",
            r#","ioengine":"psync""#,
            r#","iodepth_batch":2"#,
            r#","rate_iops":20000"#,
        ] {
            let job = format!(
                r#"{{"rw":"randread","bs":"4KiB","iodepth":4,"numjobs":3,"io_count":40,"size":"1MiB","instances":"clones"{extra}}}"#
            );
            let (mut dev, mut drv) = setup(&[], &job);
            drv.start(&mut dev);
            assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
            assert_eq!(drv.finish().unwrap(), "io_count reached");
            assert_eq!(per_queue(&mut dev), [40, 40, 40], "{job}");
        }
        // One pass of the region each (64 KiB of 4 KiB: 16), from the region's start.
        for io_count in ["", r#","io_count":40"#] {
            let job = format!(
                r#"{{"rw":"read","bs":"4KiB","iodepth":2,"numjobs":3,"size":"64KiB","offset":"1MiB","instances":"clones"{io_count}}}"#
            );
            let (mut dev, mut drv) = setup(&[], &job);
            drv.start(&mut dev);
            assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
            let records = dev.take_records().unwrap();
            for q in 0..3 {
                let mut offsets: Vec<u64> = records
                    .iter()
                    .filter(|r| r.queue == q)
                    .map(|r| r.offset)
                    .collect();
                offsets.sort_unstable();
                let want: Vec<u64> = (0..16).map(|k| (1 << 20) + k * 4096).collect();
                assert_eq!(offsets, want, "{job}: queue {q}");
            }
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
    fn setup_flows(cfg_over: &[&str], jobs: &[&str]) -> (Device, JobDriver) {
        let ov: Vec<String> = cfg_over.iter().map(|s| s.to_string()).collect();
        let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
        let jobs = jobs
            .iter()
            .map(|j| {
                JobSpec::from_json(j)
                    .unwrap()
                    .fit(cfg.logical_bytes())
                    .unwrap()
            })
            .collect();
        let mut dev = Device::new(&cfg, 1).unwrap();
        // Filled as the preset says, so that reads reach the NAND.
        crate::run::precondition(&mut dev, &cfg, 1).unwrap();
        dev.record_requests();
        let drv = JobDriver::flows(jobs, &dev, 1).unwrap();
        (dev, drv)
    }

    fn run_all(dev: &mut Device, drv: &mut JobDriver) {
        drv.start(dev);
        assert!(dev.run(drv, u64::MAX, &mut |_, _| true).unwrap());
        drv.finish().unwrap();
    }

    /// The mean read latency of flow `f` (µs).
    fn mean_read_us(drv: &JobDriver, f: usize) -> f64 {
        drv.outcomes()[f].lat[Op::Read.index()].summary().mean
    }

    const READER: &str =
        r#"{"name":"reader","rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms"}"#;
    const WRITER: &str =
        r#"{"name":"writer","rw":"randwrite","bs":"64KiB","iodepth":16,"runtime":"20ms"}"#;

    /// Issue 41's check: a reader and a writer of one group run at once on the device, so the
    /// reader's reads wait behind the writer's programs: its latency rises against the reader
    /// alone (beside a flow of one read, so that both runs measure flows; seed 1: 94 µs alone,
    /// 784 µs beside the writer).
    #[test]
    fn a_reader_beside_a_writer_is_slower_than_alone() {
        let (mut dev, mut drv) = setup_flows(
            &[],
            &[
                READER,
                r#"{"name":"idle","rw":"randread","bs":"4KiB","io_count":1}"#,
            ],
        );
        run_all(&mut dev, &mut drv);
        let alone = mean_read_us(&drv, 0);
        let (mut dev, mut drv) = setup_flows(&[], &[READER, WRITER]);
        run_all(&mut dev, &mut drv);
        let shared = mean_read_us(&drv, 0);
        let out = drv.outcomes();
        // Both ran for the runtime, at the same time.
        assert_eq!((out[0].start, out[1].start), (SimTime::ZERO, SimTime::ZERO));
        let writes = out[1].lat[Op::Write.index()].count;
        assert!(writes > 20, "the writer wrote {writes}");
        assert!(
            out[0].lat[Op::Write.index()].count == 0,
            "the reader only read"
        );
        assert!(
            shared > 2.0 * alone,
            "reader alone {alone:.1} µs, beside the writer {shared:.1} µs"
        );
        // The device's figures hold both flows' requests.
        let reads = dev.host().latency(Op::Read).count;
        assert_eq!(reads, out[0].lat[Op::Read.index()].count);
        assert_eq!(
            dev.host().latency(Op::Write).count,
            out[1].lat[Op::Write.index()].count
        );
    }

    /// Two flows alike draw different requests (the seed is mixed with the flow), and the same
    /// flows and seed give the same requests, request for request.
    #[test]
    fn flows_are_deterministic_and_distinct() {
        let a = r#"{"name":"a","rw":"randread","bs":"4KiB","iodepth":2,"io_count":200}"#;
        let recs = || {
            let (mut dev, mut drv) = setup_flows(&[], &[a, a]);
            run_all(&mut dev, &mut drv);
            dev.take_records().unwrap()
        };
        let (r1, r2) = (recs(), recs());
        let key = |r: &crate::device::RequestRecord| (r.queue, r.offset, r.issue_ps, r.latency_ps);
        assert_eq!(
            r1.iter().map(key).collect::<Vec<_>>(),
            r2.iter().map(key).collect::<Vec<_>>()
        );
        let of = |q: u32| {
            r1.iter()
                .filter(|r| r.queue == q)
                .map(|r| r.offset)
                .collect::<Vec<_>>()
        };
        assert_eq!((of(0).len(), of(1).len()), (200, 200));
        assert_ne!(of(0), of(1));
        // Flow 0 of several sends what it sends alone.
        let (mut dev, mut drv) = setup(&[], a);
        run_all(&mut dev, &mut drv);
        let mut alone: Vec<u64> = dev
            .take_records()
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect();
        let mut first = of(0);
        alone.sort_unstable();
        first.sort_unstable();
        assert_eq!(alone, first);
    }

    /// Groups run one after another: the second starts when the first's last request has
    /// completed, on the same device; `startdelay` starts a flow later than its group, and its
    /// runtime and ramp count from its own start.
    #[test]
    fn groups_follow_each_other_and_startdelay_delays_a_flow() {
        let (mut dev, mut drv) = setup_flows(
            &[],
            &[
                r#"{"name":"w","rw":"write","bs":"128KiB","iodepth":4,"io_count":64}"#,
                r#"{"name":"r","rw":"randread","bs":"4KiB","iodepth":1,"runtime":"2ms","ramp":"1ms","group":1}"#,
                r#"{"name":"late","rw":"randread","bs":"4KiB","iodepth":1,"runtime":"2ms","startdelay":"5ms","group":1}"#,
            ],
        );
        run_all(&mut dev, &mut drv);
        let recs = dev.take_records().unwrap();
        let out = drv.outcomes();
        let w_end = out[0].last_completion;
        assert!(w_end > SimTime::ZERO);
        assert_eq!(
            out[1].start, w_end,
            "group 1 starts at group 0's last completion"
        );
        assert_eq!(out[2].start, w_end + SimTime(5_000_000_000));
        assert_eq!(out[1].measure_from, w_end + SimTime(1_000_000_000));
        let issues = |q: u32| {
            recs.iter()
                .filter(move |r| r.queue == q)
                .map(|r| r.issue_ps)
        };
        assert!(issues(1).all(|t| t >= w_end.ps()));
        let late_first = issues(2).min().unwrap();
        assert_eq!(late_first, out[2].start.ps());
        // Each stops issuing at its own start plus its runtime.
        assert!(issues(2).all(|t| t < out[2].start.ps() + 2_000_000_000));
        assert!(issues(1).all(|t| t < out[1].start.ps() + 2_000_000_000));
        // Flow r's own figures leave out its ramp; the device's start from the first group.
        let r_reads = out[1].lat[Op::Read.index()].count;
        let r_after_ramp = recs
            .iter()
            .filter(|r| r.queue == 1 && r.issue_ps >= out[1].measure_from.ps())
            .count() as u64;
        assert_eq!(r_reads, r_after_ramp);
        assert!(r_after_ramp < issues(1).count() as u64);
        assert_eq!(drv.finish().unwrap(), "all flows finished");
    }

    /// A flow's error names the flow.
    #[test]
    fn an_error_of_one_flow_names_it() {
        let cfg = SsdConfig::resolve(
            "small-tlc",
            &[
                "interface.queue_depth=16".into(),
                "interface.io_queues=1".into(),
            ],
        )
        .unwrap();
        let jobs: Vec<Job> = [
            r#"{"name":"a","rw":"randread","bs":"4KiB","iodepth":8}"#,
            r#"{"name":"b","rw":"randread","bs":"4KiB","iodepth":8}"#,
        ]
        .iter()
        .map(|j| {
            JobSpec::from_json(j)
                .unwrap()
                .fit(cfg.logical_bytes())
                .unwrap()
        })
        .collect();
        let dev = Device::new(&cfg, 1).unwrap();
        let e = JobDriver::flows(jobs, &dev, 1).err().unwrap().to_string();
        assert!(e.contains("flows, field `iodepth`"), "{e}");
        assert!(e.contains("need 16 queue entries"), "{e}");
    }

    /// A drive that serves one read at a time (one die, one plane, one read time): a read's
    /// latency grows with the depth in flight, about the depth × one read.
    const SERIAL_READS: [&str; 6] = [
        "nand.channels=1",
        "nand.dies_per_package=1",
        "nand.planes_per_die=1",
        "nand.timing.read=[\"60us\", \"60us\", \"60us\"]",
        "precondition.random_overwrite=0.0",
        "host.cores=1",
    ];

    /// The highest read latency (ps) at a fixed depth on `SERIAL_READS`.
    fn worst_read_at(depth: u32) -> u64 {
        let job = format!(r#"{{"rw":"randread","bs":"4KiB","iodepth":{depth},"io_count":400}}"#);
        let (mut dev, mut drv) = setup_flows(&SERIAL_READS, &[&job]);
        run_all(&mut dev, &mut drv);
        let recs = dev.take_records().unwrap();
        recs.iter().map(|r| r.latency_ps).max().unwrap()
    }

    /// fio's latency_target: the search settles at the highest depth whose requests meet the
    /// target (99.9 % of each 2 ms window's requests), never keeps more than that
    /// in flight once found, restarts the figures for its final window, and stops the job.
    #[test]
    fn latency_target_settles_at_the_highest_depth_within_it() {
        // A target between depth 6's worst latency and depth 7's.
        let (six, seven) = (worst_read_at(6), worst_read_at(7));
        assert!(
            seven > six + 30_000_000,
            "latency grows with depth: {six} {seven}"
        );
        let target_ns = (six + seven) / 2 / 1000;
        let job = format!(
            r#"{{"rw":"randread","bs":"4KiB","iodepth":32,"runtime":"500ms","latency_target":"{target_ns}ns","latency_window":"2ms","latency_percentile":99.9}}"#
        );
        let (mut dev, drv) = setup_flows(&SERIAL_READS, &[&job]);
        let mut w = Watch {
            inner: drv,
            most_in_flight: 0,
            completions: 0,
        };
        w.inner.start(&mut dev);
        assert!(dev.run(&mut w, u64::MAX, &mut |_, _| true).unwrap());
        assert_eq!(w.inner.finish().unwrap(), "latency target's depth found");
        assert_eq!(w.inner.outcomes()[0].latency_depth, Some(6));
        // It went past 6 while searching (doubling to 8), and stopped long before 500 ms.
        assert!(w.most_in_flight >= 7, "{}", w.most_in_flight);
        assert!(dev.host().last_completion() < SimTime::from_us(100_000));
        // The figures are the final window's alone: after the restart, every request met the
        // target at depth 6 and at most 6 were in flight.
        let recs = dev.take_records().unwrap();
        assert!(!recs.is_empty() && (recs.len() as u64) < w.completions);
        assert!(recs.iter().all(|r| r.latency_ps <= target_ns * 1000));
        let mut edges: Vec<(u64, i32)> = recs
            .iter()
            .flat_map(|r| [(r.issue_ps, 1), (r.issue_ps + r.latency_ps, -1)])
            .collect();
        edges.sort_by_key(|&(t, d)| (t, d));
        let deepest = edges
            .iter()
            .scan(0i32, |depth, &(_, d)| {
                *depth += d;
                Some(*depth)
            })
            .max()
            .unwrap();
        assert_eq!(deepest, 6);
    }

    #[test]
    fn latency_target_with_a_rate_or_a_missing_target_is_refused() {
        let (dev, _) = setup(&[], r#"{"rw":"randread","io_count":1}"#);
        let spec =
            JobSpec::from_json(r#"{"rw":"randread","rate_iops":1000,"latency_target":"1ms"}"#)
                .unwrap();
        let job = spec.fit(dev.config().logical_bytes()).unwrap();
        let e = JobDriver::new(job, &dev, 1).err().unwrap().to_string();
        assert!(
            e.contains("field `latency_target`") && e.contains("rate_iops"),
            "{e}"
        );
        let e = JobSpec::from_json(r#"{"rw":"randread","latency_window":"1ms"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("field `latency_window`: given without latency_target"),
            "{e}"
        );
        let e = JobSpec::from_json(
            r#"{"rw":"randread","latency_target":"1ms","latency_percentile":0}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("field `latency_percentile`: got 0"), "{e}");
    }

    /// With a percentile of 100, a request over the target at depth 1 ends the run with an
    /// error naming the field (fio ends the job with ETIMEDOUT).
    #[test]
    fn latency_target_below_one_read_is_an_error() {
        let (mut dev, mut drv) = setup_flows(
            &SERIAL_READS,
            &[
                r#"{"rw":"randread","bs":"4KiB","iodepth":8,"io_count":100,"latency_target":"10us"}"#,
            ],
        );
        drv.start(&mut dev);
        assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
        let e = drv.finish().unwrap_err().to_string();
        assert!(
            e.contains("field `latency_target`") && e.contains("queue depth 1"),
            "{e}"
        );
    }

    /// fio's rate_process=poisson: exponential gaps between an instance's arrivals, of mean
    /// 1 / rate (their standard deviation equals their mean), the same for the same seed;
    /// linear arrivals are evenly spaced.
    #[test]
    fn poisson_arrivals_have_exponential_gaps() {
        fn gaps(process: &str, seed: u64) -> Vec<f64> {
            let job = format!(
                r#"{{"rw":"randread","bs":"4KiB","iodepth":64,"io_count":20000,"rate_iops":20000{process}}}"#
            );
            let (mut dev, _) = setup(&[], &job);
            let spec = JobSpec::from_json(&job).unwrap();
            let job = spec.fit(dev.config().logical_bytes()).unwrap();
            let mut drv = JobDriver::new(job, &dev, seed).unwrap();
            drv.start(&mut dev);
            assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
            let mut issued: Vec<u64> = dev
                .take_records()
                .unwrap()
                .iter()
                .map(|r| r.issue_ps)
                .collect();
            issued.sort_unstable();
            issued.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
        }
        let g = gaps(r#","rate_process":"poisson""#, 1);
        let n = g.len() as f64;
        let mean = g.iter().sum::<f64>() / n;
        let sd = (g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!(
            (mean / 50e6 - 1.0).abs() < 0.03,
            "mean gap {mean} ps, want 50 µs"
        );
        assert!((sd / mean - 1.0).abs() < 0.05, "sd {sd} vs mean {mean}");
        // A share e^-1 of the gaps are longer than the mean, as an exponential's.
        let long = g.iter().filter(|&&x| x > mean).count() as f64 / n;
        assert!((long - (-1f64).exp()).abs() < 0.02, "{long}");
        assert_eq!(g, gaps(r#","rate_process":"poisson""#, 1));
        assert_ne!(g, gaps(r#","rate_process":"poisson""#, 2));
        let linear = gaps("", 1);
        assert!(linear.iter().all(|&x| x == 50e6), "evenly spaced");
    }
}
