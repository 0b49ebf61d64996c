//! A GC that goes on without making progress ends the run with an error, not an event loop
//! without end (`Ftl::watch_progress`).
//!
//! The drive is the MQSim import of `tests/test_import.py` (other choices): 7 % over-provisioning
//! of which a 5 % free-block threshold leaves little, so that after its steady-state
//! preconditioning victims hold a few stale units each, and a cached map, so that nearly every
//! unit a collection moves costs a translation-page program. At full size (32 planes, a 2 MiB
//! map cache against 953 translation pages) 300 host writes started collections that ran
//! 280,000 runs, 41 M units moved, with the planes' free blocks stationary below their threshold,
//! and had not ended. Cut to 8 planes with a 16-page map cache it is the same storm, smaller:
//! let run, its drain ends after 14,500 runs and 4.7 M events, having moved over four times the
//! drive's units; the check stops it at twice. The same drive with the whole map drains in a
//! few collections.

use ssdlab::device::{Device, Flags, Request};
use ssdlab::request::Op;
use ssdlab::SsdConfig;

/// The import (`fixtures/mqsim-other-choices.toml`) on one channel of two packages, with a
/// cached map of 16 translation pages, or (`cached` false) the whole map in memory.
fn drive(cached: bool) -> SsdConfig {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mqsim-other-choices.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for line in text.lines() {
        let line = match line.split_once(" #").map_or(line, |(l, _)| l).trim_end() {
            "channels = 2" => "channels = 1",
            "packages_per_channel = 4" => "packages_per_channel = 2",
            "mapping_cache = \"2MiB\"" if cached => "mapping_cache = \"128KiB\"",
            "mapping = \"cached\"" if !cached => "mapping = \"full\"",
            l if !cached && l.starts_with("mapping_cache") => continue,
            l => l,
        };
        lines.push(line);
    }
    SsdConfig::from_toml_str(&lines.join("\n"), "mqsim-other-choices.toml").unwrap()
}

/// Precondition `cfg`'s drive, write 1,000 random 4 KiB blocks, then run at most `budget`
/// events: the result of that last run and the device.
fn write_then_drain(cfg: &SsdConfig, budget: u64) -> (ssdlab::Result<bool>, Device) {
    let mut dev = Device::new(cfg, 1).unwrap();
    ssdlab::run::precondition(&mut dev, cfg, 1).unwrap();
    let blocks = dev.capacity_bytes() / 4096;
    let mut x: u64 = 7;
    for _ in 0..1000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let now = dev.now();
        let r = Request {
            op: Op::Write,
            offset: ((x >> 20) % blocks) * 4096,
            len: 4096,
            queue: 0,
            flags: Flags::NONE,
            arrival: now,
        };
        dev.submit(now, r).unwrap();
        // A little of the device's work between writes (the writes queue up otherwise).
        dev.run_to_idle_or_event(dev.events() + 1_000).unwrap();
    }
    let end = dev.events() + budget;
    let r = dev.run_to_idle_or_event(end).map(|(_, stopped)| stopped);
    (r, dev)
}

#[test]
fn a_drain_whose_translation_programs_take_the_room_it_frees_ends_with_an_error() {
    let cfg = drive(true);
    // A budget of events, so that a check that stopped nothing fails here rather than hangs
    // (without the check the drain ended after 4.7 M events, with no error).
    let (r, dev) = write_then_drain(&cfg, 100_000_000);
    let e = match r {
        Err(e) => e.to_string(),
        Ok(stopped) => panic!(
            "no error; stopped at the budget: {stopped}, {} events, {} GC runs",
            dev.events(),
            dev.backend().gc_counts().runs
        ),
    };
    assert!(e.contains("GC cannot make progress"), "{e}");
    assert!(e.contains("ftl.mapping = \"cached\""), "{e}");
    assert!(e.contains("raise ftl.over_provisioning"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn the_same_drive_with_the_whole_map_drains_and_stops() {
    let cfg = drive(false);
    let (r, dev) = write_then_drain(&cfg, 100_000_000);
    assert!(!r.unwrap(), "the drain did not end within the budget");
    let gc = dev.backend().gc_counts();
    assert!(
        gc.runs > 0,
        "no collection: the test no longer drains anything"
    );
    dev.backend().page_ftl().unwrap().check().unwrap();
}
