//! PCI configuration space of the NVMe function: a type-0 header, a 64-bit memory BAR0 and a
//! capability list (power management → MSI-X → PCI Express). Offsets are those of the PCI Local
//! Bus Specification 3.0 §6.1–6.2, PCI Power Management 1.2 §3.2, PCI Express Base 4.0 §7.5.3
//! and §7.7.2 (MSI-X); the values are the controller's.

use crate::config::LinkSpec;

/// Bytes of configuration space. Offsets 0x100–0xFFF (PCI Express extended space) read as zero,
/// which a host reads as "no extended capabilities" (PCIe 4.0 §7.6.3).
pub const CONFIG_SIZE: usize = 4096;
/// Bytes of the conventional header and capabilities actually held.
const HELD: usize = 256;

/// Seed 004 Fig. 3a: VendorID 8086h (Intel), DeviceID 0953h (Intel 750 Series NVMe SSD).
pub const VENDOR_ID: u16 = 0x8086;
pub const DEVICE_ID: u16 = 0x0953;
/// Subsystem vendor = vendor (assumed); subsystem ID assumed.
pub const SUBSYS_VENDOR_ID: u16 = 0x8086;
pub const SUBSYS_ID: u16 = 0x0001;
/// Seed 004 Fig. 3a: class 01h (mass storage), subclass 08h (non-volatile memory), prog-if 02h
/// (NVM Express), as NVMe 1.4 §2.1.5 requires.
pub const CLASS_CODE: [u8; 3] = [0x02, 0x08, 0x01];

/// BAR0 size: registers (0x0000–0x0FFF), doorbells (0x1000–0x1FFF), MSI-X table (0x2000) and
/// PBA (0x3000). Assumed; seed 004 uses 8 KiB without MSI-X.
pub const BAR0_SIZE: u32 = 16 * 1024;
pub const MSIX_TABLE_OFFSET: u32 = 0x2000;
pub const MSIX_PBA_OFFSET: u32 = 0x3000;

pub const PM_CAP: usize = 0x40;
pub const MSIX_CAP: usize = 0x50;
pub const PCIE_CAP: usize = 0x70;

/// PCI command register bits (PCI 3.0 §6.2.2).
pub const CMD_MEMORY_SPACE: u16 = 1 << 1;
pub const CMD_BUS_MASTER: u16 = 1 << 2;
pub const CMD_INTX_DISABLE: u16 = 1 << 10;

/// The configuration space: bytes plus a per-bit write mask (1 = writable by the host).
#[derive(Clone, Debug)]
pub struct ConfigSpace {
    bytes: [u8; HELD],
    wmask: [u8; HELD],
    /// Pin interrupt pending, shown in Status bit 3 (PCI 3.0 §6.2.3).
    pub intx_pending: bool,
}

fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Encoded max payload size (PCIe 4.0 §7.5.3.3: 000b = 128 B … 101b = 4096 B).
fn mps_code(bytes: u64) -> u32 {
    let mut code = 0u32;
    while code < 5 && (128u64 << code) < bytes {
        code += 1;
    }
    code
}

impl ConfigSpace {
    /// `vectors`: MSI-X table entries; `max_payload`: the link's MPS in bytes.
    pub fn new(vectors: u16, link: LinkSpec, max_payload: u64) -> ConfigSpace {
        let mut b = [0u8; HELD];
        let mut w = [0u8; HELD];
        put16(&mut b, 0x00, VENDOR_ID);
        put16(&mut b, 0x02, DEVICE_ID);
        // Command: memory space, bus master, INTx disable are writable; reset value 0.
        put16(
            &mut w,
            0x04,
            CMD_MEMORY_SPACE | CMD_BUS_MASTER | CMD_INTX_DISABLE,
        );
        // Status: capabilities list present (bit 4).
        put16(&mut b, 0x06, 1 << 4);
        b[0x08] = 0x01; // revision ID (assumed)
        b[0x09..0x0C].copy_from_slice(&CLASS_CODE);
        w[0x0C] = 0xFF; // cache line size
        b[0x0E] = 0x00; // header type 0, single function
                        // BAR0: memory, 64-bit (type 10b), not prefetchable; address bits above the size.
        put32(&mut b, 0x10, 0b0100);
        put32(&mut w, 0x10, !(BAR0_SIZE - 1));
        put32(&mut w, 0x14, 0xFFFF_FFFF); // BAR1: upper half of BAR0
        put16(&mut b, 0x2C, SUBSYS_VENDOR_ID);
        put16(&mut b, 0x2E, SUBSYS_ID);
        b[0x34] = PM_CAP as u8;
        w[0x3C] = 0xFF; // interrupt line
        b[0x3D] = 0x01; // interrupt pin INTA#

        // Power management (PCI PM 1.2 §3.2): ID 01h, PMC version 011b, PMCSR.
        b[PM_CAP] = 0x01;
        b[PM_CAP + 1] = MSIX_CAP as u8;
        put16(&mut b, PM_CAP + 2, 0x0003);
        put16(&mut b, PM_CAP + 4, 1 << 3); // No_Soft_Reset
        put16(&mut w, PM_CAP + 4, 0x0003); // PowerState

        // MSI-X (PCIe 4.0 §7.7.2): table size N−1, function mask (14) and enable (15) writable.
        b[MSIX_CAP] = 0x11;
        b[MSIX_CAP + 1] = PCIE_CAP as u8;
        put16(&mut b, MSIX_CAP + 2, vectors.saturating_sub(1) & 0x7FF);
        put16(&mut w, MSIX_CAP + 2, 0xC000);
        put32(&mut b, MSIX_CAP + 4, MSIX_TABLE_OFFSET); // BIR 0
        put32(&mut b, MSIX_CAP + 8, MSIX_PBA_OFFSET); // BIR 0

        // PCI Express capability (PCIe 4.0 §7.5.3), version 2, endpoint.
        let (gen, lanes) = match link {
            LinkSpec::Pcie { gen, lanes } => (gen as u32, lanes as u32),
            // Assumed: an ideal link shows as the fastest the model knows, gen 5 ×16.
            LinkSpec::Ideal => (5, 16),
        };
        b[PCIE_CAP] = 0x10;
        b[PCIE_CAP + 1] = 0x00;
        put16(&mut b, PCIE_CAP + 2, 0x0002);
        put32(&mut b, PCIE_CAP + 4, mps_code(max_payload)); // Device Capabilities
                                                            // Device Control: MPS (7:5) and MRRS (14:12, default 010b = 512 B) writable.
        put16(&mut b, PCIE_CAP + 8, 0b010 << 12);
        put16(&mut w, PCIE_CAP + 8, 0x7FFF);
        put32(&mut b, PCIE_CAP + 0x0C, gen | (lanes << 4)); // Link Capabilities
        put16(&mut w, PCIE_CAP + 0x10, 0x0FFF); // Link Control
        put16(&mut b, PCIE_CAP + 0x12, (gen | (lanes << 4)) as u16); // Link Status
        put32(&mut w, PCIE_CAP + 0x28, 0x0000_FFFF); // Device Control 2
        put32(&mut b, PCIE_CAP + 0x2C, ((1u32 << gen) - 1) << 1); // Link Capabilities 2
        put16(&mut b, PCIE_CAP + 0x30, gen as u16); // Link Control 2: target speed
        put16(&mut w, PCIE_CAP + 0x30, 0x000F);
        ConfigSpace {
            bytes: b,
            wmask: w,
            intx_pending: false,
        }
    }

