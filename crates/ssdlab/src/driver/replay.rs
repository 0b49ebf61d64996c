//! The trace-replay driver: one trace (or workload model) shared by the host queues, round
//! robin. In `afap` mode a request is issued as soon as `iodepth` and its interface queue have
//! room; in `timed` mode not before its (scaled) trace time either, and its latency counts from
//! that time. One trace request is read ahead at a time. With `end_flush`, one Flush follows
//! once the trace has ended and every request has completed.

use crate::device::{Completion, Device, Driver, Request};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::workload::trace::replay::{Replay, ReplayMode, Request as TraceRequest, TraceJob};

pub struct ReplayDriver {
    src: Replay,
    /// The next trace request, read but not yet issued.
    pending: Option<TraceRequest>,
    /// The trace has no more requests (or could not be read: `error`).
    exhausted: bool,
    error: Option<Error>,
    /// A wake-up is queued for `pending`.
    scheduled: bool,
    inflight: u32,
    /// Most requests in flight.
    iodepth: u32,
    queues: u32,
    next_queue: u32,
    /// Requests issued to the device.
    issued: u64,
    io_count: Option<u64>,
    runtime: Option<SimTime>,
    ramp: SimTime,
    /// `end_flush`: a Flush is still to be sent once the trace has ended and every request
    /// has completed.
    end_flush_due: bool,
}

impl ReplayDriver {
    pub fn new(src: Replay, tjob: &TraceJob) -> ReplayDriver {
        ReplayDriver {
            iodepth: src.job.iodepth,
            src,
            pending: None,
            exhausted: false,
            error: None,
            scheduled: false,
            inflight: 0,
            queues: tjob.queues,
            next_queue: 0,
            issued: 0,
            io_count: tjob.io_count,
            runtime: tjob.runtime.map(|d| d.0),
            ramp: tjob.ramp.map(|d| d.0).unwrap_or(SimTime::ZERO),
            end_flush_due: tjob.end_flush,
        }
    }

    /// Set the device's measuring window and issue what is due at time 0.
    pub fn start(&mut self, dev: &mut Device) {
        dev.measure_from(self.ramp);
        self.pump(dev, SimTime::ZERO);
    }

    /// The replay's outcome for the result (requests read, skipped, replayed, …).
    pub fn outcome(&mut self) -> serde_json::Value {
        self.src.out.replayed = self.issued;
        serde_json::to_value(&self.src.out).expect("trace outcome serialises")
    }

    /// Why the replay ended (once the device is idle), or its read error.
    pub fn finish(&mut self) -> Result<&'static str> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        Ok(if self.exhausted && self.pending.is_none() {
            "trace end"
        } else if self.io_count.is_some_and(|t| self.issued >= t) {
            "io_count reached"
        } else {
            "runtime reached"
        })
    }

    fn may_issue(&self, now: SimTime) -> bool {
        self.io_count.is_none_or(|t| self.issued < t) && self.runtime.is_none_or(|r| now < r)
    }

    /// Issue trace requests while they are due, the iodepth has room and their queue has room.
    fn pump(&mut self, dev: &mut Device, now: SimTime) {
        loop {
            if !self.may_issue(now) {
                return;
            }
            if self.pending.is_none() && !self.exhausted {
                match self.src.next_request() {
                    Ok(Some(req)) => {
                        // It waits for room, usually a completion: start its map entry's
                        // cache miss now (as the job driver does, `driver/jobs.rs`).
                        if dev.map_outgrows_caches() {
                            dev.prefetch_map(req.offset);
                        }
                        self.pending = Some(req);
                    }
                    Ok(None) => self.exhausted = true,
                    Err(e) => {
                        self.error = Some(e);
                        self.exhausted = true;
                    }
                }
            }
            let Some(req) = self.pending else {
                if self.exhausted && self.error.is_none() && self.inflight == 0 {
                    self.end_flush(dev, now);
                }
                return;
            };
            let timed = self.src.job.mode == ReplayMode::Timed;
            if timed && req.arrival > now {
                if !self.scheduled {
                    self.scheduled = true;
                    dev.wake_at(req.arrival, 0);
                }
                return;
            }
            if self.inflight >= self.iodepth {
                return;
            }
            let queue = self.next_queue;
            // A request that needs more entries than its queue has free waits for completions
            // (one larger than the whole queue goes alone).
            if !dev.queue_has_room(queue, req.op, req.offset, req.len) {
                return;
            }
            self.pending = None;
            if dev.map_outgrows_caches() {
                dev.prefetch_map_target(req.op, req.offset);
            }
            self.inflight += 1;
            self.next_queue = (queue + 1) % self.queues;
            self.issued += 1;
            let r = Request {
                op: req.op,
                offset: req.offset,
                len: req.len,
                queue,
                flags: req.flags,
                arrival: if timed { req.arrival } else { now },
            };
            // The replaying program's system call (`host.syscall_cost`) and the request's way
            // through the file system, block layer and scheduler (`host.fs_cost`, ...): none by
            // default.
            dev.host_syscall(now, queue);
            dev.host_kernel_request(now, queue);
            if let Err(e) = dev.submit(now, r) {
                self.error.get_or_insert(e);
                self.exhausted = true;
                return;
            }
        }
    }
}

