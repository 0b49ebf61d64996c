//! The register-level NVMe controller's I/O: PRP transfers, data read back, deallocation,
//! status codes, SMART counters, phase tags, a full CQ, workloads through the host driver, and
//! model-decided media errors.

mod nvme_rig;

use nvme_rig::*;
use ssdlab::driver::nvme_regs::host_driver::{HostDriver, IoCmd, DATA_ADDR};
use ssdlab::driver::nvme_regs::structs::smart_off as so;
use ssdlab::driver::nvme_regs::{admin, feat, io, reg, Controller, Cqe, NvmeOptions, Sqe, Status};
use ssdlab::SsdConfig;

// ---------------------------------------------------------------------------------------------
// I/O

#[test]
fn write_read_back_with_prp_list_and_unaligned_offset() {
    let mut d = driver(&[]);
    // 64 KiB from a buffer 512 bytes into a page: PRP1 with offset, then a PRP list.
    let data = pattern(64 * 1024, 3);
    let buf = DATA_ADDR + 512;
    d.write_at(100, &data, buf).unwrap();
    let (back, _) = d.read_at(100, 16, DATA_ADDR + 0x10_0000 + 1024).unwrap();
    assert_eq!(back, data);
    // Two pages exactly: PRP2 is a page address.
    let small = pattern(8192, 9);
    d.write(5, &small).unwrap();
    assert_eq!(d.read(5, 2).unwrap(), small);
    // Overlapping rewrite of part of the range.
    let patch = pattern(4096, 77);
    d.write(101, &patch).unwrap();
    let back = d.read(100, 16).unwrap();
    assert_eq!(&back[..4096], &data[..4096]);
    assert_eq!(&back[4096..8192], &patch[..]);
    assert_eq!(&back[8192..], &data[8192..]);
    // The largest transfer (MDTS, 256 KiB) with a list.
    let big = pattern(256 * 1024, 5);
    d.write_at(1000, &big, DATA_ADDR + 4).unwrap();
    assert_eq!(d.read(1000, 64).unwrap(), big);
    // Never-written blocks read as zeros.
    assert_eq!(d.read(50_000, 1).unwrap(), vec![0u8; 4096]);
}

#[test]
fn chained_prp_list_is_followed() {
    // 1 MiB MDTS: 256 pages, with PRP1 offset → 256 list entries; build a list split over two
    // list pages by hand (the last entry of the first page points to the second).
    let mut d = driver(&["interface.mdts=\"1MiB\""]);
    assert_eq!(d.max_transfer(), 1 << 20);
    let len = 1usize << 20;
    let data = pattern(len, 11);
    let buf = 0x4000_0000u64 + 256; // PRP1 with an offset
    d.ctrl.mem.write(buf, &data);
    let first_page_end = buf - 256 + 4096;
    let pages: Vec<u64> = (0..256u64).map(|k| first_page_end + k * 4096).collect();
    let list1 = 0x3000_0000u64 + 4096 - 8 * 10; // 10 slots left on the first list page
    let list2 = 0x3100_0000u64;
    for (k, &p) in pages.iter().take(9).enumerate() {
        d.ctrl.mem.write_u64(list1 + 8 * k as u64, p);
    }
    d.ctrl.mem.write_u64(list1 + 8 * 9, list2); // chain
    for (k, &p) in pages.iter().skip(9).enumerate() {
        d.ctrl.mem.write_u64(list2 + 8 * k as u64, p);
    }
    let w = Sqe {
        nsid: 1,
        prp1: buf,
        prp2: list1,
        cdw10: 2000,
        cdw12: 255,
        ..Sqe::new(io::WRITE)
    };
    let r = d.submit_raw(&[w]).unwrap();
    assert!(status(&r[0]).is_success(), "{}", status(&r[0]));
    assert_eq!(d.read(2000, 256).unwrap(), data);
}

