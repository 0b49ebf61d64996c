//! Running a job or a trace through the register-level controller.
//!
//! Requests come from the job's own generator (one [`Generator`] per instance, instances taken
//! in turn) or from the trace's records, in order. They are issued in batches of `iodepth`
//! commands (capped by the I/O queue), one doorbell per batch; the next batch starts when the
//! whole batch has completed. Trace timestamps are ignored (closed loop). Offsets and lengths
//! are rounded out to whole logical blocks, trace offsets beyond the namespace wrap around,
//! and requests larger than the transfer limit are split. Write data is a fill pattern (every
//! byte of a command's blocks the same value), so long jobs keep little memory; every command
//! of a batch shares one data buffer.
//!
//! On a zoned drive a job that writes needs `zonemode = "zbd"`, as with the job driver: its
//! writes are placed by the same zone logic (`driver::zbd`), at each zone's write pointer or as
//! Zone Appends, and the finishes and resets it asks for go as Zone Management Send commands,
//! each in a doorbell of its own after the batch before it has completed (so a reset never
//! overtakes the writes before it). A trace's writes are sent as they are: the drive refuses
//! those not at a write pointer, and the run counts them in `errors`.

use super::host_driver::{HostDriver, IoCmd, DATA_ADDR};
use crate::device::ZoneAction;
use crate::driver::zbd::Zbd;
use crate::error::{got, says, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::workload::job::Generator;
use crate::workload::trace::{Directive, ReadOptions, TraceOp, TraceReader};
use crate::workload::JobSpec;

/// What a workload run did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub requests: u64,
    pub commands: u64,
    pub reads: u64,
    pub writes: u64,
    pub deallocates: u64,
    pub flushes: u64,
    /// Zone Management Send commands a `zonemode = "zbd"` job sent (finishes and resets).
    pub zone_commands: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub errors: u64,
    pub start: SimTime,
    pub end: SimTime,
}

struct Runner<'a> {
    drv: &'a mut HostDriver,
    batch: Vec<IoCmd>,
    depth: usize,
    sum: Summary,
    /// Asked after each batch once [`ASK_EVERY`] of wall time has passed; false stops the run.
    keep_going: &'a mut dyn FnMut() -> bool,
    last_asked: std::time::Instant,
}

/// How often a run asks whether to go on: an interrupt is seen within a tenth of a second.
const ASK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

