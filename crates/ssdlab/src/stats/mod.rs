//! Statistics: latency histograms and the result object of a run.

pub mod power;
pub mod result;

use hdrhistogram::Histogram;

/// The histogram's top: one hour of simulated time, in ns. Latencies above it are counted in
/// the result (`above_histogram`), their percentiles read as this value, and the maximum and mean
/// stay exact. (Widening the histogram to the clock's full range costs about 0.5 % of a run's
/// instructions for latencies no drive shows outside a broken config.)
const HIST_TOP_NS: u64 = 3_600_000_000_000;

/// Latencies of one op type, recorded in nanoseconds into an HDR histogram (3 significant
/// digits, so every percentile is within 0.1 %).
pub struct LatencyStats {
    hist: Histogram<u64>,
    pub count: u64,
    pub bytes: u64,
    sum_ns: u128,
    /// The largest latency above the histogram's top, exact (0 when none).
    max_ns: u64,
    /// Latencies above the histogram's top.
    above_top: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            // 1 ns to one hour of simulated time; longer latencies saturate at the top.
            hist: Histogram::new_with_bounds(1, HIST_TOP_NS, 3).expect("histogram bounds"),
            count: 0,
            bytes: 0,
            sum_ns: 0,
            max_ns: 0,
            above_top: 0,
        }
    }
}

impl LatencyStats {
    #[inline]
    pub fn record(&mut self, latency_ps: u64, bytes: u64) {
        let ns = (latency_ps / 1000).max(1);
        self.hist.saturating_record(ns);
        if ns > HIST_TOP_NS {
            // Never taken outside a broken config: the common path pays one compare.
            self.above_top += 1;
            self.max_ns = self.max_ns.max(ns);
        }
        self.count += 1;
        self.bytes += bytes;
        self.sum_ns += ns as u128;
    }

    pub fn summary(&self) -> result::LatencySummary {
        let us = |ns: u64| ns as f64 / 1000.0;
        if self.count == 0 {
            return result::LatencySummary::default();
        }
        // The histogram's maximum (within 0.1 %, as the percentiles), or the exact one when
        // it is above the histogram's top.
        let max_ns = if self.above_top > 0 {
            self.max_ns
        } else {
            self.hist.max()
        };
        // A percentile that falls among latencies above the top reads as the top (3.6e9 µs);
        // `above_histogram` says how many there were. A bucket's upper end can pass the exact
        // maximum: no percentile is shown above the maximum.
        let q = |p: f64| us(self.hist.value_at_quantile(p).min(max_ns));
        result::LatencySummary {
            min: us(self.hist.min()),
            mean: self.sum_ns as f64 / self.count as f64 / 1000.0,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: us(max_ns),
            above_histogram: self.above_top,
        }
    }
}

/// Peak resident memory of this process in bytes, where the OS tells it (Linux).
pub fn peak_memory_bytes() -> Option<u64> {
    crate::sim::mem::proc_kib_field("/proc/self/status", "VmHWM:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_above_an_hour_are_counted_and_the_max_stays_exact() {
        let mut s = LatencyStats::default();
        s.record(1_000_000, 4096); // 1 µs
        let two_hours_ps = 2 * 3_600 * 1_000_000_000_000u64;
        s.record(two_hours_ps, 4096);
        let sum = s.summary();
        assert_eq!(sum.above_histogram, 1);
        assert_eq!(sum.max, 7_200_000_000.0);
        // The percentile among the clamped latencies reads as the top, as the field says.
        assert!(sum.p99 >= 3_600_000_000.0 && sum.p99 < 3_604_000_000.0);
        // Under the top nothing is flagged.
        let mut t = LatencyStats::default();
        t.record(5_000_000, 4096);
        assert_eq!(t.summary().above_histogram, 0);
        let json = serde_json::to_value(t.summary()).unwrap();
        assert!(json.get("above_histogram").is_none());
    }

    #[test]
    fn no_percentile_is_above_the_maximum() {
        // Every latency just above the top: the percentiles read the top's bucket, whose upper
        // end (3,601.9 s) passed the exact maximum (3,600.5 s).
        let mut s = LatencyStats::default();
        for _ in 0..3 {
            s.record(3_600_500_000_000_000, 4096);
        }
        let sum = s.summary();
        assert_eq!(sum.max, 3_600_500_000.0);
        for p in [sum.p50, sum.p90, sum.p99, sum.p99_9, sum.p99_99] {
            assert!(p <= sum.max, "{p} above the maximum {}", sum.max);
        }
    }
}
