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
    /// Latencies above one hour of simulated time, the histogram's top: percentiles among them
    /// read as 3.6e9 µs (the maximum and the mean are exact). Absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub above_histogram: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct OpResult {
    pub count: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    pub bandwidth_mb_s: f64,
    pub latency_us: LatencySummary,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    pub count: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    pub bandwidth_mb_s: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
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
    /// The spread of `values`, read in two passes rather than collected: a drive's blocks are
    /// millions of values (4.2 M erase counts at 32 packages per channel of seed004-64ch-mlc),
    /// and a copy of them as floats was the largest allocation of a run that barely wrote
    /// (32 MiB, most of its peak memory).
    pub fn of(values: impl Iterator<Item = f64> + Clone) -> Spread {
        let (mut n, mut sum) = (0usize, -0.0f64); // as `Iterator::sum` starts
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for x in values.clone() {
            n += 1;
            sum += x;
            min = min.min(x);
            max = max.max(x);
        }
        if n == 0 {
            return Spread::default();
        }
        let n = n as f64;
        let mean = sum / n;
        let var = values.map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        Spread {
            min,
            mean,
            max,
            stddev: var.sqrt(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
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
    /// Pages reads found still in their planes' page registers, transferred without a sense
    /// (not in `nand_pages_read`; docs/nand.md).
    pub page_register_hits: u64,
    /// Only with `controller.read_ahead`: pages the firmware's read-ahead sensed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_ahead_pages: Option<u64>,
    /// Only when the config names `nand.multiplane_rule` or a suspend key (so that the results
    /// of configs without them stay as they were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nand_ops: Option<NandOpsResult>,
    /// Only with a block-mapped FTL (`ftl.kind = "block" | "bast" | "fast"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merges: Option<MergeResult>,
    /// Only with `ftl.gc.background` or `ftl.gc.copyback`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc: Option<GcResult>,
    /// Only with `precondition.fill = "steady-state"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyStateResult>,
    /// Only on a zoned drive (`[zns]`, docs/zns.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<ZoneResult>,
    /// Only with Flexible Data Placement (`[fdp]`, docs/fdp.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fdp: Option<FdpResult>,
}

/// Flexible Data Placement over the timed run (docs/fdp.md): the FDP Statistics log page's
/// figures, and each reclaim unit handle's.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FdpResult {
    pub handles: u32,
    pub reclaim_groups: u32,
    pub ru_bytes: u64,
    /// `persistently-isolated` or `initially-isolated`.
    pub ruh_type: &'static str,
    /// Bytes the host wrote (HBMW), the media programmed for them and for GC's moves (MBMW),
    /// and the media erased (MBE).
    pub host_bytes_written: u64,
    pub media_bytes_written: u64,
    pub media_bytes_erased: u64,
    /// media ÷ host bytes written, 0 without host writes.
    pub write_amplification: f64,
    /// Reclaim units the handles' host writes filled.
    pub ru_fills: u64,
    /// One entry per handle, by placement identifier.
    pub per_handle: Vec<FdpHandleResult>,
}

/// One reclaim unit handle over the timed run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FdpHandleResult {
    pub placement_id: u32,
    pub host_bytes_written: u64,
    /// The handle's host bytes and the bytes GC moved of data it wrote.
    pub media_bytes_written: u64,
    pub write_amplification: f64,
    pub ru_fills: u64,
}

/// A zoned drive's zones over the run (docs/zns.md).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ZoneResult {
    pub zones: u32,
    pub zone_bytes: u64,
    pub zone_capacity_bytes: u64,
    /// Zones reset that held data or resources.
    pub resets: u64,
    /// Zones finished by a Finish Zone command.
    pub finishes: u64,
    /// Zones opened (implicitly by a write, or explicitly).
    pub opens: u64,
    /// Implicitly opened zones the device closed to open another (the open limit).
    pub implicit_closes: u64,
    /// The most zones open at once, and active at once.
    pub max_open: u32,
    pub max_active: u32,
    /// Logical blocks a finish programmed with filler (`zns.finish = "fill"`).
    pub filled_units: u64,
    /// Requests the drive refused, by status name (`zone_invalid_write`, …); only those seen.
    pub errors: std::collections::BTreeMap<&'static str, u64>,
}

