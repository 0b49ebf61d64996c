//! The statistics' report: what `ssdlab trace stats` prints and `--json` writes (schema
//! `ssdlab.trace_stats/1`), each part a plain serialisable record.

use super::Sample;
use serde::Serialize;

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Writes carrying one directive identifier.
#[derive(Clone, Debug, Serialize)]
pub struct DirectiveCount {
    /// `placement` (FDP's data placement directive) or `stream` (the Streams directive).
    pub directive: &'static str,
    pub id: u16,
    pub writes: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Bucket {
    pub le_bytes: u64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SizeCount {
    pub bytes: u64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SizeSummary {
    pub count: u64,
    pub bytes: u64,
    pub mean_bytes: f64,
    pub zero_length: u64,
    /// Requests of at most `le_bytes` (and more than the previous bucket's), by powers of two.
    pub histogram: Vec<Bucket>,
    pub most_common: Vec<SizeCount>,
    /// Requests whose size was not among the first 4096 distinct sizes seen.
    pub other_sizes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IatBucket {
    pub lt_us: f64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IatSummary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// Gaps below 1 ns (same timestamp).
    pub zero: u64,
    pub histogram: Vec<IatBucket>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimeSummary {
    pub duration_s: f64,
    pub iops: f64,
    /// Requests whose timestamp is earlier than the one before.
    pub out_of_order: u64,
    /// The timestamps' resolution ([`TimeResolution`]) in µs; None with fewer than two
    /// distinct timestamps.
    pub resolution_us: Option<f64>,
    pub inter_arrival_us: IatSummary,
}

/// The resolution of a trace's timestamps: the largest time every timestamp is a whole number
/// of apart (the greatest common divisor of their distances from the first). A trace written
/// in whole seconds has 1 s, whatever its request rate: a timed replay then sends each second's
/// requests at one instant, and their latencies measure that burst's queue.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeResolution {
    first: Option<u64>,
    gcd_ps: u64,
}

impl TimeResolution {
    pub fn add(&mut self, time_ps: u64) {
        let first = *self.first.get_or_insert(time_ps);
        let mut a = self.gcd_ps;
        let mut b = time_ps.abs_diff(first);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        self.gcd_ps = a;
    }

    /// In µs; None until two distinct timestamps were added.
    pub fn us(&self) -> Option<f64> {
        (self.gcd_ps > 0).then(|| self.gcd_ps as f64 / 1e6)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct IrdBucket {
    pub from_bytes: i64,
    pub to_bytes: i64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IrdSummary {
    /// Consecutive read/write pairs on the same device.
    pub pairs: u64,
    pub block_bytes: u64,
    /// IRD = 0.
    pub sequential_fraction: f64,
    /// 0 < |IRD| < block_bytes.
    pub near_fraction: f64,
    /// |IRD| ≥ block_bytes.
    pub far_fraction: f64,
    pub histogram: Vec<IrdBucket>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SeqSummary {
    /// Reads and writes that start where the previous one on their device ended.
    pub fraction: f64,
    pub runs: u64,
    pub mean_run_requests: f64,
    pub mean_run_bytes: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Footprint {
    /// Distinct bytes read or written (512-byte sectors).
    pub bytes: u64,
    pub written_bytes: u64,
    pub blocks_4k: u64,
    pub devices: u64,
    /// The sum over devices of each one's highest end address.
    pub address_span_bytes: u64,
    pub max_end_bytes: u64,
    /// Reads and writes counted in the footprint, overwrite and hot-set figures (1 unless the
    /// chunk budget ran out).
    pub tracked_fraction: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Overwrite {
    pub written_bytes: u64,
    /// Written bytes that had been written before in the trace.
    pub overwritten_bytes: u64,
    pub overwrite_ratio: f64,
    /// Writes that rewrite at least one sector written before.
    pub rewrite_request_ratio: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct HotSet {
    /// The smallest fraction of the touched 4 KiB blocks that receives 50 / 80 / 90 % of the
    /// block accesses.
    pub fraction_for_50pct: f64,
    pub fraction_for_80pct: f64,
    pub fraction_for_90pct: f64,
    /// The share of block accesses that the busiest 1 / 10 / 20 % of blocks receive.
    pub top_1pct_share: f64,
    pub top_10pct_share: f64,
    pub top_20pct_share: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceSummary {
    pub device: u32,
    pub requests: u64,
    pub bytes: u64,
    pub min_offset_bytes: u64,
    pub max_end_bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct StatsSummary {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    /// Zone Appends (NVMe traces; written only when there are some).
    #[serde(skip_serializing_if = "is_zero")]
    pub appends: u64,
    /// Zone Management Send actions (NVMe traces; written only when there are some).
    #[serde(skip_serializing_if = "is_zero")]
    pub zone_management: u64,
    /// Writes carrying a stream or placement directive, by identifier (NVMe traces; written
    /// only when there are some).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub directives: Vec<DirectiveCount>,
    pub read_ratio_by_count: f64,
    pub write_ratio_by_count: f64,
    pub read_ratio_by_bytes: f64,
    pub write_ratio_by_bytes: f64,
    pub read: SizeSummary,
    pub write: SizeSummary,
    pub trim: SizeSummary,
    pub time: TimeSummary,
    pub ird: IrdSummary,
    pub sequential: SeqSummary,
    pub footprint: Footprint,
    pub overwrite: Overwrite,
    pub hot_set: HotSet,
    /// The busiest devices (at most 32), by requests.
    pub devices: Vec<DeviceSummary>,
    /// Requests kept for an address-over-time picture, when asked for
    /// ([`StatsOptions::sample_points`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sample>,
}

/// What a statistics run read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceInfo {
    pub file: String,
    pub format: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    pub skipped_bad_lines: u64,
    /// Lines of the format that hold no request (headers, other events, no-data and
    /// pass-through events), skipped without being errors.
    pub not_request_lines: u64,
    pub bad_lines: Vec<String>,
    /// Requests of devices not asked for.
    pub filtered_device: u64,
    /// Requests timestamped before the earliest of the first lines (counted at time 0).
    pub before_start: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::workload::trace::model::ModelParams>,
}

/// `ssdlab trace stats --json`: schema, what was read, then the statistics.
#[derive(Clone, Debug, Serialize)]
pub struct StatsReport {
    pub schema: &'static str,
    pub source: SourceInfo,
    #[serde(flatten)]
    pub stats: StatsSummary,
}
