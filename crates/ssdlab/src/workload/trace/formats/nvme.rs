//! The Linux kernel's NVMe host tracepoints as text: what `cat /sys/kernel/tracing/trace` (and
//! `trace-cmd report`, which prints the same event text after its own prefix) shows for the
//! `nvme` trace system. Read from the event's print format in the kernel's
//! `drivers/nvme/host/trace.h` and the command decoders of `trace.c` (written here from those
//! format strings, not copied):
//!
//! ```text
//! fio-2342 [003] ..... 81.135268: nvme_setup_cmd: nvme0: disk=nvme0n1, qid=4, cmdid=61, nsid=1, flags=0x0, meta=0x0, cmd=(nvme_cmd_write slba=2048, len=7, ctrl=0x20, dsmgmt=65536, reftag=0)
//! ```
//!
//! - the prefix: task-pid, `[cpu]`, the flag columns (their number varies with the kernel and
//!   the options), then the timestamp in seconds (µs with the default `local` clock, ns from
//!   `trace-cmd report`) and a colon;
//! - `nvme_setup_cmd`: `nvme<ctrl>: ` then `disk=<name>, ` when the command has a disk (I/O
//!   commands do, admin commands do not), `qid`, `cmdid`, `nsid`, `flags`, `meta`, and
//!   `cmd=(<opcode name> <arguments>)`. qid 0 is the admin queue.
//! - Read, Write, Write Zeroes and (from Linux 5.9) Zone Append print `slba`, `len` (CDW12
//!   bits 15:0, the number of logical blocks, 0's based), `ctrl` (CDW12 bits 31:16), `dsmgmt`
//!   (the whole of CDW13) and `reftag`. Dataset Management prints `nr` (the ranges, 0's based)
//!   and `attributes` (CDW11); its ranges are in the data buffer, which the tracepoint does
//!   not record. Zone Management Send prints `slba`, `zsa` (from Linux 6.9 followed by a colon
//!   and the action's name) and `all` (the Select All bit). Every other command prints its
//!   command dwords 10 to 15 as 24 hex bytes, `cdw10=00 01 ...`; a kernel older than the Zone
//!   Append and Zone Management decoders prints those commands that way, and they are decoded
//!   from the bytes here.
//!
//! What becomes a request: reads, writes, flushes, Write Zeroes (a trim when its Deallocate
//! bit, CDW12 bit 25, is set; else a write of zeros), Zone Append and Zone Management Send
//! (close, finish, open, reset, offline; Select All kept). A write's directive: DTYPE, CDW12
//! bits 23:20, is `ctrl` bits 7:4; DSPEC, CDW13 bits 31:16, is `dsmgmt >> 16`. DTYPE 2 (data
//! placement, TP4146) makes DSPEC the placement identifier, DTYPE 1 (streams) the stream
//! identifier. Not requests, counted: admin commands, Dataset Management (no ranges to trim),
//! Zone Management Receive, Set Zone Descriptor Extension, every other command, the
//! `nvme_complete_rq` events (checked for their shape only), other events, and `trace-cmd`'s
//! header lines.

use super::super::{Directive, TraceOp};
use super::{
    bad, parse_decimal_ps, parse_u64, show, trim, LineError, LineResult, Parsed, RawRecord, State,
};
use crate::error::{got, missing};

/// The logical block size when the job names none: 512 bytes, the unit of Linux's block layer
/// and the LBA format most NVMe namespaces ship in; a namespace formatted to 4 KiB blocks
/// (`/sys/block/nvme0n1/queue/logical_block_size` says 4096) needs `lba_size = 4096`.
pub const DEFAULT_LBA_BYTES: u64 = 512;

const LAYOUT: &str = "an ftrace line `task-pid [cpu] flags seconds: event: ...`";

