//! Trace replay: the job description of a replay, and the request source that feeds the host.
//!
//! A replay reads its trace twice: a first pass (the prescan) checks every line, counts the
//! requests and measures each device's extent, so that the mapping onto the simulated capacity
//! (layout of several devices, then wrap or scale) is fixed before the run; the second pass feeds
//! the host one request at a time. Memory stays constant whatever the trace's length. Because the
//! file is opened again for each pass, a pipe or FIFO is refused up front (it would read empty,
//! or block, the second time); and filters that leave no request are refused, naming the filter
//! and what the trace holds, rather than giving an all-zero result.

use super::model::{self, ModelParams};
use super::stats::TimeResolution;
use super::{BlkEvent, Directive, Format, TraceOp, TraceReader, TraceRecord};
use crate::config::units::format_bytes;
use crate::error::{got, says, Error, Invalid, Result};
use crate::request::{Flags, Op};
use crate::sim::SimTime;
use serde::Serialize;
use std::collections::BTreeMap;

mod job;
use job::{filter_err, job_err, trace_err};
pub use job::{parse_devices, DriveTarget, Fit, Layout, ReplayMode, TraceJob};

const SECTOR: u64 = 512;
/// Device extents are rounded up to this before they are laid side by side.
const EXTENT_ALIGN: u64 = 1 << 20;
/// Devices listed one by one in the result.
const LIST_DEVICES: usize = 32;

/// Where records come from: a file or a model.
enum Source {
    File(Box<TraceReader>),
    Model(Box<model::Generator>),
}

impl Source {
    fn open(job: &TraceJob, seed: u64) -> Result<Source> {
        Ok(match job.model()? {
            Some(p) => Source::Model(Box::new(model::Generator::new(p, seed))),
            None => Source::File(Box::new({
                check_regular_file(&job.trace)?;
                TraceReader::open(&job.trace, &job.read_options()?)?
            })),
        })
    }

    fn next(&mut self) -> Result<Option<TraceRecord>> {
        match self {
            Source::File(r) => r.next_record(),
            Source::Model(g) => Ok(g.next_record()),
        }
    }
}

/// A replay opens its trace once per pass, so the trace must be a file that reads the same each
/// time it is opened. A FIFO or a pipe (`<(...)`, `/dev/stdin` from a pipe) would read empty the
/// second time, or block waiting for a writer; refuse it before opening (opening a FIFO blocks).
/// A path that does not exist is left to the open, which says so.
fn check_regular_file(path: &str) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    #[cfg(unix)]
    let what = {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            "a pipe or FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        }
    };
    #[cfg(not(unix))]
    let what = if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    };
    Err(trace_err(
        path,
        format!(
            "is {what}; a replay reads its trace twice (a prescan to fit it onto the device, \
         then the replay), so it needs a regular file: save the trace to a file first \
         (`ssdlab trace stats` reads a pipe, once)"
        ),
    ))
}

/// A device number as the trace's format writes it ([`Format::device_name`]).
fn device_name(format: &str, device: u32) -> String {
    match Format::from_name(format) {
        Some(f) => f.device_name(device),
        None => device.to_string(),
    }
}

/// What the trace held before the filters, for the message when they leave nothing.
#[derive(Default)]
struct Seen {
    /// Devices seen (the first few, in order) and how many in all.
    devices: std::collections::BTreeSet<u32>,
    devices_more: bool,
    first_ps: Option<u64>,
    last_ps: u64,
}

/// Devices a "filters left nothing" message lists.
const SEEN_DEVICES: usize = 8;

/// What the window, the filters and the checks did to one record.
enum Take {
    Use(TraceRecord),
    Skip,
    EndOfPass,
    /// The drive cannot take it (a zone command on a drive without zones, a placement handle
    /// it does not have): why.
    Refused(String),
}