#[test]
fn deallocate_reads_zeros_and_flush_completes() {
    let mut d = driver(&[]);
    let data = pattern(16 * 4096, 1);
    d.write(200, &data).unwrap();
    d.deallocate(204, 4).unwrap();
    let back = d.read(200, 16).unwrap();
    assert_eq!(&back[..4 * 4096], &data[..4 * 4096]);
    assert!(back[4 * 4096..8 * 4096].iter().all(|&b| b == 0));
    assert_eq!(&back[8 * 4096..], &data[8 * 4096..]);
    let id = d.identify(0, 1).unwrap();
    assert_eq!(u64at(&id, 16), 12, "NUSE after deallocating 4 of 16");
    d.flush().unwrap();
    // Flush to all namespaces.
    let r = d
        .submit_raw(&[Sqe {
            nsid: 0xFFFF_FFFF,
            ..Sqe::new(io::FLUSH)
        }])
        .unwrap();
    assert!(status(&r[0]).is_success());
    // DSM with two ranges, one out of range: nothing is deallocated.
    d.write(300, &vec![9u8; 4096]).unwrap();
    let mut ranges = [0u8; 32];
    ranges[4..8].copy_from_slice(&1u32.to_le_bytes());
    ranges[8..16].copy_from_slice(&300u64.to_le_bytes());
    ranges[20..24].copy_from_slice(&8u32.to_le_bytes());
    ranges[24..32].copy_from_slice(&(d.nsze() - 4).to_le_bytes());
    d.ctrl.mem.write(0x5000_0000, &ranges);
    let dsm = Sqe {
        nsid: 1,
        prp1: 0x5000_0000,
        cdw10: 1,
        cdw11: 1 << 2,
        ..Sqe::new(io::DSM)
    };
    let r = d.submit_raw(&[dsm]).unwrap();
    assert_eq!(status(&r[0]), Status::LBA_OUT_OF_RANGE);
    assert_eq!(d.read(300, 1).unwrap(), vec![9u8; 4096]);
}

#[test]
fn io_status_codes() {
    let mut d = driver(&[]);
    let nsze = d.nsze();
    let rd = |slba: u64, nlb: u32| Sqe {
        nsid: 1,
        prp1: DATA_ADDR,
        prp2: 0x0900_0000,
        cdw10: slba as u32,
        cdw11: (slba >> 32) as u32,
        cdw12: nlb - 1,
        ..Sqe::new(io::READ)
    };
    let cases: Vec<(Sqe, Status, &str)> = vec![
        (
            Sqe {
                nsid: 1,
                ..Sqe::new(0x7F)
            },
            Status::INVALID_OPCODE,
            "opcode 7Fh",
        ),
        (
            Sqe {
                nsid: 1,
                ..Sqe::new(0x05)
            },
            Status::INVALID_OPCODE,
            "Compare",
        ),
        (
            Sqe {
                nsid: 2,
                ..rd(0, 1)
            },
            Status::INVALID_NAMESPACE,
            "namespace 2",
        ),
        (
            Sqe {
                nsid: 0,
                ..rd(0, 1)
            },
            Status::INVALID_NAMESPACE,
            "namespace 0",
        ),
        (
            Sqe {
                nsid: 3,
                ..Sqe::new(io::FLUSH)
            },
            Status::INVALID_NAMESPACE,
            "flush ns 3",
        ),
        (rd(nsze, 1), Status::LBA_OUT_OF_RANGE, "past the end"),
        (
            rd(nsze - 1, 2),
            Status::LBA_OUT_OF_RANGE,
            "straddles the end",
        ),
        (rd(u64::MAX, 1), Status::LBA_OUT_OF_RANGE, "SLBA overflow"),
        (rd(0, 65), Status::INVALID_FIELD, "over MDTS"),
        (
            Sqe {
                prp1: DATA_ADDR + 1,
                ..rd(0, 1)
            },
            Status::INVALID_PRP_OFFSET,
            "PRP1 odd",
        ),
        (
            Sqe {
                prp2: DATA_ADDR + 4,
                ..rd(0, 2)
            },
            Status::INVALID_PRP_OFFSET,
            "PRP2 offset",
        ),
        (
            Sqe {
                prp2: 0x0900_0004,
                ..rd(0, 8)
            },
            Status::INVALID_PRP_OFFSET,
            "list pointer",
        ),
        (
            Sqe {
                fuse: 2,
                ..rd(0, 1)
            },
            Status::INVALID_FIELD,
            "fused",
        ),
        (
            Sqe {
                psdt: 1,
                ..rd(0, 1)
            },
            Status::INVALID_FIELD,
            "SGL",
        ),
    ];
    for (s, want, what) in cases {
        let r = d.submit_raw(&[s]).unwrap();
        assert_eq!(status(&r[0]), want, "{what}");
    }
    // A PRP list entry with an offset.
    d.ctrl.mem.write_u64(0x0A00_0000, DATA_ADDR + 0x1_0000 + 12);
    let r = d
        .submit_raw(&[Sqe {
            prp2: 0x0A00_0000,
            ..rd(0, 8)
        }])
        .unwrap();
    assert_eq!(
        status(&r[0]),
        Status::INVALID_PRP_OFFSET,
        "list entry offset"
    );
    // Two commands with one cid in one doorbell: the second conflicts.
    let a = Sqe {
        cid: 0x4242,
        ..rd(0, 1)
    };
    let r = d.submit_with_cids(&[a, a]).unwrap();
    let mut st: Vec<Status> = r.iter().map(status).collect();
    st.sort_by_key(|s| s.sc);
    assert_eq!(st, vec![Status::SUCCESS, Status::CID_CONFLICT]);
}

