//! The register-level NVMe controller: bring-up through MMIO, Identify layouts at their spec
//! offsets, queue management errors, PRP transfers, data read back, deallocation, SMART
//! counters, status codes, phase tags, interrupts, timing from the performance model, and
//! robustness against arbitrary MMIO and command bytes.

use proptest::prelude::*;
use ssdlab::config::InterruptMode;
use ssdlab::driver::nvme_regs::host_driver::{
    Done, HostDriver, IoCmd, ACQ_ADDR, ASQ_ADDR, DATA_ADDR,
};
use ssdlab::driver::nvme_regs::structs::{ctrl_off as co, ns_off as no, smart_off as so};
use ssdlab::driver::nvme_regs::{
    admin, feat, io, pci, reg, Controller, Cqe, NvmeOptions, Sqe, Status,
};
use ssdlab::sim::SimTime;
use ssdlab::SsdConfig;

fn cfg(overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

fn ctrl(overrides: &[&str], lba: u32) -> Controller {
    Controller::new(
        &cfg(overrides),
        &NvmeOptions {
            lba_size: lba,
            seed: 7,
        },
    )
    .unwrap()
}

fn driver(overrides: &[&str]) -> HostDriver {
    let c = cfg(overrides);
    let irq = c.interface.interrupt;
    HostDriver::bring_up(ctrl(overrides, 4096), 64, irq).unwrap()
}

fn u16at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}
fn u128at(b: &[u8], o: usize) -> u128 {
    u128::from_le_bytes(b[o..o + 16].try_into().unwrap())
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed as u32) as u8 ^ (i >> 9) as u8)
        .collect()
}

fn status(d: &Done) -> Status {
    d.cqe.status
}

// ---------------------------------------------------------------------------------------------
// Registers and bring-up

#[test]
fn registers_have_spec_layout() {
    let mut c = ctrl(&[], 4096);
    let cap = c.read64(reg::CAP);
    assert_eq!(cap & 0xFFFF, 0xFFFF, "MQES");
    assert_eq!((cap >> 16) & 1, 1, "CQR");
    assert_eq!((cap >> 17) & 3, 0, "AMS: round robin only");
    assert_eq!((cap >> 24) & 0xFF, 2, "TO");
    assert_eq!((cap >> 32) & 0xF, 0, "DSTRD");
    assert_eq!((cap >> 36) & 1, 0, "NSSRS");
    assert_eq!((cap >> 37) & 0xFF, 1, "CSS: NVM command set");
    assert_eq!((cap >> 48) & 0xF, 0, "MPSMIN");
    assert_eq!((cap >> 52) & 0xF, 4, "MPSMAX");
    assert_eq!(c.read32(reg::CAP) as u64, cap & 0xFFFF_FFFF);
    assert_eq!(c.read32(reg::CAP + 4) as u64, cap >> 32);
    assert_eq!(c.read32(reg::VS), 0x0001_0400);
    // Read-only registers ignore writes; reserved offsets read as zero.
    c.write32(reg::CAP, 0);
    c.write32(reg::VS, 0);
    c.write32(reg::CSTS, 0xFFFF_FFFF);
    assert_eq!(c.read64(reg::CAP), cap);
    assert_eq!(c.read32(reg::VS), 0x0001_0400);
    assert_eq!(c.read32(reg::CSTS), 0);
    for off in [
        0x18u64, 0x38, 0x3C, 0x40, 0xF00, 0xFFC, 0x1000, 0x1004, 0x3FFC, 0x8000,
    ] {
        assert_eq!(c.read32(off), 0, "offset {off:#x}");
    }
    // AQA keeps only its defined bits; ASQ/ACQ are 64-bit.
    c.write32(reg::AQA, 0xFFFF_FFFF);
    assert_eq!(c.read32(reg::AQA), 0x0FFF_0FFF);
    c.write64(reg::ASQ, 0x1_2345_6000);
    assert_eq!(c.read64(reg::ASQ), 0x1_2345_6000);
    assert_eq!(c.read32(reg::ASQ + 4), 1);
    // Byte and halfword reads of CAP.
    assert_eq!(c.mmio_read(reg::CAP, 2), cap & 0xFFFF);
    assert_eq!(c.mmio_read(reg::CAP + 3, 1), (cap >> 24) & 0xFF);
    // INTMS sets, INTMC clears, both read the mask.
    c.write32(reg::INTMS, 0b101);
    assert_eq!(c.read32(reg::INTMC), 0b101);
    c.write32(reg::INTMC, 0b001);
    assert_eq!(c.read32(reg::INTMS), 0b100);
}

/// Bring the admin queue up by hand, as a driver would.
fn manual_enable(c: &mut Controller) {
    assert_eq!(c.read32(reg::CSTS) & 1, 0);
    c.write32(reg::AQA, 3 | (3 << 16)); // 4 entries each
    c.write64(reg::ASQ, ASQ_ADDR);
    c.write64(reg::ACQ, ACQ_ADDR);
    c.write32(reg::CC, 1 | (6 << 16) | (4 << 20));
    assert_eq!(c.read32(reg::CSTS), 1, "RDY");
}

fn admin_slot(c: &mut Controller, slot: u32, s: &Sqe) {
    c.mem.write(ASQ_ADDR + 64 * slot as u64, &s.to_bytes());
}

