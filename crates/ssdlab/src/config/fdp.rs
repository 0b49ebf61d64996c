//! `[fdp]`: Flexible Data Placement (NVMe TP4146, part of NVMe 2.1) over the page-mapping FTL.
//! Present, the drive has reclaim unit handles the host names by placement identifier: each
//! handle writes into reclaim units (RUs) of its own, and GC keeps a handle's data in that
//! handle's RUs (docs/fdp.md). The handles ride on the FTL's write streams: a write's stream id
//! is its placement identifier, handle h is stream h.
//!
//! Sources of the defaults:
//! - `handles = 1`: the least the specification allows (a configuration has at least one
//!   reclaim unit handle; a write with no placement directive uses placement handle 0);
//! - `reclaim_groups = 1`: QEMU's emulated FDP subsystem has one reclaim group unless told
//!   otherwise (`fdp.nrg`, default 1);
//! - `ru_bytes`: a superblock of the reclaim group, one block on each of its planes. A reclaim
//!   unit is the unit the device erases together; drives that ship FDP make it a superblock
//!   (Samsung's PM9D3 reports an RU of several GB, a block of every die), and the page FTL
//!   already stripes its host writes over a superblock (`ftl.superblock_planes`);
//! - `ruh_type = "persistently-isolated"`: assumed, the isolation issue 42 asks for (GC never
//!   mixes two handles' data). `"initially-isolated"` lets GC gather every handle's moved data
//!   in shared blocks, as the specification allows for that type.

use super::units::Bytes;
use super::NandConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Reclaim Unit Handle Type (RUHT in the FDP Configurations log page).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuhType {
    /// RUHT 1h: a handle's host writes are isolated from other handles'; GC may move the data
    /// of several handles into one reclaim unit.
    InitiallyIsolated,
    /// RUHT 2h: a handle's data stays isolated through GC too.
    PersistentlyIsolated,
}

impl RuhType {
    pub fn name(self) -> &'static str {
        match self {
            RuhType::InitiallyIsolated => "initially-isolated",
            RuhType::PersistentlyIsolated => "persistently-isolated",
        }
    }

    /// The RUHT code of the FDP Configurations log page.
    pub fn code(self) -> u8 {
        match self {
            RuhType::InitiallyIsolated => 1,
            RuhType::PersistentlyIsolated => 2,
        }
    }
}

/// Planes of the drive (saturating, as `SsdConfig::planes`).
fn planes_of(nand: &NandConfig) -> u64 {
    [
        nand.packages_per_channel,
        nand.dies_per_package,
        nand.planes_per_die,
    ]
    .iter()
    .fold(nand.channels as u64, |a, &x| a.saturating_mul(x as u64))
}

/// Bytes of one erase block (saturating).
fn block_of(nand: &NandConfig) -> u64 {
    nand.page_size.0.saturating_mul(nand.pages_per_block as u64)
}

fn one() -> u32 {
    1
}

fn default_ruh_type() -> RuhType {
    RuhType::PersistentlyIsolated
}

/// Flexible Data Placement over the page-mapping FTL (`ftl.kind = "page"`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FdpConfig {
    /// Reclaim unit handles, each a placement handle of the namespace: placement identifiers
    /// 0 up to `handles − 1`. Each keeps an open block on every plane (and, persistently
    /// isolated, a GC block), which the over-provisioning must hold.
    #[serde(default = "one")]
    pub handles: u32,
    /// Reclaim groups: the planes, in the FTL's allocation order, cut into this many equal
    /// shares. A handle has a reclaim unit open in each; the device picks the group of each
    /// write (the placement identifier carries no group).
    #[serde(default = "one")]
    pub reclaim_groups: u32,
    /// Bytes of a reclaim unit (RUNS): whole blocks, one on each of a number of planes that
    /// divides a reclaim group's. Absent: a superblock of the reclaim group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ru_bytes: Option<Bytes>,
    /// `"persistently-isolated"` (GC keeps each handle's data apart) or
    /// `"initially-isolated"` (GC may mix the handles' moved data).
    #[serde(default = "default_ruh_type")]
    pub ruh_type: RuhType,
}

