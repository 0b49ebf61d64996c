//! What the cache buffer's lines are written back to (`Lines`), and its two implementations on
//! the flash port: in front of the page FTL's map, and in front of a block map or zones.

use crate::ctrl::datacheck::DataCheck;
use crate::ctrl::fil::{NoPageGc, Queue, Txn, TxnKind};
use crate::ctrl::zoned::ZonedNand;
use crate::ctrl::{Behind, FlashPort};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::mapping_cache::MappingCache;
use crate::ftl::{Ftl, Translation};
use crate::iface::HostPort;
use crate::sim::{EventQueue, SimTime};

/// What the buffer's lines are written back to and checked against: NAND through the flash
/// port (the page FTL, or the block-mapped FTL the port carries), or a PCM-only device's PCM
/// (`pcm::PcmLines`), which has no flash port. Generic, not a tag: the NAND paths compile to
/// what they were with the flash port alone.
pub(crate) trait Lines {
    /// Where logical unit `lpn` is now (a NAND unit; on PCM, line `lpn` itself).
    fn lookup(&self, lpn: u64) -> Option<u32>;
    /// Tests only: the data-placement oracle.
    fn check(&mut self) -> Option<&mut DataCheck>;
    /// The cached map's translation pages, whose entries a flush changes (a cached map only).
    fn mapping(&mut self) -> Option<&mut MappingCache>;
    /// The oracle's note that a write of `lpn` went into line `slot` at `now` (with the
    /// power-loss model, a map checkpoint then due is programmed: events into `q`).
    fn written_to_line(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        q: &mut EventQueue<Event>,
    ) -> Result<()>;
    /// The zoned drive behind the buffer, whose zones' lines go to the media each in order
    /// (`ctrl::zoned::ZoneOrder`); None for any other medium or scheme.
    fn zoned(&self) -> Option<&ZonedNand>;
    /// Write line `slot`, holding unit `lpn`, back to the medium; its end comes back as
    /// [`BufferManager::flush_done`].
    fn flush_out(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        line_bytes: u64,
        up: &mut HostPort,
    ) -> Result<()>;
    /// Where a flush of a line holding part of unit `lpn` reads the rest: the NAND unit that
    /// holds it and whether it is programmed yet (if not, the data is still in the controller
    /// and needs no read); None when the unit was never written. Only the page FTL's lines hold
    /// part of a unit (`cache.partial_lines`, which validation allows only there).
    fn merge_source(&self, _lpn: u64) -> Option<(u32, bool)> {
        None
    }
    /// Read NAND unit `pun` for the flush of line `slot` (its end comes back as
    /// [`BufferManager::merged_for_flush`]).
    fn merge_read(&mut self, _now: SimTime, _slot: u32, _pun: u32, _up: &mut HostPort) {
        unreachable!("only the page FTL's lines hold part of a unit")
    }
}

