//! The register-level NVMe controller's admin commands: queue management errors, each admin
//! status code, and asynchronous event requests.

mod nvme_rig;

use nvme_rig::*;
use ssdlab::driver::nvme_regs::host_driver::{Done, HostDriver, DATA_ADDR};
use ssdlab::driver::nvme_regs::structs::smart_off as so;
use ssdlab::driver::nvme_regs::{admin, feat, reg, Sqe, Status};

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
