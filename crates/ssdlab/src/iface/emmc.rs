//! eMMC: an 8-bit DAT bus for data and a separate CMD line for commands and responses.
//!
//! Without command queueing the host sends SET_BLOCK_COUNT (CMD23) and a multiple-block read
//! or write (CMD18/CMD25), each answered by an R1 response, then moves 512-byte blocks, each with
//! a start bit, CRC-16 and end bit (and for writes a CRC status token and busy); one command at a
//! time. With eMMC 5.1 command queueing the host queues a task with CMD44 and CMD45 (up to 32
//! tasks), polls the queue status register with CMD13 until the device says a task is ready, and
//! starts its data phase with CMD46 (read) or CMD47 (write). Queued tasks share one DAT bus, so
//! their data phases run one after the other; the CMD line stays free for queueing meanwhile.
//!
//! Sources: JESD84-B51 (eMMC 5.1): 48-bit command and R1 tokens, 512-byte blocks with CRC-16,
//! HS200 (200 MHz SDR) and HS400 (200 MHz DDR) on 8 bits = 200 and 400 MB/s, HS52 and DDR52 =
//! 52 and 104 MB/s, command queueing with 32 tasks introduced in 5.1. Turnaround cycle counts
//! and the status-polling interval are assumed, per field.

use super::{wrong_link, Kind, Proto, Wire};
use crate::config::InterfaceConfig;
use crate::config::{EmmcBus, Link, LinkType};
pub use crate::config::{EmmcConfig, CQ_TASKS, VERSIONS};
use crate::error::Problem;
use crate::sim::SimTime;

/// The bus mode of an eMMC link: (data bytes per second, clock Hz, display name).
pub fn emmc_link(l: &Link) -> Result<(f64, f64, &'static str), Problem> {
    Ok(match l.kind() {
        LinkType::Ideal => (f64::INFINITY, 200e6, "eMMC ideal (no bus limit)"),
        LinkType::Emmc(EmmcBus::Hs52) => (52e6, 52e6, "eMMC HS52 (52 MB/s)"),
        LinkType::Emmc(EmmcBus::Ddr52) => (104e6, 52e6, "eMMC DDR52 (104 MB/s)"),
        LinkType::Emmc(EmmcBus::Hs200) => (200e6, 200e6, "eMMC HS200 (200 MB/s)"),
        LinkType::Emmc(EmmcBus::Hs400) => (400e6, 200e6, "eMMC HS400 (400 MB/s)"),
        _ => return Err(wrong_link(l, Kind::Emmc)),
    })
}

pub fn emmc_proto(i: &InterfaceConfig) -> Result<Proto, Problem> {
    let e = &i.emmc;
    let (rate, clock_hz, name) = emmc_link(&i.link)?;
    let cycle = SimTime((1e12 / clock_hz).round() as u64);
    let ideal = !rate.is_finite();
    // A command token, N_CR, the R1 response, and N_CC before the next command (8 cycles).
    let exchange = if ideal {
        SimTime::ZERO
    } else {
        cycle * (48 + e.ncr_cycles as u64 + 48 + 8)
    };
    let mut data_in = Wire::at_rate(rate);
    data_in.seg_bytes = 512;
    data_in.seg_overhead_ps = cycle.ps() * e.read_block_cycles as u64;
    let mut data_out = data_in;
    data_out.seg_overhead_ps = cycle.ps() * e.write_block_cycles as u64;
    let cq = e.cq_enabled();
    let (cmd, setup) = if cq {
        // CMD44 + CMD45 queue the task; when it is ready, a CMD13 poll finds it and CMD46/47
        // starts its data phase, after half a polling interval on average.
        (
            exchange * 2,
            exchange * 2 + SimTime(e.qsr_poll_interval.0.ps() / 2),
        )
    } else {
        // CMD23 then CMD18/CMD25; the data follows at once.
        (exchange * 2, SimTime::ZERO)
    };
    Ok(Proto {
        kind: Kind::Emmc,
        slots: if cq { i.queue_depth } else { 1 },
        // CMD line (down) for commands and status, DAT lines (up) for data either way.
        on_up: [false, false, true, true],
        cmd_prep: e.mmio.0 * 2,
        cmd,
        ack: SimTime::ZERO,
        read_setup: setup,
        write_setup: setup,
        write_grant_bytes: u64::MAX,
        data_in,
        data_out,
        status: SimTime::ZERO,
        // Interrupt status (and with queueing, the task-completion register) read and clear.
        host_status: e.mmio.0 * if cq { 3 } else { 2 },
        link_name: name.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hs400_block_cost() {
        let (rate, clock, _) = emmc_link(&Link::parse("hs400").unwrap()).unwrap();
        assert_eq!(rate, 400e6);
        assert_eq!(clock, 200e6);
        assert!(Link::parse("hs800").is_err());
    }
}
