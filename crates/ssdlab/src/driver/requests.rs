//! A host program's request list: requests the host worked out beforehand (a key–value cache's
//! bucket writes, segment writes and zone resets, `ssdlab.examples.kvcache`), each with its own
//! op, place, length and write stream (the placement id it carries), issued in list order on
//! one queue as fast as the device takes them, at most `iodepth` in flight. A program whose
//! logic does not depend on timing can be written as such a list; one that waits for a
//! request's data before its next cannot (the list does not hold that dependency).
//!
//! The first `warmup` requests fill the drive: once they have all completed, measuring starts
//! (latencies, throughput and the write counters of the result's `requests.measured`) with the
//! request after them.

use crate::device::{Completion, Device, Driver, Flags, Request};
use crate::error::{got, says, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use serde::Serialize;

/// One request of the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedRequest {
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    /// The write stream (placement id) a write carries; 0 for the default.
    pub stream: u8,
}

/// The list and how to issue it.
#[derive(Clone, Debug)]
pub struct RequestList {
    pub requests: Vec<ListedRequest>,
    /// Most requests in flight.
    pub iodepth: u32,
    /// Requests before the measured part.
    pub warmup: u64,
}

impl RequestList {
    /// Check the list's own fields (the device checks each request as it is submitted).
    pub fn check(&self) -> Result<()> {
        if self.iodepth == 0 {
            return Err(Error::bad_job(Invalid::got(
                "request list",
                "iodepth",
                "0",
                "at least 1",
            )));
        }
        if self.requests.is_empty() {
            return Err(Error::bad_job(Invalid::unnamed(
                "request list",
                got("no requests", "at least one"),
            )));
        }
        if self.warmup >= self.requests.len() as u64 {
            return Err(Error::bad_job(Invalid::got(
                "request list",
                "warmup",
                self.warmup,
                format!(
                    "fewer than the {} requests (something must be measured)",
                    self.requests.len()
                ),
            )));
        }
        Ok(())
    }

    /// The list as the result's `job`.
    pub fn job_json(&self) -> serde_json::Value {
        serde_json::json!({
            "requests": self.requests.len(),
            "warmup": self.warmup,
            "iodepth": self.iodepth,
        })
    }
}

/// Units the host wrote and units the device programmed for them (its GC's moves, a finish's
/// filler), as the back end counts them: the write amplification of a window is the ratio of
/// their growth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WriteCounts {
    pub host_units_written: u64,
    pub device_units_written: u64,
}

impl WriteCounts {
    pub fn of(dev: &Device) -> WriteCounts {
        let w = dev.backend().units_written();
        WriteCounts {
            host_units_written: w.host,
            device_units_written: w.device,
        }
    }
}

/// Each write stream's host writes and GC moves (only with `ftl.streams` > 1).
fn stream_counts(dev: &Device) -> Vec<(u64, u64)> {
    dev.backend()
        .streams()
        .map(|all| {
            all.iter()
                .map(|s| (s.host_units_written, s.gc_units_moved))
                .collect()
        })
        .unwrap_or_default()
}

fn ratio(device: u64, host: u64) -> f64 {
    if host == 0 {
        0.0
    } else {
        device as f64 / host as f64
    }
}

pub struct RequestListDriver {
    list: RequestList,
    /// The next request to issue.
    next: usize,
    inflight: u32,
    /// The counters when the measured part began (None before).
    start: Option<(WriteCounts, Vec<(u64, u64)>)>,
    error: Option<Error>,
}

impl RequestListDriver {
    pub fn new(list: RequestList) -> RequestListDriver {
        RequestListDriver {
            list,
            next: 0,
            inflight: 0,
            start: None,
            error: None,
        }
    }

    /// Issue the first requests at time 0. Until the warm-up is over nothing is measured (the
    /// host counts a request's latency when it completes, if it arrived after this time).
    pub fn start(&mut self, dev: &mut Device) {
        if self.list.warmup > 0 {
            dev.measure_from(SimTime::MAX);
        }
        self.pump(dev, SimTime::ZERO);
    }

