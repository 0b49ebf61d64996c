//! HFSL (`driver::hfsl`) driving the fusion device: the raw commands its map plans run on the
//! device without a refusal, and the device's own counts agree with HFSL's.

mod common;
mod hfsl_rig;

use hfsl_rig::{fusion, host_write, mix};
use ssdlab::driver::hfsl::{self, HostIo};
use ssdlab::SsdConfig;

#[test]
fn hfsl_runs_on_the_fusion_device_and_counts_match_the_device() {
    let cfg = fusion(&["hfsl.ssw=\"2KiB\"", "pcm.chip_capacity=\"4KiB\""]);
    let ios = mix(3000, 4000);
    let r = hfsl::run(&cfg, 1, 4000, &ios).unwrap();
    assert_eq!(r.requests, 3000);
    let c = &r.counters;
    assert!(
        c.nand_updates > 0 && c.evictions > 0 && c.writes_to_pcm > 0,
        "{c:?}"
    );
    assert_eq!(
        r.raw_commands,
        c.pcm_reads + c.pcm_writes + c.map_writes + c.nand_reads + c.nand_programs + c.nand_erases
    );
    // The PCM's 64 KiB less the map area (4,000 entries of 8 bytes) holds 16 pages of 2 KiB.
    assert!(r.pcm_pages <= 16 && r.pcm_pages > 0);
    assert!(c.map_writes > 0 && c.map_bytes_written.is_multiple_of(8));
    assert!(r.end.as_us_f64() > 0.0);
}

#[test]
fn a_larger_ssw_sends_more_to_pcm_and_updates_fewer_nand_pages() {
    let ios = mix(2000, 2000);
    let run = |ssw: &str| {
        let cfg = fusion(&[&format!("hfsl.ssw=\"{ssw}\"")]);
        hfsl::run(&cfg, 1, 2000, &ios).unwrap().counters
    };
    let small = run("512B");
    let page = run("2KiB");
    assert!(page.writes_to_pcm > small.writes_to_pcm);
    assert!(page.nand_programs < small.nand_programs);
}

/// §2.7.4: data owned by one application must not be disturbed by another. Application 1
/// owns the first 512 KiB; application 2's writes there are refused, each with a message
/// naming both applications and the range, and the run ends exactly as it does without them.
#[test]
fn a_stray_write_by_another_application_is_refused_and_changes_nothing() {
    let cfg = fusion(&[
        "hfsl.ssw=\"2KiB\"",
        "hfsl.protect=[{app=1, offset=\"0B\", len=\"512KiB\"}]",
    ]);
    let own: Vec<HostIo> = mix(1500, 2000)
        .into_iter()
        .map(|io| HostIo { app: 1, ..io })
        .collect();
    let stray = |k: u64| HostIo {
        app: 2,
        ..host_write(k * 4096 % (512 << 10), 2048)
    };
    let mut with_stray = Vec::new();
    for (i, io) in own.iter().enumerate() {
        with_stray.push(*io);
        if i % 100 == 0 {
            with_stray.push(stray(i as u64));
        }
    }
    let clean = hfsl::run(&cfg, 1, 2000, &own).unwrap();
    let r = hfsl::run(&cfg, 1, 2000, &with_stray).unwrap();
    assert_eq!(r.refused_writes, 15);
    assert_eq!(r.requests, clean.requests);
    assert_eq!(r.raw_commands, clean.raw_commands);
    assert_eq!(
        (r.pcm_pages, r.nand_pages),
        (clean.pcm_pages, clean.nand_pages)
    );
    assert_eq!(format!("{:?}", r.counters), format!("{:?}", clean.counters));
    let m = &r.refusals[0];
    assert!(
        m.contains("application 2") && m.contains("application 1") && m.contains("hfsl.protect[0]"),
        "{m}"
    );
    // Application 2 writes freely outside the range, and application 1's reads of it are fine.
    let outside = [HostIo {
        offset: 600 << 10,
        ..stray(0)
    }];
    assert_eq!(
        hfsl::run(&cfg, 1, 2000, &outside).unwrap().refused_writes,
        0
    );
}

