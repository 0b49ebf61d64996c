//! Typed configuration: one schema, defined here, with units on every quantity.
//!
//! A config is TOML. Unknown keys are rejected; every error names the file, line and field, the
//! value, and what was expected. Presets are TOML files shipped in `configs/` and compiled in.

pub mod presets;
pub mod units;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
pub use units::{ByteRate, Bytes, Dur, Rate};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    pub meta: Meta,
    pub nand: NandConfig,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// A write completes once its data is in the buffer ("cached write"); dirty lines reach
    /// NAND later.
    WriteBack,
    /// A write completes when programmed; the buffer keeps a clean copy for reads.
    WriteThrough,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CachePorts {
    Single,
    /// A host port and an additional port for pre-emptive flushing (seed 001).
    Dual,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// False: no buffer, as if the section were absent (handy as a sweep axis).
    pub enabled: bool,
    /// DRAM size, including any part reserved for the mapping table.
    pub capacity: Bytes,
    /// DRAM set aside for the mapping table (not usable for data).
    pub map_reserved: Bytes,
    pub mode: CacheMode,
    pub replacement: crate::ctrl::cache::Replacement,
    /// Keep data read from NAND in the buffer (when a clean line can make room).
    pub read_allocate: bool,
    pub dram: crate::media::dram::DramKind,
    /// Data bus width of the DRAM.
    pub bus_bits: u32,
    pub ports: CachePorts,
    /// Dual port: the share of lines, from the eviction end, searched for a dirty line to flush
    /// pre-emptively (seed 001: 5 %).
    pub preemptive_window: f64,
    /// Background flushing starts above this dirty share of the lines (0: off) …
    pub flush_high_watermark: f64,
    /// … and stops at or below this one.
    pub flush_low_watermark: f64,
    /// Background flushes in flight at most.
    pub max_background_flushes: u32,
    pub energy: CacheEnergyConfig,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            capacity: Bytes(16 << 20),
            map_reserved: Bytes(0),
            mode: CacheMode::WriteBack,
            replacement: crate::ctrl::cache::Replacement::Lru,
            read_allocate: true,
            dram: crate::media::dram::DramKind::Ddr2,
            bus_bits: 32,
            ports: CachePorts::Single,
            preemptive_window: 0.05,
            flush_high_watermark: 0.0,
            flush_low_watermark: 0.0,
            max_background_flushes: 4,
            energy: CacheEnergyConfig::default(),
        }
    }
}

