//! `[host]`: the host's cores, the CPU cost of its I/O stack, and its block layer.
//!
//! Each CPU cost is given either as a time (`submit_cost = "1500ns"`) or as an instruction count
//! on a core of `clock` (`submit_instructions = 1500` with `clock = "1GHz"`); a count, when
//! given, is the one used. The new costs (`syscall_*`, `kib_*`) and the block layer's settings
//! are absent by default, so a config without them runs as before. docs/host.md gives each
//! field's source.

use super::units::{Dur, Rate};
use crate::sim::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// A named host whose values fill the `[host]` keys this table leaves out
    /// (`gem5-atomic-1ghz`: seed 004 Table 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// CPU cores running the I/O stack; job instance i runs on core i mod cores.
    pub cores: u32,
    /// CPU time to submit one command (block layer, driver, SQ entry, doorbell write).
    pub submit_cost: Dur,
    /// CPU time to complete one command (interrupt handler, CQ entry, head doorbell, wake-up).
    pub complete_cost: Dur,
    /// With polling: CPU time of one poll that finds a completion.
    pub poll_cost: Dur,
    /// Clock of one core, for costs given as instruction counts (one instruction per cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<Rate>,
    /// Instructions of `submit_cost`'s work; with `clock`, replaces `submit_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submit_instructions: Option<u64>,
    /// Instructions of `complete_cost`'s work; with `clock`, replaces `complete_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete_instructions: Option<u64>,
    /// Instructions of `poll_cost`'s work; with `clock`, replaces `poll_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_instructions: Option<u64>,
    /// CPU time of one system call of the I/O engine (entry, exit, argument copy); absent: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscall_cost: Option<Dur>,
    /// Instructions of one system call; with `clock`, replaces `syscall_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscall_instructions: Option<u64>,
    /// CPU time of the file system's part of one request on the conventional path (from the
    /// system call to the block layer: file and extent look-up, building the bio); absent: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_cost: Option<Dur>,
    /// Instructions of `fs_cost`'s work; with `clock`, replaces `fs_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_instructions: Option<u64>,
    /// CPU time of the generic block layer's part of one request (checks, plugging, the merge
    /// attempt, the request's allocation); absent: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_cost: Option<Dur>,
    /// Instructions of `block_cost`'s work; with `clock`, replaces `block_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_instructions: Option<u64>,
    /// CPU time of the I/O scheduler's part of one request (insert, sort, dispatch); absent: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_cost: Option<Dur>,
    /// Instructions of `sched_cost`'s work; with `clock`, replaces `sched_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_instructions: Option<u64>,
    /// CPU time per KiB a command moves, paid at submit (pinning and mapping the user pages of
    /// a direct I/O); absent: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kib_cost: Option<Dur>,
    /// Instructions per KiB a command moves; with `clock`, replaces `kib_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kib_instructions: Option<u64>,
    /// The block layer's largest request, in 512-byte sectors (Linux `max_sectors`): requests
    /// are split at the smaller of this and the interface's transfer limit. Absent: the
    /// interface's limit alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sectors: Option<u32>,
    /// The I/O scheduler's order for the requests of one submission batch: `none` (as
    /// submitted), `mq-deadline` or `cfq` (by sector).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<Scheduler>,
    /// Linux's `nomerges`: true stops the block layer merging adjacent requests of one
    /// submission batch.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nomerges: bool,
}

/// The block layer's I/O scheduler, as far as it changes what the device sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// blk-mq without a scheduler: requests go in the order they were submitted.
    None,
    /// blk-mq's deadline scheduler: a batch is dispatched in sector order.
    MqDeadline,
    /// The single-queue CFQ of older kernels, as far as one batch goes: sector order. Its
    /// per-process time slices and idling are not modelled.
    Cfq,
}

impl Scheduler {
    /// Whether the scheduler dispatches a batch in sector order.
    pub fn sorts(self) -> bool {
        !matches!(self, Scheduler::None)
    }
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            preset: None,
            cores: 4,
            submit_cost: Dur(SimTime::from_ns(1_500)),
            complete_cost: Dur(SimTime::from_ns(2_000)),
            poll_cost: Dur(SimTime::from_ns(300)),
            clock: None,
            submit_instructions: None,
            complete_instructions: None,
            poll_instructions: None,
            syscall_cost: None,
            syscall_instructions: None,
            fs_cost: None,
            fs_instructions: None,
            block_cost: None,
            block_instructions: None,
            sched_cost: None,
            sched_instructions: None,
            kib_cost: None,
            kib_instructions: None,
            max_sectors: None,
            scheduler: None,
            nomerges: false,
        }
    }
}

/// The named hosts of `host.preset`, as `[host]` tables: each key a preset gives is filled in
/// where the config's own `[host]` table leaves it out.
pub const HOST_PRESETS: &[(&str, &str)] = &[(
    "gem5-atomic-1ghz",
    // Seed 004 (004_a7ed53a6f100eeb3.txt) Table 1: "core 1, atomic", and the text: "setup the
    // core with 1GHz". gem5's atomic CPU model takes one cycle per instruction, so instruction
    // counts ÷ 1 GHz are nanoseconds. The document gives no per-operation instruction counts.
    "cores = 1\nclock = \"1GHz\"\n",
)];

/// The `[host]` table of the host preset `name`.
pub fn host_preset(name: &str) -> Option<&'static str> {
    HOST_PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
}

/// Most CPU time one cost may come to: one second (a per-command cost beyond it is a typo).
const MAX_COST_PS: f64 = 1e12;

