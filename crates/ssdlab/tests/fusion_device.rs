//! Seed 002's fusion device (`seed002-fusion`): raw NAND and PCM behind one thin firmware. A
//! request names its space with `Flags::PCM`; each side keeps the rules and the timing of its
//! single-medium device.

use ssdlab::config::Medium;
use ssdlab::device::{Device, Flags, Request, Status};
use ssdlab::request::Op;
use ssdlab::sim::SimTime;
use ssdlab::SsdConfig;

/// The preset made small (4 blocks per chip) so the test builds it quickly; the geometry
/// otherwise is Table 6's.
fn fusion() -> SsdConfig {
    SsdConfig::resolve("seed002-fusion", &["nand.blocks_per_plane=4".into()]).unwrap()
}

fn req(op: Op, offset: u64, len: u64, flags: Flags, at: SimTime) -> Request {
    Request {
        op,
        offset,
        len,
        queue: 0,
        flags,
        arrival: at,
    }
}

/// Submit one request on an idle device at its present and run it: (latency, status).
fn one(dev: &mut Device, op: Op, offset: u64, len: u64, flags: Flags) -> (SimTime, Status) {
    let r = req(op, offset, len, flags, dev.now());
    let id = dev.submit(r.arrival, r).unwrap();
    let done = dev.run_to_idle().unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, id);
    (done[0].1 - r.arrival, done[0].2)
}

#[test]
fn the_preset_is_table_6() {
    let cfg = SsdConfig::resolve("seed002-fusion", &[]).unwrap();
    assert_eq!(cfg.medium(), Medium::Fusion);
    let dev = Device::new(&fusion(), 1).unwrap();
    let hw = dev.hardware_info().unwrap();
    assert_eq!((hw.nand_channels, hw.nand_chips_per_channel), (8, 2));
    assert_eq!((hw.pcm_channels, hw.pcm_chips_per_channel), (2, 8));
    assert_eq!(hw.nand_page_bytes, 2048);
    assert_eq!(hw.nand_block_bytes(), 128 * 1024);
    assert_eq!(hw.pcm_bytes, 2 * 8 * 16 * 1024 * 1024);
    // The full preset: 2 GiB chips.
    let full = ssdlab::device::HardwareInfo::of(&cfg).unwrap();
    assert_eq!(full.nand_bytes / 16, 2 << 30);
    assert_eq!(full.nand_blocks, 16 * 16384);
    // Single-medium devices publish none.
    let nand = Device::new(&SsdConfig::resolve("small-tlc", &[]).unwrap(), 1).unwrap();
    assert!(nand.hardware_info().is_none());
}

#[test]
fn each_space_keeps_its_medium_rules() {
    let mut dev = Device::new(&fusion(), 1).unwrap();
    let pcm = Flags::PCM;
    // PCM: in place, at any byte, twice.
    for _ in 0..2 {
        let (_, s) = one(&mut dev, Op::Write, 1000, 100, pcm);
        assert_eq!(s, Status::Ok);
    }
    // The same byte address in NAND is a misaligned program there.
    let (_, s) = one(&mut dev, Op::Write, 1000, 100, Flags::NONE);
    assert_eq!(s, Status::Misaligned);
    // NAND pages in order, once per erase.
    let (_, s) = one(&mut dev, Op::Write, 0, 2048, Flags::NONE);
    assert_eq!(s, Status::Ok);
    let (_, s) = one(&mut dev, Op::Write, 0, 2048, Flags::NONE);
    assert_eq!(s, Status::ProgramOrder);
    let (lat, s) = one(&mut dev, Op::Erase, 0, 128 * 1024, Flags::NONE);
    assert_eq!(s, Status::Ok);
    assert!(lat >= SimTime::from_us(1400), "erase took {lat:?}");
    let (_, s) = one(&mut dev, Op::Write, 0, 2048, Flags::NONE);
    assert_eq!(s, Status::Ok, "programmable again after the erase");
    // The P/E counts the host reads back, and the PCM's wear.
    assert_eq!(dev.backend().raw().unwrap().erase_counts()[0], 1);
    assert_eq!(dev.backend().raw().unwrap().erase_counts()[1], 0);
    let p = dev.backend().pcm().unwrap();
    assert_eq!(p.media.wear.max(), 2, "line 1 written twice");
    assert_eq!(p.media.counters.bytes_written, 200);
}

