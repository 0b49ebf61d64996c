//! The thin firmware of seed 002's fusion device (`[nand]` with `ftl.kind = "none"`, and
//! `[pcm]`): raw NAND and PCM behind one host interface, no device FTL.
//!
//! One device exposes two physical spaces; a request names its space with `Flags::PCM`
//! (`request::Space`): without it, the NAND by physical unit as a raw device is addressed
//! (`ctrl::raw`: byte offset = unit × map unit), with it, the PCM by byte address
//! (`media::pcm`). The firmware does what the seed's Fig. 7 gives it and no more:
//!
//! - command distribution: every command takes `controller.cmd_overhead` on the one firmware core
//!   (`Hil::accept`), then goes to the NAND side (`Hil::dispatch`, the raw firmware's checks) or
//!   to the PCM controller (`PcmCtrl::dispatch`) by its space (`Device::handle`);
//! - interrupts: completions go up through the host interface as on any device;
//! - channel control: each side's channels are its own (`Fil`, `PcmMedia`);
//! - hardware information the host reads (here, [`HardwareInfo`]): channel and chip counts,
//!   the geometry, and per-block P/E counts from the raw firmware.
//!
//! The two controllers are the ones the single-medium devices use; this module adds only the
//! address check of each space and the hardware information.

use crate::config::SsdConfig;
use crate::request::Op;
use crate::request::Space;

/// What the firmware publishes for the host (the seed's "fixed area of BRAM"): the shape of
/// both sides. Per-block P/E counts are read live from `RawNand::erase_counts` (`Device::hil().raw()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HardwareInfo {
    pub nand_channels: u32,
    /// NAND chips (packages) per channel.
    pub nand_chips_per_channel: u32,
    pub nand_page_bytes: u64,
    pub nand_pages_per_block: u32,
    pub nand_blocks: u32,
    /// Bytes of the NAND space (every block; a raw device has no over-provisioning).
    pub nand_bytes: u64,
    pub pcm_channels: u32,
    pub pcm_chips_per_channel: u32,
    /// Bytes of the PCM space.
    pub pcm_bytes: u64,
    /// The PCM line: the access each channel serves in one piece.
    pub pcm_line_bytes: u64,
    /// The smallest PCM access (a write of fewer bytes is widened to it).
    pub pcm_min_access_bytes: u64,
}

impl HardwareInfo {
    /// The information of the fusion device `cfg` describes.
    pub fn of(cfg: &SsdConfig) -> Option<HardwareInfo> {
        let p = cfg.pcm.as_ref().filter(|_| !cfg.nand.is_absent())?;
        let n = &cfg.nand;
        let blocks = cfg.planes() * n.blocks_per_plane as u64;
        Some(HardwareInfo {
            nand_channels: n.channels,
            nand_chips_per_channel: n.packages_per_channel,
            nand_page_bytes: n.page_size.0,
            nand_pages_per_block: n.pages_per_block,
            nand_blocks: blocks as u32,
            nand_bytes: cfg.logical_bytes(),
            pcm_channels: p.channels,
            pcm_chips_per_channel: p.chips_per_channel,
            pcm_bytes: p.logical_bytes(),
            pcm_line_bytes: p.line.0,
            pcm_min_access_bytes: p.min_access.0,
        })
    }

    /// Bytes of one NAND block.
    pub fn nand_block_bytes(&self) -> u64 {
        self.nand_page_bytes * self.nand_pages_per_block as u64
    }
}

/// Check a request against its space: it must end inside it, and an erase is for NAND blocks.
/// `nand_bytes` is the device's own space (a fusion device's NAND; a single-medium device's
/// whole space), `pcm_bytes` the PCM space of a fusion device. Returns the one-line refusal.
pub fn check_space(
    space: Space,
    op: Op,
    offset: u64,
    len: u64,
    nand_bytes: u64,
    pcm_bytes: Option<u64>,
) -> Result<(), String> {
    let (cap, name) = match (space, pcm_bytes) {
        (Space::Nand, _) => (nand_bytes, "the device's"),
        (Space::Pcm, Some(b)) => (b, "the PCM space's"),
        (Space::Pcm, None) => {
            return Err(format!(
                "{} request at byte {offset}: flagged PCM, but only a fusion device ([nand] and [pcm]) has a PCM space",
                op.name()
            ))
        }
    };
    if offset.checked_add(len).is_none_or(|end| end > cap) {
        return Err(format!(
            "request at byte {offset} of {len} bytes ends beyond {name} {cap} bytes"
        ));
    }
    if space == Space::Pcm && op == Op::Erase {
        return Err(format!(
            "erase at PCM byte {offset}: PCM is updated in place; erases are for NAND blocks"
        ));
    }
    Ok(())
}
