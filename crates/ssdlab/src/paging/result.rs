//! What a paging run reports (`ssdlab.swap/1`), and the statistics built from its records.

use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p99_9_us: f64,
    pub max_us: f64,
}

impl Latency {
    /// From latencies in picoseconds. Each percentile is the value of its rank in sorted
    /// order, found by counting rather than sorting ([`values_at_ranks`]).
    pub fn of(v: &[u64]) -> Latency {
        if v.is_empty() {
            return Latency::default();
        }
        let n = v.len();
        let us = |ps: u64| ps as f64 * 1e-6;
        let (mut sum, mut lo, mut hi) = (0u128, u64::MAX, 0u64);
        for &x in v {
            sum += x as u128;
            lo = lo.min(x);
            hi = hi.max(x);
        }
        let rank = |p: f64| (((n as f64) * p).ceil() as usize).clamp(1, n) - 1;
        let ranks = [rank(0.5), rank(0.9), rank(0.99), rank(0.999)];
        let mut q = Vec::with_capacity(ranks.len());
        values_at_ranks(v, lo, hi, &ranks, &mut q);
        Latency {
            count: n as u64,
            mean_us: sum as f64 / n as f64 * 1e-6,
            p50_us: us(q[0]),
            p90_us: us(q[1]),
            p99_us: us(q[2]),
            p99_9_us: us(q[3]),
            max_us: us(hi),
        }
    }
}

/// Bits of the value range one counting pass of [`values_at_ranks`] tells apart.
const RANK_BITS: u32 = 12;

/// Push onto `out` the values of `ranks` (ascending, each below `v.len()`) in `v` sorted, all
/// of `v` lying in `lo..=hi`. A pass counts the values per bucket of the range (its top
/// [`RANK_BITS`] bits), which gives each rank's bucket and its rank within it; a second pass
/// gathers the few buckets asked for (with their least and greatest values), and each is
/// taken the same way, down to buckets of one value. The values are read, never reordered.
pub fn values_at_ranks(v: &[u64], lo: u64, hi: u64, ranks: &[usize], out: &mut Vec<u64>) {
    if lo == hi {
        out.extend(ranks.iter().map(|_| lo));
        return;
    }
    if v.len() <= 64 {
        let mut s = v.to_vec();
        s.sort_unstable();
        out.extend(ranks.iter().map(|&r| s[r]));
        return;
    }
    const B: usize = 1 << RANK_BITS;
    let shift = (64 - (hi - lo).leading_zeros()).saturating_sub(RANK_BITS);
    let bucket = |x: u64| ((x - lo) >> shift) as usize & (B - 1);
    let mut counts = vec![0usize; B];
    for &x in v {
        counts[bucket(x)] += 1;
    }
    // Each rank's bucket, and the values below that bucket.
    let mut targets: Vec<(usize, usize)> = Vec::with_capacity(ranks.len());
    let (mut b, mut below) = (0, 0);
    for &r in ranks {
        while below + counts[b] <= r {
            below += counts[b];
            b += 1;
        }
        targets.push((b, below));
    }
    // Gather the buckets asked for (each once), with their least and greatest values.
    // Per bucket: 1 + its place in `bufs`, 0 when not asked for (at most B buckets).
    let mut which = vec![0u16; B];
    let mut bufs: Vec<(Vec<u64>, u64, u64)> = Vec::new();
    for &(b, _) in &targets {
        if which[b] == 0 {
            bufs.push((Vec::with_capacity(counts[b]), u64::MAX, 0));
            which[b] = bufs.len() as u16;
        }
    }
    for &x in v {
        let t = which[bucket(x)];
        if t != 0 {
            let (buf, l, h) = &mut bufs[t as usize - 1];
            buf.push(x);
            *l = (*l).min(x);
            *h = (*h).max(x);
        }
    }
    let mut i = 0;
    while i < targets.len() {
        let (b, below) = targets[i];
        let k = targets[i..].iter().take_while(|t| t.0 == b).count();
        let within: Vec<usize> = ranks[i..i + k].iter().map(|&r| r - below).collect();
        let (buf, l, h) = &bufs[which[b] as usize - 1];
        values_at_ranks(buf, *l, *h, &within, out);
        i += k;
    }
}

