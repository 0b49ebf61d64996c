//! HFSL (`driver::hfsl`) driving the fusion device: the raw commands its map plans run on the
//! device without a refusal, and the device's own counts agree with HFSL's.

use ssdlab::driver::hfsl::{self, HostIo};
use ssdlab::SsdConfig;

fn fusion(extra: &[&str]) -> SsdConfig {
    let mut o = vec!["nand.blocks_per_plane=8".to_string()];
    o.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("seed002-fusion", &o).unwrap()
}

/// A deterministic mix: writes of 512 B to 8 KiB (every fifth flagged metadata) and reads,
/// over `pages` logical pages.
fn mix(n: u64, pages: u64) -> Vec<HostIo> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let sectors = 1 + (x >> 40) % 16;
            let sector = (x >> 8) % (pages * 4 - sectors);
            HostIo {
                write: !x.is_multiple_of(3),
                offset: sector * 512,
                len: sectors * 512,
                meta: x.is_multiple_of(5),
                app: 0,
            }
        })
        .collect()
}

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
        c.pcm_reads + c.pcm_writes + c.nand_reads + c.nand_programs + c.nand_erases
    );
    // The PCM holds 64 KiB / 2 KiB = 32 pages.
    assert!(r.pcm_pages <= 32 && r.pcm_pages > 0);
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
        write: true,
        offset: k * 4096 % (512 << 10),
        len: 2048,
        meta: false,
        app: 2,
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
    let opts = RunOptions {
        seed: 7,
        record_requests: false,
    };
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
    let opts = RunOptions {
        seed: 1,
        record_requests: false,
    };
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
    let mut host = HfslHost::new(&cfg, 1, 2000 * 2048).unwrap();
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
    let small = HostIo {
        write: true,
        offset: 0,
        len: 512,
        meta: false,
        app: 0,
    };
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
    assert!(HfslHost::new(&cfg, 1, 0).is_err());
}

/// A stray write through `HfslHost` is an error naming both applications, and changes nothing.
#[test]
fn a_stray_call_is_refused_with_its_reason() {
    use ssdlab::driver::hfsl::HfslHost;
    use ssdlab::sim::SimTime;
    let cfg = fusion(&["hfsl.protect=[{app=1, offset=\"0B\", len=\"64KiB\"}]"]);
    let mut host = HfslHost::new(&cfg, 1, 1 << 20).unwrap();
    let io = HostIo {
        write: true,
        offset: 4096,
        len: 512,
        meta: false,
        app: 2,
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
        .map(|k| HostIo {
            write: true,
            offset: k % 100 * 2048,
            len: 2048,
            meta: false,
            app: 0,
        })
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
        .map(|k| HostIo {
            write: true,
            offset: k * (512 << 10),
            len: 512 << 10,
            meta: false,
            app: 0,
        })
        .collect();
    let run = |extra: &[&str]| hfsl::run(&fusion(extra), 1, 1024, &ios).unwrap();
    let all = run(&[]);
    let eight = run(&["hfsl.max_cmd_send=8"]);
    assert_eq!(
        all.queues.batches,
        4 * 8,
        "one send per channel per request"
    );
    assert_eq!(eight.queues.batches, 4 * 8 * 4, "32 commands in sends of 8");
    assert_eq!(eight.queues.commands, eight.raw_commands);
    assert_eq!(eight.counters, all.counters);
    assert!(eight.end > all.end && eight.queues.queued > all.queues.queued);
    assert_eq!(all.queues.timer_waits, 0);
    // A 1 ms timer: the first send at time 0 (a tick), every later one on a tick.
    let small = [HostIo { len: 512, ..ios[0] }; 2];
    let timed = hfsl::run(&fusion(&["hfsl.send_timer=\"1ms\""]), 1, 1024, &small).unwrap();
    let untimed = hfsl::run(&fusion(&[]), 1, 1024, &small).unwrap();
    assert_eq!(timed.queues.timer_waits, 1);
    let write = untimed.end.ps() / 2;
    assert_eq!(timed.end.ps(), 1_000_000_000 + write);
    let e = SsdConfig::resolve("seed002-fusion", &["hfsl.max_cmd_send=4".into()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("hfsl.max_cmd_send") && e.contains("8 to 255"),
        "{e}"
    );
}