/// What steady-state preconditioning reached (docs/ftl.md, Preconditioning).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SteadyStateResult {
    /// The WAF of uniform random single-unit overwrites once steady, on the model plane (the
    /// whole drive for a block-mapped FTL).
    pub write_amplification: f64,
    /// The WAF stopped changing (within 1 % over the last windows); false when the model
    /// plane's overwrites stopped at their cap (16 × its logical units) first.
    pub converged: bool,
    /// Host overwrites the model plane took, in multiples of its logical units.
    pub overwrite: f64,
    /// A block-mapped FTL's merges (switch, partial, full) per host page once steady; absent
    /// for the page FTL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merges_per_host_page: Option<f64>,
}

/// What background GC and copyback did (docs/ftl.md).
#[derive(Clone, Debug, Default, Serialize)]
pub struct GcResult {
    /// Collections started only because the host left the device idle (in `gc_runs` too).
    pub background_runs: u64,
    /// GC page copies done by copyback, inside the die.
    pub copyback_pages: u64,
}

/// A block-mapped FTL's merges by kind (docs/ftl.md); block mapping's block copies count as
/// full merges.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MergeResult {
    pub switch: u64,
    pub partial: u64,
    pub full: u64,
    /// Pages the merges copied.
    pub pages_copied: u64,
}

/// How the dies' reads and programs paired into multi-plane operations, and how often programs
/// and erases were suspended for reads (docs/nand.md).
#[derive(Clone, Debug, Default, Serialize)]
pub struct NandOpsResult {
    /// Reads and programs (host, read-modify-write, buffer flush) on one plane, and on several.
    pub single_plane_ops: u64,
    pub multi_plane_ops: u64,
    /// Candidate partners on another plane that `nand.multiplane_rule` refused and the relaxed
    /// rule would have taken, counted each time one is passed over.
    pub partners_refused: u64,
    /// Programs (host and GC) and erases suspended for reads.
    pub program_suspensions: u64,
    pub erase_suspensions: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
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

#[derive(Clone, Debug, Default, Serialize)]
pub struct Utilisation {
    pub channel: UnitUtil,
    pub die: UnitUtil,
    pub link_up: f64,
    pub link_down: f64,
    pub host_cpu: f64,
    pub controller_cpu: f64,
    /// The busy time behind the two: the host cores' (summed) and the controller's firmware
    /// core's, in seconds (seed 002 Fig. 12's "time consumptions" of host software and soft
    /// core).
    pub host_cpu_busy_s: f64,
    pub controller_cpu_busy_s: f64,
}

/// Bytes of each large structure of the model that hold what the run wrote (issue 44: memory
/// in proportion to what the drive holds), counted by the model itself: a table allocated
/// zeroed counts its 4 KiB pages (of entries, from the table's start) holding an entry that is
/// not the fresh value (`sim::mem::written_bytes`), never a page only read. The same on every
/// machine for the same config, workload and seed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryResult {
    /// The page FTL's logical-to-physical map (4 bytes a map unit).
    pub map_bytes: u64,
    /// Its physical-to-logical map (4 bytes a unit of flash).
    pub reverse_map_bytes: u64,
    /// One bit a unit of flash: programmed since its block's erase.
    pub programmed_bits_bytes: u64,
    /// One record a block (valid count, wear, state, write pointer, age; 40 bytes).
    pub block_records_bytes: u64,
    /// The planes' lists of free blocks as allocated (4 bytes a listed block; blocks never
    /// handed out are a range, not listed).
    pub free_lists_bytes: u64,
    /// The data store of a driver that moves real bytes (`ssdlab serve`, the register-level
    /// NVMe host): the blocks it holds; 0 without one.
    pub data_store_bytes: u64,
    /// The sum of the above.
    pub total_bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Wall {
    pub seconds: f64,
    pub precondition_seconds: f64,
    pub requests_per_s: f64,
    pub events_per_s: f64,
    /// What the model's large structures have allocated at the end of the run (a figure of
    /// the simulator, not of the simulated drive: it changes with the simulator's version).
    pub memory: MemoryResult,
    pub peak_memory_bytes: Option<u64>,
    /// `ssdlab serve` on the realtime clock: how late each reply left against the wall time
    /// of its simulated completion, in wall µs (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_lag_us: Option<LatencySummary>,
}

#[derive(Clone, Debug, Default, Serialize)]
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
    /// Only for a request list (`run::run_requests`): its counts, and the write counters over
    /// its measured part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<serde_json::Value>,
    pub sim: SimInfo,
    pub ops: std::collections::BTreeMap<&'static str, OpResult>,
    pub total: Totals,
    pub device: DeviceResult,
    pub utilisation: Utilisation,
    pub interface: InterfaceResult,
    /// Only with `ftl.mapping = "cached"` or `ftl.streams` > 1: the mapping cache's figures,
    /// and the write streams'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ftl: Option<FtlResult>,
    /// Only with a cache buffer (`[cache]` in the config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheResult>,
    /// Only with `[reliability]`: wear-out, bad blocks and read errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliability: Option<ReliabilityResult>,
    /// Only on a PCM-only device (`[pcm]` in the config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcm: Option<PcmResult>,
    /// Only with `[power]`: energy and average power of the NAND and the controller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<super::power::PowerResult>,
    /// Only when HFSL drives a fusion device (`[hfsl]` in its config): what HFSL did. The
    /// run's `ops`, `total` and `sim.requests` are then the host's requests to HFSL; `device`
    /// and `pcm` count the raw commands they became.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hfsl: Option<HfslResult>,
    /// Only for a job with `latency_target` (run alone): the queue depth its search settled
    /// at (or was at when the job ended), fio's `latency_depth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_depth: Option<u32>,
    /// Only for a run of several flows (`run_flows`): each flow's own figures, in the order
    /// the flows were given. The run's `ops` and `total` are the device's, over all flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<FlowResult>>,
    /// Only with a statistics interval (`RunOptions::stats_interval`): the device's state at
    /// each multiple of it, as columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<Series>,
    /// Only with a power cut (`RunOptions::power_cut_event` or `power_cut_at`) on the
    /// page-mapped FTL: the cut and the recovery after it (the run's other figures stop at
    /// the cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_loss: Option<PowerLossResult>,
    pub wall: Wall,
}

