//! `[hfsl]`: seed 002's host-side FTL (HFSL, `driver::hfsl`) over the fusion device. The keys
//! are the software-defined parameters of the seed's Table 5 that are not the hardware's (the
//! NAND and PCM sizes, page, block and block count are `[nand]` and `[pcm]`'s); docs/fusion.md
//! maps each document name to its key and source.

use super::units::{Bytes, Dur};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How PCM and NAND work together (Table 5's FUSION_METHOD; §2.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FusionMethod {
    /// PCM beside NAND in one address space: small and metadata writes live in PCM; the
    /// coldest move to NAND when PCM is full (§2.3, the method of the seed's evaluation, §3.1).
    #[default]
    SameLevel,
    /// PCM as a write cache above NAND: every write goes to PCM, the least recently written
    /// page moves to NAND when PCM is full.
    Cache,
    /// Both: `cache_ratio` of the PCM is cache, the rest same-level storage.
    Both,
}

/// Where HFSL keeps its address map (§2.6.1: "the address mapping table of NAND flash and PCM
/// is stored in the fixed field of PCM to improve the reliability").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MapStore {
    /// The seed's design: every entry a request changes is written to the map area of the PCM
    /// ("the address mapping table will be modified immediately", §2.6.1) after the data it
    /// points at and before any erase, so a power cut loses no acknowledged write.
    #[default]
    Pcm,
    /// The map is kept in host DRAM and written to the PCM area only when HFSL halts (§2.6.1:
    /// "When halts, HFSL writes down the metadata to PCM"): faster, and a power cut loses what
    /// changed since the last halt.
    Dram,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HfslConfig {
    /// FUSION_METHOD (Table 5).
    #[serde(default)]
    pub fusion_method: FusionMethod,
    /// With `fusion_method = "both"`: the fraction of the PCM used as cache (§2.3: "the ratio of
    /// cache and storage space is also software-defined").
    #[serde(default = "half")]
    pub cache_ratio: f64,
    /// SSW (Table 5): a write of at most this many bytes is a small write and goes to PCM
    /// (0: none is; with no metadata writes, the run without PCM of Figs. 15-20).
    #[serde(default = "ssw_default")]
    pub ssw: Bytes,
    /// SUBPAGE_SIZE / ADDR_GRAN_PCM (Table 5): the PCM's addressing granularity; a NAND page is
    /// this many sub-pages (§2.6.1: four of 512 B in a 2 KB page).
    #[serde(default = "sub_page_default")]
    pub sub_page: Bytes,
    /// Whether the GC module is loaded (§2.7.3: a user may deactivate it).
    #[serde(default = "yes")]
    pub gc: bool,
    /// GC starts on a die when it has fewer free blocks than this (at least 2: a collection
    /// opens a block for its moves, and the block it frees is erased only after the request).
    #[serde(default = "two")]
    pub gc_free_blocks: u32,
    /// Wear-aware allocation (§2.6.1 (b)): each die keeps a block open for cold data (a page
    /// evicted from PCM, a write the Bloom filter has not seen lately) and one for hot data;
    /// the cold stream opens the die's most worn free block, the hot stream its least worn.
    /// Off: one block open per die, free blocks in order.
    #[serde(default = "yes")]
    pub wear_aware: bool,
    /// The hot/cold judgement's Bloom filter (§2.6.1: "the simple unidimensional bloom filter
    /// algorithm"): its size in bits (a power of two), ...
    #[serde(default = "bloom_bits_default")]
    pub bloom_bits: u32,
    /// ... its hash functions, ...
    #[serde(default = "two")]
    pub bloom_hashes: u32,
    /// ... and the host writes (logical pages) it records before it is cleared: a page is hot
    /// when written since the last clear.
    #[serde(default = "hot_window_default")]
    pub hot_window: u32,
    /// MAX_CMD_SEND_COUNTER (Table 5, §2.6.3): raw commands queue per channel (a circular
    /// queue each) and go to the device at most this many per queue at a time, 8 to 255.
    #[serde(default = "max_cmd_send_default")]
    pub max_cmd_send: u32,
    /// The scheduler's timer (§2.6.3): queued commands are sent on its ticks, and only when
    /// every command sent before has completed. 0: no timer, sent as soon as that holds.
    #[serde(default = "send_timer_default")]
    pub send_timer: Dur,
    /// Host time of one transfer of a batch into the device's BRAM (§2.6.3: "relatively
    /// expensive, especially when there are a lot of transmissions with small size data"), on
    /// the core that sends it, before its commands: a send costs one transfer whatever it
    /// holds. 0 (the default): not modelled, as the seed names the cost and gives no figure.
    #[serde(default = "zero_dur")]
    pub bram_transfer: Dur,
    /// Write protection (§2.7.4): byte ranges of the logical space, each owned by one
    /// application; a write into a range by any other application is refused and changes
    /// nothing. Reads are not restricted. Empty (the default): no range is owned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protect: Vec<OwnedRange>,
    /// The application a run's trace or job is sent by (`ssdlab run`): its writes into a range
    /// `protect` gives another application are refused. The Python `Hfsl` names the
    /// application per request instead.
    #[serde(default)]
    pub app: u32,
    /// Host CPU time HFSL spends on each host request of its own (the map look-ups and
    /// placement, in user space: no system call, §2.6.2), on the core that submits its raw
    /// commands, before them. Each raw command then costs the host's driver path
    /// (`host.submit_cost`, `host.complete_cost`) as any command does. 0: not modelled.
    #[serde(default = "zero_dur")]
    pub request_cost: Dur,
    /// Where the address map lives (`pcm`: persisted as it changes; `dram`: only at halt).
    #[serde(default)]
    pub map_store: MapStore,
    /// Bytes of one map entry in the PCM area (assumed: a 4-byte physical address, a 2-byte
    /// write counter, the State bits and the two flags of Table 3 in a byte each). The area
    /// holds one entry per logical page at the top of the PCM.
    #[serde(default = "map_entry_bytes_default")]
    pub map_entry_bytes: u32,
    /// Cut the power after the device has handled this many events (`ssdlab run`): the run
    /// stops there, HFSL restarts, recovers its map from the PCM and reports what the restart
    /// took and what data was lost. Unset: no power cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_cut_event: Option<u64>,
    /// With `power_cut_event`: cut the power again once the restart has handled this many
    /// events (counted from the restart), then restart once more; the result's `power_cut`
    /// describes the restart that finished. Unset: the restart runs uncut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_cut_event: Option<u64>,
}

