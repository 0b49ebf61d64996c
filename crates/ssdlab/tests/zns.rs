//! A zoned drive (`[zns]`, docs/zns.md) through the device boundary and through runs: writes
//! only at write pointers, refusals as statuses the result counts, reads of unwritten blocks
//! without the media, resets timed as erases, finishes, appends, fio's `zonemode=zbd` jobs.

mod common;

use ssdlab::device::{Device, Flags, Request, Status};
use ssdlab::request::Op;
use ssdlab::sim::SimTime;
use ssdlab::{JobSpec, RunOptions, SsdConfig};

/// zns-tlc: 128 zones of 8 MiB (2048 blocks of 4 KiB) striped over 16 planes; 3.5 ms erases.
fn zoned(extra: &[&str]) -> SsdConfig {
    let ov: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve("zns-tlc", &ov).unwrap()
}

const ZONE: u64 = 8 << 20;

/// One request on an idle device: its status and latency.
fn one(dev: &mut Device, op: Op, offset: u64, len: u64, flags: Flags) -> (Status, SimTime) {
    let now = dev.now();
    let r = Request {
        op,
        offset,
        len,
        queue: 0,
        flags,
        arrival: now,
    };
    dev.submit(now, r).unwrap();
    let done = dev.run_to_idle().unwrap();
    assert_eq!(done.len(), 1);
    (done[0].2, done[0].1 - now)
}

fn opts() -> RunOptions {
    RunOptions {
        seed: 1,
        record_requests: false,
        stats_interval: None,
        power_cut_event: None,
        power_cut_at: None,
    }
}

fn job(json: &str) -> JobSpec {
    JobSpec::from_json(json).unwrap()
}

#[test]
fn writes_go_at_the_write_pointer_and_refusals_are_statuses() {
    let mut dev = Device::new(&zoned(&[]), 1).unwrap();
    let w = |dev: &mut Device, off: u64, len: u64| one(dev, Op::Write, off, len, Flags::NONE).0;
    assert_eq!(w(&mut dev, 0, 64 << 10), Status::Ok);
    assert_eq!(
        w(&mut dev, 0, 4096),
        Status::ZoneInvalidWrite,
        "behind the pointer"
    );
    assert_eq!(
        w(&mut dev, 128 << 10, 4096),
        Status::ZoneInvalidWrite,
        "ahead of it"
    );
    assert_eq!(w(&mut dev, 64 << 10, 4096), Status::Ok);
    // Through the end of the zone's capacity: a boundary error.
    assert_eq!(w(&mut dev, ZONE, ZONE - 4096), Status::Ok);
    assert_eq!(w(&mut dev, 2 * ZONE - 4096, 8192), Status::ZoneBoundary);
    assert_eq!(w(&mut dev, 2 * ZONE - 4096, 4096), Status::Ok);
    assert_eq!(w(&mut dev, 2 * ZONE - 4096, 4096), Status::ZoneFull);
    assert_eq!(w(&mut dev, 2 * ZONE + 512, 4096), Status::Misaligned);
    let z = dev.backend().zoned().unwrap();
    assert_eq!(z.zones.wp(0), 17);
    assert_eq!(
        z.zones.state(1),
        ssdlab::ctrl::zones::ZoneState::Full,
        "written to its capacity"
    );
    // The counts by status reach the host.
    assert_eq!(dev.host().failed_with(Status::ZoneInvalidWrite), 2);
    assert_eq!(dev.host().failed_with(Status::ZoneFull), 1);
}

#[test]
fn reads_of_unwritten_blocks_do_not_touch_the_media() {
    let mut dev = Device::new(&zoned(&[]), 1).unwrap();
    assert_eq!(
        one(&mut dev, Op::Write, 0, 16 << 10, Flags::NONE).0,
        Status::Ok
    );
    let sensed = |dev: &Device| dev.backend().nand().unwrap().fil.counters.nand_pages_read;
    let (s, unwritten) = one(&mut dev, Op::Read, 64 << 10, 16 << 10, Flags::NONE);
    assert_eq!((s, sensed(&dev)), (Status::Ok, 0));
    let (s, written) = one(&mut dev, Op::Read, 0, 16 << 10, Flags::NONE);
    assert_eq!(s, Status::Ok);
    assert!(sensed(&dev) > 0, "the written page is sensed");
    // A TLC page read takes at least its 50 µs tR.
    assert!(
        written.ps() > unwritten.ps() + 50_000_000,
        "{written:?} {unwritten:?}"
    );
    assert!(dev.is_mapped(0) && !dev.is_mapped(4));
}

