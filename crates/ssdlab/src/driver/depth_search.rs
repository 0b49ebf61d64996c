//! fio's latency-target search (`latency_target`, `latency_window`, `latency_percentile`,
//! `latency_run`), for one job instance: the queue depth it may keep in flight, raised while
//! the requests of each window meet the target and lowered when they do not, settling at the
//! highest depth that meets it. The rules are fio 3.33's (io_u.c, `lat_target_init`,
//! `lat_target_check`, `lat_target_success`, `__lat_target_failed`):
//!
//! - The search starts at depth 1, between a low of 1 and a high of `iodepth`.
//! - A request over the target counts as failed; with a percentile of 100 it fails the depth
//!   at once (and at depth 1 ends the job: no depth meets the target).
//! - Once a window has passed (from the window's start to a completion), its share of requests
//!   within the target is judged: at least the percentile is a success, else a failure.
//! - Success: the low becomes the depth; the depth doubles while the high is still `iodepth`,
//!   else moves halfway to the high; at a depth one below the high three successes in a row
//!   raise the high by one. A success that leaves the depth where it was has found it: one
//!   more window runs at that depth with the figures restarted (fio's final run), and the next
//!   success there ends the job (unless `latency_run`, which keeps adjusting).
//! - Failure: the high becomes the depth, the depth moves halfway down to the low (the low
//!   drops by one first if it is the depth), and the requests in flight drain before the next
//!   window starts (fio's quiesce: none are issued until none are in flight).
//!
//! The driver (`driver::jobs`) asks [`DepthSearch::depth_allowed`] before issuing and tells
//! it every completion and when the instance has drained.

use crate::sim::SimTime;
use crate::workload::job::Job;

/// What the driver does after a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Go on, refilling up to the allowed depth.
    Go,
    /// A request at depth 1 missed the target with a percentile of 100: no depth meets it.
    Fatal,
}

/// One instance's search.
#[derive(Clone, Debug)]
pub struct DepthSearch {
    target_ps: u64,
    window_ps: u64,
    percentile: f64,
    keep_running: bool,
    max_depth: u32,
    depth: u32,
    low: u32,
    high: u32,
    /// Successes in a row at a depth one below the high.
    stable: u32,
    window_start: SimTime,
    /// Completions in the window, and those over the target.
    ios: u64,
    failed: u64,
    /// No new request until none is in flight; then a new window starts.
    draining: bool,
    /// The depth was found: the window running (or next) is the last (fio's `latency_end_run`).
    final_run: bool,
    /// The final run's window starts when the instance has drained: its figures restart then.
    restart_pending: bool,
    done: bool,
}

impl DepthSearch {
    /// The search of an instance of `job` (which has a `latency_target`), its first window
    /// starting at `from` (the end of the job's ramp, as fio restarts the search there).
    pub fn new(job: &Job, max_depth: u32, from: SimTime) -> Option<DepthSearch> {
        let s = &job.spec;
        let target = s.latency_target?;
        Some(DepthSearch {
            target_ps: target.0.ps(),
            window_ps: s.latency_window.map_or(0, |w| w.0.ps()),
            percentile: s.latency_percentile.unwrap_or(100.0),
            keep_running: s.latency_run,
            max_depth: max_depth.max(1),
            depth: 1,
            low: 1,
            high: max_depth.max(1),
            stable: 0,
            window_start: from,
            ios: 0,
            failed: 0,
            draining: false,
            final_run: false,
            restart_pending: false,
            done: false,
        })
    }

    /// The depth the search is at (fio's `latency_depth` in its report).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Requests the instance may have in flight now: none while draining or once done.
    pub fn depth_allowed(&self) -> u32 {
        if self.draining || self.done {
            0
        } else {
            self.depth
        }
    }

    /// Whether the search has ended the instance (the depth found and its final window run).
    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether it waits for the instance's requests to drain.
    pub fn draining(&self) -> bool {
        self.draining
    }

    /// A request completed at `now` after `latency_ps`; `measuring`: past the job's ramp, when
    /// fio judges windows.
    pub fn on_completion(&mut self, now: SimTime, latency_ps: u64, measuring: bool) -> Step {
        if self.done {
            return Step::Go;
        }
        self.ios += 1;
        if latency_ps > self.target_ps {
            if self.percentile >= 100.0 {
                if self.depth == 1 {
                    return Step::Fatal;
                }
                self.fail();
            } else {
                self.failed += 1;
            }
        }
        if measuring && !self.draining && (now - self.window_start).ps() >= self.window_ps {
            // The share within the target, as fio computes it (a double, in percent).
            let success = (self.ios - self.failed) as f64 / self.ios as f64 * 100.0;
            if success >= self.percentile {
                self.succeed(now);
            } else if self.depth > 1 {
                self.fail();
            }
        }
        Step::Go
    }

