use super::*;

#[test]
fn sqe_and_cqe_round_trip() {
    let s = Sqe {
        opcode: 0x02,
        fuse: 1,
        psdt: 0,
        cid: 0xBEEF,
        nsid: 1,
        mptr: 7,
        prp1: 0x1234_5000,
        prp2: 0xFFFF_0000_0000,
        cdw10: 1,
        cdw11: 2,
        cdw12: 3,
        cdw13: 4,
        cdw14: 5,
        cdw15: 6,
    };
    assert_eq!(Sqe::from_bytes(&s.to_bytes()), s);
    let b = s.to_bytes();
    assert_eq!(u32::from_le_bytes([b[0], b[1], b[2], b[3]]), 0xBEEF_0102);
    let c = Cqe {
        dw0: 9,
        dw1: 0,
        sq_head: 5,
        sq_id: 3,
        cid: 0xBEEF,
        phase: true,
        status: Status::LBA_OUT_OF_RANGE,
    };
    let b = c.to_bytes();
    assert_eq!(Cqe::from_bytes(&b), c);
    // DW3: CID 15:0, P 16, SC 24:17, SCT 27:25, DNR 31.
    let dw3 = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
    assert_eq!(dw3 & 0xFFFF, 0xBEEF);
    assert_eq!((dw3 >> 16) & 1, 1);
    assert_eq!((dw3 >> 17) & 0xFF, 0x80);
    assert_eq!((dw3 >> 25) & 7, 0);
    assert_eq!(dw3 >> 31, 1);
    let q = Status::INVALID_QSIZE.field();
    assert_eq!(Status::from_field(q), Status::INVALID_QSIZE);
}

/// A small drive (80 MiB raw, as the combination matrix's) with `fill` preconditioning.
fn small_drive(fill: &str) -> HostDriver {
    let cfg = crate::config::small_test_drive(fill);
    let ctrl = Controller::new(&cfg, &NvmeOptions::default()).unwrap();
    HostDriver::bring_up(ctrl, 32, crate::config::InterruptMode::Msix).unwrap()
}

#[test]
fn a_sequentially_filled_drive_reads_never_written_blocks_from_nand() {
    // After `fill = "sequential"` every logical block is mapped, as a job's drive starts: a
    // read of a block the host never wrote senses NAND. A fresh drive maps nothing and senses
    // none. The fill's data read as zeros either way.
    let mut fresh = small_drive("none");
    let mut filled = small_drive("sequential");
    for d in [&mut fresh, &mut filled] {
        let lba = d.nsze() / 2;
        assert!(d.read(lba, 8).unwrap().iter().all(|&b| b == 0));
    }
    let sensed = |d: &HostDriver| {
        let nand = d.ctrl.device().backend().nand().unwrap();
        nand.fil.counters.nand_pages_read
    };
    assert_eq!(sensed(&fresh), 0);
    assert!(sensed(&filled) > 0);
    assert!(fresh.ctrl.device().steady_state_result().is_none());
}

#[test]
fn a_steady_state_drive_reports_its_steady_state() {
    let d = small_drive("steady-state");
    let s = d
        .ctrl
        .device()
        .steady_state_result()
        .expect("steady state reached");
    assert!(s.write_amplification > 1.0, "{}", s.write_amplification);
}
