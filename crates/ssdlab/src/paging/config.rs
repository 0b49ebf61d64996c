//! The paging model's knobs: memory, the swap area, the kernel era and its reclaim waits, and
//! the costs of a fault. Every default names its source (seed 003 is
//! `003_70a51d8c1c706905.txt`; kernel constants name the file that defines them).

use super::PAGE_BYTES;
use crate::config::units::{Bytes, Dur};
use crate::error::{got, says, Error, Invalid, Problem, Result};
use crate::sim::SimTime;
use serde::{Deserialize, Serialize};

/// What ends 2.6.32's `congestion_wait` before its timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum CongestionWake {
    /// Follow the swap device (the default): `completion` for an ssdlab device, whose
    /// interface queues requests as a block-layer request queue does; `decongested` for seed
    /// 003's analytic NAND model and the fixed-cost backend, cost models with no request queue.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Only a congested queue falling below its congestion-off threshold: a driver that
    /// bypasses the request queue (bio-based, as a RAM-like prototype such as seed 003's SCM
    /// board likely was) frees no requests, so on an uncongested device the wait lasts its
    /// timeout. The reading that gives seed 003's long waits; its reproductions set it.
    #[serde(rename = "decongested")]
    Decongested,
    /// Any write request the block layer frees while fewer than the congestion-off threshold
    /// are in flight (`__freed_request` calls `clear_bdi_congested`, which wakes every waiter):
    /// a device with a request queue (SATA, NVMe through the 2.6.32 block layer).
    #[serde(rename = "completion")]
    Completion,
}

impl CongestionWake {
    /// `auto` resolved for a device that does (or does not) queue requests; the others as
    /// they are.
    pub fn for_device(self, queues_requests: bool) -> CongestionWake {
        match self {
            CongestionWake::Auto if queues_requests => CongestionWake::Completion,
            CongestionWake::Auto => CongestionWake::Decongested,
            other => other,
        }
    }
}

/// Which kernel's mechanisms the model follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Era {
    /// Linux 2.6.32, the seed's kernel: `scan_swap_map`, `valid_swaphandles`, `congestion_wait`,
    /// new anonymous pages on the active list.
    #[serde(rename = "2.6.32")]
    Linux2632,
    /// Linux 5.16 and later: the per-CPU cluster allocator (6.12's free/nonfull/full lists),
    /// `swapin_nr_pages`' adaptive window, `reclaim_throttle`, the watermark-scale-factor rule,
    /// new anonymous pages on the inactive list, the synchronous-I/O swap-in.
    #[serde(rename = "modern")]
    Modern,
}

/// The software steps of a fault, in simulated time. Defaults: seed 003, "Swap In Overhead
/// Analysis" (Cortex-A8 at 800 MHz, Linux 2.6.32); the device read comes from the device.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultCosts {
    /// A minor fault: a new page allocated and mapped (seed 003: "about 6 us").
    #[serde(default = "d_minor")]
    pub minor_fault: Dur,
    /// `lookup_swap_cache` (seed 003: 0.7 us).
    #[serde(default = "d_lookup")]
    pub lookup: Dur,
    /// The read path's software before the device (`read_swap_cache_async`, bio set-up;
    /// seed 003: "swap page read" 12 us).
    #[serde(default = "d_swap_read")]
    pub swap_read: Dur,
    /// `reuse_swap_page` on a write fault (seed 003: "swap page reuse" 2.2 us).
    #[serde(default = "d_reuse")]
    pub page_reuse: Dur,
    /// Setting the PTE (seed 003: "page mapping" 0.4 us).
    #[serde(default = "d_mapping")]
    pub mapping: Dur,
    /// `swap_free` of the slot when the fault frees it (seed 003: "swap slot free" 1.2 us).
    #[serde(default = "d_slot_free")]
    pub slot_free: Dur,
    /// `update_mmu_cache` (seed 003: 4.5 us, the ARM D-cache flush).
    #[serde(default = "d_mmu")]
    pub mmu_update: Dur,
    /// The application's own time per memory access that hits. No source: 0 by default, so
    /// the model charges only what paging costs.
    #[serde(default)]
    pub access: Dur,
    /// Reclaim's CPU time per page scanned at the inactive tail (`shrink_page_list`'s
    /// `page_referenced` and list handling). Seed 003 gives no figure: 0 by default.
    #[serde(default)]
    pub reclaim_scan: Dur,
    /// Reclaim's CPU time per page unmapped (`add_to_swap` and `try_to_unmap`). Seed 003 gives
    /// no figure: 0 by default.
    #[serde(default)]
    pub reclaim_unmap: Dur,
    /// Reclaim's CPU time per page written out (`pageout`, `swap_writepage`, the bio and the
    /// block layer). Seed 003 gives no figure: 0 by default. 50 us (1 / 20,000 s) would put the
    /// CPU's limit at the seed's swap-out knee (about 20 K write IOPS, "Swap Out Overhead
    /// Analysis"), but measured it does not flatten swap-out there (docs/paging.md, "Not done
    /// yet"), so `seed003-swapout` leaves it at 0.
    #[serde(default)]
    pub reclaim_write: Dur,
}