#[test]
fn bad_addresses_are_one_line_errors_naming_the_space() {
    let mut dev = Device::new(&fusion(), 1).unwrap();
    let hw = dev.hardware_info().unwrap();
    let t = SimTime::ZERO;
    let e = dev
        .submit(t, req(Op::Read, hw.pcm_bytes - 256, 512, Flags::PCM, t))
        .unwrap_err()
        .to_string();
    assert!(e.contains("PCM space") && !e.contains('\n'), "{e}");
    let e = dev
        .submit(t, req(Op::Read, hw.nand_bytes, 2048, Flags::NONE, t))
        .unwrap_err();
    // The request opens the message; its length and the space's end are data.
    let i = e.invalid().expect("parts as data");
    let at = format!("read request at byte {}", hw.nand_bytes);
    assert_eq!(
        (i.origin.as_str(), i.field.as_deref(), i.value.as_deref()),
        (at.as_str(), Some("len"), Some("2048 bytes"))
    );
    let e = e.to_string();
    assert!(e.contains("beyond the device's"), "{e}");
    let e = dev
        .submit(t, req(Op::Erase, 0, 128 * 1024, Flags::PCM, t))
        .unwrap_err()
        .to_string();
    assert!(e.contains("updated in place"), "{e}");
    // Past the end of u64.
    assert!(dev
        .submit(t, req(Op::Read, u64::MAX, 2, Flags::PCM, t))
        .is_err());
    // The PCM flag on a device without a PCM space.
    let mut nand = Device::new(&SsdConfig::resolve("small-tlc", &[]).unwrap(), 1).unwrap();
    let e = nand
        .submit(t, req(Op::Read, 0, 4096, Flags::PCM, t))
        .unwrap_err()
        .to_string();
    assert!(e.contains("only a fusion device"), "{e}");
    assert!(
        e.starts_with("read request at byte 0, field `flags`: got PCM"),
        "{e}"
    );
    // Nothing was submitted.
    assert!(dev.run_to_idle().unwrap().is_empty());
}

#[test]
fn each_side_times_as_its_single_medium_device() {
    // The PCM side against seed002-pcm (same PCM, link, host and firmware time).
    let mut f = Device::new(&fusion(), 1).unwrap();
    let mut p = Device::new(&SsdConfig::resolve("seed002-pcm", &[]).unwrap(), 1).unwrap();
    for (op, off, len) in [
        (Op::Write, 0, 512),
        (Op::Read, 0, 512),
        (Op::Write, 4096, 128),
        (Op::Read, 8192, 4096),
    ] {
        let a = one(&mut f, op, off, len, Flags::PCM);
        let b = one(&mut p, op, off, len, Flags::NONE);
        assert_eq!(a, b, "{op:?} {off} {len}");
    }
    // The NAND side against the same NAND as a raw device without PCM.
    let mut raw_cfg = fusion();
    raw_cfg.pcm = None;
    assert_eq!(raw_cfg.medium(), Medium::Nand);
    let mut r = Device::new(&raw_cfg, 1).unwrap();
    let mut f = Device::new(&fusion(), 1).unwrap();
    for (op, off, len) in [
        (Op::Write, 0, 2048),
        (Op::Read, 0, 2048),
        (Op::Write, 2048, 8192),
        (Op::Erase, 0, 128 * 1024),
    ] {
        let a = one(&mut f, op, off, len, Flags::NONE);
        let b = one(&mut r, op, off, len, Flags::NONE);
        assert_eq!(a, b, "{op:?} {off} {len}");
    }
}

#[test]
fn a_nand_page_read_is_table_7_plus_the_path() {
    // Media and channel: tR 60.1 us + 2 KiB at 133 MT/s (15.398 us) = Table 7's 75.5 us; the
    // rest is the host, the firmware and PCIe Gen1 x4, as for a 512 B PCM read (45.9 us of
    // media). The two differ by media time and by 1.5 KiB more up the link.
    let mut f = Device::new(&fusion(), 1).unwrap();
    let (nand, _) = one(&mut f, Op::Read, 0, 2048, Flags::NONE);
    let (pcm, _) = one(&mut f, Op::Read, 0, 512, Flags::PCM);
    let media_us = 75.5 - 45.9;
    let diff = nand.as_us_f64() - pcm.as_us_f64();
    // 1536 B more over PCIe Gen1 x4 (1 GB/s of data): 1.5 us plus the TLP headers.
    assert!(
        diff > media_us + 1.5 && diff < media_us + 2.0,
        "NAND read {nand:?}, PCM read {pcm:?}"
    );
}

#[test]
fn a_fusion_config_must_have_no_device_ftl() {
    let e = SsdConfig::resolve("seed002-fusion", &["ftl.kind=\"page\"".into()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ftl.kind") && e.contains("\"page\"") && e.contains("\"none\""),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

/// A PCM read far above the NAND's map units (the top of a 256 MB PCM on a NAND of 4 blocks
/// per chip) completes: the controller's map warm-up is for NAND reads within the map.
#[test]
fn a_pcm_read_at_the_top_of_the_pcm_completes() {
    let mut dev = Device::new(&fusion(), 1).unwrap();
    let top = dev.hardware_info().unwrap().pcm_bytes - 512;
    let (_, status) = one(&mut dev, Op::Read, top, 512, Flags::PCM);
    assert_eq!(status, Status::Ok);
}
