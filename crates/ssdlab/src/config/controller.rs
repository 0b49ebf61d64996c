//! `[controller]`: the controller's firmware costs and multi-plane gathering.

use super::units::Dur;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// Firmware time per command on the controller's HIL core (parse, split, map look-up).
    pub cmd_overhead: Dur,
    /// How far a die scans its queue for partners of a multi-plane operation.
    pub multiplane_window: u32,
    /// Firmware completes reads and writes at once, without the FTL or the media: what is left
    /// is the protocol (seed 000 §6.2 measures protocol overhead this way).
    pub skip_media: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            cmd_overhead: Dur(crate::sim::SimTime::from_ns(500)),
            multiplane_window: 16,
            skip_media: false,
        }
    }
}