fn admin_cqe(c: &Controller, slot: u32) -> Cqe {
    let mut b = [0u8; 16];
    c.mem.read(ACQ_ADDR + 16 * slot as u64, &mut b);
    Cqe::from_bytes(&b)
}

#[test]
fn enable_reset_and_shutdown() {
    let mut c = ctrl(&[], 4096);
    manual_enable(&mut c);
    // Shutdown: SHST complete, doorbells ignored.
    c.write32(reg::CC, c.read32(reg::CC) | (1 << 14));
    assert_eq!((c.read32(reg::CSTS) >> 2) & 3, 0b10);
    admin_slot(&mut c, 0, &Sqe::new(0x7F));
    c.write32(reg::DOORBELL_BASE, 1);
    assert!(!admin_cqe(&c, 0).phase, "no completion after shutdown");
    // Reset: RDY goes to 0, then a new enable brings it back with SHST cleared.
    c.write32(reg::CC, 0);
    assert_eq!(c.read32(reg::CSTS), 0);
    c.write32(reg::CC, 1 | (6 << 16) | (4 << 20));
    assert_eq!(c.read32(reg::CSTS), 1);
    c.write32(reg::DOORBELL_BASE, 1);
    let e = admin_cqe(&c, 0);
    assert!(e.phase);
    assert_eq!(e.status, Status::INVALID_OPCODE);
    assert_eq!(e.sq_id, 0);
    assert_eq!(e.sq_head, 1);
}

#[test]
fn bad_setup_sets_cfs_not_panic() {
    let cases: Vec<(u32, u64, u32, &str)> = vec![
        (0, ASQ_ADDR, 1 | (6 << 16) | (4 << 20), "AQA zero sizes"),
        (
            3 | (3 << 16),
            ASQ_ADDR + 8,
            1 | (6 << 16) | (4 << 20),
            "unaligned ASQ",
        ),
        (
            3 | (3 << 16),
            ASQ_ADDR,
            1 | (5 << 16) | (4 << 20),
            "IOSQES 5",
        ),
        (
            3 | (3 << 16),
            ASQ_ADDR,
            1 | (6 << 16) | (3 << 20),
            "IOCQES 3",
        ),
        (
            3 | (3 << 16),
            ASQ_ADDR,
            1 | (5 << 7) | (6 << 16) | (4 << 20),
            "MPS 5",
        ),
        (
            3 | (3 << 16),
            ASQ_ADDR,
            1 | (1 << 4) | (6 << 16) | (4 << 20),
            "CSS 1",
        ),
        (
            3 | (3 << 16),
            ASQ_ADDR,
            1 | (1 << 11) | (6 << 16) | (4 << 20),
            "AMS 1",
        ),
    ];
    for (aqa, asq, cc, what) in cases {
        let mut c = ctrl(&[], 4096);
        c.write32(reg::AQA, aqa);
        c.write64(reg::ASQ, asq);
        c.write64(reg::ACQ, ACQ_ADDR);
        c.write32(reg::CC, cc);
        let csts = c.read32(reg::CSTS);
        assert_eq!(csts & 3, 0b10, "{what}: CFS set, RDY clear");
        assert!(c.fatal_reason().is_some(), "{what}");
        // Doorbells do nothing; a reset clears CFS.
        c.write32(reg::DOORBELL_BASE, 1);
        c.write32(reg::CC, 0);
        assert_eq!(c.read32(reg::CSTS), 0, "{what}: reset clears CFS");
    }
}

#[test]
fn driver_brings_up_like_linux() {
    let mut d = driver(&[]);
    let c = &d.ctrl;
    assert_eq!(c.read32(reg::CSTS) & 1, 1);
    let cc = c.read32(reg::CC);
    assert_eq!(cc & 1, 1);
    assert_eq!((cc >> 16) & 0xF, 6);
    assert_eq!((cc >> 20) & 0xF, 4);
    assert_eq!(d.lba_size(), 4096);
    let cfg = cfg(&[]);
    assert_eq!(d.nsze(), cfg.logical_bytes() / 4096);
    assert_eq!(d.max_transfer(), 256 * 1024);
    // Admin commands took firmware time on the controller's clock.
    assert!(d.ctrl.clock() >= SimTime::from_us(50));
    // Number of Queues reads back what was allocated (one pair, 0's based 0).
    let r = d
        .admin_cmd(Sqe {
            cdw10: feat::NUM_QUEUES as u32,
            ..Sqe::new(admin::GET_FEATURES)
        })
        .unwrap();
    assert!(status(&r).is_success());
    assert_eq!(r.cqe.dw0, 0);
}

// ---------------------------------------------------------------------------------------------
// Identify

