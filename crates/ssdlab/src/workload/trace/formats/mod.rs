//! One line parser per trace format. A parser turns one line into a request, into nothing (a
//! header, a comment, an event that is not a request), or into a [`LineError`]: which field was
//! wrong, what it held and what it should have been. Parsers never allocate per line (an error
//! does), never panic, and keep only a small bounded state (fio's file table, blkparse's summary
//! flag).

pub mod nvme;

use super::{Directive, TraceOp};
use crate::error::{got, missing, says, Problem};

/// What is wrong with one line of a trace: the field (the format's name for the column) and
/// what it held against what was expected; no field where the line's shape is wrong (too few
/// fields, not an event of the format). The reader adds the file, the line number, the format
/// and the line itself ([`crate::error::Invalid`]'s origin and note).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub field: Option<&'static str>,
    pub problem: Problem,
}

impl LineError {
    /// The line's shape is wrong: no one field to blame.
    pub fn shape(problem: Problem) -> LineError {
        LineError {
            field: None,
            problem,
        }
    }

    /// `field` breaks a rule.
    pub fn field(field: &'static str, problem: Problem) -> LineError {
        LineError {
            field: Some(field),
            problem,
        }
    }
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field {
            Some(field) => write!(f, "field `{field}`: {}", self.problem),
            None => write!(f, "{}", self.problem),
        }
    }
}

/// A line parser's answer.
pub type LineResult<T> = Result<T, LineError>;

/// The trace formats ssdlab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// MSR Cambridge CSV (SNIA IOTTA).
    Msr,
    /// UMass Trace Repository / SPC ASCII.
    Spc,
    /// DiskSim ASCII as MQSim and SSDsim read it.
    Disksim,
    /// blkparse's default text output.
    Blkparse,
    /// Tencent Cloud Block Storage CSV (SNIA IOTTA).
    Tencent,
    /// Alibaba Cloud block-trace CSV (alibaba/block-traces, 2020).
    Alibaba,
    /// fio's iolog, versions 2 and 3.
    Fio,
    /// The Linux kernel's NVMe host tracepoints (`nvme_setup_cmd`) as ftrace prints them.
    Nvme,
}

pub struct FormatInfo {
    pub format: Format,
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub layout: &'static str,
    pub description: &'static str,
}

pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        format: Format::Msr,
        name: "msr",
        aliases: &["msr-cambridge", "snia-msr"],
        layout: "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
        description: "MSR Cambridge CSV: Windows filetime (100 ns ticks), Read|Write, offset and size in bytes; device = DiskNumber",
    },
    FormatInfo {
        format: Format::Spc,
        name: "spc",
        aliases: &["umass", "spc-ascii"],
        layout: "ASU,LBA,Size,Opcode,Timestamp[,...]",
        description: "UMass/SPC ASCII: LBA in 512-byte blocks, size in bytes, opcode r|w, timestamp in seconds; device = ASU",
    },
    FormatInfo {
        format: Format::Disksim,
        name: "disksim",
        aliases: &["mqsim", "ssdsim", "ascii"],
        layout: "time_ns device start_sector size_sectors op",
        description: "DiskSim/MQSim/SSDsim ASCII, separated by spaces or tabs: arrival time in ns, 512-byte sectors, op 1 = read, 0 = write (bit 0)",
    },
    FormatInfo {
        format: Format::Blkparse,
        name: "blkparse",
        aliases: &["blktrace"],
        layout: "maj,min cpu seq seconds pid action RWBS sector + blocks [process]",
        description: "blkparse text output: the D (dispatch) or Q (queue) events; RWBS gives read/write/discard/flush; the summary block is ignored; device = maj:min",
    },
    FormatInfo {
        format: Format::Tencent,
        name: "tencent",
        aliases: &["tencent-cbs", "cbs"],
        layout: "Timestamp,Offset,Size,IOType,VolumeID",
        description: "Tencent Cloud Block Storage CSV: Unix seconds, offset and size in 512-byte sectors, IOType 0 = read, 1 = write; device = VolumeID",
    },
    FormatInfo {
        format: Format::Alibaba,
        name: "alibaba",
        aliases: &["alibaba-block"],
        layout: "device_id,opcode,offset,length,timestamp",
        description: "Alibaba block-trace CSV: opcode R|W, offset and length in bytes, timestamp in microseconds; device = device_id",
    },
    FormatInfo {
        format: Format::Fio,
        name: "fio",
        aliases: &["iolog", "fio-iolog"],
        layout: "fio version 2|3 iolog, then [usec] filename action [offset length]",
        description: "fio iolog v2 (wait actions give the time) or v3 (a timestamp in µs on every line); read/write/trim/sync/datasync; device = file, in order of first use",
    },
    FormatInfo {
        format: Format::Nvme,
        name: "nvme",
        aliases: &["nvme-trace", "ftrace", "nvme-ftrace"],
        layout: "task-pid [cpu] flags seconds: nvme_setup_cmd: nvmeN: [disk=nvmeXnY, ]qid=Q, cmdid=C, nsid=N, flags=0xF, meta=0xM, cmd=(OPCODE ARGS)",
        description: "Linux NVMe host tracepoints as /sys/kernel/tracing/trace prints them: nvme_setup_cmd events; read/write/write_zeroes/flush/zone_append/zone_mgmt_send; LBAs of lba_size bytes; a write's data placement (DTYPE 2) or stream (DTYPE 1) directive; device = nvmeXnY",
    },
];