/// The costs of `[host]` in picoseconds, each from its instruction count when one is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCosts {
    pub submit: SimTime,
    pub complete: SimTime,
    pub poll: SimTime,
    pub syscall: SimTime,
    /// The file system's, the block layer's and the I/O scheduler's work on one request.
    pub fs: SimTime,
    pub block: SimTime,
    pub sched: SimTime,
    /// Per KiB moved.
    pub kib: SimTime,
}

impl HostConfig {
    /// Each cost from its instruction count ÷ `clock` when a count is given, else its time.
    /// Err(field, message) names a count without a clock or a cost beyond one second.
    pub fn costs(&self) -> Result<HostCosts, (&'static str, String)> {
        let pick = |(field, time_field): (&'static str, &'static str),
                    instr: Option<u64>,
                    time: SimTime|
         -> Result<SimTime, (&'static str, String)> {
            let Some(n) = instr else {
                if time.0 as f64 > MAX_COST_PS {
                    return Err((
                        time_field,
                        format!(
                            "got {} s, expected at most 1 s of CPU time",
                            time.as_secs_f64()
                        ),
                    ));
                }
                return Ok(time);
            };
            let Some(Rate(hz)) = self.clock else {
                return Err((
                    field,
                    format!("got {n} instructions but no host.clock, expected host.clock (e.g. \"1GHz\") to turn them into time"),
                ));
            };
            // One instruction per cycle: n / hz seconds.
            let ps = (n as f64 * 1e12 / hz).round();
            if ps.is_nan() || ps > MAX_COST_PS {
                return Err((
                    field,
                    format!("got {n} instructions at {hz} Hz, {ps} ps; expected at most 1 s of CPU time"),
                ));
            }
            Ok(SimTime(ps as u64))
        };
        Ok(HostCosts {
            submit: pick(
                ("host.submit_instructions", "host.submit_cost"),
                self.submit_instructions,
                self.submit_cost.0,
            )?,
            complete: pick(
                ("host.complete_instructions", "host.complete_cost"),
                self.complete_instructions,
                self.complete_cost.0,
            )?,
            poll: pick(
                ("host.poll_instructions", "host.poll_cost"),
                self.poll_instructions,
                self.poll_cost.0,
            )?,
            syscall: pick(
                ("host.syscall_instructions", "host.syscall_cost"),
                self.syscall_instructions,
                self.syscall_cost.map_or(SimTime::ZERO, |d| d.0),
            )?,
            fs: pick(
                ("host.fs_instructions", "host.fs_cost"),
                self.fs_instructions,
                self.fs_cost.map_or(SimTime::ZERO, |d| d.0),
            )?,
            block: pick(
                ("host.block_instructions", "host.block_cost"),
                self.block_instructions,
                self.block_cost.map_or(SimTime::ZERO, |d| d.0),
            )?,
            sched: pick(
                ("host.sched_instructions", "host.sched_cost"),
                self.sched_instructions,
                self.sched_cost.map_or(SimTime::ZERO, |d| d.0),
            )?,
            kib: pick(
                ("host.kib_instructions", "host.kib_cost"),
                self.kib_instructions,
                self.kib_cost.map_or(SimTime::ZERO, |d| d.0),
            )?,
        })
    }

    /// The block layer's largest request in bytes, if `max_sectors` is set.
    pub fn max_request_bytes(&self) -> Option<u64> {
        self.max_sectors.map(|s| s as u64 * 512)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_counts_at_a_clock_give_the_hand_computed_time() {
        let h = HostConfig {
            clock: Some(Rate(1e9)),
            submit_instructions: Some(12_000),
            syscall_instructions: Some(700),
            kib_instructions: Some(250),
            ..HostConfig::default()
        };
        let c = h.costs().unwrap();
        // 12,000 instructions at 1 GHz, one per cycle: 12 µs.
        assert_eq!(c.submit, SimTime::from_us(12));
        assert_eq!(c.syscall, SimTime::from_ns(700));
        assert_eq!(c.kib, SimTime::from_ns(250));
        // Not given as counts: the times, and 0 for the new costs.
        assert_eq!(c.complete, SimTime::from_ns(2_000));
        assert_eq!(c.poll, SimTime::from_ns(300));
        // 3,000 instructions at 2.5 GHz: 1.2 µs.
        let h = HostConfig {
            clock: Some(Rate(2.5e9)),
            complete_instructions: Some(3_000),
            ..HostConfig::default()
        };
        assert_eq!(h.costs().unwrap().complete, SimTime::from_ns(1_200));
        assert_eq!(h.costs().unwrap().syscall, SimTime::ZERO);
    }

    #[test]
    fn a_count_needs_a_clock_and_a_sane_result() {
        let h = HostConfig {
            poll_instructions: Some(10),
            ..HostConfig::default()
        };
        let (field, msg) = h.costs().unwrap_err();
        assert_eq!(field, "host.poll_instructions");
        assert!(msg.contains("host.clock"), "{msg}");
        let h = HostConfig {
            clock: Some(Rate(1e6)),
            submit_instructions: Some(u64::MAX),
            ..HostConfig::default()
        };
        let (field, msg) = h.costs().unwrap_err();
        assert_eq!(field, "host.submit_instructions");
        assert!(msg.contains("at most 1 s"), "{msg}");
    }

    #[test]
    fn the_gem5_host_is_one_core_at_one_gigahertz() {
        let t: toml::Table = toml::from_str(host_preset("gem5-atomic-1ghz").unwrap()).unwrap();
        assert_eq!(t["cores"].as_integer(), Some(1));
        assert_eq!(t["clock"].as_str(), Some("1GHz"));
        assert!(host_preset("nonesuch").is_none());
    }
}