    /// Why the run ended, or the first request the device refused.
    pub fn finish(&mut self) -> Result<&'static str> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok("list end"),
        }
    }

    /// The result's `requests` section: the counts, and the write counters over the measured
    /// part (from the first measured request's issue to the end of the run).
    pub fn outcome(&self, dev: &Device) -> serde_json::Value {
        let end = WriteCounts::of(dev);
        let (start, streams0) = self.start.clone().unwrap_or_default();
        let host = end.host_units_written - start.host_units_written;
        let device = end.device_units_written - start.device_units_written;
        let streams: Vec<serde_json::Value> = stream_counts(dev)
            .iter()
            .enumerate()
            .map(|(i, &(h, m))| {
                let (h0, m0) = streams0.get(i).copied().unwrap_or((0, 0));
                let (h, m) = (h - h0, m - m0);
                serde_json::json!({
                    "stream": i,
                    "host_units_written": h,
                    "gc_units_moved": m,
                    "write_amplification": ratio(h + m, h),
                })
            })
            .collect();
        let mut measured = serde_json::json!({
            "host_units_written": host,
            "device_units_written": device,
            "write_amplification": ratio(device, host),
        });
        if !streams.is_empty() {
            measured["streams"] = serde_json::Value::Array(streams);
        }
        serde_json::json!({
            "count": self.list.requests.len(),
            "warmup": self.list.warmup,
            "iodepth": self.list.iodepth,
            "issued": self.next,
            "measured": measured,
        })
    }

    fn pump(&mut self, dev: &mut Device, now: SimTime) {
        while self.error.is_none()
            && self.inflight < self.list.iodepth
            && self.next < self.list.requests.len()
        {
            let req = self.list.requests[self.next];
            if !dev.queue_has_room(0, req.op, req.offset, req.len) {
                return;
            }
            if self.next as u64 == self.list.warmup && self.start.is_none() {
                // The warm-up drains first, so that the counters hold all its writes and none
                // of the measured part's.
                if self.inflight > 0 {
                    return;
                }
                dev.measure_from(now);
                self.start = Some((WriteCounts::of(dev), stream_counts(dev)));
            }
            let r = Request {
                op: req.op,
                offset: req.offset,
                len: req.len,
                queue: 0,
                flags: Flags::NONE.with_stream(req.stream),
                arrival: now,
            };
            dev.host_syscall(now, 0);
            dev.host_kernel_request(now, 0);
            if let Err(e) = dev.submit(now, r) {
                // The request's own refusal keeps its parts, the list's index before it.
                let at = format!("request list, request {}", self.next);
                self.error = Some(Error::bad_job(match e.invalid() {
                    Some(i) => Invalid {
                        origin: format!("{at}: {}", i.origin),
                        ..i.clone()
                    },
                    None => Invalid::unnamed(at, says(e.to_string())),
                }));
                return;
            }
            self.next += 1;
            self.inflight += 1;
        }
    }
}

impl Driver for RequestListDriver {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, _done: Completion) {
        self.inflight -= 1;
        self.pump(dev, now);
    }

    fn on_wake(&mut self, dev: &mut Device, now: SimTime, _token: u32) {
        self.pump(dev, now);
    }

    fn expected_requests(&self) -> u64 {
        self.list.requests.len() as u64
    }

    fn finished(&self, _now: SimTime) -> bool {
        self.error.is_some() || self.next >= self.list.requests.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;

    fn run(cfg: &SsdConfig, list: RequestList) -> (Device, RequestListDriver) {
        let mut dev = Device::new(cfg, 1).unwrap();
        let mut d = RequestListDriver::new(list);
        d.start(&mut dev);
        assert!(dev.run(&mut d, u64::MAX, &mut |_, _| true).unwrap());
        (dev, d)
    }

    fn write(offset: u64, stream: u8) -> ListedRequest {
        ListedRequest {
            op: Op::Write,
            offset,
            len: 4096,
            stream,
        }
    }

    #[test]
    fn a_list_is_issued_in_order_and_measured_after_its_warmup() {
        let cfg = SsdConfig::resolve("small-tlc", &["precondition.fill=\"none\"".into()]).unwrap();
        let requests: Vec<_> = (0..100).map(|k| write(k * 4096, 0)).collect();
        let (dev, mut d) = run(
            &cfg,
            RequestList {
                requests,
                iodepth: 4,
                warmup: 40,
            },
        );
        assert_eq!(d.finish().unwrap(), "list end");
        assert_eq!(dev.host().completed(), 100);
        let out = d.outcome(&dev);
        assert_eq!(out["issued"], 100);
        // 60 measured 4 KiB writes, one unit each, on an empty drive: no GC.
        assert_eq!(out["measured"]["host_units_written"], 60);
        assert_eq!(out["measured"]["write_amplification"], 1.0);
        // The latencies are the measured part's only.
        assert_eq!(dev.host().latency(Op::Write).count, 60);
    }

    #[test]
    fn a_stream_the_drive_lacks_is_refused_naming_the_request() {
        let cfg = SsdConfig::resolve("small-tlc", &["precondition.fill=\"none\"".into()]).unwrap();
        let mut dev = Device::new(&cfg, 1).unwrap();
        let mut d = RequestListDriver::new(RequestList {
            requests: vec![write(0, 0), write(4096, 3)],
            iodepth: 1,
            warmup: 0,
        });
        d.start(&mut dev);
        dev.run(&mut d, u64::MAX, &mut |_, _| true).unwrap();
        let e = d.finish().unwrap_err().to_string();
        assert!(e.contains("request 1") && e.contains("stream"), "{e}");
    }

    #[test]
    fn bad_list_fields_are_named() {
        let list = RequestList {
            requests: vec![write(0, 0)],
            iodepth: 0,
            warmup: 0,
        };
        assert!(list.check().unwrap_err().to_string().contains("`iodepth`"));
        let list = RequestList {
            iodepth: 1,
            warmup: 1,
            ..list
        };
        assert!(list.check().unwrap_err().to_string().contains("`warmup`"));
    }
}
