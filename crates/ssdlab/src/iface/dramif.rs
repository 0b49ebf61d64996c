//! The DRAM-interface storage protocol of seed 000: the device sits on an LPDDR channel and
//! shows the host a shared buffer split into a submission queue, a completion queue and a data
//! buffer (DB). The host copies write data into the DB before it submits, writes the SQ entry
//! and a doorbell register, and copies read data out of the DB after the completion (GPIO
//! interrupt or polling). Copies are made by the host's DMA engine (or the CPU), with CPU cache
//! invalidation before and after, optionally pipelined in pieces. DB space is handed out by a
//! buddy allocator in sectors; a request larger than a chunk is split. The buffer is eight
//! single-ported SRAM banks: the host's accesses always win, the controller's wait.
//!
//! This module holds the configuration and the state (buffer, DMA engine, banks, counters);
//! `dram_link` runs the protocol in the engine.
//!
//! Sources (seed 000_c4a02eb28355b6c3.txt): shared buffer layout and flow (§3, Fig. 2); eight
//! single-ported SRAM banks with host priority (§4.1); host DMA "around 450 MB/s" (§6.2
//! footnote 3); cache invalidation "nearly 290 µs" per 512 KB, pipelined in smaller transfers,
//! buddy allocation, splitting into chunks (§5.4); GPIO completion interrupt (§3, §5.3); LPDDR3
//! at 600 MHz on the host (Table 2); controller core 266 MHz (Table 1); no cached write in the
//! prototype (§6.5). Costs the seed does not give are assumed, per field.

use super::buddy::Buddy;
use super::{wrong_link, Kind, Proto, Wire};
use crate::config::InterfaceConfig;
pub use crate::config::{DataMove, DramIfConfig};
use crate::config::{Link, LinkType};
use crate::error::Problem;
use crate::sim::time::Timeline;
use crate::sim::SimTime;
pub use crate::stats::result::DramIfStats;

/// The LPDDR channel of the DRAM interface (`"lpddr3-1200x32"`: MT/s and bus bits, or
/// `"ideal"`): bytes per second of the host's accesses to the shared buffer.
pub fn dram_link_rate(l: &Link) -> Result<f64, Problem> {
    match l.kind() {
        LinkType::Ideal => Ok(f64::INFINITY),
        LinkType::Lpddr { mts, bits } => Ok(mts * 1e6 * bits as f64 / 8.0),
        _ => Err(wrong_link(l, Kind::Dram)),
    }
}

pub fn dram_proto(i: &InterfaceConfig) -> Result<Proto, Problem> {
    let rate = dram_link_rate(&i.link)?;
    let wire = Wire::at_rate(rate);
    Ok(Proto {
        kind: Kind::Dram,
        slots: i.queue_depth,
        on_up: [false; 4],
        cmd_prep: SimTime::ZERO,
        cmd: SimTime::ZERO,
        ack: SimTime::ZERO,
        read_setup: SimTime::ZERO,
        write_setup: SimTime::ZERO,
        write_grant_bytes: u64::MAX,
        data_in: wire,
        data_out: wire,
        status: SimTime::ZERO,
        host_status: SimTime::ZERO,
        link_name: if rate.is_finite() {
            format!(
                "DRAM interface {} ({:.0} MB/s channel; host {} at {:.0} MB/s)",
                i.link.text().to_uppercase(),
                rate / 1e6,
                match i.dram.data_move {
                    DataMove::Dma => "DMA",
                    DataMove::Cpu => "CPU copy",
                },
                match i.dram.data_move {
                    DataMove::Dma => i.dram.dma_rate.0,
                    DataMove::Cpu => i.dram.cpu_copy_rate.0,
                } / 1e6
            )
        } else {
            "DRAM interface ideal".into()
        },
    })
}

