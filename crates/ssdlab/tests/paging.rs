//! The paging model on real ssdlab devices and on a real program's memory trace.

use ssdlab::paging::{self, Era, FixedBackend, PagingConfig, Workload};
use ssdlab::sim::SimTime;
use ssdlab::SsdConfig;

/// Write `n` pages, then read them back twice.
fn sweep(n: u32) -> Workload {
    let mut v: Vec<(u32, bool)> = (0..n).map(|p| (p, true)).collect();
    for _ in 0..2 {
        v.extend((0..n).map(|p| (p, false)));
    }
    Workload::from_pages(v)
}

#[test]
fn swap_io_drives_a_nand_device_and_its_latency_comes_back() {
    let dev = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let mut cfg = PagingConfig::new(1 << 20, 64 << 20);
    cfg.era = Era::Linux2632;
    let out = paging::run(&dev, "small-tlc", &cfg, &sweep(2000), 3).unwrap();
    let r = &out.result;
    assert_eq!(r.oracle_mismatches, 0);
    assert!(r.faults.major > 0 && r.writes.requests > 0);
    // The device part of a swap-in is the NAND read through the whole stack: tens of µs on
    // small-tlc, far above zero; the software part is seed 003's steps.
    let b = &r.swap_in_breakdown;
    assert!(b.device_us > 30.0, "device {b:?}");
    assert!(
        (b.lookup_us - 0.7).abs() < 1e-9 && (b.swap_read_us - 12.0).abs() < 1e-9,
        "{b:?}"
    );
    // Every request's latency is the device's: reads are faster than the 2.6.32 100 ms wait.
    assert!(r.reads.latency.max_us < 100_000.0);
    assert_eq!(
        out.trace.len() as u64,
        r.reads.requests + r.writes.requests + r.trims
    );
    // Same inputs, same swap trace.
    let again = paging::run(&dev, "small-tlc", &cfg, &sweep(2000), 3).unwrap();
    assert_eq!(again.swap_in_ps, out.swap_in_ps);
}

#[test]
fn a_swap_device_that_fails_a_read_stops_the_run_with_its_error() {
    // Every NAND read undecodable: the first swap-in from NAND fails, and the page is gone.
    let dev = SsdConfig::resolve(
        "small-tlc",
        &[
            "reliability.ecc_correctable_bits=4".into(),
            "reliability.rber_fresh=1e-2".into(),
            "reliability.read_retry_max=0".into(),
        ],
    )
    .unwrap();
    let mut cfg = PagingConfig::new(1 << 20, 64 << 20);
    cfg.era = Era::Linux2632;
    let e = paging::run(&dev, "small-tlc", &cfg, &sweep(2000), 3)
        .err()
        .expect("a failed swap-in is an error")
        .to_string();
    assert!(
        e.contains("swap device failed a read") && e.contains("unrecovered read error"),
        "{e}"
    );
}

#[test]
fn swap_larger_than_the_device_names_both_sizes() {
    let dev = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let cfg = PagingConfig::new(1 << 20, 1 << 40);
    let e = paging::run(&dev, "small-tlc", &cfg, &sweep(10), 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("swap_size") && e.contains("device"), "{e}");
}

