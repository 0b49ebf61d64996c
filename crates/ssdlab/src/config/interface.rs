//! `[interface]`: the host interface and its per-protocol sections.

use super::units::{ByteRate, Bytes, Dur};
use crate::error::{got, Problem};
use crate::sim::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The interface protocols (`interface.kind`), parsed at load; they serialise back to their
/// names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum InterfaceKind {
    Nvme,
    Ide,
    Sata,
    Ufs,
    Emmc,
    Dram,
}

impl InterfaceKind {
    pub const NAMES: &'static str = "\"nvme\", \"ide\", \"sata\", \"ufs\", \"emmc\" or \"dram\"";

    pub fn parse(s: &str) -> Result<InterfaceKind, Problem> {
        Ok(match s {
            "nvme" => InterfaceKind::Nvme,
            "ide" => InterfaceKind::Ide,
            "sata" => InterfaceKind::Sata,
            "ufs" => InterfaceKind::Ufs,
            "emmc" => InterfaceKind::Emmc,
            "dram" => InterfaceKind::Dram,
            _ => return Err(got(format!("{s:?}"), InterfaceKind::NAMES)),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            InterfaceKind::Nvme => "nvme",
            InterfaceKind::Ide => "ide",
            InterfaceKind::Sata => "sata",
            InterfaceKind::Ufs => "ufs",
            InterfaceKind::Emmc => "emmc",
            InterfaceKind::Dram => "dram",
        }
    }
}

/// The interface fields that belong to a protocol rather than to a platform: when an override
/// switches `interface.kind`, each of these the user did not set too takes the new kind's value
/// ([`InterfaceConfig::take_kind_defaults`]). The others (`mdts`, `link_latency`,
/// `interrupt_latency`, the NVMe TLP sizes) describe the host and stay as the preset has them.
pub const KIND_FIELDS: [&str; 4] = ["link", "io_queues", "queue_depth", "interrupt"];

impl InterfaceKind {
    /// The link a kind takes by default. NVMe: PCIe 3.0 ×4, as the small-tlc preset; IDE: Ultra
    /// DMA mode 6, the fastest of ATA/ATAPI-7; SATA: 6 Gb/s (SATA 3.x); UFS: HS-G3 rate B ×2, UFS
    /// 2.0 as the seed000-ufs20-galaxy-s6 preset; eMMC: HS400, the fastest bus mode of
    /// JESD84-B51; the DRAM interface: seed 000's LPDDR3-1200 ×32 (seed000-lpddr3-dramif).
    pub fn default_link(self) -> &'static str {
        match self {
            InterfaceKind::Nvme => "pcie3x4",
            InterfaceKind::Ide => "udma6",
            InterfaceKind::Sata => "sata3",
            InterfaceKind::Ufs => "hs-g3x2",
            InterfaceKind::Emmc => "hs400",
            InterfaceKind::Dram => "lpddr3-1200x32",
        }
    }

    /// I/O queues by default: NVMe 8, as the small-tlc preset; every other kind has one queue.
    pub fn default_io_queues(self) -> u32 {
        match self {
            InterfaceKind::Nvme => 8,
            _ => 1,
        }
    }

    /// The interrupt by default: NVMe MSI-X; SATA MSI (AHCI adapters signal with MSI, as the
    /// interface report's SATA sweep); IDE's INTRQ, the UFS host controller's and the eMMC host
    /// controller's interrupt lines and the DRAM interface's GPIO (seed 000 §3) are pins.
    pub fn default_interrupt(self) -> InterruptMode {
        match self {
            InterfaceKind::Nvme | InterfaceKind::Sata => InterruptMode::Msix,
            _ => InterruptMode::Pin,
        }
    }
}

impl<'de> Deserialize<'de> for InterfaceKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::units::deserialize_parsed(d, InterfaceKind::parse)
    }
}

impl From<InterfaceKind> for String {
    fn from(k: InterfaceKind) -> String {
        k.name().to_string()
    }
}

