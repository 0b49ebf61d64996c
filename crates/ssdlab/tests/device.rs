//! The device boundary as a driver outside the event loop uses it (the register-level NVMe
//! controller, a live server): submit at chosen times, advance the model to a time limit.

mod common;

use ssdlab::device::{Completion, Device, Driver, Flags, Request, Status};
use ssdlab::request::Op;
use ssdlab::sim::SimTime;
use ssdlab::SsdConfig;

#[derive(Default)]
struct Log(Vec<(u32, SimTime, Status)>);

impl Driver for Log {
    fn on_complete(&mut self, _dev: &mut Device, now: SimTime, done: Completion) {
        assert_eq!(done.done, now);
        self.0.push((done.id, now, done.status));
    }
}

fn req(op: Op, offset: u64, len: u64, at: SimTime) -> Request {
    Request {
        op,
        offset,
        len,
        queue: 0,
        flags: Flags::NONE,
        arrival: at,
    }
}

fn device() -> Device {
    Device::new(&SsdConfig::resolve("small-tlc", &[]).unwrap(), 1).unwrap()
}

/// Submit the same requests to two devices: one run to idle at once, one advanced in steps of
/// 50 µs as a wall-clock driver would. Same completions, same times, and the stepped one never
/// runs past its limit.
#[test]
fn stepping_to_a_time_limit_gives_the_same_completions_as_running_to_idle() {
    let submit_all = |dev: &mut Device| {
        for k in 0..16u64 {
            let op = if k % 3 == 0 { Op::Write } else { Op::Read };
            dev.submit(SimTime::ZERO, req(op, k * 16384, 8192, SimTime::ZERO))
                .unwrap();
        }
    };
    let mut whole = device();
    submit_all(&mut whole);
    let expected = whole.run_to_idle().unwrap();
    assert_eq!(expected.len(), 16);

    let mut stepped = device();
    submit_all(&mut stepped);
    let mut log = Log::default();
    let mut limit = SimTime::ZERO;
    while stepped.next_event_time().is_some() {
        limit += SimTime::from_us(50);
        stepped.run_until(&mut log, limit).unwrap();
        assert!(stepped.now() <= limit, "ran past the limit");
        assert!(stepped.next_event_time().is_none_or(|t| t > limit));
    }
    assert_eq!(log.0, expected);
}

#[test]
fn a_request_beyond_the_device_is_refused_and_changes_nothing() {
    let mut dev = device();
    let cap = dev.capacity_bytes();
    let e = dev
        .submit(
            SimTime::ZERO,
            req(Op::Read, cap - 4096, 8192, SimTime::ZERO),
        )
        .unwrap_err();
    assert!(e.to_string().contains("beyond the device"), "{e}");
    let e = dev
        .submit(SimTime::ZERO, req(Op::Write, u64::MAX, 4096, SimTime::ZERO))
        .unwrap_err();
    assert!(e.to_string().contains("beyond the device"), "{e}");
    assert_eq!(dev.next_event_time(), None);
    assert!(dev.run_to_idle().unwrap().is_empty());
}

/// A request submitted later in simulated time starts then, not at time 0.
#[test]
fn a_later_submission_starts_at_its_time() {
    let mut dev = device();
    let t = SimTime::from_us(500);
    let id = dev.submit(t, req(Op::Read, 0, 4096, t)).unwrap();
    let done = dev.run_to_idle().unwrap();
    assert_eq!(done[0].0, id);
    assert!(done[0].1 > t);
    // Unmapped data is answered by the controller: far less than a NAND read.
    assert!(done[0].1 < t + SimTime::from_us(50), "{:?}", done[0].1);
}

/// The functional store keeps what a driver writes, reads unwritten and deallocated blocks as
/// zeros, and takes only sensible block sizes.
#[test]
fn the_data_store_keeps_what_is_written() {
    let mut dev = device();
    assert!(dev.store().is_none());
    for bad in [0, 256, 1000, 1 << 17] {
        let e = dev.enable_store(bad).unwrap_err();
        assert!(e.to_string().contains(&format!("got {bad} bytes")), "{e}");
    }
    dev.enable_store(512).unwrap();
    let s = dev.store_mut().unwrap();
    let data: Vec<u8> = (0..1024u32).map(|i| (i % 251) as u8).collect();
    s.write(8, &data);
    let mut back = vec![0xAA; 1536];
    s.read(7, &mut back);
    assert!(back[..512].iter().all(|&b| b == 0));
    assert_eq!(&back[512..], &data[..]);
    s.deallocate(8, 1);
    s.read(8, &mut back[..512]);
    assert!(back[..512].iter().all(|&b| b == 0));
    assert_eq!(s.allocated(), 1);
}

