//! What each back end reports of a run: the blocks of the result it answers for, each from the
//! layers it has. A device with NAND reports its HIL's, FIL's and scheme's counts; a PCM-only
//! device its PCM controller's, and of the NAND blocks only that it read, wrote and erased no
//! NAND page. The device adds what is not the back end's (the host's statuses, FDP's handles,
//! the interface and the cache buffer).

use super::{Backend, NandBackend, Scheme};
use crate::config::SsdConfig;
use crate::ftl::{AnyFtl, StreamStats};
use crate::sim::SimTime;
use crate::stats::power::PowerInputs;
use crate::stats::result::{
    DeviceResult, FtlResult, GcResult, MappingResult, MergeResult, NandOpsResult, PcmResult,
    ReliabilityResult, Spread, SteadyStateResult, StreamResult, ZoneResult,
};

/// A back end's blocks of a run's result.
pub struct BackendFigures {
    /// The result's `device` block as the back end counts it: the sizes of the logical space,
    /// the host's and the media's pages, write amplification, GC, erases and their spread,
    /// merges, zones, the steady state of its preconditioning. What the device adds: a zoned
    /// drive's host errors by status (`zones.errors`, empty here) and FDP's figures (`fdp`).
    pub device: DeviceResult,
    /// Busy time of each NAND channel and of each die (none without NAND).
    pub channel_busy: Vec<SimTime>,
    pub die_busy: Vec<SimTime>,
    /// Busy time of the controller's firmware cores (the HIL's, the PCM controller's).
    pub firmware_busy: SimTime,
    /// The result's `ftl` block: a cached map's mapping cache, the write streams (`ftl.streams`
    /// > 1, without `[fdp]`, whose handles they are); None when neither is on.
    pub ftl: Option<FtlResult>,
    /// Wear-out and read errors, where the back end models wear (`[reliability]`). The
    /// commands the host saw fail or refused (`failed_reads`, `refused_writes_*`) are the
    /// device's to add (0 here).
    pub reliability: Option<ReliabilityResult>,
    /// The PCM's block (a PCM-only or fusion device).
    pub pcm: Option<PcmResult>,
    /// What the power model needs of the media and the controller (the cache buffer's energy,
    /// `cache_mj`, is the device's to add).
    pub power: PowerInputs,
}

/// The writes and garbage collection so far, as the result counts them at the end: what
/// periodic statistics follow while a run goes on (the samples, the live server's display).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcCounts {
    /// The page FTL's GC runs and units moved (0 under a scheme that keeps its own map, as in
    /// the result's device block).
    pub runs: u64,
    pub units_moved: u64,
    /// The host's units written, in the scheme's map unit.
    pub host_units_written: u64,
    /// What else the device programmed for them: a block-mapped FTL's merge copies, a zoned
    /// drive's fillers.
    pub copied_units_written: u64,
    /// The power-loss model's map checkpoints (0 without it): the drive's programs, but not
    /// for the host's data.
    pub checkpoint_units_written: u64,
}

impl GcCounts {
    /// Units the device programmed over units the host wrote, the checkpoints included, as
    /// the result reports it (0 before any host write).
    pub fn write_amplification(&self) -> f64 {
        let device = self.units_written().device + self.checkpoint_units_written;
        ratio(device, self.host_units_written)
    }

    /// The host's units and the device's programs for them (the checkpoints left out).
    pub fn units_written(&self) -> UnitsWritten {
        let host = self.host_units_written;
        UnitsWritten {
            host,
            device: host + self.units_moved + self.copied_units_written,
        }
    }
}

/// Units the host wrote and units the device programmed for them (its GC's moves, a
/// block-mapped FTL's merge copies, a zoned drive's fillers), in the back end's map units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnitsWritten {
    pub host: u64,
    pub device: u64,
}

