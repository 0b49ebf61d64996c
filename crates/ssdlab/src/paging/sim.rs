//! The paging simulation: the application's accesses, its faults, kswapd and direct reclaim,
//! and the swap I/O they send to the backend, on one clock.
//!
//! Two threads run on simulated time: the application (one access after another; a fault
//! costs its software steps and, for a swap-in, waits for the device) and kswapd. The loop
//! takes whichever comes first: the backend's next event, the application, kswapd. The
//! application runs ahead in one go until it would pass the backend's next event, so the
//! model is exact at the device boundary and fast when nothing is in flight.
//!
//! This file holds the state, the loop and the result's figures; the parts of the model are
//! beside it: `sim/fault.rs` (the application: accesses, faults, swap-ins, direct reclaim's
//! trigger), `sim/io.rs` (swap requests, discards, completions), `sim/in_flight.rs` (the
//! requests in flight by id, with their frames), `sim/reclaim.rs` (kswapd, direct reclaim's
//! passes, the LRU shrinks, the throttles).

use super::backend::SwapBackend;
use super::config::{CongestionWake, Era, PagingConfig, Watermarks, SWAP_CLUSTER_MAX_PAGES};
use super::memory::*;
use super::readahead::Readahead;
use super::result::*;
use super::swapfile::SwapArea;
use super::{PAGE_BYTES, PAGING};
use crate::error::{says, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::{Rng, SimTime};

mod fault;
mod in_flight;
mod io;
mod reclaim;

use in_flight::InFlight;

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

/// A swap-in fault the application is waiting on.
#[derive(Clone, Copy)]
struct Pending {
    vpage: u32,
    start: SimTime,
    blocked_at: SimTime,
}

/// What the model keeps per swap slot: the version of the page's data written there (the
/// oracle's), the virtual page that owns the slot and the swap-cache frame holding its page
/// (NONE for none). One record, as a swap-in and a reclaim scan read and write them together.
#[derive(Clone, Copy)]
struct SwapSlot {
    data: u32,
    owner: u32,
    cache: u32,
}

/// The slots of a swap-in's read-ahead block that it does not read, by why: free, in the swap
/// cache already, or in use and not read (without an owner, or cut off from the run read; the
/// slots it reads are listed apart).
#[derive(Clone, Copy, Default)]
struct Census {
    free: u64,
    cached: u64,
    cut_off: u64,
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
    slots: Vec<SwapSlot>,
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
    /// A buffer kept from one use to the next rather than allocated each time: a reclaim
    /// batch's writes and a swap-in's reads, (slot, frame) pairs.
    slots_buf: Vec<(u32, u32)>,
    /// The slots the next swap-in reads, as the census of its read-ahead window found them
    /// (`fault.rs`, `take_census`).
    readable: Vec<u32>,
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
            return Err(Error::bad_paging(Invalid::says(
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
            slots: vec![
                SwapSlot {
                    data: 0,
                    owner: NONE,
                    cache: NONE,
                };
                slots as usize
            ],
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
            readable: Vec::new(),
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
            let t_cpu = earliest(t_app, t_k);
            let next = earliest(t_dev, t_cpu);
            if steps.is_multiple_of(CHECK_EVERY) {
                self.check_request_timeout(next.unwrap_or(SimTime::ZERO))?;
            }
            // Simulated time saturates: once the next event is at the clock's end, no step
            // moves time on and the model would loop there for ever.
            if next == Some(SimTime::MAX) {
                return Err(Error::bad_paging(Invalid::unnamed(
                    PAGING,
                    says(format!(
                        "the simulated clock reached its end (2^64 ps, about 213 days) at \
                         access {} of {}: a time in the device config or swap settings is too \
                         long for it (link latency, bus or link rate, transfer overhead, costs \
                         or timeouts)",
                        self.pos,
                        self.accesses.len()
                    )),
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
                        let limit = earliest(d, t_k).unwrap_or(SimTime::MAX);
                        self.run_app(limit)?;
                    } else {
                        self.run_kswapd(c)?;
                    }
                }
                _ => unreachable!(),
            }
        }
        if self.app != App::Done {
            return Err(Error::bad_device(Invalid::unnamed(
                "paging",
                says(format!(
                    "the application stopped at access {} of {} with nothing in flight",
                    self.pos,
                    self.accesses.len()
                )),
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
                Err(Error::bad_paging(Invalid::unnamed(
                    PAGING,
                    says(format!(
                        "a swap {} of {} bytes at byte {} has been in flight for {:.0} s of \
                         simulated time, past the kernel's block-layer timeout ({} s), which the \
                         model does not handle: a time in the device config is too long for a \
                         swap device (link latency, bus or link rate, transfer overhead)",
                        ["read", "write", "trim"][r.op as usize % 3],
                        r.len,
                        r.offset,
                        (now.ps() - r.submit_ps) as f64 * 1e-12,
                        REQUEST_TIMEOUT.as_secs_f64()
                    )),
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
        r.swap_in_latency = Latency::of(&self.swap_in_ps);
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
        let io = io_figures(trace, service);
        (r.reads, r.writes, r.trims) = (io.reads, io.writes, io.trims);
        if let Some((first, last)) = io.write_span_ps {
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
                if !self.area.in_use(s) || self.slots[s as usize].owner != v as u32 {
                    return Err(format!("page {v}: slot {s} not in use or not its own"));
                }
                let c = self.slots[s as usize].cache;
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

/// The earlier of two times, either of which may be absent (None: nothing scheduled). The
/// loop asks this several times a step: written out, as an iterator over the two options
/// cost about 25 instructions more each time.
#[inline]
fn earliest(a: Option<SimTime>, b: Option<SimTime>) -> Option<SimTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A config enum's name as its TOML and the result spell it (its serde name).
fn name_of<T: serde::Serialize>(v: T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
