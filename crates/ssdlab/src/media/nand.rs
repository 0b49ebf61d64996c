//! NAND flash: geometry, addressing, and the timing of array operations and bus transfers.
//!
//! Addresses are flat indices. A plane's global index is
//! `((channel × packages + package) × dies + die) × planes + plane`; a die's is that divided by
//! planes per die; a physical mapping unit ("pun") is
//! `(plane × blocks + block) × units_per_block + unit`.

use crate::config::SsdConfig;
use crate::config::{AllocationOrder, Level, MultiplaneRule};
use crate::sim::divisor::Divisor;
use crate::sim::SimTime;

#[derive(Clone, Debug)]
pub struct Geometry {
    pub channels: u32,
    pub packages_per_channel: u32,
    pub dies_per_package: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_bytes: u64,
    /// Mapping units per page (page size / map unit).
    pub units_per_page: u32,
    pub unit_bytes: u64,
    pub bits_per_cell: u32,
    by_unit_per_page: Divisor<u32>,
    by_unit_per_block: Divisor<u32>,
    by_block_per_plane: Divisor<u32>,
    by_plane_per_die: Divisor<u32>,
    by_die_per_channel: Divisor<u32>,
    /// Division by `unit_bytes` (a byte offset's map unit).
    by_unit_bytes: Divisor,
}

impl Geometry {
    pub fn from_config(cfg: &SsdConfig) -> Geometry {
        let n = &cfg.nand;
        let unit = cfg.map_unit_bytes();
        let units_per_page = (n.page_size.0 / unit) as u32;
        Geometry {
            channels: n.channels,
            packages_per_channel: n.packages_per_channel,
            dies_per_package: n.dies_per_package,
            planes_per_die: n.planes_per_die,
            blocks_per_plane: n.blocks_per_plane,
            pages_per_block: n.pages_per_block,
            page_bytes: n.page_size.0,
            units_per_page,
            unit_bytes: unit,
            bits_per_cell: n.cell.bits() as u32,
            by_unit_per_page: Divisor::new(units_per_page),
            by_unit_per_block: Divisor::new(n.pages_per_block * units_per_page),
            by_block_per_plane: Divisor::new(n.blocks_per_plane),
            by_plane_per_die: Divisor::new(n.planes_per_die),
            by_die_per_channel: Divisor::new(n.packages_per_channel * n.dies_per_package),
            by_unit_bytes: Divisor::new(unit),
        }
    }

    /// The map unit that holds byte `offset` (`offset / unit_bytes`, by a shift when the unit
    /// is a power of two).
    #[inline]
    pub fn unit_of(&self, offset: u64) -> u64 {
        self.by_unit_bytes.quotient(offset)
    }

