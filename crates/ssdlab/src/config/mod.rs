//! Typed configuration: one schema, defined here, with units on every quantity.
//!
//! A config is TOML. Unknown keys are rejected; every error names the file, line and field, the
//! value, and what was expected. Presets are TOML files shipped in `configs/` and compiled in.

mod cache;
mod controller;
mod fdp;
mod ftl;
mod hfsl;
mod host;
mod interface;
pub(crate) mod load;
mod meta;
mod nand;
mod pcm;
mod power;
mod precondition;
pub mod presets;
mod reliability;
mod schema;
pub mod units;
mod validate;
mod zns;

pub use cache::*;
pub use controller::*;
pub use fdp::*;
pub use ftl::*;
pub use hfsl::*;
pub use host::*;
pub use interface::*;
pub use load::apply_overrides;
pub(crate) use load::{from_toml, line_col};
pub use meta::*;
pub use nand::*;
pub use pcm::*;
pub use power::*;
pub use precondition::*;
pub use reliability::*;
pub use schema::json_schema;
pub use zns::*;

use crate::error::{got, says, ConfigError, Error, Invalid, NoSuchConfig, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
pub use units::{ByteRate, Bytes, Dur, Rate};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    /// The device's back end, named: `"page"`, `"cached"`, `"block-mapped"`, `"raw"`, `"pcm"` or
    /// `"fusion"` (docs/architecture.md, "Back ends"). Optional: the sections imply it (`[nand]`
    /// and `[pcm]`, `ftl.kind`, `ftl.mapping`), and a named one must agree with them. Never
    /// written into the canonical JSON, so a config's hash is the same with or without it;
    /// `config show` prints it.
    #[serde(default, skip_serializing)]
    pub backend: Option<BackendKind>,
    pub meta: Meta,
    /// Required unless `[pcm]` makes the device PCM-only; written out only when present, so
    /// that the hashes of existing configs stay.
    #[serde(
        default = "NandConfig::absent",
        skip_serializing_if = "NandConfig::is_absent"
    )]
    pub nand: NandConfig,
    #[serde(
        default = "FtlConfig::absent",
        skip_serializing_if = "FtlConfig::is_absent"
    )]
    pub ftl: FtlConfig,
    #[serde(default)]
    pub controller: ControllerConfig,
    pub interface: InterfaceConfig,
    #[serde(default)]
    pub host: HostConfig,
    #[serde(default)]
    pub precondition: PreconditionConfig,
    /// The controller's DRAM cache buffer; absent: no cache (writes complete when programmed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheConfig>,
    /// Endurance, wear-out and read errors of the NAND; absent: none (blocks never wear out,
    /// every read decodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reliability: Option<ReliabilityConfig>,
    /// PCM media: with no `[nand]` and `[ftl]`, a PCM-only device (docs/pcm.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcm: Option<PcmConfig>,
    /// Seed 002's host-side FTL over a fusion device (`driver::hfsl`); absent: its defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hfsl: Option<HfslConfig>,
    /// The energy the NAND and the controller draw; absent: no power figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerConfig>,
    /// Zones over the NAND (NVMe ZNS): present, the back end is zoned (docs/zns.md); absent:
    /// a conventional drive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zns: Option<ZnsConfig>,
    /// Flexible Data Placement over the page-mapping FTL (docs/fdp.md): present, the write
    /// streams are its reclaim unit handles; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fdp: Option<FdpConfig>,
}

/// The media of a device: which sections its config has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Medium {
    /// `[nand]` and `[ftl]`: a NAND SSD.
    Nand,
    /// `[pcm]` alone: a PCM-only device.
    Pcm,
    /// `[nand]`, `[ftl] kind = "none"` and `[pcm]`: seed 002's fusion device, raw NAND and PCM
    /// behind one thin firmware (`ctrl::fusion`).
    Fusion,
}

/// A device's back end: which medium it has and, on NAND, which FTL scheme
/// ([`SsdConfig::backend_kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// NAND with the page-mapping FTL, the whole map in controller memory.
    Page,
    /// NAND with the page-mapping FTL and a demand-paged map (`ftl.mapping = "cached"`).
    Cached,
    /// NAND with a block-mapped FTL (`ftl.kind = "block" | "bast" | "fast"`).
    BlockMapped,
    /// Raw NAND for a host-side FTL (`ftl.kind = "none"`, no `[pcm]`).
    Raw,
    /// PCM alone (`[pcm]` without `[nand]`).
    Pcm,
    /// Seed 002's fusion device: raw NAND and PCM behind one firmware.
    Fusion,
    /// NAND cut into zones the host writes sequentially (`[zns]`, with `ftl.kind = "none"`).
    Zoned,
}

