//! `[pcm]`: phase-change memory media (see docs/pcm.md). A config with `[pcm]` and without
//! `[nand]` and `[ftl]` is a PCM-only device: storage-class memory updated in place, with no
//! erase and no GC.

use super::units::{ByteRate, Bytes, Dur};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PcmTimingModel {
    /// Measured latencies per access size (`sizes`, `read`, `write`), interpolated.
    Table,
    /// Array read, SET and RESET times, chips written in parallel, per-byte transfer.
    Analytic,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PcmConfig {
    /// Channels: each has its own bus and its chips work in lock step on one access.
    pub channels: u32,
    /// Chips per channel, all taking part in every access of the channel (a rank).
    pub chips_per_channel: u32,
    /// Independent banks per chip: accesses to different banks of a channel overlap.
    #[serde(default = "one")]
    pub banks_per_chip: u32,
    /// Bytes of one chip.
    pub chip_capacity: Bytes,
    /// The smallest in-place update the media takes (Micron P8P: 2 B, one word).
    pub min_access: Bytes,
    /// The interleaving and wear-tracking line: consecutive lines go to consecutive channels
    /// (then banks); an access never spans two lines. A power of two.
    pub line: Bytes,
    pub timing: PcmTiming,
    #[serde(default)]
    pub write_pausing: PcmWritePausing,
    #[serde(default)]
    pub endurance: PcmEndurance,
    #[serde(default)]
    pub energy: PcmEnergy,
}

fn one() -> u32 {
    1
}

/// Latency of one access of a channel as a function of its size.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PcmTiming {
    pub model: PcmTimingModel,
    /// Table: access sizes, ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<Bytes>,
    /// Table: the read latency of each size (array read and transfer together).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<Dur>,
    /// Table: the write latency of each size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<Dur>,
    /// Analytic: one array read (sensing `read_unit` bytes in each chip).
    #[serde(default)]
    pub array_read: Dur,
    /// Analytic: bytes a chip senses per array read.
    #[serde(default)]
    pub read_unit: Bytes,
    /// Analytic: the SET pulse (crystallise, the slow one).
    #[serde(default)]
    pub set: Dur,
    /// Analytic: the RESET pulse (melt and quench).
    #[serde(default)]
    pub reset: Dur,
    /// Analytic: bytes a chip programs per SET/RESET round (its write buffer).
    #[serde(default)]
    pub write_unit: Bytes,
    /// Analytic: the channel bus, bytes per second (data crosses it once per access).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus: Option<ByteRate>,
}

/// Write pausing: a read reaching a bank that is programming suspends the program, runs, and
/// lets the program resume (its end moves later by the read and the suspend latency).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PcmWritePausing {
    pub enabled: bool,
    /// Time to suspend a program before the read may start.
    pub suspend_latency: Dur,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PcmEndurance {
    /// Writes a line takes before it wears out; absent when no public figure exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_per_line: Option<f64>,
    /// Start-Gap wear levelling (Qureshi et al., MICRO 2009): one spare line, and the gap
    /// moves by one line every `gap_interval` writes.
    pub start_gap: bool,
    /// Writes between gap moves (ψ in the paper; it used 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_interval: Option<u32>,
}

/// Energy per bit moved; absent where no public figure exists (the result then says null).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PcmEnergy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_pj_per_bit: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_pj_per_bit: Option<f64>,
}

impl PcmConfig {
    /// Bytes of the whole media.
    pub fn media_bytes(&self) -> u64 {
        self.channels as u64 * self.chips_per_channel as u64 * self.chip_capacity.0
    }

    /// Lines of the media.
    pub fn physical_lines(&self) -> u64 {
        self.media_bytes() / self.line.0.max(1)
    }

    /// Lines the host may address: Start-Gap keeps one as the gap.
    pub fn logical_lines(&self) -> u64 {
        self.physical_lines()
            .saturating_sub(self.endurance.start_gap as u64)
    }

    pub fn logical_bytes(&self) -> u64 {
        self.logical_lines() * self.line.0
    }