/// How the trace's addresses are put on the device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceExtent {
    pub device: u32,
    pub base_bytes: u64,
    pub extent_bytes: u64,
    pub requests: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Mapping {
    /// `overlay` or `side-by-side` (what `auto` became).
    pub layout: &'static str,
    /// `wrap`, `scale` or `none`, as asked.
    pub fit: &'static str,
    /// Bytes of address space the trace uses once laid out.
    pub span_bytes: u64,
    pub capacity_bytes: u64,
    /// Whether the fit moved anything (the span exceeds the capacity).
    pub applied: bool,
    /// Requests whose start the fit moved.
    pub moved: u64,
    /// Requests longer than the whole capacity, cut to it.
    pub clamped: u64,
    pub devices_total: u64,
    /// The busiest devices (at most 32).
    pub devices: Vec<DeviceExtent>,
}

/// The `trace` section of a replay's result.
#[derive(Clone, Debug, Serialize)]
pub struct TraceOutcome {
    pub source: String,
    pub format: String,
    pub compression: String,
    pub mode: ReplayMode,
    pub time_scale: f64,
    pub passes: u32,
    /// Lines in the trace file (one pass).
    pub lines: u64,
    /// Requests in the trace (one pass, before filters).
    pub records: u64,
    pub skipped_bad_lines: u64,
    /// Lines of the format that hold no request (headers, other events, no-data and
    /// pass-through events), skipped without being errors (one pass).
    pub not_request_lines: u64,
    /// The first few skipped lines and why.
    pub bad_lines: Vec<String>,
    /// Requests of other devices than those asked for (one pass).
    pub filtered_device: u64,
    /// Requests outside the start/stop window (one pass).
    pub filtered_window: u64,
    /// Reads, writes and trims of length 0, skipped (one pass).
    pub zero_length: u64,
    /// Requests not on 512-byte boundaries, widened to them (one pass).
    pub unaligned: u64,
    /// Requests timestamped before an earlier request (one pass, after the device and window
    /// filters; counted as `trace stats` counts them, whatever the mode). Timed: they arrive
    /// together with the latest earlier request.
    pub out_of_order: u64,
    /// The resolution of the timestamps (one pass, the requests `out_of_order` counts), in µs,
    /// as `trace stats` reports it; None with fewer than two distinct timestamps. Coarse
    /// timestamps (whole seconds) make a timed replay send each tick's requests at once.
    pub time_resolution_us: Option<f64>,
    /// Requests timestamped before the earliest of the trace's first lines (read as time 0).
    pub before_start: u64,
    /// Requests to replay per pass after filters.
    pub per_pass: u64,
    /// Requests issued to the simulated device (all passes).
    pub replayed: u64,
    /// Trace time covered by one pass, first to last replayed request.
    pub duration_s: f64,
    /// Timed replays: when the first replayed request lies before the second by more than
    /// 99 % of the pass and at least 1 s of trace time, that gap in seconds. The device idles
    /// through it; such a first line (0 in front of Unix times) is usually an outlier, skipped
    /// with `start`. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leading_gap_s: Option<f64>,
    pub mapping: Mapping,
    /// nvme traces: Dataset Management commands read (one pass) and not replayed, since the
    /// tracepoint does not record the ranges they deallocate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvme_dsm_not_replayed: Option<u64>,
    /// The model's parameters when the trace is a workload model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelParams>,
}

/// The gap from the first replayed request (at `first`) to the second (at `second`) when nearly
/// all of the pass (more than 99 % of `first` to `last`) lies between them: the first is then
/// an outlier, such as a line stamped 0 in front of Unix times. A second stamped before the
/// first (out of order) gives none.
fn leading_gap_ps(first: u64, second: Option<u64>, last: u64) -> Option<u64> {
    let gap = second?.saturating_sub(first);
    (gap as f64 > 0.99 * (last - first) as f64).then_some(gap)
}

/// A request ready for the host.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub arrival: SimTime,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    /// The write's stream (its directive's placement handle or stream), Select All for zone
    /// management.
    pub flags: Flags,
}