#[test]
fn a_drive_whose_tables_exceed_this_machines_memory_is_refused_before_allocating() {
    // About 2^32 map units (the most this build addresses): some 34 GB of tables.
    let cfg = SsdConfig::resolve(
        "small-tlc",
        &[
            "nand.blocks_per_plane=65536".into(),
            "nand.pages_per_block=1023".into(),
        ],
    )
    .unwrap();
    let need = ssdlab::ftl::Ftl::table_bytes(&cfg);
    assert!(need > 32_000_000_000, "estimate {need}");
    match ssdlab::sim::mem::available_bytes() {
        Some(avail) if avail < need => {
            let e = Device::new(&cfg, 1).err().expect("refused").to_string();
            assert!(
                e.contains("FTL tables") && e.contains("MemAvailable"),
                "{e}"
            );
        }
        // A machine with more memory than that would build it; the rule itself is checked
        // by `check_fits`'s own test.
        _ => {}
    }
    // The estimate is what the small drive's tables take: 4 bytes per logical and per
    // physical unit, plus bits and block records.
    let small = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let units = small.physical_units();
    let est = ssdlab::ftl::Ftl::table_bytes(&small);
    assert!(
        est >= 4 * (small.logical_units() + units) && est < 5 * (small.logical_units() + units)
    );
}

/// `controller.ftl_unit_cost` (seed 002 Fig. 12's soft-core FTL work): each map unit of a
/// command costs the firmware core that much more; a raw device, with no FTL, pays nothing.
#[test]
fn the_firmware_pays_per_map_unit_on_a_device_with_an_ftl() {
    let busy = |sets: &[&str], len: u64| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let mut dev = Device::new(&SsdConfig::resolve("small-tlc", &sets).unwrap(), 1).unwrap();
        dev.submit(SimTime::ZERO, req(Op::Read, 0, len, SimTime::ZERO))
            .unwrap();
        dev.run_to_idle().unwrap();
        dev.backend().nand().unwrap().hil.cpu_busy()
    };
    let base = busy(&[], 16384);
    // small-tlc maps 4 KiB units: a 16 KiB read is 4 of them.
    assert_eq!(
        busy(&["controller.ftl_unit_cost=\"3us\""], 16384),
        base + SimTime::from_us(12)
    );
    assert_eq!(
        busy(&["controller.ftl_unit_cost=\"3us\""], 512),
        busy(&[], 512) + SimTime::from_us(3)
    );
    let raw = |cost: &str| {
        // The fusion device's NAND is raw.
        let sets = vec![
            "nand.blocks_per_plane=4".to_string(),
            format!("controller.ftl_unit_cost=\"{cost}\""),
        ];
        let cfg = SsdConfig::resolve("seed002-fusion", &sets).unwrap();
        let mut dev = Device::new(&cfg, 1).unwrap();
        dev.submit(SimTime::ZERO, req(Op::Read, 0, 8192, SimTime::ZERO))
            .unwrap();
        dev.run_to_idle().unwrap();
        dev.backend().nand().unwrap().hil.cpu_busy()
    };
    assert_eq!(raw("3us"), raw("0us"));
    let e = common::refusal("small-tlc", "controller.ftl_unit_cost=\"2s\"");
    assert!(
        e.contains("controller.ftl_unit_cost") && e.contains("at most 1 s"),
        "{e}"
    );
}

/// With `controller.ftl_unit_cost`, GC's page moves and erases are the soft core's work too
/// (seed 002 Fig. 12's baseline): each costs one unit, charged as the core takes its next
/// command, so the core's busy time is the commands' work plus all GC work but what came after
/// the last command.
#[test]
fn the_firmware_pays_for_gc_moves_and_erases_on_a_device_with_an_ftl() {
    let sets = vec!["controller.ftl_unit_cost=\"2us\"".to_string()];
    let cfg = SsdConfig::resolve("small-tlc", &sets).unwrap();
    let job = ssdlab::JobSpec::from_json(
        r#"{"name":"gc","rw":"randwrite","bs":"4KiB","iodepth":8,"io_count":20000}"#,
    )
    .unwrap();
    let opts = ssdlab::RunOptions {
        seed: 1,
        record_requests: false,
        stats_interval: None,
        power_cut_event: None,
        power_cut_at: None,
    };
    let r = ssdlab::run(&cfg, &job, &opts, &mut |_, _| true)
        .unwrap()
        .result;
    let d = &r.device;
    let gc_units = (d.gc_units_moved + d.erases) as f64;
    assert!(gc_units > 10_000.0, "the job must collect: {gc_units}");
    // 500 ns of command handling and one 4 KiB unit (2 µs) per command.
    let commands = 20_000.0 * (0.5e-6 + 2e-6);
    let busy = r.utilisation.controller_cpu_busy_s;
    let all = commands + gc_units * 2e-6;
    assert!(busy <= all + 1e-9, "{busy} > {all}");
    assert!(busy >= all - 0.01 * gc_units * 2e-6, "{busy} < {all}");
}
