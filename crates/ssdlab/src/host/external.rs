//! A device driven from outside the run loop: a caller (the register-level NVMe controller, a
//! test) submits requests at chosen simulated times and runs the device model until they finish.
//! The requests take the same path as a job's — host submit cost, interface, HIL, FTL, FIL — so
//! their timing is the performance model's.

use crate::config::{Bytes, SsdConfig};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::system::System;
use crate::workload::job::{BlockSize, Rw};
use crate::workload::{JobSpec, Op};

impl System {
    /// A device with no workload of its own, for [`System::submit_external`].
    pub fn driven(cfg: &SsdConfig, seed: u64) -> Result<System> {
        let spec = JobSpec {
            name: "external".into(),
            rw: Rw::Randread,
            bs: BlockSize::Fixed(Bytes(4096)),
            iodepth: 1,
            numjobs: 1,
            size: None,
            offset: Bytes(0),
            io_count: Some(1),
            runtime: None,
            rwmixread: 50,
            distribution: "uniform".into(),
            rate_iops: None,
            ramp: None,
        };
        let mut job = spec.fit(cfg.logical_bytes())?;
        // The job itself issues nothing: every request comes through `submit_external`.
        job.total_ios = Some(0);
        let mut sys = System::new(cfg, job, seed, false)?;
        sys.external = Some(Vec::new());
        Ok(sys)
    }

    /// The simulated time of the last event handled.
    pub fn now(&self) -> SimTime {
        self.q.now()
    }

    /// Submit a request of `len` bytes at `offset`, issued by the host at `at` (not before the
    /// model's current time). Returns its id, reported by [`System::run_external`] when done.
    /// A request ending beyond the logical capacity is refused.
    pub fn submit_external(&mut self, at: SimTime, op: Op, offset: u64, len: u64) -> Result<u32> {
        let cap = self.cfg.logical_bytes();
        if offset.checked_add(len).is_none_or(|end| end > cap) {
            return Err(Error::Job(format!(
                "request at byte {offset} of {len} bytes ends beyond the device's {cap} bytes"
            )));
        }
        if self.external.is_none() {
            return Err(Error::Job(
                "submit_external needs a device made by System::driven".into(),
            ));
        }
        let at = at.max(self.q.now());
        self.issued += 1;
        Ok(self.submit_io(at, 0, at, op, offset, len))
    }

    /// Run until no event is pending; returns each request finished since the last call with its
    /// completion time, in completion order.
    pub fn run_external(&mut self) -> Result<Vec<(u32, SimTime)>> {
        while let Some((now, ev)) = self.q.pop() {
            self.handle(now, ev)?;
        }
        Ok(self
            .external
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;

    #[test]
    fn driven_requests_complete_in_model_time() {
        let text = crate::config::presets::preset_toml("small-tlc").unwrap();
        let cfg = SsdConfig::from_toml_str(text, "small-tlc").unwrap();
        let mut sys = System::driven(&cfg, 1).unwrap();
        let w = sys
            .submit_external(SimTime::ZERO, Op::Write, 0, 8192)
            .unwrap();
        let done = sys.run_external().unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, w);
        // A program takes hundreds of microseconds on TLC.
        assert!(done[0].1 > SimTime::from_ns(100_000), "{:?}", done[0].1);
        let t = sys.now();
        let r = sys.submit_external(t, Op::Read, 0, 4096).unwrap();
        let done = sys.run_external().unwrap();
        assert_eq!(done[0].0, r);
        assert!(done[0].1 > t);
        assert!(sys
            .submit_external(t, Op::Read, cfg.logical_bytes(), 4096)
            .is_err());
    }
}
