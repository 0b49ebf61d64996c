//! Validation of a whole config: every field's range, and the checks across fields.

use super::*;
use crate::error::{got, says, Error, Invalid, Problem, Result};
use crate::sim::SimTime;

impl SsdConfig {
    /// A saved drive state (`precondition.state`, docs/state.md) is the page-mapped FTL's:
    /// other back ends keep state it does not hold.
    fn validate_state(&self, path: &str, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        if path.is_empty() {
            return err(
                "precondition.state",
                got(
                    "an empty path",
                    "the file `ssdlab precondition --save` wrote",
                ),
            );
        }
        let why = self.state_unsupported();
        match why {
            Some(why) => err(
                "precondition.state",
                says(format!(
                    "got \"{path}\": a saved drive state is not supported for {why}; only the \
                     page-mapped FTL (ftl.kind = \"page\", full or cached map) saves and loads one"
                )),
            ),
            None => Ok(()),
        }
    }

    fn validate_reliability(&self, r: &ReliabilityConfig, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| -> Result<()> {
            Err(Error::bad_config(Invalid::new(
                origin,
                format!("reliability.{field}"),
                p,
            )))
        };
        if self.nand.is_absent() {
            return err("pe_limit", says("[reliability] models NAND wear and errors; a PCM-only device has its endurance in [pcm]"));
        }
        if self.ftl.kind == FtlKind::None && self.zns.is_none() {
            return err("pe_limit", says("the reliability model works through the device FTL (bad-block retirement, read-only mode); a raw device (ftl.kind = \"none\") leaves that to its driver"));
        }
        if r.pe_limit == Some(0) {
            return err("pe_limit", got("0", "at least 1 cycle"));
        }
        let b = r.factory_bad_block_rate;
        if !(0.0..0.5).contains(&b) {
            return err(
                "factory_bad_block_rate",
                got(b, "a fraction from 0 up to 0.5"),
            );
        }
        for (f, v) in [
            ("rber_fresh", r.rber_fresh),
            ("rber_wear", r.rber_wear),
            ("rber_per_retention_year", r.rber_per_retention_year),
        ] {
            if !(0.0..=0.5).contains(&v) {
                return err(f, got(v, "a bit-error rate from 0 to 0.5"));
            }
        }
        if !(r.wear_exponent > 0.0 && r.wear_exponent <= 10.0) {
            return err(
                "wear_exponent",
                got(r.wear_exponent, "more than 0, at most 10"),
            );
        }
        // 1,000 years: beyond that no retention figure means anything.
        if !(0.0..=365_000.0).contains(&r.data_age_days) {
            return err("data_age_days", got(r.data_age_days, "0 to 365000 days"));
        }
        let unit = self.map_unit_bytes();
        let cw = r.ecc_codeword_bytes as u64;
        if cw < 256 || cw > unit || !unit.is_multiple_of(cw) {
            return err(
                "ecc_codeword_bytes",
                got(
                    cw,
                    format!("at least 256 bytes and a divisor of the {unit}-byte map unit"),
                ),
            );
        }
        if r.ecc_correctable_bits > 1024 {
            return err(
                "ecc_correctable_bits",
                got(r.ecc_correctable_bits, "0 to 1024"),
            );
        }
        if r.read_retry_max > 64 {
            return err("read_retry_max", got(r.read_retry_max, "0 to 64 steps"));
        }
        let f = r.read_retry_rber_factor;
        if !(f > 0.0 && f <= 1.0) {
            return err("read_retry_rber_factor", got(f, "more than 0, at most 1"));
        }
        Ok(())
    }

