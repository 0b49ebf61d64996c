//! DRAM timing for the controller's cache buffer: banks with a row buffer each, the core timings
//! (tRCD, tCL, tRP, tRAS) and burst transfers at the interface rate, so that row misses and bank
//! conflicts cost what they should. Two ports may share the banks (seed 001: a host port and an
//! additional port; one bank serves one port at a time, and the host port wins).
//!
//! Parameter sets (JEDEC speed bins, minimum timings):
//! - DDR2-800 (5-5-5), JESD79-2: tCK 2.5 ns, tRCD = tCL = tRP = 12.5 ns, tRAS 45 ns, 8 banks;
//! - DDR3-1600 (11-11-11), JESD79-3: tCK 1.25 ns, tRCD = tCL = tRP = 13.75 ns, tRAS 35 ns,
//!   8 banks;
//! - LPDDR3-1600, JESD209-3: tCK 1.25 ns, tRCD 18 ns, RL 12 tCK = 15 ns, tRPab 21 ns,
//!   tRAS 42 ns, 8 banks.
//!
//! The model is analytic per access (no command bus, no refresh, no tFAW/tRRD): an access to a
//! bank with its row open pays tCL + bursts; a row miss pays tRP (if a row is open and tRAS has
//! passed) + tRCD + tCL + bursts.

pub use crate::config::DramKind;
use crate::sim::SimTime;

/// Timing of one DRAM part, in picoseconds.
#[derive(Clone, Copy, Debug)]
pub struct DramTiming {
    pub banks: u32,
    pub t_rcd: SimTime,
    pub t_cl: SimTime,
    pub t_rp: SimTime,
    pub t_ras: SimTime,
    /// Data transfers per second per pin.
    pub rate_mts: u64,
    /// Bytes per transfer (bus width / 8).
    pub bus_bytes: u64,
    /// Transfers per burst (BL8 for all three).
    pub burst_len: u64,
    /// Bytes of one row of one bank.
    pub row_bytes: u64,
}

impl DramTiming {
    pub fn preset(kind: DramKind, bus_bits: u32) -> DramTiming {
        let ns = |x: f64| SimTime((x * 1000.0).round() as u64);
        let bus_bytes = (bus_bits / 8).max(1) as u64;
        match kind {
            DramKind::Ddr2 => DramTiming {
                banks: 8,
                t_rcd: ns(12.5),
                t_cl: ns(12.5),
                t_rp: ns(12.5),
                t_ras: ns(45.0),
                rate_mts: 800,
                bus_bytes,
                burst_len: 8,
                row_bytes: 1024 * bus_bytes,
            },
            DramKind::Ddr3 => DramTiming {
                banks: 8,
                t_rcd: ns(13.75),
                t_cl: ns(13.75),
                t_rp: ns(13.75),
                t_ras: ns(35.0),
                rate_mts: 1600,
                bus_bytes,
                burst_len: 8,
                row_bytes: 1024 * bus_bytes,
            },
            DramKind::Lpddr3 => DramTiming {
                banks: 8,
                t_rcd: ns(18.0),
                t_cl: ns(15.0),
                t_rp: ns(21.0),
                t_ras: ns(42.0),
                rate_mts: 1600,
                bus_bytes,
                burst_len: 8,
                row_bytes: 1024 * bus_bytes,
            },
        }
    }

    /// Time on the data pins for `bytes`, whole bursts.
    pub fn transfer(&self, bytes: u64) -> SimTime {
        let per_burst = self.bus_bytes * self.burst_len;
        let bursts = bytes.div_ceil(per_burst).max(1);
        SimTime(bursts * self.burst_len * 1_000_000 / self.rate_mts)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    Host,
    Additional,
}

#[derive(Clone, Copy, Debug, Default)]
struct Bank {
    open_row: Option<u64>,
    activated_at: SimTime,
    /// End of the host port's last access.
    host_free: SimTime,
    /// End of the additional port's last access (pushed back when the host cuts in).
    add_free: SimTime,
}

/// Counters of one DRAM.
#[derive(Clone, Debug, Default)]
pub struct DramStats {
    pub accesses: [u64; 2],
    pub bytes: [u64; 2],
    pub row_hits: u64,
    pub row_misses: u64,
    /// Host accesses that found their bank in use by the additional port.
    pub port_conflicts: u64,
    /// Time host accesses waited for the additional port.
    pub host_wait: SimTime,
}

pub struct Dram {
    pub timing: DramTiming,
    banks: Vec<Bank>,
    /// The data bus all banks share: bursts go one after another. As with a bank, the host port
    /// waits at most for the additional port's burst under way and pushes the rest back.
    host_bus_free: SimTime,
    add_bus_free: SimTime,
    pub stats: DramStats,
}

impl Dram {
    pub fn new(timing: DramTiming) -> Dram {
        Dram {
            banks: vec![Bank::default(); timing.banks as usize],
            host_bus_free: SimTime::ZERO,
            add_bus_free: SimTime::ZERO,
            timing,
            stats: DramStats::default(),
        }
    }

