//! The paging simulation: the application's accesses, its faults, kswapd and direct reclaim,
//! and the swap I/O they send to the backend, on one clock.
//!
//! Two threads run on simulated time: the application (one access after another; a fault
//! costs its software steps and, for a swap-in, waits for the device) and kswapd. The loop
//! takes whichever comes first: the backend's next event, the application, kswapd. The
//! application runs ahead in one go until it would pass the backend's next event, so the
//! model is exact at the device boundary and fast when nothing is in flight.

use super::backend::SwapBackend;
use super::config::{CongestionWake, Era, PagingConfig, Watermarks, SWAP_CLUSTER_MAX_PAGES};
use super::memory::*;
use super::readahead::Readahead;
use super::result::*;
use super::swapfile::SwapArea;
use super::PAGE_BYTES;
use crate::error::Invalid;
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::{Rng, SimTime};

mod reclaim;

/// `DEF_PRIORITY` (mm/vmscan.c): a pass scans lru >> priority pages at each priority, 12 to 0.
const DEF_PRIORITY: u32 = 12;

/// Loop steps between two calls of `run`'s progress callback: often enough that Ctrl-C stops
/// a run at once, rarely enough to cost nothing measurable.
pub const CHECK_EVERY: u32 = 1 << 12;

/// The block layer's request timeout: `NVME_IO_TIMEOUT` (drivers/nvme/host/core.c) and
/// `SD_TIMEOUT` (drivers/scsi/sd.h) are both 30 s.
pub const REQUEST_TIMEOUT: SimTime = SimTime::from_us(30_000_000);