    /// The instance has nothing in flight at `now`: a drain ends and the next window starts.
    /// True when that window is the final run, whose figures start afresh now.
    pub fn drained(&mut self, now: SimTime) -> bool {
        if !self.draining {
            return false;
        }
        self.draining = false;
        self.new_window(now);
        std::mem::take(&mut self.restart_pending)
    }

    fn new_window(&mut self, now: SimTime) {
        self.window_start = now;
        self.ios = 0;
        self.failed = 0;
    }

    fn fail(&mut self) {
        self.high = self.depth;
        if self.depth == self.low {
            self.low -= 1;
        }
        self.depth = (self.depth + self.low) / 2;
        self.stable = 0;
        self.draining = true;
    }

    fn succeed(&mut self, now: SimTime) {
        let before = self.depth;
        self.low = self.depth;
        if self.depth + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.depth = if self.high != self.max_depth {
            (self.depth + self.high) / 2
        } else {
            self.depth.saturating_mul(2)
        }
        .min(self.max_depth);
        if !self.keep_running && self.depth == before {
            if self.final_run {
                self.done = true;
                return;
            }
            // Found: drain, then one window at this depth with the figures restarted.
            self.final_run = true;
            self.draining = true;
            self.restart_pending = true;
            return;
        }
        self.new_window(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobSpec;

    fn search(extra: &str, iodepth: u32) -> DepthSearch {
        let text = format!(r#"{{"rw":"randread","iodepth":{iodepth},{extra}}}"#);
        let job = JobSpec::from_json(&text).unwrap().fit(1 << 30).unwrap();
        DepthSearch::new(&job, iodepth, SimTime::ZERO).unwrap()
    }

    /// Drive a search with a device whose latency is `per_depth_us` × the depth in flight,
    /// one completion per `step`, draining at once; the depths it goes through.
    fn walk(s: &mut DepthSearch, per_depth_us: u64, steps: u32) -> Vec<u32> {
        let mut seen = vec![s.depth()];
        let mut now = SimTime::ZERO;
        for _ in 0..steps {
            if s.done() {
                break;
            }
            now += SimTime::from_us(10);
            let lat = SimTime::from_us(per_depth_us * s.depth() as u64).ps();
            assert_eq!(s.on_completion(now, lat, true), Step::Go);
            if s.draining() {
                s.drained(now);
            }
            if *seen.last().unwrap() != s.depth() {
                seen.push(s.depth());
            }
        }
        seen
    }

    #[test]
    fn doubles_then_bisects_to_the_highest_depth_within_the_target() {
        // Latency 10 µs per request in flight, target 105 µs: depth 10 meets it, 11 does not.
        let mut s = search(r#""latency_target":"105us""#, 64);
        let path = walk(&mut s, 10, 1000);
        assert_eq!(path[..7], [1, 2, 4, 8, 16, 12, 10], "{path:?}");
        assert!(s.done(), "{path:?}");
        assert_eq!(s.depth(), 10, "{path:?}");
    }

    #[test]
    fn stops_at_iodepth_when_every_depth_meets_the_target() {
        let mut s = search(r#""latency_target":"1s""#, 24);
        let path = walk(&mut s, 10, 1000);
        assert_eq!(path, [1, 2, 4, 8, 16, 24]);
        assert!(s.done() && s.depth() == 24);
    }

    #[test]
    fn a_miss_at_depth_1_with_percentile_100_is_fatal() {
        let mut s = search(r#""latency_target":"5us""#, 8);
        assert_eq!(
            s.on_completion(SimTime::from_us(1), SimTime::from_us(6).ps(), true),
            Step::Fatal
        );
    }

    #[test]
    fn a_percentile_below_100_judges_the_window_share() {
        // 99 %: one request in two hundred may miss without failing the window.
        let mut s = search(
            r#""latency_target":"100us","latency_window":"2ms","latency_percentile":99"#,
            8,
        );
        let mut now = SimTime::ZERO;
        for k in 0..200u64 {
            now += SimTime::from_us(10);
            let lat = if k == 50 { 200 } else { 50 };
            s.on_completion(now, SimTime::from_us(lat).ps(), true);
        }
        assert_eq!(s.depth(), 2, "2 ms passed with 99.5 % within: doubled");
        // The next window: four misses in two hundred (98 %) fail it.
        for k in 0..200u64 {
            now += SimTime::from_us(10);
            let lat = if k % 50 == 0 { 200 } else { 50 };
            s.on_completion(now, SimTime::from_us(lat).ps(), true);
        }
        assert!(s.draining() && s.depth() == 1, "depth {}", s.depth());
        assert_eq!(s.depth_allowed(), 0, "nothing issued while draining");
        assert!(!s.drained(now), "not the final run");
        assert_eq!(s.depth_allowed(), 1);
    }

    #[test]
    fn no_window_is_judged_during_the_ramp() {
        let mut s = search(r#""latency_target":"1ms""#, 8);
        for k in 1..50 {
            s.on_completion(SimTime::from_us(k), 1, false);
        }
        assert_eq!(s.depth(), 1);
    }
}