    /// The checks of `[nand]` and `[ftl]`.
    fn validate_nand(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
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
                return err(field, got("0", "at least 1"));
            }
        }
        let page = n.page_size.0;
        if page == 0 || !page.is_multiple_of(512) {
            return err(
                "nand.page_size",
                got(format!("{page} bytes"), "a positive multiple of 512"),
            );
        }
        let bits = n.cell.bits();
        if n.timing.read.len() != bits {
            return err(
                "nand.timing.read",
                got(
                    format!("{} entries", n.timing.read.len()),
                    format!(
                        "{bits} (one per page type of cell = \"{}\")",
                        format!("{:?}", n.cell).to_lowercase()
                    ),
                ),
            );
        }
        if n.timing.program.len() != bits {
            return err(
                "nand.timing.program",
                got(
                    format!("{} entries", n.timing.program.len()),
                    format!(
                        "{bits} (one per page type of cell = \"{}\")",
                        format!("{:?}", n.cell).to_lowercase()
                    ),
                ),
            );
        }
        if !n.bus.width_bits.is_multiple_of(8) {
            return err(
                "nand.bus.width_bits",
                got(n.bus.width_bits, "a multiple of 8"),
            );
        }
        if n.max_suspends_per_op == Some(0) {
            return err(
                "nand.max_suspends_per_op",
                got(
                    "0",
                    "at least 1 (turn suspension off with nand.suspend = false)",
                ),
            );
        }
        let unit = self.map_unit_bytes();
        if unit == 0 || !unit.is_multiple_of(512) || !page.is_multiple_of(unit) {
            return err(
                "ftl.map_unit",
                got(
                    format!("{unit} bytes"),
                    format!("a multiple of 512 that divides the page size ({page})"),
                ),
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
                return err("nand", says(format!("{units} mapping units (channels x packages_per_channel x dies_per_package x planes_per_die x blocks_per_plane x pages_per_block x units per page), expected fewer than 2^32 − 1 (what this build addresses: the FTL's 4-byte map entries); {fix}")));
            }
        }
        let op = self.ftl.over_provisioning;
        if !(0.0..0.9).contains(&op) {
            return err(
                "ftl.over_provisioning",
                got(op, "a fraction from 0 up to 0.9"),
            );
        }
        let gc = &self.ftl.gc;
        if self.ftl.kind != FtlKind::Page && (gc.background || gc.copyback) {
            let field = if gc.background {
                "ftl.gc.background"
            } else {
                "ftl.gc.copyback"
            };
            return err(field, says("set with a device that has no page-mapping FTL GC, expected ftl.kind = \"page\" (or remove it)"));
        }
        self.validate_streams(origin)?;
        if self.ftl.checkpoint_units == Some(0) {
            return err(
                "ftl.checkpoint_units",
                got("0", "at least 1 map unit between checkpoints"),
            );
        }
        self.validate_fdp(origin)?;
        if let Some(d) = self.ftl.superblock_planes {
            let planes = self.planes();
            if self.ftl.kind != FtlKind::Page || !self.ftl.placement.is_dynamic() {
                return err(
                    "ftl.superblock_planes",
                    got(
                        d,
                        "none unless ftl.kind = \"page\" with ftl.placement = \"dynamic\"",
                    ),
                );
            }
            if d == 0 || !planes.is_multiple_of(d as u64) {
                return err(
                    "ftl.superblock_planes",
                    got(
                        d,
                        format!("a divisor of the {planes} planes (1 up to {planes})"),
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
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        match (&self.pcm, self.nand.is_absent(), self.ftl.is_absent()) {
            (None, true, _) => {
                return err("nand", says("missing, expected a [nand] section (or a [pcm] section for a PCM-only device)"))
            }
            (None, _, true) => {
                return err("ftl", says("missing, expected an [ftl] section (or a [pcm] section for a PCM-only device)"))
            }
            (None, false, false) => self.validate_nand(origin)?,
            (Some(_), false, true) => {
                return err("ftl", says("missing, expected [ftl] with kind = \"none\" beside [nand] and [pcm] (the fusion device)"))
            }
            (Some(p), false, false) => {
                // The fusion device: raw NAND and PCM behind a thin firmware, the FTL on the host.
                if self.ftl.kind != FtlKind::None {
                    return err("ftl.kind", got(format!("\"{}\" with [nand] and [pcm]", self.ftl.kind.name()), "\"none\": the fusion device has no device FTL (the host runs it)"));
                }
                if let Err((field, msg)) = p.validate() {
                    return err(&field, says(msg));
                }
                self.validate_nand(origin)?;
                if let Some(Err((field, msg))) =
                    self.hfsl.as_ref().map(|h| h.validate(self.nand.page_size.0))
                {
                    return err(&field, says(msg));
                }
            }
            (Some(_), _, false) => {
                return err("ftl", says("given with [pcm] and no [nand], expected no [ftl]: a PCM-only device is updated in place and has no FTL (a fusion device has [nand] too)"))
            }
            (Some(p), true, true) => {
                if let Err((field, msg)) = p.validate() {
                    return err(&field, says(msg));
                }
            }
        }
        if let Some(z) = &self.zns {
            if self.medium() != super::Medium::Nand {
                return err("zns", says("given with [pcm], expected [zns] only on a NAND drive (zones are cut from its blocks)"));
            }
            if self.ftl.kind != FtlKind::None {
                return err("ftl.kind", got(format!("\"{}\" with [zns]", self.ftl.kind.name()), "\"none\": a zoned drive keeps no map and does no garbage collection (the host writes zones in order)"));
            }
            if let Err((field, msg)) = z.validate(&self.nand, self.map_unit_bytes()) {
                return err(field, says(msg));
            }
        }
        if let Some(named) = self.backend {
            let implied = self.backend_kind();
            if named != implied {
                return err("backend", says(format!(
                        "got \"{}\", but the sections describe a \"{}\" back end ({}); change `backend` or those sections",
                        named.name(),
                        implied.name(),
                        implied.what_sections_say()
                    )));
            }
        }
        if self.hfsl.is_some() && self.medium() != super::Medium::Fusion {
            return err("hfsl", says("given for a device that is not a fusion device, expected [hfsl] only beside [nand] (ftl.kind = \"none\") and [pcm]"));
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
                        got(v, format!("a number from 0 to {most}")),
                    );
                }
            }
        }
        self.validate_cache(origin)?;
        Ok(())
    }

    /// The host: its cores, clock, costs and request splitting.
    fn validate_host(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        // Per-core state is allocated up front: bound it by hosts that exist, not by u32.
        const MAX_CORES: u32 = 4096;
        if self.host.cores == 0 || self.host.cores > MAX_CORES {
            return err(
                "host.cores",
                got(self.host.cores, format!("1 to {MAX_CORES}")),
            );
        }
        if let Some(Rate(hz)) = self.host.clock {
            // Instruction counts are turned into picoseconds: 1 MHz to 1 THz keeps one
            // instruction between 1 ps and 1 µs.
            if !(1e6..=1e12).contains(&hz) {
                return err("host.clock", got(format!("{hz} Hz"), "1MHz to 1000GHz"));
            }
        }
        if let Err((field, msg)) = self.host.costs() {
            return err(field, says(msg));
        }
        if let Some(s) = self.host.max_sectors {
            // Linux's floor is one page (8 sectors of 512 bytes); the ceiling keeps a request
            // of max_sectors below 2^32 bytes, as the block layer's unsigned counts do.
            const MAX_SECTORS: u32 = 1 << 23;
            if !(8..=MAX_SECTORS).contains(&s) {
                return err(
                    "host.max_sectors",
                    got(
                        s,
                        format!("8 (one 4 KiB page) to {MAX_SECTORS} sectors of 512 bytes"),
                    ),
                );
            }
        }
        Ok(())
    }

    /// The controller: write protection, firmware costs, scheduling, read-ahead.
    fn validate_controller(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        for (i, r) in self.controller.write_protect.iter().enumerate() {
            let end = r.offset.0.checked_add(r.len.0);
            if r.len.0 == 0 || end.is_none_or(|e| e > self.logical_bytes()) {
                return err(
                    &format!("controller.write_protect[{i}]"),
                    got(
                        format!("offset {} length {}", r.offset.0, r.len.0),
                        format!(
                            "a non-empty range inside the {}-byte logical space",
                            self.logical_bytes()
                        ),
                    ),
                );
            }
        }
        let unit_cost = self.controller.ftl_unit_cost.0;
        if unit_cost > SimTime::from_us(1_000_000) {
            return err(
                "controller.ftl_unit_cost",
                got(
                    format!("{} us", unit_cost.as_us_f64()),
                    "at most 1 s per map unit",
                ),
            );
        }
        match (self.controller.scheduler, self.controller.write_deadline) {
            (Some(DieScheduler::Deadline), None) => {
                return err("controller.write_deadline", says("missing: scheduler = \"deadline\" needs the longest a write may wait behind reads (e.g. \"2ms\")"));
            }
            (Some(DieScheduler::Deadline), Some(d))
                if d.0 == SimTime::ZERO || d.0 > SimTime::from_us(60_000_000) =>
            {
                return err(
                    "controller.write_deadline",
                    got(
                        format!("{} us", d.0.as_us_f64()),
                        "more than 0 and at most 60 s",
                    ),
                );
            }
            (s, Some(_)) if s != Some(DieScheduler::Deadline) => {
                return err(
                    "controller.write_deadline",
                    says(format!(
                        "set with scheduler = \"{}\", expected only with scheduler = \"deadline\"",
                        s.unwrap_or_default().name()
                    )),
                );
            }
            _ => {}
        }
        if let Some(ra) = self.controller.read_ahead.filter(|b| b.0 > 0) {
            const MAX_READ_AHEAD: u64 = 64 << 20;
            if ra.0 > MAX_READ_AHEAD {
                return err(
                    "controller.read_ahead",
                    got(format!("{} bytes", ra.0), "at most 64 MiB"),
                );
            }
        }
        if self.controller.multiplane_window == 0 {
            return err("controller.multiplane_window", got("0", "at least 1"));
        }
        Ok(())
    }

    /// Preconditioning: the overwrites, the fill the medium allows, a saved state.
    fn validate_precondition(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let r = self.precondition.random_overwrite;
        if !(0.0..=100.0).contains(&r) {
            return err(
                "precondition.random_overwrite",
                got(r, "a fraction from 0 to 100"),
            );
        }
        if self.precondition.fill == FillMode::SteadyState && self.medium() == super::Medium::Pcm {
            // PCM is updated in place: no FTL whose blocks a steady state would lay out.
            return err(
                "precondition.fill",
                got(
                    "\"steady-state\" with a PCM-only device (updated in place: no FTL to age)",
                    "\"sequential\" or \"none\" (steady-state preconditioning is for the \
                     page-mapping and block-mapped FTLs; precondition.random_overwrite ages any FTL)",
                ),
            );
        }
        // Skewed overwrites: the page-mapping FTL's (ftl/steady.rs and Ftl::precondition_with).
        let page_ftl = matches!(self.backend_kind(), BackendKind::Page | BackendKind::Cached);
        if let Err((field, msg)) = (self.precondition).check_skew(self.logical_units(), page_ftl) {
            return err(field, says(msg));
        }
        if let Some(path) = &self.precondition.state {
            self.validate_state(path, origin)?;
        }
        Ok(())
    }

    /// The cache buffer `c`: its capacity, flushing and energy.
    fn validate_cache(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        if let Some(c) = &self.cache {
            let unit = self.map_unit_bytes();
            if c.map_reserved.0 >= c.capacity.0 || (c.capacity.0 - c.map_reserved.0) / unit < 2 {
                return err(
                    "cache.capacity",
                    got(
                        format!(
                            "{} with {} reserved for the map",
                            units::format_bytes(c.capacity.0),
                            units::format_bytes(c.map_reserved.0)
                        ),
                        format!("room for at least two {}-byte lines", unit),
                    ),
                );
            }
            // Lines are allocated up front and counted in u32; a buffer with more lines than the
            // drive has map units could never fill.
            let lines = (c.capacity.0 - c.map_reserved.0) / unit;
            let most = self.logical_units().min(u32::MAX as u64 - 1);
            if lines > most {
                return err("cache.capacity", got(format!("{} ({lines} lines of {unit} bytes)", units::format_bytes(c.capacity.0)), format!("at most {} ({most} lines: no more than the drive's {} of logical capacity)", units::format_bytes(most * unit + c.map_reserved.0), units::format_bytes(self.logical_bytes()))));
            }
            if ![8, 16, 32, 64].contains(&c.bus_bits) {
                return err("cache.bus_bits", got(c.bus_bits, "8, 16, 32 or 64"));
            }
            if !(0.0..=1.0).contains(&c.preemptive_window) {
                return err(
                    "cache.preemptive_window",
                    got(c.preemptive_window, "a fraction from 0 to 1"),
                );
            }
            let (hi, lo) = (c.flush_high_watermark, c.flush_low_watermark);
            if !(0.0..=1.0).contains(&hi) || !(0.0..=1.0).contains(&lo) || (hi > 0.0 && lo >= hi) {
                return err(
                    "cache.flush_high_watermark",
                    got(
                        format!("high {hi} and low {lo}"),
                        "0 ≤ low < high ≤ 1 (high 0 turns background flushing off)",
                    ),
                );
            }
            if c.max_background_flushes == 0 {
                return err("cache.max_background_flushes", got("0", "at least 1"));
            }
            let kind = self.backend_kind();
            if c.partial_lines == PartialLines::MergeAtFlush && kind != BackendKind::Page {
                // The merge read at flush time is built on the page FTL's whole map: the other
                // back ends put whole units into their lines (or have their own merge work).
                return err(
                    "cache.partial_lines",
                    got(
                        format!("\"merge-at-flush\" with the {} back end", kind.name()),
                        format!(
                            "\"read-first\" (merge-at-flush needs {})",
                            BackendKind::Page.what_sections_say()
                        ),
                    ),
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
                    return err(f, got(v, "a number of zero or more"));
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

mod ftl;
mod interface;
#[cfg(test)]
mod tests;