#[test]
fn identify_controller_fields_at_spec_offsets() {
    let mut d = driver(&[]);
    let b = d.identify(1, 0).unwrap();
    assert_eq!(b.len(), 4096);
    assert_eq!(u16at(&b, 0), pci::VENDOR_ID, "VID");
    assert_eq!(u16at(&b, 2), pci::SUBSYS_VENDOR_ID, "SSVID");
    let sn = std::str::from_utf8(&b[4..24]).unwrap();
    assert!(sn.starts_with("SL") && sn.trim_end().len() == 20, "{sn:?}");
    assert_eq!(sn, d.ctrl.serial());
    let mn = std::str::from_utf8(&b[24..64]).unwrap();
    assert_eq!(mn.trim_end(), "ssdlab small-tlc");
    assert_eq!(mn.len(), 40);
    let fr = std::str::from_utf8(&b[64..72]).unwrap();
    assert_eq!(fr.trim_end(), env!("CARGO_PKG_VERSION"));
    assert_eq!(b[co::MDTS], 6, "MDTS: 256 KiB = 2^6 × 4 KiB");
    assert_eq!(b[77], 6);
    assert_eq!(u16at(&b, 78), 1, "CNTLID");
    assert_eq!(u32at(&b, 80), 0x0001_0400, "VER");
    assert_eq!(b[111], 1, "CNTRLTYPE: I/O controller");
    assert_eq!(u16at(&b, 256), 0, "OACS");
    assert_eq!(b[258], 3, "ACL");
    assert_eq!(b[259], 3, "AERL");
    assert_eq!(b[260], 0x03, "FRMW");
    assert_eq!(b[261], 0x04, "LPA");
    assert_eq!(b[262], 15, "ELPE");
    assert_eq!(b[263], 0, "NPSS");
    assert_eq!(u16at(&b, 266), 343, "WCTEMP");
    assert_eq!(u16at(&b, 268), 358, "CCTEMP");
    assert_eq!(b[512], 0x66, "SQES");
    assert_eq!(b[513], 0x44, "CQES");
    assert_eq!(u32at(&b, 516), 1, "NN");
    assert_eq!(u16at(&b, 520), 0x0004, "ONCS: DSM");
    assert_eq!(b[525], 0, "VWC: no write-back cache in small-tlc");
    assert_eq!(u32at(&b, 536), 0, "SGLS");
    let nqn = std::str::from_utf8(&b[768..1024]).unwrap();
    assert!(nqn.starts_with("nqn."), "{nqn:?}");
    assert_eq!(u16at(&b, 2048), 800, "PSD0 MP");
    let cap = cfg(&[]).logical_bytes() as u128;
    assert_eq!(u128at(&b, 280), cap, "TNVMCAP");

    // With a write-back cache, a volatile write cache is reported and WCE is on.
    let mut d = driver(&["cache.capacity=\"1MiB\""]);
    let b = d.identify(1, 0).unwrap();
    assert_eq!(b[co::VWC], 0b111);
    let r = d
        .admin_cmd(Sqe {
            cdw10: feat::VOLATILE_WC as u32,
            ..Sqe::new(admin::GET_FEATURES)
        })
        .unwrap();
    assert_eq!(r.cqe.dw0, 1);
}

#[test]
fn identify_namespace_and_lists() {
    let mut d = driver(&[]);
    let nsze = cfg(&[]).logical_bytes() / 4096;
    let b = d.identify(0, 1).unwrap();
    assert_eq!(u64at(&b, 0), nsze, "NSZE");
    assert_eq!(u64at(&b, 8), nsze, "NCAP");
    assert_eq!(u64at(&b, 16), 0, "NUSE: nothing written");
    assert_eq!(b[24], 1, "NSFEAT: thin provisioning");
    assert_eq!(b[25], 1, "NLBAF: two formats");
    assert_eq!(b[26], 0, "FLBAS: format 0");
    assert_eq!(b[33], 1, "DLFEAT: deallocated reads zero");
    assert_eq!((u32at(&b, 128) >> 16) & 0xFF, 12, "LBAF0 LBADS");
    assert_eq!(u32at(&b, 128) & 0xFFFF, 0, "LBAF0 MS");
    assert_eq!((u32at(&b, 132) >> 16) & 0xFF, 9, "LBAF1 LBADS");
    assert!(b[no::NGUID..no::NGUID + 16].iter().any(|&x| x != 0));
    // Active namespace list: namespace 1, then nothing above it.
    let l = d.identify(2, 0).unwrap();
    assert_eq!(u32at(&l, 0), 1);
    assert_eq!(u32at(&l, 4), 0);
    let l = d.identify(2, 1).unwrap();
    assert_eq!(u32at(&l, 0), 0);
    // Namespace identification descriptors: an NGUID.
    let l = d.identify(3, 1).unwrap();
    assert_eq!((l[0], l[1]), (2, 16));
    // NUSE follows writes.
    d.write(10, &vec![1u8; 8192]).unwrap();
    let b = d.identify(0, 1).unwrap();
    assert_eq!(u64at(&b, 16), 2);

    // 512-byte LBA format.
    let c = ctrl(&[], 512);
    let mut d = HostDriver::bring_up(c, 16, InterruptMode::Msix).unwrap();
    let b = d.identify(0, 1).unwrap();
    assert_eq!(b[26], 1, "FLBAS: format 1");
    assert_eq!(u64at(&b, 0), cfg(&[]).logical_bytes() / 512);
    assert_eq!(d.lba_size(), 512);
}

// ---------------------------------------------------------------------------------------------
// Admin command errors

fn admin(d: &mut HostDriver, s: Sqe) -> Done {
    d.admin_cmd(s).unwrap()
}