/// The replay source of a run.
pub struct Replay {
    pub job: TraceJob,
    seed: u64,
    source: Source,
    pass: u32,
    devices: Vec<u32>,
    start_ps: u64,
    stop_ps: Option<u64>,
    capacity: u64,
    span: u64,
    fit_on: bool,
    bases: BTreeMap<u32, u64>,
    side_by_side: bool,
    pass_offset_ps: u64,
    pass_first: Option<u64>,
    pass_last: u64,
    last_arrival: u64,
    mean_gap_ps: u64,
    /// Latest trace time among the prescan's requests so far (for `out_of_order`).
    prescan_latest: Option<u64>,
    /// The prescan's requests' timestamp resolution (`out.time_resolution_us`).
    resolution: TimeResolution,
    pub out: TraceOutcome,
    /// Requests in one pass after filters.
    pub per_pass: u64,
    /// The drive's capacity and features.
    target: DriveTarget,
    /// Requests the drive cannot take, skipped with `skip_bad_lines`, and their first messages.
    refused: u64,
    refused_msgs: Vec<String>,
}

impl Replay {
    /// Open the trace, run the prescan, and fix the mapping onto `capacity` bytes.
    pub fn new(job: &TraceJob, capacity: u64, seed: u64) -> Result<Replay> {
        Replay::on_drive(job, DriveTarget::plain(capacity), seed)
    }

    /// Open the trace for the drive `target`, run the prescan (which refuses requests the drive
    /// cannot take, by line) and fix the mapping onto its capacity.
    pub fn on_drive(job: &TraceJob, target: DriveTarget, seed: u64) -> Result<Replay> {
        let capacity = target.capacity;
        job.check()?;
        let devices = parse_devices(&job.devices)?;
        let mut r = Replay {
            job: job.clone(),
            seed,
            source: Source::open(job, seed)?,
            pass: 0,
            devices,
            start_ps: job.start.map_or(0, |d| d.0.ps()),
            stop_ps: job.stop.map(|d| d.0.ps()),
            capacity,
            span: 0,
            fit_on: false,
            bases: BTreeMap::new(),
            side_by_side: false,
            pass_offset_ps: 0,
            pass_first: None,
            pass_last: 0,
            last_arrival: 0,
            mean_gap_ps: 0,
            prescan_latest: None,
            resolution: TimeResolution::default(),
            out: TraceOutcome {
                source: job.trace.clone(),
                format: String::new(),
                compression: "none".into(),
                mode: job.mode,
                time_scale: job.time_scale,
                passes: job.repeat,
                lines: 0,
                records: 0,
                skipped_bad_lines: 0,
                not_request_lines: 0,
                bad_lines: Vec::new(),
                filtered_device: 0,
                filtered_window: 0,
                zero_length: 0,
                unaligned: 0,
                out_of_order: 0,
                time_resolution_us: None,
                before_start: 0,
                per_pass: 0,
                replayed: 0,
                duration_s: 0.0,
                leading_gap_s: None,
                nvme_dsm_not_replayed: None,
                mapping: Mapping {
                    layout: "overlay",
                    fit: match job.fit {
                        Fit::Wrap => "wrap",
                        Fit::Scale => "scale",
                        Fit::None => "none",
                    },
                    span_bytes: 0,
                    capacity_bytes: capacity,
                    applied: false,
                    moved: 0,
                    clamped: 0,
                    devices_total: 0,
                    devices: Vec::new(),
                },
                model: job.model()?,
            },
            per_pass: 0,
            target,
            refused: 0,
            refused_msgs: Vec::new(),
        };
        r.prescan()?;
        Ok(r)
    }

    fn take(&mut self, rec: TraceRecord, count: bool) -> Take {
        if let Some(stop) = self.stop_ps {
            if rec.time_ps >= stop {
                return Take::EndOfPass;
            }
        }
        if !self.devices.is_empty() && self.devices.binary_search(&rec.device).is_err() {
            if count {
                self.out.filtered_device += 1;
            }
            return Take::Skip;
        }
        if rec.time_ps < self.start_ps {
            if count {
                self.out.filtered_window += 1;
            }
            return Take::Skip;
        }
        if count {
            // As `trace stats` counts it: a request timestamped before the latest earlier one,
            // among the requests the device and window filters keep (zero-length ones included).
            let latest = self.prescan_latest.get_or_insert(rec.time_ps);
            if rec.time_ps < *latest {
                self.out.out_of_order += 1;
            }
            *latest = (*latest).max(rec.time_ps);
            self.resolution.add(rec.time_ps);
            self.out.time_resolution_us = self.resolution.us();
        }
        if rec.len == 0 && !rec.op.has_no_extent() {
            if count {
                self.out.zero_length += 1;
            }
            return Take::Skip;
        }
        if let Some(why) = self.target.refuses(&rec, self.job.ignore_placement) {
            return Take::Refused(why);
        }
        if count
            && rec.op != TraceOp::Flush
            && (!rec.offset.is_multiple_of(SECTOR) || !rec.len.is_multiple_of(SECTOR))
        {
            self.out.unaligned += 1;
        }
        Take::Use(rec)
    }