    /// One-line errors, each naming the field, the value and what was expected.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |f: &str, m: String| Err((format!("pcm.{f}"), m));
        if !(1..=1024).contains(&self.channels) {
            return e(
                "channels",
                format!("got {}, expected 1 to 1024", self.channels),
            );
        }
        if !(1..=64).contains(&self.chips_per_channel) {
            return e(
                "chips_per_channel",
                format!("got {}, expected 1 to 64", self.chips_per_channel),
            );
        }
        if !(1..=256).contains(&self.banks_per_chip) {
            return e(
                "banks_per_chip",
                format!("got {}, expected 1 to 256", self.banks_per_chip),
            );
        }
        let line = self.line.0;
        if !line.is_power_of_two() || !(2..=1 << 20).contains(&line) {
            return e(
                "line",
                format!("got {line} bytes, expected a power of two from 2B to 1MiB"),
            );
        }
        let min = self.min_access.0;
        if min == 0 || min > line || !line.is_multiple_of(min) {
            return e(
                "min_access",
                format!(
                    "got {min} bytes, expected a divisor of pcm.line ({line} bytes) above zero"
                ),
            );
        }
        let chip = self.chip_capacity.0;
        if chip == 0 || !chip.is_multiple_of(line) {
            return e(
                "chip_capacity",
                format!("got {chip} bytes, expected a multiple of pcm.line ({line} bytes)"),
            );
        }
        let total = (self.channels as u128) * (self.chips_per_channel as u128) * chip as u128;
        if total > 1 << 50 {
            return e(
                "chip_capacity",
                format!("the media holds {total} bytes, expected at most 1PiB"),
            );
        }
        let lines = total / line as u128;
        if lines > u32::MAX as u128 {
            return e(
                "line",
                format!(
                    "{lines} lines of {line} bytes, expected at most {} lines: use a longer line",
                    u32::MAX
                ),
            );
        }
        if lines < (self.channels * self.banks_per_chip) as u128 + 1 {
            return e(
                "chip_capacity",
                format!("{lines} lines, expected at least one per bank and a spare"),
            );
        }
        self.validate_timing()?;
        if let Some(w) = self.endurance.writes_per_line {
            if !(w.is_finite() && w >= 1.0) {
                return e(
                    "endurance.writes_per_line",
                    format!("got {w}, expected a number of writes of at least 1"),
                );
            }
        }
        if let Some(g) = self.endurance.gap_interval {
            if g == 0 {
                return e(
                    "endurance.gap_interval",
                    "got 0, expected writes between gap moves of at least 1".into(),
                );
            }
        }
        for (name, v) in [
            ("read_pj_per_bit", self.energy.read_pj_per_bit),
            ("write_pj_per_bit", self.energy.write_pj_per_bit),
        ] {
            if let Some(x) = v {
                if !(x.is_finite() && x >= 0.0) {
                    return e(
                        &format!("energy.{name}"),
                        format!("got {x}, expected picojoules per bit of zero or more"),
                    );
                }
            }
        }
        Ok(())
    }

    /// The timing model's tables (`model = "table"`) or its media times and bus
    /// (`model = "analytic"`).
    fn validate_timing(&self) -> Result<(), (String, String)> {
        let e = |f: &str, m: String| Err((format!("pcm.{f}"), m));
        let t = &self.timing;
        match t.model {
            PcmTimingModel::Table => {
                if t.sizes.is_empty() {
                    return e(
                        "timing.sizes",
                        "empty, expected at least one access size for model = \"table\"".into(),
                    );
                }
                if t.read.len() != t.sizes.len() || t.write.len() != t.sizes.len() {
                    return e(
                        "timing.read",
                        format!(
                            "{} read and {} write latencies for {} sizes, expected one of each per size",
                            t.read.len(),
                            t.write.len(),
                            t.sizes.len()
                        ),
                    );
                }
                let mut prev = 0;
                for s in &t.sizes {
                    if s.0 <= prev {
                        return e(
                            "timing.sizes",
                            format!("got {} bytes after {prev}, expected sizes above zero in ascending order", s.0),
                        );
                    }
                    prev = s.0;
                }
                for (name, v) in [("read", &t.read), ("write", &t.write)] {
                    if v.iter().any(|d| d.0.ps() == 0) {
                        return e(
                            &format!("timing.{name}"),
                            "a latency of zero, expected each above zero".into(),
                        );
                    }
                }
            }
            PcmTimingModel::Analytic => {
                if t.read_unit.0 == 0 {
                    return e("timing.read_unit", "got 0 bytes, expected the bytes a chip senses per array read (model = \"analytic\")".into());
                }
                if t.write_unit.0 == 0 {
                    return e("timing.write_unit", "got 0 bytes, expected the bytes a chip programs per round (model = \"analytic\")".into());
                }
                match t.bus {
                    Some(b) if b.0 > 0.0 && b.0.is_finite() => {}
                    Some(b) => {
                        return e("timing.bus", format!("got {} B/s, expected a rate above zero", b.0))
                    }
                    None => {
                        return e("timing.bus", "missing, expected the channel bus rate such as \"800MB/s\" (model = \"analytic\")".into())
                    }
                }
                if t.set.0.ps() == 0 && t.reset.0.ps() == 0 && t.array_read.0.ps() == 0 {
                    return e(
                        "timing.set",
                        "array_read, set and reset are all zero, expected media times".into(),
                    );
                }
            }
        }
        Ok(())
    }
}
