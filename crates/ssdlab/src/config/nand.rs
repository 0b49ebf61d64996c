//! `[nand]`: the NAND geometry, timing and channel bus.

use super::units::{Bytes, Dur, Rate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    Slc,
    Mlc,
    Tlc,
    Qlc,
}

impl CellType {
    pub fn bits(self) -> usize {
        match self {
            CellType::Slc => 1,
            CellType::Mlc => 2,
            CellType::Tlc => 3,
            CellType::Qlc => 4,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    pub cell: CellType,
    pub channels: u32,
    pub packages_per_channel: u32,
    pub dies_per_package: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_size: Bytes,
    pub timing: NandTiming,
    pub bus: NandBus,
    /// Whether a die may run one read or program on several planes at once.
    #[serde(default = "yes")]
    pub multiplane: bool,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NandTiming {
    /// Array read time (tR) per page type: one entry per bit of the cell, LSB first.
    pub read: Vec<Dur>,
    /// Program time (tPROG) per page type, LSB first.
    pub program: Vec<Dur>,
    /// Block erase time (tBERS).
    pub erase: Dur,
    /// ECC decode latency per page read, paid after the data leaves the die.
    #[serde(default)]
    pub ecc_decode: Dur,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NandBus {
    /// Transfers per second on the channel's data lines.
    pub rate: Rate,
    /// Data lines per channel.
    #[serde(default = "eight")]
    pub width_bits: u32,
    /// Command and address cycles (and status polls) per operation, on the bus.
    #[serde(default)]
    pub cmd_addr: Dur,
}

fn eight() -> u32 {
    8
}
