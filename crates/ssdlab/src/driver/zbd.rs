//! fio's `zonemode=zbd` for the job driver: writes to a zoned drive go at each zone's write
//! pointer, as fio's zoned block device support places them (fio's `zbd.c`): the host keeps
//! every zone's write pointer as it submits, so it needs no report between writes.
//!
//! - The job's region is cut into whole zones; each instance writes its own share of them
//!   (fio shares zones between jobs under a lock; here no two instances write one zone, so no
//!   write of one waits on another's).
//! - Sequential writes fill one zone after the other up to its capacity (the gap up to the zone
//!   size is skipped, as fio skips it). A zone whose room is less than the next block is
//!   finished (fio's `zbd_finish_zone`), and when the job wraps onto a zone that holds data, the
//!   zone is reset first.
//! - Random writes go at the write pointer of the zone the drawn offset falls in; with
//!   `max_open_zones`, of one of the instance's open zones once it has that many. A zone with
//!   no room for the block is reset first (fio resets a full zone it picked).
//! - `zone_append = true` sends each write as a Zone Append to its zone's start: the drive
//!   places it at the write pointer.
//!
//! Reads are as drawn: a read of a zone's unwritten part returns zeros from the drive (fio
//! moves such reads onto written data; see docs/zns.md).

use crate::device::Device;
use crate::error::{got, says, Invalid, JOB};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::workload::job::{Job, Rw, ZoneMode};

/// One instance's zones.
struct Share {
    first: u32,
    count: u32,
    /// Sequential writes: the zone being written.
    cur: u32,
    /// Random writes with `max_open_zones`: the zones it writes, at most that many.
    open: Vec<u32>,
}

pub(super) struct Zbd {
    zone_bytes: u64,
    cap_bytes: u64,
    /// Per zone, the bytes written from its start, as the host has submitted them.
    wp: Vec<u64>,
    shares: Vec<Share>,
    sequential: bool,
    append: bool,
    max_open: usize,
}

/// Where a write goes, and the zone commands to send before it (finish the zone left, reset
/// the one taken).
pub(super) struct Placed {
    pub before: [Option<(Op, u64)>; 2],
    pub op: Op,
    pub offset: u64,
}

impl Zbd {
    /// The zoned writing of `job` on `dev` (fio's `zonemode`), for any driver that runs jobs:
    /// on a zoned drive a job that writes needs `zonemode = "zbd"`, which needs a zoned drive.
    pub fn for_job(job: &Job, dev: &Device) -> Result<Option<Zbd>> {
        let s = &job.spec;
        let writes = match s.rw {
            Rw::Read | Rw::Randread | Rw::Trim | Rw::Randtrim => false,
            Rw::Rw | Rw::Randrw => s.rwmixread < 100,
            Rw::Write | Rw::Randwrite => true,
        };
        let zbd = s.zonemode == Some(ZoneMode::Zbd);
        let err = |field: &str, p| Err(Error::bad_job(Invalid::new(JOB, field, p)));
        match (&dev.config().zns, zbd) {
            (None, true) => err(
                "zonemode",
                got("\"zbd\"", "a zoned drive (a config with a [zns] section)"),
            ),
            (None, false) if s.max_open_zones.is_some() || s.zone_append => err(
                "max_open_zones` or `zone_append",
                says("given without zonemode = \"zbd\", expected them only for a zoned drive"),
            ),
            (None, false) => Ok(None),
            (Some(_), false) if writes => err(
                "zonemode",
                says(format!(
                    "absent, expected \"zbd\" for a job that writes ({}) on a zoned drive: its writes go at each zone's write pointer",
                    rw_name(s.rw)
                )),
            ),
            (Some(_), false) => Ok(None),
            (Some(z), true) => Zbd::new(
                job,
                z.zone_size.0,
                z.capacity_bytes(),
                dev.capacity_bytes(),
            )
            .map(Some),
        }
    }

