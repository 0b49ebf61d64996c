//! Block-I/O traces: streaming readers for the common formats, statistics, replay sources and
//! synthetic workload models fitted to published trace statistics.
//!
//! A reader turns a file (plain, gzip, bzip2 or xz) into [`TraceRecord`]s one line at a time, in
//! constant memory. The format is found from the first lines unless named. A malformed line is an
//! error naming the file, the line number, the line and what was expected, or, with
//! `skip_bad_lines`, a counted skip. No byte sequence makes a reader panic (fuzzed and
//! property-tested).

mod bits;
pub mod formats;
pub mod input;
pub mod model;
pub mod replay;
pub mod stats;
pub mod write;

#[cfg(test)]
mod tests;

use crate::error::{got, says, Error, Invalid, Result};
pub use formats::{BlkEvent, Format, FORMATS};
pub use input::Compression;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::Read;

/// What a trace request asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceOp {
    Read,
    Write,
    /// Discard / deallocate.
    Trim,
    /// Flush the volatile write cache (no data).
    Flush,
    /// Zoned drive: Zone Append to the zone starting at the offset (NVMe traces).
    Append,
    /// Zoned drive, Zone Management Send (no data; the offset is the zone's start): reset,
    /// finish, open, close, take offline (NVMe traces).
    ZoneReset,
    ZoneFinish,
    ZoneOpen,
    ZoneClose,
    ZoneOffline,
}

impl TraceOp {
    pub const ALL: [TraceOp; 10] = [
        TraceOp::Read,
        TraceOp::Write,
        TraceOp::Trim,
        TraceOp::Flush,
        TraceOp::Append,
        TraceOp::ZoneReset,
        TraceOp::ZoneFinish,
        TraceOp::ZoneOpen,
        TraceOp::ZoneClose,
        TraceOp::ZoneOffline,
    ];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Write => "write",
            TraceOp::Trim => "trim",
            TraceOp::Flush => "flush",
            TraceOp::Append => "append",
            TraceOp::ZoneReset => "zone_reset",
            TraceOp::ZoneFinish => "zone_finish",
            TraceOp::ZoneOpen => "zone_open",
            TraceOp::ZoneClose => "zone_close",
            TraceOp::ZoneOffline => "zone_offline",
        }
    }
    /// A Zone Management Send action (no data, a zone's start or all zones).
    pub fn is_zone_management(self) -> bool {
        matches!(
            self,
            TraceOp::ZoneReset
                | TraceOp::ZoneFinish
                | TraceOp::ZoneOpen
                | TraceOp::ZoneClose
                | TraceOp::ZoneOffline
        )
    }
    /// Ops that carry no length: flushes and zone management.
    pub fn has_no_extent(self) -> bool {
        self == TraceOp::Flush || self.is_zone_management()
    }
}

/// The directive a write carries (NVMe traces: DTYPE and DSPEC of the Write command).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Directive {
    #[default]
    None,
    /// The Streams directive (DTYPE 1): the stream identifier.
    Stream(u16),
    /// The data placement directive of Flexible Data Placement (DTYPE 2, TP4146): the
    /// placement identifier.
    Placement(u16),
}

/// One request of a trace. Time is counted from the earliest request among the first lines (a
/// later request timestamped before that, in a trace whose lines are not in time order, is at 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub time_ps: u64,
    pub op: TraceOp,
    pub offset: u64,
    pub len: u64,
    /// Device, disk, volume or ASU number, as the format has it (blkparse: major << 20 | minor;
    /// fio: the file's index in order of first use; nvme: X << 20 | Y of `nvmeXnY`).
    pub device: u32,
    /// The write's stream or placement directive (only NVMe traces carry one).
    pub directive: Directive,
    /// Zone management for every zone (Select All); the offset is then 0.
    pub all_zones: bool,
}

/// How to read a trace.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// The format; `None` finds it from the first lines.
    pub format: Option<Format>,
    /// Count and skip malformed lines instead of failing on the first.
    pub skip_bad_lines: bool,
    /// blkparse: take the dispatch (D) or the queue (Q) events.
    pub blkparse_event: BlkEvent,
    /// nvme: the namespace's logical block size in bytes (None: 512, [`formats::nvme::DEFAULT_LBA_BYTES`]).
    pub lba_bytes: Option<u64>,
}

/// Lines looked at to find the format.
const DETECT_LINES: usize = 16;
/// Malformed lines whose messages are kept when they are skipped.
const KEEP_BAD: usize = 3;

/// A streaming reader of one trace file.
pub struct TraceReader {
    input: input::Input,
    origin: String,
    format: Format,
    compression: Compression,
    event: BlkEvent,
    skip_bad: bool,
    state: formats::State,
    /// Lines read ahead to find the format, given back first.
    ahead: VecDeque<(Vec<u8>, bool)>,
    buf: Vec<u8>,
    line: u64,
    records: u64,
    skipped: u64,
    /// Lines of the format that hold no request (headers, other events, no-data events).
    not_requests: u64,
    bad: Vec<String>,
    t0: Option<u128>,
    early: u64,
}

