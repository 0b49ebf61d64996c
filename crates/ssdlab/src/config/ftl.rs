//! `[ftl]`: mapping unit, over-provisioning, allocation order, GC and wear levelling.

use super::units::{Bytes, Dur};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GcPolicy {
    Greedy,
    CostBenefit,
    Random,
}

/// Whether the device maps logical addresses itself, or exposes its media raw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FtlKind {
    /// The page-mapping FTL (`ftl/`): requests address the logical space; GC, wear levelling
    /// and over-provisioning are the device's.
    #[default]
    Page,
    /// No device FTL: requests address the NAND by physical unit (byte offset = unit index ×
    /// map unit, units in the order of `media::nand::Geometry`), programs go to erased pages in
    /// order within a block, and a driver erases blocks itself (a host-side FTL drives it).
    None,
    /// Block mapping (`ftl/hybrid.rs`): a page keeps its offset in its block; an overwrite
    /// copies the block.
    Block,
    /// BAST log-block hybrid (Kim et al. 2002): overwrites go to a log block per data block.
    Bast,
    /// FAST log-block hybrid (Lee et al. 2007): one sequential log block and shared random
    /// log blocks.
    Fast,
}

impl FtlKind {
    /// The name a config spells it with (`ftl.kind = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            FtlKind::Page => "page",
            FtlKind::None => "none",
            FtlKind::Block => "block",
            FtlKind::Bast => "bast",
            FtlKind::Fast => "fast",
        }
    }

    pub fn is_page(&self) -> bool {
        *self == FtlKind::Page
    }

    /// One of the block-mapped FTLs of `ftl/hybrid.rs`.
    pub fn is_block_mapped(&self) -> bool {
        matches!(self, FtlKind::Block | FtlKind::Bast | FtlKind::Fast)
    }
}

/// Where a host write goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// To the next plane of the stripe order, whatever the address (writes spread over every
    /// plane in the order they come).
    #[default]
    Dynamic,
    /// To the plane the logical page's number picks: logical page k (of `units_per_page` map
    /// units) always lives on plane `stripe[k mod planes]`, as simulators with static
    /// allocation place it; GC moves data within its plane.
    Static,
    /// As `dynamic`, but when a page is full the stripe passes over planes whose GC is urgent
    /// (at or below `ftl.gc.urgent_free_blocks` free blocks) while some plane is not: host
    /// writes go where they do not wait behind GC, and an urgent plane's die spends its time
    /// collecting. Round-robin striping instead sends every plane its share, so writes pile up
    /// at a die that is collecting and the closed loop slows to that die's pace.
    GcAware,
}

