//! `[meta]`: what a config is and where its numbers come from.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Where the numbers come from (a seed file, a datasheet, a standard).
    #[serde(default)]
    pub source: String,
}