    /// Bank and row of a byte address: consecutive rows interleave over the banks.
    fn locate(&self, addr: u64) -> (usize, u64) {
        let row_global = addr / self.timing.row_bytes;
        let bank = (row_global % self.timing.banks as u64) as usize;
        (bank, row_global / self.timing.banks as u64)
    }

    /// Access `bytes` at `addr` through `port`, starting no earlier than `at`; returns when the
    /// data has moved. The host port waits at most for the additional port's burst under way
    /// (it wins the bank) and pushes the additional port's work back by its own duration.
    pub fn access(&mut self, at: SimTime, addr: u64, bytes: u64, port: Port) -> SimTime {
        let (b, row) = self.locate(addr);
        let t = self.timing;
        let per_burst = t.transfer(t.bus_bytes * t.burst_len);
        let bank = &mut self.banks[b];
        let mut start = at;
        match port {
            Port::Host => {
                start = start.max(bank.host_free);
                if bank.add_free > start {
                    // The additional port holds the bank: it yields after its current burst.
                    let wait = per_burst.min(bank.add_free - start);
                    self.stats.port_conflicts += 1;
                    self.stats.host_wait += wait;
                    start += wait;
                }
            }
            Port::Additional => {
                start = start.max(bank.add_free).max(bank.host_free);
            }
        }
        let mut dur = SimTime::ZERO;
        if bank.open_row == Some(row) {
            self.stats.row_hits += 1;
        } else {
            self.stats.row_misses += 1;
            if bank.open_row.is_some() {
                // Precharge, no earlier than tRAS after the row was opened.
                let ras_end = bank.activated_at + t.t_ras;
                if ras_end > start {
                    dur += ras_end - start;
                }
                dur += t.t_rp;
            }
            dur += t.t_rcd;
            bank.open_row = Some(row);
            bank.activated_at = start + dur;
        }
        dur += t.t_cl;
        // The data moves on the shared bus once the bank is ready and the bus is free.
        let xfer = t.transfer(bytes);
        let ready = start + dur;
        let end = match port {
            Port::Host => {
                let mut data_start = ready.max(self.host_bus_free);
                if self.add_bus_free > data_start {
                    data_start += per_burst.min(self.add_bus_free - data_start);
                    self.add_bus_free += xfer;
                }
                self.host_bus_free = data_start + xfer;
                data_start + xfer
            }
            Port::Additional => {
                let data_start = ready.max(self.host_bus_free).max(self.add_bus_free);
                self.add_bus_free = data_start + xfer;
                data_start + xfer
            }
        };
        let dur = end - start;
        match port {
            Port::Host => {
                bank.host_free = end;
                if bank.add_free > start {
                    bank.add_free += dur;
                }
            }
            Port::Additional => bank.add_free = end,
        }
        let i = port as usize;
        self.stats.accesses[i] += 1;
        self.stats.bytes[i] += bytes;
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_hit_is_cheaper_than_miss_and_conflict_waits_at_most_a_burst() {
        let t = DramTiming::preset(DramKind::Ddr2, 64);
        let mut d = Dram::new(t);
        let first = d.access(SimTime::ZERO, 0, 64, Port::Host);
        // Miss on a closed bank: tRCD + tCL + one BL8 burst (8 transfers at 800 MT/s = 10 ns).
        assert_eq!(first, SimTime(12_500 + 12_500 + 10_000));
        let second = d.access(first, 64, 64, Port::Host) - first;
        assert_eq!(second, SimTime(12_500 + 10_000), "row hit: tCL + burst");
        // The additional port starts a long transfer on bank 0; a host access to the same bank
        // waits only for the burst under way.
        let now = SimTime(1_000_000);
        d.access(now, 0, 4096, Port::Additional);
        let host_start = now + SimTime(1000);
        let end = d.access(host_start, 128, 64, Port::Host);
        assert!(
            end - host_start
                <= t.transfer(64) + t.t_cl + SimTime(10_000) + t.t_rp + t.t_rcd + t.t_ras
        );
        assert_eq!(d.stats.port_conflicts, 1);
    }

    #[test]
    fn banks_share_the_data_bus() {
        // Streaming 4 KiB lines over all banks cannot beat the pins: DDR2-800 ×32 = 3.2 GB/s.
        let t = DramTiming::preset(DramKind::Ddr2, 32);
        let mut d = Dram::new(t);
        let mut end = SimTime::ZERO;
        let n = 4096u64;
        for i in 0..n {
            end = end.max(d.access(SimTime::ZERO, i * 4096, 4096, Port::Host));
        }
        let gb_s = (n * 4096) as f64 / end.as_secs_f64() / 1e9;
        assert!(gb_s <= 3.2 && gb_s > 2.5, "{gb_s} GB/s");
    }

    #[test]
    fn presets_follow_their_speed_bins() {
        let d3 = DramTiming::preset(DramKind::Ddr3, 64);
        assert_eq!(d3.transfer(64), SimTime(5_000)); // BL8 at 1600 MT/s
        let lp = DramTiming::preset(DramKind::Lpddr3, 32);
        assert_eq!(lp.transfer(32), SimTime(5_000));
        assert_eq!(lp.t_rcd, SimTime(18_000));
    }
}