/// A line as an error message shows it: escaped, on one line, at most 200 characters.
fn show_line(line: &[u8]) -> String {
    let cut = &line[..line.len().min(200)];
    let text = String::from_utf8_lossy(cut);
    let more = if line.len() > 200 { "…" } else { "" };
    format!("{text:?}{more}")
}

/// A trace that cannot be read: its name as the origin, the reader's reason in words.
fn unreadable(origin: &str, e: impl std::fmt::Display) -> Error {
    Error::bad_trace(Invalid::unnamed(origin, says(format!("cannot read: {e}"))))
}

impl TraceReader {
    /// Open a trace file.
    pub fn open(path: &str, opts: &ReadOptions) -> Result<TraceReader> {
        let (input, compression) = input::open(path).map_err(|e| unreadable(path, e))?;
        TraceReader::with_input(path, input, compression, opts)
    }

    /// Read a trace from any byte stream (compressed or not); `origin` names it in errors.
    pub fn from_reader(
        origin: &str,
        raw: Box<dyn Read + Send>,
        opts: &ReadOptions,
    ) -> Result<TraceReader> {
        let (input, compression) = input::decode(raw).map_err(|e| unreadable(origin, e))?;
        TraceReader::with_input(origin, input, compression, opts)
    }

    fn with_input(
        origin: &str,
        input: input::Input,
        compression: Compression,
        opts: &ReadOptions,
    ) -> Result<TraceReader> {
        let mut r = TraceReader {
            input,
            origin: origin.to_string(),
            format: opts.format.unwrap_or(Format::Disksim),
            compression,
            event: opts.blkparse_event,
            skip_bad: opts.skip_bad_lines,
            state: formats::State::default(),
            ahead: VecDeque::new(),
            buf: Vec::with_capacity(256),
            line: 0,
            records: 0,
            skipped: 0,
            not_requests: 0,
            bad: Vec::new(),
            t0: None,
            early: 0,
        };
        if let Some(b) = opts.lba_bytes {
            r.state.set_nvme_lba_bytes(b);
        }
        r.read_ahead()?;
        // A UTF-8 byte-order mark (Windows editors write one) is not part of the first line.
        if let Some((first, _)) = r.ahead.front_mut() {
            if first.starts_with(&[0xef, 0xbb, 0xbf]) {
                first.drain(..3);
            }
        }
        if opts.format.is_none() {
            r.format = r.detect()?;
        }
        // Time 0 is the earliest request of the first lines, not just the first one: some traces
        // (Tencent CBS) are not written in time order.
        let mut state = formats::State::default();
        for (line, long) in &r.ahead {
            if *long {
                continue;
            }
            if let Ok(formats::Parsed::Record(raw)) =
                formats::parse(r.format, &mut state, r.event, line)
            {
                r.t0 = Some(r.t0.map_or(raw.time_ps, |t| t.min(raw.time_ps)));
            }
        }
        Ok(r)
    }

    /// `{file}, line {n}`: where an error in line `n` points.
    fn at_line(&self, n: u64) -> String {
        format!("{}, line {n}", self.origin)
    }

    fn io_err(&self, e: std::io::Error) -> Error {
        unreadable(&self.at_line(self.line + 1), e)
    }

    /// A malformed line as the trace's error: the file and line number as its origin, the
    /// parser's field, value and expectation, and the format and the line itself after them.
    fn line_err(&self, e: formats::LineError) -> Error {
        Error::bad_trace(Invalid {
            note: Some(format!(
                "({} trace: {}); the line: {}",
                self.format.name(),
                self.format.info().layout,
                show_line(&self.buf)
            )),
            ..Invalid::of(
                self.at_line(self.line),
                e.field.map(str::to_string),
                e.problem,
            )
        })
    }

    /// Read up to [`DETECT_LINES`] non-blank lines ahead.
    fn read_ahead(&mut self) -> Result<()> {
        let mut non_blank = 0;
        while non_blank < DETECT_LINES {
            let mut buf = Vec::new();
            match input::read_line(&mut *self.input, &mut buf) {
                Ok(Some(long)) => {
                    let t = buf.iter().position(|b| !b.is_ascii_whitespace());
                    if t.is_some_and(|i| buf[i] != b'#') {
                        non_blank += 1;
                    }
                    self.ahead.push_back((buf, long));
                }
                Ok(None) => break,
                Err(e) => return Err(self.io_err(e)),
            }
        }
        Ok(())
    }

