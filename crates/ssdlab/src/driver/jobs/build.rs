//! A job driver built from its jobs: its flows, their instances and groups, and the checks
//! that they fit the device (queue entries for what the instances sharing a queue keep in
//! flight; one priority class per NVMe queue under weighted round robin).

use super::{name_flow, Engine, Flow, Instance, JobDriver, START};
use crate::config::{Arbitration, PriorityClass};
use crate::device::Device;
use crate::driver::zbd::Zbd;
use crate::error::{got, Invalid, JOB};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::{Rng, SimTime};
use crate::stats::LatencyStats;
use crate::workload::job::{Generator, Job, RateProcess, Rw};
use std::collections::VecDeque;

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
            return Err(Error::bad_job(Invalid::unnamed(
                "flows",
                got("none", "at least one job"),
            )));
        }
        let several = jobs.len() > 1;
        let total_insts = jobs
            .iter()
            .try_fold(0u32, |n, j| n.checked_add(j.spec.numjobs))
            .filter(|&n| n < START)
            .ok_or_else(|| {
                Error::bad_job(Invalid::says(
                    "flows",
                    "numjobs",
                    format!(
                        "the flows' numjobs add up to more than {} instances",
                        START - 1
                    ),
                ))
            })?;
        Self::check_queues(&jobs, dev, total_insts)?;
        let queue_classes = Self::queue_classes(&jobs, dev)?;
        let mut flows = Vec::with_capacity(jobs.len());
        let mut insts = Vec::with_capacity(total_insts as usize);
        for (f, job) in jobs.into_iter().enumerate() {
            if job.spec.latency_target.is_some() && job.spec.rate_iops.is_some() {
                let e = Error::bad_job(Invalid::says(JOB, "latency_target", "given with rate_iops, expected a closed loop: the search sets how many requests are in flight, which a rate does not"));
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
                        let e = Error::bad_job(Invalid::says(JOB, "priority", format!("got {}, but NVMe queue {sq} also carries flow `{}` of class {}, and a queue has one priority class (its QPRIO); expected interface.io_queues (now {}) large enough to give each class its own queues (instance k submits on queue k mod io_queues)", class.name(), jobs[g].spec.name, other.name(), i.io_queues)));
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
        Err(Error::bad_job(Invalid::says(who.to_string(), "iodepth", format!("{insts} instance(s) per queue × iodepth {depth} × {cmds_per_req} command(s) per request need {entries} queue entries, but an NVMe queue of depth {} holds at most {cap}; lower iodepth or raise interface.queue_depth", cap as u64 + 1))))
    }
}
