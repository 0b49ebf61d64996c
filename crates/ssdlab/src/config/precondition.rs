//! `[precondition]`: the untimed fill and overwrites before a run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FillMode {
    None,
    /// Every logical unit written once, in order.
    Sequential,
    /// Filled, then as uniform random overwrites of single map units leave the drive once its
    /// write amplification is steady (the page-mapping FTL; `ftl/steady.rs`).
    SteadyState,
}

/// Bring the drive to a used state before the timed run, without timing (functional only).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PreconditionConfig {
    /// Write every logical page once, in order (`sequential`), or that and then bring the drive
    /// to the steady state of random overwrites (`steady-state`).
    pub fill: FillMode,
    /// Then overwrite this many logical pages at random, as a fraction of the logical capacity.
    pub random_overwrite: f64,
    /// Start from the drive state saved in this file (`ssdlab precondition --save`, see
    /// docs/state.md) instead of filling: `fill` and `random_overwrite` are what made it and
    /// are not run again. A path relative to the working directory. (Left out of the
    /// canonical JSON when not set, so that a config without it keeps its hash.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

impl PreconditionConfig {
    /// Whether preconditioning leaves data on the drive (a fill, overwrites, or a saved state).
    pub fn leaves_data(&self) -> bool {
        self.fill != FillMode::None || self.random_overwrite > 0.0 || self.state.is_some()
    }
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            fill: FillMode::None,
            random_overwrite: 0.0,
            state: None,
        }
    }
}
