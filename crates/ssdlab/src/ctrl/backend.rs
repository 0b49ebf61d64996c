//! The device's back end: which medium it has and, on NAND, which FTL scheme keeps its map.
//!
//! One value of [`Backend`] per device, built once from [`SsdConfig::backend_kind`] and
//! dispatched with a plain `match` (in `device::Device::handle`), as `iface::Interface` is for
//! the host interfaces. The HIL (`ctrl::hil`) keeps what every NAND back end shares (firmware
//! time, the split into map units, moving data and completions); a variant holds what is its
//! own (a block-mapped FTL's map, a raw device's block records, the PCM controller), and
//! answers for it: what is mapped, whether it takes writes, the figures of the run.
//!
//! The page-mapped FTL (`ftl::Ftl`) is not held here: the FIL's garbage collection works on it
//! for every NAND device, so it stays in the flash port. The `Page` and `Cached` variants are
//! the schemes that use it as the map; the others leave it idle.
//!
//! A new scheme or medium is a variant here, its constructor in [`Backend::new`], its arms in
//! `device::Device::handle` and its answers below (docs/architecture.md, "Back ends", lists the
//! four places).

use super::hybrid::HybridCtrl;
use super::pcm::PcmCtrl;
use super::raw::RawNand;
use super::zoned::ZonedNand;
use crate::config::{BackendKind, SsdConfig};
use crate::ftl::{Ftl, Wear};
use crate::media::nand::Geometry;
use crate::stats::result::{MergeResult, Spread, ZoneResult};

pub enum Backend {
    /// The page-mapping FTL, the whole map in controller memory.
    Page,
    /// The page-mapping FTL with a demand-paged map (`Ftl::mapping` holds its cache).
    Cached,
    /// A block-mapped or log-block FTL, which owns the map.
    BlockMapped(HybridCtrl),
    /// Raw NAND: requests address the media; this is all the firmware keeps of it.
    Raw(RawNand),
    /// PCM alone, updated in place.
    Pcm(PcmCtrl),
    /// Seed 002's fusion device: raw NAND and PCM behind one firmware core.
    Fusion { raw: RawNand, pcm: PcmCtrl },
    /// A zoned drive (NVMe ZNS): the zone state machine and where the zones lie.
    Zoned(ZonedNand),
}

/// What a back end adds to, or puts in place of, the page FTL's figures in a run's result.
pub struct BackendFigures {
    /// Pages the host wrote, when the back end counts them itself (a block-mapped FTL).
    pub host_pages_written: Option<u64>,
    /// Write amplification, when the back end counts it itself.
    pub write_amplification: Option<f64>,
    /// Block erases beyond the page FTL's (a raw device's driver's, a block-mapped FTL's).
    pub erases: u64,
    /// Erases per block, when the back end keeps the blocks' records itself.
    pub erase_count: Option<Spread>,
    /// A block-mapped FTL's merges.
    pub merges: Option<MergeResult>,
    /// Pages copied outside the page FTL's GC (a block-mapped FTL's merges).
    pub pages_copied: u64,
    /// A zoned drive's zones (the host's errors by status are the run's to add).
    pub zones: Option<ZoneResult>,
}

impl Backend {
    /// The back end `cfg` names, over the NAND geometry `geo`; `seed` draws what the device is
    /// built with (factory bad blocks).
    pub fn new(cfg: &SsdConfig, geo: &Geometry, seed: u64) -> Backend {
        let pcm = || {
            PcmCtrl::new(
                cfg.pcm.as_ref().expect("a PCM back end has [pcm]"),
                cfg.controller.cmd_overhead.0,
            )
        };
        match cfg.backend_kind() {
            BackendKind::Page => Backend::Page,
            BackendKind::Cached => Backend::Cached,
            BackendKind::BlockMapped => Backend::BlockMapped(HybridCtrl::new(cfg, geo, seed)),
            BackendKind::Raw => Backend::Raw(RawNand::new(geo)),
            BackendKind::Pcm => Backend::Pcm(pcm()),
            BackendKind::Fusion => Backend::Fusion {
                raw: RawNand::new(geo),
                pcm: pcm(),
            },
            BackendKind::Zoned => Backend::Zoned(ZonedNand::new(cfg, geo, seed)),
        }
    }