impl std::fmt::Display for InterfaceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InterruptMode {
    Msix,
    Pin,
    Polling,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterfaceConfig {
    /// Host interface protocol: `nvme`, `ide`, `sata`, `ufs`, `emmc` or `dram` (`iface`).
    pub kind: InterfaceKind,
    /// The link, by kind: NVMe `"pcie3x4"` (generation 1–5, ×1/×2/×4/×8/×16); IDE `"udma6"`;
    /// SATA `"sata3"`; UFS `"hs-g3x2"`; eMMC `"hs400"`; DRAM `"lpddr3-1200x32"`; or `"ideal"`
    /// (no link limit) for any.
    pub link: Link,
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
    /// NVMe: how the controller picks the submission queue it fetches from next
    /// (`iface::arbiter`). Written out only when not `round-robin`, so that the hash of every
    /// config without it stays as it was.
    #[serde(default, skip_serializing_if = "Arbitration::is_round_robin")]
    pub arbitration: Arbitration,
    /// NVMe, with `weighted-round-robin`: the commands each weighted class may start per
    /// arbitration round. Written out only when not the defaults.
    #[serde(default, skip_serializing_if = "ArbitrationWeights::is_default")]
    pub arbitration_weights: ArbitrationWeights,
    /// NVMe: the commands the controller holds at once, fetched and not yet completed, over
    /// every SQ; the arbiter fetches only into free slots. Absent: no bound, every SQ is
    /// fetched as its doorbell rings (and there is nothing to arbitrate between SQs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_slots: Option<u32>,
    pub interrupt: InterruptMode,
    /// From the interrupt message reaching the host to its handler running.
    #[serde(default)]
    pub interrupt_latency: Dur,
    /// IDE and SATA costs (`iface::ata`).
    #[serde(default)]
    pub ata: AtaConfig,
    /// UFS costs (`iface::ufs`).
    #[serde(default)]
    pub ufs: UfsConfig,
    /// eMMC costs (`iface::emmc`).
    #[serde(default)]
    pub emmc: EmmcConfig,
    /// DRAM-interface protocol (`iface::dramif`).
    #[serde(default)]
    pub dram: DramIfConfig,
}

impl Default for InterfaceConfig {
    fn default() -> Self {
        InterfaceConfig {
            kind: InterfaceKind::Nvme,
            link: Link::parse("pcie3x4").expect("a valid default"),
            max_payload: mps(),
            tlp_overhead: tlp_overhead(),
            link_latency: Dur::default(),
            io_queues: 1,
            queue_depth: 1024,
            mdts: Bytes(1 << 20),
            arbitration_burst: burst(),
            arbitration: Arbitration::RoundRobin,
            arbitration_weights: ArbitrationWeights::default(),
            controller_slots: None,
            interrupt: InterruptMode::Msix,
            interrupt_latency: Dur::default(),
            ata: Default::default(),
            ufs: Default::default(),
            emmc: Default::default(),
            dram: Default::default(),
        }
    }
}

impl InterfaceConfig {
    /// The most commands the device holds at once for this kind and its settings, and why:
    /// validation's limit (NVMe: the spec's 65,536 entries per queue).
    pub fn queue_depth_limit(&self) -> (u32, String) {
        match self.kind {
            InterfaceKind::Nvme => (65536, "NVMe limit".into()),
            InterfaceKind::Ide => (1, "IDE runs one command at a time".into()),
            InterfaceKind::Sata if self.ata.ncq => (NCQ_TAGS, "SATA NCQ has 32 tags".into()),
            InterfaceKind::Sata => (
                1,
                "SATA without NCQ (interface.ata.ncq = false) runs one command at a time".into(),
            ),
            InterfaceKind::Ufs => (
                UTRL_SLOTS,
                "a UFS host controller has 32 transfer request slots".into(),
            ),
            InterfaceKind::Emmc if self.emmc.cq_enabled() => {
                (CQ_TASKS, "the eMMC 5.1 command queue holds 32 tasks".into())
            }
            InterfaceKind::Emmc => (
                1,
                format!(
                    "eMMC {} without command queueing runs one command at a time",
                    self.emmc.version
                ),
            ),
            InterfaceKind::Dram => (
                4096,
                "the DRAM-interface SQ is limited to 4096 entries here".into(),
            ),
        }
    }

    /// The queue depth a kind takes by default: the whole of what its protocol holds (IDE 1,
    /// SATA 32 NCQ tags or 1 without NCQ, UFS 32 slots, eMMC 32 tasks with command queueing or
    /// 1), NVMe 1024 entries as the small-tlc preset, the DRAM interface 32 SQ entries as the
    /// seed000-lpddr3-dramif preset (assumed there).
    pub fn default_queue_depth(&self) -> u32 {
        match self.kind {
            InterfaceKind::Nvme => 1024,
            InterfaceKind::Dram => 32,
            _ => self.queue_depth_limit().0,
        }
    }