#[test]
fn smart_counts_what_the_host_did() {
    let mut d = driver(&[]);
    let before = d.smart_log().unwrap();
    assert_eq!(u128at(&before, so::HOST_WRITE_COMMANDS), 0);
    assert_eq!(u16at(&before, so::TEMPERATURE), 313);
    assert_eq!(before[so::AVAIL_SPARE], 100);
    assert_eq!(before[so::SPARE_THRESH], 10);
    assert_eq!(u128at(&before, so::POWER_CYCLES), 1);
    let data = pattern(64 * 1024, 2);
    for k in 0..10u64 {
        d.write(k * 16, &data).unwrap();
    }
    for k in 0..3u64 {
        d.read(k * 16, 16).unwrap();
    }
    // A failed read does not count.
    let r = d
        .submit_raw(&[Sqe {
            nsid: 1,
            cdw10: u32::MAX,
            cdw11: u32::MAX,
            ..Sqe::new(io::READ)
        }])
        .unwrap();
    assert_eq!(status(&r[0]), Status::LBA_OUT_OF_RANGE);
    d.flush().unwrap();
    let s = d.smart_log().unwrap();
    assert_eq!(u128at(&s, so::HOST_WRITE_COMMANDS), 10);
    assert_eq!(u128at(&s, so::HOST_READ_COMMANDS), 3);
    // 10 × 128 units of 512 B = 1280 → 2 (thousands, rounded up); 3 × 128 = 384 → 1.
    assert_eq!(u128at(&s, so::DATA_UNITS_WRITTEN), 2);
    assert_eq!(u128at(&s, so::DATA_UNITS_READ), 1);
    assert_eq!(u128at(&s, so::POWER_ON_HOURS), 0);
    assert_eq!(s[so::PERCENT_USED], 0);
    assert_eq!(s[so::CRITICAL_WARNING], 0);
    // Temperature threshold below the temperature: warning bit 1.
    let r = d
        .admin_cmd(Sqe {
            cdw10: feat::TEMP_THRESHOLD as u32,
            cdw11: 300,
            ..Sqe::new(admin::SET_FEATURES)
        })
        .unwrap();
    assert!(status(&r).is_success());
    assert_eq!(d.smart_log().unwrap()[so::CRITICAL_WARNING], 0b10);
}

#[test]
fn phase_tag_flips_when_the_cq_wraps() {
    let c = cfg(&[]);
    let mut d = HostDriver::bring_up(ctrl(&[], 4096), 4, c.interface.interrupt).unwrap();
    assert_eq!(d.queue_size(), 4);
    let data = pattern(4096, 4);
    // 4-entry queues: 10 writes go round the CQ two and a half times.
    for k in 0..10u64 {
        let r = d.write(k, &data).unwrap();
        assert!(status(&r).is_success());
    }
    // Entries 0 and 1 were written on the third pass (phase 1), 2 and 3 on the second (0).
    let phases: Vec<bool> = (0..4u64)
        .map(|k| {
            let mut b = [0u8; 16];
            d.ctrl.mem.read(
                ssdlab::driver::nvme_regs::host_driver::IOCQ_ADDR + 16 * k,
                &mut b,
            );
            Cqe::from_bytes(&b).phase
        })
        .collect();
    assert_eq!(phases, vec![true, true, false, false]);
    // A batch larger than the CQ's free slots: the controller fetches what fits, the rest after
    // each head doorbell.
    let cmds: Vec<IoCmd> = (0..3).map(|k| IoCmd::Read { slba: k, nlb: 1 }).collect();
    let done = d.submit_batch(&cmds, None).unwrap();
    assert_eq!(done.len(), 3);
    assert!(done.iter().all(|(x, _)| status(x).is_success()));
    // SQ head in the CQE advances.
    assert!(done.iter().all(|(x, _)| x.cqe.sq_id == 1));
}

