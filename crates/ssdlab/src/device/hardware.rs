//! What a fusion device publishes for the host that drives it (seed 002's hardware
//! information): part of the device's boundary, so that a driver reads it from the device and
//! never from the controller.

use crate::config::SsdConfig;

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