    /// After `interface.kind` was switched to another protocol: every field of [`KIND_FIELDS`]
    /// for which `is_set` is false takes the new kind's default, so that one option moves a
    /// preset to another interface. The queue depth is taken last, since it depends on the
    /// protocol settings (`ata.ncq`, `emmc.version`, `emmc.command_queue`) as they now are.
    pub fn take_kind_defaults(&mut self, is_set: &dyn Fn(&str) -> bool) {
        let kind = self.kind;
        if !is_set("link") {
            self.link = Link::parse(kind.default_link()).expect("every kind's default link parses");
        }
        if !is_set("io_queues") {
            self.io_queues = kind.default_io_queues();
        }
        if !is_set("interrupt") {
            self.interrupt = kind.default_interrupt();
        }
        if !is_set("queue_depth") {
            self.queue_depth = self.default_queue_depth();
        }
    }
}

/// How an NVMe controller picks the submission queue it fetches from next (NVMe Base
/// Specification 2.0, "Command Arbitration"; CC.AMS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Arbitration {
    /// Every SQ in turn, each for up to `arbitration_burst` commands (CC.AMS 000b, the
    /// mechanism every controller supports).
    #[default]
    RoundRobin,
    /// Weighted round robin with urgent priority class (CC.AMS 001b): urgent SQs first, then
    /// the high, medium and low classes by their weights; round robin within a class.
    WeightedRoundRobin,
}

impl Arbitration {
    pub fn is_round_robin(&self) -> bool {
        *self == Arbitration::RoundRobin
    }
}

/// The priority class of an NVMe submission queue (the QPRIO of Create I/O Submission Queue),
/// as a flow's `priority` names it. Only weighted round robin tells them apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriorityClass {
    Urgent,
    High,
    /// What a queue of a run that names no priority has.
    #[default]
    Medium,
    Low,
}

impl PriorityClass {
    pub const ALL: [PriorityClass; 4] = [
        PriorityClass::Urgent,
        PriorityClass::High,
        PriorityClass::Medium,
        PriorityClass::Low,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PriorityClass::Urgent => "urgent",
            PriorityClass::High => "high",
            PriorityClass::Medium => "medium",
            PriorityClass::Low => "low",
        }
    }
}

/// Weighted round robin's weights: the commands the high, medium and low classes may each start
/// per arbitration round, 1 to 256 (the Arbitration feature's HPW, MPW and LPW are 8-bit,
/// 0's-based). Defaults 4, 2, 1: MQSim's scheduling weights of its HIGH, MEDIUM and LOW
/// classes (Host_Interface_NVMe_Priorities.h); the NVMe specification leaves them to the
/// controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ArbitrationWeights {
    pub high: u32,
    pub medium: u32,
    pub low: u32,
}

impl Default for ArbitrationWeights {
    fn default() -> Self {
        ArbitrationWeights {
            high: 4,
            medium: 2,
            low: 1,
        }
    }
}

impl ArbitrationWeights {
    /// The largest weight: HPW, MPW and LPW are 8-bit 0's-based fields.
    pub const MAX: u32 = 256;

    pub fn is_default(&self) -> bool {
        *self == ArbitrationWeights::default()
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

/// IDE and SATA protocol costs (`[interface.ata]`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AtaConfig {
    /// One PIO register access on the ATA bus (ATA/ATAPI-7 PIO mode 4 cycle time t0 = 120 ns).
    pub register_cycle: Dur,
    /// Task-file register writes per command: READ/WRITE DMA EXT (48-bit LBA) writes features,
    /// sector count and three LBA registers twice each, then device and command (12).
    pub taskfile_writes: u32,
    /// One host access to the adapter's registers (bus-master IDE or AHCI port registers) over
    /// the host bus (assumed 500 ns, an uncached I/O read or write).
    pub mmio: Dur,
    /// IDE: bytes per Ultra DMA burst before the device pauses (assumed 8 KiB, a device buffer).
    pub udma_burst: Bytes,
    /// IDE: burst initiation and termination with its CRC word (assumed 200 ns).
    pub udma_burst_overhead: Dur,
    /// SATA: native command queueing (off: one command at a time, legacy DMA).
    pub ncq: bool,
    /// SATA: wire bytes around each FIS: SOF, CRC and EOF dwords plus the X_RDY/R_RDY/R_IP/
    /// WTRM/R_OK handshake primitives (assumed 9 dwords = 36 bytes).
    pub fis_overhead: Bytes,
    /// SATA: the AHCI adapter's fetch of the command header and table from host memory
    /// (assumed 1 µs).
    pub hba_fetch: Dur,
    /// Bus-master DMA: serve each command as its physical-region (PRD) entries, one after
    /// another, an entry ending wherever the host buffer crosses a multiple of this many bytes
    /// of physical memory. Bus-master IDE's PRD entries may not cross a 64 KiB boundary
    /// (SFF-8038i; Linux's `ata_bmdma_fill_sg` cuts its entries there). Absent: a command is
    /// served whole. docs/interfaces.md, "PRD entries".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prd_boundary: Option<Bytes>,
    /// Where each request's buffer lies against `prd_boundary`: `random-page` (physically
    /// contiguous, starting at a 4 KiB page drawn uniformly within the boundary per request:
    /// the guest's allocator leaves the offset unknown), `run-page` (one such page drawn per
    /// run, shared by every request: fio's buffers, one region cut `bs` apart), `aligned`
    /// (starting on a boundary: the fewest entries), or a size (every buffer that far past a
    /// boundary).
    #[serde(skip_serializing_if = "PrdBuffer::is_random_page")]
    pub prd_buffer: PrdBuffer,
}

/// Where a request's buffer lies in physical memory, as far as `ata.prd_boundary` cuts it:
/// `"random-page"`, `"run-page"`, `"aligned"`, or a size (`"32KiB"`: every buffer that far past
/// a boundary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum PrdBuffer {
    /// Contiguous, from a 4 KiB page drawn uniformly within the boundary, per request.
    #[default]
    RandomPage,
    /// Contiguous, from one 4 KiB page drawn uniformly within the boundary for the whole run
    /// (from its seed): every request's buffer starts there. fio allocates one page-aligned
    /// region for its I/O units and places their buffers `bs` apart (`init_io_u_buffers` in
    /// backend.c), so with `bs` a multiple of the boundary every buffer of a job has the same
    /// offset within it; where the region starts is the draw.
    RunPage,
    /// Contiguous, from a multiple of the boundary.
    Aligned,
    /// Contiguous, from this many bytes past a boundary (a multiple of 4 KiB, below it).
    Offset(u64),
}

