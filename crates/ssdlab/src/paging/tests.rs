//! Whole-model tests: the oracle (contents come back, the swap cache invariant), determinism,
//! reclaim behaviour on hand-made sequences.

use super::*;
use crate::sim::SimTime;
use proptest::prelude::*;

fn fixed(cap: u64) -> FixedBackend {
    // 10 us per request + 10 us per page read, 100 + 50 per page written.
    let us = SimTime::from_us;
    FixedBackend::new(cap, (us(10), us(10)), (us(100), us(50)))
}

fn cfg(mem_pages: u64, swap_pages: u64) -> PagingConfig {
    let mut c = PagingConfig::new(mem_pages * 4096, swap_pages * 4096);
    c.randomize_start = false;
    c
}

fn run_checked(c: &PagingConfig, w: &Workload) -> (SwapOutput, std::result::Result<(), String>) {
    let mut sim = sim::PagingSim::new(c, fixed(1 << 40), &w.accesses, w.pages, 1).unwrap();
    sim.run(&mut |_, _| true).unwrap();
    let chk = sim.check();
    let out = SwapOutput {
        result: std::mem::take(&mut sim.res),
        swap_in_ps: std::mem::take(&mut sim.swap_in_ps),
        trace: std::mem::take(&mut sim.trace),
    };
    (out, chk)
}

/// Write every page of `n` once, then read them all back, twice.
fn sweep(n: u32) -> Workload {
    let mut v: Vec<(u32, bool)> = (0..n).map(|p| (p, true)).collect();
    for _ in 0..2 {
        v.extend((0..n).map(|p| (p, false)));
    }
    Workload::from_pages(v)
}

#[test]
fn pages_swapped_out_come_back_with_their_contents() {
    // 256 frames (min 32, low 40, high 48), 1000 pages written then read twice.
    for era in [Era::Linux2632, Era::Modern] {
        let mut c = cfg(256, 4096);
        c.era = era;
        let (out, chk) = run_checked(&c, &sweep(1000));
        chk.unwrap();
        let r = &out.result;
        assert_eq!(r.oracle_mismatches, 0);
        assert!(r.faults.major > 0, "{era:?}: no swap-ins");
        assert!(
            r.writes.pages >= 1000 - 256,
            "{era:?}: {} pages written",
            r.writes.pages
        );
        assert_eq!(r.faults.minor, 1000);
    }
}

#[test]
fn memory_that_fits_does_not_swap() {
    let (out, chk) = run_checked(&cfg(2048, 4096), &sweep(1000));
    chk.unwrap();
    assert_eq!(out.result.faults.major, 0);
    assert_eq!(out.result.writes.requests, 0);
    // 1000 minor faults of 6 us.
    assert_eq!(out.result.simulated_time_s, 1000.0 * 6e-6);
}

#[test]
fn same_inputs_same_result() {
    let w = sweep(3000);
    let mut c = cfg(512, 8192);
    c.randomize_start = true;
    let a = run_on(&c, fixed(1 << 40), &w, 7).unwrap();
    let b = run_on(&c, fixed(1 << 40), &w, 7).unwrap();
    let strip = |mut r: SwapResult| {
        r.wall_seconds = 0.0;
        r.accesses_per_wall_second = 0.0;
        serde_json::to_string(&r).unwrap()
    };
    assert_eq!(strip(a.result), strip(b.result));
    assert_eq!(a.swap_in_ps, b.swap_in_ps);
}

#[test]
fn swap_larger_than_the_device_is_refused() {
    let c = cfg(256, 4096);
    let w = sweep(10);
    let e = run_on(&c, fixed(4096 * 100), &w, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("swap_size") && e.contains("do not fit"), "{e}");
}

#[test]
fn a_large_memory_costs_only_the_pages_touched() {
    // 4 TiB of memory (2^30 frames) for 1000 pages: frames were allocated up front, 25 bytes
    // each (25 GiB), and the run aborted.
    let (out, chk) = run_checked(&cfg(1 << 30, 4096), &sweep(1000));
    chk.unwrap();
    assert_eq!(out.result.memory_pages, 1 << 30);
    assert_eq!(out.result.faults.major, 0);
}

