//! Checks of the FTL's settings: GC, write streams and FDP, the mapping and its cache, and the
//! raw and block-mapped schemes.

use super::super::*;
use crate::error::{got, says, Error, Invalid, Problem, Result};
use crate::sim::SimTime;
use units::format_duration;

impl SsdConfig {
    /// The page-mapping FTL's GC must have room to run in the hidden space.
    pub(super) fn validate_gc(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let n = &self.nand;
        let op = self.ftl.over_provisioning;
        let gc = &self.ftl.gc;
        if !(gc.free_threshold > 0.0 && gc.free_threshold < 0.5) {
            return err(
                "ftl.gc.free_threshold",
                got(gc.free_threshold, "a fraction between 0 and 0.5"),
            );
        }
        let blocks = n.blocks_per_plane as f64;
        let threshold_blocks = gc.threshold_blocks(n.blocks_per_plane) as u64;
        // The open blocks (GC's and one per host write stream) plus the GC reserve must fit in
        // the hidden space.
        let spare = (op * blocks).floor() as u64;
        let streams = self.write_streams().clamp(1, MAX_STREAMS) as u64;
        let gc_open = if self.gc_per_stream() { streams } else { 1 };
        let open = gc_open + streams;
        let need = threshold_blocks + open;
        if spare < need {
            return err("ftl.over_provisioning", says(format!(
                    "impossible geometry: over-provisioning {op} leaves {spare} spare blocks per plane, \
                     but GC needs at least {need} ({threshold_blocks} for the free-block threshold and {open} open blocks: {streams} for host streams, {gc_open} for GC); \
                     raise over_provisioning or blocks_per_plane"
                )));
        }
        // At least 1: a plane down to the block kept for GC must let GC run before host writes.
        if gc.urgent_free_blocks == 0 || gc.urgent_free_blocks as u64 > threshold_blocks.max(1) {
            return err(
                "ftl.gc.urgent_free_blocks",
                got(
                    gc.urgent_free_blocks,
                    format!("1 up to the GC threshold ({threshold_blocks} blocks)"),
                ),
            );
        }
        if gc.hard_free_blocks == 0 || gc.hard_free_blocks > gc.urgent_free_blocks {
            return err(
                "ftl.gc.hard_free_blocks",
                got(
                    gc.hard_free_blocks,
                    format!(
                        "1 up to ftl.gc.urgent_free_blocks ({})",
                        gc.urgent_free_blocks
                    ),
                ),
            );
        }
        self.validate_background_gc(origin, threshold_blocks, spare)
    }