impl PrdBuffer {
    fn is_random_page(&self) -> bool {
        *self == PrdBuffer::RandomPage
    }

    /// Bytes past a boundary every buffer starts at, where the config fixes them; None: a
    /// drawn page (per request, or per run: the host draws it, `host::PrdSplit::for_buffer`).
    pub fn fixed_offset(self) -> Option<u64> {
        match self {
            PrdBuffer::RandomPage | PrdBuffer::RunPage => None,
            PrdBuffer::Aligned => Some(0),
            PrdBuffer::Offset(o) => Some(o),
        }
    }
}

impl PrdBuffer {
    pub fn parse(s: &str) -> Result<PrdBuffer, Problem> {
        match s.trim() {
            "random-page" => Ok(PrdBuffer::RandomPage),
            "run-page" => Ok(PrdBuffer::RunPage),
            "aligned" => Ok(PrdBuffer::Aligned),
            t => super::units::parse_bytes(t)
                .map(PrdBuffer::Offset)
                .map_err(|_| {
                    got(
                        format!("{s:?}"),
                        "\"random-page\", \"run-page\", \"aligned\" or a size such as \"32KiB\"",
                    )
                }),
        }
    }
}

impl<'de> Deserialize<'de> for PrdBuffer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::units::deserialize_parsed(d, PrdBuffer::parse)
    }
}

impl From<PrdBuffer> for String {
    fn from(b: PrdBuffer) -> String {
        match b {
            PrdBuffer::RandomPage => "random-page".into(),
            PrdBuffer::RunPage => "run-page".into(),
            PrdBuffer::Aligned => "aligned".into(),
            PrdBuffer::Offset(n) => format!("{n}B"),
        }
    }
}

impl Default for AtaConfig {
    fn default() -> Self {
        AtaConfig {
            register_cycle: Dur(SimTime::from_ns(120)),
            taskfile_writes: 12,
            mmio: Dur(SimTime::from_ns(500)),
            udma_burst: Bytes(8192),
            udma_burst_overhead: Dur(SimTime::from_ns(200)),
            ncq: true,
            fis_overhead: Bytes(36),
            hba_fetch: Dur(SimTime::from_us(1)),
            prd_boundary: None,
            prd_buffer: PrdBuffer::RandomPage,
        }
    }
}

/// Most commands a SATA device queues with NCQ (tags 0–31, SATA 3.x 13.6).
pub const NCQ_TAGS: u32 = 32;

/// Transfer request slots of a UFS host controller (UFSHCI 2.0: UTRLDBR is 32 bits).
pub const UTRL_SLOTS: u32 = 32;

/// UFS protocol costs (`[interface.ufs]`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UfsConfig {
    /// UniPro data-link frame payload at most (288 bytes).
    pub frame_payload: Bytes,
    /// Bytes around each frame: SOF and EOF symbol pairs, CRC-16, short L3/L4 headers (8).
    pub frame_overhead: Bytes,
    /// UPIU header (JESD220B: 32 bytes).
    pub upiu_header: Bytes,
    /// Data carried by one DATA IN/OUT UPIU at most (assumed 8 KiB).
    pub max_data_segment: Bytes,
    /// Write data granted by one READY TO TRANSFER UPIU (assumed 64 KiB of device buffer).
    pub rtt_grant: Bytes,
    /// RESPONSE UPIU: header plus sense data (32 + 20 bytes).
    pub response_bytes: Bytes,
    /// One host register access to the UFS host controller (assumed 100 ns, an SoC-local MMIO).
    pub mmio: Dur,
    /// The host controller's fetch of the request descriptor and command UPIU from memory
    /// (assumed 500 ns).
    pub utrd_fetch: Dur,
}