/// The page FTL's port: the cache buffer works in front of the page-mapped FTL's map.
impl<M: Translation> Lines for FlashPort<'_, Ftl<M>> {
    #[inline]
    fn lookup(&self, lpn: u64) -> Option<u32> {
        self.ftl.lookup(lpn)
    }

    #[inline]
    fn check(&mut self) -> Option<&mut DataCheck> {
        self.check.as_mut()
    }

    #[inline]
    fn mapping(&mut self) -> Option<&mut MappingCache> {
        self.ftl.translation.cache_mut()
    }

    fn written_to_line(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        q: &mut EventQueue<Event>,
    ) -> Result<()> {
        if let Some(dc) = self.check.as_mut() {
            dc.write_to_line(lpn, slot, self.ftl);
            if dc.checkpoint_due() {
                self.program_checkpoint(now, q)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn zoned(&self) -> Option<&ZonedNand> {
        None
    }

    #[inline]
    fn merge_source(&self, lpn: u64) -> Option<(u32, bool)> {
        self.ftl.read_target(lpn)
    }

    /// The rest of a line's unit, read with the host's reads (as a read-modify-write's read
    /// would be at write time).
    fn merge_read(&mut self, now: SimTime, slot: u32, pun: u32, up: &mut HostPort) {
        let geo = &self.ftl.geo;
        let t = self.fil.add_txn(Txn {
            kind: TxnKind::MergeRead,
            cmd: slot,
            pun,
            plane: geo.plane_of_block(geo.block_of_unit(pun)),
            host_bytes: 0,
            epoch: 0,
            aux: 0,
            overwrote: crate::ftl::NONE,
        });
        self.fil.enqueue(now, t, Queue::HostRead, self.ftl, up.q);
    }

    /// Map the line's unit in the page FTL and queue its program with the die's host writes.
    fn flush_out(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        _line_bytes: u64,
        up: &mut HostPort,
    ) -> Result<()> {
        // (With a cached map, the FTL tells the unit's translation page.)
        let pun = self.ftl.write(lpn)?;
        if let Some(dc) = self.check.as_mut() {
            dc.flush(slot, pun, self.ftl);
        }
        let geo = &self.ftl.geo;
        let block = geo.block_of_unit(pun);
        let plane = geo.plane_of_block(block);
        let t = self.fil.add_txn(Txn {
            kind: TxnKind::Flush,
            // A flush names its line; the rest is in `flights`.
            cmd: slot,
            pun,
            plane,
            host_bytes: 0,
            epoch: self.ftl.blocks()[block as usize].epoch,
            aux: 0,
            overwrote: self.ftl.overwrote(),
        });
        self.fil.enqueue(now, t, Queue::HostWrite, self.ftl, up.q);
        self.drain_gc(now, up.q);
        Ok(())
    }
}

/// The port of a scheme with its own map: the cache buffer works in front of the block map or
/// the zones it carries (`Behind`), which the power-loss model does not cover.
impl Lines for FlashPort<'_, NoPageGc> {
    #[inline]
    fn lookup(&self, lpn: u64) -> Option<u32> {
        self.behind.lookup(lpn)
    }

    #[inline]
    fn check(&mut self) -> Option<&mut DataCheck> {
        self.check.as_mut()
    }

    #[inline]
    fn mapping(&mut self) -> Option<&mut MappingCache> {
        None
    }

    fn written_to_line(
        &mut self,
        _now: SimTime,
        lpn: u64,
        slot: u32,
        _q: &mut EventQueue<Event>,
    ) -> Result<()> {
        if let Some(dc) = self.check.as_mut() {
            dc.write_to_line_in_place(lpn, slot);
        }
        Ok(())
    }

    #[inline]
    fn zoned(&self) -> Option<&ZonedNand> {
        match &self.behind {
            Behind::Zoned(z) => Some(z),
            _ => None,
        }
    }

    /// Write the line's unit where the map behind the buffer puts it and queue its program
    /// with the die's host writes.
    fn flush_out(
        &mut self,
        now: SimTime,
        lpn: u64,
        slot: u32,
        _line_bytes: u64,
        up: &mut HostPort,
    ) -> Result<()> {
        let FlashPort {
            fil,
            ftl,
            check,
            behind,
        } = &mut *self;
        match behind {
            // A block-mapped FTL: the line's page goes where that map puts it, after the merge
            // work its write implies (queued first, on the same die).
            Behind::Blocks(h) => h.flush_line(now, lpn, slot, fil, ftl, check, up.q),
            // A zoned drive: the line's block is at its zone's flush pointer (`flush_line`).
            Behind::Zoned(z) => {
                let pun = z.flush_unit(lpn);
                if let Some(dc) = check.as_mut() {
                    dc.flush_in_place(slot, pun);
                }
                let geo = z.geometry();
                let t = fil.add_txn(Txn {
                    kind: TxnKind::Flush,
                    cmd: slot,
                    pun,
                    plane: geo.plane_of_block(geo.block_of_unit(pun)),
                    host_bytes: 0,
                    epoch: 0,
                    aux: lpn as u32,
                    overwrote: crate::ftl::NONE,
                });
                fil.enqueue(now, t, Queue::HostWrite, &**ftl, up.q);
                Ok(())
            }
            Behind::PageFtl => unreachable!(
                "a scheme without the page FTL has a cache buffer only in front of a block map or zones"
            ),
        }
    }
}