impl Placement {
    pub fn is_dynamic(&self) -> bool {
        *self == Placement::Dynamic
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// `page` (the default) or `none`: the raw device a host-side FTL drives. Written out only
    /// when not the default, so that the hashes of existing configs stay.
    #[serde(default, skip_serializing_if = "FtlKind::is_page")]
    pub kind: FtlKind,
    /// Log blocks per plane of the `bast` and `fast` FTLs (FAST: one sequential, the rest
    /// random). Written out only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_blocks: Option<u32>,
    /// Size of one mapping-table entry's data; defaults to the NAND page size. Host writes
    /// smaller than it are read-modify-write.
    #[serde(default)]
    pub map_unit: Option<Bytes>,
    /// Fraction of the physical capacity hidden from the host (0 ≤ op < 0.9).
    pub over_provisioning: f64,
    /// Order in which consecutive writes are striped, fastest-varying first: a permutation of
    /// C (channel), W (way = package), D (die), P (plane).
    #[serde(default)]
    pub allocation: AllocationOrder,
    /// `dynamic` (the default) or `static`; written out only when not the default.
    #[serde(default, skip_serializing_if = "Placement::is_dynamic")]
    pub placement: Placement,
    /// Planes, taken in `allocation` order, that consecutive host writes rotate over before
    /// they move to the next page of the same blocks: a superblock of that many planes, as
    /// SimpleSSD's `SuperblockDegree` lays pages out. The rotation moves to the next group of
    /// planes when the group's last plane fills its block. Absent: every plane (one page per
    /// plane in turn). Must divide the planes; `dynamic` placement only. Written out only when
    /// set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superblock_planes: Option<u32>,
    #[serde(default)]
    pub gc: GcConfig,
    #[serde(default)]
    pub wear_leveling: WearLevelingConfig,
    /// `full` (the default: the whole map in controller memory) or `cached` (the map in
    /// translation pages on NAND, the hot ones in a mapping cache; see `ftl::mapping_cache`).
    /// Written out only when not the default, so that the hashes of existing configs stay.
    #[serde(default, skip_serializing_if = "MappingKind::is_full")]
    pub mapping: MappingKind,
    /// With `mapping = "cached"`: the mapping cache's size (whole translation pages of one map
    /// unit each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping_cache: Option<Bytes>,
    /// With `mapping = "cached"`: `dram` (controller memory, the default) or `hmb` (NVMe Host
    /// Memory Buffer: every cache access crosses the PCIe link).
    #[serde(default, skip_serializing_if = "MappingCacheLocation::is_dram")]
    pub mapping_cache_location: MappingCacheLocation,
    /// With `mapping = "cached"`: bytes per map entry in a translation page (4 B by default,
    /// DFTL's: Gupta et al., ASPLOS 2009, 512 entries per 2 KiB translation page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping_entry: Option<Bytes>,
    /// Host write streams of the page-mapping FTL: each has its own open block per plane, so
    /// data of different streams never share a block (GC keeps its own stream besides). 1 (the
    /// default) is a single host stream; written out only when not 1, so that the hashes of
    /// existing configs stay.
    #[serde(default = "one_stream", skip_serializing_if = "is_one")]
    pub streams: u32,
    /// Which stream a host write goes to: `host` (the default: the stream id the write carries)
    /// or `hot-cold` (the FTL classifies each write by how recently its unit was written).
    #[serde(default, skip_serializing_if = "StreamPolicy::is_host")]
    pub stream_policy: StreamPolicy,
    /// With `stream_policy = "hot-cold"`: a write is hot when its unit was last written at most
    /// this many host unit writes ago. Default: the logical units (derived: a unit rewritten
    /// more often than a uniformly random writer would rewrite it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_window: Option<u64>,
    /// Power-loss protection: capacitors that, when the power fails, finish the programs
    /// under way and write the cache's dirty data and the map out (enterprise drives have
    /// them; client drives mostly do not). Off by default, and in every compiled-in preset
    /// (assumed: they model client and research drives; no preset names a PLP part). Only the
    /// power-loss model reads it (docs/power-loss.md). Written out only when on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub power_loss_protection: bool,
    /// Host map units written between two checkpoints of the map to flash (the power-loss
    /// model: recovery reads the last one and scans the blocks written since). Default
    /// [`DEFAULT_CHECKPOINT_UNITS`]. Written out only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_units: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Host map units between map checkpoints when `ftl.checkpoint_units` is unset: 65,536 (256
/// MiB of 4 KiB units). Assumed: vendors do not publish their interval; this bounds the
/// recovery scan to a few hundred MiB of written data.
pub const DEFAULT_CHECKPOINT_UNITS: u64 = 65_536;

fn one_stream() -> u32 {
    1
}

/// The most write streams: stream ids are kept in a byte per logical unit, and one value of
/// that byte marks GC's blocks.
pub const MAX_STREAMS: u32 = 255;

/// `ftl.stream_policy`: who chooses a host write's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StreamPolicy {
    /// The host: the stream id the write carries (a job's `stream`, NVMe's Streams directive).
    #[default]
    Host,
    /// The FTL: stream 1 (hot) for a unit rewritten within `hot_window` host unit writes, else
    /// stream 0 (cold); needs `streams = 2`.
    HotCold,
}

impl StreamPolicy {
    pub fn is_host(&self) -> bool {
        *self == StreamPolicy::Host
    }
}

/// Where the logical→physical map lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MappingKind {
    /// The whole map in controller memory: a lookup costs nothing.
    #[default]
    Full,
    /// Demand-paged (DFTL): the map in translation pages on NAND, a cache of them in memory;
    /// a miss reads a translation page, a dirty eviction programs one.
    Cached,
}