/// The event of an ftrace line: (timestamp, event name, the event's text); None when the line
/// does not have the shape `... [cpu] ... seconds: name: text`.
fn ftrace_event(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    // The CPU column, `[003]`, comes before the timestamp: the end of the first one bounds
    // where the timestamp may start (found once, so that a long line of `: ` pairs costs one
    // pass, not one per pair).
    let cpu_end = cpu_column_end(line)?;
    let mut i = cpu_end;
    while i + 1 < line.len() {
        if &line[i..i + 2] == b": " {
            // The token before is the timestamp, the one after the event name and a colon.
            let before = &line[..i];
            let start = before
                .iter()
                .rposition(|b| b.is_ascii_whitespace())
                .map_or(0, |p| p + 1);
            let ts = &before[start..];
            let rest = &line[i + 2..];
            let name_end = rest.iter().position(|&b| b == b':');
            if start >= cpu_end && is_timestamp(ts) {
                if let Some(e) = name_end {
                    let name = &rest[..e];
                    if !name.is_empty()
                        && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    {
                        return Some((ts, name, trim(&rest[e + 1..])));
                    }
                }
            }
        }
        i += 1;
    }
    None
}

fn is_timestamp(t: &[u8]) -> bool {
    !t.is_empty()
        && t.iter().filter(|&&b| b == b'.').count() <= 1
        && t.iter().all(|b| b.is_ascii_digit() || *b == b'.')
        && t[0].is_ascii_digit()
}

/// Where the first `[digits]` column (the CPU) ends, if the line has one.
fn cpu_column_end(line: &[u8]) -> Option<usize> {
    let mut at = 0;
    for f in line.split(|b| b.is_ascii_whitespace()) {
        let end = at + f.len();
        if f.len() >= 3
            && f[0] == b'['
            && f[f.len() - 1] == b']'
            && f[1..f.len() - 1].iter().all(u8::is_ascii_digit)
        {
            return Some(end);
        }
        at = end + 1;
    }
    None
}

/// `trace-cmd report`'s header lines: `cpus=8`, `version = 6`, `CPU 3 is empty`,
/// `CPU0 data recorded at offset=0x...`.
fn trace_cmd_header(t: &[u8]) -> bool {
    let num = |f: &[u8]| !f.is_empty() && f.iter().all(u8::is_ascii_digit);
    if let Some(n) = t.strip_prefix(b"cpus=") {
        return num(n);
    }
    if let Some(n) = t.strip_prefix(b"version = ") {
        return !n.is_empty();
    }
    if let Some(rest) = t.strip_prefix(b"CPU") {
        return rest.ends_with(b" is empty") || rest.windows(13).any(|w| w == b"data recorded");
    }
    false
}