/// A power cut on the page-mapped FTL and the recovery after it (issue 43; see
/// docs/power-loss.md). Counts of writes are map-unit updates.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PowerLossResult {
    /// Device events handled before the power failed, and when.
    pub event: u64,
    pub at_us: f64,
    /// `ftl.power_loss_protection`: capacitors finish the programs under way and write the
    /// cache's dirty lines out.
    pub power_loss_protection: bool,
    /// Map checkpoints taken during the run, and of those the ones on flash at the cut (all
    /// their map pages, and every earlier checkpoint's, programmed; recovery reads the last).
    pub checkpoints: u64,
    pub checkpoints_on_flash: u64,
    /// Map pages the checkpoints programmed: each writes the map pages (one map unit each,
    /// `device.map_unit_bytes`, of 4 B entries) holding an entry changed since the one before,
    /// through the dies like any program: in `device.nand_pages_written` and the die time.
    pub checkpoint_pages_written: u64,
    /// Live checkpoint map pages GC moved (also in `device.gc_units_moved`).
    pub checkpoint_pages_moved: u64,
    /// The checkpoints' share of `device.write_amplification`: map pages programmed ÷ host
    /// map units written (their GC moves are in GC's share).
    pub checkpoint_write_amplification: f64,
    /// Programs mapped but not finished at the cut: torn, or never started (none with
    /// protection), and those the capacitors finished.
    pub programs_lost: u64,
    pub programs_finished_on_plp: u64,
    /// The write cache's units whose data was only in DRAM: lost, or written out on the
    /// capacitors' energy.
    pub cache_units_lost: u64,
    pub cache_units_flushed_on_plp: u64,
    /// Recovery: the checkpoint's pages read, then the out-of-band areas of the pages of the
    /// blocks written since it; simulated time of each, and in all.
    pub recovery_us: f64,
    pub checkpoint_read_us: f64,
    pub scan_us: f64,
    pub checkpoint_pages_read: u64,
    pub blocks_scanned: u64,
    pub pages_scanned: u64,
    /// Writes (and trims) the controller had accepted that recovery does not find, and of
    /// those writes, the ones whose completion had reached the host.
    pub writes_lost: u64,
    pub acknowledged_writes_lost: u64,
    pub trims_lost: u64,
    /// Logical units that lost an acknowledged write or read unmapped where they held data;
    /// the first 64 of them by number.
    pub units_lost: u64,
    pub lost_units: Vec<u64>,
    /// Logical units that read unmapped after recovery though they held data (neither their
    /// old data nor their new: a durability failure of the FTL).
    pub units_unreadable: u64,
    /// Logical units that read their newest kept trim (the deallocated value) because GC
    /// erased the data that trim let go, which made it durable though no checkpoint held it.
    pub trims_durable_by_erase: u64,
}