impl MappingKind {
    pub fn is_full(&self) -> bool {
        *self == MappingKind::Full
    }
}

/// Where the mapping cache of `mapping = "cached"` lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MappingCacheLocation {
    /// Controller DRAM (or SRAM): a hit costs no time.
    #[default]
    Dram,
    /// NVMe Host Memory Buffer: a hit is a read of host memory over the link.
    Hmb,
}

impl MappingCacheLocation {
    pub fn is_dram(&self) -> bool {
        *self == MappingCacheLocation::Dram
    }
}

/// DFTL's map entry: a 4-byte physical address (Gupta et al., ASPLOS 2009: a 2 KiB
/// translation page holds 512 entries).
pub const DEFAULT_MAPPING_ENTRY_BYTES: u64 = 4;

impl FtlConfig {
    /// No FTL section (a PCM-only device): a raw device's settings, marked by an
    /// over-provisioning no real config can have.
    pub fn absent() -> FtlConfig {
        FtlConfig {
            kind: FtlKind::None,
            log_blocks: None,
            map_unit: None,
            over_provisioning: -1.0,
            allocation: AllocationOrder::default(),
            placement: Placement::default(),
            superblock_planes: None,
            gc: GcConfig::default(),
            wear_leveling: WearLevelingConfig::default(),
            mapping: MappingKind::Full,
            mapping_cache: None,
            mapping_cache_location: MappingCacheLocation::Dram,
            mapping_entry: None,
            streams: 1,
            stream_policy: StreamPolicy::Host,
            hot_window: None,
            power_loss_protection: false,
            checkpoint_units: None,
        }
    }

