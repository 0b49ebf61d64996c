//! `[ftl]`: mapping unit, over-provisioning, allocation order, GC and wear levelling.

use super::units::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcPolicy {
    Greedy,
    CostBenefit,
    Random,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// Size of one mapping-table entry's data; defaults to the NAND page size. Host writes
    /// smaller than it are read-modify-write.
    #[serde(default)]
    pub map_unit: Option<Bytes>,
    /// Fraction of the physical capacity hidden from the host (0 ≤ op < 0.9).
    pub over_provisioning: f64,
    /// Order in which consecutive writes are striped, fastest-varying first: a permutation of
    /// C (channel), W (way = package), D (die), P (plane).
    #[serde(default = "cwdp")]
    pub allocation: String,
    #[serde(default)]
    pub gc: GcConfig,
    #[serde(default)]
    pub wear_leveling: WearLevelingConfig,
}

fn cwdp() -> String {
    "CWDP".into()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GcConfig {
    pub policy: GcPolicy,
    /// GC starts in a plane when its free blocks fall below this fraction of its blocks.
    pub free_threshold: f64,
    /// At or below this many free blocks in a plane, GC on that die outranks host writes.
    pub urgent_free_blocks: u32,
}

impl Default for GcConfig {
    fn default() -> Self {
        GcConfig {
            policy: GcPolicy::Greedy,
            free_threshold: 0.05,
            urgent_free_blocks: 2,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WearLevelingConfig {
    /// Open the least-worn free block when a new block is needed.
    pub dynamic: bool,
    /// Migrate the coldest block of a plane when its erase-count spread exceeds this gap;
    /// 0 turns static wear levelling off.
    pub static_gap: u32,
}

impl Default for WearLevelingConfig {
    fn default() -> Self {
        WearLevelingConfig {
            dynamic: true,
            static_gap: 0,
        }
    }
}
