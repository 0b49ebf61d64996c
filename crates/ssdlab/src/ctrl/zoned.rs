//! The firmware of a zoned drive (`[zns]`, docs/zns.md): the zone state machine
//! (`ctrl::zones`) over the NAND, and where each zone's logical blocks lie on it. There is no
//! map and no garbage collection: a zone is a fixed set of erase blocks, written in order at
//! its write pointer, erased whole when the host resets it.
//!
//! The layout (`zns.layout`) says which planes a zone's blocks are on: one die's, one
//! channel's, or all of them (its erase block set); a zone of k sets takes k blocks of each of
//! those planes. Zones are dealt round the groups of planes (consecutive zones on consecutive
//! dies or channels), and within a zone consecutive pages go to consecutive planes of its set,
//! so that a zone's sequential writes keep all its planes busy: the zone's page p is on slot
//! `p mod S` of its set (S planes; slots go round the channels first, then the dies, then a
//! die's planes), at row `p / S`, that is block `row / pages_per_block` of its k and page
//! `row mod pages_per_block` in it. Each block's pages are thus programmed in order.
//!
//! With `[reliability]` a zone's blocks wear as its resets erase them. A zone has no spare
//! blocks to swap in: when a reset brings one of its blocks to the P/E limit, or one of them
//! was bad from the factory, the zone goes Offline (NVMe Zoned Namespace Command Set 1.1, zone
//! state ZSO: neither read nor written; the reset has just given up its data, so Read Only,
//! ZSRO, would keep nothing readable). The drive's capacity shrinks by the zone; it turns
//! read-only when no zone is left to write.
//!
//! With a write-back cache buffer (`[cache]`, docs/cache.md) the buffer takes the zones' data
//! and writes it to the media later, in each zone's order ([`ZoneOrder`]): a zone's lines go to
//! its blocks at a *flush pointer* of their own, behind the host's write pointer, one after the
//! other (docs/zns.md, "With a cache buffer").

use super::zones::{ZoneState, Zones};
use crate::config::{CacheMode, FinishMode, SsdConfig, ZoneLayout};
use crate::ftl::Wear;
use crate::media::nand::Geometry;
use crate::sim::divisor::Divisor;
use crate::sim::Rng;
use rustc_hash::FxHashMap;

/// What the zoned firmware counts beside the state machine's counters.
#[derive(Clone, Debug, Default)]
pub struct ZonedCounters {
    /// Block erases the resets asked for.
    pub erases: u64,
    /// Logical blocks programmed with filler by finishes (`zns.finish = "fill"`).
    pub filled_units: u64,
    /// Logical blocks the host wrote (writes and appends accepted).
    pub host_units_written: u64,
}

/// A write-back buffer's order per zone. The host writes a zone in order, but a write's data
/// may reach the controller before an earlier one's (the link backfills) and a unit may wait
/// for a line: so a write goes into the buffer only once every earlier write of its zone has
/// (else it is *parked*), and the buffer lets no unit past one that waits for a line. Then a
/// zone's lines not yet on the media are exactly its blocks from its flush pointer on, and the
/// line at the flush pointer is always there to be flushed first.
#[derive(Debug, Default)]
pub struct ZoneOrder {
    /// Per zone: the next block (zone-relative) whose data goes into the buffer.
    arrived: Vec<u64>,
    /// Per zone: the next block (zone-relative) whose line goes to the media.
    flushed: Vec<u64>,
    /// Per zone: its resets so far.
    resets: Vec<u32>,
    /// Write commands whose data came in before an earlier write's of their zone:
    /// (zone, first block in the zone, command), in arrival order.
    parked: Vec<(u32, u64, u32)>,
    /// Write commands accepted whose data is not in yet: the resets of their zone then (a
    /// write whose zone was reset before its data came in is dropped: the host gave it up).
    in_flight: FxHashMap<u32, u32>,
}

/// What becomes of a zoned write's data that came in, with a write-back buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Into the buffer now (every earlier write of its zone is in).
    Buffer,
    /// Parked until the earlier writes of its zone are in.
    Parked,
    /// Its zone was reset since the write was accepted: the data goes nowhere.
    Dropped,
}