/// The value of `key=` in a `key=value, key=value` list (values end at `, ` or the end).
fn field<'a>(text: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let k = key.as_bytes();
    let mut rest = text;
    loop {
        let item_end = find(rest, b", ").unwrap_or(rest.len());
        let item = &rest[..item_end];
        if item.len() > k.len() && item.starts_with(k) && item[k.len()] == b'=' {
            return Some(&item[k.len() + 1..]);
        }
        if item_end == rest.len() {
            return None;
        }
        rest = &rest[item_end + 2..];
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A number as `%u`/`%llu` (decimal) or `0x%x`/`%#x` (hexadecimal) print it.
fn number(f: &[u8]) -> Option<u64> {
    if let Some(h) = f.strip_prefix(b"0x").or_else(|| f.strip_prefix(b"0X")) {
        if h.is_empty() || h.len() > 16 {
            return None;
        }
        let mut v = 0u64;
        for &b in h {
            v = v << 4 | (b as char).to_digit(16)? as u64;
        }
        return Some(v);
    }
    parse_u64(f)
}

fn need(text: &[u8], key: &'static str, want: &str) -> LineResult<u64> {
    let v = field(text, key).ok_or_else(|| LineError::field(key, missing(want)))?;
    number(v).ok_or_else(|| bad(key, want, v))
}

/// `nvme<ctrl>:` at the start of an nvme event's text; the rest after it.
fn controller(text: &[u8]) -> LineResult<(u32, &[u8])> {
    let colon = text.iter().position(|&b| b == b':');
    let ctrl = colon.and_then(|c| {
        let id = text[..c].strip_prefix(b"nvme")?;
        u32::try_from(parse_u64(id)?).ok()
    });
    match (ctrl, colon) {
        (Some(id), Some(c)) => Ok((id, trim(&text[c + 1..]))),
        _ => Err(LineError::shape(got(
            show(text),
            "the event text to start with the controller, `nvme0:`",
        ))),
    }
}

/// A disk name `nvme<X>n<Y>` (or a multipath path `nvme<X>c<C>n<Y>`): (X, Y).
fn disk_name(d: &[u8]) -> Option<(u64, u64)> {
    let rest = d.strip_prefix(b"nvme")?;
    let n = rest.iter().rposition(|&b| b == b'n')?;
    let head = &rest[..n];
    let x = match head.iter().position(|&b| b == b'c') {
        Some(c) => {
            parse_u64(&head[c + 1..])?;
            parse_u64(&head[..c])?
        }
        None => parse_u64(head)?,
    };
    Some((x, parse_u64(&rest[n + 1..])?))
}

/// The device number of a namespace: controller (or subsystem) X and namespace Y of
/// `nvme<X>n<Y>` as X << 20 | Y, as blkparse's `maj:min` is kept.
pub fn device_of(x: u64, y: u64) -> Option<u32> {
    (x < (1 << 12) && y < (1 << 20)).then_some(((x as u32) << 20) | y as u32)
}

/// The device number of a disk name `nvmeXnY` (a `--device` filter).
pub fn device_by_name(name: &str) -> Option<u32> {
    let (x, y) = disk_name(name.as_bytes())?;
    device_of(x, y)
}

/// The 24 bytes of command dwords 10 to 15 that `cdw10=%*ph` prints (hex pairs, spaces).
fn cdw_bytes(args: &[u8]) -> LineResult<[u8; 24]> {
    let hex = args.strip_prefix(b"cdw10=").ok_or_else(|| {
        bad(
            "cmd",
            "the command's arguments or `cdw10=` and 24 hex bytes",
            args,
        )
    })?;
    let mut out = [0u8; 24];
    let mut n = 0;
    for pair in hex.split(|&b| b == b' ').filter(|p| !p.is_empty()) {
        if n == 24 || pair.len() != 2 {
            return Err(bad(
                "cdw10",
                "24 bytes in hex pairs separated by spaces",
                hex,
            ));
        }
        let digit = |b: u8| (b as char).to_digit(16);
        let (Some(hi), Some(lo)) = (digit(pair[0]), digit(pair[1])) else {
            return Err(bad(
                "cdw10",
                "24 bytes in hex pairs separated by spaces",
                hex,
            ));
        };
        out[n] = (hi << 4 | lo) as u8;
        n += 1;
    }
    if n != 24 {
        return Err(bad(
            "cdw10",
            "24 bytes in hex pairs separated by spaces",
            hex,
        ));
    }
    Ok(out)
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64)
}

/// The fields of a read/write-shaped command: (slba, blocks, ctrl, dsmgmt).
fn rw_fields(args: &[u8]) -> LineResult<(u64, u64, u64, u64)> {
    if args.starts_with(b"cdw10=") {
        let b = cdw_bytes(args)?;
        return Ok((
            le(&b[0..8]),
            le(&b[8..10]) + 1,
            le(&b[10..12]),
            le(&b[12..16]),
        ));
    }
    let slba = need(args, "slba", "a starting LBA (integer)")?;
    let len = need(
        args,
        "len",
        "a block count, 0's based (integer below 65536)",
    )?;
    if len > 0xffff {
        return Err(bad(
            "len",
            "a block count, 0's based (integer below 65536)",
            field(args, "len").unwrap_or_default(),
        ));
    }
    let ctrl = need(args, "ctrl", "CDW12's upper 16 bits (hex)")?;
    if ctrl > 0xffff {
        return Err(bad(
            "ctrl",
            "CDW12's upper 16 bits (hex below 0x10000)",
            field(args, "ctrl").unwrap_or_default(),
        ));
    }
    let dsmgmt = need(args, "dsmgmt", "CDW13 (integer)")?;
    if dsmgmt > u32::MAX as u64 {
        return Err(bad(
            "dsmgmt",
            "CDW13 (a 32-bit integer)",
            field(args, "dsmgmt").unwrap_or_default(),
        ));
    }
    Ok((slba, len + 1, ctrl, dsmgmt))
}

