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
    /// From latencies in picoseconds (reordered here). Each percentile is the value of its
    /// rank in sorted order, found by selection rather than a whole sort: the median over the
    /// whole slice, then each higher rank among the values above the last one found.
    pub fn of(v: &mut [u64]) -> Latency {
        if v.is_empty() {
            return Latency::default();
        }
        let n = v.len();
        let us = |ps: u64| ps as f64 * 1e-6;
        let sum: u128 = v.iter().map(|&x| x as u128).sum();
        let max = v.iter().copied().max().unwrap_or(0);
        let rank = |p: f64| (((n as f64) * p).ceil() as usize).clamp(1, n) - 1;
        let mut q = [0.0; 4];
        let mut from = 0;
        for (i, p) in [0.5, 0.9, 0.99, 0.999].into_iter().enumerate() {
            // Ranks only rise, so rank `r` lies among the values from `from` on.
            let r = rank(p);
            let (_, &mut x, _) = v[from..].select_nth_unstable(r - from);
            q[i] = us(x);
            from = r;
        }
        Latency {
            count: n as u64,
            mean_us: sum as f64 / n as f64 * 1e-6,
            p50_us: q[0],
            p90_us: q[1],
            p99_us: q[2],
            p99_9_us: q[3],
            max_us: us(max),
        }
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

/// Size and distance histograms, latencies and service times (`service`, from
/// [`service_ps`] over the whole trace) of the records of `op`.
pub fn io_stats(trace: &[IoRecord], service: &[u64], op: u8) -> Io {
    let mut io = Io::default();
    // Sizes counted per page count (a swap request is whole pages; any other size in a map),
    // distances per power of two (index: its log2, 0 for no distance): no map lookup per
    // request.
    let mut pages_sizes: Vec<u64> = Vec::new();
    let mut sizes = std::collections::BTreeMap::new();
    let mut irds = [0u64; 64];
    let mut lat = Vec::new();
    let mut svc = Vec::new();
    let mut prev_end: Option<u64> = None;
    for (r, &s) in trace.iter().zip(service).filter(|(r, _)| r.op == op) {
        svc.push(s);
        io.requests += 1;
        io.bytes += r.len;
        io.pages += r.len / super::PAGE_BYTES;
        let p = (r.len / super::PAGE_BYTES) as usize;
        if r.len.is_multiple_of(super::PAGE_BYTES) && p < 1 << 16 {
            if pages_sizes.len() <= p {
                pages_sizes.resize(p + 1, 0);
            }
            pages_sizes[p] += 1;
        } else {
            *sizes.entry(r.len).or_insert(0u64) += 1;
        }
        if let Some(e) = prev_end {
            let d = r.offset.abs_diff(e);
            // 0, or the next power of two of at least 4096 (2^63 for a distance past it).
            let b = if d == 0 {
                0
            } else {
                d.checked_next_power_of_two()
                    .map_or(63, |b| b.max(4096).trailing_zeros() as usize)
            };
            irds[b] += 1;
        }
        prev_end = Some(r.offset + r.len);
        lat.push(r.done_ps.saturating_sub(r.submit_ps));
    }
    io.latency = Latency::of(&mut lat);
    io.service_total_s = svc.iter().map(|&s| s as f64).sum::<f64>() * 1e-12;
    io.service = Latency::of(&mut svc);
    for (p, &n) in pages_sizes.iter().enumerate().filter(|(_, &n)| n > 0) {
        *sizes.entry(p as u64 * super::PAGE_BYTES).or_insert(0) += n;
    }
    io.size_histogram = sizes.into_iter().collect();
    io.ird_histogram = (0..64)
        .filter(|&b| irds[b] > 0)
        .map(|b| (if b == 0 { 0 } else { 1u64 << b }, irds[b]))
        .collect();
    io
}

/// Writes per page and the lifetime table for `run_s` seconds of the run.
pub fn wear(per_slot: &[u32], run_s: f64, endurance: &[u64]) -> Wear {
    let mut w = Wear {
        rule: "without wear levelling: endurance x run time / max writes per page; with ideal wear levelling over the pages written: endurance x run time / mean writes per page; 8760 h per year",
        ..Wear::default()
    };
    let mut hist = std::collections::BTreeMap::new();
    for &n in per_slot.iter().filter(|&&n| n > 0) {
        w.page_writes += n as u64;
        w.pages_written += 1;
        w.max_writes_per_page = w.max_writes_per_page.max(n as u64);
        *hist.entry(n as u64).or_insert(0u64) += 1;
    }
    w.histogram = hist.into_iter().collect();
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
        let w = io_stats(&t, &service_ps(&t), 1);
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
        let reads = io_stats(&t, &svc, 0);
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

    /// The sorted-slice figures the histograms and percentiles were first computed with.
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

    proptest::proptest! {
        /// Percentiles by selection are those of the sorted values; the histograms by page
        /// count and by power of two are those of a map per size and per distance.
        #[test]
        fn selection_and_counting_match_sorting_and_maps(
            v in proptest::collection::vec(0u64..2000, 1..3000),
            reqs in proptest::collection::vec((0u64..1 << 40, 1u64..300, proptest::bool::ANY), 0..200),
        ) {
            let l = Latency::of(&mut v.clone());
            let (q, sum) = by_sorting(&v);
            let us = |ps: u64| ps as f64 * 1e-6;
            proptest::prop_assert_eq!(
                vec![l.p50_us, l.p90_us, l.p99_us, l.p99_9_us, l.max_us],
                q.iter().map(|&x| us(x)).collect::<Vec<_>>()
            );
            proptest::prop_assert_eq!(l.mean_us, sum as f64 / v.len() as f64 * 1e-6);
            // Page multiples and odd sizes.
            let t: Vec<IoRecord> = reqs
                .iter()
                .map(|&(offset, n, pages)| IoRecord {
                    op: 1,
                    offset,
                    len: if pages { n * 4096 } else { n },
                    submit_ps: 0,
                    done_ps: 1,
                })
                .collect();
            let io = io_stats(&t, &service_ps(&t), 1);
            let mut sizes = std::collections::BTreeMap::new();
            let mut irds = std::collections::BTreeMap::new();
            for (i, r) in t.iter().enumerate() {
                *sizes.entry(r.len).or_insert(0u64) += 1;
                if i > 0 {
                    let d = r.offset.abs_diff(t[i - 1].offset + t[i - 1].len);
                    let b = if d == 0 { 0 } else { d.next_power_of_two().max(4096) };
                    *irds.entry(b).or_insert(0u64) += 1;
                }
            }
            proptest::prop_assert_eq!(io.size_histogram, sizes.into_iter().collect::<Vec<_>>());
            proptest::prop_assert_eq!(io.ird_histogram, irds.into_iter().collect::<Vec<_>>());
        }
    }
}