#[test]
fn out_of_memory_and_swap_is_an_error_not_a_hang() {
    // 256 frames, 64 slots: 1000 written pages cannot fit.
    let c = cfg(256, 64);
    let w = sweep(1000);
    let e = run_on(&c, fixed(1 << 40), &w, 1).err().unwrap().to_string();
    assert!(e.contains("out of memory and swap"), "{e}");
}

#[test]
fn kswapd_wakes_below_low_and_direct_reclaim_waits_below_min() {
    // 256 frames, 2.6.32 watermarks min 32, low 40, high 48. Writing 216 pages leaves 40
    // free: no wake. The 217th leaves 39 (< low + 1 before it): kswapd wakes.
    let c = cfg(256, 4096);
    let (out, _) = run_checked(&c, &Workload::from_pages((0..216).map(|p| (p, true))));
    assert_eq!(out.result.reclaim.kswapd_wakeups, 0);
    let (out, _) = run_checked(&c, &Workload::from_pages((0..217).map(|p| (p, true))));
    assert_eq!(out.result.reclaim.kswapd_wakeups, 1);
    // kswapd puts pages under writeback until free + writeback reach high (48): the first
    // batch is SWAP_CLUSTER_MAX (32) pages of the inactive list after refilling it.
    assert!(out.result.writes.pages >= 9, "{}", out.result.writes.pages);
    assert_eq!(out.result.reclaim.direct_reclaims, 0);
}

#[test]
fn congestion_wait_off_shortens_a_swap_out() {
    // A memory hog: 4000 pages through 256 frames. With the 2.6.32 congestion wait on, each
    // failed direct reclaim sleeps 100 ms (the queue is never congested); off, it goes on when
    // the next write ends.
    let w = Workload::from_pages((0..4000).map(|p| (p, true)));
    let c_on = cfg(256, 8192);
    let mut c_off = c_on.clone();
    c_off.congestion_wait = false;
    let on = run_on(&c_on, fixed(1 << 40), &w, 1).unwrap().result;
    let off = run_on(&c_off, fixed(1 << 40), &w, 1).unwrap().result;
    assert!(on.reclaim.waits > 0);
    assert!(
        off.simulated_time_s < on.simulated_time_s,
        "off {} on {}",
        off.simulated_time_s,
        on.simulated_time_s
    );
    assert!(
        on.reclaim.app_wait_s + on.reclaim.kswapd_wait_s
            > off.reclaim.app_wait_s + off.reclaim.kswapd_wait_s
    );
}

#[test]
fn the_516_throttle_is_chosen_as_reclaim_throttle_would() {
    use sim::{PagingSim, Throttle516};
    let pick = PagingSim::<FixedBackend>::throttle_516;
    // Pages under writeback at the inactive tail: WRITEBACK, for kswapd and direct reclaim.
    assert_eq!(pick(3, 0, false, 10, 100), Some(Throttle516::Writeback));
    assert_eq!(pick(1, 5, true, 0, 100), Some(Throttle516::Writeback));
    // No progress, more than half the reclaimable pages waiting for writeback: 2 x 51 > 100.
    assert_eq!(pick(0, 0, false, 51, 100), Some(Throttle516::NoProgress));
    // Exactly half (2 x 50 <= 100): skip_throttle_noprogress; progress, or kswapd: none.
    assert_eq!(pick(0, 0, false, 50, 100), None);
    assert_eq!(pick(0, 1, false, 99, 100), None);
    assert_eq!(pick(0, 0, true, 99, 100), None);
}