/// The directive a write carries: DTYPE in `ctrl` bits 7:4 (CDW12 bits 23:20), DSPEC in
/// `dsmgmt` bits 31:16 (CDW13 bits 31:16).
fn directive(ctrl: u64, dsmgmt: u64) -> LineResult<Directive> {
    let dspec = (dsmgmt >> 16) as u16;
    match (ctrl >> 4) & 0xf {
        0 => Ok(Directive::None),
        1 => Ok(Directive::Stream(dspec)),
        2 => Ok(Directive::Placement(dspec)),
        d => Err(LineError::field(
            "ctrl",
            got(
                format!("{ctrl:#x} (DTYPE {d})"),
                "a directive type (DTYPE, bits 7:4) of 0 (none), 1 (streams) or 2 (data placement)",
            ),
        )),
    }
}

/// Bytes of `blocks` logical blocks of `lba` bytes at block `slba`.
fn extent(slba: u64, blocks: u64, lba: u64) -> LineResult<(u64, u64)> {
    let beyond = || {
        LineError::field(
            "slba",
            got(
                slba,
                format!("an LBA whose blocks of {lba} bytes end below 2^64 bytes"),
            ),
        )
    };
    let off = slba.checked_mul(lba).ok_or_else(beyond)?;
    let len = blocks * lba; // below 2^16 × 2^16
    off.checked_add(len).ok_or_else(beyond)?;
    Ok((off, len))
}

/// A zone management send command's action, starting LBA and Select All bit; None for an
/// action on no zone's blocks (set zone descriptor extension). The tracepoint prints the
/// fields by name (from Linux 6.9) or the command dwords whole.
fn zone_send(args: &[u8]) -> LineResult<Option<(TraceOp, u64, bool)>> {
    let (slba, zsa, all) = if args.starts_with(b"cdw10=") {
        let b = cdw_bytes(args)?;
        (le(&b[0..8]), b[12] as u64, (b[13] & 1) as u64)
    } else {
        let slba = need(args, "slba", "a zone's starting LBA (integer)")?;
        // From Linux 6.9: `zsa=4:reset zone`.
        let z = field(args, "zsa")
            .ok_or_else(|| LineError::field("zsa", missing("a zone send action")))?;
        let num = z.split(|&b| b == b':').next().unwrap_or(z);
        let zsa = number(num).ok_or_else(|| bad("zsa", "a zone send action (integer)", z))?;
        (slba, zsa, need(args, "all", "the Select All bit, 0 or 1")?)
    };
    let op = match zsa {
        1 => TraceOp::ZoneClose,
        2 => TraceOp::ZoneFinish,
        3 => TraceOp::ZoneOpen,
        4 => TraceOp::ZoneReset,
        5 => TraceOp::ZoneOffline,
        // Set Zone Descriptor Extension: data for the zone's descriptor, no action on
        // its blocks.
        0x10 => return Ok(None),
        _ => {
            return Err(LineError::field(
                "zsa",
                got(
                    zsa,
                    "a zone send action: 1 close, 2 finish, 3 open, 4 reset, 5 offline or 16 (set zone descriptor extension)",
                ),
            ))
        }
    };
    if all > 1 {
        return Err(LineError::field("all", got(all, "0 or 1")));
    }
    Ok(Some((op, slba, all == 1)))
}

/// The namespace a command went to, as a device number: from the `disk=nvmeXnY` field, or
/// from the controller and `nsid` where the tracepoint has no disk name.
fn namespace(head: &[u8], ctrl_id: u32, nsid: u64) -> LineResult<u32> {
    Ok(match field(head, "disk") {
        Some(d) => {
            let (x, y) = disk_name(d).ok_or_else(|| bad("disk", "a namespace `nvmeXnY`", d))?;
            device_of(x, y)
                .ok_or_else(|| bad("disk", "nvmeXnY with X below 4096 and Y below 2^20", d))?
        }
        None => device_of(ctrl_id as u64, nsid).ok_or_else(|| {
            bad(
                "nsid",
                "a namespace id below 2^20 on a controller below 4096",
                field(head, "nsid").unwrap_or_default(),
            )
        })?,
    })
}