#[test]
fn cq_full_holds_back_fetching() {
    let mut c = ctrl(&[], 4096);
    manual_enable(&mut c); // 4-entry admin queues: the CQ holds 3
    for k in 0..3u32 {
        admin_slot(
            &mut c,
            k,
            &Sqe {
                cid: k as u16,
                ..Sqe::new(0x7E)
            },
        );
    }
    c.write32(reg::DOORBELL_BASE, 3);
    assert!(admin_cqe(&c, 2).phase);
    admin_slot(
        &mut c,
        3,
        &Sqe {
            cid: 3,
            ..Sqe::new(0x7E)
        },
    );
    c.write32(reg::DOORBELL_BASE, 0);
    assert!(!admin_cqe(&c, 3).phase, "CQ full: not fetched");
    // An invalid head (past the tail) is ignored; a valid one releases the command.
    c.write32(reg::DOORBELL_BASE + 4, 3);
    assert!(admin_cqe(&c, 3).phase);
    let e = admin_cqe(&c, 3);
    assert_eq!(e.cid, 3);
    assert_eq!(e.sq_head, 0);
}

// ---------------------------------------------------------------------------------------------
// Workloads through the driver

#[test]
fn job_runs_through_the_driver_and_counts_in_smart() {
    use ssdlab::driver::nvme_regs::workload::run_job;
    let mut d = driver(&[]);
    let spec = ssdlab::JobSpec::from_toml_str(
        "rw = \"write\"\nbs = \"64KiB\"\niodepth = 8\nsize = \"4MiB\"\n",
        "test",
    )
    .unwrap();
    let s = run_job(&mut d, &spec, 1).unwrap();
    assert_eq!(s.requests, 64);
    assert_eq!(s.writes, 64);
    assert_eq!(s.bytes_written, 4 << 20);
    assert_eq!(s.errors, 0);
    assert!(s.end > s.start);
    let smart = d.smart_log().unwrap();
    assert_eq!(u128at(&smart, so::HOST_WRITE_COMMANDS), 64);
    // 4 MiB = 8192 units of 512 B → 9 thousands, rounded up.
    assert_eq!(u128at(&smart, so::DATA_UNITS_WRITTEN), 9);
    let id = d.identify(0, 1).unwrap();
    assert_eq!(u64at(&id, 16), 1024, "NUSE: 4 MiB of 4 KiB blocks");
    // Random reads of what was written, then a trim job.
    let spec = ssdlab::JobSpec::from_toml_str(
        "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 16\nsize = \"4MiB\"\nio_count = 100\n",
        "test",
    )
    .unwrap();
    let s = run_job(&mut d, &spec, 1).unwrap();
    assert_eq!((s.reads, s.errors), (100, 0));
    let spec =
        ssdlab::JobSpec::from_toml_str("rw = \"trim\"\nbs = \"1MiB\"\nsize = \"2MiB\"\n", "test")
            .unwrap();
    let s = run_job(&mut d, &spec, 1).unwrap();
    assert_eq!(s.deallocates, 2);
    let id = d.identify(0, 1).unwrap();
    assert_eq!(u64at(&id, 16), 512);
}

#[test]
fn trace_replays_through_the_driver() {
    use ssdlab::driver::nvme_regs::workload::run_trace;
    let mut d = driver(&[]);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces/msr.csv");
    let s = run_trace(&mut d, path, &Default::default(), 4, None).unwrap();
    assert!(s.requests > 0);
    assert_eq!(s.errors, 0);
    assert_eq!(s.reads + s.writes + s.deallocates + s.flushes, s.commands);
    let smart = d.smart_log().unwrap();
    assert_eq!(u128at(&smart, so::HOST_WRITE_COMMANDS), s.writes as u128);
}