    fn prescan(&mut self) -> Result<()> {
        let mut ext: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        let (mut first, mut last) = (None::<u64>, 0u64);
        // The second replayed request's time: a first one far before it is an outlier.
        let mut second = None::<u64>;
        let mut seen = Seen::default();
        while let Some(rec) = self.source.next()? {
            seen.first_ps.get_or_insert(rec.time_ps);
            seen.last_ps = seen.last_ps.max(rec.time_ps);
            if seen.devices.len() < SEEN_DEVICES {
                seen.devices.insert(rec.device);
            } else if !seen.devices.contains(&rec.device) {
                seen.devices_more = true;
            }
            match self.take(rec, true) {
                Take::EndOfPass => break,
                Take::Skip => continue,
                Take::Refused(why) => {
                    let line = match &self.source {
                        Source::File(r) => r.lines(),
                        Source::Model(_) => 0,
                    };
                    // The drive's rule, said in words (a zone command on a drive without
                    // zones, a placement identifier it lacks); the line is the origin.
                    let origin = format!("{}, line {line}", self.job.trace);
                    let err = Error::bad_trace(Invalid::unnamed(origin, says(why)));
                    if !self.job.skip_bad_lines {
                        return Err(err);
                    }
                    self.refused += 1;
                    if self.refused_msgs.len() < 3 {
                        self.refused_msgs.push(err.to_string());
                    }
                    continue;
                }
                Take::Use(rec) => {
                    self.per_pass += 1;
                    if first.is_some() && second.is_none() {
                        second = Some(rec.time_ps);
                    }
                    first.get_or_insert(rec.time_ps);
                    last = last.max(rec.time_ps);
                    if ext.len() >= super::stats::MAX_DEVICES && !ext.contains_key(&rec.device) {
                        return Err(trace_err(
                            &self.job.trace,
                            format!(
                                "more than {} devices; pick some with `devices`",
                                super::stats::MAX_DEVICES
                            ),
                        ));
                    }
                    let e = ext.entry(rec.device).or_insert((0, 0));
                    e.0 = e.0.max(rec.offset.saturating_add(rec.len));
                    e.1 += 1;
                }
            }
        }
        self.note_source()?;
        self.out.per_pass = self.per_pass;
        if self.per_pass == 0 {
            return Err(self.nothing_selected(&seen));
        }
        self.out.duration_s = first.map_or(0.0, |f| (last - f) as f64 / 1e12);
        if let (ReplayMode::Timed, Some(f)) = (self.job.mode, first) {
            self.check_timed_span(f, second, last)?;
            // Gaps under 1 s cost the replay nothing worth a word.
            self.out.leading_gap_s = leading_gap_ps(f, second, last)
                .filter(|&gap| gap >= 1_000_000_000_000)
                .map(|gap| gap as f64 / 1e12);
        }
        self.lay_out(&ext)?;
        // The replay pass starts afresh.
        self.source = Source::open(&self.job, self.seed)?;
        Ok(())
    }

