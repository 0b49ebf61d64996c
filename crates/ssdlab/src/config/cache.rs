//! `[cache]`: the controller's DRAM cache buffer (see docs/cache.md).

use super::units::Bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// A write completes once its data is in the buffer ("cached write"); dirty lines reach
    /// NAND later.
    WriteBack,
    /// A write completes when programmed; the buffer keeps a clean copy for reads.
    WriteThrough,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CachePorts {
    Single,
    /// A host port and an additional port for pre-emptive flushing (seed 001).
    Dual,
}

/// What a write-back write of part of a line does when the line's unit is not in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PartialLines {
    /// The rest of the unit is read from NAND before the write enters the buffer (the write
    /// waits for that read), so every line holds a whole unit.
    ReadFirst,
    /// The write enters the buffer at once; the line keeps a mask of the sectors it holds, and
    /// the rest is read from NAND and merged when the line is flushed (or when a read of the
    /// rest brings it in). Seed 001 §II, Fig. 1: a miss costs an eviction and nothing else.
    MergeAtFlush,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// False: no buffer, as if the section were absent (handy as a sweep axis).
    pub enabled: bool,
    /// DRAM size, including any part reserved for the mapping table.
    pub capacity: Bytes,
    /// DRAM set aside for the mapping table (not usable for data).
    pub map_reserved: Bytes,
    pub mode: CacheMode,
    pub replacement: Replacement,
    /// Keep data read from NAND in the buffer (when a clean line can make room).
    pub read_allocate: bool,
    pub dram: DramKind,
    /// Data bus width of the DRAM.
    pub bus_bits: u32,
    pub ports: CachePorts,
    /// Dual port: the share of the buffer's capacity, in eviction order from the eviction end
    /// (free lines first), searched for a dirty line to flush pre-emptively (seed 001: 5 %).
    pub preemptive_window: f64,
    /// Background flushing starts above this dirty share of the lines (0: off) …
    pub flush_high_watermark: f64,
    /// … and stops at or below this one.
    pub flush_low_watermark: f64,
    /// Background flushes in flight at most.
    pub max_background_flushes: u32,
    /// Write-back: how a write of part of a unit that is not in the buffer gets the rest of
    /// the unit (read first, or merged when flushed).
    pub partial_lines: PartialLines,
    pub energy: CacheEnergyConfig,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            capacity: Bytes(16 << 20),
            map_reserved: Bytes(0),
            mode: CacheMode::WriteBack,
            replacement: Replacement::Lru,
            read_allocate: true,
            dram: DramKind::Ddr2,
            bus_bits: 32,
            ports: CachePorts::Single,
            preemptive_window: 0.05,
            flush_high_watermark: 0.0,
            flush_low_watermark: 0.0,
            max_background_flushes: 4,
            partial_lines: PartialLines::ReadFirst,
            energy: CacheEnergyConfig::default(),
        }
    }
}

/// Energy of the buffer DRAM. Defaults are assumed round figures of DDR2-class parts (dynamic
/// energy per byte moved; standby leakage per MiB of cells); the additional port's area adds
/// leakage in proportion (seed 001 cites under 10 % of the chip for its peripheral logic).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CacheEnergyConfig {
    pub read_pj_per_byte: f64,
    pub write_pj_per_byte: f64,
    pub leakage_mw_per_mib: f64,
    /// Extra cell-array-relative area (and so leakage) of the additional port, as a fraction.
    pub port_area_overhead: f64,
}

impl Default for CacheEnergyConfig {
    fn default() -> Self {
        CacheEnergyConfig {
            read_pj_per_byte: 100.0,
            write_pj_per_byte: 110.0,
            leakage_mw_per_mib: 0.5,
            port_area_overhead: 0.02,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// Least recently used (seed 001's page-level LRU).
    Lru,
    /// Second chance: a used line gets its reference bit set and one more round.
    Clock,
    /// Insertion order; hits do not matter.
    Fifo,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DramKind {
    Ddr2,
    Ddr3,
    Lpddr3,
}