impl Runner<'_> {
    fn push(&mut self, op: Op, offset: u64, len: u64) -> Result<()> {
        self.sum.requests += 1;
        let lba = self.drv.lba_size();
        let nsze = self.drv.nsze();
        let max_blocks = (self.drv.max_transfer().min(2 << 20) / lba).max(1);
        let mut slba = offset / lba;
        let end = offset.saturating_add(len.max(1)).div_ceil(lba).min(nsze);
        if matches!(op, Op::Flush) {
            return self.add(IoCmd::Flush);
        }
        if slba >= end {
            return Ok(());
        }
        if matches!(op, Op::Trim) {
            return self.add(IoCmd::Deallocate {
                slba,
                nlb: (end - slba).min(u32::MAX as u64) as u32,
            });
        }
        while slba < end {
            let n = (end - slba).min(max_blocks) as u32;
            self.add(if matches!(op, Op::Read) {
                IoCmd::Read { slba, nlb: n }
            } else {
                IoCmd::Write { slba, nlb: n }
            })?;
            slba += n as u64;
        }
        Ok(())
    }

    /// A `zonemode = "zbd"` job's write, placed by `zbd`: the zone commands it needs first,
    /// each alone in its doorbell after what came before, then the write or append.
    fn push_zoned(&mut self, zbd: &mut Zbd, inst: u32, offset: u64, len: u64) -> Result<()> {
        self.sum.requests += 1;
        let lba = self.drv.lba_size();
        let placed = zbd.place(inst, offset, len);
        for (op, at) in placed.before.into_iter().flatten() {
            let action = ZoneAction::of_op(op).expect("zbd asks for zone commands only");
            self.flush_batch()?;
            self.add(IoCmd::ZoneSend {
                slba: at / lba,
                action: action.code(),
            })?;
            self.flush_batch()?;
        }
        let nlb = (len.div_ceil(lba)).min(u32::MAX as u64) as u32;
        self.add(if placed.op == Op::Append {
            IoCmd::Append {
                zslba: placed.offset / lba,
                nlb,
            }
        } else {
            IoCmd::Write {
                slba: placed.offset / lba,
                nlb,
            }
        })
    }

    fn add(&mut self, c: IoCmd) -> Result<()> {
        self.batch.push(c);
        if self.batch.len() >= self.depth {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let cmds = std::mem::take(&mut self.batch);
        // Fill pattern: the buffer holds one value for the whole batch.
        let fill = (self.sum.commands % 251) as u8 + 1;
        let max = self.drv.max_transfer().min(2 << 20) as usize;
        if cmds
            .iter()
            .any(|c| matches!(c, IoCmd::Write { .. } | IoCmd::Append { .. }))
        {
            self.drv.ctrl.mem.write(DATA_ADDR, &vec![fill; max]);
        }
        let done = self.drv.submit_batch(&cmds, Some(DATA_ADDR))?;
        let lba = self.drv.lba_size();
        for c in &cmds {
            self.sum.commands += 1;
            match *c {
                IoCmd::Read { nlb, .. } => {
                    self.sum.reads += 1;
                    self.sum.bytes_read += nlb as u64 * lba;
                }
                IoCmd::Write { nlb, .. } => {
                    self.sum.writes += 1;
                    self.sum.bytes_written += nlb as u64 * lba;
                }
                IoCmd::Append { nlb, .. } => {
                    self.sum.writes += 1;
                    self.sum.bytes_written += nlb as u64 * lba;
                }
                IoCmd::Flush => self.sum.flushes += 1,
                IoCmd::Deallocate { .. } => self.sum.deallocates += 1,
                IoCmd::ZoneSend { .. } => self.sum.zone_commands += 1,
            }
        }
        self.sum.errors += done
            .iter()
            .filter(|(d, _)| !d.cqe.status.is_success())
            .count() as u64;
        if self.last_asked.elapsed() >= ASK_EVERY {
            self.last_asked = std::time::Instant::now();
            if !(self.keep_going)() {
                return Err(Error::Interrupted);
            }
        }
        Ok(())
    }
}

fn runner<'a>(
    drv: &'a mut HostDriver,
    iodepth: u32,
    keep_going: &'a mut dyn FnMut() -> bool,
) -> Runner<'a> {
    let depth = (iodepth.max(1)).min(drv.queue_size() - 1).max(1) as usize;
    let start = drv.ctrl.clock();
    Runner {
        drv,
        batch: Vec::new(),
        depth,
        sum: Summary {
            start,
            ..Summary::default()
        },
        keep_going,
        last_asked: std::time::Instant::now(),
    }
}

/// Run `spec` through the driver (see the module docs for how).
pub fn run_job(drv: &mut HostDriver, spec: &JobSpec, seed: u64) -> Result<Summary> {
    run_job_with(drv, spec, seed, &mut || true)
}

