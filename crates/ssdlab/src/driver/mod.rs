//! Drivers: what submits requests to a [`crate::device::Device`] and reacts to their
//! completions, through the device's boundary only.
//!
//! - `jobs`: fio-like synthetic jobs (closed loop at `iodepth`, or open loop at `rate_iops`).
//! - `replay`: a block trace or workload model, as fast as possible or at trace time.
//! - `fusion_host`: the user-visible fusion device, raw commands one at a time with their data.
//! - `hfsl`: seed 002's host-side FTL over the fusion device.
//! - `nvme_regs`: the register-level NVMe controller, driven by MMIO from outside the loop.
//! - `requests`: a host program's request list, in order (each request its own op and stream).
//! - `power_cut`: any of these run up to a power cut on the page-mapped FTL, then recovery.
//! - `sampler`: periodic statistics, any of these wrapped to sample the device at an interval.
//! - `zbd`: fio's `zonemode=zbd` for `jobs` on a zoned drive (writes at write pointers).
//! - `depth_search`: fio's `latency_target` for `jobs` (the queue depth that meets a target).

use crate::error::{Error, Invalid};
use crate::sim::SimTime;

mod depth_search;
pub mod fusion_host;
pub mod hfsl;
pub mod jobs;
pub mod nvme_regs;
pub mod power_cut;
pub mod replay;
pub mod requests;
pub mod sampler;
mod zbd;

/// A raw command or host request (`what`) submitted at `at` that reached the end of the
/// simulated clock: the caller's `at_ps` against the times the clock can hold.
pub(crate) fn clock_end(what: &str, at: SimTime) -> Error {
    Error::bad_job(Invalid::got(
        "",
        "at_ps",
        format_args!("{} ps", at.ps()),
        format!(
            "times well under 2^64 ps (about 213 days): the {what} submitted then reached the \
             end of the simulated clock, which cannot go on, so this and every later {what} is \
             refused"
        ),
    ))
}
