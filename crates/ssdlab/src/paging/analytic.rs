//! Seed 003's analytic NAND cost model ("Performance Simulation Method"), as a swap device:
//! each request costs its page reads or programs and transfers, and writes are charged block
//! merges by their inter-request distance (IRD), as a log-block FTL would incur them:
//!
//! - sequential (IRD = 0): no merge;
//! - fully random (IRD at least one block): one merge per request;
//! - partly random (0 < IRD < a block): one merge every N requests.
//!
//! The seed does not give N; here N = block bytes / IRD (a hop of a tenth of a block merges
//! every tenth request), charged with an accumulator so it is exact over a run: each such
//! write adds IRD / block bytes of a merge, and a merge is paid when a whole one is due. That
//! rule, one chip, the per-request formulas below and free discards are this model's
//! assumptions; the parts' figures are the seed's table.
//!
//! The merge time is not a free figure: pages per block x (tR + tPROG + 2 tTrans) plus
//! 5.24 ms gives both of the seed's merge times (SLC: 64 x 590 us plus 5.24 ms is 43 ms; MLC:
//! 128 x 1,420 us plus 5.24 ms is 187 ms), so the model computes it from the part: a block's
//! valid pages read, transferred out and in and programmed, and 5.24 ms, the fit's constant for
//! the rest (erases, map updates).

use super::backend::{Serial, SwapBackend};
use crate::error::{says, Error, Invalid, Result};
use crate::request::Op;
use crate::sim::SimTime;

/// The constant of the merge-time fit that reproduces the seed's SLC and MLC merge times.
pub const MERGE_FIXED_US: u64 = 5_240;

/// A NAND part of seed 003's table ("NAND parameters").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NandPart {
    pub name: &'static str,
    pub t_r_us: u64,
    pub t_prog_us: u64,
    pub pages_per_block: u64,
    /// Page size (seed: 8 KB, read as 8 KiB).
    pub page_bytes: u64,
    pub planes: u64,
    /// Page transfer time (seed: 20 us at 40 MHz).
    pub t_trans_us: u64,
}

/// Seed 003's SLC part: tR 50 us, tPROG 500 us, 64 pages per block (merge 43 ms).
pub const SLC: NandPart = NandPart {
    name: "seed003-slc-analytic",
    t_r_us: 50,
    t_prog_us: 500,
    pages_per_block: 64,
    page_bytes: 8192,
    planes: 4,
    t_trans_us: 20,
};

/// Seed 003's MLC part: tR 80 us, tPROG 1,300 us, 128 pages per block (merge 187 ms).
pub const MLC: NandPart = NandPart {
    name: "seed003-mlc-analytic",
    t_r_us: 80,
    t_prog_us: 1_300,
    pages_per_block: 128,
    ..SLC
};

/// The analytic devices by name, for `ssdlab swap NAME`.
pub const PARTS: [NandPart; 2] = [SLC, MLC];

pub fn part_named(name: &str) -> Option<NandPart> {
    PARTS.iter().copied().find(|p| p.name == name)
}

impl NandPart {
    pub fn block_bytes(&self) -> u64 {
        self.pages_per_block * self.page_bytes
    }

    /// pages per block x (tR + tPROG + 2 tTrans) + 5.24 ms.
    pub fn merge_us(&self) -> u64 {
        self.pages_per_block * (self.t_r_us + self.t_prog_us + 2 * self.t_trans_us) + MERGE_FIXED_US
    }

    /// A read of `len` bytes: its NAND pages sensed a plane-group at a time (the planes work in
    /// parallel), each page transferred over the one bus.
    pub fn read_us(&self, len: u64) -> u64 {
        let pages = len.div_ceil(self.page_bytes).max(1);
        pages.div_ceil(self.planes) * self.t_r_us + pages * self.t_trans_us
    }

    /// A write of `len` bytes: each NAND page transferred in, programmed a plane-group at a
    /// time; a part page is programmed whole.
    pub fn write_us(&self, len: u64) -> u64 {
        let pages = len.div_ceil(self.page_bytes).max(1);
        pages * self.t_trans_us + pages.div_ceil(self.planes) * self.t_prog_us
    }
}

/// The analytic device: serial (reads and writes share one timeline), in submission order.
pub struct AnalyticNand {
    part: NandPart,
    capacity: u64,
    serial: Serial,
    /// Where the previous write ended (for its IRD).
    last_write_end: Option<u64>,
    /// Merges due, in units of 1 / block bytes.
    merge_credit: u64,
    /// Merges charged.
    pub merges: u64,
}

