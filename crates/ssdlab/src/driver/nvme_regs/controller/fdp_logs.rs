//! Flexible Data Placement's log pages (NVMe TP4146, NVMe 2.1 §5.1.12.1.21–24) for a device
//! with `[fdp]`: FDP Configurations (20h), Reclaim Unit Handle Usage (21h), FDP Statistics
//! (22h) and FDP Events (23h), of endurance group 1. Their figures are the device's
//! (`Device::fdp_result`); the events are those the controller logged (an Invalid Placement
//! Identifier: a write whose data placement directive names no handle).

use super::*;
use crate::error::Problem;

/// FDP Configurations log page (20h).
pub const LID_FDP_CONFIGS: u32 = 0x20;
/// Reclaim Unit Handle Usage log page (21h).
pub const LID_FDP_RUH_USAGE: u32 = 0x21;
/// FDP Statistics log page (22h).
pub const LID_FDP_STATS: u32 = 0x22;
/// FDP Events log page (23h).
pub const LID_FDP_EVENTS: u32 = 0x23;
/// Events the FDP Events log page holds (its 4 KiB: a 64-byte header and 63 events).
pub const MAX_FDP_EVENTS: usize = 63;
/// FDP event type 03h, Invalid Placement Identifier (a host event).
pub const EVENT_INVALID_PID: u8 = 0x03;

impl Controller {
    /// The FDP log page `lid` (20h–23h; `host_events`: LSP bit 0 of the events page), or None
    /// when `lid` is not one of them. Invalid Field when the drive has no `[fdp]`.
    pub(super) fn fdp_log(
        &self,
        lid: u32,
        host_events: bool,
    ) -> Option<std::result::Result<Vec<u8>, Status>> {
        if !(LID_FDP_CONFIGS..=LID_FDP_EVENTS).contains(&lid) {
            return None;
        }
        let (Some(f), Some(r)) = (self.sys.config().fdp.as_ref(), self.sys.fdp_result()) else {
            return Some(Err(Status::INVALID_FIELD));
        };
        let nruh = f.handles as usize;
        Some(Ok(match lid {
            LID_FDP_CONFIGS => {
                // Header (16 bytes), then one configuration descriptor: 64 bytes and a 4-byte
                // descriptor per reclaim unit handle.
                let desc = 64 + 4 * nruh;
                let mut b = vec![0u8; 16 + desc];
                put_u16(&mut b, 0, 0); // NUMFDPC, zero-based: one configuration
                put_u32(&mut b, 4, (16 + desc) as u32);
                let d = 16;
                put_u16(&mut b, d, desc as u16);
                // FDPA: bit 7 valid; RGIF (bits 3:0) 0, the placement identifier carries no
                // reclaim group.
                b[d + 2] = 0x80;
                put_u32(&mut b, d + 4, f.reclaim_groups); // NRG
                put_u16(&mut b, d + 8, nruh as u16); // NRUH
                put_u16(&mut b, d + 10, nruh as u16 - 1); // MAXPIDS, zero-based
                put_u32(&mut b, d + 12, 1); // NNSS
                put_u64(&mut b, d + 16, r.ru_bytes); // RUNS
                put_u32(&mut b, d + 24, 0); // ERUTL: no time limit
                for h in 0..nruh {
                    b[d + 64 + 4 * h] = f.ruh_type.code();
                }
                b
            }
            LID_FDP_RUH_USAGE => {
                // NRUH, then 8 bytes per handle: RUHA 01h, host specified (each handle is in
                // namespace 1's placement handle list).
                let mut b = vec![0u8; 8 + 8 * nruh];
                put_u16(&mut b, 0, nruh as u16);
                for h in 0..nruh {
                    b[8 + 8 * h] = 1;
                }
                b
            }
            LID_FDP_STATS => {
                let mut b = vec![0u8; 64];
                put_u128(&mut b, 0, r.host_bytes_written as u128); // HBMW
                put_u128(&mut b, 16, r.media_bytes_written as u128); // MBMW
                put_u128(&mut b, 32, r.media_bytes_erased as u128); // MBE
                b
            }
            _ => {
                let events: &[[u8; 64]] = if host_events { &self.fdp_events } else { &[] };
                let mut b = vec![0u8; 64 + 64 * MAX_FDP_EVENTS];
                put_u32(&mut b, 0, events.len() as u32);
                for (k, e) in events.iter().enumerate() {
                    b[64 + 64 * k..128 + 64 * k].copy_from_slice(e);
                }
                b
            }
        }))
    }

    /// Whether a write may name placement identifier `pid` (the message says what was
    /// expected).
    pub fn check_placement(&self, pid: u32) -> std::result::Result<(), Problem> {
        let pid = u8::try_from(pid).map_err(|_| {
            got(
                format!("placement identifier {pid}"),
                format!(
                    "0 up to {} (fdp.handles)",
                    self.sys.config().write_streams().saturating_sub(1)
                ),
            )
        })?;
        self.sys.check_stream_id(pid)
    }

    /// Log an Invalid Placement Identifier event for a write naming `pid` (the oldest event
    /// gives way once the page is full).
    pub(super) fn log_invalid_pid(&mut self, pid: u16) {
        let mut e = [0u8; 64];
        e[0] = EVENT_INVALID_PID;
        e[1] = 0b11; // FDPEF: PIV (placement identifier valid) and NSIDV
        put_u16(&mut e, 2, pid);
        // Timestamp: milliseconds of controller time (the Timestamp feature's format, its
        // origin the power-on).
        put_u64(&mut e, 4, self.clock.ps() / 1_000_000_000);
        put_u32(&mut e, 12, 1); // NSID
        if self.fdp_events.len() == MAX_FDP_EVENTS {
            self.fdp_events.remove(0);
        }
        self.fdp_events.push(e);
    }
}