impl Default for FaultCosts {
    fn default() -> Self {
        FaultCosts {
            minor_fault: d_minor(),
            lookup: d_lookup(),
            swap_read: d_swap_read(),
            page_reuse: d_reuse(),
            mapping: d_mapping(),
            slot_free: d_slot_free(),
            mmu_update: d_mmu(),
            access: Dur(SimTime::ZERO),
            reclaim_scan: Dur(SimTime::ZERO),
            reclaim_unmap: Dur(SimTime::ZERO),
            reclaim_write: Dur(SimTime::ZERO),
        }
    }
}

fn ns(v: u64) -> Dur {
    Dur(SimTime::from_ns(v))
}
fn d_minor() -> Dur {
    ns(6_000)
}
fn d_lookup() -> Dur {
    ns(700)
}
fn d_swap_read() -> Dur {
    ns(12_000)
}
fn d_reuse() -> Dur {
    ns(2_200)
}
fn d_mapping() -> Dur {
    ns(400)
}
fn d_slot_free() -> Dur {
    ns(1_200)
}
fn d_mmu() -> Dur {
    ns(4_500)
}

/// The paging model's configuration (the `[swap]` knobs of `ssdlab swap`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PagingConfig {
    /// Physical memory for the workload's pages (whole 4 KiB pages).
    pub memory: Bytes,
    /// The swap area (slot 0 is the swap header, as in `mkswap`).
    pub swap_size: Bytes,
    /// Where the swap area starts on the device.
    #[serde(default)]
    pub swap_offset: Bytes,
    #[serde(default = "d_era")]
    pub era: Era,
    /// `vm.min_free_kbytes`; absent: the kernel's rule, sqrt(16 x memory in KiB) clamped
    /// (`init_per_zone_wmark_min`, mm/page_alloc.c).
    #[serde(default)]
    pub min_free: Option<Bytes>,
    /// `vm.watermark_scale_factor` in 1/10000 of memory (modern era; mm/page_alloc.c default 10).
    #[serde(default = "d_wsf")]
    pub watermark_scale_factor: u32,
    /// `vm.page-cluster`: read-ahead of 2^page_cluster pages (mm/swap.c `swap_setup`: 3 above
    /// 16 MiB of memory; seed 003: 8 pages, 32 KiB).
    #[serde(default = "d_page_cluster")]
    pub page_cluster: u32,
    /// The swap device is non-rotational (`SWP_SOLIDSTATE`; seed 003 ran "SOLID_STATE MODE").
    #[serde(default = "d_true")]
    pub solid_state: bool,
    /// Discard freed clusters (sent to the device as TRIM; seed 003, "Swap Optimizations for
    /// SSD"). Only with `solid_state`.
    #[serde(default = "d_true")]
    pub discard: bool,
    /// Start the first cluster at a random slot at swapon (2.6.29's `swapon` on a
    /// non-rotational device; 2.6.32 era, stream `paging.swapon`).
    #[serde(default = "d_true")]
    pub randomize_start: bool,
    /// The device is pmem-class (`SWP_SYNCHRONOUS_IO`): modern era swaps in the one page,
    /// synchronously, bypassing the swap cache and read-ahead.
    #[serde(default)]
    pub synchronous_io: bool,
    /// Wait after a failed direct reclaim (seed 003's c/nc experiment). Off: the reclaimer
    /// retries when the next write completes.
    #[serde(default = "d_true")]
    pub congestion_wait: bool,
    /// What ends a 2.6.32 congestion wait early: `auto` (default: by the device),
    /// `decongested` or `completion`.
    #[serde(default)]
    pub congestion_wake: CongestionWake,
    /// The wait's timeout: HZ/10 in `do_try_to_free_pages` (2.6.32) and in
    /// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)` (5.16).
    #[serde(default = "d_cw_timeout")]
    pub congestion_timeout: Dur,
    /// `CONFIG_HZ`: timer ticks per second; 5.16's NOPROGRESS throttle sleeps one tick
    /// (kernel/Kconfig.hz defaults to 250).
    #[serde(default = "d_hz")]
    pub hz: u32,
    /// Largest request the block layer builds by merging adjacent swap bios
    /// (`BLK_DEF_MAX_SECTORS`, 1024 sectors in 2.6.32: 512 KiB).
    #[serde(default = "d_max_io")]
    pub max_io: Bytes,
    /// The request queue's `nr_requests` (`BLKDEV_MAX_RQ` 128); its congestion thresholds
    /// follow `blk_queue_congestion_threshold`.
    #[serde(default = "d_nr_requests")]
    pub nr_requests: u32,
    /// Endurance (program/erase or write cycles per page) the lifetime table is computed for;
    /// seed 003, "Lifetime Estimation": SCM 10^6, SLC 100k, MLC 10k.
    #[serde(default = "d_endurance")]
    pub endurance: Vec<u64>,
    #[serde(default)]
    pub cost: FaultCosts,
    /// The synthetic PC mix's knobs (`--workload pc-mix`; see `pcmix.rs`).
    #[serde(default)]
    pub pc_mix: super::pcmix::PcMix,
}