    pub fn kind(&self) -> BackendKind {
        match self {
            Backend::Page => BackendKind::Page,
            Backend::Cached => BackendKind::Cached,
            Backend::BlockMapped(_) => BackendKind::BlockMapped,
            Backend::Raw(_) => BackendKind::Raw,
            Backend::Pcm(_) => BackendKind::Pcm,
            Backend::Fusion { .. } => BackendKind::Fusion,
            Backend::Zoned(_) => BackendKind::Zoned,
        }
    }

    /// The raw NAND firmware's state (a raw or fusion device).
    pub fn raw(&self) -> Option<&RawNand> {
        match self {
            Backend::Raw(r) | Backend::Fusion { raw: r, .. } => Some(r),
            _ => None,
        }
    }

    pub(crate) fn raw_mut(&mut self) -> Option<&mut RawNand> {
        match self {
            Backend::Raw(r) | Backend::Fusion { raw: r, .. } => Some(r),
            _ => None,
        }
    }

    /// The PCM's controller and media (a PCM-only or fusion device).
    pub fn pcm(&self) -> Option<&PcmCtrl> {
        match self {
            Backend::Pcm(p) | Backend::Fusion { pcm: p, .. } => Some(p),
            _ => None,
        }
    }

    pub(crate) fn pcm_mut(&mut self) -> Option<&mut PcmCtrl> {
        match self {
            Backend::Pcm(p) | Backend::Fusion { pcm: p, .. } => Some(p),
            _ => None,
        }
    }

    /// The zoned firmware (a zoned drive).
    pub fn zoned(&self) -> Option<&ZonedNand> {
        match self {
            Backend::Zoned(z) => Some(z),
            _ => None,
        }
    }

    pub fn zoned_mut(&mut self) -> Option<&mut ZonedNand> {
        match self {
            Backend::Zoned(z) => Some(z),
            _ => None,
        }
    }

    /// The block-mapped FTL (a block-mapped device).
    pub fn block_mapped(&self) -> Option<&HybridCtrl> {
        match self {
            Backend::BlockMapped(h) => Some(h),
            _ => None,
        }
    }

    pub fn block_mapped_mut(&mut self) -> Option<&mut HybridCtrl> {
        match self {
            Backend::BlockMapped(h) => Some(h),
            _ => None,
        }
    }

    /// Whether logical unit `lpn` holds data the device keeps for it (a read of it goes to the
    /// media): what a block-status query reports as allocated. A raw device's units are
    /// physical: programmed since their block's erase. PCM is updated in place: every line is.
    /// A zoned drive's: programmed since its zone's reset.
    pub fn is_mapped(&self, lpn: u64, ftl: &Ftl) -> bool {
        match self {
            Backend::Page | Backend::Cached => ftl.lookup(lpn).is_some(),
            Backend::BlockMapped(h) => h.ftl.lookup(lpn).is_some(),
            Backend::Raw(r) | Backend::Fusion { raw: r, .. } => r.is_programmed(lpn),
            Backend::Pcm(_) => true,
            Backend::Zoned(z) => z.is_programmed(lpn),
        }
    }

    /// Whether the device has worn out and takes no more writes (`[reliability]`).
    pub fn read_only(&self, ftl: &Ftl) -> bool {
        match self {
            Backend::Page | Backend::Cached => ftl.read_only(),
            Backend::BlockMapped(h) => h.ftl.read_only(),
            Backend::Zoned(z) => z.read_only(),
            _ => false,
        }
    }

    /// Wear-out figures, where the back end models wear (`[reliability]`).
    pub fn wear<'a>(&'a self, ftl: &'a Ftl) -> Option<&'a Wear> {
        match self {
            Backend::Page | Backend::Cached => ftl.wear.as_ref(),
            Backend::BlockMapped(h) => h.ftl.wear(),
            Backend::Zoned(z) => z.wear(),
            _ => None,
        }
    }

    /// Spare blocks left, in percent of the reserve (SMART's Available Spare); 100 where no
    /// block retires.
    pub fn available_spare_percent(&self, ftl: &Ftl) -> f64 {
        match self {
            Backend::Page | Backend::Cached => ftl.available_spare_percent(),
            Backend::BlockMapped(h) => h.ftl.available_spare_percent(),
            Backend::Zoned(z) => z.available_spare_percent(),
            _ => 100.0,
        }
    }

