//! Storage media: NAND flash, phase-change memory, and the DRAM of the controller's cache
//! buffer.

pub mod dram;
pub mod nand;
pub mod pcm;
