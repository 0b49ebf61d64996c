//! Host requests for HFSL from a trace (or workload model) and from a synthetic job: the same
//! workloads `ssdlab run` gives any device, as HFSL's one-at-a-time host requests.

use super::{HostIo, HostSource};
use crate::error::{Error, Result};
use crate::error::{Invalid, JOB};
use crate::request::Op;
use crate::sim::SimTime;
use crate::workload::job::Rw;
use crate::workload::job::{Generator, Job};
use crate::workload::trace::replay::{Replay, ReplayMode};

/// A host request of a trace or job as HFSL takes it: reads and writes; anything else (trims,
/// flushes) has no HFSL command and is counted in `skipped`.
fn host_io(op: Op, offset: u64, len: u64, app: u32, skipped: &mut u64) -> Option<HostIo> {
    let write = match op {
        Op::Read => false,
        Op::Write => true,
        Op::Trim
        | Op::Flush
        | Op::Erase
        | Op::Append
        | Op::ZoneReset
        | Op::ZoneFinish
        | Op::ZoneOpen
        | Op::ZoneClose
        | Op::ZoneOffline => {
            *skipped += 1;
            return None;
        }
    };
    Some(HostIo {
        write,
        offset,
        len,
        meta: false,
        app,
    })
}

/// A trace replay's requests: at their (scaled) trace times in `timed` mode, else each when
/// the one before has ended.
pub struct TraceSource {
    replay: Replay,
    io_count: Option<u64>,
    runtime: Option<SimTime>,
    issued: u64,
    /// The application the trace is sent by.
    app: u32,
    /// Trims and flushes passed over.
    pub skipped: u64,
}

impl TraceSource {
    /// The trace's requests, sent by application `app`.
    pub fn new(replay: Replay, app: u32) -> TraceSource {
        TraceSource {
            app,
            io_count: replay.job.io_count,
            runtime: replay.job.runtime.map(|d| d.0),
            replay,
            issued: 0,
            skipped: 0,
        }
    }

    /// The replay's outcome for the result, with the requests HFSL ran.
    pub fn outcome(&mut self) -> serde_json::Value {
        self.replay.out.replayed = self.issued;
        serde_json::to_value(&self.replay.out).expect("trace outcome serialises")
    }

    /// Why the run ended.
    pub fn stop_reason(&self) -> &'static str {
        if self.io_count.is_some_and(|n| self.issued >= n) {
            "io_count reached"
        } else if self.runtime.is_some() {
            "runtime reached"
        } else {
            "trace end"
        }
    }
}

impl HostSource for TraceSource {
    fn next_io(&mut self, now: SimTime) -> Result<Option<(SimTime, HostIo)>> {
        loop {
            if self.io_count.is_some_and(|n| self.issued >= n)
                || self.runtime.is_some_and(|r| now >= r)
            {
                return Ok(None);
            }
            let Some(req) = self.replay.next_request()? else {
                return Ok(None);
            };
            let Some(io) = host_io(req.op, req.offset, req.len, self.app, &mut self.skipped) else {
                continue;
            };
            self.issued += 1;
            let at = if self.replay.job.mode == ReplayMode::Timed {
                req.arrival
            } else {
                now
            };
            return Ok(Some((at, io)));
        }
    }
}

/// A synthetic job's requests, its instances taken in turn: each when the one before has ended
/// (HFSL runs one host request at a time, so `iodepth` has no effect) and `thinktime` after it,
/// or at evenly spaced arrivals with `rate_iops` (each instance at that rate, as fio).
pub struct JobSource {
    job: Job,
    gens: Vec<Generator>,
    issued: u64,
    app: u32,
}

impl JobSource {
    /// The job's generators, its requests sent by application `app`; a trim job is refused
    /// (HFSL has no trim).
    pub fn new(job: Job, seed: u64, app: u32) -> Result<JobSource> {
        if matches!(job.spec.rw, Rw::Trim | Rw::Randtrim) {
            return Err(Error::bad_job(Invalid::got(
                JOB,
                "rw",
                serde_json::to_string(&job.spec.rw).expect("rw serialises"),
                "reads or writes: HFSL (seed 002 §2.6) has no trim command",
            )));
        }
        let gens = (0..job.spec.numjobs)
            .map(|k| Generator::new(&job, k, seed))
            .collect();
        Ok(JobSource {
            job,
            gens,
            issued: 0,
            app,
        })
    }

    pub fn job(&self) -> &Job {
        &self.job
    }

    /// Why the run ended.
    pub fn stop_reason(&self) -> &'static str {
        if self.job.total_ios.is_some_and(|n| self.issued >= n) {
            "io_count reached"
        } else {
            "runtime reached"
        }
    }
}

impl HostSource for JobSource {
    fn next_io(&mut self, now: SimTime) -> Result<Option<(SimTime, HostIo)>> {
        if self.job.total_ios.is_some_and(|n| self.issued >= n)
            || self.job.runtime.is_some_and(|r| now >= r)
        {
            return Ok(None);
        }
        let n = self.gens.len() as u64;
        let k = self.issued;
        self.issued += 1;
        let (op, offset, len) = self.gens[(k % n) as usize].next(&self.job);
        let io = host_io(op, offset, len, self.app, &mut 0).expect("a read or write job");
        let at = match self.job.spec.rate_iops {
            // fio's thinktime: a pause after every `thinktime_blocks` requests ended.
            None => match self.job.spec.thinktime {
                Some(t)
                    if k > 0
                        && k.is_multiple_of(self.job.spec.thinktime_blocks.unwrap_or(1) as u64) =>
                {
                    SimTime(now.ps().saturating_add(t.0.ps()))
                }
                _ => now,
            },
            Some(rate) => {
                // The instance's (k / n)-th arrival.
                let ps = (k / n) as f64 / rate * 1e12;
                if ps >= SimTime::MAX.ps() as f64 {
                    return Err(Error::bad_job(Invalid::says(JOB, "rate_iops", format!("at {rate} requests per second arrival {k} would come after {:.0} s of simulated time, past the simulator's clock (2^64 ps, about 213 days); raise rate_iops or lower io_count", ps / 1e12))));
                }
                SimTime(ps as u64)
            }
        };
        Ok(Some((at, io)))
    }
}