    pub fn dies_per_channel(&self) -> u32 {
        self.packages_per_channel * self.dies_per_package
    }
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel()
    }
    pub fn planes(&self) -> u32 {
        self.dies() * self.planes_per_die
    }
    pub fn blocks(&self) -> u32 {
        self.planes() * self.blocks_per_plane
    }
    #[inline]
    pub fn units_per_block(&self) -> u32 {
        self.by_unit_per_block.get()
    }
    pub fn units(&self) -> u64 {
        self.blocks() as u64 * self.units_per_block() as u64
    }

    #[inline]
    pub fn plane_of_block(&self, block: u32) -> u32 {
        self.by_block_per_plane.quotient(block)
    }
    #[inline]
    pub fn block_of_unit(&self, pun: u32) -> u32 {
        self.by_unit_per_block.quotient(pun)
    }
    #[inline]
    pub fn die_of_plane(&self, plane: u32) -> u32 {
        self.by_plane_per_die.quotient(plane)
    }
    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        self.by_die_per_channel.quotient(die)
    }
    /// Page index within its block.
    #[inline]
    pub fn page_in_block(&self, pun: u32) -> u32 {
        self.by_unit_per_page
            .quotient(self.by_unit_per_block.remainder(pun))
    }
    /// Block index within its plane (the block address bits above the plane select).
    #[inline]
    pub fn block_in_plane(&self, pun: u32) -> u32 {
        self.by_block_per_plane
            .remainder(self.by_unit_per_block.quotient(pun))
    }

    /// Whether pages `a` and `b` (physical units, on global planes `plane_a` and `plane_b`) may
    /// be the pages of two planes in one multi-plane operation under `rule`: always on distinct
    /// planes of one die; under `onfi`, at the same page address within their blocks; under
    /// `onfi-same-block`, also in the same block of their planes. Units of one page are not a
    /// multi-plane pair (they merge into one page's operation).
    #[inline]
    pub fn multiplane_pair_ok(
        &self,
        rule: MultiplaneRule,
        a: u32,
        plane_a: u32,
        b: u32,
        plane_b: u32,
    ) -> bool {
        plane_a != plane_b
            && self.die_of_plane(plane_a) == self.die_of_plane(plane_b)
            && self.multiplane_addresses_ok(rule, a, b)
    }

    /// The address part of [`Geometry::multiplane_pair_ok`], for pages already known to be on
    /// distinct planes of one die.
    #[inline]
    pub fn multiplane_addresses_ok(&self, rule: MultiplaneRule, a: u32, b: u32) -> bool {
        match rule {
            MultiplaneRule::Relaxed => true,
            MultiplaneRule::Onfi => self.page_in_block(a) == self.page_in_block(b),
            MultiplaneRule::OnfiSameBlock => {
                self.page_in_block(a) == self.page_in_block(b)
                    && self.block_in_plane(a) == self.block_in_plane(b)
            }
        }
    }

    /// A global page id (unique over the device), used to merge units of one page.
    #[inline]
    pub fn page_id(&self, pun: u32) -> u32 {
        self.by_unit_per_page.quotient(pun)
    }

    /// Global plane index from its coordinates.
    pub fn plane_index(&self, ch: u32, pkg: u32, die: u32, plane: u32) -> u32 {
        ((ch * self.packages_per_channel + pkg) * self.dies_per_package + die) * self.planes_per_die
            + plane
    }

    /// Planes in the order consecutive allocations visit them. `order` lists the coordinates
    /// fastest-varying first, e.g. "CWDP": channel, then way (package), then die, then plane.
    pub fn stripe_order(&self, order: &AllocationOrder) -> Vec<u32> {
        let dims: Vec<(Level, u32)> = order
            .0
            .iter()
            .map(|&l| {
                let n = match l {
                    Level::Channel => self.channels,
                    Level::Way => self.packages_per_channel,
                    Level::Die => self.dies_per_package,
                    Level::Plane => self.planes_per_die,
                };
                (l, n)
            })
            .collect();
        let total = self.planes();
        let mut out = Vec::with_capacity(total as usize);
        for mut i in 0..total {
            let (mut ch, mut pkg, mut die, mut pl) = (0, 0, 0, 0);
            for &(c, n) in &dims {
                let v = i % n;
                i /= n;
                match c {
                    Level::Channel => ch = v,
                    Level::Way => pkg = v,
                    Level::Die => die = v,
                    Level::Plane => pl = v,
                }
            }
            out.push(self.plane_index(ch, pkg, die, pl));
        }
        out
    }
}

/// Timing of the array and the channel bus, in picoseconds.
#[derive(Clone, Debug)]
pub struct NandTimingPs {
    pub read: Vec<SimTime>,
    pub program: Vec<SimTime>,
    pub erase: SimTime,
    pub ecc_decode: SimTime,
    pub cmd_addr: SimTime,
    /// Program and erase suspension: None when `nand.suspend` is off.
    pub suspend: Option<SuspendPs>,
    /// Bus picoseconds per byte, ×1024 for sub-picosecond precision.
    bus_ps_per_byte_x1024: u64,
    /// tR and tPROG of each page of a block, by its index in the block (`read[page_type(p)]`
    /// and `program[page_type(p)]`), worked out once: the die path looks a page's time up
    /// with no division by the number of page types.
    read_by_page: Vec<SimTime>,
    program_by_page: Vec<SimTime>,
    /// The bus time of one map unit's data ([`NandTimingPs::bus_time`] of `unit_bytes`).
    unit_xfer: SimTime,
}

/// Program and erase suspend/resume timing.
#[derive(Clone, Copy, Debug)]
pub struct SuspendPs {
    pub program: SimTime,
    pub erase: SimTime,
    pub resume: SimTime,
    pub max_per_op: u32,
}