/// [`run_job`], asking `keep_going` between batches every 50 ms of wall time; false stops the
/// run with [`Error::Interrupted`].
pub fn run_job_with(
    drv: &mut HostDriver,
    spec: &JobSpec,
    seed: u64,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Summary> {
    spec.refuse_startdelay("the register-level NVMe driver")?;
    let cap = drv.nsze() * drv.lba_size();
    let job = spec.fit(cap)?;
    // On an FDP drive the job's stream is its writes' placement identifier, sent in the data
    // placement directive; one naming no handle is the job's error (the drive would place the
    // writes with handle 0 and log an event).
    let placement = if drv.fdp_supported() {
        let ids = spec.streams_used();
        if ids.len() > 1 {
            return Err(Error::bad_job(Invalid::got(
                "",
                "placement_ids",
                format!("{} identifiers", ids.len()),
                "one: the register-level driver sends one placement identifier per job",
            )));
        }
        if let Err(p) = drv.ctrl.check_placement(ids[0]) {
            let field = if spec.placement_ids.is_empty() {
                "stream"
            } else {
                "placement_ids"
            };
            return Err(Error::bad_job(Invalid::new("", field, p)));
        }
        Some(ids[0] as u16)
    } else {
        None
    };
    drv.set_placement(placement);
    let n = job.spec.numjobs.max(1);
    let mut gens: Vec<Generator> = (0..n).map(|k| Generator::new(&job, k, seed)).collect();
    let total = job.total_ios;
    let deadline = job.runtime.map(|r| drv.ctrl.clock() + r);
    let mut zbd = Zbd::for_job(&job, drv.ctrl.device())?;
    let mut r = runner(drv, spec.iodepth.saturating_mul(n), keep_going);
    let mut k = 0usize;
    loop {
        if total.is_some_and(|t| r.sum.requests >= t) {
            break;
        }
        if deadline.is_some_and(|d| r.drv.ctrl.clock() >= d) {
            break;
        }
        if total.is_none() && deadline.is_none() {
            break;
        }
        let (op, off, len) = gens[k].next(&job);
        match zbd.as_mut() {
            Some(z) if op == Op::Write => r.push_zoned(z, k as u32, off, len)?,
            _ => r.push(op, off, len)?,
        }
        k = (k + 1) % gens.len();
    }
    r.flush_batch()?;
    r.sum.end = r.drv.ctrl.clock();
    Ok(r.sum)
}

/// Replay the trace at `path` through the driver, `iodepth` commands per batch (at least 1; more
/// than the I/O queue holds, its size less one, are issued as that many), at most `limit`
/// records when given.
pub fn run_trace(
    drv: &mut HostDriver,
    path: &str,
    opts: &ReadOptions,
    iodepth: u32,
    limit: Option<u64>,
) -> Result<Summary> {
    // The replay sends no directive: a trace write that carries one is refused below.
    drv.set_placement(None);
    run_trace_with(drv, path, opts, iodepth, limit, &mut || true)
}

/// [`run_trace`], asking `keep_going` between batches every 50 ms of wall time; false stops the
/// replay with [`Error::Interrupted`].
pub fn run_trace_with(
    drv: &mut HostDriver,
    path: &str,
    opts: &ReadOptions,
    iodepth: u32,
    limit: Option<u64>,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Summary> {
    if iodepth == 0 {
        return Err(Error::bad_job(Invalid::unnamed(
            "run_trace, argument `iodepth`",
            got("0", "at least 1 (commands per doorbell)"),
        )));
    }
    let mut reader = TraceReader::open(path, opts)?;
    let cap = drv.nsze() * drv.lba_size();
    if cap == 0 {
        return Err(Error::bad_job(Invalid::unnamed(
            "namespace size",
            got("0 blocks", "at least 1 block"),
        )));
    }
    let mut r = runner(drv, iodepth, keep_going);
    while let Some(rec) = reader.next_record()? {
        if limit.is_some_and(|l| r.sum.requests >= l) {
            break;
        }
        let op = match rec.op {
            TraceOp::Read => Op::Read,
            TraceOp::Write => Op::Write,
            TraceOp::Trim => Op::Trim,
            TraceOp::Flush => Op::Flush,
            other => {
                return Err(Error::bad_trace(Invalid::unnamed(
                    format!("{path}, line {}", reader.lines()),
                    says(format!(
                        "a {} (zone command); the register-level trace replay sends reads, writes, trims and flushes: replay zone commands with `ssdlab run --trace`",
                        other.name()
                    )),
                )))
            }
        };
        let directive = match rec.directive {
            Directive::None => None,
            Directive::Stream(s) => Some(format!("stream {s} (Streams directive)")),
            Directive::Placement(p) => Some(format!(
                "placement identifier {p} (data placement directive)"
            )),
        };
        if let Some(d) = directive {
            return Err(Error::bad_trace(Invalid::unnamed(
                format!("{path}, line {}", reader.lines()),
                says(format!(
                    "a write with {d}; the register-level trace replay sends writes without a directive: replay it with `ssdlab run --trace`"
                )),
            )));
        }
        let len = rec.len.min(cap);
        let off = rec.offset % cap;
        let off = if off + len > cap { cap - len } else { off };
        r.push(op, off, len)?;
    }
    r.flush_batch()?;
    r.sum.end = r.drv.ctrl.clock();
    Ok(r.sum)
}