/// Periodic statistics (`driver::sampler`): one entry per sample in each column, the first at
/// time 0 (after preconditioning). Counts are cumulative from the timed run's start.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Series {
    pub time_s: Vec<f64>,
    /// Free blocks over every plane (the page FTL's).
    pub free_blocks: Vec<u64>,
    pub gc_runs: Vec<u64>,
    pub gc_units_moved: Vec<u64>,
    /// (host units written + GC units moved + map checkpoint pages programmed, with a power
    /// cut armed) / host units written so far; 0 before any write.
    pub write_amplification: Vec<f64>,
    /// The host's requests submitted and not yet completed (the queue depth at the device).
    pub requests_in_flight: Vec<u64>,
    pub requests_completed: Vec<u64>,
    /// Utilisation over the interval before each sample (busy time that ran in it ÷ the
    /// interval; 0 at the first sample): the mean over channels, the mean over dies and the
    /// busiest die's. Absent without NAND dies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel_utilisation_mean: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub die_utilisation_mean: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub die_utilisation_max: Option<Vec<f64>>,
    /// The cache buffer's lines holding data and those of them dirty (with a `[cache]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_lines_used: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_dirty_lines: Option<Vec<u64>>,
    /// A zoned drive's open and active zones, and its zone resets so far (with a `[zns]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_zones: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_zones: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_resets: Option<Vec<u64>>,
    /// An FDP drive's write amplification of each placement handle so far (with `[fdp]`): one
    /// series per handle, in placement-id order, each as `write_amplification` is for the
    /// whole device (media units over host units; 0 before the handle's first write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fdp_handle_write_amplification: Option<Vec<Vec<f64>>>,
}

/// One flow of a run of several: its requests measured on their own, from the end of its own
/// ramp to its last completion.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowResult {
    pub name: String,
    pub group: u32,
    /// When it started (its group's start plus its `startdelay`) and when its last request
    /// completed, in simulated seconds from the run's start.
    pub start_s: f64,
    pub end_s: f64,
    /// From the end of its ramp to its last completion: its rates are over this.
    pub measured_time_s: f64,
    pub ops: std::collections::BTreeMap<&'static str, OpResult>,
    pub total: Totals,
    /// Only for a flow with `latency_target`: the queue depth its search is at (fio's
    /// `latency_depth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_depth: Option<u32>,
}

/// What HFSL did, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HfslCounters {
    pub pcm_reads: u64,
    pub pcm_writes: u64,
    pub pcm_bytes_read: u64,
    pub pcm_bytes_written: u64,
    pub nand_reads: u64,
    pub nand_programs: u64,
    pub nand_erases: u64,
    /// NAND reads merged into a small write (Fig. 15's updates).
    pub nand_updates: u64,
    /// LPNs moved from PCM to NAND because their pool was full.
    pub evictions: u64,
    pub gc_runs: u64,
    pub gc_pages_moved: u64,
    /// Host writes placed in PCM (small or metadata) and in NAND.
    pub writes_to_pcm: u64,
    pub writes_to_nand: u64,
    /// PCM writes of map entries to the map area, and their bytes (not in `pcm_writes`).
    pub map_writes: u64,
    pub map_bytes_written: u64,
    /// Logical pages host reads found never written: zeros, with no raw command (they cost
    /// only `hfsl.request_cost` on the host).
    pub unmapped_reads: u64,
}