impl AnalyticNand {
    pub fn new(part: NandPart, capacity: u64) -> AnalyticNand {
        AnalyticNand {
            part,
            capacity,
            serial: Serial::default(),
            last_write_end: None,
            merge_credit: 0,
            merges: 0,
        }
    }

    /// Merges a write at `offset` is charged (and the credit carried).
    fn merges_for_write(&mut self, offset: u64, len: u64) -> u64 {
        let block = self.part.block_bytes();
        let ird = self.last_write_end.map_or(0, |e| offset.abs_diff(e));
        self.last_write_end = Some(offset.saturating_add(len));
        if ird == 0 {
            0
        } else if ird >= block {
            1
        } else {
            self.merge_credit += ird;
            let n = self.merge_credit / block;
            self.merge_credit %= block;
            n
        }
    }
}

impl SwapBackend for AnalyticNand {
    fn submit(&mut self, now: SimTime, op: Op, offset: u64, len: u64) -> Result<u32> {
        let us = match op {
            Op::Read => self.part.read_us(len),
            Op::Write => {
                let m = self.merges_for_write(offset, len);
                self.merges += m;
                self.part.write_us(len) + m * self.part.merge_us()
            }
            // The seed's model has no discard cost.
            Op::Trim => 0,
            other => {
                return Err(Error::bad_device(Invalid::unnamed(
                    "paging",
                    says(format!(
                        "the analytic NAND model got a {} request",
                        other.name()
                    )),
                )))
            }
        };
        Ok(self.serial.submit(now, SimTime::from_us(us)))
    }

    fn next_event(&self) -> Option<SimTime> {
        self.serial.next_event()
    }

    fn advance(&mut self, until: SimTime, done: &mut Vec<(u32, SimTime)>) -> Result<()> {
        self.serial.advance(until, done);
        Ok(())
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    fn describe(&self) -> String {
        self.part.name.to_string()
    }

    fn merges(&self) -> Option<u64> {
        Some(self.merges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_fit_reproduces_both_seed_merge_times() {
        assert_eq!(SLC.merge_us(), 43_000);
        assert_eq!(MLC.merge_us(), 187_000);
        assert_eq!(SLC.block_bytes(), 512 << 10);
        assert_eq!(MLC.block_bytes(), 1 << 20);
    }

    #[test]
    fn request_costs_by_hand() {
        // A 32 KiB read on SLC: 4 NAND pages, one plane-group: 50 + 4 x 20 = 130 us.
        assert_eq!(SLC.read_us(32 << 10), 130);
        // 4 KiB: one page sensed and moved: 70 us.
        assert_eq!(SLC.read_us(4096), 70);
        // A 128 KiB write on MLC: 16 pages in, 4 plane-groups programmed: 320 + 5,200 us.
        assert_eq!(MLC.write_us(128 << 10), 5_520);
        // A 4 KiB write programs a whole page: 20 + 1,300 us.
        assert_eq!(MLC.write_us(4096), 1_320);
    }

    #[test]
    fn merges_by_inter_request_distance() {
        let mut d = AnalyticNand::new(SLC, 1 << 30);
        let block = SLC.block_bytes();
        // Sequential: none.
        assert_eq!(d.merges_for_write(0, 8192), 0);
        assert_eq!(d.merges_for_write(8192, 8192), 0);
        // A block or more away: one each.
        assert_eq!(d.merges_for_write(16384 + block, 4096), 1);
        assert_eq!(d.merges_for_write(0, 4096), 1);
        // A hop of a quarter block: one merge every 4 such requests.
        let mut end = 4096;
        let mut got = Vec::new();
        for _ in 0..8 {
            let off = end + block / 4;
            got.push(d.merges_for_write(off, 4096));
            end = off + 4096;
        }
        assert_eq!(got, vec![0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn requests_are_served_serially_with_merges_in_the_time() {
        let mut d = AnalyticNand::new(MLC, 1 << 30);
        let t0 = SimTime::ZERO;
        let a = d.submit(t0, Op::Write, 0, 4096).unwrap();
        // A block away: a merge of 187 ms on top of 1,320 us.
        let b = d.submit(t0, Op::Write, 2 << 20, 4096).unwrap();
        let c = d.submit(t0, Op::Trim, 0, 1 << 20).unwrap();
        let mut done = Vec::new();
        d.advance(SimTime::MAX, &mut done).unwrap();
        let us = SimTime::from_us;
        assert_eq!(
            done,
            vec![
                (a, us(1_320)),
                (b, us(1_320 + 1_320 + 187_000)),
                (c, us(1_320 + 1_320 + 187_000))
            ]
        );
        assert_eq!(d.merges, 1);
    }
}