impl Format {
    pub fn info(self) -> &'static FormatInfo {
        FORMATS
            .iter()
            .find(|f| f.format == self)
            .expect("every format has its info")
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// A format by name or alias, case-insensitively.
    pub fn from_name(name: &str) -> Option<Format> {
        let n = name.trim().to_ascii_lowercase();
        FORMATS
            .iter()
            .find(|f| f.name == n || f.aliases.contains(&n.as_str()))
            .map(|f| f.format)
    }

    pub fn names() -> String {
        FORMATS
            .iter()
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A device number as this format writes it: blkparse `maj:min`, nvme `nvmeXnY`, else the
    /// number.
    pub fn device_name(self, device: u32) -> String {
        let (hi, lo) = (device >> 20, device & ((1 << 20) - 1));
        match self {
            Format::Blkparse => format!("{hi}:{lo}"),
            Format::Nvme => format!("nvme{hi}n{lo}"),
            _ => device.to_string(),
        }
    }

    /// The order in which detection tries the formats (the most distinctive first).
    pub const DETECT_ORDER: [Format; 8] = [
        Format::Fio,
        Format::Nvme,
        Format::Blkparse,
        Format::Msr,
        Format::Alibaba,
        Format::Tencent,
        Format::Spc,
        Format::Disksim,
    ];
}

/// Which blkparse event stands for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum BlkEvent {
    /// Dispatched to the driver (what reached the device).
    #[default]
    D,
    /// Queued by the block layer (what the application asked for, before merging).
    Q,
}

/// A parsed request, its time still in the trace's own origin (picoseconds, wide).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord {
    pub time_ps: u128,
    pub op: TraceOp,
    pub offset: u64,
    pub len: u64,
    pub device: u32,
    /// The write's directive (NVMe traces only).
    pub directive: Directive,
    /// Zone management: the Select All bit (the offset is then no zone's).
    pub all_zones: bool,
}

impl RawRecord {
    /// A request with no directive and no zone flag, as every format but `nvme` gives.
    fn plain(time_ps: u128, op: TraceOp, offset: u64, len: u64, device: u32) -> RawRecord {
        RawRecord {
            time_ps,
            op,
            offset,
            len,
            device,
            directive: Directive::None,
            all_zones: false,
        }
    }
}

pub enum Parsed {
    Record(RawRecord),
    /// A line that belongs to the format but is not a request (header, file action, other event).
    Skip,
    /// An empty line or a `#` comment.
    Blank,
}