/// Issue 15 defect 6: a job through the driver asks whether to go on, so Ctrl-C stops it.
#[test]
fn a_long_job_through_the_driver_stops_when_asked() {
    use ssdlab::driver::nvme_regs::workload::{run_job_with, run_trace_with};
    let mut d = driver(&[]);
    // An hour of simulated random reads: minutes of wall time unless stopped.
    let spec = ssdlab::JobSpec::from_toml_str(
        "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 8\nruntime = \"3600s\"\n",
        "test",
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let mut asked = 0;
    let r = run_job_with(&mut d, &spec, 1, &mut || {
        asked += 1;
        false
    });
    assert!(matches!(r, Err(ssdlab::Error::Interrupted)), "{r:?}");
    assert_eq!(asked, 1);
    assert!(t0.elapsed().as_secs_f64() < 5.0, "{:?}", t0.elapsed());
    // A trace replay asks too (here the answer is yes: the short fixture runs to its end).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces/msr.csv");
    let s = run_trace_with(&mut d, path, &Default::default(), 4, None, &mut || true).unwrap();
    assert!(s.requests > 0);
}

#[test]
fn self_chaining_prp_list_is_refused() {
    let mut d = driver(&[]);
    // A 64 KiB read whose PRP list's last slot points at itself.
    let list = 0x3000_0000u64 + 4096 - 8;
    d.ctrl.mem.write_u64(list, list);
    let r = d
        .submit_raw(&[Sqe {
            nsid: 1,
            prp1: DATA_ADDR,
            prp2: list,
            cdw12: 15,
            ..Sqe::new(io::READ)
        }])
        .unwrap();
    assert_eq!(status(&r[0]), Status::DATA_TRANSFER_ERROR);
}

#[test]
fn a_config_with_another_interface_is_refused() {
    let c = SsdConfig::resolve("seed000-ufs20-galaxy-s6", &[]).unwrap();
    let e = Controller::new(
        &c,
        &NvmeOptions {
            lba_size: 4096,
            seed: 1,
        },
    )
    .err()
    .expect("a UFS config is not an NVMe controller")
    .to_string();
    assert!(
        e.contains("field `interface.kind`: got \"ufs\", expected \"nvme\""),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Model-decided media errors (`[reliability]`) through the register-level controller

const UNFILLED: [&str; 2] = [
    "precondition.fill=\"none\"",
    "precondition.random_overwrite=0",
];

#[test]
fn an_undecodable_read_is_an_unrecovered_read_error_and_counts_in_smart() {
    let mut ov = UNFILLED.to_vec();
    ov.extend([
        "reliability.ecc_correctable_bits=4",
        "reliability.rber_fresh=1e-2",
        "reliability.read_retry_max=0",
    ]);
    let mut d = driver(&ov);
    // Never written: answered without NAND, so it reads.
    assert_eq!(d.read(500, 1).unwrap(), vec![0u8; 4096]);
    d.write(0, &pattern(4096, 1)).unwrap();
    let e = d.read(0, 1).unwrap_err().to_string();
    assert!(e.contains("Unrecovered Read Error (SCT 2h, SC 81h)"), "{e}");
    let s = d.smart_log().unwrap();
    assert_eq!(u128at(&s, so::MEDIA_ERRORS), 1);
    assert_eq!(
        s[so::CRITICAL_WARNING] & 0b100,
        0b100,
        "reliability degraded"
    );
    assert_eq!(
        u128at(&s, so::HOST_READ_COMMANDS),
        1,
        "the failed read does not count"
    );
}

#[test]
fn a_read_only_drive_refuses_writes_changes_nothing_and_says_so_in_smart() {
    let mut ov = UNFILLED.to_vec();
    // A fifth of the blocks bad from the factory: the drive starts below its read-only level.
    ov.push("reliability.factory_bad_block_rate=0.2");
    let mut d = driver(&ov);
    let e = d.write(8, &pattern(4096, 2)).unwrap_err().to_string();
    assert!(e.contains("Namespace is Write Protected"), "{e}");
    let e = d.deallocate(8, 1).unwrap_err().to_string();
    assert!(e.contains("Namespace is Write Protected"), "{e}");
    assert_eq!(d.read(8, 1).unwrap(), vec![0u8; 4096]);
    let s = d.smart_log().unwrap();
    assert_eq!(s[so::AVAIL_SPARE], 0);
    assert_eq!(
        s[so::CRITICAL_WARNING] & 0b1001,
        0b1001,
        "spare low, read-only"
    );
}

/// The host driver's refusals are job errors whose parts are data: the argument, its value and
/// what it takes; a command the controller fails names the command, with its status as the
/// value.
#[test]
fn the_host_driver_names_the_argument_value_and_expectation() {
    let c = cfg(&[]);
    let mut d = HostDriver::bring_up(ctrl(&[], 4096), 4, c.interface.interrupt).unwrap();
    let e = d.write(0, &[0u8; 100]).unwrap_err();
    assert!(matches!(e, ssdlab::Error::Job(_)), "{e:?}");
    let i = e.invalid().expect("parts as data");
    assert_eq!(
        (i.origin.as_str(), i.value.as_deref(), i.expected.as_deref()),
        (
            "data length",
            Some("100 bytes"),
            Some("a non-zero multiple of the 4096-byte block")
        )
    );
    assert_eq!(
        e.to_string(),
        "data length: got 100 bytes, expected a non-zero multiple of the 4096-byte block"
    );
    // A read past the namespace's end completes with LBA Out of Range.
    let e = d.read(d.nsze(), 1).unwrap_err();
    let i = e.invalid().expect("parts as data");
    assert_eq!(i.value.as_deref(), Some("LBA Out of Range"), "{e}");
    assert!(
        e.to_string().starts_with(&format!(
            "Read at LBA {}: the controller answered",
            d.nsze()
        )),
        "{e}"
    );
}