pub struct ZonedNand {
    pub zones: Zones,
    /// With a write-back cache buffer: each zone's order into it and out of it.
    pub order: Option<ZoneOrder>,
    geo: Geometry,
    /// Planes of a zone's set.
    set_planes: u32,
    /// Blocks of each of its set's planes a zone takes.
    blocks_per_plane: u32,
    /// The plane (within its group) of each slot of a set: consecutive pages go to other
    /// channels first, then other dies, then other planes of a die, as the page FTL's default
    /// allocation order (`CWDP`) spreads them.
    slot_plane: Vec<u32>,
    pub finish: FinishMode,
    /// Per zone: logical blocks programmed since its reset (its data on the flash; a zone
    /// finished without filling has a write pointer beyond it).
    programmed: Vec<u64>,
    erase_count: Vec<u32>,
    pub counters: ZonedCounters,
    /// Wear-out, with `[reliability]`: the page FTL's figures ([`Wear`]; `min_good_blocks` is
    /// 0, a zoned drive has no read-only level in blocks) and the retired blocks.
    wear: Option<(Wear, Vec<bool>)>,
    /// Zones usable when the drive was built (not offline for a factory bad block).
    start_zones: u32,
    /// The divisions of [`ZonedNand::unit_of`], once per logical block written or read (the
    /// zone's is the zones'): a page's units, a set's planes, a block's pages, the groups of
    /// planes.
    div_page: Divisor,
    div_set: Divisor,
    div_block: Divisor,
    div_groups: Divisor,
    /// The HIL's work vector for this drive (`ctrl/hil/zoned.rs`): a write's transactions,
    /// filled and handed to the FIL within one call, kept for its capacity.
    pub(crate) txns: Vec<u32>,
}

impl ZonedNand {
    /// The zones `cfg.zns` cuts the NAND of `geo` into (a validated config).
    /// With `[reliability]`, factory bad blocks are drawn from `seed`.
    pub fn new(cfg: &SsdConfig, geo: &Geometry, seed: u64) -> ZonedNand {
        let z = cfg.zns.as_ref().expect("a zoned drive has [zns]");
        let unit = geo.unit_bytes;
        let set_planes = z.set_planes(&cfg.nand) as u32;
        let block_bytes = unit * geo.units_per_block() as u64;
        let blocks_per_plane = (z.zone_size.0 / (block_bytes * set_planes as u64)) as u32;
        let groups = geo.planes() / set_planes;
        let (ppd, dpc) = (geo.planes_per_die, geo.dies_per_channel());
        let slot_plane = (0..set_planes)
            .map(|slot| match z.layout {
                ZoneLayout::Die => slot,
                ZoneLayout::Channel => (slot % dpc) * ppd + slot / dpc,
                ZoneLayout::Striped => {
                    let (ch, rest) = (slot % geo.channels, slot / geo.channels);
                    (ch * dpc + rest % dpc) * ppd + rest / dpc
                }
            })
            .collect();
        let count = groups * (geo.blocks_per_plane / blocks_per_plane);
        let mut z = ZonedNand {
            zones: Zones::new(
                count,
                z.zone_size.0 / unit,
                z.capacity_bytes() / unit,
                z.max_open_zones,
                z.max_active_zones,
            ),
            geo: geo.clone(),
            set_planes,
            blocks_per_plane,
            slot_plane,
            finish: z.finish,
            programmed: vec![0; count as usize],
            erase_count: vec![0; geo.blocks() as usize],
            counters: ZonedCounters::default(),
            div_page: Divisor::new(geo.units_per_page as u64),
            div_set: Divisor::new(set_planes as u64),
            div_block: Divisor::new(geo.pages_per_block as u64),
            div_groups: Divisor::new(groups as u64),
            txns: Vec::new(),
            wear: None,
            start_zones: count,
            order: cfg
                .cache
                .as_ref()
                .filter(|c| c.enabled && c.mode == CacheMode::WriteBack)
                .map(|_| ZoneOrder {
                    arrived: vec![0; count as usize],
                    flushed: vec![0; count as usize],
                    resets: vec![0; count as usize],
                    ..Default::default()
                }),
        };
        if let Some(r) = &cfg.reliability {
            z.start_wear(
                r.pe_limit_for(cfg.nand.cell),
                r.factory_bad_block_rate,
                seed,
            );
        }
        z
    }