impl NandTimingPs {
    pub fn from_config(cfg: &SsdConfig) -> NandTimingPs {
        let n = &cfg.nand;
        let bytes_per_s = n.bus.rate.0 * (n.bus.width_bits / 8) as f64;
        let read: Vec<SimTime> = n.timing.read.iter().map(|d| d.0).collect();
        let program: Vec<SimTime> = n.timing.program.iter().map(|d| d.0).collect();
        let bus_ps_per_byte_x1024 = (1e12 / bytes_per_s * 1024.0).round() as u64;
        // Page types by the same round-robin as `page_type` (validation gives both lists one
        // entry per bit of the cell).
        let types = read.len().max(1);
        let by_page = |times: &[SimTime]| -> Vec<SimTime> {
            (0..n.pages_per_block as usize)
                .map(|p| times.get(p % types).copied().unwrap_or(SimTime::ZERO))
                .collect()
        };
        NandTimingPs {
            read_by_page: by_page(&read),
            program_by_page: by_page(&program),
            unit_xfer: SimTime::of_bytes(cfg.map_unit_bytes(), bus_ps_per_byte_x1024),
            read,
            program,
            erase: n.timing.erase.0,
            ecc_decode: n.timing.ecc_decode.0,
            cmd_addr: n.bus.cmd_addr.0,
            suspend: n.suspend.then(|| {
                use crate::config::{
                    DEFAULT_ERASE_SUSPEND_LATENCY, DEFAULT_MAX_SUSPENDS_PER_OP,
                    DEFAULT_PROGRAM_SUSPEND_LATENCY, DEFAULT_RESUME_LATENCY,
                };
                SuspendPs {
                    program: n
                        .program_suspend_latency
                        .unwrap_or(DEFAULT_PROGRAM_SUSPEND_LATENCY)
                        .0,
                    erase: n
                        .erase_suspend_latency
                        .unwrap_or(DEFAULT_ERASE_SUSPEND_LATENCY)
                        .0,
                    resume: n.resume_latency.unwrap_or(DEFAULT_RESUME_LATENCY).0,
                    max_per_op: n.max_suspends_per_op.unwrap_or(DEFAULT_MAX_SUSPENDS_PER_OP),
                }
            }),
            bus_ps_per_byte_x1024,
        }
    }

    /// Page type of a page index within its block: LSB, CSB, MSB, … in turn. Real parts order
    /// page types in a pattern of their own; a round-robin keeps the mean right.
    #[inline]
    pub fn page_type(&self, page_in_block: u32) -> usize {
        page_in_block as usize % self.read.len()
    }

    /// tR of the page at `page_in_block` within its block.
    #[inline(always)]
    pub fn read_time(&self, page_in_block: u32) -> SimTime {
        self.read_by_page[page_in_block as usize]
    }

    /// tPROG of the page at `page_in_block` within its block.
    #[inline(always)]
    pub fn program_time(&self, page_in_block: u32) -> SimTime {
        self.program_by_page[page_in_block as usize]
    }

    #[inline]
    pub fn bus_time(&self, bytes: u64) -> SimTime {
        SimTime::of_bytes(bytes, self.bus_ps_per_byte_x1024)
    }