/// Energy of the buffer DRAM. Defaults are assumed round figures of DDR2-class parts (dynamic
/// energy per byte moved; standby leakage per MiB of cells); the additional port's area adds
/// leakage in proportion (seed 001 cites under 10 % of the chip for its peripheral logic).
#[derive(Clone, Debug, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Where the numbers come from (a seed file, a datasheet, a standard).
    #[serde(default)]
    pub source: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// Firmware time per command on the controller's HIL core (parse, split, map look-up).
    pub cmd_overhead: Dur,
    /// How far a die scans its queue for partners of a multi-plane operation.
    pub multiplane_window: u32,
    /// Firmware completes reads and writes at once, without the FTL or the media: what is left
    /// is the protocol (seed 000 §6.2 measures protocol overhead this way).
    pub skip_media: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            cmd_overhead: Dur(crate::sim::SimTime::from_ns(500)),
            multiplane_window: 16,
            skip_media: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterruptMode {
    Msix,
    Pin,
    Polling,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceConfig {
    /// Host interface protocol: `nvme`, `ide`, `sata`, `ufs`, `emmc` or `dram` (`iface`).
    pub kind: String,
    /// The link, by kind: NVMe `"pcie3x4"` (generation 1–5, ×1/×2/×4/×8/×16); IDE `"udma6"`;
    /// SATA `"sata3"`; UFS `"hs-g3x2"`; eMMC `"hs400"`; DRAM `"lpddr3-1200x32"`; or `"ideal"`
    /// (no link limit) for any.
    pub link: String,
    /// PCIe max payload size per TLP.
    #[serde(default = "mps")]
    pub max_payload: Bytes,
    /// Bytes of framing, header, sequence number and LCRC added to each TLP.
    #[serde(default = "tlp_overhead")]
    pub tlp_overhead: Bytes,
    /// One-way latency of the link (PHY, switch and controller ports).
    #[serde(default)]
    pub link_latency: Dur,
    /// NVMe: number of I/O submission/completion queue pairs; every other kind has one queue.
    pub io_queues: u32,
    /// NVMe: entries per I/O queue (a queue of N entries holds N−1 commands). Other kinds: the
    /// commands the device takes at once (IDE 1, SATA NCQ ≤ 32, UFS ≤ 32, eMMC CQ ≤ 32, DRAM
    /// interface: SQ entries); further requests wait in the host.
    pub queue_depth: u32,
    /// Largest transfer per command; the host driver splits larger requests (the DRAM
    /// interface splits at `dram.chunk_size` instead).
    pub mdts: Bytes,
    /// Commands fetched per arbitration burst.
    #[serde(default = "burst")]
    pub arbitration_burst: u32,
    pub interrupt: InterruptMode,
    /// From the interrupt message reaching the host to its handler running.
    #[serde(default)]
    pub interrupt_latency: Dur,
    /// IDE and SATA costs (`iface::ata`).
    #[serde(default)]
    pub ata: crate::iface::ata::AtaConfig,
    /// UFS costs (`iface::ufs`).
    #[serde(default)]
    pub ufs: crate::iface::ufs::UfsConfig,
    /// eMMC costs (`iface::emmc`).
    #[serde(default)]
    pub emmc: crate::iface::emmc::EmmcConfig,
    /// DRAM-interface protocol (`iface::dramif`).
    #[serde(default)]
    pub dram: crate::iface::dramif::DramIfConfig,
}

impl Default for InterfaceConfig {
    fn default() -> Self {
        InterfaceConfig {
            kind: "nvme".into(),
            link: "pcie3x4".into(),
            max_payload: mps(),
            tlp_overhead: tlp_overhead(),
            link_latency: Dur::default(),
            io_queues: 1,
            queue_depth: 1024,
            mdts: Bytes(1 << 20),
            arbitration_burst: burst(),
            interrupt: InterruptMode::Msix,
            interrupt_latency: Dur::default(),
            ata: Default::default(),
            ufs: Default::default(),
            emmc: Default::default(),
            dram: Default::default(),
        }
    }
}

fn mps() -> Bytes {
    Bytes(256)
}
fn tlp_overhead() -> Bytes {
    Bytes(24)
}
fn burst() -> u32 {
    8
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// CPU cores running the I/O stack; job instance i runs on core i mod cores.
    pub cores: u32,
    /// CPU time to submit one command (block layer, driver, SQ entry, doorbell write).
    pub submit_cost: Dur,
    /// CPU time to complete one command (interrupt handler, CQ entry, head doorbell, wake-up).
    pub complete_cost: Dur,
    /// With polling: CPU time of one poll that finds a completion.
    pub poll_cost: Dur,
}

impl Default for HostConfig {
    fn default() -> Self {
        use crate::sim::SimTime;
        HostConfig {
            cores: 4,
            submit_cost: Dur(SimTime::from_ns(1_500)),
            complete_cost: Dur(SimTime::from_ns(2_000)),
            poll_cost: Dur(SimTime::from_ns(300)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FillMode {
    None,
    Sequential,
}

/// Bring the drive to a used state before the timed run, without timing (functional only).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PreconditionConfig {
    /// Write every logical page once, in order.
    pub fill: FillMode,
    /// Then overwrite this many logical pages at random, as a fraction of the logical capacity.
    pub random_overwrite: f64,
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            fill: FillMode::None,
            random_overwrite: 0.0,
        }
    }
}

/// Where a config came from, for error messages.
fn origin_label(origin: &str) -> String {
    if origin.is_empty() {
        "config".into()
    } else {
        origin.to_string()
    }
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map(|i| offset - i).unwrap_or(offset + 1);
    (line, col)
}

/// Deserialize TOML text into `T`, with a one-line error naming origin, line, field and problem.
pub(crate) fn from_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    make_err: fn(String) -> Error,
) -> Result<T> {
    let de = toml::de::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.message().replace('\n', " ");
        // After overrides the text is a rewrite, so its line numbers mean nothing to the user.
        let at = inner
            .span()
            .filter(|_| !origin.ends_with("with overrides"))
            .map(|s| {
                let (l, c) = line_col(text, s.start);
                format!(", line {l}, column {c}")
            })
            .unwrap_or_default();
        let field = if path.is_empty() || path == "." {
            String::new()
        } else {
            format!(", field `{path}`")
        };
        make_err(format!("{}{at}{field}: {msg}", origin_label(origin)))
    })
}

