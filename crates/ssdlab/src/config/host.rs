//! `[host]`: the host's cores and the CPU cost of its I/O stack.

use super::units::Dur;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// CPU cores running the I/O stack; job instance i runs on core i mod cores.
    pub cores: u32,
    /// CPU time to submit one command (block layer, driver, SQ entry, doorbell write).
    pub submit_cost: Dur,
    /// CPU time to complete one command (interrupt handler, CQ entry, head doorbell, wake-up).
    pub complete_cost: Dur,
    /// With polling: CPU time of one poll that finds a completion.
    pub poll_cost: Dur,
}

impl Default for HostConfig {
    fn default() -> Self {
        use crate::sim::SimTime;
        HostConfig {
            cores: 4,
            submit_cost: Dur(SimTime::from_ns(1_500)),
            complete_cost: Dur(SimTime::from_ns(2_000)),
            poll_cost: Dur(SimTime::from_ns(300)),
        }
    }
}