/// Parser state carried from line to line; bounded in size.
#[derive(Default)]
pub struct State {
    /// fio: 2 or 3 once the header was seen.
    fio_version: u8,
    /// fio: file names in order of first use (at most `MAX_FIO_FILES`).
    fio_files: Vec<Vec<u8>>,
    /// fio v2: time given by the `wait` actions so far.
    fio_wait_ps: u128,
    /// blkparse: inside the summary block at the end.
    blk_summary: bool,
    /// blkparse: well-formed D and Q events seen (of any RWBS), to say which kinds a file holds.
    blk_d: u64,
    blk_q: u64,
    /// Non-blank lines seen so far.
    lines_seen: u64,
    /// nvme: the logical block size in bytes (0: the default, 512).
    nvme_lba_bytes: u64,
    /// nvme: Dataset Management commands seen (their ranges are not in the trace).
    pub(super) nvme_dsm: u64,
}

impl State {
    /// blkparse: the summary trailer has begun; nothing after it is an event.
    pub fn at_summary(&self) -> bool {
        self.blk_summary
    }
    /// blkparse: the D and the Q events seen so far.
    pub fn blk_events(&self) -> (u64, u64) {
        (self.blk_d, self.blk_q)
    }
    /// nvme: read LBAs as blocks of `bytes`.
    pub fn set_nvme_lba_bytes(&mut self, bytes: u64) {
        self.nvme_lba_bytes = bytes;
    }
    pub(super) fn nvme_lba_bytes(&self) -> u64 {
        if self.nvme_lba_bytes == 0 {
            nvme::DEFAULT_LBA_BYTES
        } else {
            self.nvme_lba_bytes
        }
    }
    /// nvme: the Dataset Management commands seen so far (not replayed: the trace does not
    /// hold their ranges).
    pub fn nvme_dsm(&self) -> u64 {
        self.nvme_dsm
    }
}

const MAX_FIO_FILES: usize = 4096;
const SECTOR: u64 = 512;

type Fields<'a> = [&'a [u8]; 12];

pub(super) fn trim(mut f: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = f {
        if first.is_ascii_whitespace() {
            f = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = f {
        if last.is_ascii_whitespace() {
            f = rest;
        } else {
            break;
        }
    }
    f
}

/// Split on commas (fields trimmed); returns the number of fields, of which the first 12 are kept.
fn split_commas<'a>(line: &'a [u8], out: &mut Fields<'a>) -> usize {
    let mut n = 0;
    for f in line.split(|&b| b == b',') {
        if n < out.len() {
            out[n] = trim(f);
        }
        n += 1;
    }
    n
}

/// Split on runs of spaces and tabs; returns the number of fields, of which the first 12 are kept.
fn split_ws<'a>(line: &'a [u8], out: &mut Fields<'a>) -> usize {
    let mut n = 0;
    for f in line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
    {
        if n < out.len() {
            out[n] = f;
        }
        n += 1;
    }
    n
}

/// A field for an error message: printable, quoted, at most 40 characters.
pub fn show(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]);
    let more = if bytes.len() > 40 { "…" } else { "" };
    format!("{:?}{more}", text)
}

/// `field` held `value` where `want` was expected.
pub(super) fn bad(field: &'static str, want: &str, value: &[u8]) -> LineError {
    LineError::field(field, got(show(value), want))
}