/// Valgrind's lackey on a small real program (`/bin/ls` of a directory); skipped without
/// valgrind unless CI requires it.
#[test]
fn a_real_program_under_lackey_pages_through_the_model() {
    if std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(std::env::var("CI").is_err(), "valgrind missing under CI");
        eprintln!("skipped: valgrind not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ssdlab-lackey-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("lackey.out");
    let st = std::process::Command::new("valgrind")
        .args(["--tool=lackey", "--trace-mem=yes"])
        .arg(format!("--log-file={}", log.display()))
        .args(["/bin/ls", "/"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let w = paging::workload::read_file(log.to_str().unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        w.accesses.len() > 10_000 && w.pages > 50,
        "{} accesses, {} pages",
        w.accesses.len(),
        w.pages
    );
    // Memory of a quarter of the pages touched (at least the watermarks and some).
    let mem_pages = (w.pages as u64 / 4).max(128);
    let cfg = PagingConfig::new(mem_pages * 4096, 16 << 20);
    let us = SimTime::from_us;
    let out = paging::run_on(
        &cfg,
        FixedBackend::new(1 << 30, (us(10), us(1)), (us(10), us(3))),
        &w,
        1,
    )
    .unwrap();
    assert_eq!(out.result.oracle_mismatches, 0);
    assert!(out.result.faults.minor > 0);
}

/// The speed benchmark's run (`examples/paging_speed.rs`, on 2 M of its accesses) keeps its
/// results through the model's speed work: 13,705 major faults and 57,638 pages written, as
/// measured on 62e8548 before it.
#[test]
fn the_speed_benchmark_keeps_its_results() {
    let w = Workload::speed_benchmark(2_000_000);
    let cfg = PagingConfig::new(256 << 20, 2 << 30);
    let us = SimTime::from_us;
    let backend = FixedBackend::new(1 << 40, (us(10), us(1)), (us(10), us(3)));
    let out = paging::run_on(&cfg, backend, &w, 1).unwrap();
    let r = &out.result;
    assert_eq!((r.faults.major, r.writes.pages), (13_705, 57_638));
    assert_eq!(r.oracle_mismatches, 0);
}

/// The PC mix, scaled down to 1/16 (memory, swap and every application), through the model:
/// it swaps, reads come back whole, and aging turns writes smaller (the seed's clean/aged
/// contrast: writes mostly 128-256 KiB clean, 4 KiB aged).
#[test]
fn pc_mix_swaps_and_its_contents_come_back() {
    let t: toml::Table = toml::toml! {
        memory = "64MiB"
        swap_size = "64MiB"
        [pc_mix]
        rounds = 3
        base_memory = "12MiB"
        tab_memory = "6MiB"
        image_bytes = "625000"
        copy_bytes = "10MB"
        download_bytes = "2MB"
        document_bytes = "200000"
        office_memory = "8MiB"
        search_bytes = "87500000"
        search_memory = "2MiB"
        visit_touches = 1250
    };
    let cfg = PagingConfig::from_table(t).unwrap();
    let w = cfg.pc_mix.generate(5).unwrap();
    // 12 + 8 x 6 + 7 x 153 pages + 49 + 8 MiB + 2 MiB + 3 x 128 KiB: more than 64 MiB.
    assert!(w.pages as u64 * 4096 > 64 << 20, "{} pages", w.pages);
    let us = SimTime::from_us;
    let out = paging::run_on(
        &cfg,
        FixedBackend::new(1 << 30, (us(10), us(1)), (us(10), us(3))),
        &w,
        5,
    )
    .unwrap();
    let r = &out.result;
    assert_eq!(r.oracle_mismatches, 0);
    assert!(
        r.faults.major > 100 && r.writes.pages > 1000,
        "{:?}",
        r.faults
    );
    let again = paging::run_on(
        &cfg,
        FixedBackend::new(1 << 30, (us(10), us(1)), (us(10), us(3))),
        &w,
        5,
    )
    .unwrap();
    assert_eq!(again.swap_in_ps, out.swap_in_ps);
}

/// Aging rounds run the same stream as counted rounds (the same seeded references), but they
/// are a warm-up: their swap writes age the area without counting towards wear, and every
/// figure of the result covers the counted rounds alone. 2 aging + 2 counted rounds are the
/// run of 4 counted rounds (the same swap trace), with the first rounds split off.
#[test]
fn pc_mix_aging_rounds_are_a_warm_up_the_result_leaves_out() {
    let mix = |rounds: u32, aging: u32| {
        let mut t: toml::Table = toml::toml! {
            memory = "32MiB"
            swap_size = "64MiB"
            [pc_mix]
            base_memory = "6MiB"
            tab_memory = "3MiB"
            image_bytes = "312500"
            copy_bytes = "5MB"
            download_bytes = "1MB"
            document_bytes = "100000"
            office_memory = "4MiB"
            search_bytes = "43750000"
            search_memory = "1MiB"
            visit_touches = 625
        };
        let pm = t["pc_mix"].as_table_mut().unwrap();
        pm.insert("rounds".into(), (rounds as i64).into());
        pm.insert("aging_rounds".into(), (aging as i64).into());
        let cfg = PagingConfig::from_table(t).unwrap();
        let w = cfg.pc_mix.generate(3).unwrap();
        let us = SimTime::from_us;
        let dev = FixedBackend::new(1 << 30, (us(10), us(1)), (us(10), us(3)));
        let accesses = w.accesses.len();
        (
            w.wear_from,
            accesses,
            paging::run_on(&cfg, dev, &w, 3).unwrap(),
        )
    };
    let (from_all, accesses, all_out) = mix(4, 0);
    let (from_aged, _, aged_out) = mix(2, 2);
    let (all, aged) = (&all_out.result, &aged_out.result);
    assert_eq!(from_all, 0);
    assert!(from_aged > 0);
    let key = |r: &ssdlab::paging::IoRecord| (r.op, r.offset, r.len, r.submit_ps, r.done_ps);
    assert!(
        all_out
            .trace
            .iter()
            .map(key)
            .eq(aged_out.trace.iter().map(key)),
        "the same run: the swap trace holds every request, the aging rounds' too"
    );
    assert_eq!(all.wear.aging_page_writes, 0);
    assert!(aged.wear.aging_page_writes > 0);
    assert_eq!(
        aged.wear.aging_page_writes + aged.wear.page_writes,
        all.wear.page_writes
    );
    let from_s = aged.wear.counted_from_s;
    assert!(from_s > 0.0 && from_s < all.simulated_time_s);
    // The result is the counted rounds': the requests submitted from the count's start, the
    // application's time after it, the accesses after it, the swap-ins that ended after it.
    let from_ps = (from_s * 1e12).round() as u64;
    let counted = |op: u8| {
        aged_out
            .trace
            .iter()
            .filter(|r| r.op == op && r.submit_ps >= from_ps)
            .count() as u64
    };
    assert_eq!(aged.reads.requests, counted(0));
    assert_eq!(aged.writes.requests, counted(1));
    assert!(aged.writes.requests > 0 && aged.writes.requests < all.writes.requests);
    assert_eq!(aged.swap_out.pages, aged.writes.pages);
    assert!((aged.simulated_time_s - (all.simulated_time_s - from_s)).abs() < 1e-9);
    assert_eq!(aged.faults.accesses, (accesses - from_aged) as u64);
    assert_eq!(all.faults.accesses, accesses as u64);
    assert_eq!(aged.swap_in_latency.count, aged_out.swap_in_ps.len() as u64);
    assert!(aged.swap_in_latency.count < all.swap_in_latency.count);
    assert!(aged.faults.major <= all.faults.major && aged.faults.major > 0);
    assert!(aged.reclaim.kswapd_scanned < all.reclaim.kswapd_scanned);
    assert!(aged.baseline_time_s < all.baseline_time_s);
    // Lifetime without wear levelling: endurance x counted hours / max writes per page.
    let l = &aged.wear.lifetime[0];
    let hours = aged.simulated_time_s / 3600.0;
    let want = l.endurance as f64 * hours / aged.wear.max_writes_per_page as f64;
    assert!((l.without_wear_levelling_h - want).abs() <= want * 1e-9);
}

/// The seed's PC mix at full size (1 GiB of memory, 1 GiB of swap), on a fixed-cost device:
/// `cargo test --release -p ssdlab --test paging pc_mix_full -- --ignored --nocapture`.
#[test]
#[ignore]
fn pc_mix_full() {
    let cfg = PagingConfig::new(1 << 30, 1 << 30);
    let t = std::time::Instant::now();
    let w = cfg.pc_mix.generate(1).unwrap();
    let gen_s = t.elapsed().as_secs_f64();
    let us = SimTime::from_us;
    let out = paging::run_on(
        &cfg,
        FixedBackend::new(2 << 30, (us(10), us(1)), (us(10), us(3))),
        &w,
        1,
    )
    .unwrap();
    let r = &out.result;
    println!(
        "{} accesses, {} pages, generated in {gen_s:.2} s, run in {:.2} s; {} major faults, {} pages written in {} requests; writes {:?}; reads {:?}; wear max {} mean {:.2}",
        w.accesses.len(),
        w.pages,
        r.wall_seconds,
        r.faults.major,
        r.writes.pages,
        r.writes.requests,
        r.writes.size_histogram,
        r.reads.size_histogram,
        r.wear.max_writes_per_page,
        r.wear.mean_writes_per_page
    );
    assert_eq!(r.oracle_mismatches, 0);
}

/// Seed 003's analytic NAND parts as swap devices, by name: SLC is faster than MLC on the same
/// swap I/O, merges are counted, and device knobs are refused in one line.
#[test]
fn analytic_nand_parts_by_name() {
    let dir = std::env::temp_dir().join(format!("ssdlab-analytic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pages.txt");
    let mut text = String::new();
    // 2,000 pages written, then read back in a scattered order twice.
    for p in 0..2000u64 {
        text.push_str(&format!("{:#x} W\n", p * 4096));
    }
    for r in 0..2u64 {
        for i in 0..2000u64 {
            let p = (i * 7919 + r) % 2000;
            text.push_str(&format!(
                "{:#x} {}\n",
                p * 4096,
                if i % 3 == 0 { 'W' } else { 'R' }
            ));
        }
    }
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap();
    // A swap area barely larger than the pages: freed slots are reused, writes scatter.
    let run = |dev: &str| paging::run_spec(dev, "1MiB", "9MiB", p, &[], 1).unwrap();
    let (slc, mlc) = (run("seed003-slc-analytic"), run("seed003-mlc-analytic"));
    for o in [&slc, &mlc] {
        assert_eq!(o.result.oracle_mismatches, 0);
        assert!(
            o.result.device_merges.is_some_and(|m| m > 0),
            "{:?}",
            o.result.device_merges
        );
    }
    assert_eq!(slc.result.device, "seed003-slc-analytic");
    assert!(slc.result.swap_in_latency.mean_us < mlc.result.swap_in_latency.mean_us);
    assert!(slc.result.simulated_time_s < mlc.result.simulated_time_s);
    let e = paging::run_spec(
        "seed003-slc-analytic",
        "1MiB",
        "64MiB",
        p,
        &["nand.planes=2".into()],
        1,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("nand.planes=2") && e.contains("analytic") && !e.contains('\n'),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_swap_request_past_the_block_layer_timeout_is_an_error_and_progress_can_stop_a_run() {
    // 10^6 s per link crossing: the application and kswapd woke every jiffy for the days each
    // request took (hundreds of millions of steps; Ctrl-C was seen only at the end).
    let resolve = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        SsdConfig::resolve("small-tlc", &sets).unwrap()
    };
    let backend = |c: &SsdConfig| {
        paging::SsdBackend::new(ssdlab::device::Device::new(c, 1).unwrap(), "small-tlc")
    };
    let cfg = PagingConfig::new(1 << 20, 64 << 20);
    let slow = resolve(&["interface.link_latency=\"1000000s\""]);
    let mut calls = 0u64;
    let e = paging::run_on_with(&cfg, backend(&slow), &sweep(2000), 1, &mut |_, _| {
        calls += 1;
        calls < 1000
    })
    .err()
    .expect("a request that never ends is an error")
    .to_string();
    assert!(
        e.contains("has been in flight for") && e.contains("block-layer timeout (30 s)"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // The callback is called during the run, and false stops it there.
    let mut seen = Vec::new();
    let e = paging::run_on_with(
        &cfg,
        backend(&resolve(&[])),
        &sweep(20_000),
        1,
        &mut |done, total| {
            seen.push((done, total));
            false
        },
    )
    .err()
    .expect("a progress callback that returns false stops the run");
    assert!(matches!(e, ssdlab::Error::Interrupted), "{e}");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].0 > 0 && seen[0].0 < 60_000, "{seen:?}");
}

#[test]
fn each_back_end_a_host_swaps_to_pages_and_reports_its_own_steady_state() {
    // The four back ends a host can swap to (a raw, fusion or zoned device is refused when the
    // run is resolved: `paging::SwapSpec`). The steady state of a `fill = "steady-state"`
    // device is its back end's: the page FTL's, or a block-mapped FTL's with its merges.
    let steady = "precondition.fill=\"steady-state\"";
    let drives: [(&str, &[&str], Option<bool>); 4] = [
        ("small-tlc", &[steady], Some(false)),
        (
            "small-tlc",
            &["ftl.mapping=\"cached\"", "ftl.mapping_cache=\"64KiB\""],
            None,
        ),
        (
            "small-tlc",
            &[
                steady,
                "ftl.kind=\"bast\"",
                "ftl.map_unit=\"16KiB\"",
                "ftl.log_blocks=2",
            ],
            Some(true),
        ),
        ("seed002-pcm", &[], None),
    ];
    let mut cfg = PagingConfig::new(1 << 20, 64 << 20);
    cfg.era = Era::Linux2632;
    for (preset, sets, merges) in drives {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let dev = SsdConfig::resolve(preset, &sets).unwrap();
        let out = paging::run(&dev, preset, &cfg, &sweep(500), 3).unwrap();
        let r = &out.result;
        let kind = dev.backend_kind();
        assert_eq!(r.oracle_mismatches, 0, "{kind:?}");
        assert!(r.reads.requests > 0 && r.writes.requests > 0, "{kind:?}");
        assert_eq!(
            r.steady_state
                .as_ref()
                .map(|s| s.merges_per_host_page.is_some()),
            merges,
            "{kind:?}"
        );
    }
}
