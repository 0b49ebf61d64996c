//! The result of one run: versioned, serialised as JSON with a stable field order.
//!
//! Everything that depends on the wall clock sits in `wall`; all the rest is a pure function of
//! (config, job, seed).

use serde::Serialize;

pub const SCHEMA: &str = "ssdlab.result/1";

#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencySummary {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct OpResult {
    pub count: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    pub bandwidth_mb_s: f64,
    pub latency_us: LatencySummary,
}

#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    pub count: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    pub bandwidth_mb_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimInfo {
    pub simulated_time_s: f64,
    pub measured_time_s: f64,
    pub requests: u64,
    pub events: u64,
    pub stop_reason: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Spread {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub stddev: f64,
}

impl Spread {
    pub fn of(values: impl Iterator<Item = f64>) -> Spread {
        let v: Vec<f64> = values.collect();
        if v.is_empty() {
            return Spread::default();
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        Spread {
            min: v.iter().cloned().fold(f64::INFINITY, f64::min),
            mean,
            max: v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            stddev: var.sqrt(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceResult {
    pub logical_bytes: u64,
    pub map_unit_bytes: u64,
    /// Host data read and written, in NAND pages (host bytes ÷ page size, by map units).
    pub host_pages_read: u64,
    pub host_pages_written: u64,
    pub nand_pages_read: u64,
    pub nand_pages_written: u64,
    pub write_amplification: f64,
    pub gc_runs: u64,
    /// Map units GC copied (a unit is `map_unit_bytes`).
    pub gc_units_moved: u64,
    pub erases: u64,
    pub erase_count: Spread,
    pub wear_level_migrations: u64,
    pub forced_erases: u64,
    pub trimmed_units: u64,
    pub unmapped_reads: u64,
    pub buffer_reads: u64,
    pub multiplane_ops: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct UnitUtil {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub per_unit: Vec<f64>,
}

impl UnitUtil {
    pub fn of(per_unit: Vec<f64>) -> UnitUtil {
        let s = Spread::of(per_unit.iter().cloned());
        UnitUtil {
            mean: s.mean,
            min: s.min,
            max: s.max,
            per_unit,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Utilisation {
    pub channel: UnitUtil,
    pub die: UnitUtil,
    pub link_up: f64,
    pub link_down: f64,
    pub host_cpu: f64,
    pub controller_cpu: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Wall {
    pub seconds: f64,
    pub precondition_seconds: f64,
    pub requests_per_s: f64,
    pub events_per_s: f64,
    pub peak_memory_bytes: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub schema: &'static str,
    pub ssdlab_version: &'static str,
    pub config_name: String,
    pub config_hash: String,
    pub seed: u64,
    pub job: serde_json::Value,
    /// Only for a trace replay: what was read, filtered and how it was mapped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<serde_json::Value>,
    pub sim: SimInfo,
    pub ops: std::collections::BTreeMap<&'static str, OpResult>,
    pub total: Totals,
    pub device: DeviceResult,
    pub utilisation: Utilisation,
    pub interface: InterfaceResult,
    /// Only with a cache buffer (`[cache]` in the config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheResult>,
    pub wall: Wall,
}

/// The host interface: which one, its link, and (DRAM interface) the shared buffer's figures.
#[derive(Clone, Debug, Serialize)]
pub struct InterfaceResult {
    pub kind: &'static str,
    pub link: String,
    /// Most commands the device may hold at once (NVMe: entries per queue − 1, all queues).
    pub device_queue_depth: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dram: Option<DramIfResult>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DramIfResult {
    #[serde(flatten)]
    pub stats: DramIfStats,
    /// Data bytes over the host's copy time (seed 000 §6.2's "interface bandwidth").
    pub interface_bandwidth_mb_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CacheFlushes {
    pub on_demand: u64,
    pub background: u64,
    pub preemptive: u64,
    pub explicit: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CacheEnergy {
    pub dynamic_mj: f64,
    pub leakage_mw: f64,
    pub leakage_mj: f64,
}

/// The cache buffer's figures. Hit ratios count map units.
#[derive(Clone, Debug, Serialize)]
pub struct CacheResult {
    pub lines: u32,
    pub line_bytes: u64,
    pub read_hits: u64,
    pub read_misses: u64,
    pub read_hit_ratio: f64,
    pub write_hits: u64,
    pub write_misses: u64,
    pub write_hit_ratio: f64,
    pub flushes: CacheFlushes,
    /// Dirty lines evicted (each after an on-demand flush).
    pub dirty_evictions: u64,
    /// Write units that waited for a line.
    pub write_waits: u64,
    pub dram_row_hits: u64,
    pub dram_row_misses: u64,
    /// Host-port accesses that found their bank busy with the additional port, and the total
    /// time they waited for it.
    pub port_conflicts: u64,
    pub host_port_wait_us: f64,
    pub dirty_lines_at_end: u32,
    /// Sampled as the buffer changes: [time s, lines in use, dirty lines].
    pub occupancy: Vec<(f64, u32, u32)>,
    pub energy: CacheEnergy,
}

impl RunResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result serialises")
    }
}

/// The DRAM interface's counters (`iface::dramif`), as the run reports them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DramIfStats {
    /// Bytes on the storage's LPDDR channel: data in and out of the buffer, queue entries,
    /// doorbells.
    pub storage_channel_bytes: u64,
    /// Bytes on the main memory channel: the other side of every copy. Data crosses the DRAM
    /// bus twice (seed 000 §7.1).
    pub memory_channel_bytes: u64,
    pub data_bytes: u64,
    /// Commands that waited for buffer space, and of those, how many waited although enough
    /// bytes were free in total (external fragmentation).
    pub buffer_waits: u64,
    pub fragmentation_waits: u64,
    pub peak_buffer_bytes: u64,
    /// Controller accesses to a bank the host was using (pre-empted), and their added time.
    pub bank_conflicts: u64,
    pub bank_stall_ns: f64,
    /// Host time spent invalidating caches and moving data.
    pub invalidate_ns: f64,
    pub copy_busy_ns: f64,
    /// Host time from the start to the end of each copy (invalidations and transfer, as
    /// pipelined): the data movement's share of a command. Bytes over it give the seed's
    /// "interface bandwidth".
    pub copy_phase_ns: f64,
}