impl Default for UfsConfig {
    fn default() -> Self {
        UfsConfig {
            frame_payload: Bytes(288),
            frame_overhead: Bytes(8),
            upiu_header: Bytes(32),
            max_data_segment: Bytes(8192),
            rtt_grant: Bytes(64 << 10),
            response_bytes: Bytes(52),
            mmio: Dur(SimTime::from_ns(100)),
            utrd_fetch: Dur(SimTime::from_ns(500)),
        }
    }
}

/// Tasks an eMMC 5.1 command queue holds (JESD84-B51: task IDs 0–31).
pub const CQ_TASKS: u32 = 32;

/// eMMC protocol costs (`[interface.emmc]`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EmmcConfig {
    /// eMMC version: "4.41", "4.5", "5.0" or "5.1". Command queueing needs 5.1.
    pub version: String,
    /// Use command queueing (eMMC 5.1 only). Unset: on for 5.1, off for earlier versions.
    pub command_queue: Option<bool>,
    /// Clock cycles from a command's end to its response (N_CR: 2–64, assumed 8).
    pub ncr_cycles: u32,
    /// Clock cycles around each 512-byte read block: start bit, CRC-16, end bit, gap (20).
    pub read_block_cycles: u32,
    /// … and around each written block: plus the CRC status token and minimal busy (30).
    pub write_block_cycles: u32,
    /// With command queueing: the host polls the queue status register this often (assumed
    /// 4 µs); a ready task waits half of it on average.
    pub qsr_poll_interval: Dur,
    /// One host register access to the eMMC host controller (assumed 100 ns).
    pub mmio: Dur,
}

impl Default for EmmcConfig {
    fn default() -> Self {
        EmmcConfig {
            version: "5.1".into(),
            command_queue: None,
            ncr_cycles: 8,
            read_block_cycles: 20,
            write_block_cycles: 30,
            qsr_poll_interval: Dur(SimTime::from_us(4)),
            mmio: Dur(SimTime::from_ns(100)),
        }
    }
}

pub const VERSIONS: [&str; 4] = ["4.41", "4.5", "5.0", "5.1"];

