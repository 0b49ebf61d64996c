//! Periodic statistics: a driver wrapped to look at the device every `interval` of simulated
//! time while the run goes on (MQSim's and SimpleSSD's periodic reports), keeping a time series
//! of its state. Off unless asked for: the run then drives its driver unwrapped.

use crate::device::{Completion, Device, Driver};
use crate::error::{Error, Invalid, Result, JOB};
use crate::sim::SimTime;
use crate::stats::result::Series;

/// The wake token of a sample (the job driver's tokens are instances and flow starts, far
/// below; the replay's is 0).
const SAMPLE: u32 = u32::MAX;

/// Most samples one run keeps (at most 15 figures of 8 bytes each) before it stops with an error
/// rather than grow without end.
pub const MAX_SAMPLES: usize = 1_000_000;

pub struct Sampler<'a, D: Driver> {
    inner: &'a mut D,
    interval: SimTime,
    series: Series,
    error: Option<Error>,
    /// The previous sample's time and each channel's and die's busy time run by then: the
    /// utilisation columns are over the interval between two samples.
    last_time: SimTime,
    last_channel_busy: Vec<SimTime>,
    last_die_busy: Vec<SimTime>,
}

impl<'a, D: Driver> Sampler<'a, D> {
    /// Sample `dev` now and every `interval` from now on.
    pub fn start(inner: &'a mut D, dev: &mut Device, interval: SimTime) -> Sampler<'a, D> {
        let now = dev.now();
        // A column for each part the device has; the others stay absent from the result.
        fn column<T>(present: bool) -> Option<Vec<T>> {
            present.then(Vec::new)
        }
        // The back end's NAND channels and dies (none on a PCM-only device).
        let (last_channel_busy, last_die_busy) = (
            dev.backend().channel_busy_by(now),
            dev.backend().die_busy_by(now),
        );
        let has_dies = !last_die_busy.is_empty();
        let has_zones = dev.backend().zoned().is_some();
        let series = Series {
            channel_utilisation_mean: column(has_dies),
            die_utilisation_mean: column(has_dies),
            die_utilisation_max: column(has_dies),
            cache_lines_used: column(dev.cache().is_some()),
            cache_dirty_lines: column(dev.cache().is_some()),
            open_zones: column(has_zones),
            active_zones: column(has_zones),
            zone_resets: column(has_zones),
            fdp_handle_write_amplification: dev
                .fdp_result()
                .map(|f| vec![Vec::new(); f.per_handle.len()]),
            ..Series::default()
        };
        let mut s = Sampler {
            inner,
            interval,
            series,
            error: None,
            last_time: now,
            last_channel_busy,
            last_die_busy,
        };
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
        let s = &mut self.series;
        s.time_s.push(now.as_secs_f64());
        // The back end's free blocks (0 where it keeps no pool), and its writes as the
        // result counts them: the page FTL's GC figures (zeros under another scheme: no
        // page-FTL GC runs there), and the write amplification each scheme reports.
        let b = dev.backend();
        let free_blocks = b.free_blocks().unwrap_or(0);
        let gc = b.gc_counts();
        s.free_blocks.push(free_blocks);
        s.gc_runs.push(gc.runs);
        s.gc_units_moved.push(gc.units_moved);
        s.write_amplification.push(gc.write_amplification());
        s.requests_in_flight.push(dev.host().in_flight() as u64);
        s.requests_completed.push(dev.host().completed());
        if let Some(col) = &mut s.cache_lines_used {
            col.push(dev.cache().map_or(0, |c| c.lines_in_use()) as u64);
        }
        if let Some(col) = &mut s.cache_dirty_lines {
            col.push(dev.cache().map_or(0, |c| c.dirty_lines()) as u64);
        }
        if let Some(z) = b.zoned() {
            let push = |col: &mut Option<Vec<u64>>, v: u64| col.as_mut().map(|c| c.push(v));
            push(&mut s.open_zones, z.zones.open_zones() as u64);
            push(&mut s.active_zones, z.zones.active_zones() as u64);
            push(&mut s.zone_resets, z.zones.counters.resets);
        }
        if let (Some(cols), Some(streams)) = (&mut s.fdp_handle_write_amplification, b.streams()) {
            // Handle h is the FTL's write stream h (device/fdp.rs).
            for (col, st) in cols.iter_mut().zip(streams) {
                col.push(write_amplification(
                    st.host_units_written,
                    st.gc_units_moved,
                ));
            }
        }
        self.sample_utilisation(dev, now);
    }

    /// Each channel's and die's busy time run since the last sample ÷ the time since it (0 at
    /// the first sample), capped at 1.
    fn sample_utilisation(&mut self, dev: &Device, now: SimTime) {
        let s = &mut self.series;
        let (Some(ch_mean), Some(die_mean), Some(die_max)) = (
            &mut s.channel_utilisation_mean,
            &mut s.die_utilisation_mean,
            &mut s.die_utilisation_max,
        ) else {
            return;
        };
        let span = (now - self.last_time).as_secs_f64();
        // The busy time run by now is known exactly when the work ahead runs back to back;
        // a reservation ahead with a gap before it makes it an underestimate for a while, so
        // the figure kept is the largest yet (the intervals then add up to the run's total).
        let util = |busy: SimTime, last: &mut SimTime| {
            let ran = busy - *last;
            *last = busy.max(*last);
            if span > 0.0 {
                (ran.as_secs_f64() / span).min(1.0)
            } else {
                0.0
            }
        };
        let channels: Vec<f64> = (dev.backend().channel_busy_by(now).into_iter())
            .zip(&mut self.last_channel_busy)
            .map(|(b, last)| util(b, last))
            .collect();
        let dies: Vec<f64> = (dev.backend().die_busy_by(now).into_iter())
            .zip(&mut self.last_die_busy)
            .map(|(b, last)| util(b, last))
            .collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        ch_mean.push(mean(&channels));
        die_mean.push(mean(&dies));
        die_max.push(dies.iter().cloned().fold(0.0, f64::max));
        self.last_time = now;
    }
}

/// (host units + units moved by GC) / host units; 0 before the first write.
fn write_amplification(host_units: u64, gc_units_moved: u64) -> f64 {
    if host_units > 0 {
        (host_units + gc_units_moved) as f64 / host_units as f64
    } else {
        0.0
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
            self.error.get_or_insert(Error::bad_job(Invalid::got(
                JOB,
                "stats_interval",
                format!("{} s", self.interval.as_secs_f64()),
                format!("an interval that gives at most {MAX_SAMPLES} samples of this run (a longer one)"),
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