/// Apply `dotted.path=value` overrides to a TOML document. The value is read as a TOML literal
/// (`3`, `0.1`, `true`, `"x"`, `["1us", "2us"]`) and, failing that, taken as a string.
pub fn apply_overrides(doc: &mut toml::Table, overrides: &[String]) -> Result<()> {
    for ov in overrides {
        let (path, raw) = ov.split_once('=').ok_or_else(|| {
            Error::Config(format!(
                "override {ov:?}: expected the form dotted.path=value, e.g. ftl.gc.policy=greedy"
            ))
        })?;
        let path = path.trim();
        let raw = raw.trim();
        if path.is_empty() {
            return Err(Error::Config(format!("override {ov:?}: the path is empty")));
        }
        let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_string()));
        let mut table = &mut *doc;
        let keys: Vec<&str> = path.split('.').collect();
        for (i, key) in keys.iter().enumerate() {
            if i + 1 == keys.len() {
                table.insert(key.to_string(), value.clone());
            } else {
                let entry = table
                    .entry(key.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                table = entry.as_table_mut().ok_or_else(|| {
                    Error::Config(format!(
                        "override {ov:?}: `{}` is a value, not a table",
                        keys[..=i].join(".")
                    ))
                })?;
            }
        }
    }
    Ok(())
}