impl BackendKind {
    /// The name the docs and results use.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Page => "page",
            BackendKind::Cached => "cached",
            BackendKind::BlockMapped => "block-mapped",
            BackendKind::Raw => "raw",
            BackendKind::Pcm => "pcm",
            BackendKind::Fusion => "fusion",
            BackendKind::Zoned => "zoned",
        }
    }

    /// Which sections and fields make a config this back end (for errors).
    pub fn what_sections_say(self) -> &'static str {
        match self {
            BackendKind::Page => "[nand] with ftl.kind = \"page\" and ftl.mapping = \"full\"",
            BackendKind::Cached => "[nand] with ftl.kind = \"page\" and ftl.mapping = \"cached\"",
            BackendKind::BlockMapped => "[nand] with ftl.kind = \"block\", \"bast\" or \"fast\"",
            BackendKind::Raw => "[nand] with ftl.kind = \"none\", no [pcm] and no [zns]",
            BackendKind::Pcm => "[pcm] with no [nand] and no [ftl]",
            BackendKind::Fusion => "[nand] with ftl.kind = \"none\" and [pcm]",
            BackendKind::Zoned => "[nand] with ftl.kind = \"none\" and [zns]",
        }
    }

    /// Whether the back end separates write streams (`ftl.streams` > 1), and if not, why not.
    /// Streams pick which open block a page goes to: only the page-mapping FTL chooses where a
    /// page goes. A block map puts a page at its offset in its logical block's block or log; a
    /// raw, fusion or zoned device leaves placement to the host (a zone is the host's stream);
    /// PCM is written in place.
    pub fn write_streams(self) -> std::result::Result<(), &'static str> {
        match self {
            BackendKind::Page | BackendKind::Cached => Ok(()),
            BackendKind::BlockMapped => Err("a block map puts each page at its offset in its logical block's data or log block: there is no open block to choose"),
            BackendKind::Raw | BackendKind::Fusion => Err("the host's FTL places every page itself"),
            BackendKind::Zoned => Err("the host places data by zone (a zone is its stream)"),
            BackendKind::Pcm => Err("PCM is written in place"),
        }
    }
}

/// `interface.kind` as a TOML document has it, if it is a string.
fn interface_kind_in(doc: &toml::Table) -> Option<String> {
    doc.get("interface")?
        .get("kind")?
        .as_str()
        .map(str::to_string)
}

