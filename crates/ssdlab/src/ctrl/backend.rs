//! The device's back end: which medium it has and, on NAND, which FTL scheme keeps its map.
//!
//! One value of [`Backend`] per device, built once from [`SsdConfig::backend_kind`] and
//! dispatched with a plain `match` (in `device::Device::handle`), as `iface::Interface` is for
//! the host interfaces. A device either has NAND ([`Backend::Nand`]: the HIL, the FIL and the
//! page FTL in one [`NandBackend`], with the [`Scheme`] that keeps the map) or is PCM alone
//! ([`Backend::Pcm`]: the PCM controller, and no NAND layer at all). The HIL (`ctrl::hil`) keeps
//! what every NAND scheme shares (firmware time, the split into map units, moving data and
//! completions); a scheme holds what is its own (the page FTL of the `Page` and `Cached`
//! schemes, the `Page` scheme's read-ahead, a block-mapped FTL's map, a raw device's block
//! records, the zone state machine),
//! and the back end answers for it: what is mapped, whether it takes writes, the figures of the
//! run.
//!
//! The page-mapped FTL (`ftl::Ftl`) is only in the schemes whose map it is, typed by what of its
//! map controller memory holds: the whole map (`Page`), or a mapping cache of translation pages
//! (`Cached`, the cache a part of the scheme's FTL, `Ftl<MappingCache>`). The FIL asks whoever
//! keeps the blocks' FTL state through `fil::FlashOwner`: that page FTL, or `fil::NoPageGc`
//! under a scheme that runs no page-FTL GC (a read's erase count is the one its transaction
//! carries); the flash port (`ctrl::FlashPort`) carries one or the other.
//!
//! A new scheme is a variant of [`Scheme`], a new medium one of [`Backend`]: its constructor in
//! [`Backend::new`], its arms in `device::Device::handle` and its answers below
//! (docs/architecture.md, "Back ends", lists the places).

use super::fil::Fil;
use super::hil::Hil;
use super::hybrid::HybridCtrl;
use super::pcm::PcmCtrl;
use super::raw::RawNand;
use super::read_ahead::ReadAhead;
use super::zoned::ZonedNand;
use crate::config::{BackendKind, SsdConfig};
use crate::error::{got, Problem};
use crate::ftl::mapping_cache::MappingCache;
use crate::ftl::{AnyFtl, CachedFtl, Ftl, Wear};
use crate::media::nand::Geometry;
use crate::media::nand_errors::ErrorModel;

mod figures;
pub use figures::{BackendFigures, GcCounts, UnitsWritten};

// One value per device, built once and never moved on the event path: boxing the larger
// variant would only add a pointer to follow on every event.
#[allow(clippy::large_enum_variant)]
pub enum Backend {
    /// NAND behind the HIL, the FIL and the page FTL, and the scheme that keeps its map.
    Nand(NandBackend),
    /// PCM alone, updated in place: the PCM controller and media, no NAND, no FIL, no FTL.
    Pcm(PcmCtrl),
}

/// The layers of a device with NAND: what a PCM-only device does not have.
pub struct NandBackend {
    pub geo: Geometry,
    pub hil: Hil,
    pub fil: Fil,
    pub scheme: Scheme,
}

/// Which FTL scheme keeps the map of a device with NAND.
// The cached map's variant is the largest (its mapping cache holds what the HIL's cached-map
// paths keep between calls); as for `Backend`, one value per device, never moved on the event
// path: a box would only add a pointer to follow on every event.
#[allow(clippy::large_enum_variant)]
pub enum Scheme {
    /// The page-mapping FTL, the whole map in controller memory, and the firmware's
    /// read-ahead (`controller.read_ahead`), which only this scheme has: it knows where every
    /// page is.
    Page(Ftl, ReadAhead),
    /// The page-mapping FTL with a demand-paged map: its mapping cache of translation pages
    /// is part of its type (`Ftl<MappingCache>`, `ftl.mapping = "cached"`).
    Cached(CachedFtl),
    /// A block-mapped or log-block FTL, which owns the map.
    BlockMapped(HybridCtrl),
    /// Raw NAND: requests address the media; this is all the firmware keeps of it.
    Raw(RawNand),
    /// Seed 002's fusion device: raw NAND and PCM behind one firmware core.
    Fusion { raw: RawNand, pcm: PcmCtrl },
    /// A zoned drive (NVMe ZNS): the zone state machine and where the zones lie.
    Zoned(ZonedNand),
}

