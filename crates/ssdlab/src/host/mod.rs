//! The host: requests in flight and their split into commands, the CPU cores of the I/O stack
//! (`cpu`), and what the host measures — each request's latency from its arrival.
//!
//! Where requests come from is not the host's business: a driver submits them
//! through the device boundary and learns of their completion.

pub mod blk;
pub mod cpu;

use crate::config::PrdBuffer;
use crate::request::Op;
use crate::request::{cmds_of, Cmd, Flags, Request, RequestRecord, Status};
use crate::sim::{SimTime, Slab};
use crate::stats::LatencyStats;

pub use blk::Part;
pub use cpu::HostCpu;

/// A request in flight.
pub(crate) struct HostReq {
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub queue: u32,
    pub arrival: SimTime,
    pub cmds_left: u32,
    /// Ok unless one of its commands failed.
    pub status: Status,
}

pub struct Host {
    reqs: Slab<HostReq>,
    io_queues: u32,
    /// Largest command the driver sends (MDTS, or the DRAM interface's chunk).
    max_cmd_bytes: u64,
    /// Commands in flight per interface queue, and what one queue holds (a queue of N entries
    /// holds N − 1; `u32::MAX` where commands wait in the host instead).
    sq_cmds: Vec<u32>,
    sq_cap: u32,
    /// Requests that arrived before this are left out of the latency figures.
    measure_from: SimTime,
    lat: [LatencyStats; Op::ALL.len()],
    records: Option<Vec<RequestRecord>>,
    completed: u64,
    /// Completed requests that failed (a raw device's refusals), and the first of them.
    failed: u64,
    first_failure: Option<(Op, u64, Status)>,
    /// Failed requests by status (indexed by `Status as usize`).
    failed_by_status: [u64; Status::COUNT],
    last_completion: SimTime,
    /// The submitted requests the block layer merged into request `id`, at index `id` (None:
    /// not merged). A side table rather than a field of `HostReq`, so that the default path
    /// (no merging) keeps its request record narrow; filled only by `set_parts`.
    parts: Vec<Option<Box<[Part]>>>,
    /// Merged requests in flight: while 0, completions skip the side table.
    merged_in_flight: u32,
    /// Bus-master DMA's physical-region entries, when commands are served one entry at a time
    /// (`interface.ata.prd_boundary`).
    prd: Option<PrdSplit>,
}

/// How a request's buffer is cut into physical-region (PRD) entries: at each multiple of
/// `boundary_bytes` of physical memory, the buffer being contiguous from `fixed_offset` past a
/// boundary or, if None, from a 4 KiB page drawn per request from its offset and `seed` (so
/// that the cut is the same wherever it is counted).
#[derive(Clone, Copy, Debug)]
pub struct PrdSplit {
    boundary_bytes: u64,
    fixed_offset: Option<u64>,
    seed: u64,
}

/// The guest's page: where a buffer may start against a PRD boundary.
const PRD_PAGE_BYTES: u64 = 4096;

/// A 4 KiB page within `boundary_bytes`, drawn uniformly from `key` by a 64-bit finaliser
/// (xor-shift, multiply): every bit of the key moves the draw.
fn page_draw(boundary_bytes: u64, key: u64) -> u64 {
    let start_pages = (boundary_bytes / PRD_PAGE_BYTES).max(1);
    let mut x = key;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x % start_pages) * PRD_PAGE_BYTES
}

impl PrdSplit {
    /// Entries that end at each `boundary_bytes` (a power of two, validated by the config),
    /// the buffer starting `fixed_offset` past a boundary (below it), or on a page drawn
    /// with `seed` if None.
    pub fn new(boundary_bytes: u64, fixed_offset: Option<u64>, seed: u64) -> PrdSplit {
        PrdSplit {
            boundary_bytes,
            fixed_offset,
            seed,
        }
    }

    /// The buffer's physical offset within the boundary, for the request at `offset`.
    fn phase(&self, offset: u64) -> u64 {
        if let Some(o) = self.fixed_offset {
            return o;
        }
        page_draw(self.boundary_bytes, offset ^ self.seed)
    }