#[test]
fn a_reset_erases_the_zones_blocks_on_the_media() {
    let mut dev = Device::new(&zoned(&[]), 1).unwrap();
    // 20 pages: the first 16 on each plane once, 4 more: 16 blocks hold data.
    assert_eq!(
        one(&mut dev, Op::Write, 0, 320 << 10, Flags::NONE).0,
        Status::Ok
    );
    let (s, t) = one(&mut dev, Op::ZoneReset, 0, 0, Flags::NONE);
    assert_eq!(s, Status::Ok);
    // Erases of 3.5 ms, on 16 planes of 8 dies: at least one erase's time.
    assert!(t.ps() >= 3_500_000_000, "{t:?}");
    let z = dev.backend().zoned().unwrap();
    assert_eq!(z.counters.erases, 16);
    assert_eq!(z.zones.wp(0), 0);
    assert_eq!(dev.max_erase_count(), 1);
    // The zone takes writes from its start again; a reset of an empty zone erases nothing.
    assert_eq!(one(&mut dev, Op::Write, 0, 4096, Flags::NONE).0, Status::Ok);
    let (_, t) = one(&mut dev, Op::ZoneReset, ZONE, 0, Flags::NONE);
    assert!(t.ps() < 100_000_000, "no erase: {t:?}");
    // Not a zone's start: Invalid Field.
    assert_eq!(
        one(&mut dev, Op::ZoneReset, 4096, 0, Flags::NONE).0,
        Status::InvalidField
    );
}

#[test]
fn finish_marks_or_fills_the_rest_of_the_zone() {
    for (mode, filled) in [("mark", 0u64), ("fill", 2048 - 16)] {
        let cfg = zoned(&[&format!("zns.finish=\"{mode}\"")]);
        let mut dev = Device::new(&cfg, 1).unwrap();
        assert_eq!(
            one(&mut dev, Op::Write, 0, 64 << 10, Flags::NONE).0,
            Status::Ok
        );
        let (s, t) = one(&mut dev, Op::ZoneFinish, 0, 0, Flags::NONE);
        assert_eq!(s, Status::Ok);
        let z = dev.backend().zoned().unwrap();
        assert_eq!(z.counters.filled_units, filled, "{mode}");
        assert_eq!(
            one(&mut dev, Op::Write, 64 << 10, 4096, Flags::NONE).0,
            Status::ZoneFull
        );
        if mode == "fill" {
            // Programming 8 MiB of TLC takes milliseconds.
            assert!(t.ps() > 1_000_000_000, "{t:?}");
        } else {
            assert!(t.ps() < 100_000_000, "{t:?}");
        }
    }
}

#[test]
fn appends_land_at_the_write_pointer_and_select_all_resets_every_zone() {
    let mut dev = Device::new(&zoned(&[]), 1).unwrap();
    for _ in 0..3 {
        assert_eq!(
            one(&mut dev, Op::Append, ZONE, 8192, Flags::NONE).0,
            Status::Ok
        );
    }
    assert_eq!(
        one(&mut dev, Op::Append, ZONE + 4096, 4096, Flags::NONE).0,
        Status::InvalidField
    );
    assert_eq!(
        one(&mut dev, Op::Write, 3 * ZONE, 4096, Flags::NONE).0,
        Status::Ok
    );
    let z = dev.backend().zoned().unwrap();
    assert_eq!(z.zones.wp(1), 6);
    assert!(dev.is_mapped(2048 + 5) && !dev.is_mapped(2048 + 6));
    assert_eq!(
        one(&mut dev, Op::ZoneReset, 0, 0, Flags::ALL_ZONES).0,
        Status::Ok
    );
    let z = dev.backend().zoned().unwrap();
    assert_eq!((z.zones.wp(1), z.zones.wp(3)), (0, 0));
    assert_eq!(z.zones.counters.resets, 2);
}

