//! Host interfaces. So far: NVMe over a PCIe link model.

pub mod pcie;