/// Parse one non-blank line of an NVMe ftrace text.
pub(super) fn parse(state: &mut State, line: &[u8]) -> LineResult<Parsed> {
    let t = trim(line);
    let Some((ts, event, text)) = ftrace_event(t) else {
        if trace_cmd_header(t) {
            return Ok(Parsed::Skip);
        }
        return Err(LineError::shape(got(show(t), LAYOUT)));
    };
    match event {
        b"nvme_setup_cmd" => {}
        b"nvme_complete_rq" => {
            let (_, rest) = controller(text)?;
            need(rest, "qid", "a queue id (integer)")?;
            need(rest, "status", "a status (hex)")?;
            return Ok(Parsed::Skip);
        }
        // Other events of the trace (nvme_sq, block layer events, ...): not requests.
        _ => return Ok(Parsed::Skip),
    }
    let time_ps = parse_decimal_ps(ts, 12)
        .ok_or_else(|| bad("timestamp", "seconds (a non-negative decimal)", ts))?;
    let (ctrl_id, rest) = controller(text)?;
    let cmd_at = find(rest, b"cmd=(")
        .ok_or_else(|| LineError::field("cmd", missing("`cmd=(OPCODE ARGS)` at the end")))?;
    let head = &rest[..cmd_at];
    let cmd = &rest[cmd_at + 5..];
    let cmd = cmd
        .strip_suffix(b")")
        .ok_or_else(|| bad("cmd", "`(OPCODE ARGS)` closed by `)`", cmd))?;
    let qid = need(head, "qid", "a queue id (integer)")?;
    let nsid = need(head, "nsid", "a namespace id (integer)")?;
    let (op_name, args) = match cmd.iter().position(|&b| b == b' ') {
        Some(s) => (&cmd[..s], trim(&cmd[s + 1..])),
        None => (cmd, &cmd[cmd.len()..]),
    };
    if qid == 0 {
        // The admin queue: identify, log pages, features, queue creation.
        return Ok(Parsed::Skip);
    }
    let device = namespace(head, ctrl_id, nsid)?;
    let lba = state.nvme_lba_bytes();
    let record = |op, (offset, len): (u64, u64), directive, all_zones| {
        Ok(Parsed::Record(RawRecord {
            time_ps,
            op,
            offset,
            len,
            device,
            directive,
            all_zones,
        }))
    };
    match op_name {
        b"nvme_cmd_read" => {
            let (slba, n, _, _) = rw_fields(args)?;
            record(TraceOp::Read, extent(slba, n, lba)?, Directive::None, false)
        }
        b"nvme_cmd_write" => {
            let (slba, n, ctrl, dsmgmt) = rw_fields(args)?;
            record(
                TraceOp::Write,
                extent(slba, n, lba)?,
                directive(ctrl, dsmgmt)?,
                false,
            )
        }
        b"nvme_cmd_write_zeroes" => {
            let (slba, n, ctrl, _) = rw_fields(args)?;
            // Deallocate (DEAC, CDW12 bit 25 = ctrl bit 9): the drive may deallocate the
            // blocks instead of writing zeros, which is a trim here.
            let op = if ctrl & (1 << 9) != 0 {
                TraceOp::Trim
            } else {
                TraceOp::Write
            };
            record(op, extent(slba, n, lba)?, Directive::None, false)
        }
        b"nvme_cmd_flush" => {
            // No arguments of its own: the command dwords, printed whole.
            cdw_bytes(args)?;
            record(TraceOp::Flush, (0, 0), Directive::None, false)
        }
        b"nvme_cmd_zone_append" => {
            let (slba, n, ctrl, dsmgmt) = rw_fields(args)?;
            record(
                TraceOp::Append,
                extent(slba, n, lba)?,
                directive(ctrl, dsmgmt)?,
                false,
            )
        }
        b"nvme_cmd_zone_mgmt_send" => match zone_send(args)? {
            Some((op, slba, all)) => {
                let offset = if all { 0 } else { extent(slba, 0, lba)?.0 };
                record(op, (offset, 0), Directive::None, all)
            }
            None => Ok(Parsed::Skip),
        },
        b"nvme_cmd_dsm" => {
            // The ranges to deallocate are in the command's data, which the tracepoint does
            // not record: nothing to trim.
            need(args, "nr", "the number of ranges, 0's based (integer)")?;
            need(args, "attributes", "CDW11 (integer)")?;
            state.nvme_dsm += 1;
            Ok(Parsed::Skip)
        }
        other if other.is_empty() => {
            Err(bad("cmd", "an opcode name such as nvme_cmd_write", other))
        }
        // Compare, verify, reservations, zone management receive, vendor opcodes (printed in
        // hex), fabrics commands: not requests of this model.
        _ => Ok(Parsed::Skip),
    }
}

#[cfg(test)]
mod tests;