    /// The bus time of one map unit's data: `bus_time(unit_bytes)`.
    #[inline(always)]
    pub fn unit_xfer(&self) -> SimTime {
        self.unit_xfer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::presets::preset_toml;
    use crate::config::units::Dur;

    fn small() -> SsdConfig {
        SsdConfig::from_toml_str(preset_toml("small-tlc").unwrap(), "t").unwrap()
    }

    #[test]
    fn stripe_order_is_a_permutation_channel_first() {
        let g = Geometry::from_config(&small());
        let order = g.stripe_order(&AllocationOrder::parse("CWDP").unwrap());
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..g.planes()).collect::<Vec<_>>());
        // Channel varies fastest: the first `channels` planes are on distinct channels.
        let chans: Vec<u32> = order[..g.channels as usize]
            .iter()
            .map(|&p| g.channel_of_die(g.die_of_plane(p)))
            .collect();
        assert_eq!(chans, (0..g.channels).collect::<Vec<_>>());
    }

    /// The per-page tables give what the page types' round-robin gives, on a cell of three
    /// page types (TLC: a type count that no shift divides by), and one unit's bus time is
    /// the bus time of its bytes.
    #[test]
    fn page_times_follow_the_page_types() {
        let mut cfg = small();
        cfg.nand.timing.read = vec![
            Dur(SimTime(50_000_000)),
            Dur(SimTime(70_000_000)),
            Dur(SimTime(90_000_000)),
        ];
        cfg.nand.timing.program = vec![
            Dur(SimTime(500_000_000)),
            Dur(SimTime(1_500_000_000)),
            Dur(SimTime(3_000_000_000)),
        ];
        let t = NandTimingPs::from_config(&cfg);
        for p in 0..cfg.nand.pages_per_block {
            assert_eq!(t.read_time(p), t.read[t.page_type(p)], "page {p}");
            assert_eq!(t.program_time(p), t.program[t.page_type(p)], "page {p}");
        }
        assert_eq!(t.read_time(4), SimTime(70_000_000));
        assert_eq!(t.program_time(5), SimTime(3_000_000_000));
        assert_eq!(t.unit_xfer(), t.bus_time(cfg.map_unit_bytes()));
    }

    /// small-tlc: 2 planes per die (planes 0-1 are die 0, 2-3 die 1), 128 blocks of 32 pages
    /// of 4 units per plane.
    fn unit(g: &Geometry, plane: u32, block: u32, page: u32) -> u32 {
        (plane * g.blocks_per_plane + block) * g.units_per_block() + page * g.units_per_page
    }

    #[test]
    fn the_onfi_rule_pairs_only_the_same_page_address_on_another_plane_of_the_die() {
        let g = Geometry::from_config(&small());
        let ok = |rule, (pa, ba, ga): (u32, u32, u32), (pb, bb, gb): (u32, u32, u32)| {
            g.multiplane_pair_ok(rule, unit(&g, pa, ba, ga), pa, unit(&g, pb, bb, gb), pb)
        };
        use MultiplaneRule::*;
        // Plane 0 block 5 page 7 with plane 1 block 9 page 7: same page address, other blocks.
        assert!(ok(Relaxed, (0, 5, 7), (1, 9, 7)));
        assert!(ok(Onfi, (0, 5, 7), (1, 9, 7)));
        assert!(!ok(OnfiSameBlock, (0, 5, 7), (1, 9, 7)));
        assert!(ok(OnfiSameBlock, (0, 5, 7), (1, 5, 7)));
        // Page 7 with page 8 (an LSB page with the next type's): only the relaxed rule pairs.
        assert!(ok(Relaxed, (0, 5, 7), (1, 9, 8)));
        assert!(!ok(Onfi, (0, 5, 7), (1, 9, 8)));
        assert!(!ok(OnfiSameBlock, (0, 5, 7), (1, 5, 8)));
        // Page 0 of block 1 and page 0 of block 0 differ only in the block address.
        assert!(ok(Onfi, (0, 1, 0), (1, 0, 0)));
        // Units 1 and 3 of a page carry the page's address.
        let a = unit(&g, 0, 2, 4) + 1;
        let b = unit(&g, 1, 6, 4) + 3;
        assert!(g.multiplane_pair_ok(Onfi, a, 0, b, 1));
        // Never two pages of one plane, never planes of two dies (plane 2 is die 1's).
        for rule in [Relaxed, Onfi, OnfiSameBlock] {
            assert!(!ok(rule, (0, 5, 7), (0, 9, 7)));
            assert!(!ok(rule, (1, 5, 7), (2, 5, 7)));
        }
    }

    #[test]
    fn block_in_plane_strips_the_plane() {
        let g = Geometry::from_config(&small());
        assert_eq!(g.block_in_plane(unit(&g, 3, 17, 5) + 2), 17);
        assert_eq!(g.page_in_block(unit(&g, 3, 17, 5) + 2), 5);
    }

    #[test]
    fn bus_time_matches_rate() {
        let t = NandTimingPs::from_config(&small());
        // 800 MT/s × 1 byte: 1.25 ns per byte; 16 KiB = 20.48 us.
        assert_eq!(t.bus_time(16384), SimTime(20_480_000));
    }
}
