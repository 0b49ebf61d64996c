//! The controller: the host interface layer (`hil`: firmware time, the split of commands into
//! map units, data movement), the cache buffer (`buffer` over `cache`'s lines), and the flash
//! interface layer (`fil`: per-die queues and NAND operations, the die model in `die`).
//!
//! Controller handlers reach the rest of the device through two ports, each a bundle of the
//! layers on one side: `iface::HostPort` up to the host (the interface that moves data and
//! posts completions, the host CPU that handles them, the command table, the event queue; the
//! interface defines it, so the controller never names the host) and [`FlashPort`] down to
//! flash (the FIL, whoever keeps the blocks' FTL state, and the test oracle that watches both).
//! A NAND handler takes both, with the cache buffer between them, as one argument: [`Ports`].
//! This module also holds what
//! the firmware variants share: [`units_of`] and the read counters ([`HilCounters`]).

pub mod backend;
pub mod buffer;
pub mod cache;
pub mod datacheck;
pub mod die;
#[cfg(test)]
mod docs_backend;
pub mod fil;
pub mod fusion;
pub mod hil;
pub mod hybrid;
pub mod pcm;
pub mod power_loss;
pub mod raw;
pub mod read_ahead;
#[cfg(test)]
pub(crate) mod test_rig;
pub mod zoned;
pub mod zones;

use crate::event::Event;
use crate::ftl::{Ftl, Translation};
use crate::iface::HostPort;
use crate::sim::{EventQueue, SimTime};
use buffer::BufferManager;
use datacheck::DataCheck;
use fil::{Fil, FlashOwner};
use hybrid::HybridCtrl;

/// Logical units covered by a byte range, with the bytes of each that the range covers.
#[inline]
pub(crate) fn units_of(unit: u64, offset: u64, len: u64) -> impl Iterator<Item = (u64, u64)> {
    let first = offset / unit;
    let last = (offset + len - 1) / unit;
    let end = offset + len;
    (first..=last).map(move |u| {
        let s = (u * unit).max(offset);
        let e = ((u + 1) * unit).min(end);
        (u, e - s)
    })
}

/// Read units served without a NAND read, and all read units.
#[derive(Clone, Debug, Default)]
pub struct HilCounters {
    /// Map units touched by host reads, wherever they were served from.
    pub host_units_read: u64,
    pub unmapped_reads: u64,
    /// Served from data still on its way to NAND.
    pub buffer_reads: u64,
}

/// The controller's way down to flash.
pub(crate) struct FlashPort<'a, O = Ftl> {
    pub fil: &'a mut Fil,
    /// Whoever keeps the FTL state of the blocks (`fil::FlashOwner`): the page FTL under the
    /// page-mapped schemes, `fil::NoPageGc` under the others.
    pub ftl: &'a mut O,
    /// Tests only: the data-placement oracle.
    pub check: &'a mut Option<DataCheck>,
    /// What the cache buffer's lines flush into when it is not the page FTL.
    pub behind: Behind<'a>,
}

/// What a NAND handler of the controller works through beyond its own state: the host above,
/// flash below, and the cache buffer between them when the data path has one. One argument for
/// the three, `&mut Ports<O>`, generic over the blocks' owner as the flash port is: the page
/// path is compiled for the page FTL alone.
pub(crate) struct Ports<'a, O = Ftl> {
    pub up: HostPort<'a>,
    pub flash: FlashPort<'a, O>,
    /// The cache buffer (None: the data path is direct).
    pub cache: Option<&'a mut BufferManager>,
}

impl<'a, O: FlashOwner> Ports<'a, O> {
    /// These ports with block-mapped FTL `h` in the flash port, for the cache buffer's work in
    /// front of it.
    pub fn with_blocks<'b>(&'b mut self, h: &'b mut HybridCtrl) -> Ports<'b, O> {
        Ports {
            up: lend(&mut self.up),
            flash: self.flash.with_blocks(h),
            cache: self.cache.as_deref_mut(),
        }
    }

    /// These ports with zoned drive `z` in the flash port, for the cache buffer's work in front
    /// of it.
    pub fn with_zoned<'b>(&'b mut self, z: &'b mut zoned::ZonedNand) -> Ports<'b, O> {
        Ports {
            up: lend(&mut self.up),
            flash: self.flash.with_zoned(z),
            cache: self.cache.as_deref_mut(),
        }
    }
}

/// Port `up` lent on for a shorter time, beside another flash port.
#[inline(always)]
fn lend<'b>(up: &'b mut HostPort<'_>) -> HostPort<'b> {
    HostPort {
        q: up.q,
        cmds: up.cmds,
        link: up.link,
        cpu: up.cpu,
    }
}