impl FdpConfig {
    /// Planes of one reclaim group (saturating; `[nand]` is checked first).
    pub fn group_planes(&self, nand: &NandConfig) -> u64 {
        planes_of(nand) / (self.reclaim_groups.max(1) as u64)
    }

    /// Bytes of a reclaim unit: `ru_bytes`, or the reclaim group's superblock.
    pub fn ru_bytes(&self, nand: &NandConfig) -> u64 {
        self.ru_bytes.map_or_else(
            || block_of(nand).saturating_mul(self.group_planes(nand)),
            |b| b.0,
        )
    }

    /// Planes of one reclaim unit (one block on each): the FTL's superblock.
    pub fn ru_planes(&self, nand: &NandConfig) -> u64 {
        self.ru_bytes(nand) / block_of(nand).max(1)
    }

    /// Whether GC keeps each handle's moved data in blocks of its own.
    pub fn persistent(&self) -> bool {
        self.ruh_type == RuhType::PersistentlyIsolated
    }

    /// The checks of `[fdp]` against the NAND and the room the over-provisioning leaves per
    /// plane (`spare_blocks`, of which `threshold_blocks` are GC's free-block threshold):
    /// Err((field, what was wrong and what was expected)).
    pub fn validate(
        &self,
        nand: &NandConfig,
        spare_blocks: u64,
        threshold_blocks: u64,
    ) -> std::result::Result<(), (&'static str, String)> {
        let planes = planes_of(nand);
        let max = crate::config::MAX_STREAMS;
        if self.handles == 0 || self.handles > max {
            return Err((
                "fdp.handles",
                format!("got {}, expected 1 to {max}", self.handles),
            ));
        }
        let groups = self.reclaim_groups as u64;
        if groups == 0 || !planes.is_multiple_of(groups) {
            return Err((
                "fdp.reclaim_groups",
                format!(
                    "got {groups}, expected a divisor of the drive's {planes} planes (a reclaim \
                     group is an equal share of them)"
                ),
            ));
        }
        let block = block_of(nand);
        let group_planes = planes / groups;
        let ru = self.ru_bytes(nand);
        if ru == 0 || !ru.is_multiple_of(block) || !group_planes.is_multiple_of(ru / block) {
            return Err((
                "fdp.ru_bytes",
                format!(
                    "got {ru} bytes, expected whole {block}-byte blocks, one on each of a number \
                     of planes dividing the {group_planes} planes of a reclaim group (at most \
                     {} bytes, the group's superblock)",
                    block.saturating_mul(group_planes)
                ),
            ));
        }
        // Each handle keeps a host block open on every plane, and persistently isolated one
        // GC block besides (initially isolated: one GC block shared by all).
        let h = self.handles as u64;
        let open = if self.persistent() { 2 * h } else { h + 1 };
        if threshold_blocks + open > spare_blocks {
            let room = spare_blocks.saturating_sub(threshold_blocks);
            let most = if self.persistent() {
                room / 2
            } else {
                room.saturating_sub(1)
            };
            return Err((
                "fdp.handles",
                format!(
                    "got {h}, expected at most {most}: each {} handle keeps {} open on every \
                     plane, and the over-provisioning leaves {spare_blocks} spare blocks per \
                     plane, {threshold_blocks} of them GC's free-block threshold{}",
                    self.ruh_type.name(),
                    if self.persistent() {
                        "a host block and a GC block"
                    } else {
                        "a host block (GC one block for all)"
                    },
                    " (raise ftl.over_provisioning or nand.blocks_per_plane for more)"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::SsdConfig;

    /// small-tlc (16 planes of 128 blocks of 512 KiB, over-provisioning 0.125: 16 spare blocks
    /// per plane, 4 of them GC's threshold) with `[fdp]` set by `extra`.
    fn fdp(extra: &[&str]) -> crate::error::Result<SsdConfig> {
        let mut ov = vec!["fdp.handles=2".to_string()];
        ov.extend(extra.iter().map(|s| s.to_string()));
        SsdConfig::resolve("small-tlc", &ov)
    }

    fn refused(extra: &[&str]) -> String {
        match fdp(extra) {
            Ok(_) => panic!("{extra:?} accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn an_fdp_section_keeps_the_page_back_end_with_its_defaults() {
        let cfg = fdp(&[]).unwrap();
        assert_eq!(cfg.backend_kind(), crate::config::BackendKind::Page);
        let f = cfg.fdp.as_ref().unwrap();
        assert_eq!((f.handles, f.reclaim_groups), (2, 1));
        assert_eq!(f.ruh_type.name(), "persistently-isolated");
        // The superblock: 16 planes × 512 KiB.
        assert_eq!(f.ru_bytes(&cfg.nand), 16 * 512 * 1024);
        assert_eq!(cfg.superblock_planes(), Some(16));
        assert_eq!(cfg.write_streams(), 2);
        assert!(cfg.gc_per_stream());
        assert!(cfg.to_toml().contains("[fdp]"));
        let plain = SsdConfig::resolve("small-tlc", &[]).unwrap();
        assert!(!plain.to_toml().contains("fdp"));
        let groups = fdp(&["fdp.reclaim_groups=4", "fdp.ru_bytes=\"1MiB\""]).unwrap();
        assert_eq!(groups.superblock_planes(), Some(2));
    }

    #[test]
    fn bad_fdp_settings_are_one_line_naming_the_field() {
        let cases: [(&[&str], &str, &str); 10] = [
            (&["fdp.handles=0"], "fdp.handles", "expected 1 to 255"),
            // 12 blocks per plane beyond the threshold: 6 persistently isolated handles (a
            // host and a GC block each), 11 initially isolated (and GC's shared block).
            (&["fdp.handles=7"], "fdp.handles", "expected at most 6"),
            (
                &["fdp.handles=12", "fdp.ruh_type=\"initially-isolated\""],
                "fdp.handles",
                "expected at most 11",
            ),
            (
                &["fdp.reclaim_groups=3"],
                "fdp.reclaim_groups",
                "divisor of the drive's 16 planes",
            ),
            (
                &["fdp.ru_bytes=\"768KiB\""],
                "fdp.ru_bytes",
                "whole 524288-byte blocks",
            ),
            // 3 blocks do not divide the 16 planes.
            (
                &["fdp.ru_bytes=\"1536KiB\""],
                "fdp.ru_bytes",
                "dividing the 16 planes",
            ),
            (
                &["fdp.reclaim_groups=4", "fdp.ru_bytes=\"8MiB\""],
                "fdp.ru_bytes",
                "dividing the 4 planes of a reclaim group",
            ),
            (
                &["ftl.streams=2"],
                "ftl.streams",
                "expected 1: FDP's reclaim unit handles",
            ),
            (&["ftl.kind=\"block\""], "ftl.kind", "expected \"page\""),
            (
                &["interface.kind=\"sata\""],
                "interface.kind",
                "expected \"nvme\": Flexible Data Placement is an NVMe directive",
            ),
        ];
        for (ov, field, expect) in cases {
            let e = refused(ov);
            assert!(e.contains(&format!("field `{field}`")), "{ov:?}: {e}");
            assert!(e.contains(expect), "{ov:?}: {e}");
            assert!(!e.contains('\n'), "{ov:?}: one line: {e}");
        }
        let e = refused(&["fdp.ruh_type=\"isolated\""]);
        assert!(e.contains("fdp.ruh_type"), "{e}");
    }
}