    /// The zoned writing of `job` over zones of `zone_bytes` (`cap_bytes` writable) of a drive
    /// of `capacity` bytes; an error names the job field that does not fit the zones.
    pub fn new(job: &Job, zone_bytes: u64, cap_bytes: u64, capacity: u64) -> Result<Zbd> {
        let err = |field: &str, msg: String| Error::bad_job(Invalid::says(JOB, field, msg));
        let s = &job.spec;
        let max_bs = job.sizes.iter().filter(|s| s.1 > 0).map(|s| s.0).max();
        let max_bs = max_bs.unwrap_or(job.min_bs);
        if max_bs > cap_bytes {
            return Err(err(
                "bs",
                format!("got {max_bs} bytes, larger than the zone capacity ({cap_bytes} bytes)"),
            ));
        }
        let first = job.region_start.div_ceil(zone_bytes);
        let end = (job.region_start + job.region_len) / zone_bytes;
        let zones = end.saturating_sub(first);
        if zones < s.numjobs as u64 {
            return Err(err(
                "size",
                format!(
                    "the region from byte {} holds {zones} whole zone(s) of {zone_bytes} bytes, \
                     expected at least one per job instance ({}) with zonemode = \"zbd\"",
                    job.region_start, s.numjobs
                ),
            ));
        }
        let n = s.numjobs as u64;
        let shares = (0..n)
            .map(|k| {
                let (a, b) = (first + zones * k / n, first + zones * (k + 1) / n);
                Share {
                    first: a as u32,
                    count: (b - a) as u32,
                    cur: a as u32,
                    open: Vec::new(),
                }
            })
            .collect();
        Ok(Zbd {
            zone_bytes,
            cap_bytes,
            wp: vec![0; (capacity / zone_bytes) as usize],
            shares,
            sequential: matches!(s.rw, Rw::Write | Rw::Rw),
            append: s.zone_append,
            max_open: s.max_open_zones.unwrap_or(0) as usize,
        })
    }

    /// Place a write of `len` bytes instance `inst` drew at `offset`.
    pub fn place(&mut self, inst: u32, offset: u64, len: u64) -> Placed {
        let mut before = [None, None];
        let sh = &mut self.shares[inst as usize];
        let zone = if self.sequential {
            let z = sh.cur;
            if self.wp[z as usize] + len > self.cap_bytes {
                if self.wp[z as usize] < self.cap_bytes {
                    // Room for less than this block: finish it (it would stay open else).
                    before[0] = Some((Op::ZoneFinish, z as u64 * self.zone_bytes));
                    self.wp[z as usize] = self.cap_bytes;
                }
                sh.cur = sh.first + (z - sh.first + 1) % sh.count;
            }
            sh.cur
        } else {
            let drawn = sh.first + ((offset / self.zone_bytes) % sh.count as u64) as u32;
            let mut z = drawn;
            if self.max_open > 0 && !sh.open.contains(&z) && sh.open.len() >= self.max_open {
                // Among the open ones, by the drawn offset (random).
                z = sh.open[((offset / len) % sh.open.len() as u64) as usize];
            }
            if z != drawn && self.wp[z as usize] + len > self.cap_bytes {
                // The open zone has no room for the block: it leaves the open set (finished,
                // so that the drive closes it too) and the drawn zone takes its place.
                if self.wp[z as usize] < self.cap_bytes {
                    before[0] = Some((Op::ZoneFinish, z as u64 * self.zone_bytes));
                    self.wp[z as usize] = self.cap_bytes;
                }
                sh.open.retain(|&o| o != z);
                z = drawn;
            }
            if self.max_open > 0 && !sh.open.contains(&z) {
                sh.open.push(z);
            }
            z
        };
        let wp = &mut self.wp[zone as usize];
        if *wp + len > self.cap_bytes {
            // No room: the zone is reset first (fio resets a full zone it writes to).
            before[1] = Some((Op::ZoneReset, zone as u64 * self.zone_bytes));
            *wp = 0;
        }
        let start = zone as u64 * self.zone_bytes;
        let at = start + *wp;
        *wp += len;
        let (op, offset) = if self.append {
            (Op::Append, start)
        } else {
            (Op::Write, at)
        };
        Placed { before, op, offset }
    }
}

/// The job's `rw` as written.
fn rw_name(rw: Rw) -> String {
    serde_json::to_value(rw)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
