//! fio-like job descriptions and the address/size generator of one job instance.
//!
//! Names follow fio (`rw`, `bs`, `iodepth`, `numjobs`, `size`, `offset`, `rwmixread`,
//! `rate_iops`, `runtime`, `ramp`), so a fio user reads a job at a glance. By default
//! (`instances = "slices"`) two things differ from fio: `io_count` is the total over all
//! instances, and with `numjobs` > 1 each instance works on its own equal slice of the region
//! for sequential patterns (fio's `offset_increment`). `instances = "clones"` is fio's
//! `numjobs`: each instance a copy of the job, with its own count over the whole region.

use crate::config::units::{de_error, format_bytes, parse_bytes, parse_duration};
use crate::config::{Bytes, Dur, PriorityClass};
use crate::error::{got, says, Error, Invalid, Problem, Result, JOB};
use crate::sim::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod distribution;
mod generator;
use distribution::fit_zones;
pub use distribution::{Distribution, Skew, Zones};
pub use generator::Generator;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    Randread,
    Randwrite,
    Randrw,
    Rw,
    Trim,
    Randtrim,
}

/// Block size: one size, or sizes with weights (`{ "4KiB" = 70, "64KiB" = 30 }`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum BlockSize {
    Fixed(Bytes),
    Weighted(BTreeMap<String, u32>),
}