/// What the scheme that keeps the map counts of the run: the part of the device block that is
/// not the HIL's or the FIL's.
#[derive(Default)]
struct MapCounts {
    host_pages_written: u64,
    write_amplification: f64,
    gc_runs: u64,
    gc_units_moved: u64,
    background_gc_runs: u64,
    erases: u64,
    erase_count: Spread,
    wear_level_migrations: u64,
    forced_erases: u64,
    trimmed_units: u64,
    merges: Option<MergeResult>,
    /// Pages copied outside the page FTL's GC (a block-mapped FTL's merges), read and
    /// programmed through the controller's data path.
    pages_copied: u64,
    zones: Option<ZoneResult>,
    mapping: Option<MappingResult>,
}

/// `num` ÷ `den`, 0 when `den` is 0 (no write yet).
fn ratio(num: u64, den: u64) -> f64 {
    if den > 0 {
        num as f64 / den as f64
    } else {
        0.0
    }
}

/// `units` map units in pages of `units_per_page`, rounded up.
fn pages(units: u64, units_per_page: f64) -> u64 {
    (units as f64 / units_per_page).ceil() as u64
}

/// The page FTL's counts, whichever its map.
fn page_counts(f: &AnyFtl, units_per_page: f64) -> MapCounts {
    let s = &f.stats;
    MapCounts {
        host_pages_written: pages(s.host_units_written, units_per_page),
        // The power-loss model's map checkpoints are programs of the drive too (0 without it).
        write_amplification: ratio(
            s.host_units_written + s.gc_units_moved + s.checkpoint_units_written,
            s.host_units_written,
        ),
        gc_runs: s.gc_runs,
        gc_units_moved: s.gc_units_moved,
        background_gc_runs: s.background_gc_runs,
        erases: s.erases,
        erase_count: Spread::of(f.blocks().iter().map(|b| b.erase_count as f64)),
        wear_level_migrations: s.wl_migrations,
        forced_erases: s.forced_erases,
        trimmed_units: s.trimmed_units,
        ..MapCounts::default()
    }
}

impl Scheme {
    /// The steady state its preconditioning reached (`precondition.fill = "steady-state"`):
    /// the page FTL's, or a block-mapped FTL's with its merges per host page.
    fn steady_state(&self) -> Option<SteadyStateResult> {
        let page = |f: &AnyFtl| {
            f.steady_state.as_ref().map(|s| SteadyStateResult {
                write_amplification: s.waf,
                converged: s.converged,
                overwrite: s.overwrite,
                merges_per_host_page: None,
            })
        };
        match self {
            Scheme::Page(f, _) => page(f),
            Scheme::Cached(f) => page(f),
            Scheme::BlockMapped(h) => h.ftl.steady_state.as_ref().map(|s| SteadyStateResult {
                write_amplification: s.steady.waf,
                converged: s.steady.converged,
                overwrite: s.steady.overwrite,
                merges_per_host_page: Some(s.merges_per_host_page),
            }),
            Scheme::Raw(_) | Scheme::Fusion { .. } | Scheme::Zoned(_) => None,
        }
    }