/// Mean time per swap-in fault of each step, in µs (seed 003's table; `device` is the time the
/// fault waited for the device, measured).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Breakdown {
    pub lookup_us: f64,
    pub swap_read_us: f64,
    pub device_us: f64,
    pub page_reuse_us: f64,
    pub mapping_us: f64,
    pub slot_free_us: f64,
    pub mmu_update_us: f64,
    pub total_us: f64,
    /// Share of the total that is not the device read (seed 003's "OS overhead").
    pub software_share: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Faults {
    pub accesses: u64,
    /// First touches: a new page or the zero page (`do_anonymous_page`).
    pub minor: u64,
    /// Swap-ins that read the device.
    pub major: u64,
    /// Faults that found their page in the swap cache (read ahead, or not yet written out).
    pub swap_cache_hits: u64,
    /// Of those, pages brought in by read-ahead (`PG_readahead`).
    pub readahead_hits: u64,
    /// Write faults on a page mapped read-only from the swap cache (`do_wp_page` reusing it).
    pub write_protect: u64,
    pub per_second: f64,
    /// The other slots of each major fault's aligned read-ahead block (2^page_cluster slots,
    /// the target left out), summed over the faults: why read-ahead reads what it reads.
    pub readahead_block: ReadaheadBlock,
}

/// The neighbours of a faulting slot in its aligned read-ahead block, summed over major faults.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReadaheadBlock {
    /// Read with the target (in use, not in memory, in the run `valid_swaphandles` gives).
    pub read: u64,
    /// In use and already in the swap cache: no I/O (they split a run).
    pub cached: u64,
    /// In use and not in memory, but cut off from the target by a free slot (2.6.32).
    pub cut_off: u64,
    /// Free slots: never used, or freed (a write fault, swap more than half full, an exit).
    pub free: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Reclaim {
    pub kswapd_wakeups: u64,
    pub kswapd_scanned: u64,
    pub direct_reclaims: u64,
    pub direct_scanned: u64,
    /// Time the application spent in direct reclaim, waits included.
    pub direct_stall_s: f64,
    /// CPU time of reclaim, kswapd's and direct (`cost.reclaim_*`; absent when 0, as by
    /// default).
    #[serde(skip_serializing_if = "is_zero")]
    pub cpu_s: f64,
    /// Waits after a failed reclaim (congestion wait, reclaim throttle, or the next write).
    pub waits: u64,
    /// Of those, 5.16's throttles (modern era): on writeback (HZ/10) and for no progress
    /// (one jiffy).
    pub throttle_writeback: u64,
    pub throttle_noprogress: u64,
    /// Time spent in those waits: by the application, by kswapd.
    pub app_wait_s: f64,
    pub kswapd_wait_s: f64,
    /// Pages freed at once (clean), and when their writeback ended.
    pub freed_clean: u64,
    pub freed_after_writeback: u64,
    pub activated: u64,
    /// Pages that found the swap area full.
    pub swap_full: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Io {
    pub requests: u64,
    pub pages: u64,
    pub bytes: u64,
    pub latency: Latency,
    /// (request size in bytes, requests), ascending.
    pub size_histogram: Vec<(u64, u64)>,
    /// (inter-request distance upper bound in bytes, requests): 0 is sequential (the request
    /// starts where the previous one of its kind ended); else the smallest power of two of at
    /// least 4 KiB that is at least the distance.
    pub ird_histogram: Vec<(u64, u64)>,
    /// Each request's time on the device alone, without the wait behind others: from the
    /// later of its submission and the completion before it (of any kind) to its own
    /// completion. On a device that serves one request at a time (an SCM chip, the analytic
    /// NAND model) this is its service time, what seed 003's trace-driven "Performance
    /// Simulation Method" charges each request; on a parallel device it is the request's share
    /// of the busy time.
    pub service: Latency,
    /// The sum of those times.
    pub service_total_s: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SwapOut {
    pub pages: u64,
    /// From the first write's submission to the last write's completion.
    pub time_s: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Lifetime {
    pub endurance: u64,
    pub without_wear_levelling_h: f64,
    pub without_wear_levelling_y: f64,
    pub with_wear_levelling_h: f64,
    pub with_wear_levelling_y: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Wear {
    /// Page writes before the count started (`pc_mix.aging_rounds`): they aged the swap area
    /// and are in none of the result's other figures.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub aging_page_writes: u64,
    /// Simulated time at which the count started (the end of the aging rounds); the result's
    /// times, the lifetimes' included, are the time after it.
    #[serde(skip_serializing_if = "is_zero")]
    pub counted_from_s: f64,
    pub page_writes: u64,
    pub pages_written: u64,
    pub max_writes_per_page: u64,
    pub mean_writes_per_page: f64,
    /// (writes, pages written that many times).
    pub histogram: Vec<(u64, u64)>,
    /// Swap slots in use, averaged over the slot allocations of the counted window: how full
    /// the area was where the allocator looked.
    pub slots_in_use_mean: f64,
    /// Allocations in the counted window that handed out a slot below the one before: the
    /// 2.6.32 scan coming round to the start of the area or finding its free run behind the
    /// cursor (on the modern era, any lower slot). A slot is written again only after the
    /// allocator has come back to it, so on 2.6.32 the most-written page is written at most
    /// the returns + 1 times.
    pub scan_returns: u64,
    /// The rule: a page wears out after `endurance` writes; the run's write rate continues.
    /// Without wear levelling the most-written page sets the life (endurance x run time /
    /// max writes per page); with ideal levelling over the pages written, the mean does.
    pub rule: &'static str,
    pub lifetime: Vec<Lifetime>,
}

/// A paging run's figures. With `pc_mix.aging_rounds` they cover the counted rounds only (from
/// `wear.counted_from_s`), except `wall_seconds`, `accesses_per_wall_second` (the whole run's
/// speed) and `oracle_mismatches` (every swap-in checked).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SwapResult {
    pub schema: &'static str,
    pub device: String,
    pub era: String,
    /// What ended a 2.6.32 congestion wait early in this run (`auto` resolved by the device).
    pub congestion_wake: String,
    pub memory_pages: u64,
    pub swap_slots: u64,
    pub watermarks: super::config::Watermarks,
    pub distinct_pages: u64,
    pub seed: u64,
    /// Simulated time of the application (its last access done).
    pub simulated_time_s: f64,
    /// The application's time without swapping: hits and first-touch faults only.
    pub baseline_time_s: f64,
    /// Simulated time over the baseline; 0 when the baseline is 0 (no first touches and free
    /// accesses, as in the counted rounds after aging), where it is not defined.
    pub slowdown: f64,
    pub faults: Faults,
    pub swap_in_latency: Latency,
    pub swap_in_breakdown: Breakdown,
    pub swap_out: SwapOut,
    pub reclaim: Reclaim,
    pub reads: Io,
    pub writes: Io,
    pub trims: u64,
    /// Block merges the analytic NAND model charged (absent for other devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_merges: Option<u64>,
    pub wear: Wear,
    /// The steady state the device's `fill = "steady-state"` preconditioning reached (as a
    /// job's `device.steady_state`); absent for other preconditioning and analytic devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::stats::result::SteadyStateResult>,
    /// Swapped-in pages whose contents were not the last written (must be 0).
    pub oracle_mismatches: u64,
    pub wall_seconds: f64,
    pub accesses_per_wall_second: f64,
}

/// One swap request, as the block trace records it.
#[derive(Clone, Copy, Debug)]
pub struct IoRecord {
    /// 0 read, 1 write, 2 trim.
    pub op: u8,
    pub offset: u64,
    pub len: u64,
    pub submit_ps: u64,
    pub done_ps: u64,
}

/// Each record's time on the device alone (see [`Io::service`]), in the records' order.
pub fn service_ps(trace: &[IoRecord]) -> Vec<u64> {
    let mut service = vec![0; trace.len()];
    let mut prev_done = 0;
    let mut time = |r: &IoRecord, s: &mut u64| {
        *s = r.done_ps.saturating_sub(r.submit_ps.max(prev_done));
        prev_done = r.done_ps;
    };
    // Records completed in submission order (a serial device's always are) are taken as they
    // lie: the order by completion time, ties by position, is theirs, so no sort.
    if trace.windows(2).all(|w| w[0].done_ps <= w[1].done_ps) {
        for (r, s) in trace.iter().zip(&mut service) {
            time(r, s);
        }
        return service;
    }
    let mut by_done: Vec<usize> = (0..trace.len()).collect();
    by_done.sort_by_key(|&i| (trace[i].done_ps, i));
    for i in by_done {
        time(&trace[i], &mut service[i]);
    }
    service
}

/// The figures of a run's requests: reads, writes (each [`Io`]), trims, and the writes' span
/// (the first one's submission, the last completion), from one pass over the records.
pub struct IoFigures {
    pub reads: Io,
    pub writes: Io,
    pub trims: u64,
    pub write_span_ps: Option<(u64, u64)>,
}

/// One kind's figures as the pass gathers them.
struct IoPass {
    io: Io,
    /// Requests per size in pages (a swap request is whole pages; any other size in a map).
    pages_sizes: Vec<u64>,
    sizes: std::collections::BTreeMap<u64, u64>,
    /// Distances per power of two (index: its log2, 0 for no distance).
    irds: [u64; 64],
    lat: Vec<u64>,
    svc: Vec<u64>,
    prev_end: Option<u64>,
}

impl IoPass {
    fn new() -> IoPass {
        IoPass {
            io: Io::default(),
            pages_sizes: Vec::new(),
            sizes: std::collections::BTreeMap::new(),
            irds: [0; 64],
            lat: Vec::new(),
            svc: Vec::new(),
            prev_end: None,
        }
    }

    /// Inlined into the one pass over the records, which calls it per read or write (a call
    /// per record cost about 17 instructions of its own).
    #[inline(always)]
    fn add(&mut self, r: &IoRecord, s: u64) {
        self.svc.push(s);
        self.lat.push(r.done_ps.saturating_sub(r.submit_ps));
        let io = &mut self.io;
        io.requests += 1;
        io.bytes += r.len;
        io.pages += r.len / super::PAGE_BYTES;
        let p = (r.len / super::PAGE_BYTES) as usize;
        if r.len.is_multiple_of(super::PAGE_BYTES) && p < 1 << 16 {
            if self.pages_sizes.len() <= p {
                self.pages_sizes.resize(p + 1, 0);
            }
            self.pages_sizes[p] += 1;
        } else {
            *self.sizes.entry(r.len).or_insert(0) += 1;
        }
        if let Some(e) = self.prev_end {
            // 0, or the next power of two of at least 4096 (2^63 for a distance past it).
            let d = r.offset.abs_diff(e);
            let b = if d == 0 {
                0
            } else {
                (64 - (d - 1).leading_zeros()).clamp(12, 63) as usize
            };
            self.irds[b] += 1;
        }
        self.prev_end = Some(r.offset + r.len);
    }

    fn finish(mut self) -> Io {
        let mut io = self.io;
        io.latency = Latency::of(&self.lat);
        io.service_total_s = self.svc.iter().map(|&s| s as f64).sum::<f64>() * 1e-12;
        io.service = Latency::of(&self.svc);
        for (p, &n) in self.pages_sizes.iter().enumerate().filter(|(_, &n)| n > 0) {
            *self.sizes.entry(p as u64 * super::PAGE_BYTES).or_insert(0) += n;
        }
        io.size_histogram = self.sizes.into_iter().collect();
        io.ird_histogram = (0..64)
            .filter(|&b| self.irds[b] > 0)
            .map(|b| (if b == 0 { 0 } else { 1u64 << b }, self.irds[b]))
            .collect();
        io
    }
}

/// Size and distance histograms, latencies and service times (`service`, from
/// [`service_ps`] over the whole trace) of the reads and of the writes, the trims counted,
/// in one pass over the records.
pub fn io_figures(trace: &[IoRecord], service: &[u64]) -> IoFigures {
    let mut kinds = [IoPass::new(), IoPass::new()];
    let (mut trims, mut span) = (0, None::<(u64, u64)>);
    for (r, &s) in trace.iter().zip(service) {
        match r.op {
            0 => kinds[0].add(r, s),
            1 => {
                kinds[1].add(r, s);
                span = Some(span.map_or((r.submit_ps, r.done_ps), |(a, b)| {
                    (a.min(r.submit_ps), b.max(r.done_ps))
                }));
            }
            2 => trims += 1,
            _ => {}
        }
    }
    let [reads, writes] = kinds;
    IoFigures {
        reads: reads.finish(),
        writes: writes.finish(),
        trims,
        write_span_ps: span,
    }
}

/// Writes per page and the lifetime table for `run_s` seconds of the run.
pub fn wear(per_slot: &[u32], run_s: f64, endurance: &[u64]) -> Wear {
    let mut w = Wear {
        rule: "without wear levelling: endurance x run time / max writes per page; with ideal wear levelling over the pages written: endurance x run time / mean writes per page; 8760 h per year",
        ..Wear::default()
    };
    // Pages per write count: indexed by the count up to 4096 writes, in a map past it.
    let mut few = [0u64; 4096];
    let mut many = std::collections::BTreeMap::new();
    for &n in per_slot.iter().filter(|&&n| n > 0) {
        w.page_writes += n as u64;
        w.pages_written += 1;
        w.max_writes_per_page = w.max_writes_per_page.max(n as u64);
        match few.get_mut(n as usize) {
            Some(c) => *c += 1,
            None => *many.entry(n as u64).or_insert(0u64) += 1,
        }
    }
    w.histogram = (1..few.len() as u64)
        .filter(|&n| few[n as usize] > 0)
        .map(|n| (n, few[n as usize]))
        .chain(many)
        .collect();
    if w.pages_written > 0 {
        w.mean_writes_per_page = w.page_writes as f64 / w.pages_written as f64;
        w.lifetime = lifetimes(
            run_s / 3600.0,
            w.max_writes_per_page as f64,
            w.mean_writes_per_page,
            endurance,
        );
    }
    w
}

/// The lifetime table: `run_h` hours of running wrote the most-written page `max` times and
/// the average page `mean` times.
pub fn lifetimes(run_h: f64, max: f64, mean: f64, endurance: &[u64]) -> Vec<Lifetime> {
    endurance
        .iter()
        .map(|&e| {
            let without = e as f64 * run_h / max;
            let with = e as f64 * run_h / mean;
            Lifetime {
                endurance: e,
                without_wear_levelling_h: without,
                without_wear_levelling_y: without / 8760.0,
                with_wear_levelling_h: with,
                with_wear_levelling_y: with / 8760.0,
            }
        })
        .collect()
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_lifetime_table_without_wear_levelling() {
        // Seed 003: 2 h, max 4 writes per page -> SCM (10^6) 500,000 h = 57.1 y, SLC 5.7 y,
        // MLC 0.57 y.
        let t = lifetimes(2.0, 4.0, 1.32, &[1_000_000, 100_000, 10_000]);
        assert_eq!(t[0].without_wear_levelling_h, 500_000.0);
        assert_eq!(format!("{:.1}", t[0].without_wear_levelling_y), "57.1");
        assert_eq!(format!("{:.1}", t[1].without_wear_levelling_y), "5.7");
        assert_eq!(format!("{:.2}", t[2].without_wear_levelling_y), "0.57");
    }

    #[test]
    fn histograms_of_sizes_and_distances() {
        let r = |op, offset, len| IoRecord {
            op,
            offset,
            len,
            submit_ps: 0,
            done_ps: 1,
        };
        let t = [
            r(1, 0, 8192),
            r(1, 8192, 4096),
            r(0, 0, 4096),
            r(1, 65536, 4096),
        ];
        let w = io_figures(&t, &service_ps(&t)).writes;
        assert_eq!(w.size_histogram, vec![(4096, 2), (8192, 1)]);
        // 8192 follows 0..8192: 0; 65536 follows 8192..12288: 53248 -> 65536.
        assert_eq!(w.ird_histogram, vec![(0, 1), (65536, 1)]);
    }

    #[test]
    fn service_time_leaves_out_the_wait_behind_earlier_requests() {
        let r = |op, submit_ps, done_ps| IoRecord {
            op,
            offset: 0,
            len: 4096,
            submit_ps,
            done_ps,
        };
        // A serial device: a write submitted at 0 takes 100; a read submitted at 10 waits for
        // it and takes 30 (done at 130); a read submitted at 500, on an idle device, takes 40.
        // Records in submission order, and one completing out of order: a trim submitted at
        // 20 done at 120, so the read's time starts at 120.
        let t = [r(1, 0, 100), r(0, 10, 130), r(2, 20, 120), r(0, 500, 540)];
        let svc = service_ps(&t);
        assert_eq!(svc, vec![100, 10, 20, 40]);
        let reads = io_figures(&t, &svc).reads;
        assert_eq!(reads.service.count, 2);
        assert_eq!(reads.service_total_s, 50e-12);
        assert!((reads.latency.max_us - 120e-6).abs() < 1e-15);
    }

    /// Service times of records already in completion order (taken as they lie) are those the
    /// sort by completion time gives; ties included.
    #[test]
    fn service_time_of_records_in_completion_order_needs_no_sort() {
        let r = |submit_ps, done_ps| IoRecord {
            op: 0,
            offset: 0,
            len: 4096,
            submit_ps,
            done_ps,
        };
        let t = [r(0, 100), r(10, 130), r(20, 130), r(500, 540), r(505, 540)];
        assert_eq!(service_ps(&t), vec![100, 30, 0, 40, 0]);
        // The same records with one out of order take the sort; the rest keep their times.
        let u = [r(0, 100), r(10, 130), r(20, 120), r(500, 540)];
        assert_eq!(service_ps(&u), vec![100, 10, 20, 40]);
    }

    /// The sorted-slice figures the percentiles were first computed with.
    fn by_sorting(v: &[u64]) -> (Vec<u64>, u128) {
        let mut v = v.to_vec();
        v.sort_unstable();
        let n = v.len();
        let rank = |p: f64| v[(((n as f64) * p).ceil() as usize).clamp(1, n) - 1];
        (
            vec![rank(0.5), rank(0.9), rank(0.99), rank(0.999), v[n - 1]],
            v.iter().map(|&x| x as u128).sum(),
        )
    }

    /// The figures of one kind of request as they were first computed, a pass per kind with
    /// a map per size and per distance: the oracle of [`io_figures`].
    fn plain_io(trace: &[IoRecord], service: &[u64], op: u8) -> Io {
        let mut io = Io::default();
        let mut sizes = std::collections::BTreeMap::new();
        let mut irds = std::collections::BTreeMap::new();
        let (mut lat, mut svc) = (Vec::new(), Vec::new());
        let mut prev_end: Option<u64> = None;
        for (r, &s) in trace.iter().zip(service).filter(|(r, _)| r.op == op) {
            svc.push(s);
            lat.push(r.done_ps.saturating_sub(r.submit_ps));
            io.requests += 1;
            io.bytes += r.len;
            io.pages += r.len / 4096;
            *sizes.entry(r.len).or_insert(0u64) += 1;
            if let Some(e) = prev_end {
                let d = r.offset.abs_diff(e);
                let b = match d {
                    0 => 0,
                    _ => d.checked_next_power_of_two().unwrap_or(1 << 63).max(4096),
                };
                *irds.entry(b).or_insert(0u64) += 1;
            }
            prev_end = Some(r.offset + r.len);
        }
        io.latency = Latency::of(&lat);
        io.service_total_s = svc.iter().map(|&s| s as f64).sum::<f64>() * 1e-12;
        io.service = Latency::of(&svc);
        io.size_histogram = sizes.into_iter().collect();
        io.ird_histogram = irds.into_iter().collect();
        io
    }

    /// Values with many repeats, a narrow or a wide range, or both ends of u64.
    fn latencies() -> impl proptest::strategy::Strategy<Value = Vec<u64>> {
        use proptest::prelude::*;
        prop_oneof![
            proptest::collection::vec(0u64..2000, 1..3000),
            proptest::collection::vec(any::<u64>(), 1..3000),
            proptest::collection::vec(
                prop_oneof![Just(13_000_000u64), Just(18_000_000), 0u64..1 << 40],
                1..5000
            ),
            proptest::collection::vec(
                prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::MAX - 1)],
                1..300
            ),
        ]
    }

    proptest::proptest! {
        /// Percentiles by counting are those of the sorted values.
        #[test]
        fn percentiles_by_counting_match_sorting(v in latencies()) {
            let l = Latency::of(&v);
            let (q, sum) = by_sorting(&v);
            let us = |ps: u64| ps as f64 * 1e-6;
            proptest::prop_assert_eq!(
                vec![l.p50_us, l.p90_us, l.p99_us, l.p99_9_us, l.max_us],
                q.iter().map(|&x| us(x)).collect::<Vec<_>>()
            );
            proptest::prop_assert_eq!(l.mean_us, sum as f64 / v.len() as f64 * 1e-6);
            // Every rank, not only the four.
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let ranks: Vec<usize> = (0..v.len()).collect();
            let mut got = Vec::new();
            values_at_ranks(&v, sorted[0], sorted[v.len() - 1], &ranks, &mut got);
            proptest::prop_assert_eq!(got, sorted);
        }

        /// The one pass over both kinds gives what a pass per kind with maps gave: sizes,
        /// distances, latencies, service times; trims counted; the writes' span.
        #[test]
        fn one_pass_matches_a_pass_per_kind(
            reqs in proptest::collection::vec(
                (0u8..3, 0u64..1 << 40, 1u64..300, proptest::bool::ANY, 0u64..1000, 0u64..5000),
                0..400,
            ),
        ) {
            // Page multiples and odd sizes; completions in and out of order.
            let t: Vec<IoRecord> = reqs
                .iter()
                .map(|&(op, offset, n, pages, submit_ps, took)| IoRecord {
                    op,
                    offset,
                    len: if pages { n * 4096 } else { n },
                    submit_ps,
                    done_ps: submit_ps + took,
                })
                .collect();
            let svc = service_ps(&t);
            let f = io_figures(&t, &svc);
            let json = |io: &Io| serde_json::to_string(io).unwrap();
            proptest::prop_assert_eq!(json(&f.reads), json(&plain_io(&t, &svc, 0)));
            proptest::prop_assert_eq!(json(&f.writes), json(&plain_io(&t, &svc, 1)));
            proptest::prop_assert_eq!(f.trims, t.iter().filter(|r| r.op == 2).count() as u64);
            let w: Vec<&IoRecord> = t.iter().filter(|r| r.op == 1).collect();
            let span = w
                .iter()
                .map(|r| r.submit_ps)
                .min()
                .zip(w.iter().map(|r| r.done_ps).max());
            proptest::prop_assert_eq!(f.write_span_ps, span);
        }

        /// The wear histogram by count is the map's, past 4096 writes too.
        #[test]
        fn wear_histogram_matches_a_map(
            per_slot in proptest::collection::vec(
                proptest::prop_oneof![0u32..6, 4090u32..4100, proptest::prelude::any::<u32>()],
                0..500,
            ),
        ) {
            let w = wear(&per_slot, 3600.0, &[1000]);
            let mut hist = std::collections::BTreeMap::new();
            for &n in per_slot.iter().filter(|&&n| n > 0) {
                *hist.entry(n as u64).or_insert(0u64) += 1;
            }
            proptest::prop_assert_eq!(&w.histogram, &hist.into_iter().collect::<Vec<_>>());
            proptest::prop_assert_eq!(
                w.max_writes_per_page,
                per_slot.iter().map(|&n| n as u64).max().unwrap_or(0)
            );
            proptest::prop_assert_eq!(w.pages_written, per_slot.iter().filter(|&&n| n > 0).count() as u64);
        }
    }
}