impl EmmcConfig {
    /// Whether command queueing is in use: as set, or by default when the version has it.
    pub fn cq_enabled(&self) -> bool {
        self.command_queue.unwrap_or(self.version == "5.1")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DataMove {
    /// The host's memory-to-memory DMA engine (seed 000 §5.4).
    Dma,
    /// CPU load/store copies (platforms without such a DMA engine).
    Cpu,
}

/// DRAM-interface protocol parameters (`[interface.dram]`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DramIfConfig {
    /// Data buffer size; a power of two (seed 000 Fig. 8 varies it; 1 MiB assumed).
    pub buffer_size: Bytes,
    /// Requests are split into commands of at most this size (seed 000 §5.4; 256 KiB assumed).
    pub chunk_size: Bytes,
    /// Allocation unit of the data buffer (seed 000 §3: "allocated and released in sectors").
    pub sector: Bytes,
    pub data_move: DataMove,
    /// Host DMA throughput (seed 000 §6.2: "around 450 MB/s").
    pub dma_rate: ByteRate,
    /// Programming one DMA transfer and taking its end-of-transfer event (assumed 2 µs).
    pub dma_setup: Dur,
    /// CPU copy throughput when `data_move = "cpu"`, into the shared buffer (a write's data),
    /// and out of it too unless `cpu_read_copy_rate` is given (assumed 100 MB/s).
    pub cpu_copy_rate: ByteRate,
    /// CPU copy throughput out of the shared buffer (a read's data) when `data_move = "cpu"`.
    /// The buffer is device memory, mapped uncached, and loads from it are far slower than
    /// stores into it (docs/interfaces.md). Absent: `cpu_copy_rate`; written out only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_read_copy_rate: Option<ByteRate>,
    /// Cache invalidation takes `invalidate_time` per `invalidate_span` (seed 000 §5.4: 290 µs
    /// per 512 KB), once before and once after each copy.
    pub invalidate_time: Dur,
    pub invalidate_span: Bytes,
    /// Copies and their invalidations are pipelined in pieces of this size (0: the whole chunk
    /// at once). 64 KiB assumed.
    pub invalidate_piece: Bytes,
    /// One uncached access to an SQ or CQ entry or a doorbell register (assumed 200 ns).
    pub entry_access: Dur,
    /// SRAM banks of the shared buffer (seed 000 §4.1: eight, single-ported).
    pub banks: u32,
    /// Consecutive buffer bytes on one bank before the next (assumed 4 KiB).
    pub bank_interleave: Bytes,
    /// Controller-side buffer throughput: 64-bit AXI at the 266 MHz core clock (assumed).
    pub controller_rate: ByteRate,
    /// Complete writes once their data is in the controller's write buffer (needs a write-back
    /// `[cache]`). The seed's prototype lacks it (§6.5).
    pub cached_write: bool,
}

impl Default for DramIfConfig {
    fn default() -> Self {
        DramIfConfig {
            buffer_size: Bytes(1 << 20),
            chunk_size: Bytes(256 << 10),
            sector: Bytes(512),
            data_move: DataMove::Dma,
            dma_rate: ByteRate(450e6),
            dma_setup: Dur(SimTime::from_us(2)),
            cpu_copy_rate: ByteRate(100e6),
            cpu_read_copy_rate: None,
            invalidate_time: Dur(SimTime::from_us(290)),
            invalidate_span: Bytes(512 << 10),
            invalidate_piece: Bytes(64 << 10),
            entry_access: Dur(SimTime::from_ns(200)),
            banks: 8,
            bank_interleave: Bytes(4096),
            controller_rate: ByteRate(266e6 * 8.0),
            cached_write: false,
        }
    }
}

/// `interface.link`: a link's name, parsed at load into a [`LinkType`]. Which names fit which
/// interface kind is checked by validation ([`Link::check_kind`]). It serialises back to the
/// name as written, so a config's hash does not depend on how a name was spelled.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(into = "String")]
pub struct Link {
    text: String,
    kind: LinkType,
}

/// What a link name means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkType {
    /// No bandwidth limit (any kind).
    Ideal,
    /// PCIe generation 1–5 with 1, 2, 4, 8 or 16 lanes (NVMe).
    Pcie { gen: u8, lanes: u8 },
    /// Ultra DMA mode 0–6 (IDE).
    Udma(u8),
    /// SATA generation 1–3: 1.5, 3 or 6 Gb/s.
    Sata(u8),
    /// UFS M-PHY high-speed gear 1–4, rate series A or B, 1–2 lanes.
    Ufs { gear: u8, rate_b: bool, lanes: u8 },
    /// An eMMC bus mode.
    Emmc(EmmcBus),
    /// An LPDDR channel of `mts` mega-transfers per second and `bits` data lines (the DRAM
    /// interface).
    Lpddr { mts: f64, bits: u32 },
}

/// The PCIe link `interface.link` names (an NVMe device's), or the ideal link: what the link
/// cost model (`iface::pcie`) and the PCI configuration space of the register-level driver read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkSpec {
    Ideal,
    Pcie { gen: u8, lanes: u8 },
}

impl LinkSpec {
    /// The PCIe link a config's `interface.link` names.
    pub fn from_link(l: &Link) -> Result<LinkSpec, Problem> {
        match l.kind() {
            LinkType::Ideal => Ok(LinkSpec::Ideal),
            LinkType::Pcie { gen, lanes } => Ok(LinkSpec::Pcie { gen, lanes }),
            _ => Err(got(format!("{:?}", l.text()), PCIE_NAMES)),
        }
    }

    /// Parse a link name that must be PCIe's.
    pub fn parse(s: &str) -> Result<LinkSpec, Problem> {
        let l = Link::parse(s)?;
        l.check_kind(InterfaceKind::Nvme)?;
        LinkSpec::from_link(&l)
    }
}

/// eMMC bus speed modes (JESD84-B51).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmmcBus {
    Hs52,
    Ddr52,
    Hs200,
    Hs400,
}

const PCIE_NAMES: &str =
    "\"ideal\" or \"pcie<gen>x<lanes>\" with gen 1–5 and lanes 1, 2, 4, 8 or 16 (e.g. \"pcie3x4\")";
const IDE_NAMES: &str =
    "\"ideal\" or an Ultra DMA mode \"udma0\" … \"udma6\" (e.g. \"udma6\", 133 MB/s)";
const SATA_NAMES: &str =
    "\"ideal\", \"sata1\" (1.5 Gb/s), \"sata2\" (3 Gb/s) or \"sata3\" (6 Gb/s)";
const UFS_NAMES: &str =
    "\"ideal\" or \"hs-g<gear 1–4>[a|b]x<lanes 1–2>\" (e.g. \"hs-g3x2\": HS-G3 rate B, two lanes)";
const EMMC_NAMES: &str = "\"ideal\", \"hs52\", \"ddr52\", \"hs200\" or \"hs400\"";
const DRAM_NAMES: &str =
    "\"ideal\" or \"lpddr<generation>-<MT/s>x<bus bits>\" (e.g. \"lpddr3-1200x32\")";