    /// What this scheme counts of the run, its pages `units_per_page` map units each.
    fn counts(&self, units_per_page: f64) -> MapCounts {
        match self {
            Scheme::Page(f, _) => page_counts(f, units_per_page),
            Scheme::Cached(f) => {
                let m = &f.translation;
                MapCounts {
                    mapping: Some(MappingResult {
                        location: if m.hmb { "hmb" } else { "dram" },
                        translation_pages: m.pages,
                        cache_pages: m.capacity() as u64,
                        hits: m.stats.hits,
                        misses: m.stats.misses,
                        hit_ratio: ratio(m.stats.hits, m.stats.hits + m.stats.misses),
                        translation_reads: m.stats.translation_reads,
                        translation_writes: m.stats.translation_writes,
                    }),
                    ..page_counts(f, units_per_page)
                }
            }
            Scheme::BlockMapped(h) => {
                let m = &h.ftl.counts;
                MapCounts {
                    host_pages_written: m.host_pages_written,
                    // A block-mapped FTL's map unit is the page: its writes and merge copies
                    // are pages.
                    write_amplification: ratio(
                        m.host_pages_written + m.pages_copied,
                        m.host_pages_written,
                    ),
                    erases: m.erases,
                    erase_count: Spread::of(h.ftl.erase_counts().iter().map(|&n| n as f64)),
                    merges: Some(MergeResult {
                        switch: m.switch,
                        partial: m.partial,
                        full: m.full,
                        pages_copied: m.pages_copied,
                    }),
                    pages_copied: m.pages_copied,
                    ..MapCounts::default()
                }
            }
            // A raw device's writes and erases are its driver's: the firmware counts the
            // erases and each block's; the host's pages and write amplification are the
            // driver's to say.
            Scheme::Raw(r) | Scheme::Fusion { raw: r, .. } => MapCounts {
                erases: r.counters.erases,
                erase_count: Spread::of(r.erase_counts().iter().map(|&n| n as f64)),
                ..MapCounts::default()
            },
            Scheme::Zoned(z) => {
                // No GC: the device writes what the host wrote, plus a finish's filler.
                let host = z.counters.host_units_written;
                let c = &z.zones.counters;
                MapCounts {
                    host_pages_written: host.div_ceil(z.units_per_page()),
                    write_amplification: ratio(host + z.counters.filled_units, host),
                    erases: z.counters.erases,
                    erase_count: Spread::of(z.erase_counts().iter().map(|&n| n as f64)),
                    zones: Some(ZoneResult {
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
                    }),
                    ..MapCounts::default()
                }
            }
        }
    }
}

/// The energy the PCM's reads and writes drew, in mJ, when both figures exist (a missing one,
/// null in the pcm block, is unknown).
fn pcm_mj(r: &PcmResult) -> Option<f64> {
    Some((r.energy.read_uj? + r.energy.write_uj?) * 1e-3)
}