#[test]
fn modern_era_throttles_on_writeback_for_at_most_hz_over_10() {
    // The memory hog of the congestion test on the modern era: the failed passes meet pages
    // under writeback and throttle on it; each wait ends when 33 pages are written back or
    // after 100 ms, whichever is first. With 50 us per page written, 33 pages take a few ms.
    let w = Workload::from_pages((0..4000).map(|p| (p, true)));
    let mut c = cfg(256, 8192);
    c.era = Era::Modern;
    let r = run_on(&c, fixed(1 << 40), &w, 1).unwrap().result;
    assert!(r.reclaim.throttle_writeback > 0, "{:?}", r.reclaim);
    assert_eq!(r.oracle_mismatches, 0);
    let per_wait = (r.reclaim.app_wait_s + r.reclaim.kswapd_wait_s) / r.reclaim.waits as f64;
    assert!(per_wait < 0.1, "{per_wait}");
    // 2.6.32 on the same: no 5.16 throttle counted.
    let old = run_on(&cfg(256, 8192), fixed(1 << 40), &w, 1)
        .unwrap()
        .result;
    assert_eq!(
        old.reclaim.throttle_writeback + old.reclaim.throttle_noprogress,
        0
    );
    // HZ is checked against Kconfig's choices.
    let t = toml::toml! { memory = "4MiB"  swap_size = "4MiB"  hz = 200 };
    let e = PagingConfig::from_table(t).unwrap_err().to_string();
    assert!(
        e.contains("`hz`") && e.contains("200") && e.contains("Kconfig.hz"),
        "{e}"
    );
}

#[test]
fn reads_are_read_ahead_in_windows_of_eight() {
    // 2.6.32, page_cluster 3: pages written in order get consecutive slots; reading them back
    // in order reads aligned windows of 8 (32 KiB) after the first.
    let (out, chk) = run_checked(&cfg(256, 4096), &sweep(2000));
    chk.unwrap();
    let reads = &out.result.reads;
    let most = reads.size_histogram.iter().max_by_key(|x| x.1).unwrap();
    assert_eq!(most.0, 32 * 1024, "{:?}", reads.size_histogram);
    assert!(out.result.faults.readahead_hits > 0);
}

