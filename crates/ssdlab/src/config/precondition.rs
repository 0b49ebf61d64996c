//! `[precondition]`: the untimed fill and overwrites before a run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FillMode {
    None,
    /// Every logical unit written once, in order.
    Sequential,
    /// Filled, then as random overwrites of single map units (uniform, or skewed by
    /// `hot_fraction`) leave the drive once its write amplification is steady (the
    /// page-mapping FTL; `ftl/steady.rs`).
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
    /// A skew of the random overwrites (the steady state's and `random_overwrite`'s): the
    /// first `hot_fraction` of the logical space (0 < f < 1) takes `hot_write_fraction` of
    /// them, uniformly within each part, as a job's `distribution = "zoned:W/H:..."` does
    /// (80/20: `hot_fraction = 0.2`, `hot_write_fraction = 0.8`). Given together; absent:
    /// uniform. (Left out of the canonical JSON when not set, so that a config without it keeps
    /// its hash.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_fraction: Option<f64>,
    /// The fraction of the random overwrites (0 < f < 1) that go to the `hot_fraction`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_write_fraction: Option<f64>,
    /// Start from the drive state saved in this file (`ssdlab precondition --save`, see
    /// docs/state.md) instead of filling: `fill` and `random_overwrite` are what made it and
    /// are not run again. A path relative to the working directory. (Left out of the
    /// canonical JSON when not set, so that a config without it keeps its hash.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// [`PreconditionConfig::hot_fraction`] and [`PreconditionConfig::hot_write_fraction`],
/// checked: both in (0, 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HotCold {
    /// The share of the logical space that is hot: its first units.
    pub hot_fraction: f64,
    /// The share of the random overwrites that go to the hot units.
    pub hot_write_fraction: f64,
}

impl HotCold {
    /// The hot units of a logical space of `logical` units (the first of them).
    pub fn hot_units(&self, logical: u64) -> u64 {
        (logical as f64 * self.hot_fraction).floor() as u64
    }
}

impl PreconditionConfig {
    /// Whether preconditioning leaves data on the drive (a fill, overwrites, or a saved state).
    pub fn leaves_data(&self) -> bool {
        self.fill != FillMode::None || self.random_overwrite > 0.0 || self.state.is_some()
    }

    /// Whether preconditioning overwrites at random (the steady state's or `random_overwrite`).
    pub fn overwrites(&self) -> bool {
        self.fill == FillMode::SteadyState || self.random_overwrite > 0.0
    }

    /// The skew of the random overwrites (None: uniform). Validation has checked the fields
    /// ([`PreconditionConfig::check_skew`]).
    pub fn hot_cold(&self) -> Option<HotCold> {
        Some(HotCold {
            hot_fraction: self.hot_fraction?,
            hot_write_fraction: self.hot_write_fraction?,
        })
    }

    /// The skew's fields against what they must be, for a drive of `logical` units that
    /// `overwrites_here` can overwrite at random with a skew (the page-mapping FTL): the
    /// message (field, value, what was expected) when they are not.
    pub fn check_skew(
        &self,
        logical: u64,
        overwrites_here: bool,
    ) -> std::result::Result<(), (&'static str, String)> {
        let fields = [
            ("precondition.hot_fraction", self.hot_fraction),
            ("precondition.hot_write_fraction", self.hot_write_fraction),
        ];
        for (field, v) in fields {
            if let Some(v) = v {
                // NaN fails the comparison too.
                if !(v > 0.0 && v < 1.0) {
                    return Err((
                        field,
                        format!("got {v}, expected a fraction strictly between 0 and 1"),
                    ));
                }
            }
        }
        let missing = |field: &'static str, beside: &str| {
            Err((
                field,
                format!(
                    "not set, expected it beside {beside} (a skew is both: the hot share of the \
                     logical space and of the overwrites, e.g. 0.2 and 0.8 for 80/20)"
                ),
            ))
        };
        let (field, given) = match (self.hot_fraction, self.hot_write_fraction) {
            (None, None) => return Ok(()),
            (Some(_), None) => {
                return missing(
                    "precondition.hot_write_fraction",
                    "precondition.hot_fraction",
                )
            }
            (None, Some(_)) => {
                return missing(
                    "precondition.hot_fraction",
                    "precondition.hot_write_fraction",
                )
            }
            (Some(h), Some(_)) => ("precondition.hot_fraction", h),
        };
        if !self.overwrites() {
            return Err((
                field,
                format!(
                    "got {given}, but nothing overwrites at random to skew (precondition.fill = \
                     {:?}, random_overwrite = {}): expected fill = \"steady-state\" or \
                     random_overwrite > 0, or no skew",
                    self.fill, self.random_overwrite
                ),
            ));
        }
        if !overwrites_here {
            return Err((
                field,
                format!(
                    "got {given}, but skewed preconditioning is for the page-mapping FTL \
                     (ftl.kind = \"page\"), expected no skew"
                ),
            ));
        }
        let hot = self.hot_cold().expect("both set").hot_units(logical);
        if hot == 0 || hot == logical {
            return Err((
                field,
                format!(
                    "got {given}, which leaves {hot} of the drive's {logical} logical units hot: \
                     expected a fraction that makes both parts non-empty"
                ),
            ));
        }
        Ok(())
    }
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            fill: FillMode::None,
            random_overwrite: 0.0,
            hot_fraction: None,
            hot_write_fraction: None,
            state: None,
        }
    }
}