impl NandBackend {
    /// The NAND layers `cfg` describes, over `geo`, and `scheme` over them; `seed` draws what
    /// the device is built with (the FTL's random streams, read errors).
    fn new(cfg: &SsdConfig, geo: Geometry, seed: u64, scheme: Scheme) -> NandBackend {
        let mut fil = Fil::new(cfg, &geo);
        if let Some(r) = &cfg.reliability {
            let model = ErrorModel::new(r, cfg.nand.cell, geo.unit_bytes, seed);
            fil.set_error_model(model);
        }
        NandBackend {
            hil: Hil::new(cfg, &geo),
            fil,
            scheme,
            geo,
        }
    }
}

impl Backend {
    /// The back end `cfg` names; `seed` draws what the device is built with (the FTL's random
    /// streams, factory bad blocks, read errors).
    pub fn new(cfg: &SsdConfig, seed: u64) -> Backend {
        let pcm = || {
            PcmCtrl::new(
                cfg.pcm.as_ref().expect("a PCM back end has [pcm]"),
                cfg.controller.cmd_overhead.0,
            )
        };
        let kind = cfg.backend_kind();
        if kind == BackendKind::Pcm {
            return Backend::Pcm(pcm());
        }
        let geo = Geometry::from_config(cfg);
        let scheme = match kind {
            BackendKind::Page => Scheme::Page(
                Ftl::new(cfg, seed),
                ReadAhead::new(cfg.controller.read_ahead.map_or(0, |b| b.0)),
            ),
            BackendKind::Cached => Scheme::Cached(Ftl::cached(cfg, seed)),
            BackendKind::BlockMapped => Scheme::BlockMapped(HybridCtrl::new(cfg, &geo, seed)),
            BackendKind::Raw => Scheme::Raw(RawNand::new(&geo)),
            BackendKind::Fusion => Scheme::Fusion {
                raw: RawNand::new(&geo),
                pcm: pcm(),
            },
            BackendKind::Zoned => Scheme::Zoned(ZonedNand::new(cfg, &geo, seed)),
            BackendKind::Pcm => unreachable!("a PCM-only device was built above"),
        };
        Backend::Nand(NandBackend::new(cfg, geo, seed, scheme))
    }

    pub fn kind(&self) -> BackendKind {
        match self.scheme() {
            None => BackendKind::Pcm,
            Some(Scheme::Page(_, _)) => BackendKind::Page,
            Some(Scheme::Cached(_)) => BackendKind::Cached,
            Some(Scheme::BlockMapped(_)) => BackendKind::BlockMapped,
            Some(Scheme::Raw(_)) => BackendKind::Raw,
            Some(Scheme::Fusion { .. }) => BackendKind::Fusion,
            Some(Scheme::Zoned(_)) => BackendKind::Zoned,
        }
    }

    /// The NAND layers (a device with NAND).
    pub fn nand(&self) -> Option<&NandBackend> {
        match self {
            Backend::Nand(n) => Some(n),
            Backend::Pcm(_) => None,
        }
    }

    pub fn nand_mut(&mut self) -> Option<&mut NandBackend> {
        match self {
            Backend::Nand(n) => Some(n),
            Backend::Pcm(_) => None,
        }
    }

    /// The FTL scheme (a device with NAND).
    pub fn scheme(&self) -> Option<&Scheme> {
        self.nand().map(|n| &n.scheme)
    }

    fn scheme_mut(&mut self) -> Option<&mut Scheme> {
        self.nand_mut().map(|n| &mut n.scheme)
    }

    /// The page-mapped FTL (the `Page` and `Cached` schemes, whose map it is), whichever its
    /// map: what a caller may read the map, the GC's counts or the write streams of. None under
    /// a scheme that keeps its own map and on a PCM-only device.
    pub fn page_ftl(&self) -> Option<&AnyFtl> {
        match self.scheme()? {
            Scheme::Page(f, _) => Some(f),
            Scheme::Cached(f) => Some(f),
            _ => None,
        }
    }

    pub fn page_ftl_mut(&mut self) -> Option<&mut AnyFtl> {
        match self.scheme_mut()? {
            Scheme::Page(f, _) => Some(f),
            Scheme::Cached(f) => Some(f),
            _ => None,
        }
    }