#[test]
fn zone_commands_need_a_zoned_drive_and_erases_a_raw_one() {
    let mut plain = Device::new(&SsdConfig::resolve("small-tlc", &[]).unwrap(), 1).unwrap();
    let r = Request {
        op: Op::ZoneReset,
        offset: 0,
        len: 0,
        queue: 0,
        flags: Flags::NONE,
        arrival: SimTime::ZERO,
    };
    let e = plain.submit(SimTime::ZERO, r).unwrap_err().to_string();
    assert!(e.contains("zone_reset: this device has no zones"), "{e}");
    let mut dev = Device::new(&zoned(&[]), 1).unwrap();
    let e = dev
        .submit(
            SimTime::ZERO,
            Request {
                op: Op::Erase,
                len: 512 << 10,
                ..r
            },
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("zone resets"), "{e}");
}

/// fio's `zonemode=zbd`: a sequential write job over more than the drive wraps, resetting the
/// zones it comes back to; no write is refused, and the device writes what the host wrote.
#[test]
fn a_zbd_sequential_write_job_wraps_with_resets_and_no_errors() {
    let cfg = zoned(&[]);
    // 1.25 drives' worth of 128 KiB writes at QD8.
    let n = (cfg.logical_bytes() / (128 << 10)) * 5 / 4;
    let j = job(&format!(
        r#"{{"rw":"write","bs":"128KiB","iodepth":8,"zonemode":"zbd","io_count":{n}}}"#
    ));
    let out = ssdlab::run(&cfg, &j, &opts(), &mut |_, _| true).unwrap();
    let d = &out.result.device;
    let z = d.zones.as_ref().expect("zone figures");
    assert!(z.errors.is_empty(), "{:?}", z.errors);
    assert_eq!(d.write_amplification, 1.0);
    assert_eq!(z.resets, 32, "a quarter of the 128 zones written again");
    assert_eq!(d.erases, 32 * 16);
    assert_eq!(d.gc_runs, 0);
    assert_eq!(out.result.ops["write"].count, n);
    assert_eq!(out.result.ops["zone_reset"].count, 32);
}

/// The periodic statistics of a zoned drive: resets counted as the job wraps (never falling,
/// the last sample's the result's), and a job's open zones never above its `max_open_zones`
/// nor above the active ones.
#[test]
fn periodic_statistics_sample_open_zones_and_resets() {
    let cfg = zoned(&[]);
    let sampled = RunOptions {
        stats_interval: Some(SimTime::from_ns(10_000_000)),
        ..opts()
    };
    let n = (cfg.logical_bytes() / (128 << 10)) * 5 / 4;
    let wrap = job(&format!(
        r#"{{"rw":"write","bs":"128KiB","iodepth":8,"zonemode":"zbd","io_count":{n}}}"#
    ));
    let out = ssdlab::run(&cfg, &wrap, &sampled, &mut |_, _| true).unwrap();
    let s = out.result.samples.expect("samples");
    let resets = s.zone_resets.expect("resets column");
    assert_eq!(resets[0], 0);
    assert!(resets.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(*resets.last().unwrap(), 32);
    assert!(s.open_zones.expect("open column").iter().any(|&o| o > 0));
    let limited = job(
        r#"{"rw":"randwrite","bs":"16KiB","iodepth":4,"zonemode":"zbd","max_open_zones":3,"io_count":4000}"#,
    );
    let out = ssdlab::run(&cfg, &limited, &sampled, &mut |_, _| true).unwrap();
    let s = out.result.samples.expect("samples");
    let open = s.open_zones.expect("open column");
    let active = s.active_zones.expect("active column");
    assert!(open.iter().any(|&o| o > 0));
    for (o, a) in open.iter().zip(&active) {
        assert!(*o <= 3 && o <= a, "{o} open, {a} active");
    }
    assert!(s.cache_lines_used.is_none());
}

/// Random writes with zonemode=zbd and max_open_zones, as appends too: no errors; the zones
/// open at once never pass the job's limit per instance.
#[test]
fn zbd_random_writes_keep_to_max_open_zones() {
    for append in [false, true] {
        let cfg = zoned(&[]);
        let j = job(&format!(
            r#"{{"rw":"randwrite","bs":"16KiB","iodepth":4,"numjobs":2,"zonemode":"zbd",
                "max_open_zones":3,"zone_append":{append},"io_count":4000}}"#
        ));
        let out = ssdlab::run(&cfg, &j, &opts(), &mut |_, _| true).unwrap();
        let z = out.result.device.zones.clone().unwrap();
        assert!(z.errors.is_empty(), "append={append}: {:?}", z.errors);
        assert!(z.max_open <= 6, "append={append}: {}", z.max_open);
        let op = if append { "append" } else { "write" };
        assert_eq!(out.result.ops[op].count, 4000);
    }
}