    /// The NAND geometry the zones lie on.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// `[reliability]`: each block is bad from the factory with probability
    /// `factory_bad_block_rate` (the page FTL's random stream and block order); a zone holding
    /// one starts offline.
    fn start_wear(&mut self, pe_limit: u32, factory_bad_block_rate: f64, seed: u64) {
        let blocks = self.erase_count.len();
        let mut bad = vec![false; blocks];
        if factory_bad_block_rate > 0.0 {
            let mut rng = Rng::stream(seed, "nand.factory_bad_blocks");
            for b in bad.iter_mut() {
                *b = rng.unit_f64() < factory_bad_block_rate;
            }
        }
        let factory_bad = bad.iter().filter(|&&x| x).count() as u64;
        for zone in 0..self.zones.count() {
            if self.zone_blocks(zone, u64::MAX).any(|b| bad[b as usize]) {
                self.zones.make_offline(zone);
            }
        }
        self.start_zones = self.zones.count() - self.zones.count_in(ZoneState::Offline);
        let wear = Wear {
            pe_limit,
            factory_bad_blocks: factory_bad,
            retired_blocks: 0,
            good_blocks: blocks as u64 - factory_bad,
            min_good_blocks: 0,
            read_only: self.start_zones == 0,
        };
        self.wear = Some((wear, bad));
    }