/// HFSL's figures for one run (seed 002 §2.6–2.7, Figs. 15–20).
#[derive(Clone, Debug, Default, Serialize)]
pub struct HfslResult {
    /// Logical bytes the run's HFSL map covers (the trace's or job's span).
    pub logical_bytes: u64,
    /// Raw PCM and NAND commands sent to the device.
    pub raw_commands: u64,
    /// Raw commands per host request.
    pub raw_commands_per_request: f64,
    /// What HFSL did, by kind (`nand_updates`: Fig. 15's read-merges).
    pub counters: HfslCounters,
    /// Logical pages whose data lives in PCM and in NAND at the end.
    pub pcm_pages: u64,
    pub nand_pages: u64,
    /// Writes refused by write protection (`hfsl.protect`), and why (the first 16).
    pub refused_writes: u64,
    pub refusals: Vec<String>,
    /// Trace trims and flushes, which HFSL has no command for (§2.6 names none): not run.
    pub skipped_requests: u64,
    /// The I/O scheduler's channel queues (§2.6.3).
    pub queues: HfslQueueResult,
    /// Where the map lives (`hfsl.map_store`) and its area in the PCM.
    pub map_store: crate::config::MapStore,
    pub map_area_bytes: u64,
    /// With `hfsl.power_cut_event`: the cut and the restart (the run's other figures stop at
    /// the cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_cut: Option<PowerCutResult>,
}

/// A power cut under HFSL and the restart after it (issue 11 point 6).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PowerCutResult {
    /// Device events handled before the power failed, and when.
    pub event: u64,
    pub at_us: f64,
    /// Host requests acknowledged before the cut; whether one was under way.
    pub requests_acknowledged: u64,
    pub request_cut: bool,
    /// Raw commands in the device and in HFSL's channel queues at the cut.
    pub commands_in_flight: u64,
    pub commands_queued: u64,
    /// The restart: simulated time to read the map area back from the PCM and to erase what
    /// the dies need.
    pub recovery_us: f64,
    pub map_bytes_read: u64,
    pub recovery_erases: u64,
    /// Map entries the restart found mapping a page, and dropped as inconsistent.
    pub entries_recovered: u64,
    pub entries_dropped: u64,
    /// Logical pages and sub-pages that do not read back their last acknowledged write.
    pub lost_pages: u64,
    pub lost_sub_pages: u64,
    /// Sub-pages of the write the cut interrupted that read back old, new and torn.
    pub cut_write_old: u64,
    pub cut_write_new: u64,
    pub cut_write_torn: u64,
    /// A cut armed for the restart failed it before it finished. From Python the power is
    /// then off again and the loss counts wait for the restart that finishes; in a run with
    /// `hfsl.restart_cut_event`, this block is that restart, under the first cut.
    pub restart_cut: bool,
}

/// HFSL's I/O scheduler (§2.6.3): per-channel queues sent in batches on a timer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HfslQueueResult {
    /// Sends: one channel queue's commands handed to the device together.
    pub batches: u64,
    pub commands: u64,
    pub commands_per_batch: f64,
    /// Sends that waited for the timer's tick.
    pub timer_waits: u64,
    /// Mean time a command waited in its queue.
    pub mean_wait_us: f64,
}

/// The FTL's figures beyond `device`'s: each part only when its mechanism is on.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FtlResult {
    /// With `ftl.mapping = "cached"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping: Option<MappingResult>,
    /// With `ftl.streams` > 1: one entry per host write stream, in stream order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<StreamResult>>,
}

/// One host write stream over the timed run (docs/ftl.md, "Write streams").
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamResult {
    pub stream: u32,
    /// Map units the host wrote in this stream.
    pub host_units_written: u64,
    /// Map units GC moved whose data this stream wrote.
    pub gc_units_moved: u64,
    /// (host + GC-moved) ÷ host units, 0 without host writes.
    pub write_amplification: f64,
}

/// Demand-paged mapping (docs/ftl.md): the mapping cache over the timed run (preconditioning
/// excluded).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MappingResult {
    /// `dram` or `hmb`.
    pub location: &'static str,
    /// Translation pages of the whole map, and how many the cache holds.
    pub translation_pages: u64,
    pub cache_pages: u64,
    /// Lookups (one per translation page a command touches) that found the page cached, and
    /// that did not; hits ÷ (hits + misses), 0 without lookups.
    pub hits: u64,
    pub misses: u64,
    pub hit_ratio: f64,
    /// Translation pages read from NAND (misses, background read-modify-writes) and
    /// programmed (dirty evictions, background read-modify-writes).
    pub translation_reads: u64,
    pub translation_writes: u64,
}