/// Read by hand rather than as an untagged enum, whose only error for a bad size was "data did
/// not match any variant of untagged enum BlockSize" (issue 15, defect 10): a string or number
/// is one size and says what is wrong with it, a table is sizes with weights.
impl<'de> Deserialize<'de> for BlockSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BlockSize;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a size such as 4096 or \"4KiB\", or sizes with weights such as \
                     { \"4KiB\" = 70, \"64KiB\" = 30 }",
                )
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<BlockSize, E> {
                Ok(BlockSize::Fixed(Bytes(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<BlockSize, E> {
                u64::try_from(v)
                    .map(|b| BlockSize::Fixed(Bytes(b)))
                    .map_err(|_| E::custom(format!("got {v}, expected a positive size")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<BlockSize, E> {
                parse_bytes(v)
                    .map(|b| BlockSize::Fixed(Bytes(b)))
                    .map_err(de_error)
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<BlockSize, A::Error> {
                let mut sizes = BTreeMap::new();
                while let Some((size, weight)) = m.next_entry::<String, u32>()? {
                    sizes.insert(size, weight);
                }
                Ok(BlockSize::Weighted(sizes))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    #[serde(default = "default_name")]
    pub name: String,
    pub rw: Rw,
    #[serde(default = "default_bs")]
    pub bs: BlockSize,
    #[serde(default = "one")]
    pub iodepth: u32,
    #[serde(default = "one")]
    pub numjobs: u32,
    /// Region size; default: the whole logical capacity from `offset`.
    #[serde(default)]
    pub size: Option<Bytes>,
    #[serde(default)]
    pub offset: Bytes,
    /// Total I/Os over all instances; default: one pass over the region per instance.
    #[serde(default)]
    pub io_count: Option<u64>,
    /// Stop issuing after this much simulated time.
    #[serde(default)]
    pub runtime: Option<Dur>,
    /// Percentage of reads in mixed patterns.
    #[serde(default = "fifty")]
    pub rwmixread: u32,
    /// `uniform` or `zipf:<theta>` for random patterns.
    #[serde(default)]
    pub distribution: Distribution,
    /// Open-loop arrivals per instance per second (evenly spaced); absent: closed loop.
    #[serde(default)]
    pub rate_iops: Option<f64>,
    /// fio's `rate_process`: how `rate_iops`' arrivals are spaced; absent: `linear`. Written
    /// out only when given, so results of jobs without it stay as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_process: Option<RateProcess>,
    /// Results exclude I/Os issued before this much simulated time.
    #[serde(default)]
    pub ramp: Option<Dur>,
    /// The write stream the job's writes carry (fio has no such option: NVMe's Streams
    /// directive, docs/ftl.md); below the device's `ftl.streams`. Written out only when not 0,
    /// so it is not one of `FIELDS` and results of jobs without it stay as they were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stream: u32,
    /// Placement identifiers the job's writes take in turn (fio's `plids`, earlier `fdp_pli`;
    /// docs/fdp.md), in place of `stream`: on a drive with `[fdp]` a write's stream is its
    /// placement identifier. Empty (the default): every write carries `stream`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_ids: Vec<u32>,
    /// How a write picks among `placement_ids`: `round-robin` (fio's default) or `random`
    /// (fio's `plid_select`, earlier `fdp_pli_select`).
    #[serde(default, skip_serializing_if = "PlacementSelect::is_round_robin")]
    pub placement_select: PlacementSelect,
    /// fio's I/O engine: how many requests one instance has at the device (docs/host.md).
    /// Absent: `libaio`, up to `iodepth` in flight (the driver as it always was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ioengine: Option<IoEngine>,
    /// fio's `iodepth_batch` (`iodepth_batch_submit`): requests handed to the kernel in one
    /// system call when the instance refills; absent: 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth_batch: Option<u32>,
    /// fio's `iodepth_low`: refill only when the requests in flight drop to this many, then
    /// up to `iodepth`; absent: `iodepth` (refill at every completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth_low: Option<u32>,
    /// fio's `zonemode`: `"zbd"` writes a zoned drive at its zones' write pointers
    /// (`driver::zbd`, docs/zns.md); absent or `"none"`: offsets as drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zonemode: Option<ZoneMode>,
    /// fio's `max_open_zones` (with `zonemode = "zbd"`): the zones one job instance writes at
    /// once with random writes; absent: no limit of the job's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_zones: Option<u32>,
    /// With `zonemode = "zbd"`: send writes as Zone Append commands to their zone's start.
    #[serde(default, skip_serializing_if = "is_false")]
    pub zone_append: bool,
    /// fio's `percentage_random`: the share (percent) of a random pattern's requests that go to
    /// a random offset; the others continue sequentially after the instance's previous request.
    /// Absent: 100 (fio's default). Written out only when given, as the fields below, so results
    /// of jobs without them stay as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_random: Option<u32>,
    /// fio's `thinktime`: after every `thinktime_blocks` completions an instance issues nothing
    /// for this long. Closed loop only: with `rate_iops` the arrivals are paced by the rate and
    /// this has no effect (the fio reader warns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinktime: Option<Dur>,
    /// fio's `thinktime_blocks`: completions between two thinks; absent: 1 (fio's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinktime_blocks: Option<u32>,
    /// fio's `startdelay`: the job (a flow of a run of several) starts this long after its
    /// group does; its `runtime` and `ramp` count from its own start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startdelay: Option<Dur>,
    /// fio's `latency_target`: each instance searches for the highest queue depth up to
    /// `iodepth` at which `latency_percentile` percent of the requests of a `latency_window`
    /// complete within this (`driver::jobs`, fio's io_u.c `lat_target_*`). Closed loop only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<Dur>,
    /// fio's `latency_window`: how long each depth is tried before it is judged; absent: 0,
    /// every completion judges (fio's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_window: Option<Dur>,
    /// fio's `latency_percentile`: the share (percent) of a window's requests that must meet
    /// the target; absent: 100 (fio's default), where one request over it lowers the depth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_percentile: Option<f64>,
    /// fio's `latency_run`: keep adjusting the depth to the end of the job rather than stop
    /// once the depth is found (fio's default: stop after one more window at that depth).
    #[serde(default, skip_serializing_if = "is_false")]
    pub latency_run: bool,
    /// The flow's group in a run of several flows (`driver::jobs`): the flows of a group run
    /// together on the device; groups run one after another in ascending order, each when the
    /// one before has finished (fio's `stonewall`). Written out only when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub group: u32,
    /// The flow's NVMe priority class (`urgent`, `high`, `medium`, `low`): the submission
    /// queues of its instances are created with it (QPRIO), and weighted round robin
    /// (`interface.arbitration`) serves them by it. Absent: medium. Written out only when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<PriorityClass>,
    /// What the `numjobs` instances share: `slices` (the default) or fio's `clones`
    /// ([`Instances`]). Written out only when not the default.
    #[serde(default, skip_serializing_if = "Instances::is_slices")]
    pub instances: Instances,
}

/// What a job's `numjobs` instances share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Instances {
    /// The job's work shared out: `io_count` (or one pass over the region per instance) is
    /// the instances' total, and a sequential pattern gives each instance its own slice of
    /// the region.
    #[default]
    Slices,
    /// fio's `numjobs` clones (fio's HOWTO counts `size` per thread of the job): each
    /// instance issues its own `io_count` requests over the whole region, sequential ones each from `offset` (measured with fio 3.33 on one file: every
    /// clone's log starts at offset 0). Without `runtime` an instance's count is at most one
    /// pass over the region, and without `io_count` it is one pass even with a `runtime`:
    /// fio's `number_ios` never extends past `size`, and a job that is not `time_based` ends
    /// when its `size` is done (fio's `time_based` is an `io_count` with a `runtime`).
    Clones,
}

impl Instances {
    fn is_slices(&self) -> bool {
        *self == Instances::Slices
    }
}

/// fio's `rate_process`: evenly spaced arrivals (`linear`, fio's default), or a Poisson
/// process (`poisson`: independent exponential gaps of the same mean, drawn from each
/// instance's own seeded stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    Linear,
    Poisson,
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// fio's `zonemode`, as far as a zoned drive needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ZoneMode {
    /// Offsets as drawn (a conventional drive).
    None,
    /// Zoned block device: writes at the write pointers.
    Zbd,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// How a write picks its placement identifier among a job's `placement_ids`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementSelect {
    /// In turn, each instance from the first (fio's `roundrobin`).
    #[default]
    RoundRobin,
    /// Uniformly at random, from the instance's own random stream.
    Random,
}

impl PlacementSelect {
    fn is_round_robin(&self) -> bool {
        *self == PlacementSelect::RoundRobin
    }
}

/// fio's I/O engines, as far as they change what the device sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoEngine {
    /// read/write: one request at a time per instance.
    Sync,
    /// pread/pwrite: one request at a time per instance.
    Psync,
    /// Linux native AIO: up to `iodepth` in flight.
    Libaio,
    /// io_uring: up to `iodepth` in flight.
    #[serde(rename = "io_uring")]
    IoUring,
    /// POSIX AIO on glibc: `iodepth` requests outstanding, but glibc runs the requests of one
    /// file descriptor one after another (`__aio_enqueue_request` in
    /// sysdeps/pthread/aio_misc.c chains a request behind the running one of the same
    /// descriptor), so one instance has one request at the device.
    Posixaio,
}

impl IoEngine {
    pub const NAMES: [&'static str; 5] = ["sync", "psync", "libaio", "io_uring", "posixaio"];

    /// Requests one instance can have at the device at `iodepth`.
    pub fn device_depth(self, iodepth: u32) -> u32 {
        match self {
            IoEngine::Libaio | IoEngine::IoUring => iodepth,
            IoEngine::Sync | IoEngine::Psync | IoEngine::Posixaio => 1,
        }
    }

    /// Requests one instance keeps outstanding (submitted and not yet reaped) at `iodepth`:
    /// fio caps synchronous engines at 1.
    pub fn outstanding(self, iodepth: u32) -> u32 {
        match self {
            IoEngine::Sync | IoEngine::Psync => 1,
            IoEngine::Libaio | IoEngine::IoUring | IoEngine::Posixaio => iodepth,
        }
    }

    /// Whether each request is its own system call (a synchronous read or write, or glibc's
    /// helper thread's pread/pwrite), rather than one per submitted batch.
    pub fn syscall_per_request(self) -> bool {
        !matches!(self, IoEngine::Libaio | IoEngine::IoUring)
    }
}

fn default_name() -> String {
    "job".into()
}
fn default_bs() -> BlockSize {
    BlockSize::Fixed(Bytes(4096))
}
fn one() -> u32 {
    1
}
fn fifty() -> u32 {
    50
}

/// A validated job with derived numbers, fitted to a device of `capacity` bytes.
#[derive(Clone, Debug)]
pub struct Job {
    pub spec: JobSpec,
    pub sizes: Vec<(u64, u32)>,
    pub size_weight_total: u32,
    pub min_bs: u64,
    pub region_start: u64,
    pub region_len: u64,
    pub total_ios: Option<u64>,
    /// `instances = "clones"`: the requests each instance issues at most (None: no count of
    /// its own, the total bounds the instances together).
    pub instance_ios: Option<u64>,
    pub runtime: Option<SimTime>,
    pub ramp: SimTime,
    pub zipf_theta: Option<f64>,
    /// fio's zones (`zoned`, `zoned_abs`) in bytes: (cumulative access percent up to and with
    /// this zone, start, length), in order; empty for other distributions.
    pub zones: Vec<(u32, u64, u64)>,
}

impl Job {
    /// Map units of `unit_bytes` the job may touch: its I/Os' units, at most its region's (the
    /// whole region for a job bounded by time).
    pub fn touched_units(&self, unit_bytes: u64) -> u64 {
        let region = self.region_len.div_ceil(unit_bytes);
        let max_bs = self
            .sizes
            .iter()
            .map(|&(bs, _)| bs)
            .max()
            .unwrap_or(unit_bytes);
        self.total_ios.map_or(region, |n| {
            n.saturating_mul(max_bs.div_ceil(unit_bytes)).min(region)
        })
    }

    /// The map units of `unit_bytes` the job's region covers (all it may touch).
    pub fn touched_span(&self, unit_bytes: u64) -> std::ops::Range<u64> {
        let start = self.region_start / unit_bytes;
        start..(self.region_start.saturating_add(self.region_len)).div_ceil(unit_bytes)
    }
}

impl JobSpec {
    /// The job's fields, in the order a job file and the result's `job` section list them (the
    /// Python layer takes its table columns from here).
    pub const FIELDS: [&'static str; 13] = [
        "name",
        "rw",
        "bs",
        "iodepth",
        "numjobs",
        "size",
        "offset",
        "io_count",
        "runtime",
        "rwmixread",
        "distribution",
        "rate_iops",
        "ramp",
    ];

    /// Fields a job file may give that are serialised only when given (the host side of the
    /// run; docs/host.md).
    pub const HOST_FIELDS: [&'static str; 3] = ["ioengine", "iodepth_batch", "iodepth_low"];
    /// The zoned-drive options, also written only when given.
    pub const ZONE_FIELDS: [&'static str; 3] = ["zonemode", "max_open_zones", "zone_append"];

    /// fio's pattern and pacing options beyond `FIELDS`, serialised only when given.
    pub const FIO_FIELDS: [&'static str; 8] = [
        "percentage_random",
        "thinktime",
        "thinktime_blocks",
        "rate_process",
        "latency_target",
        "latency_window",
        "latency_percentile",
        "latency_run",
    ];
    /// The fields that place a flow among others (a run of several flows), written only when
    /// given.
    pub const FLOW_FIELDS: [&'static str; 3] = ["startdelay", "group", "priority"];

    /// The engine, `libaio` when none is given.
    pub fn engine(&self) -> IoEngine {
        self.ioengine.unwrap_or(IoEngine::Libaio)
    }

    /// The streams (placement identifiers) the job's writes may carry: `placement_ids`, or
    /// `stream` alone.
    pub fn streams_used(&self) -> Vec<u32> {
        if self.placement_ids.is_empty() {
            vec![self.stream]
        } else {
            self.placement_ids.clone()
        }
    }
}

impl JobSpec {
    pub fn from_toml_str(text: &str, origin: &str) -> Result<JobSpec> {
        let spec: JobSpec = crate::config::from_toml(text, origin, Error::bad_job)?;
        spec.check_fields()?;
        Ok(spec)
    }

    pub fn from_json(text: &str) -> Result<JobSpec> {
        let mut de = serde_json::Deserializer::from_str(text);
        let spec: JobSpec = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let mut problem = crate::error::json_message(e.inner());
            if problem == says("expected value") {
                // The JSON reader's words for a name given as a number, null or a list.
                if let Some(better) = name_expected(text, &path) {
                    problem = better;
                }
            }
            Error::bad_job(Invalid::of(
                JOB,
                crate::config::load::field_of(&path),
                problem,
            ))
        })?;
        spec.check_fields()?;
        Ok(spec)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("job serialises")
    }

    fn sizes(&self) -> Result<Vec<(u64, u32)>> {
        match &self.bs {
            BlockSize::Fixed(b) => Ok(vec![(b.0, 1)]),
            BlockSize::Weighted(map) => {
                let mut v = Vec::new();
                for (k, &w) in map {
                    let b = parse_bytes(k)
                        .map_err(|p| Error::bad_job(Invalid::new(JOB, format!("bs.{k}"), p)))?;
                    v.push((b, w));
                }
                Ok(v)
            }
        }
    }

    fn check_fields(&self) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        self.check_block_sizes()?;
        self.check_depths_and_streams()?;
        self.check_zone_fields()?;
        if self.numjobs == 0 || self.numjobs > 4096 {
            return err("numjobs", got(self.numjobs, "1 to 4096"));
        }
        if self.rwmixread > 100 {
            return err("rwmixread", got(self.rwmixread, "0 to 100"));
        }
        if !self.offset.0.is_multiple_of(512) {
            return err("offset", got(self.offset.0, "a multiple of 512"));
        }
        self.check_pacing()?;
        Ok(())
    }

    /// `bs`: sizes that are whole sectors, weights that add up.
    fn check_block_sizes(&self) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        let sizes = self.sizes()?;
        if sizes.is_empty() || sizes.iter().all(|&(_, w)| w == 0) {
            return err(
                "bs",
                says("expected at least one size with a weight above 0"),
            );
        }
        if sizes
            .iter()
            .try_fold(0u32, |sum, &(_, w)| sum.checked_add(w))
            .is_none()
        {
            // The weights' sum wrapped, and the mix with it (issue 45, defect 7).
            let total: u64 = sizes.iter().map(|&(_, w)| w as u64).sum();
            return err(
                "bs",
                got(
                    format!("weights summing to {total}"),
                    format!(
                        "a total of at most {} (they are relative: 70 and 30 are 70 % and 30 %)",
                        u32::MAX
                    ),
                ),
            );
        }
        for &(b, _) in &sizes {
            if b == 0 || b % 512 != 0 {
                return err(
                    "bs",
                    got(format!("{b} bytes"), "a positive multiple of 512"),
                );
            }
        }
        Ok(())
    }

    /// Queue depths, write streams and placement identifiers.
    fn check_depths_and_streams(&self) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        if self.iodepth == 0 || self.iodepth > 65535 {
            return err("iodepth", got(self.iodepth, "1 to 65535"));
        }
        if let Some(&p) = self
            .placement_ids
            .iter()
            .find(|&&p| p >= crate::config::MAX_STREAMS)
        {
            return err(
                "placement_ids",
                got(
                    p,
                    format!(
                        "placement identifiers 0 up to {} (and below the device's fdp.handles)",
                        crate::config::MAX_STREAMS - 1
                    ),
                ),
            );
        }
        if self.stream >= crate::config::MAX_STREAMS {
            return err(
                "stream",
                got(
                    self.stream,
                    format!(
                        "0 up to {} (and below the device's ftl.streams)",
                        crate::config::MAX_STREAMS - 1
                    ),
                ),
            );
        }
        for (field, v) in [
            ("iodepth_batch", self.iodepth_batch),
            ("iodepth_low", self.iodepth_low),
        ] {
            if let Some(v) = v {
                if v == 0 || v > self.iodepth {
                    return err(field, got(v, format!("1 to iodepth ({})", self.iodepth)));
                }
            }
        }
        Ok(())
    }

    /// The zoned-device options: only with `zonemode = "zbd"`.
    fn check_zone_fields(&self) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        if self.max_open_zones == Some(0) {
            return err(
                "max_open_zones",
                got("0", "at least 1 (leave it out for no limit)"),
            );
        }
        if self.zonemode != Some(ZoneMode::Zbd)
            && (self.max_open_zones.is_some() || self.zone_append)
        {
            return err(
                "zonemode",
                says("absent, expected \"zbd\" with max_open_zones or zone_append"),
            );
        }
        Ok(())
    }

    /// Pacing and length: the rate, think time, latency target, run time and count.
    fn check_pacing(&self) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        if let Some(r) = self.rate_iops {
            // Arrivals are spaced in whole picoseconds, at most 10^6 s apart.
            if !(1e-6..=1e12).contains(&r) {
                return err("rate_iops", got(r, "a rate from 1e-6 (one request in 10^6 s) to 1e12 (one per picosecond) requests per second"));
            }
        }
        if self.io_count == Some(0) {
            return err("io_count", got("0", "at least 1"));
        }
        if let Some(p) = self.percentage_random {
            if p > 100 {
                return err("percentage_random", got(p, "0 to 100"));
            }
        }
        if self.thinktime_blocks == Some(0) {
            return err("thinktime_blocks", got("0", "at least 1"));
        }
        if self.thinktime.is_some_and(|t| t.0 == SimTime::ZERO) {
            return err("thinktime", got("0", "a positive duration (or none)"));
        }
        if self.thinktime_blocks.is_some() && self.thinktime.is_none() {
            return err("thinktime_blocks", says("given without thinktime"));
        }
        self.check_latency_target()?;
        if self.rate_process.is_some() && self.rate_iops.is_none() {
            return err(
                "rate_process",
                says("given without rate_iops, expected it only with an open-loop rate"),
            );
        }
        if let Some(rt) = self.runtime {
            if rt.0 == SimTime::ZERO {
                return err("runtime", got("0", "a positive duration"));
            }
            if let Some(ramp) = self.ramp.filter(|r| r.0 >= rt.0) {
                // Every request would fall in the ramp: a result of nothing, without a word.
                return err(
                    "ramp",
                    got(
                        format!(
                            "{:.6} s, at or past the runtime of {:.6} s: nothing would be measured",
                            ramp.0.as_secs_f64(),
                            rt.0.as_secs_f64()
                        ),
                        "a ramp shorter than the runtime (the runtime counts from the start, ramp included)",
                    ),
                );
            }
        }
        Ok(())
    }

    /// fio's latency-target search: its options only with a target, the target positive, the
    /// percentile a share. (That it needs a closed loop is checked when the job is driven:
    /// `driver::jobs`.)
    fn check_latency_target(&self) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        let Some(target) = self.latency_target else {
            for (field, given) in [
                ("latency_window", self.latency_window.is_some()),
                ("latency_percentile", self.latency_percentile.is_some()),
                ("latency_run", self.latency_run),
            ] {
                if given {
                    return err(field, says("given without latency_target"));
                }
            }
            return Ok(());
        };
        if target.0 == SimTime::ZERO {
            return err("latency_target", got("0", "a positive duration (or none)"));
        }
        if let Some(p) = self.latency_percentile {
            if !(p > 0.0 && p <= 100.0) {
                return err(
                    "latency_percentile",
                    got(p, "a percentage above 0 and at most 100"),
                );
            }
        }
        Ok(())
    }

    /// Refuse `startdelay` where the driver has no flows to start later (the register-level
    /// NVMe controller's and HFSL's, which run one job from time 0): `who` names that driver.
    pub fn refuse_startdelay(&self, who: &str) -> Result<()> {
        match self.startdelay {
            Some(d) if d.0 > SimTime::ZERO => Err(Error::bad_job(Invalid::got(
                JOB,
                "startdelay",
                format!(
                    "{:.6} s, but {who} runs one job from time 0",
                    d.0.as_secs_f64()
                ),
                "none (flows run with `ssdlab run`)",
            ))),
            _ => Ok(()),
        }
    }

    /// Fit the job to a device of `capacity` logical bytes.
    pub fn fit(&self, capacity: u64) -> Result<Job> {
        self.check_fields()?;
        let err = |field: &str, p: Problem| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        let sizes = self.sizes()?;
        let min_bs = sizes.iter().filter(|s| s.1 > 0).map(|s| s.0).min().unwrap();
        let max_bs = sizes.iter().filter(|s| s.1 > 0).map(|s| s.0).max().unwrap();
        if self.offset.0 >= capacity {
            return err(
                "offset",
                got(
                    format!("{} bytes", self.offset.0),
                    format!("an offset below the device's {capacity} bytes"),
                ),
            );
        }
        let region_len = match self.size {
            Some(s) => {
                if s.0 == 0 {
                    return err("size", got("0", "a positive size"));
                }
                if self
                    .offset
                    .0
                    .checked_add(s.0)
                    .is_none_or(|end| end > capacity)
                {
                    return err("size", says(format!(
                            "the job covers {} from offset {}, larger than the device's logical capacity of {}",
                            format_bytes(s.0),
                            format_bytes(self.offset.0),
                            format_bytes(capacity)
                        )));
                }
                s.0
            }
            None => capacity - self.offset.0,
        };
        if region_len < max_bs {
            return err(
                "size",
                says(format!(
                    "region of {region_len} bytes is smaller than the block size {max_bs}"
                )),
            );
        }
        let weight_total: u32 = sizes.iter().map(|s| s.1).sum();
        let mean_bs: f64 =
            sizes.iter().map(|&(b, w)| b as f64 * w as f64).sum::<f64>() / weight_total as f64;
        let pass = ((region_len as f64 / mean_bs).floor() as u64).max(1);
        let (total_ios, instance_ios) = match self.instances {
            Instances::Slices => {
                let total = match (self.io_count, self.runtime) {
                    (Some(n), _) => Some(n),
                    (None, Some(_)) => None,
                    (None, None) => Some(pass * self.numjobs as u64),
                };
                (total, None)
            }
            Instances::Clones => {
                let each = match (self.io_count, self.runtime) {
                    (Some(n), None) => n.min(pass),
                    (Some(n), Some(_)) => n,
                    (None, _) => pass,
                };
                // Saturating: fio's time_based is a count (2^62) no run reaches.
                (Some(each.saturating_mul(self.numjobs as u64)), Some(each))
            }
        };
        let zones = match self.distribution.zones() {
            None => Vec::new(),
            Some(z) => fit_zones(z, self.offset.0, region_len, min_bs, max_bs)?,
        };
        Ok(Job {
            zones,
            spec: self.clone(),
            sizes,
            size_weight_total: weight_total,
            min_bs,
            region_start: self.offset.0,
            region_len,
            total_ios,
            instance_ios,
            runtime: self.runtime.map(|d| d.0),
            ramp: self.ramp.map(|d| d.0).unwrap_or(SimTime::ZERO),
            zipf_theta: self.distribution.zipf_theta(),
        })
    }
}

/// Parse a duration string for CLI-style inputs (re-exported for the bindings).
pub fn duration(s: &str) -> std::result::Result<SimTime, Problem> {
    parse_duration(s)
}

/// "got 5, expected one of `read`, ..." for a field at `path` of the job in `text` that takes a
/// name: the value is read back, and the job read again with a name no variant has in its place
/// (`config::load::expected_names`). None when the field is not a plain name.
fn name_expected(text: &str, path: &str) -> Option<Problem> {
    use crate::config::load::{expected_names, NO_SUCH_NAME};
    let mut job: serde_json::Value = serde_json::from_str(text).ok()?;
    let slot = job.pointer_mut(&format!("/{}", path.replace('.', "/")))?;
    let got = slot.to_string();
    *slot = serde_json::Value::String(NO_SUCH_NAME.into());
    let e = serde_path_to_error::deserialize::<_, JobSpec>(job).err()?;
    if e.path().to_string() != path {
        return None;
    }
    let names = expected_names(&e.into_inner().to_string())?;
    Some(self::got(got, names))
}

#[cfg(test)]
mod tests;