    /// Pick the format that reads the lines read ahead.
    fn detect(&mut self) -> Result<Format> {
        let mut best: Option<(Format, usize, usize)> = None;
        for fmt in Format::DETECT_ORDER {
            let mut state = formats::State::default();
            let (mut good, mut errors) = (0usize, 0usize);
            for (line, long) in &self.ahead {
                if *long {
                    errors += 1;
                    continue;
                }
                match formats::parse(fmt, &mut state, self.event, line) {
                    Ok(formats::Parsed::Record(_)) | Ok(formats::Parsed::Skip) => good += 1,
                    Ok(formats::Parsed::Blank) => {}
                    Err(_) => errors += 1,
                }
            }
            if good > 0 && errors == 0 {
                return Ok(fmt);
            }
            if good > 0 && good >= 2 * errors && best.is_none_or(|b| good > b.1) {
                best = Some((fmt, good, errors));
            }
        }
        if let Some((fmt, _, _)) = best {
            return Ok(fmt);
        }
        let first = self.ahead.iter().enumerate().find(|(_, (l, _))| {
            l.iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|&b| b != b'#')
        });
        // The format is what the user names with --format (the trace job's `format`).
        Err(Error::bad_trace(match first {
            Some((i, (l, _))) => Invalid::says(
                self.at_line(i as u64 + 1),
                "format",
                format!(
                    "cannot tell the trace format from the first lines (this one is {}); expected one of: {}; \
                     name it with --format",
                    show_line(l),
                    Format::names()
                ),
            ),
            None => Invalid::says(
                self.origin.clone(),
                "format",
                "no trace lines to tell the format from (the file is empty); name it with --format",
            ),
        }))
    }

    /// The next request, or `None` at the end of the trace.
    pub fn next_record(&mut self) -> Result<Option<TraceRecord>> {
        loop {
            // blkparse's summary trailer ends the events: stop there rather than read the
            // per-CPU and per-device tables.
            if self.state.at_summary() {
                return Ok(None);
            }
            let long = if let Some((line, long)) = self.ahead.pop_front() {
                self.buf = line;
                long
            } else {
                match input::read_line(&mut *self.input, &mut self.buf) {
                    Ok(Some(long)) => long,
                    Ok(None) => return Ok(None),
                    Err(e) => return Err(self.io_err(e)),
                }
            };
            self.line += 1;
            let parsed = if long {
                Err(formats::LineError::shape(got(
                    format!("more than {} bytes", input::MAX_LINE),
                    format!("a line of at most {} bytes", input::MAX_LINE),
                )))
            } else {
                formats::parse(self.format, &mut self.state, self.event, &self.buf)
            };
            match parsed {
                Ok(formats::Parsed::Record(raw)) => {
                    self.records += 1;
                    let t0 = *self.t0.get_or_insert(raw.time_ps);
                    if raw.time_ps < t0 {
                        self.early += 1;
                    }
                    let rel = raw.time_ps.saturating_sub(t0).min(u64::MAX as u128) as u64;
                    return Ok(Some(TraceRecord {
                        time_ps: rel,
                        op: raw.op,
                        offset: raw.offset,
                        len: raw.len,
                        device: raw.device,
                        directive: raw.directive,
                        all_zones: raw.all_zones,
                    }));
                }
                Ok(formats::Parsed::Skip) => {
                    self.not_requests += 1;
                    continue;
                }
                Ok(formats::Parsed::Blank) => continue,
                Err(e) => {
                    let err = self.line_err(e);
                    if !self.skip_bad {
                        return Err(err);
                    }
                    self.skipped += 1;
                    if self.bad.len() < KEEP_BAD {
                        self.bad.push(err.to_string());
                    }
                }
            }
        }
    }

    pub fn format(&self) -> Format {
        self.format
    }
    pub fn compression(&self) -> Compression {
        self.compression
    }
    /// Lines read so far (blank lines and comments included).
    pub fn lines(&self) -> u64 {
        self.line
    }
    /// Requests read so far.
    pub fn records(&self) -> u64 {
        self.records
    }
    /// Malformed lines skipped so far (with `skip_bad_lines`).
    pub fn skipped_lines(&self) -> u64 {
        self.skipped
    }
    /// Lines that belong to the format but hold no request: headers, file actions, events other
    /// than the requests asked for, no-data and pass-through events, the start of a summary.
    pub fn not_request_lines(&self) -> u64 {
        self.not_requests
    }
    /// blkparse: the D and the Q events read so far (any RWBS).
    pub fn blkparse_events(&self) -> (u64, u64) {
        self.state.blk_events()
    }
    /// nvme: Dataset Management commands read so far, not replayed (the trace does not hold
    /// the ranges they deallocate).
    pub fn nvme_dsm(&self) -> u64 {
        self.state.nvme_dsm()
    }
    /// Requests timestamped before time 0 (read as at time 0).
    pub fn early(&self) -> u64 {
        self.early
    }
    /// The messages of the first few skipped lines.
    pub fn bad_lines(&self) -> &[String] {
        &self.bad
    }
}