/// The map a [`FlashPort`]'s cache buffer works in front of (one tag: building a port costs
/// what it did with the block map alone). A PCM-only device has no flash port: its cache
/// buffer's lines go to the PCM through `pcm::PcmLines`.
pub(crate) enum Behind<'a> {
    /// The page FTL's map, which the port carries (or, under a scheme with its own map, no
    /// cache buffer at all).
    PageFtl,
    /// A block-mapped FTL, when the cache buffer works in front of it (its lines are flushed
    /// to, and checked against, that map instead of the page FTL's).
    Blocks(&'a mut HybridCtrl),
    /// A zoned drive, when the cache buffer works in front of it (its lines are flushed to
    /// their zones' blocks, each zone's in order).
    Zoned(&'a mut zoned::ZonedNand),
}

impl<'a, O: FlashOwner> FlashPort<'a, O> {
    /// The port to flash without a block-mapped FTL in it.
    #[inline(always)]
    pub fn new(fil: &'a mut Fil, ftl: &'a mut O, check: &'a mut Option<DataCheck>) -> Self {
        FlashPort {
            fil,
            ftl,
            check,
            behind: Behind::PageFtl,
        }
    }

    /// This port with block-mapped FTL `h` in it, for the cache buffer's work in front of it.
    pub fn with_blocks<'b>(&'b mut self, h: &'b mut HybridCtrl) -> FlashPort<'b, O> {
        FlashPort {
            fil: self.fil,
            ftl: self.ftl,
            check: self.check,
            behind: Behind::Blocks(h),
        }
    }

    /// This port with zoned drive `z` in it, for the cache buffer's work in front of it.
    pub fn with_zoned<'b>(&'b mut self, z: &'b mut zoned::ZonedNand) -> FlashPort<'b, O> {
        FlashPort {
            fil: self.fil,
            ftl: self.ftl,
            check: self.check,
            behind: Behind::Zoned(z),
        }
    }

    /// A map-page program of the power-loss model's checkpoint tagged `tag` finished (a
    /// `MapWrite` whose `cmd` is not `ftl::NONE`).
    #[cold]
    #[inline(never)]
    pub fn checkpoint_page_programmed(&mut self, tag: u32) {
        if let Some(p) = self.check.as_mut().and_then(|c| c.power.as_deref_mut()) {
            p.checkpoint_page_programmed(tag);
        }
    }
}

impl<M: Translation> FlashPort<'_, Ftl<M>> {
    /// Hand the GC work the FTL emitted to the dies of its planes.
    #[inline]
    pub fn drain_gc(&mut self, now: SimTime, q: &mut EventQueue<Event>) {
        self.fil.drain_gc(now, self.ftl, self.check.as_mut(), q);
    }

    /// Program the map pages of the checkpoint the power-loss model has just taken
    /// (`power_loss`), as a cached map programs its translation pages: each to a new place in
    /// stream 0's open blocks (`ftl/checkpoint.rs`), queued with the host's writes at its die
    /// (the host writes queued behind wait for it), GC work it starts handed to the dies. A
    /// drive worn out into read-only mode programs nothing: its checkpoint never reaches flash.
    #[cold]
    #[inline(never)]
    pub fn program_checkpoint(
        &mut self,
        now: SimTime,
        q: &mut EventQueue<Event>,
    ) -> crate::error::Result<()> {
        let Some(p) = self.check.as_mut().and_then(|c| c.power.as_deref_mut()) else {
            return Ok(());
        };
        let pages = p.take_due();
        if self.ftl.read_only() {
            return Ok(());
        }
        for (tag, page) in pages {
            let (pun, overwrote) = self.ftl.write_checkpoint_page(page)?;
            let geo = &self.ftl.geo;
            let block = geo.block_of_unit(pun);
            let t = self.fil.add_txn(fil::Txn {
                kind: fil::TxnKind::MapWrite,
                cmd: tag,
                pun,
                plane: geo.plane_of_block(block),
                host_bytes: 0,
                epoch: self.ftl.blocks()[block as usize].epoch,
                aux: page as u32,
                overwrote,
            });
            self.fil.enqueue(now, t, fil::Queue::HostWrite, self.ftl, q);
            self.drain_gc(now, q);
        }
        Ok(())
    }
}

impl Behind<'_> {
    /// Where logical unit `lpn` is mapped in the block map or zones the cache buffer works in
    /// front of (the page FTL's port answers from its own map).
    #[inline]
    pub fn lookup(&self, lpn: u64) -> Option<u32> {
        match self {
            Behind::Blocks(h) => h.ftl.lookup(lpn),
            // A zoned drive's block is at its place in its zone once programmed there.
            Behind::Zoned(z) => z.is_programmed(lpn).then(|| z.unit_of(lpn)),
            Behind::PageFtl => unreachable!("a scheme without the page FTL has a cache buffer only in front of a block map or zones"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::units_of;

    #[test]
    fn a_range_is_cut_at_unit_boundaries() {
        let got: Vec<_> = units_of(4096, 1024, 8192).collect();
        assert_eq!(got, vec![(0, 3072), (1, 4096), (2, 1024)]);
        let one: Vec<_> = units_of(4096, 8192, 4096).collect();
        assert_eq!(one, vec![(2, 4096)]);
    }
}