/// The read-ahead block census: every major fault looks at the 7 other slots of its aligned
/// block of 8 (fewer only in the block of the header slot). Reading pages back in the order
/// they were written reads whole blocks; writing each page as it comes back frees its slot, so
/// later faults find holes (`free`) and runs cut short (`cut_off`), and read less.
#[test]
fn the_readahead_block_census_tells_why_reads_are_short() {
    let census = |w: &Workload| {
        let (out, chk) = run_checked(&cfg(256, 4096), w);
        chk.unwrap();
        let f = out.result.faults;
        let b = f.readahead_block.clone();
        let sum = b.read + b.cached + b.cut_off + b.free;
        assert!(
            sum <= 7 * f.major && sum + f.major >= 7 * f.major,
            "{b:?}, {f:?}"
        );
        (b, f.major)
    };
    let (b, major) = census(&sweep(2000));
    assert!(
        b.read > 5 * major,
        "in order: whole blocks read, {b:?} over {major} faults"
    );
    // Every page written back once, then read back in a shuffled order and written at once.
    let n = 2000u32;
    let mut v: Vec<(u32, bool)> = (0..n).map(|p| (p, true)).collect();
    let mut order: Vec<u32> = (0..n).collect();
    let mut rng = crate::sim::Rng::stream(1, "test");
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    v.extend(order.iter().map(|&p| (p, true)));
    let (b, major) = census(&Workload::from_pages(v));
    assert!(
        b.free > b.read,
        "shuffled writes leave holes: {b:?} over {major} faults"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn random_streams_keep_the_invariants(
        accesses in proptest::collection::vec((0u32..600, any::<bool>()), 1..4000),
        modern in any::<bool>(),
        ssd in any::<bool>(),
        pc in 0u32..4,
        cw in any::<bool>(),
        sync in any::<bool>(),
    ) {
        let mut c = cfg(200, 2048);
        c.era = if modern { Era::Modern } else { Era::Linux2632 };
        c.solid_state = ssd;
        c.page_cluster = pc;
        c.congestion_wait = cw;
        c.synchronous_io = sync;
        let w = Workload::from_pages(accesses);
        let (out, chk) = run_checked(&c, &w);
        prop_assert_eq!(chk, Ok::<(), String>(()));
        prop_assert_eq!(out.result.oracle_mismatches, 0);
    }
}

/// `SwapSpec::resolve` (what a sweep checks before it runs) refuses what the run would refuse,
/// in one line naming the field, and its canonical JSON identifies the run: the same run given
/// two ways is the same text, another knob value another text.
#[test]
fn swap_spec_checks_before_the_run_and_names_the_run() {
    let spec = |dev: &str, mem: &str, swap: &str, sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        SwapSpec::resolve(dev, mem, swap, pcmix::NAME, &sets)
    };
    let one_line = |e: crate::error::Error, want: &[&str]| {
        let m = e.to_string();
        assert!(!m.contains('\n'), "{m}");
        for w in want {
            assert!(m.contains(w), "{m} lacks {w}");
        }
    };
    // A paging knob out of range, a device knob on an analytic part, a swap area larger than
    // the device (seed003-scm-400 holds 1 GiB), an unreadable trace.
    one_line(
        spec(
            "seed003-scm-400",
            "64MiB",
            "64MiB",
            &["swap.page_cluster=11"],
        )
        .err()
        .unwrap(),
        &["page_cluster", "11"],
    );
    one_line(
        spec(
            "seed003-slc-analytic",
            "64MiB",
            "64MiB",
            &["pcm.channels=2"],
        )
        .err()
        .unwrap(),
        &["pcm.channels=2", "no device knobs"],
    );
    one_line(
        spec("seed003-scm-400", "64MiB", "2GiB", &[]).err().unwrap(),
        &["swap_size", "2147483648", "1073741824"],
    );
    // A raw device (a host FTL's: physical pages) and a zoned one (writes at the write
    // pointer only) are refused before the run; their writes failed mid-run.
    one_line(
        spec("seed002-fusion", "64MiB", "64MiB", &[]).err().unwrap(),
        &[
            "seed002-fusion",
            "fusion device",
            "cannot overwrite in place",
        ],
    );
    one_line(
        spec(
            "small-tlc",
            "64MiB",
            "64MiB",
            &[
                "ftl.kind=\"none\"",
                "ftl.over_provisioning=0.0",
                "precondition.fill=\"none\"",
                "precondition.random_overwrite=0.0",
            ],
        )
        .err()
        .unwrap(),
        &["raw device", "cannot overwrite in place"],
    );
    one_line(
        spec("zns-tlc", "64MiB", "64MiB", &[]).err().unwrap(),
        &["zoned device", "[zns]"],
    );
    let missing = SwapSpec::resolve("small-tlc", "64MiB", "64MiB", "/nonexistent/pages", &[]);
    one_line(
        missing.err().unwrap(),
        &["/nonexistent/pages", "cannot read"],
    );

    // The default written out is the same run as the default left out.
    let a = spec("seed003-scm-400", "64MiB", "64MiB", &[]).unwrap();
    let b = spec(
        "seed003-scm-400",
        "65536KiB",
        "64MiB",
        &["swap.page_cluster=3", "swap.era=\"2.6.32\""],
    )
    .unwrap();
    assert_eq!(a.to_json(), b.to_json());
    // A paging knob, a device knob, the device: each another run.
    let c = spec(
        "seed003-scm-400",
        "64MiB",
        "64MiB",
        &["swap.pc_mix.rounds=2"],
    )
    .unwrap();
    let d = spec(
        "seed003-scm-400",
        "64MiB",
        "64MiB",
        &["pcm.timing.set=\"800ns\""],
    )
    .unwrap();
    let e = spec("seed003-slc-analytic", "64MiB", "64MiB", &[]).unwrap();
    let texts = [a.to_json(), c.to_json(), d.to_json(), e.to_json()];
    for i in 0..texts.len() {
        for j in i + 1..texts.len() {
            assert_ne!(texts[i], texts[j], "{i} and {j}");
        }
    }
    assert!(texts[3].contains("\"device\":\"seed003-slc-analytic\""));
}