/// The protocol's run-time state.
pub struct DramIf {
    pub cfg: DramIfConfig,
    pub buddy: Buddy,
    /// Bytes per second of host accesses to the buffer (the LPDDR channel).
    host_rate: f64,
    /// The host DMA engine (or, for CPU copies, unused: the core does the work).
    pub dma: Timeline,
    /// Per bank, the host's access windows still to come or under way (start, end), in the
    /// order they were made. Copies are planned ahead of time, so a plain "free at" would
    /// make the controller wait for host accesses that have not started.
    banks_host: Vec<std::collections::VecDeque<(SimTime, SimTime)>>,
    banks_ctrl: Vec<Timeline>,
    pub stats: DramIfStats,
    /// The command at the head of the queue already counted as waiting for space.
    pub counted_wait: u32,
}

fn ps_for(bytes: u64, per_s: f64) -> SimTime {
    if !per_s.is_finite() {
        return SimTime::ZERO;
    }
    SimTime((bytes as f64 * 1e12 / per_s).round() as u64)
}

impl DramIf {
    pub fn new(i: &InterfaceConfig) -> DramIf {
        let c = i.dram.clone();
        let host_rate = dram_link_rate(&i.link).unwrap_or(f64::INFINITY);
        DramIf {
            buddy: Buddy::new(c.buffer_size.0, c.sector.0),
            host_rate,
            dma: Timeline::default(),
            banks_host: vec![Default::default(); c.banks as usize],
            banks_ctrl: vec![Timeline::default(); c.banks as usize],
            stats: DramIfStats::default(),
            counted_wait: u32::MAX,
            cfg: c,
        }
    }

    /// Largest command: a chunk, but never more than the whole buffer.
    pub fn max_cmd_bytes(&self) -> u64 {
        self.cfg.chunk_size.0.min(self.cfg.buffer_size.0)
    }

    fn invalidate(&self, bytes: u64) -> SimTime {
        SimTime(
            (self.cfg.invalidate_time.0.ps() as u128 * bytes as u128
                / self.cfg.invalidate_span.0.max(1) as u128) as u64,
        )
    }

    /// The host moves `bytes` between its memory and the buffer at `buf_off`, starting at `at`
    /// on `core`: per piece, invalidate, copy, invalidate again, with the next piece's first
    /// invalidation overlapping this piece's copy. Returns when the last piece is done.
    pub fn host_copy(
        &mut self,
        at: SimTime,
        core: &mut Timeline,
        buf_off: u64,
        bytes: u64,
        out_of_buffer: bool,
    ) -> SimTime {
        self.stats.data_bytes += bytes;
        self.stats.storage_channel_bytes += bytes;
        self.stats.memory_channel_bytes += bytes;
        let start = at.max(core.free_at);
        let end = self.copy_pieces(at, core, buf_off, bytes, out_of_buffer);
        self.stats.copy_phase_ns += (end - start).ps() as f64 / 1e3;
        end
    }

    fn copy_pieces(
        &mut self,
        at: SimTime,
        core: &mut Timeline,
        buf_off: u64,
        bytes: u64,
        out_of_buffer: bool,
    ) -> SimTime {
        if self.cfg.data_move == DataMove::Cpu {
            let rate = match self.cfg.cpu_read_copy_rate {
                Some(r) if out_of_buffer => r.0,
                _ => self.cfg.cpu_copy_rate.0,
            };
            let (s, e) = core.reserve(at, ps_for(bytes, rate));
            self.stats.copy_busy_ns += (e - s).ps() as f64 / 1e3;
            self.touch_banks(s, e, buf_off, bytes);
            return e;
        }
        let piece = match self.cfg.invalidate_piece.0 {
            0 => bytes,
            p => p.min(bytes),
        };
        let n = bytes.div_ceil(piece.max(1));
        let size = |k: u64| piece.min(bytes - k * piece);
        let (_, mut pre_end) = core.reserve(at, self.invalidate(size(0)));
        self.stats.invalidate_ns += self.invalidate(size(0)).ps() as f64 / 1e3;
        let mut end = at;
        for k in 0..n {
            let b = size(k);
            let d = self.cfg.dma_setup.0 + ps_for(b, self.cfg.dma_rate.0);
            let (ds, de) = self.dma.reserve(pre_end, d);
            self.stats.copy_busy_ns += d.ps() as f64 / 1e3;
            self.stats.dma_setup_ns += self.cfg.dma_setup.0.ps() as f64 / 1e3;
            self.touch_banks(ds, de, buf_off + k * piece, b);
            if k + 1 < n {
                let inv = self.invalidate(size(k + 1));
                pre_end = core.reserve(ds, inv).1;
                self.stats.invalidate_ns += inv.ps() as f64 / 1e3;
            }
            let inv = self.invalidate(b);
            end = core.reserve(de, inv).1;
            self.stats.invalidate_ns += inv.ps() as f64 / 1e3;
        }
        end
    }