    /// The mapping cache of a cached map (the `Cached` scheme's).
    pub fn mapping_cache(&self) -> Option<&MappingCache> {
        match self.scheme()? {
            Scheme::Cached(f) => Some(&f.translation),
            _ => None,
        }
    }

    /// Whether write stream `stream` exists: the page FTL's streams (`ftl.streams`, or FDP's
    /// handles); another back end has stream 0 alone (validation keeps `ftl.streams` at 1 for
    /// it). The one-line refusal names the field.
    pub fn check_stream(&self, stream: u8) -> Result<(), Problem> {
        match self.page_ftl() {
            Some(f) => f.check_stream(stream),
            None if stream == 0 => Ok(()),
            None => Err(got(
                stream,
                format!(
                    "0: the {} back end has no write streams (ftl.streams is the page-mapping \
                     FTL's)",
                    self.kind().name()
                ),
            )),
        }
    }

    /// The raw NAND firmware's state (a raw or fusion device).
    pub fn raw(&self) -> Option<&RawNand> {
        match self.scheme()? {
            Scheme::Raw(r) | Scheme::Fusion { raw: r, .. } => Some(r),
            _ => None,
        }
    }

    pub(crate) fn raw_mut(&mut self) -> Option<&mut RawNand> {
        match self.scheme_mut()? {
            Scheme::Raw(r) | Scheme::Fusion { raw: r, .. } => Some(r),
            _ => None,
        }
    }

    /// The PCM's controller and media (a PCM-only or fusion device).
    pub fn pcm(&self) -> Option<&PcmCtrl> {
        match self {
            Backend::Pcm(p) => Some(p),
            Backend::Nand(n) => match &n.scheme {
                Scheme::Fusion { pcm, .. } => Some(pcm),
                _ => None,
            },
        }
    }

    pub(crate) fn pcm_mut(&mut self) -> Option<&mut PcmCtrl> {
        match self {
            Backend::Pcm(p) => Some(p),
            Backend::Nand(n) => match &mut n.scheme {
                Scheme::Fusion { pcm, .. } => Some(pcm),
                _ => None,
            },
        }
    }

    /// Bytes of the PCM space beside the NAND's (a fusion device's; a PCM-only device's PCM is
    /// its whole space, the device's capacity).
    pub fn pcm_space_bytes(&self) -> Option<u64> {
        match self.scheme()? {
            Scheme::Fusion { pcm, .. } => Some(pcm.logical_bytes()),
            _ => None,
        }
    }

    /// The zoned firmware (a zoned drive).
    pub fn zoned(&self) -> Option<&ZonedNand> {
        match self.scheme()? {
            Scheme::Zoned(z) => Some(z),
            _ => None,
        }
    }

    pub fn zoned_mut(&mut self) -> Option<&mut ZonedNand> {
        match self.scheme_mut()? {
            Scheme::Zoned(z) => Some(z),
            _ => None,
        }
    }

    /// The block-mapped FTL (a block-mapped device).
    pub fn block_mapped(&self) -> Option<&HybridCtrl> {
        match self.scheme()? {
            Scheme::BlockMapped(h) => Some(h),
            _ => None,
        }
    }

    pub fn block_mapped_mut(&mut self) -> Option<&mut HybridCtrl> {
        match self.scheme_mut()? {
            Scheme::BlockMapped(h) => Some(h),
            _ => None,
        }
    }

    /// Whether logical unit `lpn` holds data the device keeps for it (a read of it goes to the
    /// media): what a block-status query reports as allocated. A raw device's units are
    /// physical: programmed since their block's erase. PCM is updated in place: every line is.
    /// A zoned drive's: programmed since its zone's reset.
    pub fn is_mapped(&self, lpn: u64) -> bool {
        let Backend::Nand(n) = self else {
            return true;
        };
        match &n.scheme {
            Scheme::Page(f, _) => f.lookup(lpn).is_some(),
            Scheme::Cached(f) => f.lookup(lpn).is_some(),
            Scheme::BlockMapped(h) => h.ftl.lookup(lpn).is_some(),
            Scheme::Raw(r) | Scheme::Fusion { raw: r, .. } => r.is_programmed(lpn),
            Scheme::Zoned(z) => z.is_programmed(lpn),
        }
    }

