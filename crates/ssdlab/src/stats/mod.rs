//! Statistics: latency histograms and the result object of a run.

pub mod result;

use hdrhistogram::Histogram;

/// Latencies of one op type, recorded in nanoseconds into an HDR histogram (3 significant
/// digits, so every percentile is within 0.1 %).
pub struct LatencyStats {
    hist: Histogram<u64>,
    pub count: u64,
    pub bytes: u64,
    sum_ns: u128,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            // 1 ns to one hour of simulated time up front; a longer latency (a 10^6 s link, a
            // 1 T/s bus) grows the histogram when it comes, up to the clock's 2^64 ps, so its
            // percentiles are its own and not the hour's top (issue 15, defect 3).
            hist: {
                let mut h =
                    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds");
                h.auto(true);
                h
            },
            count: 0,
            bytes: 0,
            sum_ns: 0,
        }
    }
}

impl LatencyStats {
    #[inline]
    pub fn record(&mut self, latency_ps: u64, bytes: u64) {
        let ns = (latency_ps / 1000).max(1);
        if self.hist.record(ns).is_err() {
            // Only a resize the address space cannot hold fails; latencies stay below 2^64 ps.
            self.hist.saturating_record(ns);
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
        let q = |p: f64| us(self.hist.value_at_quantile(p));
        result::LatencySummary {
            min: us(self.hist.min()),
            mean: self.sum_ns as f64 / self.count as f64 / 1000.0,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: us(self.hist.max()),
        }
    }
}

/// Peak resident memory of this process in bytes, where the OS tells it (Linux).
pub fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_past_an_hour_keep_their_value() {
        let mut l = LatencyStats::default();
        let second_ps = 1_000_000_000_000u64;
        // 4 x 10^6 s, as four crossings of a 10^6 s link: clamped at 3,601 s before.
        for _ in 0..99 {
            l.record(4_000_000 * second_ps, 4096);
        }
        l.record(second_ps / 1_000_000, 4096); // 1 µs
        l.record(u64::MAX, 4096); // the clock's end
        let s = l.summary();
        let near = |got: f64, want: f64| (got - want).abs() <= want * 1e-3;
        assert!(near(s.p50, 4e12), "p50 {} µs", s.p50);
        assert!(near(s.min, 1.0), "min {} µs", s.min);
        assert!(near(s.max, u64::MAX as f64 / 1e6), "max {} µs", s.max);
    }
}