    pub fn is_absent(&self) -> bool {
        self.over_provisioning == -1.0
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GcConfig {
    pub policy: GcPolicy,
    /// GC starts in a plane when its free blocks fall below this fraction of its blocks.
    pub free_threshold: f64,
    /// At or below this many free blocks in a plane, GC on that die outranks host writes.
    pub urgent_free_blocks: u32,
    /// Urgent GC yields to host writes between its page copies: an urgent die alternates one
    /// GC operation and one host write, so a write waits for one copy rather than a whole
    /// victim (or several). At or below `hard_free_blocks` GC outranks writes again.
    /// Off (the default): urgent GC always outranks host writes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub preemptible: bool,
    /// With `preemptible`: at or below this many free blocks GC is strict again (≥ 1, at most
    /// `urgent_free_blocks`).
    #[serde(skip_serializing_if = "is_one")]
    pub hard_free_blocks: u32,
    /// Background GC in idle time: once no host command has been in flight for `idle_after`,
    /// GC collects ahead of need until each plane has `background_free_fraction` of its blocks
    /// free, and stops starting new victims when a host command arrives. Off by default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// With `background`: how long the host must leave the device idle first (default 100 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_after: Option<Dur>,
    /// With `background`: the free-block level idle GC works up to, a fraction of a plane's
    /// blocks (default twice `free_threshold`, at most what the spare blocks allow).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_free_fraction: Option<f64>,
    /// GC moves a page by copyback (ONFI Copyback Read and Copyback Program: the data stays in
    /// the die, no channel transfer, no ECC) when the page's units all come from one source
    /// page at the same offsets. Off by default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub copyback: bool,
    /// With `ftl.streams` > 1: GC moves a unit into a GC block of the stream that last wrote
    /// it (one more open block per plane for each stream beyond the first), so moved hot and
    /// cold data do not mix again. Off by default: all moved data shares the plane's GC block.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub per_stream: bool,
    /// With `nand.multiplane`: a GC copy takes the next copy of GC jobs on the die's other
    /// planes along, as one multi-plane operation (one sense, one program for all). On by
    /// default; off: every GC copy runs alone.
    #[serde(skip_serializing_if = "is_true")]
    pub multiplane_copies: bool,
}

/// Background GC waits this long after the last host command (100 ms). Assumed: no datasheet
/// publishes a drive's idle timer. A fixed timeout is the simplest of the idle detectors
/// Golding et al. compare ("Idleness is not sloth", USENIX Winter 1995); 100 ms keeps the gaps
/// of a steady stream of a few hundred IOPS from counting as idle.
pub const DEFAULT_IDLE_AFTER: Dur = Dur(crate::sim::SimTime::from_us(100_000));

fn is_one(v: &u32) -> bool {
    *v == 1
}

fn is_true(v: &bool) -> bool {
    *v
}

impl Default for GcConfig {
    fn default() -> Self {
        GcConfig {
            policy: GcPolicy::Greedy,
            free_threshold: 0.05,
            urgent_free_blocks: 2,
            preemptible: false,
            hard_free_blocks: 1,
            background: false,
            idle_after: None,
            background_free_fraction: None,
            copyback: false,
            per_stream: false,
            multiplane_copies: true,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
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

/// A level of the NAND hierarchy, for the allocation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Channel,
    /// A package on the channel.
    Way,
    Die,
    Plane,
}

impl Level {
    fn letter(self) -> char {
        match self {
            Level::Channel => 'C',
            Level::Way => 'W',
            Level::Die => 'D',
            Level::Plane => 'P',
        }
    }
}

/// `ftl.allocation`: the order in which consecutive allocations visit the planes, the
/// fastest-varying level first — a permutation of C (channel), W (way), D (die), P (plane),
/// e.g. "CWDP". Parsed when the config is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct AllocationOrder(pub [Level; 4]);

impl AllocationOrder {
    pub fn parse(s: &str) -> Result<AllocationOrder, crate::error::Problem> {
        let bad = || {
            crate::error::got(
                format!("{s:?}"),
                "a permutation of the letters C, W, D, P (e.g. \"CWDP\")",
            )
        };
        let mut levels = [Level::Channel; 4];
        let mut seen = [false; 4];
        let mut n = 0;
        for c in s.chars() {
            let (l, k) = match c {
                'C' => (Level::Channel, 0),
                'W' => (Level::Way, 1),
                'D' => (Level::Die, 2),
                'P' => (Level::Plane, 3),
                _ => return Err(bad()),
            };
            if n == 4 || seen[k] {
                return Err(bad());
            }
            seen[k] = true;
            levels[n] = l;
            n += 1;
        }
        if n != 4 {
            return Err(bad());
        }
        Ok(AllocationOrder(levels))
    }
}

impl Default for AllocationOrder {
    fn default() -> Self {
        AllocationOrder([Level::Channel, Level::Way, Level::Die, Level::Plane])
    }
}

impl<'de> Deserialize<'de> for AllocationOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::units::deserialize_parsed(d, AllocationOrder::parse)
    }
}

impl From<AllocationOrder> for String {
    fn from(a: AllocationOrder) -> String {
        a.0.iter().map(|l| l.letter()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_orders_are_permutations_of_cwdp() {
        let a = AllocationOrder::parse("PDWC").unwrap();
        assert_eq!(a.0, [Level::Plane, Level::Die, Level::Way, Level::Channel]);
        assert_eq!(String::from(a), "PDWC");
        for bad in ["CWD", "CWDPP", "CCDP", "cwdp", "CWDX", ""] {
            let e = AllocationOrder::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("permutation of the letters C, W, D, P"),
                "{bad}: {e}"
            );
        }
    }
}

#[cfg(test)]
mod mapping_tests {
    use crate::config::SsdConfig;

    fn err(sets: &[&str]) -> String {
        let ov: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match SsdConfig::resolve("small-tlc", &ov) {
            Ok(_) => panic!("{sets:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn cached_mapping_settings_are_checked_field_by_field() {
        let cached = "ftl.mapping=\"cached\"";
        let e = err(&[cached]);
        assert!(
            e.contains("`ftl.mapping_cache`") && e.contains("missing"),
            "{e}"
        );
        let e = err(&[cached, "ftl.mapping_cache=\"2KiB\""]);
        assert!(
            e.contains("`ftl.mapping_cache`") && e.contains("got 2048 bytes"),
            "{e}"
        );
        let e = err(&[cached, "ftl.mapping_cache=\"1MiB\"", "ftl.mapping_entry=3"]);
        assert!(
            e.contains("`ftl.mapping_entry`") && e.contains("got 3 bytes"),
            "{e}"
        );
        let e = err(&["ftl.mapping_cache=\"1MiB\""]);
        assert!(
            e.contains("`ftl.mapping_cache`") && e.contains("with the full map"),
            "{e}"
        );
        // The translation pages share the cache buffer's DRAM with its lines: two lines at least
        // (1 MiB holds the whole map, 224 pages of 4 KiB: 896 KiB).
        let e = err(&[
            cached,
            "ftl.mapping_cache=\"1MiB\"",
            "cache.capacity=\"900KiB\"",
        ]);
        assert!(
            e.contains("`ftl.mapping_cache`")
                && e.contains("got 896KiB")
                && e.contains("two 4096-byte lines"),
            "{e}"
        );
        let e = err(&["ftl.mapping=\"paged\""]);
        assert!(e.contains("paged"), "{e}");
        // One line each.
        assert!(!e.trim_end().contains('\n'), "{e}");
        let ok = SsdConfig::resolve(
            "small-tlc",
            &[
                cached.into(),
                "ftl.mapping_cache=\"64KiB\"".into(),
                "ftl.mapping_cache_location=\"hmb\"".into(),
            ],
        )
        .unwrap();
        // 229376 logical units of 4 KiB, 1024 entries of 4 B per translation page.
        assert_eq!(ok.translation_pages(), Some((1024, 224)));
    }

    #[test]
    fn the_full_map_keeps_the_config_hash() {
        // The new fields are written out only when set, so existing configs hash as before.
        let a = SsdConfig::resolve("small-tlc", &[]).unwrap();
        let b = SsdConfig::resolve("small-tlc", &["ftl.mapping=\"full\"".into()]).unwrap();
        assert_eq!(a.hash(), b.hash());
        assert_eq!(a.translation_pages(), None);
    }
}

impl GcConfig {
    /// GC's start level in blocks: `max(1, ⌈free_threshold × blocks_per_plane⌉)`.
    pub fn threshold_blocks(&self, blocks_per_plane: u32) -> u32 {
        ((self.free_threshold * blocks_per_plane as f64).ceil() as u32).max(1)
    }

    /// The free-block level background GC works up to (0 when it is off): the configured
    /// fraction, or twice the threshold but at most the spare blocks less the two open blocks.
    pub fn background_blocks(&self, blocks_per_plane: u32, over_provisioning: f64) -> u32 {
        if !self.background {
            return 0;
        }
        let threshold = self.threshold_blocks(blocks_per_plane);
        match self.background_free_fraction {
            Some(f) => ((f * blocks_per_plane as f64).ceil() as u32).max(threshold),
            None => {
                let spare = (over_provisioning * blocks_per_plane as f64).floor() as u32;
                (2 * threshold).min(spare.saturating_sub(2)).max(threshold)
            }
        }
    }
}
