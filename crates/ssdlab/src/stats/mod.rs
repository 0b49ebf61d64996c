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
            // 1 ns to one hour of simulated time; longer latencies saturate at the top.
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds"),
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
        self.hist.saturating_record(ns);
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
