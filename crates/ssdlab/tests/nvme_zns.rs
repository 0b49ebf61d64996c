//! The register-level NVMe controller on a zoned drive (`[zns]`): the NVMe 2.0 command-set
//! registers and Identify structures, Zone Management Send and Receive and Zone Append over
//! real queues, the data a host reads back, and an oracle run of random zone commands against
//! the zone state machine and a byte model of the namespace.

use proptest::prelude::*;
use ssdlab::ctrl::zones::{ZoneAction, ZoneState, Zones};
use ssdlab::driver::nvme_regs::host_driver::{appended_lba, status_of, Done, HostDriver};
use ssdlab::driver::nvme_regs::structs::{decode_report_zones, decode_zns_id_ns, to_json};
use ssdlab::driver::nvme_regs::{io, reg, Controller, NvmeOptions, Sqe, Status};
use ssdlab::SsdConfig;

fn zns_cfg(overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve("zns-tlc", &ov).unwrap()
}

fn driver(overrides: &[&str]) -> HostDriver {
    let c = zns_cfg(overrides);
    let ctrl = Controller::new(&c, &NvmeOptions::default()).unwrap();
    HostDriver::bring_up(ctrl, 64, c.interface.interrupt).unwrap()
}

fn u32at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

fn block(fill: u8) -> Vec<u8> {
    vec![fill; 4096]
}

/// The status the ZNS command set gives a state machine refusal (SCT 1, B8h–BFh), or
/// Invalid Field.
fn nvme_status(s: ssdlab::device::Status) -> Status {
    Status::of_device(s)
}

/// (state, write pointer) of every zone, from a full report.
fn report_all(d: &mut HostDriver) -> Vec<(u8, u64, u64)> {
    let (b, done) = d.report_zones(0, 0, false, 64 + 64 * 128).unwrap();
    assert!(status_of(&done).is_success());
    let n = u64at(&b, 0) as usize;
    (0..n)
        .map(|k| {
            let at = 64 + 64 * k;
            (b[at + 1] >> 4, u64at(&b, at + 16), u64at(&b, at + 24))
        })
        .collect()
}

#[test]
fn a_zoned_drive_offers_the_io_command_sets_and_identifies_its_zones() {
    let mut d = driver(&["zns.max_open_zones=4", "zns.max_active_zones=6"]);
    let cap = d.ctrl.read64(reg::CAP);
    assert_ne!(cap & (1 << 43), 0, "CAP.CSS bit 6: I/O command sets");
    assert_ne!(cap & (1 << 37), 0, "CAP.CSS bit 0: NVM");
    assert_eq!(d.ctrl.read32(reg::VS), 0x0002_0000, "NVMe 2.0");
    assert_eq!(
        (d.ctrl.read32(reg::CC) >> 4) & 7,
        0b110,
        "the driver chose all sets"
    );
    // The namespace's CSI descriptor (type 4) says Zoned.
    let descs = d.identify(0x03, 1).unwrap();
    assert_eq!((descs[20], descs[21], descs[24]), (4, 1, 0x02));
    // ZNS Identify Namespace: MAR/MOR 0's based, RAZB, zone size per LBA format.
    let zns = d.identify_csi(0x05, 1, 0x02).unwrap();
    assert_eq!(u32at(&zns, 4), 5, "MAR: 6 active zones, 0's based");
    assert_eq!(u32at(&zns, 8), 3, "MOR: 4 open zones");
    assert_eq!(zns[2] & 1, 1, "OZCS: reads across zone boundaries");
    assert_eq!(u64at(&zns, 2816), 2048, "8 MiB zones of 4 KiB blocks");
    assert_eq!(
        u64at(&zns, 2816 + 16),
        16384,
        "the same zones in 512-byte blocks"
    );
    let json = to_json(&decode_zns_id_ns(&zns, 1));
    assert!(
        json.starts_with("{\"zoc\":0,\"ozcs\":1,\"mar\":5,\"mor\":3,"),
        "{json}"
    );
    assert!(json.contains("\"lbafe\":[{\"zsze\":2048,\"zdes\":0},{\"zsze\":16384,\"zdes\":0}]"));
    // ZASL 0 (MDTS), and the command-set vector: NVM and Zoned.
    assert_eq!(d.identify_csi(0x06, 0, 0x02).unwrap()[0], 0);
    let sets = d.identify(0x1C, 0).unwrap();
    assert_eq!(u64at(&sets, 0), 0b101);
    // No limit: all ones.
    let mut free = driver(&[]);
    let zns = free.identify_csi(0x05, 1, 0x02).unwrap();
    assert_eq!((u32at(&zns, 4), u32at(&zns, 8)), (u32::MAX, u32::MAX));
}

