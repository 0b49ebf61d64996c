//! Writing records in a trace format (for generated workloads and for tests that read back what
//! they wrote). Each writer keeps what its format can say: a format without trims or flushes
//! leaves them out, and times are rounded down to the format's unit.

use super::{Format, TraceOp, TraceRecord};
use std::io::{self, Write};

/// Writes records of one format, with the header some formats need.
pub struct TraceWriter<W: Write> {
    out: W,
    format: Format,
    started: bool,
    seq: u64,
    written: u64,
    dropped: u64,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(out: W, format: Format) -> TraceWriter<W> {
        TraceWriter {
            out,
            format,
            started: false,
            seq: 0,
            written: 0,
            dropped: 0,
        }
    }

    /// Records written, and records the format cannot express (left out).
    pub fn counts(&self) -> (u64, u64) {
        (self.written, self.dropped)
    }

    pub fn finish(mut self) -> io::Result<W> {
        if !self.started {
            self.header()?;
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn header(&mut self) -> io::Result<()> {
        self.started = true;
        if self.format == Format::Fio {
            writeln!(self.out, "fio version 3 iolog")?;
        }
        Ok(())
    }

    /// Write one record; returns false if the format cannot express it.
    pub fn write(&mut self, r: &TraceRecord) -> io::Result<bool> {
        if !self.started {
            self.header()?;
        }
        let sectors_ok = r.offset.is_multiple_of(512) && r.len.is_multiple_of(512);
        let t = r.time_ps;
        let o = &mut self.out;
        let ok = match (self.format, r.op) {
            (Format::Disksim, TraceOp::Read | TraceOp::Write) if sectors_ok => {
                let op = u8::from(r.op == TraceOp::Read);
                writeln!(
                    o,
                    "{} {} {} {} {op}",
                    t / 1000,
                    r.device,
                    r.offset / 512,
                    r.len / 512
                )?;
                true
            }
            (Format::Msr, TraceOp::Read | TraceOp::Write) => {
                let ty = if r.op == TraceOp::Read {
                    "Read"
                } else {
                    "Write"
                };
                writeln!(
                    o,
                    "{},ssdlab,{},{ty},{},{},0",
                    t / 100_000,
                    r.device,
                    r.offset,
                    r.len
                )?;
                true
            }
            (Format::Spc, TraceOp::Read | TraceOp::Write) if r.offset.is_multiple_of(512) => {
                let ty = if r.op == TraceOp::Read { 'r' } else { 'w' };
                let (s, us) = (t / 1_000_000_000_000, t / 1_000_000 % 1_000_000);
                writeln!(
                    o,
                    "{},{},{},{ty},{s}.{us:06}",
                    r.device,
                    r.offset / 512,
                    r.len
                )?;
                true
            }
            (Format::Tencent, TraceOp::Read | TraceOp::Write) if sectors_ok => {
                let ty = u8::from(r.op == TraceOp::Write);
                let s = t / 1_000_000_000_000;
                writeln!(
                    o,
                    "{s},{},{},{ty},{}",
                    r.offset / 512,
                    r.len / 512,
                    r.device
                )?;
                true
            }
            (Format::Alibaba, TraceOp::Read | TraceOp::Write) => {
                let ty = if r.op == TraceOp::Read { 'R' } else { 'W' };
                writeln!(
                    o,
                    "{},{ty},{},{},{}",
                    r.device,
                    r.offset,
                    r.len,
                    t / 1_000_000
                )?;
                true
            }
            (
                Format::Fio,
                op @ (TraceOp::Read | TraceOp::Write | TraceOp::Trim | TraceOp::Flush),
            ) => {
                let action = match op {
                    TraceOp::Read => "read",
                    TraceOp::Write => "write",
                    TraceOp::Trim => "trim",
                    _ => "sync",
                };
                writeln!(
                    o,
                    "{} dev{} {action} {} {}",
                    t / 1_000_000,
                    r.device,
                    r.offset,
                    r.len
                )?;
                true
            }
            (
                Format::Blkparse,
                op @ (TraceOp::Read | TraceOp::Write | TraceOp::Trim | TraceOp::Flush),
            ) if sectors_ok && r.device < 1 << 20 => {
                self.write_blkparse(r, op)?;
                true
            }
            // The kernel's nvme_setup_cmd text, 512-byte LBAs, times in µs as ftrace prints
            // them; a trim is a Write Zeroes with Deallocate (a DSM's ranges are not printed),
            // a write's directive goes in DTYPE and DSPEC. Commands of at most 65536 blocks.
            (Format::Nvme, op)
                if sectors_ok
                    && r.len / 512 <= 1 << 16
                    && (r.len > 0 || r.op.has_no_extent())
                    && r.device >> 20 < 1 << 12 =>
            {
                self.write_nvme(r, op)?;
                true
            }
            _ => false,
        };
        if ok {
            self.written += 1;
        } else {
            self.dropped += 1;
        }
        Ok(ok)
    }

    /// One blkparse line: a dispatch (`D`) of `op`.
    fn write_blkparse(&mut self, r: &TraceRecord, op: TraceOp) -> io::Result<()> {
        let t = r.time_ps;
        let o = &mut self.out;
        self.seq += 1;
        let (s, ns) = (t / 1_000_000_000_000, t / 1000 % 1_000_000_000);
        let head = format!(
            "  8,{:<4} 0 {:>8} {s:5}.{ns:09}  1000  D",
            r.device, self.seq
        );
        match op {
            TraceOp::Flush => writeln!(o, "{head}  FN [ssdlab]")?,
            _ => {
                let rwbs = match op {
                    TraceOp::Read => "R",
                    TraceOp::Write => "W",
                    _ => "D",
                };
                writeln!(
                    o,
                    "{head} {rwbs:>3} {} + {} [ssdlab]",
                    r.offset / 512,
                    r.len / 512
                )?
            }
        }
        Ok(())
    }

    /// One `nvme_setup_cmd` line of the kernel's trace: `op` as its NVMe command.
    fn write_nvme(&mut self, r: &TraceRecord, op: TraceOp) -> io::Result<()> {
        let t = r.time_ps;
        let o = &mut self.out;
        self.seq += 1;
        let (s, us) = (t / 1_000_000_000_000, t / 1_000_000 % 1_000_000);
        let (x, y) = (r.device >> 20, r.device & ((1 << 20) - 1));
        let slba = r.offset / 512;
        let nlb = (r.len / 512).saturating_sub(1);
        let (dtype, dspec) = match r.directive {
            super::Directive::None => (0u32, 0u32),
            super::Directive::Stream(s) => (1, s as u32),
            super::Directive::Placement(p) => (2, p as u32),
        };
        let rw = |name: &str, ctrl: u32, dsmgmt: u32| {
            format!("({name} slba={slba}, len={nlb}, ctrl={ctrl:#x}, dsmgmt={dsmgmt}, reftag=0)")
        };
        let cmd = match op {
            TraceOp::Read => rw("nvme_cmd_read", 0, 0),
            TraceOp::Write => rw("nvme_cmd_write", dtype << 4, dspec << 16),
            TraceOp::Trim => rw("nvme_cmd_write_zeroes", 1 << 9, 0),
            TraceOp::Append => rw("nvme_cmd_zone_append", dtype << 4, dspec << 16),
            TraceOp::Flush => format!("(nvme_cmd_flush cdw10={})", ["00"; 24].join(" ")),
            zone => {
                let zsa = match zone {
                    TraceOp::ZoneClose => 1,
                    TraceOp::ZoneFinish => 2,
                    TraceOp::ZoneOpen => 3,
                    TraceOp::ZoneReset => 4,
                    _ => 5,
                };
                format!(
                    "(nvme_cmd_zone_mgmt_send slba={slba}, zsa={zsa}, all={})",
                    u8::from(r.all_zones)
                )
            }
        };
        writeln!(
            o,
            "          ssdlab-1     [000] ..... {s:5}.{us:06}: nvme_setup_cmd: nvme{x}: disk=nvme{x}n{y}, qid=1, cmdid={}, nsid={y}, flags=0x0, meta=0x0, cmd={cmd}",
            self.seq % 65536
        )?;
        Ok(())
    }
}

/// Write a workload model's stream (`NAME[,key=value...]`) to `path` in `format`; a path ending
/// in `.gz` is gzip-compressed. Returns the records written and those the format could not hold.
pub fn write_model(
    spec: &str,
    path: &str,
    format: Format,
    seed: u64,
) -> crate::error::Result<(u64, u64)> {
    write_model_with(spec, path, format, seed, &mut || true)
}

/// [`write_model`], asking `keep_going` every [`CHECK_EVERY_RECORDS`] records; false stops the
/// writing with [`crate::error::Error::Interrupted`] (a model can have billions of records).
pub fn write_model_with(
    spec: &str,
    path: &str,
    format: Format,
    seed: u64,
    keep_going: &mut dyn FnMut() -> bool,
) -> crate::error::Result<(u64, u64)> {
    let p = super::model::parse_spec(spec.strip_prefix("model:").unwrap_or(spec))?;
    let mut g = super::model::Generator::new(p, seed);
    write_file_with(
        std::iter::from_fn(|| g.next_record()),
        path,
        format,
        keep_going,
    )
}

/// How often (in records) a long write asks whether to go on: 65,536 records take a few
/// milliseconds, so an interrupt is seen well within a tenth of a second.
pub const CHECK_EVERY_RECORDS: u64 = 1 << 16;

/// Write `records` to `path` in `format`; a path ending in `.gz` is gzip-compressed. Returns
/// the records written and those the format could not hold (e.g. discards in MSR).
pub fn write_file(
    records: impl Iterator<Item = TraceRecord>,
    path: &str,
    format: Format,
) -> crate::error::Result<(u64, u64)> {
    write_file_with(records, path, format, &mut || true)
}

/// [`write_file`], asking `keep_going` every [`CHECK_EVERY_RECORDS`] records.
pub fn write_file_with(
    records: impl Iterator<Item = TraceRecord>,
    path: &str,
    format: Format,
    keep_going: &mut dyn FnMut() -> bool,
) -> crate::error::Result<(u64, u64)> {
    use crate::error::Error;
    let err = |e: io::Error| {
        Error::bad_trace(crate::error::Invalid::unnamed(
            path,
            crate::error::says(format!("cannot write: {e}")),
        ))
    };
    let file = std::fs::File::create(path).map_err(err)?;
    if path.ends_with(".gz") {
        // The buffer sits in front of the compressor: fed line by line (tens of bytes a call),
        // the encoder spent most of its time per call and wrote 20x slower than plain text.
        // Level 1: a generated trace is written more often than it is stored (1 M requests of
        // the radius model: 0.53 s and 11.6 MB, against 1.69 s and 10.6 MB at the default 6;
        // plain text 0.36 s).
        let gz = flate2::write::GzEncoder::new(
            io::BufWriter::with_capacity(1 << 16, file),
            flate2::Compression::fast(),
        );
        let out = io::BufWriter::with_capacity(1 << 20, gz);
        let (counts, out) = write_records(records, out, format, keep_going, &err)?;
        let gz = out.into_inner().map_err(|e| err(e.into_error()))?;
        // Finished here, not on drop, so that a full disk at the trailer is an error.
        gz.finish().map_err(err)?.flush().map_err(err)?;
        Ok(counts)
    } else {
        let out = io::BufWriter::with_capacity(1 << 20, file);
        Ok(write_records(records, out, format, keep_going, &err)?.0)
    }
}

/// Write `records` to `out`, asking `keep_going` every [`CHECK_EVERY_RECORDS`] records; returns
/// the counts and `out`, flushed.
fn write_records<W: Write>(
    records: impl Iterator<Item = TraceRecord>,
    out: W,
    format: Format,
    keep_going: &mut dyn FnMut() -> bool,
    err: &dyn Fn(io::Error) -> crate::error::Error,
) -> crate::error::Result<((u64, u64), W)> {
    let mut w = TraceWriter::new(out, format);
    for (k, r) in records.enumerate() {
        if (k as u64 + 1).is_multiple_of(CHECK_EVERY_RECORDS) && !keep_going() {
            return Err(crate::error::Error::Interrupted);
        }
        w.write(&r).map_err(err)?;
    }
    let counts = w.counts();
    Ok((counts, w.finish().map_err(err)?))
}

#[cfg(test)]
mod interrupt_tests {
    use super::*;

    #[test]
    fn a_long_write_stops_when_asked() {
        let dir = std::env::temp_dir().join(format!("ssdlab-write-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.disksim.gz");
        let path = path.to_str().unwrap();
        let mut asked = 0u32;
        // A model of 10^12 records: only the interrupt can end this write.
        let r = write_model_with(
            "financial1,count=1000000000000",
            path,
            Format::Disksim,
            1,
            &mut || {
                asked += 1;
                asked < 3
            },
        );
        assert!(matches!(r, Err(crate::error::Error::Interrupted)), "{r:?}");
        assert_eq!(asked, 3);
        // Without an interrupt the same call writes what it is given.
        let (n, dropped) = write_model_with(
            "financial1,count=1000",
            path,
            Format::Disksim,
            1,
            &mut || panic!("asked before {CHECK_EVERY_RECORDS} records"),
        )
        .unwrap();
        assert_eq!((n + dropped), 1000);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The gzip path compresses buffered text and finishes the stream: it reads back as the
    /// plain file does. (Its speed, 3x the plain write against 25x before the buffer, is a
    /// measurement, `time ssdlab trace generate` to both, not a timed assertion: a loaded
    /// machine failed one.)
    #[test]
    fn a_gz_trace_reads_back_as_the_plain_one() {
        use crate::workload::trace::{ReadOptions, TraceReader};
        let dir = std::env::temp_dir().join(format!("ssdlab-write-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = "financial1,count=300000";
        let mut read = vec![];
        for name in ["t.disksim", "t.disksim.gz"] {
            let path = dir.join(name);
            let path = path.to_str().unwrap();
            write_model(model, path, Format::Disksim, 1).unwrap();
            let mut r = TraceReader::open(path, &ReadOptions::default()).unwrap();
            let mut recs = vec![];
            while let Some(rec) = r.next_record().unwrap() {
                recs.push((rec.time_ps, rec.offset, rec.len, rec.op as u8));
            }
            read.push(recs);
        }
        assert_eq!(read[0].len(), 300_000);
        assert!(read[0] == read[1], "the .gz trace reads back differently");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
