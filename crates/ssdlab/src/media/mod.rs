//! Storage media: NAND flash, and the DRAM of the controller's cache buffer.

pub mod dram;
pub mod nand;
