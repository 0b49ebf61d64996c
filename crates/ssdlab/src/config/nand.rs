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
    /// Which pages of different planes may share a multi-plane operation: `relaxed` (any, the
    /// default), `onfi` (the same page address in every block) or `onfi-same-block` (also the
    /// same block address within every plane). The new keys below are written out only when set,
    /// so that the hashes of existing configs stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplane_rule: Option<MultiplaneRule>,
    /// Whether a read arriving at a die busy with a program or an erase may suspend it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspend: bool,
    /// Time from a program-suspend command to the die accepting a read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_suspend_latency: Option<Dur>,
    /// Time from an erase-suspend command to the die accepting a read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erase_suspend_latency: Option<Dur>,
    /// Time from a resume command to the suspended operation running again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_latency: Option<Dur>,
    /// How many times one program or erase may be suspended, ≥ 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_suspends_per_op: Option<u32>,
}

/// The address rule of multi-plane operations (docs/nand.md, "Multi-plane and same-page
/// gathering").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MultiplaneRule {
    /// Any page on another plane of the die may join (the simulator's historical rule).
    #[default]
    Relaxed,
    /// Members on distinct planes of the die use the same page address within their blocks.
    Onfi,
    /// As `onfi`, and the same block address within every plane (parts whose ONFI parameter
    /// page clears "no block address restrictions").
    OnfiSameBlock,
}

/// Defaults of the suspend keys. No NAND datasheet or paper found gives these figures: they
/// are assumed (see docs/nand.md for the NOR-flash figures they are in line with).
pub const DEFAULT_PROGRAM_SUSPEND_LATENCY: Dur = Dur(crate::sim::SimTime::from_us(15));
pub const DEFAULT_ERASE_SUSPEND_LATENCY: Dur = Dur(crate::sim::SimTime::from_us(20));
pub const DEFAULT_RESUME_LATENCY: Dur = Dur(crate::sim::SimTime::ZERO);
pub const DEFAULT_MAX_SUSPENDS_PER_OP: u32 = 1;

impl NandConfig {
    pub fn multiplane_rule(&self) -> MultiplaneRule {
        self.multiplane_rule.unwrap_or_default()
    }

    /// Whether the config names any of the multi-plane-rule or suspend keys: the run result
    /// then carries their counters (`device.nand_ops`).
    pub fn names_nand_ops(&self) -> bool {
        self.multiplane_rule.is_some()
            || self.suspend
            || self.program_suspend_latency.is_some()
            || self.erase_suspend_latency.is_some()
            || self.resume_latency.is_some()
            || self.max_suspends_per_op.is_some()
    }
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
            multiplane_rule: None,
            suspend: false,
            program_suspend_latency: None,
            erase_suspend_latency: None,
            resume_latency: None,
            max_suspends_per_op: None,
        }
    }

    /// The marker [`NandConfig::absent`] leaves: no channels, no page size, no read timing. A
    /// written `[nand]` always has read timings, so `channels = 0` there is a value to refuse
    /// (naming `nand.channels`), not a missing section.
    pub fn is_absent(&self) -> bool {
        self.channels == 0 && self.page_size.0 == 0 && self.timing.read.is_empty()
    }
}

fn yes() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
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