    /// Drop the host's bank windows that ended by `now` (the engine's time): no controller access
    /// from now on can meet them. Without this, runs whose controller never touches a bank
    /// (`skip_media`) would keep every window.
    pub fn forget_host_windows(&mut self, now: SimTime) {
        for host in &mut self.banks_host {
            while host.front().is_some_and(|w| w.1 <= now) {
                host.pop_front();
            }
        }
    }

    /// The host's accesses to the banks holding `bytes` at `off`, spread evenly over a copy
    /// running from `from` to `to`: each interleave piece is read or written at the channel's
    /// rate when the copy reaches it.
    fn touch_banks(&mut self, from: SimTime, to: SimTime, off: u64, bytes: u64) {
        let il = self.cfg.bank_interleave.0.max(1);
        let nb = self.banks_host.len() as u64;
        let span = (to - from).ps() as u128;
        let mut pos = off;
        let end = off + bytes;
        while pos < end {
            let piece = (il - pos % il).min(end - pos);
            let bank = ((pos / il) % nb) as usize;
            let s = from + SimTime((span * (pos - off) as u128 / bytes.max(1) as u128) as u64);
            self.banks_host[bank].push_back((s, s + ps_for(piece, self.host_rate)));
            pos += piece;
        }
    }

    /// The controller moves `bytes` between the buffer at `off` and its back end from `at`; a
    /// bank the host is using pre-empts it. Returns when done.
    pub fn controller_access(&mut self, at: SimTime, off: u64, bytes: u64) -> SimTime {
        let il = self.cfg.bank_interleave.0.max(1);
        let nb = self.banks_ctrl.len() as u64;
        let mut pos = off;
        let end_off = off + bytes;
        let mut t = at;
        while pos < end_off {
            let piece = (il - pos % il).min(end_off - pos);
            let bank = ((pos / il) % nb) as usize;
            let start = t.max(self.banks_ctrl[bank].free_at);
            let dur = ps_for(piece, self.cfg.controller_rate.0);
            // Host windows that end before this access starts are over for good.
            let host = &mut self.banks_host[bank];
            while host.front().is_some_and(|w| w.1 <= t) {
                host.pop_front();
            }
            // Each host access overlapping ours pre-empts it: ours takes that much longer.
            let mut stall = SimTime::ZERO;
            for &(hs, he) in host.iter() {
                if hs < start + dur + stall && he > start {
                    stall += he - hs.max(start);
                }
            }
            if stall > SimTime::ZERO {
                self.stats.bank_conflicts += 1;
                self.stats.bank_stall_ns += stall.ps() as f64 / 1e3;
            }
            let (_, e) = self.banks_ctrl[bank].reserve(start, dur + stall);
            t = e;
            pos += piece;
        }
        t
    }

