//! UFS: SCSI commands in UPIUs over UniPro on M-PHY lanes.
//!
//! The driver fills a UTP transfer request descriptor and sets its bit in the doorbell register
//! (32 slots); the host controller fetches the descriptor and sends a COMMAND UPIU. For a read,
//! the device returns DATA IN UPIUs; for a write, it grants buffer space with READY TO TRANSFER
//! UPIUs and the host sends DATA OUT UPIUs. A RESPONSE UPIU ends the command and the controller
//! interrupts the host. The link is full duplex: each direction has its own lanes.
//!
//! Every UPIU has a 32-byte header and travels in UniPro data-link frames of at most 288 bytes of
//! payload, each framed by a start and end symbol pair and a CRC-16 (with the network and
//! transport headers, 8 bytes a frame), and every symbol is 8b/10b coded on the lanes.
//!
//! Sources: HS gear rates are MIPI M-PHY (rate A 1248/2496/4992/9984 Mb/s, rate B
//! 1457.6/2915.2/5830.4/11660.8 Mb/s per lane for HS-G1…G4); UFS 2.0 (JESD220B) allows one or
//! two lanes and HS-G3; UPIU sizes are JESD220B; 32 transfer request slots are UFSHCI 2.0
//! (JESD223C). Host-side register and descriptor-fetch costs are assumed, per field.

use super::{wrong_link, Kind, Proto, Wire};
use crate::config::InterfaceConfig;
use crate::config::{Link, LinkType};
pub use crate::config::{UfsConfig, UTRL_SLOTS};
use crate::error::Problem;
use crate::sim::SimTime;

/// A UFS link (`"hs-g3x2"`: HS-G3 rate B by default, `"hs-g3ax1"`, `"ideal"`): payload bytes
/// per second over all lanes after 8b/10b, and a display name.
pub fn ufs_link(l: &Link) -> Result<(f64, String), Problem> {
    let (gear, rate_b, lanes) = match l.kind() {
        LinkType::Ideal => return Ok((f64::INFINITY, "UFS ideal (no link limit)".into())),
        LinkType::Ufs {
            gear,
            rate_b,
            lanes,
        } => (gear, rate_b, lanes),
        _ => return Err(wrong_link(l, Kind::Ufs)),
    };
    let mbps_g1 = if rate_b { 1457.6 } else { 1248.0 };
    let line_bps = mbps_g1 * 1e6 * f64::from(1u32 << (gear - 1)) * lanes as f64;
    let bytes = line_bps * 0.8 / 8.0; // 8b/10b
    Ok((
        bytes,
        format!(
            "UFS HS-G{gear}{} ×{lanes} ({:.0} MB/s)",
            if rate_b { "B" } else { "A" },
            bytes / 1e6
        ),
    ))
}

pub fn ufs_proto(i: &InterfaceConfig) -> Result<Proto, Problem> {
    let u = &i.ufs;
    let (rate, name) = ufs_link(&i.link)?;
    let mut data = Wire::at_rate(rate);
    data.seg_bytes = u.max_data_segment.0.max(512);
    data.seg_overhead_bytes = u.upiu_header.0;
    data.frame_bytes = u.frame_payload.0.max(16);
    data.frame_overhead_bytes = u.frame_overhead.0;
    // A header-only UPIU: `message` adds the segment overhead (the header) itself.
    let upiu = |extra: u64| data.message(extra);
    Ok(Proto {
        kind: Kind::Ufs,
        slots: i.queue_depth,
        // Commands and write data down, status and read data up: separate lanes each way.
        on_up: [false, true, false, true],
        cmd_prep: u.mmio.0 + u.utrd_fetch.0,
        cmd: upiu(0), // COMMAND UPIU: the header with the 16-byte CDB inside it
        ack: SimTime::ZERO,
        read_setup: SimTime::ZERO,
        write_setup: upiu(0), // READY TO TRANSFER UPIU
        write_grant_bytes: u.rtt_grant.0.max(4096),
        data_in: data,
        data_out: data,
        status: upiu(u.response_bytes.0.saturating_sub(u.upiu_header.0)),
        // Interrupt status read and clear, then the doorbell register for finished slots.
        host_status: u.mmio.0 * 3,
        link_name: name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gears() {
        let (g3b2, _) = ufs_link(&Link::parse("hs-g3x2").unwrap()).unwrap();
        assert!((g3b2 - 5830.4e6 * 2.0 * 0.1).abs() < 1.0);
        let (g1a1, _) = ufs_link(&Link::parse("hs-g1ax1").unwrap()).unwrap();
        assert!((g1a1 - 124.8e6).abs() < 1.0);
        assert!(Link::parse("hs-g5x2").is_err());
        assert!(Link::parse("hs-g3x4").is_err());
        assert!(Link::parse("hs-g3cx1").is_err());
    }
}