#[test]
fn a_conventional_drive_knows_no_zone_command() {
    let c = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let ctrl = Controller::new(&c, &NvmeOptions::default()).unwrap();
    let mut d = HostDriver::bring_up(ctrl, 16, c.interface.interrupt).unwrap();
    assert_eq!(d.ctrl.read64(reg::CAP) & (1 << 43), 0);
    assert_eq!(d.ctrl.read32(reg::VS), 0x0001_0400);
    for op in [io::ZONE_MGMT_SEND, io::ZONE_MGMT_RECV, io::ZONE_APPEND] {
        let done = d
            .submit_raw(&[Sqe {
                nsid: 1,
                ..Sqe::new(op)
            }])
            .unwrap();
        assert_eq!(done[0].cqe.status, Status::INVALID_OPCODE, "opcode {op:#x}");
    }
    assert!(d.identify_csi(0x05, 1, 0x02).is_err(), "CNS 05h is 2.0's");
}

#[test]
fn zone_commands_need_all_command_sets_enabled_and_a_matching_lba_size() {
    // Enabled with CC.CSS = 000b (NVM only), the zone opcodes are invalid.
    let c = zns_cfg(&[]);
    let mut ctrl = Controller::new(&c, &NvmeOptions::default()).unwrap();
    ctrl.write32(reg::AQA, 31 | (31 << 16));
    ctrl.write64(reg::ASQ, 0x10_0000);
    ctrl.write64(reg::ACQ, 0x11_0000);
    ctrl.write32(reg::CC, 1 | (6 << 16) | (4 << 20));
    assert_eq!(ctrl.read32(reg::CSTS) & 3, 1, "ready with the NVM set only");
    // A CSS value the controller does not offer is a fatal status naming it.
    let mut bad = Controller::new(&c, &NvmeOptions::default()).unwrap();
    bad.write32(reg::AQA, 31 | (31 << 16));
    bad.write64(reg::ASQ, 0x10_0000);
    bad.write64(reg::ACQ, 0x11_0000);
    bad.write32(reg::CC, 1 | (0b111 << 4) | (6 << 16) | (4 << 20));
    assert_eq!(bad.read32(reg::CSTS) & 2, 2);
    assert!(bad.fatal_reason().unwrap().contains("CC.CSS = 7"));
    // 512-byte blocks do not fit a drive whose zones count 4 KiB ones.
    let err = Controller::new(
        &c,
        &NvmeOptions {
            lba_size: 512,
            seed: 1,
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("got 512, expected 4096"), "{err}");
}

#[test]
fn writes_appends_resets_and_reports_through_the_queues() {
    let mut d = driver(&[]);
    let zl = 2048u64;
    // Everything starts empty, each write pointer at its zone's start.
    let zones = report_all(&mut d);
    assert_eq!(zones.len(), 128);
    assert!(zones.iter().all(|&(s, slba, wp)| s == 0x1 && wp == slba));
    // A write at the write pointer opens the zone implicitly.
    d.write(zl, &block(0xA1)).unwrap();
    // One off the write pointer is Zone Invalid Write, and changes nothing.
    let off = d.write(zl + 5, &block(0xEE)).err().unwrap().to_string();
    assert!(off.contains("Zone Invalid Write"), "{off}");
    assert_eq!(d.read(zl + 5, 1).unwrap(), block(0));
    // Appends land at the write pointer, and say where.
    let a = d
        .zone_append(zl, &[block(0xB2), block(0xB3)].concat())
        .unwrap();
    assert!(status_of(&a).is_success());
    assert_eq!(appended_lba(&a), zl + 1);
    let b = d.zone_append(zl, &block(0xC4)).unwrap();
    assert_eq!(appended_lba(&b), zl + 3);
    assert_eq!(
        d.read(zl, 4).unwrap(),
        [0xA1, 0xB2, 0xB3, 0xC4].map(block).concat()
    );
    // An append not at a zone's start is Invalid Field.
    let bad = d.zone_append(zl + 1, &block(1)).unwrap();
    assert_eq!(status_of(&bad), Status::INVALID_FIELD);
    let zones = report_all(&mut d);
    assert_eq!(
        zones[1],
        (0x2, zl, zl + 4),
        "implicitly opened, 4 blocks in"
    );
    // Close, then finish: full, its write pointer at the capacity's end.
    assert!(status_of(&d.zone_mgmt_send(zl, 1, false).unwrap()).is_success());
    assert_eq!(report_all(&mut d)[1].0, 0x4);
    assert!(status_of(&d.zone_mgmt_send(zl, 2, false).unwrap()).is_success());
    assert_eq!(report_all(&mut d)[1], (0xe, zl, 2 * zl));
    let full = d.zone_append(zl, &block(1)).unwrap();
    assert_eq!(
        status_of(&full),
        nvme_status(ssdlab::device::Status::ZoneFull)
    );
    // A reset empties it: its data reads as zeros.
    assert!(status_of(&d.zone_mgmt_send(zl, 4, false).unwrap()).is_success());
    assert_eq!(report_all(&mut d)[1], (0x1, zl, zl));
    assert_eq!(d.read(zl, 4).unwrap(), vec![0; 4 * 4096]);
    // Open explicitly, then reset every zone with Select All.
    d.write(0, &block(7)).unwrap();
    assert!(status_of(&d.zone_mgmt_send(3 * zl, 3, false).unwrap()).is_success());
    assert_eq!(report_all(&mut d)[3].0, 0x3);
    assert!(status_of(&d.zone_mgmt_send(0, 4, true).unwrap()).is_success());
    assert!(report_all(&mut d).iter().all(|z| z.0 == 0x1));
    assert_eq!(d.read(0, 1).unwrap(), block(0));
    // An unknown action is Invalid Field; a zone start beyond the namespace, out of range.
    assert_eq!(
        status_of(&d.zone_mgmt_send(0, 9, false).unwrap()),
        Status::INVALID_FIELD
    );
    assert_eq!(
        status_of(&d.zone_mgmt_send(128 * zl, 4, false).unwrap()),
        Status::LBA_OUT_OF_RANGE
    );
}

#[test]
fn report_zones_filters_by_state_and_counts_partial_reports() {
    let mut d = driver(&[]);
    let zl = 2048u64;
    for z in [2u64, 5, 9] {
        d.write(z * zl, &block(1)).unwrap();
    }
    // Only the implicitly opened ones (reporting option 2), from zone 3 on.
    let (b, _) = d.report_zones(3 * zl + 17, 2, false, 4096).unwrap();
    let v = decode_report_zones(&b);
    let json = to_json(&v);
    assert!(json.starts_with("{\"nr_zones\":2,\"zone_list\":[{\"slba\":10240,\"wp\":10241,\"cap\":2048,\"state\":\"IMP_OPENED\",\"type\":\"SEQWRITE_REQ\",\"attrs\":0,\"attrs_info\":0}"), "{json}");
    // Room for one descriptor: without the partial bit the header counts every match, with
    // it only those returned.
    let (b, _) = d.report_zones(0, 1, false, 128).unwrap();
    assert_eq!(u64at(&b, 0), 125);
    let (b, _) = d.report_zones(0, 1, true, 128).unwrap();
    assert_eq!(u64at(&b, 0), 1);
    assert_eq!(u64at(&b, 64 + 16), 0, "the first empty zone");
    // A reporting option beyond 7 and the extended report (no descriptor extensions) are
    // Invalid Field; a buffer above the largest transfer is refused before it is sent.
    let sqe = |cdw13: u32| Sqe {
        nsid: 1,
        prp1: 0x0100_0000,
        cdw12: 15,
        cdw13,
        ..Sqe::new(io::ZONE_MGMT_RECV)
    };
    for cdw13 in [8 << 8, 1] {
        let done = d.submit_raw(&[sqe(cdw13)]).unwrap();
        assert_eq!(
            done[0].cqe.status,
            Status::INVALID_FIELD,
            "cdw13 {cdw13:#x}"
        );
    }
    assert!(d.report_zones(0, 0, false, 1 << 30).is_err());
}

#[test]
fn open_and_active_limits_answer_with_the_zns_statuses() {
    let mut d = driver(&["zns.max_open_zones=2", "zns.max_active_zones=2"]);
    let zl = 2048u64;
    for z in 0..2u64 {
        assert!(status_of(&d.zone_mgmt_send(z * zl, 3, false).unwrap()).is_success());
    }
    // Both explicitly open: a third open finds no open resource to take back, and no active
    // one either.
    let third = d.zone_mgmt_send(2 * zl, 3, false).unwrap();
    assert_eq!(
        status_of(&third),
        nvme_status(ssdlab::device::Status::TooManyActiveZones)
    );
    let w = d.write(2 * zl, &block(1)).err().unwrap().to_string();
    assert!(w.contains("Too Many Active Zones"), "{w}");
    // Closing one frees its open resource but keeps it active: still no room for a third.
    assert!(status_of(&d.zone_mgmt_send(0, 1, false).unwrap()).is_success());
    let w = d.write(2 * zl, &block(1)).err().unwrap().to_string();
    assert!(w.contains("Too Many Active Zones"), "{w}");
    // Finishing it releases both: now the third opens.
    assert!(status_of(&d.zone_mgmt_send(0, 2, false).unwrap()).is_success());
    d.write(2 * zl, &block(1)).unwrap();
}

/// One random host command for the oracle run.
#[derive(Clone, Debug)]
enum Cmd {
    Write {
        zone: u32,
        at_wp: bool,
        blocks: u32,
    },
    Append {
        zone: u32,
        blocks: u32,
        off_start: bool,
    },
    Send {
        zone: u32,
        action: u8,
        all: bool,
    },
    Read {
        zone: u32,
        block: u32,
    },
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        4 => (0..6u32, any::<bool>(), 1..5u32)
            .prop_map(|(zone, at_wp, blocks)| Cmd::Write { zone, at_wp, blocks }),
        3 => (0..6u32, 1..5u32, prop::bool::weighted(0.1))
            .prop_map(|(zone, blocks, off_start)| Cmd::Append { zone, blocks, off_start }),
        3 => (0..6u32, 1..6u8, prop::bool::weighted(0.15))
            .prop_map(|(zone, action, all)| Cmd::Send { zone, action, all }),
        2 => (0..6u32, 0..24u32).prop_map(|(zone, block)| Cmd::Read { zone, block }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random commands through the queues, against two oracles beside the controller: the zone
    /// state machine run directly (every status, state and write pointer must agree) and a map
    /// of the bytes each LBA must read (writes and appends where the drive put them, zeros
    /// after a reset or where nothing was written).
    #[test]
    fn zone_commands_agree_with_the_state_machine_and_the_data(
        cmds in prop::collection::vec(cmd(), 1..60),
        limits in prop_oneof![Just((0u32, 0u32)), Just((2, 3)), Just((1, 1))],
    ) {
        let (open, active) = limits;
        let mut d = driver(&[
            "zns.zone_size=\"1MiB\"",
            "zns.zone_capacity=\"96KiB\"",
            "zns.layout=\"die\"",
            &format!("zns.max_open_zones={open}"),
            &format!("zns.max_active_zones={active}"),
        ]);
        let (zl, cap) = (256u64, 24u64);
        let count = (d.nsze() / zl) as u32;
        let mut model = Zones::new(count, zl, cap, open, active);
        let mut bytes: std::collections::HashMap<u64, u8> = Default::default();
        let mut fill = 1u8;
        for c in cmds {
            match c {
                Cmd::Write { zone, at_wp, blocks } => {
                    let wp = zone as u64 * zl + model.wp(zone);
                    let slba = if at_wp { wp } else { wp + 1 };
                    fill = fill.wrapping_add(1).max(1);
                    let data = vec![fill; 4096 * blocks as usize];
                    let want = model.write(slba, blocks as u64);
                    let got = d.write(slba, &data);
                    match want {
                        Ok(()) => {
                            prop_assert!(got.is_ok(), "{got:?}");
                            for k in 0..blocks as u64 { bytes.insert(slba + k, fill); }
                        }
                        Err(s) => {
                            let msg = got.expect_err("refused").to_string();
                            prop_assert!(msg.contains(nvme_status(s).name()), "{msg} vs {s:?}");
                        }
                    }
                }
                Cmd::Append { zone, blocks, off_start } => {
                    let zslba = zone as u64 * zl + off_start as u64;
                    fill = fill.wrapping_add(1).max(1);
                    let data = vec![fill; 4096 * blocks as usize];
                    let want = model.append(zslba, blocks as u64);
                    let got: Done = d.zone_append(zslba, &data).unwrap();
                    match want {
                        Ok(at) => {
                            prop_assert!(status_of(&got).is_success());
                            prop_assert_eq!(appended_lba(&got), at);
                            for k in 0..blocks as u64 { bytes.insert(at + k, fill); }
                        }
                        Err(s) => prop_assert_eq!(status_of(&got), nvme_status(s)),
                    }
                }
                Cmd::Send { zone, action, all } => {
                    let act = ZoneAction::of_code(action).unwrap();
                    let slba = zone as u64 * zl;
                    let want = model.manage(act, slba, all);
                    let got = d.zone_mgmt_send(slba, action, all).unwrap();
                    match want {
                        Ok(changed) => {
                            prop_assert!(status_of(&got).is_success(), "{:?}", status_of(&got));
                            if act == ZoneAction::Reset {
                                for ch in changed {
                                    let s = ch.zone as u64 * zl;
                                    bytes.retain(|&l, _| l < s || l >= s + zl);
                                }
                            }
                        }
                        Err(s) => prop_assert_eq!(status_of(&got), nvme_status(s)),
                    }
                }
                Cmd::Read { zone, block } => {
                    let lba = zone as u64 * zl + block as u64;
                    if model.state(zone) == ZoneState::Offline {
                        continue;
                    }
                    let got = d.read(lba, 1).unwrap();
                    let want = bytes.get(&lba).copied().unwrap_or(0);
                    prop_assert_eq!(got, vec![want; 4096], "LBA {}", lba);
                }
            }
        }
        // The drive's report agrees with the model zone by zone.
        let (b, _) = d.report_zones(0, 0, false, 64 + 64 * count as u64).unwrap();
        for z in 0..count {
            let at = 64 + 64 * z as usize;
            prop_assert_eq!(b[at + 1] >> 4, model.state(z).code(), "zone {}", z);
            prop_assert_eq!(u64at(&b, at + 24), model.descriptor(z).wp, "zone {}", z);
        }
    }
}

#[test]
fn a_zbd_job_runs_through_the_queues_with_its_resets() {
    use ssdlab::driver::nvme_regs::workload::run_job;
    use ssdlab::JobSpec;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/jobs/zns-seqwrite.toml"
    ))
    .unwrap();
    let mut spec = JobSpec::from_toml_str(&text, "zns-seqwrite.toml").unwrap();
    // A quarter of zns-tlc (32 zones of 8 MiB), and of the job: still 1.25 × the drive.
    let small = ["nand.blocks_per_plane=32"];
    spec.io_count = Some(2560);
    let mut d = driver(&small);
    let s = run_job(&mut d, &spec, 1).unwrap();
    // 128 KiB writes over 1.25 × the drive: the last quarter wraps onto 8 zones, each reset
    // once before its first write; no write is refused.
    assert_eq!((s.writes, s.errors, s.zone_commands), (2560, 0, 8));
    // The 8 zones written again are written whole: every zone ends full.
    let (b, _) = d.report_zones(0, 0, false, 64 + 64 * 32).unwrap();
    assert_eq!(u64at(&b, 0), 32);
    for z in 0..32 {
        let at = 64 + 64 * z;
        assert_eq!(
            (b[at + 1] >> 4, u64at(&b, at + 24)),
            (0xe, (z as u64 + 1) * 2048)
        );
    }
    // As appends: the same placement, the drive choosing each LBA.
    spec.zone_append = true;
    let mut d = driver(&small);
    let s = run_job(&mut d, &spec, 1).unwrap();
    assert_eq!((s.writes, s.errors, s.zone_commands), (2560, 0, 8));
    // A writing job without zonemode is refused on a zoned drive, as by the job driver.
    let mut plain =
        JobSpec::from_toml_str("rw = \"randwrite\"\nbs = \"4KiB\"\nio_count = 10", "test").unwrap();
    let err = run_job(&mut d, &plain, 1).unwrap_err().to_string();
    assert!(err.contains("zonemode`: absent, expected \"zbd\""), "{err}");
    plain.rw = ssdlab::workload::job::Rw::Randread;
    assert_eq!(run_job(&mut d, &plain, 1).unwrap().errors, 0);
}
