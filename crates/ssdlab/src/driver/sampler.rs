//! Periodic statistics: a driver wrapped to look at the device every `interval` of simulated
//! time while the run goes on (MQSim's and SimpleSSD's periodic reports), keeping a time series
//! of its state. Off unless asked for: the run then drives its driver unwrapped.

use crate::device::{Completion, Device, Driver};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::stats::result::Series;

/// The wake token of a sample (the job driver's tokens are instances and flow starts, far
/// below; the replay's is 0).
const SAMPLE: u32 = u32::MAX;

/// Most samples one run keeps (8 figures of 8 bytes each) before it stops with an error rather
/// than grow without end.
pub const MAX_SAMPLES: usize = 1_000_000;

pub struct Sampler<'a, D: Driver> {
    inner: &'a mut D,
    interval: SimTime,
    series: Series,
    error: Option<Error>,
}

impl<'a, D: Driver> Sampler<'a, D> {
    /// Sample `dev` now and every `interval` from now on.
    pub fn start(inner: &'a mut D, dev: &mut Device, interval: SimTime) -> Sampler<'a, D> {
        let mut s = Sampler {
            inner,
            interval,
            series: Series::default(),
            error: None,
        };
        let now = dev.now();
        s.sample(dev, now);
        dev.wake_at(now + interval, SAMPLE);
        s
    }

    /// The series, or the error that stopped the sampling.
    pub fn finish(self) -> Result<Series> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.series),
        }
    }

    fn sample(&mut self, dev: &Device, now: SimTime) {
        let f = &dev.ftl().stats;
        let s = &mut self.series;
        s.time_s.push(now.as_secs_f64());
        s.free_blocks.push(dev.ftl().free_blocks_total());
        s.gc_runs.push(f.gc_runs);
        s.gc_units_moved.push(f.gc_units_moved);
        s.write_amplification.push(if f.host_units_written > 0 {
            (f.host_units_written + f.gc_units_moved) as f64 / f.host_units_written as f64
        } else {
            0.0
        });
        s.requests_in_flight.push(dev.host().in_flight() as u64);
        s.requests_completed.push(dev.host().completed());
    }
}

impl<D: Driver> Driver for Sampler<'_, D> {
    #[inline]
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        self.inner.on_complete(dev, now, done);
    }

    fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
        if token != SAMPLE {
            return self.inner.on_wake(dev, now, token);
        }
        self.sample(dev, now);
        if self.series.time_s.len() >= MAX_SAMPLES {
            self.error.get_or_insert(Error::Job(format!(
                "stats_interval: {:.9} s gives more than {MAX_SAMPLES} samples of this run; raise the interval",
                self.interval.as_secs_f64()
            )));
            return;
        }
        // Only while something else is still to happen: a device with nothing left to do
        // stops the run, and a sample would keep it going for ever.
        if dev.next_event_time().is_some() {
            dev.wake_at(now + self.interval, SAMPLE);
        }
    }

    fn expected_requests(&self) -> u64 {
        self.inner.expected_requests()
    }

    fn finished(&self, now: SimTime) -> bool {
        self.inner.finished(now)
    }
}
