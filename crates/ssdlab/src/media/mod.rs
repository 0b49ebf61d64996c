//! Storage media. So far: NAND flash.

pub mod nand;