    /// `ftl.gc.background` and its two settings.
    pub(super) fn validate_background_gc(
        &self,
        origin: &str,
        threshold_blocks: u64,
        spare: u64,
    ) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let gc = &self.ftl.gc;
        if !gc.background {
            let stray = [
                ("ftl.gc.idle_after", gc.idle_after.is_some()),
                (
                    "ftl.gc.background_free_fraction",
                    gc.background_free_fraction.is_some(),
                ),
            ];
            if let Some((field, _)) = stray.iter().find(|(_, set)| *set) {
                return err(field, says("set without background GC, expected ftl.gc.background = true (or remove it)"));
            }
            return Ok(());
        }
        if let Some(d) = gc.idle_after {
            if d.0 == SimTime::ZERO || d.0 > SimTime::from_us(3_600_000_000) {
                return err(
                    "ftl.gc.idle_after",
                    got(format_duration(d.0), "more than 0 and at most 1 hour"),
                );
            }
        }
        if let Some(f) = gc.background_free_fraction {
            let blocks = self.nand.blocks_per_plane as f64;
            let wanted = (f * blocks).ceil();
            // Two blocks of the spare are open (host and GC): the rest can be free at most.
            let most = spare.saturating_sub(2);
            if !(f > 0.0 && f < 1.0) || wanted < threshold_blocks as f64 || wanted > most as f64 {
                return err(
                    "ftl.gc.background_free_fraction",
                    got(
                        format!("{f} ({wanted} blocks per plane)"),
                        format!(
                            "a fraction whose blocks lie \
                         between the GC threshold ({threshold_blocks}) and the spare blocks less \
                         the two open ones ({most})"
                        ),
                    ),
                );
            }
        }
        Ok(())
    }

    /// `ftl.streams`, `ftl.stream_policy` and `ftl.hot_window` (checked before the GC's room,
    /// which counts one open block per stream).
    pub(super) fn validate_streams(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let f = &self.ftl;
        if f.streams == 0 || f.streams > MAX_STREAMS {
            return err("ftl.streams", got(f.streams, format!("1 to {MAX_STREAMS}")));
        }
        if f.gc.per_stream && f.streams == 1 {
            return err(
                "ftl.gc.per_stream",
                got(
                    "true with ftl.streams = 1",
                    "ftl.streams > 1 (it gives each write stream a GC block of its own)",
                ),
            );
        }
        if f.streams > 1 {
            if let Err(why) = self.backend_kind().write_streams() {
                return err("ftl.streams", got(format!("{} with ftl.kind = \"{}\"", f.streams, f.kind.name()), format!("1: {why} (write streams are the page-mapping FTL's, ftl.kind = \"page\")")));
            }
        }
        match f.stream_policy {
            StreamPolicy::HotCold if f.streams != 2 => {
                return err(
                    "ftl.stream_policy",
                    got(
                        format!("\"hot-cold\" with ftl.streams = {}", f.streams),
                        "ftl.streams = 2 (stream 0 cold, stream 1 hot)",
                    ),
                );
            }
            StreamPolicy::HotCold => {
                if f.hot_window == Some(0) {
                    return err("ftl.hot_window", got("0", "at least 1 host unit write"));
                }
            }
            StreamPolicy::Host => {
                if f.hot_window.is_some() {
                    return err("ftl.hot_window", says("set with ftl.stream_policy = \"host\", expected ftl.stream_policy = \"hot-cold\" (or remove it)"));
                }
                if f.streams > 1
                    && self
                        .cache
                        .as_ref()
                        .is_some_and(|c| c.enabled && c.mode == CacheMode::WriteBack)
                {
                    return err("ftl.streams", says(format!(
                            "got {} with a write-back [cache], which does not keep a buffered line's stream; expected 1, ftl.stream_policy = \"hot-cold\" or cache.mode = \"write-through\"",
                            f.streams
                        )));
                }
            }
        }
        Ok(())
    }

    /// `[fdp]`: on the page-mapping FTL alone, its handles in place of `ftl.streams`, its
    /// reclaim units whole superblocks of its reclaim groups, and room for every handle's open
    /// blocks (checked before the GC's room, which counts them too).
    pub(super) fn validate_fdp(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let Some(f) = &self.fdp else { return Ok(()) };
        let kind = self.backend_kind();
        if !matches!(kind, BackendKind::Page | BackendKind::Cached) {
            return err("ftl.kind", got(format!("\"{}\" with [fdp] (a {} back end)", self.ftl.kind.name(), kind.name()), "\"page\": placement handles choose the open block a write goes to, which only the page-mapping FTL has"));
        }
        if self.interface.kind != InterfaceKind::Nvme {
            return err("interface.kind", got(format!("\"{}\" with [fdp]", self.interface.kind.name()), "\"nvme\": Flexible Data Placement is an NVMe directive (TP4146), and the other interfaces' commands carry no placement identifier"));
        }
        let f_ = &self.ftl;
        if f_.streams != 1 {
            return err(
                "ftl.streams",
                got(
                    format!("{} with [fdp]", f_.streams),
                    "1: FDP's reclaim unit handles are the write streams (set fdp.handles)",
                ),
            );
        }
        if f_.stream_policy != StreamPolicy::Host {
            return err(
                "ftl.stream_policy",
                got(
                    "\"hot-cold\" with [fdp]",
                    "\"host\": the host names each write's placement handle",
                ),
            );
        }
        if f_.gc.per_stream {
            return err(
                "ftl.gc.per_stream",
                got(
                    "true with [fdp]",
                    "false: fdp.ruh_type decides whether GC keeps the handles apart",
                ),
            );
        }
        if f_.placement == Placement::Static {
            return err("ftl.placement", got("\"static\" with [fdp]", "\"dynamic\" or \"gc-aware\": a handle writes into reclaim units of its own, not at a logical page's fixed plane"));
        }
        let blocks = self.nand.blocks_per_plane as f64;
        let spare = (f_.over_provisioning * blocks).floor() as u64;
        let threshold = f_.gc.threshold_blocks(self.nand.blocks_per_plane) as u64;
        if let Err((field, msg)) = f.validate(&self.nand, spare, threshold) {
            return err(field, says(msg));
        }
        if let Some(d) = f_.superblock_planes {
            let ru = f.ru_planes(&self.nand);
            if d as u64 != ru {
                return err(
                    "ftl.superblock_planes",
                    got(
                        format!("{d} with [fdp]"),
                        format!("{ru} (a reclaim unit's planes, from fdp.ru_bytes) or none"),
                    ),
                );
            }
        }
        Ok(())
    }

    /// `ftl.mapping` and the mapping cache's settings.
    pub(super) fn validate_mapping(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let f = &self.ftl;
        if f.mapping == MappingKind::Full {
            let stray = [
                ("ftl.mapping_cache", f.mapping_cache.is_some()),
                ("ftl.mapping_entry", f.mapping_entry.is_some()),
                (
                    "ftl.mapping_cache_location",
                    !f.mapping_cache_location.is_dram(),
                ),
            ];
            if let Some((field, _)) = stray.iter().find(|(_, set)| *set) {
                return err(
                    field,
                    says("set with the full map, expected ftl.mapping = \"cached\" (or remove it)"),
                );
            }
            return Ok(());
        }
        if f.kind == FtlKind::None {
            return err(
                "ftl.mapping",
                got(
                    "\"cached\"",
                    "\"full\" with ftl.kind = \"none\" (a raw device has no map)",
                ),
            );
        }
        if f.kind.is_block_mapped() {
            return err("ftl.mapping", got("\"cached\"", "\"full\" with a block-mapped ftl.kind (its block map is small enough to keep whole)"));
        }
        let unit = self.map_unit_bytes();
        let entry = f.mapping_entry.map_or(DEFAULT_MAPPING_ENTRY_BYTES, |b| b.0);
        if entry == 0 || entry > 16 || !unit.is_multiple_of(entry) {
            return err(
                "ftl.mapping_entry",
                got(
                    format!("{entry} bytes"),
                    format!("1 to 16 bytes dividing the map unit ({unit})"),
                ),
            );
        }
        let Some(cache) = f.mapping_cache else {
            return err(
                "ftl.mapping_cache",
                says("missing, expected a size such as \"4MiB\" with ftl.mapping = \"cached\""),
            );
        };
        if cache.0 < unit {
            return err(
                "ftl.mapping_cache",
                got(
                    format!("{} bytes", cache.0),
                    format!("at least one translation page ({unit} bytes, the map unit)"),
                ),
            );
        }
        if let Some(c) = self.cache.as_ref().filter(|c| c.enabled) {
            // The translation pages share the buffer's DRAM with the data lines.
            let translation = self.cache_translation_bytes();
            let left = c.capacity.0.saturating_sub(c.map_reserved.0);
            if translation > 0 && left.saturating_sub(translation) / unit < 2 {
                return err("ftl.mapping_cache", got(format!("{} of translation pages in the cache buffer's {} of DRAM ({} reserved for the map)", units::format_bytes(translation), units::format_bytes(c.capacity.0), units::format_bytes(c.map_reserved.0)), format!("room left for at least two {unit}-byte lines (a larger cache.capacity, or a smaller mapping cache)")));
            }
        }
        if !f.mapping_cache_location.is_dram() && self.interface.kind != InterfaceKind::Nvme {
            return err(
                "ftl.mapping_cache_location",
                got(
                    format!(
                        "\"hmb\" with interface.kind = \"{}\"",
                        self.interface.kind.name()
                    ),
                    "\"dram\": a Host Memory Buffer is NVMe's",
                ),
            );
        }
        Ok(())
    }

    /// A raw device (`ftl.kind = "none"`) shows the host every block and has nothing of the
    /// device FTL's: no hidden space, no cache buffer between host and NAND, no preconditioning.
    pub(super) fn validate_raw(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        if self.ftl.over_provisioning != 0.0 {
            return err(
                "ftl.over_provisioning",
                got(
                    self.ftl.over_provisioning,
                    "0 with ftl.kind = \"none\" (the host sees every block)",
                ),
            );
        }
        // A zoned drive's zones are logical blocks a cache buffer can hold (flushed in each
        // zone's order, `ctrl::zoned`); a raw device's are physical pages.
        if self.zns.is_none() && self.cache.as_ref().is_some_and(|c| c.enabled) {
            return err("cache", says("a cache buffer needs logical blocks (the device FTL, or [zns]'s zones); remove \
                 [cache] or set ftl.kind = \"page\""));
        }
        if self.precondition.fill != FillMode::None || self.precondition.random_overwrite != 0.0 {
            return err("precondition", says("preconditioning writes through the device FTL; with ftl.kind = \"none\" the driver prepares the media"));
        }
        Ok(())
    }

    /// The block-mapped FTLs (`block`, `bast`, `fast`): a page per map entry, log blocks as the
    /// scheme needs them, and room per plane for the logical blocks, the logs and a merge.
    pub(super) fn validate_block_mapped(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let kind = self.ftl.kind;
        let logs = self.ftl.log_blocks;
        if !kind.is_block_mapped() {
            if let Some(n) = logs {
                return err(
                    "ftl.log_blocks",
                    got(n, "none unless ftl.kind is \"bast\" or \"fast\""),
                );
            }
            return Ok(());
        }
        let name = kind.name();
        let min = match kind {
            FtlKind::Bast => 1,
            FtlKind::Fast => 2,
            _ => 0,
        };
        match logs {
            None if min > 0 => {
                return err("ftl.log_blocks", says(format!("missing, expected at least {min} log blocks per plane with ftl.kind = \"{name}\"")))
            }
            Some(n) if min == 0 => {
                return err("ftl.log_blocks", got(n, "none with ftl.kind = \"block\" (it has no log blocks)"))
            }
            Some(n) if n < min => {
                return err("ftl.log_blocks", got(n, format!("at least {min} with ftl.kind = \"{name}\"")))
            }
            _ => {}
        }
        let page = self.nand.page_size.0;
        if self.map_unit_bytes() != page {
            return err("ftl.map_unit", got(format!("{} bytes", self.map_unit_bytes()), format!("the page size ({page}) with ftl.kind = \"{name}\" (a block-mapped FTL maps pages)")));
        }
        let logs = logs.unwrap_or(0);
        // Logical block L lives on plane L mod planes (`ftl/hybrid.rs`).
        let need = self
            .logical_units()
            .div_ceil(self.nand.pages_per_block as u64)
            .div_ceil(self.planes())
            .saturating_add(logs as u64 + 1);
        let have = self.nand.blocks_per_plane as u64;
        if need > have {
            return err("ftl.over_provisioning", says(format!(
                    "got {}, which leaves too few spare blocks: each plane needs {need} blocks (its logical blocks, {logs} log blocks and one to merge into) and has {have}; raise it or lower ftl.log_blocks",
                    self.ftl.over_provisioning
                )));
        }
        Ok(())
    }
}
