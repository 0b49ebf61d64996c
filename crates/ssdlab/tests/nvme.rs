//! The register-level NVMe controller: bring-up through MMIO, Identify layouts at their spec
//! offsets, interrupts, timing from the performance model, PCI configuration space, and
//! robustness against arbitrary MMIO and command bytes. Its admin commands are in
//! `nvme_admin.rs`, its I/O in `nvme_io.rs`.

mod nvme_rig;

use nvme_rig::*;
use proptest::prelude::*;
use ssdlab::config::InterruptMode;
use ssdlab::driver::nvme_regs::host_driver::{HostDriver, IoCmd, ACQ_ADDR, ASQ_ADDR, DATA_ADDR};
use ssdlab::driver::nvme_regs::structs::{ctrl_off as co, ns_off as no};
use ssdlab::driver::nvme_regs::{admin, feat, pci, reg, Controller, NvmeOptions, Sqe, Status};
use ssdlab::sim::SimTime;
use ssdlab::SsdConfig;

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