    fn byte(&self, off: usize) -> u8 {
        if off >= HELD {
            return 0;
        }
        let mut v = self.bytes[off];
        if off == 0x06 && self.intx_pending {
            v |= 1 << 3;
        }
        v
    }

    /// Read `size` (1, 2 or 4) bytes at `offset`, little-endian. Offsets beyond the 4 KiB
    /// space and other sizes read as zero.
    pub fn read(&self, offset: u32, size: u8) -> u32 {
        if !matches!(size, 1 | 2 | 4) || offset as usize + size as usize > CONFIG_SIZE {
            return 0;
        }
        let mut v = 0u32;
        for i in 0..size as usize {
            v |= (self.byte(offset as usize + i) as u32) << (8 * i);
        }
        v
    }

    /// Write `size` (1, 2 or 4) bytes at `offset`; read-only bits keep their value.
    pub fn write(&mut self, offset: u32, size: u8, value: u32) {
        if !matches!(size, 1 | 2 | 4) || offset as usize + size as usize > HELD {
            return;
        }
        for i in 0..size as usize {
            let off = offset as usize + i;
            let m = self.wmask[off];
            let nb = (value >> (8 * i)) as u8;
            self.bytes[off] = (self.bytes[off] & !m) | (nb & m);
        }
    }

    pub fn read16(&self, off: usize) -> u16 {
        self.read(off as u32, 2) as u16
    }

    pub fn command(&self) -> u16 {
        self.read16(0x04)
    }

    /// BAR0's bus address (BAR0 low | BAR1 << 32, type bits cleared).
    pub fn bar0(&self) -> u64 {
        ((self.read(0x14, 4) as u64) << 32) | (self.read(0x10, 4) & !0xF) as u64
    }

    pub fn msix_enabled(&self) -> bool {
        self.read16(MSIX_CAP + 2) & 0x8000 != 0
    }

    pub fn msix_function_masked(&self) -> bool {
        self.read16(MSIX_CAP + 2) & 0x4000 != 0
    }

    pub fn power_state(&self) -> u8 {
        (self.read16(PM_CAP + 4) & 3) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_ids_class_and_bar_sizing() {
        let mut c = ConfigSpace::new(9, LinkSpec::Pcie { gen: 3, lanes: 4 }, 256);
        assert_eq!(c.read(0, 4), 0x0953_8086);
        assert_eq!(c.read(0x08, 4) >> 8, 0x01_08_02);
        // BAR sizing: write all ones, read the mask back.
        c.write(0x10, 4, 0xFFFF_FFFF);
        c.write(0x14, 4, 0xFFFF_FFFF);
        let lo = c.read(0x10, 4);
        assert_eq!(lo & 0xF, 0b0100, "64-bit memory BAR");
        assert_eq!((!(lo & !0xF)).wrapping_add(1), BAR0_SIZE);
        assert_eq!(c.read(0x14, 4), 0xFFFF_FFFF);
        c.write(0x10, 4, 0xFEB0_0000);
        c.write(0x14, 4, 0);
        assert_eq!(c.bar0(), 0xFEB0_0000);
        // Read-only fields ignore writes.
        c.write(0x00, 4, 0);
        assert_eq!(c.read(0, 2), VENDOR_ID as u32);
        // Capability chain: PM → MSI-X → PCIe → end.
        let mut ptr = c.read(0x34, 1) as usize;
        let mut ids = Vec::new();
        while ptr != 0 {
            ids.push(c.read(ptr as u32, 1));
            ptr = c.read(ptr as u32 + 1, 1) as usize;
        }
        assert_eq!(ids, vec![0x01, 0x11, 0x10]);
        assert_eq!(c.read(MSIX_CAP as u32 + 2, 2) & 0x7FF, 8);
        assert_eq!(c.read(PCIE_CAP as u32 + 0x12, 2), 3 | (4 << 4));
        assert_eq!(c.read(0x2000, 4), 0);
        assert_eq!(c.read(5000, 4), 0);
    }
}