impl SsdConfig {
    /// Parse and validate a config from TOML text. `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<SsdConfig> {
        let cfg: SsdConfig = from_toml(text, origin, Error::Config)?;
        cfg.validate(origin)?;
        Ok(cfg)
    }

    /// Resolve a preset name or a TOML file path, apply overrides, and validate.
    pub fn resolve(spec: &str, overrides: &[String]) -> Result<SsdConfig> {
        let (text, origin) = if let Some(text) = presets::preset_toml(spec) {
            (text.to_string(), format!("preset {spec}"))
        } else if std::path::Path::new(spec).exists() {
            let text = std::fs::read_to_string(spec)
                .map_err(|e| Error::Config(format!("{spec}: cannot read: {e}")))?;
            (text, spec.to_string())
        } else {
            let names = presets::preset_names().join(", ");
            return Err(Error::Config(format!(
                "{spec:?} is neither a preset nor an existing file; presets: {names}"
            )));
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
            Error::Config(format!("{origin}{at}: {}", e.message().replace('\n', " ")))
        })?;
        apply_overrides(&mut doc, overrides)?;
        let merged = toml::to_string(&doc).map_err(|e| Error::Config(e.to_string()))?;
        let origin = format!("{origin} with overrides");
        SsdConfig::from_toml_str(&merged, &origin)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("config serialises")
    }

    pub fn from_json(text: &str) -> Result<SsdConfig> {
        let mut de = serde_json::Deserializer::from_str(text);
        let cfg: SsdConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            Error::Config(format!("config JSON, field `{}`: {}", e.path(), e.inner()))
        })?;
        cfg.validate("config")?;
        Ok(cfg)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("config serialises to TOML")
    }

    /// A hash of the canonical form, recorded in every result.
    pub fn hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(self.to_json().as_bytes());
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }

    pub fn map_unit_bytes(&self) -> u64 {
        self.ftl
            .map_unit
            .map(|b| b.0)
            .unwrap_or(self.nand.page_size.0)
    }

    /// Checks of the IDE, SATA, UFS, eMMC and DRAM-interface settings.
    fn validate_other_interface(&self, kind: crate::iface::Kind, origin: &str) -> Result<()> {
        use crate::iface::{ata, emmc, ufs, Kind};
        let err = |field: &str, msg: String| -> Result<()> {
            Err(Error::Config(format!("{origin}, field `{field}`: {msg}")))
        };
        let i = &self.interface;
        let name = match kind {
            Kind::Ide => "IDE",
            Kind::Sata => "SATA",
            Kind::Ufs => "UFS",
            Kind::Emmc => "eMMC",
            _ => "the DRAM interface",
        };
        if let Err(m) = crate::iface::Proto::from_config(self) {
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
        let (limit, why): (u32, String) = match kind {
            Kind::Ide => (1, "IDE runs one command at a time".into()),
            Kind::Sata if i.ata.ncq => (ata::NCQ_TAGS, "SATA NCQ has 32 tags".into()),
            Kind::Sata => (
                1,
                "SATA without NCQ (interface.ata.ncq = false) runs one command at a time".into(),
            ),
            Kind::Ufs => (
                ufs::UTRL_SLOTS,
                "a UFS host controller has 32 transfer request slots".into(),
            ),
            Kind::Emmc if i.emmc.cq_enabled() => (
                emmc::CQ_TASKS,
                "the eMMC 5.1 command queue holds 32 tasks".into(),
            ),
            Kind::Emmc => (
                1,
                format!(
                    "eMMC {} without command queueing runs one command at a time",
                    i.emmc.version
                ),
            ),
            _ => (
                4096,
                "the DRAM-interface SQ is limited to 4096 entries here".into(),
            ),
        };
        if i.queue_depth == 0 || i.queue_depth > limit {
            return err(
                "interface.queue_depth",
                format!("got {}, expected 1 to {limit}: {why}", i.queue_depth),
            );
        }
        match (kind, i.interrupt) {
            (Kind::Sata, _) | (_, InterruptMode::Pin | InterruptMode::Polling) => {}
            _ => {
                return err(
                    "interface.interrupt",
                    format!("got \"msix\", expected \"pin\" or \"polling\": {name} has no message-signalled interrupts"),
                )
            }
        }
        if matches!(kind, Kind::Ide | Kind::Sata) && i.mdts.0 > 32 << 20 {
            return err(
                "interface.mdts",
                format!(
                    "got {} bytes, expected at most 32MiB (65536 sectors, the ATA 48-bit count)",
                    i.mdts.0
                ),
            );
        }
        if kind == Kind::Emmc {
            let e = &i.emmc;
            if !emmc::VERSIONS.contains(&e.version.as_str()) {
                return err(
                    "interface.emmc.version",
                    format!("got {:?}, expected one of {:?}", e.version, emmc::VERSIONS),
                );
            }
            if e.command_queue == Some(true) && e.version != "5.1" {
                return err(
                    "interface.emmc.command_queue",
                    format!("got true with eMMC {}, expected false: command queueing came with eMMC 5.1", e.version),
                );
            }
        }
        if kind == Kind::Ufs {
            let u = &i.ufs;
            if u.frame_payload.0 < 16 || u.max_data_segment.0 < 512 {
                return err(
                    "interface.ufs",
                    format!("got frame_payload {} and max_data_segment {} bytes, expected at least 16 and 512", u.frame_payload.0, u.max_data_segment.0),
                );
            }
        }
        if kind == Kind::Dram {
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

    fn validate(&self, origin: &str) -> Result<()> {
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
                    "got {} entries, expected {bits} (one per page type of {:?})",
                    n.timing.read.len(),
                    n.cell
                ),
            );
        }
        if n.timing.program.len() != bits {
            return err(
                "nand.timing.program",
                format!(
                    "got {} entries, expected {bits} (one per page type of {:?})",
                    n.timing.program.len(),
                    n.cell
                ),
            );
        }
        if !n.bus.width_bits.is_multiple_of(8) {
            return err(
                "nand.bus.width_bits",
                format!("got {}, expected a multiple of 8", n.bus.width_bits),
            );
        }
        let unit = self.map_unit_bytes();
        if unit == 0 || !unit.is_multiple_of(512) || !page.is_multiple_of(unit) {
            return err(
                "ftl.map_unit",
                format!("got {unit} bytes, expected a multiple of 512 that divides the page size ({page})"),
            );
        }
        let op = self.ftl.over_provisioning;
        if !(0.0..0.9).contains(&op) {
            return err(
                "ftl.over_provisioning",
                format!("got {op}, expected a fraction from 0 up to 0.9"),
            );
        }
        let mut letters: Vec<char> = self.ftl.allocation.chars().collect();
        letters.sort_unstable();
        if letters != ['C', 'D', 'P', 'W'] {
            return err(
                "ftl.allocation",
                format!(
                    "got {:?}, expected a permutation of the letters C, W, D, P (e.g. \"CWDP\")",
                    self.ftl.allocation
                ),
            );
        }
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
        let threshold_blocks = (gc.free_threshold * blocks).ceil().max(1.0) as u64;
        // Two open blocks (host and GC) plus the GC reserve must fit in the hidden space.
        let spare = (op * blocks).floor() as u64;
        let need = threshold_blocks + 2;
        if spare < need {
            return err(
                "ftl.over_provisioning",
                format!(
                    "impossible geometry: over-provisioning {op} leaves {spare} spare blocks per plane, \
                     but GC needs at least {need} ({threshold_blocks} for the free-block threshold and 2 open blocks); \
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
        let units = self.physical_units();
        if units >= u32::MAX as u64 {
            return err(
                "nand",
                format!("{units} mapping units are more than this build addresses (2^32 − 1); use a larger map_unit"),
            );
        }
        let kind = crate::iface::Kind::parse(&self.interface.kind)
            .map_err(|m| Error::Config(format!("{origin}, field `interface.kind`: {m}")))?;
        let i = &self.interface;
        if kind == crate::iface::Kind::Nvme {
            crate::iface::pcie::LinkSpec::parse(&i.link)
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
        if self.host.cores == 0 {
            return err("host.cores", "got 0, expected at least 1".into());
        }
        if self.controller.multiplane_window == 0 {
            return err(
                "controller.multiplane_window",
                "got 0, expected at least 1".into(),
            );
        }
        let r = self.precondition.random_overwrite;
        if !(0.0..=100.0).contains(&r) {
            return err(
                "precondition.random_overwrite",
                format!("got {r}, expected a fraction from 0 to 100"),
            );
        }
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

    pub fn planes(&self) -> u64 {
        let n = &self.nand;
        n.channels as u64
            * n.packages_per_channel as u64
            * n.dies_per_package as u64
            * n.planes_per_die as u64
    }

    pub fn physical_units(&self) -> u64 {
        let per_page = self.nand.page_size.0 / self.map_unit_bytes();
        self.planes()
            * self.nand.blocks_per_plane as u64
            * self.nand.pages_per_block as u64
            * per_page
    }

    /// Logical capacity in mapping units: the physical units less over-provisioning.
    pub fn logical_units(&self) -> u64 {
        (self.physical_units() as f64 * (1.0 - self.ftl.over_provisioning)).floor() as u64
    }

    pub fn logical_bytes(&self) -> u64 {
        self.logical_units() * self.map_unit_bytes()
    }
}
