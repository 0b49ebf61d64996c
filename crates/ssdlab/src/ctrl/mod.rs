//! The controller: host interface layer (command fetch, split, data movement) and flash
//! interface layer (per-die queues and NAND operations).

pub mod buffer;
pub mod cache;
pub mod datacheck;
pub mod fil;
pub mod hil;