#[test]
fn readahead_under_pressure_reads_the_whole_cluster() {
    // 256 frames, 1000 pages written in order (so slots are consecutive), then read back in
    // order with memory at its watermarks throughout. 2.6.32's read-ahead allocates its pages
    // like the fault's own (they may reclaim), so each device read is the aligned cluster of
    // 8 slots: 32 KiB. The earlier model took read-ahead pages only above min and read 4 KiB.
    let c = cfg(256, 8192);
    let (out, chk) = run_checked(&c, &sweep(1000));
    chk.unwrap();
    let reads: Vec<u64> = out
        .trace
        .iter()
        .filter(|r| r.op == 0)
        .map(|r| r.len)
        .collect();
    assert!(!reads.is_empty());
    let full = reads.iter().filter(|&&l| l == 8 * 4096).count();
    assert!(
        full * 10 >= reads.len() * 9,
        "{full} of {} reads are 32 KiB",
        reads.len()
    );
}

#[test]
fn reclaim_cpu_cost_bounds_swap_out_when_the_device_is_faster() {
    // 4000 pages written through 256 frames: at least 3744 pages are written out. With 50 us
    // of CPU per page written, swap-out takes at least 3744 x 50 us = 187 ms whatever the
    // device, and a device 10x faster no longer shortens it much; with the cost at 0 (default)
    // the faster device is much faster and the result has no `cpu_s`.
    let w = Workload::from_pages((0..4000).map(|p| (p, true)));
    let mut c = cfg(256, 8192);
    c.congestion_wait = false;
    let us = SimTime::from_us;
    let slow = || FixedBackend::new(1 << 40, (us(10), us(10)), (us(20), us(20)));
    let fast = || FixedBackend::new(1 << 40, (us(1), us(1)), (us(2), us(2)));
    let t = |c: &PagingConfig, b| run_on(c, b, &w, 1).unwrap().result;
    let free_slow = t(&c, slow());
    let free_fast = t(&c, fast());
    assert_eq!(free_slow.reclaim.cpu_s, 0.0);
    assert!(free_fast.simulated_time_s * 3.0 < free_slow.simulated_time_s);
    c.cost.reclaim_write = crate::config::units::Dur(us(50));
    let cpu_slow = t(&c, slow());
    let cpu_fast = t(&c, fast());
    assert!(
        cpu_fast.reclaim.cpu_s >= 3744.0 * 50e-6,
        "{}",
        cpu_fast.reclaim.cpu_s
    );
    assert!(cpu_fast.simulated_time_s >= 3744.0 * 50e-6);
    assert!(
        cpu_fast.simulated_time_s * 1.5 > cpu_slow.simulated_time_s,
        "fast {} slow {}",
        cpu_fast.simulated_time_s,
        cpu_slow.simulated_time_s
    );
}

#[test]
fn linux_2632_naps_set_swap_out_time_on_a_fast_device_and_nc_shortens_it() {
    // 2.6.32's kswapd stops only when free pages reach high and naps after priority 9 while
    // its writes are in flight; the nap (congestion_wait) is not cut short on an uncongested
    // queue. So on a device 10x faster, swap-out with the nap barely shortens, its time being
    // mostly waiting, and without it (nc) it is far shorter.
    let w = Workload::from_pages((0..6000).map(|p| (p, true)));
    let mut c = cfg(1024, 16384);
    assert_eq!(c.era, Era::Linux2632);
    let us = SimTime::from_us;
    let slow = || FixedBackend::new(1 << 40, (us(10), us(10)), (us(200), us(200)));
    let fast = || FixedBackend::new(1 << 40, (us(1), us(1)), (us(20), us(20)));
    let run = |c: &PagingConfig, b| run_on(c, b, &w, 1).unwrap().result;
    let c_slow = run(&c, slow());
    let c_fast = run(&c, fast());
    let waited = c_fast.reclaim.app_wait_s + c_fast.reclaim.kswapd_wait_s;
    assert!(c_fast.reclaim.waits > 0);
    // kswapd itself naps: pages under writeback do not make it stop.
    assert!(c_fast.reclaim.kswapd_wait_s > 0.0, "{:?}", c_fast.reclaim);
    assert!(
        waited > 0.5 * c_fast.swap_out.time_s,
        "waited {waited} of {}",
        c_fast.swap_out.time_s
    );
    assert!(
        c_fast.swap_out.time_s * 2.0 > c_slow.swap_out.time_s,
        "c: fast {} slow {}",
        c_fast.swap_out.time_s,
        c_slow.swap_out.time_s
    );
    c.congestion_wait = false;
    let nc_fast = run(&c, fast());
    assert_eq!(nc_fast.oracle_mismatches, 0);
    assert!(
        nc_fast.swap_out.time_s * 2.0 < c_fast.swap_out.time_s,
        "nc {} c {}",
        nc_fast.swap_out.time_s,
        c_fast.swap_out.time_s
    );
}