/// A number in a link name as it is written there: decimal digits without sign or leading zero
/// (Rust's parse took "pcie+3x+4" and "pcie03x04" for pcie3x4, issue 15 defect 11).
fn whole<T: std::str::FromStr>(t: &str) -> Result<T, ()> {
    let plain =
        !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) && (t == "0" || !t.starts_with('0'));
    if !plain {
        return Err(());
    }
    t.parse().map_err(|_| ())
}

impl Link {
    /// Parse a link name of any kind.
    pub fn parse(s: &str) -> Result<Link, Problem> {
        let bad = |names: &str| got(format!("{s:?}"), names);
        let kind = if s == "ideal" {
            LinkType::Ideal
        } else if let Some(rest) = s.strip_prefix("pcie") {
            let (g, l) = rest.split_once('x').ok_or_else(|| bad(PCIE_NAMES))?;
            let gen: u8 = whole(g).map_err(|_| bad(PCIE_NAMES))?;
            let lanes: u8 = whole(l).map_err(|_| bad(PCIE_NAMES))?;
            if !(1..=5).contains(&gen) || ![1, 2, 4, 8, 16].contains(&lanes) {
                return Err(bad(PCIE_NAMES));
            }
            LinkType::Pcie { gen, lanes }
        } else if let Some(m) = s.strip_prefix("udma") {
            match whole::<u8>(m) {
                Ok(m) if m <= 6 => LinkType::Udma(m),
                _ => return Err(bad(IDE_NAMES)),
            }
        } else if let Some(g) = s.strip_prefix("sata") {
            match g {
                "1" => LinkType::Sata(1),
                "2" => LinkType::Sata(2),
                "3" => LinkType::Sata(3),
                _ => return Err(bad(SATA_NAMES)),
            }
        } else if let Some(rest) = s.strip_prefix("hs-g") {
            let (gear_rate, lanes) = rest.split_once('x').ok_or_else(|| bad(UFS_NAMES))?;
            let lanes: u8 = whole(lanes).map_err(|_| bad(UFS_NAMES))?;
            let (gear, series) = match gear_rate.len() {
                1 => (gear_rate, "b"),
                2 => gear_rate.split_at(1),
                _ => return Err(bad(UFS_NAMES)),
            };
            let gear: u8 = whole(gear).map_err(|_| bad(UFS_NAMES))?;
            if !(1..=4).contains(&gear) || !(1..=2).contains(&lanes) {
                return Err(bad(UFS_NAMES));
            }
            let rate_b = match series {
                "a" => false,
                "b" => true,
                _ => return Err(bad(UFS_NAMES)),
            };
            LinkType::Ufs {
                gear,
                rate_b,
                lanes,
            }
        } else if let Some(rest) = s.strip_prefix("lpddr") {
            let (_gen, rest) = rest.split_once('-').ok_or_else(|| bad(DRAM_NAMES))?;
            let (mts, bits) = rest.split_once('x').ok_or_else(|| bad(DRAM_NAMES))?;
            let mts: f64 = mts.parse().map_err(|_| bad(DRAM_NAMES))?;
            let bits: u32 = whole(bits).map_err(|_| bad(DRAM_NAMES))?;
            if mts <= 0.0 || !mts.is_finite() || ![16, 32, 64].contains(&bits) {
                return Err(bad(DRAM_NAMES));
            }
            LinkType::Lpddr { mts, bits }
        } else {
            LinkType::Emmc(match s {
                "hs52" => EmmcBus::Hs52,
                "ddr52" => EmmcBus::Ddr52,
                "hs200" => EmmcBus::Hs200,
                "hs400" => EmmcBus::Hs400,
                _ => {
                    return Err(got(
                        format!("{s:?}"),
                        "a link name: \"ideal\"; NVMe \"pcie<gen>x<lanes>\"; IDE \"udma0\" … \"udma6\"; \
                         SATA \"sata1\" … \"sata3\"; UFS \"hs-g<gear>[a|b]x<lanes>\"; eMMC \"hs52\", \
                         \"ddr52\", \"hs200\" or \"hs400\"; the DRAM interface \"lpddr<gen>-<MT/s>x<bits>\"",
                    ))
                }
            })
        };
        Ok(Link {
            text: s.to_string(),
            kind,
        })
    }