impl NandBackend {
    /// The NAND layers' and the scheme's blocks of the result (see [`Backend::figures`]).
    fn figures(
        &self,
        backend: &Backend,
        cfg: &SsdConfig,
        secs: f64,
        util: &dyn Fn(SimTime) -> f64,
    ) -> BackendFigures {
        let (geo, hil, fil) = (&self.geo, &self.hil.counters, &self.fil.counters);
        let upp = geo.units_per_page as f64;
        let mut own = self.scheme.counts(upp);
        let pcm = backend.pcm().map(|p| p.result(secs, util));
        let firmware_busy = backend.firmware_busy();
        let device = DeviceResult {
            logical_bytes: cfg.logical_bytes(),
            map_unit_bytes: cfg.map_unit_bytes(),
            host_pages_read: pages(hil.host_units_read, upp),
            host_pages_written: own.host_pages_written,
            nand_pages_read: fil.nand_pages_read,
            nand_pages_written: fil.nand_pages_written,
            write_amplification: own.write_amplification,
            gc_runs: own.gc_runs,
            gc_units_moved: own.gc_units_moved,
            erases: own.erases,
            erase_count: own.erase_count,
            wear_level_migrations: own.wear_level_migrations,
            forced_erases: own.forced_erases,
            trimmed_units: own.trimmed_units,
            unmapped_reads: hil.unmapped_reads,
            buffer_reads: hil.buffer_reads,
            multiplane_ops: fil.multiplane_ops,
            page_register_hits: fil.page_register_hits,
            read_ahead_pages: cfg
                .controller
                .read_ahead
                .filter(|b| b.0 > 0)
                .map(|_| fil.read_ahead_pages),
            nand_ops: cfg.nand.names_nand_ops().then_some(NandOpsResult {
                single_plane_ops: fil.single_plane_ops(),
                multi_plane_ops: fil.multi_plane_ops,
                partners_refused: fil.partners_refused,
                program_suspensions: fil.program_suspensions,
                erase_suspensions: fil.erase_suspensions,
            }),
            merges: own.merges.take(),
            gc: (cfg.ftl.gc.background || cfg.ftl.gc.copyback).then_some(GcResult {
                background_runs: own.background_gc_runs,
                copyback_pages: fil.copyback_pages,
            }),
            steady_state: self.scheme.steady_state(),
            zones: own.zones.take(),
            fdp: None,
        };
        // With `[fdp]` the streams are its handles, reported in `device.fdp`.
        let streams = backend.streams().filter(|_| cfg.fdp.is_none()).map(|all| {
            all.iter()
                .enumerate()
                .map(|(i, s)| StreamResult {
                    stream: i as u32,
                    host_units_written: s.host_units_written,
                    gc_units_moved: s.gc_units_moved,
                    write_amplification: ratio(
                        s.host_units_written + s.gc_units_moved,
                        s.host_units_written,
                    ),
                })
                .collect()
        });
        let mapping = own.mapping.take();
        let ftl =
            (mapping.is_some() || streams.is_some()).then_some(FtlResult { mapping, streams });
        // Wear is modelled where the scheme keeps the blocks' records (`[reliability]`).
        let reliability = backend.wear().and_then(|w| {
            Some(ReliabilityResult {
                pe_limit: w.pe_limit,
                factory_bad_blocks: w.factory_bad_blocks,
                retired_blocks: w.retired_blocks,
                good_blocks: w.good_blocks,
                min_good_blocks: w.min_good_blocks,
                read_only: w.read_only,
                percentage_used: backend.percentage_used()?,
                available_spare_percent: backend.available_spare_percent(),
                reads_retried: fil.reads_retried,
                read_retry_steps: fil.read_retry_steps,
                uncorrectable_reads: fil.uncorrectable_reads,
                failed_reads: 0,
                refused_writes_read_only: 0,
                refused_writes_no_space: 0,
                offline_zones: backend.zoned().and_then(|z| z.offline_zones()),
            })
        });
        let power = PowerInputs {
            seconds: secs,
            dies: self.fil.die_busy().count() as u64,
            array_read_s: fil.array_read_time.as_secs_f64(),
            array_program_s: fil.array_program_time.as_secs_f64(),
            array_erase_s: fil.array_erase_time.as_secs_f64(),
            channel_busy_s: self.fil.channel_busy().map(|b| b.as_secs_f64()).sum(),
            controller_busy_s: firmware_busy.as_secs_f64(),
            // Host reads and the page FTL's GC moves in map units, a block-mapped FTL's merge
            // copies in pages. Saturating: a count of units times their size cannot wrap into
            // a small figure.
            bytes_read: hil
                .host_units_read
                .saturating_add(own.gc_units_moved)
                .saturating_mul(geo.unit_bytes)
                .saturating_add(own.pages_copied.saturating_mul(geo.page_bytes)),
            bytes_written: fil.nand_pages_written.saturating_mul(geo.page_bytes),
            cache_mj: None,
            pcm_mj: pcm.as_ref().and_then(pcm_mj),
        };
        BackendFigures {
            device,
            channel_busy: self.fil.channel_busy().collect(),
            die_busy: self.fil.die_busy().collect(),
            firmware_busy,
            ftl,
            reliability,
            pcm,
            power,
        }
    }
}