#[test]
fn a_request_queue_device_ends_the_2632_nap_at_its_next_write_completion() {
    // congestion_wake = completion (a driver with a request queue): every write completion
    // below the congestion-off threshold wakes the nappers, so on a fast device the waits are
    // short and swap-out far quicker than with the default, where an uncongested queue never
    // wakes them.
    let w = Workload::from_pages((0..6000).map(|p| (p, true)));
    let mut c = cfg(1024, 16384);
    let us = SimTime::from_us;
    let fast = || FixedBackend::new(1 << 40, (us(1), us(1)), (us(20), us(20)));
    let run = |c: &PagingConfig| run_on(c, fast(), &w, 1).unwrap().result;
    let decongested = run(&c);
    c.congestion_wake = CongestionWake::Completion;
    let completion = run(&c);
    assert_eq!(completion.oracle_mismatches, 0);
    let waited = |r: &SwapResult| r.reclaim.app_wait_s + r.reclaim.kswapd_wait_s;
    assert!(
        waited(&completion) * 10.0 < waited(&decongested),
        "completion {} decongested {}",
        waited(&completion),
        waited(&decongested)
    );
    assert!(completion.swap_out.time_s * 2.0 < decongested.swap_out.time_s);
    // The key by name, and a wrong value named.
    let t: toml::Table = toml::from_str(
        "memory = \"4MiB\"\nswap_size = \"64MiB\"\ncongestion_wake = \"completion\"",
    )
    .unwrap();
    assert_eq!(
        PagingConfig::from_table(t).unwrap().congestion_wake,
        CongestionWake::Completion
    );
    let bad: toml::Table =
        toml::from_str("memory = \"4MiB\"\nswap_size = \"64MiB\"\ncongestion_wake = \"soon\"")
            .unwrap();
    let e = PagingConfig::from_table(bad).unwrap_err().to_string();
    assert!(e.contains("congestion_wake") && e.contains("soon"), "{e}");
}

#[test]
fn auto_congestion_wake_follows_the_device_s_request_queue() {
    // The default resolves by the backend: no request queue (a cost model) naps until the
    // queue decongests, as `decongested`; an ssdlab device's interface queues requests, so a
    // completion wakes the nap, as `completion`. Either way the run equals the explicit value.
    let w = Workload::from_pages((0..6000).map(|p| (p, true)));
    let c = cfg(1024, 16384);
    assert_eq!(c.congestion_wake, CongestionWake::Auto);
    let us = SimTime::from_us;
    let fast = || FixedBackend::new(1 << 40, (us(1), us(1)), (us(20), us(20)));
    let auto = run_on(&c, fast(), &w, 1).unwrap().result;
    assert_eq!(auto.congestion_wake, "decongested");
    let mut explicit = c.clone();
    explicit.congestion_wake = CongestionWake::Decongested;
    let decongested = run_on(&explicit, fast(), &w, 1).unwrap().result;
    assert_eq!(auto.swap_out.time_s, decongested.swap_out.time_s);

    let dev_cfg = crate::config::SsdConfig::resolve("small-tlc", &[]).unwrap();
    let on_device = |c: &PagingConfig| {
        let dev = crate::device::Device::new(&dev_cfg, 1).unwrap();
        run_on(c, SsdBackend::new(dev, "small-tlc"), &w, 1)
            .unwrap()
            .result
    };
    let auto = on_device(&c);
    assert_eq!(auto.congestion_wake, "completion");
    explicit.congestion_wake = CongestionWake::Completion;
    assert_eq!(auto.swap_out.time_s, on_device(&explicit).swap_out.time_s);
}

