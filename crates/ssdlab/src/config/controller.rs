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
    /// Which of a die's queued host reads and host writes it serves next (docs/nand.md,
    /// "Scheduling reads and writes"): `read-priority` (reads first, always: the default and the
    /// simulator's historical order), `fifo` (the older of the two queues' heads) or `deadline`
    /// (reads first until the oldest write has waited `write_deadline`). Written out only when
    /// set, so that the hashes of existing configs stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<DieScheduler>,
    /// With `scheduler = "deadline"` (and required by it): how long a host write may wait at its
    /// die behind reads before it goes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_deadline: Option<Dur>,
    /// Read-ahead: when a host read starts where an earlier one ended (a sequential stream), the
    /// firmware senses the mapped pages up to this many bytes past its end into their dies'
    /// page registers, where the stream's next reads find them (docs/nand.md, "Read-ahead").
    /// Absent or 0: off (the default: no source says drives ship with it on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead: Option<Bytes>,
}

/// The order in which a die serves its host reads and host writes (`controller.scheduler`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DieScheduler {
    /// Reads before writes whenever a read waits (a write may wait as long as reads keep
    /// coming).
    #[default]
    ReadPriority,
    /// Reads and writes in the order they reached the die.
    Fifo,
    /// Reads first, but a write that has waited `write_deadline` goes before them.
    Deadline,
}

impl DieScheduler {
    pub fn name(self) -> &'static str {
        match self {
            DieScheduler::ReadPriority => "read-priority",
            DieScheduler::Fifo => "fifo",
            DieScheduler::Deadline => "deadline",
        }
    }
}

impl ControllerConfig {
    /// The scheduler as the FIL runs it: the policy and, for `deadline`, its bound (validated
    /// present).
    pub fn scheduling(&self) -> (DieScheduler, crate::sim::SimTime) {
        let policy = self.scheduler.unwrap_or_default();
        let bound = self.write_deadline.map(|d| d.0).unwrap_or_default();
        (policy, bound)
    }
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
            scheduler: None,
            write_deadline: None,
            read_ahead: None,
        }
    }
}