    /// Mean wear of the good blocks against their P/E limit, in percent, where the back end
    /// models wear (`[reliability]`).
    pub fn percentage_used(&self, ftl: &Ftl) -> Option<f64> {
        match self {
            Backend::Page | Backend::Cached => ftl.wear.is_some().then(|| ftl.percentage_used()),
            Backend::BlockMapped(h) => h.ftl.percentage_used(),
            Backend::Zoned(z) => z.percentage_used(),
            _ => None,
        }
    }

    /// Erases of the most-erased block, from the records of whoever erases: the page FTL, a
    /// block-mapped FTL, or a raw device's firmware (for its driver). PCM has no erase.
    pub fn max_erase_count(&self, ftl: &Ftl) -> u64 {
        let max = |counts: &[u32]| counts.iter().copied().max().unwrap_or(0) as u64;
        match self {
            Backend::Page | Backend::Cached => ftl
                .blocks()
                .iter()
                .map(|b| b.erase_count as u64)
                .max()
                .unwrap_or(0),
            Backend::BlockMapped(h) => max(h.ftl.erase_counts()),
            Backend::Raw(r) | Backend::Fusion { raw: r, .. } => max(r.erase_counts()),
            Backend::Zoned(z) => max(z.erase_counts()),
            Backend::Pcm(_) => 0,
        }
    }

    /// Busy time of the back end's own firmware core, beside the HIL's (the PCM controller's).
    pub fn firmware_busy(&self) -> crate::sim::SimTime {
        self.pcm()
            .map_or(crate::sim::SimTime::ZERO, |p| p.cpu_busy())
    }

    /// The back end's own figures for a run's result.
    pub fn figures(&self) -> BackendFigures {
        let mut f = BackendFigures {
            host_pages_written: None,
            write_amplification: None,
            erases: 0,
            erase_count: None,
            merges: None,
            pages_copied: 0,
            zones: None,
        };
        match self {
            Backend::BlockMapped(h) => {
                let m = &h.ftl.counts;
                f.host_pages_written = Some(m.host_pages_written);
                // A block-mapped FTL's map unit is the page: its writes and merge copies are
                // pages.
                f.write_amplification = Some(if m.host_pages_written > 0 {
                    (m.host_pages_written + m.pages_copied) as f64 / m.host_pages_written as f64
                } else {
                    0.0
                });
                f.erases = m.erases;
                f.erase_count = Some(Spread::of(h.ftl.erase_counts().iter().map(|&n| n as f64)));
                f.merges = Some(MergeResult {
                    switch: m.switch,
                    partial: m.partial,
                    full: m.full,
                    pages_copied: m.pages_copied,
                });
                f.pages_copied = m.pages_copied;
            }
            Backend::Raw(r) | Backend::Fusion { raw: r, .. } => {
                // A raw device's erases are its driver's, counted by the firmware.
                f.erases = r.counters.erases;
                f.erase_count = Some(Spread::of(r.erase_counts().iter().map(|&n| n as f64)));
            }
            Backend::Zoned(z) => {
                // No GC: the device writes what the host wrote, plus a finish's filler.
                let host = z.counters.host_units_written;
                let upp = z.units_per_page();
                f.host_pages_written = Some(host.div_ceil(upp));
                f.write_amplification = Some(if host > 0 {
                    (host + z.counters.filled_units) as f64 / host as f64
                } else {
                    0.0
                });
                f.erases = z.counters.erases;
                f.erase_count = Some(Spread::of(z.erase_counts().iter().map(|&n| n as f64)));
                let c = &z.zones.counters;
                f.zones = Some(ZoneResult {
                    zones: z.zones.count(),
                    zone_bytes: z.zones.zone_lbas() * z.unit_bytes(),
                    zone_capacity_bytes: z.zones.cap_lbas() * z.unit_bytes(),
                    resets: c.resets,
                    finishes: c.finishes,
                    opens: c.opens,
                    implicit_closes: c.implicit_closes,
                    max_open: c.max_open,
                    max_active: c.max_active,
                    filled_units: z.counters.filled_units,
                    errors: Default::default(),
                });
            }
            Backend::Page | Backend::Cached | Backend::Pcm(_) => {}
        }
        f
    }
}