    /// Queue entries and doorbells the host reads or writes on the storage channel.
    pub fn count_entry(&mut self, bytes: u64) {
        self.stats.storage_channel_bytes += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Bytes;

    /// The DRAM interface on the seed's LPDDR3 channel with default settings.
    fn dram_iface() -> crate::config::InterfaceConfig {
        crate::config::InterfaceConfig {
            kind: crate::config::InterfaceKind::Dram,
            link: Link::parse("lpddr3-1200x32").unwrap(),
            ..crate::config::InterfaceConfig::default()
        }
    }

    #[test]
    fn link_and_invalidation() {
        assert_eq!(
            dram_link_rate(&Link::parse("lpddr3-1200x32").unwrap()).unwrap(),
            4.8e9
        );
        assert!(Link::parse("ddr4-3200x64").is_err());
        let mut s = DramIf::new(&dram_iface());
        assert_eq!(s.invalidate(512 << 10), SimTime::from_us(290));
        // One 4 KiB piece: invalidate, DMA (setup + 4096 B at 450 MB/s), invalidate.
        let mut core = Timeline::default();
        let end = s.host_copy(SimTime::ZERO, &mut core, 0, 4096, true);
        let inv = s.invalidate(4096);
        let dma = SimTime::from_us(2) + ps_for(4096, 450e6);
        assert_eq!(end, inv + dma + inv);
        assert_eq!(s.stats.storage_channel_bytes, 4096);
        assert_eq!(s.stats.memory_channel_bytes, 4096);
    }

    /// A CPU copy holds the core for bytes ÷ rate, with no invalidation; out of the buffer (a
    /// read's data) at `cpu_read_copy_rate` when it is given, into it at `cpu_copy_rate`.
    #[test]
    fn a_cpu_copy_takes_each_direction_at_its_own_rate() {
        let mut s = DramIf::new(&dram_iface());
        s.cfg.data_move = DataMove::Cpu;
        let mut core = Timeline::default();
        let both = ps_for(4096, 100e6);
        assert_eq!(s.host_copy(SimTime::ZERO, &mut core, 0, 4096, true), both);
        s.cfg.cpu_read_copy_rate = Some(crate::config::ByteRate(4e6));
        let mut core = Timeline::default();
        assert_eq!(
            s.host_copy(SimTime::ZERO, &mut core, 0, 4096, true),
            ps_for(4096, 4e6)
        );
        let mut core = Timeline::default();
        assert_eq!(s.host_copy(SimTime::ZERO, &mut core, 0, 4096, false), both);
        assert_eq!(s.stats.invalidate_ns, 0.0);
    }

    #[test]
    fn pipelining_overlaps_invalidation_with_copy() {
        let i = dram_iface();
        let mut whole = DramIf::new(&i);
        whole.cfg.invalidate_piece = Bytes(0);
        let mut piped = DramIf::new(&i);
        let (mut c1, mut c2) = (Timeline::default(), Timeline::default());
        let a = whole.host_copy(SimTime::ZERO, &mut c1, 0, 512 << 10, true);
        let b = piped.host_copy(SimTime::ZERO, &mut c2, 0, 512 << 10, true);
        assert!(b < a, "pipelined {b:?} should beat whole {a:?}");
    }

    #[test]
    fn host_wins_bank_conflicts() {
        let i = dram_iface();
        let mut s = DramIf::new(&i);
        // Bank 0 busy for 4096 B at 4.8 GB/s from time 0.
        s.touch_banks(SimTime::ZERO, SimTime::from_us(9), 0, 4096);
        let end = s.controller_access(SimTime::ZERO, 0, 4096);
        assert_eq!(s.stats.bank_conflicts, 1);
        assert_eq!(end, ps_for(4096, 4.8e9) + ps_for(4096, 266e6 * 8.0));
        // A host access planned for later does not hold the controller up now.
        s.touch_banks(SimTime::from_us(100), SimTime::from_us(109), 8 * 4096, 4096);
        let end = s.controller_access(SimTime::from_us(10), 8 * 4096, 4096);
        assert_eq!(end, SimTime::from_us(10) + ps_for(4096, 266e6 * 8.0));
        assert_eq!(s.stats.bank_conflicts, 1);
        // Another bank: no conflict.
        s.controller_access(SimTime::ZERO, 4096, 4096);
        assert_eq!(s.stats.bank_conflicts, 1);
    }
}
