//! `[precondition]`: the untimed fill and overwrites before a run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FillMode {
    None,
    Sequential,
}

/// Bring the drive to a used state before the timed run, without timing (functional only).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PreconditionConfig {
    /// Write every logical page once, in order.
    pub fill: FillMode,
    /// Then overwrite this many logical pages at random, as a fraction of the logical capacity.
    pub random_overwrite: f64,
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            fill: FillMode::None,
            random_overwrite: 0.0,
        }
    }
}
