//! A power cut on the page-mapped FTL (issue 43): any driver run up to a chosen device event
//! or simulated time, its completions reported to the device's power-loss model as they reach
//! the host (what the drive counts as acknowledged), then the cut and the recovery the model
//! works out (`Device::power_cut`). Off unless asked for: a run without a cut drives its
//! driver unwrapped.

use crate::device::{Completion, Device, Driver, PowerCutOutcome};
use crate::error::{got, says, Invalid};
use crate::error::{Error, Result};
use crate::sim::SimTime;

/// When the power fails: after the device has handled this many events, or at this simulated
/// time (after the events due at it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutAt {
    Event(u64),
    Time(SimTime),
}

impl CutAt {
    /// The option that names it, for messages.
    pub fn option(self) -> &'static str {
        match self {
            CutAt::Event(_) => "power_cut_event",
            CutAt::Time(_) => "power_cut_at",
        }
    }
}

/// A driver whose completions the device's power-loss model hears of.
pub struct Acknowledging<'a, D: Driver> {
    pub inner: &'a mut D,
}

impl<D: Driver> Driver for Acknowledging<'_, D> {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        dev.power_loss_acknowledged(&done);
        self.inner.on_complete(dev, now, done);
    }
    fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
        self.inner.on_wake(dev, now, token);
    }
    fn expected_requests(&self) -> u64 {
        self.inner.expected_requests()
    }
    fn finished(&self, now: SimTime) -> bool {
        self.inner.finished(now)
    }
}

/// Run `driver` on `dev` (its power-loss model armed: `Device::enable_power_loss`) until the
/// cut, then cut the power. `progress(done, total)` is called between slices of events;
/// returning false stops with [`Error::Interrupted`]. A cut the run never reaches (an event
/// beyond its last, a time after it ended) is an error naming the option and the run's end.
pub fn run_to_cut<D: Driver>(
    dev: &mut Device,
    driver: &mut D,
    cut: CutAt,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<PowerCutOutcome> {
    let mut d = Acknowledging { inner: driver };
    match cut {
        CutAt::Event(n) => loop {
            let handled = dev.events();
            if handled >= n {
                break;
            }
            let slice = (n - handled).min(1 << 16);
            if dev.run(&mut d, slice, &mut |_, _| false)? {
                // The device went idle first: nothing is left to run.
                return Err(Error::bad_job(Invalid::unnamed(
                    "power_cut_event",
                    got(
                        n,
                        format!("at most {} (the events the run handled)", dev.events()),
                    ),
                )));
            }
            if !progress(dev.host().completed(), d.expected_requests()) {
                return Err(Error::Interrupted);
            }
        },
        CutAt::Time(t) => {
            dev.run_until(&mut d, t)?;
            if dev.next_event_time().is_none() {
                return Err(Error::bad_job(Invalid::unnamed(
                    "power_cut_at",
                    got(
                        format!("{} us", t.as_us_f64()),
                        format!("before {} us (when the run ended)", dev.now().as_us_f64()),
                    ),
                )));
            }
        }
    }
    dev.power_cut().ok_or_else(|| {
        Error::bad_device(Invalid::unnamed(
            cut.option(),
            says("the device's power-loss model was not armed"),
        ))
    })
}
