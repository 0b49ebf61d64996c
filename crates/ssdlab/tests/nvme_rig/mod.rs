//! What the register-level NVMe controller's test files share: a small-tlc controller or a
//! brought-up host driver, little-endian fields read at their offsets, data patterns, and the
//! admin queue written and read by hand.
#![allow(dead_code)]

use ssdlab::driver::nvme_regs::host_driver::{Done, HostDriver, ACQ_ADDR, ASQ_ADDR};
use ssdlab::driver::nvme_regs::{reg, Controller, Cqe, NvmeOptions, Sqe, Status};
use ssdlab::SsdConfig;

pub fn cfg(overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

pub fn ctrl(overrides: &[&str], lba: u32) -> Controller {
    Controller::new(
        &cfg(overrides),
        &NvmeOptions {
            lba_size: lba,
            seed: 7,
        },
    )
    .unwrap()
}

pub fn driver(overrides: &[&str]) -> HostDriver {
    let c = cfg(overrides);
    let irq = c.interface.interrupt;
    HostDriver::bring_up(ctrl(overrides, 4096), 64, irq).unwrap()
}

pub fn u16at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
pub fn u32at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
pub fn u64at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}
pub fn u128at(b: &[u8], o: usize) -> u128 {
    u128::from_le_bytes(b[o..o + 16].try_into().unwrap())
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed as u32) as u8 ^ (i >> 9) as u8)
        .collect()
}

pub fn status(d: &Done) -> Status {
    d.cqe.status
}

/// Bring the admin queue up by hand, as a driver would.
pub fn manual_enable(c: &mut Controller) {
    assert_eq!(c.read32(reg::CSTS) & 1, 0);
    c.write32(reg::AQA, 3 | (3 << 16)); // 4 entries each
    c.write64(reg::ASQ, ASQ_ADDR);
    c.write64(reg::ACQ, ACQ_ADDR);
    c.write32(reg::CC, 1 | (6 << 16) | (4 << 20));
    assert_eq!(c.read32(reg::CSTS), 1, "RDY");
}

pub fn admin_slot(c: &mut Controller, slot: u32, s: &Sqe) {
    c.mem.write(ASQ_ADDR + 64 * slot as u64, &s.to_bytes());
}

pub fn admin_cqe(c: &Controller, slot: u32) -> Cqe {
    let mut b = [0u8; 16];
    c.mem.read(ACQ_ADDR + 16 * slot as u64, &mut b);
    Cqe::from_bytes(&b)
}