/// `len` bytes from `offset`, which only application `app` may write.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnedRange {
    pub app: u32,
    pub offset: Bytes,
    pub len: Bytes,
}

impl OwnedRange {
    /// The first byte past the range (validation keeps it from overflowing).
    pub fn end(&self) -> u64 {
        self.offset.0.saturating_add(self.len.0)
    }

    /// Whether `offset .. offset + len` touches the range (as a controller's protected range
    /// does).
    pub fn overlaps(&self, offset: u64, len: u64) -> bool {
        super::ProtectedRange {
            offset: self.offset,
            len: self.len,
        }
        .overlaps(offset, len)
    }
}

impl Default for HfslConfig {
    fn default() -> Self {
        HfslConfig {
            fusion_method: FusionMethod::default(),
            cache_ratio: half(),
            ssw: ssw_default(),
            sub_page: sub_page_default(),
            gc: true,
            gc_free_blocks: two(),
            protect: Vec::new(),
            app: 0,
            wear_aware: true,
            max_cmd_send: max_cmd_send_default(),
            send_timer: send_timer_default(),
            bram_transfer: zero_dur(),
            bloom_bits: bloom_bits_default(),
            bloom_hashes: two(),
            hot_window: hot_window_default(),
            request_cost: zero_dur(),
            map_store: MapStore::default(),
            map_entry_bytes: map_entry_bytes_default(),
            power_cut_event: None,
            restart_cut_event: None,
        }
    }
}

fn half() -> f64 {
    0.5
}
fn ssw_default() -> Bytes {
    Bytes(512)
}
fn sub_page_default() -> Bytes {
    Bytes(512)
}
fn yes() -> bool {
    true
}
fn two() -> u32 {
    2
}
fn bloom_bits_default() -> u32 {
    1 << 16
}
fn hot_window_default() -> u32 {
    4096
}
fn max_cmd_send_default() -> u32 {
    255
}
fn map_entry_bytes_default() -> u32 {
    8
}
fn send_timer_default() -> Dur {
    Dur(crate::sim::SimTime::ZERO)
}
fn zero_dur() -> Dur {
    Dur(crate::sim::SimTime::ZERO)
}