    /// The name as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn kind(&self) -> LinkType {
        self.kind
    }

    /// Whether this link belongs to an interface of kind `k`: the error says which names `k`
    /// takes.
    pub fn check_kind(&self, k: InterfaceKind) -> Result<(), Problem> {
        let (fits, names) = match (k, self.kind) {
            (_, LinkType::Ideal) => (true, ""),
            (InterfaceKind::Nvme, t) => (matches!(t, LinkType::Pcie { .. }), PCIE_NAMES),
            (InterfaceKind::Ide, t) => (matches!(t, LinkType::Udma(_)), IDE_NAMES),
            (InterfaceKind::Sata, t) => (matches!(t, LinkType::Sata(_)), SATA_NAMES),
            (InterfaceKind::Ufs, t) => (matches!(t, LinkType::Ufs { .. }), UFS_NAMES),
            (InterfaceKind::Emmc, t) => (matches!(t, LinkType::Emmc(_)), EMMC_NAMES),
            (InterfaceKind::Dram, t) => (matches!(t, LinkType::Lpddr { .. }), DRAM_NAMES),
        };
        if fits {
            Ok(())
        } else {
            Err(got(format!("{:?}", self.text), names))
        }
    }
}

impl<'de> Deserialize<'de> for Link {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::units::deserialize_parsed(d, Link::parse)
    }
}

impl From<Link> for String {
    fn from(l: Link) -> String {
        l.text
    }
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_names_parse_into_their_types() {
        let k = |s: &str| Link::parse(s).unwrap().kind();
        assert_eq!(k("ideal"), LinkType::Ideal);
        assert_eq!(k("pcie3x4"), LinkType::Pcie { gen: 3, lanes: 4 });
        assert_eq!(k("udma6"), LinkType::Udma(6));
        assert_eq!(k("sata2"), LinkType::Sata(2));
        assert_eq!(
            k("hs-g3x2"),
            LinkType::Ufs {
                gear: 3,
                rate_b: true,
                lanes: 2
            }
        );
        assert_eq!(
            k("hs-g4ax1"),
            LinkType::Ufs {
                gear: 4,
                rate_b: false,
                lanes: 1
            }
        );
        assert_eq!(k("hs400"), LinkType::Emmc(EmmcBus::Hs400));
        assert_eq!(
            k("lpddr3-1200x32"),
            LinkType::Lpddr {
                mts: 1200.0,
                bits: 32
            }
        );
    }

    #[test]
    fn bad_link_names_say_what_their_family_takes() {
        let e = |s: &str| Link::parse(s).unwrap_err().to_string();
        assert!(
            e("pcie9x4").contains("pcie<gen>x<lanes>"),
            "{}",
            e("pcie9x4")
        );
        assert!(e("udma7").contains("\"udma0\" … \"udma6\""));
        assert!(e("sata4").contains("\"sata3\" (6 Gb/s)"));
        assert!(e("hs-g3b-x2").contains("hs-g<gear 1–4>"));
        assert!(e("lpddr4-0x32").contains("lpddr<generation>"));
        // Numbers as the names write them: no sign, no leading zero, no space.
        for odd in [
            "pcie+3x+4",
            "pcie03x04",
            "pcie3x04",
            "udma+6",
            "udma06",
            "hs-g3bx02",
        ] {
            assert!(
                e(odd).starts_with(&format!("got {odd:?}, expected")),
                "{odd}"
            );
        }
        for fine in ["pcie3x4", "pcie5x16", "udma0", "hs-g3bx2"] {
            Link::parse(fine).unwrap();
        }
        let any = e("usb3");
        assert!(
            any.starts_with("got \"usb3\", expected a link name"),
            "{any}"
        );
        assert!(any.contains("NVMe") && any.contains("eMMC"), "{any}");
    }

    #[test]
    fn a_link_fits_only_its_kind_and_keeps_its_spelling() {
        let l = Link::parse("pcie3x4").unwrap();
        assert!(l.check_kind(InterfaceKind::Nvme).is_ok());
        let e = l.check_kind(InterfaceKind::Sata).unwrap_err().to_string();
        assert!(e.contains("\"sata1\" (1.5 Gb/s)"), "{e}");
        assert!(Link::parse("ideal")
            .unwrap()
            .check_kind(InterfaceKind::Emmc)
            .is_ok());
        let u = Link::parse("hs-g3bx2").unwrap();
        assert_eq!(String::from(u), "hs-g3bx2");
    }

    #[test]
    fn interface_kinds_round_trip_through_their_names() {
        for k in [
            InterfaceKind::Nvme,
            InterfaceKind::Ide,
            InterfaceKind::Sata,
            InterfaceKind::Ufs,
            InterfaceKind::Emmc,
            InterfaceKind::Dram,
        ] {
            assert_eq!(InterfaceKind::parse(&String::from(k)), Ok(k));
        }
        let e = InterfaceKind::parse("scsi").unwrap_err().to_string();
        assert!(e.contains("\"nvme\", \"ide\""), "{e}");
    }
}