/// Endurance and errors at the end of a run (`[reliability]`); the same state the NVMe SMART
/// log reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReliabilityResult {
    pub pe_limit: u32,
    pub factory_bad_blocks: u64,
    /// Blocks retired at their P/E limit during the run (and preconditioning).
    pub retired_blocks: u64,
    pub good_blocks: u64,
    /// Good blocks below which the drive turns read-only.
    pub min_good_blocks: u64,
    pub read_only: bool,
    /// Mean erase count of the good blocks against the P/E limit, in percent (NVMe SMART
    /// "Percentage Used" is this, capped at 255).
    pub percentage_used: f64,
    /// Spare good blocks (beyond the read-only level) against the spare the drive started
    /// with, in percent (SMART "Available Spare").
    pub available_spare_percent: f64,
    /// Map-unit reads that needed read-retry steps, and the steps.
    pub reads_retried: u64,
    pub read_retry_steps: u64,
    /// Map-unit reads that could not be decoded.
    pub uncorrectable_reads: u64,
    /// Requests that failed: unrecovered reads, writes refused read-only or for lack of room.
    pub failed_reads: u64,
    pub refused_writes_read_only: u64,
    pub refused_writes_no_space: u64,
    /// A zoned drive's zones offline for worn or factory bad blocks (its capacity lost).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offline_zones: Option<u32>,
}

/// A PCM device's figures (docs/pcm.md): accesses by kind and size (an access is one line's part
/// of a request, in whole `min_access` units), wear per line, energy.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PcmResult {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Accesses by size in bytes.
    pub reads_by_size: std::collections::BTreeMap<u64, u64>,
    pub writes_by_size: std::collections::BTreeMap<u64, u64>,
    /// Reads that suspended a program (write pausing).
    pub write_pauses: u64,
    /// Start-Gap line moves (each a line read and a line written, counted above too).
    pub gap_moves: u64,
    pub wear: PcmWear,
    pub energy: PcmEnergyResult,
    /// Busy time ÷ all simulated time per channel: its banks' mean or its bus, the larger.
    pub channel_utilisation: UnitUtil,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PcmWear {
    pub lines: u64,
    pub max_line_writes: u64,
    pub mean_line_writes: f64,
    /// Lines by writes taken, in power-of-two buckets: lo ≤ writes ≤ hi.
    pub histogram: Vec<PcmWearBucket>,
    /// The config's endurance; null where no figure exists.
    pub writes_per_line: Option<f64>,
    /// At the run's rate on its most-written line, years until that line wears out; null
    /// without an endurance figure or without writes.
    pub years_to_first_wear_out: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PcmWearBucket {
    pub lo: u64,
    pub hi: u64,
    pub lines: u64,
}

/// Energy of the media's reads and writes in microjoules; null where the config has no figure.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PcmEnergyResult {
    pub read_uj: Option<f64>,
    pub write_uj: Option<f64>,
}

/// The host interface: which one, its link, and (DRAM interface) the shared buffer's figures.
#[derive(Clone, Debug, Default, Serialize)]
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
    /// The DRAM's size (`cache.capacity`) and how it is shared: the data lines
    /// (`lines × line_bytes`), a cached map's translation pages (`ftl.mapping = "cached"` in
    /// controller memory; 0 otherwise), the area reserved for the map (`cache.map_reserved`);
    /// what the three leave is less than a line.
    pub dram_bytes: u64,
    pub data_bytes: u64,
    pub translation_bytes: u64,
    pub reserved_bytes: u64,
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
    /// Lines holding part of their unit (`cache.partial_lines = "merge-at-flush"` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<CachePartial>,
}

/// What lines holding part of their unit cost (`cache.partial_lines = "merge-at-flush"`).
#[derive(Clone, Debug, Serialize)]
pub struct CachePartial {
    /// Flushes that read the rest of their line's unit from NAND before the program.
    pub merge_reads: u64,
    /// Reads of sectors a line did not hold (served from NAND, the line's part laid over).
    pub read_misses: u64,
}