fn create_cq(qid: u32, entries: u32, cdw11: u32, prp1: u64) -> Sqe {
    Sqe {
        prp1,
        cdw10: qid | ((entries.wrapping_sub(1)) << 16),
        cdw11,
        ..Sqe::new(admin::CREATE_IO_CQ)
    }
}

fn create_sq(qid: u32, entries: u32, cqid: u32, prp1: u64) -> Sqe {
    Sqe {
        prp1,
        cdw10: qid | ((entries.wrapping_sub(1)) << 16),
        cdw11: 1 | (cqid << 16),
        ..Sqe::new(admin::CREATE_IO_SQ)
    }
}

#[test]
fn queue_management_errors() {
    let mut d = driver(&[]);
    let q = 0x0A00_0000u64;
    // The driver allocated one queue pair: qid 2 is beyond it.
    assert_eq!(
        status(&admin(&mut d, create_cq(0, 16, 1, q))),
        Status::INVALID_QID
    );
    assert_eq!(
        status(&admin(&mut d, create_cq(2, 16, 1, q))),
        Status::INVALID_QID
    );
    assert_eq!(
        status(&admin(&mut d, create_cq(1, 16, 1, q))),
        Status::INVALID_QID,
        "exists"
    );
    assert_eq!(
        status(&admin(&mut d, create_sq(1, 16, 1, q))),
        Status::INVALID_QID,
        "exists"
    );
    // Number of Queues cannot change once I/O queues exist.
    let r = admin(
        &mut d,
        Sqe {
            cdw10: feat::NUM_QUEUES as u32,
            cdw11: 3 | (3 << 16),
            ..Sqe::new(admin::SET_FEATURES)
        },
    );
    assert_eq!(status(&r), Status::SEQUENCE_ERROR);
    // Delete the pair, ask for four, then try the remaining errors.
    assert_eq!(
        status(&admin(
            &mut d,
            Sqe {
                cdw10: 1,
                ..Sqe::new(admin::DELETE_IO_CQ)
            }
        )),
        Status::INVALID_QUEUE_DELETION,
        "CQ 1 still has SQ 1"
    );
    assert!(status(&admin(
        &mut d,
        Sqe {
            cdw10: 1,
            ..Sqe::new(admin::DELETE_IO_SQ)
        }
    ))
    .is_success());
    assert!(status(&admin(
        &mut d,
        Sqe {
            cdw10: 1,
            ..Sqe::new(admin::DELETE_IO_CQ)
        }
    ))
    .is_success());
    assert_eq!(
        status(&admin(
            &mut d,
            Sqe {
                cdw10: 1,
                ..Sqe::new(admin::DELETE_IO_CQ)
            }
        )),
        Status::INVALID_QID,
        "already gone"
    );
    assert_eq!(
        status(&admin(
            &mut d,
            Sqe {
                cdw10: 0,
                ..Sqe::new(admin::DELETE_IO_SQ)
            }
        )),
        Status::INVALID_QID,
        "the admin SQ"
    );
    let r = admin(
        &mut d,
        Sqe {
            cdw10: feat::NUM_QUEUES as u32,
            cdw11: 3 | (3 << 16),
            ..Sqe::new(admin::SET_FEATURES)
        },
    );
    assert!(status(&r).is_success());
    assert_eq!(r.cqe.dw0, 3 | (3 << 16), "NSQA/NCQA");
    let r = admin(
        &mut d,
        Sqe {
            cdw10: feat::NUM_QUEUES as u32,
            cdw11: 0xFFFF,
            ..Sqe::new(admin::SET_FEATURES)
        },
    );
    assert_eq!(status(&r), Status::INVALID_FIELD);
    assert_eq!(
        status(&admin(&mut d, create_cq(5, 16, 1, q))),
        Status::INVALID_QID
    );
    assert_eq!(
        status(&admin(&mut d, create_cq(2, 1, 1, q))),
        Status::INVALID_QSIZE
    );
    assert_eq!(
        status(&admin(&mut d, create_cq(2, 16, 0, q))),
        Status::INVALID_FIELD,
        "PC=0"
    );
    assert_eq!(
        status(&admin(&mut d, create_cq(2, 16, 1 | (4000 << 16), q))),
        Status::INVALID_VECTOR
    );
    assert_eq!(
        status(&admin(&mut d, create_cq(2, 16, 1, q + 0x100))),
        Status::INVALID_PRP_OFFSET
    );
    assert_eq!(
        status(&admin(&mut d, create_sq(2, 16, 0, q))),
        Status::CQ_INVALID,
        "admin CQ"
    );
    assert_eq!(
        status(&admin(&mut d, create_sq(2, 16, 3, q))),
        Status::CQ_INVALID,
        "no CQ 3"
    );
    assert_eq!(
        status(&admin(&mut d, create_sq(2, 16, 9999, q))),
        Status::CQ_INVALID
    );
    assert!(status(&admin(&mut d, create_cq(2, 16, 1, q))).is_success());
    assert_eq!(
        status(&admin(&mut d, create_sq(2, 1, 2, q))),
        Status::INVALID_QSIZE
    );
    assert!(status(&admin(&mut d, create_sq(2, 16, 2, q + 0x1000))).is_success());
    assert_eq!(
        status(&admin(&mut d, create_sq(5, 16, 2, q))),
        Status::INVALID_QID
    );
}

