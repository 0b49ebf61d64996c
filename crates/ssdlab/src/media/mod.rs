//! Storage media: NAND flash (and its read errors), phase-change memory, and the DRAM of the
//! controller's cache buffer.

pub mod dram;
pub mod nand;
pub mod nand_errors;
pub mod pcm;