fn d_era() -> Era {
    Era::Linux2632
}
fn d_wsf() -> u32 {
    10
}
fn d_page_cluster() -> u32 {
    3
}
fn d_true() -> bool {
    true
}
fn d_cw_timeout() -> Dur {
    Dur(SimTime::from_us(100_000))
}
fn d_hz() -> u32 {
    250
}
fn d_max_io() -> Bytes {
    Bytes(512 * 1024)
}
fn d_nr_requests() -> u32 {
    128
}
fn d_endurance() -> Vec<u64> {
    vec![1_000_000, 100_000, 10_000]
}

/// The zone watermarks in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

fn isqrt(v: u64) -> u64 {
    let mut r = (v as f64).sqrt() as u64;
    while r * r > v {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= v {
        r += 1;
    }
    r
}

impl PagingConfig {
    /// A config with the defaults for `memory` and `swap_size` bytes.
    pub fn new(memory: u64, swap_size: u64) -> PagingConfig {
        let t = toml::toml! { memory = (memory as i64)  swap_size = (swap_size as i64) };
        PagingConfig::from_table(t).expect("defaults are valid")
    }

    /// Read from a TOML table (the `swap.` overrides already applied) and validate.
    pub fn from_table(t: toml::Table) -> Result<PagingConfig> {
        // The path of the bad key in the message ("swap, field `congestion_wake`: ..."), in the
        // device config's words.
        let cfg: PagingConfig =
            crate::config::load::from_toml_table(&t, "swap", Error::bad_paging)?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn memory_pages(&self) -> u64 {
        self.memory.0 / PAGE_BYTES
    }

    /// Slots of the area, the header slot included.
    pub fn swap_slots(&self) -> u64 {
        self.swap_size.0 / PAGE_BYTES
    }

    /// min/low/high: 2.6.32 `setup_per_zone_wmarks` (low = min + min/4, high = min + min/2);
    /// modern (since 4.6) the distance is max(min/4, memory x watermark_scale_factor / 10000),
    /// low = min + distance, high = min + 2 x distance.
    pub fn watermarks(&self) -> Watermarks {
        let pages = self.memory_pages();
        let min_kb = match self.min_free {
            Some(b) => b.0 / 1024,
            None => {
                let kb = pages * (PAGE_BYTES / 1024);
                // 2.6.32 clamps to 65536 KiB, 5.x (since 5.7) to 262144 KiB.
                let cap = match self.era {
                    Era::Linux2632 => 65_536,
                    Era::Modern => 262_144,
                };
                isqrt(kb.saturating_mul(16)).clamp(128, cap)
            }
        };
        let min = min_kb / (PAGE_BYTES / 1024);
        let dist = match self.era {
            Era::Linux2632 => {
                return Watermarks {
                    min,
                    low: min + min / 4,
                    high: min + min / 2,
                }
            }
            Era::Modern => (min / 4).max(pages * self.watermark_scale_factor as u64 / 10_000),
        };
        Watermarks {
            min,
            low: min + dist,
            high: min + 2 * dist,
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |field: &str, p: Problem| Err(Error::bad_paging(Invalid::new("swap", field, p)));
        if !self.memory.0.is_multiple_of(PAGE_BYTES) || self.memory.0 == 0 {
            return bad(
                "memory",
                got(
                    format!("{} bytes", self.memory.0),
                    "a positive multiple of 4 KiB",
                ),
            );
        }
        if self.memory_pages() >= u32::MAX as u64 {
            return bad(
                "memory",
                got(format!("{} bytes", self.memory.0), "less than 16 TiB"),
            );
        }
        let w = self.watermarks();
        if w.high + SWAP_CLUSTER_MAX_PAGES >= self.memory_pages() {
            return bad("memory", says(format!(
                    "got {} pages, smaller than the watermarks (min {}, low {}, high {} pages) plus {} pages to run in; expected more memory or a smaller min_free",
                    self.memory_pages(), w.min, w.low, w.high, SWAP_CLUSTER_MAX_PAGES
                )));
        }
        if !self.swap_size.0.is_multiple_of(PAGE_BYTES) || self.swap_slots() < 2 {
            return bad(
                "swap_size",
                got(
                    format!("{} bytes", self.swap_size.0),
                    "a multiple of 4 KiB of at least 8 KiB (a header page and one slot)",
                ),
            );
        }
        if self.swap_slots() >= u32::MAX as u64 {
            return bad(
                "swap_size",
                got(format!("{} bytes", self.swap_size.0), "less than 16 TiB"),
            );
        }
        if !self.swap_offset.0.is_multiple_of(PAGE_BYTES) {
            return bad(
                "swap_offset",
                got(
                    format!("{} bytes", self.swap_offset.0),
                    "a multiple of 4 KiB",
                ),
            );
        }
        if self.page_cluster > 10 {
            return bad("page_cluster", got(self.page_cluster, "0 to 10"));
        }
        if self.max_io.0 < PAGE_BYTES || !self.max_io.0.is_multiple_of(PAGE_BYTES) {
            return bad(
                "max_io",
                got(format!("{} bytes", self.max_io.0), "a multiple of 4 KiB"),
            );
        }
        if !(4..=1_000_000).contains(&self.nr_requests) {
            return bad("nr_requests", got(self.nr_requests, "4 to 1000000"));
        }
        if self.watermark_scale_factor == 0 || self.watermark_scale_factor > 3000 {
            return bad(
                "watermark_scale_factor",
                got(
                    self.watermark_scale_factor,
                    "1 to 3000 (the sysctl's range)",
                ),
            );
        }
        if ![100, 250, 300, 1000].contains(&self.hz) {
            return bad(
                "hz",
                got(
                    self.hz,
                    "100, 250, 300 or 1000 (the choices of kernel/Kconfig.hz)",
                ),
            );
        }
        if self.endurance.is_empty() {
            return bad(
                "endurance",
                got(
                    "an empty list",
                    "at least one endurance in cycles (the lifetime table has a row for each)",
                ),
            );
        }
        if self.endurance.len() > 64 {
            return bad(
                "endurance",
                got(format!("{} entries", self.endurance.len()), "at most 64"),
            );
        }
        if self.endurance.contains(&0) {
            return bad("endurance", got("0", "cycles of at least 1"));
        }
        self.pc_mix.validate()
    }
}

/// `SWAP_CLUSTER_MAX` (include/linux/swap.h): pages a reclaim batch isolates, and what direct
/// reclaim tries to free.
pub const SWAP_CLUSTER_MAX_PAGES: u64 = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermarks_follow_the_kernel_rules() {
        // 1 GiB: sqrt(1048576 KiB x 16) = 4096 KiB = 1024 pages; 2.6.32: low 1280, high 1536.
        let c = PagingConfig::new(1 << 30, 1 << 30);
        assert_eq!(
            c.watermarks(),
            Watermarks {
                min: 1024,
                low: 1280,
                high: 1536
            }
        );
        // Modern: distance max(1024/4, 262144 x 10 / 10000 = 262) = 262.
        let mut m = c.clone();
        m.era = Era::Modern;
        assert_eq!(
            m.watermarks(),
            Watermarks {
                min: 1024,
                low: 1286,
                high: 1548
            }
        );
        // Small memory: min_free_kbytes is clamped up to 128 KiB = 32 pages.
        let s = PagingConfig::new(512 << 10, 1 << 20);
        assert_eq!(s.watermarks().min, 32);
    }

    #[test]
    fn memory_smaller_than_the_watermarks_is_one_line_naming_it() {
        let t = toml::toml! { memory = "256KiB"  swap_size = "1MiB" };
        let e = PagingConfig::from_table(t).unwrap_err().to_string();
        assert!(
            e.contains("`memory`") && e.contains("watermarks") && !e.contains('\n'),
            "{e}"
        );
        let t = toml::toml! { memory = "1MiB"  swap_size = "1MiB"  page_cluster = 11 };
        let e = PagingConfig::from_table(t).unwrap_err().to_string();
        assert!(e.contains("page_cluster") && e.contains("11"), "{e}");
        let t = toml::toml! { memory = "1MiB"  swap_size = "1MiB"  colour = 1 };
        assert!(PagingConfig::from_table(t)
            .unwrap_err()
            .to_string()
            .contains("colour"));
    }

    #[test]
    fn a_number_given_to_a_name_says_the_value_and_the_names_it_may_take() {
        let t = toml::toml! { memory = "1MiB"  swap_size = "1MiB"  era = 5 };
        let e = PagingConfig::from_table(t).unwrap_err().to_string();
        assert!(
            e.starts_with("swap, field `era`: got 5, expected `2.6.32` or `modern`"),
            "{e}"
        );
        let t = toml::toml! { memory = "1MiB"  swap_size = "1MiB"  congestion_wake = 5.0 };
        let e = PagingConfig::from_table(t).unwrap_err().to_string();
        assert!(
            e.contains("field `congestion_wake`: got 5.0, expected one of `auto`, `decongested`, `completion`"),
            "{e}"
        );
        assert!(!e.contains("line"), "{e}");
    }
}