    /// Whether the device has worn out and takes no more writes (`[reliability]`).
    pub fn read_only(&self) -> bool {
        let Backend::Nand(n) = self else {
            return false;
        };
        match &n.scheme {
            Scheme::Page(f, _) => f.read_only(),
            Scheme::Cached(f) => f.read_only(),
            Scheme::BlockMapped(h) => h.ftl.read_only(),
            Scheme::Zoned(z) => z.read_only(),
            Scheme::Raw(_) | Scheme::Fusion { .. } => false,
        }
    }

    /// Wear-out figures, where the back end models wear (`[reliability]`).
    pub fn wear(&self) -> Option<&Wear> {
        let n = self.nand()?;
        match &n.scheme {
            Scheme::Page(f, _) => f.wear.as_ref(),
            Scheme::Cached(f) => f.wear.as_ref(),
            Scheme::BlockMapped(h) => h.ftl.wear(),
            Scheme::Zoned(z) => z.wear(),
            Scheme::Raw(_) | Scheme::Fusion { .. } => None,
        }
    }

    /// Spare blocks left, in percent of the reserve (SMART's Available Spare); 100 where no
    /// block retires.
    pub fn available_spare_percent(&self) -> f64 {
        let Backend::Nand(n) = self else {
            return 100.0;
        };
        match &n.scheme {
            Scheme::Page(f, _) => f.available_spare_percent(),
            Scheme::Cached(f) => f.available_spare_percent(),
            Scheme::BlockMapped(h) => h.ftl.available_spare_percent(),
            Scheme::Zoned(z) => z.available_spare_percent(),
            Scheme::Raw(_) | Scheme::Fusion { .. } => 100.0,
        }
    }

    /// Mean wear of the good blocks against their P/E limit, in percent, where the back end
    /// models wear (`[reliability]`).
    pub fn percentage_used(&self) -> Option<f64> {
        let n = self.nand()?;
        match &n.scheme {
            Scheme::Page(f, _) => f.wear.is_some().then(|| f.percentage_used()),
            Scheme::Cached(f) => f.wear.is_some().then(|| f.percentage_used()),
            Scheme::BlockMapped(h) => h.ftl.percentage_used(),
            Scheme::Zoned(z) => z.percentage_used(),
            Scheme::Raw(_) | Scheme::Fusion { .. } => None,
        }
    }

    /// Free blocks over every plane, where the back end keeps a pool of them: the page FTL's,
    /// a block-mapped FTL's. None for a raw device (its driver's to say), a zoned drive (its
    /// blocks belong to zones) and PCM.
    pub fn free_blocks(&self) -> Option<u64> {
        match self.scheme()? {
            Scheme::Page(f, _) => Some(f.free_blocks_total()),
            Scheme::Cached(f) => Some(f.free_blocks_total()),
            Scheme::BlockMapped(h) => Some(h.ftl.free_blocks_total()),
            Scheme::Raw(_) | Scheme::Fusion { .. } | Scheme::Zoned(_) => None,
        }
    }

    /// Erases of the most-erased block, from the records of whoever erases: the page FTL, a
    /// block-mapped FTL, or a raw device's firmware (for its driver). PCM has no erase.
    pub fn max_erase_count(&self) -> u64 {
        let Backend::Nand(n) = self else {
            return 0;
        };
        let max = |counts: &[u32]| counts.iter().copied().max().unwrap_or(0) as u64;
        let max_of_blocks = |blocks: &[crate::ftl::Block]| {
            blocks.iter().map(|b| b.erase_count).max().unwrap_or(0) as u64
        };
        match &n.scheme {
            Scheme::Page(f, _) => max_of_blocks(f.blocks()),
            Scheme::Cached(f) => max_of_blocks(f.blocks()),
            Scheme::BlockMapped(h) => max(h.ftl.erase_counts()),
            Scheme::Raw(r) | Scheme::Fusion { raw: r, .. } => max(r.erase_counts()),
            Scheme::Zoned(z) => max(z.erase_counts()),
        }
    }

    /// Busy time of the controller's firmware cores: the HIL's on NAND, the PCM controller's
    /// (a fusion device has both).
    pub fn firmware_busy(&self) -> crate::sim::SimTime {
        let pcm = self
            .pcm()
            .map_or(crate::sim::SimTime::ZERO, |p| p.cpu_busy());
        match self {
            Backend::Nand(n) => n.hil.cpu_busy() + pcm,
            Backend::Pcm(_) => pcm,
        }
    }
}
