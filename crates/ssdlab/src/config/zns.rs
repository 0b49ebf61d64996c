//! `[zns]`: a zoned NAND drive (NVMe Zoned Namespace Command Set, NVMe 2.0). Present, the
//! drive's back end is zoned (`SsdConfig::backend_kind`): the host writes each zone
//! sequentially at its write pointer and resets whole zones; the device keeps no map and does
//! no garbage collection (docs/zns.md).
//!
//! Sources of the defaults:
//! - `zone_capacity` = `zone_size`: the ZNS specification lets a zone's writable capacity
//!   (ZCAP) equal its size (ZSZE); QEMU's emulated ZNS namespace does the same unless told
//!   otherwise (`zoned.zone_capacity`, 0 meaning the zone size);
//! - `max_open_zones` = `max_active_zones` = 0, no limit: the specification's encoding of "no
//!   limit" (MOR and MAR of 0xFFFFFFFF, i.e. a zero-based count of all zones) and QEMU's
//!   defaults (`zoned.max_open`, `zoned.max_active` of 0);
//! - `layout = "striped"`: assumed. It is the layout that lets one zone write at the whole
//!   drive's speed (every die holds a part of it); `"die"` and `"channel"` isolate zones from
//!   each other, the trade-off ConfZNS (Song et al., 2023) measures;
//! - `finish = "mark"`: QEMU's and NVMeVirt's emulations finish a zone by its state and write
//!   pointer alone, with no media work; `"fill"` programs the rest of the zone's capacity, as a
//!   drive that may not leave a block partly programmed must.

use super::units::Bytes;
use super::NandConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which parallel units of the flash a zone's blocks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneLayout {
    /// A zone's blocks are on one die (a block of each of its planes per erase block set);
    /// consecutive zones go to consecutive dies.
    Die,
    /// A zone's blocks are on the dies of one channel; consecutive zones go to consecutive
    /// channels.
    Channel,
    /// A zone's blocks are on every plane of the drive: one zone writes on all dies at once.
    Striped,
}

impl ZoneLayout {
    pub fn name(self) -> &'static str {
        match self {
            ZoneLayout::Die => "die",
            ZoneLayout::Channel => "channel",
            ZoneLayout::Striped => "striped",
        }
    }
}

/// What finishing a partly written zone costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FinishMode {
    /// Only the zone's state and write pointer change: no media work.
    Mark,
    /// The rest of the zone's capacity is programmed (with filler data), timed by the media.
    Fill,
}

impl FinishMode {
    pub fn name(self) -> &'static str {
        match self {
            FinishMode::Mark => "mark",
            FinishMode::Fill => "fill",
        }
    }
}

fn default_layout() -> ZoneLayout {
    ZoneLayout::Striped
}

fn default_finish() -> FinishMode {
    FinishMode::Mark
}

/// A zoned namespace over the drive's NAND (`ftl.kind = "none"`: the device has no map of its
/// own). Its logical space is the whole NAND, cut into zones of `zone_size`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ZnsConfig {
    /// Bytes of logical space per zone (ZSZE): a multiple of the layout's erase block set (one
    /// block of each plane the layout gives a zone), and the drive a whole number of zones.
    pub zone_size: Bytes,
    /// Bytes of each zone the host may write (ZCAP), at most `zone_size`; absent: `zone_size`.
    /// The flash behind the rest of the zone is left unwritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_capacity: Option<Bytes>,
    /// Zones that may be open (implicitly or explicitly) at once; 0: no limit.
    #[serde(default)]
    pub max_open_zones: u32,
    /// Zones that may be active (open or closed) at once; 0: no limit. At least
    /// `max_open_zones` when both are set.
    #[serde(default)]
    pub max_active_zones: u32,
    /// Which parallel units a zone's blocks come from: `"die"`, `"channel"` or `"striped"`.
    #[serde(default = "default_layout")]
    pub layout: ZoneLayout,
    /// What finishing a partly written zone costs: `"mark"` (its state only) or `"fill"`
    /// (programming the rest of its capacity).
    #[serde(default = "default_finish")]
    pub finish: FinishMode,
}