impl Backend {
    /// The back end's blocks of a run's result on a device built from `cfg`, over `secs` of
    /// simulated time (`util`: a busy time as a fraction of it).
    pub fn figures(
        &self,
        cfg: &SsdConfig,
        secs: f64,
        util: &dyn Fn(SimTime) -> f64,
    ) -> BackendFigures {
        let p = match self {
            Backend::Nand(n) => return n.figures(self, cfg, secs, util),
            Backend::Pcm(p) => p,
        };
        // PCM alone: no NAND page is read, programmed or erased, no map is kept; its own
        // figures are its block. Updated in place, it wears by line (in that block), not by
        // erase, and models no `[reliability]`.
        let pcm = p.result(secs, util);
        let firmware_busy = p.cpu_busy();
        let device = DeviceResult {
            logical_bytes: cfg.logical_bytes(),
            map_unit_bytes: cfg.map_unit_bytes(),
            // Nothing is read ahead (`controller.read_ahead` is the page scheme's).
            read_ahead_pages: cfg.controller.read_ahead.filter(|b| b.0 > 0).map(|_| 0),
            ..DeviceResult::default()
        };
        // The controller's idle and core power, its data path over the bytes the PCM moved,
        // and the PCM's own energy; no NAND die.
        let power = PowerInputs {
            seconds: secs,
            controller_busy_s: firmware_busy.as_secs_f64(),
            bytes_read: pcm.bytes_read,
            bytes_written: pcm.bytes_written,
            pcm_mj: pcm_mj(&pcm),
            ..PowerInputs::default()
        };
        BackendFigures {
            device,
            channel_busy: Vec::new(),
            die_busy: Vec::new(),
            firmware_busy,
            ftl: None,
            reliability: None,
            pcm: Some(pcm),
            power,
        }
    }

    /// The steady state its preconditioning reached (`precondition.fill = "steady-state"`):
    /// the page FTL's, or a block-mapped FTL's with its merges per host page.
    pub fn steady_state(&self) -> Option<SteadyStateResult> {
        self.scheme()?.steady_state()
    }

    /// Each write stream's host writes and GC moves: the page FTL's streams (`ftl.streams` >
    /// 1, or FDP's handles); None where there are none.
    pub fn streams(&self) -> Option<&[StreamStats]> {
        self.page_ftl()?.stream_stats()
    }

    /// The writes and GC so far, each scheme's own: the page FTL's GC and checkpoints; a
    /// block-mapped FTL's pages and merge copies; a zoned drive's units and fillers; none on a
    /// raw device (its driver's to count) or PCM (written in place).
    pub fn gc_counts(&self) -> GcCounts {
        let page = |f: &AnyFtl| GcCounts {
            runs: f.stats.gc_runs,
            units_moved: f.stats.gc_units_moved,
            host_units_written: f.stats.host_units_written,
            copied_units_written: 0,
            checkpoint_units_written: f.stats.checkpoint_units_written,
        };
        match self.scheme() {
            Some(Scheme::Page(f, _)) => page(f),
            Some(Scheme::Cached(f)) => page(f),
            Some(Scheme::BlockMapped(h)) => GcCounts {
                host_units_written: h.ftl.counts.host_pages_written,
                copied_units_written: h.ftl.counts.pages_copied,
                ..GcCounts::default()
            },
            Some(Scheme::Zoned(z)) => GcCounts {
                host_units_written: z.counters.host_units_written,
                copied_units_written: z.counters.filled_units,
                ..GcCounts::default()
            },
            Some(Scheme::Raw(_) | Scheme::Fusion { .. }) | None => GcCounts::default(),
        }
    }

    /// What the host wrote and what the device programmed for it, as the back end counts them
    /// (a block-mapped FTL counts pages, its map unit); zeros for a raw device (its driver's
    /// to count) and PCM (written in place).
    pub fn units_written(&self) -> UnitsWritten {
        self.gc_counts().units_written()
    }

    /// Each NAND channel's busy time that has run by `now` (none without NAND).
    pub fn channel_busy_by(&self, now: SimTime) -> Vec<SimTime> {
        self.nand()
            .map_or(Vec::new(), |n| n.fil.channel_busy_by(now).collect())
    }

    /// Each NAND die's busy time that has run by `now` (none without NAND).
    pub fn die_busy_by(&self, now: SimTime) -> Vec<SimTime> {
        self.nand()
            .map_or(Vec::new(), |n| n.fil.die_busy_by(now).collect())
    }
}