#[test]
fn jobs_and_zones_must_match() {
    let cfg = zoned(&[]);
    let e = ssdlab::run(
        &cfg,
        &job(r#"{"rw":"randwrite","bs":"4KiB","io_count":10}"#),
        &opts(),
        &mut |_, _| true,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("field `zonemode`") && e.contains("randwrite"),
        "{e}"
    );
    let plain = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let e = ssdlab::run(
        &plain,
        &job(r#"{"rw":"write","bs":"4KiB","io_count":10,"zonemode":"zbd"}"#),
        &opts(),
        &mut |_, _| true,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("expected a zoned drive"), "{e}");
    // A read-only job needs no zone mode: unwritten zones read as zeros.
    let out = ssdlab::run(
        &cfg,
        &job(r#"{"rw":"randread","bs":"4KiB","io_count":100}"#),
        &opts(),
        &mut |_, _| true,
    )
    .unwrap();
    assert_eq!(out.result.device.unmapped_reads, 100);
}

#[test]
fn the_same_zoned_run_twice_is_the_same_result() {
    let cfg = zoned(&[]);
    let j = job(
        r#"{"rw":"randwrite","bs":"16KiB","iodepth":8,"zonemode":"zbd","max_open_zones":4,"io_count":3000}"#,
    );
    let a = ssdlab::run(&cfg, &j, &opts(), &mut |_, _| true).unwrap();
    let b = ssdlab::run(&cfg, &j, &opts(), &mut |_, _| true).unwrap();
    let strip = |r: &ssdlab::stats::result::RunResult| {
        let mut v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        v.as_object_mut().unwrap().remove("wall");
        v
    };
    assert_eq!(strip(&a.result), strip(&b.result));
}

/// zns-tlc with a write-back cache buffer of `capacity` (LRU, one port, no background
/// flushing), and the data oracle on.
fn buffered(capacity: &str, extra: &[&str]) -> Device {
    let mut ov = vec![
        format!("cache.capacity=\"{capacity}\""),
        "cache.mode=\"write-back\"".to_string(),
        "cache.replacement=\"lru\"".into(),
        "cache.flush_high_watermark=0.0".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    let cfg = SsdConfig::resolve("zns-tlc", &ov).unwrap();
    let mut dev = Device::new(&cfg, 1).unwrap();
    dev.enable_check();
    dev
}

/// (read hits, write misses, on-demand flushes, explicit flushes, waits) of the buffer, and
/// the pages programmed and erased on the media.
fn counts(dev: &Device) -> ([u64; 5], u64, u64) {
    let s = dev.cache().unwrap().stats();
    let f = &dev.backend().nand().unwrap().fil.counters;
    (
        [
            s.read_hits,
            s.write_misses,
            s.flushes[0],
            s.flushes[3],
            s.waits,
        ],
        f.nand_pages_written,
        f.block_erases,
    )
}

fn ok(dev: &mut Device, op: Op, offset: u64, len: u64) -> SimTime {
    let (s, t) = one(dev, op, offset, len, Flags::NONE);
    assert_eq!(s, Status::Ok, "{op:?} at {offset}");
    t
}

/// By hand, on a buffer of 16 lines of 4 KiB in front of zns-tlc (16 KiB pages of 4 blocks;
/// a zone's page p on plane p of 16): what the buffer absorbs, what it flushes in each zone's
/// order, and what a reset and a finish do with a zone's lines. Media programs: flushes started
/// together reach a page's die at once; the idle die starts on the first block and the other
/// three, queued behind it by then, go as the next program: 2 page programs per page flushed
/// (the FIL's count, as for any back end's single-block programs).
#[test]
fn a_cache_buffer_absorbs_a_zones_writes_and_flushes_them_in_order() {
    let mut dev = buffered("64KiB", &[]);
    // 16 blocks of zone 0 fill the 16 lines: nothing reaches the media.
    ok(&mut dev, Op::Write, 0, 64 << 10);
    assert_eq!(counts(&dev), ([0, 16, 0, 0, 0], 0, 0));
    // Read back from DRAM, oldest first (LRU: block 0 is the eviction candidate again).
    ok(&mut dev, Op::Read, 0, 64 << 10);
    assert_eq!(counts(&dev), ([16, 16, 0, 0, 0], 0, 0));
    assert_eq!(
        dev.backend().nand().unwrap().fil.counters.nand_pages_read,
        0
    );
    // 4 more blocks: each waits for a line, and the flushes that free them write the zone's
    // blocks 0..3 (its page 0), in order.
    ok(&mut dev, Op::Write, 64 << 10, 16 << 10);
    assert_eq!(counts(&dev), ([16, 20, 4, 0, 4], 2, 0));
    let z = dev.backend().zoned().unwrap();
    assert_eq!((z.zones.wp(0), z.programmed(0)), (20, 4));
    // A flush writes the other 16 dirty lines: blocks 4..19, pages 1..4.
    ok(&mut dev, Op::Flush, 0, 0);
    assert_eq!(counts(&dev), ([16, 20, 4, 16, 4], 10, 0));
    assert_eq!(dev.cache().unwrap().dirty_lines(), 0);
    // Blocks 0..3 left the buffer: read from the media.
    ok(&mut dev, Op::Read, 0, 16 << 10);
    assert_eq!(
        dev.backend().nand().unwrap().fil.counters.nand_pages_read,
        1
    );
    // A reset erases the 5 blocks (one per page, on 5 planes) that hold data and drops the
    // zone's lines.
    ok(&mut dev, Op::ZoneReset, 0, 0);
    assert_eq!(counts(&dev).2, 5);
    assert_eq!(dev.cache().unwrap().lines_in_use(), 0);
    // Written again and reset before any flush: its dirty lines are dropped, nothing is
    // programmed or erased (the host gave the data up).
    ok(&mut dev, Op::Write, 0, 32 << 10);
    ok(&mut dev, Op::ZoneReset, 0, 0);
    assert_eq!(counts(&dev), ([16, 28, 4, 16, 4], 10, 5));
    assert_eq!(dev.cache().unwrap().dirty_lines(), 0);
    // Zone 1: 8 blocks, then a finish writes them (2 pages) before the zone is full.
    ok(&mut dev, Op::Write, ZONE, 32 << 10);
    ok(&mut dev, Op::ZoneFinish, ZONE, 0);
    assert_eq!(counts(&dev), ([16, 36, 4, 24, 4], 14, 5));
    let z = dev.backend().zoned().unwrap();
    assert_eq!(z.programmed(1), 8);
    // Every block reads back as written (zone 0 as zeros after its reset).
    ok(&mut dev, Op::Read, 0, 64 << 10);
    ok(&mut dev, Op::Read, ZONE, 64 << 10);
    let dc = dev.check().unwrap();
    assert_eq!(dc.first_error, None);
    assert!(dc.reads >= 16 + 4 + 32);
}

/// `zns.finish = "fill"` behind a write-back buffer: the finish flushes the zone's 8 buffered
/// blocks first, then programs filler from the write pointer to the capacity (2,040 blocks);
/// the data reads back, the filler as zeros, and a reset then erases all 16 blocks.
#[test]
fn a_filling_finish_writes_the_buffered_blocks_first() {
    let mut dev = buffered("64KiB", &["zns.finish=\"fill\""]);
    ok(&mut dev, Op::Write, 0, 32 << 10);
    ok(&mut dev, Op::ZoneFinish, 0, 0);
    let z = dev.backend().zoned().unwrap();
    assert_eq!((z.programmed(0), z.counters.filled_units), (2048, 2040));
    assert_eq!(dev.cache().unwrap().stats().flushes[3], 8);
    assert_eq!(dev.cache().unwrap().dirty_lines(), 0);
    ok(&mut dev, Op::Read, 0, 64 << 10);
    ok(&mut dev, Op::ZoneReset, 0, 0);
    assert_eq!(dev.backend().nand().unwrap().fil.counters.block_erases, 16);
    ok(&mut dev, Op::Read, 0, 16 << 10);
    let dc = dev.check().unwrap();
    assert_eq!(dc.first_error, None);
    assert_eq!(dc.reads, 16 + 4);
}

/// A Force Unit Access write to a zoned drive with a write-back buffer completes once its
/// zone's blocks up to its end are on the media; a plain one at DRAM speed.
#[test]
fn a_fua_write_through_the_buffer_waits_for_its_zone_to_reach_the_media() {
    let mut dev = buffered("256KiB", &[]);
    let plain = ok(&mut dev, Op::Write, 0, 16 << 10);
    assert_eq!(counts(&dev).1, 0);
    let (s, fua) = one(&mut dev, Op::Write, 16 << 10, 16 << 10, Flags::FUA);
    assert_eq!(s, Status::Ok);
    // Both writes' 8 blocks (pages 0 and 1, each in 2 programs as above) are on the media;
    // the FUA write waited for at least one 500 µs program, the plain one for DRAM.
    assert_eq!(counts(&dev), ([0, 8, 0, 8, 0], 4, 0));
    assert!(fua.ps() >= 500_000_000, "{fua:?}");
    assert!(plain.ps() < 100_000_000, "{plain:?}");
    assert_eq!(dev.backend().zoned().unwrap().programmed(0), 8);
}

/// The data oracle through fio-like zoned jobs in front of small buffers (evictions, waits,
/// resets as the jobs wrap, reads from DRAM and from the media), every cache policy; the same
/// run twice is the same result.
#[test]
fn zoned_jobs_through_a_cache_buffer_keep_every_block_and_repeat_exactly() {
    let jobs = [
        "rw = \"randrw\"\nrwmixread = 50\nbs = \"16KiB\"\niodepth = 8\nio_count = 3000\nzonemode = \"zbd\"\nmax_open_zones = 4",
        "rw = \"rw\"\nbs = \"64KiB\"\niodepth = 4\nio_count = 3000\nzonemode = \"zbd\"\nsize = \"24MiB\"",
    ];
    for (policy, mode, ports) in [
        ("lru", "write-back", "single"),
        ("fifo", "write-back", "dual"),
        ("clock", "write-through", "single"),
    ] {
        let ov = [
            "cache.capacity=\"256KiB\"".to_string(),
            format!("cache.replacement=\"{policy}\""),
            format!("cache.mode=\"{mode}\""),
            format!("cache.ports=\"{ports}\""),
        ];
        let cfg = SsdConfig::resolve("zns-tlc", &ov).unwrap();
        for text in jobs {
            let dev = common::run_checked(&cfg, text, 3, false);
            let c = dev.cache().unwrap();
            assert!(c.stats().read_hits > 0, "{policy} {mode}: no hit");
            let spec = JobSpec::from_toml_str(text, "zoned job").unwrap();
            let a = common::run_twice_alike(&cfg, &spec, &opts(), &format!("{policy} {mode}"));
            let z = a.result.device.zones.as_ref().unwrap();
            assert!(z.errors.is_empty(), "{policy} {mode}: {:?}", z.errors);
            assert!(a.result.cache.is_some());
        }
    }
}