#[inline]
pub fn parse_u64(f: &[u8]) -> Option<u64> {
    if f.is_empty() || f.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in f {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

fn parse_u32(f: &[u8]) -> Option<u32> {
    parse_u64(f).and_then(|v| u32::try_from(v).ok())
}

/// A non-negative decimal number (`12`, `12.5`, `.5`) in some unit, as an integer count of
/// picoseconds when one unit is `10^exp` ps. Digits beyond picoseconds are dropped.
pub fn parse_decimal_ps(f: &[u8], exp: u32) -> Option<u128> {
    let (int, frac) = match f.iter().position(|&b| b == b'.') {
        Some(i) => (&f[..i], &f[i + 1..]),
        None => (f, &f[f.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let whole = if int.is_empty() { 0 } else { parse_u64(int)? } as u128;
    let mut v = whole * 10u128.pow(exp);
    let mut scale = 10u128.pow(exp);
    for &b in frac {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        scale /= 10;
        v += d as u128 * scale;
    }
    Some(v)
}

fn bytes_of(sectors: u64, field: &'static str, got: &[u8]) -> LineResult<u64> {
    sectors
        .checked_mul(SECTOR)
        .ok_or_else(|| bad(field, "a sector count below 2^55", got))
}

fn is_blank(line: &[u8]) -> bool {
    let t = trim(line);
    t.is_empty() || t[0] == b'#'
}

/// Parse one line of `format`.
pub fn parse(
    format: Format,
    state: &mut State,
    event: BlkEvent,
    line: &[u8],
) -> LineResult<Parsed> {
    if format == Format::Blkparse && state.blk_summary {
        return Ok(Parsed::Skip);
    }
    if is_blank(line) {
        return Ok(Parsed::Blank);
    }
    state.lines_seen += 1;
    let first = state.lines_seen == 1;
    match format {
        Format::Msr => msr(line),
        Format::Spc => spc(line),
        Format::Disksim => disksim(line),
        Format::Blkparse => blkparse(state, event, line),
        Format::Tencent => tencent(line),
        Format::Alibaba => alibaba(line),
        Format::Fio => fio(state, first, line),
        Format::Nvme => nvme::parse(state, line),
    }
}

fn count_err(n: usize, want: usize, layout: &str) -> LineError {
    LineError::shape(got(
        format!("{n} fields"),
        format!("{want} fields {layout}"),
    ))
}

/// The fields of a comma-separated line that must have `want` of them: None for the header line
/// (its first field is `header`, any case), an error naming the `layout` for a wrong count.
fn csv_fields<'a>(
    line: &'a [u8],
    header: &[u8],
    want: usize,
    layout: &str,
) -> LineResult<Option<Fields<'a>>> {
    let mut f: Fields = [&[]; 12];
    let n = split_commas(line, &mut f);
    if n >= 1 && f[0].eq_ignore_ascii_case(header) {
        return Ok(None);
    }
    if n != want {
        return Err(count_err(n, want, layout));
    }
    Ok(Some(f))
}

fn msr(line: &[u8]) -> LineResult<Parsed> {
    let Some(f) = csv_fields(
        line,
        b"timestamp",
        7,
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime separated by commas",
    )?
    else {
        return Ok(Parsed::Skip);
    };
    let ticks = parse_u64(f[0]).ok_or_else(|| {
        bad(
            "Timestamp",
            "Windows filetime (an integer count of 100 ns ticks)",
            f[0],
        )
    })?;
    let device = parse_u32(f[2]).ok_or_else(|| bad("DiskNumber", "an integer below 2^32", f[2]))?;
    let op = if f[3].eq_ignore_ascii_case(b"read") {
        TraceOp::Read
    } else if f[3].eq_ignore_ascii_case(b"write") {
        TraceOp::Write
    } else {
        return Err(bad("Type", "Read or Write", f[3]));
    };
    let offset = parse_u64(f[4]).ok_or_else(|| bad("Offset", "a byte offset (integer)", f[4]))?;
    let len = parse_u64(f[5]).ok_or_else(|| bad("Size", "a size in bytes (integer)", f[5]))?;
    parse_u64(f[6]).ok_or_else(|| bad("ResponseTime", "an integer count of 100 ns ticks", f[6]))?;
    Ok(Parsed::Record(RawRecord::plain(
        ticks as u128 * 100_000,
        op,
        offset,
        len,
        device,
    )))
}

fn spc(line: &[u8]) -> LineResult<Parsed> {
    let mut f: Fields = [&[]; 12];
    let n = split_commas(line, &mut f);
    if n < 5 {
        return Err(LineError::shape(got(
            format!("{n} fields"),
            "at least 5 fields ASU,LBA,Size,Opcode,Timestamp separated by commas",
        )));
    }
    let device = parse_u32(f[0]).ok_or_else(|| bad("ASU", "an integer below 2^32", f[0]))?;
    let lba = parse_u64(f[1])
        .ok_or_else(|| bad("LBA", "a block number (integer, 512-byte blocks)", f[1]))?;
    let offset = bytes_of(lba, "LBA", f[1])?;
    let len = parse_u64(f[2]).ok_or_else(|| bad("Size", "a size in bytes (integer)", f[2]))?;
    let op = match f[3] {
        b"r" | b"R" => TraceOp::Read,
        b"w" | b"W" => TraceOp::Write,
        other => return Err(bad("Opcode", "r or w", other)),
    };
    let t = parse_decimal_ps(f[4], 12)
        .ok_or_else(|| bad("Timestamp", "seconds (a non-negative decimal)", f[4]))?;
    Ok(Parsed::Record(RawRecord::plain(t, op, offset, len, device)))
}

fn disksim(line: &[u8]) -> LineResult<Parsed> {
    let mut f: Fields = [&[]; 12];
    let n = split_ws(line, &mut f);
    if n != 5 {
        return Err(count_err(
            n,
            5,
            "time_ns device start_sector size_sectors op separated by spaces or tabs",
        ));
    }
    let t = parse_decimal_ps(f[0], 3).ok_or_else(|| {
        bad(
            "time",
            "an arrival time in ns (a non-negative number)",
            f[0],
        )
    })?;
    let device = parse_u32(f[1]).ok_or_else(|| bad("device", "an integer below 2^32", f[1]))?;
    let sector =
        parse_u64(f[2]).ok_or_else(|| bad("start_sector", "a sector number (integer)", f[2]))?;
    let sectors =
        parse_u64(f[3]).ok_or_else(|| bad("size_sectors", "a sector count (integer)", f[3]))?;
    let flags = parse_u64(f[4]).ok_or_else(|| bad("op", "1 (read) or 0 (write)", f[4]))?;
    let op = if flags & 1 == 1 {
        TraceOp::Read
    } else {
        TraceOp::Write
    };
    Ok(Parsed::Record(RawRecord::plain(
        t,
        op,
        bytes_of(sector, "start_sector", f[2])?,
        bytes_of(sectors, "size_sectors", f[3])?,
        device,
    )))
}

fn tencent(line: &[u8]) -> LineResult<Parsed> {
    let Some(f) = csv_fields(
        line,
        b"timestamp",
        5,
        "Timestamp,Offset,Size,IOType,VolumeID separated by commas",
    )?
    else {
        return Ok(Parsed::Skip);
    };
    let t = parse_decimal_ps(f[0], 12)
        .ok_or_else(|| bad("Timestamp", "Unix seconds (a non-negative number)", f[0]))?;
    let sector = parse_u64(f[1]).ok_or_else(|| bad("Offset", "a sector number (integer)", f[1]))?;
    let sectors = parse_u64(f[2]).ok_or_else(|| bad("Size", "a sector count (integer)", f[2]))?;
    let op = match f[3] {
        b"0" => TraceOp::Read,
        b"1" => TraceOp::Write,
        other => return Err(bad("IOType", "0 (read) or 1 (write)", other)),
    };
    let device = parse_u32(f[4]).ok_or_else(|| bad("VolumeID", "an integer below 2^32", f[4]))?;
    Ok(Parsed::Record(RawRecord::plain(
        t,
        op,
        bytes_of(sector, "Offset", f[1])?,
        bytes_of(sectors, "Size", f[2])?,
        device,
    )))
}

fn alibaba(line: &[u8]) -> LineResult<Parsed> {
    let Some(f) = csv_fields(
        line,
        b"device_id",
        5,
        "device_id,opcode,offset,length,timestamp separated by commas",
    )?
    else {
        return Ok(Parsed::Skip);
    };
    let device = parse_u32(f[0]).ok_or_else(|| bad("device_id", "an integer below 2^32", f[0]))?;
    let op = match f[1] {
        b"R" | b"r" => TraceOp::Read,
        b"W" | b"w" => TraceOp::Write,
        other => return Err(bad("opcode", "R or W", other)),
    };
    let offset = parse_u64(f[2]).ok_or_else(|| bad("offset", "a byte offset (integer)", f[2]))?;
    let len = parse_u64(f[3]).ok_or_else(|| bad("length", "a length in bytes (integer)", f[3]))?;
    let t = parse_decimal_ps(f[4], 6)
        .ok_or_else(|| bad("timestamp", "microseconds (a non-negative number)", f[4]))?;
    Ok(Parsed::Record(RawRecord::plain(t, op, offset, len, device)))
}

/// The kernel's `MKDEV`: 12 bits of major above 20 bits of minor.
pub fn blk_device(major: u32, minor: u32) -> Option<u32> {
    (major < (1 << 12) && minor < (1 << 20)).then_some((major << 20) | minor)
}

const BLK_LAYOUT: &str =
    "a blkparse event `maj,min cpu seq seconds pid action RWBS sector + blocks [process]`";
const RWBS_FLAGS: &str = "flags from R, W, D, F, S, M, A, N, E, B";

fn blkparse(state: &mut State, event: BlkEvent, line: &[u8]) -> LineResult<Parsed> {
    let mut f: Fields = [&[]; 12];
    let n = split_ws(line, &mut f);
    let dev = f[0].iter().position(|&b| b == b',').and_then(|i| {
        let major = parse_u32(&f[0][..i])?;
        let minor = parse_u32(&f[0][i + 1..])?;
        blk_device(major, minor)
    });
    let Some(device) = dev else {
        // The per-CPU and per-device summary that blkparse prints at the end.
        let t = trim(line);
        let summary = [
            &b"CPU"[..],
            b"Total (",
            b"Throughput",
            b"Events (",
            b"Skips:",
        ];
        if summary.iter().any(|s| t.starts_with(s)) {
            state.blk_summary = true;
            return Ok(Parsed::Skip);
        }
        return Err(bad("maj,min", BLK_LAYOUT, f[0]));
    };
    if n < 6 {
        return Err(LineError::shape(got(format!("{n} fields"), BLK_LAYOUT)));
    }
    for (i, name) in [(1, "cpu"), (2, "seq"), (4, "pid")] {
        if parse_u64(f[i]).is_none() {
            return Err(bad(name, "an integer", f[i]));
        }
    }
    let t = parse_decimal_ps(f[3], 12)
        .ok_or_else(|| bad("time", "seconds (a non-negative decimal)", f[3]))?;
    match f[5] {
        b"D" => state.blk_d += 1,
        b"Q" => state.blk_q += 1,
        _ => {}
    }
    let want: &[u8] = match event {
        BlkEvent::D => b"D",
        BlkEvent::Q => b"Q",
    };
    // Any other action (G, I, C, M, P, U, UT, m notes, PC...) is not a request.
    if f[5] != want {
        return Ok(Parsed::Skip);
    }
    if n < 7 {
        return Err(LineError::field(
            "RWBS",
            missing(format!("{RWBS_FLAGS} ({BLK_LAYOUT})")),
        ));
    }
    let rwbs = f[6];
    if rwbs.is_empty() || !rwbs.iter().all(|b| b"RWDFSMANEB".contains(b)) {
        return Err(bad("RWBS", RWBS_FLAGS, rwbs));
    }
    let has = |c: u8| rwbs.contains(&c);
    // RWBS `N` alone: no data moves (a pass-through SCSI/NVMe command, a zone command); blkparse
    // then prints a byte count and the command's first bytes, `0 (12 00 ..)`, not a sector range.
    if !(has(b'R') || has(b'W') || has(b'D') || has(b'F')) {
        return Ok(Parsed::Skip);
    }
    let data = n >= 10 && f[8] == b"+";
    let pass_through = n > 8 && parse_u64(f[7]).is_some() && f[8].starts_with(b"(");
    if pass_through {
        return Ok(Parsed::Skip);
    }
    let (offset, len) = if data {
        let sector =
            parse_u64(f[7]).ok_or_else(|| bad("sector", "a sector number (integer)", f[7]))?;
        let blocks = parse_u64(f[9])
            .ok_or_else(|| bad("blocks", "a count of 512-byte blocks (integer)", f[9]))?;
        (
            bytes_of(sector, "sector", f[7])?,
            bytes_of(blocks, "blocks", f[9])?,
        )
    } else if n > 7 && !f[7].starts_with(b"[") {
        return Err(bad(
            "sector",
            "`sector + blocks` or `[process]` after the RWBS field",
            f[7],
        ));
    } else {
        (0, 0)
    };
    let op = if len == 0 {
        // No data: a flush (`FN`, or a write carrying only a preflush, `FWS`), else nothing.
        if has(b'F') {
            TraceOp::Flush
        } else {
            return Ok(Parsed::Skip);
        }
    } else if has(b'D') {
        TraceOp::Trim
    } else if has(b'W') {
        TraceOp::Write
    } else if has(b'R') {
        TraceOp::Read
    } else {
        return Ok(Parsed::Skip);
    };
    let offset = if op == TraceOp::Flush { 0 } else { offset };
    Ok(Parsed::Record(RawRecord::plain(t, op, offset, len, device)))
}

fn fio(state: &mut State, first: bool, line: &[u8]) -> LineResult<Parsed> {
    let t = trim(line);
    if first {
        state.fio_version = match t {
            b"fio version 2 iolog" => 2,
            b"fio version 3 iolog" => 3,
            _ => {
                return Err(LineError::shape(got(
                    show(t),
                    "the header \"fio version 2 iolog\" or \"fio version 3 iolog\"",
                )))
            }
        };
        return Ok(Parsed::Skip);
    }
    let mut f: Fields = [&[]; 12];
    let n = split_ws(t, &mut f);
    let v3 = state.fio_version == 3;
    let base = if v3 { 1 } else { 0 };
    let layout = if v3 {
        "`usec filename action [offset length]`"
    } else {
        "`filename action [offset length]`"
    };
    if n != base + 2 && n != base + 4 {
        return Err(LineError::shape(got(
            format!("{n} fields"),
            format!("{layout} (fio iolog v{})", state.fio_version),
        )));
    }
    let time = if v3 {
        parse_decimal_ps(f[0], 6).ok_or_else(|| bad("timestamp", "microseconds (integer)", f[0]))?
    } else {
        state.fio_wait_ps
    };
    let name = f[base];
    let action = f[base + 1];
    if n == base + 2 {
        return match action {
            b"add" | b"open" | b"close" => {
                fio_file(state, name)?;
                Ok(Parsed::Skip)
            }
            other => Err(bad("action", "add, open or close (a file action)", other)),
        };
    }
    let offset = parse_u64(f[base + 2])
        .ok_or_else(|| bad("offset", "a byte offset (integer)", f[base + 2]))?;
    let len = parse_u64(f[base + 3])
        .ok_or_else(|| bad("length", "a length in bytes (integer)", f[base + 3]))?;
    let op = match action {
        b"read" => TraceOp::Read,
        b"write" => TraceOp::Write,
        b"trim" => TraceOp::Trim,
        b"sync" | b"datasync" => TraceOp::Flush,
        b"wait" if !v3 => {
            // Version 2: wait `offset` µs after the previous wait; below 100 µs is dropped.
            if offset >= 100 {
                state.fio_wait_ps += offset as u128 * 1_000_000;
            }
            return Ok(Parsed::Skip);
        }
        other => return Err(bad("action", "read, write, trim, sync or datasync", other)),
    };
    let device = fio_file(state, name)?;
    let (offset, len) = if op == TraceOp::Flush {
        (0, 0)
    } else {
        (offset, len)
    };
    Ok(Parsed::Record(RawRecord::plain(
        time, op, offset, len, device,
    )))
}

fn fio_file(state: &mut State, name: &[u8]) -> LineResult<u32> {
    if let Some(i) = state.fio_files.iter().position(|f| f == name) {
        return Ok(i as u32);
    }
    if name.len() > 4096 {
        return Err(bad("filename", "a file name of at most 4096 bytes", name));
    }
    if state.fio_files.len() >= MAX_FIO_FILES {
        return Err(LineError::field(
            "filename",
            says(format!(
                "more than {MAX_FIO_FILES} files in one iolog; ssdlab keeps at most that many"
            )),
        ));
    }
    state.fio_files.push(name.to_vec());
    Ok((state.fio_files.len() - 1) as u32)
}