impl ZnsConfig {
    /// The writable bytes of each zone.
    pub fn capacity_bytes(&self) -> u64 {
        self.zone_capacity.map_or(self.zone_size.0, |b| b.0)
    }

    /// Planes of one erase block set of the layout over `nand`: the planes a zone's blocks
    /// come from (saturating; `[nand]` is checked first).
    pub fn set_planes(&self, nand: &NandConfig) -> u64 {
        let die = nand.planes_per_die as u64;
        let channel = die.saturating_mul(
            (nand.packages_per_channel as u64).saturating_mul(nand.dies_per_package as u64),
        );
        match self.layout {
            ZoneLayout::Die => die,
            ZoneLayout::Channel => channel,
            ZoneLayout::Striped => channel.saturating_mul(nand.channels as u64),
        }
    }

    /// The checks of `[zns]` against the NAND it cuts into zones and the logical block (the
    /// map unit): Err((field, what was wrong and what was expected)).
    pub fn validate(
        &self,
        nand: &NandConfig,
        unit_bytes: u64,
    ) -> std::result::Result<(), (&'static str, String)> {
        let size = self.zone_size.0;
        let block = nand.page_size.0.saturating_mul(nand.pages_per_block as u64);
        let planes = self.set_planes(nand);
        let set = block.saturating_mul(planes);
        let layout = self.layout.name();
        if size == 0 || set == 0 || !size.is_multiple_of(set) {
            return Err((
                "zns.zone_size",
                format!(
                    "got {size} bytes, expected a positive multiple of {set} bytes, the {layout} \
                     layout's erase block set ({planes} planes × one {block}-byte block)"
                ),
            ));
        }
        // Blocks each plane of a zone's set gives it: each plane's blocks must make whole
        // zones, so that every zone has its full set.
        let per_plane = size / set;
        if !(nand.blocks_per_plane as u64).is_multiple_of(per_plane) {
            return Err((
                "zns.zone_size",
                format!(
                    "got {size} bytes, expected the drive to hold a whole number of zones: a \
                     zone takes {per_plane} blocks of each of its {planes} planes ({layout} \
                     layout), which does not divide the {} blocks of a plane",
                    nand.blocks_per_plane
                ),
            ));
        }
        let cap = self.capacity_bytes();
        if cap == 0 || cap > size || !cap.is_multiple_of(unit_bytes) {
            return Err((
                "zns.zone_capacity",
                format!(
                    "got {cap} bytes, expected a positive multiple of the {unit_bytes}-byte \
                     logical block of at most zone_size ({size} bytes)"
                ),
            ));
        }
        let (open, active) = (self.max_open_zones, self.max_active_zones);
        if active != 0 && (open == 0 || open > active) {
            return Err((
                "zns.max_open_zones",
                format!(
                    "got {open}{}, expected 1 to max_active_zones ({active}): an open zone is \
                     active too",
                    if open == 0 { " (no limit)" } else { "" }
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{BackendKind, SsdConfig};

    /// small-tlc as a zoned drive: 16 planes of 128 blocks of 512 KiB (1 GiB), 4 KiB blocks.
    fn zoned(extra: &[&str]) -> crate::error::Result<SsdConfig> {
        let mut ov: Vec<String> = [
            "ftl.kind=\"none\"",
            "ftl.over_provisioning=0.0",
            "precondition.fill=\"none\"",
            "precondition.random_overwrite=0.0",
            "zns.zone_size=\"8MiB\"",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        ov.extend(extra.iter().map(|s| s.to_string()));
        SsdConfig::resolve("small-tlc", &ov)
    }

    fn refused(extra: &[&str]) -> String {
        match zoned(extra) {
            Ok(_) => panic!("{extra:?} accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_zns_section_makes_the_drive_zoned_with_its_defaults() {
        let cfg = zoned(&[]).unwrap();
        assert_eq!(cfg.backend_kind(), BackendKind::Zoned);
        let z = cfg.zns.as_ref().unwrap();
        assert_eq!(z.capacity_bytes(), 8 << 20);
        assert_eq!((z.max_open_zones, z.max_active_zones), (0, 0));
        assert_eq!(z.layout.name(), "striped");
        assert_eq!(z.finish.name(), "mark");
        // The whole NAND is the logical space: 128 zones of 8 MiB.
        assert_eq!(cfg.logical_bytes(), 1 << 30);
        // Absent, nothing changes: the section is not written out (hashes stay).
        let plain = SsdConfig::resolve("small-tlc", &[]).unwrap();
        assert!(!plain.to_toml().contains("zns"));
        assert!(cfg.to_toml().contains("[zns]"));
    }

    #[test]
    fn every_layout_takes_a_zone_size_of_whole_sets() {
        // Die: 2 planes × 512 KiB; channel: 2 dies of those; striped: all 16 planes.
        for (layout, size) in [("die", "1MiB"), ("channel", "2MiB"), ("striped", "8MiB")] {
            let l = format!("zns.layout=\"{layout}\"");
            let s = format!("zns.zone_size=\"{size}\"");
            assert!(zoned(&[&l, &s]).is_ok(), "{layout} {size}");
        }
        let e = refused(&["zns.layout=\"channel\"", "zns.zone_size=\"1MiB\""]);
        assert!(e.contains("field `zns.zone_size`"), "{e}");
        assert!(
            e.contains("2097152 bytes, the channel layout's erase block set"),
            "{e}"
        );
    }

    #[test]
    fn bad_zone_settings_are_one_line_naming_the_field() {
        let cases: [(&[&str], &str, &str); 7] = [
            (
                &["zns.zone_size=\"12MiB\""],
                "zns.zone_size",
                "multiple of 8388608",
            ),
            // 3 blocks of each plane do not divide 128.
            (
                &["zns.layout=\"die\"", "zns.zone_size=\"3MiB\""],
                "zns.zone_size",
                "whole number of zones",
            ),
            (
                &["zns.zone_capacity=\"9MiB\""],
                "zns.zone_capacity",
                "at most zone_size",
            ),
            (
                &["zns.zone_capacity=\"6KiB\""],
                "zns.zone_capacity",
                "4096-byte logical block",
            ),
            (
                &["zns.max_open_zones=9", "zns.max_active_zones=8"],
                "zns.max_open_zones",
                "expected 1 to max_active_zones (8)",
            ),
            (
                &["zns.max_active_zones=8"],
                "zns.max_open_zones",
                "got 0 (no limit)",
            ),
            (
                &["ftl.kind=\"page\"", "ftl.over_provisioning=0.125"],
                "ftl.kind",
                "expected \"none\"",
            ),
        ];
        for (ov, field, expect) in cases {
            let e = refused(ov);
            assert!(e.contains(&format!("field `{field}`")), "{ov:?}: {e}");
            assert!(e.contains(expect), "{ov:?}: {e}");
            assert!(!e.contains('\n'), "{ov:?}: one line: {e}");
        }
        let e = refused(&["zns.layout=\"diagonal\""]);
        assert!(e.contains("zns.layout"), "{e}");
    }

    #[test]
    fn capacity_below_size_and_limits_are_kept() {
        let cfg = zoned(&[
            "zns.zone_capacity=\"6MiB\"",
            "zns.max_open_zones=4",
            "zns.max_active_zones=6",
            "zns.finish=\"fill\"",
        ])
        .unwrap();
        let z = cfg.zns.unwrap();
        assert_eq!(z.capacity_bytes(), 6 << 20);
        assert_eq!((z.max_open_zones, z.max_active_zones), (4, 6));
        assert_eq!(z.finish.name(), "fill");
    }
}
