//! The job description of a trace replay (`TraceJob`: which trace, how it is read, filtered,
//! timed and laid onto the drive), its checks, and what the target drive accepts.

use super::super::model::{self, ModelParams};
use super::super::{formats, BlkEvent, Directive, Format, ReadOptions, TraceOp, TraceRecord};
use crate::config::{Dur, SsdConfig};
use crate::error::{got, says, Error, Invalid, Problem, Result};
use crate::sim::SimTime;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayMode {
    /// Open loop: each request arrives at its (scaled) trace time.
    #[default]
    Timed,
    /// Closed loop: as fast as possible, up to `iodepth` requests in flight, in trace order.
    Afap,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Side by side when the trace has more than one device, else as is.
    #[default]
    Auto,
    /// Every device's offsets used as they are, on one address space.
    Overlay,
    /// Each device gets its own range, in device order, of its highest end rounded up to 1 MiB.
    SideBySide,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fit {
    /// Addresses beyond the capacity wrap around (modulo the capacity).
    #[default]
    Wrap,
    /// Addresses are scaled by capacity ÷ span.
    Scale,
    /// A trace larger than the device is an error.
    None,
}

fn trace_name() -> String {
    "trace".into()
}
fn one() -> u32 {
    1
}
fn one_f() -> f64 {
    1.0
}
fn qd() -> u32 {
    32
}

/// A replay, as a job: the trace and how to play it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceJob {
    #[serde(default = "trace_name")]
    pub name: String,
    /// A trace file, or `model:NAME[,key=value...]` for a workload model.
    pub trace: String,
    /// The format's name; absent: found from the first lines.
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub mode: ReplayMode,
    /// Trace time is multiplied by this (0.5 replays twice as fast); timed mode only.
    #[serde(default = "one_f")]
    pub time_scale: f64,
    /// Most requests in flight (both modes); more arrivals wait, in trace order.
    #[serde(default = "qd")]
    pub iodepth: u32,
    /// Host queues the requests are spread over, round robin (queue k on core k mod cores).
    #[serde(default = "one")]
    pub queues: u32,
    /// Only these devices (disks, volumes, ASUs; blkparse `maj:min`); `a-b` is a range.
    #[serde(default)]
    pub devices: Vec<String>,
    #[serde(default)]
    pub layout: Layout,
    #[serde(default)]
    pub fit: Fit,
    /// Trace time window: requests before `start` are skipped, reading stops at `stop`.
    #[serde(default)]
    pub start: Option<Dur>,
    #[serde(default)]
    pub stop: Option<Dur>,
    /// Passes over the trace.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Most requests replayed in all.
    #[serde(default)]
    pub io_count: Option<u64>,
    /// Stop issuing after this much simulated time.
    #[serde(default)]
    pub runtime: Option<Dur>,
    /// Results exclude requests that arrived before this.
    #[serde(default)]
    pub ramp: Option<Dur>,
    #[serde(default)]
    pub skip_bad_lines: bool,
    #[serde(default)]
    pub blkparse_event: BlkEvent,
    /// nvme traces: the namespace's logical block size in bytes (absent: 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lba_bytes: Option<u64>,
    /// Send the trace's writes without their stream or placement directive (to replay an FDP
    /// trace on a drive without FDP, for comparison).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_placement: bool,
    /// Once the trace's last request has completed, send one Flush (fio's `end_fsync`): a
    /// write-back buffer then writes every dirty line to the media, and the run counts the
    /// media work of all the data the trace wrote, not only of what the buffer had let go.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub end_flush: bool,
}

/// What the drive a replay runs on offers beyond its capacity: zones, and the placement
/// handles or streams a write's directive may name. A trace request that needs what the drive
/// lacks is refused in the prescan, naming its line.
#[derive(Clone, Copy, Debug)]
pub struct DriveTarget {
    pub capacity: u64,
    /// A zoned drive (`[zns]`): its zone size in bytes.
    pub zone_bytes: Option<u64>,
    /// Flexible Data Placement (`[fdp]`): its placement handles.
    pub fdp_handles: Option<u32>,
    /// Write streams (`ftl.streams`) of a drive without FDP.
    pub streams: u32,
}