/// Whether an override sets the field at `path` or a table that holds it.
fn overrides_set(overrides: &[String], path: &str) -> bool {
    overrides.iter().any(|ov| {
        let set = ov.split_once('=').map_or("", |(p, _)| p.trim());
        set == path
            || path
                .strip_prefix(set)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The most a config or job file may hold. The largest shipped preset is about 4 KiB; the bound
/// is there so that a path such as /dev/zero or a multi-gigabyte file given by mistake is refused
/// at once rather than read until memory runs out (issue 15, defect 4).
pub const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// The text of a small file the user named (`what`: "TOML config", "job file"), at most
/// [`MAX_CONFIG_FILE_BYTES`]: from a regular file or a pipe, UTF-8. The error names `path` as its
/// origin; the caller gives it its area (a config's, a job file's).
pub fn read_small_text_file(path: &str, what: &str) -> std::result::Result<String, Box<Invalid>> {
    use std::io::Read;
    let bad = |words: String| Box::new(Invalid::unnamed(path, says(words)));
    let err = |e: std::io::Error| bad(format!("cannot read: {e}"));
    let file = std::fs::File::open(path).map_err(err)?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(bad(format!("is a directory, expected a {what}")));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    if bytes.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(bad(format!(
            "more than {MAX_CONFIG_FILE_BYTES} bytes, expected a {what} of a few KiB \
             (is it the right file?)"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        bad(format!(
            "not UTF-8 text (byte {}), expected a {what}",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn read_config_file(spec: &str) -> Result<String> {
    read_small_text_file(spec, "TOML config").map_err(|i| Error::Config(ConfigError::Invalid(i)))
}

impl SsdConfig {
    /// Parse and validate a config from TOML text. `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<SsdConfig> {
        let mut cfg: SsdConfig = from_toml(text, origin, Error::bad_config)?;
        if let Some(name) = cfg.host.preset.clone() {
            cfg = Self::with_host_preset(text, origin, &name)?;
        }
        cfg.validate(origin)?;
        Ok(cfg)
    }

    /// The config of `text` with the host preset `name` filling the `[host]` keys it leaves
    /// out (keys the config gives win).
    fn with_host_preset(text: &str, origin: &str, name: &str) -> Result<SsdConfig> {
        let preset = host_preset(name).ok_or_else(|| {
            let names: Vec<&str> = HOST_PRESETS.iter().map(|p| p.0).collect();
            Error::bad_config(Invalid::got(
                origin,
                "host.preset",
                format!("{name:?}"),
                format!("one of {}", names.join(", ")),
            ))
        })?;
        let bad = |e: String| Error::bad_config(Invalid::unnamed(origin, says(e)));
        let mut doc: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let fill: toml::Table = toml::from_str(preset).expect("host presets are TOML");
        let host = doc
            .get_mut("host")
            .and_then(|h| h.as_table_mut())
            .expect("host.preset was read from a [host] table");
        for (k, v) in fill {
            host.entry(k).or_insert(v);
        }
        let merged = toml::to_string(&doc).map_err(|e| bad(e.to_string()))?;
        from_toml(
            &merged,
            &format!("{origin} with host preset {name}"),
            Error::bad_config,
        )
    }

    /// Resolve a preset name or a TOML file path, apply overrides, and validate.
    pub fn resolve(spec: &str, overrides: &[String]) -> Result<SsdConfig> {
        let (text, origin) = if let Some(text) = presets::preset_toml(spec) {
            (text.to_string(), format!("preset {spec}"))
        } else if std::path::Path::new(spec).exists() {
            (read_config_file(spec)?, spec.to_string())
        } else {
            return Err(Error::Config(ConfigError::NoSuchConfig(Box::new(
                NoSuchConfig {
                    spec: spec.to_string(),
                    presets: presets::preset_names().join(", "),
                },
            ))));
        };
        if overrides.is_empty() {
            return SsdConfig::from_toml_str(&text, &origin);
        }
        let mut doc: toml::Table = toml::from_str(&text).map_err(|e| {
            let at = e
                .span()
                .map(|s| {
                    let (l, c) = line_col(&text, s.start);
                    format!(", line {l}, column {c}")
                })
                .unwrap_or_default();
            let words = e.message().replace('\n', " ");
            Error::bad_config(Invalid::unnamed(format!("{origin}{at}"), says(words)))
        })?;
        let base_kind = interface_kind_in(&doc);
        if doc.contains_key("pcm") && !doc.contains_key("nand") {
            // Else the override's partial [ftl] is refused for the fields it lacks.
            if let Some(set) = overrides
                .iter()
                .find(|o| o.trim_start().starts_with("ftl.") || o.trim_start().starts_with("ftl="))
            {
                return Err(Error::bad_config(Invalid::got(
                    format!("{origin} with overrides"),
                    "ftl",
                    format!("{set:?} with [pcm] and no [nand]"),
                    "no [ftl] setting: a PCM-only device is updated in place and has no FTL",
                )));
            }
        }
        apply_overrides(&mut doc, overrides)?;
        let merged = toml::to_string(&doc).map_err(|e| Error::config(e.to_string()))?;
        let origin = format!("{origin} with overrides");
        let mut cfg: SsdConfig = from_toml(&merged, &origin, Error::bad_config)?;
        if let Some(name) = cfg.host.preset.clone() {
            cfg = Self::with_host_preset(&merged, &origin, &name)?;
        }
        // Moving a preset to another protocol is one override: the protocol's own fields follow
        // the kind unless they were set too. The same kind keeps the preset's values.
        if base_kind.as_deref() != Some(cfg.interface.kind.name()) {
            let is_set = |field: &str| overrides_set(overrides, &format!("interface.{field}"));
            cfg.interface.take_kind_defaults(&is_set);
        }
        cfg.validate(&origin)?;
        Ok(cfg)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("config serialises")
    }

    pub fn from_json(text: &str) -> Result<SsdConfig> {
        let mut de = serde_json::Deserializer::from_str(text);
        let cfg: SsdConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            Error::bad_config(Invalid::new(
                "config JSON",
                e.path().to_string(),
                crate::error::json_message(e.inner()),
            ))
        })?;
        cfg.validate("config")?;
        Ok(cfg)
    }

    /// The config as TOML, its back end named on the first line (the canonical JSON leaves it
    /// out: it follows from the sections).
    pub fn to_toml(&self) -> String {
        format!(
            "backend = \"{}\"\n{}",
            self.backend_kind().name(),
            toml::to_string_pretty(self).expect("config serialises to TOML")
        )
    }

    /// A hash of the canonical form, recorded in every result.
    pub fn hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(self.to_json().as_bytes());
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }

    /// Which media the device holds, from the sections given (validation refuses the other
    /// combinations).
    /// The device's back end: its medium and, on NAND, its FTL scheme. The one place that
    /// reads them off the config's sections (`[nand]`, `[pcm]`, `[zns]`, `ftl.kind`,
    /// `ftl.mapping`);
    /// the device builds its `ctrl::backend::Backend` from it and nothing else asks again.
    pub fn backend_kind(&self) -> BackendKind {
        match self.medium() {
            Medium::Pcm => BackendKind::Pcm,
            Medium::Fusion => BackendKind::Fusion,
            Medium::Nand if self.zns.is_some() => BackendKind::Zoned,
            Medium::Nand => match self.ftl.kind {
                FtlKind::None => BackendKind::Raw,
                k if k.is_block_mapped() => BackendKind::BlockMapped,
                _ if self.ftl.mapping == MappingKind::Cached => BackendKind::Cached,
                _ => BackendKind::Page,
            },
        }
    }

    /// This config's back end against the one a driver needs (`want`, in words):
    /// `{name}: got a {kind} device ({its sections}), expected {want}`.
    pub fn not_backend(&self, want: impl Into<String>) -> Invalid {
        let kind = self.backend_kind();
        Invalid::unnamed(
            &self.meta.name,
            got(
                format_args!("a {} device ({})", kind.name(), kind.what_sections_say()),
                want,
            ),
        )
    }

    /// Why this device cannot save or load a drive state (docs/state.md; None: it can): only
    /// the page-mapped FTL keeps its state in what a state file holds.
    pub fn state_unsupported(&self) -> Option<String> {
        match self.backend_kind() {
            BackendKind::Page | BackendKind::Cached if self.fdp.is_some() => {
                Some("[fdp] (its reclaim units' bookkeeping is not saved)".to_string())
            }
            BackendKind::Page | BackendKind::Cached => None,
            kind => Some(format!(
                "the {} back end ({})",
                kind.name(),
                kind.what_sections_say()
            )),
        }
    }

    pub fn medium(&self) -> Medium {
        match (&self.pcm, self.nand.is_absent()) {
            (None, _) => Medium::Nand,
            (Some(_), true) => Medium::Pcm,
            (Some(_), false) => Medium::Fusion,
        }
    }

    /// The PCM of a PCM-only device (None for NAND and fusion devices).
    fn pcm_only(&self) -> Option<&PcmConfig> {
        self.pcm.as_ref().filter(|_| self.nand.is_absent())
    }

    /// The map unit (a PCM-only device: its line). A fusion device's is its NAND's: the
    /// request space without `Flags::PCM`.
    pub fn map_unit_bytes(&self) -> u64 {
        if let Some(p) = self.pcm_only() {
            return p.line.0;
        }
        self.ftl
            .map_unit
            .map(|b| b.0)
            .unwrap_or(self.nand.page_size.0)
    }

    /// The page FTL's write streams: `fdp.handles` with `[fdp]` (a handle is a stream), else
    /// `ftl.streams`.
    pub fn write_streams(&self) -> u32 {
        self.fdp.as_ref().map_or(self.ftl.streams, |f| f.handles)
    }

    /// Whether GC moves data into a GC block of the stream that wrote it: persistently
    /// isolated handles with `[fdp]`, else `ftl.gc.per_stream`.
    pub fn gc_per_stream(&self) -> bool {
        self.fdp
            .as_ref()
            .map_or(self.ftl.gc.per_stream, |f| f.persistent() && f.handles > 1)
    }

    /// Planes of the FTL's superblock: a reclaim unit's with `[fdp]`, else
    /// `ftl.superblock_planes` (None: the whole stripe).
    pub fn superblock_planes(&self) -> Option<u64> {
        match &self.fdp {
            Some(f) => Some(f.ru_planes(&self.nand)),
            None => self.ftl.superblock_planes.map(u64::from),
        }
    }

    /// Planes in all (saturating: a validated config has fewer than 2^32 mapping units, so
    /// fewer planes).
    pub fn planes(&self) -> u64 {
        let n = &self.nand;
        [n.packages_per_channel, n.dies_per_package, n.planes_per_die]
            .iter()
            .fold(n.channels as u64, |a, &x| a.saturating_mul(x as u64))
    }

    /// With `ftl.mapping = "cached"`: (map entries per translation page, translation pages
    /// that hold the whole logical space's map); None with the full map. A translation page
    /// fills one map unit.
    pub fn translation_pages(&self) -> Option<(u64, u64)> {
        if self.ftl.mapping != MappingKind::Cached {
            return None;
        }
        let entry = self
            .ftl
            .mapping_entry
            .map_or(DEFAULT_MAPPING_ENTRY_BYTES, |b| b.0)
            .max(1);
        let per_page = (self.map_unit_bytes() / entry).max(1);
        Some((per_page, self.logical_units().div_ceil(per_page)))
    }

    /// Bytes of the cache buffer's DRAM (`[cache]`) that hold the mapping cache's translation
    /// pages: with `ftl.mapping = "cached"` in controller memory, the pages the mapping cache
    /// holds (`ftl.mapping_cache` in whole map units, at most the whole map) sit in the same
    /// DRAM as the data lines, after `cache.map_reserved`; 0 without a buffer, with the full map
    /// and with the mapping cache in host memory (NVMe HMB).
    pub fn cache_translation_bytes(&self) -> u64 {
        let Some((_, pages)) = self.translation_pages() else {
            return 0;
        };
        if !self.cache.as_ref().is_some_and(|c| c.enabled)
            || !self.ftl.mapping_cache_location.is_dram()
        {
            return 0;
        }
        let unit = self.map_unit_bytes();
        let held = self.ftl.mapping_cache.map_or(0, |b| b.0) / unit;
        held.clamp(1, pages.max(1)).saturating_mul(unit)
    }

    /// Physical capacity in mapping units (saturating; `checked_physical_units` says whether
    /// the geometry's product fits).
    pub fn physical_units(&self) -> u64 {
        self.checked_physical_units().unwrap_or(u64::MAX)
    }

    /// Physical capacity in mapping units, None when the geometry's product passes 2^64
    /// (`--set nand.dies_per_package=...` takes any u32).
    pub fn checked_physical_units(&self) -> Option<u64> {
        let per_page = self.nand.page_size.0.checked_div(self.map_unit_bytes())?;
        self.checked_physical_pages()?.checked_mul(per_page)
    }

    /// Physical capacity in NAND pages, None when the geometry's product passes 2^64.
    pub fn checked_physical_pages(&self) -> Option<u64> {
        let n = &self.nand;
        [
            n.channels,
            n.packages_per_channel,
            n.dies_per_package,
            n.planes_per_die,
            n.blocks_per_plane,
            n.pages_per_block,
        ]
        .iter()
        .try_fold(1u64, |a, &x| a.checked_mul(x as u64))
    }

    /// Logical capacity in mapping units: the physical units less over-provisioning (a raw
    /// device, `ftl.kind = "none"`, exposes them all).
    pub fn logical_units(&self) -> u64 {
        if let Some(p) = self.pcm_only() {
            return p.logical_lines();
        }
        if self.ftl.kind == FtlKind::None {
            return self.physical_units();
        }
        (self.physical_units() as f64 * (1.0 - self.ftl.over_provisioning)).floor() as u64
    }

    pub fn logical_bytes(&self) -> u64 {
        self.logical_units() * self.map_unit_bytes()
    }
}

/// For the crate's tests: `small-tlc` cut to 80 MiB raw (the combination matrix's small drive:
/// 2 channels, one die per package, 80 blocks of 16 pages per plane) with `fill`
/// preconditioning and no random overwrite.
#[cfg(test)]
pub(crate) fn small_test_drive(fill: &str) -> SsdConfig {
    let ov: Vec<String> = [
        "nand.channels=2",
        "nand.dies_per_package=1",
        "nand.blocks_per_plane=80",
        "nand.pages_per_block=16",
        "precondition.random_overwrite=0.0",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("precondition.fill=\"{fill}\"")])
    .collect();
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}