#[test]
fn admin_status_codes() {
    let mut d = driver(&[]);
    let cases: Vec<(Sqe, Status, &str)> = vec![
        (Sqe::new(0x7E), Status::INVALID_OPCODE, "unknown opcode"),
        (
            Sqe {
                fuse: 1,
                ..Sqe::new(admin::IDENTIFY)
            },
            Status::INVALID_FIELD,
            "fused",
        ),
        (
            Sqe {
                psdt: 1,
                cdw10: 1,
                ..Sqe::new(admin::IDENTIFY)
            },
            Status::INVALID_FIELD,
            "SGL",
        ),
        (
            Sqe {
                prp1: DATA_ADDR,
                cdw10: 0x55,
                ..Sqe::new(admin::IDENTIFY)
            },
            Status::INVALID_FIELD,
            "CNS 55h",
        ),
        (
            Sqe {
                prp1: DATA_ADDR,
                nsid: 2,
                cdw10: 0,
                ..Sqe::new(admin::IDENTIFY)
            },
            Status::INVALID_NAMESPACE,
            "namespace 2",
        ),
        (
            Sqe {
                prp1: DATA_ADDR + 2,
                cdw10: 1,
                ..Sqe::new(admin::IDENTIFY)
            },
            Status::INVALID_PRP_OFFSET,
            "PRP1 not dword aligned",
        ),
        (
            Sqe {
                prp1: DATA_ADDR + 16,
                prp2: DATA_ADDR + 4096 + 8,
                cdw10: 1,
                ..Sqe::new(admin::IDENTIFY)
            },
            Status::INVALID_PRP_OFFSET,
            "PRP2 with an offset",
        ),
        (
            Sqe {
                prp1: u64::MAX - 4095,
                cdw10: 1,
                ..Sqe::new(admin::IDENTIFY)
            },
            Status::DATA_TRANSFER_ERROR,
            "buffer past the address space",
        ),
        (
            Sqe {
                prp1: DATA_ADDR,
                cdw10: 0x7F | (127 << 16),
                ..Sqe::new(admin::GET_LOG_PAGE)
            },
            Status::INVALID_LOG_PAGE,
            "log 7Fh",
        ),
        (
            Sqe {
                prp1: DATA_ADDR,
                nsid: 5,
                cdw10: 2 | (127 << 16),
                ..Sqe::new(admin::GET_LOG_PAGE)
            },
            Status::INVALID_NAMESPACE,
            "SMART for namespace 5",
        ),
        (
            Sqe {
                prp1: DATA_ADDR,
                cdw10: 2 | (127 << 16),
                cdw12: 2,
                ..Sqe::new(admin::GET_LOG_PAGE)
            },
            Status::INVALID_FIELD,
            "log offset not dword aligned",
        ),
        (
            Sqe {
                prp1: DATA_ADDR,
                cdw10: 2 | (127 << 16),
                cdw12: 4096,
                ..Sqe::new(admin::GET_LOG_PAGE)
            },
            Status::INVALID_FIELD,
            "log offset past the log",
        ),
        (
            Sqe {
                prp1: DATA_ADDR,
                cdw10: 2 | (0xFFFF << 16),
                cdw11: 0xFFFF,
                ..Sqe::new(admin::GET_LOG_PAGE)
            },
            Status::INVALID_FIELD,
            "16 GiB log transfer",
        ),
        (
            Sqe {
                cdw10: 0x77,
                ..Sqe::new(admin::GET_FEATURES)
            },
            Status::INVALID_FIELD,
            "unknown feature",
        ),
        (
            Sqe {
                cdw10: feat::ARBITRATION as u32 | (1 << 31),
                ..Sqe::new(admin::SET_FEATURES)
            },
            Status::NOT_SAVEABLE,
            "save",
        ),
        (
            Sqe {
                cdw10: feat::POWER_MGMT as u32,
                cdw11: 3,
                ..Sqe::new(admin::SET_FEATURES)
            },
            Status::INVALID_FIELD,
            "power state 3",
        ),
        (
            Sqe {
                cdw10: feat::VOLATILE_WC as u32,
                cdw11: 1,
                ..Sqe::new(admin::SET_FEATURES)
            },
            Status::INVALID_FIELD,
            "no volatile write cache",
        ),
    ];
    for (s, want, what) in cases {
        let r = admin(&mut d, s);
        assert_eq!(status(&r), want, "{what}");
        assert!(r.cqe.status.dnr, "{what}: do not retry");
    }
    // Abort: nothing is ever outstanding, "not aborted".
    let r = admin(&mut d, Sqe::new(admin::ABORT));
    assert!(status(&r).is_success());
    assert_eq!(r.cqe.dw0 & 1, 1);
    // Arbitration and interrupt coalescing read back.
    let r = admin(
        &mut d,
        Sqe {
            cdw10: feat::ARBITRATION as u32,
            cdw11: 0x0102_0303,
            ..Sqe::new(admin::SET_FEATURES)
        },
    );
    assert!(status(&r).is_success());
    let r = admin(
        &mut d,
        Sqe {
            cdw10: feat::ARBITRATION as u32,
            ..Sqe::new(admin::GET_FEATURES)
        },
    );
    assert_eq!(r.cqe.dw0, 0x0102_0303);
    // The error log holds the failures, newest first.
    let log = d.get_log(0x01, 64 * 16).unwrap();
    let count = u64at(&log, 0);
    assert!(count >= 17, "{count}");
    assert_eq!(u64at(&log, 64), count - 1);
    let smart = d.smart_log().unwrap();
    assert_eq!(u128at(&smart, so::NUM_ERR_LOG_ENTRIES), count as u128);
    // Firmware slot log.
    let fw = d.get_log(0x03, 512).unwrap();
    assert_eq!(fw[0], 1);
    assert_eq!(
        std::str::from_utf8(&fw[8..16]).unwrap().trim_end(),
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn async_event_requests_stay_outstanding_up_to_the_limit() {
    let mut c = ctrl(&[], 4096);
    manual_enable(&mut c);
    // Four AERs (AERL = 3) stay outstanding; the fifth is refused. The admin queue has four
    // slots, so use two doorbells.
    for k in 0..3u16 {
        admin_slot(
            &mut c,
            k as u32,
            &Sqe {
                cid: k,
                ..Sqe::new(admin::ASYNC_EVENT)
            },
        );
    }
    c.write32(reg::DOORBELL_BASE, 3);
    assert!(
        !admin_cqe(&c, 0).phase,
        "no completion for outstanding AERs"
    );
    admin_slot(
        &mut c,
        3,
        &Sqe {
            cid: 3,
            ..Sqe::new(admin::ASYNC_EVENT)
        },
    );
    admin_slot(
        &mut c,
        0,
        &Sqe {
            cid: 4,
            ..Sqe::new(admin::ASYNC_EVENT)
        },
    );
    c.write32(reg::DOORBELL_BASE, 1);
    let e = admin_cqe(&c, 0);
    assert!(e.phase);
    assert_eq!(e.cid, 4);
    assert_eq!(e.status, Status::AER_LIMIT);
}

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
// Interrupts

#[test]
fn pin_interrupt_follows_unacknowledged_entries() {
    let mut c = ctrl(&["interface.interrupt=\"pin\""], 4096);
    manual_enable(&mut c);
    assert!(!c.intx());
    admin_slot(&mut c, 0, &Sqe::new(0x7E));
    c.write32(reg::DOORBELL_BASE, 1);
    assert!(c.intx(), "asserted with an unacknowledged entry");
    // The PCI status register shows it (bit 3).
    assert_eq!(c.config_read(0x06, 2) & (1 << 3), 1 << 3);
    // INTMS masks it, INTMC unmasks.
    c.write32(reg::INTMS, 1);
    assert!(!c.intx());
    c.write32(reg::INTMC, 1);
    assert!(c.intx());
    // INTx disable in the PCI command register.
    c.config_write(0x04, 2, pci::CMD_INTX_DISABLE as u32);
    assert!(!c.intx());
    c.config_write(0x04, 2, 0);
    // The head doorbell acknowledges: deasserted.
    c.write32(reg::DOORBELL_BASE + 4, 1);
    assert!(!c.intx());
    assert_eq!(c.config_read(0x06, 2) & (1 << 3), 0);
}

#[test]
fn msix_messages_per_vector_and_masking() {
    let mut d = driver(&["interface.interrupt=\"msix\""]);
    let n0 = d.ctrl.msix_messages().len();
    assert!(n0 >= 5, "admin completions signalled on vector 0");
    d.write(0, &vec![1u8; 4096]).unwrap();
    let m = *d.ctrl.msix_messages().last().unwrap();
    assert_eq!(m.vector, 1);
    assert_eq!(m.addr, 0xFEE0_0000);
    assert_eq!(m.data, 0x41);
    assert!(m.time > SimTime::ZERO);
    // Mask vector 1: the next completion sets its pending bit instead.
    let ctl = pci::MSIX_TABLE_OFFSET as u64 + 16 + 12;
    d.ctrl.write32(ctl, 1);
    let n = d.ctrl.msix_messages().len();
    d.read(0, 1).unwrap();
    assert_eq!(d.ctrl.msix_messages().len(), n);
    assert_eq!(d.ctrl.read32(pci::MSIX_PBA_OFFSET as u64) & 0b10, 0b10);
    d.ctrl.write32(ctl, 0);
    assert_eq!(d.ctrl.msix_messages().len(), n + 1);
    assert_eq!(d.ctrl.read32(pci::MSIX_PBA_OFFSET as u64), 0);
    assert!(!d.ctrl.intx(), "no pin interrupt with MSI-X on");
}

// ---------------------------------------------------------------------------------------------
// Timing and determinism

#[test]
fn completion_times_come_from_the_model() {
    // A fresh drive (small-tlc preconditions by default): a never-written block is unmapped.
    let mut d = driver(&[
        "precondition.fill=\"none\"",
        "precondition.random_overwrite=0.0",
    ]);
    let t0 = d.ctrl.clock();
    let w = d.write(0, &pattern(16384, 1)).unwrap();
    assert_eq!(w.submitted, t0);
    // A TLC program takes at least tPROG(LSB) = 500 µs.
    assert!(w.latency() >= SimTime::from_us(500), "{:?}", w.latency());
    assert_eq!(d.ctrl.clock(), w.completed);
    let (_, r) = d.read_at(0, 1, DATA_ADDR).unwrap();
    assert!(
        r.latency() >= SimTime::from_us(50),
        "a NAND read: {:?}",
        r.latency()
    );
    assert!(r.latency() < SimTime::from_us(500));
    // Reading a never-written block needs no NAND access: faster.
    let (_, z) = d.read_at(900_000 % d.nsze(), 1, DATA_ADDR).unwrap();
    assert!(z.latency() < SimTime::from_us(50), "{:?}", z.latency());
    // Errors take the firmware time only.
    let e = d.submit_raw(&[Sqe::new(0x7F)]).unwrap();
    assert!(e[0].latency() <= SimTime::from_us(1));
    // Batched reads run in parallel in the model and complete in time order.
    for k in 0..8u64 {
        d.write(64 + k * 64, &pattern(4096, k as u8)).unwrap();
    }
    let cmds: Vec<IoCmd> = (0..8u64)
        .map(|k| IoCmd::Read {
            slba: 64 + k * 64,
            nlb: 1,
        })
        .collect();
    let t = d.ctrl.clock();
    let done = d.submit_batch(&cmds, None).unwrap();
    let times: Vec<SimTime> = done.iter().map(|(x, _)| x.completed).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "posted in completion order"
    );
    assert!(
        *times.last().unwrap() - t < SimTime::from_us(8 * 50),
        "reads overlapped"
    );
}

fn script(d: &mut HostDriver) -> Vec<(u16, SimTime, SimTime)> {
    let mut out = Vec::new();
    for k in 0..20u64 {
        let r = d.write(k * 7 % 100, &pattern(8192, k as u8)).unwrap();
        out.push((r.cqe.cid, r.submitted, r.completed));
    }
    let cmds: Vec<IoCmd> = (0..16u64)
        .map(|k| IoCmd::Read {
            slba: k * 3,
            nlb: 2,
        })
        .collect();
    for (x, _) in d.submit_batch(&cmds, None).unwrap() {
        out.push((x.cqe.cid, x.submitted, x.completed));
    }
    out
}

#[test]
fn same_commands_same_completion_times() {
    let a = script(&mut driver(&[]));
    let b = script(&mut driver(&[]));
    assert_eq!(a, b);
}

#[test]
fn data_survives_a_controller_reset() {
    let mut d = driver(&[]);
    let data = pattern(4096 * 3, 8);
    d.write(42, &data).unwrap();
    d.shutdown().unwrap();
    assert_eq!((d.ctrl.read32(reg::CSTS) >> 2) & 3, 0b10);
    let ctrl = std::mem::replace(&mut d.ctrl, ctrl(&[], 4096));
    let mut d2 = HostDriver::bring_up(ctrl, 16, InterruptMode::Msix).unwrap();
    assert_eq!(d2.read(42, 3).unwrap(), data);
}

#[test]
fn pci_config_space() {
    let mut c = ctrl(&[], 4096);
    assert_eq!(c.config_read(0x00, 2), 0x8086);
    assert_eq!(c.config_read(0x02, 2), 0x0953);
    assert_eq!(c.config_read(0x09, 1), 0x02, "prog-if NVMe");
    assert_eq!(c.config_read(0x0A, 1), 0x08, "subclass NVM");
    assert_eq!(c.config_read(0x0B, 1), 0x01, "class mass storage");
    c.config_write(0x10, 4, 0xFFFF_FFFF);
    let sz = !(c.config_read(0x10, 4) & !0xF) + 1;
    assert_eq!(sz, pci::BAR0_SIZE);
    assert_eq!(c.config_read(0x3D, 1), 1, "INTA");
    // MSI-X table size: 8 I/O queues in small-tlc + admin = 9 vectors.
    assert_eq!(c.config_read(pci::MSIX_CAP as u32 + 2, 2) & 0x7FF, 8);
    // Link status from the config: PCIe gen 3 ×4.
    assert_eq!(c.config_read(pci::PCIE_CAP as u32 + 0x12, 2), 0x43);
}

// ---------------------------------------------------------------------------------------------
// Robustness

#[derive(Clone, Debug)]
enum Action {
    Mmio {
        off: u64,
        size: u8,
        val: u64,
    },
    Read {
        off: u64,
        size: u8,
    },
    Config {
        off: u32,
        size: u8,
        val: u32,
    },
    Mem {
        addr: u64,
        bytes: Vec<u8>,
    },
    /// Put 64 bytes at an SQ slot (queue base chosen among the driver's) and ring its doorbell.
    Sqe {
        admin: bool,
        bytes: Vec<u8>,
        tail: u32,
    },
}

fn action() -> impl Strategy<Value = Action> {
    let reg_off = prop_oneof![
        Just(0x0Cu64),
        Just(0x10),
        Just(0x14),
        Just(0x1C),
        Just(0x24),
        Just(0x28),
        Just(0x2C),
        Just(0x30),
        Just(0x34),
        (0x1000u64..0x1010),
        (0u64..0x4100),
        any::<u64>(),
    ];
    prop_oneof![
        3 => (reg_off.clone(), prop_oneof![Just(4u8), Just(8), Just(1), Just(2), any::<u8>()], any::<u64>())
            .prop_map(|(off, size, val)| Action::Mmio { off, size, val }),
        1 => (reg_off, any::<u8>()).prop_map(|(off, size)| Action::Read { off, size }),
        1 => (0u32..300, prop_oneof![Just(1u8), Just(2), Just(4)], any::<u32>())
            .prop_map(|(off, size, val)| Action::Config { off, size, val }),
        1 => (prop_oneof![Just(0x0080_0000u64), Just(0x0100_0000), any::<u64>()],
              prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(addr, bytes)| Action::Mem { addr, bytes }),
        4 => (any::<bool>(), prop::collection::vec(any::<u8>(), 64), 0u32..70)
            .prop_map(|(admin, bytes, tail)| Action::Sqe { admin, bytes, tail }),
    ]
}

fn small_driver() -> HostDriver {
    let c = SsdConfig::resolve("small-tlc", &["interface.io_queues=2".to_string()]).unwrap();
    let ctrl = Controller::new(&c, &NvmeOptions::default()).unwrap();
    HostDriver::bring_up(ctrl, 64, InterruptMode::Pin).unwrap()
}

/// Make a random SQE more likely to reach the interesting paths: a known opcode, nsid 1, PRPs
/// in the driver's buffers, small transfers.
fn shape(bytes: &[u8], admin_q: bool) -> [u8; 64] {
    let mut b = [0u8; 64];
    b.copy_from_slice(bytes);
    let sel = bytes[1];
    if sel < 200 {
        let ops: &[u8] = if admin_q {
            &[0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0A, 0x0C]
        } else {
            &[0x00, 0x01, 0x02, 0x09]
        };
        b[0] = ops[bytes[0] as usize % ops.len()];
        b[1] = 0; // no fuse, PRPs
        b[4..8].copy_from_slice(&(1u32 + (bytes[4] as u32 % 2) * 0xFFFF_FFFE).to_le_bytes());
        let prp1 = 0x0100_0000u64 + (bytes[24] as u64 & 0x1F) * 4096 + (bytes[25] as u64 & 3) * 512;
        b[24..32].copy_from_slice(&prp1.to_le_bytes());
        let prp2 = 0x0080_0000u64 + (bytes[32] as u64 & 0xF) * 4096;
        b[32..40].copy_from_slice(&prp2.to_le_bytes());
        if !admin_q {
            b[44..48].copy_from_slice(&0u32.to_le_bytes()); // SLBA high
            b[48] &= 0x3F; // NLB ≤ 64 blocks
            b[49] = 0;
        } else {
            b[41] &= 0x01;
        }
    }
    b
}

fn apply(d: &mut HostDriver, a: &Action) {
    match a {
        Action::Mmio { off, size, val } => d.ctrl.mmio_write(*off, *size, *val),
        Action::Read { off, size } => {
            let _ = d.ctrl.mmio_read(*off, *size);
        }
        Action::Config { off, size, val } => d.ctrl.config_write(*off, *size, *val),
        Action::Mem { addr, bytes } => d.ctrl.mem.write(*addr, bytes),
        Action::Sqe { admin, bytes, tail } => {
            let (base, db, size) = if *admin {
                (ASQ_ADDR, reg::DOORBELL_BASE, 32u32)
            } else {
                (
                    ssdlab::driver::nvme_regs::host_driver::IOSQ_ADDR,
                    reg::DOORBELL_BASE + 8,
                    64,
                )
            };
            let slot = tail % size;
            let b = shape(bytes, *admin);
            d.ctrl.mem.write(base + 64 * slot as u64, &b);
            d.ctrl.write32(db, (slot + 1) % size);
            // Sometimes acknowledge completions, sometimes not.
            if bytes[2] & 1 == 0 {
                let cq_db = db + 4;
                d.ctrl.write32(cq_db, bytes[3] as u32 % size);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_mmio_and_commands_never_panic(actions in prop::collection::vec(action(), 1..60)) {
        let mut d = small_driver();
        for a in &actions {
            apply(&mut d, a);
            let csts = d.ctrl.read32(reg::CSTS);
            // CFS only with RDY clear.
            prop_assert!(csts & 2 == 0 || csts & 1 == 0);
        }
        // Whatever happened, a reset and a fresh bring-up work.
        let ctrl = std::mem::replace(&mut d.ctrl, Controller::new(
            &SsdConfig::resolve("small-tlc", &[]).unwrap(),
            &NvmeOptions::default()).unwrap());
        let mut d2 = HostDriver::bring_up(ctrl, 16, InterruptMode::Pin).unwrap();
        let data = vec![0x5Au8; 4096];
        d2.write(3, &data).unwrap();
        prop_assert_eq!(d2.read(3, 1).unwrap(), data);
    }
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

/// A controller disabled through its registers answers nothing: a command sent to it is the
/// caller's mistake, named as such (CSTS.RDY, CC.EN), not a simulator fault.
#[test]
fn a_command_to_a_disabled_controller_names_the_register_state() {
    let mut d = driver(&[]);
    d.read(0, 1).unwrap();
    d.ctrl.write32(reg::CC, 0);
    for e in [d.read(0, 1).unwrap_err(), d.identify(1, 0).unwrap_err()] {
        assert!(matches!(e, ssdlab::Error::Job(_)), "{e:?}");
        let m = e.to_string();
        assert!(m.contains("CSTS.RDY = 0") && m.contains("CC.EN = 0"), "{m}");
    }
}