impl ReplayDriver {
    /// `end_flush`: the trace has ended and every request completed: send its one Flush (not a
    /// trace request: `replayed` does not count it).
    fn end_flush(&mut self, dev: &mut Device, now: SimTime) {
        if !self.end_flush_due {
            return;
        }
        self.end_flush_due = false;
        self.inflight += 1;
        let r = Request {
            op: crate::request::Op::Flush,
            offset: 0,
            len: 0,
            queue: self.next_queue,
            flags: crate::request::Flags::NONE,
            arrival: now,
        };
        if let Err(e) = dev.submit(now, r) {
            self.error.get_or_insert(e);
        }
    }
}

impl Driver for ReplayDriver {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, _done: Completion) {
        self.inflight -= 1;
        self.pump(dev, now);
    }

    fn on_wake(&mut self, dev: &mut Device, now: SimTime, _token: u32) {
        self.scheduled = false;
        self.pump(dev, now);
    }

    fn expected_requests(&self) -> u64 {
        let t = self.src.total();
        self.io_count.map_or(t, |n| n.min(t)) + u64::from(self.src.job.end_flush)
    }

    fn finished(&self, now: SimTime) -> bool {
        !self.may_issue(now) || (self.exhausted && self.pending.is_none() && !self.end_flush_due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;

    /// An MSR-format trace of reads 1 ms apart (MSR time is in 100 ns units).
    fn trace(dir: &std::path::Path, n: u64) -> std::path::PathBuf {
        msr_trace(dir, "Read", n)
    }

    /// An MSR-format trace of `n` 4 KiB requests of type `op` (`Read`, `Write`) 1 ms apart, at
    /// consecutive offsets.
    fn msr_trace(dir: &std::path::Path, op: &str, n: u64) -> std::path::PathBuf {
        let p = dir.join(format!("{}.csv", op.to_lowercase()));
        let mut text =
            String::from("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n");
        for k in 0..n {
            text += &format!(
                "{},h,0,{op},{},4096,0\n",
                128_000_000_000_000_000u64 + k * 10_000,
                k * 4096
            );
        }
        std::fs::write(&p, text).unwrap();
        p
    }

    struct Log {
        inner: ReplayDriver,
        done: Vec<Completion>,
    }

    impl Driver for Log {
        fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
            self.done.push(done);
            self.inner.on_complete(dev, now, done);
        }
        fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
            self.inner.on_wake(dev, now, token);
        }
    }

    /// `tjob` replayed on `cfg` to the trace's end: the device, and the driver with every
    /// completion it saw.
    fn replay_to_end(cfg: &SsdConfig, tjob: &TraceJob) -> (Device, Log) {
        let src = Replay::new(tjob, cfg.logical_bytes(), 1).unwrap();
        let mut dev = Device::new(cfg, 1).unwrap();
        let mut log = Log {
            inner: ReplayDriver::new(src, tjob),
            done: Vec::new(),
        };
        log.inner.start(&mut dev);
        assert!(dev.run(&mut log, u64::MAX, &mut |_, _| true).unwrap());
        assert_eq!(log.inner.finish().unwrap(), "trace end");
        (dev, log)
    }

    fn replay(mode: &str) -> Vec<Completion> {
        let dir =
            std::env::temp_dir().join(format!("ssdlab-replay-test-{}-{mode}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = trace(&dir, 10);
        let tjob: TraceJob = serde_json::from_str(&format!(
            r#"{{"trace":{:?},"mode":"{mode}","iodepth":4,"queues":2}}"#,
            path.to_str().unwrap()
        ))
        .unwrap();
        let cfg = SsdConfig::resolve("small-tlc", &[]).unwrap();
        let (_, log) = replay_to_end(&cfg, &tjob);
        std::fs::remove_dir_all(&dir).unwrap();
        log.done
    }

    #[test]
    fn timed_replay_never_submits_before_the_trace_time() {
        let done = replay("timed");
        assert_eq!(done.len(), 10);
        for (k, c) in done.iter().enumerate() {
            // Arrivals at the trace times, 1 ms apart from the first.
            assert_eq!(c.arrival, SimTime::from_us(1000 * k as u64));
            assert!(c.done > c.arrival);
            // Round robin over the two host queues.
            assert_eq!(c.queue, (k % 2) as u32);
        }
    }

    /// `end_flush`: once the last write has completed, one Flush leaves no dirty line in a
    /// write-back buffer; without it the buffer keeps its dirty lines.
    #[test]
    fn end_flush_sends_one_flush_after_the_last_request() {
        let dir =
            std::env::temp_dir().join(format!("ssdlab-replay-end-flush-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = msr_trace(&dir, "Write", 20);
        for end_flush in [false, true] {
            let tjob: TraceJob = serde_json::from_str(&format!(
                r#"{{"trace":{:?},"mode":"timed","iodepth":4,"end_flush":{end_flush}}}"#,
                p.to_str().unwrap()
            ))
            .unwrap();
            let cfg = SsdConfig::resolve(
                "small-tlc",
                &[
                    "cache.capacity=\"256KiB\"".into(),
                    "cache.mode=\"write-back\"".into(),
                ],
            )
            .unwrap();
            let (dev, mut log) = replay_to_end(&cfg, &tjob);
            let flushes: Vec<_> = log
                .done
                .iter()
                .filter(|c| c.op == crate::request::Op::Flush)
                .collect();
            let dirty = dev.cache().unwrap().dirty_lines();
            if end_flush {
                assert_eq!(log.done.len(), 21);
                assert_eq!(flushes.len(), 1);
                let last_write = log
                    .done
                    .iter()
                    .filter(|c| c.op == crate::request::Op::Write)
                    .map(|c| c.done)
                    .max()
                    .unwrap();
                assert!(
                    flushes[0].arrival >= last_write,
                    "sent after the last write completed"
                );
                assert_eq!(dirty, 0);
                assert_eq!(
                    log.inner.outcome()["replayed"],
                    20,
                    "the Flush is not a trace request"
                );
            } else {
                assert_eq!((log.done.len(), flushes.len()), (20, 0));
                assert_eq!(dirty, 20, "the buffer keeps the writes");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn afap_replay_issues_at_once_up_to_iodepth() {
        let done = replay("afap");
        assert_eq!(done.len(), 10);
        // The first iodepth requests arrive at time 0; the rest as earlier ones complete.
        assert!(done.iter().filter(|c| c.arrival == SimTime::ZERO).count() == 4);
        assert!(done.iter().all(|c| c.done < SimTime::from_us(1000)));
    }
}