    /// The blocks of `zone` that hold its first `pages` pages (in zone order), each once.
    fn zone_blocks(&self, zone: u32, pages: u64) -> impl Iterator<Item = u32> + '_ {
        let s = self.set_planes as u64;
        let ppb = self.geo.pages_per_block as u64;
        let zl = self.zones.zone_lbas();
        let upp = self.geo.units_per_page as u64;
        // Pages past the zone's capacity are never written.
        let pages = pages.min(self.zones.cap_lbas().div_ceil(upp));
        (0..self.blocks_per_plane as u64).flat_map(move |layer| {
            (0..s).filter_map(move |slot| {
                // The block's first page in zone order.
                let first = layer * ppb * s + slot;
                (first < pages).then(|| {
                    let lba = zone as u64 * zl + first * upp;
                    self.geo.block_of_unit(self.unit_of(lba))
                })
            })
        })
    }

    /// The wear-out figures, with `[reliability]`.
    pub fn wear(&self) -> Option<&Wear> {
        self.wear.as_ref().map(|(w, _)| w)
    }

    /// Zones offline for worn or factory bad blocks, with `[reliability]`.
    pub fn offline_zones(&self) -> Option<u32> {
        self.wear
            .as_ref()
            .map(|_| self.zones.count_in(ZoneState::Offline))
    }

    /// No zone is left to write: the drive wore out.
    pub fn read_only(&self) -> bool {
        self.wear.as_ref().is_some_and(|(w, _)| w.read_only)
    }

    /// Mean erase count of the good blocks against the P/E limit, in percent (SMART's
    /// Percentage Used), with `[reliability]`.
    pub fn percentage_used(&self) -> Option<f64> {
        let (w, bad) = self.wear.as_ref()?;
        let (n, sum) = self
            .erase_count
            .iter()
            .zip(bad)
            .filter(|(_, &b)| !b)
            .fold((0u64, 0u64), |(n, s), (&e, _)| (n + 1, s + e as u64));
        if n == 0 {
            return Some(100.0);
        }
        Some(sum as f64 / n as f64 / w.pe_limit as f64 * 100.0)
    }

    /// The zones still usable against those the drive was built with, in percent: a zoned
    /// drive keeps no spare blocks, a worn zone leaves and its capacity with it (SMART's
    /// Available Spare; 100 without `[reliability]`).
    pub fn available_spare_percent(&self) -> f64 {
        if self.wear.is_none() || self.start_zones == 0 {
            return if self.wear.is_none() { 100.0 } else { 0.0 };
        }
        let usable = self.zones.count() - self.zones.count_in(ZoneState::Offline);
        usable as f64 / self.start_zones as f64 * 100.0
    }

    /// The physical unit (as `media::nand::Geometry` numbers them) of logical block `lba`.
    #[inline]
    pub fn unit_of(&self, lba: u64) -> u32 {
        let (zone, off) = self.zones.split(lba);
        let (page, unit) = self.div_page.divmod(off);
        let (row, slot) = self.div_set.divmod(page);
        let (layer, page_in_block) = self.div_block.divmod(row);
        let (zone_row, group) = self.div_groups.divmod(zone);
        let plane = group as u32 * self.set_planes + self.slot_plane[slot as usize];
        let block = plane * self.geo.blocks_per_plane
            + zone_row as u32 * self.blocks_per_plane
            + layer as u32;
        let upp = self.div_page.get();
        (block as u64 * self.geo.units_per_block() as u64 + page_in_block * upp + unit) as u32
    }

    /// Whether logical block `lba` holds data on the flash (it was written, or filled).
    #[inline]
    pub fn is_programmed(&self, lba: u64) -> bool {
        let (zone, off) = self.zones.split(lba);
        self.programmed.get(zone as usize).is_some_and(|&p| off < p)
    }

    /// Logical blocks `from..to` of `zone` (zone-relative) are being programmed.
    pub fn take(&mut self, zone: u32, to: u64) {
        let p = &mut self.programmed[zone as usize];
        *p = (*p).max(to);
    }

    /// Logical blocks of `zone` programmed so far (zone-relative).
    pub fn programmed(&self, zone: u32) -> u64 {
        self.programmed[zone as usize]
    }

    /// The blocks of `zone` that hold programmed pages (those a reset erases), and forget its
    /// data: its blocks are erased from now on.
    /// With `[reliability]`, a block the erase brings to its P/E limit retires, and the zone
    /// goes offline.
    pub fn reset_blocks(&mut self, zone: u32) -> Vec<u32> {
        let pages = self.programmed[zone as usize].div_ceil(self.geo.units_per_page as u64);
        self.programmed[zone as usize] = 0;
        let blocks: Vec<u32> = self.zone_blocks(zone, pages).collect();
        let mut worn = false;
        for &b in &blocks {
            self.erase_count[b as usize] += 1;
            if let Some((w, bad)) = self.wear.as_mut() {
                if self.erase_count[b as usize] >= w.pe_limit && !bad[b as usize] {
                    bad[b as usize] = true;
                    w.retired_blocks += 1;
                    w.good_blocks -= 1;
                    worn = true;
                }
            }
        }
        if worn {
            self.zones.make_offline(zone);
            let usable = self.zones.count() - self.zones.count_in(ZoneState::Offline);
            if let Some((w, _)) = self.wear.as_mut() {
                w.read_only = usable == 0;
            }
        }
        self.counters.erases += blocks.len() as u64;
        blocks
    }

    /// A write-back buffer takes the zones' data: writes take their blocks on the media when
    /// their lines are flushed, not when accepted.
    #[inline]
    pub fn buffered(&self) -> bool {
        self.order.is_some()
    }

    /// With a write-back buffer: write command `cmd` to `zone` was accepted; its data will
    /// come in later.
    pub fn accepted(&mut self, cmd: u32, zone: u32) {
        if let Some(o) = self.order.as_mut() {
            o.in_flight.insert(cmd, o.resets[zone as usize]);
        }
    }

    /// With a write-back buffer: the data of write command `cmd` (blocks `lba..lba + nlb`) came
    /// in: what becomes of it. [`Arrival::Buffer`] counts the blocks as in the buffer.
    pub fn arrived(&mut self, cmd: u32, lba: u64, nlb: u64) -> Arrival {
        let (zone, off) = self.zones.split(lba);
        let o = self.order.as_mut().expect("a write-back buffer");
        let z = zone as usize;
        if o.in_flight.remove(&cmd) != Some(o.resets[z]) {
            return Arrival::Dropped;
        }
        if off != o.arrived[z] {
            o.parked.push((zone as u32, off, cmd));
            return Arrival::Parked;
        }
        o.arrived[z] = off + nlb;
        Arrival::Buffer
    }

    /// With a write-back buffer: a parked write of `zone` whose turn has come (every earlier
    /// write of its zone is in the buffer), counted as in it; None if there is none.
    pub fn unpark(&mut self, zone: u32, nlb_of: impl Fn(u32) -> u64) -> Option<u32> {
        let o = self.order.as_mut()?;
        let z = zone as usize;
        let i = (o.parked.iter()).position(|&(pz, off, _)| pz == zone && off == o.arrived[z])?;
        let (_, off, cmd) = o.parked.remove(i);
        o.arrived[z] = off + nlb_of(cmd);
        Some(cmd)
    }

    /// With a write-back buffer: the block of `lba`'s zone whose line must go to the media
    /// first (its flush pointer): a zone's blocks are programmed in order.
    #[inline]
    pub fn next_to_flush(&self, lba: u64) -> u64 {
        let (zone, _) = self.zones.split(lba);
        let o = self.order.as_ref().expect("a write-back buffer");
        zone * self.zones.zone_lbas() + o.flushed[zone as usize]
    }

    /// With a write-back buffer: `lba`'s line (at its zone's flush pointer) goes to the media
    /// now: the pointer moves past it, and the block holds data from now on. Returns its unit.
    pub fn flush_unit(&mut self, lba: u64) -> u32 {
        let (zone, off) = self.zones.split(lba);
        let o = self.order.as_mut().expect("a write-back buffer");
        debug_assert_eq!(o.flushed[zone as usize], off, "a zone flushes in order");
        o.flushed[zone as usize] = off + 1;
        self.take(zone as u32, off + 1);
        self.unit_of(lba)
    }

    /// With a write-back buffer: the blocks of `zone` (zone-relative) whose data is in the
    /// buffer or on the media: the buffer holds no line of the zone past them.
    pub fn written_extent(&self, zone: u32) -> u64 {
        let arrived = self.order.as_ref().map_or(0, |o| o.arrived[zone as usize]);
        arrived.max(self.programmed[zone as usize])
    }

    /// With a write-back buffer: `zone` was reset. Its writes not yet in the buffer are given
    /// up: returns the parked ones (their commands end), and those still on their way will be
    /// dropped when their data comes in.
    pub fn reset_order(&mut self, zone: u32) -> Vec<u32> {
        let Some(o) = self.order.as_mut() else {
            return Vec::new();
        };
        let z = zone as usize;
        o.arrived[z] = 0;
        o.flushed[z] = 0;
        o.resets[z] = o.resets[z].wrapping_add(1);
        let mut given_up = Vec::new();
        o.parked.retain(|&(pz, _, cmd)| {
            if pz == zone {
                given_up.push(cmd);
            }
            pz != zone
        });
        given_up
    }

    pub fn units_per_page(&self) -> u64 {
        self.geo.units_per_page as u64
    }

    /// Bytes of a logical block.
    pub fn unit_bytes(&self) -> u64 {
        self.geo.unit_bytes
    }

    /// Erases of every block, by block index.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zoned(layout: &str, size: &str) -> ZonedNand {
        let cfg = SsdConfig::resolve(
            "small-tlc",
            &[
                "ftl.kind=\"none\"".into(),
                "ftl.over_provisioning=0.0".into(),
                "precondition.fill=\"none\"".into(),
                "precondition.random_overwrite=0.0".into(),
                format!("zns.layout=\"{layout}\""),
                format!("zns.zone_size=\"{size}\""),
            ],
        )
        .unwrap();
        ZonedNand::new(&cfg, &Geometry::from_config(&cfg), 1)
    }

    /// Every logical block of the drive has its own physical unit, a zone's units stay on its
    /// layout's planes, and each block's pages come in order.
    #[test]
    fn zones_map_one_to_one_onto_their_layouts_planes() {
        for (layout, size, planes_per_zone) in [
            ("die", "2MiB", 2),
            ("channel", "2MiB", 4),
            ("striped", "8MiB", 16),
        ] {
            let z = zoned(layout, size);
            let geo = &z.geo;
            let lbas = z.zones.count() as u64 * z.zones.zone_lbas();
            assert_eq!(lbas, geo.units(), "{layout}: the whole drive");
            let mut seen = vec![false; geo.units() as usize];
            let mut next_page = vec![0u32; geo.blocks() as usize];
            for lba in 0..lbas {
                let pun = z.unit_of(lba);
                assert!(!seen[pun as usize], "{layout}: unit {pun} twice");
                seen[pun as usize] = true;
                if pun.is_multiple_of(geo.units_per_page) {
                    let b = geo.block_of_unit(pun) as usize;
                    assert_eq!(geo.page_in_block(pun), next_page[b], "{layout}: in order");
                    next_page[b] += 1;
                }
            }
            let zl = z.zones.zone_lbas();
            for zone in [0u32, 5] {
                let mut planes: Vec<u32> = (0..zl)
                    .map(|o| geo.plane_of_block(geo.block_of_unit(z.unit_of(zone as u64 * zl + o))))
                    .collect();
                planes.sort();
                planes.dedup();
                assert_eq!(planes.len(), planes_per_zone, "{layout} zone {zone}");
                let dies: Vec<u32> = planes.iter().map(|&p| geo.die_of_plane(p)).collect();
                match layout {
                    "die" => assert!(dies.iter().all(|&d| d == dies[0])),
                    "channel" => assert!(dies
                        .iter()
                        .all(|&d| geo.channel_of_die(d) == geo.channel_of_die(dies[0]))),
                    _ => {}
                }
            }
        }
    }

    /// With a write-back buffer, writes enter it in their zone's order: one whose data came
    /// before an earlier write's is parked until that one is in, other zones go on; a reset
    /// gives up its zone's parked writes, and drops the data of a write accepted before it.
    #[test]
    fn a_zones_writes_enter_the_buffer_in_order_and_a_reset_gives_them_up() {
        let cfg = SsdConfig::resolve(
            "zns-tlc",
            &[
                "cache.capacity=\"64KiB\"".into(),
                "cache.mode=\"write-back\"".into(),
            ],
        )
        .unwrap();
        let mut z = ZonedNand::new(&cfg, &Geometry::from_config(&cfg), 1);
        assert!(z.buffered());
        let zl = z.zones.zone_lbas();
        // Zone 0: commands 1 (blocks 0..4), 2 (4..6), 3 (6..7); zone 1: command 4 (0..2).
        for (cmd, zone) in [(1, 0), (2, 0), (3, 0), (4, 1)] {
            z.accepted(cmd, zone);
        }
        let len = |cmd: u32| [0, 4, 2, 1, 2][cmd as usize];
        assert_eq!(z.arrived(3, 6, 1), Arrival::Parked);
        assert_eq!(z.arrived(2, 4, 2), Arrival::Parked);
        assert_eq!(z.arrived(4, zl, 2), Arrival::Buffer, "another zone goes on");
        assert_eq!(z.unpark(0, len), None, "block 0 is not in yet");
        assert_eq!(z.arrived(1, 0, 4), Arrival::Buffer);
        assert_eq!(z.unpark(0, len), Some(2));
        assert_eq!(z.unpark(0, len), Some(3));
        assert_eq!(z.unpark(0, len), None);
        assert_eq!(z.written_extent(0), 7);
        // The flush pointer goes block by block from the zone's start.
        assert_eq!(z.next_to_flush(5), 0);
        assert_eq!(z.flush_unit(0), z.unit_of(0));
        assert_eq!((z.next_to_flush(3), z.programmed(0)), (1, 1));
        assert!(z.is_programmed(0) && !z.is_programmed(1));
        // Zone 1: command 5 parked, command 6 accepted; a reset gives up 5 and drops 6.
        z.accepted(5, 1);
        z.accepted(6, 1);
        assert_eq!(z.arrived(6, zl + 3, 1), Arrival::Parked);
        assert_eq!(z.reset_order(1), vec![6]);
        assert_eq!(z.arrived(5, zl + 2, 1), Arrival::Dropped);
        assert_eq!(z.written_extent(1), 0);
        assert_eq!(z.next_to_flush(zl), zl);
    }

    #[test]
    fn a_reset_erases_the_blocks_that_hold_data() {
        let mut z = zoned("striped", "8MiB");
        // 16 planes × one block: 5 pages of zone 1 are on 5 planes.
        z.take(1, 5 * 4);
        assert_eq!(z.reset_blocks(1).len(), 5);
        assert_eq!(z.programmed(1), 0);
        assert_eq!(z.reset_blocks(1).len(), 0, "nothing left to erase");
        z.take(2, z.zones.cap_lbas());
        assert_eq!(z.reset_blocks(2).len(), 16);
        assert_eq!(z.counters.erases, 21);
    }
}
