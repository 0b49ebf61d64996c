//! The host interfaces other than NVMe: what limits commands in flight, link limits, per-command
//! costs, the DRAM-interface buffer, and bad configs.

mod common;

use ssdlab::stats::result::RunResult;
use ssdlab::{run, JobSpec, SsdConfig};

fn cfg(preset: &str, overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve(preset, &ov).unwrap_or_else(|e| panic!("{e}"))
}

fn go(c: &SsdConfig, job: &str) -> RunResult {
    let j = JobSpec::from_toml_str(job, "test job").unwrap();
    run(c, &j, &common::opts(3), &mut |_, _| true)
        .unwrap_or_else(|e| panic!("{e}"))
        .result
}

fn iface(kind: &str, link: &str, qd: u32, extra: &[&str]) -> SsdConfig {
    let mut ov = vec![
        format!("interface.kind={kind}"),
        format!("interface.link={link}"),
        format!("interface.queue_depth={qd}"),
        "interface.io_queues=1".into(),
        "interface.interrupt=pin".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
    cfg("small-tlc", &ov)
}

fn mb_s(r: &RunResult, op: &str) -> f64 {
    r.ops[op].bandwidth_mb_s
}

const RAND_READ_QD32: &str = "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 32\nio_count = 3000";
const SEQ_READ: &str = "rw = \"read\"\nbs = \"1MiB\"\niodepth = 32\nio_count = 150";

#[test]
fn ide_runs_one_command_at_a_time() {
    let ide = go(&iface("ide", "ideal", 1, &[]), RAND_READ_QD32);
    let qd1 = go(
        &iface("ide", "ideal", 1, &[]),
        "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 1\nio_count = 3000",
    );
    let sata = go(&iface("sata", "sata3", 32, &[]), RAND_READ_QD32);
    // Queue depth 32 gains nothing on IDE, while SATA NCQ spreads reads over the dies.
    let ratio = ide.total.iops / qd1.total.iops;
    assert!((0.95..1.05).contains(&ratio), "IDE QD32/QD1 = {ratio}");
    assert!(sata.total.iops > 3.0 * ide.total.iops);
    assert_eq!(ide.interface.device_queue_depth, 1);
    assert_eq!(ide.interface.kind, "ide");
}

#[test]
fn sata_ncq_off_is_one_at_a_time() {
    let ncq = go(&iface("sata", "sata3", 32, &[]), RAND_READ_QD32);
    let legacy = go(
        &iface("sata", "sata3", 1, &["interface.ata.ncq=false"]),
        RAND_READ_QD32,
    );
    assert!(ncq.total.iops > 3.0 * legacy.total.iops);
}

#[test]
fn links_cap_sequential_bandwidth_below_their_rate() {
    for (kind, link, qd, cap_mb_s) in [
        ("sata", "sata3", 32, 600.0),
        ("sata", "sata1", 32, 150.0),
        ("ide", "udma5", 1, 100.0),
        ("ufs", "hs-g1ax1", 32, 124.8),
        ("emmc", "hs200", 32, 200.0),
        ("emmc", "hs400", 32, 400.0),
    ] {
        let r = go(
            &iface(kind, link, qd, &["precondition.fill=sequential"]),
            SEQ_READ,
        );
        let bw = mb_s(&r, "read");
        // Framing and per-command costs keep it below the raw rate, but not far below.
        assert!(
            bw < cap_mb_s && bw > 0.8 * cap_mb_s,
            "{kind} {link}: {bw} MB/s against {cap_mb_s}"
        );
    }
}

#[test]
fn emmc_command_queue_beats_one_at_a_time() {
    let cq = go(&iface("emmc", "hs400", 32, &[]), RAND_READ_QD32);
    let no_cq = go(
        &iface(
            "emmc",
            "hs400",
            1,
            // Before 5.1 there is no command queue: off by default.
            &["interface.emmc.version=\"5.0\""],
        ),
        RAND_READ_QD32,
    );
    assert!(cq.total.iops > 2.0 * no_cq.total.iops);
}

#[test]
fn qd1_latency_orders_interfaces_by_protocol_cost() {
    let job = "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 1\nio_count = 500";
    let lat = |c: &SsdConfig| go(c, job).ops["read"].latency_us.mean;
    let fill = "precondition.fill=sequential";
    let nvme = lat(&cfg("small-tlc", &[fill]));
    let udma2 = lat(&iface("ide", "udma2", 1, &[fill]));
    let emmc = lat(&iface("emmc", "hs200", 32, &[fill]));
    // 4 KiB at 33 MB/s alone is 123 µs on the cable; eMMC CQ adds its queueing commands.
    assert!(udma2 > nvme + 100.0, "udma2 {udma2} nvme {nvme}");
    assert!(emmc > nvme, "emmc {emmc} nvme {nvme}");
}

#[test]
fn every_interface_is_deterministic() {
    let job = "rw = \"randrw\"\nbs = \"16KiB\"\niodepth = 8\nio_count = 400";
    for c in [
        iface("ide", "udma6", 1, &[]),
        iface("sata", "sata3", 32, &[]),
        iface("ufs", "hs-g3x2", 32, &[]),
        iface("emmc", "hs400", 32, &[]),
        cfg("seed000-lpddr3-dramif", &["precondition.fill=none"]),
    ] {
        let a = common::without_wall(&go(&c, job));
        let b = common::without_wall(&go(&c, job));
        assert_eq!(a, b, "{}", c.interface.kind);
    }
}

#[test]
fn dram_interface_buffer_and_bus() {
    let job = "rw = \"read\"\nbs = \"256KiB\"\niodepth = 1\nnumjobs = 4\nio_count = 40";
    let big = go(&cfg("seed000-lpddr3-dramif", &[]), job);
    let small = go(
        &cfg(
            "seed000-lpddr3-dramif",
            &["interface.dram.buffer_size=\"256KiB\""],
        ),
        job,
    );
    let d = big.interface.dram.as_ref().unwrap();
    // Every byte crosses the storage channel and the memory channel once each.
    assert_eq!(d.stats.data_bytes, 40 * 256 * 1024);
    assert_eq!(d.stats.memory_channel_bytes, d.stats.data_bytes);
    assert!(d.stats.storage_channel_bytes > d.stats.data_bytes);
    // A buffer of one chunk serialises the four threads.
    let ds = small.interface.dram.as_ref().unwrap();
    assert!(ds.stats.buffer_waits > 0);
    assert!(mb_s(&small, "read") < 0.8 * mb_s(&big, "read"));
    assert!(ds.stats.peak_buffer_bytes <= 256 * 1024);
    // The DMA engine caps reads near its 450 MB/s.
    assert!(mb_s(&big, "read") < 450.0);
}

#[test]
fn dram_interface_protocol_overhead_falls_with_chunk_size() {
    let overhead = |chunk: &str| {
        let c = cfg(
            "seed000-lpddr3-dramif",
            &[
                "controller.skip_media=true",
                &format!("interface.dram.chunk_size=\"{chunk}\""),
            ],
        );
        let r = go(
            &c,
            &format!("rw = \"read\"\nbs = \"{chunk}\"\niodepth = 1\nio_count = 50"),
        );
        let iface_bw = r.interface.dram.as_ref().unwrap().interface_bandwidth_mb_s;
        1.0 - mb_s(&r, "read") / iface_bw
    };
    let (o4, o64, o512) = (overhead("4KiB"), overhead("64KiB"), overhead("512KiB"));
    assert!(o4 > o64 && o64 > o512, "{o4} {o64} {o512}");
    assert!(o4 > 0.4 && o512 < 0.1, "{o4} {o512}");
}

/// Seed 000 Fig. 7: the protocol overhead latency (latency less the data movement, bytes ÷
/// interface bandwidth) grows with the chunk by one DMA set-up per piece: a 512 KiB chunk is four
/// 128 KiB pieces, a 4 KiB chunk one. The set-ups are per-piece protocol work, not data movement.
#[test]
fn dram_interface_overhead_latency_grows_by_a_dma_setup_per_piece() {
    let overhead_us = |chunk: &str, bytes: f64| {
        let c = cfg(
            "seed000-lpddr3-dramif",
            &[
                "controller.skip_media=true",
                &format!("interface.dram.chunk_size=\"{chunk}\""),
                "interface.dram.invalidate_piece=\"128KiB\"",
                "interface.dram.dma_setup=\"10us\"",
            ],
        );
        let r = go(
            &c,
            &format!("rw = \"read\"\nbs = \"{chunk}\"\niodepth = 1\nio_count = 50"),
        );
        let iface_bw = r.interface.dram.as_ref().unwrap().interface_bandwidth_mb_s;
        r.ops["read"].latency_us.mean - bytes / iface_bw
    };
    let (small, large) = (overhead_us("4KiB", 4096.0), overhead_us("512KiB", 524288.0));
    // Three more pieces, three more 10 µs set-ups; nothing else in the command grows.
    assert!(
        (large - small - 30.0).abs() < 1.0,
        "overhead 4 KiB {small:.2} µs, 512 KiB {large:.2} µs"
    );
}

#[test]
fn dram_interface_cached_write_hides_programs() {
    let job = "rw = \"randwrite\"\nbs = \"4KiB\"\niodepth = 1\nnumjobs = 4\nio_count = 400";
    let base = ["precondition.fill=none"];
    let plain = go(&cfg("seed000-lpddr3-dramif", &base), job);
    let cached = go(
        &cfg(
            "seed000-lpddr3-dramif",
            &[
                "precondition.fill=none",
                "interface.dram.cached_write=true",
                "cache.capacity=\"16MiB\"",
                "cache.mode=\"write-back\"",
            ],
        ),
        job,
    );
    assert!(mb_s(&cached, "write") > 3.0 * mb_s(&plain, "write"));
}

#[test]
fn bad_interface_configs_name_field_value_and_limit() {
    let cases: &[(&[&str], &str)] = &[
        (&["interface.kind=scsi"], "interface.kind`: got \"scsi\""),
        (
            &[
                "interface.kind=ide",
                "interface.link=ideal",
                "interface.io_queues=1",
                "interface.interrupt=pin",
                "interface.queue_depth=1024",
            ],
            "interface.queue_depth`: got 1024, expected 1 to 1: IDE runs one command at a time",
        ),
        (
            &[
                "interface.kind=sata",
                "interface.link=sata3",
                "interface.io_queues=1",
                "interface.queue_depth=64",
            ],
            "expected 1 to 32: SATA NCQ has 32 tags",
        ),
        (
            &[
                "interface.kind=ufs",
                "interface.link=hs-g3x2",
                "interface.io_queues=1",
                "interface.queue_depth=64",
                "interface.interrupt=pin",
            ],
            "32 transfer request slots",
        ),
        (
            &[
                "interface.kind=emmc",
                "interface.link=hs400",
                "interface.io_queues=1",
                "interface.queue_depth=33",
                "interface.interrupt=pin",
            ],
            "eMMC 5.1 command queue holds 32 tasks",
        ),
        (
            &[
                "interface.kind=emmc",
                "interface.link=hs400",
                "interface.io_queues=1",
                "interface.queue_depth=8",
                "interface.interrupt=pin",
                "interface.emmc.version=\"4.5\"",
            ],
            "interface.queue_depth`: got 8, expected 1 to 1: eMMC 4.5 without command queueing",
        ),
        (
            &[
                "interface.kind=emmc",
                "interface.link=hs400",
                "interface.io_queues=1",
                "interface.queue_depth=1",
                "interface.interrupt=pin",
                "interface.emmc.version=\"5.0\"",
                "interface.emmc.command_queue=true",
            ],
            "interface.emmc.command_queue`: got true with eMMC 5.0",
        ),
        (
            &[
                "interface.kind=ide",
                "interface.link=ideal",
                "interface.io_queues=1",
                "interface.queue_depth=1",
                "interface.interrupt=msix",
            ],
            "interface.interrupt`: got \"msix\"",
        ),
        (
            &[
                "interface.kind=sata",
                "interface.link=sata9",
                "interface.io_queues=1",
                "interface.queue_depth=32",
            ],
            "interface.link`: got \"sata9\"",
        ),
        (
            &[
                "interface.kind=ufs",
                "interface.link=hs-g3x2",
                "interface.io_queues=4",
                "interface.queue_depth=32",
                "interface.interrupt=pin",
            ],
            "interface.io_queues`: got 4, expected 1",
        ),
    ];
    for (ov, want) in cases {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        let e = SsdConfig::resolve("small-tlc", &ov)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{ov:?}: {e}");
    }
    let e = SsdConfig::resolve(
        "seed000-lpddr3-dramif",
        &["interface.dram.cached_write=true".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("interface.dram.cached_write`: got true, but there is no write buffer"),
        "{e}"
    );
    let e = SsdConfig::resolve(
        "seed000-lpddr3-dramif",
        &["interface.dram.buffer_size=\"1000KiB\"".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("interface.dram.buffer_size`: got 1024000 bytes, expected a power of two"),
        "{e}"
    );
}

#[test]
fn traces_replay_on_every_interface_with_requests_split_into_commands() {
    use ssdlab::workload::trace::replay::TraceJob;
    // 1 MiB requests: more than one command on every interface (the DRAM interface splits at
    // its 256 KiB chunk, the others at their MDTS).
    let path = std::env::temp_dir().join(format!("ssdlab-iface-{}.csv", std::process::id()));
    let mut text = String::from("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n");
    for k in 0..40u64 {
        let op = if k % 3 == 0 { "Write" } else { "Read" };
        text += &format!(
            "{},h,0,{op},{},1048576,0\n",
            128_000_000_000_000_000u64 + k * 1000,
            k << 20
        );
    }
    std::fs::write(&path, text).unwrap();
    let job = TraceJob::from_json(
        &serde_json::json!({"trace": path.to_str().unwrap(), "mode": "afap", "iodepth": 8})
            .to_string(),
    )
    .unwrap();
    for c in [
        iface("ide", "udma6", 1, &["interface.mdts=\"128KiB\""]),
        iface("sata", "sata3", 32, &[]),
        iface("ufs", "hs-g3x2", 32, &[]),
        iface("emmc", "hs400", 32, &[]),
        cfg("seed000-lpddr3-dramif", &[]),
    ] {
        let r = ssdlab::run_replay(&c, &job, &common::opts(1), &mut |_, _| true)
            .unwrap_or_else(|e| panic!("{}: {e}", c.interface.kind))
            .result;
        assert_eq!(r.sim.requests, 40, "{}", c.interface.kind);
        assert_eq!(r.sim.stop_reason, "trace end", "{}", c.interface.kind);
    }
    std::fs::remove_file(&path).ok();
}

#[test]
fn dram_interface_buffer_fragmentation_is_visible() {
    // Mixed sizes leave small blocks alive in both halves of the buddy-allocated buffer: a
    // 512 KiB command then waits although 512 KiB or more is free in total.
    let c = cfg(
        "seed000-lpddr3-dramif",
        &["interface.dram.chunk_size=\"512KiB\""],
    );
    let r = go(
        &c,
        "rw = \"randread\"\nbs = { \"64KiB\" = 40, \"128KiB\" = 30, \"512KiB\" = 30 }\nnumjobs = 8\nio_count = 1000",
    );
    let d = r.interface.dram.as_ref().unwrap();
    assert!(d.stats.fragmentation_waits > 0, "{:?}", d.stats);
    assert!(d.stats.fragmentation_waits < d.stats.buffer_waits);
}

#[test]
fn sata_flush_waits_for_the_ncq_queue_and_holds_it() {
    use ssdlab::device::{Device, Flags, Request};
    use ssdlab::request::Op;
    use ssdlab::sim::SimTime;
    let c = iface("sata", "sata3", 32, &["precondition.fill=sequential"]);
    let mut sys = Device::new(&c, 1).unwrap();
    sys.backend_mut()
        .page_ftl_mut()
        .unwrap()
        .precondition(true, 0.0, 1)
        .unwrap();
    let submit = |sys: &mut Device, op: Op, offset: u64, len: u64| {
        let r = Request {
            op,
            offset,
            len,
            queue: 0,
            flags: Flags::NONE,
            arrival: SimTime::ZERO,
        };
        sys.submit(SimTime::ZERO, r).unwrap()
    };
    let mut ids = Vec::new();
    for k in 0..8u64 {
        ids.push(submit(&mut sys, Op::Read, k * 65536, 4096));
    }
    let flush = submit(&mut sys, Op::Flush, 0, 0);
    let after: Vec<u32> = (8..16u64)
        .map(|k| submit(&mut sys, Op::Read, k * 65536, 4096))
        .collect();
    let done = sys.run_to_idle().unwrap();
    let at = |id: u32| done.iter().find(|d| d.0 == id).unwrap().1;
    let flush_at = at(flush);
    assert!(
        ids.iter().all(|&i| at(i) < flush_at),
        "queued reads finish first"
    );
    assert!(
        after.iter().all(|&i| at(i) > flush_at),
        "later reads wait for the flush"
    );
}

/// One override moves the NVMe small-tlc preset to each other protocol: the protocol's link,
/// queues, queue depth and interrupt follow the kind, and the run reports the new interface.
#[test]
fn one_override_moves_a_preset_to_another_interface() {
    let cases = [
        ("ide", "udma6", 1, 1),
        ("sata", "sata3", 32, 32),
        ("ufs", "hs-g3x2", 32, 32),
        ("emmc", "hs400", 32, 32),
        ("dram", "lpddr3-1200x32", 32, 32),
    ];
    for (kind, link, qd, device_qd) in cases {
        let c = cfg("small-tlc", &[&format!("interface.kind={kind}")]);
        assert_eq!(c.interface.link.text(), link, "{kind}");
        assert_eq!(c.interface.io_queues, 1, "{kind}");
        assert_eq!(c.interface.queue_depth, qd, "{kind}");
        // What the preset says of the host stays: its transfer limit and latencies.
        assert_eq!(c.interface.mdts.0, 256 << 10, "{kind}");
        let r = go(
            &c,
            "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 4\nio_count = 200",
        );
        assert_eq!(r.interface.kind, kind);
        assert_eq!(r.interface.device_queue_depth, device_qd, "{kind}");
        assert_eq!(r.sim.requests, 200, "{kind}");
    }
    // Back to NVMe from the UFS preset: PCIe, eight queues, MSI-X.
    let nvme = cfg("seed000-ufs20-galaxy-s6", &["interface.kind=nvme"]);
    assert_eq!(nvme.interface.link.text(), "pcie3x4");
    assert_eq!(nvme.interface.io_queues, 8);
    assert_eq!(nvme.interface.queue_depth, 1024);
    assert_eq!(
        nvme.interface.interrupt,
        ssdlab::config::InterruptMode::Msix
    );
}

/// A field set beside the kind wins over the kind's default, in either order; the queue depth
/// follows the protocol settings given with it.
#[test]
fn a_field_set_with_the_kind_wins_over_its_default() {
    let c = cfg(
        "small-tlc",
        &[
            "interface.link=sata2",
            "interface.kind=sata",
            "interface.queue_depth=8",
        ],
    );
    assert_eq!(c.interface.link.text(), "sata2");
    assert_eq!(c.interface.queue_depth, 8);
    assert_eq!(c.interface.interrupt, ssdlab::config::InterruptMode::Msix);
    let legacy = cfg(
        "small-tlc",
        &["interface.kind=sata", "interface.ata.ncq=false"],
    );
    assert_eq!(legacy.interface.queue_depth, 1);
    let emmc50 = cfg(
        "small-tlc",
        &["interface.kind=emmc", "interface.emmc.version=\"5.0\""],
    );
    assert_eq!(emmc50.interface.queue_depth, 1);
    // A whole [interface] table given is all set: nothing is replaced.
    let e = SsdConfig::resolve(
        "small-tlc",
        &["interface={kind=\"ide\", link=\"ideal\", io_queues=1, queue_depth=4, mdts=\"128KiB\", interrupt=\"pin\"}".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("interface.queue_depth`: got 4, expected 1 to 1"),
        "{e}"
    );
}

/// The same kind keeps the preset's own values, and the result of one override is the config the
/// interface report's SATA sweep spells out field by field.
#[test]
fn the_same_kind_keeps_the_preset_and_one_override_equals_the_long_form() {
    let ufs = cfg("seed000-ufs20-galaxy-s6", &["interface.kind=ufs"]);
    let preset = cfg("seed000-ufs20-galaxy-s6", &[]);
    assert_eq!(ufs.to_json(), preset.to_json());
    let nvme = cfg(
        "small-tlc",
        &["interface.kind=nvme", "interface.io_queues=2"],
    );
    assert_eq!(nvme.interface.io_queues, 2);
    assert_eq!(nvme.interface.queue_depth, 1024);
    let short = cfg("small-tlc", &["interface.kind=sata"]);
    let long = cfg(
        "small-tlc",
        &[
            "interface.kind=sata",
            "interface.link=sata3",
            "interface.ata.ncq=true",
            "interface.queue_depth=32",
            "interface.io_queues=1",
            "interface.interrupt=msix",
        ],
    );
    assert_eq!(short.to_json(), long.to_json());
}