    /// What the scan learned of its source: the file's format and counts of lines, records and
    /// lines skipped (a model's records), and an NVMe trace's own checks.
    fn note_source(&mut self) -> Result<()> {
        if let Source::File(reader) = &self.source {
            self.out.format = reader.format().name().into();
            self.out.compression = reader.compression().name().into();
            self.out.lines = reader.lines();
            self.out.records = reader.records();
            self.out.skipped_bad_lines = reader.skipped_lines() + self.refused;
            self.out.not_request_lines = reader.not_request_lines();
            self.out.bad_lines = reader.bad_lines().to_vec();
            let room = 3usize.saturating_sub(self.out.bad_lines.len());
            self.out
                .bad_lines
                .extend(self.refused_msgs.iter().take(room).cloned());
            if let Some(b) = self.job.lba_bytes {
                if reader.format() != Format::Nvme {
                    return Err(job_err(
                        "lba_bytes",
                        got(
                            format!("{b}, but {} is a {} trace", self.job.trace, reader.format().name()),
                            "none: only NVMe traces count in logical blocks of the namespace's size",
                        ),
                    ));
                }
            }
            if reader.format() == Format::Nvme {
                self.out.nvme_dsm_not_replayed = Some(reader.nvme_dsm());
            }
            self.out.before_start = reader.early();
        } else {
            self.out.format = "model".into();
            self.out.records = self.per_pass + self.out.filtered_device + self.out.filtered_window;
        }
        Ok(())
    }