impl DriveTarget {
    /// A drive of `capacity` bytes with no zones, no FDP and one stream.
    pub fn plain(capacity: u64) -> DriveTarget {
        DriveTarget {
            capacity,
            zone_bytes: None,
            fdp_handles: None,
            streams: 1,
        }
    }

    /// The drive `cfg` describes.
    pub fn of(cfg: &SsdConfig) -> DriveTarget {
        DriveTarget {
            capacity: cfg.logical_bytes(),
            zone_bytes: cfg.zns.as_ref().map(|z| z.zone_size.0),
            fdp_handles: cfg.fdp.as_ref().map(|f| f.handles),
            streams: cfg.ftl.streams.max(1),
        }
    }

    /// Why this drive cannot take `rec` (None when it can).
    pub(super) fn refuses(&self, rec: &TraceRecord, ignore_placement: bool) -> Option<String> {
        if (rec.op == TraceOp::Append || rec.op.is_zone_management()) && self.zone_bytes.is_none() {
            return Some(format!(
                "a {} (a zone command), but the drive has no zones (a zoned drive has a [zns] section)",
                rec.op.name()
            ));
        }
        if ignore_placement {
            return None;
        }
        match (rec.directive, self.fdp_handles) {
            (Directive::None, _) => None,
            (Directive::Placement(p), Some(h)) if (p as u32) < h => None,
            (Directive::Placement(p), Some(h)) => Some(format!(
                "placement identifier {p} names no placement handle of the drive: expected 0 up to {} (fdp.handles = {h})",
                h - 1
            )),
            (Directive::Placement(p), None) => Some(format!(
                "a write with placement identifier {p} (data placement directive), but the drive has no Flexible Data Placement (an [fdp] section); replay with ignore_placement (--ignore-placement) to send the writes without it"
            )),
            (Directive::Stream(_), Some(_)) => Some(
                "a write with a Streams directive (DTYPE 1), but the drive has Flexible Data Placement, which takes the data placement directive (DTYPE 2) instead; replay with ignore_placement (--ignore-placement) to send the writes without it".into()
            ),
            (Directive::Stream(s), None) if (s as u32) < self.streams => None,
            (Directive::Stream(s), None) => Some(format!(
                "stream {s} names no stream of the drive: expected 0 up to {} (ftl.streams = {})",
                self.streams - 1,
                self.streams
            )),
        }
    }
}

/// What the trace (the file, or the model) cannot give, said in words: the trace as the origin.
pub(super) fn trace_err(trace: &str, words: String) -> Error {
    Error::bad_trace(Invalid::unnamed(trace, says(words)))
}

/// A trace job's field that breaks a rule.
pub(super) fn job_err(field: &str, problem: Problem) -> Error {
    Error::bad_job(Invalid::new("trace job", field, problem))
}

/// A filter that left nothing, named as the job field and as the command-line option.
pub(super) fn filter_err(field: &str, flag: &str, problem: Problem) -> Error {
    Error::bad_job(Invalid {
        flag: Some(flag.to_string()),
        ..Invalid::new("trace job", field, problem)
    })
}

