//! NVMe host traces (the kernel's `nvme_setup_cmd` tracepoint text, docs/traces.md) replayed
//! end to end: a write's data placement directive reaches its FDP handle, zone commands reach
//! a zoned drive's zones, and what the drive cannot take is refused naming the trace's line.
//! The fixtures are written by hand in the kernel's format (`tests/fixtures/traces/nvme_*.txt`).

mod common;

use ssdlab::ctrl::zones::ZoneState;
use ssdlab::driver::replay::ReplayDriver;
use ssdlab::workload::trace::replay::{DriveTarget, Replay, TraceJob};
use ssdlab::{run_replay, Device, SsdConfig};

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/traces/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn cfg(preset: &str, overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve(preset, &ov).unwrap()
}

fn tjob(path: &str, extra: &str) -> TraceJob {
    TraceJob::from_json(&format!(r#"{{"trace":{path:?}{extra}}}"#)).unwrap()
}

fn replay_json(cfg: &SsdConfig, j: &TraceJob) -> ssdlab::Result<serde_json::Value> {
    let out = run_replay(cfg, j, &common::opts(1), &mut |_, _| true)?;
    Ok(common::without_wall(&out.result))
}

/// nvme_fdp.txt: 21 commands, 19 of them requests; writes carrying placement identifiers
/// 1 (8 × 32 KiB), 3 (4 × 32 KiB) and 2 (8 KiB, with FUA), and without a directive 2 × 32 KiB
/// plus a 4 KiB Write Zeroes, which go to handle 0. The admin command, the Dataset Management
/// (no ranges in the trace) and the other events are counted, not replayed.
#[test]
fn placement_identifiers_of_a_kernel_trace_reach_their_fdp_handles() {
    let c = cfg("small-tlc", &["fdp.handles=4"]);
    let j = tjob(&fixture("nvme_fdp.txt"), "");
    let r = replay_json(&c, &j).unwrap();
    let t = &r["trace"];
    assert_eq!(t["format"], "nvme");
    assert_eq!(t["records"], 19);
    assert_eq!(t["nvme_dsm_not_replayed"], 1);
    // The admin command, the DSM, 3 completions and 1 nvme_sq event.
    assert_eq!(t["not_request_lines"], 6);
    let f = &r["device"]["fdp"];
    let host = |h: usize| f["per_handle"][h]["host_bytes_written"].as_u64().unwrap();
    assert_eq!(host(0), 2 * 32768 + 4096);
    assert_eq!(host(1), 8 * 32768);
    assert_eq!(host(2), 8192);
    assert_eq!(host(3), 4 * 32768);
    assert_eq!(r["ops"]["read"]["count"], 2);
    assert_eq!(r["ops"]["flush"]["count"], 1);
    // Deterministic.
    assert_eq!(r, replay_json(&c, &j).unwrap());
    // Sent without their directives, every write goes to handle 0.
    let r = replay_json(
        &c,
        &tjob(&fixture("nvme_fdp.txt"), r#","ignore_placement":true"#),
    )
    .unwrap();
    let f = &r["device"]["fdp"];
    assert_eq!(
        f["per_handle"][0]["host_bytes_written"].as_u64().unwrap(),
        14 * 32768 + 8192 + 4096
    );
}

/// A placement identifier the drive has no handle for, a directive on a drive without FDP, and
/// a zone command on a conventional drive: one line naming the trace's line; with
/// skip_bad_lines the requests are counted and the rest replayed.
#[test]
fn what_the_drive_cannot_take_is_refused_naming_the_line() {
    let j = tjob(&fixture("nvme_fdp.txt"), "");
    let e = replay_json(&cfg("small-tlc", &["fdp.handles=2"]), &j)
        .unwrap_err()
        .to_string();
    // Line 21 is the first write to placement identifier 3.
    assert!(
        e.contains("nvme_fdp.txt, line 21: placement identifier 3 names no placement handle"),
        "{e}"
    );
    assert!(e.contains("fdp.handles = 2"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = replay_json(&cfg("small-tlc", &[]), &j)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 15: a write with placement identifier 1"),
        "{e}"
    );
    assert!(e.contains("no Flexible Data Placement"), "{e}");
    let z = tjob(&fixture("nvme_zns.txt"), "");
    let e = replay_json(&cfg("small-tlc", &[]), &z)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nvme_zns.txt, line 10: a append (a zone command), but the drive has no zones"),
        "{e}"
    );
    // Counted with skip_bad_lines: the four placement-3 writes and the placement-2 one.
    let r = replay_json(
        &cfg("small-tlc", &["fdp.handles=2"]),
        &tjob(&fixture("nvme_fdp.txt"), r#","skip_bad_lines":true"#),
    )
    .unwrap();
    assert_eq!(r["trace"]["skipped_bad_lines"], 5);
    assert_eq!(r["trace"]["per_pass"], 14);
    assert!(r["trace"]["bad_lines"][0]
        .as_str()
        .unwrap()
        .contains("line 21"));
    // Devices are namespaces, filtered and named as nvmeXnY.
    let c = cfg("small-tlc", &["fdp.handles=4"]);
    let r = replay_json(
        &c,
        &tjob(&fixture("nvme_fdp.txt"), r#","devices":["nvme0n1"]"#),
    )
    .unwrap();
    assert_eq!(r["trace"]["per_pass"], 19);
    let e = replay_json(
        &c,
        &tjob(&fixture("nvme_fdp.txt"), r#","devices":["nvme0n2"]"#),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("got nvme0n2, but no request") && e.contains("device(s) nvme0n1"),
        "{e}"
    );
    // lba_bytes belongs to NVMe traces only.
    let e = TraceJob::from_json(r#"{"trace":"x.csv","format":"msr","lba_bytes":4096}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("field `lba_bytes`"), "{e}");
    let e = TraceJob::from_json(r#"{"trace":"x","lba_bytes":1000}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("got 1000, expected a power of two"), "{e}");
}

/// Replay `path` on `cfg` one request at a time (afap, iodepth 1: zone commands stay in trace
/// order with the writes), and give back the device.
fn replay_on(cfg: &SsdConfig, path: &str, extra: &str) -> Device {
    let j = tjob(path, &format!(r#","mode":"afap","iodepth":1{extra}"#));
    let src = Replay::on_drive(&j, DriveTarget::of(cfg), 1).unwrap();
    let mut dev = Device::new(cfg, 1).unwrap();
    let mut drv = ReplayDriver::new(src, &j);
    drv.start(&mut dev);
    assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
    assert_eq!(drv.finish().unwrap(), "trace end");
    dev
}

/// nvme_zns.txt on zns-tlc (4 KiB blocks, zones of 2048): zone 0 written 2 MiB then reset,
/// zone 1 appended three times (one printed as command bytes, as kernels before 5.9 do) then
/// finished, zone 2 opened, zone 3 written and closed.
#[test]
fn zone_commands_of_a_kernel_trace_reach_the_zones() {
    let c = cfg("zns-tlc", &[]);
    let dev = replay_on(&c, &fixture("nvme_zns.txt"), r#","lba_bytes":4096"#);
    let z = &dev.backend().zoned().unwrap().zones;
    assert_eq!((z.state(0), z.wp(0)), (ZoneState::Empty, 0));
    // Full: its write pointer is at the capacity, and 48 blocks hold data.
    assert_eq!(z.state(1), ZoneState::Full);
    assert!(dev.is_mapped(2048 + 47) && !dev.is_mapped(2048 + 48));
    assert_eq!(z.state(2), ZoneState::ExplicitlyOpened);
    assert_eq!((z.state(3), z.wp(3)), (ZoneState::Closed, 8));
    assert_eq!(z.counters.resets, 1);
    assert_eq!(z.counters.finishes, 1);
    assert_eq!(dev.host().completed(), 11);
    assert_eq!(
        dev.host().failed().0,
        0,
        "every command was in order: {:?}",
        dev.host().failed().1
    );
    // Read as 512-byte blocks (the default), the same trace lands on the wrong blocks: the
    // zone commands address no zone start and the writes miss the write pointers.
    let dev = replay_on(&c, &fixture("nvme_zns.txt"), "");
    assert!(dev.host().failed().0 > 0);
}

/// Select All: a reset of every zone, in a trace written here.
#[test]
fn select_all_resets_every_zone() {
    let dir = std::env::temp_dir().join(format!("ssdlab-nvme-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("all.txt");
    let pre = "app-1 [000] ..... 5.0000";
    let cmd =
        "nvme_setup_cmd: nvme0: disk=nvme0n1, qid=1, cmdid=1, nsid=1, flags=0x0, meta=0x0, cmd=";
    let text = format!(
        "{pre}01: {cmd}(nvme_cmd_write slba=0, len=15, ctrl=0x0, dsmgmt=0, reftag=0)\n\
         {pre}02: {cmd}(nvme_cmd_write slba=4096, len=15, ctrl=0x0, dsmgmt=0, reftag=0)\n\
         {pre}03: {cmd}(nvme_cmd_zone_mgmt_send slba=0, zsa=4:reset zone, all=1)\n"
    );
    std::fs::write(&path, text).unwrap();
    let c = cfg("zns-tlc", &[]);
    let dev = replay_on(&c, path.to_str().unwrap(), r#","lba_bytes":4096"#);
    let z = &dev.backend().zoned().unwrap().zones;
    assert_eq!((z.wp(0), z.wp(2)), (0, 0));
    assert_eq!(z.counters.resets, 2);
    assert_eq!(dev.host().failed().0, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The register-level host's trace replay sends reads, writes, trims and flushes without a
/// directive: an NVMe trace's placement hint or zone command is refused at its line there,
/// pointing to `ssdlab run --trace`, rather than dropped.
#[test]
fn the_register_level_replay_refuses_what_it_cannot_send() {
    use ssdlab::driver::nvme_regs::host_driver::HostDriver;
    use ssdlab::driver::nvme_regs::workload::run_trace;
    use ssdlab::driver::nvme_regs::{Controller, NvmeOptions};
    let c = cfg("small-tlc", &["fdp.handles=4"]);
    let irq = c.interface.interrupt;
    let ctrl = Controller::new(
        &c,
        &NvmeOptions {
            lba_size: 512,
            seed: 7,
        },
    )
    .unwrap();
    let mut d = HostDriver::bring_up(ctrl, 64, irq).unwrap();
    let e = run_trace(
        &mut d,
        &fixture("nvme_fdp.txt"),
        &Default::default(),
        4,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("nvme_fdp.txt, line 15: a write with placement identifier 1"),
        "{e}"
    );
    assert!(e.contains("ssdlab run --trace"), "{e}");
    let e = run_trace(
        &mut d,
        &fixture("nvme_zns.txt"),
        &Default::default(),
        4,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("nvme_zns.txt, line 10: a append (zone command)"),
        "{e}"
    );
}