    /// The split for `buffer` (`interface.ata.prd_buffer`): a fixed offset as the config gives
    /// it, one page drawn from `seed` for the run (`run-page`), or a page per request.
    pub fn for_buffer(boundary_bytes: u64, buffer: PrdBuffer, seed: u64) -> PrdSplit {
        let fixed_offset = match buffer {
            PrdBuffer::RunPage => Some(PrdSplit::run_page(boundary_bytes, seed)),
            other => other.fixed_offset(),
        };
        PrdSplit::new(boundary_bytes, fixed_offset, seed)
    }

    /// The one page a run's buffers start at within `boundary_bytes` (`prd_buffer =
    /// "run-page"`), drawn from the run's `seed` alone.
    pub fn run_page(boundary_bytes: u64, seed: u64) -> u64 {
        // A constant apart from any request offset's key, so that the run's page is not the
        // draw of the request at offset 0.
        page_draw(boundary_bytes, seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// Bytes of the piece from `pos` (bytes into the request) on: up to the command's end
    /// (commands are `max` bytes from the request's start), the next boundary, or `end`.
    #[inline]
    fn piece(&self, phase: u64, max: u64, pos: u64, end: u64) -> u64 {
        let to_cmd_end = max - pos % max;
        let to_boundary = self.boundary_bytes - (phase + pos) % self.boundary_bytes;
        to_cmd_end.min(to_boundary).min(end - pos)
    }

    /// Pieces of a request of `len` bytes at `offset`.
    fn count(&self, offset: u64, len: u64, max: u64) -> u32 {
        let phase = self.phase(offset);
        let (mut pos, mut n) = (0u64, 0u32);
        while pos < len {
            pos += self.piece(phase, max, pos, len);
            n = n.saturating_add(1);
        }
        n.max(1)
    }
}

impl Host {
    pub fn new(io_queues: u32, sq_cap: u32, max_cmd_bytes: u64) -> Host {
        Host {
            reqs: Slab::default(),
            io_queues,
            max_cmd_bytes,
            sq_cmds: vec![0; io_queues as usize],
            sq_cap,
            measure_from: SimTime::ZERO,
            lat: Default::default(),
            records: None,
            completed: 0,
            failed: 0,
            first_failure: None,
            failed_by_status: [0; Status::COUNT],
            last_completion: SimTime::ZERO,
            parts: Vec::new(),
            merged_in_flight: 0,
            prd: None,
        }
    }

    /// Serve each command as its PRD entries (`interface.ata.prd_boundary`).
    pub fn set_prd(&mut self, prd: PrdSplit) {
        self.prd = Some(prd);
    }

    /// Commands (PRD pieces, where the host cuts them) a request of `op` and `len` bytes at
    /// `offset` makes.
    fn commands_of(&self, op: Op, offset: u64, len: u64) -> u32 {
        match &self.prd {
            Some(p) if !op.moves_no_data() && len > 0 => p.count(offset, len, self.max_cmd_bytes),
            _ => cmds_of(op, len, self.max_cmd_bytes),
        }
    }

    pub fn max_cmd_bytes(&self) -> u64 {
        self.max_cmd_bytes
    }

    pub(crate) fn set_measure_from(&mut self, t: SimTime) {
        self.measure_from = t;
    }

    pub(crate) fn measure_from(&self) -> SimTime {
        self.measure_from
    }

    /// Measure afresh from `t`: the latencies and records kept so far are dropped.
    pub(crate) fn restart_measuring(&mut self, t: SimTime) {
        self.measure_from = t;
        self.lat = Default::default();
        if let Some(records) = self.records.as_mut() {
            records.clear();
        }
    }

    pub(crate) fn record_requests(&mut self) {
        self.records = Some(Vec::new());
    }

    pub(crate) fn take_records(&mut self) -> Option<Vec<RequestRecord>> {
        self.records.take()
    }

    /// Whether a request of `op` and `len` bytes from `queue` fits in its interface queue now
    /// (one larger than the whole queue goes when the queue is empty).
    pub fn queue_has_room(&self, queue: u32, op: Op, offset: u64, len: u64) -> bool {
        let sq = (queue % self.io_queues) as usize;
        let n = self.commands_of(op, offset, len);
        self.sq_cmds[sq] == 0 || self.sq_cmds[sq].saturating_add(n) <= self.sq_cap
    }

    /// Record request `r` and cut it into commands, each passed to `cmd` in order; the host
    /// has `cores` cores. Returns the request's id. (Always inlined: `Device::submit_batch`
    /// is a second caller, which would otherwise move it out of the default path.)
    #[inline(always)]
    pub(crate) fn split(&mut self, r: &Request, cores: u32, mut cmd: impl FnMut(Cmd)) -> u32 {
        let Request {
            op,
            offset,
            len,
            queue,
            arrival,
            flags,
        } = *r;
        let space = crate::request::Space::of(flags);
        let sq = queue % self.io_queues;
        let core = queue % cores;
        // Trims travel as one Dataset Management command whatever their length; a flush is one
        // command without data.
        // (`cmds_of` written out, so that the op is classified once.)
        // `prd`: the PRD cut and this request's buffer offset, where the host cuts commands
        // into PRD entries (a branch per command on the default path rather than a second
        // call of `cmd`, which would move the caller's closure out of line).
        let (max, n_cmds, prd) = if op.moves_no_data() {
            (len.max(1), 1, None)
        } else {
            let max = self.max_cmd_bytes;
            match &self.prd {
                None => (max, len.div_ceil(max).max(1) as u32, None),
                Some(p) => (max, p.count(offset, len, max), Some((*p, p.phase(offset)))),
            }
        };
        self.sq_cmds[sq as usize] += n_cmds;
        let req = self.reqs.insert(HostReq {
            op,
            offset,
            len,
            queue,
            arrival,
            cmds_left: n_cmds,
            status: Status::Ok,
        });
        let end = offset + len;
        let mut off = offset;
        // At least one command (a flush has no bytes).
        loop {
            let clen = match prd {
                None => max.min(end - off),
                Some((p, phase)) => p.piece(phase, max, off - offset, len),
            };
            let mut c = Cmd::new(req, op, off, clen, sq, core);
            c.stream = r.flags.stream();
            c.fua = r.flags.contains(Flags::FUA);
            c.space = space;
            cmd(c);
            off += clen;
            if off >= end {
                break;
            }
        }
        req
    }

    /// The host finished the completion work of a command of request `req` at `now`. On the
    /// request's last command, return it; the caller counts it with `count`, once per
    /// submitted request it was made of (`take_parts`).
    #[inline]
    pub(crate) fn command_finished(
        &mut self,
        now: SimTime,
        req: u32,
        sq: u32,
        status: Status,
    ) -> Option<(u32, HostReq)> {
        self.sq_cmds[sq as usize] -= 1;
        let r = self.reqs.get_mut(req);
        r.cmds_left -= 1;
        r.status = r.status.and(status);
        if r.cmds_left > 0 {
            return None;
        }
        let r = self.reqs.remove(req);
        self.last_completion = now;
        Some((req, r))
    }

    /// Count and measure one finished submitted request. (The device calls it from a single
    /// place for plain and merged requests alike: a second copy would keep the compiler from
    /// inlining the histogram's record on the default path; always inlined, as the flow look-up
    /// in the job driver's completion otherwise moved it out of line.)
    #[inline(always)]
    pub(crate) fn count(&mut self, now: SimTime, op: Op, part: &Part, status: Status, queue: u32) {
        let Part {
            offset,
            len,
            arrival,
        } = *part;
        self.completed += 1;
        if status != Status::Ok {
            self.failed += 1;
            self.failed_by_status[status as usize] += 1;
            self.first_failure.get_or_insert((op, offset, status));
        }
        if arrival >= self.measure_from {
            let latency = now - arrival;
            self.lat[op.index()].record(latency.ps(), len);
            if let Some(rec) = self.records.as_mut() {
                rec.push(RequestRecord {
                    op: op.index() as u8,
                    queue,
                    offset,
                    issue_ps: arrival.ps(),
                    latency_ps: latency.ps(),
                    len,
                });
            }
        }
    }

    /// `command_finished` and `count` together, as the device does them (tests).
    #[cfg(test)]
    pub(crate) fn command_done(
        &mut self,
        now: SimTime,
        req: u32,
        sq: u32,
        status: Status,
    ) -> Option<(u32, HostReq)> {
        let (id, r) = self.command_finished(now, req, sq, status)?;
        let one = [Part {
            offset: r.offset,
            len: r.len,
            arrival: r.arrival,
        }];
        let merged = self.take_parts(id);
        for p in merged.as_deref().unwrap_or(&one) {
            self.count(now, r.op, p, r.status, r.queue);
        }
        Some((id, r))
    }

    /// Note that request `id`, in flight, is the block layer's merge of `parts`: its
    /// completion counts, measures and reports each of them (`take_parts`).
    #[cold]
    pub(crate) fn set_parts(&mut self, id: u32, parts: Box<[Part]>) {
        let i = id as usize;
        if self.parts.len() <= i {
            self.parts.resize_with(i + 1, || None);
        }
        debug_assert!(self.parts[i].is_none(), "request {id} merged twice");
        self.parts[i] = Some(parts);
        self.merged_in_flight += 1;
    }

    /// The parts of finished request `id` if the block layer merged it (then forgotten); None
    /// otherwise. Cheap while no merged request is in flight.
    #[inline]
    pub(crate) fn take_parts(&mut self, id: u32) -> Option<Box<[Part]>> {
        if self.merged_in_flight == 0 {
            return None;
        }
        self.take_parts_cold(id)
    }

    #[cold]
    fn take_parts_cold(&mut self, id: u32) -> Option<Box<[Part]>> {
        let p = self.parts.get_mut(id as usize)?.take()?;
        self.merged_in_flight -= 1;
        Some(p)
    }

    /// Requests completed so far.
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Completed requests that failed, and the first of them (op, offset, status).
    pub fn failed(&self) -> (u64, Option<(Op, u64, Status)>) {
        (self.failed, self.first_failure)
    }

    /// Failed requests that ended with `status`.
    pub fn failed_with(&self, status: Status) -> u64 {
        self.failed_by_status[status as usize]
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.reqs.len()
    }

    pub fn last_completion(&self) -> SimTime {
        self.last_completion
    }

    /// Latencies of `op`'s requests that arrived from `measure_from` on.
    pub fn latency(&self, op: Op) -> &LatencyStats {
        &self.lat[op.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(op: Op, offset: u64, len: u64, arrival: SimTime) -> Request {
        Request {
            op,
            offset,
            len,
            queue: 0,
            flags: crate::request::Flags::NONE,
            arrival,
        }
    }

    fn split_all(h: &mut Host, op: Op, offset: u64, len: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        h.split(&req(op, offset, len, SimTime::ZERO), 2, |c| {
            out.push((c.offset, c.len))
        });
        out
    }

    #[test]
    fn requests_split_at_the_transfer_limit_trims_do_not() {
        let mut h = Host::new(2, 1023, 128 * 1024);
        let cmds = split_all(&mut h, Op::Read, 4096, 300 * 1024);
        assert_eq!(
            cmds,
            vec![
                (4096, 131072),
                (4096 + 131072, 131072),
                (4096 + 262144, 45056)
            ]
        );
        assert_eq!(split_all(&mut h, Op::Trim, 0, 1 << 30), vec![(0, 1 << 30)]);
        assert_eq!(split_all(&mut h, Op::Flush, 0, 0), vec![(0, 0)]);
    }

    /// max_sectors 1024 of 512 bytes is 512 KiB: a 1 MiB request is two commands.
    #[test]
    fn a_1mib_request_is_two_512kib_commands_at_max_sectors_1024() {
        let mut h = Host::new(1, 1023, 1024 * 512);
        assert_eq!(
            split_all(&mut h, Op::Read, 0, 1 << 20),
            vec![(0, 512 * 1024), (512 * 1024, 512 * 1024)]
        );
    }

    /// PRD entries on a buffer that starts on the 64 KiB boundary: a 1 MiB request at 128 KiB
    /// commands is sixteen 64 KiB entries, none across a boundary.
    #[test]
    fn an_aligned_buffer_cuts_128kib_commands_into_two_64kib_entries() {
        let mut h = Host::new(1, 1023, 128 * 1024);
        h.set_prd(PrdSplit::new(64 * 1024, Some(0), 7));
        let cmds = split_all(&mut h, Op::Write, 1 << 30, 1 << 20);
        assert_eq!(cmds.len(), 16);
        assert!(cmds.iter().all(|&(_, len)| len == 64 * 1024));
        assert_eq!(h.commands_of(Op::Write, 1 << 30, 1 << 20), 16);
        // Flushes and trims are not cut.
        assert_eq!(split_all(&mut h, Op::Trim, 0, 1 << 20), vec![(0, 1 << 20)]);
    }

    /// A buffer from page k of a 64 KiB frame (k > 0): each 128 KiB command is three entries,
    /// 64 KiB − 4k KiB, 64 KiB and 4k KiB (Linux's `ata_bmdma_fill_sg` cuts where the
    /// address crosses 64 KiB); the page is drawn per request, and takes every value.
    #[test]
    fn a_buffer_off_the_boundary_cuts_each_command_into_three_entries() {
        let mut h = Host::new(1, 1023, 128 * 1024);
        let prd = PrdSplit::new(64 * 1024, None, 7);
        h.set_prd(prd);
        let mut phases = std::collections::BTreeSet::new();
        for i in 0..400u64 {
            let offset = i << 20;
            let phase = prd.phase(offset);
            phases.insert(phase);
            let cmds = split_all(&mut h, Op::Read, offset, 1 << 20);
            assert_eq!(cmds.len() as u32, h.commands_of(Op::Read, offset, 1 << 20));
            let want: Vec<u64> = if phase == 0 {
                vec![64 * 1024; 16]
            } else {
                (0..8)
                    .flat_map(|_| [64 * 1024 - phase, 64 * 1024, phase])
                    .collect()
            };
            assert_eq!(cmds.iter().map(|c| c.1).collect::<Vec<_>>(), want);
            // Contiguous and in order.
            let mut at = offset;
            for &(o, len) in &cmds {
                assert_eq!(o, at);
                at += len;
            }
        }
        assert_eq!(phases.len(), 16, "every page of the frame is drawn");
        // The same request is cut the same way wherever it is counted.
        assert_eq!(
            prd.phase(5 << 20),
            PrdSplit::new(64 * 1024, None, 7).phase(5 << 20)
        );
    }

    /// `prd_buffer = "run-page"`: one page per run (fio's buffers lie `bs` apart in one
    /// region), so every request of a run is cut alike, and the page over seeds takes each of
    /// the 16 pages of a 64 KiB frame, the boundary itself among them.
    #[test]
    fn a_run_page_cuts_every_request_of_the_run_alike() {
        let mut pages = std::collections::BTreeMap::new();
        for seed in 0..400u64 {
            let phase = PrdSplit::run_page(64 * 1024, seed);
            assert!(phase < 64 * 1024 && phase.is_multiple_of(4096), "{phase}");
            assert_eq!(
                phase,
                PrdSplit::run_page(64 * 1024, seed),
                "drawn from the seed alone"
            );
            *pages.entry(phase).or_insert(0u32) += 1;
        }
        assert_eq!(
            pages.len(),
            16,
            "every page of the frame is drawn: {pages:?}"
        );
        assert!(pages.values().all(|&n| n >= 10), "about uniform: {pages:?}");
        let phase = (0..64u64)
            .map(|seed| PrdSplit::run_page(64 * 1024, seed))
            .find(|&p| p != 0)
            .unwrap();
        let mut h = Host::new(1, 1023, 128 * 1024);
        h.set_prd(PrdSplit::new(64 * 1024, Some(phase), 7));
        for i in 0..50u64 {
            let cmds = split_all(&mut h, Op::Write, i << 20, 1 << 20);
            let want: Vec<u64> = (0..8)
                .flat_map(|_| [64 * 1024 - phase, 64 * 1024, phase])
                .collect();
            assert_eq!(cmds.iter().map(|c| c.1).collect::<Vec<_>>(), want);
        }
    }

    /// A merged request completes once at the device but counts and measures each request it
    /// was made of.
    #[test]
    fn a_merged_request_counts_each_of_its_parts() {
        let mut h = Host::new(1, 1023, 1 << 20);
        h.record_requests();
        let parts: Box<[Part]> = vec![
            Part {
                offset: 0,
                len: 4096,
                arrival: SimTime::ZERO,
            },
            Part {
                offset: 4096,
                len: 4096,
                arrival: SimTime::from_us(1),
            },
        ]
        .into();
        let id = h.split(&req(Op::Write, 0, 8192, SimTime::ZERO), 1, |_| {});
        h.set_parts(id, parts);
        assert_eq!(h.in_flight(), 1);
        h.command_done(SimTime::from_us(10), id, 0, Status::Ok)
            .unwrap();
        assert_eq!(h.completed(), 2);
        let recs = h.take_records().unwrap();
        let lat: Vec<u64> = recs.iter().map(|r| r.latency_ps).collect();
        assert_eq!(lat, vec![10_000_000, 9_000_000]);
        // Its parts were taken; the side table is idle again.
        assert!(h.take_parts(id).is_none());
        assert_eq!(h.merged_in_flight, 0);
    }

    #[test]
    fn a_request_completes_with_its_last_command_and_is_measured_after_the_ramp() {
        let mut h = Host::new(1, 1023, 4096);
        h.set_measure_from(SimTime::from_us(1));
        let early = h.split(&req(Op::Read, 0, 8192, SimTime::ZERO), 1, |_| {});
        let late = h.split(&req(Op::Write, 0, 4096, SimTime::from_us(2)), 1, |_| {});
        assert!(h
            .command_done(SimTime::from_us(5), early, 0, Status::Ok)
            .is_none());
        assert!(h
            .command_done(SimTime::from_us(6), early, 0, Status::Ok)
            .is_some());
        let (id, r) = h
            .command_done(SimTime::from_us(7), late, 0, Status::Ok)
            .unwrap();
        assert_eq!((id, r.op), (late, Op::Write));
        assert_eq!(h.completed(), 2);
        assert_eq!(h.last_completion(), SimTime::from_us(7));
        // The early read arrived before the ramp ended: not measured.
        assert_eq!(h.latency(Op::Read).count, 0);
        assert_eq!(h.latency(Op::Write).count, 1);
    }

    #[test]
    fn queue_room_counts_commands_until_they_complete() {
        let mut h = Host::new(2, 3, 4096);
        assert!(h.queue_has_room(0, Op::Read, 0, 8192));
        let r = h.split(&req(Op::Read, 0, 8192, SimTime::ZERO), 1, |_| {});
        assert!(!h.queue_has_room(0, Op::Read, 0, 8192), "2 + 2 > 3");
        assert!(h.queue_has_room(0, Op::Read, 0, 4096));
        assert!(h.queue_has_room(1, Op::Read, 0, 8192), "another queue");
        h.command_done(SimTime::ZERO, r, 0, Status::Ok);
        assert!(h.queue_has_room(0, Op::Read, 0, 8192));
        // A request larger than the whole queue goes alone.
        let mut e = Host::new(1, 3, 4096);
        assert!(e.queue_has_room(0, Op::Read, 0, 64 * 1024));
        e.split(&req(Op::Read, 0, 4096, SimTime::ZERO), 1, |_| {});
        assert!(!e.queue_has_room(0, Op::Read, 0, 64 * 1024));
    }
}