#[test]
fn the_device_s_host_costs_are_not_charged_on_top_of_the_kernel_s() {
    // Issue 40 point 4: the paging model charges the kernel's software itself (swap.cost.*: seed
    // 003's 12 µs "swap page read" holds the block layer and the driver), so the device's own
    // [host] costs, which model the same software for a job, must not be added to its device
    // time. A device whose host costs are 0 then pages exactly as one whose are not.
    let w = Workload::from_pages((0..3000).map(|p| (p % 1500, p % 3 == 0)));
    let c = cfg(512, 8192);
    let with = crate::config::SsdConfig::resolve("small-tlc", &[]).unwrap();
    assert!(with.host.submit_cost.0 > SimTime::ZERO && with.host.complete_cost.0 > SimTime::ZERO);
    let without = crate::config::SsdConfig::resolve(
        "small-tlc",
        &[
            "host.submit_cost=\"0ns\"".into(),
            "host.complete_cost=\"0ns\"".into(),
            "host.poll_cost=\"0ns\"".into(),
        ],
    )
    .unwrap();
    let a = super::run(&with, "small-tlc", &c, &w, 1).unwrap().result;
    let b = super::run(&without, "small-tlc", &c, &w, 1).unwrap().result;
    assert!(a.faults.major > 0);
    assert_eq!(
        a.swap_in_breakdown.device_us, b.swap_in_breakdown.device_us,
        "the device read carries the host's submit and completion again"
    );
    assert_eq!(a.swap_in_latency.mean_us, b.swap_in_latency.mean_us);
}

#[test]
fn the_swap_device_is_preconditioned_as_a_job_s_is() {
    // 80 MiB raw, as the combination matrix's small drive; 600 pages swapped out and back.
    let dev_cfg = crate::config::small_test_drive;
    let mut v: Vec<(u32, bool)> = (0..600).map(|p| (p, true)).collect();
    v.extend((0..600).map(|p| (p, false)));
    let w = Workload::from_pages(v);
    let c = PagingConfig::new(1 << 20, 8 << 20);
    let result = |fill: &str| run(&dev_cfg(fill), "small", &c, &w, 7).unwrap().result;
    let fresh = result("none");
    let steady = result("steady-state");
    assert!(fresh.steady_state.is_none());
    let s = steady.steady_state.as_ref().expect("steady state reported");
    assert!(s.write_amplification > 1.0, "{}", s.write_amplification);
    // The steady drive garbage-collects under the swap-outs (8.8 ms mean against 112 ms).
    assert!(steady.writes.latency.mean_us > 2.0 * fresh.writes.latency.mean_us);
    assert_eq!(fresh.oracle_mismatches + steady.oracle_mismatches, 0);
}

/// A backend that numbers its requests 0, 2, 4, ...: the model keeps requests in flight by
/// consecutive ids (`SwapBackend::submit`), so the run stops with an error naming the ids, not
/// a wrong completion.
#[test]
fn a_backend_that_skips_request_ids_is_an_error() {
    struct Skipping(FixedBackend);
    impl SwapBackend for Skipping {
        fn submit(&mut self, now: SimTime, op: crate::request::Op, o: u64, l: u64) -> Result<u32> {
            Ok(self.0.submit(now, op, o, l)? * 2)
        }
        fn next_event(&self) -> Option<SimTime> {
            self.0.next_event()
        }
        fn advance(&mut self, until: SimTime, done: &mut Vec<(u32, SimTime)>) -> Result<()> {
            let start = done.len();
            self.0.advance(until, done)?;
            for d in &mut done[start..] {
                d.0 *= 2;
            }
            Ok(())
        }
        fn capacity_bytes(&self) -> u64 {
            self.0.capacity_bytes()
        }
        fn describe(&self) -> String {
            "skipping".into()
        }
    }
    let c = cfg(256, 4096);
    let w = sweep(1000);
    let mut sim =
        sim::PagingSim::new(&c, Skipping(fixed(1 << 40)), &w.accesses, w.pages, 1).unwrap();
    let e = sim.run(&mut |_, _| true).unwrap_err().to_string();
    assert!(e.contains("ids must follow one another"), "{e}");
}