/// Parse device filters: numbers, `a-b` ranges, and blkparse's `maj:min`.
pub fn parse_devices(items: &[String]) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for item in items {
        for part in item.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || {
                job_err(
                    "devices",
                    got(
                        format!("{part:?}"),
                        "a device number, a range a-b, maj:min or nvmeXnY",
                    ),
                )
            };
            if part.starts_with("nvme") {
                out.push(formats::nvme::device_by_name(part).ok_or_else(bad)?);
            } else if let Some((a, b)) = part.split_once(':') {
                let (a, b) = (a.parse::<u32>(), b.parse::<u32>());
                let (Ok(a), Ok(b)) = (a, b) else {
                    return Err(bad());
                };
                out.push(formats::blk_device(a, b).ok_or_else(bad)?);
            } else if let Some((a, b)) = part.split_once('-') {
                let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
                    return Err(bad());
                };
                if a > b || b - a > 1 << 20 {
                    return Err(bad());
                }
                out.extend(a..=b);
            } else {
                out.push(part.parse::<u32>().map_err(|_| bad())?);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

impl TraceJob {
    pub fn from_json(text: &str) -> Result<TraceJob> {
        let mut de = serde_json::Deserializer::from_str(text);
        let job: TraceJob = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = crate::config::load::field_of(&e.path().to_string());
            let problem = crate::error::json_message(e.inner());
            Error::bad_job(Invalid::of("trace job", field, problem))
        })?;
        job.check()?;
        Ok(job)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("trace job serialises")
    }

    pub fn format(&self) -> Result<Option<Format>> {
        match &self.format {
            None => Ok(None),
            Some(n) if n.is_empty() || n == "auto" => Ok(None),
            Some(n) => Format::from_name(n).map(Some).ok_or_else(|| {
                job_err(
                    "format",
                    got(format!("{n:?}"), format!("one of: {}", Format::names())),
                )
            }),
        }
    }

    /// The model's parameters when the trace is `model:...`.
    pub fn model(&self) -> Result<Option<ModelParams>> {
        match self.trace.strip_prefix("model:") {
            Some(spec) => model::parse_spec(spec).map(Some),
            None => Ok(None),
        }
    }

    pub fn check(&self) -> Result<()> {
        if self.trace.trim().is_empty() {
            return Err(job_err(
                "trace",
                got(format!("{:?}", self.trace), "a trace file or model:NAME"),
            ));
        }
        if self.format()?.is_some() && self.trace.starts_with("model:") {
            // A model makes its requests, it reads no file: the format was ignored without a
            // word (issue 45, defect 7).
            return Err(job_err(
                "format",
                got(
                    format!(
                        "{:?} with the model trace {:?}",
                        self.format.as_deref().unwrap_or_default(),
                        self.trace
                    ),
                    "none: a format is a trace file's",
                ),
            ));
        }
        self.model()?;
        if !(self.time_scale > 0.0 && self.time_scale.is_finite()) {
            return Err(job_err(
                "time_scale",
                got(self.time_scale, "a factor above 0"),
            ));
        }
        if self.iodepth == 0 || self.iodepth > 65535 {
            return Err(job_err("iodepth", got(self.iodepth, "1 to 65535")));
        }
        if self.queues == 0 || self.queues > 4096 {
            return Err(job_err("queues", got(self.queues, "1 to 4096")));
        }
        if self.repeat == 0 {
            return Err(job_err("repeat", got(0, "at least 1")));
        }
        if self.io_count == Some(0) {
            return Err(job_err("io_count", got(0, "at least 1")));
        }
        if let Some(r) = self.runtime {
            if r.0 == SimTime::ZERO {
                return Err(job_err("runtime", got(0, "a positive duration")));
            }
        }
        if let (Some(a), Some(b)) = (self.start, self.stop) {
            if b.0 <= a.0 {
                return Err(job_err(
                    "stop",
                    got(
                        format!("{} s", b.0.as_secs_f64()),
                        format!("a stop time after the start time ({} s)", a.0.as_secs_f64()),
                    ),
                ));
            }
        }
        parse_devices(&self.devices)?;
        if let Some(b) = self.lba_bytes {
            if !(512..=65536).contains(&b) || !b.is_power_of_two() {
                return Err(job_err(
                    "lba_bytes",
                    got(
                        b,
                        "a power of two from 512 to 65536 (the namespace's logical block size)",
                    ),
                ));
            }
            if self.format()?.is_some_and(|f| f != Format::Nvme) || self.trace.starts_with("model:")
            {
                return Err(job_err(
                    "lba_bytes",
                    got(
                        format!("{b} for a trace that is not an nvme trace"),
                        "none: only NVMe traces count in logical blocks of the namespace's size",
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn read_options(&self) -> Result<ReadOptions> {
        Ok(ReadOptions {
            format: self.format()?,
            skip_bad_lines: self.skip_bad_lines,
            blkparse_event: self.blkparse_event,
            lba_bytes: self.lba_bytes,
        })
    }
}