/// The result's blocks of figures that every run has, in the order the result is written. A
/// sweep's table has a column for each scalar in them (docs/binding-contract.md).
pub const FIGURE_BLOCKS: [&str; 6] = ["sim", "ops", "total", "device", "utilisation", "wall"];

impl RunResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result serialises")
    }

    /// The scalar figures of [`FIGURE_BLOCKS`] as dotted paths ("ops.read.latency_us.p99"), in
    /// the order the result writes them, with every operation present: the columns a table of
    /// results has whatever each run did. Lists (per-unit utilisation) are not columns. Taken from
    /// the serialised form of a result, so they cannot drift from what runs write.
    pub fn figure_columns() -> Vec<String> {
        let mut all = RunResult::default();
        all.device.nand_ops = Some(NandOpsResult::default());
        all.device.merges = Some(MergeResult::default());
        for op in crate::request::Op::ALL {
            all.ops.insert(op.name(), OpResult::default());
        }
        let mut paths = Vec::new();
        let json = all.to_json();
        let mut de = serde_json::Deserializer::from_str(&json);
        serde::de::DeserializeSeed::deserialize(
            LeafPaths {
                prefix: String::new(),
                out: &mut paths,
            },
            &mut de,
        )
        .expect("a result's JSON reads back");
        paths
            .into_iter()
            .filter(|p| {
                FIGURE_BLOCKS
                    .iter()
                    .any(|b| p.strip_prefix(b).is_some_and(|rest| rest.starts_with('.')))
            })
            .collect()
    }
}

/// Collects the dotted paths of a JSON document's scalars in document order (serde_json's `Value`
/// sorts keys, so it cannot tell the order a struct writes its fields in).
struct LeafPaths<'a> {
    prefix: String,
    out: &'a mut Vec<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for LeafPaths<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for LeafPaths<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let prefix = if self.prefix.is_empty() {
                key
            } else {
                format!("{}.{key}", self.prefix)
            };
            map.next_value_seed(LeafPaths {
                prefix,
                out: &mut *self.out,
            })?;
        }
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.out.push(self.prefix);
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.out.push(self.prefix);
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.out.push(self.prefix);
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.out.push(self.prefix);
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.out.push(self.prefix);
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.push(self.prefix);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_columns_follow_the_written_order() {
        let columns = RunResult::figure_columns();
        let at = |name: &str| {
            columns
                .iter()
                .position(|c| c == name)
                .unwrap_or_else(|| panic!("{name} missing from {columns:?}"))
        };
        assert_eq!(columns[0], "sim.simulated_time_s");
        assert!(at("sim.stop_reason") < at("ops.flush.count"));
        assert!(
            at("ops.flush.latency_us.max") < at("ops.read.count"),
            "ops sorted by name"
        );
        assert!(at("ops.trim.latency_us.p99_99") < at("total.count"));
        assert!(at("device.erase_count.stddev") < at("device.wear_level_migrations"));
        // A block only some runs have is a column still, empty where a run lacks it.
        assert!(at("device.multiplane_ops") < at("device.nand_ops.single_plane_ops"));
        assert!(at("device.nand_ops.erase_suspensions") < at("utilisation.channel.mean"));
        assert!(at("utilisation.die.max") < at("utilisation.link_up"));
        assert_eq!(columns.last().unwrap(), "wall.peak_memory_bytes");
        // Lists and the blocks that only some runs have are not columns.
        for c in &columns {
            assert!(
                !c.contains("per_unit") && !c.starts_with("cache.") && !c.starts_with("interface."),
                "{c}"
            );
        }
        let unique: std::collections::BTreeSet<_> = columns.iter().collect();
        assert_eq!(unique.len(), columns.len());
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
    /// Host time from the start to the end of each copy (invalidations, DMA set-ups and
    /// transfers, as pipelined).
    pub copy_phase_ns: f64,
    /// Of the copy phase, the DMA set-ups: programming the engine for each piece and taking its
    /// end-of-transfer interrupt. That is per-piece protocol work, not data movement, so it
    /// counts as protocol overhead (seed 000 Fig. 7) and grows with the number of pieces.
    /// Bytes over the copy phase without it give the seed's "interface bandwidth".
    pub dma_setup_ns: f64,
}