    /// Where each traced device's requests land on the drive (`ext`: each device's end and
    /// request count): side by side or overlaid, and whether they must be fitted on.
    fn lay_out(&mut self, ext: &BTreeMap<u32, (u64, u64)>) -> Result<()> {
        self.side_by_side = match self.job.layout {
            Layout::SideBySide => true,
            Layout::Overlay => false,
            Layout::Auto => ext.len() > 1,
        };
        let mut base = 0u64;
        let mut listed: Vec<DeviceExtent> = Vec::new();
        for (&d, &(end, n)) in ext {
            let extent = end.div_ceil(EXTENT_ALIGN).saturating_mul(EXTENT_ALIGN);
            let b = if self.side_by_side { base } else { 0 };
            self.bases.insert(d, b);
            listed.push(DeviceExtent {
                device: d,
                base_bytes: b,
                extent_bytes: extent,
                requests: n,
            });
            base = base.saturating_add(extent);
        }
        self.span = if self.side_by_side {
            base
        } else {
            ext.values().map(|e| e.0).max().unwrap_or(0)
        };
        self.fit_on = self.span > self.capacity;
        if self.fit_on && self.job.fit == Fit::None {
            return Err(trace_err(
                &self.job.trace,
                format!(
                    "the trace spans {} ({} bytes), more than the device's {} ({} bytes); \
                 replay it with fit = wrap or fit = scale, or pick devices",
                    format_bytes(self.span),
                    self.span,
                    format_bytes(self.capacity),
                    self.capacity
                ),
            ));
        }
        listed.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.device.cmp(&b.device)));
        let m = &mut self.out.mapping;
        m.layout = if self.side_by_side {
            "side-by-side"
        } else {
            "overlay"
        };
        m.span_bytes = self.span;
        m.applied = self.fit_on;
        m.devices_total = listed.len() as u64;
        listed.truncate(LIST_DEVICES);
        m.devices = listed;
        Ok(())
    }

    /// A timed replay must fit the simulated clock (2^64 ps): refuse one that cannot, before
    /// the run, and say when the cause is the first request alone standing far before the rest
    /// (a line stamped 0 in front of Unix times), rather than let the clock saturate mid-run.
    fn check_timed_span(&self, first: u64, second: Option<u64>, last: u64) -> Result<()> {
        let span_ps = (last - first) as f64;
        let scaled_ps = span_ps * self.job.time_scale;
        if scaled_ps < u64::MAX as f64 {
            return Ok(());
        }
        // Trace times past 2^64 ps (213 days) were held there when read: "at least".
        let s = |ps: f64| {
            if !ps.is_finite() {
                // The product left the floating-point range.
                return format!("more than {:.6e} s", f64::MAX / 1e12);
            }
            let floor = if ps >= u64::MAX as f64 {
                "at least "
            } else {
                ""
            };
            format!("{floor}{:.6e} s", ps / 1e12)
        };
        let mut msg = format!(
            // `{:?}` for the factor: the shortest form that reads back (1e300, not 301 digits).
            "a timed replay of {} of trace time at time_scale {:?} needs {} of simulated \
             time, more than the simulated clock holds (2^64 ps, about 213 days)",
            s(span_ps),
            self.job.time_scale,
            s(scaled_ps)
        );
        if let Some(gap) = leading_gap_ps(first, second, last) {
            msg.push_str(&format!(
                "; the first request (at {}) lies {} before the second: an outlier, such as a \
                 line stamped 0 in front of Unix times; remove that line or skip it with `start`",
                s(first as f64),
                s(gap as f64)
            ));
        }
        msg.push_str("; or lower time_scale, or replay with mode = afap");
        Err(trace_err(&self.job.trace, msg))
    }

    /// The error when the trace and the filters leave no request to replay: names the filter that
    /// removed them all and what the trace holds.
    fn nothing_selected(&self, seen: &Seen) -> Error {
        let fmt = self.out.format.as_str();
        let secs = |ps: u64| format!("{} s", ps as f64 / 1e12);
        if self.out.records == 0 {
            if let Source::File(r) = &self.source {
                let (d, q) = r.blkparse_events();
                let (asked, other, n_other) = match self.job.blkparse_event {
                    BlkEvent::D => ("D", "Q", q),
                    BlkEvent::Q => ("Q", "D", d),
                };
                if fmt == "blkparse" && n_other > 0 {
                    return filter_err(
                        "blkparse_event",
                        "--blkparse-event",
                        got(
                            format!(
                                "{asked}, but {} has no {asked} request (it holds {n_other} \
                                 {other} events)",
                                self.job.trace
                            ),
                            other,
                        ),
                    );
                }
            }
            return trace_err(
                &self.job.trace,
                format!(
                    "no requests in the trace ({} lines, {} of them events or headers that are \
                     not requests); expected at least one read, write, trim or flush",
                    self.out.lines,
                    match &self.source {
                        Source::File(r) => r.not_request_lines(),
                        Source::Model(_) => 0,
                    }
                ),
            );
        }
        let span = match seen.first_ps {
            Some(f) => format!(
                "the trace's requests span {} to {}",
                secs(f),
                secs(seen.last_ps)
            ),
            None => String::new(),
        };
        if !self.devices.is_empty() && self.out.filtered_device == self.out.records {
            let mut held: Vec<String> = seen.devices.iter().map(|&d| device_name(fmt, d)).collect();
            if seen.devices_more {
                held.push("...".into());
            }
            let asked: Vec<String> = self
                .devices
                .iter()
                .take(8)
                .map(|&d| device_name(fmt, d))
                .collect();
            return filter_err(
                "devices",
                "--device",
                got(
                    format!(
                        "{}{}, but no request of {} is on them",
                        asked.join(", "),
                        if self.devices.len() > 8 { ", ..." } else { "" },
                        self.job.trace,
                    ),
                    format!("one of the trace's device(s) {}", held.join(", ")),
                ),
            );
        }
        if let Some(stop) = self.stop_ps {
            if seen.first_ps.is_some_and(|f| stop <= f) || self.out.filtered_window == 0 {
                // Reading stopped at the first request, so only its time is known.
                let first = seen.first_ps.map_or("none".into(), secs);
                return filter_err(
                    "stop",
                    "--stop",
                    got(
                        format!(
                            "{}, at or before the trace's first request (at {first})",
                            secs(stop)
                        ),
                        "a later stop",
                    ),
                );
            }
        }
        if self.out.filtered_window > 0 {
            return filter_err(
                "start",
                "--start",
                got(
                    format!(
                        "{}, after the trace's last request; {span}",
                        secs(self.start_ps)
                    ),
                    "an earlier start",
                ),
            );
        }
        trace_err(
            &self.job.trace,
            format!(
                "none of the trace's {} requests can be replayed ({} of length 0)",
                self.out.records, self.out.zero_length
            ),
        )
    }

    /// Put a record on the device: lay out, widen to sectors, fit.
    fn map(&mut self, rec: &TraceRecord) -> (u64, u64) {
        if rec.op == TraceOp::Flush || rec.all_zones {
            return (0, 0);
        }
        let base = if self.side_by_side {
            self.bases.get(&rec.device).copied().unwrap_or(0)
        } else {
            0
        };
        let addr = base as u128 + rec.offset as u128;
        let start = addr / SECTOR as u128 * SECTOR as u128;
        let end = (addr + rec.len as u128).div_ceil(SECTOR as u128) * SECTOR as u128;
        let cap = self.capacity as u128;
        let mut len = end - start;
        if len > cap {
            len = cap;
            self.out.mapping.clamped += 1;
        }
        let mut s = start;
        if self.fit_on {
            s = match self.job.fit {
                Fit::Scale => s * cap / self.span.max(1) as u128 / SECTOR as u128 * SECTOR as u128,
                _ => s % cap,
            };
        }
        if s + len > cap {
            s = cap - len;
        }
        if s != start {
            self.out.mapping.moved += 1;
        }
        (s as u64, len as u64)
    }

    /// The next request to issue, or `None` when every pass is done.
    pub fn next_request(&mut self) -> Result<Option<Request>> {
        loop {
            let rec = match self.source.next()? {
                Some(rec) => match self.take(rec, false) {
                    Take::Use(rec) => Some(rec),
                    // Refused ones were errors or counted in the prescan.
                    Take::Skip | Take::Refused(_) => continue,
                    Take::EndOfPass => None,
                },
                None => None,
            };
            let Some(rec) = rec else {
                self.pass += 1;
                if self.pass >= self.job.repeat || self.per_pass == 0 {
                    return Ok(None);
                }
                // The next pass starts one mean gap after this one's last arrival.
                self.pass_offset_ps = self.last_arrival.saturating_add(self.mean_gap_ps);
                self.pass_first = None;
                self.source = Source::open(&self.job, self.seed)?;
                continue;
            };
            let (offset, len) = self.map(&rec);
            let rel = rec.time_ps - self.start_ps;
            let first = *self.pass_first.get_or_insert(rel);
            if self.pass == 0 {
                self.pass_last = self.pass_last.max(rel);
                if self.per_pass > 1 {
                    let span = (self.duration_scaled(self.pass_last - first)) as u128;
                    self.mean_gap_ps = (span / (self.per_pass as u128 - 1)) as u64;
                }
            }
            let t = self
                .pass_offset_ps
                .saturating_add(self.duration_scaled(rel.saturating_sub(first)));
            let arrival = if self.job.mode == ReplayMode::Timed {
                // A request timestamped before an earlier one arrives with it (counted in
                // `out_of_order` by the prescan).
                let a = t.max(self.last_arrival);
                self.last_arrival = a;
                a
            } else {
                0
            };
            let op = match rec.op {
                TraceOp::Read => Op::Read,
                TraceOp::Write => Op::Write,
                TraceOp::Trim => Op::Trim,
                TraceOp::Flush => Op::Flush,
                TraceOp::Append => Op::Append,
                TraceOp::ZoneReset => Op::ZoneReset,
                TraceOp::ZoneFinish => Op::ZoneFinish,
                TraceOp::ZoneOpen => Op::ZoneOpen,
                TraceOp::ZoneClose => Op::ZoneClose,
                TraceOp::ZoneOffline => Op::ZoneOffline,
            };
            // The directive's stream or placement handle rides in the flags, as a job's
            // `placement_ids` do (`driver/jobs.rs`); the prescan checked it names one of the
            // drive's (at most 255 of them, so it fits the flags' byte).
            let mut flags = match rec.directive {
                _ if self.job.ignore_placement => Flags::NONE,
                Directive::None => Flags::NONE,
                Directive::Stream(s) | Directive::Placement(s) => {
                    Flags::NONE.with_stream(s.min(255) as u8)
                }
            };
            if rec.all_zones {
                flags = flags | Flags::ALL_ZONES;
            }
            return Ok(Some(Request {
                arrival: SimTime(arrival),
                op,
                offset,
                len,
                flags,
            }));
        }
    }

    fn duration_scaled(&self, ps: u64) -> u64 {
        if self.job.time_scale == 1.0 {
            ps
        } else {
            let v = ps as f64 * self.job.time_scale;
            if v >= u64::MAX as f64 {
                u64::MAX
            } else {
                v as u64
            }
        }
    }

    /// Requests the replay will offer in all (before io_count and runtime limits).
    pub fn total(&self) -> u64 {
        self.per_pass.saturating_mul(self.job.repeat as u64)
    }
}
