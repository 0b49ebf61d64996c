//! `[controller]`: the controller's firmware costs and multi-plane gathering.

use super::units::{Bytes, Dur};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// Firmware time per command on the controller's HIL core (parse, split, map look-up).
    pub cmd_overhead: Dur,
    /// Firmware time per map unit a command covers on a device with an FTL, on the same core
    /// after `cmd_overhead`: the FTL's address translation, allocation and the command's
    /// redistribution into unit operations (seed 002 §3.2.2 lists this work for a soft core).
    /// GC pays it too, per page moved and block erased, charged as the core takes its next
    /// command. 0 (the default): folded into `cmd_overhead`. A raw device has no FTL: not
    /// charged.
    pub ftl_unit_cost: Dur,
    /// How far a die scans its queue for partners of a multi-plane operation.
    pub multiplane_window: u32,
    /// Firmware completes reads and writes at once, without the FTL or the media: what is left
    /// is the protocol (seed 000 §6.2 measures protocol overhead this way).
    pub skip_media: bool,
    /// Byte ranges of the logical space the firmware refuses to change: a write or trim that
    /// touches one fails (NVMe "Namespace is Write Protected", EPERM in the live server) and
    /// changes nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_protect: Vec<ProtectedRange>,
}

/// `offset` bytes in, `len` bytes long.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtectedRange {
    pub offset: Bytes,
    pub len: Bytes,
}

impl ProtectedRange {
    /// Whether `offset .. offset + len` touches this range.
    pub fn overlaps(&self, offset: u64, len: u64) -> bool {
        let end = offset.saturating_add(len.max(1));
        offset < self.offset.0.saturating_add(self.len.0) && self.offset.0 < end
    }
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            cmd_overhead: Dur(crate::sim::SimTime::from_ns(500)),
            ftl_unit_cost: Dur(crate::sim::SimTime::ZERO),
            multiplane_window: 16,
            skip_media: false,
            write_protect: Vec::new(),
        }
    }
}