#[derive(Clone, Copy, Debug, PartialEq)]
enum WaitKind {
    /// `congestion_wait`: the timeout, or until the queue leaves congestion if it was congested.
    Congestion { congested: bool },
    /// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)`: the timeout, or until more than
    /// SWAP_CLUSTER_MAX pages were written back since it began.
    Throttle { written_at_start: u64 },
    /// `reclaim_throttle(VMSCAN_THROTTLE_NOPROGRESS)` (5.16): one jiffy, no early wake-up (the
    /// kernel wakes it when another reclaimer makes progress; this model has no other).
    NoProgress,
    /// Congestion wait off: until the next write completes.
    NextWrite,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Wait {
    until: SimTime,
    since: SimTime,
    kind: WaitKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum App {
    Run,
    /// Waiting for the read of this frame.
    Frame(u32),
    Wait(Wait),
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kswapd {
    Sleep,
    Run(SimTime),
    Wait(Wait),
}

struct IoInFlight {
    op: u8,
    frames: Vec<u32>,
    rec: usize,
}

/// The requests in flight, by id. Backends number requests one after another
/// (`SwapBackend::submit`), so they are kept in a ring from the oldest id in flight (slots of
/// completed ones empty until the oldest completes): no search or map node per request.
#[derive(Default)]
struct InFlight {
    /// The id of `ring[0]`.
    base: u32,
    ring: std::collections::VecDeque<Option<IoInFlight>>,
}

impl InFlight {
    fn insert(&mut self, id: u32, io: IoInFlight) -> Result<()> {
        if self.ring.is_empty() {
            self.base = id;
        }
        let k = id.wrapping_sub(self.base) as usize;
        if k != self.ring.len() {
            return Err(Error::device(format!(
                "paging: the backend numbered a request {id} where {} was next (ids must follow \
                 one another)",
                self.base.wrapping_add(self.ring.len() as u32)
            )));
        }
        self.ring.push_back(Some(io));
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Option<IoInFlight> {
        let k = id.wrapping_sub(self.base) as usize;
        let io = self.ring.get_mut(k)?.take();
        while matches!(self.ring.front(), Some(None)) {
            self.ring.pop_front();
            self.base = self.base.wrapping_add(1);
        }
        io
    }

    fn values(&self) -> impl Iterator<Item = &IoInFlight> {
        self.ring.iter().flatten()
    }
}

/// A swap-in fault the application is waiting on.
#[derive(Clone, Copy)]
struct Pending {
    vpage: u32,
    start: SimTime,
    blocked_at: SimTime,
}

/// 5.16's reclaim throttles this model takes (`enum vmscan_throttle_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throttle516 {
    Writeback,
    NoProgress,
}

/// `VMSCAN_THROTTLE_ISOLATED`'s timeout, HZ/50 (5.16 mm/vmscan.c `reclaim_throttle`); kept for
/// the record: with one direct reclaimer the throttle never applies here.
pub const ISOLATED_TIMEOUT_DIVISOR: u32 = 50;

enum Step {
    Done,
    Blocked,
}

pub struct PagingSim<'w, B: SwapBackend> {
    cfg: PagingConfig,
    wm: Watermarks,
    inactive_ratio: u64,
    pub mem: Memory,
    pub area: SwapArea,
    ra: Readahead,
    pub dev: B,
    /// Per slot: the page version written there (oracle), its owner, its swap-cache frame.
    sdata: Vec<u32>,
    sowner: Vec<u32>,
    cache: Vec<u32>,
    wear: Vec<u32>,
    /// The access at which the wear count starts (`Workload::wear_from`); usize::MAX once it
    /// has started.
    wear_from: usize,
    /// When the wear count started, and the page writes before it (they aged the area).
    wear_since: SimTime,
    aging_page_writes: u64,
    /// The first record of `trace` and the device's merges when the count started: the
    /// result's figures cover the counted part of the run only.
    counted_from_rec: usize,
    merges_before: u64,
    accesses: &'w [u32],
    pos: usize,
    app: App,
    app_t: SimTime,
    kswapd: Kswapd,
    /// In a direct reclaim since (for the stall time).
    stall_since: Option<SimTime>,
    pending: Option<Pending>,
    ios: InFlight,
    writes_in_flight: u32,
    pages_written_back: u64,
    /// Pages the last reclaim pass found under writeback at the inactive tail
    /// (`sc->nr.immediate`, what makes 5.16 throttle on writeback).
    pass_immediate: u64,
    /// CPU time of the current reclaim pass (`cost.reclaim_*`).
    reclaim_cpu: SimTime,
    congestion_on: u32,
    congestion_off: u32,
    pub trace: Vec<IoRecord>,
    pub swap_in_ps: Vec<u64>,
    bd: [u64; 7],
    pub res: SwapResult,
    done: Vec<(u32, SimTime)>,
    baseline: SimTime,
    /// Buffers kept from one use to the next rather than allocated each time: a reclaim
    /// batch's writes and a swap-in's reads, (slot, frame) pairs; the frame lists of requests
    /// that completed.
    slots_buf: Vec<(u32, u32)>,
    spare_frames: Vec<Vec<u32>>,
}

impl<'w, B: SwapBackend> PagingSim<'w, B> {
    pub fn new(
        cfg: &PagingConfig,
        dev: B,
        accesses: &'w [u32],
        pages: u32,
        seed: u64,
    ) -> Result<Self> {
        let slots = cfg.swap_slots() as u32;
        let end = cfg.swap_offset.0.checked_add(cfg.swap_size.0);
        if end.is_none_or(|e| e > dev.capacity_bytes()) {
            return Err(Error::bad_config(Invalid::says(
                "swap",
                "swap_size",
                format!(
                    "{} bytes at offset {} do not fit the device's {} bytes",
                    cfg.swap_size.0,
                    cfg.swap_offset.0,
                    dev.capacity_bytes()
                ),
            )));
        }
        let start = if cfg.era == Era::Linux2632 && cfg.solid_state && cfg.randomize_start {
            // 2.6.29's swapon on a non-rotational device: cluster_next = 1 + random % highest_bit.
            1 + Rng::stream(seed, "paging.swapon").below((slots - 1) as u64) as u32
        } else {
            1
        };
        // `auto` follows the device: how its driver ends a nap is the device's property.
        let congestion_wake = cfg.congestion_wake.for_device(dev.queues_requests());
        let mem_pages = cfg.memory_pages();
        let gb = (mem_pages * PAGE_BYTES) >> 30;
        let n = cfg.nr_requests;
        let mut res = SwapResult {
            schema: "ssdlab.swap/1",
            device: dev.describe(),
            era: name_of(cfg.era),
            congestion_wake: name_of(congestion_wake),
            memory_pages: mem_pages,
            swap_slots: slots as u64,
            watermarks: cfg.watermarks(),
            distinct_pages: pages as u64,
            seed,
            ..SwapResult::default()
        };
        res.faults.accesses = accesses.len() as u64;
        Ok(PagingSim {
            wm: cfg.watermarks(),
            inactive_ratio: if gb > 0 {
                ((10 * gb) as f64).sqrt() as u64
            } else {
                1
            }
            .max(1),
            mem: Memory::new(mem_pages as u32, pages),
            area: SwapArea::new(cfg.era, slots, cfg.solid_state, cfg.discard, start),
            ra: Readahead::new(cfg.era, cfg.page_cluster),
            dev,
            sdata: vec![0; slots as usize],
            sowner: vec![NONE; slots as usize],
            cache: vec![NONE; slots as usize],
            wear: vec![0; slots as usize],
            wear_from: 0,
            wear_since: SimTime::ZERO,
            aging_page_writes: 0,
            counted_from_rec: 0,
            merges_before: 0,
            accesses,
            pos: 0,
            app: App::Run,
            app_t: SimTime::ZERO,
            kswapd: Kswapd::Sleep,
            stall_since: None,
            pending: None,
            ios: InFlight::default(),
            writes_in_flight: 0,
            pages_written_back: 0,
            pass_immediate: 0,
            reclaim_cpu: SimTime::ZERO,
            // blk_queue_congestion_threshold (block/blk-core.c).
            congestion_on: n - n / 8 + 1,
            congestion_off: n - n / 8 - n / 16 - 1,
            trace: Vec::new(),
            swap_in_ps: Vec::new(),
            bd: [0; 7],
            res,
            done: Vec::new(),
            baseline: SimTime::ZERO,
            slots_buf: Vec::new(),
            spare_frames: Vec::new(),
            cfg: PagingConfig {
                congestion_wake,
                ..cfg.clone()
            },
        })
    }

    /// Run the whole access stream; then let the device finish. `progress(accesses done,
    /// accesses)` is called every [`CHECK_EVERY`] steps; returning false stops the run with
    /// [`Error::Interrupted`] (Ctrl-C is seen there, not only at the end).
    pub fn run(&mut self, progress: &mut dyn FnMut(u64, u64) -> bool) -> Result<()> {
        let wall = std::time::Instant::now();
        let mut steps = 0u32;
        loop {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(CHECK_EVERY)
                && !progress(self.pos as u64, self.accesses.len() as u64)
            {
                return Err(Error::Interrupted);
            }
            let t_dev = self.dev.next_event();
            let t_app = match self.app {
                App::Run => Some(self.app_t),
                App::Wait(w) => Some(w.until),
                _ => None,
            };
            let t_k = match self.kswapd {
                Kswapd::Run(t) => Some(t),
                Kswapd::Wait(w) => Some(w.until),
                Kswapd::Sleep => None,
            };
            let t_cpu = match (t_app, t_k) {
                (Some(a), Some(k)) => Some(a.min(k)),
                (a, k) => a.or(k),
            };
            let next = [t_dev, t_cpu].into_iter().flatten().min();
            if steps.is_multiple_of(CHECK_EVERY) {
                self.check_request_timeout(next.unwrap_or(SimTime::ZERO))?;
            }
            // Simulated time saturates: once the next event is at the clock's end, no step
            // moves time on and the model would loop there for ever.
            if next == Some(SimTime::MAX) {
                return Err(Error::job(format!(
                    "paging: the simulated clock reached its end (2^64 ps, about 213 days) at \
                     access {} of {}: a time in the device config or swap settings is too long \
                     for it (link latency, bus or link rate, transfer overhead, costs or timeouts)",
                    self.pos,
                    self.accesses.len()
                )));
            }
            match (t_dev, t_cpu) {
                (None, None) => break,
                (Some(d), c) if c.is_none_or(|c| d <= c) => {
                    let mut done = std::mem::take(&mut self.done);
                    self.dev.advance(d, &mut done)?;
                    for &(id, t) in &done {
                        self.complete(id, t)?;
                    }
                    done.clear();
                    self.done = done;
                }
                (d, Some(c)) => {
                    if t_app == Some(c) {
                        let limit = [d, t_k].into_iter().flatten().min().unwrap_or(SimTime::MAX);
                        self.run_app(limit)?;
                    } else {
                        self.run_kswapd(c)?;
                    }
                }
                _ => unreachable!(),
            }
        }
        if self.app != App::Done {
            return Err(Error::device(format!(
                "paging: the application stopped at access {} of {} with nothing in flight",
                self.pos,
                self.accesses.len()
            )));
        }
        self.finish(wall.elapsed().as_secs_f64());
        Ok(())
    }

    /// A swap request in flight longer than the kernel's block-layer timeout would have been
    /// aborted and retried (`nvme_core.io_timeout` and SCSI sd's `SD_TIMEOUT`: 30 s). The
    /// model has no timeout handling: stop with an error, rather than have the application and
    /// kswapd wake every jiffy for the hours or days a device setting makes a request take.
    fn check_request_timeout(&self, now: SimTime) -> Result<()> {
        let oldest = self
            .ios
            .values()
            .map(|io| &self.trace[io.rec])
            .min_by_key(|r| r.submit_ps);
        match oldest {
            Some(r) if now.ps().saturating_sub(r.submit_ps) > REQUEST_TIMEOUT.ps() => {
                Err(Error::job(format!(
                    "paging: a swap {} of {} bytes at byte {} has been in flight for {:.0} s of \
                     simulated time, past the kernel's block-layer timeout ({} s), which the \
                     model does not handle: a time in the device config is too long for a swap \
                     device (link latency, bus or link rate, transfer overhead)",
                    ["read", "write", "trim"][r.op as usize % 3],
                    r.len,
                    r.offset,
                    (now.ps() - r.submit_ps) as f64 * 1e-12,
                    REQUEST_TIMEOUT.as_secs_f64()
                )))
            }
            _ => Ok(()),
        }
    }

    fn finish(&mut self, wall: f64) {
        let r = &mut self.res;
        let app_s = (self.app_t - self.wear_since).as_secs_f64();
        r.simulated_time_s = app_s;
        r.baseline_time_s = self.baseline.as_secs_f64();
        r.slowdown = if self.baseline.0 > 0 {
            app_s / r.baseline_time_s
        } else {
            0.0
        };
        r.faults.per_second = if app_s > 0.0 {
            (r.faults.minor + r.faults.major + r.faults.swap_cache_hits) as f64 / app_s
        } else {
            0.0
        };
        r.swap_in_latency = Latency::of(&mut self.swap_in_ps.clone());
        let n = self.swap_in_ps.len().max(1) as f64;
        let us = |ps: u64| ps as f64 * 1e-6 / n;
        let b = &self.bd;
        let total: u64 = b.iter().sum();
        r.swap_in_breakdown = Breakdown {
            lookup_us: us(b[0]),
            swap_read_us: us(b[1]),
            device_us: us(b[2]),
            page_reuse_us: us(b[3]),
            mapping_us: us(b[4]),
            slot_free_us: us(b[5]),
            mmu_update_us: us(b[6]),
            total_us: us(total),
            software_share: if total > 0 {
                1.0 - b[2] as f64 / total as f64
            } else {
                0.0
            },
        };
        // Service times over the whole trace (each depends on the completion before it), the
        // figures over the counted part.
        let service = service_ps(&self.trace);
        let (trace, service) = (
            &self.trace[self.counted_from_rec..],
            &service[self.counted_from_rec..],
        );
        r.reads = io_stats(trace, service, 0);
        r.writes = io_stats(trace, service, 1);
        r.trims = trace.iter().filter(|t| t.op == 2).count() as u64;
        let w: Vec<&IoRecord> = trace.iter().filter(|t| t.op == 1).collect();
        if let (Some(first), Some(last)) = (
            w.iter().map(|t| t.submit_ps).min(),
            w.iter().map(|t| t.done_ps).max(),
        ) {
            r.swap_out.time_s = (last - first) as f64 * 1e-12;
        }
        r.swap_out.pages = r.writes.pages;
        r.device_merges = self.dev.merges().map(|m| m - self.merges_before);
        r.wear = wear(&self.wear, app_s, &self.cfg.endurance);
        r.wear.aging_page_writes = self.aging_page_writes;
        r.wear.counted_from_s = self.wear_since.as_secs_f64();
        r.wear.slots_in_use_mean = self.area.in_use_mean();
        r.wear.scan_returns = self.area.scan_returns;
        r.wall_seconds = wall;
        r.accesses_per_wall_second = if wall > 0.0 {
            self.accesses.len() as f64 / wall
        } else {
            0.0
        };
    }

    // ----- the application -----

    fn run_app(&mut self, limit: SimTime) -> Result<()> {
        if let App::Wait(w) = self.app {
            self.end_wait(w, true);
            self.app = App::Run;
            self.app_t = w.until;
        }
        let access = self.cfg.cost.access.0;
        loop {
            if self.pos == self.accesses.len() {
                self.app = App::Done;
                return Ok(());
            }
            if self.pos == self.wear_from {
                self.start_wear_count();
            }
            if self.run_hits(access, limit) > 0 && self.app_t >= limit {
                return Ok(());
            }
            if self.pos == self.accesses.len().min(self.wear_from) {
                continue;
            }
            // The access at `pos` faults.
            let a = self.accesses[self.pos];
            let (vp, write) = (a >> 1, a & 1 != 0);
            let step = self.fault(vp, write)?;
            self.flush_trims_at(self.app_t)?;
            match step {
                Step::Done => {
                    self.app_t += access;
                    self.baseline += access;
                    self.pos += 1;
                }
                Step::Blocked => return Ok(()),
            }
            // kswapd woken by this fault runs before the application goes on.
            if matches!(self.kswapd, Kswapd::Run(t) if t <= self.app_t) {
                return Ok(());
            }
            if self.app_t >= limit {
                return Ok(());
            }
        }
    }

    /// The hit path: the accesses from `pos` on to mapped pages (a write to one that has no
    /// slot), each costing `access`, up to the first that faults, the end of the stream or of
    /// the aging rounds, or the access that takes the application to `limit` (the first one
    /// at least, as each access is taken before the clock is checked). Returns how many.
    /// The clock moves once for them all, as their accesses one by one would have moved it
    /// (saturating sums of non-negative times).
    #[inline]
    fn run_hits(&mut self, access: SimTime, limit: SimTime) -> usize {
        let end = self.accesses.len().min(self.wear_from);
        // The accesses that reach `limit`: k with app_t + k x access >= limit, the least.
        let to_limit = if self.app_t >= limit {
            1
        } else if access.0 == 0 {
            usize::MAX
        } else {
            usize::try_from((limit.0 - self.app_t.0).div_ceil(access.0)).unwrap_or(usize::MAX)
        };
        let end = end.min(self.pos.saturating_add(to_limit));
        let accesses = self.accesses;
        let m = &mut self.mem;
        let mut n = 0;
        for &a in &accesses[self.pos..end] {
            let (vp, write) = (a >> 1, a & 1 != 0);
            let f = m.frame[vp as usize];
            if f == NONE || (write && m.frames[f as usize].slot != NONE) {
                break;
            }
            let fl = &mut m.frames[f as usize].flags;
            *fl |= REFERENCED;
            if write {
                *fl |= DIRTY;
                let v = &mut m.version[vp as usize];
                *v = v.wrapping_add(1);
                m.frames[f as usize].data = *v;
            }
            n += 1;
        }
        self.pos += n;
        let t = access * n as u64;
        self.app_t += t;
        self.baseline += t;
        n
    }

    /// Count swap writes towards wear from the access at `pos` on (`Workload::wear_from`):
    /// the writes so far aged the swap area.
    pub fn count_wear_from(&mut self, pos: usize) {
        self.wear_from = pos;
    }

    /// The aging rounds are a warm-up: from here on the wear and every other figure of the
    /// result count afresh (the swap trace keeps every request). Cold: once a run, and kept
    /// out of the access loop it is called from.
    #[cold]
    #[inline(never)]
    fn start_wear_count(&mut self) {
        self.aging_page_writes = self.wear.iter().map(|&n| n as u64).sum();
        self.wear.fill(0);
        self.area.reset_counts();
        self.wear_since = self.app_t;
        self.wear_from = usize::MAX;
        self.res.faults = Faults {
            accesses: (self.accesses.len() - self.pos) as u64,
            ..Faults::default()
        };
        self.res.reclaim = Reclaim::default();
        self.swap_in_ps.clear();
        self.bd = [0; 7];
        self.baseline = SimTime::ZERO;
        self.counted_from_rec = self.trace.len();
        self.merges_before = self.dev.merges().unwrap_or(0);
    }

    fn end_wait(&mut self, w: Wait, app: bool) {
        let d = (w.until - w.since).as_secs_f64();
        if app {
            self.res.reclaim.app_wait_s += d;
        } else {
            self.res.reclaim.kswapd_wait_s += d;
        }
    }

    fn charge(&mut self, t: SimTime) {
        self.app_t += t;
    }

    /// A fault on `vp`: Done when the access completed, Blocked when the application waits.
    fn fault(&mut self, vp: u32, write: bool) -> Result<Step> {
        let c = self.cfg.cost.clone();
        let v = vp as usize;
        match self.mem.state[v] {
            UNTOUCHED | ZERO => {
                if !write {
                    if self.mem.state[v] == UNTOUCHED {
                        // A read maps the shared zero page.
                        self.mem.state[v] = ZERO;
                        self.res.faults.minor += 1;
                        self.charge(c.minor_fault.0);
                        self.baseline += c.minor_fault.0;
                    }
                    return Ok(Step::Done);
                }
                if !self.alloc_ok(1)? {
                    return Ok(Step::Blocked);
                }
                let ver = self.mem.version[v].wrapping_add(1);
                self.mem.version[v] = ver;
                let f = self.mem.alloc(vp, ver, MAPPED | DIRTY | REFERENCED);
                // 2.6.32 puts a new anonymous page on the active list; 5.9+ on the inactive.
                self.mem.add_head(f, self.cfg.era == Era::Linux2632);
                self.mem.frame[v] = f;
                self.mem.state[v] = ANON;
                self.res.faults.minor += 1;
                self.charge(c.minor_fault.0);
                self.baseline += c.minor_fault.0;
                Ok(Step::Done)
            }
            _ => {
                let f = self.mem.frame[v];
                if f != NONE {
                    // A write to a page mapped read-only from the swap cache: do_wp_page.
                    self.res.faults.write_protect += 1;
                    self.mem.frames[f as usize].flags |= REFERENCED;
                    let mut t = c.page_reuse.0;
                    if self.reuse_swap_page(f) {
                        t += c.slot_free.0;
                    }
                    self.write_page(vp, f);
                    self.charge(t);
                    return Ok(Step::Done);
                }
                let s = self.mem.slot[v];
                debug_assert!(s != NONE, "page {vp} neither resident nor swapped");
                let cf = self.cache[s as usize];
                if cf != NONE {
                    if self.mem.frames[cf as usize].flags & READING != 0 {
                        self.app = App::Frame(cf);
                        if self.pending.is_none() {
                            self.pending = Some(Pending {
                                vpage: vp,
                                start: self.app_t,
                                blocked_at: self.app_t,
                            });
                            self.res.faults.swap_cache_hits += 1;
                            self.bd_add(0, c.lookup.0);
                            self.charge(c.lookup.0);
                            self.pending.as_mut().unwrap().blocked_at = self.app_t;
                        }
                        return Ok(Step::Blocked);
                    }
                    self.map_from_cache(vp, s, cf, write);
                    return Ok(Step::Done);
                }
                // A swap-in from the device. The read-ahead pages are allocated like the
                // target (2.6.32 `read_swap_cache_async` takes `GFP_HIGHUSER_MOVABLE`, which
                // may reclaim directly), so the fault needs frames for the whole window.
                let n = self.readable(s);
                if !self.alloc_ok(n)? {
                    return Ok(Step::Blocked);
                }
                self.swap_in(vp, s)
            }
        }
    }

    fn bd_add(&mut self, i: usize, t: SimTime) {
        if self.pending.is_some() {
            self.bd[i] += t.0;
        }
    }

    /// The page in `f` is written: a new version.
    fn write_page(&mut self, vp: u32, f: u32) {
        self.mem.frames[f as usize].flags |= DIRTY;
        let ver = self.mem.version[vp as usize].wrapping_add(1);
        self.mem.version[vp as usize] = ver;
        self.mem.frames[f as usize].data = ver;
    }

    /// `reuse_swap_page` on a write fault: the slot is freed unless the page is under
    /// writeback. True if it freed the slot.
    fn reuse_swap_page(&mut self, f: u32) -> bool {
        let s = self.mem.frames[f as usize].slot;
        if s == NONE || self.mem.frames[f as usize].flags & WRITEBACK != 0 {
            return false;
        }
        self.drop_slot(f, s);
        true
    }

    /// Take `f` out of the swap cache and free its slot; the page must be written again.
    fn drop_slot(&mut self, f: u32, s: u32) {
        let vp = self.mem.frames[f as usize].owner;
        self.cache[s as usize] = NONE;
        self.mem.frames[f as usize].slot = NONE;
        self.mem.slot[vp as usize] = NONE;
        self.sowner[s as usize] = NONE;
        self.mem.frames[f as usize].flags |= DIRTY;
        self.area.free(s);
    }

    /// Map `vp` from the swap cache frame `cf` (a read-ahead page, a page not yet freed after
    /// writeback, or the page this fault read). Charges the fault's steps after the lookup.
    fn map_from_cache(&mut self, vp: u32, s: u32, cf: u32, write: bool) {
        let c = self.cfg.cost.clone();
        let own = self.pending.take_if(|p| p.vpage == vp);
        if own.is_none() {
            self.res.faults.swap_cache_hits += 1;
            self.charge(c.lookup.0);
        }
        let fl = self.mem.frames[cf as usize].flags;
        if fl & READAHEAD != 0 {
            self.mem.frames[cf as usize].flags &= !READAHEAD;
            if own.is_none() {
                self.res.faults.readahead_hits += 1;
            }
            self.ra.hit();
        }
        if self.mem.frames[cf as usize].data != self.mem.version[vp as usize] {
            self.res.oracle_mismatches += 1;
        }
        self.mem.frame[vp as usize] = cf;
        self.mem.frames[cf as usize].flags |= MAPPED | REFERENCED;
        let mut t = c.mapping.0 + c.mmu_update.0;
        let reuse = if write { c.page_reuse.0 .0 } else { 0 };
        let mut free = 0;
        // do_swap_page keeps the slot (the page stays in the swap cache, clean) unless the
        // fault writes (reuse_swap_page), swap is more than half full (try_to_free_swap), or
        // the synchronous path read it; never while the page is under writeback.
        let sync = self.cfg.era == Era::Modern && self.cfg.synchronous_io;
        if (write || sync || self.area.swap_full())
            && self.mem.frames[cf as usize].flags & WRITEBACK == 0
        {
            self.drop_slot(cf, s);
            free = c.slot_free.0 .0;
        }
        if write {
            self.write_page(vp, cf);
        }
        t += SimTime(reuse + free);
        self.charge(t);
        if let Some(p) = own {
            self.bd[3] += reuse;
            self.bd[4] += c.mapping.0 .0;
            self.bd[5] += free;
            self.bd[6] += c.mmu_update.0 .0;
            self.swap_in_ps.push((self.app_t - p.start).0);
        }
    }

    /// The read-ahead window around `s` (a copy of the read-ahead state, so asking does not
    /// consume its hits) and the slots in it that a swap-in would read: in use, owned and not
    /// in the swap cache. `(first, end, pages)`.
    fn window_of(&self, s: u32) -> (u32, u32, u64) {
        let sync = self.cfg.era == Era::Modern && self.cfg.synchronous_io;
        let (first, end) = if sync {
            (s, s + 1)
        } else {
            self.ra.clone().window(s, &self.area)
        };
        let n = (first..end).filter(|&x| self.readable_slot(x)).count() as u64;
        (first, end, n)
    }

    fn readable_slot(&self, x: u32) -> bool {
        self.area.in_use(x) && self.cache[x as usize] == NONE && self.sowner[x as usize] != NONE
    }

    /// Frames a swap-in of `s` takes (the target and its read-ahead).
    fn readable(&self, s: u32) -> u64 {
        self.window_of(s).2.max(1)
    }

    fn swap_in(&mut self, vp: u32, s: u32) -> Result<Step> {
        let c = self.cfg.cost.clone();
        // A fault whose page was reclaimed again before it could map it keeps its start.
        let start = self
            .pending
            .take()
            .filter(|p| p.vpage == vp)
            .map_or(self.app_t, |p| p.start);
        self.res.faults.major += 1;
        self.charge(c.lookup.0 + c.swap_read.0);
        self.bd[0] += c.lookup.0 .0;
        self.bd[1] += c.swap_read.0 .0;
        let sync = self.cfg.era == Era::Modern && self.cfg.synchronous_io;
        let (first, end) = if sync {
            (s, s + 1)
        } else {
            self.ra.window(s, &self.area)
        };
        if !sync {
            self.count_outside_run(s, first, end);
        }
        let mut slots = std::mem::take(&mut self.slots_buf);
        slots.clear();
        let mut target = NONE;
        // The census of the run's slots: free, cached, unowned.
        let (mut free, mut cached, mut unowned) = (0u64, 0u64, 0u64);
        for x in first..end {
            if !self.area.in_use(x) {
                free += 1;
                continue;
            }
            if self.cache[x as usize] != NONE {
                cached += 1;
                continue;
            }
            let owner = self.sowner[x as usize];
            if owner == NONE {
                unowned += 1;
                continue;
            }
            let mut flags = READING;
            if x != s {
                flags |= READAHEAD;
            }
            let f = self.mem.alloc(owner, self.sdata[x as usize], flags);
            self.mem.frames[f as usize].slot = x;
            self.cache[x as usize] = f;
            self.mem.add_head(f, false);
            if x == s {
                target = f;
            }
            slots.push((x, f));
        }
        debug_assert!(target != NONE);
        // The target's neighbours only (a synchronous swap-in, whose run is the target alone,
        // counts none).
        let b = &mut self.res.faults.readahead_block;
        b.read += slots.len() as u64 - 1;
        b.free += free;
        b.cached += cached;
        b.cut_off += unowned;
        self.submit_runs(Op::Read, &slots, self.app_t)?;
        self.slots_buf = slots;
        self.pending = Some(Pending {
            vpage: vp,
            start,
            blocked_at: self.app_t,
        });
        self.app = App::Frame(target);
        Ok(Step::Blocked)
    }

    /// The read-ahead census for the slots of `s`'s aligned block of 2^page_cluster slots
    /// outside the run `[first, end)` read (the header slot and slots past the area's end left
    /// out): free, cached, or cut off from the run. The run's own slots are counted as the
    /// swap-in walks them.
    fn count_outside_run(&mut self, s: u32, first: u32, end: u32) {
        let pc = self.cfg.page_cluster;
        let low = ((s >> pc) << pc).max(1);
        let top = (((s >> pc) << pc) + (1 << pc)).min(self.area.slots());
        if first <= low && end >= top {
            return; // the run is the whole block
        }
        let (mut free, mut cached, mut cut_off) = (0u64, 0u64, 0u64);
        let mut count = |x: u32| {
            if !self.area.in_use(x) {
                free += 1;
            } else if self.cache[x as usize] != NONE {
                cached += 1;
            } else {
                cut_off += 1;
            }
        };
        for x in low..first.max(low) {
            count(x);
        }
        for x in end.min(top)..top {
            count(x);
        }
        let b = &mut self.res.faults.readahead_block;
        b.free += free;
        b.cached += cached;
        b.cut_off += cut_off;
    }

    /// Submit `slots` (ascending, with their frames) as requests of consecutive slots, each
    /// at most `max_io` (the block layer merging adjacent bios).
    fn submit_runs(&mut self, op: Op, slots: &[(u32, u32)], now: SimTime) -> Result<()> {
        // A request holds one page at least, even where `max_io` is below a page.
        let max_pages = ((self.cfg.max_io.0 / PAGE_BYTES) as usize).max(1);
        let mut rest = slots;
        while let Some(&(first, _)) = rest.first() {
            // The run: the slots that follow one another from `first`, at most `max_pages`.
            let window = &rest[..rest.len().min(max_pages)];
            let n = 1 + window
                .windows(2)
                .take_while(|w| w[1].0 == w[0].0 + 1)
                .count();
            let (run, after) = rest.split_at(n);
            let mut frames = self.spare_frames.pop().unwrap_or_default();
            frames.extend(run.iter().map(|p| p.1));
            self.submit(op, first, n as u32, frames, now)?;
            rest = after;
        }
        Ok(())
    }

    fn submit(&mut self, op: Op, slot: u32, n: u32, frames: Vec<u32>, now: SimTime) -> Result<()> {
        let offset = self.cfg.swap_offset.0 + slot as u64 * PAGE_BYTES;
        let len = n as u64 * PAGE_BYTES;
        let id = self.dev.submit(now, op, offset, len)?;
        let code = match op {
            Op::Read => 0,
            Op::Write => 1,
            _ => 2,
        };
        if code == 1 {
            self.writes_in_flight += 1;
        }
        self.trace.push(IoRecord {
            op: code,
            offset,
            len,
            submit_ps: now.0,
            done_ps: 0,
        });
        self.ios.insert(
            id,
            IoInFlight {
                op: code,
                frames,
                rec: self.trace.len() - 1,
            },
        )
    }

    /// Whether the application may take `n` pages now; reclaims directly (and may block the
    /// application in a wait) when memory is at the min watermark (`__alloc_pages_slowpath`).
    fn alloc_ok(&mut self, n: u64) -> Result<bool> {
        let free = self.mem.free_pages();
        if free >= self.wm.low + n {
            self.end_stall();
            return Ok(true);
        }
        // Below low: wake kswapd (wakeup_kswapd), then allow down to min.
        if self.kswapd == Kswapd::Sleep {
            self.kswapd = Kswapd::Run(self.app_t);
            self.res.reclaim.kswapd_wakeups += 1;
        }
        if free >= self.wm.min + n {
            self.end_stall();
            return Ok(true);
        }
        // Direct reclaim (try_to_free_pages).
        if self.stall_since.is_none() {
            self.stall_since = Some(self.app_t);
        }
        self.res.reclaim.direct_reclaims += 1;
        let progress = self.reclaim_pass(self.app_t, false)?;
        // Direct reclaim runs on the application's time.
        let cpu = self.reclaim_cpu;
        self.charge(cpu);
        self.res.reclaim.cpu_s += cpu.as_secs_f64();
        let now = self.app_t;
        if self.mem.free_pages() >= self.wm.min + n {
            self.end_stall();
            return Ok(true);
        }
        if self.writes_in_flight == 0 && self.reads_in_flight() == 0 && progress == 0 {
            return Err(Error::job(format!(
                "paging: out of memory and swap: {} pages of memory, {} of {} swap slots in use, nothing left to reclaim",
                self.cfg.memory_pages(),
                self.area.inuse_pages(),
                self.area.pages()
            )));
        }
        // The direct reclaim failed: wait before retrying.
        let w = self.wait(now, progress, false);
        self.app = App::Wait(w);
        Ok(false)
    }

    fn reads_in_flight(&self) -> usize {
        self.ios.values().filter(|i| i.op == 0).count()
    }

    fn end_stall(&mut self) {
        if let Some(s) = self.stall_since.take() {
            self.res.reclaim.direct_stall_s += (self.app_t - s).as_secs_f64();
        }
    }

    /// Send the discards the swap area asked for, as TRIMs. Called after every fault and
    /// reclaim batch, and mostly with none: the check is inline, the sending out of line.
    #[inline]
    fn flush_trims_at(&mut self, now: SimTime) -> Result<()> {
        if self.area.trims.is_empty() {
            return Ok(());
        }
        self.send_trims_at(now)
    }

    #[inline(never)]
    fn send_trims_at(&mut self, now: SimTime) -> Result<()> {
        for (first, n) in std::mem::take(&mut self.area.trims) {
            self.submit(Op::Trim, first, n, Vec::new(), now)?;
        }
        Ok(())
    }

    // ----- completions -----

    fn complete(&mut self, id: u32, t: SimTime) -> Result<()> {
        let Some(io) = self.ios.remove(id) else {
            return Err(Error::device(format!(
                "paging: completion of unknown request {id}"
            )));
        };
        self.trace[io.rec].done_ps = t.0;
        match io.op {
            0 => {
                for &f in &io.frames {
                    self.mem.frames[f as usize].flags &= !READING;
                }
                if let App::Frame(f) = self.app {
                    if io.frames.contains(&f) {
                        if let Some(p) = &mut self.pending {
                            self.bd[2] += (t - p.blocked_at).0;
                        }
                        self.app = App::Run;
                        self.app_t = self.app_t.max(t);
                    }
                }
            }
            1 => {
                self.writes_in_flight -= 1;
                for &f in &io.frames {
                    self.mem.frames[f as usize].flags &= !WRITEBACK;
                    self.mem.writeback -= 1;
                    self.pages_written_back += 1;
                    let fl = self.mem.frames[f as usize].flags;
                    // The page was not faulted back while it was written: it is freed now (the
                    // rotation to the inactive tail and the next scan, at once).
                    if fl & (MAPPED | DIRTY | READING) == 0 {
                        let s = self.mem.frames[f as usize].slot;
                        self.cache[s as usize] = NONE;
                        self.mem.release(f);
                        self.res.reclaim.freed_after_writeback += 1;
                    }
                }
            }
            _ => {}
        }
        let mut frames = io.frames;
        if frames.capacity() > 0 {
            frames.clear();
            self.spare_frames.push(frames);
        }
        self.wake_waiters(t, io.op == 1);
        Ok(())
    }

    fn wake_waiters(&mut self, t: SimTime, write_done: bool) {
        let off = self.congestion_off;
        let any_write_wakes = self.cfg.congestion_wake == CongestionWake::Completion;
        let (inflight, written) = (self.writes_in_flight, self.pages_written_back);
        let wakes = |w: &mut Wait| {
            let wake = match w.kind {
                // Any completion: a read may also free the application to go on.
                WaitKind::NextWrite => true,
                WaitKind::Congestion { congested } => {
                    (congested || (any_write_wakes && write_done)) && inflight < off
                }
                WaitKind::Throttle { written_at_start } => {
                    written - written_at_start > SWAP_CLUSTER_MAX_PAGES
                }
                WaitKind::NoProgress => false,
            };
            if wake && w.until > t {
                w.until = t;
            }
        };
        if let App::Wait(w) = &mut self.app {
            wakes(w);
        }
        if let Kswapd::Wait(w) = &mut self.kswapd {
            wakes(w);
        }
    }

    /// Check the model's invariants (tests): every touched page is resident or has a slot in
    /// use that it owns; a page not resident with a slot has its data in swap or in the swap
    /// cache; a swap-cache frame belongs to its slot.
    pub fn check(&self) -> std::result::Result<(), String> {
        self.mem.check_lists()?;
        for v in 0..self.mem.state.len() {
            if self.mem.state[v] != ANON {
                continue;
            }
            let (f, s) = (self.mem.frame[v], self.mem.slot[v]);
            if f == NONE && s == NONE {
                return Err(format!("page {v}: neither resident nor swapped out"));
            }
            if s != NONE {
                if !self.area.in_use(s) || self.sowner[s as usize] != v as u32 {
                    return Err(format!("page {v}: slot {s} not in use or not its own"));
                }
                let c = self.cache[s as usize];
                if f != NONE && c != f {
                    return Err(format!(
                        "page {v}: resident in {f} and swapped to {s} without a swap-cache entry"
                    ));
                }
            }
            if f != NONE && self.mem.frames[f as usize].owner != v as u32 {
                return Err(format!("page {v}: frame {f} owned by another page"));
            }
        }
        Ok(())
    }
}

/// A config enum's name as its TOML and the result spell it (its serde name).
fn name_of<T: serde::Serialize>(v: T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
