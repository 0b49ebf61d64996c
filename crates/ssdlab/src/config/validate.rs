//! Validation of a whole config: every field's range, and the checks across fields.

use super::*;
use crate::error::{Error, Result};
use crate::sim::SimTime;
use units::format_duration;

impl SsdConfig {
    /// Checks of the IDE, SATA, UFS, eMMC and DRAM-interface settings.
    fn validate_other_interface(&self, kind: InterfaceKind, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| -> Result<()> {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let i = &self.interface;
        let name = match kind {
            InterfaceKind::Ide => "IDE",
            InterfaceKind::Sata => "SATA",
            InterfaceKind::Ufs => "UFS",
            InterfaceKind::Emmc => "eMMC",
            _ => "the DRAM interface",
        };
        if let Err(m) = i.link.check_kind(kind) {
            return err("interface.link", m);
        }
        if i.io_queues != 1 {
            return err(
                "interface.io_queues",
                format!(
                    "got {}, expected 1: {name} has a single command queue",
                    i.io_queues
                ),
            );
        }
        let (limit, why) = i.queue_depth_limit();
        if i.queue_depth == 0 || i.queue_depth > limit {
            return err(
                "interface.queue_depth",
                format!("got {}, expected 1 to {limit}: {why}", i.queue_depth),
            );
        }
        match (kind, i.interrupt) {
            (InterfaceKind::Sata, _) | (_, InterruptMode::Pin | InterruptMode::Polling) => {}
            _ => {
                return err(
                    "interface.interrupt",
                    format!("got \"msix\", expected \"pin\" or \"polling\": {name} has no message-signalled interrupts"),
                )
            }
        }
        if matches!(kind, InterfaceKind::Ide | InterfaceKind::Sata) && i.mdts.0 > 32 << 20 {
            return err(
                "interface.mdts",
                format!(
                    "got {} bytes, expected at most 32MiB (65536 sectors, the ATA 48-bit count)",
                    i.mdts.0
                ),
            );
        }
        if kind == InterfaceKind::Emmc {
            let e = &i.emmc;
            if !VERSIONS.contains(&e.version.as_str()) {
                return err(
                    "interface.emmc.version",
                    format!("got {:?}, expected one of {:?}", e.version, VERSIONS),
                );
            }
            if e.command_queue == Some(true) && e.version != "5.1" {
                return err(
                    "interface.emmc.command_queue",
                    format!("got true with eMMC {}, expected false: command queueing came with eMMC 5.1", e.version),
                );
            }
        }
        if kind == InterfaceKind::Ufs {
            let u = &i.ufs;
            if u.frame_payload.0 < 16 || u.max_data_segment.0 < 512 {
                return err(
                    "interface.ufs",
                    format!("got frame_payload {} and max_data_segment {} bytes, expected at least 16 and 512", u.frame_payload.0, u.max_data_segment.0),
                );
            }
        }
        if kind == InterfaceKind::Dram {
            let d = &i.dram;
            if !d.sector.0.is_power_of_two() || d.sector.0 < 512 {
                return err(
                    "interface.dram.sector",
                    format!(
                        "got {} bytes, expected a power of two of at least 512",
                        d.sector.0
                    ),
                );
            }
            if !d.buffer_size.0.is_power_of_two() || d.buffer_size.0 < d.sector.0.max(4096) {
                return err(
                    "interface.dram.buffer_size",
                    format!("got {} bytes, expected a power of two of at least 4KiB (the buddy allocator splits it in halves)", d.buffer_size.0),
                );
            }
            if d.chunk_size.0 < 4096 || !d.chunk_size.0.is_multiple_of(d.sector.0) {
                return err(
                    "interface.dram.chunk_size",
                    format!("got {} bytes, expected at least 4KiB and a multiple of the sector ({} bytes)", d.chunk_size.0, d.sector.0),
                );
            }
            if d.banks == 0 || d.bank_interleave.0 == 0 || d.invalidate_span.0 == 0 {
                return err(
                    "interface.dram",
                    "banks, bank_interleave and invalidate_span must be above zero".into(),
                );
            }
            // Each bank holds whole interleave stripes of the buffer, so banks beyond the
            // buffer's stripe count are never touched; bounding them here also bounds the two
            // per-bank tables the interface allocates up front (4294967295 banks aborted on a
            // 137 GB allocation).
            let stripes = (d.buffer_size.0 / d.bank_interleave.0).max(1);
            if u64::from(d.banks) > stripes {
                return err(
                    "interface.dram.banks",
                    format!(
                        "got {}, expected 1 to {stripes} (the buffer's {} bytes in stripes of bank_interleave = {} bytes, one or more stripes per bank)",
                        d.banks, d.buffer_size.0, d.bank_interleave.0
                    ),
                );
            }
            let write_back = self
                .cache
                .as_ref()
                .is_some_and(|c| c.enabled && c.mode == CacheMode::WriteBack);
            if d.cached_write && !write_back {
                return err(
                    "interface.dram.cached_write",
                    "got true, but there is no write buffer: add a [cache] with mode = \"write-back\"".into(),
                );
            }
            if !d.cached_write && write_back {
                return err(
                    "interface.dram.cached_write",
                    "got false, but [cache] is write-back, which completes writes from the buffer: set cached_write = true or cache.mode = \"write-through\"".into(),
                );
            }
        }
        Ok(())
    }

    /// The page-mapping FTL's GC must have room to run in the hidden space.
    fn validate_gc(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let n = &self.nand;
        let op = self.ftl.over_provisioning;
        let gc = &self.ftl.gc;
        if !(gc.free_threshold > 0.0 && gc.free_threshold < 0.5) {
            return err(
                "ftl.gc.free_threshold",
                format!(
                    "got {}, expected a fraction between 0 and 0.5",
                    gc.free_threshold
                ),
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
            return err(
                "ftl.over_provisioning",
                format!(
                    "impossible geometry: over-provisioning {op} leaves {spare} spare blocks per plane, \
                     but GC needs at least {need} ({threshold_blocks} for the free-block threshold and {open} open blocks: {streams} for host streams, {gc_open} for GC); \
                     raise over_provisioning or blocks_per_plane"
                ),
            );
        }
        // At least 1: a plane down to the block kept for GC must let GC run before host writes.
        if gc.urgent_free_blocks == 0 || gc.urgent_free_blocks as u64 > threshold_blocks.max(1) {
            return err(
                "ftl.gc.urgent_free_blocks",
                format!(
                    "got {}, expected 1 up to the GC threshold ({threshold_blocks} blocks)",
                    gc.urgent_free_blocks
                ),
            );
        }
        if gc.hard_free_blocks == 0 || gc.hard_free_blocks > gc.urgent_free_blocks {
            return err(
                "ftl.gc.hard_free_blocks",
                format!(
                    "got {}, expected 1 up to ftl.gc.urgent_free_blocks ({})",
                    gc.hard_free_blocks, gc.urgent_free_blocks
                ),
            );
        }
        self.validate_background_gc(origin, threshold_blocks, spare)
    }

    /// `ftl.gc.background` and its two settings.
    fn validate_background_gc(
        &self,
        origin: &str,
        threshold_blocks: u64,
        spare: u64,
    ) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
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
                return err(
                    field,
                    "set without background GC, expected ftl.gc.background = true (or remove it)"
                        .into(),
                );
            }
            return Ok(());
        }
        if let Some(d) = gc.idle_after {
            if d.0 == SimTime::ZERO || d.0 > SimTime::from_us(3_600_000_000) {
                return err(
                    "ftl.gc.idle_after",
                    format!(
                        "got {}, expected more than 0 and at most 1 hour",
                        format_duration(d.0)
                    ),
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
                    format!(
                        "got {f} ({wanted} blocks per plane), expected a fraction whose blocks lie \
                         between the GC threshold ({threshold_blocks}) and the spare blocks less \
                         the two open ones ({most})"
                    ),
                );
            }
        }
        Ok(())
    }

    /// `ftl.streams`, `ftl.stream_policy` and `ftl.hot_window` (checked before the GC's room,
    /// which counts one open block per stream).
    fn validate_streams(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let f = &self.ftl;
        if f.streams == 0 || f.streams > MAX_STREAMS {
            return err(
                "ftl.streams",
                format!("got {}, expected 1 to {MAX_STREAMS}", f.streams),
            );
        }
        if f.gc.per_stream && f.streams == 1 {
            return err(
                "ftl.gc.per_stream",
                "got true with ftl.streams = 1, expected ftl.streams > 1 (it gives each write stream a GC block of its own)".into(),
            );
        }
        if f.streams > 1 {
            if let Err(why) = self.backend_kind().write_streams() {
                return err(
                    "ftl.streams",
                    format!(
                        "got {} with ftl.kind = \"{}\", expected 1: {why} (write streams are the page-mapping FTL's, ftl.kind = \"page\")",
                        f.streams,
                        f.kind.name()
                    ),
                );
            }
        }
        match f.stream_policy {
            StreamPolicy::HotCold if f.streams != 2 => {
                return err(
                    "ftl.stream_policy",
                    format!(
                        "got \"hot-cold\" with ftl.streams = {}, expected ftl.streams = 2 (stream 0 cold, stream 1 hot)",
                        f.streams
                    ),
                );
            }
            StreamPolicy::HotCold => {
                if f.hot_window == Some(0) {
                    return err(
                        "ftl.hot_window",
                        "got 0, expected at least 1 host unit write".into(),
                    );
                }
            }
            StreamPolicy::Host => {
                if f.hot_window.is_some() {
                    return err(
                        "ftl.hot_window",
                        "set with ftl.stream_policy = \"host\", expected ftl.stream_policy = \"hot-cold\" (or remove it)".into(),
                    );
                }
                if f.streams > 1
                    && self
                        .cache
                        .as_ref()
                        .is_some_and(|c| c.enabled && c.mode == CacheMode::WriteBack)
                {
                    return err(
                        "ftl.streams",
                        format!(
                            "got {} with a write-back [cache], which does not keep a buffered line's stream; expected 1, ftl.stream_policy = \"hot-cold\" or cache.mode = \"write-through\"",
                            f.streams
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    /// `[fdp]`: on the page-mapping FTL alone, its handles in place of `ftl.streams`, its
    /// reclaim units whole superblocks of its reclaim groups, and room for every handle's open
    /// blocks (checked before the GC's room, which counts them too).
    fn validate_fdp(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let Some(f) = &self.fdp else { return Ok(()) };
        let kind = self.backend_kind();
        if !matches!(kind, BackendKind::Page | BackendKind::Cached) {
            return err(
                "ftl.kind",
                format!(
                    "got \"{}\" with [fdp] (a {} back end), expected \"page\": placement handles choose the open block a write goes to, which only the page-mapping FTL has",
                    self.ftl.kind.name(),
                    kind.name()
                ),
            );
        }
        if self.interface.kind != InterfaceKind::Nvme {
            return err(
                "interface.kind",
                format!(
                    "got \"{}\" with [fdp], expected \"nvme\": Flexible Data Placement is an NVMe directive (TP4146), and the other interfaces' commands carry no placement identifier",
                    self.interface.kind.name()
                ),
            );
        }
        let f_ = &self.ftl;
        if f_.streams != 1 {
            return err(
                "ftl.streams",
                format!(
                    "got {} with [fdp], expected 1: FDP's reclaim unit handles are the write streams (set fdp.handles)",
                    f_.streams
                ),
            );
        }
        if f_.stream_policy != StreamPolicy::Host {
            return err(
                "ftl.stream_policy",
                "got \"hot-cold\" with [fdp], expected \"host\": the host names each write's placement handle".into(),
            );
        }
        if f_.gc.per_stream {
            return err(
                "ftl.gc.per_stream",
                "got true with [fdp], expected false: fdp.ruh_type decides whether GC keeps the handles apart".into(),
            );
        }
        if f_.placement == Placement::Static {
            return err(
                "ftl.placement",
                "got \"static\" with [fdp], expected \"dynamic\" or \"gc-aware\": a handle writes into reclaim units of its own, not at a logical page's fixed plane".into(),
            );
        }
        let blocks = self.nand.blocks_per_plane as f64;
        let spare = (f_.over_provisioning * blocks).floor() as u64;
        let threshold = f_.gc.threshold_blocks(self.nand.blocks_per_plane) as u64;
        if let Err((field, msg)) = f.validate(&self.nand, spare, threshold) {
            return err(field, msg);
        }
        if let Some(d) = f_.superblock_planes {
            let ru = f.ru_planes(&self.nand);
            if d as u64 != ru {
                return err(
                    "ftl.superblock_planes",
                    format!(
                        "got {d} with [fdp], expected {ru} (a reclaim unit's planes, from fdp.ru_bytes) or none"
                    ),
                );
            }
        }
        Ok(())
    }

    /// `ftl.mapping` and the mapping cache's settings.
    fn validate_mapping(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
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
                    "set with the full map, expected ftl.mapping = \"cached\" (or remove it)"
                        .into(),
                );
            }
            return Ok(());
        }
        if f.kind == FtlKind::None {
            return err(
                "ftl.mapping",
                "got \"cached\", expected \"full\" with ftl.kind = \"none\" (a raw device has no map)".into(),
            );
        }
        if f.kind.is_block_mapped() {
            return err(
                "ftl.mapping",
                "got \"cached\", expected \"full\" with a block-mapped ftl.kind (its block map is small enough to keep whole)".into(),
            );
        }
        let unit = self.map_unit_bytes();
        let entry = f.mapping_entry.map_or(DEFAULT_MAPPING_ENTRY_BYTES, |b| b.0);
        if entry == 0 || entry > 16 || !unit.is_multiple_of(entry) {
            return err(
                "ftl.mapping_entry",
                format!("got {entry} bytes, expected 1 to 16 bytes dividing the map unit ({unit})"),
            );
        }
        let Some(cache) = f.mapping_cache else {
            return err(
                "ftl.mapping_cache",
                "missing, expected a size such as \"4MiB\" with ftl.mapping = \"cached\"".into(),
            );
        };
        if cache.0 < unit {
            return err(
                "ftl.mapping_cache",
                format!(
                    "got {} bytes, expected at least one translation page ({unit} bytes, the map unit)",
                    cache.0
                ),
            );
        }
        if let Some(c) = self.cache.as_ref().filter(|c| c.enabled) {
            // The translation pages share the buffer's DRAM with the data lines.
            let translation = self.cache_translation_bytes();
            let left = c.capacity.0.saturating_sub(c.map_reserved.0);
            if translation > 0 && left.saturating_sub(translation) / unit < 2 {
                return err(
                    "ftl.mapping_cache",
                    format!(
                        "got {} of translation pages in the cache buffer's {} of DRAM ({} reserved for the map), expected room left for at least two {unit}-byte lines (a larger cache.capacity, or a smaller mapping cache)",
                        units::format_bytes(translation),
                        units::format_bytes(c.capacity.0),
                        units::format_bytes(c.map_reserved.0),
                    ),
                );
            }
        }
        if !f.mapping_cache_location.is_dram() && self.interface.kind != InterfaceKind::Nvme {
            return err(
                "ftl.mapping_cache_location",
                format!(
                    "got \"hmb\" with interface.kind = \"{}\", expected \"dram\": a Host Memory Buffer is NVMe's",
                    self.interface.kind.name()
                ),
            );
        }
        Ok(())
    }

    /// A saved drive state (`precondition.state`, docs/state.md) is the page-mapped FTL's:
    /// other back ends keep state it does not hold.
    fn validate_state(&self, path: &str, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        if path.is_empty() {
            return err(
                "precondition.state",
                "got an empty path, expected the file `ssdlab precondition --save` wrote".into(),
            );
        }
        let why = self.state_unsupported();
        match why {
            Some(why) => err(
                "precondition.state",
                format!(
                    "got \"{path}\": a saved drive state is not supported for {why}; only the \
                     page-mapped FTL (ftl.kind = \"page\", full or cached map) saves and loads one"
                ),
            ),
            None => Ok(()),
        }
    }

    /// A raw device (`ftl.kind = "none"`) shows the host every block and has nothing of the
    /// device FTL's: no hidden space, no cache buffer between host and NAND, no preconditioning.
    fn validate_raw(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        if self.ftl.over_provisioning != 0.0 {
            return err(
                "ftl.over_provisioning",
                format!(
                    "got {}, expected 0 with ftl.kind = \"none\" (the host sees every block)",
                    self.ftl.over_provisioning
                ),
            );
        }
        // A zoned drive's zones are logical blocks a cache buffer can hold (flushed in each
        // zone's order, `ctrl::zoned`); a raw device's are physical pages.
        if self.zns.is_none() && self.cache.as_ref().is_some_and(|c| c.enabled) {
            return err(
                "cache",
                "a cache buffer needs logical blocks (the device FTL, or [zns]'s zones); remove \
                 [cache] or set ftl.kind = \"page\""
                    .into(),
            );
        }
        if self.precondition.fill != FillMode::None || self.precondition.random_overwrite != 0.0 {
            return err(
                "precondition",
                "preconditioning writes through the device FTL; with ftl.kind = \"none\" the driver prepares the media".into(),
            );
        }
        Ok(())
    }

    /// The block-mapped FTLs (`block`, `bast`, `fast`): a page per map entry, log blocks as the
    /// scheme needs them, and room per plane for the logical blocks, the logs and a merge.
    fn validate_block_mapped(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let kind = self.ftl.kind;
        let logs = self.ftl.log_blocks;
        if !kind.is_block_mapped() {
            if let Some(n) = logs {
                return err(
                    "ftl.log_blocks",
                    format!("got {n}, expected none unless ftl.kind is \"bast\" or \"fast\""),
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
                return err(
                    "ftl.log_blocks",
                    format!("missing, expected at least {min} log blocks per plane with ftl.kind = \"{name}\""),
                )
            }
            Some(n) if min == 0 => {
                return err(
                    "ftl.log_blocks",
                    format!("got {n}, expected none with ftl.kind = \"block\" (it has no log blocks)"),
                )
            }
            Some(n) if n < min => {
                return err(
                    "ftl.log_blocks",
                    format!("got {n}, expected at least {min} with ftl.kind = \"{name}\""),
                )
            }
            _ => {}
        }
        let page = self.nand.page_size.0;
        if self.map_unit_bytes() != page {
            return err(
                "ftl.map_unit",
                format!(
                    "got {} bytes, expected the page size ({page}) with ftl.kind = \"{name}\" (a block-mapped FTL maps pages)",
                    self.map_unit_bytes()
                ),
            );
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
            return err(
                "ftl.over_provisioning",
                format!(
                    "got {}, which leaves too few spare blocks: each plane needs {need} blocks (its logical blocks, {logs} log blocks and one to merge into) and has {have}; raise it or lower ftl.log_blocks",
                    self.ftl.over_provisioning
                ),
            );
        }
        Ok(())
    }

    fn validate_reliability(&self, r: &ReliabilityConfig, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| -> Result<()> {
            Err(Error::Config(format!(
                "{origin}, field `reliability.{field}`: {msg}"
            )))
        };
        if self.nand.is_absent() {
            return err(
                "pe_limit",
                "[reliability] models NAND wear and errors; a PCM-only device has its endurance in [pcm]".into(),
            );
        }
        if self.ftl.kind == FtlKind::None && self.zns.is_none() {
            return err(
                "pe_limit",
                "the reliability model works through the device FTL (bad-block retirement, read-only mode); a raw device (ftl.kind = \"none\") leaves that to its driver".into(),
            );
        }
        if r.pe_limit == Some(0) {
            return err("pe_limit", "got 0, expected at least 1 cycle".into());
        }
        let b = r.factory_bad_block_rate;
        if !(0.0..0.5).contains(&b) {
            return err(
                "factory_bad_block_rate",
                format!("got {b}, expected a fraction from 0 up to 0.5"),
            );
        }
        for (f, v) in [
            ("rber_fresh", r.rber_fresh),
            ("rber_wear", r.rber_wear),
            ("rber_per_retention_year", r.rber_per_retention_year),
        ] {
            if !(0.0..=0.5).contains(&v) {
                return err(
                    f,
                    format!("got {v}, expected a bit-error rate from 0 to 0.5"),
                );
            }
        }
        if !(r.wear_exponent > 0.0 && r.wear_exponent <= 10.0) {
            return err(
                "wear_exponent",
                format!("got {}, expected more than 0, at most 10", r.wear_exponent),
            );
        }
        // 1,000 years: beyond that no retention figure means anything.
        if !(0.0..=365_000.0).contains(&r.data_age_days) {
            return err(
                "data_age_days",
                format!("got {}, expected 0 to 365000 days", r.data_age_days),
            );
        }
        let unit = self.map_unit_bytes();
        let cw = r.ecc_codeword_bytes as u64;
        if cw < 256 || cw > unit || !unit.is_multiple_of(cw) {
            return err(
                "ecc_codeword_bytes",
                format!(
                    "got {cw}, expected at least 256 bytes and a divisor of the {unit}-byte map unit"
                ),
            );
        }
        if r.ecc_correctable_bits > 1024 {
            return err(
                "ecc_correctable_bits",
                format!("got {}, expected 0 to 1024", r.ecc_correctable_bits),
            );
        }
        if r.read_retry_max > 64 {
            return err(
                "read_retry_max",
                format!("got {}, expected 0 to 64 steps", r.read_retry_max),
            );
        }
        let f = r.read_retry_rber_factor;
        if !(f > 0.0 && f <= 1.0) {
            return err(
                "read_retry_rber_factor",
                format!("got {f}, expected more than 0, at most 1"),
            );
        }
        Ok(())
    }

    /// The checks of `[nand]` and `[ftl]`.
    fn validate_nand(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let n = &self.nand;
        for (field, v) in [
            ("nand.channels", n.channels),
            ("nand.packages_per_channel", n.packages_per_channel),
            ("nand.dies_per_package", n.dies_per_package),
            ("nand.planes_per_die", n.planes_per_die),
            ("nand.blocks_per_plane", n.blocks_per_plane),
            ("nand.pages_per_block", n.pages_per_block),
            ("nand.bus.width_bits", n.bus.width_bits),
        ] {
            if v == 0 {
                return err(field, "got 0, expected at least 1".into());
            }
        }
        let page = n.page_size.0;
        if page == 0 || !page.is_multiple_of(512) {
            return err(
                "nand.page_size",
                format!("got {page} bytes, expected a positive multiple of 512"),
            );
        }
        let bits = n.cell.bits();
        if n.timing.read.len() != bits {
            return err(
                "nand.timing.read",
                format!(
                    "got {} entries, expected {bits} (one per page type of cell = \"{}\")",
                    n.timing.read.len(),
                    format!("{:?}", n.cell).to_lowercase()
                ),
            );
        }
        if n.timing.program.len() != bits {
            return err(
                "nand.timing.program",
                format!(
                    "got {} entries, expected {bits} (one per page type of cell = \"{}\")",
                    n.timing.program.len(),
                    format!("{:?}", n.cell).to_lowercase()
                ),
            );
        }
        if !n.bus.width_bits.is_multiple_of(8) {
            return err(
                "nand.bus.width_bits",
                format!("got {}, expected a multiple of 8", n.bus.width_bits),
            );
        }
        if n.max_suspends_per_op == Some(0) {
            return err(
                "nand.max_suspends_per_op",
                "got 0, expected at least 1 (turn suspension off with nand.suspend = false)".into(),
            );
        }
        let unit = self.map_unit_bytes();
        if unit == 0 || !unit.is_multiple_of(512) || !page.is_multiple_of(unit) {
            return err(
                "ftl.map_unit",
                format!("got {unit} bytes, expected a multiple of 512 that divides the page size ({page})"),
            );
        }
        // Before anything sized by the geometry: every count below fits in u32 once this holds.
        match self.checked_physical_units() {
            Some(units) if units < u32::MAX as u64 => {}
            units => {
                let units = units.map_or("more than 2^64".to_string(), |u| u.to_string());
                let fix = match map_unit_that_fits(self.checked_physical_pages(), page, unit) {
                    Some(u) => format!(
                        "ftl.map_unit = \"{}\" makes it fit (or use a smaller geometry)",
                        unit_text(u)
                    ),
                    None => format!(
                        "no map unit up to the page size ({page} bytes) makes it fit: use a \
                         smaller geometry"
                    ),
                };
                return err(
                    "nand",
                    format!("{units} mapping units (channels x packages_per_channel x dies_per_package x planes_per_die x blocks_per_plane x pages_per_block x units per page), expected fewer than 2^32 − 1 (what this build addresses: the FTL's 4-byte map entries); {fix}"),
                );
            }
        }
        let op = self.ftl.over_provisioning;
        if !(0.0..0.9).contains(&op) {
            return err(
                "ftl.over_provisioning",
                format!("got {op}, expected a fraction from 0 up to 0.9"),
            );
        }
        let gc = &self.ftl.gc;
        if self.ftl.kind != FtlKind::Page && (gc.background || gc.copyback) {
            let field = if gc.background {
                "ftl.gc.background"
            } else {
                "ftl.gc.copyback"
            };
            return err(
                field,
                "set with a device that has no page-mapping FTL GC, expected ftl.kind = \"page\" (or remove it)".into(),
            );
        }
        self.validate_streams(origin)?;
        if self.ftl.checkpoint_units == Some(0) {
            return err(
                "ftl.checkpoint_units",
                "got 0, expected at least 1 map unit between checkpoints".into(),
            );
        }
        self.validate_fdp(origin)?;
        if let Some(d) = self.ftl.superblock_planes {
            let planes = self.planes();
            if self.ftl.kind != FtlKind::Page || !self.ftl.placement.is_dynamic() {
                return err(
                    "ftl.superblock_planes",
                    format!("got {d}, expected none unless ftl.kind = \"page\" with ftl.placement = \"dynamic\""),
                );
            }
            if d == 0 || !planes.is_multiple_of(d as u64) {
                return err(
                    "ftl.superblock_planes",
                    format!(
                        "got {d}, expected a divisor of the {planes} planes (1 up to {planes})"
                    ),
                );
            }
        }
        if self.ftl.kind == FtlKind::None {
            self.validate_raw(origin)?;
        } else if self.ftl.kind == FtlKind::Page {
            // The block-mapped FTLs have no GC: their merges are checked below.
            self.validate_gc(origin)?;
        }
        self.validate_block_mapped(origin)?;
        self.validate_mapping(origin)?;
        Ok(())
    }

    pub(super) fn validate(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        match (&self.pcm, self.nand.is_absent(), self.ftl.is_absent()) {
            (None, true, _) => {
                return err(
                    "nand",
                    "missing, expected a [nand] section (or a [pcm] section for a PCM-only device)".into(),
                )
            }
            (None, _, true) => {
                return err(
                    "ftl",
                    "missing, expected an [ftl] section (or a [pcm] section for a PCM-only device)".into(),
                )
            }
            (None, false, false) => self.validate_nand(origin)?,
            (Some(_), false, true) => {
                return err(
                    "ftl",
                    "missing, expected [ftl] with kind = \"none\" beside [nand] and [pcm] (the fusion device)".into(),
                )
            }
            (Some(p), false, false) => {
                // The fusion device: raw NAND and PCM behind a thin firmware, the FTL on the host.
                if self.ftl.kind != FtlKind::None {
                    return err(
                        "ftl.kind",
                        format!(
                            "got \"{}\" with [nand] and [pcm], expected \"none\": the fusion device has no device FTL (the host runs it)",
                            self.ftl.kind.name()
                        ),
                    );
                }
                if let Err((field, msg)) = p.validate() {
                    return err(&field, msg);
                }
                self.validate_nand(origin)?;
                if let Some(Err((field, msg))) =
                    self.hfsl.as_ref().map(|h| h.validate(self.nand.page_size.0))
                {
                    return err(&field, msg);
                }
            }
            (Some(_), _, false) => {
                return err(
                    "ftl",
                    "given with [pcm] and no [nand], expected no [ftl]: a PCM-only device is updated in place and has no FTL (a fusion device has [nand] too)".into(),
                )
            }
            (Some(p), true, true) => {
                if let Err((field, msg)) = p.validate() {
                    return err(&field, msg);
                }
            }
        }
        if let Some(z) = &self.zns {
            if self.medium() != super::Medium::Nand {
                return err(
                    "zns",
                    "given with [pcm], expected [zns] only on a NAND drive (zones are cut from its blocks)".into(),
                );
            }
            if self.ftl.kind != FtlKind::None {
                return err(
                    "ftl.kind",
                    format!(
                        "got \"{}\" with [zns], expected \"none\": a zoned drive keeps no map and does no garbage collection (the host writes zones in order)",
                        self.ftl.kind.name()
                    ),
                );
            }
            if let Err((field, msg)) = z.validate(&self.nand, self.map_unit_bytes()) {
                return err(field, msg);
            }
        }
        if let Some(named) = self.backend {
            let implied = self.backend_kind();
            if named != implied {
                return err(
                    "backend",
                    format!(
                        "got \"{}\", but the sections describe a \"{}\" back end ({}); change `backend` or those sections",
                        named.name(),
                        implied.name(),
                        implied.what_sections_say()
                    ),
                );
            }
        }
        if self.hfsl.is_some() && self.medium() != super::Medium::Fusion {
            return err(
                "hfsl",
                "given for a device that is not a fusion device, expected [hfsl] only beside [nand] (ftl.kind = \"none\") and [pcm]".into(),
            );
        }
        self.validate_interface(origin)?;
        self.validate_host(origin)?;
        self.validate_controller(origin)?;
        self.validate_precondition(origin)?;
        if let Some(r) = &self.reliability {
            self.validate_reliability(r, origin)?;
        }
        if let Some(p) = &self.power {
            for (field, v, most) in p.fields() {
                if !(0.0..=most).contains(&v) {
                    return err(
                        &format!("power.{field}"),
                        format!("got {v}, expected a number from 0 to {most}"),
                    );
                }
            }
        }
        self.validate_cache(origin)?;
        Ok(())
    }

    /// The host interface: link, queues, transfer sizes, arbitration.
    fn validate_interface(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let kind = self.interface.kind;
        let i = &self.interface;
        if kind == InterfaceKind::Nvme {
            i.link
                .check_kind(kind)
                .map_err(|m| Error::Config(format!("{origin}, field `interface.link`: {m}")))?;
            if i.io_queues == 0 || i.io_queues > 65535 {
                return err(
                    "interface.io_queues",
                    format!("got {}, expected 1 to 65535", i.io_queues),
                );
            }
            if i.queue_depth < 2 || i.queue_depth > 65536 {
                return err(
                    "interface.queue_depth",
                    format!("got {}, expected 2 to 65536 (NVMe limit)", i.queue_depth),
                );
            }
        } else {
            self.validate_other_interface(kind, origin)?;
        }
        if i.mdts.0 < 4096 || !i.mdts.0.is_multiple_of(4096) {
            return err(
                "interface.mdts",
                format!("got {} bytes, expected a multiple of 4KiB", i.mdts.0),
            );
        }
        if let Some(b) = i.ata.prd_boundary {
            if !matches!(kind, InterfaceKind::Ide | InterfaceKind::Sata) {
                return err(
                    "interface.ata.prd_boundary",
                    format!("got {} bytes with interface.kind = \"{}\", expected it absent: PRD entries are bus-master IDE's (kind \"ide\" or \"sata\")", b.0, kind.name()),
                );
            }
            if b.0 < 4096 || !b.0.is_power_of_two() || b.0 > 1 << 30 {
                return err(
                    "interface.ata.prd_boundary",
                    format!(
                        "got {} bytes, expected a power of two from 4KiB to 1GiB",
                        b.0
                    ),
                );
            }
            if let crate::config::PrdBuffer::Offset(o) = i.ata.prd_buffer {
                if o >= b.0 || !o.is_multiple_of(4096) {
                    return err(
                        "interface.ata.prd_buffer",
                        format!("got {o} bytes, expected a multiple of 4KiB below interface.ata.prd_boundary ({} bytes)", b.0),
                    );
                }
            }
        }
        if i.max_payload.0 < 128 || !i.max_payload.0.is_power_of_two() || i.max_payload.0 > 4096 {
            return err(
                "interface.max_payload",
                format!(
                    "got {} bytes, expected 128B to 4KiB, a power of two",
                    i.max_payload.0
                ),
            );
        }
        if i.arbitration_burst == 0 {
            return err(
                "interface.arbitration_burst",
                "got 0, expected at least 1".into(),
            );
        }
        for (field, w) in [
            ("high", i.arbitration_weights.high),
            ("medium", i.arbitration_weights.medium),
            ("low", i.arbitration_weights.low),
        ] {
            if w == 0 || w > ArbitrationWeights::MAX {
                return err(
                    &format!("interface.arbitration_weights.{field}"),
                    format!(
                        "got {w}, expected 1 to {} (commands per arbitration round; the Arbitration feature's weight fields are 8-bit, 0's-based)",
                        ArbitrationWeights::MAX
                    ),
                );
            }
        }
        if let Some(slots) = i.controller_slots {
            if kind != InterfaceKind::Nvme {
                return err(
                    "interface.controller_slots",
                    format!(
                        "given for interface.kind = \"{kind}\", expected it only with \"nvme\""
                    ),
                );
            }
            if slots == 0 {
                return err(
                    "interface.controller_slots",
                    "got 0, expected at least 1 (commands the controller holds at once)".into(),
                );
            }
        }
        if i.arbitration == Arbitration::WeightedRoundRobin {
            if kind != InterfaceKind::Nvme {
                return err(
                    "interface.arbitration",
                    format!("got \"weighted-round-robin\" for interface.kind = \"{kind}\", expected it only with \"nvme\" (other interfaces have one queue)"),
                );
            }
            if i.controller_slots.is_none() {
                return err(
                    "interface.arbitration",
                    "got \"weighted-round-robin\" without interface.controller_slots, expected both: with no bound on the commands the controller holds, every SQ is fetched as its doorbell rings and there is nothing to arbitrate".into(),
                );
            }
        }
        Ok(())
    }

    /// The host: its cores, clock, costs and request splitting.
    fn validate_host(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        // Per-core state is allocated up front: bound it by hosts that exist, not by u32.
        const MAX_CORES: u32 = 4096;
        if self.host.cores == 0 || self.host.cores > MAX_CORES {
            return err(
                "host.cores",
                format!("got {}, expected 1 to {MAX_CORES}", self.host.cores),
            );
        }
        if let Some(Rate(hz)) = self.host.clock {
            // Instruction counts are turned into picoseconds: 1 MHz to 1 THz keeps one
            // instruction between 1 ps and 1 µs.
            if !(1e6..=1e12).contains(&hz) {
                return err(
                    "host.clock",
                    format!("got {hz} Hz, expected 1MHz to 1000GHz"),
                );
            }
        }
        if let Err((field, msg)) = self.host.costs() {
            return err(field, msg);
        }
        if let Some(s) = self.host.max_sectors {
            // Linux's floor is one page (8 sectors of 512 bytes); the ceiling keeps a request
            // of max_sectors below 2^32 bytes, as the block layer's unsigned counts do.
            const MAX_SECTORS: u32 = 1 << 23;
            if !(8..=MAX_SECTORS).contains(&s) {
                return err(
                    "host.max_sectors",
                    format!("got {s}, expected 8 (one 4 KiB page) to {MAX_SECTORS} sectors of 512 bytes"),
                );
            }
        }
        Ok(())
    }

    /// The controller: write protection, firmware costs, scheduling, read-ahead.
    fn validate_controller(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        for (i, r) in self.controller.write_protect.iter().enumerate() {
            let end = r.offset.0.checked_add(r.len.0);
            if r.len.0 == 0 || end.is_none_or(|e| e > self.logical_bytes()) {
                return err(
                    &format!("controller.write_protect[{i}]"),
                    format!(
                        "got offset {} length {}, expected a non-empty range inside the {}-byte logical space",
                        r.offset.0,
                        r.len.0,
                        self.logical_bytes()
                    ),
                );
            }
        }
        let unit_cost = self.controller.ftl_unit_cost.0;
        if unit_cost > SimTime::from_us(1_000_000) {
            return err(
                "controller.ftl_unit_cost",
                format!(
                    "got {} us, expected at most 1 s per map unit",
                    unit_cost.as_us_f64()
                ),
            );
        }
        match (self.controller.scheduler, self.controller.write_deadline) {
            (Some(DieScheduler::Deadline), None) => {
                return err(
                    "controller.write_deadline",
                    "missing: scheduler = \"deadline\" needs the longest a write may wait behind reads (e.g. \"2ms\")".into(),
                );
            }
            (Some(DieScheduler::Deadline), Some(d))
                if d.0 == SimTime::ZERO || d.0 > SimTime::from_us(60_000_000) =>
            {
                return err(
                    "controller.write_deadline",
                    format!(
                        "got {} us, expected more than 0 and at most 60 s",
                        d.0.as_us_f64()
                    ),
                );
            }
            (s, Some(_)) if s != Some(DieScheduler::Deadline) => {
                return err(
                    "controller.write_deadline",
                    format!(
                        "set with scheduler = \"{}\", expected only with scheduler = \"deadline\"",
                        s.unwrap_or_default().name()
                    ),
                );
            }
            _ => {}
        }
        if let Some(ra) = self.controller.read_ahead.filter(|b| b.0 > 0) {
            const MAX_READ_AHEAD: u64 = 64 << 20;
            if ra.0 > MAX_READ_AHEAD {
                return err(
                    "controller.read_ahead",
                    format!("got {} bytes, expected at most 64 MiB", ra.0),
                );
            }
        }
        if self.controller.multiplane_window == 0 {
            return err(
                "controller.multiplane_window",
                "got 0, expected at least 1".into(),
            );
        }
        Ok(())
    }

    /// Preconditioning: the overwrites, the fill the medium allows, a saved state.
    fn validate_precondition(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let r = self.precondition.random_overwrite;
        if !(0.0..=100.0).contains(&r) {
            return err(
                "precondition.random_overwrite",
                format!("got {r}, expected a fraction from 0 to 100"),
            );
        }
        if self.precondition.fill == FillMode::SteadyState && self.medium() == super::Medium::Pcm {
            // PCM is updated in place: no FTL whose blocks a steady state would lay out.
            return err(
                "precondition.fill",
                "got \"steady-state\" with a PCM-only device (updated in place: no FTL to age), \
                 expected \"sequential\" or \"none\" (steady-state preconditioning is for the \
                 page-mapping and block-mapped FTLs; precondition.random_overwrite ages any FTL)"
                    .into(),
            );
        }
        if let Some(path) = &self.precondition.state {
            self.validate_state(path, origin)?;
        }
        Ok(())
    }

    /// The cache buffer `c`: its capacity, flushing and energy.
    fn validate_cache(&self, origin: &str) -> Result<()> {
        let err = |field: &str, msg: String| {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        if let Some(c) = &self.cache {
            let unit = self.map_unit_bytes();
            if c.map_reserved.0 >= c.capacity.0 || (c.capacity.0 - c.map_reserved.0) / unit < 2 {
                return err(
                    "cache.capacity",
                    format!(
                        "got {} with {} reserved for the map, expected room for at least two {}-byte lines",
                        units::format_bytes(c.capacity.0),
                        units::format_bytes(c.map_reserved.0),
                        unit
                    ),
                );
            }
            // Lines are allocated up front and counted in u32; a buffer with more lines than the
            // drive has map units could never fill.
            let lines = (c.capacity.0 - c.map_reserved.0) / unit;
            let most = self.logical_units().min(u32::MAX as u64 - 1);
            if lines > most {
                return err(
                    "cache.capacity",
                    format!(
                        "got {} ({lines} lines of {unit} bytes), expected at most {} ({most} lines: no more than the drive's {} of logical capacity)",
                        units::format_bytes(c.capacity.0),
                        units::format_bytes(most * unit + c.map_reserved.0),
                        units::format_bytes(self.logical_bytes())
                    ),
                );
            }
            if ![8, 16, 32, 64].contains(&c.bus_bits) {
                return err(
                    "cache.bus_bits",
                    format!("got {}, expected 8, 16, 32 or 64", c.bus_bits),
                );
            }
            if !(0.0..=1.0).contains(&c.preemptive_window) {
                return err(
                    "cache.preemptive_window",
                    format!(
                        "got {}, expected a fraction from 0 to 1",
                        c.preemptive_window
                    ),
                );
            }
            let (hi, lo) = (c.flush_high_watermark, c.flush_low_watermark);
            if !(0.0..=1.0).contains(&hi) || !(0.0..=1.0).contains(&lo) || (hi > 0.0 && lo >= hi) {
                return err(
                    "cache.flush_high_watermark",
                    format!("got high {hi} and low {lo}, expected 0 ≤ low < high ≤ 1 (high 0 turns background flushing off)"),
                );
            }
            if c.max_background_flushes == 0 {
                return err(
                    "cache.max_background_flushes",
                    "got 0, expected at least 1".into(),
                );
            }
            let e = &c.energy;
            for (f, v) in [
                ("cache.energy.read_pj_per_byte", e.read_pj_per_byte),
                ("cache.energy.write_pj_per_byte", e.write_pj_per_byte),
                ("cache.energy.leakage_mw_per_mib", e.leakage_mw_per_mib),
                ("cache.energy.port_area_overhead", e.port_area_overhead),
            ] {
                if !(v >= 0.0 && v.is_finite()) {
                    return err(f, format!("got {v}, expected a number of zero or more"));
                }
            }
        }
        Ok(())
    }
}

/// The smallest map unit larger than `unit` (a multiple of 512 bytes that divides the page
/// size, as `ftl.map_unit` must be) at which `pages` pages of `page` bytes make fewer than
/// 2^32 − 1 mapping units; None when not even a whole page does (or `pages` overflowed).
fn map_unit_that_fits(pages: Option<u64>, page: u64, unit: u64) -> Option<u64> {
    let pages = pages?;
    (unit.saturating_add(512)..=page)
        .step_by(512)
        .filter(|u| page.is_multiple_of(*u))
        .find(|u| {
            pages
                .checked_mul(page / u)
                .is_some_and(|n| n < u32::MAX as u64)
        })
}

/// A size as `ftl.map_unit` takes it: KiB when whole.
fn unit_text(bytes: u64) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{}KiB", bytes / 1024)
    } else {
        format!("{bytes}B")
    }
}

#[cfg(test)]
mod tests;