#[test]
fn bad_hfsl_settings_name_the_field() {
    for (set, field) in [
        ("hfsl.ssw=\"4KiB\"", "hfsl.ssw"),
        ("hfsl.cache_ratio=1.5", "hfsl.cache_ratio"),
        ("hfsl.sub_page=\"3B\"", "hfsl.sub_page"),
        ("hfsl.bloom_bits=1000", "hfsl.bloom_bits"),
        ("hfsl.bloom_hashes=0", "hfsl.bloom_hashes"),
        ("hfsl.hot_window=0", "hfsl.hot_window"),
        ("hfsl.gc_free_blocks=1", "hfsl.gc_free_blocks"),
        ("hfsl.protect=[{app=1, offset=\"0B\", len=\"0B\"}]", "hfsl.protect[0]"),
        (
            "hfsl.protect=[{app=1, offset=\"0B\", len=\"8KiB\"}, {app=2, offset=\"4KiB\", len=\"8KiB\"}]",
            "hfsl.protect[1]",
        ),
    ] {
        let e = SsdConfig::resolve("seed002-fusion", &[set.into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(field) && !e.contains('\n'), "{e}");
    }
    let e = SsdConfig::resolve("small-tlc", &["hfsl.ssw=\"512B\"".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`hfsl`"), "{e}");
}

/// GC keeps every die writable whatever its reserve (`gc_free_blocks`) and whether hot and
/// cold data have a block open each (wear-aware) or share one: a near-full logical space
/// rewritten many times over never runs a die out of free blocks.
#[test]
fn gc_keeps_every_die_writable_at_any_reserve_with_one_or_two_streams() {
    for reserve in [2, 3, 5] {
        for wear_aware in [false, true] {
            let r = format!("hfsl.gc_free_blocks={reserve}");
            let w = format!("hfsl.wear_aware={wear_aware}");
            let cfg = fusion(&[&r, &w, "hfsl.ssw=\"2KiB\""]);
            let hw = hfsl::hardware(&cfg).unwrap();
            let usable = hfsl::usable_pages(cfg.hfsl.as_ref().unwrap(), &hw);
            let pages = usable * 95 / 100;
            let run = hfsl::run(&cfg, 1, pages as u32, &mix(40_000, pages));
            let report = run.unwrap_or_else(|e| panic!("{r} {w}: {e}"));
            assert!(
                report.counters.gc_runs > 100,
                "{r} {w}: {:?}",
                report.counters
            );
        }
    }
}

/// Speed: raw device commands per wall-clock second under HFSL (run with `--release
/// --ignored --nocapture`).
#[test]
#[ignore]
fn speed() {
    let cfg = fusion(&["hfsl.ssw=\"2KiB\""]);
    let ios = mix(200_000, 4000);
    let t = std::time::Instant::now();
    let r = hfsl::run(&cfg, 1, 4000, &ios).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} host requests, {} raw commands in {s:.2} s: {:.0} raw commands/s",
        r.requests,
        r.raw_commands,
        r.raw_commands as f64 / s
    );
}

/// `end_flush` drains a write-back buffer; HFSL has none and passes flushes over, so a replay
/// through it that asks for one is refused, naming the field.
#[test]
fn an_end_flush_replay_through_hfsl_is_refused() {
    use ssdlab::run::{run_replay, RunOptions};
    use ssdlab::workload::trace::replay::TraceJob;
    let cfg = fusion(&[]);
    let tjob = TraceJob::from_json(
        r#"{"trace":"model:financial1","mode":"afap","io_count":10,"end_flush":true}"#,
    )
    .unwrap();
    let opts = RunOptions::seeded(7);
    let err = run_replay(&cfg, &tjob, &opts, &mut |_, _| true)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("`end_flush`"), "{err}");
}