impl HfslConfig {
    /// One-line errors naming the field, against the NAND page of the device.
    pub fn validate(&self, page_bytes: u64) -> Result<(), (String, String)> {
        let e = |f: &str, m: String| Err((format!("hfsl.{f}"), m));
        if !(0.0..=1.0).contains(&self.cache_ratio) {
            return e(
                "cache_ratio",
                format!("got {}, expected a fraction from 0 to 1", self.cache_ratio),
            );
        }
        if self.ssw.0 > page_bytes {
            return e(
                "ssw",
                format!(
                    "got {} bytes, expected at most the NAND page ({page_bytes} bytes)",
                    self.ssw.0
                ),
            );
        }
        let sp = self.sub_page.0;
        if sp == 0 || !page_bytes.is_multiple_of(sp) || page_bytes / sp > 8 {
            return e(
                "sub_page",
                format!("got {sp} bytes, expected a divisor of the NAND page ({page_bytes} bytes) of at least 1/8 of it"),
            );
        }
        let bits = self.bloom_bits;
        if !bits.is_power_of_two() || !(64..=1 << 30).contains(&bits) {
            return e(
                "bloom_bits",
                format!("got {bits}, expected a power of two from 64 to 2^30"),
            );
        }
        if !(1..=8).contains(&self.bloom_hashes) {
            return e(
                "bloom_hashes",
                format!("got {}, expected 1 to 8", self.bloom_hashes),
            );
        }
        if !(8..=255).contains(&self.max_cmd_send) {
            return e(
                "max_cmd_send",
                format!(
                    "got {}, expected 8 to 255 (MAX_CMD_SEND_COUNTER, seed 002 section 2.6.3)",
                    self.max_cmd_send
                ),
            );
        }
        if self.hot_window == 0 {
            return e("hot_window", "got 0, expected at least 1 write".into());
        }
        // A timer period past 1 s is no scheduler's; a long one ran the clock to its end in a
        // few ticks, where the next tick never comes (issue 45, defect 3).
        for (field, cost, per) in [
            ("request_cost", self.request_cost, "host request"),
            ("bram_transfer", self.bram_transfer, "transfer"),
            ("send_timer", self.send_timer, "timer tick"),
        ] {
            if cost.0 > crate::sim::SimTime::from_us(1_000_000) {
                return e(
                    field,
                    format!(
                        "got {} us, expected at most 1 s per {per}",
                        cost.0.as_us_f64()
                    ),
                );
            }
        }
        if !(4..=64).contains(&self.map_entry_bytes) {
            return e(
                "map_entry_bytes",
                format!(
                    "got {}, expected 4 to 64 bytes (at least the 4-byte physical address)",
                    self.map_entry_bytes
                ),
            );
        }
        if self.power_cut_event == Some(0) {
            return e(
                "power_cut_event",
                "got 0, expected at least 1 (the power fails after that many device events)".into(),
            );
        }
        match (self.power_cut_event, self.restart_cut_event) {
            (_, Some(0)) => {
                return e(
                    "restart_cut_event",
                    "got 0, expected at least 1 (the power fails after that many events of the restart)".into(),
                )
            }
            (None, Some(n)) => {
                return e(
                    "restart_cut_event",
                    format!("got {n}, but hfsl.power_cut_event is unset: only a restart after a cut can be cut"),
                )
            }
            _ => {}
        }
        if self.gc_free_blocks < 2 {
            return e(
                "gc_free_blocks",
                format!(
                    "got {}, expected at least 2 (a collection opens a free block for its moves, and the block it frees is erased only after the request)",
                    self.gc_free_blocks
                ),
            );
        }
        for (i, r) in self.protect.iter().enumerate() {
            let field = format!("protect[{i}]");
            if r.len.0 == 0 || r.offset.0.checked_add(r.len.0).is_none() {
                return e(
                    &field,
                    format!(
                        "got {} bytes from byte {}, expected a range of at least 1 byte that ends within 2^64",
                        r.len.0, r.offset.0
                    ),
                );
            }
            // One owner per byte: two applications' ranges may not overlap.
            if let Some((j, o)) = self.protect[..i]
                .iter()
                .enumerate()
                .find(|(_, o)| o.app != r.app && o.overlaps(r.offset.0, r.len.0))
            {
                return e(
                    &field,
                    format!(
                        "application {}'s bytes {}..{} overlap protect[{j}], application {}'s bytes {}..{}; expected one owner per byte",
                        r.app,
                        r.offset.0,
                        r.end(),
                        o.app,
                        o.offset.0,
                        o.end()
                    ),
                );
            }
        }
        Ok(())
    }
}
