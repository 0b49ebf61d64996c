//! IDE (parallel ATA with Ultra DMA) and SATA behind an AHCI host bus adapter.
//!
//! IDE takes one command at a time: the driver writes the task-file registers one PIO cycle
//! each, starts the bus-master DMA, the device moves data in UDMA bursts and raises INTRQ, and
//! the handler reads the status registers. Nothing overlaps across commands.
//!
//! SATA moves frames (FISes) over a serial link that is half duplex at the frame level: one FIS
//! at a time, whichever direction. With native command queueing (NCQ) the host sends a
//! Register H2D FIS per command, the device answers with a Register D2H FIS that frees the link,
//! later picks a tag with a DMA Setup FIS, moves the data in Data FISes of at most 8 KiB (each
//! write FIS preceded by a DMA Activate FIS from the device), and reports completions in a Set
//! Device Bits FIS. Without NCQ a command holds the device until it completes.
//!
//! Sources: UDMA mode rates and the PIO mode 4 cycle time are ATA/ATAPI-7 (INCITS 397-2005)
//! figures; FIS sizes and the 8 KiB data-FIS limit are Serial ATA Revision 3.x; the link rates
//! 1.5/3/6 Gb/s with 8b/10b coding are SATA 1.0/2.0/3.0 (600 MB/s matches seed 004's "SATA3
//! interface is 600MB/s"); register and FIS handshake overheads are assumed, per field below.

use super::{wrong_link, Kind, Proto, Wire};
use crate::config::InterfaceConfig;
pub use crate::config::{AtaConfig, NCQ_TAGS};
use crate::config::{Link, LinkType};
use crate::error::{got, Problem};
use crate::sim::SimTime;

/// Ultra DMA mode rates in bytes per second (ATA/ATAPI-7: 16.7, 25, 33.3, 44.4, 66.7, 100,
/// 133 MB/s for modes 0–6).
pub fn udma_bytes_per_s(mode: u8) -> Option<f64> {
    Some(match mode {
        0 => 16.7e6,
        1 => 25.0e6,
        2 => 33.3e6,
        3 => 44.4e6,
        4 => 66.7e6,
        5 => 100.0e6,
        6 => 133.3e6,
        _ => return None,
    })
}

/// IDE link rate in bytes per second: `"ideal"` (no bandwidth limit) or an Ultra DMA mode.
pub fn ide_link_rate(l: &Link) -> Result<f64, Problem> {
    match l.kind() {
        LinkType::Ideal => Ok(f64::INFINITY),
        LinkType::Udma(m) => udma_bytes_per_s(m)
            .ok_or_else(|| got(format!("{:?}", l.text()), "an Ultra DMA mode from 0 to 6")),
        _ => Err(wrong_link(l, Kind::Ide)),
    }
}

/// SATA link: `"ideal"`, or generation 1–3 (1.5, 3 or 6 Gb/s); payload bytes per second after
/// 8b/10b coding.
pub fn sata_link_rate(l: &Link) -> Result<f64, Problem> {
    match l.kind() {
        LinkType::Ideal => Ok(f64::INFINITY),
        LinkType::Sata(g) => Ok(1.5e9 * f64::from(1u32 << (g - 1)) * 0.8 / 8.0),
        _ => Err(wrong_link(l, Kind::Sata)),
    }
}

pub fn ide_proto(i: &InterfaceConfig) -> Result<Proto, Problem> {
    let a = &i.ata;
    let rate = ide_link_rate(&i.link)?;
    let mut data = Wire::at_rate(rate);
    data.seg_bytes = a.udma_burst.0.max(512);
    data.seg_overhead_bytes = 2; // the CRC word ending each burst
    data.seg_overhead_ps = a.udma_burst_overhead.0.ps();
    Ok(Proto {
        kind: Kind::Ide,
        slots: 1,
        on_up: [false; 4],
        // PRD table pointer, direction and start bit of the bus-master engine.
        cmd_prep: a.mmio.0 * 3,
        cmd: a.register_cycle.0 * a.taskfile_writes as u64,
        ack: SimTime::ZERO,
        read_setup: SimTime::ZERO,
        write_setup: SimTime::ZERO,
        write_grant_bytes: u64::MAX,
        data_in: data,
        data_out: data,
        status: SimTime::ZERO,
        // The status register on the ATA bus, then the bus-master status read and clear.
        host_status: a.register_cycle.0 + a.mmio.0 * 2,
        link_name: if rate.is_finite() {
            format!(
                "IDE {} ({:.1} MB/s)",
                i.link.text().to_uppercase(),
                rate / 1e6
            )
        } else {
            "IDE ideal (no link limit)".into()
        },
    })
}

pub fn sata_proto(i: &InterfaceConfig) -> Result<Proto, Problem> {
    let a = &i.ata;
    let rate = sata_link_rate(&i.link)?;
    let fis = a.fis_overhead.0;
    let mut data_in = Wire::at_rate(rate);
    data_in.seg_bytes = 8192; // SATA 3.x: a Data FIS carries at most 8192 bytes
    data_in.seg_overhead_bytes = 4 + fis; // the FIS type dword and its framing
    let mut data_out = data_in;
    // Each write Data FIS waits for a DMA Activate FIS (one dword) from the device.
    data_out.seg_overhead_bytes += 4 + fis;
    let msg = |bytes: u64| data_in.message(bytes);
    let (ack, setup, status) = if a.ncq {
        // Register D2H (20 B) frees the link; DMA Setup (28 B) names the tag; Set Device Bits
        // (8 B) reports the completion.
        (msg(20), msg(28), msg(8))
    } else {
        // Legacy DMA: the final Register D2H FIS carries the status.
        (SimTime::ZERO, SimTime::ZERO, msg(20))
    };
    Ok(Proto {
        kind: Kind::Sata,
        slots: i.queue_depth,
        on_up: [false; 4],
        // PxSACT (NCQ) and PxCI writes, then the adapter fetches the command.
        cmd_prep: a.mmio.0 * if a.ncq { 2 } else { 1 } + a.hba_fetch.0,
        cmd: msg(20), // Register H2D FIS
        ack,
        read_setup: setup,
        write_setup: setup,
        write_grant_bytes: u64::MAX,
        data_in,
        data_out,
        status,
        // PxIS read and clear, and PxSACT (or PxCI) to find the finished tags.
        host_status: a.mmio.0 * 2,
        link_name: if rate.is_finite() {
            format!(
                "SATA {} Gb/s ({:.0} MB/s)",
                rate * 8.0 / 0.8 / 1e9,
                rate / 1e6
            )
        } else {
            "SATA ideal (no link limit)".into()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_rates() {
        assert_eq!(
            sata_link_rate(&Link::parse("sata3").unwrap()).unwrap(),
            600e6
        );
        assert_eq!(
            sata_link_rate(&Link::parse("sata1").unwrap()).unwrap(),
            150e6
        );
        assert_eq!(
            ide_link_rate(&Link::parse("udma6").unwrap()).unwrap(),
            133.3e6
        );
        assert!(Link::parse("udma7").is_err());
        assert!(Link::parse("sata4").is_err());
        // Another kind's link: the link as given against the SATA names, as data.
        match sata_link_rate(&Link::parse("udma6").unwrap()) {
            Err(Problem::Got { value, expected }) => {
                assert_eq!(value, "\"udma6\"");
                assert!(expected.contains("\"sata3\" (6 Gb/s)"), "{expected}");
            }
            other => panic!("{other:?}"),
        }
    }
}