/// `ssdlab run` on a fusion device with `[hfsl]`: a workload model's requests go through HFSL,
/// the result's ops are the host's requests, `hfsl` holds HFSL's counts and they agree with
/// the device's; the same seed gives the same result.
#[test]
fn a_trace_model_runs_through_hfsl_and_the_result_says_what_hfsl_did() {
    use ssdlab::run::{run_replay, RunOptions};
    use ssdlab::workload::trace::replay::TraceJob;
    let cfg = fusion(&["hfsl.ssw=\"1KiB\""]);
    let tjob = TraceJob::from_json(r#"{"trace":"model:financial1","mode":"afap","io_count":3000}"#)
        .unwrap();
    let opts = RunOptions::seeded(7);
    let run = || {
        let mut v = serde_json::to_value(
            run_replay(&cfg, &tjob, &opts, &mut |_, _| true)
                .unwrap()
                .result,
        )
        .unwrap();
        v.as_object_mut().unwrap().remove("wall");
        v
    };
    let r = run();
    assert_eq!(r, run(), "the same seed gives the same result");
    // Keeping the raw commands' records (which measures their latencies, otherwise skipped)
    // changes nothing else.
    let mut kept = serde_json::to_value(
        run_replay(
            &cfg,
            &tjob,
            &RunOptions {
                record_requests: true,
                ..opts
            },
            &mut |_, _| true,
        )
        .unwrap()
        .result,
    )
    .unwrap();
    kept.as_object_mut().unwrap().remove("wall");
    assert_eq!(r, kept);
    let h = &r["hfsl"];
    let c = &h["counters"];
    assert_eq!(r["total"]["count"], 3000);
    assert_eq!(r["sim"]["requests"], 3000);
    assert_eq!(r["trace"]["replayed"], 3000);
    assert!(c["writes_to_pcm"].as_u64().unwrap() > 0);
    assert!(c["nand_updates"].as_u64().unwrap() > 0);
    // HFSL's NAND programs and erases are the device's.
    assert_eq!(c["nand_programs"], r["device"]["nand_pages_written"]);
    assert_eq!(c["nand_erases"], r["device"]["erases"]);
    let raw: u64 = [
        "pcm_reads",
        "pcm_writes",
        "map_writes",
        "nand_reads",
        "nand_programs",
        "nand_erases",
    ]
    .iter()
    .map(|k| c[k].as_u64().unwrap())
    .sum();
    assert_eq!(h["raw_commands"], raw);
    // The host's view: its capacity is HFSL's, not the raw NAND's.
    assert!(r["device"]["logical_bytes"].as_u64().unwrap() < 8 * 16 * 64 * 2048);
}

/// Write protection from a run: `hfsl.app` names the application the job is sent by.
#[test]
fn a_job_from_another_application_is_refused_in_the_owned_range_only() {
    use ssdlab::run::{run, RunOptions};
    use ssdlab::workload::JobSpec;
    let spec = JobSpec::from_json(r#"{"rw":"randwrite","bs":"2KiB","size":"1MiB","io_count":400}"#)
        .unwrap();
    let opts = RunOptions::seeded(1);
    let refused = |app: u32| {
        let cfg = fusion(&[
            "hfsl.protect=[{app=1, offset=\"0B\", len=\"256KiB\"}]",
            &format!("hfsl.app={app}"),
        ]);
        let r = run(&cfg, &spec, &opts, &mut |_, _| true).unwrap().result;
        let h = r.hfsl.unwrap();
        assert_eq!(r.total.count + h.refused_writes, 400);
        h.refused_writes
    };
    assert_eq!(refused(1), 0);
    // About a quarter of random writes over 1 MiB fall in the first 256 KiB.
    let n = refused(2);
    assert!((60..140).contains(&n), "{n}");
    let trim = JobSpec::from_json(r#"{"rw":"randtrim","bs":"2KiB","io_count":4}"#).unwrap();
    let Err(e) = run(&fusion(&[]), &trim, &opts, &mut |_, _| true) else {
        panic!("a trim job ran through HFSL");
    };
    let e = e.to_string();
    assert!(e.contains("`rw`") && e.contains("trim"), "{e}");
}

/// `HfslHost` (the Python `ssdlab.Hfsl`): requests one call at a time end exactly as the same
/// list run in one go, and each call says when it ended and where its data went.
#[test]
fn requests_one_call_at_a_time_end_as_the_same_list_in_one_run() {
    use ssdlab::driver::hfsl::{map::Loc, HfslHost};
    use ssdlab::sim::SimTime;
    let cfg = fusion(&["hfsl.ssw=\"1KiB\"", "pcm.chip_capacity=\"4KiB\""]);
    let ios = mix(1500, 2000);
    let batch = hfsl::run(&cfg, 1, 2000, &ios).unwrap();
    let mut host = HfslHost::new(&cfg, 1, 2000 * 2048, false).unwrap();
    let mut last = SimTime::ZERO;
    for io in &ios {
        let done = host.submit(*io, SimTime::ZERO).unwrap();
        assert!(done.arrival == last && done.completed >= done.arrival);
        last = done.completed;
    }
    let r = host.report();
    assert_eq!(r.counters, batch.counters);
    assert_eq!(
        (r.requests, r.raw_commands),
        (batch.requests, batch.raw_commands)
    );
    assert_eq!(last, batch.end);
    // A small write lands in PCM, a whole page in NAND.
    let small = host_write(0, 512);
    let done = host.submit(small, SimTime::ZERO).unwrap();
    assert!(done.raw_commands >= 1 && done.latency() > SimTime::ZERO);
    assert_eq!(host.location(0).unwrap(), Loc::Pcm);
    host.submit(HostIo { len: 2048, ..small }, SimTime::ZERO)
        .unwrap();
    assert_eq!(host.location(0).unwrap(), Loc::Nand);
    // Out of the logical space, and an lpn beyond it: refused, naming them.
    let e = host
        .submit(
            HostIo {
                offset: 2000 * 2048,
                ..small
            },
            SimTime::ZERO,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("offset") && e.contains("4096000"), "{e}");
    assert!(host.location(2000).unwrap_err().to_string().contains("lpn"));
    assert!(HfslHost::new(&cfg, 1, 0, false).is_err());
}

/// A stray write through `HfslHost` is an error naming both applications, and changes nothing.
#[test]
fn a_stray_call_is_refused_with_its_reason() {
    use ssdlab::driver::hfsl::HfslHost;
    use ssdlab::sim::SimTime;
    let cfg = fusion(&["hfsl.protect=[{app=1, offset=\"0B\", len=\"64KiB\"}]"]);
    let mut host = HfslHost::new(&cfg, 1, 1 << 20, false).unwrap();
    let io = HostIo {
        app: 2,
        ..host_write(4096, 512)
    };
    let e = host.submit(io, SimTime::ZERO).unwrap_err().to_string();
    assert!(
        e.contains("application 2") && e.contains("application 1"),
        "{e}"
    );
    let r = host.report();
    assert_eq!((r.refused_writes, r.requests, r.raw_commands), (1, 0, 0));
    assert!(host.submit(HostIo { app: 1, ..io }, SimTime::ZERO).is_ok());
}

/// With GC off the NAND fills up: a user's choice, so the error says what to change, not "a
/// bug".
#[test]
fn a_full_nand_without_gc_is_the_workload_s_error() {
    let cfg = fusion(&["hfsl.gc=false", "nand.blocks_per_plane=2"]);
    let ios: Vec<HostIo> = (0..5000u64)
        .map(|k| host_write(k % 100 * 2048, 2048))
        .collect();
    let e = hfsl::run(&cfg, 1, 100, &ios).unwrap_err();
    assert!(matches!(e, ssdlab::Error::Job(_)), "{e:?}");
    let m = e.to_string();
    assert!(m.contains("hfsl.gc") && !m.contains("bug"), "{m}");
}

/// §2.6.3's scheduler: a channel queue sends at most `max_cmd_send` commands at a time, and
/// with a timer only on its ticks; neither changes where data goes.
#[test]
fn the_scheduler_sends_in_batches_on_its_timer() {
    // 512 KiB writes: 256 pages over 16 dies on 8 channels, 32 programs per channel queue.
    let ios: Vec<HostIo> = (0..4u64)
        .map(|k| host_write(k * (512 << 10), 512 << 10))
        .collect();
    let run = |extra: &[&str]| hfsl::run(&fusion(extra), 1, 1024, &ios).unwrap();
    let all = run(&[]);
    let eight = run(&["hfsl.max_cmd_send=8"]);
    // Each request's 256 map entries are consecutive: one PCM write, one more send.
    assert_eq!(
        all.queues.batches,
        4 * 8 + 4,
        "one send per channel per request"
    );
    assert_eq!(
        eight.queues.batches,
        4 * 8 * 4 + 4,
        "32 commands in sends of 8"
    );
    assert_eq!(eight.queues.commands, eight.raw_commands);
    assert_eq!(eight.counters, all.counters);
    assert!(eight.end > all.end && eight.queues.queued > all.queues.queued);
    assert_eq!(all.queues.timer_waits, 0);
    // A 1 ms timer: the first send at time 0 (a tick), every later one on a tick. (The map in
    // DRAM: each request is then one phase of PCM writes.)
    let small = [HostIo { len: 512, ..ios[0] }; 2];
    let dram = "hfsl.map_store=\"dram\"";
    let timed = hfsl::run(&fusion(&["hfsl.send_timer=\"1ms\"", dram]), 1, 1024, &small).unwrap();
    let untimed = hfsl::run(&fusion(&[dram]), 1, 1024, &small).unwrap();
    assert_eq!(timed.queues.timer_waits, 1);
    let write = untimed.end.ps() / 2;
    assert_eq!(timed.end.ps(), 1_000_000_000 + write);
    let e = common::refusal("seed002-fusion", "hfsl.max_cmd_send=4");
    assert!(
        e.contains("hfsl.max_cmd_send") && e.contains("8 to 255"),
        "{e}"
    );
}

/// `hfsl.request_cost`: HFSL's own host work per host request, on the core that then submits
/// the request's raw commands (so they wait for it).
/// `ios` through HFSL on the fusion device with `extra` set, over 2,000 logical pages: the
/// host cores' busy time and HFSL's report.
fn host_busy(ios: &[HostIo], extra: &[&str]) -> (ssdlab::sim::SimTime, hfsl::HfslReport) {
    let mut dev = ssdlab::device::Device::new(&fusion(extra), 1).unwrap();
    let (r, _) = hfsl::run_on(
        &mut dev,
        2000,
        &mut hfsl::ListSource::new(ios),
        &mut |_, _| true,
    )
    .unwrap();
    let host = dev
        .host_cpu()
        .busy()
        .fold(ssdlab::sim::SimTime::ZERO, |a, b| a + b);
    (host, r)
}

#[test]
fn hfsl_s_host_work_per_request_is_charged_before_its_commands() {
    let ios = mix(500, 2000);
    let busy = |extra: &[&str]| {
        let (host, r) = host_busy(&ios, extra);
        (host, r.end)
    };
    use ssdlab::sim::SimTime;
    let (none, end_none) = busy(&[]);
    let (two, end_two) = busy(&["hfsl.request_cost=\"2us\""]);
    assert_eq!(two, none + SimTime::from_us(2 * 500));
    assert!(
        end_two >= end_none + SimTime::from_us(2 * 500),
        "{end_two:?} {end_none:?}"
    );
    // HFSL calls the driver directly (section 2.6.2): the file system's, block layer's and
    // scheduler's costs of the conventional path are not paid.
    let kernel = [
        "host.fs_cost=\"3us\"",
        "host.block_cost=\"4us\"",
        "host.sched_cost=\"2us\"",
    ];
    assert_eq!(busy(&kernel), (none, end_none));
    let e = common::refusal("seed002-fusion", "host.fs_cost=\"2s\"");
    assert!(
        e.contains("host.fs_cost") && e.contains("at most 1 s"),
        "{e}"
    );
    let e = common::refusal("seed002-fusion", "hfsl.request_cost=\"5s\"");
    assert!(e.contains("hfsl.request_cost"), "{e}");
}

/// `hfsl.bram_transfer` (§2.6.3): every send of a batch into the device's BRAM costs the host
/// one transfer, whatever the batch holds, so sending fewer, larger batches saves transfers.
#[test]
fn each_batch_sent_costs_one_bram_transfer() {
    use ssdlab::sim::SimTime;
    let ios = mix(500, 2000);
    let run = |extra: &[&str]| {
        let (host, r) = host_busy(&ios, extra);
        (host, r.queues.batches, r.queues.commands)
    };
    let (none, batches, commands) = run(&[]);
    assert!(
        batches < commands,
        "the mix must put several commands in a send"
    );
    let (three, b3, _) = run(&["hfsl.bram_transfer=\"3us\""]);
    assert_eq!(b3, batches);
    assert_eq!(three, none + SimTime::from_us(3) * batches);
    let e = common::refusal("seed002-fusion", "hfsl.bram_transfer=\"2s\"");
    assert!(
        e.contains("hfsl.bram_transfer") && e.contains("at most 1 s"),
        "{e}"
    );
}

#[test]
fn a_send_timer_past_a_second_is_refused_and_the_clock_end_ends_the_run() {
    // hfsl.send_timer = 1000000s ran the clock to its end in 18 ticks; the next tick was then
    // the end again, for ever.
    let e = common::refusal("seed002-fusion", "hfsl.send_timer=\"1000000s\"");
    assert!(
        e.contains("hfsl.send_timer") && e.contains("at most 1 s"),
        "{e}"
    );
    // A request arriving just before the clock's end with a 1 s timer: its tick is past the
    // end. The run ends with an error that says so (it was woken at the end again and again,
    // here stopped by the progress callback after a bound).
    use ssdlab::sim::SimTime;
    struct Late(bool);
    impl hfsl::HostSource for Late {
        fn next_io(&mut self, _now: SimTime) -> ssdlab::Result<Option<(SimTime, HostIo)>> {
            let io = host_write(0, 4096);
            Ok((!std::mem::replace(&mut self.0, true)).then_some((SimTime(u64::MAX - 10), io)))
        }
    }
    let mut dev = ssdlab::device::Device::new(&fusion(&["hfsl.send_timer=\"1s\""]), 1).unwrap();
    let mut calls = 0;
    let e = hfsl::run_on(&mut dev, 1024, &mut Late(false), &mut |_, _| {
        calls += 1;
        calls < 100
    })
    .err()
    .expect("the clock's end is an error")
    .to_string();
    assert!(e.contains("simulated clock reached its end"), "{e}");
}

/// The raw fusion device and HFSL one call at a time: a command at the clock's end was
/// answered with a latency of 0, and so was every later one (issue 45, defect 4).
#[test]
fn a_command_at_the_clock_s_end_is_refused_not_answered_in_0_ps() {
    use ssdlab::driver::fusion_host::FusionHost;
    use ssdlab::driver::hfsl::HfslHost;
    use ssdlab::sim::SimTime;
    let cfg = fusion(&[]);
    let mut raw = FusionHost::new(&cfg, 1).unwrap();
    raw.pcm_read(0, 64, SimTime::ZERO).unwrap();
    for _ in 0..2 {
        let e = raw.pcm_read(0, 64, SimTime::MAX).unwrap_err().to_string();
        assert!(
            e.contains("at_ps") && e.contains("end of the simulated clock"),
            "{e}"
        );
    }
    let mut host = HfslHost::new(&cfg, 1, 1 << 20, false).unwrap();
    let io = host_write(0, 4096);
    let e = host.submit(io, SimTime::MAX).unwrap_err().to_string();
    assert!(
        e.contains("at_ps") && e.contains("end of the simulated clock"),
        "{e}"
    );
}

/// A host read of never-written data has nothing for the device: it is counted, and it takes
/// HFSL's own host work (`hfsl.request_cost`), not 0 ps (issue 45, defect 6: it completed at
/// its arrival whatever the host cost was).
#[test]
fn a_read_of_never_written_data_is_counted_and_takes_the_host_s_work() {
    use ssdlab::driver::hfsl::HfslHost;
    use ssdlab::sim::SimTime;
    let read = HostIo {
        write: false,
        ..host_write(4096, 4096)
    };
    for (cost, us) in [("0us", 0), ("2us", 2)] {
        let cfg = fusion(&[&format!("hfsl.request_cost=\"{cost}\"")]);
        let mut host = HfslHost::new(&cfg, 1, 2000 * 2048, false).unwrap();
        let first = host.submit(read, SimTime::ZERO).unwrap();
        assert_eq!(first.raw_commands, 0);
        assert_eq!(first.latency(), SimTime::from_us(us), "{cost}");
        // The next request starts after it: one after another, as a QD1 host issues them.
        let second = host.submit(read, SimTime::ZERO).unwrap();
        assert_eq!(second.arrival, first.completed);
        assert_eq!(second.latency(), SimTime::from_us(us), "{cost}");
        // 4 KiB over 2 KiB logical pages: two pages a read.
        assert_eq!(host.report().counters.unmapped_reads, 4, "{cost}");
    }
}

/// HFSL's logical size: a part of a page was rounded up without a word, and a GC reserve that
/// takes every block blamed `logical_bytes` with the empty range "1 to 0" (issue 45, 7 and 9).
#[test]
fn a_logical_size_that_is_no_whole_page_or_a_reserve_of_every_block_is_named() {
    use ssdlab::driver::hfsl::HfslHost;
    let cfg = fusion(&[]);
    let e = HfslHost::new(&cfg, 1, 2048 * 10 + 1, false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("logical_bytes: got 20481") && e.contains("whole number"),
        "{e}"
    );
    let cfg = fusion(&["hfsl.gc=true", "hfsl.gc_free_blocks=8"]);
    let e = HfslHost::new(&cfg, 1, 2048 * 10, false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("field `hfsl.gc_free_blocks`: got 8, expected fewer spare blocks")
            && !e.contains("1 to 0"),
        "{e}"
    );
    // The parts are data.
    let err = HfslHost::new(&cfg, 1, 2048 * 10, false).err().unwrap();
    let parts = err.invalid().expect("a field error");
    assert_eq!(parts.field.as_deref(), Some("hfsl.gc_free_blocks"));
    assert_eq!(parts.value.as_deref(), Some("8"));
}

/// HFSL runs one job from time 0: a `startdelay`, or several flows, is refused by name rather
/// than ignored.
#[test]
fn startdelay_and_flows_are_refused_through_hfsl() {
    use ssdlab::run::{run, run_flows};
    let cfg = fusion(&[]);
    let opts = ssdlab::RunOptions::seeded(1);
    let late = ssdlab::JobSpec::from_json(
        r#"{"rw":"randread","bs":"4KiB","io_count":10,"startdelay":"1ms"}"#,
    )
    .unwrap();
    let e = run(&cfg, &late, &opts, &mut |_, _| true)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("field `startdelay`") && e.contains("HFSL"),
        "{e}"
    );
    let a = ssdlab::JobSpec::from_json(r#"{"rw":"randread","bs":"4KiB","io_count":10}"#).unwrap();
    let e = run_flows(&cfg, &[a.clone(), a], &opts, &mut |_, _| true)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("flows") && e.contains("HFSL"), "{e}");
}
