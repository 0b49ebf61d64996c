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

impl NandConfig {
    /// No NAND: what a config without `[nand]` holds (a PCM-only device).
    pub fn absent() -> NandConfig {
        NandConfig {
            cell: CellType::Slc,
            channels: 0,
            packages_per_channel: 0,
            dies_per_package: 0,
            planes_per_die: 0,
            blocks_per_plane: 0,
            pages_per_block: 0,
            page_size: Bytes(0),
            timing: NandTiming {
                read: Vec::new(),
                program: Vec::new(),
                erase: Dur::default(),
                ecc_decode: Dur::default(),
            },
            bus: NandBus {
                rate: Rate(1.0),
                width_bits: 8,
                cmd_addr: Dur::default(),
            },
            multiplane: true,
        }
    }

    pub fn is_absent(&self) -> bool {
        self.channels == 0
    }

    /// The smallest NAND the layers accept (one die, two blocks of two 4 KiB pages), for a
    /// device whose requests never reach NAND; its times are placeholders that nothing uses.
    pub fn stub() -> NandConfig {
        NandConfig {
            channels: 1,
            packages_per_channel: 1,
            dies_per_package: 1,
            planes_per_die: 1,
            blocks_per_plane: 2,
            pages_per_block: 2,
            page_size: Bytes(4096),
            timing: NandTiming {
                read: vec![Dur(crate::sim::SimTime::from_us(1))],
                program: vec![Dur(crate::sim::SimTime::from_us(1))],
                erase: Dur(crate::sim::SimTime::from_us(1)),
                ecc_decode: Dur::default(),
            },
            ..NandConfig::absent()
        }
    }
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
